// The lock client state machine. Protocol blocks come from protocol.hpp; docs/protocol.md says why
// each step is safe. Everything runs on the loop thread; handlers hold weak_ptrs so that a
// destroyed client is never touched.
#include "lockwire/lock/client.hpp"

#include <algorithm>
#include <deque>
#include <unordered_map>
#include <utility>

#include "lockwire/resp/encoder.hpp"
#include "lockwire/resp/reply.hpp"

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
  loop::MonoTime valid_until{};
  protocol::Keys keys;
  std::string registry_key;
  bool auto_renew = false;
  std::function<void(std::error_code)> on_lost;
  std::unique_ptr<loop::Timer> expiry_timer;
  std::unique_ptr<loop::Timer> renew_timer;
  bool renew_in_flight = false;
};
}  // namespace detail

// --- Lease -------------------------------------------------------------------------------------

const std::string& Lease::resource() const noexcept {
  return d_->resource;
}
const std::string& Lease::owner() const noexcept {
  return d_->owner;
}
Kind Lease::kind() const noexcept {
  return d_->kind;
}
std::uint64_t Lease::token() const noexcept {
  return d_->token;
}
Nanos Lease::ttl() const noexcept {
  return d_->ttl;
}
LeaseState Lease::state() const noexcept {
  return d_->state.load(std::memory_order_acquire);
}
loop::MonoTime Lease::valid_until() const noexcept {
  return d_->valid_until;
}

// --- CountingMetrics ---------------------------------------------------------------------------

void CountingMetrics::on_op(Op op, Kind, std::error_code ec, Nanos) noexcept {
  switch (op) {
    case Op::acquire:
      (ec ? acquire_failed : acquired).fetch_add(1, std::memory_order_relaxed);
      break;
    case Op::release:
      (ec ? release_failed : released).fetch_add(1, std::memory_order_relaxed);
      break;
    case Op::renew:
      (ec ? renew_failed : renewed).fetch_add(1, std::memory_order_relaxed);
      break;
    default:
      break;
  }
}
void CountingMetrics::on_contended(std::string_view) noexcept {
  contended.fetch_add(1, std::memory_order_relaxed);
}
void CountingMetrics::on_wait(Nanos, bool) noexcept {
  waits.fetch_add(1, std::memory_order_relaxed);
}
void CountingMetrics::on_lease_lost(std::string_view, std::error_code) noexcept {
  leases_lost.fetch_add(1, std::memory_order_relaxed);
}
void CountingMetrics::on_request(std::uint32_t n) noexcept {
  requests.fetch_add(1, std::memory_order_relaxed);
  commands.fetch_add(n, std::memory_order_relaxed);
}

// --- Core --------------------------------------------------------------------------------------

namespace {

using Ec = std::error_code;
using LeasePtr = std::shared_ptr<detail::LeaseData>;

Ec map_transport(Ec ec) {
  if (ec == loop::Errc::outcome_unknown) return Errc::outcome_unknown;
  if (ec == loop::Errc::closed) return Errc::closed;
  if (ec == loop::Errc::server_error || ec == loop::Errc::protocol_error ||
      ec == loop::Errc::bad_request) {
    return Errc::protocol;
  }
  return Errc::connection;
}

// Transport failures the connection reports with no replies.
bool is_transport(Ec ec) {
  return ec && ec != loop::Errc::server_error;
}

// Failures after which the same request may be sent again (after the reconnect, if need be).
bool retryable(Ec ec) {
  return ec == loop::Errc::not_sent || ec == loop::Errc::outcome_unknown ||
         ec == loop::Errc::connection_lost || ec == loop::Errc::connect_failed ||
         ec == loop::Errc::health_check_failed;
}

struct Waiter {
  LockRequest req;
  protocol::Keys keys;
  std::string field;
  std::int64_t ttl_ms = 0;
  Client::AcquireHandler cb;
  loop::MonoTime start{};
  loop::MonoTime deadline{};
  bool done = false;    // callback called (granted, failed or timed out)
  bool waited = false;  // had to wait for a wake-up at least once
  // Exclusive: the token our first losing attempt burnt; our score in the wait queue P{R}:q.
  std::uint64_t ticket = 0;
  // The wait ended (deadline or cancel) while a step of ours was in flight: no new step starts;
  // the caller gets `give_up` once that step's outcome is known and no claim of ours remains.
  bool expired = false;
  Ec give_up;
  int polls = 0;  // consecutive polls of this wait (no push wake-ups): the backoff's exponent
  std::unique_ptr<loop::Timer> deadline_timer;
  std::unique_ptr<loop::Timer> settle_timer;  // answers outcome_unknown if the server is silent

  // No further step for this waiter: answered, or answered once the step in flight is settled.
  [[nodiscard]] bool leaving() const noexcept { return done || expired; }
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
  std::string suspect;  // the first waiter did not act within the grace: dropped when we leave
  std::deque<WaiterPtr> waiters;
  std::unique_ptr<loop::Timer> backstop;
  std::unique_ptr<loop::Timer> grace;  // not elected: re-check if the elected waiter is silent

  [[nodiscard]] bool elected() const noexcept { return rank == 0; }

  // Leaving `waiting`: no timer of that wait may fire any more.
  void stop_timers() noexcept {
    if (backstop) backstop->stop();
    if (grace) grace->stop();
  }
};
using QueuePtr = std::shared_ptr<Queue>;

}  // namespace

struct Client::Core : std::enable_shared_from_this<Client::Core> {
  Core(loop::Loop& l, ClientOptions o)
      : loop(l), opts(std::move(o)), notice_key(protocol::notice_key(opts.prefix)) {}

  loop::Loop& loop;
  ClientOptions opts;
  std::unique_ptr<loop::Connection> conn;
  bool closed = false;
  bool tracking_on = false;      // CLIENT TRACKING ON OPTIN confirmed on the current connection
  ServerCapabilities caps;       // of the current connection (connect probe)
  std::string last_error;        // detail of the last failure reported (Client::last_error)
  // Attempts held back until the connect probe of the current connection is answered (so that
  // nothing is granted on a server that may evict lock keys): one-shot queues; registered
  // queues park in need_ready and are woken by wake_all().
  std::vector<QueuePtr> parked;
  // One-shot acquires (not in `queues`), so that shutdown() answers them too.
  std::vector<std::weak_ptr<Waiter>> one_shots;
  std::string notice_key;        // force_release notices (protocol::notice_key), tracked
  std::int64_t notice_seq = -1;  // its `seq` at our last read; -1 = not read yet
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
  std::unordered_map<std::string, std::weak_ptr<detail::LeaseData>> leases;
  std::vector<std::string> scratch_keys;

  std::weak_ptr<Core> weak() { return weak_from_this(); }
  Metrics* metrics() const { return opts.metrics.get(); }

  void send(loop::Request r, loop::ReplyHandler h) {
    if (auto* m = metrics()) m->on_request(r.commands);
    conn->send(std::move(r), std::move(h));
  }
  void watch(loop::Request r, loop::WatchHandler h) {
    if (auto* m = metrics()) m->on_request(r.commands);
    conn->watch(std::move(r), std::move(h));
  }
  static void exec(loop::WatchTxn& txn, Metrics* m, loop::Request r, loop::ReplyHandler h) {
    if (m != nullptr) m->on_request(r.commands);
    txn.exec(std::move(r), std::move(h));
  }

  // ---- connection events -------------------------------------------------------------------

  void on_push(resp::Frame push) {
    scratch_keys.clear();
    bool all = false;
    if (!protocol::parse_invalidate(push, scratch_keys, all)) return;
    if (all) {  // FLUSHALL/FLUSHDB: everything may be gone
      wake_all();
      read_notice();
      return;
    }
    for (const std::string& k : scratch_keys) {
      if (auto it = queues.find(k); it != queues.end()) {
        on_holders_changed(it->second);
        continue;
      }
      if (k == notice_key) {
        read_notice();
        continue;
      }
      std::string_view holders, owner;
      if (protocol::split_doorbell(k, holders, owner)) {
        if (auto it = queues.find(holders); it != queues.end()) on_doorbell(it->second, owner);
        continue;
      }
      if (watch_evictions()) check_holders_of(k);
    }
  }

