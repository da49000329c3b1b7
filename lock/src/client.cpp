// The lock client's facade and metrics; the machine itself is Client::Core (core.hpp).
#include "core.hpp"

namespace lockwire::lock {

// --- CountingMetrics ---------------------------------------------------------------------------

void CountingMetrics::on_op(Op op, Kind, std::error_code ec, Nanos) noexcept {
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
  for (auto& [k, wl] : leases) {
    if (auto d = wl.lock()) {
      stop_lease_timers(d);
      d->expiry_timer.reset();
      d->renew_timer.reset();
    }
  }
  leases.clear();
  for (auto& w : pending) {
    if (w->done) continue;
    w->done = true;
    w->deadline_timer.reset();
    w->settle_timer.reset();
    auto cb = std::move(w->cb);
    try {
      if (cb) cb(Errc::closed, Lease{});
    } catch (...) {  // destructors never throw
    }
  }
  queues.clear();
  parked.clear();
  if (conn) {
    conn->remove_push_handler(push_id);
    conn->remove_state_handler(state_id);
    conn->close();
  }
}

// --- Client ------------------------------------------------------------------------------------

Client::Client(loop::Loop& loop, loop::ConnectionOptions connection, ClientOptions options)
    : core_(std::make_shared<Core>(loop, std::move(options))) {
  // A lock request written on an abandoned connection must never be applied after the new
  // connection's (split-brain reconnect): kill the old one first (see ConnectionOptions).
  connection.fence_abandoned = core_->opts.fence_abandoned;
  core_->conn = std::make_unique<loop::Connection>(loop, std::move(connection));
  std::weak_ptr<Core> w = core_;
  core_->push_id = core_->conn->add_push_handler([w](resp::Frame f) {
    if (auto c = w.lock(); c && !c->closed) c->on_push(f);
  });
  core_->state_id = core_->conn->add_state_handler([w](loop::ConnectionState s, std::error_code) {
    if (auto c = w.lock(); c && !c->closed) c->on_state(s);
  });
}

Client::~Client() {
  core_->shutdown();
  // The connection goes with the core; its pending handlers see an expired weak_ptr.
}

void Client::start() {
  core_->conn->start();
}
void Client::close() noexcept {
  core_->shutdown();
}
loop::Connection& Client::connection() noexcept {
  return *core_->conn;
}
const ClientOptions& Client::options() const noexcept {
  return core_->opts;
}
const ServerCapabilities& Client::capabilities() const noexcept {
  return core_->caps;
}
const std::string& Client::last_error() const noexcept {
  return core_->last_error;
}

std::error_code Client::validate(const LockRequest& req, std::string* why) const {
  const Limits& lim = core_->opts.limits;
  if (auto ec = validate_prefix(core_->opts.prefix, lim, why)) return ec;
  if (auto ec = validate_name("resource", req.resource, lim.max_resource_bytes, why)) return ec;
  if (auto ec = validate_name("owner", req.owner, lim.max_owner_bytes, why)) return ec;
  if (auto ec = validate_ttl(req.ttl, lim, why)) return ec;
  if (auto ec = validate_wait(req.wait, lim, why)) return ec;
  return {};
}

}  // namespace lockwire::lock
