// The exclusive acquire and its wait (docs/protocol.md, *Waiting*, *Wait 0*, *Deadline during
// an in-flight command*, *No claim outlives a failed block*, *Lost reply*) as a machine without
// I/O, in the style of loop/src/handshake.hpp: resume(event) -> actions. The driver sends what
// it is told, arms the timers it is told, and feeds replies, pushes and timer expiries back;
// nothing here touches a connection, a timer, a clock or a random number, so tests drive it
// with events alone.
//
// It covers one waiter of one client (Client::Core drives it: acquire_driver.cpp),
// from its place in the client's local queue for the resource to the answer, and a grant the
// driver will not hand over — the vouch ran out in flight, too few replicas acknowledged it,
// its token is not above a fresh floor: withdrawn, then tried again within the wait once what
// it lacked is there, or answered. In fair order (Options::fair; docs/protocol.md, *Fair
// order*) an attempt is a WATCHed read, then the grant only when nobody is ahead in the wait
// queue; a head that may have vanished is checked (its doorbell) and dropped. A shared lease
// (Options::shared; a semaphore's permit too) is a WATCHed read and a grant as well, joins no
// queue and acts on every push of the holder set. An upgrade (Options::upgrade) is a WATCHed
// read too; while other readers hold the resource it declares its intent and waits, and its
// grant stands even after the wait ended (Event::consumed).
#pragma once

#include <array>
#include <cassert>
#include <chrono>
#include <cstring>
#include <new>
#include <cstdint>
#include <optional>
#include <type_traits>

#include "lockwire/lock/error.hpp"

namespace lockwire::lock::detail {

class AcquireMachine {
 public:
  using Nanos = std::chrono::nanoseconds;

  enum class Timer : std::uint8_t { deadline, backstop, grace, settle, unpark };

  // What an unusable grant needs before the next attempt (Event::retry).
  enum class Retry : std::uint8_t {
    at_once,       // nothing: attempt again
    fresh_floor,   // the fencing floor was too old: read the server's TIME first
    once_vouched,  // the vouch ran out: attempt (held by the driver until it is back); a
                   // one-shot answers instead
    polled,        // too few replicas: wait a poll delay (a one-shot answers instead)
  };

  // Why an answer is what it is, when the machine concluded it (the driver words it with what
  // it knows: the resource, the owner, the connection's last words).
  enum class Because : std::uint8_t {
    told,                   // the error an event brought, or the machine's own (none: granted)
    told_words,             // the error of an event that brought words (refused, a one-shot's
                            // unusable grant): the driver keeps them beside the waiter
    withdrawal_unanswered,  // the removal of our claim got no reply: a claim may remain
    no_reply,               // the step got no reply within the settle bound
    not_connected,          // nothing could be written, and the lock was never seen held
    dropped_nothing_left,   // the connection dropped during the attempt; the removal was answered
    connection_failed,      // the connection dropped, and so did the removal of our claim
  };

  // What the wait block read in the holder set.
  enum class Holders : std::uint8_t {
    free,         // nobody: attempt
    held,         // another owner holds it exclusively
    mine,         // this owner holds it already
    shared_only,  // shared holders only: their leases may be over (the elected one checks)
    not_ours,     // fair: free (or shared holders only), but another waiter is first in line
    lease_gone,       // upgrade: no live shared lease of ours to promote
    other_upgrading,  // upgrade: another reader's intent to upgrade is declared
  };

