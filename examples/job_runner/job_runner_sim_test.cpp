// The job runner's simulation test: three workers, one Redis, twelve jobs, swarm faults on every
// seed. The invariants: each job's result is written exactly once, and every job is done once
// the faults have healed. The broken variant (workers that do not pass their fencing token)
// must be caught; replay_test.sh checks that its printed replay line reproduces the trace.
#include <string>
#include <vector>

#include "job_runner.hpp"
#include "lockwire/sim/gtest.hpp"

namespace {

namespace simtest = lockwire::sim::test;
using namespace std::chrono_literals;

void job_runner_scenario(simtest::Context& ctx, bool fenced) {
  auto& redis = ctx.add_redis();
  job_runner::Store store;
  store.on_write = [&](int job, const std::string& worker, std::uint64_t token, bool ok) {
    const std::string what =
        "job " + std::to_string(job) + " by " + worker + " token " + std::to_string(token);
    ctx.note("store", ok ? "write" : "REFUSED", what);
    // Failing at the write (not only at the end) puts the failure where it happens in the trace.
    if (ok && store.writes().at(job).size() == 2) ctx.fail("second write of " + what);
  };
  std::vector<int> jobs;
  for (int j = 1; j <= 12; ++j) jobs.push_back(j);
  std::vector<std::unique_ptr<job_runner::Worker>> workers;
  for (int i = 1; i <= 3; ++i) {
    auto& node = ctx.add_client("worker-" + std::to_string(i));
    job_runner::WorkerOptions o;
    o.name = node.name();
    o.fenced = fenced;
    workers.push_back(std::make_unique<job_runner::Worker>(
        node.loop(), ctx.connection_to(redis, node), store, jobs, o));
  }
  for (auto& w : workers) w->start();

  auto all_done = [&] {
    for (auto& w : workers)
      if (!w->finished()) return false;
    return true;
  };
  ctx.run_until(all_done, ctx.healed_at() + 10s);

  ctx.check(all_done(), "every worker finished its queue after the faults healed");
  for (int j : jobs) {
    const auto it = store.writes().find(j);
    const std::size_t n = it == store.writes().end() ? 0 : it->second.size();
    if (n == 1) continue;
    std::string who;
    if (n > 1)
      for (const auto& w : it->second)
        who += " " + w.worker + "(token " + std::to_string(w.token) + ")";
    ctx.fail("job " + std::to_string(j) + " written " + std::to_string(n) + " times" +
             (who.empty() ? "" : ":" + who));
  }
}

// The runner as shipped: fenced writes. Must pass every seed.
LOCKWIRE_SIM_TEST(JobRunner, FencedWorkersWriteEachJobOnce, simtest::Options{.seeds = 500}) {
  job_runner_scenario(ctx, true);
}

// The broken variant, run only by replay_test.sh (it must fail, and print a replay line).
LOCKWIRE_SIM_TEST(JobRunner, DISABLED_UnfencedWorkers) {
  job_runner_scenario(ctx, false);
}

// The harness catches the broken variant within the default seeds.
TEST(JobRunnerHarness, CatchesUnfencedWorkers) {
  simtest::Options o;
  o.from_env = false;
  o.out = nullptr;
  const simtest::Report r =
      simtest::run("unfenced", [](simtest::Context& ctx) { job_runner_scenario(ctx, false); }, o);
  ASSERT_FALSE(r.ok);
  ASSERT_TRUE(r.failed.has_value());
  EXPECT_FALSE(r.nondeterministic) << r.text;
  EXPECT_NE(r.text.find("written 2 times"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("second write of job"), std::string::npos) << r.text;
  EXPECT_NE(r.replay_line.find("LOCKWIRE_SIM_SEED=" + std::to_string(r.failed->seed)),
            std::string::npos);
  // The failing seed replays to the same trace, in this process too.
  const simtest::SeedResult again = simtest::run_seed(
      [](simtest::Context& ctx) { job_runner_scenario(ctx, false); }, r.failed->seed);
  EXPECT_EQ(again.hash, r.failed->hash);
  EXPECT_FALSE(again.ok());
}

// A scenario whose behaviour depends on state kept between runs (a static counter) gives two
// traces for one seed: the harness must say so.
TEST(JobRunnerHarness, FlagsNondeterministicScenario) {
  simtest::Options o;
  o.from_env = false;
  o.out = nullptr;
  o.seeds = 5;
  const simtest::Report r = simtest::run(
      "leaky",
      [](simtest::Context& ctx) {
        static int runs = 0;  // the bug: survives from one run to the next
        auto& node = ctx.add_client("app");
        const int delay_ms = 1 + (++runs % 2);
        ctx.world().schedule(std::chrono::milliseconds(delay_ms), &node, [&ctx] {
          ctx.note("app", "tick");
        });
        ctx.run_until(10ms);
      },
      o);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.nondeterministic);
  EXPECT_NE(r.text.find("NONDETERMINISTIC"), std::string::npos) << r.text;
  EXPECT_NE(r.replay_line.find("LOCKWIRE_SIM_SEED=1"), std::string::npos) << r.text;
}

// The same scenario without the leak is deterministic: the check does not fire by itself.
TEST(JobRunnerHarness, DeterministicScenarioPasses) {
  simtest::Options o;
  o.from_env = false;
  o.out = nullptr;
  o.seeds = 20;
  o.recheck_every = 1;
  const simtest::Report r = simtest::run(
      "clean",
      [](simtest::Context& ctx) {
        auto& node = ctx.add_client("app");
        const auto delay = std::chrono::milliseconds(1 + ctx.world().scenario_rng().below(5));
        ctx.world().schedule(delay, &node, [&ctx] { ctx.note("app", "tick"); });
        ctx.run_until(10ms);
      },
      o);
  EXPECT_TRUE(r.ok) << r.text;
  EXPECT_EQ(r.rechecked, 20u);
}

}  // namespace
