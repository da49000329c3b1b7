// Redis' t_set.c: SADD SREM SMEMBERS SISMEMBER SCARD.
#include <algorithm>

#include "commands.hpp"

namespace lockwire::sim::model {

namespace {

// Redis 7.0 keeps all-integer sets as a sorted intset; otherwise a hash table whose order is
// seeded per process (so tests compare those replies as unordered). Model: integers sorted
// numerically, otherwise insertion order.
void set_order(Value& v) {
  std::vector<std::pair<std::int64_t, std::string>> nums;
  for (auto& m : v.set) {
    std::int64_t x = 0;
    if (!string2ll(m, x)) return;
    nums.emplace_back(x, m);
  }
  if (nums.size() > 512) return;
  std::sort(nums.begin(), nums.end());
  for (std::size_t i = 0; i < nums.size(); ++i) v.set[i] = nums[i].second;
}

}  // namespace

void cmd_sadd(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = lookup_or_create(s, c, a[1], Value::Kind::set, wrong);
  if (wrong) return s.wrongtype(c);
  std::int64_t added = 0;
  for (std::size_t i = 2; i < a.size(); ++i) {
    if (std::find(v->set.begin(), v->set.end(), a[i]) == v->set.end()) {
      v->set.push_back(a[i]);
      ++added;
    }
  }
  set_order(*v);
  if (added > 0) {
    s.signal_modified(&c, DB(s, c), a[1]);
    s.propagate(c, a);
  }
  s.integer(c, added);
}

void cmd_srem(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = lookup_typed(s, c, a[1], Value::Kind::set, wrong);
  if (wrong) return s.wrongtype(c);
  if (v == nullptr) return s.integer(c, 0);
  std::int64_t n = 0;
  for (std::size_t i = 2; i < a.size(); ++i) {
    auto it = std::find(v->set.begin(), v->set.end(), a[i]);
    if (it != v->set.end()) {
      v->set.erase(it);
      ++n;
    }
    if (v->set.empty()) break;
  }
  if (n > 0) {
    Db& db = DB(s, c);
    if (v->set.empty()) s.db_delete(db, a[1]);
    s.signal_modified(&c, db, a[1]);
    s.propagate(c, a);
  }
  s.integer(c, n);
}

void cmd_smembers(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = lookup_typed(s, c, a[1], Value::Kind::set, wrong);
  if (wrong) return s.wrongtype(c);
  if (v == nullptr) return s.set_len(c, 0);
  s.set_len(c, v->set.size());
  for (auto& m : v->set) s.bulk(c, m);
}

void cmd_sismember(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = lookup_typed(s, c, a[1], Value::Kind::set, wrong);
  if (wrong) return s.wrongtype(c);
  s.integer(c, v && std::find(v->set.begin(), v->set.end(), a[2]) != v->set.end() ? 1 : 0);
}

void cmd_scard(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = lookup_typed(s, c, a[1], Value::Kind::set, wrong);
  if (wrong) return s.wrongtype(c);
  s.integer(c, v ? static_cast<std::int64_t>(v->set.size()) : 0);
}

}  // namespace lockwire::sim::model