  struct Event {
    enum class Kind : std::uint8_t {
      start,           // the caller asked (wait: 0 = one attempt; `behind`: not our turn yet)
      not_sent,        // the attempt was not written: no usable connection yet (held)
      granted,         // the acquire block's reply: ours, with `token`
      unusable_grant,  // granted, not to be handed over: `retry`; a one-shot's `error` (words)
      contended,       // the acquire block's reply: someone holds it (our claim lost)
      already_held,    // the acquire block's reply: this owner already holds it
      refused,         // an error reply (words: told_words); `may_claim`: it may have left a claim
      transport,       // the step's connection failed; `maybe_applied`: it was written
      wait_read,       // the wait block's reply (rank, pttl, doorbell_pttl, tracked, holders)
      stale_checked,   // the shared holders' leases all live: wait until `pttl`
      stale_removed,   // the shared holders whose lease was over are removed (or tried)
      withdrawn,       // the removal of our claim ended; `absent`: answered, nothing is left
      holders_push,    // an invalidate push of the holder set P{R}
      doorbell_push,   // an invalidate push of our doorbell P{R}:w:<owner>
      timer,           // `timer` ran out
      wake,            // our turn, a ready connection, the vouch back: held or waiting attempts
      cancel,          // Client::cancel
      floor_read,      // the TIME read for a fresh floor ended (read or not: attempt again)
      // Fair order and shared leases: an attempt is a WATCHed read, then a grant under it.
      watched_read,  // that read: `holders` free, held or mine; `head_is_us` (fair): nobody
                     // is ahead in the wait queue (always, for a shared lease)
      aborted,       // the grant under that WATCH aborted (the keys changed): read again
      // Fair order:
      head_checked,  // the first waiter's doorbell: `vanished` (gone), else its `pttl`;
                     // `queued`: we are in the wait queue already
      head_dropped,  // the vanished first waiter was removed from the queue (or tried)
      // Upgrade:
      consumed,  // the promotion was granted: it stands even if the wait ended meanwhile (it
                 // replaced the shared lease; undoing it would leave the caller neither)
    };
    // Eight-byte fields first, flags last: small, trivially copied (no words: the driver
    // keeps an event's words beside the waiter, see Because::told_words).
    Nanos wait{0};
    std::uint64_t token = 0;
    // wait_read (pttl: also stale_checked):
    std::int64_t rank = -1;  // 0 elected, 1 backup, 2 further back
    std::int64_t pttl = -2;  // of P{R}
    std::int64_t doorbell_pttl = -2;
    // refused, unusable_grant: the error to answer with; transport: the connection's. The
    // lock's own codes only (the driver maps the connection's), so no error_code is built.
    Errc error = Errc::ok;
    Kind kind = Kind::start;
    bool behind = false;  // start: another waiter of this client goes first
    // start: our own release has just woken a parked waiter (its COPY made a wake token), whose
    // acquire block ran in the server right behind it: the lock is taken, so an exclusive
    // waiter in arrival order joins the wait with its first block instead of losing an attempt.
    bool taken = false;
    bool may_claim = true;  // refused
    bool maybe_applied = false;  // transport
    bool retryable = true;       // transport: the connection may come back
    bool absent = true;  // withdrawn: false when the removal got no reply
    Retry retry = Retry::at_once;
    bool tracked = true;  // wait_read: CLIENT CACHING accepted (else: poll)
    Holders holders = Holders::held;  // wait_read
    Timer timer = Timer::deadline;
    bool head_is_us = false;  // watched_read
    bool vanished = false;    // head_checked
    bool queued = false;      // head_checked
  };

