// Client::Core as the driver of the acquire machine (acquire_machine.hpp): it feeds the
// machine replies, timer expiries and wake-ups as events, and carries out what the machine
// answers — sends, timers, the answer. The machine decides what happens next; Core knows how
// (the bytes, the connection, the fencing floor, the vouch, the replicas) and words answers.
//
// Issue #29: the machine drives one attempt of an exclusive lock (wait 0, the try-lock and the
// benchmarks' pair); a wait (rank, doorbells, pushes, the local FIFO) still runs in acquire.cpp,
// so the actions only a wait is given (wait block, leaving the queue, backstop, grace) are not
// carried out here yet.
#include <cassert>

#include "core.hpp"

namespace lockwire::lock {

namespace {
using Machine = detail::AcquireMachine;
using Event = Machine::Event;
using Action = Machine::Action;

Event event(Event::Kind k) {
  Event e;
  e.kind = k;
  return e;
}
}  // namespace

void Client::Core::drive(QueuePtr q, WaiterPtr w, MachineEvent e) {
  for (;;) {
    const Machine::Actions actions = w->machine->resume(e);
    std::optional<MachineEvent> next;
    for (const Action& a : actions) {
      if (closed) return;  // an answer's callback closed the client
      if (auto n = carry_out(q, w, a)) {
        assert(!next);  // at most one action per resume answers at once
        next = std::move(n);
      }
    }
    if (!next || closed) return;
    e = std::move(*next);
  }
}

std::optional<Client::Core::MachineEvent> Client::Core::carry_out(const QueuePtr& q,
                                                                  const WaiterPtr& w,
                                                                  const MachineAction& a) {
  using K = Action::Kind;
  using T = Machine::Timer;
  switch (a.kind) {
    case K::send_attempt:
      return try_attempt(q, w);
    case K::send_withdraw:
      withdraw(q, w, guard([q, w](Core* self, bool absent) {
                 Event e = event(Event::Kind::withdrawn);
                 e.absent = absent;
                 self->drive(q, w, std::move(e));
               }));
      return std::nullopt;
    case K::read_floor:
      // A read that came back since this grant's block was sent (another attempt's) is fresh
      // enough: no second TIME.
      if (floor_read_at > w->sent_floor_read_at) return event(Event::Kind::floor_read);
      refresh_floor([self = this, q, w] { self->drive(q, w, event(Event::Kind::floor_read)); });
      return std::nullopt;
    case K::hold:
      park_until_probed(q);  // attempt(q) wakes us: Event::reconnected
      return std::nullopt;
    case K::arm:
      if (a.timer == T::settle) {
        start_settle(q, w, a.after);
      } else if (a.timer == T::deadline) {
        w->deadline_timer = waiter_timer(q, w, [](Core* self, const WaiterPtr& wt,
                                                  const QueuePtr& qq) {
          Event e = event(Event::Kind::timer);
          e.timer = T::deadline;
          self->drive(qq, wt, std::move(e));
        });
        w->deadline_timer->start(a.after);
      } else {
        assert(false && "backstop and grace: only a wait arms them; waits are not driven yet");
      }
      return std::nullopt;
    case K::disarm:
      if (a.timer == T::settle) {
        if (w->settle_timer) w->settle_timer->stop();
        if (w->settle_armed) {
          w->settle_armed = false;
          drop_settled();
        }
      } else if (a.timer == T::deadline && w->deadline_timer) {
        w->deadline_timer->stop();
      }
      return std::nullopt;
    case K::answer:
      answer_driven(q, w, a);
      return std::nullopt;
    case K::send_wait_read:
    case K::leave_queue:
      assert(false && "only a wait reads its place or joins the queue; waits are not driven yet");
      return std::nullopt;
  }
  return std::nullopt;
}

// attempt()'s checks for one waiter: a connection probed, ready and vouched for, a server that
// is safe to lock on, a fencing floor that is young enough; then the acquire block.
std::optional<Client::Core::MachineEvent> Client::Core::try_attempt(const QueuePtr& q,
                                                                    const WaiterPtr& w) {
  if (closed || w->done) return std::nullopt;
  if (w->machine->leaving()) return event(Event::Kind::not_sent);  // nothing more is sent
  if (!caps.probed || conn->state() != loop::ConnectionState::ready || !vouched()) {
    return event(Event::Kind::not_sent);  // see attempt(): held until probed and vouched
  }
  if (std::string why = refusal(); !why.empty()) {
    last_error = w->req.resource + ": " + why;
    Event e = event(Event::Kind::refused);
    e.error = caps.unsupported.empty() ? Errc::unsafe_server : Errc::unsupported_server;
    e.words = last_error;
    e.may_claim = false;
    return e;
  }
  q->state = Queue::State::in_flight;
  if (opts.allow_eviction && caps.may_evict() && caps.clock_known &&
      !regressions.counter_tokens) {
    // Keys may vanish on this live connection: the floor is read before every attempt
    // (attempt() says why).
    const loop::MonoTime sent = loop.now();
    floor_asked_at = sent;
    send(protocol::time_request(),
         guard([q, w, sent](Core* self, Ec ec, const loop::Replies& r) {
           if (is_transport(ec) || r.size() == 0) {
             return self->drive(
                 q, w,
                 self->transport_event(ec ? ec : make_error_code(loop::Errc::protocol_error),
                                       false));
           }
           if (const auto us = protocol::parse_time(r[0])) {
             self->server_us = *us;
             self->floor_read_at = sent;
           }
           if (w->machine->leaving()) return self->drive(q, w, event(Event::Kind::not_sent));
           self->send_attempt(q, w);
         }),
         this_stream_only());
    return std::nullopt;
  }
  if (floor_aging()) {
    // TIME first (attempt() says why); the checks run again once it is answered.
    refresh_floor([self = this, q, w] {
      if (auto e = self->try_attempt(q, w)) self->drive(q, w, std::move(*e));
    });
    return std::nullopt;
  }
  send_attempt(q, w);
  return std::nullopt;
}

Client::Core::MachineEvent Client::Core::transport_event(Ec ec, bool maybe_applied) {
  // Never written (bound to a stream that went): held for the next probe, even one attempt.
  if (!maybe_applied && ec == loop::Errc::not_sent) return event(Event::Kind::not_sent);
  Event e = event(Event::Kind::transport);
  e.maybe_applied = maybe_applied;
  e.retryable = retryable(ec);
  e.error = map(ec);  // also the connection's words in last_error
  return e;
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
      if (w->ticket == 0) w->ticket = a.token;
      return drive(q, w, event(Event::Kind::contended));
    case protocol::Outcome::aborted:
    case protocol::Outcome::bad_reply: {
      // EXECABORT (nothing ran) or an error inside EXEC (the HSETNX may have run): the claim is
      // withdrawn, then the server's words told.
      Failure f = refusal(r, w->req.resource);
      Event e = event(Event::Kind::refused);
      e.error = f.ec;
      e.words = last_error;
      e.may_claim = !regressions.keep_claim_on_failed_block;
      w->failure = std::move(f);  // its own words and redirect, whatever fails meanwhile
      return drive(q, w, std::move(e));
    }
  }
}

