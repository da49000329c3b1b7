// The asynchronous lock client: exclusive and shared leases with fencing tokens, release, renew,
// auto-renew with loss notification, force_release and inspect — Lua-free (docs/protocol.md).
//
// Runs on one loop (seam.hpp): every method must be called on the loop thread, and every callback
// runs there, never re-entrantly from inside the call that started it. Written only against the
// seam, so it runs unchanged on libuv (UvLoop) and in the simulator. For plain blocking code use
// BlockingClient (blocking.hpp).
//
//   lock::Client locks(loop, conn_options);
//   locks.start();
//   lock::LockRequest req;
//   req.resource = "invoice:42";
//   req.owner = "worker-1";
//   req.ttl = 10s;
//   req.wait = 2s;
//   locks.lock(req, [&](std::error_code ec, lock::Lease lease) {
//     if (ec) return;                   // timed_out, invalid_argument, ...
//     use(lease.token());               // fencing token for downstream writes
//     locks.release(lease, [](std::error_code) {});
//   });
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "lockwire/lock/error.hpp"
#include "lockwire/lock/types.hpp"
#include "lockwire/loop/connection.hpp"
#include "lockwire/loop/seam.hpp"

namespace lockwire::lock {

using Nanos = std::chrono::nanoseconds;

enum class Op : std::uint8_t { acquire, release, renew, force_release, inspect };

// Metrics hooks; override what you need. Called on the loop thread; must not throw.
class Metrics {
 public:
  virtual ~Metrics() = default;
  // Every finished operation with its outcome and latency (acquire: including the wait).
  // `resource` is the name the call was made with (a view valid only during the call: copy it
  // to keep it; lock_all reports each of its resources). Before issue #31 this hook had no
  // resource: an override of the old signature no longer compiles with `override`.
  virtual void on_op(Op /*op*/, Kind /*kind*/, std::string_view /*resource*/,
                     std::error_code /*ec*/, Nanos /*latency*/) noexcept {}
  // An acquire attempt found the resource held by someone else.
  virtual void on_contended(std::string_view /*resource*/) noexcept {}
  // An acquire that had to wait finished (acquired or not) after `waited`.
  virtual void on_wait(Nanos /*waited*/, bool /*acquired*/) noexcept {}
  // A held lease was lost (expired, taken over, force-released, unconfirmed past its TTL).
  virtual void on_lease_lost(std::string_view /*resource*/, std::error_code /*why*/) noexcept {}
  // Requests written to the server by this client (for "no polling" checks and RTT accounting).
  virtual void on_request(std::uint32_t /*commands*/) noexcept {}
  // Redis Cluster: a request sent again to the node an -ASK named ("ASK"), a call sent again to
  // the shard a -MOVED named ("MOVED"), or a call tried again after a backoff because a node
  // answered -TRYAGAIN / -CLUSTERDOWN ("TRYAGAIN", "CLUSTERDOWN"). Each resent request is also
  // counted by on_request.
  virtual void on_redirect(std::string_view /*kind*/) noexcept {}
  // The server refused something the client uses, so it works in a degraded mode until the next
  // connect: `what` names the loss (e.g. "push wake-ups: waiters poll"), `server_words` the
  // server's own reply. Called once per connection on which it happens.
  virtual void on_degraded(std::string_view /*what*/, std::string_view /*server_words*/) noexcept {
  }
};

// Thread-safe counters; an easy default implementation of the hooks.
class CountingMetrics final : public Metrics {
 public:
  std::atomic<std::uint64_t> acquired{0}, acquire_failed{0}, released{0}, release_failed{0},
      renewed{0}, renew_failed{0}, contended{0}, waits{0}, leases_lost{0}, requests{0}, commands{0},
      redirects{0},  // ASK and MOVED (on_redirect)
      cluster_retries{0};  // TRYAGAIN and CLUSTERDOWN backoffs (on_redirect)
  void on_op(Op op, Kind kind, std::string_view resource, std::error_code ec,
             Nanos latency) noexcept override;
  void on_contended(std::string_view resource) noexcept override;
  void on_wait(Nanos waited, bool acquired) noexcept override;
  void on_lease_lost(std::string_view resource, std::error_code why) noexcept override;
  void on_request(std::uint32_t commands) noexcept override;
  void on_redirect(std::string_view kind) noexcept override;
};

// How many replicas must acknowledge a grant or renewal (ClientOptions::min_replicas). What each
// buys (docs/protocol.md, *Replica-acknowledged grants*):
// - none (the default): no WAIT. Behind Sentinel or on a Cluster the partition vouches keep one
//   holder at a time without it; a primary that crashes right after a grant may lose that grant
//   in the failover, and its holder then learns so when it re-confirms the lease (lost).
// - count(n): every reported grant and renewal is on n replicas: with n = all of them, any
//   replica Sentinel promotes has it. While fewer than n are reachable, grants wait (retried
//   within the caller's wait) and leases are not extended.
// - majority(): count(⌊R/2⌋+1), R the primary's configured replicas: behind Sentinel the most a
//   sentinel reports (num-slaves, down replicas included), else the replicas the primary lists
//   in ROLE, read once per connection. R = 0 (a single node) waits for none, so single-node
//   users pay nothing. After a failover the old primary counts as one of R until the sentinels
//   forget it, so with two replicas a grant on the new primary waits for the heal.
class ReplicaAcks {
 public:
  constexpr ReplicaAcks() noexcept = default;
  // Implicit, so that `options.min_replicas = 2` keeps meaning two replicas.
  constexpr ReplicaAcks(int n) noexcept : count_(n < 0 ? 0 : n) {}  // NOLINT
  [[nodiscard]] static constexpr ReplicaAcks none() noexcept { return {}; }
  [[nodiscard]] static constexpr ReplicaAcks count(int n) noexcept { return {n}; }
  [[nodiscard]] static constexpr ReplicaAcks majority() noexcept {
    ReplicaAcks a;
    a.majority_ = true;
    return a;
  }
  [[nodiscard]] constexpr bool is_none() const noexcept { return !majority_ && count_ == 0; }
  [[nodiscard]] constexpr bool is_majority() const noexcept { return majority_; }
  // The acknowledgements to wait for, with `configured` replicas known (majority only).
  [[nodiscard]] constexpr int needed(int configured) const noexcept {
    if (!majority_) return count_;
    return configured <= 0 ? 0 : configured / 2 + 1;
  }
  friend constexpr bool operator==(const ReplicaAcks&, const ReplicaAcks&) = default;

