// Scenarios of the parked hand-off (ClientOptions::parked_handoff, issue #30;
// docs/handoff-one-rtt.md): the elected waiter's acquire block parked behind a blocking pop on a
// connection of its own, run by a release's wake token. Their configure() turns the option on
// for every client, so `lockwire` there is `lockwire-parked`; each names the park-* broken
// strategy it defeats. Listed in catalogue.cpp's table; defined in parked.cpp.
#pragma once

#include "lockwire/races/races.hpp"

namespace lockwire::races::parked {

void stale_wake_token(Run& r);
void wait_cancelled(Run& r);
void wait_deadline(Run& r);
void release_lost(Run& r);
void connection_dropped(Run& r);
void connection_half_open(Run& r);
void connection_stalled(Run& r);
void grant_reply_held_by_pause(Run& r);
void relock_at_once(Run& r);
// Every client of these scenarios with ClientOptions::parked_handoff (StrategyOptions).
void configure(RunConfig& c);

}  // namespace lockwire::races::parked
