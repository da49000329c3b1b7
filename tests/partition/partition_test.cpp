// Issue #28: mutual exclusion through real network partitions. Every redis-server, sentinel and
// `lockwire run` runs in its own network namespace (tests/support/netns.hpp); a partition moves
// links onto an isolated bridge, so packets across are silently dropped. Each lock client's
// COMMAND appends "<fencing token> <CLOCK_REALTIME ns>" to its own file every 100 ms; all
// namespaces share the clock, so the files say when each holder really ran.
//
// Each case checks, from those files: no instant with two holders (the [first line, last line]
// intervals do not overlap), a holder's COMMAND told (SIGTERM, stamped by its trap) before the
// next holder's first line, tokens increasing in time, the contender granted within
// TTL + failover time + 2 s of the partition (the failover time is measured: from the partition
// to the moment the majority side names the new primary), no lock key left once every client has
// exited, and the exit statuses of docs/cli.md. Lines starting "[partition]" are the figures.
#include <gtest/gtest.h>

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "netns.hpp"
#include "redis_topology.hpp"

namespace {

using namespace std::chrono_literals;
using lockwire::test::LabRedis;
using lockwire::test::NetLab;
using lockwire::test::poll_until;

constexpr const char* kResource = "pt";
constexpr const char* kMaster = "lw";
constexpr long long kTtlMs = 5000;
constexpr auto kDownAfter = 3000ms;     // sentinels' down-after-milliseconds
constexpr auto kNodeTimeout = 2000ms;   // cluster-node-timeout
constexpr auto kPartitionLength = 20s;  // partition to heal

long long now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<long long>(ts.tv_sec) * 1'000'000'000LL + ts.tv_nsec;
}

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Bounded by construction: the target is a fixed instant at most kPartitionLength ahead.
void sleep_until_realtime(long long target_ns) {
  const long long left = target_ns - now_ns();
  if (left > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(left));
}

void touch(const std::string& path) {
  std::ofstream f(path, std::ios::app);
}

std::string self_dir() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<std::size_t>(n));
  return p.substr(0, p.rfind('/'));
}

// "key\nvalue\n" pairs as redis-cli prints a flat reply.
long field(const std::string& reply, const std::string& key) {
  std::istringstream in(reply);
  for (std::string line; std::getline(in, line);) {
    if (line != key) continue;
    std::string value;
    std::getline(in, value);
    try {
      return std::stol(value);
    } catch (...) {
      return -1;
    }
  }
  return -1;
}

std::string seconds(long long ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.2fs", static_cast<double>(ns) / 1e9);
  return buf;
}

// One `lockwire run` in its own host, and what its COMMAND wrote.
struct Client {
  std::string name;
  std::string file;       // "<token> <ns>" lines
  std::string stop_file;  // COMMAND ends (status 0) once this exists
  std::string log;        // lockwire -v and COMMAND's stderr
  pid_t pid = -1;
  std::optional<int> status;
};

struct Holding {
  std::string who;
  unsigned long long token = 0;
  long long first_ns = 0, last_ns = 0;  // the first and last data line
  long long term_ns = -1;               // when COMMAND got SIGTERM (its trap's line), if it did
  int lines = 0;
};

std::optional<Holding> holding_of(const Client& c) {
  std::istringstream in(read_text(c.file));
  Holding h;
  h.who = c.name;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    unsigned long long token = 0;
    long long ns = 0;
    std::string mark;
    if (!(words >> token >> ns)) continue;
    if (words >> mark && mark == "term") {
      h.term_ns = ns;
      continue;
    }
    if (h.lines == 0) {
      h.token = token;
      h.first_ns = ns;
    }
    h.last_ns = ns;
    ++h.lines;
  }
  if (h.lines == 0) return std::nullopt;
  return h;
}

