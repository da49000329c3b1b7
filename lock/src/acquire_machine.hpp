// The exclusive acquire and its wait (docs/protocol.md, *Waiting*, *Wait 0*, *Deadline during
// an in-flight command*, *No claim outlives a failed block*, *Lost reply*) as a machine without
// I/O, in the style of loop/src/handshake.hpp: resume(event) -> actions. The driver sends what
// it is told, arms the timers it is told, and feeds replies, pushes and timer expiries back;
// nothing here touches a connection, a timer or a clock, so tests drive it with events alone.
//
// It covers one exclusive waiter of one client, and a grant the driver will not hand over — the
// vouch ran out in flight, too few replicas acknowledged it, its token is not above a fresh floor
// (withdrawn, then tried again within the wait once what it lacked is there, or answered).
// Issue #29: Client::Core drives it for one attempt (wait 0, acquire_driver.cpp); waits, and
// the local FIFO, shared, fair and upgrade waiters, still run in acquire.cpp.
#pragma once

#include <array>
#include <cassert>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <system_error>

namespace lockwire::lock::detail {

class AcquireMachine {
 public:
  using Nanos = std::chrono::nanoseconds;

  enum class Timer : std::uint8_t { deadline, backstop, grace, settle };

  // What an unusable grant needs before the next attempt (Event::retry).
  enum class Retry : std::uint8_t {
    at_once,       // nothing: attempt again
    fresh_floor,   // the fencing floor was too old: read the server's TIME first
    once_vouched,  // the vouch ran out: parked until it is back (a one-shot answers instead)
    polled,        // too few replicas: wait a poll delay (a one-shot answers instead)
  };

  // Why an answer is what it is, when the machine concluded it (the driver words it with what
  // it knows: the resource, the owner, the connection's last words).
  enum class Because : std::uint8_t {
    told,                   // the error and words an event brought (none: granted)
    withdrawal_unanswered,  // the removal of our claim got no reply: a claim may remain
    no_reply,               // the step got no reply within the settle bound
    not_connected,          // no attempt could be written within the bound
    dropped_nothing_left,   // the connection dropped during the attempt; the removal was answered
    connection_failed,      // the connection dropped, and so did the removal of our claim
  };

  struct Event {
    enum class Kind : std::uint8_t {
      start,           // the caller asked (wait: the request's wait; 0 = one attempt)
      not_sent,        // the attempt was not written: no usable connection yet (held)
      granted,         // the acquire block's reply: ours, with `token`
      unusable_grant,  // granted, but not to be handed over: `retry`; a one-shot's `error`
      contended,       // the acquire block's reply: someone holds it (our claim lost)
      already_held,    // the acquire block's reply: this owner already holds it
      refused,         // an error reply (the words); `may_claim`: the step may have left a claim
      transport,       // the step's connection failed; `maybe_applied`: it was written
      wait_read,       // the wait block's reply (rank, pttl, doorbell_pttl, tracked, blocked)
      withdrawn,       // the removal of our claim ended; `absent`: answered, nothing is left
      holders_push,    // an invalidate push of the holder set P{R}
      doorbell_push,   // an invalidate push of our doorbell P{R}:w:<owner>
      timer,           // `timer` ran out
      reconnected,     // the connection is ready again (tracking re-enabled; a held attempt goes)
      cancel,          // Client::cancel
      vouched,         // the vouch is back (a parked waiter attempts)
      floor_read,      // the TIME read for a fresh floor ended (read or not: attempt again)
    };
    Kind kind = Kind::start;
    Nanos wait{0};
    std::uint64_t token = 0;
    std::error_code error;  // refused: the error to answer with; transport: the connection's
    std::string words;      // refused: the server's words
    bool may_claim = true;  // refused
    bool maybe_applied = false;  // transport
    bool retryable = true;       // transport: the connection may come back
    bool absent = true;  // withdrawn: false when the removal got no reply
    Retry retry = Retry::at_once;
    // wait_read:
    std::int64_t rank = -1;  // 0 elected, 1 backup, 2 further back
    std::int64_t pttl = -2;  // of P{R}
    std::int64_t doorbell_pttl = -2;
    bool tracked = true;  // CLIENT CACHING accepted (else: poll)
    bool blocked = true;  // a holder of another owner is there
    Timer timer = Timer::deadline;
  };

