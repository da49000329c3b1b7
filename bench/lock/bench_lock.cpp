// bench_lock: lockwire's lock against the physical floor (PING round trips), one run, one server.
//
//   bench_lock [redis://127.0.0.1:6379] [seconds-per-row=2]
//   LOCKWIRE_BENCH_MIN_REPLICAS=N bench_lock URL [seconds]   (replica-acknowledged grant rows)
//   LOCKWIRE_BENCH_CLUSTER=redis://h:p1,h:p2,h:p3 bench_lock URL [seconds]   (the cluster row)
//   LOCKWIRE_BENCH_SEMANTICS=1 bench_lock URL [seconds]   (semaphore, upgrade, lock_all rows)
//   LOCKWIRE_BENCH_ROWS=throughput [LOCKWIRE_BENCH_USERS=16,256] bench_lock URL [seconds]
//                                                   (only the 1/16/256-user rows, or those listed)
//   bench_lock --help
//
// Rows: serial uncontended acquire+release pairs (µs/pair and RTT/pair, RTT = serial PING);
// concurrent pairs/s on one connection with 1, 16 and 256 users on distinct resources (floor:
// PINGs with the same concurrency); contended hand-off (release → next waiter holds); client CPU
// per pair (getrusage). Peers (redis-py, node-redlock) are measured by bench/lock/peers/.
// With LOCKWIRE_BENCH_MIN_REPLICAS=N (N > 0; the server needs N replicas attached) it runs only
// the cost rows of lock::ClientOptions::min_replicas: serial pairs and 16 users on one
// connection, each with min_replicas = N and = 0, alternated in quarter-row chunks (with a PING
// chunk each time) so that both see the same machine; one row's time per configuration.
// With LOCKWIRE_BENCH_CLUSTER=<seed list of a Redis Cluster> it runs only the cluster row: 256
// users on distinct resources (their hash tags spread them over the cluster's slots) through
// lockwire's cluster client against the same workload on URL's single primary, alternated in
// quarter-row chunks; requests, MOVED/ASK redirects and TRYAGAIN/CLUSTERDOWN retries counted.
// With LOCKWIRE_BENCH_SEMANTICS=1 it runs only the lock-semantics rows of issue #20, alternated
// in quarter-row chunks with the default lock as baseline: 16 users on one connection on one
// semaphore of 4 permits, against 16 users each on its own resource (the 16-user row) and 16
// users on one exclusive resource; serial shared acquire + upgrade + release, and lock_all of
// 1, 2, 4 resources + release of the set, against the serial exclusive pair.
// Server cost, every row: `INFO cpu commandstats` read on its own connection to each server
// (every cluster node) right before and after the row; used_cpu_user + used_cpu_sys and the
// commandstats usec deltas (connection-setup and harness commands left out) ÷ pairs.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lockwire/lock/client.hpp"
#include "lockwire/loop/uv_loop.hpp"

// g++ 12 reports a false -Wrestrict on std::string assignment at -O3 (GCC PR 105651).
#pragma GCC diagnostic ignored "-Wrestrict"

using namespace std::chrono_literals;
namespace lock = lockwire::lock;
namespace loop = lockwire::loop;

namespace {

double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// What the server(s) spent during a row (INFO cpu + commandstats deltas, summed over servers).
struct ServerCost {
  double cpu_s = 0;     // used_cpu_user + used_cpu_sys
  double cmd_usec = 0;  // commandstats usec of the lock's commands
  double calls = 0;     // commandstats calls of the lock's commands
  ServerCost& operator+=(const ServerCost& o) {
    cpu_s += o.cpu_s;
    cmd_usec += o.cmd_usec;
    calls += o.calls;
    return *this;
  }
};

// Connection-setup and harness commands, not part of a lock pair (as bench/report/collect.py).
bool setup_command(std::string_view name) {
  for (std::string_view c : {"hello", "client", "ping", "info", "select", "command", "config",
                             "flushall", "del", "auth", "readonly", "cluster", "time"}) {
    if (name == c) return true;
  }
  return false;
}

// Parses `INFO cpu commandstats` text into a snapshot (cmd_usec/calls: lock commands only).
ServerCost parse_info(std::string_view text) {
  ServerCost c;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    auto field = [&](std::string_view key) -> std::optional<double> {
      if (line.substr(0, key.size()) != key) return std::nullopt;
      return std::strtod(std::string(line.substr(key.size())).c_str(), nullptr);
    };
    if (auto v = field("used_cpu_user:")) c.cpu_s += *v;
    if (auto v = field("used_cpu_sys:")) c.cpu_s += *v;
    constexpr std::string_view kStat = "cmdstat_";
    if (line.substr(0, kStat.size()) == kStat) {
      const std::size_t colon = line.find(':');
      if (colon == std::string_view::npos) continue;
      std::string_view name = line.substr(kStat.size(), colon - kStat.size());
      // A subcommand ("client|tracking") counts as its command.
      name = name.substr(0, name.find('|'));
      if (setup_command(name)) continue;
      const std::string rest(line.substr(colon + 1));
      unsigned long long calls = 0;
      unsigned long long usec = 0;
      if (std::sscanf(rest.c_str(), "calls=%llu,usec=%llu", &calls, &usec) == 2) {
        c.calls += static_cast<double>(calls);
        c.cmd_usec += static_cast<double>(usec);
      }
    }
  }
  return c;
}

struct Result {
  double ops = 0;
  double seconds = 0;
  double cpu = 0;
  ServerCost server;
  [[nodiscard]] double srv_cpu_us_per_op() const { return server.cpu_s * 1e6 / ops; }
  [[nodiscard]] double srv_usec_per_op() const { return server.cmd_usec / ops; }
  [[nodiscard]] double srv_calls_per_op() const { return server.calls / ops; }
  [[nodiscard]] double per_sec() const { return ops / seconds; }
  [[nodiscard]] double us_per_op() const { return seconds * 1e6 / ops; }
  [[nodiscard]] double cpu_us_per_op() const { return cpu * 1e6 / ops; }
  Result& operator+=(const Result& o) {
    ops += o.ops;
    seconds += o.seconds;
    cpu += o.cpu;
    server += o.server;
    return *this;
  }
};

class Bench {
 public:
  // Server cost is read from every endpoint `conn` lists (a cluster's seeds: every node).
  Bench(loop::ConnectionOptions conn, double seconds) : conn_(std::move(conn)), row_(seconds) {
    std::vector<loop::Endpoint> eps = conn_.seeds;
    if (eps.empty()) eps.push_back(conn_.endpoint);
    for (const loop::Endpoint& e : eps) {
      loop::ConnectionOptions o = conn_;
      o.endpoint = e;
      o.seeds = {e};
      info_.push_back(std::make_unique<loop::Connection>(loop_, o));
      info_.back()->start();
      warm(*info_.back());
    }
  }

  // The servers' cumulative cost now (summed over every server).
  ServerCost server_now() {
    ServerCost sum;
    int pending = static_cast<int>(info_.size());
    for (auto& c : info_) {
      c->command({"INFO", "cpu", "commandstats"},
                 [&](std::error_code ec, const loop::Replies& r) {
                   if (ec || r.size() == 0 || r[0].empty()) {
                     std::fprintf(stderr, "INFO failed: %s\n", ec.message().c_str());
                     std::exit(1);
                   }
                   sum += parse_info(r[0][0].value);
                   --pending;
                 });
    }
    spin([&] { return pending == 0; });
    return sum;
  }

