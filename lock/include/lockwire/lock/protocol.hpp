// The Lua-free lock protocol as pure functions: request builders and reply interpreters over
// parsed RESP frames. No I/O, no clock — unit-testable without a server. docs/protocol.md explains
// every block and why it is safe; keep the two in step.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "lockwire/lock/types.hpp"
#include "lockwire/loop/request.hpp"
#include "lockwire/resp/node.hpp"

namespace lockwire::lock {



namespace protocol {

// The wait queue's TTL, renewed by every wait block: it outlives every live waiter's doorbell
// (at most kDoorbellMaxMs, re-armed when it expires), so it goes only after its last waiter.
inline constexpr std::int64_t kDoorbellMaxMs = 10'000;
inline constexpr std::int64_t kQueueTtlMs = 2 * kDoorbellMaxMs;

// Fencing tokens are sorted-set scores, exact as doubles up to 2^53 (docs/protocol.md,
// "Fencing tokens"): about 285 years of microseconds since 1970.
inline constexpr std::uint64_t kMaxToken = std::uint64_t{1} << 53;

// The fence key's PEXPIRE, sent by the blocks that raise it (ZADD GT): fence_ttl and a third.
// A block that does not raise sends none, and its token is handed over only if its reply came
// within a third of fence_ttl of its connection's raising block, so the key lives at least
// fence_ttl after every token handed over (docs/protocol.md, "Fencing tokens").
inline constexpr std::int64_t fence_expiry_ms(std::int64_t fence_ttl_ms) noexcept {
  return fence_ttl_ms + fence_ttl_ms / 3;
}

// Keys of one resource; all share the hash tag {resource}.
struct Keys {
  std::string holders;  // P{R}      hash: x:<owner> / s:<owner>
  std::string fence;    // P{R}:fence zset {t: last token}: a counter kept >= the server's clock
  std::string queue;    // P{R}:q    zset: exclusive waiters, score = ticket (a wake-up hint)
  [[nodiscard]] std::string companion(std::string_view owner) const;  // P{R}:s:<owner>
  [[nodiscard]] std::string doorbell(std::string_view owner) const;   // P{R}:w:<owner>
  [[nodiscard]] std::string intent() const;  // P{R}:u: the owner of the pending upgrade
  // Parked hand-off (docs/handoff-one-rtt.md): P{R}:armed, a one-member zset a parked waiter
  // keeps, and P{R}:wake, the token a release copies from it, which the parked pop takes.
  [[nodiscard]] std::string armed() const;
  [[nodiscard]] std::string wake() const;
};
[[nodiscard]] Keys make_keys(std::string_view prefix, std::string_view resource);
[[nodiscard]] std::string field(Kind kind, std::string_view owner);

// --- exclusive acquire: MULTI HSETNX HLEN PEXPIRE-NX ZADD-GT ZADD-INCR EXEC -------------------
// The token: `ZADD fence GT floor t` raises the counter to `floor_us` (the client's lower bound
// of the server's clock, in microseconds; 0 = a plain counter), then `ZADD fence INCR 1 t`
// takes the next value. So tokens keep increasing even after the counter was lost or went back
// (a restart without persistence, a failover that lost writes): docs/protocol.md.
// Without `raise_floor` the ZADD GT is left out (MULTI HSETNX HLEN PEXPIRE-NX ZADD-INCR EXEC):
// for a resource whose counter this connection already raised to its floor (Client::Core).
// With `fence_ttl_ms` > 0 every block that raises P{R}:fence ends its fencing commands with
// `PEXPIRE P{R}:fence <fence_expiry_ms(fence_ttl_ms)>`; a block without the raise sends none
// (ClientOptions::fence_ttl; docs/protocol.md, "Fencing tokens", why the order survives it).
[[nodiscard]] loop::Request exclusive_acquire(const Keys& k, std::string_view field,
                                              std::int64_t ttl_ms, std::uint64_t floor_us = 0,
                                              bool raise_floor = true,
                                              std::int64_t fence_ttl_ms = 0);
enum class Outcome : std::uint8_t { granted, contended, already_held, aborted, bad_reply };
struct AcquireReply {
  Outcome outcome = Outcome::bad_reply;
  std::uint64_t token = 0;
};
// `exec` is the EXEC reply frame (Replies::back()).
// `raise_floor`, `fence_expires` (fence_ttl_ms > 0): as the block was built (4 replies in EXEC,
// one more with the raise, one more for a raise with a fence TTL).
[[nodiscard]] AcquireReply parse_exclusive_acquire(resp::Frame exec, bool raise_floor = true,
                                                   bool fence_expires = false);
// Without fencing tokens (ClientOptions::fencing_tokens false): MULTI HSETNX HLEN PEXPIRE-NX
// EXEC, the fence key untouched; its reply's token is 0.
[[nodiscard]] loop::Request exclusive_acquire_untokened(const Keys& k, std::string_view field,
                                                       std::int64_t ttl_ms);
[[nodiscard]] AcquireReply parse_exclusive_acquire_untokened(resp::Frame exec);

// --- wait read: MULTI [HDEL own] CLIENT CACHING YES, PTTL, HGETALL EXEC -----------------------
// Removes our losing claim (if `own_field` is not empty) and registers tracking interest in the
// holder set with the read that decides whether to wait. Used by shared waiters.
// Without `track` (the server refused client tracking) the CLIENT CACHING commands are left out
// and the waiter polls instead (docs/protocol.md, "Servers").
[[nodiscard]] loop::Request wait_read(const Keys& k, std::string_view own_field, bool track = true);
struct WaitRead {
  bool ok = false;       // false: malformed reply
  bool tracked = false;  // CLIENT CACHING accepted (tracking is on)
  std::int64_t pttl = -2;
  std::vector<std::string> fields;
  // exclusive_wait_read only: our place in the wait queue — 0: first, the elected waiter (the
  // one a release wakes); 1: second, its backup; 2: further back — the first waiter's owner, and
  // our doorbell's PTTL.
  std::int64_t rank = -1;
  std::string first;
  std::int64_t doorbell_pttl = -2;
  // When we are first: the (at most two) waiters right behind us, the two our leave will find
  // first (its doorbells are rung in the leave's own request).
  std::vector<std::string> behind;
  [[nodiscard]] bool elected() const noexcept { return rank == 0; }
};
[[nodiscard]] WaitRead parse_wait_read(resp::Frame exec, bool with_hdel, bool track = true);

// --- exclusive wait read: MULTI [HDEL own] [DEL wake] ZADD queue NX ticket owner; PEXPIRE queue;
// SET doorbell NX PX; ZRANGE queue 0 2; CACHING YES; PTTL doorbell; CACHING YES; PTTL holders;
// HGETALL holders EXEC -------------------------------------------------------------------------
// Joins the wait queue P{R}:q (score = `ticket`, the token our first losing attempt burnt, so
// the queue is in order of arrival at the server) and tracks our own doorbell P{R}:w:<owner>,
// which a waiter leaving the queue rings for the two now first. Only the first in the queue
// acts on holder-set pushes, so a release wakes one waiter. See docs/protocol.md, "Waiting".
// `clear_wake` (the parked hand-off): DEL P{R}:wake first. A wake token that exists while the
// lock is held is stale — a release with nobody parked copied an old arm — and the next parker
// would pop it at once only to lose (docs/handoff-one-rtt.md, section 6).
[[nodiscard]] loop::Request exclusive_wait_read(const Keys& k, std::string_view own_field,
                                                std::string_view owner, std::uint64_t ticket,
                                                std::int64_t doorbell_ttl_ms, bool track = true,
                                                bool clear_wake = false);
[[nodiscard]] WaitRead parse_exclusive_wait_read(resp::Frame exec, bool with_hdel,
                                                 std::string_view owner, bool track = true,
                                                 bool clear_wake = false);
// Leaving the queue: MULTI ZREM queue <owners>; ZRANGE queue 0 1 EXEC -> the two now first;
// then, in the same request, ring(ring_too): the doorbells of the two expected to be first
// (WaitRead::behind), so that a hand-on usually takes one request. Their replies follow the
// block's kLeaveReplies.
inline constexpr std::size_t kLeaveReplies = 4;  // MULTI, ZREM, ZRANGE, EXEC
[[nodiscard]] loop::Request leave_queue(const Keys& k, const std::vector<std::string>& owners,
                                        const std::vector<std::string>& ring_too = {});
// The (at most two) first waiters, in order; false on a malformed reply.
[[nodiscard]] bool parse_leave_queue(resp::Frame exec, std::vector<std::string>& first);
// The same without MULTI (ZREM, then ZRANGE queue 0 1, pipelined): where the server refuses the
// block — a full server (OOM) refuses every command queued in MULTI, not a plain ZREM. The
// queue is only a hint, so nothing needs the two to be atomic.
[[nodiscard]] loop::Request leave_queue_plain(const Keys& k,
                                              const std::vector<std::string>& owners);
// The ZRANGE reply of leave_queue_plain: the (at most two) first waiters.
[[nodiscard]] bool parse_queue_head(resp::Frame zrange, std::vector<std::string>& first);
// Rings waiters' doorbells: SET P{R}:w:<owner> 1 XX KEEPTTL for each (pipelined; a write, so
// its tracking push wakes the waiter). Only an existing doorbell rings: nil = the waiter is gone.
[[nodiscard]] loop::Request ring(const Keys& k, const std::vector<std::string>& owners);
enum class Ring : std::uint8_t { rung, gone, bad_reply };
[[nodiscard]] Ring parse_ring(resp::Frame reply);

// What the holder set means for a claimant that wants `kind` as `owner`.
enum class Decision : std::uint8_t { free, blocked, already_held, blocked_by_shared_only };
// `permits` > 0 (a semaphore, kind shared): blocked_by_shared_only once `permits` other shared
// holders are there (their stale fields included: never one holder too many).
[[nodiscard]] Decision decide(Kind kind, std::string_view owner,
                              const std::vector<std::string>& fields, int permits = 0);

// --- shared acquire: WATCH holders companion; HGETALL; EXISTS  then  MULTI ... EXEC ----------
[[nodiscard]] loop::Request shared_watch(const Keys& k, std::string_view owner);
struct SharedRead {
  bool ok = false;
  bool companion_exists = false;
  std::vector<std::string> fields;
};
[[nodiscard]] SharedRead parse_shared_watch(const loop::Replies& r);
// The field names of an HGETALL reply (the holder set); false if malformed.
[[nodiscard]] bool parse_holder_fields(resp::Frame hgetall, std::vector<std::string>& fields);
// Decision for the shared claimant from the watched read (already_held if s:owner is live).
[[nodiscard]] Decision decide_shared(std::string_view owner, const SharedRead& read,
                                     int permits = 0);
[[nodiscard]] loop::Request shared_grant(const Keys& k, std::string_view owner,
                                         std::int64_t ttl_ms, std::uint64_t floor_us = 0,
                                         std::int64_t fence_ttl_ms = 0);
// granted (token) / aborted (EXEC nil) / bad_reply. `fence_expires`: built with fence_ttl_ms > 0.
[[nodiscard]] AcquireReply parse_shared_grant(resp::Frame exec, bool fence_expires = false);

// --- upgrade: a sole shared lease to exclusive, in place ----------------------------------------
// WATCH P{R} P{R}:s:O P{R}:u; HGETALL P{R}; EXISTS P{R}:s:O; GET P{R}:u  then one of the blocks
// below (docs/protocol.md, "Upgrade").
[[nodiscard]] loop::Request upgrade_watch(const Keys& k, std::string_view owner);
struct UpgradeRead {
  bool ok = false;
  bool companion_exists = false;
  std::string intent;  // the owner whose upgrade is pending (P{R}:u); empty: none
  std::vector<std::string> fields;
};
[[nodiscard]] UpgradeRead parse_upgrade_watch(const loop::Replies& r);
enum class UpgradeDecision : std::uint8_t {
  free,                    // our live s:O is the only field: promote it
  blocked,                 // a writer (or an unknown field) is there: wait
  blocked_by_shared_only,  // other readers: wait (their stale fields may be cleaned)
  not_held,                // our shared lease is gone: nothing to upgrade
  conflict,                // another reader's upgrade is pending: waiting would deadlock
};
// `intent` empty = none; `companion_exists` false = our lease is over.
[[nodiscard]] UpgradeDecision decide_upgrade(std::string_view owner,
                                             const std::vector<std::string>& fields,
                                             bool companion_exists, std::string_view intent);
// MULTI HDEL s:O; DEL P{R}:s:O P{R}:u; HSET x:O; PEXPIRE P{R} ttl; ZADD GT; ZADD INCR;
// [PEXPIRE fence]; EXEC.
[[nodiscard]] loop::Request upgrade_grant(const Keys& k, std::string_view owner,
                                          std::int64_t ttl_ms, std::uint64_t floor_us = 0,
                                          std::int64_t fence_ttl_ms = 0);
// granted (token) / aborted (EXEC nil) / bad_reply.
[[nodiscard]] AcquireReply parse_upgrade_grant(resp::Frame exec, bool fence_expires = false);
// Blocked: MULTI SET P{R}:u O PX intent_ms; [CLIENT CACHING YES]; PTTL P{R}; HGETALL P{R}; EXEC
// under the same WATCH: the intent is ours only if nothing changed since the read.
[[nodiscard]] loop::Request upgrade_wait(const Keys& k, std::string_view owner,
                                         std::int64_t intent_ms, bool track);
// The wait read of upgrade_wait (aborted: `ok` false and `aborted` true: read again).
[[nodiscard]] WaitRead parse_upgrade_wait(resp::Frame exec, bool track, bool& aborted);

// --- fair exclusive acquire: grants in the order of the wait queue P{R}:q (docs/protocol.md) -----
// WATCH P{R} P{R}:q; HLEN P{R}; ZRANGE P{R}:q 0 0; [ZADD P{R}:fence GT floor t, when floor_us >
// 0]; ZADD P{R}:fence INCR 1 t (our ticket: the order of arrival at the server, burnt if
// unused); [PEXPIRE P{R}:fence fence_ttl_ms, when > 0].
[[nodiscard]] loop::Request fair_read(const Keys& k, std::uint64_t floor_us = 0,
                                      std::int64_t fence_ttl_ms = 0);
struct FairRead {
  bool ok = false;
  std::int64_t holders = 0;  // HLEN of the holder set
  std::string head;          // the first waiter's owner; empty: nobody waits
  std::uint64_t ticket = 0;
};
// `raise_floor` (floor_us > 0) and `fence_expires` (fence_ttl_ms > 0): as fair_read was built.
[[nodiscard]] FairRead parse_fair_read(const loop::Replies& r, bool raise_floor = false,
                                       bool fence_expires = false);
// MULTI HSETNX x:O; PEXPIRE P{R} ttl; ZADD-GT; ZADD-INCR; [PEXPIRE fence]; ZREM P{R}:q O; EXEC
// (under the WATCH).
[[nodiscard]] loop::Request fair_grant(const Keys& k, std::string_view owner, std::int64_t ttl_ms,
                                       std::uint64_t floor_us = 0, std::int64_t fence_ttl_ms = 0);
// granted (token) / aborted / bad_reply (also: HSETNX 0, which the WATCH rules out).
[[nodiscard]] AcquireReply parse_fair_grant(resp::Frame exec, bool fence_expires = false);
// The queue head's doorbell PTTL (-2: gone, the head vanished) — and, if `drop` names it, its
// removal from the queue: ZREM P{R}:q head (a live head re-joins at its own ticket).
[[nodiscard]] loop::Request head_doorbell(const Keys& k, std::string_view head);
[[nodiscard]] loop::Request drop_head(const Keys& k, std::string_view head);
// An integer reply (PTTL); nullopt for anything else.
[[nodiscard]] std::optional<std::int64_t> parse_pttl(resp::Frame reply);

// --- replica acknowledgement (ClientOptions::min_replicas): WAIT n timeout_ms ------------------
// Sent after a grant's or renewal's reply (never pipelined with the block: a plain request may
// be written before a transaction that waits for the connection's lane, and a WAIT written
// before the block would confirm nothing).
[[nodiscard]] loop::Request wait_replicas(int n, std::int64_t timeout_ms);
// The number of replicas that acknowledged; nullopt for an error or a malformed reply.
[[nodiscard]] std::optional<std::int64_t> parse_wait_replicas(resp::Frame reply);
// ROLE, for ReplicaAcks::majority() without sentinels: the replicas a primary lists; nullopt for
// an error, a malformed reply or a server that is not a primary.
[[nodiscard]] loop::Request role_request();
[[nodiscard]] std::optional<int> parse_role_replicas(resp::Frame reply);

// --- release ------------------------------------------------------------------------------------
[[nodiscard]] loop::Request exclusive_release(const Keys& k, std::string_view owner);
[[nodiscard]] loop::Request shared_release(const Keys& k, std::string_view owner);
// The release of `owner`'s lease of that kind (one of the two above). `wake`, exclusive only:
// `COPY P{R}:armed P{R}:wake` follows the HDEL, pipelined — a parked waiter's token (nothing
// when no waiter is parked, nothing when a token waits already). The HDEL's reply decides.
[[nodiscard]] loop::Request release(Kind kind, const Keys& k, std::string_view owner,
                                    bool wake = false);
enum class ReleaseResult : std::uint8_t { released, not_held, bad_reply };
[[nodiscard]] ReleaseResult parse_release(Kind kind, const loop::Replies& r);
// A release with `wake` whose HDEL released and whose COPY made a wake token: a parked waiter's
// acquire block ran in the server right behind it (or a stale token waits for the next parker).
[[nodiscard]] bool release_woke_parked(const loop::Replies& r);

// --- parked hand-off (docs/handoff-one-rtt.md) ----------------------------------------------------
// What the elected waiter sends on its parking connection ahead of its acquire block (an
// exclusive_acquire that raises the floor): arm (ZADD P{R}:armed 0 t, PEXPIRE armed_ms), then
// BZPOPMIN P{R}:wake <timeout>. The block waits in the server's query buffer until a release's
// token, CLIENT UNBLOCK or the timeout ends the pop, and runs in the same event-loop pass.
[[nodiscard]] loop::Request park_pop(const Keys& k, std::int64_t armed_ms,
                                     std::int64_t timeout_ms);
// The park as one request (one write, one reply handler): park_pop's commands, then `block`.
// The block's replies are the request's from kParkPopReplies on (loop::Replies::from).
inline constexpr std::size_t kParkPopReplies = 3;
[[nodiscard]] loop::Request park(const Keys& k, std::int64_t armed_ms, std::int64_t timeout_ms,
                                 const loop::Request& block);
// CLIENT UNBLOCK <id> TIMEOUT: the parked pop answers nil, and the block behind it runs now.
[[nodiscard]] loop::Request unpark(std::int64_t client_id);
// CLIENT KILL ID <id>: a parking connection whose stream failed on our side, gone on the server
// too before its waiter's claim is withdrawn (its parked block can then never run).
[[nodiscard]] loop::Request kill_client(std::int64_t client_id);
// What a parked waiter needs besides the pop, asked once before the first park:
// `CLIENT UNBLOCK 0 TIMEOUT` (to run a parked block now) and `CLIENT KILL ID <max>` (to end a
// parking client whose stream failed on our side); both answer 0 where allowed. An ACL without
// @dangerous refuses them (NOPERM): then nobody parks.
[[nodiscard]] loop::Request park_check();
// The server's words when park_check was refused, "" when both are allowed.
[[nodiscard]] std::string park_check_refusal(const loop::Replies& r);
// The server's words when the pop or its arming was refused for good (NOPERM: an ACL without
// BZPOPMIN or ZADD; a server without them), "" otherwise (parked, or refused for now: OOM).
[[nodiscard]] std::string park_refusal(const loop::Replies& r);

// --- renew: WATCH ..; HEXISTS [EXISTS]  then  MULTI PEXPIRE [PEXPIRE GT] EXEC --------------------
[[nodiscard]] loop::Request renew_watch(Kind kind, const Keys& k, std::string_view owner);
enum class RenewCheck : std::uint8_t { held, not_held, bad_reply };
[[nodiscard]] RenewCheck parse_renew_watch(Kind kind, const loop::Replies& r);
[[nodiscard]] loop::Request renew_exec(Kind kind, const Keys& k, std::string_view owner,
                                       std::int64_t ttl_ms);
enum class RenewResult : std::uint8_t { renewed, aborted, not_held, bad_reply };
[[nodiscard]] RenewResult parse_renew_exec(Kind kind, resp::Frame exec);

// --- stale shared fields (companion expired): WATCH holders + companions; PTTL each ------------
[[nodiscard]] loop::Request stale_watch(const Keys& k, const std::vector<std::string>& owners);
// PTTL per owner (-2 = companion gone), in `owners` order; empty on a malformed reply.
[[nodiscard]] std::vector<std::int64_t> parse_stale_watch(const loop::Replies& r,
                                                          std::size_t owners);
[[nodiscard]] loop::Request stale_cleanup(const Keys& k, const std::vector<std::string>& fields);

// --- force_release: MULTI HGETALL DEL EXEC, then DEL companions ----------------------------------
[[nodiscard]] loop::Request force_release(const Keys& k);
// Fields that were present (empty when none); false on a malformed reply.
[[nodiscard]] bool parse_force_release(resp::Frame exec, std::vector<std::string>& fields);
[[nodiscard]] loop::Request delete_companions(const Keys& k,
                                              const std::vector<std::string>& owners);

// --- force-release notice ----------------------------------------------------------------------
// The hash <prefix>force-released {res: <resource of the latest force_release>, seq: <count>}.
// force_release updates it right behind its block; every lock client tracks it (CLIENT CACHING
// YES + HMGET at each connect and after each invalidation) and checks its own leases at once,
// instead of at their next renewal. Only key access under the prefix is needed (no channels).
[[nodiscard]] std::string notice_key(std::string_view prefix);
[[nodiscard]] loop::Request force_notice(std::string_view notice_key, std::string_view resource);
// CLIENT CACHING YES; HMGET <notice> res seq: the tracked re-read after an invalidation of the
// notice (the first read of each connection is in connect_probe).
[[nodiscard]] loop::Request notice_read(std::string_view notice_key);
struct Notice {
  bool ok = false;
  std::string resource;  // empty: no force_release yet
  std::int64_t seq = 0;  // 0: no force_release yet
};
// The HMGET reply frame (Replies::back()).
[[nodiscard]] Notice parse_notice_read(resp::Frame hmget);
// What the server lets a lock client do, asked at every (re)connect in one request: CLIENT
// TRACKING ON OPTIN; CLIENT CACHING YES; HMGET <notice> res seq (tracked); INFO memory; TIME
// (the server's clock, the fencing tokens' floor). A refusal
// (NOPERM, unknown command) is an answer, not a failure.
[[nodiscard]] loop::Request connect_probe(std::string_view notice_key);
struct ConnectProbe {
  bool ok = false;             // all six replies
  bool push_wakeups = false;   // tracking and caching accepted
  std::string tracking_error;  // the server's words otherwise
  Notice notice;
  bool memory_known = false;
  std::int64_t maxmemory = 0;
  std::string maxmemory_policy;
  std::string info_error;
  bool clock_known = false;
  std::uint64_t server_us = 0;  // TIME, in microseconds since 1970
  std::string clock_error;
  // PEXPIRE takes no options there (Redis < 7.0; COMMAND INFO says arity 3): the server's
  // answer, quoted. Empty when it has them, or when the answer says nothing about them (NOPERM,
  // an unknown COMMAND: the acquire then meets any error itself).
  std::string expire_error;
};
[[nodiscard]] ConnectProbe parse_connect_probe(const loop::Replies& r);
// Why a server cannot hold leases, from its connect probe (empty: it can). `software` is HELLO's
// "server version" (for the message only; capabilities are probed, never read from versions),
// `address` where it is.
[[nodiscard]] std::string unsupported_server(const ConnectProbe& p, std::string_view software,
                                             std::string_view address);

// TIME alone: a fresh fencing floor where lock keys may vanish on a live connection
// (allow_eviction on an evicting server).
[[nodiscard]] loop::Request time_request();
// A TIME reply ([seconds, microseconds] as blob strings) in microseconds since 1970; nullopt
// for an error or a malformed reply, or a clock past kMaxToken / 2.
[[nodiscard]] std::optional<std::uint64_t> parse_time(resp::Frame f);
// The server's own words for a failed request: the first error reply (inside an EXEC reply too),
// with the EXECABORT that followed it in brackets; empty when no reply is an error.
[[nodiscard]] std::string server_words(const loop::Replies& r);
// LOADING, BUSY, MASTERDOWN, TRYAGAIN, CLUSTERDOWN: the server may serve again later.
[[nodiscard]] bool transient_server_error(std::string_view words) noexcept;
// Is this lease still on the server? HEXISTS P{R} <field> [EXISTS P{R}:s:O] (plain reads).
// With `track` (CLIENT CACHING YES first), the holder set is tracked too: where the server may
// evict lock keys, an eviction of it reaches the holder as an invalidation push.
[[nodiscard]] loop::Request lease_check(Kind kind, const Keys& k, std::string_view owner,
                                        bool track = false);
[[nodiscard]] RenewCheck parse_lease_check(Kind kind, const loop::Replies& r, bool track = false);

// --- inspect: MULTI HGETALL PTTL ZSCORE EXEC, then PTTL of each shared companion ----------------
[[nodiscard]] loop::Request inspect(const Keys& k);
struct InspectReply {
  bool ok = false;
  std::int64_t pttl = -2;        // of the holder set
  std::uint64_t last_token = 0;  // 0 = never granted
  std::vector<Holder> holders;
};
[[nodiscard]] InspectReply parse_inspect(resp::Frame exec);
[[nodiscard]] loop::Request companion_ttls(const Keys& k, const std::vector<std::string>& owners);

// Split "x:owner"/"s:owner"; false for anything else.
[[nodiscard]] bool split_field(std::string_view f, Kind& kind, std::string_view& owner) noexcept;
// Split a doorbell key "P{R}:w:<owner>" into "P{R}" and the owner; false for any other key.
[[nodiscard]] bool split_doorbell(std::string_view key, std::string_view& holders,
                                  std::string_view& owner) noexcept;

// An "invalidate" push: appends the keys to `keys`; sets `all` for a flush (null key list).
// Returns false if the push is not an invalidation.
[[nodiscard]] bool parse_invalidate(resp::Frame push, std::vector<std::string>& keys, bool& all);

}  // namespace protocol
}  // namespace lockwire::lock
