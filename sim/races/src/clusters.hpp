// Scenarios on a simulated Redis Cluster (issue #14): 3 primaries n1..n3 with one replica each
// (n4..n6), every client given the seed list (RunConfig::cluster). Listed in catalogue.cpp's
// table; defined in clusters.cpp.
#pragma once

#include "lockwire/races/races.hpp"

namespace lockwire::races::clusters {

void configure_cluster(RunConfig& c);          // 3+3, replication lag 1 ms
void configure_lagging_cluster(RunConfig& c);  // 3+3, replication lag 300 ms
void moved_during_acquire(Run& r);
void ask_during_migration(Run& r);
void stale_slot_map_after_failover(Run& r);
void failover_during_hold(Run& r);
void crash_during_hold(Run& r);
void force_release_other_slot(Run& r);

}  // namespace lockwire::races::clusters
