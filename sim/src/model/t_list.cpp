// Redis' t_list.c: LPUSH RPUSH LPUSHX RPUSHX LINSERT LLEN LINDEX LSET LPOP RPOP LRANGE LTRIM
// LPOS LREM LMOVE RPOPLPUSH LMPOP and the blocking BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP (a
// client with nothing to pop waits on its keys, see blocked.cpp; inside MULTI it answers as if
// it timed out), with Redis' keyspace events and propagation ([LR]POP, LMOVE, RPOPLPUSH).
#include <algorithm>

#include "commands.hpp"

namespace lockwire::sim::model {

namespace {

constexpr bool kHead = true, kTail = false;

Value* list_read(Impl& s, Client& c, const std::string& key, bool& wrong) {
  return typed_read(s, c, key, Value::Kind::list, wrong);
}

Value* list_write(Impl& s, Client& c, const std::string& key, bool& wrong) {
  return typed_write(s, c, key, Value::Kind::list, wrong);
}

std::string pop(Value& v, bool head) {
  std::string out;
  if (head) {
    out = std::move(v.list.front());
    v.list.pop_front();
  } else {
    out = std::move(v.list.back());
    v.list.pop_back();
  }
  return out;
}

void push(Value& v, std::string e, bool head) {
  if (head) {
    v.list.push_front(std::move(e));
  } else {
    v.list.push_back(std::move(e));
  }
}

bool parse_where(Impl& s, Client& c, const std::string& arg, bool& head) {
  if (ieq(arg, "left")) {
    head = kHead;
  } else if (ieq(arg, "right")) {
    head = kTail;
  } else {
    s.syntax(c);
    return false;
  }
  return true;
}

// getPositiveLongFromObjectOrReply
bool get_positive(Impl& s, Client& c, const std::string& arg, std::int64_t& v,
                  const char* msg = nullptr) {
  return get_positive_or_reply(s, c, arg, v, msg);
}

// addListRangeReply
void range_reply(Impl& s, Client& c, const Value& v, std::int64_t start, std::int64_t end,
                 bool reverse) {
  const auto llen = static_cast<std::int64_t>(v.list.size());
  if (start < 0) start += llen;
  if (end < 0) end += llen;
  if (start < 0) start = 0;
  if (start > end || start >= llen) return s.array(c, 0);
  if (end >= llen) end = llen - 1;
  s.array(c, static_cast<std::size_t>(end - start + 1));
  if (reverse) {
    for (std::int64_t i = end; i >= start; --i) s.bulk(c, v.list[static_cast<std::size_t>(i)]);
  } else {
    for (std::int64_t i = start; i <= end; ++i) s.bulk(c, v.list[static_cast<std::size_t>(i)]);
  }
}

// listElementsRemoved: the pop event, the key deleted when empty.
bool elements_removed(Impl& s, Client& c, Db& db, const std::string& key, bool head,
                      const Value& v) {
  s.notify(NOTIFY_LIST, head ? "lpop" : "rpop", key, s.db_index(db));
  const bool gone = v.list.empty();
  if (gone) {
    s.db_delete(db, key);
    s.notify(NOTIFY_GENERIC, "del", key, s.db_index(db));
  }
  s.signal_modified(&c, db, key);
  return gone;
}

// listPopRangeAndReplyWithKey: [key, [elements...]]
bool pop_range_with_key(Impl& s, Client& c, Db& db, const std::string& key, Value& v, bool head,
                        std::int64_t count) {
  const auto llen = static_cast<std::int64_t>(v.list.size());
  const std::int64_t n = std::min(count, llen);
  s.array(c, 2);
  s.bulk(c, key);
  s.array(c, static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) s.bulk(c, pop(v, head));
  return elements_removed(s, c, db, key, head, v);
}

void push_generic(Impl& s, Client& c, Args& a, bool head, bool xx) {
  bool wrong = false;
  Value* v = list_write(s, c, a[1], wrong);
  if (wrong) return;
  Db& db = DB(s, c);
  if (v == nullptr) {
    if (xx) return s.integer(c, 0);
    Value nv;
    nv.kind = Value::Kind::list;
    v = &s.db_add(db, a[1], std::move(nv));
  }
  for (std::size_t j = 2; j < a.size(); ++j) push(*v, a[j], head);
  s.integer(c, static_cast<std::int64_t>(v->list.size()));
  s.signal_modified(&c, db, a[1]);
  s.notify(NOTIFY_LIST, head ? "lpush" : "rpush", a[1], c);
  s.propagate(c, a);
}

void pop_generic(Impl& s, Client& c, Args& a, bool head) {
  const bool hascount = a.size() == 3;
  std::int64_t count = 0;
  if (a.size() > 3) return s.wrong_args(c, head ? "lpop" : "rpop");
  if (hascount && !get_positive(s, c, a[2], count)) return;
  bool wrong = false;
  Value* v = list_write(s, c, a[1], wrong);
  if (wrong) return;
  if (v == nullptr) return hascount ? s.null_array(c) : s.null(c);
  if (hascount && count == 0) return s.array(c, 0);
  Db& db = DB(s, c);
  if (!hascount) {
    s.bulk(c, pop(*v, head));
    elements_removed(s, c, db, a[1], head, *v);
    return s.propagate(c, Args{head ? "LPOP" : "RPOP", a[1]});
  }
  const auto n = std::min<std::int64_t>(count, static_cast<std::int64_t>(v->list.size()));
  s.array(c, static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) s.bulk(c, pop(*v, head));
  elements_removed(s, c, db, a[1], head, *v);
  s.propagate(c, Args{head ? "LPOP" : "RPOP", a[1], ll2s(n)});
}

// lmoveHandlePush: the destination list (created if missing) gets the value; the value is the
// reply.
void move_push(Impl& s, Client& c, Db& db, const std::string& dst, Value* dv, std::string value,
               bool head) {
  if (dv == nullptr) {
    Value nv;
    nv.kind = Value::Kind::list;
    dv = &s.db_add(db, dst, std::move(nv));
  }
  s.signal_modified(&c, db, dst);
  push(*dv, value, head);
  s.notify(NOTIFY_LIST, head ? "lpush" : "rpush", dst, s.db_index(db));
  s.bulk(c, value);
}

void lmove_generic(Impl& s, Client& c, const std::string& src, const std::string& dst, bool from,
                   bool to, bool rpoplpush) {
  bool wrong = false;
  Value* sv = list_write(s, c, src, wrong);
  if (wrong) return;
  if (sv == nullptr || sv->list.empty()) return s.null(c);
  Value* dv = list_write(s, c, dst, wrong);
  if (wrong) return;
  Db& db = DB(s, c);
  std::string value = pop(*sv, from);
  const bool same = src == dst;
  move_push(s, c, db, dst, same ? sv : dv, std::move(value), to);
  s.notify(NOTIFY_LIST, from ? "lpop" : "rpop", src, c);
  if (!same && sv->list.empty()) {
    s.db_delete(db, src);
    s.notify(NOTIFY_GENERIC, "del", src, c);
  }
  s.signal_modified(&c, db, src);
  if (rpoplpush) {
    s.propagate(c, Args{"RPOPLPUSH", src, dst});
  } else {
    s.propagate(c, Args{"LMOVE", src, dst, from ? "LEFT" : "RIGHT", to ? "LEFT" : "RIGHT"});
  }
}

// blockingPopGenericCommand
void blocking_pop(Impl& s, Client& c, const std::vector<std::string>& keys, bool head,
                  const std::string& timeout, std::int64_t count) {
  std::int64_t deadline = 0;
  if (!parse_block_timeout(s, c, timeout, deadline)) return;
  Db& db = DB(s, c);
  for (auto& key : keys) {
    bool wrong = false;
    Value* v = list_write(s, c, key, wrong);
    if (wrong) return;
    if (v == nullptr || v->list.empty()) continue;
    if (count != -1) {
      const auto n = std::min<std::int64_t>(count, static_cast<std::int64_t>(v->list.size()));
      pop_range_with_key(s, c, db, key, *v, head, count);
      return s.propagate(c, Args{head ? "LPOP" : "RPOP", key, ll2s(n)});
    }
    s.array(c, 2);
    s.bulk(c, key);
    s.bulk(c, pop(*v, head));
    elements_removed(s, c, db, key, head, *v);
    return s.propagate(c, Args{head ? "LPOP" : "RPOP", key});
  }
  if (s.in_exec) return s.null_array(c);  // CLIENT_DENY_BLOCKING
  c.wherefrom_head = head;
  c.bcount = count;
  c.bcmd = c.last_cmd;
  s.block_for_keys(c, Client::Btype::list, keys, deadline);
}

void blmove_generic(Impl& s, Client& c, Args& a, bool from, bool to, const std::string& timeout,
                    bool brpoplpush) {
  std::int64_t deadline = 0;
  if (!parse_block_timeout(s, c, timeout, deadline)) return;
  bool wrong = false;
  Value* v = list_write(s, c, a[1], wrong);
  if (wrong) return;
  if (v != nullptr) return lmove_generic(s, c, a[1], a[2], from, to, brpoplpush);
  if (s.in_exec) return s.null(c);
  c.wherefrom_head = from;
  c.whereto_head = to;
  c.has_target = true;
  c.btarget = a[2];
  c.bcmd = c.last_cmd;
  s.block_for_keys(c, Client::Btype::list, {a[1]}, deadline);
}

void lmpop_generic(Impl& s, Client& c, Args& a, std::size_t numkeys_idx, bool block) {
  std::int64_t numkeys = 0;
  if (!string2ll(a[numkeys_idx], numkeys))
    return s.error(c, "numkeys should be greater than 0");
  if (numkeys < 1) return s.error(c, "numkeys should be greater than 0");
  const std::size_t where_idx = numkeys_idx + static_cast<std::size_t>(numkeys) + 1;
  if (static_cast<std::uint64_t>(numkeys) > a.size() || where_idx >= a.size()) return s.syntax(c);
  bool head = true;
  if (!parse_where(s, c, a[where_idx], head)) return;
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
  if (block) return blocking_pop(s, c, keys, head, a[1], count);
  Db& db = DB(s, c);
  for (auto& key : keys) {
    bool wrong = false;
    Value* v = list_write(s, c, key, wrong);
    if (wrong) return;
    if (v == nullptr || v->list.empty()) continue;
    const auto n = std::min<std::int64_t>(count, static_cast<std::int64_t>(v->list.size()));
    pop_range_with_key(s, c, db, key, *v, head, count);
    return s.propagate(c, Args{head ? "LPOP" : "RPOP", key, ll2s(n)});
  }
  s.null_array(c);
}

}  // namespace

void cmd_lpush(Impl& s, Client& c, Args& a) {
  push_generic(s, c, a, kHead, false);
}
void cmd_rpush(Impl& s, Client& c, Args& a) {
  push_generic(s, c, a, kTail, false);
}
void cmd_lpushx(Impl& s, Client& c, Args& a) {
  push_generic(s, c, a, kHead, true);
}
void cmd_rpushx(Impl& s, Client& c, Args& a) {
  push_generic(s, c, a, kTail, true);
}

void cmd_linsert(Impl& s, Client& c, Args& a) {
  bool after = false;
  if (ieq(a[2], "after")) {
    after = true;
  } else if (!ieq(a[2], "before")) {
    return s.syntax(c);
  }
  bool wrong = false;
  Value* v = list_write(s, c, a[1], wrong);
  if (wrong) return;
  if (v == nullptr) return s.integer(c, 0);
  auto it = std::find(v->list.begin(), v->list.end(), a[3]);
  if (it == v->list.end()) return s.integer(c, -1);
  v->list.insert(after ? it + 1 : it, a[4]);
  s.signal_modified(&c, DB(s, c), a[1]);
  s.notify(NOTIFY_LIST, "linsert", a[1], c);
  s.propagate(c, a);
  s.integer(c, static_cast<std::int64_t>(v->list.size()));
}

void cmd_llen(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = list_read(s, c, a[1], wrong);
  if (wrong) return;
  s.integer(c, v ? static_cast<std::int64_t>(v->list.size()) : 0);
}

void cmd_lindex(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = list_read(s, c, a[1], wrong);
  if (wrong) return;
  if (v == nullptr) return s.null(c);
  std::int64_t index = 0;
  if (!get_ll(s, c, a[2], index)) return;
  const auto n = static_cast<std::int64_t>(v->list.size());
  if (index < 0) index += n;
  if (index < 0 || index >= n) return s.null(c);
  s.bulk(c, v->list[static_cast<std::size_t>(index)]);
}

void cmd_lset(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = list_write(s, c, a[1], wrong);
  if (wrong) return;
  if (v == nullptr) return s.error(c, "no such key");
  std::int64_t index = 0;
  if (!get_ll(s, c, a[2], index)) return;
  const auto n = static_cast<std::int64_t>(v->list.size());
  if (index < 0) index += n;
  if (index < 0 || index >= n) return s.error(c, "index out of range");
  v->list[static_cast<std::size_t>(index)] = a[3];
  s.ok(c);
  s.signal_modified(&c, DB(s, c), a[1]);
  s.notify(NOTIFY_LIST, "lset", a[1], c);
  s.propagate(c, a);
}

void cmd_lpop(Impl& s, Client& c, Args& a) {
  pop_generic(s, c, a, kHead);
}
void cmd_rpop(Impl& s, Client& c, Args& a) {
  pop_generic(s, c, a, kTail);
}

void cmd_lrange(Impl& s, Client& c, Args& a) {
  std::int64_t start = 0, end = 0;
  if (!get_ll(s, c, a[2], start) || !get_ll(s, c, a[3], end)) return;
  bool wrong = false;
  Value* v = list_read(s, c, a[1], wrong);
  if (wrong) return;
  if (v == nullptr) return s.array(c, 0);
  range_reply(s, c, *v, start, end, false);
}

void cmd_ltrim(Impl& s, Client& c, Args& a) {
  std::int64_t start = 0, end = 0;
  if (!get_ll(s, c, a[2], start) || !get_ll(s, c, a[3], end)) return;
  bool wrong = false;
  Value* v = list_write(s, c, a[1], wrong);
  if (wrong) return;
  if (v == nullptr) return s.ok(c);
  const auto llen = static_cast<std::int64_t>(v->list.size());
  if (start < 0) start += llen;
  if (end < 0) end += llen;
  if (start < 0) start = 0;
  std::int64_t ltrim = 0, rtrim = 0;
  if (start > end || start >= llen) {
    ltrim = llen;
  } else {
    if (end >= llen) end = llen - 1;
    ltrim = start;
    rtrim = llen - end - 1;
  }
  v->list.erase(v->list.begin(), v->list.begin() + ltrim);
  v->list.erase(v->list.end() - rtrim, v->list.end());
  Db& db = DB(s, c);
  s.notify(NOTIFY_LIST, "ltrim", a[1], c);
  if (v->list.empty()) {
    s.db_delete(db, a[1]);
    s.notify(NOTIFY_GENERIC, "del", a[1], c);
  }
  s.signal_modified(&c, db, a[1]);
  s.propagate(c, a);
  s.ok(c);
}

void cmd_lpos(Impl& s, Client& c, Args& a) {
  std::int64_t rank = 1, count = -1, maxlen = 0;
  for (std::size_t j = 3; j < a.size(); ++j) {
    const bool more = j + 1 < a.size();
    if (ieq(a[j], "RANK") && more) {
      if (!get_ll(s, c, a[++j], rank)) return;
      if (rank == 0)
        return s.error(c,
                       "RANK can't be zero: use 1 to start from the first match, 2 from the "
                       "second ... or use negative to start from the end of the list");
    } else if (ieq(a[j], "COUNT") && more) {
      if (!get_positive(s, c, a[++j], count, "COUNT can't be negative")) return;
    } else if (ieq(a[j], "MAXLEN") && more) {
      if (!get_positive(s, c, a[++j], maxlen, "MAXLEN can't be negative")) return;
    } else {
      return s.syntax(c);
    }
  }
  const bool from_tail = rank < 0;
  if (rank == kLLMin) rank = kLLMax;  // -LLONG_MIN would overflow; nothing ranks that far
  if (rank < 0) rank = -rank;
  bool wrong = false;
  Value* v = list_read(s, c, a[1], wrong);
  if (wrong) return;
  if (v == nullptr) return count != -1 ? s.array(c, 0) : s.null(c);
  const auto llen = static_cast<std::int64_t>(v->list.size());
  std::vector<std::int64_t> found;
  std::int64_t matches = 0;
  for (std::int64_t index = 0; index < llen && (maxlen == 0 || index < maxlen); ++index) {
    const std::int64_t pos = from_tail ? llen - index - 1 : index;
    if (v->list[static_cast<std::size_t>(pos)] != a[2]) continue;
    ++matches;
    if (matches < rank) continue;
    found.push_back(pos);
    if (count == -1) break;
    if (count && matches - rank + 1 >= count) break;
  }
  if (count != -1) {
    s.array(c, found.size());
    for (auto p : found) s.integer(c, p);
    return;
  }
  if (found.empty()) return s.null(c);
  s.integer(c, found[0]);
}

void cmd_lrem(Impl& s, Client& c, Args& a) {
  std::int64_t toremove = 0;
  if (!get_ll(s, c, a[2], toremove)) return;
  bool wrong = false;
  Value* v = list_write(s, c, a[1], wrong);
  if (wrong) return;
  if (v == nullptr) return s.integer(c, 0);
  std::int64_t removed = 0;
  if (toremove < 0) {
    const std::int64_t limit = toremove == kLLMin ? kLLMax : -toremove;
    for (std::size_t i = v->list.size(); i-- > 0 && removed < limit;) {
      if (v->list[i] == a[3]) {
        v->list.erase(v->list.begin() + static_cast<std::ptrdiff_t>(i));
        ++removed;
      }
    }
  } else {
    for (std::size_t i = 0; i < v->list.size() && (toremove == 0 || removed < toremove);) {
      if (v->list[i] == a[3]) {
        v->list.erase(v->list.begin() + static_cast<std::ptrdiff_t>(i));
        ++removed;
      } else {
        ++i;
      }
    }
  }
  Db& db = DB(s, c);
  if (removed) {
    s.signal_modified(&c, db, a[1]);
    s.notify(NOTIFY_LIST, "lrem", a[1], c);
    s.propagate(c, a);
  }
  if (v->list.empty()) {
    s.db_delete(db, a[1]);
    s.notify(NOTIFY_GENERIC, "del", a[1], c);
  }
  s.integer(c, removed);
}

void cmd_rpoplpush(Impl& s, Client& c, Args& a) {
  lmove_generic(s, c, a[1], a[2], kTail, kHead, true);
}

void cmd_lmove(Impl& s, Client& c, Args& a) {
  bool from = true, to = true;
  if (!parse_where(s, c, a[3], from) || !parse_where(s, c, a[4], to)) return;
  lmove_generic(s, c, a[1], a[2], from, to, false);
}

void cmd_lmpop(Impl& s, Client& c, Args& a) {
  lmpop_generic(s, c, a, 1, false);
}

void cmd_blpop(Impl& s, Client& c, Args& a) {
  blocking_pop(s, c, Args(a.begin() + 1, a.end() - 1), kHead, a.back(), -1);
}

void cmd_brpop(Impl& s, Client& c, Args& a) {
  blocking_pop(s, c, Args(a.begin() + 1, a.end() - 1), kTail, a.back(), -1);
}

void cmd_brpoplpush(Impl& s, Client& c, Args& a) {
  blmove_generic(s, c, a, kTail, kHead, a[3], true);
}

void cmd_blmove(Impl& s, Client& c, Args& a) {
  bool from = true, to = true;
  if (!parse_where(s, c, a[3], from) || !parse_where(s, c, a[4], to)) return;
  blmove_generic(s, c, a, from, to, a[5], false);
}

void cmd_blmpop(Impl& s, Client& c, Args& a) {
  lmpop_generic(s, c, a, 2, true);
}

}  // namespace lockwire::sim::model

