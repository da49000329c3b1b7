// The simulated Redis 7.0.15. Structure follows the real server's request path (processInputBuffer
// -> processCommand -> call) because reply bytes and error precedence depend on that order.
#include "lockwire/sim/redis_model.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

namespace lockwire::sim {

namespace {

using Args = std::vector<std::string>;
constexpr std::size_t kInlineMax = 64 * 1024;  // PROTO_INLINE_MAX_SIZE
constexpr std::int64_t kLLMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kLLMin = std::numeric_limits<std::int64_t>::min();

// Command flags (subset of Redis' CMD_*).
enum : std::uint32_t {
  F_WRITE = 1u << 0,
  F_READONLY = 1u << 1,
  F_LOADING = 1u << 2,  // allowed while loading
  F_STALE = 1u << 3,
  F_NO_AUTH = 1u << 4,
  F_ALLOW_BUSY = 1u << 5,
  F_PUBSUB = 1u << 6,
  F_NOSCRIPT = 1u << 7,
  F_FAST = 1u << 8,
  F_CLIENT_SUB = 1u << 9,   // a CLIENT subcommand (keeps CLIENT CACHING's one-shot flag)
  F_NOT_QUEUED = 1u << 10,  // runs immediately inside MULTI (EXEC, DISCARD, MULTI, WATCH, ...)
  F_SUB_OK = 1u << 11,      // allowed in RESP2 subscribed mode
  F_PROTECTED = 1u << 12,   // DEBUG: refused unless enable-debug-command
};

std::string lower(std::string_view s) {
  std::string r(s);
  for (auto& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

bool ieq(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

// C string view of an argument: printf("%s") stops at the first NUL.
std::string_view cstr(std::string_view s) {
  const auto z = s.find('\0');
  return z == std::string_view::npos ? s : s.substr(0, z);
}

// Redis' string2ll: strict decimal, no '+', no leading zeros, no spaces, fits in int64.
bool string2ll(std::string_view s, std::int64_t& out) {
  if (s.empty() || s.size() >= 21) return false;
  if (s.size() == 1 && s[0] == '0') {
    out = 0;
    return true;
  }
  std::size_t i = 0;
  bool neg = false;
  if (s[0] == '-') {
    neg = true;
    i = 1;
    if (s.size() == 1) return false;
  }
  if (s[i] < '1' || s[i] > '9') return false;
  std::uint64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    const std::uint64_t d = static_cast<std::uint64_t>(s[i] - '0');
    if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10) return false;
    v = v * 10 + d;
  }
  if (neg) {
    if (v > static_cast<std::uint64_t>(kLLMax) + 1) return false;
    out = v == static_cast<std::uint64_t>(kLLMax) + 1 ? kLLMin : -static_cast<std::int64_t>(v);
  } else {
    if (v > static_cast<std::uint64_t>(kLLMax)) return false;
    out = static_cast<std::int64_t>(v);
  }
  return true;
}

// Redis' string2ld/strtod-based float parsing used by ZADD and score ranges.
bool string2d(std::string_view s, double& out) {
  if (s.empty() || s.size() > 5000) return false;
  if (std::isspace(static_cast<unsigned char>(s[0]))) return false;
  std::string tmp(s);
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(tmp.c_str(), &end);
  if (end != tmp.c_str() + tmp.size() || std::isnan(v)) return false;
  if (errno == ERANGE && (v == HUGE_VAL || v == -HUGE_VAL || v == 0)) return false;
  out = v;
  return true;
}

std::string ll2s(std::int64_t v) {
  return std::to_string(v);
}

std::string d2s(double d) {
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  return buf;
}

// Redis' stringmatchlen (glob-style), case-sensitive.
bool glob_match(std::string_view p, std::string_view s, int nesting = 0) {
  if (nesting > 1000) return false;
  std::size_t pi = 0, si = 0;
  while (pi < p.size() && si <= s.size()) {
    switch (p[pi]) {
      case '*': {
        while (pi + 1 < p.size() && p[pi + 1] == '*') ++pi;
        if (pi + 1 == p.size()) return true;
        for (std::size_t k = si; k <= s.size(); ++k)
          if (glob_match(p.substr(pi + 1), s.substr(k), nesting + 1)) return true;
        return false;
      }
      case '?':
        if (si >= s.size()) return false;
        ++si;
        break;
      case '[': {
        if (si >= s.size()) return false;
        ++pi;
        const bool neg = pi < p.size() && p[pi] == '^';
        if (neg) ++pi;
        bool match = false;
        while (true) {
          if (pi < p.size() && p[pi] == '\\' && pi + 1 < p.size()) {
            ++pi;
            if (p[pi] == s[si]) match = true;
          } else if (pi >= p.size() || p[pi] == ']') {
            break;
          } else if (pi + 2 < p.size() && p[pi + 1] == '-') {
            char a = p[pi], b = p[pi + 2];
            if (a > b) std::swap(a, b);
            pi += 2;
            if (s[si] >= a && s[si] <= b) match = true;
          } else if (p[pi] == s[si]) {
            match = true;
          }
          ++pi;
        }
        if (pi >= p.size()) --pi;  // unterminated class: treat end as ']'
        if (neg) match = !match;
        if (!match) return false;
        ++si;
        break;
      }
      case '\\':
        if (pi + 1 < p.size()) ++pi;
        [[fallthrough]];
      default:
        if (si >= s.size() || p[pi] != s[si]) return false;
        ++si;
        break;
    }
    ++pi;
    if (si == s.size()) {
      while (pi < p.size() && p[pi] == '*') ++pi;
      break;
    }
  }
  return pi == p.size() && si == s.size();
}

// Redis' sdssplitargs: inline command tokenizer with "..." and '...' quoting.
bool split_args(std::string_view line, Args& out) {
  out.clear();
  std::size_t i = 0;
  auto hexval = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return 0;
  };
  auto ishex = [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; };
  while (true) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i >= line.size()) return true;
    bool inq = false, insq = false, done = false;
    std::string cur;
    while (!done) {
      if (inq) {
        if (i >= line.size()) return false;
        if (line[i] == '\\' && i + 3 < line.size() && line[i + 1] == 'x' && ishex(line[i + 2]) &&
            ishex(line[i + 3])) {
          cur.push_back(static_cast<char>(hexval(line[i + 2]) * 16 + hexval(line[i + 3])));
          i += 3;
        } else if (line[i] == '\\' && i + 1 < line.size()) {
          ++i;
          char c = line[i];
          switch (c) {
            case 'n':
              c = '\n';
              break;
            case 'r':
              c = '\r';
              break;
            case 't':
              c = '\t';
              break;
            case 'b':
              c = '\b';
              break;
            case 'a':
              c = '\a';
              break;
            default:
              break;
          }
          cur.push_back(c);
        } else if (line[i] == '"') {
          if (i + 1 < line.size() && !std::isspace(static_cast<unsigned char>(line[i + 1])))
            return false;
          done = true;
        } else {
          cur.push_back(line[i]);
        }
      } else if (insq) {
        if (i >= line.size()) return false;
        if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '\'') {
          ++i;
          cur.push_back('\'');
        } else if (line[i] == '\'') {
          if (i + 1 < line.size() && !std::isspace(static_cast<unsigned char>(line[i + 1])))
            return false;
          done = true;
        } else {
          cur.push_back(line[i]);
        }
      } else {
        if (i >= line.size()) {
          done = true;
          break;
        }
        const char c = line[i];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\0') {
          done = true;
        } else if (c == '"') {
          inq = true;
        } else if (c == '\'') {
          insq = true;
        } else {
          cur.push_back(c);
        }
      }
      if (i < line.size()) ++i;
    }
    out.push_back(std::move(cur));
  }
}

