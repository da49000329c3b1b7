// The lock client's private insides: the lease record, the waiter and per-resource queue, and
// Client::Core — the state machine every public call and every connection event drives. The
// methods live in one file per concern:
//   events.cpp   connection events: the connect probe, pushes, doorbells, the force-release
//                notice, lease checks
//   acquire.cpp  lock(), the local queue, the acquire steps' bytes, the grant's hand-over,
//                settling a wait that ends with a step in flight, withdrawing claims
//   acquire_driver.cpp  Core as the driver of the acquire machine (acquire_machine.hpp): every
//                lock, upgrades included (their own steps in upgrade.cpp)
//   park.cpp     the parked hand-off's actions: parking connections, the park, unblocking
//   lease.cpp    leases: expiry and renew timers, renew, release, loss
//   admin.cpp    force_release, inspect, release/renew by owner id
//   client.cpp   the Client facade, metrics, shutdown
// Over 800 lines because it is Core's one declaration (the members every concern file shares);
// the definitions are what is split, above. Everything runs on the loop thread; callbacks hold
// weak_ptrs (guard()) so that a destroyed or closed client is never touched. docs/protocol.md says why each step is safe.
#pragma once

#include <algorithm>
#include <cassert>
#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "acquire_machine.hpp"
#include "raised_fences.hpp"
#include "lockwire/lock/client.hpp"
#include "lockwire/lock/protocol.hpp"
#include "lockwire/loop/cluster_map.hpp"
#include "lockwire/testing/lock_regressions.hpp"

namespace lockwire::lock {
namespace detail {

struct LeaseData {
  std::string resource;
  std::string owner;
  Kind kind = Kind::exclusive;
  std::uint64_t token = 0;
  Nanos ttl{0};
  std::atomic<LeaseState> state{LeaseState::held};
  // Loop thread only from here on.
  // What Lease::valid_until() says: `end`, or, while the lease is being re-confirmed on a new
  // primary (suspended), no later than the moment the move was learnt.
  loop::MonoTime valid_until{};
  loop::MonoTime end{};  // the end the holder counts on (expiry timer, re-confirmation)
  bool suspended = false;
  protocol::Keys keys;
  std::string registry_key;
  bool auto_renew = false;
  std::function<void(std::error_code)> on_lost;
  // The expiry check is an entry in its Core's `expiries` heap (one timer per Core, not one
  // per lease): only the entry carrying the current generation counts; stopping or dropping
  // the check bumps it (the stale entry is skipped or compacted away).
  std::uint64_t expiry_gen = 0;
  std::unique_ptr<loop::Timer> renew_timer;
  bool renew_in_flight = false;
  // The Client::Core that granted it (weak: a lease handle may outlive its client); its
  // release and renewals go there (one Core per cluster shard).
  std::weak_ptr<void> core;
};

using Ec = std::error_code;
using LeasePtr = std::shared_ptr<LeaseData>;

inline Ec map_transport(Ec ec) {
  if (ec == loop::Errc::outcome_unknown) return Errc::outcome_unknown;
  if (ec == loop::Errc::closed) return Errc::closed;
  if (ec == loop::Errc::server_error || ec == loop::Errc::protocol_error ||
      ec == loop::Errc::bad_request) {
    return Errc::protocol;
  }
  return Errc::connection;
}

// Transport failures the connection reports with no replies.
inline bool is_transport(Ec ec) {
  return ec && ec != loop::Errc::server_error;
}

// Failures after which the same request may be sent again (after the reconnect, if need be).
inline bool retryable(Ec ec) {
  return ec == loop::Errc::not_sent || ec == loop::Errc::outcome_unknown ||
         ec == loop::Errc::connection_lost || ec == loop::Errc::connect_failed ||
         ec == loop::Errc::health_check_failed;
}

// One failure as its completion carries it, so that no decision reads a shared string (issue
// #29): the error, the words the caller is told (Client::last_error: "<resource>: <the
// server's words>", or the connection's), and what the Cluster router decides a retry on — the
// MOVED/ASK the server named, and whether it said TRYAGAIN or CLUSTERDOWN (nothing ran). It
// converts to its error code, so a std::error_code handler takes it as it is.
struct Failure {
  enum class Busy : std::uint8_t { no, tryagain, clusterdown };
  Ec ec;
  std::string words;
  std::optional<loop::cluster::Redirect> redirect;
  Busy busy = Busy::no;

