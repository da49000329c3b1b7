// Connection over an in-test fake Loop: manual time, scripted server bytes. Deterministic tests of
// handshake, pipelining, push routing, deadlines, the transaction lane, limits, reconnect backoff
// and health checks. Every test ends with the fake loop empty (Fixture::TearDown).
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "lockwire/loop/connection.hpp"
#include "lockwire/resp/encoder.hpp"
#include "lockwire/resp/reply.hpp"

namespace lockwire::loop {
namespace {

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
  std::unique_ptr<Stream> connect(const Endpoint&, StreamHandler& h, Nanos) override {
    ++connects;
    return std::make_unique<FStream>(this, &h);
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

std::string cmd(std::initializer_list<std::string_view> a) {
  std::string out;
  resp::append_command(out, a);
  return out;
}

RequestOptions tmo(Nanos d) {
  RequestOptions o;
  o.timeout = d;
  return o;
}

Request req(std::string bytes, std::uint32_t n) {
  Request r;
  r.bytes = std::move(bytes);
  r.commands = n;
  return r;
}

constexpr std::string_view kHelloReply = "%2\r\n$2\r\nid\r\n:42\r\n$5\r\nproto\r\n:3\r\n";

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
};

struct Result {
  int calls = 0;
  std::error_code ec;
  std::vector<std::string> values;  // top-level value of each reply
};

ReplyHandler rec(Result& r) {
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

TEST_F(Fixture, HandshakeSendsHelloAuthSetnameThenSelect) {
  opt.username = "bob";
  opt.password = "pw";
  opt.client_name = "svc";
  opt.db = 3;
  make();
  Result early;
  c->command({"GET", "k"}, rec(early));  // before start: waits in the queue
  c->start();
  L.drain();
  L.s().h->on_connected({});
  EXPECT_EQ(L.take(),
            cmd({"HELLO", "3", "AUTH", "bob", "pw", "SETNAME", "svc"}) + cmd({"SELECT", "3"}));
  L.feed(kHelloReply);
  EXPECT_EQ(c->state(), ConnectionState::connecting);  // SELECT still pending
  EXPECT_EQ(L.take(), "");
  L.feed("+OK\r\n");
  EXPECT_EQ(c->state(), ConnectionState::ready);
  EXPECT_EQ(c->client_id(), 42);
  EXPECT_EQ(L.take(), cmd({"GET", "k"}));
  L.feed("$1\r\nv\r\n");
  EXPECT_EQ(early.calls, 1);
  EXPECT_FALSE(early.ec);
  EXPECT_EQ(early.values, std::vector<std::string>{"v"});
  ASSERT_GE(states.size(), 2u);
  EXPECT_EQ(states.back().first, ConnectionState::ready);
}

TEST_F(Fixture, PasswordWithoutUserAuthenticatesAsDefault) {
  opt.password = "pw";
  make();
  c->start();
  L.drain();
  L.s().h->on_connected({});
  EXPECT_EQ(L.take(), cmd({"HELLO", "3", "AUTH", "default", "pw"}));
}

TEST_F(Fixture, AuthFailureAndResp3RefusalAreReportedClearly) {
  up();
  // Simulate a reconnect whose HELLO is refused.
  opt.password = "bad";
  Connection c2(L, opt);
  std::vector<std::error_code> seen;
  c2.add_state_handler([&](ConnectionState s, std::error_code ec) {
    if (s == ConnectionState::disconnected) seen.push_back(ec);
  });
  Result queued;
  c2.command({"PING"}, rec(queued));
  c2.start();
  L.drain();
  L.s().h->on_connected({});
  L.take();
  L.feed("-WRONGPASS invalid username-password pair or user is disabled.\r\n");
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], Errc::auth_failed);
  EXPECT_NE(c2.last_error().find("WRONGPASS"), std::string::npos);
  EXPECT_EQ(queued.calls, 1);
  EXPECT_EQ(queued.ec, Errc::not_sent);

  L.advance(5s);  // reconnects with backoff
  L.s().h->on_connected({});
  L.take();
  L.feed("-NOPROTO unsupported protocol version\r\n");
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1], Errc::resp3_refused);
  c2.close();
}

