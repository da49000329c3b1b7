// Redis' db.c: the keyspace (lookups, deletes, expiry metadata, signalModifiedKey) and the keyspace
// commands SELECT DEL UNLINK EXISTS TYPE DBSIZE FLUSHDB FLUSHALL KEYS SCAN.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
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

}  // namespace

// parseScanCursorOrReply: strtoul (so "-1" wraps and "+1" is fine), no leading space, no junk.
bool parse_cursor(Impl& s, Client& c, const std::string& arg, std::uint64_t& cursor) {
  const std::string z(cstr(arg));
  char* end = nullptr;
  errno = 0;
  cursor = std::strtoul(z.c_str(), &end, 10);
  if ((!z.empty() && std::isspace(static_cast<unsigned char>(z[0]))) || *end != '\0' ||
      errno == ERANGE || z.size() != arg.size()) {
    s.error(c, "invalid cursor");
    return false;
  }
  return true;
}

void scan_collection(Impl& s, Client& c, Args& a, std::uint64_t cursor,
                     std::vector<std::pair<std::string, std::string>> items, bool pairs,
                     bool compact) {
  std::int64_t count = 10;
  const std::string* match = nullptr;
  for (std::size_t i = 3; i < a.size();) {
    const std::size_t j = a.size() - i;
    if (ieq(a[i], "count") && j >= 2) {
      if (!get_ll(s, c, a[i + 1], count)) return;
      if (count < 1) return s.syntax(c);
      i += 2;
    } else if (ieq(a[i], "match") && j >= 2) {
      match = &a[i + 1];
      i += 2;
    } else {
      return s.syntax(c);
    }
  }
  if (match != nullptr && *match == "*") match = nullptr;
  std::uint64_t next = 0;
  std::vector<std::pair<std::string, std::string>> batch;
  if (compact) {
    batch = std::move(items);
  } else {
    std::vector<std::pair<std::uint64_t, std::size_t>> order;
    order.reserve(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) order.emplace_back(scan_hash(items[i].first), i);
    std::sort(order.begin(), order.end(), [&](auto& x, auto& y) {
      return x.first != y.first ? x.first < y.first : items[x.second].first < items[y.second].first;
    });
    std::size_t i = 0;
    while (i < order.size() && order[i].first < cursor) ++i;
    std::int64_t taken = 0;
    for (; i < order.size(); ++i) {
      if (taken >= count && order[i].first != order[i - 1].first) {
        next = order[i].first;
        break;
      }
      batch.push_back(std::move(items[order[i].second]));
      ++taken;
    }
  }
  std::vector<const std::pair<std::string, std::string>*> out;
  for (auto& e : batch)
    if (match == nullptr || glob_match(*match, e.first)) out.push_back(&e);
  s.array(c, 2);
  s.bulk(c, ll2s(static_cast<std::int64_t>(next)));
  s.array(c, out.size() * (pairs ? 2 : 1));
  for (auto* e : out) {
    s.bulk(c, e->first);
    if (pairs) s.bulk(c, e->second);
  }
}

