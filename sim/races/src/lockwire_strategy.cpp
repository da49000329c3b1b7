// The `lockwire` strategy (and `no-fence`, the #13 regressions, `lockwire-allow-eviction`):
// lock::Client unchanged but for its options; belief = lease held and still valid on the
// client's monotonic clock; ground truth in lockwire's key layout (docs/protocol.md).
#include "lockwire_strategy.hpp"

#include <map>
#include <set>
#include <utility>

#include "strategy_util.hpp"

namespace lockwire::races::detail {

namespace {

class LockwireStrategy final : public Strategy {
 public:
  LockwireStrategy(sim::Node& node, loop::ConnectionOptions o, LockwireTweaks t)
      : node_(node),
        metrics_(std::make_shared<lock::CountingMetrics>()),
        client_(lock::testing::make_client(node.loop(), without_vouch(std::move(o), t),
                                           options(metrics_, t), t.regressions)) {
    auto alive = alive_;
    client_->connection().add_push_handler([this, alive](resp::Frame p) {
      if (*alive && on_push) on_push(push_kind(p));
    });
  }
  static loop::ConnectionOptions without_vouch(loop::ConnectionOptions o, const LockwireTweaks& t) {
    if (!t.vouch && o.sentinel) o.sentinel->vouch = false;
    return o;
  }
  static lock::ClientOptions options(std::shared_ptr<lock::CountingMetrics> m,
                                     const LockwireTweaks& t) {
    lock::ClientOptions o;
    o.metrics = std::move(m);
    o.allow_eviction = t.allow_eviction;
    o.min_replicas = t.replica_majority ? lock::ReplicaAcks::majority()
                                        : lock::ReplicaAcks::count(t.min_replicas);
    if (t.fence_ttl > Nanos{0}) o.fence_ttl = t.fence_ttl;
    o.cluster_vouch = t.cluster_vouch;
    o.parked_handoff = t.parked;
    return o;
  }

  void start() override { client_->start(); }

  // The request for `spec` under lease id `id` (its loss reported as that id).
  lock::LockRequest request(const AcquireSpec& spec, int id) {
    lock::LockRequest req;
    req.resource = spec.resource;
    req.owner = spec.owner;
    req.ttl = spec.ttl;
    req.wait = spec.wait;
    req.auto_renew = spec.auto_renew;
    req.kind = spec.shared ? lock::Kind::shared : lock::Kind::exclusive;
    req.permits = spec.shared ? spec.permits : 0;
    req.fair = !spec.shared && spec.fair;
    req.on_lost = [this, id, alive = alive_](Ec) {
      if (*alive && on_lost) on_lost(id);
    };
    return req;
  }
  // The answer to an acquire (or upgrade) of lease id `id`.
  lock::Client::AcquireHandler answer(int id, std::function<void(AcquireResult)> done) {
    return [this, id, alive = alive_, done = std::move(done)](Ec ec, lock::Lease l) {
      if (!*alive) return;
      AcquireResult r;
      r.ec = ec;
      if (!ec) {
        r.token = l.token();
        r.lease = id;
        leases_[id] = l;
      }
      done(r);
    };
  }

  void acquire(const AcquireSpec& spec, std::function<void(AcquireResult)> done) override {
    const int id = next_++;
    client_->lock(request(spec, id), answer(id, std::move(done)));
  }

  void acquire_all(const std::vector<AcquireSpec>& specs,
                   std::function<void(std::vector<AcquireResult>)> done) override {
    if (specs.empty()) return done({});
    lock::LockRequest req;
    req.owner = specs.front().owner;
    req.ttl = specs.front().ttl;
    req.wait = specs.front().wait;
    req.auto_renew = specs.front().auto_renew;
    std::vector<std::string> resources;
    std::vector<int> ids;
    for (const auto& s : specs) {
      resources.push_back(s.resource);
      ids.push_back(next_++);
    }
    auto alive = alive_;
    // One on_lost for the set: the lease it names is found by resource.
    auto by_resource = std::make_shared<std::map<std::string, int>>();
    for (std::size_t i = 0; i < specs.size(); ++i) (*by_resource)[specs[i].resource] = ids[i];
    req.on_lost = [this, alive](Ec) {
      if (!*alive || !on_lost) return;
      for (auto& [id, l] : leases_) {
        if (l.state() == lock::LeaseState::lost && reported_lost_.insert(id).second) on_lost(id);
      }
    };
    client_->lock_all(std::move(resources), std::move(req),
                      [this, alive, ids, by_resource, specs, done = std::move(done)](
                          Ec ec, lock::LeaseSet set) {
                        if (!*alive) return;
                        std::vector<AcquireResult> out(specs.size());
                        for (std::size_t i = 0; i < specs.size(); ++i) out[i].ec = ec;
                        for (const lock::Lease& l : set.leases) {
                          for (std::size_t i = 0; i < specs.size(); ++i) {
                            if (specs[i].resource != l.resource()) continue;
                            out[i].ec = {};
                            out[i].token = l.token();
                            out[i].lease = ids[i];
                            leases_[ids[i]] = l;
                          }
                        }
                        done(std::move(out));
                      });
  }

