// The real `lockwire` binary (next to this test binary) against private redis-servers.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_proc.hpp"
#include "redis_server.hpp"

extern char** environ;

namespace {

using namespace std::chrono_literals;
using lockwire::test::RedisServer;

using namespace lockwire::test;

class LockwireCli : public ::testing::Test {
 protected:
  Result lw(std::vector<std::string> args) {
    Proc p(with_url(std::move(args)), dir_);
    const int st = p.wait();
    return {st, p.out(), p.err()};
  }
  std::unique_ptr<Proc> start(std::vector<std::string> args) {
    return std::make_unique<Proc>(with_url(std::move(args)), dir_);
  }
  std::vector<std::string> with_url(std::vector<std::string> args) {
    // Options may follow the command word; keep `run`'s COMMAND after `--` untouched.
    args.insert(args.begin() + 1, {"--url", server_.url()});
    return args;
  }
  // JSON checks are collected and run by one python3 process at the end of a test (python's
  // start-up is slow on a loaded machine). Each `text` must be lines of JSON objects; `expr` is
  // a python expression over `j` (the first object) and `objs` (all of them).
  void json_expect(const std::string& text, const std::string& expr) {
    json_checks_.emplace_back(text, expr);
  }
  bool json_verify() {
    std::string program = "import json, sys\nok = True\n";
    for (std::size_t i = 0; i < json_checks_.size(); ++i) {
      const std::string data = dir_.file("json-" + std::to_string(i));
      std::ofstream(data) << json_checks_[i].first;
      program +=
          "try:\n"
          "    objs = [json.loads(l) for l in open('" +
          data +
          "') if l.strip()]\n"
          "    assert objs and all(isinstance(o, dict) for o in objs)\n"
          "    j = objs[0]\n"
          "    assert (" +
          json_checks_[i].second +
          ")\n"
          "except Exception as e:\n"
          "    ok = False\n"
          "    print('JSON check failed:', " +
          std::to_string(i) + ", repr(e), open('" + data + "').read())\n";
    }
    program += "sys.exit(0 if ok else 1)\n";
    json_checks_.clear();
    const std::string script = dir_.file("check.py");
    std::ofstream(script) << program;
    return std::system(("python3 " + script).c_str()) == 0;
  }

