// The real-server fixture of the lock suites: a private redis-server with scripting disabled
// (rename-command to ""), a UvLoop, and blocking helpers over lock::Client's callbacks.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lockwire/lock/client.hpp"
#include "lockwire/testing/lock_regressions.hpp"
#include "lockwire/loop/uv_loop.hpp"
#include "loop_check.hpp"
#include "redis_server.hpp"
#include "sync_calls.hpp"

namespace lockwire::lock {

using namespace std::chrono_literals;
using test::RedisServer;

// Every scripting command this server has, renamed away (Redis 6.2 has no EVAL_RO, FUNCTION or
// FCALL: renaming an unknown command stops it from starting, so each is probed once).
inline std::vector<std::string> no_scripting() {
  static const std::vector<std::string> args = [] {
    const char* all[] = {"EVAL",   "EVALSHA",  "EVAL_RO", "EVALSHA_RO",
                         "SCRIPT", "FUNCTION", "FCALL",   "FCALL_RO"};
    std::vector<std::string> every;
    for (const char* c : all) every.insert(every.end(), {"--rename-command", c, ""});
    if (test::server_accepts(every)) return every;
    std::vector<std::string> a;
    for (const char* c : all) {
      if (test::server_accepts({"--rename-command", c, ""})) {
        a.insert(a.end(), {"--rename-command", c, ""});
      }
    }
    return a;
  }();
  return args;
}

// Records the client's degraded-mode notices (Metrics::on_degraded) as "what | server words".
class DegradedNotices : public Metrics {
 public:
  void on_degraded(std::string_view what, std::string_view words) noexcept override {
    said.push_back(std::string(what) + " | " + std::string(words));
  }
  // How many notices contain every one of `parts`.
  [[nodiscard]] int told(std::initializer_list<std::string_view> parts) const {
    int n = 0;
    for (const std::string& s : said) {
      bool all = true;
      for (std::string_view p : parts) all = all && s.find(p) != std::string::npos;
      n += all ? 1 : 0;
    }
    return n;
  }
  std::vector<std::string> said;
};

// The loop half of every real-server lock fixture (one server, sentinels, a cluster): a UvLoop
// that must be empty when the test ends, bounded waits on it, a blocking acquire.
class LoopTest : public ::testing::Test, public testing::SyncCalls<LoopTest> {
  friend testing::SyncCalls<LoopTest>;

 protected:
  // `guard`: the default bound of run_until (topologies with failovers need longer).
  explicit LoopTest(Nanos guard = 20s) : guard_(guard) {}

  // Runs the loop until done() (a guard timer keeps a broken test from hanging forever).
  void run_until(const std::function<bool()>& done) { run_until(done, guard_); }
  void run_until(const std::function<bool()>& done, Nanos limit) {
    bool expired = false;
    auto guard = loop_.make_timer([&] { expired = true; });
    guard->start(limit);
    while (!done() && !expired) loop_.run_once(true);
    ASSERT_FALSE(expired) << "test guard expired";
  }

  void sleep_loop(Nanos d) {
    bool fired = false;
    auto t = loop_.make_timer([&] { fired = true; });
    t->start(d);
    run_until([&] { return fired; });
  }

  struct Acq {
    std::error_code ec;
    Lease lease;
  };
  // A lock() still running: `done` once its callback ran.
  struct Pending {
    Acq acq;
    bool done = false;
  };
  std::shared_ptr<Pending> start_lock(Client& c, LockRequest req) {
    auto p = std::make_shared<Pending>();
    c.lock(std::move(req), [p](std::error_code ec, Lease l) {
      p->acq = {ec, std::move(l)};
      p->done = true;
    });
    return p;
  }
  Acq acquire(Client& c, LockRequest req) {
    Acq out;
    bool done = false;
    c.lock(std::move(req), [&](std::error_code ec, Lease l) {
      out = {ec, std::move(l)};
      done = true;
    });
    run_until([&] { return done; });
    return out;
  }

  static LockRequest req(std::string res, std::string owner, Nanos ttl = 10s, Nanos wait = 0s,
                         Kind kind = Kind::exclusive) {
    return testing::request(std::move(res), std::move(owner), ttl, wait, kind);
  }

  Nanos guard_;
  loop::UvLoop loop_;
  test::EmptyLoopAtExit at_exit_{loop_};  // libuv's rule: every test leaves its loop empty
};

// One private redis-server with scripting disabled.
class LockTest : public LoopTest {
 protected:
  explicit LockTest(std::vector<std::string> extra = no_scripting()) : server_(std::move(extra)) {}

  loop::ConnectionOptions conn_options() {
    loop::ConnectionOptions o;
    EXPECT_FALSE(loop::parse_url(server_.url(), o));
    o.reconnect.initial = 5ms;
    o.reconnect.max = 50ms;
    return o;
  }

  // `waiter` asks for `resource` (as owner "b", 10 s each) while `holder` holds it (lease
  // `held`); after 300 ms a BZPOPMIN is on the server exactly when `parked` (the waiter parked),
  // then the holder releases and the waiter's answer comes: returned, its lease still held.
  std::shared_ptr<Pending> hand_over(Client& holder, const Lease& held, Client& waiter,
                                     const std::string& resource, bool parked) {
    auto w = start_lock(waiter, req(resource, "b", 10s, 10s));
    sleep_loop(300ms);
    EXPECT_EQ(server_.cli({"CLIENT", "LIST"}).find("cmd=bzpopmin") != std::string::npos, parked);
    EXPECT_FALSE(release(holder, held));
    run_until([&] { return w->done; });
    return w;
  }

  // `waiter` asks for r while `holder` holds it (lease `held`) where nobody may park (the
  // parked hand-off refused or off): no BZPOPMIN reaches the server, and the holder's release
  // wakes the waiter through its push.
  void expect_woken_without_parking(Client& holder, const Lease& held, Client& waiter) {
    auto w = hand_over(holder, held, waiter, "r", false);
    ASSERT_FALSE(w->acq.ec) << w->acq.ec.message();
    EXPECT_FALSE(release(waiter, w->acq.lease));
  }

  std::unique_ptr<Client> make_client(std::shared_ptr<Metrics> m = nullptr) {
    ClientOptions co;
    co.metrics = std::move(m);
    return make_client(co, conn_options());
  }
  std::unique_ptr<Client> make_client(ClientOptions co, loop::ConnectionOptions o) {
    auto c = std::make_unique<Client>(loop_, std::move(o), std::move(co));
    c->start();
    return c;
  }
  // A client with safeguards switched off (the twins of the race catalogue's broken strategies).
  std::unique_ptr<Client> make_broken_client(const lock::testing::Regressions& broken,
                                             loop::ConnectionOptions o) {
    auto c = lock::testing::make_client(loop_, std::move(o), ClientOptions{}, broken);
    c->start();
    return c;
  }
  // A client logged in as an ACL user (created by the test with server_.cli).
  std::unique_ptr<Client> make_user_client(const std::string& user, ClientOptions co = {}) {
    loop::ConnectionOptions o = conn_options();
    o.username = user;
    o.password = "pw";
    return make_client(std::move(co), std::move(o));
  }

  RedisServer server_;
};

}  // namespace lockwire::lock
