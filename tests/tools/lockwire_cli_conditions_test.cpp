// The `lockwire` tool on servers configured as managed and hardened Redis is (issue #13): each
// test replays one finding with the real binary and a real redis-server; each failed with the
// binary built from the code before the fix (0e40434).
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "cli_proc.hpp"
#include "redis_server.hpp"

namespace {

using namespace std::chrono_literals;
using namespace lockwire::test;

struct Result {
  int status;
  std::string out, err;
  std::chrono::milliseconds took;
};

class CliConditions : public ::testing::Test {
 protected:
  CliConditions() = default;
  explicit CliConditions(std::vector<std::string> server_args) : server_(std::move(server_args)) {}

  // lockwire ARGS against `url` (default: our server as the default user).
  Result lw(std::vector<std::string> args, std::string url = {},
            std::chrono::milliseconds limit = 30s) {
    const auto t0 = std::chrono::steady_clock::now();
    Proc p(with_url(std::move(args), url), dir_);
    const int st = p.wait(limit);
    const auto took =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
    return {st, p.out(), p.err(), took};
  }
  std::unique_ptr<Proc> start(std::vector<std::string> args, std::string url = {}) {
    return std::make_unique<Proc>(with_url(std::move(args), url), dir_);
  }
  std::vector<std::string> with_url(std::vector<std::string> args, const std::string& url) {
    args.insert(args.begin() + 1, {"--url", url.empty() ? server_.url() : url});
    return args;
  }
  std::string user_url(const std::string& user) const {
    return "redis://" + user + ":pw@127.0.0.1:" + std::to_string(server_.port());
  }
  std::string cli(const std::vector<std::string>& args) { return server_.cli(args); }

