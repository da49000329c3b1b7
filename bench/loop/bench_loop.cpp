// bench_loop: one lockwire Connection on UvLoop against a redis-server, compared in the same run
// with redis-benchmark on that same server:
//   - PING round trip p50 vs `redis-benchmark -c 1 -P 1 -t ping` (PING_MBULK p50)
//   - SET / GET throughput with 16 and 128 in flight vs `redis-benchmark -c 1 -P 16|128 -t set,get`
// Each of our benchmark runs is immediately preceded (untimed) by the matching redis-benchmark
// run of the same number of requests; every benchmark is repeated 3 times and the best result of
// each side is compared, which keeps the comparison fair on a shared, noisy machine.
//
// Usage: bench_loop [google benchmark flags]
// Environment:
//   LOCKWIRE_BENCH_URL    server to use (redis://, unix://); unset: a private redis-server
//   LOCKWIRE_BENCH_QUICK  set (not "0"): one short repetition each, small redis-benchmark runs
//                         (checks that everything runs; the figures mean nothing)
// It never hangs: redis-benchmark runs under a timeout, every wait for the server has a deadline,
// and a watchdog ends the process. Any failure is printed and makes the exit status 1.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "lockwire/loop/connection.hpp"
#include "lockwire/loop/uv_loop.hpp"
#include "redis_server.hpp"

extern char** environ;

namespace {

using lockwire::loop::Connection;
using lockwire::loop::ConnectionOptions;
using lockwire::loop::ConnectionState;
using lockwire::loop::Endpoint;
using lockwire::loop::Replies;
using lockwire::loop::UvLoop;
using namespace std::chrono_literals;

struct Config {
  bool quick = false;
  ConnectionOptions conn;
  std::vector<std::string> rb_target;  // redis-benchmark's server arguments
  int ping_n = 30000;                  // redis-benchmark -n for PING
  int batch = 100000;                  // our commands per pipelined iteration
  int reps = 3;
  int rb_timeout_s = 120;  // one redis-benchmark run
  int run_timeout_s = 60;  // one of our benchmark runs (connect + every wait)
  int watchdog_s = 540;    // the whole process (bench/report/collect.py allows 600 s)
};
Config g_cfg;

struct Figures {
  double p50_us = 0;
  double rps = 0;
};
std::map<std::string, Figures> g_ours;
std::map<std::string, Figures> g_rb;
std::vector<std::string> g_failures;
bool g_rb_gave_up = false;  // a redis-benchmark run timed out: the others would too

volatile std::sig_atomic_t g_child = 0;  // running redis-benchmark, killed by the watchdog

void on_watchdog(int) {
  static const char msg[] = "bench_loop: watchdog: still running after the time limit, giving up\n";
  if (g_child > 0) ::kill(static_cast<pid_t>(g_child), SIGKILL);
  [[maybe_unused]] const auto n = ::write(2, msg, sizeof msg - 1);
  ::_exit(3);
}

struct Proc {
  bool ok = false;
  std::string out;  // stdout and stderr, merged
  std::string why;  // when !ok
};

// Runs args (PATH lookup, no shell) with a deadline; a child still running then is killed.
Proc run_process(const std::vector<std::string>& args, int timeout_s) {
  Proc r;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    r.why = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    r.why = "cannot run " + args[0] + ": " + std::strerror(rc);
    return r;
  }
  g_child = pid;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  bool timed_out = false;
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      timed_out = n == 0;
      break;
    }
    const ssize_t got = ::read(fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // EOF: the child closed its output (normally: it exited)
    r.out.append(buf, static_cast<std::size_t>(got));
  }
  ::close(fds[0]);
  int status = 0;
  pid_t w = 0;
  // Output closed but the child lingers: give it until the deadline, then kill it.
  while (!timed_out && (w = ::waitpid(pid, &status, WNOHANG)) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      timed_out = true;
      break;
    }
    ::usleep(10000);
  }
  if (timed_out) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    r.why = "timed out after " + std::to_string(timeout_s) + " s (killed)";
  } else if (w < 0) {
    r.why = std::string("waitpid: ") + std::strerror(errno);
  } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    r.ok = true;
  } else if (WIFEXITED(status)) {
    r.why = "exit status " + std::to_string(WEXITSTATUS(status));
  } else {
    r.why = "killed by signal " + std::to_string(WTERMSIG(status));
  }
  g_child = 0;
  return r;
}