  // `users` concurrent PING loops on one connection; `samples` (seconds per PING) when given.
  Result ping(int users, std::vector<double>* samples = nullptr) {
    loop::Connection c(loop_, conn_);
    c.start();
    warm(c);
    std::vector<loop::MonoTime> t0(static_cast<std::size_t>(users));
    return run_users(users, [&](int u, const std::function<void()>& done) {
      if (samples != nullptr) t0[u] = loop_.now();
      c.command({"PING"}, [&, u, done](std::error_code, const loop::Replies&) {
        if (samples != nullptr) samples->push_back(seconds_since(t0[u]));
        done();
      });
    });
  }

  // What a client wrote (its metrics hook) and how many grants were withdrawn as not replicated.
  struct Sent {
    std::uint64_t requests = 0, commands = 0, not_replicated = 0, redirects = 0,
                  cluster_retries = 0;
    // Acquire attempts that found the resource held (Metrics::on_contended), acquires that had
    // to wait for a wake-up (on_wait).
    std::uint64_t contended = 0, waits = 0;
  };

  // `users` concurrent acquire+release loops, each on its own resource, one client with
  // `min_replicas`. Optional: what the client sent (adds to *sent), per-pair times (seconds).
  // A grant withdrawn as not_replicated is retried (its time counts in the pair's); more than
  // kMaxNotReplicated of them in one row mean the replica is not acknowledging: exit 1.
  Result pairs(int users, int min_replicas = 0, Sent* sent = nullptr,
               std::vector<double>* samples = nullptr) {
    constexpr std::uint64_t kMaxNotReplicated = 20;
    auto m = std::make_shared<lock::CountingMetrics>();
    lock::ClientOptions co;
    co.prefix = "bench:";
    co.metrics = m;
    co.min_replicas = min_replicas;
    lock::Client cl(loop_, conn_, co);
    cl.start();
    warm(cl.connection());
    std::vector<lock::LockRequest> reqs(static_cast<std::size_t>(users));
    for (int u = 0; u < users; ++u) {
      reqs[u].resource = std::to_string(u);
      reqs[u].owner = "bench";
      reqs[u].ttl = 10s;
    }
    const auto before = m->requests.load();
    const auto before_cmds = m->commands.load();
    const auto before_redirects = m->redirects.load();
    const auto before_retries = m->cluster_retries.load();
    const auto before_contended = m->contended.load();
    const auto before_waits = m->waits.load();
    std::vector<loop::MonoTime> t0(static_cast<std::size_t>(users));
    std::uint64_t not_replicated = 0;
    std::function<void(int, const std::function<void()>&)> pair =
        [&](int u, const std::function<void()>& done) {
          cl.lock(reqs[u], [&, u, done](std::error_code ec, const lock::Lease& l) {
            if (ec == lock::Errc::not_replicated && ++not_replicated <= kMaxNotReplicated) {
              pair(u, done);
              return;
            }
            if (ec) {
              std::fprintf(stderr, "acquire failed: %s (%s)\n", ec.message().c_str(),
                           cl.last_error().c_str());
              std::exit(1);
            }
            cl.release(l, [&, u, done](std::error_code rec) {
              if (rec) {
                std::fprintf(stderr, "release failed: %s\n", rec.message().c_str());
                std::exit(1);
              }
              if (samples != nullptr) samples->push_back(seconds_since(t0[u]));
              done();
            });
          });
        };
    const ServerCost s0 = server_now();
    Result r = run_users(users, [&](int u, const std::function<void()>& done) {
      if (samples != nullptr) t0[u] = loop_.now();
      pair(u, done);
    });
    r.server = minus(server_now(), s0);
    if (sent != nullptr) {
      sent->requests += m->requests.load() - before;
      sent->commands += m->commands.load() - before_cmds;
      sent->not_replicated += not_replicated;
      sent->redirects += m->redirects.load() - before_redirects;
      sent->cluster_retries += m->cluster_retries.load() - before_retries;
      sent->contended += m->contended.load() - before_contended;
      sent->waits += m->waits.load() - before_waits;
    }
    return r;
  }

  // One cycle of a lock-semantics row: user `u` runs it on `cl` and calls `done` when it is over
  // (an operation that fails exits the process).
  using Cycle = std::function<void(lock::Client& cl, int u, const std::function<void()>& done)>;

  // `users` concurrent closed loops of `cycle`, all on one lock::Client (one connection); adds
  // to *sent what the client wrote (metrics hook) and to *samples each cycle's seconds.
  Result cycles(int users, const Cycle& cycle, Sent* sent, std::vector<double>* samples) {
    auto m = std::make_shared<lock::CountingMetrics>();
    lock::ClientOptions co;
    co.prefix = "bench:";
    co.metrics = m;
    lock::Client cl(loop_, conn_, co);
    cl.start();
    warm(cl.connection());
    const auto before = m->requests.load();
    const auto before_cmds = m->commands.load();
    const auto before_contended = m->contended.load();
    const auto before_waits = m->waits.load();
    std::vector<loop::MonoTime> t0(static_cast<std::size_t>(users));
    const ServerCost s0 = server_now();
    Result r = run_users(users, [&](int u, const std::function<void()>& done) {
      t0[u] = loop_.now();
      cycle(cl, u, [&, u, done] {
        samples->push_back(seconds_since(t0[u]));
        done();
      });
    });
    r.server = minus(server_now(), s0);
    sent->requests += m->requests.load() - before;
    sent->commands += m->commands.load() - before_cmds;
    sent->contended += m->contended.load() - before_contended;
    sent->waits += m->waits.load() - before_waits;
    return r;
  }

  [[noreturn]] static void fail_handoff(const char* what, std::error_code ec, const lock::Client& c) {
    std::fprintf(stderr, "hand-off %s failed: %s (%s)\n", what, ec.message().c_str(),
                 c.last_error().c_str());
    std::exit(1);
  }

  // One hand-off: A takes ra, B asks for rb (waiting), A releases once B's attempt lost and its
  // tracked read registered (2 ms), B holds, B releases. Returns release → B holds, in seconds.
  double one_handoff(lock::Client& a, lock::Client& b, const lock::LockRequest& ra,
                     const lock::LockRequest& rb) {
    lock::Lease la, lb;
    bool got_a = false, got_b = false;
    a.lock(ra, [&](std::error_code ec, const lock::Lease& l) {
      if (ec) fail_handoff("acquire", ec, a);
      la = l;
      got_a = true;
    });
    spin([&] { return got_a; });
    loop::MonoTime t_got{};
    b.lock(rb, [&](std::error_code ec, const lock::Lease& l) {
      if (ec) fail_handoff("wait", ec, b);
      t_got = loop_.now();
      lb = l;
      got_b = true;
    });
    bool settled = false;
    auto t = loop_.make_timer([&] { settled = true; });
    t->start(2ms);
    spin([&] { return settled; });
    const loop::MonoTime t_release = loop_.now();
    a.release(la, [](std::error_code) {});
    spin([&] { return got_b; });
    bool rel = false;
    b.release(lb, [&](std::error_code) { rel = true; });
    spin([&] { return rel; });
    return std::chrono::duration<double>(t_got - t_release).count();
  }

