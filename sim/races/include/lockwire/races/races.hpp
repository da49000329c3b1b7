// The race catalogue: client lock strategies (lockwire and deliberately broken ones), a scenario
// harness over the simulator with ground-truth invariant checkers, named scenarios, seeded
// exploration and the `lockwire-sim list|replay|explore` commands.
//
// Ground truth: after every simulator event the harness samples, without side effects
// (RedisModel::peek), which attempt's lease the server holds, and each client's own belief. The
// checkers judge only those timelines plus what clients reported and what the fenced resource
// accepted — never the strategy's own bookkeeping.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "lockwire/loop/connection.hpp"
#include "lockwire/sim/sim_cluster.hpp"
#include "lockwire/sim/sim_redis.hpp"
#include "lockwire/sim/sim_sentinel.hpp"
#include "lockwire/sim/swarm.hpp"
#include "lockwire/sim/world.hpp"

namespace lockwire::races {

using Nanos = std::chrono::nanoseconds;
using namespace std::chrono_literals;

// ---- strategies --------------------------------------------------------------------------------

struct AcquireSpec {
  std::string resource = "r";
  std::string owner;  // unique per attempt (client.n) unless the job names one
  Nanos ttl{100ms};
  Nanos wait{0};
  bool auto_renew = false;
  bool shared = false;  // a shared (read) lease instead of an exclusive one
  int permits = 0;      // shared: a semaphore of that many holders (0: readers unlimited)
  bool fair = false;    // exclusive: grants in the order of the server's wait queue
};

struct AcquireResult {
  std::error_code ec;  // empty: granted
  std::uint64_t token = 0;
  int lease = -1;
};

// One client process's way of taking locks. Every operation sends real RESP through
// loop::Connection on the process's SimLoop; callbacks run there.
class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual void start() = 0;
  virtual void acquire(const AcquireSpec& spec, std::function<void(AcquireResult)> done) = 0;
  virtual void release(int lease, std::function<void(std::error_code)> done) = 0;
  // Takes every resource of `specs` (one owner) all or nothing; one result per spec, in order.
  // Strategies without it answer operation_not_supported for each.
  virtual void acquire_all(const std::vector<AcquireSpec>& specs,
                           std::function<void(std::vector<AcquireResult>)> done) {
    std::vector<AcquireResult> r(specs.size());
    for (auto& x : r) x.ec = std::make_error_code(std::errc::operation_not_supported);
    done(std::move(r));
  }
  // Promotes shared `lease` to an exclusive one (`spec`: its resource, owner, TTL, wait); the
  // result names the new lease. Strategies without it answer invalid_argument.
  virtual void upgrade(int lease, const AcquireSpec& spec, std::function<void(AcquireResult)> done) {
    (void)lease;
    (void)spec;
    AcquireResult r;
    r.ec = std::make_error_code(std::errc::operation_not_supported);
    done(r);
  }
  virtual void renew(int lease, std::function<void(std::error_code)> done) = 0;
  // Gives up `owner`'s wait for `resource` (lock::Client::cancel); the acquire is answered.
  // Strategies without it ignore it.
  virtual void cancel(const std::string& resource, const std::string& owner) {
    (void)resource;
    (void)owner;
  }
  // Administrative: removes every holder of `resource`.
  virtual void force_release(const std::string& resource,
                             std::function<void(std::error_code)> done) = 0;
  // The client's own belief that it may act as holder right now.
  [[nodiscard]] virtual bool believes_held(int lease) const = 0;
  // When a belief that believes_held() no longer reports ended, if the strategy knows (the
  // lease's own deadline, as true time): beliefs are sampled at events only, and a belief that
  // ended between two of them would otherwise count until the later one. nullopt: unknown.
  [[nodiscard]] virtual std::optional<Nanos> belief_ended_at(int lease) const {
    (void)lease;
    return std::nullopt;
  }
  // Ground truth in this strategy's key layout: does the server hold `owner`'s lease of that kind
  // (exclusive, or shared when `shared`)? `expire_at_ms` receives the lease's expiry on the
  // server's clock (-1: none).
  [[nodiscard]] virtual bool server_holds(const sim::RedisModel& m, std::string_view resource,
                                          std::string_view owner, bool shared,
                                          std::int64_t* expire_at_ms) const = 0;
  // Requests written and not yet answered (leak check).
  [[nodiscard]] virtual std::size_t in_flight() const = 0;
  // Requests sent so far (busy-wait check).
  [[nodiscard]] virtual std::uint64_t requests_sent() const = 0;
  virtual void close() = 0;
  // Set by the harness: the client was told that `lease` is lost.
  std::function<void(int lease)> on_lost;
  // Set by the harness: a push frame reached the client (`kind`: its first element, e.g.
  // "message", "invalidate", "unsubscribe"). Lets scenarios mark races from what was delivered.
  std::function<void(std::string_view kind)> on_push;
};