  // Where lock keys may be evicted (allowed by allow_eviction), holders track their holder set
  // (tracked lease checks), so an eviction — or any change — of it is checked at once.
  [[nodiscard]] bool watch_evictions() const noexcept {
    return opts.allow_eviction && caps.may_evict() && caps.push_wakeups;
  }

  void check_holders_of(std::string_view holders_key) {
    std::vector<LeasePtr> held;
    for (auto& [k, wl] : leases) {
      auto d = wl.lock();
      if (d && d->state.load() == LeaseState::held && d->keys.holders == holders_key) {
        held.push_back(std::move(d));
      }
    }
    for (const auto& d : held) check_lease(d);
  }

  [[nodiscard]] static bool exclusive_head(const Queue& q) {
    return !q.waiters.empty() && q.waiters.front()->req.kind == Kind::exclusive;
  }

  // The holder set changed (release, expiry, claim, renew). Shared waiters and the elected
  // exclusive waiter attempt at once. The backup (second in the queue) gives the elected one
  // kGraceMs and then re-checks itself, so a crashed or partitioned elected waiter delays a
  // hand-off by kGraceMs, not indefinitely; waiters further back wait for their doorbell.
  void on_holders_changed(const QueuePtr& q) {
    if (q->state != Queue::State::waiting) return;
    if (!exclusive_head(*q) || q->elected()) {
      wake(q);
      return;
    }
    if (q->rank > 1) return;
    if (!q->grace) {
      q->grace = loop.make_timer([wk = weak(), wq = std::weak_ptr<Queue>(q)] {
        auto self = wk.lock();
        auto qq = wq.lock();
        if (!self || !qq || self->closed) return;
        qq->suspect = qq->first;  // cleared by the next read if the first has moved on
        self->recheck(qq);
      });
    }
    if (!q->grace->active()) q->grace->start(std::chrono::milliseconds(kGraceMs));
  }

  // Our doorbell rang (the waiter ahead of us left the queue) or expired: read our place again.
  void on_doorbell(const QueuePtr& q, std::string_view owner) {
    if (q->state != Queue::State::waiting || !exclusive_head(*q)) return;
    if (q->waiters.front()->req.owner != owner) return;
    recheck(q);
  }

  // An exclusive waiter that is not elected re-runs its wait block (no claim to remove).
  void recheck(const QueuePtr& q) {
    if (q->state != Queue::State::waiting || !exclusive_head(*q)) return;
    wait_read(q, q->waiters.front(), false);
  }

  static constexpr std::int64_t kGraceMs = 50;
  // A hand-on skips at most this many vanished waiters (doorbell gone) before it gives up; the
  // grace re-checks cover whatever is left.
  static constexpr int kMaxRings = 8;

  void wait_read(const QueuePtr& q, const WaiterPtr& w, bool with_hdel) {
    q->state = Queue::State::in_flight;
    q->stop_timers();
    // Tracked reads only where the server accepted tracking; otherwise we poll (wait()).
    const bool track = caps.push_wakeups;
    loop::Request r;
    if (w->req.kind == Kind::exclusive) {
      // The doorbell lives for our remaining wait, at most kDoorbellMaxMs (then we re-arm it):
      // a waiter that vanishes leaves a doorbell that no longer rings after that.
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(w->deadline - loop.now());
      const std::int64_t door_ms =
          std::clamp<std::int64_t>(left.count(), 1, protocol::kDoorbellMaxMs);
      r = protocol::exclusive_wait_read(w->keys, with_hdel ? std::string_view(w->field) : "",
                                        w->req.owner, w->ticket != 0 ? w->ticket : kLastTicket,
                                        door_ms, track);
      // From now on we may be in the queue (whatever becomes of the reply): leave it when done.
      q->queued = w->req.owner;
    } else {
      r = protocol::wait_read(w->keys, with_hdel ? std::string_view(w->field) : "", track);
    }
    send(std::move(r), [wk = weak(), q, w, with_hdel, track](Ec ec, const loop::Replies& rr) {
      auto self = wk.lock();
      if (!self || self->closed) return;
      self->on_wait_read(q, w, ec, rr, with_hdel, track);
    });
  }

  // Queue score of a waiter without a ticket (never expected: every wait follows a lost
  // attempt): behind everyone, and still exact as a double.
  static constexpr std::uint64_t kLastTicket = std::uint64_t{1} << 53;

  // Leaves the server's wait queue and rings the doorbells of the two waiters now first (the
  // elected one and its backup). Off the hand-off's critical path: it runs while our grant is
  // held or after we gave up. A doorbell that is gone means its waiter is too: drop it and ring
  // the next ones.
  void leave_queue(const QueuePtr& q) {
    q->rank = -1;
    if (q->queued.empty()) return;
    std::vector<std::string> leaving{std::exchange(q->queued, {})};
    if (!q->suspect.empty() && q->suspect != leaving.front()) leaving.push_back(q->suspect);
    q->suspect.clear();
    hand_on(q, std::move(leaving), kMaxRings);
  }

  void hand_on(const QueuePtr& q, std::vector<std::string> leaving, int budget) {
    send(protocol::leave_queue(q->keys, leaving),
         [wk = weak(), q, leaving, budget](Ec ec, const loop::Replies& r) {
           auto self = wk.lock();
           std::vector<std::string> first;
           if (!self || self->closed) return;
           if (is_transport(ec)) {
             // ZREM is idempotent: send it again, so that no entry of ours is left for others
             // to ring in vain.
             if (retryable(ec) && budget > 1) self->hand_on(q, leaving, budget - 1);
             return;
           }
           if (ec || r.size() == 0) return;
           if (!protocol::parse_leave_queue(r.back(), first) || first.empty()) return;
           self->send(protocol::ring(q->keys, first),
                      [wk, q, first, budget](Ec, const loop::Replies& r2) {
                        auto s2 = wk.lock();
                        if (!s2 || s2->closed || r2.size() != first.size() || budget <= 1) return;
                        std::vector<std::string> gone;
                        for (std::size_t i = 0; i < first.size(); ++i) {
                          if (protocol::parse_ring(r2[i]) == protocol::Ring::gone)
                            gone.push_back(first[i]);
                        }
                        if (!gone.empty()) s2->hand_on(q, std::move(gone), budget - 1);
                      });
         });
  }

  void on_state(loop::ConnectionState s) {
    if (s != loop::ConnectionState::ready) {
      tracking_on = false;
      caps.probed = false;
    }
    if (s != loop::ConnectionState::ready || closed) return;
    // Tracking is connection state: re-enable it after every (re)connect, together with the
    // tracked read of the force-release notice, and learn what the server lets us do (a refusal
    // is an answer); then let every waiter re-check and every holder check its lease (pushes
    // may have been missed while disconnected). No attempt is sent before this is answered.
    send(protocol::connect_probe(notice_key), [w = weak()](Ec ec, const loop::Replies& rr) {
      auto self = w.lock();
      if (!self || self->closed) return;
      if (is_transport(ec)) return;  // the connection went again; the next `ready` re-probes
      self->on_probe(protocol::parse_connect_probe(rr));
    });
  }

  void on_probe(const protocol::ConnectProbe& p) {
    const bool had_wakeups = caps.push_wakeups || !caps.probed;
    caps = ServerCapabilities{};
    caps.probed = true;
    caps.push_wakeups = p.ok && p.push_wakeups;
    caps.tracking_error = p.ok ? p.tracking_error : "malformed reply to the connect probe";
    caps.memory_known = p.memory_known;
    caps.maxmemory = p.maxmemory;
    caps.maxmemory_policy = p.maxmemory_policy;
    caps.info_error = p.info_error;
    tracking_on = caps.push_wakeups;
    if (auto* m = metrics()) {
      if (!caps.push_wakeups && had_wakeups) {
        m->on_degraded("push wake-ups refused: waiters poll, force-release is seen at renewal",
                       caps.tracking_error);
      }
      if (!caps.memory_known) {
        m->on_degraded("INFO memory refused: the eviction policy is unknown", caps.info_error);
      } else if (caps.may_evict() && opts.allow_eviction) {
        m->on_degraded("lock keys may be evicted (allowed by allow_eviction)",
                       "maxmemory-policy " + caps.maxmemory_policy);
      }
    }
    wake_all();
    for (auto& q : std::exchange(parked, {})) attempt(q);
    notice_seq = p.notice.ok ? p.notice.seq : -1;
    check_leases({});
  }

