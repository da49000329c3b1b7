// CLIENT subcommands (Redis' clientCommand in networking.c): ID INFO SETNAME GETNAME KILL
// TRACKING CACHING GETREDIR PAUSE UNPAUSE.
#include <algorithm>

#include "commands.hpp"

namespace lockwire::sim::model {

void client_id(Impl& s, Client& c, Args&) {
  s.integer(c, static_cast<std::int64_t>(c.id));
}

// The fields a client can rely on (id, addr, name, db, user, resp) with Redis 7.0's layout; the
// others are placeholders (the simulator keeps no such accounting).
void client_info(Impl& s, Client& c, Args&) {
  std::string t = "id=" + std::to_string(c.id) + " addr=" + c.addr +
                  " laddr=127.0.0.1:6379 fd=8 name=" + c.name +
                  " age=0 idle=0 flags=N db=" + std::to_string(c.db) +
                  " sub=0 psub=0 ssub=0 multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0"
                  " rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=client|info user=" +
                  c.user->name + " redir=-1 resp=" + std::to_string(c.resp) + "\n";
  s.verbatim(c, t);
}

void client_setname(Impl& s, Client& c, Args& a) {
  if (set_name(s, c, a[2])) s.ok(c);
}

void client_getname(Impl& s, Client& c, Args&) {
  if (c.name.empty()) return s.null(c);
  s.bulk(c, c.name);
}

void client_kill(Impl& s, Client& c, Args& a) {
  if (a.size() == 3) {
    for (auto& [id, t] : s.clients) {
      if (t.addr == a[2] && !t.gone) {
        s.close_asap(t);
        return s.ok(c);
      }
    }
    return s.error(c, "No such client");
  }
  std::int64_t want_id = -1;
  bool skipme = true;
  std::string addr;
  for (std::size_t i = 2; i < a.size(); i += 2) {
    if (i + 1 >= a.size()) return s.syntax(c);
    if (ieq(a[i], "ID")) {
      if (!string2ll(a[i + 1], want_id) || want_id <= 0)
        return s.error(c, "client-id should be greater than 0");
    } else if (ieq(a[i], "ADDR")) {
      addr = a[i + 1];
    } else if (ieq(a[i], "SKIPME")) {
      if (ieq(a[i + 1], "yes")) {
        skipme = true;
      } else if (ieq(a[i + 1], "no")) {
        skipme = false;
      } else {
        return s.syntax(c);
      }
    } else {
      return s.syntax(c);
    }
  }
  std::int64_t killed = 0;
  for (auto& [id, t] : s.clients) {
    if (t.gone || t.closing) continue;
    if (want_id > 0 && static_cast<std::int64_t>(id) != want_id) continue;
    if (!addr.empty() && t.addr != addr) continue;
    if (&t == &c && skipme) continue;
    s.close_asap(t);
    ++killed;
  }
  s.integer(c, killed);
}

void client_tracking(Impl& s, Client& c, Args& a) {
  std::int64_t redir = 0;
  bool bcast = false, optin = false, optout = false, noloop = false;
  std::vector<std::string> prefixes;
  for (std::size_t j = 3; j < a.size(); ++j) {
    const std::size_t more = a.size() - 1 - j;
    if (ieq(a[j], "redirect") && more) {
      ++j;
      if (redir != 0) return s.error(c, "A client can only redirect to a single other client");
      if (!string2ll(a[j], redir)) return s.not_int(c);
      auto it = s.clients.find(static_cast<std::uint64_t>(redir));
      if (it == s.clients.end() || it->second.gone)
        return s.error(c, "The client ID you want redirect to does not exist");
    } else if (ieq(a[j], "bcast")) {
      bcast = true;
    } else if (ieq(a[j], "optin")) {
      optin = true;
    } else if (ieq(a[j], "optout")) {
      optout = true;
    } else if (ieq(a[j], "noloop")) {
      noloop = true;
    } else if (ieq(a[j], "prefix") && more) {
      ++j;
      prefixes.push_back(a[j]);
    } else {
      return s.syntax(c);
    }
  }
  if (ieq(a[2], "on")) {
    if (!bcast && !prefixes.empty())
      return s.error(c, "PREFIX option requires BCAST mode to be enabled");
    if (c.tracking && c.bcast != bcast)
      return s.error(c,
                     "You can't switch BCAST mode on/off before disabling tracking for this "
                     "client, and then re-enabling it with a different mode.");
    if (bcast && (optin || optout))
      return s.error(c, "OPTIN and OPTOUT are not compatible with BCAST");
    if (optin && optout) return s.error(c, "You can't specify both OPTIN mode and OPTOUT mode");
    if ((optin && c.optout) || (optout && c.optin))
      return s.error(c,
                     "You can't switch OPTIN/OPTOUT mode before disabling tracking for this "
                     "client, and then re-enabling it with a different mode.");
    if (bcast) {
      for (std::size_t i = 0; i < prefixes.size(); ++i) {
        for (auto& old : c.prefixes) {
          const auto& p = prefixes[i];
          const std::size_t m = std::min(p.size(), old.size());
          if (p.compare(0, m, old, 0, m) == 0)
            return s.error(c, "Prefix '" + std::string(cstr(p)) +
                                  "' overlaps with an existing prefix '" + std::string(cstr(old)) +
                                  "'. Prefixes for a single client must not overlap.");
        }
        for (std::size_t j = i + 1; j < prefixes.size(); ++j) {
          const auto& p = prefixes[i];
          const auto& q = prefixes[j];
          const std::size_t m = std::min(p.size(), q.size());
          if (p.compare(0, m, q, 0, m) == 0)
            return s.error(
                c, "Prefix '" + std::string(cstr(p)) + "' overlaps with another provided prefix '" +
                       std::string(cstr(q)) + "'. Prefixes for a single client must not overlap.");
        }
      }
    }
    c.tracking = true;
    c.bcast = bcast;
    c.optin = optin;
    c.optout = optout;
    c.noloop = noloop;
    c.redirect = static_cast<std::uint64_t>(redir);
    if (bcast) {
      if (prefixes.empty() && c.prefixes.empty()) prefixes.push_back("");
      for (auto& p : prefixes) {
        s.prefix_table[p].clients.insert(c.id);
        if (std::find(c.prefixes.begin(), c.prefixes.end(), p) == c.prefixes.end())
          c.prefixes.push_back(p);
      }
    }
  } else if (ieq(a[2], "off")) {
    s.disable_tracking(c);
  } else {
    return s.syntax(c);
  }
  s.ok(c);
}

void client_caching(Impl& s, Client& c, Args& a) {
  if (!c.tracking)
    return s.error(c,
                   "CLIENT CACHING can be called only when the client is in tracking mode with "
                   "OPTIN or OPTOUT mode enabled");
  if (ieq(a[2], "yes")) {
    if (!c.optin)
      return s.error(c, "CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.");
  } else if (ieq(a[2], "no")) {
    if (!c.optout)
      return s.error(c, "CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.");
  } else {
    return s.syntax(c);
  }
  c.caching = true;
  s.ok(c);
}

void client_getredir(Impl& s, Client& c, Args&) {
  if (!c.tracking) return s.integer(c, -1);
  s.integer(c, static_cast<std::int64_t>(c.redirect));
}

void client_pause(Impl& s, Client& c, Args& a) {
  std::int64_t ms = 0;
  if (!string2ll(a[2], ms)) return s.error(c, "timeout is not an integer or out of range");
  if (ms < 0) return s.error(c, "timeout is negative");
  Impl::Pause mode = Impl::Pause::all;
  if (a.size() == 4) {
    if (ieq(a[3], "write")) {
      mode = Impl::Pause::write;
    } else if (!ieq(a[3], "all")) {
      return s.error(c, "CLIENT PAUSE mode must be WRITE or ALL");
    }
  } else if (a.size() > 4) {
    return s.syntax(c);
  }
  // As Redis, an end past the clock's range wraps (into the past: the pause is lifted at once).
  const auto end = static_cast<std::int64_t>(static_cast<std::uint64_t>(s.wall_ms()) +
                                             static_cast<std::uint64_t>(ms));
  s.pause_clients(end, mode);
  s.ok(c);
}

void client_unpause(Impl& s, Client& c, Args&) {
  s.unpause_clients();  // the held clients run once this turn's input is processed
  s.ok(c);
}

}  // namespace lockwire::sim::model
