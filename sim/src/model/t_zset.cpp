// Redis' t_zset.c: ZADD ZREM ZSCORE ZCARD ZRANGE ZRANGEBYSCORE ZREMRANGEBYSCORE.
#include <algorithm>
#include <cmath>

#include "commands.hpp"

namespace lockwire::sim::model {

namespace {

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

void zset_del(Value& v, const std::string& m) {
  auto it = v.zscores.find(m);
  if (it == v.zscores.end()) return;
  v.zorder.erase({it->second, m});
  v.zscores.erase(it);
}

struct ScoreRange {
  double min = 0, max = 0;
  bool minex = false, maxex = false;
};

bool parse_score(const std::string& s, double& v, bool& ex) {
  ex = false;
  std::string_view t = s;
  if (!t.empty() && t[0] == '(') {
    ex = true;
    t.remove_prefix(1);
  }
  return string2d(t, v);
}

bool in_range(const ScoreRange& r, double x) {
  const bool lo = r.minex ? x > r.min : x >= r.min;
  const bool hi = r.maxex ? x < r.max : x <= r.max;
  return lo && hi;
}

void emit_range(Impl& s, Client& c, const std::vector<std::pair<double, std::string>>& items,
                bool withscores) {
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

// ZRANGE key start stop [BYSCORE] [REV] [LIMIT off count] [WITHSCORES], and ZRANGEBYSCORE.
void zrange_generic(Impl& s, Client& c, Args& a, bool byscore_cmd) {
  bool byscore = byscore_cmd, rev = false, withscores = false, bylex = false;
  std::int64_t off = 0, lim = -1;
  bool has_limit = false;
  for (std::size_t j = 4; j < a.size(); ++j) {
    const std::size_t left = a.size() - j - 1;
    if (ieq(a[j], "withscores")) {
      withscores = true;
    } else if (ieq(a[j], "limit") && left >= 2) {
      if (!get_ll(s, c, a[j + 1], off) || !get_ll(s, c, a[j + 2], lim)) return;
      has_limit = true;
      j += 2;
    } else if (!byscore_cmd && ieq(a[j], "byscore")) {
      byscore = true;
    } else if (!byscore_cmd && ieq(a[j], "bylex")) {
      bylex = true;
    } else if (!byscore_cmd && ieq(a[j], "rev")) {
      rev = true;
    } else {
      return s.syntax(c);
    }
  }
  if (bylex) return s.error(c, "syntax error, BYLEX is not supported by this simulator");
  if (has_limit && !byscore)
    return s.error(c,
                   "syntax error, LIMIT is only supported in combination with either BYSCORE or "
                   "BYLEX");
  std::string smin = a[2], smax = a[3];
  if (rev && byscore) std::swap(smin, smax);
  ScoreRange r;
  std::int64_t start = 0, end = 0;
  if (byscore) {
    if (!parse_score(smin, r.min, r.minex) || !parse_score(smax, r.max, r.maxex))
      return s.error(c, "min or max is not a float");
  } else {
    if (!get_ll(s, c, a[2], start) || !get_ll(s, c, a[3], end)) return;
  }
  bool wrong = false;
  Value* v = lookup_typed(s, c, a[1], Value::Kind::zset, wrong);
  if (wrong) return s.wrongtype(c);
  std::vector<std::pair<double, std::string>> all;
  if (v != nullptr) all.assign(v->zorder.begin(), v->zorder.end());
  if (rev) std::reverse(all.begin(), all.end());
  std::vector<std::pair<double, std::string>> items;
  if (byscore) {
    for (auto& e : all)
      if (in_range(r, e.first)) items.push_back(e);
    if (has_limit) {
      if (off < 0 || off >= static_cast<std::int64_t>(items.size())) {
        items.clear();
      } else {
        items.erase(items.begin(), items.begin() + off);
        if (lim >= 0 && lim < static_cast<std::int64_t>(items.size())) items.resize(lim);
      }
    }
  } else {
    const auto n = static_cast<std::int64_t>(all.size());
    if (start < 0) start += n;
    if (end < 0) end += n;
    if (start < 0) start = 0;
    if (start <= end && start < n) {
      if (end >= n) end = n - 1;
      for (std::int64_t i = start; i <= end; ++i) items.push_back(all[static_cast<std::size_t>(i)]);
    }
  }
  emit_range(s, c, items, withscores);
}

}  // namespace

void cmd_zadd(Impl& s, Client& c, Args& a) {
  bool nx = false, xx = false, gt = false, lt = false, ch = false, incr = false;
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
  if (v == nullptr) {
    if (xx) {
      if (incr) return s.null(c);
      return s.integer(c, 0);
    }
    Value nv;
    nv.kind = Value::Kind::zset;
    v = &DB(s, c).dict.emplace(a[1], std::move(nv)).first->second;
  }
  std::int64_t added = 0, updated = 0, processed = 0;
  double incr_result = 0;
  bool incr_aborted = false;
  for (std::size_t j = 0; j < pairs; ++j) {
    const std::string& m = a[idx + j * 2 + 1];
    double score = scores[j];
    auto it = v->zscores.find(m);
    if (it != v->zscores.end()) {
      if (nx) {
        incr_aborted = true;
        continue;
      }
      const double cur = it->second;
      if (incr) {
        score += cur;
        if (std::isnan(score)) {
          if (v->zscores.empty()) DB(s, c).dict.erase(a[1]);
          return s.error(c, "resulting score is not a number (NaN)");
        }
      }
      if ((lt && score >= cur) || (gt && score <= cur)) {
        incr_aborted = true;
        continue;
      }
      ++processed;
      if (score != cur) {
        zset_put(*v, m, score);
        ++updated;
      }
      incr_result = score;
    } else {
      if (xx) {
        incr_aborted = true;
        continue;
      }
      zset_put(*v, m, score);
      ++added;
      ++processed;
      incr_result = score;
    }
  }
  Db& db = DB(s, c);
  if (v->zscores.empty()) db.dict.erase(a[1]);
  if (added || updated) {
    s.signal_modified(&c, db, a[1]);
    s.propagate(c, a);
  }
  if (incr) {
    if (incr_aborted && processed == 0) return s.null(c);
    return s.dbl(c, incr_result);
  }
  s.integer(c, ch ? added + updated : added);
}

void cmd_zrem(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = lookup_typed(s, c, a[1], Value::Kind::zset, wrong);
  if (wrong) return s.wrongtype(c);
  if (v == nullptr) return s.integer(c, 0);
  std::int64_t n = 0;
  for (std::size_t i = 2; i < a.size(); ++i) {
    if (v->zscores.count(a[i]) != 0) {
      zset_del(*v, a[i]);
      ++n;
    }
    if (v->zscores.empty()) break;
  }
  if (n > 0) {
    Db& db = DB(s, c);
    if (v->zscores.empty()) s.db_delete(db, a[1]);
    s.signal_modified(&c, db, a[1]);
    s.propagate(c, a);
  }
  s.integer(c, n);
}

void cmd_zscore(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = lookup_typed(s, c, a[1], Value::Kind::zset, wrong);
  if (wrong) return s.wrongtype(c);
  if (v == nullptr) return s.null(c);
  auto it = v->zscores.find(a[2]);
  if (it == v->zscores.end()) return s.null(c);
  s.dbl(c, it->second);
}

void cmd_zcard(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = lookup_typed(s, c, a[1], Value::Kind::zset, wrong);
  if (wrong) return s.wrongtype(c);
  s.integer(c, v ? static_cast<std::int64_t>(v->zscores.size()) : 0);
}

void cmd_zrange(Impl& s, Client& c, Args& a) {
  zrange_generic(s, c, a, false);
}

void cmd_zrangebyscore(Impl& s, Client& c, Args& a) {
  zrange_generic(s, c, a, true);
}

void cmd_zremrangebyscore(Impl& s, Client& c, Args& a) {
  ScoreRange r;
  if (!parse_score(a[2], r.min, r.minex) || !parse_score(a[3], r.max, r.maxex))
    return s.error(c, "min or max is not a float");
  bool wrong = false;
  Value* v = lookup_typed(s, c, a[1], Value::Kind::zset, wrong);
  if (wrong) return s.wrongtype(c);
  if (v == nullptr) return s.integer(c, 0);
  std::vector<std::string> gone;
  for (auto& [sc, m] : v->zorder)
    if (in_range(r, sc)) gone.push_back(m);
  for (auto& m : gone) zset_del(*v, m);
  if (!gone.empty()) {
    Db& db = DB(s, c);
    if (v->zscores.empty()) s.db_delete(db, a[1]);
    s.signal_modified(&c, db, a[1]);
    s.propagate(c, a);
  }
  s.integer(c, static_cast<std::int64_t>(gone.size()));
}

}  // namespace lockwire::sim::model
