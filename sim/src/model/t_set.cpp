// Redis' t_set.c: SADD SREM SMEMBERS SISMEMBER SMISMEMBER SCARD SMOVE SPOP SRANDMEMBER SINTER
// SINTERCARD SINTERSTORE SUNION SUNIONSTORE SDIFF SDIFFSTORE SSCAN (an all-integer set is an
// intset, listed in numeric order; see types.cpp), with their keyspace events and SPOP's
// propagation as SREM / DEL.
#include <algorithm>

#include "commands.hpp"

namespace lockwire::sim::model {

namespace {

Value* set_read(Impl& s, Client& c, const std::string& key, bool& wrong) {
  return typed_read(s, c, key, Value::Kind::set, wrong);
}

Value* set_write(Impl& s, Client& c, const std::string& key, bool& wrong) {
  return typed_write(s, c, key, Value::Kind::set, wrong);
}

Value new_set() {
  Value v;
  v.kind = Value::Kind::set;
  return v;
}

void reply_members(Impl& s, Client& c, const Value& v) {
  const auto m = set_members(v);
  s.set_len(c, m.size());
  for (auto& x : m) s.bulk(c, x);
}

// A STORE destination: replaced by the result, deleted when it is empty.
void store_set(Impl& s, Client& c, const std::string& dst, Value result, const char* event) {
  Db& db = DB(s, c);
  if (result.set.empty()) {
    s.integer(c, 0);
    s.expire_if_needed(db, dst);
    if (db.dict.count(dst) != 0) {
      s.db_delete(db, dst);
      s.signal_modified(&c, db, dst);
      s.notify(NOTIFY_GENERIC, "del", dst, c);
    }
    return;
  }
  const auto n = static_cast<std::int64_t>(result.set.size());
  s.set_value(c, db, dst, std::move(result), false);
  s.integer(c, n);
  s.notify(NOTIFY_SET, event, dst, c);
}

void sinter_generic(Impl& s, Client& c, const std::vector<std::string>& keys,
                    const std::string* dst, bool cardinality_only, std::int64_t limit) {
  std::vector<Value*> sets;
  bool empty = false;
  for (auto& k : keys) {
    bool wrong = false;
    Value* v = set_read(s, c, k, wrong);
    if (wrong) return;
    if (v == nullptr) empty = true;
    sets.push_back(v);
  }
  const Limits l = s.limits();
  if (empty) {
    if (dst != nullptr) return store_set(s, c, *dst, new_set(), "sinterstore");
    if (cardinality_only) return s.integer(c, 0);
    return s.set_len(c, 0);
  }
  std::stable_sort(sets.begin(), sets.end(),
                   [](Value* x, Value* y) { return x->set.size() < y->set.size(); });
  Value result = new_set();
  std::int64_t cardinality = 0;
  for (auto& m : set_members(*sets[0])) {
    std::size_t j = 1;
    for (; j < sets.size(); ++j) {
      if (sets[j] == sets[0]) continue;
      if (!set_has(*sets[j], m)) break;
    }
    if (j != sets.size()) continue;
    ++cardinality;
    if (cardinality_only) {
      if (limit && cardinality >= limit) break;
    } else {
      set_add(result, m, l);
    }
  }
  if (cardinality_only) return s.integer(c, cardinality);
  if (dst != nullptr) return store_set(s, c, *dst, std::move(result), "sinterstore");
  // SINTER replies in the first (smallest) set's order.
  s.set_len(c, result.set.size());
  for (auto& m : result.set) s.bulk(c, m);
}

void sunion_diff(Impl& s, Client& c, const std::vector<std::string>& keys, const std::string* dst,
                 bool diff) {
  std::vector<Value*> sets;
  for (auto& k : keys) {
    bool wrong = false;
    Value* v = set_read(s, c, k, wrong);
    if (wrong) return;
    sets.push_back(v);
  }
  const Limits l = s.limits();
  Value result = new_set();
  if (!diff) {
    for (auto* v : sets)
      if (v != nullptr)
        for (auto& m : set_members(*v)) set_add(result, m, l);
  } else if (sets[0] != nullptr) {
    bool sameset = false;
    for (std::size_t j = 1; j < sets.size(); ++j) sameset = sameset || sets[j] == sets[0];
    if (!sameset) {
      for (auto& m : set_members(*sets[0])) {
        bool elsewhere = false;
        for (std::size_t j = 1; j < sets.size() && !elsewhere; ++j)
          elsewhere = sets[j] != nullptr && set_has(*sets[j], m);
        if (!elsewhere) set_add(result, m, l);
      }
    }
  }
  if (dst == nullptr) return reply_members(s, c, result);
  store_set(s, c, *dst, std::move(result), diff ? "sdiffstore" : "sunionstore");
}

}  // namespace

void cmd_sadd(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = set_write(s, c, a[1], wrong);
  if (wrong) return;
  Db& db = DB(s, c);
  if (v == nullptr) v = &s.db_add(db, a[1], new_set());
  const Limits l = s.limits();
  std::int64_t added = 0;
  for (std::size_t i = 2; i < a.size(); ++i)
    if (set_add(*v, a[i], l)) ++added;
  if (added > 0) {
    s.signal_modified(&c, db, a[1]);
    s.notify(NOTIFY_SET, "sadd", a[1], c);
    s.propagate(c, a);
  }
  s.integer(c, added);
}

void cmd_srem(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = set_write(s, c, a[1], wrong);
  if (wrong) return;
  if (v == nullptr) return s.integer(c, 0);
  std::int64_t n = 0;
  bool removed = false;
  for (std::size_t i = 2; i < a.size(); ++i) {
    if (set_del(*v, a[i])) ++n;
    if (v->set.empty()) {
      removed = true;
      break;
    }
  }
  Db& db = DB(s, c);
  if (removed) s.db_delete(db, a[1]);
  if (n > 0) {
    s.signal_modified(&c, db, a[1]);
    s.notify(NOTIFY_SET, "srem", a[1], c);
    if (removed) s.notify(NOTIFY_GENERIC, "del", a[1], c);
    s.propagate(c, a);
  }
  s.integer(c, n);
}

void cmd_smove(Impl& s, Client& c, Args& a) {
  Value* src = s.lookup(c, a[1]);
  Value* dst = s.lookup(c, a[2]);
  if (src == nullptr) return s.integer(c, 0);
  if (src->kind != Value::Kind::set || (dst != nullptr && dst->kind != Value::Kind::set))
    return s.wrongtype(c);
  if (src == dst) return s.integer(c, set_has(*src, a[3]) ? 1 : 0);
  if (!set_del(*src, a[3])) return s.integer(c, 0);
  Db& db = DB(s, c);
  s.notify(NOTIFY_SET, "srem", a[1], c);
  if (src->set.empty()) {
    s.db_delete(db, a[1]);
    s.notify(NOTIFY_GENERIC, "del", a[1], c);
  }
  if (dst == nullptr) dst = &s.db_add(db, a[2], new_set());
  s.signal_modified(&c, db, a[1]);
  if (set_add(*dst, a[3], s.limits())) {
    s.signal_modified(&c, db, a[2]);
    s.notify(NOTIFY_SET, "sadd", a[2], c);
  }
  s.propagate(c, a);
  s.integer(c, 1);
}

void cmd_smembers(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = set_read(s, c, a[1], wrong);
  if (wrong) return;
  if (v == nullptr) return s.set_len(c, 0);
  reply_members(s, c, *v);
}

void cmd_sismember(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = set_read(s, c, a[1], wrong);
  if (wrong) return;
  s.integer(c, v && set_has(*v, a[2]) ? 1 : 0);
}

void cmd_smismember(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = set_read(s, c, a[1], wrong);
  if (wrong) return;
  s.array(c, a.size() - 2);
  for (std::size_t j = 2; j < a.size(); ++j) s.integer(c, v && set_has(*v, a[j]) ? 1 : 0);
}

void cmd_scard(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = set_read(s, c, a[1], wrong);
  if (wrong) return;
  s.integer(c, v ? static_cast<std::int64_t>(v->set.size()) : 0);
}

void cmd_spop(Impl& s, Client& c, Args& a) {
  if (a.size() > 3) return s.syntax(c);
  std::int64_t count = -1;
  if (a.size() == 3 && !get_positive_or_reply(s, c, a[2], count)) return;
  bool wrong = false;
  Value* v = set_write(s, c, a[1], wrong);
  if (wrong) return;
  if (v == nullptr) return count == -1 ? s.null(c) : s.set_len(c, 0);
  if (count == 0) return s.set_len(c, 0);
  Db& db = DB(s, c);
  if (count == -1) {
    const std::string m = v->set[s.rng.below(v->set.size())];
    set_del(*v, m);
    s.notify(NOTIFY_SET, "spop", a[1], c);
    s.propagate(c, Args{"SREM", a[1], m});
    s.bulk(c, m);
    if (v->set.empty()) {
      s.db_delete(db, a[1]);
      s.notify(NOTIFY_GENERIC, "del", a[1], c);
    }
    return s.signal_modified(&c, db, a[1]);
  }
  s.notify(NOTIFY_SET, "spop", a[1], c);
  if (static_cast<std::size_t>(count) >= v->set.size()) {
    reply_members(s, c, *v);
    s.db_delete(db, a[1]);
    s.notify(NOTIFY_GENERIC, "del", a[1], c);
    s.propagate(c, Args{"DEL", a[1]});
    return s.signal_modified(&c, db, a[1]);
  }
  s.set_len(c, static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    const std::string m = v->set[s.rng.below(v->set.size())];
    set_del(*v, m);
    s.bulk(c, m);
    s.propagate(c, Args{"SREM", a[1], m});
  }
  s.signal_modified(&c, db, a[1]);
}

void cmd_srandmember(Impl& s, Client& c, Args& a) {
  if (a.size() > 3) return s.syntax(c);
  bool wrong = false;
  if (a.size() == 2) {
    Value* v = set_read(s, c, a[1], wrong);
    if (wrong) return;
    if (v == nullptr) return s.null(c);
    return s.bulk(c, v->set[s.rng.below(v->set.size())]);
  }
  std::int64_t l = 0;
  if (!get_ll(s, c, a[2], l)) return;
  if (l == kLLMin)
    return s.error(c,
                   "value is out of range, value must between -9223372036854775807 and "
                   "9223372036854775807");
  Value* v = set_read(s, c, a[1], wrong);
  if (wrong) return;
  if (v == nullptr || l == 0) return s.array(c, 0);
  const std::size_t size = v->set.size();
  if (l < 0 || l == 1) {  // repetitions allowed, random order
    const auto count = static_cast<std::uint64_t>(l < 0 ? -l : l);
    s.array(c, count);
    for (std::uint64_t i = 0; i < count; ++i) s.bulk(c, v->set[s.rng.below(size)]);
    return;
  }
  const std::size_t count = std::min<std::size_t>(static_cast<std::size_t>(l), size);
  if (count == size) {
    const auto m = set_members(*v);
    s.array(c, m.size());
    for (auto& x : m) s.bulk(c, x);
    return;
  }
  s.array(c, count);
  std::vector<std::size_t> pos(size);
  for (std::size_t i = 0; i < size; ++i) pos[i] = i;
  for (std::size_t i = 0; i < count; ++i) {
    std::swap(pos[i], pos[i + s.rng.below(size - i)]);
    s.bulk(c, v->set[pos[i]]);
  }
}

void cmd_sinter(Impl& s, Client& c, Args& a) {
  sinter_generic(s, c, Args(a.begin() + 1, a.end()), nullptr, false, 0);
}

void cmd_sinterstore(Impl& s, Client& c, Args& a) {
  sinter_generic(s, c, Args(a.begin() + 2, a.end()), &a[1], false, 0);
}

void cmd_sintercard(Impl& s, Client& c, Args& a) {
  std::int64_t numkeys = 0;
  if (!string2ll(a[1], numkeys) || numkeys < 1)
    return s.error(c, "numkeys should be greater than 0");
  if (numkeys > static_cast<std::int64_t>(a.size()) - 2)
    return s.error(c, "Number of keys can't be greater than number of args");
  std::int64_t limit = 0;
  for (std::size_t j = 2 + static_cast<std::size_t>(numkeys); j < a.size(); ++j) {
    const bool more = j + 1 < a.size();
    if (ieq(a[j], "LIMIT") && more) {
      if (!get_positive_or_reply(s, c, a[++j], limit, "LIMIT can't be negative")) return;
    } else {
      return s.syntax(c);
    }
  }
  sinter_generic(s, c, Args(a.begin() + 2, a.begin() + 2 + numkeys), nullptr, true, limit);
}

void cmd_sunion(Impl& s, Client& c, Args& a) {
  sunion_diff(s, c, Args(a.begin() + 1, a.end()), nullptr, false);
}
void cmd_sunionstore(Impl& s, Client& c, Args& a) {
  sunion_diff(s, c, Args(a.begin() + 2, a.end()), &a[1], false);
}
void cmd_sdiff(Impl& s, Client& c, Args& a) {
  sunion_diff(s, c, Args(a.begin() + 1, a.end()), nullptr, true);
}
void cmd_sdiffstore(Impl& s, Client& c, Args& a) {
  sunion_diff(s, c, Args(a.begin() + 2, a.end()), &a[1], true);
}

void cmd_sscan(Impl& s, Client& c, Args& a) {
  std::uint64_t cursor = 0;
  if (!parse_cursor(s, c, a[2], cursor)) return;
  bool wrong = false;
  Value* v = set_read(s, c, a[1], wrong);
  if (wrong) return;
  if (v == nullptr) {
    s.array(c, 2);
    s.bulk(c, "0");
    return s.array(c, 0);
  }
  std::vector<std::pair<std::string, std::string>> items;
  for (auto& m : set_members(*v)) items.emplace_back(m, std::string());
  scan_collection(s, c, a, cursor, std::move(items), false, v->compact);
}

}  // namespace lockwire::sim::model
