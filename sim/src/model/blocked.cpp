// Redis' blocked.c for keys: a client blocked by BLPOP & co. waits on its keys in FIFO order per
// key; a command that creates a list or zset at such a key (dbAdd) queues it as ready, and after
// that command (processCommand) and in beforeSleep the waiters are served in the order they
// blocked, each unblocked and its pending input run before the turn ends (processUnblocked-
// Clients). Timeouts are deadlines on the server's clock (check_blocked / tick()).
#include <algorithm>
#include <cmath>

#include "commands.hpp"

namespace lockwire::sim {

using namespace model;

void RedisModel::Impl::signal_key_ready(Db& db, const std::string& key) {
  if (blocking_keys.empty()) return;
  const std::pair<int, std::string> k{db_index(db), key};
  if (blocking_keys.count(k) == 0 || ready_set.count(k) != 0) return;
  ready_set.insert(k);
  ready_keys.push_back(k);
}

void RedisModel::Impl::block_for_keys(Client& c, Client::Btype type,
                                      const std::vector<std::string>& keys,
                                      std::int64_t deadline_ms) {
  c.blocked = true;
  c.btype = type;
  c.block_deadline_ms = deadline_ms;
  c.bkeys.clear();
  for (auto& k : keys) {
    if (std::find(c.bkeys.begin(), c.bkeys.end(), k) != c.bkeys.end()) continue;
    c.bkeys.push_back(k);
    blocking_keys[{c.db, k}].push_back(c.id);
  }
  trace("block", std::to_string(c.id));
}

void RedisModel::Impl::unblock_keys(Client& c) {
  for (auto& k : c.bkeys) {
    auto it = blocking_keys.find({c.db, k});
    if (it == blocking_keys.end()) continue;
    std::erase(it->second, c.id);
    if (it->second.empty()) blocking_keys.erase(it);
  }
  c.bkeys.clear();
  c.btype = Client::Btype::none;
  c.blocked = false;
  c.has_target = false;
  c.btarget.clear();
  c.bcount = -1;
  c.block_deadline_ms = 0;
  if (!c.reprocess && !c.gone) {
    c.reprocess = true;
    reprocess.push_back(c.id);
  }
}

void RedisModel::Impl::handle_blocked_on_keys() {
  while (!ready_keys.empty()) {
    auto batch = std::move(ready_keys);
    ready_keys.clear();
    for (auto& k : batch) {
      ready_set.erase(k);
      Db& db = dbs[static_cast<std::size_t>(k.first)];
      cmd_ms = wall_ms();
      auto vit = key_is_expired(db, k.second) ? db.dict.end() : db.dict.find(k.second);
      if (vit == db.dict.end()) continue;
      const Value::Kind kind = vit->second.kind;
      if (kind != Value::Kind::list && kind != Value::Kind::zset) continue;
      auto bit = blocking_keys.find(k);
      if (bit == blocking_keys.end()) continue;
      const std::vector<std::uint64_t> waiters = bit->second;  // served in blocking order
      for (auto id : waiters) {
        auto cit = clients.find(id);
        if (cit == clients.end() || cit->second.gone || !cit->second.blocked) continue;
        Client& r = cit->second;
        if (kind == Value::Kind::list && r.btype != Client::Btype::list) continue;
        if (kind == Value::Kind::zset && r.btype != Client::Btype::zset) continue;
        // As a command of the receiver's (afterCommand): its own invalidations follow its reply.
        Client* prev = current;
        const bool prev_in_call = in_call;
        current = &r;
        in_call = true;
        const bool deleted = kind == Value::Kind::list ? serve_blocked_list(r, db, k.second)
                                                       : serve_blocked_zset(r, db, k.second);
        unblock_keys(r);
        in_call = prev_in_call;
        if (!in_call) flush_pending_self();
        current = prev;
        if (deleted) break;
      }
    }
  }
}

void RedisModel::Impl::run_reprocess() {
  while (!reprocess.empty()) {
    auto ids = std::move(reprocess);
    reprocess.clear();
    for (auto id : ids) {
      auto it = clients.find(id);
      if (it == clients.end()) continue;
      Client& c = it->second;
      c.reprocess = false;
      if (!c.gone && !c.blocked) process_input(c);
    }
  }
}

}  // namespace lockwire::sim

namespace lockwire::sim::model {

// getTimeoutFromObjectOrReply(UNIT_SECONDS): a float of seconds, rounded up to milliseconds;
// 0 blocks forever.
bool parse_block_timeout(Impl& s, Client& c, const std::string& arg, std::int64_t& deadline) {
  long double t = 0;
  if (!string2ld(arg, t)) {
    s.error(c, "timeout is not a float or out of range");
    return false;
  }
  const long double ms = std::ceil(t * 1000.0L);
  if (ms < 0 || std::isnan(ms)) {
    s.error(c, "timeout is negative");
    return false;
  }
  auto v = ms > static_cast<long double>(kLLMax / 2) ? kLLMax / 2 : static_cast<std::int64_t>(ms);
  deadline = v > 0 ? v + s.wall_ms() : 0;
  return true;
}

}  // namespace lockwire::sim::model
