// Connection events of the lock client: the connect probe (what the server allows), tracking
// pushes (holder sets, doorbells, the force-release notice) and lease checks.
#include <algorithm>

#include "core.hpp"
#include "shard_link.hpp"
#include "lockwire/resp/reply.hpp"

namespace lockwire::lock {

// ---- connection events -------------------------------------------------------------------
void Client::Core::on_push(resp::Frame push) {
  scratch_keys.clear();
  bool all = false;
  if (!protocol::parse_invalidate(push, scratch_keys, all)) return;
  if (all) {  // FLUSHALL/FLUSHDB: everything may be gone
    forget_raises();  // the fence counters too: the next blocks raise them to the floor again
    wake_all();
    read_notice();
    return;
  }
  for (const std::string& k : scratch_keys) {
    if (on_key_changed(k)) continue;
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

bool Client::Core::on_key_changed(const std::string& k) {
  if (!upgrades.empty()) {
    const std::vector<QueuePtr> ups = upgrades;  // a wake can end one
    for (const auto& uq : ups) {
      if (uq->keys.holders == k) on_holders_changed(uq);
    }
  }
  if (auto it = queues.find(k); it != queues.end()) {
    on_holders_changed(it->second);
    return true;
  }
  return false;
}

void Client::Core::check_holders_of(std::string_view holders_key) {
  std::vector<LeasePtr> held;
  for (auto& [k, wl] : leases) {
    auto d = wl.lock();
    if (d && d->state.load() == LeaseState::held && d->keys.holders == holders_key) {
      held.push_back(std::move(d));
    }
  }
  for (const auto& d : held) check_lease(d);
}

// The holder set changed (release, expiry, claim, renew): the machine decides for its waiter
// (docs/protocol.md, *Waiting*: the elected or a shared waiter attempts, the backup starts its
// grace, the others wait for their doorbell); an upgrade reads again.
void Client::Core::on_holders_changed(const QueuePtr& q) {
  if (driven_head(*q) != nullptr) {
    return drive(q, q->waiters.front(), event(MachineEvent::Kind::holders_push));
  }
  if (q->state != Queue::State::waiting) return;
  wake(q);
}

// Our doorbell rang (the waiter ahead of us left the queue) or expired: read our place again.
void Client::Core::on_doorbell(const QueuePtr& q, std::string_view owner) {
  Waiter* h = driven_head(*q);
  if (h == nullptr || h->req.owner != owner) return;  // an upgrade rings no doorbell
  drive(q, q->waiters.front(), event(MachineEvent::Kind::doorbell_push));
}

namespace {
// An error reply among `r`: what the connection's server_error says of a whole request (the
// same test, resp::is_error of each frame), for a part of one.
bool any_error(const loop::Replies& r) {
  for (std::size_t i = 0; i < r.size(); ++i) {
    if (resp::is_error(r[i])) return true;
  }
  return false;
}
}  // namespace

// Leaves the server's wait queue and rings the doorbells of the two waiters now first (the
// elected one and its backup). Off the hand-off's critical path: it runs while our grant is
// held or after we gave up. A doorbell that is gone means its waiter is too: drop it and ring
// the next ones.
void Client::Core::leave_queue(const QueuePtr& q) {
  // First at the last read: the waiters behind us then are the ones our leave should find
  // first, and their doorbells go out with it (one request per hand-on, not two).
  // (`behind` is only ever filled by a read that found us first.)
  std::vector<std::string> expected = std::exchange(q->behind, {});
  // With the parked hand-off the ring waits for the leave's reply (two requests per hand-on):
  // rung a round trip earlier, the next first parks while the rejoining contenders' claims
  // still move the holder set, their pushes run its grace out (kParkedPushGrace) near the next
  // release, and the hand-off is slower. bench_lock's parked rows, 5 in-process alternations:
  // CLIENT UNBLOCKs 168 -> 78 per run, p50 -20% at 8 and at 64 waiters, +0.5 requests per
  // hand-off (docs/handoff-one-rtt.md). The simulator's links do not show it.
  if (parks()) expected.clear();
  q->rank = -1;
  if (q->queued.empty()) return;
  std::vector<std::string> leaving{std::exchange(q->queued, {})};
  if (!q->suspect.empty() && q->suspect != leaving.front()) leaving.push_back(q->suspect);
  std::erase_if(expected, [&](const std::string& o) {
    return std::find(leaving.begin(), leaving.end(), o) != leaving.end();
  });
  q->suspect.clear();
  // Kept for the queue's TTL: a failover can bring the entry back (replayed_leaves).
  const loop::MonoTime now = loop.now();
  std::erase_if(recent_leaves, [&](const RecentLeave& l) {
    return now - l.at > std::chrono::milliseconds(protocol::kQueueTtlMs);
  });
  if (recent_leaves.size() < kMaxRecentLeaves) recent_leaves.push_back({q->keys, leaving, now});
  hand_on(q, std::move(leaving), kMaxRings, false, std::move(expected));
}

// On a new primary the wait-queue entries this client removed may be back (the removals went
// to the old primary after the promotion, or were not replicated): two such entries ahead of
// a waiter keep it from being woken until their doorbells expire (found by the failover swarm,
// seed 2001214). Remove them again — ZREM of our own entries only — and ring the waiters that
// are first now.
void Client::Core::replay_leaves() {
  const loop::MonoTime now = loop.now();
  for (const RecentLeave& l : recent_leaves) {
    if (now - l.at > std::chrono::milliseconds(protocol::kQueueTtlMs)) continue;
    auto q = std::make_shared<Queue>();
    q->keys = l.keys;
    hand_on(q, l.owners, kMaxRings);
  }
}

// Sends the leave again after 250 ms, doubling with each try (at most 2 s): within the
// budget's tries, about 10 s.
void Client::Core::leave_later(const QueuePtr& q, std::vector<std::string> leaving, int budget) {
  const int tried = kMaxRings - budget;
  const Nanos delay = std::min<Nanos>(std::chrono::milliseconds(250) * (1 << std::min(tried, 3)),
                                      std::chrono::seconds(2));
  std::erase_if(leave_timers, [](const std::unique_ptr<loop::Timer>& t) { return !t->active(); });
  auto& t = leave_timers.emplace_back();
  t = loop.make_timer([wk = weak(), q, leaving = std::move(leaving), budget] {
    auto self = wk.lock();
    if (self && !self->closed) self->hand_on(q, leaving, budget, true);
  });
  t->start(delay);
}

void Client::Core::hand_on(const QueuePtr& q, std::vector<std::string> leaving, int budget,
                           bool plain, std::vector<std::string> expected) {
  if (plain) expected.clear();
  auto req = plain ? protocol::leave_queue_plain(q->keys, leaving)
                   : protocol::leave_queue(q->keys, leaving, expected);
  send(std::move(req), [wk = weak(), q, leaving, budget, plain,
                        expected = std::move(expected)](Ec ec, const loop::Replies& all) {
    auto self = wk.lock();
    std::vector<std::string> first;
    if (!self || self->closed) return;
    if (is_transport(ec)) {
      // ZREM is idempotent: send it again, so that no entry of ours is left for others
      // to ring in vain.
      if (retryable(ec) && budget > 1) self->hand_on(q, leaving, budget - 1, plain);
      return;
    }
    if (all.size() == 0) return;
    // The leave's own replies, then the expected doorbells' (when all came).
    const bool rang = !expected.empty() && all.size() == protocol::kLeaveReplies + expected.size();
    const loop::Replies r = rang ? all.first(protocol::kLeaveReplies) : all;
    if (ec && self->link && budget > 1) {
      // Refused with MOVED: nothing ran here, and the entries are on the slot's new owner
      // (cluster swarm, seeds 3006614, 3011685: leaves lost after a migration left two stale
      // entries ahead of a waiter, which then slept until its deadline while the lock was free).
      for (std::size_t i = 0; i < r.size(); ++i) {
        const std::size_t v = resp::value_index(r[i]);
        if (v >= r[i].size() || !resp::is_error(r[i][v])) continue;
        const auto moved = loop::cluster::parse_redirect(r[i][v].value);
        if (!moved || moved->kind != loop::cluster::Redirect::Kind::moved) continue;
        return self->link->leave_moved(*moved, q->keys, leaving, budget - 1);
      }
    }
    // The block's own replies carry the error, if any (a ring's refusal is the ring's); with
    // expected doorbells, a reply count short of the request's is read as a refusal too.
    const bool refused = rang ? any_error(r) : !expected.empty() || bool(ec);
    if (!plain && (refused || !protocol::parse_leave_queue(r.back(), first))) {
      // The server refused the block (EXECABORT: a full server refuses every command queued in
      // MULTI): leave without it. An entry left behind stays for the queue's TTL, and two of
      // them ahead of a waiter keep it from being elected or backup, so that it waits for its
      // doorbell to expire (found by the race explorer, docs/races.md).
      if (budget > 1) self->hand_on(q, leaving, budget - 1, true);
      return;
    }
    if (plain && (r.size() != 2 || !protocol::parse_queue_head(r[1], first))) {
      // Refused for now (CLUSTERDOWN on a primary that has just rejoined, TRYAGAIN, LOADING):
      // tried again later, for a few seconds. An entry left behind keeps the waiters behind it
      // from being elected until their doorbells expire (partition swarm, seed 5003656: two
      // leaves refused with CLUSTERDOWN left two stale entries ahead of a waiter that then
      // timed out while the lock was free).
      if (budget > 1 && protocol::transient_server_error(protocol::server_words(r))) {
        self->leave_later(q, std::move(leaving), budget - 1);
      }
      return;
    }
    // The expected doorbells rang with the leave; a gone one is dropped (its hand-on rings
    // the waiters first then), and the waiters found first that did not ring now ring.
    std::vector<std::string> gone, unrung;
    for (std::size_t i = 0; rang && i < expected.size(); ++i) {
      if (protocol::parse_ring(all[protocol::kLeaveReplies + i]) == protocol::Ring::gone) {
        gone.push_back(expected[i]);
      }
    }
    for (std::string& o : first) {
      if (std::find(expected.begin(), expected.end(), o) == expected.end() || !rang) {
        unrung.push_back(std::move(o));
      }
    }
    if (!gone.empty()) {
      if (budget > 1) self->hand_on(q, std::move(gone), budget - 1);
      return;
    }
    if (!unrung.empty()) self->ring_first(q, std::move(unrung), budget);
  });
}

void Client::Core::ring_first(const QueuePtr& q, std::vector<std::string> first, int budget) {
  send(protocol::ring(q->keys, first), [wk = weak(), q, first, budget](Ec, const loop::Replies& r2) {
    auto s2 = wk.lock();
    if (!s2 || s2->closed || r2.size() != first.size() || budget <= 1) return;
    std::vector<std::string> gone;
    for (std::size_t i = 0; i < first.size(); ++i) {
      if (protocol::parse_ring(r2[i]) == protocol::Ring::gone) gone.push_back(first[i]);
    }
    if (!gone.empty()) s2->hand_on(q, std::move(gone), budget - 1);
  });
}

void Client::Core::on_state(loop::ConnectionState s) {
  if (s != loop::ConnectionState::ready) {
    caps.probed = false;
  }
  if (conn->moves() != seen_moves) {
    seen_moves = conn->moves();
    if (!regressions.no_reconfirm) suspend_leases();
  }
  if (s != loop::ConnectionState::ready || closed) return;
  if (control_only) return;  // a cluster's first connection, kept for Client::connection()
  if (may_be_cluster && conn->server_mode() == "cluster") {
    control_only = true;  // the Client's own state handler, next, enters cluster mode
    return;
  }
  if (seed_list) {
    // Several independent servers would each grant the same lock: a seed list is for a Cluster.
    last_error = "the URL lists several hosts, but " + conn->server_address() +
                 " is not a Redis Cluster node (HELLO mode '" + conn->server_mode() +
                 "'): a lock must live on one primary";
    return shutdown();
  }
  // Tracking is connection state: re-enable it after every (re)connect, together with the
  // tracked read of the force-release notice, and learn what the server lets us do (a refusal
  // is an answer); then let every waiter re-check and every holder check its lease (pushes
  // may have been missed while disconnected). No attempt is sent before this is answered.
  const loop::MonoTime sent = loop.now();  // its TIME is read no earlier than this
  send(protocol::connect_probe(notice_key),
       guard([sent](Core* self, Ec ec, const loop::Replies& rr) {
         if (is_transport(ec)) return;  // the connection went again; the next `ready` re-probes
         self->on_probe(protocol::parse_connect_probe(rr), sent);
       }));
}

void Client::Core::on_probe(const protocol::ConnectProbe& p, loop::MonoTime sent) {
  if (link) link->probed(*this);
  const bool had_wakeups = caps.push_wakeups || !caps.probed;
  caps = ServerCapabilities{};
  caps.probed = true;
  caps.push_wakeups = (p.ok && p.push_wakeups) || regressions.ignore_refused_tracking;
  caps.tracking_error = p.ok ? p.tracking_error : "malformed reply to the connect probe";
  caps.memory_known = p.memory_known;
  caps.maxmemory = p.maxmemory;
  caps.maxmemory_policy = p.maxmemory_policy;
  caps.info_error = p.info_error;
  caps.clock_known = p.clock_known;
  caps.clock_error = p.ok ? p.clock_error : "malformed reply to the connect probe";
  caps.unsupported =
      protocol::unsupported_server(p, conn->server_software(), conn->server_address());
  server_us = p.server_us;
  floor_read_at = sent;
  floor_asked_at = sent;
  ++probes;  // a new connection: a new floor, and counters it has not raised yet
  forget_raises();
  if (auto* m = metrics()) {
    if (!caps.push_wakeups && had_wakeups) {
      m->on_degraded("push wake-ups refused: waiters poll, force-release is seen at renewal",
                     caps.tracking_error);
    }
    if (!caps.clock_known) {
      m->on_degraded("TIME refused: fencing tokens come from the counter alone and can repeat "
                     "after a failover or restart that loses it",
                     caps.clock_error);
    }
    if (!caps.memory_known) {
      m->on_degraded("INFO memory refused: the eviction policy is unknown", caps.info_error);
    } else if (caps.may_evict() && opts.allow_eviction) {
      m->on_degraded("lock keys may be evicted (allowed by allow_eviction)",
                     "maxmemory-policy " + caps.maxmemory_policy);
    }
    // Asked for, and not there: told rather than gone without (no server words: the
    // combination is the reason).
    if (opts.parked_handoff && link) {
      m->on_degraded("parked hand-off off on a Cluster (not built for one yet): waiters wait "
                     "for pushes",
                     "");
    } else if (opts.parked_handoff && !opts.min_replicas.is_none()) {
      m->on_degraded("parked hand-off off with min_replicas (WAIT on this connection would not "
                     "cover a grant made on a parking connection): waiters wait for pushes",
                     "");
    }
  }
  // Parked blocks were sent beside the old connection: they count for nothing now (their
  // replies are withdrawn, on_parked_reply), so parking connections elsewhere go.
  for (auto& pk : parkers) {
    if (pk->conn->server_address() != conn->server_address()) pk->conn->close();
  }
  // One parking connection made ready ahead of the first wait (parked hand-off), so that the
  // first elected waiter need not wait for its handshake.
  if (parks() && parkers.empty() && caps.push_wakeups) (void)take_parker();
  wake_all();
  for (auto& q : std::exchange(parked, {})) attempt(q);
  notice_seq = p.notice.ok ? p.notice.seq : -1;
  // On a new primary (a failover, or the address now names another server) a lease is trusted
  // only once renewed there: the renewals it had may not have reached it (asynchronous
  // replication, or written to the old primary after the promotion).
  const std::uint64_t epoch = conn->primary_epoch();
  const bool moved = primary_epoch != 0 && epoch != primary_epoch;
  primary_epoch = epoch;
  if (moved && regressions.drop_on_move) {
    lose_all_held();
  } else if (moved && !regressions.no_reconfirm) {
    suspend_leases();
    // Re-confirmed only once the sentinels vouch for the new primary (on_vouch): before, what
    // it confirms may itself be about to be replaced.
    if (vouched()) {
      reconfirm_leases();
    } else {
      reconfirm_pending = true;
    }
    replay_leaves();
  } else {
    check_leases({});
  }
}

// The server's own clock at this connection's probe: never ahead of the server (no client
// clock is involved: a client clock that steps or runs fast cannot push tokens ahead of the
// server's time, found by the failover swarm with monotonic steps), and fresh after every event
// that can lose the counter, since each of them (restart, failover) means a new connection.
std::uint64_t Client::Core::fence_floor() const noexcept {
  if (!caps.clock_known || regressions.counter_tokens) return 0;
  // Not extrapolated with our own clock: a floor read ahead of the server's (a client clock
  // that steps, even capped at 1 s) let an unreplicated grant on the old primary outrun the
  // first grants on the promoted replica (failover swarm, seeds 2000741, 2014800). Room is left
  // above it for the counter's increments before the doubles stop being exact.
  return std::min(server_us, protocol::kMaxToken / 2);
}

std::int64_t Client::Core::fence_ttl_ms() const noexcept {
  // Tokens from the counter alone must keep it for ever: an expired counter would restart at 1.
  if (!caps.clock_known || regressions.counter_tokens) return 0;
  return std::chrono::duration_cast<std::chrono::milliseconds>(opts.fence_ttl).count();
}

// Without fencing tokens a loser's ticket in P{R}:q is no burnt token but the server's clock
// as we reckon it (its TIME at the last read, plus our time since): arrival order, roughly,
// across clients. The queue is a wake-up hint, so a rough order costs fairness, never safety.
std::uint64_t Client::Core::queue_ticket() const noexcept {
  const auto since = std::chrono::duration_cast<std::chrono::microseconds>(loop.now() - floor_read_at);
  return server_us + static_cast<std::uint64_t>(std::max<std::int64_t>(since.count(), 0)) + 1;
}

// A block without a token (ClientOptions::fencing_tokens): no floor, nothing for stale_grant.
std::uint64_t Client::Core::no_floor(Waiter& w) {
  w.sent_floor = 0;
  w.sent_fence_ttl_ms = 0;
  return 0;
}

std::uint64_t Client::Core::floor_for(Waiter& w) {
  w.sent_floor = fence_floor();
  w.sent_floor_read_at = floor_read_at;
  w.sent_fence_ttl_ms = fence_ttl_ms();
  w.sent_raised_at.reset();
  return w.sent_floor;
}

// docs/protocol.md, "Fencing tokens", the fence key's expiry: a token is safe to hand over when
// it is above the floor its block carried and that floor is younger than the fence TTL on the
// server's clock; the reply being read now, the block ran no later than now.
Client::Core::Staleness Client::Core::stale_grant(const Waiter& w, std::uint64_t token) const {
  if (w.sent_fence_ttl_ms <= 0 || regressions.stale_floor) return Staleness::fresh;
  if (token <= w.sent_floor) return Staleness::below_floor;
  // Time since `then` on the server's clock, at most: it may run up to 1% faster than ours (as
  // ClusterVouch::kRateDrift).
  const loop::MonoTime now = loop.now();
  const auto server_since = [now](loop::MonoTime then) {
    const Nanos d = now - then;
    return d + d / 100;
  };
  const std::chrono::milliseconds fence_ttl(w.sent_fence_ttl_ms);
  if (server_since(w.sent_floor_read_at) >= fence_ttl) return Staleness::floor_too_old;
  // No PEXPIRE in the block: the key's life is the one the raising block gave it.
  if (w.sent_raised_at && server_since(*w.sent_raised_at) >= fence_ttl / 3) {
    return Staleness::unrefreshed;
  }
  return Staleness::fresh;
}

void Client::Core::refresh_floor(std::function<void()> then) {
  const std::uint64_t probe = probes;
  const loop::MonoTime sent = loop.now();
  floor_asked_at = sent;  // a refusal is not asked again at once (no loop of TIME requests)
  send(protocol::time_request(),
       guard([probe, sent, then = std::move(then)](Core* self, Ec ec, const loop::Replies& r) {
         // Only a reading of the connection whose floor it replaces (a new one has its own).
         if (!is_transport(ec) && r.size() == 1 && self->probes == probe) {
           if (const auto us = protocol::parse_time(r[0])) {
             self->server_us = *us;
             self->floor_read_at = sent;
             // The counters were raised to the old floor: the next blocks raise them to this one
             // (a block without the ZADD GT would get a token below it and be taken again).
             self->forget_raises();
           }
         }
         if (then) then();
       }),
       this_stream_only());
}

bool Client::Core::floor_aging(loop::MonoTime now) const {
  const std::int64_t ms = fence_ttl_ms();
  if (ms <= 0 || regressions.stale_floor) return false;
  return now - floor_asked_at >= std::chrono::milliseconds(ms) / 3;
}

void Client::Core::suspend_leases() {
  const loop::MonoTime now = loop.now();
  for (auto& [k, wl] : leases) {
    auto d = wl.lock();
    if (!d || d->state.load() != LeaseState::held || d->suspended) continue;
    d->suspended = true;
    d->valid_until = std::min(d->valid_until, now);
  }
}

void Client::Core::lose_all_held() {
  std::vector<LeasePtr> held;
  for (auto& [k, wl] : leases) {
    auto d = wl.lock();
    if (d && d->state.load() == LeaseState::held) held.push_back(std::move(d));
  }
  for (const auto& d : held) lose(d, Errc::lost);
}

void Client::Core::reconfirm_leases() {
  std::vector<LeasePtr> held;
  for (auto& [k, wl] : leases) {
    auto d = wl.lock();
    if (d && d->state.load() == LeaseState::held) held.push_back(std::move(d));
  }
  for (const auto& d : held) {
    if (d->renew_in_flight) {
      // Its renewal was written to the old primary: its outcome is unknown there and says
      // nothing here. Check the lease on the new one instead (lost if gone); the renewal's own
      // retry renews it.
      check_lease(d);
      continue;
    }
    // Not held there: lost. A transient error: auto-renew retries, the expiry timer decides.
    do_renew(d, [](Ec) {}, true);
  }
}

// Why no lease is granted on this server (empty: granting is fine).
std::string Client::Core::refusal() const {
  if (!caps.unsupported.empty()) return caps.unsupported;  // too old: nothing can be granted
  if (!caps.may_evict() || opts.allow_eviction || regressions.ignore_eviction_policy) {
    return {};
  }
  return "the server may evict lock keys (maxmemory " + std::to_string(caps.maxmemory) +
         ", maxmemory-policy " + caps.maxmemory_policy +
         "): set maxmemory-policy noeviction, or opt in with allow_eviction";
}

// The force-release notice changed: a force_release (by any client, this one included) just
// removed the holders of a resource. Read it again (which tracks it again) and check the local
// leases on that resource, so that their holder learns of the loss about one round trip after
// the removal instead of at its next renewal. If notices were missed in between (the sequence
// moved by more than one) or it cannot be read, every lease is checked.
void Client::Core::read_notice() {
  send(protocol::notice_read(notice_key), [w = weak()](Ec ec, const loop::Replies& r) {
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

// Checks the held leases on `resource` (all of them if empty: after a reconnect, notices may
// have been missed) and reports those that are gone from the server as lost.
void Client::Core::check_leases(std::string_view resource) {
  std::vector<LeasePtr> held;
  for (auto& [k, wl] : leases) {
    auto d = wl.lock();
    if (d && d->state.load() == LeaseState::held && (resource.empty() || d->resource == resource)) {
      held.push_back(std::move(d));
    }
  }
  for (const auto& d : held) check_lease(d);
}

// Is this lease still on the server? Reports it lost if not.
void Client::Core::check_lease(const LeasePtr& d) {
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

void Client::Core::wake_all() {
  std::vector<QueuePtr> qs;
  qs.reserve(queues.size() + upgrades.size());
  for (auto& [k, q] : queues) qs.push_back(q);
  qs.insert(qs.end(), upgrades.begin(), upgrades.end());
  for (auto& q : qs) wake(q);
}

void Client::Core::wake(const QueuePtr& q) {
  if (driven_head(*q) != nullptr) {
    return drive(q, q->waiters.front(), event(MachineEvent::Kind::wake));
  }
  if (q->state != Queue::State::waiting && q->state != Queue::State::need_ready) return;
  attempt(q);
}

}  // namespace lockwire::lock
