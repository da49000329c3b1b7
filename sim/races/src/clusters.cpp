// Scenarios on a simulated Redis Cluster (clusters.hpp). Resources are picked by the shard that
// serves their slot (Run::resource_on); n1 is the first seed, so `single-node-cluster` (the
// client told n1 as a single server) works on n1's slots and nowhere else.
#include "clusters.hpp"

#include <memory>
#include <string>
#include <vector>

namespace lockwire::races::clusters {

namespace {

std::vector<Nanos> every(Nanos from, Nanos step, Nanos to) {
  std::vector<Nanos> v;
  for (Nanos t = from; t <= to; t += step) v.push_back(t);
  return v;
}

// A job whose refusal is a finding: the lock was free or was going to be within the wait.
std::string must_grant(Run& r, int c, Nanos t, Job j) {
  auto label = std::make_shared<std::string>();
  *label = r.job(c, t, std::move(j), [&r, label](const AcquireResult& res) {
    if (res.ec) r.violate(Check::liveness, *label + " was refused: " + res.ec.message());
  });
  return *label;
}

}  // namespace

void configure_cluster(RunConfig& c) {
  c.cluster = sim::ClusterConfig{};
}

void configure_lagging_cluster(RunConfig& c) {
  sim::ClusterConfig cc;
  cc.replication_lag = 300ms;
  c.cluster = cc;
}

// m's slot (never used: no key) is served by n1. c1 first locks another resource of n1's shard
// (its connection there is up), then asks for m over a 2 ms link at 100 ms; at 101 ms the slot
// moves to n2 (keyless: IMPORTING, MIGRATING, SETSLOT NODE within 0.3 ms). The acquire reaches
// n1 after the move and is answered MOVED (the command did not run): it must be sent again to
// n2 and granted there. c2 takes m at 300 ms from the new owner.
void moved_during_acquire(Run& r) {
  const std::string warm = r.resource_on(0, "w");
  const std::string m = r.resource_on(0, "m");
  const int slot = Run::slot_of(m);
  r.at(1ms, [&r] { r.world().net().link(r.node(0), r.cluster()->server(0).node()).latency = 2ms; });
  must_grant(r, 0, 10ms, Job{.resource = warm, .ttl = 300ms, .release_after = 5ms});
  auto moved_at = std::make_shared<Nanos>(-1);
  auto label = std::make_shared<std::string>();
  *label = r.job(0, 100ms, Job{.resource = m, .ttl = 300ms, .writes = {0ms, 20ms},
                               .release_after = 50ms},
                 [&r, label, moved_at](const AcquireResult& res) {
                   // Sent before the move began, answered after it ended.
                   if (*moved_at >= Nanos{0} && r.world().now() > *moved_at &&
                       r.acquire_span(*label).start < 101ms) {
                     r.mark("acquire-in-flight-across-slot-move");
                   }
                   if (res.ec) r.violate(Check::liveness, *label + " was refused: " + res.ec.message());
                 });
  r.at(101ms, [&r, slot, moved_at] {
    r.migrate_slot(slot, 1, 100us, [&r, moved_at] { *moved_at = r.world().now(); });
  });
  must_grant(r, 1, 300ms,
             Job{.resource = m, .ttl = 300ms, .wait = 1s, .writes = {0ms}, .release_after = 20ms});
  r.run_until(2s);
  r.finish();
}

// c1 holds a (n1's slot; TTL 600 ms, auto-renewed, writing every 100 ms) while its slot moves to
// n2 one key every 150 ms from 300 ms: in between, some of a's keys are on n1 and some on n2, so
// n1 answers ASK (a key it no longer has) or TRYAGAIN (a block over keys on both sides), and n2
// serves only ASKING requests. c2 waits for a from 400 ms. Both must keep working: the holder's
// renewals and c2's wait follow ASK (ASKING + the command on n2) and retry TRYAGAIN.
void ask_during_migration(Run& r) {
  const std::string a = r.resource_on(0, "a");
  const int slot = Run::slot_of(a);
  must_grant(r, 0, 100ms,
             Job{.resource = a, .ttl = 600ms, .auto_renew = true,
                 .writes = every(50ms, 100ms, 1550ms), .release_after = 1600ms});
  r.at(300ms, [&r, slot] { r.migrate_slot(slot, 1, 150ms); });
  r.when(300ms, 2s, 1ms,
         [&r, slot] {
           return !r.cluster()->server(0).model().keys_in_slot(slot).empty() &&
                  !r.cluster()->server(1).model().keys_in_slot(slot).empty();
         },
         [&r] { r.mark("resource-half-migrated"); });
  must_grant(r, 1, 400ms,
             Job{.resource = a, .ttl = 300ms, .wait = 3s, .writes = {0ms}, .release_after = 20ms});
  r.run_until(4s);
  r.finish();
}

// s's slot is served by n2. c1 and c2 both know the slot map (they locked s once). n2's machine
// dies at 500 ms; n5 (its replica) is elected ~4 s later. c2 asks for s at 1 s with a 8 s wait:
// its map still names n2 (dead, then FAIL) until the election; it must find n5 and be granted
// there, with a token above c1's.
void stale_slot_map_after_failover(Run& r) {
  const std::string s = r.resource_on(1, "s");
  must_grant(r, 0, 100ms, Job{.resource = s, .ttl = 300ms, .writes = {0ms}, .release_after = 10ms});
  must_grant(r, 1, 200ms, Job{.resource = s, .ttl = 300ms, .writes = {0ms}, .release_after = 10ms});
  r.at(500ms, [&r] { r.cluster_crash(1); });
  must_grant(r, 1, 1s,
             Job{.resource = s, .ttl = 300ms, .wait = 8s, .writes = {0ms, 50ms},
                 .release_after = 100ms});
  r.when(1s, 8s, 1ms, [&r] { return r.cluster()->failovers() > 0; },
         [&r] {
           r.mark("slot-map-stale-at-promotion");
           // Clients read the slot map again every ClientOptions::cluster_refresh (1 s) or at a
           // failed connect: liveness is judged from then on.
           r.set_healed_at(r.world().now() + 1100ms);
         });
  r.run_until(10s);
  r.finish();
}

// c1 holds h (n1's slot; TTL 800 ms, auto-renewed, writing every 100 ms) when an operator
// sends CLUSTER FAILOVER to n4 at 1 s: n1 holds writes ~45 ms, n4 takes over, n1's held
// requests answer MOVED. c1 must renew on n4 before it counts on its lease again (or be told it
// lost it); c2, waiting from 1.2 s, is granted only after c1's release, with a higher token.
void failover_during_hold(Run& r) {
  const std::string h = r.resource_on(0, "h");
  const std::string holder =
      r.job(0, 100ms,
            Job{.resource = h, .ttl = 800ms, .auto_renew = true,
                .writes = every(100ms, 100ms, 2900ms), .release_after = 3s});
  r.at(1s, [&r] { (void)r.cluster_failover(r.cluster()->replicas_of(0).front()); });
  r.when(1s, 2s, 100us, [&r] { return r.cluster()->failovers() > 0; },
         [&r, holder] {
           if (r.server_holds_now(holder)) r.mark("failover-while-held");
         });
  must_grant(r, 1, 1200ms,
             Job{.resource = h, .ttl = 500ms, .wait = 5s, .writes = {0ms, 50ms},
                 .release_after = 100ms});
  // A graceful failover loses no write, so it must cost the holder nothing: its lease is
  // re-confirmed on the promoted replica, and it is never told it lost h (drop-on-move is).
  r.at(3s, [&r, holder] {
    if (const Nanos t = r.told_lost_at(holder); t >= Nanos{0}) {
      r.violate(Check::liveness, holder + " was told it lost h at " +
                                     std::to_string(t.count() / 1'000'000) +
                                     " ms, across a failover that lost nothing");
    }
  });
  r.run_until(6s);
  r.finish();
}

// The replicas lag 300 ms. c1 takes h (n1's slot; TTL 8 s, auto-renewed, writing every 200 ms)
// at 1 s; n1's machine dies right after, before the grant reaches n4, which the cluster elects
// ~4 s later without the lease. c2 waits for h from 1.5 s and is granted on n4. lockwire stops
// counting on the lease when its connection is located on n4 (a move), and renews there before
// it counts on it again: the renewal finds it gone and c1 is told it lost h; no-reconfirm keeps
// believing until that renewal answers, alongside c2.
void crash_during_hold(Run& r) {
  const std::string h = r.resource_on(0, "h");
  // c1 is far from n4 (30 ms): its connection there takes ~4 round trips, so c2 (near) is
  // granted on n4 before c1's renewal there can answer.
  r.at(1ms, [&r] {
    const std::size_t n4 = r.cluster()->replicas_of(0).front();
    r.world().net().link(r.node(0), r.cluster()->server(n4).node()).latency = 30ms;
  });
  const std::string holder =
      r.job(0, 1s, Job{.resource = h, .ttl = 8s, .auto_renew = true,
                       .writes = every(100ms, 200ms, 9s), .release_after = 10s});
  // (Until 2 s: a fresh client's first grant waits for every node's first answer to the
  // Cluster vouch's poll, ~4 round trips to n4.)
  r.when(1s, 2s, 100us, [&r, holder] { return r.granted_at(holder) >= Nanos{0}; },
         [&r, holder] {
           // Unreplicated: granted less than the lag ago.
           if (r.world().now() - r.granted_at(holder) < 300ms) r.mark("grant-lost-in-crash");
           r.cluster_crash(0);
         });
  // c2's client starts early (another shard): a client younger than 2 * cluster-node-timeout
  // when a node stops answering (n1, dead) cannot count a lease before that age (the Cluster
  // vouch needs every node's report count, or that much history).
  must_grant(r, 1, 50ms,
             Job{.resource = r.resource_on(1, "w"), .ttl = 1s, .writes = {0ms},
                 .release_after = 10ms});
  must_grant(r, 1, 1500ms,
             Job{.resource = h, .ttl = 1s, .wait = 10s, .writes = {0ms, 50ms},
                 .release_after = 200ms});
  r.run_until(14s);
  r.finish();
}

// c1 holds f (n2's slot; TTL 5 s, writing every 50 ms). c3 force-releases f at 500 ms; c3's only
// traffic so far went to n1's shard. c1 must be told it lost f within about one round trip (the
// notice is a key of n2's shard that c1's connection there tracks), not at its next renewal.
void force_release_other_slot(Run& r) {
  const std::string f = r.resource_on(1, "f");
  must_grant(r, 2, 50ms, Job{.resource = r.resource_on(0, "w"), .ttl = 300ms, .release_after = 5ms});
  const std::string holder =
      must_grant(r, 0, 100ms, Job{.resource = f, .ttl = 5s, .writes = every(50ms, 50ms, 2s),
                                  .release_after = 3s});
  r.at(500ms, [&r, f] {
    r.mark("force-release-of-other-shard");
    r.force_release(2, f);
  });
  r.at(600ms, [&r, holder] {
    if (r.server_holds_now(holder)) r.violate(Check::liveness, "force-release did not remove " + holder);
    // Told within about a round trip of the removal (links are 50 µs one way).
    if (r.strategy(0).believes_held(1)) {
      r.violate(Check::lease_loss_notice,
                holder + " still believes it holds 100 ms after the force-release");
    }
  });
  r.run_until(4s);
  r.finish();
}

}  // namespace lockwire::races::clusters
