// The classic lock races, one script each (they are listed, with their broken strategies, in
// catalogue.cpp). Links are deterministic (50 µs one way, no jitter, no splits) unless a
// scenario changes them, so the timings below are exact; each script checks at the end that its
// race window was really hit (the coverage mark).
#include "classic.hpp"

#include <algorithm>
#include <functional>
#include <memory>

namespace lockwire::races::classic {

namespace {

bool in(Nanos t, Nanos a, Nanos b) {
  return t >= a && t <= b;
}

bool span_overlaps_grant(const Run& r, std::string_view waiter, Run::Span during) {
  for (const auto& s : r.server_spans(waiter))
    if (during.start >= Nanos{0} && s.start >= during.start &&
        (during.end < Nanos{0} || s.start <= during.end)) {
      return true;
    }
  return false;
}

}  // namespace

// A holder on a slow link (30 ms one way) releases just before its server-side expiry: the
// release is in flight when the lease expires and a waiter is granted.
void delete_wrong_lock(Run& r) {
  r.at(1ms, [&r] { r.world().net().link(r.node(0), r.server()).latency = 30ms; });
  std::string a;
  a = r.job(0, 2ms, Job{.ttl = 300ms}, [&r](const AcquireResult& res) {
    if (res.ec) return;
    const Nanos g = r.world().now();
    r.at(g + 220ms, [&r] { r.release_latest(0); });
  });
  const std::string b = r.job(
      1, 40ms, Job{.ttl = 300ms, .wait = 2s, .writes = {50ms, 100ms}, .release_after = 150ms});
  r.job(2, 50ms, Job{.ttl = 300ms, .wait = 2s, .writes = {0ms}, .release_after = 50ms});
  r.run_until(1500ms);
  r.finish();
  if (span_overlaps_grant(r, b, r.release_span(a))) r.mark("release-in-flight-across-regrant");
}

// The holder asks to renew just before its lease ends; its link is clogged so the renewal
// reaches the server after the lease expired and another client was granted.
void extend_wrong_lock(Run& r) {
  r.at(1ms, [&r] { r.world().net().link(r.node(0), r.server()).latency = 30ms; });
  const std::string a = r.job(0, 2ms, Job{.ttl = 300ms}, [&r](const AcquireResult& res) {
    if (res.ec) return;
    const Nanos g = r.world().now();
    r.at(g + 230ms, [&r] {
      r.world().net().clog(r.node(0), r.server(), 60ms);
      r.renew_latest(0);
    });
    r.at(g + 232ms, [&r] { r.mark("renew-requested"); });
  });
  const std::string b =
      r.job(1, 40ms, Job{.ttl = 300ms, .wait = 2s, .writes = {20ms}, .release_after = 150ms});
  r.run_until(1500ms);
  r.finish();
  const Nanos gb = r.server_spans(b).empty() ? Nanos{-1} : r.server_spans(b)[0].start;
  const Nanos ga = r.granted_at(a);
  // The renewal was sent at grant+230ms and cannot arrive before grant+290ms; b was granted on
  // the server in between.
  if (r.marked("renew-requested") && ga >= Nanos{0} && in(gb, ga + 230ms, ga + 290ms)) {
    r.mark("renew-in-flight-across-regrant");
  }
}

// The waiter's deadline passes while its acquire is in flight (its link is clogged), and the
// server grants it after the deadline.
void wait_deadline_during_command(Run& r) {
  r.job(0, 5ms, Job{.ttl = 1s, .writes = {10ms}}, [&r](const AcquireResult& res) {
    if (res.ec) return;
    const Nanos g = r.world().now();
    r.at(g + 100ms, [&r] { r.release_latest(0); });
    // As soon as the woken waiter sends its next attempt, the server stalls past its deadline.
    auto sent = std::make_shared<std::uint64_t>(0);
    r.at(g + 100ms, [&r, sent] { *sent = r.world().net().bytes_sent(r.connection_of(1), true); });
    r.when(
        g + 100ms + 10us, g + 120ms, 10us,
        [&r, sent] { return r.world().net().bytes_sent(r.connection_of(1), true) > *sent; },
        [&r] { r.redis().stall(40ms); });
  });
  const std::string b =
      r.job(1, 10ms, Job{.ttl = 5s, .wait = 120ms, .writes = {0ms}, .release_after = 10ms});
  r.job(2, 300ms, Job{.ttl = 1s, .wait = 3s, .writes = {0ms}, .release_after = 10ms});
  r.run_until(4s);
  r.finish();
  // The window: the server grants after the wait's deadline (the caller has given up). A sound
  // client answers only once that late grant is released, so compare with the deadline, not
  // with the answer.
  const auto rep = r.acquire_span(b);
  for (const auto& s : r.server_spans(b))
    if (r.acquire_failed(b) && s.start >= rep.start + 120ms) r.mark("granted-after-deadline");
}

// The acquire is applied, then the connection is cut before its reply comes back.
void acquire_reply_lost(Run& r) {
  const std::string a =
      r.job(0, 5ms, Job{.ttl = 5s, .wait = 1s, .writes = {10ms}, .release_after = 100ms});
  // The moment the server has applied it (the reply is on its way), the connection is cut.
  r.when(
      5ms, 6ms, 1us, [&r, a] { return r.server_holds_now(a); },
      [&r] { r.world().net().reset(r.connection_of(0)); });
  r.at(5ms + 200us, [&r, a] {
    if (r.server_holds_now(a) && r.acquire_span(a).end < Nanos{0}) r.mark("applied-reply-lost");
  });
  r.job(1, 20ms, Job{.ttl = 1s, .wait = 8s, .writes = {0ms}, .release_after = 10ms});
  r.run_until(9s);
  r.finish();
}

// The release request is lost with the connection (never applied).
void release_reply_lost(Run& r) {
  const std::string a = r.job(0, 5ms, Job{.ttl = 5s, .writes = {10ms}});
  // The release request is cut off while on its way to the server.
  auto sent = std::make_shared<std::uint64_t>(0);
  r.at(60ms, [&r, sent] {
    *sent = r.world().net().bytes_sent(r.connection_of(0), true);
    r.release_latest(0);
  });
  r.when(
      60ms + 1us, 61ms, 1us,
      [&r, sent] { return r.world().net().bytes_sent(r.connection_of(0), true) > *sent; },
      [&r, a] {
        const auto s = r.release_span(a);
        r.world().net().reset(r.connection_of(0));
        if (s.start >= Nanos{0} && s.end < Nanos{0}) r.mark("release-reply-lost");
      });
  r.job(1, 20ms, Job{.ttl = 1s, .wait = 1s, .writes = {0ms}, .release_after = 10ms});
  r.run_until(2s);
  r.finish();
}

// The holder checks its lease, is paused past its TTL before its write lands, and writes with
// its old token after another client was granted and wrote.
void pause_beyond_ttl(Run& r) {
  const std::string a =
      r.job(0, 5ms, Job{.ttl = 200ms, .writes = {10ms, 150ms}, .release_after = 300ms},
            [&r](const AcquireResult& res) {
              if (res.ec) return;
              const Nanos g = r.world().now();
              r.at(g + 150ms + 500us, [&r] { r.node(0).pause(); });
              r.at(g + 600ms, [&r] { r.node(0).resume(); });
            });
  const std::string b =
      r.job(1, 10ms, Job{.ttl = 200ms, .wait = 2s, .writes = {0ms, 20ms}, .release_after = 100ms});
  r.run_until(1500ms);
  r.finish();
  const Nanos gb = r.granted_at(b);
  for (Nanos t : r.accepted_writes(a))
    if (gb >= Nanos{0} && t > gb) r.mark("stale-write-after-regrant");
  for (Nanos t : r.rejected_writes(a))
    if (gb >= Nanos{0} && t > gb) r.mark("stale-write-after-regrant");
}

// Four holder/waiter pairs on four resources; each holder's release lands at a different offset
// around its waiter's first attempt, so one of them falls between the waiter's failed check and
// its subscription (for every strategy's round-trip pattern).
void notify_before_subscribe(Run& r) {
  const Nanos t2 = 200ms;
  const Nanos offsets[] = {-125us, -75us, -25us, 25us, 75us};
  std::vector<std::pair<std::string, std::string>> pairs;
  for (int i = 0; i < 5; ++i) {
    const std::string res = std::string("r").append(std::to_string(i));
    const int h = 2 * i, w = 2 * i + 1;
    const std::string a = r.job(h, 5ms, Job{.resource = res, .ttl = 10s});
    r.at(t2 + offsets[i], [&r, h] { r.release_latest(h); });
    const std::string b = r.job(
        w, t2, Job{.resource = res, .ttl = 1s, .wait = 1s, .writes = {0ms}, .release_after = 10ms});
    pairs.emplace_back(a, b);
  }
  r.run_until(2s);
  r.finish();
  for (const auto& [a, b] : pairs) {
    const auto sa = r.server_spans(a);
    const Nanos tb = r.acquire_span(b).start;
    // Released after the waiter's first attempt reached the server, within one more round trip.
    if (!sa.empty() && sa[0].end >= Nanos{0} && in(sa[0].end, tb + 51us, tb + 150us)) {
      r.mark("release-between-check-and-subscribe");
    }
  }
}

// Nobody releases: the waiter must wake when the holder's lease expires.
void expiry_wake(Run& r) {
  const std::string a = r.job(0, 5ms, Job{.ttl = 200ms, .writes = {10ms}});
  const std::string b =
      r.job(1, 10ms, Job{.ttl = 200ms, .wait = 2s, .writes = {0ms}, .release_after = 10ms});
  r.run_until(3s);
  r.finish();
  const auto sa = r.server_spans(a);
  const auto ab = r.acquire_span(b);
  if (!sa.empty() && sa[0].expired && sa[0].end > ab.start) r.mark("expired-while-waiting");
}

// Several waiters of one process on one resource (one interest), the holder never releases.
void many_waiters_one_subscription(Run& r) {
  r.job(0, 5ms, Job{.ttl = 200ms, .writes = {10ms}});
  std::vector<std::string> ws;
  for (int i = 0; i < 4; ++i) {
    ws.push_back(r.job(1, 10ms + Nanos(i * 1000),
                       Job{.ttl = 200ms, .wait = 3s, .writes = {0ms}, .release_after = 20ms}));
  }
  r.run_until(4s);
  r.finish();
  int waited = 0;
  for (const auto& w : ws)
    if (r.acquire_span(w).start >= Nanos{0}) ++waited;
  if (waited == 4) r.mark("four-waiters-one-process");
}

// Two processes wait while a third holds the lock for a second. Waiting must be quiet: no
// requests until the holder releases (woken by pushes, not by polling).
void waiters_stay_quiet(Run& r) {
  // Different, jittery distances to the server, as in any real deployment.
  r.at(1ms, [&r] {
    for (int c = 1; c < 5; ++c) {
      auto& l = r.world().net().link(r.node(c), r.server());
      l.latency = 2ms;
      l.jitter = 2ms;
    }
  });
  r.job(0, 5ms, Job{.ttl = 2s, .writes = {10ms}, .release_after = 1s});
  for (int c = 1; c < 5; ++c) {
    r.job(c, 10ms, Job{.ttl = 200ms, .wait = 3s, .writes = {0ms}, .release_after = 10ms});
  }
  auto before = std::make_shared<std::uint64_t>(0);
  auto waiting = [&r] {
    std::uint64_t n = 0;
    for (int c = 1; c < 5; ++c) n += r.strategy(c).requests_sent();
    return n;
  };
  r.at(100ms, [&r, before, waiting] {
    *before = waiting();
    r.mark("waiters-while-held");
  });
  r.at(900ms, [&r, before, waiting] {
    const std::uint64_t n = waiting() - *before;
    if (n > 8) {
      r.violate(Check::liveness, "busy waiting: the four waiters sent " + std::to_string(n) +
                                     " requests in 800 ms while the holder kept the lock");
    }
  });
  r.run_until(4s);
  r.finish();
}

// The waiter's connection drops and the holder releases while it reconnects: the release's
// wake-up is lost with the connection, so the waiter must re-check after reconnecting.
void reconnect_during_wait(Run& r) {
  const std::string a = r.job(0, 5ms, Job{.ttl = 2s, .writes = {10ms}});
  const std::string b =
      r.job(1, 10ms, Job{.ttl = 300ms, .wait = 3s, .writes = {0ms}, .release_after = 10ms});
  r.at(300ms, [&r] { r.world().net().reset(r.connection_of(1)); });
  r.at(301ms, [&r] { r.release_latest(0); });
  r.run_until(4s);
  r.finish();
  const auto sa = r.server_spans(a);
  if (!sa.empty() && in(sa[0].end, 300ms, 302ms) && r.acquire_span(b).start < 300ms) {
    r.mark("released-while-waiter-reconnects");
  }
}

// The waiter's link delivers every write in pieces with gaps (the invalidation push included).
void split_frame_push(Run& r) {
  r.at(1ms, [&r] {
    auto& l = r.world().net().link(r.node(1), r.server());
    l.split_per_million = 1000000;
    l.jitter = 3ms;
  });
  r.job(0, 5ms, Job{.ttl = 2s, .writes = {10ms}, .release_after = 200ms});
  const std::string b =
      r.job(1, 10ms, Job{.ttl = 300ms, .wait = 3s, .writes = {0ms}, .release_after = 10ms});
  r.run_until(4s);
  r.finish();
  const auto sb = r.server_spans(b);
  if (!sb.empty() && sb[0].start < 400ms) r.mark("woken-through-split-push");
}

// The holder is paused while its grant reply is in flight and resumed after the TTL: it must not
// count the lease from the reply's arrival.
void pause_with_replies_in_flight(Run& r) {
  const std::string a =
      r.job(0, 5ms, Job{.ttl = 200ms, .writes = {0ms, 50ms}, .release_after = 100ms});
  r.at(5ms + 20us, [&r] { r.node(0).pause(); });  // request on its way, reply not yet back
  r.at(400ms, [&r] { r.node(0).resume(); });
  r.job(1, 10ms, Job{.ttl = 200ms, .wait = 2s, .writes = {0ms, 80ms}, .release_after = 120ms});
  r.run_until(1500ms);
  r.finish();
  const auto sa = r.server_spans(a);
  if (!sa.empty() && sa[0].start < 6ms && r.granted_at(a) >= 400ms)
    r.mark("grant-reply-held-by-pause");
}

// An administrator force-releases a held lock while another client waits. The waiter is granted
// at once; the holder learns of it from the force-release notice, a round trip after the DEL
// (documented).
void force_release_while_waiting(Run& r) {
  const std::string a =
      r.job(0, 5ms,
            Job{.ttl = 600ms, .auto_renew = true, .writes = {10ms, 250ms}, .release_after = 500ms});
  const std::string b =
      r.job(1, 10ms, Job{.ttl = 300ms, .wait = 2s, .writes = {0ms, 100ms}, .release_after = 150ms});
  r.at(100ms, [&r] { r.force_release(2, "r"); });
  r.run_until(2500ms);
  r.finish();
  const auto sa = r.server_spans(a);
  const Nanos gb = r.granted_at(b);
  if (!sa.empty() && in(sa[0].end, 100ms, 101ms) && gb >= 100ms && gb < 150ms) {
    r.mark("force-released-while-waiting");
  }
}

// The holder's wall clock steps back 1 s while it holds; only the monotonic clock may decide.
void client_wall_clock_step(Run& r) {
  r.job(0, 5ms, Job{.ttl = 200ms, .writes = {10ms, 250ms}, .release_after = 400ms},
        [&r](const AcquireResult& res) {
          if (res.ec) return;
          const Nanos g = r.world().now();
          r.at(g + 100ms, [&r] {
            r.node(0).step_wall(-1s);
            r.mark("wall-step-while-held");
          });
        });
  r.job(1, 10ms, Job{.ttl = 200ms, .wait = 2s, .writes = {0ms, 20ms}, .release_after = 100ms});
  r.run_until(1500ms);
  r.finish();
}

// The server's clock jumps forward 1.5 s while a 2 s lease is held: the server expires it early.
// No client-side rule can see that; fencing must stop the stale holder's writes.
// Client 0 holds (from 5 ms); `delay` after its grant `fault` strikes and `mark` is set; client 1
// wants the lock from 10 ms. Runs 4 s.
void fault_while_held(Run& r, Job holder, Job waiter, Nanos delay, const char* mark,
                      std::function<void()> fault) {
  r.job(0, 5ms, std::move(holder),
        [&r, delay, mark, fault = std::move(fault)](const AcquireResult& res) {
          if (res.ec) return;
          r.at(r.world().now() + delay, [&r, mark, fault] {
            fault();
            r.mark(mark);
          });
        });
  r.job(1, 10ms, std::move(waiter));
  r.run_until(4s);
  r.finish();
}

void server_clock_jump_forward(Run& r) {
  fault_while_held(r, Job{.ttl = 2s, .writes = {10ms, 1000ms}, .release_after = 1500ms},
                   Job{.ttl = 2s, .wait = 3s, .writes = {0ms, 20ms}, .release_after = 900ms}, 300ms,
                   "server-clock-jump-while-held", [&r] { r.server().step_wall(1500ms); });
}

// Failover before the grant replicated: the promoted replica has no lock and an older token
// counter, so a second client is granted the same token. Documented: no lock on asynchronous
// replication is safe across failover.
void failover_before_replication(Run& r) {
  sim::SimRedis& replica = r.add_replica(200ms);
  fault_while_held(r, Job{.ttl = 2s, .writes = {10ms, 400ms}, .release_after = 1s},
                   Job{.ttl = 2s, .wait = 3s, .writes = {0ms, 100ms}, .release_after = 500ms}, 20ms,
                   "failover-before-replication", [&r, &replica] { r.fail_over_to(replica); });
}

// A restart without persistence loses the holder set and the fencing counter.
void restart_without_persistence(Run& r) {
  fault_while_held(r, Job{.ttl = 2s, .writes = {10ms, 500ms}, .release_after = 1s},
                   Job{.ttl = 2s, .wait = 3s, .writes = {0ms, 100ms}, .release_after = 300ms},
                   100ms, "restart-while-held",
                   [&r] { r.redis().restart(sim::Persistence::none); });
}

// Issue #31: the fence key expires 4/3 of fence_ttl (2 s here) after the last block that raised
// it. Client 0 connects (its floor: the server's clock at ~0 s) and is paused from 200 ms to 9 s;
// client 1 locks r at 5 s, so the fence key goes at ~7.7 s; client 0's lock is due at 8.5 s, so
// it runs as soon as it resumes. With its floor from before the pause its token would be below
// client 1's (stale-floor: equal, as both read the same floor at connect); lockwire's attempt
// finds the floor older than fence_ttl / 3 and reads TIME first.
void fence_expired_during_pause(Run& r) {
  r.at(200ms, [&r] { r.node(0).pause(); });
  r.at(9s, [&r] { r.node(0).resume(); });
  r.job(1, 5s, Job{.ttl = 1s, .writes = {0ms}, .release_after = 100ms});
  r.at(8500ms, [&r] {
    if (!r.redis().model().exists("lockwire:{r}:fence")) r.mark("lock-after-fence-expired");
  });
  r.job(0, 8500ms, Job{.ttl = 1s, .writes = {0ms}, .release_after = 100ms});
  r.run_until(11s);
  r.finish();
}

// Issue #31, the check on the grant's reply: client 0's acquire block leaves at 500 ms with a
// floor read at connect (young then), and its link to the server is clogged for 5 s, so the
// block runs at ~5.5 s. Meanwhile client 1 locks r at 1 s with a fresh floor and releases it;
// the fence key expires at ~3.7 s. The delayed block creates the key again at the old floor + 1,
// below client 1's token: its reply, read with the floor 5.5 s old (fence_ttl 2 s), must not be
// handed over. (Its TTL, 10 s, outlasts the delay: a shorter lease would be withdrawn anyway,
// as one that counts for nothing. Liveness is judged from the clog's end.)
void fence_expired_under_delayed_block(Run& r) {
  r.at(499ms, [&r] { r.world().net().clog(r.node(0), r.server(), 5s); });
  r.set_healed_at(5499ms);
  r.job(0, 500ms, Job{.ttl = 10s, .wait = 10s, .writes = {0ms}, .release_after = 100ms});
  r.job(1, 1s, Job{.ttl = 1s, .writes = {0ms}, .release_after = 100ms});
  r.at(5s, [&r] {
    if (!r.redis().model().exists("lockwire:{r}:fence")) r.mark("delayed-block-after-fence-expired");
  });
  r.run_until(9s);
  r.finish();
}

void configure_short_fence_ttl(RunConfig& c) { c.strategy_options.fence_ttl = 2s; }

// The same with AOF (appendfsync always): nothing acknowledged is lost; clients reconnect.
void restart_with_persistence(Run& r) {
  fault_while_held(r, Job{.ttl = 500ms, .writes = {10ms, 300ms}, .release_after = 400ms},
                   Job{.ttl = 500ms, .wait = 3s, .writes = {0ms, 100ms}, .release_after = 200ms},
                   100ms, "restart-while-held", [&r] { r.redis().restart(sim::Persistence::all); });
}

// One owner id ("reader") takes a shared lease from two processes at the same instant, and once
// more from the first process while it holds. Only one grant may exist per owner: a duplicate
// grant leaves a phantom reader after the first release (it still believes, the server does not).
void duplicate_shared_acquire(Run& r) {
  const std::string a = r.job(
      0, 5ms,
      Job{.ttl = 2s, .writes = {}, .release_after = 300ms, .shared = true, .owner = "reader"});
  const std::string b = r.job(
      1, 5ms,
      Job{.ttl = 2s, .writes = {}, .release_after = 800ms, .shared = true, .owner = "reader"});
  const std::string c = r.job(
      0, 60ms,
      Job{.ttl = 2s, .writes = {}, .release_after = 100ms, .shared = true, .owner = "reader"});
  // An ordinary second reader alongside.
  r.job(2, 5ms, Job{.ttl = 2s, .release_after = 500ms, .shared = true});
  r.run_until(3s);
  r.finish();
  // Both later acquires of the owner were answered while the owner's lease was held (ground
  // truth is per owner id, so a's spans are the owner's).
  int dup = 0;
  for (const auto& x : {b, c}) {
    const Nanos rep = r.acquire_span(x).end;
    for (const auto& sp : r.server_spans(a))
      if (rep >= Nanos{0} && sp.start <= rep && (sp.end < Nanos{0} || sp.end >= rep)) ++dup;
  }
  if (dup >= 2) r.mark("same-owner-acquired-while-held");
}

// One process holds r1 (2 s) and r2 (300 ms) on a 30 ms link and renews both at once, just
// before r2 expires: both renewals' WATCH reads reach the server while r2 is still held, their
// EXECs only after r2 expired and another client took it. Two optimistic transactions on one
// connection must be serialized: the first EXEC clears every WATCH of the connection.
void two_transactions_one_connection(Run& r) {
  r.at(1ms, [&r] { r.world().net().link(r.node(0), r.server()).latency = 30ms; });
  const std::string a = r.job(0, 2ms, Job{.resource = "r1", .ttl = 2s, .release_after = 600ms});
  auto b = std::make_shared<std::string>();
  *b = r.job(0, 2ms, Job{.resource = "r2", .ttl = 300ms}, [&r, a, b](const AcquireResult& res) {
    if (res.ec) return;
    // r1's renewal first, r2's right behind it: both WATCH reads arrive before r2 expires.
    r.at(r.world().now() + 200ms, [&r, a, b] {
      r.renew(a);
      r.renew(*b);
    });
  });
  const std::string c =
      r.job(1, 100ms,
            Job{.resource = "r2", .ttl = 1s, .wait = 2s, .writes = {10ms}, .release_after = 300ms});
  r.run_until(2s);
  r.finish();
  const auto ra = r.renew_span(a), rb = r.renew_span(*b);
  const Nanos gc = r.server_spans(c).empty() ? Nanos{-1} : r.server_spans(c)[0].start;
  // Both renewals were in progress at once, and r2 changed hands while they were.
  if (ra.start >= Nanos{0} && rb.start >= Nanos{0} && ra.start <= rb.end && rb.start <= ra.end &&
      gc >= std::max(ra.start, rb.start) && gc <= std::min(ra.end, rb.end)) {
    r.mark("regrant-during-two-renewals");
  }
}

// Whether client `c` received a wake-up push (pub/sub message or tracking invalidation) in
// (from, to].
bool wake_push_in(const Run& r, int c, Nanos from, Nanos to) {
  for (const char* k : {"message", "invalidate"})
    for (Nanos t : r.pushes(c, k))
      if (t > from && t <= to) return true;
  return false;
}

// Eight holder/waiter/grabber triples. Each waiter's first wait times out at 210 ms while its
// holder releases around that instant (offsets cover every strategy's round trips), so the
// release's wake-up reaches a waiter that has just ended its wait (and unsubscribed). The
// grabber takes the lock; the waiter's next wait starts at 215 ms and must be woken by the
// grabber's release at ~710 ms — the late wake-up must not stand in for a subscription.
void message_after_unsubscribe(Run& r) {
  const Nanos offsets[] = {-250us, -200us, -160us, -120us, -80us, -40us, 0us, 40us};
  std::vector<std::pair<std::string, int>> firsts;
  for (int i = 0; i < 8; ++i) {
    const std::string res = std::string("r").append(std::to_string(i));
    const int h = 3 * i, w = 3 * i + 1, g = 3 * i + 2;
    r.job(h, 5ms, Job{.resource = res, .ttl = 10s});
    r.at(210ms + offsets[i], [&r, h] { r.release_latest(h); });
    firsts.emplace_back(
        r.job(
            w, 10ms,
            Job{.resource = res, .ttl = 1s, .wait = 200ms, .writes = {0ms}, .release_after = 10ms}),
        w);
    r.job(w, 215ms,
          Job{.resource = res, .ttl = 1s, .wait = 3s, .writes = {0ms}, .release_after = 10ms});
    r.job(g, 20ms,
          Job{.resource = res, .ttl = 5s, .wait = 3s, .writes = {0ms}, .release_after = 500ms});
  }
  r.run_until(4s);
  r.finish();
  for (const auto& [a, w] : firsts) {
    const auto sp = r.acquire_span(a);
    if (r.acquire_failed(a) && wake_push_in(r, w, sp.end, 215ms)) {
      r.mark("wake-push-after-wait-ended");
    }
  }
}

// The waiter's first wait times out at 210 ms and its link clogs right after (20 ms): the
// UNSUBSCRIBE goes out but its ack — and any invalidation — arrives only after the next wait
// started (215 ms). The holder releases meanwhile and a grabber takes the lock until ~711 ms.
void unsubscribe_ack_lost(Run& r) {
  r.job(0, 5ms, Job{.ttl = 10s});
  r.at(211ms, [&r] { r.release_latest(0); });
  const std::string a =
      r.job(1, 10ms, Job{.ttl = 1s, .wait = 200ms, .writes = {0ms}, .release_after = 10ms});
  r.at(210ms + 10us, [&r] { r.world().net().clog(r.node(1), r.server(), 20ms); });
  const std::string b =
      r.job(1, 215ms, Job{.ttl = 1s, .wait = 3s, .writes = {0ms}, .release_after = 10ms});
  r.job(2, 20ms, Job{.ttl = 5s, .wait = 3s, .writes = {0ms}, .release_after = 500ms});
  r.run_until(4s);
  r.finish();
  const Nanos sb = r.acquire_span(b).start;
  bool late = false;
  for (const char* k : {"unsubscribe", "invalidate"})
    for (Nanos t : r.pushes(1, k))
      if (t > sb && t < sb + 50ms) late = true;
  if (r.acquire_failed(a) && late) r.mark("ack-or-wake-after-next-wait-started");
}

// Split-brain set-up: at 120 ms client 0's path to the server turns slow (400 ms one way). As
// soon as the health PING is out on that connection (unanswerable now), `act` runs, so whatever
// it writes follows the PING; 50.5 ms later the next health tick has abandoned the connection
// and the path is fast again before the reconnect (backoff >= 2.5 ms). Returns the abandoned
// connection's id (set at 120 ms).
std::shared_ptr<std::uint64_t> write_then_abandon(Run& r, std::function<void()> act) {
  auto old_conn = std::make_shared<std::uint64_t>(0);
  auto sent = std::make_shared<std::uint64_t>(0);
  r.at(120ms, [&r, old_conn, sent] {
    *old_conn = r.connection_of(0);
    *sent = r.world().net().bytes_sent(*old_conn, true);
    r.world().net().link(r.node(0), r.server()).latency = 400ms;
  });
  r.when(
      120ms + 10us, 300ms, 10us,
      [&r, old_conn, sent] { return r.world().net().bytes_sent(*old_conn, true) > *sent; },
      [&r, act = std::move(act)] {
        act();
        r.at(r.world().now() + 50ms + 500us,
             [&r] { r.world().net().link(r.node(0), r.server()).latency = 50us; });
      });
  return old_conn;
}

// Split brain: an old connection's late operation after a new connection took over the same
// owner id. Client c1 holds r as owner "svc" with a 50 ms health check. Its path to the server
// turns slow (400 ms one way): the health PING goes unanswered, c1 releases (HDEL written on the
// slow connection), the next health tick abandons that connection and the client reconnects over
// a fast path. TCP still delivers what was written before close, so the old release reaches the
// server ~800 ms later (behind the PING) — after c1 re-acquired r as "svc" on the new connection.
// lockwire kills the abandoned connection (CLIENT KILL ID+ADDR) before using the new one, so the
// late HDEL is discarded. Without that (`no-fence`) it removes the new grant: a waiter (c2) is
// granted while c1 still believes it holds; fencing rejects c1's next write.
void split_brain_reconnect(Run& r) {
  r.job(0, 5ms, Job{.ttl = 5s, .writes = {10ms}, .owner = "svc"});
  // The release (HDEL) is written on the connection about to be abandoned.
  const auto old_conn = write_then_abandon(r, [&r] { r.release_latest(0); });
  const std::string b = r.job(
      0, 260ms, Job{.ttl = 5s, .writes = {20ms, 900ms}, .release_after = 1200ms, .owner = "svc"});
  r.job(1, 270ms, Job{.ttl = 1s, .wait = 3s, .writes = {0ms, 50ms}, .release_after = 100ms});
  r.run_until(2s);
  r.finish();
  // The race: the release written on the old connection reaches the server while b, granted
  // on the new connection under the same owner, still holds (applied or not is the verdict).
  const Nanos gb = r.granted_at(b);
  const Nanos late = r.world().net().last_data_arrival(*old_conn, true);
  const auto rb = r.release_span(b);
  if (gb >= Nanos{0} && late > gb && (rb.start < Nanos{0} || late < rb.start)) {
    r.mark("old-connection-op-after-takeover");
  }
}

// The same split brain with an acquire: c1's acquire (owner "svc") is written on the connection
// that turns slow and is abandoned; the client cleans up its possible claim and tries again on
// the new connection, is granted after c2's release, and releases. Then the old acquire lands:
// lockwire has killed that connection first, so it is discarded; without that (`no-fence`) it
// grants "svc" a lease nobody holds (3 s TTL): c3, waiting up to 1 s from 1 s on, times out.
void split_brain_late_acquire(Run& r) {
  r.job(1, 5ms, Job{.ttl = 5s, .writes = {10ms}, .release_after = 595ms});
  // The acquire is written on the connection about to be abandoned.
  auto a = std::make_shared<std::string>();
  const auto old_conn = write_then_abandon(r, [&r, a] {
    *a =
        r.job(0, r.world().now(),
              Job{.ttl = 3s, .wait = 2s, .writes = {10ms}, .release_after = 200ms, .owner = "svc"});
  });
  // c3 wants the lock after the stale grant landed: it times out although nobody holds it.
  r.job(2, 1s, Job{.ttl = 1s, .wait = 1s, .writes = {0ms}, .release_after = 100ms});
  r.run_until(6s);
  r.finish();
  // The race: the acquire written on the old connection reaches the server after the client's
  // own release of the grant it got on the new connection.
  const auto ra = r.release_span(*a);
  const Nanos late = r.world().net().last_data_arrival(*old_conn, true);
  if (ra.end >= Nanos{0} && late > ra.end) r.mark("old-acquire-after-release");
}

}  // namespace lockwire::races::classic
