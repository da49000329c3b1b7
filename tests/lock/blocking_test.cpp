// BlockingClient as its users hold it (issue #31): try-lock answers, a guard that outlives its
// client, the calls that had to go through run_on_loop, per-call words, many threads at once.
// Real redis-server (lock_fixture.hpp).
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "lock_fixture.hpp"
#include "lockwire/lock/blocking.hpp"

namespace lockwire::lock {
namespace {

using namespace std::chrono_literals;

// A try-lock (wait 0) tells "held by someone else" from "the wait ran out", as redis-py's
// acquire(blocking=False), redsync's TryLock and flock -n do.
TEST_F(LockTest, TryLockSaysBusyAndAWaitThatRunsOutSaysTimedOut) {
  BlockingClient a(conn_options());
  BlockingClient b(conn_options());
  Lease held;
  ASSERT_FALSE(a.lock(req("t", "a", 10s), held));
  Lease none;
  EXPECT_EQ(b.lock(req("t", "b", 10s, 0s), none), Errc::busy);
  EXPECT_FALSE(b.last_error().empty());
  EXPECT_EQ(b.lock(req("t", "b", 10s, 150ms), none), Errc::timed_out);
  Lease shared;
  ASSERT_FALSE(a.lock(req("s", "r1", 10s, 0s, Kind::shared), shared));
  EXPECT_EQ(b.lock(req("s", "w", 10s, 0s), none), Errc::busy);  // readers exclude a writer
  // The async client answers the same.
  auto c = make_client();
  EXPECT_EQ(acquire(*c, req("t", "c")).ec, Errc::busy);
  ASSERT_FALSE(a.release(held));
  EXPECT_FALSE(b.lock(req("t", "b", 10s, 0s), none)) << b.last_error();
  EXPECT_TRUE(b.last_error().empty());
}

// The member order that used to segfault: the guard is declared first, so the client goes
// first. The guard releases nothing (it says Errc::closed); the lease expires on the server.
TEST_F(LockTest, GuardOutlivingItsClientIsANoOp) {
  std::optional<std::error_code> told;
  {
    struct Service {
      LeaseGuard guard;  // destroyed after the client below
      BlockingClient locks;
    };
    Service s{LeaseGuard{}, BlockingClient(conn_options())};
    std::error_code ec;
    s.guard = s.locks.lock_guard(req("outlive", "svc", 2s), ec);
    ASSERT_FALSE(ec) << ec.message();
    s.guard.on_release_error = [&](std::error_code e) { told = e; };
  }
  ASSERT_TRUE(told.has_value());
  EXPECT_EQ(*told, Errc::closed);
  // Not released: still held until its TTL, then gone.
  auto a = make_client();
  EXPECT_EQ(inspect(*a, "outlive").holders.size(), 1u);
  std::error_code moved_ec;
  LeaseGuard g2;
  {
    BlockingClient locks(conn_options());
    g2 = locks.lock_guard(req("outlive2", "svc", 2s), moved_ec);
    ASSERT_FALSE(moved_ec);
  }
  EXPECT_EQ(g2.release(), Errc::closed);
  EXPECT_EQ(g2.release(), std::error_code());  // once only
}

TEST_F(LockTest, BlockingUpgradeLockAllAndCancel) {
  BlockingClient locks(conn_options());
  // upgrade: shared to exclusive, a higher token.
  Lease shared;
  ASSERT_FALSE(locks.lock(req("u", "me", 10s, 0s, Kind::shared), shared));
  Lease ex;
  ASSERT_FALSE(locks.upgrade(shared, 1s, ex)) << locks.last_error();
  EXPECT_EQ(ex.kind(), Kind::exclusive);
  EXPECT_GT(ex.token(), shared.token());
  ASSERT_FALSE(locks.release(ex));
  // lock_all: all or nothing, one release.
  LeaseSet set;
  ASSERT_FALSE(locks.lock_all({"m2", "m1", "m3"}, req("", "me", 10s), set)) << locks.last_error();
  ASSERT_EQ(set.leases.size(), 3u);
  EXPECT_TRUE(set.held());
  BlockingClient other(conn_options());
  Lease blocked;
  EXPECT_EQ(other.lock(req("m2", "x", 10s, 0s), blocked), Errc::busy);
  ASSERT_FALSE(locks.release(set));
  EXPECT_FALSE(set.held());
  // cancel from another thread ends a blocked lock() in this one.
  Lease held;
  ASSERT_FALSE(locks.lock(req("c", "holder", 10s), held));
  std::thread canceller([&] {
    std::this_thread::sleep_for(200ms);
    other.cancel("c", "waiter");
  });
  const auto t0 = std::chrono::steady_clock::now();
  Lease waited;
  EXPECT_EQ(other.lock(req("c", "waiter", 10s, 20s), waited), Errc::cancelled);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
  canceller.join();
  // Nothing of the cancelled waiter was left behind: the holder's release lets anyone in.
  ASSERT_FALSE(locks.release(held));
  Lease after;
  EXPECT_FALSE(other.lock(req("c", "late", 10s, 0s), after)) << other.last_error();
}

// A bad request says what is wrong, not only "invalid argument"; the words are the calling
// thread's own, not another thread's.
TEST_F(LockTest, BlockingLastErrorIsPerCallAndPerThread) {
  BlockingClient locks(conn_options());
  Lease l;
  EXPECT_EQ(locks.lock(req("", "me", 10s), l), Errc::invalid_argument);
  const std::string words = locks.last_error();
  EXPECT_NE(words, "");
  EXPECT_NE(words, make_error_code(Errc::invalid_argument).message()) << words;
  std::string other_words = "unset";
  std::thread t([&] {
    Lease ok;
    (void)locks.lock(req("fine", "t", 10s), ok);
    other_words = locks.last_error();
    (void)locks.release(ok);
  });
  t.join();
  EXPECT_EQ(other_words, "");
  EXPECT_EQ(locks.last_error(), words);  // this thread's words are still its own
}

// Many threads on one BlockingClient, four resources: never two holders of one resource at
// once (a counter per resource), every lock granted. Run under TSan by the tsan preset.
TEST_F(LockTest, BlockingClientFromManyThreads) {
  BlockingClient locks(conn_options());
  constexpr int kThreads = 8, kRounds = 25, kResources = 4;
  std::array<std::atomic<int>, kResources> inside{};
  std::atomic<int> overlaps{0}, granted{0}, failed{0};
  const std::vector<std::string> names = {"mt0", "mt1", "mt2", "mt3"};
  const std::vector<std::string> owners = {"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7"};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRounds; ++i) {
        const int r = (t + i) % kResources;
        Lease l;
        const std::error_code ec =
            locks.lock(req(names[static_cast<std::size_t>(r)], owners[static_cast<std::size_t>(t)], 10s, 10s), l);
        if (ec) {
          ++failed;
          continue;
        }
        ++granted;
        if (inside[static_cast<std::size_t>(r)].fetch_add(1) != 0) ++overlaps;
        std::this_thread::sleep_for(200us);
        inside[static_cast<std::size_t>(r)].fetch_sub(1);
        if (locks.release(l)) ++failed;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(granted.load(), kThreads * kRounds);
}

}  // namespace
}  // namespace lockwire::lock
