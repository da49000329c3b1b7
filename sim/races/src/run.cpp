// The scenario harness: a world with a simulated Redis and client processes, scripted jobs, a
// fenced downstream resource, ground-truth sampling after every event, and the checkers.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "lockwire/races/races.hpp"
#include "lockwire/resp/encoder.hpp"

namespace lockwire::races {

namespace {

constexpr Nanos kNever{-1};

std::string fmt_t(Nanos t) {
  char b[48];
  std::snprintf(b, sizeof b, "%.3fms", static_cast<double>(t.count()) / 1e6);
  return b;
}

}  // namespace

std::string_view check_name(Check c) noexcept {
  switch (c) {
    case Check::mutual_exclusion:
      return "mutual-exclusion";
    case Check::no_orphan:
      return "no-orphan";
    case Check::honest_release_renew:
      return "honest-release-renew";
    case Check::lease_loss_notice:
      return "lease-loss-notice";
    case Check::liveness:
      return "liveness";
  }
  return "?";
}

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
  };
  struct Attempt {
    int client = 0;
    std::string label;  // unique per attempt (client.n); queries use it
    std::string owner, resource;
    bool shared = false;
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

  void sample() {
    sim::World& w = run.world();
    sim::RedisModel& m = run.redis().model();
    const Nanos now = w.now();
    const std::uint64_t processed = m.commands_processed();
    if (!dirty && now == last_sample && processed == last_processed) return;
    dirty = false;
    last_sample = now;
    last_processed = processed;
    const bool alive = run.redis().node().alive();
    const std::int64_t wall = m.wall_ms();
    for (Attempt& a : attempts) {
      std::int64_t exp = -1;
      const bool held = alive && oracle().server_holds(m, a.resource, a.owner, a.shared, &exp);
      if (held && !a.held) {
        a.server.push_back(Interval{now, w.events_run()});
      } else if (!held && a.held) {
        Interval& iv = a.server.back();
        iv.end = now;
        iv.expired = alive && a.expire_at >= 0 && wall > a.expire_at;  // Redis: now > when
        iv.own_release = in_release(a, now);
      }
      a.held = held;
      a.expire_at = exp;
    }
    for (LeaseRec& l : leases) {
      if (l.belief_end != kNever) continue;
      const Attempt& a = attempts[static_cast<std::size_t>(l.attempt)];
      if (!clients[static_cast<std::size_t>(a.client)].s->believes_held(l.id)) l.belief_end = now;
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
  bool held_now(const Attempt& a) {
    return run.redis().node().alive() &&
           oracle().server_holds(run.redis().model(), a.resource, a.owner, a.shared, nullptr);
  }

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
      if (!ec) {
        if (held_now(a2)) {
          honest_violations.push_back(a2.label + ": release reported success at " +
                                      fmt_t(l2.release_end) + " but the lease is still held");
        }
        pending_release_checks.push_back(li);
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
          if (!ec && !held_now(a2) && !extended && l2.release_start == kNever) {
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

Run::Run(RunConfig config) : config_(std::move(config)) {
  world_ = std::make_unique<sim::World>(config_.seed);
  world_->trace().set_keep_lines(config_.keep_trace);
  if (config_.deterministic_links) {
    sim::LinkOptions lo;
    lo.jitter = Nanos{0};
    lo.split_per_million = 0;
    world_->net().set_default_link(lo);
  }
  impl_ = std::make_unique<Impl>(*this);
  sim::Node& sn = world_->add_node("redis-a");
  servers_.push_back(std::make_unique<sim::SimRedis>(*world_, sn, config_.server));
  primary_ = servers_.back().get();
  world_->net().add_address("redis", sn);
  for (int i = 0; i < config_.clients; ++i) {
    Impl::Client c;
    c.node = &world_->add_node(std::string("c").append(std::to_string(i + 1)));
    loop::ConnectionOptions o;
    o.endpoint.host = "redis";
    o.endpoint.port = 6379;
    o.connect_timeout = 1s;
    o.reconnect.initial = 5ms;
    o.reconnect.max = 100ms;
    o.health_check_interval = config_.health_check;
    if (config_.connection) config_.connection(i, o);
    c.s = make_strategy(config_.strategy, *c.node, o);
    if (!c.s) c.s = make_strategy("lockwire", *c.node, o);
    const int idx = i;
    c.s->on_lost = [this, idx](int lease_id) {
      Impl& im = *impl_;
      for (auto& l : im.leases) {
        const auto& a = im.attempts[static_cast<std::size_t>(l.attempt)];
        if (a.client == idx && l.id == lease_id && l.lost_notice == kNever) {
          l.lost_notice = world_->now();
          note("lost", a.label);
        }
      }
      im.dirty = true;
    };
    c.s->on_push = [this, idx](std::string_view kind) {
      impl_->pushes.push_back(Impl::Push{idx, world_->now(), std::string(kind)});
      impl_->dirty = true;
    };
    c.s->start();
    impl_->clients.push_back(std::move(c));
  }
}

Run::~Run() {
  impl_->admin.reset();
  for (auto& c : impl_->clients) c.s.reset();
  servers_.clear();
}

sim::Node& Run::node(int client) noexcept {
  return *impl_->clients[static_cast<std::size_t>(client)].node;
}
Strategy& Run::strategy(int client) noexcept {
  return *impl_->clients[static_cast<std::size_t>(client)].s;
}
std::uint64_t Run::connection_of(int client) const {
  auto v = world_->net().connections_of(*impl_->clients[static_cast<std::size_t>(client)].node);
  return v.empty() ? 0 : v.back();
}

void Run::note(std::string_view what, std::string_view detail) {
  world_->trace().record(world_->now(), "races", what, detail);
}

void Run::at(Nanos t, std::function<void()> fn) {
  world_->schedule(t, nullptr, [this, fn = std::move(fn)] {
    impl_->dirty = true;
    fn();
  });
}

void Run::when(Nanos from, Nanos until, Nanos step, std::function<bool()> pred,
               std::function<void()> fn) {
  at(from, [this, from, until, step, pred = std::move(pred), fn = std::move(fn)]() mutable {
    if (pred()) return fn();
    if (from + step <= until) when(from + step, until, step, std::move(pred), std::move(fn));
  });
}

std::string Run::job(int c, Nanos t, Job j, std::function<void(const AcquireResult&)> on_done) {
  Impl& im = *impl_;
  Impl::Client& cl = im.clients[static_cast<std::size_t>(c)];
  const std::string label = cl.node->name() + "." + std::to_string(++cl.attempts);
  const std::string owner = j.owner.empty() ? label : j.owner;
  sim::Node* node = cl.node;
  world_->schedule(t, node, [this, c, label, owner, j, on_done = std::move(on_done)] {
    Impl& im2 = *impl_;
    Impl::Attempt a;
    a.client = c;
    a.label = label;
    a.owner = owner;
    a.resource = j.resource;
    a.shared = j.shared;
    a.start = world_->now();
    a.deadline = a.start + j.wait;
    a.ttl = j.ttl;
    const int ai = static_cast<int>(im2.attempts.size());
    im2.attempts.push_back(a);
    im2.dirty = true;
    AcquireSpec spec;
    spec.resource = j.resource;
    spec.owner = owner;
    spec.ttl = j.ttl;
    spec.wait = j.wait;
    spec.auto_renew = j.auto_renew;
    spec.shared = j.shared;
    note(j.shared ? "acquire-shared" : "acquire",
         owner + (owner == label ? "" : " (" + label + ")") + " ttl " + fmt_t(j.ttl) + " wait " +
             fmt_t(j.wait));
    im2.clients[static_cast<std::size_t>(c)].s->acquire(spec, [this, ai, c, j,
                                                               on_done](AcquireResult r) {
      Impl& im3 = *impl_;
      Impl::Attempt& at = im3.attempts[static_cast<std::size_t>(ai)];
      at.reported = world_->now();
      at.ec = r.ec;
      im3.dirty = true;
      if (r.ec) {
        note("acquire-failed", at.label + " " + r.ec.message());
      } else {
        Impl::LeaseRec l;
        l.attempt = ai;
        l.id = r.lease;
        l.token = r.token;
        l.granted = world_->now();
        const int li = static_cast<int>(im3.leases.size());
        im3.leases.push_back(l);
        at.lease = li;
        im3.clients[static_cast<std::size_t>(c)].latest = li;
        note("granted", at.label + " token " + std::to_string(r.token));
        sim::Node* n = im3.clients[static_cast<std::size_t>(c)].node;
        for (Nanos wdt : j.writes) {
          // The holder checks its belief, then its write lands 1 ms later (the window a
          // process pause can fall into).
          world_->schedule(world_->now() + wdt, n, [this, c, li, n] {
            Impl& i4 = *impl_;
            const auto& l4 = i4.leases[static_cast<std::size_t>(li)];
            if (!i4.clients[static_cast<std::size_t>(c)].s->believes_held(l4.id)) return;
            world_->schedule(world_->now() + 1ms, n, [this, li] { impl_->write(li); });
          });
        }
        if (j.renew_after >= Nanos{0}) {
          world_->schedule(world_->now() + j.renew_after, n, [this, li] { impl_->do_renew(li); });
        }
        if (j.release_after >= Nanos{0}) {
          world_->schedule(world_->now() + j.release_after, n,
                           [this, li] { impl_->do_release(li); });
        }
      }
      if (on_done) on_done(r);
    });
  });
  return label;
}

void Run::release_latest(int c) {
  const int li = impl_->clients[static_cast<std::size_t>(c)].latest;
  if (li >= 0) impl_->do_release(li);
}
void Run::renew_latest(int c) {
  const int li = impl_->clients[static_cast<std::size_t>(c)].latest;
  if (li >= 0) impl_->do_renew(li);
}
void Run::renew(std::string_view label) {
  for (const auto& a : impl_->attempts)
    if (a.label == label && a.lease >= 0) return impl_->do_renew(a.lease);
}
void Run::write_latest(int c) {
  const int li = impl_->clients[static_cast<std::size_t>(c)].latest;
  if (li >= 0) impl_->write(li);
}

void Run::force_release(int c, std::string resource) {
  note("force-release", resource);
  impl_->dirty = true;
  strategy(c).force_release(resource, [this, resource](std::error_code ec) {
    note("force-released", resource + (ec ? " -> " + ec.message() : " -> ok"));
    impl_->dirty = true;
  });
}

void Run::admin(std::vector<std::string> args,
                std::function<void(std::error_code, std::string)> done) {
  Impl& im = *impl_;
  if (!im.admin) {
    im.ops = &world_->add_node("ops");
    loop::ConnectionOptions o;
    o.endpoint.host = "redis";
    o.endpoint.port = 6379;
    o.connect_timeout = 1s;
    o.reconnect.initial = 5ms;
    o.reconnect.max = 100ms;
    im.admin = std::make_unique<loop::Connection>(im.ops->loop(), o);
    im.admin->start();
  }
  loop::Request r;
  std::vector<std::string_view> v(args.begin(), args.end());
  resp::append_command(r.bytes, std::span<const std::string_view>(v));
  r.commands = 1;
  im.dirty = true;
  im.admin->send(
      std::move(r), [this, done = std::move(done)](std::error_code ec, const loop::Replies& rep) {
        impl_->dirty = true;
        if (!done) return;
        std::string text;
        if (rep.size() > 0 && !rep[0].empty()) {
          const resp::Node& n = rep[0][0];
          const bool err = n.type == resp::Type::simple_error || n.type == resp::Type::blob_error;
          if (n.type != resp::Type::null) text = (err ? "-" : "") + std::string(n.value);
          if (err && ec == loop::Errc::server_error) ec = {};  // the text says it
        }
        done(ec, std::move(text));
      });
}

void Run::mark(std::string_view name) {
  if (impl_->marks.insert(std::string(name)).second) note("mark", name);
}
void Run::violate(Check c, std::string what) {
  note("violation", what);
  impl_->extra.emplace_back(c, std::move(what));
}

bool Run::marked(std::string_view name) const {
  return impl_->marks.find(name) != impl_->marks.end();
}

sim::SimRedis& Run::add_replica(Nanos lag) {
  sim::Node& n =
      world_->add_node("redis-" + std::string(1, static_cast<char>('a' + servers_.size())));
  servers_.push_back(std::make_unique<sim::SimRedis>(*world_, n));
  primary_->add_replica(*servers_.back(), lag);
  return *servers_.back();
}

void Run::fail_over_to(sim::SimRedis& to) {
  sim::SimRedis* old = primary_;
  impl_->sample();
  to.promote();
  world_->net().add_address("redis", to.node());
  primary_ = &to;
  impl_->dirty = true;
  old->kill();
  impl_->sample();
}

namespace {
template <class V>
auto* find_attempt(V& attempts, std::string_view label) {
  for (auto& a : attempts)
    if (a.label == label) return &a;
  return static_cast<decltype(&attempts[0])>(nullptr);
}
}  // namespace

std::vector<Run::Span> Run::server_spans(std::string_view owner) const {
  std::vector<Span> v;
  if (auto* a = find_attempt(impl_->attempts, owner))
    for (const auto& iv : a->server) v.push_back(Span{iv.start, iv.end, iv.expired});
  return v;
}
Run::Span Run::acquire_span(std::string_view owner) const {
  if (auto* a = find_attempt(impl_->attempts, owner)) return Span{a->start, a->reported};
  return {};
}
bool Run::acquire_failed(std::string_view owner) const {
  auto* a = find_attempt(impl_->attempts, owner);
  return a && a->reported != kNever && a->ec;
}
Run::Span Run::release_span(std::string_view owner) const {
  auto* a = find_attempt(impl_->attempts, owner);
  if (!a || a->lease < 0) return {};
  const auto& l = impl_->leases[static_cast<std::size_t>(a->lease)];
  return Span{l.release_start, l.release_end};
}
Nanos Run::granted_at(std::string_view owner) const {
  auto* a = find_attempt(impl_->attempts, owner);
  if (!a || a->lease < 0) return kNever;
  return impl_->leases[static_cast<std::size_t>(a->lease)].granted;
}
std::vector<Nanos> Run::accepted_writes(std::string_view owner) const {
  std::vector<Nanos> v;
  auto* a = find_attempt(impl_->attempts, owner);
  if (!a || a->lease < 0) return v;
  for (const auto& w : impl_->writes)
    if (w.lease == a->lease && w.accepted) v.push_back(w.t);
  return v;
}
std::vector<Nanos> Run::rejected_writes(std::string_view owner) const {
  std::vector<Nanos> v;
  auto* a = find_attempt(impl_->attempts, owner);
  if (!a || a->lease < 0) return v;
  for (const auto& w : impl_->writes)
    if (w.lease == a->lease && !w.accepted) v.push_back(w.t);
  return v;
}
bool Run::server_holds_now(std::string_view owner) {
  auto* a = find_attempt(impl_->attempts, owner);
  return a && impl_->held_now(*a);
}
Run::Span Run::renew_span(std::string_view owner) const {
  auto* a = find_attempt(impl_->attempts, owner);
  if (!a || a->lease < 0) return {};
  const auto& l = impl_->leases[static_cast<std::size_t>(a->lease)];
  return Span{l.renew_start, l.renew_end};
}
std::vector<Nanos> Run::pushes(int client, std::string_view kind) const {
  std::vector<Nanos> v;
  for (const auto& p : impl_->pushes)
    if (p.client == client && (kind.empty() || p.kind == kind)) v.push_back(p.t);
  return v;
}

void Run::exempt_client(int c) {
  impl_->clients[static_cast<std::size_t>(c)].exempt = true;
}

void Run::run_until(Nanos until) {
  impl_->sample();
  world_->run_until(
      [this] {
        impl_->sample();
        return false;
      },
      until);
  impl_->sample();
}

void Run::finish(Nanos settle) {
  Impl& im = *impl_;
  run_until(world_->now() + settle);
  for (std::size_t i = 0; i < im.clients.size(); ++i) {
    auto& c = im.clients[i];
    if (c.exempt || !c.node->alive()) continue;
    if (const auto n = c.s->in_flight(); n != 0) {
      im.leak_violations.push_back(c.node->name() + ": " + std::to_string(n) +
                                   " request(s) still in flight after settling");
    }
  }
  im.end = world_->now();
  if (im.admin) im.admin->close();
  for (auto& c : im.clients) c.s->close();
  const std::uint64_t n = world_->run_until_idle(200'000);
  if (n >= 200'000) im.leak_violations.push_back("events keep coming after close (leaked timer?)");
  im.finished = true;
}

std::vector<Verdict> Run::verdicts() const {
  const Impl& im = *impl_;
  const Nanos end = im.finished ? im.end : world_->now();
  std::vector<Verdict> out;
  for (Check c : kChecks) out.push_back(Verdict{c, {}});
  auto add = [&](Check c, std::string s) {
    auto& v = out[static_cast<std::size_t>(c)].violations;
    if (v.size() < 20) v.push_back(std::move(s));
  };
  auto owner_of = [&](int li) -> const Impl::Attempt& {
    return im.attempts[static_cast<std::size_t>(im.leases[static_cast<std::size_t>(li)].attempt)];
  };
  auto belief_end = [&](const Impl::LeaseRec& l) {
    Nanos e = l.belief_end == kNever ? end : l.belief_end;
    if (l.release_start != kNever) e = std::min(e, l.release_start);
    if (l.lost_notice != kNever) e = std::min(e, l.lost_notice);
    return e;
  };

  for (const auto& [c, what] : im.extra) add(c, what);

  // --- mutual exclusion ---
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
    std::vector<const Impl::Interval*> span_of(im.leases.size(), nullptr);
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

  // --- no orphan ---
  for (const auto& a : im.attempts) {
    if (a.reported == kNever || !a.ec) continue;
    if (im.clients[static_cast<std::size_t>(a.client)].exempt) continue;
    const Nanos c = std::max(a.reported, healed_at_) + config_.orphan_grace;
    if (c > end) continue;
    // Ground truth is per owner id: with an owner id reused by several attempts (a duplicate
    // acquire refused as already_held), a span that began while another attempt of the same owner
    // was acquiring or holding is that attempt's lease, not an orphan of this one.
    auto other_owns = [&](const Impl::Interval& iv) {
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
        if (!acquiring && iv.start >= healed_at_ && until - iv.start > config_.orphan_grace) {
          add(Check::no_orphan, a.owner + " (" + a.resource + ") was granted on the server at " +
                                    fmt_t(iv.start) + " while no acquire of it was in progress; " +
                                    "held until " +
                                    (iv.end == kNever ? std::string("the end") : fmt_t(iv.end)));
        }
      }
    }
  }

  // --- honest release / renew ---
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

  // --- lease-loss notice ---
  for (std::size_t i = 0; i < im.leases.size(); ++i) {
    const auto& l = im.leases[i];
    const auto& a = owner_of(static_cast<int>(i));
    if (im.clients[static_cast<std::size_t>(a.client)].exempt) continue;
    const Impl::Interval* iv = nullptr;
    for (const auto& x : a.server) {
      if (x.start <= l.granted) iv = &x;
    }
    if (iv == nullptr || iv->end == kNever || iv->own_release) continue;
    const Nanos told = belief_end(l);
    // A grant reported after its lease had already ended is fine if the holder was told at once.
    if (told > std::max(iv->end, l.granted)) {
      add(Check::lease_loss_notice,
          a.label + "'s lease ended on the server at " + fmt_t(iv->end) +
              (iv->expired ? " (expired)" : " (removed by someone else)") +
              " but the holder believed it held until " +
              (told >= end ? std::string("the end") : fmt_t(told)));
    } else if (l.lost_notice == kNever && l.release_start == kNever) {
      add(Check::lease_loss_notice, a.label + "'s lease ended on the server at " + fmt_t(iv->end) +
                                        " and the holder was never told");
    }
  }

  // --- liveness ---
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
    const Nanos due = std::max(a.deadline, a.start) + config_.deadline_bound;
    if (a.deadline >= healed_at_ && due <= end && (a.reported == kNever || a.reported > due)) {
      add(Check::liveness, a.label + " waited until " +
                               (a.reported == kNever ? std::string("the end") : fmt_t(a.reported)) +
                               ", deadline " + fmt_t(a.deadline));
    }
    // A free lock while this attempt waited (after the heal): must be granted within the bound.
    const Nanos ws = std::max(a.start, healed_at_);
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
      if (gap_end - free_from > config_.wake_bound) {
        add(Check::liveness, a.label + " kept waiting while " + a.resource + " was free from " +
                                 fmt_t(free_from) + " to " + fmt_t(gap_end));
        break;
      }
      free_from = std::max(free_from, e);
      if (free_from >= we) break;
    }
  }
  return out;
}

bool Run::all_pass(std::span<const Check> except) const {
  for (const auto& v : verdicts()) {
    if (v.violations.empty()) continue;
    if (std::find(except.begin(), except.end(), v.check) != except.end()) continue;
    return false;
  }
  return true;
}

std::string Run::report() const {
  std::string s;
  for (const auto& v : verdicts()) {
    s.append("  ").append(check_name(v.check));
    s.append(std::string(22 - check_name(v.check).size(), ' '));
    s.append(v.violations.empty() ? "pass\n" : "FIRES\n");
    for (const auto& x : v.violations) s.append("      ").append(x).append("\n");
  }
  s.append("  marks: ");
  for (const auto& m : impl_->marks) s.append(m).append(" ");
  s.append("\n");
  return s;
}

}  // namespace lockwire::races
