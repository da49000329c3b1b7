// The simulated Redis' private state: the structs of Redis' server.h that the model keeps
// (a value, a database, a client, a user, a command-table entry) and RedisModel::Impl, the
// server. Impl's members are defined in the file named after the Redis source that owns the
// concern (networking.cpp, db.cpp, expire.cpp, evict.cpp, acl.cpp, multi.cpp, pubsub.cpp,
// tracking.cpp, replication.cpp, server.cpp); commands are free functions listed in commands.hpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <deque>
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
constexpr std::int64_t kBigArg = 32 * 1024;     // PROTO_MBULK_BIG_ARG

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
  F_CLIENT_SUB = 1u << 9,      // a CLIENT subcommand (keeps CLIENT CACHING's one-shot flag)
  F_NOT_QUEUED = 1u << 10,     // runs immediately inside MULTI (EXEC, DISCARD, MULTI, WATCH, ...)
  F_SUB_OK = 1u << 11,         // allowed in RESP2 subscribed mode
  F_PROTECTED = 1u << 12,      // DEBUG: refused unless enable-debug-command
  F_DENYOOM = 1u << 13,        // refused while used memory is over maxmemory
  F_MAY_REPLICATE = 1u << 14,  // PUBLISH: waits under CLIENT PAUSE WRITE like a write
  F_BLOCKING = 1u << 15,       // may block the client (BLPOP & co.)
  F_NO_MULTI = 1u << 16,       // refused inside MULTI (SAVE, SHUTDOWN)
};

// ACL categories (Redis' ACL_CATEGORY_*), as COMMAND INFO lists them for each command.
enum : std::uint32_t {
  C_KEYSPACE = 1u << 0,
  C_READ = 1u << 1,
  C_WRITE = 1u << 2,
  C_SET = 1u << 3,
  C_SORTEDSET = 1u << 4,
  C_LIST = 1u << 5,
  C_HASH = 1u << 6,
  C_STRING = 1u << 7,
  C_BITMAP = 1u << 8,
  C_HYPERLOGLOG = 1u << 9,
  C_GEO = 1u << 10,
  C_STREAM = 1u << 11,
  C_PUBSUB = 1u << 12,
  C_ADMIN = 1u << 13,
  C_FAST = 1u << 14,
  C_SLOW = 1u << 15,
  C_BLOCKING = 1u << 16,
  C_DANGEROUS = 1u << 17,
  C_CONNECTION = 1u << 18,
  C_TRANSACTION = 1u << 19,
  C_SCRIPTING = 1u << 20,
};

// Keyspace notification classes (notify-keyspace-events; Redis' NOTIFY_*).
enum : int {
  NOTIFY_KEYSPACE = 1 << 0,
  NOTIFY_KEYEVENT = 1 << 1,
  NOTIFY_GENERIC = 1 << 2,
  NOTIFY_STRING = 1 << 3,
  NOTIFY_LIST = 1 << 4,
  NOTIFY_SET = 1 << 5,
  NOTIFY_HASH = 1 << 6,
  NOTIFY_ZSET = 1 << 7,
  NOTIFY_EXPIRED = 1 << 8,
  NOTIFY_EVICTED = 1 << 9,
  NOTIFY_STREAM = 1 << 10,
  NOTIFY_KEY_MISS = 1 << 11,
  NOTIFY_MODULE = 1 << 13,
  NOTIFY_NEW = 1 << 14,
  NOTIFY_ALL = NOTIFY_GENERIC | NOTIFY_STRING | NOTIFY_LIST | NOTIFY_SET | NOTIFY_HASH |
               NOTIFY_ZSET | NOTIFY_EXPIRED | NOTIFY_EVICTED | NOTIFY_STREAM | NOTIFY_MODULE,
};

struct CmdDef;

struct Value {
  enum class Kind : std::uint8_t { string, list, hash, set, zset };
  Kind kind = Kind::string;
  std::string str;
  std::deque<std::string> list;
  // Hash fields / set members in reply order, with `index` (position by name) for lookups; only
  // types.cpp's helpers change them. A small hash (listpack) keeps insertion order, a small
  // all-integer set (intset) is listed sorted; the others stand for Redis' hash-table order
  // (deterministic here: insertion order, a removal moves the last one into the gap).
  std::vector<std::pair<std::string, std::string>> hash;
  std::vector<std::string> set;
  std::unordered_map<std::string, std::size_t> index;
  bool compact = true;  // listpack (hash) / intset (set) encoding, never regained once lost
  std::map<std::string, double> zscores;
  std::set<std::pair<double, std::string>> zorder;
  // eviction bookkeeping (evict.cpp): last access, accesses (new values start at Redis'
  // LFU_INIT_VAL so that they are not the first to go)
  std::int64_t lru_ms = 0;
  std::uint32_t lfu = 5;
};

