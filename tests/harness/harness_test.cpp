// The harness's own promises: the profiles it draws, that every fault kind lands on the
// registered nodes, the environment variables, the replay line, the timeline window, and that
// a throwing scenario fails its seed instead of the test program.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <stdexcept>
#include <string>

#include "lockwire/lock/client.hpp"
#include "lockwire/sim/test.hpp"

namespace {

namespace sim = lockwire::sim;
namespace simtest = lockwire::sim::test;
using namespace std::chrono_literals;

simtest::Options quiet(std::uint64_t seeds) {
  simtest::Options o;
  o.seeds = seeds;
  o.from_env = false;
  o.out = nullptr;
  return o;
}

// A lock client that takes and releases one lock every 50 ms: traffic for the faults to hit.
void busy_client(simtest::Context& ctx, bool keep_timeline_lines = false) {
  auto& redis = ctx.add_redis();
  auto& node = ctx.add_client("app");
  lockwire::lock::Client client(node.loop(), ctx.connection_to(redis, node));
  client.start();
  auto timer = node.loop().make_timer([&] {
    lockwire::lock::LockRequest req;
    req.resource = "r";
    req.owner = "app";
    req.ttl = 200ms;
    client.lock(req, [&](std::error_code ec, lockwire::lock::Lease lease) {
      if (!ec) client.release(lease, [](std::error_code) {});
    });
  });
  timer->start(50ms, 50ms);
  ctx.run_until(ctx.healed_at() + 200ms);
  timer->stop();
  (void)keep_timeline_lines;
}

TEST(SimHarness, SeedsDrawExploresProfilesWithTheServerConditions) {
  for (std::uint64_t seed : {1u, 2u, 77u}) {
    const simtest::SeedResult r = simtest::run_seed([](simtest::Context&) {}, seed);
    const sim::FaultProfile p = sim::fault_profile_for(sim::kConditionsFrom + seed);
    EXPECT_EQ(r.faults, "faults=" + p.fault_list() + " intensity=" + std::to_string(p.intensity));
  }
  // Over 50 seeds, the server conditions are drawn too (they are only from kConditionsFrom on).
  bool conditions = false;
  for (std::uint64_t seed = 1; seed <= 50; ++seed) {
    const std::string f = simtest::run_seed([](simtest::Context&) {}, seed).faults;
    conditions = conditions || f.find("oom") != std::string::npos ||
                 f.find("client-pauses") != std::string::npos;
  }
  EXPECT_TRUE(conditions);
}

TEST(SimHarness, EveryFaultKindLandsOnTheRegisteredNodes) {
  std::set<std::string> kinds;
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    const simtest::SeedResult r = simtest::run_seed(
        [](simtest::Context& ctx) { busy_client(ctx); }, seed, "all", /*keep_timeline=*/true);
    EXPECT_TRUE(r.ok());
    std::size_t pos = 0;
    while ((pos = r.timeline.find(" fault ", pos)) != std::string::npos) {
      pos += 7;
      kinds.insert(r.timeline.substr(pos, r.timeline.find(' ', pos) - pos));
    }
  }
  for (const char* k : {"clog", "cut", "pause", "resume", "stall", "mono-step", "wall-step",
                        "restart", "client-pause", "oom"})
    EXPECT_TRUE(kinds.count(k)) << "no '" << k << "' fault in 12 seeds of faults=all";
}

TEST(SimHarness, NoFaultsMeansNoFaults) {
  const simtest::SeedResult r = simtest::run_seed(
      [](simtest::Context& ctx) { busy_client(ctx); }, 3, "none", true);
  EXPECT_EQ(r.timeline.find(" fault "), std::string::npos);
  EXPECT_NE(r.timeline.find("redis cmd"), std::string::npos);  // the client did run
}

TEST(SimHarness, SameSeedSameTraceAcrossRuns) {
  const auto a = simtest::run_seed([](simtest::Context& ctx) { busy_client(ctx); }, 9);
  const auto b = simtest::run_seed([](simtest::Context& ctx) { busy_client(ctx); }, 9);
  const auto c = simtest::run_seed([](simtest::Context& ctx) { busy_client(ctx); }, 10);
  EXPECT_EQ(a.hash, b.hash);
  EXPECT_NE(a.hash, c.hash);
}

