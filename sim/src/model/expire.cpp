// Redis' expire.c: lazy and active expiry (both suspended during CLIENT PAUSE, as in 7.0) and
// the EXPIRE family, PERSIST, TTL, PTTL.
#include "commands.hpp"

namespace lockwire::sim::model {

namespace {

void expire_generic(Impl& s, Client& c, Args& a, std::int64_t base, bool seconds,
                    std::string_view name) {
  int nx = 0, xx = 0, gt = 0, lt = 0;
  for (std::size_t j = 3; j < a.size(); ++j) {
    if (ieq(a[j], "nx")) {
      nx = 1;
    } else if (ieq(a[j], "xx")) {
      xx = 1;
    } else if (ieq(a[j], "gt")) {
      gt = 1;
    } else if (ieq(a[j], "lt")) {
      lt = 1;
    } else {
      return s.error(c, "Unsupported option " + std::string(cstr(a[j])));
    }
  }
  if ((nx && xx) || (nx && gt) || (nx && lt))
    return s.error(c, "NX and XX, GT or LT options at the same time are not compatible");
  if (gt && lt) return s.error(c, "GT and LT options at the same time are not compatible");
  std::int64_t when = 0;
  if (!get_ll(s, c, a[2], when)) return;
  if (seconds) {
    if (when > kLLMax / 1000 || when < kLLMin / 1000) return s.expire_err(c, name);
    when *= 1000;
  }
  if (when > kLLMax - base) return s.expire_err(c, name);
  when += base;
  Db& db = DB(s, c);
  if (s.lookup(c, a[1]) == nullptr) return s.integer(c, 0);
  const std::int64_t cur = s.get_expire(db, a[1]);
  if (nx && cur != -1) return s.integer(c, 0);
  if (xx && cur == -1) return s.integer(c, 0);
  if (gt && (when <= cur || cur == -1)) return s.integer(c, 0);
  if (lt && (when >= cur && cur != -1)) return s.integer(c, 0);
  if (when <= s.cmd_ms && !s.replica) {
    s.db_delete(db, a[1]);
    s.propagate(c, Args{"DEL", a[1]});
    s.signal_modified(&c, db, a[1]);
    s.notify(NOTIFY_GENERIC, "del", a[1], c);
    return s.integer(c, 1);
  }
  s.set_expire(db, a[1], when);
  s.integer(c, 1);
  s.signal_modified(&c, db, a[1]);
  s.notify(NOTIFY_GENERIC, "expire", a[1], c);
  s.propagate(c, Args{"PEXPIREAT", a[1], ll2s(when)});
}

void ttl_generic(Impl& s, Client& c, Args& a, bool ms) {
  Db& db = DB(s, c);
  if (s.lookup_read(c, a[1]) == nullptr) return s.integer(c, -2);
  const std::int64_t e = s.get_expire(db, a[1]);
  if (e == -1) return s.integer(c, -1);
  std::int64_t ttl = e - s.cmd_ms;
  if (ttl < 0) ttl = 0;
  s.integer(c, ms ? ttl : (ttl + 500) / 1000);
}

}  // namespace

void cmd_expire(Impl& s, Client& c, Args& a) {
  expire_generic(s, c, a, s.cmd_ms, true, "expire");
}

void cmd_pexpire(Impl& s, Client& c, Args& a) {
  expire_generic(s, c, a, s.cmd_ms, false, "pexpire");
}

void cmd_expireat(Impl& s, Client& c, Args& a) {
  expire_generic(s, c, a, 0, true, "expireat");
}

void cmd_pexpireat(Impl& s, Client& c, Args& a) {
  expire_generic(s, c, a, 0, false, "pexpireat");
}

void cmd_persist(Impl& s, Client& c, Args& a) {
  Db& db = DB(s, c);
  if (s.lookup(c, a[1]) == nullptr || s.get_expire(db, a[1]) == -1) return s.integer(c, 0);
  s.remove_expire(db, a[1]);
  s.signal_modified(&c, db, a[1]);
  s.notify(NOTIFY_GENERIC, "persist", a[1], c);
  s.propagate(c, Args{"PERSIST", a[1]});
  s.integer(c, 1);
}

// EXPIRETIME / PEXPIRETIME: the absolute expiry, -1 without one, -2 without the key.
void expiretime_generic(Impl& s, Client& c, Args& a, bool ms) {
  Db& db = DB(s, c);
  if (s.lookup_read(c, a[1]) == nullptr) return s.integer(c, -2);
  const std::int64_t e = s.get_expire(db, a[1]);
  if (e == -1) return s.integer(c, -1);
  s.integer(c, ms ? e : e / 1000);
}

void cmd_expiretime(Impl& s, Client& c, Args& a) {
  expiretime_generic(s, c, a, false);
}

void cmd_pexpiretime(Impl& s, Client& c, Args& a) {
  expiretime_generic(s, c, a, true);
}

void cmd_ttl(Impl& s, Client& c, Args& a) {
  ttl_generic(s, c, a, false);
}

void cmd_pttl(Impl& s, Client& c, Args& a) {
  ttl_generic(s, c, a, true);
}

}  // namespace lockwire::sim::model

namespace lockwire::sim {

using namespace model;

// Lazy expiry; replicas hide expired keys but never delete them themselves.
bool RedisModel::Impl::expire_if_needed(Db& db, const std::string& key) {
  if (!key_is_expired(db, key)) return false;
  if (replica) return true;
  // During CLIENT PAUSE the dataset stays as it is: expired keys are hidden, not deleted.
  if (paused()) return true;
  delete_expired(db, key);
  return true;
}

void RedisModel::Impl::delete_expired(Db& db, const std::string& key) {
  db_delete(db, key);
  ++expired_keys;
  trace("expired", key);
  notify(NOTIFY_EXPIRED, "expired", key, db_index(db));
  signal_modified(nullptr, db, key);
  if (hooks.propagate) hooks.propagate(db_index(db), Args{"DEL", key});
}

void RedisModel::Impl::active_expire() {
  if (replica) return;
  if (paused()) return;  // as lazy expiry: nothing is deleted during CLIENT PAUSE
  cmd_ms = wall_ms();
  for (auto& db : dbs) {
    int budget = opt.active_expire_keys_per_cycle;
    while (!db.by_time.empty() && budget-- > 0) {
      auto first = *db.by_time.begin();
      if (first.first >= cmd_ms) break;  // expired only when now > when
      delete_expired(db, first.second);
    }
  }
}

}  // namespace lockwire::sim
