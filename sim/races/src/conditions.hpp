// Scenarios on servers an operator changed (issue #13): CLIENT PAUSE, ACL users, maxmemory.
// Listed in catalogue.cpp's table; defined in conditions.cpp.
#pragma once

#include "lockwire/races/races.hpp"

namespace lockwire::races::conditions {

void pause_during_acquire_deadline(Run& r);
void wait_block_refused(Run& r);
void configure_wait_block_refused(RunConfig& c);
void tracking_refused(Run& r);
void configure_tracking_refused(RunConfig& c);
void lock_keys_evicted(Run& r);
void configure_lock_keys_evicted(RunConfig& c);
void wait_queue_leave_refused(Run& r);

}  // namespace lockwire::races::conditions
