// A test-only seam into lock::Client: each flag brings back a bug lockwire had (or switches a
// safeguard off), so that the race catalogue's broken strategies (sim/races) and the real-server
// twins of their tests show the race on the very client code that ships. Never installed: only
// the targets that link lockwire_lock_testing (the simulator's races, tests) see this header, and
// nothing in lockwire/lock/*.hpp names it.
#pragma once

#include <memory>

#include "lockwire/lock/client.hpp"

namespace lockwire::lock::testing {

struct Regressions {
  bool no_fence = false;                    // abandoned connections are not fenced (CLIENT KILL)
  bool answer_at_deadline = false;          // answer at the deadline, a step in flight or not
  bool keep_claim_on_failed_block = false;  // no withdrawal after an error reply to a block
  bool ignore_refused_tracking = false;     // re-read at once when a read was not tracked
  bool ignore_eviction_policy = false;      // grant where the server may evict lock keys
  bool counter_tokens = false;  // tokens from the counter alone: they repeat after data loss
  bool no_reconfirm = false;    // keep leases across a primary change without renewing there
  bool no_ask = false;          // answer a Cluster ASK refusal instead of asking its target
  bool drop_on_move = false;    // count a primary change as the loss of every held lease
  bool upgrade_by_release = false;      // upgrade = release the shared lease, then lock
  bool upgrade_ignores_intent = false;  // two upgrading readers wait for each other
  bool persist_forever = false;  // a persistent lease as a holder set with no TTL (PERSIST)
  bool semaphore_unwatched = false;   // count the holders, then grant, with no WATCH between
  bool lock_all_no_rollback = false;  // lock_all keeps what it took when it fails
  bool lock_all_unsorted = false;     // lock_all takes the resources in the caller's order
  bool fair_fresh_jumps = false;  // fair order kept by waiters only: a fresh attempt jumps
  bool not_replicated_final = false;  // too few replicas answers the wait at once (#28)
  bool grant_unvouched = false;  // hand over a grant whose vouch ran out while it was in flight
  bool ask_unbound = false;      // a Cluster block not bound to its stream (RequestOptions lost)
  // The fence key expires (ClientOptions::fence_ttl) but floors are neither kept young (no
  // re-read of TIME) nor checked: a grant after a long pause can carry a token below earlier ones.
  bool stale_floor = false;
  // The parked hand-off (ClientOptions::parked_handoff, issue #30); each honoured in
  // lock/src/park.cpp only:
  // a parking stream that failed on our side is not CLIENT KILLed before the withdrawal, so a
  // block the server still holds behind its pop can grant after it.
  bool park_no_kill = false;
  // a push while parked (an expiry, a release without a wake token) does not unblock the pop:
  // the parked block waits for a token or its pop's timeout (unblocked only when the wait ends).
  bool park_token_only = false;
  // a parking stream that failed after writing counts as never applied: no withdrawal, the
  // attempt is made again on the main connection.
  bool park_drop_unapplied = false;
  // the parked block's reply after the wait ended is dropped (the caller has gone) instead of
  // settled: a late grant is not withdrawn.
  bool park_drop_late_reply = false;
  // a parked grant's lease counted from its reply's arrival, not from when the park was sent.
  bool park_lease_from_reply = false;
  // a re-lock right after our release woke a parked waiter trusts that hint (the lock is
  // taken) and waits for a push without its wait block: in no queue, tracking nothing, it sleeps
  // to its deadline while the lock is free (honoured in Core::wait_read).
  bool park_taken_unread = false;
};

// A lock::Client (not started) with the safeguards `broken` names switched off, on every Core it
// will use (each Cluster shard's too).
[[nodiscard]] std::unique_ptr<Client> make_client(loop::Loop& loop,
                                                  loop::ConnectionOptions connection,
                                                  ClientOptions options,
                                                  const Regressions& broken);

// The flags `client` was made with (all off for a Client made with its public constructor).
[[nodiscard]] const Regressions& regressions_of(const Client& client) noexcept;

}  // namespace lockwire::lock::testing
