// The latency fields every lock contender prints in bench/report's schema, shared by bench_lock
// (lockwire) and bench_hiredis_peers so that both compute them the same way. Header-only and
// std-only: the hiredis peer links nothing of lockwire.
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace bench_json {

// Linear interpolation between order statistics of sorted, non-empty `s` (as the Python and
// Node peers compute theirs).
inline double quantile(const std::vector<double>& s, double p) {
  const double x = p * static_cast<double>(s.size() - 1);
  const auto lo = static_cast<std::size_t>(x);
  const std::size_t hi = std::min(lo + 1, s.size() - 1);
  return s[lo] + (s[hi] - s[lo]) * (x - static_cast<double>(lo));
}

// `"latency_us": {n, mean, min, p50, p90, p99, max}, "quantiles_us": [101 points]` of samples
// that are µs once multiplied by `to_us` (1e6 for seconds, 1 for µs).
inline std::string latency_json(std::vector<double> s, double to_us) {
  if (s.empty()) return "\"latency_us\": {\"n\": 0}, \"quantiles_us\": []";
  std::sort(s.begin(), s.end());
  double sum = 0;
  for (double x : s) sum += x;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "\"latency_us\": {\"n\": %zu, \"mean\": %.3f, \"min\": %.3f, \"p50\": %.3f, "
                "\"p90\": %.3f, \"p99\": %.3f, \"max\": %.3f}, \"quantiles_us\": [",
                s.size(), sum / static_cast<double>(s.size()) * to_us, s.front() * to_us,
                quantile(s, 0.5) * to_us, quantile(s, 0.9) * to_us, quantile(s, 0.99) * to_us,
                s.back() * to_us);
  std::string out = buf;
  for (int i = 0; i <= 100; ++i) {
    std::snprintf(buf, sizeof buf, "%s%.2f", i == 0 ? "" : ", ", quantile(s, i / 100.0) * to_us);
    out += buf;
  }
  return out + "]";
}

// A serial pair's two halves (acquire called → granted, release called → replied) as
// `"acquire_us": {n, mean, p50}, "release_us": {…}, ` (each ", "-ended; an empty half is left
// out), the samples being µs once multiplied by `to_us`.
inline std::string halves_json(std::vector<double> acquire, std::vector<double> release,
                               double to_us) {
  std::string out;
  for (auto [name, v] : {std::pair{"acquire_us", &acquire}, std::pair{"release_us", &release}}) {
    if (v->empty()) continue;
    std::sort(v->begin(), v->end());
    double sum = 0;
    for (double x : *v) sum += x;
    char buf[160];
    std::snprintf(buf, sizeof buf, "\"%s\": {\"n\": %zu, \"mean\": %.3f, \"p50\": %.3f}, ", name,
                  v->size(), sum / static_cast<double>(v->size()) * to_us,
                  quantile(*v, 0.5) * to_us);
    out += buf;
  }
  return out;
}

}  // namespace bench_json
