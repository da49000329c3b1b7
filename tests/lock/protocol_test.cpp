// Pure protocol units: request bytes and reply interpretation over RESP frames captured from
// redis-server 7.0.15. No server needed. One file of about 800 lines because it follows
// lockwire/lock/protocol.hpp, one header, operation by operation (a suite each), with the two
// frame-parsing helpers below shared by all; it splits when that header does.
#include "lockwire/lock/protocol.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lockwire/lock/client.hpp"
#include "lockwire/lock/error.hpp"
#include "lockwire/resp/parser.hpp"

namespace lockwire::lock {
namespace {

using namespace std::chrono_literals;
namespace p = protocol;

// Parses one complete frame; the parser and bytes must outlive the returned span.
struct Parsed {
  explicit Parsed(std::string b) : bytes(std::move(b)) {
    const auto r = parser.parse(bytes);
    EXPECT_TRUE(r.ok()) << bytes;
  }
  resp::Frame frame() const { return parser.frame(); }
  std::string bytes;
  resp::Parser parser;
};


// Several complete frames as one request's Replies (nodes copied; `bytes` keeps their text).
struct ParsedReplies {
  explicit ParsedReplies(std::vector<std::string> frames) : bytes(std::move(frames)) {
    for (const std::string& b : bytes) {
      resp::Parser parser;
      EXPECT_TRUE(parser.parse(b).ok()) << b;
      starts.push_back(static_cast<std::uint32_t>(nodes.size()));
      for (const resp::Node& n : parser.frame()) nodes.push_back(n);
    }
  }
  [[nodiscard]] loop::Replies replies() const { return loop::Replies(nodes, starts); }
  std::vector<std::string> bytes;
  std::vector<resp::Node> nodes;
  std::vector<std::uint32_t> starts;
};

TEST(Validation, RejectsBadInput) {
  const Limits lim;
  std::string why;
  EXPECT_EQ(validate_name("resource", "", 10, &why), Errc::invalid_argument);
  EXPECT_EQ(why, "resource is empty");
  EXPECT_EQ(validate_name("resource", std::string(11, 'a'), 10), Errc::invalid_argument);
  EXPECT_EQ(validate_name("resource", "a{b", 10), Errc::invalid_argument);
  EXPECT_EQ(validate_name("owner", "a}b", 10), Errc::invalid_argument);
  EXPECT_FALSE(validate_name("resource", std::string(10, 'a'), 10));
  EXPECT_FALSE(validate_name("resource", std::string("a\0b", 3), 10));
  EXPECT_EQ(validate_prefix("p{", lim), Errc::invalid_argument);
  EXPECT_FALSE(validate_prefix("lockwire:", lim));
  EXPECT_EQ(validate_ttl(0ns, lim), Errc::invalid_argument);
  EXPECT_EQ(validate_ttl(-5s, lim), Errc::invalid_argument);
  EXPECT_EQ(validate_ttl(999us, lim), Errc::invalid_argument);
  EXPECT_EQ(validate_ttl(lim.max_ttl + 1ns, lim), Errc::invalid_argument);
  EXPECT_EQ(validate_ttl(std::chrono::nanoseconds::max(), lim), Errc::invalid_argument);
  EXPECT_FALSE(validate_ttl(1ms, lim));
  EXPECT_EQ(validate_wait(-1ns, lim), Errc::invalid_argument);
  EXPECT_EQ(validate_wait(std::chrono::nanoseconds::max(), lim), Errc::invalid_argument);
  EXPECT_FALSE(validate_wait(0ns, lim));
  EXPECT_EQ(ttl_millis(1ms), 1);
  EXPECT_EQ(ttl_millis(1ms + 1ns), 2);
}

TEST(ErrorCategory, NamesEveryCode) {
  EXPECT_STREQ(lock_category().name(), "lockwire.lock");
  for (int i = 0; i <= static_cast<int>(Errc::cancelled); ++i) {
    EXPECT_NE(lock_category().message(i), "unknown lock error") << i;
  }
  const std::error_code ec = Errc::not_held;
  EXPECT_EQ(ec.category(), lock_category());
}

TEST(Keys, ShareOneHashTag) {
  const auto k = p::make_keys("lw:", "res");
  EXPECT_EQ(k.holders, "lw:{res}");
  EXPECT_EQ(k.fence, "lw:{res}:fence");
  EXPECT_EQ(k.companion("o1"), "lw:{res}:s:o1");
  EXPECT_EQ(p::field(Kind::exclusive, "o"), "x:o");
  EXPECT_EQ(p::field(Kind::shared, "o"), "s:o");
}

TEST(ExclusiveAcquire, RequestIsOneAtomicBlock) {
  const auto r = p::exclusive_acquire(p::make_keys("P", "R"), "x:o", 500, 1780000000000000);
  EXPECT_EQ(r.kind, loop::RequestKind::atomic);
  EXPECT_EQ(r.commands, 7u);
  EXPECT_EQ(r.bytes,
            "*1\r\n$5\r\nMULTI\r\n"
            "*4\r\n$6\r\nHSETNX\r\n$4\r\nP{R}\r\n$3\r\nx:o\r\n$3\r\n500\r\n"
            "*2\r\n$4\r\nHLEN\r\n$4\r\nP{R}\r\n"
            "*4\r\n$7\r\nPEXPIRE\r\n$4\r\nP{R}\r\n$3\r\n500\r\n$2\r\nNX\r\n"
            "*5\r\n$4\r\nZADD\r\n$10\r\nP{R}:fence\r\n$2\r\nGT\r\n$16\r\n1780000000000000\r\n"
            "$1\r\nt\r\n"
            "*5\r\n$4\r\nZADD\r\n$10\r\nP{R}:fence\r\n$4\r\nINCR\r\n$1\r\n1\r\n$1\r\nt\r\n"
            "*1\r\n$4\r\nEXEC\r\n");
  EXPECT_EQ(r.bytes.find("EVAL"), std::string::npos);
}

// Without fencing tokens (ClientOptions::fencing_tokens false): the fence key is not touched.
TEST(ExclusiveAcquire, UntokenedBlockLeavesTheFenceAlone) {
  const auto r = p::exclusive_acquire_untokened(p::make_keys("P", "R"), "x:o", 500);
  EXPECT_EQ(r.commands, 5u);
  EXPECT_EQ(r.bytes.find("fence"), std::string::npos);
  EXPECT_EQ(r.bytes.find("ZADD"), std::string::npos);
  {
    Parsed f("*3\r\n:1\r\n:1\r\n:1\r\n");
    const auto a = p::parse_exclusive_acquire_untokened(f.frame());
    EXPECT_EQ(a.outcome, p::Outcome::granted);
    EXPECT_EQ(a.token, 0u);
  }
  {
    Parsed f("*3\r\n:1\r\n:2\r\n:0\r\n");
    EXPECT_EQ(p::parse_exclusive_acquire_untokened(f.frame()).outcome, p::Outcome::contended);
  }
  {
    Parsed f("*3\r\n:0\r\n:1\r\n:0\r\n");
    EXPECT_EQ(p::parse_exclusive_acquire_untokened(f.frame()).outcome,
              p::Outcome::already_held);
  }
  {
    Parsed f("_\r\n");
    EXPECT_EQ(p::parse_exclusive_acquire_untokened(f.frame()).outcome, p::Outcome::aborted);
  }
  for (const char* bad : {"*5\r\n:1\r\n:1\r\n:1\r\n:1\r\n,3\r\n", "*2\r\n:1\r\n:1\r\n",
                          "*3\r\n:1\r\n:1\r\n-ERR x\r\n", "+OK\r\n"}) {
    Parsed f(bad);
    EXPECT_EQ(p::parse_exclusive_acquire_untokened(f.frame()).outcome, p::Outcome::bad_reply)
        << bad;
  }
}

// EXEC replies as redis-server 7.0.15 sends them (the token: a RESP3 double; RESP2: a blob).
TEST(ExclusiveAcquire, InterpretsReplies) {
  {
    Parsed f("*5\r\n:1\r\n:1\r\n:1\r\n:1\r\n,1780000000000001\r\n");
    const auto a = p::parse_exclusive_acquire(f.frame());
    EXPECT_EQ(a.outcome, p::Outcome::granted);
    EXPECT_EQ(a.token, 1780000000000001u);
  }
  {
    Parsed f("*5\r\n:1\r\n:1\r\n:1\r\n:0\r\n$1\r\n3\r\n");  // RESP2, a plain counter
    EXPECT_EQ(p::parse_exclusive_acquire(f.frame()).token, 3u);
  }
  {
    Parsed f("*5\r\n:1\r\n:2\r\n:0\r\n:0\r\n,4\r\n");
    EXPECT_EQ(p::parse_exclusive_acquire(f.frame()).outcome, p::Outcome::contended);
  }
  {
    Parsed f("*5\r\n:0\r\n:1\r\n:0\r\n:0\r\n,5\r\n");
    EXPECT_EQ(p::parse_exclusive_acquire(f.frame()).outcome, p::Outcome::already_held);
  }
  {
    Parsed f("_\r\n");
    EXPECT_EQ(p::parse_exclusive_acquire(f.frame()).outcome, p::Outcome::aborted);
  }
  {
    Parsed f("*5\r\n:1\r\n:1\r\n:1\r\n:0\r\n$16\r\n9007199254740992\r\n");  // 2^53, RESP2
    const auto a = p::parse_exclusive_acquire(f.frame());
    EXPECT_EQ(a.outcome, p::Outcome::granted);
    EXPECT_EQ(a.token, 9007199254740992u);
  }
  for (const char* bad :
       {"*4\r\n:1\r\n:1\r\n:1\r\n:1\r\n", "-WRONGTYPE x\r\n",
        "*5\r\n:1\r\n:1\r\n:1\r\n:0\r\n-WRONGTYPE Operation against a key holding the wrong "
        "kind of value\r\n",
        "*5\r\n:1\r\n:1\r\n:1\r\n:0\r\n,0\r\n", "*5\r\n:1\r\n:1\r\n:1\r\n:0\r\n,1.5\r\n",
        "*5\r\n:1\r\n:1\r\n:1\r\n:0\r\n,9007199254740993\r\n",  // beyond 2^53: not exact
        "*5\r\n:1\r\n:1\r\n:1\r\n:0\r\n,-5\r\n", "*5\r\n:1\r\n:1\r\n:1\r\n:0\r\n,1e3\r\n",
        "*5\r\n:1\r\n:1\r\n:1\r\n:0\r\n$2\r\n+5\r\n",
        "*5\r\n:1\r\n:1\r\n:1\r\n:0\r\n$20\r\n18446744073709551617\r\n",  // past 2^64
        "*5\r\n:1\r\n:1\r\n:1\r\n:0\r\n:7\r\n", "+OK\r\n"}) {
    Parsed f(bad);
    EXPECT_EQ(p::parse_exclusive_acquire(f.frame()).outcome, p::Outcome::bad_reply) << bad;
  }
}

TEST(WaitRead, ParsesTrackedRead) {
  Parsed f("*4\r\n:1\r\n+OK\r\n:8947\r\n%1\r\n$3\r\nx:b\r\n$2\r\n10\r\n");
  const auto w = p::parse_wait_read(f.frame(), true);
  ASSERT_TRUE(w.ok);
  EXPECT_TRUE(w.tracked);
  EXPECT_EQ(w.pttl, 8947);
  ASSERT_EQ(w.fields.size(), 1u);
  EXPECT_EQ(w.fields[0], "x:b");
  Parsed g(
      "*3\r\n-ERR CLIENT CACHING can be called only when the client is in tracking mode\r\n"
      ":-2\r\n*0\r\n");
  const auto w2 = p::parse_wait_read(g.frame(), false);
  ASSERT_TRUE(w2.ok);
  EXPECT_FALSE(w2.tracked);
  EXPECT_EQ(w2.pttl, -2);
  EXPECT_TRUE(w2.fields.empty());
  EXPECT_FALSE(p::parse_wait_read(g.frame(), true).ok);
}

TEST(ExclusiveWaitRead, RequestQueuesAndTracksDoorbellAndHolders) {
  const auto k = p::make_keys("t", "r");
  EXPECT_EQ(k.queue, "t{r}:q");
  EXPECT_EQ(k.doorbell("me"), "t{r}:w:me");
  std::string_view holders, owner;
  ASSERT_TRUE(p::split_doorbell(k.doorbell("a:w:b"), holders, owner));
  EXPECT_EQ(holders, "t{r}");
  EXPECT_EQ(owner, "a:w:b");
  for (const char* other : {"t{r}", "t{r}:q", "t{r}:fence", "t{r}:s:me", "t:force-released"}) {
    EXPECT_FALSE(p::split_doorbell(other, holders, owner)) << other;
  }
  const auto r = p::exclusive_wait_read(k, "x:me", "me", 7, 2000);
  EXPECT_NE(r.bytes.find("$4\r\nHDEL\r\n$4\r\nt{r}\r\n$4\r\nx:me"), std::string::npos);
  EXPECT_NE(r.bytes.find("$4\r\nZADD\r\n$6\r\nt{r}:q\r\n$2\r\nNX\r\n$1\r\n7\r\n$2\r\nme\r\n"),
            std::string::npos);
  EXPECT_NE(r.bytes.find("$3\r\nSET\r\n$9\r\nt{r}:w:me\r\n$1\r\n1\r\n$2\r\nNX\r\n$2\r\nPX\r\n$"
                         "4\r\n2000"),
            std::string::npos);
  // The queue is read before the first CLIENT CACHING YES: inside EXEC the flag lasts to the
  // end, and tracking the queue would wake every waiter on every join and leave.
  EXPECT_LT(r.bytes.find("ZRANGE"), r.bytes.find("CACHING"));
  EXPECT_EQ(r.commands, 12u);
  EXPECT_EQ(p::exclusive_wait_read(k, "", "me", 7, 5).bytes.find("HDEL"), std::string::npos);
  EXPECT_EQ(p::ring(k, {"you", "me"}).bytes,
            "*5\r\n$3\r\nSET\r\n$10\r\nt{r}:w:you\r\n$1\r\n1\r\n$2\r\nXX\r\n$7\r\nKEEPTTL\r\n"
            "*5\r\n$3\r\nSET\r\n$9\r\nt{r}:w:me\r\n$1\r\n1\r\n$2\r\nXX\r\n$7\r\nKEEPTTL\r\n");
  EXPECT_EQ(p::ring(k, {"you", "me"}).commands, 2u);
  EXPECT_NE(p::leave_queue(k, {"me", "old"})
                .bytes.find("*4\r\n$4\r\nZREM\r\n$6\r\nt{r}:q\r\n$2\r\nme\r\n$3\r\nold\r\n"),
            std::string::npos);
}

TEST(ExclusiveWaitRead, ParsesPlaceInTheQueue) {
  // Captured from redis-server 7.0.15 (RESP3, CLIENT TRACKING ON OPTIN): one waiter ahead of us.
  Parsed second(
      "*10\r\n:0\r\n:1\r\n:1\r\n+OK\r\n*2\r\n$5\r\nother\r\n$2\r\nme\r\n+OK\r\n:2000\r\n+OK\r\n:"
      "4799\r\n%1\r\n$8\r\nx:holder\r\n$3\r\n100\r\n");
  const auto w = p::parse_exclusive_wait_read(second.frame(), true, "me");
  ASSERT_TRUE(w.ok);
  EXPECT_EQ(w.rank, 1);
  EXPECT_FALSE(w.elected());
  EXPECT_EQ(w.first, "other");
  EXPECT_TRUE(w.tracked);
  EXPECT_EQ(w.doorbell_pttl, 2000);
  EXPECT_EQ(w.pttl, 4799);
  ASSERT_EQ(w.fields.size(), 1u);
  EXPECT_EQ(w.fields[0], "x:holder");
  EXPECT_EQ(p::parse_exclusive_wait_read(second.frame(), true, "third").rank, 2);
  EXPECT_EQ(p::parse_exclusive_wait_read(second.frame(), true, "other").rank, 0);
  // The same waiter after the one ahead left (no HDEL; ZADD NX and SET NX changed nothing).
  Parsed first(
      "*9\r\n:0\r\n:1\r\n_\r\n*1\r\n$2\r\nme\r\n+OK\r\n:1598\r\n+OK\r\n:4397\r\n%1\r\n$8\r\nx:"
      "holder\r\n$3\r\n100\r\n");
  const auto f = p::parse_exclusive_wait_read(first.frame(), false, "me");
  ASSERT_TRUE(f.ok);
  EXPECT_TRUE(f.elected());
  EXPECT_EQ(f.doorbell_pttl, 1598);
  // Shape errors: wrong element count (with_hdel mismatch), a queue read that is not a list of
  // at most two names, aborted EXEC.
  EXPECT_FALSE(p::parse_exclusive_wait_read(first.frame(), true, "me").ok);
  Parsed bad("*9\r\n:0\r\n:1\r\n_\r\n:0\r\n+OK\r\n:1598\r\n+OK\r\n:4397\r\n%0\r\n");
  EXPECT_FALSE(p::parse_exclusive_wait_read(bad.frame(), false, "me").ok);
  Parsed four(
      "*9\r\n:0\r\n:1\r\n_\r\n*4\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n+OK\r\n:1\r\n+"
      "OK\r\n:1\r\n%0\r\n");
  EXPECT_FALSE(p::parse_exclusive_wait_read(four.frame(), false, "me").ok);
  // ZRANGE 0 2: the first three. The first learns the two behind it (whose doorbells its leave
  // rings); the second is the backup whatever follows it; the third is further back.
  Parsed three(
      "*9\r\n:0\r\n:1\r\n_\r\n*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n+OK\r\n:1\r\n+OK\r\n:1\r\n%"
      "0\r\n");
  const auto ta = p::parse_exclusive_wait_read(three.frame(), false, "a");
  ASSERT_TRUE(ta.ok);
  EXPECT_EQ(ta.rank, 0);
  EXPECT_EQ(ta.behind, (std::vector<std::string>{"b", "c"}));
  const auto tb = p::parse_exclusive_wait_read(three.frame(), false, "b");
  EXPECT_EQ(tb.rank, 1);
  EXPECT_TRUE(tb.behind.empty());
  EXPECT_EQ(p::parse_exclusive_wait_read(three.frame(), false, "c").rank, 2);
  EXPECT_TRUE(f.behind.empty());  // alone in the queue
  // With clear_wake (a parking client): DEL P{R}:wake right after the HDEL, one more reply.
  const p::Keys k = p::make_keys("t", "r");
  const auto cw = p::exclusive_wait_read(k, "x:me", "me", 7, 2000, true, true);
  EXPECT_EQ(cw.commands, 13u);
  EXPECT_NE(cw.bytes.find("$4\r\nx:me\r\n*2\r\n$3\r\nDEL\r\n$9\r\nt{r}:wake\r\n"),
            std::string::npos)
      << cw.bytes;
  Parsed cleared(
      "*11\r\n:0\r\n:1\r\n:1\r\n:1\r\n+OK\r\n*2\r\n$5\r\nother\r\n$2\r\nme\r\n+OK\r\n:"
      "2000\r\n+OK\r\n:4799\r\n%1\r\n$8\r\nx:holder\r\n$3\r\n100\r\n");
  const auto c = p::parse_exclusive_wait_read(cleared.frame(), true, "me", true, true);
  ASSERT_TRUE(c.ok);
  EXPECT_EQ(c.rank, 1);
  EXPECT_EQ(c.doorbell_pttl, 2000);
  EXPECT_EQ(c.pttl, 4799);
  EXPECT_FALSE(p::parse_exclusive_wait_read(cleared.frame(), true, "me").ok);  // one too many
  EXPECT_FALSE(p::parse_exclusive_wait_read(second.frame(), true, "me", true, true).ok);
  Parsed nil("_\r\n");
  EXPECT_FALSE(p::parse_exclusive_wait_read(nil.frame(), false, "me").ok);
}

TEST(LeaveQueue, ParsesTheNewFirstWaitersAndTheRing) {
  // Captured from redis-server 7.0.15.
  std::vector<std::string> first;
  Parsed next("*2\r\n:1\r\n*1\r\n$2\r\nme\r\n");
  ASSERT_TRUE(p::parse_leave_queue(next.frame(), first));
  EXPECT_EQ(first, std::vector<std::string>{"me"});
  Parsed empty("*2\r\n:1\r\n*0\r\n");
  ASSERT_TRUE(p::parse_leave_queue(empty.frame(), first));
  EXPECT_TRUE(first.empty());
  Parsed nil("_\r\n");
  EXPECT_FALSE(p::parse_leave_queue(nil.frame(), first));
  Parsed three("*2\r\n:1\r\n*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n");
  EXPECT_FALSE(p::parse_leave_queue(three.frame(), first));

  Parsed rung("+OK\r\n"), gone("_\r\n"), bad("-WRONGTYPE x\r\n");
  EXPECT_EQ(p::parse_ring(rung.frame()), p::Ring::rung);
  EXPECT_EQ(p::parse_ring(gone.frame()), p::Ring::gone);
  EXPECT_EQ(p::parse_ring(bad.frame()), p::Ring::bad_reply);
}

TEST(LeaveQueue, RingsTheExpectedDoorbellsInTheSameRequest) {
  const p::Keys k = p::make_keys("lockwire:", "r");
  const loop::Request alone = p::leave_queue(k, {"me"});
  const loop::Request both = p::leave_queue(k, {"me"}, {"b", "c"});
  EXPECT_EQ(both.bytes, alone.bytes + p::ring(k, {"b", "c"}).bytes);
  EXPECT_EQ(both.commands, p::kLeaveReplies + 2);
  EXPECT_EQ(both.kind, loop::RequestKind::atomic);
  EXPECT_EQ(both.shape().error(), nullptr);
  EXPECT_EQ(alone.commands, p::kLeaveReplies);
}

TEST(LeaveQueue, PlainFallbackWithoutMulti) {
  // Where the server refuses the block (OOM refuses every command queued in MULTI): ZREM and
  // ZRANGE on their own, pipelined.
  const auto k = p::make_keys("lockwire:", "r");
  const auto req = p::leave_queue_plain(k, {"a", "b"});
  EXPECT_EQ(req.bytes,
            "*4\r\n$4\r\nZREM\r\n$14\r\nlockwire:{r}:q\r\n$1\r\na\r\n$1\r\nb\r\n"
            "*4\r\n$6\r\nZRANGE\r\n$14\r\nlockwire:{r}:q\r\n$1\r\n0\r\n$1\r\n1\r\n");
  EXPECT_EQ(req.commands, 2u);
  EXPECT_EQ(req.bytes.find("MULTI"), std::string::npos);
  std::vector<std::string> first;
  Parsed head("*2\r\n$1\r\nc\r\n$1\r\nd\r\n");
  ASSERT_TRUE(p::parse_queue_head(head.frame(), first));
  EXPECT_EQ(first, (std::vector<std::string>{"c", "d"}));
  Parsed err("-OOM command not allowed when used memory > 'maxmemory'.\r\n");
  EXPECT_FALSE(p::parse_queue_head(err.frame(), first));
}

TEST(ForceNotice, KeyReadAndLeaseCheck) {
  EXPECT_EQ(p::notice_key("t:"), "t:force-released");
  const auto w = p::force_notice("t:force-released", "r");
  EXPECT_NE(w.bytes.find("$4\r\nHSET\r\n$16\r\nt:force-released\r\n$3\r\nres\r\n$1\r\nr\r\n"),
            std::string::npos);
  EXPECT_NE(w.bytes.find("$7\r\nHINCRBY\r\n$16\r\nt:force-released\r\n$3\r\nseq\r\n$1\r\n1\r\n"),
            std::string::npos);
  EXPECT_EQ(p::notice_read("t:force-released").commands, 2u);
  const auto connect = p::connect_probe("t:force-released");  // the first read, at each connect
  EXPECT_EQ(connect.commands, 6u);
  EXPECT_EQ(connect.bytes.find("*4\r\n$6\r\nCLIENT\r\n$8\r\nTRACKING\r\n$2\r\nON\r\n$"
                               "5\r\nOPTIN\r\n"),
            0u);
  // Captured from redis-server 7.0.15: before any force_release, then after the first.
  Parsed none("*2\r\n_\r\n_\r\n");
  const auto n0 = p::parse_notice_read(none.frame());
  ASSERT_TRUE(n0.ok);
  EXPECT_EQ(n0.seq, 0);
  EXPECT_TRUE(n0.resource.empty());
  Parsed one("*2\r\n$1\r\nr\r\n$1\r\n1\r\n");
  const auto n1 = p::parse_notice_read(one.frame());
  ASSERT_TRUE(n1.ok);
  EXPECT_EQ(n1.seq, 1);
  EXPECT_EQ(n1.resource, "r");
  for (const char* bad : {"*2\r\n$1\r\nr\r\n$1\r\nx\r\n", "*2\r\n$1\r\nr\r\n$2\r\n-1\r\n",
                          "*1\r\n$1\r\nr\r\n", "-NOPERM no\r\n", "*2\r\n:1\r\n:1\r\n"}) {
    Parsed f(bad);
    EXPECT_FALSE(p::parse_notice_read(f.frame()).ok) << bad;
  }

  const auto k = p::make_keys("t", "r");
  EXPECT_EQ(p::lease_check(Kind::exclusive, k, "o").bytes,
            "*3\r\n$7\r\nHEXISTS\r\n$4\r\nt{r}\r\n$3\r\nx:o\r\n");
  EXPECT_EQ(p::lease_check(Kind::shared, k, "o").commands, 2u);
}

TEST(Decide, Rules) {
  using D = p::Decision;
  EXPECT_EQ(p::decide(Kind::exclusive, "a", {}), D::free);
  EXPECT_EQ(p::decide(Kind::exclusive, "a", {"x:b"}), D::blocked);
  EXPECT_EQ(p::decide(Kind::exclusive, "a", {"s:b", "s:c"}), D::blocked_by_shared_only);
  EXPECT_EQ(p::decide(Kind::exclusive, "a", {"s:b", "x:c"}), D::blocked);
  EXPECT_EQ(p::decide(Kind::exclusive, "a", {"s:a"}), D::already_held);  // no upgrade
  EXPECT_EQ(p::decide(Kind::exclusive, "a", {"x:a"}), D::already_held);
  EXPECT_EQ(p::decide(Kind::shared, "a", {"s:b"}), D::free);
  EXPECT_EQ(p::decide(Kind::shared, "a", {"x:b"}), D::blocked);
  EXPECT_EQ(p::decide(Kind::shared, "a", {"x:a"}), D::already_held);
  EXPECT_EQ(p::decide(Kind::shared, "a", {"junk"}), D::blocked);
  p::SharedRead r{true, true, {"s:a"}};
  EXPECT_EQ(p::decide_shared("a", r), D::already_held);
  r.companion_exists = false;  // stale own field: re-armed by the grant
  EXPECT_EQ(p::decide_shared("a", r), D::free);
}

TEST(SharedGrant, InterpretsExec) {
  Parsed ok("*6\r\n:1\r\n+OK\r\n:1\r\n:0\r\n:0\r\n,1780000000000007\r\n");
  const auto a = p::parse_shared_grant(ok.frame());
  EXPECT_EQ(a.outcome, p::Outcome::granted);
  EXPECT_EQ(a.token, 1780000000000007u);
  Parsed nil("_\r\n");
  EXPECT_EQ(p::parse_shared_grant(nil.frame()).outcome, p::Outcome::aborted);
  const auto r = p::shared_grant(p::make_keys("P", "R"), "o", 100, 42);
  EXPECT_EQ(r.commands, 8u);
  EXPECT_NE(r.bytes.find("$4\r\nZADD\r\n$10\r\nP{R}:fence\r\n$2\r\nGT\r\n$2\r\n42\r\n"),
            std::string::npos);
  EXPECT_NE(r.bytes.find("GT"), std::string::npos);
}

TEST(WaitReplicas, CountsAcknowledgements) {
  const auto r = p::wait_replicas(1, 100);
  EXPECT_EQ(r.bytes, "*3\r\n$4\r\nWAIT\r\n$1\r\n1\r\n$3\r\n100\r\n");
  Parsed none(":0\r\n");
  EXPECT_EQ(p::parse_wait_replicas(none.frame()), 0);
  Parsed two(":2\r\n");
  EXPECT_EQ(p::parse_wait_replicas(two.frame()), 2);
  Parsed err("-ERR WAIT cannot be used with replica instances. Please also note that since Redis "
             "4.0 if a replica is configured to be writable (which is not the default) writes to "
             "replicas are just local and are not propagated.\r\n");
  EXPECT_FALSE(p::parse_wait_replicas(err.frame()));
}

// ROLE for ReplicaAcks::majority() without sentinels: a primary's replicas, nothing else.
TEST(Role, CountsAPrimarysReplicas) {
  EXPECT_EQ(p::role_request().bytes, "*1\r\n$4\r\nROLE\r\n");
  Parsed two("*3\r\n$6\r\nmaster\r\n:3129659\r\n*2\r\n*3\r\n$9\r\n127.0.0.1\r\n$4\r\n9001\r\n"
             "$7\r\n3129242\r\n*3\r\n$9\r\n127.0.0.1\r\n$4\r\n9002\r\n$7\r\n3129543\r\n");
  EXPECT_EQ(p::parse_role_replicas(two.frame()), 2);
  Parsed none("*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n");
  EXPECT_EQ(p::parse_role_replicas(none.frame()), 0);
  Parsed replica("*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n:9000\r\n$9\r\nconnected\r\n"
                 ":3167038\r\n");
  EXPECT_FALSE(p::parse_role_replicas(replica.frame()));
  Parsed err("-NOPERM this user has no permissions to run the 'role' command\r\n");
  EXPECT_FALSE(p::parse_role_replicas(err.frame()));
  Parsed odd(":1\r\n");
  EXPECT_FALSE(p::parse_role_replicas(odd.frame()));
}

// What each policy waits for (docs/protocol.md, *Replica-acknowledged grants*).
TEST(ReplicaAcksPolicy, NeededPerPolicy) {
  EXPECT_TRUE(ReplicaAcks{}.is_none());
  EXPECT_TRUE(ReplicaAcks::count(0).is_none());
  EXPECT_EQ(ReplicaAcks::count(2).needed(7), 2);
  const ReplicaAcks implicit = 3;  // `options.min_replicas = 3` keeps meaning three
  EXPECT_EQ(implicit, ReplicaAcks::count(3));
  const ReplicaAcks m = ReplicaAcks::majority();
  EXPECT_FALSE(m.is_none());
  EXPECT_EQ(m.needed(0), 0);  // a single node: nothing to wait for
  EXPECT_EQ(m.needed(1), 1);
  EXPECT_EQ(m.needed(2), 2);
  EXPECT_EQ(m.needed(3), 2);
  EXPECT_EQ(m.needed(4), 3);
  EXPECT_EQ(m.needed(5), 3);
}

TEST(RenewExec, InterpretsExec) {
  Parsed ok("*1\r\n:1\r\n");
  EXPECT_EQ(p::parse_renew_exec(Kind::exclusive, ok.frame()), p::RenewResult::renewed);
  Parsed nil("*-1\r\n");
  EXPECT_EQ(p::parse_renew_exec(Kind::exclusive, nil.frame()), p::RenewResult::aborted);
  Parsed gone("*2\r\n:0\r\n:0\r\n");
  EXPECT_EQ(p::parse_renew_exec(Kind::shared, gone.frame()), p::RenewResult::not_held);
  EXPECT_EQ(p::parse_renew_exec(Kind::exclusive, gone.frame()), p::RenewResult::bad_reply);
}

TEST(Inspect, ParsesHolders) {
  Parsed f("*3\r\n%2\r\n$3\r\ns:a\r\n$2\r\n10\r\n$3\r\ns:b\r\n$2\r\n10\r\n:900\r\n,42\r\n");
  const auto i = p::parse_inspect(f.frame());
  ASSERT_TRUE(i.ok);
  EXPECT_EQ(i.pttl, 900);
  EXPECT_EQ(i.last_token, 42u);
  ASSERT_EQ(i.holders.size(), 2u);
  EXPECT_EQ(i.holders[1].owner, "b");
  EXPECT_EQ(i.holders[1].kind, Kind::shared);
  Parsed e("*3\r\n%0\r\n:-2\r\n_\r\n");
  const auto j = p::parse_inspect(e.frame());
  ASSERT_TRUE(j.ok);
  EXPECT_EQ(j.last_token, 0u);
  EXPECT_TRUE(j.holders.empty());
}

TEST(Invalidate, ParsesPush) {
  std::vector<std::string> keys;
  bool all = false;
  Parsed f(">2\r\n$10\r\ninvalidate\r\n*1\r\n$4\r\nL{r}\r\n");
  ASSERT_TRUE(p::parse_invalidate(f.frame(), keys, all));
  EXPECT_FALSE(all);
  ASSERT_EQ(keys.size(), 1u);
  EXPECT_EQ(keys[0], "L{r}");
  Parsed flush(">2\r\n$10\r\ninvalidate\r\n_\r\n");
  ASSERT_TRUE(p::parse_invalidate(flush.frame(), keys, all));
  EXPECT_TRUE(all);
  Parsed msg(">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nm\r\n");
  EXPECT_FALSE(p::parse_invalidate(msg.frame(), keys, all));
}

}  // namespace
}  // namespace lockwire::lock

