// The acquire/wait machine (acquire_machine.hpp): every transition of docs/protocol.md,
// *Waiting*, for one waiter, as actions for a driver to carry out.
#include "acquire_machine.hpp"

#include <algorithm>
#include <utility>

#include "lockwire/lock/error.hpp"

namespace lockwire::lock::detail {

namespace {
using A = AcquireMachine::Action;
using E = AcquireMachine::Event;
using T = AcquireMachine::Timer;
using H = AcquireMachine::Holders;

// Actions are filled in where they are added (no temporary copied in).
A& arm(AcquireMachine::Actions& out, T t, std::chrono::nanoseconds after) {
  A& a = out.add(A::Kind::arm);
  a.timer = t;
  a.after = after;
  return a;
}
void disarm(AcquireMachine::Actions& out, T t) { out.add(A::Kind::disarm).timer = t; }
bool in_flight(AcquireMachine::State s) {
  using S = AcquireMachine::State;
  return s == S::attempting || s == S::reading || s == S::checking || s == S::withdrawing ||
         s == S::reading_floor || s == S::checking_head || s == S::dropping_head ||
         s == S::parked;
}
}  // namespace

AcquireMachine::Actions AcquireMachine::resume(const E& e) {
  Actions out;
  if (state_ == State::done) {
    late(out, e);
    return out;
  }
  switch (e.kind) {
    case E::Kind::start:
      if (state_ != State::idle) break;
      one_shot_ = e.wait <= Nanos{0};
      // A wait ends at its deadline; one attempt is bounded by the settle timeout alone.
      if (one_shot_) {
        arm(out, T::settle, opts_.settle_timeout);
      } else {
        arm(out, T::deadline, e.wait);
      }
      if (e.behind) {
        state_ = State::behind;  // Event::wake when the waiter ahead is done
      } else if (e.taken && opts_.park && !one_shot_ && !opts_.fair && !opts_.shared &&
                 !opts_.upgrade) {
        // An attempt could only lose (and move the holder set, waking its trackers): read and
        // queue instead. Wrong (the parked block lost, or its lease is over already), the read
        // finds the lock free and we attempt then: one read more.
        read(out, false);
      } else {
        attempt(out);
      }
      break;

    case E::Kind::not_sent:
      if (state_ == State::parked) {
        // No parking connection to use: wait as any elected waiter does (its backstop is
        // armed), or attempt now if a push came meanwhile.
        const bool pushed = unpark_armed_;
        if (unpark_armed_) disarm(out, T::unpark);
        unpark_armed_ = false;
        if (leaving_) {
          finish(out, give_up_);  // nothing was written
        } else if (pushed) {
          disarm(out, T::backstop);
          attempt(out);
        } else {
          state_ = State::waiting;
        }
        break;
      }
      if (state_ != State::attempting && state_ != State::reading && state_ != State::checking &&
          state_ != State::checking_head) {
        break;
      }
      if (leaving_) {
        finish(out, give_up_);  // nothing was written: nothing of ours is there
      } else {
        state_ = State::held;  // even one attempt: it was not made yet
        out.add(A::Kind::hold);
      }
      break;

    case E::Kind::granted:
      if (!takes_attempt_outcome(out)) break;
      if (leaving_) {
        withdraw_then(out, give_up_);  // the caller gave up: the late grant is withdrawn
      } else {
        finish(out, {}, Because::told, e.token);
      }
      break;

    case E::Kind::unusable_grant:
      if (!takes_attempt_outcome(out)) break;
      if (leaving_) {
        withdraw_then(out, give_up_);
      } else if (one_shot_ && (e.retry == Retry::once_vouched || e.retry == Retry::polled)) {
        // One attempt: no waiting for what it lacked.
        withdraw_then(out, e.error, Because::told_words);
      } else {
        // A floor or a token is the client's own business: even one attempt is made again.
        withdraw_then(out, {});
        retry_ = e.retry;
      }
      break;

    case E::Kind::contended:
      if (!takes_attempt_outcome(out)) break;
      // The block wrote our claim before it lost: it is removed before the answer, or by the
      // wait block that follows (its HDEL).
      if (leaving_) {
        withdraw_then(out, give_up_);
      } else if (one_shot_) {
        withdraw_then(out, Errc::busy);  // HDEL of our field, then busy (Wait 0)
      } else {
        read(out, true);  // the loser's HDEL and the tracked read, in one block
      }
      break;

    case E::Kind::already_held:
      if (!takes_attempt_outcome(out)) break;
      finish(out, Errc::already_held);  // even after the wait ended: it is the answer
      break;

    case E::Kind::refused:
      if (state_ != State::reading && !takes_attempt_outcome(out)) break;
      // No claim outlives a failed block: withdraw it, then answer with the server's words
      // (even after the wait ended: they say more than the deadline).
      if (e.may_claim) {
        withdraw_then(out, e.error, Because::told_words);
      } else {
        finish(out, e.error, Because::told_words);
      }
      break;

    case E::Kind::transport:
      if (state_ != State::reading && state_ != State::checking &&
          state_ != State::checking_head && !takes_attempt_outcome(out)) {
        break;
      }
      if (e.maybe_applied) {
        // Never replayed: the claim it may have left is removed first; then a fresh attempt
        // within the wait, or the answer.
        if (leaving_) {
          withdraw_then(out, give_up_);
        } else if (one_shot_) {
          withdraw_then(out, Errc::outcome_unknown);
          pending_because_ = Because::dropped_nothing_left;
          unanswered_ = e.error;
          unanswered_because_ = Because::connection_failed;
        } else {
          withdraw_then(out, {});
          retry_ = Retry::at_once;
          unanswered_ = e.error;
          unanswered_because_ = Because::connection_failed;
        }
        break;
      }
      if (!e.retryable || one_shot_ || leaving_) {
        finish(out, leaving_ ? give_up_ : e.error);
      } else {
        attempt(out);  // nothing applied: again once the connection is back (held till then)
      }
      break;

    case E::Kind::wait_read:
      if (state_ != State::reading) break;
      if (leaving_) {
        finish(out, give_up_);  // the block removed our claim; the queue entry is handed on
        break;
      }
      // A shared waiter is in no queue: it acts on every push, as the elected one does.
      rank_ = opts_.shared || opts_.upgrade ? 0 : e.rank;
      tracked_ = e.tracked;
      switch (e.holders) {
        case H::free:
        case H::lease_gone:       // (what an attempt's read says, not a wait block's: the
        case H::other_upgrading:  // attempt reads it again)
          attempt(out);
          break;
        case H::mine:
          finish(out, Errc::already_held);
          break;
        case H::held:
          // The elected waiter's backstop is the holder set's expiry; the others' their
          // doorbell's (it expires, or rings, when their place changes). A fair head keeps its
          // doorbell alive while it waits (else it would count as vanished).
          if (rank_ != 0) {
            wait(out, e.doorbell_pttl, e.tracked);
          } else if (opts_.fair || opts_.upgrade) {
            wait(out, e.pttl > 0 ? std::min(e.pttl, e.doorbell_pttl) : e.doorbell_pttl,
                 e.tracked);
          } else if (opts_.park && e.tracked && !one_shot_) {
            park(out, e.pttl);
          } else {
            wait(out, e.pttl, e.tracked);
          }
          break;
        case H::shared_only:
          if (rank_ == 0) {
            state_ = State::checking;  // shared leases that are over hold up nobody
            out.add(A::Kind::check_stale);
          } else {
            wait(out, e.doorbell_pttl, e.tracked);
          }
          break;
        case H::not_ours:
          // Fair: not ours to take while someone ahead lives. The backup checks the first;
          // the others wait for their doorbell (a leaving first rings the two now first).
          if (rank_ == 1) {
            check_head(out, e.doorbell_pttl, e.tracked);
          } else {
            wait(out, e.doorbell_pttl, e.tracked);
          }
          break;
      }
      break;

    case E::Kind::stale_checked:
      if (state_ != State::checking) break;
      if (leaving_) {
        finish(out, give_up_);  // a read changes nothing: nothing of ours is there
      } else {
        wait(out, e.pttl, tracked_);  // until the soonest lease ends (or a push)
      }
      break;

    case E::Kind::stale_removed:
      if (state_ != State::checking) break;
      if (leaving_) {
        finish(out, give_up_);
      } else {
        attempt(out);
      }
      break;

    case E::Kind::holders_push:
      // Pushes are ignored while a step is in flight: its reply already saw the change, or the
      // push after it wakes us. Only the elected waiter acts at once; the backup after a grace
      // (in case the elected one is gone); the others wait for their doorbell.
      if (state_ == State::parked && !unpark_armed_ && !unparked_ && !leaving_) {
        unpark_armed_ = true;
        arm(out, T::unpark, kParkedPushGrace);
        break;
      }
      if (state_ != State::waiting) break;
      if (rank_ == 0) {
        disarm(out, T::backstop);
        attempt(out);
      } else if (rank_ == 1 && !grace_armed_) {
        grace_armed_ = true;
        arm(out, T::grace, kGrace);
      }
      break;

    case E::Kind::doorbell_push:
      if (state_ == State::parked) {
        unpark(out);  // our doorbell expired (or rang): the block runs, then we read again
        break;
      }
      if (state_ != State::waiting) break;
      disarm_waiting(out);
      read(out, false);  // our place changed: read it again
      break;

    case E::Kind::timer:
      switch (e.timer) {
        case T::deadline:
          end_wait(out, Errc::timed_out);
          break;
        case T::settle:
          if (state_ == State::held) {
            finish(out, Errc::connection, Because::not_connected);  // nothing was written
            break;
          }
          if (!in_flight(state_)) break;
          if (state_ == State::parked) disarm(out, T::backstop);
          // The server stayed silent: the caller is told; a late reply is still handled, and
          // our place in the queue is handed on once it is (the driver moves on then).
          step_outlived_answer_ = true;
          finish(out, Errc::outcome_unknown, Because::no_reply);
          break;
        case T::backstop:
          if (state_ == State::parked) {
            unpark(out);  // the holder set's expiry, or a push that never came
            break;
          }
          if (state_ != State::waiting) break;
          grace_armed_ = false;
          disarm(out, T::grace);
          // The holder set's expiry (the elected waiter), a lost push, or a poll; the others
          // read their place again (their doorbell expired or its push was lost).
          if (rank_ == 0) {
            attempt(out);
          } else {
            read(out, false);
          }
          break;
        case T::unpark:
          unpark_armed_ = false;
          if (state_ == State::parked) unpark(out);
          break;
        case T::grace:
          grace_armed_ = false;
          if (state_ == State::waiting) {
            disarm(out, T::backstop);
            read(out, false);  // the elected waiter did not act: see for ourselves
          }
          break;
      }
      break;

    case E::Kind::withdrawn: {
      if (state_ != State::withdrawing) break;
      if (!e.absent) {
        // Nothing says the claim is gone: the caller is told what may be left.
        retry_.reset();
        if (leaving_) {
          finish(out, Errc::outcome_unknown, Because::withdrawal_unanswered);
        } else {
          finish(out, unanswered_, unanswered_because_);
        }
        break;
      }
      if (!retry_) {
        finish(out, pending_, pending_because_);
        break;
      }
      const Retry next = *retry_;
      retry_.reset();
      if (leaving_) {
        finish(out, give_up_);  // the wait ended during the removal: no retry
        break;
      }
      switch (next) {
        case Retry::at_once:
        case Retry::once_vouched:  // the driver holds the attempt until the vouch is back
          attempt(out);
          break;
        case Retry::fresh_floor:
          state_ = State::reading_floor;
          out.add(A::Kind::read_floor);
          break;
        case Retry::polled:
          wait(out, 0, false);  // as without pushes: a poll, then a look
          break;
      }
      break;
    }

    case E::Kind::wake:
      if (state_ == State::waiting) {
        disarm_waiting(out);
        attempt(out);
      } else if (state_ == State::held || state_ == State::behind) {
        attempt(out);
      }
      break;

    case E::Kind::cancel:
      end_wait(out, Errc::cancelled);
      break;

    case E::Kind::floor_read:
      if (state_ != State::reading_floor) break;
      if (leaving_) {
        finish(out, give_up_);  // a TIME read leaves nothing behind
      } else {
        attempt(out);
      }
      break;

    case E::Kind::watched_read:
      if (state_ != State::attempting) break;
      if (e.holders == H::free && e.head_is_us && !leaving_) {
        out.add(A::Kind::send_watched_grant);  // under the read's WATCH
        break;
      }
      if (opts_.upgrade && (e.holders == H::held || e.holders == H::shared_only) && !leaving_ &&
          !one_shot_) {
        state_ = State::reading;  // our intent declared, under the same WATCH
        out.add(A::Kind::declare_and_read);
        break;
      }
      out.add(A::Kind::unwatch);
      // The read wrote nothing of ours (a ticket burnt at most).
      if (e.holders == H::mine) {
        finish(out, Errc::already_held);  // even after the wait ended: it is the answer
      } else if (e.holders == H::lease_gone) {
        finish(out, leaving_ ? give_up_ : Errc::not_held, Because::told_words);
      } else if (e.holders == H::other_upgrading) {
        finish(out, leaving_ ? give_up_ : Errc::upgrade_conflict, Because::told_words);
      } else if (leaving_) {
        finish(out, give_up_);
      } else if (one_shot_) {
        finish(out, Errc::busy);
      } else if (e.holders == H::free) {
        check_head(out, -2, e.tracked);  // free, with someone ahead: is it still there?
      } else {
        read(out, false);  // held: join the queue and wait, as any waiter does
      }
      break;

    case E::Kind::aborted:
      // The grant's EXEC, or an upgrade's intent (declared under the read's WATCH).
      if (state_ != State::attempting && !(opts_.upgrade && state_ == State::reading)) break;
      if (leaving_) {
        finish(out, give_up_);  // nothing ran
      } else {
        attempt(out);  // someone changed the keys between our read and EXEC: read again
      }
      break;

    case E::Kind::head_checked:
      if (state_ != State::checking_head) break;
      if (leaving_) {
        finish(out, give_up_);  // a read leaves nothing behind
      } else if (e.vanished) {
        // No doorbell: out of the queue, then our turn may come. A live head that was
        // re-arming re-joins at its own ticket.
        state_ = State::dropping_head;
        out.add(A::Kind::drop_head);
      } else if (e.queued) {
        // Queued already: our doorbell, or until the head's would run out.
        const std::int64_t until = e.pttl > 0 ? e.pttl : opts_.fair_doorbell_ms;
        wait(out, own_doorbell_pttl_ > 0 ? std::min(until, own_doorbell_pttl_) : until,
             head_tracked_);
      } else {
        read(out, false);  // join the queue behind it
      }
      break;

    case E::Kind::consumed:
      if (state_ != State::attempting || !opts_.upgrade || !leaving_) break;
      leaving_ = false;
      give_up_ = Errc::ok;
      disarm(out, T::settle);  // nothing to settle: the grant is the answer
      break;

    case E::Kind::head_dropped:
      if (state_ != State::dropping_head) break;
      if (leaving_) {
        finish(out, give_up_);
      } else {
        attempt(out);
      }
      break;
  }
  return out;
}

bool AcquireMachine::step_in_flight() const noexcept { return in_flight(state_); }

// A reply after the answer (the settle bound ran out first): whatever it may have left of ours
// is removed; nothing else follows.
void AcquireMachine::late(Actions& out, const E& e) {
  if (!step_outlived_answer_) return;  // answered with the step's own outcome: nothing is late
  const bool may_have_left_a_claim =
      e.kind == E::Kind::granted || e.kind == E::Kind::unusable_grant ||
      e.kind == E::Kind::contended || (e.kind == E::Kind::refused && e.may_claim) ||
      (e.kind == E::Kind::transport && e.maybe_applied);
  if (may_have_left_a_claim) out.add(A::Kind::send_withdraw);
}

void AcquireMachine::attempt(Actions& out) {
  state_ = State::attempting;
  out.add(A::Kind::send_attempt);
}

void AcquireMachine::read(Actions& out, bool with_hdel) {
  state_ = State::reading;
  // Queued from the moment the block is written, whatever its reply (a shared lease's wait
  // block joins no queue).
  if (!opts_.shared && !opts_.upgrade) queued_ = true;
  out.add(A::Kind::send_wait_read).with_hdel = with_hdel;
}

// Waits for a push (tracked) or, where the server gave us no tracking, polls: the backstop is
// the known expiry (+1 ms: expiry pushes can lag active expiry), or a second when there is
// none, and a poll comes sooner — never a tight loop.
void AcquireMachine::wait(Actions& out, std::int64_t pttl_ms, bool tracked) {
  state_ = State::waiting;
  waited_ = true;
  A& a = arm(out, T::backstop,
              pttl_ms > 0 ? Nanos(std::chrono::milliseconds(pttl_ms + 1))
                          : Nanos(std::chrono::seconds(1)));
  if (tracked) {
    polls_ = 0;
  } else {
    a.poll_index = polls_++;
  }
}

void AcquireMachine::check_head(Actions& out, std::int64_t own_doorbell_pttl, bool tracked) {
  state_ = State::checking_head;
  own_doorbell_pttl_ = own_doorbell_pttl;
  head_tracked_ = tracked;
  out.add(A::Kind::check_head);
}

// The elected waiter parks its acquire block behind a blocking pop (Options::park). Its
// backstop stays as a waiting elected waiter's: the holder set's expiry.
void AcquireMachine::park(Actions& out, std::int64_t pttl_ms) {
  state_ = State::parked;
  waited_ = true;
  unpark_armed_ = false;
  unparked_ = false;
  polls_ = 0;
  arm(out, T::backstop,
      pttl_ms > 0 ? Nanos(std::chrono::milliseconds(pttl_ms + 1))
                  : Nanos(std::chrono::seconds(1)));
  out.add(A::Kind::send_park);
}

// The parked block is to run now: unblocked once (its outcome comes as an attempt's).
void AcquireMachine::unpark(Actions& out) {
  if (unparked_) return;
  unparked_ = true;
  out.add(A::Kind::unpark);
}

bool AcquireMachine::takes_attempt_outcome(Actions& out) {
  if (state_ == State::attempting) return true;
  if (state_ != State::parked) return false;
  disarm(out, T::backstop);
  if (unpark_armed_) disarm(out, T::unpark);
  unpark_armed_ = false;
  state_ = State::attempting;  // the outcome is handled as the attempt's
  return true;
}

void AcquireMachine::disarm_waiting(Actions& out) {
  disarm(out, T::backstop);
  disarm(out, T::grace);
  grace_armed_ = false;
}

void AcquireMachine::finish(Actions& out, Errc ec, Because because,
                            std::uint64_t token) {
  if (!one_shot_) disarm(out, T::deadline);
  if (leaving_ || one_shot_) disarm(out, T::settle);
  A& a = out.add(A::Kind::answer);
  a.error = ec;
  a.because = because;
  a.token = token;
  // Off the hand-off's critical path: after the answer, while a grant is held.
  if (queued_ && !step_outlived_answer_) out.add(A::Kind::leave_queue);
  state_ = State::done;
}

// Removes our claim, then answers `ec` (absent) or outcome_unknown (no reply to the removal);
// the callers adjust what follows (a retry instead, another reason).
void AcquireMachine::withdraw_then(Actions& out, Errc ec, Because because) {
  state_ = State::withdrawing;
  pending_ = ec;
  pending_because_ = because;
  unanswered_ = Errc::outcome_unknown;
  unanswered_because_ = Because::withdrawal_unanswered;
  out.add(A::Kind::send_withdraw);
}

void AcquireMachine::end_wait(Actions& out, Errc why) {
  if (in_flight(state_)) {
    // A step in flight: no answer until its outcome is known (bounded by settle).
    if (leaving_) return;
    leaving_ = true;
    give_up_ = why;
    arm(out, T::settle, opts_.settle_timeout);
    if (state_ == State::parked) {
      if (unpark_armed_) disarm(out, T::unpark);
      unpark_armed_ = false;
      unpark(out);  // the block runs now; its outcome is settled as any attempt's
    }
    return;
  }
  switch (state_) {
    case State::waiting:
      disarm_waiting(out);
      finish(out, why);  // nothing of ours on the server but the queue entry, handed on
      return;
    case State::held:
    case State::behind:
      // Nothing was written. A wait that never saw the lock held did not fail for the lock
      // but, maybe, for the connection: the driver knows.
      finish(out, why, why == Errc::timed_out && !waited_ ? Because::not_connected : Because::told);
      return;
    default:
      return;  // idle, done
  }
}

}  // namespace lockwire::lock::detail
