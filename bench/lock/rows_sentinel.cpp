// bench_lock's sentinel row (LOCKWIRE_BENCH_SENTINEL=URL).
#include "bench_lock.hpp"

namespace lockwire::bench {

// LOCKWIRE_BENCH_SENTINEL=url: the client behind Sentinel with the sentinels' vouch (the
// default), the same without it, and the direct connection to URL's primary (the one the
// sentinels monitor), serial pairs and 16 users on one connection, alternated in kChunks chunks
// per row (the order rotated each chunk). Issue #28: what the vouch's polling costs.
int sentinel_rows(const loop::ConnectionOptions& direct, const char* direct_url,
                  const loop::ConnectionOptions& sentinel, const char* sentinel_url, double row) {
  constexpr int kChunks = 4;
  constexpr int kUsers = 16;
  struct Target {
    const char* name;
    Bench bench;
    Result serial, thr;
    Bench::Sent serial_sent, thr_sent;
    std::vector<double> samples;  // serial pairs, seconds
  };
  Target ts[3] = {{"direct", Bench(direct, row / kChunks), {}, {}, {}, {}, {}},
                  {"sentinel", Bench(sentinel, row / kChunks), {}, {}, {}, {}, {}},
                  {"sentinel-novouch", Bench(sentinel, row / kChunks), {}, {}, {}, {}, {}}};
  ts[2].bench.set_vouch(false);
  for (int k = 0; k < kChunks; ++k) {
    for (int j = 0; j < 3; ++j) {
      Target& t = ts[(j + k) % 3];
      t.serial += t.bench.pairs(1, 0, &t.serial_sent, &t.samples);
    }
    for (int j = 0; j < 3; ++j) {
      Target& t = ts[(j + k + 1) % 3];
      t.thr += t.bench.pairs(kUsers, 0, &t.thr_sent);
    }
  }
  for (Target& t : ts) std::sort(t.samples.begin(), t.samples.end());
  // The URL's password stays out of the output (it is a bench user's, but a log is a log).
  const std::string shown = loop::redact_url(sentinel_url);
  std::printf(
      "lockwire bench_lock: sentinel row (%s vs %s, %.1f s per row and target, %d "
      "chunks)\n\n",
      shown.c_str(), loop::redact_url(direct_url).c_str(), row, kChunks);
  std::printf("%-44s %12s %12s %12s %8s\n", "row", "direct", "vouch on", "vouch off", "on/off");
  auto line = [](const char* name, double d, double on, double off) {
    std::printf("%-44s %12.2f %12.2f %12.2f %7.2fx\n", name, d, on, off, on / off);
  };
  auto per = [](std::uint64_t count, const Result& r) {
    return static_cast<double>(count) / r.ops;
  };
  auto p50 = [](const Target& t) {
    return t.samples.empty() ? 0.0 : quantile(t.samples, 0.5) * 1e6;
  };
  const Target &d = ts[0], &on = ts[1], &off = ts[2];
  line("serial pair: acquire+release (us/pair)", d.serial.us_per_op(), on.serial.us_per_op(),
       off.serial.us_per_op());
  line("serial pair: p50 (us)", p50(d), p50(on), p50(off));
  line("serial pair: client CPU per pair (us)", d.serial.cpu_us_per_op(), on.serial.cpu_us_per_op(),
       off.serial.cpu_us_per_op());
  line("serial pair: requests sent per pair", per(d.serial_sent.requests, d.serial),
       per(on.serial_sent.requests, on.serial), per(off.serial_sent.requests, off.serial));
  line("16 users, one connection (pairs/s)", d.thr.per_sec(), on.thr.per_sec(), off.thr.per_sec());
  line("16 users: client CPU per pair (us)", d.thr.cpu_us_per_op(), on.thr.cpu_us_per_op(),
       off.thr.cpu_us_per_op());
  line("16 users: server CPU per pair (us)", d.thr.srv_cpu_us_per_op(), on.thr.srv_cpu_us_per_op(),
       off.thr.srv_cpu_us_per_op());
  line("16 users: requests sent per pair", per(d.thr_sent.requests, d.thr),
       per(on.thr_sent.requests, on.thr), per(off.thr_sent.requests, off.thr));
  std::printf("\non/off = vouch on / vouch off; direct = URL's primary without the sentinels\n");
  if (std::getenv("LOCKWIRE_BENCH_JSON") != nullptr) {
    for (const Target& t : ts) {
      // One line per target and shape: users 1 (the serial pairs, with their latency
      // distribution) and users 16.
      for (const bool serial : {true, false}) {
        const Result& r = serial ? t.serial : t.thr;
        const Bench::Sent& s = serial ? t.serial_sent : t.thr_sent;
        std::printf(
            "{%s, \"mode\": \"sentinel\", \"target\": \"%s\", \"users\": %d, "
            "\"connections\": 1, %s\"ops\": %.0f, \"seconds\": %.6f, \"ops_per_sec\": %.1f, "
            "\"us_per_op\": %.3f, \"cpu_us_per_op\": %.3f, \"requests_per_pair\": %.3f, "
            "\"commands_per_pair\": %.3f%s%s}\n",
            kLib, t.name, serial ? 1 : kUsers, server_json(r.server, r.ops).c_str(), r.ops,
            r.seconds, r.per_sec(), r.us_per_op(), r.cpu_us_per_op(), per(s.requests, r),
            per(s.commands, r), serial ? ", " : "", serial ? latency_json(t.samples).c_str() : "");
      }
    }
  }
  return 0;
}

}  // namespace lockwire::bench
