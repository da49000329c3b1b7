// Fair order (docs/protocol.md, "Fair order"): an exclusive attempt that takes the lock only
// when nobody is ahead of it in the server's wait queue P{R}:q, so grants follow the order of
// arrival; a head that vanished (its doorbell expired) is dropped by the next in line.
#include "core.hpp"

namespace lockwire::lock {

void Client::Core::on_fair_read(const QueuePtr& q, const WaiterPtr& w, loop::MonoTime t_send,
                                Ec ec, const loop::Replies& r, loop::WatchTxn txn) {
  // Reads and a burnt ticket: nothing of ours to withdraw if it cannot be used.
  const protocol::FairRead read =
      protocol::parse_fair_read(r, w->sent_floor > 0, w->sent_fence_ttl_ms > 0);
  if (unusable_read(q, w, ec, r, txn, read.ok)) return;
  if (w->ticket == 0) w->ticket = read.ticket;  // our place: the order of arrival
  const bool free = read.holders == 0;
  const bool ours = read.head.empty() || read.head == w->req.owner;
  if (free && ours && !w->leaving()) {
    const std::uint64_t floor = floor_for(*w);
    exec(txn, metrics(),
         protocol::fair_grant(w->keys, w->req.owner, w->ttl_ms, floor, w->sent_fence_ttl_ms),
         guard([q, w, t_send](Core* self, Ec ec2, const loop::Replies& r2) {
           self->on_watched_grant(q, w, t_send, ec2, r2, protocol::parse_fair_grant);
         }));
    return;
  }
  txn.unwatch();
  if (ended_when_blocked(q, w)) return;
  if (free) return check_head(q, w, read.head, -2, caps.push_wakeups);
  wait_read(q, w, false);  // held: join the queue and wait, as any waiter does
}

void Client::Core::check_head(const QueuePtr& q, const WaiterPtr& w, const std::string& head,
                              std::int64_t own_doorbell_pttl, bool tracked) {
  q->state = Queue::State::in_flight;
  q->stop_timers();
  send(protocol::head_doorbell(w->keys, head),
       guard([q, w, head, own_doorbell_pttl, tracked](Core* self, Ec ec, const loop::Replies& r) {
         if (is_transport(ec) || r.size() != 1) {
           self->on_attempt_transport(q, w, ec ? ec : make_error_code(loop::Errc::protocol_error),
                                      false);
           return;
         }
         if (w->leaving()) {
           if (w->expired) self->complete(w, w->give_up);
           self->advance(q);
           return;
         }
         const auto pttl = protocol::parse_pttl(r[0]);
         if (pttl && *pttl == -2) {
           // Vanished (no doorbell for kFairDoorbellMs): out of the queue, then our turn may
           // come. A live head that was re-arming re-joins at its own ticket.
           self->send(protocol::drop_head(w->keys, head),
                      self->guard([q](Core* s, Ec, const loop::Replies&) { s->attempt(q); }));
           return;
         }
         if (self->queue_member(q, w)) {
           // Already queued: wait for our doorbell, or until the head's would run out.
           const std::int64_t until = pttl && *pttl > 0 ? *pttl : kFairDoorbellMs;
           self->wait(q, w, own_doorbell_pttl > 0 ? std::min(until, own_doorbell_pttl) : until,
                      tracked);
           return;
         }
         self->wait_read(q, w, false);  // join the queue behind it
       }));
}

}  // namespace lockwire::lock
