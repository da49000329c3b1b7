// lockwire-sim list | replay | explore (dispatched from tools/lockwire-sim/main.cpp).
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "races_commands.hpp"

#include "lockwire/races/races.hpp"

namespace lockwire::races {

namespace {

bool parse_u64(const char* s, std::uint64_t& out) {
  if (s == nullptr || *s == '\0' || *s == '-') return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0') return false;
  out = v;
  return true;
}

bool known_strategy(std::string_view n) {
  for (const auto& s : strategies())
    if (s.name == n) return true;
  return false;
}

void print_verdicts(const std::vector<Verdict>& vs) {
  for (const auto& v : vs) {
    std::printf("  %-22s %s\n", std::string(check_name(v.check)).c_str(),
                v.violations.empty() ? "pass" : "FIRES");
    for (const auto& x : v.violations) std::printf("      %s\n", x.c_str());
  }
}

bool any_fires(const std::vector<Verdict>& vs) {
  for (const auto& v : vs)
    if (!v.violations.empty()) return true;
  return false;
}

}  // namespace

int cli_list(int argc, char**) {
  if (argc != 0) {
    std::fprintf(stderr, "usage: lockwire-sim list\n");
    return 2;
  }
  std::printf("scenarios (lockwire-sim replay NAME [--seed S] [--strategy X] [--trace]):\n");
  for (const auto& s : scenarios()) {
    std::printf("  %-30s %s\n", std::string(s.name).c_str(), std::string(s.summary).c_str());
    if (!s.broken.empty()) {
      std::printf("  %-30s   fails with --strategy %s\n", "", std::string(s.broken).c_str());
    }
    for (const auto& v : s.variants) {
      std::string fires;
      for (Check c : v.fires) fires.append(fires.empty() ? "" : ", ").append(check_name(c));
      std::printf("  %-30s   also --strategy %s (documented to fire: %s)\n", "",
                  std::string(v.strategy).c_str(), fires.empty() ? "none" : fires.c_str());
    }
  }
  std::printf("\nstrategies:\n");
  for (const auto& s : strategies()) {
    std::printf("  %-22s %s\n", std::string(s.name).c_str(), std::string(s.summary).c_str());
  }
  return 0;
}

int cli_replay(int argc, char** argv) {
  const char* usage =
      "usage: lockwire-sim replay NAME [--seed S] [--strategy lockwire|BROKEN] [--trace]\n";
  if (argc < 1) {
    std::fprintf(stderr, "%s", usage);
    return 2;
  }
  const Scenario* sc = find_scenario(argv[0]);
  if (sc == nullptr) {
    std::fprintf(stderr, "lockwire-sim replay: unknown scenario '%s' (see: lockwire-sim list)\n",
                 argv[0]);
    return 2;
  }
  std::uint64_t seed = 1;
  std::string strategy = "lockwire";
  bool trace = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--seed" && parse_u64(v, seed)) {
      ++i;
    } else if (a == "--strategy" && v != nullptr && known_strategy(v)) {
      strategy = v;
      ++i;
    } else if (a == "--trace") {
      trace = true;
    } else {
      std::fprintf(stderr, "%s  bad or incomplete argument: %s\n", usage, argv[i]);
      return 2;
    }
  }
  const ScenarioResult r = run_scenario(*sc, strategy, seed, trace);
  if (trace) std::printf("%s\n", r.timeline.c_str());
  std::printf("scenario %s  strategy %s  seed %llu  trace %016llx\n", std::string(sc->name).c_str(),
              strategy.c_str(), static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(r.hash));
  std::printf("  race hit (%s): %s\n", std::string(sc->mark).c_str(), r.marked ? "yes" : "NO");
  print_verdicts(r.verdicts);
  if (strategy == "lockwire" && !sc->lockwire_bug.empty() && any_fires(r.verdicts)) {
    std::printf("  known lockwire bug (docs/races.md): %s\n",
                std::string(sc->lockwire_bug).c_str());
  } else if (strategy == "lockwire" && !sc->lockwire_limits.empty() && any_fires(r.verdicts)) {
    std::printf("  note: documented limitation of any Redis lock here (docs/races.md)\n");
  }
  for (const auto& v : sc->variants) {
    if (v.strategy == strategy && any_fires(r.verdicts)) {
      std::printf("  note: documented for this strategy here (docs/races.md)\n");
    }
  }
  return any_fires(r.verdicts) ? 1 : 0;
}

