// SimRedis as a node: fault hooks, persistence across restarts, replication with lag and
// failover, CLIENT PAUSE, ACL users, maxmemory, half-open connections. Raw RESP bytes so each reply
// is visible.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "lockwire/sim/sim_redis.hpp"
#include "lockwire/sim/world.hpp"
#include "raw_client.hpp"

namespace lockwire::sim {
namespace {

using test::enc;
using test::Raw;

struct Fixture : ::testing::Test {
  World w{11};
  Node& srv = w.add_node("redis");
  Node& cli = w.add_node("client");
};

TEST_F(Fixture, LoadingBusyErrors) {
  SimRedis r(w, srv);
  Raw c(w, cli, r.endpoint());
  r.set_loading(true);
  EXPECT_EQ(c.call({"GET", "k"}), "-LOADING Redis is loading the dataset in memory\r\n");
  EXPECT_EQ(c.call({"PING"}), "-LOADING Redis is loading the dataset in memory\r\n");
  EXPECT_EQ(c.call({"ECHO", "x"}), "$1\r\nx\r\n");  // allowed while loading, as in Redis
  r.set_loading(false);
  r.set_busy(true);
  EXPECT_EQ(c.call({"SET", "k", "v"}),
            "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN "
            "NOSAVE.\r\n");
  r.set_busy(false);
  EXPECT_EQ(c.call({"SET", "k", "v"}), "+OK\r\n");
}

TEST_F(Fixture, DebugSleepStallsTheServer) {
  SimRedisOptions o;
  o.model.enable_debug_command = true;
  SimRedis r(w, srv, o);
  Raw a(w, cli, r.endpoint());
  Raw b(w, cli, r.endpoint());
  const auto t0 = w.now();
  a.s->write(enc({"DEBUG", "SLEEP", "0.2"}));
  w.run_for(std::chrono::milliseconds(1));
  EXPECT_EQ(b.call({"PING"}), "+PONG\r\n");  // answered only after the sleep
  EXPECT_GE(w.now() - t0, std::chrono::milliseconds(200));
  ASSERT_EQ(a.frames.size(), 1u);
  EXPECT_EQ(a.frames[0], "+OK\r\n");
  EXPECT_EQ(a.call({"DEBUG", "NOPE", "x"}),
            "-ERR unknown subcommand or wrong number of arguments for 'NOPE'. Try DEBUG HELP.\r\n");
}

TEST_F(Fixture, RestartKeepsWhatPersistenceKeeps) {
  SimRedis r(w, srv);
  {
    Raw c(w, cli, r.endpoint());
    EXPECT_EQ(c.call({"SET", "a", "1"}), "+OK\r\n");
    r.save();
    EXPECT_EQ(c.call({"SET", "b", "2"}), "+OK\r\n");
    r.kill();
    w.run_for(std::chrono::milliseconds(10));
    EXPECT_TRUE(c.closed);
  }
  {
    Raw refused(w, cli, r.endpoint());  // the process is dead: connects are refused
    EXPECT_FALSE(refused.connected);
  }
  r.restart(Persistence::last_save);
  {
    Raw c(w, cli, r.endpoint());
    EXPECT_EQ(c.call({"GET", "a"}), "$1\r\n1\r\n");
    EXPECT_EQ(c.call({"GET", "b"}), "$-1\r\n");
  }
  r.restart(Persistence::none);
  if (std::getenv("SIMDBG")) std::fputs(w.trace().timeline().c_str(), stdout);
  Raw c(w, cli, r.endpoint());
  EXPECT_EQ(c.call({"DBSIZE"}), ":0\r\n");
}

TEST_F(Fixture, ReplicationLagReadonlyAndFailover) {
  Node& rn = w.add_node("replica");
  SimRedis primary(w, srv);
  SimRedis replica(w, rn);
  primary.add_replica(replica, std::chrono::milliseconds(50));
  Raw p(w, cli, primary.endpoint());
  Raw q(w, cli, replica.endpoint());
  EXPECT_EQ(p.call({"SET", "k", "v1"}), "+OK\r\n");
  EXPECT_EQ(q.call({"GET", "k"}), "$-1\r\n");  // not replicated yet
  EXPECT_EQ(q.call({"SET", "x", "y"}),
            "-READONLY You can't write against a read only replica.\r\n");
  const auto t0 = w.now();
  EXPECT_EQ(p.call({"WAIT", "1", "1000"}), ":1\r\n");      // blocks until the replica acknowledges
  EXPECT_GE(w.now() - t0, std::chrono::milliseconds(45));  // lag counted from the SET
  EXPECT_LT(w.now() - t0, std::chrono::milliseconds(100));
  EXPECT_EQ(q.call({"GET", "k"}), "$2\r\nv1\r\n");
  EXPECT_EQ(p.call({"WAIT", "1", "0"}), ":1\r\n");
  EXPECT_EQ(p.call({"WAIT", "2", "30"}), ":1\r\n");  // only one replica: times out after 30 ms
  EXPECT_EQ(p.call({"WAIT", "x", "0"}), "-ERR value is not an integer or out of range\r\n");
  EXPECT_EQ(q.call({"WAIT", "1", "0"}).substr(0, 44),
            "-ERR WAIT cannot be used with replica instan");
  EXPECT_EQ(test::shape(q.call({"ROLE"})), "*5[$?,$?,:?,$?,:?,]");
  EXPECT_EQ(test::shape(p.call({"ROLE"})), "*3[$?,:?,*1[*3[$?,$?,$?,],],]");
  // A lease written with a TTL expires on the replica through the primary's DEL.
  EXPECT_EQ(p.call({"SET", "lease", "me", "PX", "100"}), "+OK\r\n");
  w.run_for(std::chrono::milliseconds(400));
  EXPECT_EQ(q.call({"EXISTS", "lease"}), ":0\r\n");
  // Failover: the replica is promoted; the old primary still accepts writes (split brain).
  EXPECT_EQ(p.call({"SET", "k", "lost"}), "+OK\r\n");
  replica.promote();
  EXPECT_EQ(q.call({"SET", "k", "v2"}), "+OK\r\n");
  w.run_for(std::chrono::milliseconds(100));
  EXPECT_EQ(q.call({"GET", "k"}), "$2\r\nv2\r\n");
  EXPECT_EQ(p.call({"GET", "k"}), "$4\r\nlost\r\n");
}

TEST_F(Fixture, ClientPauseDelaysThenRuns) {
  SimRedis r(w, srv);
  Raw a(w, cli, r.endpoint());
  Raw b(w, cli, r.endpoint());
  EXPECT_EQ(a.call({"CLIENT", "PAUSE", "300", "WRITE"}), "+OK\r\n");
  EXPECT_EQ(b.call({"GET", "k"}), "$-1\r\n");  // reads still run
  const auto t0 = w.now();
  b.s->write(enc({"SET", "k", "v"}));
  w.run_for(std::chrono::milliseconds(100));
  EXPECT_EQ(b.frames.size(), 1u);  // held for the pause
  w.run_until([&] { return b.frames.size() == 2; }, w.now() + std::chrono::seconds(2));
  ASSERT_EQ(b.frames.size(), 2u);
  EXPECT_EQ(b.frames[1], "+OK\r\n");
  EXPECT_GE(w.now() - t0, std::chrono::milliseconds(250));
}

TEST_F(Fixture, DropConnectionsAndHalfOpen) {
  SimRedis r(w, srv);
  Raw a(w, cli, r.endpoint());
  EXPECT_EQ(a.call({"PING"}), "+PONG\r\n");
  r.drop_connections();
  w.run_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(a.closed);
  Raw b(w, cli, r.endpoint());
  EXPECT_EQ(b.call({"PING"}), "+PONG\r\n");
  w.net().half_open(w.net().connections_of(cli).back());
  EXPECT_EQ(b.call({"PING"}), "<none>");  // nothing arrives, nobody is told
  EXPECT_FALSE(b.closed);
}

TEST(ModelLimits, HugeArgumentCountIsBounded) {
  std::map<RedisModel::ClientId, bool> closed;
  RedisModel::Hooks h;
  h.write = [](RedisModel::ClientId, std::string_view) {};
  h.close = [&](RedisModel::ClientId id) { closed[id] = true; };
  h.wall_us = [] { return std::int64_t{1767225600000000}; };
  RedisModelOptions o;
  o.max_query_bytes = 1 << 20;
  RedisModel m(h, Rng(1), o);
  const auto id = m.add_client();
  m.feed(id, "*2000000000\r\n");
  std::string tiny;
  for (int i = 0; i < 1000; ++i) tiny += "$0\r\n\r\n";
  for (int i = 0; i < 100 && !closed[id]; ++i) m.feed(id, tiny);
  EXPECT_TRUE(closed[id]);  // closed at ~1 MiB of argument memory, not after 2e9 arguments
}

TEST_F(Fixture, TrackingPushOnActiveExpiry) {
  SimRedis r(w, srv);
  Raw c(w, cli, r.endpoint());
  c.call({"HELLO", "3"});
  EXPECT_EQ(c.call({"CLIENT", "TRACKING", "ON"}), "+OK\r\n");
  EXPECT_EQ(c.call({"SET", "lease", "x", "PX", "50"}), "+OK\r\n");
  EXPECT_EQ(c.call({"GET", "lease"}), "$1\r\nx\r\n");
  const std::size_t before = c.frames.size();
  w.run_for(std::chrono::milliseconds(200));  // no access: only active expiry can notice
  ASSERT_EQ(c.frames.size(), before + 1);
  EXPECT_EQ(c.frames.back(), ">2\r\n$10\r\ninvalidate\r\n*1\r\n$5\r\nlease\r\n");
}

// --- server conditions for scenarios (issue #13) ---

TEST_F(Fixture, AclUserFromOptionsAndAtRuntime) {
  SimRedisOptions o;
  o.model.users = {{"app", "on >pw ~lockwire:* resetchannels +@all -client|tracking -@dangerous"}};
  SimRedis r(w, srv, o);
  Raw c(w, cli, r.endpoint());
  EXPECT_EQ(c.call({"AUTH", "app", "pw"}), "+OK\r\n");
  EXPECT_EQ(c.call({"ACL", "WHOAMI"}), "$3\r\napp\r\n");
  EXPECT_EQ(c.call({"CLIENT", "TRACKING", "ON"}),
            "-NOPERM this user has no permissions to run the 'client|tracking' command\r\n");
  EXPECT_EQ(c.call({"GET", "other"}),
            "-NOPERM this user has no permissions to access one of the keys used as arguments\r\n");
  EXPECT_EQ(c.call({"SUBSCRIBE", "ch"}),
            "-NOPERM this user has no permissions to access one of the channels used as "
            "arguments\r\n");
  EXPECT_EQ(c.call({"CLIENT", "KILL", "ID", "1"}),
            "-NOPERM this user has no permissions to run the 'client|kill' command\r\n");
  EXPECT_EQ(c.call({"SET", "lockwire:x", "1"}), "+OK\r\n");
  // An operator takes SET away while the client is connected.
  EXPECT_EQ(r.acl_setuser("app", "-set"), "");
  EXPECT_EQ(c.call({"SET", "lockwire:x", "2"}),
            "-NOPERM this user has no permissions to run the 'set' command\r\n");
  EXPECT_EQ(r.acl_setuser("app", "+nosuch"),
            "Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL");
  // Bad rules for a start-up user are a scenario bug.
  SimRedisOptions bad;
  bad.port = 6380;
  bad.model.users = {{"x", "on +nosuch"}};
  EXPECT_THROW(SimRedis(w, srv, bad), std::invalid_argument);
}

TEST_F(Fixture, MaxmemoryNoevictionAndLruEviction) {
  SimRedisOptions o;
  o.model.maxmemory = 1;  // far below the model's start-up memory: always over
  SimRedis r(w, srv, o);
  Raw c(w, cli, r.endpoint());
  EXPECT_EQ(c.call({"SET", "k", "v"}),
            "-OOM command not allowed when used memory > 'maxmemory'.\r\n");
  EXPECT_EQ(c.call({"GET", "k"}), "$-1\r\n");
  EXPECT_EQ(c.call({"DEL", "k"}), ":0\r\n");
  r.set_maxmemory(0);
  for (const char* k : {"a", "b", "c"}) {
    EXPECT_EQ(c.call({"SET", k, "v"}), "+OK\r\n");
    w.run_for(std::chrono::milliseconds(5));
  }
  Raw t(w, cli, r.endpoint());  // a tracking client that read b
  t.call({"HELLO", "3"});
  t.call({"CLIENT", "TRACKING", "ON"});
  EXPECT_EQ(t.call({"GET", "b"}), "$1\r\nv\r\n");
  w.run_for(std::chrono::milliseconds(5));
  EXPECT_EQ(c.call({"GET", "a"}), "$1\r\nv\r\n");  // a is now more recent than c
  w.run_for(std::chrono::milliseconds(5));
  EXPECT_EQ(c.call({"GET", "b"}), "$1\r\nv\r\n");  // and b the most recent
  // One byte under the current use: exactly one key goes, the least recently used (c).
  r.set_maxmemory(r.model().used_memory() - 1, MaxmemoryPolicy::allkeys_lru);
  EXPECT_EQ(r.model().evicted_keys(), 1u);
  EXPECT_FALSE(r.model().exists("c"));
  EXPECT_TRUE(r.model().exists("a"));
  EXPECT_TRUE(r.model().exists("b"));
  // A new key takes the use over the limit again; the next command makes room by evicting b,
  // now the least recently used, and b's reader is told as for a DEL.
  const std::size_t before = t.frames.size();
  w.run_for(std::chrono::milliseconds(5));
  EXPECT_EQ(c.call({"GET", "a"}), "$1\r\nv\r\n");
  EXPECT_EQ(c.call({"SET", "d", "v"}), "+OK\r\n");
  EXPECT_TRUE(r.model().exists("b"));
  EXPECT_EQ(c.call({"PING"}), "+PONG\r\n");
  w.run_for(std::chrono::milliseconds(1));
  EXPECT_FALSE(r.model().exists("b"));
  ASSERT_EQ(t.frames.size(), before + 1);
  EXPECT_EQ(t.frames.back(), ">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nb\r\n");
  EXPECT_NE(w.trace().timeline().find("evicted"), std::string::npos);
}

TEST_F(Fixture, PauseWritesFromTheScenario) {
  SimRedis r(w, srv);
  Raw a(w, cli, r.endpoint());
  Raw b(w, cli, r.endpoint());
  r.pause_clients(std::chrono::milliseconds(300), PauseMode::write);
  EXPECT_EQ(a.call({"GET", "k"}), "$-1\r\n");
  b.s->write(enc({"SET", "k", "b"}));
  w.run_for(std::chrono::milliseconds(1));
  a.s->write(enc({"SET", "k", "a"}));
  w.run_for(std::chrono::milliseconds(100));
  EXPECT_EQ(b.frames.size(), 0u);  // both held
  EXPECT_EQ(a.frames.size(), 1u);
  r.unpause_clients();  // released at once, in the order they were held
  w.run_for(std::chrono::milliseconds(1));
  ASSERT_EQ(b.frames.size(), 1u);
  EXPECT_EQ(a.call({"GET", "k"}), "$1\r\na\r\n");
  // ALL holds reads too, until the pause ends (at the next cron after it).
  r.pause_clients(std::chrono::milliseconds(200), PauseMode::all);
  const auto t0 = w.now();
  EXPECT_EQ(b.call({"GET", "k"}), "$1\r\na\r\n");
  EXPECT_GE(w.now() - t0, std::chrono::milliseconds(200));
  EXPECT_LE(w.now() - t0, std::chrono::milliseconds(310));
}

TEST_F(Fixture, RefusedExecAbortsTheTransaction) {
  SimRedis r(w, srv);
  Raw c(w, cli, r.endpoint());
  EXPECT_EQ(c.call({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(c.call({"SET", "k", "v"}), "+QUEUED\r\n");
  r.model().set_replica(true, "primary", 6379);  // demoted between the queuing and EXEC
  EXPECT_EQ(c.call({"EXEC"}),
            "-EXECABORT Transaction discarded because of: READONLY You can't write against a "
            "read only replica.\r\n");
  r.model().set_replica(false);
  EXPECT_EQ(c.call({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(c.call({"GET", "k"}), "+QUEUED\r\n");
  r.set_busy(true);
  EXPECT_EQ(c.call({"EXEC"}),
            "-EXECABORT Transaction discarded because of: BUSY Redis is busy running a script. "
            "You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n");
  r.set_busy(false);
  EXPECT_EQ(c.call({"EXEC"}), "-ERR EXEC without MULTI\r\n");
}

// Blocking commands on the virtual clock: a BLPOP with a timeout answers a null array exactly at
// its deadline (SimRedis arms the model's next deadline), waiters are served in the order they
// blocked, and a BLMOVE's destination wakes whoever waits on it.
TEST_F(Fixture, BlockingListCommandsOnTheVirtualClock) {
  SimRedis r(w, srv);
  Raw a(w, cli, r.endpoint());
  Raw b(w, cli, r.endpoint());
  Raw c(w, cli, r.endpoint());
  Raw d(w, cli, r.endpoint());
  const auto t0 = w.now();
  a.s->write(enc({"BLPOP", "k", "0.25"}));
  w.run_for(std::chrono::milliseconds(249));
  EXPECT_TRUE(a.frames.empty());
  w.run_for(std::chrono::milliseconds(5));
  ASSERT_EQ(a.frames.size(), 1u);
  EXPECT_EQ(a.frames[0], "*-1\r\n");
  EXPECT_LT(w.now() - t0, std::chrono::milliseconds(260));
  // FIFO: a then b block on q; c's BLMOVE waits on src; d pushes.
  a.frames.clear();
  a.s->write(enc({"BLPOP", "q", "0"}));
  w.run_for(std::chrono::milliseconds(1));
  b.s->write(enc({"BLPOP", "q", "0"}));
  w.run_for(std::chrono::milliseconds(1));
  c.s->write(enc({"BLMOVE", "src", "q", "LEFT", "RIGHT", "0"}));
  w.run_for(std::chrono::milliseconds(1));
  EXPECT_EQ(d.call({"RPUSH", "src", "moved"}), ":1\r\n");
  w.run_for(std::chrono::milliseconds(1));
  ASSERT_EQ(c.frames.size(), 1u);
  EXPECT_EQ(c.frames[0], "$5\r\nmoved\r\n");
  ASSERT_EQ(a.frames.size(), 1u);  // the first waiter on q got the moved element
  EXPECT_EQ(a.frames[0], "*2\r\n$1\r\nq\r\n$5\r\nmoved\r\n");
  EXPECT_TRUE(b.frames.empty());
  EXPECT_EQ(d.call({"RPUSH", "q", "x", "y"}), ":2\r\n");
  w.run_for(std::chrono::milliseconds(1));
  ASSERT_EQ(b.frames.size(), 1u);
  EXPECT_EQ(b.frames[0], "*2\r\n$1\r\nq\r\n$1\r\nx\r\n");
  EXPECT_EQ(d.call({"LRANGE", "q", "0", "-1"}), "*1\r\n$1\r\ny\r\n");
  EXPECT_EQ(d.call({"EXISTS", "src"}), ":0\r\n");
}

}  // namespace
}  // namespace lockwire::sim
