// The partition range of `lockwire-sim explore` (FaultProfile::partitions, issue #28): three
// sentinels, a primary and 2 replicas, clients holding and waiting for locks with TTLs of
// seconds while the hosts are split at random for 1-20 s (once, or twice at intensity 3). After
// the last heal the topology needs time to come together (the sentinels' SYN retries, the old
// primary converted after ~10 s, a stray replica after failover-timeout); from then on, every
// client must still get every lock. Judged by every checker plus the two-holders rule
// (RunConfig::strict_exclusion).
#include <algorithm>

#include "lockwire/races/races.hpp"

namespace lockwire::races {

namespace {

Nanos ms(std::int64_t v) {
  return std::chrono::milliseconds(v);
}

// From the last heal until the liveness phase: SYN retries of links closed in the partition
// (up to about its length again), convert-after (10 s), +fix-slave-config (failover-timeout).
constexpr Nanos kSettle{30s};
// On a cluster a node reached again takes the configuration at the next bus tick; what is left
// is TCP's retransmission of what a client sent into the partition (up to ~5.4 s after a 20 s
// cut) and the rejoin delay (2 s).
constexpr Nanos kSettleCluster{12s};

}  // namespace

ExploreResult explore_partitions(std::uint64_t seed, std::string_view strategy, const Profile& p,
                                 bool keep_trace) {
  RunConfig c;
  c.seed = seed;
  c.strategy = std::string(strategy);
  c.clients = p.clients;
  c.keep_trace = keep_trace;
  c.deterministic_links = !(p.jitter || p.splits);
  if (p.partition_cluster) {
    c.cluster = sim::ClusterConfig{};
  } else {
    c.sentinels = Nanos(p.replica_lag_us * 1000);
    c.sentinel_replicas = 2;
    c.sentinel_config.quorum = 2;
    c.sentinel_config.down_after = ms(p.down_after_ms);
  }
  c.strict_exclusion = true;
  // The clients run with a health check, as the README's *Choosing TTL, wait and renew fraction* advises
  // behind Sentinel or on a Cluster:
  // without it a stream stuck in TCP's retransmission backoff after the heal holds its requests
  // for up to about the partition's length again (seed 5001068: 12 s after a 13 s cut).
  c.health_check = 1s;
  c.strategy_options.min_replicas = p.min_replicas;
  c.strategy_options.replica_majority = p.replica_majority;
  Run run(c);
  sim::World& w = run.world();
  sim::Rng& r = w.scenario_rng();
  std::vector<std::string> names;  // on a cluster: resource k on shard k
  for (int k = 0; k < p.resources; ++k) {
    std::string base("r");
    base.append(std::to_string(k));
    names.push_back(p.partition_cluster ? run.resource_on(static_cast<std::size_t>(k), base + "-")
                                        : base);
  }

  std::vector<sim::Node*> hosts;
  if (p.partition_cluster) {
    for (std::size_t i = 0; i < 6; ++i) hosts.push_back(&run.cluster()->server(i).node());
  } else {
    hosts = {&run.server_at(0).node(), &run.server_at(1).node(), &run.server_at(2).node()};
    for (std::size_t i = 0; i < run.sentinels()->size(); ++i)
      hosts.push_back(&run.sentinels()->server(i).node());
  }
  for (int i = 0; i < p.clients; ++i) hosts.push_back(&run.node(i));

  if (p.latency || p.jitter || p.splits) {
    sim::LinkOptions lo;
    lo.latency = p.latency ? Nanos(r.between(50'000, 2'000'000 * p.intensity)) : Nanos(50us);
    lo.jitter = p.jitter ? Nanos(r.between(10'000, 1'000'000 * p.intensity)) : Nanos{0};
    lo.split_per_million = p.splits ? 300000 : 0;
    for (int i = 0; i < p.clients; ++i)
      for (std::size_t h = 0; h < 6; ++h) w.net().link(run.node(i), *hosts[h]) = lo;
  }

  // Holders and contenders: TTLs of 1-5 s, mostly auto-renewed, holding up to 15 s, waits up to
  // 30 s, writing to the fenced resource every 250 ms while they believe they hold it.
  for (int i = 0; i < p.clients; ++i) {
    const int jobs = static_cast<int>(r.between(2, 4));
    for (int k = 0; k < jobs; ++k) {
      Job j;
      j.resource = names[r.below(names.size())];
      j.ttl = ms(r.between(1000, 5000));
      j.wait = r.chance(200000) ? Nanos{0} : ms(r.between(100, 30000));
      j.auto_renew = r.chance(600000);
      const Nanos hold = ms(r.between(200, j.auto_renew ? 15000 : j.ttl.count() / 1'000'000));
      for (Nanos t{0}; t < hold && j.writes.size() < 60; t += 250ms) j.writes.push_back(t);
      j.release_after = hold;
      run.job(i, ms(r.between(0, 25000)), std::move(j));
    }
  }

  // Classic faults on the clients' links to the primary, early in the run.
  const int n_faults = p.intensity;
  for (int f = 0; f < n_faults; ++f) {
    const Nanos t = ms(r.between(1, 20000));
    const int who = static_cast<int>(r.below(static_cast<std::uint64_t>(p.clients)));
    std::vector<int> kinds;
    if (p.clogs) kinds.push_back(0);
    if (p.cuts) kinds.push_back(1);
    if (p.stalls) kinds.push_back(2);
    if (kinds.empty()) break;
    const int kind = kinds[r.below(kinds.size())];
    const Nanos d = ms(r.between(1, 120 * p.intensity));
    const std::uint64_t bytes = r.below(200);
    const bool dir = r.chance(500000);
    switch (kind) {
      case 0:
        run.at(t, [&run, who, d] { run.world().net().clog(run.node(who), run.server(), d); });
        break;
      case 1:
        run.at(t, [&run, who, bytes, dir] {
          if (const auto id = run.connection_of(who)) run.world().net().cut_after(id, dir, bytes);
        });
        break;
      default:
        run.at(t, [&run, d] { run.redis().stall(d); });
        break;
    }
  }

  auto cut = [&run, hosts](std::uint32_t mask, Nanos at, Nanos d) {
    run.at(at, [&run, hosts, mask, d] {
      std::vector<const sim::Node*> a, b;
      for (std::size_t k = 0; k < hosts.size(); ++k) (mask & (1u << k) ? a : b).push_back(hosts[k]);
      (void)run.world().net().partition(a, b, d);
    });
  };
  Nanos heal = ms(p.partition_at_ms + p.partition_ms);
  cut(p.partition_mask, ms(p.partition_at_ms), ms(p.partition_ms));
  if (p.partition2_ms > 0) {
    cut(p.partition2_mask, ms(p.partition2_at_ms), ms(p.partition2_ms));
    heal = std::max(heal, ms(p.partition2_at_ms + p.partition2_ms));
  }
  const Nanos healed = std::max(heal, Nanos(25s)) + (p.partition_cluster ? kSettleCluster : kSettle);
  run.set_healed_at(healed);

  // Liveness phase: every client must still get every lock.
  for (int i = 0; i < p.clients; ++i) {
    for (const auto& name : names) {
      Job j;
      j.resource = name;
      j.ttl = 1s;
      j.wait = 10s;
      j.writes = {Nanos{0}};
      j.release_after = 5ms;
      run.job(i, healed + ms(r.between(0, 100)), std::move(j));
    }
  }
  run.run_until(healed + 12s);
  run.finish(2s);
  ExploreResult out;
  out.verdicts = run.verdicts();
  out.ok = run.all_pass();
  out.hash = run.trace_hash();
  if (keep_trace) out.timeline = run.timeline();
  return out;
}

}  // namespace lockwire::races
