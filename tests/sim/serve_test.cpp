// `lockwire-sim serve` as an event loop, each case run against a private redis-server 7.0.15
// too (the reference): commands of different connections are applied in the order they
// arrived, a subscriber that never reads is dropped at its output-buffer limit, maxclients is
// enforced, and 10,000 idle connections do not slow anyone's PING.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "differential.hpp"
#include "redis_server.hpp"
#include "serve_process.hpp"

namespace lockwire::sim::test {
namespace {

using namespace std::chrono_literals;

// A server under test: redis-server or serve mode, both with DEBUG enabled (DEBUG SLEEP holds
// the event loop so that later input from several connections is ready at once).
struct Target {
  std::string name;
  std::uint16_t port = 0;
  std::shared_ptr<void> keep;
};

std::vector<Target> targets(std::vector<std::string> extra = {}) {
  std::vector<Target> out;
  std::vector<std::string> real_args = {"--enable-debug-command", "yes"};
  real_args.insert(real_args.end(), extra.begin(), extra.end());
  auto real = std::make_shared<lockwire::test::RedisServer>(real_args);
  out.push_back({"redis-server", real->port(), real});
#ifdef LOCKWIRE_SIM_BIN
  std::vector<std::string> serve_args = {"--enable-debug-command"};
  serve_args.insert(serve_args.end(), extra.begin(), extra.end());
  auto serve = std::make_shared<ServeProcess>(serve_args);
  if (serve->ok()) out.push_back({"serve", serve->port(), serve});
#endif
  return out;
}

std::string call(TcpConn& c, const std::vector<std::string>& args) {
  c.send(encode_command(args));
  auto f = c.read_frames(1, false, 5000);
  return f.empty() ? "<none>" : f[0];
}

TEST(ServeEventLoop, CommandsApplyInArrivalOrderAcrossConnections) {
  for (auto& t : targets()) {
    SCOPED_TRACE(t.name);
    TcpConn older(t.port), newer(t.port), sleeper(t.port), check(t.port);
    ASSERT_EQ(call(older, {"PING"}), "+PONG\r\n");
    ASSERT_EQ(call(newer, {"PING"}), "+PONG\r\n");
    ASSERT_EQ(call(sleeper, {"PING"}), "+PONG\r\n");
    int older_last = 0;
    for (int round = 0; round < 10; ++round) {
      // The server sleeps; the newer connection's SET arrives, then the older one's: once it
      // wakes up both are readable, and the one that came first must be applied first.
      sleeper.send(encode_command({"DEBUG", "SLEEP", "0.1"}));
      std::this_thread::sleep_for(20ms);
      newer.send(encode_command({"SET", "k", "newer"}));
      std::this_thread::sleep_for(10ms);
      older.send(encode_command({"SET", "k", "older"}));
      ASSERT_EQ(sleeper.read_frames(1, false, 5000).size(), 1u);
      ASSERT_EQ(newer.read_frames(1, false, 5000), std::vector<std::string>{"+OK\r\n"});
      ASSERT_EQ(older.read_frames(1, false, 5000), std::vector<std::string>{"+OK\r\n"});
      if (call(check, {"GET", "k"}) == "$5\r\nolder\r\n") ++older_last;
    }
    EXPECT_EQ(older_last, 10);
  }
}

TEST(ServeEventLoop, PublishAfterSubscriberLeftReachesNobody) {
  for (auto& t : targets()) {
    SCOPED_TRACE(t.name);
    TcpConn sleeper(t.port), publisher(t.port);
    int zero = 0;
    for (int round = 0; round < 10; ++round) {
      auto sub = std::make_unique<TcpConn>(t.port);
      sub->send(encode_command({"SUBSCRIBE", "ch"}));
      ASSERT_EQ(sub->read_frames(1, false, 5000).size(), 1u);
      sleeper.send(encode_command({"DEBUG", "SLEEP", "0.1"}));
      std::this_thread::sleep_for(20ms);
      sub.reset();  // the subscriber goes (its FIN is queued first)...
      std::this_thread::sleep_for(10ms);
      publisher.send(encode_command({"PUBLISH", "ch", "m"}));  // ...then the PUBLISH
      ASSERT_EQ(sleeper.read_frames(1, false, 5000).size(), 1u);
      const auto f = publisher.read_frames(1, false, 5000);
      ASSERT_EQ(f.size(), 1u);
      if (f[0] == ":0\r\n") ++zero;
    }
    EXPECT_EQ(zero, 10);
  }
}

// A raw socket with a small receive buffer that never reads.
int stalled_subscriber(std::uint16_t port, const std::string& channel) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int small = 64 * 1024;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return -1;
  const std::string cmd = encode_command({"SUBSCRIBE", channel});
  (void)!::send(fd, cmd.data(), cmd.size(), MSG_NOSIGNAL);
  return fd;
}

TEST(ServeEventLoop, SubscriberThatNeverReadsIsDisconnectedAtThePubsubLimit) {
  for (auto& t : targets()) {
    SCOPED_TRACE(t.name);
    const int sub = stalled_subscriber(t.port, "flood");
    ASSERT_GE(sub, 0);
    TcpConn pub(t.port);
    std::this_thread::sleep_for(50ms);
    const std::string payload(1024 * 1024, 'x');
    int published = 0;
    bool dropped = false;
    for (; published < 120 && !dropped; ++published)
      dropped = call(pub, {"PUBLISH", "flood", payload}) == ":0\r\n";
    // The pubsub class' hard limit is 32 MB (plus what the kernel buffers hold).
    EXPECT_TRUE(dropped) << "published " << published << " MB";
    EXPECT_GT(published, 20);
    EXPECT_LT(published, 80);
    ::close(sub);
    // A subscriber that reads is not affected; the server still serves.
    EXPECT_EQ(call(pub, {"PING"}), "+PONG\r\n");
  }
}

TEST(ServeEventLoop, ClientOutputBufferLimitIsConfigurable) {
  for (auto& t : targets()) {
    SCOPED_TRACE(t.name);
    TcpConn admin(t.port);
    EXPECT_EQ(call(admin, {"CONFIG", "SET", "client-output-buffer-limit", "pubsub 1mb 0 0"}),
              "+OK\r\n");
    const int sub = stalled_subscriber(t.port, "c");
    ASSERT_GE(sub, 0);
    std::this_thread::sleep_for(50ms);
    const std::string payload(256 * 1024, 'x');
    int published = 0;
    bool dropped = false;
    for (; published < 400 && !dropped; ++published)
      dropped = call(admin, {"PUBLISH", "c", payload}) == ":0\r\n";
    EXPECT_TRUE(dropped);
    ::close(sub);
  }
}

TEST(ServeEventLoop, MaxclientsRefusesWithRedisError) {
  for (auto& t : targets()) {
    SCOPED_TRACE(t.name);
    TcpConn admin(t.port);
    EXPECT_EQ(call(admin, {"CONFIG", "SET", "maxclients", "4"}), "+OK\r\n");
    std::vector<std::unique_ptr<TcpConn>> conns;
    for (int i = 0; i < 3; ++i) {
      conns.push_back(std::make_unique<TcpConn>(t.port));
      EXPECT_EQ(call(*conns.back(), {"PING"}), "+PONG\r\n");
    }
    TcpConn refused(t.port);
    const auto f = refused.read_frames(1, true, 5000);
    ASSERT_GE(f.size(), 1u);
    EXPECT_EQ(f[0], "-ERR max number of clients reached\r\n");
    conns.clear();
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(call(admin, {"CONFIG", "SET", "maxclients", "10000"}), "+OK\r\n");
    TcpConn again(t.port);
    EXPECT_EQ(call(again, {"PING"}), "+PONG\r\n");
  }
}

// Each PING's round trip with 9,999 other connections open and idle (maxclients 10000 counts
// the pinging one): an event loop that touches every connection per turn takes milliseconds.
TEST(ServeEventLoop, TenThousandIdleConnectionsKeepPingFast) {
#ifdef LOCKWIRE_SIM_BIN
  rlimit rl{};
  ::getrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur < 10100 && rl.rlim_max >= 10100) {
    rl.rlim_cur = 10100;
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }
  ::getrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur < 10100) GTEST_SKIP() << "needs 10,100 descriptors (RLIMIT_NOFILE " << rl.rlim_cur << ")";
  ServeProcess serve;
  ASSERT_TRUE(serve.ok());
  std::vector<int> idle;
  for (int i = 0; i < 9999; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0) << "descriptor limit at " << i;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(serve.port());
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    idle.push_back(fd);
  }
  TcpConn c(serve.port());
  // Wait until the server has accepted them all.
  for (int i = 0; i < 200; ++i) {
    const std::string info = call(c, {"INFO", "clients"});
    if (info.find("connected_clients:10000\r\n") != std::string::npos) break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_NE(call(c, {"INFO", "clients"}).find("connected_clients:10000\r\n"), std::string::npos);
  std::vector<double> us;
  for (int i = 0; i < 300; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(call(c, {"PING"}), "+PONG\r\n");
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                     .count());
  }
  std::sort(us.begin(), us.end());
  const double median = us[us.size() / 2];
  EXPECT_LT(median, 1000.0) << "median PING " << median << " us";
  for (int fd : idle) ::close(fd);
#else
  GTEST_SKIP() << "built without lockwire-sim";
#endif
}

}  // namespace
}  // namespace lockwire::sim::test
