// Differential suite for the simulated Redis Cluster (sim_cluster.hpp): the same commands go
// to a real 3+3 cluster of redis-server 7.0.15 (tests/support RedisCluster, started here) and to
// a SimCluster laid out alike; replies are compared after parsing, with only what depends on
// the run masked:
//   - node ids, hosts and ports: each node is named by its role — P0..P2 the primaries in slot
//     order, R0..R2 the replica of each — on both sides (ids are random, ports free ports,
//     hosts 127.0.0.1 against the simulated node names); a host:port or host:port@bus pair
//     becomes the node's name;
//   - values that count time or traffic: replication offsets (CLUSTER SHARDS, ROLE),
//     CLUSTER NODES' ping-sent / pong-received, CLUSTER INFO's cluster_stats_* counters;
//   - HELLO's client id.
// Config epochs, flags, slot ranges, the order of fields and every error text are compared.
// CLUSTER NODES lines and CLUSTER SHARDS' shards come in Redis' hash-table order: compared
// sorted. CLUSTER GETKEYSINSLOT is compared with one key only (the model lists by name).
// gcc 12 reports -Wrestrict for std::string concatenations inlined here (a known false positive,
// GCC PR 105329); only this test's string building triggers it.
#pragma GCC diagnostic ignored "-Wrestrict"
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <stdexcept>
#include <set>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "differential.hpp"
#include "lockwire/sim/sim_cluster.hpp"
#include "raw_client.hpp"
#include "redis_topology.hpp"

namespace lockwire::sim::test {
namespace {

using namespace std::chrono_literals;
using Cmd = std::vector<std::string>;

// Names for one side: id -> label, "host:port" -> label, port -> label.
struct Names {
  std::map<std::string, std::string> ids, addrs, ports;
  std::set<std::string> hosts;  // 127.0.0.1, or the simulated node names
};

// A parsed RESP frame printed canonically, masks applied.
struct Printer {
  const Names& n;
  std::string_view f;
  std::size_t pos = 0;
  bool sort_top = false;
  bool nodes_text = false;

