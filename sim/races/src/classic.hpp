// The classic lock races (delete-wrong-lock, extend-wrong-lock, lost replies, pauses, wake-ups,
// split brain, ...), one script each. Listed in catalogue.cpp's table; defined in scenarios.cpp.
#pragma once

#include "lockwire/races/races.hpp"

namespace lockwire::races::classic {

void delete_wrong_lock(Run& r);
void extend_wrong_lock(Run& r);
void wait_deadline_during_command(Run& r);
void acquire_reply_lost(Run& r);
void release_reply_lost(Run& r);
void pause_beyond_ttl(Run& r);
void notify_before_subscribe(Run& r);
void expiry_wake(Run& r);
void many_waiters_one_subscription(Run& r);
void waiters_stay_quiet(Run& r);
void reconnect_during_wait(Run& r);
void split_frame_push(Run& r);
void pause_with_replies_in_flight(Run& r);
void force_release_while_waiting(Run& r);
void client_wall_clock_step(Run& r);
void server_clock_jump_forward(Run& r);
void failover_before_replication(Run& r);
void restart_without_persistence(Run& r);
void restart_with_persistence(Run& r);
void fence_expired_during_pause(Run& r);
void fence_expired_under_delayed_block(Run& r);
void configure_short_fence_ttl(RunConfig& c);
void duplicate_shared_acquire(Run& r);
void two_transactions_one_connection(Run& r);
void message_after_unsubscribe(Run& r);
void unsubscribe_ack_lost(Run& r);
void split_brain_reconnect(Run& r);
void split_brain_late_acquire(Run& r);

}  // namespace lockwire::races::classic
