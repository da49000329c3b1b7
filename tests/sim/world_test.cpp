// The virtual world: clock, scheduler, SimLoop (timers, post, connect) and network faults.
#include <gtest/gtest.h>

#include <cctype>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "lockwire/sim/world.hpp"

namespace lockwire::sim {
namespace {

struct Recorder : loop::StreamHandler {
  std::error_code connected{make_error_code(NetErrc::timed_out)};
  bool connected_called = false;
  std::string data;
  int data_calls = 0;
  bool closed = false;
  std::error_code closed_ec;
  void on_connected(std::error_code ec) override {
    connected_called = true;
    connected = ec;
  }
  void on_data(std::string_view b) override {
    data.append(b);
    ++data_calls;
  }
  void on_closed(std::error_code ec) override {
    closed = true;
    closed_ec = ec;
  }
};

// A server host that echoes every byte back, upper-cased.
struct EchoServer {
  struct Peer : loop::StreamHandler {
    std::unique_ptr<SimStream> s;
    std::string got;
    bool closed = false;
    void on_connected(std::error_code) override {}
    void on_data(std::string_view b) override {
      got.append(b);
      std::string up(b);
      for (auto& ch : up) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      s->write(up);
    }
    void on_closed(std::error_code) override { closed = true; }
  };
  std::vector<std::unique_ptr<Peer>> peers;
  EchoServer(World& w, Node& n, std::uint16_t port) {
    w.net().listen(n, port, [this](std::unique_ptr<SimStream> s) {
      auto p = std::make_unique<Peer>();
      p->s = std::move(s);
      p->s->set_handler(*p);
      peers.push_back(std::move(p));
    });
  }
};

loop::Endpoint ep(std::string host, std::uint16_t port) {
  loop::Endpoint e;
  e.host = std::move(host);
  e.port = port;
  return e;
}

TEST(Rng, DeterministicAndForked) {
  Rng a(42), b(42);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.next(), b.next());
  Rng f1 = Rng(42).fork("x"), f2 = Rng(42).fork("y");
  EXPECT_NE(f1.next(), f2.next());
  Rng c(7);
  for (int i = 0; i < 1000; ++i) {
    EXPECT_LT(c.below(10), 10u);
    const auto v = c.between(-3, 3);
    EXPECT_GE(v, -3);
    EXPECT_LE(v, 3);
  }
}

TEST(World, TimeAdvancesOnlyToNextEvent) {
  World w(1);
  Node& n = w.add_node("c");
  std::vector<int> order;
  auto t1 = n.loop().make_timer([&] { order.push_back(1); });
  auto t2 = n.loop().make_timer([&] { order.push_back(2); });
  t1->start(5ms);
  t2->start(2ms);
  EXPECT_TRUE(t1->active());
  w.run_until_idle();
  EXPECT_EQ(order, (std::vector<int>{2, 1}));
  EXPECT_EQ(w.now(), Nanos(5ms));
  EXPECT_FALSE(t1->active());
}

TEST(World, PostKeepsOrderAndTimerCanBeStopped) {
  World w(3);
  Node& n = w.add_node("c");
  std::vector<int> order;
  for (int i = 0; i < 10; ++i) n.loop().post([&order, i] { order.push_back(i); });
  bool fired = false;
  auto t = n.loop().make_timer([&] { fired = true; });
  t->start(1ms);
  t->stop();
  w.run_until_idle();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_FALSE(fired);
}

TEST(World, IdleIgnoresCancelledTimersAndBackgroundWork) {
  World w(8);
  Node& n = w.add_node("c");
  int chores = 0;
  std::function<void()> chore = [&] {
    ++chores;
    w.schedule(w.now() + Nanos(100ms), &n, chore, /*background=*/true);
  };
  w.schedule(w.now() + Nanos(100ms), &n, chore, true);
  auto t = n.loop().make_timer([] {});
  t->start(30s);
  bool ran = false;
  n.loop().post([&] { ran = true; });
  t->stop();
  w.run_until_idle();
  EXPECT_TRUE(ran);
  EXPECT_LT(w.now(), Nanos(100ms));  // neither the cancelled 30 s timer nor the chore kept it going
  w.run_for(1s);
  EXPECT_EQ(chores, 10);
}

TEST(World, RepeatingTimerAndSelfDestroy) {
  World w(4);
  Node& n = w.add_node("c");
  int count = 0;
  std::unique_ptr<loop::Timer> t;
  t = n.loop().make_timer([&] {
    if (++count == 3) t.reset();
  });
  t->start(1ms, 1ms);
  w.run_until_idle();
  EXPECT_EQ(count, 3);
  EXPECT_EQ(w.now(), Nanos(3ms));
}

TEST(World, DriftSlowsTimers) {
  World w(5);
  Node& n = w.add_node("c");
  n.set_mono_drift_ppm(-500000);  // local clock runs at half speed
  bool fired = false;
  auto t = n.loop().make_timer([&] { fired = true; });
  t->start(10ms);
  w.run_for(19ms);
  EXPECT_FALSE(fired);
  w.run_for(2ms);
  EXPECT_TRUE(fired);
  const auto before = n.wall_now();
  n.step_wall(-std::chrono::seconds(5));
  EXPECT_LT(n.wall_now(), before);
}

TEST(Network, BytesArriveInOrderDespiteSplits) {
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    World w(seed);
    Node& c = w.add_node("client");
    Node& s = w.add_node("server");
    LinkOptions lo;
    lo.split_per_million = 1000000;
    lo.jitter = 100us;
    w.net().link(c, s) = lo;
    EchoServer echo(w, s, 6379);
    Recorder r;
    auto st = c.loop().connect(ep("server", 6379), r, 1s);
    w.run_until([&] { return r.connected_called; });
    ASSERT_FALSE(r.connected) << r.connected.message();
    std::string sent;
    for (int i = 0; i < 50; ++i) {
      const std::string msg = "msg" + std::to_string(i) + ";";
      sent += msg;
      st->write(msg);
    }
    w.run_until_idle();
    std::string up = sent;
    for (auto& ch : up) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    EXPECT_EQ(r.data, up);
  }
}

