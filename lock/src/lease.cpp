// Leases once granted: expiry and auto-renew timers, renew (WATCH/MULTI), loss.
#include "core.hpp"

namespace lockwire::lock {

// --- Lease -------------------------------------------------------------------------------------

const std::string& Lease::resource() const noexcept {
  return d_->resource;
}
const std::string& Lease::owner() const noexcept {
  return d_->owner;
}
Kind Lease::kind() const noexcept {
  return d_->kind;
}
std::uint64_t Lease::token() const noexcept {
  return d_->token;
}
Nanos Lease::ttl() const noexcept {
  return d_->ttl;
}
LeaseState Lease::state() const noexcept {
  return d_->state.load(std::memory_order_acquire);
}
loop::MonoTime Lease::valid_until() const noexcept {
  return d_->valid_until;
}

// ---- leases ------------------------------------------------------------------------------
void Client::Core::arm_lease_timers(const LeasePtr& d) {
  arm_horizon();  // a persistent lease counts up to the vouch too
  if (is_forever(d->ttl)) return;  // persistent: nothing to renew, no expiry to count down
  std::weak_ptr<detail::LeaseData> wd = d;
  arm_expiry(d);
  if (d->auto_renew) {
    if (!d->renew_timer) {
      d->renew_timer = loop.make_timer([wk = weak(), wd] {
        auto self = wk.lock();
        auto dd = wd.lock();
        if (self && dd) self->auto_renew(dd);
      });
    }
    const auto period = Nanos(static_cast<std::int64_t>(
        static_cast<double>(d->ttl.count()) * std::clamp(opts.renew_fraction, 0.05, 0.9)));
    d->renew_timer->start(std::max(period, Nanos(std::chrono::milliseconds(1))));
  }
}

// The lease is reported lost at d->end unless it is renewed (re-armed) or stopped before.
void Client::Core::arm_expiry(const LeasePtr& d) {
  const std::uint64_t gen = ++d->expiry_gen;  // any earlier entry of this lease is stale now
  auto later = [](const Expiry& a, const Expiry& b) { return a.at > b.at; };
  if (expiries.size() >= expiries_compact_at) {
    std::erase_if(expiries, [](const Expiry& e) {
      auto dd = e.d.lock();
      return !dd || dd->expiry_gen != e.gen;
    });
    std::make_heap(expiries.begin(), expiries.end(), later);
    expiries_compact_at = std::max<std::size_t>(64, 2 * expiries.size());
  }
  expiries.push_back(Expiry{d->end, gen, d});
  std::push_heap(expiries.begin(), expiries.end(), later);
  if (d->end < expiries_armed) {
    if (!expiries_timer) {
      expiries_timer = loop.make_timer([wk = weak()] {
        auto self = wk.lock();
        if (self && !self->closed) self->on_expiries_timer();
      });
    }
    expiries_armed = d->end;
    const Nanos left = d->end - loop.now();
    expiries_timer->start(left > Nanos{0} ? left : Nanos{0});
  }
}

// Every lease whose end has come without a renewal is lost (as its own timer reported it).
void Client::Core::on_expiries_timer() {
  expiries_armed = kNever;
  auto later = [](const Expiry& a, const Expiry& b) { return a.at > b.at; };
  const loop::MonoTime now = loop.now();
  while (!closed && !expiries.empty() && expiries.front().at <= now) {
    std::pop_heap(expiries.begin(), expiries.end(), later);
    Expiry e = std::move(expiries.back());
    expiries.pop_back();
    auto d = e.d.lock();
    if (d && d->expiry_gen == e.gen) lose(d, Errc::lost);  // may arm or stop others
  }
  if (!closed) rearm_expiries();
}

// Arms the timer at the first entry that still counts (stale ones at the front are dropped).
void Client::Core::rearm_expiries() {
  auto later = [](const Expiry& a, const Expiry& b) { return a.at > b.at; };
  while (!expiries.empty()) {
    auto d = expiries.front().d.lock();
    if (d && d->expiry_gen == expiries.front().gen) break;
    std::pop_heap(expiries.begin(), expiries.end(), later);
    expiries.pop_back();
  }
  if (expiries.empty() || expiries.front().at >= expiries_armed) return;
  expiries_armed = expiries.front().at;
  const Nanos left = expiries_armed - loop.now();
  expiries_timer->start(left > Nanos{0} ? left : Nanos{0});
}

void Client::Core::stop_lease_timers(const LeasePtr& d) noexcept {
  ++d->expiry_gen;
  if (d->renew_timer) d->renew_timer->stop();
}

// A lease handle may outlive the loop: its timers go as soon as it is no longer held.
void Client::Core::drop_lease_timers(const LeasePtr& d) noexcept {
  ++d->expiry_gen;
  d->renew_timer.reset();
}

void Client::Core::forget(const LeasePtr& d) {
  auto it = leases.find(d->registry_key);
  if (it != leases.end()) {
    auto cur = it->second.lock();
    if (!cur || cur == d) {
      auto node = leases.extract(it);
      if (spare_lease_nodes.size() < kMaxSpareLeaseNodes) {
        node.mapped().reset();  // a weak_ptr would keep the lease's memory
        spare_lease_nodes.push_back(std::move(node));
      }
    }
  }
}

// leases[d->registry_key] = d, in a kept node when there is one.
void Client::Core::register_lease(const LeasePtr& d) {
  if (spare_lease_nodes.empty()) {
    leases[d->registry_key] = d;
    return;
  }
  auto node = std::move(spare_lease_nodes.back());
  spare_lease_nodes.pop_back();
  node.key() = d->registry_key;  // into the node's own buffer
  node.mapped() = d;
  auto r = leases.insert(std::move(node));
  if (!r.inserted) {  // the key had an entry already (a lease no longer held): replaced
    r.position->second = d;
    r.node.mapped().reset();
    spare_lease_nodes.push_back(std::move(r.node));
  }
}

// Tells the holder its lease is gone (once).
void Client::Core::lose(const LeasePtr& d, Ec why) {
  LeaseState expected = LeaseState::held;
  if (!d->state.compare_exchange_strong(expected, LeaseState::lost)) return;
  drop_lease_timers(d);
  forget(d);
  if (auto* m = metrics()) m->on_lease_lost(d->resource, why);
  if (d->on_lost) d->on_lost(why);
}

void Client::Core::auto_renew(const LeasePtr& d) {
  if (d->state.load() != LeaseState::held || d->renew_in_flight) return;
  do_renew(d, [wk = weak(), wd = std::weak_ptr<detail::LeaseData>(d)](Ec ec) {
    auto self = wk.lock();
    auto dd = wd.lock();
    if (!self || !dd || self->closed || dd->state.load() != LeaseState::held) return;
    // Transient failure: try again at the next period; the expiry timer reports loss if no
    // renewal is confirmed in time.
    if (ec && dd->renew_timer) dd->renew_timer->start(std::max(dd->ttl / 10, Nanos(1'000'000)));
  });
}

void Client::Core::do_renew(const LeasePtr& d, FailureHandler done, bool keep_end) {
  d->renew_in_flight = true;
  const loop::MonoTime t_send = loop.now();
  watch(protocol::renew_watch(d->kind, d->keys, d->owner),
        guard([d, t_send, keep_end, done = std::move(done)](
                  Core* self, Ec ec, const loop::Replies& r, loop::WatchTxn txn) mutable {
          if (is_transport(ec) || !txn.valid()) {
            d->renew_in_flight = false;
            // A refused WATCH (CLUSTERDOWN on a cluster's minority side, issue #28 case 5)
            // answers with the server's words, not "unexpected reply".
            const Failure why = !is_transport(ec) && r.size() > 0
                                    ? self->refusal(r, d->resource)
                                    : self->transport(ec ? ec : loop::Errc::protocol_error);
            self->finish_renew(d, why, t_send, done);
            return;
          }
          // Declared lost locally meanwhile (unconfirmed past its TTL): never resurrect it.
          if (d->state.load() != LeaseState::held || self->loop.now() >= d->end) {
            txn.unwatch();
            d->renew_in_flight = false;
            self->lose(d, Errc::lost);
            self->finish_renew(d, Errc::not_held, t_send, done);
            return;
          }
          const protocol::RenewCheck c = protocol::parse_renew_watch(d->kind, r);
          if (c != protocol::RenewCheck::held) {
            txn.unwatch();
            d->renew_in_flight = false;
            if (c == protocol::RenewCheck::not_held) {
              self->lose(d, Errc::lost);
              self->finish_renew(d, Errc::not_held, t_send, done);
            } else {
              self->finish_renew(d, self->refusal(r, d->resource), t_send, done);
            }
            return;
          }
          // keep_end: the lease keeps the end its holder already counts on (a re-confirmation
          // on a new primary); otherwise a full TTL from the request.
          const Nanos ttl = keep_end ? d->end - t_send : d->ttl;
          exec(txn, self->metrics(), protocol::renew_exec(d->kind, d->keys, d->owner, ttl_millis(ttl)),
               self->guard([d, t_send, ttl, keep_end, done = std::move(done)](
                               Core* s, Ec ec2, const loop::Replies& r2) mutable {
                 d->renew_in_flight = false;
                 if (is_transport(ec2) || r2.size() == 0) {
                   s->finish_renew(d, s->transport(ec2 ? ec2 : loop::Errc::protocol_error), t_send,
                                   done);
                   return;
                 }
                 switch (protocol::parse_renew_exec(d->kind, r2.back())) {
                   case protocol::RenewResult::renewed:
                     // With min_replicas the new end counts only once replicas have it.
                     s->replicated(d->resource, s->guard([d, t_send, ttl, done = std::move(done)](
                                                             Core* s2, Ec ec3) {
                       // A suspended lease (its primary changed) is confirmed — and extended —
                       // only once the sentinels vouch for the new primary: before, a holder
                       // cut off with it would keep extending a lease nobody vouches for.
                       if (!ec3 && d->state.load() == LeaseState::held &&
                           (!d->suspended || s2->vouched())) {
                         d->end = std::max(d->end, t_send + ttl);
                         d->valid_until = s2->counted_until(d->end);
                         d->suspended = false;
                         s2->arm_lease_timers(d);
                       }
                       const bool ours = !ec3 || ec3.category() == lock_category();
                       s2->finish_renew(d,
                                        ours ? Failure(ec3, ec3 ? s2->last_error : std::string())
                                             : s2->transport(ec3),
                                        t_send, done);
                     }));
                     return;
                   case protocol::RenewResult::aborted:
                     // The holder set changed between read and EXEC (a contender's claim, or
                     // expiry): read again while the lease is still valid locally.
                     s->do_renew(d, std::move(done), keep_end);
                     return;
                   case protocol::RenewResult::not_held:
                     s->lose(d, Errc::lost);
                     s->finish_renew(d, Errc::not_held, t_send, done);
                     return;
                   case protocol::RenewResult::bad_reply:
                     s->finish_renew(d, s->refusal(r2, d->resource), t_send, done);
                     return;
                 }
               }));
        }));
}

// Renews a lease held by `owner` that this client did not grant (a tool, another process):
// the same WATCH/MULTI steps on a lease record of its own. `then_shared`: not held as
// exclusive, try shared.
void Client::Core::renew_owner(std::string resource, std::string owner, Kind kind, bool then_shared,
                               Nanos ttl, FailureHandler handler) {
  auto d = std::make_shared<detail::LeaseData>();
  d->keys = protocol::make_keys(opts.prefix, resource);
  d->resource = std::move(resource);
  d->owner = std::move(owner);
  d->kind = kind;
  d->ttl = ttl;
  d->valid_until = d->end = loop::MonoTime{Nanos::max()};  // whether it is still valid is the server's word
  do_renew(d, guard([d, then_shared, h = std::move(handler)](Core* self,
                                                              const Failure& f) mutable {
             Core::drop_lease_timers(d);
             if (f.ec == Errc::not_held && then_shared) {
               return self->renew_owner(d->resource, d->owner, Kind::shared, false, d->ttl,
                                        std::move(h));
             }
             if (h) h(f);
           }));
}

void Client::Core::finish_renew(const LeasePtr& d, const Failure& f, loop::MonoTime t_send,
                                const FailureHandler& done) {
  if (auto* m = metrics()) m->on_op(Op::renew, d->kind, d->resource, f.ec, loop.now() - t_send);
  if (done) done(f);
}

void Client::Core::release(const Lease& lease, DoneHandler handler) {
  Core& c = *this;
  auto post = [&](Ec ec) { post_done(c.loop, std::move(handler), ec); };
  if (c.closed) return post(Errc::closed);
  if (lease.empty()) return post(Errc::invalid_argument);
  LeasePtr d = lease.d_;
  if (d->state.load() == LeaseState::released) return post(Errc::not_held);
  c.stop_lease_timers(d);
  // Only the metrics use it (a clock reading is ~25 ns, on the hot path).
  const loop::MonoTime t0 = c.metrics() != nullptr ? c.loop.now() : loop::MonoTime{};
  // Static, so that the reply's callbacks carry the lease, the start and the handler only (one
  // weak_ptr and one copy of `d` each, not three): they run under guard(), so the client lives.
  static constexpr auto finish = [](Core* self, const LeasePtr& d, loop::MonoTime t0, Ec ec,
                                    const DoneHandler& h) {
    const bool was_held = d->state.load() == LeaseState::held;
    if (!ec) {
      d->state.store(LeaseState::released);
    } else if (ec == Errc::not_held) {
      // The caller is told directly; no on_lost callback for a lease it is giving up.
      LeaseState expected = LeaseState::held;
      d->state.compare_exchange_strong(expected, LeaseState::lost);
    } else if (was_held) {
      d->state.store(LeaseState::released);  // outcome unknown: it is gone or will expire
    }
    Core::drop_lease_timers(d);
    self->forget(d);
    if (auto* m = self->metrics()) m->on_op(Op::release, d->kind, d->resource, ec, self->loop.now() - t0);
    if (h) h(ec);
  };
  c.send(c.release_request(d->kind, d->keys, d->owner),
         c.inline_reply([d, t0, h = std::move(handler)](Core* self, Ec ec,
                                                        const loop::Replies& r) mutable {
    if (ec == loop::Errc::outcome_unknown) {
      // HDEL/DEL of our own names is idempotent: send it again once.
      self->send(self->release_request(d->kind, d->keys, d->owner),
                 self->inline_reply([d, t0, h = std::move(h)](Core* s, Ec ec2,
                                                              const loop::Replies& r2) {
        if (is_transport(ec2) || r2.size() == 0) return finish(s, d, t0, s->map(ec2), h);
        const auto res = protocol::parse_release(d->kind, r2);
        if (res == protocol::ReleaseResult::bad_reply)
          return finish(s, d, t0, s->refused(r2, d->resource), h);
        finish(s, d, t0,
               res == protocol::ReleaseResult::released ? Ec{} : Ec(Errc::outcome_unknown), h);
      }));
      return;
    }
    if (is_transport(ec) || r.size() == 0) return finish(self, d, t0, self->map(ec), h);
    switch (protocol::parse_release(d->kind, r)) {
      case protocol::ReleaseResult::released:
        // Before the handler: a worker loop locks again from inside it.
        if (d->kind == Kind::exclusive && protocol::release_woke_parked(r)) {
          self->note_taken(d->keys.holders);
        }
        return finish(self, d, t0,
                      d->state.load() == LeaseState::held ? Ec{} : Ec(Errc::not_held), h);
      case protocol::ReleaseResult::not_held:
        return finish(self, d, t0, Errc::not_held, h);
      case protocol::ReleaseResult::bad_reply:
        return finish(self, d, t0, self->refused(r, d->resource), h);
    }
  }));
  // This client's own waiters on the resource need not wait for the push the release causes:
  // their attempt goes out right behind the release on the same connection, so the server
  // applies it after the release (a local hand-off in one round trip instead of two). The push
  // then arrives while that attempt is in flight and is ignored, as every push is meanwhile
  // (protocol.md, Waiting). Waking follows the push's rules: the elected or a shared waiter
  // attempts, the backup starts its grace, waiters further back keep waiting.
  c.on_key_changed(d->keys.holders);
}

void Client::Core::renew(const Lease& lease, FailureHandler handler) {
  Core& c = *this;
  auto post = [&](Ec ec) { post_failure(c.loop, std::move(handler), Failure(ec)); };
  if (c.closed) return post(Errc::closed);
  if (lease.empty()) return post(Errc::invalid_argument);
  if (lease.state() != LeaseState::held) return post(Errc::not_held);
  c.do_renew(lease.d_, std::move(handler));
}

}  // namespace lockwire::lock
