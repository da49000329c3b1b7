// Sentinel discovery in Connection over the fake loop (fake_loop.hpp): the sentinels asked in
// order before each connect, ROLE in the handshake, the link subscribed to +switch-master, a move
// followed, a -READONLY or a lost link noticed, what the lock layer reads (server,
// primary_epoch, config_epoch). Sentinels on ports 2637x, data nodes on 638x.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "fake_loop.hpp"
#include "lockwire/loop/connection.hpp"
#include "lockwire/resp/encoder.hpp"

namespace lockwire::loop {
namespace {

using namespace fake;

constexpr std::string_view kSubAck = ">3\r\n$9\r\nsubscribe\r\n$14\r\n+switch-master\r\n:1\r\n";
constexpr std::string_view kRoleMaster = "*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n";
constexpr std::string_view kRoleReplica =
    "*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n:6381\r\n$9\r\nconnected\r\n:10\r\n";
constexpr std::string_view kNull = "_\r\n";
constexpr std::string_view kNoSuchMaster = "-ERR No such master with that name\r\n";

std::string addr(std::string_view port) {
  std::string out;
  resp::append_array_header(out, 2);
  resp::append_blob(out, "127.0.0.1");
  resp::append_blob(out, port);
  return out;
}

std::string master(std::string_view port, std::string_view epoch) {
  std::string out;
  resp::append_map_header(out, 3);
  for (auto [k, v] : {std::pair<std::string_view, std::string_view>{"ip", "127.0.0.1"},
                      {"port", port},
                      {"config-epoch", epoch}}) {
    resp::append_blob(out, k);
    resp::append_blob(out, v);
  }
  return out;
}

std::string switch_push(std::string_view name, std::string_view from, std::string_view to) {
  std::string out;
  resp::append_push_header(out, 3);
  resp::append_blob(out, "message");
  resp::append_blob(out, "+switch-master");
  resp::append_blob(
      out, std::string(name) + " 127.0.0.1 " + std::string(from) + " 127.0.0.1 " + std::string(to));
  return out;
}

const std::string kAsk = cmd({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster"}) +
                         cmd({"SENTINEL", "MASTER", "mymaster"});
const std::string kSubscribeAndAsk = cmd({"SUBSCRIBE", "+switch-master"}) + kAsk;

Endpoint sentinel_at(std::uint16_t port) {
  Endpoint e;
  e.port = port;
  return e;
}

struct Sentinels : Fixture {
  void SetUp() override {
    opt.sentinel = SentinelOptions{"mymaster", "", ""};
    // One link only (the streams each test counts); the watch of every sentinel has its test.
    opt.sentinel->watch_every_sentinel = false;
    opt.sentinel->vouch = false;  // its questions are tests/loop/sentinel_vouch_test.cpp's
    opt.seeds = {sentinel_at(26379), sentinel_at(26380)};
    opt.reconnect.initial = 10ms;
    opt.reconnect.max = 80ms;
  }

  // The newest stream to `port` that is still open.
  FakeLoop::FStream* to(std::uint16_t port) {
    for (auto it = L.streams.rbegin(); it != L.streams.rend(); ++it) {
      if (!(*it)->closed && (*it)->ep.port == port) return *it;
    }
    return nullptr;
  }
  int open_to(std::uint16_t port) const {
    int n = 0;
    for (auto* s : L.streams) n += !s->closed && s->ep.port == port;
    return n;
  }
  void feed(std::uint16_t port, std::string_view bytes) {
    FakeLoop::FStream* s = to(port);
    ASSERT_NE(s, nullptr) << port;
    s->h->on_data(bytes);
    L.drain();
  }
  std::string take(std::uint16_t port) {
    FakeLoop::FStream* s = to(port);
    return s ? std::exchange(s->written, std::string()) : std::string("<no stream>");
  }
  // The stream to `port` connects and answers HELLO; returns what was written after it.
  std::string link_up(std::uint16_t port, const std::string& hello = cmd({"HELLO", "3"})) {
    FakeLoop::FStream* s = to(port);
    if (s == nullptr) return "<no stream>";
    s->h->on_connected({});
    L.drain();
    EXPECT_EQ(take(port), hello);
    feed(port, kHelloReply);
    return take(port);
  }
  // The data stream to `port` connects; HELLO and ROLE are answered with `role`.
  void data_up(std::uint16_t port, std::string_view role = kRoleMaster,
               const std::string& hello = cmd({"HELLO", "3"})) {
    FakeLoop::FStream* s = to(port);
    ASSERT_NE(s, nullptr) << port;
    s->h->on_connected({});
    L.drain();
    EXPECT_EQ(take(port), hello + cmd({"ROLE"}));
    feed(port, kHelloReply);
    feed(port, role);
  }
  // Start; sentinel 26379 names 127.0.0.1:6380 (epoch 3), which says it is a master.
  void ready_on_6380() {
    make();
    c->start();
    L.drain();
    ASSERT_EQ(link_up(26379), kSubscribeAndAsk);
    feed(26379, std::string(kSubAck) + addr("6380") + master("6380", "3"));
    data_up(6380);
    ASSERT_EQ(c->state(), ConnectionState::ready) << c->last_error();
  }
};

TEST_F(Sentinels, AsksTheFirstSentinelThenConnectsToThePrimaryItNames) {
  make();
  EXPECT_EQ(c->server_address(), "");  // none named yet
  EXPECT_EQ(c->primary_epoch(), 0u);
  Result early;
  c->command({"GET", "k"}, rec(early));  // waits for the primary
  c->start();
  L.drain();
  ASSERT_EQ(L.streams.size(), 1u);
  EXPECT_EQ(L.s().ep.port, 26379);
  EXPECT_EQ(c->state(), ConnectionState::connecting);
  EXPECT_EQ(link_up(26379), kSubscribeAndAsk);
  feed(26379, std::string(kSubAck) + addr("6380") + master("6380", "3"));
  ASSERT_NE(to(6380), nullptr);
  EXPECT_EQ(to(6380)->ep.host, "127.0.0.1");
  EXPECT_FALSE(to(6380)->ep.tls);
  EXPECT_EQ(c->server_address(), "127.0.0.1:6380");  // set when the stream starts
  EXPECT_EQ(c->primary_epoch(), 0u);                 // ... these at ready
  EXPECT_FALSE(c->config_epoch());
  data_up(6380);
  ASSERT_EQ(c->state(), ConnectionState::ready);
  EXPECT_EQ(c->primary_epoch(), 1u);
  EXPECT_EQ(c->config_epoch(), 3u);
  EXPECT_EQ(take(6380), cmd({"GET", "k"}));
  feed(6380, "$1\r\nv\r\n");
  EXPECT_EQ(early.values, std::vector<std::string>{"v"});
  EXPECT_EQ(open_to(26379), 1);  // the link stays, subscribed
}

TEST_F(Sentinels, SentinelAndDataNodeCredentialsAreSeparate) {
  opt.username = "app";
  opt.password = "datapw";
  opt.client_name = "svc";
  opt.sentinel->username = "sent";
  opt.sentinel->password = "sentpw";
  opt.db = 2;
  opt.endpoint.tls = TlsOptions{};  // TLS for every stream
  make();
  c->start();
  L.drain();
  ASSERT_TRUE(L.s().ep.tls);
  EXPECT_EQ(link_up(26379, cmd({"HELLO", "3", "AUTH", "sent", "sentpw", "SETNAME", "svc"})),
            kSubscribeAndAsk);  // no SELECT on a sentinel
  feed(26379, std::string(kSubAck) + addr("6380") + master("6380", "3"));
  FakeLoop::FStream* d = to(6380);
  ASSERT_NE(d, nullptr);
  EXPECT_TRUE(d->ep.tls);
  d->h->on_connected({});
  L.drain();
  EXPECT_EQ(take(6380), cmd({"HELLO", "3", "AUTH", "app", "datapw", "SETNAME", "svc"}) +
                            cmd({"SELECT", "2"}) + cmd({"ROLE"}));
  feed(6380, kHelloReply);
  feed(6380, "+OK\r\n");
  feed(6380, kRoleMaster);
  EXPECT_EQ(c->state(), ConnectionState::ready);
}

TEST_F(Sentinels, ADeadFirstSentinelIsSkippedAndTheOneThatAnsweredIsAskedFirstNextTime) {
  make();
  c->start();
  L.drain();
  to(26379)->h->on_connected(std::make_error_code(std::errc::connection_refused));
  L.drain();
  EXPECT_EQ(c->state(), ConnectionState::connecting);
  EXPECT_EQ(link_up(26380), kSubscribeAndAsk);
  feed(26380, std::string(kSubAck) + addr("6380") + master("6380", "3"));
  data_up(6380);
  ASSERT_EQ(c->state(), ConnectionState::ready);

  // A reconnect asks 26380 first, over the link it already has (no new SUBSCRIBE).
  const int connects = L.connects;
  to(6380)->h->on_closed(std::make_error_code(std::errc::connection_reset));
  L.drain();
  while (L.connects == connects && take(26380).empty()) L.advance(1ms);
  EXPECT_EQ(L.connects, connects);  // no new stream to a sentinel
  feed(26380, addr("6380") + master("6380", "3"));
  data_up(6380);
  EXPECT_EQ(c->state(), ConnectionState::ready);
  EXPECT_EQ(c->primary_epoch(), 1u);  // the same primary
}

TEST_F(Sentinels, WhenNoSentinelNamesAPrimaryTheErrorSaysWhatEachAnswered) {
  opt.seeds.push_back(sentinel_at(26381));
  make();
  Result queued;
  c->command({"PING"}, rec(queued));
  c->start();
  L.drain();
  to(26379)->h->on_connected(std::make_error_code(std::errc::connection_refused));
  L.drain();
  EXPECT_EQ(link_up(26380), kSubscribeAndAsk);
  feed(26380, std::string(kSubAck) + std::string(kNull) + std::string(kNoSuchMaster));
  // 26381 accepts the connection but never answers: bounded by connect_timeout.
  ASSERT_NE(to(26381), nullptr);
  L.advance(opt.connect_timeout);
  ASSERT_TRUE(saw(ConnectionState::disconnected, Errc::connect_failed));
  EXPECT_EQ(c->last_error(),
            "no sentinel knows master 'mymaster': 127.0.0.1:26379 connect: " +
                std::make_error_code(std::errc::connection_refused).message() +
                "; 127.0.0.1:26380 -ERR No such master with that name; 127.0.0.1:26381 no answer "
                "within 5s");
  EXPECT_EQ(open_to(26379) + open_to(26380) + open_to(26381), 0);
  EXPECT_EQ(queued.calls, 0);  // still queued: the next round may find one
  // The usual backoff, then a new round from the first sentinel.
  const int connects = L.connects;
  L.advance(20ms);
  EXPECT_EQ(L.connects, connects + 1);
  ASSERT_NE(to(26379), nullptr);
  c->close();
  EXPECT_EQ(queued.ec, Errc::closed);
}

TEST_F(Sentinels, AReplicaIsNeverUsed) {
  make();
  c->start();
  L.drain();
  EXPECT_EQ(link_up(26379), kSubscribeAndAsk);
  feed(26379, std::string(kSubAck) + addr("6381") + master("6381", "3"));
  data_up(6381, kRoleReplica);
  EXPECT_NE(c->state(), ConnectionState::ready);
  ASSERT_TRUE(saw(ConnectionState::disconnected, Errc::connect_failed));
  EXPECT_EQ(c->last_error(),
            "127.0.0.1:6381 ROLE: the server is a replica of 127.0.0.1:6381 (link connected), not "
            "the primary");
  EXPECT_EQ(open_to(6381), 0);
  // Asked again after the backoff, on the same link.
  while (take(26379).empty()) L.advance(1ms);
  feed(26379, addr("6380") + master("6380", "4"));
  data_up(6380);
  EXPECT_EQ(c->state(), ConnectionState::ready);
  EXPECT_EQ(c->server_address(), "127.0.0.1:6380");
  EXPECT_EQ(c->config_epoch(), 4u);
}

TEST_F(Sentinels, SwitchMasterDropsTheConnectionAndDiscoveryFindsTheNewPrimary) {
  ready_on_6380();
  Result inflight;
  c->command({"INCR", "n"}, rec(inflight));
  EXPECT_EQ(take(6380), cmd({"INCR", "n"}));
  Result queued_later;
  // Other masters, and a "move" to where we already are, change nothing.
  feed(26379, switch_push("other", "6380", "6390"));
  feed(26379, switch_push("mymaster", "6379", "6380"));
  EXPECT_EQ(c->state(), ConnectionState::ready);
  EXPECT_EQ(inflight.calls, 0);

  feed(26379, switch_push("mymaster", "6380", "6381"));
  EXPECT_EQ(inflight.calls, 1);
  EXPECT_EQ(inflight.ec, Errc::outcome_unknown);  // as for any loss
  ASSERT_TRUE(saw(ConnectionState::disconnected, Errc::connection_lost));
  EXPECT_EQ(c->last_error(),
            "sentinel 127.0.0.1:26379: +switch-master 'mymaster' from 127.0.0.1:6380 to "
            "127.0.0.1:6381");
  EXPECT_EQ(open_to(6380), 0);
  c->command({"GET", "k"}, rec(queued_later));
  // Reconnect through discovery: the link's sentinel names the new primary.
  while (take(26379).empty()) L.advance(1ms);
  feed(26379, addr("6381") + master("6381", "4"));
  data_up(6381);
  ASSERT_EQ(c->state(), ConnectionState::ready);
  EXPECT_EQ(c->server_address(), "127.0.0.1:6381");
  EXPECT_EQ(c->primary_epoch(), 2u);
  EXPECT_EQ(c->config_epoch(), 4u);
  EXPECT_EQ(take(6381), cmd({"GET", "k"}));  // the queued request goes to the new primary
  EXPECT_EQ(states.back().first, ConnectionState::ready);
  c.reset();  // before queued_later goes
  EXPECT_EQ(queued_later.ec, Errc::closed);
}

std::string promoted_push(std::string_view replica, std::string_view old_primary) {
  std::string out;
  resp::append_push_header(out, 3);
  resp::append_blob(out, "message");
  resp::append_blob(out, "+promoted-slave");
  resp::append_blob(out, "slave 127.0.0.1:" + std::string(replica) + " 127.0.0.1 " +
                             std::string(replica) + " @ mymaster 127.0.0.1 " +
                             std::string(old_primary));
  return out;
}

// The failover's leader is often not the sentinel that answered: its +promoted-slave, seen on
// the watch of every sentinel, moves the connection, and the announced primary wins over the
// answering sentinel that still names the old one — until it proves not to be a master.
TEST_F(Sentinels, TheLeadersPromotionIsFollowedBeforeTheOthersKnow) {
  opt.sentinel->watch_every_sentinel = true;
  make();
  c->start();
  L.drain();
  // A watch per sentinel, then the link to the first.
  ASSERT_EQ(open_to(26379), 2);
  ASSERT_EQ(open_to(26380), 1);
  const std::string subscribe =
      cmd({"SUBSCRIBE", "+switch-master"}) + cmd({"SUBSCRIBE", "+promoted-slave"});
  FakeLoop::FStream* watch_26380 = to(26380);
  EXPECT_EQ(link_up(26380), subscribe);
  ASSERT_EQ(link_up(26379), kSubscribeAndAsk);  // the link (the newest stream to 26379)
  feed(26379, std::string(kSubAck) + addr("6380") + master("6380", "3"));
  data_up(6380);
  ASSERT_EQ(c->state(), ConnectionState::ready) << c->last_error();

  watch_26380->h->on_data(promoted_push("6381", "6380"));
  L.drain();
  ASSERT_TRUE(saw(ConnectionState::disconnected, Errc::connection_lost));
  EXPECT_EQ(c->last_error(),
            "sentinel 127.0.0.1:26380: +promoted-slave 'mymaster' from 127.0.0.1:6380 to "
            "127.0.0.1:6381");
  // The answering sentinel has not heard yet: it names 6380, which still says master.
  while (take(26379).empty()) L.advance(1ms);
  feed(26379, addr("6380") + master("6380", "3"));
  ASSERT_NE(to(6381), nullptr);
  EXPECT_EQ(open_to(6380), 0);
  data_up(6381);
  ASSERT_EQ(c->state(), ConnectionState::ready) << c->last_error();
  EXPECT_EQ(c->primary_epoch(), 2u);
  EXPECT_FALSE(c->config_epoch());  // the round's epoch was for 6380

  // A stale announcement never pins the connection: once the announced server says replica,
  // the sentinels' answer is used again.
  Result w;
  c->command({"SET", "k", "v"}, rec(w));
  EXPECT_EQ(take(6381), cmd({"SET", "k", "v"}));
  feed(6381, "-READONLY You can't write against a read only replica.\r\n");
  EXPECT_EQ(w.ec, Errc::server_error);
  while (take(26379).empty()) L.advance(1ms);
  feed(26379, addr("6382") + master("6382", "5"));
  ASSERT_NE(to(6382), nullptr);
  data_up(6382);
  EXPECT_EQ(c->server_address(), "127.0.0.1:6382");
}

// An announcement heard between streams (the primary died; the connection is reconnecting)
// is still a move: what the old primary granted may not be on the new one.
TEST_F(Sentinels, APromotionHeardWhileReconnectingCountsAsAMove) {
  opt.sentinel->watch_every_sentinel = true;
  opt.reconnect.initial = 50ms;
  opt.reconnect.max = 50ms;
  make();
  c->start();
  L.drain();
  FakeLoop::FStream* watch_26380 = to(26380);
  EXPECT_EQ(link_up(26380), cmd({"SUBSCRIBE", "+switch-master"}) + cmd({"SUBSCRIBE", "+promoted-slave"}));
  ASSERT_EQ(link_up(26379), kSubscribeAndAsk);
  feed(26379, std::string(kSubAck) + addr("6380") + master("6380", "3"));
  data_up(6380);
  ASSERT_EQ(c->state(), ConnectionState::ready);
  const auto moves = c->moves();
  to(6380)->h->on_closed(std::make_error_code(std::errc::connection_reset));
  L.drain();
  ASSERT_EQ(c->state(), ConnectionState::disconnected);
  EXPECT_EQ(c->moves(), moves);  // a drop alone is not a move
  const std::size_t heard = states.size();
  watch_26380->h->on_data(promoted_push("6381", "6380"));
  L.drain();
  EXPECT_EQ(c->moves(), moves + 1);
  ASSERT_GT(states.size(), heard);  // the state handlers hear it (and re-check their leases)
  EXPECT_EQ(states.back().first, ConnectionState::disconnected);
  EXPECT_EQ(states.back().second, Errc::connection_lost);
  // The reconnect goes to the announced primary, whatever the answering sentinel says.
  while (take(26379).empty()) L.advance(1ms);
  feed(26379, addr("6380") + master("6380", "3"));
  ASSERT_NE(to(6381), nullptr);
  data_up(6381);
  EXPECT_EQ(c->server_address(), "127.0.0.1:6381");
}

TEST_F(Sentinels, SwitchMasterDuringTheHandshakeDropsItToo) {
  make();
  c->start();
  L.drain();
  EXPECT_EQ(link_up(26379), kSubscribeAndAsk);
  feed(26379, std::string(kSubAck) + addr("6380") + master("6380", "3"));
  to(6380)->h->on_connected({});
  L.drain();
  feed(26379, switch_push("mymaster", "6380", "6381"));
  EXPECT_EQ(open_to(6380), 0);
  EXPECT_TRUE(saw(ConnectionState::disconnected, Errc::connection_lost));
}

TEST_F(Sentinels, ReadonlyFromTheServerDropsTheConnection) {
  ready_on_6380();
  Result w, behind;
  c->command({"SET", "k", "v"}, rec(w));
  c->command({"GET", "k"}, rec(behind));
  take(6380);
  feed(6380, "-READONLY You can't write against a read only replica.\r\n");
  EXPECT_EQ(w.calls, 1);
  EXPECT_EQ(w.ec, Errc::server_error);  // its own reply first: known not applied
  EXPECT_EQ(w.values,
            std::vector<std::string>{"READONLY You can't write against a read only replica."});
  EXPECT_EQ(behind.ec, Errc::outcome_unknown);
  EXPECT_TRUE(saw(ConnectionState::disconnected, Errc::connection_lost));
  EXPECT_EQ(c->last_error(), "127.0.0.1:6380 answered -READONLY: it is no longer the primary");
  EXPECT_EQ(open_to(6380), 0);
}

TEST_F(Sentinels, ReadonlyWithoutSentinelDiscoveryIsJustAnError) {
  opt.sentinel.reset();
  opt.seeds.clear();
  up();
  Result w;
  c->command({"SET", "k", "v"}, rec(w));
  L.take();
  L.feed("-READONLY You can't write against a read only replica.\r\n");
  EXPECT_EQ(w.ec, Errc::server_error);
  EXPECT_EQ(c->state(), ConnectionState::ready);
  EXPECT_EQ(c->server_address(), "127.0.0.1:6379");
  EXPECT_EQ(c->primary_epoch(), 1u);
  EXPECT_FALSE(c->config_epoch());
}

TEST_F(Sentinels, ALostLinkIsRemadeAndAMoveMissedMeanwhileIsNoticed) {
  ready_on_6380();
  to(26379)->h->on_closed(std::make_error_code(std::errc::connection_reset));
  L.drain();
  EXPECT_EQ(c->state(), ConnectionState::ready);  // the data connection is fine
  EXPECT_EQ(open_to(26379), 0);
  // After a backoff the link is re-made (from the first sentinel), subscribed again.
  while (to(26379) == nullptr) L.advance(1ms);
  EXPECT_EQ(link_up(26379), kSubscribeAndAsk);
  // Still the same primary: nothing happens.
  feed(26379, std::string(kSubAck) + addr("6380") + master("6380", "3"));
  EXPECT_EQ(c->state(), ConnectionState::ready);

  // Lost again; the re-made link names another primary: a move we missed.
  to(26379)->h->on_closed(std::make_error_code(std::errc::connection_reset));
  L.drain();
  while (to(26379) == nullptr) L.advance(1ms);
  EXPECT_EQ(link_up(26379), kSubscribeAndAsk);
  feed(26379, std::string(kSubAck) + addr("6381") + master("6381", "5"));
  EXPECT_TRUE(saw(ConnectionState::disconnected, Errc::connection_lost));
  EXPECT_EQ(c->last_error(),
            "sentinel 127.0.0.1:26379 names 127.0.0.1:6381 as the primary of 'mymaster', not "
            "127.0.0.1:6380");
  while (take(26379).empty()) L.advance(1ms);
  feed(26379, addr("6381") + master("6381", "5"));
  data_up(6381);
  EXPECT_EQ(c->state(), ConnectionState::ready);
  EXPECT_EQ(c->primary_epoch(), 2u);
}

TEST_F(Sentinels, TheSameAddressWithAnotherEpochIsAnotherPrimary) {
  ready_on_6380();
  EXPECT_EQ(c->primary_epoch(), 1u);
  // A failover away and back while we were disconnected: same address, new epoch.
  to(6380)->h->on_closed(std::make_error_code(std::errc::connection_reset));
  L.drain();
  while (take(26379).empty()) L.advance(1ms);
  feed(26379, addr("6380") + master("6380", "5"));
  data_up(6380);
  ASSERT_EQ(c->state(), ConnectionState::ready);
  EXPECT_EQ(c->primary_epoch(), 2u);
  EXPECT_EQ(c->config_epoch(), 5u);
  // Unknown epochs (SENTINEL MASTER refused) never count as a change.
  to(6380)->h->on_closed(std::make_error_code(std::errc::connection_reset));
  L.drain();
  while (take(26379).empty()) L.advance(1ms);
  feed(26379, addr("6380") + "-NOPERM no\r\n");
  data_up(6380);
  ASSERT_EQ(c->state(), ConnectionState::ready);
  EXPECT_EQ(c->primary_epoch(), 2u);
  EXPECT_FALSE(c->config_epoch());
}

TEST_F(Sentinels, ClosingDuringDiscoveryLeavesNothingBehind) {
  make();
  Result queued;
  c->command({"PING"}, rec(queued));
  c->start();
  L.drain();
  to(26379)->h->on_connected({});
  L.drain();
  c->close();
  L.drain();
  EXPECT_EQ(queued.ec, Errc::closed);
  EXPECT_EQ(open_to(26379), 0);
  EXPECT_EQ(c->state(), ConnectionState::closed);
}

TEST_F(Sentinels, WithoutAutoReconnectTheLinkGoesWithTheConnection) {
  opt.auto_reconnect = false;
  ready_on_6380();
  to(6380)->h->on_closed(std::make_error_code(std::errc::connection_reset));
  L.drain();
  EXPECT_EQ(c->state(), ConnectionState::disconnected);
  EXPECT_EQ(open_to(26379), 0);
  L.advance(1s);
  EXPECT_EQ(open_to(26379), 0);
}

TEST_F(Sentinels, AStateHandlerMayDestroyTheConnectionWhenDiscoveryFails) {
  opt.seeds = {sentinel_at(26379)};
  make();
  c->add_state_handler([this](ConnectionState s, std::error_code) {
    if (s == ConnectionState::disconnected) c.reset();
  });
  c->start();
  L.drain();
  to(26379)->h->on_connected(std::make_error_code(std::errc::connection_refused));
  L.drain();
  EXPECT_EQ(c, nullptr);
}

TEST_F(Sentinels, ASentinelUrlIsAllItTakes) {
  ASSERT_FALSE(parse_url("redis-sentinel://127.0.0.1:26379,127.0.0.1:26380#mymaster", opt));
  ready_on_6380();
  EXPECT_EQ(c->server().port, 6380);
}

}  // namespace
}  // namespace lockwire::loop