  std::string line() {
    const std::size_t e = f.find("\r\n", pos);
    std::string l(f.substr(pos, e - pos));
    pos = e + 2;
    return l;
  }
  std::string word(const std::string& w) const {
    if (auto it = n.ids.find(w); it != n.ids.end()) return it->second;
    if (auto it = n.addrs.find(w.substr(0, w.find('@'))); it != n.addrs.end()) return it->second;
    if (n.ports.count(w) != 0) return "<port>";  // the model's nodes share 6379
    if (n.hosts.count(w) != 0) return "<host>";
    return w;
  }
  std::string text(const std::string& t) const {
    std::string out, cur;
    auto flush = [&] {
      out += word(cur);
      cur.clear();
    };
    for (char ch : t) {
      if (ch == ' ' || ch == '\n' || ch == '\r' || ch == ',') {
        flush();
        out += ch;
      } else {
        cur += ch;
      }
    }
    flush();
    return out;
  }
  // CLUSTER NODES: mask each line's ping-sent and pong-received, sort the lines.
  std::string nodes(std::string t) const {
    for (const auto& [id, label] : n.ids) {
      for (std::size_t at = t.find(id); at != std::string::npos; at = t.find(id, at)) {
        t.replace(at, id.size(), label);
      }
    }
    std::vector<std::string> lines;
    std::size_t at = 0;
    while (at < t.size()) {
      std::size_t e = t.find('\n', at);
      if (e == std::string::npos) e = t.size();
      std::string l = t.substr(at, e - at);
      at = e + 1;
      std::vector<std::string> w;
      std::size_t s = 0;
      while (s <= l.size()) {
        std::size_t sp = l.find(' ', s);
        if (sp == std::string::npos) sp = l.size();
        w.push_back(l.substr(s, sp - s));
        s = sp + 1;
      }
      if (w.size() > 5) w[4] = w[5] = "<t>";
      std::string o;
      for (auto& x : w) o += (o.empty() ? "" : " ") + word(x);
      lines.push_back(o);
    }
    std::sort(lines.begin(), lines.end());
    std::string o;
    for (auto& l : lines) o += l + "\n";
    return o;
  }
  std::string info(const std::string& t) const {
    std::string o;
    std::size_t at = 0;
    while (at < t.size()) {
      std::size_t e = t.find("\r\n", at);
      if (e == std::string::npos) e = t.size();
      std::string l = t.substr(at, e - at);
      at = e + 2;
      // Which message types were ever sent (meet, auth-req, mfstart, ...) is the run's history:
      // only the totals' presence is compared.
      if (l.rfind("cluster_stats_", 0) == 0) {
        const std::string k = l.substr(0, l.find(':'));
        if (k != "cluster_stats_messages_sent" && k != "cluster_stats_messages_received") continue;
        l = k + ":<n>";
      }
      o += l + "|";
    }
    return o;
  }
  std::string leaf(char type, const std::string& v) const {
    if (v.rfind("cluster_state:", 0) == 0) return info(v);
    if (nodes_text) return nodes(v);
    return std::string(1, type) + text(v);
  }
  std::string value(bool top = false) {
    const std::string l = line();
    const char t = l[0];
    const std::string rest = l.substr(1);
    if (t == '$' || t == '=') {
      if (rest == "-1") return "nil";
      const std::size_t len = std::stoul(rest);
      std::string v(f.substr(pos, len));
      pos += len + 2;
      if (t == '=') v = v.substr(4);  // "txt:"
      return leaf('$', v);
    }
    if (t == '*' || t == '%' || t == '~' || t == '>') {
      if (rest == "-1") return "nil-array";
      std::size_t count = std::stoul(rest) * (t == '%' ? 2 : 1);
      std::vector<std::string> items;
      bool mask_next = false, offset_next = false;
      for (std::size_t i = 0; i < count; ++i) {
        std::string v = value();
        if (mask_next && (v[0] == ':' || offset_next)) v = "<n>";
        offset_next = v == "$replication-offset";
        mask_next = offset_next || v == "$id";
        items.push_back(v);
      }
      if (top && sort_top) std::sort(items.begin(), items.end());
      std::string o(1, t == '%' ? '*' : t);  // RESP3 maps print as RESP2's flat arrays
      o += "[";
      for (auto& x : items) o += x + ",";
      return o + "]";
    }
    if (t == ':') {
      return n.ports.count(rest) != 0 ? "<port>" : ":" + rest;
    }
    return std::string(1, t) + text(rest);
  }
};

std::string canon(const Names& n, const std::string& frame, const Cmd& cmd) {
  Printer p{n, frame};
  const bool cluster = cmd.size() >= 2 && (cmd[0] == "CLUSTER" || cmd[0] == "cluster");
  p.sort_top = cluster && cmd[1] == "SHARDS";
  p.nodes_text = cluster && cmd[1] == "NODES";
  std::string o = p.value(true);
  if (!cmd.empty() && cmd[0] == "ROLE") {
    // offsets (ints and bulk strings) of ROLE: mask digits-only words after the role
    std::string m;
    bool digits = false;
    for (char ch : o) {
      const bool d = ch >= '0' && ch <= '9';
      if (d && !digits) m += "#";
      if (!d) m += ch;
      digits = d;
    }
    o = m;
  }
  return o;
}

// Labels from CLUSTER NODES as one node reports it (primaries by their first slot).
Names names_from(const std::string& nodes_frame, std::set<std::string> hosts) {
  Names n;
  n.hosts = std::move(hosts);
  std::string t = nodes_frame.substr(nodes_frame.find("\r\n") + 2);
  if (t.rfind("txt:", 0) == 0) t = t.substr(4);
  struct Row {
    std::string id, addr, port, primary_of;
    int first_slot = -1;
  };
  std::vector<Row> rows;
  std::size_t at = 0;
  while (at < t.size()) {
    std::size_t e = t.find('\n', at);
    if (e == std::string::npos) break;
    std::string l = t.substr(at, e - at);
    at = e + 1;
    std::vector<std::string> w;
    std::size_t s = 0;
    while (s < l.size()) {
      std::size_t sp = l.find(' ', s);
      if (sp == std::string::npos) sp = l.size();
      w.push_back(l.substr(s, sp - s));
      s = sp + 1;
    }
    if (w.size() < 8) continue;
    Row r;
    r.id = w[0];
    r.addr = w[1].substr(0, w[1].find('@'));
    r.port = r.addr.substr(r.addr.rfind(':') + 1);
    r.primary_of = w[3];
    if (w.size() > 8) r.first_slot = std::stoi(w[8]);
    rows.push_back(r);
  }
  std::vector<Row*> prim;
  for (auto& r : rows)
    if (r.primary_of == "-") prim.push_back(&r);
  std::sort(prim.begin(), prim.end(), [](Row* a, Row* b) { return a->first_slot < b->first_slot; });
  for (std::size_t k = 0; k < prim.size(); ++k) {
    const std::string label = "<P" + std::to_string(k) + ">";
    n.ids[prim[k]->id] = n.addrs[prim[k]->addr] = n.ports[prim[k]->port] = label;
    for (auto& r : rows) {
      if (r.primary_of == prim[k]->id) {
        const std::string rl = "<R" + std::to_string(k) + ">";
        n.ids[r.id] = n.addrs[r.addr] = n.ports[r.port] = rl;
      }
    }
  }
  return n;
}

class ClusterDiff : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    real_ = std::make_unique<lockwire::test::RedisCluster>(3, 1);
    // Until every node knows the three replicas as replicas and each has synced (CLUSTER
    // SHARDS: no "loading").
    auto settled = [] {
      for (std::size_t k = 0; k < real_->size(); ++k) {
        const std::string nodes = real_->node(k).cli({"CLUSTER", "NODES"});
        std::size_t slaves = 0;
        for (std::size_t at = nodes.find("slave"); at != std::string::npos; at = nodes.find("slave", at + 1)) ++slaves;
        if (slaves != 3) return false;
        if (real_->node(k).cli({"CLUSTER", "SHARDS"}).find("loading") != std::string::npos) return false;
      }
      return true;
    };
    for (int i = 0; i < 300 && !settled(); ++i) std::this_thread::sleep_for(100ms);
  }
  static void TearDownTestSuite() { real_.reset(); }