// types.cpp: the containers' operations (encodings as Redis 7.0 converts them).
struct Limits {
  std::size_t hash_entries = 128, hash_value = 64, set_intset = 512, zset_entries = 128,
              zset_value = 64;
};
std::string* hash_get(Value& v, const std::string& field);
bool hash_set(Value& v, const std::string& field, std::string value, const Limits& l);  // new?
bool hash_del(Value& v, const std::string& field);
bool set_has(const Value& v, const std::string& member);
bool set_add(Value& v, const std::string& member, const Limits& l);
bool set_del(Value& v, const std::string& member);
std::vector<std::string> set_members(const Value& v);  // in reply order
void zset_put(Value& v, const std::string& member, double score);
bool zset_del(Value& v, const std::string& member);
const char* encoding_name(const Value& v, const Limits& l);  // OBJECT ENCODING

// An ACL user (acl.cpp). Lives in Impl::users (a std::map: stable addresses, sorted names).
struct User {
  std::string name;
  bool enabled = false;
  bool nopass = false;
  std::vector<std::string> passwords;
  bool allkeys = false;
  std::vector<std::string> keys;  // ~patterns
  bool allchannels = false;
  std::vector<std::string> channels;  // &patterns
  bool allcommands = false;           // +@all and nothing taken away since
  std::set<std::string> commands;     // allowed full names: "get", "client|id"
  std::map<std::string, std::vector<std::string>> first_args;  // "+select|0" style rules
};

// Never iterated where order is observable (KEYS/SCAN sort first, see db.cpp).
struct Db {
  std::int64_t avg_ttl = 0;  // INFO keyspace: the active expiry cycle's running estimate
  std::unordered_map<std::string, Value> dict;
  std::unordered_map<std::string, std::int64_t> expires;  // ms since epoch
  std::set<std::pair<std::int64_t, std::string>> by_time;
};

