// lockwire's parser vs hiredis' reader (Debian libhiredis-dev 0.14: reply objects, and
// redisReaderCreateWithFunctions(NULL) which only validates), measured in the same run on the
// same replies, fed in 16 KiB and in 1-byte chunks. hiredis 0.14 speaks RESP2 only, so for
// RESP3-only payloads (map, double, push) it parses the RESP2 form Redis sends a RESP2 client.
//
// After the Google Benchmark table, prints lockwire/hiredis speed ratios and lockwire's
// 1-byte/16-KiB slowdown per byte.
#include <benchmark/benchmark.h>
#include <hiredis/hiredis.h>
#include <hiredis/read.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "lockwire/resp/encoder.hpp"
#include "lockwire/resp/parser.hpp"

namespace {

using namespace lockwire::resp;

struct Payload {
  std::string name;
  std::string resp3;  // what lockwire parses
  std::string resp2;  // what hiredis parses (same reply, RESP2 form)
  std::size_t replies = 0;
};

// Repeats one reply until the stream is at least `min_bytes` long.
Payload repeated(std::string name, const std::string& r3, const std::string& r2,
                 std::size_t min_bytes = std::size_t{256} * 1024) {
  Payload p{std::move(name), {}, {}, 0};
  while (p.resp3.size() < min_bytes) {
    p.resp3 += r3;
    p.resp2 += r2;
    ++p.replies;
  }
  return p;
}

void array_of_blobs(std::string& out) {
  append_array_header(out, 100);
  for (int i = 0; i < 100; ++i) append_blob(out, "value:" + std::to_string(1000 + i));  // 10 B
}

void map_of_doubles(std::string& out, Proto proto) {
  append_map_header(out, 10, proto);
  for (int i = 0; i < 10; ++i) {
    append_blob(out, "member:" + std::to_string(i));
    append_double(out, 1.5 + i * 0.25, proto);
  }
}

void push_frame(std::string& out, Proto proto) {
  // A tracking invalidation (RESP3) / its RESP2 pub/sub form.
  if (proto == Proto::resp3) {
    append_push_header(out, 2);
    append_blob(out, "invalidate");
    append_array_header(out, 1);
    append_blob(out, "lock:{orders}");
  } else {
    append_array_header(out, 3);
    append_blob(out, "message");
    append_blob(out, "__redis__:invalidate");
    append_array_header(out, 1);
    append_blob(out, "lock:{orders}");
  }
}

std::vector<Payload> make_payloads() {
  std::vector<Payload> ps;
  ps.push_back(repeated("ok", "+OK\r\n", "+OK\r\n"));
  ps.push_back(repeated("blob3", "$3\r\nbar\r\n", "$3\r\nbar\r\n"));
  ps.push_back(repeated("int", ":12345\r\n", ":12345\r\n"));
  {
    std::string a;
    array_of_blobs(a);
    ps.push_back(repeated("array100x10", a, a));
  }
  {
    std::string m3, m2;
    map_of_doubles(m3, Proto::resp3);
    map_of_doubles(m2, Proto::resp2);
    ps.push_back(repeated("map10dbl", m3, m2));
  }
  {
    std::string b;
    append_blob(b, std::string(std::size_t{64} * 1024, 'x'));
    ps.push_back(repeated("blob64k", b, b));
  }
  {
    // 1,000 replies as a lock client sees them: OK, integers, nils, short blobs, arrays,
    // errors, doubles, maps, the odd push.
    Payload p{"pipeline1000", {}, {}, 1000};
    for (int i = 0; i < 1000; ++i) {
      for (Proto proto : {Proto::resp3, Proto::resp2}) {
        std::string& o = proto == Proto::resp3 ? p.resp3 : p.resp2;
        switch (i % 10) {
          case 0:
            append_simple(o, "OK");
            break;
          case 1:
            append_number(o, 1000 + i);
            break;
          case 2:
            append_null(o, proto);
            break;
          case 3:
            append_blob(o, "owner-" + std::to_string(i));
            break;
          case 4:
            append_simple(o, "QUEUED");
            break;
          case 5:
            append_array_header(o, 3);
            append_simple(o, "OK");
            append_number(o, i);
            append_blob(o, "token");
            break;
          case 6:
            append_error(o, "WRONGTYPE Operation against a key holding the wrong kind");
            break;
          case 7:
            append_double(o, i * 0.5, proto);
            break;
          case 8:
            append_map_header(o, 2, proto);
            append_blob(o, "server");
            append_blob(o, "redis");
            append_blob(o, "proto");
            append_number(o, 3);
            break;
          default:
            push_frame(o, proto);
            break;
        }
      }
    }
    ps.push_back(std::move(p));
  }
  {
    std::string p3, p2;
    push_frame(p3, Proto::resp3);
    push_frame(p2, Proto::resp2);
    ps.push_back(repeated("push", p3, p2));
  }
  return ps;
}

// A connection-like receive buffer: append each chunk, parse every complete frame, compact.
void run_lockwire(benchmark::State& state, const Payload& p, std::size_t chunk) {
  Parser parser;
  std::string buf;
  buf.reserve(std::size_t{256} * 1024);
  const std::string& s = p.resp3;
  for (auto _ : state) {
    (void)_;
    std::size_t frames = 0, begin = 0;
    for (std::size_t off = 0; off < s.size(); off += chunk) {
      buf.append(s.data() + off, std::min(chunk, s.size() - off));
      for (;;) {
        const ParseResult r =
            parser.parse(std::string_view(buf.data() + begin, buf.size() - begin));
        if (!r.ok()) break;
        benchmark::DoNotOptimize(parser.frame().data());
        begin += r.consumed;
        ++frames;
      }
      if (begin == buf.size()) {
        buf.clear();
        begin = 0;
      } else if (begin >= std::size_t{16} * 1024) {
        buf.erase(0, begin);
        begin = 0;
      }
    }
    if (frames != p.replies) state.SkipWithError("lockwire: wrong frame count");
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * p.replies));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * s.size()));
}