// Options a scenario sets for every client of a run; strategies that have no such option
// ignore them.
struct StrategyOptions {
  int min_replicas = 0;  // lockwire: lock::ClientOptions::min_replicas (a count)
  bool replica_majority = false;  // lockwire: min_replicas = ReplicaAcks::majority() instead
  Nanos fence_ttl{0};    // lockwire: lock::ClientOptions::fence_ttl (0: the library's default)
  // lockwire: lock::ClientOptions::parked_handoff on (the parked-* scenarios: `lockwire` there
  // is `lockwire-parked`).
  bool parked_handoff = false;
};

struct StrategyInfo {
  std::string_view name;
  std::string_view summary;
};
[[nodiscard]] std::span<const StrategyInfo> strategies() noexcept;
// nullptr for an unknown name.
[[nodiscard]] std::unique_ptr<Strategy> make_strategy(std::string_view name, sim::Node& node,
                                                      loop::ConnectionOptions options,
                                                      const StrategyOptions& so = {});

// ---- the harness -------------------------------------------------------------------------------

struct RunConfig {
  std::uint64_t seed = 1;
  std::string strategy = "lockwire";
  int clients = 3;
  bool keep_trace = false;
  bool deterministic_links = true;  // scenarios: no jitter/splits unless they ask
  Nanos orphan_grace{1s};           // a failed attempt's lease must be gone after this
  Nanos wake_bound{300ms};          // a free lock with a waiter must be granted within this
  Nanos deadline_bound{500ms};      // a wait returns by its deadline + this
  Nanos health_check{0};            // clients' ConnectionOptions::health_check_interval
  // The primary's options: ACL users (model.users), maxmemory and its policy, ...
  sim::SimRedisOptions server{};
  // Per-client connection settings (e.g. username/password of an ACL user), applied after the
  // harness's defaults and before the strategy is made.
  std::function<void(int client, loop::ConnectionOptions&)> connection{};
  // Set: a replica (redis-b, replicating with this lag) and three sentinels (s1..s3, port 26379)
  // monitoring redis-a as "mymaster" (sentinel_config); clients connect through them with
  // redis-sentinel://s1:26379,s2:26379,s3:26379#mymaster, and at each +switch-master the service
  // address "redis" moves to the new primary (as an operator's DNS would).
  std::optional<Nanos> sentinels{};
  // The clients' SentinelOptions::vouch (docs/protocol.md, *Partitions*), on as in the
  // library. The failover family turns it off: its simulated sentinels run with down-after 1 s,
  // the sentinels' PING period, which leaves them almost nothing to vouch with, and it models
  // failovers a holder hears (the partition family and range model the ones it cannot).
  bool sentinel_vouch = true;
  sim::SentinelConfig sentinel_config{};
  // With sentinels: how many replicas (redis-b, redis-c, ...), all replicating with that lag.
  int sentinel_replicas = 1;
  // Applied to every client's strategy (StrategyOptions), e.g. min_replicas.
  StrategyOptions strategy_options{};
  // The two-holders rule (checks/two_holders.cpp, reported under mutual-exclusion): no instant
  // at which two clients both count on an exclusive lease of one resource, whether or not
  // either writes. Partition scenarios and the partition swarm set it; the others judge only
  // accepted writes in an overlap (fencing makes an overlap without them harmless).
  bool strict_exclusion = false;
  // Set: a Redis Cluster (sim::SimCluster: nodes n1..n6 by default, the first `primaries` of
  // them primaries, the rest their replicas) instead of redis-a; every client connects with the
  // seed list SimCluster::url(), so lock::Client runs through its cluster router. Ground truth
  // for a resource is the primary serving its slot (SimCluster::owner), and during a
  // migration the union of the slot's source and target (MIGRATE moves each key: it is on one
  // of them); see Run::cluster_windows for the unjudged windows of a failover.
  std::optional<sim::ClusterConfig> cluster{};
};

enum class Check : std::uint8_t {
  mutual_exclusion,
  no_orphan,
  honest_release_renew,
  lease_loss_notice,
  liveness,
};
inline constexpr Check kChecks[] = {Check::mutual_exclusion, Check::no_orphan,
                                    Check::honest_release_renew, Check::lease_loss_notice,
                                    Check::liveness};
