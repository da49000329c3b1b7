// SimCluster (sim_cluster.hpp): the nodes, the one configuration truth and its gossip, failovers
// (manual and after a crash) and the operator's slot migration.
// One file, a little over 800 lines: everything here is SimCluster::Impl acting on one shared
// configuration truth (the slot owners, epochs, every node's view and, after a partition, the
// bus model of who hears whom); failovers and migration are edits of that truth and gossip is
// its spreading. The piece that would split out is the partition bus model (bus_flags ..
// fail_by_partition), once it is needed without the rest; until then Impl stays private here.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "lockwire/sim/sim_cluster.hpp"

namespace lockwire::sim {

namespace {

std::string encode(const std::vector<std::string>& argv) {
  std::string out = "*";
  out += std::to_string(argv.size());
  out += "\r\n";
  for (const auto& a : argv) {
    out += '$';
    out += std::to_string(a.size());
    out += "\r\n";
    out += a;
    out += "\r\n";
  }
  return out;
}

std::string lower(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

}  // namespace

struct SimCluster::Impl {
  World& world;
  ClusterConfig cfg;
  Rng rng;
  std::vector<std::unique_ptr<SimRedis>> servers;
  std::vector<ClusterNodeInfo> truth;  // one per server, same index
  std::vector<int> owner;              // slot -> server index (-1: unassigned)
  std::uint64_t current_epoch = 0;
  bool ok = true;
  int failovers = 0;
  std::vector<bool> down;              // crashed or killed, not restarted
  std::vector<std::uint64_t> pending;  // a crash's failover in progress (event ids)
  SimCluster* self = nullptr;
  std::shared_ptr<bool> alive = std::make_shared<bool>(true);
  // Partitions (bus_tick): none of this is used before the first Network::partition, so runs
  // without one keep their events and traces.
  bool bus = false;                           // a partition happened: the bus model is on
  bool bus_armed = false;                     // the bus cron runs (until all is healed)
  std::vector<std::string> bus_seen;          // per node: its bus state last pushed
  // [i][j]: when i sent j the PING still unanswered (-1: none). After a cut it is sent once
  // j's last PONG is node_timeout/2 old (clusterCron), so at the cut plus up to half the timeout.
  std::vector<std::vector<Nanos>> cut_since;
  std::vector<bool> stale;                    // cut off when the configuration last changed
  std::vector<bool> minority;                 // a primary answering CLUSTERDOWN
  std::vector<Nanos> majority_since;          // a minority primary reaching a majority since
  std::vector<bool> electing;                 // a partition failover of this primary is on
  std::vector<Nanos> failed_at;               // when the bus made it FAIL
  // [x][p][k]: when the failure report of master k about p last reached x, on x's wall clock
  // in ms (-1: none). k sends one in every PING/PONG to x while it flags p (PFAIL or FAIL);
  // x drops it when k's gossip shows p clean, or 2 * node_timeout after it last came.
  std::vector<std::vector<std::vector<std::int64_t>>> reports;
  std::vector<std::vector<RedisModel::FailReport>> reports_pushed;  // per node
  Rng bus_rng;  // the bus' own draws (PING send times), apart from the elections'

  Impl(World& w, const ClusterConfig& c)
      : world(w), cfg(c), rng(w.fork_rng("cluster")), bus_rng(w.fork_rng("cluster-bus")) {}

  std::size_t index_of(const std::string& id) const {
    for (std::size_t i = 0; i < truth.size(); ++i) {
      if (truth[i].id == id) return i;
    }
    return truth.size();
  }

  ClusterView view_for(std::size_t i) const {
    ClusterView v;
    v.myself = truth[i].id;
    v.nodes = truth;
    for (std::size_t k = 0; k < v.nodes.size(); ++k) {
      v.nodes[k].repl_offset = down[k] ? v.nodes[k].repl_offset : servers[k]->model().repl_offset();
      v.nodes[k].pong_received_ms = servers[i]->model().wall_ms() / 1000 * 1000;
    }
    v.slot_owner = owner;
    v.ok = ok;
    v.current_epoch = current_epoch;
    if (bus) bus_flags(i, v);
    return v;
  }

