// Redis' cluster.c as a client sees it: key slots, getNodeByQuery's refusals (MOVED, ASK,
// TRYAGAIN, CROSSSLOT, CLUSTERDOWN), ASKING / READONLY / READWRITE, the CLUSTER subcommands
// (INFO MYID NODES SLOTS SHARDS KEYSLOT COUNTKEYSINSLOT GETKEYSINSLOT SETSLOT FAILOVER
// COUNT-FAILURE-REPORTS) and
// MIGRATE. What the node believes comes from the host's gossip (Impl::cview); the bus itself
// is modelled in sim/src/cluster*.cpp.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "commands.hpp"

namespace lockwire::sim {

int cluster_key_slot(std::string_view key) noexcept {
  const std::size_t open = key.find('{');
  if (open != std::string_view::npos) {
    const std::size_t close = key.find('}', open + 1);
    // An empty tag "{}" does not count: the whole key is hashed.
    if (close != std::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  // CRC16 XMODEM (polynomial 0x1021, initial 0), bit by bit: keys are short.
  unsigned crc = 0;
  for (const char ch : key) {
    crc ^= static_cast<unsigned>(static_cast<unsigned char>(ch)) << 8;
    for (int i = 0; i < 8; ++i) crc = (crc & 0x8000u) != 0 ? (crc << 1) ^ 0x1021u : crc << 1;
    crc &= 0xffffu;
  }
  return static_cast<int>(crc & 0x3fffu);  // 16384 slots
}

}  // namespace lockwire::sim

namespace lockwire::sim::model {

namespace {

constexpr int kSlots = ClusterView::kClusterSlots;

// The key arguments of one command (getKeysFromCommand for the modelled table; MIGRATE's keys
// move: argv[3], or what follows KEYS when argv[3] is empty).
std::vector<const std::string*> keys_of(const CmdDef& cmd, const Args& a) {
  std::vector<const std::string*> out;
  if (cmd.fn == cmd_migrate) {
    if (a.size() > 3 && !a[3].empty()) {
      out.push_back(&a[3]);
    } else {
      for (std::size_t i = 6; i < a.size(); ++i) {
        if (ieq(a[i], "keys")) {
          for (std::size_t k = i + 1; k < a.size(); ++k) out.push_back(&a[k]);
          break;
        }
      }
    }
    return out;
  }
  if (cmd.first_key <= 0) return out;
  const int argc = static_cast<int>(a.size());
  const int last = cmd.last_key < 0 ? argc + cmd.last_key : cmd.last_key;
  const int step = std::max(1, cmd.step);
  for (int i = cmd.first_key; i <= last && i < argc; i += step) {
    out.push_back(&a[static_cast<std::size_t>(i)]);
  }
  return out;
}

bool slot_arg(Impl& s, Client& c, const std::string& arg, int& slot) {
  std::int64_t v = 0;
  if (!string2ll(arg, v) || v < 0 || v >= kSlots) {
    s.error(c, "Invalid or out of range slot");
    return false;
  }
  slot = static_cast<int>(v);
  return true;
}

// Slot ranges of node `idx` in slot order, as clusterGenNodesSlotsInfo makes them.
std::vector<std::pair<int, int>> ranges_of(const ClusterView& v, int idx) {
  std::vector<std::pair<int, int>> out;
  for (int i = 0; i < kSlots; ++i) {
    if (v.slot_owner[static_cast<std::size_t>(i)] != idx) continue;
    if (!out.empty() && out.back().second == i - 1) {
      out.back().second = i;
    } else {
      out.emplace_back(i, i);
    }
  }
  return out;
}

// What this node reports as a node's offset (its own: the live one).
std::int64_t offset_of(const Impl& s, const ClusterNodeInfo& n) {
  return n.id == s.cview.myself ? s.repl_offset : n.repl_offset;
}

// isReplicaAvailable: listed in CLUSTER SLOTS once it has synced and while not failed.
bool replica_available(const Impl& s, const ClusterNodeInfo& n) {
  return !n.failed && offset_of(s, n) != 0;
}

std::vector<int> replicas_of(const ClusterView& v, const std::string& primary_id) {
  std::vector<int> out;
  for (std::size_t i = 0; i < v.nodes.size(); ++i) {
    if (!v.nodes[i].primary && v.nodes[i].primary_of == primary_id) out.push_back(static_cast<int>(i));
  }
  return out;
}

// addNodeToNodeReply: ip, port, id, and an empty map of other endpoints (preferred type ip, no
// hostname).
void node_entry(Impl& s, Client& c, const ClusterNodeInfo& n) {
  s.array(c, 4);
  s.bulk(c, n.ip);
  s.integer(c, n.port);
  s.bulk(c, n.id);
  s.map(c, 0);
}

void shard_node(Impl& s, Client& c, const ClusterNodeInfo& n) {
  const std::int64_t off = offset_of(s, n);
  s.map(c, 7);
  s.bulk(c, "id");
  s.bulk(c, n.id);
  s.bulk(c, "port");
  s.integer(c, n.port);
  s.bulk(c, "ip");
  s.bulk(c, n.ip);
  s.bulk(c, "endpoint");
  s.bulk(c, n.ip);
  s.bulk(c, "role");
  s.bulk(c, n.primary ? "master" : "replica");
  s.bulk(c, "replication-offset");
  s.integer(c, off);
  s.bulk(c, "health");
  s.bulk(c, n.failed ? "fail" : (!n.primary && off == 0 ? "loading" : "online"));
}

// clusterCommand's first check (after processCommand's arity and subcommand checks).
bool disabled(Impl& s, Client& c) {
  if (s.opt.cluster_enabled) return false;
  s.error(c, "This instance has cluster support disabled");
  return true;
}

}  // namespace

void cmd_asking(Impl& s, Client& c, Args&) {
  if (disabled(s, c)) return;
  c.asking = true;
  s.ok(c);
}

void cmd_readonly(Impl& s, Client& c, Args&) {
  if (disabled(s, c)) return;
  c.readonly = true;
  s.ok(c);
}

void cmd_readwrite(Impl& s, Client& c, Args&) {
  if (disabled(s, c)) return;
  c.readonly = false;
  s.ok(c);
}

void cluster_info(Impl& s, Client& c, Args&) {
  if (disabled(s, c)) return;
  const ClusterView& v = s.cview;
  int assigned = 0, ok = 0, pfail = 0, fail = 0;
  for (const int o : v.slot_owner) {
    if (o < 0) continue;
    ++assigned;
    const auto& n = v.nodes[static_cast<std::size_t>(o)];
    if (n.failed) {
      ++fail;
    } else if (n.pfail) {
      ++pfail;
    } else {
      ++ok;
    }
  }
  int size = 0;  // primaries serving at least one slot
  for (std::size_t i = 0; i < v.nodes.size(); ++i) {
    if (v.nodes[i].primary &&
        std::find(v.slot_owner.begin(), v.slot_owner.end(), static_cast<int>(i)) != v.slot_owner.end())
      ++size;
  }
  std::uint64_t my_epoch = 0;
  if (const auto* me = s.cluster_node(v.myself)) {
    my_epoch = me->config_epoch;
    if (!me->primary) {
      if (const auto* p = s.cluster_node(me->primary_of)) my_epoch = p->config_epoch;
    }
  }
  // The bus message counters are the host's business (the gossip is not byte-modelled): a
  // plausible, growing count, compared as masked by the differential suite.
  const std::int64_t msgs = std::max<std::int64_t>(1, s.wall_ms() / 100 % 1000000);
  std::string t;
  t += "cluster_state:" + std::string(v.ok ? "ok" : "fail") + "\r\n";
  t += "cluster_slots_assigned:" + ll2s(assigned) + "\r\n";
  t += "cluster_slots_ok:" + ll2s(ok) + "\r\n";
  t += "cluster_slots_pfail:" + ll2s(pfail) + "\r\n";
  t += "cluster_slots_fail:" + ll2s(fail) + "\r\n";
  t += "cluster_known_nodes:" + ll2s(static_cast<std::int64_t>(v.nodes.size())) + "\r\n";
  t += "cluster_size:" + ll2s(size) + "\r\n";
  t += "cluster_current_epoch:" + std::to_string(v.current_epoch) + "\r\n";
  t += "cluster_my_epoch:" + std::to_string(my_epoch) + "\r\n";
  t += "cluster_stats_messages_ping_sent:" + ll2s(msgs) + "\r\n";
  t += "cluster_stats_messages_pong_sent:" + ll2s(msgs) + "\r\n";
  t += "cluster_stats_messages_sent:" + ll2s(2 * msgs) + "\r\n";
  t += "cluster_stats_messages_ping_received:" + ll2s(msgs) + "\r\n";
  t += "cluster_stats_messages_pong_received:" + ll2s(msgs) + "\r\n";
  t += "cluster_stats_messages_received:" + ll2s(2 * msgs) + "\r\n";
  t += "total_cluster_links_buffer_limit_exceeded:0\r\n";
  s.verbatim(c, t);
}

void cluster_myid(Impl& s, Client& c, Args&) {
  if (disabled(s, c)) return;
  s.bulk(c, s.cview.myself);
}

void cluster_nodes(Impl& s, Client& c, Args&) {
  if (disabled(s, c)) return;
  const ClusterView& v = s.cview;
  // Every node's slot ranges in one pass over the slots, kept until the map changes (the
  // Cluster vouch asks every node every 400 ms).
  auto& ranges = s.slot_ranges;
  if (ranges.size() != v.nodes.size()) {
    ranges.assign(v.nodes.size(), {});
    for (int slot = 0; slot < kSlots; ++slot) {
      const int o = v.slot_owner[static_cast<std::size_t>(slot)];
      if (o < 0 || static_cast<std::size_t>(o) >= ranges.size()) continue;
      auto& r = ranges[static_cast<std::size_t>(o)];
      if (!r.empty() && r.back().second == slot - 1) {
        r.back().second = slot;
      } else {
        r.emplace_back(slot, slot);
      }
    }
  }
  std::string t;
  for (std::size_t i = 0; i < v.nodes.size(); ++i) {
    const auto& n = v.nodes[i];
    const bool me = n.id == v.myself;
    t += n.id + " " + n.ip + ":" + ll2s(n.port) + "@" + ll2s(n.port + 10000) + " ";
    std::string flags;
    if (me) flags += "myself,";
    flags += n.primary ? "master," : "slave,";
    if (n.pfail) flags += "fail?,";
    if (n.failed) flags += "fail,";
    flags.pop_back();
    t += flags + " " + (n.primary ? std::string("-") : n.primary_of);
    std::uint64_t epoch = n.config_epoch;
    if (!n.primary) {
      if (const auto* p = s.cluster_node(n.primary_of)) epoch = p->config_epoch;
    }
    t += " " + ll2s(me ? 0 : n.ping_sent_ms) + " " +
         ll2s(me ? s.wall_ms() / 1000 * 1000 : n.pong_received_ms) + " " +
         std::to_string(epoch) + " " + (me || n.connected ? "connected" : "disconnected");
    for (const auto& [lo, hi] : ranges[i]) {
      t.append(" ").append(ll2s(lo));
      if (lo != hi) t.append("-").append(ll2s(hi));
    }
    if (me) {
      // Slot order; a slot both migrating and importing shows as migrating (as Redis' loop).
      std::map<int, std::pair<const char*, const std::string*>> marks;
      for (const auto& [slot, id] : s.importing) marks[slot] = {"-<-", &id};
      for (const auto& [slot, id] : s.migrating) marks[slot] = {"->-", &id};
      for (const auto& [slot, m] : marks) {
        t.append(" [").append(ll2s(slot)).append(m.first).append(*m.second).append("]");
      }
    }
    t += "\n";
  }
  s.verbatim(c, t);
}

void cluster_slots(Impl& s, Client& c, Args&) {
  if (disabled(s, c)) return;
  const ClusterView& v = s.cview;
  struct Range {
    int lo, hi, node;
  };
  std::vector<Range> rs;
  for (int i = 0; i < kSlots; ++i) {
    const int o = v.slot_owner[static_cast<std::size_t>(i)];
    if (o < 0) continue;
    if (!rs.empty() && rs.back().node == o && rs.back().hi == i - 1) {
      rs.back().hi = i;
    } else {
      rs.push_back({i, i, o});
    }
  }
  s.array(c, rs.size());
  for (const auto& r : rs) {
    const auto& p = v.nodes[static_cast<std::size_t>(r.node)];
    std::vector<int> reps;
    for (const int i : replicas_of(v, p.id)) {
      if (replica_available(s, v.nodes[static_cast<std::size_t>(i)])) reps.push_back(i);
    }
    s.array(c, 3 + reps.size());
    s.integer(c, r.lo);
    s.integer(c, r.hi);
    node_entry(s, c, p);
    for (const int i : reps) node_entry(s, c, v.nodes[static_cast<std::size_t>(i)]);
  }
}

void cluster_shards(Impl& s, Client& c, Args&) {
  if (disabled(s, c)) return;
  const ClusterView& v = s.cview;
  std::size_t shards = 0;
  for (const auto& n : v.nodes) shards += n.primary ? 1 : 0;
  s.array(c, shards);
  for (std::size_t i = 0; i < v.nodes.size(); ++i) {
    const auto& p = v.nodes[i];
    if (!p.primary) continue;
    s.map(c, 2);
    s.bulk(c, "slots");
    const auto rs = ranges_of(v, static_cast<int>(i));
    s.array(c, rs.size() * 2);
    for (const auto& [lo, hi] : rs) {
      s.integer(c, lo);
      s.integer(c, hi);
    }
    s.bulk(c, "nodes");
    const auto reps = replicas_of(v, p.id);
    s.array(c, 1 + reps.size());
    shard_node(s, c, p);
    for (const int r : reps) shard_node(s, c, v.nodes[static_cast<std::size_t>(r)]);
  }
}

void cluster_keyslot(Impl& s, Client& c, Args& a) {
  if (disabled(s, c)) return;
  s.integer(c, cluster_key_slot(a[2]));
}

void cluster_countkeysinslot(Impl& s, Client& c, Args& a) {
  if (disabled(s, c)) return;
  std::int64_t slot = 0;
  if (!get_ll(s, c, a[2], slot)) return;
  if (slot < 0 || slot >= kSlots) return s.error(c, "Invalid slot");
  std::int64_t n = 0;
  for (const auto& [k, v] : s.dbs[0].dict) n += cluster_key_slot(k) == slot ? 1 : 0;
  s.integer(c, n);
}

// Known difference: Redis lists a slot's keys newest first (its per-slot list); the model lists
// them by name, so only the count and the set of names can be compared.
void cluster_getkeysinslot(Impl& s, Client& c, Args& a) {
  if (disabled(s, c)) return;
  std::int64_t slot = 0, max = 0;
  if (!get_ll(s, c, a[2], slot) || !get_ll(s, c, a[3], max)) return;
  if (slot < 0 || slot >= kSlots || max < 0) return s.error(c, "Invalid slot or number of keys");
  std::vector<std::string> keys;
  for (const auto& [k, v] : s.dbs[0].dict) {
    if (cluster_key_slot(k) == slot) keys.push_back(k);
  }
  std::sort(keys.begin(), keys.end());
  if (static_cast<std::int64_t>(keys.size()) > max) keys.resize(static_cast<std::size_t>(max));
  s.array(c, keys.size());
  for (const auto& k : keys) s.bulk(c, k);
}

void cluster_setslot(Impl& s, Client& c, Args& a) {
  if (disabled(s, c)) return;
  if (s.cluster_i_am_replica()) return s.error(c, "Please use SETSLOT only with masters.");
  int slot = 0;
  if (!slot_arg(s, c, a[2], slot)) return;
  const int me = s.cluster_my_index();
  const int owner = s.cview.slot_owner[static_cast<std::size_t>(slot)];
  const std::string& action = a[3];
  auto target = [&](const char* unknown) -> const ClusterNodeInfo* {
    const ClusterNodeInfo* n = s.cluster_node(a[4]);
    if (n == nullptr) {
      s.error(c, std::string(unknown) + a[4]);
      return nullptr;
    }
    if (!n->primary) {
      s.error(c, "Target node is not a master");
      return nullptr;
    }
    return n;
  };
  if (ieq(action, "migrating") && a.size() == 5) {
    if (owner != me) return s.error(c, "I'm not the owner of hash slot " + ll2s(slot));
    const auto* n = target("I don't know about node ");
    if (n == nullptr) return;
    s.migrating[slot] = n->id;
  } else if (ieq(action, "importing") && a.size() == 5) {
    if (owner == me) return s.error(c, "I'm already the owner of hash slot " + ll2s(slot));
    const auto* n = target("I don't know about node ");
    if (n == nullptr) return;
    s.importing[slot] = n->id;
  } else if (ieq(action, "stable") && a.size() == 4) {
    s.importing.erase(slot);
    s.migrating.erase(slot);
  } else if (ieq(action, "node") && a.size() == 5) {
    const auto* n = target("Unknown node ");
    if (n == nullptr) return;
    const std::string id = n->id;
    std::int64_t held = 0;
    for (const auto& [k, v] : s.dbs[0].dict) held += cluster_key_slot(k) == slot ? 1 : 0;
    if (owner == me && id != s.cview.myself && held != 0) {
      return s.error(c, "Can't assign hashslot " + ll2s(slot) +
                            " to a different node while I still hold keys for this hash slot.");
    }
    if (held == 0) s.migrating.erase(slot);
    int idx = 0;
    for (std::size_t i = 0; i < s.cview.nodes.size(); ++i) {
      if (s.cview.nodes[i].id == id) idx = static_cast<int>(i);
    }
    s.cview.slot_owner[static_cast<std::size_t>(slot)] = idx;
    s.slot_ranges.clear();
    if (id == s.cview.myself && s.importing.count(slot) != 0) {
      // clusterBumpConfigEpochWithoutConsensus: the new owner's claim must win the gossip.
      auto& mine = s.cview.nodes[static_cast<std::size_t>(me)];
      std::uint64_t max_epoch = s.cview.current_epoch;
      for (const auto& o : s.cview.nodes) max_epoch = std::max(max_epoch, o.config_epoch);
      if (mine.config_epoch == 0 || mine.config_epoch != max_epoch) {
        mine.config_epoch = ++s.cview.current_epoch;
      }
      s.importing.erase(slot);
    }
    // A primary left without slots becomes a replica of the new owner
    // (cluster-allow-replica-migration yes): the host reconfigures it (Hooks::cluster).
  } else {
    return s.error(c, "Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP");
  }
  s.ok(c);
  if (s.hooks.cluster) s.hooks.cluster(a);
}

void cluster_failover(Impl& s, Client& c, Args& a) {
  if (disabled(s, c)) return;
  bool force = false;
  if (a.size() == 3) {
    if (ieq(a[2], "force") || ieq(a[2], "takeover")) {
      force = true;
    } else {
      return s.syntax(c);
    }
  }
  const auto* me = s.cluster_node(s.cview.myself);
  if (me == nullptr || me->primary) {
    return s.error(c, "You should send CLUSTER FAILOVER to a replica");
  }
  const auto* p = s.cluster_node(me->primary_of);
  if (p == nullptr) return s.error(c, "I'm a replica but my master is unknown to me");
  if (!force && (p->failed || !p->connected)) {
    return s.error(c, "Master is down or failed, please use CLUSTER FAILOVER FORCE");
  }
  s.ok(c);
  if (s.hooks.cluster) s.hooks.cluster(a);
}

// CLUSTER COUNT-FAILURE-REPORTS <node-id>: clusterLookupNode (an id of 40 characters this
// node knows, itself included), then clusterNodeFailureReportsCount: the reports about it
// received within 2 * cluster-node-timeout of now (older ones are dropped by the call).
void cluster_count_failure_reports(Impl& s, Client& c, Args& a) {
  if (disabled(s, c)) return;
  if (a[2].size() != 40 || s.cluster_node(a[2]) == nullptr) {
    return s.error(c, "Unknown node " + a[2]);
  }
  std::int64_t nt = 15000;
  if (auto it = s.config.find("cluster-node-timeout"); it != s.config.end()) string2ll(it->second, nt);
  const std::int64_t now = s.wall_ms();
  std::int64_t n = 0;
  for (const auto& r : s.fail_reports) n += r.subject == a[2] && now - r.received_ms <= nt * 2 ? 1 : 0;
  s.integer(c, n);
}

// MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE] [AUTH pw] [AUTH2 u pw]
// [KEYS key ...]: the keys go to the target (Hooks::migrate: RESTORE there, synchronously, as
// Redis blocks on its socket), then are deleted here unless COPY.
void cmd_migrate(Impl& s, Client& c, Args& a) {
  bool copy = false, replace = false;
  std::size_t first_key = 3, num_keys = 1;
  for (std::size_t j = 6; j < a.size(); ++j) {
    const bool more = j + 1 < a.size();
    if (ieq(a[j], "copy")) {
      copy = true;
    } else if (ieq(a[j], "replace")) {
      replace = true;
    } else if (ieq(a[j], "auth") && more) {
      ++j;
    } else if (ieq(a[j], "auth2") && j + 2 < a.size()) {
      j += 2;
    } else if (ieq(a[j], "keys")) {
      if (!a[3].empty()) {
        return s.error(c,
                       "When using MIGRATE KEYS option, the key argument must be set to the empty "
                       "string");
      }
      first_key = j + 1;
      num_keys = a.size() - j - 1;
      break;
    } else {
      return s.syntax(c);
    }
  }
  std::int64_t timeout = 0, dbid = 0;
  if (!get_ll(s, c, a[5], timeout) || !get_ll(s, c, a[4], dbid)) return;
  std::int64_t port = 0;
  if (!string2ll(a[2], port)) port = 0;
  Db& db = DB(s, c);
  RedisSnapshot keys;
  keys.dbs.resize(1);
  std::vector<std::string> names;
  for (std::size_t j = first_key; j < first_key + num_keys && j < a.size(); ++j) {
    Value* v = s.lookup(db, a[j]);
    if (v == nullptr) continue;
    keys.dbs[0].dict[a[j]] = *v;
    const std::int64_t when = s.get_expire(db, a[j]);
    if (when >= 0) {
      keys.dbs[0].expires[a[j]] = when;
      keys.dbs[0].by_time.insert({when, a[j]});
    }
    names.push_back(a[j]);
  }
  if (names.empty()) return s.status(c, "NOKEY");
  const std::string err = s.hooks.migrate
                              ? s.hooks.migrate(a[1], static_cast<int>(port),
                                                static_cast<int>(dbid), keys, replace)
                              : std::string("NOHOST");
  if (err == "NOHOST") return s.error(c, "-IOERR error or timeout connecting to the client");
  if (!err.empty()) return s.error(c, "Target instance replied with error: " + err);
  if (!copy) {
    for (const auto& k : names) {
      if (db.dict.count(k) == 0) continue;
      s.db_delete(db, k);
      s.signal_modified(&c, db, k);
      s.propagate(c, Args{"DEL", k});
    }
  }
  s.ok(c);
}

}  // namespace lockwire::sim::model

namespace lockwire::sim {

using namespace model;

const ClusterNodeInfo* RedisModel::Impl::cluster_node(std::string_view id) const {
  for (const auto& n : cview.nodes) {
    if (n.id == id) return &n;
  }
  return nullptr;
}

int RedisModel::Impl::cluster_my_index() const {
  for (std::size_t i = 0; i < cview.nodes.size(); ++i) {
    if (cview.nodes[i].id == cview.myself) return static_cast<int>(i);
  }
  return -1;
}

bool RedisModel::Impl::cluster_i_am_replica() const {
  const auto* me = cluster_node(cview.myself);
  return me != nullptr && !me->primary;
}

// processCommand's cluster step (after ACL, before OOM and READONLY): getNodeByQuery, every
// rule of 7.0.15 — an EXEC is checked over all its queued commands.
bool RedisModel::Impl::cluster_redirect(Client& c, const CmdDef& cmd, const Args& a) {
  if (!opt.cluster_enabled) return false;
  const bool is_exec = cmd.fn == cmd_exec;
  if (!is_exec && cmd.first_key <= 0 && cmd.fn != cmd_migrate) return false;  // no key specs
  if (is_exec && !c.multi) return false;  // EXEC answers its own error
  std::vector<std::pair<const CmdDef*, const Args*>> cmds;
  if (is_exec) {
    for (const auto& q : c.queued) cmds.emplace_back(find_command(q), &q);
  } else {
    cmds.emplace_back(&cmd, &a);
  }
  const int me = cluster_my_index();
  const std::string* first = nullptr;
  int slot = 0, owner = -1, missing = 0, existing = 0;
  bool migrating_slot = false, importing_slot = false, multiple = false;
  std::string refusal;
  Db& db0 = dbs[0];
  for (const auto& [d, args] : cmds) {
    if (d == nullptr) continue;
    for (const std::string* k : keys_of(*d, *args)) {
      const int ks = cluster_key_slot(*k);
      if (first == nullptr) {
        first = k;
        slot = ks;
        owner = cview.slot_owner.empty() ? -1 : cview.slot_owner[static_cast<std::size_t>(slot)];
        if (owner < 0) {
          refusal = "-CLUSTERDOWN Hash slot not served";
          break;
        }
        if (owner == me && migrating.count(slot) != 0) {
          migrating_slot = true;
        } else if (importing.count(slot) != 0) {
          importing_slot = true;
        }
      } else if (*k != *first) {
        if (ks != slot) {
          refusal = "-CROSSSLOT Keys in request don't hash to the same slot";
          break;
        }
        multiple = true;
      }
      if (migrating_slot || importing_slot) {
        // lookupKeyRead with NOEXPIRE: an expired key is missing (and stays).
        const bool here = db0.dict.count(*k) != 0 && !key_is_expired(db0, *k);
        ++(here ? existing : missing);
      }
    }
    if (!refusal.empty()) break;
  }
  const bool is_write = (cmd.flags & F_WRITE) || (is_exec && (c.queued_flags & F_WRITE));
  if (refusal.empty() && first != nullptr) {
    const auto& owner_node = cview.nodes[static_cast<std::size_t>(owner)];
    auto redirect = [&](const char* kind, const ClusterNodeInfo& n) {
      return "-" + std::string(kind) + " " + ll2s(slot) + " " + n.ip + ":" + ll2s(n.port);
    };
    const ClusterNodeInfo* me_node = me >= 0 ? &cview.nodes[static_cast<std::size_t>(me)] : nullptr;
    if (!cview.ok) {
      refusal = "-CLUSTERDOWN The cluster is down";  // cluster-allow-reads-when-down no
    } else if ((migrating_slot || importing_slot) && cmd.fn == cmd_migrate) {
      // MIGRATE works on an open slot whatever its keys.
    } else if (migrating_slot && missing != 0) {
      if (existing != 0) {
        refusal = "-TRYAGAIN Multiple keys request during rehashing of slot";
      } else if (const auto* to = cluster_node(migrating.at(slot))) {
        refusal = redirect("ASK", *to);
      }
    } else if (importing_slot && c.asking) {
      if (multiple && missing != 0) refusal = "-TRYAGAIN Multiple keys request during rehashing of slot";
    } else if (c.readonly && !is_write && me_node != nullptr && !me_node->primary &&
               me_node->primary_of == owner_node.id) {
      // READONLY: a replica answers reads of its primary's slots.
    } else if (owner != me) {
      refusal = redirect("MOVED", owner_node);
    }
  }
  if (refusal.empty()) return false;
  // The refused EXEC discards its transaction (a plain error, no EXECABORT); a refused command
  // inside MULTI flags it.
  if (is_exec) {
    discard_transaction(*this, c);
  } else if (c.multi) {
    c.dirty_exec = true;
  }
  error(c, refusal);
  return true;
}

void RedisModel::set_cluster_view(ClusterView view) {
  if (view.slot_owner.size() != static_cast<std::size_t>(ClusterView::kClusterSlots)) {
    view.slot_owner.assign(ClusterView::kClusterSlots, -1);
  }
  impl_->cview = std::move(view);
  impl_->slot_ranges.clear();
}

const ClusterView& RedisModel::cluster_view() const noexcept {
  return impl_->cview;
}

void RedisModel::set_failure_reports(std::vector<FailReport> reports) {
  impl_->fail_reports = std::move(reports);
}

std::string RedisModel::migrating_to(int slot) const {
  auto it = impl_->migrating.find(slot);
  return it == impl_->migrating.end() ? std::string() : it->second;
}

std::string RedisModel::importing_from(int slot) const {
  auto it = impl_->importing.find(slot);
  return it == impl_->importing.end() ? std::string() : it->second;
}

void RedisModel::clear_slot_marks() {
  impl_->migrating.clear();
  impl_->importing.clear();
}

std::size_t RedisModel::count_keys_in_slot(int slot) const {
  std::size_t n = 0;
  for (const auto& [k, v] : impl_->dbs[0].dict) n += cluster_key_slot(k) == slot ? 1 : 0;
  return n;
}

std::vector<std::string> RedisModel::keys_in_slot(int slot) const {
  std::vector<std::string> out;
  for (const auto& [k, v] : impl_->dbs[0].dict) {
    if (cluster_key_slot(k) == slot) out.push_back(k);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void RedisModel::replication_ping() {
  Client tmp;
  tmp.id = 0;
  impl_->propagate(tmp, Args{"PING"});
}

// RESTORE (from MIGRATE) on this node: BUSYKEY unless REPLACE; each key is then propagated to
// this node's replicas as the commands that rebuild it (the model has no DUMP format).
std::string RedisModel::restore_keys(const RedisSnapshot& keys, int db, bool replace) {
  Impl& s = *impl_;
  if (keys.dbs.empty()) return {};
  Db& to = s.dbs[static_cast<std::size_t>(std::clamp(db, 0, static_cast<int>(s.dbs.size()) - 1))];
  const Db& from = keys.dbs[0];
  std::vector<std::string> names;
  for (const auto& [k, v] : from.dict) names.push_back(k);
  std::sort(names.begin(), names.end());
  if (!replace) {
    for (const auto& k : names) {
      if (s.lookup(to, k) != nullptr) return "BUSYKEY Target key name already exists.";
    }
  }
  Client tmp;
  tmp.id = 0;
  tmp.db = s.db_index(to);
  s.cmd_ms = s.wall_ms();
  for (const auto& k : names) {
    const Value& v = from.dict.at(k);
    if (to.dict.count(k) != 0) s.db_delete(to, k);
    to.dict[k] = v;
    auto e = from.expires.find(k);
    if (e != from.expires.end()) s.set_expire(to, k, e->second);
    s.signal_modified(nullptr, to, k);
    s.trace("key", "restore " + k);
    s.propagate(tmp, Args{"DEL", k});
    switch (v.kind) {
      case Value::Kind::string:
        s.propagate(tmp, Args{"SET", k, v.str});
        break;
      case Value::Kind::hash: {
        Args h{"HSET", k};
        for (const auto& [f, x] : v.hash) {
          h.push_back(f);
          h.push_back(x);
        }
        s.propagate(tmp, h);
        break;
      }
      case Value::Kind::list: {
        Args h{"RPUSH", k};
        for (const auto& e : v.list) h.push_back(e);
        s.propagate(tmp, h);
        break;
      }
      case Value::Kind::set: {
        Args h{"SADD", k};
        for (const auto& m : v.set) h.push_back(m);
        s.propagate(tmp, h);
        break;
      }
      case Value::Kind::zset: {
        Args h{"ZADD", k};
        for (const auto& [score, m] : v.zorder) {
          char buf[32];
          std::snprintf(buf, sizeof buf, "%.17g", score);  // round-trips exactly
          h.push_back(buf);
          h.push_back(m);
        }
        s.propagate(tmp, h);
        break;
      }
    }
    if (e != from.expires.end()) s.propagate(tmp, Args{"PEXPIREAT", k, ll2s(e->second)});
  }
  s.dirty_clients.erase(std::remove(s.dirty_clients.begin(), s.dirty_clients.end(), 0u),
                        s.dirty_clients.end());
  s.before_sleep();
  s.flush_outputs();
  return {};
}

}  // namespace lockwire::sim