  // Why no lease is granted on this server (empty: granting is fine).
  [[nodiscard]] std::string refusal() const {
    if (!caps.may_evict() || opts.allow_eviction) return {};
    return "the server may evict lock keys (maxmemory " + std::to_string(caps.maxmemory) +
           ", maxmemory-policy " + caps.maxmemory_policy +
           "): set maxmemory-policy noeviction, or opt in with allow_eviction";
  }

  // The force-release notice changed: a force_release (by any client, this one included) just
  // removed the holders of a resource. Read it again (which tracks it again) and check the local
  // leases on that resource, so that their holder learns of the loss about one round trip after
  // the removal instead of at its next renewal. If notices were missed in between (the sequence
  // moved by more than one) or it cannot be read, every lease is checked.
  void read_notice() {
    send(protocol::notice_read(notice_key, false), [w = weak()](Ec ec, const loop::Replies& r) {
      auto self = w.lock();
      if (!self || self->closed || is_transport(ec)) return;
      const protocol::Notice n = notice_of(r);
      const std::int64_t last = std::exchange(self->notice_seq, n.ok ? n.seq : -1);
      if (n.ok && last >= 0 && n.seq == last + 1 && !n.resource.empty()) {
        self->check_leases(n.resource);
      } else if (!n.ok || n.seq != last) {
        self->check_leases({});
      }
    });
  }

  [[nodiscard]] static protocol::Notice notice_of(const loop::Replies& r) {
    return r.size() == 0 ? protocol::Notice{} : protocol::parse_notice_read(r.back());
  }

  // Checks the held leases on `resource` (all of them if empty: after a reconnect, notices may
  // have been missed) and reports those that are gone from the server as lost.
  void check_leases(std::string_view resource) {
    std::vector<LeasePtr> held;
    for (auto& [k, wl] : leases) {
      auto d = wl.lock();
      if (d && d->state.load() == LeaseState::held &&
          (resource.empty() || d->resource == resource)) {
        held.push_back(std::move(d));
      }
    }
    for (const auto& d : held) check_lease(d);
  }

  // Is this lease still on the server? Reports it lost if not.
  void check_lease(const LeasePtr& d) {
    const bool track = watch_evictions();
    send(protocol::lease_check(d->kind, d->keys, d->owner, track),
         [wk = weak(), wd = std::weak_ptr<detail::LeaseData>(d), track](Ec ec,
                                                                        const loop::Replies& r) {
           auto self = wk.lock();
           auto dd = wd.lock();
           if (!self || !dd || self->closed || is_transport(ec)) return;
           if (protocol::parse_lease_check(dd->kind, r, track) == protocol::RenewCheck::not_held) {
             self->lose(dd, Errc::lost);
           }
         });
  }

  void wake_all() {
    std::vector<QueuePtr> qs;
    qs.reserve(queues.size());
    for (auto& [k, q] : queues) qs.push_back(q);
    for (auto& q : qs) wake(q);
  }

  void wake(const QueuePtr& q) {
    if (q->state != Queue::State::waiting && q->state != Queue::State::need_ready) return;
    attempt(q);
  }

  // ---- acquire -----------------------------------------------------------------------------

  void complete(const WaiterPtr& w, Ec ec, Lease lease = {}) {
    if (w->done) return;
    w->done = true;
    if (w->deadline_timer) w->deadline_timer->stop();
    if (w->settle_timer) w->settle_timer->stop();
    const Nanos took = loop.now() - w->start;
    if (auto* m = metrics()) {
      m->on_op(Op::acquire, w->req.kind, ec, took);
      if (w->waited) m->on_wait(took, !ec);
    }
    auto cb = std::move(w->cb);
    if (cb) cb(ec, std::move(lease));
  }

  // The error for a reply the protocol cannot use: the server's words (classified) when it
  // said something, else Errc::protocol. Sets last_error ("<resource>: <words>").
  Ec refused(const loop::Replies& r, std::string_view resource) {
    std::string words = protocol::server_words(r);
    if (words.empty()) {
      last_error = std::string(resource) + ": unexpected reply from the server";
      return Errc::protocol;
    }
    const bool transient = protocol::transient_server_error(words);
    last_error = std::string(resource) + ": " + std::move(words);
    return transient ? Errc::server_unavailable : Errc::server_refused;
  }

  // The wait of `w` ends with `why` (deadline, cancel). With a step in flight, the answer waits
  // for its outcome (bounded by settle_timeout), so that a late grant or a claim of ours is
  // withdrawn before the caller is told; otherwise there is nothing of ours on the server but
  // the queue entry, which advance() hands on.
  void give_up(const QueuePtr& q, const WaiterPtr& w, Ec why) {
    if (w->leaving()) return;
    const bool head = !q->waiters.empty() && q->waiters.front() == w;
    if (head && q->state == Queue::State::in_flight) {
      w->expired = true;
      w->give_up = why;
      start_settle(q, w, opts.settle_timeout);
      return;
    }
    if (why == Errc::timed_out && !w->waited && q->state == Queue::State::need_ready) {
      // Never saw the lock held: the server was not reachable (or did not answer the connect
      // probe) for the whole wait. Say that, not "timed out waiting for the lock".
      why = Errc::connection;
      last_error = w->req.resource + ": no usable connection to the server within the wait" +
                   (conn->last_error().empty() ? std::string() : " (" + conn->last_error() + ")");
    }
    complete(w, why);
    if (head) {
      advance(q);  // the head's wait ends: advance() stops its timers
    } else {
      std::erase(q->waiters, w);  // the head keeps waiting, backstop and all
    }
  }