  // What node i's own bus says of the others: no PONG since the cut (or the other's death):
  // ping-sent, pong-recv, PFAIL after node_timeout, the link down; CLUSTERDOWN in the minority.
  void bus_flags(std::size_t i, ClusterView& v) const {
    const Nanos now = world.now();
    const std::int64_t wall = servers[i]->model().wall_ms();
    for (std::size_t k = 0; k < v.nodes.size() && k < cut_since[i].size(); ++k) {
      const Nanos c = cut_since[i][k];
      if (c < Nanos{0} || c > now) continue;
      const std::int64_t ago = std::chrono::duration_cast<std::chrono::milliseconds>(now - c).count();
      v.nodes[k].ping_sent_ms = wall - ago;
      v.nodes[k].pong_received_ms = (wall - ago) / 1000 * 1000;
      v.nodes[k].connected = false;
      v.nodes[k].pfail = !v.nodes[k].failed && now - c > cfg.node_timeout;
    }
    if (minority[i]) v.ok = false;
  }

  void push(std::size_t i) {
    if (down[i]) return;
    if (bus && stale[i]) {
      // It keeps what it believed (roles, slots); only its own bus flags move.
      ClusterView v = servers[i]->model().cluster_view();
      v.ok = v.ok && !minority[i];
      if (!minority[i] && !v.ok) {
        // Back from the minority with an old view: its state is its slots' owners' (all up).
        v.ok = true;
        for (const int o : v.slot_owner)
          if (o < 0 || v.nodes[static_cast<std::size_t>(o)].failed) v.ok = false;
      }
      for (auto& n : v.nodes) {
        n.pfail = false;
        n.connected = true;
        n.ping_sent_ms = 0;
      }
      bus_flags(i, v);
      servers[i]->model().set_cluster_view(v);
      return;
    }
    // The node's own migrating/importing marks stay (they are not gossiped).
    servers[i]->model().set_cluster_view(view_for(i));
  }

  // Nodes that hear news from `from` (alive nodes reachable through alive nodes); all when the
  // bus does not run.
  std::vector<bool> informed_from(const std::vector<std::size_t>& from) const {
    std::vector<bool> in(servers.size(), !bus);
    if (!bus) return in;
    std::vector<std::size_t> todo;
    for (std::size_t f : from) {
      if (f < servers.size() && !down[f] && !in[f]) {
        in[f] = true;
        todo.push_back(f);
      }
    }
    while (!todo.empty()) {
      const std::size_t a = todo.back();
      todo.pop_back();
      for (std::size_t b = 0; b < servers.size(); ++b) {
        if (in[b] || down[b] || !world.net().reachable(servers[a]->node(), servers[b]->node()))
          continue;
        in[b] = true;
        todo.push_back(b);
      }
    }
    return in;
  }

  // The truth changed because of node `origin` (or of nobody: origin == size()).
  void gossip(std::size_t origin, Nanos delay) {
    if (origin < servers.size()) {
      if (bus) stale[origin] = false;
      push(origin);
    }
    std::weak_ptr<bool> w = alive;
    world.schedule(world.now() + delay, nullptr, [this, w, origin] {
      if (w.expired()) return;
      std::vector<std::size_t> from{origin};
      if (origin >= servers.size()) {
        from.clear();
        for (std::size_t i = 0; i < servers.size(); ++i) from.push_back(i);
      }
      const std::vector<bool> in = informed_from(from);
      for (std::size_t i = 0; i < servers.size(); ++i) {
        if (i == origin) continue;
        if (bus && !down[i]) stale[i] = !in[i];
        push(i);
      }
    });
  }

  // ---- partitions: the bus cron ----

  // From a partition between nodes, or a node's death (its PINGs go unanswered too).
  void start_bus() {
    if (bus_armed) return;
    bool cluster_cut = false;
    for (std::size_t i = 0; i < servers.size(); ++i) {
      cluster_cut = cluster_cut || down[i];
      for (std::size_t j = 0; j < servers.size(); ++j)
        if (i != j && !world.net().reachable(servers[i]->node(), servers[j]->node())) cluster_cut = true;
    }
    if (!cluster_cut) return;
    if (!bus) {
      bus = true;
      const std::size_t n = servers.size();
      cut_since.assign(n, std::vector<Nanos>(n, Nanos{-1}));
      stale.assign(n, false);
      minority.assign(n, false);
      majority_since.assign(n, Nanos{-1});
      electing.assign(n, false);
      failed_at.assign(n, Nanos{-1});
      bus_seen.assign(n, std::string());
      reports.assign(n, std::vector<std::vector<std::int64_t>>(n, std::vector<std::int64_t>(n, -1)));
      reports_pushed.assign(n, {});
    }
    bus_armed = true;
    arm_bus();
  }

