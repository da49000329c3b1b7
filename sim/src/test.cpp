// The simulation-test harness (lockwire/sim/test.hpp): faults on a user's world, seeds from the
// environment, the nondeterminism re-check, the failure report and its replay line.
#include "lockwire/sim/test.hpp"

#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdlib>
#include <exception>

namespace lockwire::sim::test {

namespace {

Nanos ms(std::int64_t v) {
  return std::chrono::milliseconds(v);
}

std::string hex(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string shell_word(std::string_view s) {
  bool plain = !s.empty();
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || std::string_view("/._-=:,+@%").find(c) !=
                                                                std::string_view::npos))
      plain = false;
  if (plain) return std::string(s);
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Accepts only what fault_profile_for understands, so that a typo is not a silent "no faults".
bool valid_faults(std::string_view f) {
  if (f.empty() || f == "none" || f == "all") return true;
  std::size_t pos = 0;
  while (pos <= f.size()) {
    const std::size_t c = std::min(f.find(',', pos), f.size());
    const std::string_view item = f.substr(pos, c - pos);
    bool known = false;
    std::size_t q = 0;
    while (q <= kFaultNames.size()) {
      const std::size_t e = std::min(kFaultNames.find(',', q), kFaultNames.size());
      if (kFaultNames.substr(q, e - q) == item) known = true;
      q = e + 1;
    }
    if (!known) return false;
    pos = c + 1;
  }
  return true;
}

bool env_u64(const char* name, std::uint64_t& out, std::string& err) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (errno != 0 || *end != '\0' || v[0] == '-') {
    err = std::string(name) + "='" + v + "' is not a number";
    return false;
  }
  out = n;
  return true;
}

std::string profile_text(const FaultProfile& p) {
  return "faults=" + p.fault_list() + " intensity=" + std::to_string(p.intensity);
}

}  // namespace

// ---- Context -----------------------------------------------------------------------------------

Context::Context(std::uint64_t seed, const FaultProfile& profile, Nanos faults_until)
    : seed_(seed), profile_(profile), faults_until_(faults_until),
      world_(std::make_unique<World>(seed)) {}

Context::~Context() {
  redis_.clear();  // the servers' streams and timers go before the World
  world_.reset();
}

SimRedis& Context::add_redis(std::string node_name, SimRedisOptions options) {
  if (profile_.acl_tracking || profile_.acl_caching) {
    // As explore does: everything but the one subcommand.
    options.model.users.push_back({"notrack", "on >pw ~* &* +@all -client|tracking"});
    options.model.users.push_back({"nocache", "on >pw ~* &* +@all -client|caching"});
  }
  Node& n = world_->add_node(std::move(node_name));
  redis_.push_back(std::make_unique<SimRedis>(*world_, n, std::move(options)));
  return *redis_.back();
}

Node& Context::add_client(std::string name) {
  Node& n = world_->add_node(std::move(name));
  clients_.push_back(&n);
  return n;
}

loop::ConnectionOptions Context::connection_to(const SimRedis& redis, const Node& client) const {
  loop::ConnectionOptions o;
  o.endpoint = redis.endpoint();
  for (std::size_t i = 0; i < clients_.size(); ++i) {
    if (clients_[i] != &client || i >= 32 || (profile_.restricted & (1u << i)) == 0) continue;
    // Both restricted: even clients are denied tracking, odd ones caching (as explore).
    const bool notrack = profile_.acl_tracking && (!profile_.acl_caching || i % 2 == 0);
    o.username = notrack ? "notrack" : "nocache";
    o.password = "pw";
  }
  return o;
}

void Context::check(bool ok, std::string_view what) {
  if (!ok) fail(std::string(what));
}

void Context::fail(std::string what) {
  note("check", "FAILED", what);
  failures_.push_back(std::move(what));
}

void Context::note(std::string_view who, std::string_view what, std::string_view detail) {
  world_->trace().record(world_->now(), who, what, detail);
}

void Context::run_until(Nanos t) {
  schedule_faults();
  world_->run_until([] { return false; }, t);
}

bool Context::run_until(const std::function<bool()>& pred, Nanos deadline) {
  schedule_faults();
  return world_->run_until(pred, deadline);
}

