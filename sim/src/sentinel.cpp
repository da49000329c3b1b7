// The sentinels' state machine (sim_sentinel.hpp): a 10 Hz cron per sentinel that PINGs every
// data node and judges it down, quorum (odown), the vote, the failover's steps on the leader's
// node, the new configuration spreading to the others, and the reconfiguration of a node that
// still reports master. Timing constants are the ones measured on redis-server 7.0.15.
#include <algorithm>
#include <string>
#include <utility>

#include "lockwire/resp/encoder.hpp"
#include "sentinel_impl.hpp"

namespace lockwire::sim {

namespace {

using sentinel::kNone;

constexpr Nanos kCron{100ms};         // serverCron at hz 10 runs sentinelTimer
constexpr Nanos kPingPeriod{1s};      // SENTINEL_PING_PERIOD
constexpr Nanos kElection{50ms};      // +try-failover -> +elected-leader (measured 52 ms)
constexpr Nanos kPromoteCrash{70ms};  // +elected-leader -> REPLICAOF NO ONE applied
constexpr Nanos kPromoteGraceful{200ms};  // SENTINEL FAILOVER -> promoted (measured 0.20 s)
constexpr Nanos kSwitch{1100ms};      // start -> +switch-master (measured 1.095 / 1.106 s)
// The leader sees the promotion (failover-state reconf-slaves) and names the promoted replica
// in GET-MASTER-ADDR-BY-NAME this long before +switch-master (measured 91 ms).
constexpr Nanos kNamedEarly{90ms};
constexpr Nanos kMaxDesync{1s};       // SENTINEL_MAX_DESYNC: spread of the others' retries
constexpr Nanos kHelloPeriod{2s};     // SENTINEL_PUBLISH_PERIOD
// SENTINEL_MIN_LINK_RECONNECT_PERIOD: a link up this long whose PING waits more than half of
// down-after is closed and made again.
constexpr Nanos kMinLinkReconnect{15s};
// sentinelSelectSlave skips a replica that has not answered a PING for 5 ping periods.
constexpr Nanos kReplicaStale{5s};

std::string hex_id(Rng& rng) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id;
  for (int i = 0; i < 40; ++i) id.push_back(kHex[rng.next() % 16]);
  return id;
}

}  // namespace

// ---- set-up ------------------------------------------------------------------------------------

SimSentinels::SimSentinels(World& world, std::vector<Node*> nodes, SimRedis& primary,
                           std::vector<SimRedis*> replicas, SentinelConfig config)
    : config_(std::move(config)), impl_(std::make_unique<Impl>(*this, world)) {
  Impl& im = *impl_;
  im.rng = world.fork_rng("sentinels");
  im.data.push_back({&primary, hex_id(im.rng)});
  for (SimRedis* r : replicas) im.data.push_back({r, hex_id(im.rng)});
  im.s.resize(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    Impl::Sentinel& st = im.s[i];
    st.node = nodes[i];
    st.runid = hex_id(im.rng);
    SimRedisOptions o;
    o.port = config_.port;
    o.model.sentinel_mode = true;
    Impl* p = &im;
    o.sentinel = [p, i](const std::vector<std::string>& argv, int resp) {
      return p->reply(i, argv, resp);
    };
    st.face = std::make_unique<SimRedis>(world, *st.node, std::move(o));
    for (std::size_t d = 0; d < im.data.size(); ++d) {
      Impl::Instance in;
      in.created = world.now();
      in.link = std::make_unique<sentinel::PingLink>(*st.node, im.data[d].redis->endpoint());
      in.reported_master = d == 0;
      st.inst.push_back(std::move(in));
    }
  }
  // Links call back by index: the vectors are complete and never grow after this.
  for (std::size_t i = 0; i < im.s.size(); ++i) {
    for (std::size_t d = 0; d < im.data.size(); ++d) {
      Impl::Instance& in = im.s[i].inst[d];
      std::weak_ptr<bool> alive = im.alive;
      Impl* p = &im;
      in.link->on_reply = [p, alive, i, d](bool valid) {
        if (alive.expired()) return;
        Impl::Instance& x = p->s[i].inst[d];
        const Nanos now = p->world.now();
        x.last_reply = now;
        if (valid) {
          x.last_ok = now;
          x.pending_since = kNone;
        }
      };
      in.link->on_down = [p, alive, i, d] {
        if (alive.expired()) return;
        // A lost link counts as a PING without a reply from now (so +sdown comes down-after
        // after the loss, as measured: 1.03-1.07 s for down-after 1 s).
        Impl::Instance& x = p->s[i].inst[d];
        if (x.pending_since == kNone) x.pending_since = p->world.now();
        x.ping_now = true;
      };
    }
    // Each sentinel's timer runs at its own phase.
    im.arm_cron(i, world.now() + Nanos(static_cast<std::int64_t>(im.rng.next() % 100'000'000)));
  }
}

