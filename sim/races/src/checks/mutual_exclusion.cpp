// Checker mutual-exclusion. Mutual exclusion: two holders at once with the older one's write
// accepted in the overlap; a write accepted after another holder's (lost update); a token not above
// every earlier grant's, in server grant order.
#include "../run_impl.hpp"

namespace lockwire::races::checks {

void mutual_exclusion(const Input& in, const Add& add) {
  const Run::Impl& im = in.im;
  auto owner_of = [&in](int li) -> const Run::Impl::Attempt& { return in.owner_of(li); };
  auto belief_end = [&in](const Run::Impl::LeaseRec& l) { return in.belief_end(l); };
  // A semaphore never has more holders than its permits (on the server, at any instant).
  {
    std::map<std::string, std::vector<std::pair<Nanos, int>>> edges;  // resource -> (t, +1/-1)
    std::map<std::string, int> permits;
    for (const auto& a : im.attempts) {
      if (a.permits <= 0) continue;
      permits[a.resource] = a.permits;
      for (const auto& x : a.server) {
        edges[a.resource].emplace_back(x.start, +1);
        edges[a.resource].emplace_back(x.end == kNever ? in.end : x.end, -1);
      }
    }
    for (auto& [res, ev] : edges) {
      std::sort(ev.begin(), ev.end());  // an end before a start at the same instant
      int n = 0;
      for (const auto& [t, d] : ev) {
        n += d;
        if (n > permits[res]) {
          add(Check::mutual_exclusion, res + " had " + std::to_string(n) + " semaphore holders at " +
                                           fmt_t(t) + " (permits " +
                                           std::to_string(permits[res]) + ")");
          break;
        }
      }
    }
  }
  // An upgrade is in place: no writer is granted between the shared grant (what the upgrader
  // read) and the exclusive one (where it writes on what it read).
  for (const auto& u : im.attempts) {
    if (u.upgrade_of < 0 || u.lease < 0) continue;
    const auto& from = im.attempts[static_cast<std::size_t>(u.upgrade_of)];
    if (from.lease < 0) continue;
    const Nanos read_at = im.leases[static_cast<std::size_t>(from.lease)].granted;
    const Nanos write_at = im.leases[static_cast<std::size_t>(u.lease)].granted;
    for (const auto& b : im.attempts) {
      if (&b == &u || b.shared || b.resource != u.resource || b.owner == u.owner) continue;
      for (const auto& x : b.server) {
        if (x.start > read_at && x.start < write_at) {
          add(Check::mutual_exclusion,
              b.label + " was granted " + u.resource + " at " + fmt_t(x.start) + ", between " +
                  from.label + "'s shared grant (" + fmt_t(read_at) +
                  ") and its upgrade's grant (" + fmt_t(write_at) + "): not in place");
        }
      }
    }
  }
  for (std::size_t i = 0; i < im.leases.size(); ++i) {
    for (std::size_t k = i + 1; k < im.leases.size(); ++k) {
      const auto& a = im.leases[i];
      const auto& b = im.leases[k];
      const auto& aa = owner_of(static_cast<int>(i));
      const auto& ba = owner_of(static_cast<int>(k));
      if (aa.resource != ba.resource) continue;
      if (aa.shared && ba.shared) continue;  // readers may overlap
      const Nanos s = std::max(a.granted, b.granted);
      const Nanos e = std::min(belief_end(a), belief_end(b));
      if (s >= e) continue;
      // The older grant is the stale one; its accepted writes in the overlap are the damage.
      const std::size_t stale = a.granted <= b.granted ? i : k;
      for (const auto& w : im.writes) {
        if (static_cast<std::size_t>(w.lease) == stale && w.accepted && w.t >= s && w.t <= e) {
          add(Check::mutual_exclusion, owner_of(static_cast<int>(stale)).owner + " wrote at " +
                                           fmt_t(w.t) + " (accepted) while " +
                                           (stale == i ? ba.label : aa.label) +
                                           " also believed it held " + aa.resource);
        }
      }
    }
  }
  {
    std::map<std::string, std::pair<int, std::set<int>>> seq;  // resource -> (last, earlier)
    for (const auto& w : im.writes) {
      if (!w.accepted) continue;
      const auto& a = owner_of(w.lease);
      auto& [last, earlier] = seq.try_emplace(a.resource, -1, std::set<int>{}).first->second;
      if (w.lease != last) {
        if (earlier.count(w.lease)) {
          add(Check::mutual_exclusion, a.label + "'s write at " + fmt_t(w.t) +
                                           " accepted after another holder's writes (lost "
                                           "update: fencing did not stop it)");
        }
        if (last >= 0) earlier.insert(last);
        last = w.lease;
      }
    }
    std::map<std::string, std::uint64_t> hi;
    std::vector<std::size_t> order(im.leases.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    // In the order the server granted them (a report can come much later, e.g. after a pause).
    // Same-instant grants (several connections at one virtual time) are ordered by the event
    // that made them. A span is credited to one grant only: when a reused owner id was granted
    // twice within one span, the lowest token made it; the others are ordered by their reports
    // (their own grants are not visible in a per-owner ground truth).
    std::vector<std::tuple<Nanos, std::uint64_t, std::uint64_t>> grant_key(im.leases.size());
    std::map<std::tuple<std::string, std::string, bool, Nanos>, std::size_t> credited;
    std::vector<const Run::Impl::Interval*> span_of(im.leases.size(), nullptr);
    for (std::size_t i = 0; i < im.leases.size(); ++i) {
      const auto& l = im.leases[i];
      const auto& a = owner_of(static_cast<int>(i));
      grant_key[i] = {l.granted, ~std::uint64_t{0}, l.token};
      for (const auto& x : a.server)
        if (x.start <= l.granted) span_of[i] = &x;
      if (span_of[i] == nullptr) continue;
      auto [it, fresh] =
          credited.try_emplace({a.owner, a.resource, a.shared, span_of[i]->start}, i);
      if (!fresh && im.leases[it->second].token > l.token) it->second = i;
    }
    for (const auto& [k, i] : credited) {
      grant_key[i] = {span_of[i]->start, span_of[i]->seq, im.leases[i].token};
    }
    auto server_grant = [&](std::size_t i) { return grant_key[i]; };
    std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
      return server_grant(x) < server_grant(y);
    });
    std::map<std::string, bool> seen;
    for (std::size_t i : order) {
      const auto& l = im.leases[i];
      const auto& a = owner_of(static_cast<int>(i));
      if (seen[a.resource] && l.token <= hi[a.resource]) {
        add(Check::mutual_exclusion, a.label + " got token " + std::to_string(l.token) +
                                         " after token " + std::to_string(hi[a.resource]) +
                                         " was handed out (regression/repeat)");
      }
      seen[a.resource] = true;
      hi[a.resource] = std::max(hi[a.resource], l.token);
    }
  }
}

}  // namespace lockwire::races::checks