  // Hand-offs for row_ seconds between two clients (A holds, B waits, A releases), in fair order
  // or not: ops = hand-offs, seconds = the sum of release → B holds (us_per_op: the mean
  // hand-off); *sent counts B's requests, *samples each hand-off.
  Result handoffs(bool fair, Sent* sent, std::vector<double>* samples) {
    lock::ClientOptions co;
    co.prefix = "bench:";
    lock::Client a(loop_, conn_, co);
    auto mb = std::make_shared<lock::CountingMetrics>();
    lock::ClientOptions cob = co;
    cob.metrics = mb;
    lock::Client b(loop_, conn_, cob);
    a.start();
    b.start();
    warm(a.connection());
    warm(b.connection());
    Result r;
    const double cpu0 = cpu_seconds();
    const ServerCost s0 = server_now();
    const auto before = mb->requests.load();
    const auto before_cmds = mb->commands.load();
    const loop::MonoTime end =
        loop_.now() + std::chrono::duration_cast<loop::Nanos>(std::chrono::duration<double>(row_));
    while (loop_.now() < end) {
      lock::LockRequest ra;
      ra.resource = fair ? "handoff-fair" : "handoff-default";
      ra.owner = "a";
      ra.ttl = 10s;
      ra.fair = fair;
      lock::LockRequest rb = ra;
      rb.owner = "b";
      rb.wait = 10s;
      const double d = one_handoff(a, b, ra, rb);
      r.ops += 1;
      r.seconds += d;
      samples->push_back(d);
    }
    r.cpu = cpu_seconds() - cpu0;
    r.server = minus(server_now(), s0);
    sent->requests += mb->requests.load() - before;
    sent->commands += mb->commands.load() - before_cmds;
    return r;
  }

  // Two clients: A holds, B waits; the time from A's release being sent until B holds.
  Result handoff(int rounds) {
    lock::ClientOptions co;
    co.prefix = "bench:";
    lock::Client a(loop_, conn_, co);
    auto mb = std::make_shared<lock::CountingMetrics>();
    lock::ClientOptions cob = co;
    cob.metrics = mb;
    lock::Client b(loop_, conn_, cob);
    a.start();
    b.start();
    warm(a.connection());
    warm(b.connection());
    double total = 0;
    std::vector<double> samples;
    const double cpu0 = cpu_seconds();
    for (int i = 0; i < rounds; ++i) {
      lock::LockRequest ra;
      ra.resource = "handoff";
      ra.owner = "a";
      ra.ttl = 10s;
      lock::LockRequest rb = ra;
      rb.owner = "b";
      rb.wait = 10s;
      const double d = one_handoff(a, b, ra, rb);
      total += d;
      samples.push_back(d);
    }
    if (std::getenv("BENCH_LOCK_DEBUG") != nullptr) {
      std::sort(samples.begin(), samples.end());
      std::fprintf(stderr, "hand-off: waiter requests per round %.2f, p50 %.1f us p90 %.1f us\n",
                   static_cast<double>(mb->requests.load()) / rounds,
                   samples[samples.size() / 2] * 1e6, samples[samples.size() * 9 / 10] * 1e6);
    }
    return Result{static_cast<double>(rounds), total, cpu_seconds() - cpu0, {}};
  }

  // waiters+1 clients (one connection each, as separate processes would have) contend for one
  // resource; each holds for `hold`, releases, and rejoins after the next grant. Latency: from a
  // holder starting its release until the next client holds. Returns the samples (seconds).
  // `sent` gets the requests and the commands in them that all clients wrote (metrics hook).
  // one_client: all contenders share one lock::Client (one connection), the way node-redlock's
  // waiters share one ioredis connection; otherwise one client each, as separate processes.
  std::vector<double> handoff_many(int waiters, int handoffs, loop::Nanos hold, double* cpu,
                                   std::pair<std::uint64_t, std::uint64_t>* sent,
                                   bool one_client = false, ServerCost* server = nullptr) {
    auto metrics = std::make_shared<lock::CountingMetrics>();
    lock::ClientOptions co;
    co.prefix = "bench:";
    co.metrics = metrics;
    std::vector<std::unique_ptr<lock::Client>> cs;
    for (int i = 0; i <= (one_client ? 0 : waiters); ++i) {
      cs.push_back(std::make_unique<lock::Client>(loop_, conn_, co));
      cs.back()->start();
      warm(cs.back()->connection());
    }
    auto client = [&](int i) -> lock::Client& { return one_client ? *cs[0] : *cs[i]; };
    std::vector<double> samples;
    std::optional<loop::MonoTime> release_started;
    std::vector<int> pending;  // released, rejoining at the next grant
    bool done = false;
    int active = waiters + 1;
    std::vector<std::unique_ptr<loop::Timer>> timers(static_cast<std::size_t>(waiters) + 1);
    std::function<void(int)> contend = [&](int i) {
      lock::LockRequest r;
      r.resource = "handoff-many";
      r.owner = std::to_string(i);
      r.ttl = 10s;
      r.wait = 60s;
      client(i).lock(r, [&, i](std::error_code ec, const lock::Lease& l) {
        if (ec) {
          std::fprintf(stderr, "hand-off acquire failed: %s\n", ec.message().c_str());
          std::exit(1);
        }
        const loop::MonoTime got = loop_.now();
        if (release_started) {
          samples.push_back(std::chrono::duration<double>(got - *release_started).count());
        }
        if (static_cast<int>(samples.size()) >= handoffs) done = true;
        for (int j : std::exchange(pending, {})) {
          if (done) {
            --active;
          } else {
            contend(j);
          }
        }
        timers[i] = loop_.make_timer([&, i, l] {
          release_started = loop_.now();
          client(i).release(l, [&, i](std::error_code) {
            if (done) {
              --active;
              return;
            }
            // Rejoin only after the next grant (no barging), as the peers do.
            pending.push_back(i);
          });
        });
        timers[i]->start(done ? loop::Nanos{0} : hold);
      });
    };
    const double cpu0 = cpu_seconds();
    const std::uint64_t req0 = metrics->requests.load(), cmd0 = metrics->commands.load();
    const ServerCost s0 = server_now();
    for (int i = 0; i <= waiters; ++i) contend(i);
    spin([&] { return done && active <= static_cast<int>(pending.size()); });
    *cpu = cpu_seconds() - cpu0;
    if (server != nullptr) *server = minus(server_now(), s0);
    *sent = {metrics->requests.load() - req0, metrics->commands.load() - cmd0};
    timers.clear();
    return samples;
  }

 private:
  static ServerCost minus(const ServerCost& a, const ServerCost& b) {
    return ServerCost{a.cpu_s - b.cpu_s, a.cmd_usec - b.cmd_usec, a.calls - b.calls};
  }
  [[nodiscard]] double seconds_since(loop::MonoTime t) const {
    return std::chrono::duration<double>(loop_.now() - t).count();
  }
  void spin(const std::function<bool()>& done) {
    while (!done()) loop_.run_once(true);
  }
  void warm(loop::Connection& c) {
    bool ok = false;
    c.command({"PING"}, [&](std::error_code ec, const loop::Replies&) {
      if (ec) {
        std::fprintf(stderr, "cannot reach redis: %s\n", ec.message().c_str());
        std::exit(1);
      }
      ok = true;
    });
    spin([&] { return ok; });
  }

