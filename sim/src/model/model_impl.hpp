// The simulated Redis' private state: the structs of Redis' server.h that the model keeps
// (a value, a database, a client, a command-table entry) and RedisModel::Impl, the server.
// Impl's members are defined in the file named after the Redis source that owns the concern
// (networking.cpp, db.cpp, expire.cpp, multi.cpp, pubsub.cpp, tracking.cpp, replication.cpp,
// server.cpp); commands are free functions listed in commands.hpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lockwire/resp/encoder.hpp"
#include "lockwire/sim/redis_model.hpp"
#include "util.hpp"

namespace lockwire::sim {

namespace model {

using Args = std::vector<std::string>;
constexpr std::size_t kInlineMax = 64 * 1024;  // PROTO_INLINE_MAX_SIZE

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

struct Value {
  enum class Kind : std::uint8_t { string, hash, set, zset };
  Kind kind = Kind::string;
  std::string str;
  std::vector<std::pair<std::string, std::string>> hash;  // insertion order, like a listpack
  std::vector<std::string> set;                           // see set_order() in t_set.cpp
  std::map<std::string, double> zscores;
  std::set<std::pair<double, std::string>> zorder;
};

// Never iterated where order is observable (KEYS/SCAN sort first, see db.cpp).
struct Db {
  std::unordered_map<std::string, Value> dict;
  std::unordered_map<std::string, std::int64_t> expires;  // ms since epoch
  std::set<std::pair<std::int64_t, std::string>> by_time;
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
  [[nodiscard]] resp::Proto proto() const {
    return resp == 2 ? resp::Proto::resp2 : resp::Proto::resp3;
  }
};

using Impl = RedisModel::Impl;
using Handler = void (*)(Impl&, Client&, Args&);

struct CmdDef {
  const char* name;
  int arity;
  std::uint32_t flags;
  Handler fn;
  int first_key, last_key, step;  // key positions for tracking (0: none)
  std::vector<CmdDef> subs;       // container commands (CLIENT)
};

}  // namespace model

struct RedisSnapshot {
  std::vector<model::Db> dbs;
};

struct RedisModel::Impl {
  using Args = model::Args;
  using Value = model::Value;
  using Db = model::Db;
  using Client = model::Client;
  using CmdDef = model::CmdDef;

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

  static const std::vector<CmdDef>& table();  // command_table.cpp

  Impl(Hooks h, Rng r, RedisModelOptions o)
      : hooks(std::move(h)),
        rng(std::move(r)),
        opt(std::move(o)),
        dbs(static_cast<std::size_t>(std::max(1, opt.databases))) {}

  std::int64_t wall_ms() const { return hooks.wall_us ? hooks.wall_us() / 1000 : 0; }
  void trace(std::string_view what, std::string_view detail) {
    if (hooks.trace) hooks.trace(what, detail);
  }

  // ---- reply output (resp's encoder writes every byte) ----
  void mark(Client& c) {
    if (!c.dirty) {
      c.dirty = true;
      dirty_clients.push_back(c.id);
    }
  }
  void ok(Client& c) { status(c, "OK"); }
  void status(Client& c, std::string_view s) {
    resp::append_simple(c.out, s);
    mark(c);
  }
  // As addReplyError: a message starting with '-' carries its own code, otherwise "ERR " is
  // prepended; CR/LF become spaces.
  void error(Client& c, std::string_view msg) {
    if (!msg.empty() && msg[0] == '-') {
      resp::append_error(c.out, msg.substr(1));
    } else {
      resp::append_error(c.out, "ERR " + std::string(msg));
    }
    mark(c);
  }
  void integer(Client& c, std::int64_t v) {
    resp::append_number(c.out, v);
    mark(c);
  }
  void bulk(Client& c, std::string_view s) {
    resp::append_blob(c.out, s);
    mark(c);
  }
  void verbatim(Client& c, std::string_view text) {
    resp::append_verbatim(c.out, "txt", text, c.proto());
    mark(c);
  }
  void null(Client& c) {
    resp::append_null(c.out, c.proto());
    mark(c);
  }
  void null_array(Client& c) {
    resp::append_null_array(c.out, c.proto());
    mark(c);
  }
  void array(Client& c, std::size_t n) {
    resp::append_array_header(c.out, n);
    mark(c);
  }
  void map(Client& c, std::size_t n) {
    resp::append_map_header(c.out, n, c.proto());
    mark(c);
  }
  void set_len(Client& c, std::size_t n) {
    resp::append_set_header(c.out, n, c.proto());
    mark(c);
  }
  void push(Client& c, std::size_t n) {
    resp::append_push_header(c.out, n, c.proto());
    mark(c);
  }
  void dbl(Client& c, double d) {
    resp::append_double(c.out, d, c.proto());
    mark(c);
  }
  void wrong_args(Client& c, std::string_view fullname) {
    error(c, "wrong number of arguments for '" + std::string(fullname) + "' command");
  }
  void syntax(Client& c) { error(c, "syntax error"); }
  void not_int(Client& c) { error(c, "value is not an integer or out of range"); }
  void wrongtype(Client& c) {
    error(c, "-WRONGTYPE Operation against a key holding the wrong kind of value");
  }
  void expire_err(Client& c, std::string_view cmd) {
    error(c, "invalid expire time in '" + std::string(cmd) + "' command");
  }

