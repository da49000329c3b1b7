// SimSentinels' private state (sim_sentinel.hpp): the monitored data nodes, each sentinel's view
// of them (its PING link, down states, its configuration and epochs) and the failover in
// progress. sentinel.cpp runs the state machine, sentinel_link.cpp is the PING link,
// sentinel_replies.cpp writes the replies a client reads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lockwire/sim/sim_sentinel.hpp"

namespace lockwire::sim {

namespace sentinel {

inline constexpr Nanos kNone{-1};

// A sentinel's command link to one data node, reduced to what failure detection needs: it
// connects (again, whenever it is down), sends PING when asked and reports each reply line.
class PingLink final : public loop::StreamHandler {
 public:
  PingLink(Node& from, loop::Endpoint to) : from_(from), to_(std::move(to)) {}
  ~PingLink() override;
  PingLink(const PingLink&) = delete;
  PingLink& operator=(const PingLink&) = delete;

  void connect();  // no-op while connected or connecting
  // instanceLinkCloseConnection: the sentinel gives up on the connection (no on_down).
  void drop();
  [[nodiscard]] bool connected() const noexcept { return state_ == State::up; }
  void ping();
  // A reply: true for one a sentinel counts as "available" (+PONG, -LOADING, -MASTERDOWN).
  std::function<void(bool valid)> on_reply;
  std::function<void()> on_down;  // the link was lost (or never came up)

  void on_connected(std::error_code ec) override;
  void on_data(std::string_view bytes) override;
  void on_closed(std::error_code ec) override;

 private:
  enum class State : std::uint8_t { down, connecting, up };
  Node& from_;
  loop::Endpoint to_;
  std::unique_ptr<loop::Stream> stream_;
  State state_ = State::down;
  std::string in_;
};

}  // namespace sentinel

struct SimSentinels::Impl {
  struct Data {
    SimRedis* redis;
    std::string runid;
  };
  // One data node as one sentinel sees it (Redis' sentinelRedisInstance, the parts modelled).
  struct Instance {
    std::unique_ptr<sentinel::PingLink> link;
    Nanos last_ping = sentinel::kNone;      // last PING sent
    Nanos pending_since = sentinel::kNone;  // act_ping_time: oldest PING without a reply
    Nanos last_reply = sentinel::kNone;     // last reply of any kind
    Nanos last_ok = sentinel::kNone;        // last valid reply
    bool sdown = false;
    Nanos sdown_since = sentinel::kNone;
    bool ping_now = false;  // the link was lost: PING as soon as it is back
    Nanos created{0};                     // the link's creation (Redis' fields start there)
    Nanos up_since = sentinel::kNone;     // cc_conn_time, as seen by the cron
    // A replica that follows another primary than this configuration's (+fix-slave-config).
    Nanos wrong_master_since = sentinel::kNone;
    // Reachable and reporting master while this sentinel's configuration says replica.
    Nanos wrong_role_since = sentinel::kNone;
    bool reported_master = true;
    Nanos role_changed{0};
  };
  struct Sentinel {
    Node* node = nullptr;
    std::unique_ptr<SimRedis> face;
    std::string runid;
    std::size_t master = 0;  // index into data: the master in this sentinel's configuration
    std::uint64_t config_epoch = 0, current_epoch = 0, voted_epoch = 0;
    std::vector<Instance> inst;  // per data node
    bool odown = false;
    Nanos odown_since = sentinel::kNone;
    Nanos next_try{0};  // failover_start_time + 2 * failover-timeout
    Nanos next_hello{0};  // hellos to the other sentinels every 2 s (SENTINEL_PUBLISH_PERIOD)
  };
  struct Failover {
    bool active = false;
    bool graceful = false;
    std::size_t leader = 0, from = 0, to = 0;
    std::uint64_t epoch = 0;
    Nanos started{0};
    Nanos promoted = sentinel::kNone;
    bool named = false;  // the leader names the promoted replica (reconf-slaves)
  };

  Impl(SimSentinels& o, World& w) : self(o), world(w) {}

  SimSentinels& self;
  World& world;
  std::vector<Data> data;
  std::vector<Sentinel> s;
  Failover fo;
  int switches = 0;
  std::vector<Window> windows;
  Rng rng{0};
  std::shared_ptr<bool> alive = std::make_shared<bool>(true);

  [[nodiscard]] const SentinelConfig& cfg() const noexcept { return self.config(); }
  [[nodiscard]] bool answers(std::size_t i) const {
    return s[i].node->alive() && !s[i].node->paused();
  }
  // Sentinel i hears sentinel j now: j answers and no partition separates them. (Their
  // messages are not carried as bytes; a partition still decides who hears whom.)
  [[nodiscard]] bool hears(std::size_t i, std::size_t j) const {
    return i == j || (answers(j) && world.net().reachable(*s[i].node, *s[j].node));
  }
  [[nodiscard]] std::size_t find_data(const std::string& host, std::uint16_t port) const;
  // How long a sentinel has been on this node (for reply fields measured from a start).
  void trace(std::size_t i, std::string_view what, std::string_view detail);

  // sentinel.cpp
  void arm_cron(std::size_t i, Nanos at);
  void cron(std::size_t i);
  void check_instance(std::size_t i, std::size_t d);
  void check_odown(std::size_t i);
  void try_election(std::size_t i);
  std::string start_failover(std::size_t leader, bool graceful);
  void promote();
  void name_promoted();
  void switch_master();
  void learn_config(std::size_t j, std::size_t master, std::uint64_t epoch);
  void convert(std::size_t i, std::size_t d);
  void fix_replica(std::size_t i, std::size_t d);
  void send_hellos(std::size_t i);
  [[nodiscard]] bool newest(std::size_t i) const;

  // sentinel_replies.cpp: the bytes of a reply to `argv` from sentinel i.
  std::string reply(std::size_t i, const std::vector<std::string>& argv, int resp);
  [[nodiscard]] std::size_t reported_master(std::size_t i) const;  // GET-MASTER-ADDR-BY-NAME
};

}  // namespace lockwire::sim
