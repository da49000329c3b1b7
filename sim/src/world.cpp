#include "lockwire/sim/world.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <utility>

namespace lockwire::sim {

namespace {

class NetCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "lockwire.sim.net"; }
  std::string message(int c) const override {
    switch (static_cast<NetErrc>(c)) {
      case NetErrc::ok:
        return "ok";
      case NetErrc::eof:
        return "connection closed by peer";
      case NetErrc::reset:
        return "connection reset";
      case NetErrc::refused:
        return "connection refused";
      case NetErrc::timed_out:
        return "connect timed out";
      case NetErrc::host_unknown:
        return "unknown host";
    }
    return "unknown sim network error";
  }
};

std::uint64_t mix(std::uint64_t h, std::uint64_t v) noexcept {
  for (int i = 0; i < 8; ++i) {
    h ^= (v >> (i * 8)) & 0xff;
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace

const std::error_category& net_category() noexcept {
  static const NetCategory c;
  return c;
}
std::error_code make_error_code(NetErrc e) noexcept {
  return {static_cast<int>(e), net_category()};
}

// ---- Trace ----

void Trace::record(Nanos t, std::string_view who, std::string_view what, std::string_view detail) {
  ++count_;
  hash_ = mix(hash_, static_cast<std::uint64_t>(t.count()));
  hash_ = fnv1a64(who, hash_);
  hash_ = mix(hash_, who.size());
  hash_ = fnv1a64(what, hash_);
  hash_ = mix(hash_, what.size());
  hash_ = fnv1a64(detail, hash_);
  hash_ = mix(hash_, detail.size());
  if (!keep_) return;
  char ts[48];
  const auto ns = t.count();
  std::snprintf(ts, sizeof ts, "%6lld.%06lld ms ", static_cast<long long>(ns / 1000000),
                static_cast<long long>(ns % 1000000));
  std::string line = ts;
  line.append(who).append(" ").append(what);
  if (!detail.empty()) line.append(" ").append(escape_bytes(detail));
  lines_.push_back(std::move(line));
}

std::string Trace::timeline() const {
  std::string out;
  for (const auto& l : lines_) out.append(l).push_back('\n');
  char h[64];
  std::snprintf(h, sizeof h, "trace hash %016llx (%llu events)\n",
                static_cast<unsigned long long>(hash_), static_cast<unsigned long long>(count_));
  out += h;
  return out;
}

std::string escape_bytes(std::string_view bytes, std::size_t max) {
  std::string out;
  const std::size_t n = std::min(bytes.size(), max);
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c == '\r') {
      out += "\\r";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c < 0x20 || c >= 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      out += b;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  if (bytes.size() > max) out += "...(" + std::to_string(bytes.size()) + " bytes)";
  return out;
}

// ---- LocalClock ----

Nanos LocalClock::at(Nanos true_now) const noexcept {
  const __int128 d = static_cast<__int128>((true_now - base_true_).count());
  const __int128 scaled = d * (1000000 + ppm_) / 1000000;
  return base_local_ + Nanos(static_cast<std::int64_t>(scaled));
}

Nanos LocalClock::true_time_of(Nanos local, Nanos true_now) const noexcept {
  const __int128 dl = static_cast<__int128>((local - base_local_).count());
  const __int128 rate = 1000000 + ppm_;
  if (rate <= 0) return Nanos::max();
  __int128 dt = (dl * 1000000 + rate - 1) / rate;  // ceil: never fire early
  if (dl < 0) dt = (dl * 1000000) / rate;
  __int128 t = static_cast<__int128>(base_true_.count()) + dt;
  if (t > std::numeric_limits<std::int64_t>::max()) return Nanos::max();
  Nanos r(static_cast<std::int64_t>(t));
  // Rounding could put `at(r)` a hair below `local`; nudge forward.
  while (at(r) < local && r < Nanos::max()) r += Nanos(1);
  return std::max(r, true_now);
}

std::optional<Nanos> LocalClock::past_true_time_of(Nanos local) const noexcept {
  if (local < base_local_) return std::nullopt;
  const __int128 dl = static_cast<__int128>((local - base_local_).count());
  const __int128 rate = 1000000 + ppm_;
  if (rate <= 0) return std::nullopt;
  Nanos r(static_cast<std::int64_t>(static_cast<__int128>(base_true_.count()) + dl * 1000000 / rate));
  while (at(r) < local) r += Nanos(1);
  return r;
}

void LocalClock::set_drift_ppm(Nanos true_now, std::int64_t ppm) noexcept {
  base_local_ = at(true_now);
  base_true_ = true_now;
  ppm_ = std::clamp<std::int64_t>(ppm, -500000, 500000);
}

void LocalClock::step(Nanos true_now, Nanos delta) noexcept {
  base_local_ = at(true_now) + delta;
  base_true_ = true_now;
}

// ---- Node ----

namespace {
// Wall clocks start at a fixed, realistic instant (2026-01-01T00:00:00Z) so TTL arithmetic and
// TIME replies look like production and stay deterministic.
constexpr Nanos kWallEpochStart = std::chrono::seconds(1767225600);
}  // namespace

Node::Node(World& world, std::uint32_t id, std::string name)
    : world_(world),
      id_(id),
      name_(std::move(name)),
      mono_(world.now(), Nanos(std::chrono::seconds(1000) * (id + 1))),
      wall_(world.now(), kWallEpochStart + world.now()),
      loop_(std::make_unique<SimLoop>(*this)) {}

Node::~Node() = default;

loop::MonoTime Node::mono_now() const noexcept {
  return loop::MonoTime{mono_.at(world_.now())};
}
loop::WallTime Node::wall_now() const noexcept {
  return loop::WallTime{wall_.at(world_.now())};
}

Nanos Node::true_time_of_mono(loop::MonoTime t) const noexcept {
  return mono_.true_time_of(t.since_origin, world_.now());
}

void Node::set_mono_drift_ppm(std::int64_t ppm) {
  mono_.set_drift_ppm(world_.now(), ppm);
  world_.trace().record(world_.now(), name_, "mono-drift", std::to_string(ppm) + "ppm");
  loop_->reschedule_timers();
}

void Node::set_wall_drift_ppm(std::int64_t ppm) {
  wall_.set_drift_ppm(world_.now(), ppm);
  world_.trace().record(world_.now(), name_, "wall-drift", std::to_string(ppm) + "ppm");
}

void Node::step_mono(Nanos forward) {
  if (forward <= Nanos(0)) return;
  mono_.step(world_.now(), forward);
  world_.trace().record(world_.now(), name_, "mono-step", std::to_string(forward.count()) + "ns");
  loop_->reschedule_timers();
}

void Node::step_wall(Nanos delta) {
  wall_.step(world_.now(), delta);
  world_.trace().record(world_.now(), name_, "wall-step", std::to_string(delta.count()) + "ns");
}

void Node::pause() {
  if (paused_ || !alive_) return;
  paused_ = true;
  pauses_.emplace_back(world_.now(), Nanos::max());
  world_.trace().record(world_.now(), name_, "pause");
}

Nanos Node::running_from(Nanos t) const noexcept {
  for (const auto& [from, until] : pauses_) {
    if (from <= t && t < until) return until;
  }
  return t;
}

void Node::resume() {
  if (!paused_) return;
  paused_ = false;
  if (!pauses_.empty()) pauses_.back().second = world_.now();
  world_.trace().record(world_.now(), name_, "resume");
  world_.release_held(*this);
}

void Node::die(bool crashed) {
  if (!alive_) return;
  alive_ = false;
  if (paused_ && !pauses_.empty()) pauses_.back().second = world_.now();
  paused_ = false;
  ++incarnation_;
  world_.held_.erase(id_);
  loop_->forget_pending();
  world_.trace().record(world_.now(), name_, crashed ? "crash" : "kill");
  world_.net().node_died(*this, crashed);
  for (auto& h : death_hooks_) h(crashed);
}

void Node::kill() {
  die(false);
}
void Node::crash() {
  die(true);
}

void Node::restart() {
  if (alive_) die(false);
  alive_ = true;
  ++incarnation_;
  loop_->forget_pending();
  // The loop object stays (objects of the dead process may still point at it); work scheduled
  // by the old incarnation never runs. A restarted client needs fresh client objects.
  world_.trace().record(world_.now(), name_, "restart");
}

// ---- World ----

World::World(std::uint64_t seed)
    : seed_(seed),
      root_(seed),
      sched_(root_.fork("scheduler")),
      scenario_(root_.fork("scenario")),
      net_(std::make_unique<Network>(*this)) {
  heap_.reserve(1024);
}

World::~World() {
  // Streams/timers owned by nodes' hosts may call back into the world while tearing down.
  heap_.clear();
  held_.clear();
  nodes_.clear();
  net_.reset();
}

Node& World::add_node(std::string name) {
  const auto id = static_cast<std::uint32_t>(nodes_.size());
  nodes_.push_back(std::make_unique<Node>(*this, id, std::move(name)));
  trace_.record(now_, nodes_.back()->name(), "node");
  return *nodes_.back();
}

Node* World::find_node(std::string_view name) noexcept {
  for (auto& n : nodes_)
    if (n->name() == name) return n.get();
  return nullptr;
}

std::uint64_t World::schedule(Nanos at, Node* owner, std::function<void()> fn, bool background) {
  // The lowest id bit says "background", so cancel() can keep the foreground count exact.
  const std::uint64_t id = (next_event_++ << 1) | (background ? 1u : 0u);
  Event ev{std::max(at, now_), sched_.next(), id, owner, owner ? owner->incarnation() : 0u,
           background,         std::move(fn)};
  if (!background) ++foreground_;
  heap_.push_back(std::move(ev));
  std::push_heap(heap_.begin(), heap_.end(), Later{});
  return id;
}

void World::cancel(std::uint64_t id) noexcept {
  if (id == 0) return;
  // Held events are searched too: a paused node's timer may be destroyed.
  for (auto& [node, evs] : held_) {
    for (auto it = evs.begin(); it != evs.end(); ++it) {
      if (it->id == id) {
        evs.erase(it);
        return;
      }
    }
  }
  if (cancelled_.insert(id).second && (id & 1u) == 0) --foreground_;
}

void World::hold(Event ev) {
  held_[ev.owner->id()].push_back(std::move(ev));
}

void World::release_held(Node& n) {
  auto it = held_.find(n.id());
  if (it == held_.end()) return;
  auto evs = std::move(it->second);
  held_.erase(it);
  for (auto& ev : evs) {
    // Resumed work runs now, in the order it was due; fresh tiebreaks interleave it with others.
    // It keeps its id, so whoever scheduled it can still cancel it (a timer destroyed after the
    // resume would otherwise fire on freed memory).
    ev.at = now_;
    ev.tie = sched_.next();
    if (!ev.background) ++foreground_;
    heap_.push_back(std::move(ev));
    std::push_heap(heap_.begin(), heap_.end(), Later{});
  }
}

bool World::step() {
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    Event ev = std::move(heap_.back());
    heap_.pop_back();
    if (!cancelled_.empty()) {
      auto c = cancelled_.find(ev.id);
      if (c != cancelled_.end()) {
        cancelled_.erase(c);  // already uncounted by cancel()
        continue;
      }
    }
    if (!ev.background) --foreground_;
    now_ = ev.at;
    if (ev.owner != nullptr) {
      if (!ev.owner->alive() || ev.owner->incarnation() != ev.incarnation) continue;
      if (ev.owner->paused()) {
        hold(std::move(ev));
        continue;
      }
    }
    ++events_run_;
    ev.fn();
    return true;
  }
  return false;
}

bool World::run_until(const std::function<bool()>& pred, Nanos deadline) {
  if (pred()) return true;
  while (!heap_.empty()) {
    if (heap_.front().at > deadline) {
      now_ = std::max(now_, deadline);
      return pred();
    }
    if (step() && pred()) return true;
  }
  return pred();
}

void World::run_for(Nanos d) {
  const Nanos end = now_ + d;
  while (!heap_.empty() && heap_.front().at <= end) step();
  now_ = std::max(now_, end);
}

std::uint64_t World::run_until_idle(std::uint64_t max_events) {
  std::uint64_t n = 0;
  while (foreground_ > 0 && n < max_events && !heap_.empty()) {
    if (step()) ++n;
  }
  return n;
}

}  // namespace lockwire::sim
