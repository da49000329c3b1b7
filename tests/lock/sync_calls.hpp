// Blocking wrappers over lock::Client's callbacks for tests, shared by the real-server suite
// (lock_test.cpp, UvLoop) and the simulator suite (lock_sim_test.cpp, SimLoop). `Driver` supplies
// run_until(pred), which runs its loop or world until pred() holds.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <system_error>

#include "lockwire/lock/client.hpp"

namespace lockwire::lock::testing {

// (Avoids a g++ 12 -Wrestrict false positive on "literal" + std::string at -O3.)
inline std::string numbered(std::string_view prefix, int i) {
  std::string s(prefix);
  s.append(std::to_string(i));
  return s;
}

// A lock request in one line (tests build many).
inline LockRequest request(std::string res, std::string owner,
                           std::chrono::nanoseconds ttl = std::chrono::seconds(10),
                           std::chrono::nanoseconds wait = std::chrono::nanoseconds{0},
                           Kind kind = Kind::exclusive) {
  LockRequest r;
  r.resource = std::move(res);
  r.owner = std::move(owner);
  r.ttl = ttl;
  r.wait = wait;
  r.kind = kind;
  return r;
}

template <class Driver>
class SyncCalls {
 public:
  std::error_code release(Client& c, const Lease& l) {
    return wait_done([&](auto done) { c.release(l, done); });
  }
  std::error_code renew(Client& c, const Lease& l) {
    return wait_done([&](auto done) { c.renew(l, done); });
  }
  // Expects success; returns how many holders were removed.
  std::size_t force_release(Client& c, const std::string& r) {
    std::size_t removed = 0;
    bool done = false;
    c.force_release(r, [&](std::error_code ec, std::size_t n) {
      EXPECT_FALSE(ec) << ec.message();
      removed = n;
      done = true;
    });
    driver().run_until([&] { return done; });
    return removed;
  }
  LockInfo inspect(Client& c, const std::string& r) {
    LockInfo out;
    bool done = false;
    c.inspect(r, [&](std::error_code ec, const LockInfo& i) {
      EXPECT_FALSE(ec) << ec.message();
      out = i;
      done = true;
    });
    driver().run_until([&] { return done; });
    return out;
  }

 private:
  Driver& driver() { return static_cast<Driver&>(*this); }
  // Starts an operation reporting through a DoneHandler and waits for its outcome.
  template <class Start>
  std::error_code wait_done(Start start) {
    std::error_code out;
    bool done = false;
    start([&](std::error_code ec) {
      out = ec;
      done = true;
    });
    driver().run_until([&] { return done; });
    return out;
  }
};

}  // namespace lockwire::lock::testing
