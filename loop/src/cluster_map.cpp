// Cluster addressing (cluster_map.hpp): key slots, the slot map, redirections.
#include "lockwire/loop/cluster_map.hpp"

#include <charconv>

#include "lockwire/resp/reply.hpp"

namespace lockwire::loop::cluster {

namespace {

// CRC16-CCITT, XMODEM variant (polynomial 0x1021, initial 0, no reflection), bit by bit: keys
// are short and a table buys little here.
std::uint16_t crc16(std::string_view s) noexcept {
  std::uint16_t crc = 0;
  for (const char ch : s) {
    crc ^= static_cast<std::uint16_t>(static_cast<unsigned char>(ch) << 8);
    for (int i = 0; i < 8; ++i) {
      crc = (crc & 0x8000) != 0 ? static_cast<std::uint16_t>((crc << 1) ^ 0x1021)
                                : static_cast<std::uint16_t>(crc << 1);
    }
  }
  return crc;
}

std::optional<std::int64_t> int_of(resp::Frame f, std::size_t i) {
  if (i >= f.size()) return std::nullopt;
  if (f[i].type == resp::Type::number) return resp::to_int64(f[i]);
  if (resp::is_string_like(f[i].type)) return resp::to_int64(f[i]);
  return std::nullopt;
}

std::optional<std::uint16_t> slot_of(resp::Frame f, std::size_t i) {
  const auto v = int_of(f, i);
  if (!v || *v < 0 || *v >= kSlots) return std::nullopt;
  return static_cast<std::uint16_t>(*v);
}

// The element indices of aggregate i (resp::elements appends; this replaces).
void elements_of(resp::Frame f, std::size_t i, std::vector<std::size_t>& out) {
  out.clear();
  resp::elements(f, i, out);
}

// Key/value pairs of a RESP3 map or a RESP2 flat array [k1, v1, k2, v2, ...].
bool pairs(resp::Frame f, std::size_t i, std::vector<std::size_t>& out) {
  out.clear();
  if (i >= f.size()) return false;
  if (f[i].type != resp::Type::map && f[i].type != resp::Type::array) return false;
  elements_of(f, i, out);
  return out.size() % 2 == 0;
}

}  // namespace

std::uint16_t key_slot(std::string_view key) noexcept {
  const std::size_t open = key.find('{');
  if (open != std::string_view::npos) {
    const std::size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  return static_cast<std::uint16_t>(crc16(key) % kSlots);
}

std::uint16_t SlotMap::add_node(Node n) {
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i] == n) {
      if (n.primary) nodes_[i].primary = true;
      if (!n.id.empty()) nodes_[i].id = n.id;
      return static_cast<std::uint16_t>(i);
    }
  }
  nodes_.push_back(std::move(n));
  return static_cast<std::uint16_t>(nodes_.size() - 1);
}

void SlotMap::assign(std::uint16_t from, std::uint16_t to, std::uint16_t node) noexcept {
  for (std::uint32_t s = from; s <= to; ++s) owner_[s] = node;
}

std::optional<std::size_t> SlotMap::reset(resp::Frame reply) {
  nodes_.clear();
  owner_.fill(kNone);
  filled_ = false;
  if (reply.empty()) return std::nullopt;
  const std::size_t v = resp::value_index(reply);
  if (v >= reply.size() || reply[v].type != resp::Type::array) return std::nullopt;
  return v;
}

bool SlotMap::parse_shards(resp::Frame reply) {
  const auto top = reset(reply);
  if (!top) return false;
  const std::size_t v = *top;
  std::vector<std::size_t> shards, kv, list, nkv;
  elements_of(reply, v, shards);
  for (std::size_t sh : shards) {
    if (!pairs(reply, sh, kv)) return false;
    std::vector<std::pair<std::uint16_t, std::uint16_t>> ranges;
    std::optional<std::uint16_t> primary;
    bool primary_online = false;
    for (std::size_t k = 0; k < kv.size(); k += 2) {
      const resp::Node& key = reply[kv[k]];
      const std::size_t val = kv[k + 1];
      if (resp::equals(key, "slots")) {
        elements_of(reply, val, list);
        if (list.size() % 2 != 0) return false;
        for (std::size_t j = 0; j < list.size(); j += 2) {
          const auto lo = slot_of(reply, list[j]);
          const auto hi = slot_of(reply, list[j + 1]);
          if (!lo || !hi || *lo > *hi) return false;
          ranges.emplace_back(*lo, *hi);
        }
      } else if (resp::equals(key, "nodes")) {
        elements_of(reply, val, list);
        for (std::size_t n : list) {
          if (!pairs(reply, n, nkv)) return false;
          Node node;
          std::string ip, endpoint;
          for (std::size_t j = 0; j < nkv.size(); j += 2) {
            const resp::Node& nk = reply[nkv[j]];
            const resp::Node& nv = reply[nkv[j + 1]];
            if (resp::equals(nk, "id")) {
              node.id = std::string(nv.value);
            } else if (resp::equals(nk, "port")) {
              const auto p = int_of(reply, nkv[j + 1]);
              if (!p || *p <= 0 || *p > 65535) return false;
              node.port = static_cast<std::uint16_t>(*p);
            } else if (resp::equals(nk, "ip")) {
              ip = std::string(nv.value);
            } else if (resp::equals(nk, "endpoint")) {
              endpoint = std::string(nv.value);
            } else if (resp::equals(nk, "role")) {
              node.primary = resp::equals(nv, "master");
            } else if (resp::equals(nk, "health")) {
              node.online = resp::equals(nv, "online");
            }
          }
          // The endpoint is what clients should use ("?" when unknown: fall back to the ip).
          node.host = !endpoint.empty() && endpoint != "?" ? endpoint : ip;
          if (node.host.empty() || node.port == 0) return false;
          const bool is_primary = node.primary;
          const bool online = node.online;
          const std::uint16_t idx = add_node(std::move(node));
          // Redis 7.2 lists a failed primary in its old shard next to the replica promoted in
          // its place, both as masters: the online one serves the slots.
          if (is_primary && (!primary || online || !primary_online)) {
            primary = idx;
            primary_online = online;
          }
        }
      }
    }
    if (primary) {
      for (const auto& [lo, hi] : ranges) assign(lo, hi, *primary);
    }
  }
  filled_ = true;
  return true;
}

