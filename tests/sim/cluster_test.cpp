// SimCluster (sim_cluster.hpp) on its own: slot split, redirections, a graceful failover, a
// crash failover with its timing, and a slot migration's ASK / TRYAGAIN / MOVED.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "lockwire/sim/sim_cluster.hpp"
#include "raw_client.hpp"

namespace lockwire::sim::test {
namespace {

using namespace std::chrono_literals;

struct ClusterFixture : ::testing::Test {
  World w{7};
  Node& cli = w.add_node("client");
  std::unique_ptr<SimCluster> c;
  void SetUp() override {
    std::vector<Node*> nodes;
    for (int i = 1; i <= 6; ++i) {
      std::string name = "n";  // (one append: gcc 12's -Wrestrict misfires on "n" + ...)
      name += std::to_string(i);
      nodes.push_back(&w.add_node(name));
    }
    c = std::make_unique<SimCluster>(w, nodes);
  }
  std::unique_ptr<Raw> open(std::size_t i) {
    return std::make_unique<Raw>(w, cli, c->server(i).endpoint());
  }
};

TEST_F(ClusterFixture, SlotsSplitLikeRedisCli) {
  EXPECT_EQ(c->owner(0), 0u);
  EXPECT_EQ(c->owner(5460), 0u);
  EXPECT_EQ(c->owner(5461), 1u);
  EXPECT_EQ(c->owner(10922), 1u);
  EXPECT_EQ(c->owner(10923), 2u);
  EXPECT_EQ(c->owner(16383), 2u);
  EXPECT_EQ(c->replicas_of(0), std::vector<std::size_t>{3});
  EXPECT_EQ(c->url(), "redis://n1:6379,n2:6379,n3:6379,n4:6379,n5:6379,n6:6379");
}

TEST_F(ClusterFixture, RedirectionsAndHello) {
  auto r = open(0);
  EXPECT_EQ(r->call({"CLUSTER", "KEYSLOT", "foo"}), ":12182\r\n");
  EXPECT_EQ(r->call({"GET", "foo"}), "-MOVED 12182 n3:6379\r\n");
  EXPECT_EQ(r->call({"MGET", "a", "b"}), "-CROSSSLOT Keys in request don't hash to the same slot\r\n");
  EXPECT_EQ(r->call({"SET", "{b}x", "1"}), "+OK\r\n");  // {b}: slot 3300, on n1
  const std::string hello = r->call({"HELLO", "3"});
  EXPECT_NE(hello.find("$4\r\nmode\r\n$7\r\ncluster\r\n"), std::string::npos) << hello;
  auto rep = open(5);  // n6 replicates n3
  EXPECT_EQ(rep->call({"GET", "foo"}), "-MOVED 12182 n3:6379\r\n");
  EXPECT_EQ(rep->call({"READONLY"}), "+OK\r\n");
  EXPECT_EQ(rep->call({"GET", "foo"}), "$-1\r\n");
  EXPECT_EQ(rep->call({"SET", "foo", "1"}), "-MOVED 12182 n3:6379\r\n");
  // A queued command's redirection flags the transaction; EXEC then aborts it.
  EXPECT_EQ(r->call({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(r->call({"GET", "foo"}), "-MOVED 12182 n3:6379\r\n");
  EXPECT_EQ(r->call({"EXEC"}), "-EXECABORT Transaction discarded because of previous errors.\r\n");
}

TEST_F(ClusterFixture, GracefulFailover) {
  auto p = open(2);
  auto rep = open(5);
  EXPECT_EQ(rep->call({"CLUSTER", "FAILOVER"}), "+OK\r\n");
  const Nanos t0 = w.now();
  // The old primary holds the write, then answers MOVED to its former replica.
  const std::string moved = p->call({"SET", "foo", "1"});
  EXPECT_EQ(moved, "-MOVED 12182 n6:6379\r\n");
  EXPECT_NEAR(std::chrono::duration<double>(w.now() - t0).count(), 0.045, 0.01);
  EXPECT_EQ(rep->call({"SET", "foo", "1"}), "+OK\r\n");
  EXPECT_EQ(c->owner(12182), 5u);
  EXPECT_FALSE(c->is_primary(2));
  EXPECT_EQ(c->failovers(), 1);
  w.run_for(2ms);  // the gossip reaches the other nodes
  auto other = open(0);
  EXPECT_EQ(other->call({"GET", "foo"}), "-MOVED 12182 n6:6379\r\n");
}

TEST_F(ClusterFixture, CrashFailoverTimingAndClusterDown) {
  auto r = open(0);
  c->crash(2);
  w.run_for(3000ms);
  EXPECT_EQ(r->call({"GET", "foo"}), "-MOVED 12182 n3:6379\r\n");
  w.run_for(200ms);  // 3.2 s: FAIL
  EXPECT_EQ(r->call({"GET", "foo"}), "-CLUSTERDOWN The cluster is down\r\n");
  EXPECT_EQ(r->call({"PING"}), "+PONG\r\n");
  w.run_for(1200ms);  // 4.4 s: elected and known
  EXPECT_EQ(r->call({"GET", "foo"}), "-MOVED 12182 n6:6379\r\n");
  c->restart(2);
  w.run_for(100ms);
  auto back = open(2);
  EXPECT_EQ(back->call({"GET", "foo"}), "-MOVED 12182 n6:6379\r\n");
}

// A partition: n1 (primary of slots 0-5460) and a client cut off from the five other nodes for
// 10 s. The others see n1 PFAIL once their unanswered PING is node-timeout (2 s) old (sent up to
// 1 s after the cut), FAIL with a majority of the primaries, and elect n4; n1 keeps serving its
// slots until it has not reached a majority for node-timeout, then answers CLUSTERDOWN; after
// the heal it takes the new configuration and its clients get MOVED.
TEST_F(ClusterFixture, PartitionedPrimaryFailsOverAndGoesDownInTheMinority) {
  Node& near = w.add_node("client-n1");
  Raw mine(w, near, c->server(0).endpoint());
  auto other = open(1);
  EXPECT_EQ(mine.call({"SET", "{b}x", "1"}), "+OK\r\n");
  const Nanos t0 = w.now();
  std::vector<const Node*> rest{&cli};
  for (std::size_t i = 1; i < 6; ++i) rest.push_back(&c->server(i).node());
  (void)w.net().partition({&c->server(0).node(), &near}, rest, 10s);
  w.run_for(1500ms);
  EXPECT_EQ(mine.call({"SET", "{b}x", "2"}), "+OK\r\n");  // the minority accepts writes for now
  // ping-sent set (the unanswered PING), link down, not yet PFAIL.
  const std::string early = other->call({"CLUSTER", "NODES"});
  const auto line_of = [](const std::string& nodes, const std::string& host) {
    const auto at = nodes.find(" " + host + ":");
    const auto start = nodes.rfind('\n', at) == std::string::npos ? 0 : nodes.rfind('\n', at) + 1;
    return nodes.substr(start, nodes.find('\n', at) - start);
  };
  w.run_until([&] { return c->owner(0) != 0; }, t0 + 10s);
  const Nanos elected = w.now() - t0;
  EXPECT_GT(elected, Nanos(2500ms));  // PFAIL >= 2 s, FAIL, then 0.5-1 s of election
  EXPECT_LT(elected, Nanos(4200ms));
  EXPECT_EQ(c->owner(0), 3u);
  const std::string nodes = other->call({"CLUSTER", "NODES"});
  const std::string n1 = line_of(nodes, "n1");
  EXPECT_NE(n1.find("fail"), std::string::npos) << n1;
  EXPECT_NE(n1.find("disconnected"), std::string::npos) << n1;
  EXPECT_EQ(n1.find(" 0 0 "), std::string::npos) << n1;  // ping-sent is not 0
  // n1 is in the minority: CLUSTERDOWN by node-timeout after it stopped reaching a majority.
  w.run_until([] { return false; }, t0 + 4200ms);
  EXPECT_EQ(mine.call({"SET", "{b}x", "3"}), "-CLUSTERDOWN The cluster is down\r\n");
  EXPECT_EQ(mine.call({"GET", "{b}x"}), "-CLUSTERDOWN The cluster is down\r\n");
  EXPECT_EQ(other->call({"GET", "{b}x"}), "-MOVED 3300 n4:6379\r\n");
  // After the heal (and the rejoin): n1 follows n4, its client is redirected.
  w.run_until([] { return false; }, t0 + 12s);
  EXPECT_EQ(mine.call({"SET", "{b}x", "4"}), "-MOVED 3300 n4:6379\r\n");
  EXPECT_EQ(c->server(0).primary_of(), &c->server(3));
  const std::string before = line_of(early, "n1");
  EXPECT_EQ(before.find("fail"), std::string::npos) << before;  // not PFAIL at 1.5 s
  EXPECT_NE(before.find("disconnected"), std::string::npos) << before;
}

TEST_F(ClusterFixture, MigrationAskTryagainThenMoved) {
  const int slot = 15495;  // {a}
  auto src = open(2);
  auto dst = open(0);
  ASSERT_EQ(src->call({"SET", "{a}1", "x"}), "+OK\r\n");
  ASSERT_EQ(src->call({"SET", "{a}2", "y"}), "+OK\r\n");
  bool done = false;
  c->migrate_slot(slot, 0, 10ms, [&] { done = true; });
  w.run_for(12ms);  // IMPORTING/MIGRATING set, one key moved ({a}1: names sorted)
  EXPECT_EQ(src->call({"GET", "{a}1"}), "-ASK 15495 n1:6379\r\n");
  EXPECT_EQ(src->call({"GET", "{a}2"}), "$1\r\ny\r\n");
  EXPECT_EQ(src->call({"MGET", "{a}1", "{a}2"}),
            "-TRYAGAIN Multiple keys request during rehashing of slot\r\n");
  EXPECT_EQ(dst->call({"GET", "{a}1"}), "-MOVED 15495 n3:6379\r\n");
  EXPECT_EQ(dst->call({"ASKING"}), "+OK\r\n");
  EXPECT_EQ(dst->call({"GET", "{a}1"}), "$1\r\nx\r\n");
  EXPECT_EQ(dst->call({"ASKING"}), "+OK\r\n");
  EXPECT_EQ(dst->call({"MGET", "{a}1", "{a}2"}),
            "-TRYAGAIN Multiple keys request during rehashing of slot\r\n");
  w.run_until([&] { return done; }, w.now() + 1s);
  ASSERT_TRUE(done);
  w.run_for(5ms);
  EXPECT_EQ(src->call({"GET", "{a}2"}), "-MOVED 15495 n1:6379\r\n");
  EXPECT_EQ(dst->call({"MGET", "{a}1", "{a}2"}), "*2\r\n$1\r\nx\r\n$1\r\ny\r\n");
  EXPECT_EQ(c->owner(slot), 0u);
  auto other = open(1);
  EXPECT_EQ(other->call({"GET", "{a}1"}), "-MOVED 15495 n1:6379\r\n");
}

}  // namespace
}  // namespace lockwire::sim::test

namespace lockwire::sim::test {
namespace {

std::int64_t integer_of(const std::string& reply) {
  return reply.size() > 1 && reply[0] == ':' ? std::stoll(reply.substr(1)) : -1;
}

// The line of `host` in a CLUSTER NODES reply (empty when missing).
std::string node_line(const std::string& nodes, const std::string& host) {
  const auto at = nodes.find(" " + host + ":");
  if (at == std::string::npos) return {};
  const auto nl = nodes.rfind('\n', at);
  const auto start = nl == std::string::npos ? 0 : nl + 1;
  return nodes.substr(start, nodes.find('\n', at) - start);
}

}  // namespace

// What lockwire's Cluster vouch reads (issue #28): CONFIG GET cluster-node-timeout is the
// model's node timeout; CLUSTER COUNT-FAILURE-REPORTS counts the reports a node holds from the
// masters that flag the subject, which lapse 2 * node-timeout after they last came.
TEST_F(ClusterFixture, FailureReportsThroughAPartition) {
  auto n2 = open(1);
  auto n5 = open(4);
  EXPECT_EQ(n2->call({"CONFIG", "GET", "cluster-node-timeout"}),
            "*2\r\n$20\r\ncluster-node-timeout\r\n$4\r\n2000\r\n");
  const std::string n1 = c->id(0);
  const std::string n3 = c->id(2);
  EXPECT_EQ(n2->call({"CLUSTER", "COUNT-FAILURE-REPORTS", n1}), ":0\r\n");
  EXPECT_EQ(n2->call({"CLUSTER", "COUNT-FAILURE-REPORTS", c->id(1)}), ":0\r\n");  // itself
  EXPECT_EQ(n2->call({"CLUSTER", "COUNT-FAILURE-REPORTS", std::string(40, '0')}),
            "-ERR Unknown node " + std::string(40, '0') + "\r\n");
  EXPECT_EQ(n2->call({"CLUSTER", "COUNT-FAILURE-REPORTS", "abc"}), "-ERR Unknown node abc\r\n");
  // n1 cut off from everyone for 6 s: once n3 flags it, n2 holds n3's report (and n5, a
  // replica, holds n2's and n3's); n1 itself holds none about n1.
  const Nanos t0 = w.now();
  std::vector<const Node*> rest{&cli};
  for (std::size_t i = 1; i < 6; ++i) rest.push_back(&c->server(i).node());
  (void)w.net().partition({&c->server(0).node()}, rest, 6s);
  w.run_until([&] { return c->owner(0) != 0; }, t0 + 6s);
  ASSERT_NE(c->owner(0), 0u);
  EXPECT_EQ(n2->call({"CLUSTER", "COUNT-FAILURE-REPORTS", n1}), ":1\r\n");
  EXPECT_EQ(n5->call({"CLUSTER", "COUNT-FAILURE-REPORTS", n1}), ":2\r\n");
  EXPECT_EQ(n2->call({"CLUSTER", "COUNT-FAILURE-REPORTS", n3}), ":0\r\n");
  // After the heal the masters no longer flag n1 (a replica now): their reports end.
  w.run_until([] { return false; }, t0 + 8s);
  EXPECT_EQ(integer_of(n2->call({"CLUSTER", "COUNT-FAILURE-REPORTS", n1})), 0);
  EXPECT_EQ(integer_of(n5->call({"CLUSTER", "COUNT-FAILURE-REPORTS", n1})), 0);
}

// A dead primary shows in the others' CLUSTER NODES as on Redis before its FAIL: the PING to it
// pending (ping-sent, sent up to node-timeout/2 after the death), PFAIL once that is
// node-timeout old (here at the measured FAIL, 3.1 s, or before), and reports about it.
TEST_F(ClusterFixture, ADeadPrimaryIsPendingThenFailedWithReports) {
  auto n2 = open(1);
  const Nanos t0 = w.now();
  c->crash(0);
  w.run_until([] { return false; }, t0 + 1500ms);
  std::string line = node_line(n2->call({"CLUSTER", "NODES"}), "n1");
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.find("fail"), std::string::npos) << line;
  EXPECT_EQ(line.find(" - 0 "), std::string::npos) << line;  // ping-sent is not 0
  EXPECT_NE(line.find("disconnected"), std::string::npos) << line;
  EXPECT_EQ(n2->call({"CLUSTER", "COUNT-FAILURE-REPORTS", c->id(0)}), ":0\r\n");
  w.run_until([] { return false; }, t0 + 3200ms);
  line = node_line(n2->call({"CLUSTER", "NODES"}), "n1");
  EXPECT_NE(line.find("master,fail "), std::string::npos) << line;  // the measured FAIL
  EXPECT_EQ(n2->call({"CLUSTER", "COUNT-FAILURE-REPORTS", c->id(0)}), ":1\r\n");  // n3's
}

}  // namespace lockwire::sim::test
