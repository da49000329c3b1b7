// Client::Router's masters' vouch (ClientOptions::cluster_vouch; cluster_vouch.hpp): one plain
// connection per node of the map (an asker) polls TIME, CLUSTER NODES, cluster-node-timeout and
// the failure reports; each answer sets every shard Core's vouch of its primary. The rest of the
// router is in router.cpp.
#include "router.hpp"

namespace lockwire::lock {

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

}  // namespace lockwire::lock
