// The Sentinel discovery machine (sentinel.hpp): the order of the sentinels, the questions, the
// meaning of their answers, of +switch-master / +promoted-slave and of ROLE. No I/O.
#include "sentinel.hpp"

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lockwire/resp/reply.hpp"

namespace lockwire::loop::detail {

namespace {

std::optional<std::uint16_t> to_port(std::string_view s) noexcept {
  unsigned v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || v == 0 || v > 65535) {
    return std::nullopt;
  }
  return static_cast<std::uint16_t>(v);
}

// "-CODE text" as the server said it (errors), else a short description of the unexpected.
std::string words(resp::Frame f) {
  const std::size_t v = resp::value_index(f);
  if (v >= f.size()) return "an empty reply";
  if (resp::is_error(f[v])) return std::string("-").append(f[v].value);
  return "an unexpected reply";
}

}  // namespace

// The value after `key` in a map (RESP3) or flat key/value array (RESP2) at the frame's top.
std::optional<std::string_view> reply_field(resp::Frame f, std::string_view key) {
  const std::size_t v = resp::value_index(f);
  if (v >= f.size() || (f[v].type != resp::Type::map && f[v].type != resp::Type::array)) {
    return std::nullopt;
  }
  const std::size_t n = resp::child_count(f[v].type, f[v].size);
  std::size_t i = resp::first_element(f, v);
  for (std::size_t k = 0; k + 1 < n && i < f.size(); k += 2) {
    const std::size_t val = resp::next_element(f, i);
    if (val >= f.size()) break;
    if (resp::equals(f[i], key)) {
      if (!resp::is_string_like(f[val].type) && f[val].type != resp::Type::number) break;
      return f[val].value;
    }
    i = resp::next_element(f, val);
  }
  return std::nullopt;
}


std::string describe(const Endpoint& ep) {
  if (ep.kind == Endpoint::Kind::unix_socket) return ep.path;
  if (ep.host.find(':') != std::string::npos) {
    return "[" + ep.host + "]:" + std::to_string(ep.port);
  }
  return ep.host + ":" + std::to_string(ep.port);
}

Discovery::Discovery(std::vector<Endpoint> sentinels, std::string master)
    : sentinels_(std::move(sentinels)), master_(std::move(master)) {}

void Discovery::begin() {
  at_ = 0;
  active_ = !sentinels_.empty();
  said_.clear();
}

Request Discovery::queries(bool subscribe) const {
  RequestBuilder b;
  if (subscribe) b.add("SUBSCRIBE", "+switch-master");
  b.add("SENTINEL", "GET-MASTER-ADDR-BY-NAME", master_);
  b.add("SENTINEL", "MASTER", master_);
  return b.done();
}

Discovery::Verdict Discovery::next_or_exhausted() {
  Verdict out;
  if (++at_ < sentinels_.size()) return out;
  active_ = false;
  out.next = Verdict::Next::exhausted;
  out.error = "no sentinel knows master '" + master_ + "': " + said_;
  return out;
}

Discovery::Verdict Discovery::failed(std::string_view why) {
  if (!active_) return Verdict{Verdict::Next::exhausted, {}, "no discovery round in progress"};
  if (!said_.empty()) said_ += "; ";
  said_ += describe(sentinels_[at_]) + " " + std::string(why);
  return next_or_exhausted();
}

Discovery::Verdict Discovery::answered(resp::Frame addr, resp::Frame master) {
  if (!active_) return Verdict{Verdict::Next::exhausted, {}, "no discovery round in progress"};
  const std::size_t v = resp::value_index(addr);
  if (v < addr.size() && resp::is_null(addr[v])) {
    // An unknown name: SENTINEL MASTER's error says so in the sentinel's own words.
    return failed(resp::is_error(master) ? words(master) : "knows no master '" + master_ + "'");
  }
  if (v >= addr.size() || addr[v].type != resp::Type::array || addr[v].size != 2) {
    return failed(words(addr));
  }
  const std::size_t h = resp::first_element(addr, v);
  const std::size_t p = resp::next_element(addr, h);
  std::optional<std::uint16_t> port;
  if (p < addr.size() && resp::is_string_like(addr[p].type)) port = to_port(addr[p].value);
  if (!resp::is_string_like(addr[h].type) || addr[h].value.empty() || !port) {
    return failed("named no usable address");
  }
  Verdict out;
  out.next = Verdict::Next::found;
  out.primary.host = std::string(addr[h].value);
  out.primary.port = *port;
  // The epoch belongs to the address SENTINEL MASTER reports; during a failover GET-MASTER-
  // ADDR-BY-NAME may already name the promoted replica while SENTINEL MASTER still has the old
  // primary and its epoch. Only a matching pair is reported.
  const auto ip = reply_field(master, "ip");
  const auto mport = reply_field(master, "port");
  const auto epoch = reply_field(master, "config-epoch");
  if (ip && mport && epoch && *ip == out.primary.host && to_port(*mport) == port) {
    std::uint64_t e = 0;
    const auto r = std::from_chars(epoch->data(), epoch->data() + epoch->size(), e);
    if (r.ec == std::errc() && r.ptr == epoch->data() + epoch->size()) out.primary.config_epoch = e;
  }
  // The sentinel that answered is asked first next time (it is also the one watched).
  if (at_ != 0) {
    Endpoint e = std::move(sentinels_[at_]);
    sentinels_.erase(sentinels_.begin() + static_cast<std::ptrdiff_t>(at_));
    sentinels_.insert(sentinels_.begin(), std::move(e));
    at_ = 0;
  }
  active_ = false;
  return out;
}