  void SetUp() override {
    std::vector<Node*> nodes;
    for (int i = 1; i <= 6; ++i) {
      std::string name = "n";
      name += std::to_string(i);
      nodes.push_back(&w_.add_node(name));
    }
    model_ = std::make_unique<SimCluster>(w_, nodes);
    w_.run_for(1100ms);  // one offsets refresh: the replicas are no longer "loading"
    // Labels from each side's own CLUSTER NODES.
    lockwire::test::RedisServer& r0 = real_->node(0);
    TcpConn t(r0.port());
    t.send(encode_command({"CLUSTER", "NODES"}));
    const auto got = t.read_frames(1, false, 3000);
    ASSERT_EQ(got.size(), 1u);
    real_names_ = names_from(got[0], {"127.0.0.1"});
    Raw m(w_, cli_, model_->server(0).endpoint());
    model_names_ = names_from(m.call({"CLUSTER", "NODES"}), {"n1", "n2", "n3", "n4", "n5", "n6"});
    ASSERT_EQ(real_names_.ids.size(), 6u);
    ASSERT_EQ(model_names_.ids.size(), 6u);
    // Model hosts are node names: each is its own label.
    for (auto& [addr, label] : model_names_.addrs) model_host_[addr.substr(0, addr.find(':'))] = label;
  }

  // The real node and the model node with this label.
  struct Pair {
    std::unique_ptr<TcpConn> real;
    std::unique_ptr<Raw> model;
  };
  Pair open(const std::string& label) {
    Pair p;
    for (std::size_t i = 0; i < real_->size(); ++i) {
      if (real_names_.ports[std::to_string(real_->node(i).port())] == label)
        p.real = std::make_unique<TcpConn>(real_->node(i).port());
    }
    for (std::size_t i = 0; i < model_->size(); ++i) {
      if (model_host_[model_->server(i).node().name()] == label)
        p.model = std::make_unique<Raw>(w_, cli_, model_->server(i).endpoint());
    }
    if (!p.real || !p.model) throw std::runtime_error("no node " + label);
    return p;
  }
  std::string id_of(const std::string& label, bool real) {
    for (auto& [id, l] : (real ? real_names_ : model_names_).ids)
      if (l == label) return id;
    return {};
  }

