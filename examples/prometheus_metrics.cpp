// An adapter from lockwire's Metrics hooks to Prometheus, with no dependency: the counters and
// histograms are kept here and rendered as the Prometheus text exposition format (version 0.0.4)
// on demand — serve PrometheusMetrics::render() at /metrics from whatever HTTP server the
// service already has (Content-Type: text/plain; version=0.0.4).
//
//   prometheus_metrics [redis://127.0.0.1:6379] [rounds]
//
// Runs a short contended workload (a few threads locking invoice:<n> and report:<n>, some as
// try-locks) through a BlockingClient that reports to a PrometheusMetrics, then prints the
// exposition text on stdout. tests: examples/prometheus_metrics_test.sh.
//
// Label cardinality. Every distinct set of label values is its own time series in Prometheus,
// kept in memory and on disk for as long as it has samples. Operation, kind and outcome come from
// small fixed enums, so they are labels. Resource names are not: a service that locks
// invoice:<id> has as many resources as invoices, and a label per resource would grow the
// server without bound. So the per-resource series (contention, acquire failures) are labelled
// by the resource's *family* — the name up to its first ':' (invoice:42 -> "invoice") — and at
// most kMaxFamilies families get a label of their own; any later ones are counted under
// family="_other". Change family_of() to suit your names.
//
// Threading: lockwire calls the hooks on its loop thread; render() may run on any thread. The
// fixed series are atomics (no lock, no allocation in a hook); the family table takes a mutex and
// allocates only when a new family is admitted, at most kMaxFamilies times.
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <unistd.h>

#include "lockwire/lock/blocking.hpp"

using namespace std::chrono_literals;
namespace lock = lockwire::lock;

namespace {

// --- the bounded label values ---------------------------------------------------------------

constexpr std::array kOps{"acquire", "release", "renew", "force_release", "inspect"};
constexpr std::array kKinds{"exclusive", "shared"};
// Outcome labels: "ok", each lock::Errc by name, and "other" for an error of another category.
constexpr std::array kOutcomes{"ok",
                               "timed_out",
                               "not_held",
                               "lost",
                               "outcome_unknown",
                               "connection",
                               "protocol",
                               "invalid_argument",
                               "already_held",
                               "closed",
                               "server_refused",
                               "server_unavailable",
                               "unsafe_server",
                               "cancelled",
                               "not_replicated",
                               "upgrade_conflict",
                               "unsupported_server",
                               "busy",
                               "other"};
constexpr std::size_t kOther = kOutcomes.size() - 1;
static_assert(static_cast<std::size_t>(lock::Errc::busy) == kOther - 1,
              "a new lock::Errc: give it an outcome label");

std::size_t outcome_of(std::error_code ec) {
  if (!ec) return 0;
  if (ec.category() != lock::lock_category()) return kOther;
  const auto v = static_cast<std::size_t>(ec.value());
  return v > 0 && v < kOther ? v : kOther;  // Errc's values are kOutcomes' indices
}

// Latency buckets (seconds): from a loopback round trip to a long wait.
constexpr std::array kBuckets{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                              0.025,  0.05,    0.1,    0.25,  0.5,    1.0,   2.5,
                              5.0,    10.0,    30.0};

// The resource's family: its name up to the first ':' (all of it when there is none).
std::string_view family_of(std::string_view resource) {
  return resource.substr(0, resource.find(':'));
}

// A label value in the exposition format: backslash, double quote and newline escaped.
void append_label_value(std::string& out, std::string_view v) {
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
}

struct Histogram {
  std::array<std::atomic<std::uint64_t>, kBuckets.size()> le{};  // not cumulative; render sums
  std::atomic<std::uint64_t> count{0}, sum_ns{0};
  void observe(lock::Nanos d) noexcept {
    const double s = std::chrono::duration<double>(d).count();
    for (std::size_t i = 0; i < kBuckets.size(); ++i) {
      if (s <= kBuckets[i]) {
        le[i].fetch_add(1, std::memory_order_relaxed);
        break;
      }
    }
    count.fetch_add(1, std::memory_order_relaxed);
    sum_ns.fetch_add(static_cast<std::uint64_t>(d.count() < 0 ? 0 : d.count()),
                     std::memory_order_relaxed);
  }
};

}  // namespace