[[nodiscard]] std::string_view check_name(Check c) noexcept;

struct Verdict {
  Check check;
  std::vector<std::string> violations;  // empty: passed
};

struct Job {
  std::string resource = "r";
  Nanos ttl{100ms};
  Nanos wait{0};
  bool auto_renew = false;
  std::vector<Nanos> writes{};  // after the grant: write to the fenced resource (if believed held)
  Nanos renew_after{-1};        // after the grant (negative: never)
  Nanos release_after{-1};      // after the grant (negative: never)
  bool shared = false;          // a shared (read) lease; readers do not exclude each other
  std::string owner{};          // empty: a fresh owner id per attempt; else reuse this one
  // Shared jobs: after the grant, upgrade to exclusive (Strategy::upgrade, waiting up to
  // `wait`); `upgraded_writes` and `upgraded_release_after` are relative to that grant.
  Nanos upgrade_after{-1};
  std::vector<Nanos> upgraded_writes{};
  Nanos upgraded_release_after{-1};
  bool release_if_upgrade_fails = false;  // what a reader refused an upgrade should do
  int permits = 0;  // shared: a counting semaphore of that many holders (0: readers unlimited)
  // Non-empty: Strategy::acquire_all of these (resource ignored), all or nothing; each one is an
  // attempt of its own ("<label>/<resource>"), with the writes and release above.
  std::vector<std::string> resources{};
  bool fair = false;  // exclusive: lock::LockRequest::fair
  // Granted and released (release_after): the client starts then[0] from the release's answer,
  // at once, as a worker loop locks again; then[0].then chains on.
  std::vector<Job> then{};
};

class Run {
 public:
  // Throws std::invalid_argument when config.strategy names no strategy (strategies()).
  explicit Run(RunConfig config);
  ~Run();
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  [[nodiscard]] sim::World& world() noexcept { return *world_; }
  [[nodiscard]] sim::SimRedis& redis() noexcept { return *primary_; }
  [[nodiscard]] sim::Node& server() noexcept { return primary_->node(); }
  [[nodiscard]] sim::Node& node(int client) noexcept;
  [[nodiscard]] Strategy& strategy(int client) noexcept;
  [[nodiscard]] const RunConfig& config() const noexcept { return config_; }
  // The client's current connection (for cuts).
  [[nodiscard]] std::uint64_t connection_of(int client) const;

  // --- the DSL ---
  // Runs `fn` at true time `t` (a world event, not owned by any process).
  void at(Nanos t, std::function<void()> fn);
  // Checks `pred` every `step` from `from` until it holds (then runs `fn` once) or `until`.
  // Lets a fault land exactly inside a race window whatever the strategy's round trips are.
  void when(Nanos from, Nanos until, Nanos step, std::function<bool()> pred,
            std::function<void()> fn);
  // Client `c` starts `job` at true time `t`: acquire, then writes/renew/release relative to the
  // grant. `on_done` sees the acquire result. Returns the attempt's label (client.n), which is
  // also its owner id unless the job names one; queries below take labels.
  std::string job(int c, Nanos t, Job job, std::function<void(const AcquireResult&)> on_done = {});
  // Direct operations on the latest lease of client c (for scripted races).
  void release_latest(int c);
  void renew_latest(int c);
  void renew(std::string_view label);  // the lease of that attempt (if granted)
  void write_latest(int c);
  void force_release(int c, std::string resource);
  // Client c gives up the wait of attempt `label` (its owner) for `resource` (Strategy::cancel).
  void cancel(int c, std::string resource, std::string label);
  // An operator's own connection to the primary (node "ops", the default user, made at first
  // use): sends `args` as one command; `done` gets the reply as text ("-ERR ..." for an error,
  // "" for nil) or a transport error. Closed by finish().
  void admin(std::vector<std::string> args,
             std::function<void(std::error_code, std::string reply)> done = {});
  // Coverage: a scenario names the race it meant to hit; `hit` records it.
  void mark(std::string_view name);
  // A scenario-specific finding, reported under checker `c`.
  void violate(Check c, std::string what);
  [[nodiscard]] bool marked(std::string_view name) const;

