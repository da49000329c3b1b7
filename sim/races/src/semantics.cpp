// Scenarios of the lock semantics beyond acquire/release (semantics.hpp).
#include "semantics.hpp"

#include <memory>
#include <string>
#include <vector>

#include "lockwire/lock/protocol.hpp"

namespace lockwire::races::semantics {

namespace {

std::string ms(Nanos t) {
  return std::to_string(t.count() / 1'000'000) + "." +
         std::to_string(t.count() / 100'000 % 10) + " ms";
}

}  // namespace

// c1 reads r under a shared lease (granted ~10 ms) and upgrades it at ~110 ms to write, while
// c2 waits for r exclusively from 30 ms. The upgrade must be in place: c2 is granted only after
// c1's upgraded lease ends, never between c1's read and its write. release-then-lock (release
// the shared lease, then lock) lets c2 in through the window between the two.
void upgrade_with_writer_waiting(Run& r) {
  const std::string reader =
      r.job(0, 10ms, Job{.resource = "r", .ttl = 2s, .wait = 1s, .shared = true,
                         .upgrade_after = 100ms, .upgraded_writes = {0ms, 20ms},
                         .upgraded_release_after = 50ms});
  const std::string writer = r.job(1, 30ms, Job{.resource = "r", .ttl = 1s, .wait = 3s,
                                                .writes = {0ms}, .release_after = 30ms});
  r.at(105ms, [&r, writer] {
    const Run::Span w = r.acquire_span(writer);
    if (w.start >= Nanos{0} && w.end < Nanos{0}) r.mark("writer-waiting-at-upgrade");
  });
  r.run_until(2s);
  // The mutual-exclusion checker judges that no writer was granted between the shared grant
  // and the upgrade's; here, that the upgrade was granted at all.
  if (r.granted_at(reader + "^x") < Nanos{0}) {
    r.violate(Check::liveness, reader + "'s upgrade was not granted");
  }
  r.finish();
}

// c1 and c2 both read r under shared leases and both ask to upgrade (at ~110 and ~120 ms,
// waiting up to 2 s). Each would wait for the other to leave; lockwire refuses the second at
// once (upgrade_conflict), whose holder then releases its read lease, and c1's upgrade goes.
// upgrade-ignores-intent lets both wait out their deadlines.
void two_readers_upgrade(Run& r) {
  const std::string a =
      r.job(0, 10ms, Job{.resource = "r", .ttl = 3s, .wait = 2s, .shared = true,
                         .upgrade_after = 100ms, .upgraded_writes = {0ms},
                         .upgraded_release_after = 20ms, .release_if_upgrade_fails = true});
  const std::string b =
      r.job(1, 20ms, Job{.resource = "r", .ttl = 3s, .wait = 2s, .shared = true,
                         .upgrade_after = 100ms, .upgraded_writes = {0ms},
                         .upgraded_release_after = 20ms, .release_if_upgrade_fails = true});
  // The second upgrade is asked while the first one waits.
  r.when(100ms, 300ms, 10us, [&r, b] { return r.acquire_span(b + "^x").start >= Nanos{0}; },
         [&r, a] {
           const Run::Span ua = r.acquire_span(a + "^x");
           if (ua.start >= Nanos{0} && ua.end < Nanos{0}) r.mark("both-readers-upgrading");
         });
  r.run_until(3s);
  // One of the two must get its upgrade, well within its wait: the other steps aside.
  const Nanos ga = r.granted_at(a + "^x");
  const Nanos gb = r.granted_at(b + "^x");
  if (ga < Nanos{0} && gb < Nanos{0}) {
    r.violate(Check::liveness, "neither " + a + " nor " + b +
                                   " got its upgrade: each waited for the other to leave");
  } else {
    const Nanos g = ga >= Nanos{0} ? ga : gb;
    if (g > 500ms) {
      r.violate(Check::liveness, "the upgrade was granted only at " + ms(g) +
                                     ": the readers waited for each other");
    }
  }
  r.finish();
}

// c1 holds p with a persistent lease (ttl forever) from 10 ms, writing every 100 ms; c2 asks for p
// at 50 ms (wait 2 s, TTL 200 ms), and c3 at 700 ms. Their acquire blocks run PEXPIRE .. NX on
// c1's holder set: lockwire's persistent lease has a (50-year) TTL, so that is a no-op and both
// wait until c1 releases at 1.5 s. persist-forever (no TTL at all) lets c2's block give it
// c2's 200 ms: c1's lease expires under it, c2 is granted while c1 still writes.
void persistent_lease_contended(Run& r) {
  std::vector<Nanos> writes;
  for (Nanos t = 100ms; t <= 1400ms; t += 100ms) writes.push_back(t);
  const std::string holder = r.job(0, 10ms, Job{.resource = "p", .ttl = lock::kForever,
                                                .writes = writes, .release_after = 1500ms});
  const std::string c2 = r.job(1, 50ms, Job{.resource = "p", .ttl = 200ms, .wait = 2s,
                                            .writes = {0ms}, .release_after = 50ms});
  r.job(2, 700ms, Job{.resource = "p", .ttl = 200ms, .wait = 2s, .writes = {0ms},
                      .release_after = 50ms});
  r.at(60ms, [&r, c2] {
    const Run::Span s = r.acquire_span(c2);
    if (s.start >= Nanos{0} && s.end < Nanos{0}) r.mark("contender-on-persistent-lease");
  });
  r.at(1400ms, [&r, holder] {
    if (!r.server_holds_now(holder)) {
      r.violate(Check::lease_loss_notice, holder + "'s persistent lease is gone from the server");
    }
  });
  r.run_until(3s);
  r.finish();
}

// A semaphore of 2 permits: c1 holds one from 10 ms (until 1 s); c2 and c3 ask for one at the same
// instant, 100 ms, each reading one holder. lockwire's grant is conditional on the holder set it
// read (WATCH): c2's goes, c3's aborts, c3 reads two holders and waits for c1's release.
// semaphore-unwatched grants both: three holders of two permits.
void semaphore_concurrent_requests(Run& r) {
  r.job(0, 10ms, Job{.resource = "s", .ttl = 2s, .release_after = 990ms, .shared = true,
                     .permits = 2});
  const std::string c2 =
      r.job(1, 100ms, Job{.resource = "s", .ttl = 2s, .wait = 2s, .release_after = 1500ms,
                          .shared = true, .permits = 2});
  const std::string c3 =
      r.job(2, 100ms, Job{.resource = "s", .ttl = 2s, .wait = 2s, .release_after = 100ms,
                          .shared = true, .permits = 2});
  r.at(100100us, [&r, c2, c3] {
    if (r.acquire_span(c2).start >= Nanos{0} && r.acquire_span(c3).start >= Nanos{0}) {
      r.mark("two-requests-for-the-last-permit");
    }
  });
  r.run_until(3s);
  if (r.granted_at(c2) < Nanos{0} || r.granted_at(c3) < Nanos{0}) {
    r.violate(Check::liveness, "a permit request was not granted within its wait");
  }
  r.finish();
}

// c1 holds b from 10 ms (until 2 s); c2 asks for {a, b} at 50 ms, waiting 300 ms: it takes a,
// then waits for b until its wait ends. lockwire releases a before c2 is told; c3, asking for a
// alone at 400 ms, gets it at once. lock-all-no-rollback leaves a held by nobody until its TTL.
void lock_all_partial_failure(Run& r) {
  r.job(0, 10ms, Job{.resource = "b", .ttl = 3s, .release_after = 2s});
  r.job(1, 50ms, Job{.ttl = 1500ms, .wait = 300ms, .release_after = 100ms,
                     .resources = {"a", "b"}});
  const std::string c3 =
      r.job(2, 400ms, Job{.resource = "a", .ttl = 1s, .release_after = 100ms});
  r.at(200ms, [&r] {
    // The set is answered as a whole: a is on the server, the answer still to come.
    if (r.server_holds_now("c2.1/a") && r.acquire_span("c2.1/b").end < Nanos{0}) {
      r.mark("set-half-taken");
    }
  });
  r.run_until(4s);
  if (r.granted_at(c3) < Nanos{0}) {
    r.violate(Check::liveness, c3 + " was refused a, which nobody was using");
  }
  r.finish();
}

// c1 asks for {x, y} and c2 for {y, x} at the same instant, both waiting 1 s and holding 50 ms:
// taken in name order, one waits for the other and both get their sets. lock-all-unsorted takes
// them in the caller's order: c1 holds x and waits for y, c2 holds y and waits for x, until both
// waits end.
void lock_all_opposite_orders(Run& r) {
  const std::string one = r.job(0, 100ms, Job{.ttl = 2s, .wait = 1s, .release_after = 50ms,
                                              .resources = {"x", "y"}});
  const std::string two = r.job(1, 100ms, Job{.ttl = 2s, .wait = 1s, .release_after = 50ms,
                                              .resources = {"y", "x"}});
  r.at(101ms, [&r, one, two] {
    if (r.acquire_span(one + "/x").start >= Nanos{0} && r.acquire_span(two + "/y").start >= Nanos{0}) {
      r.mark("opposite-orders-at-once");
    }
  });
  r.run_until(3s);
  for (const std::string& s : {one + "/x", two + "/y"}) {
    if (r.granted_at(s) < Nanos{0}) r.violate(Check::liveness, s + ": the set was not granted");
  }
  r.finish();
}

// Fair order: c1 holds r until ~200 ms; c2 waits for it from 20 ms; c3 (near the server: 10 µs
// away, c2 2 ms) asks as c1's release lands. c2 waited first and must be granted
// first: c3's fair read finds c2 at the queue's head and queues behind it. fair-fresh-jumps (a
// fresh attempt with the default block) takes the lock before c2's woken attempt arrives.
void fair_fresh_attempt(Run& r) {
  r.at(1ms, [&r] {
    r.world().net().link(r.node(1), r.server()).latency = 2ms;
    r.world().net().link(r.node(2), r.server()).latency = 10us;
  });
  const std::string c1 =
      r.job(0, 10ms, Job{.resource = "r", .ttl = 2s, .release_after = 190ms, .fair = true});
  const std::string c2 = r.job(1, 20ms, Job{.resource = "r", .ttl = 1s, .wait = 2s,
                                            .writes = {0ms}, .release_after = 50ms, .fair = true});
  const std::string c3 = "c3.1";
  // c3 asks 60 µs after c1's release is sent: it lands just after the release, ~2 ms before
  // c2's woken attempt.
  r.when(150ms, 300ms, 10us, [&r, c1] { return r.release_span(c1).start >= Nanos{0}; },
         [&r, c2] {
           r.job(2, r.world().now() + 60us,
                 Job{.resource = "r", .ttl = 1s, .wait = 2s, .writes = {0ms},
                     .release_after = 50ms, .fair = true});
           if (r.acquire_span(c2).end < Nanos{0}) r.mark("fresh-attempt-while-queued");
         });
  r.run_until(2s);
  const Nanos g2 = r.granted_at(c2), g3 = r.granted_at(c3);
  if (g2 < Nanos{0} || g3 < Nanos{0}) {
    r.violate(Check::liveness, "a fair waiter was not granted within its wait");
  } else if (g3 < g2) {
    r.violate(Check::liveness, c3 + " (asked as the lock was freed) was granted at " + ms(g3) +
                                   ", before " + c2 + " (waiting since 20 ms, granted at " +
                                   ms(g2) + "): not in arrival order");
  }
  r.finish();
}

}  // namespace lockwire::races::semantics
