// Takes a lock on a real Redis twice with the blocking client and checks what a user relies on:
// a grant, a second owner refused while it is held, and a larger fencing token next time.
//   consumer_lock redis://127.0.0.1:6379
#include <chrono>
#include <cstdio>

#include "lockwire/lock/blocking.hpp"

namespace lock = lockwire::lock;
using namespace std::chrono_literals;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer_lock URL\n");
    return 2;
  }
  lockwire::loop::ConnectionOptions conn;
  if (auto ec = lockwire::loop::parse_url(argv[1], conn)) {
    std::fprintf(stderr, "bad URL: %s\n", ec.message().c_str());
    return 2;
  }
  lock::BlockingClient locks(conn);
  lock::LockRequest req;
  req.resource = "consumer:check";
  req.ttl = 5s;
  std::uint64_t first = 0;
  for (int round = 0; round < 2; ++round) {
    req.owner = "consumer-" + std::to_string(round);
    std::error_code ec;
    lock::LeaseGuard guard = locks.lock_guard(req, ec);
    if (!guard) {
      std::fprintf(stderr, "round %d: not acquired: %s\n", round, ec.message().c_str());
      return 1;
    }
    const std::uint64_t token = guard.lease().token();
    lock::LockRequest other = req;
    other.owner = "intruder";
    std::error_code oec;
    if (lock::LeaseGuard g2 = locks.lock_guard(other, oec)) {
      std::fprintf(stderr, "round %d: a second owner got the held lock\n", round);
      return 1;
    }
    if (round == 0) {
      first = token;
    } else if (token <= first) {
      std::fprintf(stderr, "fencing token did not grow: %llu then %llu\n",
                   static_cast<unsigned long long>(first), static_cast<unsigned long long>(token));
      return 1;
    }
    std::printf("round %d: held, token %llu; a second owner was refused (%s)\n", round,
                static_cast<unsigned long long>(token), oec.message().c_str());
  }
  std::printf("consumer_lock: ok\n");
  return 0;
}
