// bench_lock: lockwire's lock against the physical floor (PING round trips), one run, one server.
//
//   bench_lock [redis://127.0.0.1:6379] [seconds-per-row=2]
//   LOCKWIRE_BENCH_MIN_REPLICAS=N bench_lock URL [seconds]   (replica-acknowledged grant rows)
//   LOCKWIRE_BENCH_CLUSTER=redis://h:p1,h:p2,h:p3 bench_lock URL [seconds]   (the cluster row)
//   LOCKWIRE_BENCH_SENTINEL=redis-sentinel://h:s1,h:s2,h:s3#name bench_lock URL [seconds]
//                   (the sentinel row)
//   LOCKWIRE_BENCH_SEMANTICS=1 bench_lock URL [seconds]   (semaphore, upgrade, lock_all rows)
//   LOCKWIRE_BENCH_ROWS=throughput [LOCKWIRE_BENCH_USERS=16,256] [LOCKWIRE_BENCH_FLOOR=0]
//                   bench_lock URL [seconds]   (only the 1/16/256-user rows, or those listed;
//                                               FLOOR=0: without their PING rows, for profiling)
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
// With LOCKWIRE_BENCH_SENTINEL=<sentinel URL naming URL's primary> it runs only the sentinel
// row (issue #28): serial pairs and 16 users on one connection through the client behind
// Sentinel with SentinelOptions::vouch on (the default), the same with it off, and directly on
// URL's primary, alternated in quarter-row chunks (order rotated each chunk).
// With LOCKWIRE_BENCH_SEMANTICS=1 it runs only the lock-semantics rows of issue #20, alternated
// in quarter-row chunks with the default lock as baseline: 16 users on one connection on one
// semaphore of 4 permits, against 16 users each on its own resource (the 16-user row) and 16
// users on one exclusive resource; serial shared acquire + upgrade + release, and lock_all of
// 1, 2, 4 resources + release of the set, against the serial exclusive pair.
// Server cost, every row: `INFO cpu commandstats` read on its own connection to each server
// (every cluster node) right before and after the row; used_cpu_user + used_cpu_sys and the
// commandstats usec deltas (connection-setup and harness commands left out) ÷ pairs.
#include "bench_lock.hpp"

namespace lockwire::bench {

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
  // LOCKWIRE_BENCH_FLOOR=0: no PING rows, so that a profile or `perf stat` of the process sees
  // only the lock's pairs (the floor column then reads 0).
  const char* floor_env = std::getenv("LOCKWIRE_BENCH_FLOOR");
  const bool floor = floor_env == nullptr || std::string_view(floor_env) != "0";
  for (int users : user_counts) {
    Bench::Sent sent;
    const Result p = b.pairs(users, 0, &sent);
    const Result f = floor ? b.ping(users) : Result{};
    std::printf("%-10d %12.0f %12.0f %12.3f %12.3f %12.3f %10.2f %10.2f %12.2f\n", users,
                p.per_sec(), floor ? f.per_sec() / 2 : 0.0, p.cpu_us_per_op(), p.srv_cpu_us_per_op(),
                p.srv_usec_per_op(), p.srv_calls_per_op(),
                static_cast<double>(sent.requests) / p.ops,
                static_cast<double>(sent.commands) / p.ops);
  }
  std::printf("\nfloor = PING pairs with the same concurrency; per pair: client CPU (getrusage), "
              "server CPU (INFO cpu), commandstats usec and calls, requests and commands sent\n");
  return 0;
}

}  // namespace lockwire::bench

using namespace lockwire::bench;  // NOLINT: main uses the harness throughout

