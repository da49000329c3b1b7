// The sentinels' vouch (loop/src/sentinel_vouch.hpp, private), driven by SENTINEL MASTER and
// SENTINEL SENTINELS replies alone: no loop, no connection. Times are our monotonic clock in
// milliseconds from 100 s; the replies carry the fields redis-server 7.0.15's sentinel sends.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lockwire/resp/encoder.hpp"
#include "lockwire/resp/parser.hpp"
#include "parsed_frame.hpp"
#include "sentinel_vouch.hpp"

namespace lockwire::loop::detail {
namespace {

using std::chrono::milliseconds;

using testing::Parsed;

MonoTime at(std::int64_t ms) { return MonoTime{} + milliseconds(100'000 + ms); }

struct Master {
  std::string ip = "10.1.0.1";
  int port = 6379;
  std::string flags = "master";
  int last_ok = 200;
  int down_after = 3000;
  int quorum = 2;
  int others = 2;
  int replicas = -1;  // num-slaves; -1: the field is left out
};

std::string master_reply(const Master& m) {
  std::string out;
  const std::vector<std::pair<std::string, std::string>> f = {
      {"name", "mymaster"},
      {"ip", m.ip},
      {"port", std::to_string(m.port)},
      {"flags", m.flags},
      {"last-ping-sent", "0"},
      {"last-ok-ping-reply", std::to_string(m.last_ok)},
      {"down-after-milliseconds", std::to_string(m.down_after)},
      {"num-other-sentinels", std::to_string(m.others)},
      {"quorum", std::to_string(m.quorum)}};
  auto fields = f;
  if (m.replicas >= 0) fields.emplace_back("num-slaves", std::to_string(m.replicas));
  resp::append_map_header(out, fields.size());
  for (const auto& [k, v] : fields) {
    resp::append_blob(out, k);
    resp::append_blob(out, v);
  }
  return out;
}

// SENTINEL SENTINELS: the peers, each with its flags.
std::string peers_reply(std::vector<std::string> flags) {
  std::string out;
  resp::append_array_header(out, flags.size());
  for (const auto& f : flags) {
    resp::append_map_header(out, 2);
    resp::append_blob(out, "name");
    resp::append_blob(out, "peer");
    resp::append_blob(out, "flags");
    resp::append_blob(out, f);
  }
  return out;
}
const std::string kCleanPeers = peers_reply({"sentinel", "sentinel"});

void answer(SentinelVouch& v, std::size_t i, std::int64_t sent_ms, std::int64_t rtt_ms,
            const Master& m, const std::string& peers = kCleanPeers) {
  Parsed mr(master_reply(m)), pr(peers);
  v.answered(i, at(sent_ms), at(sent_ms + rtt_ms), mr.frame, pr.frame);
}

SentinelVouch three() {
  SentinelVouch v(3);
  v.on_server("10.1.0.1", 6379);
  return v;
}

// Three sentinels that answered `rounds` rounds 600 ms apart with `m` (two settle them).
SentinelVouch answered_three(const Master& m, int rounds = 2) {
  SentinelVouch v = three();
  for (int round = 0; round < rounds; ++round) {
    for (std::size_t i = 0; i < 3; ++i) answer(v, i, round * 600, 1, m);
  }
  return v;
}

TEST(SentinelVouch, NothingBeforeAnyAnswer) {
  SentinelVouch v = three();
  EXPECT_EQ(v.until(at(0)), MonoTime{});
}

TEST(SentinelVouch, EveryoneCleanVouchesAtOnceUpToTheSecondLatestBound) {
  SentinelVouch v = three();
  Master m;
  // Round 1 starts the runs; round 2 (every other sentinel showed no memory of a "down"
  // answer after the runs began) settles them: no 5 s wait.
  for (std::size_t i = 0; i < 3; ++i) answer(v, i, 0, 1, m);
  m.last_ok = 500;
  answer(v, 0, 600, 1, m);
  m.last_ok = 100;
  answer(v, 1, 600, 1, m);
  m.last_ok = 900;
  answer(v, 2, 600, 1, m);
  const MonoTime u = v.until(at(601));
  // N=3, quorum 2: two sentinels must stay clean; the second latest bound is sentinel 0's
  // run end, 0 + (3000 - 200 - 1) * 0.99 from round 1 or 600 + (3000 - 500 - 1) * 0.99.
  const auto bound = [](std::int64_t sent, std::int64_t left) {
    return at(sent) + std::chrono::nanoseconds(static_cast<std::int64_t>(left * 1e6 * 0.99));
  };
  const MonoTime s0 = std::max(bound(0, 2799), bound(600, 2499));
  const MonoTime s1 = std::max(bound(0, 2799), bound(600, 2899));
  const MonoTime s2 = std::max(bound(0, 2799), bound(600, 2099));
  std::vector<MonoTime> ends = {s0, s1, s2};
  std::sort(ends.begin(), ends.end(), std::greater<>());
  EXPECT_EQ(u, ends[1]);
  EXPECT_GT(u, at(2600));
}

TEST(SentinelVouch, AQuorumOfSilentSentinelsEndsTheVouchAtTheirLastBounds) {
  Master m;
  SentinelVouch v = answered_three(m, 3);
  const MonoTime u = v.until(at(1300));
  EXPECT_GT(u, at(1300));
  // The holder is cut off from two sentinels: only sentinel 0 keeps answering. The horizon
  // stops at the last bounds of the two silent ones, before their down-after can run out.
  for (int round = 3; round < 20; ++round) answer(v, 0, round * 600, 1, m);
  EXPECT_EQ(v.until(at(1300)), u);
  EXPECT_EQ(v.until(u), MonoTime{}) << v.explain(u);
  EXPECT_LE(u, at(1200 + 3000 - 200));
}

TEST(SentinelVouch, ASentinelThatSaysDownOrFailingOverOrNamesAnotherPrimaryDoesNotVouch) {
  for (const std::string flags : {"s_down,master", "o_down,s_down,master",
                                  "master,failover_in_progress"}) {
    Master m;
    SentinelVouch v = answered_three(m);
    ASSERT_GT(v.until(at(601)), at(601));
    Master bad = m;
    bad.flags = flags;
    answer(v, 1, 1200, 1, bad);
    answer(v, 2, 1200, 1, bad);
    EXPECT_EQ(v.until(at(1201)), MonoTime{}) << flags;
  }
  {
    // One sentinel failing the primary over (SENTINEL FAILOVER needs no quorum) is enough.
    Master m;
    SentinelVouch v = answered_three(m);
    Master leader = m;
    leader.flags = "master,failover_in_progress";
    answer(v, 0, 1200, 1, leader);
    EXPECT_EQ(v.until(at(1201)), MonoTime{});
    EXPECT_NE(v.explain(at(1201)).find("is failing the primary over"), std::string::npos);
  }
  Master m;
  SentinelVouch v = answered_three(m);
  Master other = m;
  other.ip = "10.1.0.2";
  answer(v, 0, 1200, 1, other);
  answer(v, 1, 1200, 1, other);
  EXPECT_EQ(v.until(at(1201)), MonoTime{});
  EXPECT_NE(v.explain(at(1201)).find("names 10.1.0.2:6379 as the primary"), std::string::npos);
}

TEST(SentinelVouch, APeerRememberedDownNeedsFiveSecondsOfCleanRun) {
  SentinelVouch v = three();
  Master m;
  const std::string remembered = peers_reply({"sentinel,master_down", "sentinel"});
  // Sentinel 2 remembers a peer answering "down" (a flapping primary): runs must be 5 s old.
  for (int round = 0; round < 12; ++round) {
    for (std::size_t i = 0; i < 3; ++i) {
      answer(v, i, round * 500, 1, m, i == 2 ? remembered : kCleanPeers);
    }
    const MonoTime now = at(round * 500 + 1);
    if (round * 500 + 1 < 4900) {
      EXPECT_EQ(v.until(now), MonoTime{}) << "round " << round;
    }
  }
  EXPECT_GT(v.until(at(5501)), at(5501));
}

TEST(SentinelVouch, MoreSentinelsThanListedCountAsSilent) {
  SentinelVouch v = three();
  Master m;
  m.others = 4;  // five sentinels monitor the primary; we ask three of them
  m.quorum = 3;
  for (int round = 0; round < 12; ++round) {
    for (std::size_t i = 0; i < 3; ++i) answer(v, i, round * 500, 1, m);
  }
  // N=5, quorum 3: three clean sentinels needed, and the two unknown ones never are clean
  // of memory, so the runs must be 5 s old.
  EXPECT_GT(v.until(at(5501)), at(5501));
  m.quorum = 2;  // now four must stay clean: impossible with three asked
  for (std::size_t i = 0; i < 3; ++i) answer(v, i, 6000, 1, m);
  EXPECT_EQ(v.until(at(6001)), MonoTime{});
}

TEST(SentinelVouch, AnotherServerForgetsTheReportsAndErrorsKeepTheirWords) {
  Master m;
  SentinelVouch v = answered_three(m);
  ASSERT_GT(v.until(at(601)), at(601));
  v.on_server("10.1.0.1", 6379);  // a reconnect to the same primary keeps them
  EXPECT_GT(v.until(at(601)), at(601));
  v.on_server("10.1.0.2", 6379);
  EXPECT_EQ(v.until(at(601)), MonoTime{});
  Parsed err("-NOPERM this user has no permissions to run the 'sentinel|master' command\r\n");
  Parsed peers(kCleanPeers);
  v.answered(0, at(700), at(701), err.frame, peers.frame);
  EXPECT_NE(v.explain(at(701)).find("-NOPERM this user"), std::string::npos) << v.explain(at(701));
}

TEST(SentinelVouch, PollsAFifthOfDownAfterWithinBounds) {
  SentinelVouch v = three();
  EXPECT_EQ(v.poll_period(), milliseconds(250));  // before any answer
  Master m;
  answer(v, 0, 0, 1, m);
  EXPECT_EQ(v.poll_period(), milliseconds(600));
  m.down_after = 30000;
  answer(v, 0, 0, 1, m);
  EXPECT_EQ(v.poll_period(), milliseconds(1000));
  m.down_after = 100;
  answer(v, 1, 0, 1, m);
  EXPECT_EQ(v.poll_period(), milliseconds(50));
}

// ClientOptions' majority of replicas: the most any sentinel reports for our primary, down
// replicas included (num-slaves); nothing from a sentinel naming another primary; forgotten when
// the primary changes.
TEST(SentinelVouch, KnownReplicasAreTheMostASentinelReports) {
  SentinelVouch v = three();
  EXPECT_EQ(v.known_replicas(), -1);
  Master m;
  answer(v, 0, 0, 1, m);  // no num-slaves field: still unknown
  EXPECT_EQ(v.known_replicas(), -1);
  m.replicas = 2;
  answer(v, 0, 0, 1, m);
  m.replicas = 3;
  answer(v, 1, 0, 1, m);
  EXPECT_EQ(v.known_replicas(), 3);
  Master other = m;
  other.ip = "10.1.0.2";
  other.replicas = 7;
  answer(v, 2, 0, 1, other);
  EXPECT_EQ(v.known_replicas(), 3);
  v.on_server("10.1.0.2", 6379);
  EXPECT_EQ(v.known_replicas(), -1);
}

TEST(SentinelVouch, MalformedRepliesAreRefusedWithAReason) {
  std::string why;
  Parsed empty_map("%0\r\n");
  EXPECT_FALSE(parse_master_view(empty_map.frame, why));
  EXPECT_NE(why.find("without ip"), std::string::npos);
  Parsed not_array("+OK\r\n");
  EXPECT_FALSE(remembers_peer_down(not_array.frame, why));
  Parsed no_flags("*1\r\n%1\r\n$4\r\nname\r\n$1\r\nx\r\n");
  EXPECT_FALSE(remembers_peer_down(no_flags.frame, why));
  Parsed none("*0\r\n");
  EXPECT_EQ(remembers_peer_down(none.frame, why), std::optional<bool>(false));
}

}  // namespace
}  // namespace lockwire::loop::detail
