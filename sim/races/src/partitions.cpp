// Partition scenarios behind simulated sentinels (partitions.hpp, issue #28). Everything has run
// for 16 s (so the sentinels' links are older than SENTINEL_MIN_LINK_RECONNECT_PERIOD and are
// closed and made again across the partition, as on a deployment that has been up a while) when
// the primary redis-a and the holder c1 (H) are cut off for 20 s from the sentinels s1..s3, the
// contender c2 (C) and the replicas not on H's side (Network::partition: TCP holds the bytes
// and retransmits them after the heal). The sentinels fail over after down-after (3 s) plus
// their PING phase, election and switch; C, which asked 0.5 s into the partition and waits
// 40 s, is granted on the promoted replica once H's copy of the lease there expired. H keeps
// renewing on the old primary, which it still reaches, and hears no sentinel until the heal.
//
// Judged with RunConfig::strict_exclusion (no instant at which both count on the lease) and
// here: C granted within TTL + the failover's time + 2 s of the partition (scenarios a, b), or
// within its wait (c).
#include "partitions.hpp"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace lockwire::races::partitions {

namespace {

constexpr Nanos kHolderAt{15s};
constexpr Nanos kCut{16s};
constexpr Nanos kCutFor{20s};
constexpr Nanos kContenderAt = kCut + 500ms;
constexpr Nanos kTtl{5s};
constexpr Nanos kWait{40s};
// C holds long enough for the overlap to show how long H kept counting on its lease.
constexpr Nanos kContenderHold{25s};
constexpr Nanos kEnd = kCut + kCutFor + 30s;

std::vector<Nanos> every(Nanos from, Nanos step, Nanos to) {
  std::vector<Nanos> v;
  for (Nanos t = from; t <= to; t += step) v.push_back(t);
  return v;
}

void base(RunConfig& c) {
  c.sentinels = 1ms;
  c.sentinel_config.quorum = 2;
  c.sentinel_config.down_after = 3s;
  c.strict_exclusion = true;
  c.health_check = 1s;  // an idle connection across the partition is noticed (single-node)
}

struct Plan {
  std::string holder, contender;
  Nanos switched{-1};  // the first +switch-master
};

// H takes r (TTL 5 s, auto-renewed, writing every 100 ms while it believes it holds r), the
// partition puts redis-a, c1 and the replicas `holder_side` (server indexes) on one side and
// every other node on the other, C asks 0.5 s into it.
std::shared_ptr<Plan> cut_off_holder(Run& r, std::vector<std::size_t> holder_side) {
  auto plan = std::make_shared<Plan>();
  plan->holder = r.job(0, kHolderAt,
                       Job{.ttl = kTtl, .auto_renew = true,
                           .writes = every(0ms, 100ms, kEnd - kHolderAt - 5s),
                           .release_after = kEnd - kHolderAt - 4s});
  r.set_healed_at(kCut + kCutFor);
  r.at(kCut, [&r, holder_side] {
    sim::World& w = r.world();
    std::vector<const sim::Node*> a{&r.server_at(0).node(), &r.node(0)};
    for (std::size_t i : holder_side) a.push_back(&r.server_at(i).node());
    std::vector<const sim::Node*> b;
    for (std::size_t i = 0; i < r.sentinels()->size(); ++i) b.push_back(&r.sentinels()->server(i).node());
    for (int c = 1; c < r.config().clients; ++c) b.push_back(&r.node(c));
    for (std::size_t i = 1; i <= static_cast<std::size_t>(r.config().sentinel_replicas); ++i) {
      if (std::find(holder_side.begin(), holder_side.end(), i) == holder_side.end())
        b.push_back(&r.server_at(i).node());
    }
    (void)w.net().partition(a, b, kCutFor);
  });
  r.when(kCut, kCut + kCutFor, 1ms, [&r] { return r.sentinels()->switches() > 0; },
         [&r, plan] { plan->switched = r.world().now(); });
  plan->contender = r.job(1, kContenderAt,
                          Job{.ttl = kTtl, .wait = kWait, .auto_renew = true, .writes = every(0ms, 100ms, 24s),
                              .release_after = kContenderHold});
  return plan;
}

bool holds(Run& r, std::size_t server, const std::string& owner) {
  sim::SimRedis& s = r.server_at(server);
  return s.node().alive() && r.strategy(0).server_holds(s.model(), "r", owner, false, nullptr);
}

// C granted within TTL + the failover's time (partition to +switch-master) + 2 s.
void contender_in_time(Run& r, const Plan& p) {
  const Nanos failover = p.switched >= Nanos{0} ? p.switched - kCut : kCutFor;
  const Nanos bound = kCut + kTtl + failover + 2s;
  const Nanos g = r.granted_at(p.contender);
  if (g < Nanos{0} || g > bound) {
    r.violate(Check::liveness,
              p.contender + " was granted " +
                  (g < Nanos{0} ? std::string("never") : "at " + std::to_string(g.count() / 1000000) + "ms") +
                  ", bound " + std::to_string(bound.count() / 1000000) +
                  "ms (partition + TTL + failover " + std::to_string(failover.count() / 1000000) +
                  "ms + 2 s)");
  }
}

}  // namespace

