// Connection on UvLoop against real redis-servers (misbehaving servers: bad_server_test.cpp).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "lockwire/loop/connection.hpp"
#include "lockwire/loop/uv_loop.hpp"
#include "lockwire/resp/encoder.hpp"
#include "lockwire/resp/reply.hpp"
#include "loop_check.hpp"
#include "redis_server.hpp"

namespace lockwire::loop {
namespace {

using namespace std::chrono_literals;
using test::run_until;

// Destroys the connection while the test's locals its handlers refer to are still alive (it
// fails what is pending with Errc::closed). The loop's emptiness is checked by EmptyLoopAtExit
// when the test ends.
void finish(std::unique_ptr<Connection>& c) {
  c.reset();
}

std::string str(resp::Frame f) {
  const std::size_t v = resp::value_index(f);
  return v < f.size() ? std::string(f[v].value) : std::string();
}

ConnectionOptions opts_for(const test::RedisServer& s) {
  ConnectionOptions o;
  std::string why;
  EXPECT_FALSE(parse_url(s.url(), o, &why)) << why;
  o.reconnect.initial = 5ms;
  o.reconnect.max = 50ms;
  return o;
}

std::unique_ptr<Connection> ready_conn(UvLoop& loop, ConnectionOptions o) {
  auto c = std::make_unique<Connection>(loop, std::move(o));
  c->start();
  EXPECT_TRUE(run_until(loop, [&] { return c->state() == ConnectionState::ready; }))
      << c->last_error();
  return c;
}

TEST(Connection, PipelinesThousandsOfCommandsInOrder) {
  test::RedisServer server;
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  auto c = ready_conn(loop, opts_for(server));
  EXPECT_GT(c->client_id(), 0);
  constexpr int kN = 5000;
  int done = 0, mismatches = 0;
  for (int i = 0; i < kN; ++i) {
    c->command({"INCR", "counter"}, [&, i](std::error_code ec, const Replies& r) {
      if (ec || resp::to_int64(r[0][0]) != i + 1 || done != i) ++mismatches;
      ++done;
    });
  }
  EXPECT_GT(c->in_flight(), 0u);
  // Large values cross many reads.
  const std::string big(3 * 1024 * 1024 + 17, 'b');
  std::string got_big;
  c->command({"SET", "big", big}, [](std::error_code ec, const Replies&) { EXPECT_FALSE(ec); });
  c->command({"GET", "big"}, [&](std::error_code ec, const Replies& r) {
    EXPECT_FALSE(ec);
    got_big = str(r[0]);
  });
  ASSERT_TRUE(run_until(loop, [&] { return done == kN && !got_big.empty(); }));
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(got_big, big);
  finish(c);
}

TEST(Connection, TransactionsAndTheWatchLane) {
  test::RedisServer server;
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  auto c = ready_conn(loop, opts_for(server));
  auto other = ready_conn(loop, opts_for(server));

  // Atomic block: one request, all replies.
  Request block;
  resp::append_command(block.bytes, {"MULTI"});
  resp::append_command(block.bytes, {"INCR", "n"});
  resp::append_command(block.bytes, {"INCR", "n"});
  resp::append_command(block.bytes, {"EXEC"});
  block.commands = 4;
  std::vector<std::int64_t> exec_result;
  c->send(std::move(block), [&](std::error_code ec, const Replies& r) {
    ASSERT_FALSE(ec);
    ASSERT_EQ(r.size(), 4u);
    resp::Frame e = r[3];
    ASSERT_EQ(e[0].type, resp::Type::array);
    for (std::size_t i = 1; i < e.size(); ++i) exec_result.push_back(*resp::to_int64(e[i]));
  });
  ASSERT_TRUE(run_until(loop, [&] { return !exec_result.empty(); }));
  EXPECT_EQ(exec_result, (std::vector<std::int64_t>{1, 2}));

  // WATCH + read; another client changes the key; EXEC aborts (nil).
  auto attempt = [&](bool interfere) {
    int outcome = -1;  // 1 committed, 0 aborted
    Request w;
    resp::append_command(w.bytes, {"WATCH", "n"});
    resp::append_command(w.bytes, {"GET", "n"});
    w.commands = 2;
    c->watch(std::move(w), [&](std::error_code ec, const Replies& r, WatchTxn txn) {
      ASSERT_FALSE(ec);
      ASSERT_TRUE(txn.valid());
      const auto v = *resp::to_int64(r[1][0]);
      auto run_exec = [&, v, t = std::make_shared<WatchTxn>(std::move(txn))] {
        Request b;
        resp::append_command(b.bytes, {"MULTI"});
        resp::append_command(b.bytes, "SET", "n", v + 10);
        resp::append_command(b.bytes, {"EXEC"});
        b.commands = 3;
        t->exec(std::move(b), [&](std::error_code ec2, const Replies& r2) {
          ASSERT_FALSE(ec2);
          outcome = resp::is_null(r2[2][0]) ? 0 : 1;
        });
      };
      if (!interfere) return run_exec();
      other->command({"INCR", "n"}, [run_exec](std::error_code, const Replies&) { run_exec(); });
    });
    EXPECT_TRUE(run_until(loop, [&] { return outcome != -1; }));
    return outcome;
  };
  EXPECT_EQ(attempt(true), 0);
  EXPECT_EQ(attempt(false), 1);
  std::string n;
  c->command({"GET", "n"}, [&](std::error_code, const Replies& r) { n = str(r[0]); });
  ASSERT_TRUE(run_until(loop, [&] { return !n.empty(); }));
  EXPECT_EQ(n, "13");
  other.reset();
  finish(c);
}

TEST(Connection, PubSubPushesInterleaveWithReplies) {
  test::RedisServer server;
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  auto sub = ready_conn(loop, opts_for(server));
  auto pub = ready_conn(loop, opts_for(server));
  std::vector<std::string> messages;
  int acks = 0;
  sub->add_push_handler([&](resp::Frame f) {
    std::vector<std::size_t> el;
    resp::elements(f, 0, el);
    if (resp::equals(f[el[0]], "subscribe")) ++acks;
    if (resp::equals(f[el[0]], "message")) messages.emplace_back(f[el[2]].value);
  });
  bool subscribed = false;
  sub->command({"SUBSCRIBE", "ch"}, [&](std::error_code ec, const Replies&) {
    EXPECT_FALSE(ec);
    subscribed = true;
  });
  ASSERT_TRUE(run_until(loop, [&] { return subscribed && acks == 1; }));
  constexpr int kN = 300;
  int gets = 0, bad = 0;
  sub->command({"SET", "k", "v"}, [](std::error_code, const Replies&) {});
  for (int i = 0; i < kN; ++i) {
    pub->command({"PUBLISH", "ch", std::to_string(i)}, [](std::error_code, const Replies&) {});
    // RESP3 allows commands while subscribed: replies and pushes share the stream.
    sub->command({"GET", "k"}, [&](std::error_code ec, const Replies& r) {
      if (ec || str(r[0]) != "v") ++bad;
      ++gets;
    });
  }
  ASSERT_TRUE(run_until(loop, [&] { return gets == kN && messages.size() == kN; }));
  EXPECT_EQ(bad, 0);
  for (int i = 0; i < kN; ++i) EXPECT_EQ(messages[i], std::to_string(i));
  pub.reset();
  finish(sub);
}

TEST(Connection, SubscribeRefusedByTheAclFailsOnlyThatCommand) {
  // A Redis 7 user created without channel permissions (resetchannels, the default) gets an
  // error *reply* to SUBSCRIBE; the connection must stay usable.
  test::RedisServer server;
  server.cli({"ACL", "SETUSER", "nochan", "on", ">pw", "resetchannels", "~*", "+@all"});
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  ConnectionOptions o = opts_for(server);
  o.username = "nochan";
  o.password = "pw";
  auto c = ready_conn(loop, o);
  std::error_code sub_ec;
  bool subscribed = false, pinged = false;
  c->command({"SUBSCRIBE", "ch"}, [&](std::error_code ec, const Replies& r) {
    sub_ec = ec;
    EXPECT_EQ(r.size(), 1u);
    if (r.size() == 1) {
      EXPECT_TRUE(str(r[0]).starts_with("NOPERM")) << str(r[0]);
    }
    subscribed = true;
  });
  c->command({"PING"}, [&](std::error_code ec, const Replies& r) {
    EXPECT_FALSE(ec);
    EXPECT_EQ(str(r[0]), "PONG");
    pinged = true;
  });
  ASSERT_TRUE(run_until(loop, [&] { return subscribed && pinged; }));
  EXPECT_EQ(sub_ec, Errc::server_error);
  EXPECT_EQ(c->state(), ConnectionState::ready);
  finish(c);
}

TEST(Connection, TrackingInvalidationsIncludingOnExpiry) {
  test::RedisServer server;
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  auto c = ready_conn(loop, opts_for(server));
  auto writer = ready_conn(loop, opts_for(server));
  std::vector<std::string> invalidated;
  c->add_push_handler([&](resp::Frame f) {
    if (!resp::equals(f[1], "invalidate")) return;
    if (f[2].type == resp::Type::array) {
      for (std::size_t i = 3; i < f.size(); ++i) invalidated.emplace_back(f[i].value);
    }
  });
  int ready = 0;
  auto ok = [&](std::error_code ec, const Replies&) {
    EXPECT_FALSE(ec);
    ++ready;
  };
  c->command({"CLIENT", "TRACKING", "ON"}, ok);
  writer->command({"SET", "mod", "1"}, ok);
  writer->command({"SET", "exp", "1", "PX", "150"}, ok);
  ASSERT_TRUE(run_until(loop, [&] { return ready == 3; }));
  c->command({"GET", "mod"}, ok);
  c->command({"GET", "exp"}, ok);
  ASSERT_TRUE(run_until(loop, [&] { return ready == 5; }));
  writer->command({"SET", "mod", "2"}, ok);
  ASSERT_TRUE(run_until(
      loop, [&] { return std::count(invalidated.begin(), invalidated.end(), "mod") == 1; }));
  // Nobody touches "exp": the server's active expiry must still tell us.
  ASSERT_TRUE(run_until(
      loop, [&] { return std::count(invalidated.begin(), invalidated.end(), "exp") == 1; }, 5s));
  writer.reset();
  finish(c);
}

TEST(Connection, AuthWithPasswordAndAclUser) {
  test::RedisServer server({"--requirepass", "s3cret"});
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  auto o = opts_for(server);
  o.password = "s3cret";
  o.client_name = "lockwire-test";
  auto c = ready_conn(loop, o);
  std::string name;
  c->command({"CLIENT", "GETNAME"}, [&](std::error_code, const Replies& r) { name = str(r[0]); });
  ASSERT_TRUE(run_until(loop, [&] { return !name.empty(); }));
  EXPECT_EQ(name, "lockwire-test");
  bool made = false;
  c->command({"ACL", "SETUSER", "alice", "on", ">alicepw", "~*", "&*", "+@all"},
             [&](std::error_code ec, const Replies&) { made = !ec; });
  ASSERT_TRUE(run_until(loop, [&] { return made; }));

  auto a = opts_for(server);
  a.username = "alice";
  a.password = "alicepw";
  auto alice = ready_conn(loop, a);
  std::string who;
  alice->command({"ACL", "WHOAMI"}, [&](std::error_code, const Replies& r) { who = str(r[0]); });
  ASSERT_TRUE(run_until(loop, [&] { return !who.empty(); }));
  EXPECT_EQ(who, "alice");

  auto bad = opts_for(server);
  bad.password = "wrong";
  Connection b(loop, bad);
  std::error_code why;
  b.add_state_handler([&](ConnectionState s, std::error_code ec) {
    if (s == ConnectionState::disconnected && !why) why = ec;
  });
  std::error_code req;
  b.command({"PING"}, [&](std::error_code ec, const Replies&) { req = ec; });
  b.start();
  ASSERT_TRUE(run_until(loop, [&] { return why && req; }));
  EXPECT_EQ(why, Errc::auth_failed);
  EXPECT_EQ(req, Errc::not_sent);
  EXPECT_NE(b.last_error().find("WRONGPASS"), std::string::npos) << b.last_error();
  b.close();
  alice.reset();
  finish(c);
}

TEST(Connection, SelectsTheDatabaseAndWorksOverUnixSockets) {
  test::RedisServer server({}, /*unix_socket=*/true);
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  ConnectionOptions o;
  std::string why;
  ASSERT_FALSE(parse_url("unix://" + server.unix_path() + "?db=5", o, &why)) << why;
  auto c = ready_conn(loop, o);
  bool set = false;
  c->command({"SET", "where", "db5"}, [&](std::error_code ec, const Replies&) { set = !ec; });
  ASSERT_TRUE(run_until(loop, [&] { return set; }));
  EXPECT_EQ(server.cli({"-n", "5", "GET", "where"}), "db5\n");
  EXPECT_EQ(server.cli({"-n", "0", "EXISTS", "where"}), "0\n");
  finish(c);
}

TEST(Connection, DebugSleepSeparatesNotSentFromOutcomeUnknown) {
  // DEBUG is on by default before Redis 7.0, which added the option (and refuses it otherwise).
  const std::vector<std::string> debug = {"--enable-debug-command", "yes"};
  test::RedisServer server(test::server_accepts(debug) ? debug : std::vector<std::string>{});
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  auto c = ready_conn(loop, opts_for(server));
  // A holder takes the lane; the server then sleeps, so its WATCH reply is late.
  std::error_code slept, written_ec, queued_ec, holder_ec;
  bool holder_done = false;
  c->command({"DEBUG", "SLEEP", "0.4"}, [&](std::error_code ec, const Replies&) {
    slept = ec ? ec : make_error_code(Errc::ok);
  });
  RequestOptions t;
  t.timeout = 100ms;
  int late_value = 0;
  t.on_late_reply = [&](std::error_code ec, const Replies& r) {
    EXPECT_FALSE(ec);
    late_value = static_cast<int>(*resp::to_int64(r[0][0]));
  };
  c->command(
      {"INCR", "x"}, [&](std::error_code ec, const Replies&) { written_ec = ec; }, t);
  Request w;
  resp::append_command(w.bytes, {"WATCH", "a"});
  c->watch(std::move(w), [&](std::error_code ec, const Replies&, WatchTxn) {
    holder_ec = ec;
    holder_done = true;
  });
  // Waits for the lane (held by the WATCH in flight): never written.
  Request w2;
  resp::append_command(w2.bytes, {"WATCH", "b"});
  RequestOptions t2;
  t2.timeout = 100ms;
  c->watch(
      std::move(w2), [&](std::error_code ec, const Replies&, WatchTxn) { queued_ec = ec; }, t2);
  ASSERT_TRUE(run_until(loop, [&] { return written_ec && queued_ec; }));
  EXPECT_EQ(written_ec, Errc::outcome_unknown);
  EXPECT_EQ(queued_ec, Errc::not_sent);
  // The late reply is read and handed over; the stream stays in sync.
  ASSERT_TRUE(run_until(loop, [&] { return late_value == 1 && holder_done; }));
  EXPECT_FALSE(holder_ec);
  std::string x;
  c->command({"GET", "x"}, [&](std::error_code, const Replies& r) { x = str(r[0]); });
  ASSERT_TRUE(run_until(loop, [&] { return !x.empty(); }));
  EXPECT_EQ(x, "1");  // applied exactly once, never replayed
  finish(c);
}

TEST(Connection, ClientKillAndPauseAreSurvived) {
  test::RedisServer server;
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  auto c = ready_conn(loop, opts_for(server));
  auto admin = ready_conn(loop, opts_for(server));
  int readies = 0;
  std::vector<std::error_code> drops;
  c->add_state_handler([&](ConnectionState s, std::error_code ec) {
    if (s == ConnectionState::ready) ++readies;
    if (s == ConnectionState::disconnected) drops.push_back(ec);
  });
  const std::int64_t first_id = c->client_id();
  // In flight when killed: the server is paused first so the reply cannot have been sent.
  std::error_code inflight_ec;
  bool paused = false;
  admin->command({"CLIENT", "PAUSE", "300"},
                 [&](std::error_code ec, const Replies&) { paused = !ec; });
  ASSERT_TRUE(run_until(loop, [&] { return paused; }));
  RequestOptions late;
  late.timeout = 100ms;
  std::string late_reply;
  late.on_late_reply = [&](std::error_code ec, const Replies& r) {
    EXPECT_FALSE(ec);
    late_reply = str(r[0]);
  };
  std::error_code paused_ec;
  c->command(
      {"SET", "p", "1"}, [&](std::error_code ec, const Replies&) { paused_ec = ec; }, late);
  ASSERT_TRUE(run_until(loop, [&] { return bool(paused_ec); }));
  EXPECT_EQ(paused_ec, Errc::outcome_unknown);
  ASSERT_TRUE(run_until(loop, [&] { return late_reply == "OK"; }));  // after the pause ends

  c->command({"BLPOP", "nothing", "0"},
             [&](std::error_code ec, const Replies&) { inflight_ec = ec; });
  bool killed = false;
  admin->command({"CLIENT", "KILL", "ID", std::to_string(first_id)},
                 [&](std::error_code ec, const Replies&) { killed = !ec; });
  ASSERT_TRUE(run_until(loop, [&] { return killed && bool(inflight_ec) && readies == 1; }));
  EXPECT_EQ(inflight_ec, Errc::outcome_unknown);
  ASSERT_EQ(drops.size(), 1u);
  EXPECT_EQ(drops[0], Errc::connection_lost);
  EXPECT_NE(c->client_id(), first_id);
  admin.reset();
  finish(c);
}

// The Redis facts fence_abandoned rests on, and that a real server accepts what it sends.
TEST(Connection, FenceKillsAbandonedConnectionsOnTheRealServer) {
  test::RedisServer server;
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  auto admin = ready_conn(loop, opts_for(server));

  // 1. A killed connection's later bytes are discarded: a raw socket stands for the abandoned
  //    connection (`CLIENT INFO` tells its id and address, as the handshake learns them).
  const int raw = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(server.port());
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(raw, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  const std::string info_cmd = "*2\r\n$6\r\nCLIENT\r\n$4\r\nINFO\r\n";
  ASSERT_EQ(::write(raw, info_cmd.data(), info_cmd.size()), static_cast<ssize_t>(info_cmd.size()));
  // The whole bulk reply ($<len>\r\n<text>\r\n), with a bounded wait for each read: its last
  // field differs between servers (6.2 has no resp=).
  timeval tv{5, 0};
  ::setsockopt(raw, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string reply;
  char buf[4096];
  auto complete = [&] {
    const std::size_t eol = reply.find("\r\n");
    if (reply.empty() || reply[0] != '$' || eol == std::string::npos) return false;
    return reply.size() >= eol + 2 + std::stoul(reply.substr(1, eol - 1)) + 2;
  };
  while (!complete()) {
    const ssize_t n = ::read(raw, buf, sizeof buf);
    ASSERT_GT(n, 0) << "CLIENT INFO unanswered within 5 s; so far: " << reply;
    reply.append(buf, static_cast<std::size_t>(n));
  }
  const std::size_t body = reply.find("\r\n") + 2;
  const std::string info = " " + reply.substr(body, std::stoul(reply.substr(1, body - 3))) + " ";
  auto field = [&](std::string_view name) {
    const std::size_t at = info.find(std::string(" ") + std::string(name) + "=");
    const std::size_t from = info.find('=', at) + 1;
    return info.substr(from, info.find(' ', from) - from);
  };
  const std::string id = field("id");
  const std::string addr = field("addr");
  std::int64_t killed = -1;
  admin->command({"CLIENT", "KILL", "ID", id, "ADDR", addr},
                 [&](std::error_code ec, const Replies& r) {
                   EXPECT_FALSE(ec);
                   killed = resp::to_int64(r[0][0]).value_or(-1);
                 });
  ASSERT_TRUE(run_until(loop, [&] { return killed >= 0; }));
  EXPECT_EQ(killed, 1);
  const std::string late = "*3\r\n$3\r\nSET\r\n$4\r\nlate\r\n$1\r\n1\r\n";
  (void)::write(raw, late.data(), late.size());  // may fail already: the server closed it
  std::int64_t exists = -1;
  admin->command({"EXISTS", "late"}, [&](std::error_code, const Replies& r) {
    exists = resp::to_int64(r[0][0]).value_or(-1);
  });
  ASSERT_TRUE(run_until(loop, [&] { return exists >= 0; }));
  EXPECT_EQ(exists, 0);
  ::close(raw);

  // 2. A fencing connection's handshake is accepted as sent: after a reconnect it kills its old
  //    connection by ID and ADDR (already gone here: :0), with no failed or rejected call.
  ConnectionOptions fo = opts_for(server);
  fo.fence_abandoned = true;
  auto c = ready_conn(loop, fo);
  int readies = 0;
  c->add_state_handler([&](ConnectionState s, std::error_code) {
    if (s == ConnectionState::ready) ++readies;
  });
  const std::int64_t first_id = c->client_id();
  bool done = false;
  admin->command({"CLIENT", "KILL", "ID", std::to_string(first_id)},
                 [&](std::error_code, const Replies&) { done = true; });
  ASSERT_TRUE(run_until(loop, [&] { return done && readies == 1; }));
  EXPECT_NE(c->client_id(), first_id);
  std::string stats;
  admin->command({"INFO", "commandstats"},
                 [&](std::error_code, const Replies& r) { stats = str(r[0]); });
  ASSERT_TRUE(run_until(loop, [&] { return !stats.empty(); }));
  // Two kills by the test (raw socket, first_id) plus the fence; CLIENT INFO: the raw socket and
  // both handshakes.
  EXPECT_NE(stats.find("cmdstat_client|kill:calls=3,"), std::string::npos) << stats;
  EXPECT_NE(stats.find("cmdstat_client|info:calls=3,"), std::string::npos) << stats;
  EXPECT_EQ(stats.find("rejected_calls=1"), std::string::npos) << stats;
  EXPECT_EQ(stats.find("failed_calls=1"), std::string::npos) << stats;
  admin.reset();
  finish(c);
}

TEST(Connection, ServerKilledAndRestartedReconnectsAndResubscribes) {
  test::RedisServer server;
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  auto c = ready_conn(loop, opts_for(server));
  int readies = 0, disconnects = 0, connect_attempts = 0;
  std::vector<std::string> messages;
  c->add_push_handler([&](resp::Frame f) {
    if (resp::equals(f[1], "message")) messages.emplace_back(f[3].value);
  });
  auto resubscribe = [&] { c->command({"SUBSCRIBE", "events"}, [](auto, auto&) {}); };
  c->add_state_handler([&](ConnectionState s, std::error_code) {
    if (s == ConnectionState::ready) {
      ++readies;
      resubscribe();  // the hook upper layers use after every (re)connect
    }
    if (s == ConnectionState::disconnected) ++disconnects;
    if (s == ConnectionState::connecting) ++connect_attempts;
  });
  resubscribe();
  std::error_code lost;
  c->command({"BLPOP", "q", "0"}, [&](std::error_code ec, const Replies&) { lost = ec; });
  ASSERT_TRUE(run_until(loop, [&] { return c->in_flight() == 1; }));
  server.stop();
  ASSERT_TRUE(run_until(loop, [&] { return bool(lost) && connect_attempts >= 3; }));
  EXPECT_EQ(lost, Errc::outcome_unknown);
  EXPECT_GE(disconnects, 3);  // refused attempts, with backoff between them
  std::string queued;
  c->command({"PING"}, [&](std::error_code ec, const Replies& r) {
    EXPECT_FALSE(ec);
    queued = str(r[0]);
  });
  server.restart();
  ASSERT_TRUE(run_until(loop, [&] { return readies == 1 && queued == "PONG"; }));
  // After re-subscribing, pushes flow again.
  int published = 0;
  auto pub = ready_conn(loop, opts_for(server));
  ASSERT_TRUE(run_until(loop, [&] {
    if (!messages.empty()) return true;
    pub->command({"PUBLISH", "events", "back"}, [&](auto, auto&) { ++published; });
    return false;
  }));
  EXPECT_EQ(messages[0], "back");
  pub.reset();
  finish(c);
}

// A server frozen with SIGSTOP (sockets open, nothing answered) under a 50 ms health check:
// the connection is dropped (health_check_failed), then made again once the server resumes.
// With `request`, a GET is written after the freeze: its missing reply, not an idle PING, is
// what drops the connection, and the GET is told outcome_unknown.
void frozen_server_is_dropped(bool request) {
  test::RedisServer server;
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  auto o = opts_for(server);
  o.health_check_interval = 50ms;
  o.connect_timeout = 200ms;
  auto c = ready_conn(loop, o);
  std::vector<std::error_code> drops;
  int readies = 0;
  c->add_state_handler([&](ConnectionState s, std::error_code ec) {
    if (s == ConnectionState::disconnected) drops.push_back(ec);
    if (s == ConnectionState::ready) ++readies;
  });
  server.pause();
  std::optional<std::error_code> answer;
  if (request) {
    c->send(RequestBuilder().add("GET", "k").done(),
            [&](std::error_code ec, const Replies&) { answer = ec; });
  }
  ASSERT_TRUE(run_until(loop, [&] { return !drops.empty() && (!request || answer.has_value()); }));
  EXPECT_EQ(drops[0], Errc::health_check_failed);
  if (request) {
    EXPECT_EQ(*answer, Errc::outcome_unknown);
    EXPECT_NE(c->last_error().find("no reply to a request"), std::string::npos) << c->last_error();
  }
  server.resume();
  ASSERT_TRUE(run_until(loop, [&] { return readies == 1; }));
  finish(c);
}

TEST(Connection, HealthCheckDropsAFrozenServerAndRecovers) {
  frozen_server_is_dropped(false);
}

// A request that gets nothing back for a whole interval drops the connection too, as an
// unanswered PING does: without it a stream stuck in TCP's retransmission backoff after a
// partition heals held every request behind it for as long (#28, partition swarm).
TEST(Connection, HealthCheckDropsAStreamWhoseRequestGetsNoReply) {
  frozen_server_is_dropped(true);
}

// Issue #31: a server without HELLO (renamed away here) echoes the arguments it was sent —
// AUTH's password among them. The connection's error keeps the server's words, never the
// password.
TEST(Connection, AnEchoedHelloNeverShowsThePassword) {
  test::RedisServer server({"--requirepass", "hunter2-secret", "--rename-command", "HELLO", ""});
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  auto o = opts_for(server);
  o.password = "hunter2-secret";
  o.auto_reconnect = false;
  Connection c(loop, o);
  std::error_code why;
  c.add_state_handler([&](ConnectionState s, std::error_code ec) {
    if (s == ConnectionState::disconnected && ec && !why) why = ec;
  });
  c.start();
  ASSERT_TRUE(run_until(loop, [&] { return bool(why); }));
  EXPECT_EQ(why, Errc::resp3_refused);
  EXPECT_NE(c.last_error().find("unknown command"), std::string::npos) << c.last_error();
  EXPECT_EQ(c.last_error().find("hunter2"), std::string::npos) << c.last_error();
  c.close();
}

}  // namespace
}  // namespace lockwire::loop
