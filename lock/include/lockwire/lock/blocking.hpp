// A blocking facade over Client for simple programs: it owns a libuv loop running on its own
// thread, and every call waits for the result. Callbacks you pass in LockRequest::on_lost run on
// that loop thread; do not call BlockingClient methods from them (they return invalid_argument).
//
// Thread safety: every method may be called from any number of threads at once (each call is
// carried out on the loop thread and waits for its own answer); cancel() from one thread ends a
// lock() waiting in another. last_error() is per calling thread. Destroying the client while
// other threads are inside its calls is undefined, as for any object; LeaseGuards that outlive
// it are safe (see LeaseGuard).
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
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "lockwire/lock/client.hpp"
#include "lockwire/loop/uv_loop.hpp"

namespace lockwire::lock {

class BlockingClient;
class LeaseGuard;

namespace detail {
// Shared by a BlockingClient and its guards: a guard releases only while the client lives.
struct BlockingLife {
  std::shared_mutex m;
  BlockingClient* client = nullptr;  // null once the client is being destroyed
};
}  // namespace detail

class BlockingClient {
 public:
  explicit BlockingClient(loop::ConnectionOptions connection, ClientOptions options = {});
  // Closes the client, stops and joins the loop thread. Leases still held are not released
  // (their keys expire with their TTL); guards still alive become no-ops (Errc::closed).
  ~BlockingClient();
  BlockingClient(const BlockingClient&) = delete;
  BlockingClient& operator=(const BlockingClient&) = delete;

  // As Client::lock: waits up to req.wait; Errc::busy for a try-lock (wait 0) that found the
  // resource held, timed_out for a wait that ran out.
  [[nodiscard]] std::error_code lock(LockRequest req, Lease& out);
  // As lock(), wrapped in a guard that releases on destruction. Empty guard on error.
  [[nodiscard]] LeaseGuard lock_guard(LockRequest req, std::error_code& ec);
  // As Client::upgrade (the shared lease `shared` becomes an exclusive one, `out`).
  [[nodiscard]] std::error_code upgrade(const Lease& shared, Nanos wait, Lease& out);
  // As Client::lock_all: every resource or none.
  [[nodiscard]] std::error_code lock_all(std::vector<std::string> resources, LockRequest req,
                                         LeaseSet& out);
  // Ends the waits of `owner` on `resource` (a lock() blocked in another thread returns
  // Errc::cancelled once nothing of ours is left on the server).
  void cancel(const std::string& resource, const std::string& owner);
  [[nodiscard]] std::error_code release(const Lease& lease);
  [[nodiscard]] std::error_code release(const LeaseSet& set);
  [[nodiscard]] std::error_code renew(const Lease& lease);
  [[nodiscard]] std::error_code force_release(const std::string& resource,
                                              std::size_t* removed = nullptr);
  [[nodiscard]] std::error_code inspect(const std::string& resource, LockInfo& out);

  // The words behind the calling thread's last call on this client: the server's own words, or
  // what was wrong with the request (invalid_argument), or which holder blocked it. Empty after
  // a call that succeeded. Never carries a credential.
  [[nodiscard]] std::string last_error() const;

  // Runs `fn` on the loop thread with the async client and waits for it to return.
  void run_on_loop(const std::function<void(Client&)>& fn);

 private:
  friend class LeaseGuard;
  [[nodiscard]] bool on_loop_thread() const noexcept;
  // Carries out `start(done)` on the loop thread and waits for `done` to be called.
  template <typename T>
  T call(const std::function<void(std::function<void(T)>)>& start);
  loop::UvLoop loop_;
  std::unique_ptr<Client> client_;
  std::thread thread_;
  std::shared_ptr<detail::BlockingLife> life_;
  mutable std::mutex words_m_;
  std::map<std::thread::id, std::string> words_;  // last_error() of each calling thread
};

// Owns a lease and releases it when destroyed. The destructor never throws; a failed release is
// reported to `on_release_error` (if set) and otherwise ignored — the key expires with its TTL.
// A guard that outlives its BlockingClient releases nothing: release() returns Errc::closed (and
// on_release_error hears it); the lease expires with its TTL on the server.
class LeaseGuard {
 public:
  LeaseGuard() = default;
  LeaseGuard(BlockingClient& client, Lease lease) noexcept
      : life_(client.life_), lease_(std::move(lease)) {}
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
  std::shared_ptr<detail::BlockingLife> life_;
  Lease lease_;
};

}  // namespace lockwire::lock