  // --- servers ---
  // RunConfig::sentinels: the sentinels (nullptr otherwise) and the replica they may promote.
  [[nodiscard]] sim::SimSentinels* sentinels() noexcept { return sentinels_.get(); }
  [[nodiscard]] sim::SimRedis& server_at(std::size_t i) {
    return cluster_ ? cluster_->server(i) : *servers_.at(i);
  }
  sim::SimRedis& add_replica(Nanos lag);
  // RunConfig::cluster: the cluster (nullptr otherwise). Use the wrappers below for its faults:
  // they record the windows in which a release/renew's honesty is not judged.
  [[nodiscard]] sim::SimCluster* cluster() noexcept { return cluster_.get(); }
  // The slot of `resource`'s keys ({R}) and a resource name "<base><k>" whose slot primary
  // `p` serves now (the smallest k).
  [[nodiscard]] static int slot_of(std::string_view resource);
  [[nodiscard]] std::string resource_on(std::size_t p, std::string_view base) const;
  // CLUSTER FAILOVER [option] sent to replica i (see SimCluster::failover); "" when accepted.
  std::string cluster_failover(std::size_t replica, std::string_view option = {});
  void cluster_crash(std::size_t i);  // the machine dies; its replica is elected ~4 s later
  // SimCluster::migrate_slot, with the migration's source and target both ground truth of the
  // slot until `done`.
  void migrate_slot(int slot, std::size_t to, Nanos step, std::function<void()> done = {});
  [[nodiscard]] bool migrating(int slot) const;
  // From a failover's start (the CLUSTER FAILOVER, or the crash less the replication lag) to 50
  // ms after its promotion (-1: not yet): which node a release or renew acted on is not
  // the ground truth's there, so its honesty is not judged.
  struct Window {
    Nanos from{0};
    Nanos to{-1};
  };
  [[nodiscard]] const std::vector<Window>& cluster_windows() const noexcept { return windows_; }
  // Clients now reach `to` under the service name; the old primary's connections drop.
  void fail_over_to(sim::SimRedis& to);

  // Runs the world to true time `until`, sampling ground truth after every event. Then
  // `finish()` heals nothing itself: the scenario decides.
  void run_until(Nanos until);
  // Liveness/leak phase: lets everything settle for `d`, closes clients, checks leaks.
  void finish(Nanos settle = 3s);

  [[nodiscard]] std::vector<Verdict> verdicts() const;
  [[nodiscard]] bool all_pass(std::span<const Check> except = {}) const;
  [[nodiscard]] std::string report() const;  // checker verdicts + marks, one line each
  [[nodiscard]] std::string timeline() const { return world_->trace().timeline(); }
  [[nodiscard]] std::uint64_t trace_hash() const { return world_->trace().hash(); }

  // --- queries for coverage marks (ground truth so far) ---
  struct Span {
    Nanos start{-1};
    Nanos end{-1};  // -1: still open / not reported
    bool expired = false;
  };
  [[nodiscard]] std::vector<Span> server_spans(std::string_view owner) const;
  [[nodiscard]] Span acquire_span(std::string_view owner) const;  // start, reported
  [[nodiscard]] bool acquire_failed(std::string_view owner) const;
  [[nodiscard]] Span release_span(std::string_view owner) const;
  [[nodiscard]] Nanos granted_at(std::string_view owner) const;  // -1: not granted
  [[nodiscard]] Nanos told_lost_at(std::string_view owner) const;  // -1: never told
  [[nodiscard]] std::vector<Nanos> accepted_writes(std::string_view owner) const;
  [[nodiscard]] std::vector<Nanos> rejected_writes(std::string_view owner) const;
  [[nodiscard]] bool server_holds_now(std::string_view owner);
  [[nodiscard]] Span renew_span(std::string_view owner) const;  // the latest renew
  [[nodiscard]] std::vector<Nanos> pushes(int client, std::string_view kind) const;

  // Faults are healed from this instant on (liveness bounds apply only after it).
  void set_healed_at(Nanos t) noexcept { healed_at_ = t; }
  // Pending events were dropped on purpose (client killed): skip its liveness/leak checks.
  void exempt_client(int c);

  struct Impl;

 private:
  void note(std::string_view what, std::string_view detail);
  int record_attempt(int c, const std::string& label, const std::string& owner, const Job& j,
                     bool shared);
  void report_attempt(int ai, const AcquireResult& r);
  int record_grant(int c, int ai, const AcquireResult& r);
  void after_grant(int c, int li, const std::vector<Nanos>& writes, Nanos renew_after,
                   Nanos release_after);
  void upgrade_lease(int c, int li, const std::string& label, const Job& j);
  void job_all(int c, const std::string& label, const std::string& owner, const Job& j);
  RunConfig config_;
  std::unique_ptr<sim::World> world_;
  sim::SimRedis* primary_ = nullptr;
  std::vector<std::unique_ptr<sim::SimRedis>> servers_;
  std::unique_ptr<sim::SimSentinels> sentinels_;
  std::unique_ptr<sim::SimCluster> cluster_;
  struct Migration {
    int slot;
    std::size_t from, to;
  };
  std::vector<Migration> migrations_;  // in progress
  std::vector<Window> windows_;
  Nanos healed_at_{0};
  std::unique_ptr<Impl> impl_;
};

