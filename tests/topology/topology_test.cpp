// The test topologies themselves (tests/support/redis_topology.hpp): a real Redis Cluster and a
// primary + replica behind real sentinels come up on free loopback ports, and a sentinel
// failover moves the primary — what the Cluster and Sentinel suites build on.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "lockwire/loop/cluster_map.hpp"
#include "redis_topology.hpp"

namespace {

using namespace std::chrono_literals;
using lockwire::test::RedisCluster;
using lockwire::test::RedisSentinels;

TEST(Topology, ClusterOfThreePrimariesAndThreeReplicas) {
  RedisCluster c(3, 1);
  ASSERT_EQ(c.size(), 6u);
  EXPECT_NE(c.node(0).cli({"CLUSTER", "INFO"}).find("cluster_slots_assigned:16384"),
            std::string::npos);
  // {r} hashes to slot 7893 (CLUSTER KEYSLOT: CRC16 of "r" mod 16384).
  EXPECT_EQ(c.node(0).cli({"CLUSTER", "KEYSLOT", "lockwire:{r}"}), "7893\n");
  const std::size_t p = c.primary_of(7893);
  EXPECT_EQ(c.node(p).cli({"SET", "lockwire:{r}", "1"}), "OK\n");
  EXPECT_EQ(c.seeds_url().rfind("redis://127.0.0.1:", 0), 0u);
  // loop::cluster::key_slot agrees with the server on keys with and without hash tags.
  for (const std::string key : {"a", "foo", "lockwire:{deploy:web}", "lockwire:{r}:q", "{}x",
                                "x{}y{z}", "{{a}}", "user:{42}:k", "\xff\x00", "123456789"}) {
    EXPECT_EQ(c.node(0).cli({"CLUSTER", "KEYSLOT", key}),
              std::to_string(lockwire::loop::cluster::key_slot(key)) + "\n")
        << key;
  }
}

TEST(Topology, SentinelsFollowAFailover) {
  RedisSentinels s;
  EXPECT_EQ(s.reported_primary_port(), s.primary().port());
  EXPECT_EQ(s.url().find("redis-sentinel://127.0.0.1:"), 0u);
  EXPECT_EQ(s.sentinel(0).cli({"SENTINEL", "FAILOVER", s.master_name()}), "OK\n");
  const auto end = std::chrono::steady_clock::now() + 20s;
  while (s.reported_primary_port() != s.replica().port() && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(s.reported_primary_port(), s.replica().port());
}

}  // namespace
