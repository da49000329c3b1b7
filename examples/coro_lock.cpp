// C++20 coroutines on a libuv loop (lockwire/lock/coro.hpp): three workers take turns on one
// resource, each awaiting its lock, doing its work under a guard, and releasing it.
//
//   coro_lock [redis://127.0.0.1:6379]
#include <chrono>
#include <cstdio>
#include <string>

#include "lockwire/lock/coro.hpp"
#include "lockwire/loop/uv_loop.hpp"

using namespace std::chrono_literals;
namespace lock = lockwire::lock;
namespace co = lockwire::lock::co;

co::Task<bool> worker(lock::Client& locks, int i) {
  lock::LockRequest req;
  req.resource = "example:coro";
  req.owner = "worker-" + std::to_string(i);
  req.ttl = 5s;
  req.wait = 10s;
  auto got = co_await co::lock(locks, req);
  if (!got) {
    std::fprintf(stderr, "worker %d: %s (%s)\n", i, got.error().message().c_str(),
                 locks.last_error().c_str());
    co_return false;
  }
  co::LeaseGuard guard(locks, std::move(*got));
  std::printf("worker %d holds it, token %llu\n", i,
              static_cast<unsigned long long>(guard.lease().token()));
  // ... the work, carrying guard.lease().token() to whatever it writes ...
  const std::error_code rec = co_await guard.release();
  std::printf("worker %d released%s\n", i, rec ? " (was not held)" : "");
  co_return !rec;
}

co::Task<void> all_workers(lock::Client& locks, int& failures) {
  for (int i = 0; i < 3; ++i) {
    if (!co_await worker(locks, i)) ++failures;
  }
  locks.close();  // nothing left: let loop.run() return
}

int main(int argc, char** argv) {
  lockwire::loop::ConnectionOptions conn;
  if (auto ec = lockwire::loop::parse_url(argc > 1 ? argv[1] : "redis://127.0.0.1:6379", conn)) {
    std::fprintf(stderr, "bad url: %s\n", ec.message().c_str());
    return 2;
  }
  lockwire::loop::UvLoop loop;
  lock::Client locks(loop, conn);
  locks.start();
  int failures = 0;
  co::spawn(all_workers(locks, failures));
  loop.run();
  return failures == 0 ? 0 : 1;
}