// ---- named scenarios ---------------------------------------------------------------------------

// A further strategy a scenario is run with, and the checkers documented to fire with it (the
// exact set: the others must pass). E.g. lockwire with an option that trades safety for
// availability.
struct Variant {
  std::string_view strategy;
  std::vector<Check> fires;
};

struct Scenario {
  std::string_view name;
  std::string_view summary;
  std::string_view broken;  // the broken strategy this scenario defeats
  std::string_view mark;    // coverage mark the script must hit (with any strategy)
  // Checkers lockwire is documented to fail here (limitations, see docs/races.md); usually none.
  std::vector<Check> lockwire_limits;
  void (*script)(Run& run);
  int clients = 3;
  // Non-empty: a lockwire bug this scenario reproduces (lockwire_limits lists what fires).
  std::string_view lockwire_bug = {};
  Nanos health_check{0};  // RunConfig::health_check for this scenario
  // Server options and per-client connection settings (ACL users, maxmemory, ...).
  void (*configure)(RunConfig& config) = nullptr;
  std::vector<Variant> variants = {};
};
[[nodiscard]] std::span<const Scenario> scenarios();
[[nodiscard]] const Scenario* find_scenario(std::string_view name);

struct ScenarioResult {
  std::vector<Verdict> verdicts;
  bool marked = false;
  std::uint64_t hash = 0;
  std::string timeline;  // when asked
  std::string report;
};
[[nodiscard]] ScenarioResult run_scenario(const Scenario& s, std::string_view strategy,
                                          std::uint64_t seed, bool keep_trace = false);

// ---- exploration -------------------------------------------------------------------------------

// The swarm profiles live in the simulator (lockwire/sim/swarm.hpp), shared with the user test
// harness; these names keep explore's callers unchanged.
using Profile = sim::FaultProfile;
using sim::kConditionsFrom;
using sim::kFailoversFrom;
[[nodiscard]] inline Profile profile_for(std::uint64_t seed, std::string_view forced = {}) {
  return sim::fault_profile_for(seed, forced);
}

struct ExploreResult {
  bool ok = true;
  std::vector<Verdict> verdicts;
  std::uint64_t hash = 0;
  std::uint64_t grants = 0;
  std::string timeline;
};
[[nodiscard]] ExploreResult explore_one(std::uint64_t seed, std::string_view strategy,
                                        const Profile& profile, bool keep_trace = false);
// The partition range (Profile::partitions; explore_one calls it): explore_partitions.cpp.
[[nodiscard]] ExploreResult explore_partitions(std::uint64_t seed, std::string_view strategy,
                                               const Profile& profile, bool keep_trace = false);

// ---- exhaustive cut placement ------------------------------------------------------------------
// A tiny hand-off (c2 holds 60 ms; c1 waits, is woken, renews, writes, releases, then acquires
// once more) run once per single connection cut: c1's connection is cut after every k-th byte
// boundary of what it sends (up) or receives (down) from 1 ms on — request applied with its reply
// lost, or never applied, at every point of the protocol. Deterministic links: the runs differ
// only in the cut.
struct CutPoint {
  bool to_server = true;
  std::uint64_t after = 0;
};
// `bytes_up`/`bytes_down` (optional) receive c1's traffic on that connection from 1 ms on.
[[nodiscard]] ExploreResult cut_run(std::string_view strategy, std::optional<CutPoint> cut,
                                    bool keep_trace = false, std::uint64_t* bytes_up = nullptr,
                                    std::uint64_t* bytes_down = nullptr);
struct ExhaustResult {
  std::uint64_t bytes_up = 0, bytes_down = 0;  // c1's traffic in the uncut run (from 1 ms)
  std::uint64_t runs = 0;
  std::vector<std::pair<CutPoint, std::vector<Verdict>>> failures;
};
// Every `step`-th cut point in both directions (step 1: all of them).
[[nodiscard]] ExhaustResult exhaust_cuts(std::string_view strategy, std::uint64_t step = 1);



}  // namespace lockwire::races
