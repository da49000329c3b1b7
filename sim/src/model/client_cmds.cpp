// CLIENT subcommands (Redis' clientCommand in networking.c): ID INFO SETNAME GETNAME KILL
// TRACKING CACHING GETREDIR PAUSE UNPAUSE.
#include <algorithm>

#include "commands.hpp"

namespace lockwire::sim::model {

void client_id(Impl& s, Client& c, Args&) {
  s.integer(c, static_cast<std::int64_t>(c.id));
}

namespace {

std::string fullname_of(const Impl& s, const CmdDef* cmd) {
  if (cmd == nullptr) return "NULL";
  for (auto& top : s.commands()) {
    if (&top == cmd) return top.name;
    for (auto& sub : top.subs)
      if (&sub == cmd) return std::string(top.name) + "|" + sub.name;
  }
  return "NULL";
}

}  // namespace

// catClientInfoString: Redis 7.0's fields in its order; the buffer sizes are the model's own
// (it has no reply buffers of Redis' shape), the rest is the client's real state.
std::string client_info_line(const Impl& s, const Client& t) {
  std::string flags;
  if (t.pubsub_mode()) flags += 'P';
  if (t.multi) flags += 'x';
  if (t.blocked || t.postponed) flags += 'b';
  if (t.tracking) flags += 't';
  if (t.tracking && t.redirect != 0 && s.clients.count(t.redirect) == 0) flags += 'R';
  if (t.tracking && t.bcast) flags += 'B';
  if (t.dirty_cas) flags += 'd';
  if (t.closing) flags += 'c';
  if (t.reprocess) flags += 'u';
  if (t.readonly) flags += 'r';
  if (t.no_evict) flags += 'e';
  if (flags.empty()) flags = "N";
  const std::int64_t now_s = s.cmd_ms / 1000;
  std::size_t argv_mem = 0;
  if (&t == s.current) argv_mem = 0;
  std::size_t multi_mem = 0;
  for (auto& q : t.queued)
    for (auto& x : q) multi_mem += x.size();
  const std::size_t qbuf = t.qbuf.size() - t.qpos;
  std::string r = "id=" + std::to_string(t.id) + " addr=" + t.addr + " laddr=" + t.laddr +
                  " fd=" + std::to_string(t.fd) + " name=" + t.name +
                  " age=" + std::to_string(std::max<std::int64_t>(0, now_s - t.ctime_ms / 1000)) +
                  " idle=" +
                  std::to_string(std::max<std::int64_t>(0, now_s - t.last_interaction_ms / 1000)) +
                  " flags=" + flags + " db=" + std::to_string(t.db) +
                  " sub=" + std::to_string(t.channels.size()) +
                  " psub=" + std::to_string(t.patterns.size()) + " ssub=0 multi=" +
                  std::to_string(t.multi ? static_cast<std::int64_t>(t.queued.size()) : -1) +
                  " qbuf=" + std::to_string(qbuf) + " qbuf-free=" +
                  std::to_string(qbuf == 0 ? 0 : 20474) + " argv-mem=" + std::to_string(argv_mem) +
                  " multi-mem=" + std::to_string(multi_mem) + " rbs=1024 rbp=0 obl=0 oll=0 omem=0" +
                  " tot-mem=" + std::to_string(1800 + qbuf + multi_mem) + " events=r cmd=" +
                  fullname_of(s, t.last_cmd) + " user=" + (t.user ? t.user->name : "default") +
                  " redir=" +
                  std::to_string(t.tracking ? static_cast<std::int64_t>(t.redirect) : -1) +
                  " resp=" + std::to_string(t.resp);
  return r;
}

void client_info(Impl& s, Client& c, Args&) {
  s.verbatim(c, client_info_line(s, c) + "\n");
}

void client_list(Impl& s, Client& c, Args& a) {
  std::string out;
  if (a.size() == 4 && ieq(a[2], "type")) {
    int type = -1;  // 0 normal, 1 replica, 2 pubsub, 3 master
    if (ieq(a[3], "normal")) type = 0;
    if (ieq(a[3], "slave") || ieq(a[3], "replica")) type = 1;
    if (ieq(a[3], "pubsub")) type = 2;
    if (ieq(a[3], "master")) type = 3;
    if (type < 0) return s.error(c, "Unknown client type '" + std::string(cstr(a[3])) + "'");
    for (auto& [id, t] : s.clients) {
      if (t.gone) continue;
      const int ct = t.pubsub_mode() ? 2 : 0;
      if (ct == type) out += client_info_line(s, t) + "\n";
    }
  } else if (a.size() > 3 && ieq(a[2], "id")) {
    for (std::size_t j = 3; j < a.size(); ++j) {
      std::int64_t id = 0;
      if (!string2ll(a[j], id)) return s.error(c, "Invalid client ID");
      auto it = s.clients.find(static_cast<std::uint64_t>(id));
      if (it != s.clients.end() && !it->second.gone) out += client_info_line(s, it->second) + "\n";
    }
  } else if (a.size() != 2) {
    return s.syntax(c);
  } else {
    for (auto& [id, t] : s.clients)
      if (!t.gone) out += client_info_line(s, t) + "\n";
  }
  s.verbatim(c, out);
}

void client_trackinginfo(Impl& s, Client& c, Args&) {
  s.map(c, 3);
  s.bulk(c, "flags");
  std::vector<const char*> flags{c.tracking ? "on" : "off"};
  if (c.tracking && c.bcast) flags.push_back("bcast");
  if (c.tracking && c.optin) {
    flags.push_back("optin");
    if (c.caching) flags.push_back("caching-yes");
  }
  if (c.tracking && c.optout) {
    flags.push_back("optout");
    if (c.caching) flags.push_back("caching-no");
  }
  if (c.tracking && c.noloop) flags.push_back("noloop");
  if (c.tracking && c.redirect != 0 && s.clients.count(c.redirect) == 0)
    flags.push_back("broken_redirect");
  s.set_len(c, flags.size());
  for (auto* f : flags) s.bulk(c, f);
  s.bulk(c, "redirect");
  s.integer(c, c.tracking ? static_cast<std::int64_t>(c.redirect) : -1);
  s.bulk(c, "prefixes");
  std::vector<std::string> prefixes = c.bcast ? c.prefixes : std::vector<std::string>{};
  std::sort(prefixes.begin(), prefixes.end());
  s.array(c, prefixes.size());
  for (auto& p : prefixes) s.bulk(c, p);
}

void client_reply(Impl& s, Client& c, Args& a) {
  if (ieq(a[2], "on")) {
    c.reply_off = c.reply_skip = false;
    s.ok(c);
  } else if (ieq(a[2], "off")) {
    c.reply_off = true;
  } else if (ieq(a[2], "skip")) {
    if (!c.reply_off) c.reply_skip_next = true;
  } else {
    s.syntax(c);
  }
}

void client_no_evict(Impl& s, Client& c, Args& a) {
  if (ieq(a[2], "on")) {
    c.no_evict = true;
  } else if (ieq(a[2], "off")) {
    c.no_evict = false;
  } else {
    return s.syntax(c);
  }
  s.ok(c);
}

void client_unblock(Impl& s, Client& c, Args& a) {
  if (a.size() > 4) return subcommand_syntax(s, c, a);
  bool as_error = false;
  if (a.size() == 4) {
    if (ieq(a[3], "timeout")) {
      as_error = false;
    } else if (ieq(a[3], "error")) {
      as_error = true;
    } else {
      return s.error(c, "CLIENT UNBLOCK reason should be TIMEOUT or ERROR");
    }
  }
  std::int64_t id = 0;
  if (!get_ll(s, c, a[2], id)) return;
  auto it = s.clients.find(static_cast<std::uint64_t>(id));
  if (it == s.clients.end() || it->second.gone || !it->second.blocked) return s.integer(c, 0);
  Client& t = it->second;
  if (as_error) {
    s.error(t, "-UNBLOCKED client unblocked via CLIENT UNBLOCK");
  } else if (t.btype != Client::Btype::none) {
    s.null_array(t);
  } else {
    s.integer(t, s.acks_for(t.block_off));
  }
  if (t.btype != Client::Btype::none) {
    s.unblock_keys(t);
  } else {
    t.blocked = false;  // WAIT
    if (!t.reprocess) {
      t.reprocess = true;
      s.reprocess.push_back(t.id);
    }
  }
  s.integer(c, 1);
}

void client_help(Impl& s, Client& c, Args& a) {
  help_reply(s, c, a,
             {"CACHING (YES|NO)",
              "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
              "GETREDIR",
              "    Return the client ID we are redirecting to when tracking is enabled.",
              "GETNAME",
              "    Return the name of the current connection.",
              "ID",
              "    Return the ID of the current connection.",
              "INFO",
              "    Return information about the current client connection.",
              "KILL <ip:port>",
              "    Kill connection made from <ip:port>.",
              "KILL <option> <value> [<option> <value> [...]]",
              "    Kill connections. Options are:",
              "    * ADDR (<ip:port>|<unixsocket>:0)",
              "      Kill connections made from the specified address",
              "    * LADDR (<ip:port>|<unixsocket>:0)",
              "      Kill connections made to specified local address",
              "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
              "      Kill connections by type.",
              "    * USER <username>",
              "      Kill connections authenticated by <username>.",
              "    * SKIPME (YES|NO)",
              "      Skip killing current connection (default: yes).",
              "LIST [options ...]",
              "    Return information about client connections. Options:",
              "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
              "      Return clients of specified type.",
              "UNPAUSE",
              "    Stop the current client pause, resuming traffic.",
              "PAUSE <timeout> [WRITE|ALL]",
              "    Suspend all, or just write, clients for <timeout> milliseconds.",
              "REPLY (ON|OFF|SKIP)",
              "    Control the replies sent to the current connection.",
              "SETNAME <name>",
              "    Assign the name <name> to the current connection.",
              "UNBLOCK <clientid> [TIMEOUT|ERROR]",
              "    Unblock the specified blocked client.",
              "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
              "         [OPTIN] [OPTOUT] [NOLOOP]",
              "    Control server assisted client side caching.",
              "TRACKINGINFO",
              "    Report tracking status for the current connection.",
              "NO-EVICT (ON|OFF)",
              "    Protect current client connection from eviction."});
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
