// A RESP3 connection to one Redis server, written only against the seam (seam.hpp), so it runs
// unchanged on libuv and in the simulator.
//
// - Automatic pipelining: requests submitted while others are in flight go out together in the
//   next write; replies are matched in submission order.
// - Pushes (frames starting '>': pub/sub messages and acks, tracking invalidations) go to the push
//   handlers, never to a request.
// - Transaction lane: Redis keeps WATCH state per connection and EXEC/UNWATCH clear *all* of it, so
//   while one caller holds a watch transaction (WATCH sent, EXEC/UNWATCH not yet sent) no other
//   request that touches transaction state (MULTI/EXEC/WATCH/UNWATCH/DISCARD/RESET) is written;
//   such requests wait in order. Plain commands keep flowing. A request holding a MULTI..EXEC block
//   (and any plain commands around it) is always written contiguously, so nothing else is ever
//   queued inside the block.
// - Honest deadlines: a request whose deadline passes before it was written is removed and fails
//   with Errc::not_sent; one already written fails with Errc::outcome_unknown and its eventual
//   reply is still read (keeping the stream in sync) and handed to RequestOptions::on_late_reply.
//   If the connection drops before that reply, on_late_reply gets Errc::connection_lost (or
//   Errc::closed) with no replies: the outcome stays unknown and must be read back.
// - Connection loss: written requests fail with outcome_unknown; unwritten ones stay queued for
//   the reconnect (auto_reconnect) or fail with not_sent. A held WatchTxn is lost: its exec()
//   reports not_sent. Reconnects use capped exponential backoff with jitter from Loop::random().
//   After each handshake the state handlers see `ready` first (their requests are written before
//   the queued backlog: re-subscribe / re-enable tracking there).
// - Every request is checked (request.hpp: RESP arrays of blob strings, command count, MULTI/
//   EXEC/WATCH placement; a RequestBuilder's record is used, any other request's bytes are
//   walked): send() takes plain requests and one MULTI..EXEC block with plain commands around it,
//   watch() takes WATCH + reads. RESET, HELLO, MONITOR and CLIENT REPLY are refused
//   (Errc::bad_request): they would break RESP3 or reply matching. In RESP3 a (P|S)SUBSCRIBE
//   is acknowledged by one push per channel, or refused with an error reply (NOPERM where the
//   ACL grants no channel access, the default for new Redis 7 users): its reply is the first
//   acknowledgement push or that error (Errc::server_error), and every acknowledgement also
//   reaches the push handlers. At most 8 subscribe commands per request. (P|S)UNSUBSCRIBE is
//   never refused and has no reply: its handler completes (ok, no replies) once written.
// - Sentinel discovery (options.sentinel): before each connect the connection asks the
//   sentinels in order (`SENTINEL GET-MASTER-ADDR-BY-NAME <name>`, each bounded by
//   connect_timeout; the first answer wins and its sentinel moves to the front), connects to
//   that address and, in the handshake, checks with ROLE that it is a master. A replica, a
//   sentinel, an unanswered or refused ROLE, and later a -READONLY reply to any request, are a
//   failed connection: asked again after the usual backoff. When no sentinel names a primary,
//   the state handlers see `disconnected` with Errc::connect_failed and last_error() says what
//   each sentinel answered. The connection keeps one RESP3 connection to the sentinel that
//   answered last, subscribed to +switch-master; when the master of our name moves away from
//   server() (or, after that link was lost and re-made, a sentinel names another primary), the
//   connection is dropped (written requests fail with outcome_unknown, as for any loss; state
//   handlers see `disconnected` with Errc::connection_lost) and reconnects through discovery.
//   server(), primary_epoch() and config_epoch() tell the lock layer the primary changed.
// - Handlers never run inside the call that caused them (errors found in send() are reported
//   from a posted task). A handler may close or destroy the Connection.
// - A WatchTxn must not outlive its Connection.
//
// Implemented in loop/src/ (target lockwire_loop): connection.cpp (public methods, submission,
// queue, lane, deadlines, loss, close), replies.cpp (reply matching, pushes), handshake.cpp
// (connecting, handshake, fencing, reconnects, health check), request_check.cpp (the request
// rules), sentinel.cpp (the discovery machine, no I/O) and sentinel_link.cpp (asking and
// watching the sentinels); connection_impl.hpp is their private header. Owned by loop/.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "lockwire/loop/inline_function.hpp"
#include "lockwire/loop/request.hpp"
#include "lockwire/loop/seam.hpp"
#include "lockwire/resp/node.hpp"
#include "lockwire/resp/parser.hpp"

