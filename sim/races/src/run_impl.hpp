// The harness's records of a run (Run::Impl: clients, attempts with their server-side spans,
// leases with the client's belief, writes to the fenced resource, pushes) and the checkers'
// view of them. Private to sim/races: run.cpp keeps the records, checks/*.cpp judge them.
#pragma once

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "lockwire/races/races.hpp"

namespace lockwire::races {

namespace detail {

inline constexpr Nanos kNever{-1};

inline std::string fmt_t(Nanos t) {
  char b[48];
  std::snprintf(b, sizeof b, "%.3fms", static_cast<double>(t.count()) / 1e6);
  return b;
}

}  // namespace detail

using detail::fmt_t;
using detail::kNever;

struct Run::Impl {
  struct Client {
    sim::Node* node = nullptr;
    std::unique_ptr<Strategy> s;
    int attempts = 0;
    int latest = -1;  // index into leases
    bool exempt = false;
  };
  struct Interval {
    Nanos start{0};
    std::uint64_t seq = 0;  // simulator events run when it began: orders same-instant grants
    Nanos end = kNever;
    bool expired = false;      // ended because its TTL ran out on the server clock
    bool own_release = false;  // ended while its holder's release was in progress
    // Ended because the primary changed (+switch-master) and the new one lacks it: a grant or
    // renewal the old primary made after the replica's promotion, or one not yet replicated.
    bool moved = false;
  };
  struct Attempt {
    int client = 0;
    std::string label;  // unique per attempt (client.n); queries use it
    std::string owner, resource;
    bool shared = false;
    int upgrade_of = -1;  // an upgrade: the attempt whose shared lease it promotes
    int permits = 0;      // a semaphore's holder: at most that many at once
    Nanos start{0}, deadline{0}, reported = kNever, ttl{0};
    std::error_code ec;
    int lease = -1;  // index into leases
    bool held = false;
    std::int64_t expire_at = -1;
    std::vector<Interval> server;
  };
  struct LeaseRec {
    int attempt = 0;
    int id = -1;  // strategy's lease id
    std::uint64_t token = 0;
    Nanos granted{0};
    Nanos belief_end = kNever;
    Nanos lost_notice = kNever;
    Nanos release_start = kNever, release_end = kNever;
    Nanos renew_start = kNever, renew_end = kNever;  // the latest renew
    bool release_ok = false;                         // the release reported success
    std::vector<Job> then;  // Job::then: started when the release is answered
  };
  struct Push {
    int client;
    Nanos t;
    std::string kind;
  };
  struct Write {
    int lease;
    Nanos t;
    bool accepted;
  };

  Run& run;
  std::vector<Client> clients;
  std::vector<Attempt> attempts;
  std::vector<LeaseRec> leases;
  std::vector<Write> writes;
  std::vector<Push> pushes;
  std::map<std::string, std::uint64_t> fence;  // resource -> highest token seen
  std::set<std::string, std::less<>> marks;
  std::vector<std::string> honest_violations, leak_violations;
  std::uint64_t last_processed = ~std::uint64_t{0};
  const sim::SimRedis* truth = nullptr;  // the primary of the last sample
  Nanos last_sample{-1};
  bool dirty = true;
  Nanos end{0};
  bool finished = false;

  explicit Impl(Run& r) : run(r) {}

  Strategy& oracle() { return *clients.at(0).s; }

  bool in_release(const Attempt& a, Nanos t) const {
    if (a.lease < 0) return false;
    const LeaseRec& l = leases[static_cast<std::size_t>(a.lease)];
    return l.release_start != kNever && l.release_start <= t &&
           (l.release_end == kNever || l.release_end >= t);
  }

  // Ground truth is the primary: Run::redis(), which follows +switch-master (what the sentinels'
  // newest configuration names). An old primary's leftovers are not leases anyone is granted
  // through the sentinels; what its clients still believe is judged by beliefs and writes.
  bool holds(const Attempt& a, std::int64_t* exp) {
    if (run.cluster_) {
      for (sim::SimRedis* srv : cluster_truth(a.resource)) {
        if (srv->node().alive() &&
            oracle().server_holds(srv->model(), a.resource, a.owner, a.shared, exp)) {
          return true;
        }
      }
      return false;
    }
    return run.redis().node().alive() &&
           oracle().server_holds(run.redis().model(), a.resource, a.owner, a.shared, exp);
  }

  // [from, to] meets a failover's two-primary window (sim_sentinel.hpp, Window) or the first
  // 50 ms after its +switch-master, while clients move: which server a release or renew acted
  // on is then not the ground truth's, so its honesty cannot be judged from it.
  bool two_primaries(Nanos from, Nanos to) {
    for (const auto& w : run.windows_) {
      if (from <= (w.to < Nanos{0} ? Nanos::max() : w.to) && to >= w.from) return true;
    }
    if (run.sentinels() == nullptr) return false;
    for (const auto& w : run.sentinels()->windows()) {
      const Nanos end = w.switched < Nanos{0} ? Nanos::max() : w.switched + 50ms;
      if (from <= end && to >= w.promoted) return true;
    }
    return false;
  }

