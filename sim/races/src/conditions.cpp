// Scenarios on servers an operator changed (issue #13): a CLIENT PAUSE holding an acquire past
// its wait, an ACL user denied ZRANGE (the wait block is refused) or CLIENT TRACKING (no push
// wake-ups), and maxmemory with an evicting policy. Each replays one bug lockwire had on real
// servers; the matching lock::testing::Regressions flag brings it back as the broken strategy.
#include "conditions.hpp"

#include <memory>

#include "lockwire/lock/error.hpp"

namespace lockwire::races::conditions {

namespace {

// Does the server's holder set of `resource` have field `field` right now (ground truth)?
bool has_field(Run& r, std::string_view resource, std::string_view field) {
  std::string key = "lockwire:{";
  key.append(resource).append("}");
  const auto p = r.redis().model().peek(key);
  for (std::size_t i = 0; i + 1 < p.items.size(); i += 2)
    if (p.items[i] == field) return true;
  return false;
}

bool in_window(Nanos t, Nanos a, Nanos b) {
  return t >= a && t <= b;
}

}  // namespace

// A holder releases while a remote waiter (20 ms away) waits; its next attempt — the acquire
// block the release's push set off — meets CLIENT PAUSE WRITE, which lasts past the waiter's
// deadline: the server holds the block (HSETNX is a write) until 5 ms after the deadline, then
// grants it. The waiter's process exits (closes its client) as soon as its wait is answered, as
// the lockwire CLI does; its FIN reaches the server 20 ms later, so a grant made before is left
// behind unless the client itself released it before answering. A third client wants the lock
// afterwards.
void pause_during_acquire_deadline(Run& r) {
  constexpr Nanos kStart = 10ms, kWait = 200ms;
  const Nanos deadline = kStart + kWait;
  r.at(1ms, [&r] { r.world().net().link(r.node(1), r.server()).latency = 20ms; });
  const std::string a = r.job(0, 5ms, Job{.ttl = 5s, .writes = {10ms}, .release_after = 95ms});
  const std::string b =
      r.job(1, kStart, Job{.ttl = 5s, .wait = kWait, .writes = {0ms}, .release_after = 10ms},
            [&r](const AcquireResult&) { r.strategy(1).close(); });  // exits on the answer
  r.job(2, 400ms, Job{.ttl = 1s, .wait = 2s, .writes = {0ms}, .release_after = 10ms});
  // The holder's release is applied: pause writes past the waiter's deadline (the push reaches
  // the waiter 20 ms later, its attempt 20 ms after that, held by the pause).
  auto paused = std::make_shared<bool>(false);
  r.when(
      100ms, 120ms, 10us, [&r, a] { return !r.server_holds_now(a); },
      [&r, paused, deadline] {
        r.redis().pause_clients(deadline - r.world().now() + 5ms, sim::PauseMode::write);
        *paused = true;
      });
  // Redis notices the end at its next event-loop turn (at most a cron later); the operator's
  // CLIENT UNPAUSE at the end makes it exact.
  r.at(deadline + 5ms, [&r] { r.redis().unpause_clients(); });
  r.run_until(3s);
  r.finish();
  // The window: the paused acquire was granted after the waiter's deadline (answered at it, or
  // only once that grant was released).
  for (const auto& s : r.server_spans(b))
    if (*paused && r.acquire_failed(b) && s.start >= deadline)
      r.mark("paused-acquire-granted-after-deadline");
}

// Users for wait-block-refused: "nozrange" may do everything on lockwire keys but ZRANGE
// (only the wait block uses it; the acquire block's token needs ZADD).
void configure_wait_block_refused(RunConfig& c) {
  c.server.model.users = {{"nozrange", "on >pw ~lockwire:* resetchannels +@all -zrange"}};
  c.connection = [](int client, loop::ConnectionOptions& o) {
    if (client != 1) return;
    o.username = "nozrange";
    o.password = "pw";
  };
}

// Client 1, logged in as an ACL user denied ZRANGE, waits behind a holder: its acquire block
// claims (HSETNX x:O, contended), then its wait block — HDEL of the claim, ZADD into the wait
// queue, ZRANGE of its head, ... in one MULTI — is refused: ZRANGE's NOPERM at queue time makes
// EXEC answer
// EXECABORT, which discards the HDEL too. The claim stays in the holder set; when the holder
// releases, it is the first field, i.e. a grant nobody holds, until the key's TTL (2 s) ends.
// Client 2 waits for the lock meanwhile.
void wait_block_refused(Run& r) {
  r.job(0, 5ms, Job{.ttl = 2s, .writes = {10ms}, .release_after = 500ms});
  auto refused = std::make_shared<bool>(false);
  const std::string b = r.job(
      1, 20ms, Job{.ttl = 5s, .wait = 2s, .writes = {0ms}, .release_after = 10ms},
      [refused](const AcquireResult& res) { *refused = res.ec == lock::Errc::server_refused; });
  r.job(2, 30ms, Job{.ttl = 1s, .wait = 3s, .writes = {0ms}, .release_after = 10ms});
  // Ground truth: the waiter's claim is on the server while its attempt is unanswered.
  auto claimed = std::make_shared<bool>(false);
  r.when(
      20ms, 25ms, 10us,
      [&r, b] { return r.acquire_span(b).end < Nanos{0} && has_field(r, "r", "x:" + b); },
      [claimed] { *claimed = true; });
  r.run_until(4s);
  r.finish();
  if (*claimed && *refused) r.mark("claim-on-server-when-wait-block-refused");
}

// The four waiters of tracking-refused log in as "notrack", denied CLIENT TRACKING.
void configure_tracking_refused(RunConfig& c) {
  c.server.model.users = {{"notrack", "on >pw ~lockwire:* resetchannels +@all -client|tracking"}};
  c.connection = [](int client, loop::ConnectionOptions& o) {
    if (client == 0) return;
    o.username = "notrack";
    o.password = "pw";
  };
}

// Requests the four waiters of tracking-refused may send in the 800 ms window (docs/races.md
// derives it): lockwire polls with a capped exponential backoff jittered to [d/2, d] (10 ms
// doubling to 250 ms), so at most 8 polls of a waiter fall into any 800 ms once its first polls
// are behind it (the window opens 90 ms into the wait), each at most 2 requests (an attempt and
// a wait block).
constexpr std::uint64_t kPollBound = 4 * 8 * 2;

// Four processes logged in as a user denied CLIENT TRACKING wait while a fifth holds the lock
// for a second: no push wake-ups, so waiting means polling — within a bound, never a tight loop.
// Then the release must still wake one within the poll interval (liveness: 300 ms).
void tracking_refused(Run& r) {
  r.at(1ms, [&r] {
    for (int c = 1; c < 5; ++c) {
      auto& l = r.world().net().link(r.node(c), r.server());
      l.latency = 500us;
      l.jitter = 500us;
    }
  });
  r.job(0, 5ms, Job{.ttl = 2s, .writes = {10ms}, .release_after = 1s});
  for (int c = 1; c < 5; ++c) {
    r.job(c, 10ms, Job{.ttl = 200ms, .wait = 3s, .writes = {0ms}, .release_after = 10ms});
  }
  auto before = std::make_shared<std::vector<std::uint64_t>>();
  r.at(100ms, [&r, before] {
    for (int c = 1; c < 5; ++c) before->push_back(r.strategy(c).requests_sent());
  });
  r.at(900ms, [&r, before] {
    std::uint64_t n = 0;
    int polling = 0;
    for (int c = 1; c < 5; ++c) {
      const std::uint64_t k = r.strategy(c).requests_sent() - (*before)[c - 1];
      n += k;
      // Polled (sent requests while the lock stayed held) and was woken by no push meanwhile.
      bool pushed = false;
      for (Nanos t : r.pushes(c, "invalidate"))
        if (t >= 100ms && t <= 900ms) pushed = true;
      if (k > 0 && !pushed) ++polling;
    }
    if (polling == 4) r.mark("waiters-polled-while-held");
    if (n > kPollBound) {
      r.violate(Check::liveness, "busy waiting: the four untracked waiters sent " +
                                     std::to_string(n) + " requests in 800 ms (bound " +
                                     std::to_string(kPollBound) +
                                     ") while the holder kept the lock");
    }
  });
  r.run_until(4s);
  r.finish();
}

// lock-keys-evicted: maxmemory 8 KB above the model's start-up use, allkeys-lru.
void configure_lock_keys_evicted(RunConfig& c) {
  c.server.model.maxmemory = 880000 + 8000;
  c.server.model.maxmemory_policy = sim::MaxmemoryPolicy::allkeys_lru;
}

// A server with maxmemory and allkeys-lru: client 0 holds r (2 s) and writes; from 50 ms an
// operator's application writes 100 filler keys of 1 KB, one a millisecond, so the server evicts
// its least recently used keys — the holder set and the token counter first. At 200 ms client 1
// acquires r. A client that grants here finds the holder set gone (a second holder) and the
// counter restarted (a repeated token).
void lock_keys_evicted(Run& r) {
  const std::string a =
      r.job(0, 5ms, Job{.ttl = 2s, .writes = {10ms, 400ms}, .release_after = 800ms});
  for (int i = 0; i < 100; ++i) {
    r.at(50ms + Nanos(i * 1'000'000), [&r, i] {
      r.admin({"SET", "fill:" + std::to_string(i), std::string(1000, 'x')});
    });
  }
  const std::string b =
      r.job(1, 200ms, Job{.ttl = 1s, .writes = {0ms, 100ms}, .release_after = 300ms});
  auto evicted = std::make_shared<std::uint64_t>(0);
  r.at(199ms, [&r, evicted] { *evicted = r.redis().model().evicted_keys(); });
  r.run_until(2500ms);
  r.finish();
  // The window: the server evicted keys while client 0 wanted (or held) the lock, before client
  // 1 asked; a client that was granted lost its holder set to it.
  const auto sa = r.server_spans(a);
  const bool lost = !sa.empty() && sa[0].end >= Nanos{0} && sa[0].end < 200ms && !sa[0].expired;
  if (*evicted > 0 && (r.granted_at(a) < Nanos{0} || lost)) r.mark("evictions-while-lock-wanted");
}

// Found by the explorer (seed 1000089, docs/races.md). Two waiters queue behind a holder; the
// server becomes full (maxmemory below the used memory, noeviction) and their waits end: each
// leaves the wait queue — MULTI ZREM ZRANGE EXEC, refused with EXECABORT, since a full server
// refuses every command queued in MULTI. Memory is freed; a third waiter joins the queue behind
// the two entries left there, so it is neither the elected waiter nor the backup: when the
// holder releases, only its doorbell's expiry (its whole wait) would wake it.
void wait_queue_leave_refused(Run& r) {
  r.job(0, 5ms, Job{.ttl = 10s, .writes = {10ms}, .release_after = 600ms});
  r.job(1, 10ms, Job{.ttl = 1s, .wait = 200ms, .writes = {0ms}, .release_after = 10ms});
  r.job(2, 20ms, Job{.ttl = 1s, .wait = 200ms, .writes = {0ms}, .release_after = 10ms});
  r.at(205ms, [&r] {
    r.redis().set_maxmemory(r.redis().model().used_memory() - 1, sim::MaxmemoryPolicy::noeviction);
  });
  r.at(300ms, [&r] { r.redis().set_maxmemory(0); });
  const std::string c =
      r.job(3, 400ms, Job{.ttl = 1s, .wait = 2s, .writes = {0ms}, .release_after = 10ms});
  r.run_until(3s);
  r.finish();
  // The window: both earlier waits ended while the server was full, and the third waiter was
  // waiting when the lock was released.
  int ended_full = 0;
  for (const char* w : {"c2.1", "c3.1"}) {
    const auto sp = r.acquire_span(w);
    if (r.acquire_failed(w) && in_window(sp.end, 205ms, 300ms)) ++ended_full;
  }
  if (ended_full == 2 && r.acquire_span(c).start < 600ms) r.mark("queue-left-on-a-full-server");
}

}  // namespace lockwire::races::conditions
