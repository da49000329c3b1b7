// bench_lock's lock-semantics rows of issue #20 (LOCKWIRE_BENCH_SEMANTICS=1).
#include "bench_lock.hpp"

namespace lockwire::bench {

namespace {
// An operation of a semantics row failed: the run fails, with what the client said.
[[noreturn]] void die(const char* what, std::error_code ec, const lock::Client& cl) {
  std::fprintf(stderr, "%s failed: %s (%s)\n", what, ec.message().c_str(), cl.last_error().c_str());
  std::exit(1);
}
}  // namespace

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

}  // namespace lockwire::bench