struct Client {
  std::uint64_t id = 0;
  std::string addr;
  std::string laddr;
  int fd = -1;
  std::int64_t ctime_ms = 0;             // connected at (CLIENT LIST age)
  std::int64_t last_interaction_ms = 0;  // last command (CLIENT LIST idle)
  std::int64_t obuf_soft_since_ms = 0;   // over the soft output limit since (0: not over)
  const CmdDef* last_cmd = nullptr;      // CLIENT LIST cmd
  int resp = 2;
  int db = 0;
  std::string name;
  bool authenticated = true;
  User* user = nullptr;  // the default user unless AUTH / HELLO AUTH named another
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
  std::string big;  // a big argument being read (parse_multibulk)
  // WAIT: blocked until replicas acknowledge `woff` (the client's last write offset)
  std::int64_t woff = 0;
  bool blocked = false;
  std::int64_t block_num = 0;
  std::int64_t block_off = 0;
  std::int64_t block_deadline_ms = 0;  // 0: forever
  // blocked on keys (blocked.cpp): BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP (list), BZPOPMIN
  // BZPOPMAX BZMPOP (zset); WAIT leaves btype at none
  enum class Btype : std::uint8_t { none, list, zset };
  Btype btype = Btype::none;
  std::vector<std::string> bkeys;
  std::string btarget;  // BLMOVE / BRPOPLPUSH destination
  bool has_target = false;
  bool wherefrom_head = true, whereto_head = true;
  std::int64_t bcount = -1;  // BLMPOP / BZMPOP count (-1: single-element replies)
  const CmdDef* bcmd = nullptr;
  bool reprocess = false;  // unblocked: its pending input runs before the turn ends
  // CLIENT REPLY OFF / SKIP (skip_next: set by SKIP, becomes skip for the next command)
  bool reply_off = false, reply_skip = false, reply_skip_next = false;
  bool no_evict = false;  // CLIENT NO-EVICT
  // transactions
  bool multi = false;
  bool dirty_exec = false;
  bool dirty_cas = false;
  std::vector<Args> queued;
  std::uint32_t queued_flags = 0;  // the queued commands' flags together (mstate.cmd_flags)
  // CLIENT PAUSE: the command that waits (run again from the top when the pause ends)
  bool postponed = false;
  Args postponed_argv;
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
  // cluster mode: ASKING (for the next command, or up to the end of a transaction), READONLY
  bool asking = false;
  bool readonly = false;
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
  int first_key, last_key, step;  // key positions (ACL key checks; tracking of reads) (0: none)
  std::uint32_t acl;              // ACL categories (C_*)
  std::vector<CmdDef> subs;       // container commands (CLIENT, CONFIG, ACL)
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
  // Redis feeds its offset only once a replication backlog exists (the first replica): a
  // primary that never had one reports offset 0 (ROLE, INFO master_repl_offset).
  bool backlog = false;
  [[nodiscard]] std::int64_t reported_offset() const {
    return backlog || replica ? repl_offset : 0;
  }
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
  std::uint64_t tracking_limit_misses = 0;  // trackingLimitUsedSlots' timeout_counter
  // CLIENT PAUSE (the strictest mode and the latest end win, as in Redis)
  enum class Pause : std::uint8_t { none, write, all };
  Pause pause = Pause::none;
  std::int64_t pause_end_ms = 0;
  std::vector<std::uint64_t> postponed;  // clients in the order their commands were held
  std::vector<std::uint64_t> unblocked;  // released, to run before the turn ends
  // blocking on keys (blocked.cpp): (db, key) -> clients in the order they blocked; keys that
  // got a list or zset since (served after the command, and in beforeSleep)
  std::map<std::pair<int, std::string>, std::vector<std::uint64_t>> blocking_keys;
  std::vector<std::pair<int, std::string>> ready_keys;
  std::set<std::pair<int, std::string>> ready_set;
  std::vector<std::uint64_t> reprocess;  // unblocked clients whose input runs next
  std::vector<std::uint64_t> dirty_clients;
  std::vector<std::uint64_t> closing_clients;  // close_asap(), in no particular order
  // WATCH: (db, key) -> the clients watching it (Redis' db->watched_keys)
  std::map<std::pair<int, std::string>, std::vector<std::uint64_t>> watched_keys;
  // ACL
  std::map<std::string, model::User> users;
  model::User* default_user = nullptr;
  // maxmemory
  std::uint64_t maxmemory = 0;
  MaxmemoryPolicy policy = MaxmemoryPolicy::noeviction;
  bool eviction_due = false;  // CONFIG SET maxmemory starts an eviction pass (evictionTimeProc)
  std::uint64_t evicted_keys = 0;
  std::uint64_t expired_keys = 0;
  // CONFIG: parameters without a home of their own, by canonical name (config.cpp)
  std::map<std::string, std::string> config;
  int notify_flags = 0;  // notify-keyspace-events
  void reset_stats();    // CONFIG RESETSTAT (info.cpp)
  // INFO's accounting (info.cpp prints it)
  std::int64_t start_ms = 0;
  std::string run_id;  // 40 hex characters from the model's Rng (also master_replid)
  mutable std::uint64_t peak_memory = 0;
  std::uint64_t dirty = 0;  // rdb_changes_since_last_save
  std::int64_t last_save_ms = 0;  // LASTSAVE
  std::uint64_t net_input_bytes = 0, net_output_bytes = 0;
  std::uint64_t reads_processed = 0, writes_processed = 0;
  std::uint64_t keyspace_hits = 0, keyspace_misses = 0;
  std::uint64_t total_error_replies = 0;
  std::map<std::string, std::uint64_t> error_counts;  // errorstat_<CODE>
  struct CmdStat {
    std::uint64_t calls = 0, usec = 0, rejected = 0, failed = 0;
  };
  std::map<const CmdDef*, CmdStat> cmdstats;  // printed by name, never iterated as is
  bool read_command = false;                  // the running command counts keyspace hits
  std::uint64_t numcommands = 0;              // total_commands_processed (call()s)
  std::uint64_t prev_err_count = 0;           // incrCommandStatsOnError's mark
  // connections (serve mode's accept loop reports refusals)
  int maxclients = 10000;
  std::uint64_t total_connections = 0;
  std::uint64_t rejected_connections = 0;
  // client-output-buffer-limit per class (CLIENT_TYPE_NORMAL, _SLAVE, _PUBSUB)
  struct ObufLimit {
    std::uint64_t hard = 0, soft = 0;
    std::int64_t soft_seconds = 0;
  };
  ObufLimit obuf_limits[3] = {
      {0, 0, 0}, {256ull << 20, 64ull << 20, 60}, {32ull << 20, 8ull << 20, 60}};
  // cluster mode (cluster.cpp): the gossiped view and this node's own slot marks
  ClusterView cview;
  std::vector<RedisModel::FailReport> fail_reports;  // set by the host (set_failure_reports)
  // Every node's slot ranges (CLUSTER NODES), from cview.slot_owner; emptied when it changes.
  std::vector<std::vector<std::pair<int, int>>> slot_ranges;
  std::map<int, std::string> migrating;  // slot -> node id
  std::map<int, std::string> importing;

