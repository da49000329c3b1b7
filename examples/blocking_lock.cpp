// The simplest use: take an exclusive lock, do the work with its fencing token, release.
//
//   blocking_lock [redis://127.0.0.1:6379] [resource]
//
// Run two copies at once: the second waits (woken by the server, no polling) until the first
// releases, and gets a larger fencing token.
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include <unistd.h>

#include "lockwire/lock/blocking.hpp"

using namespace std::chrono_literals;
namespace lock = lockwire::lock;

int main(int argc, char** argv) {
  lockwire::loop::ConnectionOptions conn;
  if (auto ec = lockwire::loop::parse_url(argc > 1 ? argv[1] : "redis://127.0.0.1:6379", conn)) {
    std::fprintf(stderr, "bad url: %s\n", ec.message().c_str());
    return 2;
  }
  lock::BlockingClient locks(conn);

  lock::LockRequest req;
  req.resource = argc > 2 ? argv[2] : "example:report";
  req.owner = "blocking-example-" + std::to_string(::getpid());
  req.ttl = 5s;           // Redis drops the lock after 5 s if we die
  req.wait = 10s;         // wait up to 10 s for it
  req.auto_renew = true;  // ... but keep it while we are alive

  std::error_code ec;
  lock::LeaseGuard guard = locks.lock_guard(req, ec);
  if (ec) {
    std::fprintf(stderr, "could not lock %s: %s\n", req.resource.c_str(), ec.message().c_str());
    return 1;
  }
  std::printf("holding %s with fencing token %llu\n", req.resource.c_str(),
              static_cast<unsigned long long>(guard.lease().token()));
  std::this_thread::sleep_for(2s);  // the work; pass the token to whatever you write to
  if (auto rec = guard.release()) std::fprintf(stderr, "release: %s\n", rec.message().c_str());
  std::printf("released\n");
  return 0;
}