std::string last_line(const std::string& s) {
  std::string t = s;
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
  const auto nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

// Runs redis-benchmark --csv on the server and keeps the best row of each test; rows look like
// "TEST","rps","avg","min","p50",... Returns this run's row (one test per run). A failure is
// recorded (and printed), never fatal.
std::optional<Figures> redis_benchmark(const std::vector<std::string>& test_args,
                                       const std::string& suffix) {
  std::vector<std::string> args = {"redis-benchmark"};
  args.insert(args.end(), g_cfg.rb_target.begin(), g_cfg.rb_target.end());
  args.insert(args.end(), {"--csv", "--precision", "3"});
  args.insert(args.end(), test_args.begin(), test_args.end());
  if (g_rb_gave_up) return std::nullopt;
  const Proc p = run_process(args, g_cfg.rb_timeout_s);
  std::string cmd;
  for (const auto& a : args) cmd += (cmd.empty() ? "" : " ") + a;
  if (!p.ok) {
    g_rb_gave_up = p.why.rfind("timed out", 0) == 0;
    if (g_rb_gave_up) cmd += " (not run again)";
    g_failures.push_back(cmd + ": " + p.why + (p.out.empty() ? "" : ": " + last_line(p.out)));
    std::fprintf(stderr, "bench_loop: %s\n", g_failures.back().c_str());
    return std::nullopt;
  }
  std::istringstream in(p.out);
  std::string line;
  std::optional<Figures> row;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::string cur;
    bool q = false;
    for (char ch : line) {
      if (ch == '"') {
        q = !q;
      } else if (ch == ',' && !q) {
        f.push_back(cur);
        cur.clear();
      } else {
        cur += ch;
      }
    }
    f.push_back(cur);
    if (f.size() < 5 || f[0] == "test") continue;
    Figures& r = g_rb[f[0] + suffix];
    const double rps = std::atof(f[1].c_str());
    const double p50 = std::atof(f[4].c_str()) * 1000.0;
    if (rps <= 0) continue;
    row = Figures{p50, rps};
    r.rps = std::max(r.rps, rps);
    r.p50_us = r.p50_us == 0 ? p50 : std::min(r.p50_us, p50);
  }
  if (!row) {
    g_failures.push_back(cmd + ": no CSV result: " + last_line(p.out));
    std::fprintf(stderr, "bench_loop: %s\n", g_failures.back().c_str());
  }
  return row;
}

// One connection plus a deadline for the whole benchmark run: every wait below stops when it
// passes, so a silent server ends the run with an error instead of a hang.
struct Env {
  UvLoop loop;
  std::unique_ptr<Connection> c;
  std::unique_ptr<lockwire::loop::Timer> deadline;
  bool expired = false;
  explicit Env(int timeout_s = g_cfg.run_timeout_s) {
    deadline = loop.make_timer([this] { expired = true; });
    deadline->start(std::chrono::seconds(timeout_s));
    c = std::make_unique<Connection>(loop, g_cfg.conn);
    c->start();
    wait([&] { return c->state() != ConnectionState::connecting; });
  }
  [[nodiscard]] bool ready() const { return c->state() == ConnectionState::ready; }
  ~Env() {
    c.reset();
    deadline.reset();
    loop.run();
  }
  // False when the deadline passed first.
  bool wait(const std::function<bool()>& done) {
    while (!done() && !expired) loop.run_once(true);
    return !expired;
  }
};

bool fail(benchmark::State& st, const std::string& name, const std::string& why) {
  g_failures.push_back(name + ": " + why);
  std::fprintf(stderr, "bench_loop: %s\n", g_failures.back().c_str());
  st.SkipWithError(g_failures.back().c_str());
  return false;
}

std::string timeout_why(const char* what) {
  return std::string(what) + " within " + std::to_string(g_cfg.run_timeout_s) + " s";
}

void BM_PingRoundTrip(benchmark::State& st) {
  // Right before ours, untimed; kept as a counter so each repetition carries its pair.
  const auto rb =
      redis_benchmark({"-c", "1", "-P", "1", "-n", std::to_string(g_cfg.ping_n), "-t", "ping"}, "");
  if (rb) st.counters["rb_p50_us"] = rb->p50_us;
  // Declared before Env: a reply handler still queued when Env goes may touch them.
  bool done = false;
  std::error_code err;
  std::vector<std::uint64_t> samples;
  samples.reserve(1 << 20);
  Env env;
  if (!env.ready()) {
    fail(st, "BM_PingRoundTrip", env.expired ? timeout_why("not connected") : "cannot connect");
    return;
  }
  for (auto _ : st) {  // NOLINT(clang-analyzer-deadcode.DeadStores)
    done = false;
    const std::uint64_t t0 = uv_hrtime();
    env.c->command({"PING"}, [&](std::error_code ec, const Replies&) {
      err = ec;
      done = true;
    });
    if (!env.wait([&] { return done; })) {
      fail(st, "BM_PingRoundTrip", timeout_why("no PING reply"));
      break;
    }
    if (err) {
      fail(st, "BM_PingRoundTrip", err.message());
      break;
    }
    samples.push_back(uv_hrtime() - t0);
  }
  if (samples.empty()) return;
  std::sort(samples.begin(), samples.end());
  const double p50 = double(samples[samples.size() / 2]) / 1000.0;
  st.counters["p50_us"] = p50;
  Figures& f = g_ours["PING_MBULK"];
  f.p50_us = f.p50_us == 0 ? p50 : std::min(f.p50_us, p50);
}

