// The race catalogue on the simulator: every named scenario hits its race, lockwire passes it,
// its broken strategy fails it, and it replays exactly; every checker fires on some broken
// strategy; a small exploration run finds nothing and is deterministic.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>

#include "lockwire/races/races.hpp"

namespace lockwire::races {
namespace {

std::string dump(const ScenarioResult& r) {
  return r.report;
}

bool fires(const ScenarioResult& r, Check c) {
  for (const auto& v : r.verdicts)
    if (v.check == c) return !v.violations.empty();
  return false;
}

bool any_fires(const ScenarioResult& r, std::span<const Check> except = {}) {
  for (const auto& v : r.verdicts) {
    if (v.violations.empty()) continue;
    if (std::find(except.begin(), except.end(), v.check) != except.end()) continue;
    return true;
  }
  return false;
}

class Named : public ::testing::TestWithParam<std::string> {};

TEST_P(Named, LockwirePassesBrokenFailsRaceIsHitAndReplays) {
  const Scenario* s = find_scenario(GetParam());
  ASSERT_NE(s, nullptr);
  const ScenarioResult lw = run_scenario(*s, "lockwire", 1);
  EXPECT_TRUE(lw.marked) << "race window not hit with lockwire\n" << dump(lw);
  EXPECT_FALSE(any_fires(lw, s->lockwire_limits)) << dump(lw);
  // Documented limitations must really show (a limitation that cannot be seen is not tested).
  for (Check c : s->lockwire_limits) EXPECT_TRUE(fires(lw, c)) << check_name(c) << "\n" << dump(lw);
  EXPECT_EQ(run_scenario(*s, "lockwire", 1).hash, lw.hash) << "not deterministic";
  if (!s->broken.empty()) {
    const ScenarioResult br = run_scenario(*s, s->broken, 1);
    EXPECT_TRUE(br.marked) << "race window not hit with " << s->broken << "\n" << dump(br);
    EXPECT_TRUE(any_fires(br)) << s->broken << " should fail\n" << dump(br);
    EXPECT_EQ(run_scenario(*s, s->broken, 1).hash, br.hash) << "not deterministic";
  }
  // Further strategies (e.g. lockwire with an option): exactly the documented checkers fire.
  for (const Variant& v : s->variants) {
    const ScenarioResult vr = run_scenario(*s, v.strategy, 1);
    EXPECT_TRUE(vr.marked) << "race window not hit with " << v.strategy << "\n" << dump(vr);
    for (Check c : kChecks) {
      const bool documented = std::find(v.fires.begin(), v.fires.end(), c) != v.fires.end();
      EXPECT_EQ(fires(vr, c), documented) << v.strategy << ": " << check_name(c) << "\n"
                                          << dump(vr);
    }
    EXPECT_EQ(run_scenario(*s, v.strategy, 1).hash, vr.hash) << "not deterministic";
  }
}

std::vector<std::string> names() {
  std::vector<std::string> v;
  for (const auto& s : scenarios()) v.emplace_back(s.name);
  return v;
}

INSTANTIATE_TEST_SUITE_P(Races, Named, ::testing::ValuesIn(names()), [](const auto& info) {
  std::string n = info.param;
  for (auto& ch : n)
    if (ch == '-') ch = '_';
  return n;
});

// Each checker is shown to fire on a deliberately broken strategy.
struct FireCase {
  const char* scenario;
  const char* strategy;
  Check check;
};

TEST(Checkers, EachFiresOnABrokenStrategy) {
  const FireCase cases[] = {
      {"pause-beyond-ttl", "no-fencing", Check::mutual_exclusion},
      {"wait-deadline-during-command", "give-up-on-deadline", Check::no_orphan},
      {"acquire-reply-lost", "replay-on-unknown", Check::no_orphan},
      {"delete-wrong-lock", "get-then-del", Check::honest_release_renew},
      {"extend-wrong-lock", "blind-renew", Check::honest_release_renew},
      {"release-reply-lost", "assume-released", Check::honest_release_renew},
      {"delete-wrong-lock", "get-then-del", Check::lease_loss_notice},
      {"client-wall-clock-step", "wall-clock", Check::lease_loss_notice},
      {"expiry-wake", "no-expiry-wake", Check::liveness},
      {"notify-before-subscribe", "no-recheck", Check::liveness},
      // Server conditions (issue #13), each on lockwire with one regression flag set.
      {"pause-during-acquire-deadline", "answer-at-deadline", Check::no_orphan},
      {"wait-block-refused", "keep-failed-claim", Check::no_orphan},
      {"tracking-refused", "reread-untracked", Check::liveness},
      {"lock-keys-evicted", "ignore-eviction", Check::lease_loss_notice},
      // Failovers behind the simulated sentinels (issue #15).
      {"graceful-failover-mid-hold", "single-node", Check::mutual_exclusion},
      {"old-primary-still-writable", "single-node", Check::mutual_exclusion},
      {"crash-failover-lost-token", "counter-tokens", Check::mutual_exclusion},
      // Upgrade in place (issue #20): the checker's upgrade-continuity rule.
      {"upgrade-with-writer-waiting", "release-then-lock", Check::mutual_exclusion},
  };
  std::set<Check> covered;
  for (const auto& c : cases) {
    const Scenario* s = find_scenario(c.scenario);
    ASSERT_NE(s, nullptr) << c.scenario;
    const ScenarioResult r = run_scenario(*s, c.strategy, 1);
    EXPECT_TRUE(fires(r, c.check))
        << c.scenario << " / " << c.strategy << ": " << check_name(c.check) << " did not fire\n"
        << dump(r);
    // ... and the same checker stays quiet for lockwire on that scenario.
    const ScenarioResult lw = run_scenario(*s, "lockwire", 1);
    EXPECT_FALSE(fires(lw, c.check)) << c.scenario << "\n" << dump(lw);
    covered.insert(c.check);
  }
  EXPECT_EQ(covered.size(), std::size(kChecks));
}

// The two-holders rule (RunConfig::strict_exclusion, issue #28) fires on a strategy that keeps
// counting on its lease through a partition, with the overlap's length.
TEST(Checkers, TwoHoldersFiresOnABrokenStrategy) {
  const ScenarioResult r = run_scenario(
      *find_scenario("sentinel-partition-holder-with-old-primary"), "single-node", 1);
  bool two = false;
  for (const auto& v : r.verdicts) {
    if (v.check != Check::mutual_exclusion) continue;
    for (const auto& s : v.violations) two = two || s.rfind("two holders of r for ", 0) == 0;
  }
  EXPECT_TRUE(two) << dump(r);
}

TEST(Scenarios, OtherSeedsStillPass) {
  for (const char* name : {"delete-wrong-lock", "acquire-reply-lost", "notify-before-subscribe",
                           "pause-during-acquire-deadline", "wait-block-refused",
                           "tracking-refused", "lock-keys-evicted"}) {
    const Scenario* s = find_scenario(name);
    for (std::uint64_t seed : {2u, 3u}) {
      const ScenarioResult r = run_scenario(*s, "lockwire", seed);
      EXPECT_FALSE(any_fires(r)) << name << " seed " << seed << "\n" << dump(r);
    }
  }
}

TEST(Scenarios, TimelineShowsTheRace) {
  const ScenarioResult r = run_scenario(*find_scenario("pause-beyond-ttl"), "lockwire", 1, true);
  EXPECT_NE(r.timeline.find("REJECTED (stale token)"), std::string::npos) << r.timeline;
  EXPECT_NE(r.timeline.find("pause"), std::string::npos);
}

TEST(Explore, LockwireSurvivesSwarmSeedsDeterministically) {
  std::set<std::uint64_t> hashes;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    const Profile p = profile_for(seed);
    const ExploreResult r = explore_one(seed, "lockwire", p);
    std::string why;
    for (const auto& v : r.verdicts)
      for (const auto& x : v.violations) why += std::string(check_name(v.check)) + ": " + x + "\n";
    EXPECT_TRUE(r.ok) << "seed " << seed << " " << p.describe()
                      << "\nreplay: lockwire-sim explore --seeds 1 --from " << seed << " --trace\n"
                      << why;
    if (seed % 20 == 1) {
      EXPECT_EQ(explore_one(seed, "lockwire", p).hash, r.hash) << "seed " << seed;
    }
    hashes.insert(r.hash);
  }
  EXPECT_GT(hashes.size(), 190u);  // seeds really steer the runs
}

// Seeds from kConditionsFrom on also draw the server conditions (CLIENT PAUSE, restricted ACL
// users, a full server); older seeds never do, so their runs are what they were.
TEST(Explore, LockwireSurvivesServerConditionSeeds) {
  std::set<std::uint64_t> hashes;
  int pauses = 0, acl = 0, oom = 0;
  for (std::uint64_t seed = kConditionsFrom; seed < kConditionsFrom + 150; ++seed) {
    const Profile p = profile_for(seed);
    pauses += p.client_pauses;
    acl += p.acl_tracking || p.acl_caching;
    oom += p.oom;
    const ExploreResult r = explore_one(seed, "lockwire", p);
    std::string why;
    for (const auto& v : r.verdicts)
      for (const auto& x : v.violations) why += std::string(check_name(v.check)) + ": " + x + "\n";
    EXPECT_TRUE(r.ok) << "seed " << seed << " " << p.describe()
                      << "\nreplay: lockwire-sim explore --seeds 1 --from " << seed << " --trace\n"
                      << why;
    if (seed % 30 == 0) {
      EXPECT_EQ(explore_one(seed, "lockwire", p).hash, r.hash) << seed;
    }
    hashes.insert(r.hash);
  }
  EXPECT_GT(hashes.size(), 140u);
  EXPECT_GT(pauses, 40);
  EXPECT_GT(acl, 60);
  EXPECT_GT(oom, 40);
  for (std::uint64_t seed = 1; seed <= 2000; ++seed) {
    const Profile p = profile_for(seed);
    ASSERT_FALSE(p.client_pauses || p.acl_tracking || p.acl_caching || p.oom) << seed;
  }
  const Profile forced = profile_for(1, "oom,acl-tracking");
  EXPECT_TRUE(forced.oom && forced.acl_tracking && !forced.client_pauses && !forced.cuts);
  EXPECT_NE(forced.restricted, 0u);
}

// Seeds from kFailoversFrom on also draw a failover behind three sentinels; older seeds never
// do. Not asserted clean: the swarm finds lockwire bugs in lock/ that are not fixed yet (see
// docs/races.md, "Failovers in the swarm"); runs are deterministic and every kind is drawn.
TEST(Explore, FailoverSeedsAreDrawnAndReplay) {
  int failovers = 0;
  std::set<int> kinds;
  std::set<std::uint64_t> hashes;
  for (std::uint64_t seed = kFailoversFrom; seed < kFailoversFrom + 60; ++seed) {
    const Profile p = profile_for(seed);
    if (!p.failovers) continue;
    ++failovers;
    kinds.insert(p.failover_kind);
    const ExploreResult r = explore_one(seed, "lockwire", p);
    if (failovers % 10 == 1) {
      EXPECT_EQ(explore_one(seed, "lockwire", p).hash, r.hash) << seed;
    }
    hashes.insert(r.hash);
  }
  EXPECT_GT(failovers, 15);
  EXPECT_EQ(kinds.size(), 3u);
  EXPECT_EQ(hashes.size(), static_cast<std::size_t>(failovers));
  for (std::uint64_t seed : {std::uint64_t{1}, std::uint64_t{777}, kConditionsFrom,
                             kConditionsFrom + 999'999}) {
    EXPECT_FALSE(profile_for(seed).failovers) << seed;
  }
  EXPECT_TRUE(profile_for(1, "failovers").failovers);
}

// Exploration (not only the scripted scenarios) catches broken strategies.
TEST(Explore, FindsBrokenStrategies) {
  for (const char* strategy : {"no-fencing", "no-expiry-wake", "wall-clock"}) {
    int failed = 0;
    for (std::uint64_t seed = 1; seed <= 100 && failed == 0; ++seed) {
      if (!explore_one(seed, strategy, profile_for(seed)).ok) ++failed;
    }
    EXPECT_GT(failed, 0) << strategy << " survived 100 seeds";
  }
  // Busy waiting where tracking is refused: the server-condition seeds find it too.
  int failed = 0;
  for (std::uint64_t seed = kConditionsFrom; seed < kConditionsFrom + 100 && failed == 0; ++seed) {
    if (!explore_one(seed, "reread-untracked", profile_for(seed)).ok) ++failed;
  }
  EXPECT_GT(failed, 0) << "reread-untracked survived 100 server-condition seeds";
  // An upgrade that is not in place: the semantics seeds find it.
  failed = 0;
  for (std::uint64_t seed = sim::kSemanticsFrom; seed < sim::kSemanticsFrom + 100 && failed == 0; ++seed) {
    if (!explore_one(seed, "release-then-lock", profile_for(seed)).ok) ++failed;
  }
  EXPECT_GT(failed, 0) << "release-then-lock survived 100 semantics seeds";
}

// Partition-range seeds (docs/races.md, *Partitions in the swarm*) that found lockwire bugs,
// each with the broken strategy that brings its bug back: fixed, they pass; broken, they fire.
// If a change of schedule moves a race off its seed, find the new one with
// `lockwire-sim explore --seeds N --from 5000000 --strategy <broken>`.
TEST(Explore, PartitionSeedsThatFoundBugs) {
  struct Found {
    std::uint64_t seed;
    const char* broken;
  };
  // 5006454, 5017017: a Cluster acquire block queued before a partition went out after the
  // failover on a new stream with the old primary's floor (a token handed out twice). (5000607,
  // a grant handed over though the sentinels' vouch ran out while it was in flight, passes with
  // grant-unvouched too since the range runs with a health check: the scenario
  // sentinel-partition-grant-as-vouch-ends brings it back.)
  for (const Found f : {Found{5006454, "ask-unbound"}, Found{5017017, "ask-unbound"}}) {
    EXPECT_TRUE(explore_one(f.seed, "lockwire", profile_for(f.seed)).ok) << f.seed;
    EXPECT_FALSE(explore_one(f.seed, f.broken, profile_for(f.seed)).ok) << f.seed << " " << f.broken;
  }
  // 5000282: a routed wait given its whole length again after waiting for a shard's connection
  // (answered 700 ms late); 5001068: a waiter held 12 s after the heal behind a stream in TCP's
  // retransmission backoff (the health check now drops a stream whose requests get no reply).
  for (std::uint64_t seed : {std::uint64_t{5006066}, std::uint64_t{5011416}, std::uint64_t{5000282},
                             std::uint64_t{5001068}, std::uint64_t{5000607}}) {
    EXPECT_TRUE(explore_one(seed, "lockwire", profile_for(seed)).ok) << seed;
  }
}

TEST(Explore, ProfilesVaryAndCanBeForced) {
  std::set<std::string> seen;
  for (std::uint64_t s = 1; s <= 50; ++s) seen.insert(profile_for(s).describe());
  EXPECT_GT(seen.size(), 30u);
  EXPECT_NE(profile_for(1, "none").describe().find("faults=none"), std::string::npos);
  const Profile p = profile_for(1, "cuts,pauses");
  EXPECT_TRUE(p.cuts && p.pauses && !p.clogs && !p.restarts);
}

// Systematic, not random: a cut of the client's connection at every 3rd byte boundary, either
// direction, of a tiny hand-off. lockwire survives all of them; a strategy that reports a lost
// release as done does not.
TEST(ExhaustiveCuts, LockwireSurvivesEveryCutPoint) {
  const ExhaustResult r = exhaust_cuts("lockwire", 3);
  EXPECT_GT(r.bytes_up, 500u);
  EXPECT_GT(r.bytes_down, 200u);
  EXPECT_GT(r.runs, 400u);
  std::string why;
  for (const auto& [cp, vs] : r.failures) {
    why += std::string(cp.to_server ? "up:" : "down:") + std::to_string(cp.after) + "\n";
  }
  EXPECT_TRUE(r.failures.empty()) << why;
  EXPECT_FALSE(exhaust_cuts("assume-released", 3).failures.empty());
  // A single cut point replays exactly.
  EXPECT_EQ(cut_run("lockwire", CutPoint{true, 300}).hash,
            cut_run("lockwire", CutPoint{true, 300}).hash);
}

TEST(Strategies, UnknownNameIsRejected) {
  sim::World w(1);
  sim::Node& n = w.add_node("x");
  EXPECT_EQ(make_strategy("no-such-strategy", n, {}), nullptr);
  EXPECT_NE(make_strategy("lockwire", n, {}), nullptr);
}

// A misspelled broken strategy must not run lockwire instead (it would pass, proving nothing).
TEST(Strategies, RunRefusesAnUnknownStrategy) {
  RunConfig c;
  c.strategy = "keep-failed-clam";
  EXPECT_THROW(races::Run{c}, std::invalid_argument);
  c.strategy = "keep-failed-claim";
  EXPECT_NO_THROW(races::Run{c});
}

}  // namespace
}  // namespace lockwire::races