  RedisServer server_;
  TempDir dir_;
  std::vector<std::pair<std::string, std::string>> json_checks_;
};

// ---- usage ---------------------------------------------------------------------------------

TEST_F(LockwireCli, BadArgumentsAndUrlsAreUsageErrors) {
  const std::string bin = self_dir() + "/lockwire";
  struct Case {
    std::vector<std::string> args;
    const char* needle;
  };
  const std::vector<Case> cases = {
      {{}, "no command"},
      {{"acquire", "r", "--ttl", "10"}, "unit"},
      {{"acquire", "r", "--ttl", "1s", "--url", "http://x"}, "bad URL"},
      {{"inspect", "r", "--url", "redis://h:99999"}, "bad URL"},
      {{"inspect", "r", "--prefix", "a{b"}, "prefix"},
      {{"inspect", "r{x}"}, "resource"},
      {{"run", "r"}, "COMMAND"},
      {{"release", "r"}, "--owner"},
      {{"inspect", "r", "--tls-cert", "c.pem"}, "--tls-key"},
  };
  for (const auto& c : cases) {
    Proc p(c.args, dir_);
    EXPECT_EQ(p.wait(), 64) << c.needle;
    const std::string err = p.err();
    EXPECT_NE(err.find(c.needle), std::string::npos) << err;
    EXPECT_NE(err.find("usage:"), std::string::npos) << err;
  }
  Proc help({"--help"}, dir_);
  EXPECT_EQ(help.wait(), 0);
  EXPECT_NE(help.out().find("Exit statuses"), std::string::npos);
}

TEST_F(LockwireCli, UnreachableServerIsConnectionError) {
  RedisServer gone;
  const std::string url = gone.url();
  gone.stop();
  Proc p({"inspect", "r", "--url", url}, dir_);
  EXPECT_EQ(p.wait(), 69);
  EXPECT_NE(p.err().find("cannot connect"), std::string::npos) << p.err();
}

// ---- acquire / release / renew / force-release / inspect --------------------------------------

TEST_F(LockwireCli, AcquireWaitTimeoutReleaseRenew) {
  Result a = lw({"acquire", "res", "--ttl", "10s", "--owner", "alice"});
  ASSERT_EQ(a.status, 0) << a.err;
  // "<token> <owner>": the token is raised to the server's clock in microseconds (above any
  // token of a dataset that was lost, docs/protocol.md), so it is at least 2020's.
  ASSERT_EQ(a.out.substr(a.out.find(' ')), " alice\n");
  EXPECT_GT(std::stoull(a.out), 1'577'836'800'000'000ull) << a.out;

  Result b = lw({"acquire", "res", "--ttl", "10s", "--owner", "bob", "--wait", "300ms"});
  EXPECT_EQ(b.status, 75);
  EXPECT_NE(b.err.find("res"), std::string::npos) << b.err;
  EXPECT_NE(b.err.find("alice"), std::string::npos) << b.err;  // names the holder

  EXPECT_EQ(lw({"acquire", "res", "--ttl", "10s", "--owner", "alice"}).status,
            75);  // not re-entrant
  EXPECT_EQ(lw({"release", "res", "--owner", "bob"}).status, 77);
  EXPECT_EQ(lw({"renew", "res", "--owner", "bob", "--ttl", "5s"}).status, 77);
  EXPECT_EQ(lw({"renew", "res", "--owner", "alice", "--ttl", "20s"}).status, 0);
  const long long pttl = std::stoll(server_.cli({"PTTL", "lockwire:{res}"}));
  EXPECT_GT(pttl, 10000);  // the renewal took (20s > the original 10s)
  EXPECT_EQ(lw({"release", "res", "--owner", "alice"}).status, 0);
  EXPECT_EQ(lw({"release", "res", "--owner", "alice"}).status, 77);  // already gone
  EXPECT_EQ(server_.cli({"EXISTS", "lockwire:{res}"}), "0\n");

  // A waiting acquire gets the lock once the holder releases (woken, not timed out).
  ASSERT_EQ(lw({"acquire", "res", "--ttl", "10s", "--owner", "carol"}).status, 0);
  auto waiter = start({"acquire", "res", "--ttl", "10s", "--owner", "dave", "--wait", "20s"});
  ASSERT_TRUE(eventually([&] {
    return server_.cli({"CLIENT", "LIST"}).find("lockwire-cli") != std::string::npos;
  }));
  EXPECT_EQ(lw({"release", "res", "--owner", "carol"}).status, 0);
  EXPECT_EQ(waiter->wait(), 0) << waiter->err();
  EXPECT_NE(waiter->out().find("dave"), std::string::npos);
}

TEST_F(LockwireCli, SharedLocksCoexistAndExcludeWriters) {
  ASSERT_EQ(lw({"acquire", "db", "--ttl", "10s", "--shared", "--owner", "r1"}).status, 0);
  ASSERT_EQ(lw({"acquire", "db", "--ttl", "10s", "--shared", "--owner", "r2"}).status, 0);
  EXPECT_EQ(lw({"acquire", "db", "--ttl", "10s", "--owner", "w"}).status, 75);
  Result i = lw({"inspect", "db", "--json"});
  ASSERT_EQ(i.status, 0);
  json_expect(i.out, "j['state']=='shared' and len(j['holders'])==2");
  // release/renew find the shared lease by owner without --shared.
  EXPECT_EQ(lw({"renew", "db", "--owner", "r1", "--ttl", "10s"}).status, 0);
  EXPECT_EQ(lw({"release", "db", "--owner", "r1"}).status, 0);
  EXPECT_EQ(lw({"release", "db", "--owner", "r2", "--shared"}).status, 0);
  EXPECT_EQ(lw({"acquire", "db", "--ttl", "10s", "--owner", "w"}).status, 0);
  EXPECT_TRUE(json_verify());
}

// Issue #20: a reader's shared lease becomes exclusive in place; a second reader asking for the
// same is told at once; a persistent lease only with --ttl forever (0 stays an error).
TEST_F(LockwireCli, UpgradeAndPersistentLeases) {
  ASSERT_EQ(lw({"acquire", "u", "--ttl", "10s", "--shared", "--owner", "r1"}).status, 0);
  ASSERT_EQ(lw({"acquire", "u", "--ttl", "10s", "--shared", "--owner", "r2"}).status, 0);
  // r2 still reads: r1's upgrade waits, then is not granted within 200 ms.
  Result busy = lw({"upgrade", "u", "--owner", "r1", "--ttl", "10s", "--wait", "200ms"});
  EXPECT_EQ(busy.status, 75) << busy.err;
  EXPECT_NE(busy.err.find("r2"), std::string::npos) << busy.err;  // names the other reader
  auto waiting = start({"upgrade", "u", "--owner", "r1", "--ttl", "10s", "--wait", "20s"});
  ASSERT_TRUE(eventually([&] { return server_.cli({"GET", "lockwire:{u}:u"}) == "r1\n"; }));
  Result conflict = lw({"upgrade", "u", "--owner", "r2", "--ttl", "10s", "--wait", "20s"});
  EXPECT_EQ(conflict.status, 75);
  EXPECT_NE(conflict.err.find("'r1' is upgrading"), std::string::npos) << conflict.err;
  EXPECT_EQ(lw({"release", "u", "--owner", "r2"}).status, 0);
  EXPECT_EQ(waiting->wait(), 0) << waiting->err();
  EXPECT_NE(waiting->out().find(" r1"), std::string::npos) << waiting->out();
  Result i = lw({"inspect", "u", "--json"});
  json_expect(i.out, "j['state']=='exclusive' and j['holders'][0]['owner']=='r1'");
  EXPECT_EQ(lw({"upgrade", "u", "--owner", "nobody", "--ttl", "1s"}).status, 77);
  EXPECT_EQ(lw({"release", "u", "--owner", "r1"}).status, 0);

  EXPECT_EQ(lw({"acquire", "p", "--ttl", "0", "--owner", "o"}).status, 64);
  ASSERT_EQ(lw({"acquire", "p", "--ttl", "forever", "--owner", "o"}).status, 0);
  Result pi = lw({"inspect", "p"});
  EXPECT_NE(pi.out.find("exclusive o (persistent)"), std::string::npos) << pi.out;
  EXPECT_GT(std::stoll(server_.cli({"PTTL", "lockwire:{p}"})), 40LL * 365 * 24 * 3600 * 1000);
  auto w = start({"acquire", "p", "--ttl", "5s", "--owner", "w", "--wait", "20s"});
  ASSERT_TRUE(eventually([&] { return server_.cli({"EXISTS", "lockwire:{p}:w:w"}) == "1\n"; }));
  EXPECT_EQ(lw({"release", "p", "--owner", "o"}).status, 0);  // wakes the waiter
  EXPECT_EQ(w->wait(), 0) << w->err();
  EXPECT_EQ(lw({"release", "p", "--owner", "w"}).status, 0);
  // renew with --ttl forever makes a lease persistent (RoadRunner's UpdateTTL 0).
  ASSERT_EQ(lw({"acquire", "p", "--ttl", "5s", "--owner", "o2"}).status, 0);
  EXPECT_EQ(lw({"renew", "p", "--owner", "o2", "--ttl", "forever"}).status, 0);
  EXPECT_GT(std::stoll(server_.cli({"PTTL", "lockwire:{p}"})), 40LL * 365 * 24 * 3600 * 1000);
  EXPECT_EQ(lw({"force-release", "p"}).status, 0);
  EXPECT_EQ(server_.cli({"EXISTS", "lockwire:{p}"}), "0\n");
  EXPECT_TRUE(json_verify());
}

// A counting semaphore from the command line: `run --permits 2` lets two COMMANDs in at once,
// the third waits for a permit.
TEST_F(LockwireCli, PermitsMakeASemaphore) {
  ASSERT_EQ(lw({"acquire", "slots", "--ttl", "10s", "--permits", "2", "--owner", "a"}).status, 0);
  ASSERT_EQ(lw({"acquire", "slots", "--ttl", "10s", "--permits", "2", "--owner", "b"}).status, 0);
  Result full = lw({"acquire", "slots", "--ttl", "10s", "--permits", "2", "--owner", "c"});
  EXPECT_EQ(full.status, 75);
  EXPECT_NE(full.err.find("'a'"), std::string::npos) << full.err;
  auto third = start({"run", "slots", "--permits", "2", "--wait", "20s", "--", "true"});
  ASSERT_TRUE(eventually([&] {
    return server_.cli({"CLIENT", "LIST"}).find("lockwire-cli") != std::string::npos;
  }));
  EXPECT_EQ(lw({"release", "slots", "--owner", "a"}).status, 0);
  EXPECT_EQ(third->wait(), 0) << third->err();
  EXPECT_EQ(server_.cli({"HKEYS", "lockwire:{slots}"}), "s:b\n");
  EXPECT_EQ(lw({"acquire", "slots", "--ttl", "1s", "--permits", "0"}).status, 64);
  EXPECT_EQ(lw({"release", "slots", "--owner", "b"}).status, 0);
}

// Several RESOURCEs at once, all or nothing (issue #20): `acquire R1 R2` prints a line per
// lease; a refusal leaves none; `run R1 R2 -- CMD` exports them with their tokens.
TEST_F(LockwireCli, SeveralResourcesAllOrNothing) {
  ASSERT_EQ(lw({"acquire", "r2", "--ttl", "10s", "--owner", "other"}).status, 0);
  Result busy = lw({"acquire", "r3", "r1", "r2", "--ttl", "10s", "--owner", "me", "--wait", "200ms"});
  EXPECT_EQ(busy.status, 75) << busy.err;
  EXPECT_NE(busy.err.find("all or nothing"), std::string::npos) << busy.err;
  EXPECT_EQ(server_.cli({"EXISTS", "lockwire:{r1}", "lockwire:{r3}"}), "0\n");  // none left
  EXPECT_EQ(lw({"release", "r2", "--owner", "other"}).status, 0);
  Result ok = lw({"acquire", "r3", "r1", "r2", "--ttl", "10s", "--owner", "me"});
  ASSERT_EQ(ok.status, 0) << ok.err;
  // One "TOKEN OWNER RESOURCE" line per lease, in name order.
  EXPECT_NE(ok.out.find(" me r1\n"), std::string::npos) << ok.out;
  EXPECT_LT(ok.out.find(" me r1\n"), ok.out.find(" me r3\n")) << ok.out;
  for (const char* r : {"r1", "r2", "r3"}) EXPECT_EQ(lw({"release", r, "--owner", "me"}).status, 0);
  Result run = lw({"run", "a", "b", "--", "sh", "-c",
                   "echo \"$LOCKWIRE_RESOURCES|$LOCKWIRE_FENCING_TOKENS\""});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out.substr(0, 4), "a b|") << run.out;
  EXPECT_EQ(server_.cli({"EXISTS", "lockwire:{a}", "lockwire:{b}"}), "0\n");  // released
  EXPECT_EQ(lw({"acquire", "a", "b", "--ttl", "1s", "--shared"}).status, 64);
  EXPECT_EQ(lw({"release", "a", "b", "--owner", "x"}).status, 64);
}

TEST_F(LockwireCli, JsonOutputsParse) {
  Result a = lw({"acquire", "j", "--ttl", "10s", "--owner", "o\"dd\\name", "--json"});
  ASSERT_EQ(a.status, 0) << a.err;
  json_expect(a.out,
              "j['owner']=='o\"dd\\\\name' and j['token']>1577836800000000 and "
              "j['kind']=='exclusive' and j['ttl_ms']==10000");
  Result i = lw({"inspect", "j", "--json"});
  json_expect(i.out,
              "j['state']=='exclusive' and j['last_token']>1577836800000000 and "
              "j['holders'][0]['owner']=='o\"dd\\\\name'");
  Result r = lw({"renew", "j", "--owner", "o\"dd\\name", "--ttl", "5s", "--json"});
  json_expect(r.out, "j['renewed'] is True and j['ttl_ms']==5000");
  Result f = lw({"force-release", "j", "--json"});
  EXPECT_EQ(f.status, 0);
  json_expect(f.out, "j['removed']==1");
  Result rel = lw({"release", "j", "--owner", "o\"dd\\name", "--json"});
  EXPECT_EQ(rel.status, 77);
  json_expect(rel.out, "j['released'] is False");
  Result free = lw({"inspect", "j", "--json"});
  json_expect(free.out, "j['state']=='free' and j['holders']==[]");
  EXPECT_TRUE(json_verify());
}

// ---- run -------------------------------------------------------------------------------------

TEST_F(LockwireCli, ConcurrentRunsNeverLoseAnUpdate) {
  const std::string counter = dir_.file("counter");
  const std::string tokens = dir_.file("tokens");
  // Read, sleep, write: without mutual exclusion concurrent increments are lost.
  const std::string body = "v=$(cat " + counter + "); sleep 0.03; echo $((v+1)) > " + counter +
                           "; echo $LOCKWIRE_FENCING_TOKEN >> " + tokens;
  constexpr int kProcs = 5, kRounds = 3;

  // Control: the same critical section without the lock does lose updates (the check can fail).
  std::ofstream(counter) << "0\n";
  {
    std::vector<pid_t> pids;
    for (int i = 0; i < kProcs; ++i) {
      // All start together (a "go" file), so their first read-sleep-write windows overlap.
      const std::string loop = "while [ ! -f " + dir_.file("go") + " ]; do sleep 0.01; done; " +
                               "for i in 1 2 3; do " + body + "; done";
      std::vector<std::string> args{"/bin/sh", "-c", loop};
      std::vector<char*> argv;
      for (auto& s : args) argv.push_back(s.data());
      argv.push_back(nullptr);
      pid_t pid = -1;
      ASSERT_EQ(::posix_spawn(&pid, "/bin/sh", nullptr, nullptr, argv.data(), environ), 0);
      pids.push_back(pid);
    }
    std::ofstream(dir_.file("go")) << "";
    for (pid_t pid : pids) {
      int st = 0;
      ::waitpid(pid, &st, 0);
    }
    EXPECT_LT(std::stoi(read_file(counter)), kProcs * kRounds);
  }

  std::ofstream(counter) << "0\n";
  std::ofstream(tokens) << "";
  std::vector<std::unique_ptr<Proc>> procs;
  // Each process runs `kRounds` locked increments one after another (a shell loop of lockwire).
  const std::string bin = self_dir() + "/lockwire";
  for (int i = 0; i < kProcs; ++i) {
    std::string loop = "for i in 1 2 3; do " + bin + " run --url " + server_.url() +
                       " --ttl 5s --wait 30s ctr -- sh -c '" + body + "' || exit 1; done";
    procs.push_back(
        std::make_unique<Proc>(std::vector<std::string>{"/bin/sh", "-c", loop}, dir_, true));
  }
  for (auto& p : procs) EXPECT_EQ(p->wait(60s), 0) << p->err();
  EXPECT_EQ(std::stoi(read_file(counter)), kProcs * kRounds);
  // Every grant had its own fencing token.
  std::istringstream ts(read_file(tokens));
  std::set<long long> seen;
  long long t = 0;
  int n = 0;
  while (ts >> t) {
    seen.insert(t);
    ++n;
  }
  EXPECT_EQ(n, kProcs * kRounds);
  EXPECT_EQ(static_cast<int>(seen.size()), n);
}

TEST_F(LockwireCli, RunPropagatesStatusAndSetsEnvironment) {
  Result r = lw({"run", "--owner", "me", "job", "--", "sh", "-c",
                 "echo \"$LOCKWIRE_RESOURCE $LOCKWIRE_OWNER $LOCKWIRE_FENCING_TOKEN\"; exit 7"});
  EXPECT_EQ(r.status, 7) << r.err;
  ASSERT_EQ(r.out.rfind("job me ", 0), 0u) << r.out;
  EXPECT_GT(std::stoull(r.out.substr(7)), 0u) << r.out;
  EXPECT_EQ(server_.cli({"EXISTS", "lockwire:{job}"}), "0\n");  // released after COMMAND

  EXPECT_EQ(lw({"run", "job", "--", "sh", "-c", "kill -KILL $$"}).status, 128 + SIGKILL);
  EXPECT_EQ(lw({"run", "job", "--", "/nonexistent/command"}).status, 127);
  EXPECT_EQ(lw({"run", "job", "--", "true"}).status, 0);

  // Held elsewhere: COMMAND does not run, status 75.
  ASSERT_EQ(lw({"acquire", "job", "--ttl", "10s", "--owner", "other"}).status, 0);
  const std::string marker = dir_.file("ran");
  Result busy = lw({"run", "job", "--wait", "200ms", "--", "touch", marker});
  EXPECT_EQ(busy.status, 75);
  EXPECT_FALSE(exists(marker));
  EXPECT_NE(busy.err.find("job"), std::string::npos) << busy.err;
}

TEST_F(LockwireCli, SignalsAreForwardedToCommand) {
  const std::string started = dir_.file("started"), log = dir_.file("log");
  const std::string script = "trap 'echo usr1 >> " + log + "' USR1; trap 'echo term >> " + log +
                             "; exit 42' TERM; touch " + started + "; while :; do sleep 0.02; done";
  auto p = start({"run", "sig", "--", "sh", "-c", script});
  ASSERT_TRUE(eventually([&] { return exists(started); })) << p->err();
  p->signal(SIGUSR1);
  ASSERT_TRUE(eventually([&] { return read_file(log).find("usr1") != std::string::npos; }));
  p->signal(SIGTERM);
  EXPECT_EQ(p->wait(), 42) << p->err();  // COMMAND's own status after handling the signal
  EXPECT_EQ(read_file(log), "usr1\nterm\n");
  EXPECT_EQ(server_.cli({"EXISTS", "lockwire:{sig}"}), "0\n");
}

TEST_F(LockwireCli, SignalWhileWaitingGivesUpWithoutLeavingAClaim) {
  ASSERT_EQ(lw({"acquire", "w", "--ttl", "20s", "--owner", "holder"}).status, 0);
  const std::string marker = dir_.file("ran");
  auto p = start({"run", "w", "--owner", "waiter", "--wait", "30s", "--", "touch", marker});
  ASSERT_TRUE(eventually([&] {
    return server_.cli({"CLIENT", "LIST"}).find("lockwire-cli") != std::string::npos;
  }));
  p->signal(SIGINT);
  EXPECT_EQ(p->wait(), 128 + SIGINT);
  EXPECT_FALSE(exists(marker));
  EXPECT_EQ(server_.cli({"HKEYS", "lockwire:{w}"}), "x:holder\n");

  // The same for a waiting one-shot acquire.
  auto a = start({"acquire", "w", "--ttl", "5s", "--owner", "waiter2", "--wait", "30s"});
  ASSERT_TRUE(eventually([&] {
    return server_.cli({"CLIENT", "LIST"}).find("lockwire-cli") != std::string::npos;
  }));
  a->signal(SIGTERM);
  EXPECT_EQ(a->wait(), 128 + SIGTERM);
  EXPECT_EQ(a->out(), "");
  EXPECT_EQ(server_.cli({"HKEYS", "lockwire:{w}"}), "x:holder\n");
}

TEST_F(LockwireCli, LeaseLossByForceReleaseKillsCommand) {
  const std::string started = dir_.file("started"), log = dir_.file("log");
  const std::string script = "trap 'echo term >> " + log + "; exit 3' TERM; touch " + started +
                             "; while :; do sleep 0.02; done";
  auto p = start({"run", "--ttl", "600ms", "lost", "--", "sh", "-c", script});
  ASSERT_TRUE(eventually([&] { return exists(started); })) << p->err();
  EXPECT_EQ(lw({"force-release", "lost"}).status, 0);
  EXPECT_EQ(p->wait(), 76) << p->err();
  EXPECT_EQ(read_file(log), "term\n");
  EXPECT_NE(p->err().find("lost"), std::string::npos) << p->err();
}

TEST_F(LockwireCli, LeaseLossByPausedServerKillsStubbornCommand) {
  const std::string started = dir_.file("started");
  // Ignores SIGTERM: only the SIGKILL after --kill-after ends it.
  const std::string script = "trap '' TERM; touch " + started + "; while :; do sleep 0.02; done";
  auto p =
      start({"run", "--ttl", "500ms", "--kill-after", "200ms", "paused", "--", "sh", "-c", script});
  ASSERT_TRUE(eventually([&] { return exists(started); })) << p->err();
  server_.pause();  // no renewal can be confirmed: the lease runs out on the client's clock
  const int st = p->wait();
  server_.resume();
  EXPECT_EQ(st, 76) << p->err();
  EXPECT_NE(p->err().find("SIGKILL"), std::string::npos) << p->err();
}

// ---- watch -----------------------------------------------------------------------------------

TEST_F(LockwireCli, WatchSeesAcquireReleaseAndExpiry) {
  auto w = start({"watch", "wr", "--json"});
  auto lines = [&] { return w->out(); };
  ASSERT_TRUE(eventually([&] { return lines().find("\"initial\"") != std::string::npos; }))
      << w->err();
  ASSERT_EQ(lw({"acquire", "wr", "--ttl", "500ms", "--owner", "short"}).status, 0);
  ASSERT_TRUE(eventually([&] { return lines().find("\"expired\"") != std::string::npos; }))
      << lines();
  ASSERT_EQ(lw({"acquire", "wr", "--ttl", "20s", "--owner", "long"}).status, 0);
  ASSERT_EQ(lw({"release", "wr", "--owner", "long"}).status, 0);
  ASSERT_TRUE(eventually([&] { return lines().find("\"released\"") != std::string::npos; }))
      << lines();
  w->signal(SIGTERM);
  EXPECT_EQ(w->wait(), 0) << w->err();
  const std::string out = w->out();
  json_expect(out,
              "[o['event'] for o in objs] == "
              "['initial', 'acquired', 'expired', 'acquired', 'released']");
  EXPECT_TRUE(json_verify());
  // The events, in order, each naming the holder.
  const std::vector<std::string> expect = {
      "\"event\":\"initial\"",
      "\"event\":\"acquired\",\"kind\":\"exclusive\",\"owner\":\"short\"",
      "\"event\":\"expired\",\"kind\":\"exclusive\",\"owner\":\"short\"",
      "\"event\":\"acquired\",\"kind\":\"exclusive\",\"owner\":\"long\"",
      "\"event\":\"released\",\"kind\":\"exclusive\",\"owner\":\"long\"",
  };
  std::size_t pos = 0;
  for (const auto& e : expect) {
    pos = out.find(e, pos);
    ASSERT_NE(pos, std::string::npos) << "missing " << e << " in\n" << out;
  }
}

}  // namespace