namespace lockwire::loop {

enum class Errc {
  ok = 0,
  not_sent,             // never written: deadline passed in the queue, or connection down
  outcome_unknown,      // written, but no reply (deadline passed or connection lost)
  connection_lost,      // the connection dropped (state changes / reconnect hooks)
  connect_failed,       // could not connect / handshake failed
  resp3_refused,        // HELLO 3 refused: lockwire needs RESP3 pushes
  auth_failed,          // AUTH / HELLO AUTH rejected
  protocol_error,       // malformed RESP or a reply nobody was waiting for
  input_limit,          // max buffered input exceeded
  output_limit,         // max buffered output exceeded
  server_error,         // a reply was an error frame (the frame is still given to the handler)
  closed,               // the connection was closed by its owner
  bad_url,              // malformed redis:// rediss:// unix:// redis-sentinel:// URL
  bad_request,          // request bytes malformed, or a command that would break the connection
                        // (RESET, HELLO, MONITOR, CLIENT REPLY), or misplaced MULTI/EXEC/WATCH
  health_check_failed,  // the idle PING got no byte back within health_check_interval
};

[[nodiscard]] const std::error_category& connection_category() noexcept;
[[nodiscard]] std::error_code make_error_code(Errc e) noexcept;

struct Backoff {
  Nanos initial{std::chrono::milliseconds(10)};
  Nanos max{std::chrono::seconds(2)};
  double multiplier = 2.0;  // jitter: uniform in [delay/2, delay], drawn from Loop::random()
};

// Redis Sentinel discovery (ConnectionOptions::sentinel). The sentinels are
// ConnectionOptions::seeds (or `endpoint` alone when seeds is empty), asked in that order.
// ConnectionOptions::username/password/db are for the data nodes; these credentials for the
// sentinels (empty: no AUTH). TLS for the sentinels and the data nodes follows endpoint.tls.
struct SentinelOptions {
  std::string master_name;
  std::string username;  // empty: "default" when password is set
  std::string password;
  // Besides the sentinel that answered, keep a subscription on every listed sentinel, so a
  // failover is learnt from its leader (+promoted-slave) at the moment the leader starts naming
  // the new primary — not ~0.1 s later from +switch-master, while another client may already be
  // granted there. Costs one idle connection per sentinel. Off: only the answering sentinel
  // is watched (+switch-master).
  bool watch_every_sentinel = true;
  // Ask every listed sentinel (SENTINEL MASTER and SENTINEL SENTINELS, a fifth of down-after
  // apart, at most 1 s) how long no failover away from the current primary can start:
  // Connection::vouched_until(). The lock layer counts a lease only up to it, so that a holder
  // cut off from the sentinels (with its primary) stops before a failover can complete
  // (docs/protocol.md, *Partitions*). Implies a watch connection per sentinel. Off: leases
  // count up to their TTL; a holder partitioned with the old primary may then overlap a new
  // holder on the promoted replica.
  bool vouch = true;
};

struct ConnectionOptions {
  // The server. With `sentinel` set only endpoint.tls is used (for every stream: sentinels and
  // data nodes; a non-empty tls->server_name then applies to all of them).
  Endpoint endpoint;
  // Every endpoint a URL lists, in its order (one for a single-host URL; parse_url sets
  // endpoint = seeds.front()). With `sentinel` set: the sentinels. Otherwise the connection
  // uses `endpoint` only: the seeds are kept for a Cluster client (any one node suffices).
  std::vector<Endpoint> seeds;
  // Set: before each (re)connect the sentinels name the primary of master_name (see
  // Connection, "Sentinel discovery").
  std::optional<SentinelOptions> sentinel;
  // Set (and no sentinel): before each (re)connect the connection asks this which server to
  // connect to — `answer(endpoint, "")`, or `answer(nullopt, why)` to fail that attempt
  // (state `disconnected`, Errc::connect_failed, last_error = why; retried after the backoff).
  // As with sentinel discovery, the handshake checks with ROLE that the server is a master, and
  // a -READONLY or -MOVED reply to a request (a demoted node) drops the connection to locate
  // again. The Cluster lock client uses it: one connection per shard, following its primary.
  using Answer = std::function<void(std::optional<Endpoint>, std::string why)>;
  std::function<void(Answer)> locate;
  // With `locate`: whether a -MOVED reply (its text, without the '-') means this server is no
  // longer the one to use. Unset: every MOVED does. A Cluster shard connection says no for a
  // slot that moved to another primary (a finished migration): the server still serves the
  // shard's other slots, and dropping it would fail every pipelined request with it.
  std::function<bool(std::string_view moved)> leave_on_moved;
  std::string username;  // empty: "default" when password is set
  std::string password;
  int db = 0;
  std::string client_name;
  Nanos connect_timeout{std::chrono::seconds(5)};
  bool auto_reconnect = true;
  // Fence abandoned connections: after a reconnect, kill the previous connection on the server
  // (`CLIENT KILL ID <id> ADDR <addr>`, learnt from `CLIENT INFO` at its handshake) before
  // anything else is sent, so bytes still in flight on it (TCP retransmissions, a half-open
  // socket) can never be applied after requests of the new connection. ID and ADDR together
  // never match another client, even after a server restart reused the id. Errors (NOPERM
  // under a restrictive ACL, servers before 6.2) are ignored: no fencing, nothing else changes.
  // Costs two commands per (re)connect, pipelined with HELLO. The lock client turns it on.
  bool fence_abandoned = false;
  Backoff reconnect;
  // 0 = off. Every interval: a PING when the connection is idle; the connection is dropped
  // (health_check_failed) when that PING, or any request, gets no byte back for a whole
  // interval. It bounds how long requests wait behind a stream stuck in TCP's retransmission
  // backoff after a network partition heals (otherwise up to about the partition's length).
  Nanos health_check_interval{0};
  std::size_t max_input_bytes = 1024ull * 1024 * 1024;
  std::size_t max_output_bytes = 256ull * 1024 * 1024;
  resp::Limits limits;
};

// Parses "redis://[user:pass@]host[:port][/db]", "rediss://…", "unix:///path[?db=N]" (with
// optional user/password query parameters as in redis-specifications uri/*.txt), seed lists
// "redis[s]://[user:pass@]h1[:p1],h2[:p2]…[/db]" (seeds; the connection itself uses the
// first), and Lettuce's Sentinel form
// "redis[s]-sentinel://[user:pass@]h1[:p1][,h2[:p2]…][/db][?…]#master-name" (default port
// 26379; rediss-sentinel: TLS to the sentinels and the data nodes). The user info, password=
// and /db are for the data nodes; the sentinels take sentinel_username= / sentinel_password=
// (no AUTH to the sentinels without them). See loop/src/url.cpp for every query key.
[[nodiscard]] std::error_code parse_url(std::string_view url, ConnectionOptions& out,
                                        std::string* why = nullptr);

// The URL for messages and logs: every password (user info, password=, sentinel_password=)
// replaced by "***". A malformed URL is masked generously (from the user info's ':' to its last
// '@'), as a password with an unencoded '/', '?' or '#' is what often makes it malformed.
// parse_url's own errors never quote a password either.
[[nodiscard]] std::string redact_url(std::string_view url);

// ec is empty on success. Errc::server_error when any reply is an error frame (replies still
// given). On not_sent / outcome_unknown / closed, `replies` is empty.
// Inline room for 80 bytes: the lock layer's reply handlers (a weak_ptr to the client, shared_ptrs
// to a waiter or a lease, a time, a user's handler) fit, so a request allocates no callback.
using ReplyHandler = InlineFunction<void(std::error_code ec, const Replies& replies), 80>;
using PushHandler = std::function<void(resp::Frame push)>;

struct RequestOptions {
  Nanos timeout{0};            // 0 = none; counted from submission
  ReplyHandler on_late_reply;  // reply of a request that already failed with outcome_unknown
  // Its bytes depend on what the current server said (the lock layer's fencing floor comes
  // from this server's clock): if the stream goes before it is written, it fails with
  // not_sent instead of waiting to be written on the next one — possibly another server.
  // Submitted while disconnected: bound to the next stream.
  bool this_stream_only = false;
  // Redis Cluster's ASK: `ASKING` is written before every command outside MULTI and before
  // MULTI (its flag lasts for one command, or until EXEC), so a node importing the slot serves
  // them. The ASKING replies are not the caller's: the handler sees the request's own replies.
  // A WatchTxn of a watch() sent so execs its block the same way. Not with (P|S)SUBSCRIBE.
  bool asking = false;
};

class Connection;

// Holds the connection's transaction lane (see top). Obtained from Connection::watch(). Exactly
// one of exec()/unwatch() ends it; destroying it unended sends UNWATCH.
class WatchTxn {
 public:
  WatchTxn() = default;
  WatchTxn(WatchTxn&&) noexcept;
  WatchTxn& operator=(WatchTxn&&) noexcept;
  ~WatchTxn();
  [[nodiscard]] bool valid() const noexcept { return conn_ != nullptr; }
  // `block` must be MULTI ... EXEC; it is written contiguously, then the lane is released.
  void exec(Request block, ReplyHandler handler, RequestOptions options = {});
  void unwatch() noexcept;