TEST_F(Fixture, PipelinesAndMatchesRepliesInOrder) {
  up();
  Result a, b, m;
  c->command({"SET", "k", "1"}, rec(a));
  c->command({"GET", "k"}, rec(b));
  Request multi;
  multi.bytes = cmd({"INCR", "n"}) + cmd({"INCR", "n"}) + cmd({"GET", "n"});
  multi.commands = 3;
  c->send(std::move(multi), rec(m));
  // Everything is written before any reply arrives.
  EXPECT_EQ(L.take(), cmd({"SET", "k", "1"}) + cmd({"GET", "k"}) + cmd({"INCR", "n"}) +
                          cmd({"INCR", "n"}) + cmd({"GET", "n"}));
  EXPECT_EQ(c->in_flight(), 3u);
  // Replies split at awkward boundaries.
  L.feed("+OK\r\n$1\r");
  EXPECT_EQ(a.calls, 1);
  EXPECT_EQ(b.calls, 0);
  L.feed("\n1\r\n:1\r\n:");
  EXPECT_EQ(b.values, std::vector<std::string>{"1"});
  EXPECT_EQ(m.calls, 0);
  L.feed("2\r\n$1\r\n2\r\n");
  EXPECT_EQ(m.calls, 1);
  EXPECT_FALSE(m.ec);
  EXPECT_EQ(m.values, (std::vector<std::string>{"1", "2", "2"}));
  EXPECT_EQ(c->in_flight(), 0u);
}

