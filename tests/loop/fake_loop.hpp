// The connection's test bed for loop_tests: FakeLoop (manual time, scripted streams, posted work
// run on demand), a Fixture holding one Connection on it, and small helpers. Used by
// connection_fake_test.cpp (the multiplexer), handshake_fake_test.cpp (connecting, handshake,
// fencing, reconnects, health check) and sentinel_fake_test.cpp (discovery, following moves).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "lockwire/loop/connection.hpp"
#include "lockwire/resp/encoder.hpp"
#include "lockwire/resp/reply.hpp"

namespace lockwire::loop::fake {

using namespace std::chrono_literals;

class FakeLoop final : public Loop {
 public:
  struct FTimer;
  struct FStream;
  MonoTime t{};
  std::vector<FTimer*> timers;
  std::deque<std::function<void()>> posted;
  std::vector<FStream*> streams;  // live ones, newest last
  int connects = 0;
  std::uint64_t rnd = 0x9E3779B97F4A7C15ull;

  struct FTimer final : Timer {
    FakeLoop* L;
    std::function<void()> fn;
    bool on = false;
    MonoTime due{};
    Nanos rep{0};
    FTimer(FakeLoop* l, std::function<void()> f) : L(l), fn(std::move(f)) {
      L->timers.push_back(this);
    }
    ~FTimer() override { L->timers.erase(std::find(L->timers.begin(), L->timers.end(), this)); }
    void start(Nanos d, Nanos r) override {
      on = true;
      due = L->t + d;
      rep = r;
    }
    void stop() noexcept override { on = false; }
    bool active() const noexcept override { return on; }
  };

  struct FStream final : Stream {
    FakeLoop* L;
    StreamHandler* h;
    std::string written;
    bool closed = false;
    std::size_t backlog = 0;  // pretend unsent bytes
    Endpoint ep;              // what connect() was asked for
    FStream(FakeLoop* l, StreamHandler* hh) : L(l), h(hh) { L->streams.push_back(this); }
    ~FStream() override { L->streams.erase(std::find(L->streams.begin(), L->streams.end(), this)); }
    void write(std::string b) override {
      if (!closed) written += b;
    }
    std::size_t write_queue_bytes() const noexcept override { return backlog; }
    void shutdown() override {}
    void close() noexcept override { closed = true; }
  };

  MonoTime now() const noexcept override { return t; }
  WallTime wall_now() const noexcept override { return WallTime{t.since_origin}; }
  std::unique_ptr<Timer> make_timer(std::function<void()> f) override {
    return std::make_unique<FTimer>(this, std::move(f));
  }
  void post(std::function<void()> fn) override { posted.push_back(std::move(fn)); }
  std::unique_ptr<Stream> connect(const Endpoint& e, StreamHandler& h, Nanos) override {
    ++connects;
    auto s = std::make_unique<FStream>(this, &h);
    s->ep = e;
    return s;
  }
  std::uint64_t random() noexcept override {
    rnd ^= rnd << 13;
    rnd ^= rnd >> 7;
    rnd ^= rnd << 17;
    return rnd;
  }

  void drain() {
    while (!posted.empty()) {
      auto f = std::move(posted.front());
      posted.pop_front();
      f();
    }
  }
  // Advances virtual time, firing due timers in order.
  void advance(Nanos d) {
    const MonoTime target = t + d;
    drain();
    for (;;) {
      FTimer* next = nullptr;
      for (FTimer* x : timers) {
        if (x->on && x->due <= target && (next == nullptr || x->due < next->due)) next = x;
      }
      if (next == nullptr) break;
      t = std::max(t, next->due);
      if (next->rep.count() > 0) {
        next->due = t + next->rep;
      } else {
        next->on = false;
      }
      next->fn();
      drain();
    }
    t = target;
  }
  FStream& s() { return *streams.back(); }
  // Server bytes arrive.
  void feed(std::string_view b) {
    s().h->on_data(b);
    drain();
  }
  std::string take() { return std::exchange(s().written, std::string()); }
};

inline std::string cmd(std::initializer_list<std::string_view> a) {
  std::string out;
  resp::append_command(out, a);
  return out;
}

inline RequestOptions tmo(Nanos d) {
  RequestOptions o;
  o.timeout = d;
  return o;
}

inline Request req(std::string bytes, std::uint32_t n) {
  Request r;
  r.bytes = std::move(bytes);
  r.commands = n;
  return r;
}

inline constexpr std::string_view kHelloReply = "%2\r\n$2\r\nid\r\n:42\r\n$5\r\nproto\r\n:3\r\n";

struct Fixture : ::testing::Test {
  FakeLoop L;
  ConnectionOptions opt;
  std::unique_ptr<Connection> c;
  std::vector<std::pair<ConnectionState, std::error_code>> states;

  // libuv's rule (test/task.h) on the fake loop: once the connection is gone, nothing of it is
  // left — no timer, no stream, no posted work (stale posts run and find nothing to do).
  void TearDown() override {
    c.reset();
    L.drain();
    EXPECT_TRUE(L.timers.empty()) << L.timers.size() << " timer(s) left";
    EXPECT_TRUE(L.streams.empty()) << L.streams.size() << " stream(s) left";
    EXPECT_TRUE(L.posted.empty());
  }

  void make() {
    c = std::make_unique<Connection>(L, opt);
    c->add_state_handler(
        [this](ConnectionState s, std::error_code ec) { states.emplace_back(s, ec); });
  }
  bool saw(ConnectionState s, Errc e) const {
    for (auto& [st, ec] : states) {
      if (st == s && ec == e) return true;
    }
    return false;
  }
  // Connects and completes the handshake.
  void up() {
    if (!c) make();
    if (c->state() != ConnectionState::connecting) c->start();
    L.drain();
    L.s().h->on_connected({});
    L.drain();
    const std::string hello = L.take();
    ASSERT_EQ(hello.rfind(cmd({"HELLO", "3"}).substr(0, 20), 0), 0u) << hello;
    L.feed(kHelloReply);
    if (opt.db != 0) L.feed("+OK\r\n");
    ASSERT_EQ(c->state(), ConnectionState::ready);
  }
  // Takes the transaction lane: WATCH k, answered; the caller holds the WatchTxn.
  void hold_lane(WatchTxn& held) {
    c->watch(req(cmd({"WATCH", "k"}), 1),
             [&held](std::error_code, const Replies&, WatchTxn txn) { held = std::move(txn); });
    EXPECT_EQ(L.take(), cmd({"WATCH", "k"}));
    L.feed("+OK\r\n");
    ASSERT_TRUE(held.valid());
  }
};

struct Result {
  int calls = 0;
  std::error_code ec;
  std::vector<std::string> values;  // top-level value of each reply
};

inline ReplyHandler rec(Result& r) {
  return [&r](std::error_code ec, const Replies& rep) {
    ++r.calls;
    r.ec = ec;
    r.values.clear();
    for (std::size_t i = 0; i < rep.size(); ++i) {
      resp::Frame f = rep[i];
      const std::size_t v = resp::value_index(f);
      r.values.emplace_back(v < f.size() ? f[v].value : "");
    }
  };
}

}  // namespace lockwire::loop::fake