void run_hiredis(benchmark::State& state, const Payload& p, std::size_t chunk, bool objects) {
  redisReader* reader = objects ? redisReaderCreate() : redisReaderCreateWithFunctions(nullptr);
  const std::string& s = p.resp2;
  for (auto _ : state) {
    (void)_;
    std::size_t frames = 0;
    for (std::size_t off = 0; off < s.size(); off += chunk) {
      redisReaderFeed(reader, s.data() + off, std::min(chunk, s.size() - off));
      void* reply = nullptr;
      while (redisReaderGetReply(reader, &reply) == REDIS_OK && reply != nullptr) {
        benchmark::DoNotOptimize(reply);
        if (objects) freeReplyObject(reply);
        ++frames;
        reply = nullptr;
      }
    }
    if (frames != p.replies) state.SkipWithError("hiredis: wrong frame count");
  }
  redisReaderFree(reader);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * p.replies));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * s.size()));
}

// Collects per-iteration times for the ratio table.
class Collector : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, double> ns_per_iter;  // by benchmark name
  // CPU time, fastest repetition: on a shared machine, time spent descheduled or slowed by a
  // neighbour is not the parser's; the minimum is the least disturbed measurement.
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.error_occurred) continue;
      const std::string name = r.run_name.str();
      const double t = r.GetAdjustedCPUTime();
      if (r.run_type == Run::RT_Iteration) {
        auto [it, fresh] = ns_per_iter.try_emplace(name, t);
        if (!fresh && t < it->second) it->second = t;
      } else if (r.aggregate_name == "min") {
        ns_per_iter[name] = t;  // also covers --benchmark_report_aggregates_only
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
};

}  // namespace

int main(int argc, char** argv) {
  static const std::vector<Payload> payloads = make_payloads();
  const std::pair<const char*, std::size_t> chunks[] = {{"16KiB", std::size_t{16} * 1024},
                                                        {"1B", 1}};
  for (const Payload& p : payloads) {
    for (const auto& [cname, chunk] : chunks) {
      const std::string base = p.name + "/" + cname + "/";
      const std::size_t c = chunk;
      auto with_min = [](benchmark::internal::Benchmark* b) {
        b->ComputeStatistics("min", [](const std::vector<double>& v) {
          return *std::min_element(v.begin(), v.end());
        });
      };
      with_min(benchmark::RegisterBenchmark(
          (base + "lockwire").c_str(), [&p, c](benchmark::State& s) { run_lockwire(s, p, c); }));
      with_min(benchmark::RegisterBenchmark(
          (base + "hiredis").c_str(),
          [&p, c](benchmark::State& s) { run_hiredis(s, p, c, true); }));
      with_min(benchmark::RegisterBenchmark(
          (base + "hiredis_fn_null").c_str(),
          [&p, c](benchmark::State& s) { run_hiredis(s, p, c, false); }));
    }
  }
  // Defaults for a fair comparison on a busy machine (command-line flags still override):
  // repetitions interleaved at random, so load changes hit every implementation alike.
  std::vector<char*> args(argv, argv + argc);
  char reps[] = "--benchmark_repetitions=5";
  char interleave[] = "--benchmark_enable_random_interleaving=true";
  char min_time[] = "--benchmark_min_time=0.1";
  args.insert(args.begin() + 1, {reps, interleave, min_time});
  argc = static_cast<int>(args.size());
  argv = args.data();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  Collector reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  // Same-run ratios (higher is better for lockwire).
  auto t = [&](const std::string& name) {
    auto it = reporter.ns_per_iter.find(name);
    return it == reporter.ns_per_iter.end() ? 0.0 : it->second;
  };
  std::printf("\n%-14s %-6s %12s %12s %14s %14s %16s\n", "payload", "chunk", "replies/s", "MB/s",
              "x hiredis", "x hiredis-fn0", "1B/16KiB per B");
  for (const Payload& p : payloads) {
    for (const auto& [cname, chunk] : chunks) {
      (void)chunk;
      const std::string base = p.name + "/" + cname + "/";
      const double lw = t(base + "lockwire");
      const double hr = t(base + "hiredis");
      const double h0 = t(base + "hiredis_fn_null");
      if (lw <= 0) continue;
      const double per_s = 1e9 / lw;
      const double slow = t(p.name + "/1B/lockwire") / t(p.name + "/16KiB/lockwire");
      std::printf("%-14s %-6s %12.3g %12.1f %13.2fx %13.2fx %15.2fx\n", p.name.c_str(), cname,
                  per_s * static_cast<double>(p.replies),
                  per_s * static_cast<double>(p.resp3.size()) / 1e6, hr > 0 ? hr / lw : 0.0,
                  h0 > 0 ? h0 / lw : 0.0, std::string(cname) == "1B" ? slow : 1.0);
    }
  }
  return 0;
}