// Commands per run at `depth` in flight, the same for both sides: long enough to reach the steady
// state (a quick run only checks that everything runs).
int requests(int depth) {
  return g_cfg.quick ? 2 * g_cfg.batch : depth > 16 ? 10 * g_cfg.batch : 3 * g_cfg.batch;
}

// Keeps `depth` commands in flight on one connection; each reply issues the next command.
void pipelined(benchmark::State& st, bool set) {
  const int depth = static_cast<int>(st.range(0));
  const int batch = g_cfg.batch;
  const int rb_n = requests(depth);
  const std::string d = std::to_string(depth);
  std::string suffix = "/";
  suffix += d;
  std::string name = set ? "BM_PipelinedSet" : "BM_PipelinedGet";
  name += suffix;
  // Right before ours, untimed; kept as a counter so each repetition carries its pair.
  const auto rb = redis_benchmark(
      {"-c", "1", "-P", d, "-n", std::to_string(rb_n), "-t", set ? "set" : "get"}, suffix);
  if (rb) st.counters["rb_rps"] = rb->rps;
  int sent = 0, done = 0;
  std::error_code err;
  std::function<void(std::error_code, const Replies&)> on_reply;
  Env env;
  if (!env.ready()) {
    fail(st, name, env.expired ? timeout_why("not connected") : "cannot connect");
    return;
  }
  auto issue = [&] {
    ++sent;
    if (set) {
      env.c->command({"SET", "key:__rand_int__", "xxx"}, on_reply);
    } else {
      env.c->command({"GET", "key:__rand_int__"}, on_reply);
    }
  };
  on_reply = [&](std::error_code ec, const Replies&) {
    ++done;
    if (ec) {
      err = ec;
      return;
    }
    if (!err && sent < batch) issue();
  };
  std::uint64_t total = 0, ns = 0;
  for (auto _ : st) {  // NOLINT(clang-analyzer-deadcode.DeadStores)
    sent = 0;
    done = 0;
    const std::uint64_t t0 = uv_hrtime();
    for (int i = 0; i < depth; ++i) issue();
    if (!env.wait([&] { return done >= sent && (err || sent >= batch); })) {
      fail(st, name, timeout_why("batch not answered"));
      break;
    }
    if (err) {
      fail(st, name, err.message());
      break;
    }
    ns += uv_hrtime() - t0;
    total += static_cast<std::uint64_t>(batch);
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(total));
  if (err || env.expired || ns == 0) return;
  const double rps = double(total) * 1e9 / double(ns);
  Figures& f = g_ours[(set ? "SET" : "GET") + suffix];
  f.rps = std::max(f.rps, rps);
}
void BM_PipelinedSet(benchmark::State& st) {
  pipelined(st, true);
}
void BM_PipelinedGet(benchmark::State& st) {
  pipelined(st, false);
}

void summary() {
  std::printf("\n== lockwire Connection vs redis-benchmark (same server, same run%s) ==\n",
              g_cfg.quick ? ", QUICK: figures mean nothing" : "");
  const Figures& ping = g_ours["PING_MBULK"];
  const Figures& rbp = g_rb["PING_MBULK"];
  if (ping.p50_us > 0 && rbp.p50_us > 0) {
    std::printf(
        "PING round trip p50: lockwire %.1f us, redis-benchmark -c 1 -P 1 %.1f us, "
        "ratio %.3f (target <= 1.15)\n",
        ping.p50_us, rbp.p50_us, ping.p50_us / rbp.p50_us);
  }
  for (const char* cmd : {"SET", "GET"}) {
    for (const char* depth : {"16", "128"}) {
      const std::string key = std::string(cmd) + "/" + depth;
      const Figures& o = g_ours[key];
      const Figures& r = g_rb[key];
      if (o.rps <= 0 || r.rps <= 0) continue;
      std::printf(
          "%s, %s in flight: lockwire %.0f/s, redis-benchmark -c 1 -P %s %.0f/s, "
          "ratio %.3f%s\n",
          cmd, depth, o.rps, depth, r.rps, o.rps / r.rps,
          std::string(depth) == "128" ? " (target >= 0.90)" : "");
    }
  }
}