  // RunConfig::cluster: the primaries whose copy of `resource` is ground truth — the one serving
  // its slot (SimCluster::owner, which moves at a promotion and at the last SETSLOT NODE of a
  // migration), or while its slot migrates both source and target (each key is on one of them).
  std::vector<sim::SimRedis*> cluster_truth(std::string_view resource) const {
    const int slot = Run::slot_of(resource);
    for (const auto& m : run.migrations_) {
      if (m.slot == slot) return {&run.cluster_->server(m.from), &run.cluster_->server(m.to)};
    }
    return {&run.cluster_->server(run.cluster_->owner(slot))};
  }
  std::map<std::string, const sim::SimRedis*, std::less<>> truth_by_resource;  // cluster

  void sample_cluster(Nanos now, std::uint64_t seq) {
    for (Attempt& a : attempts) {
      const auto srvs = cluster_truth(a.resource);
      // While a serving node is down nothing is granted or released there: its leases are as
      // they were until it is back or its replica replaces it.
      bool down = false;
      for (auto* srv : srvs) down = down || !srv->node().alive();
      if (down) continue;
      sim::SimRedis* t = srvs.front();
      auto [it, fresh] = truth_by_resource.try_emplace(a.resource, t);
      // Not a migration's hand-over (the keys moved with it): a failover's.
      const bool moved = !fresh && it->second != t && srvs.size() == 1 &&
                         std::find(migrated_to.begin(), migrated_to.end(), static_cast<const sim::SimRedis*>(t)) == migrated_to.end();
      std::int64_t exp = -1;
      const bool held = holds(a, &exp);
      if (held && !a.held) {
        a.server.push_back(Interval{now, seq});
      } else if (!held && a.held) {
        Interval& iv = a.server.back();
        iv.end = now;
        iv.expired = a.expire_at >= 0 && t->model().wall_ms() > a.expire_at;
        iv.own_release = in_release(a, now);
        iv.moved = moved && !iv.expired;
      }
      a.held = held;
      a.expire_at = exp;
    }
    for (Attempt& a : attempts) {
      const auto srvs = cluster_truth(a.resource);
      bool down = false;
      for (auto* srv : srvs) down = down || !srv->node().alive();
      if (!down && srvs.size() == 1) truth_by_resource[a.resource] = srvs.front();
    }
    migrated_to.clear();
  }
  std::vector<const sim::SimRedis*> migrated_to;  // targets of migrations finished since

  void sample() {
    sim::World& w = run.world();
    const Nanos now = w.now();
    std::uint64_t processed = 0;  // (the old primary's commands too: it may still change)
    for (const auto& srv : run.servers_) processed += srv->model().commands_processed();
    if (run.cluster_) {
      for (std::size_t i = 0; i < run.cluster_->size(); ++i)
        processed += run.cluster_->server(i).model().commands_processed();
    }
    if (!dirty && now == last_sample && processed == last_processed) return;
    dirty = false;
    last_sample = now;
    last_processed = processed;
    if (run.cluster_) {
      sample_cluster(now, w.events_run());
      sample_beliefs(now);
      return;
    }
    const bool alive = run.redis().node().alive();
    // While the primary is down nothing is granted or released: its leases are as they were
    // until it is back (restart) or another primary replaces it (failover).
    if (!alive) return;
    const bool moved = truth != nullptr && truth != &run.redis();
    truth = &run.redis();
    const std::int64_t wall = run.redis().model().wall_ms();
    for (Attempt& a : attempts) {
      std::int64_t exp = -1;
      const bool held = holds(a, &exp);
      if (held && !a.held) {
        a.server.push_back(Interval{now, w.events_run()});
      } else if (!held && a.held) {
        Interval& iv = a.server.back();
        iv.end = now;
        iv.expired = alive && a.expire_at >= 0 && wall > a.expire_at;  // Redis: now > when
        iv.own_release = in_release(a, now);
        iv.moved = moved && !iv.expired;
      }
      a.held = held;
      a.expire_at = exp;
    }
    sample_beliefs(now);
  }
  void sample_beliefs(Nanos now) {
    for (LeaseRec& l : leases) {
      if (l.belief_end != kNever) continue;
      const Attempt& a = attempts[static_cast<std::size_t>(l.attempt)];
      const Strategy& s = *clients[static_cast<std::size_t>(a.client)].s;
      if (s.believes_held(l.id)) continue;
      const std::optional<Nanos> at = s.belief_ended_at(l.id);
      l.belief_end = at && *at <= now && *at >= l.granted ? *at : now;
    }
  }

  void write(int lease_idx) {
    LeaseRec& l = leases[static_cast<std::size_t>(lease_idx)];
    const Attempt& a = attempts[static_cast<std::size_t>(l.attempt)];
    std::uint64_t& hi = fence[a.resource];
    const bool ok = l.token >= hi;
    if (ok) hi = l.token;
    writes.push_back(Write{lease_idx, run.world().now(), ok});
    run.note("write", a.label + " token " + std::to_string(l.token) +
                          (ok ? " accepted" : " REJECTED (stale token)"));
  }