SimSentinels::~SimSentinels() {
  *impl_->alive = false;
}

std::size_t SimSentinels::size() const noexcept {
  return impl_->s.size();
}

SimRedis& SimSentinels::server(std::size_t i) {
  return *impl_->s.at(i).face;
}

std::vector<loop::Endpoint> SimSentinels::endpoints() const {
  std::vector<loop::Endpoint> v;
  for (const auto& st : impl_->s) v.push_back(st.face->endpoint());
  return v;
}

std::string SimSentinels::url() const {
  std::string u = "redis-sentinel://";
  for (std::size_t i = 0; i < impl_->s.size(); ++i) {
    if (i > 0) u += ",";
    u += impl_->s[i].node->name() + ":" + std::to_string(config_.port);
  }
  return u + "#" + config_.master_name;
}

std::string SimSentinels::failover(std::size_t i) {
  return impl_->start_failover(i, true);
}

SimRedis& SimSentinels::master() const {
  const Impl& im = *impl_;
  std::size_t best = 0;
  for (std::size_t i = 1; i < im.s.size(); ++i)
    if (im.s[i].config_epoch > im.s[best].config_epoch) best = i;
  return *im.data[im.s[best].master].redis;
}

std::uint64_t SimSentinels::config_epoch() const {
  std::uint64_t e = 0;
  for (const auto& st : impl_->s) e = std::max(e, st.config_epoch);
  return e;
}

int SimSentinels::switches() const noexcept {
  return impl_->switches;
}

std::vector<SimSentinels::Window> SimSentinels::windows() const {
  return impl_->windows;
}

// ---- the cron ----------------------------------------------------------------------------------

std::size_t SimSentinels::Impl::find_data(const std::string& host, std::uint16_t port) const {
  for (std::size_t d = 0; d < data.size(); ++d) {
    const loop::Endpoint e = data[d].redis->endpoint();
    if (e.host == host && e.port == port) return d;
  }
  return data.size();
}

void SimSentinels::Impl::trace(std::size_t i, std::string_view what, std::string_view detail) {
  world.trace().record(world.now(), s[i].node->name(), what, detail);
}

void SimSentinels::Impl::arm_cron(std::size_t i, Nanos at) {
  std::weak_ptr<bool> a = alive;
  world.schedule(
      at, s[i].node,
      [this, a, i] {
        if (a.expired()) return;
        cron(i);
        arm_cron(i, world.now() + kCron);
      },
      /*background=*/true);
}

void SimSentinels::Impl::cron(std::size_t i) {
  for (std::size_t d = 0; d < data.size(); ++d) check_instance(i, d);
  check_odown(i);
  send_hellos(i);
}

// Every 2 s a sentinel tells the others it hears its configuration (sentinelSendHello); one
// with an older epoch takes it (+switch-master). This is how a sentinel that was cut off when
// a failover ended learns of it after the heal.
void SimSentinels::Impl::send_hellos(std::size_t i) {
  const Nanos now = world.now();
  if (now < s[i].next_hello) return;
  s[i].next_hello = now + kHelloPeriod;
  for (std::size_t j = 0; j < s.size(); ++j) {
    if (j == i || !hears(j, i) || s[j].config_epoch >= s[i].config_epoch) continue;
    learn_config(j, s[i].master, s[i].config_epoch);
  }
}

