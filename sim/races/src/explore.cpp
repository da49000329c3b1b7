// Seeded exploration: the seed picks a swarm fault profile (which faults are on, how hard), a
// random workload and fault schedule; after the faults heal, a liveness phase in which every
// client must still get the lock. Same seed -> same run -> same trace hash.
#include <algorithm>

#include "lockwire/races/races.hpp"

namespace lockwire::races {

namespace {

constexpr Nanos kFaultsEnd{2500ms};
constexpr Nanos kHeal{3s};
// With a failover: detection (down-after 1 s) + election + promotion + switch take up to
// ~3.5 s after the fault, and a cut-off lasts up to 3 s: healed from 7 s on.
constexpr Nanos kHealFailover{7s};
// On a cluster: a crash is FAIL after 3.1 s, its replica elected 0.5-1 s later, and clients
// read the slot map again within 1 s (cluster_refresh): healed 5.5 s after the event (at most
// 2 s in); a migration or CLUSTER FAILOVER is over well within the usual heal.
constexpr Nanos kHealClusterCrash{7500ms};

Nanos ms(std::int64_t v) {
  return std::chrono::milliseconds(v);
}

}  // namespace

ExploreResult explore_one(std::uint64_t seed, std::string_view strategy, const Profile& p,
                          bool keep_trace) {
  if (p.partitions) return explore_partitions(seed, strategy, p, keep_trace);
  RunConfig c;
  c.seed = seed;
  c.strategy = std::string(strategy);
  c.clients = p.clients;
  c.keep_trace = keep_trace;
  c.deterministic_links = !(p.jitter || p.splits);
  if (p.acl_tracking || p.acl_caching) {
    // Everything but the one subcommand: keys and channels of every strategy.
    c.server.model.users = {{"notrack", "on >pw ~* &* +@all -client|tracking"},
                            {"nocache", "on >pw ~* &* +@all -client|caching"}};
    c.connection = [p](int client, loop::ConnectionOptions& o) {
      if ((p.restricted & (1u << client)) == 0) return;
      // Both restricted: even clients are denied tracking, odd ones caching.
      const bool notrack = p.acl_tracking && (!p.acl_caching || client % 2 == 0);
      o.username = notrack ? "notrack" : "nocache";
      o.password = "pw";
    };
  }
  if (p.failovers) {
    c.sentinels = Nanos(p.replica_lag_us * 1000);
    c.sentinel_vouch = false;  // the failover range's sentinels: down-after 1 s
  }
  if (p.cluster) c.cluster = sim::ClusterConfig{};
  // Half of the semantics seeds run every exclusive job in fair order: a waiter queued behind one
  // that vanished waits up to the fair doorbell's 2 s (docs/protocol.md), the liveness bound.
  const bool fair_seed = p.semantics && sim::Rng(seed ^ 0xfa17ULL).chance(500000);
  if (fair_seed) c.wake_bound = 2500ms;
  Run run(c);
  sim::World& w = run.world();
  sim::Rng& r = w.scenario_rng();
  std::vector<std::string> names;  // the resources (on a cluster: resource k on shard k % 3)
  const int n_resources = p.cluster ? p.resources + 1 : p.resources;
  for (int k = 0; k < n_resources; ++k) {
    names.push_back(p.cluster
                        ? run.resource_on(static_cast<std::size_t>(k % 3), "r" + std::to_string(k) + "-")
                        : std::string("r").append(std::to_string(k)));
  }
  if (p.cluster && (p.latency || p.jitter || p.splits)) {
    sim::LinkOptions lo;
    lo.latency = p.latency ? Nanos(r.between(50'000, 2'000'000 * p.intensity)) : Nanos(50us);
    lo.jitter = p.jitter ? Nanos(r.between(10'000, 1'000'000 * p.intensity)) : Nanos{0};
    lo.split_per_million = p.splits ? 300000 : 0;
    for (int i = 0; i < p.clients; ++i)
      for (std::size_t n = 0; n < run.cluster()->size(); ++n)
        w.net().link(run.node(i), run.cluster()->server(n).node()) = lo;
  } else if (p.latency || p.jitter) {
    sim::LinkOptions lo;
    lo.latency = p.latency ? Nanos(r.between(50'000, 2'000'000 * p.intensity)) : Nanos(50us);
    lo.jitter = p.jitter ? Nanos(r.between(10'000, 1'000'000 * p.intensity)) : Nanos{0};
    lo.split_per_million = p.splits ? 300000 : 0;
    for (int i = 0; i < p.clients; ++i) w.net().link(run.node(i), run.server()) = lo;
  } else if (p.splits) {
    for (int i = 0; i < p.clients; ++i)
      w.net().link(run.node(i), run.server()).split_per_million = 300000;
  }

  // Workload: every client runs a few jobs at random times on random resources. The semantics
  // workload draws from a generator of its own, so the draws below stay the classic range's.
  sim::Rng sr(seed ^ 0x5e3a11c5ULL);
  for (int i = 0; i < p.clients; ++i) {
    const int jobs = static_cast<int>(r.between(2, 5));
    for (int k = 0; k < jobs; ++k) {
      Job j;
      j.resource = names[r.below(static_cast<std::uint64_t>(n_resources))];
      j.ttl = ms(r.between(80, 400));
      j.wait = r.chance(200000) ? Nanos{0} : ms(r.between(20, 800));
      const Nanos hold = ms(r.between(1, 2 * j.ttl.count() / 1'000'000));
      j.auto_renew = r.chance(250000);
      j.writes = {Nanos{0}, hold / 2};
      if (r.chance(300000)) j.renew_after = hold / 3;
      // Auto-renewed leases are always released (else they would hold the lock forever).
      j.release_after = j.auto_renew || r.chance(850000) ? hold : Nanos{-1};
      if (fair_seed && !j.shared) j.fair = true;
      if (p.semantics && n_resources > 1 && j.resource == names[1]) {
        // The second resource is a counting semaphore of 2 permits: every job on it takes one.
        j.shared = true;
        j.permits = 2;
        j.writes.clear();
      } else if (p.semantics) {
        if (sr.chance(500000)) {
          j.shared = true;
          j.writes.clear();  // readers do not write
          if (sr.chance(500000)) {
            // Read, then upgrade in place and write under the exclusive lease.
            j.upgrade_after = hold / 2;
            j.upgraded_writes = {Nanos{0}, hold / 4};
            j.upgraded_release_after = hold / 2;
            j.release_if_upgrade_fails = true;
            j.release_after = Nanos{-1};  // the upgrade ends the shared lease (or it fails)
          }
        } else if (n_resources > 1 && sr.chance(300000)) {
          // Every resource at once, all or nothing (Client::lock_all), in a drawn order.
          j.resources = names;
          if (sr.chance(500000)) std::reverse(j.resources.begin(), j.resources.end());
        }
      }
      if (p.semantics && !j.shared && !j.fair && j.resources.empty() &&
          j.release_after >= Nanos{0} && sr.chance(300000)) {
        // A worker loop: the same job again from the release's answer, once or twice (with the
        // parked hand-off, a re-lock that finds the lock just handed on waits without an
        // attempt: MachineEvent::taken).
        Job again = j;
        if (sr.chance(500000)) again.then.push_back(j);
        j.then.push_back(std::move(again));
      }
      run.job(i, ms(r.between(0, 2200)), std::move(j));
    }
  }

  // Faults, all over by kFaultsEnd.
  const int n_faults = 2 + 3 * p.intensity;
  for (int f = 0; f < n_faults; ++f) {
    const Nanos t = ms(r.between(1, kFaultsEnd.count() / 1'000'000 - 400));
    const int who = static_cast<int>(r.below(static_cast<std::uint64_t>(p.clients)));
    std::vector<int> kinds;
    if (p.clogs) kinds.push_back(0);
    if (p.cuts) kinds.push_back(1);
    if (p.pauses) kinds.push_back(2);
    if (p.stalls) kinds.push_back(3);
    if (p.mono_steps) kinds.push_back(4);
    if (p.wall_steps) kinds.push_back(5);
    if (p.restarts) kinds.push_back(6);
    if (p.client_pauses) kinds.push_back(7);
    if (p.oom) kinds.push_back(8);
    if (kinds.empty()) break;
    const int kind = kinds[r.below(kinds.size())];
    const Nanos d = ms(r.between(1, 120 * p.intensity));
    const std::uint64_t bytes = r.below(200);
    const bool dir = r.chance(500000);
    if (p.cluster) {  // (one more draw: the other profiles' runs stay as they were)
      const std::uint64_t srv = r.below(3);
      switch (kind) {
        case 0:
          run.at(t, [&run, who, d, srv] {
            run.world().net().clog(run.node(who), run.cluster()->server(srv).node(), d);
          });
          continue;
        case 3:
          run.at(t, [&run, d, srv] { run.cluster()->server(srv).stall(d); });
          continue;
        case 7:
          run.at(t, [&run, d, dir, srv] {
            run.cluster()->server(srv).pause_clients(d, dir ? sim::PauseMode::write
                                                            : sim::PauseMode::all);
          });
          continue;
        default:
          break;
      }
    }
    switch (kind) {
      case 0:
        run.at(t, [&run, who, d] { run.world().net().clog(run.node(who), run.server(), d); });
        break;
      case 1:
        run.at(t, [&run, who, bytes, dir] {
          if (const auto id = run.connection_of(who)) run.world().net().cut_after(id, dir, bytes);
        });
        break;
      case 2:
        run.at(t, [&run, who] { run.node(who).pause(); });
        run.at(t + d, [&run, who] { run.node(who).resume(); });
        break;
      case 3:
        run.at(t, [&run, d] { run.redis().stall(d); });
        break;
      case 4:
        run.at(t, [&run, who, d] { run.node(who).step_mono(d); });
        break;
      case 5:
        run.at(t, [&run, who, d, dir] { run.node(who).step_wall(dir ? d * 10 : -d * 10); });
        break;
      case 6:
        run.at(t, [&run] { run.redis().restart(sim::Persistence::all); });
        break;
      case 7:  // an operator's CLIENT PAUSE d WRITE|ALL
        run.at(t, [&run, d, dir] {
          run.redis().pause_clients(d, dir ? sim::PauseMode::write : sim::PauseMode::all);
        });
        break;
      case 8:  // full under noeviction for d: maxmemory just above what is used now
        run.at(t, [&run, bytes] {
          run.redis().set_maxmemory(run.redis().model().used_memory() + bytes,
                                    sim::MaxmemoryPolicy::noeviction);
        });
        run.at(t + d, [&run] { run.redis().set_maxmemory(0); });
        break;
    }
  }
  // The failover, after the faults were drawn (so the draws above are those of the same seed
  // without it).
  if (p.failovers) {
    const Nanos t = ms(p.failover_at_ms), d = ms(p.failover_ms);
    switch (p.failover_kind) {
      case 0:
        run.at(t, [&run] { (void)run.sentinels()->failover(0); });
        break;
      case 1:
        run.at(t, [&run] { run.server_at(0).kill(); });
        run.at(t + d, [&run] { run.server_at(0).restart(sim::Persistence::all); });
        break;
      default:
        run.at(t, [&run, d] {
          for (std::size_t i = 0; i < run.sentinels()->size(); ++i)
            run.world().net().clog(run.server_at(0).node(), run.sentinels()->server(i).node(), d);
        });
        break;
    }
  }
  if (p.cluster) {
    const Nanos t = ms(p.cluster_at_ms);
    const int slot = Run::slot_of(names[0]);
    switch (p.cluster_kind) {
      case 0:
        run.at(t, [&run, slot] { run.migrate_slot(slot, (run.cluster()->owner(slot) + 1) % 3, 20ms); });
        break;
      case 1:
        run.at(t, [&run, slot] {
          (void)run.cluster_failover(run.cluster()->replicas_of(run.cluster()->owner(slot)).front());
        });
        break;
      default:
        run.at(t, [&run, slot] { run.cluster_crash(run.cluster()->owner(slot)); });
        break;
    }
  }
  const Nanos heal = p.failovers ? kHealFailover
                     : p.cluster && p.cluster_kind == 2 ? kHealClusterCrash
                                                        : kHeal;
  run.set_healed_at(heal);

  // Liveness phase: after the heal every client must still get the lock on every resource.
  for (int i = 0; i < p.clients; ++i) {
    for (int k = 0; k < n_resources; ++k) {
      Job j;
      j.resource = names[static_cast<std::size_t>(k)];
      j.ttl = 300ms;
      j.wait = 4s;
      j.writes = {Nanos{0}};
      j.release_after = 5ms;
      run.job(i, heal + ms(r.between(0, 100)), std::move(j));
    }
  }
  run.run_until(heal + 5s);
  run.finish(2s);
  ExploreResult out;
  out.verdicts = run.verdicts();
  out.ok = run.all_pass();
  out.hash = run.trace_hash();
  if (keep_trace) out.timeline = run.timeline();
  return out;
}

namespace {
// c1's connection (the first one of node c1) and its byte counts from `from` on.
struct Tap {
  std::uint64_t conn = 0, up0 = 0, down0 = 0;
};
}  // namespace

ExploreResult cut_run(std::string_view strategy, std::optional<CutPoint> cut, bool keep_trace,
                      std::uint64_t* bytes_up, std::uint64_t* bytes_down) {
  RunConfig c;
  c.seed = 1;
  c.strategy = std::string(strategy);
  c.clients = 2;
  c.keep_trace = keep_trace;
  Run r(c);
  auto tap = std::make_shared<Tap>();
  r.at(1ms, [&r, tap, cut] {
    tap->conn = r.connection_of(0);
    tap->up0 = r.world().net().bytes_sent(tap->conn, true);
    tap->down0 = r.world().net().bytes_sent(tap->conn, false);
    if (cut) r.world().net().cut_after(tap->conn, cut->to_server, cut->after);
  });
  r.job(1, 2ms, Job{.ttl = 300ms, .writes = {1ms}, .release_after = 60ms});
  r.job(0, 5ms,
        Job{.ttl = 300ms,
            .wait = 1s,
            .writes = {5ms, 30ms},
            .renew_after = 20ms,
            .release_after = 50ms});
  r.job(0, 300ms, Job{.ttl = 300ms, .wait = 1s, .writes = {1ms}, .release_after = 20ms});
  r.job(1, 310ms, Job{.ttl = 300ms, .wait = 1s, .writes = {1ms}, .release_after = 20ms});
  r.run_until(2s);
  ExploreResult out;
  // Measured before the clients close (closing sends nothing, but keep it to the workload).
  if (bytes_up) *bytes_up = r.world().net().bytes_sent(tap->conn, true) - tap->up0;
  if (bytes_down) *bytes_down = r.world().net().bytes_sent(tap->conn, false) - tap->down0;
  r.finish();
  out.verdicts = r.verdicts();
  out.ok = r.all_pass();
  out.hash = r.trace_hash();
  if (keep_trace) out.timeline = r.timeline();
  return out;
}

ExhaustResult exhaust_cuts(std::string_view strategy, std::uint64_t step) {
  ExhaustResult res;
  const ExploreResult base = cut_run(strategy, std::nullopt, false, &res.bytes_up, &res.bytes_down);
  ++res.runs;
  if (!base.ok) res.failures.emplace_back(CutPoint{true, ~std::uint64_t{0}}, base.verdicts);
  step = std::max<std::uint64_t>(step, 1);
  for (const bool up : {true, false}) {
    const std::uint64_t total = up ? res.bytes_up : res.bytes_down;
    for (std::uint64_t k = 0; k < total; k += step) {
      const CutPoint cp{up, k};
      const ExploreResult r = cut_run(strategy, cp);
      ++res.runs;
      if (!r.ok) res.failures.emplace_back(cp, r.verdicts);
    }
  }
  return res;
}

}  // namespace lockwire::races
