// RedisModel's public face: clients in and out, feed(), cron(), faults, persistence and the
// side-effect-free inspection race checkers use. The server itself lives in model/*.cpp.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "commands.hpp"

#include "model_impl.hpp"

namespace lockwire::sim {

using namespace model;

RedisModel::Impl::Impl(Hooks h, Rng r, RedisModelOptions o)
    : hooks(std::move(h)),
      rng(std::move(r)),
      opt(std::move(o)),
      dbs(static_cast<std::size_t>(std::max(1, opt.databases))),
      maxmemory(opt.maxmemory),
      policy(opt.maxmemory_policy) {
  maxclients = opt.maxclients;
  start_ms = wall_ms();
  last_save_ms = start_ms;
  static const char hex[] = "0123456789abcdef";
  for (int i = 0; i < 40; ++i) run_id.push_back(hex[rng.below(16)]);
  init_users();
  for (auto& [name, value] : opt.config) {
    const std::string err = config_startup(*this, name, value);
    if (!err.empty())
      throw std::invalid_argument("RedisModelOptions::config " + name + ": " + err);
  }
}

RedisModel::RedisModel(Hooks hooks, Rng rng, RedisModelOptions options)
    : impl_(std::make_unique<Impl>(std::move(hooks), std::move(rng), std::move(options))) {}

RedisModel::~RedisModel() = default;

RedisModel::ClientId RedisModel::add_client(std::string addr, std::string laddr, int fd) {
  const ClientId id = impl_->next_client_id++;
  Client& c = impl_->clients[id];
  c.id = id;
  c.addr = std::move(addr);
  c.laddr = laddr.empty() ? "127.0.0.1:" + std::to_string(impl_->opt.tcp_port) : std::move(laddr);
  c.fd = fd;
  c.ctime_ms = impl_->wall_ms();
  c.last_interaction_ms = c.ctime_ms;
  ++impl_->total_connections;
  c.user = impl_->default_user;
  c.authenticated = c.user->nopass && c.user->enabled;
  impl_->trace("client-open", std::to_string(id));
  return id;
}

void RedisModel::remove_client(ClientId id) noexcept {
  auto it = impl_->clients.find(id);
  if (it == impl_->clients.end()) return;
  impl_->free_client(it->second);
  impl_->clients.erase(it);
  impl_->trace("client-close", std::to_string(id));
}

bool RedisModel::has_pending_input(ClientId id) const noexcept {
  auto it = impl_->clients.find(id);
  if (it == impl_->clients.end()) return false;
  const model::Client& c = it->second;
  return c.postponed || c.blocked || c.qpos < c.qbuf.size();
}

void RedisModel::feed(ClientId id, std::string_view bytes) {
  auto it = impl_->clients.find(id);
  if (it == impl_->clients.end()) return;
  Client& c = it->second;
  if (c.closing || c.gone) return;
  if (c.qbuf.size() - c.qpos + bytes.size() > impl_->opt.max_query_bytes) {
    // client-query-buffer-limit: Redis closes the connection without a reply.
    impl_->close_asap(c);
    impl_->mark(c);
    impl_->flush_outputs();
    return;
  }
  c.qbuf.append(bytes);
  impl_->net_input_bytes += bytes.size();
  ++impl_->reads_processed;
  impl_->process_input(c);
  impl_->before_sleep();
  impl_->flush_outputs();
}

bool RedisModel::output_backlog(ClientId id, std::size_t unsent) {
  auto it = impl_->clients.find(id);
  if (it == impl_->clients.end() || it->second.gone) return false;
  if (!impl_->obuf_limit_reached(it->second, unsent)) return false;
  impl_->trace("client-limit", "output buffer limit reached");
  remove_client(id);
  impl_->flush_outputs();
  return true;
}

int RedisModel::maxclients() const noexcept {
  return impl_->maxclients;
}

void RedisModel::note_rejected_connection() noexcept {
  ++impl_->rejected_connections;
}

void RedisModel::cron() {
  impl_->active_expire();
  if (!impl_->tracking_table.empty()) impl_->tracking_limit();
  impl_->check_blocked();
  impl_->before_sleep();
  impl_->flush_outputs();
}

void RedisModel::set_loading(bool on) noexcept {
  impl_->loading = on;
}
void RedisModel::set_busy(bool on) noexcept {
  impl_->busy = on;
}

void RedisModel::tick() {
  impl_->check_blocked();
  impl_->before_sleep();
  impl_->flush_outputs();
}

std::int64_t RedisModel::next_deadline_us() const {
  const std::int64_t ms = impl_->next_deadline_ms();
  return ms < 0 ? -1 : ms * 1000;
}

std::shared_ptr<const RedisSnapshot> RedisModel::snapshot() const {
  auto s = std::make_shared<RedisSnapshot>();
  s->dbs = impl_->dbs;
  return s;
}

void RedisModel::restore(const RedisSnapshot& snap) {
  impl_->dbs = snap.dbs;
}

void RedisModel::flush_all_data() {
  for (auto& db : impl_->dbs) db = Db{};
}

void RedisModel::drop_all_clients() noexcept {
  for (auto& [id, c] : impl_->clients) impl_->free_client(c);
  impl_->clients.clear();
  impl_->tracking_table.clear();
  impl_->prefix_table.clear();
  impl_->channels.clear();
  impl_->patterns.clear();
  impl_->dirty_clients.clear();
  impl_->closing_clients.clear();
  // What a new process starts with: no pause, the configured users and memory limit (ACL
  // SETUSER and CONFIG SET are not persisted), fresh INFO stats.
  impl_->pause = Impl::Pause::none;
  impl_->pause_end_ms = 0;
  impl_->postponed.clear();
  impl_->unblocked.clear();
  impl_->users.clear();
  impl_->init_users();
  impl_->maxmemory = impl_->opt.maxmemory;
  impl_->policy = impl_->opt.maxmemory_policy;
  impl_->eviction_due = false;
  impl_->evicted_keys = 0;
  impl_->expired_keys = 0;
}

void RedisModel::pause_clients(std::int64_t ms, PauseMode mode) {
  impl_->pause_clients(impl_->wall_ms() + ms,
                       mode == PauseMode::all ? Impl::Pause::all : Impl::Pause::write);
  impl_->trace("pause", std::to_string(ms) + (mode == PauseMode::all ? " ms all" : " ms write"));
}

void RedisModel::unpause_clients() {
  impl_->unpause_clients();
  impl_->before_sleep();
  impl_->flush_outputs();
}

std::string RedisModel::acl_setuser(std::string_view name, std::string_view rules) {
  std::string err = impl_->acl_setuser(std::string(name), split_rules(rules));
  impl_->flush_outputs();  // subscribers it no longer allows are dropped
  return err;
}

void RedisModel::set_maxmemory(std::uint64_t bytes, MaxmemoryPolicy policy) {
  impl_->maxmemory = bytes;
  impl_->policy = policy;
  impl_->trace("maxmemory", std::to_string(bytes) + " " + policy_name(policy));
  if (bytes != 0) impl_->eviction_due = true;
  impl_->before_sleep();
  impl_->flush_outputs();
}

std::uint64_t RedisModel::used_memory() const {
  return impl_->used_memory();
}

std::uint64_t RedisModel::evicted_keys() const noexcept {
  return impl_->evicted_keys;
}

std::size_t RedisModel::dbsize(int db) const {
  return impl_->dbs.at(static_cast<std::size_t>(db)).dict.size();
}
bool RedisModel::exists(std::string_view key, int db) const {
  return impl_->dbs.at(static_cast<std::size_t>(db)).dict.count(std::string(key)) != 0;
}
std::vector<RedisModel::ClientId> RedisModel::clients() const {
  std::vector<ClientId> v;
  for (auto& [id, c] : impl_->clients) v.push_back(id);
  return v;
}
std::uint64_t RedisModel::commands_processed() const noexcept {
  return impl_->processed;
}

RedisModel::Peek RedisModel::peek(std::string_view key, int db) const {
  Peek p;
  const Db& d = impl_->dbs.at(static_cast<std::size_t>(db));
  const std::string k(key);
  auto it = d.dict.find(k);
  if (it == d.dict.end()) return p;
  if (auto e = d.expires.find(k); e != d.expires.end()) {
    if (e->second < impl_->wall_ms()) return p;
    p.expire_at_ms = e->second;
  }
  p.found = true;
  const Value& v = it->second;
  switch (v.kind) {
    case Value::Kind::string:
      p.items.push_back(v.str);
      break;
    case Value::Kind::hash:
      for (const auto& [f, x] : v.hash) {
        p.items.push_back(f);
        p.items.push_back(x);
      }
      break;
    case Value::Kind::set:
      p.items = v.set;
      break;
    case Value::Kind::list:
      p.items.assign(v.list.begin(), v.list.end());
      break;
    case Value::Kind::zset:
      for (const auto& [sc, m] : v.zorder) p.items.push_back(m);
      break;
  }
  return p;
}
std::int64_t RedisModel::wall_ms() const {
  return impl_->wall_ms();
}

}  // namespace lockwire::sim
