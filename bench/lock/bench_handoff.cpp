// bench_handoff: where a contended hand-off's time goes (issue #18's "≤ 3 PING round trips").
//
//   bench_handoff [redis://127.0.0.1:6379] [hand-offs=400]
//   LOCKWIRE_BENCH_JSON=1 bench_handoff ...   (a JSON line per row too, for bench/report)
//   LOCKWIRE_BENCH_WAITERS=W bench_handoff ... (only the row with W waiters; for profiling)
//   LOCKWIRE_BENCH_PARKED=1 bench_handoff ...  (the parked hand-off instead: see below)
//
// One holder (client A) and W waiters, each its own lock::Client and connection, on one resource
// (W = 1, 8, 64). The holder holds 2 ms and releases; every hand-off is timed at five points:
//
//   t0  A calls release()
//   t1  the invalidation push reaches the winner's connection (our push handler runs after the
//       lock client's own, which may already have handed the attempt over: then t1 = t2)
//   t2  the winner's lock client hands its attempt to the connection (Metrics::on_request; the
//       bytes go out when that loop turn ends)
//   t3  the winner's lock callback runs: it holds
//   t4  A's release callback runs (the release's own round trip)
//
// and reported as segments, p50 over the hand-offs, in µs and in PING round trips (p50 of serial
// PINGs on a waiter's connection, measured between the hand-offs):
//
//   release → push      t1 - t0  the release reaches the server, is applied, the push comes back
//   push → attempt      t2 - t1  the client side of the wake: parse, queue lookup, build request
//   attempt → holds     t3 - t2  the attempt's round trip (plus parse and the grant callback)
//
// The floor is 2 round trips: release → push is one, attempt → holds another. Anything the
// waiters do besides the winner's attempt (herd attempts, queue reads) shows as "requests per
// hand-off" and as time in the first and last segments, where it queues in front of the winner.
//
// With LOCKWIRE_BENCH_PARKED=1 every client has ClientOptions::parked_handoff (issue #30,
// docs/handoff-one-rtt.md): the winner's block is parked in the server and the release runs it,
// so there is no push or attempt to time; only release → holds (t3 - t0), the release's own
// round trip and the requests, against the same mid-hold PING: one round trip after the same
// idle is the floor (mode "handoff-breakdown-parked" in the JSON; run by hand, not by run.sh).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lockwire/lock/client.hpp"
#include "lockwire/loop/uv_loop.hpp"
#include "lockwire/resp/reply.hpp"

using namespace std::chrono_literals;
namespace lock = lockwire::lock;
namespace loop = lockwire::loop;
namespace resp = lockwire::resp;

