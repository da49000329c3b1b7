// Redis Cluster's addressing as pure functions (no I/O): the hash slot of a key, the slot map
// read from CLUSTER SHARDS (Redis >= 7.0) or CLUSTER SLOTS, and MOVED / ASK redirections.
// The routing connection is built on these; they are tested on replies captured from a real
// redis-server 7.0.15 cluster (tests/loop/data/).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lockwire/resp/node.hpp"

namespace lockwire::loop::cluster {

inline constexpr std::uint16_t kSlots = 16384;

// CRC16 (XMODEM) of the key's hash tag — the part between the first '{' and the next '}' when
// that part is not empty — or of the whole key, modulo 16384. Keys with one tag share a slot.
[[nodiscard]] std::uint16_t key_slot(std::string_view key) noexcept;

struct Node {
  std::string host;
  std::uint16_t port = 0;
  std::string id;        // the node id (CLUSTER SHARDS / SLOTS give it)
  bool primary = false;  // role master
  bool online = true;    // CLUSTER SHARDS health; CLUSTER SLOTS lists live nodes only
  friend bool operator==(const Node& a, const Node& b) {
    return a.host == b.host && a.port == b.port;
  }
};

// Which node serves each slot as primary. Built from one reply, then patched by MOVED.
class SlotMap {
 public:
  // From the CLUSTER SHARDS reply (RESP3 maps or RESP2 flat arrays); false if malformed.
  [[nodiscard]] bool parse_shards(resp::Frame reply);
  // From the CLUSTER SLOTS reply; false if malformed.
  [[nodiscard]] bool parse_slots(resp::Frame reply);
  // The primary serving `slot`, or nullptr when no node does (a hole: CLUSTERDOWN).
  [[nodiscard]] const Node* primary_for(std::uint16_t slot) const noexcept;
  // A MOVED redirection: `slot` is served by host:port from now on.
  void moved(std::uint16_t slot, const std::string& host, std::uint16_t port);
  // Slots this map leaves unserved that `other` serves take other's primary; how many did.
  // Redis 7.2's CLUSTER SHARDS shows no slots for a shard whose primary failed over (the
  // failed one is listed first), where its CLUSTER SLOTS names the promoted replica.
  std::size_t fill_holes(const SlotMap& other);
  [[nodiscard]] bool covers_all() const noexcept;
  // Every node that serves at least one slot as primary.
  [[nodiscard]] std::vector<Node> primaries() const;
  // Every node the map knows (primaries and replicas).
  [[nodiscard]] const std::vector<Node>& nodes() const noexcept { return nodes_; }

 private:
  // Empties the map; the index of the reply's top-level array, or nullopt.
  std::optional<std::size_t> reset(resp::Frame reply);
  std::uint16_t add_node(Node n);
  void assign(std::uint16_t from, std::uint16_t to, std::uint16_t node) noexcept;
  static constexpr std::uint16_t kNone = 0xffff;
  std::vector<Node> nodes_;
  std::array<std::uint16_t, kSlots> owner_{};  // index into nodes_, kNone for no primary
  bool filled_ = false;
};

struct Redirect {
  enum class Kind : std::uint8_t { moved, ask };
  Kind kind = Kind::moved;
  std::uint16_t slot = 0;
  std::string host;
  std::uint16_t port = 0;
};
// "MOVED 7365 127.0.0.1:17002" / "ASK 3999 ::1:6381" (the error text without '-'); nullopt for
// anything else. The host is everything before the last ':' (IPv6 addresses keep theirs).
[[nodiscard]] std::optional<Redirect> parse_redirect(std::string_view error_text);

}  // namespace lockwire::loop::cluster
