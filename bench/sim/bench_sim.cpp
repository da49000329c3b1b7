// Simulated commands per second through the full stack: loop::Connection on a SimLoop ->
// simulated network (latency, jitter, splits) -> simulated Redis -> back. Wall-clock speed of the
// simulator itself (how many seeds fit in a test run), not a Redis benchmark.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "lockwire/loop/connection.hpp"
#include "lockwire/resp/encoder.hpp"
#include "lockwire/sim/sim_redis.hpp"
#include "lockwire/sim/world.hpp"

namespace {

using namespace lockwire;

struct Setup {
  sim::World world{42};
  sim::Node& server = world.add_node("redis");
  sim::SimRedis redis{world, server};
  sim::Node& client = world.add_node("client");
  std::unique_ptr<loop::Connection> conn;
  Setup() {
    world.trace().set_keep_lines(false);
    loop::ConnectionOptions o;
    o.endpoint = redis.endpoint();
    conn = std::make_unique<loop::Connection>(client.loop(), o);
    conn->start();
    bool ready = false;
    conn->command({"PING"}, [&](std::error_code, const loop::Replies&) { ready = true; });
    world.run_until([&] { return ready; });
  }
};

// `batch` commands in flight at once (the connection pipelines them).
void BM_ConnectionPipelined(benchmark::State& state) {
  Setup s;
  const auto batch = static_cast<int>(state.range(0));
  std::int64_t commands = 0;
  for (auto _ : state) {
    int left = batch;
    for (int i = 0; i < batch; ++i) {
      if (i % 2 == 0) {
        s.conn->command({"SET", "key", "value"},
                        [&](std::error_code, const loop::Replies&) { --left; });
      } else {
        s.conn->command({"GET", "key"}, [&](std::error_code, const loop::Replies&) { --left; });
      }
    }
    s.world.run_until([&] { return left == 0; });
    commands += batch;
  }
  state.SetItemsProcessed(commands);
  state.counters["sim_cmds_per_s"] =
      benchmark::Counter(static_cast<double>(commands), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ConnectionPipelined)->Arg(1)->Arg(16)->Arg(256);

// Raw RESP bytes on a simulated stream (no client library), pipelined.
struct RawClient : loop::StreamHandler {
  std::size_t replies = 0;
  void on_connected(std::error_code) override {}
  void on_data(std::string_view b) override {
    for (char c : b)
      if (c == '\n') ++replies;  // every reply here is a single line (+OK / $-1 / :n)
  }
  void on_closed(std::error_code) override {}
};

void BM_RawPipelined(benchmark::State& state) {
  sim::World world{43};
  world.trace().set_keep_lines(false);
  sim::Node& server = world.add_node("redis");
  sim::SimRedis redis{world, server};
  sim::Node& client = world.add_node("client");
  RawClient rc;
  auto stream = client.loop().connect(redis.endpoint(), rc, std::chrono::seconds(1));
  const auto batch = static_cast<int>(state.range(0));
  std::string bytes;
  for (int i = 0; i < batch; ++i) resp::append_command(bytes, {"INCR", "counter"});
  std::int64_t commands = 0;
  for (auto _ : state) {
    const std::size_t want = rc.replies + static_cast<std::size_t>(batch);
    stream->write(bytes);
    world.run_until([&] { return rc.replies >= want; });
    commands += batch;
  }
  state.SetItemsProcessed(commands);
  state.counters["sim_cmds_per_s"] =
      benchmark::Counter(static_cast<double>(commands), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_RawPipelined)->Arg(1)->Arg(256);

}  // namespace

BENCHMARK_MAIN();