  void arm_bus() {
    std::weak_ptr<bool> w = alive;
    world.schedule(
        world.now() + cfg.bus_period, nullptr,
        [this, w] {
          if (w.expired()) return;
          if (bus_tick()) {
            arm_bus();
          } else {
            bus_armed = false;  // all healed: the next partition starts it again
          }
        },
        /*background=*/true);
  }

  [[nodiscard]] bool pfail(std::size_t i, std::size_t j) const {
    return cut_since[i][j] >= Nanos{0} && world.now() - cut_since[i][j] > cfg.node_timeout;
  }

  [[nodiscard]] bool reaches(std::size_t a, std::size_t b) const {
    return !down[a] && !down[b] && world.net().reachable(servers[a]->node(), servers[b]->node());
  }

  [[nodiscard]] std::int64_t node_timeout_ms() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(cfg.node_timeout).count();
  }

  // The reports x holds about p, from masters of x's view (clusterNodeFailureReportsCount).
  [[nodiscard]] std::size_t report_count(std::size_t x, std::size_t p) const {
    const std::int64_t wall = servers[x]->model().wall_ms();
    const ClusterView& v = servers[x]->model().cluster_view();
    std::size_t count = 0;
    for (std::size_t k = 0; k < reports[x][p].size(); ++k) {
      const std::int64_t t = reports[x][p][k];
      if (t >= 0 && wall - t <= 2 * node_timeout_ms() && k < v.nodes.size() && v.nodes[k].primary)
        ++count;
    }
    return count;
  }

  // Every PING and PONG k sends x carries k's flags about the others (clusterSendPing: every
  // node it flags, some others at random): a report about each p it flags (PFAIL or FAIL),
  // and the end of its report about p once its gossip shows p clean (here at the next tick).
  void gossip_reports() {
    const std::size_t n = servers.size();
    for (std::size_t x = 0; x < n; ++x) {
      if (down[x]) continue;
      const std::int64_t wall = servers[x]->model().wall_ms();
      const ClusterView& vx = servers[x]->model().cluster_view();
      std::vector<RedisModel::FailReport> held;
      for (std::size_t p = 0; p < n; ++p) {
        for (std::size_t k = 0; k < n; ++k) {
          if (p == x || k == x || k == p) continue;
          std::int64_t& t = reports[x][p][k];
          if (reaches(k, x) && k < vx.nodes.size() && vx.nodes[k].primary) {
            const ClusterView& vk = servers[k]->model().cluster_view();
            const bool flags = pfail(k, p) || (p < vk.nodes.size() && vk.nodes[p].failed);
            t = flags ? wall : -1;
          }
          if (t >= 0 && wall - t > 2 * node_timeout_ms()) t = -1;  // clusterNodeCleanupFailureReports
          if (t >= 0) held.push_back({truth[p].id, t});
        }
      }
      bool same = held.size() == reports_pushed[x].size();
      for (std::size_t r = 0; same && r < held.size(); ++r)
        same = held[r].subject == reports_pushed[x][r].subject &&
               held[r].received_ms == reports_pushed[x][r].received_ms;
      if (same) continue;
      servers[x]->model().set_failure_reports(held);
      reports_pushed[x] = std::move(held);
    }
  }

