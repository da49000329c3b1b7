// Helpers for tests on a UvLoop (header-only, for tests linking lockwire_uv): run_until, and
// libuv's rule for its own tests (test/task.h, MAKE_VALGRIND_HAPPY): a test that used a loop
// leaves it empty — every handle and request it made is closed and finished.
//
//   UvLoop loop;
//   test::EmptyLoopAtExit at_exit(loop);  // right after the loop: checked when the test ends
#pragma once

#include <gtest/gtest.h>
#include <uv.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "lockwire/loop/uv_loop.hpp"

namespace lockwire::test {

// Runs the loop until pred() holds; false once `limit` has passed (a 2 ms tick keeps the loop
// turning, so pred() is re-checked even while nothing else happens).
[[nodiscard]] inline bool run_until(loop::UvLoop& loop, const std::function<bool()>& pred,
                                    loop::Nanos limit = std::chrono::seconds(10)) {
  auto tick = loop.make_timer([] {});
  tick->start(std::chrono::milliseconds(2), std::chrono::milliseconds(2));
  const loop::MonoTime end = loop.now() + limit;
  while (!pred()) {
    if (loop.now() > end) return false;
    loop.run_once(true);
  }
  return true;
}

// Runs `loop` without blocking (for at most `limit`: a leak fails, it does not hang) until libuv
// has finished closing what the test destroyed; fails naming what is still there.
[[nodiscard]] inline ::testing::AssertionResult loop_drained(
    loop::UvLoop& loop, std::chrono::milliseconds limit = std::chrono::seconds(2)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!loop.empty() && std::chrono::steady_clock::now() < end) {
    loop.run_once(false);
    if (!loop.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (loop.empty()) return ::testing::AssertionSuccess();
  std::string left;
  uv_walk(
      loop.native(),
      [](uv_handle_t* h, void* arg) {
        const bool closing = uv_is_closing(h) != 0;
        if (!closing && (uv_is_active(h) == 0 || uv_has_ref(h) == 0)) return;  // not keeping it
        auto& s = *static_cast<std::string*>(arg);
        if (!s.empty()) s += ", ";
        s += uv_handle_type_name(h->type);
        if (closing) s += " (closing)";
      },
      &left);
  return ::testing::AssertionFailure()
         << "the loop is not empty " << limit.count() << " ms after the test; left: "
         << (left.empty() ? "requests only (connect, write, resolve...)" : left);
}

// Checks loop_drained() when it goes out of scope. Declared right after the loop, it runs after
// everything declared later (connections, streams, timers) is destroyed — also when an ASSERT
// ended the test early.
class EmptyLoopAtExit {
 public:
  explicit EmptyLoopAtExit(loop::UvLoop& loop) : loop_(loop) {}
  ~EmptyLoopAtExit() { EXPECT_TRUE(loop_drained(loop_)); }
  EmptyLoopAtExit(const EmptyLoopAtExit&) = delete;
  EmptyLoopAtExit& operator=(const EmptyLoopAtExit&) = delete;

 private:
  loop::UvLoop& loop_;
};

}  // namespace lockwire::test