class Partition : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = NetLab::unavailable_reason();
    if (!why.empty()) GTEST_SKIP() << "no network namespaces here: " << why;
    lockwire_ = self_dir() + "/lockwire";
    ASSERT_EQ(::access(lockwire_.c_str(), X_OK), 0) << lockwire_ << " is missing";
    lab_ = std::make_unique<NetLab>();
  }

  void TearDown() override {
    if (lab_ && HasFailure()) {  // the logs explain a failure
      for (const auto& [name, c] : clients_) {
        std::cout << "---- " << name << " (" << c.log << ")\n" << read_text(c.log);
      }
      // The sentinels' view of the failover, from their logs' events.
      for (const auto& entry : std::filesystem::directory_iterator(lab_->dir())) {
        const auto log = entry.path() / "sentinel.log";
        if (!std::filesystem::exists(log)) continue;
        std::cout << "---- " << log.string() << " (events)\n";
        std::istringstream in(read_text(log.string()));
        for (std::string line; std::getline(in, line);) {
          if (line.find(" +") != std::string::npos || line.find(" -") != std::string::npos) {
            std::cout << line << "\n";
          }
        }
      }
    }
  }

  // --- topologies ---------------------------------------------------------------------------

  // primary + N replicas + 3 sentinels (down-after 3 s, quorum 2); returns the sentinel URL.
  std::string sentinel_topology(int replicas) {
    lab_->add_host("primary");
    LabRedis::start_server(*lab_, "primary");
    const std::string primary = lab_->address("primary");
    for (int i = 1; i <= replicas; ++i) {
      const std::string r = "replica" + std::to_string(i);
      lab_->add_host(r);
      LabRedis::start_server(*lab_, r, {"--replicaof", primary, "6379"});
    }
    for (int i = 1; i <= replicas; ++i) {
      const std::string r = "replica" + std::to_string(i);
      EXPECT_TRUE(poll_until(
          [&] {
            return LabRedis::cli(*lab_, r, lab_->address(r), 6379, {"INFO", "replication"})
                       .find("master_link_status:up") != std::string::npos;
          },
          15s))
          << r << " did not sync";
    }
    std::string url = "redis-sentinel://";
    for (int i = 1; i <= 3; ++i) {
      const std::string s = "sentinel" + std::to_string(i);
      lab_->add_host(s);
      // failover-timeout 10 s: a failed election is retried after 2x that, within the partition
      LabRedis::start_sentinel(*lab_, s, kMaster, primary, kDownAfter, 10s);
      url += (i > 1 ? "," : "") + lab_->address(s) + ":26379";
    }
    const bool ready = poll_until(
        [&] {
          for (int i = 1; i <= 3; ++i) {
            const std::string s = "sentinel" + std::to_string(i);
            const std::string m =
                LabRedis::cli(*lab_, s, lab_->address(s), 26379, {"SENTINEL", "MASTER", kMaster});
            if (field(m, "num-slaves") != replicas || field(m, "num-other-sentinels") != 2) {
              return false;
            }
          }
          return true;
        },
        30s, 200ms);
    EXPECT_TRUE(ready) << "the sentinels did not find each other and the replicas";
    return url + "#" + kMaster;
  }

  // The address the sentinels on the majority side name as primary now.
  std::string sentinel_primary() {
    const std::string out = LabRedis::cli(*lab_, "sentinel1", lab_->address("sentinel1"), 26379,
                                          {"SENTINEL", "GET-MASTER-ADDR-BY-NAME", kMaster}, 2s);
    return out.substr(0, out.find('\n'));
  }

  // --- clients ------------------------------------------------------------------------------

  // `lockwire run -v --url URL --ttl 5s [options] pt -- writer`, in host `name` (made here).
  // max_lines > 0: COMMAND ends by itself after that many lines (0.1 s each).
  Client& start_client(const std::string& name, const std::string& url,
                       const std::vector<std::string>& options, int max_lines = 0) {
    lab_->add_host(name);
    Client c;
    c.name = name;
    c.file = lab_->dir() + "/" + name + ".lines";
    c.stop_file = lab_->dir() + "/" + name + ".stop";
    c.log = lab_->dir() + "/" + name + ".log";
    // The TERM trap stamps when COMMAND was told its lease is gone; `sleep & wait` because dash
    // runs a trap at once only inside `wait` (after a foreground sleep: up to 100 ms late). The
    // stamp is taken by a command of its own before the line is written: dash runs a pending
    // trap between commands, so a COMMAND stopped inside `$(date)` and told meanwhile exits on
    // waking instead of writing a line stamped after it (CI, HolderStoppedAcrossFailover: one
    // line 1 ms after the resume, from `echo "... $(date)"` finishing first).
    static const std::string writer =
        "trap 'echo \"$LOCKWIRE_FENCING_TOKEN $(date +%s%N) term\" >>\"$1\"; kill $! 2>/dev/null;"
        " exit 143' TERM; "
        "i=0; while [ ! -e \"$2\" ] && { [ \"$3\" -eq 0 ] || [ $i -lt \"$3\" ]; }; do "
        "t=$(date +%s%N); echo \"$LOCKWIRE_FENCING_TOKEN $t\" >>\"$1\"; i=$((i+1)); "
        "sleep 0.1 & wait $!; done";
    std::vector<std::string> argv = {lockwire_, "run", "-v", "--url", url, "--ttl", "5s"};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.insert(argv.end(), {kResource, "--", "sh", "-c", writer, "writer", c.file, c.stop_file,
                             std::to_string(max_lines)});
    c.pid = lab_->spawn(name, argv, c.log);
    return clients_[name] = c;
  }

  bool granted(const Client& c) { return holding_of(c).has_value(); }

  // Waits (bounded) for the client's exit and records its status.
  std::optional<int> await_exit(Client& c, std::chrono::milliseconds limit) {
    if (!c.status) c.status = lab_->wait_exit(c.pid, limit);
    return c.status;
  }

  // Ends a granted client's COMMAND (stop file), or whatever it is doing, and records its status.
  void finish(Client& c, std::chrono::milliseconds limit) {
    touch(c.stop_file);
    if (!await_exit(c, limit)) {
      ADD_FAILURE() << c.name << " did not exit within " << limit.count() << " ms of its stop file";
      c.status = lab_->stop(c.pid);
    }
  }

  // C granted: its stop file ends it; still waiting: its own --wait ends it (75), within
  // `wait_out`; either way it has exited (or was stopped) on return.
  void end_contender(Client& c, std::chrono::milliseconds wait_out) {
    if (!granted(c)) await_exit(c, wait_out);
    if (!c.status) finish(c, 15s);
  }

  // --- checks -------------------------------------------------------------------------------

  // No instant with two holders (data lines: each is stamped before it is written, so a holder
  // told in time never stamps one after the next grant), tokens in time order, and with
  // `told_before_next` a holder whose COMMAND got SIGTERM got it before the next holder's first
  // line (issue #28's done-when for the partition cases, where a safe lease ends seconds before
  // the failover completes). Not for a plain expiry: there the SIGTERM may precede the grant by
  // less than the trap's own `date` takes, so its stamp could land after it.
  // Prints each holding and any overlap; returns the longest overlap in ms (0 when none).
  long long check_holdings(const std::string& label, long long t0_ns, bool told_before_next) {
    std::vector<Holding> hs;
    for (const auto& [name, c] : clients_) {
      if (auto h = holding_of(c)) hs.push_back(*h);
    }
    std::sort(hs.begin(), hs.end(),
              [](const Holding& a, const Holding& b) { return a.first_ns < b.first_ns; });
    for (const auto& h : hs) {
      std::cout << "[partition] " << label << ": " << h.who << " token " << h.token << " held "
                << seconds(h.first_ns - t0_ns) << " .. " << seconds(h.last_ns - t0_ns) << " ("
                << h.lines << " lines)"
                << (h.term_ns >= 0 ? ", SIGTERM at " + seconds(h.term_ns - t0_ns) : std::string())
                << "\n";
    }
    long long worst_ms = 0;
    for (std::size_t i = 0; i < hs.size(); ++i) {
      for (std::size_t j = i + 1; j < hs.size(); ++j) {
        const long long overlap =
            std::min(hs[i].last_ns, hs[j].last_ns) - std::max(hs[i].first_ns, hs[j].first_ns);
        if (overlap >= 0) {
          const long long ms = overlap / 1'000'000;
          worst_ms = std::max(worst_ms, ms);
          ADD_FAILURE() << label << ": two holders for " << ms << " ms: " << hs[i].who << " (token "
                        << hs[i].token << ") until " << seconds(hs[i].last_ns - t0_ns) << ", "
                        << hs[j].who << " (token " << hs[j].token << ") from "
                        << seconds(hs[j].first_ns - t0_ns);
        }
      }
      if (i > 0 && told_before_next && hs[i - 1].term_ns >= 0) {
        EXPECT_LT(hs[i - 1].term_ns, hs[i].first_ns)
            << label << ": " << hs[i - 1].who << "'s COMMAND got SIGTERM "
            << (hs[i - 1].term_ns - hs[i].first_ns) / 1'000'000 << " ms after " << hs[i].who
            << " was granted";
      }
      if (i > 0) {
        EXPECT_GT(hs[i].token, hs[i - 1].token) << label << ": " << hs[i].who << " came after "
                                                << hs[i - 1].who << " with a token not higher";
      }
    }
    std::cout << "[partition] " << label << ": longest overlap " << worst_ms << " ms\n";
    return worst_ms;
  }

  // Once every client has exited: the holder set key is gone (`lockwire inspect` says free,
  // asked from `from` on the majority side; bounded while the topology settles after a heal).
  void check_no_orphan(const std::string& label, const std::string& from, const std::string& url) {
    std::string last;
    const bool free = poll_until(
        [&] {
          last =
              lab_->run(from, {lockwire_, "inspect", "--json", "--url", url, kResource}, 10s).out;
          return last.find("\"state\":\"free\"") != std::string::npos;
        },
        20s, 500ms);
    EXPECT_TRUE(free) << label << ": a lock key outlived every client: " << last;
  }

  std::unique_ptr<NetLab> lab_;
  std::string lockwire_;
  std::map<std::string, Client> clients_;
};