  struct Action {
    enum class Kind : std::uint8_t {
      send_attempt,    // the exclusive acquire block
      send_wait_read,  // the exclusive wait block (with_hdel: remove our losing claim first)
      send_withdraw,   // HDEL of our own field (a claim or grant that must not stay)
      read_floor,      // TIME on this connection: a fresh fencing floor
      hold,            // the attempt waits for a ready connection (then Event::reconnected)
      leave_queue,     // ZREM from P{R}:q and ring the next two doorbells
      arm,             // start `timer` for `after`
      disarm,          // stop `timer`
      answer,          // tell the caller: `error` (none: granted with `token`), `because`
    };
    Kind kind = Kind::send_attempt;
    Because because = Because::told;
    bool with_hdel = false;
    Timer timer = Timer::deadline;
    Nanos after{0};
    std::error_code error;
    std::uint64_t token = 0;
    std::string words;
    friend bool operator==(const Action&, const Action&) = default;
  };

  enum class State : std::uint8_t {
    idle,         // before start
    attempting,   // the acquire block in flight
    reading,      // the wait block in flight
    waiting,      // nothing in flight: a push, a doorbell or a timer wakes us
    withdrawing,  // the removal of our claim in flight; then the answer (or a retry)
    parked,       // an unusable grant withdrawn: waiting for the vouch (Event::vouched)
    reading_floor,  // an unusable grant withdrawn: TIME in flight, then an attempt
    held,         // the attempt is not written: no usable connection yet
    done,         // answered
  };

  struct Options {
    Nanos settle_timeout = std::chrono::seconds(1);
    Nanos poll_initial = std::chrono::milliseconds(10);
    Nanos poll_max = std::chrono::milliseconds(250);
  };
  static constexpr Nanos kGrace = std::chrono::milliseconds(50);

  // What one event leads to: a few actions, kept inline (a resume allocates nothing).
  class Actions {
   public:
    static constexpr std::size_t kCapacity = 8;
    void push_back(Action a) {
      assert(size_ < kCapacity);  // the longest transition emits six
      items_[size_++] = std::move(a);
    }
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
    [[nodiscard]] const Action& operator[](std::size_t i) const noexcept { return items_[i]; }
    [[nodiscard]] Action& back() noexcept { return items_[size_ - 1]; }
    [[nodiscard]] const Action* begin() const noexcept { return items_.data(); }
    [[nodiscard]] const Action* end() const noexcept { return items_.data() + size_; }

   private:
    std::array<Action, kCapacity> items_{};
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

 private:
  void attempt(Actions& out);
  void read(Actions& out, bool with_hdel);
  void finish(Actions& out, std::error_code ec, Because because = Because::told,
              std::uint64_t token = 0, std::string words = {});
  void withdraw_then(Actions& out, std::error_code ec, std::string words = {});
  void late(Actions& out, const Event& e);
  void end_wait(Actions& out, std::error_code why);
  [[nodiscard]] Nanos poll_delay() const;

  Options opts_;
  State state_ = State::idle;
  bool one_shot_ = false;
  bool leaving_ = false;    // the wait ended while a step was in flight
  std::error_code give_up_;  // the answer once that step is settled
  bool queued_ = false;     // our wait block was written: we may be in P{R}:q
  std::int64_t rank_ = -1;
  bool polling_ = false;  // the server refused tracking: waiters poll
  bool waited_ = false;   // saw the lock held at least once
  bool step_outlived_answer_ = false;  // answered by the settle bound: a reply may still come
  int polls_ = 0;
  std::error_code pending_;  // withdrawing: the answer after the removal
  Because pending_because_ = Because::told;
  // withdrawing: the answer if the removal gets no reply
  std::error_code unanswered_;
  Because unanswered_because_ = Because::withdrawal_unanswered;
  // Withdrawing an unusable grant: what comes after the removal instead of an answer.
  std::optional<Retry> retry_;
  std::string pending_words_;
};

}  // namespace lockwire::lock::detail
