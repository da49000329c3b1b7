// The `lockwire` tool across failovers (issue #15), on a real primary, replica and three
// sentinels (tests/support RedisSentinels), with the real binary: a holder `lockwire run` and a
// contender `lockwire run --wait` on a `redis-sentinel://` URL. Each child writes when it
// starts and ends (one clock: date +%s%N), so the test sees whether they ever overlapped, and
// which fencing token each had.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_proc.hpp"
#include "redis_topology.hpp"

namespace {

using namespace std::chrono_literals;
using namespace lockwire::test;

struct Span {
  std::string who;
  long long start_ns = -1, end_ns = -1;
  unsigned long long token = 0;
};

class CliFailover : public ::testing::Test {
 protected:
  // `lockwire run` of a child that logs "<who> start <ns> <token>" ... "<who> end <ns>" to
  // the shared log, holding the lock `hold_s` seconds.
  std::unique_ptr<Proc> run(const std::string& who, const std::string& ttl, int hold_s,
                            const std::string& wait = "0") {
    const std::string log = dir_.file("log");
    // A child stopped on lease loss (SIGTERM) logs its end too: `wait` returns at the signal
    // (a plain `sleep` would delay the trap), so the span ends when the child stopped.
    const std::string end = "echo \"" + who + " end $(date +%s%N)\" >> " + log;
    const std::string child = "trap '" + end + "; exit 143' TERM; echo \"" + who +
                              " start $(date +%s%N) $LOCKWIRE_FENCING_TOKEN\" >> " + log +
                              "; sleep " + std::to_string(hold_s) + " & wait $!; " + end;
    return std::make_unique<Proc>(
        std::vector<std::string>{"run", "--url", topo_.url(), "--ttl", ttl, "--wait", wait,
                                 "--connect-timeout", "2s", "--kill-after", "1s", "job", "--",
                                 "sh", "-c", child},
        dir_);
  }
  std::vector<Span> spans() {
    std::istringstream in(read_file(dir_.file("log")));
    std::vector<Span> out;
    std::string who, what;
    long long ns = 0;
    while (in >> who >> what >> ns) {
      if (what == "start") {
        Span s{who, ns, -1, 0};
        in >> s.token;
        out.push_back(s);
      } else {
        for (auto& s : out) {
          if (s.who == who && s.end_ns < 0) s.end_ns = ns;
        }
      }
    }
    return out;
  }
  // The holder's child ran first; the contender's started only after it ended, with a higher
  // token.
  void expect_no_overlap(const std::vector<Span>& s) {
    ASSERT_EQ(s.size(), 2u) << read_file(dir_.file("log"));
    EXPECT_EQ(s[0].who, "holder");
    EXPECT_EQ(s[1].who, "contender");
    ASSERT_GT(s[0].end_ns, 0) << "the holder's child never ended (killed on lease loss?)";
    EXPECT_GE(s[1].start_ns, s[0].end_ns) << "two holders at once";
    EXPECT_GT(s[1].token, s[0].token);
  }

  RedisSentinels topo_;
  TempDir dir_;
};

// SENTINEL FAILOVER while the holder's child runs (12 s: through the old primary's demotion,
// about 10 s later); the contender waits for the lock all along.
TEST_F(CliFailover, GracefulFailoverMidHold) {
  auto holder = run("holder", "3s", 12);
  ASSERT_TRUE(eventually([&] { return exists(dir_.file("log")); }, 10s)) << holder->err();
  auto contender = run("contender", "3s", 1, "40s");
  std::this_thread::sleep_for(500ms);
  ASSERT_EQ(topo_.sentinel(0).cli({"SENTINEL", "FAILOVER", topo_.master_name()}), "OK\n");
  // Kept its lease (re-confirmed there, exit 0), or told at the failover's start that it no
  // longer counts (the leader sentinel says failover_in_progress: exit 76).
  const int hs = holder->wait(30s);
  EXPECT_TRUE(hs == 0 || hs == 76) << hs << " " << holder->err();
  EXPECT_EQ(contender->wait(40s), 0) << contender->err();
  EXPECT_EQ(topo_.reported_primary_port(), topo_.replica().port());
  expect_no_overlap(spans());
}

// The primary is killed (SIGKILL) while the holder's child runs: the sentinels promote the
// replica after down-after (3 s) and an election. The holder stops counting on its lease when
// the sentinels no longer vouch for the dead primary (before the promotion) and stops its child
// (exit 76) — or, had it kept the lease, renews it there; the contender is granted only after
// the holder's child ended, with a higher token.
TEST_F(CliFailover, CrashFailoverMidHold) {
  auto holder = run("holder", "8s", 8);
  ASSERT_TRUE(eventually([&] { return exists(dir_.file("log")); }, 10s)) << holder->err();
  auto contender = run("contender", "3s", 1, "40s");
  std::this_thread::sleep_for(500ms);
  ASSERT_EQ(topo_.primary().cli({"WAIT", "1", "2000"}), "1\n");
  topo_.primary().stop();
  const int hs = holder->wait(40s);
  EXPECT_EQ(contender->wait(40s), 0) << contender->err();
  EXPECT_EQ(topo_.reported_primary_port(), topo_.replica().port());
  std::printf("holder exit %d: %s\n", hs, holder->err().c_str());
  expect_no_overlap(spans());
}

// Two of three sentinels stopped: the one left names the primary, but one sentinel cannot vouch
// for it (quorum 2: two must stay clean). The CLI says so in the sentinels' words instead of
// "held by someone else", attempts nothing, and --no-vouch locks there.
TEST(CliVouch, UnvouchedPrimaryIsNamedAndNoVouchLocks) {
  RedisSentinels topo;
  topo.sentinel(1).pause();
  topo.sentinel(2).pause();
  TempDir dir;
  const std::vector<std::string> base = {"acquire", "--url", topo.url(), "--ttl", "5s",
                                         "--wait", "2s", "--connect-timeout", "1s", "quiet"};
  Proc refused(base, dir);
  EXPECT_EQ(refused.wait(), 69) << refused.err();
  EXPECT_NE(refused.err().find("the sentinels do not vouch for"), std::string::npos)
      << refused.err();
  EXPECT_EQ(topo.primary().cli({"EXISTS", "lockwire:{quiet}"}), "0\n");  // nothing attempted
  std::vector<std::string> off = base;
  off.push_back("--no-vouch");
  Proc locked(off, dir);
  EXPECT_EQ(locked.wait(), 0) << locked.err();
  topo.sentinel(1).resume();
  topo.sentinel(2).resume();
}

}  // namespace
