// UvLoop against the real kernel and a real redis-server: timers, posting, submission from other
// threads, TCP/Unix streams, gathered writes, failures. Every test ends with the loop empty
// (test::EmptyLoopAtExit; a test whose point is that run() returns checks empty() itself).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "lockwire/loop/uv_loop.hpp"
#include "loop_check.hpp"
#include "redis_server.hpp"

namespace lockwire::loop {
namespace {

using namespace std::chrono_literals;

struct Recorder : StreamHandler {
  std::vector<std::error_code> connected;
  std::string data;
  std::vector<std::error_code> closed;
  std::function<void()> on_conn;
  std::function<void()> on_bytes;
  void on_connected(std::error_code ec) override {
    connected.push_back(ec);
    if (on_conn) on_conn();
  }
  void on_data(std::string_view b) override {
    data.append(b);
    if (on_bytes) on_bytes();
  }
  void on_closed(std::error_code ec) override { closed.push_back(ec); }
};

// A listening socket that never answers (for timeouts).
struct SilentListener {
  int fd = -1;
  std::uint16_t port = 0;
  explicit SilentListener(bool listening = true) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        (listening && ::listen(fd, 16) != 0) ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      throw std::runtime_error("listener");
    }
    port = ntohs(a.sin_port);
  }
  ~SilentListener() { ::close(fd); }
};

TEST(UvLoop, TimersFireInDeadlineOrderAndTheLoopEnds) {
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  std::vector<int> order;
  auto t20 = loop.make_timer([&] { order.push_back(20); });
  auto t5 = loop.make_timer([&] { order.push_back(5); });
  auto t10 = loop.make_timer([&] { order.push_back(10); });
  const MonoTime start = loop.now();
  t20->start(20ms);
  t5->start(5ms);
  t10->start(10ms);
  EXPECT_TRUE(t5->active());
  loop.run();
  EXPECT_EQ(order, (std::vector<int>{5, 10, 20}));
  EXPECT_GE(loop.now() - start, Nanos(20ms));  // never early
  EXPECT_FALSE(t5->active());
}

TEST(UvLoop, RepeatingTimerMayDestroyItselfInsideItsCallback) {
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  int fires = 0;
  std::unique_ptr<Timer> t;
  t = loop.make_timer([&] {
    if (++fires == 3) t.reset();
  });
  t->start(1ms, 1ms);
  loop.run();
  EXPECT_EQ(fires, 3);
  EXPECT_TRUE(loop.empty());
}

TEST(UvLoop, StoppedOrDestroyedTimersNeverFire) {
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  int fired = 0;
  auto a = loop.make_timer([&] { ++fired; });
  auto b = loop.make_timer([&] { ++fired; });
  auto c = loop.make_timer([&] { ++fired; });
  a->start(1ms);
  b->start(1ms);
  c->start(2ms);
  a->stop();
  b.reset();
  loop.run();
  EXPECT_EQ(fired, 1);
}

TEST(UvLoop, PostRunsLaterInPostingOrder) {
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  std::vector<int> order;
  loop.post([&] {
    order.push_back(1);
    loop.post([&] { order.push_back(3); });
    order.push_back(2);
  });
  loop.post([&] { order.push_back(10); });
  EXPECT_TRUE(order.empty());  // never inside post()
  loop.run();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 10, 3}));
  EXPECT_TRUE(loop.empty());
}

TEST(UvLoop, SubmitFromOtherThreadsRunsEverythingOnTheLoopThread) {
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  loop.keep_alive(true);
  constexpr int kThreads = 4, kEach = 500;
  int count = 0;  // touched only on the loop thread
  const auto loop_thread = std::this_thread::get_id();
  bool wrong_thread = false;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      for (int j = 0; j < kEach; ++j) {
        loop.submit([&] {
          if (std::this_thread::get_id() != loop_thread) wrong_thread = true;
          if (++count == kThreads * kEach) loop.keep_alive(false);
        });
      }
    });
  }
  loop.run();
  for (auto& t : threads) t.join();
  EXPECT_EQ(count, kThreads * kEach);
  EXPECT_FALSE(wrong_thread);
  EXPECT_TRUE(loop.empty());
}

TEST(UvLoop, EmbedsInACallersLoop) {
  uv_loop_t raw;
  ASSERT_EQ(uv_loop_init(&raw), 0);
  {
    UvLoop loop(&raw);
    int fired = 0;
    auto t = loop.make_timer([&] { ++fired; });
    t->start(1ms);
    loop.post([&] { ++fired; });
    uv_run(&raw, UV_RUN_DEFAULT);
    EXPECT_EQ(fired, 2);
  }
  uv_run(&raw, UV_RUN_DEFAULT);  // lets libuv finish closing our handles
  EXPECT_EQ(uv_loop_close(&raw), 0);
}

