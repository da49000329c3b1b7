// Upgrade: the sole shared lease of an owner becomes an exclusive one in place, with a new
// fencing token, never letting a writer in between (docs/protocol.md, "Upgrade"). While other
// readers hold the resource the upgrade waits like a writer, its intent declared in P{R}:u so
// that a second reader asking for the same is refused at once instead of both waiting for the
// other to leave.
#include "core.hpp"

namespace lockwire::lock {

namespace {
constexpr std::int64_t kIntentMaxMs = protocol::kDoorbellMaxMs;  // re-armed at every round
}

LeasePtr Client::Core::shared_lease_of(const protocol::Keys& keys,
                                                     std::string_view owner) {
  auto it = leases.find(registry_key(keys.holders, std::string(owner)));
  if (it == leases.end()) return nullptr;
  auto d = it->second.lock();
  if (!d || d->kind != Kind::shared || d->state.load() != LeaseState::held) return nullptr;
  return d;
}

void Client::Core::upgrade(LockRequest req, AcquireHandler handler) {
  auto fail = [&](Ec ec) {
    if (auto* m = metrics()) m->on_op(Op::acquire, Kind::exclusive, req.resource, ec, Nanos{0});
    loop.post([h = std::move(handler), ec] {
      if (h) h(ec, Lease{});
    });
  };
  if (closed) return fail(Errc::closed);
  req.kind = Kind::exclusive;
  req.permits = 0;  // the exclusive lease it becomes (a semaphore's holder may upgrade too)
  if (auto ec = validate(req, &last_error)) return fail(ec);  // why: Client::last_error
  auto w = std::make_shared<Waiter>();
  w->upgrade = true;
  w->keys = protocol::make_keys(opts.prefix, req.resource);
  for (const auto& uq : upgrades) {
    for (const auto& o : uq->waiters) {
      if (!o->done && o->keys.holders == w->keys.holders && o->req.owner == req.owner) {
        return fail(Errc::already_held);  // this owner's upgrade is already under way
      }
    }
  }
  w->field = protocol::field(Kind::exclusive, req.owner);
  w->ttl_ms = ttl_millis(req.ttl);
  w->start = loop.now();
  w->deadline = w->start + req.wait;
  w->req = std::move(req);
  w->cb = std::move(handler);
  QueuePtr q = fresh_queue();  // a queue of its own, as lock() makes one (pooled)
  q->keys = w->keys;
  q->one_shot = w->req.wait == Nanos{0};
  if (q->one_shot) {
    start_settle(q, w, opts.settle_timeout);
  } else {
    arm_deadline(q, w);
  }
  if (regressions.upgrade_by_release) {
    // The bug: a window between the two in which a writer can be granted.
    auto s = shared_lease_of(w->keys, w->req.owner);
    LockRequest again = std::move(w->req);
    auto cb = std::move(w->cb);
    auto relock = [wk = weak(), again = std::move(again), cb = std::move(cb)](Ec) mutable {
      if (auto self = wk.lock(); self && !self->closed) self->lock(std::move(again), std::move(cb));
    };
    if (s) return release(Lease(s), std::move(relock));
    return relock({});
  }
  q->waiters.push_back(w);
  upgrades.push_back(q);
  attempt(q);
}

void Client::Core::on_upgrade_read(const QueuePtr& q, const WaiterPtr& w, loop::MonoTime t_send,
                                   Ec ec, const loop::Replies& r, loop::WatchTxn txn) {
  const protocol::UpgradeRead read = protocol::parse_upgrade_watch(r);
  if (unusable_read(q, w, ec, r, txn, read.ok)) return;
  protocol::UpgradeDecision d =
      protocol::decide_upgrade(w->req.owner, read.fields, read.companion_exists, read.intent);
  if (d == protocol::UpgradeDecision::conflict && regressions.upgrade_ignores_intent) {
    d = protocol::UpgradeDecision::blocked_by_shared_only;  // the bug: wait for each other
  }
  if (d == protocol::UpgradeDecision::free && !w->leaving()) {
    const std::uint64_t floor = floor_for(*w);
    exec(txn, metrics(),
         protocol::upgrade_grant(w->keys, w->req.owner, w->ttl_ms, floor, w->sent_fence_ttl_ms),
         guard([q, w, t_send](Core* self, Ec ec2, const loop::Replies& r2) {
           // The promotion consumes the shared lease: a deadline that passed while it was in
           // flight does not undo it (that would leave the caller with neither lease). An
           // outcome unknown withdraws the exclusive claim; the next read reports the shared
           // lease gone.
           self->on_watched_grant(q, w, t_send, ec2, r2, protocol::parse_upgrade_grant, true);
         }));
    return;
  }
  const bool blocked = d == protocol::UpgradeDecision::blocked ||
                       d == protocol::UpgradeDecision::blocked_by_shared_only;
  if (blocked && !w->leaving() && !q->one_shot) {
    if (auto* m = metrics()) m->on_contended(w->req.resource);
    // Declare (or re-arm) our intent under the same WATCH, with the tracked reads of the wait.
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(w->deadline - loop.now());
    const std::int64_t intent_ms = std::clamp<std::int64_t>(left.count(), 1, kIntentMaxMs);
    const bool track = caps.push_wakeups;
    q->state = Queue::State::in_flight;
    exec(txn, metrics(), protocol::upgrade_wait(w->keys, w->req.owner, intent_ms, track),
         guard([q, w, track](Core* self, Ec ec2, const loop::Replies& r2) {
           self->on_upgrade_wait(q, w, ec2, r2, track);
         }));
    return;
  }
  txn.unwatch();
  if (d == protocol::UpgradeDecision::not_held) {
    last_error = w->req.resource + ": '" + w->req.owner + "' holds no live shared lease to upgrade";
    if (auto s = shared_lease_of(w->keys, w->req.owner)) lose(s, Errc::lost);
    complete(w, w->expired ? w->give_up : Ec(Errc::not_held));
  } else if (d == protocol::UpgradeDecision::conflict) {
    last_error = w->req.resource + ": '" + read.intent +
                 "' is upgrading its shared lease; two readers waiting for each other would "
                 "deadlock: release this one (it is kept) to let that upgrade go";
    complete(w, w->expired ? w->give_up : Ec(Errc::upgrade_conflict));
  } else if (w->expired) {
    complete(w, w->give_up);  // wait over: nothing of ours was written
  } else if (!w->done) {
    complete(w, Errc::busy);  // one attempt, blocked by another holder
  }
  advance(q);
}

void Client::Core::on_upgrade_wait(const QueuePtr& q, const WaiterPtr& w, Ec ec,
                                   const loop::Replies& r, bool track) {
  if (is_transport(ec) || r.size() == 0) {
    // At most our intent was written, which lapses by itself: nothing to withdraw.
    on_attempt_transport(q, w, ec ? ec : make_error_code(loop::Errc::protocol_error), false);
    return;
  }
  bool aborted = false;
  protocol::WaitRead wr = protocol::parse_upgrade_wait(r.back(), track, aborted);
  if (aborted) {
    attempt(q);  // the holder set (or an intent) changed since our read: read again
    return;
  }
  if (!wr.ok) {
    fail_step(q, w, r, false);
    return;
  }
  if (w->leaving()) {
    if (w->expired) complete(w, w->give_up);
    advance(q);
    return;
  }
  if (track && !wr.tracked && caps.push_wakeups) {
    caps.push_wakeups = false;
    caps.tracking_error = protocol::server_words(r);
  }
  switch (protocol::decide_upgrade(w->req.owner, wr.fields, true, w->req.owner)) {
    case protocol::UpgradeDecision::blocked: {
      // Woken by the holder set's push, or at the soonest of its expiry and our intent's.
      const std::int64_t intent_ms = kIntentMaxMs;
      wait(q, w, wr.pttl > 0 ? std::min(wr.pttl, intent_ms) : intent_ms, wr.tracked);
      return;
    }
    case protocol::UpgradeDecision::blocked_by_shared_only:
      check_stale(q, w, wr);  // other readers' fields whose lease is over go first
      return;
    default:
      attempt(q);  // free, or our lease is gone: the WATCHed read decides
      return;
  }
}

}  // namespace lockwire::lock
