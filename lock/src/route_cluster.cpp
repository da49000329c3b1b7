// A Client on a Redis Cluster: route.hpp. Each call is routed by the router (router.cpp); what
// is here is what the facade adds on a Cluster: which Core's words last_error() shows, and a
// lease's calls made where its slot lives now.
#include "route.hpp"

namespace lockwire::lock {

void Client::Route::Cluster::lock(LockRequest&& req, AcquireHandler&& handler) {
  // An invalid request is answered at once (by the seed, which sends nothing for it), not
  // after the router has read the slot map.
  if (seed_->validate(req)) {
    return seed_->lock(std::move(req), [r = router_, c = seed_.get(), h = std::move(handler)](
                                           std::error_code ec, Lease l) {
      r->words_from = c;  // its words are the seed's (the validation's)
      h(ec, std::move(l));
    });
  }
  router_->lock(std::move(req), std::move(handler));
}

void Client::Route::Cluster::upgrade(LockRequest&& req, AcquireHandler&& handler) {
  if (seed_->validate(req)) return seed_->upgrade(std::move(req), std::move(handler));
  detail::InCall call(seed_->loop);
  router_->with_core(req.resource, [self = router_, req = std::move(req),
                                    handler = call.wrap(std::move(handler))](Core* c) mutable {
    self->last = c;
    if (c == nullptr) {
      const Failure f = self->unserved();
      self->answer(f);
      return handler(f.ec, Lease{});
    }
    c->upgrade(std::move(req), [self, c, h = std::move(handler)](std::error_code ec, Lease l) {
      self->words_from = c;
      if (!ec) self->words_of_loss(l);
      h(ec, std::move(l));
    });
  });
}

void Client::Route::Cluster::upgrade(const Lease& shared, LockRequest&& req,
                                     AcquireHandler&& handler) {
  if (!shared.empty()) router_->follow_slot(data_of(shared));
  auto c = core_of(shared);
  if (c) router_->last = c.get();
  handler = [r = router_, from = c ? c.get() : seed_.get(), h = std::move(handler)](
                std::error_code ec, Lease l) {
    r->words_from = from;
    if (!ec) r->words_of_loss(l);
    h(ec, std::move(l));
  };
  (c ? *c : *seed_).upgrade(std::move(req), std::move(handler));
}

void Client::Route::Cluster::cancel(std::string_view resource, std::string_view owner) {
  seed_->cancel(resource, owner);
  for (auto& [k, c] : router_->shards) c->cancel(resource, owner);
}

// A lease goes back to the Core that holds it (after its slot moved: the new shard's).
void Client::Route::Cluster::release(const Lease& lease, DoneHandler&& handler) {
  if (!lease.empty()) router_->follow_slot(data_of(lease));
  auto c = core_of(lease);
  if (c) router_->last = c.get();
  handler = [r = router_, from = c ? c.get() : seed_.get(),
             h = std::move(handler)](std::error_code ec) {
    r->words_from = from;
    h(ec);
  };
  (c ? *c : *seed_).release(lease, std::move(handler));
}

void Client::Route::Cluster::renew(const Lease& lease, DoneHandler&& handler) {
  if (core_of(lease)) return router_->renew_lease(lease, std::move(handler));
  seed_->renew(lease, std::move(handler));  // empty, or its Core is gone: answered there
}

void Client::Route::Cluster::release(std::string resource, std::string owner,
                                     std::optional<Kind> kind, DoneHandler&& handler) {
  router_->by_owner(true, std::move(resource), std::move(owner), kind, Nanos{0},
                    std::move(handler));
}

void Client::Route::Cluster::renew(std::string resource, std::string owner,
                                   std::optional<Kind> kind, Nanos ttl, DoneHandler&& handler) {
  router_->by_owner(false, std::move(resource), std::move(owner), kind, ttl, std::move(handler));
}

void Client::Route::Cluster::force_release(std::string resource,
                                           std::function<void(std::error_code, std::size_t)>&& h) {
  router_->force_release(std::move(resource), std::move(h));
}

void Client::Route::Cluster::inspect(std::string resource,
                                     std::function<void(std::error_code, const LockInfo&)>&& h) {
  router_->inspect(std::move(resource), std::move(h));
}

void Client::Route::Cluster::locate_for(const std::string& resource,
                                        const loop::ConnectionOptions::Answer& answer) {
  const std::uint16_t slot =
      loop::cluster::key_slot(protocol::make_keys(seed_->opts.prefix, resource).holders);
  std::weak_ptr<Router> w = router_;
  router_->refresh([w, slot, answer](bool) {
    auto r = w.lock();
    if (!r || r->closed) return answer(std::nullopt, "the client is closed");
    const std::uint16_t shard = r->shard_of(slot);
    if (shard == Router::kNoShard) {
      return answer(std::nullopt, "no primary serves slot " + std::to_string(slot));
    }
    r->locate(shard, answer);
  });
}

void Client::Route::Cluster::close() noexcept {
  router_->close();
  seed_->shutdown();
}

const ServerCapabilities& Client::Route::Cluster::capabilities() const noexcept {
  if (router_->last != nullptr) return router_->last->caps;
  if (!router_->shards.empty()) return router_->shards.begin()->second->caps;
  return seed_->caps;
}

const std::string& Client::Route::Cluster::last_error() const noexcept {
  return router_->words_from != nullptr ? router_->words_from->last_error : router_->answered;
}

}  // namespace lockwire::lock
