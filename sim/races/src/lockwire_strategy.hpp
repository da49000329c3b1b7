// lockwire's own lock::Client as a race-catalogue strategy, optionally with a bug brought back.
#pragma once

#include <memory>

#include "lockwire/lock/client.hpp"
#include "lockwire/testing/lock_regressions.hpp"
#include "lockwire/races/races.hpp"

namespace lockwire::races::detail {

// How a lockwire strategy differs from lock::Client's defaults: `no-fence` and the issue #13
// regressions bring back a bug each; `lockwire-allow-eviction` opts in to evicting servers.
struct LockwireTweaks {
  bool allow_eviction = false;
  // `single-node`: no sentinel discovery; the client connects to ConnectionOptions::endpoint (the
  // service address) as lockwire did before sentinels were supported.
  bool direct = false;
  // `single-node-cluster`: a Redis Cluster's first seed node used as a single server, as
  // lockwire did before issue #14 (a fixed locator keeps the client out of cluster mode):
  // MOVED answers are errors, the force-release notice is the one shared key.
  bool pinned = false;
  // ClientOptions::cluster_vouch, on as in the library: the simulated cluster answers what it
  // reads (CLUSTER NODES' ping-sent and flags, CONFIG GET cluster-node-timeout, CLUSTER
  // COUNT-FAILURE-REPORTS). `no-vouch` turns it off with the sentinels' vouch.
  bool cluster_vouch = true;
  // The safeguards switched off (no-fence and the broken strategies), through lock/'s test-only
  // seam (lockwire/testing/lock_regressions.hpp).
  lock::testing::Regressions regressions{};
  int min_replicas = 0;  // lock::ClientOptions::min_replicas
  bool replica_majority = false;  // ... = ReplicaAcks::majority() instead
  Nanos fence_ttl{0};    // lock::ClientOptions::fence_ttl (0: the library's default)
  // `no-vouch` (with cluster_vouch off): SentinelOptions::vouch off, as lockwire was before
  // issue #28 — a holder cut off with the old primary keeps counting on its lease up to its TTL.
  bool vouch = true;
  // `lockwire-parked` and the park-* broken strategies: ClientOptions::parked_handoff (#30).
  bool parked = false;
};

[[nodiscard]] std::unique_ptr<Strategy> make_lockwire_strategy(sim::Node& node,
                                                               loop::ConnectionOptions options,
                                                               const LockwireTweaks& tweaks);

}  // namespace lockwire::races::detail
