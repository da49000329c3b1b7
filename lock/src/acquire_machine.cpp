// The exclusive acquire/wait machine (acquire_machine.hpp): every transition of docs/protocol.md,
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
constexpr std::chrono::milliseconds kMs{1};

A arm(T t, std::chrono::nanoseconds after) {
  A a;
  a.kind = A::Kind::arm;
  a.timer = t;
  a.after = after;
  return a;
}
A disarm(T t) {
  A a;
  a.kind = A::Kind::disarm;
  a.timer = t;
  return a;
}
A plain(A::Kind k) {
  A a;
  a.kind = k;
  return a;
}
}  // namespace

std::vector<A> AcquireMachine::resume(const E& e) {
  std::vector<A> out;
  switch (e.kind) {
    case E::Kind::start:
      if (state_ != State::idle) break;
      one_shot_ = e.wait <= Nanos{0};
      // A wait ends at its deadline; one attempt is bounded by the settle timeout alone.
      out.push_back(one_shot_ ? arm(T::settle, opts_.settle_timeout) : arm(T::deadline, e.wait));
      attempt(out);
      break;

    case E::Kind::granted:
      if (state_ == State::done) {
        // A grant that came after the answer (outcome_unknown): it must not stay.
        out.push_back(plain(A::Kind::send_withdraw));
        break;
      }
      if (state_ != State::attempting) break;
      if (leaving_) {
        withdraw_then(out, give_up_);  // the caller gave up: the late grant is withdrawn
      } else {
        finish(out, {}, e.token);
      }
      break;

    case E::Kind::unusable_grant:
      if (state_ == State::done) {
        out.push_back(plain(A::Kind::send_withdraw));  // after the answer: it must not stay
        break;
      }
      if (state_ != State::attempting) break;
      if (leaving_) {
        withdraw_then(out, give_up_);
      } else if (one_shot_ && (e.retry == Retry::once_vouched || e.retry == Retry::polled)) {
        withdraw_then(out, e.error, e.words);  // one attempt: no waiting for what it lacked
      } else {
        // A floor or a token is the client's own business: even one attempt is made again.
        state_ = State::withdrawing;
        retry_ = e.retry;
        out.push_back(plain(A::Kind::send_withdraw));
      }
      break;

    case E::Kind::contended:
      if (state_ != State::attempting) break;
      if (leaving_) {
        finish(out, give_up_);  // our claim lost to the holder: nothing of ours is there
      } else if (one_shot_) {
        withdraw_then(out, Errc::timed_out);  // HDEL of our field, then timed_out (Wait 0)
      } else {
        read(out, true);  // the loser's HDEL and the tracked read, in one block
      }
      break;

    case E::Kind::already_held:
      if (state_ != State::attempting) break;
      finish(out, leaving_ ? give_up_ : std::error_code(Errc::already_held));
      break;

    case E::Kind::refused:
      if (state_ != State::attempting && state_ != State::reading) break;
      // No claim outlives a failed block: withdraw it, then answer with the server's words.
      withdraw_then(out, leaving_ ? give_up_ : e.error, leaving_ ? std::string() : e.words);
      break;

    case E::Kind::transport:
      if (state_ != State::attempting && state_ != State::reading) break;
      if (leaving_ || one_shot_) {
        const std::error_code why =
            leaving_ ? give_up_
                     : std::error_code(e.maybe_applied ? Errc::outcome_unknown : Errc::connection);
        if (e.maybe_applied) {
          withdraw_then(out, why);
        } else {
          finish(out, why);
        }
        break;
      }
      // Never replayed: the claim it may have left is removed (queued behind the reconnect),
      // and a fresh attempt follows within the wait.
      if (e.maybe_applied) out.push_back(plain(A::Kind::send_withdraw));
      attempt(out);
      break;

    case E::Kind::wait_read:
      if (state_ != State::reading) break;
      if (leaving_) {
        finish(out, give_up_);  // the block removed our claim; the queue entry is handed on
        break;
      }
      if (!e.blocked || e.pttl == -2) {
        attempt(out);  // free (or its holder set just went): try again at once
        break;
      }
      state_ = State::waiting;
      rank_ = e.rank;
      polling_ = !e.tracked;
      if (polling_) {
        out.push_back(arm(T::backstop, poll_delay()));
        ++polls_;
      } else {
        polls_ = 0;
        // The first waiter's backstop is the holder set's expiry; the others' their doorbell's.
        const std::int64_t ms = rank_ == 0 ? e.pttl : e.doorbell_pttl;
        out.push_back(arm(T::backstop, std::max<std::int64_t>(ms, 0) * kMs + kMs));
      }
      break;

    case E::Kind::holders_push:
      // Pushes are ignored while a step is in flight: its reply already saw the change, or the
      // push after it wakes us. Only the elected waiter acts at once; the backup after a grace.
      if (state_ != State::waiting || polling_) break;
      if (rank_ == 0) {
        out.push_back(disarm(T::backstop));
        attempt(out);
      } else if (rank_ == 1) {
        out.push_back(arm(T::grace, kGrace));
      }
      break;

    case E::Kind::doorbell_push:
      if (state_ != State::waiting) break;
      out.push_back(disarm(T::backstop));
      out.push_back(disarm(T::grace));
      read(out, false);  // our place changed: read it again
      break;

    case E::Kind::timer:
      switch (e.timer) {
        case T::deadline:
          end_wait(out, Errc::timed_out);
          break;
        case T::settle:
          if (state_ == State::done || state_ == State::waiting || state_ == State::idle) break;
          if (state_ == State::parked || state_ == State::reading_floor) {
            finish(out, Errc::timed_out);  // a one-shot's bound: nothing of ours is left
            break;
          }
          // The server stayed silent: the caller is told; a late reply is still handled.
          out.push_back(plain(A::Kind::answer));
          out.back().error = Errc::outcome_unknown;
          out.back().words = "a claim may remain until its TTL runs out";
          if (queued_) out.push_back(plain(A::Kind::leave_queue));
          state_ = State::done;
          break;
        case T::backstop:
          if (state_ != State::waiting) break;
          out.push_back(disarm(T::grace));
          if (rank_ == 0 || polling_) {
            attempt(out);
          } else {
            read(out, false);
          }
          break;
        case T::grace:
          if (state_ == State::waiting) {
            out.push_back(disarm(T::backstop));
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
        finish(out, Errc::outcome_unknown, 0,
               "the withdrawal of our claim got no reply; a claim may remain until its TTL runs "
               "out");
        break;
      }
      if (!retry_) {
        finish(out, pending_, 0, std::move(pending_words_));
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
          attempt(out);
          break;
        case Retry::fresh_floor:
          state_ = State::reading_floor;
          out.push_back(plain(A::Kind::read_floor));
          break;
        case Retry::once_vouched:
          state_ = State::parked;
          break;
        case Retry::polled:
          state_ = State::waiting;
          polling_ = true;  // until the next wait block says whether pushes come
          out.push_back(arm(T::backstop, poll_delay()));
          ++polls_;
          break;
      }
      break;
    }

    case E::Kind::reconnected:
      // Tracking is new: every waiter re-checks (a push may have been lost with the old one).
      if (state_ != State::waiting) break;
      out.push_back(disarm(T::backstop));
      out.push_back(disarm(T::grace));
      read(out, false);
      break;

    case E::Kind::cancel:
      end_wait(out, Errc::cancelled);
      break;

    case E::Kind::vouched:
      if (state_ == State::parked) attempt(out);
      break;

    case E::Kind::floor_read:
      if (state_ == State::reading_floor) attempt(out);
      break;
  }
  return out;
}