  // After `after`, a waiter whose step is still unanswered is told outcome_unknown (with what
  // may be left behind); the step's reply, if it ever comes, is still handled (a late grant is
  // released, a claim withdrawn) while the client lives.
  void start_settle(const QueuePtr& q, const WaiterPtr& w, Nanos after) {
    if (!w->settle_timer) {
      w->settle_timer = loop.make_timer(
          [wk = weak(), ww = std::weak_ptr<Waiter>(w), wq = std::weak_ptr<Queue>(q)] {
            auto self = wk.lock();
            auto wt = ww.lock();
            auto qq = wq.lock();
            if (!self || !wt || !qq || self->closed || wt->done) return;
            const bool sent = qq->state == Queue::State::in_flight;
            self->last_error =
                sent ? wt->req.resource + ": no reply from the server within " +
                           std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                              self->opts.settle_timeout)
                                              .count()) +
                           " ms after the wait ended; a claim of '" + wt->req.owner +
                           "' may remain until its TTL (" + std::to_string(wt->ttl_ms) +
                           " ms) runs out"
                     : wt->req.resource + ": not connected";
            self->complete(wt, sent ? Ec(Errc::outcome_unknown) : Ec(Errc::connection));
            if (!sent) self->advance(qq);
          });
    }
    w->settle_timer->start(after);
  }

  // Answers a waiter whose wait ended while its step was in flight, now that no claim of ours
  // remains (`absent`), or may (then outcome_unknown, with what may be left).
  void settle(const WaiterPtr& w, bool absent) {
    if (absent) return complete(w, w->give_up);
    last_error = w->req.resource + ": the withdrawal of our claim got no reply; a claim of '" +
                 w->req.owner + "' may remain until its TTL (" + std::to_string(w->ttl_ms) +
                 " ms) runs out";
    complete(w, Errc::outcome_unknown);
  }

  // Removes whatever claim or grant of `w` may exist (HDEL of our own field — and our shared
  // companion — touches nothing of anyone else), then `then(absent)`: absent = the server
  // answered, so nothing of ours is left. Retried while the connection comes back, at most a
  // few times; the settle timer bounds how long the caller waits.
  void withdraw(const QueuePtr& q, const WaiterPtr& w, std::function<void(bool absent)> then,
                int tries = 4) {
    q->state = Queue::State::in_flight;
    loop::Request r = w->req.kind == Kind::exclusive
                          ? protocol::exclusive_release(w->keys, w->req.owner)
                          : protocol::shared_release(w->keys, w->req.owner);
    send(std::move(r), [wk = weak(), q, w, then = std::move(then), tries](
                           Ec ec, const loop::Replies&) mutable {
      auto self = wk.lock();
      if (!self || self->closed) return;
      if (is_transport(ec) && retryable(ec) && tries > 1 &&
          self->conn->state() != loop::ConnectionState::closed) {
        self->withdraw(q, w, std::move(then), tries - 1);
        return;
      }
      then(!is_transport(ec));
    });
  }

  // Drops finished waiters at the head; starts the next attempt or retires the queue.
  void advance(const QueuePtr& q) {
    while (!q->waiters.empty() && q->waiters.front()->done) q->waiters.pop_front();
    // Our queued waiter is done (granted, gave up, failed): hand its place on.
    if (!q->queued.empty() && (q->waiters.empty() || q->waiters.front()->req.owner != q->queued)) {
      leave_queue(q);
    }
    if (q->waiters.empty()) {
      q->state = Queue::State::idle;
      q->stop_timers();
      if (!q->one_shot) {
        auto it = queues.find(q->keys.holders);
        if (it != queues.end() && it->second == q) queues.erase(it);
      }
      return;
    }
    attempt(q);
  }

  void attempt(const QueuePtr& q) {
    while (!q->waiters.empty() && q->waiters.front()->done) q->waiters.pop_front();
    if (q->waiters.empty()) {
      advance(q);
      return;
    }
    if (closed) return;
    q->stop_timers();
    WaiterPtr w = q->waiters.front();
    if (w->expired) {  // nothing of ours is in flight here
      complete(w, w->give_up);
      advance(q);
      return;
    }
    if (!caps.probed) {
      // Not before the connect probe is answered: wake_all() (or `parked`) resumes us.
      q->state = Queue::State::need_ready;
      if (q->one_shot && std::find(parked.begin(), parked.end(), q) == parked.end()) {
        parked.push_back(q);
      }
      return;
    }
    if (std::string why = refusal(); !why.empty()) {
      last_error = w->req.resource + ": " + why;
      complete(w, Errc::unsafe_server);
      advance(q);
      return;
    }
    q->state = Queue::State::in_flight;
    const loop::MonoTime t_send = loop.now();
    if (w->req.kind == Kind::exclusive) {
      send(protocol::exclusive_acquire(w->keys, w->field, w->ttl_ms),
           [wk = weak(), q, w, t_send](Ec ec, const loop::Replies& r) {
             auto self = wk.lock();
             if (!self || self->closed) return;
             self->on_exclusive_reply(q, w, t_send, ec, r);
           });
    } else {
      watch(protocol::shared_watch(w->keys, w->req.owner),
            [wk = weak(), q, w, t_send](Ec ec, const loop::Replies& r, loop::WatchTxn txn) {
              auto self = wk.lock();
              if (!self || self->closed) return;
              self->on_shared_read(q, w, t_send, ec, r, std::move(txn));
            });
    }
  }

  // Transport failure of an acquire step. `maybe_applied` = the step may have left a claim.
  void on_attempt_transport(const QueuePtr& q, const WaiterPtr& w, Ec ec, bool maybe_applied) {
    if (maybe_applied) {
      // Never replay blindly: remove whatever claim of ours may exist, then start afresh with a
      // new token (or answer, if the wait is over or was one attempt).
      withdraw(q, w, [wk = weak(), q, w, ec](bool absent) {
        auto self = wk.lock();
        if (!self || self->closed) return;
        if (w->expired) {
          self->settle(w, absent);
        } else if (q->one_shot || !absent) {
          self->last_error =
              absent ? w->req.resource + ": the connection dropped during the attempt; no claim "
                                         "of ours is left"
                     : w->req.resource + ": " + self->conn->last_error();
          self->complete(w, absent ? Ec(Errc::outcome_unknown) : self->map(ec));
        }
        self->advance(q);
      });
      return;
    }
    if (!retryable(ec) || q->one_shot || w->expired) {
      if (w->expired) {
        complete(w, w->give_up);
      } else {
        complete(w, map(ec));
      }
      advance(q);
      return;
    }
    // Nothing applied: wait for the next `ready`, which wakes every queue.
    q->state = Queue::State::need_ready;
    if (conn->state() == loop::ConnectionState::ready) attempt(q);
    if (conn->state() == loop::ConnectionState::closed) {
      complete(w, map(ec));
      advance(q);
    }
  }

  // A transport error as the caller sees it, with the connection's words in last_error.
  Ec map(Ec ec) {
    const std::string& detail = conn->last_error();
    last_error = detail.empty() ? ec.message() : detail;
    return map_transport(ec);
  }

  // A step failed with an error reply or a malformed one. If it may have left a claim of ours
  // (any block that ran HSETNX/HSET, or that was to remove our claim), withdraw it first: no
  // claim outlives a failed block (an EXECABORT discards the block's HDEL along with the rest).
  void fail_step(const QueuePtr& q, const WaiterPtr& w, const loop::Replies& r, bool may_claim) {
    // The words are taken now: `r` is valid only during this call.
    const Ec ec = refused(r, w->req.resource);
    auto answer = [this, q, w, ec, words = last_error](bool absent) {
      if (absent) {
        last_error = words;
        complete(w, ec);
      } else {
        settle(w, false);
      }
      advance(q);
    };
    if (!may_claim) return answer(true);
    withdraw(q, w, [wk = weak(), answer = std::move(answer)](bool absent) {
      auto self = wk.lock();
      if (!self || self->closed) return;
      answer(absent);
    });
  }

  void on_exclusive_reply(const QueuePtr& q, const WaiterPtr& w, loop::MonoTime t_send, Ec ec,
                          const loop::Replies& r) {
    if (is_transport(ec) || r.size() == 0) {
      on_attempt_transport(q, w, ec ? ec : make_error_code(loop::Errc::protocol_error),
                           ec == loop::Errc::outcome_unknown);
      return;
    }
    const protocol::AcquireReply a = protocol::parse_exclusive_acquire(r.back());
    switch (a.outcome) {
      case protocol::Outcome::granted:
        grant(q, w, a.token, t_send);
        return;
      case protocol::Outcome::already_held:
        complete(w, Errc::already_held);
        advance(q);
        return;
      case protocol::Outcome::contended:
        if (auto* m = metrics()) m->on_contended(w->req.resource);
        if (w->ticket == 0) w->ticket = a.token;  // the queue keeps our first place
        if (w->leaving() || q->one_shot) {
          // Wait over or one attempt only: withdraw our claim, and answer once it is withdrawn,
          // so no claim of ours outlives the answer.
          withdraw(q, w, [wk = weak(), q, w](bool absent) {
            auto self = wk.lock();
            if (!self || self->closed) return;
            if (w->expired) {
              self->settle(w, absent);
            } else if (absent) {
              self->complete(w, Errc::timed_out);
            } else {
              self->settle(w, false);
            }
            self->advance(q);
          });
          return;
        }
        wait_read(q, w, true);
        return;
      case protocol::Outcome::aborted:
      case protocol::Outcome::bad_reply:
        // E.g. EXECABORT (NOPERM, OOM, READONLY at queue time: nothing ran) or an error inside
        // EXEC (the HSETNX may have run): withdraw, then answer with the server's words.
        fail_step(q, w, r, true);
        return;
    }
  }

  void on_shared_read(const QueuePtr& q, const WaiterPtr& w, loop::MonoTime t_send, Ec ec,
                      const loop::Replies& r, loop::WatchTxn txn) {
    if (is_transport(ec) || !txn.valid()) {
      // A WATCH and reads change nothing: safe to retry.
      on_attempt_transport(q, w, ec ? ec : make_error_code(loop::Errc::protocol_error), false);
      return;
    }
    const protocol::SharedRead read = protocol::parse_shared_watch(r);
    if (!read.ok) {
      txn.unwatch();
      fail_step(q, w, r, false);
      return;
    }
    const protocol::Decision d = protocol::decide_shared(w->req.owner, read);
    if (d == protocol::Decision::free && !w->leaving()) {
      exec(txn, metrics(), protocol::shared_grant(w->keys, w->req.owner, w->ttl_ms),
           [wk = weak(), q, w, t_send](Ec ec2, const loop::Replies& r2) {
             auto self = wk.lock();
             if (!self || self->closed) return;
             self->on_shared_grant(q, w, t_send, ec2, r2);
           });
      return;
    }
    txn.unwatch();
    if (d == protocol::Decision::already_held) {
      complete(w, Errc::already_held);
      advance(q);
      return;
    }
    if (w->leaving()) {  // wait over: nothing of ours was written
      if (w->expired) complete(w, w->give_up);
      advance(q);
      return;
    }
    if (auto* m = metrics()) m->on_contended(w->req.resource);
    if (q->one_shot) {
      complete(w, Errc::timed_out);
      advance(q);
      return;
    }
    wait_read(q, w, false);
  }

  void on_shared_grant(const QueuePtr& q, const WaiterPtr& w, loop::MonoTime t_send, Ec ec,
                       const loop::Replies& r) {
    if (is_transport(ec) || r.size() == 0) {
      on_attempt_transport(q, w, ec ? ec : make_error_code(loop::Errc::protocol_error),
                           ec == loop::Errc::outcome_unknown);
      return;
    }
    const protocol::AcquireReply a = protocol::parse_shared_grant(r.back());
    if (a.outcome == protocol::Outcome::granted) {
      grant(q, w, a.token, t_send);
    } else if (a.outcome == protocol::Outcome::aborted) {
      attempt(q);  // someone changed the keys between our read and EXEC: read again
    } else {
      fail_step(q, w, r, true);
    }
  }

  void on_wait_read(const QueuePtr& q, const WaiterPtr& w, Ec ec, const loop::Replies& r,
                    bool with_hdel, bool track) {
    if (is_transport(ec) || r.size() == 0) {
      // Our HDEL may or may not have run: resolve like any unknown acquire.
      on_attempt_transport(q, w, ec ? ec : make_error_code(loop::Errc::protocol_error),
                           with_hdel && ec == loop::Errc::outcome_unknown);
      return;
    }
    const bool exclusive = w->req.kind == Kind::exclusive;
    protocol::WaitRead wr =
        exclusive ? protocol::parse_exclusive_wait_read(r.back(), with_hdel, w->req.owner, track)
                  : protocol::parse_wait_read(r.back(), with_hdel, track);
    if (!wr.ok) {
      // Refused or malformed (EXECABORT for a NOPERM, an OOM...): the block's HDEL did not run,
      // or may not have. Withdraw our claim before answering.
      fail_step(q, w, r, with_hdel);
      return;
    }
    if (w->leaving()) {  // the block ran, HDEL included: nothing of ours is left but the queue
      if (w->expired) complete(w, w->give_up);
      advance(q);
      return;
    }
    if (exclusive) {
      q->rank = wr.rank;
      if (wr.first != q->suspect) q->suspect.clear();
      q->first = std::move(wr.first);
    }
    if (track && !wr.tracked && caps.push_wakeups) {
      // Caching refused inside the block although the probe accepted it: poll from now on.
      caps.push_wakeups = false;
      tracking_on = false;
      caps.tracking_error = protocol::server_words(r);
      if (auto* m = metrics()) {
        m->on_degraded("push wake-ups refused: waiters poll, force-release is seen at renewal",
                       caps.tracking_error);
      }
    }
    const protocol::Decision d = protocol::decide(w->req.kind, w->req.owner, wr.fields);
    switch (d) {
      case protocol::Decision::free:
        attempt(q);
        return;
      case protocol::Decision::already_held:
        complete(w, Errc::already_held);
        advance(q);
        return;
      case protocol::Decision::blocked:
        // Not elected: the elected waiter acts on the holder set; we wake when our doorbell
        // rings, or at its expiry (the backstop then reads our place again).
        wait(q, w, exclusive && !wr.elected() ? wr.doorbell_pttl : wr.pttl, wr.tracked);
        return;
      case protocol::Decision::blocked_by_shared_only:
        if (!wr.elected()) {
          wait(q, w, wr.doorbell_pttl, wr.tracked);
          return;
        }
        check_stale(q, w, wr);
        return;
    }
  }

  // Exclusive waiter blocked only by shared fields: remove fields whose companion lease is gone.
  void check_stale(const QueuePtr& q, const WaiterPtr& w, const protocol::WaitRead& wr) {
    std::vector<std::string> owners;
    for (const std::string& f : wr.fields) {
      Kind k{};
      std::string_view o;
      if (protocol::split_field(f, k, o) && k == Kind::shared) owners.emplace_back(o);
    }
    const std::int64_t pttl = wr.pttl;
    const bool tracked = wr.tracked;
    watch(protocol::stale_watch(w->keys, owners),
          [wk = weak(), q, w, owners, pttl, tracked](Ec ec, const loop::Replies& r,
                                                     loop::WatchTxn txn) {
            auto self = wk.lock();
            if (!self || self->closed) return;
            if (is_transport(ec) || !txn.valid()) {
              self->on_attempt_transport(
                  q, w, ec ? ec : make_error_code(loop::Errc::protocol_error), false);
              return;
            }
            if (w->leaving()) {
              txn.unwatch();
              if (w->expired) self->complete(w, w->give_up);
              self->advance(q);
              return;
            }
            const auto ttls = protocol::parse_stale_watch(r, owners.size());
            std::vector<std::string> stale;
            std::int64_t soonest = pttl;
            for (std::size_t i = 0; i < ttls.size(); ++i) {
              if (ttls[i] == -2) {
                stale.push_back(protocol::field(Kind::shared, owners[i]));
              } else if (ttls[i] > 0 && (soonest <= 0 || ttls[i] < soonest)) {
                soonest = ttls[i];
              }
            }
            if (stale.empty()) {
              txn.unwatch();
              // Companion expiry does not touch the holder set: the backstop is the soonest one.
              self->wait(q, w, soonest, tracked);
              return;
            }
            exec(txn, self->metrics(), protocol::stale_cleanup(w->keys, stale),
                 [wk2 = self->weak(), q](Ec, const loop::Replies&) {
                   auto s2 = wk2.lock();
                   if (!s2 || s2->closed) return;
                   s2->attempt(q);
                 });
          });
  }

  // Waits for a push (tracked) or, where the server gave us no tracking, polls: the backstop
  // then comes after a capped exponential backoff with jitter — never a tight loop.
  void wait(const QueuePtr& q, const WaiterPtr& w, std::int64_t pttl_ms, bool tracked) {
    w->waited = true;
    q->state = Queue::State::waiting;
    if (!q->backstop) {
      q->backstop = loop.make_timer([wk = weak(), wq = std::weak_ptr<Queue>(q)] {
        auto self = wk.lock();
        auto qq = wq.lock();
        if (!self || !qq || self->closed || qq->state != Queue::State::waiting) return;
        if (exclusive_head(*qq) && !qq->elected()) {
          self->recheck(qq);  // our doorbell expired (or its push was lost)
        } else {
          self->wake(qq);
        }
      });
    }
    // Backstop at the known expiry (+1 ms) of the holder set, or of the doorbell for a waiter
    // that is not elected: expiry pushes can lag active expiry. pttl -1 (no TTL) never
    // happens with this protocol; fall back to one second.
    Nanos delay =
        pttl_ms > 0 ? std::chrono::milliseconds(pttl_ms + 1) : Nanos(std::chrono::seconds(1));
    if (tracked) {
      w->polls = 0;
    } else {
      delay = std::min(delay, poll_delay(w->polls++));
    }
    q->backstop->start(delay);
  }

  // The n-th poll's delay: poll_initial * 2^n, at most poll_max, jittered to [d/2, d].
  [[nodiscard]] Nanos poll_delay(int n) {
    const Nanos cap = std::max(opts.poll_max, Nanos(std::chrono::milliseconds(1)));
    Nanos d = std::max(opts.poll_initial, Nanos(std::chrono::milliseconds(1)));
    for (int i = 0; i < n && d < cap; ++i) d *= 2;
    d = std::min(d, cap);
    const auto half = d.count() / 2;
    return Nanos(half + static_cast<std::int64_t>(loop.random() %
                                                  static_cast<std::uint64_t>(half + 1)));
  }

  void grant(const QueuePtr& q, const WaiterPtr& w, std::uint64_t token, loop::MonoTime t_send) {
    if (w->leaving()) {
      // Granted after the wait ended: release at once, never leave it behind; a caller still
      // waiting for the answer gets it once the release is confirmed.
      withdraw(q, w, [wk = weak(), q, w](bool absent) {
        auto self = wk.lock();
        if (!self || self->closed) return;
        if (w->expired) self->settle(w, absent);
        self->advance(q);
      });
      return;
    }
    auto d = std::make_shared<detail::LeaseData>();
    d->resource = w->req.resource;
    d->owner = w->req.owner;
    d->kind = w->req.kind;
    d->token = token;
    d->ttl = w->req.ttl;
    d->valid_until = t_send + w->req.ttl;
    d->keys = w->keys;
    d->registry_key = registry_key(w->keys.holders, w->req.owner);
    d->auto_renew = w->req.auto_renew;
    d->on_lost = std::move(w->req.on_lost);
    leases[d->registry_key] = d;
    arm_lease_timers(d);
    if (watch_evictions()) check_lease(d);  // tracks the holder set: evictions reach us
    complete(w, {}, Lease(d));
    // Shared grants let the next shared waiter go at once; an exclusive one will find it held.
    advance(q);
  }

  static std::string registry_key(const std::string& holders, const std::string& owner) {
    std::string k = holders;
    k.push_back('\0');
    k.append(owner);
    return k;
  }

  // ---- leases ------------------------------------------------------------------------------

  void arm_lease_timers(const LeasePtr& d) {
    std::weak_ptr<detail::LeaseData> wd = d;
    if (!d->expiry_timer) {
      d->expiry_timer = loop.make_timer([wk = weak(), wd] {
        auto self = wk.lock();
        auto dd = wd.lock();
        if (self && dd) self->lose(dd, Errc::lost);
      });
    }
    const Nanos left = d->valid_until - loop.now();
    d->expiry_timer->start(left > Nanos{0} ? left : Nanos{0});
    if (d->auto_renew) {
      if (!d->renew_timer) {
        d->renew_timer = loop.make_timer([wk = weak(), wd] {
          auto self = wk.lock();
          auto dd = wd.lock();
          if (self && dd) self->auto_renew(dd);
        });
      }
      const auto period = Nanos(static_cast<std::int64_t>(
          static_cast<double>(d->ttl.count()) * std::clamp(opts.renew_fraction, 0.05, 0.9)));
      d->renew_timer->start(std::max(period, Nanos(std::chrono::milliseconds(1))));
    }
  }

  void stop_lease_timers(const LeasePtr& d) noexcept {
    if (d->expiry_timer) d->expiry_timer->stop();
    if (d->renew_timer) d->renew_timer->stop();
  }
  // A lease handle may outlive the loop: its timers go as soon as it is no longer held.
  static void drop_lease_timers(const LeasePtr& d) noexcept {
    d->expiry_timer.reset();
    d->renew_timer.reset();
  }

  void forget(const LeasePtr& d) {
    auto it = leases.find(d->registry_key);
    if (it != leases.end()) {
      auto cur = it->second.lock();
      if (!cur || cur == d) leases.erase(it);
    }
  }

  // Tells the holder its lease is gone (once).
  void lose(const LeasePtr& d, Ec why) {
    LeaseState expected = LeaseState::held;
    if (!d->state.compare_exchange_strong(expected, LeaseState::lost)) return;
    drop_lease_timers(d);
    forget(d);
    if (auto* m = metrics()) m->on_lease_lost(d->resource, why);
    if (d->on_lost) d->on_lost(why);
  }

  void auto_renew(const LeasePtr& d) {
    if (d->state.load() != LeaseState::held || d->renew_in_flight) return;
    do_renew(d, [wk = weak(), wd = std::weak_ptr<detail::LeaseData>(d)](Ec ec) {
      auto self = wk.lock();
      auto dd = wd.lock();
      if (!self || !dd || self->closed || dd->state.load() != LeaseState::held) return;
      // Transient failure: try again at the next period; the expiry timer reports loss if no
      // renewal is confirmed in time.
      if (ec && dd->renew_timer) dd->renew_timer->start(std::max(dd->ttl / 10, Nanos(1'000'000)));
    });
  }

  void do_renew(const LeasePtr& d, std::function<void(Ec)> done) {
    d->renew_in_flight = true;
    const loop::MonoTime t_send = loop.now();
    watch(protocol::renew_watch(d->kind, d->keys, d->owner),
          [wk = weak(), d, t_send, done = std::move(done)](Ec ec, const loop::Replies& r,
                                                           loop::WatchTxn txn) mutable {
            auto self = wk.lock();
            if (!self || self->closed) return;
            if (is_transport(ec) || !txn.valid()) {
              d->renew_in_flight = false;
              self->finish_renew(d, self->map(ec ? ec : loop::Errc::protocol_error), t_send,
                                 done);
              return;
            }
            // Declared lost locally meanwhile (unconfirmed past its TTL): never resurrect it.
            if (d->state.load() != LeaseState::held || self->loop.now() >= d->valid_until) {
              txn.unwatch();
              d->renew_in_flight = false;
              self->lose(d, Errc::lost);
              self->finish_renew(d, Errc::not_held, t_send, done);
              return;
            }
            const protocol::RenewCheck c = protocol::parse_renew_watch(d->kind, r);
            if (c != protocol::RenewCheck::held) {
              txn.unwatch();
              d->renew_in_flight = false;
              if (c == protocol::RenewCheck::not_held) {
                self->lose(d, Errc::lost);
                self->finish_renew(d, Errc::not_held, t_send, done);
              } else {
                self->finish_renew(d, self->refused(r, d->resource), t_send, done);
              }
              return;
            }
            exec(txn, self->metrics(),
                 protocol::renew_exec(d->kind, d->keys, d->owner, ttl_millis(d->ttl)),
                 [wk, d, t_send, done = std::move(done)](Ec ec2, const loop::Replies& r2) mutable {
                   auto s = wk.lock();
                   if (!s || s->closed) return;
                   d->renew_in_flight = false;
                   if (is_transport(ec2) || r2.size() == 0) {
                     s->finish_renew(d, s->map(ec2 ? ec2 : loop::Errc::protocol_error),
                                     t_send, done);
                     return;
                   }
                   switch (protocol::parse_renew_exec(d->kind, r2.back())) {
                     case protocol::RenewResult::renewed:
                       if (d->state.load() == LeaseState::held) {
                         d->valid_until = t_send + d->ttl;
                         s->arm_lease_timers(d);
                       }
                       s->finish_renew(d, {}, t_send, done);
                       return;
                     case protocol::RenewResult::aborted:
                       // The holder set changed between read and EXEC (a contender's claim, or
                       // expiry): read again while the lease is still valid locally.
                       s->do_renew(d, std::move(done));
                       return;
                     case protocol::RenewResult::not_held:
                       s->lose(d, Errc::lost);
                       s->finish_renew(d, Errc::not_held, t_send, done);
                       return;
                     case protocol::RenewResult::bad_reply:
                       s->finish_renew(d, s->refused(r2, d->resource), t_send, done);
                       return;
                   }
                 });
          });
  }

  // Renews a lease held by `owner` that this client did not grant (a tool, another process):
  // the same WATCH/MULTI steps on a lease record of its own. `then_shared`: not held as
  // exclusive, try shared.
  void renew_owner(std::string resource, std::string owner, Kind kind, bool then_shared,
                   Nanos ttl, DoneHandler handler) {
    auto d = std::make_shared<detail::LeaseData>();
    d->keys = protocol::make_keys(opts.prefix, resource);
    d->resource = std::move(resource);
    d->owner = std::move(owner);
    d->kind = kind;
    d->ttl = ttl;
    d->valid_until = loop::MonoTime{Nanos::max()};  // whether it is still valid is the server's word
    do_renew(d, [wk = weak(), d, then_shared, h = std::move(handler)](Ec ec) mutable {
      auto self = wk.lock();
      if (!self || self->closed) return;
      Core::drop_lease_timers(d);
      if (ec == Errc::not_held && then_shared) {
        return self->renew_owner(d->resource, d->owner, Kind::shared, false, d->ttl,
                                 std::move(h));
      }
      if (h) h(ec);
    });
  }

  void finish_renew(const LeasePtr& d, Ec ec, loop::MonoTime t_send,
                    const std::function<void(Ec)>& done) {
    if (auto* m = metrics()) m->on_op(Op::renew, d->kind, ec, loop.now() - t_send);
    if (done) done(ec);
  }

  void shutdown() noexcept {
    if (closed) return;
    closed = true;
    std::vector<WaiterPtr> pending;
    for (auto& [k, q] : queues) {
      q->stop_timers();
      for (auto& w : q->waiters) pending.push_back(w);
    }
    for (auto& ww : one_shots) {
      if (auto w = ww.lock()) pending.push_back(std::move(w));
    }
    one_shots.clear();
    for (auto& [k, wl] : leases) {
      if (auto d = wl.lock()) {
        stop_lease_timers(d);
        d->expiry_timer.reset();
        d->renew_timer.reset();
      }
    }
    leases.clear();
    for (auto& w : pending) {
      if (w->done) continue;
      w->done = true;
      w->deadline_timer.reset();
      w->settle_timer.reset();
      auto cb = std::move(w->cb);
      try {
        if (cb) cb(Errc::closed, Lease{});
      } catch (...) {  // destructors never throw
      }
    }
    queues.clear();
    parked.clear();
    if (conn) {
      conn->remove_push_handler(push_id);
      conn->remove_state_handler(state_id);
      conn->close();
    }
  }
};

