// Redis Cluster in the simulated world: N primaries with R replicas each (SimRedis nodes in
// cluster mode), slots split as `redis-cli --cluster create` splits them, and what the cluster
// bus does, simplified:
//
// - gossip: the cluster's configuration (roles, config epochs, slot owners, FAIL flags) is one
//   truth kept here; a change reaches the node that made it at once and every other node
//   `gossip_delay` later (a PONG broadcast on loopback: ~1 ms measured). No PING/PONG bytes;
//   a dead node is FAIL for everyone at the same instant (`fail_after`), though before that the
//   bus cron below shows the others' unanswered PINGs to it, PFAIL and failure reports.
// - CLUSTER FAILOVER on a replica (graceful): its primary pauses writes (CLIENT PAUSE WRITE, as
//   clusterHandleManualFailover does), the replica takes over with a new config epoch after
//   `manual_failover_delay`, the old primary becomes its replica and its held writes then
//   answer MOVED. FORCE / TAKEOVER: no pause, at once.
// - a crashed (or killed) primary: FAIL and cluster_state:fail everywhere after `fail_after`,
//   then its replica with the highest offset is elected after `election` (writes it had not
//   received are lost); a restart brings the node back as a replica of the new primary.
// - slot migration (`migrate_slot`): the operator's steps as redis-cli does them — SETSLOT
//   IMPORTING on the target, MIGRATING on the source, MIGRATE key by key, SETSLOT NODE on the
//   target then the source — each one a command on the node, so clients see ASK and TRYAGAIN.
//
// - partitions (Network::partition): from the first one on, a bus cron (every 100 ms) follows
//   who reaches whom. A node not reached for node_timeout is PFAIL to the node that cannot
//   reach it (`fail?`, `ping-sent` in its CLUSTER NODES); a primary PFAIL to a majority of the
//   primaries (that reach each other) is FAIL, and a replica of it that a majority reaches is
//   elected (`election_min`-`election_max` later). A node cut off when the configuration
//   changes keeps its old view (an old primary keeps serving its slots) until it is reached
//   again, then follows (UPDATE: it becomes a replica, its clients get MOVED). A primary that
//   reaches fewer than a majority of the primaries for node_timeout answers CLUSTERDOWN until
//   it has reached a majority again for rejoin_delay.
// - failure reports (also after a node's death): every bus tick, each master k that reaches x
//   refreshes its report about each node it flags (PFAIL or FAIL) at x, or ends it when it no
//   longer flags it; x drops a report 2 * node_timeout after it last came (cluster.c's
//   fail_reports, what CLUSTER COUNT-FAILURE-REPORTS counts). FAIL is declared by a node that
//   flags p PFAIL and holds reports from a majority of the primaries (itself counted when a
//   primary), as markNodeAsFailingIfNeeded does. Every node's cluster-node-timeout (CONFIG
//   GET) is `node_timeout`.
//
// Timings measured on redis-server 7.0.15, 3+3 nodes on loopback, cluster-node-timeout 2000
// (tests/support RedisCluster), written next to each constant below.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lockwire/sim/sim_redis.hpp"
#include "lockwire/sim/world.hpp"

namespace lockwire::sim {

struct ClusterConfig {
  int primaries = 3;
  int replicas_per_primary = 1;
  std::uint16_t port = 6379;
  Nanos replication_lag{1ms};
  // A configuration change reaching the other nodes: every node answered with the new owner
  // within 1.2 ms of the first one (CLUSTER FAILOVER, measured).
  Nanos gossip_delay{1ms};
  // CLUSTER FAILOVER's +OK -> the replica is primary: 45 ms (measured; its old primary's paused
  // write answered MOVED at 46 ms).
  Nanos manual_failover_delay{45ms};
  // SIGKILL of a primary -> cluster_state:fail and CLUSTERDOWN on every node: 3.10 s with
  // cluster-node-timeout 2000 (PFAIL after the timeout, FAIL once a majority's reports agree).
  Nanos fail_after{3100ms};
  // FAIL -> the replica serves writes: 0.81 s measured (Redis: 500 ms + random 0-500 ms +
  // 1 s per rank); drawn in [min, max] per failover. The others knew 43 ms later.
  Nanos election_min{500ms};
  Nanos election_max{1000ms};
  Nanos learn_after_election{43ms};
  // How often the offsets the nodes report of each other (CLUSTER SHARDS, SLOTS) are renewed.
  Nanos offsets_refresh{1s};
  // cluster-node-timeout (every node's CONFIG; with a partition or a dead node, one not heard
  // from for this long is PFAIL to the one not hearing it), and the delay before a primary that was in the
  // minority serves again after it reaches a majority (clusterUpdateState's rejoin delay:
  // node-timeout, within 0.5-5 s).
  Nanos node_timeout{2s};
  Nanos rejoin_delay{2s};
  Nanos bus_period{100ms};  // clusterCron
};

class SimCluster {
 public:
  // nodes.size() must be primaries * (1 + replicas_per_primary): the first `primaries` nodes
  // are the primaries, then the replicas, replica k following primary k % primaries (what
  // redis-cli --cluster create did on the measured 3+3 cluster).
  SimCluster(World& world, std::vector<Node*> nodes, ClusterConfig config = {});
  ~SimCluster();
  SimCluster(const SimCluster&) = delete;
  SimCluster& operator=(const SimCluster&) = delete;

  [[nodiscard]] std::size_t size() const noexcept;
  [[nodiscard]] SimRedis& server(std::size_t i);
  [[nodiscard]] const std::string& id(std::size_t i) const;  // the node id (40 hex)
  [[nodiscard]] std::vector<loop::Endpoint> endpoints() const;
  [[nodiscard]] std::string url() const;  // redis://n1:6379,n2:6379,...
  [[nodiscard]] const ClusterConfig& config() const noexcept { return config_; }

  // The truth (what every node will believe once the gossip arrived).
  [[nodiscard]] std::size_t owner(int slot) const;  // the primary serving `slot`
  [[nodiscard]] bool is_primary(std::size_t i) const;
  [[nodiscard]] std::vector<std::size_t> replicas_of(std::size_t primary) const;

  // CLUSTER FAILOVER [FORCE|TAKEOVER] as sent to node i: "" (+OK) or the error's text.
  std::string failover(std::size_t i, std::string_view option = {});
  void crash(std::size_t i);    // machine death (SimRedis::crash) and its failover
  void kill(std::size_t i);     // process death (SimRedis::kill): the same for the cluster
  void restart(std::size_t i);  // back (AOF always) as a replica of whoever serves its slots
  // Moves `slot` to primary `to` as redis-cli --cluster reshard does, one step every `step`
  // (IMPORTING, MIGRATING, one MIGRATE per key, SETSLOT NODE on target then source); `done`
  // after the last.
  void migrate_slot(int slot, std::size_t to, Nanos step, std::function<void()> done = {});
  // A command as an operator's redis-cli sends it to node i (the reply is dropped).
  void admin(std::size_t i, const std::vector<std::string>& argv);

  [[nodiscard]] int failovers() const noexcept;
  std::function<void(std::size_t from, std::size_t to)> on_failover;  // at the promotion

  struct Impl;

 private:
  ClusterConfig config_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lockwire::sim