namespace {

// A waiter's view: when its connection saw the last invalidation push, and when its lock
// client last handed a request to the connection.
struct Probe final : lock::Metrics {
  loop::UvLoop* L = nullptr;
  std::vector<loop::MonoTime> request_times;  // this hand-off's requests
  std::uint64_t requests = 0;
  void on_request(std::uint32_t) noexcept override {
    request_times.push_back(L->now());
    ++requests;
  }
  // The first request handed to the connection at or after t.
  [[nodiscard]] std::optional<loop::MonoTime> first_request_from(loop::MonoTime t) const {
    for (loop::MonoTime r : request_times) {
      if (r >= t) return r;
    }
    return std::nullopt;
  }
};

struct Waiter {
  std::shared_ptr<Probe> probe;
  std::unique_ptr<lock::Client> client;
  std::optional<loop::MonoTime> first_push;
  std::uint64_t push_rank = 0;  // the value of Run::pushes_ when it arrived
};

double us(loop::Nanos d) { return std::chrono::duration<double, std::micro>(d).count(); }

double p50(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

class Run {
 public:
  Run(const loop::ConnectionOptions& conn, int waiters, bool parked)
      : conn_(conn),
        parked_(parked),
        // A resource of its own per row: a row's last grant is left to expire, not released.
        resource_("handoff-breakdown:" + std::to_string(waiters) + ":" +
                  std::to_string(std::chrono::steady_clock::now().time_since_epoch().count())) {
    for (int i = 0; i <= waiters; ++i) {
      Waiter w;
      w.probe = std::make_shared<Probe>();
      w.probe->L = &loop_;
      lock::ClientOptions co;
      co.prefix = "bench:";
      co.metrics = w.probe;
      co.parked_handoff = parked;
      w.client = std::make_unique<lock::Client>(loop_, conn_, co);
      ws_.push_back(std::move(w));
    }
    for (std::size_t i = 0; i < ws_.size(); ++i) {
      ws_[i].client->connection().add_push_handler([this, i](resp::Frame push) {
        const std::size_t k = resp::first_element(push, 0);
        if (k < push.size() && resp::equals(push[k], "invalidate")) {
          ++pushes_;
          if (!ws_[i].first_push) {
            ws_[i].first_push = loop_.now();
            ws_[i].push_rank = pushes_;
          }
        }
      });
    }
    for (auto& w : ws_) {
      w.client->start();
      ping(w.client->connection());
    }
  }

  struct Sample {
    double release_to_push, push_to_attempt, attempt_to_holds, total, release_rtt;
    double reply_to_push;  // A's release callback → the winner's push (either order)
    double requests;  // everything every contender handed to its connection in this hand-off
    double pushes;    // invalidation pushes all contenders received in this hand-off
    double ahead;     // ... of which before the winner's
  };

  // n hand-offs (after 5 not timed); a PING sample during each hold.
  void go(int n, std::vector<Sample>* out, std::vector<double>* ping_us) {
    std::vector<lock::Lease> leases(ws_.size());
    std::vector<bool> holding(ws_.size(), false);
    int holder = -1;
    auto contend = [&](std::size_t i) {
      lock::LockRequest r;
      r.resource = resource_;
      r.owner = std::to_string(i);
      r.ttl = 10s;
      r.wait = 60s;
      ws_[i].client->lock(r, [&, i](std::error_code ec, const lock::Lease& l) {
        if (ec && closing_) return;  // the waiters still waiting when the row ends
        if (ec) {
          std::fprintf(stderr, "acquire failed: %s\n", ec.message().c_str());
          std::exit(1);
        }
        leases[i] = l;
        holding[i] = true;
        got_ = loop_.now();
        holder = static_cast<int>(i);
      });
    };
    for (std::size_t i = 0; i < ws_.size(); ++i) contend(i);
    spin([&] { return holder >= 0; });
    for (int k = 0; k < n + 5; ++k) {
      const auto a = static_cast<std::size_t>(holder);
      // Let the waiters' failed attempts and tracked reads settle (2 ms hold), with a PING on
      // a waiter's connection in the middle: the round trip under
      // the same conditions as the release's (a server idle for about a millisecond).
      sleep(1ms);
      if (k >= 5) ping_us->push_back(ping(ws_[(a + 1) % ws_.size()].client->connection()));
      sleep(1ms);
      std::uint64_t req0 = 0;
      for (auto& w : ws_) {
        w.first_push.reset();
        w.probe->request_times.clear();
        req0 += w.probe->requests;
      }
      const std::uint64_t push0 = pushes_;
      holder = -1;
      bool released = false;
      loop::MonoTime t4{};
      const loop::MonoTime t0 = loop_.now();
      holding[a] = false;
      ws_[a].client->release(leases[a], [&](std::error_code) {
        t4 = loop_.now();
        released = true;
      });
      spin([&] { return holder >= 0 && released; });
      const auto b = static_cast<std::size_t>(holder);
      std::uint64_t req1 = 0;
      for (auto& w : ws_) req1 += w.probe->requests;
      const Waiter& wb = ws_[b];
      // The lock client's push handler was registered first and may hand its attempt to the
      // connection before ours runs: then the push arrived at the attempt (t1 = t2).
      const std::optional<loop::MonoTime> t2 = wb.probe->first_request_from(t0);
      if (k >= 5 && parked_) {
        // No push, no attempt: the release ran the parked block.
        out->push_back(Sample{0, 0, 0, us(got_ - t0), us(t4 - t0), 0,
                              static_cast<double>(req1 - req0),
                              static_cast<double>(pushes_ - push0), 0});
      } else if (k >= 5 && wb.first_push && t2 && *t2 <= got_) {
        const loop::MonoTime t1 = std::min(*wb.first_push, *t2);
        out->push_back(Sample{us(t1 - t0), us(*t2 - t1), us(got_ - *t2), us(got_ - t0),
                              us(t4 - t0), us(t1 - t4), static_cast<double>(req1 - req0),
                              static_cast<double>(pushes_ - push0),
                              static_cast<double>(wb.push_rank - push0 - 1)});
      } else if (k >= 5) {
        if (std::getenv("BENCH_HANDOFF_DEBUG") != nullptr) {
          std::fprintf(stderr, "untimed: push %s%.1f requests %zu got %.1f\n",
                       wb.first_push ? "" : "none ",
                       wb.first_push ? us(*wb.first_push - t0) : 0.0,
                       wb.probe->request_times.size(), us(got_ - t0));
        }
        ++unexplained_;  // woken by something else than a push (a backstop): counted, not timed
      }
      // The old holder waits again; it gets its turn later.
      contend(a);
    }
    // Let go of the last holder, then wait for everybody else to end (their waits time out
    // only in 60 s, so close the clients instead).
    bool done = false;
    ws_[static_cast<std::size_t>(holder)].client->release(
        leases[static_cast<std::size_t>(holder)], [&](std::error_code) { done = true; });
    spin([&] { return done; });
    closing_ = true;
  }

  [[nodiscard]] int unexplained() const { return unexplained_; }

 private:
  void spin(const std::function<bool()>& done) {
    while (!done()) loop_.run_once(true);
  }
  void sleep(loop::Nanos d) {
    bool fired = false;
    auto t = loop_.make_timer([&] { fired = true; });
    t->start(d);
    spin([&] { return fired; });
  }
  double ping(loop::Connection& c) {
    bool ok = false;
    const loop::MonoTime t0 = loop_.now();
    loop::MonoTime t1{};
    c.command({"PING"}, [&](std::error_code ec, const loop::Replies&) {
      if (ec) {
        std::fprintf(stderr, "cannot reach redis: %s\n", ec.message().c_str());
        std::exit(1);
      }
      t1 = loop_.now();
      ok = true;
    });
    spin([&] { return ok; });
    return us(t1 - t0);
  }

  loop::UvLoop loop_;
  loop::ConnectionOptions conn_;
  bool parked_ = false;
  std::string resource_;
  std::vector<Waiter> ws_;
  loop::MonoTime got_{};
  int unexplained_ = 0;
  std::uint64_t pushes_ = 0;  // invalidation pushes seen by all contenders
  bool closing_ = false;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && (std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h")) {
    std::printf("usage: bench_handoff [redis://127.0.0.1:6379] [hand-offs=400]\n");
    return 0;
  }
  loop::ConnectionOptions conn;
  const char* url = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";
  if (auto ec = loop::parse_url(url, conn)) {
    std::fprintf(stderr, "bad url %s: %s\n", url, ec.message().c_str());
    return 2;
  }
  const int n = argc > 2 ? std::max(10, std::atoi(argv[2])) : 400;
  std::printf("lockwire bench_handoff (%s, %d hand-offs per row; p50 µs, and ÷ PING p50)\n\n", url,
              n);
  std::printf("%-8s %7s %16s %16s %16s %16s %8s %8s %5s %5s %5s %7s\n", "waiters", "PING",
              "release->push", "push->attempt", "attempt->holds", "release->holds", "rel.RTT",
              "rep->push", "reqs", "push", "ahead", "untimed");
  std::vector<int> rows{1, 8, 64};
  if (const char* only = std::getenv("LOCKWIRE_BENCH_WAITERS")) rows = {std::max(1, std::atoi(only))};
  const char* parked_env = std::getenv("LOCKWIRE_BENCH_PARKED");
  const bool parked = parked_env != nullptr && std::string_view(parked_env) == "1";
  if (parked) {
    std::printf("parked hand-off (ClientOptions::parked_handoff): release->holds only; PING is\n"
                "the mid-hold PING, after the same idle as the release\n\n");
  }
  for (int waiters : rows) {
    Run run(conn, waiters, parked);
    std::vector<Run::Sample> s;
    std::vector<double> pings;
    run.go(n, &s, &pings);
    const double rtt = p50(pings);
    auto col = [&](double Run::Sample::*f) {
      std::vector<double> v;
      v.reserve(s.size());
      for (const auto& x : s) v.push_back(x.*f);
      return p50(v);
    };
    auto cell = [&](double v) {
      char b[32];
      std::snprintf(b, sizeof b, "%6.1f (%4.2f)", v, v / rtt);
      return std::string(b);
    };
    auto mean = [&](double Run::Sample::*f) {
      double t = 0;
      for (const auto& x : s) t += x.*f;
      return s.empty() ? 0.0 : t / static_cast<double>(s.size());
    };
    std::printf("%-8d %7.1f %16s %16s %16s %16s %8.1f %8.1f %5.2f %5.2f %5.2f %7d\n", waiters, rtt,
                cell(col(&Run::Sample::release_to_push)).c_str(),
                cell(col(&Run::Sample::push_to_attempt)).c_str(),
                cell(col(&Run::Sample::attempt_to_holds)).c_str(),
                cell(col(&Run::Sample::total)).c_str(), col(&Run::Sample::release_rtt),
                col(&Run::Sample::reply_to_push), mean(&Run::Sample::requests),
                mean(&Run::Sample::pushes), mean(&Run::Sample::ahead), run.unexplained());
    if (std::getenv("LOCKWIRE_BENCH_JSON") != nullptr) {
      std::printf(
          "{\"lib\": \"lockwire\", \"mode\": \"%s\", \"waiters\": %d, "
          "\"handoffs\": %zu, \"untimed\": %d, \"ping_p50_us\": %.3f, "
          "\"release_to_push_us\": %.3f, \"push_to_attempt_us\": %.3f, "
          "\"attempt_to_holds_us\": %.3f, \"release_to_holds_us\": %.3f, "
          "\"release_rtt_us\": %.3f, \"reply_to_push_us\": %.3f, \"requests_per_op\": %.3f, "
          "\"pushes_per_op\": %.3f, \"pushes_ahead_per_op\": %.3f}\n",
          parked ? "handoff-breakdown-parked" : "handoff-breakdown", waiters, s.size(),
          run.unexplained(), rtt, col(&Run::Sample::release_to_push),
          col(&Run::Sample::push_to_attempt), col(&Run::Sample::attempt_to_holds),
          col(&Run::Sample::total), col(&Run::Sample::release_rtt),
          col(&Run::Sample::reply_to_push), mean(&Run::Sample::requests),
          mean(&Run::Sample::pushes), mean(&Run::Sample::ahead));
    }
  }
  std::printf(
      "\nsegments (p50 us, and / PING p50): release() called -> invalidation push at the\n"
      "winner's connection -> its attempt handed to the connection -> it holds; rel.RTT:\n"
      "release() -> its callback; rep->push: that callback -> the winner's push (p50 us);\n"
      "means per hand-off: reqs = all contenders' requests, push = invalidation pushes they\n"
      "received, ahead = of those, before the winner's; untimed: hand-offs not woken by a push\n");
  return 0;
}