  // Ground truth right now, for report-time checks.
  bool held_now(const Attempt& a) { return holds(a, nullptr); }

  void do_release(int li) {
    LeaseRec& l = leases[static_cast<std::size_t>(li)];
    if (l.release_start != kNever) return;
    l.release_start = run.world().now();
    dirty = true;
    const Attempt& a = attempts[static_cast<std::size_t>(l.attempt)];
    run.note("release", a.label);
    Strategy& s = *clients[static_cast<std::size_t>(a.client)].s;
    s.release(l.id, [this, li](std::error_code ec) {
      LeaseRec& l2 = leases[static_cast<std::size_t>(li)];
      const Attempt& a2 = attempts[static_cast<std::size_t>(l2.attempt)];
      l2.release_end = run.world().now();
      l2.release_ok = !ec;
      dirty = true;
      run.note("released", a2.label + (ec ? " -> " + ec.message() : " -> ok"));
      if (!ec && two_primaries(l2.release_start, l2.release_end)) {
        run.note("unjudged", a2.label + " released while two primaries were writable");
      } else if (!ec) {
        if (held_now(a2)) {
          honest_violations.push_back(a2.label + ": release reported success at " +
                                      fmt_t(l2.release_end) + " but the lease is still held");
        }
        pending_release_checks.push_back(li);
      }
      if (!l2.then.empty()) {  // a worker loop locks again from the release's answer
        const int c = a2.client;
        Job next = std::move(l2.then.front());
        l2.then.clear();
        run.job(c, run.world().now(), std::move(next));
      }
    });
  }

  void do_renew(int li) {
    LeaseRec& l = leases[static_cast<std::size_t>(li)];
    const Attempt& a = attempts[static_cast<std::size_t>(l.attempt)];
    run.note("renew", a.label);
    const Nanos started = run.world().now();
    l.renew_start = started;
    l.renew_end = kNever;
    clients[static_cast<std::size_t>(a.client)].s->renew(
        l.id, [this, li, started](std::error_code ec) {
          LeaseRec& l2 = leases[static_cast<std::size_t>(li)];
          const Attempt& a2 = attempts[static_cast<std::size_t>(l2.attempt)];
          if (l2.renew_start == started) l2.renew_end = run.world().now();
          dirty = true;
          run.note("renewed", a2.label + (ec ? " -> " + ec.message() : " -> ok"));
          // (A release the holder started meanwhile may legitimately have removed it since.)
          // A renewal applied while held extends the lease to at least start + ttl on the server
          // (the report may come later, e.g. after a process pause): only a shorter life is a lie.
          bool extended = false;
          if (!a2.server.empty()) {
            const Interval& iv = a2.server.back();
            extended = iv.end == kNever || iv.end >= started + a2.ttl - 1ms;
          }
          if (!ec && !held_now(a2) && !extended && l2.release_start == kNever &&
              !two_primaries(started, run.world().now())) {
            honest_violations.push_back(a2.label + ": renew reported success at " +
                                        fmt_t(run.world().now()) +
                                        " but the server does not hold its lease");
          }
        });
  }

  std::vector<int> pending_release_checks;
  std::vector<std::pair<Check, std::string>> extra;  // scenario-specific findings
  sim::Node* ops = nullptr;                          // the operator's node (Run::admin)
  std::unique_ptr<loop::Connection> admin;
};

namespace checks {

// What every checker reads: the records, the end of the run (the finish, or now), the moment
// faults were healed, and the run's configuration (bounds).
struct Input {
  const Run::Impl& im;
  Nanos end;
  Nanos healed_at;
  const RunConfig& config;

  // The attempt a lease (index into im.leases) was granted to.
  [[nodiscard]] const Run::Impl::Attempt& owner_of(int li) const {
    return im.attempts[static_cast<std::size_t>(im.leases[static_cast<std::size_t>(li)].attempt)];
  }
  // When the holder stopped believing it held the lease (or started releasing it, or was told
  // it lost it), whichever came first; the end of the run if never.
  [[nodiscard]] Nanos belief_end(const Run::Impl::LeaseRec& l) const {
    Nanos e = l.belief_end == kNever ? end : l.belief_end;
    if (l.release_start != kNever) e = std::min(e, l.release_start);
    if (l.lost_notice != kNever) e = std::min(e, l.lost_notice);
    return e;
  }
};

// Records a violation under a checker (Run::verdicts keeps at most 20 per checker).
using Add = std::function<void(Check, std::string)>;

// One checker per file (checks/<name>.cpp); docs/races.md says what each one judges.
void mutual_exclusion(const Input& in, const Add& add);
void no_orphan(const Input& in, const Add& add);
void honest_release_renew(const Input& in, const Add& add);
void lease_loss_notice(const Input& in, const Add& add);
void liveness(const Input& in, const Add& add);
void two_holders(const Input& in, const Add& add);  // RunConfig::strict_exclusion

}  // namespace checks

}  // namespace lockwire::races
