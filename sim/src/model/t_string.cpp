// Redis' t_string.c: GET SET SETNX GETEX GETDEL MSET MGET INCR DECR INCRBY DECRBY.
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

void set_key(Impl& s, Client& c, const std::string& key, std::string val, bool keepttl) {
  Db& db = DB(s, c);
  Value& v = db.dict[key];
  v = Value{};
  v.kind = Value::Kind::string;
  v.str = std::move(val);
  if (!keepttl) s.remove_expire(db, key);
  s.signal_modified(&c, db, key);
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
    db.dict[key] = std::move(nvv);
  }
  s.signal_modified(&c, db, key);
  s.propagate(c, Args{"SET", key, ll2s(nv), "KEEPTTL"});
  s.integer(c, nv);
}

}  // namespace

void cmd_get(Impl& s, Client& c, Args& a) {
  Value* v = s.lookup(c, a[1]);
  if (v == nullptr) return s.null(c);
  if (v->kind != Value::Kind::string) return s.wrongtype(c);
  s.bulk(c, v->str);
}

void cmd_set(Impl& s, Client& c, Args& a) {
  int flags = 0;
  const std::string* expire = nullptr;
  if (!parse_string_args(s, c, a, true, flags, expire)) return;
  std::int64_t ms = 0;
  if (expire != nullptr && !expire_ms(s, c, *expire, flags, "set", ms)) return;
  if (flags & S_GET) {
    Value* v = s.lookup(c, a[1]);
    if (v == nullptr) {
      s.null(c);
    } else if (v->kind != Value::Kind::string) {
      return s.wrongtype(c);
    } else {
      s.bulk(c, v->str);
    }
  }
  const bool found = s.lookup(c, a[1]) != nullptr;
  if (((flags & S_NX) && found) || ((flags & S_XX) && !found)) {
    if (!(flags & S_GET)) s.null(c);
    return;
  }
  set_key(s, c, a[1], a[2], (flags & S_KEEPTTL) != 0);
  if (expire != nullptr) s.set_expire(DB(s, c), a[1], ms);
  Args prop{"SET", a[1], a[2]};
  if (expire != nullptr) {
    prop.push_back("PXAT");
    prop.push_back(ll2s(ms));
  } else if (flags & S_KEEPTTL) {
    prop.push_back("KEEPTTL");
  }
  s.propagate(c, prop);
  if (!(flags & S_GET)) s.ok(c);
}

void cmd_mset(Impl& s, Client& c, Args& a) {
  if (a.size() % 2 == 0) return s.wrong_args(c, "mset");
  for (std::size_t i = 1; i + 1 < a.size(); i += 2) set_key(s, c, a[i], a[i + 1], false);
  s.propagate(c, a);
  s.ok(c);
}

void cmd_mget(Impl& s, Client& c, Args& a) {
  s.array(c, a.size() - 1);
  for (std::size_t i = 1; i < a.size(); ++i) {
    Value* v = s.lookup(c, a[i]);
    if (v == nullptr || v->kind != Value::Kind::string) {
      s.null(c);
    } else {
      s.bulk(c, v->str);
    }
  }
}

void cmd_setnx(Impl& s, Client& c, Args& a) {
  if (s.lookup(c, a[1]) != nullptr) return s.integer(c, 0);
  set_key(s, c, a[1], a[2], false);
  s.propagate(c, Args{"SET", a[1], a[2]});
  s.integer(c, 1);
}

void cmd_getex(Impl& s, Client& c, Args& a) {
  int flags = 0;
  const std::string* expire = nullptr;
  if (!parse_string_args(s, c, a, false, flags, expire)) return;
  Value* v = s.lookup(c, a[1]);
  if (v == nullptr) return s.null(c);
  if (v->kind != Value::Kind::string) return s.wrongtype(c);
  std::int64_t ms = 0;
  if (expire != nullptr && !expire_ms(s, c, *expire, flags, "getex", ms)) return;
  s.bulk(c, v->str);
  Db& db = DB(s, c);
  if ((flags & (S_PXAT | S_EXAT)) && ms <= s.cmd_ms && !s.replica) {
    s.db_delete(db, a[1]);
    s.signal_modified(&c, db, a[1]);
    s.propagate(c, Args{"DEL", a[1]});
  } else if (expire != nullptr) {
    s.set_expire(db, a[1], ms);
    s.signal_modified(&c, db, a[1]);
    s.propagate(c, Args{"PEXPIREAT", a[1], ll2s(ms)});
  } else if (flags & S_PERSIST) {
    if (s.get_expire(db, a[1]) != -1) {
      s.remove_expire(db, a[1]);
      s.signal_modified(&c, db, a[1]);
      s.propagate(c, Args{"PERSIST", a[1]});
    }
  }
}

void cmd_getdel(Impl& s, Client& c, Args& a) {
  Value* v = s.lookup(c, a[1]);
  if (v == nullptr) return s.null(c);
  if (v->kind != Value::Kind::string) return s.wrongtype(c);
  s.bulk(c, v->str);
  Db& db = DB(s, c);
  s.db_delete(db, a[1]);
  s.signal_modified(&c, db, a[1]);
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

}  // namespace lockwire::sim::model
