// The `lockwire` tool on a real Redis Cluster (issue #14): 3 primaries + 3 replicas started by
// tests/support, every subcommand — watch included — on resources of every primary, through one
// node's URL and through the seed list `redis://h1:p1,h2:p2,…`.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <string>
#include <thread>
#include <vector>

#include "cli_proc.hpp"
#include "lockwire/loop/cluster_map.hpp"
#include "redis_topology.hpp"
#include "slot_migration.hpp"

namespace {

using namespace std::chrono_literals;
using namespace lockwire::test;

struct Result {
  int status;
  std::string out, err;
};

class CliCluster : public ::testing::Test {
 protected:
  CliCluster() { EXPECT_TRUE(cluster_.wait_ok()); }
  Result lw(std::vector<std::string> args, const std::string& url) {
    args.insert(args.begin() + 1, {"--url", url});
    Proc p(args, dir_);
    const int st = p.wait(30s);
    return {st, p.out(), p.err()};
  }
  std::string one_node() const {
    std::string s = "redis://127.0.0.1:";
    s.append(std::to_string(const_cast<RedisCluster&>(cluster_).node(0).port()));
    return s;
  }
  // A resource whose slot primary node `p` serves.
  std::string resource_on(std::size_t p, const std::string& base) {
    for (int i = 0;; ++i) {
      std::string r = base;
      r.append(std::to_string(i));
      std::string key = "lockwire:{";
      key.append(r).append("}");
      if (cluster_.primary_of(lockwire::loop::cluster::key_slot(key)) == p) return r;
    }
  }
  std::vector<std::size_t> primaries() {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < cluster_.size(); ++i) {
      if (cluster_.node(i).cli({"ROLE"}).rfind("master", 0) == 0) out.push_back(i);
    }
    return out;
  }

  RedisCluster cluster_{3, 1};
  TempDir dir_;
};

TEST_F(CliCluster, EverySubcommandOnResourcesOfEveryPrimary) {
  const auto ps = primaries();
  ASSERT_EQ(ps.size(), 3u);
  for (const std::string& url : {one_node(), cluster_.seeds_url()}) {
    for (std::size_t p : ps) {
      const std::string r = resource_on(p, url == one_node() ? "n" : "s");
      Result a = lw({"acquire", r, "--ttl", "20s", "--owner", "alice"}, url);
      ASSERT_EQ(a.status, 0) << r << ": " << a.err;
      Result i = lw({"inspect", r}, url);
      EXPECT_EQ(i.status, 0) << i.err;
      EXPECT_NE(i.out.find("exclusive alice"), std::string::npos) << i.out;
      EXPECT_EQ(lw({"acquire", r, "--ttl", "5s", "--owner", "bob", "--wait", "200ms"}, url).status,
                75);
      EXPECT_EQ(lw({"renew", r, "--owner", "alice", "--ttl", "30s"}, url).status, 0);
      EXPECT_EQ(lw({"release", r, "--owner", "alice"}, url).status, 0);
      Result run = lw({"run", r, "--", "sh", "-c", "echo $LOCKWIRE_FENCING_TOKEN"}, url);
      EXPECT_EQ(run.status, 0) << run.err;
      EXPECT_FALSE(run.out.empty());
      ASSERT_EQ(lw({"acquire", r, "--ttl", "20s", "--owner", "held"}, url).status, 0);
      Result f = lw({"force-release", r}, url);
      EXPECT_EQ(f.status, 0) << f.err;
      EXPECT_NE(f.out.find("1"), std::string::npos) << f.out;
      EXPECT_EQ(cluster_.node(p).cli({"HLEN", std::string("lockwire:{").append(r).append("}")}), "0\n");
    }
  }
}