  RedisServer server_;
  TempDir dir_;
};

TEST_F(CliConditions, PausedServerPastTheWaitLeavesNoLockAndNeverNamesTheCaller) {
  // Finding 1: the server holds the acquire (CLIENT PAUSE WRITE) past --wait, then grants it.
  for (const std::vector<std::string>& cmd :
       {std::vector<std::string>{"acquire", "pz", "--ttl", "20s", "--owner", "pz1", "--wait",
                                 "1s"},
        std::vector<std::string>{"run", "pz", "--ttl", "20s", "--owner", "pz1", "--wait", "1s",
                                 "--", "true"}}) {
    cli({"CLIENT", "PAUSE", "1500", "WRITE"});
    const auto t0 = std::chrono::steady_clock::now();
    const Result r = lw(cmd);
    EXPECT_EQ(r.status, 75) << r.err;
    EXPECT_EQ(r.err.find("'pz1'"), std::string::npos) << r.err;  // never "held by" ourselves
    std::this_thread::sleep_until(t0 + 1600ms);                  // the pause is over
    EXPECT_EQ(cli({"HLEN", "lockwire:{pz}"}), "0\n") << cmd[0] << ": the late grant was left";
  }
}

TEST_F(CliConditions, PausedServerBeyondTheSettleBoundSaysWhatMayRemain) {
  // Finding 1/6: the server stays silent past --wait + the settle bound: the tool answers within
  // that bound and says honestly what may be left, and for how long.
  cli({"CLIENT", "PAUSE", "5000", "WRITE"});
  const Result r = lw({"acquire", "pz", "--ttl", "20s", "--owner", "pz1", "--wait", "1s"});
  EXPECT_EQ(r.status, 69) << r.err;
  EXPECT_NE(r.err.find("outcome unknown"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("may remain until its TTL (20000 ms)"), std::string::npos) << r.err;
  EXPECT_LT(r.took, 4s) << "bound: --wait 1s + settle 1s";  // a bound, not a speed figure
  cli({"CLIENT", "UNPAUSE"});
}

TEST_F(CliConditions, RefusedWaitBlockLeavesNoClaim) {
  // Finding 2: the wait block is refused (NOPERM inside MULTI, then EXECABORT), so its HDEL never
  // ran; the claim of the first attempt must be withdrawn, and the server's words printed.
  cli({"ACL", "SETUSER", "nozrange", "on", ">pw", "~lockwire:*", "resetchannels", "+@all",
       "-@scripting", "-zrange"});
  ASSERT_EQ(lw({"acquire", "R", "--ttl", "30s", "--owner", "holder"}).status, 0);
  const Result r =
      lw({"acquire", "R", "--ttl", "30s", "--owner", "waiter", "--wait", "1s"}, user_url("nozrange"));
  EXPECT_EQ(r.status, 69) << r.err;
  EXPECT_NE(r.err.find("NOPERM"), std::string::npos) << r.err;
  EXPECT_EQ(cli({"HEXISTS", "lockwire:{R}", "x:waiter"}), "0\n");
  ASSERT_EQ(lw({"release", "R", "--owner", "holder"}).status, 0);
  EXPECT_EQ(lw({"acquire", "R", "--ttl", "30s", "--owner", "next"}).status, 0);
}

std::uint64_t total_calls(const std::string& commandstats) {
  std::uint64_t n = 0;
  std::size_t at = 0;
  while ((at = commandstats.find("calls=", at)) != std::string::npos) {
    at += 6;
    n += std::stoull(commandstats.substr(at));
  }
  return n;
}

TEST_F(CliConditions, RefusedTrackingMeansBoundedPollingAndSaysSo) {
  // Finding 3: with CLIENT TRACKING refused, a waiter must not spin. The holder's lease expires
  // after 1.5 s; the waiter gets it, having sent a few dozen commands, not hundreds of thousands.
  cli({"ACL", "SETUSER", "notrack", "on", ">pw", "~lockwire:*", "resetchannels", "+@all",
       "-@scripting", "-client|tracking"});
  ASSERT_EQ(lw({"acquire", "T", "--ttl", "1500ms", "--owner", "holder"}).status, 0);
  cli({"CONFIG", "RESETSTAT"});
  const Result r = lw({"run", "-v", "T", "--wait", "8s", "--", "true"}, user_url("notrack"));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("waiters poll"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("NOPERM"), std::string::npos) << r.err;
  const std::uint64_t calls = total_calls(cli({"INFO", "commandstats"}));
  EXPECT_LT(calls, 300u) << cli({"INFO", "commandstats"});
  const Result j = lw({"inspect", "T", "--json"}, user_url("notrack"));
  EXPECT_NE(j.out.find("\"push_wakeups\":false"), std::string::npos) << j.out;
}

class CliEvicting : public CliConditions {
 protected:
  CliEvicting() : CliConditions({"--maxmemory", "3mb", "--maxmemory-policy", "allkeys-lru"}) {}
};

TEST_F(CliEvicting, IsRefusedUnlessAllowed) {
  // Finding 4: evicted lock keys break fencing and exclusion; refuse such a server by default.
  const Result r = lw({"acquire", "ev", "--ttl", "10s"});
  EXPECT_EQ(r.status, 69) << r.err;
  EXPECT_NE(r.err.find("maxmemory-policy allkeys-lru"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--allow-eviction"), std::string::npos) << r.err;
  EXPECT_EQ(cli({"EXISTS", "lockwire:{ev}"}), "0\n");
  const Result ok = lw({"acquire", "ev", "--ttl", "10s", "--allow-eviction", "-v"});
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_NE(ok.err.find("evicted"), std::string::npos) << ok.err;
}

TEST_F(CliConditions, ServerErrorsAreShownInTheServersWords) {
  // Finding 5: a replica's READONLY, through every subcommand that writes.
  RedisServer replica({"--replicaof", "127.0.0.1", std::to_string(server_.port())});
  const std::string url = replica.url();
  // A lease the replica has too, so that renew gets as far as its write.
  ASSERT_EQ(lw({"acquire", "r", "--ttl", "60s", "--owner", "o"}).status, 0);
  ASSERT_TRUE(eventually([&] { return replica.cli({"HLEN", "lockwire:{r}"}) == "1\n"; }));
  const std::string readonly = "READONLY You can't write against a read only replica.";
  for (const std::vector<std::string>& cmd :
       {std::vector<std::string>{"acquire", "r2", "--ttl", "10s"},
        std::vector<std::string>{"release", "r", "--owner", "o"},
        std::vector<std::string>{"renew", "r", "--owner", "o", "--ttl", "10s"},
        std::vector<std::string>{"force-release", "r"}}) {
    const Result r = lw(cmd, url);
    EXPECT_EQ(r.status, 69) << cmd[0] << ": " << r.err;
    EXPECT_NE(r.err.find(readonly), std::string::npos) << cmd[0] << ": " << r.err;
  }
}

TEST_F(CliConditions, ServerThatStopsAnsweringNeverMakesTheToolHang) {
  // Finding 6: behind a holder, the server stops answering after the handshake (SIGSTOP). The
  // tool must return within its bound: --wait + settle (1 s) + naming the holder (1 s).
  ASSERT_EQ(lw({"acquire", "S", "--ttl", "60s", "--owner", "holder"}).status, 0);
  auto p = start({"run", "-v", "S", "--wait", "1s", "--", "true"});
  ASSERT_TRUE(eventually([&] { return p->err().find("connected") != std::string::npos; }));
  std::this_thread::sleep_for(100ms);  // its first attempt is answered: it is waiting
  server_.pause();
  const int st = p->wait(8s);
  server_.resume();
  EXPECT_EQ(st, 75) << p->err();
  // Every other subcommand against a silent server ends within its bound too.
  server_.pause();
  for (const std::vector<std::string>& cmd :
       {std::vector<std::string>{"acquire", "S", "--ttl", "10s", "--wait", "1s"},
        std::vector<std::string>{"release", "S", "--owner", "holder"},
        std::vector<std::string>{"renew", "S", "--owner", "holder", "--ttl", "10s"},
        std::vector<std::string>{"force-release", "S"}, std::vector<std::string>{"inspect", "S"},
        std::vector<std::string>{"watch", "S"}}) {
    std::vector<std::string> args = cmd;
    args.insert(args.begin() + 1, {"--connect-timeout", "500ms"});
    const Result r = lw(args, {}, 10s);
    EXPECT_EQ(r.status, 69) << cmd[0] << ": " << r.err;
  }
  server_.resume();
}

}  // namespace