std::string map_newlines(std::string s) {
  for (auto& c : s)
    if (c == '\r' || c == '\n') c = ' ';
  return s;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

struct Value {
  enum class Kind : std::uint8_t { string, hash, set, zset };
  Kind kind = Kind::string;
  std::string str;
  std::vector<std::pair<std::string, std::string>> hash;  // insertion order, like a listpack
  std::vector<std::string> set;                           // see set_order()
  std::map<std::string, double> zscores;
  std::set<std::pair<double, std::string>> zorder;
};

struct Db {
  std::unordered_map<std::string, Value> dict;
  std::unordered_map<std::string, std::int64_t> expires;  // ms since epoch
  std::set<std::pair<std::int64_t, std::string>> by_time;
};

struct RedisSnapshot {
  std::vector<Db> dbs;
};

struct Client {
  std::uint64_t id = 0;
  std::string addr;
  int resp = 2;
  int db = 0;
  std::string name;
  bool authenticated = true;
  bool closing = false;  // CLOSE_AFTER_REPLY: no further input is processed
  bool gone = false;
  // query parsing
  std::string qbuf;
  std::size_t qpos = 0;
  int reqtype = 0;  // 0 unknown, 1 inline, 2 multibulk
  std::int64_t multibulklen = 0;
  std::int64_t bulklen = -1;
  Args argv;
  std::size_t argv_bytes = 0;
  // WAIT: blocked until replicas acknowledge `woff` (the client's last write offset)
  std::int64_t woff = 0;
  bool blocked = false;
  std::int64_t block_num = 0;
  std::int64_t block_off = 0;
  std::int64_t block_deadline_ms = 0;  // 0: forever
  // transactions
  bool multi = false;
  bool dirty_exec = false;
  bool dirty_cas = false;
  std::vector<Args> queued;
  struct Watched {
    int db;
    std::string key;
    bool expired;
  };
  std::vector<Watched> watched;
  // pub/sub (subscription order)
  std::vector<std::string> channels;
  std::vector<std::string> patterns;
  // tracking
  bool tracking = false, bcast = false, optin = false, optout = false, noloop = false;
  bool caching = false;
  std::uint64_t redirect = 0;
  std::vector<std::string> prefixes;
  // output
  std::string out;
  bool dirty = false;
  [[nodiscard]] bool pubsub_mode() const { return !channels.empty() || !patterns.empty(); }
};

struct CmdDef;
using Handler = void (*)(struct RedisModel::Impl&, Client&, Args&);

struct CmdDef {
  const char* name;
  int arity;
  std::uint32_t flags;
  Handler fn;
  int first_key, last_key, step;  // key positions for tracking (0: none)
  std::vector<CmdDef> subs;       // container commands (CLIENT)
};

struct RedisModel::Impl {
  Hooks hooks;
  Rng rng;
  RedisModelOptions opt;
  std::vector<Db> dbs;
  std::map<std::uint64_t, Client> clients;
  std::uint64_t next_client_id = 3;  // the real server has used a couple for itself at startup
  std::uint64_t processed = 0;
  bool loading = false, busy = false, replica = false;
  std::string master_host;
  int master_port = 0;
  std::int64_t repl_offset = 0;
  std::vector<std::pair<std::string, std::int64_t>> replica_acks;
  // time
  std::int64_t cmd_ms = 0;  // frozen per command (and per EXEC), like server.mstime
  bool in_call = false;
  bool in_exec = false;
  Client* current = nullptr;
  std::vector<std::string> pending_self_keys;  // invalidations for `current`, sent after it
  bool pending_self_flush = false;
  // pub/sub
  std::map<std::string, std::vector<std::uint64_t>> channels;
  std::map<std::string, std::vector<std::uint64_t>> patterns;
  // tracking
  std::map<std::string, std::set<std::uint64_t>> tracking_table;
  struct Bcast {
    std::set<std::uint64_t> clients;
    std::map<std::string, std::uint64_t> keys;  // key -> client that modified it last
  };
  std::map<std::string, Bcast> prefix_table;
  // pause
  std::int64_t pause_until_ms = 0;
  bool pause_write_only = false;
  std::vector<std::uint64_t> dirty_clients;

  static const std::vector<CmdDef>& table();

  Impl(Hooks h, Rng r, RedisModelOptions o)
      : hooks(std::move(h)),
        rng(std::move(r)),
        opt(std::move(o)),
        dbs(static_cast<std::size_t>(std::max(1, opt.databases))) {}

  std::int64_t wall_ms() const { return hooks.wall_us ? hooks.wall_us() / 1000 : 0; }
  void trace(std::string_view what, std::string_view detail) {
    if (hooks.trace) hooks.trace(what, detail);
  }

  // ---- output ----
  void mark(Client& c) {
    if (!c.dirty) {
      c.dirty = true;
      dirty_clients.push_back(c.id);
    }
  }
  void raw(Client& c, std::string_view s) {
    c.out.append(s);
    mark(c);
  }
  void ok(Client& c) { raw(c, "+OK\r\n"); }
  void status(Client& c, std::string_view s) {
    c.out.push_back('+');
    c.out.append(s);
    c.out.append("\r\n");
    mark(c);
  }
  // Error text without the leading '-' adds "ERR "; embedded CR/LF become spaces.
  void error(Client& c, std::string_view msg) {
    std::string m = map_newlines(std::string(msg));
    if (m.empty() || m[0] != '-') m = "-ERR " + m;
    c.out.append(m);
    c.out.append("\r\n");
    mark(c);
  }
  void integer(Client& c, std::int64_t v) {
    c.out.push_back(':');
    c.out.append(ll2s(v));
    c.out.append("\r\n");
    mark(c);
  }
  void bulk(Client& c, std::string_view s) {
    c.out.push_back('$');
    c.out.append(ll2s(static_cast<std::int64_t>(s.size())));
    c.out.append("\r\n");
    c.out.append(s);
    c.out.append("\r\n");
    mark(c);
  }
  void null(Client& c) { raw(c, c.resp == 2 ? "$-1\r\n" : "_\r\n"); }
  void null_array(Client& c) { raw(c, c.resp == 2 ? "*-1\r\n" : "_\r\n"); }
  void agg(Client& c, char t, std::size_t n) {
    c.out.push_back(t);
    c.out.append(ll2s(static_cast<std::int64_t>(n)));
    c.out.append("\r\n");
    mark(c);
  }
  void array(Client& c, std::size_t n) { agg(c, '*', n); }
  void map(Client& c, std::size_t n) {
    if (c.resp == 2) {
      agg(c, '*', n * 2);
    } else {
      agg(c, '%', n);
    }
  }
  void set_len(Client& c, std::size_t n) { agg(c, c.resp == 2 ? '*' : '~', n); }
  void push(Client& c, std::size_t n) { agg(c, c.resp == 2 ? '*' : '>', n); }
  void dbl(Client& c, double d) {
    if (c.resp == 2) {
      bulk(c, d2s(d));
    } else {
      c.out.push_back(',');
      c.out.append(d2s(d));
      c.out.append("\r\n");
      mark(c);
    }
  }
  void wrong_args(Client& c, std::string_view fullname) {
    error(c, "wrong number of arguments for '" + std::string(fullname) + "' command");
  }
  void syntax(Client& c) { error(c, "syntax error"); }
  void not_int(Client& c) { error(c, "value is not an integer or out of range"); }
  void wrongtype(Client& c) {
    raw(c, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
  }
  void expire_err(Client& c, std::string_view cmd) {
    error(c, "invalid expire time in '" + std::string(cmd) + "' command");
  }

  // ---- keyspace ----
  bool key_is_expired(Db& db, const std::string& key) const {
    auto it = db.expires.find(key);
    if (it == db.expires.end()) return false;
    if (loading) return false;
    return it->second < cmd_ms;  // Redis: expired when now > when (keyIsExpired)
  }
  void remove_expire(Db& db, const std::string& key) {
    auto it = db.expires.find(key);
    if (it == db.expires.end()) return;
    db.by_time.erase({it->second, key});
    db.expires.erase(it);
  }
  void set_expire(Db& db, const std::string& key, std::int64_t when) {
    remove_expire(db, key);
    db.expires[key] = when;
    db.by_time.insert({when, key});
  }
  std::int64_t get_expire(Db& db, const std::string& key) {
    auto it = db.expires.find(key);
    return it == db.expires.end() ? -1 : it->second;
  }
  void db_delete(Db& db, const std::string& key) {
    remove_expire(db, key);
    db.dict.erase(key);
  }
  int db_index(const Db& db) const { return static_cast<int>(&db - dbs.data()); }

  // Lazy expiry; replicas hide expired keys but never delete them themselves.
  bool expire_if_needed(Db& db, const std::string& key) {
    if (!key_is_expired(db, key)) return false;
    if (replica) return true;
    delete_expired(db, key);
    return true;
  }
  void delete_expired(Db& db, const std::string& key) {
    db_delete(db, key);
    trace("expired", key);
    signal_modified(nullptr, db, key);
    if (hooks.propagate) hooks.propagate(db_index(db), Args{"DEL", key});
  }
  Value* lookup(Db& db, const std::string& key) {
    if (expire_if_needed(db, key)) return nullptr;
    auto it = db.dict.find(key);
    return it == db.dict.end() ? nullptr : &it->second;
  }
  Value* lookup(Client& c, const std::string& key) { return lookup(dbs[c.db], key); }

  // ---- WATCH / tracking ----
  void touch_watched(Db& db, const std::string& key) {
    const int idx = db_index(db);
    for (auto& [id, cl] : clients) {
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
  void touch_all_watched_in_db(Db& db) {
    const int idx = db_index(db);
    for (auto& [id, cl] : clients)
      for (auto& w : cl.watched)
        if (w.db == idx && db.dict.count(w.key) != 0) cl.dirty_cas = true;
  }
  void signal_modified(Client* by, Db& db, const std::string& key) {
    touch_watched(db, key);
    tracking_invalidate(by, key);
    trace("key", key);
  }
  void send_tracking(Client& c, const std::string* key, const std::vector<std::string>* keys,
                     bool null_all) {
    Client* target = &c;
    bool redirected = false;
    if (c.redirect != 0) {
      auto it = clients.find(c.redirect);
      if (it == clients.end() || it->second.gone) {
        if (c.resp > 2) {
          push(c, 2);
          bulk(c, "tracking-redir-broken");
          integer(c, static_cast<std::int64_t>(c.redirect));
        }
        return;
      }
      target = &it->second;
      redirected = true;
    }
    if (target->resp > 2) {
      push(*target, 2);
      bulk(*target, "invalidate");
    } else if (redirected && target->pubsub_mode()) {
      push(*target, 3);
      bulk(*target, "message");
      bulk(*target, "__redis__:invalidate");
    } else {
      return;
    }
    if (null_all) {
      null(*target);
    } else if (key != nullptr) {
      array(*target, 1);
      bulk(*target, *key);
    } else {
      array(*target, keys->size());
      for (auto& k : *keys) bulk(*target, k);
    }
  }
  void tracking_invalidate(Client* by, const std::string& key) {
    if (!prefix_table.empty()) {
      for (auto& [prefix, bc] : prefix_table) {
        if (key.compare(0, prefix.size(), prefix) == 0) bc.keys[key] = by ? by->id : 0;
      }
    }
    auto it = tracking_table.find(key);
    if (it == tracking_table.end()) return;
    auto ids = std::move(it->second);
    tracking_table.erase(it);
    for (auto id : ids) {
      auto ci = clients.find(id);
      if (ci == clients.end()) continue;
      Client& t = ci->second;
      if (!t.tracking || t.bcast || t.gone) continue;
      if (t.noloop && &t == current) continue;
      if (&t == current && in_call) {
        pending_self_keys.push_back(key);
        continue;
      }
      send_tracking(t, &key, nullptr, false);
    }
  }
  void flush_pending_self() {
    if (current == nullptr) return;
    auto keys = std::move(pending_self_keys);
    pending_self_keys.clear();
    const bool fl = pending_self_flush;
    pending_self_flush = false;
    if (current->gone) return;
    for (auto& k : keys) send_tracking(*current, &k, nullptr, false);
    if (fl) send_tracking(*current, nullptr, nullptr, true);
  }
  void tracking_on_flush() {
    for (auto& [id, cl] : clients) {
      if (!cl.tracking || cl.gone) continue;
      if (&cl == current && in_call) {
        pending_self_flush = true;
      } else {
        send_tracking(cl, nullptr, nullptr, true);
      }
    }
    tracking_table.clear();
  }
  // BCAST: once per event-loop turn, like beforeSleep().
  void broadcast_invalidations() {
    for (auto& [prefix, bc] : prefix_table) {
      if (bc.keys.empty()) continue;
      for (auto id : bc.clients) {
        auto ci = clients.find(id);
        if (ci == clients.end() || ci->second.gone) continue;
        Client& t = ci->second;
        std::vector<std::string> keys;
        for (auto& [k, by] : bc.keys)
          if (!(t.noloop && by == t.id)) keys.push_back(k);
        if (!keys.empty()) send_tracking(t, nullptr, &keys, false);
      }
      bc.keys.clear();
    }
  }
  void remember_keys(Client& c, const CmdDef& cmd, const Args& a) {
    if (!c.tracking || c.bcast) return;
    if (c.optin && !c.caching) return;
    if (c.optout && c.caching) return;
    if (cmd.first_key <= 0) return;
    const int argc = static_cast<int>(a.size());
    const int last = cmd.last_key < 0 ? argc + cmd.last_key : cmd.last_key;
    for (int i = cmd.first_key; i <= last && i < argc; i += cmd.step)
      tracking_table[a[static_cast<std::size_t>(i)]].insert(c.id);
  }
  void disable_tracking(Client& c) {
    if (!c.tracking) return;
    if (c.bcast) {
      std::vector<std::string> ps = c.prefixes.empty() ? std::vector<std::string>{""} : c.prefixes;
      for (auto& p : ps) {
        auto it = prefix_table.find(p);
        if (it == prefix_table.end()) continue;
        it->second.clients.erase(c.id);
        if (it->second.clients.empty()) prefix_table.erase(it);
      }
    }
    c.tracking = c.bcast = c.optin = c.optout = c.noloop = c.caching = false;
    c.redirect = 0;
    c.prefixes.clear();
  }

  // ---- pub/sub ----
  std::size_t sub_count(const Client& c) const { return c.channels.size() + c.patterns.size(); }
  void pubsub_reply(Client& c, std::string_view kind, const std::string* name, std::size_t count) {
    push(c, 3);
    bulk(c, kind);
    if (name != nullptr) {
      bulk(c, *name);
    } else {
      null(c);
    }
    integer(c, static_cast<std::int64_t>(count));
  }
  bool unsubscribe(Client& c, const std::string& ch, bool notify) {
    auto it = std::find(c.channels.begin(), c.channels.end(), ch);
    bool removed = false;
    if (it != c.channels.end()) {
      c.channels.erase(it);
      auto& v = channels[ch];
      v.erase(std::remove(v.begin(), v.end(), c.id), v.end());
      if (v.empty()) channels.erase(ch);
      removed = true;
    }
    if (notify) pubsub_reply(c, "unsubscribe", &ch, sub_count(c));
    return removed;
  }
  bool punsubscribe(Client& c, const std::string& p, bool notify) {
    auto it = std::find(c.patterns.begin(), c.patterns.end(), p);
    bool removed = false;
    if (it != c.patterns.end()) {
      c.patterns.erase(it);
      auto& v = patterns[p];
      v.erase(std::remove(v.begin(), v.end(), c.id), v.end());
      if (v.empty()) patterns.erase(p);
      removed = true;
    }
    if (notify) pubsub_reply(c, "punsubscribe", &p, sub_count(c));
    return removed;
  }
  void unsubscribe_all(Client& c, bool notify) {
    if (c.channels.empty() && notify) pubsub_reply(c, "unsubscribe", nullptr, sub_count(c));
    auto chs = c.channels;
    for (auto& ch : chs) unsubscribe(c, ch, notify);
  }
  void punsubscribe_all(Client& c, bool notify) {
    if (c.patterns.empty() && notify) pubsub_reply(c, "punsubscribe", nullptr, sub_count(c));
    auto ps = c.patterns;
    for (auto& p : ps) punsubscribe(c, p, notify);
  }
  std::int64_t publish(const std::string& ch, const std::string& msg) {
    std::int64_t n = 0;
    if (auto it = channels.find(ch); it != channels.end()) {
      for (auto id : it->second) {
        Client& t = clients.at(id);
        push(t, 3);
        bulk(t, "message");
        bulk(t, ch);
        bulk(t, msg);
        ++n;
      }
    }
    for (auto& [pat, ids] : patterns) {
      if (!glob_match(pat, ch)) continue;
      for (auto id : ids) {
        Client& t = clients.at(id);
        push(t, 4);
        bulk(t, "pmessage");
        bulk(t, pat);
        bulk(t, ch);
        bulk(t, msg);
        ++n;
      }
    }
    trace("publish", ch);
    return n;
  }

  // ---- connection lifecycle ----
  void free_client(Client& c) {
    c.gone = true;
    unsubscribe_all(c, false);
    punsubscribe_all(c, false);
    disable_tracking(c);
    c.watched.clear();
  }

  // ---- request parsing ----
  void protocol_error(Client& c, std::string_view msg) {
    error(c, "Protocol error: " + std::string(msg));
    c.closing = true;
  }
  // Returns true when argv holds a complete command.
  bool parse_inline(Client& c) {
    const std::string_view buf(c.qbuf.data() + c.qpos, c.qbuf.size() - c.qpos);
    const auto nl = buf.find('\n');
    if (nl == std::string_view::npos) {
      if (buf.size() > kInlineMax) protocol_error(c, "too big inline request");
      return false;
    }
    std::string_view line = buf.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!split_args(line, c.argv)) {
      protocol_error(c, "unbalanced quotes in request");
      return false;
    }
    c.qpos += nl + 1;
    return true;
  }
  bool parse_multibulk(Client& c) {
    if (c.multibulklen == 0) {
      const std::string_view buf(c.qbuf.data() + c.qpos, c.qbuf.size() - c.qpos);
      const auto cr = buf.find('\r');
      if (cr == std::string_view::npos) {
        if (buf.size() > kInlineMax) protocol_error(c, "too big mbulk count string");
        return false;
      }
      if (cr + 2 > buf.size()) return false;
      std::int64_t ll = 0;
      const bool okn = string2ll(buf.substr(1, cr - 1), ll);
      if (!okn || ll > std::numeric_limits<int>::max()) {
        protocol_error(c, "invalid multibulk length");
        return false;
      }
      if (ll > 10 && !c.authenticated) {
        protocol_error(c, "unauthenticated multibulk length");
        return false;
      }
      c.qpos += cr + 2;
      if (ll <= 0) return true;  // empty command: skipped by the caller
      c.multibulklen = ll;
      c.argv.clear();
      c.argv_bytes = 0;
      c.argv.reserve(static_cast<std::size_t>(std::min<std::int64_t>(ll, 1024)));
    }
    while (c.multibulklen > 0) {
      if (c.bulklen == -1) {
        const std::string_view buf(c.qbuf.data() + c.qpos, c.qbuf.size() - c.qpos);
        const auto cr = buf.find('\r');
        if (cr == std::string_view::npos) {
          if (buf.size() > kInlineMax) protocol_error(c, "too big bulk count string");
          return false;
        }
        if (cr + 2 > buf.size()) return false;
        if (buf[0] != '$') {
          protocol_error(c, std::string("expected '$', got '") + buf[0] + "'");
          return false;
        }
        std::int64_t ll = 0;
        const bool okn = string2ll(buf.substr(1, cr - 1), ll);
        if (!okn || ll < 0 || static_cast<std::uint64_t>(ll) > opt.max_bulk) {
          protocol_error(c, "invalid bulk length");
          return false;
        }
        if (ll > 16384 && !c.authenticated) {
          protocol_error(c, "unauthenticated bulk length");
          return false;
        }
        c.qpos += cr + 2;
        c.bulklen = ll;
      }
      if (c.qbuf.size() - c.qpos < static_cast<std::size_t>(c.bulklen) + 2) return false;
      c.argv.emplace_back(c.qbuf.data() + c.qpos, static_cast<std::size_t>(c.bulklen));
      // Arguments count against the query buffer limit too, so a huge count of tiny arguments
      // cannot allocate without bound (Redis closes such clients as well).
      c.argv_bytes += static_cast<std::size_t>(c.bulklen) + sizeof(std::string);
      if (c.argv_bytes > opt.max_query_bytes) {
        trace("client-limit", "query buffer limit reached");
        c.closing = true;
        return false;
      }
      c.qpos += static_cast<std::size_t>(c.bulklen) + 2;  // the CRLF is skipped unchecked
      c.bulklen = -1;
      --c.multibulklen;
    }
    return true;
  }

  bool is_paused_for(const CmdDef* cmd) {
    if (pause_until_ms == 0) return false;
    if (wall_ms() >= pause_until_ms) {
      pause_until_ms = 0;
      return false;
    }
    if (cmd == nullptr) return !pause_write_only;
    if (!pause_write_only) return true;
    return (cmd->flags & F_WRITE) != 0;
  }

  void process_input(Client& c) {
    while (!c.closing && !c.gone && !c.blocked && c.qpos < c.qbuf.size()) {
      if (c.reqtype == 0) c.reqtype = c.qbuf[c.qpos] == '*' ? 2 : 1;
      const std::size_t before = c.qpos;
      const bool complete = c.reqtype == 1 ? parse_inline(c) : parse_multibulk(c);
      if (!complete) {
        if (c.closing) break;
        // A paused client keeps its unparsed bytes; otherwise wait for more.
        break;
      }
      c.reqtype = 0;
      if (c.argv.empty()) continue;
      const CmdDef* cmd = find_command(c.argv);
      if (pause_until_ms != 0 && is_paused_for(cmd)) {
        // Leave the command unexecuted: rewind so that unpause replays it.
        c.qpos = before;
        c.argv.clear();
        c.multibulklen = 0;
        c.bulklen = -1;
        break;
      }
      Args argv = std::move(c.argv);
      c.argv.clear();
      process_command(c, argv);
    }
    if (c.qpos > 0 && (c.qpos == c.qbuf.size() || c.qpos > 4096)) {
      c.qbuf.erase(0, c.qpos);
      c.qpos = 0;
    }
  }

  static const CmdDef* lookup_in(const std::vector<CmdDef>& t, std::string_view name) {
    for (auto& d : t)
      if (ieq(d.name, name)) return &d;
    return nullptr;
  }
  const CmdDef* find_command(const Args& a) {
    const CmdDef* d = lookup_in(table(), a[0]);
    if (d != nullptr && !d->subs.empty() && a.size() >= 2) {
      const CmdDef* s = lookup_in(d->subs, a[1]);
      return s;
    }
    return d;
  }

  void reject(Client& c, const std::string& msg) {
    if (c.multi) c.dirty_exec = true;
    error(c, msg);
  }

  void process_command(Client& c, Args& a) {
    ++processed;
    cmd_ms = wall_ms();
    const CmdDef* top = lookup_in(table(), a[0]);
    const CmdDef* cmd = top;
    std::string fullname = top ? top->name : "";
    if (top != nullptr && !top->subs.empty()) {
      if (a.size() >= 2) {
        cmd = lookup_in(top->subs, a[1]);
        if (cmd == nullptr) {
          std::string up(top->name);
          for (auto& ch : up) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
          reject(c, "unknown subcommand '" + std::string(cstr(a[1]).substr(0, 128)) + "'. Try " +
                        up + " HELP.");
          return;
        }
        fullname = std::string(top->name) + "|" + cmd->name;
      }
    }
    if (top == nullptr) {
      std::string args;
      for (std::size_t i = 1; i < a.size() && args.size() < 128; ++i) {
        args += "'" + std::string(cstr(a[i]).substr(0, 128 - args.size())) + "' ";
      }
      reject(c, "unknown command '" + std::string(cstr(a[0]).substr(0, 128)) +
                    "', with args beginning with: " + args);
      return;
    }
    const int argc = static_cast<int>(a.size());
    if ((cmd->arity > 0 && cmd->arity != argc) || (argc < -cmd->arity)) {
      reject(c, "wrong number of arguments for '" + fullname + "' command");
      return;
    }
    if ((cmd->flags & F_PROTECTED) && !opt.enable_debug_command) {
      reject(c,
             "DEBUG command not allowed. If the enable-debug-command option is set to \"local\", "
             "you can run it from a local connection, otherwise you need to set this option in "
             "the configuration file, and then restart the server.");
      return;
    }
    if (!c.authenticated && !(cmd->flags & F_NO_AUTH)) {
      if (c.multi) c.dirty_exec = true;
      raw(c, "-NOAUTH Authentication required.\r\n");
      return;
    }
    if (replica && (cmd->flags & F_WRITE)) {
      if (c.multi) c.dirty_exec = true;
      raw(c, "-READONLY You can't write against a read only replica.\r\n");
      return;
    }
    if (c.pubsub_mode() && c.resp == 2) {
      if (!(cmd->flags & F_SUB_OK)) {
        reject(c, "Can't execute '" + fullname +
                      "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are "
                      "allowed in this context");
        return;
      }
    }
    if (loading && !(cmd->flags & F_LOADING)) {
      if (c.multi) c.dirty_exec = true;
      raw(c, "-LOADING Redis is loading the dataset in memory\r\n");
      return;
    }
    if (busy && !(cmd->flags & F_ALLOW_BUSY)) {
      if (c.multi) c.dirty_exec = true;
      raw(c,
          "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN "
          "NOSAVE.\r\n");
      return;
    }
    if (c.multi && !(cmd->flags & F_NOT_QUEUED)) {
      c.queued.push_back(a);
      raw(c, "+QUEUED\r\n");
      return;
    }
    call(c, *cmd, a);
  }

  void call(Client& c, const CmdDef& cmd, Args& a) {
    Client* prev = current;
    const bool prev_in_call = in_call;
    current = &c;
    in_call = true;
    const std::int64_t before_offset = repl_offset;
    (void)before_offset;
    if (hooks.trace) {
      std::string line;
      for (auto& s : a) {
        if (!line.empty()) line.push_back(' ');
        line.append(s.size() > 64 ? s.substr(0, 64) + "..." : s);
      }
      trace("cmd", line);
    }
    cmd.fn(*this, c, a);
    if (cmd.flags & F_READONLY) remember_keys(c, cmd, a);
    if (!c.multi && !(cmd.flags & F_CLIENT_SUB)) c.caching = false;
    in_call = prev_in_call;
    if (!in_call) flush_pending_self();
    current = prev;
  }

  void propagate(Client& c, const Args& a) {
    std::size_t bytes = 0;
    for (auto& s : a) bytes += s.size() + 16;
    repl_offset += static_cast<std::int64_t>(bytes);
    c.woff = repl_offset;
    if (hooks.propagate) hooks.propagate(c.db, a);
  }

  void flush_outputs() {
    broadcast_invalidations();
    auto ids = std::move(dirty_clients);
    dirty_clients.clear();
    for (auto id : ids) {
      auto it = clients.find(id);
      if (it == clients.end()) continue;
      Client& c = it->second;
      c.dirty = false;
      if (c.gone) continue;
      if (!c.out.empty()) {
        std::string out;
        out.swap(c.out);
        if (hooks.write) hooks.write(id, out);
      }
    }
    // Closing after output, in id order for determinism.
    std::vector<std::uint64_t> to_close;
    for (auto& [id, c] : clients)
      if (c.closing && !c.gone) to_close.push_back(id);
    for (auto id : to_close) {
      Client& c = clients.at(id);
      free_client(c);
      clients.erase(id);
      if (hooks.close) hooks.close(id);
    }
  }

  std::int64_t acks_for(std::int64_t off) const {
    std::int64_t n = 0;
    for (auto& [addr, o] : replica_acks)
      if (o >= off) ++n;
    return n;
  }
  // Unblocks WAITers whose replicas caught up or whose timeout passed, then runs their input.
  void check_blocked() {
    const std::int64_t now = wall_ms();
    std::vector<std::uint64_t> ready;
    for (auto& [id, c] : clients) {
      if (!c.blocked || c.gone) continue;
      const std::int64_t acked = acks_for(c.block_off);
      if (acked >= c.block_num || (c.block_deadline_ms != 0 && now >= c.block_deadline_ms)) {
        c.blocked = false;
        integer(c, acked);
        ready.push_back(id);
      }
    }
    for (auto id : ready) {
      auto it = clients.find(id);
      if (it != clients.end()) process_input(it->second);
    }
  }
  std::int64_t next_deadline_ms() const {
    std::int64_t best = -1;
    for (auto& [id, c] : clients)
      if (c.blocked && c.block_deadline_ms != 0 && (best < 0 || c.block_deadline_ms < best))
        best = c.block_deadline_ms;
    return best;
  }

  void active_expire() {
    if (replica) return;
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
};

// ---------------------------------------------------------------------------------------------
// Command implementations.

namespace {

using Impl = RedisModel::Impl;

Db& DB(Impl& s, Client& c) {
  return s.dbs[static_cast<std::size_t>(c.db)];
}

bool get_ll(Impl& s, Client& c, const std::string& arg, std::int64_t& v,
            const char* msg = nullptr) {
  if (string2ll(arg, v)) return true;
  if (msg != nullptr) {
    s.error(c, msg);
  } else {
    s.not_int(c);
  }
  return false;
}

// ---- connection ----
void cmd_ping(Impl& s, Client& c, Args& a) {
  if (a.size() > 2) return s.wrong_args(c, "ping");
  if (c.pubsub_mode() && c.resp == 2) {
    s.array(c, 2);
    s.bulk(c, "pong");
    s.bulk(c, a.size() == 2 ? a[1] : std::string());
    return;
  }
  if (a.size() == 1) return s.raw(c, "+PONG\r\n");
  s.bulk(c, a[1]);
}
void cmd_echo(Impl& s, Client& c, Args& a) {
  s.bulk(c, a[1]);
}
void cmd_select(Impl& s, Client& c, Args& a) {
  std::int64_t id = 0;
  if (!string2ll(a[1], id) || id < std::numeric_limits<int>::min() ||
      id > std::numeric_limits<int>::max())
    return s.not_int(c);
  if (id < 0 || id >= static_cast<std::int64_t>(s.dbs.size()))
    return s.error(c, "DB index is out of range");
  c.db = static_cast<int>(id);
  s.ok(c);
}
bool auth_ok(Impl& s, std::string_view user, std::string_view pass) {
  if (user != "default") return false;
  return s.opt.requirepass.empty() || pass == s.opt.requirepass;
}
void cmd_auth(Impl& s, Client& c, Args& a) {
  if (a.size() > 3) return s.syntax(c);
  std::string user = "default", pass;
  if (a.size() == 2) {
    if (s.opt.requirepass.empty())
      return s.error(c,
                     "AUTH <password> called without any password configured for the default "
                     "user. Are you sure your configuration is correct?");
    pass = a[1];
  } else {
    user = a[1];
    pass = a[2];
  }
  if (!auth_ok(s, user, pass))
    return s.raw(c, "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
  c.authenticated = true;
  s.ok(c);
}
bool valid_name(std::string_view n) {
  for (unsigned char ch : n)
    if (ch < '!' || ch > '~') return false;
  return true;
}
bool set_name(Impl& s, Client& c, const std::string& n) {
  if (!valid_name(n)) {
    s.error(c, "Client names cannot contain spaces, newlines or special characters.");
    return false;
  }
  c.name = n;
  return true;
}
void cmd_hello(Impl& s, Client& c, Args& a) {
  std::int64_t ver = 0;
  std::size_t next = 1;
  if (a.size() >= 2) {
    if (!string2ll(a[next++], ver))
      return s.error(c, "Protocol version is not an integer or out of range");
    if (ver < 2 || ver > 3) return s.raw(c, "-NOPROTO unsupported protocol version\r\n");
  }
  const std::string *user = nullptr, *pass = nullptr, *name = nullptr;
  for (std::size_t j = next; j < a.size(); ++j) {
    const std::size_t more = a.size() - 1 - j;
    if (ieq(a[j], "AUTH") && more >= 2) {
      user = &a[j + 1];
      pass = &a[j + 2];
      j += 2;
    } else if (ieq(a[j], "SETNAME") && more >= 1) {
      name = &a[j + 1];
      ++j;
    } else {
      return s.error(c, "Syntax error in HELLO option '" + std::string(cstr(a[j])) + "'");
    }
  }
  if (user != nullptr) {
    if (!auth_ok(s, *user, *pass))
      return s.raw(c, "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
    c.authenticated = true;
  }
  if (!c.authenticated)
    return s.raw(c,
                 "-NOAUTH HELLO must be called with the client already authenticated, otherwise "
                 "the HELLO AUTH <user> <pass> option can be used to authenticate the "
                 "client and select the RESP protocol version at the same time\r\n");
  if (name != nullptr && !set_name(s, c, *name)) return;
  if (ver != 0) c.resp = static_cast<int>(ver);
  s.map(c, 7);
  s.bulk(c, "server");
  s.bulk(c, "redis");
  s.bulk(c, "version");
  s.bulk(c, "7.0.15");
  s.bulk(c, "proto");
  s.integer(c, c.resp);
  s.bulk(c, "id");
  s.integer(c, static_cast<std::int64_t>(c.id));
  s.bulk(c, "mode");
  s.bulk(c, "standalone");
  s.bulk(c, "role");
  s.bulk(c, s.replica ? "replica" : "master");
  s.bulk(c, "modules");
  s.array(c, 0);
}
void discard_transaction(Impl& s, Client& c);
void unwatch_all(Client& c) {
  c.watched.clear();
}
void cmd_quit(Impl& s, Client& c, Args&) {
  s.ok(c);
  c.closing = true;
}
void cmd_reset(Impl& s, Client& c, Args&) {
  if (c.multi) discard_transaction(s, c);
  unwatch_all(c);
  c.dirty_cas = false;
  s.unsubscribe_all(c, false);
  s.punsubscribe_all(c, false);
  s.disable_tracking(c);
  c.db = 0;
  c.resp = 2;
  c.name.clear();
  c.authenticated = s.opt.requirepass.empty();
  s.raw(c, "+RESET\r\n");
}

// ---- CLIENT ----
void client_id(Impl& s, Client& c, Args&) {
  s.integer(c, static_cast<std::int64_t>(c.id));
}
// The fields a client can rely on (id, addr, name, db, resp) with Redis 7.0's layout; the
// others are placeholders (the simulator keeps no such accounting).
void client_info(Impl& s, Client& c, Args&) {
  std::string t = "id=" + std::to_string(c.id) + " addr=" + c.addr +
                  " laddr=127.0.0.1:6379 fd=8 name=" + c.name +
                  " age=0 idle=0 flags=N db=" + std::to_string(c.db) +
                  " sub=0 psub=0 ssub=0 multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0"
                  " rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=client|info user=default"
                  " redir=-1 resp=" +
                  std::to_string(c.resp) + "\n";
  if (c.resp == 2) return s.bulk(c, t);
  s.raw(c, "=" + std::to_string(t.size() + 4) + "\r\ntxt:" + t + "\r\n");
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
        t.closing = true;
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
    t.closing = true;
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
  bool write_only = false;
  if (a.size() == 4) {
    if (ieq(a[3], "write")) {
      write_only = true;
    } else if (!ieq(a[3], "all")) {
      return s.error(c, "CLIENT PAUSE mode must be WRITE or ALL");
    }
  } else if (a.size() > 4) {
    return s.syntax(c);
  }
  s.pause_until_ms = s.wall_ms() + ms;
  s.pause_write_only = write_only;
  s.ok(c);
}
void client_unpause(Impl& s, Client& c, Args&) {
  s.pause_until_ms = 0;
  s.ok(c);
}

// ---- strings and keys ----
void cmd_get(Impl& s, Client& c, Args& a) {
  Value* v = s.lookup(c, a[1]);
  if (v == nullptr) return s.null(c);
  if (v->kind != Value::Kind::string) return s.wrongtype(c);
  s.bulk(c, v->str);
}

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
void cmd_del(Impl& s, Client& c, Args& a) {
  std::int64_t n = 0;
  Db& db = DB(s, c);
  for (std::size_t i = 1; i < a.size(); ++i) {
    s.expire_if_needed(db, a[i]);
    if (db.dict.count(a[i]) != 0) {
      s.db_delete(db, a[i]);
      s.signal_modified(&c, db, a[i]);
      s.propagate(c, Args{"DEL", a[i]});
      ++n;
    }
  }
  s.integer(c, n);
}
void cmd_exists(Impl& s, Client& c, Args& a) {
  std::int64_t n = 0;
  for (std::size_t i = 1; i < a.size(); ++i)
    if (s.lookup(c, a[i]) != nullptr) ++n;
  s.integer(c, n);
}
const char* type_name(const Value* v) {
  if (v == nullptr) return "none";
  switch (v->kind) {
    case Value::Kind::string:
      return "string";
    case Value::Kind::hash:
      return "hash";
    case Value::Kind::set:
      return "set";
    case Value::Kind::zset:
      return "zset";
  }
  return "none";
}
void cmd_type(Impl& s, Client& c, Args& a) {
  s.status(c, type_name(s.lookup(c, a[1])));
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
    s.signal_modified(&c, db, a[1]);
    s.propagate(c, Args{"DEL", a[1]});
    return s.integer(c, 1);
  }
  s.set_expire(db, a[1], when);
  s.signal_modified(&c, db, a[1]);
  s.propagate(c, Args{"PEXPIREAT", a[1], ll2s(when)});
  s.integer(c, 1);
}
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
  s.propagate(c, Args{"PERSIST", a[1]});
  s.integer(c, 1);
}
void ttl_generic(Impl& s, Client& c, Args& a, bool ms) {
  Db& db = DB(s, c);
  if (s.lookup(c, a[1]) == nullptr) return s.integer(c, -2);
  const std::int64_t e = s.get_expire(db, a[1]);
  if (e == -1) return s.integer(c, -1);
  std::int64_t ttl = e - s.cmd_ms;
  if (ttl < 0) ttl = 0;
  s.integer(c, ms ? ttl : (ttl + 500) / 1000);
}
void cmd_ttl(Impl& s, Client& c, Args& a) {
  ttl_generic(s, c, a, false);
}
void cmd_pttl(Impl& s, Client& c, Args& a) {
  ttl_generic(s, c, a, true);
}
void cmd_dbsize(Impl& s, Client& c, Args&) {
  s.integer(c, static_cast<std::int64_t>(DB(s, c).dict.size()));
}
bool flush_args(Impl& s, Client& c, Args& a) {
  if (a.size() > 2) {
    s.syntax(c);
    return false;
  }
  if (a.size() == 2 && !ieq(a[1], "sync") && !ieq(a[1], "async")) {
    s.syntax(c);
    return false;
  }
  return true;
}
void flush_db(Impl& s, Client* by, Db& db) {
  s.touch_all_watched_in_db(db);
  db.dict.clear();
  db.expires.clear();
  db.by_time.clear();
  (void)by;
}
void cmd_flushdb(Impl& s, Client& c, Args& a) {
  if (!flush_args(s, c, a)) return;
  flush_db(s, &c, DB(s, c));
  s.tracking_on_flush();
  s.propagate(c, Args{"FLUSHDB"});
  s.ok(c);
}
void cmd_flushall(Impl& s, Client& c, Args& a) {
  if (!flush_args(s, c, a)) return;
  for (auto& db : s.dbs) flush_db(s, &c, db);
  s.tracking_on_flush();
  s.propagate(c, Args{"FLUSHALL"});
  s.ok(c);
}
void cmd_time(Impl& s, Client& c, Args&) {
  const std::int64_t us = s.hooks.wall_us ? s.hooks.wall_us() : 0;
  s.array(c, 2);
  s.bulk(c, ll2s(us / 1000000));
  s.bulk(c, ll2s(us % 1000000));
}
// Deterministic key order for KEYS/SCAN: by a 63-bit hash, then by name (so SCAN cursors are
// stateless positions, as in Redis).
std::uint64_t scan_hash(const std::string& k) {
  return (fnv1a64(k) >> 1) | 1;
}
std::vector<std::pair<std::uint64_t, const std::string*>> ordered_keys(Db& db) {
  std::vector<std::pair<std::uint64_t, const std::string*>> v;
  v.reserve(db.dict.size());
  for (auto& [k, val] : db.dict) v.emplace_back(scan_hash(k), &k);
  std::sort(v.begin(), v.end(), [](auto& x, auto& y) {
    return x.first != y.first ? x.first < y.first : *x.second < *y.second;
  });
  return v;
}
void cmd_keys(Impl& s, Client& c, Args& a) {
  Db& db = DB(s, c);
  std::vector<std::string> out;
  for (auto& [h, k] : ordered_keys(db)) {
    if ((a[1] == "*" || glob_match(a[1], *k)) && !s.key_is_expired(db, *k)) out.push_back(*k);
  }
  s.array(c, out.size());
  for (auto& k : out) s.bulk(c, k);
}
void cmd_scan(Impl& s, Client& c, Args& a) {
  // parseScanCursorOrReply: strtoul semantics, rejects junk.
  std::uint64_t cursor = 0;
  {
    const std::string& cs = a[1];
    auto [p, ec] = std::from_chars(cs.data(), cs.data() + cs.size(), cursor);
    if (cs.empty() || ec != std::errc() || p != cs.data() + cs.size())
      return s.error(c, "invalid cursor");
  }
  std::int64_t count = 10;
  const std::string* match = nullptr;
  const std::string* type = nullptr;
  for (std::size_t i = 2; i < a.size();) {
    const std::size_t j = a.size() - i;
    if (ieq(a[i], "count") && j >= 2) {
      if (!get_ll(s, c, a[i + 1], count)) return;
      if (count < 1) return s.syntax(c);
      i += 2;
    } else if (ieq(a[i], "match") && j >= 2) {
      match = &a[i + 1];
      i += 2;
    } else if (ieq(a[i], "type") && j >= 2) {
      type = &a[i + 1];
      i += 2;
    } else {
      return s.syntax(c);
    }
  }
  Db& db = DB(s, c);
  auto keys = ordered_keys(db);
  std::vector<std::string> batch;
  std::size_t i = 0;
  while (i < keys.size() && keys[i].first < cursor) ++i;
  std::uint64_t next = 0;
  std::int64_t taken = 0;
  while (i < keys.size()) {
    if (taken >= count && keys[i].first != keys[i - 1].first) {
      next = keys[i].first;
      break;
    }
    batch.push_back(*keys[i].second);
    ++taken;
    ++i;
  }
  std::vector<std::string> out;
  for (auto& k : batch) {
    if (match != nullptr && !glob_match(*match, k)) continue;
    if (s.expire_if_needed(db, k)) continue;
    if (type != nullptr) {
      auto it = db.dict.find(k);
      if (it == db.dict.end() || !ieq(*type, type_name(&it->second))) continue;
    }
    out.push_back(k);
  }
  s.array(c, 2);
  s.bulk(c, ll2s(static_cast<std::int64_t>(next)));
  s.array(c, out.size());
  for (auto& k : out) s.bulk(c, k);
}

// ---- hashes ----
Value* lookup_or_create(Impl& s, Client& c, const std::string& key, Value::Kind kind, bool& wrong) {
  wrong = false;
  Value* v = s.lookup(c, key);
  if (v != nullptr) {
    if (v->kind != kind) {
      wrong = true;
      return nullptr;
    }
    return v;
  }
  Value nv;
  nv.kind = kind;
  return &DB(s, c).dict.emplace(key, std::move(nv)).first->second;
}
std::string* hfind(Value& v, const std::string& f) {
  for (auto& [k, val] : v.hash)
    if (k == f) return &val;
  return nullptr;
}
void cmd_hset(Impl& s, Client& c, Args& a) {
  if (a.size() % 2 == 1) return s.wrong_args(c, lower(a[0]) == "hmset" ? "hmset" : "hset");
  bool wrong = false;
  Value* v = lookup_or_create(s, c, a[1], Value::Kind::hash, wrong);
  if (wrong) return s.wrongtype(c);
  std::int64_t created = 0;
  for (std::size_t i = 2; i + 1 < a.size(); i += 2) {
    if (std::string* f = hfind(*v, a[i])) {
      *f = a[i + 1];
    } else {
      v->hash.emplace_back(a[i], a[i + 1]);
      ++created;
    }
  }
  s.signal_modified(&c, DB(s, c), a[1]);
  s.propagate(c, a);
  s.integer(c, created);
}
void cmd_hsetnx(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = lookup_or_create(s, c, a[1], Value::Kind::hash, wrong);
  if (wrong) return s.wrongtype(c);
  if (hfind(*v, a[2]) != nullptr) return s.integer(c, 0);
  v->hash.emplace_back(a[2], a[3]);
  s.signal_modified(&c, DB(s, c), a[1]);
  s.propagate(c, a);
  s.integer(c, 1);
}
Value* lookup_typed(Impl& s, Client& c, const std::string& key, Value::Kind kind, bool& wrong) {
  wrong = false;
  Value* v = s.lookup(c, key);
  if (v != nullptr && v->kind != kind) {
    wrong = true;
    return nullptr;
  }
  return v;
}
void cmd_hget(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = lookup_typed(s, c, a[1], Value::Kind::hash, wrong);
  if (wrong) return s.wrongtype(c);
  std::string* f = v ? hfind(*v, a[2]) : nullptr;
  if (f == nullptr) return s.null(c);
  s.bulk(c, *f);
}
void cmd_hmget(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = lookup_typed(s, c, a[1], Value::Kind::hash, wrong);
  if (wrong) return s.wrongtype(c);
  s.array(c, a.size() - 2);
  for (std::size_t i = 2; i < a.size(); ++i) {
    std::string* f = v ? hfind(*v, a[i]) : nullptr;
    if (f == nullptr) {
      s.null(c);
    } else {
      s.bulk(c, *f);
    }
  }
}
void cmd_hgetall(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = lookup_typed(s, c, a[1], Value::Kind::hash, wrong);
  if (wrong) return s.wrongtype(c);
  if (v == nullptr) return s.map(c, 0);
  s.map(c, v->hash.size());
  for (auto& [k, val] : v->hash) {
    s.bulk(c, k);
    s.bulk(c, val);
  }
}
void cmd_hdel(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = lookup_typed(s, c, a[1], Value::Kind::hash, wrong);
  if (wrong) return s.wrongtype(c);
  if (v == nullptr) return s.integer(c, 0);
  std::int64_t n = 0;
  for (std::size_t i = 2; i < a.size(); ++i) {
    auto it =
        std::find_if(v->hash.begin(), v->hash.end(), [&](auto& p) { return p.first == a[i]; });
    if (it != v->hash.end()) {
      v->hash.erase(it);
      ++n;
    }
    if (v->hash.empty()) break;
  }
  Db& db = DB(s, c);
  if (n > 0) {
    if (v->hash.empty()) s.db_delete(db, a[1]);
    s.signal_modified(&c, db, a[1]);
    s.propagate(c, a);
  }
  s.integer(c, n);
}
void cmd_hlen(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = lookup_typed(s, c, a[1], Value::Kind::hash, wrong);
  if (wrong) return s.wrongtype(c);
  s.integer(c, v ? static_cast<std::int64_t>(v->hash.size()) : 0);
}
void cmd_hexists(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = lookup_typed(s, c, a[1], Value::Kind::hash, wrong);
  if (wrong) return s.wrongtype(c);
  s.integer(c, v && hfind(*v, a[2]) ? 1 : 0);
}
void cmd_hincrby(Impl& s, Client& c, Args& a) {
  std::int64_t incr = 0;
  if (!get_ll(s, c, a[3], incr)) return;
  bool wrong = false;
  Value* v = lookup_or_create(s, c, a[1], Value::Kind::hash, wrong);
  if (wrong) return s.wrongtype(c);
  std::int64_t old = 0;
  std::string* f = hfind(*v, a[2]);
  if (f != nullptr && !string2ll(*f, old)) {
    if (v->hash.empty()) DB(s, c).dict.erase(a[1]);
    return s.error(c, "hash value is not an integer");
  }
  if ((incr < 0 && old < 0 && incr < (kLLMin - old)) ||
      (incr > 0 && old > 0 && incr > (kLLMax - old))) {
    if (v->hash.empty()) DB(s, c).dict.erase(a[1]);
    return s.error(c, "increment or decrement would overflow");
  }
  const std::int64_t nv = old + incr;
  if (f != nullptr) {
    *f = ll2s(nv);
  } else {
    v->hash.emplace_back(a[2], ll2s(nv));
  }
  s.signal_modified(&c, DB(s, c), a[1]);
  s.propagate(c, Args{"HSET", a[1], a[2], ll2s(nv)});
  s.integer(c, nv);
}

// ---- sets ----
// Redis 7.0 keeps all-integer sets as a sorted intset; otherwise a hash table whose order is
// seeded per process (so tests compare those replies as unordered). Model: integers sorted
// numerically, otherwise insertion order.
void set_order(Value& v) {
  std::vector<std::pair<std::int64_t, std::string>> nums;
  for (auto& m : v.set) {
    std::int64_t x = 0;
    if (!string2ll(m, x)) return;
    nums.emplace_back(x, m);
  }
  if (nums.size() > 512) return;
  std::sort(nums.begin(), nums.end());
  for (std::size_t i = 0; i < nums.size(); ++i) v.set[i] = nums[i].second;
}
void cmd_sadd(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = lookup_or_create(s, c, a[1], Value::Kind::set, wrong);
  if (wrong) return s.wrongtype(c);
  std::int64_t added = 0;
  for (std::size_t i = 2; i < a.size(); ++i) {
    if (std::find(v->set.begin(), v->set.end(), a[i]) == v->set.end()) {
      v->set.push_back(a[i]);
      ++added;
    }
  }
  set_order(*v);
  if (added > 0) {
    s.signal_modified(&c, DB(s, c), a[1]);
    s.propagate(c, a);
  }
  s.integer(c, added);
}
void cmd_srem(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = lookup_typed(s, c, a[1], Value::Kind::set, wrong);
  if (wrong) return s.wrongtype(c);
  if (v == nullptr) return s.integer(c, 0);
  std::int64_t n = 0;
  for (std::size_t i = 2; i < a.size(); ++i) {
    auto it = std::find(v->set.begin(), v->set.end(), a[i]);
    if (it != v->set.end()) {
      v->set.erase(it);
      ++n;
    }
    if (v->set.empty()) break;
  }
  if (n > 0) {
    Db& db = DB(s, c);
    if (v->set.empty()) s.db_delete(db, a[1]);
    s.signal_modified(&c, db, a[1]);
    s.propagate(c, a);
  }
  s.integer(c, n);
}
void cmd_smembers(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = lookup_typed(s, c, a[1], Value::Kind::set, wrong);
  if (wrong) return s.wrongtype(c);
  if (v == nullptr) return s.set_len(c, 0);
  s.set_len(c, v->set.size());
  for (auto& m : v->set) s.bulk(c, m);
}
void cmd_sismember(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = lookup_typed(s, c, a[1], Value::Kind::set, wrong);
  if (wrong) return s.wrongtype(c);
  s.integer(c, v && std::find(v->set.begin(), v->set.end(), a[2]) != v->set.end() ? 1 : 0);
}
void cmd_scard(Impl& s, Client& c, Args& a) {
  bool wrong = false;
  Value* v = lookup_typed(s, c, a[1], Value::Kind::set, wrong);
  if (wrong) return s.wrongtype(c);
  s.integer(c, v ? static_cast<std::int64_t>(v->set.size()) : 0);
}

// ---- sorted sets ----
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

// ---- transactions ----
void discard_transaction(Impl&, Client& c) {
  c.queued.clear();
  c.multi = false;
  c.dirty_exec = false;
  c.dirty_cas = false;
  unwatch_all(c);
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
    if (!have) c.watched.push_back({c.db, a[i], s.key_is_expired(DB(s, c), a[i])});
  }
  s.ok(c);
}
void cmd_unwatch(Impl& s, Client& c, Args&) {
  unwatch_all(c);
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
      s.raw(c, "-EXECABORT Transaction discarded because of previous errors.\r\n");
    } else {
      s.null_array(c);
    }
    discard_transaction(s, c);
    return;
  }
  unwatch_all(c);
  auto queued = std::move(c.queued);
  c.queued.clear();
  c.multi = false;
  s.array(c, queued.size());
  s.in_exec = true;
  for (auto& q : queued) {
    const CmdDef* top = Impl::lookup_in(Impl::table(), q[0]);
    const CmdDef* cmd = top;
    if (top != nullptr && !top->subs.empty()) cmd = Impl::lookup_in(top->subs, q[1]);
    if (s.replica && (cmd->flags & F_WRITE)) {
      s.raw(c, "-READONLY You can't write against a read only replica.\r\n");
      continue;
    }
    s.call(c, *cmd, q);
  }
  s.in_exec = false;
  c.dirty_exec = false;
  c.dirty_cas = false;
}

// ---- pub/sub ----
void cmd_subscribe(Impl& s, Client& c, Args& a) {
  for (std::size_t i = 1; i < a.size(); ++i) {
    if (std::find(c.channels.begin(), c.channels.end(), a[i]) == c.channels.end()) {
      c.channels.push_back(a[i]);
      s.channels[a[i]].push_back(c.id);
    }
    s.pubsub_reply(c, "subscribe", &a[i], s.sub_count(c));
  }
}
void cmd_psubscribe(Impl& s, Client& c, Args& a) {
  for (std::size_t i = 1; i < a.size(); ++i) {
    if (std::find(c.patterns.begin(), c.patterns.end(), a[i]) == c.patterns.end()) {
      c.patterns.push_back(a[i]);
      s.patterns[a[i]].push_back(c.id);
    }
    s.pubsub_reply(c, "psubscribe", &a[i], s.sub_count(c));
  }
}
void cmd_unsubscribe(Impl& s, Client& c, Args& a) {
  if (a.size() == 1) return s.unsubscribe_all(c, true);
  for (std::size_t i = 1; i < a.size(); ++i) s.unsubscribe(c, a[i], true);
}
void cmd_punsubscribe(Impl& s, Client& c, Args& a) {
  if (a.size() == 1) return s.punsubscribe_all(c, true);
  for (std::size_t i = 1; i < a.size(); ++i) s.punsubscribe(c, a[i], true);
}
void cmd_publish(Impl& s, Client& c, Args& a) {
  s.integer(c, s.publish(a[1], a[2]));
}

// ---- replication ----
void cmd_role(Impl& s, Client& c, Args&) {
  if (s.replica) {
    s.array(c, 5);
    s.bulk(c, "slave");
    s.bulk(c, s.master_host);
    s.integer(c, s.master_port);
    s.bulk(c, "connected");
    s.integer(c, s.repl_offset);
    return;
  }
  s.array(c, 3);
  s.bulk(c, "master");
  s.integer(c, s.repl_offset);
  s.array(c, s.replica_acks.size());
  for (auto& [addr, off] : s.replica_acks) {
    const auto colon = addr.rfind(':');
    s.array(c, 3);
    s.bulk(c, addr.substr(0, colon));
    s.bulk(c, colon == std::string::npos ? "0" : addr.substr(colon + 1));
    s.bulk(c, ll2s(off));
  }
}
// WAIT without blocking: answers how many replicas already acknowledged this offset. A blocking
// WAIT would need the host to park the client; the simulator's replicas acknowledge on apply.
// DEBUG SLEEP <seconds>: the whole server stops (the host implements the stall).
void cmd_debug(Impl& s, Client& c, Args& a) {
  if (ieq(a[1], "sleep") && a.size() == 3) {
    const double secs = std::atof(a[2].c_str());
    if (s.hooks.stall && secs > 0) s.hooks.stall(static_cast<std::int64_t>(secs * 1e6));
    return s.ok(c);
  }
  s.error(c, "unknown subcommand or wrong number of arguments for '" + std::string(cstr(a[1])) +
                 "'. Try DEBUG HELP.");
}

void cmd_wait(Impl& s, Client& c, Args& a) {
  std::int64_t n = 0, timeout = 0;
  if (!get_ll(s, c, a[1], n)) return;
  if (!string2ll(a[2], timeout)) return s.error(c, "timeout is not an integer or out of range");
  if (timeout < 0) return s.error(c, "timeout is negative");
  if (s.replica)
    return s.error(c,
                   "WAIT cannot be used with replica instances. Please also note that since Redis "
                   "4.0 if a replica is configured to be writable (which is not the default) "
                   "writes to replicas are just local and are not propagated.");
  const std::int64_t acked = s.acks_for(c.woff);
  if (acked >= n || s.in_exec) return s.integer(c, acked);
  c.blocked = true;
  c.block_num = n;
  c.block_off = c.woff;
  c.block_deadline_ms = timeout > 0 ? s.wall_ms() + timeout : 0;
}

}  // namespace

const std::vector<CmdDef>& RedisModel::Impl::table() {
  constexpr std::uint32_t RO = F_READONLY, W = F_WRITE, CONN = F_LOADING | F_STALE | F_FAST;
  constexpr std::uint32_t CS = F_CLIENT_SUB, NQ = F_NOT_QUEUED, SO = F_SUB_OK;
  static const std::vector<CmdDef> t = {
      {"ping", -1, F_FAST | SO, cmd_ping, 0, 0, 0, {}},
      {"echo", 2, CONN, cmd_echo, 0, 0, 0, {}},
      {"select", 2, CONN, cmd_select, 0, 0, 0, {}},
      {"hello", -1, CONN | F_NO_AUTH | F_ALLOW_BUSY, cmd_hello, 0, 0, 0, {}},
      {"auth", -2, CONN | F_NO_AUTH | F_ALLOW_BUSY, cmd_auth, 0, 0, 0, {}},
      {"quit", -1, CONN | F_NO_AUTH | F_ALLOW_BUSY | NQ | SO, cmd_quit, 0, 0, 0, {}},
      {"reset", 1, CONN | F_NO_AUTH | F_ALLOW_BUSY | NQ | SO, cmd_reset, 0, 0, 0, {}},
      {"client",
       -2,
       0,
       nullptr,
       0,
       0,
       0,
       {
           {"id", 2, CONN | CS, client_id, 0, 0, 0, {}},
           {"setname", 3, CONN | CS, client_setname, 0, 0, 0, {}},
           {"getname", 2, CONN | CS, client_getname, 0, 0, 0, {}},
           {"info", 2, CONN | CS, client_info, 0, 0, 0, {}},
           {"kill", -3, F_LOADING | F_STALE | CS, client_kill, 0, 0, 0, {}},
           {"tracking", -3, CONN | CS, client_tracking, 0, 0, 0, {}},
           {"caching", 3, CONN | CS, client_caching, 0, 0, 0, {}},
           {"getredir", 2, CONN | CS, client_getredir, 0, 0, 0, {}},
           {"pause", -3, F_LOADING | F_STALE | CS, client_pause, 0, 0, 0, {}},
           {"unpause", 2, F_LOADING | F_STALE | CS, client_unpause, 0, 0, 0, {}},
       }},
      {"get", 2, RO | F_FAST, cmd_get, 1, 1, 1, {}},
      {"set", -3, W, cmd_set, 0, 0, 0, {}},
      {"mset", -3, W, cmd_mset, 0, 0, 0, {}},
      {"mget", -2, RO | F_FAST, cmd_mget, 1, -1, 1, {}},
      {"setnx", 3, W | F_FAST, cmd_setnx, 0, 0, 0, {}},
      {"getex", -2, W | F_FAST, cmd_getex, 0, 0, 0, {}},
      {"getdel", 2, W | F_FAST, cmd_getdel, 0, 0, 0, {}},
      {"del", -2, W, cmd_del, 0, 0, 0, {}},
      {"unlink", -2, W | F_FAST, cmd_del, 0, 0, 0, {}},
      {"exists", -2, RO | F_FAST, cmd_exists, 1, -1, 1, {}},
      {"type", 2, RO | F_FAST, cmd_type, 1, 1, 1, {}},
      {"incr", 2, W | F_FAST, cmd_incr, 0, 0, 0, {}},
      {"incrby", 3, W | F_FAST, cmd_incrby, 0, 0, 0, {}},
      {"decr", 2, W | F_FAST, cmd_decr, 0, 0, 0, {}},
      {"decrby", 3, W | F_FAST, cmd_decrby, 0, 0, 0, {}},
      {"expire", -3, W | F_FAST, cmd_expire, 0, 0, 0, {}},
      {"pexpire", -3, W | F_FAST, cmd_pexpire, 0, 0, 0, {}},
      {"expireat", -3, W | F_FAST, cmd_expireat, 0, 0, 0, {}},
      {"pexpireat", -3, W | F_FAST, cmd_pexpireat, 0, 0, 0, {}},
      {"persist", 2, W | F_FAST, cmd_persist, 0, 0, 0, {}},
      {"ttl", 2, RO | F_FAST, cmd_ttl, 1, 1, 1, {}},
      {"pttl", 2, RO | F_FAST, cmd_pttl, 1, 1, 1, {}},
      {"dbsize", 1, RO | F_FAST, cmd_dbsize, 0, 0, 0, {}},
      {"flushdb", -1, W, cmd_flushdb, 0, 0, 0, {}},
      {"flushall", -1, W, cmd_flushall, 0, 0, 0, {}},
      {"time", 1, CONN, cmd_time, 0, 0, 0, {}},
      {"keys", 2, RO, cmd_keys, 0, 0, 0, {}},
      {"scan", -2, RO, cmd_scan, 0, 0, 0, {}},
      {"hset", -4, W | F_FAST, cmd_hset, 0, 0, 0, {}},
      {"hsetnx", 4, W | F_FAST, cmd_hsetnx, 0, 0, 0, {}},
      {"hget", 3, RO | F_FAST, cmd_hget, 1, 1, 1, {}},
      {"hmget", -3, RO | F_FAST, cmd_hmget, 1, 1, 1, {}},
      {"hgetall", 2, RO, cmd_hgetall, 1, 1, 1, {}},
      {"hdel", -3, W | F_FAST, cmd_hdel, 0, 0, 0, {}},
      {"hlen", 2, RO | F_FAST, cmd_hlen, 1, 1, 1, {}},
      {"hexists", 3, RO | F_FAST, cmd_hexists, 1, 1, 1, {}},
      {"hincrby", 4, W | F_FAST, cmd_hincrby, 0, 0, 0, {}},
      {"sadd", -3, W | F_FAST, cmd_sadd, 0, 0, 0, {}},
      {"srem", -3, W | F_FAST, cmd_srem, 0, 0, 0, {}},
      {"smembers", 2, RO, cmd_smembers, 1, 1, 1, {}},
      {"sismember", 3, RO | F_FAST, cmd_sismember, 1, 1, 1, {}},
      {"scard", 2, RO | F_FAST, cmd_scard, 1, 1, 1, {}},
      {"zadd", -4, W | F_FAST, cmd_zadd, 0, 0, 0, {}},
      {"zrem", -3, W | F_FAST, cmd_zrem, 0, 0, 0, {}},
      {"zscore", 3, RO | F_FAST, cmd_zscore, 1, 1, 1, {}},
      {"zcard", 2, RO | F_FAST, cmd_zcard, 1, 1, 1, {}},
      {"zrange", -4, RO, cmd_zrange, 1, 1, 1, {}},
      {"zrangebyscore", -4, RO, cmd_zrangebyscore, 1, 1, 1, {}},
      {"zremrangebyscore", 4, W, cmd_zremrangebyscore, 0, 0, 0, {}},
      {"multi", 1, F_LOADING | F_STALE | F_FAST | F_ALLOW_BUSY | NQ, cmd_multi, 0, 0, 0, {}},
      {"exec", 1, F_LOADING | F_STALE | NQ, cmd_exec, 0, 0, 0, {}},
      {"discard", 1, F_LOADING | F_STALE | F_FAST | F_ALLOW_BUSY | NQ, cmd_discard, 0, 0, 0, {}},
      {"watch", -2, F_LOADING | F_STALE | F_FAST | F_ALLOW_BUSY | NQ, cmd_watch, 0, 0, 0, {}},
      {"unwatch", 1, F_LOADING | F_STALE | F_FAST | F_ALLOW_BUSY, cmd_unwatch, 0, 0, 0, {}},
      {"subscribe", -2, F_PUBSUB | F_LOADING | F_STALE | SO, cmd_subscribe, 0, 0, 0, {}},
      {"unsubscribe", -1, F_PUBSUB | F_LOADING | F_STALE | SO, cmd_unsubscribe, 0, 0, 0, {}},
      {"psubscribe", -2, F_PUBSUB | F_LOADING | F_STALE | SO, cmd_psubscribe, 0, 0, 0, {}},
      {"punsubscribe", -1, F_PUBSUB | F_LOADING | F_STALE | SO, cmd_punsubscribe, 0, 0, 0, {}},
      {"publish", 3, F_PUBSUB | F_LOADING | F_STALE | F_FAST, cmd_publish, 0, 0, 0, {}},
      {"role", 1, CONN, cmd_role, 0, 0, 0, {}},
      {"wait", 3, 0, cmd_wait, 0, 0, 0, {}},
      {"debug", -2, F_LOADING | F_STALE | F_PROTECTED, cmd_debug, 0, 0, 0, {}},
  };
  return t;
}

// ---------------------------------------------------------------------------------------------

RedisModel::RedisModel(Hooks hooks, Rng rng, RedisModelOptions options)
    : impl_(std::make_unique<Impl>(std::move(hooks), std::move(rng), std::move(options))) {}

RedisModel::~RedisModel() = default;

RedisModel::ClientId RedisModel::add_client(std::string addr) {
  const ClientId id = impl_->next_client_id++;
  Client& c = impl_->clients[id];
  c.id = id;
  c.addr = std::move(addr);
  c.authenticated = impl_->opt.requirepass.empty();
  impl_->trace("client-open", std::to_string(id));
  return id;
}

void RedisModel::remove_client(ClientId id) noexcept {
  auto it = impl_->clients.find(id);
  if (it == impl_->clients.end()) return;
  impl_->free_client(it->second);
  impl_->clients.erase(it);
  impl_->trace("client-close", std::to_string(id));
}

void RedisModel::feed(ClientId id, std::string_view bytes) {
  auto it = impl_->clients.find(id);
  if (it == impl_->clients.end()) return;
  Client& c = it->second;
  if (c.closing || c.gone) return;
  if (c.qbuf.size() - c.qpos + bytes.size() > impl_->opt.max_query_bytes) {
    // client-query-buffer-limit: Redis closes the connection without a reply.
    c.closing = true;
    impl_->mark(c);
    impl_->flush_outputs();
    return;
  }
  c.qbuf.append(bytes);
  impl_->process_input(c);
  impl_->flush_outputs();
}

void RedisModel::cron() {
  impl_->active_expire();
  impl_->check_blocked();
  if (impl_->pause_until_ms != 0 && impl_->wall_ms() >= impl_->pause_until_ms)
    impl_->pause_until_ms = 0;
  if (impl_->pause_until_ms == 0) {
    std::vector<ClientId> ids;
    for (auto& [id, c] : impl_->clients)
      if (c.qpos < c.qbuf.size() && !c.closing) ids.push_back(id);
    for (auto id : ids) {
      auto it = impl_->clients.find(id);
      if (it != impl_->clients.end()) impl_->process_input(it->second);
    }
  }
  impl_->flush_outputs();
}

void RedisModel::set_loading(bool on) noexcept {
  impl_->loading = on;
}
void RedisModel::set_busy(bool on) noexcept {
  impl_->busy = on;
}
void RedisModel::set_replica(bool on, std::string host, int port) {
  impl_->replica = on;
  impl_->master_host = std::move(host);
  impl_->master_port = port;
}
bool RedisModel::is_replica() const noexcept {
  return impl_->replica;
}
std::int64_t RedisModel::repl_offset() const noexcept {
  return impl_->repl_offset;
}
void RedisModel::set_replica_acks(std::vector<std::pair<std::string, std::int64_t>> r) {
  impl_->replica_acks = std::move(r);
  impl_->check_blocked();
  impl_->flush_outputs();
}

void RedisModel::tick() {
  impl_->check_blocked();
  impl_->flush_outputs();
}

std::int64_t RedisModel::next_deadline_us() const {
  const std::int64_t ms = impl_->next_deadline_ms();
  return ms < 0 ? -1 : ms * 1000;
}

void RedisModel::apply(int db, const std::vector<std::string>& argv) {
  // The replication link is a privileged client: no READONLY check, no replies.
  Impl& s = *impl_;
  if (argv.empty()) return;
  const CmdDef* cmd = s.find_command(argv);
  if (cmd == nullptr || cmd->fn == nullptr) return;
  Client tmp;
  tmp.id = 0;
  tmp.db = std::clamp(db, 0, static_cast<int>(s.dbs.size()) - 1);
  const bool was = s.replica;
  s.replica = false;  // apply with primary semantics (it deletes what the primary deleted)
  s.cmd_ms = s.wall_ms();
  Args a = argv;
  auto hook = std::move(s.hooks.propagate);
  s.hooks.propagate = nullptr;
  cmd->fn(s, tmp, a);
  s.hooks.propagate = std::move(hook);
  s.replica = was;
  std::size_t bytes = 0;
  for (auto& x : argv) bytes += x.size() + 16;
  s.repl_offset += static_cast<std::int64_t>(bytes);
  s.dirty_clients.erase(std::remove(s.dirty_clients.begin(), s.dirty_clients.end(), 0u),
                        s.dirty_clients.end());
  s.flush_outputs();
}

std::shared_ptr<const RedisSnapshot> RedisModel::snapshot() const {
  auto s = std::make_shared<RedisSnapshot>();
  s->dbs = impl_->dbs;
  return s;
}

void RedisModel::restore(const RedisSnapshot& snap) {
  impl_->dbs = snap.dbs;
}

void RedisModel::flush_all_data() {
  for (auto& db : impl_->dbs) db = Db{};
}

void RedisModel::drop_all_clients() noexcept {
  for (auto& [id, c] : impl_->clients) impl_->free_client(c);
  impl_->clients.clear();
  impl_->tracking_table.clear();
  impl_->prefix_table.clear();
  impl_->channels.clear();
  impl_->patterns.clear();
  impl_->dirty_clients.clear();
}

std::size_t RedisModel::dbsize(int db) const {
  return impl_->dbs.at(static_cast<std::size_t>(db)).dict.size();
}
bool RedisModel::exists(std::string_view key, int db) const {
  return impl_->dbs.at(static_cast<std::size_t>(db)).dict.count(std::string(key)) != 0;
}
std::vector<RedisModel::ClientId> RedisModel::clients() const {
  std::vector<ClientId> v;
  for (auto& [id, c] : impl_->clients) v.push_back(id);
  return v;
}
std::uint64_t RedisModel::commands_processed() const noexcept {
  return impl_->processed;
}

RedisModel::Peek RedisModel::peek(std::string_view key, int db) const {
  Peek p;
  const Db& d = impl_->dbs.at(static_cast<std::size_t>(db));
  const std::string k(key);
  auto it = d.dict.find(k);
  if (it == d.dict.end()) return p;
  if (auto e = d.expires.find(k); e != d.expires.end()) {
    if (e->second < impl_->wall_ms()) return p;
    p.expire_at_ms = e->second;
  }
  p.found = true;
  const Value& v = it->second;
  switch (v.kind) {
    case Value::Kind::string:
      p.items.push_back(v.str);
      break;
    case Value::Kind::hash:
      for (const auto& [f, x] : v.hash) {
        p.items.push_back(f);
        p.items.push_back(x);
      }
      break;
    case Value::Kind::set:
      p.items = v.set;
      break;
    case Value::Kind::zset:
      for (const auto& [sc, m] : v.zorder) p.items.push_back(m);
      break;
  }
  return p;
}
std::int64_t RedisModel::wall_ms() const {
  return impl_->wall_ms();
}

}  // namespace lockwire::sim