  // Each command on both sides; {id:Pk}/{id:Rk} in an argument is that node's id on each side.
  void converse(Pair& p, const std::vector<Cmd>& cmds) {
    for (const auto& c : cmds) {
      auto expand = [&](bool real) {
        Cmd out = c;
        for (auto& a : out) {
          if (a.rfind("{id:", 0) == 0) a = id_of("<" + a.substr(4, a.size() - 5) + ">", real);
        }
        return out;
      };
      std::string what;
      for (const auto& x : c) what += x + " ";
      p.real->send(encode_command(expand(true)));
      const auto got = p.real->read_frames(1, false, 3000);
      const std::size_t before = p.model->frames.size();
      p.model->s->write(encode_command(expand(false)));
      w_.run_until([&] { return p.model->frames.size() > before; }, w_.now() + 3s);
      ASSERT_FALSE(got.empty()) << what << ": no reply from redis-server";
      ASSERT_GT(p.model->frames.size(), before) << what << ": no reply from the model";
      ++cases_;
      EXPECT_EQ(canon(model_names_, p.model->frames[before], c), canon(real_names_, got[0], c))
          << what << "\nmodel: " << escape_bytes(p.model->frames[before], 3000)
          << "\nreal:  " << escape_bytes(got[0], 3000);
    }
  }
  void settle(std::chrono::milliseconds d) {
    w_.run_for(d);
    std::this_thread::sleep_for(d);
  }

  static std::unique_ptr<lockwire::test::RedisCluster> real_;
  static int cases_;
  World w_{5};
  Node& cli_ = w_.add_node("client");
  std::unique_ptr<SimCluster> model_;
  Names real_names_, model_names_;
  std::map<std::string, std::string> model_host_;
};

std::unique_ptr<lockwire::test::RedisCluster> ClusterDiff::real_;
int ClusterDiff::cases_ = 0;

// Keys: {a} is slot 15495 (P2), {b} 3300 (P0), foo 12182 (P2), lockwire:{r7} see KEYSLOT.
const std::vector<Cmd> kReads = {
    {"CLUSTER", "INFO"},
    {"CLUSTER", "MYID"},
    {"CLUSTER", "SLOTS"},
    {"CLUSTER", "SHARDS"},
    {"CLUSTER", "NODES"},
    {"CLUSTER", "KEYSLOT", "foo"},
    {"CLUSTER", "KEYSLOT", "{R}:x"},
    {"CLUSTER", "KEYSLOT", "a{}b"},
    {"CLUSTER", "KEYSLOT", "{}{x}"},
    {"CLUSTER", "KEYSLOT", "lockwire:{res-1}"},
    {"CLUSTER", "KEYSLOT"},
    {"CLUSTER", "COUNTKEYSINSLOT", "3300"},
    {"CLUSTER", "COUNTKEYSINSLOT", "16384"},
    {"CLUSTER", "COUNTKEYSINSLOT", "x"},
    {"CLUSTER", "GETKEYSINSLOT", "3300", "10"},
    {"CLUSTER", "GETKEYSINSLOT", "3300", "-1"},
    {"CLUSTER", "NOPE"},
    {"ROLE"},
    {"GET", "foo"},
    {"SET", "foo", "1"},
    {"MGET", "{b}1", "{a}1"},
    {"MGET", "{b}1", "{b}2"},
    {"DEL", "{a}1", "{b}1"},
    {"SELECT", "1"},
    {"SELECT", "0"},
    {"ASKING"},
    {"READONLY"},
    {"GET", "foo"},
    {"READWRITE"},
    {"CLUSTER", "FAILOVER"},
    {"CLUSTER", "FAILOVER", "BOGUS"},
    {"CLUSTER", "SETSLOT", "99999", "STABLE"},
    {"CLUSTER", "SETSLOT", "15495", "MIGRATING", "{id:P0}"},
    {"CLUSTER", "SETSLOT", "3300", "MIGRATING", "0000000000000000000000000000000000000000"},
    {"CLUSTER", "SETSLOT", "3300", "IMPORTING", "{id:P1}"},
    {"CLUSTER", "SETSLOT", "3300", "MIGRATING", "{id:R1}"},
    {"CLUSTER", "SETSLOT", "3300", "BOGUS"},
    {"CLUSTER", "SETSLOT", "3300"},
    // What the Cluster vouch reads (issue #28): the node timeout, and failure reports (none on
    // a healthy cluster; ids of 40 lowercase hex characters the node knows, itself included).
    {"CONFIG", "GET", "cluster-node-timeout"},
    {"CLUSTER", "COUNT-FAILURE-REPORTS", "{id:P1}"},
    {"CLUSTER", "COUNT-FAILURE-REPORTS", "{id:P0}"},
    {"CLUSTER", "COUNT-FAILURE-REPORTS", "{id:R2}"},
    {"CLUSTER", "COUNT-FAILURE-REPORTS", "0000000000000000000000000000000000000000"},
    {"CLUSTER", "COUNT-FAILURE-REPORTS", "abc"},
    {"CLUSTER", "COUNT-FAILURE-REPORTS"},
    {"PING"},
};