  // Runs `users` closed loops of `op` for row_ seconds.
  Result run_users(int users, const std::function<void(int, const std::function<void()>&)>& op) {
    bool stop = false;
    std::uint64_t count = 0;
    int active = users;
    std::vector<std::function<void()>> next(static_cast<std::size_t>(users));
    for (int u = 0; u < users; ++u) {
      next[u] = [&, u] {
        if (stop) {
          --active;
          return;
        }
        op(u, [&, u] {
          ++count;
          next[u]();
        });
      };
    }
    auto timer = loop_.make_timer([&] { stop = true; });
    const double cpu0 = cpu_seconds();
    const loop::MonoTime t0 = loop_.now();
    timer->start(std::chrono::duration_cast<loop::Nanos>(std::chrono::duration<double>(row_)));
    for (auto& n : next) n();
    spin([&] { return active == 0; });
    const double secs = std::chrono::duration<double>(loop_.now() - t0).count();
    return Result{static_cast<double>(count), secs, cpu_seconds() - cpu0, {}};
  }

  loop::UvLoop loop_;
  loop::ConnectionOptions conn_;
  double row_;
  std::vector<std::unique_ptr<loop::Connection>> info_;  // INFO, one per server
};

// `"server_cpu_us_per_op": …, "server_cmd_usec_per_op": …, "server_calls_per_op": …, `
std::string server_json(const ServerCost& c, double ops) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "\"server_cpu_us_per_op\": %.3f, \"server_cmd_usec_per_op\": %.3f, "
                "\"server_calls_per_op\": %.3f, ",
                c.cpu_s * 1e6 / ops, c.cmd_usec / ops, c.calls / ops);
  return buf;
}

// Linear interpolation between order statistics of sorted, non-empty `s` (as bench/peers do).
double quantile(const std::vector<double>& s, double p) {
  const double x = p * static_cast<double>(s.size() - 1);
  const auto lo = static_cast<std::size_t>(x);
  const std::size_t hi = std::min(lo + 1, s.size() - 1);
  return s[lo] + (s[hi] - s[lo]) * (x - static_cast<double>(lo));
}

// `"latency_us": {...}, "quantiles_us": [101 points]` of samples in seconds (the peers' schema).
std::string latency_json(std::vector<double> s) {
  if (s.empty()) return "\"latency_us\": {\"n\": 0}, \"quantiles_us\": []";
  std::sort(s.begin(), s.end());
  double sum = 0;
  for (double x : s) sum += x;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "\"latency_us\": {\"n\": %zu, \"mean\": %.3f, \"min\": %.3f, \"p50\": %.3f, "
                "\"p90\": %.3f, \"p99\": %.3f, \"max\": %.3f}, \"quantiles_us\": [",
                s.size(), sum / static_cast<double>(s.size()) * 1e6, s.front() * 1e6,
                quantile(s, 0.5) * 1e6, quantile(s, 0.9) * 1e6, quantile(s, 0.99) * 1e6,
                s.back() * 1e6);
  std::string out = buf;
  for (int i = 0; i <= 100; ++i) {
    std::snprintf(buf, sizeof buf, "%s%.2f", i == 0 ? "" : ", ", quantile(s, i / 100.0) * 1e6);
    out += buf;
  }
  out += "]";
  return out;
}

const char* const kLib = "\"contender\": \"lockwire\", \"library\": \"lockwire lock::Client\"";

// The serial row's JSON line (the peers' schema, for bench/report). requests_per_pair: requests
// the client wrote (metrics hook, each one round trip); commands_per_pair: server commands
// inside them (a MULTI..EXEC block counts each command). `extra`: more fields, each ", "-ended.
std::string serial_json(const Result& pair, const Bench::Sent& sent, const Result& ping,
                        double rtt_p50_us, const std::vector<double>& samples,
                        const std::string& extra) {
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "{%s, \"mode\": \"serial\", \"users\": 1, %s\"ops\": %.0f, \"seconds\": %.6f, "
                "\"ops_per_sec\": %.1f, \"us_per_op\": %.3f, \"cpu_us_per_op\": %.3f, "
                "\"requests_per_pair\": %.3f, \"commands_per_pair\": %.3f, "
                "\"ping_rtt_us\": %.3f, \"ping_rtt_p50_us\": %.3f, \"ping_cpu_us\": %.3f, ",
                kLib, extra.c_str(), pair.ops, pair.seconds, pair.per_sec(), pair.us_per_op(),
                pair.cpu_us_per_op(), static_cast<double>(sent.requests) / pair.ops,
                static_cast<double>(sent.commands) / pair.ops, ping.us_per_op(), rtt_p50_us,
                ping.cpu_us_per_op());
  return buf + latency_json(samples) + "}";
}

// LOCKWIRE_BENCH_MIN_REPLICAS=n: min_replicas = n against min_replicas = 0, same server (which
// needs n replicas attached), alternated in kChunks chunks per row, the order swapped each time.
int replica_rows(const loop::ConnectionOptions& conn, const char* url, double row, int n) {
  constexpr int kChunks = 4;
  constexpr int kUsers = 16;
  Bench b(conn, row / kChunks);
  struct Config {
    int min_replicas;
    Result serial, thr;
    Bench::Sent serial_sent, thr_sent;
    std::vector<double> samples;  // serial pairs, seconds
  };
  Config cs[2] = {{0, {}, {}, {}, {}, {}}, {n, {}, {}, {}, {}, {}}};
  Result ping;
  std::vector<double> ping_s;
  for (int k = 0; k < kChunks; ++k) {
    ping += b.ping(1, &ping_s);
    for (int j = 0; j < 2; ++j) {
      Config& c = cs[(j + k) % 2];
      c.serial += b.pairs(1, c.min_replicas, &c.serial_sent, &c.samples);
    }
    for (int j = 0; j < 2; ++j) {
      Config& c = cs[(j + k + 1) % 2];
      c.thr += b.pairs(kUsers, c.min_replicas, &c.thr_sent);
    }
  }
  std::sort(ping_s.begin(), ping_s.end());
  const double rtt_us = ping.us_per_op();
  const double rtt_p50_us = ping_s.empty() ? 0 : quantile(ping_s, 0.5) * 1e6;
  std::printf(
      "lockwire bench_lock: replica-acknowledged grants (%s, %.1f s per row and "
      "configuration, %d chunks)\n\n",
      url, row, kChunks);
  const std::string with = "min_replicas=" + std::to_string(n);
  std::printf("%-44s %14s %14s %8s\n", "row", "min_replicas=0", with.c_str(), "ratio");
  auto line = [](const char* name, double a, double x) {
    std::printf("%-44s %14.2f %14.2f %7.2fx\n", name, a, x, x / a);
  };
  for (Config& c : cs) std::sort(c.samples.begin(), c.samples.end());
  auto per = [](std::uint64_t count, const Result& r) {
    return static_cast<double>(count) / r.ops;
  };
  const Config &off = cs[0], &on = cs[1];
  line("serial pair: acquire+release (us/pair)", off.serial.us_per_op(), on.serial.us_per_op());
  line("serial pair: p50 (us)", quantile(off.samples, 0.5) * 1e6, quantile(on.samples, 0.5) * 1e6);
  line("serial pair: p99 (us)", quantile(off.samples, 0.99) * 1e6,
       quantile(on.samples, 0.99) * 1e6);
  line("serial pair: round trips per pair (time/RTT)", off.serial.us_per_op() / rtt_us,
       on.serial.us_per_op() / rtt_us);
  line("serial pair: requests sent per pair", per(off.serial_sent.requests, off.serial),
       per(on.serial_sent.requests, on.serial));
  line("serial pair: commands in them per pair", per(off.serial_sent.commands, off.serial),
       per(on.serial_sent.commands, on.serial));
  line("serial pair: client CPU per pair (us)", off.serial.cpu_us_per_op(),
       on.serial.cpu_us_per_op());
  line("16 users, one connection (pairs/s)", off.thr.per_sec(), on.thr.per_sec());
  line("16 users: client CPU per pair (us)", off.thr.cpu_us_per_op(), on.thr.cpu_us_per_op());
  line("16 users: requests sent per pair", per(off.thr_sent.requests, off.thr),
       per(on.thr_sent.requests, on.thr));
  std::printf("%-44s %14.0f %14.0f\n", "grants withdrawn as not replicated (retried)",
              static_cast<double>(off.serial_sent.not_replicated + off.thr_sent.not_replicated),
              static_cast<double>(on.serial_sent.not_replicated + on.thr_sent.not_replicated));
  std::printf("\nratio = %s / min_replicas=0; PING RTT mean %.1f us, p50 %.1f us\n", with.c_str(),
              rtt_us, rtt_p50_us);
  if (std::getenv("LOCKWIRE_BENCH_JSON") != nullptr) {
    const auto timeout_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(lock::ClientOptions{}.replica_timeout)
            .count();
    for (const Config& c : cs) {
      char extra[128];
      std::snprintf(
          extra, sizeof extra,
          "\"min_replicas\": %d, \"replica_timeout_ms\": %lld, \"not_replicated\": %llu, ",
          c.min_replicas, static_cast<long long>(timeout_ms),
          static_cast<unsigned long long>(c.serial_sent.not_replicated));
      std::printf("%s\n",
                  serial_json(c.serial, c.serial_sent, ping, rtt_p50_us, c.samples, extra).c_str());
      std::printf(
          "{%s, \"mode\": \"throughput\", \"users\": %d, \"connections\": 1, "
          "\"min_replicas\": %d, \"ops\": %.0f, \"seconds\": %.6f, \"ops_per_sec\": %.1f, "
          "\"cpu_us_per_op\": %.3f, \"requests_per_pair\": %.3f, \"commands_per_pair\": %.3f, "
          "\"not_replicated\": %llu}\n",
          kLib, kUsers, c.min_replicas, c.thr.ops, c.thr.seconds, c.thr.per_sec(),
          c.thr.cpu_us_per_op(), per(c.thr_sent.requests, c.thr), per(c.thr_sent.commands, c.thr),
          static_cast<unsigned long long>(c.thr_sent.not_replicated));
    }
  }
  return 0;
}

