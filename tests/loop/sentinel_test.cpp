// Sentinel discovery against real redis-servers in sentinel mode (7.0.15): the primary the
// sentinels name is the one commands reach, a dead first sentinel is skipped, an unknown master
// and a named replica fail in the sentinels' and the server's words, the sentinels and the data
// nodes take their own credentials, and a direct connection to a replica (no discovery) is
// unaffected. Each test starts its own small topology — a sentinel knows the master of its
// config at once, so nothing waits for sentinels to find each other; the failover itself is
// sentinel_failover_test.cpp (its own executable, so that ctest -j2 overlaps the two).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "lockwire/loop/connection.hpp"
#include "lockwire/loop/uv_loop.hpp"
#include "lockwire/resp/reply.hpp"
#include "loop_check.hpp"
#include "redis_server.hpp"
#include "tls_certs.hpp"

namespace lockwire::loop {
namespace {

using namespace std::chrono_literals;
using test::run_until;

// A sentinel monitoring 127.0.0.1:`port` as `name` (quorum 1), plus `extra` config lines.
std::unique_ptr<test::RedisServer> sentinel_for(std::uint16_t port, const std::string& name,
                                                const std::string& extra = {}) {
  test::RedisServer::Options o;
  o.config_text = "port %PORT%\nbind 127.0.0.1\nprotected-mode no\ndaemonize no\ndir %DIR%\n" +
                  extra + "sentinel monitor " + name + " 127.0.0.1 " + std::to_string(port) +
                  " 1\nsentinel down-after-milliseconds " + name + " 1000\n";
  o.args = {"--sentinel"};
  return std::make_unique<test::RedisServer>(std::move(o));
}

// Waits (bounded) until the replica's link to its primary is up.
bool run_until_synced(const test::RedisServer& replica) {
  for (int i = 0; i < 200; ++i) {
    if (replica.cli({"INFO", "replication"}).find("master_link_status:up") != std::string::npos) {
      return true;
    }
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

// A replica's first full sync waits repl-diskless-sync-delay (5 s by default) for more replicas.
const std::vector<std::string> kNoSyncDelay = {"--repl-diskless-sync-delay", "0"};

struct Result {
  int calls = 0;
  std::error_code ec;
};

std::string at(std::uint16_t port) {
  return "127.0.0.1:" + std::to_string(port);
}

ConnectionOptions from_url(const std::string& url) {
  ConnectionOptions o;
  std::string why;
  EXPECT_FALSE(parse_url(url, o, &why)) << url << ": " << why;
  o.reconnect.initial = 5ms;
  o.reconnect.max = 50ms;
  o.connect_timeout = 2s;
  return o;
}

std::string str(resp::Frame f) {
  const std::size_t v = resp::value_index(f);
  return v < f.size() ? std::string(f[v].value) : std::string();
}

// Runs one command to its reply: the first element's text for arrays, else the value.
std::string run(UvLoop& loop, Connection& c, std::initializer_list<std::string_view> args,
                std::error_code* ec_out = nullptr) {
  bool done = false;
  std::string out;
  c.command(args, [&](std::error_code ec, const Replies& r) {
    done = true;
    if (ec_out != nullptr) *ec_out = ec;
    if (r.size() == 0) return;
    resp::Frame f = r[0];
    const std::size_t v = resp::value_index(f);
    if (v < f.size() && f[v].type == resp::Type::array && f[v].size > 0) {
      out = std::string(f[resp::first_element(f, v)].value);
    } else {
      out = str(f);
    }
  });
  EXPECT_TRUE(run_until(loop, [&] { return done; }));
  return out;
}

TEST(Sentinel, CommandsReachThePrimaryTheSentinelsName) {
  test::RedisServer primary;
  auto s1 = sentinel_for(primary.port(), "lw");
  auto s2 = sentinel_for(primary.port(), "lw");
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  auto c = std::make_unique<Connection>(
      loop, from_url("redis-sentinel://" + at(s1->port()) + "," + at(s2->port()) + "#lw"));
  c->start();
  ASSERT_TRUE(run_until(loop, [&] { return c->state() == ConnectionState::ready; }))
      << c->last_error();
  EXPECT_EQ(c->server_address(), at(primary.port()));
  EXPECT_EQ(c->primary_epoch(), 1u);
  EXPECT_EQ(c->config_epoch(), 0u);  // no failover yet
  EXPECT_EQ(run(loop, *c, {"ROLE"}), "master");
  EXPECT_EQ(run(loop, *c, {"SET", "lw:k", "v"}), "OK");
  EXPECT_EQ(primary.cli({"GET", "lw:k"}), "v\n");
  // The link: a client of the first sentinel, subscribed to +switch-master (sentinels have no
  // PUBSUB command: CLIENT LIST says sub=1).
  EXPECT_NE(s1->cli({"CLIENT", "LIST"}).find(" sub=1 "), std::string::npos);
  EXPECT_EQ(s2->cli({"CLIENT", "LIST"}).find(" sub=1 "), std::string::npos);
  c.reset();
}

TEST(Sentinel, ADeadFirstSentinelIsSkipped) {
  test::RedisServer primary;
  auto s = sentinel_for(primary.port(), "lw");
  const std::uint16_t dead = test::free_loopback_port();  // nothing listens there
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  auto c = std::make_unique<Connection>(
      loop, from_url("redis-sentinel://" + at(dead) + "," + at(s->port()) + "/3#lw"));
  c->start();
  ASSERT_TRUE(run_until(loop, [&] { return c->state() == ConnectionState::ready; }))
      << c->last_error();
  EXPECT_EQ(c->server().port, primary.port());
  EXPECT_EQ(run(loop, *c, {"SET", "lw:db3", "v"}), "OK");  // the /db is the data node's
  EXPECT_EQ(primary.cli({"-n", "3", "GET", "lw:db3"}), "v\n");
  c.reset();
}

TEST(Sentinel, AnUnknownMasterFailsInTheSentinelsWords) {
  test::RedisServer primary;
  auto s = sentinel_for(primary.port(), "lw");
  const std::uint16_t dead = test::free_loopback_port();
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  auto c = std::make_unique<Connection>(
      loop, from_url("redis-sentinel://" + at(s->port()) + "," + at(dead) + "#nosuch"));
  std::vector<std::error_code> down;
  c->add_state_handler([&](ConnectionState st, std::error_code ec) {
    if (st == ConnectionState::disconnected) down.push_back(ec);
  });
  c->start();
  ASSERT_TRUE(run_until(loop, [&] { return !down.empty(); }));
  EXPECT_EQ(down[0], Errc::connect_failed);
  EXPECT_EQ(c->last_error(), "no sentinel knows master 'nosuch': " + at(s->port()) +
                                 " -ERR No such master with that name; " + at(dead) +
                                 " connect: connection refused");
  EXPECT_EQ(c->server_address(), "");
  c.reset();
}

TEST(Sentinel, AReplicaTheSentinelsNameIsNeverUsed) {
  test::RedisServer primary(kNoSyncDelay);
  test::RedisServer replica({"--replicaof", "127.0.0.1", std::to_string(primary.port())});
  ASSERT_TRUE(run_until_synced(replica));
  // A sentinel whose idea of the master is the replica (as a stale one would have).
  auto s = sentinel_for(replica.port(), "lw");
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  auto c =
      std::make_unique<Connection>(loop, from_url("redis-sentinel://" + at(s->port()) + "#lw"));
  int failed = 0;
  c->add_state_handler([&](ConnectionState st, std::error_code ec) {
    if (st == ConnectionState::disconnected && ec == Errc::connect_failed) ++failed;
    EXPECT_NE(st, ConnectionState::ready);
  });
  Result pending;
  c->command({"SET", "lw:k", "v"}, [&](std::error_code ec, const Replies&) { pending = {1, ec}; });
  c->start();
  ASSERT_TRUE(run_until(loop, [&] { return failed >= 2; }));  // refused, asked again, refused
  EXPECT_EQ(c->last_error(), at(replica.port()) + " ROLE: the server is a replica of " +
                                 at(primary.port()) + " (link connected), not the primary");
  EXPECT_EQ(pending.calls, 0);  // never written to the replica
  EXPECT_EQ(primary.cli({"EXISTS", "lw:k"}), "0\n");
  c.reset();
  EXPECT_EQ(pending.ec, Errc::closed);
}

TEST(Sentinel, SentinelsAndDataNodesTakeTheirOwnCredentials) {
  test::RedisServer primary({"--requirepass", "datapw"});
  auto s = sentinel_for(primary.port(), "lw", "requirepass sentpw\n");
  // The sentinel itself needs the data password to monitor the primary.
  ASSERT_EQ(
      s->cli({"-a", "sentpw", "--no-auth-warning", "SENTINEL", "SET", "lw", "auth-pass", "datapw"}),
      "OK\n");
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  auto c = std::make_unique<Connection>(
      loop, from_url("redis-sentinel://:datapw@" + at(s->port()) + "?sentinel_password=sentpw#lw"));
  c->start();
  ASSERT_TRUE(run_until(loop, [&] { return c->state() == ConnectionState::ready; }))
      << c->last_error();
  EXPECT_EQ(run(loop, *c, {"SET", "lw:k", "v"}), "OK");
  c.reset();

  // The URL's password alone is the data node's: the sentinel refuses HELLO without its own.
  c = std::make_unique<Connection>(loop,
                                   from_url("redis-sentinel://:datapw@" + at(s->port()) + "#lw"));
  bool down = false;
  c->add_state_handler([&](ConnectionState st, std::error_code) {
    down = down || st == ConnectionState::disconnected;
  });
  c->start();
  ASSERT_TRUE(run_until(loop, [&] { return down; }));
  EXPECT_EQ(c->last_error().rfind(
                "no sentinel knows master 'lw': " + at(s->port()) + " HELLO 3: NOAUTH", 0),
            0u)
      << c->last_error();
  c.reset();
}

TEST(Sentinel, RedissSentinelIsTlsToTheSentinelAndToThePrimary) {
  test::Certs certs;
  ASSERT_TRUE(certs.ok) << "openssl CLI failed";
  const std::vector<std::string> tls = {
      "--tls-cert-file",    certs("server.crt"), "--tls-key-file",     certs("server.key"),
      "--tls-ca-cert-file", certs("ca.crt"),     "--tls-auth-clients", "no"};
  // Each keeps its plaintext port too (the test harness pings it); only the TLS ports are used.
  std::vector<std::string> pargs = tls;
  const std::uint16_t primary_tls = test::free_loopback_port();
  pargs.insert(pargs.end(), {"--tls-port", std::to_string(primary_tls)});
  test::RedisServer primary(pargs);
  std::vector<std::string> sargs = tls;
  const std::uint16_t sentinel_tls = test::free_loopback_port();
  sargs.insert(sargs.end(),
               {"--tls-port", std::to_string(sentinel_tls), "--tls-replication", "yes"});
  test::RedisServer::Options so;
  so.config_text =
      "port %PORT%\nbind 127.0.0.1\nprotected-mode no\ndaemonize no\ndir %DIR%\n"
      "sentinel monitor lw 127.0.0.1 " +
      std::to_string(primary_tls) + " 1\n";
  so.args = {"--sentinel"};
  so.args.insert(so.args.end(), sargs.begin(), sargs.end());
  test::RedisServer sentinel(std::move(so));
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  auto c = std::make_unique<Connection>(loop, from_url("rediss-sentinel://" + at(sentinel_tls) +
                                                       "?ca_file=" + certs("ca.crt") + "#lw"));
  c->start();
  ASSERT_TRUE(run_until(loop, [&] { return c->state() == ConnectionState::ready; }))
      << c->last_error();
  EXPECT_EQ(c->server_address(), at(primary_tls));
  EXPECT_TRUE(c->server().tls);
  EXPECT_EQ(run(loop, *c, {"SET", "lw:k", "v"}), "OK");
  EXPECT_EQ(primary.cli({"GET", "lw:k"}), "v\n");
  c.reset();
  // Plaintext to the sentinel's TLS port: that sentinel is reported, bounded by connect_timeout.
  ConnectionOptions o = from_url("redis-sentinel://" + at(sentinel_tls) + "#lw");
  o.connect_timeout = 300ms;
  c = std::make_unique<Connection>(loop, o);
  bool down = false;
  c->add_state_handler([&](ConnectionState st, std::error_code) {
    down = down || st == ConnectionState::disconnected;
  });
  c->start();
  ASSERT_TRUE(run_until(loop, [&] { return down; }));
  EXPECT_EQ(c->last_error().rfind("no sentinel knows master 'lw': " + at(sentinel_tls) + " ", 0),
            0u)
      << c->last_error();
  c.reset();
}

TEST(Sentinel, ADirectConnectionToAReplicaIsUnaffected) {
  test::RedisServer primary(kNoSyncDelay);
  test::RedisServer replica({"--replicaof", "127.0.0.1", std::to_string(primary.port())});
  ASSERT_TRUE(run_until_synced(replica));
  ASSERT_EQ(primary.cli({"SET", "lw:k", "v"}), "OK\n");
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  auto c = std::make_unique<Connection>(loop, from_url(replica.url()));
  c->start();
  ASSERT_TRUE(run_until(loop, [&] { return c->state() == ConnectionState::ready; }))
      << c->last_error();
  EXPECT_EQ(run(loop, *c, {"ROLE"}), "slave");  // no ROLE check without discovery
  ASSERT_TRUE(run_until(loop, [&] { return run(loop, *c, {"GET", "lw:k"}) == "v"; }));
  std::error_code ec;
  EXPECT_EQ(run(loop, *c, {"SET", "lw:k", "w"}, &ec).rfind("READONLY", 0), 0u);
  EXPECT_EQ(ec, Errc::server_error);
  EXPECT_EQ(c->state(), ConnectionState::ready);  // a -READONLY is just a reply here
  EXPECT_EQ(c->server_address(), at(replica.port()));
  EXPECT_EQ(c->primary_epoch(), 1u);
  EXPECT_FALSE(c->config_epoch());
  c.reset();
}

}  // namespace
}  // namespace lockwire::loop
