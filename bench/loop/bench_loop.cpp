// bench_loop: one lockwire Connection on UvLoop against a private redis-server, compared in the
// same run with redis-benchmark on that server:
//   - PING round trip p50 vs `redis-benchmark -c 1 -P 1 -t ping` (PING_MBULK p50)
//   - SET / GET throughput with 16 and 128 in flight vs `redis-benchmark -c 1 -P 16|128 -t set,get`
// Each of our benchmark runs is immediately preceded (untimed) by the matching redis-benchmark
// run; every benchmark is repeated 3 times and the best result of each side is compared, which
// keeps the comparison fair on a shared, noisy machine.
// Usage: bench_loop [google benchmark flags]
#include <benchmark/benchmark.h>
#include <uv.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "lockwire/loop/connection.hpp"
#include "lockwire/loop/uv_loop.hpp"
#include "redis_server.hpp"

namespace {

using lockwire::loop::Connection;
using lockwire::loop::ConnectionOptions;
using lockwire::loop::ConnectionState;
using lockwire::loop::Replies;
using lockwire::loop::UvLoop;

lockwire::test::RedisServer* g_server = nullptr;

struct Figures {
  double p50_us = 0;
  double rps = 0;
};
std::map<std::string, Figures> g_ours;
std::map<std::string, Figures> g_rb;

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

// Parses redis-benchmark --csv rows: "TEST","rps","avg","min","p50",... keeping the best.
void redis_benchmark(const std::string& args, const std::string& suffix) {
  const std::string out = run("redis-benchmark -p " + std::to_string(g_server->port()) +
                              " --csv --precision 3 " + args + " 2>/dev/null");
  std::istringstream in(out);
  std::string line;
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
    r.rps = std::max(r.rps, rps);
    r.p50_us = r.p50_us == 0 ? p50 : std::min(r.p50_us, p50);
  }
}

struct Env {
  UvLoop loop;
  std::unique_ptr<Connection> c;
  Env() {
    ConnectionOptions o;
    o.endpoint.port = g_server->port();
    c = std::make_unique<Connection>(loop, o);
    c->start();
    while (c->state() != ConnectionState::ready) loop.run_once(true);
  }
  ~Env() {
    c.reset();
    loop.run();
  }
};

void BM_PingRoundTrip(benchmark::State& st) {
  redis_benchmark("-c 1 -P 1 -n 30000 -t ping", "");  // right before ours, untimed
  Env env;
  std::vector<std::uint64_t> samples;
  samples.reserve(1 << 20);
  for (auto _ : st) {
    bool done = false;
    const std::uint64_t t0 = uv_hrtime();
    env.c->command({"PING"}, [&](std::error_code ec, const Replies&) {
      if (ec) std::abort();
      done = true;
    });
    while (!done) env.loop.run_once(true);
    samples.push_back(uv_hrtime() - t0);
  }
  std::sort(samples.begin(), samples.end());
  const double p50 = samples.empty() ? 0 : double(samples[samples.size() / 2]) / 1000.0;
  st.counters["p50_us"] = p50;
  Figures& f = g_ours["PING_MBULK"];
  f.p50_us = f.p50_us == 0 ? p50 : std::min(f.p50_us, p50);
}
BENCHMARK(BM_PingRoundTrip)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime()
    ->MinTime(1.0)
    ->Repetitions(3);

// Keeps `depth` commands in flight on one connection; each reply issues the next command.
void pipelined(benchmark::State& st, bool set) {
  const int depth = static_cast<int>(st.range(0));
  constexpr int kBatch = 100000;
  std::string args = "-c 1 -P ";
  args += std::to_string(depth);
  args += depth > 16 ? " -n 1000000 -t " : " -n 300000 -t ";
  args += set ? "set" : "get";
  std::string suffix = "/";
  suffix += std::to_string(depth);
  redis_benchmark(args, suffix);  // right before ours, untimed
  Env env;
  std::uint64_t total = 0, ns = 0;
  for (auto _ : st) {
    int sent = 0, done = 0;
    std::function<void(std::error_code, const Replies&)> on_reply;
    auto issue = [&] {
      ++sent;
      if (set) {
        env.c->command({"SET", "key:__rand_int__", "xxx"}, on_reply);
      } else {
        env.c->command({"GET", "key:__rand_int__"}, on_reply);
      }
    };
    on_reply = [&](std::error_code ec, const Replies&) {
      if (ec) std::abort();
      ++done;
      if (sent < kBatch) issue();
    };
    const std::uint64_t t0 = uv_hrtime();
    for (int i = 0; i < depth; ++i) issue();
    while (done < kBatch) env.loop.run_once(true);
    ns += uv_hrtime() - t0;
    total += kBatch;
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(total));
  const double rps = ns == 0 ? 0 : double(total) * 1e9 / double(ns);
  Figures& f = g_ours[std::string(set ? "SET" : "GET") + "/" + std::to_string(depth)];
  f.rps = std::max(f.rps, rps);
}
void BM_PipelinedSet(benchmark::State& st) {
  pipelined(st, true);
}
void BM_PipelinedGet(benchmark::State& st) {
  pipelined(st, false);
}
BENCHMARK(BM_PipelinedSet)
    ->Arg(16)
    ->Arg(128)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Repetitions(3);
BENCHMARK(BM_PipelinedGet)
    ->Arg(16)
    ->Arg(128)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Repetitions(3);

void summary() {
  std::printf("\n== lockwire Connection vs redis-benchmark (same server, same run) ==\n");
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

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  lockwire::test::RedisServer server;
  g_server = &server;
  benchmark::RunSpecifiedBenchmarks();
  summary();
  benchmark::Shutdown();
  return 0;
}