void configure(RunConfig& c) {
  base(c);
  c.sentinel_replicas = 2;
}

void configure_min_replicas_three(RunConfig& c) {
  base(c);
  c.sentinel_replicas = 3;
  c.strategy_options.min_replicas = 1;
}

void configure_min_replicas_two(RunConfig& c) {
  base(c);
  c.sentinel_replicas = 2;
  c.strategy_options.min_replicas = 1;
}

// (a) primary + 2 replicas; H and the primary alone on their side.
void holder_with_old_primary(Run& r) {
  auto p = cut_off_holder(r, {});
  r.when(kCut, kCut + kCutFor, 1ms, [&r] { return r.sentinels()->switches() > 0; },
         [&r, p] {
           if (holds(r, 0, p->holder) && !r.server_at(0).model().is_replica())
             r.mark("holder-cut-off-with-old-primary");
         });
  r.run_until(kEnd);
  contender_in_time(r, *p);
  r.finish();
}

// (b) min_replicas 1, 3 replicas, redis-d on H's side: it acknowledges H's renewals.
void replica_on_holder_side(Run& r) {
  auto p = cut_off_holder(r, {3});
  r.when(kCut, kCut + kCutFor, 1ms, [&r] { return r.sentinels()->switches() > 0; },
         [&r, p] {
           if (holds(r, 0, p->holder) && holds(r, 3, p->holder) &&
               r.server_at(3).primary_of() == &r.server_at(0))
             r.mark("replica-acks-cut-off-holder");
         });
  r.run_until(kEnd);
  contender_in_time(r, *p);
  r.finish();
}

// (c) min_replicas 1, 2 replicas, redis-c on H's side: the promoted redis-b has no replica
// until the heal and more (+fix-slave-config at ~54.5 s here; the model's redis-c does not
// acknowledge redis-b's writes before C's wait ends). A missing replica is a transient state,
// not a final answer (issue #28, case 3): C keeps trying for its whole wait — granted if a
// replica acknowledges in time, else answered at the deadline with the WAIT's words. What
// fires is an answer before the deadline (today's lockwire: at once).
void promoted_without_replica(Run& r) {
  auto p = cut_off_holder(r, {2});
  r.when(kCut, kCut + kCutFor, 1ms, [&r] { return r.sentinels()->switches() > 0; },
         [&r] {
           sim::SimRedis& m = r.sentinels()->master();
           bool replica = false;
           for (std::size_t i = 0; i < 3; ++i)
             replica = replica || r.server_at(i).primary_of() == &m;
           if (!replica) r.mark("promoted-without-replica");
         });
  r.run_until(kEnd);
  const Nanos g = r.granted_at(p->contender);
  const Run::Span asked = r.acquire_span(p->contender);
  const bool waited_out = r.acquire_failed(p->contender) && asked.end >= asked.start + kWait;
  if ((g < Nanos{0} && !waited_out) || g > kContenderAt + kWait) {
    r.violate(Check::liveness, p->contender + " was neither granted within its 40 s wait nor " +
                                   "answered at its end" +
                                   (r.acquire_failed(p->contender) ? " (its acquire failed early)"
                                                                   : std::string()));
  }
  r.finish();
}

