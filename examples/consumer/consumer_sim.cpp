// A simulation test written against the installed headers: two lock::Clients on simulated
// nodes increment a counter under a lock, over 100 seeds with swarm faults; the counter must
// never be entered twice at once, and both clients must finish once the faults heal.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "lockwire/lock/client.hpp"
#include "lockwire/sim/test.hpp"

namespace lock = lockwire::lock;
namespace simtest = lockwire::sim::test;
using namespace std::chrono_literals;

namespace {

struct Counter {
  int inside = 0, entries = 0, overlaps = 0;
};

// Five turns: lock, be inside for 20 ms, leave, release.
struct Turns {
  lockwire::sim::Node& node;
  lock::Client client;
  Counter& counter;
  int left = 5;
  std::unique_ptr<lockwire::loop::Timer> timer;
  std::function<void()> step;
  Turns(lockwire::sim::Node& n, lockwire::loop::ConnectionOptions o, Counter& c)
      : node(n), client(n.loop(), std::move(o)), counter(c) {
    timer = n.loop().make_timer([this] { auto s = std::move(step); s(); });
  }
  void next() {
    if (left == 0) return;
    lock::LockRequest req;
    req.resource = "counter";
    req.owner = node.name() + "#" + std::to_string(left);
    req.ttl = 500ms;
    req.wait = 1s;
    req.auto_renew = true;
    client.lock(req, [this](std::error_code ec, lock::Lease lease) {
      if (ec) return after(10ms, [this] { next(); });
      if (++counter.inside > 1) ++counter.overlaps;
      ++counter.entries;
      after(20ms, [this, lease] {
        --counter.inside;
        --left;
        client.release(lease, [this](std::error_code) { next(); });
      });
    });
  }
  void after(lockwire::sim::Nanos d, std::function<void()> fn) {
    step = std::move(fn);
    timer->start(d);
  }
};

}  // namespace

int main() {
  simtest::Options o;
  o.seeds = 100;
  // Pauses longer than the TTL would let the lease lapse while "inside" (fencing is what covers
  // that: see examples/job_runner); this check is about the install, so no process pauses.
  o.faults = "latency,jitter,splits,clogs,cuts,stalls,restarts";
  const simtest::Report r = simtest::run("consumer_sim", [](simtest::Context& ctx) {
    auto& redis = ctx.add_redis();
    Counter counter;
    std::vector<std::unique_ptr<Turns>> clients;
    for (const char* name : {"a", "b"}) {
      auto& node = ctx.add_client(name);
      clients.push_back(std::make_unique<Turns>(node, ctx.connection_to(redis, node), counter));
      clients.back()->client.start();
      clients.back()->next();
    }
    ctx.run_until([&] { return clients[0]->left == 0 && clients[1]->left == 0; },
                  ctx.healed_at() + 10s);
    ctx.check(counter.overlaps == 0, "two clients inside at once");
    ctx.check(clients[0]->left == 0 && clients[1]->left == 0, "both clients finished");
  }, o);
  return r.ok ? 0 : 1;
}
