// Simulation tests of your own services: hand the harness a scenario that builds your services on
// a simulated World (your code uses lock::Client or loop::Connection on a node's loop,
// unchanged) and checks your invariants; it runs the scenario over many seeds, each with a swarm
// fault profile (the ones `lockwire-sim explore` draws), re-runs a share of seeds to catch
// nondeterminism, and on a failure prints one replay line and the trace timeline.
//
//   void scenario(lockwire::sim::test::Context& ctx) {
//     auto& redis = ctx.add_redis();
//     auto& node = ctx.add_client("worker-1");
//     MyWorker w(node.loop(), ctx.connection_to(redis, node));   // your code
//     ctx.run_until(10s);                                          // faults heal at 2.5 s
//     ctx.check(w.done(), "the worker finished");
//   }                                     // your objects go first; the World after them
//   auto report = lockwire::sim::test::run("my-suite", scenario);
//
// Environment (read by run() unless Options::from_env is false):
//   LOCKWIRE_SIM_SEED=S     run seed S only, print its trace hash, and its timeline on failure
//   LOCKWIRE_SIM_SEEDS=N    how many seeds (from Options::first_seed)
//   LOCKWIRE_SIM_FAULTS=F   faults for every seed instead of a swarm draw: none, all, or a comma
//                           list (latency,jitter,splits,clogs,cuts,pauses,stalls,mono-steps,
//                           wall-steps,restarts,client-pauses,acl-tracking,acl-caching,oom)
//
// Determinism: a seed must give the same trace every time. Your scenario may not read real
// clocks, start threads, draw randomness except from World::scenario_rng() or the loop's
// random(), nor keep state between runs (statics, globals). docs/simulation.md says more.
// GoogleTest: lockwire/sim/gtest.hpp.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lockwire/loop/connection.hpp"
#include "lockwire/sim/sim_redis.hpp"
#include "lockwire/sim/swarm.hpp"
#include "lockwire/sim/world.hpp"

namespace lockwire::sim::test {

struct Options {
  std::uint64_t seeds = 200;      // LOCKWIRE_SIM_SEEDS overrides
  std::uint64_t first_seed = 1;
  std::string faults{};           // empty: a swarm profile per seed; else as LOCKWIRE_SIM_FAULTS
  std::uint64_t recheck_every = 10;  // every K-th seed runs twice, trace hashes compared; 0: off
  Nanos faults_until{2500ms};     // every fault starts and ends before this (Context::healed_at)
  std::size_t timeline_lines = 300;  // the last lines of a failing seed's timeline are printed
  // The command the replay line re-runs (after LOCKWIRE_SIM_SEED=...); empty: this program.
  std::string replay_command{};
  bool from_env = true;
  std::FILE* out = stdout;  // nullptr: print nothing (Report::text still has it)
};

// One run of the scenario: its World, the servers and clients the faults may hit.
class Context {
 public:
  Context(std::uint64_t seed, const FaultProfile& profile, Nanos faults_until);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  [[nodiscard]] World& world() noexcept { return *world_; }
  [[nodiscard]] std::uint64_t seed() const noexcept { return seed_; }
  [[nodiscard]] const FaultProfile& profile() const noexcept { return profile_; }
  // No fault is active from this instant on (the harness schedules them all before it).
  [[nodiscard]] Nanos healed_at() const noexcept { return faults_until_; }

  // A simulated Redis on its own node, owned by the harness (it outlives your objects). Faults:
  // stalls, restarts (full persistence), CLIENT PAUSE windows, OOM windows.
  SimRedis& add_redis(std::string node_name = "redis", SimRedisOptions options = {});
  // A node for your services. Faults: latency/jitter/splits/clogs on its links to the Redis
  // nodes, connection cuts, process pauses, monotonic and wall clock steps.
  Node& add_client(std::string name);
  // How `client` reaches `redis`; under the acl-* faults some clients log in as a user denied
  // CLIENT TRACKING or CLIENT CACHING (lockwire then degrades to polling).
  [[nodiscard]] loop::ConnectionOptions connection_to(const SimRedis& redis,
                                                      const Node& client) const;

  // Runs the world to true time `t` (the first run schedules the faults).
  void run_until(Nanos t);
  // Runs until pred() holds or `deadline`; false if the deadline came first.
  bool run_until(const std::function<bool()>& pred, Nanos deadline);

  // Invariant checks: a failed one fails the seed (the run goes on).
  void check(bool ok, std::string_view what);
  void fail(std::string what);
  [[nodiscard]] const std::vector<std::string>& failures() const noexcept { return failures_; }
  // A line of your own in the trace (and the timeline printed on failure).
  void note(std::string_view who, std::string_view what, std::string_view detail = {});

 private:
  void schedule_faults();
  std::uint64_t seed_;
  FaultProfile profile_;
  Nanos faults_until_;
  std::unique_ptr<World> world_;
  std::vector<std::unique_ptr<SimRedis>> redis_;
  std::vector<Node*> clients_;
  std::vector<std::string> failures_;
  bool faults_scheduled_ = false;
};

using Scenario = std::function<void(Context&)>;

struct SeedResult {
  std::uint64_t seed = 0;
  std::string faults;  // the profile: "faults=... intensity=N"
  std::uint64_t hash = 0;
  std::uint64_t events = 0;
  std::vector<std::string> failures;  // empty: every check passed
  std::string timeline;               // when kept
  [[nodiscard]] bool ok() const noexcept { return failures.empty(); }
};

// One seed, once. `faults` as Options::faults.
[[nodiscard]] SeedResult run_seed(const Scenario& scenario, std::uint64_t seed,
                                  std::string_view faults = {}, bool keep_timeline = false,
                                  Nanos faults_until = 2500ms);

struct Report {
  bool ok = true;
  std::uint64_t seeds_run = 0;
  std::uint64_t rechecked = 0;
  std::optional<SeedResult> failed;  // the first failing seed, with its timeline
  bool nondeterministic = false;     // `failed` gave two different traces
  std::uint64_t other_hash = 0;      // the second trace's hash then
  std::string replay_line;           // "LOCKWIRE_SIM_SEED=S ... command"
  std::string text;                  // everything printed
};

// Runs `scenario` over the seeds; stops at the first failure or nondeterminism.
[[nodiscard]] Report run(std::string_view name, const Scenario& scenario, Options options = {});

// This program as a shell word (from /proc/self/exe), for replay lines.
[[nodiscard]] std::string self_command();

}  // namespace lockwire::sim::test
