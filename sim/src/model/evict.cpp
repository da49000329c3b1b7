// Redis' evict.c: maxmemory and its policies. Used memory is an estimate (used_memory() below;
// sim/README.md documents it), so only "far over" and "far under" the limit match a real server.
// Eviction picks keys exactly by the policy's order (Redis samples maxmemory-samples keys and
// keeps an eviction pool, so it only approximates that order); ties go to the lower database and
// then the lower key name, random picks come from the model's forked Rng: the choice is
// deterministic.
#include <tuple>

#include "commands.hpp"

namespace lockwire::sim::model {

namespace {

struct PolicyName {
  MaxmemoryPolicy policy;
  const char* name;
};
// In the order CONFIG SET's error lists them.
constexpr PolicyName kPolicies[] = {
    {MaxmemoryPolicy::volatile_lru, "volatile-lru"},
    {MaxmemoryPolicy::volatile_lfu, "volatile-lfu"},
    {MaxmemoryPolicy::volatile_random, "volatile-random"},
    {MaxmemoryPolicy::volatile_ttl, "volatile-ttl"},
    {MaxmemoryPolicy::allkeys_lru, "allkeys-lru"},
    {MaxmemoryPolicy::allkeys_lfu, "allkeys-lfu"},
    {MaxmemoryPolicy::allkeys_random, "allkeys-random"},
    {MaxmemoryPolicy::noeviction, "noeviction"},
};

// What redis-server 7.0.15 reports right after start-up (used_memory_startup, about 860 KB).
constexpr std::uint64_t kStartupMemory = 880000;

// One key's estimated footprint: dict entry + key + object header, the payload with a little
// per-element overhead, the expires entry.
std::uint64_t key_cost(const std::string& key, const Value& v, bool volatile_key) {
  std::uint64_t n = 64 + key.size() + (volatile_key ? 32 : 0);
  switch (v.kind) {
    case Value::Kind::string:
      n += v.str.size();
      break;
    case Value::Kind::hash:
      for (auto& [f, x] : v.hash) n += f.size() + x.size() + 16;
      break;
    case Value::Kind::set:
      for (auto& m : v.set) n += m.size() + 16;
      break;
    case Value::Kind::list:
      for (auto& e : v.list) n += e.size() + 11;
      break;
    case Value::Kind::zset:
      for (auto& [m, sc] : v.zscores) n += m.size() + 24;
      break;
  }
  return n;
}

bool is_volatile(MaxmemoryPolicy p) {
  return p == MaxmemoryPolicy::volatile_lru || p == MaxmemoryPolicy::volatile_lfu ||
         p == MaxmemoryPolicy::volatile_random || p == MaxmemoryPolicy::volatile_ttl;
}

}  // namespace

bool parse_policy(std::string_view s, MaxmemoryPolicy& out) {
  for (auto& p : kPolicies) {
    if (ieq(s, p.name)) {
      out = p.policy;
      return true;
    }
  }
  return false;
}

const char* policy_name(MaxmemoryPolicy p) {
  for (auto& x : kPolicies)
    if (x.policy == p) return x.name;
  return "noeviction";
}

}  // namespace lockwire::sim::model

namespace lockwire::sim {

using namespace model;

std::uint64_t RedisModel::Impl::used_memory() const {
  std::uint64_t n = kStartupMemory;
  for (auto& db : dbs)
    for (auto& [k, v] : db.dict) n += key_cost(k, v, db.expires.count(k) != 0);
  return n;
}

bool RedisModel::Impl::perform_evictions() {
  // isSafeToPerformEvictions: not while loading or busy, not on replicas
  // (replica-ignore-maxmemory), not during CLIENT PAUSE. Then nothing is refused either.
  if (maxmemory == 0 || loading || busy || replica || paused()) return true;
  std::uint64_t used = used_memory();
  if (used <= maxmemory) return true;
  if (policy == MaxmemoryPolicy::noeviction) return false;
  const bool volatile_only = is_volatile(policy);
  while (used > maxmemory) {
    // The best candidate by the policy's order; the sort key makes the scan's order irrelevant.
    using Rank = std::tuple<std::int64_t, std::int64_t, std::size_t, std::string>;
    bool found = false;
    Rank best;
    std::vector<std::pair<std::size_t, const std::string*>> pool;  // *-random
    for (std::size_t d = 0; d < dbs.size(); ++d) {
      for (auto& [k, v] : dbs[d].dict) {
        auto e = dbs[d].expires.find(k);
        if (volatile_only && e == dbs[d].expires.end()) continue;
        Rank r;
        switch (policy) {
          case MaxmemoryPolicy::allkeys_lru:
          case MaxmemoryPolicy::volatile_lru:
            r = {v.lru_ms, 0, d, k};
            break;
          case MaxmemoryPolicy::allkeys_lfu:
          case MaxmemoryPolicy::volatile_lfu:
            r = {v.lfu, v.lru_ms, d, k};
            break;
          case MaxmemoryPolicy::volatile_ttl:
            r = {e->second, 0, d, k};
            break;
          default:
            pool.emplace_back(d, &k);
            continue;
        }
        if (!found || r < best) best = std::move(r);
        found = true;
      }
    }
    if (!pool.empty()) {
      std::sort(pool.begin(), pool.end(), [](auto& x, auto& y) {
        return x.first != y.first ? x.first < y.first : *x.second < *y.second;
      });
      const auto& pick = pool[rng.below(pool.size())];
      best = {0, 0, pick.first, *pick.second};
      found = true;
    }
    if (!found) return false;  // nothing left to evict: EVICT_FAIL
    Db& db = dbs[std::get<2>(best)];
    const std::string key = std::get<3>(best);
    used -= key_cost(key, db.dict.at(key), db.expires.count(key) != 0);
    if (hooks.propagate) hooks.propagate(db_index(db), Args{"DEL", key});
    db_delete(db, key);
    ++evicted_keys;
    trace("evicted", key);
    signal_modified(nullptr, db, key);
    notify(NOTIFY_EVICTED, "evicted", key, db_index(db));
  }
  return true;
}

std::uint64_t RedisModel::Impl::key_memory(const std::string& key, const Value& v,
                                           bool volatile_key) const {
  return key_cost(key, v, volatile_key);
}

}  // namespace lockwire::sim
