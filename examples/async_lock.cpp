// The asynchronous API on a libuv loop: several workers in one process take turns on one
// resource; each callback runs on the loop thread.
//
//   async_lock [redis://127.0.0.1:6379]
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "lockwire/lock/client.hpp"
#include "lockwire/loop/uv_loop.hpp"

using namespace std::chrono_literals;
namespace lock = lockwire::lock;

int main(int argc, char** argv) {
  lockwire::loop::ConnectionOptions conn;
  if (auto ec = lockwire::loop::parse_url(argc > 1 ? argv[1] : "redis://127.0.0.1:6379", conn)) {
    std::fprintf(stderr, "bad url: %s\n", ec.message().c_str());
    return 2;
  }
  lockwire::loop::UvLoop loop;
  lock::Client locks(loop, conn);
  locks.start();

  int remaining = 3;
  for (int i = 0; i < 3; ++i) {
    lock::LockRequest req;
    req.resource = "example:async";
    req.owner = "worker-" + std::to_string(i);
    req.ttl = 5s;
    req.wait = 10s;
    locks.lock(req, [&, i](std::error_code ec, lock::Lease lease) {
      if (ec) {
        std::fprintf(stderr, "worker %d: %s\n", i, ec.message().c_str());
      } else {
        std::printf("worker %d holds it, token %llu\n", i,
                    static_cast<unsigned long long>(lease.token()));
      }
      auto finish = [&] {
        if (--remaining == 0) locks.close();  // nothing left: let loop.run() return
      };
      if (ec) return finish();
      locks.release(lease, [i, finish](std::error_code rec) {
        std::printf("worker %d released%s\n", i, rec ? " (was not held)" : "");
        finish();
      });
    });
  }
  loop.run();
  return 0;
}
