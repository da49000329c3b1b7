// Checker no-orphan. No orphan: a failed acquire's lease still (or newly) held on the server after
// the grace; a lease that appears while no acquire of its owner is in progress and outlives the
// grace.
#include "../run_impl.hpp"

namespace lockwire::races::checks {

void no_orphan(const Input& in, const Add& add) {
  const Run::Impl& im = in.im;
  const Nanos end = in.end;
  for (const auto& a : im.attempts) {
    if (a.reported == kNever || !a.ec) continue;
    if (im.clients[static_cast<std::size_t>(a.client)].exempt) continue;
    const Nanos c = std::max(a.reported, in.healed_at) + in.config.orphan_grace;
    if (c > end) continue;
    // Ground truth is per owner id: with an owner id reused by several attempts (a duplicate
    // acquire refused as already_held), a span that began while another attempt of the same owner
    // was acquiring or holding is that attempt's lease, not an orphan of this one.
    auto other_owns = [&](const Run::Impl::Interval& iv) {
      for (const auto& b : im.attempts) {
        if (&b == &a || b.lease < 0 || b.owner != a.owner || b.resource != a.resource ||
            b.shared != a.shared) {
          continue;
        }
        const auto& lb = im.leases[static_cast<std::size_t>(b.lease)];
        // (A release that did not report success leaves that lease its holder's.)
        if (b.start <= iv.start &&
            (lb.release_end == kNever || lb.release_end >= iv.start || !lb.release_ok)) {
          return true;
        }
      }
      return false;
    };
    for (const auto& iv : a.server) {
      if (other_owns(iv)) continue;
      if (iv.start <= c && (iv.end == kNever || iv.end > c)) {
        add(Check::no_orphan, a.label + " reported " + a.ec.message() + " at " + fmt_t(a.reported) +
                                  " but its lease is held on the server at " + fmt_t(c) +
                                  " (from " + fmt_t(iv.start) + ")");
        break;
      }
      if (iv.start > c) {
        add(Check::no_orphan, a.label + " reported " + a.ec.message() + " at " + fmt_t(a.reported) +
                                  " but was granted on the server at " + fmt_t(iv.start));
        break;
      }
    }
  }

  // A lease of an owner that appears on the server while no acquire of that owner is in progress
  // (e.g. an old connection's request delivered late) belongs to nobody: it is an orphan once it
  // outlives the grace. Per owner id: spans are shared by that owner's attempts.
  {
    std::set<std::tuple<std::string, std::string, bool, Nanos>> seen;
    for (const auto& a : im.attempts) {
      if (im.clients[static_cast<std::size_t>(a.client)].exempt) continue;
      for (const auto& iv : a.server) {
        if (!seen.emplace(a.owner, a.resource, a.shared, iv.start).second) continue;
        bool acquiring = false;
        for (const auto& b : im.attempts) {
          if (b.owner == a.owner && b.resource == a.resource && b.shared == a.shared &&
              b.start <= iv.start && (b.reported == kNever || b.reported >= iv.start)) {
            acquiring = true;
          }
        }
        const Nanos until = iv.end == kNever ? end : iv.end;
        if (!acquiring && iv.start >= in.healed_at && until - iv.start > in.config.orphan_grace) {
          add(Check::no_orphan, a.owner + " (" + a.resource + ") was granted on the server at " +
                                    fmt_t(iv.start) + " while no acquire of it was in progress; " +
                                    "held until " +
                                    (iv.end == kNever ? std::string("the end") : fmt_t(iv.end)));
        }
      }
    }
  }
}

}  // namespace lockwire::races::checks
