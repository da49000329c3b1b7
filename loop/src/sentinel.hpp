// Private to lockwire_loop (and its unit tests): Redis Sentinel discovery without any I/O — which
// sentinel to ask next, what to ask it, what its replies mean, and the words for a round in which
// none could name the primary; plus the meaning of a +switch-master message and of a ROLE reply.
// Connection::Impl (sentinel_link.cpp) makes the connections and the timers and feeds the
// outcome of each question here, so tests drive it with frames alone.
//
// Facts from redis-server 7.0.15 in sentinel mode (RESP3):
//   SENTINEL GET-MASTER-ADDR-BY-NAME m  ->  *2 $ip $port, or _ (null) for an unknown name
//   SENTINEL MASTER m                   ->  %N map of name ip port runid flags ... config-epoch,
//                                           or -ERR No such master with that name
//   SUBSCRIBE +switch-master            ->  >3 subscribe +switch-master :1, then per failover
//                                           >3 message +switch-master "m old-ip old-port new-ip
//                                           new-port"
//   SUBSCRIBE +promoted-slave           ->  on the failover's leader: >3 message +promoted-slave
//                                           "slave ip:port ip port @ m old-ip old-port"
//   ROLE on a data node                 ->  *3 master offset replicas | *5 slave ip port state
//                                           offset; on a sentinel *2 sentinel [masters]
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lockwire/loop/connection.hpp"
#include "lockwire/resp/node.hpp"

namespace lockwire::loop::detail {

// Where a sentinel says the primary is.
struct PrimaryAddr {
  std::string host;
  std::uint16_t port = 0;
  // SENTINEL MASTER's config-epoch, when its ip and port are the ones just named.
  std::optional<std::uint64_t> config_epoch;
  friend bool operator==(const PrimaryAddr&, const PrimaryAddr&) = default;
};

// The sentinels in the order they are asked, and one round of asking at a time: the first
// sentinel that names a primary wins and moves to the front (so the next round asks it first);
// a round in which none does ends with what each one said.
class Discovery {
 public:
  Discovery(std::vector<Endpoint> sentinels, std::string master);

  struct Verdict {
    enum class Next : std::uint8_t { ask, found, exhausted };
    Next next = Next::ask;  // ask: current() is the next sentinel to ask
    PrimaryAddr primary;    // found
    std::string error;      // exhausted: "no sentinel knows master 'm': <a> <words>; <b> ..."
  };

  // Starts a round at the first sentinel (ends any round in progress).
  void begin();
  // Ends the round in progress without a verdict (the connection was closed).
  void cancel() noexcept { active_ = false; }
  [[nodiscard]] bool active() const noexcept { return active_; }
  // The sentinel to ask (index into sentinels()); valid while active().
  [[nodiscard]] std::size_t current() const noexcept { return at_; }
  [[nodiscard]] const std::vector<Endpoint>& sentinels() const noexcept { return sentinels_; }
  [[nodiscard]] const std::string& master() const noexcept { return master_; }

  // The request to send to a sentinel: with `subscribe` first SUBSCRIBE +switch-master (a new
  // connection; its acknowledgement is reply 0), then SENTINEL GET-MASTER-ADDR-BY-NAME and
  // SENTINEL MASTER, whose replies go to answered().
  [[nodiscard]] Request queries(bool subscribe) const;

  // The current sentinel could not be asked: `why` in its own words (connect error, handshake
  // refusal, no answer in time).
  [[nodiscard]] Verdict failed(std::string_view why);
  // The current sentinel's replies to GET-MASTER-ADDR-BY-NAME and to SENTINEL MASTER.
  [[nodiscard]] Verdict answered(resp::Frame addr, resp::Frame master);

 private:
  Verdict next_or_exhausted();
  std::vector<Endpoint> sentinels_;
  std::string master_;
  std::size_t at_ = 0;
  bool active_ = false;
  std::string said_;  // this round's answers, "; "-separated
};

// A push that names a new primary of `master` (RESP3 ["message", channel, payload], or the
// pmessage form): +switch-master (every sentinel, once it has the new configuration) or
// +promoted-slave (the failover's leader only, at the moment its GET-MASTER-ADDR-BY-NAME
// starts naming the promoted replica, ~0.1 s before any +switch-master). The new address;
// nullopt for other pushes, other masters, malformed payloads.
struct Announcement {
  PrimaryAddr primary;
  bool promoted = false;  // +promoted-slave (else +switch-master)
  [[nodiscard]] std::string_view channel() const noexcept {
    return promoted ? "+promoted-slave" : "+switch-master";
  }
};
[[nodiscard]] std::optional<Announcement> parse_new_primary(resp::Frame push,
                                                            std::string_view master);

// A ROLE reply: "" for a master, else why this server is not one ("a replica of 1.2.3.4:6379
// (link connected)", "a sentinel", ...), or an error reply as "-CODE text".
[[nodiscard]] std::string not_primary(resp::Frame role);

// True when a reply is a -READONLY error (what a replica says to a write).
[[nodiscard]] bool is_readonly(resp::Frame reply) noexcept;
// A -MOVED error reply (a cluster node that does not serve the key's slot, e.g. demoted).
[[nodiscard]] bool is_moved(resp::Frame reply) noexcept;

// The value after `key` in a map (RESP3) or flat key/value array (RESP2) at the frame's top
// (a string or a number), e.g. a field of SENTINEL MASTER's reply.
[[nodiscard]] std::optional<std::string_view> reply_field(resp::Frame f, std::string_view key);

// "host:port", "[v6]:port" or the socket path.
[[nodiscard]] std::string describe(const Endpoint& ep);

}  // namespace lockwire::loop::detail