bool SlotMap::parse_slots(resp::Frame reply) {
  const auto top = reset(reply);
  if (!top) return false;
  const std::size_t v = *top;
  std::vector<std::size_t> ranges, entry, addr;
  elements_of(reply, v, ranges);
  for (std::size_t r : ranges) {
    if (reply[r].type != resp::Type::array) return false;
    elements_of(reply, r, entry);
    if (entry.size() < 3) return false;
    const auto lo = slot_of(reply, entry[0]);
    const auto hi = slot_of(reply, entry[1]);
    if (!lo || !hi || *lo > *hi) return false;
    for (std::size_t i = 2; i < entry.size(); ++i) {
      if (reply[entry[i]].type != resp::Type::array) return false;
      elements_of(reply, entry[i], addr);
      if (addr.size() < 2 || !resp::is_string_like(reply[addr[0]].type)) return false;
      const auto p = int_of(reply, addr[1]);
      if (!p || *p <= 0 || *p > 65535) return false;
      Node node;
      node.host = std::string(reply[addr[0]].value);
      node.port = static_cast<std::uint16_t>(*p);
      if (addr.size() >= 3 && resp::is_string_like(reply[addr[2]].type)) {
        node.id = std::string(reply[addr[2]].value);
      }
      node.primary = i == 2;  // the primary comes first, then its replicas
      const std::uint16_t idx = add_node(std::move(node));
      if (i == 2) assign(*lo, *hi, idx);
    }
  }
  filled_ = true;
  return true;
}

const Node* SlotMap::primary_for(std::uint16_t slot) const noexcept {
  if (!filled_ || slot >= kSlots || owner_[slot] == kNone) return nullptr;
  return &nodes_[owner_[slot]];
}

void SlotMap::moved(std::uint16_t slot, const std::string& host, std::uint16_t port) {
  if (slot >= kSlots) return;
  if (!filled_) {
    owner_.fill(kNone);
    filled_ = true;
  }
  Node n;
  n.host = host;
  n.port = port;
  n.primary = true;
  owner_[slot] = add_node(std::move(n));
}

std::size_t SlotMap::fill_holes(const SlotMap& other) {
  if (!filled_ || !other.filled_) return 0;
  std::size_t filled = 0;
  for (std::uint32_t s = 0; s < kSlots; ++s) {
    const std::uint16_t o = other.owner_[s];
    if (owner_[s] != kNone || o == kNone) continue;
    owner_[s] = add_node(other.nodes_[o]);
    ++filled;
  }
  return filled;
}

bool SlotMap::covers_all() const noexcept {
  if (!filled_) return false;
  for (const std::uint16_t o : owner_) {
    if (o == kNone) return false;
  }
  return true;
}

std::vector<Node> SlotMap::primaries() const {
  std::vector<bool> used(nodes_.size(), false);
  if (filled_) {
    for (const std::uint16_t o : owner_) {
      if (o != kNone) used[o] = true;
    }
  }
  std::vector<Node> out;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (used[i]) out.push_back(nodes_[i]);
  }
  return out;
}

std::optional<Redirect> parse_redirect(std::string_view e) {
  Redirect r;
  if (e.starts_with("MOVED ")) {
    r.kind = Redirect::Kind::moved;
    e.remove_prefix(6);
  } else if (e.starts_with("ASK ")) {
    r.kind = Redirect::Kind::ask;
    e.remove_prefix(4);
  } else {
    return std::nullopt;
  }
  const std::size_t sp = e.find(' ');
  if (sp == std::string_view::npos) return std::nullopt;
  unsigned slot = 0;
  const auto [p1, ec1] = std::from_chars(e.data(), e.data() + sp, slot);
  if (ec1 != std::errc() || p1 != e.data() + sp || slot >= kSlots) return std::nullopt;
  const std::string_view addr = e.substr(sp + 1);
  const std::size_t colon = addr.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  unsigned port = 0;
  const std::string_view ps = addr.substr(colon + 1);
  const auto [p2, ec2] = std::from_chars(ps.data(), ps.data() + ps.size(), port);
  if (ec2 != std::errc() || p2 != ps.data() + ps.size() || port == 0 || port > 65535) {
    return std::nullopt;
  }
  r.slot = static_cast<std::uint16_t>(slot);
  r.host = std::string(addr.substr(0, colon));
  r.port = static_cast<std::uint16_t>(port);
  return r;
}

}  // namespace lockwire::loop::cluster
