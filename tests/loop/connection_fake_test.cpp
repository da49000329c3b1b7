// The multiplexer over the fake loop (fake_loop.hpp): pipelining and reply matching, error
// replies, pushes and SUBSCRIBE acknowledgements, request checks, deadlines, the transaction lane,
// malformed input, limits, close. Every test here and in handshake_fake_test.cpp ends with the
// fake loop empty (Fixture::TearDown).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "fake_loop.hpp"
#include "lockwire/loop/connection.hpp"
#include "lockwire/resp/encoder.hpp"

namespace lockwire::loop {
namespace {

using namespace fake;

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

// A block's replies are kept as views into the read they came in, and copied only when a read
// ends with the block incomplete: at every split of the bytes (and byte by byte) the handler
// sees the same nodes, values and formats as when the block arrives in one read — streamed
// strings and values spanning reads (which the parser assembles in its own scratch) included.
TEST_F(Fixture, BlockRepliesAreTheSameAtEverySplitOfTheRead) {
  up();
  const std::string replies =
      "+OK\r\n+QUEUED\r\n-ERR no such key\r\n$5\r\nhello\r\n=9\r\ntxt:a b c\r\n"
      "$?\r\n;3\r\nabc\r\n;2\r\nde\r\n;0\r\n*3\r\n:1\r\n%1\r\n+k\r\n$1\r\nv\r\n_\r\n"
      ",3.5\r\n$12\r\nspans\r\nreads\r\n*2\r\n:7\r\n#t\r\n";
  constexpr int kReplies = 10;
  std::string seen;
  auto dump = [&seen](std::error_code ec, const Replies& rep) {
    seen = ec ? "error;" : "ok;";
    for (std::size_t i = 0; i < rep.size(); ++i) {
      for (const resp::Node& n : rep[i]) {
        for (std::uint64_t x : {std::uint64_t{static_cast<std::uint8_t>(n.type)},
                                std::uint64_t{n.depth}, n.size}) {
          seen += std::to_string(x);
          seen += '/';
        }
        seen.append(n.value).append("/").append(n.format).append("|");
      }
      seen += ";";
    }
  };
  auto send_block = [&] {
    RequestBuilder b;
    for (int i = 0; i < kReplies; ++i) {
      const std::string key(1, static_cast<char>('a' + i));
      b.add({"GET", key});
    }
    c->send(b.done(), dump);
    L.take();
  };
  send_block();
  L.feed(replies);
  const std::string whole = seen;
  ASSERT_NE(whole.find("abcde"), std::string::npos) << whole;
  ASSERT_NE(whole.find("spans\r\nreads"), std::string::npos) << whole;
  for (std::size_t cut = 1; cut < replies.size(); ++cut) {
    seen.clear();
    send_block();
    // Each part from its own short-lived buffer: views of an ended read would read freed bytes.
    L.feed(std::string(replies.substr(0, cut)));
    EXPECT_TRUE(seen.empty()) << cut;
    L.feed(std::string(replies.substr(cut)));
    EXPECT_EQ(seen, whole) << "split at " << cut;
  }
  seen.clear();
  send_block();
  for (char ch : replies) L.feed(std::string(1, ch));
  EXPECT_EQ(seen, whole) << "byte by byte";
  EXPECT_EQ(c->in_flight(), 0u);
}

// command() on a ready connection encodes straight into the stream (no Request); the bytes must
// be exactly those the builder writes, short or long (past its stack buffer), odd bytes included.
TEST_F(Fixture, CommandsOnAReadyConnectionAreWrittenAsTheBuilderEncodesThem) {
  up();
  const std::string longv(300, 'v');
  Result r[5];
  c->command({"SET", "k", "1"}, rec(r[0]));
  c->command({"GET", ""}, rec(r[1]));
  c->command({"SET", "k", longv}, rec(r[2]));
  c->command({"PING"}, rec(r[3]));
  c->command({"ECHO", "a\r\nb"}, rec(r[4]));
  EXPECT_EQ(L.take(), cmd({"SET", "k", "1"}) + cmd({"GET", ""}) + cmd({"SET", "k", longv}) +
                          cmd({"PING"}) + cmd({"ECHO", "a\r\nb"}));
  EXPECT_EQ(c->in_flight(), 5u);
  L.feed("+OK\r\n$-1\r\n+OK\r\n+PONG\r\n$4\r\na\r\nb\r\n");
  for (const Result& x : r) EXPECT_EQ(x.calls, 1);
  EXPECT_EQ(r[0].values, std::vector<std::string>{"OK"});
  EXPECT_EQ(r[3].values, std::vector<std::string>{"PONG"});
  EXPECT_EQ(r[4].values, std::vector<std::string>{"a\r\nb"});
  EXPECT_EQ(c->in_flight(), 0u);
}

// Reply handlers that send more while the replies of one read are being dispatched: the
// requests in flight grow and wrap around under the dispatch, and every reply still reaches
// its own request, in order.
TEST_F(Fixture, HandlersSendingDuringDispatchKeepRepliesInOrder) {
  up();
  constexpr int kFirst = 100, kTotal = 1000;
  int sent = 0, got = 0, out_of_order = 0;
  std::string written;
  ReplyHandler h;
  auto issue = [&] {
    ++sent;
    if (sent % 3 == 0) {
      RequestBuilder b;
      c->send(b.add("INCR", "n").done(), h);
    } else {
      c->command({"INCR", "n"}, h);
    }
  };
  h = [&](std::error_code ec, const Replies& r) {
    ++got;
    if (ec || resp::to_int64(r[0][0]) != got) ++out_of_order;
    if (sent < kTotal) issue();
    if (sent < kTotal && got % 7 == 0) issue();  // sometimes two: the pipeline deepens
  };
  for (int i = 0; i < kFirst; ++i) issue();
  int answered = 0;
  while (answered < sent) {
    written += L.take();
    std::string replies;
    for (; answered < sent; ++answered) {
      replies.append(":").append(std::to_string(answered + 1)).append("\r\n");
    }
    L.feed(replies);
  }
  written += L.take();
  EXPECT_EQ(sent, kTotal);
  EXPECT_EQ(got, kTotal);
  EXPECT_EQ(out_of_order, 0);
  std::string want;
  for (int i = 0; i < kTotal; ++i) want += cmd({"INCR", "n"});
  EXPECT_EQ(written, want);
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

TEST_F(Fixture, PushHandlersMayAddRemoveOthersOrDestroyTheConnection) {
  up();
  const std::string push = ">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nx\r\n";
  std::vector<std::string> calls;
  std::uint64_t second = 0, added = 0;
  c->add_push_handler([&](resp::Frame) {
    calls.emplace_back("first");
    if (second != 0) c->remove_push_handler(std::exchange(second, 0));  // removed before its turn
    if (added == 0) {
      added = c->add_push_handler([&](resp::Frame) { calls.emplace_back("added"); });
    }
  });
  second = c->add_push_handler([&](resp::Frame) { calls.emplace_back("second"); });
  L.feed(push);
  // The second handler is not called after its removal, and one added during the dispatch
  // waits for the next push.
  EXPECT_EQ(calls, (std::vector<std::string>{"first"}));
  L.feed(push);
  EXPECT_EQ(calls, (std::vector<std::string>{"first", "first", "added"}));

  // More handlers than the dispatch keeps on its stack, one of which destroys the connection
  // (and the list it is called from): nothing is called after it, and nothing is touched.
  c.reset();
  up();
  calls.clear();
  for (int i = 0; i < 6; ++i) {
    c->add_push_handler([&, i](resp::Frame) {
      calls.push_back(std::to_string(i));
      if (i == 3) c.reset();
    });
  }
  L.feed(push);
  EXPECT_FALSE(c);
  EXPECT_EQ(calls, (std::vector<std::string>{"0", "1", "2", "3"}));
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

// Plain commands around a block travel with it: the whole request waits for the lane, is
// written in one piece and answered with all its replies in one call. WatchTxn::exec takes
// the block alone.
TEST_F(Fixture, PlainCommandsAroundABlockWaitForTheLaneWithIt) {
  up();
  WatchTxn held;
  hold_lane(held);
  ASSERT_TRUE(held.valid());
  const std::string mixed =
      cmd({"ZADD", "a", "0", "t"}) + cmd({"MULTI"}) + cmd({"INCR", "z"}) + cmd({"EXEC"}) +
      cmd({"SET", "d", "1", "XX"});
  Result whole, plain;
  c->send(req(mixed, 5), rec(whole));
  c->command({"GET", "p"}, rec(plain));
  EXPECT_EQ(L.take(), cmd({"GET", "p"}));  // the mixed request waits for the lane, all of it
  L.feed("$1\r\np\r\n");
  Result refused;
  held.exec(req(cmd({"GET", "k"}) + cmd({"MULTI"}) + cmd({"EXEC"}), 3), rec(refused));
  L.drain();
  EXPECT_EQ(refused.ec, Errc::bad_request);
  held = WatchTxn{};
  EXPECT_EQ(L.take(), cmd({"UNWATCH"}) + mixed);
  L.feed("+OK\r\n:1\r\n+OK\r\n+QUEUED\r\n*1\r\n:1\r\n$-1\r\n");
  EXPECT_EQ(whole.calls, 1);
  EXPECT_FALSE(whole.ec);
  EXPECT_EQ(whole.values.size(), 5u);
}

// A request whose bytes were built for this stream's server (the lock layer's fencing floor)
// never goes out on the next stream: queued behind the lane when the stream drops, it fails
// not_sent; an unbound one waits and is written after the reconnect.
TEST_F(Fixture, ThisStreamOnlyRequestsAreNotCarriedToTheNextStream) {
  opt.reconnect.initial = 10ms;
  opt.reconnect.max = 10ms;
  up();
  WatchTxn held;
  hold_lane(held);
  ASSERT_TRUE(held.valid());
  Result bound, unbound;
  RequestOptions o;
  o.this_stream_only = true;
  c->send(req(cmd({"MULTI"}) + cmd({"INCR", "a"}) + cmd({"EXEC"}), 3), rec(bound), o);
  c->send(req(cmd({"MULTI"}) + cmd({"INCR", "b"}) + cmd({"EXEC"}), 3), rec(unbound));
  EXPECT_EQ(L.take(), "");  // both wait for the lane
  L.s().h->on_closed(std::make_error_code(std::errc::connection_reset));
  L.drain();
  EXPECT_EQ(bound.calls, 1);
  EXPECT_EQ(bound.ec, Errc::not_sent);
  EXPECT_EQ(unbound.calls, 0);
  held = WatchTxn{};
  L.advance(20ms);
  up();
  EXPECT_EQ(L.take(), cmd({"MULTI"}) + cmd({"INCR", "b"}) + cmd({"EXEC"}));
  L.feed("+OK\r\n+QUEUED\r\n*1\r\n:1\r\n");
  EXPECT_EQ(unbound.calls, 1);
  EXPECT_FALSE(unbound.ec);
  EXPECT_EQ(bound.calls, 1);
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

}  // namespace
}  // namespace lockwire::loop
