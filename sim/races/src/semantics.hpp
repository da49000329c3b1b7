// Scenarios of the lock semantics beyond acquire/release (issue #20): upgrading a shared lease
// in place, persistent leases, counting semaphores. Listed in catalogue.cpp's table; defined in semantics.cpp.
#pragma once

#include "lockwire/races/races.hpp"

namespace lockwire::races::semantics {

void upgrade_with_writer_waiting(Run& r);
void two_readers_upgrade(Run& r);
void persistent_lease_contended(Run& r);
void semaphore_concurrent_requests(Run& r);
void lock_all_partial_failure(Run& r);
void lock_all_opposite_orders(Run& r);
void fair_fresh_attempt(Run& r);

}  // namespace lockwire::races::semantics
