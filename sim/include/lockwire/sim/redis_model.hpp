// The simulated Redis server, sans-I/O: bytes in per client, bytes out per client.
//
// Byte-exact with redis-server 7.0.15 for the commands it supports (see the table in
// sim/src/model/command_table.cpp); everything else answers as Redis does for an unknown command. Time comes from
// the host (a simulated node's wall clock, or the real clock in serve mode), so expiry follows
// the server machine's own clock, steps and drift included.
//
// Hosts: sim::SimRedis (a node on the simulated network) and `lockwire-sim serve` (real TCP).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lockwire/sim/rng.hpp"

namespace lockwire::sim {

// maxmemory-policy (Redis' names with '-' for '_'; see sim/README.md for the eviction model).
enum class MaxmemoryPolicy : std::uint8_t {
  noeviction,
  allkeys_lru,
  allkeys_lfu,
  allkeys_random,
  volatile_lru,
  volatile_lfu,
  volatile_random,
  volatile_ttl,
};

// An ACL user as `ACL SETUSER <name> <rules>` creates it; rules are separated by spaces, e.g.
// {"app", "on >pw ~lockwire:* resetchannels +@all -client|tracking -@dangerous"}.
struct AclUserSpec {
  std::string name;
  std::string rules;
};

// CLIENT PAUSE's modes.
enum class PauseMode : std::uint8_t { write, all };

// Cluster mode (`redis-server --cluster-enabled yes`): what one node believes about the cluster,
// as its gossip would have taught it. The host (SimCluster) writes it with set_cluster_view();
// the node changes it itself only through CLUSTER SETSLOT and tells the host (Hooks::cluster).
struct ClusterNodeInfo {
  std::string id;                 // 40 lowercase hex characters
  std::string ip;                 // what CLUSTER SHARDS / SLOTS / NODES / MOVED name
  int port = 6379;                // the bus port is port + 10000
  bool primary = true;
  std::string primary_of;         // a replica's primary (its id)
  std::uint64_t config_epoch = 0;
  std::int64_t repl_offset = 0;   // as last gossiped (0 for a replica: "loading")
  bool failed = false;            // FAIL (the majority agreed)
  bool pfail = false;             // PFAIL (this node's own timeout)
  bool connected = true;          // the bus link to it is up
  std::int64_t pong_received_ms = 0;
  std::int64_t ping_sent_ms = 0;  // the PING still waiting for its PONG (0: none)
};

struct ClusterView {
  std::string myself;                  // this node's id (one of nodes)
  std::vector<ClusterNodeInfo> nodes;  // in the order CLUSTER NODES / SHARDS list them
  std::vector<int> slot_owner;         // kClusterSlots entries: an index into nodes, or -1
  bool ok = true;                      // cluster_state
  std::uint64_t current_epoch = 0;
  static constexpr int kClusterSlots = 16384;
};

// CLUSTER KEYSLOT: CRC16 (XMODEM) of the key, or of its first non-empty {hash tag}, mod 16384.
[[nodiscard]] int cluster_key_slot(std::string_view key) noexcept;

struct RedisModelOptions {
  std::string requirepass;  // non-empty: the default user needs this password
  std::vector<AclUserSpec> users;  // created at start-up (invalid rules throw)
  std::uint64_t maxmemory = 0;     // bytes (0: no limit); used memory is modelled, see README
  MaxmemoryPolicy maxmemory_policy = MaxmemoryPolicy::noeviction;
  int databases = 16;
  std::size_t max_query_bytes = 1024ull * 1024 * 1024;  // client-query-buffer-limit
  std::uint64_t max_bulk = 512ull * 1024 * 1024;        // proto-max-bulk-len
  int active_expire_keys_per_cycle = 2000;              // bound on cron work per database
  bool enable_debug_command = false;  // as redis.conf (DEBUG SLEEP is refused by default)
  int tcp_port = 6379;                // CONFIG GET port, INFO tcp_port
  std::string dir = "/var/lib/redis";  // CONFIG GET dir (serve mode: its working directory)
  // INFO server / memory: the host machine (serve mode fills in the real ones).
  std::string os = "Linux 6.1.0 x86_64";
  std::int64_t process_id = 1;
  std::string executable = "/usr/bin/redis-server";
  std::uint64_t total_system_memory = 8ull << 30;
  // Start-up configuration as redis-server's command line gives it ("--save ''" is
  // {"save", ""}); applied with CONFIG SET's rules, immutable parameters included. Invalid
  // values throw std::invalid_argument.
  std::vector<std::pair<std::string, std::string>> config;
  int maxclients = 10000;
  // `redis-server --sentinel`: only the sentinel command table (PING, HELLO, AUTH, CLIENT,
  // (P)(UN)SUBSCRIBE, PUBLISH, INFO, ROLE, SENTINEL); SENTINEL, ROLE and INFO are answered by
  // Hooks::sentinel (sim/src/sentinel*.cpp), every other command is unknown, as on 7.0.15.
  bool sentinel_mode = false;
  // `--cluster-enabled yes`: keys are checked against the ClusterView (MOVED, ASK, TRYAGAIN,
  // CROSSSLOT, CLUSTERDOWN), HELLO says mode "cluster", SELECT of another database is refused.
  bool cluster_enabled = false;
};

// A full copy of the keyspace (persistence / replication model).
struct RedisSnapshot;

class RedisModel {
 public:
  using ClientId = std::uint64_t;