 private:
  int count_ = 0;
  bool majority_ = false;
};

struct ClientOptions {
  std::string prefix = "lockwire:";  // key prefix; no '{' or '}'
  Limits limits;
  // Auto-renew fires after this fraction of the TTL has passed since the last confirmation.
  double renew_fraction = 1.0 / 3.0;
  std::shared_ptr<Metrics> metrics;  // optional
  // When a wait ends (its deadline, or cancel()) while an acquire step is in flight, the caller
  // is answered only once that step's outcome is known and any claim or late grant of ours is
  // withdrawn — unless the server stays silent this long after the deadline: then the answer is
  // outcome_unknown, and a claim may remain until its TTL ends (it is still withdrawn if a reply
  // comes later and the client is alive). Also bounds a one-shot acquire (wait 0).
  Nanos settle_timeout = std::chrono::seconds(1);
  // A server with maxmemory set and a maxmemory-policy other than noeviction can evict the
  // holder set or the fencing counter: a second holder, tokens going back. Such a server is
  // refused (Errc::unsafe_server) unless this is set; then holders also track their holder set
  // so that an eviction is reported as a lost lease within about a round trip.
  bool allow_eviction = false;
  // Waiting where the server refuses client tracking (no push wake-ups): waiters re-read with a
  // capped exponential backoff with jitter, starting at poll_initial, at most poll_max apart.
  Nanos poll_initial = std::chrono::milliseconds(10);
  Nanos poll_max = std::chrono::milliseconds(250);
  // Replica-acknowledged grants (docs/protocol.md, *Replica-acknowledged grants*): a grant or
  // renewal is reported only after `WAIT n replica_timeout` (sent right after the block's reply:
  // one more round trip plus the replicas' acknowledgement) says n replicas have it; otherwise
  // the grant is withdrawn and tried again within the wait (then Errc::not_replicated), and a
  // renewal does not extend the lease. WAIT holds this client's connection while it waits: keep
  // replica_timeout short. ReplicaAcks says what n is; `min_replicas = 2` means count(2).
  ReplicaAcks min_replicas = ReplicaAcks::none();
  Nanos replica_timeout = std::chrono::milliseconds(100);
  // Redis Cluster: how often the slot map is read again (CLUSTER SHARDS on one kept connection)
  // to find shards whose primary changed. A failover pauses the old primary's clients, so a
  // renewal written there can sit unanswered until the pause ends; the check moves the shard's
  // connection to the new primary, where its leases are renewed (docs/protocol.md, Cluster).
  Nanos cluster_refresh = std::chrono::seconds(1);
  // Redis Cluster partition safety (docs/protocol.md, *The masters' vouch*): every node is asked
  // TIME, CLUSTER NODES, CONFIG GET cluster-node-timeout and COUNT-FAILURE-REPORTS every
  // node-timeout/5, and a lease counts only while enough masters other than its primary vouch
  // that they cannot declare it FAIL. Off: leases count up to their TTL (a primary cut off with
  // its holder can accept renewals after a replica was promoted).
  bool cluster_vouch = true;
  // How long a resource's fence key (P{R}:fence, the fencing-token counter) lives at least after
  // its last token, and at most a third more: a block that raises the counter to the floor sets
  // a TTL of 4/3 of this, and a connection's next blocks for the resource, for a quarter of it,
  // set none (one command less on the common path; a token they take is withdrawn and taken
  // again if its reply comes a third of fence_ttl or more after the raise). So nothing lockwire
  // writes stays in Redis for long after its last use (docs/protocol.md, "Key layout"). Tokens
  // still never repeat nor
  // go back: a grant whose floor (the server's clock, read at connect and again by an attempt
  // once that reading is fence_ttl / 3 old) may be this old is withdrawn and tried again with a
  // fresh one. Every client of one prefix
  // must use the same value (a shorter one elsewhere shortens the bound this one counts on).
  // At least 1 s. Where the server refuses TIME the key never expires (tokens come from the
  // counter alone then).
  Nanos fence_ttl = std::chrono::minutes(10);
  // Fencing tokens on exclusive grants (Lease::token; docs/protocol.md, *Fencing tokens*). Off:
  // an exclusive acquire in arrival order is MULTI HSETNX HLEN PEXPIRE EXEC — two or three
  // commands fewer, the fence key untouched — and its lease's token is 0, so nothing can tell
  // a stale holder's writes (a holder paused past its TTL) from the next holder's. For callers
  // that guard nothing a token could fence (a job that must not run twice at once, where a
  // late write is harmless): the unfenced Lua lock's trade. Shared leases, semaphores, fair
  // order and upgrades keep their tokens.
  bool fencing_tokens = true;
  // The parked hand-off (docs/handoff-one-rtt.md): the first waiter in a resource's wait queue
  // (exclusive, arrival order) keeps its acquire block in the server behind a blocking pop
  // (BZPOPMIN) on a connection of its own, and a release copies it a wake token, so the
  // server runs the block as the release lands: a hand-off in one round trip instead of two.
  // Costs a connection per resource this client is first in line for (pooled, at most 16 per
  // server) and one command (COPY) in every exclusive release. Not on a Cluster, nor with
  // min_replicas (WAIT would not cover a grant made on another connection): asked for there,
  // Metrics::on_degraded says it is off at each connect. Where the server
  // refuses the pop, waiters fall back to push wake-ups (Metrics::on_degraded). Every client of
  // a prefix should agree: a release without the COPY wakes a parked waiter through its push
  // instead (a few milliseconds later). Off by default while it is proven (issue #30).
  bool parked_handoff = false;
};

// What the server lets this client do, learnt at each connect (docs/protocol.md, "Servers").
struct ServerCapabilities {
  bool probed = false;         // the connect probe of the current connection has been answered
  bool push_wakeups = false;   // CLIENT TRACKING ON OPTIN and CLIENT CACHING accepted
  std::string tracking_error;  // the server's words when not (waiters poll)
  bool memory_known = false;   // INFO memory was answered
  std::int64_t maxmemory = 0;
  std::string maxmemory_policy;
  std::string info_error;  // the server's words when INFO memory was refused
  // TIME was answered: fencing tokens are kept above the server's clock, so they keep
  // increasing across a restart or failover that lost the counter (docs/protocol.md).
  bool clock_known = false;
  std::string clock_error;  // the server's words when TIME was refused
  // Non-empty: this server cannot hold leases (a capability the protocol needs is missing, e.g.
  // PEXPIRE ... GT before Redis 7.0): why, naming the server, its version and the minimum, with
  // the server's own words. Every acquire is refused with Errc::unsupported_server.
  std::string unsupported;
  [[nodiscard]] bool may_evict() const noexcept {
    return maxmemory > 0 && !maxmemory_policy.empty() && maxmemory_policy != "noeviction";
  }
};

enum class LeaseState : std::uint8_t {
  held,      // granted and, as far as this client can tell, still valid
  released,  // released by its holder
  lost,      // expired / taken over / force-released / unconfirmed past its TTL
};

struct LockRequest {
  std::string resource;
  std::string owner;  // identifies the holder; not re-entrant (same owner twice: already_held)
  Kind kind = Kind::exclusive;
  Nanos ttl = std::chrono::seconds(30);  // lease length, enforced by Redis
  Nanos wait = Nanos{0};                 // 0 = one attempt
  bool auto_renew = false;               // keep the lease alive until released
  // A counting semaphore (kind shared): at most `permits` holders at once, each with its own
  // lease (TTL, renewal, loss notice, fencing token). 0 = a plain shared lock (readers
  // unlimited). Every holder of one resource must ask with the same `permits`
  // (docs/protocol.md, "Semaphores").
  int permits = 0;
  // Exclusive only: grants follow the server's wait queue P{R}:q (arrival order) — a fresh
  // attempt never takes the lock ahead of a live waiter (docs/protocol.md, "Fair order"). Every
  // client of the resource must ask for it; a waiter that vanished holds the queue up for at
  // most kFairDoorbellMs (2 s). One more round trip per grant than the default.
  bool fair = false;
  // Called (on the loop thread) when the held lease is lost; the lease state is `lost` by then.
  std::function<void(std::error_code why)> on_lost;
};

namespace detail {
struct LeaseData;
struct ClientAccess;  // lock/src's way into a Client's insides (client.cpp)
}  // namespace detail

// A handle to a granted lease. Cheap to copy; all copies see the same state. state() and the
// immutable accessors may be read from any thread.
class Lease {
 public:
  Lease() = default;
  // A default-constructed handle: no lease at all (say nothing about its state()).
  [[nodiscard]] bool empty() const noexcept { return d_ == nullptr; }
  [[nodiscard]] const std::string& resource() const noexcept;
  [[nodiscard]] const std::string& owner() const noexcept;
  [[nodiscard]] Kind kind() const noexcept;
  // Strictly increasing per resource across all grants; pass it to the guarded resource.
  [[nodiscard]] std::uint64_t token() const noexcept;
  [[nodiscard]] Nanos ttl() const noexcept;
  [[nodiscard]] LeaseState state() const noexcept;
  [[nodiscard]] bool held() const noexcept { return !empty() && state() == LeaseState::held; }
  // Monotonic instant (loop clock) until which the lease is certainly valid on the server.
  // While the lease is re-confirmed on a new primary (after a failover: its renewals may not
  // have reached that server), it is the moment the move was learnt — already past: check it
  // before acting on the resource; it moves forward again once the re-confirmation succeeds
  // (else the lease turns `lost`). Loop thread only.
  [[nodiscard]] loop::MonoTime valid_until() const noexcept;

