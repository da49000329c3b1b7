// Scenarios behind simulated sentinels (failovers.hpp). The clients reach the data nodes through
// s1..s3 (RunConfig::sentinels); `single-node` is lockwire told the service address only, which
// follows +switch-master as an operator's DNS would, so only its new connections move.
#include "failovers.hpp"

#include <string>
#include <vector>

namespace lockwire::races::failovers {

namespace {

// Writes every `step` from `from` to `to` (after the grant).
std::vector<Nanos> every(Nanos from, Nanos step, Nanos to) {
  std::vector<Nanos> v;
  for (Nanos t = from; t <= to; t += step) v.push_back(t);
  return v;
}

// c2 stands for a process started after the failover: its idle connection, made at the start, is
// reset just before it asks, so that it connects afresh (through the sentinels, or to the
// service address that now names the new primary).
void fresh_connection(Run& r, int client, Nanos at) {
  r.at(at, [&r, client] { r.world().net().reset(r.connection_of(client)); });
}

// Runs `fn` once, at the first +switch-master (checked every millisecond from `from`).
void at_switch(Run& r, Nanos from, Nanos until, std::function<void()> fn) {
  r.when(from, until, 1ms, [&r] { return r.sentinels()->switches() > 0; }, std::move(fn));
}

}  // namespace

void configure_sentinels(RunConfig& c) {
  c.sentinels = 1ms;
  c.sentinel_vouch = false;  // down-after 1 s (RunConfig::sentinel_vouch)
}

void configure_lagging_replica(RunConfig& c) {
  c.sentinels = 300ms;
  c.sentinel_vouch = false;
}

// c1 holds r (TTL 2 s, auto-renewed, writing every 200 ms) when an operator sends SENTINEL
// FAILOVER at 1.5 s; c2 asks at 4 s, after the promoted replica's copy of c1's lease would have
// expired had c1 kept renewing on the old primary (writable until ~12.6 s).
void graceful_failover_mid_hold(Run& r) {
  const std::string holder =
      r.job(0, 100ms,
            Job{.ttl = 2s, .auto_renew = true, .writes = every(100ms, 200ms, 5300ms),
                .release_after = 5400ms});
  r.at(1500ms, [&r] { r.sentinels()->failover(0); });
  at_switch(r, 1500ms, 4s, [&r, holder] {
    if (r.server_holds_now(holder)) r.mark("failover-while-held");
  });
  fresh_connection(r, 1, 3900ms);
  r.job(1, 4s, Job{.ttl = 2s, .wait = 10s, .writes = {0ms, 300ms}, .release_after = 500ms});
  r.run_until(16s);
  r.finish();
}

// The replica lags 300 ms. c1 takes r and releases it (replicated), then takes it again at 1 s
// and releases it; the primary's machine dies right after, before that grant, its token and its
// release reach the replica. The sentinels promote the replica; c2 acquires there at 5 s. Its
// token must be above c1's second one, which the new primary never saw.
void crash_failover_lost_token(Run& r) {
  r.job(0, 100ms, Job{.ttl = 2s, .writes = {0ms}, .release_after = 10ms});
  const std::string lost = r.job(0, 1s, Job{.ttl = 2s, .writes = {0ms}, .release_after = 10ms});
  r.when(1s, 1200ms, 100us, [&r, lost] { return r.release_span(lost).end >= Nanos{0}; },
         [&r, lost] {
           // Unreplicated: granted less than the lag ago.
           if (r.world().now() - r.granted_at(lost) < 300ms) r.mark("grant-lost-in-crash-failover");
           r.redis().crash();
         });
  r.job(1, 5s, Job{.ttl = 2s, .wait = 3s, .writes = {0ms, 100ms}, .release_after = 200ms});
  r.run_until(9s);
  r.finish();
}

// At 1 s the primary is cut off from the three sentinels (not from the clients or the replica)
// for 8 s: they fail over to the replica, and cannot reconfigure the old primary until they
// reach it again (~10 s after the partition heals). c1 holds r throughout (TTL 3 s,
// auto-renewed, writing every 200 ms until it releases at 8 s); c2 asks at 5 s.
void old_primary_still_writable(Run& r) {
  r.job(0, 100ms,
        Job{.ttl = 3s, .auto_renew = true, .writes = every(100ms, 200ms, 7900ms),
            .release_after = 8s});
  r.at(1s, [&r] {
    for (std::size_t i = 0; i < r.sentinels()->size(); ++i) {
      r.world().net().clog(r.server_at(0).node(), r.sentinels()->server(i).node(), 8s);
    }
  });
  at_switch(r, 1s, 6s, [&r] {
    if (!r.server_at(0).model().is_replica() && r.server_at(0).node().alive()) {
      r.mark("old-primary-writable-after-switch");
    }
  });
  fresh_connection(r, 1, 4900ms);
  r.job(1, 5s, Job{.ttl = 2s, .wait = 10s, .writes = {150ms, 300ms}, .release_after = 500ms});
  r.run_until(22s);
  r.finish();
}

// c1 holds r with a short TTL (600 ms, auto-renewed every 200 ms) on a 2 ms link to the
// primary and a 60 ms one to the replica; SENTINEL FAILOVER at 1 s promotes the replica at
// 1.2 s, so c1's renewals from then on reach only the old primary, and the replica's copy of
// the lease expires before the leader names the replica (+promoted-slave, 2.01 s). c2 (0.05 ms
// away) waits for r from 1.5 s. Both hear +promoted-slave and move; c2 is granted on the new
// primary at once, c1's re-confirmation there takes a few 60 ms round trips, past
// +switch-master (2.1 s). lockwire stops counting on c1's lease the moment its connection
// drops for the move (Lease::valid_until), so c1 never believes it alongside c2; without that
// (no-reconfirm) c1 still counts on a lease the new primary lost.
void reconfirm_after_switch(Run& r) {
  r.at(1ms, [&r] { r.world().net().link(r.node(0), r.server()).latency = 2ms; });
  r.at(1ms, [&r] { r.world().net().link(r.node(0), r.server_at(1).node()).latency = 60ms; });
  const std::string holder =
      r.job(0, 100ms,
            Job{.ttl = 600ms, .auto_renew = true, .writes = every(100ms, 100ms, 2900ms),
                .release_after = 3s});
  r.at(1s, [&r] { (void)r.sentinels()->failover(0); });
  r.job(1, 1500ms, Job{.ttl = 1s, .wait = 5s, .writes = {0ms, 50ms}, .release_after = 500ms});
  at_switch(r, 1s, 3s, [&r, holder] {
    // The lease's copy on the new primary is gone (expired) at the switch.
    if (!r.server_holds_now(holder)) r.mark("lease-copy-lost-in-switch");
  });
  r.run_until(5s);
  r.finish();
}

}  // namespace lockwire::races::failovers
