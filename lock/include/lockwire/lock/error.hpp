// Error codes of the lock API (std::error_code with an own category).
#pragma once

#include <system_error>

namespace lockwire::lock {

enum class Errc {
  ok = 0,
  timed_out,         // the wait deadline passed (wait 0: the one attempt found the lock held)
  not_held,          // release/renew of a lease that is expired, force-released or not ours
  lost,              // the lease was lost while held (expired, taken over, force-released,
                     // or unconfirmed past its TTL because the connection was down)
  outcome_unknown,   // the connection dropped after the command was written; see the message
  connection,        // could not reach the server (not connected, connection closed)
  protocol,          // the server sent a reply the protocol does not expect (or an error reply)
  invalid_argument,  // rejected before anything was sent: empty/oversized names, bad TTL/wait
  already_held,      // the same owner already holds a lease on this resource (not re-entrant)
  closed,            // the client was shut down before the operation finished
};

[[nodiscard]] const std::error_category& lock_category() noexcept;
[[nodiscard]] std::error_code make_error_code(Errc e) noexcept;

}  // namespace lockwire::lock

template <>
struct std::is_error_code_enum<lockwire::lock::Errc> : std::true_type {};
