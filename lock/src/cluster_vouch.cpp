// The masters' vouch on a Redis Cluster (cluster_vouch.hpp): what a node's answer bounds, and
// the count over the masters' bounds. No I/O.
#include "cluster_vouch.hpp"

#include <algorithm>
#include <charconv>
#include <functional>
#include <set>

#include "lockwire/resp/reply.hpp"

namespace lockwire::lock::detail {

namespace {

constexpr MonoTime kNoLimit{Nanos::max()};

template <typename T>
bool to_int(std::string_view s, T& out) noexcept {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool has_flag(std::string_view flags, std::string_view f) noexcept {
  while (!flags.empty()) {
    const std::size_t comma = flags.find(',');
    if (flags.substr(0, comma) == f) return true;
    if (comma == std::string_view::npos) break;
    flags.remove_prefix(comma + 1);
  }
  return false;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  while (!s.empty()) {
    const std::size_t at = s.find(sep);
    if (at != 0) out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) break;
    s.remove_prefix(at + 1);
  }
  return out;
}

// The words of an error reply, or `what` when the reply is not one.
std::optional<std::string> error_words(resp::Frame f, std::string_view what) {
  const std::size_t v = resp::value_index(f);
  if (v >= f.size()) return std::string("an empty reply to ").append(what);
  if (resp::is_error(f[v])) return std::string(f[v].value);
  return std::nullopt;
}

Nanos scaled_ms(std::int64_t ms, double f) {
  return Nanos(static_cast<std::int64_t>(static_cast<double>(ms) * 1e6 * f));
}

std::string ms_text(Nanos d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
}

// Y's clock in ms from a TIME reply (seconds, microseconds); nullopt if malformed.
std::optional<std::int64_t> time_ms(resp::Frame f) {
  const std::size_t v = resp::value_index(f);
  if (v >= f.size() || f[v].type != resp::Type::array) return std::nullopt;
  std::vector<std::size_t> e;
  resp::elements(f, v, e);
  if (e.size() != 2) return std::nullopt;
  const auto s = resp::to_int64(f[e[0]]);
  const auto us = resp::to_int64(f[e[1]]);
  if (!s || !us) return std::nullopt;
  return *s * 1000 + *us / 1000;
}

// CONFIG GET cluster-node-timeout: a map (RESP3) or a flat array of name, value.
std::optional<std::int64_t> node_timeout_ms(resp::Frame f) {
  const std::size_t v = resp::value_index(f);
  if (v >= f.size() || (f[v].type != resp::Type::map && f[v].type != resp::Type::array)) {
    return std::nullopt;
  }
  std::vector<std::size_t> e;
  resp::elements(f, v, e);
  for (std::size_t i = 0; i + 1 < e.size(); i += 2) {
    if (resp::equals(f[e[i]], "cluster-node-timeout")) {
      const auto n = resp::to_int64(f[e[i + 1]]);
      if (n && *n > 0) return n;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::vector<NodeLine>> parse_cluster_nodes(resp::Frame reply, std::string& why) {
  if (auto err = error_words(reply, "CLUSTER NODES")) {
    why = std::move(*err);
    return std::nullopt;
  }
  const resp::Node& n = reply[resp::value_index(reply)];
  if (!resp::is_string_like(n.type)) {
    why = "a CLUSTER NODES reply that is not text";
    return std::nullopt;
  }
  std::vector<NodeLine> out;
  for (std::string_view line : split(n.value, '\n')) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const auto f = split(line, ' ');
    NodeLine l;
    if (f.size() < 8 || !to_int(f[4], l.ping_sent_ms)) {
      why = "a CLUSTER NODES line without id, address, flags and ping-sent: " + std::string(line);
      return std::nullopt;
    }
    l.id = std::string(f[0]);
    const std::string_view addr = f[1].substr(0, f[1].find_first_of("@,"));
    l.addr = std::string(addr);
    l.myself = has_flag(f[2], "myself");
    l.master = has_flag(f[2], "master");
    l.flagged = has_flag(f[2], "fail?") || has_flag(f[2], "fail");
    // Slot ranges follow the link state; "[slot->-id]" entries are migrations, not slots.
    for (std::size_t i = 8; i < f.size(); ++i) {
      if (f[i].front() != '[') l.serves_slots = true;
    }
    out.push_back(std::move(l));
  }
  return out;
}

void ClusterVouch::set_nodes(const std::vector<std::string>& addrs) {
  std::vector<Observer> next;
  for (const auto& a : addrs) {
    auto it =
        std::find_if(nodes_.begin(), nodes_.end(), [&](const Observer& o) { return o.addr == a; });
    if (it != nodes_.end()) {
      next.push_back(std::move(*it));
    } else {
      Observer o;
      o.addr = a;
      next.push_back(std::move(o));
    }
  }
  nodes_ = std::move(next);
}

void ClusterVouch::answered(const std::string& addr, MonoTime sent, MonoTime recv,
                            const Answer& a) {
  auto it =
      std::find_if(nodes_.begin(), nodes_.end(), [&](const Observer& o) { return o.addr == addr; });
  if (it == nodes_.end()) return;
  Observer& y = *it;
  if (auto err = error_words(a.config, "CONFIG GET")) {
    // Without the node timeout nothing can be bounded: the vouch is off (documented).
    if (refused_.empty()) refused_ = addr + ": " + *err;
    return unanswered(addr, "CONFIG GET cluster-node-timeout: " + *err);
  }
  const auto nt = node_timeout_ms(a.config);
  const auto t_y = time_ms(a.time);
  std::string why;
  auto view = parse_cluster_nodes(a.nodes, why);
  if (!nt || !t_y || !view) {
    if (why.empty()) why = !nt ? "no cluster-node-timeout in CONFIG GET" : "a malformed TIME reply";
    return unanswered(addr, std::move(why));
  }
  y.heard = true;
  y.said.clear();
  y.nt_ms = *nt;
  y.master = false;
  for (const NodeLine& l : *view) {
    if (l.myself) {
      y.id = l.id;
      y.master = l.master;
    }
  }
  // Runs about every master in its view, and about replicas never seen as masters: a replica
  // elected later is then vouched for from its promotion on, not 2 * nt after it (Y's flag on
  // a node does not depend on its role). A master it no longer lists as one (demoted: a
  // failover away from it happened) stops growing: what was proved about it still holds.
  std::set<std::string, std::less<>> masters;
  for (const NodeLine& l : *view) {
    if (l.myself) continue;
    Run& r = y.runs[l.id];
    if (l.master) {
      masters.insert(l.id);
      r.was_master = true;
    } else if (r.was_master) {
      continue;
    }
    r.gone = false;
    if (l.flagged) {
      r = Run{};
      r.flagged = true;
      continue;
    }
    r.flagged = false;
    r.pending_ms = l.ping_sent_ms != 0 ? std::max<std::int64_t>(*t_y - l.ping_sent_ms, 1) : 0;
    // Not flagged before (ping-sent, or its clock now) + nt of its clock; 1 ms for rounding.
    const std::int64_t from = l.ping_sent_ms != 0 ? l.ping_sent_ms : *t_y;
    const std::int64_t left = from + *nt - *t_y - 1;
    if (left <= 0) continue;  // a PING pending for nt already: nothing more is proved
    const MonoTime hi = sent + scaled_ms(left, 1.0 - kRateDrift);
    if (hi <= recv) continue;
    if (r.hi > MonoTime{} && recv <= r.hi) {
      r.hi = std::max(r.hi, hi);
    } else {
      r.lo = recv;
      r.hi = hi;
      r.settled = false;
    }
  }
  for (auto& [id, r] : y.runs) {
    if (!masters.contains(id)) r.gone = true;  // what it proved still holds; no more
  }
  // A snapshot: which subjects this node holds no failure report about and does not flag.
  y.clean_at.clear();
  for (const auto& [subject, f] : a.counts) {
    const std::string& id = subject;  // a lambda cannot capture a structured binding (clang 14)
    const std::size_t v = resp::value_index(f);
    const auto n =
        v < f.size() && f[v].type == resp::Type::number ? resp::to_int64(f[v]) : std::nullopt;
    const bool flagged = std::any_of(view->begin(), view->end(),
                                     [&](const NodeLine& l) { return l.id == id && l.flagged; });
    if (n && *n == 0 && !flagged) y.clean_at[id] = sent;
  }
  y.view = std::move(*view);
  for (const auto& [id, f] : a.counts) settle(id);
}

// Every node that could declare `subject` FAIL showed no report about it at a moment after a
// run began: that run is clear of reports for good.
void ClusterVouch::settle(const std::string& subject) {
  std::set<std::string, std::less<>> everyone;
  for (const Observer& o : nodes_) {
    for (const NodeLine& l : o.view) everyone.insert(l.id);
  }
  MonoTime clean_by = kNoLimit;
  for (const std::string& id : everyone) {
    if (id == subject) continue;  // P never counts itself
    const auto o =
        std::find_if(nodes_.begin(), nodes_.end(), [&](const Observer& x) { return x.id == id; });
    if (o == nodes_.end()) return;  // a node we do not ask
    const auto c = o->clean_at.find(subject);
    if (c == o->clean_at.end()) return;
    clean_by = std::min(clean_by, c->second);
  }
  for (Observer& o : nodes_) {
    auto r = o.runs.find(subject);
    if (r != o.runs.end() && !r->second.flagged && r->second.lo <= clean_by)
      r->second.settled = true;
  }
}

void ClusterVouch::unanswered(const std::string& addr, std::string why) {
  auto it =
      std::find_if(nodes_.begin(), nodes_.end(), [&](const Observer& o) { return o.addr == addr; });
  if (it == nodes_.end()) return;
  it->clean_at.clear();  // unknown now
  it->said = std::move(why);
}

Nanos ClusterVouch::memory() const noexcept {
  std::int64_t nt = 0;
  for (const Observer& o : nodes_) nt = std::max(nt, o.nt_ms);
  // A report lives 2 * nt of the holder's clock.
  return scaled_ms(2 * nt, 1.0 / (1.0 - kRateDrift));
}

// How many masters other than `id` must vouch, and the run ends of those that do.
ClusterVouch::Tally ClusterVouch::tally(std::string_view id, MonoTime now) const {
  Tally t;
  // Masters: every node any view names master (P included); size: the smallest count of
  // masters serving slots in a view (the smallest quorum any node may use).
  std::set<std::string, std::less<>> masters;
  std::size_t size = 0;
  bool known = false;
  for (const Observer& o : nodes_) {
    if (!o.heard || o.view.empty()) continue;
    std::size_t serving = 0;
    for (const NodeLine& l : o.view) {
      if (!l.master) continue;
      masters.insert(l.id);
      if (l.serves_slots) ++serving;
    }
    size = size == 0 ? serving : std::min(size, serving);
    // A primary replaced since (a manual failover) keeps what was proved about it: a lease
    // there still counts until the router moves it (its connection is relocated).
    if (o.runs.contains(id)) known = true;
  }
  if (!known || size == 0) return t;
  t.known = true;
  masters.insert(std::string(id));
  t.masters = masters.size();
  const std::size_t needed = size / 2 + 1;
  if (masters.size() <= needed) {  // not enough masters to report P (P excluded)
    t.unlimited = true;
    return t;
  }
  t.clean = masters.size() - needed;
  const Nanos mem = memory();
  for (const Observer& o : nodes_) {
    if (!o.heard || !o.master || o.id == id) continue;
    const auto r = o.runs.find(id);
    if (r == o.runs.end() || r->second.flagged || r->second.hi <= now) continue;
    if (r->second.settled || r->second.lo + mem <= now) t.ends.push_back(r->second.hi);
  }
  std::sort(t.ends.begin(), t.ends.end(), std::greater<>());
  return t;
}

MonoTime ClusterVouch::until(std::string_view id, MonoTime now) const {
  if (!refused_.empty()) return kNoLimit;
  const Tally t = tally(id, now);
  if (t.unlimited) return kNoLimit;
  if (!t.known || t.ends.size() < t.clean) return MonoTime{};
  return t.ends[t.clean - 1];
}

Nanos ClusterVouch::poll_period() const noexcept {
  std::int64_t smallest = 0;
  for (const Observer& o : nodes_) {
    if (o.nt_ms > 0 && (smallest == 0 || o.nt_ms < smallest)) smallest = o.nt_ms;
  }
  if (smallest == 0) return std::chrono::milliseconds(250);
  return std::clamp(Nanos(std::chrono::milliseconds(smallest / 5)),
                    Nanos(std::chrono::milliseconds(50)), Nanos(std::chrono::seconds(1)));
}

std::string ClusterVouch::id_of(const std::string& addr) const {
  for (const Observer& o : nodes_) {
    if (o.addr == addr) return o.id;
  }
  return {};
}

bool ClusterVouch::demoted(std::string_view id) const {
  for (const Observer& o : nodes_) {
    if (!o.heard || o.view.empty() || !o.said.empty()) continue;
    const auto l =
        std::find_if(o.view.begin(), o.view.end(), [&](const NodeLine& x) { return x.id == id; });
    if (l == o.view.end() || !l->master) return true;
  }
  return false;
}

std::string ClusterVouch::explain(std::string_view id, MonoTime now) const {
  if (!refused_.empty()) return "no vouch: " + refused_;
  std::string out;
  for (const Observer& o : nodes_) {
    if (o.heard && (!o.master || o.id == id)) continue;  // replicas and P itself do not count
    if (!out.empty()) out += "; ";
    out += o.addr + " ";
    const auto r = o.runs.find(id);
    if (!o.said.empty()) {
      out += o.said;
    } else if (!o.heard) {
      out += "has not answered";
    } else if (r == o.runs.end()) {
      out += "does not know the primary";
    } else if (r->second.flagged) {
      out += "flags the primary fail? or fail";
    } else if (r->second.hi <= now) {
      out += "last vouched until " + ms_text(now - r->second.hi) + " ago";
    } else {
      out += "vouches for " + ms_text(r->second.hi - now);
      if (!r->second.settled && r->second.lo + memory() > now)
        out += " (not clear of failure reports yet)";
    }
    if (o.heard && r != o.runs.end() && r->second.gone) out += " (names another primary)";
    if (o.heard && r != o.runs.end() && !r->second.gone && r->second.pending_ms > 0) {
      out += " (its PING to the primary unanswered for " + std::to_string(r->second.pending_ms) +
             " ms)";
    }
  }
  if (out.empty()) return "no node answered";
  // The count, when it is what is short: a view naming more masters (a stale view right
  // after `--cluster create`, or slot-less masters) asks more of the others.
  const Tally t = tally(id, now);
  if (t.known && !t.unlimited && t.ends.size() < t.clean) {
    out += "; " + std::to_string(t.clean) + " master" + (t.clean == 1 ? "" : "s") +
           " other than the primary must vouch, " + std::to_string(t.ends.size()) +
           (t.ends.size() == 1 ? " does" : " do") + " (the nodes' views name " +
           std::to_string(t.masters) + " masters)";
  }
  return out;
}

}  // namespace lockwire::lock::detail
