// The sentinels' vouch on the lock side (core.hpp, `horizon`): a lease counts only while no
// failover away from its primary can have completed. The sentinels' side — what they are
// asked and what their answers bound — is loop/src/sentinel_vouch.hpp; docs/protocol.md,
// *Partitions*, has the proof.
#include "core.hpp"

namespace lockwire::lock {

using detail::LeasePtr;

// A sentinel answered: the horizon may have moved either way.
void Client::Core::on_vouch() {
  const loop::MonoTime now = loop.now();
  const bool was_vouched = horizon > now;
  horizon = vouched_until();
  for (auto& [k, wl] : leases) {
    auto d = wl.lock();
    if (d && d->state.load() == LeaseState::held && !d->suspended) {
      d->valid_until = counted_until(d->end);
    }
  }
  if (horizon == kNever) {
    // No limit (a cluster whose node timeout cannot be read): nothing to watch, but what
    // waited for a vouch goes on.
    if (horizon_timer) horizon_timer->stop();
  } else {
    start_horizon_timer(horizon > now ? horizon - now : Nanos{0});
    if (horizon <= now) return;
  }
  if (reconfirm_pending && caps.probed) {
    reconfirm_pending = false;
    reconfirm_leases();
  }
  if (!was_vouched && caps.probed) {
    wake_all();
    for (auto& q : std::exchange(parked, {})) attempt(q);
  }
}

// A lease that counts up to the vouch must hear when the vouch ends. The horizon timer is armed
// by sentinel and node answers (on_vouch), but a vouch can also begin by time alone (a run that
// has outlived the sentinels' memory of "down" answers), with no answer since: cut off from
// every sentinel, nothing would then arm it, and a lease granted in that window was never told
// it ended (partition swarm, seed 5018892: a release reported success on the old primary 3.4 s
// after the lease stopped counting). Called for every lease that starts or moves to a Core.
void Client::Core::arm_horizon() {
  const loop::MonoTime until = vouched_until();
  if (until == kNever) return;  // no vouch in play: no clock reading either
  const loop::MonoTime now = loop.now();
  // Not vouched now (a lease just moved here from another shard's Core, say): nothing to end
  // yet; on_vouch arms the timer once answers vouch for this primary.
  if (until <= now) return;
  if (horizon_timer && horizon_timer->active() && horizon == until) return;
  horizon = until;
  start_horizon_timer(until - now);
}

void Client::Core::start_horizon_timer(Nanos after) {
  if (!horizon_timer) {
    horizon_timer = loop.make_timer([wk = weak()] {
      auto self = wk.lock();
      if (self && !self->closed) self->on_horizon();
    });
  }
  horizon_timer->start(after);
}

// The horizon passed with no newer vouch: a failover may complete from now on, so no lease on
// this primary counts any longer. Suspended leases (a move's re-confirmation pending) are
// already not counted; they end at their TTL unless re-confirmed once the vouch is back.
void Client::Core::on_horizon() {
  horizon = vouched_until();
  if (horizon > loop.now()) return on_vouch();
  std::vector<LeasePtr> held;
  for (auto& [k, wl] : leases) {
    auto d = wl.lock();
    if (d && d->state.load() == LeaseState::held && !d->suspended) held.push_back(std::move(d));
  }
  if (held.empty()) return;
  const std::string why = vouch_words() + ": a failover may complete, so the lease no longer counts";
  for (const auto& d : held) {
    last_error = d->resource + ": " + why;
    lose(d, Errc::lost);
  }
}

// Who no longer vouches, in their words: the cluster's primaries or the sentinels.
std::string Client::Core::vouch_words() const {
  const bool shard = shard_vouch <= loop.now();
  return std::string(shard ? "the cluster's primaries" : "the sentinels") + " do not vouch for " +
         conn->server_address() + " (" + (shard ? shard_vouch_detail : conn->vouch_detail()) + ")";
}

}  // namespace lockwire::lock