class PrometheusMetrics final : public lock::Metrics {
 public:
  static constexpr std::size_t kMaxFamilies = 50;

  PrometheusMetrics() { families_.try_emplace("_other"); }

  void on_op(lock::Op op, lock::Kind kind, std::string_view resource, std::error_code ec,
             lock::Nanos latency) noexcept override {
    const auto o = static_cast<std::size_t>(op);
    const auto k = static_cast<std::size_t>(kind);
    if (o >= kOps.size() || k >= kKinds.size()) return;
    ops_[o][k][outcome_of(ec)].fetch_add(1, std::memory_order_relaxed);
    durations_[o][k][ec ? 1 : 0].observe(latency);
    // A refused or abandoned acquire, by resource family: which kind of resource is fought over.
    if (op == lock::Op::acquire && (ec == lock::Errc::busy || ec == lock::Errc::timed_out)) {
      count_family(resource, &Family::acquire_failed);
    }
  }
  void on_contended(std::string_view resource) noexcept override {
    count_family(resource, &Family::contended);
  }
  void on_wait(lock::Nanos waited, bool acquired) noexcept override {
    waits_[acquired ? 0 : 1].observe(waited);
  }
  void on_lease_lost(std::string_view, std::error_code why) noexcept override {
    lost_[outcome_of(why)].fetch_add(1, std::memory_order_relaxed);
  }
  void on_request(std::uint32_t commands) noexcept override {
    requests_.fetch_add(1, std::memory_order_relaxed);
    commands_.fetch_add(commands, std::memory_order_relaxed);
  }
  void on_redirect(std::string_view kind) noexcept override {
    // Four known kinds; anything else (a future one) is not worth a label of its own.
    static constexpr std::array kinds{"ASK", "MOVED", "TRYAGAIN", "CLUSTERDOWN"};
    for (std::size_t i = 0; i < kinds.size(); ++i) {
      if (kind == kinds[i]) redirects_[i].fetch_add(1, std::memory_order_relaxed);
    }
  }
  void on_degraded(std::string_view, std::string_view) noexcept override {
    degraded_.fetch_add(1, std::memory_order_relaxed);
  }

