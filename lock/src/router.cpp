// Client::Router: routing a lock::Client's calls over a Redis Cluster (router.hpp): the slot map,
// the shards' Cores, the masters' vouch polls, redirects and retries. Close to 900 lines, one
// concern per section; issue #29's next slice (the router above per-shard clients, results as
// values) reshapes it, and the vouch polls (open_asker .. on_answer) are what splits out then.
#include "router.hpp"

#include <algorithm>
#include <cctype>

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
  auto c = Core::create(loop, std::move(o), opts, regressions);
  hook(*c);
  c->notice_key = protocol::notice_key(opts.prefix) + "{" + tag_for(shard) + "}";
  if (opts.cluster_vouch) {
    // Nothing counts before the masters vouch for the primary (vouch_core sets it).
    c->shard_vouch = c->horizon = loop::MonoTime{};
    c->on_probed = [w, core = c.get()] {
      if (auto self = w.lock(); self && !self->closed) self->vouch_core(*core, true);
    };
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

// --- vouch: the masters' vouch for each shard's primary (cluster_vouch.hpp) --------------------

void Client::Router::sync_askers() {
  if (!opts.cluster_vouch || closed || shards.empty() || !have_map) return;
  std::vector<std::string> addrs;
  for (const auto& n : map.nodes()) addrs.push_back(n.host + ":" + std::to_string(n.port));
  std::sort(addrs.begin(), addrs.end());
  addrs.erase(std::unique(addrs.begin(), addrs.end()), addrs.end());
  for (auto it = askers.begin(); it != askers.end();) {
    if (std::binary_search(addrs.begin(), addrs.end(), it->first)) {
      ++it;
      continue;
    }
    // Not from inside its own handler: the connection goes from the loop.
    loop.post([a = std::shared_ptr<loop::Connection>(std::move(it->second.conn))] {});
    it = askers.erase(it);
  }
  bool added = false;
  for (const auto& a : addrs) {
    if (askers.contains(a)) continue;
    const auto n = std::find_if(
        map.nodes().begin(), map.nodes().end(),
        [&](const loop::cluster::Node& x) { return x.host + ":" + std::to_string(x.port) == a; });
    open_asker(n->host, n->port);
    added = true;
  }
  vouch.set_nodes(addrs);
  if (added) ask_nodes();
  arm_vouch_timer();
}

// A connection of its own to one node for the vouch's questions (replacing any it had).
void Client::Router::open_asker(std::string host, std::uint16_t port) {
  const std::string addr = host + ":" + std::to_string(port);  // the askers' key
  loop::ConnectionOptions o = base;
  o.endpoint.host = host;
  o.endpoint.port = port;
  o.seeds.clear();
  o.sentinel.reset();
  o.locate = nullptr;
  o.fence_abandoned = false;
  Asker& k = askers[addr];
  k.host = std::move(host);
  k.port = port;
  if (k.conn) loop.post([a = std::shared_ptr<loop::Connection>(std::move(k.conn))] {});
  k.conn = std::make_unique<loop::Connection>(loop, std::move(o));
  k.gen = ++asker_gen;
  k.asking = false;
  k.conn->start();
}

// Every poll period (faster while a shard waits for its first vouch, as with sentinels).
void Client::Router::arm_vouch_timer() {
  Nanos period = vouch.poll_period();
  const loop::MonoTime now = loop.now();
  for (const auto& [k, c] : shards) {
    if (c->shard_vouch <= now) period = std::min<Nanos>(period, std::chrono::milliseconds(100));
  }
  if (vouch_timer && period == vouch_period) return;
  vouch_period = period;
  if (!vouch_timer) {
    std::weak_ptr<Router> w = weak_from_this();
    vouch_timer = loop.make_timer([w] {
      if (auto self = w.lock(); self && !self->closed) self->ask_nodes();
    });
  }
  vouch_timer->start(period, period);
}

void Client::Router::ask_nodes() {
  std::vector<std::string> ids;
  for (const auto& p : map.primaries()) {
    if (!p.id.empty()) ids.push_back(p.id);
  }
  std::weak_ptr<Router> w = weak_from_this();
  for (auto& [addr, k] : askers) {
    if (k.asking) continue;  // one question in flight per node
    loop::RequestBuilder b;
    b.add("TIME").add("CLUSTER", "NODES").add("CONFIG", "GET", "cluster-node-timeout");
    for (const auto& id : ids) b.add("CLUSTER", "COUNT-FAILURE-REPORTS", id);
    loop::RequestOptions ro;
    // A silent node is not waited for longer than it could vouch for.
    ro.timeout = std::max<Nanos>(vouch.poll_period() * 2, std::chrono::milliseconds(500));
    k.asking = true;
    const loop::MonoTime sent = loop.now();
    k.conn->send(
        b.done(),
        [w, addr = addr, gen = k.gen, sent, ids](std::error_code ec, const loop::Replies& r) {
          auto self = w.lock();
          if (!self || self->closed) return;
          self->on_answer(addr, gen, sent, ids, ec, r);
        },
        ro);
  }
}

void Client::Router::on_answer(const std::string& addr, std::uint64_t gen, loop::MonoTime sent,
                               const std::vector<std::string>& ids, std::error_code ec,
                               const loop::Replies& r) {
  auto it = askers.find(addr);
  if (it == askers.end() || it->second.gen != gen) return;
  it->second.asking = false;
  if (r.size() == 3 + ids.size()) {
    detail::ClusterVouch::Answer a;
    a.time = r[0];
    a.nodes = r[1];
    a.config = r[2];
    for (std::size_t i = 0; i < ids.size(); ++i) a.counts.emplace_back(ids[i], r[3 + i]);
    vouch.answered(addr, sent, loop.now(), a);
  } else {
    const std::string& words = it->second.conn->last_error();
    vouch.unanswered(addr, words.empty() ? ec.message() : words);
    if (ec == loop::Errc::outcome_unknown || ec == loop::Errc::not_sent) {
      // The poll timed out. Its connection may be stuck in TCP's retransmission backoff long
      // after a partition heals (answered 25 s after the heal following two partitions, swarm
      // seed 5000241), and every later poll on it would wait behind it: a new connection is
      // answered as soon as the node can be reached.
      open_asker(it->second.host, it->second.port);  // by value: the Asker is rewritten
    }
  }
  if (!vouch.refused().empty() && !vouch_degraded) {
    vouch_degraded = true;
    if (auto* m = opts.metrics.get()) {
      m->on_degraded(
          "CONFIG GET cluster-node-timeout refused: no partition vouch, leases count "
          "up to their TTL",
          vouch.refused());
    }
  }
  for (auto& [k, c] : shards) vouch_core(*c);
  arm_vouch_timer();
}

void Client::Router::vouch_core(Core& c, bool probing) {
  if (!opts.cluster_vouch || c.closed) return;
  std::string at;
  if (probing || c.caps.probed) {
    at = c.conn->server().host + ":" + std::to_string(c.conn->server().port);
    vouched_at[&c] = at;
  } else if (auto v = vouched_at.find(&c); v != vouched_at.end()) {
    at = v->second;
  } else {
    return;  // never probed: stays unvouched
  }
  std::string id = vouch.id_of(at);
  if (id.empty()) {
    for (const auto& n : map.nodes()) {
      if (n.host + ":" + std::to_string(n.port) == at) id = n.id;
    }
  }
  const loop::MonoTime now = loop.now();
  const loop::MonoTime until = id.empty() ? loop::MonoTime{} : vouch.until(id, now);
  std::string detail = id.empty() ? at + " is not a node we know" : vouch.explain(id, now);
  if (until != c.shard_vouch) {
    c.set_shard_vouch(until, std::move(detail));
  } else {
    c.shard_vouch_detail = std::move(detail);
  }
  // A node names another master for these slots (a manual failover): read the map now rather
  // than at the next refresh, so the leases move before what was proved about P runs out.
  if (!probing && c.caps.probed && !id.empty() && vouch.demoted(id) &&
      now - demoted_check >= vouch.poll_period()) {
    demoted_check = now;
    check_topology();
  }
}

// --- ASK targets, MOVED, leases that follow their slot ----------------------------------------

void Client::Router::hook(Core& c) {
  std::weak_ptr<Router> w = weak_from_this();
  c.ask_target = [w](const std::string& host, std::uint16_t port) -> loop::Connection* {
    auto self = w.lock();
    return self && !self->closed ? self->ask_target(host, port) : nullptr;
  };
  c.on_redirect = [w](const loop::cluster::Redirect& r) {
    // From inside the refused call's handler: patch and move leases from the loop, after it.
    auto self = w.lock();
    if (!self || self->closed) return;
    self->loop.post([w, r] {
      auto s = w.lock();
      if (!s || s->closed) return;
      s->map.moved(r.slot, r.host, r.port);
      s->index_shards();
      s->rehome(r.slot);
    });
  };
  c.forward_leave = [w](const loop::cluster::Redirect& r, const protocol::Keys& keys,
                        std::vector<std::string> leaving, int budget) {
    auto self = w.lock();
    if (!self || self->closed) return;
    self->loop.post([w, r, keys, leaving = std::move(leaving), budget]() mutable {
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
  };
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
    c = Core::create(loop, std::move(o), opts, regressions);
    hook(*c);
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
