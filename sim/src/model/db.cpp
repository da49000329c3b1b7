// Redis' db.c: the keyspace (lookups, deletes, expiry metadata, signalModifiedKey) and the keyspace
// commands SELECT DEL UNLINK EXISTS TYPE DBSIZE FLUSHDB FLUSHALL KEYS SCAN.
#include <algorithm>
#include <charconv>
#include <limits>

#include "commands.hpp"

namespace lockwire::sim::model {

namespace {

bool flush_args(Impl& s, Client& c, Args& a) {
  if (a.size() > 2) {
    s.syntax(c);
    return false;
  }
  if (a.size() == 2 && !ieq(a[1], "sync") && !ieq(a[1], "async")) {
    s.syntax(c);
    return false;
  }
  return true;
}

void flush_db(Impl& s, Client* by, Db& db) {
  s.touch_all_watched_in_db(db);
  db.dict.clear();
  db.expires.clear();
  db.by_time.clear();
  (void)by;
}

// Deterministic key order for KEYS/SCAN: by a 63-bit hash, then by name (so SCAN cursors are
// stateless positions, as in Redis).
std::uint64_t scan_hash(const std::string& k) {
  return (fnv1a64(k) >> 1) | 1;
}

std::vector<std::pair<std::uint64_t, const std::string*>> ordered_keys(Db& db) {
  std::vector<std::pair<std::uint64_t, const std::string*>> v;
  v.reserve(db.dict.size());
  for (auto& [k, val] : db.dict) v.emplace_back(scan_hash(k), &k);
  std::sort(v.begin(), v.end(), [](auto& x, auto& y) {
    return x.first != y.first ? x.first < y.first : *x.second < *y.second;
  });
  return v;
}

}  // namespace

Value* lookup_or_create(Impl& s, Client& c, const std::string& key, Value::Kind kind, bool& wrong) {
  wrong = false;
  Value* v = s.lookup(c, key);
  if (v != nullptr) {
    if (v->kind != kind) {
      wrong = true;
      return nullptr;
    }
    return v;
  }
  Value nv;
  nv.kind = kind;
  return &DB(s, c).dict.emplace(key, std::move(nv)).first->second;
}

Value* lookup_typed(Impl& s, Client& c, const std::string& key, Value::Kind kind, bool& wrong) {
  wrong = false;
  Value* v = s.lookup(c, key);
  if (v != nullptr && v->kind != kind) {
    wrong = true;
    return nullptr;
  }
  return v;
}

const char* type_name(const Value* v) {
  if (v == nullptr) return "none";
  switch (v->kind) {
    case Value::Kind::string:
      return "string";
    case Value::Kind::hash:
      return "hash";
    case Value::Kind::set:
      return "set";
    case Value::Kind::zset:
      return "zset";
  }
  return "none";
}

void cmd_select(Impl& s, Client& c, Args& a) {
  std::int64_t id = 0;
  if (!string2ll(a[1], id) || id < std::numeric_limits<int>::min() ||
      id > std::numeric_limits<int>::max())
    return s.not_int(c);
  if (s.opt.cluster_enabled && id != 0) return s.error(c, "SELECT is not allowed in cluster mode");
  if (id < 0 || id >= static_cast<std::int64_t>(s.dbs.size()))
    return s.error(c, "DB index is out of range");
  c.db = static_cast<int>(id);
  s.ok(c);
}

void cmd_del(Impl& s, Client& c, Args& a) {
  std::int64_t n = 0;
  Db& db = DB(s, c);
  for (std::size_t i = 1; i < a.size(); ++i) {
    s.expire_if_needed(db, a[i]);
    if (db.dict.count(a[i]) != 0) {
      s.db_delete(db, a[i]);
      s.signal_modified(&c, db, a[i]);
      s.propagate(c, Args{"DEL", a[i]});
      ++n;
    }
  }
  s.integer(c, n);
}

void cmd_exists(Impl& s, Client& c, Args& a) {
  std::int64_t n = 0;
  for (std::size_t i = 1; i < a.size(); ++i)
    if (s.lookup(c, a[i]) != nullptr) ++n;
  s.integer(c, n);
}

void cmd_type(Impl& s, Client& c, Args& a) {
  s.status(c, type_name(s.lookup(c, a[1])));
}

void cmd_dbsize(Impl& s, Client& c, Args&) {
  s.integer(c, static_cast<std::int64_t>(DB(s, c).dict.size()));
}

void cmd_flushdb(Impl& s, Client& c, Args& a) {
  if (!flush_args(s, c, a)) return;
  flush_db(s, &c, DB(s, c));
  s.tracking_on_flush();
  s.propagate(c, Args{"FLUSHDB"});
  s.ok(c);
}

void cmd_flushall(Impl& s, Client& c, Args& a) {
  if (!flush_args(s, c, a)) return;
  for (auto& db : s.dbs) flush_db(s, &c, db);
  s.tracking_on_flush();
  s.propagate(c, Args{"FLUSHALL"});
  s.ok(c);
}

void cmd_keys(Impl& s, Client& c, Args& a) {
  Db& db = DB(s, c);
  std::vector<std::string> out;
  for (auto& [h, k] : ordered_keys(db)) {
    if ((a[1] == "*" || glob_match(a[1], *k)) && !s.key_is_expired(db, *k)) out.push_back(*k);
  }
  s.array(c, out.size());
  for (auto& k : out) s.bulk(c, k);
}

void cmd_scan(Impl& s, Client& c, Args& a) {
  // parseScanCursorOrReply: strtoul semantics, rejects junk.
  std::uint64_t cursor = 0;
  {
    const std::string& cs = a[1];
    auto [p, ec] = std::from_chars(cs.data(), cs.data() + cs.size(), cursor);
    if (cs.empty() || ec != std::errc() || p != cs.data() + cs.size())
      return s.error(c, "invalid cursor");
  }
  std::int64_t count = 10;
  const std::string* match = nullptr;
  const std::string* type = nullptr;
  for (std::size_t i = 2; i < a.size();) {
    const std::size_t j = a.size() - i;
    if (ieq(a[i], "count") && j >= 2) {
      if (!get_ll(s, c, a[i + 1], count)) return;
      if (count < 1) return s.syntax(c);
      i += 2;
    } else if (ieq(a[i], "match") && j >= 2) {
      match = &a[i + 1];
      i += 2;
    } else if (ieq(a[i], "type") && j >= 2) {
      type = &a[i + 1];
      i += 2;
    } else {
      return s.syntax(c);
    }
  }
  Db& db = DB(s, c);
  auto keys = ordered_keys(db);
  std::vector<std::string> batch;
  std::size_t i = 0;
  while (i < keys.size() && keys[i].first < cursor) ++i;
  std::uint64_t next = 0;
  std::int64_t taken = 0;
  while (i < keys.size()) {
    if (taken >= count && keys[i].first != keys[i - 1].first) {
      next = keys[i].first;
      break;
    }
    batch.push_back(*keys[i].second);
    ++taken;
    ++i;
  }
  std::vector<std::string> out;
  for (auto& k : batch) {
    if (match != nullptr && !glob_match(*match, k)) continue;
    if (s.expire_if_needed(db, k)) continue;
    if (type != nullptr) {
      auto it = db.dict.find(k);
      if (it == db.dict.end() || !ieq(*type, type_name(&it->second))) continue;
    }
    out.push_back(k);
  }
  s.array(c, 2);
  s.bulk(c, ll2s(static_cast<std::int64_t>(next)));
  s.array(c, out.size());
  for (auto& k : out) s.bulk(c, k);
}

}  // namespace lockwire::sim::model

