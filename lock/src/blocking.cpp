#include "lockwire/lock/blocking.hpp"

#include <future>
#include <utility>

namespace lockwire::lock {

BlockingClient::BlockingClient(loop::ConnectionOptions connection, ClientOptions options) {
  // Built before the loop thread starts; thread creation orders these writes before its run.
  client_ = std::make_unique<Client>(loop_, std::move(connection), std::move(options));
  client_->start();
  loop_.keep_alive(true);
  thread_ = std::thread([this] { loop_.run(); });
}

BlockingClient::~BlockingClient() {
  loop_.submit([this] {
    client_.reset();
    loop_.keep_alive(false);
    loop_.stop();
  });
  if (thread_.joinable()) thread_.join();
}

bool BlockingClient::on_loop_thread() const noexcept {
  return std::this_thread::get_id() == thread_.get_id();
}

void BlockingClient::run_on_loop(const std::function<void(Client&)>& fn) {
  if (on_loop_thread()) {
    fn(*client_);
    return;
  }
  std::promise<void> done;
  loop_.submit([&] {
    fn(*client_);
    done.set_value();
  });
  done.get_future().wait();
}

std::error_code BlockingClient::lock(LockRequest req, Lease& out) {
  if (on_loop_thread()) return Errc::invalid_argument;
  std::promise<std::pair<std::error_code, Lease>> p;
  loop_.submit([&] {
    client_->lock(std::move(req), [&p](std::error_code ec, Lease l) {
      p.set_value({ec, std::move(l)});
    });
  });
  auto [ec, lease] = p.get_future().get();
  out = std::move(lease);
  return ec;
}

LeaseGuard BlockingClient::lock_guard(LockRequest req, std::error_code& ec) {
  Lease l;
  ec = lock(std::move(req), l);
  if (ec) return {};
  return LeaseGuard(*this, std::move(l));
}

std::error_code BlockingClient::release(const Lease& lease) {
  if (on_loop_thread()) return Errc::invalid_argument;
  std::promise<std::error_code> p;
  loop_.submit([&] { client_->release(lease, [&p](std::error_code ec) { p.set_value(ec); }); });
  return p.get_future().get();
}

std::error_code BlockingClient::renew(const Lease& lease) {
  if (on_loop_thread()) return Errc::invalid_argument;
  std::promise<std::error_code> p;
  loop_.submit([&] { client_->renew(lease, [&p](std::error_code ec) { p.set_value(ec); }); });
  return p.get_future().get();
}

std::error_code BlockingClient::force_release(const std::string& resource, std::size_t* removed) {
  if (on_loop_thread()) return Errc::invalid_argument;
  std::promise<std::pair<std::error_code, std::size_t>> p;
  loop_.submit([&] {
    client_->force_release(resource, [&p](std::error_code ec, std::size_t n) {
      p.set_value({ec, n});
    });
  });
  auto [ec, n] = p.get_future().get();
  if (removed != nullptr) *removed = n;
  return ec;
}

std::error_code BlockingClient::inspect(const std::string& resource, LockInfo& out) {
  if (on_loop_thread()) return Errc::invalid_argument;
  std::promise<std::error_code> p;
  loop_.submit([&] {
    client_->inspect(resource, [&](std::error_code ec, const LockInfo& info) {
      out = info;
      p.set_value(ec);
    });
  });
  return p.get_future().get();
}

LeaseGuard::LeaseGuard(LeaseGuard&& o) noexcept
    : on_release_error(std::move(o.on_release_error)),
      client_(std::exchange(o.client_, nullptr)),
      lease_(std::move(o.lease_)) {}

LeaseGuard& LeaseGuard::operator=(LeaseGuard&& o) noexcept {
  if (this != &o) {
    try {
      (void)release();
    } catch (...) {
    }
    client_ = std::exchange(o.client_, nullptr);
    lease_ = std::move(o.lease_);
    on_release_error = std::move(o.on_release_error);
  }
  return *this;
}

LeaseGuard::~LeaseGuard() {
  try {
    (void)release();
  } catch (...) {  // never throw from a destructor
  }
}

std::error_code LeaseGuard::release() {
  if (client_ == nullptr || lease_.empty()) return {};
  BlockingClient* c = std::exchange(client_, nullptr);
  const std::error_code ec = c->release(lease_);
  if (ec && on_release_error) on_release_error(ec);
  return ec;
}

}  // namespace lockwire::lock
