// The acquire path: lock(), one attempt per resource queue at a time, the tracked wait, the
// server's wait queue, and the end of a wait (deadline, cancel) settled before the caller is
// answered. Every lock is decided by the sans-I/O acquire machine (acquire_machine.{hpp,cpp},
// driven from acquire_driver.cpp); what is here are the steps it uses: the bytes
// (send_attempt, wait_read, withdraw), the timers (deadline, settle), the local queue
// (advance) and the grant's hand-over.
#include "core.hpp"
#include "shard_link.hpp"

namespace lockwire::lock {

void Client::Core::wait_read(const QueuePtr& q, const WaiterPtr& w, bool with_hdel) {
  q->state = Queue::State::in_flight;
  q->stop_timers();
  if (std::exchange(w->taken, false) && regressions.park_taken_unread) {
    // The bug: the hint trusted, no block at all — as if read held, far back in the queue.
    MachineEvent e = event(MachineEvent::Kind::wait_read);
    e.rank = 2;
    e.holders = detail::AcquireMachine::Holders::held;
    e.doorbell_pttl = std::chrono::ceil<std::chrono::milliseconds>(w->deadline - loop.now()).count();
    return drive(q, w, e);
  }
  // Tracked reads only where the server accepted tracking; otherwise we poll (wait()).
  const bool track = caps.push_wakeups;
  bool clear_wake = false;
  loop::Request r;
  if (w->req.kind == Kind::exclusive) {
    // The doorbell lives for our remaining wait, at most kDoorbellMaxMs (then we re-arm it):
    // a waiter that vanishes leaves a doorbell that no longer rings after that.
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(w->deadline - loop.now());
    const std::int64_t door_ms = std::clamp<std::int64_t>(
        left.count(), 1, fair(*w) ? kFairDoorbellMs : protocol::kDoorbellMaxMs);
    // A parking client clears a stale wake token in the block that follows its losing attempt:
    // the lock is held (or was, a moment ago), so a token now would only run the next park's
    // block to lose. Later reads of the same wait leave tokens alone (one command less each).
    clear_wake = with_hdel && parks() && !fair(*w);
    r = protocol::exclusive_wait_read(w->keys, with_hdel ? std::string_view(w->field) : "",
                                      w->req.owner, w->ticket != 0 ? w->ticket : kLastTicket,
                                      door_ms, track, clear_wake);
    // From now on we may be in the queue (whatever becomes of the reply): leave it when done.
    q->queued = w->req.owner;
  } else {
    r = protocol::wait_read(w->keys, with_hdel ? std::string_view(w->field) : "", track);
  }
  send(std::move(r),
       guard([q, w, with_hdel, track, clear_wake](Core* self, Ec ec, const loop::Replies& rr) {
         self->driven_wait_read(q, w, ec, rr, with_hdel, track, clear_wake);
       }));
}

// ---- acquire -----------------------------------------------------------------------------
void Client::Core::complete(const WaiterPtr& w, Ec ec, Lease lease) {
  if (w->done) return;
  w->done = true;
  if (w->deadline_timer) w->deadline_timer->stop();
  if (w->settle_timer) w->settle_timer->stop();
  if (w->settle_armed) {
    w->settle_armed = false;
    drop_settled();
  }
  if (auto* m = metrics()) {
    const Nanos took = loop.now() - w->start;
    m->on_op(Op::acquire, w->req.kind, w->req.resource, ec, took);
    if (w->waited) m->on_wait(took, !ec);
  }
  if (w->routed) {
    // The failure known before the answer (a refused block), else the words it is told with.
    Failure f;
    if (ec) {
      f = w->failure.ec == ec ? std::move(w->failure) : Failure(ec, last_error);
      if (!f.redirect) f.redirect = std::move(w->watch_moved);
    }
    auto routed = std::move(w->routed);
    return routed(f, std::move(lease));
  }
  auto cb = std::move(w->cb);
  if (cb) cb(ec, std::move(lease));
}

Failure Failure::from_words(Ec e, std::string_view server, std::string words) {
  Failure f(e, std::move(words));
  // "MOVED <slot> <host:port>" (then " (EXECABORT ...)" for a block): for the cluster router.
  f.redirect = loop::cluster::parse_redirect(server.substr(0, server.find(" (")));
  if (server.starts_with("TRYAGAIN")) f.busy = Busy::tryagain;
  if (server.starts_with("CLUSTERDOWN")) f.busy = Busy::clusterdown;
  return f;
}

// The failure for a reply the protocol cannot use: the server's words (classified) when it
// said something, else Errc::protocol.
Failure Client::Core::refusal(const loop::Replies& r, std::string_view resource) {
  const std::string words = protocol::server_words(r);
  Failure f;
  if (words.empty()) {
    f = Failure(Errc::protocol, std::string(resource) + ": unexpected reply from the server");
  } else {
    const Ec ec = protocol::transient_server_error(words) ? Errc::server_unavailable
                                                          : Errc::server_refused;
    f = Failure::from_words(ec, words, std::string(resource) + ": " + words);
  }
  if (f.redirect && f.redirect->kind == loop::cluster::Redirect::Kind::moved && link) {
    link->moved(*f.redirect);
  }
  last_error = f.words;  // Client::last_error, a convenience
  return f;
}

// The wait of `w` ends with `why` (deadline, cancel). With a step in flight, the answer waits
// for its outcome (bounded by settle_timeout), so that a late grant or a claim of ours is
// withdrawn before the caller is told; otherwise there is nothing of ours on the server but
// the queue entry, which advance() hands on.
void Client::Core::give_up(const QueuePtr& q, const WaiterPtr& w, Ec why) {
  if (w->leaving()) return;
  const bool head = !q->waiters.empty() && q->waiters.front() == w;
  if (head && w->machine->step_in_flight() && regressions.answer_at_deadline) {
    complete(w, why);  // the bug: answered now; the machine still settles the step
  }
  MachineEvent e;
  if (why == Errc::cancelled) {
    e.kind = MachineEvent::Kind::cancel;
  } else {
    e.kind = MachineEvent::Kind::timer;
    e.timer = detail::AcquireMachine::Timer::deadline;
  }
  drive(q, w, std::move(e));
}

// After `after`, a waiter whose step is still unanswered is told outcome_unknown (with what
// may be left behind); the step's reply, if it ever comes, is still handled (a late grant is
// released, a claim withdrawn) while the client lives.
void Client::Core::start_settle(const QueuePtr& q, const WaiterPtr& w, Nanos after) {
  const loop::MonoTime at = loop.now() + after;
  if (settles.empty() || settles.back().at <= at) {
    // The usual case (every bound is settle_timeout long): in deadline order, one timer.
    if (w->settle_timer) w->settle_timer->stop();
    w->settle_armed = true;
    w->settle_at = at;
    w->settle_q = q;
    settles.push_back(Settle{at, w});
    if (settles_armed == kNever) {
      if (!settles_timer) {
        settles_timer = loop.make_timer([wk = weak()] {
          auto self = wk.lock();
          if (self && !self->closed) self->on_settles_timer();
        });
      }
      settles_armed = at;
      settles_timer->start(after);
    }
    return;
  }
  // A shorter bound than one already set: a timer of its own.
  if (w->settle_armed) {
    w->settle_armed = false;  // its entry in `settles` is stale now
    drop_settled();
  }
  if (!w->settle_timer) {
    w->settle_timer = waiter_timer(q, w, [](Core* self, const WaiterPtr& wt, const QueuePtr& qq) {
      self->settle_due(wt, qq);
    });
  }
  w->settle_timer->start(after);
}

void Client::Core::arm_deadline(const QueuePtr& q, const WaiterPtr& w) {
  w->deadline_timer = waiter_timer(q, w, [](Core* self, const WaiterPtr& wt, const QueuePtr& qq) {
    self->give_up(qq, wt, Errc::timed_out);
  });
  w->deadline_timer->start(w->req.wait);
}

void Client::Core::settle_due(const WaiterPtr& wt, const QueuePtr& qq) {
  MachineEvent e = event(MachineEvent::Kind::timer);
  e.timer = detail::AcquireMachine::Timer::settle;
  drive(qq, wt, std::move(e));
}

// An entry counts while its waiter is unanswered and the bound it records is the waiter's own.
void Client::Core::drop_settled() {
  while (!settles.empty()) {
    auto w = settles.front().w.lock();
    if (w && w->settle_armed && !w->done && w->settle_at == settles.front().at) break;
    settles.pop_front();
  }
}

void Client::Core::on_settles_timer() {
  settles_armed = kNever;
  const loop::MonoTime now = loop.now();
  while (!closed && !settles.empty()) {
    auto w = settles.front().w.lock();
    const loop::MonoTime at = settles.front().at;
    if (w && w->settle_armed && !w->done && w->settle_at == at && at > now) break;
    settles.pop_front();
    if (!w || !w->settle_armed || w->done || w->settle_at != at) continue;  // stale
    w->settle_armed = false;
    auto q = w->settle_q.lock();
    if (q) settle_due(w, q);  // may set new bounds (they arm the timer again)
  }
  if (closed || settles.empty() || settles.front().at >= settles_armed) return;
  settles_armed = settles.front().at;
  const Nanos left = settles_armed - now;
  settles_timer->start(left > Nanos{0} ? left : Nanos{0});
}

// Removes whatever claim or grant of `w` may exist (HDEL of our own field — and our shared
// companion — touches nothing of anyone else), then `then(absent)`: absent = the server
// answered, so nothing of ours is left. Retried while the connection comes back, at most a
// few times; the settle timer bounds how long the caller waits.
void Client::Core::withdraw(const QueuePtr& q, const WaiterPtr& w,
                            std::function<void(bool absent)> then, int tries) {
  q->state = Queue::State::in_flight;
  send(
      release_request(w->req.kind, w->keys, w->req.owner),
      guard([q, w, then = std::move(then), tries](Core* self, Ec ec, const loop::Replies&) mutable {
        if (is_transport(ec) && retryable(ec) && tries > 1 &&
            self->conn->state() != loop::ConnectionState::closed) {
          self->withdraw(q, w, std::move(then), tries - 1);
          return;
        }
        then(!is_transport(ec));
      }));
}

// Drops finished waiters at the head; starts the next attempt or retires the queue.
void Client::Core::advance(const QueuePtr& q) {
  while (!q->waiters.empty() && q->waiters.front()->done) q->waiters.pop_front();
  if (place_handed_on(*q)) leave_queue(q);  // our queued waiter is done: its place goes on
  if (q->waiters.empty()) {
    q->state = Queue::State::idle;
    q->stop_timers();
    std::erase(upgrades, q);
    if (!q->one_shot) {
      auto it = queues.find(q->keys.holders);
      if (it != queues.end() && it->second == q) queues.erase(it);
    }
    if (!q->pooled && spare_queues.size() < kMaxSpareQueues) {
      q->pooled = true;
      spare_queues.push_back(q);
    }
    return;
  }
  attempt(q);
}

QueuePtr Client::Core::fresh_queue() {
  while (!spare_queues.empty()) {
    QueuePtr q = std::move(spare_queues.back());
    spare_queues.pop_back();
    q->pooled = false;
    // Still held (a callback of its last use may yet run on it): never shared with a new use.
    if (q.use_count() != 1) continue;
    q->reset();
    return q;
  }
  return std::make_shared<Queue>();
}

// Waits for the next connect probe: registered queues are woken by wake_all(), one-shot ones
// from `parked`.
void Client::Core::park_until_probed(const QueuePtr& q) {
  q->state = Queue::State::need_ready;
  if (q->one_shot && std::find(parked.begin(), parked.end(), q) == parked.end()) {
    parked.push_back(q);
  }
}

void Client::Core::attempt(const QueuePtr& q) {
  while (!q->waiters.empty() && q->waiters.front()->done) q->waiters.pop_front();
  if (q->waiters.empty()) {
    advance(q);
    return;
  }
  if (closed) return;
  q->stop_timers();
  // Woken (our turn, the connection ready, the vouch back): the machine decides.
  drive(q, q->waiters.front(), event(MachineEvent::Kind::wake));
}

// Lock keys may vanish on this live connection (the fence key evicted): the floor must be the
// server's clock now, not at the connect probe, or the next token repeats one handed out since.
// One more round trip per attempt, only in this degraded mode (docs/protocol.md).
bool Client::Core::floor_read_every_attempt() const noexcept {
  return opts.allow_eviction && caps.may_evict() && caps.clock_known &&
         !regressions.counter_tokens;
}

void Client::Core::read_floor_now(std::function<void(Core*, Ec)> then) {
  const loop::MonoTime sent = loop.now();
  floor_asked_at = sent;
  send(protocol::time_request(),
       guard([sent, then = std::move(then)](Core* self, Ec ec, const loop::Replies& r) {
         if (is_transport(ec) || r.size() == 0) {
           return then(self, ec ? ec : make_error_code(loop::Errc::protocol_error));
         }
         if (const auto us = protocol::parse_time(r[0])) {
           self->server_us = *us;
           self->floor_read_at = sent;
         }
         then(self, Ec{});
       }),
       this_stream_only());
}

const loop::MonoTime* Client::Core::raised_at(const detail::RaisedFences& on,
                                              const protocol::Keys& k,
                                              loop::MonoTime now) const {
  // Where keys may vanish on a live connection the floor is read before every attempt; where
  // the block may be sent on to another node (ASK) that node's counter is not ours to know.
  if ((opts.allow_eviction && caps.may_evict()) || link) return nullptr;
  return on.raised_at(k.fence, now, fence_ttl_ms());
}

void Client::Core::note_raise(detail::RaisedFences& on, const Waiter& w, bool raised_floor,
                              const protocol::AcquireReply& a, loop::MonoTime t_send) {
  if (!opts.fencing_tokens || !raised_floor || w.sent_probe != probes ||
      regressions.counter_tokens) {
    return;
  }
  if (a.outcome == protocol::Outcome::granted || a.outcome == protocol::Outcome::contended ||
      a.outcome == protocol::Outcome::already_held) {
    // The block ran on that connection, its ZADD GT and PEXPIRE included: the fence is at the
    // floor now, and lives fence_expiry_ms from then.
    on.record(w.keys.fence, t_send);
  }
}

void Client::Core::forget_raises() noexcept {
  raised.clear();
  for (auto& p : parkers) p->raised.clear();
}

void Client::Core::forget_raise(std::string_view fence) {
  raised.forget(fence);
  for (auto& p : parkers) p->raised.forget(fence);
}

void Client::Core::send_attempt(const QueuePtr& q, const WaiterPtr& w, loop::MonoTime t_send) {
  w->watch_moved.reset();  // of an earlier step
  if (fair(*w) && !(regressions.fair_fresh_jumps && !w->waited && w->ticket == 0)) {
    const std::uint64_t ticket_floor = floor_for(*w);
    watch(protocol::fair_read(w->keys, ticket_floor, w->sent_fence_ttl_ms),
          inline_watch([q, w, t_send](Core* self, Ec ec, const loop::Replies& r,
                                      loop::WatchTxn txn) {
            self->driven_fair_read(q, w, t_send, ec, r, std::move(txn));
          }));
  } else if (w->upgrade) {
    watch(protocol::upgrade_watch(w->keys, w->req.owner),
          inline_watch([q, w, t_send](Core* self, Ec ec, const loop::Replies& r,
                                      loop::WatchTxn txn) {
            self->driven_upgrade_read(q, w, t_send, ec, r, std::move(txn));
          }));
  } else if (w->req.kind == Kind::exclusive && !opts.fencing_tokens) {
    // No token (ClientOptions::fencing_tokens): no floor, nothing bound to this stream.
    no_floor(*w);
    send(protocol::exclusive_acquire_untokened(w->keys, w->field, w->ttl_ms),
         inline_reply([q, w, t_send](Core* self, Ec ec, const loop::Replies& r) {
           self->on_exclusive_reply(q, w, t_send, ec, r);
         }));
  } else if (w->req.kind == Kind::exclusive) {
    // Bound to this stream: its floor is this server's clock (RequestOptions::this_stream_only).
    const loop::MonoTime* raised_when = raised_at(raised, w->keys, t_send);
    w->sent_probe = probes;
    const std::uint64_t floor = floor_for(*w);
    if (raised_when != nullptr) w->sent_raised_at = *raised_when;
    send(protocol::exclusive_acquire(w->keys, w->field, w->ttl_ms, floor, w->raises_floor(),
                                     w->sent_fence_ttl_ms),
         inline_reply([q, w, t_send](Core* self, Ec ec, const loop::Replies& r) {
           self->on_exclusive_reply(q, w, t_send, ec, r);
         }),
         this_stream_only());
  } else if (w->req.permits > 0 && regressions.semaphore_unwatched) {
    // The bug: the count is read, then the grant sent, and nothing ties the two together.
    send(loop::RequestBuilder()
             .add("HGETALL", w->keys.holders)
             .add("EXISTS", w->keys.companion(w->req.owner))
             .done(),
         guard([q, w, t_send](Core* self, Ec ec, const loop::Replies& r) {
           self->driven_shared_read(q, w, t_send, ec, r, loop::WatchTxn{});
         }));
  } else {
    watch(protocol::shared_watch(w->keys, w->req.owner),
          inline_watch([q, w, t_send](Core* self, Ec ec, const loop::Replies& r,
                                      loop::WatchTxn txn) {
            self->driven_shared_read(q, w, t_send, ec, r, std::move(txn));
          }));
  }
}

// A transport error as the caller sees it, with the connection's words in last_error.
Failure Client::Core::transport(Ec ec) {
  const std::string& detail = conn->last_error();
  Failure f(map_transport(ec), detail.empty() ? ec.message() : detail);
  last_error = f.words;
  return f;
}

void Client::Core::on_exclusive_reply(const QueuePtr& q, const WaiterPtr& w, loop::MonoTime t_send,
                                      Ec ec, const loop::Replies& r) {
  if (is_transport(ec) || r.size() == 0) {
    const Ec why = ec ? ec : make_error_code(loop::Errc::protocol_error);
    return drive(q, w, transport_event(why, ec == loop::Errc::outcome_unknown));
  }
  const protocol::AcquireReply a = acquire_reply(*w, w->raises_floor(), r);
  note_raise(raised, *w, w->raises_floor(), a, t_send);
  // Every sender of this block is driven by the machine (an exclusive lock, fair or not, that
  // is not an upgrade).
  driven_reply(q, w, t_send, a, r);
}

// The exclusive acquire block's reply, read as the block was built: with the token (raising the
// floor or not), or without (ClientOptions::fencing_tokens).
protocol::AcquireReply Client::Core::acquire_reply(const Waiter& w, bool raise_floor,
                                                   const loop::Replies& r) const {
  return opts.fencing_tokens
             ? protocol::parse_exclusive_acquire(r.back(), raise_floor, w.sent_fence_ttl_ms > 0)
             : protocol::parse_exclusive_acquire_untokened(r.back());
}

// Our place in the server's wait queue as the last wait block read it.
void Client::Core::note_place(Queue& q, std::string first, std::int64_t rank,
                              std::vector<std::string> behind) {
  q.rank = rank;
  if (first != q.suspect) q.suspect.clear();
  q.first = std::move(first);
  q.behind = std::move(behind);
}

// Caching refused inside a wait block although the probe accepted it: waiters poll from now on.
void Client::Core::tracking_refused_in_block(const loop::Replies& r) {
  if (!caps.push_wakeups) return;
  caps.push_wakeups = false;
  caps.tracking_error = protocol::server_words(r);
  if (auto* m = metrics()) {
    m->on_degraded("push wake-ups refused: waiters poll, force-release is seen at renewal",
                   caps.tracking_error);
  }
}

// The n-th poll's delay: poll_initial * 2^n, at most poll_max, jittered to [d/2, d].
Nanos Client::Core::poll_delay(int n) {
  const Nanos cap = std::max(opts.poll_max, Nanos(std::chrono::milliseconds(1)));
  Nanos d = std::max(opts.poll_initial, Nanos(std::chrono::milliseconds(1)));
  for (int i = 0; i < n && d < cap; ++i) d *= 2;
  d = std::min(d, cap);
  const auto half = d.count() / 2;
  return Nanos(half +
               static_cast<std::int64_t>(loop.random() % static_cast<std::uint64_t>(half + 1)));
}

void Client::Core::replicated(const std::string& resource, std::function<void(Ec)> then) {
  const ReplicaAcks acks = opts.min_replicas;
  if (acks.is_none()) return then({});
  int configured = 0;
  if (acks.is_majority()) {
    configured = conn->known_replicas();
    if (configured < 0 && role_probe != probes) {
      // No sentinel counts this primary's replicas: ask the primary, once per connection.
      const std::uint64_t probe = probes;
      send(protocol::role_request(),
           guard([probe, resource, then = std::move(then)](Core* self, Ec ec,
                                                          const loop::Replies& r) mutable {
             if (is_transport(ec) || r.size() != 1) {
               return then(ec ? ec : make_error_code(loop::Errc::protocol_error));
             }
             const std::optional<int> n = protocol::parse_role_replicas(r[0]);
             if (!n) {
               if (!protocol::server_words(r).empty()) return then(self->refused(r, resource));
               self->last_error = resource + ": ROLE does not name this server a primary, so "
                                  "its replicas cannot be counted (min_replicas: majority)";
               return then(Errc::not_replicated);
             }
             // A reading of an older connection is not this one's: read again.
             if (self->probes == probe) {
               self->role_replicas = *n;
               self->role_probe = probe;
             }
             self->replicated(resource, std::move(then));
           }),
           this_stream_only());
      return;
    }
    if (configured < 0) configured = role_replicas;
  }
  const int needed = acks.needed(configured);
  if (needed <= 0) return then({});
  const std::int64_t ms = std::max<std::int64_t>(1, ttl_millis(opts.replica_timeout));
  send(protocol::wait_replicas(needed, ms),
       guard([resource, ms, needed, configured, majority = acks.is_majority(),
              then = std::move(then)](Core* self, Ec ec, const loop::Replies& r) {
         if (is_transport(ec) || r.size() != 1) {
           return then(ec ? ec : make_error_code(loop::Errc::protocol_error));
         }
         const std::optional<std::int64_t> acked = protocol::parse_wait_replicas(r[0]);
         if (!acked) return then(self->refused(r, resource));
         if (*acked >= needed) return then({});
         self->last_error = resource + ": acknowledged by " + std::to_string(*acked) + " of " +
                            std::to_string(needed) + " replicas within " + std::to_string(ms) +
                            " ms (WAIT" +
                            (majority ? std::string("; a majority of ") +
                                            std::to_string(configured) + " replicas" : "") +
                            ")";
         then(Errc::not_replicated);
       }));
}

void Client::Core::hand_over(const WaiterPtr& w, std::uint64_t token,
                             loop::MonoTime t_send) {
  auto d = std::make_shared<detail::LeaseData>();
  d->resource = w->req.resource;
  d->owner = w->req.owner;
  d->kind = w->req.kind;
  d->token = token;
  d->ttl = w->req.ttl;
  d->end = t_send + w->req.ttl;
  d->valid_until = counted_until(d->end);
  // The waiter is answered below and never steps again: its keys move to the lease.
  d->keys = w->upgrade ? w->keys : std::move(w->keys);
  // registry_key(), built in place: one allocation of the right size, no temporary.
  d->registry_key.reserve(d->keys.holders.size() + 1 + w->req.owner.size());
  d->registry_key.append(d->keys.holders).push_back('\0');
  d->registry_key.append(w->req.owner);
  d->core = weak_from_this();
  d->auto_renew = w->req.auto_renew;
  d->on_lost = std::move(w->req.on_lost);
  if (LeasePtr from = w->upgrade ? shared_lease_of(w->keys, w->req.owner) : nullptr) {
    // Promoted in place: the shared lease is over (released, not lost: no on_lost for it), and
    // its loss notice, unless the caller gave a new one, now watches the exclusive lease.
    if (!d->on_lost) d->on_lost = std::move(from->on_lost);
    from->state.store(LeaseState::released);
    drop_lease_timers(from);
  }
  register_lease(d);
  if (regressions.persist_forever && is_forever(d->ttl)) {
    // The bug: no TTL at all; a contender's acquire block (PEXPIRE .. NX) then sets its own.
    send(loop::RequestBuilder().add("PERSIST", d->keys.holders).done(), [](Ec, const loop::Replies&) {});
  }
  arm_lease_timers(d);
  if (watch_evictions()) check_lease(d);  // tracks the holder set: evictions reach us
  complete(w, {}, Lease(d));
}

void Client::Core::lock(LockRequest req, AcquireHandler handler,
                        std::function<void(const Failure&, Lease)> routed) {
  Core& c = *this;
  auto fail = [&](Ec ec) {
    if (auto* m = c.metrics()) m->on_op(Op::acquire, req.kind, req.resource, ec, Nanos{0});
    if (routed) {
      return c.loop.post([h = std::move(routed), ec] { h(Failure(ec), Lease{}); });
    }
    c.loop.post([h = std::move(handler), ec] {
      if (h) h(ec, Lease{});
    });
  };
  if (c.closed) return fail(Errc::closed);
  if (auto ec = validate(req, &last_error)) return fail(ec);  // why: Client::last_error
  auto w = std::make_shared<Waiter>();
  w->keys = protocol::make_keys(c.opts.prefix, req.resource);
  c.scratch_key.assign(w->keys.holders).push_back('\0');
  c.scratch_key.append(req.owner);  // registry_key(), without a new string per call
  if (auto it = c.leases.find(c.scratch_key); it != c.leases.end()) {
    if (auto d = it->second.lock(); d && d->state.load() == LeaseState::held) {
      return fail(Errc::already_held);
    }
  }
  w->field = protocol::field(req.kind, req.owner);
  w->ttl_ms = ttl_millis(req.ttl);
  w->start = c.loop.now();
  w->deadline = w->start + req.wait;
  w->req = std::move(req);
  w->cb = std::move(handler);
  w->routed = std::move(routed);

  // The machine arms its own deadline (or the one attempt's settle bound).
  QueuePtr q;
  if (w->req.wait == Nanos{0}) {
    q = c.fresh_queue();  // one attempt, independent of local waiters
    q->one_shot = true;
  } else {
    auto& slot = c.queues[w->keys.holders];
    if (!slot) {
      slot = c.fresh_queue();
      slot->keys = w->keys;
    }
    q = slot;
  }
  if (q->one_shot) {
    if (c.one_shots.size() >= c.one_shots_sweep_at) {
      std::erase_if(c.one_shots, [](const std::weak_ptr<Waiter>& x) {
        auto p = x.lock();
        return !p || p->done;
      });
      // Swept again once it has doubled: amortised O(1) per attempt, however many are live (a
      // fixed threshold swept every live one-shot on every attempt once 64 were in flight).
      c.one_shots_sweep_at = std::max<std::size_t>(64, 2 * c.one_shots.size());
    }
    c.one_shots.push_back(w);
  }
  // Idle: nobody of ours is ahead (advance() retires a queue once its waiters are done).
  const bool first = q->state == Queue::State::idle;
  q->waiters.push_back(w);
  detail::AcquireMachine::Options mo;
  mo.settle_timeout = c.opts.settle_timeout;
  mo.fair = fair(*w);
  mo.shared = w->req.kind == Kind::shared;
  mo.fair_doorbell_ms = kFairDoorbellMs;
  mo.park = !mo.shared && !mo.fair && !q->one_shot && c.parks();
  w->machine.emplace(mo);
  MachineEvent e;  // start
  e.wait = w->req.wait;
  e.behind = !first;
  if (first && mo.park && c.take_taken(w->keys.holders)) {
    e.taken = w->taken = true;
    // No attempt burns a token for our place in P{R}:q: the server's clock as we reckon it.
    w->ticket = c.queue_ticket();
  }
  c.drive(std::move(q), std::move(w), std::move(e));
}

void Client::Core::cancel(std::string_view resource, std::string_view owner) {
  Core& c = *this;
  if (c.closed) return;
  const std::string holders = protocol::make_keys(c.opts.prefix, resource).holders;
  std::vector<std::pair<QueuePtr, WaiterPtr>> mine;
  auto collect = [&](const QueuePtr& q) {
    for (const auto& w : q->waiters) {
      if (w->req.owner == owner) mine.emplace_back(q, w);
    }
  };
  if (auto it = c.queues.find(holders); it != c.queues.end()) collect(it->second);
  for (const auto& q : c.upgrades) {
    if (q->keys.holders == holders) collect(q);
  }
  for (const auto& [q, w] : mine) c.give_up(q, w, Errc::cancelled);
}

}  // namespace lockwire::lock
