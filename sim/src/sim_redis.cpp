#include "lockwire/sim/sim_redis.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace lockwire::sim {

struct SimRedis::Peer final : loop::StreamHandler {
  SimRedis* srv = nullptr;
  std::unique_ptr<SimStream> stream;
  RedisModel::ClientId id = 0;
  bool closed = false;
  void on_connected(std::error_code) override {}
  void on_data(std::string_view bytes) override {
    if (closed) return;
    srv->model_->feed(id, bytes);
    srv->arm_tick();
  }
  void on_closed(std::error_code) override {
    if (closed) return;
    closed = true;
    srv->model_->remove_client(id);
    srv->reap();
  }
};

SimRedis::SimRedis(World& world, Node& node, SimRedisOptions options)
    : world_(world), node_(node), options_(std::move(options)) {
  RedisModel::Hooks h;
  h.write = [this](RedisModel::ClientId id, std::string_view bytes) {
    auto it = peers_.find(id);
    if (it != peers_.end() && !it->second->closed) it->second->stream->write(std::string(bytes));
  };
  h.close = [this](RedisModel::ClientId id) {
    auto it = peers_.find(id);
    if (it == peers_.end()) return;
    it->second->closed = true;
    it->second->stream->close();
    reap();
  };
  h.stall = [this](std::int64_t us) { stall(Nanos(us * 1000)); };
  h.wall_us = [this] { return node_.wall_now().since_epoch.count() / 1000; };
  h.sentinel = options_.sentinel;
  h.cluster = options_.cluster;
  h.migrate = options_.migrate;
  h.trace = [this](std::string_view what, std::string_view detail) {
    world_.trace().record(world_.now(), node_.name(), what, detail);
  };
  h.propagate = [this](int db, const std::vector<std::string>& argv) {
    for (auto& l : replicas_) {
      SimRedis* r = l.replica;
      // In-order delivery on the replication link, like the replication stream's TCP socket:
      // strictly later than the previous command, since the scheduler varies the order of
      // same-instant events by seed (found by the cluster swarm, seed 3002847: a block's
      // PEXPIREAT applied before its HSETNX on the replica, so the promoted replica held the
      // lease without a TTL).
      Nanos at = world_.now() + l.lag;
      // Across a partition the stream's bytes wait for TCP's retransmission after the heal
      // (Network::partition; repl-timeout, 60 s, is longer than any partition here).
      Network& net = world_.net();
      if (!net.reachable(node_, r->node_)) {
        if (l.held_since < Nanos(0) || l.last_at <= world_.now()) l.held_since = world_.now();
        at = std::max(at, net.retransmit_at(node_, r->node_, l.held_since) + l.lag);
      }
      l.last_at = std::max(at, l.last_at + Nanos(1));
      std::weak_ptr<bool> alive = r->alive_;
      std::shared_ptr<bool> open = l.open;
      world_.schedule(l.last_at, &r->node_, [r, alive, open, db, argv, this] {
        // Bytes in flight on a replication link that was torn down (failover) are lost.
        if (alive.expired() || !*open) return;
        r->model_->apply(db, argv);
        publish_acks();
      });
    }
  };
  model_ = std::make_unique<RedisModel>(std::move(h), world_.fork_rng("redis/" + node_.name()),
                                        options_.model);
  install_listener();
  arm_cron();
}

SimRedis::~SimRedis() {
  *alive_ = false;
  if (cron_event_ != 0) world_.cancel(cron_event_);
  if (tick_event_ != 0) world_.cancel(tick_event_);
  for (auto& [id, p] : peers_) p->closed = true;
}

loop::Endpoint SimRedis::endpoint() const {
  loop::Endpoint e;
  e.host = node_.name();
  e.port = options_.port;
  return e;
}

void SimRedis::install_listener() {
  world_.net().listen(node_, options_.port,
                      [this](std::unique_ptr<SimStream> s) { accept(std::move(s)); });
}

void SimRedis::accept(std::unique_ptr<SimStream> s) {
  auto p = std::make_unique<Peer>();
  p->srv = this;
  p->stream = std::move(s);
  p->stream->set_handler(*p);
  p->id = model_->add_client("10.0.0.1:" + std::to_string(40000 + p->stream->id()));
  peers_[p->id] = std::move(p);
}

