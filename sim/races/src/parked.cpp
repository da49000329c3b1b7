// Scenarios of the parked hand-off (parked.hpp). Resource r throughout: its holder set is
// lockwire:{r}, the parked waiter's armed key lockwire:{r}:armed (ZADD by the park, PEXPIRE'd
// for the pop's timeout + 1 s) and the wake token lockwire:{r}:wake (COPY of the armed key by
// every exclusive release or withdrawal, popped by the parked BZPOPMIN). cN below is client
// index N, whose attempts the reports label c(N+1).k (c1 parks: its first attempt is c2.1).
#include "parked.hpp"

#include <memory>
#include <string>
#include <vector>

namespace lockwire::races::parked {

namespace {

constexpr const char* kArmed = "lockwire:{r}:armed";
constexpr const char* kWake = "lockwire:{r}:wake";

// Client c's main connection: its first (the client makes a parking connection once its connect
// probe is answered, and these scenarios never drop a main connection before they look), so not
// Run::connection_of, its latest.
std::uint64_t main_of(Run& r, int c) {
  const auto v = r.world().net().connections_of(r.node(c));
  return v.empty() ? 0 : v.front();
}

// Client c's parking connections: all its connections but its main one (the scenarios have no
// sentinels or cluster, so every one of them goes to the primary).
std::vector<std::uint64_t> parking_of(Run& r, int c) {
  std::vector<std::uint64_t> out;
  const std::uint64_t main = main_of(r, c);
  for (std::uint64_t id : r.world().net().connections_of(r.node(c)))
    if (id != main) out.push_back(id);
  return out;
}

bool waiting(Run& r, const std::string& label) {
  const Run::Span s = r.acquire_span(label);
  return s.start >= Nanos{0} && s.end < Nanos{0};
}

// The waiter is parked: its acquire is open and a park armed the resource.
bool parked(Run& r, const std::string& label) {
  return waiting(r, label) && r.redis().model().exists(kArmed);
}

}  // namespace

// A stale wake token. c0 holds r from 5 ms (600 ms, never released: it expires at ~605 ms).
// c1 parks at 10 ms and its wait ends at 110 ms: the unblocked block loses, and its withdrawal's
// COPY leaves a token nobody pops. c2 joins the wait at 200 ms: its wait block deletes that token
// (r is held), so it parks once, to be woken at c0's expiry — by its push, since an expiry
// brings no token. (Before wait blocks deleted it, c2's pop took the token at once, its block
// lost, and it parked again.) park-token-only (no unblock on a push) sleeps until its pop's
// timeout, ~1.2 s, while r is free.
void stale_wake_token(Run& r) {
  r.job(0, 5ms, Job{.ttl = 600ms, .writes = {10ms}});
  r.job(1, 10ms, Job{.ttl = 2s, .wait = 100ms, .writes = {0ms}, .release_after = 10ms});
  const std::string c2 =
      r.job(2, 200ms, Job{.ttl = 2s, .wait = 2s, .writes = {0ms}, .release_after = 50ms});
  r.at(200ms, [&r] {
    if (r.redis().model().exists(kWake)) r.mark("stale-wake-token-at-park");
  });
  r.run_until(3s);
  r.finish();
  if (r.granted_at(c2) < Nanos{0}) r.violate(Check::liveness, c2 + " was never granted r");
}

// A waiter cancelled while parked. c0 holds r from 5 ms and releases it at ~300 ms; c1 parks at
// 10 ms and cancels at 100 ms: its unblocked block leaves a losing claim (x:c1.1 behind c0's
// field), which the cancel must withdraw before it is answered. park-drop-late-reply drops the
// block's reply once the wait ended: the claim stays, and becomes the holder set's only field at
// c0's release — c1.1 holds r on the server though it was answered cancelled (no-orphan), and
// c2, waiting from 150 ms, is kept out until its TTL (liveness).
void wait_cancelled(Run& r) {
  r.job(0, 5ms, Job{.ttl = 5s, .writes = {10ms}, .release_after = 295ms});
  const std::string c1 =
      r.job(1, 10ms, Job{.ttl = 3s, .wait = 3s, .writes = {0ms}, .release_after = 10ms});
  r.job(2, 150ms, Job{.ttl = 1s, .wait = 3s, .writes = {0ms}, .release_after = 50ms});
  r.at(100ms, [&r, c1] {
    if (parked(r, c1)) r.mark("cancelled-while-parked");
    r.cancel(1, "r", c1);
  });
  r.run_until(5s);
  r.finish();
}

// A waiter timed out while parked, with the release landing at its deadline. c0 holds r from
// 5 ms and releases it at 210 ms, the instant c1's wait (parked from 10 ms) ends: by the
// seed's order of same-instant events the release's token runs c1's block first (a grant after
// the deadline) or the unblock does (a losing claim, then the release leaves c1's claim alone in
// the holder set). Either way c1 must withdraw before it answers timed_out, and c2 (waiting from
// 100 ms) is granted. park-drop-late-reply leaves the grant or the claim: no-orphan, liveness.
void wait_deadline(Run& r) {
  r.job(0, 5ms, Job{.ttl = 5s, .writes = {10ms}});
  const std::string c1 =
      r.job(1, 10ms, Job{.ttl = 3s, .wait = 200ms, .writes = {0ms}, .release_after = 10ms});
  const std::string c2 =
      r.job(2, 100ms, Job{.ttl = 1s, .wait = 3s, .writes = {0ms}, .release_after = 50ms});
  r.at(210ms, [&r, c1] {
    if (parked(r, c1)) r.mark("release-at-parked-deadline");
    r.release_latest(0);
  });
  r.run_until(5s);
  r.finish();
  if (r.granted_at(c2) < Nanos{0}) r.violate(Check::liveness, c2 + " was never granted r");
}

// A release lost in flight. c0 holds r from 5 ms (500 ms TTL) and releases it at 200 ms; the
// moment its HDEL + COPY are on the wire its connection is reset (the bytes are lost) and its
// process stops for good (it would send the release again), so no wake token ever comes. c1,
// parked from 10 ms (its pop's timeout 2 s), must be woken by the push of c0's expiry at
// ~505 ms: the push's grace, then CLIENT UNBLOCK.
// park-token-only waits for a token that never comes, until its pop's timeout (liveness).
void release_lost(Run& r) {
  r.job(0, 5ms, Job{.ttl = 500ms, .writes = {10ms}});
  const std::string c1 =
      r.job(1, 10ms, Job{.ttl = 4s, .wait = 3s, .writes = {0ms}, .release_after = 50ms});
  auto conn = std::make_shared<std::uint64_t>(0);
  auto sent = std::make_shared<std::uint64_t>(0);
  r.at(200ms, [&r, conn, sent] {
    *conn = main_of(r, 0);
    *sent = r.world().net().bytes_sent(*conn, true);
    r.release_latest(0);
  });
  r.when(
      200ms, 210ms, 1us,
      [&r, conn, sent] { return r.world().net().bytes_sent(*conn, true) > *sent; },
      [&r, conn, c1] {
        if (parked(r, c1)) r.mark("release-lost-while-parked");
        r.world().net().reset(*conn);
        r.node(0).pause();  // for good: it never sends the release again
        r.exempt_client(0);
      });
  r.run_until(4s);
  r.finish();
  if (r.granted_at(c1) < Nanos{0}) r.violate(Check::liveness, c1 + " was never granted r");
}

// A parking connection dropped after its block ran. c0 holds r from 5 ms and releases it at
// ~200 ms; its token runs c1's parked block (a grant on the server), and the parking connection
// is reset before the reply gets back. The block may have granted: c1 must withdraw it (after a
// CLIENT KILL of the parking client) and try again. park-drop-unapplied counts the dropped block
// as never applied: its attempt on the main connection finds its own field (already_held), the
// caller is told so, and c1.1's grant stays on the server until its TTL (no-orphan).
void connection_dropped(Run& r) {
  r.job(0, 5ms, Job{.ttl = 5s, .writes = {10ms}, .release_after = 195ms});
  const std::string c1 =
      r.job(1, 10ms, Job{.ttl = 3s, .wait = 3s, .writes = {0ms}, .release_after = 50ms});
  r.when(
      190ms, 260ms, 2us, [&r, c1] { return r.server_holds_now(c1); },
      [&r, c1] {
        const auto p = parking_of(r, 1);
        if (waiting(r, c1) && !p.empty()) r.mark("parking-connection-dropped-after-grant");
        for (std::uint64_t id : p) r.world().net().reset(id);
      });
  r.run_until(4s);
  r.finish();
  if (r.granted_at(c1) < Nanos{0}) r.violate(Check::liveness, c1 + " was never granted r");
}

// A half-open parking connection: at 100 ms the server's end of c1's parking connection stops
// carrying anything either way (the server still holds its client, blocked; nobody is told).
// c0's release at ~200 ms pops its token into that client: c1.1's block grants on the server and
// its reply vanishes. The release's push reaches c1 on its main connection: it unblocks, and
// once the unblock is answered the parked reply is due; a parking connection that does not
// bring it within 100 ms is closed, CLIENT KILLed, and what its block may have left withdrawn;
// then c1 tries again and is granted. park-drop-unapplied counts that block as never applied
// (already_held; the grant stays: no-orphan).
void connection_half_open(Run& r) {
  r.job(0, 5ms, Job{.ttl = 5s, .writes = {10ms}, .release_after = 195ms});
  const std::string c1 =
      r.job(1, 10ms, Job{.ttl = 3s, .wait = 3s, .writes = {0ms}, .release_after = 50ms});
  r.at(100ms, [&r] {
    for (std::uint64_t id : parking_of(r, 1)) r.world().net().half_open(id);
  });
  r.when(
      190ms, 260ms, 2us, [&r, c1] { return r.server_holds_now(c1); },
      [&r, c1] {
        if (waiting(r, c1)) r.mark("granted-into-half-open-parking-connection");
      });
  r.run_until(4s);
  r.finish();
  if (r.granted_at(c1) < Nanos{0} || r.granted_at(c1) > 1s) {
    r.violate(Check::liveness, c1 + " was not granted r within 1 s");
  }
}

// A parking connection whose path stalls (its flow alone: Network::clog_connection) from 8 ms
// to 1008 ms. c1 parks at 10 ms on it (its pop and block stay on the wire) and its wait ends at
// 310 ms: the unblock finds no blocked client, the parked reply does not come, so the parking
// connection is closed and CLIENT KILLed on the server before c1's withdrawal. Meanwhile c2 is
// granted at c0's release (~500 ms) through its own park and releases: its COPY leaves a token
// nobody pops. At 1008 ms c1's stalled pop and block arrive: killed, the server drops them.
// park-no-kill leaves that client alive: its pop takes the token and its block grants c1.1,
// answered timed_out 600 ms before, a lease nobody holds until its TTL (no-orphan).
void connection_stalled(Run& r) {
  auto conn = std::make_shared<std::uint64_t>(0);
  r.at(8ms, [&r, conn] {
    const auto p = parking_of(r, 1);
    if (p.empty()) return;
    *conn = p.front();
    r.world().net().clog_connection(*conn, 1s);
  });
  r.job(0, 5ms, Job{.ttl = 5s, .writes = {10ms}, .release_after = 495ms});
  const std::string c1 =
      r.job(1, 10ms, Job{.ttl = 3s, .wait = 300ms, .writes = {0ms}, .release_after = 10ms});
  r.job(2, 350ms, Job{.ttl = 1s, .wait = 2s, .writes = {0ms}, .release_after = 50ms});
  r.run_until(5s);
  r.finish();
  const Nanos answered = r.acquire_span(c1).end;
  if (*conn != 0 && answered >= Nanos{0} &&
      r.world().net().last_data_arrival(*conn, true) > answered) {
    r.mark("parked-bytes-after-give-up");
  }
}

// A parked grant's reply held by a pause. c1 parks from 10 ms (300 ms TTL: its pop's timeout is
// 150 ms, so it re-parks every 150 ms); c0 releases at ~205 ms and its token runs c1's block
// (the server's lease ends at ~505 ms); c1's process is paused as the release goes out and
// resumed at 600 ms, with the grant's reply read then. Counted from when its park was sent, the
// lease is over: never counted on. c2 asks at 550 ms, is granted at once and writes at 550, 650
// and 750 ms. park-lease-from-reply counts c1's lease from 600 to 900 ms: two holders, and c2's
// writes accepted while c1 believes it holds r (mutual-exclusion).
void grant_reply_held_by_pause(Run& r) {
  const std::string c0 = r.job(0, 5ms, Job{.ttl = 2s, .writes = {10ms}, .release_after = 200ms});
  const std::string c1 = r.job(
      1, 10ms, Job{.ttl = 300ms, .wait = 2s, .writes = {0ms, 100ms}, .release_after = 200ms});
  r.when(
      150ms, 300ms, 2us, [&r, c0] { return r.release_span(c0).start >= Nanos{0}; },
      [&r] { r.node(1).pause(); });
  r.at(600ms, [&r] { r.node(1).resume(); });
  r.job(2, 550ms, Job{.ttl = 1s, .writes = {0ms, 100ms, 200ms}, .release_after = 250ms});
  r.run_until(2s);
  r.finish();
  const auto s1 = r.server_spans(c1);
  if (!s1.empty() && s1[0].start < 210ms && r.granted_at(c1) >= 600ms) {
    r.mark("parked-grant-reply-held-by-pause");
  }
}

// A worker loop. c0 holds r from 5 ms and releases it at ~105 ms; c1 parks at 10 ms, is granted
// by that release (its COPY made the token) and holds r for 50 ms. c0 locks again from its
// release's answer (Job::then, its attempt c1.2): told that the lock is taken, it sends its wait
// block instead of an attempt, parks in its turn and is granted by c1's release at ~155 ms.
// park-taken-unread waits for a push without the block: in no queue and tracking nothing, it is
// never woken, and its 1 s wait runs out while r is free.
void relock_at_once(Run& r) {
  const std::string c0 = r.job(
      0, 5ms,
      Job{.ttl = 2s,
          .writes = {10ms},
          .release_after = 100ms,
          .then = {Job{.ttl = 2s, .wait = 1s, .writes = {0ms}, .release_after = 20ms}}});
  const std::string c1 =
      r.job(1, 10ms, Job{.ttl = 2s, .wait = 2s, .writes = {0ms}, .release_after = 50ms});
  r.run_until(2s);
  r.finish();
  const std::string again = "c1.2";  // c0's second attempt: the re-lock
  const Run::Span a = r.acquire_span(again);
  const Nanos g1 = r.granted_at(c1);
  if (a.start >= Nanos{0} && g1 >= Nanos{0} && a.start >= g1 &&
      a.start < r.release_span(c1).start) {
    r.mark("relock-after-waking-a-parked-waiter");
  }
  if (r.granted_at(again) < Nanos{0}) r.violate(Check::liveness, again + " was never granted r");
}

void configure(RunConfig& c) { c.strategy_options.parked_handoff = true; }

}  // namespace lockwire::races::parked
