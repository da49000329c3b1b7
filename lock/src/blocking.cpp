#include "lockwire/lock/blocking.hpp"

#include <future>
#include <utility>

namespace lockwire::lock {

BlockingClient::BlockingClient(loop::ConnectionOptions connection, ClientOptions options)
    : life_(std::make_shared<detail::BlockingLife>()) {
  life_->client = this;
  // Built before the loop thread starts; thread creation orders these writes before its run.
  client_ = std::make_unique<Client>(loop_, std::move(connection), std::move(options));
  client_->start();
  loop_.keep_alive(true);
  thread_ = std::thread([this] { loop_.run(); });
}

BlockingClient::~BlockingClient() {
  {
    // Waits for guards releasing right now; later ones see no client and do nothing.
    std::unique_lock lock(life_->m);
    life_->client = nullptr;
  }
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

std::string BlockingClient::last_error() const {
  std::lock_guard lock(words_m_);
  const auto it = words_.find(std::this_thread::get_id());
  return it == words_.end() ? std::string() : it->second;
}

template <typename T>
T BlockingClient::call(const std::function<void(std::function<void(T)>)>& start) {
  std::promise<T> p;
  std::string words;
  loop_.submit([&] {
    start([&](T result) {
      const std::error_code ec = [&] {
        if constexpr (std::is_same_v<T, std::error_code>) {
          return result;
        } else {
          return result.first;
        }
      }();
      if (ec) {
        words = client_->last_error();
        if (words.empty()) words = ec.message();
      }
      p.set_value(std::move(result));
    });
  });
  T out = p.get_future().get();
  std::lock_guard lock(words_m_);
  words_[std::this_thread::get_id()] = std::move(words);
  return out;
}

std::error_code BlockingClient::lock(LockRequest req, Lease& out) {
  if (on_loop_thread()) return Errc::invalid_argument;
  auto [ec, lease] = call<std::pair<std::error_code, Lease>>([&](auto done) {
    client_->lock(std::move(req), [done](std::error_code e, Lease l) { done({e, std::move(l)}); });
  });
  out = std::move(lease);
  return ec;
}

LeaseGuard BlockingClient::lock_guard(LockRequest req, std::error_code& ec) {
  Lease l;
  ec = lock(std::move(req), l);
  if (ec) return {};
  return LeaseGuard(*this, std::move(l));
}

std::error_code BlockingClient::upgrade(const Lease& shared, Nanos wait, Lease& out) {
  if (on_loop_thread()) return Errc::invalid_argument;
  auto [ec, lease] = call<std::pair<std::error_code, Lease>>([&](auto done) {
    client_->upgrade(shared, wait, [done](std::error_code e, Lease l) { done({e, std::move(l)}); });
  });
  out = std::move(lease);
  return ec;
}

std::error_code BlockingClient::lock_all(std::vector<std::string> resources, LockRequest req,
                                         LeaseSet& out) {
  if (on_loop_thread()) return Errc::invalid_argument;
  auto [ec, set] = call<std::pair<std::error_code, LeaseSet>>([&](auto done) {
    client_->lock_all(std::move(resources), std::move(req),
                      [done](std::error_code e, LeaseSet s) { done({e, std::move(s)}); });
  });
  out = std::move(set);
  return ec;
}

void BlockingClient::cancel(const std::string& resource, const std::string& owner) {
  // Not waited for: the cancelled lock() answers in its own thread.
  loop_.submit([this, resource, owner] { client_->cancel(resource, owner); });
}

std::error_code BlockingClient::release(const Lease& lease) {
  if (on_loop_thread()) return Errc::invalid_argument;
  return call<std::error_code>([&](auto done) { client_->release(lease, done); });
}

std::error_code BlockingClient::release(const LeaseSet& set) {
  if (on_loop_thread()) return Errc::invalid_argument;
  return call<std::error_code>([&](auto done) { client_->release(set, done); });
}

std::error_code BlockingClient::renew(const Lease& lease) {
  if (on_loop_thread()) return Errc::invalid_argument;
  return call<std::error_code>([&](auto done) { client_->renew(lease, done); });
}

std::error_code BlockingClient::force_release(const std::string& resource, std::size_t* removed) {
  if (on_loop_thread()) return Errc::invalid_argument;
  auto [ec, n] = call<std::pair<std::error_code, std::size_t>>([&](auto done) {
    client_->force_release(resource, [done](std::error_code e, std::size_t k) { done({e, k}); });
  });
  if (removed != nullptr) *removed = n;
  return ec;
}

std::error_code BlockingClient::inspect(const std::string& resource, LockInfo& out) {
  if (on_loop_thread()) return Errc::invalid_argument;
  auto [ec, info] = call<std::pair<std::error_code, LockInfo>>([&](auto done) {
    client_->inspect(resource, [done](std::error_code e, const LockInfo& i) { done({e, i}); });
  });
  out = std::move(info);
  return ec;
}

LeaseGuard::LeaseGuard(LeaseGuard&& o) noexcept
    : on_release_error(std::move(o.on_release_error)),
      life_(std::move(o.life_)),
      lease_(std::move(o.lease_)) {}

LeaseGuard& LeaseGuard::operator=(LeaseGuard&& o) noexcept {
  if (this != &o) {
    try {
      (void)release();
    } catch (...) {
    }
    life_ = std::move(o.life_);
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
  if (!life_ || lease_.empty()) return {};
  const auto life = std::exchange(life_, nullptr);
  std::error_code ec;
  {
    std::shared_lock lock(life->m);
    // Its client is gone: nothing can be sent; the lease expires with its TTL.
    ec = life->client != nullptr ? life->client->release(lease_) : make_error_code(Errc::closed);
  }
  if (ec && on_release_error) on_release_error(ec);
  return ec;
}

}  // namespace lockwire::lock