namespace lockwire::sim {

using namespace model;

bool RedisModel::Impl::key_is_expired(Db& db, const std::string& key) const {
  auto it = db.expires.find(key);
  if (it == db.expires.end()) return false;
  if (loading) return false;
  return it->second < cmd_ms;  // Redis: expired when now > when (keyIsExpired)
}

void RedisModel::Impl::remove_expire(Db& db, const std::string& key) {
  auto it = db.expires.find(key);
  if (it == db.expires.end()) return;
  db.by_time.erase({it->second, key});
  db.expires.erase(it);
}

void RedisModel::Impl::set_expire(Db& db, const std::string& key, std::int64_t when) {
  remove_expire(db, key);
  db.expires[key] = when;
  db.by_time.insert({when, key});
}

std::int64_t RedisModel::Impl::get_expire(Db& db, const std::string& key) {
  auto it = db.expires.find(key);
  return it == db.expires.end() ? -1 : it->second;
}

void RedisModel::Impl::db_delete(Db& db, const std::string& key) {
  remove_expire(db, key);
  db.dict.erase(key);
}

model::Value* RedisModel::Impl::lookup(Db& db, const std::string& key) {
  auto it = expire_if_needed(db, key) ? db.dict.end() : db.dict.find(key);
  if (it == db.dict.end()) {
    if (read_command) ++keyspace_misses;
    return nullptr;
  }
  if (read_command) ++keyspace_hits;
  it->second.lru_ms = cmd_ms;  // what maxmemory's LRU / LFU policies go by
  ++it->second.lfu;
  return &it->second;
}

void RedisModel::Impl::signal_modified(Client* by, Db& db, const std::string& key) {
  if (auto it = db.dict.find(key); it != db.dict.end()) it->second.lru_ms = cmd_ms;
  touch_watched(db, key);
  tracking_invalidate(by, key);
  trace("key", key);
}

}  // namespace lockwire::sim