  void upgrade(int lease, const AcquireSpec& spec, std::function<void(AcquireResult)> done) override {
    (void)lease;  // by owner: the Client retires its own shared lease of that owner
    const int id = next_++;
    client_->upgrade(request(spec, id), answer(id, std::move(done)));
  }

  void release(int lease, std::function<void(Ec)> done) override {
    auto it = leases_.find(lease);
    if (it == leases_.end()) return done(lock::Errc::invalid_argument);
    client_->release(it->second, std::move(done));
  }
  void renew(int lease, std::function<void(Ec)> done) override {
    auto it = leases_.find(lease);
    if (it == leases_.end()) return done(lock::Errc::invalid_argument);
    client_->renew(it->second, std::move(done));
  }
  void cancel(const std::string& resource, const std::string& owner) override {
    client_->cancel(resource, owner);
  }
  void force_release(const std::string& resource, std::function<void(Ec)> done) override {
    client_->force_release(resource, [done = std::move(done)](Ec ec, std::size_t) { done(ec); });
  }
  bool believes_held(int lease) const override {
    auto it = leases_.find(lease);
    if (it == leases_.end()) return false;
    return it->second.held() && node_.loop().now() < it->second.valid_until();
  }
  // A held lease whose valid_until() passed (it ran out, or was suspended at that moment)
  // stopped counting then; a lease that is no longer held ended at an unknown moment.
  std::optional<Nanos> belief_ended_at(int lease) const override {
    auto it = leases_.find(lease);
    if (it == leases_.end() || !it->second.held()) return std::nullopt;
    const loop::MonoTime until = it->second.valid_until();
    if (node_.loop().now() < until) return std::nullopt;
    return node_.past_true_time_of_mono(until);
  }
  bool server_holds(const sim::RedisModel& m, std::string_view resource, std::string_view owner,
                    bool shared, std::int64_t* expire_at_ms) const override {
    std::string key = "lockwire:{";
    key.append(resource).append("}");
    const auto p = m.peek(key);
    if (!p.found || p.items.size() < 2) return false;
    if (shared) {
      // Field s:O in the holder set and its companion key P{R}:s:O (docs/protocol.md).
      bool field = false;
      for (std::size_t i = 0; i < p.items.size(); i += 2) {
        if (p.items[i].size() == owner.size() + 2 && p.items[i].compare(0, 2, "s:") == 0 &&
            std::string_view(p.items[i]).substr(2) == owner) {
          field = true;
        }
      }
      if (!field) return false;
      const auto c = m.peek(key + ":s:" + std::string(owner));
      if (!c.found) return false;
      if (expire_at_ms) *expire_at_ms = c.expire_at_ms;
      return true;
    }
    // The first field of the holder set is the grantee (HSETNX created the key with it); later
    // fields are claims that back off within one round trip.
    if (p.items[0].size() != owner.size() + 2 || p.items[0].compare(0, 2, "x:") != 0 ||
        std::string_view(p.items[0]).substr(2) != owner) {
      return false;
    }
    if (expire_at_ms) *expire_at_ms = p.expire_at_ms;
    return true;
  }
  std::size_t in_flight() const override { return client_->connection().in_flight(); }
  std::uint64_t requests_sent() const override { return metrics_->requests.load(); }
  void close() override {
    *alive_ = false;
    client_->close();
  }
  ~LockwireStrategy() override { *alive_ = false; }

 private:
  sim::Node& node_;
  std::shared_ptr<lock::CountingMetrics> metrics_;
  std::unique_ptr<lock::Client> client_;
  std::map<int, lock::Lease> leases_;
  std::set<int> reported_lost_;  // acquire_all's leases already reported to on_lost
  int next_ = 1;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace

std::unique_ptr<Strategy> make_lockwire_strategy(sim::Node& node, loop::ConnectionOptions options,
                                                 const LockwireTweaks& tweaks) {
  if (tweaks.pinned) {
    const loop::Endpoint first = options.seeds.empty() ? options.endpoint : options.seeds.front();
    options.seeds.clear();
    options.endpoint = first;
    options.locate = [first](const loop::ConnectionOptions::Answer& a) { a(first, {}); };
  }
  if (tweaks.direct) {
    options.sentinel.reset();
    options.seeds.clear();
  }
  return std::make_unique<LockwireStrategy>(node, std::move(options), tweaks);
}

}  // namespace lockwire::races::detail
