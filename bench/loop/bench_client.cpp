// bench_loop_client: the connection's own CPU cost per request, without a kernel or a server.
// One Connection on an in-process loop whose stream keeps what is written and is answered at
// once with the replies of everything written ("+OK" per SET), one read per loop turn, the way a
// pipelined server answers. The requests and handlers are those of bench_loop's pipelined rows
// (each reply issues the next command through the same std::function), so that the figures
// say how much of a bench_loop round trip is the client's own work. CPU-bound and deterministic
// enough to compare two builds on a busy machine (bench_loop, against a real server, is not).
//
// Usage: bench_loop_client [google benchmark flags]
#include <benchmark/benchmark.h>

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "lockwire/loop/connection.hpp"

namespace {

using namespace lockwire::loop;

class InProcessLoop final : public Loop {
 public:
  struct Pipe final : Stream {
    StreamHandler* handler;
    std::string out;  // written and not yet "sent"
    explicit Pipe(StreamHandler* h) : handler(h) {}
    void write(std::string bytes) override { out.append(bytes); }
    void write_copy(std::string_view bytes) override { out.append(bytes); }
    std::size_t write_queue_bytes() const noexcept override { return 0; }
    void shutdown() override {}
    void close() noexcept override {}
  };
  struct NoTimer final : Timer {
    void start(Nanos, Nanos) override {}
    void stop() noexcept override {}
    bool active() const noexcept override { return false; }
  };

  MonoTime now() const noexcept override { return {}; }
  WallTime wall_now() const noexcept override { return {}; }
  std::unique_ptr<Timer> make_timer(std::function<void()>) override {
    return std::make_unique<NoTimer>();
  }
  void post(std::function<void()> fn) override { posted_.push_back(std::move(fn)); }
  std::unique_ptr<Stream> connect(const Endpoint&, StreamHandler& h, Nanos) override {
    auto p = std::make_unique<Pipe>(&h);
    pipe_ = p.get();
    return p;
  }
  std::uint64_t random() noexcept override { return 4; }

  void drain() {
    while (!posted_.empty()) {
      auto fn = std::move(posted_.front());
      posted_.pop_front();
      fn();
    }
  }
  Pipe& pipe() { return *pipe_; }

 private:
  std::deque<std::function<void()>> posted_;
  Pipe* pipe_ = nullptr;
};

// Counts the commands in `bytes` (each starts with '*' at the start of a line; arguments here
// never hold one).
std::size_t commands_in(std::string_view bytes) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] == '*' && (i == 0 || bytes[i - 1] == '\n')) ++n;
  }
  return n;
}

void BM_ClientPipelinedSet(benchmark::State& st) {
  const int depth = static_cast<int>(st.range(0));
  constexpr int kBatch = 100000;
  InProcessLoop loop;
  ConnectionOptions o;
  o.auto_reconnect = false;
  Connection c(loop, o);
  c.start();
  loop.drain();
  loop.pipe().handler->on_connected({});
  loop.drain();
  loop.pipe().out.clear();  // HELLO
  loop.pipe().handler->on_data("%2\r\n$2\r\nid\r\n:42\r\n$5\r\nproto\r\n:3\r\n");
  loop.drain();
  if (c.state() != ConnectionState::ready) {
    st.SkipWithError("not ready");
    return;
  }
  int sent = 0, done = 0;
  std::error_code err;
  std::function<void(std::error_code, const Replies&)> on_reply;
  auto issue = [&] {
    ++sent;
    c.command({"SET", "key:__rand_int__", "xxx"}, on_reply);
  };
  on_reply = [&](std::error_code ec, const Replies&) {
    ++done;
    if (ec) {
      err = ec;
      return;
    }
    if (!err && sent < kBatch) issue();
  };
  std::string oks;
  for (int i = 0; i < depth; ++i) oks += "+OK\r\n";
  std::int64_t total = 0;
  for (auto _ : st) {
    (void)_;
    sent = done = 0;
    for (int i = 0; i < depth; ++i) issue();
    while (done < sent && !err) {
      // The "server" answers everything written so far, in one read.
      const std::size_t n = commands_in(loop.pipe().out);
      loop.pipe().out.clear();
      for (std::size_t left = n; left > 0;) {
        const std::size_t k = left < static_cast<std::size_t>(depth) ? left : depth;
        loop.pipe().handler->on_data(std::string_view(oks.data(), 5 * k));
        left -= k;
      }
      loop.drain();
    }
    total += kBatch;
  }
  if (err) st.SkipWithError(err.message().c_str());
  st.SetItemsProcessed(total);
}
BENCHMARK(BM_ClientPipelinedSet)->Arg(1)->Arg(16)->Arg(128);

}  // namespace

BENCHMARK_MAIN();