std::optional<Announcement> parse_new_primary(resp::Frame push, std::string_view master) {
  const std::size_t v = resp::value_index(push);
  if (v >= push.size() || push[v].type != resp::Type::push) return std::nullopt;
  std::vector<std::size_t> el;
  resp::elements(push, v, el);
  // ["message", channel, payload] or ["pmessage", pattern, channel, payload]
  std::size_t ch = 0;
  if (el.size() == 3 && resp::equals(push[el[0]], "message")) {
    ch = 1;
  } else if (el.size() == 4 && resp::equals(push[el[0]], "pmessage")) {
    ch = 2;
  } else {
    return std::nullopt;
  }
  const bool switched = resp::equals(push[el[ch]], "+switch-master");
  if (!switched && !resp::equals(push[el[ch]], "+promoted-slave")) return std::nullopt;
  const resp::Node& payload = push[el[ch + 1]];
  if (!resp::is_string_like(payload.type)) return std::nullopt;
  std::vector<std::string_view> w;
  std::string_view s = payload.value;
  while (!s.empty()) {
    const std::size_t sp = s.find(' ');
    if (sp != 0) w.push_back(s.substr(0, sp));
    if (sp == std::string_view::npos) break;
    s.remove_prefix(sp + 1);
  }
  std::string_view host, port;
  if (switched) {
    // "<master-name> <old-ip> <old-port> <new-ip> <new-port>"
    if (w.size() != 5 || w[0] != master) return std::nullopt;
    host = w[3];
    port = w[4];
  } else {
    // "slave <ip:port> <ip> <port> @ <master-name> <master-ip> <master-port>"
    if (w.size() != 8 || w[0] != "slave" || w[4] != "@" || w[5] != master) return std::nullopt;
    host = w[2];
    port = w[3];
  }
  const auto p = to_port(port);
  if (!p || host.empty()) return std::nullopt;
  return Announcement{PrimaryAddr{std::string(host), *p, std::nullopt}, !switched};
}

std::string not_primary(resp::Frame role) {
  const std::size_t v = resp::value_index(role);
  if (v >= role.size()) return "an empty reply to ROLE";
  if (resp::is_error(role[v])) return std::string("-").append(role[v].value);
  if (role[v].type != resp::Type::array || role[v].size == 0) return "an unexpected ROLE reply";
  std::vector<std::size_t> el;
  resp::elements(role, v, el);
  const resp::Node& kind = role[el[0]];
  if (resp::equals(kind, "master")) return {};
  if (resp::equals(kind, "slave") && el.size() >= 4) {
    // slave, primary ip, primary port, link state ("connect", "connecting", "sync",
    // "connected"), offset
    std::string out = "a replica";
    if (resp::is_string_like(role[el[1]].type)) {
      out += " of " + std::string(role[el[1]].value) + ":" + std::string(role[el[2]].value);
    }
    if (resp::is_string_like(role[el[3]].type)) {
      out += " (link " + std::string(role[el[3]].value) + ")";
    }
    return out;
  }
  if (resp::equals(kind, "sentinel")) return "a sentinel";
  if (resp::is_string_like(kind.type)) return "of role '" + std::string(kind.value) + "'";
  return "an unexpected ROLE reply";
}

bool is_readonly(resp::Frame reply) noexcept {
  const std::size_t v = resp::value_index(reply);
  return v < reply.size() && resp::is_error(reply[v]) && resp::error_code(reply[v]) == "READONLY";
}

bool is_moved(resp::Frame reply) noexcept {
  const std::size_t v = resp::value_index(reply);
  return v < reply.size() && resp::is_error(reply[v]) && resp::error_code(reply[v]) == "MOVED";
}

}  // namespace lockwire::loop::detail
