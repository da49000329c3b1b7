// GoogleTest integration for the simulation-test harness (lockwire/sim/test.hpp). Only this
// header needs gtest; include it from your test sources.
//
//   LOCKWIRE_SIM_TEST(Orders, NoDoubleCharge) {        // the body is the scenario; `ctx` is its
//     auto& redis = ctx.add_redis();                   // sim::test::Context
//     ...
//     ctx.check(charges == 1, "one charge per order");
//   }
//   LOCKWIRE_SIM_TEST(Orders, Quick, lockwire::sim::test::Options{.seeds = 20}) { ... }
//
// A failing seed fails the test with its replay line, which re-runs only this test:
//   LOCKWIRE_SIM_SEED=17 ./orders_test --gtest_filter=Orders.NoDoubleCharge
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "lockwire/sim/test.hpp"

namespace lockwire::sim::test {

// This program, filtered to the running test (and allowed to run it if it is DISABLED_).
inline std::string gtest_replay_command() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  if (info == nullptr) return self_command();
  const std::string full = std::string(info->test_suite_name()) + "." + info->name();
  std::string cmd = self_command() + " --gtest_filter=" + full;
  if (full.find("DISABLED_") != std::string::npos) cmd += " --gtest_also_run_disabled_tests";
  return cmd;
}

// run() named after the running test, replaying through it.
inline Report gtest_run(const Scenario& scenario, Options options = {}) {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  if (options.replay_command.empty()) options.replay_command = gtest_replay_command();
  const std::string name =
      info ? std::string(info->test_suite_name()) + "." + info->name() : "simulation";
  return run(name, scenario, std::move(options));
}

}  // namespace lockwire::sim::test

#define LOCKWIRE_SIM_TEST(suite, name, ...)                                                  \
  static void suite##_##name##_lockwire_scenario(::lockwire::sim::test::Context& ctx);      \
  TEST(suite, name) {                                                                        \
    const ::lockwire::sim::test::Report lockwire_report = ::lockwire::sim::test::gtest_run(  \
        &suite##_##name##_lockwire_scenario __VA_OPT__(, ) __VA_ARGS__);                     \
    EXPECT_TRUE(lockwire_report.ok) << "replay: " << lockwire_report.replay_line;           \
  }                                                                                          \
  static void suite##_##name##_lockwire_scenario([[maybe_unused]] ::lockwire::sim::test::Context& ctx)