  // One clusterCron; false once nothing is cut, down, stale, in the minority, being elected or
  // reported.
  bool bus_tick() {
    const Nanos now = world.now();
    bool busy = false;
    const std::size_t n = servers.size();
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        // A dead node answers no PING either (a killed process' refused connects included).
        const bool cut = i != j && !down[i] &&
                         (down[j] || !world.net().reachable(servers[i]->node(), servers[j]->node()));
        busy = busy || cut;
        if (!cut) {
          cut_since[i][j] = Nanos{-1};
        } else if (cut_since[i][j] < Nanos{0}) {
          const auto half = static_cast<std::uint64_t>((cfg.node_timeout / 2).count());
          cut_since[i][j] = now + Nanos(static_cast<std::int64_t>(bus_rng.below(half + 1)));
        }
      }
    }
    gossip_reports();
    // A node that missed a configuration learns it once a node that has it reaches it.
    std::vector<std::size_t> current;
    for (std::size_t i = 0; i < n; ++i)
      if (!down[i] && !stale[i]) current.push_back(i);
    const std::vector<bool> in = informed_from(current);
    for (std::size_t i = 0; i < n; ++i) {
      if (!down[i] && stale[i] && in[i]) catch_up(i);
    }
    std::size_t primaries = 0;
    for (std::size_t k = 0; k < n; ++k)
      if (truth[k].primary) ++primaries;
    const std::size_t quorum = primaries / 2 + 1;
    // FAIL (markNodeAsFailingIfNeeded): a node that flags p PFAIL holds failure reports about
    // it from a majority of the primaries, itself counted when it is one. Reports live
    // 2 * node_timeout, so they need not be simultaneous. (A dead primary is failed by `failed`,
    // at the measured time.)
    for (std::size_t p = 0; p < n; ++p) {
      if (!truth[p].primary || truth[p].failed || down[p] || electing[p]) continue;
      for (std::size_t x = 0; x < n; ++x) {
        if (x == p || down[x] || stale[x] || !pfail(x, p)) continue;
        const std::size_t votes = report_count(x, p) + (truth[x].primary ? 1 : 0);
        if (votes < quorum) continue;
        fail_by_partition(p, x, quorum);
        break;
      }
    }
    // clearNodeFailureIfNeeded: a FAIL node reached again by the nodes that have the current
    // configuration is no longer FAIL — at once for a replica, after 2 x node_timeout of FAIL
    // for a primary that still serves slots (no replica took them over).
    for (std::size_t p = 0; p < n; ++p) {
      if (!truth[p].failed || down[p] || stale[p] || failed_at[p] < Nanos{0}) continue;
      if (truth[p].primary && now - failed_at[p] < 2 * cfg.node_timeout) continue;
      bool reached = false;
      for (std::size_t k = 0; k < n; ++k)
        if (k != p && !down[k] && !stale[k] && cut_since[k][p] < Nanos{0}) reached = true;
      if (!reached) continue;
      truth[p].failed = false;
      truth[p].connected = true;
      failed_at[p] = Nanos{-1};
      recompute_ok();
      world.trace().record(now, servers[p]->node().name(), "cluster-fail-cleared", "");
      gossip(p, cfg.gossip_delay);
    }
    // CLUSTERDOWN in the minority: a node that believes it is a primary and reaches fewer than a
    // majority of the primaries it knows.
    for (std::size_t i = 0; i < n; ++i) {
      if (down[i]) continue;
      const ClusterView& v = servers[i]->model().cluster_view();
      if (i >= v.nodes.size() || !v.nodes[i].primary) {
        minority[i] = false;
        continue;
      }
      std::size_t known = 0, reach = 0;
      for (std::size_t k = 0; k < v.nodes.size(); ++k) {
        if (!v.nodes[k].primary) continue;
        ++known;
        if (k == i || (!pfail(i, k) && !v.nodes[k].failed)) ++reach;
      }
      const bool few = reach < known / 2 + 1;
      if (few) {
        majority_since[i] = Nanos{-1};
        if (!minority[i]) {
          minority[i] = true;
          world.trace().record(now, servers[i]->node().name(), "cluster-state", "fail (minority)");
        }
      } else if (minority[i]) {
        if (majority_since[i] < Nanos{0}) majority_since[i] = now;
        if (now - majority_since[i] >= cfg.rejoin_delay) {
          minority[i] = false;
          world.trace().record(now, servers[i]->node().name(), "cluster-state", "ok (rejoined)");
        }
      }
    }
    // Only a node whose own bus state changed gets a new view (a view is 16384 slots).
    for (std::size_t i = 0; i < n; ++i) {
      std::string seen(stale[i] ? "s" : "-");
      seen += minority[i] ? 'm' : '-';
      for (std::size_t k = 0; k < n; ++k) {
        const Nanos c = cut_since[i][k];
        seen += c < Nanos{0} || c > now ? '.' : pfail(i, k) ? 'P' : 'c';
      }
      if (seen != bus_seen[i]) {
        bus_seen[i] = seen;
        push(i);
      }
      busy = busy || stale[i] || minority[i] || electing[i] || !reports_pushed[i].empty() ||
             (truth[i].failed && failed_at[i] >= Nanos{0});
    }
    return busy;
  }

  // Primary p is FAIL for the nodes `reporter` reaches; its replica that a majority of the
  // primaries reach is elected after the usual delay.
  void fail_by_partition(std::size_t p, std::size_t reporter, std::size_t quorum) {
    truth[p].failed = true;
    failed_at[p] = world.now();
    truth[p].connected = false;
    recompute_ok();
    world.trace().record(world.now(), servers[reporter]->node().name(), "cluster-fail",
                         servers[p]->node().name());
    gossip(reporter, Nanos(0));
    const std::vector<bool> side = informed_from({reporter});
    std::size_t best = truth.size();
    for (std::size_t k = 0; k < truth.size(); ++k) {
      if (down[k] || !side[k] || truth[k].primary || truth[k].primary_of != truth[p].id) continue;
      if (best == truth.size() ||
          servers[k]->model().repl_offset() > servers[best]->model().repl_offset())
        best = k;
    }
    if (best == truth.size()) return;  // no replica on the majority's side: stays down
    electing[p] = true;
    std::weak_ptr<bool> w = alive;
    const Nanos delay{rng.between(cfg.election_min.count(), cfg.election_max.count())};
    world.schedule(world.now() + delay, nullptr, [this, w, p, best, quorum] {
      if (w.expired()) return;
      electing[p] = false;
      if (down[best] || truth[best].primary || !truth[p].failed) return;
      // The votes: primaries (other than p) that reach the candidate.
      const std::vector<bool> reach = informed_from({best});
      std::size_t votes = 0;
      for (std::size_t k = 0; k < truth.size(); ++k)
        if (k != p && truth[k].primary && reach[k]) ++votes;
      if (votes < quorum) return;
      promote(best);
      recompute_ok();
      gossip(best, cfg.learn_after_election);
    });
  }

  // Node i was cut off when the configuration changed and is reached again: it takes the
  // current one (an UPDATE message) and follows it.
  void catch_up(std::size_t i) {
    stale[i] = false;
    world.trace().record(world.now(), servers[i]->node().name(), "cluster-update", "configuration");
    push(i);
    if (!truth[i].primary) {
      const std::size_t p = index_of(truth[i].primary_of);
      if (p < truth.size() && servers[i]->primary_of() != servers[p].get()) {
        servers[i]->model().clear_slot_marks();
        servers[i]->demote_to_replica_of(*servers[p], cfg.replication_lag);
        servers[i]->unpause_clients();
      }
    }
    gossip(i, cfg.gossip_delay);
  }

  // PINGs and PONGs carry each node's replication offset: refreshed once a second (background:
  // it never keeps a run alive).
  void arm_refresh() {
    std::weak_ptr<bool> w = alive;
    world.schedule(
        world.now() + cfg.offsets_refresh, nullptr,
        [this, w] {
          if (w.expired()) return;
          for (std::size_t i = 0; i < servers.size(); ++i) push(i);
          arm_refresh();
        },
        /*background=*/true);
  }

  void recompute_ok() {
    ok = true;
    for (const int o : owner) {
      if (o < 0 || truth[static_cast<std::size_t>(o)].failed) {
        ok = false;
        break;
      }
    }
  }

  // Replica `r` takes over its primary's slots with a new config epoch; the old primary (when
  // alive) and the other replicas follow it.
  void promote(std::size_t r) {
    const std::size_t old = index_of(truth[r].primary_of);
    if (old >= truth.size()) return;
    truth[r].primary = true;
    truth[r].primary_of.clear();
    truth[r].config_epoch = ++current_epoch;
    truth[old].primary = false;
    truth[old].primary_of = truth[r].id;
    for (auto& o : owner) {
      if (o == static_cast<int>(old)) o = static_cast<int>(r);
    }
    servers[r]->promote();
    servers[r]->model().clear_slot_marks();
    // A node the new primary cannot reach (a partition) follows when it is reached again.
    auto reached = [this, r](std::size_t k) {
      if (!bus || world.net().reachable(servers[r]->node(), servers[k]->node())) return true;
      stale[k] = true;
      return false;
    };
    for (std::size_t k = 0; k < truth.size(); ++k) {
      if (k == r || truth[k].primary_of != truth[old].id || truth[k].primary) continue;
      truth[k].primary_of = truth[r].id;
      if (!down[k] && reached(k)) servers[k]->demote_to_replica_of(*servers[r], cfg.replication_lag);
    }
    if (!down[old] && reached(old)) {
      // It learns the new configuration first (the UPDATE message), then follows and lets its
      // held clients go: they get MOVED, not READONLY.
      push(old);
      servers[old]->model().clear_slot_marks();
      servers[old]->demote_to_replica_of(*servers[r], cfg.replication_lag);
      servers[old]->unpause_clients();  // resetManualFailover: the held writes now get MOVED
    }
    // The new primary's first replication PING: its replicas' offsets (ROLE, SHARDS) move.
    servers[r]->model().replication_ping();
    ++failovers;
    world.trace().record(world.now(), servers[r]->node().name(), "cluster-failover",
                         servers[old]->node().name() + " -> " + servers[r]->node().name());
    if (self->on_failover) self->on_failover(old, r);
  }

  void manual_failover(std::size_t r, bool force) {
    const std::size_t p = index_of(truth[r].primary_of);
    if (p >= truth.size()) return;
    std::weak_ptr<bool> w = alive;
    if (force) {
      promote(r);
      recompute_ok();
      gossip(r, cfg.gossip_delay);
      return;
    }
    // clusterHandleManualFailover: the primary holds writes (CLUSTER_MF_TIMEOUT * 2) while the
    // replica catches up and is elected.
    if (!down[p]) servers[p]->pause_clients(10s, PauseMode::write);
    world.schedule(world.now() + cfg.manual_failover_delay, nullptr, [this, w, r] {
      if (w.expired() || down[r] || truth[r].primary) return;
      promote(r);
      recompute_ok();
      gossip(r, cfg.gossip_delay);
    });
  }

  void failed(std::size_t i) {
    down[i] = true;
    start_bus();  // the others' PINGs to it go unanswered: ping-sent, PFAIL, failure reports
    std::weak_ptr<bool> w = alive;
    world.schedule(world.now() + cfg.fail_after, nullptr, [this, w, i] {
      if (w.expired() || !down[i]) return;
      truth[i].failed = true;
      truth[i].connected = false;
      recompute_ok();
      gossip(truth.size(), Nanos(0));
      if (!truth[i].primary) return;
      // The replica with the highest offset wins the election.
      std::size_t best = truth.size();
      for (std::size_t k = 0; k < truth.size(); ++k) {
        if (down[k] || truth[k].primary || truth[k].primary_of != truth[i].id) continue;
        if (best == truth.size() ||
            servers[k]->model().repl_offset() > servers[best]->model().repl_offset())
          best = k;
      }
      if (best == truth.size()) return;  // no replica: the cluster stays down
      const Nanos delay{rng.between(cfg.election_min.count(), cfg.election_max.count())};
      world.schedule(world.now() + delay, nullptr, [this, w, i, best] {
        if (w.expired() || down[best] || !down[i] || truth[best].primary) return;
        promote(best);
        recompute_ok();
        gossip(best, cfg.learn_after_election);
      });
    });
  }

  // Hooks::cluster of node i: CLUSTER SETSLOT ... NODE, CLUSTER FAILOVER.
  void on_command(std::size_t i, const std::vector<std::string>& argv) {
    if (argv.size() >= 2 && lower(argv[1]) == "failover") {
      const bool force = argv.size() == 3;
      std::weak_ptr<bool> w = alive;
      // Not from inside the node's own command.
      world.schedule(world.now(), nullptr, [this, w, i, force] {
        if (!w.expired()) manual_failover(i, force);
      });
      return;
    }
    // SETSLOT <slot> NODE <id>: what the node now believes becomes the truth (with its epoch
    // bump, if it imported the slot), then the gossip carries it.
    const ClusterView& v = servers[i]->model().cluster_view();
    const std::size_t slot = argv.size() > 2 ? static_cast<std::size_t>(std::stoi(argv[2])) : 0;
    if (slot < owner.size()) owner[slot] = v.slot_owner[slot];
    const auto& mine = v.nodes[i];
    truth[i].config_epoch = mine.config_epoch;
    current_epoch = std::max(current_epoch, v.current_epoch);
    std::weak_ptr<bool> w = alive;
    world.schedule(world.now(), nullptr, [this, w, i] {
      if (!w.expired()) gossip(i, cfg.gossip_delay);
    });
  }

  std::string migrate(const std::string& host, int port, int db, const RedisSnapshot& keys,
                      bool replace) {
    for (std::size_t k = 0; k < servers.size(); ++k) {
      if (servers[k]->node().name() != host || servers[k]->port() != port) continue;
      if (down[k] || !servers[k]->node().alive()) return "NOHOST";
      return servers[k]->model().restore_keys(keys, db, replace);
    }
    return "NOHOST";
  }

  void admin(std::size_t i, const std::vector<std::string>& argv) {
    if (down[i]) return;
    RedisModel& m = servers[i]->model();
    const auto c = m.add_client("127.0.0.1:1");  // redis-cli on the node's machine
    m.feed(c, encode(argv));
    leave_when_answered(i, c);
  }
  // redis-cli waits for its reply: a command held by CLIENT PAUSE runs when the pause ends
  // (found by the cluster swarm, seed 3001884: SETSLOT MIGRATING sent during a pause was
  // dropped with its client, so the slot moved with no MIGRATING mark and a block was granted
  // on the source against half-moved keys).
  void leave_when_answered(std::size_t i, RedisModel::ClientId c) {
    RedisModel& m = servers[i]->model();
    if (down[i] || !m.has_pending_input(c)) {
      m.remove_client(c);
      return;
    }
    std::weak_ptr<bool> w = alive;
    world.schedule(world.now() + std::chrono::milliseconds(1), nullptr, [this, w, i, c] {
      if (!w.expired()) leave_when_answered(i, c);
    });
  }
};

