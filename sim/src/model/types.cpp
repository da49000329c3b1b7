// The value types' containers as Redis 7.0 keeps them, as far as replies can tell: a hash is a
// listpack (insertion order) until it has more than hash-max-listpack-entries fields or a field
// or value longer than hash-max-listpack-value, then a hash table; a set of integers is an
// intset (listed in numeric order) up to set-max-intset-entries, otherwise a hash table; a zset
// is ordered by (score, member). Hash-table order is Redis' seeded hashing; here it is insertion
// order with a removal moving the last element into the gap — deterministic, and replies that
// depend on it are compared as unordered in the differential suite.
#include <algorithm>

#include "model_impl.hpp"

namespace lockwire::sim::model {

namespace {

void reindex_from(Value& v, std::size_t pos) {
  if (v.kind == Value::Kind::hash) {
    for (std::size_t i = pos; i < v.hash.size(); ++i) v.index[v.hash[i].first] = i;
  } else {
    for (std::size_t i = pos; i < v.set.size(); ++i) v.index[v.set[i]] = i;
  }
}

bool is_int(const std::string& m) {
  std::int64_t x = 0;
  return string2ll(m, x);
}

}  // namespace

std::string* hash_get(Value& v, const std::string& field) {
  auto it = v.index.find(field);
  return it == v.index.end() ? nullptr : &v.hash[it->second].second;
}

bool hash_set(Value& v, const std::string& field, std::string value, const Limits& l) {
  if (v.compact && (field.size() > l.hash_value || value.size() > l.hash_value)) v.compact = false;
  auto it = v.index.find(field);
  if (it != v.index.end()) {
    v.hash[it->second].second = std::move(value);
    return false;
  }
  v.index.emplace(field, v.hash.size());
  v.hash.emplace_back(field, std::move(value));
  if (v.hash.size() > l.hash_entries) v.compact = false;
  return true;
}

bool hash_del(Value& v, const std::string& field) {
  auto it = v.index.find(field);
  if (it == v.index.end()) return false;
  const std::size_t pos = it->second;
  v.index.erase(it);
  if (v.compact) {
    v.hash.erase(v.hash.begin() + static_cast<std::ptrdiff_t>(pos));
    reindex_from(v, pos);
  } else {
    if (pos + 1 != v.hash.size()) {
      v.hash[pos] = std::move(v.hash.back());
      v.index[v.hash[pos].first] = pos;
    }
    v.hash.pop_back();
  }
  return true;
}

bool set_has(const Value& v, const std::string& member) {
  return v.index.count(member) != 0;
}

bool set_add(Value& v, const std::string& member, const Limits& l) {
  if (v.index.count(member) != 0) return false;
  if (v.compact && (!is_int(member) || v.set.size() + 1 > l.set_intset)) v.compact = false;
  v.index.emplace(member, v.set.size());
  v.set.push_back(member);
  return true;
}

bool set_del(Value& v, const std::string& member) {
  auto it = v.index.find(member);
  if (it == v.index.end()) return false;
  const std::size_t pos = it->second;
  v.index.erase(it);
  if (pos + 1 != v.set.size()) {
    v.set[pos] = std::move(v.set.back());
    v.index[v.set[pos]] = pos;
  }
  v.set.pop_back();
  return true;
}

std::vector<std::string> set_members(const Value& v) {
  std::vector<std::string> out = v.set;
  if (v.compact) {
    std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
      std::int64_t x = 0, y = 0;
      string2ll(a, x);
      string2ll(b, y);
      return x < y;
    });
  }
  return out;
}

void zset_put(Value& v, const std::string& m, double score) {
  auto it = v.zscores.find(m);
  if (it != v.zscores.end()) {
    v.zorder.erase({it->second, m});
    it->second = score;
  } else {
    v.zscores.emplace(m, score);
  }
  v.zorder.insert({score, m});
}

bool zset_del(Value& v, const std::string& m) {
  auto it = v.zscores.find(m);
  if (it == v.zscores.end()) return false;
  v.zorder.erase({it->second, m});
  v.zscores.erase(it);
  return true;
}

const char* encoding_name(const Value& v, const Limits& l) {
  switch (v.kind) {
    case Value::Kind::string: {
      std::int64_t x = 0;
      if (v.str.size() <= 20 && string2ll(v.str, x)) return "int";
      return v.str.size() <= 44 ? "embstr" : "raw";
    }
    case Value::Kind::list:
      return "quicklist";
    case Value::Kind::hash:
      return v.compact ? "listpack" : "hashtable";
    case Value::Kind::set:
      return v.compact ? "intset" : "hashtable";
    case Value::Kind::zset: {
      if (v.zscores.size() > l.zset_entries) return "skiplist";
      for (auto& [m, sc] : v.zscores)
        if (m.size() > l.zset_value) return "skiplist";
      return "listpack";
    }
  }
  return "raw";
}

}  // namespace lockwire::sim::model