  struct Hooks {
    // Bytes for a client (called after each feed()/cron() with everything produced for it).
    std::function<void(ClientId, std::string_view)> write;
    // The server closes this connection (after the bytes already given to write()).
    std::function<void(ClientId)> close;
    // The server machine's wall clock, in microseconds since the Unix epoch.
    std::function<std::int64_t()> wall_us;
    // Optional: observable server events for the trace ("cmd", "key", ...).
    std::function<void(std::string_view what, std::string_view detail)> trace;
    // Optional: the process' CPU time so far (INFO cpu; serve mode: getrusage), and its
    // resident memory (INFO used_memory_rss).
    std::function<void(std::int64_t& sys_us, std::int64_t& user_us)> cpu;
    std::function<std::uint64_t()> rss;
    // Optional: SHUTDOWN asks the host to stop the server (serve mode exits); every client is
    // closed after the call. Without it SHUTDOWN fails as a server that cannot stop.
    std::function<void()> shutdown;
    // Optional: DEBUG SLEEP asks the host to stop the whole server for this many microseconds.
    std::function<void(std::int64_t us)> stall;
    // Optional: a write command applied (argv, database) — the replication stream.
    std::function<void(int db, const std::vector<std::string>& argv)> propagate;
    // Sentinel mode: the reply bytes (RESP2 or RESP3 as `resp` says) to SENTINEL ..., ROLE or
    // INFO; arity and unknown subcommands are checked by the model first.
    std::function<std::string(const std::vector<std::string>& argv, int resp)> sentinel;
    // Cluster mode: a CLUSTER command changed what this node believes (SETSLOT NODE) or asked
    // for something the cluster does (FAILOVER); argv as received, after the node said +OK.
    std::function<void(const std::vector<std::string>& argv)> cluster;
    // Cluster mode: MIGRATE's transfer. `keys` holds the keys (database `db`) to RESTORE on
    // host:port; returns "" (done), "NOHOST" (nothing listens there: IOERR) or the target's
    // error text (e.g. "BUSYKEY Target key name already exists.").
    std::function<std::string(const std::string& host, int port, int db,
                              const RedisSnapshot& keys, bool replace)>
        migrate;
  };

  RedisModel(Hooks hooks, Rng rng, RedisModelOptions options = {});
  ~RedisModel();
  RedisModel(const RedisModel&) = delete;
  RedisModel& operator=(const RedisModel&) = delete;

  // A new connection: the peer's and the local address as "ip:port" (CLIENT LIST's addr and
  // laddr) and the host's descriptor number for it (CLIENT LIST's fd; -1 when there is none).
  [[nodiscard]] ClientId add_client(std::string addr = "127.0.0.1:0", std::string laddr = {},
                                    int fd = -1);
  void remove_client(ClientId id) noexcept;  // the peer went away
  // The client still has input the server has not run: a command postponed by CLIENT PAUSE,
  // blocked in WAIT, or not complete yet (a peer that goes now loses it).
  [[nodiscard]] bool has_pending_input(ClientId id) const noexcept;
  // Parses and executes whatever complete commands `bytes` completes.
  void feed(ClientId id, std::string_view bytes);
  // client-output-buffer-limit: the host tells how many reply bytes it still holds for a client
  // (given to Hooks::write, not yet taken by the peer), each time it added some. True when that
  // is over the limit of the client's class (normal, pubsub; hard, or soft for longer than its
  // seconds): the model has freed the client (no Hooks::close), and the host closes the
  // connection at once, dropping what it holds — Redis frees such a client asynchronously with
  // its output discarded.
  [[nodiscard]] bool output_backlog(ClientId id, std::size_t unsent);
  // maxclients (CONFIG GET/SET maxclients): the host refuses connections beyond it with
  // "-ERR max number of clients reached" and calls note_rejected_connection() (INFO's
  // rejected_connections).
  [[nodiscard]] int maxclients() const noexcept;
  void note_rejected_connection() noexcept;
  // Periodic chores (active expiry, pause timeouts); call at hz 10 on the server's clock.
  void cron();
  // Wakes clients blocked in WAIT whose timeout passed; call at next_deadline_us() (wall clock,
  // -1: none) for millisecond precision between crons.
  void tick();
  [[nodiscard]] std::int64_t next_deadline_us() const;

