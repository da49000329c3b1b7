// The coroutine interface (lockwire/lock/coro.hpp) on a real redis-server: every operation
// awaited, try-lock answers, the guard's release awaited or sent from its destructor, a guard
// outliving its client, exceptions through nested tasks. Each test ends with an empty loop.
#include "lockwire/lock/coro.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "lock_fixture.hpp"

namespace lockwire::lock {
namespace {

using namespace std::chrono_literals;

co::Task<std::uint64_t> take_and_give_back(Client& c, std::string owner) {
  auto got = co_await co::lock(c, testing::request("co", std::move(owner), 10s, 5s));
  if (!got) co_return 0;
  const std::uint64_t token = got->token();
  const std::error_code rec = co_await co::release(c, *got);
  co_return rec ? 0 : token;
}

TEST_F(LockTest, CoroutinesAwaitEveryOperation) {
  auto a = make_client();
  auto b = make_client();
  bool finished = false;
  std::vector<std::uint64_t> tokens;
  std::error_code busy, timed_out, after_release;
  std::size_t holders_seen = 0, set_size = 0;
  auto body = [&]() -> co::Task<void> {
    auto held = co_await co::lock(*a, testing::request("r", "a", 10s));
    EXPECT_TRUE(held) << held.error().message();
    auto info = co_await co::inspect(*b, "r");
    holders_seen = info ? info->holders.size() : 0;
    busy = (co_await co::lock(*b, testing::request("r", "b", 10s, 0s))).error();
    timed_out = (co_await co::lock(*b, testing::request("r", "b", 10s, 100ms))).error();
    EXPECT_FALSE(co_await co::renew(*a, *held));
    after_release = co_await co::release(*a, *held);
    // Nested tasks: results come back through co_await.
    tokens.push_back(co_await take_and_give_back(*a, "x"));
    tokens.push_back(co_await take_and_give_back(*b, "y"));
    // A named vector: GCC 12 miscompiles a braced list of string literals inside co_await
    // ("array used as initializer").
    std::vector<std::string> names{"s2", "s1"};
    auto set = co_await co::lock_all(*a, std::move(names), testing::request("", "all", 10s));
    set_size = set ? set->leases.size() : 0;
    if (set) {
      EXPECT_FALSE(co_await co::release(*a, *set));
    }
    auto shared = co_await co::lock(*a, testing::request("u", "me", 10s, 0s, Kind::shared));
    auto ex = co_await co::upgrade(*a, *shared, 1s);
    EXPECT_TRUE(ex) << ex.error().message();
    if (ex) {
      EXPECT_FALSE(co_await co::release(*a, *ex));
    }
    finished = true;
  };
  co::spawn(body());
  run_until([&] { return finished; });
  EXPECT_EQ(holders_seen, 1u);
  EXPECT_EQ(busy, Errc::busy);
  EXPECT_EQ(timed_out, Errc::timed_out);
  EXPECT_FALSE(after_release);
  ASSERT_EQ(tokens.size(), 2u);
  EXPECT_GT(tokens[0], 0u);
  EXPECT_GT(tokens[1], tokens[0]);
  EXPECT_EQ(set_size, 2u);
}

TEST_F(LockTest, CoroutineGuardReleasesAwaitedOrAtScopeEnd) {
  auto a = make_client();
  bool finished = false;
  std::error_code awaited = make_error_code(Errc::protocol);
  auto body = [&]() -> co::Task<void> {
    {
      auto got = co_await co::lock(*a, testing::request("g1", "me", 10s));
      co::LeaseGuard guard(*a, std::move(*got));
      EXPECT_TRUE(guard);
    }  // a release sent without waiting
    auto got = co_await co::lock(*a, testing::request("g2", "me", 10s));
    co::LeaseGuard guard(*a, std::move(*got));
    awaited = co_await guard.release();
    EXPECT_EQ(co_await guard.release(), Errc::closed);  // once only
    finished = true;
  };
  co::spawn(body());
  run_until([&] { return finished; });
  EXPECT_FALSE(awaited);
  run_until([&] { return inspect(*a, "g1").holders.empty(); });
  EXPECT_TRUE(inspect(*a, "g2").holders.empty());
}

// The member order that segfaulted with the blocking guard: here the guard outlives the client;
// it sends nothing, and the lease expires with its TTL.
TEST_F(LockTest, CoroutineGuardOutlivingItsClientSendsNothing) {
  co::LeaseGuard kept;
  {
    auto a = make_client();
    bool done = false;
    auto body = [&]() -> co::Task<void> {
      auto got = co_await co::lock(*a, testing::request("kept", "me", 2s));
      kept = co::LeaseGuard(*a, std::move(*got));
      done = true;
    };
    co::spawn(body());
    run_until([&] { return done; });
  }
  EXPECT_FALSE(kept.lease().empty());
  bool finished = false;
  std::error_code ec;
  auto body = [&]() -> co::Task<void> {
    ec = co_await kept.release();
    finished = true;
  };
  co::spawn(body());
  EXPECT_TRUE(finished);  // answered at once: nothing to wait for
  EXPECT_EQ(ec, Errc::closed);
  auto b = make_client();
  EXPECT_EQ(inspect(*b, "kept").holders.size(), 1u);  // not released: it expires
}

co::Task<int> throws_after_an_await(Client& c) {
  (void)co_await co::inspect(c, "t");
  throw std::runtime_error("from the task");
}

TEST_F(LockTest, CoroutineExceptionsReachTheAwaiter) {
  auto a = make_client();
  bool caught = false, finished = false;
  auto body = [&]() -> co::Task<void> {
    try {
      (void)co_await throws_after_an_await(*a);
    } catch (const std::runtime_error& e) {
      caught = std::string(e.what()) == "from the task";
    }
    auto r = co_await co::lock(*a, testing::request("", "bad", 10s));
    EXPECT_THROW((void)r.value(), std::system_error);
    finished = true;
  };
  co::spawn(body());
  run_until([&] { return finished; });
  EXPECT_TRUE(caught);
}

}  // namespace
}  // namespace lockwire::lock