// --- The lab itself -------------------------------------------------------------------------

// The faults are real: a partition silently drops packets across and keeps each side whole, a
// heal restores the path, and nothing of the lab is visible in the root namespace.
TEST_F(Partition, LabPartitionsAndHeals) {
  lab_->add_host("a");
  lab_->add_host("b");
  lab_->add_host("c");
  LabRedis::start_server(*lab_, "a");
  const std::string a = lab_->address("a");
  auto pong = [&](const std::string& from) {
    return LabRedis::cli(*lab_, from, a, 6379, {"PING"}, 1s).find("PONG") != std::string::npos;
  };
  EXPECT_TRUE(pong("b"));
  EXPECT_TRUE(pong("c"));
  lab_->partition({"a", "b"});
  EXPECT_TRUE(pong("b")) << "one side of the partition cannot talk among itself";
  const auto across = lab_->run("c", {"redis-cli", "-h", a, "-p", "6379", "PING"}, 1s);
  EXPECT_EQ(across.status, -1) << "a request across the partition was not left hanging (silent "
                                  "drop), it ended: "
                               << across.out;
  lab_->heal();
  EXPECT_TRUE(poll_until([&] { return pong("c"); }, 5s)) << "the heal did not restore the path";
  lab_->flaky("c", 100);
  EXPECT_FALSE(pong("c")) << "a 100 % loss rule let a PING through";
  EXPECT_GT(lab_->flaky_drops("c"), 0);
  lab_->flaky("c", 0);
  EXPECT_EQ(lab_->flaky_drops("c"), -1) << "the loss rule is still installed";
  EXPECT_TRUE(poll_until([&] { return pong("c"); }, 5s));
  // No lab address or route in the root namespace: no test packet can leave the lab.
  std::string root;
  FILE* p = ::popen("ip -4 addr show; ip -4 route show", "r");
  ASSERT_NE(p, nullptr);
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) root.append(buf, n);
  ::pclose(p);
  EXPECT_EQ(root.find("10.88.0."), std::string::npos) << root;
}