 private:
  friend class Client;
  explicit Lease(std::shared_ptr<detail::LeaseData> d) noexcept : d_(std::move(d)) {}
  std::shared_ptr<detail::LeaseData> d_;
};

// Several leases taken together by Client::lock_all: all or nothing, one release.
struct LeaseSet {
  std::vector<Lease> leases;  // one per resource, in the order they were taken (sorted names)
  [[nodiscard]] bool held() const noexcept {  // every one still held
    if (leases.empty()) return false;
    for (const Lease& l : leases) {
      if (!l.held()) return false;
    }
    return true;
  }
};

struct LockInfo {
  std::vector<protocol::Holder> holders;  // ttl_ms = remaining server TTL of each holder
  std::uint64_t last_token = 0;           // last fencing token handed out (0 = never)
  std::int64_t pttl_ms = -2;              // of the holder set (-2: no holder set)
};

class Client {
 public:
  using AcquireHandler = std::function<void(std::error_code, Lease)>;
  using DoneHandler = std::function<void(std::error_code)>;
  using SetHandler = std::function<void(std::error_code, LeaseSet)>;

  // Owns its connection (the lock protocol puts it in OPTIN tracking mode). The connection
  // always fences the connections it abandoned, whatever connection.fence_abandoned says:
  // before using a new connection it kills the ones this client abandoned (CLIENT KILL
  // ID+ADDR), so a request still in flight on one can never remove or grant a lease of the same
  // owner later (docs/protocol.md, split-brain reconnect).
  Client(loop::Loop& loop, loop::ConnectionOptions connection, ClientOptions options = {});
  // Leases still held are not released (their keys expire); pending callbacks get Errc::closed.
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  void start();  // connects (requests made before are queued)
  void close() noexcept;