  struct Action {
    enum class Kind : std::uint8_t {
      send_attempt,    // the exclusive acquire block
      send_wait_read,  // the exclusive wait block (with_hdel: remove our losing claim first)
      check_stale,     // read the shared holders' leases, remove those that are over
      send_withdraw,   // HDEL of our own field (a claim or grant that must not stay)
      read_floor,      // TIME on this connection: a fresh fencing floor
      hold,            // the attempt waits for a ready connection (then Event::wake)
      leave_queue,     // ZREM from P{R}:q and ring the next two doorbells
      arm,             // start `timer` for `after`
      disarm,          // stop `timer`
      answer,          // tell the caller: `error` (none: granted with `token`), `because`
      // Fair order and shared leases:
      send_watched_grant,  // the grant block under the read's WATCH
      unwatch,          // no grant: the read's WATCH is released
      // Fair order:
      check_head,       // read the doorbell of the waiter first in line
      drop_head,        // remove that waiter from the queue: it vanished
      // Upgrade:
      declare_and_read,  // our intent and the tracked reads of the wait, under the read's WATCH
      // Parked hand-off (Options::park):
      send_park,  // on the parking connection: arm, the blocking pop, then the acquire block
      unpark,     // CLIENT UNBLOCK of the parking connection: its acquire block runs now
    };
    Kind kind = Kind::send_attempt;
    Because because = Because::told;
    bool with_hdel = false;
    Timer timer = Timer::deadline;
    // arm backstop: >= 0 when we poll (no push wake-ups): then at most the poll_index-th poll's
    // delay (poll_initial * 2^n, capped, jittered by the driver, which owns the randomness).
    int poll_index = -1;
    Nanos after{0};
    Errc error = Errc::ok;
    std::uint64_t token = 0;
    friend bool operator==(const Action&, const Action&) = default;
  };
  // Copied and dropped as plain bytes: a resume and its driver's loop pay nothing per action
  // beyond filling it in.
  static_assert(std::is_trivially_copyable_v<Event> && std::is_trivially_destructible_v<Event>);
  static_assert(std::is_trivially_copyable_v<Action> && std::is_trivially_destructible_v<Action>);

  enum class State : std::uint8_t {
    idle,           // before start
    behind,         // another waiter of this client for the resource goes first
    attempting,     // the acquire block in flight
    reading,        // the wait block in flight
    checking,       // the shared holders' leases read (and the over ones removed)
    waiting,        // nothing in flight: a push, a doorbell or a timer wakes us
    withdrawing,    // the removal of our claim in flight; then the answer (or a retry)
    reading_floor,  // an unusable grant withdrawn: TIME in flight, then an attempt
    checking_head,  // fair: the doorbell of the waiter first in line is read
    dropping_head,  // fair: that waiter vanished; its removal from the queue in flight
    parked,         // the elected waiter's acquire block waits in the server behind a blocking
                    // pop: a release's wake token runs it (Options::park); an attempt in flight
    held,           // the attempt is not written: no usable connection yet
    done,           // answered
  };

  struct Options {
    Nanos settle_timeout = std::chrono::seconds(1);
    bool fair = false;    // grants follow the wait queue (LockRequest::fair)
    bool shared = false;  // a shared lease (or a semaphore's permit): no queue, no doorbell
    bool upgrade = false;  // a shared lease promoted in place: no queue; its intent, declared
                           // while it waits, bounds the wait as a fair head's doorbell does
    // How long a fair waiter's doorbell lives at most: a head whose doorbell is alive gets
    // this long to take its turn.
    std::int64_t fair_doorbell_ms = 2000;
    // The elected waiter of an exclusive lock in arrival order parks its acquire block behind
    // a blocking pop on a connection of its own, so that a release's wake token runs it inside
    // the server: a hand-off in one round trip (docs/handoff-one-rtt.md). Where tracking is
    // refused it polls instead.
    bool park = false;
  };
  static constexpr Nanos kGrace = std::chrono::milliseconds(50);
  // A holder-set push while parked: a release that brought a wake token runs our block by
  // itself (its reply is at most moments behind the push); one that did not (an expiry, a
  // release without one) needs an unblock. This long for the reply before unblocking.
  static constexpr Nanos kParkedPushGrace = std::chrono::milliseconds(2);

  // What one event leads to: a few actions, kept inline and constructed only as they are added
  // (a resume allocates nothing, and costs nothing for the slots it leaves unused). Actions are
  // plain bytes (the static_asserts above): nothing to destroy, copied as they are.
  class Actions {
   public:
    static constexpr std::size_t kCapacity = 8;
    Actions() noexcept = default;
    Actions(const Actions& o) noexcept { copy(o); }
    Actions& operator=(const Actions& o) noexcept {
      copy(o);
      return *this;
    }

