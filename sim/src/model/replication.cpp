// Redis' replication.c: the replication stream (propagate), replica acknowledgements, WAIT and
// ROLE.
#include "commands.hpp"

namespace lockwire::sim::model {

void cmd_role(Impl& s, Client& c, Args&) {
  if (s.replica) {
    s.array(c, 5);
    s.bulk(c, "slave");
    s.bulk(c, s.master_host);
    s.integer(c, s.master_port);
    s.bulk(c, "connected");
    s.integer(c, s.repl_offset);
    return;
  }
  s.array(c, 3);
  s.bulk(c, "master");
  s.integer(c, s.reported_offset());
  s.array(c, s.replica_acks.size());
  for (auto& [addr, off] : s.replica_acks) {
    const auto colon = addr.rfind(':');
    s.array(c, 3);
    s.bulk(c, addr.substr(0, colon));
    s.bulk(c, colon == std::string::npos ? "0" : addr.substr(colon + 1));
    s.bulk(c, ll2s(off));
  }
}

// WAIT blocks the client (check_blocked() answers it) unless enough replicas already acknowledged
// its last write; inside EXEC it answers at once, as in Redis.
void cmd_wait(Impl& s, Client& c, Args& a) {
  std::int64_t n = 0, timeout = 0;
  if (!get_ll(s, c, a[1], n)) return;
  if (!string2ll(a[2], timeout)) return s.error(c, "timeout is not an integer or out of range");
  if (timeout < 0) return s.error(c, "timeout is negative");
  if (s.replica)
    return s.error(c,
                   "WAIT cannot be used with replica instances. Please also note that since Redis "
                   "4.0 if a replica is configured to be writable (which is not the default) "
                   "writes to replicas are just local and are not propagated.");
  const std::int64_t acked = s.acks_for(c.woff);
  if (acked >= n || s.in_exec) return s.integer(c, acked);
  c.blocked = true;
  c.block_num = n;
  c.block_off = c.woff;
  c.block_deadline_ms = timeout > 0 ? s.wall_ms() + timeout : 0;
}

}  // namespace lockwire::sim::model

namespace lockwire::sim {

using namespace model;

void RedisModel::Impl::propagate(Client& c, const Args& a) {
  std::size_t bytes = 0;
  for (auto& s : a) bytes += s.size() + 16;
  propagate_bytes(c, bytes);
  if (hooks.propagate) hooks.propagate(c.db, a);
}

void RedisModel::Impl::propagate_bytes(Client& c, std::size_t bytes) {
  repl_offset += static_cast<std::int64_t>(bytes);
  c.woff = repl_offset;
  ++dirty;
}

std::int64_t RedisModel::Impl::acks_for(std::int64_t off) const {
  std::int64_t n = 0;
  for (auto& [addr, o] : replica_acks)
    if (o >= off) ++n;
  return n;
}

// Unblocks WAITers whose replicas caught up or whose timeout passed, then runs their input.
void RedisModel::Impl::check_blocked() {
  const std::int64_t now = wall_ms();
  std::vector<std::uint64_t> ready;
  std::vector<std::uint64_t> timed_out;
  for (auto& [id, c] : clients) {
    if (!c.blocked || c.gone) continue;
    if (c.btype != Client::Btype::none) {
      if (c.block_deadline_ms != 0 && now >= c.block_deadline_ms) timed_out.push_back(id);
      continue;
    }
    const std::int64_t acked = acks_for(c.block_off);
    if (acked >= c.block_num || (c.block_deadline_ms != 0 && now >= c.block_deadline_ms)) {
      c.blocked = false;
      integer(c, acked);
      ready.push_back(id);
    }
  }
  for (auto id : ready) {
    auto it = clients.find(id);
    if (it != clients.end()) process_input(it->second);
  }
  // replyToBlockedClientTimedOut: a null array, then the client's next input
  for (auto id : timed_out) {
    Client& c = clients.at(id);
    null_array(c);
    unblock_keys(c);
  }
  run_reprocess();
}

std::int64_t RedisModel::Impl::next_deadline_ms() const {
  std::int64_t best = -1;
  for (auto& [id, c] : clients)
    if (c.blocked && c.block_deadline_ms != 0 && (best < 0 || c.block_deadline_ms < best))
      best = c.block_deadline_ms;
  return best;
}

void RedisModel::set_replica(bool on, std::string host, int port) {
  impl_->replica = on;
  impl_->master_host = std::move(host);
  impl_->master_port = port;
}
bool RedisModel::is_replica() const noexcept {
  return impl_->replica;
}
std::int64_t RedisModel::repl_offset() const noexcept {
  return impl_->repl_offset;
}
void RedisModel::set_replica_acks(std::vector<std::pair<std::string, std::int64_t>> r) {
  impl_->replica_acks = std::move(r);
  if (!impl_->replica_acks.empty()) impl_->backlog = true;
  impl_->check_blocked();
  impl_->before_sleep();
  impl_->flush_outputs();
}

void RedisModel::apply(int db, const std::vector<std::string>& argv) {
  // The replication link is a privileged client: no READONLY check, no replies.
  Impl& s = *impl_;
  if (argv.empty()) return;
  const CmdDef* cmd = s.find_command(argv);
  if (cmd == nullptr || cmd->fn == nullptr) return;
  Client tmp;
  tmp.id = 0;
  tmp.db = std::clamp(db, 0, static_cast<int>(s.dbs.size()) - 1);
  const bool was = s.replica;
  s.replica = false;  // apply with primary semantics (it deletes what the primary deleted)
  s.cmd_ms = s.wall_ms();
  Args a = argv;
  auto hook = std::move(s.hooks.propagate);
  s.hooks.propagate = nullptr;
  cmd->fn(s, tmp, a);
  s.hooks.propagate = std::move(hook);
  s.replica = was;
  std::size_t bytes = 0;
  for (auto& x : argv) bytes += x.size() + 16;
  s.repl_offset += static_cast<std::int64_t>(bytes);
  s.dirty_clients.erase(std::remove(s.dirty_clients.begin(), s.dirty_clients.end(), 0u),
                        s.dirty_clients.end());
  s.before_sleep();
  s.flush_outputs();
}

}  // namespace lockwire::sim