namespace {

std::vector<std::pair<std::uint64_t, const std::string*>> ordered_keys(const Db& db) {
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
  return &s.db_add(DB(s, c), key, std::move(nv));
}

Value* lookup_typed(Impl& s, Client& c, const std::string& key, Value::Kind kind, bool& wrong) {
  wrong = false;
  Value* v = s.read_command ? s.lookup_read(c, key) : s.lookup(c, key);
  if (v != nullptr && v->kind != kind) {
    wrong = true;
    return nullptr;
  }
  return v;
}

Value* typed_read(Impl& s, Client& c, const std::string& key, Value::Kind kind, bool& wrong) {
  Value* v = lookup_typed(s, c, key, kind, wrong);
  if (wrong) s.wrongtype(c);
  return v;
}

Value* typed_write(Impl& s, Client& c, const std::string& key, Value::Kind kind, bool& wrong) {
  Value* v = s.lookup(c, key);
  wrong = v != nullptr && v->kind != kind;
  if (wrong) {
    s.wrongtype(c);
    return nullptr;
  }
  return v;
}

const char* type_name(const Value* v) {
  if (v == nullptr) return "none";
  switch (v->kind) {
    case Value::Kind::string:
      return "string";
    case Value::Kind::list:
      return "list";
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
      s.notify(NOTIFY_GENERIC, "del", a[i], c);
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
  if (!parse_cursor(s, c, a[1], cursor)) return;
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

namespace {

// getIntFromObjectOrReply + selectDb: the database index, or the error sent.
bool other_db(Impl& s, Client& c, const std::string& arg, int& id, const char* msg = nullptr) {
  std::int64_t v = 0;
  if (!string2ll(arg, v) || v < std::numeric_limits<int>::min() ||
      v > std::numeric_limits<int>::max()) {
    if (msg != nullptr) {
      s.error(c, msg);
    } else {
      s.not_int(c);
    }
    return false;
  }
  id = static_cast<int>(v);
  return true;
}

void rename_generic(Impl& s, Client& c, Args& a, bool nx) {
  const bool samekey = a[1] == a[2];
  Value* v = s.lookup(c, a[1]);
  if (v == nullptr) return s.error(c, "no such key");
  if (samekey) return nx ? s.integer(c, 0) : s.ok(c);
  Db& db = DB(s, c);
  const std::int64_t expire = s.get_expire(db, a[1]);
  if (s.lookup(c, a[2]) != nullptr) {
    if (nx) return s.integer(c, 0);
    s.db_delete(db, a[2]);
  }
  Value moved = std::move(*v);
  s.db_delete(db, a[1]);
  s.db_add(db, a[2], std::move(moved));
  if (expire != -1) s.set_expire(db, a[2], expire);
  s.signal_modified(&c, db, a[1]);
  s.signal_modified(&c, db, a[2]);
  s.notify(NOTIFY_GENERIC, "rename_from", a[1], c);
  s.notify(NOTIFY_GENERIC, "rename_to", a[2], c);
  s.propagate(c, a);
  if (nx) {
    s.integer(c, 1);
  } else {
    s.ok(c);
  }
}

}  // namespace

void cmd_rename(Impl& s, Client& c, Args& a) {
  rename_generic(s, c, a, false);
}

void cmd_renamenx(Impl& s, Client& c, Args& a) {
  rename_generic(s, c, a, true);
}

void cmd_move(Impl& s, Client& c, Args& a) {
  if (s.opt.cluster_enabled) return s.error(c, "MOVE is not allowed in cluster mode");
  int id = 0;
  if (!other_db(s, c, a[2], id)) return;
  if (id < 0 || id >= static_cast<int>(s.dbs.size()))
    return s.error(c, "DB index is out of range");
  if (id == c.db) return s.error(c, "source and destination objects are the same");
  Db& src = DB(s, c);
  Db& dst = s.dbs[static_cast<std::size_t>(id)];
  Value* v = s.lookup(src, a[1]);
  if (v == nullptr) return s.integer(c, 0);
  const std::int64_t expire = s.get_expire(src, a[1]);
  if (s.lookup(dst, a[1]) != nullptr) return s.integer(c, 0);
  Value moved = std::move(*v);
  s.db_add(dst, a[1], std::move(moved));
  if (expire != -1) s.set_expire(dst, a[1], expire);
  s.db_delete(src, a[1]);
  s.signal_modified(&c, src, a[1]);
  s.signal_modified(&c, dst, a[1]);
  s.notify(NOTIFY_GENERIC, "move_from", a[1], c.db);
  s.notify(NOTIFY_GENERIC, "move_to", a[1], id);
  s.propagate(c, a);
  s.integer(c, 1);
}

void cmd_copy(Impl& s, Client& c, Args& a) {
  int dbid = c.db;
  bool replace = false;
  for (std::size_t j = 3; j < a.size(); ++j) {
    const std::size_t additional = a.size() - j - 1;
    if (ieq(a[j], "replace")) {
      replace = true;
    } else if (ieq(a[j], "db") && additional >= 1) {
      if (!other_db(s, c, a[j + 1], dbid)) return;
      if (dbid < 0 || dbid >= static_cast<int>(s.dbs.size()))
        return s.error(c, "DB index is out of range");
      ++j;
    } else {
      return s.syntax(c);
    }
  }
  if (s.opt.cluster_enabled && (c.db != 0 || dbid != 0))
    return s.error(c, "Copying to another database is not allowed in cluster mode");
  if (dbid == c.db && a[1] == a[2])
    return s.error(c, "source and destination objects are the same");
  Db& src = DB(s, c);
  Db& dst = s.dbs[static_cast<std::size_t>(dbid)];
  Value* v = s.lookup_read(c, a[1]);
  if (v == nullptr) return s.integer(c, 0);
  const std::int64_t expire = s.get_expire(src, a[1]);
  if (s.lookup(dst, a[2]) != nullptr) {
    if (!replace) return s.integer(c, 0);
    s.db_delete(dst, a[2]);
  }
  Value copy = *v;
  s.db_add(dst, a[2], std::move(copy));
  if (expire != -1) s.set_expire(dst, a[2], expire);
  s.signal_modified(&c, dst, a[2]);
  s.notify(NOTIFY_GENERIC, "copy_to", a[2], dbid);
  s.propagate(c, a);
  s.integer(c, 1);
}

void cmd_swapdb(Impl& s, Client& c, Args& a) {
  if (s.opt.cluster_enabled) return s.error(c, "SWAPDB is not allowed in cluster mode");
  int id1 = 0, id2 = 0;
  if (!other_db(s, c, a[1], id1, "invalid first DB index")) return;
  if (!other_db(s, c, a[2], id2, "invalid second DB index")) return;
  const int n = static_cast<int>(s.dbs.size());
  if (id1 < 0 || id1 >= n || id2 < 0 || id2 >= n) return s.error(c, "DB index is out of range");
  if (id1 != id2) {
    Db& d1 = s.dbs[static_cast<std::size_t>(id1)];
    Db& d2 = s.dbs[static_cast<std::size_t>(id2)];
    // touchAllWatchedKeysInDb for both sides (keys that exist in either)
    s.touch_all_watched_in_db(d1);
    s.touch_all_watched_in_db(d2);
    std::swap(d1.dict, d2.dict);
    std::swap(d1.expires, d2.expires);
    std::swap(d1.by_time, d2.by_time);
    std::swap(d1.avg_ttl, d2.avg_ttl);
    s.touch_all_watched_in_db(d1);
    s.touch_all_watched_in_db(d2);
    // Clients blocked on keys of either database may now find a list / zset.
    for (auto& [k, ids] : s.blocking_keys) {
      if (k.first != id1 && k.first != id2) continue;
      Db& db = s.dbs[static_cast<std::size_t>(k.first)];
      auto it = db.dict.find(k.second);
      if (it != db.dict.end()) s.signal_key_ready(db, k.second);
    }
  }
  s.propagate(c, a);
  s.ok(c);
}

void cmd_randomkey(Impl& s, Client& c, Args&) {
  Db& db = DB(s, c);
  // dbRandomKey: a random key, lazily expiring the expired ones it lands on.
  for (int tries = 0; !db.dict.empty(); ++tries) {
    auto keys = ordered_keys(db);
    const std::string k = *keys[s.rng.below(keys.size())].second;
    if (db.expires.count(k) != 0 && tries < 100 && s.expire_if_needed(db, k)) continue;
    return s.bulk(c, k);
  }
  s.null(c);
}

void cmd_touch(Impl& s, Client& c, Args& a) {
  std::int64_t n = 0;
  for (std::size_t i = 1; i < a.size(); ++i)
    if (s.lookup_read(c, a[i]) != nullptr) ++n;
  s.integer(c, n);
}

void cmd_object(Impl& s, Client& c, Args& a) {
  const std::string sub = lower(a[1]);
  if (sub == "help" && a.size() == 2)
    return help_reply(s, c, a,
                      {"ENCODING <key>",
                       "    Return the kind of internal representation used in order to store the value",
                       "    associated with a <key>.",
                       "FREQ <key>",
                       "    Return the access frequency index of the <key>. The returned integer is",
                       "    proportional to the logarithm of the recent access frequency of the key.",
                       "IDLETIME <key>",
                       "    Return the idle time of the <key>, that is the approximated number of",
                       "    seconds elapsed since the last access to the key.",
                       "REFCOUNT <key>",
                       "    Return the number of references of the value associated with the specified",
                       "    <key>."});
  if (a.size() != 3 || (sub != "encoding" && sub != "freq" && sub != "idletime" &&
                        sub != "refcount"))
    return subcommand_syntax(s, c, a);
  Db& db = DB(s, c);
  s.expire_if_needed(db, a[2]);
  auto it = db.dict.find(a[2]);
  if (it == db.dict.end()) return s.null(c);
  const Value& v = it->second;
  if (sub == "encoding") return s.bulk(c, encoding_name(v, s.limits()));
  if (sub == "refcount") {
    std::int64_t x = 0;
    const bool shared = v.kind == Value::Kind::string && string2ll(v.str, x) && x >= 0 &&
                        x < 10000 && ll2s(x) == v.str;
    return s.integer(c, shared ? 2147483647 : 1);
  }
  const bool lfu = s.policy == MaxmemoryPolicy::allkeys_lfu || s.policy == MaxmemoryPolicy::volatile_lfu;
  if (sub == "idletime") {
    if (lfu)
      return s.error(c,
                     "An LFU maxmemory policy is selected, idle time not tracked. Please note "
                     "that when switching between policies at runtime LRU and LFU data will "
                     "take some time to adjust.");
    return s.integer(c, std::max<std::int64_t>(0, (s.cmd_ms - v.lru_ms) / 1000));
  }
  if (!lfu)
    return s.error(c,
                   "An LFU maxmemory policy is not selected, access frequency not tracked. "
                   "Please note that when switching between policies at runtime LRU and LFU "
                   "data will take some time to adjust.");
  s.integer(c, std::min<std::uint32_t>(v.lfu, 255));
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

model::Value& RedisModel::Impl::db_add(Db& db, const std::string& key, Value v) {
  const bool wakes = v.kind == Value::Kind::list || v.kind == Value::Kind::zset;
  Value& out = db.dict.insert_or_assign(key, std::move(v)).first->second;
  out.lru_ms = cmd_ms;
  if (wakes) signal_key_ready(db, key);
  notify(NOTIFY_NEW, "new", key, db_index(db));
  return out;
}

void RedisModel::Impl::set_value(Client& c, Db& db, const std::string& key, Value v,
                                 bool keepttl) {
  expire_if_needed(db, key);
  auto it = db.dict.find(key);
  if (it == db.dict.end()) {
    db_add(db, key, std::move(v));
  } else {
    v.lru_ms = cmd_ms;
    it->second = std::move(v);
  }
  if (!keepttl) remove_expire(db, key);
  signal_modified(&c, db, key);
}

model::Value* RedisModel::Impl::lookup_read(Client& c, const std::string& key) {
  Value* v = lookup(c, key);
  if (v == nullptr) notify(NOTIFY_KEY_MISS, "keymiss", key, c.db);
  return v;
}

void RedisModel::Impl::signal_modified(Client* by, Db& db, const std::string& key) {
  if (auto it = db.dict.find(key); it != db.dict.end()) it->second.lru_ms = cmd_ms;
  touch_watched(db, key);
  tracking_invalidate(by, key);
  trace("key", key);
}

}  // namespace lockwire::sim
