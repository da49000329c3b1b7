// Error codes of the lock API (std::error_code with an own category).
#pragma once

#include <system_error>

namespace lockwire::lock {

enum class Errc {
  ok = 0,
  timed_out,         // the wait deadline passed with the lock still held by someone else
  not_held,          // release/renew of a lease that is expired, force-released or not ours
  lost,              // the lease was lost while held (expired, taken over, force-released,
                     // or unconfirmed past its TTL because the connection was down)
  outcome_unknown,   // the connection dropped after the command was written; see the message
  connection,        // could not reach the server (not connected, connection closed)
  protocol,          // the server sent a reply the protocol does not expect (or an error reply)
  invalid_argument,  // rejected before anything was sent: empty/oversized names, bad TTL/wait
  already_held,      // the same owner already holds a lease on this resource (not re-entrant)
  closed,            // the client was shut down before the operation finished
  // The server answered with an error reply that is not transient: NOPERM (ACL), OOM (full
  // under noeviction), READONLY (a replica), MOVED/ASK (a cluster node), EXECABORT, unknown
  // command... Client::last_error() carries the server's own words. Nothing of ours was left
  // behind: a claim the failed step may have made is withdrawn first.
  server_refused,
  // The server is there but cannot serve now: LOADING, BUSY, MASTERDOWN, TRYAGAIN,
  // CLUSTERDOWN. Retrying later may succeed; last_error() has the server's words.
  server_unavailable,
  // The server may evict lock keys (maxmemory set and maxmemory-policy other than noeviction):
  // holders and fencing counters could vanish, so no lease is granted there unless
  // ClientOptions::allow_eviction says so. last_error() names the policy.
  unsafe_server,
  cancelled,  // Client::cancel() gave up the wait (no claim of ours was left behind)
  // ClientOptions::min_replicas: fewer replicas than asked acknowledged the grant (withdrawn)
  // or the renewal (the lease is not extended) within replica_timeout. last_error() says how
  // many did.
  not_replicated,
  // Client::upgrade: another reader of the resource is upgrading its shared lease; both waiting
  // for the other to leave would deadlock, so the later one is refused (its shared lease kept).
  upgrade_conflict,
  // The server lacks a command or option the lock protocol needs (PEXPIRE ... NX/GT: Redis
  // before 7.0), found by the connect probe: no lease is granted there and nothing is written.
  // last_error() names the server, its version, the minimum and the server's own words.
  unsupported_server,
  // A try-lock (wait 0) or a one-attempt upgrade found the resource held by someone else:
  // nothing of ours was left behind. (A wait that ran out is timed_out; an unreachable server
  // is connection / server_unavailable.)
  busy,
};

[[nodiscard]] const std::error_category& lock_category() noexcept;
[[nodiscard]] std::error_code make_error_code(Errc e) noexcept;

}  // namespace lockwire::lock

template <>
struct std::is_error_code_enum<lockwire::lock::Errc> : std::true_type {};