// (d) The vouch runs out while a grant is in flight: redis-a and c1 are cut off as above, and
// redis-a stalls (as DEBUG SLEEP) 1 s into the partition for 12 s. c1 asks 1.2 s in, while the
// sentinels it last heard still vouch for redis-a; the block waits in redis-a's input until the
// stall ends, long after the failover, and is granted there with a token from c1's old floor —
// below the one c2 got on the promoted replica. Handed over, it is a lease that counted for
// nothing and a token that goes back (partition swarm, seed 5000607); lockwire withdraws it and
// waits for a vouch, which never comes before the heal (then it finds c2 holding).
void grant_in_flight_as_vouch_ends(Run& r) {
  // Liveness is judged from 16 s after the heal: c1, on the cut-off side, attempts only once
  // the sentinels vouch again, and with no health check its links to them come back with
  // TCP's backed-off retransmission (5.4 s after the heal here), then the vouch must be clear
  // of the sentinels' 5 s memory of "down" (c1 is granted 14.4 s after the heal).
  r.set_healed_at(kCut + kCutFor + 16s);
  r.at(kCut, [&r] {
    std::vector<const sim::Node*> a{&r.server_at(0).node(), &r.node(0)};
    std::vector<const sim::Node*> b;
    for (std::size_t i = 0; i < r.sentinels()->size(); ++i) b.push_back(&r.sentinels()->server(i).node());
    for (int c = 1; c < r.config().clients; ++c) b.push_back(&r.node(c));
    for (std::size_t i = 1; i <= static_cast<std::size_t>(r.config().sentinel_replicas); ++i)
      b.push_back(&r.server_at(i).node());
    (void)r.world().net().partition(a, b, kCutFor);
  });
  r.at(kCut + 1s, [&r] { r.server_at(0).stall(12s); });
  const std::string late = r.job(0, kCut + 1200ms,
                                 Job{.ttl = kTtl, .wait = kWait, .writes = every(0ms, 100ms, 3s),
                                     .release_after = 4s});
  const std::string first = r.job(1, kContenderAt,
                                  Job{.ttl = kTtl, .wait = kWait, .auto_renew = true,
                                      .writes = every(0ms, 100ms, 10s), .release_after = 11s});
  r.when(kCut, kCut + kCutFor, 1ms,
         [&r, first] {
           return r.granted_at(first) >= Nanos{0} && !r.server_at(0).model().is_replica() &&
                  r.world().now() < kCut + 13s;  // redis-a still stalled: c1's block unanswered
         },
         [&r] { r.mark("grant-in-flight-as-vouch-ends"); });
  r.run_until(kEnd);
  r.finish();
}

// (d) without the health check: with it, c1's connection would be dropped 2 s into the stall
// and the late grant would never be read (the race is then the withdrawal of an unknown
// outcome, covered elsewhere); without it the grant is read 12 s late, as it would be by a user
// who left the health check off.
void configure_stalled_primary(RunConfig& c) {
  base(c);
  c.sentinel_replicas = 2;
  c.health_check = Nanos{0};
}

void configure_cluster(RunConfig& c) {
  c.cluster = sim::ClusterConfig{};
  c.strict_exclusion = true;
}

// (Cluster) n1, the primary of the resource's slot, and H are cut off for 20 s from the other
// five nodes and C: the others see n1 PFAIL after node-timeout (2 s), FAIL with a majority of
// the primaries, and elect its replica n4 0.5-1 s later; n1, in the minority, answers
// CLUSTERDOWN once it has not reached a majority for node-timeout. C, granted on n4 once H's
// copy there expired, must not overlap with H counting on its lease.
void cluster_holder_with_old_primary(Run& r) {
  const std::string res = r.resource_on(0, "r");
  const std::string holder =
      r.job(0, kHolderAt,
            Job{.resource = res, .ttl = kTtl, .auto_renew = true,
                .writes = every(0ms, 100ms, kEnd - kHolderAt - 5s),
                .release_after = kEnd - kHolderAt - 4s});
  r.set_healed_at(kCut + kCutFor);
  r.at(kCut, [&r] {
    std::vector<const sim::Node*> a{&r.cluster()->server(0).node(), &r.node(0)};
    std::vector<const sim::Node*> b{&r.node(1)};
    for (std::size_t i = 1; i < r.cluster()->size(); ++i) b.push_back(&r.cluster()->server(i).node());
    (void)r.world().net().partition(a, b, kCutFor);
  });
  auto switched = std::make_shared<Nanos>(-1);
  r.when(kCut, kCut + kCutFor, 1ms, [&r] { return r.cluster()->failovers() > 0; },
         [&r, holder, res, switched] {
           *switched = r.world().now();
           sim::SimRedis& old = r.cluster()->server(0);
           if (r.strategy(0).server_holds(old.model(), res, holder, false, nullptr))
             r.mark("cluster-holder-cut-off-with-old-primary");
         });
  const std::string contender =
      r.job(1, kContenderAt,
            Job{.resource = res, .ttl = kTtl, .wait = kWait, .auto_renew = true,
                .writes = every(0ms, 100ms, 24s), .release_after = kContenderHold});
  r.run_until(kEnd);
  contender_in_time(r, Plan{holder, contender, *switched});
  r.finish();
}

}  // namespace lockwire::races::partitions
