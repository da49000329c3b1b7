// Redis' t_string.c: GET SET SETNX SETEX PSETEX GETSET GETEX GETDEL MSET MSETNX MGET INCR DECR
// INCRBY DECRBY INCRBYFLOAT APPEND STRLEN SETRANGE GETRANGE SUBSTR LCS, with their keyspace
// events and Redis' propagation rewrites (SET ... PXAT, SET ... KEEPTTL, PEXPIREAT, DEL).
#include <cmath>

#include "commands.hpp"

namespace lockwire::sim::model {

namespace {

enum : int {
  S_NX = 1,
  S_XX = 2,
  S_GET = 4,
  S_KEEPTTL = 8,
  S_PERSIST = 16,
  S_EX = 32,
  S_PX = 64,
  S_EXAT = 128,
  S_PXAT = 256
};

// parseExtendedStringArgumentsOrReply
bool parse_string_args(Impl& s, Client& c, Args& a, bool is_set, int& flags,
                       const std::string*& expire) {
  const std::size_t start = is_set ? 3 : 2;
  for (std::size_t j = start; j < a.size(); ++j) {
    const std::string& o = a[j];
    const std::string* next = j + 1 < a.size() ? &a[j + 1] : nullptr;
    const int exp_flags = S_EX | S_PX | S_EXAT | S_PXAT;
    if (ieq(o, "nx") && !(flags & S_XX) && is_set) {
      flags |= S_NX;
    } else if (ieq(o, "xx") && !(flags & S_NX) && is_set) {
      flags |= S_XX;
    } else if (ieq(o, "get") && is_set) {
      flags |= S_GET;
    } else if (ieq(o, "keepttl") && !(flags & (S_PERSIST | exp_flags)) && is_set) {
      flags |= S_KEEPTTL;
    } else if (ieq(o, "persist") && !is_set && !(flags & (exp_flags | S_KEEPTTL))) {
      flags |= S_PERSIST;
    } else if (ieq(o, "ex") && !(flags & (S_KEEPTTL | S_PERSIST | S_EXAT | S_PX | S_PXAT)) &&
               next) {
      flags |= S_EX;
      expire = next;
      ++j;
    } else if (ieq(o, "px") && !(flags & (S_KEEPTTL | S_PERSIST | S_EX | S_EXAT | S_PXAT)) &&
               next) {
      flags |= S_PX;
      expire = next;
      ++j;
    } else if (ieq(o, "exat") && !(flags & (S_KEEPTTL | S_PERSIST | S_EX | S_PX | S_PXAT)) &&
               next) {
      flags |= S_EXAT;
      expire = next;
      ++j;
    } else if (ieq(o, "pxat") && !(flags & (S_KEEPTTL | S_PERSIST | S_EX | S_EXAT | S_PX)) &&
               next) {
      flags |= S_PXAT;
      expire = next;
      ++j;
    } else {
      s.syntax(c);
      return false;
    }
  }
  return true;
}

// getExpireMillisecondsOrReply
bool expire_ms(Impl& s, Client& c, const std::string& arg, int flags, std::string_view cmd,
               std::int64_t& ms) {
  if (!string2ll(arg, ms)) {
    s.not_int(c);
    return false;
  }
  const bool seconds = (flags & (S_EX | S_EXAT)) != 0;
  if (ms <= 0 || (seconds && ms > kLLMax / 1000)) {
    s.expire_err(c, cmd);
    return false;
  }
  if (seconds) ms *= 1000;
  if (flags & (S_PX | S_EX)) {
    if (ms > kLLMax - s.cmd_ms) {
      s.expire_err(c, cmd);
      return false;
    }
    ms += s.cmd_ms;
  }
  if (ms <= 0) {
    s.expire_err(c, cmd);
    return false;
  }
  return true;
}

// checkStringLength: the result must fit proto-max-bulk-len.
bool check_length(Impl& s, Client& c, std::uint64_t size, std::uint64_t append) {
  const std::uint64_t total = size + append;
  if (total > s.opt.max_bulk || total < size) {
    s.error(c, "string exceeds maximum allowed size (proto-max-bulk-len)");
    return false;
  }
  return true;
}

Value* string_read(Impl& s, Client& c, const std::string& key, bool& wrong) {
  Value* v = lookup_typed(s, c, key, Value::Kind::string, wrong);
  if (wrong) s.wrongtype(c);
  return v;
}

// setGenericCommand after the options: NX/XX, the value, the expiry, GET's reply.
void set_generic(Impl& s, Client& c, const std::string& key, std::string& val, int flags,
                 const std::string* expire, std::string_view cmd, bool setnx_replies) {
  std::int64_t ms = 0;
  if (expire != nullptr && !expire_ms(s, c, *expire, flags, cmd, ms)) return;
  if (flags & S_GET) {
    bool wrong = false;
    Value* v = string_read(s, c, key, wrong);
    if (wrong) return;
    if (v == nullptr) {
      s.null(c);
    } else {
      s.bulk(c, v->str);
    }
  }
  const bool found = s.lookup(c, key) != nullptr;
  if (((flags & S_NX) && found) || ((flags & S_XX) && !found)) {
    if (!(flags & S_GET)) {
      if (setnx_replies) {
        s.integer(c, 0);
      } else {
        s.null(c);
      }
    }
    return;
  }
  Db& db = DB(s, c);
  // What goes to replicas: the command as Redis rewrites it (built only when someone listens;
  // otherwise only its size counts, and the value moves into the key without a copy).
  Args prop;
  std::size_t prop_bytes = 3 + key.size() + val.size() + 3 * 16;
  if (expire != nullptr) {
    prop_bytes += 4 + ll2s(ms).size() + 2 * 16;
  } else if (flags & S_KEEPTTL) {
    prop_bytes += 7 + 16;
  }
  if (s.hooks.propagate) {
    prop = {"SET", key, val};
    if (expire != nullptr) {
      prop.push_back("PXAT");
      prop.push_back(ll2s(ms));
    } else if (flags & S_KEEPTTL) {
      prop.push_back("KEEPTTL");
    }
  }
  s.set_key(c, db, key, std::move(val), (flags & S_KEEPTTL) != 0);
  s.notify(NOTIFY_STRING, "set", key, c);
  if (expire != nullptr) {
    s.set_expire(db, key, ms);
    s.notify(NOTIFY_GENERIC, "expire", key, c);
  }
  if (!(flags & S_GET)) {
    if (setnx_replies) {
      s.integer(c, 1);
    } else {
      s.ok(c);
    }
  }
  if (s.hooks.propagate) {
    s.propagate(c, prop);
  } else {
    s.propagate_bytes(c, prop_bytes);
  }
}

void incr_by(Impl& s, Client& c, const std::string& key, std::int64_t incr) {
  Value* v = s.lookup(c, key);
  std::int64_t old = 0;
  if (v != nullptr) {
    if (v->kind != Value::Kind::string) return s.wrongtype(c);
    if (!string2ll(v->str, old)) return s.not_int(c);
  }
  if ((incr < 0 && old < 0 && incr < (kLLMin - old)) ||
      (incr > 0 && old > 0 && incr > (kLLMax - old)))
    return s.error(c, "increment or decrement would overflow");
  const std::int64_t nv = old + incr;
  Db& db = DB(s, c);
  if (v != nullptr) {
    v->str = ll2s(nv);
  } else {
    Value nvv;
    nvv.str = ll2s(nv);
    s.db_add(db, key, std::move(nvv));
  }
  s.signal_modified(&c, db, key);
  s.notify(NOTIFY_STRING, "incrby", key, c);
  s.propagate(c, Args{"SET", key, ll2s(nv), "KEEPTTL"});
  s.integer(c, nv);
}

}  // namespace

void cmd_get(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = string_read(s, c, a[1], wrong);
  if (wrong) return;
  if (v == nullptr) return s.null(c);
  s.bulk(c, v->str);
}

void cmd_set(Impl& s, Client& c, Args& a) {
  int flags = 0;
  const std::string* expire = nullptr;
  if (!parse_string_args(s, c, a, true, flags, expire)) return;
  set_generic(s, c, a[1], a[2], flags, expire, "set", false);
}

void cmd_setex(Impl& s, Client& c, Args& a) {
  set_generic(s, c, a[1], a[3], S_EX, &a[2], "setex", false);
}

void cmd_psetex(Impl& s, Client& c, Args& a) {
  set_generic(s, c, a[1], a[3], S_PX, &a[2], "psetex", false);
}

void cmd_getset(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = string_read(s, c, a[1], wrong);
  if (wrong) return;
  if (v == nullptr) {
    s.null(c);
  } else {
    s.bulk(c, v->str);
  }
  s.set_key(c, DB(s, c), a[1], a[2], false);
  s.notify(NOTIFY_STRING, "set", a[1], c);
  s.propagate(c, Args{"SET", a[1], a[2]});
}

void mset_generic(Impl& s, Client& c, Args& a, bool nx) {
  if (a.size() % 2 == 0) return s.wrong_args(c, nx ? "msetnx" : "mset");
  if (nx) {
    for (std::size_t i = 1; i + 1 < a.size(); i += 2)
      if (s.lookup(c, a[i]) != nullptr) return s.integer(c, 0);
  }
  for (std::size_t i = 1; i + 1 < a.size(); i += 2) {
    s.set_key(c, DB(s, c), a[i], a[i + 1], false);
    s.notify(NOTIFY_STRING, "set", a[i], c);
  }
  if (nx) {
    s.integer(c, 1);
  } else {
    s.ok(c);
  }
  s.propagate(c, a);
}

void cmd_mset(Impl& s, Client& c, Args& a) {
  mset_generic(s, c, a, false);
}

void cmd_msetnx(Impl& s, Client& c, Args& a) {
  mset_generic(s, c, a, true);
}

void cmd_mget(Impl& s, Client& c, Args& a) {
  s.array(c, a.size() - 1);
  for (std::size_t i = 1; i < a.size(); ++i) {
    Value* v = s.lookup_read(c, a[i]);
    if (v == nullptr || v->kind != Value::Kind::string) {
      s.null(c);
    } else {
      s.bulk(c, v->str);
    }
  }
}

void cmd_setnx(Impl& s, Client& c, Args& a) {
  set_generic(s, c, a[1], a[2], S_NX, nullptr, "setnx", true);
}

void cmd_getex(Impl& s, Client& c, Args& a) {
  int flags = 0;
  const std::string* expire = nullptr;
  if (!parse_string_args(s, c, a, false, flags, expire)) return;
  bool wrong = false;
  Value* v = string_read(s, c, a[1], wrong);
  if (wrong || v == nullptr) {
    if (!wrong) s.null(c);
    return;
  }
  std::int64_t ms = 0;
  if (expire != nullptr && !expire_ms(s, c, *expire, flags, "getex", ms)) return;
  s.bulk(c, v->str);
  Db& db = DB(s, c);
  if ((flags & (S_PXAT | S_EXAT)) && ms <= s.cmd_ms && !s.replica) {
    s.db_delete(db, a[1]);
    s.signal_modified(&c, db, a[1]);
    s.notify(NOTIFY_GENERIC, "del", a[1], c);
    s.propagate(c, Args{"DEL", a[1]});
  } else if (expire != nullptr) {
    s.set_expire(db, a[1], ms);
    s.signal_modified(&c, db, a[1]);
    s.notify(NOTIFY_GENERIC, "expire", a[1], c);
    s.propagate(c, Args{"PEXPIREAT", a[1], ll2s(ms)});
  } else if (flags & S_PERSIST) {
    if (s.get_expire(db, a[1]) != -1) {
      s.remove_expire(db, a[1]);
      s.signal_modified(&c, db, a[1]);
      s.notify(NOTIFY_GENERIC, "persist", a[1], c);
      s.propagate(c, Args{"PERSIST", a[1]});
    }
  }
}

void cmd_getdel(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = string_read(s, c, a[1], wrong);
  if (wrong) return;
  if (v == nullptr) return s.null(c);
  s.bulk(c, v->str);
  Db& db = DB(s, c);
  s.db_delete(db, a[1]);
  s.signal_modified(&c, db, a[1]);
  s.notify(NOTIFY_GENERIC, "del", a[1], c);
  s.propagate(c, Args{"DEL", a[1]});
}

void cmd_incr(Impl& s, Client& c, Args& a) {
  incr_by(s, c, a[1], 1);
}

void cmd_decr(Impl& s, Client& c, Args& a) {
  incr_by(s, c, a[1], -1);
}

void cmd_incrby(Impl& s, Client& c, Args& a) {
  std::int64_t n = 0;
  if (!get_ll(s, c, a[2], n)) return;
  incr_by(s, c, a[1], n);
}

void cmd_decrby(Impl& s, Client& c, Args& a) {
  std::int64_t n = 0;
  if (!get_ll(s, c, a[2], n)) return;
  if (n == kLLMin) return s.error(c, "decrement would overflow");
  incr_by(s, c, a[1], -n);
}

void cmd_incrbyfloat(Impl& s, Client& c, Args& a) {
  Value* v = s.lookup(c, a[1]);
  if (v != nullptr && v->kind != Value::Kind::string) return s.wrongtype(c);
  long double value = 0, incr = 0;
  if ((v != nullptr && !string2ld(v->str, value)) || !string2ld(a[2], incr))
    return s.error(c, "value is not a valid float");
  value += incr;
  if (std::isnan(value) || std::isinf(value))
    return s.error(c, "increment would produce NaN or Infinity");
  const std::string nv = ld_human(value);
  Db& db = DB(s, c);
  if (v != nullptr) {
    v->str = nv;
  } else {
    Value x;
    x.str = nv;
    s.db_add(db, a[1], std::move(x));
  }
  s.signal_modified(&c, db, a[1]);
  s.notify(NOTIFY_STRING, "incrbyfloat", a[1], c);
  s.bulk(c, nv);
  s.propagate(c, Args{"SET", a[1], nv, "KEEPTTL"});
}

void cmd_append(Impl& s, Client& c, Args& a) {
  Value* v = s.lookup(c, a[1]);
  Db& db = DB(s, c);
  std::size_t total = 0;
  if (v == nullptr) {
    Value x;
    x.str = a[2];
    total = x.str.size();
    s.db_add(db, a[1], std::move(x));
  } else {
    if (v->kind != Value::Kind::string) return s.wrongtype(c);
    if (!check_length(s, c, v->str.size(), a[2].size())) return;
    v->str += a[2];
    total = v->str.size();
  }
  s.signal_modified(&c, db, a[1]);
  s.notify(NOTIFY_STRING, "append", a[1], c);
  s.integer(c, static_cast<std::int64_t>(total));
  s.propagate(c, a);
}

void cmd_strlen(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = string_read(s, c, a[1], wrong);
  if (wrong) return;
  s.integer(c, v ? static_cast<std::int64_t>(v->str.size()) : 0);
}

void cmd_setrange(Impl& s, Client& c, Args& a) {
  std::int64_t offset = 0;
  if (!get_ll(s, c, a[2], offset)) return;
  if (offset < 0) return s.error(c, "offset is out of range");
  const std::string& value = a[3];
  Value* v = s.lookup(c, a[1]);
  Db& db = DB(s, c);
  if (v == nullptr) {
    if (value.empty()) return s.integer(c, 0);
    if (!check_length(s, c, static_cast<std::uint64_t>(offset), value.size())) return;
    Value x;
    v = &s.db_add(db, a[1], std::move(x));
  } else {
    if (v->kind != Value::Kind::string) return s.wrongtype(c);
    if (value.empty()) return s.integer(c, static_cast<std::int64_t>(v->str.size()));
    if (!check_length(s, c, static_cast<std::uint64_t>(offset), value.size())) return;
  }
  const auto off = static_cast<std::size_t>(offset);
  if (v->str.size() < off + value.size()) v->str.resize(off + value.size(), '\0');
  v->str.replace(off, value.size(), value);
  s.signal_modified(&c, db, a[1]);
  s.notify(NOTIFY_STRING, "setrange", a[1], c);
  s.propagate(c, a);
  s.integer(c, static_cast<std::int64_t>(v->str.size()));
}

void cmd_getrange(Impl& s, Client& c, Args& a) {
  std::int64_t start = 0, end = 0;
  if (!get_ll(s, c, a[2], start) || !get_ll(s, c, a[3], end)) return;
  bool wrong = false;
  Value* v = string_read(s, c, a[1], wrong);
  if (wrong) return;
  if (v == nullptr) return s.bulk(c, "");
  const auto len = static_cast<std::int64_t>(v->str.size());
  if (start < 0 && end < 0 && start > end) return s.bulk(c, "");
  if (start < 0) start += len;
  if (end < 0) end += len;
  if (start < 0) start = 0;
  if (end < 0) end = 0;
  if (end >= len) end = len - 1;
  if (start > end || len == 0) return s.bulk(c, "");
  s.bulk(c, std::string_view(v->str).substr(static_cast<std::size_t>(start),
                                            static_cast<std::size_t>(end - start + 1)));
}

void cmd_lcs(Impl& s, Client& c, Args& a) {
  Value* va = s.lookup_read(c, a[1]);
  Value* vb = s.lookup_read(c, a[2]);
  if ((va && va->kind != Value::Kind::string) || (vb && vb->kind != Value::Kind::string))
    return s.error(c, "The specified keys must contain string values");
  const std::string x = va ? va->str : std::string();
  const std::string y = vb ? vb->str : std::string();
  bool getlen = false, getidx = false, withmatchlen = false;
  std::int64_t minmatchlen = 0;
  for (std::size_t j = 3; j < a.size(); ++j) {
    const bool more = j + 1 < a.size();
    if (ieq(a[j], "IDX")) {
      getidx = true;
    } else if (ieq(a[j], "LEN")) {
      getlen = true;
    } else if (ieq(a[j], "WITHMATCHLEN")) {
      withmatchlen = true;
    } else if (ieq(a[j], "MINMATCHLEN") && more) {
      if (!get_ll(s, c, a[j + 1], minmatchlen)) return;
      if (minmatchlen < 0) minmatchlen = 0;
      ++j;
    } else {
      return s.syntax(c);
    }
  }
  if (getlen && getidx)
    return s.error(c, "If you want both the length and indexes, please just use IDX.");
  const std::size_t alen = x.size(), blen = y.size();
  const std::uint64_t cells = static_cast<std::uint64_t>(alen + 1) * (blen + 1);
  if (cells * 4 > s.opt.max_bulk)
    return s.error(c,
                   "Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len");
  std::vector<std::uint32_t> t(cells, 0);
  auto at = [&](std::size_t i, std::size_t j) -> std::uint32_t& { return t[j + i * (blen + 1)]; };
  for (std::size_t i = 1; i <= alen; ++i)
    for (std::size_t j = 1; j <= blen; ++j)
      at(i, j) = x[i - 1] == y[j - 1] ? at(i - 1, j - 1) + 1 : std::max(at(i - 1, j), at(i, j - 1));
  std::uint32_t idx = at(alen, blen);
  const std::uint32_t total = idx;
  std::string result(idx, '\0');
  struct Range {
    std::size_t a0, a1, b0, b1;
  };
  std::vector<Range> ranges;
  std::size_t as = alen, ae = 0, bs = 0, be = 0;  // as == alen: no range open
  std::size_t i = alen, j = blen;
  const bool compute = getidx || !getlen;
  while (compute && i > 0 && j > 0) {
    bool emit = false;
    if (x[i - 1] == y[j - 1]) {
      result[idx - 1] = x[i - 1];
      if (as == alen) {
        as = ae = i - 1;
        bs = be = j - 1;
      } else if (as == i && bs == j) {
        --as;
        --bs;
      } else {
        emit = true;
      }
      if (as == 0 || bs == 0) emit = true;
      --idx;
      --i;
      --j;
    } else {
      if (at(i - 1, j) > at(i, j - 1)) {
        --i;
      } else {
        --j;
      }
      if (as != alen) emit = true;
    }
    const std::size_t match_len = ae - as + 1;
    if (emit) {
      if (minmatchlen == 0 || static_cast<std::int64_t>(match_len) >= minmatchlen)
        ranges.push_back({as, ae, bs, be});
      as = alen;
    }
  }
  if (getidx) {
    s.map(c, 2);
    s.bulk(c, "matches");
    s.array(c, ranges.size());
    for (auto& r : ranges) {
      s.array(c, withmatchlen ? 3 : 2);
      s.array(c, 2);
      s.integer(c, static_cast<std::int64_t>(r.a0));
      s.integer(c, static_cast<std::int64_t>(r.a1));
      s.array(c, 2);
      s.integer(c, static_cast<std::int64_t>(r.b0));
      s.integer(c, static_cast<std::int64_t>(r.b1));
      if (withmatchlen) s.integer(c, static_cast<std::int64_t>(r.a1 - r.a0 + 1));
    }
    s.bulk(c, "len");
    return s.integer(c, total);
  }
  if (getlen) return s.integer(c, total);
  s.bulk(c, result);
}

}  // namespace lockwire::sim::model
