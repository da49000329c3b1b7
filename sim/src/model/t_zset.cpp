// Redis' t_zset.c, one file as Redis keeps it (the model is split as Redis' sources are): ZADD ZINCRBY ZREM ZCARD ZSCORE ZMSCORE ZRANK ZREVRANK ZCOUNT ZLEXCOUNT
// ZRANGE (BYSCORE BYLEX REV LIMIT WITHSCORES) ZRANGESTORE ZREVRANGE ZRANGEBYSCORE
// ZREVRANGEBYSCORE ZRANGEBYLEX ZREVRANGEBYLEX ZREMRANGEBYRANK/SCORE/LEX ZUNION ZINTER ZDIFF
// (and their STORE forms) ZINTERCARD ZPOPMIN ZPOPMAX ZMPOP ZRANDMEMBER ZSCAN and the blocking
// BZPOPMIN BZPOPMAX BZMPOP, ordered by (score, member) as Redis' skiplist, with its keyspace
// events and propagation (ZPOPMIN/ZPOPMAX for the pops).
// One file, as the model is split by Redis' own sources (docs/design.md): every command here
// works on the one sorted-set structure, and the range and store forms share its readers.
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "commands.hpp"

namespace lockwire::sim::model {

namespace {

using Item = std::pair<double, std::string>;

struct ScoreRange {
  double min = 0, max = 0;
  bool minex = false, maxex = false;
};

// zslParseRange: strtod (leading spaces, hex, inf allowed; NaN and junk refused).
bool parse_score_item(const std::string& arg, double& v, bool& ex) {
  const std::string z(cstr(arg));
  const char* p = z.c_str();
  ex = false;
  if (*p == '(') {
    ex = true;
    ++p;
  }
  char* end = nullptr;
  v = std::strtod(p, &end);
  return *end == '\0' && !std::isnan(v);
}

bool parse_range(const std::string& min, const std::string& max, ScoreRange& r) {
  return parse_score_item(min, r.min, r.minex) && parse_score_item(max, r.max, r.maxex);
}

bool gte_min(const ScoreRange& r, double x) {
  return r.minex ? x > r.min : x >= r.min;
}
bool lte_max(const ScoreRange& r, double x) {
  return r.maxex ? x < r.max : x <= r.max;
}

// zslParseLexRange: "-" / "+" (the smallest / greatest string), "(" exclusive, "[" inclusive.
struct LexItem {
  int inf = 0;  // -1: minstring, +1: maxstring
  std::string s;
  bool ex = false;
};
struct LexRange {
  LexItem min, max;
};

bool parse_lex_item(const std::string& arg, LexItem& it) {
  if (arg.empty()) return false;
  switch (arg[0]) {
    case '+':
      if (arg.size() != 1) return false;
      it = {1, {}, true};
      return true;
    case '-':
      if (arg.size() != 1) return false;
      it = {-1, {}, true};
      return true;
    case '(':
      it = {0, arg.substr(1), true};
      return true;
    case '[':
      it = {0, arg.substr(1), false};
      return true;
    default:
      return false;
  }
}

bool parse_lex(const std::string& min, const std::string& max, LexRange& r) {
  return parse_lex_item(min, r.min) && parse_lex_item(max, r.max);
}

// sdscmplex: the sentinels sort before / after every string.
int lex_cmp(const std::string& a, const LexItem& b) {
  if (b.inf == -1) return 1;
  if (b.inf == 1) return -1;
  return a.compare(b.s);
}
bool lex_gte_min(const LexRange& r, const std::string& x) {
  const int c = lex_cmp(x, r.min);
  return r.min.ex ? c > 0 : c >= 0;
}
bool lex_lte_max(const LexRange& r, const std::string& x) {
  const int c = lex_cmp(x, r.max);
  return r.max.ex ? c < 0 : c <= 0;
}
// zslIsInLexRange's emptiness check (min > max, or equal and either exclusive).
bool lex_empty(const LexRange& r) {
  auto val = [](const LexItem& i) { return i.inf; };
  if (val(r.min) == 1 || val(r.max) == -1) return true;
  if (r.min.inf == 0 && r.max.inf == 0) {
    const int c = r.min.s.compare(r.max.s);
    return c > 0 || (c == 0 && (r.min.ex || r.max.ex));
  }
  return false;
}

Value* zset_read(Impl& s, Client& c, const std::string& key, bool& wrong) {
  return typed_read(s, c, key, Value::Kind::zset, wrong);
}

Value* zset_write(Impl& s, Client& c, const std::string& key, bool& wrong) {
  return typed_write(s, c, key, Value::Kind::zset, wrong);
}

// Replies a list of (score, member): RESP3 WITHSCORES nests [member, score] pairs.
void emit_items(Impl& s, Client& c, const std::vector<Item>& items, bool withscores) {
  if (withscores && c.resp > 2) {
    s.array(c, items.size());
    for (auto& [sc, m] : items) {
      s.array(c, 2);
      s.bulk(c, m);
      s.dbl(c, sc);
    }
    return;
  }
  s.array(c, items.size() * (withscores ? 2 : 1));
  for (auto& [sc, m] : items) {
    s.bulk(c, m);
    if (withscores) s.dbl(c, sc);
  }
}

Value make_zset(const std::vector<Item>& items) {
  Value v;
  v.kind = Value::Kind::zset;
  for (auto& [sc, m] : items) zset_put(v, m, sc);
  return v;
}

// A STORE command's destination: the result replaces the key, or an empty result deletes it.
void store_result(Impl& s, Client& c, const std::string& dst, const std::vector<Item>& items,
                  const char* event) {
  Db& db = DB(s, c);
  if (items.empty()) {
    s.integer(c, 0);
    s.expire_if_needed(db, dst);
    if (db.dict.count(dst) != 0) {
      s.db_delete(db, dst);
      s.signal_modified(&c, db, dst);
      s.notify(NOTIFY_GENERIC, "del", dst, c);
    }
    return;
  }
  s.set_value(c, db, dst, make_zset(items), false);
  s.integer(c, static_cast<std::int64_t>(items.size()));
  s.notify(NOTIFY_ZSET, event, dst, c);
}

enum class RangeType { automatic, rank, score, lex };
enum class Direction { automatic, forward, reverse };

// zrangeGenericCommand: argv[first] is the source key, then min max and the options.
void zrange_generic(Impl& s, Client& c, Args& a, std::size_t first, const std::string* store_dst,
                    RangeType rt, Direction dir) {
  std::size_t minidx = first + 1, maxidx = first + 2;
  bool withscores = false;
  std::int64_t offset = 0, limit = -1;
  for (std::size_t j = first + 3; j < a.size(); ++j) {
    const std::size_t left = a.size() - j - 1;
    if (store_dst == nullptr && ieq(a[j], "withscores")) {
      withscores = true;
    } else if (ieq(a[j], "limit") && left >= 2) {
      if (!get_ll(s, c, a[j + 1], offset) || !get_ll(s, c, a[j + 2], limit)) return;
      j += 2;
    } else if (dir == Direction::automatic && ieq(a[j], "rev")) {
      dir = Direction::reverse;
    } else if (rt == RangeType::automatic && ieq(a[j], "bylex")) {
      rt = RangeType::lex;
    } else if (rt == RangeType::automatic && ieq(a[j], "byscore")) {
      rt = RangeType::score;
    } else {
      return s.syntax(c);
    }
  }
  if (dir == Direction::automatic) dir = Direction::forward;
  if (rt == RangeType::automatic) rt = RangeType::rank;
  if (limit != -1 && rt == RangeType::rank)
    return s.error(c,
                   "syntax error, LIMIT is only supported in combination with either BYSCORE or "
                   "BYLEX");
  if (withscores && rt == RangeType::lex)
    return s.error(c, "syntax error, WITHSCORES not supported in combination with BYLEX");
  const bool rev = dir == Direction::reverse;
  if (rev && (rt == RangeType::score || rt == RangeType::lex)) std::swap(minidx, maxidx);
  std::int64_t start = 0, end = 0;
  ScoreRange range;
  LexRange lex;
  if (rt == RangeType::rank) {
    if (!get_ll(s, c, a[minidx], start) || !get_ll(s, c, a[maxidx], end)) return;
  } else if (rt == RangeType::score) {
    if (!parse_range(a[minidx], a[maxidx], range)) return s.error(c, "min or max is not a float");
  } else if (!parse_lex(a[minidx], a[maxidx], lex)) {
    return s.error(c, "min or max not valid string range item");
  }
  bool wrong = false;
  Value* v = zset_read(s, c, a[first], wrong);
  if (wrong) return;
  std::vector<Item> items;
  if (v != nullptr) {
    const auto n = static_cast<std::int64_t>(v->zorder.size());
    if (rt == RangeType::rank) {
      if (start < 0) start += n;
      if (end < 0) end += n;
      if (start < 0) start = 0;
      if (start <= end && start < n) {
        if (end >= n) end = n - 1;
        if (rev) {
          auto it = v->zorder.rbegin();
          std::advance(it, start);
          for (std::int64_t i = start; i <= end; ++i, ++it) items.push_back(*it);
        } else {
          auto it = v->zorder.begin();
          std::advance(it, start);
          for (std::int64_t i = start; i <= end; ++i, ++it) items.push_back(*it);
        }
      }
    } else if (!(offset > 0 && offset >= n) && offset >= 0) {
      auto in = [&](const Item& e) {
        return rt == RangeType::score ? gte_min(range, e.first) && lte_max(range, e.first)
                                      : !lex_empty(lex) && lex_gte_min(lex, e.second) &&
                                            lex_lte_max(lex, e.second);
      };
      std::int64_t skip = offset;
      auto take = [&](const Item& e) {
        if (!in(e)) return true;
        if (skip > 0) {
          --skip;
          return true;
        }
        if (limit >= 0 && static_cast<std::int64_t>(items.size()) >= limit) return false;
        items.push_back(e);
        return true;
      };
      if (rev) {
        for (auto it = v->zorder.rbegin(); it != v->zorder.rend(); ++it)
          if (!take(*it)) break;
      } else {
        for (auto& e : v->zorder)
          if (!take(e)) break;
      }
    }
  }
  if (store_dst != nullptr) return store_result(s, c, *store_dst, items, "zrangestore");
  if (v == nullptr) return s.array(c, 0);
  emit_items(s, c, items, withscores);
}

enum class SetOp { uni, inter, diff };

// zunionInterDiffGenericCommand: sets count with score 1; WEIGHTS, AGGREGATE, WITHSCORES, LIMIT.
void zsetop(Impl& s, Client& c, Args& a, const std::string* dst, std::size_t numkeys_idx,
            SetOp op, bool cardinality_only, const char* fullname) {
  std::int64_t setnum = 0;
  if (!get_ll(s, c, a[numkeys_idx], setnum)) return;
  if (setnum < 1)
    return s.error(c, "at least 1 input key is needed for '" + std::string(fullname) + "' command");
  if (setnum > static_cast<std::int64_t>(a.size() - (numkeys_idx + 1))) return s.syntax(c);
  struct Src {
    Value* v = nullptr;
    double weight = 1.0;
  };
  std::vector<Src> src(static_cast<std::size_t>(setnum));
  std::size_t j = numkeys_idx + 1;
  for (auto& sr : src) {
    Value* v = s.lookup_read(c, a[j++]);
    if (v != nullptr && v->kind != Value::Kind::zset && v->kind != Value::Kind::set)
      return s.wrongtype(c);
    sr.v = v;
  }
  enum { SUM, MIN, MAX } aggregate = SUM;
  bool withscores = false;
  std::int64_t limit = 0;
  while (j < a.size()) {
    const std::size_t remaining = a.size() - j;
    if (op != SetOp::diff && !cardinality_only &&
        remaining >= static_cast<std::size_t>(setnum) + 1 && ieq(a[j], "weights")) {
      ++j;
      for (auto& sr : src) {
        if (!string2d(a[j], sr.weight)) return s.error(c, "weight value is not a float");
        ++j;
      }
    } else if (op != SetOp::diff && !cardinality_only && remaining >= 2 &&
               ieq(a[j], "aggregate")) {
      ++j;
      if (ieq(a[j], "sum")) {
        aggregate = SUM;
      } else if (ieq(a[j], "min")) {
        aggregate = MIN;
      } else if (ieq(a[j], "max")) {
        aggregate = MAX;
      } else {
        return s.syntax(c);
      }
      ++j;
    } else if (remaining >= 1 && dst == nullptr && !cardinality_only &&
               ieq(a[j], "withscores")) {
      ++j;
      withscores = true;
    } else if (cardinality_only && remaining >= 2 && ieq(a[j], "limit")) {
      ++j;
      if (!get_positive_or_reply(s, c, a[j], limit, "LIMIT can't be negative")) return;
      ++j;
    } else {
      return s.syntax(c);
    }
  }
  // The members of one input with their scores (a set's members score 1).
  auto members = [](const Src& sr) {
    std::vector<Item> out;
    if (sr.v == nullptr) return out;
    if (sr.v->kind == Value::Kind::zset) {
      out.assign(sr.v->zorder.begin(), sr.v->zorder.end());
    } else {
      for (auto& m : set_members(*sr.v)) out.emplace_back(1.0, m);
    }
    return out;
  };
  auto find = [](const Src& sr, const std::string& m, double& score) {
    if (sr.v == nullptr) return false;
    if (sr.v->kind == Value::Kind::zset) {
      auto it = sr.v->zscores.find(m);
      if (it == sr.v->zscores.end()) return false;
      score = it->second;
      return true;
    }
    score = 1.0;
    return set_has(*sr.v, m);
  };
  auto size_of = [](const Src& sr) -> std::size_t {
    if (sr.v == nullptr) return 0;
    return sr.v->kind == Value::Kind::zset ? sr.v->zscores.size() : sr.v->set.size();
  };
  auto agg = [&](double& target, double val) {
    if (aggregate == SUM) {
      target += val;
      if (std::isnan(target)) target = 0.0;
    } else if (aggregate == MIN) {
      target = val < target ? val : target;
    } else {
      target = val > target ? val : target;
    }
  };
  if (op != SetOp::diff)
    std::stable_sort(src.begin(), src.end(),
                     [&](const Src& x, const Src& y) { return size_of(x) < size_of(y); });
  std::map<std::string, double> result;
  std::uint64_t cardinality = 0;
  if (op == SetOp::inter) {
    if (size_of(src[0]) > 0) {
      for (auto& [score0, m] : members(src[0])) {
        double score = src[0].weight * score0;
        if (std::isnan(score)) score = 0;
        std::size_t k = 1;
        for (; k < src.size(); ++k) {
          double value = 0;
          if (src[k].v == src[0].v) {
            value = score0 * src[k].weight;
          } else if (find(src[k], m, value)) {
            value *= src[k].weight;
          } else {
            break;
          }
          agg(score, value);
        }
        if (k != src.size()) continue;
        if (cardinality_only) {
          ++cardinality;
          if (limit && cardinality >= static_cast<std::uint64_t>(limit)) break;
        } else {
          result[m] = score;
        }
      }
    }
  } else if (op == SetOp::uni) {
    for (auto& sr : src) {
      for (auto& [sc, m] : members(sr)) {
        double score = sr.weight * sc;
        if (std::isnan(score)) score = 0;
        auto it = result.find(m);
        if (it == result.end()) {
          result.emplace(m, score);
        } else {
          agg(it->second, score);
        }
      }
    }
  } else {
    for (auto& [sc, m] : members(src[0])) {
      bool elsewhere = false;
      double ignored = 0;
      for (std::size_t k = 1; k < src.size() && !elsewhere; ++k)
        elsewhere = find(src[k], m, ignored);
      if (!elsewhere) result[m] = sc;
    }
  }
  if (cardinality_only) return s.integer(c, static_cast<std::int64_t>(cardinality));
  std::vector<Item> items;
  items.reserve(result.size());
  for (auto& [m, sc] : result) items.emplace_back(sc, m);
  std::sort(items.begin(), items.end());
  if (dst != nullptr)
    return store_result(s, c, *dst, items,
                        op == SetOp::uni ? "zunionstore"
                        : op == SetOp::inter ? "zinterstore"
                                             : "zdiffstore");
  emit_items(s, c, items, withscores);
}

// genericZpopCommand: pops from the first zset among `keys`.
bool zpop_generic(Impl& s, Client& c, const std::vector<std::string>& keys, bool max, bool emitkey,
                  std::int64_t count, bool nested, bool nil_when_empty, std::string* popped_key,
                  std::int64_t* popped) {
  Value* v = nullptr;
  const std::string* key = nullptr;
  for (auto& k : keys) {
    bool wrong = false;
    v = zset_write(s, c, k, wrong);
    if (wrong) return false;
    if (v != nullptr) {
      key = &k;
      break;
    }
  }
  if (v == nullptr) {
    if (nil_when_empty) {
      s.null_array(c);
    } else {
      s.array(c, 0);
    }
    return false;
  }
  if (count == 0) {
    s.array(c, 0);
    return false;
  }
  if (count == -1) count = 1;
  const auto llen = static_cast<std::int64_t>(v->zscores.size());
  const std::int64_t n = std::min(count, llen);
  if (!nested && !emitkey) {
    s.array(c, static_cast<std::size_t>(n * 2));
  } else if (nested && !emitkey) {
    s.array(c, static_cast<std::size_t>(n));
  } else if (!nested && emitkey) {
    s.array(c, static_cast<std::size_t>(n * 2 + 1));
    s.bulk(c, *key);
  } else {
    s.array(c, 2);
    s.bulk(c, *key);
    s.array(c, static_cast<std::size_t>(n));
  }
  Db& db = DB(s, c);
  for (std::int64_t i = 0; i < n; ++i) {
    const Item e = max ? *v->zorder.rbegin() : *v->zorder.begin();
    zset_del(*v, e.second);
    if (i == 0) {
      s.notify(NOTIFY_ZSET, max ? "zpopmax" : "zpopmin", *key, c);
      s.signal_modified(&c, db, *key);
    }
    if (nested) s.array(c, 2);
    s.bulk(c, e.second);
    s.dbl(c, e.first);
  }
  const std::string k = *key;
  bool deleted = false;
  if (v->zscores.empty()) {
    s.db_delete(db, k);
    s.notify(NOTIFY_GENERIC, "del", k, c);
    deleted = true;
  }
  if (popped_key != nullptr) *popped_key = k;
  if (popped != nullptr) *popped = n;
  return deleted;
}

void blocking_zpop(Impl& s, Client& c, const std::vector<std::string>& keys, bool max,
                   const std::string& timeout, std::int64_t count, bool nested, bool nil_when_empty) {
  std::int64_t deadline = 0;
  if (!parse_block_timeout(s, c, timeout, deadline)) return;
  for (auto& k : keys) {
    bool wrong = false;
    Value* v = zset_write(s, c, k, wrong);
    if (wrong) return;
    if (v == nullptr || v->zscores.empty()) continue;
    const auto llen = static_cast<std::int64_t>(v->zscores.size());
    zpop_generic(s, c, {k}, max, true, count, nested, nil_when_empty, nullptr, nullptr);
    if (count == -1) return s.propagate(c, Args{max ? "ZPOPMAX" : "ZPOPMIN", k});
    return s.propagate(c, Args{max ? "ZPOPMAX" : "ZPOPMIN", k, ll2s(std::min(count, llen))});
  }
  if (s.in_exec) return s.null_array(c);
  c.wherefrom_head = !max;
  c.bcount = count;
  c.bcmd = c.last_cmd;
  s.block_for_keys(c, Client::Btype::zset, keys, deadline);
}

void zmpop_generic(Impl& s, Client& c, Args& a, std::size_t numkeys_idx, bool block) {
  std::int64_t numkeys = 0;
  if (!string2ll(a[numkeys_idx], numkeys) || numkeys < 1)
    return s.error(c, "numkeys should be greater than 0");
  const std::size_t where_idx = numkeys_idx + static_cast<std::size_t>(numkeys) + 1;
  if (static_cast<std::uint64_t>(numkeys) > a.size() || where_idx >= a.size()) return s.syntax(c);
  bool max = false;
  if (ieq(a[where_idx], "MIN")) {
    max = false;
  } else if (ieq(a[where_idx], "MAX")) {
    max = true;
  } else {
    return s.syntax(c);
  }
  std::int64_t count = -1;
  for (std::size_t j = where_idx + 1; j < a.size(); ++j) {
    const bool more = j + 1 < a.size();
    if (count == -1 && ieq(a[j], "COUNT") && more) {
      ++j;
      if (!string2ll(a[j], count) || count < 1)
        return s.error(c, "count should be greater than 0");
    } else {
      return s.syntax(c);
    }
  }
  if (count == -1) count = 1;
  const std::vector<std::string> keys(a.begin() + static_cast<std::ptrdiff_t>(numkeys_idx + 1),
                                      a.begin() + static_cast<std::ptrdiff_t>(where_idx));
  if (block) return blocking_zpop(s, c, keys, max, a[1], count, true, true);
  std::string key;
  std::int64_t n = 0;
  zpop_generic(s, c, keys, max, true, count, true, true, &key, &n);
  if (n > 0) s.propagate(c, Args{max ? "ZPOPMAX" : "ZPOPMIN", key, ll2s(n)});
}

void zrem_range_generic(Impl& s, Client& c, Args& a, RangeType rt) {
  std::int64_t start = 0, end = 0;
  ScoreRange range;
  LexRange lex;
  const char* event = nullptr;
  if (rt == RangeType::rank) {
    event = "zremrangebyrank";
    if (!get_ll(s, c, a[2], start) || !get_ll(s, c, a[3], end)) return;
  } else if (rt == RangeType::score) {
    event = "zremrangebyscore";
    if (!parse_range(a[2], a[3], range)) return s.error(c, "min or max is not a float");
  } else {
    event = "zremrangebylex";
    if (!parse_lex(a[2], a[3], lex)) return s.error(c, "min or max not valid string range item");
  }
  bool wrong = false;
  Value* v = zset_write(s, c, a[1], wrong);
  if (wrong) return;
  if (v == nullptr) return s.integer(c, 0);
  std::vector<std::string> gone;
  if (rt == RangeType::rank) {
    const auto n = static_cast<std::int64_t>(v->zorder.size());
    if (start < 0) start += n;
    if (end < 0) end += n;
    if (start < 0) start = 0;
    if (start > end || start >= n) return s.integer(c, 0);
    if (end >= n) end = n - 1;
    auto it = v->zorder.begin();
    std::advance(it, start);
    for (std::int64_t i = start; i <= end; ++i, ++it) gone.push_back(it->second);
  } else {
    for (auto& [sc, m] : v->zorder) {
      const bool in = rt == RangeType::score
                          ? gte_min(range, sc) && lte_max(range, sc)
                          : !lex_empty(lex) && lex_gte_min(lex, m) && lex_lte_max(lex, m);
      if (in) gone.push_back(m);
    }
  }
  for (auto& m : gone) zset_del(*v, m);
  Db& db = DB(s, c);
  if (!gone.empty()) {
    const bool removed = v->zscores.empty();
    if (removed) s.db_delete(db, a[1]);
    s.signal_modified(&c, db, a[1]);
    s.notify(NOTIFY_ZSET, event, a[1], c);
    if (removed) s.notify(NOTIFY_GENERIC, "del", a[1], c);
    s.propagate(c, a);
  }
  s.integer(c, static_cast<std::int64_t>(gone.size()));
}

void zadd_generic(Impl& s, Client& c, Args& a, bool zincrby) {
  bool nx = false, xx = false, gt = false, lt = false, ch = false, incr = zincrby;
  std::size_t idx = 2;
  while (idx < a.size()) {
    const std::string& o = a[idx];
    if (ieq(o, "nx")) {
      nx = true;
    } else if (ieq(o, "xx")) {
      xx = true;
    } else if (ieq(o, "ch")) {
      ch = true;
    } else if (ieq(o, "incr")) {
      incr = true;
    } else if (ieq(o, "gt")) {
      gt = true;
    } else if (ieq(o, "lt")) {
      lt = true;
    } else {
      break;
    }
    ++idx;
  }
  const std::size_t elements = a.size() - idx;
  if (elements % 2 != 0 || elements == 0) return s.syntax(c);
  const std::size_t pairs = elements / 2;
  if (nx && xx) return s.error(c, "XX and NX options at the same time are not compatible");
  if ((gt && nx) || (lt && nx) || (gt && lt))
    return s.error(c, "GT, LT, and/or NX options at the same time are not compatible");
  if (incr && pairs > 1) return s.error(c, "INCR option supports a single increment-element pair");
  std::vector<double> scores(pairs);
  for (std::size_t j = 0; j < pairs; ++j)
    if (!string2d(a[idx + j * 2], scores[j])) return s.error(c, "value is not a valid float");
  Value* v = s.lookup(c, a[1]);
  if (v != nullptr && v->kind != Value::Kind::zset) return s.wrongtype(c);
  std::int64_t added = 0, updated = 0, processed = 0;
  double score = 0;
  Db& db = DB(s, c);
  if (v == nullptr && !xx) {
    Value nv;
    nv.kind = Value::Kind::zset;
    v = &s.db_add(db, a[1], std::move(nv));
  }
  bool failed = false;
  if (v != nullptr) {
    for (std::size_t j = 0; j < pairs && !failed; ++j) {
      const std::string& m = a[idx + j * 2 + 1];
      double sc = scores[j];
      auto it = v->zscores.find(m);
      if (it != v->zscores.end()) {
        if (nx) continue;
        const double cur = it->second;
        if (incr) {
          sc += cur;
          if (std::isnan(sc)) {
            s.error(c, "resulting score is not a number (NaN)");
            failed = true;
            break;
          }
        }
        if ((lt && sc >= cur) || (gt && sc <= cur)) continue;
        ++processed;
        score = sc;
        if (sc != cur) {
          zset_put(*v, m, sc);
          ++updated;
        }
      } else {
        if (xx) continue;
        zset_put(*v, m, sc);
        ++added;
        ++processed;
        score = sc;
      }
    }
  }
  if (!failed) {
    if (incr) {
      if (processed) {
        s.dbl(c, score);
      } else {
        s.null(c);
      }
    } else {
      s.integer(c, ch ? added + updated : added);
    }
  }
  if (added || updated) {
    s.signal_modified(&c, db, a[1]);
    s.notify(NOTIFY_ZSET, incr ? "zincr" : "zadd", a[1], c);
    s.propagate(c, a);
  }
  if (v != nullptr && v->zscores.empty()) s.db_delete(db, a[1]);
}

}  // namespace

void cmd_zadd(Impl& s, Client& c, Args& a) {
  zadd_generic(s, c, a, false);
}

void cmd_zincrby(Impl& s, Client& c, Args& a) {
  zadd_generic(s, c, a, true);
}

void cmd_zrem(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = zset_write(s, c, a[1], wrong);
  if (wrong) return;
  if (v == nullptr) return s.integer(c, 0);
  std::int64_t n = 0;
  bool removed = false;
  for (std::size_t i = 2; i < a.size(); ++i) {
    if (zset_del(*v, a[i])) ++n;
    if (v->zscores.empty()) {
      removed = true;
      break;
    }
  }
  Db& db = DB(s, c);
  if (removed) s.db_delete(db, a[1]);
  if (n > 0) {
    s.notify(NOTIFY_ZSET, "zrem", a[1], c);
    if (removed) s.notify(NOTIFY_GENERIC, "del", a[1], c);
    s.signal_modified(&c, db, a[1]);
    s.propagate(c, a);
  }
  s.integer(c, n);
}

void cmd_zscore(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = zset_read(s, c, a[1], wrong);
  if (wrong) return;
  if (v == nullptr) return s.null(c);
  auto it = v->zscores.find(a[2]);
  if (it == v->zscores.end()) return s.null(c);
  s.dbl(c, it->second);
}

void cmd_zmscore(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = zset_read(s, c, a[1], wrong);
  if (wrong) return;
  s.array(c, a.size() - 2);
  for (std::size_t j = 2; j < a.size(); ++j) {
    auto it = v ? v->zscores.find(a[j]) : decltype(v->zscores.end()){};
    if (v == nullptr || it == v->zscores.end()) {
      s.null(c);
    } else {
      s.dbl(c, it->second);
    }
  }
}

void cmd_zcard(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = zset_read(s, c, a[1], wrong);
  if (wrong) return;
  s.integer(c, v ? static_cast<std::int64_t>(v->zscores.size()) : 0);
}

void zrank_generic(Impl& s, Client& c, Args& a, bool reverse) {
  bool wrong = false;
  Value* v = zset_read(s, c, a[1], wrong);
  if (wrong) return;
  if (v == nullptr) return s.null(c);
  auto it = v->zscores.find(a[2]);
  if (it == v->zscores.end()) return s.null(c);
  const auto pos = std::distance(v->zorder.begin(), v->zorder.find({it->second, a[2]}));
  s.integer(c, reverse ? static_cast<std::int64_t>(v->zorder.size()) - 1 - pos : pos);
}

void cmd_zrank(Impl& s, Client& c, Args& a) {
  zrank_generic(s, c, a, false);
}

void cmd_zrevrank(Impl& s, Client& c, Args& a) {
  zrank_generic(s, c, a, true);
}

void cmd_zcount(Impl& s, Client& c, Args& a) {
  ScoreRange r;
  if (!parse_range(a[2], a[3], r)) return s.error(c, "min or max is not a float");
  bool wrong = false;
  Value* v = zset_read(s, c, a[1], wrong);
  if (wrong) return;
  std::int64_t n = 0;
  if (v != nullptr)
    for (auto& [sc, m] : v->zorder)
      if (gte_min(r, sc) && lte_max(r, sc)) ++n;
  s.integer(c, n);
}

void cmd_zlexcount(Impl& s, Client& c, Args& a) {
  LexRange r;
  if (!parse_lex(a[2], a[3], r)) return s.error(c, "min or max not valid string range item");
  bool wrong = false;
  Value* v = zset_read(s, c, a[1], wrong);
  if (wrong) return;
  std::int64_t n = 0;
  if (v != nullptr && !lex_empty(r))
    for (auto& [sc, m] : v->zorder)
      if (lex_gte_min(r, m) && lex_lte_max(r, m)) ++n;
  s.integer(c, n);
}

void cmd_zrange(Impl& s, Client& c, Args& a) {
  zrange_generic(s, c, a, 1, nullptr, RangeType::automatic, Direction::automatic);
}

void cmd_zrangestore(Impl& s, Client& c, Args& a) {
  zrange_generic(s, c, a, 2, &a[1], RangeType::automatic, Direction::automatic);
}

void cmd_zrevrange(Impl& s, Client& c, Args& a) {
  zrange_generic(s, c, a, 1, nullptr, RangeType::rank, Direction::reverse);
}

void cmd_zrangebyscore(Impl& s, Client& c, Args& a) {
  zrange_generic(s, c, a, 1, nullptr, RangeType::score, Direction::forward);
}

void cmd_zrevrangebyscore(Impl& s, Client& c, Args& a) {
  zrange_generic(s, c, a, 1, nullptr, RangeType::score, Direction::reverse);
}

void cmd_zrangebylex(Impl& s, Client& c, Args& a) {
  zrange_generic(s, c, a, 1, nullptr, RangeType::lex, Direction::forward);
}

void cmd_zrevrangebylex(Impl& s, Client& c, Args& a) {
  zrange_generic(s, c, a, 1, nullptr, RangeType::lex, Direction::reverse);
}

void cmd_zremrangebyscore(Impl& s, Client& c, Args& a) {
  zrem_range_generic(s, c, a, RangeType::score);
}

void cmd_zremrangebyrank(Impl& s, Client& c, Args& a) {
  zrem_range_generic(s, c, a, RangeType::rank);
}

void cmd_zremrangebylex(Impl& s, Client& c, Args& a) {
  zrem_range_generic(s, c, a, RangeType::lex);
}

void cmd_zunionstore(Impl& s, Client& c, Args& a) {
  zsetop(s, c, a, &a[1], 2, SetOp::uni, false, "zunionstore");
}
void cmd_zinterstore(Impl& s, Client& c, Args& a) {
  zsetop(s, c, a, &a[1], 2, SetOp::inter, false, "zinterstore");
}
void cmd_zdiffstore(Impl& s, Client& c, Args& a) {
  zsetop(s, c, a, &a[1], 2, SetOp::diff, false, "zdiffstore");
}
void cmd_zunion(Impl& s, Client& c, Args& a) {
  zsetop(s, c, a, nullptr, 1, SetOp::uni, false, "zunion");
}
void cmd_zinter(Impl& s, Client& c, Args& a) {
  zsetop(s, c, a, nullptr, 1, SetOp::inter, false, "zinter");
}
void cmd_zintercard(Impl& s, Client& c, Args& a) {
  zsetop(s, c, a, nullptr, 1, SetOp::inter, true, "zintercard");
}
void cmd_zdiff(Impl& s, Client& c, Args& a) {
  zsetop(s, c, a, nullptr, 1, SetOp::diff, false, "zdiff");
}

void zpop_minmax(Impl& s, Client& c, Args& a, bool max) {
  if (a.size() > 3) return s.syntax(c);
  std::int64_t count = -1;
  if (a.size() == 3 && !get_positive_or_reply(s, c, a[2], count)) return;
  const bool nested = c.resp > 2 && count != -1;
  std::string key;
  std::int64_t n = 0;
  zpop_generic(s, c, {a[1]}, max, false, count, nested, false, &key, &n);
  if (n > 0) s.propagate(c, a);
}

void cmd_zpopmin(Impl& s, Client& c, Args& a) {
  zpop_minmax(s, c, a, false);
}
void cmd_zpopmax(Impl& s, Client& c, Args& a) {
  zpop_minmax(s, c, a, true);
}
void cmd_bzpopmin(Impl& s, Client& c, Args& a) {
  blocking_zpop(s, c, Args(a.begin() + 1, a.end() - 1), false, a.back(), -1, false, false);
}
void cmd_bzpopmax(Impl& s, Client& c, Args& a) {
  blocking_zpop(s, c, Args(a.begin() + 1, a.end() - 1), true, a.back(), -1, false, false);
}
void cmd_zmpop(Impl& s, Client& c, Args& a) {
  zmpop_generic(s, c, a, 1, false);
}
void cmd_bzmpop(Impl& s, Client& c, Args& a) {
  zmpop_generic(s, c, a, 2, true);
}

void cmd_zrandmember(Impl& s, Client& c, Args& a) {
  std::int64_t l = 0;
  bool withscores = false;
  if (a.size() >= 3) {
    if (!get_ll(s, c, a[2], l)) return;
    if (l == kLLMin)
      return s.error(c,
                     "value is out of range, value must between -9223372036854775807 and "
                     "9223372036854775807");
    if (a.size() > 4 || (a.size() == 4 && !ieq(a[3], "withscores"))) return s.syntax(c);
    if (a.size() == 4) {
      withscores = true;
      if (l < -kLLMax / 2 || l > kLLMax / 2) return s.error(c, "value is out of range");
    }
  }
  bool wrong = false;
  Value* v = zset_read(s, c, a[1], wrong);
  if (wrong) return;
  if (a.size() < 3) {
    if (v == nullptr) return s.null(c);
    auto it = v->zorder.begin();
    std::advance(it, static_cast<std::ptrdiff_t>(s.rng.below(v->zorder.size())));
    return s.bulk(c, it->second);
  }
  if (v == nullptr || l == 0) return s.array(c, 0);
  const std::vector<Item> all(v->zorder.begin(), v->zorder.end());
  const std::size_t size = all.size();
  auto emit = [&](const Item& e) {
    if (withscores && c.resp > 2) s.array(c, 2);
    s.bulk(c, e.second);
    if (withscores) s.dbl(c, e.first);
  };
  if (l < 0 || l == 1) {
    const auto count = static_cast<std::uint64_t>(l < 0 ? -l : l);
    s.array(c, withscores && c.resp == 2 ? count * 2 : count);
    for (std::uint64_t i = 0; i < count; ++i) emit(all[s.rng.below(size)]);
    return;
  }
  const std::size_t count = std::min<std::size_t>(static_cast<std::size_t>(l), size);
  s.array(c, withscores && c.resp == 2 ? count * 2 : count);
  if (count == size) {  // the whole zset, as zuiNext walks it: from the highest score
    for (auto it = all.rbegin(); it != all.rend(); ++it) emit(*it);
    return;
  }
  std::vector<std::size_t> pos(size);
  for (std::size_t i = 0; i < size; ++i) pos[i] = i;
  for (std::size_t i = 0; i < count; ++i) {
    std::swap(pos[i], pos[i + s.rng.below(size - i)]);
    emit(all[pos[i]]);
  }
}

void cmd_zscan(Impl& s, Client& c, Args& a) {
  std::uint64_t cursor = 0;
  if (!parse_cursor(s, c, a[2], cursor)) return;
  bool wrong = false;
  Value* v = zset_read(s, c, a[1], wrong);
  if (wrong) return;
  if (v == nullptr) {
    s.array(c, 2);
    s.bulk(c, "0");
    return s.array(c, 0);
  }
  std::vector<std::pair<std::string, std::string>> items;
  for (auto& [sc, m] : v->zorder) items.emplace_back(m, d2s(sc));
  const Limits l = s.limits();
  bool compact = v->zscores.size() <= l.zset_entries;
  for (auto& [sc, m] : v->zorder) compact = compact && m.size() <= l.zset_value;
  scan_collection(s, c, a, cursor, std::move(items), true, compact);
}

}  // namespace lockwire::sim::model

namespace lockwire::sim {

using namespace model;

// serveClientsBlockedOnSortedSetKey: the receiver pops as BZPOPMIN/MAX or BZMPOP would have.
bool RedisModel::Impl::serve_blocked_zset(Client& r, Db& db, const std::string& key) {
  const bool max = !r.wherefrom_head;
  const bool nested = r.bcmd != nullptr && r.bcmd->fn == cmd_bzmpop;
  const auto llen = static_cast<std::int64_t>(db.dict.at(key).zscores.size());
  const int saved = r.db;
  r.db = db_index(db);
  const bool deleted = zpop_generic(*this, r, {key}, max, true, r.bcount, nested, nested, nullptr,
                                    nullptr);
  Args prop{max ? "ZPOPMAX" : "ZPOPMIN", key};
  if (r.bcount != -1) prop.push_back(ll2s(std::min(r.bcount, llen)));
  propagate(r, prop);
  r.db = saved;
  return deleted;
}

}  // namespace lockwire::sim
