// The masters' vouch on a Redis Cluster (lock/src/cluster_vouch.hpp, private), driven by node
// answers alone: no loop, no connection. Replies captured from a real redis-server 7.0.15 3+3
// cluster (tests/lock/data/cluster_vouch_*.resp: TIME, CLUSTER NODES, CONFIG GET
// cluster-node-timeout and COUNT-FAILURE-REPORTS for the 3 primaries, pipelined, RESP3; the
// primary 127.0.0.1:31005 frozen by SIGSTOP), and built ones of the same shape. Times are our
// monotonic clock in ms from 100 s.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cluster_vouch.hpp"
#include "lockwire/resp/encoder.hpp"
#include "lockwire/resp/parser.hpp"
#include "lockwire/resp/reply.hpp"

namespace lockwire::lock::detail {
namespace {

using std::chrono::milliseconds;

MonoTime at(std::int64_t ms) {
  return MonoTime{} + milliseconds(100'000 + ms);
}
std::int64_t ms_of(MonoTime t) {
  return std::chrono::duration_cast<milliseconds>(t - at(0)).count();
}
constexpr MonoTime kNoLimit{Nanos::max()};

std::vector<resp::OwnedFrame> frames_of(const std::string& bytes) {
  std::vector<resp::OwnedFrame> out;
  std::string_view rest = bytes;
  while (!rest.empty()) {
    resp::Parser p;
    const auto r = p.parse(rest);
    EXPECT_EQ(r.status, resp::ParseResult::Status::complete);
    if (!r.ok()) break;
    out.emplace_back(p.frame());
    rest.remove_prefix(r.consumed);
  }
  return out;
}

std::string data(const std::string& name) {
  std::ifstream f(std::string(LOCKWIRE_TEST_DATA) + "/" + name, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The captured cluster: P (31005) and the two other masters, as ids.
const std::string kP = "4becfd3884b80dc2d82e610f5477d9ab6c969bf8";
const std::vector<std::string> kCapturedIds = {kP, "9aa706bd36fb696e67af570aa43f59a92c32df3c",
                                               "6ea2c23539d18a86f6c4688ef8ea46c670942cb8"};

// Frames that back an Answer (kept alive together).
struct Fed {
  std::vector<resp::OwnedFrame> frames;
  ClusterVouch::Answer answer(const std::vector<std::string>& ids) const {
    ClusterVouch::Answer a;
    a.time = frames.at(0).frame();
    a.nodes = frames.at(1).frame();
    a.config = frames.at(2).frame();
    for (std::size_t i = 0; i < ids.size(); ++i)
      a.counts.emplace_back(ids[i], frames.at(3 + i).frame());
    return a;
  }
};

// --- a built 3+3 cluster: masters a, b, c at 10.0.0.1-3:7000, replicas d (of a), e, f ---------

std::string id(char c) {
  return std::string(40, c);
}
std::string addr(char c) {
  return "10.0.0." + std::to_string(c - 'a' + 1) + ":7000";
}

struct Line {
  std::string flags;  // without "myself"
  std::string master = "-";
  std::int64_t ping_sent = 0;  // 0 = none pending
  std::string slots;
};
using View = std::map<char, Line>;

View healthy() {
  return {{'a', {"master", "-", 0, "0-5460"}},      {'b', {"master", "-", 0, "5461-10922"}},
          {'c', {"master", "-", 0, "10923-16383"}}, {'d', {"slave", id('a'), 0, ""}},
          {'e', {"slave", id('b'), 0, ""}},         {'f', {"slave", id('c'), 0, ""}}};
}

// One node's answer as 7.0.15 sends it (RESP3): its clock `t_ms`, its view, node timeout 2000.
std::string answer_bytes(char self, std::int64_t t_ms, const View& v,
                         const std::map<char, int>& reports = {}, int nt = 2000) {
  std::string out;
  resp::append_array_header(out, 2);
  resp::append_blob(out, std::to_string(t_ms / 1000));
  resp::append_blob(out, std::to_string((t_ms % 1000) * 1000 + 123));
  std::string text;
  for (const auto& [n, l] : v) {
    text += id(n) + " " + addr(n) + "@17000 " + (n == self ? "myself," : "") + l.flags + " " +
            l.master + " " + std::to_string(n == self ? 0 : l.ping_sent) + " " +
            std::to_string(t_ms - 300) + " 1 connected" + (l.slots.empty() ? "" : " " + l.slots) +
            "\n";
  }
  resp::append_verbatim(out, "txt", text);
  resp::append_map_header(out, 1);
  resp::append_blob(out, "cluster-node-timeout");
  resp::append_blob(out, std::to_string(nt));
  for (char p : {'a', 'b', 'c', 'd'}) {
    const auto r = reports.find(p);
    resp::append_number(out, r == reports.end() ? 0 : r->second);
  }
  return out;
}

const std::vector<std::string> kIds = {id('a'), id('b'), id('c'), id('d')};

class Built : public ::testing::Test {
 protected:
  Built() {
    std::vector<std::string> addrs;
    for (char n = 'a'; n <= 'f'; ++n) addrs.push_back(addr(n));
    v_.set_nodes(addrs);
  }
  // Node `self` answers a question sent at `sent` (its clock reads 1e12 + sent), read 2 ms later.
  void feed(char self, std::int64_t sent, const View& view,
            const std::map<char, int>& reports = {}) {
    Fed f{frames_of(answer_bytes(self, 1'000'000'000'000 + sent, view, reports))};
    v_.answered(addr(self), at(sent), at(sent + 2), f.answer(kIds));
  }
  void round(std::int64_t sent, const View& view = healthy(), std::string who = "abcdef") {
    for (char n : who) feed(n, sent, view);
  }
  ClusterVouch v_;
};

// --- captured replies ---------------------------------------------------------------------------

TEST(ClusterVouchCaptured, RepliesOf7015Parse) {
  const Fed f{frames_of(data("cluster_vouch_healthy_31002.resp"))};
  ASSERT_EQ(f.frames.size(), 6u);
  std::string why;
  const auto lines = parse_cluster_nodes(f.frames[1].frame(), why);
  ASSERT_TRUE(lines) << why;
  ASSERT_EQ(lines->size(), 6u);
  int masters = 0, serving = 0;
  for (const auto& l : *lines) {
    masters += l.master ? 1 : 0;
    serving += l.serves_slots ? 1 : 0;
    EXPECT_FALSE(l.flagged);
    if (l.myself) {
      EXPECT_EQ(l.addr, "127.0.0.1:31002");
    }
  }
  EXPECT_EQ(masters, 3);
  EXPECT_EQ(serving, 3);
  // While P is frozen, its line carries the pending PING, then fail?, then fail.
  const Fed pending{frames_of(data("cluster_vouch_ping_pending_31002.resp"))};
  const Fed pfail{frames_of(data("cluster_vouch_pfail_31002.resp"))};
  for (const auto* x : {&pending, &pfail}) {
    const auto ls = parse_cluster_nodes(x->frames[1].frame(), why);
    ASSERT_TRUE(ls) << why;
    for (const auto& l : *ls) {
      if (l.id != kP) continue;
      EXPECT_EQ(l.ping_sent_ms, 1796340633063);
      EXPECT_EQ(l.flagged, x == &pfail);
    }
  }
}

// The node's clock (TIME, ms) in a captured answer.
std::int64_t captured_ms(const std::string& file) {
  const Fed f{frames_of(data(file))};
  const resp::Frame t = f.frames.at(0).frame();
  std::vector<std::size_t> e;
  resp::elements(t, resp::value_index(t), e);
  return *resp::to_int64(t[e[0]]) * 1000 + *resp::to_int64(t[e[1]]) / 1000;
}

// The captured failure, replayed: healthy rounds every 400 ms for 4.4 s, then the answers taken
// while P was frozen, each fed at the moment its TIME says (relative to the last healthy one).
// The vouch ends no later than the node timeout after the PING P left unanswered, and so
// before any node flags P (fail?) and before FAIL; it never comes back.
TEST(ClusterVouchCaptured, FrozenPrimaryEndsTheVouchBeforeFail) {
  ClusterVouch v;
  v.set_nodes({"127.0.0.1:31001", "127.0.0.1:31002", "127.0.0.1:31003"});
  const std::vector<std::string> ports = {"31001", "31002", "31003"};
  const std::int64_t healthy_ms = captured_ms("cluster_vouch_healthy_31002.resp");
  auto when = [&](const std::string& state) {
    return 4400 + captured_ms("cluster_vouch_" + state + "_31002.resp") - healthy_ms;
  };
  auto feed = [&](const std::string& state, std::int64_t sent) {
    for (const auto& p : ports) {
      const Fed f{frames_of(data("cluster_vouch_" + state + "_" + p + ".resp"))};
      ASSERT_EQ(f.frames.size(), 6u) << state << " " << p;
      v.answered("127.0.0.1:" + p, at(sent), at(sent + 3), f.answer(kCapturedIds));
    }
  };
  feed("healthy", 0);
  EXPECT_EQ(v.until(kP, at(5)), MonoTime{}) << "vouched before the runs are clear of reports";
  EXPECT_EQ(v.poll_period(), milliseconds(400));
  // Only three of the six nodes were captured: no snapshot of every node shows the runs clear
  // of failure reports, so they count once they are 2 * nt (/ 0.99) long.
  for (std::int64_t t = 400; t <= 4400; t += 400) feed("healthy", t);
  EXPECT_EQ(v.until(kP, at(4000)), MonoTime{}) << v.explain(kP, at(4000));
  const MonoTime healthy_until = v.until(kP, at(4405));
  EXPECT_GT(healthy_until, at(4405)) << v.explain(kP, at(4405));
  EXPECT_LE(healthy_until, at(4400 + 2000)) << v.explain(kP, at(4405));
  // P's unanswered PING, sent at 1796340633063 of 31002's clock: nobody flags P before that
  // + 2 s, and the vouch (the later of 31002's and 31003's run ends: one clean master suffices
  // out of three) ends by then, in our clock.
  const std::int64_t pending = when("ping_pending");
  feed("ping_pending", pending);
  const MonoTime u = v.until(kP, at(pending + 5));
  const std::int64_t pfail_due = 4400 + 1796340633247 + 2000 - healthy_ms;  // 31003's PING
  std::printf(
      "ping pending at +%lld ms: vouched until +%lld ms; fail? seen at +%lld ms, FAIL "
      "at +%lld ms (%s)\n",
      static_cast<long long>(pending), static_cast<long long>(ms_of(u)),
      static_cast<long long>(when("pfail")), static_cast<long long>(when("fail")),
      v.explain(kP, at(pending + 5)).c_str());
  EXPECT_GT(u, at(pending + 5));
  EXPECT_LE(u, at(pfail_due));
  EXPECT_LT(u, at(when("fail")));  // 31002 flags P at about u: 31003 still vouches
  feed("pfail", when("pfail"));
  // 31002 flags P; 31003, whose PING left later, does not yet and vouches to its own end.
  EXPECT_LE(v.until(kP, at(when("pfail") + 5)), at(pfail_due))
      << v.explain(kP, at(when("pfail") + 5));
  EXPECT_NE(v.explain(kP, at(when("pfail") + 5)).find("fail?"), std::string::npos);
  feed("fail", when("fail"));
  EXPECT_EQ(v.until(kP, at(when("fail") + 5)), MonoTime{});
  feed("failed_over", when("failed_over"));
  EXPECT_EQ(v.until(kP, at(when("failed_over") + 5)), MonoTime{});
  EXPECT_TRUE(v.demoted(kP));
}

// --- built replies ------------------------------------------------------------------------------

TEST_F(Built, CleanStartIsVouchedAfterOneCleanSnapshot) {
  EXPECT_EQ(v_.until(id('a'), at(0)), MonoTime{});
  round(0);
  EXPECT_EQ(v_.until(id('a'), at(3)), MonoTime{}) << "the snapshot predates the runs";
  round(100);
  // b's and c's runs end at 100 + 1999 ms * 0.99 of ours: one of them suffices (3 masters).
  const MonoTime u = v_.until(id('a'), at(103));
  EXPECT_EQ(ms_of(u), 100 + 1979) << v_.explain(id('a'), at(103));
  EXPECT_EQ(v_.id_of(addr('b')), id('b'));
  EXPECT_FALSE(v_.demoted(id('a')));
  EXPECT_NE(v_.explain(id('a'), at(103)).find("vouches for"), std::string::npos);
}

TEST_F(Built, OtherMastersCutOffEndTheVouchAtTheirRunsEnd) {
  round(0);
  round(400);
  round(800);
  // a (the primary) and its replica d are cut off with us: b, c, e, f go silent.
  for (std::int64_t t = 1200; t <= 4000; t += 400) {
    for (char n : std::string("bcef")) v_.unanswered(addr(n), "timed out");
    feed('a', t, healthy());
    feed('d', t, healthy());
    const MonoTime u = v_.until(id('a'), at(t + 2));
    if (u != MonoTime{}) {
      // Never past the node timeout after the last answer of a master other than a.
      EXPECT_LE(u, at(800 + 2000)) << t;
      EXPECT_GT(u, at(t + 2));
    } else {
      EXPECT_GE(t + 2, 800 + 1979) << v_.explain(id('a'), at(t + 2));
    }
  }
  EXPECT_EQ(v_.until(id('a'), at(2800)), MonoTime{});
  EXPECT_NE(v_.explain(id('a'), at(2800)).find("timed out"), std::string::npos);
}

TEST_F(Built, APendingPingShortensTheRun) {
  View v = healthy();
  v['a'].ping_sent = 1'000'000'000'000 - 1500;  // pending for 1.5 s at the first TIME read
  for (char n : std::string("abcdef")) feed(n, 0, v);
  for (char n : std::string("abcdef")) feed(n, 100, v);
  EXPECT_EQ(ms_of(v_.until(id('a'), at(102))), 100 + 395);  // (2000 - 1600 - 1) * 0.99
  EXPECT_NE(v_.explain(id('a'), at(102)).find("unanswered for 1600 ms"), std::string::npos)
      << v_.explain(id('a'), at(102));
}

TEST_F(Built, FlagsEndTheRuns) {
  round(0);
  round(100);
  View v = healthy();
  v['a'].flags = "master,fail?";
  feed('b', 200, v);
  // c still vouches (one clean master suffices out of 3 with a quorum of 2).
  EXPECT_GT(v_.until(id('a'), at(202)), at(202));
  EXPECT_NE(v_.explain(id('a'), at(202)).find("fail?"), std::string::npos);
  v['a'].flags = "master,fail";
  feed('c', 200, v);
  EXPECT_EQ(v_.until(id('a'), at(202)), MonoTime{});
  // A clean answer starts a new run, not settled until a new snapshot shows no report.
  round(300, healthy(), "bc");
  EXPECT_EQ(v_.until(id('a'), at(302)), MonoTime{});
}

TEST_F(Built, AFailureReportSeenNeedsTwoNodeTimeoutsOfRun) {
  round(0);
  // e holds a report about a (b flagged it for a moment): nothing settles.
  for (std::int64_t t = 100; t < 4400; t += 400) {
    for (char n : std::string("abcdf")) feed(n, t, healthy());
    feed('e', t, healthy(), {{'a', 1}});
    const MonoTime u = v_.until(id('a'), at(t + 2));
    // The runs began at +2 ms: clear only once they are 2 * 2000 / 0.99 ms long.
    if (t + 2 < 2 + 4041) {
      EXPECT_EQ(u, MonoTime{}) << t << ": " << v_.explain(id('a'), at(t + 2));
    } else {
      EXPECT_GT(u, at(t + 2)) << t << ": " << v_.explain(id('a'), at(t + 2));
    }
  }
  EXPECT_NE(v_.explain(id('a'), at(4400)).find("vouches"), std::string::npos);
}

TEST_F(Built, APrimaryReplacedByAnotherMaster) {
  round(0);
  round(400);
  const MonoTime before = v_.until(id('a'), at(402));
  ASSERT_GT(before, at(402));
  // d took a's slots (a manual failover): a is a replica now.
  View v = healthy();
  v['a'] = {"slave", id('d'), 0, ""};
  v['d'] = {"master", "-", 0, "0-5460"};
  round(800, v);
  EXPECT_TRUE(v_.demoted(id('a')));
  // What b and c proved about a still holds; nothing more is added.
  EXPECT_EQ(v_.until(id('a'), at(802)), before);
  EXPECT_NE(v_.explain(id('a'), at(802)).find("names another primary"), std::string::npos);
  // d's runs began while it was a replica (no flag on it, no report about it): it is vouched
  // for from its promotion on.
  EXPECT_GT(v_.until(id('d'), at(802)), at(802)) << v_.explain(id('d'), at(802));
  round(1200, v);
  EXPECT_GT(v_.until(id('d'), at(1202)), at(1202)) << v_.explain(id('d'), at(1202));
  EXPECT_FALSE(v_.demoted(id('d')));
}

TEST_F(Built, AStaleViewNamingReplicasMastersSaysHowManyMustVouch) {
  // Right after `--cluster create`, one node's view may still show replicas as slot-less
  // masters: each could report a as failing (cluster.c counts any master's report), so more
  // clean masters are needed than answer here (b and c only): no vouch, and the words say why.
  View stale = healthy();
  stale['d'] = {"master", "-", 0, ""};
  stale['e'] = {"master", "-", 0, ""};
  round(0);
  for (char n : std::string("abcde")) feed(n, 100, healthy());
  feed('f', 100, stale);  // f's view: d and e are masters
  EXPECT_EQ(v_.until(id('a'), at(103)), MonoTime{});
  const std::string words = v_.explain(id('a'), at(103));
  EXPECT_NE(words.find("3 masters other than the primary must vouch, 2 do"), std::string::npos)
      << words;
  // Once every view agrees again, one clean master suffices.
  round(400);
  round(800);
  EXPECT_GT(v_.until(id('a'), at(803)), at(803)) << v_.explain(id('a'), at(803));
}

TEST_F(Built, ConfigGetRefusedTurnsTheVouchOff) {
  round(0);
  std::string bytes = answer_bytes('b', 1'000'000'000'000 + 100, healthy());
  // The same answer with CONFIG GET refused by an ACL.
  const auto frames = frames_of(bytes);
  std::string refused;
  resp::append_error(refused,
                     "NOPERM this user has no permissions to run the 'config|get' command");
  const auto err = frames_of(refused);
  ClusterVouch::Answer a;
  a.time = frames[0].frame();
  a.nodes = frames[1].frame();
  a.config = err[0].frame();
  v_.answered(addr('b'), at(100), at(102), a);
  EXPECT_EQ(v_.until(id('a'), at(102)), kNoLimit);
  EXPECT_NE(v_.refused().find("NOPERM"), std::string::npos) << v_.refused();
  EXPECT_NE(v_.explain(id('a'), at(102)).find("NOPERM"), std::string::npos);
}

TEST_F(Built, PollPeriodFromTheNodeTimeout) {
  EXPECT_EQ(v_.poll_period(), milliseconds(250));
  round(0);
  EXPECT_EQ(v_.poll_period(), milliseconds(400));
}

}  // namespace
}  // namespace lockwire::lock::detail
