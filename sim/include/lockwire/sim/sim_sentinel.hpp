// Redis Sentinel in the simulated world: N sentinel nodes monitoring one master (a SimRedis and
// its replicas), answering what redis-server 7.0.15 in `--sentinel` mode answers to the commands
// lockwire sends them (HELLO, AUTH, CLIENT, PING, ROLE, SUBSCRIBE, SENTINEL GET-MASTER-ADDR-BY-
// NAME / MASTER / MASTERS / FAILOVER / MYID / CKQUORUM, INFO), and failing over as they do:
//
// - each sentinel PINGs every data node over the simulated network; a node whose oldest
//   unanswered PING (or whose lost link) is older than down-after is subjectively down (+sdown);
// - objectively down (+odown) when `quorum` sentinels (alive, not paused) see it down;
// - the first sentinel at odown asks for votes (epoch + 1); with a majority (and >= quorum) it
//   leads: picks the reachable replica with the highest replication offset, promotes it
//   (REPLICAOF NO ONE, with CLIENT KILL TYPE normal) and publishes +switch-master;
// - `SENTINEL FAILOVER <name>` does the same at once, without votes (graceful);
// - a node the configuration says is a replica but that still reports master (the old primary)
//   is reconfigured (REPLICAOF new, CLIENT KILL TYPE normal) once reachable for ~10 s.
//
// Timing, measured on 7.0.15 (docs/races.md, "Sentinel"): SENTINEL FAILOVER -> promotion at
// +0.2 s, +switch-master at +1.1 s, old primary writable until ~+11 s; crash -> +sdown after
// down-after, +odown and election ~0.15 s later, promotion ~0.13 s after the election,
// +switch-master ~1.1 s after it. All timing is from the world clock and seeded draws.
//
// Partitions (Network::partition): a sentinel hears another only if it is alive, not paused and
// not cut off from it — for is-master-down (odown), votes and the new configuration, which one
// cut off at the switch learns from the others' hellos (every 2 s) after the heal; a PING link
// up for 15 s whose oldest PING and last reply are older than down-after/2 is closed and made
// again (sentinelCheckSubjectivelyDown); a replica the leader cannot reach keeps its old primary
// until +fix-slave-config (failover-timeout after it is reachable and up again).
//
// Simplifications: sentinels learn each other's state (votes, sdown, new configurations) without
// messages over the network — reachability at that instant decides; the replication offsets a
// leader compares are read from the models; a replica is promoted (and reconfigured) by a direct
// call, which a partition between the leader and it aborts instead of delaying.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lockwire/sim/sim_redis.hpp"
#include "lockwire/sim/world.hpp"

namespace lockwire::sim {

struct SentinelConfig {
  std::string master_name = "mymaster";
  int quorum = 2;
  Nanos down_after{1s};        // sentinel down-after-milliseconds
  Nanos failover_timeout{5s};  // sentinel failover-timeout
  int parallel_syncs = 1;
  std::uint16_t port = 26379;
  // Replication lag of a node the sentinels reconfigure as a replica.
  Nanos replication_lag{1ms};
  // How long a reachable node that should be a replica may still report master (measured:
  // the old primary of a graceful failover is reconfigured 10.07 s after +switch-master).
  Nanos convert_after{10s};
};

class SimSentinels {
 public:
  // Sentinels on `nodes` (one each, listening on config.port) monitoring `primary`; `replicas`
  // are the data nodes that may be promoted (already replicas of it).
  SimSentinels(World& world, std::vector<Node*> nodes, SimRedis& primary,
               std::vector<SimRedis*> replicas, SentinelConfig config = {});
  ~SimSentinels();
  SimSentinels(const SimSentinels&) = delete;
  SimSentinels& operator=(const SimSentinels&) = delete;

  [[nodiscard]] std::size_t size() const noexcept;
  [[nodiscard]] const SentinelConfig& config() const noexcept { return config_; }
  // The RESP face of sentinel i (a SimRedis in sentinel mode: pause/stall it like a server).
  [[nodiscard]] SimRedis& server(std::size_t i);
  [[nodiscard]] std::vector<loop::Endpoint> endpoints() const;
  // redis-sentinel://s1:26379,s2:26379,...#mymaster
  [[nodiscard]] std::string url() const;

  // SENTINEL FAILOVER <master> as sent to sentinel i: "" (+OK) or the error reply's text.
  std::string failover(std::size_t i = 0);
  // The master in the newest configuration any sentinel has, and its config epoch.
  [[nodiscard]] SimRedis& master() const;
  [[nodiscard]] std::uint64_t config_epoch() const;
  // Failovers that reached +switch-master so far.
  [[nodiscard]] int switches() const noexcept;

  // Two writable primaries: from a replica's promotion to its +switch-master (switched -1
  // while that has not happened). Clients still on the old primary are granted there, and the
  // leader already names the new one in the last ~90 ms.
  struct Window {
    Nanos promoted;
    Nanos switched;
  };
  [[nodiscard]] std::vector<Window> windows() const;

  // Called at the first +switch-master of each failover (from, to): e.g. a harness re-pointing
  // a service address as an operator's DNS would.
  std::function<void(SimRedis& from, SimRedis& to)> on_switch;
  // Called when the failover's leader starts naming the promoted replica (its +promoted-slave,
  // ~90 ms before +switch-master): from then on a client can be sent there, so a checker's
  // ground truth moves to it at this moment.
  std::function<void(SimRedis& from, SimRedis& to)> on_named;

  struct Impl;

 private:
  SentinelConfig config_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lockwire::sim
