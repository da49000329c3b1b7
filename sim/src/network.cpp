// Simulated streams and the network that carries their bytes (SimLoop: sim_loop.cpp).
#include <algorithm>
#include <limits>
#include <utility>

#include "lockwire/sim/world.hpp"

namespace lockwire::sim {

namespace {
constexpr int kData = 0;
constexpr int kFin = 1;
constexpr int kRst = 2;
constexpr int kSynAck = 3;
constexpr std::uint64_t kNoCut = std::numeric_limits<std::uint64_t>::max();
// Linux's TCP timers (partitions, world.hpp): the minimum RTO (the simulated RTTs are far below
// it), its cap, the first SYN retransmission and the kernel's connect give-up (tcp_syn_retries 6).
constexpr Nanos kRtoMin{200ms};
constexpr Nanos kRtoMax{120s};
constexpr Nanos kSynRto{1s};
constexpr Nanos kSynGiveUp{127s};

std::pair<std::uint32_t, std::uint32_t> key_of(const Node& a, const Node& b) {
  return {std::min(a.id(), b.id()), std::max(a.id(), b.id())};
}
}  // namespace

struct Chunk {
  Nanos at;
  std::string bytes;
  int kind;
};

// A connection: side 0 is the connecting client, side 1 the accepting server.
// q[d] holds bytes in flight from side d to side 1-d, in order.
struct Conn {
  std::uint64_t id = 0;
  std::string name;
  Node* node[2] = {nullptr, nullptr};
  SimStream* end[2] = {nullptr, nullptr};
  bool accepted = false;          // the server-side stream exists
  bool done[2] = {false, false};  // no more callbacks to this side; its writes are ignored
  bool fin_sent[2] = {false, false};
  bool broken = false;  // reset or blackholed: nothing more is carried
  std::deque<Chunk> q[2];
  Nanos last_at[2] = {Nanos(0), Nanos(0)};
  std::uint64_t sent[2] = {0, 0};
  Nanos data_at[2] = {Nanos(-1), Nanos(-1)};  // when the last data sent each way arrives
  std::uint64_t cut_budget[2] = {kNoCut, kNoCut};
  // When the oldest bytes (or FIN/RST) held by a partition each way were first sent: the
  // retransmission timer runs from there (-1: nothing held).
  Nanos held_since[2] = {Nanos(-1), Nanos(-1)};
  Nanos clogged_until{0};  // clog_connection: this connection alone stalls until then
};

// ---- SimStream ----

SimStream::SimStream(Network& net, std::shared_ptr<Conn> conn, int side)
    : net_(net), conn_(std::move(conn)), side_(side) {
  conn_->end[side_] = this;
}

SimStream::~SimStream() {
  *alive_token_ = false;
  close();
}

std::uint64_t SimStream::id() const noexcept {
  return conn_->id;
}

bool SimStream::is_open() const noexcept {
  return !conn_->done[side_] && !conn_->broken;
}

void SimStream::write(std::string bytes) {
  if (conn_->done[side_] || conn_->fin_sent[side_] || bytes.empty()) return;
  pending_.append(bytes);
  if (!flush_posted_) {
    flush_posted_ = true;
    std::weak_ptr<bool> tok = alive_token_;
    conn_->node[side_]->loop().post([this, tok] {
      auto t = tok.lock();
      if (!t || !*t) return;
      flush_posted_ = false;
      flush();
    });
  }
}

void SimStream::flush() {
  if (pending_.empty()) return;
  std::string out;
  out.swap(pending_);
  net_.transmit(conn_, side_, std::move(out));
  if (shutdown_requested_ && !conn_->fin_sent[side_] && !conn_->done[side_]) {
    conn_->fin_sent[side_] = true;
    net_.send_control(conn_, side_, kFin, false);
  }
}

void SimStream::shutdown() {
  if (conn_->done[side_] || conn_->fin_sent[side_]) return;
  shutdown_requested_ = true;
  if (pending_.empty()) {
    conn_->fin_sent[side_] = true;
    net_.send_control(conn_, side_, kFin, false);
  }
}

void SimStream::close() noexcept {
  if (conn_->end[side_] == this) {
    // A kernel still sends what the process had written before close().
    if (!conn_->done[side_] && !pending_.empty()) {
      std::string out;
      out.swap(pending_);
      net_.transmit(conn_, side_, std::move(out));
    }
    conn_->end[side_] = nullptr;
    net_.side_closed(conn_, side_, true);
  }
  pending_.clear();
}

// ---- Network ----

Network::Network(World& world) : world_(world), rng_(world.fork_rng("network")) {}
Network::~Network() {
  for (auto& [id, c] : conns_) {
    for (auto*& e : c->end) e = nullptr;
  }
}

void Network::listen(Node& node, std::uint16_t port, AcceptFn on_accept) {
  listeners_[{node.id(), port}] = Listener{&node, std::move(on_accept)};
}
void Network::unlisten(Node& node, std::uint16_t port) {
  listeners_.erase({node.id(), port});
}
void Network::add_address(std::string address, Node& node) {
  addresses_[std::move(address)] = &node;
}

LinkOptions& Network::link(const Node& a, const Node& b) {
  auto [it, fresh] = links_.try_emplace(key_of(a, b), default_link_);
  return it->second;
}

void Network::clog(const Node& a, const Node& b, Nanos d) {
  auto& until = clogged_until_[key_of(a, b)];
  until = std::max(until, world_.now() + d);
  world_.trace().record(world_.now(), a.name() + "<->" + b.name(), "clog",
                        std::to_string(d.count()) + "ns");
}

Nanos Network::world_now() const noexcept {
  return world_.now();
}

Nanos Network::partition(const std::vector<const Node*>& a, const std::vector<const Node*>& b,
                         Nanos d) {
  const Nanos heal = world_.now() + d;
  std::string who;
  for (const Node* x : a) who += (who.empty() ? "" : ",") + x->name();
  who += " | ";
  bool first = true;
  for (const Node* y : b) {
    who += (first ? "" : ",") + y->name();
    first = false;
  }
  for (const Node* x : a) {
    for (const Node* y : b) {
      if (x == y) continue;
      auto& until = cut_until_[key_of(*x, *y)];
      until = std::max(until, heal);
    }
  }
  world_.trace().record(world_.now(), who, "partition", std::to_string(d.count()) + "ns");
  for (const auto& fn : partition_listeners_) fn();
  return heal;
}

Nanos Network::cut_until(const Node& a, const Node& b) const {
  auto it = cut_until_.find(key_of(a, b));
  return it == cut_until_.end() ? Nanos(-1) : it->second;
}

Nanos Network::retransmit_at(const Node& from, const Node& to, Nanos first_sent) const {
  const Nanos heal = cut_until(from, to);
  if (heal <= world_.now()) return world_.now();
  // Exponential backoff from the first transmission: first_sent + 200 ms, + 400 ms, ...
  Nanos rto = kRtoMin;
  Nanos t = first_sent + rto;
  while (t < heal) {
    rto = std::min(rto * 2, kRtoMax);
    t += rto;
  }
  return t;
}

// The earliest moment bytes (or a control segment) sent now on `c` in direction `dir` may leave
// the sender for good: now, or a retransmission after a partition's heal.
static Nanos held_floor(Network& net, Conn& c, int dir, Nanos now) {
  const Node& from = *c.node[dir];
  const Node& to = *c.node[1 - dir];
  if (net.reachable(from, to)) return std::max(now, c.clogged_until);
  // Nothing earlier is still waiting: a new retransmission series starts with these bytes.
  if (c.held_since[dir] < Nanos(0) || c.last_at[dir] <= now) c.held_since[dir] = now;
  return std::max(net.retransmit_at(from, to, c.held_since[dir]), c.clogged_until);
}

Nanos Network::arrival(const Node& from, const Node& to, Nanos base_min) {
  const auto k = key_of(from, to);
  auto li = links_.find(k);
  const LinkOptions& l = li == links_.end() ? default_link_ : li->second;
  Nanos base = std::max(world_.now(), base_min);
  auto ci = clogged_until_.find(k);
  if (ci != clogged_until_.end()) base = std::max(base, ci->second);
  const Nanos jitter = l.jitter > Nanos(0) ? Nanos(static_cast<std::int64_t>(rng_.below(
                                                 static_cast<std::uint64_t>(l.jitter.count()) + 1)))
                                           : Nanos(0);
  return base + l.latency + jitter;
}

std::unique_ptr<SimStream> Network::connect(Node& from, const loop::Endpoint& ep,
                                            loop::StreamHandler& handler, Nanos timeout) {
  auto c = std::make_shared<Conn>();
  c->id = next_conn_++;
  c->name = "conn" + std::to_string(c->id);
  c->node[0] = &from;
  auto stream = std::make_unique<SimStream>(*this, c, 0);
  stream->set_handler(handler);
  conns_[c->id] = c;

  Node* to = nullptr;
  if (auto a = addresses_.find(ep.host); a != addresses_.end()) to = a->second;
  if (to == nullptr) to = world_.find_node(ep.host);
  const std::string target = ep.host + ":" + std::to_string(ep.port);
  world_.trace().record(world_.now(), c->name, "connect", from.name() + " -> " + target);

  auto fail = [this, c](Nanos at, NetErrc e) {
    world_.schedule(at, c->node[0], [this, c, e] {
      if (c->done[0]) return;
      c->done[0] = true;
      c->done[1] = true;
      world_.trace().record(world_.now(), c->name, "connect-failed", make_error_code(e).message());
      SimStream* s = c->end[0];
      forget(c->id);
      if (s != nullptr && s->handler_ != nullptr) s->handler_->on_connected(make_error_code(e));
    });
  };
  if (ep.kind != loop::Endpoint::Kind::tcp || ep.tls.has_value() || to == nullptr) {
    fail(world_.now() + default_link_.latency, NetErrc::host_unknown);
    return stream;
  }
  c->node[1] = to;
  // Across a partition the SYN is retransmitted 1, 3, 7, ... s after the connect; the kernel
  // gives up after 127 s.
  Nanos syn_sent = world_.now();
  if (const Nanos heal = cut_until(from, *to); heal > world_.now()) {
    Nanos rto = kSynRto;
    syn_sent += rto;
    while (syn_sent < heal) {
      rto *= 2;
      syn_sent += rto;
    }
    if (syn_sent - world_.now() >= kSynGiveUp) {
      const Nanos limit = timeout > Nanos(0) ? std::min(timeout, kSynGiveUp) : kSynGiveUp;
      fail(world_.now() + limit, NetErrc::timed_out);
      return stream;
    }
  }
  const Nanos syn_at = arrival(from, *to, syn_sent);
  if (timeout > Nanos(0) && syn_at - world_.now() > timeout) {
    fail(world_.now() + timeout, NetErrc::timed_out);
    return stream;
  }
  // The SYN is handled by the server machine's kernel: a paused process still completes the
  // handshake (the accept callback waits); a dead one refuses.
  const std::uint16_t port = ep.port;
  world_.schedule(syn_at, nullptr, [this, c, to, port, fail] {
    if (c->done[0]) {
      forget(c->id);
      return;
    }
    auto it = listeners_.find({to->id(), port});
    const auto lk = links_.find(key_of(*c->node[0], *to));
    const bool refuse =
        lk != links_.end() ? lk->second.refuse_connects : default_link_.refuse_connects;
    if (it == listeners_.end() || !to->alive() || refuse) {
      fail(arrival(*to, *c->node[0], Nanos(0)), NetErrc::refused);
      return;
    }
    // SYN-ACK travels back in the server->client byte order, so it precedes any reply bytes.
    send_control(c, 1, kSynAck, false);
    world_.schedule(world_.now(), to, [this, c, to, port] {
      if (c->done[1]) return;
      auto li = listeners_.find({to->id(), port});
      if (li == listeners_.end()) {
        send_control(c, 1, kRst, false);
        c->done[1] = true;
        return;
      }
      world_.trace().record(world_.now(), c->name, "accept", to->name());
      auto server_end = std::make_unique<SimStream>(*this, c, 1);
      c->accepted = true;
      li->second.fn(std::move(server_end));
      deliver_due(c, 0);
    });
  });
  return stream;
}

void Network::schedule_delivery(const std::shared_ptr<Conn>& c, int dir, Nanos at) {
  Node* receiver = c->node[1 - dir];
  world_.schedule(at, receiver, [this, c, dir] { deliver_due(c, dir); });
}

void Network::send_control(const std::shared_ptr<Conn>& c, int dir, int kind, bool drop_in_flight) {
  if (c->node[1 - dir] == nullptr) return;
  if (drop_in_flight) c->q[dir].clear();
  const Nanos floor = held_floor(*this, *c, dir, world_.now());
  Nanos at = arrival(*c->node[dir], *c->node[1 - dir], std::max(c->last_at[dir], floor));
  c->last_at[dir] = at;
  c->q[dir].push_back(Chunk{at, {}, kind});
  schedule_delivery(c, dir, at);
}

void Network::transmit(const std::shared_ptr<Conn>& c, int side, std::string bytes) {
  if (c->done[side] || c->broken || c->node[1 - side] == nullptr || bytes.empty()) return;
  bool cut_now = false;
  if (c->cut_budget[side] != kNoCut) {
    if (bytes.size() >= c->cut_budget[side]) {
      bytes.resize(c->cut_budget[side]);
      cut_now = true;
    } else {
      c->cut_budget[side] -= bytes.size();
    }
  }
  c->sent[side] += bytes.size();
  if (!bytes.empty()) {
    world_.trace().record(world_.now(), c->name, side == 0 ? "c>s" : "s>c", bytes);
    const Node& from = *c->node[side];
    const Node& to = *c->node[1 - side];
    auto li = links_.find(key_of(from, to));
    const std::uint32_t split = (li == links_.end() ? default_link_ : li->second).split_per_million;
    std::vector<std::size_t> cuts;
    if (bytes.size() > 1 && split > 0 && rng_.chance(split)) {
      const std::size_t pieces = 2 + rng_.below(3);
      for (std::size_t i = 0; i + 1 < pieces; ++i) cuts.push_back(1 + rng_.below(bytes.size() - 1));
      std::sort(cuts.begin(), cuts.end());
      cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    }
    cuts.push_back(bytes.size());
    const Nanos floor = held_floor(*this, *c, side, world_.now());
    std::size_t prev = 0;
    for (std::size_t cut : cuts) {
      const Nanos at = arrival(from, to, std::max(c->last_at[side], floor));
      c->last_at[side] = at;
      c->data_at[side] = at;
      if (cuts.size() == 1) {
        c->q[side].push_back(Chunk{at, std::move(bytes), kData});
      } else {
        c->q[side].push_back(Chunk{at, bytes.substr(prev, cut - prev), kData});
      }
      prev = cut;
      schedule_delivery(c, side, at);
    }
  }
  if (cut_now) {
    c->cut_budget[side] = kNoCut;
    world_.trace().record(world_.now(), c->name, "cut",
                          std::string(side == 0 ? "c>s" : "s>c") + " after " +
                              std::to_string(c->sent[side]) + " bytes");
    send_control(c, side, kRst, false);
    send_control(c, 1 - side, kRst, true);
    c->broken = true;
  }
}

void Network::deliver_due(const std::shared_ptr<Conn>& c, int dir) {
  const int r = 1 - dir;
  while (!c->q[dir].empty() && c->q[dir].front().at <= world_.now()) {
    if (r == 1 && !c->accepted) return;  // the accept callback has not run yet
    Chunk ch = std::move(c->q[dir].front());
    c->q[dir].pop_front();
    if (c->done[r]) continue;
    SimStream* s = c->end[r];
    loop::StreamHandler* h = s != nullptr ? s->handler_ : nullptr;
    switch (ch.kind) {
      case kData:
        if (h != nullptr) h->on_data(ch.bytes);
        break;
      case kSynAck:
        world_.trace().record(world_.now(), c->name, "connected");
        if (h != nullptr) h->on_connected({});
        break;
      case kFin:
      case kRst: {
        c->done[r] = true;
        world_.trace().record(world_.now(), c->name, ch.kind == kFin ? "eof" : "reset",
                              r == 0 ? "client side" : "server side");
        if (c->done[0] && c->done[1]) forget(c->id);
        if (h != nullptr)
          h->on_closed(make_error_code(ch.kind == kFin ? NetErrc::eof : NetErrc::reset));
        break;
      }
      default:
        break;
    }
  }
}

void Network::side_closed(const std::shared_ptr<Conn>& c, int side, bool send_fin) {
  if (c->done[side]) {
    if (c->done[1 - side]) forget(c->id);
    return;
  }
  c->done[side] = true;
  world_.trace().record(world_.now(), c->name, "close", side == 0 ? "client side" : "server side");
  if (send_fin && !c->broken && !c->fin_sent[side]) {
    c->fin_sent[side] = true;
    send_control(c, side, kFin, false);
  }
  if (c->done[0] && c->done[1]) forget(c->id);
}

void Network::node_died(Node& n, bool crashed) {
  std::vector<std::shared_ptr<Conn>> hit;
  for (auto& [id, c] : conns_)
    if (c->node[0] == &n || c->node[1] == &n) hit.push_back(c);
  for (auto& c : hit) {
    for (int side = 0; side < 2; ++side) {
      if (c->node[side] != &n || c->done[side]) continue;
      if (c->end[side] != nullptr) c->end[side]->pending_.clear();
      c->done[side] = true;
      if (!crashed && !c->broken && !c->fin_sent[side]) {
        c->fin_sent[side] = true;
        send_control(c, side, kFin, false);
      }
    }
    if (c->done[0] && c->done[1]) forget(c->id);
  }
  // A dead process listens no more; its host re-listens after restart.
  for (auto it = listeners_.begin(); it != listeners_.end();) {
    if (it->second.node == &n) {
      it = listeners_.erase(it);
    } else {
      ++it;
    }
  }
}

void Network::forget(std::uint64_t id) {
  if (auto it = conns_.find(id); it != conns_.end()) {
    const Conn& c = *it->second;
    ended_[id] = Ended{{c.sent[0], c.sent[1]}, {c.data_at[0], c.data_at[1]}};
    conns_.erase(it);
  }
}

std::vector<std::uint64_t> Network::connections_of(const Node& n) const {
  std::vector<std::uint64_t> out;
  for (auto& [id, c] : conns_)
    if (c->node[0] == &n || c->node[1] == &n) out.push_back(id);
  return out;
}

std::vector<std::uint64_t> Network::connections() const {
  std::vector<std::uint64_t> out;
  for (auto& [id, c] : conns_) out.push_back(id);
  return out;
}

void Network::cut_after(std::uint64_t conn, bool to_server, std::uint64_t after_bytes) {
  auto it = conns_.find(conn);
  if (it == conns_.end()) return;
  auto c = it->second;
  const int side = to_server ? 0 : 1;
  if (after_bytes == 0) {
    world_.trace().record(world_.now(), c->name, "cut", "now");
    send_control(c, side, kRst, false);
    send_control(c, 1 - side, kRst, true);
    c->broken = true;
    return;
  }
  c->cut_budget[side] = after_bytes;
}

void Network::clog_connection(std::uint64_t conn, Nanos d) {
  auto it = conns_.find(conn);
  if (it == conns_.end()) return;
  auto& c = *it->second;
  c.clogged_until = std::max(c.clogged_until, world_.now() + d);
  world_.trace().record(world_.now(), c.name, "clog", std::to_string(d.count()) + "ns");
}

void Network::reset(std::uint64_t conn) {
  auto it = conns_.find(conn);
  if (it == conns_.end()) return;
  auto c = it->second;
  if (c->broken) return;
  world_.trace().record(world_.now(), c->name, "reset");
  send_control(c, 0, kRst, true);
  send_control(c, 1, kRst, true);
  c->broken = true;
}

void Network::half_open(std::uint64_t conn) {
  auto it = conns_.find(conn);
  if (it == conns_.end()) return;
  auto c = it->second;
  world_.trace().record(world_.now(), c->name, "half-open");
  c->q[0].clear();
  c->q[1].clear();
  c->broken = true;
}

std::uint64_t Network::bytes_sent(std::uint64_t conn, bool to_server) const {
  if (auto it = conns_.find(conn); it != conns_.end()) return it->second->sent[to_server ? 0 : 1];
  if (auto e = ended_.find(conn); e != ended_.end()) return e->second.sent[to_server ? 0 : 1];
  return 0;
}

Nanos Network::last_data_arrival(std::uint64_t conn, bool to_server) const {
  const int d = to_server ? 0 : 1;
  if (auto it = conns_.find(conn); it != conns_.end()) return it->second->data_at[d];
  if (auto e = ended_.find(conn); e != ended_.end()) return e->second.data_at[d];
  return Nanos(-1);
}

}  // namespace lockwire::sim