// Many writes in one turn go out gathered, and every reply comes back.
TEST(UvLoop, TcpStreamGathersWritesAndReadsEverything) {
  test::RedisServer server;
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  Recorder r;
  Endpoint ep;
  ep.port = server.port();
  constexpr int kPings = 2000;
  const std::string pong = "+PONG\r\n";
  std::unique_ptr<Stream> s;
  r.on_conn = [&] {
    for (int i = 0; i < kPings; ++i) s->write("PING\r\n");
    EXPECT_GT(s->write_queue_bytes(), 0u);
  };
  r.on_bytes = [&] {
    if (r.data.size() == pong.size() * kPings) s.reset();
  };
  s = loop.connect(ep, r, 2s);
  loop.run();
  ASSERT_EQ(r.connected.size(), 1u);
  EXPECT_FALSE(r.connected[0]) << r.connected[0].message();
  std::string want;
  for (int i = 0; i < kPings; ++i) want += pong;
  EXPECT_EQ(r.data, want);
  EXPECT_TRUE(r.closed.empty());
  EXPECT_TRUE(loop.empty());
}

// write_copy() next to write(): small copies join the turn's buffer (which the next turn reuses
// once written), large ones are queued apart, and everything arrives in order, turn after turn.
TEST(UvLoop, WriteCopyKeepsOrderAcrossTurnsAndSizes) {
  test::RedisServer server;
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  Recorder r;
  Endpoint ep;
  ep.port = server.port();
  std::unique_ptr<Stream> s;
  std::string want;
  int round = 0;
  constexpr int kRounds = 12;
  auto echo = [](std::size_t n, char fill) {
    const std::string body(n, fill);
    const std::string len = std::to_string(n);
    std::string c = "*2\r\n$4\r\nECHO\r\n$";
    c.append(len).append("\r\n").append(body).append("\r\n");
    std::string reply = "$";
    reply.append(len).append("\r\n").append(body).append("\r\n");
    return std::make_pair(c, reply);
  };
  auto send_round = [&] {
    // Sizes around the coalescing rules: tiny, 1 KiB and just over, past the 64 KiB buffer.
    const std::size_t sizes[] = {3, 1000, 1024 - 20, 1100, 70000, 5, 200000, 7};
    for (std::size_t i = 0; i < std::size(sizes); ++i) {
      auto [c, reply] = echo(sizes[(i + static_cast<std::size_t>(round)) % std::size(sizes)],
                             static_cast<char>('a' + (round + static_cast<int>(i)) % 26));
      if ((i + static_cast<std::size_t>(round)) % 3 == 0) {
        s->write(std::move(c));
      } else {
        s->write_copy(c);
      }
      want += reply;
      for (int k = 0; k < 20; ++k) {
        s->write_copy("PING\r\n");
        want += "+PONG\r\n";
      }
    }
  };
  r.on_conn = [&] { send_round(); };
  r.on_bytes = [&] {
    if (r.data.size() < want.size()) return;
    if (++round < kRounds) return send_round();  // from a read callback: the next turn
    s.reset();
  };
  s = loop.connect(ep, r, 2s);
  loop.run();
  ASSERT_EQ(r.connected.size(), 1u);
  EXPECT_FALSE(r.connected[0]) << r.connected[0].message();
  EXPECT_EQ(round, kRounds);
  EXPECT_EQ(r.data.size(), want.size());
  EXPECT_TRUE(r.data == want);
  EXPECT_TRUE(r.closed.empty());
}

TEST(UvLoop, ResolvesNamesAndTriesEveryAddress) {
  // redis binds 127.0.0.1 only; "localhost" may resolve to ::1 first.
  test::RedisServer server;
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  Recorder r;
  Endpoint ep;
  ep.host = "localhost";
  ep.port = server.port();
  std::unique_ptr<Stream> s;
  r.on_conn = [&] { s->write("PING\r\n"); };
  r.on_bytes = [&] { s.reset(); };
  s = loop.connect(ep, r, 2s);
  loop.run();
  ASSERT_EQ(r.connected.size(), 1u);
  EXPECT_FALSE(r.connected[0]) << r.connected[0].message();
  EXPECT_EQ(r.data, "+PONG\r\n");
  EXPECT_TRUE(loop.empty());
}

TEST(UvLoop, UnixSocketStream) {
  test::RedisServer server({}, /*unix_socket=*/true);
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  Recorder r;
  Endpoint ep;
  ep.kind = Endpoint::Kind::unix_socket;
  ep.path = server.unix_path();
  std::unique_ptr<Stream> s;
  r.on_conn = [&] { s->write("*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n"); };
  r.on_bytes = [&] { s.reset(); };
  s = loop.connect(ep, r, 2s);
  loop.run();
  ASSERT_EQ(r.connected.size(), 1u);
  EXPECT_FALSE(r.connected[0]) << r.connected[0].message();
  EXPECT_EQ(r.data, "$2\r\nhi\r\n");
  EXPECT_TRUE(loop.empty());
}