 private:
  friend class Connection;
  explicit WatchTxn(Connection* c, std::uint64_t id, bool asking = false) noexcept
      : conn_(c), id_(id), asking_(asking) {}
  Connection* conn_ = nullptr;
  std::uint64_t id_ = 0;
  bool asking_ = false;  // the WATCH was sent with RequestOptions::asking: so is the block
};

// Inline room as ReplyHandler's: a WATCH step of a fair, shared or upgrade attempt allocates no
// callback either.
using WatchHandler =
    InlineFunction<void(std::error_code ec, const Replies& replies, WatchTxn txn), 80>;

enum class ConnectionState : std::uint8_t { connecting, ready, disconnected, closed };

class Connection {
 public:
  Connection(Loop& loop, ConnectionOptions options);
  ~Connection();  // closes; pending handlers get Errc::closed
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Connects (and reconnects per options). Requests submitted before ready wait in the queue.
  void start();
  void close() noexcept;
  [[nodiscard]] ConnectionState state() const noexcept;

  // Sends a request; `handler` is called exactly once.
  void send(Request request, ReplyHandler handler, RequestOptions options = {});

  // Convenience: one command from its arguments (transaction-state commands are classified
  // automatically). Example: conn.command({"SET", key, value, "PX", "3000"}, handler).
  void command(std::initializer_list<std::string_view> args, ReplyHandler handler,
               RequestOptions options = {});

