// A blocking facade over Client for simple programs: it owns a libuv loop running on its own
// thread, and every call waits for the result. Callbacks you pass in LockRequest::on_lost run on
// that loop thread; do not call BlockingClient methods from them (they return invalid_argument).
//
//   lock::BlockingClient locks(conn_options);
//   std::error_code ec;
//   lock::LockRequest req;
//   req.resource = "report";
//   req.owner = "me";
//   req.ttl = 10s;
//   if (auto guard = locks.lock_guard(req, ec)) {
//     write_report(guard.lease().token());
//   }  // released here, without throwing
#pragma once

#include <functional>
#include <memory>
#include <system_error>
#include <thread>

#include "lockwire/lock/client.hpp"
#include "lockwire/loop/uv_loop.hpp"

namespace lockwire::lock {

class LeaseGuard;

class BlockingClient {
 public:
  explicit BlockingClient(loop::ConnectionOptions connection, ClientOptions options = {});
  ~BlockingClient();  // closes the client, stops and joins the loop thread
  BlockingClient(const BlockingClient&) = delete;
  BlockingClient& operator=(const BlockingClient&) = delete;

  [[nodiscard]] std::error_code lock(LockRequest req, Lease& out);
  // As lock(), wrapped in a guard that releases on destruction. Empty guard on error.
  [[nodiscard]] LeaseGuard lock_guard(LockRequest req, std::error_code& ec);
  [[nodiscard]] std::error_code release(const Lease& lease);
  [[nodiscard]] std::error_code renew(const Lease& lease);
  [[nodiscard]] std::error_code force_release(const std::string& resource,
                                              std::size_t* removed = nullptr);
  [[nodiscard]] std::error_code inspect(const std::string& resource, LockInfo& out);

  // Runs `fn` on the loop thread with the async client and waits for it to return.
  void run_on_loop(const std::function<void(Client&)>& fn);

 private:
  [[nodiscard]] bool on_loop_thread() const noexcept;
  loop::UvLoop loop_;
  std::unique_ptr<Client> client_;
  std::thread thread_;
};

// Owns a lease and releases it when destroyed; must not outlive its BlockingClient. The destructor
// never throws; a failed release is reported to `on_release_error` (if set) and otherwise ignored —
// the key expires with its TTL.
class LeaseGuard {
 public:
  LeaseGuard() = default;
  LeaseGuard(BlockingClient& client, Lease lease) noexcept
      : client_(&client), lease_(std::move(lease)) {}
  LeaseGuard(LeaseGuard&& o) noexcept;
  LeaseGuard& operator=(LeaseGuard&& o) noexcept;
  LeaseGuard(const LeaseGuard&) = delete;
  LeaseGuard& operator=(const LeaseGuard&) = delete;
  ~LeaseGuard();

  [[nodiscard]] const Lease& lease() const noexcept { return lease_; }
  [[nodiscard]] explicit operator bool() const noexcept { return lease_.held(); }
  // Releases now; later destruction does nothing.
  std::error_code release();

  std::function<void(std::error_code)> on_release_error;

 private:
  BlockingClient* client_ = nullptr;
  Lease lease_;
};

}  // namespace lockwire::lock
