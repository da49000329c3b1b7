// Swarm fault profiles (moved here from sim/races/src/explore.cpp unchanged, so that the user
// test harness draws the same profiles as `lockwire-sim explore`).
#include "lockwire/sim/swarm.hpp"

#include <algorithm>

#include "lockwire/sim/rng.hpp"

namespace lockwire::sim {

namespace {

bool has(std::string_view list, std::string_view item) {
  std::size_t pos = 0;
  while (pos <= list.size()) {
    const std::size_t c = std::min(list.find(',', pos), list.size());
    if (list.substr(pos, c - pos) == item) return true;
    pos = c + 1;
  }
  return false;
}

}  // namespace

std::string FaultProfile::fault_list() const {
  std::string s;
  auto add = [&](bool on, const char* n) {
    if (!on) return;
    if (!s.empty()) s += ",";
    s += n;
  };
  add(latency, "latency");
  add(jitter, "jitter");
  add(splits, "splits");
  add(clogs, "clogs");
  add(cuts, "cuts");
  add(pauses, "pauses");
  add(stalls, "stalls");
  add(mono_steps, "mono-steps");
  add(wall_steps, "wall-steps");
  add(restarts, "restarts");
  add(client_pauses, "client-pauses");
  add(acl_tracking, "acl-tracking");
  add(acl_caching, "acl-caching");
  add(oom, "oom");
  add(failovers, "failovers");
  add(cluster, "cluster");
  add(semantics, "semantics");
  add(partitions, "partitions");
  if (s.empty()) s = "none";
  return s;
}

std::string FaultProfile::describe() const {
  std::string out = "faults=" + fault_list() + " intensity=" + std::to_string(intensity) +
                    " clients=" + std::to_string(clients) +
                    " resources=" + std::to_string(resources);
  if (acl_tracking || acl_caching) {
    out += " restricted=";
    for (int i = 0; i < clients; ++i)
      if (restricted & (1u << i)) out += std::to_string(i + 1);
  }
  if (failovers) {
    static constexpr const char* kKinds[] = {"sentinel-failover", "primary-killed",
                                             "primary-cut-off"};
    out += std::string(" failover=") + kKinds[failover_kind] + "@" +
           std::to_string(failover_at_ms) + "ms";
    if (failover_kind != 0) out += "+" + std::to_string(failover_ms) + "ms";
    out += " replica-lag=" + std::to_string(replica_lag_us) + "us";
  }
  if (partitions) {
    auto sides = [this](std::uint32_t mask) {
      std::string a, b;
      const int hosts = 6 + clients;
      for (int k = 0; k < hosts; ++k) {
        std::string& side = (mask & (1u << k)) ? a : b;
        if (!side.empty()) side += ",";
        side += partition_cluster ? kPartitionClusterHosts[k] : kPartitionHosts[k];
      }
      return a + "|" + b;
    };
    out += " partition=" + sides(partition_mask) + "@" + std::to_string(partition_at_ms) + "ms+" +
           std::to_string(partition_ms) + "ms";
    if (partition2_ms > 0) {
      out += " partition2=" + sides(partition2_mask) + "@" + std::to_string(partition2_at_ms) +
             "ms+" + std::to_string(partition2_ms) + "ms";
    }
    const std::string replicas = replica_majority ? "majority" : std::to_string(min_replicas);
    if (partition_cluster) {
      out += " on=cluster min-replicas=" + replicas;
    } else {
      out += " down-after=" + std::to_string(down_after_ms) + "ms min-replicas=" + replicas +
             " replica-lag=" + std::to_string(replica_lag_us) + "us";
    }
  }
  if (cluster) {
    static constexpr const char* kEvents[] = {"slot-migration", "cluster-failover",
                                              "primary-crash"};
    out += std::string(" cluster=") + kEvents[cluster_kind] + "@" +
           std::to_string(cluster_at_ms) + "ms";
  }
  return out;
}

FaultProfile fault_profile_for(std::uint64_t seed, std::string_view forced) {
  const bool conditions = seed >= kConditionsFrom;  // (splitmix64 advances `seed` in place)
  const bool failovers = seed >= kFailoversFrom;
  const bool cluster = seed >= kClusterFrom && seed < kSemanticsFrom;
  const bool semantics = seed >= kSemanticsFrom && seed < kPartitionsFrom;
  const bool partitioned = seed >= kPartitionsFrom;
  Rng r(splitmix64(seed));
  FaultProfile p;
  const bool all = forced == "all";
  const bool none = forced == "none";
  auto pick = [&](const char* name) {
    const bool coin = r.chance(500000);
    if (all) return true;
    if (none) return false;
    if (!forced.empty()) return has(forced, name);
    return coin;
  };
  p.latency = pick("latency");
  p.jitter = pick("jitter");
  p.splits = pick("splits");
  p.clogs = pick("clogs");
  p.cuts = pick("cuts");
  p.pauses = pick("pauses");
  p.stalls = pick("stalls");
  p.mono_steps = pick("mono-steps");
  p.wall_steps = pick("wall-steps");
  p.restarts = pick("restarts");
  p.intensity = static_cast<int>(r.between(1, 3));
  p.clients = static_cast<int>(r.between(2, 4));
  p.resources = static_cast<int>(r.between(1, 2));
  // The server conditions, drawn after everything above (which they leave as it was); a swarm
  // seed below kConditionsFrom draws them but does not use them, so its run is unchanged.
  const bool swarm = forced.empty();
  auto pick_new = [&](const char* name) {
    const bool on = pick(name);
    return swarm ? on && conditions : on;
  };
  p.client_pauses = pick_new("client-pauses");
  p.acl_tracking = pick_new("acl-tracking");
  p.acl_caching = pick_new("acl-caching");
  p.oom = pick_new("oom");
  const std::uint64_t mask = r.next();
  if (p.acl_tracking || p.acl_caching) {
    p.restricted = static_cast<std::uint32_t>(mask) & ((1u << p.clients) - 1);
    if (p.restricted == 0) p.restricted = 1;
  }
  // Failovers (issue #15), drawn after everything above; only by name when forced.
  const bool fo = r.chance(500000);
  p.failovers = swarm ? fo && failovers : has(forced, "failovers");
  p.failover_kind = static_cast<int>(r.below(3));
  p.failover_at_ms = static_cast<std::int64_t>(r.between(200, 2000));
  p.failover_ms = static_cast<std::int64_t>(r.between(300, 3000));
  p.replica_lag_us = static_cast<std::int64_t>(r.between(50, 5000));
  // The cluster (issue #14), drawn after everything above; only by name when forced.
  p.cluster = swarm ? cluster : has(forced, "cluster");
  p.cluster_kind = static_cast<int>(r.below(3));
  p.cluster_at_ms = static_cast<std::int64_t>(r.between(200, 2000));
  if (p.cluster) {
    p.failovers = p.restarts = p.oom = p.acl_tracking = p.acl_caching = false;
    p.restricted = 0;
  }
  // The semantics workload (issue #20): no further draw, so the profile is the one above.
  p.semantics = swarm ? semantics : has(forced, "semantics");
  if (p.semantics && swarm) p.failovers = false;
  // The partition profile (issue #28), drawn after everything above; only by name when forced.
  p.partitions = swarm ? partitioned : has(forced, "partitions");
  const int hosts = 6 + p.clients;
  auto split = [&] {
    // Both sides non-empty: a random subset, never none or all of the hosts.
    const std::uint32_t all_hosts = (1u << hosts) - 1;
    return static_cast<std::uint32_t>(r.between(1, all_hosts - 1));
  };
  p.partition_mask = split();
  p.partition_at_ms = static_cast<std::int64_t>(r.between(2000, 15000));
  p.partition_ms = static_cast<std::int64_t>(r.between(1000, 20000));
  p.partition2_mask = split();
  p.partition2_at_ms =
      p.partition_at_ms + static_cast<std::int64_t>(r.between(0, p.partition_ms + 5000));
  p.partition2_ms = static_cast<std::int64_t>(r.between(1000, 10000));
  // 2-3 s: with 1 s (the sentinels' PING period) the sentinels' vouch cannot hold (issue #28).
  // One draw either way, so the draws after it, and every older range, are unchanged.
  p.down_after_ms = static_cast<std::int64_t>(r.between(2, 3)) * 1000;
  p.min_replicas = static_cast<int>(r.below(2));
  p.partition_cluster = r.chance(500000);
  p.replica_majority = swarm && seed >= kMajorityFrom && p.min_replicas == 1;
  if (p.partitions) {
    p.failovers = p.cluster = p.semantics = false;
    p.pauses = p.mono_steps = p.wall_steps = p.restarts = false;
    p.client_pauses = p.oom = p.acl_tracking = p.acl_caching = false;
    p.restricted = 0;
    if (p.intensity < 3) p.partition2_ms = 0;
  } else {
    p.partition_cluster = false;
  }
  return p;
}

}  // namespace lockwire::sim
