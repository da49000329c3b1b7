// Redis' t_hash.c: HSET HMSET HSETNX HGET HMGET HGETALL HKEYS HVALS HDEL HLEN HSTRLEN HEXISTS
// HINCRBY HINCRBYFLOAT HRANDFIELD HSCAN (fields in insertion order while the hash is a
// listpack, see types.cpp), with their keyspace events.
#include <algorithm>
#include <climits>
#include <cmath>

#include "commands.hpp"

namespace lockwire::sim::model {

namespace {

Value* hash_write(Impl& s, Client& c, const std::string& key) {
  bool wrong = false;
  Value* v = lookup_or_create(s, c, key, Value::Kind::hash, wrong);
  if (wrong) s.wrongtype(c);
  return v;
}

Value* hash_read(Impl& s, Client& c, const std::string& key, bool& wrong) {
  Value* v = lookup_typed(s, c, key, Value::Kind::hash, wrong);
  if (wrong) s.wrongtype(c);
  return v;
}

// An empty hash left by a failed write goes (Redis never keeps empty keys).
void drop_if_empty(Impl& s, Client& c, const std::string& key, Value* v) {
  if (v != nullptr && v->hash.empty()) s.db_delete(DB(s, c), key);
}

void hgetall_generic(Impl& s, Client& c, Args& a, bool keys, bool values) {
  bool wrong = false;
  Value* v = hash_read(s, c, a[1], wrong);
  if (wrong) return;
  const std::size_t n = v ? v->hash.size() : 0;
  if (keys && values) {
    s.map(c, n);
  } else {
    s.array(c, n);
  }
  if (v == nullptr) return;
  for (auto& [f, x] : v->hash) {
    if (keys) s.bulk(c, f);
    if (values) s.bulk(c, x);
  }
}

}  // namespace

void cmd_hset(Impl& s, Client& c, Args& a) {
  const bool hmset = ieq(a[0], "hmset");
  if (a.size() % 2 == 1) return s.wrong_args(c, hmset ? "hmset" : "hset");
  Value* v = hash_write(s, c, a[1]);
  if (v == nullptr) return;
  const Limits l = s.limits();
  std::int64_t created = 0;
  for (std::size_t i = 2; i + 1 < a.size(); i += 2)
    if (hash_set(*v, a[i], a[i + 1], l)) ++created;
  if (hmset) {
    s.ok(c);
  } else {
    s.integer(c, created);
  }
  s.signal_modified(&c, DB(s, c), a[1]);
  s.notify(NOTIFY_HASH, "hset", a[1], c);
  s.propagate(c, a);
}

void cmd_hsetnx(Impl& s, Client& c, Args& a) {
  Value* v = hash_write(s, c, a[1]);
  if (v == nullptr) return;
  if (hash_get(*v, a[2]) != nullptr) return s.integer(c, 0);
  hash_set(*v, a[2], a[3], s.limits());
  s.integer(c, 1);
  s.signal_modified(&c, DB(s, c), a[1]);
  s.notify(NOTIFY_HASH, "hset", a[1], c);
  s.propagate(c, a);
}

void cmd_hget(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = hash_read(s, c, a[1], wrong);
  if (wrong) return;
  std::string* f = v ? hash_get(*v, a[2]) : nullptr;
  if (f == nullptr) return s.null(c);
  s.bulk(c, *f);
}

void cmd_hmget(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = hash_read(s, c, a[1], wrong);
  if (wrong) return;
  s.array(c, a.size() - 2);
  for (std::size_t i = 2; i < a.size(); ++i) {
    std::string* f = v ? hash_get(*v, a[i]) : nullptr;
    if (f == nullptr) {
      s.null(c);
    } else {
      s.bulk(c, *f);
    }
  }
}

void cmd_hgetall(Impl& s, Client& c, Args& a) {
  hgetall_generic(s, c, a, true, true);
}

void cmd_hkeys(Impl& s, Client& c, Args& a) {
  hgetall_generic(s, c, a, true, false);
}

void cmd_hvals(Impl& s, Client& c, Args& a) {
  hgetall_generic(s, c, a, false, true);
}

void cmd_hdel(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = lookup_typed(s, c, a[1], Value::Kind::hash, wrong);
  if (wrong) return s.wrongtype(c);
  if (v == nullptr) return s.integer(c, 0);
  std::int64_t n = 0;
  bool gone = false;
  for (std::size_t i = 2; i < a.size(); ++i) {
    if (hash_del(*v, a[i])) ++n;
    if (v->hash.empty()) {
      gone = true;
      break;
    }
  }
  Db& db = DB(s, c);
  if (n > 0) {
    if (gone) s.db_delete(db, a[1]);
    s.signal_modified(&c, db, a[1]);
    s.notify(NOTIFY_HASH, "hdel", a[1], c);
    if (gone) s.notify(NOTIFY_GENERIC, "del", a[1], c);
    s.propagate(c, a);
  }
  s.integer(c, n);
}

void cmd_hlen(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = hash_read(s, c, a[1], wrong);
  if (wrong) return;
  s.integer(c, v ? static_cast<std::int64_t>(v->hash.size()) : 0);
}

void cmd_hstrlen(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = hash_read(s, c, a[1], wrong);
  if (wrong) return;
  std::string* f = v ? hash_get(*v, a[2]) : nullptr;
  s.integer(c, f ? static_cast<std::int64_t>(f->size()) : 0);
}

void cmd_hexists(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = hash_read(s, c, a[1], wrong);
  if (wrong) return;
  s.integer(c, v && hash_get(*v, a[2]) ? 1 : 0);
}

void cmd_hincrby(Impl& s, Client& c, Args& a) {
  std::int64_t incr = 0;
  if (!get_ll(s, c, a[3], incr)) return;
  Value* v = hash_write(s, c, a[1]);
  if (v == nullptr) return;
  std::int64_t old = 0;
  std::string* f = hash_get(*v, a[2]);
  if (f != nullptr && !string2ll(*f, old)) {
    drop_if_empty(s, c, a[1], v);
    return s.error(c, "hash value is not an integer");
  }
  if ((incr < 0 && old < 0 && incr < (kLLMin - old)) ||
      (incr > 0 && old > 0 && incr > (kLLMax - old))) {
    drop_if_empty(s, c, a[1], v);
    return s.error(c, "increment or decrement would overflow");
  }
  const std::int64_t nv = old + incr;
  hash_set(*v, a[2], ll2s(nv), s.limits());
  s.integer(c, nv);
  s.signal_modified(&c, DB(s, c), a[1]);
  s.notify(NOTIFY_HASH, "hincrby", a[1], c);
  s.propagate(c, Args{"HSET", a[1], a[2], ll2s(nv)});
}

void cmd_hincrbyfloat(Impl& s, Client& c, Args& a) {
  long double incr = 0;
  if (!string2ld(a[3], incr)) return s.error(c, "value is not a valid float");
  if (std::isnan(incr) || std::isinf(incr)) return s.error(c, "value is NaN or Infinity");
  Value* v = hash_write(s, c, a[1]);
  if (v == nullptr) return;
  long double value = 0;
  if (std::string* f = hash_get(*v, a[2]); f != nullptr && !string2ld(*f, value)) {
    drop_if_empty(s, c, a[1], v);
    return s.error(c, "hash value is not a float");
  }
  value += incr;
  if (std::isnan(value) || std::isinf(value)) {
    drop_if_empty(s, c, a[1], v);
    return s.error(c, "increment would produce NaN or Infinity");
  }
  const std::string nv = ld_human(value);
  hash_set(*v, a[2], nv, s.limits());
  s.bulk(c, nv);
  s.signal_modified(&c, DB(s, c), a[1]);
  s.notify(NOTIFY_HASH, "hincrbyfloat", a[1], c);
  s.propagate(c, Args{"HSET", a[1], a[2], nv});
}

void cmd_hrandfield(Impl& s, Client& c, Args& a) {
  std::int64_t l = 0;
  bool withvalues = false;
  if (a.size() >= 3) {
    if (!get_ll(s, c, a[2], l)) return;
    if (l == kLLMin)
      return s.error(c,
                     "value is out of range, value must between -9223372036854775807 and "
                     "9223372036854775807");
    if (a.size() > 4 || (a.size() == 4 && !ieq(a[3], "withvalues"))) return s.syntax(c);
    if (a.size() == 4) {
      withvalues = true;
      if (l < -kLLMax / 2 || l > kLLMax / 2) return s.error(c, "value is out of range");
    }
  }
  bool wrong = false;
  if (a.size() < 3) {
    Value* v = hash_read(s, c, a[1], wrong);
    if (wrong) return;
    if (v == nullptr) return s.null(c);
    return s.bulk(c, v->hash[s.rng.below(v->hash.size())].first);
  }
  Value* v = hash_read(s, c, a[1], wrong);
  if (wrong) return;
  if (v == nullptr || l == 0) return s.array(c, 0);
  const std::size_t size = v->hash.size();
  auto emit = [&](const std::pair<std::string, std::string>& e) {
    if (withvalues && c.resp > 2) s.array(c, 2);
    s.bulk(c, e.first);
    if (withvalues) s.bulk(c, e.second);
  };
  if (l < 0 || l == 1) {  // with repetitions, random order
    const auto count = static_cast<std::uint64_t>(l < 0 ? -l : l);
    s.array(c, withvalues && c.resp == 2 ? count * 2 : count);
    for (std::uint64_t i = 0; i < count; ++i) emit(v->hash[s.rng.below(size)]);
    return;
  }
  const std::size_t count = std::min<std::size_t>(static_cast<std::size_t>(l), size);
  s.array(c, withvalues && c.resp == 2 ? count * 2 : count);
  if (count == size) {
    for (auto& e : v->hash) emit(e);
    return;
  }
  // Distinct picks: a partial shuffle of the positions.
  std::vector<std::size_t> pos(size);
  for (std::size_t i = 0; i < size; ++i) pos[i] = i;
  for (std::size_t i = 0; i < count; ++i) {
    std::swap(pos[i], pos[i + s.rng.below(size - i)]);
    emit(v->hash[pos[i]]);
  }
}

void cmd_hscan(Impl& s, Client& c, Args& a) {
  std::uint64_t cursor = 0;
  if (!parse_cursor(s, c, a[2], cursor)) return;
  bool wrong = false;
  Value* v = hash_read(s, c, a[1], wrong);
  if (wrong) return;
  if (v == nullptr) {
    s.array(c, 2);
    s.bulk(c, "0");
    return s.array(c, 0);
  }
  scan_collection(s, c, a, cursor, v->hash, true, v->compact);
}

}  // namespace lockwire::sim::model
