// C++20 coroutines over lock::Client, on the caller's loop (no thread, no executor of our own):
//
//   lock::co::Task<void> work(lock::Client& locks) {
//     auto got = co_await lock::co::lock(locks, req);      // Result<Lease>: a lease or an error
//     if (!got) { log(got.error(), locks.last_error()); co_return; }
//     lock::co::LeaseGuard guard(locks, std::move(*got)); // released when the scope ends
//     co_await write_with_token(guard.lease().token());
//     co_await guard.release();                            // or let the destructor do it
//   }
//   lock::co::spawn(work(locks));                          // runs on the loop thread
//
// The awaitables work in any coroutine type (they only need std::coroutine_handle<>); Task is
// there for programs without a coroutine library. Every await resumes from the loop, never
// inside the call that started it (Client's promise); should a handler ever run inline, the
// awaitable resumes without suspending instead (await_suspend returns false).
//
// Lifetimes: a Task holds references its caller gave it (the Client above), as any coroutine
// does. Destroying the Client while a coroutine awaits resumes it with Errc::closed.
//
// Compilers: GCC 12 and clang 14 (Debian bookworm's) build it; clang 14 fails on any coroutine
// with -fsanitize=fuzzer-no-link,address together with -g ("Cannot represent a difference across
// sections", a compiler bug), so lockwire's fuzz build leaves the examples out.
#pragma once

#include <coroutine>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "lockwire/lock/client.hpp"

namespace lockwire::lock::co {

// An error or a value, in the spirit of C++23's std::expected (which C++20 lacks).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(std::error_code ec, T value) : ec_(ec), value_(std::move(value)) {}
  [[nodiscard]] bool has_value() const noexcept { return !ec_; }
  explicit operator bool() const noexcept { return !ec_; }
  [[nodiscard]] std::error_code error() const noexcept { return ec_; }
  // The value; std::system_error with the error when there is none (as expected::value()).
  T& value() & {
    if (ec_) throw std::system_error(ec_);
    return value_;
  }
  T&& value() && {
    if (ec_) throw std::system_error(ec_);
    return std::move(value_);
  }
  T& operator*() & noexcept { return value_; }
  T&& operator*() && noexcept { return std::move(value_); }
  T* operator->() noexcept { return &value_; }

 private:
  std::error_code ec_;
  T value_;
};

namespace detail {

// One Client operation as an awaitable: `start(done)` begins it; `done` resumes the awaiter.
template <typename R>
class Op {
 public:
  using Done = std::function<void(R)>;
  explicit Op(std::function<void(Done)> start) : start_(std::move(start)) {}
  Op(Op&&) noexcept = default;
  Op(const Op&) = delete;
  Op& operator=(const Op&) = delete;
  Op& operator=(Op&&) = delete;

  bool await_ready() const noexcept { return false; }
  bool await_suspend(std::coroutine_handle<> h) {
    handle_ = h;
    start_([this](R r) {
      result_.emplace(std::move(r));
      if (suspended_) handle_.resume();
    });
    if (result_) return false;  // answered inline: go on without suspending
    suspended_ = true;
    return true;
  }
  R await_resume() { return std::move(*result_); }

 private:
  std::function<void(Done)> start_;
  std::coroutine_handle<> handle_;
  std::optional<R> result_;
  bool suspended_ = false;
};

}  // namespace detail

// co_await lock(client, req) -> Result<Lease>; the errors are Client::lock's (busy for a
// try-lock that found the resource held, timed_out for a wait that ran out, ...).
inline detail::Op<Result<Lease>> lock(Client& c, LockRequest req) {
  return detail::Op<Result<Lease>>([&c, req = std::move(req)](auto done) mutable {
    c.lock(std::move(req), [done](std::error_code ec, Lease l) { done({ec, std::move(l)}); });
  });
}
inline detail::Op<Result<Lease>> upgrade(Client& c, const Lease& shared, Nanos wait) {
  return detail::Op<Result<Lease>>([&c, shared, wait](auto done) {
    c.upgrade(shared, wait, [done](std::error_code ec, Lease l) { done({ec, std::move(l)}); });
  });
}
inline detail::Op<Result<LeaseSet>> lock_all(Client& c, std::vector<std::string> resources,
                                             LockRequest req) {
  return detail::Op<Result<LeaseSet>>(
      [&c, resources = std::move(resources), req = std::move(req)](auto done) mutable {
        c.lock_all(std::move(resources), std::move(req),
                   [done](std::error_code ec, LeaseSet s) { done({ec, std::move(s)}); });
      });
}
inline detail::Op<std::error_code> release(Client& c, const Lease& lease) {
  return detail::Op<std::error_code>([&c, lease](auto done) { c.release(lease, done); });
}
inline detail::Op<std::error_code> release(Client& c, const LeaseSet& set) {
  return detail::Op<std::error_code>([&c, set](auto done) { c.release(set, done); });
}
inline detail::Op<std::error_code> renew(Client& c, const Lease& lease) {
  return detail::Op<std::error_code>([&c, lease](auto done) { c.renew(lease, done); });
}
inline detail::Op<Result<LockInfo>> inspect(Client& c, std::string resource) {
  return detail::Op<Result<LockInfo>>([&c, resource = std::move(resource)](auto done) {
    c.inspect(resource, [done](std::error_code ec, const LockInfo& i) { done({ec, i}); });
  });
}

