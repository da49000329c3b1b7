// bench_lock's replica-acknowledged grant rows (LOCKWIRE_BENCH_MIN_REPLICAS=N).
#include "bench_lock.hpp"

namespace lockwire::bench {

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

}  // namespace lockwire::bench