  // Acquires `req.kind` on req.resource; waits up to req.wait. Errors (lock::Errc):
  //   invalid_argument    the request is malformed (validate()); nothing was sent
  //   already_held        req.owner already holds a lease on req.resource (not re-entrant)
  //   busy                wait 0 (a try-lock): the one attempt found the resource held
  //   timed_out           the wait ran out with the resource still held by someone else
  //   cancelled           cancel() gave the wait up
  //   outcome_unknown     the server stayed silent past settle_timeout: a claim may remain
  //                       until its TTL (last_error() says what)
  //   connection          the server could not be reached within the wait
  //   protocol            a reply the protocol cannot use
  //   closed              the client was closed (or destroyed) first
  //   server_refused      an error reply (NOPERM, OOM, READONLY, ...): the server's words
  //   server_unavailable  LOADING, BUSY, MASTERDOWN, TRYAGAIN, CLUSTERDOWN past the wait
  //   unsafe_server       the server may evict lock keys (ClientOptions::allow_eviction)
  //   not_replicated      min_replicas: too few replicas acknowledged within the wait
  //   unsupported_server  the server lacks what the protocol needs (Redis before 7.0)
  // The handler is never called inside lock() itself, whatever the error.
  void lock(LockRequest req, AcquireHandler handler);
  // Gives up the waits of `owner` on `resource` as a deadline would: each handler gets
  // Errc::cancelled once no claim of ours remains (or outcome_unknown after settle_timeout).
  void cancel(std::string_view resource, std::string_view owner);
  // Promotes the shared lease `req.owner` holds on `req.resource` to an exclusive one in place:
  // no writer can get in between (docs/protocol.md, "Upgrade"). The answer is a new exclusive
  // lease with a new (higher) token; the shared lease of this client, if it has it, turns
  // `released` at that moment (its on_lost carries over unless req.on_lost is set). While other
  // readers hold the resource it waits like a writer, up to req.wait (0: one attempt,
  // busy if other readers are there). req.kind is ignored; ttl and auto_renew are the
  // exclusive lease's. Errors: not_held (no live shared lease of that owner, or the promotion's
  // lease ended before its reply was read — a paused process: then it is lost),
  // upgrade_conflict (another reader's upgrade is pending: its shared lease is kept), and those
  // of lock(). The owner may hold the shared lease through another client or process.
  void upgrade(LockRequest req, AcquireHandler handler);
  // The same for a shared lease of this client: its TTL and auto-renewal carry over.
  void upgrade(const Lease& shared, Nanos wait, AcquireHandler handler);
  // Takes every resource of `resources` as `req` describes (kind, owner, ttl, auto_renew,
  // on_lost — req.resource is ignored), all or nothing, within req.wait in total: one at a time
  // in the order of their names (so two callers of lock_all never wait for each other in a
  // cycle), each on the shard that serves it on a Cluster. If one is refused or the wait ends,
  // the ones already taken are released before the handler is told, so no partial set is left
  // (docs/protocol.md, "Several resources"). Each lease keeps its own token and TTL.
  void lock_all(std::vector<std::string> resources, LockRequest req, SetHandler handler);
  // Releases every lease of the set; the first error, if any (each is attempted).
  void release(const LeaseSet& set, DoneHandler handler);
  // Removes only this lease. not_held when it had expired / was force-released.
  void release(const Lease& lease, DoneHandler handler);
  // Extends only this lease (by its TTL). not_held when it is gone (the lease turns `lost`).
  void renew(const Lease& lease, DoneHandler handler);
  // The same by owner id, for a lease granted elsewhere (another process, a tool); `kind`
  // unset: whichever kind `owner` holds. not_held when it holds none. The removal/extension
  // names the owner, so nothing of anyone else is ever touched.
  void release(std::string resource, std::string owner, std::optional<Kind> kind,
               DoneHandler handler);
  void renew(std::string resource, std::string owner, std::optional<Kind> kind, Nanos ttl,
             DoneHandler handler);
  // Removes every holder of the resource (administrative). `removed` = holders that were present.
  // Updates the notice key "<prefix>force-released", which every lock::Client with that prefix
  // tracks: each checks its leases on the resource and reports the removed ones lost (on_lost)
  // about a round trip after the removal.
  void force_release(std::string resource, std::function<void(std::error_code, std::size_t)> h);
  void inspect(std::string resource, std::function<void(std::error_code, const LockInfo&)> h);

