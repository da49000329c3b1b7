// Checker lease-loss-notice. Lease-loss notice: a lease ended on the server without its holder's
// release while the holder still believed it held it (or was never told).
#include <algorithm>

#include "../run_impl.hpp"

namespace lockwire::races::checks {

void lease_loss_notice(const Input& in, const Add& add) {
  const Run::Impl& im = in.im;
  const Nanos end = in.end;
  auto owner_of = [&in](int li) -> const Run::Impl::Attempt& { return in.owner_of(li); };
  auto belief_end = [&in](const Run::Impl::LeaseRec& l) { return in.belief_end(l); };
  for (std::size_t i = 0; i < im.leases.size(); ++i) {
    const auto& l = im.leases[i];
    const auto& a = owner_of(static_cast<int>(i));
    if (im.clients[static_cast<std::size_t>(a.client)].exempt) continue;
    const Run::Impl::Interval* iv = nullptr;
    for (const auto& x : a.server) {
      if (x.start <= l.granted) iv = &x;
    }
    if (iv == nullptr || iv->end == kNever || iv->own_release) continue;
    const Nanos told = belief_end(l);
    if (iv->moved) {
      // Ground truth moved to the new primary at +switch-master, which every client learns from
      // the same message; the lease was lost there, not ended by anyone. Another client can be
      // granted only once it reached the new primary too: the holder must stop believing
      // before any conflicting grant there, not before the switch.
      // The first moment after the switch at which another attempt both held the resource on
      // the new primary and believed it did (a copy of an older lease nobody believes is not a
      // second holder).
      Nanos other = kNever;
      for (const auto& b : im.attempts) {
        if (&b == &a || b.resource != a.resource || (b.shared && a.shared) || b.lease < 0) continue;
        const auto& bl = im.leases[static_cast<std::size_t>(b.lease)];
        for (const auto& x : b.server) {
          const Nanos from = std::max({x.start, bl.granted, iv->end});
          const Nanos until = std::min(x.end == kNever ? end : x.end, belief_end(bl));
          if (from < until && (other == kNever || from < other)) other = from;
        }
      }
      // A holder whose process was stopped when the other was granted could not be told (nor
      // act) until it ran again: it must stop believing by then — at the instant it resumes,
      // before it can act (the announcement waits in its socket). Found with the failover
      // swarm's pauses across the leader's +promoted-slave (docs/races.md).
      const sim::Node* holder_node = im.clients[static_cast<std::size_t>(a.client)].node;
      const Nanos could_know =
          other == kNever || holder_node == nullptr ? other : holder_node->running_from(other);
      if (other != kNever && told > could_know) {
        add(Check::lease_loss_notice,
            a.label + "'s lease was lost in the failover at " + fmt_t(iv->end) +
                " (the new primary never had it); another client was granted at " +
                fmt_t(other) + " but the holder believed it held until " +
                (told >= end ? std::string("the end") : fmt_t(told)));
      }
      continue;
    }
    // A grant reported after its lease had already ended is fine if the holder was told at once.
    if (told > std::max(iv->end, l.granted)) {
      add(Check::lease_loss_notice,
          a.label + "'s lease ended on the server at " + fmt_t(iv->end) +
              (iv->expired ? " (expired)" : " (removed by someone else)") +
              " but the holder believed it held until " +
              (told >= end ? std::string("the end") : fmt_t(told)));
    } else if (l.lost_notice == kNever && l.release_start == kNever) {
      add(Check::lease_loss_notice, a.label + "'s lease ended on the server at " + fmt_t(iv->end) +
                                        " and the holder was never told");
    }
  }
}

}  // namespace lockwire::races::checks