SimCluster::SimCluster(World& world, std::vector<Node*> nodes, ClusterConfig config)
    : config_(config), impl_(std::make_unique<Impl>(world, config)) {
  Impl& s = *impl_;
  s.self = this;
  const int per = 1 + config.replicas_per_primary;
  if (config.primaries < 1 || static_cast<int>(nodes.size()) != config.primaries * per) {
    throw std::invalid_argument("SimCluster: nodes.size() must be primaries * (1 + replicas)");
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    SimRedisOptions o;
    o.port = config.port;
    o.model.cluster_enabled = true;
    // What CONFIG GET cluster-node-timeout answers (the Cluster vouch reads it).
    o.model.config.emplace_back(
        "cluster-node-timeout",
        std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(config.node_timeout).count()));
    o.cluster = [&s, i](const std::vector<std::string>& argv) { s.on_command(i, argv); };
    o.migrate = [&s](const std::string& host, int port, int db, const RedisSnapshot& keys,
                     bool replace) { return s.migrate(host, port, db, keys, replace); };
    s.servers.push_back(std::make_unique<SimRedis>(world, *nodes[i], o));
    ClusterNodeInfo n;
    static const char* hex = "0123456789abcdef";
    for (int k = 0; k < 40; ++k) n.id.push_back(hex[s.rng.below(16)]);
    n.ip = nodes[i]->name();
    n.port = config.port;
    // redis-cli --cluster create: a different config epoch per node, in node order.
    n.config_epoch = i + 1;
    s.truth.push_back(std::move(n));
  }
  s.down.assign(nodes.size(), false);
  s.current_epoch = nodes.size();
  for (std::size_t i = static_cast<std::size_t>(config.primaries); i < nodes.size(); ++i) {
    const std::size_t p = i % static_cast<std::size_t>(config.primaries);
    s.truth[i].primary = false;
    s.truth[i].primary_of = s.truth[p].id;
    s.servers[p]->add_replica(*s.servers[i], config.replication_lag);
  }
  // redis-cli's split: slots_per_node = 16384 / N, each range ends at lround(cursor + spn - 1).
  s.owner.assign(ClusterView::kClusterSlots, -1);
  const double spn = static_cast<double>(ClusterView::kClusterSlots) / config.primaries;
  double cursor = 0;
  int first = 0;
  for (int m = 0; m < config.primaries; ++m) {
    int last = static_cast<int>(std::lround(cursor + spn - 1));
    if (last > ClusterView::kClusterSlots - 1 || m == config.primaries - 1) {
      last = ClusterView::kClusterSlots - 1;
    }
    if (last < first) last = first;
    for (int sl = first; sl <= last; ++sl) s.owner[static_cast<std::size_t>(sl)] = m;
    first = last + 1;
    cursor += spn;
  }
  // The first replication PING after the sync: replicas report an offset (not "loading").
  for (int m = 0; m < config.primaries; ++m) s.servers[static_cast<std::size_t>(m)]->model().replication_ping();
  for (std::size_t i = 0; i < nodes.size(); ++i) s.push(i);
  s.arm_refresh();
  std::weak_ptr<bool> w = s.alive;
  world.net().on_partition([&s, w] {
    if (!w.expired()) s.start_bus();
  });
}