  // Acquires the transaction lane (waiting for it if held), then writes `watch_and_reads` — it
  // must start with WATCH and may continue with reads — and hands the replies and the lane to
  // `handler`. On error the lane is not held (txn invalid).
  void watch(Request watch_and_reads, WatchHandler handler, RequestOptions options = {});

  // Pushes: every registered handler sees every push frame. Returns an id for remove.
  std::uint64_t add_push_handler(PushHandler handler);
  void remove_push_handler(std::uint64_t id) noexcept;

  // State changes: after each (re)connect+handshake the handler sees `ready` — the hook for upper
  // layers to re-establish subscriptions and tracking.
  std::uint64_t add_state_handler(std::function<void(ConnectionState, std::error_code)> handler);
  void remove_state_handler(std::uint64_t id) noexcept;

  [[nodiscard]] Loop& loop() noexcept;
  [[nodiscard]] std::int64_t client_id() const noexcept;  // CLIENT ID from HELLO; -1 before
  // HELLO's "mode" at the last handshake: "standalone", "cluster" or "sentinel" ("" before).
  [[nodiscard]] const std::string& server_mode() const noexcept;
  // HELLO's "server" and "version" at the last handshake ("redis 7.2.6", "valkey 8.0.1"; ""
  // before): for messages. Capabilities are probed, not read from it.
  [[nodiscard]] std::string server_software() const;
  // Drops the current stream as if the server had gone (written requests fail with
  // outcome_unknown; state handlers see `disconnected`, Errc::connection_lost, last_error =
  // why) and reconnects — through ConnectionOptions::locate or the sentinels when set. For an
  // upper layer that learnt the server is no longer the one to use (a cluster MOVED).
  void relocate(std::string why);
  // How many times this connection dropped a server because it learnt that the server is no
  // longer the primary (+switch-master, +promoted-slave, -READONLY, -MOVED with locate,
  // relocate()); counted before the state handlers see that `disconnected`. A sentinel's
  // announcement heard while no stream is open (reconnecting after a drop) counts too: the
  // state handlers then hear the current state again, with Errc::connection_lost. What the
  // server granted before may not be on the new primary: the lock layer stops counting on its
  // leases until it re-confirms them.
  [[nodiscard]] std::uint64_t moves() const noexcept;