// --- Sentinel -------------------------------------------------------------------------------

struct SentinelCase {
  std::string label;
  int replicas = 2;
  std::vector<std::string> replicas_cut_with_primary;  // besides the primary and H
  std::vector<std::string> options;                    // both clients' lock options
};

class SentinelPartition : public Partition {
 protected:
  // H holds on the primary; C waits (--wait 40s); {primary, H, some replicas} are cut off from
  // the rest for 20 s.
  void run_case(const SentinelCase& k) {
    const std::string url = sentinel_topology(k.replicas);
    ASSERT_FALSE(HasFailure());
    const std::string old_primary = lab_->address("primary");
    Client& h = start_client("holder", url, k.options);
    ASSERT_TRUE(poll_until([&] { return granted(h); }, 15s)) << "H was not granted";
    std::vector<std::string> wait = {"--wait", "40s"};
    wait.insert(wait.end(), k.options.begin(), k.options.end());
    Client& c = start_client("contender", url, wait);
    std::this_thread::sleep_for(1500ms);  // C is waiting (polling the primary)
    ASSERT_FALSE(granted(c)) << "C was granted while H held";
    ASSERT_TRUE(lab_->running(c.pid)) << "C gave up before the partition";

    std::vector<std::string> cut = {"primary", "holder"};
    cut.insert(cut.end(), k.replicas_cut_with_primary.begin(), k.replicas_cut_with_primary.end());
    const long long t0 = now_ns();
    lab_->partition(cut);
    // The cut is real: the primary answers its own side, not the other.
    EXPECT_EQ(LabRedis::cli(*lab_, "contender", old_primary, 6379, {"PING"}, 1s).find("PONG"),
              std::string::npos)
        << "the primary still answers across the partition";
    EXPECT_NE(LabRedis::cli(*lab_, "holder", old_primary, 6379, {"PING"}, 1s).find("PONG"),
              std::string::npos)
        << "the primary does not answer on its own side";

    long long failover_ns = -1;
    poll_until(
        [&] {
          const std::string p = sentinel_primary();
          if (p.empty() || p == old_primary) return false;
          failover_ns = now_ns() - t0;
          return true;
        },
        30s);
    ASSERT_GE(failover_ns, 0) << "the sentinels never failed over: the partition did not take";
    // Default options: granted within TTL + the failover's time + 2 s (issue #28's done-when).
    // With --min-replicas the grant also waits for a replica of the new primary (the sentinels
    // reconfigure the others after the promotion, a full sync each; the cut-off one only after
    // the heal): then C must keep trying for its whole --wait (40 s from the partition), not be
    // answered at once (case 3).
    const bool waits_for_replicas =
        std::find(k.options.begin(), k.options.end(), "--min-replicas") != k.options.end();
    const long long bound_ns = !waits_for_replicas
                                   ? (kTtlMs * 1'000'000LL) + failover_ns + 2'000'000'000LL
                                   : 40'500'000'000LL;

    sleep_until_realtime(t0 + std::chrono::nanoseconds(kPartitionLength).count());
    lab_->heal();
    const long long healed_ns = now_ns() - t0;

    // H learns at the latest from the demoted primary; if it still runs, end it.
    if (!await_exit(h, 20s)) finish(h, 15s);
    // C: granted -> end its COMMAND; still waiting -> its --wait ends it (75).
    end_contender(c, 30s);
    check_no_orphan(k.label, "contender", url);

    const long long overlap_ms = check_holdings(k.label, t0, true);
    const auto ch = holding_of(c);
    std::cout << "[partition] " << k.label << ": failover (sentinels name " << sentinel_primary()
              << ") at " << seconds(failover_ns) << ", healed at " << seconds(healed_ns)
              << ", C granted at " << (ch ? seconds(ch->first_ns - t0) : std::string("never"))
              << " (bound " << seconds(bound_ns) << "), exit H " << h.status.value_or(-1) << " C "
              << c.status.value_or(-1) << ", overlap " << overlap_ms << " ms\n";
    ASSERT_TRUE(ch.has_value()) << k.label << ": C was never granted (exit "
                                << c.status.value_or(-1) << ")";
    EXPECT_LE(ch->first_ns - t0, bound_ns)
        << k.label << ": C granted later than "
        << (!waits_for_replicas ? "TTL + failover time + 2 s after the partition" : "its --wait");
    EXPECT_EQ(h.status, 76) << k.label << ": H must exit 76 (lease lost while COMMAND ran)";
    EXPECT_EQ(c.status, 0) << k.label << ": C's COMMAND ended with 0 on its stop file";
  }
};

