// The race catalogue: every named scenario with its broken strategy, coverage mark, documented
// limitations and configuration, in the order docs/races.md follows, and running one. The
// scripts live by family: classic.hpp (scenarios.cpp), conditions.hpp, failovers.hpp,
// clusters.hpp.
#include <span>

#include "classic.hpp"
#include "clusters.hpp"
#include "conditions.hpp"
#include "failovers.hpp"
#include "parked.hpp"
#include "partitions.hpp"
#include "semantics.hpp"
#include "lockwire/races/races.hpp"

namespace lockwire::races {

namespace {

// Issue #28 on a Cluster: while lockwire failed the cluster partition scenario (its clients
// ran without the masters' vouch, which the simulated cluster did not answer), it listed what
// fired as a limitation. Since the simulated cluster answers what the vouch reads lockwire
// passes it, so this is false and its broken strategy is no-vouch, as for the Sentinel
// partition scenarios (the third of those has replicas-final).
constexpr bool kPending28Cluster = false;
std::vector<Check> pending_28(std::vector<Check> fires) {
  return kPending28Cluster ? std::move(fires) : std::vector<Check>{};
}
constexpr std::string_view kBug28 =
    kPending28Cluster ? "issue 28: two holders through a partition on a Cluster" : "";

const std::vector<Scenario>& all() {
  static const std::vector<Scenario> v = {
      {"delete-wrong-lock",
       "release in flight while the lease expires and another client is granted",
       "get-then-del",
       "release-in-flight-across-regrant",
       {},
       classic::delete_wrong_lock},
      {"extend-wrong-lock",
       "renewal reaches the server after expiry and another client's grant",
       "blind-renew",
       "renew-in-flight-across-regrant",
       {},
       classic::extend_wrong_lock},
      {"wait-deadline-during-command",
       "wait deadline passes while the acquire is in flight; the server grants it afterwards",
       "give-up-on-deadline",
       "granted-after-deadline",
       {},
       classic::wait_deadline_during_command},
      {"acquire-reply-lost",
       "acquire applied, connection cut before the reply",
       "replay-on-unknown",
       "applied-reply-lost",
       {},
       classic::acquire_reply_lost},
      {"release-reply-lost",
       "release request lost with the connection",
       "assume-released",
       "release-reply-lost",
       {},
       classic::release_reply_lost},
      {"pause-beyond-ttl",
       "holder paused past its TTL between check and write; another acquires; fencing rejects",
       "no-fencing",
       "stale-write-after-regrant",
       {},
       classic::pause_beyond_ttl},
      {"notify-before-subscribe",
       "release published between the waiter's failed check and its subscription",
       "no-recheck",
       "release-between-check-and-subscribe",
       {},
       classic::notify_before_subscribe,
       10},
      {"expiry-wake",
       "no release: the waiter must wake when the holder's lease expires",
       "no-expiry-wake",
       "expired-while-waiting",
       {},
       classic::expiry_wake},
      {"many-waiters-one-subscription",
       "four waiters of one process on one resource, holder expires",
       "no-expiry-wake",
       "four-waiters-one-process",
       {},
       classic::many_waiters_one_subscription},
      {"waiters-stay-quiet",
       "four processes wait while a fifth holds for 1 s: no requests until the release",
       "poll",
       "waiters-while-held",
       {},
       classic::waiters_stay_quiet,
       5},
      {"reconnect-during-wait",
       "the waiter reconnects while the holder releases (the wake-up is lost with the connection)",
       "no-expiry-wake",
       "released-while-waiter-reconnects",
       {},
       classic::reconnect_during_wait},
      {"split-frame-push",
       "every write to the waiter arrives in pieces with gaps, the invalidation push included",
       "",
       "woken-through-split-push",
       {},
       classic::split_frame_push},
      {"pause-with-replies-in-flight",
       "holder paused while its grant reply is in flight, resumed after the TTL",
       "reply-clock",
       "grant-reply-held-by-pause",
       {},
       classic::pause_with_replies_in_flight},
      {"force-release-while-waiting",
       "an administrator force-releases a held lock while another client waits (documented: the "
       "holder learns from the notice a round trip after the DEL; fencing stops its writes "
       "meanwhile)",
       "no-fencing",
       "force-released-while-waiting",
       {Check::lease_loss_notice},
       classic::force_release_while_waiting},
      {"client-wall-clock-step",
       "the holder's wall clock steps back 1 s while it holds",
       "wall-clock",
       "wall-step-while-held",
       {},
       classic::client_wall_clock_step},
      {"server-clock-jump-forward",
       "server clock jumps 1.5 s forward during a 2 s lease (documented limitation: early "
       "expiry cannot be noticed; fencing stops the stale holder)",
       "no-fencing",
       "server-clock-jump-while-held",
       {Check::lease_loss_notice},
       classic::server_clock_jump_forward},
      {"failover-before-replication",
       "failover before the grant replicated: a double grant (documented: a holder cannot see "
       "a lost grant), but the second token is higher, so fencing rejects the stale writes",
       "no-fencing",
       "failover-before-replication",
       {Check::lease_loss_notice},
       classic::failover_before_replication},
      {"restart-without-persistence",
       "restart without persistence loses the lock and the token counter (documented: a double "
       "grant); tokens still increase, so fencing rejects the stale writes",
       "no-fencing",
       "restart-while-held",
       {Check::lease_loss_notice},
       classic::restart_without_persistence},
      {"fence-expired-during-pause",
       "the fence key expires (fence_ttl 2 s) while a client is paused; a floor read before the "
       "pause would give its first token after it one below another client's",
       "stale-floor",
       "lock-after-fence-expired",
       {},
       classic::fence_expired_during_pause,
       2,
       {},
       {},
       classic::configure_short_fence_ttl},
      {"fence-expired-under-delayed-block",
       "an acquire block with a young floor is held up on the network past the fence key's "
       "expiry (fence_ttl 2 s): its reply, read with the floor too old, must not be handed over",
       "stale-floor",
       "delayed-block-after-fence-expired",
       {},
       classic::fence_expired_under_delayed_block,
       2,
       {},
       {},
       classic::configure_short_fence_ttl},
      {"duplicate-shared-acquire",
       "one owner id takes a shared lease twice (two processes at once, then again while held)",
       "dup-shared",
       "same-owner-acquired-while-held",
       {},
       classic::duplicate_shared_acquire},
      {"two-transactions-one-connection",
       "two renewals (WATCH..EXEC) of one process at once on one connection, one lease expiring",
       "raw-watch",
       "regrant-during-two-renewals",
       {},
       classic::two_transactions_one_connection},
      {"message-after-unsubscribe",
       "a release's wake-up reaches a waiter just after its wait ended (unsubscribed); its next "
       "wait must still be woken",
       "late-message",
       "wake-push-after-wait-ended",
       {},
       classic::message_after_unsubscribe,
       24},
      {"unsubscribe-ack-lost",
       "the UNSUBSCRIBE ack of an ended wait is still in flight when the next wait starts",
       "ack-state",
       "ack-or-wake-after-next-wait-started",
       {},
       classic::unsubscribe_ack_lost},
      {"split-brain-reconnect",
       "a release written on an abandoned connection reaches the server after the client "
       "reconnected and re-acquired under the same owner id",
       "no-fence",
       "old-connection-op-after-takeover",
       {},
       classic::split_brain_reconnect,
       3,
       {},
       50ms},
      {"split-brain-late-acquire",
       "an acquire written on an abandoned connection reaches the server after the client "
       "re-acquired and released under the same owner id",
       "no-fence",
       "old-acquire-after-release",
       {},
       classic::split_brain_late_acquire,
       3,
       {},
       50ms},
      {"restart-with-persistence",
       "restart with AOF always while a lease is held",
       "",
       "restart-while-held",
       {},
       classic::restart_with_persistence},
      {"pause-during-acquire-deadline",
       "CLIENT PAUSE WRITE holds the woken waiter's acquire past its deadline; the waiter's "
       "process exits on the answer",
       "answer-at-deadline",
       "paused-acquire-granted-after-deadline",
       {},
       conditions::pause_during_acquire_deadline},
      {"wait-block-refused",
       "a waiter logged in as an ACL user denied ZADD: its wait block is refused (EXECABORT "
       "discards the HDEL of its claim)",
       "keep-failed-claim",
       "claim-on-server-when-wait-block-refused",
       {},
       conditions::wait_block_refused,
       3,
       {},
       {},
       conditions::configure_wait_block_refused},
      {"tracking-refused",
       "four waiters logged in as an ACL user denied CLIENT TRACKING wait 1 s: they poll, "
       "within a bound",
       "reread-untracked",
       "waiters-polled-while-held",
       {},
       conditions::tracking_refused,
       5,
       {},
       {},
       conditions::configure_tracking_refused},
      {"lock-keys-evicted",
       "maxmemory with allkeys-lru: filler writes evict the holder set and the token counter "
       "while a lease is held; another client acquires",
       "ignore-eviction",
       "evictions-while-lock-wanted",
       {},
       conditions::lock_keys_evicted,
       3,
       {},
       {},
       conditions::configure_lock_keys_evicted,
       // Opted in, the second holder is still granted; its token is higher (raised to the
       // server's clock), so the stale holder's write is rejected: only lease-loss fires.
       {{"lockwire-allow-eviction", {Check::lease_loss_notice}}}},
      {"wait-queue-leave-refused",
       "two waits end while the server is full (OOM refuses their MULTI to leave the wait "
       "queue); a later waiter queued behind their entries must still be woken (found by the "
       "explorer, fixed)",
       "",
       "queue-left-on-a-full-server",
       {},
       conditions::wait_queue_leave_refused,
       4},
      {"graceful-failover-mid-hold",
       "SENTINEL FAILOVER while a lease is held (auto-renewed); a contender asks after the "
       "promoted replica's copy of it would have expired; the old primary stays writable ~10 s",
       "single-node",
       "failover-while-held",
       {},
       failovers::graceful_failover_mid_hold,
       3,
       {},
       {},
       failovers::configure_sentinels},
      {"crash-failover-lost-token",
       "the primary's machine dies before a grant, its token and its release reached the "
       "replica; the sentinels promote the replica; the next grant's token must still be higher",
       "counter-tokens",
       "grant-lost-in-crash-failover",
       {},
       failovers::crash_failover_lost_token,
       3,
       {},
       {},
       failovers::configure_lagging_replica},
      {"old-primary-still-writable",
       "the primary is cut off from the sentinels (not from its clients) for 8 s: failover to "
       "the replica while the old primary keeps accepting writes",
       "single-node",
       "old-primary-writable-after-switch",
       {},
       failovers::old_primary_still_writable,
       3,
       {},
       {},
       failovers::configure_sentinels},
      {"reconfirm-after-switch",
       "the replica's copy of a held lease expires before +switch-master (renewals reached only "
       "the old primary); a waiter reaches the new primary before the holder re-confirms",
       "no-reconfirm",
       "lease-copy-lost-in-switch",
       {},
       failovers::reconfirm_after_switch,
       // Found by the failover swarm (seed 2000063): a lease counted as held while its
       // re-confirmation on the new primary was in flight. Fixed: held leases are suspended
       // (Lease::valid_until) from the moment the connection learns of the move.
       3,
       {},
       {},
       failovers::configure_sentinels},
      // Issue #28: real partitions. The broken strategies are lockwire as it was before the fix:
      // no-vouch (no sentinels' vouch), replicas-final (too few replicas answered at once).
      {"sentinel-partition-holder-with-old-primary",
       "the primary and the holder are cut off for 20 s from the sentinels, both replicas and "
       "the contender (down-after 3 s, quorum 2): failover; the holder must stop counting on "
       "its lease before the contender is granted on the promoted replica",
       "no-vouch",
       "holder-cut-off-with-old-primary",
       {},
       partitions::holder_with_old_primary,
       2,
       {},
       {},
       partitions::configure},
      {"sentinel-partition-replica-on-holder-side",
       "as sentinel-partition-holder-with-old-primary with min_replicas 1 and 3 replicas, one "
       "of them on the holder's side acknowledging its renewals",
       "no-vouch",
       "replica-acks-cut-off-holder",
       {},
       partitions::replica_on_holder_side,
       2,
       {},
       {},
       partitions::configure_min_replicas_three},
      {"sentinel-partition-promoted-without-replica",
       "min_replicas 1 with 2 replicas, one cut off with the primary and the holder: the "
       "promoted replica has no replica until the heal; the contender must keep trying for its "
       "whole 40 s wait, not be answered at once",
       "replicas-final",
       "promoted-without-replica",
       {},
       partitions::promoted_without_replica,
       2,
       {},
       {},
       partitions::configure_min_replicas_two},
      {"sentinel-partition-grant-as-vouch-ends",
       "the primary and c1 are cut off and the primary stalls 6 s; c1's acquire, sent while "
       "the sentinels still vouched, is granted there after the failover with a token below "
       "the one c2 got on the promoted replica: it must not be handed over",
       "grant-unvouched",
       "grant-in-flight-as-vouch-ends",
       {},
       partitions::grant_in_flight_as_vouch_ends,
       2,
       {},
       {},
       partitions::configure_stalled_primary},
      {"cluster-partition-holder-with-old-primary",
       "cluster 3+3 (node-timeout 2 s): the primary of the resource's slot and the holder are cut "
       "off for 20 s from the five other nodes and the contender: its replica is elected; the "
       "holder must stop counting on its lease before the contender is granted there",
       "no-vouch",
       "cluster-holder-cut-off-with-old-primary",
       pending_28({Check::mutual_exclusion, Check::lease_loss_notice}),
       partitions::cluster_holder_with_old_primary,
       2,
       kBug28,
       {},
       partitions::configure_cluster},
      {"moved-during-acquire",
       "a slot moves to another primary while an acquire is in flight to the old one (MOVED)",
       "single-node-cluster",
       "acquire-in-flight-across-slot-move",
       {},
       clusters::moved_during_acquire,
       2,
       {},
       {},
       clusters::configure_cluster},
      {"ask-during-migration",
       "a held resource's keys are half migrated (ASK, TRYAGAIN) while its holder renews and "
       "another client waits",
       "no-ask",
       "resource-half-migrated",
       {},
       clusters::ask_during_migration,
       2,
       {},
       {},
       clusters::configure_cluster},
      {"stale-slot-map-after-failover",
       "a shard's primary dies; a client whose slot map names it waits through the election "
       "and must be granted on the promoted replica",
       "single-node-cluster",
       "slot-map-stale-at-promotion",
       {},
       clusters::stale_slot_map_after_failover,
       2,
       {},
       {},
       clusters::configure_cluster},
      {"failover-during-hold",
       "CLUSTER FAILOVER while a lease is held (auto-renewed); a contender waits; the holder "
       "keeps its lease (re-confirmed on the promoted replica: nothing was lost)",
       // no-reconfirm passes here: a graceful failover loses no write, so trusting the lease
       // without re-confirming it is safe here (its lossy twin, crash-during-hold, is not).
       "drop-on-move",
       "failover-while-held",
       {},
       clusters::failover_during_hold,
       2,
       {},
       {},
       clusters::configure_cluster},
      {"crash-during-hold",
       "a shard's primary dies right after granting a lease its replica never received; the "
       "holder must learn it lost it before the contender is granted on the promoted replica",
       "no-reconfirm",
       "grant-lost-in-crash",
       {},
       clusters::crash_during_hold,
       2,
       {},
       {},
       clusters::configure_lagging_cluster},
      {"force-release-other-slot",
       "force-release, from a client of another shard, of a lease held on n2's shard: the holder "
       "is told within a round trip",
       "single-node-cluster",
       "force-release-of-other-shard",
       // Documented (as force-release-while-waiting): told from the notice a round trip after
       // the DEL; the script's own check is that it is told within 100 ms.
       {Check::lease_loss_notice},
       clusters::force_release_other_slot,
       3,
       {},
       {},
       clusters::configure_cluster},
      {"upgrade-with-writer-waiting",
       "a reader upgrades its shared lease to write while a writer waits: the writer must not get "
       "in between the read and the write",
       "release-then-lock",
       "writer-waiting-at-upgrade",
       {},
       semantics::upgrade_with_writer_waiting,
       2},
      {"two-readers-upgrade",
       "two readers both upgrade their shared leases: one is refused at once and steps aside, "
       "the other's upgrade goes",
       "upgrade-ignores-intent",
       "both-readers-upgrading",
       {},
       semantics::two_readers_upgrade,
       2},
      {"persistent-lease-contended",
       "contenders' acquire blocks on a persistent lease (ttl forever): it must stay until its "
       "release",
       "persist-forever",
       "contender-on-persistent-lease",
       {},
       semantics::persistent_lease_contended,
       3},
      {"semaphore-concurrent-requests",
       "a semaphore of 2 permits with one held; two clients ask for the last permit at the same "
       "instant: one is granted, the other waits",
       "semaphore-unwatched",
       "two-requests-for-the-last-permit",
       {},
       semantics::semaphore_concurrent_requests,
       3},
      {"lock-all-partial-failure",
       "a set of two resources, one held elsewhere: the part taken is given back before the "
       "caller is told",
       "lock-all-no-rollback",
       "set-half-taken",
       {},
       semantics::lock_all_partial_failure,
       3},
      {"lock-all-opposite-orders",
       "two callers ask for the same two resources in opposite orders at the same instant: both "
       "get their set",
       "lock-all-unsorted",
       "opposite-orders-at-once",
       {},
       semantics::lock_all_opposite_orders,
       2},
      {"fair-fresh-attempt",
       "fair order: a fresh attempt arrives as the lock is released while another client waits "
       "for it: the waiter is granted first",
       "fair-fresh-jumps",
       "fresh-attempt-while-queued",
       {},
       semantics::fair_fresh_attempt,
       3},
      // Issue #30: the parked hand-off. parked::configure turns ClientOptions::parked_handoff on
      // for every client, so `lockwire` here is `lockwire-parked`. Each names the park-*
      // regression it defeats.
      {"parked-stale-wake-token",
       "a withdrawal leaves a wake token nobody pops; the next waiter's wait block deletes it "
       "(the holder holds), and it must be woken at the holder's expiry (no token)",
       "park-token-only",
       "stale-wake-token-at-park",
       {},
       parked::stale_wake_token,
       3,
       {},
       {},
       parked::configure},
      {"parked-wait-cancelled",
       "a parked waiter is cancelled: its unblocked block leaves a losing claim, to be withdrawn "
       "before the answer",
       "park-drop-late-reply",
       "cancelled-while-parked",
       {},
       parked::wait_cancelled,
       3,
       {},
       {},
       parked::configure},
      {"parked-wait-deadline",
       "a parked waiter's wait ends as the holder's release lands: the token or the unblock runs "
       "its block after the deadline; the grant or claim must be withdrawn",
       "park-drop-late-reply",
       "release-at-parked-deadline",
       {},
       parked::wait_deadline,
       3,
       {},
       {},
       parked::configure},
      {"parked-release-lost",
       "the holder's release (HDEL + COPY) is lost in flight with its connection and machine: no "
       "wake token; the parked waiter must be unblocked by the expiry's push",
       "park-token-only",
       "release-lost-while-parked",
       {},
       parked::release_lost,
       2,
       {},
       {},
       parked::configure},
      {"parked-connection-dropped",
       "the parking connection is reset after the release's token ran its block (a grant), "
       "before the reply: the grant must be withdrawn, then taken again",
       "park-drop-unapplied",
       "parking-connection-dropped-after-grant",
       {},
       parked::connection_dropped,
       2,
       {},
       {},
       parked::configure},
      {"parked-connection-half-open",
       "the parking connection goes half-open (the server keeps its blocked client, nothing "
       "passes): the release's token grants into it; the waiter must detect it after its unblock, "
       "kill it, withdraw and take the lock again (found with this scenario, fixed)",
       "park-drop-unapplied",
       "granted-into-half-open-parking-connection",
       {},
       parked::connection_half_open,
       2,
       {},
       {},
       parked::configure},
      {"parked-connection-stalled",
       "the parking connection's flow stalls for 1 s while its pop and block are on the wire; "
       "the wait ends; they arrive after a stale token was left: the client must be killed first",
       "park-no-kill",
       "parked-bytes-after-give-up",
       {},
       parked::connection_stalled,
       3,
       {},
       {},
       parked::configure},
      {"parked-grant-reply-held-by-pause",
       "the parked waiter's process is paused as the release runs its block, and resumed after "
       "the lease's end: the lease counts from when the park was sent",
       "park-lease-from-reply",
       "parked-grant-reply-held-by-pause",
       {},
       parked::grant_reply_held_by_pause,
       3,
       {},
       {},
       parked::configure},
      {"parked-relock-at-once",
       "a worker loop: the holder's release wakes a parked waiter and it locks again from the "
       "release's answer; knowing the lock taken, it joins the wait without an attempt, and must "
       "still be granted when the new holder releases",
       "park-taken-unread",
       "relock-after-waking-a-parked-waiter",
       {},
       parked::relock_at_once,
       2,
       {},
       {},
       parked::configure},
  };
  return v;
}

}  // namespace

std::span<const Scenario> scenarios() {
  return all();
}

const Scenario* find_scenario(std::string_view name) {
  for (const auto& s : all())
    if (s.name == name) return &s;
  return nullptr;
}

ScenarioResult run_scenario(const Scenario& s, std::string_view strategy, std::uint64_t seed,
                            bool keep_trace) {
  RunConfig c;
  c.seed = seed;
  c.strategy = std::string(strategy);
  c.clients = s.clients;
  c.keep_trace = keep_trace;
  c.health_check = s.health_check;
  if (s.configure != nullptr) s.configure(c);
  Run r(c);
  s.script(r);
  ScenarioResult out;
  out.verdicts = r.verdicts();
  out.marked = r.marked(s.mark);
  out.hash = r.trace_hash();
  out.report = r.report();
  if (keep_trace) out.timeline = r.timeline();
  return out;
}

}  // namespace lockwire::races
