// Client::lock_all: several resources, all or nothing, in the order of their names (no cycle of
// waits between two callers), each through lock() (so on a Cluster each on its own shard); a
// failure releases what was taken before the caller is told (docs/protocol.md, "Several
// resources").
#include <algorithm>

#include "core.hpp"

namespace lockwire::lock {

namespace {

struct LockAll {
  Client* client = nullptr;
  std::vector<std::string> resources;  // sorted, unique
  LockRequest req;
  loop::MonoTime deadline{};
  LeaseSet taken;
  Client::SetHandler handler;
};

}  // namespace

void Client::lock_all(std::vector<std::string> resources, LockRequest req, SetHandler handler) {
  if (!core_->regressions.lock_all_unsorted) {
    std::sort(resources.begin(), resources.end());
    resources.erase(std::unique(resources.begin(), resources.end()), resources.end());
  }
  Ec bad;
  if (resources.empty()) bad = Errc::invalid_argument;
  for (const std::string& r : resources) {
    LockRequest one = req;
    one.resource = r;
    if (!bad) bad = validate(one);
  }
  if (bad) {
    core_->loop.post([h = std::move(handler), bad] {
      if (h) h(bad, LeaseSet{});
    });
    return;
  }
  auto st = std::make_shared<LockAll>();
  st->client = this;
  st->resources = std::move(resources);
  st->deadline = core_->loop.now() + req.wait;
  st->req = std::move(req);
  st->handler = std::move(handler);
  // One step: the next resource with what is left of the wait; on a failure, the rollback. The
  // step holds itself only weakly; each lock() in flight holds it, so it goes with the last one.
  auto step = std::make_shared<std::function<void()>>();
  *step = [st, wstep = std::weak_ptr<std::function<void()>>(step),
           alive = std::weak_ptr<Core>(core_)] {
    auto self = wstep.lock();
    if (alive.expired() || !self) return;
    Client& c = *st->client;
    const std::size_t i = st->taken.leases.size();
    if (i == st->resources.size()) return st->handler({}, std::move(st->taken));
    LockRequest one = st->req;
    one.resource = st->resources[i];
    const Nanos left = st->deadline - c.core_->loop.now();
    one.wait = std::max(left, Nanos{0});
    c.lock(std::move(one), [st, self, alive](Ec ec, Lease l) {
      if (alive.expired()) return;
      if (!ec) {
        st->taken.leases.push_back(std::move(l));
        return (*self)();
      }
      Client& c2 = *st->client;
      if (st->taken.leases.empty() || c2.core_->closed ||
          c2.core_->regressions.lock_all_no_rollback) {
        return st->handler(ec, LeaseSet{});
      }
      // Nothing partial is left behind: the caller is told once what was taken is released.
      c2.release(st->taken, [st, ec](Ec) { st->handler(ec, LeaseSet{}); });
    });
  };
  (*step)();
}

void Client::release(const LeaseSet& set, DoneHandler handler) {
  if (set.leases.empty()) {
    core_->loop.post([h = std::move(handler)] {
      if (h) h(Errc::invalid_argument);
    });
    return;
  }
  struct Pending {
    std::size_t left = 0;
    Ec first;
    DoneHandler handler;
  };
  auto p = std::make_shared<Pending>();
  p->left = set.leases.size();
  p->handler = std::move(handler);
  for (const Lease& l : set.leases) {
    release(l, [p](Ec ec) {
      if (ec && !p->first) p->first = ec;
      if (--p->left == 0 && p->handler) p->handler(p->first);
    });
  }
}

}  // namespace lockwire::lock
