// Connecting over the fake loop (fake_loop.hpp): the handshake and its failures, fencing of
// abandoned connections, connection loss and reconnects with backoff, the state handlers' first
// turn after ready, the health check, the handshake timeout.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fake_loop.hpp"
#include "lockwire/loop/connection.hpp"
#include "lockwire/resp/encoder.hpp"

namespace lockwire::loop {
namespace {

using namespace fake;

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

// The bound covers the whole handshake, not only HELLO: a server that answers HELLO and then
// dies without a word (a machine crash: no RST) must not leave the connection `connecting`.
TEST_F(Fixture, HandshakeTimeoutCoversEveryStepAfterHello) {
  opt.connect_timeout = 50ms;
  opt.db = 2;  // HELLO, then SELECT
  make();
  c->start();
  L.drain();
  L.s().h->on_connected({});
  L.drain();
  EXPECT_EQ(L.take(), cmd({"HELLO", "3"}) + cmd({"SELECT", "2"}));
  L.feed(kHelloReply);  // SELECT is never answered
  EXPECT_EQ(c->state(), ConnectionState::connecting);
  L.advance(51ms);
  EXPECT_TRUE(saw(ConnectionState::disconnected, Errc::connect_failed));
  EXPECT_NE(c->last_error().find("handshake timed out"), std::string::npos);
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