namespace lockwire::sim {

using namespace model;

// serveClientBlockedOnList: the receiver pops as its command would have, or moves to its
// target (a target of another type answers WRONGTYPE and pops nothing).
bool RedisModel::Impl::serve_blocked_list(Client& r, Db& db, const std::string& key) {
  Value& v = db.dict.at(key);
  const bool head = r.wherefrom_head;
  const bool is_blmpop = r.bcmd != nullptr && r.bcmd->fn == cmd_blmpop;
  if (!r.has_target) {
    if (is_blmpop) {
      const auto n = std::min<std::int64_t>(r.bcount, static_cast<std::int64_t>(v.list.size()));
      propagate(r, Args{head ? "LPOP" : "RPOP", key, ll2s(n)});
      return pop_range_with_key(*this, r, db, key, v, head, r.bcount);
    }
    propagate(r, Args{head ? "LPOP" : "RPOP", key});
    array(r, 2);
    bulk(r, key);
    bulk(r, pop(v, head));
    notify(NOTIFY_LIST, head ? "lpop" : "rpop", key, db_index(db));
  } else {
    const std::string dst = r.btarget;
    Db& rdb = dbs[static_cast<std::size_t>(r.db)];
    Value* dv = lookup(rdb, dst);
    if (dv != nullptr && dv->kind != Value::Kind::list) {
      wrongtype(r);
    } else {
      std::string value = pop(v, head);
      const bool same = &rdb == &db && dst == key;
      move_push(*this, r, rdb, dst, same ? &v : dv, std::move(value), r.whereto_head);
      const bool brpoplpush = r.bcmd != nullptr && r.bcmd->fn == cmd_brpoplpush;
      if (brpoplpush) {
        propagate(r, Args{"RPOPLPUSH", key, dst});
      } else {
        propagate(r, Args{"LMOVE", key, dst, head ? "LEFT" : "RIGHT",
                          r.whereto_head ? "LEFT" : "RIGHT"});
      }
      notify(NOTIFY_LIST, head ? "lpop" : "rpop", key, db_index(db));
    }
  }
  auto it = db.dict.find(key);
  if (it != db.dict.end() && it->second.kind == Value::Kind::list && it->second.list.empty()) {
    db_delete(db, key);
    notify(NOTIFY_GENERIC, "del", key, db_index(db));
    return true;
  }
  return false;
}

}  // namespace lockwire::sim