  // ---- keyspace (db.cpp) ----
  bool key_is_expired(Db& db, const std::string& key) const;
  void remove_expire(Db& db, const std::string& key);
  void set_expire(Db& db, const std::string& key, std::int64_t when);
  std::int64_t get_expire(Db& db, const std::string& key);
  void db_delete(Db& db, const std::string& key);
  int db_index(const Db& db) const { return static_cast<int>(&db - dbs.data()); }
  Value* lookup(Db& db, const std::string& key);
  Value* lookup(Client& c, const std::string& key) { return lookup(dbs[c.db], key); }
  // signalModifiedKey: WATCH, tracking, trace.
  void signal_modified(Client* by, Db& db, const std::string& key);

  // ---- expiry (expire.cpp) ----
  // Lazy expiry; replicas hide expired keys but never delete them themselves.
  bool expire_if_needed(Db& db, const std::string& key);
  void delete_expired(Db& db, const std::string& key);
  void active_expire();

  // ---- WATCH (multi.cpp) ----
  void touch_watched(Db& db, const std::string& key);
  void touch_all_watched_in_db(Db& db);

  // ---- client-side caching (tracking.cpp) ----
  void send_tracking(Client& c, const std::string* key, const std::vector<std::string>* keys,
                     bool null_all);
  void tracking_invalidate(Client* by, const std::string& key);
  void flush_pending_self();
  void tracking_on_flush();
  void broadcast_invalidations();  // BCAST: once per event-loop turn, like beforeSleep()
  void remember_keys(Client& c, const CmdDef& cmd, const Args& a);
  void disable_tracking(Client& c);

  // ---- pub/sub (pubsub.cpp) ----
  std::size_t sub_count(const Client& c) const { return c.channels.size() + c.patterns.size(); }
  void pubsub_reply(Client& c, std::string_view kind, const std::string* name, std::size_t count);
  bool unsubscribe(Client& c, const std::string& ch, bool notify);
  bool punsubscribe(Client& c, const std::string& p, bool notify);
  void unsubscribe_all(Client& c, bool notify);
  void punsubscribe_all(Client& c, bool notify);
  std::int64_t publish(const std::string& ch, const std::string& msg);

  // ---- connections, request parsing, output (networking.cpp) ----
  void free_client(Client& c);
  void protocol_error(Client& c, std::string_view msg);
  bool parse_inline(Client& c);  // true when argv holds a complete command
  bool parse_multibulk(Client& c);
  void process_input(Client& c);
  void flush_outputs();

  // ---- command dispatch (server.cpp) ----
  bool is_paused_for(const CmdDef* cmd);
  static const CmdDef* lookup_in(const std::vector<CmdDef>& t, std::string_view name);
  const CmdDef* find_command(const Args& a);
  void reject(Client& c, const std::string& msg);
  void process_command(Client& c, Args& a);
  void call(Client& c, const CmdDef& cmd, Args& a);

  // ---- replication and WAIT (replication.cpp) ----
  void propagate(Client& c, const Args& a);
  std::int64_t acks_for(std::int64_t off) const;
  void check_blocked();  // unblocks WAITers whose replicas caught up or whose timeout passed
  std::int64_t next_deadline_ms() const;
};

namespace model {

inline Db& DB(Impl& s, Client& c) {
  return s.dbs[static_cast<std::size_t>(c.db)];
}

// getLongLongFromObjectOrReply: false (and the error sent) when `arg` is not an integer.
inline bool get_ll(Impl& s, Client& c, const std::string& arg, std::int64_t& v,
                   const char* msg = nullptr) {
  if (string2ll(arg, v)) return true;
  if (msg != nullptr) {
    s.error(c, msg);
  } else {
    s.not_int(c);
  }
  return false;
}

// Shared by several command files (defined where the comment says).
// db.cpp: lookupKeyWrite + create (wrong = the key holds another type), lookupKeyRead + type check.
Value* lookup_or_create(Impl& s, Client& c, const std::string& key, Value::Kind kind, bool& wrong);
Value* lookup_typed(Impl& s, Client& c, const std::string& key, Value::Kind kind, bool& wrong);
const char* type_name(const Value* v);
// multi.cpp
void unwatch_all(Client& c);
void discard_transaction(Impl& s, Client& c);
// networking.cpp: clientSetName (false, with the error sent, for an invalid name).
bool set_name(Impl& s, Client& c, const std::string& n);
// acl.cpp
bool auth_ok(Impl& s, std::string_view user, std::string_view pass);

}  // namespace model
}  // namespace lockwire::sim
