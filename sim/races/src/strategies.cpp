// The strategy registry: every named strategy is lockwire's lock::Client with some options
// (lockwire_strategy.cpp) or the naive SET-NX lock with some flaws (naive_strategy.cpp; its
// bare-socket renewals use RawConn, raw_conn.hpp).
#include <vector>

#include "lockwire/races/races.hpp"
#include "lockwire_strategy.hpp"
#include "naive_strategy.hpp"

namespace lockwire::races {

namespace {

using detail::Flaws;
using detail::LockwireTweaks;
using detail::make_lockwire_strategy;
using detail::make_naive_strategy;

struct Entry {
  StrategyInfo info;
  bool lockwire;
  Flaws flaws;
  LockwireTweaks lw{};  // lockwire only
};

// A parked hand-off strategy (ClientOptions::parked_handoff) with safeguard `m` switched off.
LockwireTweaks parked(bool lock::testing::Regressions::*m) {
  LockwireTweaks t;
  t.parked = true;
  t.regressions.*m = true;
  return t;
}

LockwireTweaks regression(bool lock::testing::Regressions::*m, bool cluster_vouch = true) {
  LockwireTweaks t;
  t.regressions.*m = true;
  t.cluster_vouch = cluster_vouch;
  return t;
}

Flaws flaw(bool Flaws::*m) {
  Flaws f;
  f.*m = true;
  return f;
}

const std::vector<Entry>& entries() {
  static const std::vector<Entry> e = {
      {{"lockwire", "lockwire's lock::Client (docs/protocol.md)"}, true, {}},
      {{"no-fence",
        "lockwire's lock::Client without fencing abandoned connections (no CLIENT KILL)"},
       true,
       {},
       regression(&lock::testing::Regressions::no_fence)},
      {{"answer-at-deadline",
        "lockwire answering a wait at its deadline while its acquire is in flight (#13)"},
       true,
       {},
       regression(&lock::testing::Regressions::answer_at_deadline)},
      {{"keep-failed-claim",
        "lockwire leaving its claim when a block is refused (EXECABORT discards the HDEL, #13)"},
       true,
       {},
       regression(&lock::testing::Regressions::keep_claim_on_failed_block)},
      {{"reread-untracked",
        "lockwire re-reading at once when the server refuses tracking: busy waiting (#13)"},
       true,
       {},
       regression(&lock::testing::Regressions::ignore_refused_tracking)},
      {{"ignore-eviction",
        "lockwire granting on a server whose maxmemory-policy may evict lock keys (#13)"},
       true,
       {},
       regression(&lock::testing::Regressions::ignore_eviction_policy)},
      {{"no-vouch",
        "lockwire without the sentinels' or the cluster's masters' vouch: a holder cut off with "
        "the old primary counts on its lease up to its TTL (#28)"},
       true,
       {},
       LockwireTweaks{.cluster_vouch = false, .vouch = false}},
      {{"replicas-final",
        "lockwire answering 'too few replicas acknowledged' at once instead of trying again "
        "within the wait (#28)"},
       true,
       {},
       regression(&lock::testing::Regressions::not_replicated_final)},
      {{"grant-unvouched",
        "lockwire handing over a grant whose vouch ran out while its step was in flight: a lease "
        "that counts for nothing, its token below one a failover handed out (#28)"},
       true,
       {},
       regression(&lock::testing::Regressions::grant_unvouched)},
      {{"ask-unbound",
        "lockwire sending a Cluster block unbound to its stream: queued before a partition, it "
        "goes out after the failover with the old primary's fencing floor (#28)"},
       true,
       {},
       regression(&lock::testing::Regressions::ask_unbound)},
      {{"lockwire-fence-1s",
        "lockwire with ClientOptions::fence_ttl 1 s: fence keys expire, floors are re-read and "
        "grants checked within a run (#31; for exploration)"},
       true,
       {},
       LockwireTweaks{.fence_ttl = std::chrono::seconds(1)}},
      {{"stale-floor",
        "lockwire letting the fence key expire without keeping its fencing floor young or checking "
        "its age: after a pause longer than fence_ttl a token can be below an earlier one (#31)"},
       true,
       {},
       regression(&lock::testing::Regressions::stale_floor)},
      {{"lockwire-allow-eviction",
        "lockwire with ClientOptions::allow_eviction: grants on evicting servers, holders track "
        "their holder set"},
       true,
       {},
       LockwireTweaks{.allow_eviction = true}},
      {{"counter-tokens",
        "lockwire with tokens from the counter alone (INCR-like): they repeat after a failover or "
        "restart lost the counter's last write (#15)"},
       true,
       {},
       regression(&lock::testing::Regressions::counter_tokens)},
      // These two run without the Cluster vouch (#28): on a cluster it ends a lease whose
      // primary may be failed over before the promotion (crash-during-hold), and its map reads
      // move a lease to the promoted replica's connection before a MOVED would
      // (failover-during-hold), so the regression they bring back would not show there.
      {{"no-reconfirm",
        "lockwire keeping its leases across a primary change without renewing them there (#15; "
        "on a cluster without the masters' vouch)"},
       true,
       {},
       regression(&lock::testing::Regressions::no_reconfirm, /*cluster_vouch=*/false)},
      {{"drop-on-move",
        "lockwire counting a primary change as the loss of every lease it holds: safe, but each "
        "planned failover costs every holder its locks (#14; without the masters' vouch)"},
       true,
       {},
       regression(&lock::testing::Regressions::drop_on_move, /*cluster_vouch=*/false)},
      {{"release-then-lock",
        "lockwire upgrading a shared lease by releasing it, then locking exclusively: a writer "
        "can be granted in between (#20)"},
       true,
       {},
       regression(&lock::testing::Regressions::upgrade_by_release)},
      {{"upgrade-ignores-intent",
        "lockwire upgrading without the pending-upgrade intent: two upgrading readers wait for "
        "each other until their deadlines (#20)"},
       true,
       {},
       regression(&lock::testing::Regressions::upgrade_ignores_intent)},
      {{"persist-forever",
        "lockwire keeping a persistent lease as a holder set with no TTL (PERSIST): a contender's "
        "acquire block gives it the contender's TTL (#20)"},
       true,
       {},
       regression(&lock::testing::Regressions::persist_forever)},
      {{"semaphore-unwatched",
        "lockwire counting a semaphore's holders, then granting, with no WATCH between: two "
        "requests for the last permit both get it (#20)"},
       true,
       {},
       regression(&lock::testing::Regressions::semaphore_unwatched)},
      {{"lock-all-no-rollback",
        "lockwire's lock_all keeping the resources it took when the set fails (#20)"},
       true,
       {},
       regression(&lock::testing::Regressions::lock_all_no_rollback)},
      {{"lock-all-unsorted",
        "lockwire's lock_all taking the resources in the caller's order: two callers deadlock "
        "until their waits end (#20)"},
       true,
       {},
       regression(&lock::testing::Regressions::lock_all_unsorted)},
      {{"fair-fresh-jumps",
        "lockwire's fair order kept by waiters only: a fresh attempt takes a just-freed lock "
        "ahead of the queue (#20)"},
       true,
       {},
       regression(&lock::testing::Regressions::fair_fresh_jumps)},
      {{"no-ask",
        "lockwire on a Cluster answering ASK (a slot being migrated) as the server's error "
        "instead of asking the importing node (#14)"},
       true,
       {},
       regression(&lock::testing::Regressions::no_ask)},
      {{"lockwire-parked",
        "lockwire with ClientOptions::parked_handoff: the elected waiter parks its acquire block "
        "behind a blocking pop a release's wake token runs (#30)"},
       true,
       {},
       LockwireTweaks{.parked = true}},
      {{"park-no-kill",
        "lockwire-parked without the CLIENT KILL of a parking connection that failed on our "
        "side: a block the server still holds can grant after the claim's withdrawal (#30)"},
       true,
       {},
       parked(&lock::testing::Regressions::park_no_kill)},
      {{"park-token-only",
        "lockwire-parked unblocking a parked waiter only when its wait ends: a push without a "
        "wake token (an expiry, a release lost) leaves it asleep until its pop's timeout (#30)"},
       true,
       {},
       parked(&lock::testing::Regressions::park_token_only)},
      {{"park-drop-unapplied",
        "lockwire-parked counting a parking connection that dropped after writing as never "
        "applied: no withdrawal of what its block may have granted (#30)"},
       true,
       {},
       parked(&lock::testing::Regressions::park_drop_unapplied)},
      {{"park-drop-late-reply",
        "lockwire-parked dropping the parked block's reply once the wait ended (cancel, "
        "deadline) instead of settling it: a late grant is not withdrawn (#30)"},
       true,
       {},
       parked(&lock::testing::Regressions::park_drop_late_reply)},
      {{"park-lease-from-reply",
        "lockwire-parked counting a parked grant's lease from its reply's arrival instead of "
        "from when the park was sent (#30)"},
       true,
       {},
       parked(&lock::testing::Regressions::park_lease_from_reply)},
      {{"park-taken-unread",
        "lockwire-parked trusting the hint that its release has just handed the lock to a parked "
        "waiter: a re-lock waits for a push without its wait block, in no queue and tracking "
        "nothing, and sleeps to its deadline while the lock is free (#30)"},
       true,
       {},
       parked(&lock::testing::Regressions::park_taken_unread)},
      {{"single-node",
        "lockwire's lock::Client without sentinel discovery: connects to the service address "
        "(re-pointed at +switch-master) and stays on the old primary while it answers"},
       true,
       {},
       LockwireTweaks{.direct = true}},
      {{"single-node-cluster",
        "lockwire's lock::Client told one cluster node as a single server (lockwire before #14): "
        "no slot map, MOVED is an error, the force-release notice is one shared key"},
       true,
       {},
       LockwireTweaks{.pinned = true}},
      {{"get-then-del", "release = GET, compare, then DEL in a second round trip"},
       false,
       flaw(&Flaws::get_then_del)},
      {{"blind-renew", "renew = PEXPIRE without checking who holds the key"},
       false,
       flaw(&Flaws::blind_renew)},
      {{"give-up-on-deadline", "wait deadline during an in-flight acquire: ignore its reply"},
       false,
       flaw(&Flaws::give_up)},
      {{"replay-on-unknown", "acquire reply lost: send the same SET NX again"},
       false,
       flaw(&Flaws::replay_unknown)},
      {{"assume-released", "release reply lost: report the lock released"},
       false,
       flaw(&Flaws::assume_released)},
      {{"no-recheck", "wait: subscribe, but no re-check once the subscription is confirmed"},
       false,
       [] {
         Flaws f;
         f.no_recheck = true;
         f.no_expiry_wake = true;
         return f;
       }()},
      {{"no-expiry-wake", "wait: woken only by release messages, never at the holder's expiry"},
       false,
       flaw(&Flaws::no_expiry_wake)},
      {{"wall-clock", "lease validity judged on the client's wall clock"},
       false,
       flaw(&Flaws::wall_clock)},
      {{"no-fencing", "no fencing token (always 0)"}, false, flaw(&Flaws::no_fencing)},
      {{"reply-clock", "lease validity counted from the grant reply's arrival, not the request"},
       false,
       flaw(&Flaws::reply_clock)},
      {{"poll", "wait: sleep 10 ms and retry, like many lock libraries"},
       false,
       flaw(&Flaws::poll)},
      {{"dup-shared", "shared acquire counts the owner in a reader set without refusing a repeat"},
       false,
       flaw(&Flaws::dup_shared)},
      {{"raw-watch", "renew: WATCH/GET then MULTI/PEXPIRE/EXEC on one bare socket, no lane"},
       false,
       flaw(&Flaws::raw_txn)},
      {{"pubsub", "naive lock waiting with SUBSCRIBE per wait and UNSUBSCRIBE after it"},
       false,
       flaw(&Flaws::sub_per_wait)},
      {{"late-message",
        "pubsub, but a message arriving after UNSUBSCRIBE makes it believe it is subscribed"},
       false,
       [] {
         Flaws f;
         f.sub_per_wait = true;
         f.late_message = true;
         return f;
       }()},
      {{"ack-state", "pubsub, but it counts itself subscribed until the UNSUBSCRIBE ack arrives"},
       false,
       [] {
         Flaws f;
         f.sub_per_wait = true;
         f.ack_state = true;
         return f;
       }()},
      {{"naive", "SET NX PX lock with guarded release/renew (no known flaw switched on)"},
       false,
       {}},
  };
  return e;
}

}  // namespace

std::span<const StrategyInfo> strategies() noexcept {
  static const std::vector<StrategyInfo> v = [] {
    std::vector<StrategyInfo> out;
    for (const auto& e : entries()) out.push_back(e.info);
    return out;
  }();
  return v;
}

std::unique_ptr<Strategy> make_strategy(std::string_view name, sim::Node& node,
                                        loop::ConnectionOptions options,
                                        const StrategyOptions& so) {
  for (const auto& e : entries()) {
    if (e.info.name != name) continue;
    if (e.lockwire) {
      LockwireTweaks t = e.lw;
      t.min_replicas = so.min_replicas;
      t.replica_majority = so.replica_majority;
      if (so.fence_ttl > Nanos{0}) t.fence_ttl = so.fence_ttl;
      if (so.parked_handoff) t.parked = true;
      return make_lockwire_strategy(node, std::move(options), t);
    }
    return make_naive_strategy(node, std::move(options), e.flaws);
  }
  return nullptr;
}

}  // namespace lockwire::races