// The hand-off rows: 8 and 64 waiters, each on a client of its own (default, then with the
// parked hand-off: ClientOptions::parked_handoff), and all in one client.
struct Many {
  int waiters;
  bool one_client;
  bool parked;
  std::vector<double> s;
  double cpu;
  std::pair<std::uint64_t, std::uint64_t> sent;  // requests, commands
  ServerCost server;
  // Serial PING p50 (µs) measured right before and right after the row, their mean: the round
  // trip the row's p50 is read in (issue #30: "hand-off p50 <= 1.5 PING round trips"), on the
  // machine as it was then, not at the run's start.
  double ping_p50_us;
  bool rejoin_at_once = false;  // LOCKWIRE_BENCH_REJOIN=at-once
};
std::vector<Many> handoff_rows(Bench& b, double row, double rtt_us) {
  std::vector<Many> many;
  const char* rejoin = std::getenv("LOCKWIRE_BENCH_REJOIN");
  const bool rejoin_at_once = rejoin != nullptr && std::string_view(rejoin) == "at-once";
  for (int config : {0, 1, 2}) {  // a client each; a client each, parked; one client
    const bool one_client = config == 2;
    const bool parked = config == 1;
    for (int waiters : {8, 64}) {
      Many m{waiters, one_client, parked, {}, 0, {}, {}, 0, rejoin_at_once};
      const double ping_before = b.ping_p50_us(row / 8);
      m.s = b.handoff_many(waiters, row < 1 ? 20 : 100, 2ms, &m.cpu, &m.sent, one_client,
                           &m.server, parked, rejoin_at_once);
      m.ping_p50_us = (ping_before + b.ping_p50_us(row / 8)) / 2;
      std::sort(m.s.begin(), m.s.end());
      char name[64];
      std::snprintf(name, sizeof name, "hand-off, %d waiters%s (p50 / mean, us)", waiters,
                    one_client ? ", one client" : parked ? ", parked" : "");
      double mean = 0;
      for (double x : m.s) mean += x;
      mean /= static_cast<double>(m.s.size());
      std::printf("%-44s %9.1f us %9.1f us %9.2fx RTT (p50)\n", name, quantile(m.s, 0.5) * 1e6,
                  mean * 1e6, quantile(m.s, 0.5) * 1e6 / rtt_us);
      std::printf("%-44s %9.1f us %12s %9.2fx\n", "  PING p50 around the row; the p50 in it",
                  m.ping_p50_us, "", quantile(m.s, 0.5) * 1e6 / m.ping_p50_us);
      std::printf("%-44s %12.2f %12.2f %10s\n", "  requests / commands per hand-off",
                  static_cast<double>(m.sent.first) / static_cast<double>(m.s.size()),
                  static_cast<double>(m.sent.second) / static_cast<double>(m.s.size()), "");
      many.push_back(std::move(m));
    }
  }
  return many;
}

// LOCKWIRE_BENCH_ROWS=handoff: only the hand-off rows, with the PING round trip they are read in.
int handoff_only(const loop::ConnectionOptions& conn, const char* url, double row) {
  Bench b(conn, row);
  const Result ping1 = b.ping(1);
  std::printf("lockwire bench_lock: hand-off rows (%s, PING %.1f us)\n\n", url,
              ping1.us_per_op());
  (void)handoff_rows(b, row, ping1.us_per_op());
  return 0;
}