// LOCKWIRE_BENCH_CLUSTER=url: 256 users through the cluster client against the same workload on
// the single primary, alternated in kChunks chunks per row (the order swapped each time).
int cluster_rows(const loop::ConnectionOptions& single, const char* single_url,
                 const loop::ConnectionOptions& cluster, const char* cluster_url, double row) {
  constexpr int kChunks = 4;
  constexpr int kUsers = 256;
  struct Target {
    const char* name;
    Bench bench;
    Result r;
    Bench::Sent sent;
  };
  Target ts[2] = {{"single", Bench(single, row / kChunks), {}, {}},
                  {"cluster", Bench(cluster, row / kChunks), {}, {}}};
  for (int k = 0; k < kChunks; ++k) {
    for (int j = 0; j < 2; ++j) {
      Target& t = ts[(j + k) % 2];
      t.r += t.bench.pairs(kUsers, 0, &t.sent);
    }
  }
  std::printf("lockwire bench_lock: cluster row (%s vs %s, %.1f s per target, %d chunks)\n\n",
              cluster_url, single_url, row, kChunks);
  std::printf("%-44s %14s %14s %8s\n", "row", "single primary", "cluster", "ratio");
  auto line = [](const char* name, double a, double x) {
    std::printf("%-44s %14.2f %14.2f %7.2fx\n", name, a, x, x / a);
  };
  auto per = [](std::uint64_t count, const Result& r) {
    return static_cast<double>(count) / r.ops;
  };
  const Target &s = ts[0], &c = ts[1];
  line("256 users (pairs/s)", s.r.per_sec(), c.r.per_sec());
  line("256 users: requests sent per pair", per(s.sent.requests, s.r), per(c.sent.requests, c.r));
  line("256 users: client CPU per pair (us)", s.r.cpu_us_per_op(), c.r.cpu_us_per_op());
  line("256 users: server CPU per pair (us, all)", s.r.srv_cpu_us_per_op(),
       c.r.srv_cpu_us_per_op());
  std::printf("%-44s %14llu %14llu\n", "MOVED/ASK redirects",
              static_cast<unsigned long long>(s.sent.redirects),
              static_cast<unsigned long long>(c.sent.redirects));
  std::printf("%-44s %14llu %14llu\n", "TRYAGAIN/CLUSTERDOWN retries",
              static_cast<unsigned long long>(s.sent.cluster_retries),
              static_cast<unsigned long long>(c.sent.cluster_retries));
  if (std::getenv("LOCKWIRE_BENCH_JSON") != nullptr) {
    for (const Target& t : ts) {
      std::printf(
          "{%s, \"mode\": \"cluster\", \"target\": \"%s\", \"users\": %d, "
          "\"servers\": %zu, %s\"ops\": %.0f, \"seconds\": %.6f, \"ops_per_sec\": %.1f, "
          "\"cpu_us_per_op\": %.3f, \"requests_per_pair\": %.3f, \"commands_per_pair\": %.3f, "
          "\"redirects\": %llu, \"cluster_retries\": %llu}\n",
          kLib, t.name, kUsers,
          (&t == &ts[0] ? single : cluster).seeds.empty()
              ? std::size_t{1}
              : (&t == &ts[0] ? single : cluster).seeds.size(),
          server_json(t.r.server, t.r.ops).c_str(), t.r.ops, t.r.seconds, t.r.per_sec(),
          t.r.cpu_us_per_op(), per(t.sent.requests, t.r), per(t.sent.commands, t.r),
          static_cast<unsigned long long>(t.sent.redirects),
          static_cast<unsigned long long>(t.sent.cluster_retries));
    }
  }
  return 0;
}

// An operation of a semantics row failed: the run fails, with what the client said.
[[noreturn]] void die(const char* what, std::error_code ec, const lock::Client& cl) {
  std::fprintf(stderr, "%s failed: %s (%s)\n", what, ec.message().c_str(), cl.last_error().c_str());
  std::exit(1);
}

