// Redis' multi.c: MULTI EXEC DISCARD WATCH UNWATCH and the watched-key bookkeeping.
#include "commands.hpp"

namespace lockwire::sim::model {

void unwatch_all(Impl& s, Client& c) {
  for (auto& w : c.watched) {
    auto it = s.watched_keys.find({w.db, w.key});
    if (it == s.watched_keys.end()) continue;
    std::erase(it->second, c.id);
    if (it->second.empty()) s.watched_keys.erase(it);
  }
  c.watched.clear();
}

void discard_transaction(Impl& s, Client& c) {
  c.queued.clear();
  c.queued_flags = 0;
  c.multi = false;
  c.dirty_exec = false;
  c.dirty_cas = false;
  unwatch_all(s, c);
}

void cmd_multi(Impl& s, Client& c, Args&) {
  if (c.multi) return s.error(c, "MULTI calls can not be nested");
  c.multi = true;
  s.ok(c);
}

void cmd_discard(Impl& s, Client& c, Args&) {
  if (!c.multi) return s.error(c, "DISCARD without MULTI");
  discard_transaction(s, c);
  s.ok(c);
}

void cmd_watch(Impl& s, Client& c, Args& a) {
  if (c.multi) return s.error(c, "WATCH inside MULTI is not allowed");
  if (c.dirty_cas) return s.ok(c);
  for (std::size_t i = 1; i < a.size(); ++i) {
    bool have = false;
    for (auto& w : c.watched)
      if (w.db == c.db && w.key == a[i]) have = true;
    if (have) continue;
    c.watched.push_back({c.db, a[i], s.key_is_expired(DB(s, c), a[i])});
    s.watched_keys[{c.db, a[i]}].push_back(c.id);
  }
  s.ok(c);
}

void cmd_unwatch(Impl& s, Client& c, Args&) {
  unwatch_all(s, c);
  c.dirty_cas = false;
  s.ok(c);
}

void cmd_exec(Impl& s, Client& c, Args&) {
  if (!c.multi) return s.error(c, "EXEC without MULTI");
  for (auto& w : c.watched) {
    if (w.expired) continue;
    Db& db = s.dbs[static_cast<std::size_t>(w.db)];
    if (db.dict.count(w.key) != 0 && s.key_is_expired(db, w.key)) c.dirty_cas = true;
  }
  if (c.dirty_cas || c.dirty_exec) {
    if (c.dirty_exec) {
      s.error(c, "-EXECABORT Transaction discarded because of previous errors.");
    } else {
      s.null_array(c);
    }
    discard_transaction(s, c);
    return;
  }
  unwatch_all(s, c);
  auto queued = std::move(c.queued);
  c.queued.clear();
  c.multi = false;
  c.queued_flags = 0;
  s.array(c, queued.size());
  s.in_exec = true;
  for (auto& q : queued) {
    const CmdDef* top = Impl::lookup_in(s.commands(), q[0]);
    const CmdDef* cmd = top;
    if (top != nullptr && !top->subs.empty()) cmd = Impl::lookup_in(top->subs, q[1]);
    // ACL rules may have changed since the command was queued.
    if (const std::string denied = s.acl_denied(c, *cmd, q, true); !denied.empty()) {
      s.error(c, denied);
      continue;
    }
    s.call(c, *cmd, q);
  }
  s.in_exec = false;
  c.dirty_exec = false;
  c.dirty_cas = false;
}

}  // namespace lockwire::sim::model

namespace lockwire::sim {

using namespace model;

void RedisModel::Impl::touch_watched(Db& db, const std::string& key) {
  if (watched_keys.empty()) return;
  const int idx = db_index(db);
  auto it = watched_keys.find({idx, key});
  if (it == watched_keys.end()) return;
  for (auto id : it->second) {
    auto ci = clients.find(id);
    if (ci == clients.end()) continue;
    Client& cl = ci->second;
    for (auto& w : cl.watched) {
      if (w.db != idx || w.key != key) continue;
      if (w.expired) {
        // Watched while already logically expired: its deletion is no change.
        if (db.dict.find(key) == db.dict.end()) {
          w.expired = false;
          break;
        }
      }
      cl.dirty_cas = true;
      break;
    }
  }
}

void RedisModel::Impl::touch_all_watched_in_db(Db& db) {
  const int idx = db_index(db);
  for (auto& [k, ids] : watched_keys) {
    if (k.first != idx || db.dict.count(k.second) == 0) continue;
    for (auto id : ids)
      if (auto ci = clients.find(id); ci != clients.end()) ci->second.dirty_cas = true;
  }
}

}  // namespace lockwire::sim
