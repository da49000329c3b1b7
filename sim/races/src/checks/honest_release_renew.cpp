// Checker honest-release-renew. Honest release / renew: a release reported success but did not end
// its lease; a renew reported success but the lease was not held or did not live its TTL.
#include "../run_impl.hpp"

namespace lockwire::races::checks {

void honest_release_renew(const Input& in, const Add& add) {
  const Run::Impl& im = in.im;
  auto owner_of = [&in](int li) -> const Run::Impl::Attempt& { return in.owner_of(li); };
  for (const auto& s : im.honest_violations) add(Check::honest_release_renew, s);
  for (int li : im.pending_release_checks) {
    const auto& l = im.leases[static_cast<std::size_t>(li)];
    const auto& a = owner_of(li);
    bool ok = false;
    for (const auto& iv : a.server) {
      if (iv.end != kNever && iv.end >= l.release_start && iv.end <= l.release_end && !iv.expired &&
          iv.own_release) {
        ok = true;
      }
    }
    if (!ok) {
      add(Check::honest_release_renew,
          a.label + ": release reported success at " + fmt_t(l.release_end) +
              " but the release did not end its lease (it had expired or was gone before " +
              fmt_t(l.release_start) + ")");
    }
  }
}

}  // namespace lockwire::races::checks