SimCluster::~SimCluster() {
  *impl_->alive = false;
}

std::size_t SimCluster::size() const noexcept {
  return impl_->servers.size();
}

SimRedis& SimCluster::server(std::size_t i) {
  return *impl_->servers.at(i);
}

const std::string& SimCluster::id(std::size_t i) const {
  return impl_->truth.at(i).id;
}

std::vector<loop::Endpoint> SimCluster::endpoints() const {
  std::vector<loop::Endpoint> out;
  for (const auto& s : impl_->servers) out.push_back(s->endpoint());
  return out;
}

std::string SimCluster::url() const {
  std::string u = "redis://";
  for (std::size_t i = 0; i < impl_->servers.size(); ++i) {
    if (i != 0) u += ",";
    u += impl_->servers[i]->node().name() + ":" + std::to_string(impl_->servers[i]->port());
  }
  return u;
}

std::size_t SimCluster::owner(int slot) const {
  return static_cast<std::size_t>(impl_->owner.at(static_cast<std::size_t>(slot)));
}

bool SimCluster::is_primary(std::size_t i) const {
  return impl_->truth.at(i).primary;
}

std::vector<std::size_t> SimCluster::replicas_of(std::size_t primary) const {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < impl_->truth.size(); ++i) {
    if (!impl_->truth[i].primary && impl_->truth[i].primary_of == impl_->truth[primary].id)
      out.push_back(i);
  }
  return out;
}

