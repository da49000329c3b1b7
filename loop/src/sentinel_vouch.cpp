// The sentinels' vouch (sentinel_vouch.hpp): what a SENTINEL MASTER reply bounds, and the
// quorum over the sentinels' bounds. No I/O.
#include "sentinel_vouch.hpp"

#include <algorithm>
#include <charconv>
#include <functional>
#include <string>

#include "lockwire/resp/reply.hpp"
#include "sentinel.hpp"

namespace lockwire::loop::detail {

namespace {

template <typename T>
bool to_int(std::optional<std::string_view> s, T& out) noexcept {
  if (!s) return false;
  const auto r = std::from_chars(s->data(), s->data() + s->size(), out);
  return r.ec == std::errc() && r.ptr == s->data() + s->size();
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

// The index of the reply's value, or nullopt with `why`: the server's words for an error.
std::optional<std::size_t> reply_value(resp::Frame reply, std::string_view what,
                                       std::string& why) {
  const std::size_t v = resp::value_index(reply);
  if (v >= reply.size()) {
    why = "an empty reply to " + std::string(what);
    return std::nullopt;
  }
  if (resp::is_error(reply[v])) {
    why = std::string("-").append(reply[v].value);
    return std::nullopt;
  }
  return v;
}

std::string ms_text(Nanos d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
}

}  // namespace

std::optional<MasterView> parse_master_view(resp::Frame reply, std::string& why) {
  if (!reply_value(reply, "SENTINEL MASTER", why)) return std::nullopt;
  MasterView m;
  const auto ip = reply_field(reply, "ip");
  const auto flags = reply_field(reply, "flags");
  unsigned port = 0;
  if (!ip || !flags || !to_int(reply_field(reply, "port"), port) || port == 0 || port > 65535 ||
      !to_int(reply_field(reply, "last-ok-ping-reply"), m.last_ok_ping_ms) ||
      !to_int(reply_field(reply, "down-after-milliseconds"), m.down_after_ms) ||
      !to_int(reply_field(reply, "quorum"), m.quorum) ||
      !to_int(reply_field(reply, "num-other-sentinels"), m.other_sentinels) || m.quorum < 1 ||
      m.other_sentinels < 0 || m.down_after_ms < 0 || m.last_ok_ping_ms < 0) {
    why = "a SENTINEL MASTER reply without ip, port, flags, last-ok-ping-reply, "
          "down-after-milliseconds, quorum or num-other-sentinels";
    return std::nullopt;
  }
  // Optional: a sentinel without it leaves the replica count unknown (ClientOptions'
  // majority then falls back to the primary's own ROLE).
  int replicas = -1;
  if (to_int(reply_field(reply, "num-slaves"), replicas) && replicas >= 0) m.replicas = replicas;
  m.ip = std::string(*ip);
  m.port = static_cast<std::uint16_t>(port);
  m.down = has_flag(*flags, "s_down") || has_flag(*flags, "o_down");
  m.failing_over = has_flag(*flags, "failover_in_progress");
  return m;
}

std::optional<bool> remembers_peer_down(resp::Frame reply, std::string& why) {
  const auto value = reply_value(reply, "SENTINEL SENTINELS", why);
  if (!value) return std::nullopt;
  const std::size_t v = *value;
  if (reply[v].type != resp::Type::array) {
    why = "a SENTINEL SENTINELS reply that is not an array";
    return std::nullopt;
  }
  std::vector<std::size_t> peers;
  resp::elements(reply, v, peers);
  for (const std::size_t p : peers) {
    // Each peer is a map (RESP3) or a flat array (RESP2): look its flags up in a sub-frame.
    const resp::Frame sub = reply.subspan(p, resp::next_element(reply, p) - p);
    const auto flags = reply_field(sub, "flags");
    if (!flags) {
      why = "a SENTINEL SENTINELS entry without flags";
      return std::nullopt;
    }
    if (has_flag(*flags, "master_down")) return true;
  }
  return false;
}

void SentinelVouch::on_server(std::string host, std::uint16_t port) {
  if (host == host_ && port == port_) return;
  cached_to_ = MonoTime{};  // a reconnect to the same primary: still vouched
  host_ = std::move(host);
  port_ = port;
  for (Word& w : words_) w = Word{};
}

void SentinelVouch::answered(std::size_t i, MonoTime sent, MonoTime now, resp::Frame master,
                             resp::Frame peers) {
  if (i >= words_.size()) return;
  cached_to_ = MonoTime{};
  Word& w = words_[i];
  std::string why;
  const auto m = parse_master_view(master, why);
  if (!m) return unanswered(i, std::move(why));
  w.heard = true;
  w.quorum = m->quorum;
  w.other_sentinels = m->other_sentinels;
  w.down_after_ms = m->down_after_ms;
  w.failover = false;
  if (m->ip != host_ || m->port != port_) {
    w.run = w.clean = w.settled = false;
    w.failover = true;
    w.said = "names " + m->ip + ":" + std::to_string(m->port) + " as the primary";
    return;
  }
  w.replicas = m->replicas;
  if (m->down || m->failing_over) {
    w.run = w.clean = w.settled = false;
    w.failover = m->failing_over;
    w.said = m->failing_over ? "is failing the primary over" : "considers the primary down";
    return;
  }
  const auto remembers = remembers_peer_down(peers, why);
  w.clean = remembers && !*remembers;
  if (w.clean) w.clean_at = sent;
  const auto scaled = [](std::int64_t ms, double f) {
    return Nanos(static_cast<std::int64_t>(static_cast<double>(ms) * 1e6 * f));
  };
  // Not +sdown before sent + (D - L) of its clock (1 ms for the rounding of both fields), nor
  // from a tick after its last good reply (at the latest now - L of ours) on.
  const MonoTime hi =
      sent + scaled(std::max<std::int64_t>(m->down_after_ms - m->last_ok_ping_ms - 1, 0),
                    1.0 - kRateDrift);
  const MonoTime lo = now + (kTick - scaled(m->last_ok_ping_ms, 1.0 - kRateDrift));
  if (w.run && lo <= w.run_hi) {
    w.run_hi = std::max(w.run_hi, hi);
  } else {
    w.run = lo < hi;
    w.settled = false;
    w.run_lo = lo;
    w.run_hi = hi;
  }
  w.said.clear();
  if (!w.run) w.said = "last heard from the primary too long ago for its down-after";
  settle();
}

// Every sentinel that monitors the primary (and only those we ask) showed no memory of a
// "down" answer at a moment after a run began: that run is clear of such memory for good.
void SentinelVouch::settle() {
  MonoTime clean_by{Nanos::max()};
  for (const Word& w : words_) {
    if (!w.clean || static_cast<std::size_t>(w.other_sentinels) + 1 > words_.size()) return;
    clean_by = std::min(clean_by, w.clean_at);
  }
  for (Word& w : words_) {
    if (w.run && w.run_lo <= clean_by) w.settled = true;
  }
}

int SentinelVouch::known_replicas() const noexcept {
  int most = -1;
  for (const Word& w : words_) most = std::max(most, w.replicas);
  return most;
}

void SentinelVouch::unanswered(std::size_t i, std::string why) {
  if (i >= words_.size()) return;
  cached_to_ = MonoTime{};
  words_[i].clean = false;  // its run goes on (a silent sentinel may still be clean): unknown
  words_[i].said = std::move(why);
}

MonoTime SentinelVouch::until(MonoTime now) const noexcept {
  if (now >= cached_from_ && now < cached_to_) return cached_;
  MonoTime valid_until{Nanos::max()};
  cached_ = compute(now, valid_until);
  cached_from_ = now;
  cached_to_ = valid_until;
  return cached_;
}

MonoTime SentinelVouch::compute(MonoTime now, MonoTime& valid_until) const {
  std::size_t sentinels = words_.size();
  int quorum = 0;
  for (const Word& w : words_) {
    if (!w.heard) continue;
    // A failover under way (an operator's SENTINEL FAILOVER needs no quorum): nothing counts.
    if (w.failover) return MonoTime{};
    sentinels = std::max(sentinels, static_cast<std::size_t>(w.other_sentinels) + 1);
    quorum = quorum == 0 ? w.quorum : std::min(quorum, w.quorum);
  }
  if (quorum == 0 || static_cast<std::size_t>(quorum) > sentinels) return MonoTime{};
  const std::size_t need = sentinels - static_cast<std::size_t>(quorum) + 1;
  std::vector<MonoTime> ends;
  for (const Word& w : words_) {
    if (!w.run || w.run_hi <= now) continue;
    valid_until = std::min(valid_until, w.run_hi);
    if (w.settled || w.run_lo + kPeerMemory <= now) {
      ends.push_back(w.run_hi);
    } else {
      valid_until = std::min(valid_until, w.run_lo + kPeerMemory);
    }
  }
  if (ends.size() < need) return MonoTime{};
  std::sort(ends.begin(), ends.end(), std::greater<>());
  return ends[need - 1];
}
Nanos SentinelVouch::poll_period() const noexcept {
  std::int64_t smallest = 0;
  for (const Word& w : words_) {
    if (w.down_after_ms > 0 && (smallest == 0 || w.down_after_ms < smallest)) {
      smallest = w.down_after_ms;
    }
  }
  if (smallest == 0) return std::chrono::milliseconds(250);
  return std::clamp(Nanos(std::chrono::milliseconds(smallest / 5)), Nanos(std::chrono::milliseconds(50)),
                    Nanos(std::chrono::seconds(1)));
}

std::string SentinelVouch::explain(MonoTime now) const {
  std::string out;
  for (std::size_t i = 0; i < words_.size(); ++i) {
    const Word& w = words_[i];
    if (!out.empty()) out += "; ";
    out += "sentinel " + std::to_string(i + 1) + " ";
    if (!w.said.empty()) {
      out += w.said;
    } else if (!w.heard || !w.run) {
      out += "has not answered";
    } else if (w.run_hi <= now) {
      out += "last vouched until " + ms_text(now - w.run_hi) + " ago";
    } else {
      out += "vouches for " + ms_text(w.run_hi - now);
      if (!w.settled && w.run_lo + kPeerMemory > now) out += " (not settled yet)";
    }
  }
  return out;
}

}  // namespace lockwire::loop::detail