void SimSentinels::Impl::check_instance(std::size_t i, std::size_t d) {
  Sentinel& st = s[i];
  Instance& in = st.inst[d];
  const Nanos now = world.now();
  if (!in.link->connected()) {
    in.up_since = kNone;
    in.link->connect();
  } else if (in.ping_now || ((in.last_ok == kNone || now - in.last_ok > kPingPeriod) &&
                              (in.last_ping == kNone || now - in.last_ping > kPingPeriod / 2))) {
    in.ping_now = false;
    in.link->ping();
    in.last_ping = now;
    if (in.pending_since == kNone) in.pending_since = now;
  }
  if (in.link->connected() && in.up_since == kNone) in.up_since = now;
  // sentinelCheckSubjectivelyDown's reconnection: a link up for 15 s whose oldest PING and
  // last reply are both older than half of down-after is closed; the cron connects again (a
  // SYN across a partition waits for the heal) and PINGs at once, act_ping_time kept.
  const Nanos half = cfg().down_after / 2;
  const Nanos last_reply = in.last_reply == kNone ? in.created : in.last_reply;
  if (in.link->connected() && now - in.up_since > kMinLinkReconnect &&
      in.pending_since != kNone && now - in.pending_since > half && now - last_reply > half) {
    in.link->drop();
    in.up_since = kNone;
    in.ping_now = true;
    trace(i, "link-closed", data[d].redis->node().name());
  }
  // sentinelCheckSubjectivelyDown: the oldest unanswered PING older than down-after.
  const bool down = in.pending_since != kNone && now - in.pending_since > cfg().down_after;
  const loop::Endpoint ep = data[d].redis->endpoint();
  const std::string who = (d == st.master ? "master " : "slave ") + cfg().master_name + " " +
                          ep.host + " " + std::to_string(ep.port);
  if (down != in.sdown) {
    in.sdown = down;
    in.sdown_since = down ? now : kNone;
    trace(i, down ? "+sdown" : "-sdown", who);
  }
  // Role as INFO would report it (the model is read directly).
  const bool is_master = data[d].redis->node().alive() && !data[d].redis->model().is_replica();
  if (data[d].redis->node().alive() && in.link->connected() && is_master != in.reported_master) {
    in.reported_master = is_master;
    in.role_changed = now;
  }
  // A node this configuration lists as a replica that still says master (the old primary after
  // a failover, or after its restart) is reconfigured once reachable for convert_after.
  const bool reachable = world.net().reachable(*st.node, data[d].redis->node());
  const bool wrong = d != st.master && !fo.active && is_master && in.link->connected() &&
                     !in.sdown && newest(i) && reachable;
  if (!wrong) {
    in.wrong_role_since = kNone;
  } else if (in.wrong_role_since == kNone) {
    in.wrong_role_since = now;
  } else if (now - in.wrong_role_since >= cfg().convert_after) {
    convert(i, d);
  }
  // A replica that still follows the old primary (it was cut off when the others were
  // reconfigured) is pointed at this configuration's master once reachable and up for
  // failover-timeout (sentinelRefreshInstanceInfo's +fix-slave-config).
  SimRedis& r = *data[d].redis;
  const bool strays = d != st.master && r.node().alive() && r.primary_of() != nullptr &&
                      r.primary_of() != data[st.master].redis && !fo.active &&
                      in.link->connected() && !in.sdown && newest(i) && reachable;
  if (!strays) {
    in.wrong_master_since = kNone;
  } else if (in.wrong_master_since == kNone) {
    in.wrong_master_since = now;
  } else if (now - in.wrong_master_since >= cfg().failover_timeout) {
    fix_replica(i, d);
  }
}

bool SimSentinels::Impl::newest(std::size_t i) const {
  for (const auto& o : s)
    if (o.config_epoch > s[i].config_epoch) return false;
  return true;
}

void SimSentinels::Impl::check_odown(std::size_t i) {
  Sentinel& st = s[i];
  const std::size_t m = st.master;
  int agree = 0;
  if (st.inst[m].sdown) {
    // SENTINEL is-master-down-by-addr: only the sentinels this one hears answer.
    for (std::size_t j = 0; j < s.size(); ++j) {
      if (j == i || (hears(i, j) && s[j].master == m && s[j].inst[m].sdown)) ++agree;
    }
  }
  const bool od = agree >= cfg().quorum;
  const Nanos now = world.now();
  if (od != st.odown) {
    st.odown = od;
    st.odown_since = od ? now : kNone;
    const loop::Endpoint ep = data[m].redis->endpoint();
    trace(i, od ? "+odown" : "-odown",
          "master " + cfg().master_name + " " + ep.host + " " + std::to_string(ep.port) +
              (od ? " #quorum " + std::to_string(agree) + "/" + std::to_string(cfg().quorum)
                  : ""));
  }
  if (od && !fo.active && now >= st.next_try) try_election(i);
}