bool env_set(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

// redis-benchmark's arguments for the server the connection uses.
bool target_args(const ConnectionOptions& o, std::vector<std::string>& out, std::string& why) {
  if (o.endpoint.tls) {
    why = "TLS URLs are not supported (redis-benchmark is compared over plain TCP or unix)";
    return false;
  }
  if (o.endpoint.kind == Endpoint::Kind::unix_socket) {
    out = {"-s", o.endpoint.path};
  } else {
    out = {"-h", o.endpoint.host, "-p", std::to_string(o.endpoint.port)};
  }
  if (!o.username.empty()) out.insert(out.end(), {"--user", o.username});
  if (!o.password.empty()) out.insert(out.end(), {"-a", o.password, "--no-auth-warning"});
  if (o.db != 0) out.insert(out.end(), {"--dbnum", std::to_string(o.db)});
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  g_cfg.quick = env_set("LOCKWIRE_BENCH_QUICK");
  if (g_cfg.quick) {
    g_cfg.ping_n = 2000;
    g_cfg.batch = 10000;
    g_cfg.reps = 1;
    g_cfg.rb_timeout_s = 30;
    g_cfg.run_timeout_s = 20;
    g_cfg.watchdog_s = 150;
  }
  std::signal(SIGALRM, on_watchdog);
  ::alarm(static_cast<unsigned>(g_cfg.watchdog_s));

  std::optional<lockwire::test::RedisServer> own;
  const char* url = std::getenv("LOCKWIRE_BENCH_URL");
  if (url != nullptr && *url != '\0') {
    std::string why;
    if (auto ec = lockwire::loop::parse_url(url, g_cfg.conn, &why)) {
      std::fprintf(stderr, "bench_loop: LOCKWIRE_BENCH_URL=%s: %s%s%s\n", url, ec.message().c_str(),
                   why.empty() ? "" : ": ", why.c_str());
      return 2;
    }
  } else {
    own.emplace();
    g_cfg.conn.endpoint.port = own->port();
  }
  g_cfg.conn.connect_timeout = 5s;
  g_cfg.conn.auto_reconnect = false;  // a dropped connection is a failure, not a pause
  {
    std::string why;
    if (!target_args(g_cfg.conn, g_cfg.rb_target, why)) {
      std::fprintf(stderr, "bench_loop: %s\n", why.c_str());
      return 2;
    }
  }
  const std::string where = own ? own->url() : std::string(url);
  std::printf("bench_loop: server %s%s\n", where.c_str(), g_cfg.quick ? " (quick mode)" : "");
  {
    // Fail fast on a server we cannot use (redis-benchmark would spin until its timeout).
    std::error_code err;
    bool done = false;
    Env env(10);
    if (env.ready()) {
      env.c->command({"PING"}, [&](std::error_code ec, const Replies&) {
        err = ec;
        done = true;
      });
      env.wait([&] { return done; });
    }
    if (!done || err) {
      std::string why = "cannot connect";
      if (err) why = err.message();
      if (env.expired) why = "no reply within 10 s";
      std::fprintf(stderr, "bench_loop: cannot use %s: %s\n", where.c_str(), why.c_str());
      return 1;
    }
  }

  // Fixed iteration counts: each call of a benchmark function is one repetition, preceded by
  // exactly one redis-benchmark run of the same number of requests.
  benchmark::RegisterBenchmark("BM_PingRoundTrip", BM_PingRoundTrip)
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime()
      ->Iterations(g_cfg.ping_n)
      ->Repetitions(g_cfg.reps);
  for (auto fn : {std::make_pair("BM_PipelinedSet", &BM_PipelinedSet),
                  std::make_pair("BM_PipelinedGet", &BM_PipelinedGet)}) {
    for (int depth : {16, 128}) {
      benchmark::RegisterBenchmark(fn.first, fn.second)
          ->Arg(depth)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime()
          ->Iterations(requests(depth) / g_cfg.batch)
          ->Repetitions(g_cfg.reps);
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  summary();
  benchmark::Shutdown();
  ::alarm(0);
  if (!g_failures.empty()) {
    std::fprintf(stderr, "bench_loop: %zu failure(s):\n", g_failures.size());
    for (const auto& f : g_failures) std::fprintf(stderr, "  %s\n", f.c_str());
    return 1;
  }
  return 0;
}
