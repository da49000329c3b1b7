// Client::Router: routing a lock::Client's calls over a Redis Cluster (router.hpp).
#include "router.hpp"

#include <algorithm>

#include "lockwire/resp/reply.hpp"

namespace lockwire::lock {

namespace {

// A hash tag whose slot is `slot`: the notice key of a shard lives in one of its own slots.
std::string tag_for(std::uint16_t slot) {
  for (std::uint32_t i = 0;; ++i) {
    std::string t = std::to_string(i);
    if (loop::cluster::key_slot(t) == slot) return t;
  }
}

}  // namespace

// --- the slot map -------------------------------------------------------------------------------

void Client::Router::refresh(std::function<void(bool)> done, bool force) {
  if (closed) return done(false);
  if (have_map && !force && loop.now() - map_at < std::chrono::milliseconds(50)) return done(true);
  refresh_waiters.push_back(std::move(done));
  if (refresh_waiters.size() > 1) return;  // one runs: answer with it
  // Every node we know of, the URL's seeds first: any one that answers suffices.
  asked = base.seeds.empty() ? std::vector<loop::Endpoint>{base.endpoint} : base.seeds;
  for (const auto& n : map.nodes()) {
    loop::Endpoint ep = base.endpoint;
    ep.host = n.host;
    ep.port = n.port;
    const bool known = std::any_of(asked.begin(), asked.end(), [&](const loop::Endpoint& a) {
      return a.host == ep.host && a.port == ep.port;
    });
    if (!known) asked.push_back(std::move(ep));
  }
  next_candidate = 0;
  map_error.clear();
  ask_next();
}

void Client::Router::ask_next() {
  if (closed) return;
  if (asking && asking->state() == loop::ConnectionState::ready) {
    next_candidate = asked.size();  // the kept connection answers first; then the others
  } else {
    asking.reset();
    if (next_candidate >= asked.size()) return refreshed(false);
  }
  if (!asking) open_asking();
  std::weak_ptr<Router> w = weak_from_this();
  loop::RequestOptions ro;
  ro.timeout = base.connect_timeout * 2;
  asking->command(
      {"CLUSTER", "SHARDS"},
      [w](std::error_code ec, const loop::Replies& r) {
        auto self = w.lock();
        if (!self || self->closed) return;
        self->on_shards(ec, r);
      },
      ro);
}

void Client::Router::open_asking() {
  loop::ConnectionOptions o = base;
  o.endpoint = asked[next_candidate++];
  o.seeds.clear();
  o.sentinel.reset();
  o.locate = nullptr;
  o.auto_reconnect = false;
  o.fence_abandoned = false;
  asking_at = o.endpoint;
  asking = std::make_unique<loop::Connection>(loop, std::move(o));
  asking->start();
}

void Client::Router::on_shards(std::error_code ec, const loop::Replies& r) {
  const std::string where = asking_at.host + ":" + std::to_string(asking_at.port);
  std::string why;
  if (!ec && r.size() == 1) {
    loop::cluster::SlotMap m;
    if (m.parse_shards(r[0]) && !m.primaries().empty()) {
      map = std::move(m);
      index_shards();
      return refreshed(true);  // the connection is kept for the next refresh
    }
    why = "unexpected reply to CLUSTER SHARDS";
  } else if (r.size() == 1) {
    const resp::Frame f = r[0];
    const std::size_t v = resp::value_index(f);
    why = v < f.size() ? std::string(f[v].value) : ec.message();
  } else {
    why = asking ? asking->last_error() : ec.message();
    if (why.empty()) why = ec.message();
  }
  // This node cannot tell: its connection goes (from the loop, not from inside its own
  // handler), and the next candidate is asked.
  loop.post([a = std::shared_ptr<loop::Connection>(std::move(asking))] {});
  if (!map_error.empty()) map_error += "; ";
  map_error += where + ": " + why;
  ask_next();
}

void Client::Router::refreshed(bool ok) {
  if (ok) {
    have_map = true;
    map_at = loop.now();
  }
  for (auto& f : std::exchange(refresh_waiters, {})) f(ok || have_map);
}

// Once per map change, not per call: each slot's shard key (the lowest slot its primary serves).
void Client::Router::index_shards() {
  std::vector<std::pair<const loop::cluster::Node*, std::uint16_t>> first;  // a few primaries
  for (std::uint32_t s = 0; s < loop::cluster::kSlots; ++s) {
    const auto* n = map.primary_for(static_cast<std::uint16_t>(s));
    if (n == nullptr) {
      shard_key[s] = kNoShard;
      continue;
    }
    auto it = std::find_if(first.begin(), first.end(), [&](const auto& f) { return *f.first == *n; });
    if (it == first.end()) it = first.insert(first.end(), {n, static_cast<std::uint16_t>(s)});
    shard_key[s] = it->second;
  }
}

std::uint16_t Client::Router::shard_of(std::uint16_t slot) const {
  return have_map ? shard_key[slot] : kNoShard;
}

// --- shard Cores ----------------------------------------------------------------------------------

void Client::Router::with_core(const std::string& resource, std::function<void(Core*)> fn) {
  const std::uint16_t slot = loop::cluster::key_slot(protocol::make_keys(opts.prefix, resource).holders);
  auto pick = [this, slot, fn = std::move(fn)](bool) {
    if (closed) return fn(nullptr);
    const std::uint16_t shard = shard_of(slot);
    if (shard == kNoShard) {
      if (map_error.empty()) map_error = "no primary serves slot " + std::to_string(slot);
      return fn(nullptr);
    }
    auto& c = shards[shard];
    if (!c) c = make_core(shard);
    fn(c.get());
  };
  if (have_map) return pick(true);
  refresh(std::move(pick));
}

std::shared_ptr<Client::Core> Client::Router::make_core(std::uint16_t shard) {
  loop::ConnectionOptions o = base;
  o.seeds.clear();
  o.sentinel.reset();
  if (const auto* n = map.primary_for(shard)) {
    o.endpoint.host = n->host;
    o.endpoint.port = n->port;
  }
  std::weak_ptr<Router> w = weak_from_this();
  o.locate = [w, shard](const loop::ConnectionOptions::Answer& answer) {
    if (auto self = w.lock(); self && !self->closed) return self->locate(shard, answer);
    answer(std::nullopt, "the client is closed");
  };
  auto c = Core::create(loop, std::move(o), opts);
  c->notice_key = protocol::notice_key(opts.prefix) + "{" + tag_for(shard) + "}";
  c->conn->start();
  if (!topology_timer && opts.cluster_refresh > Nanos{0}) {
    topology_timer = loop.make_timer([w] {
      if (auto self = w.lock(); self && !self->closed) self->check_topology();
    });
    topology_timer->start(opts.cluster_refresh, opts.cluster_refresh);
  }
  return c;
}

void Client::Router::check_topology() {
  std::weak_ptr<Router> w = weak_from_this();
  refresh([w](bool ok) {
    auto self = w.lock();
    if (!self || self->closed || !ok) return;
    for (auto& [shard, c] : self->shards) {
      const auto* n = self->map.primary_for(shard);
      if (n == nullptr || c->conn->state() != loop::ConnectionState::ready) continue;
      const loop::Endpoint& at = c->conn->server();
      if (at.host == n->host && at.port == n->port) continue;
      c->conn->relocate("the slot map names " + n->host + ":" + std::to_string(n->port) +
                        " as the primary of slot " + std::to_string(shard) + ", not " +
                        c->conn->server_address());
    }
  }, true);
}

void Client::Router::locate(std::uint16_t shard, const loop::ConnectionOptions::Answer& answer) {
  std::weak_ptr<Router> w = weak_from_this();
  refresh([w, shard, answer](bool) {
    auto self = w.lock();
    if (!self || self->closed) return answer(std::nullopt, "the client is closed");
    const auto* n = self->map.primary_for(shard);
    if (n == nullptr) {
      return answer(std::nullopt, "no primary serves slot " + std::to_string(shard) +
                                      (self->map_error.empty() ? "" : ": " + self->map_error));
    }
    loop::Endpoint ep = self->base.endpoint;
    ep.host = n->host;
    ep.port = n->port;
    answer(ep, {});
  }, true);
}

bool Client::Router::redirected(Core& c, std::error_code ec, int redirects) {
  return ec == Errc::server_refused && redirects < kMaxRedirects && moved(c);
}

bool Client::Router::moved(Core& c) {
  const auto& r = c.redirect;
  if (!r || r->kind != loop::cluster::Redirect::Kind::moved) return false;
  map.moved(r->slot, r->host, r->port);
  index_shards();
  return true;
}

void Client::Router::close() noexcept {
  closed = true;
  if (topology_timer) topology_timer->stop();
  topology_timer.reset();
  for (auto& [k, c] : shards) c->shutdown();
  asking.reset();
  for (auto& f : std::exchange(refresh_waiters, {})) {
    try {
      f(false);
    } catch (...) {  // destructors never throw
    }
  }
}

// --- routed operations -----------------------------------------------------------------------------

void Client::Router::lock(LockRequest req, AcquireHandler handler, int redirects) {
  const loop::MonoTime deadline = loop.now() + req.wait;
  std::string resource = req.resource;
  with_core(resource, [self = shared_from_this(), req = std::move(req), deadline, redirects,
                       handler = std::move(handler)](Core* c) mutable {
    if (c == nullptr) {
      self->last = nullptr;
      return handler(self->closed ? Errc::closed : Errc::connection, Lease{});
    }
    LockRequest again = req;
    c->lock(std::move(req), [self, c, again = std::move(again), deadline, redirects,
                             handler = std::move(handler)](std::error_code ec, Lease l) mutable {
      self->last = c;
      if (self->redirected(*c, ec, redirects)) {
        again.wait = std::max(Nanos{0}, deadline - self->loop.now());
        return self->lock(std::move(again), std::move(handler), redirects + 1);
      }
      handler(ec, std::move(l));
    });
  });
}

void Client::Router::by_owner(bool release, std::string resource, std::string owner,
                              std::optional<Kind> kind, Nanos ttl, DoneHandler handler,
                              int redirects) {
  const std::string res = resource;
  with_core(res, [self = shared_from_this(), release, resource = std::move(resource),
                  owner = std::move(owner), kind, ttl, redirects,
                  handler = std::move(handler)](Core* c) mutable {
    self->last = c;
    if (c == nullptr) return handler(self->closed ? Errc::closed : Errc::connection);
    auto done = [self, c, release, resource, owner, kind, ttl, redirects,
                 handler = std::move(handler)](std::error_code ec) mutable {
      self->last = c;
      if (self->redirected(*c, ec, redirects)) {
        return self->by_owner(release, std::move(resource), std::move(owner), kind, ttl,
                              std::move(handler), redirects + 1);
      }
      handler(ec);
    };
    if (release) {
      c->release(resource, owner, kind, std::move(done));
    } else {
      c->renew(resource, owner, kind, ttl, std::move(done));
    }
  });
}

void Client::Router::force_release(std::string resource,
                                   std::function<void(std::error_code, std::size_t)> h,
                                   int redirects) {
  const std::string res = resource;
  with_core(res, [self = shared_from_this(), resource = std::move(resource), redirects,
                  h = std::move(h)](Core* c) mutable {
    self->last = c;
    if (c == nullptr) return h(self->closed ? Errc::closed : Errc::connection, 0);
    c->force_release(resource, [self, c, resource, redirects, h = std::move(h)](
                                   std::error_code ec, std::size_t n) mutable {
      self->last = c;
      if (self->redirected(*c, ec, redirects)) {
        return self->force_release(std::move(resource), std::move(h), redirects + 1);
      }
      h(ec, n);
    });
  });
}

void Client::Router::inspect(std::string resource,
                             std::function<void(std::error_code, const LockInfo&)> h,
                             int redirects) {
  const std::string res = resource;
  with_core(res, [self = shared_from_this(), resource = std::move(resource), redirects,
                  h = std::move(h)](Core* c) mutable {
    self->last = c;
    if (c == nullptr) return h(self->closed ? Errc::closed : Errc::connection, LockInfo{});
    c->inspect(resource, [self, c, resource, redirects, h = std::move(h)](
                             std::error_code ec, const LockInfo& info) mutable {
      self->last = c;
      if (self->redirected(*c, ec, redirects)) {
        return self->inspect(std::move(resource), std::move(h), redirects + 1);
      }
      h(ec, info);
    });
  });
}

}  // namespace lockwire::lock