// `watch` through node 0's URL on a resource another primary serves: it reports the
// acquisition and the release made by another process (issue #14: it printed "inspect failed"
// about 4 times a second forever).
TEST_F(CliCluster, WatchAResourceOnAnotherPrimary) {
  std::size_t other = 0;
  for (std::size_t p : primaries()) {
    if (p != 0) other = p;
  }
  const std::string r = resource_on(other, "w");
  Proc watch({"watch", "--url", one_node(), r}, dir_);
  ASSERT_TRUE(eventually([&] { return watch.out().find("initial") != std::string::npos; }, 10s))
      << watch.err();
  ASSERT_EQ(lw({"acquire", r, "--ttl", "20s", "--owner", "w1"}, cluster_.seeds_url()).status, 0);
  ASSERT_EQ(lw({"release", r, "--owner", "w1"}, cluster_.seeds_url()).status, 0);
  EXPECT_TRUE(eventually(
      [&] {
        const std::string o = watch.out();
        return o.find("acquired exclusive w1") != std::string::npos &&
               o.find("released exclusive w1") != std::string::npos;
      },
      10s))
      << watch.out() << watch.err();
  EXPECT_EQ(watch.err().find("inspect failed"), std::string::npos) << watch.err();
  watch.signal(SIGINT);
  watch.wait(10s);
}

// Every subcommand on a resource whose slot is being moved to another primary (issue #14:
// -ASK was answered as "server refused"): with the keys still on the source, after MIGRATE
// moved them (the source answers -ASK), and after SETSLOT NODE (-MOVED). An acquire started
// while the slot is open (-TRYAGAIN for every block of several keys) waits it out and is
// granted once the move is over.
TEST_F(CliCluster, EverySubcommandDuringASlotMigration) {
  const auto ps = primaries();
  ASSERT_EQ(ps.size(), 3u);
  const std::string r = resource_on(ps[0], "mig");
  const std::string key = std::string("lockwire:{").append(r).append("}");
  const int slot = lockwire::loop::cluster::key_slot(key);
  const std::string url = one_node();
  ASSERT_EQ(lw({"acquire", r, "--ttl", "60s", "--owner", "alice"}, url).status, 0);
  SlotMigration m(cluster_, slot, ps[0], ps[1]);
  ASSERT_EQ(m.open(), "OK\nOK\n");
  EXPECT_EQ(lw({"renew", r, "--owner", "alice", "--ttl", "60s"}, url).status, 0);
  ASSERT_EQ(m.move_keys(), "OK\n");
  for (const std::string& u : {url, cluster_.seeds_url()}) {
    Result i = lw({"inspect", r}, u);
    EXPECT_EQ(i.status, 0) << i.err;
    EXPECT_NE(i.out.find("exclusive alice"), std::string::npos) << i.out << i.err;
    Result n = lw({"renew", r, "--owner", "alice", "--ttl", "60s"}, u);
    EXPECT_EQ(n.status, 0) << n.err;
  }
  Result busy = lw({"acquire", r, "--ttl", "5s", "--owner", "bob", "--wait", "200ms"}, url);
  EXPECT_NE(busy.status, 0) << busy.out;
  EXPECT_EQ(lw({"release", r, "--owner", "alice"}, url).status, 0);
  // An acquire that waits out the open slot, in the background.
  Proc waiter({"acquire", "--url", url, r, "--ttl", "20s", "--owner", "carol", "--wait", "30s"},
              dir_);
  std::this_thread::sleep_for(300ms);  // let it meet the open slot (it cannot succeed there)
  ASSERT_NE(m.finish().find("OK\nOK\n"), std::string::npos);
  EXPECT_EQ(waiter.wait(40s), 0) << waiter.err();
  EXPECT_EQ(cluster_.node(ps[1]).cli({"HEXISTS", key, "x:carol"}), "1\n");
  Result f = lw({"force-release", r}, url);
  EXPECT_EQ(f.status, 0) << f.err;
  EXPECT_NE(f.out.find("1"), std::string::npos) << f.out;
  Result run = lw({"run", r, "--", "sh", "-c", "echo $LOCKWIRE_FENCING_TOKEN"}, url);
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(cluster_.node(ps[1]).cli({"EXISTS", key}), "0\n");
}

}  // namespace