// sentinelStartFailoverIfNeeded + the vote: every sentinel that answers votes for the first
// candidate of a new epoch; the others then wait a desynchronised while before trying.
void SimSentinels::Impl::try_election(std::size_t i) {
  Sentinel& st = s[i];
  const Nanos now = world.now();
  std::uint64_t epoch = 0;
  for (const auto& o : s) epoch = std::max(epoch, o.current_epoch);
  ++epoch;
  st.current_epoch = epoch;
  st.next_try = now + 2 * cfg().failover_timeout;
  trace(i, "+try-failover", cfg().master_name + " epoch " + std::to_string(epoch));
  int votes = 0;
  for (std::size_t j = 0; j < s.size(); ++j) {
    if (!hears(i, j)) continue;  // a vote request across a partition is never answered
    if (s[j].voted_epoch >= epoch) continue;
    s[j].voted_epoch = epoch;
    s[j].current_epoch = std::max(s[j].current_epoch, epoch);
    if (j != i) {
      s[j].next_try = now + 2 * cfg().failover_timeout +
                      Nanos(static_cast<std::int64_t>(rng.next() % kMaxDesync.count()));
    }
    ++votes;
  }
  const int majority = static_cast<int>(s.size() / 2 + 1);
  if (votes < std::max(majority, cfg().quorum)) {
    trace(i, "-failover-abort-not-elected", cfg().master_name);
    return;
  }
  fo = Failover{true, false, i, st.master, 0, epoch, now, kNone};
  std::weak_ptr<bool> a = alive;
  world.schedule(now + kElection, st.node, [this, a, i] {
    if (a.expired() || !fo.active || fo.leader != i) return;
    trace(i, "+elected-leader", cfg().master_name);
    const std::string err = start_failover(i, false);
    if (!err.empty()) fo.active = false;
  });
}

// ---- the failover ------------------------------------------------------------------------------

// From SENTINEL FAILOVER (graceful: a new epoch, no vote) or an election won (fo already set).
std::string SimSentinels::Impl::start_failover(std::size_t leader, bool graceful) {
  Sentinel& st = s[leader];
  if (graceful && fo.active) return "-INPROG Failover already in progress";
  const std::size_t m = st.master;
  // sentinelSelectSlave: reachable replicas of the master, highest offset, then lowest run id.
  std::size_t best = data.size();
  for (std::size_t d = 0; d < data.size(); ++d) {
    SimRedis& r = *data[d].redis;
    if (d == m || r.primary_of() != data[m].redis || !r.node().alive()) continue;
    if (st.inst[d].sdown || !st.inst[d].link->connected()) continue;
    const Nanos ok = st.inst[d].last_ok == kNone ? st.inst[d].created : st.inst[d].last_ok;
    if (world.now() - ok > kReplicaStale) continue;
    if (best == data.size()) {
      best = d;
      continue;
    }
    const auto off = r.model().repl_offset(), boff = data[best].redis->model().repl_offset();
    if (off > boff || (off == boff && data[d].runid < data[best].runid)) best = d;
  }
  if (best == data.size()) {
    trace(leader, "-failover-abort-no-good-slave", cfg().master_name);
    if (graceful) return "-NOGOODSLAVE No suitable replica to promote";
    return "no good replica";
  }
  const Nanos now = world.now();
  std::uint64_t epoch = fo.epoch;
  if (graceful) {
    for (const auto& o : s) epoch = std::max(epoch, o.current_epoch);
    ++epoch;
    st.current_epoch = epoch;
    fo = Failover{true, true, leader, m, best, epoch, now, kNone};
  } else {
    fo.to = best;
    fo.started = now;
  }
  const loop::Endpoint ep = data[best].redis->endpoint();
  trace(leader, "+selected-slave", ep.host + ":" + std::to_string(ep.port));
  std::weak_ptr<bool> a = alive;
  world.schedule(now + (graceful ? kPromoteGraceful : kPromoteCrash), st.node, [this, a] {
    if (!a.expired()) promote();
  });
  world.schedule(now + kSwitch - kNamedEarly, st.node, [this, a] {
    if (!a.expired()) name_promoted();
  });
  world.schedule(now + kSwitch, st.node, [this, a] {
    if (!a.expired()) switch_master();
  });
  return {};
}

void SimSentinels::Impl::promote() {
  if (!fo.active) return;
  SimRedis& r = *data[fo.to].redis;
  Instance& in = s[fo.leader].inst[fo.to];
  // (REPLICAOF NO ONE across a partition would wait for the heal, and the failover time out:
  // aborted at once here.)
  if (!r.node().alive() || in.sdown || !in.link->connected() ||
      !world.net().reachable(*s[fo.leader].node, r.node())) {
    trace(fo.leader, "-failover-abort-slave-timeout", cfg().master_name);
    fo.active = false;
    return;
  }
  // REPLICAOF NO ONE in a MULTI with CLIENT KILL TYPE normal (sentinelSendSlaveOf).
  r.promote();
  r.drop_connections();
  fo.promoted = world.now();
  windows.push_back({fo.promoted, kNone});
  trace(fo.leader, "replicaof-no-one", r.node().name());
}

