// Private to lockwire_lock (and its unit tests): how long the cluster's masters vouch that no
// failover away from a primary P can start. No I/O: Client::Router (router.cpp) asks every node
// `TIME`, `CLUSTER NODES`, `CONFIG GET cluster-node-timeout` and `CLUSTER COUNT-FAILURE-REPORTS
// <id>` for each primary, pipelined, every poll_period(), and feeds each answer here with the
// moments it was sent and read (our monotonic clock).
//
// Why the answers bound a failover (Redis 7.0 cluster.c; the proof is docs/protocol.md, *Redis
// Cluster: the masters' vouch*):
// - A node Y flags P PFAIL (`fail?`) only once a PING to P has been pending for more than its
//   node timeout nt (clusterCron). P's line in Y's CLUSTER NODES gives the pending PING's send
//   time (ping-sent, Y's ms clock; 0 = none pending) and TIME gives Y's clock: Y cannot flag P
//   before `(ping-sent or now) + nt` of its clock. Successive answers chain into a *run*: an
//   interval of our clock over which Y never flags P.
// - FAIL of P is declared by any node counting failure reports from masters (plus itself when
//   it is a master), needing size/2 + 1 (size = masters serving slots); a report is Y's gossip
//   of P as PFAIL, kept 2 * nt (CLUSTER_FAIL_REPORT_VALIDITY_MULT). A replica is elected only
//   with the votes of masters that see P as FAIL. So no failover of P starts at T while
//   `masters - needed` masters other than P are *clean* at T: their run covers T, and either
//   also [T - 2 nt, T], or every node answered COUNT-FAILURE-REPORTS 0 for P with no flag on it
//   after the run began (then no report from them exists, and none can arise while it goes on).
// - until(P) = the (masters - needed)-th latest run end among clean masters.
// Clock rates may differ by up to kRateDrift. A manual CLUSTER FAILOVER (no FAIL) is followed
// through the slot map, as before; FORCE / TAKEOVER are the operator's.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lockwire/loop/seam.hpp"
#include "lockwire/resp/node.hpp"

namespace lockwire::lock::detail {

using loop::MonoTime;
using loop::Nanos;

// One line of CLUSTER NODES, the fields that matter here.
struct NodeLine {
  std::string id;
  std::string addr;  // host:port (the cluster bus port and hostname dropped)
  bool myself = false;
  bool master = false;
  bool flagged = false;  // fail? or fail
  bool serves_slots = false;
  std::int64_t ping_sent_ms = 0;  // 0: no PING pending
};

// The lines of a CLUSTER NODES reply; nullopt with `why` (the node's own words for an error).
[[nodiscard]] std::optional<std::vector<NodeLine>> parse_cluster_nodes(resp::Frame reply,
                                                                       std::string& why);

class ClusterVouch {
 public:
  // Relative clock-rate difference allowed between us and a node (as SentinelVouch).
  static constexpr double kRateDrift = 0.01;

  // One node's answer to the pipelined question.
  struct Answer {
    resp::Frame time;    // TIME
    resp::Frame nodes;   // CLUSTER NODES
    resp::Frame config;  // CONFIG GET cluster-node-timeout
    // CLUSTER COUNT-FAILURE-REPORTS <id>, by id
    std::vector<std::pair<std::string, resp::Frame>> counts;
  };

  // The nodes asked, by host:port: what the others said is forgotten.
  void set_nodes(const std::vector<std::string>& addrs);
  void answered(const std::string& addr, MonoTime sent, MonoTime recv, const Answer& a);
  // The node could not be asked (`why`): its runs keep what they proved, but it shows no
  // report-free snapshot.
  void unanswered(const std::string& addr, std::string why);

  // Before this moment no failover of the primary `id` can start, judged at `now`; MonoTime{}
  // when not vouched, kNever (MonoTime{Nanos::max()}) when CONFIG GET was refused (refused()).
  [[nodiscard]] MonoTime until(std::string_view id, MonoTime now) const;
  // A fifth of the smallest node timeout heard, within [50 ms, 1 s]; 250 ms before any.
  [[nodiscard]] Nanos poll_period() const noexcept;
  // In words: who vouches for what, and who does not.
  [[nodiscard]] std::string explain(std::string_view id, MonoTime now) const;
  // The node id of host:port, from its own line (empty when not heard).
  [[nodiscard]] std::string id_of(const std::string& addr) const;
  // Some node's latest view has `id` as a replica (or lacks it): a new primary was elected.
  [[nodiscard]] bool demoted(std::string_view id) const;
  // A node's words refusing CONFIG GET cluster-node-timeout: the vouch is off (kNever).
  // Kept for the client's life: a vouch that comes and goes with an ACL would end leases
  // that were counted without it.
  [[nodiscard]] const std::string& refused() const noexcept { return refused_; }

 private:
  struct Run {
    MonoTime lo{}, hi{};
    bool settled = false;         // clear of failure reports for as long as it goes on
    bool flagged = false;         // the observer flags the subject: no run
    bool gone = false;            // the subject is not a master in the observer's view
    bool was_master = false;      // seen as a master: once demoted, its run no longer grows
    std::int64_t pending_ms = 0;  // its PING to the subject unanswered for this long (0: none)
  };
  struct Observer {
    std::string addr;
    bool heard = false;
    std::string id;
    bool master = false;
    std::int64_t nt_ms = 0;
    std::map<std::string, Run, std::less<>> runs;           // by subject id
    std::map<std::string, MonoTime, std::less<>> clean_at;  // subject id -> snapshot sent
    std::vector<NodeLine> view;                             // its latest CLUSTER NODES
    std::string said;  // why it does not vouch (its words); empty when it answers
  };
  struct Tally {
    bool known = false;      // some node has a run about the primary and a view serving slots
    bool unlimited = false;  // too few masters to declare it FAIL at all
    std::size_t masters = 0;  // named master by any view, the primary included
    std::size_t clean = 0;    // how many others must vouch
    std::vector<MonoTime> ends;  // the run ends of those that do, latest first
  };
  [[nodiscard]] Tally tally(std::string_view id, MonoTime now) const;
  void settle(const std::string& subject);
  [[nodiscard]] Nanos memory() const noexcept;
  std::vector<Observer> nodes_;
  std::string refused_;
};

}  // namespace lockwire::lock::detail
