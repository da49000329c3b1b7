// The lock client's facade and metrics; the machine itself is Client::Core (core.hpp).
#include "route.hpp"

namespace lockwire::lock {

// --- CountingMetrics ---------------------------------------------------------------------------

void CountingMetrics::on_op(Op op, Kind, std::string_view, std::error_code ec, Nanos) noexcept {
  switch (op) {
    case Op::acquire:
      (ec ? acquire_failed : acquired).fetch_add(1, std::memory_order_relaxed);
      break;
    case Op::release:
      (ec ? release_failed : released).fetch_add(1, std::memory_order_relaxed);
      break;
    case Op::renew:
      (ec ? renew_failed : renewed).fetch_add(1, std::memory_order_relaxed);
      break;
    default:
      break;
  }
}
void CountingMetrics::on_contended(std::string_view) noexcept {
  contended.fetch_add(1, std::memory_order_relaxed);
}
void CountingMetrics::on_wait(Nanos, bool) noexcept {
  waits.fetch_add(1, std::memory_order_relaxed);
}
void CountingMetrics::on_lease_lost(std::string_view, std::error_code) noexcept {
  leases_lost.fetch_add(1, std::memory_order_relaxed);
}
void CountingMetrics::on_request(std::uint32_t n) noexcept {
  requests.fetch_add(1, std::memory_order_relaxed);
  commands.fetch_add(n, std::memory_order_relaxed);
}
void CountingMetrics::on_redirect(std::string_view kind) noexcept {
  (kind == "ASK" || kind == "MOVED" ? redirects : cluster_retries)
      .fetch_add(1, std::memory_order_relaxed);
}

void Client::Core::shutdown() noexcept {
  if (closed) return;
  closed = true;
  std::vector<WaiterPtr> pending;
  for (auto& [k, q] : queues) {
    q->stop_timers();
    for (auto& w : q->waiters) pending.push_back(w);
  }
  for (auto& ww : one_shots) {
    if (auto w = ww.lock()) pending.push_back(std::move(w));
  }
  one_shots.clear();
  for (auto& q : upgrades) {
    q->stop_timers();
    for (auto& w : q->waiters) pending.push_back(w);
  }
  upgrades.clear();
  spare_queues.clear();
  spare_lease_nodes.clear();
  for (auto& [k, wl] : leases) {
    if (auto d = wl.lock()) {
      stop_lease_timers(d);
      d->renew_timer.reset();
    }
  }
  leases.clear();
  expiries.clear();
  expiries_timer.reset();
  settles.clear();
  settles_timer.reset();
  leave_timers.clear();
  for (auto& w : pending) {
    if (w->done) continue;
    w->done = true;
    w->deadline_timer.reset();
    w->settle_timer.reset();
    auto cb = std::move(w->cb);
    auto routed = std::move(w->routed);
    try {
      if (routed) {
        routed(Failure(Errc::closed, "the client is closed"), Lease{});
      } else if (cb) {
        cb(Errc::closed, Lease{});
      }
    } catch (...) {  // destructors never throw
    }
  }
  queues.clear();
  parked.clear();
  // Closed, not destroyed: this may run inside one of their reply handlers (a parked grant's
  // answer whose handler closes the client); the Core's destructor frees them.
  for (auto& p : parkers) p->conn->close();
  if (conn) {
    conn->remove_push_handler(push_id);
    conn->remove_state_handler(state_id);
    conn->close();
  }
}

// --- Client ------------------------------------------------------------------------------------

std::shared_ptr<Client::Core> Client::Core::create(loop::Loop& loop,
                                                 loop::ConnectionOptions connection,
                                                 ClientOptions options,
                                                 const testing::Regressions& broken,
                                                 std::shared_ptr<ShardLink> link) {
  auto core = std::make_shared<Core>(loop, std::move(options));
  core->regressions = broken;
  core->link = std::move(link);
  // A lock request written on an abandoned connection must never be applied after the new
  // connection's (split-brain reconnect): kill the old one first (see ConnectionOptions). Not a
  // choice of the caller's: the lock is not safe without it (no_fence reproduces the race).
  connection.fence_abandoned = !broken.no_fence;
  if (core->opts.parked_handoff) {
    // A parked request waits as long as the pop does: no health check, which would count it
    // as a server that stopped answering. Behind sentinels the Core's own connection follows
    // the vouch; a parking connection only needs the primary's address.
    core->park_options = connection;
    core->park_options.health_check_interval = Nanos{0};
    if (core->park_options.sentinel) {
      core->park_options.sentinel->watch_every_sentinel = false;
      core->park_options.sentinel->vouch = false;
    }
  }
  core->conn = std::make_unique<loop::Connection>(loop, std::move(connection));
  std::weak_ptr<Core> w = core;
  core->push_id = core->conn->add_push_handler([w](resp::Frame f) {
    if (auto c = w.lock(); c && !c->closed) c->on_push(f);
  });
  core->state_id = core->conn->add_state_handler([w](loop::ConnectionState s, std::error_code) {
    if (auto c = w.lock(); c && !c->closed) c->on_state(s);
  });
  core->conn->set_vouch_handler([w] {
    if (auto c = w.lock(); c && !c->closed) c->on_vouch();
  });
  core->horizon = core->conn->vouched_until();
  return core;
}

// lock/src's way into a Client: building one (with the test-only seam's safeguards off).
struct detail::ClientAccess {
  static void init(Client& c, loop::Loop& loop, loop::ConnectionOptions connection,
                   ClientOptions options, const testing::Regressions& broken) {
    loop::ConnectionOptions base = connection;
    if (!connection.sentinel && !connection.locate && connection.seeds.size() > 1) {
      // A seed list (a Cluster): the first connection tries the seeds in turn, so that any one
      // node that is up — and a primary (ROLE) — suffices to find the cluster.
      auto next = std::make_shared<std::size_t>(0);
      connection.locate = [seeds = connection.seeds,
                           next](const loop::ConnectionOptions::Answer& a) {
        a(seeds[(*next)++ % seeds.size()], {});
      };
    }
    const bool seed_list = !connection.sentinel && connection.seeds.size() > 1;
    c.core_ = Client::Core::create(loop, std::move(connection), std::move(options), broken);
    c.core_->seed_list = seed_list;
    c.route_ = std::make_shared<Client::Route::Single>(c.core_);
    if (!base.sentinel && !base.locate) {
      c.core_->may_be_cluster = true;
      // The Client watches its first connection: its Core's state handler runs first (it was
      // added first) and makes itself the seed when the server is a Cluster node; then, once,
      // the calls go through the router. The connection never reports ready again after
      // close(), so the handler never runs for a Client that is gone. (`entered` is shared: the
      // connection calls a copy of each handler, and the seed reconnects like any connection.)
      c.core_->conn->add_state_handler(
          [&c, base = std::make_shared<loop::ConnectionOptions>(std::move(base)),
           entered = std::make_shared<bool>(false)](loop::ConnectionState s, std::error_code) {
            if (s != loop::ConnectionState::ready || *entered || !c.core_->control_only) return;
            *entered = true;
            c.enter_cluster(std::move(*base));
          });
    }
  }
  static std::unique_ptr<Client> make(loop::Loop& loop, loop::ConnectionOptions connection,
                                      ClientOptions options, const testing::Regressions& broken) {
    std::unique_ptr<Client> c(new Client());
    init(*c, loop, std::move(connection), std::move(options), broken);
    return c;
  }
  static const testing::Regressions& regressions(const Client& c) noexcept {
    return c.core_->regressions;
  }
};

Client::Client(loop::Loop& loop, loop::ConnectionOptions connection, ClientOptions options) {
  detail::ClientAccess::init(*this, loop, std::move(connection), std::move(options), {});
}

std::unique_ptr<Client> testing::make_client(loop::Loop& loop, loop::ConnectionOptions connection,
                                             ClientOptions options, const Regressions& broken) {
  return detail::ClientAccess::make(loop, std::move(connection), std::move(options), broken);
}
const testing::Regressions& testing::regressions_of(const Client& client) noexcept {
  return detail::ClientAccess::regressions(client);
}

// The first server said "cluster" at its first ready: from now on every call is routed. The
// waits made so far were parked (attempts wait for the connect probe, which this server never
// gets): they start again through the router with what is left of their wait. The first Core
// stays as the seed (Client::connection(), and the answer to invalid requests).
void Client::enter_cluster(loop::ConnectionOptions connection) {
  auto router = std::make_shared<Router>(core_->loop, std::move(connection), core_->opts);
  router->regressions = core_->regressions;  // every shard's Core has the same
  route_ = std::make_shared<Route::Cluster>(router, core_);
  Core& seed = *core_;
  std::vector<WaiterPtr> moving;
  for (auto& [k, q] : seed.queues) {
    q->stop_timers();
    for (auto& w : q->waiters) moving.push_back(w);
  }
  for (auto& ww : seed.one_shots) {
    if (auto w = ww.lock()) moving.push_back(std::move(w));
  }
  seed.queues.clear();
  seed.parked.clear();
  seed.one_shots.clear();
  for (auto& w : moving) {
    if (w->done) continue;
    w->done = true;
    w->deadline_timer.reset();
    w->settle_timer.reset();
    LockRequest req = std::move(w->req);
    req.wait = std::max(Nanos{0}, w->deadline - seed.loop.now());
    router->lock(std::move(req), std::move(w->cb));
  }
}

Client::~Client() {
  route_->close();
  // The connection goes with the core; its pending handlers see an expired weak_ptr.
}

// Every call goes to the route (route.hpp): the server's Core, or the Cluster router.
void Client::lock(LockRequest req, AcquireHandler handler) {
  route_->lock(std::move(req), std::move(handler));
}
void Client::upgrade(LockRequest req, AcquireHandler handler) {
  route_->upgrade(std::move(req), std::move(handler));
}
void Client::upgrade(const Lease& shared, Nanos wait, AcquireHandler handler) {
  LockRequest req;
  if (!shared.empty()) {
    req.resource = shared.resource();
    req.owner = shared.owner();
    req.ttl = shared.ttl();
    req.auto_renew = shared.d_->auto_renew;
  }
  req.wait = wait;
  route_->upgrade(shared, std::move(req), std::move(handler));
}
void Client::cancel(std::string_view resource, std::string_view owner) {
  route_->cancel(resource, owner);
}
void Client::release(const Lease& lease, DoneHandler handler) {
  route_->release(lease, std::move(handler));
}
void Client::renew(const Lease& lease, DoneHandler handler) {
  route_->renew(lease, std::move(handler));
}
void Client::release(std::string resource, std::string owner, std::optional<Kind> kind,
                     DoneHandler handler) {
  route_->release(std::move(resource), std::move(owner), kind, std::move(handler));
}
void Client::renew(std::string resource, std::string owner, std::optional<Kind> kind, Nanos ttl,
                   DoneHandler handler) {
  route_->renew(std::move(resource), std::move(owner), kind, ttl, std::move(handler));
}
void Client::force_release(std::string resource,
                           std::function<void(std::error_code, std::size_t)> h) {
  route_->force_release(std::move(resource), std::move(h));
}
void Client::inspect(std::string resource,
                     std::function<void(std::error_code, const LockInfo&)> h) {
  route_->inspect(std::move(resource), std::move(h));
}
void Client::locate_for(const std::string& resource,
                        const loop::ConnectionOptions::Answer& answer) {
  route_->locate_for(resource, answer);
}

void Client::start() {
  core_->conn->start();
}
void Client::close() noexcept {
  route_->close();
}
loop::Connection& Client::connection() noexcept {
  return *core_->conn;
}
const ClientOptions& Client::options() const noexcept {
  return core_->opts;
}
const ServerCapabilities& Client::capabilities() const noexcept {
  return route_->capabilities();
}
const std::string& Client::last_error() const noexcept {
  return route_->last_error();
}

std::error_code Client::validate(const LockRequest& req, std::string* why) const {
  return core_->validate(req, why);
}

std::error_code Client::Core::validate(const LockRequest& req, std::string* why) const {
  const Limits& lim = opts.limits;
  if (auto ec = validate_prefix(opts.prefix, lim, why)) return ec;
  if (opts.fence_ttl < std::chrono::seconds(1)) {
    if (why != nullptr) *why = "ClientOptions::fence_ttl must be at least 1 s";
    return Errc::invalid_argument;
  }
  if (auto ec = validate_name("resource", req.resource, lim.max_resource_bytes, why)) return ec;
  if (auto ec = validate_name("owner", req.owner, lim.max_owner_bytes, why)) return ec;
  if (auto ec = validate_ttl(req.ttl, lim, why)) return ec;
  if (auto ec = validate_wait(req.wait, lim, why)) return ec;
  if (req.fair && req.kind != Kind::exclusive) {
    if (why != nullptr) *why = "fair order is for exclusive locks";
    return Errc::invalid_argument;
  }
  if (req.permits < 0 || (req.permits > 0 && req.kind != Kind::shared)) {
    if (why != nullptr) *why = "permits must be >= 0, and > 0 only for a shared (semaphore) lease";
    return Errc::invalid_argument;
  }
  return {};
}

}  // namespace lockwire::lock
