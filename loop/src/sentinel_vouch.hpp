// Private to lockwire_loop (and its unit tests): how long the sentinels vouch that no failover
// away from the current primary can have completed. No I/O: Connection::Impl (sentinel_link.cpp)
// asks every sentinel `SENTINEL MASTER <name>` every poll_period() on its watch connection and
// feeds each reply here, with the moment the question was sent (our monotonic clock).
//
// Why the reports bound a failover (Redis 7.0 sentinel.c; the proof is docs/protocol.md,
// *Partitions*):
// - A sentinel marks the primary subjectively down (+sdown) only once its oldest unanswered PING
//   is older than down-after-milliseconds (D), and that PING was sent after the last good reply,
//   whose age the reply gives (last-ok-ping-reply, L). Asked at `sent`, it is not +sdown until
//   `sent + (D - L)` of its clock; from ~100 ms (one sentinel tick) after that good reply on, it
//   is not +sdown either. Successive reports chain into a *run*: an interval of our clock over
//   which the sentinel was never +sdown.
// - A failover starts only at a sentinel that is +sdown and counts `quorum` sentinels down: itself
//   and peers that answered "down" to its IS-MASTER-DOWN-BY-ADDR within the last 5 s
//   (SENTINEL_ASK_PERIOD * 5), a memory that SENTINEL SENTINELS shows as a peer's `master_down`
//   flag. So no failover starts at T while N - quorum + 1 sentinels have runs that cover
//   [T - 5 s, T] — or cover T and began before a report of every other sentinel that showed no
//   such memory (then nothing older can be remembered anywhere).
// - until = the (N - quorum + 1)-th latest run end among such sentinels.
// Clock rates may differ by up to kRateDrift; a sentinel whose clock steps enters TILT and
// starts no failover for 30 s (sentinel.c, sentinelCheckTiltCondition). A failover that had
// already started before the first report is announced by its leader (+promoted-slave), which
// the connection follows as before.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lockwire/loop/seam.hpp"
#include "lockwire/resp/node.hpp"

namespace lockwire::loop::detail {

// What SENTINEL MASTER <name> says that matters here.
struct MasterView {
  std::string ip;
  std::uint16_t port = 0;
  bool down = false;          // s_down or o_down in `flags`
  bool failing_over = false;  // failover_in_progress in `flags`
  std::int64_t last_ok_ping_ms = 0;
  std::int64_t down_after_ms = 0;
  int quorum = 0;
  int other_sentinels = 0;
  int replicas = -1;  // num-slaves: every replica the sentinel knows, down ones too; -1 absent
};

// The reply's fields, or nullopt with `why` (the sentinel's own words for an error reply).
[[nodiscard]] std::optional<MasterView> parse_master_view(resp::Frame reply, std::string& why);
// SENTINEL SENTINELS <name>: whether any peer carries `master_down` (this sentinel remembers it
// answering "down" within 5 s); nullopt with `why` for an error or a malformed reply.
[[nodiscard]] std::optional<bool> remembers_peer_down(resp::Frame reply, std::string& why);

class SentinelVouch {
 public:
  // Relative clock-rate difference allowed between us and a sentinel (NTP slews at most
  // 0.05%; 1% leaves room for a VM's clock).
  static constexpr double kRateDrift = 0.01;
  // How long a sentinel remembers a peer's "down" answer (SENTINEL_ASK_PERIOD * 5).
  static constexpr Nanos kPeerMemory = std::chrono::seconds(5);
  // After a good PING reply a sentinel clears +sdown at its next tick (10 Hz), plus margin.
  static constexpr Nanos kTick = std::chrono::milliseconds(110);

  explicit SentinelVouch(std::size_t sentinels) : words_(sentinels) {}

  // The primary we are on (or about to be): only reports about it count.
  void on_server(std::string host, std::uint16_t port);
  // Sentinel i's replies to SENTINEL MASTER and SENTINEL SENTINELS, asked at `sent`, read at
  // `now`.
  void answered(std::size_t i, MonoTime sent, MonoTime now, resp::Frame master,
                resp::Frame peers);
  // Sentinel i could not be asked (`why`): what it said before still holds, but it vouches for
  // no memory-free moment.
  void unanswered(std::size_t i, std::string why);

  // Before this moment no failover away from the current server can start, as far as the
  // reports tell, judged at `now`; MonoTime{} when they do not vouch at all.
  [[nodiscard]] MonoTime until(MonoTime now) const noexcept;
  // How often to ask: a fifth of the smallest down-after reported, within [50 ms, 1 s].
  [[nodiscard]] Nanos poll_period() const noexcept;
  // In words, for an error message: who vouches for what, and who does not.
  [[nodiscard]] std::string explain(MonoTime now) const;
  // The most replicas of the current primary any sentinel reports (num-slaves, which counts the
  // replicas it has ever seen, down ones included: the configured set, not the reachable one);
  // -1 before a sentinel named this primary.
  [[nodiscard]] int known_replicas() const noexcept;

 private:
  struct Word {
    bool heard = false;    // answered since on_server()
    bool run = false;      // [run_lo, run_hi]: never +sdown over it
    MonoTime run_lo{}, run_hi{};
    // Its run is clear of any sentinel's memory of a "down" answer: seen so once (every
    // sentinel clean after the run began), it stays so while the run goes on.
    bool settled = false;
    bool clean = false;    // its last report showed no peer remembered as down, at clean_at
    // Its last report says a failover of the primary is under way (failover_in_progress, or
    // another primary named): nothing is vouched for while it says so.
    bool failover = false;
    MonoTime clean_at{};
    int quorum = 0;
    int other_sentinels = 0;
    std::int64_t down_after_ms = 0;
    int replicas = -1;     // num-slaves, when it names our primary
    std::string said;      // why it does not vouch now (its words); empty when it does
  };
  void settle();
  [[nodiscard]] MonoTime compute(MonoTime now, MonoTime& valid_until) const;
  std::vector<Word> words_;
  // until() is asked before every acquire attempt: its value is kept until an answer comes or
  // a run end or a 5 s settling passes (the only moments it can change without an answer).
  mutable MonoTime cached_{};
  mutable MonoTime cached_from_{Nanos::max()}, cached_to_{};
  std::string host_;
  std::uint16_t port_ = 0;
};

}  // namespace lockwire::loop::detail