  Failure() = default;
  Failure(Ec e) : ec(e) {}  // NOLINT(google-explicit-constructor): no words to carry
  Failure(Errc e) : ec(e) {}  // NOLINT(google-explicit-constructor)
  Failure(Ec e, std::string w) : ec(e), words(std::move(w)) {}
  operator Ec() const noexcept { return ec; }  // NOLINT(google-explicit-constructor)
  // A server's error words, classified: the redirect and busy kind they name.
  static Failure from_words(Ec e, std::string_view words_of_server, std::string words);
};
using FailureHandler = std::function<void(const Failure&)>;

// Reports an early failure from the loop, never inside the call itself.
inline void post_failure(loop::Loop& loop, FailureHandler handler, Failure f) {
  loop.post([h = std::move(handler), f = std::move(f)] {
    if (h) h(f);
  });
}

struct Queue;

struct Waiter {
  LockRequest req;
  protocol::Keys keys;
  std::string field;
  std::int64_t ttl_ms = 0;
  Client::AcquireHandler cb;
  // Set instead of `cb` by the Cluster router: the answer with its Failure (words, redirect).
  std::function<void(const Failure&, Lease)> routed;
  // The failure this waiter is about to be answered with, when it was known before the answer
  // (a refused block whose claim is withdrawn first); a WATCH refused with MOVED.
  Failure failure;
  std::optional<loop::cluster::Redirect> watch_moved;
  loop::MonoTime start{};
  loop::MonoTime deadline{};
  bool done = false;    // callback called (granted, failed or timed out)
  bool waited = false;  // had to wait for a wake-up at least once
  // Exclusive: the token our first losing attempt burnt; our score in the wait queue P{R}:q.
  std::uint64_t ticket = 0;
  // Started on the hint that our release had just handed the lock to a parked waiter
  // (MachineEvent::taken): its first block is the wait block.
  bool taken = false;
  // The exclusive acquire block in flight: the probe (connection) it was sent after
  // (Core::probes), and, when it left the raise (ZADD GT) out, when this connection's raising
  // block for the key was sent (reset by floor_for for every other grant block, which raise).
  std::uint64_t sent_probe = 0;
  std::optional<loop::MonoTime> sent_raised_at;
  [[nodiscard]] bool raises_floor() const noexcept { return !sent_raised_at; }
  // The fencing floor the grant block in flight carries, when that floor's TIME was sent (loop
  // time), and the fence TTL it sets (0: none): what Core::stale_grant judges its token by.
  std::uint64_t sent_floor = 0;
  loop::MonoTime sent_floor_read_at{};
  std::int64_t sent_fence_ttl_ms = 0;
  int stale_retries = 0;  // grants withdrawn for a stale floor (Core::retry_stale_grant)
  // Client::upgrade: promotes this owner's shared lease in place (upgrade.cpp). Such a waiter
  // has a queue of its own (Core::upgrades): queued behind a local writer that waits for this
  // very shared lease, it would wait for itself.
  bool upgrade = false;
  // Every waiter's acquire is this machine's: Core only carries out what it is told
  // (acquire_driver.cpp). Set once lock() or upgrade() has made the waiter.
  std::optional<detail::AcquireMachine> machine;
  loop::MonoTime granted_sent{};  // machine: when the block whose grant is judged was sent
  // Parked hand-off: the CLIENT ID of the connection this waiter's block is parked on (-1:
  // none), the park's number (Core::park_seq), and the main connection's server then.
  std::int64_t park_id = -1;
  std::uint64_t park_seq = 0;
  std::string park_server;
  // machine: the words of the last event that brought some (refused, unusable_grant), told
  // with its answer (Because::told_words); kept here so that the machine's events stay small.
  std::string told_words;
  // machine: the last wait block's shared holders and holder-set PTTL (for check_stale).
  std::vector<std::string> shared_owners;
  std::int64_t read_pttl = -2;
  // machine, fair order and shared leases: the read's WATCH, kept for the grant (or released)
  // while the read's event is resumed; fair order: the waiter
  // first in line as the last read saw it (for check_head / drop_head).
  loop::WatchTxn txn;
  std::string fair_head;
  // machine, upgrade: the read found no shared lease to promote; the answer loses it.
  bool lose_shared_on_answer = false;
  std::unique_ptr<loop::Timer> deadline_timer;
  std::unique_ptr<loop::Timer> settle_timer;  // answers outcome_unknown if the server is silent
  // The settle bound as an entry of Core::settles (the usual case: one timer per Core, not one
  // per attempt): when it runs out, and the queue of the step it waits for.
  bool settle_armed = false;
  loop::MonoTime settle_at{};
  std::weak_ptr<Queue> settle_q;

  // No further step for this waiter: answered, or answered once the step in flight is settled.
  [[nodiscard]] bool leaving() const noexcept {
    return done || (machine && machine->leaving());
  }
};
using WaiterPtr = std::shared_ptr<Waiter>;

struct Queue {
  enum class State : std::uint8_t { idle, in_flight, waiting, need_ready };
  // The resource's keys (holder set, wait queue, doorbells); empty for one-shot queues, which
  // are not registered in Core::queues.
  protocol::Keys keys;
  bool one_shot = false;
  State state = State::idle;
  // The owner this client has in the server's wait queue P{R}:q (its head exclusive waiter);
  // empty when it has none. It leaves the queue, ringing the next waiters' doorbells, when that
  // waiter is granted or gives up.
  std::string queued;
  // Our place in P{R}:q at the last wait read: 0 = first, the elected waiter, the only client
  // that acts on holder-set pushes at once (so a release wakes one client, not all of them);
  // 1 = second, the backup, which re-checks a grace period after a holder-set push in case the
  // first vanished; 2 = further back: only our doorbell wakes us. A leaving waiter rings the
  // two now first, so the backup learns its place too.
  std::int64_t rank = -1;
  std::string first;    // the first waiter's owner at the last wait read
  // When we were first at the last wait read: the (at most two) waiters right behind us, whom
  // our leave expects to find first (their doorbells ring in the leave's own request).
  std::vector<std::string> behind;
  std::string suspect;  // the first waiter did not act within the grace: dropped when we leave
  std::deque<WaiterPtr> waiters;
  std::unique_ptr<loop::Timer> backstop;
  std::unique_ptr<loop::Timer> grace;  // not elected: re-check if the elected waiter is silent
  std::unique_ptr<loop::Timer> unpark;  // parked: a push's grace before unblocking
  // Unblocked: the parked reply is due within kParkedReplyBound (driven_unpark).
  std::unique_ptr<loop::Timer> park_watch;
  std::uint64_t park_watch_seq = 0;  // the park (Core::park_seq) that timer watches
  bool pooled = false;  // in Core::spare_queues

  [[nodiscard]] bool elected() const noexcept { return rank == 0; }

  // A retired queue made new again for Core::fresh_queue, keeping its memory (strings, deque)
  // and its timers (stopped when it retired).
  void reset() noexcept {
    keys.holders.clear();
    keys.fence.clear();
    keys.queue.clear();
    one_shot = false;
    state = State::idle;
    queued.clear();
    rank = -1;
    first.clear();
    behind.clear();
    suspect.clear();
    waiters.clear();
    stop_timers();
  }

  // Leaving `waiting`: no timer of that wait may fire any more.
  void stop_timers() noexcept {
    if (backstop) backstop->stop();
    if (grace) grace->stop();
    if (unpark) unpark->stop();
  }
};
using QueuePtr = std::shared_ptr<Queue>;

// Reports an early outcome of release()/renew() from the loop, never inside the call itself.
inline void post_done(loop::Loop& loop, Client::DoneHandler handler, Ec ec) {
  loop.post([h = std::move(handler), ec] {
    if (h) h(ec);
  });
}
}  // namespace detail

using detail::Ec;
using detail::Failure;
using detail::FailureHandler;
using detail::post_failure;
using detail::is_transport;
using detail::LeasePtr;
using detail::map_transport;
using detail::post_done;
using detail::Queue;
using detail::QueuePtr;
using detail::retryable;
using detail::Waiter;
using detail::WaiterPtr;

// The acquire machine answers with the lock's own codes: every error its driver feeds it is one
// (the connection's are mapped first), so the machine builds no error_code.
inline Errc lock_errc(std::error_code ec) {
  assert(!ec || ec.category() == lock_category());
  return static_cast<Errc>(ec.value());
}

struct Client::Core : std::enable_shared_from_this<Client::Core> {
  Core(loop::Loop& l, ClientOptions o)
      : loop(l), opts(std::move(o)), notice_key(protocol::notice_key(opts.prefix)) {}

