// bench_lock's pieces shared by its rows (one file per row family: bench_lock.cpp has main, the
// default rows and the throughput-only rows; rows_replicas.cpp, rows_cluster.cpp,
// rows_sentinel.cpp and rows_semantics.cpp the others): the server-cost reader, a row's
// result, the Bench harness (pairs, PINGs, hand-offs on one loop) and the JSON lines
// bench/report reads.
#pragma once

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

#include "latency_json.hpp"
#include "lockwire/lock/client.hpp"
#include "lockwire/loop/uv_loop.hpp"

// g++ 12 reports a false -Wrestrict on std::string assignment at -O3 (GCC PR 105651).
#pragma GCC diagnostic ignored "-Wrestrict"

using namespace std::chrono_literals;
namespace lock = lockwire::lock;
namespace loop = lockwire::loop;

namespace lockwire::bench {

inline double cpu_seconds() {
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
inline bool setup_command(std::string_view name) {
  for (std::string_view c : {"hello", "client", "ping", "info", "select", "command", "config",
                             "flushall", "del", "auth", "readonly", "cluster", "time"}) {
    if (name == c) return true;
  }
  return false;
}

// Parses `INFO cpu commandstats` text into a snapshot (cmd_usec/calls: lock commands only).
inline ServerCost parse_info(std::string_view text) {
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

using bench_json::quantile;

class Bench {
 public:
  // Server cost is read from every endpoint `conn` lists (a cluster's seeds: every node), or
  // with sentinel discovery from the primary the sentinels name (their seeds are sentinels).
  Bench(loop::ConnectionOptions conn, double seconds) : conn_(std::move(conn)), row_(seconds) {
    if (conn_.sentinel) {
      loop::ConnectionOptions o = conn_;
      // Only INFO goes over it: no polling or watching that the row's client does not do.
      o.sentinel->vouch = false;
      o.sentinel->watch_every_sentinel = false;
      info_.push_back(std::make_unique<loop::Connection>(loop_, o));
      info_.back()->start();
      warm(*info_.back());
      return;
    }
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
    int pending = 0;
    server_soon(&sum, &pending);
    spin([&] { return pending == 0; });
    return sum;
  }
  // The same reading, asked now and read as the loop runs on (from inside a callback, where
  // the loop cannot be run): *sum is complete once *pending is back to 0.
  void server_soon(ServerCost* sum, int* pending) {
    *pending += static_cast<int>(info_.size());
    for (auto& c : info_) {
      c->command({"INFO", "cpu", "commandstats"},
                 [sum, pending](std::error_code ec, const loop::Replies& r) {
                   if (ec || r.size() == 0 || r[0].empty()) {
                     std::fprintf(stderr, "INFO failed: %s\n", ec.message().c_str());
                     std::exit(1);
                   }
                   *sum += parse_info(r[0][0].value);
                   --*pending;
                 });
    }
  }

  // `users` concurrent PING loops on one connection; `samples` (seconds per PING) when given.
  Result ping(int users, std::vector<double>* samples = nullptr) {
    loop::Connection c(loop_, conn_);
    c.start();
    warm(c);
    struct Pings {
      Bench* b;
      std::vector<double>* samples;
      std::vector<loop::MonoTime> t0;
      std::vector<const std::function<void()>*> done;
    } p{this, samples, std::vector<loop::MonoTime>(static_cast<std::size_t>(users)),
        std::vector<const std::function<void()>*>(static_cast<std::size_t>(users))};
    return run_users(users, [&](int u, const std::function<void()>& done) {
      const auto i = static_cast<std::size_t>(u);
      if (samples != nullptr) p.t0[i] = loop_.now();
      p.done[i] = &done;  // the same object for the whole row (run_users)
      c.command({"PING"}, [ps = &p, i](std::error_code, const loop::Replies&) {
        if (ps->samples != nullptr) ps->samples->push_back(ps->b->seconds_since(ps->t0[i]));
        (*ps->done[i])();
      });
    });
  }

  // Serial PINGs for `seconds` on a connection of their own: their p50 in µs.
  double ping_p50_us(double seconds) {
    std::vector<double> s;
    const double saved = row_;
    row_ = seconds;
    ping(1, &s);
    row_ = saved;
    std::sort(s.begin(), s.end());
    return s.empty() ? 0 : quantile(s, 0.5) * 1e6;
  }

  // Serial PING p50s (µs) on one connection, in `chunks` alternating pairs of
  // `seconds_each`: {without, with} a far-away timer armed on the loop. With one, every wait
  // of the loop is a timed epoll_wait; lockwire's own loop has one whenever a lease is held or
  // an attempt is in flight (expiry, settle, deadline timers). On an idle VM the timed wait
  // costs more per wake-up (docs/design.md, *Throughput and the serial pair*).
  std::pair<double, double> ping_timed_wait(int chunks, double seconds_each) {
    std::vector<double> plain, timed;
    const double saved = row_;
    row_ = seconds_each;
    for (int k = 0; k < chunks; ++k) {
      for (bool armed : {k % 2 == 0, k % 2 != 0}) {  // order rotated each chunk
        auto t = loop_.make_timer([] {});
        if (armed) t->start(std::chrono::seconds(600));
        ping(1, armed ? &timed : &plain);
      }
    }
    row_ = saved;
    std::sort(plain.begin(), plain.end());
    std::sort(timed.begin(), timed.end());
    return {quantile(plain, 0.5) * 1e6, quantile(timed, 0.5) * 1e6};
  }

  // What a client wrote (its metrics hook) and how many grants were withdrawn as not replicated.
  struct Sent {
    std::uint64_t requests = 0, commands = 0, not_replicated = 0, redirects = 0,
                  cluster_retries = 0;
    // Acquire attempts that found the resource held (Metrics::on_contended), acquires that had
    // to wait for a wake-up (on_wait).
    std::uint64_t contended = 0, waits = 0;
  };

  // Per-pair times split in two (seconds): lock() called → its grant, then release() called →
  // its reply. The serial row's breakdown: which half costs more than a PING.
  struct Halves {
    std::vector<double> acquire, release;
  };

  // `users` concurrent acquire+release loops, each on its own resource, one client with
  // `min_replicas`. Optional: what the client sent (adds to *sent), per-pair times (seconds),
  // and each pair's two halves.
  // A grant withdrawn as not_replicated is retried (its time counts in the pair's); more than
  // kMaxNotReplicated of them in one row mean the replica is not acknowledging: exit 1.
  // The partition vouch off (ClientOptions::cluster_vouch, SentinelOptions::vouch) for the
  // clients this bench makes from now on: what the vouch's polling costs (the cluster and
  // sentinel rows).
  void set_vouch(bool on) { vouch_ = on; }
  // ClientOptions::fencing_tokens for the clients pairs() makes from now on (the untokened
  // rows: what the fencing token costs).
  void set_tokens(bool on) { tokens_ = on; }

  Result pairs(int users, int min_replicas = 0, Sent* sent = nullptr,
               std::vector<double>* samples = nullptr, Halves* halves = nullptr) {
    constexpr std::uint64_t kMaxNotReplicated = 20;
    auto m = std::make_shared<lock::CountingMetrics>();
    lock::ClientOptions co;
    co.prefix = "bench:";
    co.metrics = m;
    co.min_replicas = min_replicas;
    co.cluster_vouch = vouch_;
    co.fencing_tokens = tokens_;
    loop::ConnectionOptions conn = conn_;
    if (conn.sentinel) conn.sentinel->vouch = vouch_;
    lock::Client cl(loop_, conn, co);
    cl.start();
    warm(cl.connection());
    std::vector<lock::LockRequest> reqs(static_cast<std::size_t>(users));
    for (int u = 0; u < users; ++u) {
      reqs[u].resource = std::to_string(u);
      reqs[u].owner = "bench";
      reqs[u].ttl = 10s;
    }
    {
      // Every target warms up the same way: a cluster client's shard Cores connect and (with
      // the masters' vouch) attempt only once the other masters vouch, a few polls after the
      // connect; a client behind Sentinel (with its vouch) once the sentinels vouch. A
      // long-running service pays that once; the row measures the steady state, so every
      // resource is locked and released once (with a wait) before the clock starts — on a
      // single primary too, so that all targets are measured alike.
      int warming = users;
      for (int u = 0; u < users; ++u) {
        lock::LockRequest w = reqs[u];
        w.wait = 10s;
        cl.lock(w, [&](std::error_code ec, const lock::Lease& l) {
          if (ec) {
            std::fprintf(stderr, "warm-up acquire failed: %s (%s)\n", ec.message().c_str(),
                         cl.last_error().c_str());
            std::exit(1);
          }
          cl.release(l, [&](std::error_code) { --warming; });
        });
      }
      spin([&] { return warming == 0; });
    }
    const auto before = m->requests.load();
    const auto before_cmds = m->commands.load();
    const auto before_redirects = m->redirects.load();
    const auto before_retries = m->cluster_retries.load();
    const auto before_contended = m->contended.load();
    const auto before_waits = m->waits.load();
    // The row's state, reached through one pointer: each callback captures it and the user's
    // index, which std::function keeps inline (run_users: no allocation of the harness's own).
    struct Pairs {
      Bench* b;
      lock::Client* cl;
      std::vector<lock::LockRequest>* reqs;
      std::vector<double>* samples;
      Halves* halves;
      std::vector<loop::MonoTime> t0, t_granted;
      std::vector<const std::function<void()>*> done;
      std::uint64_t not_replicated = 0;
      void start(std::size_t i) {
        cl->lock((*reqs)[i], [p = this, i](std::error_code ec, const lock::Lease& l) {
          p->granted(i, ec, l);
        });
      }
      void granted(std::size_t i, std::error_code ec, const lock::Lease& l) {
        if (ec == lock::Errc::not_replicated && ++not_replicated <= kMaxNotReplicated) {
          return start(i);
        }
        if (ec) {
          std::fprintf(stderr, "acquire failed: %s (%s)\n", ec.message().c_str(),
                       cl->last_error().c_str());
          std::exit(1);
        }
        if (halves != nullptr) t_granted[i] = b->loop_.now();
        cl->release(l, [p = this, i](std::error_code rec) { p->released(i, rec); });
      }
      void released(std::size_t i, std::error_code rec) {
        if (rec) {
          std::fprintf(stderr, "release failed: %s\n", rec.message().c_str());
          std::exit(1);
        }
        if (samples != nullptr) samples->push_back(b->seconds_since(t0[i]));
        if (halves != nullptr) {
          halves->acquire.push_back(std::chrono::duration<double>(t_granted[i] - t0[i]).count());
          halves->release.push_back(b->seconds_since(t_granted[i]));
        }
        (*done[i])();
      }
    };
    const auto n = static_cast<std::size_t>(users);
    Pairs p{this, &cl, &reqs, samples, halves, std::vector<loop::MonoTime>(n),
            std::vector<loop::MonoTime>(n), std::vector<const std::function<void()>*>(n), 0};
    const ServerCost s0 = server_now();
    Result r = run_users(users, [&](int u, const std::function<void()>& done) {
      const auto i = static_cast<std::size_t>(u);
      if (samples != nullptr || halves != nullptr) p.t0[i] = loop_.now();
      p.done[i] = &done;  // the same object for the whole row (run_users)
      p.start(i);
    });
    const std::uint64_t not_replicated = p.not_replicated;
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
    return two_client_handoffs(fair ? "handoff-fair" : "handoff-default", fair, 0, sent, samples);
  }

  // `rounds` hand-offs between two clients: A holds, B waits; the time from A's release being
  // sent until B holds.
  Result handoff(int rounds) {
    Sent sent;
    std::vector<double> samples;
    Result r = two_client_handoffs("handoff", false, rounds, &sent, &samples);
    if (std::getenv("BENCH_LOCK_DEBUG") != nullptr) {
      std::sort(samples.begin(), samples.end());
      std::fprintf(stderr, "hand-off: waiter requests per round %.2f, p50 %.1f us p90 %.1f us\n",
                   static_cast<double>(sent.requests) / rounds,
                   samples[samples.size() / 2] * 1e6, samples[samples.size() * 9 / 10] * 1e6);
    }
    return r;
  }

  // Hand-offs on `resource` between two clients (A holds, B waits, A releases): `rounds` of
  // them, or as many as fit in row_ seconds when rounds is 0.
  Result two_client_handoffs(const char* resource, bool fair, int rounds, Sent* sent,
                             std::vector<double>* samples) {
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
    while (rounds > 0 ? r.ops < rounds : loop_.now() < end) {
      lock::LockRequest ra;
      ra.resource = resource;
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

  // waiters+1 clients (one connection each, as separate processes would have) contend for one
  // resource; each holds for `hold`, releases, and rejoins after the next grant. Latency: from a
  // holder starting its release until the next client holds. Returns the samples (seconds).
  // `sent` gets the requests and the commands in them that all clients wrote (metrics hook).
  // What is sent and spent is counted up to the last hand-off counted, as the peers count it
  // (they abandon their waiters then): the contenders still queued are drained after it, a
  // grant each with no arrival behind it, and those grants are no hand-offs of the row.
  // one_client: all contenders share one lock::Client (one connection), the way node-redlock's
  // waiters share one ioredis connection; otherwise one client each, as separate processes.
  // rejoin_at_once: a contender locks again from its release's callback, as a worker loop
  // does, instead of after the next grant (LOCKWIRE_BENCH_REJOIN=at-once; not the peers' way,
  // so not in the summary: with pushes, a release's own client would barge in first).
  std::vector<double> handoff_many(int waiters, int handoffs, loop::Nanos hold, double* cpu,
                                   std::pair<std::uint64_t, std::uint64_t>* sent,
                                   bool one_client = false, ServerCost* server = nullptr,
                                   bool parked = false, bool rejoin_at_once = false) {
    auto metrics = std::make_shared<lock::CountingMetrics>();
    lock::ClientOptions co;
    co.prefix = "bench:";
    co.metrics = metrics;
    co.parked_handoff = parked;  // ClientOptions::parked_handoff (docs/handoff-one-rtt.md)
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
    struct Counted {
      double cpu;
      std::uint64_t requests, commands;
    } at_done{};
    ServerCost server_at_done;
    int server_pending = 0;
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
        if (release_started && !done) {  // the drain's grants are not the row's hand-offs
          samples.push_back(std::chrono::duration<double>(got - *release_started).count());
        }
        if (!done && static_cast<int>(samples.size()) >= handoffs) {
          done = true;
          at_done = {cpu_seconds(), metrics->requests.load(), metrics->commands.load()};
          if (server != nullptr) server_soon(&server_at_done, &server_pending);
        }
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
            if (rejoin_at_once) return contend(i);
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
    spin([&] {
      return done && active <= static_cast<int>(pending.size()) && server_pending == 0;
    });
    *cpu = at_done.cpu - cpu0;
    if (server != nullptr) *server = minus(server_at_done, s0);
    *sent = {at_done.requests - req0, at_done.commands - cmd0};
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

  // Runs `users` closed loops of `op` for row_ seconds. `op(u, done)` starts user u's next
  // operation; `done` is the same object for the whole row (op's callbacks may keep a pointer
  // to it instead of a copy).
  // The row ends on the clock, read as each user starts its next op, not on a timer: an armed
  // timer makes every epoll_wait of the loop a timed one, which costs a few µs per wake-up on
  // an idle VM (docs/design.md, *Throughput and the serial pair*), and the harness must not add
  // that to what it measures. Nor its own allocations: every callback here captures at most a
  // pointer and an index, which std::function keeps inline (a copied std::function, or a
  // lambda capturing more, costs a malloc and a free per op, charged to the client's CPU).
  Result run_users(int users, const std::function<void(int, const std::function<void()>&)>& op) {
    struct Users {
      Bench* b;
      const std::function<void(int, const std::function<void()>&)>* op;
      std::uint64_t count = 0;
      int active = 0;
      loop::MonoTime end{};
      std::vector<std::function<void()>> done;
      void next(int u) {
        if (b->loop_.now() >= end) {
          --active;
          return;
        }
        (*op)(u, done[static_cast<std::size_t>(u)]);
      }
    } all{this, &op, 0, users, {}, std::vector<std::function<void()>>(static_cast<std::size_t>(users))};
    for (int u = 0; u < users; ++u) {
      all.done[static_cast<std::size_t>(u)] = [a = &all, u] {
        ++a->count;
        a->next(u);
      };
    }
    const double cpu0 = cpu_seconds();
    const loop::MonoTime t0 = loop_.now();
    all.end = t0 + std::chrono::duration_cast<loop::Nanos>(std::chrono::duration<double>(row_));
    for (int u = 0; u < users; ++u) all.next(u);
    spin([&] { return all.active == 0; });
    const double secs = std::chrono::duration<double>(loop_.now() - t0).count();
    return Result{static_cast<double>(all.count), secs, cpu_seconds() - cpu0, {}};
  }

  loop::UvLoop loop_;
  loop::ConnectionOptions conn_;
  bool vouch_ = true;
  bool tokens_ = true;
  double row_;
  std::vector<std::unique_ptr<loop::Connection>> info_;  // INFO, one per server
};

// `"server_cpu_us_per_op": …, "server_cmd_usec_per_op": …, "server_calls_per_op": …, `
inline std::string server_json(const ServerCost& c, double ops) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "\"server_cpu_us_per_op\": %.3f, \"server_cmd_usec_per_op\": %.3f, "
                "\"server_calls_per_op\": %.3f, ",
                c.cpu_s * 1e6 / ops, c.cmd_usec / ops, c.calls / ops);
  return buf;
}

// `"latency_us": {...}, "quantiles_us": [101 points]` of samples in seconds (the peers' schema).
inline std::string latency_json(std::vector<double> seconds) {
  return bench_json::latency_json(std::move(seconds), 1e6);
}


// Bench::ping_timed_wait's two p50s as JSON fields, ", "-ended.
inline std::string timed_wait_json(double untimed_p50_us, double timed_p50_us) {
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "\"ping_untimed_wait_p50_us\": %.3f, \"ping_timed_wait_p50_us\": %.3f, ",
                untimed_p50_us, timed_p50_us);
  return buf;
}

const char* const kLib = "\"contender\": \"lockwire\", \"library\": \"lockwire lock::Client\"";

// The serial row's JSON line (the peers' schema, for bench/report). requests_per_pair: requests
// the client wrote (metrics hook, each one round trip); commands_per_pair: server commands
// inside them (a MULTI..EXEC block counts each command). `extra`: more fields, each ", "-ended.
inline std::string serial_json(const Result& pair, const Bench::Sent& sent, const Result& ping,
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

// The row families (each returns the process exit status).
int replica_rows(const loop::ConnectionOptions& conn, const char* url, double row, int n);
int cluster_rows(const loop::ConnectionOptions& single, const char* single_url,
                 const loop::ConnectionOptions& cluster, const char* cluster_url, double row);
int sentinel_rows(const loop::ConnectionOptions& direct, const char* direct_url,
                  const loop::ConnectionOptions& sentinel, const char* sentinel_url, double row);
int semantics_rows(const loop::ConnectionOptions& conn, const char* url, double row);
int throughput_rows(const loop::ConnectionOptions& conn, const char* url, double row);

}  // namespace lockwire::bench