TEST(UvLoop, RefusedUnresolvableAndMissingEndpointsFailOnce) {
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  SilentListener bound_only(/*listening=*/false);  // a port nobody listens on
  const std::uint16_t port = bound_only.port;

  Recorder refused, unresolved, nopath;
  Endpoint a;
  a.port = port;
  Endpoint b;
  b.host = "no-such-host.invalid";
  Endpoint c;
  c.kind = Endpoint::Kind::unix_socket;
  c.path = "/nonexistent/lockwire.sock";
  auto sa = loop.connect(a, refused, 2s);
  auto sb = loop.connect(b, unresolved, 5s);
  auto sc = loop.connect(c, nopath, 2s);
  EXPECT_TRUE(refused.connected.empty());  // never inside connect()
  loop.run();
  ASSERT_EQ(refused.connected.size(), 1u);
  EXPECT_EQ(refused.connected[0], std::errc::connection_refused);
  ASSERT_EQ(unresolved.connected.size(), 1u);
  EXPECT_TRUE(unresolved.connected[0]);
  ASSERT_EQ(nopath.connected.size(), 1u);
  EXPECT_EQ(nopath.connected[0], std::errc::no_such_file_or_directory);
  EXPECT_TRUE(refused.closed.empty() && unresolved.closed.empty() && nopath.closed.empty());
}

TEST(UvLoop, ConnectTimeoutCoversTheTlsHandshake) {
  SilentListener silent;  // accepts (kernel backlog) but never speaks TLS
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  Recorder r;
  Endpoint ep;
  ep.port = silent.port;
  ep.tls = TlsOptions{};
  ep.tls->verify_peer = false;
  auto s = loop.connect(ep, r, 50ms);
  loop.run();
  ASSERT_EQ(r.connected.size(), 1u);
  EXPECT_EQ(r.connected[0], ConnectErrc::tls_handshake_timeout) << r.connected[0].message();
  EXPECT_EQ(r.connected[0], std::errc::timed_out);
}

TEST(UvLoop, DestroyingAStreamMidConnectCancelsEverything) {
  test::RedisServer server;
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  Recorder r1, r2;
  Endpoint ep;
  ep.port = server.port();
  Endpoint named = ep;
  named.host = "localhost";
  auto s1 = loop.connect(ep, r1, 2s);
  auto s2 = loop.connect(named, r2, 2s);
  s1.reset();
  loop.run_once(false);
  s2.reset();
  loop.run();
  EXPECT_TRUE(r1.connected.empty());
  EXPECT_TRUE(r2.connected.empty());
  EXPECT_TRUE(loop.empty());
}

TEST(UvLoop, PeerCloseAndHalfCloseEndTheStream) {
  test::RedisServer server;
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  Recorder r;
  Endpoint ep;
  ep.port = server.port();
  std::unique_ptr<Stream> s;
  // Half-close after a PING: redis answers, sees EOF and closes; we get the reply then on_closed.
  r.on_conn = [&] {
    s->write("PING\r\n");
    s->shutdown();
  };
  s = loop.connect(ep, r, 2s);
  loop.run();
  EXPECT_EQ(r.data, "+PONG\r\n");
  ASSERT_EQ(r.closed.size(), 1u);
  EXPECT_EQ(r.closed[0], uv_error(UV_EOF));
  EXPECT_NE(r.closed[0].message(), "");
}

TEST(UvLoop, CloseDeliversNoFurtherCallbacks) {
  test::RedisServer server;
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  Recorder r;
  Endpoint ep;
  ep.port = server.port();
  std::unique_ptr<Stream> s;
  r.on_conn = [&] {
    s->write("PING\r\n");
    s->close();
    s->write("PING\r\n");  // ignored
  };
  s = loop.connect(ep, r, 2s);
  loop.run();
  EXPECT_EQ(r.connected.size(), 1u);
  EXPECT_TRUE(r.data.empty());
  EXPECT_TRUE(r.closed.empty());
}

TEST(UvLoop, ClocksAndRandomness) {
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  const MonoTime a = loop.now();
  const MonoTime b = loop.now();
  EXPECT_LE(a, b);
  // Wall clock: after 2020-01-01.
  EXPECT_GT(loop.wall_now().since_epoch, Nanos(std::chrono::seconds(1577836800)));
  std::uint64_t x = 0;
  for (int i = 0; i < 8; ++i) x |= loop.random();
  EXPECT_NE(x, 0u);
  EXPECT_NE(loop.random(), loop.random());
  EXPECT_TRUE(loop.empty());
}

}  // namespace
}  // namespace lockwire::loop
