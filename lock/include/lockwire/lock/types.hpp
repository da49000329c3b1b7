// The lock's vocabulary that callers of lock::Client and lock::Watch need (the kind of a lease,
// input limits and their checks, the persistent TTL, a holder as inspect reports it), apart
// from the protocol's builders and readers (protocol.hpp), which lock/ and its tests use.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

namespace lockwire::lock {

enum class Kind : std::uint8_t { exclusive, shared };

// Input limits, checked before anything is sent.
struct Limits {
  std::size_t max_prefix_bytes = 256;
  std::size_t max_resource_bytes = 512;
  std::size_t max_owner_bytes = 256;
  // Redis accepts PX up to ~2^63 ms minus now; we cap far below so that deadlines on the
  // monotonic clock (int64 ns) can never overflow.
  std::chrono::nanoseconds max_ttl = std::chrono::hours(24 * 365);
  std::chrono::nanoseconds max_wait = std::chrono::hours(24 * 365);
};

// A lease that does not expire (RoadRunner's `ttl = 0`): only ever an explicit choice, never a
// default or an accident (0 stays invalid). On the server it is a TTL of 50 years, not "no TTL":
// every holder set keeps a TTL, or a contender's acquire block (PEXPIRE .. NX) would give a
// persistent holder set the contender's short TTL (docs/protocol.md, "Persistent leases"). The
// client arms no expiry or renewal timer for it; release and force-release end it.
inline constexpr std::chrono::nanoseconds kForever = std::chrono::hours(24 * 365 * 50);
[[nodiscard]] constexpr bool is_forever(std::chrono::nanoseconds ttl) noexcept {
  return ttl == kForever;
}

// Returns Errc::invalid_argument (with the reason in *why) or an empty code.
[[nodiscard]] std::error_code validate_prefix(std::string_view prefix, const Limits& limits,
                                              std::string* why = nullptr);
[[nodiscard]] std::error_code validate_name(std::string_view what, std::string_view name,
                                            std::size_t max_bytes, std::string* why = nullptr);
// TTL must be >= 1 ms and <= limits.max_ttl, or exactly kForever. Sub-millisecond parts round up.
[[nodiscard]] std::error_code validate_ttl(std::chrono::nanoseconds ttl, const Limits& limits,
                                           std::string* why = nullptr);
[[nodiscard]] std::error_code validate_wait(std::chrono::nanoseconds wait, const Limits& limits,
                                            std::string* why = nullptr);
[[nodiscard]] std::int64_t ttl_millis(std::chrono::nanoseconds ttl) noexcept;  // rounds up

namespace protocol {

// A holder of a resource, as inspect() and lock::Watch report it.
struct Holder {
  Kind kind = Kind::exclusive;
  std::string owner;
  std::int64_t ttl_ms = -2;  // remaining TTL on the server; -2 = companion gone (stale)
};

}  // namespace protocol

}  // namespace lockwire::lock
