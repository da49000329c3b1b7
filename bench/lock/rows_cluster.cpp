// bench_lock's cluster row (LOCKWIRE_BENCH_CLUSTER=URL).
#include "bench_lock.hpp"

namespace lockwire::bench {

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
  // The third target is the cluster client without the masters' vouch (issue #28: what the
  // default's polling of every node costs).
  Target ts[3] = {{"single", Bench(single, row / kChunks), {}, {}},
                  {"cluster", Bench(cluster, row / kChunks), {}, {}},
                  {"cluster-novouch", Bench(cluster, row / kChunks), {}, {}}};
  ts[2].bench.set_vouch(false);
  for (int k = 0; k < kChunks; ++k) {
    for (int j = 0; j < 3; ++j) {
      Target& t = ts[(j + k) % 3];
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
  const Target &s = ts[0], &c = ts[1], &n = ts[2];
  line("256 users (pairs/s)", s.r.per_sec(), c.r.per_sec());
  line("256 users, cluster without the vouch (pairs/s)", s.r.per_sec(), n.r.per_sec());
  line("cluster client CPU per pair, no vouch (us)", s.r.cpu_us_per_op(), n.r.cpu_us_per_op());
  line("cluster server CPU per pair, no vouch (us)", s.r.srv_cpu_us_per_op(),
       n.r.srv_cpu_us_per_op());
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

}  // namespace lockwire::bench
