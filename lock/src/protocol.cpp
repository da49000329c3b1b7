// The protocol's names: input validation, the key layout, holder fields (protocol.hpp).
#include "lockwire/lock/protocol.hpp"

#include <array>
#include <charconv>
#include <limits>
#include <optional>
#include <span>

#include "lockwire/lock/error.hpp"
#include "lockwire/resp/encoder.hpp"
#include "lockwire/resp/reply.hpp"
#include "protocol_reading.hpp"

namespace lockwire::lock {

namespace {
std::error_code invalid(std::string* why, std::string msg) {
  if (why != nullptr) *why = std::move(msg);
  return make_error_code(Errc::invalid_argument);
}
// find_first_of("{}") calls memchr once per character of the set for every byte; names are
// short and checked on every lock, so one plain pass does.
bool has_brace(std::string_view s) noexcept {
  for (char c : s) {
    if (c == '{' || c == '}') return true;
  }
  return false;
}
}  // namespace

std::error_code validate_prefix(std::string_view prefix, const Limits& limits, std::string* why) {
  if (prefix.size() > limits.max_prefix_bytes) return invalid(why, "key prefix too long");
  // A brace in the prefix would move the hash tag away from {resource}.
  if (has_brace(prefix)) {
    return invalid(why, "key prefix must not contain '{' or '}'");
  }
  return {};
}

std::error_code validate_name(std::string_view what, std::string_view name, std::size_t max_bytes,
                              std::string* why) {
  if (name.empty()) return invalid(why, std::string(what) + " is empty");
  if (name.size() > max_bytes) {
    return invalid(why, std::string(what) + " longer than " + std::to_string(max_bytes) + " bytes");
  }
  // Braces would change the hash tag and let two resources' keys collide.
  if (has_brace(name)) {
    return invalid(why, std::string(what) + " must not contain '{' or '}'");
  }
  return {};
}

std::error_code validate_ttl(std::chrono::nanoseconds ttl, const Limits& limits, std::string* why) {
  if (is_forever(ttl)) return {};
  if (ttl < std::chrono::milliseconds(1)) return invalid(why, "ttl must be at least 1 ms");
  if (ttl > limits.max_ttl) return invalid(why, "ttl above the maximum");
  return {};
}

std::error_code validate_wait(std::chrono::nanoseconds wait, const Limits& limits,
                              std::string* why) {
  if (wait.count() < 0) return invalid(why, "wait must not be negative");
  if (wait > limits.max_wait) return invalid(why, "wait above the maximum");
  return {};
}

std::int64_t ttl_millis(std::chrono::nanoseconds ttl) noexcept {
  const std::int64_t ns = ttl.count();
  return ns / 1'000'000 + (ns % 1'000'000 > 0 ? 1 : 0);
}

namespace protocol {

std::string Keys::companion(std::string_view owner) const {
  std::string s;
  s.reserve(holders.size() + 3 + owner.size());
  s.append(holders).append(":s:").append(owner);
  return s;
}

std::string Keys::intent() const {
  return holders + ":u";
}

std::string Keys::armed() const { return holders + ":armed"; }
std::string Keys::wake() const { return holders + ":wake"; }

std::string Keys::doorbell(std::string_view owner) const {
  std::string s;
  s.reserve(holders.size() + 3 + owner.size());
  s.append(holders).append(":w:").append(owner);
  return s;
}

Keys make_keys(std::string_view prefix, std::string_view resource) {
  Keys k;
  k.holders.reserve(prefix.size() + resource.size() + 2);
  k.holders.append(prefix).append("{").append(resource).append("}");
  // Sized first: `holders + ":fence"` copies, then grows the copy.
  k.fence.reserve(k.holders.size() + 6);
  k.fence.append(k.holders).append(":fence");
  k.queue.reserve(k.holders.size() + 2);
  k.queue.append(k.holders).append(":q");
  return k;
}

std::string field(Kind kind, std::string_view owner) {
  std::string f(kind == Kind::exclusive ? "x:" : "s:");
  f.append(owner);
  return f;
}

bool split_doorbell(std::string_view key, std::string_view& holders,
                    std::string_view& owner) noexcept {
  // Prefix and resource hold no '}', so the first '}' ends the holder-set key P{R}.
  const std::size_t brace = key.find('}');
  if (brace == std::string_view::npos || key.substr(brace + 1, 3) != ":w:") return false;
  holders = key.substr(0, brace + 1);
  owner = key.substr(brace + 4);
  return true;
}

bool split_field(std::string_view f, Kind& kind, std::string_view& owner) noexcept {
  if (f.size() < 3 || f[1] != ':') return false;
  if (f[0] == 'x') {
    kind = Kind::exclusive;
  } else if (f[0] == 's') {
    kind = Kind::shared;
  } else {
    return false;
  }
  owner = f.substr(2);
  return true;
}

}  // namespace protocol

}  // namespace lockwire::lock