TEST_F(Fixture, ErrorRepliesAreServerErrorsWithTheFrame) {
  up();
  Result a;
  c->command({"INCR", "s"}, rec(a));
  L.feed("-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
  EXPECT_EQ(a.ec, Errc::server_error);
  ASSERT_EQ(a.values.size(), 1u);
  EXPECT_EQ(a.values[0].rfind("WRONGTYPE", 0), 0u);
  EXPECT_EQ(c->state(), ConnectionState::ready);
}

TEST_F(Fixture, PushesGoToPushHandlersEvenWithAttributes) {
  up();
  std::vector<std::string> pushes;
  c->add_push_handler([&](resp::Frame f) {
    ASSERT_EQ(f[0].type, resp::Type::push);
    pushes.emplace_back(f[2].value);
  });
  Result a, b;
  c->command({"GET", "x"}, rec(a));
  c->command({"GET", "y"}, rec(b));
  L.feed(">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nx\r\n");
  L.feed("$1\r\n1\r\n");
  L.feed("|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.1\r\n>3\r\n$7\r\nmessage\r\n$2\r\nch\r\n");
  EXPECT_EQ(pushes.size(), 1u);  // the second one is not complete yet
  L.feed("$2\r\nhi\r\n$1\r\n2\r\n");
  ASSERT_EQ(pushes.size(), 2u);
  EXPECT_EQ(pushes[1], "ch");
  EXPECT_EQ(a.values, std::vector<std::string>{"1"});
  EXPECT_EQ(b.values, std::vector<std::string>{"2"});
}

TEST_F(Fixture, SubscribeIsAnsweredByItsFirstAcknowledgement) {
  up();
  Result sub, sub2, get;
  std::vector<std::string> pushes;
  c->add_push_handler([&](resp::Frame f) { pushes.emplace_back(f[1].value); });
  c->command({"SUBSCRIBE", "a", "b"}, rec(sub));
  c->command({"SUBSCRIBE", "c"}, rec(sub2));
  c->command({"GET", "k"}, rec(get));
  L.drain();
  EXPECT_EQ(sub.calls, 0);  // not before the server said so
  L.feed(">3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n");
  EXPECT_EQ(sub.calls, 1);
  EXPECT_FALSE(sub.ec);
  EXPECT_EQ(sub.values, std::vector<std::string>{""});  // the push itself is the reply
  // b's acknowledgement belongs to the first SUBSCRIBE, not to the second.
  L.feed(">3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:2\r\n");
  EXPECT_EQ(sub2.calls, 0);
  L.feed(">3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:3\r\n");
  EXPECT_EQ(sub2.calls, 1);
  EXPECT_FALSE(sub2.ec);
  L.feed("$1\r\nv\r\n");
  EXPECT_EQ(pushes, (std::vector<std::string>{"subscribe", "subscribe", "subscribe"}));
  EXPECT_EQ(get.values, std::vector<std::string>{"v"});
}

TEST_F(Fixture, ClosingFromThePushHandlerOnASubscribeAcknowledgement) {
  // The acknowledgement reaches the push handlers before it answers the SUBSCRIBE; a handler
  // that closes the connection there must not make it look like an unsolicited reply.
  up();
  Result sub;
  c->add_push_handler([&](resp::Frame) { c->close(); });
  c->command({"SUBSCRIBE", "a"}, rec(sub));
  L.drain();
  L.feed(">3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n");
  EXPECT_EQ(c->state(), ConnectionState::closed);
  EXPECT_EQ(sub.calls, 1);
  EXPECT_EQ(sub.ec, Errc::closed);
  EXPECT_EQ(c->last_error().find("unsolicited"), std::string::npos) << c->last_error();
}

TEST_F(Fixture, RefusedSubscribeFailsOnlyItself) {
  // Redis 7 refuses SUBSCRIBE with an error *reply* (not a push) where the ACL grants no
  // channel access; that must answer the SUBSCRIBE, not break the connection.
  up();
  Result sub, get, mixed;
  c->command({"SUBSCRIBE", "a", "b"}, rec(sub));
  c->command({"GET", "k"}, rec(get));
  c->send(req(cmd({"CLIENT", "TRACKING", "ON"}) + cmd({"SUBSCRIBE", "x"}), 2), rec(mixed));
  L.drain();
  L.feed("-NOPERM this user has no permissions to access one of the channels\r\n$1\r\nv\r\n");
  EXPECT_EQ(sub.calls, 1);
  EXPECT_EQ(sub.ec, Errc::server_error);
  EXPECT_EQ(get.values, std::vector<std::string>{"v"});
  L.feed("+OK\r\n-NOPERM no\r\n");
  EXPECT_EQ(mixed.calls, 1);
  EXPECT_EQ(mixed.ec, Errc::server_error);
  EXPECT_EQ(mixed.values, (std::vector<std::string>{"OK", "NOPERM no"}));
  EXPECT_EQ(c->state(), ConnectionState::ready);
}

TEST_F(Fixture, BadRequestsFailWithoutTouchingTheConnection) {
  up();
  std::vector<Result> r(7);
  c->command({"MULTI"}, rec(r[0]));
  c->command({"WATCH", "k"}, rec(r[1]));
  c->command({"RESET"}, rec(r[2]));
  c->command({"CLIENT", "REPLY", "OFF"}, rec(r[3]));
  c->command({"SUBSCRIBE"}, rec(r[4]));
  auto wrong_count = req(cmd({"PING"}) + cmd({"PING"}), 1);
  c->send(std::move(wrong_count), rec(r[5]));
  c->send(req("PING\r\n", 1), rec(r[6]));  // inline commands are not RESP arrays
  for (auto& x : r) EXPECT_EQ(x.calls, 0);
  L.drain();
  for (auto& x : r) {
    EXPECT_EQ(x.calls, 1);
    EXPECT_EQ(x.ec, Errc::bad_request);
  }
  EXPECT_EQ(L.take(), "");
  EXPECT_EQ(c->state(), ConnectionState::ready);
}

TEST_F(Fixture, DeadlinesSeparateNotSentFromOutcomeUnknown) {
  make();
  c->start();
  L.drain();
  Result queued, written, next;
  c->command({"GET", "q"}, rec(queued), tmo(10ms));
  L.advance(11ms);  // still connecting: never written
  EXPECT_EQ(queued.ec, Errc::not_sent);
  up();
  EXPECT_EQ(L.take(), "");  // the expired request is gone

  Result late;
  RequestOptions o;
  o.timeout = 10ms;
  o.on_late_reply = rec(late);
  c->command({"GET", "w"}, rec(written), o);
  c->command({"GET", "n"}, rec(next));
  L.take();
  L.advance(11ms);
  EXPECT_EQ(written.calls, 1);
  EXPECT_EQ(written.ec, Errc::outcome_unknown);
  EXPECT_EQ(c->in_flight(), 2u);  // still expecting its reply
  L.feed("$4\r\nlate\r\n$1\r\nn\r\n");
  EXPECT_EQ(late.calls, 1);
  EXPECT_EQ(late.values, std::vector<std::string>{"late"});
  EXPECT_EQ(next.values, std::vector<std::string>{"n"});  // stream stayed in sync
  EXPECT_EQ(written.calls, 1);
}

TEST_F(Fixture, TransactionLaneSerialisesWatchersButNotPlainCommands) {
  up();
  WatchTxn held;
  Result a_watch;
  c->watch(req(cmd({"WATCH", "k"}) + cmd({"GET", "k"}), 2),
           [&](std::error_code ec, const Replies& r, WatchTxn txn) {
             rec(a_watch)(ec, r);
             held = std::move(txn);
           });
  EXPECT_EQ(L.take(), cmd({"WATCH", "k"}) + cmd({"GET", "k"}));
  L.feed("+OK\r\n$1\r\n1\r\n");
  ASSERT_TRUE(held.valid());
  EXPECT_EQ(a_watch.values, (std::vector<std::string>{"OK", "1"}));

  // While A holds the lane: B's WATCH and an atomic block wait; plain commands flow.
  bool b_called = false;
  WatchTxn b_txn;
  c->watch(req(cmd({"WATCH", "j"}), 1), [&](std::error_code ec, const Replies&, WatchTxn t) {
    EXPECT_FALSE(ec);
    b_called = true;
    b_txn = std::move(t);
  });
  Result atomic, plain;
  c->send(req(cmd({"MULTI"}) + cmd({"INCR", "z"}) + cmd({"EXEC"}), 3), rec(atomic));
  c->command({"GET", "p"}, rec(plain));
  EXPECT_EQ(L.take(), cmd({"GET", "p"}));
  L.feed("$1\r\np\r\n");

  Result exec;
  held.exec(req(cmd({"MULTI"}) + cmd({"SET", "k", "2"}) + cmd({"EXEC"}), 3), rec(exec));
  EXPECT_FALSE(held.valid());
  // A's block, then B's WATCH (the lane passes on); the atomic block waits for B.
  EXPECT_EQ(L.take(),
            cmd({"MULTI"}) + cmd({"SET", "k", "2"}) + cmd({"EXEC"}) + cmd({"WATCH", "j"}));
  L.feed("+OK\r\n+QUEUED\r\n*1\r\n+OK\r\n+OK\r\n");
  EXPECT_EQ(exec.values.size(), 3u);
  EXPECT_FALSE(exec.ec);
  ASSERT_TRUE(b_called);
  ASSERT_TRUE(b_txn.valid());
  EXPECT_EQ(L.take(), "");
  b_txn = WatchTxn{};  // dropping it unwatches and frees the lane
  EXPECT_EQ(L.take(), cmd({"UNWATCH"}) + cmd({"MULTI"}) + cmd({"INCR", "z"}) + cmd({"EXEC"}));
  L.feed("+OK\r\n+OK\r\n+QUEUED\r\n*1\r\n:1\r\n");
  EXPECT_EQ(atomic.values.size(), 3u);
}

TEST_F(Fixture, WatchFailuresAndTimeoutsReleaseTheLane) {
  up();
  // A read error inside the watch request: no lane for the caller, UNWATCH sent.
  bool got = false;
  c->watch(req(cmd({"WATCH", "k"}) + cmd({"HGET", "k", "f"}), 2),
           [&](std::error_code ec, const Replies& r, WatchTxn t) {
             got = true;
             EXPECT_EQ(ec, Errc::server_error);
             EXPECT_EQ(r.size(), 2u);
             EXPECT_FALSE(t.valid());
           });
  L.take();
  L.feed("+OK\r\n-WRONGTYPE x\r\n");
  EXPECT_TRUE(got);
  EXPECT_EQ(L.take(), cmd({"UNWATCH"}));
  L.feed("+OK\r\n");

  // A WATCH whose reply is late: outcome unknown, UNWATCH written behind it, lane free.
  std::error_code ec1;
  c->watch(
      req(cmd({"WATCH", "k"}), 1),
      [&](std::error_code ec, const Replies&, WatchTxn t) {
        ec1 = ec;
        EXPECT_FALSE(t.valid());
      },
      tmo(5ms));
  L.take();
  L.advance(6ms);
  EXPECT_EQ(ec1, Errc::outcome_unknown);
  EXPECT_EQ(L.take(), cmd({"UNWATCH"}));
  bool next = false;
  c->watch(req(cmd({"WATCH", "k"}), 1),
           [&](std::error_code ec, const Replies&, WatchTxn t) { next = !ec && t.valid(); });
  EXPECT_EQ(L.take(), cmd({"WATCH", "k"}));
  L.feed("+OK\r\n+OK\r\n+OK\r\n");
  EXPECT_TRUE(next);
  // The connection drops while a txn is held: exec reports not_sent.
  // (the txn in `next`'s handler was dropped, so hold a new one)
  WatchTxn t2;
  L.take();
  c->watch(req(cmd({"WATCH", "q"}), 1),
           [&](std::error_code, const Replies&, WatchTxn t) { t2 = std::move(t); });
  L.take();
  L.feed("+OK\r\n+OK\r\n");  // UNWATCH (next's dropped txn), WATCH q
  ASSERT_TRUE(t2.valid());
  L.s().h->on_closed(std::make_error_code(std::errc::connection_reset));
  Result ex;
  t2.exec(req(cmd({"MULTI"}) + cmd({"EXEC"}), 2), rec(ex));
  L.drain();
  EXPECT_EQ(ex.ec, Errc::not_sent);
}

TEST_F(Fixture, MalformedBytesAndUnsolicitedRepliesDropTheConnection) {
  up();
  Result a;
  c->command({"GET", "k"}, rec(a));
  L.feed("?garbage\r\n");
  EXPECT_EQ(a.ec, Errc::outcome_unknown);
  EXPECT_EQ(c->state(), ConnectionState::disconnected);
  EXPECT_EQ(states.back().second, Errc::protocol_error);
  EXPECT_NE(c->last_error().find("malformed"), std::string::npos);

  L.advance(1s);
  up();
  L.feed("+OK\r\n");  // nobody asked
  EXPECT_EQ(c->state(), ConnectionState::disconnected);
  EXPECT_EQ(states.back().second, Errc::protocol_error);
  EXPECT_NE(c->last_error().find("unsolicited"), std::string::npos);
}

TEST_F(Fixture, InputAndOutputLimits) {
  opt.max_input_bytes = 64;
  opt.max_output_bytes = 100;
  up();
  Result big;
  c->command({"SET", "k", std::string(200, 'x')}, rec(big));
  L.drain();
  EXPECT_EQ(big.ec, Errc::output_limit);
  EXPECT_EQ(L.take(), "");
  Result get;
  c->command({"GET", "k"}, rec(get));
  L.take();
  L.feed("$100\r\n" + std::string(70, 'y'));
  EXPECT_EQ(get.ec, Errc::outcome_unknown);
  EXPECT_EQ(states.back().second, Errc::input_limit);
}

TEST_F(Fixture, ConnectionLossFailsWrittenRequestsAndKeepsQueuedOnes) {
  opt.reconnect.initial = 10ms;
  opt.reconnect.max = 80ms;
  up();
  Result written, late_cb;
  RequestOptions lo;
  lo.timeout = 1ms;
  lo.on_late_reply = rec(late_cb);
  c->command({"GET", "a"}, rec(written));
  Result timed;
  c->command({"GET", "b"}, rec(timed), lo);
  L.advance(2ms);
  EXPECT_EQ(timed.ec, Errc::outcome_unknown);
  L.s().h->on_closed(std::make_error_code(std::errc::connection_reset));
  L.drain();
  EXPECT_EQ(written.ec, Errc::outcome_unknown);
  EXPECT_EQ(late_cb.ec, Errc::connection_lost);  // the late reply will never come
  EXPECT_EQ(c->state(), ConnectionState::disconnected);
  Result queued;
  c->command({"GET", "c"}, rec(queued));

  // Backoff: failed connects make the delay grow (jittered in [d/2, d]) up to the cap.
  std::vector<Nanos> gaps;
  MonoTime last = L.t;
  for (int i = 0; i < 6; ++i) {
    const int before = L.connects;
    while (L.connects == before) L.advance(1ms);
    gaps.push_back(L.t - last);
    L.s().h->on_connected(std::make_error_code(std::errc::connection_refused));
    L.drain();
    last = L.t;
  }
  EXPECT_LE(gaps[0], 11ms);
  EXPECT_GE(gaps[0], 5ms);
  EXPECT_GE(gaps[3], 40ms);
  for (auto g : gaps) EXPECT_LE(g, 81ms);
  while (L.streams.empty() || L.s().written.empty()) {
    L.advance(1ms);
    if (c->state() == ConnectionState::connecting && L.s().written.empty()) {
      L.s().h->on_connected({});
      L.drain();
    }
  }
  L.take();
  L.feed(kHelloReply);
  EXPECT_EQ(L.take(), cmd({"GET", "c"}));  // the queued request survives the outage
  L.feed("$1\r\nc\r\n");
  EXPECT_EQ(queued.values, std::vector<std::string>{"c"});
}

TEST_F(Fixture, StateHandlersReSubscribeBeforeTheBacklog) {
  up();
  c->add_state_handler([&](ConnectionState s, std::error_code) {
    if (s == ConnectionState::ready) c->command({"SUBSCRIBE", "ch"}, [](auto, auto&) {});
  });
  L.s().h->on_closed(std::make_error_code(std::errc::connection_reset));
  Result q;
  c->command({"GET", "k"}, rec(q));
  L.advance(1s);
  L.s().h->on_connected({});
  L.drain();
  L.take();
  L.feed(kHelloReply);
  EXPECT_EQ(L.take(), cmd({"SUBSCRIBE", "ch"}) + cmd({"GET", "k"}));
  L.feed(">3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n$1\r\nv\r\n");
  EXPECT_EQ(q.values, std::vector<std::string>{"v"});
}

TEST_F(Fixture, FenceKillsTheAbandonedConnectionBeforeAnythingElse) {
  opt.fence_abandoned = true;
  make();
  c->start();
  L.drain();
  L.s().h->on_connected({});
  EXPECT_EQ(L.take(), cmd({"HELLO", "3"}) + cmd({"CLIENT", "INFO"}));  // nothing to fence yet
  L.feed(kHelloReply);
  EXPECT_EQ(c->state(), ConnectionState::connecting);  // CLIENT INFO still pending
  L.feed("=73\r\ntxt:id=42 addr=10.1.2.3:5555 laddr=127.0.0.1:6379 fd=8 name= db=0 resp=3\n\r\n");
  ASSERT_EQ(c->state(), ConnectionState::ready);
  Result q;
  c->command({"GET", "k"}, rec(q));
  L.take();
  L.s().h->on_closed(std::make_error_code(std::errc::connection_reset));  // GET: outcome unknown
  Result after;
  c->command({"SET", "k", "v"}, rec(after));
  L.advance(1s);
  // First reconnect attempt dies before the fence is answered: the fence is kept.
  L.s().h->on_connected({});
  EXPECT_EQ(L.take(), cmd({"HELLO", "3"}) + cmd({"CLIENT", "INFO"}) +
                          cmd({"CLIENT", "KILL", "ID", "42", "ADDR", "10.1.2.3:5555"}));
  L.s().h->on_closed(std::make_error_code(std::errc::connection_reset));
  L.advance(1s);
  L.s().h->on_connected({});
  EXPECT_EQ(L.take(), cmd({"HELLO", "3"}) + cmd({"CLIENT", "INFO"}) +
                          cmd({"CLIENT", "KILL", "ID", "42", "ADDR", "10.1.2.3:5555"}));
  L.feed("%1\r\n$2\r\nid\r\n:44\r\n");
  L.feed("$24\r\nid=44 addr=10.1.2.3:6666\r\n");       // RESP2-style bulk is understood too
  EXPECT_EQ(c->state(), ConnectionState::connecting);  // the fence is not answered yet
  EXPECT_EQ(L.take(), "");
  L.feed(":1\r\n");
  ASSERT_EQ(c->state(), ConnectionState::ready);
  EXPECT_EQ(L.take(), cmd({"SET", "k", "v"}));  // only now
  L.feed("+OK\r\n");
  EXPECT_EQ(after.values, std::vector<std::string>{"OK"});
  // The next reconnect fences connection 44 only; a refused kill (ACL) does not stop it.
  L.s().h->on_closed(std::make_error_code(std::errc::connection_reset));
  L.advance(1s);
  L.s().h->on_connected({});
  EXPECT_EQ(L.take(), cmd({"HELLO", "3"}) + cmd({"CLIENT", "INFO"}) +
                          cmd({"CLIENT", "KILL", "ID", "44", "ADDR", "10.1.2.3:6666"}));
  L.feed(kHelloReply);
  L.feed("-NOPERM this user has no permissions to run the 'client|info' command\r\n");
  L.feed("-NOPERM this user has no permissions to run the 'client|kill' command\r\n");
  EXPECT_EQ(c->state(), ConnectionState::ready);
  // No address learnt: the next reconnect has nothing it could fence safely.
  L.s().h->on_closed(std::make_error_code(std::errc::connection_reset));
  L.advance(1s);
  L.s().h->on_connected({});
  EXPECT_EQ(L.take(), cmd({"HELLO", "3"}) + cmd({"CLIENT", "INFO"}));
}

TEST_F(Fixture, HealthCheckKillsASilentServerButNotASlowFrame) {
  opt.health_check_interval = 100ms;
  up();
  L.advance(100ms);
  EXPECT_EQ(L.take(), cmd({"PING"}));  // idle: probe
  L.feed("+PONG\r\n");
  // A big reply trickling in is not a dead server, even spanning several intervals.
  Result big;
  c->command({"GET", "big"}, rec(big));
  L.take();
  L.feed("$30\r\n");
  for (int i = 0; i < 5; ++i) {
    L.advance(100ms);
    L.feed("xxxxx");
  }
  L.feed("xxxxx\r\n");
  EXPECT_FALSE(big.ec);
  EXPECT_EQ(c->state(), ConnectionState::ready);
  L.take();
  // A probe outstanding while a large push trickles in: alive.
  L.advance(100ms);
  EXPECT_EQ(L.take(), cmd({"PING"}));
  L.feed(">2\r\n$7\r\nmessage\r\n$20\r\n");
  for (int i = 0; i < 4; ++i) {
    L.advance(100ms);
    EXPECT_EQ(c->state(), ConnectionState::ready);
    L.feed("zzzzz");
  }
  L.feed("\r\n+PONG\r\n");
  L.advance(50ms);
  EXPECT_EQ(c->state(), ConnectionState::ready);
  // Silence after a probe: dropped.
  L.advance(100ms);
  EXPECT_EQ(L.take(), cmd({"PING"}));
  L.advance(100ms);
  EXPECT_TRUE(saw(ConnectionState::disconnected, Errc::health_check_failed));
}

TEST_F(Fixture, HandshakeTimeoutDropsTheConnection) {
  opt.connect_timeout = 50ms;
  make();
  c->start();
  L.drain();
  L.s().h->on_connected({});
  L.advance(51ms);
  EXPECT_TRUE(saw(ConnectionState::disconnected, Errc::connect_failed));
  EXPECT_NE(c->last_error().find("handshake timed out"), std::string::npos);
}

TEST_F(Fixture, CloseFailsEverythingAndHandlersMayDestroyTheConnection) {
  up();
  Result a, b;
  c->command({"GET", "a"}, rec(a));
  c->watch(req(cmd({"WATCH", "x"}), 1), [](auto, auto&, WatchTxn) {});
  c->close();
  EXPECT_EQ(a.ec, Errc::closed);
  EXPECT_EQ(c->state(), ConnectionState::closed);
  c->command({"GET", "b"}, rec(b));
  L.drain();
  EXPECT_EQ(b.ec, Errc::closed);

  c.reset();
  up();
  Result after;
  c->command({"GET", "a"}, [&](std::error_code, const Replies&) { c.reset(); });
  c->command({"GET", "b"}, rec(after));
  L.feed("$1\r\n1\r\n$1\r\n2\r\n");  // the second reply arrives after the owner is gone
  EXPECT_FALSE(c);
  EXPECT_EQ(after.ec, Errc::closed);
}

TEST_F(Fixture, NoAutoReconnectFailsQueuedRequests) {
  opt.auto_reconnect = false;
  up();
  L.s().h->on_closed(std::make_error_code(std::errc::connection_reset));
  Result r;
  c->command({"PING"}, rec(r));
  L.drain();
  EXPECT_EQ(r.ec, Errc::not_sent);
  L.advance(10s);
  EXPECT_EQ(L.connects, 1);
}

}  // namespace
}  // namespace lockwire::loop