// Case 1: defaults. Issue #28 measured two holders for 15.7 s.
TEST_F(SentinelPartition, PrimaryAndHolderCutOff) {
  run_case({"sentinel-defaults", 2, {}, {}});
}

// Case 1 with the parked hand-off (#30): C waits with its acquire parked in the old primary
// behind BZPOPMIN, on a connection that the partition leaves hanging. That block must never
// grant on the old primary after C moved to the promoted replica, nor keep C from being
// granted there: C's main connection follows the failover, its parking connection on the old
// server is closed and the parked block settled as a lost stream (withdrawn), and C is granted
// on the new primary within the same bound, with no overlap.
TEST_F(SentinelPartition, PrimaryAndHolderCutOffWithAParkedContender) {
  run_case({"sentinel-parked", 2, {}, {"--parked-handoff"}});
}

// Case 2: --min-replicas 1 with 3 replicas, one of them on H's side (it acknowledges H's
// renewals). Issue #28 measured two holders for 15.4 s.
TEST_F(SentinelPartition, MinReplicasWithAReplicaOnTheHoldersSide) {
  run_case({"sentinel-min-replicas-3", 3, {"replica3"}, {"--min-replicas", "1"}});
}

// Case 3: --min-replicas 1, 2 replicas, one cut off with the primary: the promoted one has no
// replica yet. Issue #28: C exits 69 at once instead of waiting.
TEST_F(SentinelPartition, MinReplicasPromotedReplicaHasNoReplica) {
  run_case({"sentinel-min-replicas-2", 2, {"replica2"}, {"--min-replicas", "1"}});
}