TEST(Network, RefusedAndUnknownHost) {
  World w(9);
  Node& c = w.add_node("client");
  w.add_node("server");
  Recorder r1, r2;
  auto s1 = c.loop().connect(ep("server", 1), r1, 1s);
  auto s2 = c.loop().connect(ep("nowhere", 1), r2, 1s);
  w.run_until_idle();
  EXPECT_EQ(r1.connected, make_error_code(NetErrc::refused));
  EXPECT_EQ(r2.connected, make_error_code(NetErrc::host_unknown));
}

TEST(Network, ClogBeyondTimeoutTimesOut) {
  World w(10);
  Node& c = w.add_node("client");
  Node& s = w.add_node("server");
  EchoServer echo(w, s, 6379);
  w.net().clog(c, s, 5s);
  Recorder r;
  auto st = c.loop().connect(ep("server", 6379), r, 1s);
  w.run_until_idle();
  EXPECT_EQ(r.connected, make_error_code(NetErrc::timed_out));
  EXPECT_EQ(w.now(), Nanos(1s));
}

// A partition holds what crosses it: sent 0.1 s into a 2.5 s cut, the bytes (and the echo) wait
// for the retransmission at 0.2 + 0.4 + 0.8 + 1.6 = 3.0 s after they were first sent (the echo
// leaves at once: the cut healed), arriving a latency later; traffic
// within a side, and to a node outside the partition, is untouched. Nothing is lost.
TEST(Network, PartitionHoldsBytesUntilRetransmitAfterHeal) {
  World w(13);
  LinkOptions lo;
  lo.jitter = Nanos(0);
  lo.split_per_million = 0;
  w.net().set_default_link(lo);
  Node& c = w.add_node("client");
  Node& s = w.add_node("server");
  Node& o = w.add_node("other");
  EchoServer echo(w, s, 6379);
  Recorder r, ro;
  auto st = c.loop().connect(ep("server", 6379), r, 1s);
  auto so = o.loop().connect(ep("server", 6379), ro, 1s);
  w.run_until([&] { return r.connected_called && ro.connected_called; });
  const Nanos t0 = w.now();
  EXPECT_EQ(w.net().partition({&c}, {&s}, 2500ms), t0 + 2500ms);
  EXPECT_FALSE(w.net().reachable(c, s));
  EXPECT_TRUE(w.net().reachable(o, s));
  EXPECT_EQ(w.net().cut_until(s, c), t0 + 2500ms);
  w.run_for(100ms);
  const Nanos sent = w.now();
  st->write("abc");
  so->write("xyz");
  w.run_for(10ms);
  EXPECT_EQ(ro.data, "XYZ");  // not across the partition
  Nanos got{-1};
  w.run_until([&] {
    if (got < Nanos(0) && !r.data.empty()) got = w.now();
    return r.data == "ABC";
  });
  EXPECT_EQ(r.data, "ABC");
  EXPECT_FALSE(r.closed);
  EXPECT_EQ(got, sent + 3000ms + 100us);
  EXPECT_TRUE(w.net().reachable(c, s));
}