namespace lockwire::lock {
namespace {

// COMMAND INFO PEXPIRE, captured (RESP3) from redis-server 7.0.15 and 6.2.16.
const char* const kPexpireInfo70 =
    "*1\r\n*10\r\n$7\r\npexpire\r\n:-3\r\n~2\r\n+write\r\n+fast\r\n:1\r\n:1\r\n:1\r\n~3\r\n"
    "+@keyspace\r\n+@write\r\n+@fast\r\n~0\r\n~1\r\n%3\r\n$5\r\nflags\r\n~2\r\n+RW\r\n"
    "+update\r\n$12\r\nbegin_search\r\n%2\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n"
    "%1\r\n$5\r\nindex\r\n:1\r\n$9\r\nfind_keys\r\n%2\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\n"
    "spec\r\n%3\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n~0\r\n";
const char* const kPexpireInfo62 =
    "*1\r\n*7\r\n$7\r\npexpire\r\n:3\r\n~2\r\n+write\r\n+fast\r\n:1\r\n:1\r\n:1\r\n~3\r\n"
    "+@keyspace\r\n+@write\r\n+@fast\r\n";

// Replies captured from redis-server 7.0.15 (RESP3) for the connect probe.
TEST(ConnectProbe, LearnsWhatTheServerAllows) {
  const auto req = p::connect_probe("t:force-released");
  EXPECT_EQ(req.commands, 6u);
  EXPECT_NE(req.bytes.find("$4\r\nINFO\r\n$6\r\nmemory\r\n*1\r\n$4\r\nTIME\r\n"),
            std::string::npos);
  EXPECT_NE(req.bytes.find("*3\r\n$7\r\nCOMMAND\r\n$4\r\nINFO\r\n$7\r\nPEXPIRE\r\n"),
            std::string::npos);
  const std::string info =
      "# Memory\r\nused_memory:1018312\r\nmaxmemory:3145728\r\nmaxmemory_human:3.00M\r\n"
      "maxmemory_policy:allkeys-lru\r\n";
  std::string verbatim("=");  // (appends: g++ 12 -Wrestrict misfires on literal + string)
  verbatim.append(std::to_string(info.size() + 4)).append("\r\ntxt:").append(info).append("\r\n");
  ParsedReplies full({"+OK\r\n", "+OK\r\n", "*2\r\n_\r\n_\r\n", verbatim,
                      "*2\r\n$10\r\n1796130511\r\n$6\r\n528412\r\n", kPexpireInfo70});
  const auto a = p::parse_connect_probe(full.replies());
  ASSERT_TRUE(a.ok);
  EXPECT_TRUE(a.push_wakeups);
  EXPECT_TRUE(a.memory_known);
  EXPECT_EQ(a.maxmemory, 3145728);
  EXPECT_EQ(a.maxmemory_policy, "allkeys-lru");
  EXPECT_TRUE(a.notice.ok);
  EXPECT_TRUE(a.clock_known);
  EXPECT_EQ(a.server_us, 1796130511528412u);

  const std::string denied =
      "-NOPERM this user has no permissions to run the 'client|tracking' command\r\n";
  ParsedReplies refused(
      {denied,
       "-ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN "
       "or OPTOUT mode enabled\r\n",
       "*2\r\n_\r\n_\r\n", "-NOPERM this user has no permissions to run the 'info' command\r\n",
       "-NOPERM this user has no permissions to run the 'time' command\r\n",
       "-NOPERM this user has no permissions to run the 'command|info' command\r\n"});
  const auto b = p::parse_connect_probe(refused.replies());
  ASSERT_TRUE(b.ok);
  EXPECT_FALSE(b.push_wakeups);
  EXPECT_EQ(b.tracking_error,
            "NOPERM this user has no permissions to run the 'client|tracking' command");
  EXPECT_FALSE(b.memory_known);
  EXPECT_NE(b.info_error.find("'info'"), std::string::npos);
  EXPECT_FALSE(b.clock_known);
  EXPECT_NE(b.clock_error.find("'time'"), std::string::npos);
  // NOPERM says nothing about the server: not a refusal (an acquire meets what it meets).
  EXPECT_TRUE(b.expire_error.empty());
  EXPECT_EQ(p::unsupported_server(b, "redis 7.0.15", "127.0.0.1:6379"), "");
  EXPECT_EQ(p::unsupported_server(a, "redis 7.0.15", "127.0.0.1:6379"), "");

  ParsedReplies three({"+OK\r\n", "+OK\r\n", "*2\r\n_\r\n_\r\n", verbatim});
  EXPECT_FALSE(p::parse_connect_probe(three.replies()).ok);
}

// Captured from redis-server 6.2.16 (RESP3): everything but PEXPIRE's options is there. The
// refusal names the server, its version and the minimum, and quotes the server's answer.
TEST(ConnectProbe, RefusesAServerWithoutPexpireOptions) {
  const std::string info = "# Memory\r\nmaxmemory:0\r\nmaxmemory_policy:noeviction\r\n";
  std::string verbatim("=");
  verbatim.append(std::to_string(info.size() + 4)).append("\r\ntxt:").append(info).append("\r\n");
  auto probe = [&](const std::string& command_info) {
    ParsedReplies r({"+OK\r\n", "+OK\r\n", "*2\r\n_\r\n_\r\n", verbatim,
                     "*2\r\n$10\r\n1796130511\r\n$6\r\n528412\r\n", command_info});
    return p::parse_connect_probe(r.replies());
  };
  const auto a = probe(kPexpireInfo62);
  ASSERT_TRUE(a.ok);
  EXPECT_TRUE(a.push_wakeups);
  EXPECT_EQ(a.expire_error, "COMMAND INFO PEXPIRE: arity 3, no options");
  EXPECT_EQ(p::unsupported_server(a, "redis 6.2.16", "127.0.0.1:6379"),
            "redis 6.2.16 at 127.0.0.1:6379 is older than lockwire's minimum, Redis 7.0 or Valkey "
            "7.2: it lacks PEXPIRE's NX/GT options, which every acquire needs (COMMAND INFO "
            "PEXPIRE: arity 3, no options)");
  // Without HELLO's name (a proxy that hides it) the message still stands.
  EXPECT_EQ(p::unsupported_server(a, "", "").rfind("the server is older than", 0), 0u);

  // 7.0 and later: -3. Answers that say nothing about it are not a refusal.
  EXPECT_TRUE(probe(kPexpireInfo70).expire_error.empty());
  for (const char* e : {"-ERR unknown command 'COMMAND', with args beginning with: 'INFO' \r\n",
                        "-NOPERM this user has no permissions to run the 'command' command\r\n",
                        "*1\r\n_\r\n", "*0\r\n", ":3\r\n"}) {
    const auto b = probe(e);
    ASSERT_TRUE(b.ok);
    EXPECT_EQ(p::unsupported_server(b, "redis 7.2.6", "x:1"), "") << e;
  }
}

TEST(ServerWords, FirstErrorWithTheExecAbortAfterIt) {
  ParsedReplies aborted({"+OK\r\n", "+QUEUED\r\n",
                         "-NOPERM this user has no permissions to run the 'zadd' command\r\n",
                         "-EXECABORT Transaction discarded because of previous errors.\r\n"});
  EXPECT_EQ(p::server_words(aborted.replies()),
            "NOPERM this user has no permissions to run the 'zadd' command (EXECABORT "
            "Transaction discarded because of previous errors.)");
  ParsedReplies inside({"+OK\r\n", "+QUEUED\r\n",
                        "*2\r\n:1\r\n-WRONGTYPE Operation against a key holding the wrong kind "
                        "of value\r\n"});
  EXPECT_EQ(p::server_words(inside.replies()),
            "WRONGTYPE Operation against a key holding the wrong kind of value");
  ParsedReplies fine({"+OK\r\n", ":1\r\n"});
  EXPECT_EQ(p::server_words(fine.replies()), "");
  EXPECT_TRUE(p::transient_server_error("LOADING Redis is loading the dataset in memory"));
  EXPECT_TRUE(p::transient_server_error("TRYAGAIN Multiple keys request during rehashing"));
  EXPECT_FALSE(p::transient_server_error("LOADINGX"));
  EXPECT_FALSE(p::transient_server_error("READONLY You can't write against a read only replica."));
}

TEST(WaitRead, UntrackedVariantsLeaveCachingOut) {
  const auto k = p::make_keys("t", "r");
  EXPECT_EQ(p::wait_read(k, "x:o", false).bytes.find("CACHING"), std::string::npos);
  EXPECT_EQ(p::wait_read(k, "x:o", false).commands, 5u);  // MULTI HDEL PTTL HGETALL EXEC
  const auto ex = p::exclusive_wait_read(k, "", "o", 7, 1000, false);
  EXPECT_EQ(ex.bytes.find("CACHING"), std::string::npos);
  EXPECT_EQ(ex.commands, 9u);
  // MULTI ZADD PEXPIRE SET ZRANGE PTTL PTTL HGETALL EXEC, untracked, we are first.
  Parsed exec("*7\r\n:1\r\n:1\r\n+OK\r\n*1\r\n$1\r\no\r\n:1000\r\n:5000\r\n"
              "%1\r\n$3\r\nx:h\r\n$4\r\n5000\r\n");
  const auto wr = p::parse_exclusive_wait_read(exec.frame(), false, "o", false);
  ASSERT_TRUE(wr.ok);
  EXPECT_FALSE(wr.tracked);
  EXPECT_TRUE(wr.elected());
  EXPECT_EQ(wr.doorbell_pttl, 1000);
  EXPECT_EQ(wr.pttl, 5000);
  ASSERT_EQ(wr.fields.size(), 1u);
  EXPECT_FALSE(p::parse_exclusive_wait_read(exec.frame(), false, "o", true).ok);
}

TEST(ExclusiveWaitRead, CachingRefusedInsideTheBlockIsAnUntrackedRead) {
  // As redis-server 7.0.15 answers a tracked wait block on a connection without tracking: both
  // CLIENT CACHING YES fail inside EXEC, everything else runs. Found by the race catalogue's
  // tracking-refused scenario: the second error was read as the holder set's PTTL (not ok).
  Parsed exec(
      "*10\r\n:1\r\n:1\r\n:1\r\n+OK\r\n*2\r\n$1\r\na\r\n$1\r\no\r\n"
      "-ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or "
      "OPTOUT mode enabled\r\n:1000\r\n"
      "-ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or "
      "OPTOUT mode enabled\r\n:5000\r\n%1\r\n$3\r\nx:h\r\n$4\r\n5000\r\n");
  const auto wr = p::parse_exclusive_wait_read(exec.frame(), true, "o", true);
  ASSERT_TRUE(wr.ok);
  EXPECT_FALSE(wr.tracked);
  EXPECT_EQ(wr.rank, 1);
  EXPECT_EQ(wr.doorbell_pttl, 1000);
  EXPECT_EQ(wr.pttl, 5000);
  ASSERT_EQ(wr.fields.size(), 1u);
  EXPECT_EQ(wr.fields[0], "x:h");
}

// Issue #18: a later acquire of a resource on the connection that raised its counter to the
// floor leaves the ZADD GT out (docs/protocol.md, Fencing tokens); its EXEC has 4 replies.
TEST(ExclusiveAcquire, WithoutTheFloorTheBlockLeavesOutZaddGt) {
  const auto r = p::exclusive_acquire(p::make_keys("P", "R"), "x:o", 500, 1780000000000000, false);
  EXPECT_EQ(r.kind, loop::RequestKind::atomic);
  EXPECT_EQ(r.commands, 6u);
  EXPECT_EQ(r.bytes,
            "*1\r\n$5\r\nMULTI\r\n"
            "*4\r\n$6\r\nHSETNX\r\n$4\r\nP{R}\r\n$3\r\nx:o\r\n$3\r\n500\r\n"
            "*2\r\n$4\r\nHLEN\r\n$4\r\nP{R}\r\n"
            "*4\r\n$7\r\nPEXPIRE\r\n$4\r\nP{R}\r\n$3\r\n500\r\n$2\r\nNX\r\n"
            "*5\r\n$4\r\nZADD\r\n$10\r\nP{R}:fence\r\n$4\r\nINCR\r\n$1\r\n1\r\n$1\r\nt\r\n"
            "*1\r\n$4\r\nEXEC\r\n");
  EXPECT_EQ(p::exclusive_acquire(p::make_keys("P", "R"), "x:o", 500, 1780000000000000, true).bytes,
            p::exclusive_acquire(p::make_keys("P", "R"), "x:o", 500, 1780000000000000).bytes);
  {
    Parsed f("*4\r\n:1\r\n:1\r\n:1\r\n,1780000000000002\r\n");
    const auto a = p::parse_exclusive_acquire(f.frame(), false);
    EXPECT_EQ(a.outcome, p::Outcome::granted);
    EXPECT_EQ(a.token, 1780000000000002u);
    EXPECT_EQ(p::parse_exclusive_acquire(f.frame()).outcome, p::Outcome::bad_reply);  // 5 expected
  }
  {
    Parsed f("*4\r\n:1\r\n:2\r\n:0\r\n,4\r\n");
    EXPECT_EQ(p::parse_exclusive_acquire(f.frame(), false).outcome, p::Outcome::contended);
  }
  {
    Parsed f("*4\r\n:0\r\n:1\r\n:0\r\n,5\r\n");
    EXPECT_EQ(p::parse_exclusive_acquire(f.frame(), false).outcome, p::Outcome::already_held);
  }
  {
    Parsed f("*5\r\n:1\r\n:1\r\n:1\r\n:1\r\n,1780000000000001\r\n");
    EXPECT_EQ(p::parse_exclusive_acquire(f.frame(), false).outcome, p::Outcome::bad_reply);
  }
}

// Issue #31: with a fence TTL every block that raises P{R}:fence ends its fencing commands with
// PEXPIRE P{R}:fence <fence_ttl and a third>, one more reply in its EXEC; issue #30: a block
// that does not raise sends no PEXPIRE (docs/protocol.md, "Fencing tokens").
TEST(FenceTtl, ExclusiveBlockExpiresTheFence) {
  const p::Keys k = p::make_keys("P", "R");
  const auto r = p::exclusive_acquire(k, "x:o", 500, 1780000000000000, true, 600000);
  EXPECT_EQ(r.commands, 8u);
  const std::string tail =
      "*5\r\n$4\r\nZADD\r\n$10\r\nP{R}:fence\r\n$4\r\nINCR\r\n$1\r\n1\r\n$1\r\nt\r\n"
      "*3\r\n$7\r\nPEXPIRE\r\n$10\r\nP{R}:fence\r\n$6\r\n800000\r\n"
      "*1\r\n$4\r\nEXEC\r\n";
  ASSERT_GE(r.bytes.size(), tail.size());
  EXPECT_EQ(r.bytes.substr(r.bytes.size() - tail.size()), tail);
  const auto plain = p::exclusive_acquire(k, "x:o", 500, 1780000000000000, false, 600000);
  EXPECT_EQ(plain.commands, 6u);  // MULTI HSETNX HLEN PEXPIRE-NX ZADD-INCR EXEC
  EXPECT_EQ(plain.bytes.find("P{R}:fence\r\n$6"), std::string::npos);  // no PEXPIRE of it
  {
    Parsed f("*6\r\n:1\r\n:1\r\n:1\r\n:1\r\n,1780000000000001\r\n:1\r\n");
    const auto a = p::parse_exclusive_acquire(f.frame(), true, true);
    EXPECT_EQ(a.outcome, p::Outcome::granted);
    EXPECT_EQ(a.token, 1780000000000001u);
    EXPECT_EQ(p::parse_exclusive_acquire(f.frame(), true, false).outcome, p::Outcome::bad_reply);
  }
  {
    Parsed f("*4\r\n:1\r\n:2\r\n:0\r\n,4\r\n");  // no ZADD GT, no PEXPIRE: the token is 4th
    const auto a = p::parse_exclusive_acquire(f.frame(), false, true);
    EXPECT_EQ(a.outcome, p::Outcome::contended);
    EXPECT_EQ(a.token, 4u);
    Parsed five("*5\r\n:1\r\n:2\r\n:0\r\n,4\r\n:1\r\n");  // one reply too many
    EXPECT_EQ(p::parse_exclusive_acquire(five.frame(), false, true).outcome,
              p::Outcome::bad_reply);
  }
  {
    Parsed f("*6\r\n:1\r\n:1\r\n:1\r\n:1\r\n,7\r\n:0\r\n");  // PEXPIRE must have set it
    EXPECT_EQ(p::parse_exclusive_acquire(f.frame(), true, true).outcome, p::Outcome::bad_reply);
  }
}

TEST(FenceTtl, WatchedGrantsExpireTheFence) {
  const p::Keys k = p::make_keys("P", "R");
  const std::string pexpire = "*3\r\n$7\r\nPEXPIRE\r\n$10\r\nP{R}:fence\r\n$4\r\n2666\r\n";
  EXPECT_NE(p::shared_grant(k, "o", 100, 42, 2000).bytes.find(pexpire), std::string::npos);
  EXPECT_NE(p::upgrade_grant(k, "o", 100, 42, 2000).bytes.find(pexpire), std::string::npos);
  EXPECT_NE(p::fair_grant(k, "o", 100, 42, 2000).bytes.find(pexpire), std::string::npos);
  EXPECT_EQ(p::shared_grant(k, "o", 100, 42).bytes.find("PEXPIRE\r\n$10"), std::string::npos);
  Parsed shared("*7\r\n:1\r\n+OK\r\n:1\r\n:0\r\n:0\r\n,1780000000000007\r\n:1\r\n");
  EXPECT_EQ(p::parse_shared_grant(shared.frame(), true).token, 1780000000000007u);
  EXPECT_EQ(p::parse_shared_grant(shared.frame(), false).outcome, p::Outcome::bad_reply);
  Parsed upgrade("*7\r\n:1\r\n:1\r\n:1\r\n:1\r\n:0\r\n,1780000000000008\r\n:1\r\n");
  EXPECT_EQ(p::parse_upgrade_grant(upgrade.frame(), true).token, 1780000000000008u);
  EXPECT_EQ(p::parse_upgrade_grant(upgrade.frame()).outcome, p::Outcome::bad_reply);
  // HSETNX PEXPIRE ZADD-GT ZADD-INCR PEXPIRE-fence ZREM
  Parsed fair("*6\r\n:1\r\n:1\r\n:0\r\n,1780000000000009\r\n:1\r\n:1\r\n");
  EXPECT_EQ(p::parse_fair_grant(fair.frame(), true).token, 1780000000000009u);
  EXPECT_EQ(p::parse_fair_grant(fair.frame()).outcome, p::Outcome::bad_reply);
}

TEST(FenceTtl, FairTicketIsRaisedToTheFloorAndExpires) {
  const p::Keys k = p::make_keys("P", "R");
  const auto r = p::fair_read(k, 42, 2000);
  EXPECT_EQ(r.commands, 6u);  // WATCH HLEN ZRANGE ZADD-GT ZADD-INCR PEXPIRE
  EXPECT_NE(r.bytes.find("$2\r\nGT\r\n$2\r\n42\r\n"), std::string::npos);
  EXPECT_EQ(p::fair_read(k).commands, 4u);  // no floor, no TTL: as before
  ParsedReplies with({"+OK\r\n", ":0\r\n", "*0\r\n", ":1\r\n", ",43\r\n", ":1\r\n"});
  const auto fr = p::parse_fair_read(with.replies(), true, true);
  EXPECT_TRUE(fr.ok);
  EXPECT_EQ(fr.ticket, 43u);
  EXPECT_FALSE(p::parse_fair_read(with.replies()).ok);
  ParsedReplies plain({"+OK\r\n", ":1\r\n", "*1\r\n$1\r\nh\r\n", ",7\r\n"});
  const auto pr = p::parse_fair_read(plain.replies());
  EXPECT_TRUE(pr.ok);
  EXPECT_EQ(pr.head, "h");
  EXPECT_EQ(pr.ticket, 7u);
}

// The park is one request: the pop's three commands, then the block, whose replies are the
// request's from kParkPopReplies on.
TEST(Park, PopAndBlockAreOneRequest) {
  const p::Keys k = p::make_keys("lockwire:", "r");
  const loop::Request block = p::exclusive_acquire_untokened(k, "x:o", 1000);
  const loop::Request parked = p::park(k, 2000, 1000, block);
  EXPECT_EQ(parked.bytes, p::park_pop(k, 2000, 1000).bytes + block.bytes);
  EXPECT_EQ(parked.commands, p::kParkPopReplies + block.commands);
  const loop::RequestShape shape = loop::RequestShape::of(parked.bytes);
  EXPECT_EQ(shape.error(), nullptr);
  EXPECT_EQ(shape.kind(), loop::RequestKind::atomic);
  const ParsedReplies r({":1\r\n", ":1\r\n", "*3\r\n$10\r\nlockwire:w\r\n$1\r\nt\r\n,0\r\n",
                         "+OK\r\n", "+QUEUED\r\n", "+QUEUED\r\n", "+QUEUED\r\n",
                         "*3\r\n:1\r\n:1\r\n:1\r\n"});
  const loop::Replies all = r.replies();
  EXPECT_EQ(p::park_refusal(all.first(p::kParkPopReplies)), "");
  const loop::Replies tail = all.from(p::kParkPopReplies);
  ASSERT_EQ(tail.size(), 5u);
  EXPECT_EQ(p::parse_exclusive_acquire_untokened(tail.back()).outcome, p::Outcome::granted);
}

// Only a refusal that stays ends parking: the ACL's, or a command the server lacks. A full
// server refusing the arming ZADD (the pop still ran) does not.
TEST(Park, OnlyALastingRefusalEndsParking) {
  const ParsedReplies noperm(
      {"-NOPERM User u has no permissions to run the 'bzpopmin' command\r\n", ":1\r\n", "_\r\n"});
  EXPECT_EQ(p::park_refusal(noperm.replies()),
            "NOPERM User u has no permissions to run the 'bzpopmin' command");
  const ParsedReplies unknown({":1\r\n", ":1\r\n", "-ERR unknown command 'BZPOPMIN'\r\n"});
  EXPECT_EQ(p::park_refusal(unknown.replies()), "ERR unknown command 'BZPOPMIN'");
  const ParsedReplies oom(
      {"-OOM command not allowed when used memory > 'maxmemory'.\r\n", ":0\r\n", "_\r\n"});
  EXPECT_EQ(p::park_refusal(oom.replies()), "");
  const ParsedReplies short_reply({":1\r\n"});
  EXPECT_NE(p::park_refusal(short_reply.replies()), "");
}

}  // namespace
}  // namespace lockwire::lock