int main(int argc, char** argv) {
  loop::ConnectionOptions conn;
  if (argc > 1 && (std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h")) {
    std::printf(
        "usage: bench_lock [redis://127.0.0.1:6379] [seconds-per-row=2]\n"
        "  LOCKWIRE_BENCH_ROWS=throughput   only the 1/16/256-user rows on one connection\n"
        "  LOCKWIRE_BENCH_ROWS=handoff      only the hand-off rows (default, parked, one client)\n"
        "  LOCKWIRE_BENCH_REJOIN=at-once    hand-off contenders lock again from their release's\n"
        "                                   callback (a worker loop), not after the next grant\n"
        "  LOCKWIRE_BENCH_USERS=16,256      with ROWS=throughput: these user counts instead\n"
        "  LOCKWIRE_BENCH_FLOOR=0           with ROWS=throughput: no PING rows (profiling)\n"
        "  LOCKWIRE_BENCH_MIN_REPLICAS=N    the replica-acknowledged grant rows\n"
        "  LOCKWIRE_BENCH_CLUSTER=URL       the cluster row (256 users) against URL's primary\n"
        "  LOCKWIRE_BENCH_SENTINEL=URL      the sentinel row (vouch on, off, direct); its\n"
        "                                   sentinels must monitor URL's primary\n"
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
  if (const char* sentinel = std::getenv("LOCKWIRE_BENCH_SENTINEL")) {
    loop::ConnectionOptions sconn;
    if (auto ec = loop::parse_url(sentinel, sconn); ec || !sconn.sentinel) {
      std::fprintf(stderr, "bad sentinel url %s: %s\n", loop::redact_url(sentinel).c_str(),
                   ec ? ec.message().c_str() : "not a redis-sentinel:// URL");
      return 2;
    }
    return sentinel_rows(conn, url, sconn, sentinel, row);
  }
  if (const char* sem = std::getenv("LOCKWIRE_BENCH_SEMANTICS"); sem != nullptr && *sem != '\0') {
    return semantics_rows(conn, url, row);
  }
  if (const char* rows = std::getenv("LOCKWIRE_BENCH_ROWS");
      rows != nullptr && std::string_view(rows) == "throughput") {
    return throughput_rows(conn, url, row);
  }
  if (const char* rows = std::getenv("LOCKWIRE_BENCH_ROWS");
      rows != nullptr && std::string_view(rows) == "handoff") {
    return handoff_only(conn, url, row);
  }
  Bench b(conn, row);

  std::vector<double> ping_s, pair_s;
  ping_s.reserve(1 << 16);
  pair_s.reserve(1 << 16);
  const Result ping1 = b.ping(1, &ping_s);
  Bench::Sent sent;
  Bench::Halves halves;
  const Result pair1 = b.pairs(1, 0, &sent, &pair_s, &halves);
  std::sort(ping_s.begin(), ping_s.end());
  std::sort(pair_s.begin(), pair_s.end());
  // A chunk per side of a quarter row each, 4 pairs: both sides see the same machine.
  const auto [untimed_p50_us, timed_p50_us] = b.ping_timed_wait(4, row / 4);
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
  std::sort(halves.acquire.begin(), halves.acquire.end());
  std::sort(halves.release.begin(), halves.release.end());
  std::printf("%-44s %9.1f us %9.1f us %9.2fx\n", "PING p50, a timer armed (floor: none armed)",
              timed_p50_us, untimed_p50_us, timed_p50_us / untimed_p50_us);
  for (auto [name, v] : {std::pair{"serial pair: acquire p50 (lock() -> grant)", &halves.acquire},
                         std::pair{"serial pair: release p50 (release() -> reply)", &halves.release}}) {
    const double p50 = v->empty() ? 0 : quantile(*v, 0.5) * 1e6;
    std::printf("%-44s %9.1f us %9.1f us %9.2fx\n", name, p50, rtt_p50_us, p50 / rtt_p50_us);
  }
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
  const std::vector<Many> many = handoff_rows(b, row, rtt_us);
  std::printf("\nfloor = PING on the same kind of connection (pairs: two PINGs per pair)\n");
  if (std::getenv("LOCKWIRE_BENCH_JSON") != nullptr) {
    // The peers' schema (bench/peers), for bench/report.
    std::printf("%s\n", serial_json(pair1, sent, ping1, rtt_p50_us, pair_s,
                                     server_json(pair1.server, pair1.ops) +
                                         bench_json::halves_json(halves.acquire, halves.release, 1e6) +
                                         timed_wait_json(untimed_p50_us, timed_p50_us))
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
    // The same serial and throughput rows without fencing tokens (ClientOptions::
    // fencing_tokens): the share of the gap to the unfenced Lua lock that is the token's.
    b.set_tokens(false);
    Bench::Sent usent;
    std::vector<double> upair_s;
    const Result upair = b.pairs(1, 0, &usent, &upair_s);
    std::sort(upair_s.begin(), upair_s.end());
    std::printf("%s\n", serial_json(upair, usent, ping1, rtt_p50_us, upair_s,
                                     std::string("\"variant\": \"untokened\", ") +
                                         server_json(upair.server, upair.ops))
                             .c_str());
    for (int users : kUsers) {
      const Result p = b.pairs(users);
      std::printf(
          "{%s, \"mode\": \"throughput\", \"users\": %d, \"connections\": 1, "
          "\"variant\": \"untokened\", %s\"ops\": %.0f, \"seconds\": %.6f, "
          "\"ops_per_sec\": %.1f, \"cpu_us_per_op\": %.3f}\n",
          kLib, users, server_json(p.server, p.ops).c_str(), p.ops, p.seconds, p.per_sec(),
          p.cpu_us_per_op());
    }
    b.set_tokens(true);
    for (const Many& m : many) {
      std::printf(
          "{%s, \"mode\": \"handoff\", \"waiters\": %d, \"ops\": %zu, "
          "\"cpu_us_per_op\": %.3f, \"requests_per_op\": %.3f, \"commands_per_op\": %.3f, "
          "\"ping_rtt_us\": %.3f, \"ping_around_p50_us\": %.3f, "
          "\"settings\": {\"hold_ms\": 2, \"rejoin\": \"%s\"}, \"variant\": \"%s\", "
          "\"connections\": %d, %s%s}\n",
          kLib, m.waiters, m.s.size(), m.cpu * 1e6 / static_cast<double>(m.s.size()),
          static_cast<double>(m.sent.first) / static_cast<double>(m.s.size()),
          static_cast<double>(m.sent.second) / static_cast<double>(m.s.size()), rtt_us,
          m.ping_p50_us, m.rejoin_at_once ? "at-once" : "after-next-grant",
          m.one_client ? "one-client" : (m.parked ? "parked" : "default"),
          m.one_client ? 1 : m.waiters + 1,
          server_json(m.server, static_cast<double>(m.s.size())).c_str(),
          latency_json(m.s).c_str());
    }
  }
  return 0;
}