namespace {

bool parse_cut(const char* v, CutPoint& out) {
  if (v == nullptr) return false;
  const std::string_view s = v;
  if (s.rfind("up:", 0) == 0) {
    out.to_server = true;
  } else if (s.rfind("down:", 0) == 0) {
    out.to_server = false;
  } else {
    return false;
  }
  return parse_u64(v + s.find(':') + 1, out.after);
}

std::string cut_name(const CutPoint& c) {
  return std::string(c.to_server ? "up:" : "down:") + std::to_string(c.after);
}

// explore --exhaustive-cuts [--step K] [--strategy X] | --cut up:K|down:K [--trace]
int exhaustive_cuts(const std::string& strategy, std::uint64_t step, std::optional<CutPoint> one,
                    bool trace) {
  const std::string sflag = strategy == "lockwire" ? "" : " --strategy " + strategy;
  if (one) {
    const ExploreResult r = cut_run(strategy, one, trace);
    if (trace) std::printf("%s\n", r.timeline.c_str());
    std::printf("cut %s  strategy %s  trace %016llx  %s\n", cut_name(*one).c_str(),
                strategy.c_str(), static_cast<unsigned long long>(r.hash),
                r.ok ? "ok" : "VIOLATION");
    print_verdicts(r.verdicts);
    return r.ok ? 0 : 1;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const ExhaustResult res = exhaust_cuts(strategy, step);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (const auto& [cp, vs] : res.failures) {
    std::printf("cut %s  VIOLATION\n", cut_name(cp).c_str());
    print_verdicts(vs);
    std::printf("  replay: lockwire-sim explore --cut %s%s --trace\n", cut_name(cp).c_str(),
                sflag.c_str());
  }
  std::printf(
      "exhaustive cuts: strategy %s, %llu bytes up / %llu down, every %llu: %llu runs, %zu "
      "violation(s), %.1f s\n",
      strategy.c_str(), static_cast<unsigned long long>(res.bytes_up),
      static_cast<unsigned long long>(res.bytes_down), static_cast<unsigned long long>(step),
      static_cast<unsigned long long>(res.runs), res.failures.size(), secs);
  return res.failures.empty() ? 0 : 1;
}

}  // namespace

int cli_explore(int argc, char** argv) {
  const char* usage =
      "usage: lockwire-sim explore --seeds N [--from S] [--profile none|all|f1,f2,...]\n"
      "                            [--strategy NAME] [--recheck K] [--trace] [--hashes]\n"
      "       lockwire-sim explore --exhaustive-cuts [--step K] [--strategy NAME]\n"
      "       lockwire-sim explore --cut up:K|down:K [--strategy NAME] [--trace]\n"
      "  faults: latency jitter splits clogs cuts pauses stalls mono-steps wall-steps restarts\n"
      "          client-pauses acl-tracking acl-caching oom (server conditions: swarm seeds\n"
      "          from 1000000 on draw them, or name them with --profile)\n"
      "          failovers (three sentinels and one failover: swarm seeds from 2000000 on)\n"
      "          cluster (3+3 Redis Cluster: swarm seeds from 3000000 on), semantics (shared\n"
      "          leases, upgrades in place: swarm seeds from 4000000 on)\n"
      "  --hashes: print every seed's profile and trace hash (behaviour-preservation checks)\n"
      "  exhaustive cuts: a tiny hand-off, run once per single cut of one client's connection\n"
      "  after each byte it sends (up) or receives (down)\n";
  bool exhaust = false;
  std::uint64_t step = 1;
  std::optional<CutPoint> one;
  std::uint64_t n = 0, from = 1, recheck = 50;
  std::string profile, strategy = "lockwire";
  bool trace = false, hashes = false;
  for (int i = 0; i < argc; ++i) {
    const std::string_view a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    CutPoint cp;
    if (a == "--seeds" && parse_u64(v, n) && n > 0) {
      ++i;
    } else if (a == "--exhaustive-cuts") {
      exhaust = true;
    } else if (a == "--step" && parse_u64(v, step) && step > 0) {
      ++i;
    } else if (a == "--cut" && parse_cut(v, cp)) {
      one = cp;
      ++i;
    } else if (a == "--from" && parse_u64(v, from)) {
      ++i;
    } else if (a == "--recheck" && parse_u64(v, recheck)) {
      ++i;
    } else if (a == "--profile" && v != nullptr) {
      profile = v;
      ++i;
    } else if (a == "--strategy" && v != nullptr && known_strategy(v)) {
      strategy = v;
      ++i;
    } else if (a == "--trace") {
      trace = true;
    } else if (a == "--hashes") {
      hashes = true;
    } else {
      std::fprintf(stderr, "%s  bad or incomplete argument: %s\n", usage, argv[i]);
      return 2;
    }
  }
  if (exhaust || one) {
    if (n != 0) {
      std::fprintf(stderr, "%s  --seeds does not go with --exhaustive-cuts / --cut\n", usage);
      return 2;
    }
    return exhaustive_cuts(strategy, step, one, trace);
  }
  if (n == 0) {
    std::fprintf(stderr, "%s", usage);
    return 2;
  }
  std::printf(
      "explore: seeds %llu..%llu  strategy %s  profile %s  (nondeterminism re-check: "
      "every %llu)\n",
      static_cast<unsigned long long>(from), static_cast<unsigned long long>(from + n - 1),
      strategy.c_str(), profile.empty() ? "per seed (swarm)" : profile.c_str(),
      static_cast<unsigned long long>(recheck));
  std::fflush(stdout);
  const auto t0 = std::chrono::steady_clock::now();
  std::uint64_t failed = 0, nondet = 0;
  for (std::uint64_t k = 0; k < n; ++k) {
    const std::uint64_t seed = from + k;
    const Profile p = profile_for(seed, profile);
    const ExploreResult r = explore_one(seed, strategy, p, trace && n == 1);
    if (trace && n == 1) std::printf("%s\n", r.timeline.c_str());
    if (n == 1 || !r.ok || hashes) {
      std::printf("seed %llu  %s  trace %016llx  %s\n", static_cast<unsigned long long>(seed),
                  p.describe().c_str(), static_cast<unsigned long long>(r.hash),
                  r.ok ? "ok" : "VIOLATION");
    }
    if (!r.ok) {
      ++failed;
      print_verdicts(r.verdicts);
      std::printf("  replay: lockwire-sim explore --seeds 1 --from %llu%s%s%s%s --trace\n",
                  static_cast<unsigned long long>(seed), profile.empty() ? "" : " --profile ",
                  profile.c_str(), strategy == "lockwire" ? "" : " --strategy ",
                  strategy == "lockwire" ? "" : strategy.c_str());
    }
    if (recheck > 0 && k % recheck == 0) {
      const ExploreResult again = explore_one(seed, strategy, p);
      if (again.hash != r.hash) {
        ++nondet;
        std::printf("seed %llu  NONDETERMINISTIC: trace %016llx then %016llx\n",
                    static_cast<unsigned long long>(seed), static_cast<unsigned long long>(r.hash),
                    static_cast<unsigned long long>(again.hash));
      }
    }
    if (n >= 20 && (k + 1) % (n / 10) == 0) {
      std::printf("  ... %llu/%llu seeds, %llu violation(s)\n",
                  static_cast<unsigned long long>(k + 1), static_cast<unsigned long long>(n),
                  static_cast<unsigned long long>(failed));
      std::fflush(stdout);
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "explore: %llu seeds, %llu violation(s), %llu nondeterministic, %.1f s, %.1f "
      "seeds/s\n",
      static_cast<unsigned long long>(n), static_cast<unsigned long long>(failed),
      static_cast<unsigned long long>(nondet), secs, static_cast<double>(n) / secs);
  return failed == 0 && nondet == 0 ? 0 : 1;
}

}  // namespace lockwire::races