// LOCKWIRE_BENCH_SEMANTICS=1: the lock-semantics rows of issue #20 against the default lock in
// the same run, alternated in kChunks chunks per row (the order rotated each chunk, a serial
// PING chunk each time), one row's time per case. Throughput: 16 users on one connection —
// (a) each on its own resource, exclusive (the 16-user row's setup), (b) all on one resource,
// exclusive (one holder at a time), and all on one semaphore of kPermits permits; each user of
// (b) and of the semaphore has its own owner and waits up to 60 s. One lock::Client serves the
// waiters on one resource one attempt at a time, and the release sent from a grant's callback
// goes out before the next waiter's attempt: how often they found it held (contended) and how
// many leases were held at once are reported with them. Serial (1 user): exclusive pair, shared
// acquire + upgrade + release, lock_all of 1, 2, 4 resources + release of the set.
int semantics_rows(const loop::ConnectionOptions& conn, const char* url, double row) {
  constexpr int kChunks = 4;
  constexpr int kUsers = 16;
  constexpr int kPermits = 4;
  Bench b(conn, row / kChunks);
  // Runs a case's chunk; `max_holders`: the most leases of the one resource held at once (only
  // the one-resource cases set it: granted, release not yet confirmed).
  using Run = std::function<Result(Bench::Sent*, std::vector<double>*, int* max_holders)>;
  struct Case {
    const char* name;   // JSON "case"
    const char* label;  // text table
    bool serial;        // 1 user (µs per cycle); else kUsers users (pairs/s)
    int resources;
    const char* kind;
    int permits;
    Run run;
    Result r{};
    Bench::Sent sent{};
    std::vector<double> samples{};
    int max_holders = -1;
  };
  // kUsers users on one resource, each its own owner, waiting up to 60 s.
  auto one_resource = [&b](lock::Kind kind, int permits, const char* resource) -> Run {
    return [&b, kind, permits, resource](Bench::Sent* s, std::vector<double>* v, int* mx) {
      std::vector<lock::LockRequest> reqs(static_cast<std::size_t>(kUsers));
      for (int u = 0; u < kUsers; ++u) {
        reqs[u].resource = resource;
        reqs[u].owner = "u" + std::to_string(u);
        reqs[u].kind = kind;
        reqs[u].permits = permits;
        reqs[u].ttl = 10s;
        reqs[u].wait = 60s;
      }
      int holding = 0;
      *mx = std::max(*mx, 0);
      return b.cycles(
          kUsers,
          [&reqs, &holding, mx](lock::Client& cl, int u, const std::function<void()>& done) {
            cl.lock(reqs[u], [&, done](std::error_code ec, const lock::Lease& l) {
              if (ec) die("acquire", ec, cl);
              *mx = std::max(*mx, ++holding);
              cl.release(l, [&, done](std::error_code rec) {
                if (rec) die("release", rec, cl);
                --holding;
                done();
              });
            });
          },
          s, v);
    };
  };
  Run upgrade = [&b](Bench::Sent* s, std::vector<double>* v, int*) {
    lock::LockRequest req;
    req.resource = "upgrade";
    req.owner = "bench";
    req.kind = lock::Kind::shared;
    req.ttl = 10s;
    return b.cycles(
        1,
        [&req](lock::Client& cl, int, const std::function<void()>& done) {
          cl.lock(req, [&cl, done](std::error_code ec, const lock::Lease& shared) {
            if (ec) die("shared acquire", ec, cl);
            cl.upgrade(shared, lock::Nanos{0},
                       [&cl, done](std::error_code uec, const lock::Lease& x) {
                         if (uec) die("upgrade", uec, cl);
                         cl.release(x, [&cl, done](std::error_code rec) {
                           if (rec) die("release", rec, cl);
                           done();
                         });
                       });
          });
        },
        s, v);
  };
  auto lock_all = [&b](int n) -> Run {
    return [&b, n](Bench::Sent* s, std::vector<double>* v, int*) {
      std::vector<std::string> names;
      for (int i = 0; i < n; ++i) names.push_back("all:" + std::to_string(i));
      lock::LockRequest req;
      req.owner = "bench";
      req.ttl = 10s;
      return b.cycles(
          1,
          [&names, &req](lock::Client& cl, int, const std::function<void()>& done) {
            cl.lock_all(names, req, [&cl, done](std::error_code ec, const lock::LeaseSet& set) {
              if (ec) die("lock_all", ec, cl);
              cl.release(set, [&cl, done](std::error_code rec) {
                if (rec) die("release(set)", rec, cl);
                done();
              });
            });
          },
          s, v);
    };
  };
  Case cs[] = {
      {"exclusive-distinct", "(a) exclusive, a resource each", false, kUsers, "exclusive", 0,
       [&b](Bench::Sent* s, std::vector<double>* v, int*) { return b.pairs(kUsers, 0, s, v); }},
      {"exclusive-one-resource", "(b) exclusive, one resource", false, 1, "exclusive", 0,
       one_resource(lock::Kind::exclusive, 0, "one")},
      {"semaphore", "semaphore of 4 permits, one resource", false, 1, "shared", kPermits,
       one_resource(lock::Kind::shared, kPermits, "semaphore")},
      {"exclusive", "exclusive acquire + release", true, 1, "exclusive", 0,
       [&b](Bench::Sent* s, std::vector<double>* v, int*) { return b.pairs(1, 0, s, v); }},
      {"upgrade", "shared acquire + upgrade + release", true, 1, "shared", 0, upgrade},
      {"lock-all-1", "lock_all(1) + release(set)", true, 1, "exclusive", 0, lock_all(1)},
      {"lock-all-2", "lock_all(2) + release(set)", true, 2, "exclusive", 0, lock_all(2)},
      {"lock-all-4", "lock_all(4) + release(set)", true, 4, "exclusive", 0, lock_all(4)},
      {"handoff-default", "hand-off, default order (release->grant)", true, 1, "exclusive", 0,
       [&b](Bench::Sent* s, std::vector<double>* v, int*) { return b.handoffs(false, s, v); }},
      {"handoff-fair", "hand-off, fair order (release->grant)", true, 1, "exclusive", 0,
       [&b](Bench::Sent* s, std::vector<double>* v, int*) { return b.handoffs(true, s, v); }},
  };
  constexpr int kCases = static_cast<int>(std::size(cs));
  Result ping;
  std::vector<double> ping_s;
  for (int k = 0; k < kChunks; ++k) {
    ping += b.ping(1, &ping_s);
    for (int j = 0; j < kCases; ++j) {
      Case& c = cs[(j + k) % kCases];
      c.r += c.run(&c.sent, &c.samples, &c.max_holders);
    }
  }
  std::sort(ping_s.begin(), ping_s.end());
  const double rtt_us = ping.us_per_op();
  const double rtt_p50_us = ping_s.empty() ? 0 : quantile(ping_s, 0.5) * 1e6;
  for (Case& c : cs) std::sort(c.samples.begin(), c.samples.end());
  auto per = [](std::uint64_t count, const Result& r) {
    return static_cast<double>(count) / r.ops;
  };
  auto p50_us = [](const Case& c) {
    return c.samples.empty() ? 0 : quantile(c.samples, 0.5) * 1e6;
  };
  std::printf(
      "lockwire bench_lock: lock semantics, issue #20 (%s, %.1f s per row and case, %d "
      "chunks)\n\n",
      url, row, kChunks);
  const Case &a = cs[0], &bb = cs[1], &ex = cs[3];
  std::printf("%-38s %9s %6s %6s %8s %8s %8s %8s %8s %4s\n", "16 users, one connection", "pairs/s",
              "/(a)", "/(b)", "p50 us", "req/pair", "cmd/pair", "contnd/p", "srv us/p", "held");
  for (const Case& c : cs) {
    if (c.serial) continue;
    char held[16] = "";
    if (c.max_holders >= 0) std::snprintf(held, sizeof held, "%d", c.max_holders);
    std::printf("%-38s %9.0f %5.2fx %5.2fx %8.1f %8.2f %8.2f %8.3f %8.2f %4s\n", c.label,
                c.r.per_sec(), c.r.per_sec() / a.r.per_sec(), c.r.per_sec() / bb.r.per_sec(),
                p50_us(c), per(c.sent.requests, c.r), per(c.sent.commands, c.r),
                per(c.sent.contended, c.r), c.r.srv_cpu_us_per_op(), held);
  }
  std::printf("\n%-38s %9s %6s %8s %6s %8s %8s %8s\n", "serial, 1 user", "us/cycle", "/excl",
              "p50 us", "RTTs", "req/cyc", "cmd/cyc", "srv us/c");
  for (const Case& c : cs) {
    if (!c.serial) continue;
    std::printf("%-38s %9.1f %5.2fx %8.1f %6.2f %8.2f %8.2f %8.2f\n", c.label, c.r.us_per_op(),
                c.r.us_per_op() / ex.r.us_per_op(), p50_us(c), c.r.us_per_op() / rtt_us,
                per(c.sent.requests, c.r), per(c.sent.commands, c.r), c.r.srv_cpu_us_per_op());
  }
  std::printf(
      "\n/(a), /(b): pairs/s ratio to row (a), (b); contnd/p: acquire attempts that found the "
      "resource held, per pair; held: most leases of the one resource held at once; /excl: time "
      "per cycle ratio to the serial exclusive pair; RTTs = us/cycle / serial PING RTT (mean "
      "%.1f us, p50 %.1f us)\n",
      rtt_us, rtt_p50_us);
  if (std::getenv("LOCKWIRE_BENCH_JSON") != nullptr) {
    for (const Case& c : cs) {
      char head[512];
      std::snprintf(
          head, sizeof head,
          "{%s, \"mode\": \"semantics\", \"case\": \"%s\", \"shape\": \"%s\", \"users\": %d, "
          "\"resources\": %d, \"kind\": \"%s\", \"permits\": %d, \"connections\": 1, ",
          kLib, c.name, c.serial ? "serial" : "throughput", c.serial ? 1 : kUsers, c.resources,
          c.kind, c.permits);
      if (c.max_holders >= 0) {
        const std::size_t len = std::strlen(head);
        std::snprintf(head + len, sizeof head - len, "\"max_holders\": %d, ", c.max_holders);
      }
      char body[512];
      std::snprintf(
          body, sizeof body,
          "\"ops\": %.0f, \"seconds\": %.6f, \"ops_per_sec\": %.1f, \"us_per_op\": %.3f, "
          "\"cpu_us_per_op\": %.3f, \"requests_per_op\": %.3f, "
          "\"commands_per_op\": %.3f, \"contended_per_op\": %.4f, \"waits_per_op\": %.4f, "
          "\"ping_rtt_us\": %.3f, \"ping_rtt_p50_us\": %.3f, ",
          c.r.ops, c.r.seconds, c.r.per_sec(), c.r.us_per_op(), c.r.cpu_us_per_op(),
          per(c.sent.requests, c.r), per(c.sent.commands, c.r), per(c.sent.contended, c.r),
          per(c.sent.waits, c.r), rtt_us, rtt_p50_us);
      std::printf("%s%s%s%s}\n", head, server_json(c.r.server, c.r.ops).c_str(), body,
                  latency_json(c.samples).c_str());
    }
  }
  return 0;
}

}  // namespace