  class ShardLink;  // shard_link.hpp: a shard Core's link to its Cluster router

  // A Core with its connection (handlers wired, not started); `broken`: testing only; `link`:
  // a shard Core's, on a Cluster.
  static std::shared_ptr<Core> create(loop::Loop& loop, loop::ConnectionOptions connection,
                                      ClientOptions options,
                                      const testing::Regressions& broken = {},
                                      std::shared_ptr<ShardLink> link = nullptr);
  loop::Loop& loop;
  ClientOptions opts;
  // Safeguards switched off by the test-only seam (lockwire/testing/lock_regressions.hpp);
  // all off in every Client made with the public constructor.
  testing::Regressions regressions;
  std::unique_ptr<loop::Connection> conn;
  // Set on the Client's first Core (not behind sentinels, no locate): a server whose HELLO says
  // "cluster" makes it the Cluster's seed, control_only, instead of starting the connect probe.
  // The Client watches the same connection and, seeing that, routes through the router.
  bool may_be_cluster = false;
  bool control_only = false;
  bool seed_list = false;  // the URL named several hosts: only a Cluster may answer
  bool closed = false;
  ServerCapabilities caps;   // of the current connection (connect probe)
  std::string last_error;    // detail of the last failure reported (Client::last_error)
  // Cluster mode only: the Core's link to its router (shard_link.hpp), given at creation —
  // the node an -ASK names, and the MOVED, moved leaves and probes it tells. nullptr otherwise.
  std::shared_ptr<ShardLink> link;
  void send_asking(loop::Request r, loop::ReplyHandler h, loop::RequestOptions o);
  void watch_asking(loop::Request r, loop::WatchHandler h);
  // The connection to the node an ASK refusal (`ec`, `a`) names, its resend of `commands`
  // counted; nullptr when the caller gets the refusal (no ASK, closed, no_ask, unknown node).
  [[nodiscard]] loop::Connection* ask_again(Ec ec, const std::optional<loop::cluster::Redirect>& a,
                                            std::uint32_t commands);
  // Attempts held back until the connect probe of the current connection is answered (so that
  // nothing is granted on a server that may evict lock keys): one-shot queues; registered
  // queues park in need_ready and are woken by wake_all().
  std::vector<QueuePtr> parked;
  // The parked hand-off (ClientOptions::parked_handoff; docs/handoff-one-rtt.md): connections
  // on which an elected waiter's acquire block waits behind a blocking pop, one per waiter
  // parked at a time, kept for the next one. Made with the Core's own connection options
  // (park_options: no health check, which a blocked request would trip).
  static constexpr std::size_t kMaxParkerRaised = 256;
  struct Parker {
    // The fence keys this parking connection's own parked blocks raised (as `raised` for the
    // main connection), cleared with it and whenever this connection's stream changes.
    // Declared before conn so that it outlives conn's state handlers.
    detail::RaisedFences raised{kMaxParkerRaised};
    std::unique_ptr<loop::Connection> conn;
    bool busy = false;  // a parked block is on it
    std::uint64_t seq = 0;  // which park (Core::park_seq), while busy
  };
  std::uint64_t park_seq = 0;  // parks sent so far: each one's number
  std::vector<std::unique_ptr<Parker>> parkers;
  static constexpr std::size_t kMaxParkers = 16;
  loop::ConnectionOptions park_options;
  std::string park_refused;  // the server's words: the pop was refused, nobody parks any more
  bool park_checked = false;  // protocol::park_check answered: unblocking and killing allowed
  [[nodiscard]] bool parks() const noexcept;  // this Core's elected waiters park
  // Resources whose release of ours has just woken a parked waiter (protocol::
  // release_woke_parked): the lock is that waiter's now, so our next lock() of one within
  // kTakenFor joins the wait without an attempt (MachineEvent::taken). A worker loop re-locks
  // at once; later, the new holder may be gone, and the hint would cost a read.
  struct Taken {
    std::string holders;
    loop::MonoTime at;
  };
  std::vector<Taken> taken;  // at most kMaxTaken, the oldest dropped
  static constexpr std::size_t kMaxTaken = 16;
  static constexpr Nanos kTakenFor = std::chrono::milliseconds(1);
  void note_taken(const std::string& holders);
  [[nodiscard]] bool take_taken(const std::string& holders);
  // One-shot acquires (not in `queues`), so that shutdown() answers them too.
  std::vector<std::weak_ptr<Waiter>> one_shots;
  std::string notice_key;        // force_release notices (protocol::notice_key), tracked
  std::int64_t notice_seq = -1;  // its `seq` at our last read; -1 = not read yet
  // The server's clock (TIME in the connect probe, microseconds): the fencing floor, and when
  // the TIME it came from was sent (loop time): its age bounds how old the floor may be on the
  // server's clock (docs/protocol.md, "Fencing tokens": the fence key's expiry).
  std::uint64_t server_us = 0;
  loop::MonoTime floor_read_at{};
  // When TIME was last asked (read or refused): an attempt re-reads it first once this is
  // fence_ttl / 3 ago, so floors stay young without a timer (refresh_floor).
  loop::MonoTime floor_asked_at{};
  // loop::Connection::primary_epoch() at the last probe: a change means a new primary, on which
  // every held lease is renewed before it is trusted further (reconfirm_leases).
  std::uint64_t primary_epoch = 0;
  std::uint64_t seen_moves = 0;  // loop::Connection::moves() at the last suspension
  // The primary changed (or is changing): held leases stop counting (valid_until = now) until
  // a renewal on the new primary re-confirms them (reconfirm_leases).
  void suspend_leases();
  void lose_all_held();  // Regressions::drop_on_move only
  // The sentinels' vouch (loop::Connection::vouched_until; docs/protocol.md, *Partitions*): a
  // held lease counts up to `horizon` at the latest and is lost when the horizon passes
  // unextended; attempts and a move's re-confirmation wait until it is ahead again. kNever on
  // a single server, on a cluster and with SentinelOptions::vouch off (vouch.cpp). `horizon`
  // is the value the horizon timer was armed for.
  loop::MonoTime horizon{Nanos::max()};
  std::unique_ptr<loop::Timer> horizon_timer;
  bool reconfirm_pending = false;  // a move's re-confirmation waits for the vouch
  // Asked of the connection, not of `horizon`: the server may have changed since the last
  // answer (a renewal confirmed on a new primary must not count the old one's vouch).
  [[nodiscard]] bool vouched() const noexcept { return !passed(vouched_until()); }
  [[nodiscard]] bool vouched(loop::MonoTime now) const noexcept {
    return vouched_until() > now;
  }
  // Whether `until` is behind us. kNever (no vouch in play: a single server, a cluster,
  // SentinelOptions::vouch off) reads no clock: ~25 ns a reading, several per pair otherwise.
  [[nodiscard]] bool passed(loop::MonoTime until) const noexcept {
    return until != kNever && until <= loop.now();
  }
  [[nodiscard]] loop::MonoTime counted_until(loop::MonoTime end) const noexcept {
    return std::min(end, vouched_until());
  }
  // The sentinels' vouch (Connection), or on a cluster the other nodes' (set by the router).
  [[nodiscard]] loop::MonoTime vouched_until() const noexcept {
    return std::min(conn->vouched_until(), shard_vouch);
  }
  loop::MonoTime shard_vouch{Nanos::max()};
  std::string shard_vouch_detail;  // the nodes' words behind shard_vouch
  // The router's vouch for this shard's primary moved: as a sentinel answer does.
  void set_shard_vouch(loop::MonoTime until, std::string detail) {
    shard_vouch = until;
    shard_vouch_detail = std::move(detail);
    on_vouch();
  }
  void on_vouch();
  void on_horizon();
  void arm_horizon();
  void start_horizon_timer(Nanos after);  // on_horizon() after `after` (the one timer)
  [[nodiscard]] std::string vouch_words() const;
  // Connected and probed, but no vouch covers the primary: attempts are parked, not sent.
  [[nodiscard]] bool parked_by_vouch() const noexcept {
    return caps.probed && conn->state() == loop::ConnectionState::ready && !vouched();
  }
  // What a waiter answered while parked_by_vouch() is told (server_unavailable).
  [[nodiscard]] std::string parked_words(const std::string& resource) const {
    return resource + ": " + vouch_words() + "; nothing was attempted";
  }
  std::uint64_t push_id = 0;
  std::uint64_t state_id = 0;
  // Transparent: a doorbell push finds its queue by a string_view, without a copy.
  struct KeyHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view k) const noexcept {
      return std::hash<std::string_view>{}(k);
    }
  };
  std::unordered_map<std::string, QueuePtr, KeyHash, std::equal_to<>> queues;
  // Queues retired by advance(), kept for the next acquires: a Queue and its deque were three
  // of an acquire's allocations. One is reused only once nothing else holds it (fresh_queue).
  std::vector<QueuePtr> spare_queues;
  static constexpr std::size_t kMaxSpareQueues = 256;
  QueuePtr fresh_queue();
  // Upgrade waits, one queue each (not in `queues`): woken by their holder set's pushes too.
  std::vector<QueuePtr> upgrades;
  std::unordered_map<std::string, std::weak_ptr<detail::LeaseData>> leases;
  // Nodes of released leases, kept for the next grants: a node (and its key's buffer) made and
  // freed per lease was two of an acquire+release pair's allocations.
  std::vector<decltype(leases)::node_type> spare_lease_nodes;
  static constexpr std::size_t kMaxSpareLeaseNodes = 256;
  void register_lease(const LeasePtr& d);
  std::vector<std::string> scratch_keys;
  std::string scratch_key;  // registry look-ups without a temporary string
  // Fence keys this connection has raised to fence_floor() (raised_fences.hpp): acquires of the
  // resource on it leave the ZADD GT and the PEXPIRE out for a quarter of fence_ttl. Cleared
  // with every parking connection's (forget_raises) at every probe, floor reading and flush;
  // never used where lock keys may vanish on a live connection (allow_eviction) or a request
  // may go to another node (ASK).
  static constexpr std::size_t kMaxRaised = 4096;
  detail::RaisedFences raised{kMaxRaised};
  std::uint64_t probes = 0;  // connect probes answered: the connection the floor belongs to
  // ReplicaAcks::majority() without a sentinel's count: the replicas ROLE listed on the
  // connection of probe `role_probe` (read once per connection).
  int role_replicas = -1;
  std::uint64_t role_probe = ~std::uint64_t{0};
  // When `on`'s raising block for `k`'s fence was sent (the main connection's `raised` or a
  // parking connection's), if that is recent enough for a block to leave the raise out
  // (nullptr: raise).
  [[nodiscard]] const loop::MonoTime* raised_at(const detail::RaisedFences& on,
                                                const protocol::Keys& k,
                                                loop::MonoTime now) const;
  // An exclusive acquire block's reply, read as `a`: if the block raised the fence and ran (on
  // the connection `on` belongs to, under the current probe), `on` remembers the raise.
  void note_raise(detail::RaisedFences& on, const Waiter& w, bool raised_floor,
                  const protocol::AcquireReply& a, loop::MonoTime t_send);
  // The floor changed or the data may have: every connection's blocks raise again.
  void forget_raises() noexcept;
  // A token of `fence` failed its check: the next block for it raises, whatever connection.
  void forget_raise(std::string_view fence);
  std::size_t one_shots_sweep_at = 64;  // one_shots is swept of finished waiters at this size

  static constexpr loop::MonoTime kNever{Nanos::max()};
  // Settle bounds (start_settle), in the order they run out: every one is settle_timeout from
  // when it was set, so arrival order is deadline order, and one timer serves them all.
  struct Settle {
    loop::MonoTime at;
    std::weak_ptr<Waiter> w;
  };
  std::deque<Settle> settles;
  std::unique_ptr<loop::Timer> settles_timer;
  loop::MonoTime settles_armed = kNever;  // when settles_timer fires; kNever = not armed
  void on_settles_timer();
  void drop_settled();  // pops finished waiters off the front of `settles`
  // The settle bound of `w` ran out with its step still unanswered.
  void settle_due(const WaiterPtr& w, const QueuePtr& q);

  // Lease expiry checks: a min-heap on the lease's end, one timer for all of them (a timer made,
  // started, stopped and closed per lease cost more than the rest of a grant). Entries of
  // leases released, renewed or rehomed since are stale (generation) and are skipped; the heap
  // is compacted when it doubles, so it holds at most about twice the leases held.
  struct Expiry {
    loop::MonoTime at;
    std::uint64_t gen;
    std::weak_ptr<detail::LeaseData> d;
  };
  std::vector<Expiry> expiries;
  std::size_t expiries_compact_at = 64;
  std::unique_ptr<loop::Timer> expiries_timer;
  loop::MonoTime expiries_armed = kNever;
  void arm_expiry(const LeasePtr& d);
  void on_expiries_timer();
  void rearm_expiries();

  std::weak_ptr<Core> weak() { return weak_from_this(); }
  // The one guard every callback goes through: `f(Core*, args...)` runs only while this client
  // lives and is open (a destroyed or closed client is never touched).
  template <class F>
  auto guard(F f) {
    return [wk = weak(), f = std::move(f)](auto&&... args) mutable {
      auto self = wk.lock();
      if (!self || self->closed) return;
      f(self.get(), std::forward<decltype(args)>(args)...);
    };
  }
  // guard() for the reply handler of an attempt or a release (a loop::ReplyHandler, or a
  // loop::WatchHandler for a WATCH step), checked at compile time to fit the handler's inline
  // room: a request allocates no callback (#30).
  template <class Handler = loop::ReplyHandler, class F>
  Handler inline_reply(F f) {
    auto g = guard(std::move(f));
    static_assert(Handler::template stores_inline<decltype(g)>,
                  "this reply handler's captures outgrew its inline room");
    return Handler(std::move(g));
  }
  template <class F>
  loop::WatchHandler inline_watch(F f) {
    return inline_reply<loop::WatchHandler>(std::move(f));
  }
  // A timer for the wait of `w` on `q`: when it fires, `f(Core*, waiter, queue)` runs only while
  // this client lives and is open, the waiter is unanswered and the queue still exists.
  template <class F>
  std::unique_ptr<loop::Timer> waiter_timer(const QueuePtr& q, const WaiterPtr& w, F f) {
    return loop.make_timer([wk = weak(), ww = std::weak_ptr<Waiter>(w),
                            wq = std::weak_ptr<Queue>(q), f = std::move(f)] {
      auto self = wk.lock();
      auto wt = ww.lock();
      auto qq = wq.lock();
      if (!self || !wt || !qq || self->closed || wt->done) return;
      f(self.get(), wt, qq);
    });
  }
  Metrics* metrics() const { return opts.metrics.get(); }
  // A release (or a withdrawal) of `owner`'s lease of `kind` as this client sends it: with the
  // parked hand-off's wake token (ClientOptions::parked_handoff), so a parked waiter's block runs.
  [[nodiscard]] loop::Request release_request(Kind kind, const protocol::Keys& k,
                                              std::string_view owner) const {
    return protocol::release(kind, k, owner, opts.parked_handoff);
  }

  void send(loop::Request r, loop::ReplyHandler h, loop::RequestOptions o = {}) {
    if (auto* m = metrics()) m->on_request(r.commands);
    if (link) return send_asking(std::move(r), std::move(h), std::move(o));
    conn->send(std::move(r), std::move(h), std::move(o));
  }
  static loop::RequestOptions this_stream_only() {
    loop::RequestOptions o;
    o.this_stream_only = true;
    return o;
  }
  void watch(loop::Request r, loop::WatchHandler h) {
    if (auto* m = metrics()) m->on_request(r.commands);
    if (link) return watch_asking(std::move(r), std::move(h));
    conn->watch(std::move(r), std::move(h));
  }
  static void exec(loop::WatchTxn& txn, Metrics* m, loop::Request r, loop::ReplyHandler h) {
    if (m != nullptr) m->on_request(r.commands);
    txn.exec(std::move(r), std::move(h));
  }

  // ---- connection events -------------------------------------------------------------------

  void on_push(resp::Frame push);

  // Where lock keys may be evicted (allowed by allow_eviction), holders track their holder set
  // (tracked lease checks), so an eviction — or any change — of it is checked at once.
  [[nodiscard]] bool watch_evictions() const noexcept {
    return opts.allow_eviction && caps.may_evict() && caps.push_wakeups;
  }

  void check_holders_of(std::string_view holders_key);

  // The holder set changed (release, expiry, claim, renew). Shared waiters and the elected
  // exclusive waiter attempt at once. The backup (second in the queue) gives the elected one
  // kGraceMs and then re-checks itself, so a crashed or partitioned elected waiter delays a
  // hand-off by kGraceMs, not indefinitely; waiters further back wait for their doorbell (the
  // machine decides which: Event::holders_push).
  void on_holders_changed(const QueuePtr& q);
  // The holder set `k` changed: wake this client's waiters on it as a push would (the queue
  // and the upgrades waiting on it). False when no queue of ours waits on it.
  bool on_key_changed(const std::string& k);

  // Our doorbell rang (the waiter ahead of us left the queue) or expired: read our place again.
  void on_doorbell(const QueuePtr& q, std::string_view owner);

  static constexpr std::int64_t kGraceMs = 50;
  // A hand-on skips at most this many vanished waiters (doorbell gone) before it gives up; the
  // grace re-checks cover whatever is left.
  static constexpr int kMaxRings = 8;

  void wait_read(const QueuePtr& q, const WaiterPtr& w, bool with_hdel);

  // Queue score of a waiter without a ticket (never expected: every wait follows a lost
  // attempt): behind everyone, and still exact as a double.
  static constexpr std::uint64_t kLastTicket = std::uint64_t{1} << 53;

  // Leaves the server's wait queue and rings the doorbells of the two waiters now first (the
  // elected one and its backup). Off the hand-off's critical path: it runs while our grant is
  // held or after we gave up. A doorbell that is gone means its waiter is too: drop it and ring
  // the next ones.
  void leave_queue(const QueuePtr& q);
  struct RecentLeave {
    protocol::Keys keys;
    std::vector<std::string> owners;
    loop::MonoTime at;
  };
  std::vector<RecentLeave> recent_leaves;  // of the last kQueueTtlMs, at most kMaxRecentLeaves
  static constexpr std::size_t kMaxRecentLeaves = 1024;
  void replay_leaves();

  // `plain`: without MULTI, after the server refused the block (see leave_queue_plain).
  // `expected`: the waiters expected to be first once we are gone (Queue::behind), whose
  // doorbells ring in the leave's own request; the rest of the two found first ring after.
  void hand_on(const QueuePtr& q, std::vector<std::string> leaving, int budget, bool plain = false,
               std::vector<std::string> expected = {});
  // Rings the doorbells of `first` (the waiters now first); one that is gone is dropped from
  // the queue, and the next ones are rung, within `budget`.
  void ring_first(const QueuePtr& q, std::vector<std::string> first, int budget);
  void leave_later(const QueuePtr& q, std::vector<std::string> leaving, int budget);
  std::vector<std::unique_ptr<loop::Timer>> leave_timers;  // leaves refused for now

  void on_state(loop::ConnectionState s);

  // `sent`: when the probe (its TIME) was sent.
  void on_probe(const protocol::ConnectProbe& p, loop::MonoTime sent);

  // Why no lease is granted on this server (empty: granting is fine).
  [[nodiscard]] std::string refusal() const;

  // The force-release notice changed: a force_release (by any client, this one included) just
  // removed the holders of a resource. Read it again (which tracks it again) and check the local
  // leases on that resource, so that their holder learns of the loss about one round trip after
  // the removal instead of at its next renewal. If notices were missed in between (the sequence
  // moved by more than one) or it cannot be read, every lease is checked.
  void read_notice();

  [[nodiscard]] static protocol::Notice notice_of(const loop::Replies& r) {
    return r.size() == 0 ? protocol::Notice{} : protocol::parse_notice_read(r.back());
  }

  // Checks the held leases on `resource` (all of them if empty: after a reconnect, notices may
  // have been missed) and reports those that are gone from the server as lost.
  void check_leases(std::string_view resource);

  // Is this lease still on the server? Reports it lost if not.
  void check_lease(const LeasePtr& d);

  void wake_all();

  void wake(const QueuePtr& q);

  // The primary changed: renew every held lease there (reported lost if it is not held there).
  void reconfirm_leases();
  // The floor the next token is raised to: the server's clock at this connection's probe, in
  // microseconds (0 when unknown or with the counter_tokens regression).
  [[nodiscard]] std::uint64_t fence_floor() const noexcept;
  // PEXPIRE for the fence key in each block that touches it, in ms: ClientOptions::fence_ttl;
  // 0 (never expires) where tokens come from the counter alone (TIME refused, counter_tokens).
  [[nodiscard]] std::int64_t fence_ttl_ms() const noexcept;
  // The floor for `w`'s grant block, noted in `w` (sent_floor...) for stale_grant.
  std::uint64_t floor_for(Waiter& w);
  std::uint64_t no_floor(Waiter& w);
  [[nodiscard]] std::uint64_t queue_ticket() const noexcept;
  // Why a granted token may not be handed over (docs/protocol.md, "Fencing tokens"):
  // floor_too_old — the floor may be fence_ttl old on the server's clock, so the fence key may
  // have expired and come back below earlier tokens; below_floor — a block without the ZADD GT
  // got a token at or below the floor: the key expired and came back at 1; unrefreshed — a
  // block without the ZADD GT (and so without the key's PEXPIRE) was answered a third of
  // fence_ttl or more after its connection's raising block: the key may expire less than
  // fence_ttl after this token.
  enum class Staleness : std::uint8_t { fresh, floor_too_old, below_floor, unrefreshed };
  [[nodiscard]] Staleness stale_grant(const Waiter& w, std::uint64_t token) const;
  static constexpr int kMaxStaleRetries = 3;
  // Reads TIME on this connection; the floor is taken only if the connection is still the one
  // it was sent on. Then `then` (may be empty).
  void refresh_floor(std::function<void()> then);
  // Keys may be evicted on this connection (allow_eviction): TIME before every attempt.
  [[nodiscard]] bool floor_read_every_attempt() const noexcept;
  // Reads TIME on this connection and takes it as the floor; then `then(ec)` (ec: the read
  // failed on the connection, nothing taken).
  void read_floor_now(std::function<void(Core*, Ec)> then);
  // An attempt should read TIME first: the floor was asked fence_ttl / 3 ago or more.
  [[nodiscard]] bool floor_aging(loop::MonoTime now) const;
  // The attempt's first block. `t_send`: a reading of the clock taken no later than this
  // call (the lease is counted from it), shared with the checks before it (try_attempt).
  void send_attempt(const QueuePtr& q, const WaiterPtr& w, loop::MonoTime t_send);
  void park_until_probed(const QueuePtr& q);
  // min_replicas: WAIT for the replicas after a grant or renewal of `resource`, then `then(ec)`:
  // ok, not_replicated (last_error says how many acknowledged), server_refused/unavailable (the
  // server's words) — all lock::Errc — or the connection's own error (loop::Errc: the WAIT's
  // outcome is unknown). At once with ok when min_replicas asks for none (none(), count(0), or
  // majority() of a primary with no replica).
  void replicated(const std::string& resource, std::function<void(Ec)> then);

  // ---- acquire -----------------------------------------------------------------------------

  void complete(const WaiterPtr& w, Ec ec, Lease lease = {});

  // The failure for a reply the protocol cannot use: the server's words (classified) when it
  // said something, else Errc::protocol. Also kept in last_error ("<resource>: <words>"), and a
  // MOVED is told to the router (link->moved). refused(): its error code only.
  Failure refusal(const loop::Replies& r, std::string_view resource);
  Ec refused(const loop::Replies& r, std::string_view resource) { return refusal(r, resource).ec; }

  // The wait of `w` ends with `why` (deadline, cancel). With a step in flight, the answer waits
  // for its outcome (bounded by settle_timeout), so that a late grant or a claim of ours is
  // withdrawn before the caller is told; otherwise there is nothing of ours on the server but
  // the queue entry, which advance() hands on.
  void give_up(const QueuePtr& q, const WaiterPtr& w, Ec why);

  // After `after`, a waiter whose step is still unanswered is told outcome_unknown (with what
  // may be left behind); the step's reply, if it ever comes, is still handled (a late grant is
  // released, a claim withdrawn) while the client lives.
  void start_settle(const QueuePtr& q, const WaiterPtr& w, Nanos after);

  // The wait of `w` (on `q`) gives up with timed_out once w->req.wait has passed, unless it was
  // answered first (lock() and upgrade(), for a wait that is not one attempt only).
  void arm_deadline(const QueuePtr& q, const WaiterPtr& w);

  // Removes whatever claim or grant of `w` may exist (HDEL of our own field — and our shared
  // companion — touches nothing of anyone else), then `then(absent)`: absent = the server
  // answered, so nothing of ours is left. Retried while the connection comes back, at most a
  // few times; the settle timer bounds how long the caller waits.
  void withdraw(const QueuePtr& q, const WaiterPtr& w, std::function<void(bool absent)> then,
                int tries = 4);

  // Drops finished waiters at the head; starts the next attempt or retires the queue.
  void advance(const QueuePtr& q);

  void attempt(const QueuePtr& q);

  // A transport error as the caller sees it, with the connection's words (also in last_error).
  Failure transport(Ec ec);
  Ec map(Ec ec) { return transport(ec).ec; }
  // The MOVED a refused WATCH names (a read refused whole: the slot is another shard's now).
  [[nodiscard]] static std::optional<loop::cluster::Redirect> moved_in(const loop::Replies& r);


  [[nodiscard]] protocol::AcquireReply acquire_reply(const Waiter& w, bool raise_floor,
                                                    const loop::Replies& r) const;
  void on_exclusive_reply(const QueuePtr& q, const WaiterPtr& w, loop::MonoTime t_send, Ec ec,
                          const loop::Replies& r);

  static void note_place(Queue& q, std::string first, std::int64_t rank,
                         std::vector<std::string> behind);
  void tracking_refused_in_block(const loop::Replies& r);

  // The n-th poll's delay: poll_initial * 2^n, at most poll_max, jittered to [d/2, d].
  [[nodiscard]] Nanos poll_delay(int n);

  // The lease of a grant that is handed over: registered, its timers armed, the caller told.
  void hand_over(const WaiterPtr& w, std::uint64_t token, loop::MonoTime t_send);

  // ---- the acquire machine's driver (acquire_driver.cpp) ------------------------------------
  using MachineEvent = detail::AcquireMachine::Event;
  using MachineAction = detail::AcquireMachine::Action;
  // An event of kind `k`, its other fields as the machine defaults them.
  static MachineEvent event(MachineEvent::Kind k) noexcept {
    MachineEvent e;
    e.kind = k;
    return e;
  }
  // Feeds `e` to w's machine and carries out its actions, and the events they give at once.
  void drive(QueuePtr q, WaiterPtr w, MachineEvent e);
  // drive() for a caller whose `q` and `w` outlive the call whatever the answer's callback
  // does (a reply callback's own captures), so that it need not copy them.
  void drive_owned(const QueuePtr& q, const WaiterPtr& w, MachineEvent e);
  // Carries out `a`; true when it leads to an event at once, written to `next`. Inline: defined
  // (and used) in acquire_driver.cpp only, in drive()'s loop.
  inline bool carry_out(const QueuePtr& q, const WaiterPtr& w, const MachineAction& a,
                        MachineEvent& next);
  // What stands between w and sending a grant block at `now`: try_attempt acts on each; a park
  // sends only when nothing does, and leaves the rest to the attempt it falls back to.
  enum class Gate : std::uint8_t {
    open,
    hold,               // leaving, not probed, not ready or not vouched: not sent (held)
    refused,            // the server is unsafe or unsupported (refusal())
    floor_every_time,   // floor_read_every_attempt(): TIME before every attempt
    floor_aging,        // floor_aging(now): TIME first
  };
  [[nodiscard]] Gate gate(const Waiter& w, loop::MonoTime now) const;
  // The attempt itself: sent, held (no usable connection: not_sent) or refused before sending;
  // true (with `next`) when it was not sent.
  bool try_attempt(const QueuePtr& q, const WaiterPtr& w, MachineEvent& next);
  // carry_out's longer cases (HDEL of our claim, leaving P{R}:q, a fresh floor, the backstop;
  // driven_drop_head below).
  void driven_withdraw(const QueuePtr& q, const WaiterPtr& w);
  void driven_leave_queue(const QueuePtr& q);
  bool driven_read_floor(const QueuePtr& q, const WaiterPtr& w, MachineEvent& next);
  void arm_backstop(const QueuePtr& q, const WaiterPtr& w, const MachineAction& a);
  void answer_driven(const QueuePtr& q, const WaiterPtr& w, const MachineAction& a);
  // A failed step as the machine's event (the connection's error mapped, its words kept).
  MachineEvent transport_event(Ec ec, bool maybe_applied);
  // The exclusive acquire block's reply as the machine's event, a grant judged first: floor,
  // replicas, vouch.
  void driven_reply(const QueuePtr& q, const WaiterPtr& w, loop::MonoTime t_send,
                    const protocol::AcquireReply& a, const loop::Replies& r);
  void driven_grant(const QueuePtr& q, const WaiterPtr& w, std::uint64_t token);
  void driven_vouch_check(const QueuePtr& q, const WaiterPtr& w, std::uint64_t token);
  void driven_wait_read(const QueuePtr& q, const WaiterPtr& w, Ec ec, const loop::Replies& r,
                        bool with_hdel, bool track, bool clear_wake);
  void driven_check_stale(const QueuePtr& q, const WaiterPtr& w);
  // Fair order for a driven waiter: the WATCHed read, the grant under it, the head's doorbell.
  void driven_fair_read(const QueuePtr& q, const WaiterPtr& w, loop::MonoTime t_send, Ec ec,
                        const loop::Replies& r, loop::WatchTxn txn);
  void driven_shared_read(const QueuePtr& q, const WaiterPtr& w, loop::MonoTime t_send, Ec ec,
                          const loop::Replies& r, loop::WatchTxn txn);
  void driven_watched_grant(const QueuePtr& q, const WaiterPtr& w, loop::MonoTime t_send);
  void driven_check_head(const QueuePtr& q, const WaiterPtr& w);
  // Removes the vanished first waiter from the queue (Action::drop_head).
  void driven_drop_head(const QueuePtr& q, const WaiterPtr& w);
  void drive_unread(const QueuePtr& q, const WaiterPtr& w, Ec ec, const loop::Replies& r);
  void drive_watched_read(const QueuePtr& q, const WaiterPtr& w, loop::MonoTime t_send,
                          loop::WatchTxn txn, MachineEvent e);
  // Our place in the server's wait queue goes on (leave_queue) unless the next unanswered
  // waiter of ours for the resource is the same owner, who keeps it.
  [[nodiscard]] static bool place_handed_on(const Queue& q) {
    if (q.queued.empty()) return false;
    const auto next = std::find_if(q.waiters.begin(), q.waiters.end(),
                                   [](const WaiterPtr& x) { return !x->done; });
    return next == q.waiters.end() || (*next)->req.owner != q.queued;
  }
  // A reply the step cannot use as the machine's `refused` (words in told_words, the Failure
  // kept); `may_claim`: the step may have left a claim of ours.
  MachineEvent refused_event(Waiter& w, const loop::Replies& r, bool may_claim);
  static void note_shared_holders(Waiter& w, const protocol::WaitRead& wr);
  // After w's answer: the queue moves on (w was its head) or w leaves it (it was behind).
  void move_on(const QueuePtr& q, const WaiterPtr& w);
  // The head of `q`, when the machine drives it and it is unanswered.
  [[nodiscard]] static Waiter* driven_head(const Queue& q) {
    if (q.waiters.empty()) return nullptr;
    Waiter* w = q.waiters.front().get();
    return w->machine && !w->done ? w : nullptr;
  }
  // A queue's timer (backstop, grace, unpark, park watch), made once: each acts for whichever
  // waiter is head.
  loop::Timer& queue_timer(const QueuePtr& q, std::unique_ptr<loop::Timer> Queue::*slot,
                           void (Core::*on)(const QueuePtr&));
  void on_backstop(const QueuePtr& q);
  void on_grace(const QueuePtr& q);
  // The parked hand-off (park.cpp): the park, its reply, unblocking, the push grace.
  bool driven_park(const QueuePtr& q, const WaiterPtr& w, MachineEvent& next);
  void on_parked_reply(const QueuePtr& q, const WaiterPtr& w, loop::MonoTime t_send,
                       bool raised_floor, Parker* p, Ec ec, const loop::Replies& r);
  void driven_unpark(const QueuePtr& q, const WaiterPtr& w);
  void on_unpark_timer(const QueuePtr& q);
  void on_park_watch(const QueuePtr& q);
  void watch_park(const QueuePtr& q, std::uint64_t seq, Nanos after);
  // The parked block went to the server the main connection is on now, through the same
  // probed connection: its outcome, an UNBLOCK or a KILL of its client ID are about that server.
  [[nodiscard]] bool parked_here(const Waiter& w) const;
  // How long after its CLIENT UNBLOCK was answered a parked block's reply may take before its
  // parking connection counts as stalled or half-open (driven_unpark).
  static constexpr Nanos kParkedReplyBound = std::chrono::milliseconds(100);
  Parker* take_parker();
  void refuse_parking(const std::string& why);

  static std::string registry_key(const std::string& holders, const std::string& owner) {
    std::string k = holders;
    k.push_back('\0');
    k.append(owner);
    return k;
  }

  // ---- leases ------------------------------------------------------------------------------

  void arm_lease_timers(const LeasePtr& d);

  void stop_lease_timers(const LeasePtr& d) noexcept;
  // A lease handle may outlive the loop: its timers go as soon as it is no longer held.
  static void drop_lease_timers(const LeasePtr& d) noexcept;

  void forget(const LeasePtr& d);

  // Tells the holder its lease is gone (once).
  void lose(const LeasePtr& d, Ec why);

  void auto_renew(const LeasePtr& d);

  // keep_end: renew to the end the holder already counts on, not a full TTL (re-confirmation).
  void do_renew(const LeasePtr& d, FailureHandler done, bool keep_end = false);

  // Renews a lease held by `owner` that this client did not grant (a tool, another process):
  // the same WATCH/MULTI steps on a lease record of its own. `then_shared`: not held as
  // exclusive, try shared.
  void renew_owner(std::string resource, std::string owner, Kind kind, bool then_shared, Nanos ttl,
                   FailureHandler handler);

  void finish_renew(const LeasePtr& d, const Failure& f, loop::MonoTime t_send,
                    const FailureHandler& done);


  // ---- fair order (the acquire machine's, Options::fair; docs/protocol.md, *Fair order*) ----
  static constexpr std::int64_t kFairDoorbellMs = 2000;  // a vanished head's hold on the queue
  [[nodiscard]] static bool queue_member(const QueuePtr& q, const WaiterPtr& w) {
    return q->queued == w->req.owner;
  }
  [[nodiscard]] static bool fair(const Waiter& w) noexcept {
    return w.req.fair && w.req.kind == Kind::exclusive && !w.upgrade;
  }

  // ---- upgrade (upgrade.cpp) ---------------------------------------------------------------
  // The machine's steps of an upgrade: the WATCHed read, the intent with the wait's reads
  // under it, and their reply.
  void driven_upgrade_read(const QueuePtr& q, const WaiterPtr& w, loop::MonoTime t_send, Ec ec,
                           const loop::Replies& r, loop::WatchTxn txn);
  void driven_declare_and_read(const QueuePtr& q, const WaiterPtr& w);
  void driven_upgrade_waited(const QueuePtr& q, const WaiterPtr& w, Ec ec,
                             const loop::Replies& r, bool track);
  static constexpr std::int64_t kIntentMaxMs = protocol::kDoorbellMaxMs;  // re-armed each round
  // The local shared lease an upgrade of (`keys`, `owner`) replaces; nullptr if none.
  LeasePtr shared_lease_of(const protocol::Keys& keys, std::string_view owner);

  // ---- the public operations on this Core (Client routes each call to its Core) -------------
  // `routed`: the Cluster router's answer (with the Failure), instead of `handler`.
  void lock(LockRequest req, AcquireHandler handler,
            std::function<void(const Failure&, Lease)> routed = {});
  void upgrade(LockRequest req, AcquireHandler handler);
  void cancel(std::string_view resource, std::string_view owner);
  void release(const Lease& lease, DoneHandler handler);
  // These answer with a Failure (a std::error_code handler takes it as it is).
  void renew(const Lease& lease, FailureHandler handler);
  void release(std::string resource, std::string owner, std::optional<Kind> kind,
               FailureHandler handler);
  void renew(std::string resource, std::string owner, std::optional<Kind> kind, Nanos ttl,
             FailureHandler handler);
  void force_release(std::string resource, std::function<void(const Failure&, std::size_t)> h);
  void inspect(std::string resource, std::function<void(const Failure&, const LockInfo&)> h);
  [[nodiscard]] std::error_code validate(const LockRequest& req, std::string* why = nullptr) const;
  [[nodiscard]] Ec check_by_owner(std::string_view resource, std::string_view owner);
  [[nodiscard]] Ec check_resource(std::string_view resource);

  void shutdown() noexcept;
};

}  // namespace lockwire::lock