// --- Client ------------------------------------------------------------------------------------

Client::Client(loop::Loop& loop, loop::ConnectionOptions connection, ClientOptions options)
    : core_(std::make_shared<Core>(loop, std::move(options))) {
  // A lock request written on an abandoned connection must never be applied after the new
  // connection's (split-brain reconnect): kill the old one first (see ConnectionOptions).
  connection.fence_abandoned = core_->opts.fence_abandoned;
  core_->conn = std::make_unique<loop::Connection>(loop, std::move(connection));
  std::weak_ptr<Core> w = core_;
  core_->push_id = core_->conn->add_push_handler([w](resp::Frame f) {
    if (auto c = w.lock(); c && !c->closed) c->on_push(f);
  });
  core_->state_id = core_->conn->add_state_handler([w](loop::ConnectionState s, std::error_code) {
    if (auto c = w.lock(); c && !c->closed) c->on_state(s);
  });
}

Client::~Client() {
  core_->shutdown();
  // The connection goes with the core; its pending handlers see an expired weak_ptr.
}

void Client::start() {
  core_->conn->start();
}
void Client::close() noexcept {
  core_->shutdown();
}
loop::Connection& Client::connection() noexcept {
  return *core_->conn;
}
const ClientOptions& Client::options() const noexcept {
  return core_->opts;
}
const ServerCapabilities& Client::capabilities() const noexcept {
  return core_->caps;
}
const std::string& Client::last_error() const noexcept {
  return core_->last_error;
}