// LOCKWIRE_BENCH_ROWS=throughput: only the concurrent rows (1, 16, 256 users on one connection),
// each with what the client sent and what the server spent per pair; for profiling (perf) and
// for before/after comparisons of the lock's hot path. Same measurement as the full run's rows.
int throughput_rows(const loop::ConnectionOptions& conn, const char* url, double row) {
  Bench b(conn, row);
  std::printf("lockwire bench_lock: throughput rows (%s, %.1f s per row)\n\n", url, row);
  std::printf("%-10s %12s %12s %12s %12s %12s %10s %10s %12s\n", "users", "pairs/s",
              "floor/s", "cli_cpu_us", "srv_cpu_us", "srv_usec", "srv_calls", "requests",
              "commands");
  std::vector<int> user_counts{1, 16, 256};
  if (const char* list = std::getenv("LOCKWIRE_BENCH_USERS")) {  // e.g. "16,256"
    user_counts.clear();
    for (const char* c = list; *c != '\0';) {
      char* end = nullptr;
      const long n = std::strtol(c, &end, 10);
      if (end == c) break;
      if (n > 0) user_counts.push_back(static_cast<int>(n));
      c = *end == ',' ? end + 1 : end;
    }
  }
  for (int users : user_counts) {
    Bench::Sent sent;
    const Result p = b.pairs(users, 0, &sent);
    const Result f = b.ping(users);
    std::printf("%-10d %12.0f %12.0f %12.3f %12.3f %12.3f %10.2f %10.2f %12.2f\n", users,
                p.per_sec(), f.per_sec() / 2, p.cpu_us_per_op(), p.srv_cpu_us_per_op(),
                p.srv_usec_per_op(), p.srv_calls_per_op(),
                static_cast<double>(sent.requests) / p.ops,
                static_cast<double>(sent.commands) / p.ops);
  }
  std::printf("\nfloor = PING pairs with the same concurrency; per pair: client CPU (getrusage), "
              "server CPU (INFO cpu), commandstats usec and calls, requests and commands sent\n");
  return 0;
}