std::string SimCluster::failover(std::size_t i, std::string_view option) {
  Impl& s = *impl_;
  if (s.down[i]) return "the node is down";
  // Answered as the node answers CLUSTER FAILOVER (the checks live in the model).
  const ClusterView& v = s.servers[i]->model().cluster_view();
  const auto& me = v.nodes[i];
  if (me.primary) return "You should send CLUSTER FAILOVER to a replica";
  std::vector<std::string> argv{"CLUSTER", "FAILOVER"};
  if (!option.empty()) argv.emplace_back(option);
  s.admin(i, argv);
  return {};
}

void SimCluster::crash(std::size_t i) {
  impl_->servers.at(i)->crash();
  impl_->failed(i);
}

void SimCluster::kill(std::size_t i) {
  impl_->servers.at(i)->kill();
  impl_->failed(i);
}

void SimCluster::restart(std::size_t i) {
  Impl& s = *impl_;
  s.servers.at(i)->restart(Persistence::all);
  s.down[i] = false;
  s.truth[i].failed = false;
  s.truth[i].connected = true;
  // A primary whose replica was promoted meanwhile (promote() re-pointed the truth) comes back
  // as a replica of it.
  if (!s.truth[i].primary) {
    const std::size_t p = s.index_of(s.truth[i].primary_of);
    if (p < s.truth.size()) s.servers[i]->demote_to_replica_of(*s.servers[p], s.cfg.replication_lag);
  }
  s.recompute_ok();
  s.gossip(i, s.cfg.gossip_delay);
}