  // The exposition text (format 0.0.4): every family with HELP and TYPE; series that never
  // counted anything are left out (except the plain counters, always present).
  [[nodiscard]] std::string render() const {
    std::string out;
    header(out, "lockwire_operations_total", "counter",
           "Finished lock operations by operation, kind and outcome.");
    for (std::size_t o = 0; o < kOps.size(); ++o) {
      for (std::size_t k = 0; k < kKinds.size(); ++k) {
        for (std::size_t r = 0; r < kOutcomes.size(); ++r) {
          const auto n = ops_[o][k][r].load(std::memory_order_relaxed);
          if (n == 0) continue;
          sample(out, "lockwire_operations_total",
                 {{"op", kOps[o]}, {"kind", kKinds[k]}, {"outcome", kOutcomes[r]}}, n);
        }
      }
    }
    header(out, "lockwire_operation_duration_seconds", "histogram",
           "Latency of finished lock operations (acquire: including its wait).");
    for (std::size_t o = 0; o < kOps.size(); ++o) {
      for (std::size_t k = 0; k < kKinds.size(); ++k) {
        for (std::size_t r = 0; r < 2; ++r) {
          histogram(out, "lockwire_operation_duration_seconds", durations_[o][k][r],
                    {{"op", kOps[o]}, {"kind", kKinds[k]}, {"result", r ? "error" : "ok"}});
        }
      }
    }
    header(out, "lockwire_wait_duration_seconds", "histogram",
           "Time spent by acquires that had to wait, by whether they got the lock.");
    for (std::size_t r = 0; r < 2; ++r) {
      histogram(out, "lockwire_wait_duration_seconds", waits_[r],
                {{"acquired", r ? "false" : "true"}});
    }
    header(out, "lockwire_leases_lost_total", "counter",
           "Held leases lost (expired, taken over, force-released), by reason.");
    for (std::size_t r = 0; r < kOutcomes.size(); ++r) {
      const auto n = lost_[r].load(std::memory_order_relaxed);
      if (n != 0) sample(out, "lockwire_leases_lost_total", {{"reason", kOutcomes[r]}}, n);
    }
    header(out, "lockwire_requests_total", "counter", "Requests written to the server.");
    sample(out, "lockwire_requests_total", {}, requests_.load(std::memory_order_relaxed));
    header(out, "lockwire_commands_total", "counter", "Commands in those requests.");
    sample(out, "lockwire_commands_total", {}, commands_.load(std::memory_order_relaxed));
    header(out, "lockwire_redirects_total", "counter",
           "Redis Cluster redirections and backoffs, by kind.");
    static constexpr std::array kinds{"ASK", "MOVED", "TRYAGAIN", "CLUSTERDOWN"};
    for (std::size_t i = 0; i < kinds.size(); ++i) {
      sample(out, "lockwire_redirects_total", {{"kind", kinds[i]}},
             redirects_[i].load(std::memory_order_relaxed));
    }
    header(out, "lockwire_degraded_total", "counter",
           "Connections on which the server refused a feature (see the client's log).");
    sample(out, "lockwire_degraded_total", {}, degraded_.load(std::memory_order_relaxed));

    std::lock_guard<std::mutex> g(m_);
    header(out, "lockwire_contended_total", "counter",
           "Acquire attempts that found the resource held, by resource family (bounded).");
    for (const auto& [family, f] : families_) {
      sample(out, "lockwire_contended_total", {{"family", family}}, f.contended);
    }
    header(out, "lockwire_acquire_failed_total", "counter",
           "Acquires answered busy or timed_out, by resource family (bounded).");
    for (const auto& [family, f] : families_) {
      sample(out, "lockwire_acquire_failed_total", {{"family", family}}, f.acquire_failed);
    }
    return out;
  }

 private:
  struct Family {
    std::uint64_t contended = 0, acquire_failed = 0;
  };
  using Labels = std::vector<std::pair<std::string_view, std::string_view>>;

  void count_family(std::string_view resource, std::uint64_t Family::*field) noexcept {
    const std::string_view family = family_of(resource);
    std::lock_guard<std::mutex> g(m_);
    auto it = families_.find(family);
    if (it == families_.end() && families_.size() <= kMaxFamilies) {
      try {  // a hook must not throw: a failed allocation counts under _other
        it = families_.try_emplace(std::string(family)).first;
      } catch (...) {
      }
    }
    if (it == families_.end()) it = families_.find(std::string_view("_other"));
    ++(it->second.*field);
  }