// ---- TLS -------------------------------------------------------------------------------------

namespace {

// A CA, a server certificate for 127.0.0.1 and a client certificate, made with the openssl CLI.
bool make_certs(const TempDir& d) {
  const std::string script =
      "set -e; cd '" + d.file("") +
      "'\n"
      "k='-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes'\n"
      "openssl req -x509 $k -keyout ca.key -out ca.crt -days 2 -subj /CN=lockwire-test-ca\n"
      "openssl req $k -keyout server.key -out server.csr -subj /CN=localhost\n"
      "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > san.cnf\n"
      "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt "
      "-days 2 -extfile san.cnf\n"
      "openssl req $k -keyout client.key -out client.csr -subj /CN=lockwire-client\n"
      "openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out client.crt "
      "-days 2\n";
  return std::system(("sh -c \"$(cat <<'EOS'\n" + script + "EOS\n)\" >/dev/null 2>&1").c_str()) ==
         0;
}

}  // namespace

TEST(LockwireTls, AllCommandsWorkOverTlsWithClientCertificates) {
  TempDir d;
  ASSERT_TRUE(make_certs(d)) << "openssl CLI failed";
  const std::uint16_t tls_port = lockwire::test::free_loopback_port();
  ASSERT_NE(tls_port, 0);
  RedisServer server({"--tls-port", std::to_string(tls_port), "--tls-cert-file",
                      d.file("server.crt"), "--tls-key-file", d.file("server.key"),
                      "--tls-ca-cert-file", d.file("ca.crt"), "--tls-auth-clients", "yes"});
  const std::string url = "rediss://127.0.0.1:" + std::to_string(tls_port);
  const std::vector<std::string> tls = {"--url",      url,
                                        "--tls-ca",   d.file("ca.crt"),
                                        "--tls-cert", d.file("client.crt"),
                                        "--tls-key",  d.file("client.key")};
  auto lw = [&](std::vector<std::string> args, bool with_tls = true) {
    if (with_tls) args.insert(args.begin() + 1, tls.begin(), tls.end());
    Proc p(args, d);
    const int st = p.wait();
    return Result{st, p.out(), p.err()};
  };

  Result r = lw({"run", "t", "--", "sh", "-c", "echo $LOCKWIRE_FENCING_TOKEN"});
  EXPECT_EQ(r.status, 0) << r.err;
  ASSERT_FALSE(r.out.empty());
  Result a = lw({"acquire", "t", "--ttl", "10s", "--owner", "o"});
  EXPECT_EQ(a.status, 0) << a.err;
  EXPECT_GT(std::stoull(a.out), std::stoull(r.out)) << r.out << a.out;  // "<token> o"
  EXPECT_EQ(a.out.substr(a.out.find(' ')), " o\n");
  Result i = lw({"inspect", "t"});
  EXPECT_NE(i.out.find("exclusive o"), std::string::npos) << i.out << i.err;
  EXPECT_EQ(lw({"renew", "t", "--owner", "o", "--ttl", "10s"}).status, 0);
  EXPECT_EQ(lw({"release", "t", "--owner", "o"}).status, 0);

  // Certificate checks are not optional: unknown CA and missing client certificate both fail.
  Result no_ca = lw({"inspect", "t", "--url", url, "--tls-cert", d.file("client.crt"), "--tls-key",
                     d.file("client.key")},
                    false);
  EXPECT_EQ(no_ca.status, 69);
  EXPECT_NE(no_ca.err.find("verif"), std::string::npos) << no_ca.err;
  EXPECT_EQ(lw({"inspect", "t", "--url", url, "--tls-ca", d.file("ca.crt")}, false).status, 69);
  // --tls-insecure skips verification, loudly (even with --quiet).
  Result insecure = lw({"inspect", "t", "-q", "--url", url, "--tls-insecure", "--tls-cert",
                        d.file("client.crt"), "--tls-key", d.file("client.key")},
                       false);
  EXPECT_EQ(insecure.status, 0) << insecure.err;
  EXPECT_NE(insecure.err.find("WARNING"), std::string::npos);
}