// The fault schedule explore uses (sim/races/src/explore.cpp), on the registered nodes: links set
// up front, then 2 + 3 * intensity faults at random instants, all over by faults_until_.
void Context::schedule_faults() {
  if (faults_scheduled_) return;
  faults_scheduled_ = true;
  const FaultProfile& p = profile_;
  Rng r = world_->fork_rng("lockwire.sim.test.faults");  // independent of scenario_rng()
  Network& net = world_->net();
  for (Node* c : clients_) {
    for (auto& s : redis_) {
      LinkOptions lo;  // no jitter or splits unless the profile asks: seeds differ by faults
      lo.latency = p.latency ? Nanos(r.between(50'000, 2'000'000 * p.intensity)) : Nanos(50us);
      lo.jitter = p.jitter ? Nanos(r.between(10'000, 1'000'000 * p.intensity)) : Nanos{0};
      lo.split_per_million = p.splits ? 300000 : 0;
      net.link(*c, s->node()) = lo;
    }
  }
  std::vector<int> kinds;
  const bool clients = !clients_.empty(), servers = !redis_.empty();
  if (p.clogs && clients && servers) kinds.push_back(0);
  if (p.cuts && clients) kinds.push_back(1);
  if (p.pauses && clients) kinds.push_back(2);
  if (p.stalls && servers) kinds.push_back(3);
  if (p.mono_steps && clients) kinds.push_back(4);
  if (p.wall_steps && clients) kinds.push_back(5);
  if (p.restarts && servers) kinds.push_back(6);
  if (p.client_pauses && servers) kinds.push_back(7);
  if (p.oom && servers) kinds.push_back(8);
  if (kinds.empty()) return;
  const std::int64_t last_ms = std::max<std::int64_t>(2, faults_until_.count() / 1'000'000 - 400);
  const int n_faults = 2 + 3 * p.intensity;
  for (int f = 0; f < n_faults; ++f) {
    const Nanos t = ms(r.between(1, last_ms));
    Node* who = clients ? clients_[r.below(clients_.size())] : nullptr;
    SimRedis* srv = servers ? redis_[r.below(redis_.size())].get() : nullptr;
    const int kind = kinds[r.below(kinds.size())];
    const Nanos d = ms(r.between(1, 120 * p.intensity));
    const std::uint64_t bytes = r.below(200);
    const bool dir = r.chance(500000);
    World& w = *world_;
    auto at = [this, &w](Nanos when, std::string what, std::function<void()> fn) {
      w.schedule(when, nullptr, [this, what = std::move(what), fn = std::move(fn)] {
        note("fault", what);
        fn();
      });
    };
    const std::string dn = std::to_string(d.count() / 1'000'000) + "ms";
    switch (kind) {
      case 0:
        at(t, "clog " + who->name() + " " + dn, [&w, who, srv, d] { w.net().clog(*who, srv->node(), d); });
        break;
      case 1:
        at(t, "cut " + who->name() + (dir ? " up " : " down ") + std::to_string(bytes),
           [&w, who, bytes, dir] {
             const auto ids = w.net().connections_of(*who);
             if (!ids.empty()) w.net().cut_after(ids.back(), dir, bytes);
           });
        break;
      case 2:
        at(t, "pause " + who->name() + " " + dn, [who] { who->pause(); });
        at(t + d, "resume " + who->name(), [who] { who->resume(); });
        break;
      case 3:
        at(t, "stall " + srv->node().name() + " " + dn, [srv, d] { srv->stall(d); });
        break;
      case 4:
        at(t, "mono-step " + who->name() + " +" + dn, [who, d] { who->step_mono(d); });
        break;
      case 5:
        at(t, "wall-step " + who->name() + (dir ? " +" : " -") + dn + "x10",
           [who, d, dir] { who->step_wall(dir ? d * 10 : -d * 10); });
        break;
      case 6:
        at(t, "restart " + srv->node().name(), [srv] { srv->restart(Persistence::all); });
        break;
      case 7:
        at(t, std::string("client-pause ") + (dir ? "write " : "all ") + dn, [srv, d, dir] {
          srv->pause_clients(d, dir ? PauseMode::write : PauseMode::all);
        });
        break;
      case 8:
        at(t, "oom " + srv->node().name() + " " + dn, [srv, bytes] {
          srv->set_maxmemory(srv->model().used_memory() + bytes, MaxmemoryPolicy::noeviction);
        });
        at(t + d, "oom over", [srv] { srv->set_maxmemory(0); });
        break;
    }
  }
}

// ---- running -----------------------------------------------------------------------------------

SeedResult run_seed(const Scenario& scenario, std::uint64_t seed, std::string_view faults,
                    bool keep_timeline, Nanos faults_until) {
  // Offset into the seeds that also draw the server conditions (client pauses, ACL users, OOM):
  // explore keeps its low seeds' old profiles, users get every fault from seed 1 on.
  const FaultProfile p = fault_profile_for(kConditionsFrom + seed, faults);
  SeedResult out;
  out.seed = seed;
  out.faults = profile_text(p);
  Context ctx(seed, p, faults_until);
  ctx.world().trace().set_keep_lines(keep_timeline);  // lines cost time; the hash is kept always
  try {
    scenario(ctx);
  } catch (const std::exception& e) {
    ctx.fail(std::string("the scenario threw: ") + e.what());
  }
  out.failures = ctx.failures();
  out.hash = ctx.world().trace().hash();
  out.events = ctx.world().events_run();
  if (keep_timeline) out.timeline = ctx.world().trace().timeline();
  return out;
}

std::string self_command() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "<this test program>";
  return shell_word(std::string_view(buf, static_cast<std::size_t>(n)));
}

Report run(std::string_view name, const Scenario& scenario, Options o) {
  Report rep;
  auto say = [&](const std::string& s) {
    rep.text += s;
    if (o.out != nullptr) {
      std::fputs(s.c_str(), o.out);
      std::fflush(o.out);
    }
  };
  std::string err;
  std::uint64_t only = 0;
  bool single = false;
  if (o.from_env) {
    single = env_u64("LOCKWIRE_SIM_SEED", only, err);
    std::uint64_t n = 0;
    if (env_u64("LOCKWIRE_SIM_SEEDS", n, err)) o.seeds = n;
    if (const char* f = std::getenv("LOCKWIRE_SIM_FAULTS"); f != nullptr && *f != '\0') o.faults = f;
  }
  if (err.empty() && !valid_faults(o.faults))
    err = "unknown fault in '" + o.faults + "' (known: none, all, " + std::string(kFaultNames) + ")";
  if (!err.empty()) {
    rep.ok = false;
    say(std::string(name) + ": " + err + "\n");
    return rep;
  }
  const std::string cmd = o.replay_command.empty() ? self_command() : o.replay_command;
  const std::uint64_t from = single ? only : o.first_seed;
  const std::uint64_t count = single ? 1 : o.seeds;
  say(std::string(name) + ": seeds " + std::to_string(from) + ".." +
      std::to_string(from + count - 1) + ", faults " +
      (o.faults.empty() ? "per seed (swarm)" : o.faults) + ", re-check " +
      (single ? "this seed" : o.recheck_every ? "every " + std::to_string(o.recheck_every) + "th"
                                               : "off") +
      "\n");
  for (std::uint64_t k = 0; k < count; ++k) {
    const std::uint64_t seed = from + k;
    SeedResult r = run_seed(scenario, seed, o.faults, single, o.faults_until);
    ++rep.seeds_run;
    const bool recheck = single || !r.ok() || (o.recheck_every > 0 && k % o.recheck_every == 0);
    std::uint64_t again_hash = r.hash;
    if (recheck) {
      // A failing seed runs again with its timeline kept: that run is also the replay's twin.
      const SeedResult again =
          run_seed(scenario, seed, o.faults, !r.ok() && !single, o.faults_until);
      ++rep.rechecked;
      again_hash = again.hash;
      if (!r.ok() && !single) r.timeline = again.timeline;
    }
    const bool nondet = again_hash != r.hash;
    if (single || !r.ok() || nondet) {
      say("seed " + std::to_string(seed) + "  " + r.faults + "  trace " + hex(r.hash) + "  " +
          (nondet ? "NONDETERMINISTIC" : r.ok() ? "ok" : "FAILED") + "\n");
    }
    if (r.ok() && !nondet) continue;
    rep.ok = false;
    rep.nondeterministic = nondet;
    rep.other_hash = again_hash;
    if (nondet) {
      say("  the same seed gave trace " + hex(r.hash) + " then " + hex(again_hash) +
          ": the scenario depends on something outside the simulation (a real clock, a thread, "
          "randomness not from the world, state kept between runs)\n");
    }
    for (const auto& f : r.failures) say("  check failed: " + f + "\n");
    if (!r.timeline.empty()) {
      std::vector<std::string_view> lines;
      std::string_view t = r.timeline;
      while (!t.empty()) {
        const std::size_t nl = t.find('\n');
        lines.push_back(t.substr(0, nl));
        t = nl == std::string_view::npos ? std::string_view{} : t.substr(nl + 1);
      }
      // The lines that lead to the first failed check (what came after it explains less).
      std::size_t end = lines.size();
      for (std::size_t i = 0; i < lines.size(); ++i) {
        if (lines[i].find(" check FAILED ") != std::string_view::npos) {
          end = std::min(lines.size(), i + 6);
          break;
        }
      }
      const std::size_t begin = end > o.timeline_lines ? end - o.timeline_lines : 0;
      say("  timeline" +
          (begin > 0 || end < lines.size()
               ? " (lines " + std::to_string(begin + 1) + ".." + std::to_string(end) + " of " +
                     std::to_string(lines.size()) + ", up to the first failed check)"
               : std::string()) +
          ":\n");
      std::string block;
      for (std::size_t i = begin; i < end; ++i) block.append("    ").append(lines[i]) += '\n';
      say(block);
    }
    rep.replay_line = "LOCKWIRE_SIM_SEED=" + std::to_string(seed) +
                      (o.faults.empty() ? "" : " LOCKWIRE_SIM_FAULTS=" + shell_word(o.faults)) +
                      " " + cmd;
    say("  replay: " + rep.replay_line + "\n");
    rep.failed = std::move(r);
    break;
  }
  if (rep.ok) {
    say(std::string(name) + ": " + std::to_string(rep.seeds_run) + " seed(s) passed, " +
        std::to_string(rep.rechecked) + " re-run for determinism\n");
  }
  return rep;
}

}  // namespace lockwire::sim::test
