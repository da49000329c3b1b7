// Checker liveness. Liveness (after the heal): a wait answered later than deadline + bound; a free
// lock left free longer than the wake bound while an attempt waits; leaks found by finish();
// scenario findings.
#include "../run_impl.hpp"

namespace lockwire::races::checks {

void liveness(const Input& in, const Add& add) {
  const Run::Impl& im = in.im;
  const Nanos end = in.end;
  for (const auto& s : im.leak_violations) add(Check::liveness, s);
  std::map<std::string, std::vector<std::pair<Nanos, Nanos>>> busy;  // resource -> held spans
  for (const auto& a : im.attempts) {
    for (const auto& iv : a.server) {
      busy[a.resource].emplace_back(iv.start, iv.end == kNever ? end : iv.end);
    }
  }
  for (auto& [r, v] : busy) std::sort(v.begin(), v.end());
  for (const auto& a : im.attempts) {
    if (im.clients[static_cast<std::size_t>(a.client)].exempt) continue;
    const Nanos due = std::max(a.deadline, a.start) + in.config.deadline_bound;
    if (a.deadline >= in.healed_at && due <= end && (a.reported == kNever || a.reported > due)) {
      add(Check::liveness, a.label + " waited until " +
                               (a.reported == kNever ? std::string("the end") : fmt_t(a.reported)) +
                               ", deadline " + fmt_t(a.deadline));
    }
    // A free lock while this attempt waited (after the heal): must be granted within the bound.
    const Nanos ws = std::max(a.start, in.healed_at);
    const Nanos we = std::min(a.reported == kNever ? end : a.reported, a.deadline);
    if (ws >= we) continue;
    Nanos free_from = ws;
    auto it = busy.find(a.resource);
    std::vector<std::pair<Nanos, Nanos>> spans;
    if (it != busy.end()) spans = it->second;
    spans.emplace_back(we, we);
    for (const auto& [s, e] : spans) {
      if (e <= free_from) continue;
      const Nanos gap_end = std::min(s, we);
      if (gap_end - free_from > in.config.wake_bound) {
        add(Check::liveness, a.label + " kept waiting while " + a.resource + " was free from " +
                                 fmt_t(free_from) + " to " + fmt_t(gap_end));
        break;
      }
      free_from = std::max(free_from, e);
      if (free_from >= we) break;
    }
  }
}

}  // namespace lockwire::races::checks