std::error_code Client::validate(const LockRequest& req, std::string* why) const {
  const Limits& lim = core_->opts.limits;
  if (auto ec = validate_prefix(core_->opts.prefix, lim, why)) return ec;
  if (auto ec = validate_name("resource", req.resource, lim.max_resource_bytes, why)) return ec;
  if (auto ec = validate_name("owner", req.owner, lim.max_owner_bytes, why)) return ec;
  if (auto ec = validate_ttl(req.ttl, lim, why)) return ec;
  if (auto ec = validate_wait(req.wait, lim, why)) return ec;
  return {};
}

void Client::lock(LockRequest req, AcquireHandler handler) {
  Core& c = *core_;
  auto fail = [&](Ec ec) {
    if (auto* m = c.metrics()) m->on_op(Op::acquire, req.kind, ec, Nanos{0});
    c.loop.post([h = std::move(handler), ec] {
      if (h) h(ec, Lease{});
    });
  };
  if (c.closed) return fail(Errc::closed);
  if (auto ec = validate(req)) return fail(ec);
  auto w = std::make_shared<Waiter>();
  w->keys = protocol::make_keys(c.opts.prefix, req.resource);
  if (auto it = c.leases.find(Core::registry_key(w->keys.holders, req.owner));
      it != c.leases.end()) {
    if (auto d = it->second.lock(); d && d->state.load() == LeaseState::held) {
      return fail(Errc::already_held);
    }
  }
  w->field = protocol::field(req.kind, req.owner);
  w->ttl_ms = ttl_millis(req.ttl);
  w->start = c.loop.now();
  w->deadline = w->start + req.wait;
  w->req = std::move(req);
  w->cb = std::move(handler);

  QueuePtr q;
  if (w->req.wait == Nanos{0}) {
    q = std::make_shared<Queue>();  // one attempt, independent of local waiters
    q->one_shot = true;
  } else {
    auto& slot = c.queues[w->keys.holders];
    if (!slot) {
      slot = std::make_shared<Queue>();
      slot->keys = w->keys;
    }
    q = slot;
    w->deadline_timer = c.loop.make_timer(
        [wk = c.weak(), ww = std::weak_ptr<Waiter>(w), wq = std::weak_ptr<Queue>(q)] {
          auto self = wk.lock();
          auto wt = ww.lock();
          auto qq = wq.lock();
          if (!self || !wt || !qq || self->closed || wt->done) return;
          self->give_up(qq, wt, Errc::timed_out);
        });
    w->deadline_timer->start(w->req.wait);
  }
  if (q->one_shot) {
    c.start_settle(q, w, c.opts.settle_timeout);  // one attempt, bounded
    if (c.one_shots.size() >= 64) {
      std::erase_if(c.one_shots, [](const std::weak_ptr<Waiter>& x) {
        auto p = x.lock();
        return !p || p->done;
      });
    }
    c.one_shots.push_back(w);
  }
  q->waiters.push_back(w);
  if (q->state == Queue::State::idle) c.attempt(q);
}