  static const std::vector<CmdDef>& table();           // command_table.cpp
  static const std::vector<CmdDef>& sentinel_table();  // sentinel_mode.cpp
  // The table this server dispatches from (redis-server --sentinel has its own).
  const std::vector<CmdDef>& commands() const {
    return opt.sentinel_mode ? sentinel_table() : table();
  }

  Impl(Hooks h, Rng r, RedisModelOptions o);  // redis_model.cpp

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
  // CLOSE_AFTER_REPLY: no more input is read; the connection goes after its output (flush_outputs).
  void close_asap(Client& c) {
    if (c.closing) return;
    c.closing = true;
    closing_clients.push_back(c.id);
  }
  // CLIENT REPLY OFF / SKIP: replies are dropped, pushes (messages, invalidations) are not.
  bool pushing = false;
  [[nodiscard]] bool muted(const Client& c) const {
    return (c.reply_off || c.reply_skip) && !pushing;
  }
  void ok(Client& c) { status(c, "OK"); }
  void status(Client& c, std::string_view s) {
    if (muted(c)) return;
    resp::append_simple(c.out, s);
    mark(c);
  }
  // As addReplyError: a message starting with '-' carries its own code, otherwise "ERR " is
  // prepended; CR/LF become spaces.
  void error(Client& c, std::string_view msg) {
    if (muted(c)) {
      count_error("ERR");
      return;
    }
    if (!msg.empty() && msg[0] == '-') {
      resp::append_error(c.out, msg.substr(1));
      const auto sp = msg.substr(0, 32).find(' ');
      count_error(sp == std::string_view::npos ? std::string_view("ERR") : msg.substr(1, sp - 1));
    } else {
      resp::append_error(c.out, "ERR " + std::string(msg));
      count_error("ERR");
    }
    mark(c);
  }
  // afterErrorReply: total_error_replies and errorstat_<code> (Redis tracks 128 codes at most).
  void count_error(std::string_view code) {
    ++total_error_replies;
    auto it = error_counts.find(std::string(code));
    if (it != error_counts.end()) {
      ++it->second;
    } else if (error_counts.size() < 128) {
      error_counts.emplace(std::string(code), 1);
    }
  }
  void integer(Client& c, std::int64_t v) {
    if (muted(c)) return;
    resp::append_number(c.out, v);
    mark(c);
  }
  void bulk(Client& c, std::string_view s) {
    if (muted(c)) return;
    resp::append_blob(c.out, s);
    mark(c);
  }
  void verbatim(Client& c, std::string_view text) {
    if (muted(c)) return;
    resp::append_verbatim(c.out, "txt", text, c.proto());
    mark(c);
  }
  void null(Client& c) {
    if (muted(c)) return;
    resp::append_null(c.out, c.proto());
    mark(c);
  }
  void null_array(Client& c) {
    if (muted(c)) return;
    resp::append_null_array(c.out, c.proto());
    mark(c);
  }
  void array(Client& c, std::size_t n) {
    if (muted(c)) return;
    resp::append_array_header(c.out, n);
    mark(c);
  }
  void map(Client& c, std::size_t n) {
    if (muted(c)) return;
    resp::append_map_header(c.out, n, c.proto());
    mark(c);
  }
  void set_len(Client& c, std::size_t n) {
    if (muted(c)) return;
    resp::append_set_header(c.out, n, c.proto());
    mark(c);
  }
  void push(Client& c, std::size_t n) {
    if (muted(c)) return;
    resp::append_push_header(c.out, n, c.proto());
    mark(c);
  }
  void dbl(Client& c, double d) {
    if (muted(c)) return;
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

  // ---- keyspace notifications (notify.cpp) ----
  void notify(int type, std::string_view event, const std::string& key, int dbid);
  void notify(int type, std::string_view event, const std::string& key, Client& c) {
    notify(type, event, key, c.db);
  }
  model::Limits limits() const;  // the encodings' thresholds from CONFIG (config.cpp)

  // ---- keyspace (db.cpp) ----
  // dbAdd: a new key (NOTIFY_NEW "new"; a list or zset wakes clients blocked on it).
  Value& db_add(Db& db, const std::string& key, Value v);
  // setKey: a value replacing whatever the key held (TTL kept only with keepttl).
  void set_value(Client& c, Db& db, const std::string& key, Value v, bool keepttl);
  void set_key(Client& c, Db& db, const std::string& key, std::string val, bool keepttl) {
    Value v;
    v.str = std::move(val);
    set_value(c, db, key, std::move(v), keepttl);
  }
  // lookupKeyRead with its miss notification (NOTIFY_KEY_MISS "keymiss").
  Value* lookup_read(Client& c, const std::string& key);
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
  void send_tracking_frame(Client& c, const std::string* key,
                           const std::vector<std::string>* keys, bool null_all);
  void tracking_invalidate(Client* by, const std::string& key, bool bcast = true);
  void flush_pending_self();
  void tracking_on_flush();
  void tracking_limit();  // trackingLimitUsedSlots: tracking-table-max-keys
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
  // checkClientOutputBufferLimits for `unsent` reply bytes (the soft limit's clock starts here).
  bool obuf_limit_reached(Client& c, std::size_t unsent);

  // ---- command dispatch (server.cpp) ----
  static const CmdDef* lookup_in(const std::vector<CmdDef>& t, std::string_view name);
  const CmdDef* find_command(const Args& a);
  // rejectCommand: flags the transaction; for EXEC, aborts it ("EXECABORT ... because of: ").
  void reject(Client& c, const CmdDef* cmd, std::string_view msg);
  // Returns false when CLIENT PAUSE holds the command (the client waits, argv kept).
  bool process_command(Client& c, Args& a);
  bool check_and_run(Client& c, Args& a);  // process_command without the ASKING bookkeeping
  void call(Client& c, const CmdDef& cmd, Args& a);
  // The end of an event-loop turn (beforeSleep): a pause past its end is lifted, released
  // clients run, a pending eviction pass runs.
  void before_sleep();

  // ---- CLIENT PAUSE (networking.cpp) ----
  // checkClientPauseTimeoutAndReturnIfPaused: lifts a pause past its end, true while paused.
  bool paused();
  void pause_clients(std::int64_t end_ms, Pause mode);
  void unpause_clients();
  void run_unblocked();

  // ---- ACL (acl.cpp) ----
  void init_users();  // the default user (requirepass) and RedisModelOptions::users
  // "" when the rules applied (to a copy first: nothing changes on an error), else the error.
  std::string acl_setuser(const std::string& name, const std::vector<std::string>& rules);
  // The NOPERM text for a denied command (empty: allowed); `in_exec` picks EXEC's re-check text.
  std::string acl_denied(const Client& c, const CmdDef& cmd, const Args& a, bool in_exec) const;
  bool auth_required(const Client& c) const;
  void kill_pubsub_clients_if_needed(const model::User& u);

  // ---- maxmemory (evict.cpp) ----
  std::uint64_t used_memory() const;
  std::uint64_t key_memory(const std::string& key, const Value& v, bool volatile_key) const;
  // performEvictions: false (EVICT_FAIL) when over the limit and nothing more can be evicted.
  bool perform_evictions();

  // ---- cluster mode (cluster.cpp) ----
  // getNodeByQuery + clusterRedirectClient: true when the command was refused (reply written).
  bool cluster_redirect(Client& c, const CmdDef& cmd, const Args& a);
  const ClusterNodeInfo* cluster_node(std::string_view id) const;
  int cluster_my_index() const;
  bool cluster_i_am_replica() const;

  // ---- blocking on keys (blocked.cpp) ----
  void signal_key_ready(Db& db, const std::string& key);
  // blockForKeys: the client waits for a list or zset at one of `keys` (deadline 0: forever).
  void block_for_keys(Client& c, Client::Btype type, const std::vector<std::string>& keys,
                      std::int64_t deadline_ms);
  void unblock_keys(Client& c);  // unblockClient (queued for its remaining input)
  void handle_blocked_on_keys();
  void run_reprocess();
  // The two sides' serving (t_list.cpp, t_zset.cpp); true when the key is gone.
  bool serve_blocked_list(Client& receiver, Db& db, const std::string& key);
  bool serve_blocked_zset(Client& receiver, Db& db, const std::string& key);

  // ---- replication and WAIT (replication.cpp) ----
  void propagate(Client& c, const Args& a);
  void propagate_bytes(Client& c, std::size_t bytes);  // propagate()'s accounting alone
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

// getPositiveLongFromObjectOrReply: 0 or more; a bad value (also one that does not parse)
// answers `msg`, by default "value is out of range, must be positive".
inline bool get_positive_or_reply(Impl& s, Client& c, const std::string& arg, std::int64_t& v,
                                  const char* msg = nullptr) {
  const char* m = msg ? msg : "value is out of range, must be positive";
  if (!string2ll(arg, v) || v < 0) {
    s.error(c, m);
    return false;
  }
  return true;
}

// Shared by several command files (defined where the comment says).
// db.cpp: lookupKeyWrite + create (wrong = the key holds another type), lookupKeyRead + type check.
Value* lookup_or_create(Impl& s, Client& c, const std::string& key, Value::Kind kind, bool& wrong);
Value* lookup_typed(Impl& s, Client& c, const std::string& key, Value::Kind kind, bool& wrong);
// The value of `key` for a command that reads (typed_read: expired keys go) or writes
// (typed_write) one of `kind`; another kind answers WRONGTYPE (wrong = true, nullptr for a write).
Value* typed_read(Impl& s, Client& c, const std::string& key, Value::Kind kind, bool& wrong);
Value* typed_write(Impl& s, Client& c, const std::string& key, Value::Kind kind, bool& wrong);
const char* type_name(const Value* v);
// db.cpp: parseScanCursorOrReply; HSCAN/SSCAN/ZSCAN over (name, value) items (compact
// encodings answer everything at once with cursor 0, as Redis).
bool parse_cursor(Impl& s, Client& c, const std::string& arg, std::uint64_t& cursor);
void scan_collection(Impl& s, Client& c, Args& a, std::uint64_t cursor,
                     std::vector<std::pair<std::string, std::string>> items, bool pairs,
                     bool compact);
// blocked.cpp: a blocking command's timeout (seconds, a float) as a deadline (0: none).
bool parse_block_timeout(Impl& s, Client& c, const std::string& arg, std::int64_t& deadline);
// client_cmds.cpp: CLIENT LIST's line for one client
std::string client_info_line(const Impl& s, const Client& t);
// networking.cpp: addReplyHelp (header, lines, the HELP footer) and
// addReplySubcommandSyntaxError.
void help_reply(Impl& s, Client& c, const Args& a, std::initializer_list<const char*> lines);
void subcommand_syntax(Impl& s, Client& c, const Args& a);
// multi.cpp
void unwatch_all(Impl& s, Client& c);
void discard_transaction(Impl& s, Client& c);
// networking.cpp: clientSetName (false, with the error sent, for an invalid name).
bool set_name(Impl& s, Client& c, const std::string& n);
// acl.cpp: ACLAuthenticateUser (the user, or nullptr when the pair is refused).
User* auth_user(Impl& s, std::string_view user, std::string_view pass);
// acl.cpp: splits ACL SETUSER rules given as one string.
std::vector<std::string> split_rules(std::string_view rules);
// evict.cpp
bool parse_policy(std::string_view s, MaxmemoryPolicy& out);
const char* policy_name(MaxmemoryPolicy p);
// info.cpp: bytesToHuman; INFO's text for argv[first..]
std::string bytes_to_human(std::uint64_t n);
std::string info_text(const Impl& s, const Args& a, std::size_t first);
// config.cpp: a start-up parameter (redis-server --name value): "" or the error
std::string config_startup(Impl& s, const std::string& name, const std::string& value);

}  // namespace model
}  // namespace lockwire::sim
