// A Client on one server (or a Sentinel-watched primary): route.hpp.
#include "route.hpp"

namespace lockwire::lock {

void Client::Route::Single::lock(LockRequest&& req, AcquireHandler&& handler) {
  core_->lock(std::move(req), std::move(handler));
}
void Client::Route::Single::upgrade(LockRequest&& req, AcquireHandler&& handler) {
  core_->upgrade(std::move(req), std::move(handler));
}
void Client::Route::Single::upgrade(const Lease& shared, LockRequest&& req,
                                    AcquireHandler&& handler) {
  auto c = core_of(shared);
  (c ? *c : *core_).upgrade(std::move(req), std::move(handler));
}
void Client::Route::Single::cancel(std::string_view resource, std::string_view owner) {
  core_->cancel(resource, owner);
}
void Client::Route::Single::release(const Lease& lease, DoneHandler&& handler) {
  auto c = core_of(lease);
  (c ? *c : *core_).release(lease, std::move(handler));
}
void Client::Route::Single::renew(const Lease& lease, DoneHandler&& handler) {
  auto c = core_of(lease);
  (c ? *c : *core_).renew(lease, std::move(handler));
}
void Client::Route::Single::release(std::string resource, std::string owner,
                                    std::optional<Kind> kind, DoneHandler&& handler) {
  core_->release(std::move(resource), std::move(owner), kind, std::move(handler));
}
void Client::Route::Single::renew(std::string resource, std::string owner, std::optional<Kind> kind,
                                  Nanos ttl, DoneHandler&& handler) {
  core_->renew(std::move(resource), std::move(owner), kind, ttl, std::move(handler));
}
void Client::Route::Single::force_release(std::string resource,
                                          std::function<void(std::error_code, std::size_t)>&& h) {
  core_->force_release(std::move(resource), std::move(h));
}
void Client::Route::Single::inspect(std::string resource,
                                    std::function<void(std::error_code, const LockInfo&)>&& h) {
  core_->inspect(std::move(resource), std::move(h));
}
void Client::Route::Single::locate_for(const std::string&,
                                       const loop::ConnectionOptions::Answer& answer) {
  answer(core_->conn->server(), {});
}
void Client::Route::Single::close() noexcept {
  core_->shutdown();
}
const ServerCapabilities& Client::Route::Single::capabilities() const noexcept {
  return core_->caps;
}
const std::string& Client::Route::Single::last_error() const noexcept {
  return core_->last_error;
}

}  // namespace lockwire::lock
