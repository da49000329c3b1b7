#include "redis_topology.hpp"

#include <sstream>
#include <stdexcept>
#include <thread>

namespace lockwire::test {

namespace {

// Polls `pred` every 50 ms until it holds or `limit` passes.
template <class Pred>
bool poll(Pred pred, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return pred();
}

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

}  // namespace

int replicas_in_cluster_nodes(const std::string& table) {
  int seen = 0;
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string id, addr, flags;
    words >> id >> addr >> flags;
    if (flags.find("slave") != std::string::npos) ++seen;
  }
  return seen;
}

RedisCluster::RedisCluster(int primaries, int replicas_per_primary,
                           std::vector<std::string> extra_args) {
  const int n = primaries * (1 + replicas_per_primary);
  for (int i = 0; i < n; ++i) {
    RedisServer::Options o;
    o.cluster_bus = true;
    o.args = {"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
              "--cluster-node-timeout", "2000"};
    o.args.insert(o.args.end(), extra_args.begin(), extra_args.end());
    nodes_.push_back(std::make_unique<RedisServer>(std::move(o)));
  }
  std::string cmd = "redis-cli --cluster create";
  for (const auto& s : nodes_) cmd += " 127.0.0.1:" + std::to_string(s->port());
  cmd += " --cluster-replicas " + std::to_string(replicas_per_primary) + " --cluster-yes 2>&1";
  const std::string out = run(cmd);
  if (out.find("[OK] All 16384 slots covered") == std::string::npos) {
    throw std::runtime_error("redis-cli --cluster create failed: " + out);
  }
  if (!wait_ok()) throw std::runtime_error("the cluster did not reach cluster_state:ok");
  // Every view knows the replicas as replicas: right after `--cluster create` a replica may
  // still show as a slot-less master in some views, and a master in any view could report a
  // primary failing, so a client's first vouch would need more masters than answer.
  const int replicas = primaries * replicas_per_primary;
  const bool agreed = poll(
      [&] {
        for (const auto& s : nodes_) {
          if (replicas_in_cluster_nodes(s->cli({"CLUSTER", "NODES"})) != replicas) return false;
        }
        return true;
      },
      std::chrono::milliseconds(30000));
  if (!agreed) throw std::runtime_error("the cluster's views did not agree on its replicas");
}

bool RedisCluster::wait_ok(std::chrono::milliseconds limit) {
  return poll(
      [&] {
        for (const auto& s : nodes_) {
          const std::string info = s->cli({"CLUSTER", "INFO"});
          if (info.find("cluster_state:ok") == std::string::npos) return false;
          const std::string known = "cluster_known_nodes:" + std::to_string(nodes_.size());
          if (info.find(known) == std::string::npos) return false;
        }
        return true;
      },
      limit);
}

std::string RedisCluster::seeds_url() const {
  std::string url = "redis://";
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (i != 0) url += ",";
    url += "127.0.0.1:" + std::to_string(nodes_[i]->port());
  }
  return url;
}

std::size_t RedisCluster::primary_of(int slot) {
  // CLUSTER SLOTS in redis-cli's plain output: start, end, then ip, port, id per node, the
  // primary first. Parsed line by line.
  const std::string out = nodes_.front()->cli({"CLUSTER", "SLOTS"});
  std::vector<std::string> lines;
  for (std::size_t at = 0; at < out.size();) {
    std::size_t e = out.find('\n', at);
    if (e == std::string::npos) e = out.size();
    lines.push_back(out.substr(at, e - at));
    at = e + 1;
  }
  for (std::size_t i = 0; i + 3 < lines.size(); ++i) {
    long lo = 0, hi = 0;
    try {
      lo = std::stol(lines[i]);
      hi = std::stol(lines[i + 1]);
    } catch (...) {
      continue;
    }
    if (lines[i + 2] != "127.0.0.1" || slot < lo || slot > hi) continue;
    const auto port = static_cast<std::uint16_t>(std::stoul(lines[i + 3]));
    for (std::size_t k = 0; k < nodes_.size(); ++k) {
      if (nodes_[k]->port() == port) return k;
    }
  }
  throw std::runtime_error("no primary for slot " + std::to_string(slot));
}

RedisSentinels::RedisSentinels(std::string master_name, int sentinels,
                               std::chrono::milliseconds down_after)
    : master_(std::move(master_name)) {
  // No diskless-sync delay: the replica syncs at once (5 s saved per topology).
  primary_ = std::make_unique<RedisServer>(
      std::vector<std::string>{"--repl-diskless-sync-delay", "0"});
  replica_ = std::make_unique<RedisServer>(
      std::vector<std::string>{"--replicaof", "127.0.0.1", std::to_string(primary_->port())});
  if (!poll([&] { return replica_->cli({"INFO", "replication"}).find("master_link_status:up") !=
                         std::string::npos; },
            std::chrono::seconds(10))) {
    throw std::runtime_error("the replica did not sync");
  }
  const std::string conf =
      "port %PORT%\nbind 127.0.0.1\nprotected-mode no\ndaemonize no\ndir %DIR%\n"
      "sentinel monitor " + master_ + " 127.0.0.1 " + std::to_string(primary_->port()) +
      " 2\nsentinel down-after-milliseconds " + master_ + " " +
      std::to_string(down_after.count()) + "\nsentinel failover-timeout " + master_ + " 5000\nsentinel parallel-syncs " +
      master_ + " 1\n";
  for (int i = 0; i < sentinels; ++i) {
    RedisServer::Options o;
    o.config_text = conf;
    o.args = {"--sentinel"};
    sentinels_.push_back(std::make_unique<RedisServer>(std::move(o)));
  }
  const bool ready = poll(
      [&] {
        for (const auto& s : sentinels_) {
          const std::string m = s->cli({"SENTINEL", "MASTER", master_});
          // num-slaves / num-other-sentinels as redis-cli prints the flat reply
          auto value_after = [&](const std::string& key) -> long {
            const auto at = m.find(key + "\n");
            if (at == std::string::npos) return -1;
            const auto v = at + key.size() + 1;
            try {
              return std::stol(m.substr(v, m.find('\n', v) - v));
            } catch (...) {
              return -1;
            }
          };
          if (value_after("num-slaves") < 1) return false;
          if (value_after("num-other-sentinels") < sentinels - 1) return false;
        }
        return true;
      },
      std::chrono::seconds(20));
  if (!ready) throw std::runtime_error("the sentinels did not find each other and the replica");
}

std::string RedisSentinels::url() const {
  std::string url = "redis-sentinel://";
  for (std::size_t i = 0; i < sentinels_.size(); ++i) {
    if (i != 0) url += ",";
    url += "127.0.0.1:" + std::to_string(sentinels_[i]->port());
  }
  return url + "#" + master_;
}

std::uint16_t RedisSentinels::reported_primary_port() {
  const std::string out =
      sentinels_.front()->cli({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", master_});
  const auto nl = out.find('\n');
  if (nl == std::string::npos) return 0;
  try {
    return static_cast<std::uint16_t>(std::stoul(out.substr(nl + 1)));
  } catch (...) {
    return 0;
  }
}

}  // namespace lockwire::test
