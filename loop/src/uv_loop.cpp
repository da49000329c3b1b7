// The loop core: UvLoop and UvLoop::Impl — owning or embedding a uv_loop_t, posted work and the
// turn's gathered stream flushes (run from the prepare and check phases), submission from other
// threads (uv_async_t), clocks and randomness. Timers are uv_timer.cpp, streams uv_stream.cpp.
#include <sys/random.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "uv_internal.hpp"

namespace lockwire::loop {

UvLoop::Impl::Impl(uv_loop_t* l) {
  if (l == nullptr) {
    uv_loop_init(&own);
    loop = &own;
    owned = true;
  } else {
    loop = l;
  }
  origin = uv_hrtime();
  h = new Handles;
  h->impl = this;
  uv_async_init(loop, &h->async, &Impl::on_async);
  uv_check_init(loop, &h->check);
  uv_prepare_init(loop, &h->prepare);
  uv_idle_init(loop, &h->idle);
  h->async.data = h->check.data = h->prepare.data = h->idle.data = h;
  h->open = 4;
  uv_unref(reinterpret_cast<uv_handle_t*>(&h->async));
}

UvLoop::Impl::~Impl() {
  posted.clear();
  dirty.clear();
  {
    std::lock_guard<std::mutex> g(h->mu);
    h->impl = nullptr;
    h->submitted.clear();
  }
  auto closed = [](uv_handle_t* x) {
    auto* hs = static_cast<Handles*>(x->data);
    if (--hs->open == 0) delete hs;
  };
  uv_close(reinterpret_cast<uv_handle_t*>(&h->async), closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&h->check), closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&h->prepare), closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&h->idle), closed);
  if (owned) {
    // Finish closing (ours and any stream/timer core destroyed just before us).
    for (int i = 0; i < 16 && uv_loop_close(loop) == UV_EBUSY; ++i) uv_run(loop, UV_RUN_NOWAIT);
  }
}

void UvLoop::Impl::remove_dirty(uv_detail::StreamCore* s) noexcept {
  auto it = std::find(dirty.begin(), dirty.end(), s);
  if (it != dirty.end()) dirty.erase(it);
  auto jt = std::find(flushing.begin(), flushing.end(), s);
  if (jt != flushing.end()) *jt = nullptr;
}

void UvLoop::Impl::run_turn(bool before_poll) {
  // Posted work first (it may write), then every stream written to during this turn.
  running.swap(posted);
  for (std::size_t i = 0; i < running.size(); ++i) {
    auto fn = std::move(running[i]);
    fn();
  }
  running.clear();
  flushing.swap(dirty);
  for (std::size_t i = 0; i < flushing.size(); ++i) {
    uv_detail::StreamCore* s = flushing[i];
    if (s == nullptr) continue;
    s->dirty = false;
    s->flush();
  }
  flushing.clear();
  if (posted.empty() && dirty.empty()) {
    armed = false;
    uv_idle_stop(&h->idle);
    uv_prepare_stop(&h->prepare);
    uv_check_stop(&h->check);
  } else if (before_poll) {
    uv_idle_start(&h->idle, [](uv_idle_t*) {});  // more queued meanwhile: do not block in poll
  }
}

void UvLoop::Impl::on_async(uv_async_t* a) {
  auto* hs = static_cast<Handles*>(a->data);
  std::vector<std::function<void()>> batch;
  {
    std::lock_guard<std::mutex> g(hs->mu);
    batch.swap(hs->submitted);
  }
  for (auto& fn : batch) fn();
}

// ---------------------------------------------------------------------------------------------
// UvLoop

UvLoop::UvLoop() : impl_(std::make_unique<Impl>(nullptr)) {}
UvLoop::UvLoop(uv_loop_t* embedded) : impl_(std::make_unique<Impl>(embedded)) {}
UvLoop::~UvLoop() = default;

uv_loop_t* UvLoop::native() noexcept {
  return impl_->loop;
}
void UvLoop::run() {
  uv_run(impl_->loop, UV_RUN_DEFAULT);
}
bool UvLoop::run_once(bool block) {
  return uv_run(impl_->loop, block ? UV_RUN_ONCE : UV_RUN_NOWAIT) != 0;
}
void UvLoop::stop() noexcept {
  uv_stop(impl_->loop);
}
bool UvLoop::empty() const noexcept {
  return uv_loop_alive(impl_->loop) == 0;
}

void UvLoop::submit(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> g(impl_->h->mu);
    impl_->h->submitted.push_back(std::move(fn));
  }
  uv_async_send(&impl_->h->async);
}

void UvLoop::keep_alive(bool on) noexcept {
  auto* a = reinterpret_cast<uv_handle_t*>(&impl_->h->async);
  if (on) {
    uv_ref(a);
  } else {
    uv_unref(a);
  }
}

MonoTime UvLoop::now() const noexcept {
  return MonoTime{Nanos(static_cast<std::int64_t>(uv_hrtime() - impl_->origin))};
}

WallTime UvLoop::wall_now() const noexcept {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return WallTime{Nanos(std::int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec)};
}

void UvLoop::post(std::function<void()> fn) {
  impl_->posted.push_back(std::move(fn));
  impl_->arm();
}

std::uint64_t UvLoop::random() noexcept {
  std::uint64_t v = 0;
  auto* p = reinterpret_cast<unsigned char*>(&v);
  std::size_t got = 0;
  while (got < sizeof v) {
    const ssize_t r = getrandom(p + got, sizeof v - got, 0);
    if (r > 0) {
      got += static_cast<std::size_t>(r);
    } else if (r < 0 && errno != EINTR) {
      // getrandom cannot fail on Linux >= 3.17 with these flags; fall back to the clock.
      return v ^ uv_hrtime() ^ (uv_hrtime() << 32);
    }
  }
  return v;
}

}  // namespace lockwire::loop
