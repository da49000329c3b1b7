// SimLoop: the seam (loop::Loop) on the virtual world — posted work in order per node, timers
// on the node's own monotonic clock (re-armed when a fault steps it), streams from the Network.
#include <utility>

#include "lockwire/sim/world.hpp"

namespace lockwire::sim {

// ---- SimTimer ----

class SimTimer final : public loop::Timer {
 public:
  SimTimer(SimLoop& loop, std::function<void()> fn)
      : loop_(loop),
        fn_(std::make_shared<std::function<void()>>(std::move(fn))),
        serial_(loop.next_timer_serial_++) {}
  ~SimTimer() override { stop(); }

  void start(Nanos delay, Nanos repeat) override {
    stop();
    deadline_ = loop_.now() + std::max(delay, Nanos(0));
    repeat_ = std::max(repeat, Nanos(0));
    active_ = true;
    loop_.timers_[serial_] = this;
    arm();
  }
  void stop() noexcept override {
    if (event_ != 0) loop_.node().world().cancel(event_);
    event_ = 0;
    if (active_) loop_.timers_.erase(serial_);
    active_ = false;
  }
  [[nodiscard]] bool active() const noexcept override { return active_; }

  void rearm_after_clock_change() {
    if (event_ != 0) loop_.node().world().cancel(event_);
    event_ = 0;
    if (active_) arm();
  }

 private:
  void arm() {
    Node& n = loop_.node();
    event_ = n.world().schedule(n.true_time_of_mono(deadline_), &n, [this] { fire(); });
  }
  void fire() {
    event_ = 0;
    if (repeat_ > Nanos(0)) {
      deadline_ = deadline_ + repeat_;
      if (deadline_ < loop_.now()) deadline_ = loop_.now() + repeat_;
      arm();
    } else {
      active_ = false;
      loop_.timers_.erase(serial_);
    }
    auto fn = fn_;  // the callback may destroy this timer
    (*fn)();
  }
  SimLoop& loop_;
  std::shared_ptr<std::function<void()>> fn_;
  std::uint64_t serial_;
  std::uint64_t event_ = 0;
  loop::MonoTime deadline_{};
  Nanos repeat_{0};
  bool active_ = false;
};

// ---- SimLoop ----

SimLoop::SimLoop(Node& node) : node_(node), rng_(node.world().fork_rng("loop/" + node.name())) {}

SimLoop::~SimLoop() = default;

std::unique_ptr<loop::Timer> SimLoop::make_timer(std::function<void()> on_fire) {
  return std::make_unique<SimTimer>(*this, std::move(on_fire));
}

void SimLoop::post(std::function<void()> fn) {
  posted_.push_back(std::move(fn));
  if (!drain_scheduled_) {
    drain_scheduled_ = true;
    node_.world().schedule(node_.world().now(), &node_, [this] { drain_one(); });
  }
}

void SimLoop::drain_one() {
  drain_scheduled_ = false;
  if (posted_.empty()) return;
  auto fn = std::move(posted_.front());
  posted_.pop_front();
  if (!posted_.empty()) {
    drain_scheduled_ = true;
    node_.world().schedule(node_.world().now(), &node_, [this] { drain_one(); });
  }
  fn();
}

std::unique_ptr<loop::Stream> SimLoop::connect(const loop::Endpoint& endpoint,
                                               loop::StreamHandler& handler, Nanos timeout) {
  return node_.world().net().connect(node_, endpoint, handler, timeout);
}

void SimLoop::forget_pending() noexcept {
  posted_.clear();
  drain_scheduled_ = false;
}

void SimLoop::reschedule_timers() {
  for (auto& [serial, t] : timers_) t->rearm_after_clock_change();
}

}  // namespace lockwire::sim