void SimCluster::admin(std::size_t i, const std::vector<std::string>& argv) {
  impl_->admin(i, argv);
}

void SimCluster::migrate_slot(int slot, std::size_t to, Nanos step, std::function<void()> done) {
  Impl& s = *impl_;
  const std::size_t from = owner(slot);
  const std::string sl = std::to_string(slot);
  s.admin(to, {"CLUSTER", "SETSLOT", sl, "IMPORTING", s.truth[from].id});
  s.admin(from, {"CLUSTER", "SETSLOT", sl, "MIGRATING", s.truth[to].id});
  std::weak_ptr<bool> w = s.alive;
  auto next = std::make_shared<std::function<void()>>();
  *next = [this, w, slot, sl, from, to, step, done, next] {
    if (w.expired()) return;
    Impl& s = *impl_;
    const auto keys = s.down[from] ? std::vector<std::string>{}
                                   : s.servers[from]->model().keys_in_slot(slot);
    if (!keys.empty()) {
      s.admin(from, {"MIGRATE", s.servers[to]->node().name(), std::to_string(s.servers[to]->port()),
                     keys.front(), "0", "5000", "REPLACE"});
      s.world.schedule(s.world.now() + step, nullptr, *next);
      return;
    }
    s.admin(to, {"CLUSTER", "SETSLOT", sl, "NODE", s.truth[to].id});
    s.admin(from, {"CLUSTER", "SETSLOT", sl, "NODE", s.truth[to].id});
    *next = nullptr;  // breaks the self-reference
    if (done) done();
  };
  s.world.schedule(s.world.now() + step, nullptr, *next);
}

int SimCluster::failovers() const noexcept {
  return impl_->failovers;
}

}  // namespace lockwire::sim