  static void header(std::string& out, std::string_view name, std::string_view type,
                     std::string_view help) {
    out.append("# HELP ").append(name).append(" ").append(help).append("\n");
    out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
  }
  static void name_and_labels(std::string& out, std::string_view name, const Labels& labels) {
    out.append(name);
    if (labels.empty()) return;
    out += '{';
    for (std::size_t i = 0; i < labels.size(); ++i) {
      if (i) out += ',';
      out.append(labels[i].first).append("=\"");
      append_label_value(out, labels[i].second);
      out += '"';
    }
    out += '}';
  }
  static void sample(std::string& out, std::string_view name, const Labels& labels,
                     std::uint64_t value) {
    name_and_labels(out, name, labels);
    out.append(" ").append(std::to_string(value)).append("\n");
  }
  static void histogram(std::string& out, std::string_view name, const Histogram& h,
                        Labels labels) {
    const auto count = h.count.load(std::memory_order_relaxed);
    if (count == 0) return;
    const std::string bucket = std::string(name) + "_bucket";
    std::uint64_t cumulative = 0;
    char le[32];
    labels.emplace_back("le", "");
    for (std::size_t i = 0; i <= kBuckets.size(); ++i) {
      if (i < kBuckets.size()) {
        cumulative += h.le[i].load(std::memory_order_relaxed);
        std::snprintf(le, sizeof le, "%g", kBuckets[i]);
        labels.back().second = le;
      } else {
        cumulative = count;  // +Inf holds every observation
        labels.back().second = "+Inf";
      }
      sample(out, bucket, labels, cumulative);
    }
    labels.pop_back();
    char sum[48];
    std::snprintf(sum, sizeof sum, "%.9f",
                  static_cast<double>(h.sum_ns.load(std::memory_order_relaxed)) / 1e9);
    name_and_labels(out, std::string(name) + "_sum", labels);
    out.append(" ").append(sum).append("\n");
    sample(out, std::string(name) + "_count", labels, count);
  }

  std::array<std::array<std::array<std::atomic<std::uint64_t>, kOutcomes.size()>, kKinds.size()>,
             kOps.size()>
      ops_{};
  std::array<std::array<std::array<Histogram, 2>, kKinds.size()>, kOps.size()> durations_{};
  std::array<Histogram, 2> waits_{};
  std::array<std::atomic<std::uint64_t>, kOutcomes.size()> lost_{};
  std::atomic<std::uint64_t> requests_{0}, commands_{0}, degraded_{0};
  std::array<std::atomic<std::uint64_t>, 4> redirects_{};
  mutable std::mutex m_;
  std::map<std::string, Family, std::less<>> families_;  // at most kMaxFamilies + _other
};

int main(int argc, char** argv) {
  lockwire::loop::ConnectionOptions conn;
  if (auto ec = lockwire::loop::parse_url(argc > 1 ? argv[1] : "redis://127.0.0.1:6379", conn)) {
    std::fprintf(stderr, "bad url: %s\n", ec.message().c_str());
    return 2;
  }
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 20;
  auto metrics = std::make_shared<PrometheusMetrics>();
  lock::ClientOptions options;
  options.metrics = metrics;
  lock::BlockingClient locks(conn, options);

  // Three threads fight over two invoices and a report; every third attempt is a try-lock.
  const std::string me = "prometheus-example-" + std::to_string(::getpid());
  int failures = 0;
  std::mutex fm;
  std::atomic<bool> go{false};  // all three start together, so they do meet
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      for (int i = 0; i < rounds; ++i) {
        lock::LockRequest req;
        req.resource = i % 3 == 2 ? "report:daily" : "invoice:" + std::to_string(i % 2);
        req.owner = me + "-" + std::to_string(t);
        req.ttl = 2s;
        req.wait = i % 3 == 1 ? 0ms : 500ms;
        lock::Lease lease;
        if (auto ec = locks.lock(req, lease)) {
          if (ec != lock::Errc::busy && ec != lock::Errc::timed_out) {
            std::lock_guard<std::mutex> g(fm);
            std::fprintf(stderr, "lock %s: %s (%s)\n", req.resource.c_str(), ec.message().c_str(),
                         locks.last_error().c_str());
            ++failures;
          }
          continue;
        }
        std::this_thread::sleep_for(2ms);  // the work
        if (i % 4 == 0) (void)locks.renew(lease);
        (void)locks.release(lease);
      }
    });
  }
  go.store(true);
  for (auto& th : threads) th.join();
  std::fputs(metrics->render().c_str(), stdout);
  return failures == 0 ? 0 : 1;
}
