// The naive SET-NX-PX lock with switchable, well-known flaws: the races other lock
// implementations shipped, each one there so that a checker can be shown to fire.
#pragma once

#include <memory>

#include "lockwire/races/races.hpp"

namespace lockwire::races::detail {

struct Flaws {
  bool get_then_del = false;     // release: GET, then DEL in a second round trip
  bool blind_renew = false;      // renew: PEXPIRE without checking the owner
  bool give_up = false;          // deadline during an in-flight acquire: forget its reply
  bool replay_unknown = false;   // lost acquire reply: send the SET NX again
  bool assume_released = false;  // lost release reply: report success
  bool no_recheck = false;       // wait: no re-check after the subscription is confirmed
  bool no_expiry_wake = false;   // wait: only a release message wakes (no timer at expiry)
  bool wall_clock = false;       // lease validity judged on the wall clock
  bool reply_clock = false;      // lease validity counted from the reply, not the request
  bool poll = false;             // wait: sleep 10 ms and retry (no push wake-up)
  bool no_fencing = false;       // hands out token 0
  bool dup_shared = false;       // shared acquire: SADD's "already a member" is not a refusal
  bool raw_txn = false;          // renew: WATCH..EXEC on a bare socket shared by all renewals
  bool sub_per_wait = false;     // wait: SUBSCRIBE before the first attempt, UNSUBSCRIBE after
  bool late_message = false;     // sub_per_wait: a message proves the channel is subscribed
  bool ack_state = false;        // sub_per_wait: subscribed until the UNSUBSCRIBE ack arrives
};

[[nodiscard]] std::unique_ptr<Strategy> make_naive_strategy(sim::Node& node,
                                                            loop::ConnectionOptions options,
                                                            const Flaws& flaws);

}  // namespace lockwire::races::detail
