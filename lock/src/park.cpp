// Client::Core carrying out the acquire machine's parked hand-off (ClientOptions::parked_handoff;
// docs/handoff-one-rtt.md, section 5): the pool of parking connections and the one-time check
// of what parking needs, the park itself (arm, BZPOPMIN, the acquire block), its reply settled
// as an attempt's, CLIENT UNBLOCK and the bound on the reply after it, CLIENT KILL of a parking
// client whose stream failed. The rest of the driver is acquire_driver.cpp.
#include <algorithm>

#include "core.hpp"

namespace lockwire::lock {

namespace {
using Machine = detail::AcquireMachine;
using Event = Machine::Event;

}  // namespace

bool Client::Core::parks() const noexcept {
  return opts.parked_handoff && !link && opts.min_replicas.is_none() && park_refused.empty();
}

void Client::Core::note_taken(const std::string& holders) {
  const loop::MonoTime now = loop.now();
  std::erase_if(taken, [&](const Taken& t) { return t.holders == holders || now - t.at > kTakenFor; });
  if (taken.size() >= kMaxTaken) taken.erase(taken.begin());
  taken.push_back({holders, now});
}

bool Client::Core::take_taken(const std::string& holders) {
  if (taken.empty()) return false;
  const auto it = std::find_if(taken.begin(), taken.end(),
                               [&](const Taken& t) { return t.holders == holders; });
  if (it == taken.end()) return false;
  const bool fresh = loop.now() - it->at <= kTakenFor;
  taken.erase(it);
  return fresh;
}

// A parking connection that is not in use: an idle one, or a new one (started; it is used once
// it is ready on the Core's own server). nullptr when kMaxParkers are all busy.
Client::Core::Parker* Client::Core::take_parker() {
  // Closed ones (their stream failed while parked) go now, outside their own handlers.
  std::erase_if(parkers, [](const std::unique_ptr<Parker>& p) {
    return !p->busy && p->conn->state() == loop::ConnectionState::closed;
  });
  Parker* warming = nullptr;
  for (auto& p : parkers) {
    if (p->busy) continue;
    if (p->conn->state() == loop::ConnectionState::ready) return p.get();
    warming = p.get();
  }
  if (warming != nullptr || parkers.size() >= kMaxParkers) return warming;
  if (parkers.empty() && !park_checked) {
    // Once per Core, before the first park: may this client unblock and kill (park_check)?
    send(protocol::park_check(), guard([](Core* self, Ec ec, const loop::Replies& r) {
           if (is_transport(ec)) return;  // asked again with the next parker made
           if (std::string why = protocol::park_check_refusal(r); !why.empty()) {
             self->refuse_parking(why);
           } else {
             self->park_checked = true;
           }
         }));
  }
  auto& p = parkers.emplace_back(std::make_unique<Parker>());
  p->conn = std::make_unique<loop::Connection>(loop, park_options);
  // Its raises hold for this stream only: a reconnect may reach a dataset that lost them.
  p->conn->add_state_handler(
      [raw = p.get()](loop::ConnectionState, std::error_code) { raw->raised.clear(); });
  p->conn->start();
  return p.get();
}

// The elected waiter's acquire block, parked behind the pop on a connection of its own. When
// none is usable now (being made, on another server after a failover, all busy), or the fencing
// floor wants a fresh TIME first, the waiter waits for its push as it would without parking.
bool Client::Core::driven_park(const QueuePtr& q, const WaiterPtr& w, MachineEvent& next) {
  next = event(Event::Kind::not_sent);
  // One reading for the checks, the pop's timeout and the send (as in try_attempt). Whatever
  // stands in the way of an attempt is left to the attempt this falls back to (not_sent).
  const loop::MonoTime now = loop.now();
  if (closed || w->done || !parks() || gate(*w, now) != Gate::open) return true;
  Parker* p = take_parker();
  if (p == nullptr || !park_checked || p->conn->state() != loop::ConnectionState::ready ||
      p->conn->client_id() <= 0 || p->conn->server_address() != conn->server_address()) {
    return true;
  }
  // The pop ends by the wait's end at the latest, and within half the lease: a grant counts
  // from when the park was sent (the block runs later), so a long park would shorten it.
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(w->deadline - now);
  const std::int64_t timeout_ms =
      std::clamp<std::int64_t>(std::min<std::int64_t>(left.count(), w->ttl_ms / 2), 1, 10'000);
  p->busy = true;
  p->seq = ++park_seq;
  // The waiter's, not the queue's: a late reply of its park must not touch the next waiter's.
  w->park_id = p->conn->client_id();
  w->park_seq = p->seq;
  w->park_server = conn->server_address();
  q->state = Queue::State::in_flight;
  w->sent_probe = probes;
  // The floor is the Core's (the parking connection is on its server, and a reply counts only
  // while the Core's connection stays there: parked_here); the raise is left out only where
  // this parking connection's own block raised the key (its `raised`, as the Core's for its own
  // connection).
  const std::uint64_t floor = opts.fencing_tokens ? floor_for(*w) : no_floor(*w);
  const loop::MonoTime t_send = now;
  if (opts.fencing_tokens) {
    if (const loop::MonoTime* at = raised_at(p->raised, w->keys, now)) w->sent_raised_at = *at;
  }
  const bool raise = w->raises_floor();
  loop::Request block = opts.fencing_tokens
                            ? protocol::exclusive_acquire(w->keys, w->field, w->ttl_ms, floor,
                                                          raise, w->sent_fence_ttl_ms)
                            : protocol::exclusive_acquire_untokened(w->keys, w->field, w->ttl_ms);
  // One request: the pop and the block behind it are written together and answered together.
  loop::Request parked = protocol::park(w->keys, timeout_ms + 1000, timeout_ms, block);
  if (auto* m = metrics()) m->on_request(parked.commands);
  p->conn->send(std::move(parked), [wk = weak(), q, w, t_send, p, raise](Ec ec,
                                                                        const loop::Replies& r) {
    auto self = wk.lock();
    if (!self || self->closed) return;
    if (ec == loop::Errc::server_error) {
      // Refused (an ACL without BZPOPMIN or ZADD): the block behind it ran at once, as an
      // attempt; from now on waiters wait for pushes instead.
      const loop::Replies pop = r.first(protocol::kParkPopReplies);
      if (std::string why = protocol::park_refusal(pop); !why.empty()) self->refuse_parking(why);
    }
    // The connection hands over every reply of the request, or none (a failed stream).
    self->on_parked_reply(q, w, t_send, raise, p, ec, r.from(protocol::kParkPopReplies));
  });
  return false;
}

void Client::Core::on_parked_reply(const QueuePtr& q, const WaiterPtr& w, loop::MonoTime t_send,
                                   bool raised_floor, Parker* p, Ec ec, const loop::Replies& r) {
  p->busy = false;
  const std::int64_t id = w->park_id;
  const bool here = parked_here(*w);
  // The KILL goes wherever the main connection is not known to have moved from the parking
  // client's server (queued while it reconnects: a parked block must never grant after its
  // withdrawal, and a reconnect to the same server comes first).
  const bool kill_there = conn->server_address() == w->park_server;
  w->park_id = -1;
  w->park_seq = 0;
  if (!here && !is_transport(ec) && r.size() != 0) {
    // The main connection moved (a reconnect, maybe to a promoted replica: the parking one
    // does not follow +switch-master) after the park: this outcome is the old server's, whose
    // grant the vouch does not cover and whose token may be below the new primary's. Settled
    // as a parking stream that failed: withdrawn on the main connection, then tried again.
    ec = make_error_code(loop::Errc::closed);
  }
  if (is_transport(ec) || r.size() == 0) {
    const Ec why = ec ? ec : make_error_code(loop::Errc::protocol_error);
    const bool written = why != loop::Errc::not_sent;
    // (A KILL of its ID on another server would kill some other client there.)
    if (written && id > 0 && kill_there && !regressions.park_no_kill) {
      // The server may still hold that client, blocked with our block behind its pop (a
      // stream that failed on our side only): killed before anything else of this waiter is
      // sent, so that the block can never grant after its withdrawal.
      send(protocol::kill_client(id), [](Ec, const loop::Replies&) {});
    }
    if (p->conn->state() != loop::ConnectionState::closed) p->conn->close();
    if (!written) return drive(q, w, event(Event::Kind::not_sent));
    last_error = p->conn->last_error().empty() ? why.message() : p->conn->last_error();
    Event e = event(Event::Kind::transport);
    e.maybe_applied = !regressions.park_drop_unapplied;
    e.retryable = conn->state() != loop::ConnectionState::closed;
    e.error = lock_errc(map_transport(why));
    return drive(q, w, std::move(e));
  }
  if (regressions.park_drop_late_reply && w->machine->leaving()) {
    // The bug: the caller has gone, so the block's outcome is dropped as if nothing had run.
    Event e = event(Event::Kind::transport);
    e.retryable = false;
    return drive(q, w, std::move(e));
  }
  const protocol::AcquireReply a = acquire_reply(*w, raised_floor, r);
  note_raise(p->raised, *w, raised_floor, a, t_send);  // on the Core's server and floor (here)
  driven_reply(q, w, regressions.park_lease_from_reply ? loop.now() : t_send, a, r);
}

// The server refused what parking needs (its words): nobody parks from now on, and the
// parking connections go once idle; waiters wait for pushes, as without the option.
void Client::Core::refuse_parking(const std::string& why) {
  if (!park_refused.empty()) return;
  park_refused = why;
  for (auto& p : parkers) {
    if (!p->busy) p->conn->close();
  }
  if (auto* m = metrics()) {
    m->on_degraded("parked hand-off refused: waiters wait for pushes", why);
  }
}

// CLIENT UNBLOCK of the parking client on the main connection: its block runs now. Once that
// is answered (or failed), the block's reply is due: the server writes it before the UNBLOCK's
// own reply, in the same pass. A parking connection that has not brought it within
// kParkedReplyBound is stalled or half-open (it has no health check: a parked request waits
// as long as its pop): it is closed on our side, and its handler CLIENT KILLs it on the server
// and withdraws whatever the block may have left, as for any parking stream that failed.
// Without this, a waiter whose parking connection went half-open waits for a reply that never
// comes: answered at the settle bound with its queue stuck behind it, its grant (made when the
// UNBLOCK ran the block) held on the server until its TTL.
void Client::Core::driven_unpark(const QueuePtr& q, const WaiterPtr& w) {
  if (w->park_id <= 0) return;
  // The bug: woken by a release's token alone (or the pop's own timeout) until the wait ends.
  if (regressions.park_token_only && !w->machine->leaving()) return;
  const std::int64_t id = w->park_id;
  const std::uint64_t seq = w->park_seq;
  if (!parked_here(*w) || conn->state() != loop::ConnectionState::ready) {
    // The main connection is on another server now, came back since the park, or is not
    // ready (its next stream may be another server's): an UNBLOCK of that ID there would
    // unblock some other client. The parking connection is closed instead (from the loop, not
    // inside this resume), and its block settled as one whose stream failed.
    return watch_park(q, seq, Nanos{0});
  }
  send(protocol::unpark(id), guard([q, w, seq](Core* self, Ec, const loop::Replies&) {
         if (w->park_seq != seq) return;  // its reply came
         self->watch_park(q, seq, kParkedReplyBound);
       }));
}

bool Client::Core::parked_here(const Waiter& w) const {
  return w.sent_probe == probes && conn->server_address() == w.park_server;
}

void Client::Core::watch_park(const QueuePtr& q, std::uint64_t seq, Nanos after) {
  q->park_watch_seq = seq;
  queue_timer(q, &Queue::park_watch, &Core::on_park_watch).start(after);
}

void Client::Core::on_park_watch(const QueuePtr& q) {
  const std::uint64_t seq = q->park_watch_seq;
  if (seq == 0) return;
  for (auto& p : parkers) {
    // Still that park (a parker reused for a later one has another number).
    if (!p->busy || p->seq != seq) continue;
    p->conn->close();  // its handler (on_parked_reply) kills it on the server and withdraws
    return;
  }
}

void Client::Core::on_unpark_timer(const QueuePtr& q) {
  if (driven_head(*q) == nullptr) return;
  Event e = event(Event::Kind::timer);
  e.timer = Machine::Timer::unpark;
  drive(q, q->waiters.front(), std::move(e));
}

}  // namespace lockwire::lock