  // The server of the current (or last) stream: options.endpoint, or with sentinel discovery the
  // primary the sentinels named (its host and port, with endpoint.tls), set when the stream to
  // it is started; in sentinel mode host "" and port 0 until a sentinel named one.
  [[nodiscard]] const Endpoint& server() const noexcept;
  // server() as "host:port", "[v6]:port" or the socket path ("" before any).
  [[nodiscard]] std::string server_address() const;
  // How many different primaries this connection has been ready on: 0 before the first ready,
  // 1 from then on, +1 at each ready on a server whose address differs from the one of the
  // previous ready, or whose config_epoch() differs from the previous ready's (a failover there
  // and back; only when both are known: an unknown epoch never counts as a change). Updated
  // just before the state handlers see `ready`, never at other times. A local counter, not a
  // server's: it restarts with each Connection.
  [[nodiscard]] std::uint64_t primary_epoch() const noexcept;
  // With sentinel discovery: the "config-epoch" of the master, from SENTINEL MASTER <name> asked
  // of the sentinel that named the current server, in the same pipeline as its address
  // (sentinels bump it at every failover). nullopt without sentinel discovery, when SENTINEL
  // MASTER failed (ACL) or its address was not the one just named (a failover in progress).
  // Updated with primary_epoch(): just before the state handlers see `ready`.
  [[nodiscard]] std::optional<std::uint64_t> config_epoch() const noexcept;

  // With sentinel discovery and SentinelOptions::vouch: before this moment no failover away from
  // server() can start, as a quorum of sentinels vouch (sentinel_vouch.hpp says how); MonoTime{}
  // while they do not (not asked yet, unreachable, or one considers the primary down).
  // MonoTime max without sentinels or with vouch off.
  [[nodiscard]] MonoTime vouched_until() const noexcept;
  // The sentinels' words behind vouched_until(), for an error message ("" without vouching).
  [[nodiscard]] std::string vouch_detail() const;
  // With sentinel discovery and SentinelOptions::vouch: the most replicas of server() a sentinel
  // reports (num-slaves: every replica it knows, down ones included); -1 otherwise or before a
  // sentinel answered about this primary.
  [[nodiscard]] int known_replicas() const noexcept;
  // Called after each answer of a sentinel to the vouching questions (vouched_until() may have
  // moved either way). One handler; set it again to replace it.
  void set_vouch_handler(std::function<void()> handler);

  // Human-readable detail of the last failure (server error text, parse error, ...).
  [[nodiscard]] const std::string& last_error() const noexcept;
  // The caller's requests written and still awaiting replies (including ones already failed
  // as outcome_unknown whose late reply is still expected); the health check's PING is not one.
  [[nodiscard]] std::size_t in_flight() const noexcept;

 private:
  friend class WatchTxn;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lockwire::loop

template <>
struct std::is_error_code_enum<lockwire::loop::Errc> : std::true_type {};