TEST_F(ClusterDiff, PrimaryResp2AndResp3) {
  Pair p = open("<P0>");
  converse(p, {{"SET", "{b}1", "v"}});
  converse(p, kReads);
  converse(p, {{"HELLO", "3"}});
  converse(p, kReads);
  converse(p, {{"DEL", "{b}1"}});
}

TEST_F(ClusterDiff, ReplicaAnswers) {
  Pair p = open("<R0>");
  converse(p, {{"HELLO", "3"}, {"GET", "{b}1"}, {"SET", "{b}1", "x"}, {"READONLY"},
               {"GET", "{b}1"}, {"SET", "{b}1", "x"}, {"GET", "foo"}, {"MULTI"}, {"GET", "{b}1"},
               {"EXEC"}, {"READWRITE"}, {"GET", "{b}1"}, {"ROLE"}, {"CLUSTER", "MYID"},
               {"CLUSTER", "INFO"}, {"CLUSTER", "SETSLOT", "3300", "STABLE"}});
}

// The blocks lockwire sends (lock/src/protocol_*.cpp), on the owner and on another primary.
std::vector<Cmd> acquire_block(const std::string& r) {
  const std::string h = "lockwire:{" + r + "}", f = "lockwire:{" + r + "}:fence";
  return {{"MULTI"},
          {"HSETNX", h, "x:o1", "3000"},
          {"HLEN", h},
          {"PEXPIRE", h, "3000", "NX"},
          {"ZADD", f, "GT", "1780000000000001", "t"},
          {"ZADD", f, "INCR", "1", "t"},
          {"EXEC"}};
}
std::vector<Cmd> inspect_block(const std::string& r) {
  const std::string h = "lockwire:{" + r + "}", f = "lockwire:{" + r + "}:fence";
  // TTL where lockwire sends PTTL: the simulated network's latency moves PTTL by a millisecond.
  return {{"MULTI"}, {"HGETALL", h}, {"TTL", h}, {"ZSCORE", f, "t"}, {"EXEC"}};
}

TEST_F(ClusterDiff, LockBlocksOnAStableSlot) {
  // {b} (3300) lives on P0; P1 answers MOVED for each queued command, then EXECABORT.
  Pair owner = open("<P0>");
  converse(owner, {{"HELLO", "3"}});
  converse(owner, acquire_block("b"));
  converse(owner, inspect_block("b"));
  converse(owner, {{"WATCH", "lockwire:{b}", "lockwire:{b}:c:o1"}, {"HGETALL", "lockwire:{b}"},
                   {"UNWATCH"}, {"HDEL", "lockwire:{b}", "x:o1"}});
  Pair other = open("<P1>");
  converse(other, {{"HELLO", "3"}});
  converse(other, acquire_block("b"));
  converse(other, {{"HDEL", "lockwire:{b}", "x:o1"}, {"WATCH", "lockwire:{b}"},
                   {"MULTI"}, {"HSET", "lockwire:{b}", "s:o", "1"}, {"EXEC"}});
  converse(owner, {{"DEL", "lockwire:{b}", "lockwire:{b}:fence"}});
}

