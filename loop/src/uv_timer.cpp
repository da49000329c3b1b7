// Timer on uv_timer_t. Never fires before its delay has passed on UvLoop::now() (libuv counts
// whole milliseconds of a cached clock, so it may fire up to ~1 ms late); may be destroyed or
// re-armed from inside its own callback.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>

#include "uv_internal.hpp"

namespace lockwire::loop {

namespace {

class UvTimer final : public Timer {
 public:
  UvTimer(uv_loop_t* loop, std::function<void()> fn) : core_(new Core) {
    core_->fn = std::move(fn);
    uv_timer_init(loop, &core_->h);
    core_->h.data = core_;
  }
  ~UvTimer() override {
    core_->alive = false;
    uv_timer_stop(&core_->h);
    // The callback may be running right now (a timer destroying itself): Core, which holds the
    // std::function, is freed only by the close callback, after it has returned.
    uv_close(reinterpret_cast<uv_handle_t*>(&core_->h),
             [](uv_handle_t* h) { delete static_cast<Core*>(h->data); });
  }
  void start(Nanos delay, Nanos repeat) override {
    // libuv counts whole milliseconds of a cached (possibly coarse) clock and fires once that
    // clock reaches the due millisecond. Aim at the first millisecond boundary at or after
    // hrtime-now + delay, so the timer never fires before `delay` has passed on now().
    uv_loop_t* l = core_->h.loop;
    uv_update_time(l);
    const std::int64_t d = std::max<std::int64_t>(delay.count(), 0);
    const std::uint64_t target_ms =
        (uv_hrtime() + static_cast<std::uint64_t>(d) + 999'999) / 1'000'000;
    const std::uint64_t base = uv_now(l);
    uv_timer_start(&core_->h, &on_fire, target_ms > base ? target_ms - base : 0,
                   uv_detail::ms_ceil(repeat));
  }
  void stop() noexcept override { uv_timer_stop(&core_->h); }
  bool active() const noexcept override {
    return uv_is_active(reinterpret_cast<const uv_handle_t*>(&core_->h)) != 0;
  }

 private:
  struct Core {
    uv_timer_t h{};
    std::function<void()> fn;
    bool alive = true;
  };
  static void on_fire(uv_timer_t* t) {
    auto* c = static_cast<Core*>(t->data);
    if (c->alive) c->fn();
  }
  Core* core_;
};

}  // namespace

std::unique_ptr<Timer> UvLoop::make_timer(std::function<void()> on_fire) {
  return std::make_unique<UvTimer>(impl_->loop, std::move(on_fire));
}

}  // namespace lockwire::loop
