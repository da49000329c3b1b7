// Client::Router: routing a lock::Client's calls over a Redis Cluster (router.hpp): the slot map,
// the shards' Cores and their links (shard_link.hpp), redirects and retries, the routed calls.
// The masters' vouch polls are in router_vouch.cpp.
#include "router.hpp"

#include <algorithm>
#include <cctype>

#include "lockwire/resp/reply.hpp"
#include "shard_link.hpp"

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
  map_too_old = false;
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
      if (!m.covers_all()) return fill_from_slots(std::move(m));
      map = std::move(m);
      index_shards();
      return refreshed(true);  // the connection is kept for the next refresh
    }
    why = "unexpected reply to CLUSTER SHARDS";
  } else if (r.size() == 1) {
    const resp::Frame f = r[0];
    const std::size_t v = resp::value_index(f);
    why = v < f.size() ? std::string(f[v].value) : ec.message();
    // Redis 6.2 knows CLUSTER SLOTS but not SHARDS: say that it is too old, not just the error.
    std::string lower = why;
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (lower.find("unknown subcommand") != std::string::npos) {
      map_too_old = true;
      why +=
          " (CLUSTER SHARDS came with Redis 7.0: this node is older than lockwire's minimum, "
          "Redis 7.0 or Valkey 7.2)";
    }
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

// A map with unserved slots: a real hole (CLUSTERDOWN), or Redis 7.2's CLUSTER SHARDS after a
// failover, which shows the promoted replica's shard without its slots. CLUSTER SLOTS, asked of
// the same node, names who serves them; it only fills holes (SHARDS stays the source of ids and
// health). Never asked of a map without holes, so the common refresh stays one command.
void Client::Router::fill_from_slots(loop::cluster::SlotMap m) {
  std::weak_ptr<Router> w = weak_from_this();
  loop::RequestOptions ro;
  ro.timeout = base.connect_timeout * 2;
  asking->command(
      {"CLUSTER", "SLOTS"},
      [w, m = std::make_shared<loop::cluster::SlotMap>(std::move(m))](
          std::error_code ec, const loop::Replies& r) mutable {
        auto self = w.lock();
        if (!self || self->closed) return;
        loop::cluster::SlotMap slots;
        // Without an answer the SHARDS map stands as it is, holes and all.
        if (!ec && r.size() == 1 && slots.parse_slots(r[0])) m->fill_holes(slots);
        self->map = std::move(*m);
        self->index_shards();
        self->refreshed(true);
      },
      ro);
}

void Client::Router::refreshed(bool ok) {
  if (ok) {
    have_map = true;
    map_at = loop.now();
    sync_askers();
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
    fn(&shard_core(shard));
  };
  if (have_map) return pick(true);
  refresh(std::move(pick));
}

Client::Core& Client::Router::shard_core(std::uint16_t shard) {
  auto& c = shards[shard];
  if (!c) c = make_core(shard);
  return *c;
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
  // A MOVED to a node the map has as the primary of another shard is a slot that migrated:
  // the call is routed there (Router::again) and this connection stays. A MOVED to any other
  // node (the replica promoted in a failover) means this server was demoted: leave and locate.
  // Dropping on every MOVED failed the pipelined requests with it as outcome-unknown, whose
  // withdrawals got MOVED again: a waiter reconnected ~200 times a second until its deadline
  // (cluster swarm, seeds 3006102, 3006614).
  o.leave_on_moved = [w, shard](std::string_view moved) {
    auto self = w.lock();
    if (!self || self->closed) return true;
    const auto r = loop::cluster::parse_redirect(moved);
    if (!r) return true;
    // Stay iff the target is a primary of the map's and not the one of this shard's first slot.
    const auto* first = self->map.primary_for(shard);
    for (const auto& p : self->map.primaries()) {
      if (p.host == r->host && p.port == r->port) return first != nullptr && *first == p;
    }
    return true;
  };
  auto c = Core::create(loop, std::move(o), opts, regressions, link(opts.cluster_vouch));
  c->notice_key = protocol::notice_key(opts.prefix) + "{" + tag_for(shard) + "}";
  if (opts.cluster_vouch) {
    // Nothing counts before the masters vouch for the primary (vouch_core sets it).
    c->shard_vouch = c->horizon = loop::MonoTime{};
  }
  c->conn->start();
  if (!topology_timer && opts.cluster_refresh > Nanos{0}) {
    topology_timer = loop.make_timer([w] {
      if (auto self = w.lock(); self && !self->closed) self->check_topology();
    });
    topology_timer->start(opts.cluster_refresh, opts.cluster_refresh);
  }
  if (opts.cluster_vouch) {
    loop.post([w] {
      if (auto self = w.lock(); self && !self->closed) self->sync_askers();
    });
  }
  return c;
}

void Client::Router::check_topology() {
  std::weak_ptr<Router> w = weak_from_this();
  refresh([w](bool ok) {
    auto self = w.lock();
    if (!self || self->closed || !ok) return;
    self->rehome_all();  // leases of slots that moved (a finished migration)
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

void Client::Router::close() noexcept {
  closed = true;
  if (topology_timer) topology_timer->stop();
  topology_timer.reset();
  for (auto& [k, c] : shards) c->shutdown();
  for (auto& [k, c] : extra) c->shutdown();
  timers.clear();
  asking.reset();
  if (vouch_timer) vouch_timer->stop();
  askers.clear();
  for (auto& f : std::exchange(refresh_waiters, {})) {
    try {
      f(false);
    } catch (...) {  // destructors never throw
    }
  }
}

// --- ASK targets, MOVED, leases that follow their slot ----------------------------------------

// The router's end of its shard Cores' links (shard_link.hpp). It holds the router weakly: a
// Core may outlive a closed router in a handler in flight, and is then told nothing.
class Client::Router::Link final : public Core::ShardLink {
 public:
  Link(std::weak_ptr<Router> r, bool vouches) : router_(std::move(r)), vouches_(vouches) {}

  loop::Connection* node(const std::string& host, std::uint16_t port) override {
    auto self = live();
    return self ? self->ask_target(host, port) : nullptr;
  }
  void moved(const loop::cluster::Redirect& r) override {
    // From inside the refused call's handler: patch and move leases from the loop, after it.
    auto self = live();
    if (!self) return;
    self->loop.post([w = router_, r] {
      auto s = w.lock();
      if (!s || s->closed) return;
      s->map.moved(r.slot, r.host, r.port);
      s->index_shards();
      s->rehome(r.slot);
    });
  }
  void leave_moved(const loop::cluster::Redirect& r, const protocol::Keys& keys,
                   std::vector<std::string> leaving, int budget) override {
    auto self = live();
    if (!self) return;
    self->loop.post([w = router_, r, keys, leaving = std::move(leaving), budget]() mutable {
      auto s = w.lock();
      if (!s || s->closed) return;
      s->map.moved(r.slot, r.host, r.port);
      s->index_shards();
      const std::uint16_t key = s->shard_of(r.slot);
      if (key == kNoShard) return;
      auto q = std::make_shared<Queue>();
      q->keys = keys;
      s->shard_core(key).hand_on(q, std::move(leaving), budget);
    });
  }
  void probed(Core& c) override {
    if (!vouches_) return;
    if (auto self = live()) self->vouch_core(c, true);
  }

 private:
  std::shared_ptr<Router> live() const {
    auto self = router_.lock();
    return self && !self->closed ? self : nullptr;
  }
  std::weak_ptr<Router> router_;
  bool vouches_;  // a shard Core under the masters' vouch (cluster_vouch); ASK targets are not
};

std::shared_ptr<Client::Core::ShardLink> Client::Router::link(bool vouches) {
  return std::make_shared<Link>(weak_from_this(), vouches);
}

loop::Connection* Client::Router::ask_target(const std::string& host, std::uint16_t port) {
  if (!have_map) return nullptr;
  for (std::uint32_t s = 0; s < loop::cluster::kSlots; ++s) {
    const auto* n = map.primary_for(static_cast<std::uint16_t>(s));
    if (n == nullptr || n->host != host || n->port != port) continue;
    return shard_core(shard_key[s]).conn.get();
  }
  // A node that serves no slot yet (being filled): a Core of its own, at that address.
  const std::string at = host + ":" + std::to_string(port);
  auto& c = extra[at];
  if (!c) {
    loop::ConnectionOptions o = base;
    o.seeds.clear();
    o.sentinel.reset();
    o.locate = nullptr;
    o.endpoint.host = host;
    o.endpoint.port = port;
    c = Core::create(loop, std::move(o), opts, regressions, link(false));
    c->conn->start();
  }
  return c->conn.get();
}

void Client::Router::move_lease(Core& from, Core& to, const LeasePtr& d) {
  from.stop_lease_timers(d);
  Core::drop_lease_timers(d);  // bound to `from`: made again for `to`
  from.forget(d);
  d->core = to.weak_from_this();
  to.leases[d->registry_key] = d;
  to.arm_lease_timers(d);
}

void Client::Router::rehome(std::uint16_t slot) {
  const std::uint16_t key = shard_of(slot);
  if (key == kNoShard) return;
  std::vector<std::pair<Core*, LeasePtr>> moving;
  auto collect = [&](Core& c) {
    for (auto& [k, wl] : c.leases) {
      auto d = wl.lock();
      if (d && d->state.load() == LeaseState::held &&
          loop::cluster::key_slot(d->keys.holders) == slot) {
        moving.emplace_back(&c, std::move(d));
      }
    }
  };
  for (auto& [k, c] : shards) {
    if (k != key) collect(*c);
  }
  for (auto& [k, c] : extra) collect(*c);
  if (moving.empty()) return;
  Core& to = shard_core(key);
  for (auto& [from, d] : moving) move_lease(*from, to, d);
}

void Client::Router::rehome_all() {
  std::vector<std::uint16_t> slots;
  auto collect = [&](std::uint16_t key, Core& c) {
    for (auto& [k, wl] : c.leases) {
      auto d = wl.lock();
      if (!d || d->state.load() != LeaseState::held) continue;
      const std::uint16_t s = loop::cluster::key_slot(d->keys.holders);
      if (shard_of(s) != key && shard_of(s) != kNoShard) slots.push_back(s);
    }
  };
  for (auto& [k, c] : shards) collect(k, *c);
  for (auto& [k, c] : extra) collect(kNoShard, *c);
  std::sort(slots.begin(), slots.end());
  slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
  for (std::uint16_t s : slots) rehome(s);
}

void Client::Router::follow_slot(const detail::LeaseData& d) {
  const std::uint16_t key = shard_of(loop::cluster::key_slot(d.keys.holders));
  if (key == kNoShard || d.state.load() != LeaseState::held) return;
  auto it = shards.find(key);
  if (it != shards.end() && it->second == d.core.lock()) return;
  rehome(loop::cluster::key_slot(d.keys.holders));
}

// --- trying again ----------------------------------------------------------------------------------

// The retry delay of a call that found its slot unserved (TRYAGAIN, CLUSTERDOWN, or a map with
// no primary for it): 10 ms doubling to 200 ms, jittered to [d/2, d], while the retry still
// starts before the deadline.
std::optional<Nanos> Client::Router::busy_backoff(Tries& t) {
  Nanos d = std::chrono::milliseconds(10);
  for (int i = 0; i < t.busy && d < std::chrono::milliseconds(200); ++i) d *= 2;
  d = std::min<Nanos>(d, std::chrono::milliseconds(200));
  const auto half = d.count() / 2;
  d = Nanos(half + static_cast<std::int64_t>(loop.random() % static_cast<std::uint64_t>(half + 1)));
  if (loop.now() + d >= t.deadline) return std::nullopt;
  ++t.busy;
  return d;
}

std::optional<Nanos> Client::Router::again(Core& c, const Failure& f, Tries& t) {
  if (closed) return std::nullopt;
  const Ec ec = f.ec;
  const auto& r = f.redirect;
  // MOVED: refused (server_refused), or a WATCH refused (protocol: see ask.cpp).
  if ((ec == Errc::server_refused || ec == Errc::protocol) && r &&
      r->kind == loop::cluster::Redirect::Kind::moved && t.redirects < kMaxRedirects) {
    ++t.redirects;
    map.moved(r->slot, r->host, r->port);
    index_shards();
    if (auto* m = c.metrics()) m->on_redirect("MOVED");
    return Nanos{0};
  }
  if (ec != Errc::server_unavailable || f.busy == Failure::Busy::no) return std::nullopt;
  // TRYAGAIN / CLUSTERDOWN: the command did not run.
  const auto d = busy_backoff(t);
  if (!d) return std::nullopt;
  if (auto* m = c.metrics()) {
    m->on_redirect(f.busy == Failure::Busy::clusterdown ? "CLUSTERDOWN" : "TRYAGAIN");
  }
  return d;
}

void Client::Router::later(Nanos d, std::function<void()> fn) {
  if (d <= Nanos{0}) return fn();
  const std::uint64_t id = ++next_timer;
  std::weak_ptr<Router> w = weak_from_this();
  auto t = loop.make_timer([w, id, fn = std::move(fn)] {
    auto self = w.lock();
    if (!self || self->closed) return;
    // The timer goes from the loop, not from inside its own callback.
    self->loop.post([w, id] {
      if (auto s = w.lock()) s->timers.erase(id);
    });
    fn();
  });
  t->start(d);
  timers[id] = std::move(t);
}

std::error_code Client::Router::spans_slots(const std::string& resource) {
  const protocol::Keys k = protocol::make_keys(opts.prefix, resource);
  const std::uint16_t s = loop::cluster::key_slot(k.holders);
  for (const std::string* key : {&k.fence, &k.queue}) {
    const std::uint16_t o = loop::cluster::key_slot(*key);
    if (o == s) continue;
    refused_error = resource + ": its keys would span slots (" + k.holders + " in slot " +
                std::to_string(s) + ", " + *key + " in slot " + std::to_string(o) +
                "): the key prefix must not contain '{' or '}'; nothing was sent";
    return Errc::invalid_argument;
  }
  return {};
}

// --- routed operations -----------------------------------------------------------------------------

void Client::Router::lock(LockRequest req, AcquireHandler handler, std::optional<Tries> tries) {
  detail::InCall call(loop);
  if (!tries) {
    handler = call.wrap(std::move(handler));
    if (auto ec = spans_slots(req.resource)) {
      return loop.post([self = shared_from_this(), h = std::move(handler), ec] {
        self->answer(Failure(ec, self->refused_error));
        h(ec, Lease{});
      });
    }
    tries = Tries{0, 0, loop.now() + req.wait, {}};
  }
  std::string resource = req.resource;
  with_core(resource, [self = shared_from_this(), req = std::move(req), t = *tries,
                       handler = std::move(handler)](Core* c) mutable {
    if (c == nullptr) {
      if (self->closed) {
        self->answer(Failure(Errc::closed, "the client is closed"));
        return handler(Errc::closed, Lease{});
      }
      // The map has no primary for the slot (a hole: what CLUSTERDOWN says): tried again
      // within the wait, as a CLUSTERDOWN answer would be; past it, the answer of a slot not
      // served, with the last server's words when one answered (else the map's).
      if (self->have_map) {
        if (auto d = self->busy_backoff(t)) {
          return self->later(*d, [self, req = std::move(req), t,
                                  handler = std::move(handler)]() mutable {
            req.wait = std::max(Nanos{0}, t.deadline - self->loop.now());
            self->lock(std::move(req), std::move(handler), t);
          });
        }
        if (t.busy > 0) {
          // The words of the busy answer that started the backoff, when a server gave one.
          self->answer(Failure(Errc::server_unavailable,
                               t.words.empty() ? self->map_error : t.words));
          return handler(Errc::server_unavailable, Lease{});
        }
      }
      const Ec ec = self->map_too_old && !self->have_map ? Ec(Errc::unsupported_server)
                                                         : Ec(Errc::connection);
      self->answer(Failure(ec, self->map_error));
      return handler(ec, Lease{});
    }
    // The wait left, not the wait asked: with_core may have waited for a map or a connection
    // (partition swarm, seed 5000282: a wait answered 700 ms past its deadline).
    req.wait = std::max(Nanos{0}, t.deadline - self->loop.now());
    LockRequest again = req;
    c->lock(std::move(req), {}, [self, c, again = std::move(again), t,
                                 handler = std::move(handler)](const Failure& f, Lease l) mutable {
      self->last = c;
      if (auto d = self->again(*c, f, t)) {
        t.words = f.words;
        return self->later(*d, [self, again = std::move(again), t,
                                handler = std::move(handler)]() mutable {
          again.wait = std::max(Nanos{0}, t.deadline - self->loop.now());
          self->lock(std::move(again), std::move(handler), t);
        });
      }
      self->answer(f);
      if (!f.ec) self->words_of_loss(l);
      handler(f.ec, std::move(l));
    });
  });
}

void Client::Router::words_of_loss(const Lease& lease) {
  if (lease.empty() || !lease.d_->on_lost) return;
  auto& d = *lease.d_;
  // The Core holding the lease when it is lost (it may have moved shards) says why.
  d.on_lost = [w = weak_from_this(), data = std::weak_ptr<detail::LeaseData>(lease.d_),
               inner = std::move(d.on_lost)](std::error_code why) {
    auto self = w.lock();
    auto dd = data.lock();
    if (self && dd) self->words_from = static_cast<const Core*>(dd->core.lock().get());
    inner(why);
  };
}

void Client::Router::by_owner(bool release, std::string resource, std::string owner,
                              std::optional<Kind> kind, Nanos ttl, DoneHandler handler,
                              std::optional<Tries> tries) {
  detail::InCall call(loop);
  if (!tries) {
    handler = call.wrap(std::move(handler));
    if (auto ec = spans_slots(resource)) {
      return loop.post([self = shared_from_this(), h = std::move(handler), ec] {
        self->answer(Failure(ec, self->refused_error));
        h(ec);
      });
    }
    tries = Tries{0, 0, loop.now() + kBusyBudget, {}};
  }
  const std::string res = resource;
  with_core(res, [self = shared_from_this(), release, resource = std::move(resource),
                  owner = std::move(owner), kind, ttl, t = *tries,
                  handler = std::move(handler)](Core* c) mutable {
    self->last = c;
    if (c == nullptr) {
      const Failure f = self->unserved();
      self->answer(f);
      return handler(f.ec);
    }
    auto done = [self, c, release, resource, owner, kind, ttl, t,
                 handler = std::move(handler)](const Failure& f) mutable {
      self->last = c;
      if (auto d = self->again(*c, f, t)) {
        return self->later(*d, [=, handler = std::move(handler)]() mutable {
          self->by_owner(release, resource, owner, kind, ttl, std::move(handler), t);
        });
      }
      self->answer(f);
      handler(f.ec);
    };
    if (release) {
      c->release(resource, owner, kind, std::move(done));
    } else {
      c->renew(resource, owner, kind, ttl, std::move(done));
    }
  });
}

void Client::Router::renew_lease(const Lease& lease, DoneHandler handler,
                                 std::optional<Tries> tries) {
  detail::InCall call(loop);
  if (!tries) {
    handler = call.wrap(std::move(handler));
    tries = Tries{0, 0, loop.now() + kBusyBudget, {}};
  }
  if (!lease.empty()) follow_slot(*lease.d_);
  auto c = !lease.empty() ? std::static_pointer_cast<Core>(lease.d_->core.lock()) : nullptr;
  if (!c) {
    return loop.post([self = shared_from_this(), h = std::move(handler)] {
      self->answer(Failure(Errc::closed, "the client is closed"));
      h(Errc::closed);
    });
  }
  last = c.get();
  c->renew(lease, [self = shared_from_this(), c, lease, t = *tries,
                   handler = std::move(handler)](const Failure& f) mutable {
    self->last = c.get();
    if (auto d = self->again(*c, f, t); d && lease.state() == LeaseState::held) {
      // After a MOVED the lease moves to its new shard's Core (posted by refusal()): go there.
      if (*d == Nanos{0}) d = Nanos(1);
      return self->later(*d, [self, lease, t, handler = std::move(handler)]() mutable {
        self->renew_lease(lease, std::move(handler), t);
      });
    }
    self->answer(f);
    handler(f.ec);
  });
}

void Client::Router::force_release(std::string resource,
                                   std::function<void(std::error_code, std::size_t)> h,
                                   std::optional<Tries> tries) {
  detail::InCall call(loop);
  if (!tries) {
    h = call.wrap(std::move(h));
    if (auto ec = spans_slots(resource)) {
      return loop.post([self = shared_from_this(), h = std::move(h), ec] {
        self->answer(Failure(ec, self->refused_error));
        h(ec, 0);
      });
    }
    tries = Tries{0, 0, loop.now() + kBusyBudget, {}};
  }
  const std::string res = resource;
  with_core(res, [self = shared_from_this(), resource = std::move(resource), t = *tries,
                  h = std::move(h)](Core* c) mutable {
    self->last = c;
    if (c == nullptr) {
      const Failure f = self->unserved();
      self->answer(f);
      return h(f.ec, 0);
    }
    c->force_release(resource, [self, c, resource, t, h = std::move(h)](
                                   const Failure& f, std::size_t n) mutable {
      self->last = c;
      if (auto d = self->again(*c, f, t)) {
        return self->later(*d, [self, resource, t, h = std::move(h)]() mutable {
          self->force_release(resource, std::move(h), t);
        });
      }
      self->answer(f);
      h(f.ec, n);
    });
  });
}

void Client::Router::inspect(std::string resource,
                             std::function<void(std::error_code, const LockInfo&)> h,
                             std::optional<Tries> tries) {
  detail::InCall call(loop);
  if (!tries) {
    h = call.wrap(std::move(h));
    if (auto ec = spans_slots(resource)) {
      return loop.post([self = shared_from_this(), h = std::move(h), ec] {
        self->answer(Failure(ec, self->refused_error));
        h(ec, LockInfo{});
      });
    }
    tries = Tries{0, 0, loop.now() + kBusyBudget, {}};
  }
  const std::string res = resource;
  with_core(res, [self = shared_from_this(), resource = std::move(resource), t = *tries,
                  h = std::move(h)](Core* c) mutable {
    self->last = c;
    if (c == nullptr) {
      const Failure f = self->unserved();
      self->answer(f);
      return h(f.ec, LockInfo{});
    }
    c->inspect(resource, [self, c, resource, t, h = std::move(h)](
                             const Failure& f, const LockInfo& info) mutable {
      self->last = c;
      if (auto d = self->again(*c, f, t)) {
        return self->later(*d, [self, resource, t, h = std::move(h)]() mutable {
          self->inspect(resource, std::move(h), t);
        });
      }
      self->answer(f);
      h(f.ec, info);
    });
  });
}

Failure Client::Router::unserved() const {
  if (closed) return Failure(Errc::closed, "the client is closed");
  return Failure(Errc::connection, map_error);
}

}  // namespace lockwire::lock