// Slot 3300 ({b}) MIGRATING on P0 to P1, IMPORTING on P1 from P0, with the holder hash on P0
// and the fence key not yet there: ASK for missing keys, TRYAGAIN for a mix, ASKING on the
// target, MIGRATE, and both slots made STABLE again.
TEST_F(ClusterDiff, LockBlocksOnAMigratingAndAnImportingSlot) {
  Pair src = open("<P0>");
  Pair dst = open("<P1>");
  converse(src, {{"HSET", "lockwire:{b}", "x:o0", "3000"}});
  converse(dst, {{"CLUSTER", "SETSLOT", "3300", "IMPORTING", "{id:P0}"}});
  converse(src, {{"CLUSTER", "SETSLOT", "3300", "MIGRATING", "{id:P1}"}});
  converse(src, {{"CLUSTER", "NODES"}, {"HGETALL", "lockwire:{b}"}, {"PTTL", "lockwire:{b}:fence"}});
  converse(src, acquire_block("b"));  // the fence key is missing: TRYAGAIN at EXEC
  converse(src, inspect_block("b"));
  converse(src, {{"ZSCORE", "lockwire:{b}:fence", "t"}, {"HDEL", "lockwire:{b}:nope", "x"}});
  converse(dst, {{"HGETALL", "lockwire:{b}"}, {"ASKING"}, {"HGETALL", "lockwire:{b}"},
                 {"ASKING"}, {"ZADD", "lockwire:{b}:fence", "INCR", "1", "t"},
                 {"ZSCORE", "lockwire:{b}:fence", "t"}, {"CLUSTER", "NODES"}});
  std::vector<Cmd> asking{{"ASKING"}};
  for (auto& c : acquire_block("b")) asking.push_back(c);
  converse(dst, asking);  // multiple keys, some missing: TRYAGAIN at EXEC
  // MIGRATE the hash over: then P0 answers ASK for it, P1 (with ASKING) serves it.
  const auto port_of = [&](bool real) {
    for (std::size_t i = 0; i < real_->size(); ++i) {
      if (real && real_names_.ports[std::to_string(real_->node(i).port())] == "<P1>")
        return std::to_string(real_->node(i).port());
    }
    return std::string("6379");
  };
  {
    const std::string rp = port_of(true);
    src.real->send(encode_command({"MIGRATE", "127.0.0.1", rp, "lockwire:{b}", "0", "5000"}));
    const auto got = src.real->read_frames(1, false, 3000);
    const std::size_t before = src.model->frames.size();
    std::string host;
    for (auto& [h, l] : model_host_)
      if (l == "<P1>") host = h;
    src.model->s->write(encode_command({"MIGRATE", host, "6379", "lockwire:{b}", "0", "5000"}));
    w_.run_until([&] { return src.model->frames.size() > before; }, w_.now() + 3s);
    ASSERT_EQ(got.size(), 1u);
    ASSERT_GT(src.model->frames.size(), before);
    EXPECT_EQ(src.model->frames[before], got[0]);
    ++cases_;
  }
  converse(src, {{"HGETALL", "lockwire:{b}"}, {"CLUSTER", "COUNTKEYSINSLOT", "3300"}});
  converse(dst, {{"ASKING"}, {"HGETALL", "lockwire:{b}"}, {"CLUSTER", "COUNTKEYSINSLOT", "3300"},
                 {"CLUSTER", "GETKEYSINSLOT", "3300", "5"}});
  // Back: delete on the target, both slots stable.
  converse(dst, {{"ASKING"}, {"DEL", "lockwire:{b}", "lockwire:{b}:fence"},
                 {"CLUSTER", "SETSLOT", "3300", "STABLE"}});
  converse(src, {{"CLUSTER", "SETSLOT", "3300", "STABLE"}, {"GET", "{b}1"}});
  converse(dst, {{"GET", "{b}1"}});
}

// CLUSTER FAILOVER on R0: afterwards R0 is the primary of P0's slots with config epoch 7, and
// P0 answers MOVED. Last: it changes the real cluster for good.
TEST_F(ClusterDiff, ZFailover) {
  Pair rep = open("<R0>");
  converse(rep, {{"CLUSTER", "FAILOVER"}});
  settle(1500ms);
  converse(rep, {{"SET", "{b}1", "x"}, {"ROLE"}, {"CLUSTER", "INFO"}, {"CLUSTER", "NODES"},
                 {"CLUSTER", "SLOTS"}, {"CLUSTER", "SHARDS"}, {"HELLO", "3"}});
  Pair old = open("<P0>");
  converse(old, {{"SET", "{b}1", "x"}, {"GET", "{b}1"}, {"ROLE"}, {"CLUSTER", "INFO"},
                 {"CLUSTER", "FAILOVER", "BOGUS"}, {"HELLO", "3"}});
  Pair other = open("<P2>");
  converse(other, {{"GET", "{b}1"}, {"CLUSTER", "INFO"}, {"CLUSTER", "NODES"}});
  converse(rep, {{"DEL", "{b}1"}});
  std::printf("cluster differential: %d cases compared\n", cases_);
}

}  // namespace
}  // namespace lockwire::sim::test