void Client::cancel(std::string_view resource, std::string_view owner) {
  Core& c = *core_;
  if (c.closed) return;
  auto it = c.queues.find(protocol::make_keys(c.opts.prefix, resource).holders);
  if (it == c.queues.end()) return;
  const QueuePtr q = it->second;
  std::vector<WaiterPtr> mine;
  for (const auto& w : q->waiters) {
    if (w->req.owner == owner) mine.push_back(w);
  }
  for (const auto& w : mine) c.give_up(q, w, Errc::cancelled);
}

// Reports an early outcome of release()/renew() from the loop, never inside the call itself.
static void post_done(loop::Loop& loop, Client::DoneHandler handler, Ec ec) {
  loop.post([h = std::move(handler), ec] {
    if (h) h(ec);
  });
}

void Client::release(const Lease& lease, DoneHandler handler) {
  Core& c = *core_;
  auto post = [&](Ec ec) { post_done(c.loop, std::move(handler), ec); };
  if (c.closed) return post(Errc::closed);
  if (!lease.valid()) return post(Errc::invalid_argument);
  LeasePtr d = lease.d_;
  if (d->state.load() == LeaseState::released) return post(Errc::not_held);
  c.stop_lease_timers(d);
  const loop::MonoTime t0 = c.loop.now();
  auto req = [d] {
    return d->kind == Kind::exclusive ? protocol::exclusive_release(d->keys, d->owner)
                                      : protocol::shared_release(d->keys, d->owner);
  };
  auto finish = [wk = c.weak(), d, t0](Ec ec, const DoneHandler& h) {
    auto self = wk.lock();
    if (!self) return;
    const bool was_held = d->state.load() == LeaseState::held;
    if (!ec) {
      d->state.store(LeaseState::released);
    } else if (ec == Errc::not_held) {
      // The caller is told directly; no on_lost callback for a lease it is giving up.
      LeaseState expected = LeaseState::held;
      d->state.compare_exchange_strong(expected, LeaseState::lost);
    } else if (was_held) {
      d->state.store(LeaseState::released);  // outcome unknown: it is gone or will expire
    }
    Core::drop_lease_timers(d);
    self->forget(d);
    if (auto* m = self->metrics()) m->on_op(Op::release, d->kind, ec, self->loop.now() - t0);
    if (h) h(ec);
  };
  c.send(req(), [wk = c.weak(), d, req, finish, h = std::move(handler)](
                    Ec ec, const loop::Replies& r) mutable {
    auto self = wk.lock();
    if (!self || self->closed) return;
    if (ec == loop::Errc::outcome_unknown) {
      // HDEL/DEL of our own names is idempotent: send it again once.
      self->send(req(), [wk, d, finish, h = std::move(h)](Ec ec2, const loop::Replies& r2) {
        auto s = wk.lock();
        if (!s || s->closed) return;
        if (is_transport(ec2) || r2.size() == 0) return finish(s->map(ec2), h);
        const auto res = protocol::parse_release(d->kind, r2);
        if (res == protocol::ReleaseResult::bad_reply) return finish(s->refused(r2, d->resource), h);
        finish(res == protocol::ReleaseResult::released ? Ec{} : Ec(Errc::outcome_unknown), h);
      });
      return;
    }
    if (is_transport(ec) || r.size() == 0) return finish(self->map(ec), h);
    switch (protocol::parse_release(d->kind, r)) {
      case protocol::ReleaseResult::released:
        return finish(d->state.load() == LeaseState::held ? Ec{} : Ec(Errc::not_held), h);
      case protocol::ReleaseResult::not_held:
        return finish(Errc::not_held, h);
      case protocol::ReleaseResult::bad_reply:
        return finish(self->refused(r, d->resource), h);
    }
  });
}

