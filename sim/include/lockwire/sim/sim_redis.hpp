// The simulated Redis as a node on the simulated network: accepts connections on a port, feeds
// bytes to a RedisModel, runs its cron (active expiry) at hz 10 on the node's clock, and exposes
// the fault, persistence and replication hooks scenarios use.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lockwire/sim/redis_model.hpp"
#include "lockwire/sim/world.hpp"

namespace lockwire::sim {

struct SimRedisOptions {
  std::uint16_t port = 6379;
  RedisModelOptions model;
  Nanos cron_period{100ms};  // hz 10
  // With model.sentinel_mode: the answers to SENTINEL, ROLE and INFO (SimSentinels sets it).
  std::function<std::string(const std::vector<std::string>& argv, int resp)> sentinel{};
  // With model.cluster_enabled: RedisModel::Hooks::cluster and ::migrate (SimCluster sets them).
  std::function<void(const std::vector<std::string>& argv)> cluster{};
  std::function<std::string(const std::string& host, int port, int db, const RedisSnapshot& keys,
                            bool replace)>
      migrate{};
};

// What survives a restart.
enum class Persistence : std::uint8_t {
  none,       // empty dataset (no RDB/AOF)
  last_save,  // the dataset as of the last save() (RDB snapshot)
  all,        // everything acknowledged (AOF appendfsync always)
};

class SimRedis {
 public:
  SimRedis(World& world, Node& node, SimRedisOptions options = {});
  ~SimRedis();
  SimRedis(const SimRedis&) = delete;
  SimRedis& operator=(const SimRedis&) = delete;

  [[nodiscard]] RedisModel& model() noexcept { return *model_; }
  [[nodiscard]] Node& node() noexcept { return node_; }
  [[nodiscard]] std::uint16_t port() const noexcept { return options_.port; }
  [[nodiscard]] loop::Endpoint endpoint() const;

  // --- faults ---
  void stall(Nanos d);      // like DEBUG SLEEP: nothing is processed for d, bytes queue up
  void drop_connections();  // every client connection is reset
  void kill();              // process dies (clients see EOF); restart() brings it back
  // Machine death (power loss, a partition that never heals): nobody is told (connections stay
  // half-open) and writes still in flight to replicas are lost; restart() brings it back.
  void crash();
  void restart(Persistence keep = Persistence::none);
  void save();  // take the RDB snapshot used by Persistence::last_save
  void set_loading(bool on) { model_->set_loading(on); }
  void set_busy(bool on) { model_->set_busy(on); }

  // --- server conditions an operator creates (also reachable as commands, see sim/README.md) ---
  // CLIENT PAUSE d WRITE|ALL: writes (or all commands) wait, then run in arrival order.
  void pause_clients(Nanos d, PauseMode mode) {
    model_->pause_clients(std::chrono::duration_cast<std::chrono::milliseconds>(d).count(), mode);
  }
  void unpause_clients() { model_->unpause_clients(); }
  // ACL SETUSER name rules (e.g. "on >pw ~app:* resetchannels +@all -client|tracking");
  // returns "" or the error. Users for the whole run: SimRedisOptions::model.users.
  [[nodiscard]] std::string acl_setuser(std::string_view name, std::string_view rules) {
    return model_->acl_setuser(name, rules);
  }
  // CONFIG SET maxmemory / maxmemory-policy (0: no limit). At start: SimRedisOptions::model.
  void set_maxmemory(std::uint64_t bytes, MaxmemoryPolicy policy = MaxmemoryPolicy::noeviction) {
    model_->set_maxmemory(bytes, policy);
  }

  // --- replication ---
  // Every write applied here reaches `replica` after `lag` (in order); the replica refuses
  // client writes with -READONLY.
  void add_replica(SimRedis& replica, Nanos lag);
  // Failover: this replica stops following and accepts writes. Its old primary is not told
  // (it keeps accepting writes until demoted, as in a split brain).
  void promote();
  // Stops following its current primary (if any) and follows `primary` after a full sync.
  void demote_to_replica_of(SimRedis& primary, Nanos lag);
  // The primary this replica follows (nullptr: it is a primary).
  [[nodiscard]] SimRedis* primary_of() const noexcept { return primary_; }

 private:
  struct Peer;
  void accept(std::unique_ptr<SimStream> s);
  void arm_cron();
  void arm_tick();
  void install_listener();
  void reap();
  void detach();  // leaves the current primary's replication stream
  void die(bool crashed);
  void publish_acks();  // what the replicas acknowledged, to the model (ROLE, WAIT)
  World& world_;
  Node& node_;
  SimRedisOptions options_;
  std::unique_ptr<RedisModel> model_;
  std::map<RedisModel::ClientId, std::unique_ptr<Peer>> peers_;
  std::vector<std::unique_ptr<Peer>> graveyard_;
  std::uint64_t cron_event_ = 0;
  std::uint64_t tick_event_ = 0;
  Nanos tick_at_{0};
  std::shared_ptr<const RedisSnapshot> saved_;
  struct Link {
    SimRedis* replica;
    Nanos lag;
    Nanos last_at{0};
    Nanos held_since{-1};  // the first write held by a partition (Network::retransmit_at)
    std::shared_ptr<bool> open = std::make_shared<bool>(true);  // false: link torn down
  };
  std::vector<Link> replicas_;
  SimRedis* primary_ = nullptr;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace lockwire::sim
