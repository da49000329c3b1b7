// The simulated Sentinel (sim_sentinel.hpp): replies, the graceful and the crash failover with
// their measured timing, quorum, reconfiguration of the old primary, and loop::Connection
// following a failover through the simulated sentinels.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "lockwire/loop/connection.hpp"
#include "lockwire/sim/sim_redis.hpp"
#include "lockwire/sim/sim_sentinel.hpp"
#include "lockwire/sim/world.hpp"
#include "raw_client.hpp"

namespace lockwire::sim {
namespace {

using test::Raw;
using namespace std::chrono_literals;

struct Topology : ::testing::Test {
  World w{5};
  Node& na = w.add_node("redis-a");
  Node& nb = w.add_node("redis-b");
  Node& cli = w.add_node("client");
  SimRedis a{w, na};
  SimRedis b{w, nb};
  std::unique_ptr<SimSentinels> s;
  void SetUp() override {
    a.add_replica(b, 1ms);
    std::vector<Node*> nodes;
    for (const char* n : {"s1", "s2", "s3"}) nodes.push_back(&w.add_node(n));
    s = std::make_unique<SimSentinels>(w, nodes, a, std::vector<SimRedis*>{&b});
    w.run_for(500ms);
  }
  // Runs until `pred` or `limit` of virtual time; the time it took.
  Nanos until(const std::function<bool()>& pred, Nanos limit) {
    const Nanos t0 = w.now();
    w.run_until(pred, w.now() + limit);
    return w.now() - t0;
  }
};

TEST_F(Topology, Replies) {
  Raw c(w, cli, s->server(0).endpoint());
  EXPECT_EQ(c.call({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster"}),
            "*2\r\n$7\r\nredis-a\r\n$4\r\n6379\r\n");
  EXPECT_EQ(c.call({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "nope"}), "*-1\r\n");
  EXPECT_EQ(c.call({"SENTINEL", "MASTER", "nope"}), "-ERR No such master with that name\r\n");
  EXPECT_EQ(c.call({"ROLE"}), "*2\r\n$8\r\nsentinel\r\n*1\r\n$8\r\nmymaster\r\n");
  EXPECT_EQ(c.call({"GET", "x"}), "-ERR unknown command 'GET', with args beginning with: 'x' \r\n");
  EXPECT_EQ(c.call({"PUBLISH", "x", "y"}),
            "-ERR Only HELLO messages are accepted by Sentinel instances.\r\n");
  const std::string hello = c.call({"HELLO", "3"});
  EXPECT_EQ(hello.substr(0, 4), "%6\r\n");
  EXPECT_NE(hello.find("$4\r\nmode\r\n$8\r\nsentinel\r\n"), std::string::npos);
  EXPECT_EQ(c.call({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "nope"}), "_\r\n");
  const std::string m = c.call({"SENTINEL", "MASTER", "mymaster"});
  EXPECT_EQ(m.substr(0, 5), "%20\r\n");
  EXPECT_NE(m.find("$12\r\nconfig-epoch\r\n$1\r\n0\r\n"), std::string::npos);
  EXPECT_NE(m.find("$5\r\nflags\r\n$6\r\nmaster\r\n"), std::string::npos);
  EXPECT_EQ(c.call({"SUBSCRIBE", "+switch-master"}),
            ">3\r\n$9\r\nsubscribe\r\n$14\r\n+switch-master\r\n:1\r\n");
}

TEST_F(Topology, GracefulFailoverTiming) {
  Raw sub(w, cli, s->server(1).endpoint());
  sub.call({"SUBSCRIBE", "+switch-master"});
  Raw old(w, cli, a.endpoint());
  Raw c(w, cli, s->server(0).endpoint());
  const Nanos t0 = w.now();
  EXPECT_EQ(c.call({"SENTINEL", "FAILOVER", "mymaster"}), "+OK\r\n");
  EXPECT_EQ(c.call({"SENTINEL", "FAILOVER", "mymaster"}),
            "-INPROG Failover already in progress\r\n");
  until([&] { return !b.model().is_replica(); }, 2s);
  EXPECT_NEAR(std::chrono::duration<double>(w.now() - t0).count(), 0.2, 0.01);
  const std::size_t before = sub.frames.size();
  until([&] { return sub.frames.size() > before; }, 3s);
  EXPECT_NEAR(std::chrono::duration<double>(w.now() - t0).count(), 1.1, 0.01);
  EXPECT_EQ(sub.frames.back(),
            "*3\r\n$7\r\nmessage\r\n$14\r\n+switch-master\r\n$34\r\nmymaster redis-a 6379 "
            "redis-b 6379\r\n");
  EXPECT_EQ(s->config_epoch(), 1u);
  EXPECT_EQ(&s->master(), &b);
  // The old primary stays writable until the sentinels reconfigure it, ~10 s later.
  EXPECT_EQ(old.call({"SET", "k", "v"}), "+OK\r\n");
  until([&] { return a.model().is_replica(); }, 15s);
  EXPECT_NEAR(std::chrono::duration<double>(w.now() - t0).count(), 11.1, 0.3);
  w.run_for(5ms);
  EXPECT_TRUE(old.closed);  // CLIENT KILL TYPE normal
  Raw again(w, cli, a.endpoint());
  EXPECT_EQ(again.call({"SET", "k", "v"}),
            "-READONLY You can't write against a read only replica.\r\n");
}

TEST_F(Topology, CrashFailoverPromotesTheReplica) {
  Raw sub(w, cli, s->server(2).endpoint());
  sub.call({"SUBSCRIBE", "+switch-master"});
  const std::size_t before = sub.frames.size();
  const Nanos t0 = w.now();
  a.kill();
  until([&] { return !b.model().is_replica(); }, 5s);
  const double promoted = std::chrono::duration<double>(w.now() - t0).count();
  EXPECT_GT(promoted, 1.0);  // down-after 1 s, then quorum and the vote
  EXPECT_LT(promoted, 1.5);
  until([&] { return sub.frames.size() > before; }, 5s);
  const double switched = std::chrono::duration<double>(w.now() - t0).count();
  EXPECT_NEAR(switched - promoted, 1.03, 0.05);
  EXPECT_EQ(s->config_epoch(), 1u);
  // Restarted, the old primary reports master until it is reconfigured as a replica.
  a.restart(Persistence::none);
  const Nanos t1 = w.now();
  until([&] { return a.model().is_replica(); }, 15s);
  EXPECT_NEAR(std::chrono::duration<double>(w.now() - t1).count(), 10.0, 0.3);
  EXPECT_TRUE(a.model().is_replica());
  EXPECT_EQ(a.primary_of(), &b);
}

TEST_F(Topology, NoFailoverWithoutQuorum) {
  s->server(1).node().pause();
  s->server(2).node().pause();
  a.kill();
  w.run_for(5s);
  EXPECT_TRUE(b.model().is_replica());
  EXPECT_EQ(s->config_epoch(), 0u);
}

TEST_F(Topology, ConnectionFollowsTheFailover) {
  loop::ConnectionOptions o;
  ASSERT_FALSE(loop::parse_url(s->url(), o));
  o.connect_timeout = 1s;
  o.reconnect.initial = 5ms;
  o.reconnect.max = 100ms;
  loop::Connection conn(cli.loop(), o);
  conn.start();
  until([&] { return conn.state() == loop::ConnectionState::ready; }, 2s);
  ASSERT_EQ(conn.state(), loop::ConnectionState::ready);
  EXPECT_EQ(conn.server().host, "redis-a");
  const auto epoch = conn.primary_epoch();
  EXPECT_EQ(s->failover(0), "");
  until([&] { return conn.server().host == "redis-b" &&
                     conn.state() == loop::ConnectionState::ready; }, 5s);
  EXPECT_EQ(conn.server().host, "redis-b");
  // Followed from the leader's +promoted-slave, before any sentinel's +switch-master; the
  // leader's SENTINEL MASTER still has the old address then, so the epoch is not known.
  EXPECT_EQ(s->switches(), 0u);
  EXPECT_NE(conn.primary_epoch(), epoch);
  EXPECT_EQ(conn.config_epoch(), std::nullopt);
  conn.close();
}

// Partitions (Network::partition): a primary and 2 replicas, sentinels with down-after 3 s and
// quorum 2, everything up for 16 s (so the sentinels' links are older than 15 s and are closed
// and made again across the cut, as in Redis) before the primary is cut off.
struct Partitioned : ::testing::Test {
  World w{7};
  Node& na = w.add_node("redis-a");
  Node& nb = w.add_node("redis-b");
  Node& nc = w.add_node("redis-c");
  Node& cli = w.add_node("client");
  Node& cli_a = w.add_node("client-a");  // on the primary's side
  SimRedis a{w, na};
  SimRedis b{w, nb};
  SimRedis c{w, nc};
  std::vector<Node*> sn;
  std::unique_ptr<SimSentinels> s;
  void SetUp() override {
    a.add_replica(b, 1ms);
    a.add_replica(c, 1ms);
    for (const char* n : {"s1", "s2", "s3"}) sn.push_back(&w.add_node(n));
    SentinelConfig cfg;
    cfg.down_after = 3s;
    s = std::make_unique<SimSentinels>(w, sn, a, std::vector<SimRedis*>{&b, &c}, cfg);
    w.run_for(16s);
  }
  // A field of a SENTINEL MASTER reply (RESP2: name and value as bulk strings).
  static std::string field(const std::string& reply, const std::string& name) {
    std::string key("$");
    key.append(std::to_string(name.size())).append("\r\n").append(name).append("\r\n$");
    const auto at = reply.find(key);
    if (at == std::string::npos) return "?";
    const auto len_end = reply.find("\r\n", at + key.size());
    const auto len = std::stoul(reply.substr(at + key.size(), len_end - at - key.size()));
    return reply.substr(len_end + 2, len);
  }
  static long ms_of(const std::string& reply, const std::string& name) {
    return std::stol(field(reply, name));
  }
};

// The primary alone on its side: each sentinel's last-ok-ping-reply and last-ping-sent grow from
// the cut, +sdown once the oldest unanswered PING is older than down-after, then +odown, the
// vote and the promotion; the old primary stays writable until the sentinels reach it again
// after the heal (their SYN retries) and convert it 10 s later.
TEST_F(Partitioned, PrimaryCutOffFromSentinels) {
  Raw q(w, cli, s->server(1).endpoint());
  const Nanos t0 = w.now();
  std::vector<const Node*> side_b{&nb, &nc, &cli};
  for (Node* n : sn) side_b.push_back(n);
  (void)w.net().partition({&na, &cli_a}, side_b, 20s);
  w.run_for(2s);
  const std::string m = q.call({"SENTINEL", "MASTER", "mymaster"});
  EXPECT_GE(ms_of(m, "last-ok-ping-reply"), 2000);  // no reply since the cut
  EXPECT_LT(ms_of(m, "last-ok-ping-reply"), 3100);
  EXPECT_GE(ms_of(m, "last-ping-sent"), 1000);  // the first PING after the cut, unanswered
  EXPECT_LE(ms_of(m, "last-ping-sent"), 2000);
  EXPECT_EQ(field(m, "down-after-milliseconds"), "3000");
  EXPECT_EQ(field(m, "quorum"), "2");
  EXPECT_EQ(field(m, "num-other-sentinels"), "2");
  EXPECT_EQ(field(m, "ip"), "redis-a");
  EXPECT_EQ(field(m, "flags").find("s_down"), std::string::npos);
  // +sdown when the oldest PING is down-after old: 3 s after the first PING the cut left
  // unanswered (sent up to 1 s after the cut), at a cron tick.
  const Nanos sdown = t0 + [&] {
    w.run_until([&] {
      return field(q.call({"SENTINEL", "MASTER", "mymaster"}), "flags").find("s_down") !=
             std::string::npos;
    }, t0 + 10s);
    return w.now() - t0;
  }();
  EXPECT_GT(sdown - t0, Nanos(3s));
  EXPECT_LT(sdown - t0, Nanos(4200ms));
  const std::string d = q.call({"SENTINEL", "MASTER", "mymaster"});
  EXPECT_GT(ms_of(d, "last-ping-sent"), 3000);
  EXPECT_NE(field(d, "flags").find("disconnected"), std::string::npos);  // closed after 1.5 s
  w.run_until([&] { return !b.model().is_replica() || !c.model().is_replica(); }, t0 + 10s);
  EXPECT_LT(w.now() - sdown, Nanos(500ms));  // +odown, the vote, REPLICAOF NO ONE
  w.run_until([&] { return s->switches() > 0; }, t0 + 10s);
  SimRedis& promoted = s->master();
  EXPECT_NE(&promoted, &a);
  SimRedis& other = &promoted == &b ? c : b;
  EXPECT_EQ(other.primary_of(), &promoted);  // reachable: reconfigured with the switch
  // A client on the primary's side is still served there as a primary.
  Raw old(w, cli_a, a.endpoint());
  EXPECT_EQ(old.call({"SET", "k", "v"}), "+OK\r\n");
  w.run_until([] { return false; }, t0 + 19s);
  EXPECT_FALSE(a.model().is_replica());
  // After the heal: reconnected at a SYN retry, converted 10 s later.
  w.run_until([&] { return a.model().is_replica(); }, t0 + 80s);
  EXPECT_TRUE(a.model().is_replica());
  EXPECT_EQ(a.primary_of(), &promoted);
  EXPECT_GT(w.now() - t0, Nanos(30s));
}

// A sentinel cut off with the primary neither votes nor counts for odown; the two others fail
// over, and it learns the new configuration from their hellos after the heal.
TEST_F(Partitioned, CutOffSentinelLearnsAfterHeal) {
  (void)w.net().partition({&na, sn[0], &cli_a}, {&nb, &nc, sn[1], sn[2], &cli}, 8s);
  const Nanos t0 = w.now();
  w.run_until([&] { return s->switches() > 0; }, t0 + 8s);
  ASSERT_EQ(s->switches(), 1);
  Raw q(w, cli_a, s->server(0).endpoint());
  EXPECT_EQ(q.call({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster"}),
            "*2\r\n$7\r\nredis-a\r\n$4\r\n6379\r\n");  // s1 still names the old primary
  w.run_until([] { return false; }, t0 + 8s + 2100ms);  // healed, then one hello period
  const std::string now = q.call({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster"});
  EXPECT_EQ(now.find("redis-a"), std::string::npos) << now;
}

}  // namespace
}  // namespace lockwire::sim
