// Client::Core as the driver of the acquire machine (acquire_machine.hpp): it feeds the
// machine replies, timer expiries and wake-ups as events, and carries out what the machine
// answers — sends, timers, the answer. The machine decides what happens next; Core knows how
// (the bytes, the connection, the fencing floor, the vouch, the replicas) and words answers.
//
// Issue #29: the machine drives every lock: exclusive in arrival or fair order, shared, a
// semaphore's permit, an upgrade in place (its steps' bytes in upgrade.cpp, each upgrade in a
// queue of its own); waits and one attempt alike. A queue's head runs, the others wait their
// turn (Event::wake). The parked hand-off's actions are carried out in park.cpp.
#include <algorithm>
#include <cassert>

#include "core.hpp"

namespace lockwire::lock {

namespace {
using Machine = detail::AcquireMachine;
using Event = Machine::Event;
using Action = Machine::Action;

}  // namespace

// Inlined into drive()'s loop (a call per action cost more than most actions): the longer
// cases are functions of their own.
[[gnu::always_inline]] inline bool Client::Core::carry_out(const QueuePtr& q,
                                                           const WaiterPtr& w,
                                                           const MachineAction& a,
                                                           MachineEvent& next) {
  using K = Action::Kind;
  using T = Machine::Timer;
  switch (a.kind) {
    case K::send_attempt:
      return try_attempt(q, w, next);
    case K::send_withdraw:
      driven_withdraw(q, w);
      return false;
    case K::send_wait_read:
      wait_read(q, w, a.with_hdel);
      return false;
    case K::check_stale:
      driven_check_stale(q, w);
      return false;
    case K::leave_queue:
      driven_leave_queue(q);
      return false;
    case K::read_floor:
      return driven_read_floor(q, w, next);
    case K::hold:
      park_until_probed(q);  // attempt(q) wakes us: Event::wake
      return false;
    case K::arm:
      switch (a.timer) {
        case T::settle:
          if (!w->done) start_settle(q, w, a.after);  // answered already: nothing to bound
          break;
        case T::deadline:
          // The request's wait (a.after), ending through give_up like every other wait's (the
          // answer_at_deadline regression is there).
          arm_deadline(q, w);
          break;
        case T::backstop:
          arm_backstop(q, w, a);
          break;
        case T::grace:
          if (auto& t = queue_timer(q, &Queue::grace, &Core::on_grace); !t.active()) {
            t.start(a.after);
          }
          break;
        case T::unpark:
          queue_timer(q, &Queue::unpark, &Core::on_unpark_timer).start(a.after);
          break;
      }
      return false;
    case K::disarm:
      switch (a.timer) {
        case T::settle:
          if (w->settle_timer) w->settle_timer->stop();
          if (w->settle_armed) {
            w->settle_armed = false;
            drop_settled();
          }
          break;
        case T::deadline:
          if (w->deadline_timer) w->deadline_timer->stop();
          break;
        case T::backstop:
          if (q->backstop) q->backstop->stop();
          break;
        case T::grace:
          if (q->grace) q->grace->stop();
          break;
        case T::unpark:
          if (q->unpark) q->unpark->stop();
          break;
      }
      return false;
    case K::answer:
      answer_driven(q, w, a);
      return false;
    case K::send_watched_grant:
      driven_watched_grant(q, w, w->granted_sent);
      return false;
    case K::declare_and_read:
      driven_declare_and_read(q, w);
      return false;
    case K::unwatch:
      w->txn.unwatch();
      return false;
    case K::check_head:
      driven_check_head(q, w);
      return false;
    case K::drop_head:
      driven_drop_head(q, w);
      return false;
    case K::send_park:
      return driven_park(q, w, next);
    case K::unpark:
      driven_unpark(q, w);
      return false;
  }
  return false;
}

void Client::Core::driven_drop_head(const QueuePtr& q, const WaiterPtr& w) {
  send(protocol::drop_head(w->keys, w->fair_head),
       guard([q, w](Core* self, Ec, const loop::Replies&) {
         self->drive(q, w, event(Event::Kind::head_dropped));  // whatever became of it
       }));
}

void Client::Core::driven_withdraw(const QueuePtr& q, const WaiterPtr& w) {
  withdraw(q, w, guard([q, w](Core* self, bool absent) {
             const bool late = w->machine->state() == Machine::State::done;
             Event e = event(Event::Kind::withdrawn);
             e.absent = absent;
             self->drive(q, w, std::move(e));
             if (late && !self->closed) self->move_on(q, w);
           }));
}

void Client::Core::driven_leave_queue(const QueuePtr& q) {
  if (place_handed_on(*q)) leave_queue(q);
}

bool Client::Core::driven_read_floor(const QueuePtr& q, const WaiterPtr& w, MachineEvent& next) {
  // A read that came back since this grant's block was sent (another attempt's) is fresh
  // enough: no second TIME.
  if (floor_read_at > w->sent_floor_read_at) {
    next = event(Event::Kind::floor_read);
    return true;
  }
  refresh_floor([self = this, q, w] { self->drive(q, w, event(Event::Kind::floor_read)); });
  return false;
}

void Client::Core::arm_backstop(const QueuePtr& q, const WaiterPtr& w, const MachineAction& a) {
  w->waited = true;
  q->state = Queue::State::waiting;
  Nanos delay = a.after;
  if (a.poll_index >= 0) delay = std::min(delay, poll_delay(a.poll_index));
  queue_timer(q, &Queue::backstop, &Core::on_backstop).start(delay);
}

// Its own copies of the queue and the waiter: the caller's may be the head of q->waiters,
// which an answer pops.
void Client::Core::drive(QueuePtr q, WaiterPtr w, MachineEvent e) { drive_owned(q, w, e); }

void Client::Core::drive_owned(const QueuePtr& q, const WaiterPtr& w, MachineEvent e) {
  for (;;) {
    // A reply after the settle bound answered: once it is dealt with (what it may have left
    // withdrawn), the queue moves on, as it would have after the step.
    const bool late = w->machine->state() == Machine::State::done;
    const Machine::Actions actions = w->machine->resume(e);
    // `e` is spent: an action that leads to an event at once (an attempt not made) writes it
    // there, and the loop feeds it in turn.
    bool next = false;
    bool answered = false;
    bool withdrawing = false;
    for (const Action& a : actions) {
      if (closed) return;  // an answer's callback closed the client
      // A no-reply answer leaves the step on the wire: the queue moves on after its reply.
      answered = answered ||
                 (a.kind == Action::Kind::answer && a.because != Machine::Because::no_reply);
      withdrawing = withdrawing || a.kind == Action::Kind::send_withdraw;
      if (carry_out(q, w, a, e)) {
        assert(!next);  // at most one action per resume answers at once
        next = true;
      }
    }
    if (closed) return;
    if (answered || (late && !withdrawing)) move_on(q, w);
    if (!next) return;
  }
}

void Client::Core::move_on(const QueuePtr& q, const WaiterPtr& w) {
  if (!q->waiters.empty() && q->waiters.front() == w) {
    advance(q);
  } else {
    std::erase(q->waiters, w);  // answered from behind: the head keeps going
  }
}

// A queue's timer, made once (it acts for whichever waiter is head) and kept with the queue:
// `on` runs from the loop while the Core, open, and the queue live.
loop::Timer& Client::Core::queue_timer(const QueuePtr& q, std::unique_ptr<loop::Timer> Queue::*slot,
                                       void (Core::*on)(const QueuePtr&)) {
  auto& t = (*q).*slot;
  if (!t) {
    t = loop.make_timer([wk = weak(), wq = std::weak_ptr<Queue>(q), on] {
      auto self = wk.lock();
      auto qq = wq.lock();
      if (self && qq && !self->closed) ((*self).*on)(qq);
    });
  }
  return *t;
}

void Client::Core::on_backstop(const QueuePtr& q) {
  if (driven_head(*q) != nullptr) {
    Event e = event(Event::Kind::timer);
    e.timer = Machine::Timer::backstop;
    return drive(q, q->waiters.front(), std::move(e));
  }
  if (q->state != Queue::State::waiting) return;
  wake(q);  // an upgrade: the holder set's expiry, its intent's, a lost push or a poll
}

void Client::Core::on_grace(const QueuePtr& q) {
  q->suspect = q->first;  // cleared by the next read if the first has moved on
  if (driven_head(*q) != nullptr) {
    Event e = event(Event::Kind::timer);
    e.timer = Machine::Timer::grace;
    return drive(q, q->waiters.front(), std::move(e));
  }
  // Only the machine arms the grace (an upgrade waits for the holder set alone).
}

// The checks before an attempt: a connection probed, ready and vouched for, a server that is
// safe to lock on, a fencing floor that is young enough; then the acquire block.
// - Not before the connect probe is answered (wake_all() or `parked` resumes us). The state is
//   checked too: a reply handler that retries when the connection drops runs before the state
//   handlers clear caps.probed, and a request queued then would go out on the next connection
//   before its probe is read — with the old server's fencing floor (failover swarm, seed
//   2002269: a token repeated on the new primary). Nor while the sentinels do not vouch for the
//   primary (on_vouch resumes us): what it grants may already be replaced.
// - Where keys may vanish on this live connection (allow_eviction), TIME before every attempt.
// - When the floor is a third of fence_ttl old, TIME first, so that the grant's floor is young
//   when its reply is read (else it is withdrawn: stale_grant).
Client::Core::Gate Client::Core::gate(const Waiter& w, loop::MonoTime now) const {
  if (w.machine->leaving() ||  // nothing more is sent
      !caps.probed || conn->state() != loop::ConnectionState::ready || !vouched(now)) {
    return Gate::hold;  // until probed and vouched (above)
  }
  if (!refusal().empty()) return Gate::refused;
  if (floor_read_every_attempt()) return Gate::floor_every_time;
  if (floor_aging(now)) return Gate::floor_aging;
  return Gate::open;
}

bool Client::Core::try_attempt(const QueuePtr& q, const WaiterPtr& w, MachineEvent& next) {
  if (closed || w->done) return false;
  // One reading for the checks and the send: taken before it, it is no later than the send,
  // which is all the lease's start needs; no caller's code runs in between.
  const loop::MonoTime now = loop.now();
  const Gate g = gate(*w, now);
  if (g == Gate::hold) {
    next = event(Event::Kind::not_sent);
    return true;
  }
  if (g == Gate::refused) {
    last_error = w->req.resource + ": " + refusal();
    next = event(Event::Kind::refused);
    next.error = caps.unsupported.empty() ? Errc::unsafe_server : Errc::unsupported_server;
    w->told_words = last_error;
    next.may_claim = false;
    return true;
  }
  q->state = Queue::State::in_flight;
  if (g == Gate::floor_every_time) {
    // Keys may vanish on this connection: TIME before every attempt (above).
    read_floor_now([q, w](Core* self, Ec ec) {
      if (ec) return self->drive(q, w, self->transport_event(ec, false));
      if (w->machine->leaving()) return self->drive(q, w, event(Event::Kind::not_sent));
      self->send_attempt(q, w, self->loop.now());
    });
    return false;
  }
  if (g == Gate::floor_aging) {
    // TIME first (above); the checks run again once it is answered.
    refresh_floor([self = this, q, w] {
      MachineEvent e;
      if (self->try_attempt(q, w, e)) self->drive(q, w, e);
    });
    return false;
  }
  send_attempt(q, w, now);
  return false;
}

Client::Core::MachineEvent Client::Core::transport_event(Ec ec, bool maybe_applied) {
  // Never written (bound to a stream that went): held for the next probe, even one attempt.
  if (!maybe_applied && ec == loop::Errc::not_sent) return event(Event::Kind::not_sent);
  Event e = event(Event::Kind::transport);
  e.maybe_applied = maybe_applied;
  // A connection that is closed for good does not come back.
  e.retryable = retryable(ec) && conn->state() != loop::ConnectionState::closed;
  e.error = lock_errc(map(ec));  // also the connection's words in last_error
  return e;
}

// A reply the step cannot use (refused, malformed): the server's words told with the answer,
// the failure (its redirect too) kept for a routed caller. `may_claim`: the step may have left
// a claim of ours (withdrawn first).
Client::Core::MachineEvent Client::Core::refused_event(Waiter& w, const loop::Replies& r,
                                                       bool may_claim) {
  Failure f = refusal(r, w.req.resource);
  Event e = event(Event::Kind::refused);
  e.error = lock_errc(f.ec);
  e.may_claim = may_claim;
  w.told_words = last_error;
  w.failure = std::move(f);  // its own words and redirect, whatever fails meanwhile
  return e;
}

// Shared holders only, in the last read: whose leases the stale check reads (check_stale).
void Client::Core::note_shared_holders(Waiter& w, const protocol::WaitRead& wr) {
  w.shared_owners.clear();
  for (const std::string& f : wr.fields) {
    Kind k{};
    std::string_view o;
    if (protocol::split_field(f, k, o) && k == Kind::shared) w.shared_owners.emplace_back(o);
  }
  w.read_pttl = wr.pttl;
}

// A wait block's reply as the machine's event; the rank, the first
// waiter and a refusal of tracking are Core's to note.
void Client::Core::driven_wait_read(const QueuePtr& q, const WaiterPtr& w, Ec ec,
                                    const loop::Replies& r, bool with_hdel, bool track,
                                    bool clear_wake) {
  if (is_transport(ec) || r.size() == 0) {
    // Our HDEL may or may not have run: resolved like any unknown acquire.
    return drive(q, w,
                 transport_event(ec ? ec : make_error_code(loop::Errc::protocol_error),
                                 with_hdel && ec == loop::Errc::outcome_unknown));
  }
  const bool exclusive = w->req.kind == Kind::exclusive;
  protocol::WaitRead wr =
      exclusive ? protocol::parse_exclusive_wait_read(r.back(), with_hdel, w->req.owner, track,
                                                      clear_wake)
                : protocol::parse_wait_read(r.back(), with_hdel, track);
  if (!wr.ok) {
    // Refused or malformed (EXECABORT for a NOPERM, an OOM...): the block's HDEL did not run,
    // or may not have. Withdrawn before the answer.
    return drive(q, w,
                 refused_event(*w, r, with_hdel && !regressions.keep_claim_on_failed_block));
  }
  Event e = event(Event::Kind::wait_read);
  if (!w->machine->leaving()) {
    if (exclusive) note_place(*q, std::move(wr.first), wr.rank, std::move(wr.behind));
    if (!wr.tracked && regressions.ignore_refused_tracking) {
      return wait_read(q, w, false);  // the bug: a read that was not tracked is simply read again
    }
    if (track && !wr.tracked) tracking_refused_in_block(r);
    const protocol::Decision d =
        protocol::decide(w->req.kind, w->req.owner, wr.fields, w->req.permits);
    if (fair(*w) &&
        (d == protocol::Decision::free || d == protocol::Decision::blocked_by_shared_only) &&
        !wr.elected() && !wr.first.empty() && wr.first != w->req.owner) {
      e.holders = Machine::Holders::not_ours;
      w->fair_head = wr.first;
    } else {
      switch (d) {
      case protocol::Decision::free:
        e.holders = Machine::Holders::free;
        break;
      case protocol::Decision::already_held:
        e.holders = Machine::Holders::mine;
        break;
      case protocol::Decision::blocked:
        e.holders = Machine::Holders::held;
        break;
      case protocol::Decision::blocked_by_shared_only:
        e.holders = Machine::Holders::shared_only;
        note_shared_holders(*w, wr);
        break;
      }
    }
  }
  e.rank = wr.rank;
  e.pttl = wr.pttl;
  e.doorbell_pttl = wr.doorbell_pttl;
  e.tracked = wr.tracked;
  drive(q, w, std::move(e));
}

// The stale check (the elected waiter, or a semaphore at its count, blocked by shared holders
// only): their companion leases are read; those that are over are removed, then the next
// attempt.
void Client::Core::driven_check_stale(const QueuePtr& q, const WaiterPtr& w) {
  q->state = Queue::State::in_flight;
  watch(protocol::stale_watch(w->keys, w->shared_owners),
        guard([q, w](Core* self, Ec ec, const loop::Replies& r, loop::WatchTxn txn) {
          if (is_transport(ec) || !txn.valid()) {
            return self->drive(
                q, w,
                self->transport_event(ec ? ec : make_error_code(loop::Errc::protocol_error),
                                      false));
          }
          if (w->machine->leaving()) {
            txn.unwatch();
            return self->drive(q, w, event(Event::Kind::stale_checked));
          }
          const auto ttls = protocol::parse_stale_watch(r, w->shared_owners.size());
          std::vector<std::string> stale;
          std::int64_t soonest = w->read_pttl;
          for (std::size_t i = 0; i < ttls.size(); ++i) {
            if (ttls[i] == -2) {
              stale.push_back(protocol::field(Kind::shared, w->shared_owners[i]));
            } else if (ttls[i] > 0 && (soonest <= 0 || ttls[i] < soonest)) {
              soonest = ttls[i];
            }
          }
          if (stale.empty()) {
            txn.unwatch();
            // Companion expiry does not touch the holder set: the backstop is the soonest one.
            Event e = event(Event::Kind::stale_checked);
            e.pttl = soonest;
            return self->drive(q, w, std::move(e));
          }
          exec(txn, self->metrics(), protocol::stale_cleanup(w->keys, stale),
               self->guard([q, w](Core* s2, Ec, const loop::Replies&) {
                 s2->drive(q, w, event(Event::Kind::stale_removed));
               }));
        }));
}

// on_fair_read for a driven waiter: the read's outcome as an event; the grant (send_watched_grant)
// or the release of the WATCH (unwatch) is the machine's to decide.
void Client::Core::driven_fair_read(const QueuePtr& q, const WaiterPtr& w, loop::MonoTime t_send,
                                    Ec ec, const loop::Replies& r, loop::WatchTxn txn) {
  if (is_transport(ec) || !txn.valid()) return drive_unread(q, w, ec, r);
  const protocol::FairRead read =
      protocol::parse_fair_read(r, w->sent_floor > 0, w->sent_fence_ttl_ms > 0);
  if (!read.ok) {
    txn.unwatch();
    return drive(q, w, refused_event(*w, r, false));  // nothing of ours was written
  }
  if (w->ticket == 0) w->ticket = read.ticket;  // our place: the order of arrival
  const bool free = read.holders == 0;
  const bool ours = read.head.empty() || read.head == w->req.owner;
  if (!(free && ours) && !w->leaving()) {
    if (auto* m = metrics()) m->on_contended(w->req.resource);
  }
  w->fair_head = read.head;
  Event e = event(Event::Kind::watched_read);
  e.holders = free ? Machine::Holders::free : Machine::Holders::held;
  e.head_is_us = ours;
  e.tracked = caps.push_wakeups;
  drive_watched_read(q, w, t_send, std::move(txn), e);
}

// A WATCHed read that came back unusable on the connection (reads change nothing: a retry is
// safe). A WATCH refused with MOVED (the slot is another shard's now) is kept: the router's
// retry follows it, should this end the wait.
void Client::Core::drive_unread(const QueuePtr& q, const WaiterPtr& w, Ec ec,
                                const loop::Replies& r) {
  if (ec == loop::Errc::server_error) w->watch_moved = moved_in(r);
  drive(q, w, transport_event(ec ? ec : make_error_code(loop::Errc::protocol_error), false));
}

// The read's event, its WATCH at hand for the grant (send_watched_grant) or its release
// (unwatch). Never kept past this call (it points at the connection): a read the machine did
// not act on (answered meanwhile) releases its WATCH here.
void Client::Core::drive_watched_read(const QueuePtr& q, const WaiterPtr& w,
                                      loop::MonoTime t_send, loop::WatchTxn txn,
                                      MachineEvent e) {
  w->txn = std::move(txn);
  w->granted_sent = t_send;  // a grant under this read counts from it
  drive(q, w, e);
  w->txn.unwatch();
}

// on_shared_read for a driven waiter (a shared lease, a semaphore's permit): as the fair read.
void Client::Core::driven_shared_read(const QueuePtr& q, const WaiterPtr& w, loop::MonoTime t_send,
                                      Ec ec, const loop::Replies& r, loop::WatchTxn txn) {
  const bool watched = !(w->req.permits > 0 && regressions.semaphore_unwatched);
  if (is_transport(ec) || (watched && !txn.valid())) return drive_unread(q, w, ec, r);
  if (!watched && r.size() != 2) {
    return drive(q, w,
                 transport_event(ec ? ec : make_error_code(loop::Errc::protocol_error), false));
  }
  protocol::SharedRead read;
  if (watched) {
    read = protocol::parse_shared_watch(r);
  } else {
    read.ok = protocol::parse_holder_fields(r[0], read.fields);
  }
  if (!read.ok) {
    txn.unwatch();
    return drive(q, w, refused_event(*w, r, false));  // nothing of ours was written
  }
  const protocol::Decision d = protocol::decide_shared(w->req.owner, read, w->req.permits);
  Event e = event(Event::Kind::watched_read);
  e.head_is_us = true;
  if (!watched) {
    // The bug (semaphore_unwatched): read, then grant, nothing tying the two together; nor a
    // word of contention or of a lease already held.
    e.holders = d == protocol::Decision::free ? Machine::Holders::free : Machine::Holders::held;
  } else {
    e.holders = d == protocol::Decision::free           ? Machine::Holders::free
                : d == protocol::Decision::already_held ? Machine::Holders::mine
                                                        : Machine::Holders::held;
    if (e.holders == Machine::Holders::held && !w->leaving()) {
      if (auto* m = metrics()) m->on_contended(w->req.resource);
    }
  }
  drive_watched_read(q, w, t_send, std::move(txn), e);
}

// The grant block under the read's WATCH (fair order, a shared lease); its reply judged as any
// grant (driven_grant). Without a WATCH (the semaphore_unwatched bug) it is sent as it is.
void Client::Core::driven_watched_grant(const QueuePtr& q, const WaiterPtr& w,
                                        loop::MonoTime t_send) {
  const std::uint64_t floor = floor_for(*w);
  const bool shared = w->req.kind == Kind::shared;
  loop::Request grant =
      w->upgrade ? protocol::upgrade_grant(w->keys, w->req.owner, w->ttl_ms, floor,
                                           w->sent_fence_ttl_ms)
      : shared   ? protocol::shared_grant(w->keys, w->req.owner, w->ttl_ms, floor,
                                          w->sent_fence_ttl_ms)
                 : protocol::fair_grant(w->keys, w->req.owner, w->ttl_ms, floor,
                                        w->sent_fence_ttl_ms);
  auto on_reply = guard([q, w, t_send, shared](Core* self, Ec ec, const loop::Replies& r) {
    if (is_transport(ec) || r.size() == 0) {
      return self->drive(
          q, w,
          self->transport_event(ec ? ec : make_error_code(loop::Errc::protocol_error),
                                ec == loop::Errc::outcome_unknown));
    }
    const bool fence = w->sent_fence_ttl_ms > 0;
    const protocol::AcquireReply a = w->upgrade ? protocol::parse_upgrade_grant(r.back(), fence)
                                     : shared   ? protocol::parse_shared_grant(r.back(), fence)
                                                : protocol::parse_fair_grant(r.back(), fence);
    if (a.outcome == protocol::Outcome::granted) {
      w->granted_sent = t_send;
      // The promotion consumed the shared lease: a deadline that passed while it was in
      // flight does not undo it (that would leave the caller with neither lease).
      if (w->upgrade) self->drive(q, w, event(Event::Kind::consumed));
      return self->driven_grant(q, w, a.token);
    }
    if (a.outcome == protocol::Outcome::aborted) {
      return self->drive(q, w, event(Event::Kind::aborted));
    }
    // An error inside EXEC (the HSETNX/HSET may have run): withdrawn, then the server's words.
    self->drive(q, w,
                self->refused_event(*w, r, !self->regressions.keep_claim_on_failed_block));
  });
  if (!w->txn.valid()) return send(std::move(grant), std::move(on_reply));
  exec(w->txn, metrics(), std::move(grant), std::move(on_reply));
}

// check_head for a driven waiter: the doorbell of the waiter first in line.
void Client::Core::driven_check_head(const QueuePtr& q, const WaiterPtr& w) {
  q->state = Queue::State::in_flight;
  q->stop_timers();
  send(protocol::head_doorbell(w->keys, w->fair_head),
       guard([q, w](Core* self, Ec ec, const loop::Replies& r) {
         if (is_transport(ec) || r.size() != 1) {
           return self->drive(
               q, w,
               self->transport_event(ec ? ec : make_error_code(loop::Errc::protocol_error),
                                     false));
         }
         Event e = event(Event::Kind::head_checked);
         if (!w->machine->leaving()) {
           const auto pttl = protocol::parse_pttl(r[0]);
           e.vanished = pttl && *pttl == -2;
           e.pttl = pttl ? *pttl : -2;
           e.queued = queue_member(q, w);
         }
         self->drive(q, w, std::move(e));
       }));
}

void Client::Core::driven_reply(const QueuePtr& q, const WaiterPtr& w, loop::MonoTime t_send,
                                const protocol::AcquireReply& a, const loop::Replies& r) {
  switch (a.outcome) {
    case protocol::Outcome::granted:
      w->granted_sent = t_send;
      return driven_grant(q, w, a.token);
    case protocol::Outcome::already_held:
      return drive(q, w, event(Event::Kind::already_held));
    case protocol::Outcome::contended:
      if (auto* m = metrics()) m->on_contended(w->req.resource);
      // The token this losing attempt burnt is its ticket in P{R}:q; without tokens (0), the
      // server's clock as we reckon it.
      if (w->ticket == 0) w->ticket = a.token != 0 ? a.token : queue_ticket();
      return drive(q, w, event(Event::Kind::contended));
    case protocol::Outcome::aborted:
    case protocol::Outcome::bad_reply: {
      // EXECABORT (nothing ran) or an error inside EXEC (the HSETNX may have run): the claim is
      // withdrawn, then the server's words told.
      return drive(q, w, refused_event(*w, r, !regressions.keep_claim_on_failed_block));
    }
  }
}

// A grant's judgement: a token not above every earlier one is withdrawn and taken again;
// with min_replicas, the grant counts once enough replicas have it.
void Client::Core::driven_grant(const QueuePtr& q, const WaiterPtr& w, std::uint64_t token) {
  if (!w->leaving()) {
    if (const Staleness why = stale_grant(*w, token); why != Staleness::fresh) {
      forget_raise(w->keys.fence);  // the next block raises the fence again (ZADD GT)
      if (++w->stale_retries > kMaxStaleRetries) {
        // A fresh floor could not be had (TIME refused on this connection?): never loop.
        last_error = w->req.resource + ": the fencing floor (the server's TIME) could not be "
                     "refreshed, so no token above every earlier one could be vouched for";
        Event e = event(Event::Kind::refused);
        e.error = Errc::server_refused;
        w->told_words = last_error;
        return drive(q, w, std::move(e));
      }
      Event e = event(Event::Kind::unusable_grant);
      e.retry = why == Staleness::floor_too_old ? Machine::Retry::fresh_floor
                                                : Machine::Retry::at_once;
      return drive(q, w, std::move(e));
    }
  }
  if (opts.min_replicas.is_none()) return driven_vouch_check(q, w, token);
  replicated(w->req.resource, guard([q, w, token](Core* self, Ec ec) {
               if (!ec) return self->driven_vouch_check(q, w, token);
               Event e;
               if (ec == Errc::not_replicated && !self->regressions.not_replicated_final) {
                 // Often passing (issue #28 case 3): withdrawn, then tried again within a wait.
                 e = event(Event::Kind::unusable_grant);
                 e.retry = Machine::Retry::polled;
                 e.error = lock_errc(ec);
                 w->told_words = self->last_error;
               } else if (ec.category() != lock_category()) {
                 e = self->transport_event(ec, true);  // the WAIT's outcome is unknown
               } else {
                 e = event(Event::Kind::refused);  // granted on the primary only: withdrawn
                 e.error = lock_errc(ec);
                 w->told_words = self->last_error;
               }
               self->drive(q, w, std::move(e));
             }));
}

// The grant's last judgement: a grant whose vouch ran out in flight counts for nothing.
void Client::Core::driven_vouch_check(const QueuePtr& q, const WaiterPtr& w, std::uint64_t token) {
  if (!w->leaving() && w->upgrade && w->granted_sent + w->req.ttl <= loop.now()) {
    // The promotion's lease ended before its reply was read (the process was paused): nothing
    // to hand over, and the shared lease it replaced is over too. Not "granted": another
    // client may have held the lock exclusively in between, so the upgrade was not in place
    // (semantics swarm, seed 4013306). Answered as a shared lease that is gone.
    last_error = w->req.resource + ": the upgrade's lease of '" + w->req.owner +
                 "' ended before its reply was read (the process was paused?)";
    if (auto s = shared_lease_of(w->keys, w->req.owner)) lose(s, Errc::lost);
    Event e = event(Event::Kind::refused);
    e.error = Errc::not_held;
    w->told_words = last_error;
    e.may_claim = false;
    return drive(q, w, std::move(e));
  }
  if (!w->leaving() && passed(vouched_until()) && !regressions.grant_unvouched) {
    Event e = event(Event::Kind::unusable_grant);
    e.retry = Machine::Retry::once_vouched;
    e.error = Errc::server_unavailable;
    w->told_words = w->req.resource + ": granted, but " + vouch_words() +
                    " by the time the reply came; the claim was withdrawn";
    return drive(q, w, std::move(e));
  }
  Event e = event(Event::Kind::granted);  // a waiter that is leaving has it withdrawn
  e.token = token;
  // q and w are a reply callback's (the acquire block's, or the WAIT's through replicated()):
  // they live until it returns.
  drive_owned(q, w, e);
}

void Client::Core::answer_driven(const QueuePtr& q, const WaiterPtr& w, const MachineAction& a) {
  using B = Machine::Because;
  Ec ec = a.error == Errc::ok ? Ec() : make_error_code(a.error);
  const std::string& resource = w->req.resource;
  switch (a.because) {
    case B::told:
      break;
    case B::told_words:
      if (!w->told_words.empty()) last_error = std::move(w->told_words);
      break;
    case B::withdrawal_unanswered:
      last_error = resource + ": the withdrawal of our claim got no reply; a claim of '" +
                   w->req.owner + "' may remain until its TTL (" + std::to_string(w->ttl_ms) +
                   " ms) runs out";
      break;
    case B::no_reply:
      last_error = resource + ": no reply from the server within " +
                   std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                      opts.settle_timeout)
                                      .count()) +
                   " ms after the wait ended; a claim of '" + w->req.owner +
                   "' may remain until its TTL (" + std::to_string(w->ttl_ms) + " ms) runs out";
      break;
    case B::not_connected:
      if (q->one_shot) {
        if (parked_by_vouch()) {
          // Connected, but never vouched for: their words, not "not connected".
          ec = Errc::server_unavailable;
          last_error = parked_words(resource);
        } else {
          last_error = resource + ": not connected";
        }
      } else if (q->state == Queue::State::need_ready) {
        // Never saw the lock held, and the queue waits for a usable connection: the wait ended
        // for the connection (or the vouch), not for the lock.
        if (parked_by_vouch()) {
          ec = Errc::server_unavailable;
          last_error = parked_words(resource);
        } else {
          ec = Errc::connection;
          last_error = resource + ": no usable connection to the server within the wait" +
                       (conn->last_error().empty() ? std::string()
                                                   : " (" + conn->last_error() + ")");
        }
      }  // else behind a waiter of ours that saw it held: the lock's time-out
      break;
    case B::dropped_nothing_left:
      last_error =
          resource + ": the connection dropped during the attempt; no claim of ours is left";
      break;
    case B::connection_failed:
      last_error = resource + ": " + conn->last_error();
      break;
  }
  if (!ec) return hand_over(w, a.token, w->granted_sent);
  if (w->lose_shared_on_answer) {
    if (auto s = shared_lease_of(w->keys, w->req.owner)) lose(s, Errc::lost);
  }
  complete(w, ec);
}

}  // namespace lockwire::lock
