// Scenarios of real network partitions behind simulated sentinels (issue #28): the primary and
// the holder cut off from the sentinels, the other replicas and the contender. Listed in
// catalogue.cpp's table; defined in partitions.cpp.
#pragma once

#include "lockwire/races/races.hpp"

namespace lockwire::races::partitions {

// Three sentinels (quorum 2, down-after 3 s), the primary and 2 replicas.
void configure(RunConfig& c);
// The same with min_replicas 1 for every client and 3 replicas (one of them on H's side).
void configure_min_replicas_three(RunConfig& c);
// min_replicas 1 with 2 replicas, one of them on H's side.
void configure_min_replicas_two(RunConfig& c);

// configure() without the clients' health check (scenario d).
void configure_stalled_primary(RunConfig& c);

// A Redis Cluster of 3+3 (cluster-node-timeout 2 s).
void configure_cluster(RunConfig& c);

void holder_with_old_primary(Run& r);
void cluster_holder_with_old_primary(Run& r);
void replica_on_holder_side(Run& r);
void promoted_without_replica(Run& r);
void grant_in_flight_as_vouch_ends(Run& r);

}  // namespace lockwire::races::partitions