// Case 6: H's process is stopped across a failover: lockwire and its COMMAND (the whole process
// group, as a frozen VM or machine would be), the primary is cut off alone, the sentinels fail
// over and C is granted; then lockwire wakes first and its COMMAND 1 s later. lockwire must tell
// COMMAND (SIGTERM) before COMMAND can write again, and exit 76.
// Why lockwire first: with one SIGCONT to both, COMMAND may win the CPU and write a line before
// lockwire's SIGTERM lands (seen here: one line 20 ms after the resume, SIGTERM at 40 ms) -
// nothing a lock client can prevent; that window is what fencing tokens are for (docs/protocol.md),
// and tokens in time order are checked. What a client controls is acting on its own clock at once
// on waking, rather than after a round trip to a server that may be gone.
TEST_F(SentinelPartition, HolderStoppedAcrossFailover) {
  const std::string url = sentinel_topology(2);
  ASSERT_FALSE(HasFailure());
  const std::string old_primary = lab_->address("primary");
  Client& h = start_client("holder", url, {});
  ASSERT_TRUE(poll_until([&] { return granted(h); }, 15s)) << "H was not granted";
  Client& c = start_client("contender", url, {"--wait", "40s"});
  std::this_thread::sleep_for(1500ms);
  ASSERT_FALSE(granted(c)) << "C was granted while H held";

  const long long t0 = now_ns();
  lab_->pause(h.pid);
  lab_->partition({"primary"});
  long long failover_ns = -1;
  poll_until(
      [&] {
        const std::string p = sentinel_primary();
        if (p.empty() || p == old_primary) return false;
        failover_ns = now_ns() - t0;
        return true;
      },
      30s);
  ASSERT_GE(failover_ns, 0) << "the sentinels never failed over";
  const long long bound_ns = (kTtlMs * 1'000'000LL) + failover_ns + 2'000'000'000LL;
  poll_until([&] { return granted(c); }, std::chrono::milliseconds(kTtlMs + 5000));
  std::this_thread::sleep_for(1s);  // C holds for a while before H wakes up
  const long long resumed_ns = now_ns() - t0;
  lab_->resume_leader_only(h.pid);
  std::this_thread::sleep_for(1s);
  lab_->resume(h.pid);
  if (!await_exit(h, 15s)) finish(h, 15s);
  lab_->heal();
  end_contender(c, 40s);
  check_no_orphan("sentinel-sigstop", "contender", url);

  // A paused COMMAND cannot be told before C is granted (no client can outrun a pause); what is
  // checked is that it writes nothing once resumed.
  const long long overlap_ms = check_holdings("sentinel-sigstop", t0, false);
  const auto ch = holding_of(c);
  std::cout << "[partition] sentinel-sigstop: failover at " << seconds(failover_ns)
            << ", H's lockwire resumed at " << seconds(resumed_ns) << " (its COMMAND 1 s later)"
            << ", C granted at " << (ch ? seconds(ch->first_ns - t0) : std::string("never"))
            << " (bound " << seconds(bound_ns) << "), exit H " << h.status.value_or(-1) << " C "
            << c.status.value_or(-1) << ", overlap " << overlap_ms << " ms\n";
  ASSERT_TRUE(ch.has_value()) << "C was never granted (exit " << c.status.value_or(-1) << ")";
  EXPECT_LE(ch->first_ns - t0, bound_ns);
  EXPECT_EQ(h.status, 76) << "H must exit 76 (lease lost while COMMAND ran)";
  EXPECT_EQ(c.status, 0);
}

// --- Cluster --------------------------------------------------------------------------------

class ClusterPartition : public Partition {
 protected:
  // A 3+3 Cluster (node-timeout 2 s); the primary of the resource's slot is cut off with H (and
  // nothing else) from the other five nodes and C for 20 s. `options`: both clients' lock
  // options.
  void run_case(const std::string& label, const std::vector<std::string>& options);
};