void Client::renew(const Lease& lease, DoneHandler handler) {
  Core& c = *core_;
  auto post = [&](Ec ec) { post_done(c.loop, std::move(handler), ec); };
  if (c.closed) return post(Errc::closed);
  if (!lease.valid()) return post(Errc::invalid_argument);
  if (lease.state() != LeaseState::held) return post(Errc::not_held);
  c.do_renew(lease.d_, std::move(handler));
}

void Client::release(std::string resource, std::string owner, std::optional<Kind> kind,
                     DoneHandler handler) {
  Core& c = *core_;
  std::string why;
  Ec ec = c.closed ? Ec(Errc::closed)
                   : validate_name("resource", resource, c.opts.limits.max_resource_bytes, &why);
  if (!ec) ec = validate_name("owner", owner, c.opts.limits.max_owner_bytes, &why);
  if (ec) {
    if (!why.empty()) c.last_error = why;
    return post_done(c.loop, std::move(handler), ec);
  }
  const auto keys = protocol::make_keys(c.opts.prefix, resource);
  const loop::MonoTime t0 = c.loop.now();
  // Both kinds when the kind is not known: pipelined, one round trip; an owner holds one kind.
  std::vector<Kind> kinds;
  if (!kind || *kind == Kind::exclusive) kinds.push_back(Kind::exclusive);
  if (!kind || *kind == Kind::shared) kinds.push_back(Kind::shared);
  struct Tally {
    std::size_t left = 0;
    bool released = false;
    Ec error;
    DoneHandler h;
  };
  auto tally = std::make_shared<Tally>();
  tally->left = kinds.size();
  tally->h = std::move(handler);
  for (Kind k : kinds) {
    c.send(k == Kind::exclusive ? protocol::exclusive_release(keys, owner)
                                : protocol::shared_release(keys, owner),
           [wk = c.weak(), k, tally, resource, t0](Ec ec2, const loop::Replies& r) {
             auto self = wk.lock();
             if (!self || self->closed) return;
             if (!tally->error) {
               if (is_transport(ec2) || r.size() == 0) {
                 tally->error = self->map(ec2);
               } else {
                 switch (protocol::parse_release(k, r)) {
                   case protocol::ReleaseResult::released:
                     tally->released = true;
                     break;
                   case protocol::ReleaseResult::not_held:
                     break;
                   case protocol::ReleaseResult::bad_reply:
                     tally->error = self->refused(r, resource);
                     break;
                 }
               }
             }
             if (--tally->left != 0) return;
             const Ec out = tally->released ? Ec{} : tally->error ? tally->error : Errc::not_held;
             if (auto* m = self->metrics()) {
               m->on_op(Op::release, k, out, self->loop.now() - t0);
             }
             if (tally->h) tally->h(out);
           });
  }
}

void Client::renew(std::string resource, std::string owner, std::optional<Kind> kind, Nanos ttl,
                   DoneHandler handler) {
  Core& c = *core_;
  std::string why;
  Ec ec = c.closed ? Ec(Errc::closed)
                   : validate_name("resource", resource, c.opts.limits.max_resource_bytes, &why);
  if (!ec) ec = validate_name("owner", owner, c.opts.limits.max_owner_bytes, &why);
  if (!ec) ec = validate_ttl(ttl, c.opts.limits, &why);
  if (ec) {
    if (!why.empty()) c.last_error = why;
    return post_done(c.loop, std::move(handler), ec);
  }
  c.renew_owner(std::move(resource), std::move(owner), kind.value_or(Kind::exclusive),
                !kind.has_value(), ttl, std::move(handler));
}

void Client::force_release(std::string resource,
                           std::function<void(std::error_code, std::size_t)> h) {
  Core& c = *core_;
  std::string why;
  Ec ec = c.closed ? Ec(Errc::closed)
                   : validate_name("resource", resource, c.opts.limits.max_resource_bytes, &why);
  if (ec) {
    c.loop.post([h = std::move(h), ec] {
      if (h) h(ec, 0);
    });
    return;
  }
  auto keys = protocol::make_keys(c.opts.prefix, resource);
  const loop::MonoTime t0 = c.loop.now();
  c.send(protocol::force_release(keys),
         [wk = c.weak(), keys, t0, h = std::move(h)](Ec ec2, const loop::Replies& r) mutable {
           auto self = wk.lock();
           if (!self || self->closed) return;
           std::vector<std::string> fields;
           Ec res;
           if (is_transport(ec2) || r.size() == 0) {
             res = self->map(ec2);
           } else if (!protocol::parse_force_release(r.back(), fields)) {
             res = self->refused(r, keys.holders);
           }
           if (auto* m = self->metrics()) {
             m->on_op(Op::force_release, Kind::exclusive, res, self->loop.now() - t0);
           }
           std::vector<std::string> owners;
           for (const auto& f : fields) {
             Kind k{};
             std::string_view o;
             if (protocol::split_field(f, k, o) && k == Kind::shared) owners.emplace_back(o);
           }
           if (!owners.empty()) {
             self->send(protocol::delete_companions(keys, owners), [](Ec, const loop::Replies&) {});
           }
           if (h) h(res, fields.size());
         });
  // The notice goes right behind the block (same write), in a block of its own: the notice key
  // lives outside the resource's hash slot.
  c.send(protocol::force_notice(c.notice_key, resource), [](Ec, const loop::Replies&) {});
}

void Client::inspect(std::string resource,
                     std::function<void(std::error_code, const LockInfo&)> h) {
  Core& c = *core_;
  std::string why;
  Ec ec = c.closed ? Ec(Errc::closed)
                   : validate_name("resource", resource, c.opts.limits.max_resource_bytes, &why);
  if (ec) {
    c.loop.post([h = std::move(h), ec] {
      if (h) h(ec, LockInfo{});
    });
    return;
  }
  auto keys = protocol::make_keys(c.opts.prefix, resource);
  c.send(protocol::inspect(keys),
         [wk = c.weak(), keys, h = std::move(h)](Ec ec2, const loop::Replies& r) mutable {
           auto self = wk.lock();
           if (!self || self->closed) return;
           if (is_transport(ec2) || r.size() == 0) return h(self->map(ec2), LockInfo{});
           protocol::InspectReply rep = protocol::parse_inspect(r.back());
           if (!rep.ok) return h(self->refused(r, keys.holders), LockInfo{});
           auto info = std::make_shared<LockInfo>();
           info->holders = std::move(rep.holders);
           info->last_token = rep.last_token;
           info->pttl_ms = rep.pttl;
           std::vector<std::string> owners;
           for (const auto& hd : info->holders) {
             if (hd.kind == Kind::shared) owners.push_back(hd.owner);
           }
           if (owners.empty()) return h({}, *info);
           self->send(protocol::companion_ttls(keys, owners),
                      [wk, info, h = std::move(h)](Ec ec3, const loop::Replies& r3) {
                        auto s = wk.lock();
                        if (!s || s->closed) return;
                        if (is_transport(ec3)) return h(s->map(ec3), LockInfo{});
                        std::size_t i = 0;
                        for (auto& hd : info->holders) {
                          if (hd.kind != Kind::shared) continue;
                          if (i < r3.size()) {
                            const resp::Frame f = r3[i];
                            if (!f.empty()) {
                              if (auto v = resp::to_int64(f[resp::value_index(f)])) hd.ttl_ms = *v;
                            }
                          }
                          ++i;
                        }
                        h({}, *info);
                      });
         });
}

}  // namespace lockwire::lock
