// Scenarios behind simulated sentinels (issue #15): a graceful failover mid-hold, a crash
// failover that loses the last grant and its token, and an old primary that stays writable.
// Listed in catalogue.cpp's table; defined in failovers.cpp.
#pragma once

#include "lockwire/races/races.hpp"

namespace lockwire::races::failovers {

void configure_sentinels(RunConfig& c);          // replica lag 1 ms
void configure_lagging_replica(RunConfig& c);    // replica lag 300 ms
void graceful_failover_mid_hold(Run& r);
void crash_failover_lost_token(Run& r);
void old_primary_still_writable(Run& r);
void reconfirm_after_switch(Run& r);

}  // namespace lockwire::races::failovers