void ClusterPartition::run_case(const std::string& label, const std::vector<std::string>& options) {
  std::vector<std::string> nodes;
  std::string url = "redis://";
  for (int i = 1; i <= 6; ++i) {
    const std::string n = "node" + std::to_string(i);
    lab_->add_host(n);
    LabRedis::start_server(*lab_, n,
                           {"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                            "--cluster-node-timeout", std::to_string(kNodeTimeout.count())});
    nodes.push_back(n);
    url += (i > 1 ? "," : "") + lab_->address(n) + ":6379";
  }
  std::vector<std::string> create = {"redis-cli", "--cluster", "create"};
  for (const auto& n : nodes) create.push_back(lab_->address(n) + ":6379");
  create.insert(create.end(), {"--cluster-replicas", "1", "--cluster-yes"});
  const auto made = lab_->run("node1", create, 60s);
  ASSERT_NE(made.out.find("[OK] All 16384 slots covered"), std::string::npos) << made.out;
  ASSERT_TRUE(poll_until(
      [&] {
        for (const auto& n : nodes) {
          const std::string info =
              LabRedis::cli(*lab_, n, lab_->address(n), 6379, {"CLUSTER", "INFO"});
          if (info.find("cluster_state:ok") == std::string::npos ||
              info.find("cluster_known_nodes:6") == std::string::npos) {
            return false;
          }
        }
        // And every node knows the three replicas as replicas: right after `--cluster create`
        // the nodes that become replicas may still show as slot-less masters in some views for
        // a moment, and a master in any view could report the primary failing, so the
        // holder's first vouch would need more masters than answer (CI, 0504f9b).
        for (const auto& n : nodes) {
          const std::string table =
              LabRedis::cli(*lab_, n, lab_->address(n), 6379, {"CLUSTER", "NODES"});
          if (lockwire::test::replicas_in_cluster_nodes(table) != 3) return false;
        }
        return true;
      },
      30s, 200ms))
      << "the cluster did not reach cluster_state:ok with three replicas";

  // Which node serves the resource's slot, and which replicates it (CLUSTER NODES: id ip:port@bus
  // flags primary-id ping pong epoch link slots...).
  const long slot = std::stol(LabRedis::cli(*lab_, "node1", lab_->address("node1"), 6379,
                                            {"CLUSTER", "KEYSLOT", kResource}));
  std::string primary_id, primary_host, replica_host;
  std::map<std::string, std::string> host_of_address;
  for (const auto& n : nodes) host_of_address[lab_->address(n)] = n;
  const std::string table =
      LabRedis::cli(*lab_, "node1", lab_->address("node1"), 6379, {"CLUSTER", "NODES"});
  std::vector<std::vector<std::string>> rows;
  {
    std::istringstream in(table);
    for (std::string line; std::getline(in, line);) {
      std::istringstream words(line);
      std::vector<std::string> row;
      for (std::string w; words >> w;) row.push_back(w);
      if (row.size() >= 8) rows.push_back(row);
    }
  }
  for (const auto& row : rows) {
    if (row[2].find("master") == std::string::npos) continue;
    for (std::size_t i = 8; i < row.size(); ++i) {
      const auto dash = row[i].find('-');
      try {
        const long lo = std::stol(row[i].substr(0, dash));
        const long hi = dash == std::string::npos ? lo : std::stol(row[i].substr(dash + 1));
        if (slot >= lo && slot <= hi) {
          primary_id = row[0];
          primary_host = host_of_address[row[1].substr(0, row[1].find(':'))];
        }
      } catch (...) {  // "[slot-<-id]" migration markers: none in a fresh cluster
      }
    }
  }
  for (const auto& row : rows) {
    if (row[3] == primary_id) replica_host = host_of_address[row[1].substr(0, row[1].find(':'))];
  }
  ASSERT_FALSE(primary_host.empty()) << table;
  ASSERT_FALSE(replica_host.empty()) << table;

  Client& h = start_client("holder", url, options);
  ASSERT_TRUE(poll_until([&] { return granted(h); }, 15s)) << "H was not granted";
  std::vector<std::string> wait = {"--wait", "40s"};
  wait.insert(wait.end(), options.begin(), options.end());
  Client& c = start_client("contender", url, wait);
  std::this_thread::sleep_for(1500ms);
  ASSERT_FALSE(granted(c)) << "C was granted while H held";
  ASSERT_TRUE(lab_->running(c.pid)) << "C gave up before the partition";

  const long long t0 = now_ns();
  lab_->partition({primary_host, "holder"});
  EXPECT_EQ(LabRedis::cli(*lab_, "contender", lab_->address(primary_host), 6379, {"PING"}, 1s)
                .find("PONG"),
            std::string::npos)
      << "the slot's primary still answers across the partition";
  long long failover_ns = -1;
  poll_until(
      [&] {
        const std::string role =
            LabRedis::cli(*lab_, replica_host, lab_->address(replica_host), 6379, {"ROLE"}, 2s);
        if (role.rfind("master", 0) != 0) return false;
        failover_ns = now_ns() - t0;
        return true;
      },
      30s);
  ASSERT_GE(failover_ns, 0) << "the replica " << replica_host << " never took over";
  // As for Sentinel: the issue's bound with default options, the contender's --wait with
  // --min-replicas (the promoted replica has no replica until the heal).
  const long long bound_ns = options.empty()
                                 ? (kTtlMs * 1'000'000LL) + failover_ns + 2'000'000'000LL
                                 : 40'500'000'000LL;

  sleep_until_realtime(t0 + std::chrono::nanoseconds(kPartitionLength).count());
  lab_->heal();
  const long long healed_ns = now_ns() - t0;
  if (!await_exit(h, 20s)) finish(h, 15s);
  end_contender(c, 30s);
  check_no_orphan(label, "contender", url);

  const long long overlap_ms = check_holdings(label, t0, true);
  const auto ch = holding_of(c);
  std::cout << "[partition] " << label << ": slot " << slot << " on " << primary_host
            << ", replica " << replica_host << " took over at " << seconds(failover_ns)
            << ", healed at " << seconds(healed_ns) << ", C granted at "
            << (ch ? seconds(ch->first_ns - t0) : std::string("never")) << " (bound "
            << seconds(bound_ns) << "), exit H " << h.status.value_or(-1) << " C "
            << c.status.value_or(-1) << ", overlap " << overlap_ms << " ms\n";
  ASSERT_TRUE(ch.has_value()) << "C was never granted (exit " << c.status.value_or(-1) << ")";
  EXPECT_LE(ch->first_ns - t0, bound_ns);
  EXPECT_EQ(h.status, 76) << "H must exit 76 (lease lost while COMMAND ran)";
  EXPECT_EQ(c.status, 0);
}

// Case 4: defaults. Issue #28 measured two holders for 1.66 s.
TEST_F(ClusterPartition, PrimaryAndHolderCutOff) {
  run_case("cluster-defaults", {});
}

// Case 3, its Cluster form: --min-replicas 1, and the promoted replica has no replica (its
// primary is the one cut off). Issue #28: C exits 69 at once instead of waiting.
TEST_F(ClusterPartition, MinReplicasPromotedReplicaHasNoReplica) {
  run_case("cluster-min-replicas", {"--min-replicas", "1"});
}

// --- A lossy link ---------------------------------------------------------------------------

// Case 5: one server; H's link drops 30 % of the packets each way for 30 s while three
// contenders wait (--wait 40s); each contender holds for 2 s once granted.
TEST_F(Partition, FlakyHolderLinkWithThreeContenders) {
  lab_->add_host("server");
  LabRedis::start_server(*lab_, "server");
  const std::string url = "redis://" + lab_->address("server") + ":6379";
  Client& h = start_client("holder", url, {});
  ASSERT_TRUE(poll_until([&] { return granted(h); }, 15s)) << "H was not granted";
  std::vector<Client*> contenders;
  for (int i = 1; i <= 3; ++i) {
    contenders.push_back(
        &start_client("contender" + std::to_string(i), url, {"--wait", "40s"}, 20));
  }
  const long long t0 = now_ns();
  lab_->flaky("holder", 30);
  std::this_thread::sleep_for(30s);
  // The loss is real: the rule dropped packets of H's (renewals and their replies).
  const long long dropped = lab_->flaky_drops("holder");
  EXPECT_GT(dropped, 0) << "the flaky rule dropped nothing";
  lab_->flaky("holder", 0);
  touch(h.stop_file);  // H ends (if it still holds), the contenders take turns
  if (!await_exit(h, 20s)) finish(h, 15s);
  for (Client* c : contenders) {
    if (!await_exit(*c, 30s)) finish(*c, 15s);
  }
  check_no_orphan("flaky", "contender1", url);

  const long long overlap_ms = check_holdings("flaky", t0, false);
  std::cout << "[partition] flaky: " << dropped << " packets dropped, exit H "
            << h.status.value_or(-1);
  for (Client* c : contenders) std::cout << " " << c->name << " " << c->status.value_or(-1);
  std::cout << ", overlap " << overlap_ms << " ms\n";
  EXPECT_TRUE(h.status == 0 || h.status == 76) << "H exit " << h.status.value_or(-1);
  for (Client* c : contenders) {
    EXPECT_TRUE(granted(*c)) << c->name << " was never granted";
    EXPECT_EQ(c->status, 0) << c->name;
  }
}

}  // namespace