void AcquireMachine::attempt(std::vector<A>& out) {
  state_ = State::attempting;
  out.push_back(plain(A::Kind::send_attempt));
}

void AcquireMachine::read(std::vector<A>& out, bool with_hdel) {
  state_ = State::reading;
  queued_ = true;  // queued from the moment the block is written, whatever its reply
  A a = plain(A::Kind::send_wait_read);
  a.with_hdel = with_hdel;
  out.push_back(std::move(a));
}

void AcquireMachine::finish(std::vector<A>& out, std::error_code ec, std::uint64_t token,
                            std::string words) {
  if (!one_shot_) out.push_back(disarm(T::deadline));
  if (leaving_ || one_shot_) out.push_back(disarm(T::settle));
  A a = plain(A::Kind::answer);
  a.error = ec;
  a.token = token;
  a.words = std::move(words);
  out.push_back(std::move(a));
  // Off the hand-off's critical path: after the answer, while a grant is held.
  if (queued_) out.push_back(plain(A::Kind::leave_queue));
  state_ = State::done;
}

void AcquireMachine::withdraw_then(std::vector<A>& out, std::error_code ec, std::string words) {
  state_ = State::withdrawing;
  pending_ = ec;
  pending_words_ = std::move(words);
  out.push_back(plain(A::Kind::send_withdraw));
}

void AcquireMachine::end_wait(std::vector<A>& out, std::error_code why) {
  switch (state_) {
    case State::attempting:
    case State::reading:
      // A step in flight: no answer until its outcome is known (bounded by settle).
      if (leaving_) return;
      leaving_ = true;
      give_up_ = why;
      out.push_back(arm(T::settle, opts_.settle_timeout));
      return;
    case State::waiting:
      out.push_back(disarm(T::backstop));
      out.push_back(disarm(T::grace));
      finish(out, why);  // nothing of ours on the server but the queue entry, handed on
      return;
    case State::withdrawing:
      // Withdrawing an unusable grant: answered once the removal is done, not tried again.
      if (retry_ && !leaving_) {
        leaving_ = true;
        give_up_ = why;
        out.push_back(arm(T::settle, opts_.settle_timeout));
      }
      return;
    case State::parked:
    case State::reading_floor:
      finish(out, why);  // nothing of ours in flight (a TIME read leaves nothing behind)
      return;
    case State::idle:
    case State::done:
      return;
  }
}

std::chrono::nanoseconds AcquireMachine::poll_delay() const {
  Nanos d = opts_.poll_initial;
  for (int i = 0; i < polls_ && d < opts_.poll_max; ++i) d *= 2;
  return std::min(d, opts_.poll_max);  // jitter is the driver's (it owns the randomness)
}

}  // namespace lockwire::lock::detail
