// Where a Client's calls go (issue #29: one facade for every topology).
//
// A Client starts on one server: its calls go to that server's Core (Route::Single). If that
// server's HELLO says "cluster", the Client switches, once, to the Cluster router, which sends
// each call to the Core of the shard that serves its resource (Route::Cluster, above
// Client::Router). The facade (client.cpp) calls whichever route it has and never asks which:
// what differs between the topologies lives here, one class each.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "router.hpp"

namespace lockwire::lock {

struct Client::Route {
  Route() = default;
  Route(const Route&) = delete;
  Route& operator=(const Route&) = delete;
  virtual ~Route() = default;

  virtual void lock(LockRequest&& req, AcquireHandler&& handler) = 0;
  virtual void upgrade(LockRequest&& req, AcquireHandler&& handler) = 0;
  // The upgrade of `shared`, a lease of this client (req is built from it).
  virtual void upgrade(const Lease& shared, LockRequest&& req, AcquireHandler&& handler) = 0;
  virtual void cancel(std::string_view resource, std::string_view owner) = 0;
  virtual void release(const Lease& lease, DoneHandler&& handler) = 0;
  virtual void renew(const Lease& lease, DoneHandler&& handler) = 0;
  virtual void release(std::string resource, std::string owner, std::optional<Kind> kind,
                       DoneHandler&& handler) = 0;
  virtual void renew(std::string resource, std::string owner, std::optional<Kind> kind, Nanos ttl,
                     DoneHandler&& handler) = 0;
  virtual void force_release(std::string resource,
                             std::function<void(std::error_code, std::size_t)>&& h) = 0;
  virtual void inspect(std::string resource,
                       std::function<void(std::error_code, const LockInfo&)>&& h) = 0;
  virtual void locate_for(const std::string& resource,
                          const loop::ConnectionOptions::Answer& answer) = 0;
  virtual void close() noexcept = 0;
  [[nodiscard]] virtual const ServerCapabilities& capabilities() const noexcept = 0;
  [[nodiscard]] virtual const std::string& last_error() const noexcept = 0;

  class Single;
  class Cluster;

 protected:
  // The Core that granted `lease` (nullptr when it is empty or its Core is gone).
  static std::shared_ptr<Core> core_of(const Lease& lease) {
    return !lease.empty() ? std::static_pointer_cast<Core>(lease.d_->core.lock()) : nullptr;
  }
  static detail::LeaseData& data_of(const Lease& lease) { return *lease.d_; }
};

// One server (or a Sentinel-watched primary): every call goes to its Core; a lease's calls go
// to the Core that granted it.
class Client::Route::Single final : public Client::Route {
 public:
  explicit Single(std::shared_ptr<Core> core) : core_(std::move(core)) {}

  void lock(LockRequest&& req, AcquireHandler&& handler) override;
  void upgrade(LockRequest&& req, AcquireHandler&& handler) override;
  void upgrade(const Lease& shared, LockRequest&& req, AcquireHandler&& handler) override;
  void cancel(std::string_view resource, std::string_view owner) override;
  void release(const Lease& lease, DoneHandler&& handler) override;
  void renew(const Lease& lease, DoneHandler&& handler) override;
  void release(std::string resource, std::string owner, std::optional<Kind> kind,
               DoneHandler&& handler) override;
  void renew(std::string resource, std::string owner, std::optional<Kind> kind, Nanos ttl,
             DoneHandler&& handler) override;
  void force_release(std::string resource,
                     std::function<void(std::error_code, std::size_t)>&& h) override;
  void inspect(std::string resource,
               std::function<void(std::error_code, const LockInfo&)>&& h) override;
  void locate_for(const std::string& resource,
                  const loop::ConnectionOptions::Answer& answer) override;
  void close() noexcept override;
  [[nodiscard]] const ServerCapabilities& capabilities() const noexcept override;
  [[nodiscard]] const std::string& last_error() const noexcept override;

 private:
  std::shared_ptr<Core> core_;
};

// A Redis Cluster: calls by resource go through the router to their shard's Core; a lease's
// calls go to the Core that holds it now (it follows its slot); a request refused before any
// routing (invalid arguments) is answered by the seed, the Client's first Core, which stays
// as Client::connection() and sends nothing else.
class Client::Route::Cluster final : public Client::Route {
 public:
  Cluster(std::shared_ptr<Router> router, std::shared_ptr<Core> seed)
      : router_(std::move(router)), seed_(std::move(seed)) {}

  void lock(LockRequest&& req, AcquireHandler&& handler) override;
  void upgrade(LockRequest&& req, AcquireHandler&& handler) override;
  void upgrade(const Lease& shared, LockRequest&& req, AcquireHandler&& handler) override;
  void cancel(std::string_view resource, std::string_view owner) override;
  void release(const Lease& lease, DoneHandler&& handler) override;
  void renew(const Lease& lease, DoneHandler&& handler) override;
  void release(std::string resource, std::string owner, std::optional<Kind> kind,
               DoneHandler&& handler) override;
  void renew(std::string resource, std::string owner, std::optional<Kind> kind, Nanos ttl,
             DoneHandler&& handler) override;
  void force_release(std::string resource,
                     std::function<void(std::error_code, std::size_t)>&& h) override;
  void inspect(std::string resource,
               std::function<void(std::error_code, const LockInfo&)>&& h) override;
  void locate_for(const std::string& resource,
                  const loop::ConnectionOptions::Answer& answer) override;
  void close() noexcept override;
  [[nodiscard]] const ServerCapabilities& capabilities() const noexcept override;
  [[nodiscard]] const std::string& last_error() const noexcept override;

 private:
  std::shared_ptr<Router> router_;
  std::shared_ptr<Core> seed_;
};

}  // namespace lockwire::lock