    // A new action of kind `k` (its other fields as Action defaults them), filled in in place.
    Action& add(Action::Kind k) noexcept {
      assert(size_ < kCapacity);  // the longest transition emits six
      Action* a = new (storage_ + size_ * sizeof(Action)) Action;
      a->kind = k;
      ++size_;
      return *a;
    }
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
    [[nodiscard]] const Action& operator[](std::size_t i) const noexcept { return data()[i]; }
    [[nodiscard]] const Action* begin() const noexcept { return data(); }
    [[nodiscard]] const Action* end() const noexcept { return data() + size_; }

   private:
    const Action* data() const noexcept {
      return std::launder(reinterpret_cast<const Action*>(storage_));
    }
    void copy(const Actions& o) noexcept {
      std::memcpy(storage_, o.storage_, o.size_ * sizeof(Action));
      size_ = o.size_;
    }
    alignas(Action) unsigned char storage_[kCapacity * sizeof(Action)];
    std::size_t size_ = 0;
  };

  AcquireMachine() = default;
  explicit AcquireMachine(Options o) : opts_(o) {}

  [[nodiscard]] Actions resume(const Event& e);

  [[nodiscard]] State state() const noexcept { return state_; }
  // The wait ended (deadline or cancel) with a step in flight: answered once it is settled.
  [[nodiscard]] bool leaving() const noexcept { return leaving_; }
  [[nodiscard]] bool queued() const noexcept { return queued_; }
  [[nodiscard]] std::int64_t rank() const noexcept { return rank_; }
  // A step of ours is on the wire (the answer waits for its outcome, should the wait end).
  [[nodiscard]] bool step_in_flight() const noexcept;
  // Answered by the settle bound with a step in flight: its reply is still to come.
  [[nodiscard]] bool step_outlived_answer() const noexcept { return step_outlived_answer_; }

 private:
  void attempt(Actions& out);
  void read(Actions& out, bool with_hdel);
  void wait(Actions& out, std::int64_t pttl_ms, bool tracked);
  void finish(Actions& out, Errc ec, Because because = Because::told,
              std::uint64_t token = 0);
  void withdraw_then(Actions& out, Errc ec, Because because = Because::told);
  void late(Actions& out, const Event& e);
  void end_wait(Actions& out, Errc why);
  void disarm_waiting(Actions& out);
  void check_head(Actions& out, std::int64_t own_doorbell_pttl, bool tracked);
  void park(Actions& out, std::int64_t pttl_ms);
  void unpark(Actions& out);
  // Whether an outcome event belongs to the step in flight: the acquire block (attempting), or
  // one parked behind a pop, whose timers are then disarmed and which becomes that attempt.
  [[nodiscard]] bool takes_attempt_outcome(Actions& out);

  Options opts_;
  State state_ = State::idle;
  bool one_shot_ = false;
  bool leaving_ = false;    // the wait ended while a step was in flight
  Errc give_up_ = Errc::ok;  // the answer once that step is settled
  bool queued_ = false;     // our wait block was written: we may be in P{R}:q
  std::int64_t rank_ = -1;
  bool tracked_ = true;   // the last wait block's read was tracked (else: we poll)
  bool waited_ = false;   // saw the lock held at least once
  bool grace_armed_ = false;
  bool step_outlived_answer_ = false;
  int polls_ = 0;  // consecutive polls: the next poll's index
  Errc pending_ = Errc::ok;  // withdrawing: the answer after the removal
  Because pending_because_ = Because::told;
  // withdrawing: the answer if the removal gets no reply
  Errc unanswered_ = Errc::ok;
  Because unanswered_because_ = Because::withdrawal_unanswered;
  // Withdrawing an unusable grant: what comes after the removal instead of an answer.
  std::optional<Retry> retry_;
  // checking_head: how to wait if the head is alive (our doorbell's PTTL, push wake-ups).
  std::int64_t own_doorbell_pttl_ = -2;
  bool head_tracked_ = true;
  bool unpark_armed_ = false;  // parked: the push grace (Timer::unpark) runs
  bool unparked_ = false;      // parked: the unblock was sent
};

}  // namespace lockwire::lock::detail
