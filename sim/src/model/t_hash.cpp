// Redis' t_hash.c: HSET HMSET HSETNX HGET HMGET HGETALL HDEL HLEN HEXISTS HINCRBY (fields in
// insertion order, like a listpack).
#include <algorithm>

#include "commands.hpp"

namespace lockwire::sim::model {

namespace {

std::string* hfind(Value& v, const std::string& f) {
  for (auto& [k, val] : v.hash)
    if (k == f) return &val;
  return nullptr;
}

}  // namespace

void cmd_hset(Impl& s, Client& c, Args& a) {
  if (a.size() % 2 == 1) return s.wrong_args(c, lower(a[0]) == "hmset" ? "hmset" : "hset");
  bool wrong = false;
  Value* v = lookup_or_create(s, c, a[1], Value::Kind::hash, wrong);
  if (wrong) return s.wrongtype(c);
  std::int64_t created = 0;
  for (std::size_t i = 2; i + 1 < a.size(); i += 2) {
    if (std::string* f = hfind(*v, a[i])) {
      *f = a[i + 1];
    } else {
      v->hash.emplace_back(a[i], a[i + 1]);
      ++created;
    }
  }
  s.signal_modified(&c, DB(s, c), a[1]);
  s.propagate(c, a);
  s.integer(c, created);
}

void cmd_hsetnx(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = lookup_or_create(s, c, a[1], Value::Kind::hash, wrong);
  if (wrong) return s.wrongtype(c);
  if (hfind(*v, a[2]) != nullptr) return s.integer(c, 0);
  v->hash.emplace_back(a[2], a[3]);
  s.signal_modified(&c, DB(s, c), a[1]);
  s.propagate(c, a);
  s.integer(c, 1);
}

void cmd_hget(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = lookup_typed(s, c, a[1], Value::Kind::hash, wrong);
  if (wrong) return s.wrongtype(c);
  std::string* f = v ? hfind(*v, a[2]) : nullptr;
  if (f == nullptr) return s.null(c);
  s.bulk(c, *f);
}

void cmd_hmget(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = lookup_typed(s, c, a[1], Value::Kind::hash, wrong);
  if (wrong) return s.wrongtype(c);
  s.array(c, a.size() - 2);
  for (std::size_t i = 2; i < a.size(); ++i) {
    std::string* f = v ? hfind(*v, a[i]) : nullptr;
    if (f == nullptr) {
      s.null(c);
    } else {
      s.bulk(c, *f);
    }
  }
}

void cmd_hgetall(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = lookup_typed(s, c, a[1], Value::Kind::hash, wrong);
  if (wrong) return s.wrongtype(c);
  if (v == nullptr) return s.map(c, 0);
  s.map(c, v->hash.size());
  for (auto& [k, val] : v->hash) {
    s.bulk(c, k);
    s.bulk(c, val);
  }
}

void cmd_hdel(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = lookup_typed(s, c, a[1], Value::Kind::hash, wrong);
  if (wrong) return s.wrongtype(c);
  if (v == nullptr) return s.integer(c, 0);
  std::int64_t n = 0;
  for (std::size_t i = 2; i < a.size(); ++i) {
    auto it =
        std::find_if(v->hash.begin(), v->hash.end(), [&](auto& p) { return p.first == a[i]; });
    if (it != v->hash.end()) {
      v->hash.erase(it);
      ++n;
    }
    if (v->hash.empty()) break;
  }
  Db& db = DB(s, c);
  if (n > 0) {
    if (v->hash.empty()) s.db_delete(db, a[1]);
    s.signal_modified(&c, db, a[1]);
    s.propagate(c, a);
  }
  s.integer(c, n);
}

void cmd_hlen(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = lookup_typed(s, c, a[1], Value::Kind::hash, wrong);
  if (wrong) return s.wrongtype(c);
  s.integer(c, v ? static_cast<std::int64_t>(v->hash.size()) : 0);
}

void cmd_hexists(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = lookup_typed(s, c, a[1], Value::Kind::hash, wrong);
  if (wrong) return s.wrongtype(c);
  s.integer(c, v && hfind(*v, a[2]) ? 1 : 0);
}

void cmd_hincrby(Impl& s, Client& c, Args& a) {
  std::int64_t incr = 0;
  if (!get_ll(s, c, a[3], incr)) return;
  bool wrong = false;
  Value* v = lookup_or_create(s, c, a[1], Value::Kind::hash, wrong);
  if (wrong) return s.wrongtype(c);
  std::int64_t old = 0;
  std::string* f = hfind(*v, a[2]);
  if (f != nullptr && !string2ll(*f, old)) {
    if (v->hash.empty()) DB(s, c).dict.erase(a[1]);
    return s.error(c, "hash value is not an integer");
  }
  if ((incr < 0 && old < 0 && incr < (kLLMin - old)) ||
      (incr > 0 && old > 0 && incr > (kLLMax - old))) {
    if (v->hash.empty()) DB(s, c).dict.erase(a[1]);
    return s.error(c, "increment or decrement would overflow");
  }
  const std::int64_t nv = old + incr;
  if (f != nullptr) {
    *f = ll2s(nv);
  } else {
    v->hash.emplace_back(a[2], ll2s(nv));
  }
  s.signal_modified(&c, DB(s, c), a[1]);
  s.propagate(c, Args{"HSET", a[1], a[2], ll2s(nv)});
  s.integer(c, nv);
}

}  // namespace lockwire::sim::model
