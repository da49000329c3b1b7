// Upgrade: the sole shared lease of an owner becomes an exclusive one in place, with a new
// fencing token, never letting a writer in between (docs/protocol.md, "Upgrade"). While other
// readers hold the resource the upgrade waits like a writer, its intent declared in P{R}:u so
// that a second reader asking for the same is refused at once instead of both waiting for the
// other to leave. The acquire machine (Options::upgrade) decides each step; here are the
// upgrade's own: its read, its intent and wait.
#include "core.hpp"

namespace lockwire::lock {


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
  if (regressions.upgrade_by_release) {
    // The bug: a window between the two in which a writer can be granted.
    if (q->one_shot) {
      start_settle(q, w, opts.settle_timeout);
    } else {
      arm_deadline(q, w);
    }
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
  detail::AcquireMachine::Options mo;
  mo.settle_timeout = opts.settle_timeout;
  mo.upgrade = true;
  w->machine.emplace(mo);
  MachineEvent e;  // start: the machine arms the deadline (or the one attempt's settle bound)
  e.wait = w->req.wait;
  drive(q, w, std::move(e));
}

// The upgrade's WATCHed read for the machine: free (promote under the WATCH), blocked by
// another holder or by readers only (declare the intent and wait), or nothing to promote.
void Client::Core::driven_upgrade_read(const QueuePtr& q, const WaiterPtr& w,
                                       loop::MonoTime t_send, Ec ec, const loop::Replies& r,
                                       loop::WatchTxn txn) {
  using H = detail::AcquireMachine::Holders;
  if (is_transport(ec) || !txn.valid()) return drive_unread(q, w, ec, r);
  const protocol::UpgradeRead read = protocol::parse_upgrade_watch(r);
  MachineEvent e;
  if (!read.ok) {
    txn.unwatch();
    return drive(q, w, refused_event(*w, r, false));  // nothing of ours was written
  }
  protocol::UpgradeDecision d =
      protocol::decide_upgrade(w->req.owner, read.fields, read.companion_exists, read.intent);
  if (d == protocol::UpgradeDecision::conflict && regressions.upgrade_ignores_intent) {
    d = protocol::UpgradeDecision::blocked_by_shared_only;  // the bug: wait for each other
  }
  e.kind = MachineEvent::Kind::watched_read;
  e.head_is_us = true;
  switch (d) {
    case protocol::UpgradeDecision::free:
      e.holders = H::free;
      break;
    case protocol::UpgradeDecision::blocked:
      e.holders = H::held;
      break;
    case protocol::UpgradeDecision::blocked_by_shared_only:
      e.holders = H::shared_only;
      break;
    case protocol::UpgradeDecision::not_held:
      e.holders = H::lease_gone;
      w->told_words =
          w->req.resource + ": '" + w->req.owner + "' holds no live shared lease to upgrade";
      w->lose_shared_on_answer = true;  // it is gone: the answer says so, its on_lost too
      break;
    case protocol::UpgradeDecision::conflict:
      e.holders = H::other_upgrading;
      w->told_words = w->req.resource + ": '" + read.intent +
                "' is upgrading its shared lease; two readers waiting for each other would "
                "deadlock: release this one (it is kept) to let that upgrade go";
      break;
  }
  if ((e.holders == H::held || e.holders == H::shared_only) && !w->leaving() && !q->one_shot) {
    if (auto* m = metrics()) m->on_contended(w->req.resource);
  }
  drive_watched_read(q, w, t_send, std::move(txn), e);
}

// Declares (or re-arms) our intent under the read's WATCH, with the tracked reads of the wait.
void Client::Core::driven_declare_and_read(const QueuePtr& q, const WaiterPtr& w) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(w->deadline - loop.now());
  const std::int64_t intent_ms = std::clamp<std::int64_t>(left.count(), 1, kIntentMaxMs);
  const bool track = caps.push_wakeups;
  q->state = Queue::State::in_flight;
  exec(w->txn, metrics(), protocol::upgrade_wait(w->keys, w->req.owner, intent_ms, track),
       guard([q, w, track](Core* self, Ec ec, const loop::Replies& r) {
         self->driven_upgrade_waited(q, w, ec, r, track);
       }));
}

void Client::Core::driven_upgrade_waited(const QueuePtr& q, const WaiterPtr& w, Ec ec,
                                         const loop::Replies& r, bool track) {
  using H = detail::AcquireMachine::Holders;
  if (is_transport(ec) || r.size() == 0) {
    // At most our intent was written, which lapses by itself: nothing to withdraw.
    return drive(q, w,
                 transport_event(ec ? ec : make_error_code(loop::Errc::protocol_error), false));
  }
  bool aborted = false;
  protocol::WaitRead wr = protocol::parse_upgrade_wait(r.back(), track, aborted);
  MachineEvent e;
  if (aborted) {
    e.kind = MachineEvent::Kind::aborted;  // the holder set (or an intent) changed: read again
    return drive(q, w, std::move(e));
  }
  if (!wr.ok) {
    return drive(q, w, refused_event(*w, r, false));
  }
  e.kind = MachineEvent::Kind::wait_read;
  if (!w->machine->leaving()) {
    if (track && !wr.tracked && caps.push_wakeups) {
      caps.push_wakeups = false;
      caps.tracking_error = protocol::server_words(r);
    }
    switch (protocol::decide_upgrade(w->req.owner, wr.fields, true, w->req.owner)) {
      case protocol::UpgradeDecision::blocked:
        e.holders = H::held;
        break;
      case protocol::UpgradeDecision::blocked_by_shared_only:
        // Other readers' fields whose lease is over go first (driven_check_stale).
        e.holders = H::shared_only;
        note_shared_holders(*w, wr);
        break;
      default:
        e.holders = H::free;  // free, or our lease is gone: the WATCHed read decides
        break;
    }
  }
  // Woken by the holder set's push, or at the soonest of its expiry and our intent's.
  e.pttl = wr.pttl;
  e.doorbell_pttl = kIntentMaxMs;
  e.tracked = wr.tracked;
  drive(q, w, std::move(e));
}

}  // namespace lockwire::lock