int main(int argc, char** argv) {
  loop::ConnectionOptions conn;
  if (argc > 1 && (std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h")) {
    std::printf(
        "usage: bench_lock [redis://127.0.0.1:6379] [seconds-per-row=2]\n"
        "  LOCKWIRE_BENCH_ROWS=throughput   only the 1/16/256-user rows on one connection\n"
        "  LOCKWIRE_BENCH_USERS=16,256      with ROWS=throughput: these user counts instead\n"
        "  LOCKWIRE_BENCH_MIN_REPLICAS=N    the replica-acknowledged grant rows\n"
        "  LOCKWIRE_BENCH_CLUSTER=URL       the cluster row (256 users) against URL's primary\n"
        "  LOCKWIRE_BENCH_SEMANTICS=1       the lock-semantics rows (semaphore, upgrade, lock_all,\n"
        "                                   fair and default hand-off)\n"
        "  LOCKWIRE_BENCH_JSON=1            JSON lines too (bench/report)\n");
    return 0;
  }
  const char* url = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";
  if (auto ec = loop::parse_url(url, conn)) {
    std::fprintf(stderr, "bad url %s: %s\n", url, ec.message().c_str());
    return 2;
  }
  const double row = argc > 2 ? std::atof(argv[2]) : 2.0;
  const char* min_replicas = std::getenv("LOCKWIRE_BENCH_MIN_REPLICAS");
  if (min_replicas != nullptr && std::atoi(min_replicas) > 0) {
    return replica_rows(conn, url, row, std::atoi(min_replicas));
  }
  if (const char* cluster = std::getenv("LOCKWIRE_BENCH_CLUSTER")) {
    loop::ConnectionOptions cconn;
    if (auto ec = loop::parse_url(cluster, cconn)) {
      std::fprintf(stderr, "bad cluster url %s: %s\n", cluster, ec.message().c_str());
      return 2;
    }
    return cluster_rows(conn, url, cconn, cluster, row);
  }
  if (const char* sem = std::getenv("LOCKWIRE_BENCH_SEMANTICS"); sem != nullptr && *sem != '\0') {
    return semantics_rows(conn, url, row);
  }
  if (const char* rows = std::getenv("LOCKWIRE_BENCH_ROWS");
      rows != nullptr && std::string_view(rows) == "throughput") {
    return throughput_rows(conn, url, row);
  }
  Bench b(conn, row);

  std::vector<double> ping_s, pair_s;
  ping_s.reserve(1 << 16);
  pair_s.reserve(1 << 16);
  const Result ping1 = b.ping(1, &ping_s);
  Bench::Sent sent;
  const Result pair1 = b.pairs(1, 0, &sent, &pair_s);
  std::sort(ping_s.begin(), ping_s.end());
  std::sort(pair_s.begin(), pair_s.end());
  const double rtt_us = ping1.us_per_op();
  const double rtt_p50_us = ping_s.empty() ? 0 : quantile(ping_s, 0.5) * 1e6;
  const double pair_p50_us = pair_s.empty() ? 0 : quantile(pair_s, 0.5) * 1e6;
  const double pair_p99_us = pair_s.empty() ? 0 : quantile(pair_s, 0.99) * 1e6;
  const auto reqs = static_cast<double>(sent.requests), cmds = static_cast<double>(sent.commands);
  std::printf("lockwire bench_lock (%s, %.1f s per row)\n\n", url, row);
  std::printf("%-44s %12s %12s %10s\n", "row", "value", "floor", "ratio");
  std::printf("%-44s %9.1f us %9.1f us %9.2fx\n", "serial pair: acquire+release (us/pair)",
              pair1.us_per_op(), rtt_us, pair1.us_per_op() / rtt_us);
  std::printf("%-44s %9.1f us %9.1f us %9.2fx\n", "serial pair: p50 (floor: PING p50)", pair_p50_us,
              rtt_p50_us, pair_p50_us / rtt_p50_us);
  std::printf("%-44s %9.1f us %12s %10s\n", "serial pair: p99", pair_p99_us, "", "");
  std::printf("%-44s %12.2f %12s %10s\n", "serial pair: round trips per pair (time/RTT)",
              pair1.us_per_op() / rtt_us, "2 (Lua)", "");
  std::printf("%-44s %12.2f %12s %10s\n", "serial pair: requests sent per pair", reqs / pair1.ops,
              "", "");
  std::printf("%-44s %12.2f %12s %10s\n", "serial pair: commands in them per pair",
              cmds / pair1.ops, "", "");
  std::printf("%-44s %12.2f %12.2f %10s\n", "serial pair: client CPU per pair (us)",
              pair1.cpu_us_per_op(), 2 * ping1.cpu_us_per_op(), "");
  std::printf("%-44s %12.2f %12s %10s\n", "serial pair: server CPU per pair (us)",
              pair1.srv_cpu_us_per_op(), "", "");
  std::printf("%-44s %12.2f %12s %10s\n", "serial pair: server usec (commandstats)/pair",
              pair1.srv_usec_per_op(), "", "");
  constexpr int kUsers[] = {1, 16, 256};
  std::vector<std::pair<Result, Result>> thr;
  for (int users : kUsers) {
    const Result p = b.pairs(users);
    const Result f = b.ping(users);
    thr.emplace_back(p, f);
    char name[64];
    std::snprintf(name, sizeof name, "%d users, one connection (pairs/s)", users);
    std::printf("%-44s %12.0f %9.0f /s %9.2fx\n", name, p.per_sec(), f.per_sec() / 2,
                p.per_sec() / (f.per_sec() / 2));
    std::snprintf(name, sizeof name, "%d users: client CPU per pair (us)", users);
    std::printf("%-44s %12.2f %12.2f %10s\n", name, p.cpu_us_per_op(), 2 * f.cpu_us_per_op(), "");
    std::snprintf(name, sizeof name, "%d users: server CPU per pair (us)", users);
    std::printf("%-44s %12.2f %12s %10s\n", name, p.srv_cpu_us_per_op(), "", "");
  }
  const Result h = b.handoff(200);
  std::printf("%-44s %9.1f us %9.1f us %9.2fx\n", "contended hand-off: release -> next holds",
              h.us_per_op(), rtt_us, h.us_per_op() / rtt_us);
  struct Many {
    int waiters;
    bool one_client;
    std::vector<double> s;
    double cpu;
    std::pair<std::uint64_t, std::uint64_t> sent;  // requests, commands
    ServerCost server;
  };
  std::vector<Many> many;
  for (bool one_client : {false, true}) {
    for (int waiters : {8, 64}) {
      Many m{waiters, one_client, {}, 0, {}, {}};
      m.s = b.handoff_many(waiters, row < 1 ? 20 : 100, 2ms, &m.cpu, &m.sent, one_client,
                           &m.server);
      std::sort(m.s.begin(), m.s.end());
      char name[64];
      std::snprintf(name, sizeof name, "hand-off, %d waiters%s (p50 / mean, us)", waiters,
                    one_client ? ", one client" : "");
      double mean = 0;
      for (double x : m.s) mean += x;
      mean /= static_cast<double>(m.s.size());
      std::printf("%-44s %9.1f us %9.1f us %9.2fx RTT (p50)\n", name, quantile(m.s, 0.5) * 1e6,
                  mean * 1e6, quantile(m.s, 0.5) * 1e6 / rtt_us);
      many.push_back(std::move(m));
    }
  }
  std::printf("\nfloor = PING on the same kind of connection (pairs: two PINGs per pair)\n");
  if (std::getenv("LOCKWIRE_BENCH_JSON") != nullptr) {
    // The peers' schema (bench/peers), for bench/report.
    std::printf("%s\n", serial_json(pair1, sent, ping1, rtt_p50_us, pair_s,
                                     server_json(pair1.server, pair1.ops))
                             .c_str());
    for (std::size_t k = 0; k < thr.size(); ++k) {
      const Result& p = thr[k].first;
      const Result& f = thr[k].second;
      std::printf(
          "{%s, \"mode\": \"throughput\", \"users\": %d, \"connections\": 1, %s"
          "\"ops\": %.0f, \"seconds\": %.6f, \"ops_per_sec\": %.1f, "
          "\"cpu_us_per_op\": %.3f, \"ping_floor_pairs_per_sec\": %.1f}\n",
          kLib, kUsers[k], server_json(p.server, p.ops).c_str(), p.ops, p.seconds, p.per_sec(),
          p.cpu_us_per_op(), f.per_sec() / 2);
    }
    for (const Many& m : many) {
      std::printf(
          "{%s, \"mode\": \"handoff\", \"waiters\": %d, \"ops\": %zu, "
          "\"cpu_us_per_op\": %.3f, \"requests_per_op\": %.3f, \"commands_per_op\": %.3f, "
          "\"ping_rtt_us\": %.3f, \"settings\": {\"hold_ms\": 2}, \"variant\": \"%s\", "
          "\"connections\": %d, %s%s}\n",
          kLib, m.waiters, m.s.size(), m.cpu * 1e6 / static_cast<double>(m.s.size()),
          static_cast<double>(m.sent.first) / static_cast<double>(m.s.size()),
          static_cast<double>(m.sent.second) / static_cast<double>(m.s.size()), rtt_us,
          m.one_client ? "one-client" : "default", m.one_client ? 1 : m.waiters + 1,
          server_json(m.server, static_cast<double>(m.s.size())).c_str(),
          latency_json(m.s).c_str());
    }
  }
  return 0;
}