  // The server that serves `resource` now, for a connection of one's own to it (lock::Watch's
  // tracker): on a Redis Cluster its shard's primary (the slot map read again), otherwise the
  // endpoint this client is connected to. Usable as ConnectionOptions::locate.
  void locate_for(const std::string& resource, const loop::ConnectionOptions::Answer& answer);

  // Checks a request without sending anything.
  [[nodiscard]] std::error_code validate(const LockRequest& req, std::string* why = nullptr) const;

  [[nodiscard]] loop::Connection& connection() noexcept;
  [[nodiscard]] const ClientOptions& options() const noexcept;
  [[nodiscard]] const ServerCapabilities& capabilities() const noexcept;
  // The detail of the last failure this client reported — the server's own words for
  // server_refused / server_unavailable / unsafe_server (e.g. "READONLY You can't write against
  // a read only replica."), what was left behind for outcome_unknown, why an argument was
  // refused. Read it in the handler: there it is that answer's own words, on a Cluster too
  // (whichever shard answered another call meanwhile). A convenience only: the library itself
  // decides nothing from it.
  [[nodiscard]] const std::string& last_error() const noexcept;
  // Expires when this client is destroyed: for guards (co::LeaseGuard) that must never call a
  // Client that is gone.
  [[nodiscard]] std::weak_ptr<const void> alive() const noexcept { return life_; }

 private:
  friend struct detail::ClientAccess;
  Client() = default;  // for detail::ClientAccess, which builds the insides itself
  struct Core;    // lock/src/core.hpp
  struct Router;  // lock/src/router.hpp: once the server turned out to be a Redis Cluster
  struct Route;   // lock/src/route.hpp: where calls go (the Core, or the Cluster router)
  void enter_cluster(loop::ConnectionOptions connection);
  std::shared_ptr<Core> core_;    // the first server's; a Cluster's seed
  std::shared_ptr<Route> route_;  // never null
  std::shared_ptr<const int> life_ = std::make_shared<const int>(0);
};

}  // namespace lockwire::lock
