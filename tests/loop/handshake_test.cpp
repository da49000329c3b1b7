// The handshake machine (loop/src/handshake.hpp, private) and the reconnect backoff, driven by
// frames alone: no loop, no stream, no connection.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "handshake.hpp"
#include "lockwire/resp/encoder.hpp"
#include "lockwire/resp/parser.hpp"

namespace lockwire::loop::detail {
namespace {

using namespace std::chrono_literals;
using Next = Handshake::Verdict::Next;

std::string cmd(std::initializer_list<std::string_view> a) {
  std::string out;
  resp::append_command(out, a);
  return out;
}

std::string joined(const std::vector<Handshake::Command>& cmds) {
  std::string out;
  for (const auto& c : cmds) out += c.bytes;
  return out;
}

// Feeds one encoded reply (the parser's frame lives as long as `bytes` and the parser).
Handshake::Verdict feed(Handshake& h, std::string_view bytes) {
  resp::Parser p;
  const auto r = p.parse(bytes);
  EXPECT_EQ(r.status, resp::ParseResult::Status::complete) << bytes;
  return h.reply(p.frame());
}

std::string bulk(std::string_view text) {
  std::string out;
  resp::append_blob(out, text);
  return out;
}

constexpr std::string_view kHello42 = "%2\r\n$2\r\nid\r\n:42\r\n$5\r\nproto\r\n:3\r\n";

TEST(Handshake, CommandsFollowTheOptions) {
  Handshake h;
  ConnectionOptions o;
  EXPECT_EQ(joined(h.begin(o)), cmd({"HELLO", "3"}));
  o.password = "pw";
  o.client_name = "svc";
  o.db = 2;
  EXPECT_EQ(joined(h.begin(o)),
            cmd({"HELLO", "3", "AUTH", "default", "pw", "SETNAME", "svc"}) + cmd({"SELECT", "2"}));
  o.username = "bob";
  o.fence_abandoned = true;
  const auto cmds = h.begin(o);
  ASSERT_EQ(cmds.size(), 3u);
  EXPECT_EQ(cmds[0].bytes, cmd({"HELLO", "3", "AUTH", "bob", "pw", "SETNAME", "svc"}));
  EXPECT_EQ(cmds[0].step, Handshake::Step::hello);
  EXPECT_EQ(cmds[1].step, Handshake::Step::select);
  EXPECT_EQ(cmds[2].bytes, cmd({"CLIENT", "INFO"}));
  EXPECT_EQ(cmds[2].step, Handshake::Step::info);
}

TEST(Handshake, ReadyOnceEveryReplyIsIn) {
  Handshake h;
  ConnectionOptions o;
  o.db = 5;
  EXPECT_EQ(h.client_id(), -1);
  (void)h.begin(o);
  EXPECT_EQ(feed(h, kHello42).next, Next::wait);
  EXPECT_EQ(h.client_id(), 42);
  EXPECT_EQ(feed(h, "+OK\r\n").next, Next::ready);
}

TEST(Handshake, RefusalsAreClassified) {
  ConnectionOptions o;
  o.db = 1;
  struct Case {
    std::string_view hello, select;
    Errc want;
    bool config;
    std::string_view detail;
  } cases[] = {
      {"-NOPROTO unsupported protocol version\r\n", "", Errc::resp3_refused, true, "HELLO 3: "},
      {"-ERR unknown command 'HELLO'\r\n", "", Errc::resp3_refused, true, "HELLO 3: "},
      {"-WRONGPASS invalid username-password pair\r\n", "", Errc::auth_failed, true, "HELLO 3: "},
      {"-NOAUTH HELLO must be called with the client already authenticated\r\n", "",
       Errc::auth_failed, true, "HELLO 3: "},
      {"-ERR something else\r\n", "", Errc::connect_failed, false, "HELLO 3: "},
      {kHello42, "-ERR DB index is out of range\r\n", Errc::connect_failed, false, "SELECT: "},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.hello);
    Handshake h;
    (void)h.begin(o);
    Handshake::Verdict v = feed(h, c.hello);
    if (!c.select.empty()) {
      ASSERT_EQ(v.next, Next::wait);
      v = feed(h, c.select);
    }
    EXPECT_EQ(v.next, Next::failed);
    EXPECT_EQ(v.error, c.want);
    EXPECT_EQ(v.config_error, c.config);
    EXPECT_TRUE(v.detail.starts_with(c.detail)) << v.detail;
  }
}

TEST(Handshake, FencesEveryEarlierConnectionUntilItsKillIsAnswered) {
  Handshake h;
  ConnectionOptions o;
  o.fence_abandoned = true;
  (void)h.begin(o);
  EXPECT_EQ(feed(h, kHello42).next, Next::wait);
  EXPECT_EQ(feed(h, bulk("id=42 addr=10.0.0.1:5000 fd=8")).next, Next::ready);
  EXPECT_TRUE(h.fences().empty());

  // Reconnect: connection 42 is fenced; this attempt dies before any reply.
  const std::string kill42 = cmd({"CLIENT", "KILL", "ID", "42", "ADDR", "10.0.0.1:5000"});
  EXPECT_EQ(joined(h.begin(o)), cmd({"HELLO", "3"}) + cmd({"CLIENT", "INFO"}) + kill42);
  // The next attempt fences 42 again (its kill was never answered), and not the dead attempt,
  // whose address was never learnt.
  EXPECT_EQ(joined(h.begin(o)), cmd({"HELLO", "3"}) + cmd({"CLIENT", "INFO"}) + kill42);
  EXPECT_EQ(feed(h, "%1\r\n$2\r\nid\r\n:43\r\n").next, Next::wait);
  EXPECT_EQ(feed(h, "=28\r\ntxt:id=43 addr=10.0.0.1:6000\r\n").next, Next::wait);
  EXPECT_EQ(h.fences().size(), 1u);
  EXPECT_EQ(feed(h, ":1\r\n").next, Next::ready);  // ready only once the kill is answered
  EXPECT_TRUE(h.fences().empty());
  EXPECT_EQ(h.client_id(), 43);

  // Without the option nothing is fenced (and nothing learnt).
  ConnectionOptions plain;
  EXPECT_EQ(joined(h.begin(plain)), cmd({"HELLO", "3"}));
}

TEST(Handshake, AtMostEightConnectionsAreRemembered) {
  Handshake h;
  ConnectionOptions o;
  o.fence_abandoned = true;
  for (int id = 1; id <= 10; ++id) {
    const auto cmds = h.begin(o);
    EXPECT_EQ(cmds.size(), 2u + std::min<std::size_t>(id - 1, 8));
    std::string hello;
    resp::append_map_header(hello, 1);
    resp::append_blob(hello, "id");
    resp::append_number(hello, id);
    EXPECT_EQ(feed(h, hello).next, Next::wait);
    EXPECT_EQ(feed(h, bulk("id=" + std::to_string(id) + " addr=h:" + std::to_string(id))).next,
              id == 1 ? Next::ready : Next::wait);
    // The kills stay unanswered: this connection dies too.
  }
  EXPECT_EQ(h.fences().size(), 8u);
  EXPECT_EQ(h.fences().front().first, 1);
}

TEST(Backoff, CappedExponentialWithJitterInTheUpperHalf) {
  Backoff b;
  b.initial = 10ms;
  b.max = 100ms;
  b.multiplier = 2.0;
  EXPECT_EQ(backoff_delay(b, 0, 0), 5ms);                // jitter 0: half the delay
  EXPECT_EQ(backoff_delay(b, 0, 5'000'000), 10ms);       // the top of [delay/2, delay]
  EXPECT_EQ(backoff_delay(b, 0, 5'000'001), 5ms);        // modulo (delay - half + 1)
  EXPECT_EQ(backoff_delay(b, 3, 0), 40ms);               // 80 ms / 2
  EXPECT_EQ(backoff_delay(b, 4, 0), 50ms);               // capped at 100 ms
  EXPECT_EQ(backoff_delay(b, 1000, 50'000'000), 100ms);  // stays capped
  b.multiplier = 0.5;                                    // never shrinks
  EXPECT_EQ(backoff_delay(b, 5, 5'000'000), 10ms);
}

}  // namespace
}  // namespace lockwire::loop::detail