// Owns a lease of a lock::Client and releases it: `co_await guard.release()`, or, when the
// guard goes out of scope still holding it, a release sent without waiting for its answer (a
// destructor cannot await). A guard that outlives its Client sends nothing (Client::alive()):
// the lease expires with its TTL.
class LeaseGuard {
 public:
  LeaseGuard() = default;
  LeaseGuard(Client& c, Lease lease) noexcept
      : client_(&c), alive_(c.alive()), lease_(std::move(lease)) {}
  LeaseGuard(LeaseGuard&& o) noexcept
      : client_(std::exchange(o.client_, nullptr)),
        alive_(std::move(o.alive_)),
        lease_(std::move(o.lease_)) {}
  LeaseGuard& operator=(LeaseGuard&& o) noexcept {
    if (this != &o) {
      release_detached();
      client_ = std::exchange(o.client_, nullptr);
      alive_ = std::move(o.alive_);
      lease_ = std::move(o.lease_);
    }
    return *this;
  }
  LeaseGuard(const LeaseGuard&) = delete;
  LeaseGuard& operator=(const LeaseGuard&) = delete;
  ~LeaseGuard() { release_detached(); }

  [[nodiscard]] const Lease& lease() const noexcept { return lease_; }
  [[nodiscard]] explicit operator bool() const noexcept { return lease_.held(); }

  // co_await guard.release() -> std::error_code (Errc::closed once the client is gone); later
  // destruction does nothing.
  detail::Op<std::error_code> release() {
    Client* c = std::exchange(client_, nullptr);
    const bool alive = c != nullptr && !alive_.expired();
    return detail::Op<std::error_code>([c, alive, lease = lease_](auto done) {
      if (!alive) return done(make_error_code(Errc::closed));
      c->release(lease, done);
    });
  }

 private:
  void release_detached() noexcept {
    Client* c = std::exchange(client_, nullptr);
    if (c == nullptr || alive_.expired() || !lease_.held()) return;
    try {
      c->release(lease_, [](std::error_code) {});
    } catch (...) {  // never throw from a destructor (only allocation can fail here)
    }
  }
  Client* client_ = nullptr;
  std::weak_ptr<const void> alive_;
  Lease lease_;
};

// A coroutine that returns T, started when awaited (lazily) or by spawn(). Exceptions escaping
// it are rethrown to its awaiter; in a spawned task they call std::terminate (as an exception
// escaping a thread's function does).
template <typename T = void>
class [[nodiscard]] Task;

namespace detail {

struct PromiseBase {
  std::coroutine_handle<> continuation;
  std::exception_ptr error;
  bool detached = false;
  std::suspend_always initial_suspend() noexcept { return {}; }
  struct Final {
    bool await_ready() const noexcept { return false; }
    template <typename P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> h) noexcept {
      PromiseBase& p = h.promise();
      if (p.detached) {
        if (p.error) std::terminate();
        h.destroy();
        return std::noop_coroutine();
      }
      return p.continuation ? p.continuation : std::noop_coroutine();
    }
    void await_resume() const noexcept {}
  };
  Final final_suspend() noexcept { return {}; }
  void unhandled_exception() noexcept { error = std::current_exception(); }
};

template <typename T>
struct Promise : PromiseBase {
  std::optional<T> value;
  Task<T> get_return_object() noexcept;
  template <typename U>
  void return_value(U&& v) {
    value.emplace(std::forward<U>(v));
  }
};

template <>
struct Promise<void> : PromiseBase {
  Task<void> get_return_object() noexcept;
  void return_void() noexcept {}
};

}  // namespace detail

template <typename T>
class [[nodiscard]] Task {
 public:
  using promise_type = detail::Promise<T>;
  Task() = default;
  explicit Task(std::coroutine_handle<promise_type> h) noexcept : h_(h) {}
  Task(Task&& o) noexcept : h_(std::exchange(o.h_, {})) {}
  Task& operator=(Task&& o) noexcept {
    if (this != &o) {
      if (h_) h_.destroy();
      h_ = std::exchange(o.h_, {});
    }
    return *this;
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  ~Task() {
    if (h_) h_.destroy();
  }

  bool await_ready() const noexcept { return !h_ || h_.done(); }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiter) noexcept {
    h_.promise().continuation = awaiter;
    return h_;
  }
  T await_resume() {
    if (h_.promise().error) std::rethrow_exception(h_.promise().error);
    if constexpr (!std::is_void_v<T>) return std::move(*h_.promise().value);
  }

 private:
  template <typename U>
  friend void spawn(Task<U> task);
  std::coroutine_handle<promise_type> h_;
};

namespace detail {
template <typename T>
Task<T> Promise<T>::get_return_object() noexcept {
  return Task<T>(std::coroutine_handle<Promise<T>>::from_promise(*this));
}
inline Task<void> Promise<void>::get_return_object() noexcept {
  return Task<void>(std::coroutine_handle<Promise<void>>::from_promise(*this));
}
}  // namespace detail

// Starts `task` now, on this thread (call it on the loop's thread); it runs to its first await
// and goes on from the loop. It frees itself when it ends; its result is dropped.
template <typename T>
void spawn(Task<T> task) {
  auto h = std::exchange(task.h_, {});
  if (!h) return;
  h.promise().detached = true;
  h.resume();
}

}  // namespace lockwire::lock::co
