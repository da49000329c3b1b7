// Checker two-holders (RunConfig::strict_exclusion; reported under mutual-exclusion): no instant
// at which two clients both count on a lease of one resource that excludes the other. A holder
// counts on its lease from its grant until the first of: its belief ending (Lease::valid_until
// for lockwire), its on_lost, the start of its release — Input::belief_end, the same span the
// mutual-exclusion checker intersects. That checker needs an accepted write inside the overlap
// (fencing makes an overlap without one harmless); this one does not, since a holder whose
// store is not fenced acts on the overlap whether or not the simulated writes land in it.
#include "../run_impl.hpp"

namespace lockwire::races::checks {

void two_holders(const Input& in, const Add& add) {
  const Run::Impl& im = in.im;
  for (std::size_t i = 0; i < im.leases.size(); ++i) {
    for (std::size_t k = i + 1; k < im.leases.size(); ++k) {
      const auto& a = im.leases[i];
      const auto& b = im.leases[k];
      const auto& aa = in.owner_of(static_cast<int>(i));
      const auto& ba = in.owner_of(static_cast<int>(k));
      if (aa.resource != ba.resource) continue;
      if (aa.shared && ba.shared) continue;  // readers may overlap
      if (aa.owner == ba.owner) continue;    // an upgrade in place holds both for an instant
      const Nanos s = std::max(a.granted, b.granted);
      const Nanos e = std::min(in.belief_end(a), in.belief_end(b));
      if (s >= e) continue;
      const bool a_first = a.granted <= b.granted;
      const auto& older = a_first ? aa : ba;
      const auto& newer = a_first ? ba : aa;
      add(Check::mutual_exclusion,
          "two holders of " + aa.resource + " for " + fmt_t(e - s) + ": " + older.label +
              " still counted on its lease (granted " +
              fmt_t(a_first ? a.granted : b.granted) + ") when " + newer.label +
              " was granted at " + fmt_t(s) + ", until " + fmt_t(e));
    }
  }
}

}  // namespace lockwire::races::checks