TEST(LockwireUnix, WorksOverAUnixSocket) {
  TempDir d;
  RedisServer server({}, /*unix_socket=*/true);
  const std::string url = "unix://" + server.unix_path();
  Proc run({"run", "--url", url, "u", "--", "sh", "-c", "echo $LOCKWIRE_FENCING_TOKEN"}, d);
  EXPECT_EQ(run.wait(), 0) << run.err();
  ASSERT_FALSE(run.out().empty());
  Proc inspect({"inspect", "--url", url, "u", "--json"}, d);
  EXPECT_EQ(inspect.wait(), 0) << inspect.err();
  const std::string token = run.out().substr(0, run.out().size() - 1);
  EXPECT_NE(inspect.out().find("\"last_token\":" + token + ","), std::string::npos)
      << token << " " << inspect.out();
}

TEST_F(LockwireCli, WatchFollowsAcrossAServerRestart) {
  auto w = start({"watch", "rs", "--json"});
  auto out = [&] { return w->out(); };
  ASSERT_TRUE(eventually([&] { return out().find("\"initial\"") != std::string::npos; }));
  ASSERT_EQ(lw({"acquire", "rs", "--ttl", "20s", "--owner", "before"}).status, 0);
  ASSERT_TRUE(eventually([&] { return out().find("\"before\"") != std::string::npos; }));
  server_.restart();  // same port, empty data: the holder is gone
  ASSERT_EQ(lw({"acquire", "rs", "--ttl", "20s", "--owner", "after"}).status, 0);
  // Tracking is re-enabled on reconnect and the state re-read: both changes are reported.
  ASSERT_TRUE(eventually([&] { return out().find("\"after\"") != std::string::npos; })) << out();
  w->signal(SIGINT);
  EXPECT_EQ(w->wait(), 0);
  json_expect(out(),
              "[(o['event'], o.get('owner')) for o in objs[1:]] == "
              "[('acquired', 'before'), ('released', 'before'), ('acquired', 'after')]");
  EXPECT_TRUE(json_verify());
}
