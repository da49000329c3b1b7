// Real Redis topologies for integration tests, started on free loopback ports and stopped by pid
// (each node is a RedisServer): a Redis Cluster, and a primary with a replica behind sentinels.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "redis_server.hpp"

namespace lockwire::test {

// The replicas a CLUSTER NODES table names: lines whose flags (the third word) say slave,
// "myself,slave" included.
[[nodiscard]] int replicas_in_cluster_nodes(const std::string& table);

// N primaries with R replicas each, slots spread by `redis-cli --cluster create`; the
// constructor returns once every node reports cluster_state:ok and knows every other node.
class RedisCluster {
 public:
  explicit RedisCluster(int primaries = 3, int replicas_per_primary = 1,
                        std::vector<std::string> extra_args = {});
  RedisCluster(const RedisCluster&) = delete;
  RedisCluster& operator=(const RedisCluster&) = delete;

  [[nodiscard]] std::size_t size() const noexcept { return nodes_.size(); }
  [[nodiscard]] RedisServer& node(std::size_t i) { return *nodes_.at(i); }
  // redis://127.0.0.1:P1,127.0.0.1:P2,... (every node: any one suffices as a seed)
  [[nodiscard]] std::string seeds_url() const;
  // The node serving `slot` as primary right now (CLUSTER SHARDS as seen by node 0).
  [[nodiscard]] std::size_t primary_of(int slot);
  // Waits (bounded) until every node says cluster_state:ok; false if it never does.
  bool wait_ok(std::chrono::milliseconds limit = std::chrono::seconds(20));

 private:
  std::vector<std::unique_ptr<RedisServer>> nodes_;
};

// A primary, a replica and three sentinels monitoring it as `master_name` (quorum 2,
// down-after 3 s by default, failover-timeout 5 s); returns once every sentinel knows the
// replica and the other sentinels. A down-after of 1 s (the sentinels' PING period) leaves the
// sentinels almost nothing to vouch with: lock clients' leases then end within about a second
// (docs/protocol.md, *Partitions*).
class RedisSentinels {
 public:
  explicit RedisSentinels(std::string master_name = "mymaster", int sentinels = 3,
                          std::chrono::milliseconds down_after = std::chrono::milliseconds(3000));
  RedisSentinels(const RedisSentinels&) = delete;
  RedisSentinels& operator=(const RedisSentinels&) = delete;

  [[nodiscard]] const std::string& master_name() const noexcept { return master_; }
  [[nodiscard]] RedisServer& primary() { return *primary_; }
  [[nodiscard]] RedisServer& replica() { return *replica_; }
  [[nodiscard]] RedisServer& sentinel(std::size_t i) { return *sentinels_.at(i); }
  [[nodiscard]] std::size_t sentinels() const noexcept { return sentinels_.size(); }
  // redis-sentinel://127.0.0.1:S1,127.0.0.1:S2,...#master_name
  [[nodiscard]] std::string url() const;
  // The port of the primary as the sentinels report it now (SENTINEL GET-MASTER-ADDR-BY-NAME).
  [[nodiscard]] std::uint16_t reported_primary_port();

 private:
  std::string master_;
  std::unique_ptr<RedisServer> primary_;
  std::unique_ptr<RedisServer> replica_;
  std::vector<std::unique_ptr<RedisServer>> sentinels_;
};

}  // namespace lockwire::test
