// The Sentinel discovery machine (loop/src/sentinel.hpp, private), +switch-master, ROLE and the
// handshake's ROLE step, driven by frames alone: no loop, no stream, no connection. The frames
// are what redis-server 7.0.15 sends (captured in sentinel mode and from a primary and a
// replica, RESP3).
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "handshake.hpp"
#include "lockwire/resp/encoder.hpp"
#include "lockwire/resp/parser.hpp"
#include "parsed_frame.hpp"
#include "sentinel.hpp"

namespace lockwire::loop::detail {
namespace {

using Next = Discovery::Verdict::Next;

using testing::Parsed;

std::string cmd(std::initializer_list<std::string_view> a) {
  std::string out;
  resp::append_command(out, a);
  return out;
}

Endpoint ep(std::string host, std::uint16_t port) {
  Endpoint e;
  e.host = std::move(host);
  e.port = port;
  return e;
}

// SENTINEL GET-MASTER-ADDR-BY-NAME mymaster
std::string addr_reply(std::string_view ip, std::string_view port) {
  std::string out;
  resp::append_array_header(out, 2);
  resp::append_blob(out, ip);
  resp::append_blob(out, port);
  return out;
}
constexpr std::string_view kNullReply = "_\r\n";  // unknown master name
constexpr std::string_view kNoSuchMaster = "-ERR No such master with that name\r\n";

// SENTINEL MASTER mymaster, as 7.0.15 sends it (a map; only some of its 20 pairs here).
std::string master_reply(std::string_view ip, std::string_view port, std::string_view epoch) {
  std::string out;
  resp::append_map_header(out, 5);
  for (auto [k, v] : {std::pair<std::string_view, std::string_view>{"name", "mymaster"},
                      {"ip", ip},
                      {"port", port},
                      {"flags", "master"},
                      {"config-epoch", epoch}}) {
    resp::append_blob(out, k);
    resp::append_blob(out, v);
  }
  return out;
}

Discovery three() {
  return Discovery({ep("10.0.0.1", 26379), ep("10.0.0.2", 26379), ep("10.0.0.3", 26380)},
                   "mymaster");
}

TEST(Discovery, AsksGetMasterAddrAndSentinelMasterSubscribingNewLinks) {
  Discovery d = three();
  EXPECT_EQ(d.queries(true).bytes, cmd({"SUBSCRIBE", "+switch-master"}) +
                                       cmd({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster"}) +
                                       cmd({"SENTINEL", "MASTER", "mymaster"}));
  EXPECT_EQ(d.queries(true).commands, 3u);
  EXPECT_EQ(d.queries(false).bytes, cmd({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster"}) +
                                        cmd({"SENTINEL", "MASTER", "mymaster"}));
  // The SUBSCRIBE's acknowledgement push is reply 0: three reply slots.
  EXPECT_EQ(d.queries(true).shape().replies(), 3u);
  EXPECT_EQ(d.queries(true).shape().subscribes().size(), 1u);
  EXPECT_EQ(d.queries(true).shape().error(), nullptr);
}

TEST(Discovery, FirstAnswerWinsWithItsConfigEpoch) {
  Discovery d = three();
  EXPECT_FALSE(d.active());
  d.begin();
  ASSERT_TRUE(d.active());
  EXPECT_EQ(d.current(), 0u);
  Parsed a(addr_reply("127.0.0.1", "6380")), m(master_reply("127.0.0.1", "6380", "3"));
  const Discovery::Verdict v = d.answered(a.frame, m.frame);
  EXPECT_EQ(v.next, Next::found);
  EXPECT_EQ(v.primary.host, "127.0.0.1");
  EXPECT_EQ(v.primary.port, 6380);
  EXPECT_EQ(v.primary.config_epoch, 3u);
  EXPECT_FALSE(d.active());
  EXPECT_EQ(d.sentinels()[0].host, "10.0.0.1");  // already first: order unchanged
}

TEST(Discovery, TheSentinelThatAnsweredMovesToTheFront) {
  Discovery d = three();
  d.begin();
  EXPECT_EQ(d.failed("connect: connection refused").next, Next::ask);
  EXPECT_EQ(d.current(), 1u);
  Parsed n(kNullReply), e(kNoSuchMaster);
  EXPECT_EQ(d.answered(n.frame, e.frame).next, Next::ask);
  EXPECT_EQ(d.current(), 2u);
  Parsed a(addr_reply("127.0.0.1", "6379")), m(master_reply("127.0.0.1", "6379", "0"));
  EXPECT_EQ(d.answered(a.frame, m.frame).next, Next::found);
  ASSERT_EQ(d.sentinels().size(), 3u);
  EXPECT_EQ(d.sentinels()[0].host, "10.0.0.3");  // the one that answered
  EXPECT_EQ(d.sentinels()[0].port, 26380);
  EXPECT_EQ(d.sentinels()[1].host, "10.0.0.1");  // the others keep their order
  EXPECT_EQ(d.sentinels()[2].host, "10.0.0.2");
  d.begin();  // the next round asks it first
  EXPECT_EQ(d.current(), 0u);
  EXPECT_EQ(d.sentinels()[d.current()].host, "10.0.0.3");
}

TEST(Discovery, ARoundWithoutAnAnswerSaysWhatEachSentinelSaid) {
  Discovery d = three();
  d.begin();
  EXPECT_EQ(d.failed("connect: connection refused").next, Next::ask);
  Parsed n(kNullReply), e(kNoSuchMaster);
  EXPECT_EQ(d.answered(n.frame, e.frame).next, Next::ask);
  const Discovery::Verdict v = d.failed("no answer within 5s");
  EXPECT_EQ(v.next, Next::exhausted);
  EXPECT_EQ(v.error,
            "no sentinel knows master 'mymaster': 10.0.0.1:26379 connect: connection refused; "
            "10.0.0.2:26379 -ERR No such master with that name; 10.0.0.3:26380 no answer within "
            "5s");
  EXPECT_FALSE(d.active());
  // A new round starts afresh.
  d.begin();
  EXPECT_EQ(d.failed("x").next, Next::ask);
  EXPECT_EQ(d.failed("y").next, Next::ask);
  EXPECT_EQ(d.failed("z").error,
            "no sentinel knows master 'mymaster': 10.0.0.1:26379 x; 10.0.0.2:26379 y; "
            "10.0.0.3:26380 z");
}

TEST(Discovery, ErrorsAndOddRepliesAreTheSentinelsWords) {
  struct Case {
    std::string addr, master, said;
  } cases[] = {
      {"-NOPERM this user has no permissions to run the 'sentinel|get-master-addr-by-name' "
       "command\r\n",
       "-NOPERM x\r\n",
       "-NOPERM this user has no permissions to run the 'sentinel|get-master-addr-by-name' "
       "command"},
      // A data node in the sentinel list.
      {"-ERR unknown command 'SENTINEL', with args beginning with: 'GET-MASTER-ADDR-BY-NAME' "
       "'mymaster' \r\n",
       "-ERR unknown command\r\n",
       "-ERR unknown command 'SENTINEL', with args beginning with: 'GET-MASTER-ADDR-BY-NAME' "
       "'mymaster' "},
      {std::string(kNullReply), "+OK\r\n", "knows no master 'mymaster'"},
      {"+OK\r\n", std::string(kNoSuchMaster), "an unexpected reply"},
      {addr_reply("127.0.0.1", "0"), master_reply("127.0.0.1", "0", "1"),
       "named no usable address"},
      {addr_reply("", "6379"), master_reply("", "6379", "1"), "named no usable address"},
      {addr_reply("h", "65536"), master_reply("h", "65536", "1"), "named no usable address"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.addr);
    Discovery d({ep("s", 1)}, "mymaster");
    d.begin();
    Parsed a(c.addr), m(c.master);
    const Discovery::Verdict v = d.answered(a.frame, m.frame);
    EXPECT_EQ(v.next, Next::exhausted);
    EXPECT_EQ(v.error, "no sentinel knows master 'mymaster': s:1 " + c.said);
  }
}

TEST(Discovery, TheEpochOnlyWhenSentinelMasterHasTheSameAddress) {
  // During a failover GET-MASTER-ADDR-BY-NAME may already name the promoted replica while
  // SENTINEL MASTER still reports the old primary (and its epoch).
  struct Case {
    std::string master;
    std::optional<std::uint64_t> epoch;
  } cases[] = {
      {master_reply("127.0.0.1", "6380", "7"), 7},
      {master_reply("127.0.0.1", "6379", "7"), std::nullopt},
      {master_reply("127.0.0.2", "6380", "7"), std::nullopt},
      {master_reply("127.0.0.1", "6380", "x"), std::nullopt},
      {"-NOPERM no\r\n", std::nullopt},
      {"*4\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$4\r\nport\r\n$4\r\n6380\r\n", std::nullopt},
      // RESP2's flat array works too.
      {"*6\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$4\r\nport\r\n$4\r\n6380\r\n$12\r\nconfig-epoch\r\n"
       "$2\r\n12\r\n",
       12},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.master);
    Discovery d({ep("s", 1)}, "mymaster");
    d.begin();
    Parsed a(addr_reply("127.0.0.1", "6380")), m(c.master);
    const Discovery::Verdict v = d.answered(a.frame, m.frame);
    ASSERT_EQ(v.next, Next::found);
    EXPECT_EQ(v.primary.config_epoch, c.epoch);
  }
}

TEST(Discovery, NoSentinelsMeansNoRound) {
  Discovery d({}, "m");
  d.begin();
  EXPECT_FALSE(d.active());
}

TEST(SwitchMaster, TheNewAddressOfOurMasterOnly) {
  // Exactly what a 7.0.15 sentinel pushed after SENTINEL FAILOVER.
  Parsed p(
      ">3\r\n$7\r\nmessage\r\n$14\r\n+switch-master\r\n$40\r\nmymaster 127.0.0.1 17379 "
      "127.0.0.1 17380\r\n");
  const auto a = parse_new_primary(p.frame, "mymaster");
  ASSERT_TRUE(a);
  EXPECT_FALSE(a->promoted);
  const PrimaryAddr moved = a->primary;
  EXPECT_EQ(moved.host, "127.0.0.1");
  EXPECT_EQ(moved.port, 17380);
  EXPECT_FALSE(parse_new_primary(p.frame, "other"));
  EXPECT_FALSE(parse_new_primary(p.frame, "mymaste"));
  // The pmessage form (PSUBSCRIBE *).
  Parsed pm(
      ">4\r\n$8\r\npmessage\r\n$1\r\n*\r\n$14\r\n+switch-master\r\n$40\r\nmymaster 127.0.0.1 "
      "17379 127.0.0.1 17380\r\n");
  EXPECT_EQ(parse_new_primary(pm.frame, "mymaster")->primary, moved);
  for (std::string_view other : {
           // the subscribe acknowledgement
           ">3\r\n$9\r\nsubscribe\r\n$14\r\n+switch-master\r\n:1\r\n",
           // another event
           ">3\r\n$7\r\nmessage\r\n$6\r\n+sdown\r\n$32\r\nmaster mymaster 127.0.0.1 6379 x\r\n",
           // malformed payloads
           ">3\r\n$7\r\nmessage\r\n$14\r\n+switch-master\r\n$20\r\nmymaster 1 2 3 99999\r\n",
           ">3\r\n$7\r\nmessage\r\n$14\r\n+switch-master\r\n$10\r\nmymaster 1\r\n",
           ">3\r\n$7\r\nmessage\r\n$14\r\n+switch-master\r\n:1\r\n",
           "*3\r\n$7\r\nmessage\r\n$14\r\n+switch-master\r\n$16\r\nmymaster 1 2 3 4\r\n",
       }) {
    Parsed o(other);
    EXPECT_FALSE(parse_new_primary(o.frame, "mymaster")) << other;
  }
  // Five words are a switch, whatever the host looks like (the sentinel's own words).
  Parsed five(">3\r\n$7\r\nmessage\r\n$14\r\n+switch-master\r\n$16\r\nmymaster 1 2 3 4\r\n");
  EXPECT_EQ(parse_new_primary(five.frame, "mymaster")->primary, (PrimaryAddr{"3", 4, std::nullopt}));
}

TEST(PromotedSlave, TheLeaderNamesTheReplicaItPromoted) {
  // The failover leader's event (sentinelEvent "+promoted-slave" with "%@"), pushed when its
  // GET-MASTER-ADDR-BY-NAME starts naming the replica: the replica's address, then our master.
  const std::string payload = "slave 127.0.0.1:17380 127.0.0.1 17380 @ mymaster 127.0.0.1 17379";
  auto push = [](std::string_view channel, std::string_view text) {
    return ">3\r\n$7\r\nmessage\r\n$" + std::to_string(channel.size()) + "\r\n" +
           std::string(channel) + "\r\n$" + std::to_string(text.size()) + "\r\n" +
           std::string(text) + "\r\n";
  };
  Parsed p(push("+promoted-slave", payload));
  const auto a = parse_new_primary(p.frame, "mymaster");
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->promoted);
  EXPECT_EQ(a->primary, (PrimaryAddr{"127.0.0.1", 17380, std::nullopt}));
  EXPECT_FALSE(parse_new_primary(p.frame, "other"));
  for (std::string_view bad : {
           "slave 127.0.0.1:17380 127.0.0.1 17380 @ mymaster 127.0.0.1",     // 7 words
           "master mymaster 127.0.0.1 17380 @ mymaster 127.0.0.1 17379",     // not a slave
           "slave 127.0.0.1:17380 127.0.0.1 17380 at mymaster 127.0.0.1 1",  // no '@'
           "slave 127.0.0.1:0 127.0.0.1 0 @ mymaster 127.0.0.1 17379",       // port 0
       }) {
    Parsed o(push("+promoted-slave", bad));
    EXPECT_FALSE(parse_new_primary(o.frame, "mymaster")) << bad;
  }
  // The same words on another channel are not a promotion.
  Parsed other(push("+slave", payload));
  EXPECT_FALSE(parse_new_primary(other.frame, "mymaster"));
}

TEST(Role, OnlyAMasterIsThePrimary) {
  // Captured from a primary, a replica and a sentinel.
  Parsed master(
      "*3\r\n$6\r\nmaster\r\n:2874\r\n*1\r\n*3\r\n$9\r\n127.0.0.1\r\n$5\r\n17380\r\n$"
      "4\r\n2874\r\n");
  Parsed replica("*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n:17379\r\n$9\r\nconnected\r\n:3276\r\n");
  Parsed sentinel("*2\r\n$8\r\nsentinel\r\n*1\r\n$8\r\nmymaster\r\n");
  Parsed noperm("-NOPERM this user has no permissions to run the 'role' command\r\n");
  EXPECT_EQ(not_primary(master.frame), "");
  EXPECT_EQ(not_primary(replica.frame), "a replica of 127.0.0.1:17379 (link connected)");
  EXPECT_EQ(not_primary(sentinel.frame), "a sentinel");
  EXPECT_EQ(not_primary(noperm.frame),
            "-NOPERM this user has no permissions to run the 'role' command");
  Parsed odd("+OK\r\n");
  EXPECT_EQ(not_primary(odd.frame), "an unexpected ROLE reply");
}

TEST(Role, ReadonlyIsRecognised) {
  Parsed ro("-READONLY You can't write against a read only replica.\r\n");
  Parsed other("-ERR READONLY\r\n");
  Parsed ok("+OK\r\n");
  EXPECT_TRUE(is_readonly(ro.frame));
  EXPECT_FALSE(is_readonly(other.frame));
  EXPECT_FALSE(is_readonly(ok.frame));
}

constexpr std::string_view kHello = "%1\r\n$2\r\nid\r\n:42\r\n";

TEST(Handshake, WithSentinelDiscoveryRoleComesAfterSelectAndBeforeTheFences) {
  ConnectionOptions o;
  o.db = 2;
  o.fence_abandoned = true;
  o.sentinel = SentinelOptions{"mymaster", "", ""};
  Handshake h;
  const auto cmds = h.begin(o, "127.0.0.1:6379");
  ASSERT_EQ(cmds.size(), 4u);
  EXPECT_EQ(cmds[1].step, Handshake::Step::select);
  EXPECT_EQ(cmds[2].bytes, cmd({"ROLE"}));
  EXPECT_EQ(cmds[2].step, Handshake::Step::role);
  EXPECT_EQ(cmds[3].step, Handshake::Step::info);
  // Without discovery there is no ROLE (a replica may be used on purpose).
  o.sentinel.reset();
  for (const auto& c : h.begin(o, "127.0.0.1:6379")) EXPECT_NE(c.step, Handshake::Step::role);
}

TEST(Handshake, AReplicaOrARefusedRoleFailsTheHandshake) {
  ConnectionOptions o;
  o.sentinel = SentinelOptions{"mymaster", "", ""};
  struct Case {
    std::string role;
    std::string detail;
    bool config;
  } cases[] = {
      {"*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n:6379\r\n$7\r\nconnect\r\n:-1\r\n",
       "ROLE: the server is a replica of 127.0.0.1:6379 (link connect), not the primary", false},
      {"*2\r\n$8\r\nsentinel\r\n*0\r\n", "ROLE: the server is a sentinel, not the primary", false},
      {"-NOPERM no ROLE for you\r\n",
       "ROLE: -NOPERM no ROLE for you (needed to check that the server is the primary)", true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.role);
    Handshake h;
    (void)h.begin(o, "s");
    Parsed hello(kHello);
    EXPECT_EQ(h.reply(hello.frame).next, Handshake::Verdict::Next::wait);
    Parsed role(c.role);
    const auto v = h.reply(role.frame);
    EXPECT_EQ(v.next, Handshake::Verdict::Next::failed);
    EXPECT_EQ(v.error, Errc::connect_failed);
    EXPECT_EQ(v.detail, c.detail);
    EXPECT_EQ(v.config_error, c.config);
  }
  Handshake h;
  (void)h.begin(o, "s");
  Parsed hello(kHello);
  EXPECT_EQ(h.reply(hello.frame).next, Handshake::Verdict::Next::wait);
  Parsed master("*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n");
  EXPECT_EQ(h.reply(master.frame).next, Handshake::Verdict::Next::ready);
}

TEST(Handshake, FencesAreForgottenOnAnotherServer) {
  ConnectionOptions o;
  o.fence_abandoned = true;
  Handshake h;
  (void)h.begin(o, "a:1");
  Parsed hello(kHello);
  std::string info;
  resp::append_blob(info, "id=42 addr=10.0.0.1:5000 fd=8");
  Parsed pinfo(info);
  EXPECT_EQ(h.reply(hello.frame).next, Handshake::Verdict::Next::wait);
  EXPECT_EQ(h.reply(pinfo.frame).next, Handshake::Verdict::Next::ready);
  // Same server: connection 42 is fenced.
  EXPECT_EQ(h.begin(o, "a:1").size(), 3u);
  EXPECT_EQ(h.fences().size(), 1u);
  // Another server (the sentinels named a new primary): id 42 there is someone else.
  const auto cmds = h.begin(o, "b:2");
  EXPECT_EQ(cmds.size(), 2u);
  EXPECT_TRUE(h.fences().empty());
}

}  // namespace
}  // namespace lockwire::loop::detail