// on_granted's judgement: a token not above every earlier one is withdrawn and taken again;
// with min_replicas, the grant counts once enough replicas have it.
void Client::Core::driven_grant(const QueuePtr& q, const WaiterPtr& w, std::uint64_t token) {
  if (!w->leaving()) {
    if (const Staleness why = stale_grant(*w, token); why != Staleness::fresh) {
      raised.erase(w->keys.fence);  // the next block raises the fence again (ZADD GT)
      if (++w->stale_retries > kMaxStaleRetries) {
        // A fresh floor could not be had (TIME refused on this connection?): never loop.
        last_error = w->req.resource + ": the fencing floor (the server's TIME) could not be "
                     "refreshed, so no token above every earlier one could be vouched for";
        Event e = event(Event::Kind::refused);
        e.error = Errc::server_refused;
        e.words = last_error;
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
                 e.error = ec;
                 e.words = self->last_error;
               } else if (ec.category() != lock_category()) {
                 e = self->transport_event(ec, true);  // the WAIT's outcome is unknown
               } else {
                 e = event(Event::Kind::refused);  // granted on the primary only: withdrawn
                 e.error = ec;
                 e.words = self->last_error;
               }
               self->drive(q, w, std::move(e));
             }));
}

// grant()'s judgement: a grant whose vouch ran out in flight counts for nothing.
void Client::Core::driven_vouch_check(const QueuePtr& q, const WaiterPtr& w, std::uint64_t token) {
  if (!w->leaving() && vouched_until() <= loop.now() && !regressions.grant_unvouched) {
    Event e = event(Event::Kind::unusable_grant);
    e.retry = Machine::Retry::once_vouched;
    e.error = Errc::server_unavailable;
    e.words = w->req.resource + ": granted, but " + vouch_words() +
              " by the time the reply came; the claim was withdrawn";
    return drive(q, w, std::move(e));
  }
  Event e = event(Event::Kind::granted);  // a waiter that is leaving has it withdrawn
  e.token = token;
  drive(q, w, std::move(e));
}

void Client::Core::answer_driven(const QueuePtr& q, const WaiterPtr& w, const MachineAction& a) {
  using B = Machine::Because;
  Ec ec = a.error;
  const std::string& resource = w->req.resource;
  switch (a.because) {
    case B::told:
      if (!a.words.empty()) last_error = a.words;
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
      if (parked_by_vouch()) {
        // Connected, but never vouched for: their words, not "not connected".
        ec = Errc::server_unavailable;
        last_error = parked_words(resource);
      } else if (q->one_shot) {
        last_error = resource + ": not connected";
      } else {
        ec = Errc::connection;  // never saw the lock held: the connection failed the wait
        last_error = resource + ": no usable connection to the server within the wait" +
                     (conn->last_error().empty() ? std::string() : " (" + conn->last_error() + ")");
      }
      break;
    case B::dropped_nothing_left:
      last_error = resource + ": the connection dropped during the attempt; no claim of ours is left";
      break;
    case B::connection_failed:
      last_error = resource + ": " + conn->last_error();
      break;
  }
  if (!ec) return hand_over(q, w, a.token, w->granted_sent);  // it moves the queue on
  complete(w, ec);
  advance(q);
}

}  // namespace lockwire::lock