// The leader sees the promotion in the replica's INFO: +promoted-slave and
// +failover-state-reconf-slaves are published in the same tick as its GET-MASTER-ADDR-BY-NAME
// starts naming the replica (sentinelRefreshInstanceInfo), on the leader only.
void SimSentinels::Impl::name_promoted() {
  if (!fo.active || fo.promoted == kNone) return;
  fo.named = true;
  const loop::Endpoint to = data[fo.to].redis->endpoint();
  const loop::Endpoint from = data[fo.from].redis->endpoint();
  const std::string port = std::to_string(to.port);
  const std::string promoted = "slave " + to.host + ":" + port + " " + to.host + " " + port +
                               " @ " + cfg().master_name + " " + from.host + " " +
                               std::to_string(from.port);
  trace(fo.leader, "+promoted-slave", promoted);
  s[fo.leader].face->model().publish("+promoted-slave", promoted);
  const std::string master = "master " + cfg().master_name + " " + from.host + " " +
                             std::to_string(from.port);
  trace(fo.leader, "+failover-state-reconf-slaves", master);
  s[fo.leader].face->model().publish("+failover-state-reconf-slaves", master);
  if (self.on_named) self.on_named(*data[fo.from].redis, *data[fo.to].redis);
}

void SimSentinels::Impl::switch_master() {
  if (!fo.active || fo.promoted == kNone) {
    fo.active = false;
    return;
  }
  const std::size_t leader = fo.leader, from = fo.from, to = fo.to;
  const std::uint64_t epoch = fo.epoch;
  fo.active = false;
  ++switches;
  windows.back().switched = world.now();
  learn_config(leader, to, epoch);
  // The other replicas of the old master follow the new one (failover-state-reconf-slaves);
  // one the leader cannot reach keeps following the old master until +fix-slave-config.
  for (std::size_t d = 0; d < data.size(); ++d) {
    if (d != to && d != from && data[d].redis->primary_of() == data[from].redis &&
        world.net().reachable(*s[leader].node, data[d].redis->node())) {
      data[d].redis->demote_to_replica_of(*data[to].redis, cfg().replication_lag);
    }
  }
  // The others hear the new configuration from the leader's hello at once (measured: all
  // three +switch-master within 2 ms).
  std::weak_ptr<bool> a = alive;
  for (std::size_t j = 0; j < s.size(); ++j) {
    if (j == leader || !hears(j, leader)) continue;  // the others: at a later hello
    const Nanos at = world.now() + Nanos(1'000'000 + static_cast<std::int64_t>(rng.next() % 2'000'000));
    world.schedule(at, s[j].node, [this, a, j, to, epoch] {
      if (!a.expired()) learn_config(j, to, epoch);
    });
  }
  if (self.on_switch) self.on_switch(*data[from].redis, *data[to].redis);
}

void SimSentinels::Impl::learn_config(std::size_t j, std::size_t master, std::uint64_t epoch) {
  Sentinel& st = s[j];
  if (st.config_epoch >= epoch && st.master == master) return;
  if (st.config_epoch > epoch) return;
  const loop::Endpoint from = data[st.master].redis->endpoint();
  const loop::Endpoint to = data[master].redis->endpoint();
  st.master = master;
  st.config_epoch = epoch;
  st.current_epoch = std::max(st.current_epoch, epoch);
  st.odown = false;
  st.odown_since = kNone;
  for (auto& in : st.inst) in.wrong_role_since = kNone;
  const std::string msg = cfg().master_name + " " + from.host + " " + std::to_string(from.port) +
                          " " + to.host + " " + std::to_string(to.port);
  trace(j, "+switch-master", msg);
  st.face->model().publish("+switch-master", msg);
}

// +convert-to-slave: REPLICAOF <master> in a MULTI with CLIENT KILL TYPE normal.
void SimSentinels::Impl::convert(std::size_t i, std::size_t d) {
  SimRedis& r = *data[d].redis;
  SimRedis& m = *data[s[i].master].redis;
  trace(i, "+convert-to-slave", r.node().name());
  r.demote_to_replica_of(m, cfg().replication_lag);
  r.drop_connections();
  for (auto& st : s) st.inst[d].wrong_role_since = kNone;
}

// +fix-slave-config: REPLICAOF <master> (with CLIENT KILL TYPE normal, as sentinelSendSlaveOf).
void SimSentinels::Impl::fix_replica(std::size_t i, std::size_t d) {
  SimRedis& r = *data[d].redis;
  SimRedis& m = *data[s[i].master].redis;
  trace(i, "+fix-slave-config", r.node().name());
  r.demote_to_replica_of(m, cfg().replication_lag);
  r.drop_connections();
  for (auto& st : s) st.inst[d].wrong_master_since = kNone;
}

}  // namespace lockwire::sim
