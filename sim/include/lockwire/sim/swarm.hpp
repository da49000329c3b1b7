// Swarm fault profiles: a seed picks which faults are on and how hard (each fault a coin flip),
// so that many seeds cover many combinations instead of all faults at once. Shared by
// `lockwire-sim explore` (sim/races) and the user-facing test harness (lockwire/sim/test.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace lockwire::sim {

struct FaultProfile {
  bool latency = false, jitter = false, splits = false, clogs = false, cuts = false;
  bool pauses = false, stalls = false, mono_steps = false, wall_steps = false;
  bool restarts = false;  // with full persistence (AOF always): no data is lost
  // Server conditions (issue #13); a swarm seed draws them only from kConditionsFrom on.
  bool client_pauses = false;  // CLIENT PAUSE WRITE or ALL windows on the server
  bool acl_tracking = false;   // some clients log in as a user denied CLIENT TRACKING
  bool acl_caching = false;    // some clients log in as a user denied CLIENT CACHING
  bool oom = false;            // maxmemory noeviction just above the used memory: OOM windows
  std::uint32_t restricted = 0;  // acl_*: bit i = client i logs in as a restricted user
  // Issue #15, for `lockwire-sim explore` (sim/races: the user harness has no sentinels and
  // ignores it); a swarm seed draws it only from kFailoversFrom on, "all" leaves it off. The
  // clients connect through three sentinels and one failover happens: `failover_kind` 0 =
  // SENTINEL FAILOVER, 1 = the primary's process killed (restarted with AOF after failover_ms),
  // 2 = the primary cut off from the sentinels (not from its clients) for failover_ms.
  bool failovers = false;
  int failover_kind = 0;
  std::int64_t failover_at_ms = 0, failover_ms = 0, replica_lag_us = 0;
  // Issue #14, for `lockwire-sim explore` (sim/races): every seed from kClusterFrom on runs on a
  // Redis Cluster of 3 primaries + 3 replicas (RunConfig::cluster), its resources spread over
  // the shards, with one cluster event at cluster_at_ms: `cluster_kind` 0 = the first
  // resource's slot migrated to the next primary, 1 = CLUSTER FAILOVER on its shard's replica,
  // 2 = its shard's primary crashed. Sentinel failovers, restarts, ACL users and oom are off
  // there (the cluster's nodes are configured alike by SimCluster).
  bool cluster = false;
  int cluster_kind = 0;
  std::int64_t cluster_at_ms = 0;
  // Issue #20, for `lockwire-sim explore` (sim/races): every seed from kSemanticsFrom on (or the
  // name "semantics") adds shared leases to the workload, some of them upgraded to exclusive
  // in place (Client::upgrade) and written to under the upgraded lease. Single server.
  bool semantics = false;
  // Issue #28, for `lockwire-sim explore` (sim/races): every seed from kPartitionsFrom on (or
  // the name "partitions") runs behind three sentinels (quorum 2, down-after 1-3 s) with a
  // primary and 2 replicas, holders with TTLs of 1-5 s and contenders waiting up to 30 s, and
  // network partitions (Network::partition) splitting the hosts at random: `partition_mask`
  // bit k puts host k on the first side (hosts: redis-a, redis-b, redis-c, s1, s2, s3, c1..c4),
  // from partition_at_ms for partition_ms (1-20 s); intensity 3 adds a second one. Clients use
  // min_replicas 0 or 1. Only latency, jitter, splits, clogs, cuts and stalls stay on.
  // Half of the partition seeds run on a Redis Cluster of 3+3 instead (node-timeout 2 s, the
  // resources spread over the shards): the hosts are then n1..n6 and the clients.
  bool partitions = false;
  bool partition_cluster = false;
  std::uint32_t partition_mask = 0, partition2_mask = 0;
  std::int64_t partition_at_ms = 0, partition_ms = 0, partition2_at_ms = 0, partition2_ms = 0;
  std::int64_t down_after_ms = 0;
  int min_replicas = 0;
  // From kMajorityFrom on, a partition seed that drew min_replicas 1 asks for a majority of the
  // configured replicas instead (ClientOptions::min_replicas = ReplicaAcks::majority()).
  bool replica_majority = false;
  int clients = 3;
  int resources = 1;
  int intensity = 1;  // 1..3: how many faults and how hard
  // "faults=a,b intensity=N clients=N resources=N[ restricted=...]"
  [[nodiscard]] std::string describe() const;
  // Only the faults: "a,b" or "none".
  [[nodiscard]] std::string fault_list() const;
};
// Swarm seeds below this keep the profile (and trace) they had before the server conditions
// existed; from here on a seed also draws client-pauses, acl-tracking, acl-caching and oom.
inline constexpr std::uint64_t kConditionsFrom = 1'000'000;
// From here on a swarm seed also draws `failovers` (probability 1/2). Older seeds keep their runs.
inline constexpr std::uint64_t kFailoversFrom = 2'000'000;
// From here on every swarm seed runs on a cluster (FaultProfile::cluster). Older seeds keep
// their runs.
inline constexpr std::uint64_t kClusterFrom = 3'000'000;
// From here on every swarm seed runs the semantics workload (FaultProfile::semantics) on one
// server (no cluster, no failovers). Older seeds keep their runs.
inline constexpr std::uint64_t kSemanticsFrom = 4'000'000;
// From here on every swarm seed runs the partition profile (FaultProfile::partitions).
inline constexpr std::uint64_t kPartitionsFrom = 5'000'000;
// From here on a partition seed that drew min_replicas 1 runs with a majority of the replicas
// instead (no new draw: the profile is otherwise the one the seed would have had).
inline constexpr std::uint64_t kMajorityFrom = 6'000'000;
// The hosts a partition mask names, bit k = kPartitionHosts[k] (clients beyond the run's
// count are ignored).
inline constexpr const char* kPartitionHosts[] = {"redis-a", "redis-b", "redis-c", "s1", "s2",
                                                  "s3",      "c1",      "c2",      "c3", "c4"};
inline constexpr const char* kPartitionClusterHosts[] = {"n1", "n2", "n3", "n4", "n5",
                                                         "n6", "c1", "c2", "c3", "c4"};
// The swarm profile a seed picks (`forced` non-empty: a comma list of faults, or "none"/"all").
[[nodiscard]] FaultProfile fault_profile_for(std::uint64_t seed, std::string_view forced = {});
// Every fault name fault_profile_for understands, comma-separated.
inline constexpr std::string_view kFaultNames =
    "latency,jitter,splits,clogs,cuts,pauses,stalls,mono-steps,wall-steps,restarts,"
    "client-pauses,acl-tracking,acl-caching,oom";

}  // namespace lockwire::sim