  // PUBLISH from the server itself (a sentinel's events): pushes to every subscriber, flushed;
  // returns the number of receivers.
  std::int64_t publish(const std::string& channel, const std::string& message);

  // --- fault hooks ---
  // Every command not allowed while loading (or busy) answers with the real server's error.
  void set_loading(bool on) noexcept;
  void set_busy(bool on) noexcept;
  // Replica mode: writes from clients get -READONLY; apply() feeds the replication stream.
  void set_replica(bool on, std::string master_host = {}, int master_port = 0);
  [[nodiscard]] bool is_replica() const noexcept;
  void apply(int db, const std::vector<std::string>& argv);  // a propagated write
  // The replication offset (bytes of propagated commands) and what replicas acknowledged
  // (setting acks also completes WAITs they satisfy).
  [[nodiscard]] std::int64_t repl_offset() const noexcept;
  void set_replica_acks(std::vector<std::pair<std::string, std::int64_t>> replicas);

  // --- server conditions (what an operator does with CLIENT PAUSE, ACL SETUSER, CONFIG SET) ---
  // CLIENT PAUSE <ms> WRITE|ALL: commands that would write (or all) wait, in arrival order.
  void pause_clients(std::int64_t ms, PauseMode mode);
  void unpause_clients();  // CLIENT UNPAUSE
  // ACL SETUSER name rules...; returns "" or the error reply's text (without "-ERR ").
  [[nodiscard]] std::string acl_setuser(std::string_view name, std::string_view rules);
  void set_maxmemory(std::uint64_t bytes, MaxmemoryPolicy policy);  // CONFIG SET maxmemory ...
  [[nodiscard]] std::uint64_t used_memory() const;  // the model's estimate (INFO used_memory)
  [[nodiscard]] std::uint64_t evicted_keys() const noexcept;

  // --- cluster mode ---
  // What this node believes (the migrating/importing marks are its own and stay).
  void set_cluster_view(ClusterView view);
  [[nodiscard]] const ClusterView& cluster_view() const noexcept;
  // The failure reports this node holds (cluster.c's fail_reports): one per (subject, reporting
  // master), with the moment it was last received on this node's wall clock (ms). CLUSTER
  // COUNT-FAILURE-REPORTS counts a subject's reports not older than 2 * cluster-node-timeout
  // (CLUSTER_FAIL_REPORT_VALIDITY_MULT), as of its call. Kept apart from the view: the host
  // refreshes them every bus tick.
  struct FailReport {
    std::string subject;  // node id
    std::int64_t received_ms = 0;
  };
  void set_failure_reports(std::vector<FailReport> reports);
  // CLUSTER SETSLOT's local marks: the node id a slot migrates to / imports from ("" if none).
  [[nodiscard]] std::string migrating_to(int slot) const;
  [[nodiscard]] std::string importing_from(int slot) const;
  void clear_slot_marks();  // a node that becomes a replica closes its slots
  // MIGRATE's RESTORE on the target: "" or the error text (BUSYKEY without replace).
  [[nodiscard]] std::string restore_keys(const RedisSnapshot& keys, int db, bool replace);
  [[nodiscard]] std::size_t count_keys_in_slot(int slot) const;
  [[nodiscard]] std::vector<std::string> keys_in_slot(int slot) const;  // sorted by name
  // The PING a primary writes into its replication stream (repl-ping-replica-period): moves
  // the offsets, so that a synced replica is not reported as "loading".
  void replication_ping();

  // --- persistence ---
  [[nodiscard]] std::shared_ptr<const RedisSnapshot> snapshot() const;
  void restore(const RedisSnapshot& snap);
  void flush_all_data();
  // Drops every client (a restart); no hook is called for them. Runtime configuration goes
  // back to the options (no pause, the configured users and maxmemory).
  void drop_all_clients() noexcept;

  // --- inspection for tests and checkers ---
  [[nodiscard]] std::size_t dbsize(int db = 0) const;
  [[nodiscard]] bool exists(std::string_view key, int db = 0) const;
  [[nodiscard]] std::vector<ClientId> clients() const;
  [[nodiscard]] std::uint64_t commands_processed() const noexcept;
  // Ground truth for race checkers, without side effects (no lazy expiry, no tracking, no
  // trace): a key as of the server's wall clock now. Absent or logically expired: found = false.
  // String: {value}; hash: {field, value, ...}; set: members; zset: members in score order.
  struct Peek {
    bool found = false;
    std::vector<std::string> items;
    std::int64_t expire_at_ms = -1;  // -1: no TTL
  };
  [[nodiscard]] Peek peek(std::string_view key, int db = 0) const;
  [[nodiscard]] std::int64_t wall_ms() const;  // the server's wall clock, ms since the epoch

  struct Impl;  // sim/src/model/model_impl.hpp; public only so the model's files can name it

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace lockwire::sim
