// The acquire/wait machine (lock/src/acquire_machine.hpp) driven by events alone: no simulator,
// no server. One test per transition of docs/protocol.md, *Waiting*, *Wait 0*, *Deadline during
// an in-flight command*, *No claim outlives a failed block*, *Lost reply*, of a grant that is
// withdrawn instead of handed over (the vouch, the replicas, the floor), of *Fair order*, of
// shared leases and semaphores, of *Upgrade* and of the parked hand-off. One file of about 1,200
// lines because the families share their event helpers (ev, start, read, watched_read, kinds,
// find, backstop) and fair, shared, upgrade and parking waiters are the same machine with an
// option set: a test of one family reads best beside the exclusive transition it varies.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "acquire_machine.hpp"
#include "lockwire/lock/error.hpp"

namespace lockwire::lock::detail {
namespace {

using namespace std::chrono_literals;
using M = AcquireMachine;
using E = M::Event;
using A = M::Action;
using K = A::Kind;
using T = M::Timer;

E ev(E::Kind k) {
  E e;
  e.kind = k;
  return e;
}
E start(M::Nanos wait) {
  E e = ev(E::Kind::start);
  e.wait = wait;
  return e;
}
E granted(std::uint64_t token) {
  E e = ev(E::Kind::granted);
  e.token = token;
  return e;
}
E read(std::int64_t rank, std::int64_t pttl, std::int64_t doorbell = 5000, bool tracked = true,
       M::Holders holders = M::Holders::held) {
  E e = ev(E::Kind::wait_read);
  e.rank = rank;
  e.pttl = pttl;
  e.doorbell_pttl = doorbell;
  e.tracked = tracked;
  e.holders = holders;
  return e;
}
E timer(T t) {
  E e = ev(E::Kind::timer);
  e.timer = t;
  return e;
}

std::vector<K> kinds(const M::Actions& v) {
  std::vector<K> k;
  for (const auto& a : v) k.push_back(a.kind);
  return k;
}
const A* find(const M::Actions& v, K k) {
  for (const auto& a : v)
    if (a.kind == k) return &a;
  return nullptr;
}

// A waiter that lost its first attempt and waits at `rank` (tracked).
M waiting_at(std::int64_t rank) {
  M m;
  (void)m.resume(start(2s));
  (void)m.resume(ev(E::Kind::contended));
  (void)m.resume(read(rank, 800));
  EXPECT_EQ(m.state(), M::State::waiting);
  return m;
}

TEST(AcquireMachine, UncontendedGrantAnswersWithTheToken) {
  M m;
  auto a = m.resume(start(2s));
  EXPECT_EQ(kinds(a), (std::vector<K>{K::arm, K::send_attempt}));
  EXPECT_EQ(a[0].timer, T::deadline);
  EXPECT_EQ(a[0].after, 2s);
  a = m.resume(granted(42));
  const A* ans = find(a, K::answer);
  ASSERT_NE(ans, nullptr);
  EXPECT_EQ(ans->error, Errc::ok);
  EXPECT_EQ(ans->token, 42u);
  EXPECT_EQ(find(a, K::leave_queue), nullptr);  // never queued
  EXPECT_EQ(m.state(), M::State::done);
}

TEST(AcquireMachine, LoserRemovesItsClaimWithTheTrackedRead) {
  M m;
  (void)m.resume(start(2s));
  auto a = m.resume(ev(E::Kind::contended));
  ASSERT_EQ(kinds(a), (std::vector<K>{K::send_wait_read}));
  EXPECT_TRUE(a[0].with_hdel);
  EXPECT_TRUE(m.queued());
}

TEST(AcquireMachine, ElectedWaiterArmsTheHolderSetExpiryAndAttemptsOnAPush) {
  M m = waiting_at(0);
  auto a = m.resume(ev(E::Kind::holders_push));
  EXPECT_EQ(kinds(a), (std::vector<K>{K::disarm, K::send_attempt}));
  a = m.resume(granted(7));
  EXPECT_EQ(kinds(a), (std::vector<K>{K::disarm, K::answer, K::leave_queue}));
}

TEST(AcquireMachine, BackstopIsThePttlOfWhatTheWaiterWatches) {
  M first;
  (void)first.resume(start(2s));
  (void)first.resume(ev(E::Kind::contended));
  auto a = first.resume(read(0, 800, 5000));
  ASSERT_EQ(kinds(a), (std::vector<K>{K::arm}));
  EXPECT_EQ(a[0].after, 801ms);  // the holder set's expiry, +1 ms
  M back;
  (void)back.resume(start(2s));
  (void)back.resume(ev(E::Kind::contended));
  a = back.resume(read(2, 800, 5000));
  EXPECT_EQ(a[0].after, 5001ms);  // its doorbell's
}

TEST(AcquireMachine, BackupWaitsAGraceThenReadsAgain) {
  M m = waiting_at(1);
  auto a = m.resume(ev(E::Kind::holders_push));
  ASSERT_EQ(kinds(a), (std::vector<K>{K::arm}));
  EXPECT_EQ(a[0].timer, T::grace);
  EXPECT_EQ(a[0].after, M::kGrace);
  a = m.resume(timer(T::grace));
  ASSERT_EQ(kinds(a), (std::vector<K>{K::disarm, K::send_wait_read}));
  EXPECT_FALSE(a[1].with_hdel);
}

TEST(AcquireMachine, WaitersFurtherBackIgnoreHolderPushesAndFollowTheirDoorbell) {
  M m = waiting_at(2);
  EXPECT_TRUE(m.resume(ev(E::Kind::holders_push)).empty());
  auto a = m.resume(ev(E::Kind::doorbell_push));
  EXPECT_EQ(kinds(a), (std::vector<K>{K::disarm, K::disarm, K::send_wait_read}));
  a = m.resume(read(0, 300));  // now first
  EXPECT_EQ(m.rank(), 0);
  EXPECT_EQ(a[0].after, 301ms);
}

TEST(AcquireMachine, PushesWhileAStepIsInFlightAreIgnored) {
  M m = waiting_at(0);
  (void)m.resume(ev(E::Kind::holders_push));
  EXPECT_EQ(m.state(), M::State::attempting);
  EXPECT_TRUE(m.resume(ev(E::Kind::holders_push)).empty());
  EXPECT_TRUE(m.resume(ev(E::Kind::doorbell_push)).empty());
}

TEST(AcquireMachine, AFreeHolderSetMeansAttemptAtOnceAndOurOwnAnAnswer) {
  M m;
  (void)m.resume(start(2s));
  (void)m.resume(ev(E::Kind::contended));
  EXPECT_EQ(kinds(m.resume(read(0, 500, 5000, true, M::Holders::free))),
            (std::vector<K>{K::send_attempt}));
  (void)m.resume(ev(E::Kind::contended));
  auto a = m.resume(read(3, 500, 5000, true, M::Holders::mine));
  const A* ans = find(a, K::answer);
  ASSERT_NE(ans, nullptr);
  EXPECT_EQ(ans->error, Errc::already_held);
  EXPECT_NE(find(a, K::leave_queue), nullptr);
}

// Shared holders only: the elected waiter checks whether their leases are over (removing
// those that are), the others wait for their doorbell.
TEST(AcquireMachine, SharedHoldersOnlyAreCheckedByTheElectedWaiter) {
  M m;
  (void)m.resume(start(2s));
  (void)m.resume(ev(E::Kind::contended));
  EXPECT_EQ(kinds(m.resume(read(0, 500, 5000, true, M::Holders::shared_only))),
            (std::vector<K>{K::check_stale}));
  EXPECT_EQ(m.state(), M::State::checking);
  EXPECT_TRUE(m.resume(ev(E::Kind::holders_push)).empty());  // a step in flight
  E c = ev(E::Kind::stale_checked);
  c.pttl = 120;
  auto a = m.resume(c);
  ASSERT_EQ(kinds(a), (std::vector<K>{K::arm}));
  EXPECT_EQ(a[0].after, 121ms);  // the soonest lease's end
  (void)m.resume(timer(T::backstop));
  (void)m.resume(ev(E::Kind::contended));
  (void)m.resume(read(0, 500, 5000, true, M::Holders::shared_only));
  EXPECT_EQ(kinds(m.resume(ev(E::Kind::stale_removed))), (std::vector<K>{K::send_attempt}));

  M back;
  (void)back.resume(start(2s));
  (void)back.resume(ev(E::Kind::contended));
  a = back.resume(read(2, 500, 5000, true, M::Holders::shared_only));
  ASSERT_EQ(kinds(a), (std::vector<K>{K::arm}));
  EXPECT_EQ(a[0].after, 5001ms);
}

TEST(AcquireMachine, ABackstopWithoutAKnownExpiryIsASecond) {
  M m;
  (void)m.resume(start(5s));
  (void)m.resume(ev(E::Kind::contended));
  auto a = m.resume(read(0, -1));
  ASSERT_EQ(kinds(a), (std::vector<K>{K::arm}));
  EXPECT_EQ(a[0].after, 1s);
}

TEST(AcquireMachine, BackstopOfTheElectedAttemptsOfOthersReads) {
  M first = waiting_at(0);
  EXPECT_EQ(kinds(first.resume(timer(T::backstop))), (std::vector<K>{K::disarm, K::send_attempt}));
  M back = waiting_at(2);
  EXPECT_EQ(kinds(back.resume(timer(T::backstop))),
            (std::vector<K>{K::disarm, K::send_wait_read}));
}

// Without tracking each backstop is a poll: the driver takes the sooner of the expiry and the
// n-th poll's delay (its backoff and jitter), n counted here and reset by a tracked read.
TEST(AcquireMachine, RefusedTrackingPollsWithAGrowingIndex) {
  M m;
  (void)m.resume(start(10s));
  (void)m.resume(ev(E::Kind::contended));
  std::vector<int> polls;
  for (int i = 0; i < 4; ++i) {
    auto a = m.resume(read(0, 800, 5000, false));
    ASSERT_EQ(kinds(a), (std::vector<K>{K::arm}));
    EXPECT_EQ(a[0].after, 801ms);
    polls.push_back(a[0].poll_index);
    a = m.resume(timer(T::backstop));
    ASSERT_EQ(kinds(a), (std::vector<K>{K::disarm, K::send_attempt}));
    (void)m.resume(ev(E::Kind::contended));
  }
  EXPECT_EQ(polls, (std::vector<int>{0, 1, 2, 3}));
  auto a = m.resume(read(0, 800, 5000, true));
  EXPECT_EQ(a[0].poll_index, -1);  // tracked: no poll
  (void)m.resume(timer(T::backstop));
  (void)m.resume(ev(E::Kind::contended));
  EXPECT_EQ(m.resume(read(0, 800, 5000, false))[0].poll_index, 0);
}

TEST(AcquireMachine, AWakeMakesAWaiterAttemptAgain) {
  M m = waiting_at(1);
  auto a = m.resume(ev(E::Kind::wake));  // a new connection: a push may have been lost
  EXPECT_EQ(kinds(a), (std::vector<K>{K::disarm, K::disarm, K::send_attempt}));
}

TEST(AcquireMachine, DeadlineWhileWaitingAnswersAtOnceAndLeavesTheQueue) {
  M m = waiting_at(1);
  auto a = m.resume(timer(T::deadline));
  const A* ans = find(a, K::answer);
  ASSERT_NE(ans, nullptr);
  EXPECT_EQ(ans->error, Errc::timed_out);
  EXPECT_NE(find(a, K::leave_queue), nullptr);
}

TEST(AcquireMachine, DeadlineDuringAnAttemptWaitsForItsOutcomeAndWithdrawsALateGrant) {
  M m = waiting_at(0);
  (void)m.resume(ev(E::Kind::holders_push));  // the attempt is in flight
  auto a = m.resume(timer(T::deadline));
  ASSERT_EQ(kinds(a), (std::vector<K>{K::arm}));  // no answer yet: the settle bound
  EXPECT_EQ(a[0].timer, T::settle);
  EXPECT_TRUE(m.leaving());
  a = m.resume(granted(9));  // granted after all: it must not stay
  EXPECT_EQ(kinds(a), (std::vector<K>{K::send_withdraw}));
  a = m.resume(ev(E::Kind::withdrawn));
  const A* ans = find(a, K::answer);
  ASSERT_NE(ans, nullptr);
  EXPECT_EQ(ans->error, Errc::timed_out);
  EXPECT_EQ(ans->token, 0u);
}

TEST(AcquireMachine, CancelDuringAWaitReadAnswersCancelledOnceItIsIn) {
  M m = waiting_at(2);
  (void)m.resume(ev(E::Kind::doorbell_push));  // the wait block is in flight
  EXPECT_EQ(kinds(m.resume(ev(E::Kind::cancel))), (std::vector<K>{K::arm}));
  auto a = m.resume(read(0, 500));
  const A* ans = find(a, K::answer);
  ASSERT_NE(ans, nullptr);
  EXPECT_EQ(ans->error, Errc::cancelled);
  EXPECT_NE(find(a, K::leave_queue), nullptr);
}

TEST(AcquireMachine, ASilentServerIsAnsweredOutcomeUnknownAndALateGrantStillWithdrawn) {
  M m = waiting_at(0);
  (void)m.resume(ev(E::Kind::holders_push));
  (void)m.resume(timer(T::deadline));
  auto a = m.resume(timer(T::settle));
  const A* ans = find(a, K::answer);
  ASSERT_NE(ans, nullptr);
  EXPECT_EQ(ans->error, Errc::outcome_unknown);
  EXPECT_EQ(ans->because, M::Because::no_reply);
  EXPECT_EQ(kinds(m.resume(granted(11))), (std::vector<K>{K::send_withdraw}));
}

TEST(AcquireMachine, WaitZeroWithdrawsItsLosingClaimThenAnswersBusy) {
  M m;
  auto a = m.resume(start(0s));
  EXPECT_EQ(a[0].timer, T::settle);  // one attempt: bounded by the settle timeout
  EXPECT_EQ(kinds(m.resume(ev(E::Kind::contended))), (std::vector<K>{K::send_withdraw}));
  a = m.resume(ev(E::Kind::withdrawn));
  const A* ans = find(a, K::answer);
  ASSERT_NE(ans, nullptr);
  EXPECT_EQ(ans->error, Errc::busy);  // held by someone else (timed_out is for a wait)
  EXPECT_FALSE(m.queued());  // a one-shot never joins the wait queue
}

TEST(AcquireMachine, ARefusedBlockIsWithdrawnBeforeTheServersWordsAreTold) {
  M m = waiting_at(0);
  (void)m.resume(ev(E::Kind::holders_push));
  E r = ev(E::Kind::refused);
  r.error = Errc::server_refused;
  EXPECT_EQ(kinds(m.resume(r)), (std::vector<K>{K::send_withdraw}));
  auto a = m.resume(ev(E::Kind::withdrawn));
  const A* ans = find(a, K::answer);
  ASSERT_NE(ans, nullptr);
  EXPECT_EQ(ans->error, Errc::server_refused);
  EXPECT_EQ(ans->because, M::Because::told_words);  // the server's words, kept by the driver
}

// The words an event brought (kept by the driver) go with that event's answer only: a wait that
// withdrew an unusable grant and tried again is answered with its own reason.
TEST(AcquireMachine, WordsGoOnlyWithTheAnswerOfTheEventThatBroughtThem) {
  M m = waiting_at(0);
  (void)m.resume(ev(E::Kind::holders_push));
  E u = ev(E::Kind::unusable_grant);
  u.retry = M::Retry::once_vouched;
  u.error = Errc::server_unavailable;
  EXPECT_EQ(kinds(m.resume(u)), (std::vector<K>{K::send_withdraw}));
  EXPECT_EQ(kinds(m.resume(ev(E::Kind::withdrawn))), (std::vector<K>{K::send_attempt}));
  (void)m.resume(timer(T::deadline));  // the attempt in flight: answered once it is settled
  EXPECT_EQ(kinds(m.resume(granted(9))), (std::vector<K>{K::send_withdraw}));
  auto a = m.resume(ev(E::Kind::withdrawn));
  const A* ans = find(a, K::answer);
  ASSERT_NE(ans, nullptr);
  EXPECT_EQ(ans->error, Errc::timed_out);
  EXPECT_EQ(ans->because, M::Because::told);
}

TEST(AcquireMachine, ALostAttemptIsNeverReplayedItsClaimIsRemovedAndAFreshOneSent) {
  M m;
  (void)m.resume(start(2s));
  E t = ev(E::Kind::transport);
  t.maybe_applied = true;
  EXPECT_EQ(kinds(m.resume(t)), (std::vector<K>{K::send_withdraw}));
  EXPECT_EQ(kinds(m.resume(ev(E::Kind::withdrawn))), (std::vector<K>{K::send_attempt}));
  t.maybe_applied = false;
  EXPECT_EQ(kinds(m.resume(t)), (std::vector<K>{K::send_attempt}));
}

TEST(AcquireMachine, AlreadyHeldIsAnsweredAsSuch) {
  M m;
  (void)m.resume(start(2s));
  const A* ans = nullptr;
  auto a = m.resume(ev(E::Kind::already_held));
  ans = find(a, K::answer);
  ASSERT_NE(ans, nullptr);
  EXPECT_EQ(ans->error, Errc::already_held);
}

// ---- a grant that is not handed over (Core::withdraw_then_retry's three cases) -------------

E unusable(M::Retry retry, Errc ec = Errc::server_unavailable) {
  E e = ev(E::Kind::unusable_grant);
  e.retry = retry;
  e.error = ec;
  return e;
}

// An elected waiter whose attempt came back granted but unusable: its withdrawal is in flight.
M withdrawing_unusable(M::Retry retry) {
  M m = waiting_at(0);
  (void)m.resume(ev(E::Kind::holders_push));
  EXPECT_EQ(kinds(m.resume(unusable(retry))), (std::vector<K>{K::send_withdraw}));
  EXPECT_EQ(m.state(), M::State::withdrawing);
  return m;
}

TEST(AcquireMachine, AStaleTokenIsWithdrawnThenAttemptedAgainWithinTheWait) {
  M m = withdrawing_unusable(M::Retry::at_once);
  EXPECT_EQ(kinds(m.resume(ev(E::Kind::withdrawn))), (std::vector<K>{K::send_attempt}));
  const auto acts = m.resume(granted(77));
  const A* ans = find(acts, K::answer);
  ASSERT_NE(ans, nullptr);
  EXPECT_EQ(ans->error, Errc::ok);
  EXPECT_EQ(ans->token, 77u);
}

TEST(AcquireMachine, AnOldFloorIsReadAfreshBeforeTheNextAttempt) {
  M m = withdrawing_unusable(M::Retry::fresh_floor);
  EXPECT_EQ(kinds(m.resume(ev(E::Kind::withdrawn))), (std::vector<K>{K::read_floor}));
  EXPECT_EQ(m.state(), M::State::reading_floor);
  EXPECT_TRUE(m.resume(ev(E::Kind::wake)).empty());  // not what it waits for
  EXPECT_EQ(kinds(m.resume(ev(E::Kind::floor_read))), (std::vector<K>{K::send_attempt}));
}

// The attempt goes to the driver, which holds it (not_sent) until the vouch is back (wake).
TEST(AcquireMachine, AGrantWhoseVouchRanOutIsAttemptedAgainAndHeldUntilTheVouchIsBack) {
  M m = withdrawing_unusable(M::Retry::once_vouched);
  EXPECT_EQ(kinds(m.resume(ev(E::Kind::withdrawn))), (std::vector<K>{K::send_attempt}));
  EXPECT_EQ(kinds(m.resume(ev(E::Kind::not_sent))), (std::vector<K>{K::hold}));
  EXPECT_TRUE(m.resume(ev(E::Kind::holders_push)).empty());  // held: pushes do not wake it
  EXPECT_TRUE(m.resume(ev(E::Kind::floor_read)).empty());
  EXPECT_EQ(kinds(m.resume(ev(E::Kind::wake))), (std::vector<K>{K::send_attempt}));
}

TEST(AcquireMachine, TooFewReplicasWaitAPollDelayThenAttempt) {
  M m = withdrawing_unusable(M::Retry::polled);
  auto a = m.resume(ev(E::Kind::withdrawn));
  ASSERT_EQ(kinds(a), (std::vector<K>{K::arm}));
  EXPECT_EQ(a[0].timer, T::backstop);
  EXPECT_EQ(a[0].poll_index, 0);  // a poll, as without pushes
  a = m.resume(timer(T::backstop));
  EXPECT_EQ(find(a, K::send_attempt) != nullptr, true);
}

TEST(AcquireMachine, TheDeadlineWhileHeldAnswersAtOnceAndLeavesTheQueue) {
  M m = withdrawing_unusable(M::Retry::once_vouched);
  (void)m.resume(ev(E::Kind::withdrawn));
  (void)m.resume(ev(E::Kind::not_sent));
  auto a = m.resume(timer(T::deadline));
  const A* ans = find(a, K::answer);
  ASSERT_NE(ans, nullptr);
  EXPECT_EQ(ans->error, Errc::timed_out);
  EXPECT_EQ(ans->because, M::Because::told);  // it saw the lock held: the lock's time-out
  EXPECT_NE(find(a, K::leave_queue), nullptr);
  EXPECT_TRUE(m.resume(ev(E::Kind::wake)).empty());  // answered: nothing more
}

// The TIME read is a step in flight: the answer waits for it (bounded by settle).
TEST(AcquireMachine, CancelWhileTheFloorIsReadAnswersOnceTheReadIsIn) {
  M m = withdrawing_unusable(M::Retry::fresh_floor);
  (void)m.resume(ev(E::Kind::withdrawn));
  EXPECT_EQ(kinds(m.resume(ev(E::Kind::cancel))), (std::vector<K>{K::arm}));
  const auto acts = m.resume(ev(E::Kind::floor_read));
  const A* ans = find(acts, K::answer);
  ASSERT_NE(ans, nullptr);
  EXPECT_EQ(ans->error, Errc::cancelled);
  EXPECT_EQ(find(acts, K::send_attempt), nullptr);
}

TEST(AcquireMachine, TheDeadlineDuringTheWithdrawalAnswersInsteadOfTryingAgain) {
  M m = withdrawing_unusable(M::Retry::at_once);
  auto a = m.resume(timer(T::deadline));
  ASSERT_EQ(kinds(a), (std::vector<K>{K::arm}));  // the withdrawal is bounded by settle
  EXPECT_EQ(a[0].timer, T::settle);
  a = m.resume(ev(E::Kind::withdrawn));
  EXPECT_EQ(find(a, K::send_attempt), nullptr);
  const A* ans = find(a, K::answer);
  ASSERT_NE(ans, nullptr);
  EXPECT_EQ(ans->error, Errc::timed_out);
}

TEST(AcquireMachine, AWithdrawalWithoutAReplyIsAnsweredOutcomeUnknown) {
  M m = withdrawing_unusable(M::Retry::at_once);
  E w = ev(E::Kind::withdrawn);
  w.absent = false;
  auto a = m.resume(w);
  EXPECT_EQ(find(a, K::send_attempt), nullptr);
  const A* ans = find(a, K::answer);
  ASSERT_NE(ans, nullptr);
  EXPECT_EQ(ans->error, Errc::outcome_unknown);
  EXPECT_EQ(ans->because, M::Because::withdrawal_unanswered);
}

TEST(AcquireMachine, AOneShotAnswersWhatItLackedButRetriesAStaleToken) {
  for (M::Retry r : {M::Retry::once_vouched, M::Retry::polled}) {
    M m;
    (void)m.resume(start(0s));
    EXPECT_EQ(kinds(m.resume(unusable(r, Errc::server_unavailable))),
              (std::vector<K>{K::send_withdraw}));
    const A* ans = nullptr;
    auto a = m.resume(ev(E::Kind::withdrawn));
    ans = find(a, K::answer);
    ASSERT_NE(ans, nullptr);
    EXPECT_EQ(ans->error, Errc::server_unavailable);
    EXPECT_EQ(ans->because, M::Because::told_words);  // the driver's words for what it lacked
  }
  M m;
  (void)m.resume(start(0s));
  (void)m.resume(unusable(M::Retry::fresh_floor));
  EXPECT_EQ(kinds(m.resume(ev(E::Kind::withdrawn))), (std::vector<K>{K::read_floor}));
  EXPECT_EQ(kinds(m.resume(ev(E::Kind::floor_read))), (std::vector<K>{K::send_attempt}));
  // The settle timeout still bounds the one attempt as a whole, retry included.
  const auto acts = m.resume(timer(T::settle));
  const A* ans = find(acts, K::answer);
  ASSERT_NE(ans, nullptr);
  EXPECT_EQ(ans->error, Errc::outcome_unknown);
}

// The TIME read is a step in flight like any other: the bound answers outcome_unknown, as for
// an attempt (what Client::Core answered before the machine drove it).
TEST(AcquireMachine, AOneShotWhoseBoundEndsWhileTheFloorIsReadIsOutcomeUnknown) {
  M m;
  (void)m.resume(start(0s));
  (void)m.resume(unusable(M::Retry::fresh_floor));
  (void)m.resume(ev(E::Kind::withdrawn));
  const auto acts = m.resume(timer(T::settle));
  const A* ans = find(acts, K::answer);
  ASSERT_NE(ans, nullptr);
  EXPECT_EQ(ans->error, Errc::outcome_unknown);
  EXPECT_TRUE(m.resume(ev(E::Kind::floor_read)).empty());  // the read's end changes nothing
}

TEST(AcquireMachine, AnUnusableGrantAfterTheAnswerIsStillWithdrawn) {
  M m = waiting_at(0);
  (void)m.resume(ev(E::Kind::holders_push));
  (void)m.resume(timer(T::deadline));
  (void)m.resume(timer(T::settle));  // answered outcome_unknown
  EXPECT_EQ(kinds(m.resume(unusable(M::Retry::at_once))), (std::vector<K>{K::send_withdraw}));
}

TEST(AcquireMachine, NothingHappensAfterTheAnswer) {
  M m;
  (void)m.resume(start(2s));
  (void)m.resume(granted(1));
  EXPECT_TRUE(m.resume(ev(E::Kind::holders_push)).empty());
  EXPECT_TRUE(m.resume(timer(T::deadline)).empty());
  EXPECT_TRUE(m.resume(ev(E::Kind::cancel)).empty());
  EXPECT_TRUE(m.resume(ev(E::Kind::contended)).empty());
}

// ---- one attempt (wait 0), as Client::Core drives it --------------------------------------

E transport(bool maybe_applied, Errc error = Errc::connection) {
  E e = ev(E::Kind::transport);
  e.maybe_applied = maybe_applied;
  e.error = error;
  return e;
}

TEST(AcquireMachine, AnAttemptWithNoConnectionIsHeldThenSentOnceReady) {
  M m;
  (void)m.resume(start(0s));
  EXPECT_EQ(kinds(m.resume(ev(E::Kind::not_sent))), (std::vector<K>{K::hold}));
  EXPECT_EQ(m.state(), M::State::held);
  EXPECT_TRUE(m.resume(ev(E::Kind::holders_push)).empty());
  EXPECT_EQ(kinds(m.resume(ev(E::Kind::wake))), (std::vector<K>{K::send_attempt}));
}

TEST(AcquireMachine, AHeldOneShotWhoseBoundEndsIsNotConnected) {
  M m;
  (void)m.resume(start(0s));
  (void)m.resume(ev(E::Kind::not_sent));
  auto a = m.resume(timer(T::settle));
  const A* ans = find(a, K::answer);
  ASSERT_NE(ans, nullptr);
  EXPECT_EQ(ans->error, Errc::connection);
  EXPECT_EQ(ans->because, M::Because::not_connected);
  EXPECT_EQ(find(a, K::send_withdraw), nullptr);  // nothing was written
}

TEST(AcquireMachine, AHeldWaitThatNeverSawTheLockHeldEndsForItsConnection) {
  M m;
  (void)m.resume(start(2s));
  (void)m.resume(ev(E::Kind::not_sent));
  const A* ans = nullptr;
  auto a = m.resume(timer(T::deadline));
  ans = find(a, K::answer);
  ASSERT_NE(ans, nullptr);
  EXPECT_EQ(ans->because, M::Because::not_connected);
}

TEST(AcquireMachine, AOneShotDroppedMidAttemptIsOutcomeUnknownOnlyOnceItsClaimIsRemoved) {
  M m;
  (void)m.resume(start(0s));
  EXPECT_EQ(kinds(m.resume(transport(true))), (std::vector<K>{K::send_withdraw}));
  auto a = m.resume(ev(E::Kind::withdrawn));
  const A* ans = find(a, K::answer);
  ASSERT_NE(ans, nullptr);
  EXPECT_EQ(ans->error, Errc::outcome_unknown);
  EXPECT_EQ(ans->because, M::Because::dropped_nothing_left);

  M n;  // the removal is lost too: the connection's error
  (void)n.resume(start(0s));
  (void)n.resume(transport(true, Errc::connection));
  E w = ev(E::Kind::withdrawn);
  w.absent = false;
  a = n.resume(w);
  ans = find(a, K::answer);
  ASSERT_NE(ans, nullptr);
  EXPECT_EQ(ans->error, Errc::connection);
  EXPECT_EQ(ans->because, M::Because::connection_failed);
}

TEST(AcquireMachine, AOneShotNotWrittenIsAnsweredWithTheConnectionsError) {
  M m;
  (void)m.resume(start(0s));
  auto a = m.resume(transport(false));
  EXPECT_EQ(kinds(a), (std::vector<K>{K::disarm, K::answer}));
  EXPECT_EQ(a[1].error, Errc::connection);
}

TEST(AcquireMachine, ARefusalBeforeAnythingWasWrittenIsAnsweredWithoutARemoval) {
  M m;
  (void)m.resume(start(0s));
  E r = ev(E::Kind::refused);
  r.error = Errc::unsafe_server;
  r.may_claim = false;
  auto a = m.resume(r);
  EXPECT_EQ(kinds(a), (std::vector<K>{K::disarm, K::answer}));
  EXPECT_EQ(a[1].error, Errc::unsafe_server);
  EXPECT_EQ(a[1].because, M::Because::told_words);
}

// After the settle bound answered, every late reply that may have left a claim of ours has it
// removed; one that cannot (already held) is let go.
TEST(AcquireMachine, LateRepliesAfterTheAnswerRemoveWhatTheyMayHaveLeft) {
  auto answered = [] {
    M m;
    (void)m.resume(start(0s));
    (void)m.resume(timer(T::settle));
    EXPECT_EQ(m.state(), M::State::done);
    return m;
  };
  EXPECT_EQ(kinds(answered().resume(ev(E::Kind::contended))), (std::vector<K>{K::send_withdraw}));
  EXPECT_EQ(kinds(answered().resume(transport(true))), (std::vector<K>{K::send_withdraw}));
  EXPECT_TRUE(answered().resume(transport(false)).empty());
  EXPECT_TRUE(answered().resume(ev(E::Kind::already_held)).empty());
  E r = ev(E::Kind::refused);
  EXPECT_EQ(kinds(answered().resume(r)), (std::vector<K>{K::send_withdraw}));
  r.may_claim = false;
  EXPECT_TRUE(answered().resume(r).empty());
}

TEST(AcquireMachine, AContendedAttemptAfterTheWaitEndedIsWithdrawnBeforeTheAnswer) {
  M m = waiting_at(0);
  (void)m.resume(ev(E::Kind::holders_push));
  (void)m.resume(timer(T::deadline));
  EXPECT_EQ(kinds(m.resume(ev(E::Kind::contended))), (std::vector<K>{K::send_withdraw}));
  auto a = m.resume(ev(E::Kind::withdrawn));
  const A* ans = find(a, K::answer);
  ASSERT_NE(ans, nullptr);
  EXPECT_EQ(ans->error, Errc::timed_out);
}

// ---- the local queue (this client's waiters for one resource) and the shared-lease check ---

TEST(AcquireMachine, AWaiterBehindAnotherOfOursStartsOnlyOnItsTurn) {
  M m;
  E s = start(2s);
  s.behind = true;
  auto a = m.resume(s);
  ASSERT_EQ(kinds(a), (std::vector<K>{K::arm}));  // its deadline runs meanwhile
  EXPECT_EQ(a[0].timer, T::deadline);
  EXPECT_EQ(m.state(), M::State::behind);
  EXPECT_TRUE(m.resume(ev(E::Kind::holders_push)).empty());
  EXPECT_TRUE(m.resume(timer(T::backstop)).empty());
  EXPECT_EQ(kinds(m.resume(ev(E::Kind::wake))), (std::vector<K>{K::send_attempt}));
}

TEST(AcquireMachine, TheDeadlineBehindAnotherWaiterAnswersWithoutASend) {
  M m;
  E s = start(2s);
  s.behind = true;
  (void)m.resume(s);
  auto a = m.resume(timer(T::deadline));
  EXPECT_EQ(kinds(a), (std::vector<K>{K::disarm, K::answer}));  // never queued: no leave
  EXPECT_EQ(a[1].error, Errc::timed_out);
  // It never saw the lock held: the driver says whether the connection was the reason.
  EXPECT_EQ(a[1].because, M::Because::not_connected);
}

TEST(AcquireMachine, TheBackupArmsItsGraceOnceForManyPushes) {
  M m = waiting_at(1);
  EXPECT_EQ(kinds(m.resume(ev(E::Kind::holders_push))), (std::vector<K>{K::arm}));
  EXPECT_TRUE(m.resume(ev(E::Kind::holders_push)).empty());  // the grace already runs
  (void)m.resume(timer(T::grace));
  (void)m.resume(read(1, 800));
  EXPECT_EQ(kinds(m.resume(ev(E::Kind::holders_push))), (std::vector<K>{K::arm}));
}

TEST(AcquireMachine, ACheckOfSharedLeasesAfterTheWaitEndedAnswersOnceItIsIn) {
  M m;
  (void)m.resume(start(2s));
  (void)m.resume(ev(E::Kind::contended));
  (void)m.resume(read(0, 500, 5000, true, M::Holders::shared_only));
  EXPECT_EQ(kinds(m.resume(timer(T::deadline))), (std::vector<K>{K::arm}));  // settle bound
  auto a = m.resume(ev(E::Kind::stale_removed));
  const A* ans = find(a, K::answer);
  ASSERT_NE(ans, nullptr);
  EXPECT_EQ(ans->error, Errc::timed_out);
  EXPECT_EQ(find(a, K::send_attempt), nullptr);
  EXPECT_NE(find(a, K::leave_queue), nullptr);
}

TEST(AcquireMachine, ANoReplyAnswerLeavesTheQueueOnlyOnceTheLateReplyIsIn) {
  M m = waiting_at(0);
  (void)m.resume(ev(E::Kind::holders_push));
  (void)m.resume(timer(T::deadline));
  auto a = m.resume(timer(T::settle));
  EXPECT_EQ(find(a, K::leave_queue), nullptr);  // the driver moves on after the late reply
  EXPECT_TRUE(m.step_outlived_answer());
  EXPECT_EQ(kinds(m.resume(granted(5))), (std::vector<K>{K::send_withdraw}));
}

// --- fair order (docs/protocol.md, *Fair order*) ---------------------------------------------

M fair_machine() {
  M::Options o;
  o.fair = true;
  o.fair_doorbell_ms = 2000;
  return M(o);
}
E watched_read(M::Holders holders, bool head_is_us, bool tracked = true) {
  E e = ev(E::Kind::watched_read);
  e.holders = holders;
  e.head_is_us = head_is_us;
  e.tracked = tracked;
  return e;
}
E head_checked(bool vanished, std::int64_t pttl, bool queued) {
  E e = ev(E::Kind::head_checked);
  e.vanished = vanished;
  e.pttl = pttl;
  e.queued = queued;
  return e;
}
const A* backstop(const M::Actions& v) {
  for (const auto& a : v)
    if (a.kind == K::arm && a.timer == T::backstop) return &a;
  return nullptr;
}

TEST(AcquireMachineFair, NobodyAheadAndFreeGrantsUnderTheRead) {
  M m = fair_machine();
  EXPECT_EQ(kinds(m.resume(start(2s))), (std::vector<K>{K::arm, K::send_attempt}));
  EXPECT_EQ(kinds(m.resume(watched_read(M::Holders::free, true))),
            (std::vector<K>{K::send_watched_grant}));
  EXPECT_EQ(m.state(), M::State::attempting);
  const auto a = m.resume(granted(7));
  const A* ans = find(a, K::answer);
  ASSERT_NE(ans, nullptr);
  EXPECT_EQ(ans->error, Errc::ok);
  EXPECT_EQ(ans->token, 7u);
}

TEST(AcquireMachineFair, HeldJoinsTheQueueWithoutAClaimToRemove) {
  M m = fair_machine();
  (void)m.resume(start(2s));
  const auto a = m.resume(watched_read(M::Holders::held, true));
  EXPECT_EQ(kinds(a), (std::vector<K>{K::unwatch, K::send_wait_read}));
  EXPECT_FALSE(a[1].with_hdel);  // the read wrote no claim
  EXPECT_TRUE(m.queued());
}

TEST(AcquireMachineFair, FreeWithSomeoneAheadChecksTheHeadAndDropsItIfItVanished) {
  M m = fair_machine();
  (void)m.resume(start(2s));
  EXPECT_EQ(kinds(m.resume(watched_read(M::Holders::free, false))),
            (std::vector<K>{K::unwatch, K::check_head}));
  EXPECT_EQ(m.state(), M::State::checking_head);
  EXPECT_EQ(kinds(m.resume(head_checked(true, -2, false))), (std::vector<K>{K::drop_head}));
  EXPECT_EQ(kinds(m.resume(ev(E::Kind::head_dropped))), (std::vector<K>{K::send_attempt}));
}

TEST(AcquireMachineFair, ALiveHeadIsWaitedForAtMostUntilItsDoorbellWouldRunOut) {
  // Not queued yet (found it free from a fresh attempt): join the queue behind it.
  M fresh = fair_machine();
  (void)fresh.resume(start(5s));
  (void)fresh.resume(watched_read(M::Holders::free, false));
  EXPECT_EQ(kinds(fresh.resume(head_checked(false, 900, false))),
            (std::vector<K>{K::send_wait_read}));
  // The backup (rank 1) of a free lock: queued, so it waits for the sooner of the head's
  // doorbell and its own.
  M m = fair_machine();
  (void)m.resume(start(5s));
  (void)m.resume(watched_read(M::Holders::held, true));
  EXPECT_EQ(kinds(m.resume(read(1, -2, 1500, true, M::Holders::not_ours))),
            (std::vector<K>{K::check_head}));
  const auto a = m.resume(head_checked(false, 1800, true));
  ASSERT_NE(backstop(a), nullptr);
  EXPECT_EQ(backstop(a)->after, 1501ms);
  EXPECT_EQ(m.state(), M::State::waiting);
  // A head doorbell without a TTL reading: the fair doorbell's lifetime bounds the wait.
  M n = fair_machine();
  (void)n.resume(start(5s));
  (void)n.resume(watched_read(M::Holders::held, true));
  (void)n.resume(read(1, -2, -2, true, M::Holders::not_ours));
  const auto b = n.resume(head_checked(false, -1, true));
  ASSERT_NE(backstop(b), nullptr);
  EXPECT_EQ(backstop(b)->after, 2001ms);
}

TEST(AcquireMachineFair, WaitersFurtherBackWaitForTheirDoorbell) {
  M m = fair_machine();
  (void)m.resume(start(5s));
  (void)m.resume(watched_read(M::Holders::held, true));
  const auto a = m.resume(read(2, -2, 1700, true, M::Holders::not_ours));
  ASSERT_NE(backstop(a), nullptr);
  EXPECT_EQ(backstop(a)->after, 1701ms);
  EXPECT_EQ(find(a, K::check_head), nullptr);
}

TEST(AcquireMachineFair, TheHeadKeepsItsDoorbellAliveWhileItWaits) {
  // Elected while held: woken at the sooner of the holder set's expiry and its own doorbell's
  // (re-armed by the read that follows), where a waiter in arrival order waits for the first.
  M m = fair_machine();
  (void)m.resume(start(20s));
  (void)m.resume(watched_read(M::Holders::held, true));
  auto a = m.resume(read(0, 8000, 2000));
  ASSERT_NE(backstop(a), nullptr);
  EXPECT_EQ(backstop(a)->after, 2001ms);
  M plain;
  (void)plain.resume(start(20s));
  (void)plain.resume(ev(E::Kind::contended));
  a = plain.resume(read(0, 8000, 2000));
  ASSERT_NE(backstop(a), nullptr);
  EXPECT_EQ(backstop(a)->after, 8001ms);
}

TEST(AcquireMachineFair, OneAttemptFoundBlockedIsBusyAndWroteNothing) {
  M m = fair_machine();
  (void)m.resume(start(0s));
  const auto a = m.resume(watched_read(M::Holders::free, false));
  EXPECT_EQ(a[0].kind, K::unwatch);
  const A* ans = find(a, K::answer);
  ASSERT_NE(ans, nullptr);
  EXPECT_EQ(ans->error, Errc::busy);
  EXPECT_EQ(find(a, K::send_withdraw), nullptr);
  EXPECT_EQ(find(a, K::check_head), nullptr);
}

TEST(AcquireMachineFair, AnAbortedGrantReadsAgain) {
  M m = fair_machine();
  (void)m.resume(start(2s));
  (void)m.resume(watched_read(M::Holders::free, true));
  EXPECT_EQ(kinds(m.resume(ev(E::Kind::aborted))), (std::vector<K>{K::send_attempt}));
}

TEST(AcquireMachineFair, TheWaitEndingDuringAHeadCheckAnswersOnceItIsIn) {
  M m = fair_machine();
  (void)m.resume(start(2s));
  (void)m.resume(watched_read(M::Holders::free, false));
  EXPECT_EQ(kinds(m.resume(timer(T::deadline))), (std::vector<K>{K::arm}));  // settle bound
  EXPECT_TRUE(m.leaving());
  const auto a = m.resume(head_checked(true, -2, false));
  const A* ans = find(a, K::answer);
  ASSERT_NE(ans, nullptr);
  EXPECT_EQ(ans->error, Errc::timed_out);
  EXPECT_EQ(find(a, K::drop_head), nullptr);  // nothing more is sent
}

TEST(AcquireMachineFair, AGrantAfterTheWaitEndedIsWithdrawn) {
  M m = fair_machine();
  (void)m.resume(start(2s));
  (void)m.resume(watched_read(M::Holders::free, true));
  (void)m.resume(timer(T::deadline));
  EXPECT_EQ(kinds(m.resume(granted(9))), (std::vector<K>{K::send_withdraw}));
  const auto a = m.resume(ev(E::Kind::withdrawn));
  const A* ans = find(a, K::answer);
  ASSERT_NE(ans, nullptr);
  EXPECT_EQ(ans->error, Errc::timed_out);
}

// --- shared leases and semaphores ----------------------------------------------------------

M shared_machine() {
  M::Options o;
  o.shared = true;
  return M(o);
}

TEST(AcquireMachineShared, FreeIsGrantedUnderTheReadAndLeavesNoQueue) {
  M m = shared_machine();
  EXPECT_EQ(kinds(m.resume(start(2s))), (std::vector<K>{K::arm, K::send_attempt}));
  EXPECT_EQ(kinds(m.resume(watched_read(M::Holders::free, true))),
            (std::vector<K>{K::send_watched_grant}));
  const auto a = m.resume(granted(5));
  ASSERT_NE(find(a, K::answer), nullptr);
  EXPECT_EQ(find(a, K::leave_queue), nullptr);
}

TEST(AcquireMachineShared, BlockedWaitsInNoQueueAndActsOnEveryPush) {
  M m = shared_machine();
  (void)m.resume(start(5s));
  const auto a = m.resume(watched_read(M::Holders::held, true));
  EXPECT_EQ(kinds(a), (std::vector<K>{K::unwatch, K::send_wait_read}));
  EXPECT_FALSE(a[1].with_hdel);
  EXPECT_FALSE(m.queued());
  // The wait block of a shared lease reads no rank: its backstop is the holder set's expiry.
  const auto b = m.resume(read(-1, 700, -2));
  ASSERT_NE(backstop(b), nullptr);
  EXPECT_EQ(backstop(b)->after, 701ms);
  EXPECT_EQ(kinds(m.resume(ev(E::Kind::holders_push))),
            (std::vector<K>{K::disarm, K::send_attempt}));
  (void)m.resume(granted(3));
  EXPECT_EQ(m.state(), M::State::done);
}

TEST(AcquireMachineShared, AnExpiredBackstopAttemptsRatherThanReadingAPlace) {
  M m = shared_machine();
  (void)m.resume(start(5s));
  (void)m.resume(watched_read(M::Holders::held, true));
  (void)m.resume(read(-1, 700, -2));
  const auto a = m.resume(timer(T::backstop));
  EXPECT_NE(find(a, K::send_attempt), nullptr);
  EXPECT_EQ(find(a, K::send_wait_read), nullptr);
}

TEST(AcquireMachineShared, HeldByTheSameOwnerIsAlreadyHeldEvenAfterTheWait) {
  M m = shared_machine();
  (void)m.resume(start(2s));
  (void)m.resume(timer(T::deadline));
  const auto a = m.resume(watched_read(M::Holders::mine, true));
  EXPECT_EQ(a[0].kind, K::unwatch);
  const A* ans = find(a, K::answer);
  ASSERT_NE(ans, nullptr);
  EXPECT_EQ(ans->error, Errc::already_held);
}

TEST(AcquireMachineShared, ASemaphoreAtItsCountChecksForLeasesThatAreOver) {
  M m = shared_machine();
  (void)m.resume(start(5s));
  (void)m.resume(watched_read(M::Holders::held, true));
  EXPECT_EQ(kinds(m.resume(read(-1, 900, -2, true, M::Holders::shared_only))),
            (std::vector<K>{K::check_stale}));
}

// --- upgrade in place (docs/protocol.md, *Upgrade*) -----------------------------------------

M upgrade_machine() {
  M::Options o;
  o.upgrade = true;
  return M(o);
}

TEST(AcquireMachineUpgrade, FreeIsPromotedUnderTheRead) {
  M m = upgrade_machine();
  (void)m.resume(start(2s));
  EXPECT_EQ(kinds(m.resume(watched_read(M::Holders::free, true))),
            (std::vector<K>{K::send_watched_grant}));
  const auto a = m.resume(granted(11));
  ASSERT_NE(find(a, K::answer), nullptr);
  EXPECT_EQ(find(a, K::leave_queue), nullptr);
}

TEST(AcquireMachineUpgrade, OtherReadersMakeItDeclareItsIntentAndWait) {
  M m = upgrade_machine();
  (void)m.resume(start(5s));
  EXPECT_EQ(kinds(m.resume(watched_read(M::Holders::shared_only, true))),
            (std::vector<K>{K::declare_and_read}));  // under the same WATCH: no unwatch
  EXPECT_FALSE(m.queued());
  // Blocked: woken by a push, or at the sooner of the holder set's expiry and the intent's.
  const auto a = m.resume(read(-1, 9000, 3000));
  ASSERT_NE(backstop(a), nullptr);
  EXPECT_EQ(backstop(a)->after, 3001ms);
  EXPECT_EQ(kinds(m.resume(ev(E::Kind::holders_push))),
            (std::vector<K>{K::disarm, K::send_attempt}));
}

TEST(AcquireMachineUpgrade, AnIntentThatAbortedReadsAgain) {
  M m = upgrade_machine();
  (void)m.resume(start(5s));
  (void)m.resume(watched_read(M::Holders::held, true));
  EXPECT_EQ(kinds(m.resume(ev(E::Kind::aborted))), (std::vector<K>{K::send_attempt}));
}

TEST(AcquireMachineUpgrade, OneAttemptAmongOtherReadersIsBusy) {
  M m = upgrade_machine();
  (void)m.resume(start(0s));
  const auto a = m.resume(watched_read(M::Holders::shared_only, true));
  EXPECT_EQ(a[0].kind, K::unwatch);
  const A* ans = find(a, K::answer);
  ASSERT_NE(ans, nullptr);
  EXPECT_EQ(ans->error, Errc::busy);
}

TEST(AcquireMachineUpgrade, NoSharedLeaseOrAnotherUpgradeIsTheAnswerWithItsWords) {
  M m = upgrade_machine();
  (void)m.resume(start(5s));
  auto a = m.resume(watched_read(M::Holders::lease_gone, true));
  const A* ans = find(a, K::answer);
  ASSERT_NE(ans, nullptr);
  EXPECT_EQ(ans->error, Errc::not_held);
  EXPECT_EQ(ans->because, M::Because::told_words);  // the driver's words for what it read
  M n = upgrade_machine();
  (void)n.resume(start(5s));
  a = n.resume(watched_read(M::Holders::other_upgrading, true));
  ans = find(a, K::answer);
  ASSERT_NE(ans, nullptr);
  EXPECT_EQ(ans->error, Errc::upgrade_conflict);
  EXPECT_EQ(ans->because, M::Because::told_words);
}

TEST(AcquireMachineUpgrade, APromotionGrantedAfterTheWaitEndedStands) {
  // The promotion replaced the shared lease: withdrawing it would leave the caller neither.
  M m = upgrade_machine();
  (void)m.resume(start(2s));
  (void)m.resume(watched_read(M::Holders::free, true));
  (void)m.resume(timer(T::deadline));
  EXPECT_TRUE(m.leaving());
  const auto c = m.resume(ev(E::Kind::consumed));
  EXPECT_EQ(kinds(c), (std::vector<K>{K::disarm}));
  EXPECT_EQ(c[0].timer, T::settle);
  const auto a = m.resume(granted(12));
  EXPECT_EQ(find(a, K::send_withdraw), nullptr);
  const A* ans = find(a, K::answer);
  ASSERT_NE(ans, nullptr);
  EXPECT_EQ(ans->error, Errc::ok);
  EXPECT_EQ(ans->token, 12u);
  // An exclusive lock's late grant is withdrawn, as before.
  M x;
  (void)x.resume(start(2s));
  (void)x.resume(timer(T::deadline));
  EXPECT_TRUE(x.resume(ev(E::Kind::consumed)).empty());
  EXPECT_EQ(kinds(x.resume(granted(13))), (std::vector<K>{K::send_withdraw}));
}

// --- Parked hand-off (Options::park; docs/handoff-one-rtt.md) ------------------------------------

M::Options parking() {
  M::Options o;
  o.park = true;
  return o;
}
// An elected waiter whose acquire block is parked behind the blocking pop.
M parked() {
  M m(parking());
  (void)m.resume(start(2s));
  (void)m.resume(ev(E::Kind::contended));
  auto a = m.resume(read(0, 800));
  EXPECT_EQ(kinds(a), (std::vector<K>{K::arm, K::send_park}));
  EXPECT_EQ(a[0].timer, T::backstop);
  EXPECT_EQ(a[0].after, 801ms);
  EXPECT_EQ(m.state(), M::State::parked);
  EXPECT_TRUE(m.step_in_flight());
  return m;
}

TEST(AcquireMachine, ParkedElectedWaiterIsGrantedByTheReleaseAlone) {
  M m = parked();
  // The release's wake token ran the block: its reply is the grant, no attempt of ours.
  auto a = m.resume(granted(9));
  EXPECT_EQ(kinds(a), (std::vector<K>{K::disarm, K::disarm, K::answer, K::leave_queue}));
  EXPECT_EQ(a[0].timer, T::backstop);
  EXPECT_EQ(find(a, K::answer)->token, 9u);
}

TEST(AcquireMachine, OnlyTheElectedWaiterParks) {
  for (std::int64_t rank : {1, 2}) {
    M m(parking());
    (void)m.resume(start(2s));
    (void)m.resume(ev(E::Kind::contended));
    EXPECT_EQ(kinds(m.resume(read(rank, 800))), (std::vector<K>{K::arm}));
    EXPECT_EQ(m.state(), M::State::waiting);
  }
  // Untracked (polling): no parking either; nor in fair order.
  M polled(parking());
  (void)polled.resume(start(2s));
  (void)polled.resume(ev(E::Kind::contended));
  EXPECT_EQ(kinds(polled.resume(read(0, 800, 5000, false))), (std::vector<K>{K::arm}));
  M::Options fair = parking();
  fair.fair = true;
  M f(fair);
  (void)f.resume(start(2s));
  EXPECT_EQ(f.resume(ev(E::Kind::watched_read)).size(), 2u);  // unwatch, wait block
  EXPECT_NE(kinds(f.resume(read(0, 800))), (std::vector<K>{K::arm, K::send_park}));
}

TEST(AcquireMachine, AParkedLoserRemovesItsClaimAndReadsAgain) {
  M m = parked();
  // A stale token, or a client that barged in first: the block lost, its claim goes with the
  // next wait block, which parks again.
  auto a = m.resume(ev(E::Kind::contended));
  EXPECT_EQ(kinds(a), (std::vector<K>{K::disarm, K::send_wait_read}));
  EXPECT_TRUE(a[1].with_hdel);
  EXPECT_EQ(kinds(m.resume(read(0, 500))), (std::vector<K>{K::arm, K::send_park}));
}

TEST(AcquireMachine, APushWhileParkedUnblocksOnlyIfTheBlockDoesNotRunByItself) {
  M m = parked();
  auto a = m.resume(ev(E::Kind::holders_push));
  ASSERT_EQ(kinds(a), (std::vector<K>{K::arm}));
  EXPECT_EQ(a[0].timer, T::unpark);
  EXPECT_EQ(a[0].after, M::kParkedPushGrace);
  EXPECT_TRUE(m.resume(ev(E::Kind::holders_push)).empty());  // one grace at a time
  // The grant came within the grace: nothing to unblock.
  a = m.resume(granted(3));
  EXPECT_EQ(kinds(a), (std::vector<K>{K::disarm, K::disarm, K::disarm, K::answer, K::leave_queue}));
  EXPECT_EQ(a[0].timer, T::backstop);
  EXPECT_EQ(a[1].timer, T::unpark);
  EXPECT_EQ(a[2].timer, T::deadline);

  M n = parked();
  (void)n.resume(ev(E::Kind::holders_push));
  EXPECT_EQ(kinds(n.resume(timer(T::unpark))), (std::vector<K>{K::unpark}));
  EXPECT_TRUE(n.resume(ev(E::Kind::holders_push)).empty());  // unblocked once
  EXPECT_EQ(n.state(), M::State::parked);
  EXPECT_EQ(find(n.resume(granted(4)), K::answer)->token, 4u);
}

TEST(AcquireMachine, ParkedBackstopAndDoorbellUnblock) {
  M m = parked();
  EXPECT_EQ(kinds(m.resume(timer(T::backstop))), (std::vector<K>{K::unpark}));
  M n = parked();
  EXPECT_EQ(kinds(n.resume(ev(E::Kind::doorbell_push))), (std::vector<K>{K::unpark}));
  EXPECT_TRUE(n.resume(timer(T::backstop)).empty());
}

TEST(AcquireMachine, ADeadlineWhileParkedUnblocksAndSettlesTheBlock) {
  M m = parked();
  auto a = m.resume(timer(T::deadline));
  EXPECT_EQ(kinds(a), (std::vector<K>{K::arm, K::unpark}));
  EXPECT_EQ(a[0].timer, T::settle);
  EXPECT_TRUE(m.leaving());
  // The block granted as it ran: withdrawn, then timed_out.
  a = m.resume(granted(5));
  EXPECT_EQ(kinds(a), (std::vector<K>{K::disarm, K::send_withdraw}));
  auto w = ev(E::Kind::withdrawn);
  a = m.resume(w);
  EXPECT_EQ(find(a, K::answer)->error, Errc::timed_out);
  EXPECT_NE(find(a, K::leave_queue), nullptr);
}

TEST(AcquireMachine, ACancelDuringThePushGraceUnblocksOnce) {
  M m = parked();
  (void)m.resume(ev(E::Kind::holders_push));
  auto a = m.resume(ev(E::Kind::cancel));
  EXPECT_EQ(kinds(a), (std::vector<K>{K::arm, K::disarm, K::unpark}));
  EXPECT_EQ(a[1].timer, T::unpark);
  a = m.resume(ev(E::Kind::contended));  // lost as it ran: our claim goes, then cancelled
  EXPECT_EQ(kinds(a), (std::vector<K>{K::disarm, K::send_withdraw}));
  EXPECT_EQ(find(m.resume(ev(E::Kind::withdrawn)), K::answer)->error, Errc::cancelled);
}

TEST(AcquireMachine, AParkingConnectionLostMayHaveLeftAClaim) {
  M m = parked();
  E t = ev(E::Kind::transport);
  t.maybe_applied = true;
  t.error = Errc::connection;
  auto a = m.resume(t);
  EXPECT_EQ(kinds(a), (std::vector<K>{K::disarm, K::send_withdraw}));
  auto w = ev(E::Kind::withdrawn);
  EXPECT_EQ(kinds(m.resume(w)), (std::vector<K>{K::send_attempt}));
}

TEST(AcquireMachine, NoParkingConnectionWaitsAsTheElectedWaiterDoes) {
  M m = parked();
  EXPECT_TRUE(m.resume(ev(E::Kind::not_sent)).empty());  // its backstop stays armed
  EXPECT_EQ(m.state(), M::State::waiting);
  EXPECT_EQ(kinds(m.resume(ev(E::Kind::holders_push))), (std::vector<K>{K::disarm, K::send_attempt}));
  // A push that came while the park was unsent: attempt at once.
  M n = parked();
  (void)n.resume(ev(E::Kind::holders_push));
  EXPECT_EQ(kinds(n.resume(ev(E::Kind::not_sent))),
            (std::vector<K>{K::disarm, K::disarm, K::send_attempt}));
}

TEST(AcquireMachine, AParkedBlockSilentPastTheSettleBoundIsWithdrawnWhenItAnswers) {
  M m = parked();
  (void)m.resume(timer(T::deadline));
  auto a = m.resume(timer(T::settle));
  EXPECT_EQ(find(a, K::answer)->error, Errc::outcome_unknown);
  EXPECT_NE(find(a, K::disarm), nullptr);  // the backstop
  EXPECT_EQ(kinds(m.resume(granted(8))), (std::vector<K>{K::send_withdraw}));
}

// Our own release just woke a parked waiter (Event::taken: its acquire block ran in the server
// right behind the release): a new waiter of ours joins the wait with its first block, with no
// attempt to lose and no claim to withdraw.
TEST(AcquireMachine, StartingOnALockJustHandedToAParkedWaiterWaitsWithoutAnAttempt) {
  M m(parking());
  E s = start(2s);
  s.taken = true;
  auto a = m.resume(s);
  EXPECT_EQ(kinds(a), (std::vector<K>{K::arm, K::send_wait_read}));
  EXPECT_EQ(a[0].timer, T::deadline);
  EXPECT_FALSE(a[1].with_hdel);
  EXPECT_TRUE(m.queued());
  // Held, as expected: it waits in its place (here second, the backup).
  EXPECT_EQ(kinds(m.resume(read(1, 800))), (std::vector<K>{K::arm}));
  EXPECT_EQ(m.state(), M::State::waiting);
}

TEST(AcquireMachine, AStaleTakenHintCostsARead) {
  // The parked waiter lost, or has released already: the read finds the lock free, and the
  // waiter attempts then; granted, it leaves the queue its read joined.
  M m(parking());
  E s = start(2s);
  s.taken = true;
  (void)m.resume(s);
  EXPECT_EQ(kinds(m.resume(read(0, -2, 5000, true, M::Holders::free))),
            (std::vector<K>{K::send_attempt}));
  auto a = m.resume(granted(5));
  EXPECT_EQ(find(a, K::answer)->token, 5u);
  EXPECT_NE(find(a, K::leave_queue), nullptr);
}

TEST(AcquireMachine, TheTakenHintIsForAnExclusiveWaitInArrivalOrderOnly) {
  // One attempt (wait 0) must attempt; a fair, shared or upgrading waiter starts as it always
  // does; a waiter behind another of ours waits for its turn.
  auto first = [](M::Options o, M::Nanos wait, bool behind = false) {
    M m(o);
    E s = start(wait);
    s.taken = true;
    s.behind = behind;
    return kinds(m.resume(s));
  };
  EXPECT_EQ(first(parking(), 0s), (std::vector<K>{K::arm, K::send_attempt}));
  M::Options fair = parking();
  fair.fair = true;
  EXPECT_NE(first(fair, 2s), (std::vector<K>{K::arm, K::send_wait_read}));
  M::Options shared;
  shared.shared = true;
  EXPECT_NE(first(shared, 2s), (std::vector<K>{K::arm, K::send_wait_read}));
  M::Options upgrade;
  upgrade.upgrade = true;
  EXPECT_NE(first(upgrade, 2s), (std::vector<K>{K::arm, K::send_wait_read}));
  EXPECT_EQ(first(parking(), 2s, true), (std::vector<K>{K::arm}));
}

}  // namespace
}  // namespace lockwire::lock::detail