TEST(SimHarness, EnvironmentPicksSeedsAndFaults) {
  int calls = 0;
  auto count = [&](simtest::Context&) { ++calls; };
  simtest::Options o = quiet(200);
  o.from_env = true;
  o.recheck_every = 0;
  ::setenv("LOCKWIRE_SIM_SEEDS", "7", 1);
  simtest::Report r = simtest::run("env", count, o);
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.seeds_run, 7u);
  EXPECT_EQ(calls, 7);
  ::unsetenv("LOCKWIRE_SIM_SEEDS");

  // One seed: run (and re-run) only it, and print its hash even when it passes.
  ::setenv("LOCKWIRE_SIM_SEED", "42", 1);
  r = simtest::run("env", count, o);
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.seeds_run, 1u);
  EXPECT_NE(r.text.find("seed 42 "), std::string::npos) << r.text;
  EXPECT_NE(r.text.find(" trace "), std::string::npos) << r.text;
  ::unsetenv("LOCKWIRE_SIM_SEED");

  // A typo is an error, not a silent "no faults".
  ::setenv("LOCKWIRE_SIM_FAULTS", "pauses,cutz", 1);
  r = simtest::run("env", count, o);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.text.find("unknown fault"), std::string::npos) << r.text;
  ::unsetenv("LOCKWIRE_SIM_FAULTS");
  ::setenv("LOCKWIRE_SIM_SEEDS", "lots", 1);
  r = simtest::run("env", count, o);
  EXPECT_FALSE(r.ok);
  ::unsetenv("LOCKWIRE_SIM_SEEDS");
}

TEST(SimHarness, FailureReportsReplayLineAndTimelineUpToTheCheck) {
  simtest::Options o = quiet(50);
  o.faults = "pauses,cuts";
  o.replay_command = "./my_test --gtest_filter=A.B";
  const simtest::Report r = simtest::run(
      "fails-at-seed-5",
      [](simtest::Context& ctx) {
        ctx.note("app", "before");
        if (ctx.seed() == 5) ctx.fail("seed five is bad");
        ctx.note("app", "after");
        for (int i = 0; i < 50; ++i) ctx.note("app", "later", std::to_string(i));
      },
      o);
  ASSERT_FALSE(r.ok);
  ASSERT_TRUE(r.failed.has_value());
  EXPECT_EQ(r.failed->seed, 5u);
  EXPECT_EQ(r.seeds_run, 5u);  // stops at the first failure
  EXPECT_EQ(r.replay_line,
            "LOCKWIRE_SIM_SEED=5 LOCKWIRE_SIM_FAULTS=pauses,cuts ./my_test --gtest_filter=A.B");
  EXPECT_NE(r.text.find("check failed: seed five is bad"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("app before"), std::string::npos) << r.text;
  // The window ends a few lines after the failed check.
  EXPECT_NE(r.text.find("later 3"), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find("later 30"), std::string::npos) << r.text;
}

TEST(SimHarness, ThrowingScenarioFailsItsSeed) {
  const simtest::Report r = simtest::run(
      "throws", [](simtest::Context&) { throw std::runtime_error("boom"); }, quiet(3));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.text.find("the scenario threw: boom"), std::string::npos) << r.text;
}

TEST(SimHarness, RestrictedClientsLogInAsAclUsers) {
  // acl-tracking alone: the restricted clients are denied CLIENT TRACKING.
  simtest::Context ctx(1, sim::fault_profile_for(sim::kConditionsFrom + 1, "acl-tracking"), 2500ms);
  auto& redis = ctx.add_redis();
  int restricted = 0;
  for (int i = 0; i < ctx.profile().clients; ++i) {
    std::string name = "c";  // (not "c" + to_string: GCC 12's false -Wrestrict)
    name += std::to_string(i);
    auto& n = ctx.add_client(name);
    const auto o = ctx.connection_to(redis, n);
    if (!o.username.empty()) {
      EXPECT_EQ(o.username, "notrack");
      ++restricted;
    }
  }
  EXPECT_GE(restricted, 1);
}

}  // namespace