// A connect across a partition completes at the first SYN retry after the heal (1, 3, 7 s ...),
// or times out at the caller's timeout.
TEST(Network, ConnectAcrossPartitionWaitsForSynRetry) {
  World w(14);
  LinkOptions lo;
  lo.jitter = Nanos(0);
  w.net().set_default_link(lo);
  Node& c = w.add_node("client");
  Node& s = w.add_node("server");
  EchoServer echo(w, s, 6379);
  (void)w.net().partition({&s}, {&c}, 5s);
  Recorder slow, quick;
  auto a = c.loop().connect(ep("server", 6379), slow, 30s);
  auto b = c.loop().connect(ep("server", 6379), quick, 2s);
  w.run_until([&] { return slow.connected_called && quick.connected_called; });
  EXPECT_EQ(quick.connected, make_error_code(NetErrc::timed_out));
  EXPECT_FALSE(slow.connected);
  EXPECT_EQ(w.now(), Nanos(7s) + 100us);  // SYN at 7 s (+50 us), SYN-ACK back (+50 us)
}

TEST(Network, PausedPeerBuffersAndKillSendsEof) {
  World w(11);
  Node& c = w.add_node("client");
  Node& s = w.add_node("server");
  EchoServer echo(w, s, 6379);
  Recorder r;
  auto st = c.loop().connect(ep("server", 6379), r, 1s);
  w.run_until([&] { return r.connected_called; });
  s.pause();
  st->write("abc");
  w.run_for(100ms);
  EXPECT_EQ(r.data, "");
  s.resume();
  w.run_until_idle();
  EXPECT_EQ(r.data, "ABC");
  s.kill();
  w.run_until_idle();
  EXPECT_TRUE(r.closed);
  EXPECT_EQ(r.closed_ec, make_error_code(NetErrc::eof));
}

TEST(Network, CutDeliversPrefixThenResets) {
  World w(12);
  Node& c = w.add_node("client");
  Node& s = w.add_node("server");
  EchoServer echo(w, s, 6379);
  Recorder r;
  auto st = c.loop().connect(ep("server", 6379), r, 1s);
  w.run_until([&] { return r.connected_called; });
  w.net().cut_after(w.net().connections_of(c).back(), true, 3);
  st->write("hello");
  w.run_until_idle();
  ASSERT_EQ(echo.peers.size(), 1u);
  EXPECT_EQ(echo.peers[0]->got, "hel");
  EXPECT_TRUE(echo.peers[0]->closed);
  EXPECT_TRUE(r.closed);
  EXPECT_EQ(r.closed_ec, make_error_code(NetErrc::reset));
}

TEST(World, SameSeedSameTrace) {
  auto run = [](std::uint64_t seed) {
    World w(seed);
    w.trace().set_keep_lines(false);
    Node& c = w.add_node("client");
    Node& s = w.add_node("server");
    EchoServer echo(w, s, 6379);
    std::vector<std::unique_ptr<Recorder>> rs;
    std::vector<std::unique_ptr<loop::Stream>> ss;
    for (int i = 0; i < 4; ++i) {
      rs.push_back(std::make_unique<Recorder>());
      ss.push_back(c.loop().connect(ep("server", 6379), *rs.back(), 1s));
      ss.back()->write("ping" + std::to_string(i));
    }
    w.run_until_idle();
    return w.trace().hash();
  };
  std::set<std::uint64_t> distinct;
  for (std::uint64_t seed = 0; seed < 30; ++seed) {
    const auto h = run(seed);
    EXPECT_EQ(h, run(seed)) << "seed " << seed;
    distinct.insert(h);
  }
  EXPECT_GT(distinct.size(), 20u);  // seeds really change the interleaving
}

}  // namespace
}  // namespace lockwire::sim
