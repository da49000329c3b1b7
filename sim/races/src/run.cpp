// The scenario harness: a world with a simulated Redis and client processes, scripted jobs, a
// fenced downstream resource, ground-truth sampling after every event, and the checkers.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include "lockwire/races/races.hpp"
#include "lockwire/resp/encoder.hpp"
#include "run_impl.hpp"

namespace lockwire::races {

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
  loop::ConnectionOptions via;  // the sentinel or cluster URL's options
  if (config_.cluster) {
    const sim::ClusterConfig& cc = *config_.cluster;
    std::vector<sim::Node*> nodes;
    const int n = cc.primaries * (1 + cc.replicas_per_primary);
    for (int i = 0; i < n; ++i) nodes.push_back(&world_->add_node("n" + std::to_string(i + 1)));
    cluster_ = std::make_unique<sim::SimCluster>(*world_, nodes, cc);
    primary_ = &cluster_->server(0);
    world_->net().add_address("redis", primary_->node());
    cluster_->on_failover = [this](std::size_t from, std::size_t to) {
      impl_->sample();
      if (!windows_.empty() && windows_.back().to < Nanos{0}) windows_.back().to = world_->now() + 50ms;
      impl_->dirty = true;
      note("new-primary", cluster_->server(from).node().name() + " -> " +
                              cluster_->server(to).node().name());
    };
    (void)loop::parse_url(cluster_->url(), via);
  } else {
    sim::Node& sn = world_->add_node("redis-a");
    servers_.push_back(std::make_unique<sim::SimRedis>(*world_, sn, config_.server));
    primary_ = servers_.back().get();
    world_->net().add_address("redis", sn);
  }
  if (config_.sentinels) {
    std::vector<sim::SimRedis*> replicas;
    for (int k = 0; k < std::max(config_.sentinel_replicas, 1); ++k)
      replicas.push_back(&add_replica(*config_.sentinels));
    std::vector<sim::Node*> nodes;
    for (const char* n : {"s1", "s2", "s3"}) nodes.push_back(&world_->add_node(n));
    sentinels_ = std::make_unique<sim::SimSentinels>(*world_, nodes, *primary_, replicas,
                                                     config_.sentinel_config);
    // The ground truth moves when the leader starts naming the new primary (clients that
    // watch every sentinel move then, and can be granted there before +switch-master); the
    // service address, as an operator's DNS would, at +switch-master.
    sentinels_->on_named = [this](sim::SimRedis& from, sim::SimRedis& to) {
      impl_->sample();
      primary_ = &to;
      impl_->dirty = true;
      note("new-primary", from.node().name() + " -> " + to.node().name());
    };
    sentinels_->on_switch = [this](sim::SimRedis&, sim::SimRedis& to) {
      world_->net().add_address("redis", to.node());
    };
    if (loop::parse_url(sentinels_->url(), via)) via.sentinel.reset();
  }
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
    if (via.sentinel) {  // endpoint stays "redis": what a client without sentinels would use
      o.sentinel = via.sentinel;
      o.sentinel->vouch = config_.sentinel_vouch;
      o.seeds = via.seeds;
    } else if (cluster_) {  // the seed list, as a user gives it
      o.endpoint = via.endpoint;
      o.seeds = via.seeds;
    }
    if (config_.connection) config_.connection(i, o);
    c.s = make_strategy(config_.strategy, *c.node, o, config_.strategy_options);
    // A misspelled broken strategy must not quietly test lockwire instead.
    if (!c.s) throw std::invalid_argument("unknown strategy '" + config_.strategy + "'");
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
  sentinels_.reset();
  cluster_.reset();
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

namespace {
// What a job asks the strategy for on `resource`, as `owner` (exclusive unless `shared`).
AcquireSpec spec_of(const Job& j, const std::string& resource, const std::string& owner,
                    bool shared) {
  AcquireSpec spec;
  spec.resource = resource;
  spec.owner = owner;
  spec.ttl = j.ttl;
  spec.wait = j.wait;
  spec.auto_renew = j.auto_renew;
  spec.shared = shared;
  spec.permits = shared ? j.permits : 0;
  spec.fair = !shared && j.fair;
  return spec;
}
}  // namespace

// The writes, renewal and release of a lease just granted (index `li`, client `c`).
void Run::after_grant(int c, int li, const std::vector<Nanos>& writes, Nanos renew_after,
                      Nanos release_after) {
  sim::Node* n = impl_->clients[static_cast<std::size_t>(c)].node;
  for (Nanos wdt : writes) {
    // The holder checks its belief, then its write lands 1 ms later (the window a process
    // pause can fall into).
    world_->schedule(world_->now() + wdt, n, [this, c, li, n] {
      Impl& i4 = *impl_;
      const auto& l4 = i4.leases[static_cast<std::size_t>(li)];
      if (!i4.clients[static_cast<std::size_t>(c)].s->believes_held(l4.id)) return;
      world_->schedule(world_->now() + 1ms, n, [this, li] { impl_->write(li); });
    });
  }
  if (renew_after >= Nanos{0}) {
    world_->schedule(world_->now() + renew_after, n, [this, li] { impl_->do_renew(li); });
  }
  if (release_after >= Nanos{0}) {
    world_->schedule(world_->now() + release_after, n, [this, li] { impl_->do_release(li); });
  }
}

// Records a grant of attempt `ai` (client `c`); returns the lease's index.
int Run::record_grant(int c, int ai, const AcquireResult& r) {
  Impl& im = *impl_;
  Impl::LeaseRec l;
  l.attempt = ai;
  l.id = r.lease;
  l.token = r.token;
  l.granted = world_->now();
  const int li = static_cast<int>(im.leases.size());
  im.leases.push_back(l);
  im.attempts[static_cast<std::size_t>(ai)].lease = li;
  im.clients[static_cast<std::size_t>(c)].latest = li;
  note("granted", im.attempts[static_cast<std::size_t>(ai)].label + " token " +
                      std::to_string(r.token));
  return li;
}

// A new attempt record (ground truth is sampled for it from now on); returns its index.
int Run::record_attempt(int c, const std::string& label, const std::string& owner, const Job& j,
                        bool shared) {
  Impl& im = *impl_;
  Impl::Attempt a;
  a.client = c;
  a.label = label;
  a.owner = owner;
  a.resource = j.resource;
  a.shared = shared;
  a.permits = shared ? j.permits : 0;
  a.start = world_->now();
  a.deadline = a.start + j.wait;
  a.ttl = j.ttl;
  const int ai = static_cast<int>(im.attempts.size());
  im.attempts.push_back(a);
  im.dirty = true;
  return ai;
}

void Run::report_attempt(int ai, const AcquireResult& r) {
  Impl& im = *impl_;
  Impl::Attempt& at = im.attempts[static_cast<std::size_t>(ai)];
  at.reported = world_->now();
  at.ec = r.ec;
  im.dirty = true;
  if (r.ec) note("acquire-failed", at.label + " " + r.ec.message());
}

// The upgrade of shared lease `li` (client `c`, job `j`): a new exclusive attempt of the same
// owner; once granted, the shared lease is over (the server replaced it in the same block).
void Run::upgrade_lease(int c, int li, const std::string& label, const Job& j) {
  Impl& im = *impl_;
  const Impl::LeaseRec& old = im.leases[static_cast<std::size_t>(li)];
  const std::string owner = im.attempts[static_cast<std::size_t>(old.attempt)].owner;
  const int ai = record_attempt(c, label + "^x", owner, j, false);
  im.attempts[static_cast<std::size_t>(ai)].upgrade_of = old.attempt;
  const AcquireSpec spec = spec_of(j, j.resource, owner, false);
  note("upgrade", label + " wait " + fmt_t(j.wait));
  // The promotion ends the shared lease on the server (in the same block that grants the
  // exclusive one): like a release of its own, in progress until the answer.
  Impl::LeaseRec& was = im.leases[static_cast<std::size_t>(li)];
  const bool releasing = was.release_start == kNever;
  if (releasing) was.release_start = world_->now();
  im.clients[static_cast<std::size_t>(c)].s->upgrade(
      old.id, spec, [this, c, li, ai, j, releasing](AcquireResult r) {
        report_attempt(ai, r);
        Impl::LeaseRec& was = impl_->leases[static_cast<std::size_t>(li)];
        if (r.ec) {
          if (releasing) was.release_start = kNever;  // not promoted: the shared lease goes on
          if (j.release_if_upgrade_fails) impl_->do_release(li);
          return;
        }
        if (releasing) {
          was.release_end = world_->now();
          was.release_ok = true;
        }
        const int nli = record_grant(c, ai, r);
        after_grant(c, nli, j.upgraded_writes, Nanos{-1}, j.upgraded_release_after);
      });
}

// A job on several resources (Job::resources): one attempt per resource, answered together.
void Run::job_all(int c, const std::string& label, const std::string& owner, const Job& j) {
  std::vector<int> ais;
  std::vector<AcquireSpec> specs;
  for (const std::string& res : j.resources) {
    Job one = j;
    one.resource = res;
    ais.push_back(record_attempt(c, label + "/" + res, owner, one, false));
    specs.push_back(spec_of(j, res, owner, false));
  }
  std::string names;
  for (const auto& res : j.resources) {
    if (!names.empty()) names.push_back(',');
    names.append(res);
  }
  note("acquire-all", label + " " + names + " ttl " + fmt_t(j.ttl) + " wait " + fmt_t(j.wait));
  impl_->clients[static_cast<std::size_t>(c)].s->acquire_all(
      specs, [this, c, ais, j](std::vector<AcquireResult> rs) {
        for (std::size_t i = 0; i < ais.size() && i < rs.size(); ++i) {
          report_attempt(ais[i], rs[i]);
          if (rs[i].ec) continue;
          const int li = record_grant(c, ais[i], rs[i]);
          after_grant(c, li, j.writes, j.renew_after, j.release_after);
        }
      });
}

std::string Run::job(int c, Nanos t, Job j, std::function<void(const AcquireResult&)> on_done) {
  Impl& im = *impl_;
  Impl::Client& cl = im.clients[static_cast<std::size_t>(c)];
  const std::string label = cl.node->name() + "." + std::to_string(++cl.attempts);
  const std::string owner = j.owner.empty() ? label : j.owner;
  sim::Node* node = cl.node;
  if (!j.resources.empty()) {
    world_->schedule(t, node, [this, c, label, owner, j] { job_all(c, label, owner, j); });
    return label;
  }
  world_->schedule(t, node, [this, c, label, owner, j, on_done = std::move(on_done)] {
    Impl& im2 = *impl_;
    const int ai = record_attempt(c, label, owner, j, j.shared);
    const AcquireSpec spec = spec_of(j, j.resource, owner, j.shared);
    note(j.shared ? "acquire-shared" : "acquire",
         owner + (owner == label ? "" : " (" + label + ")") + " ttl " + fmt_t(j.ttl) + " wait " +
             fmt_t(j.wait));
    im2.clients[static_cast<std::size_t>(c)].s->acquire(spec, [this, ai, c, j, label,
                                                               on_done](AcquireResult r) {
      report_attempt(ai, r);
      if (!r.ec) {
        const int li = record_grant(c, ai, r);
        impl_->leases[static_cast<std::size_t>(li)].then = j.then;
        after_grant(c, li, j.writes, j.renew_after, j.release_after);
        if (j.shared && j.upgrade_after >= Nanos{0}) {
          sim::Node* n = impl_->clients[static_cast<std::size_t>(c)].node;
          world_->schedule(world_->now() + j.upgrade_after, n,
                           [this, c, li, label, j] { upgrade_lease(c, li, label, j); });
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

void Run::cancel(int c, std::string resource, std::string label) {
  std::string owner = label;
  for (const auto& a : impl_->attempts)
    if (a.label == label) owner = a.owner;
  note("cancel", owner + " (" + resource + ")");
  strategy(c).cancel(resource, owner);
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
  // Configured as the primary (ACL users, maxmemory): an operator sets up every node alike.
  servers_.push_back(std::make_unique<sim::SimRedis>(*world_, n, config_.server));
  primary_->add_replica(*servers_.back(), lag);
  return *servers_.back();
}

int Run::slot_of(std::string_view resource) {
  std::string key = "{";
  key.append(resource).append("}");
  return sim::cluster_key_slot(key);
}

std::string Run::resource_on(std::size_t p, std::string_view base) const {
  for (int k = 0;; ++k) {
    std::string r(base);
    r.append(std::to_string(k));
    if (cluster_->owner(slot_of(r)) == p) return r;
  }
}

std::string Run::cluster_failover(std::size_t replica, std::string_view option) {
  impl_->sample();
  std::string e = cluster_->failover(replica, option);
  if (e.empty()) windows_.push_back(Window{world_->now(), kNever});
  note("cluster-failover", cluster_->server(replica).node().name() + (e.empty() ? "" : " -> " + e));
  impl_->dirty = true;
  return e;
}

void Run::cluster_crash(std::size_t i) {
  impl_->sample();
  note("crash", cluster_->server(i).node().name());
  if (cluster_->is_primary(i)) {
    windows_.push_back(Window{world_->now() - cluster_->config().replication_lag - 1ms, kNever});
  }
  cluster_->crash(i);
  impl_->dirty = true;
}

void Run::migrate_slot(int slot, std::size_t to, Nanos step, std::function<void()> done) {
  impl_->sample();
  migrations_.push_back(Migration{slot, cluster_->owner(slot), to});
  note("migrate-slot", std::to_string(slot) + " " +
                           cluster_->server(cluster_->owner(slot)).node().name() + " -> " +
                           cluster_->server(to).node().name());
  impl_->dirty = true;
  cluster_->migrate_slot(slot, to, step, [this, slot, done = std::move(done)] {
    impl_->sample();
    std::erase_if(migrations_, [slot](const Migration& m) { return m.slot == slot; });
    impl_->migrated_to.push_back(&cluster_->server(cluster_->owner(slot)));
    note("migrated", std::to_string(slot));
    impl_->dirty = true;
    if (done) done();
  });
}

bool Run::migrating(int slot) const {
  for (const auto& m : migrations_)
    if (m.slot == slot) return true;
  return false;
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
Nanos Run::told_lost_at(std::string_view owner) const {
  auto* a = find_attempt(impl_->attempts, owner);
  if (!a || a->lease < 0) return kNever;
  return impl_->leases[static_cast<std::size_t>(a->lease)].lost_notice;
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
  const checks::Add add = [&out](Check c, std::string s) {
    auto& v = out[static_cast<std::size_t>(c)].violations;
    if (v.size() < 20) v.push_back(std::move(s));
  };
  for (const auto& [c, what] : im.extra) add(c, what);
  const checks::Input in{im, end, healed_at_, config_};
  checks::mutual_exclusion(in, add);
  checks::no_orphan(in, add);
  checks::honest_release_renew(in, add);
  checks::lease_loss_notice(in, add);
  checks::liveness(in, add);
  if (config_.strict_exclusion) checks::two_holders(in, add);
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