void SimRedis::reap() {
  // Called from inside a peer's callback: move closed peers aside and free them later.
  for (auto it = peers_.begin(); it != peers_.end();) {
    if (it->second->closed) {
      graveyard_.push_back(std::move(it->second));
      it = peers_.erase(it);
    } else {
      ++it;
    }
  }
  if (graveyard_.empty()) return;
  std::weak_ptr<bool> alive = alive_;
  node_.loop().post([this, alive] {
    if (!alive.expired()) graveyard_.clear();
  });
}

void SimRedis::arm_tick() {
  const std::int64_t due_us = model_->next_deadline_us();
  if (due_us < 0) return;
  const Nanos delta = Nanos(due_us * 1000) - node_.wall_now().since_epoch;
  const Nanos at = world_.now() + std::max(delta, Nanos(0));
  if (tick_event_ != 0 && tick_at_ <= at) return;
  if (tick_event_ != 0) world_.cancel(tick_event_);
  tick_at_ = at;
  std::weak_ptr<bool> alive = alive_;
  tick_event_ = world_.schedule(at, &node_, [this, alive] {
    if (alive.expired()) return;
    tick_event_ = 0;
    model_->tick();
    arm_tick();
  });
}

void SimRedis::arm_cron() {
  std::weak_ptr<bool> alive = alive_;
  const Nanos at = node_.true_time_of_mono(node_.mono_now() + options_.cron_period);
  cron_event_ = world_.schedule(
      at, &node_,
      [this, alive] {
        if (alive.expired()) return;
        cron_event_ = 0;
        model_->cron();
        arm_cron();
        arm_tick();
      },
      /*background=*/true);
}

void SimRedis::stall(Nanos d) {
  node_.pause();
  Node* n = &node_;
  world_.schedule(world_.now() + d, nullptr, [n] { n->resume(); });
}

void SimRedis::drop_connections() {
  for (auto& [id, p] : peers_) world_.net().reset(p->stream->id());
}

void SimRedis::kill() {
  die(false);
}

void SimRedis::crash() {
  die(true);
}

void SimRedis::die(bool crashed) {
  if (!node_.alive()) return;
  if (crashed) {
    for (auto& l : replicas_) {
      *l.open = false;  // the replication stream's unsent and in-flight bytes are gone
      l.open = std::make_shared<bool>(true);
      l.last_at = Nanos(0);
    }
    node_.crash();
  } else {
    node_.kill();
  }
  for (auto& [id, p] : peers_) p->closed = true;
  model_->drop_all_clients();
  reap();
  graveyard_.clear();
  cron_event_ = 0;
  tick_event_ = 0;
}

void SimRedis::save() {
  saved_ = model_->snapshot();
  world_.trace().record(world_.now(), node_.name(), "save");
}

void SimRedis::restart(Persistence keep) {
  if (node_.alive()) kill();
  node_.restart();
  switch (keep) {
    case Persistence::none:
      model_->flush_all_data();
      break;
    case Persistence::last_save:
      model_->flush_all_data();
      if (saved_) model_->restore(*saved_);
      break;
    case Persistence::all:
      break;
  }
  install_listener();
  arm_cron();
}

void SimRedis::add_replica(SimRedis& replica, Nanos lag) {
  replicas_.push_back(Link{&replica, lag, Nanos(0)});
  replica.primary_ = this;
  replica.model_->set_replica(true, node_.name(), options_.port);
  // Full sync: the replica starts from the primary's current dataset.
  auto snap = model_->snapshot();
  replica.model_->restore(*snap);
}

void SimRedis::detach() {
  if (primary_ == nullptr) return;
  auto& v = primary_->replicas_;
  for (auto& l : v)
    if (l.replica == this) *l.open = false;
  v.erase(std::remove_if(v.begin(), v.end(), [this](const Link& l) { return l.replica == this; }),
          v.end());
  primary_->publish_acks();  // ROLE and WAIT on the old primary no longer count this replica
  primary_ = nullptr;
}

void SimRedis::publish_acks() {
  std::vector<std::pair<std::string, std::int64_t>> acks;
  for (auto& x : replicas_)
    acks.emplace_back(x.replica->node_.name() + ":" + std::to_string(x.replica->port()),
                      x.replica->model_->repl_offset());
  model_->set_replica_acks(std::move(acks));
}

void SimRedis::promote() {
  detach();
  model_->set_replica(false);
  world_.trace().record(world_.now(), node_.name(), "promote");
}

void SimRedis::demote_to_replica_of(SimRedis& primary, Nanos lag) {
  detach();
  primary.add_replica(*this, lag);
  world_.trace().record(world_.now(), node_.name(), "demote", primary.node().name());
}

}  // namespace lockwire::sim
