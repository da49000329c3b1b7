// The same lock semantics as lock_test.cpp, on the deterministic simulator: the unchanged
// lock::Client runs on SimLoops against the simulated Redis, with faults the real server cannot
// be made to produce on demand (stalls, dropped connections after a write). Every test runs over
// several seeds; a failure names its seed.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lockwire/lock/client.hpp"
#include "lockwire/sim/sim_redis.hpp"
#include "lockwire/sim/world.hpp"
#include "sync_calls.hpp"

namespace lockwire::lock {
namespace {

using namespace std::chrono_literals;

using testing::numbered;

struct Env : testing::SyncCalls<Env> {
  explicit Env(std::uint64_t seed) : world(seed), redis(world, world.add_node("redis")) {}

  Client& client(std::shared_ptr<Metrics> m = nullptr, bool parked_handoff = false,
                 bool fencing_tokens = true) {
    sim::Node& n = world.add_node(numbered("c", static_cast<int>(clients.size())));
    loop::ConnectionOptions o;
    o.endpoint = redis.endpoint();
    o.connect_timeout = 1s;
    o.reconnect.initial = 5ms;
    o.reconnect.max = 50ms;
    ClientOptions co;
    co.metrics = std::move(m);
    co.parked_handoff = parked_handoff;
    co.fencing_tokens = fencing_tokens;
    clients.push_back(std::make_unique<Client>(n.loop(), o, co));
    clients.back()->start();
    return *clients.back();
  }

  void run_until(const std::function<bool()>& pred, Nanos limit = 60s) {
    ASSERT_TRUE(world.run_until(pred, world.now() + limit)) << "seed " << world.seed();
  }
  void run_for(Nanos d) { world.run_for(d); }

  struct Acq {
    std::error_code ec;
    Lease lease;
    bool done = false;
  };
  std::shared_ptr<Acq> start(Client& c, LockRequest r) {
    auto a = std::make_shared<Acq>();
    c.lock(std::move(r), [a](std::error_code ec, Lease l) {
      a->ec = ec;
      a->lease = std::move(l);
      a->done = true;
    });
    return a;
  }
  // Runs an acquire-like call (upgrade, ...) and waits for its answer.
  Acq acquire_with(const std::function<void(Client::AcquireHandler)>& call) {
    auto a = std::make_shared<Acq>();
    call([a](std::error_code ec, Lease l) {
      a->ec = ec;
      a->lease = std::move(l);
      a->done = true;
    });
    run_until([&] { return a->done; });
    return *a;
  }
  Acq acquire(Client& c, LockRequest r) {
    auto a = start(c, std::move(r));
    run_until([&] { return a->done; });
    return *a;
  }

  sim::World world;
  sim::SimRedis redis;
  std::vector<std::unique_ptr<Client>> clients;  // destroyed before the world
};

LockRequest req(std::string res, std::string owner, Nanos ttl = 10s, Nanos wait = 0s,
                Kind kind = Kind::exclusive) {
  return testing::request(std::move(res), std::move(owner), ttl, wait, kind);
}

constexpr std::uint64_t kSeeds[] = {1, 2, 3, 7, 42};

TEST(LockSim, ExclusiveSharedCompatibilityAndTokens) {
  for (std::uint64_t seed : kSeeds) {
    Env e(seed);
    Client& a = e.client();
    Client& b = e.client();
    auto x = e.acquire(a, req("r", "a"));
    ASSERT_FALSE(x.ec) << seed << " " << x.ec.message();
    EXPECT_EQ(e.acquire(b, req("r", "b")).ec, Errc::busy);
    EXPECT_EQ(e.acquire(b, req("r", "s", 10s, 0s, Kind::shared)).ec, Errc::busy);
    EXPECT_EQ(e.acquire(b, req("r", "a")).ec, Errc::already_held);
    EXPECT_FALSE(e.release(a, x.lease));
    auto s1 = e.acquire(a, req("r", "s1", 10s, 0s, Kind::shared));
    auto s2 = e.acquire(b, req("r", "s2", 5s, 0s, Kind::shared));
    ASSERT_FALSE(s1.ec);
    ASSERT_FALSE(s2.ec);
    EXPECT_GT(s1.lease.token(), x.lease.token());
    EXPECT_GT(s2.lease.token(), s1.lease.token());
    EXPECT_EQ(e.acquire(b, req("r", "x")).ec, Errc::busy);
    EXPECT_EQ(e.inspect(a, "r").holders.size(), 2u);
    EXPECT_FALSE(e.release(a, s1.lease));
    EXPECT_FALSE(e.release(b, s2.lease));
    auto y = e.acquire(b, req("r", "y"));
    ASSERT_FALSE(y.ec);
    EXPECT_GT(y.lease.token(), s2.lease.token());
  }
}

TEST(LockSim, ExpiryTakeoverAndStaleLeaseTouchesNothing) {
  for (std::uint64_t seed : kSeeds) {
    Env e(seed);
    Client& a = e.client();
    Client& b = e.client();
    bool lost = false;
    auto r = req("r", "a", 200ms);
    r.on_lost = [&](std::error_code) { lost = true; };
    auto la = e.acquire(a, r);
    ASSERT_FALSE(la.ec);
    auto lb = e.acquire(b, req("r", "b", 10s, 5s));
    ASSERT_FALSE(lb.ec) << seed;
    EXPECT_GT(lb.lease.token(), la.lease.token());
    e.run_until([&] { return lost; });
    EXPECT_EQ(e.renew(a, la.lease), Errc::not_held);
    EXPECT_EQ(e.release(a, la.lease), Errc::not_held);
    const LockInfo info = e.inspect(b, "r");
    ASSERT_EQ(info.holders.size(), 1u);
    EXPECT_EQ(info.holders[0].owner, "b");
    EXPECT_TRUE(lb.lease.held());
  }
}

TEST(LockSim, AutoRenewSurvivesManyTtlsAndReportsLossOnStall) {
  for (std::uint64_t seed : kSeeds) {
    Env e(seed);
    auto m = std::make_shared<CountingMetrics>();
    Client& a = e.client(m);
    bool lost = false;
    auto r = req("r", "a", 300ms);
    r.auto_renew = true;
    r.on_lost = [&](std::error_code ec) {
      EXPECT_EQ(ec, Errc::lost);
      lost = true;
    };
    auto la = e.acquire(a, r);
    ASSERT_FALSE(la.ec);
    e.run_for(3s);  // ten TTLs
    EXPECT_FALSE(lost) << seed;
    EXPECT_TRUE(la.lease.held());
    EXPECT_GE(m->renewed.load(), 9u);
    e.redis.stall(1s);  // like DEBUG SLEEP: renewals go unanswered past the TTL
    e.run_until([&] { return lost; });
    EXPECT_EQ(la.lease.state(), LeaseState::lost);
  }
}

TEST(LockSim, ForceReleaseIsReportedToHolderAtOnce) {
  // No auto-renew, TTL 30 s: the holder learns of a force-release from the notice (the tracked
  // notice key's push, a re-read, one check), within a few round trips, not when its lease runs
  // out locally.
  for (std::uint64_t seed : kSeeds) {
    Env e(seed);
    Client& a = e.client();
    Client& b = e.client();
    bool lost = false;
    auto r = req("r", "a", 30s);
    r.on_lost = [&](std::error_code) { lost = true; };
    auto la = e.acquire(a, r);
    ASSERT_FALSE(la.ec);
    const auto t = e.world.now();
    EXPECT_EQ(e.force_release(b, "r"), 1u);
    e.run_until([&] { return lost; });
    EXPECT_LT(e.world.now() - t, 1s) << seed;
    EXPECT_EQ(la.lease.state(), LeaseState::lost);
  }
}

TEST(LockSim, WakeOnReleaseAndOnExpiryWithoutPolling) {
  for (std::uint64_t seed : kSeeds) {
    Env e(seed);
    auto mb = std::make_shared<CountingMetrics>();
    Client& a = e.client();
    Client& b = e.client(mb);
    auto la = e.acquire(a, req("r", "a", 2s));
    ASSERT_FALSE(la.ec);
    auto wb = e.start(b, req("r", "b", 10s, 30s));
    e.run_for(200ms);
    const auto settled = mb->requests.load();
    EXPECT_LE(settled, 3u);  // CLIENT TRACKING, the attempt, the tracked read
    e.run_for(1s);
    EXPECT_EQ(mb->requests.load(), settled);  // nothing sent while waiting
    EXPECT_FALSE(e.release(a, la.lease));
    e.run_until([&] { return wb->done; });
    ASSERT_FALSE(wb->ec);
    // One attempt after the push, then the elected waiter leaves the wait queue (sent after the
    // grant, not waited for; nobody else is queued, so there is no doorbell to ring).
    EXPECT_EQ(mb->requests.load(), settled + 2);
    // Wake on expiry: b never releases; a waits.
    auto wa = e.start(a, req("r", "a2", 10s, 30s));
    e.run_until([&] { return wa->done; });
    EXPECT_FALSE(wa->ec) << seed;
  }
}

TEST(LockSim, ManyWaitersShareOneInterest) {
  for (std::uint64_t seed : kSeeds) {
    Env e(seed);
    auto mb = std::make_shared<CountingMetrics>();
    Client& a = e.client();
    Client& b = e.client(mb);
    auto la = e.acquire(a, req("r", "holder"));
    ASSERT_FALSE(la.ec);
    std::vector<std::shared_ptr<Env::Acq>> ws;
    for (int i = 0; i < 20; ++i) ws.push_back(e.start(b, req("r", numbered("w", i), 10s, 60s)));
    e.run_for(500ms);
    EXPECT_LE(mb->requests.load(), 3u) << seed;
    EXPECT_FALSE(e.release(a, la.lease));
    std::uint64_t last = la.lease.token();
    for (auto& w : ws) {
      e.run_until([&] { return w->done; });
      ASSERT_FALSE(w->ec) << w->ec.message();
      EXPECT_GT(w->lease.token(), last);  // FIFO within one client
      last = w->lease.token();
      EXPECT_FALSE(e.release(b, w->lease));
    }
  }
}

// A holder of "r" (TTL 30 s), then `n` clients (each with its own metrics) waiting up to 60 s.
struct Waiting {
  Waiting(Env& e, int n) : holder(e.client()), held(e.acquire(holder, req("r", "holder", 30s))) {
    for (int i = 0; i < n; ++i) {
      ms.push_back(std::make_shared<CountingMetrics>());
      ws.push_back(e.start(e.client(ms.back()), req("r", numbered("w", i), 10s, 60s)));
    }
  }
  [[nodiscard]] std::uint64_t requests() const {
    std::uint64_t n = 0;
    for (const auto& m : ms) n += m->requests.load();
    return n;
  }
  Client& holder;
  Env::Acq held;
  std::vector<std::shared_ptr<CountingMetrics>> ms;
  std::vector<std::shared_ptr<Env::Acq>> ws;
};

TEST(LockSim, WaitersInManyClientsDoNotWakeEachOtherForever) {
  // Every claim modifies the holder set and wakes every client tracking it; only the first
  // waiter in the wait queue may act on that at once (its backup only after the grace, with a
  // read that changes nothing; the others not at all), or waiters in different clients would
  // keep waking each other.
  for (std::uint64_t seed : kSeeds) {
    Env e(seed);
    Waiting wt(e, 8);
    ASSERT_FALSE(wt.held.ec);
    auto& ws = wt.ws;
    e.run_for(1s);
    const auto settled = wt.requests();
    e.run_for(5s);
    EXPECT_EQ(wt.requests(), settled) << seed;  // quiet while the lock is held
    EXPECT_FALSE(e.release(wt.holder, wt.held.lease));
    for (std::size_t i = 0; i < ws.size(); ++i) {
      // Each grant is released by the test so that every waiter gets its turn.
      e.run_until([&] {
        return std::count_if(ws.begin(), ws.end(), [](auto& w) { return w->done; }) >
               static_cast<long>(i);
      });
      for (std::size_t k = 0; k < ws.size(); ++k) {
        if (ws[k]->done && ws[k]->lease.held()) {
          bool rel = false;
          e.clients[k + 1]->release(ws[k]->lease, [&](std::error_code) { rel = true; });
          e.run_until([&] { return rel; });
        }
      }
    }
    for (auto& w : ws) EXPECT_FALSE(w->ec) << seed << " " << w->ec.message();
  }
}

TEST(LockSim, AHandOffInsideOneClientTakesOneRoundTrip) {
  // A holder and a waiter in one client: the waiter's attempt goes out right behind the release
  // (same connection, so the server applies it after the release) instead of after the push the
  // release causes. The network's round trip is 100-140 us (LinkOptions: 50 us each way plus up
  // to 20 us jitter), so one round trip ends before 200 us and two cannot. A waiter in another
  // client still needs the push: two round trips.
  for (std::uint64_t seed : kSeeds) {
    for (bool same_client : {true, false}) {
      Env e(seed);
      Client& a = e.client();
      Client& b = same_client ? a : e.client();
      auto la = e.acquire(a, req("r", "a"));
      ASSERT_FALSE(la.ec);
      auto wb = e.start(b, req("r", "b", 10s, 30s));
      e.run_for(200ms);
      ASSERT_FALSE(wb->done);
      const Nanos t0 = e.world.now();
      a.release(la.lease, [](std::error_code) {});
      e.run_until([&] { return wb->done; });
      ASSERT_FALSE(wb->ec) << wb->ec.message();
      const Nanos took = e.world.now() - t0;
      if (same_client) {
        EXPECT_LT(took, 200us) << "seed " << seed << ": " << took.count() << " ns";
      } else {
        EXPECT_GE(took, 200us) << "seed " << seed << ": " << took.count() << " ns";
      }
      EXPECT_GT(wb->lease.token(), la.lease.token());
    }
  }
}

TEST(LockSim, AParkedHandOffBetweenClientsTakesOneRoundTrip) {
  // ClientOptions::parked_handoff (docs/handoff-one-rtt.md): the elected waiter's acquire
  // block waits in the server behind BZPOPMIN on a connection of its own; the release's COPY
  // gives it the token, and the server runs the block as the release lands. Measured as the
  // test above: one round trip ends before 200 us, two cannot. Without the option (or when the
  // releasing client does not copy a token: its push, then an unblock) it takes two or more.
  // Writes arrive whole here: a split write costs a link latency per piece in the simulator,
  // which would measure the splits, not the round trips (they run in the races).
  for (std::uint64_t seed : kSeeds) {
    for (int variant : {0, 1, 2}) {  // both park; waiter parks, holder sends no token; none
      Env e(seed);
      sim::LinkOptions whole;
      whole.split_per_million = 0;
      e.world.net().set_default_link(whole);
      Client& a = e.client(nullptr, variant == 0);
      Client& b = e.client(nullptr, variant != 2);
      auto la = e.acquire(a, req("r", "a"));
      ASSERT_FALSE(la.ec);
      auto wb = e.start(b, req("r", "b", 10s, 30s));
      e.run_for(200ms);
      ASSERT_FALSE(wb->done);
      const Nanos t0 = e.world.now();
      a.release(la.lease, [](std::error_code) {});
      e.run_until([&] { return wb->done; });
      ASSERT_FALSE(wb->ec) << wb->ec.message();
      const Nanos took = e.world.now() - t0;
      if (variant == 0) {
        EXPECT_LT(took, 200us) << "seed " << seed << ": " << took.count() << " ns";
      } else {
        EXPECT_GE(took, 200us) << "seed " << seed << ": " << took.count() << " ns";
      }
      EXPECT_GT(wb->lease.token(), la.lease.token());
      // The next hand-off, back to a parked waiter of a: the same again.
      auto wa = e.start(a, req("r", "a2", 10s, 30s));
      e.run_for(200ms);
      ASSERT_FALSE(wa->done);
      const Nanos t1 = e.world.now();
      b.release(wb->lease, [](std::error_code) {});
      e.run_until([&] { return wa->done; });
      ASSERT_FALSE(wa->ec) << wa->ec.message();
      if (variant == 0) {
        EXPECT_LT(e.world.now() - t1, 200us) << "seed " << seed;
      }
      EXPECT_GT(wa->lease.token(), wb->lease.token());
    }
  }
}

TEST(LockSim, AParkedWaiterGivesUpCleanly) {
  // A parked waiter whose wait ends: unblocked, its block runs (the lock is still held: it
  // loses), its claim goes, and it answers timed_out; nothing of it is left to be granted later.
  for (std::uint64_t seed : kSeeds) {
    Env e(seed);
    Client& a = e.client(nullptr, true);
    Client& b = e.client(nullptr, true);
    auto la = e.acquire(a, req("r", "a"));
    ASSERT_FALSE(la.ec);
    auto wb = e.start(b, req("r", "b", 10s, 500ms));
    e.run_until([&] { return wb->done; });
    EXPECT_EQ(wb->ec, Errc::timed_out) << wb->ec.message();
    e.run_for(100ms);
    EXPECT_TRUE(e.release(a, la.lease) == std::error_code{});
    e.run_for(1s);
    // Nobody holds it: a fresh attempt of a third owner is granted at once.
    auto lc = e.acquire(a, req("r", "c", 10s, 0s));
    EXPECT_FALSE(lc.ec) << lc.ec.message();
  }
}

TEST(LockSim, WithoutFencingTokensLocksStillExcludeAndHandOff) {
  // ClientOptions::fencing_tokens = false: grants carry token 0 and the fence key is never
  // written; exclusion, waiting in arrival order and the hand-off are unchanged.
  for (std::uint64_t seed : kSeeds) {
    for (bool parked : {false, true}) {
      Env e(seed);
      Client& a = e.client(nullptr, parked, false);
      Client& b = e.client(nullptr, parked, false);
      Client& c = e.client(nullptr, parked, false);
      auto la = e.acquire(a, req("r", "a"));
      ASSERT_FALSE(la.ec);
      EXPECT_EQ(la.lease.token(), 0u);
      auto wb = e.start(b, req("r", "b", 10s, 30s));
      e.run_for(50ms);
      auto wc = e.start(c, req("r", "c", 10s, 30s));
      e.run_for(200ms);
      EXPECT_FALSE(wb->done);
      EXPECT_FALSE(wc->done);
      EXPECT_FALSE(e.release(a, la.lease));
      e.run_until([&] { return wb->done; });
      ASSERT_FALSE(wb->ec) << wb->ec.message();
      EXPECT_FALSE(wc->done);  // b arrived first
      EXPECT_FALSE(e.release(b, wb->lease));
      e.run_until([&] { return wc->done; });
      ASSERT_FALSE(wc->ec) << wc->ec.message();
      EXPECT_EQ(wc->lease.token(), 0u);
      EXPECT_FALSE(e.release(c, wc->lease));
      EXPECT_EQ(e.redis.model().exists("lockwire:{r}:fence"), false);
    }
  }
}

TEST(LockSim, ReleaseWakesOnlyTheElectedWaiter) {
  // Eight waiting clients: a release makes exactly one of them attempt (the first in the wait
  // queue P{r}:q). Its grant hands the queue on: it leaves and, in the same request, rings the
  // doorbells of the two its last read saw behind it, which read their places again. The five
  // others send nothing at all.
  for (std::uint64_t seed : kSeeds) {
    Env e(seed);
    Waiting wt(e, 8);
    ASSERT_FALSE(wt.held.ec);
    auto& ws = wt.ws;
    e.run_for(1s);
    const auto settled = wt.requests();
    std::vector<std::uint64_t> before;
    for (const auto& m : wt.ms) before.push_back(m->requests.load());
    EXPECT_FALSE(e.release(wt.holder, wt.held.lease));
    e.run_until([&] { return std::any_of(ws.begin(), ws.end(), [](auto& w) { return w->done; }); });
    // The elected waiter's attempt and its leaving the queue (after the grant), nothing else.
    EXPECT_EQ(wt.requests(), settled + 2) << seed;
    e.run_for(1s);
    // Then one read by each of the two rung, and quiet again: the ring went with the leave (a
    // request of its own before, settled + 5).
    EXPECT_EQ(wt.requests(), settled + 2 + 2) << seed;
    int woken = 0;
    for (std::size_t i = 0; i < ws.size(); ++i) woken += wt.ms[i]->requests.load() != before[i];
    EXPECT_EQ(woken, 3) << seed;
    e.run_for(5s);
    EXPECT_EQ(wt.requests(), settled + 4) << seed;
    for (auto& w : ws) {
      if (w->done) {
        EXPECT_FALSE(w->ec) << w->ec.message();
      }
    }
  }
}

TEST(LockSim, AVanishedFirstWaiterCostsOneGraceNotOnePerHandOff) {
  // b (first in the wait queue) goes away without a word; its queue entry and doorbell stay
  // for up to 10 s. c (second, the backup) takes over after the grace, not when b's doorbell
  // expires, and as it leaves the queue it drops b too, so d becomes first and the next
  // hand-off is immediate. Without dropping b, c would ring b's still-armed doorbell and d
  // would only be the backup: every later hand-off would wait out the grace until b's doorbell
  // expired.
  for (std::uint64_t seed : kSeeds) {
    Env e(seed);
    Client& a = e.client();
    auto la = e.acquire(a, req("r", "holder", 30s));
    ASSERT_FALSE(la.ec);
    Client& b = e.client();
    Client& c = e.client();
    Client& d = e.client();
    auto wb = e.start(b, req("r", "b", 10s, 60s));
    e.run_for(200ms);
    auto wc = e.start(c, req("r", "c", 10s, 60s));
    e.run_for(200ms);
    auto wd = e.start(d, req("r", "d", 10s, 60s));
    e.run_for(200ms);
    b.close();
    EXPECT_TRUE(wb->done);
    EXPECT_EQ(wb->ec, Errc::closed);
    auto t = e.world.now();
    EXPECT_FALSE(e.release(a, la.lease));
    e.run_until([&] { return wc->done; });
    ASSERT_FALSE(wc->ec) << wc->ec.message();
    EXPECT_GE(e.world.now() - t, 50ms) << seed;  // c waited out the grace (50 ms) ...
    EXPECT_LT(e.world.now() - t, 1s) << seed;    // ... not b's doorbell (10 s)
    e.run_for(100ms);                            // c's hand-on rings d
    t = e.world.now();
    EXPECT_FALSE(e.release(c, wc->lease));
    e.run_until([&] { return wd->done; });
    ASSERT_FALSE(wd->ec) << wd->ec.message();
    EXPECT_LT(e.world.now() - t, 50ms) << seed;  // d was first: no grace
  }
}

TEST(LockSim, ALaterWaiterTimingOutLeavesTheHeadsBackstopRunning) {
  // The head waits for an expiry (no release); a later local waiter gives up meanwhile. The
  // head must still wake at the backstop (the holder's PTTL + 1 ms), not only when Redis' active
  // expiry gets round to sending the push.
  for (std::uint64_t seed : kSeeds) {
    Env e(seed);
    Client& a = e.client();
    Client& b = e.client();
    const auto t0 = e.world.now();
    ASSERT_FALSE(e.acquire(a, req("r", "a", 500ms)).ec);
    auto head = e.start(b, req("r", "head", 10s, 10s));
    auto later = e.start(b, req("r", "later", 10s, 100ms));
    e.run_until([&] { return head->done; });
    ASSERT_FALSE(head->ec) << head->ec.message();
    EXPECT_EQ(later->ec, Errc::timed_out);
    EXPECT_LT(e.world.now() - t0, 520ms) << seed;  // expiry at ~500 ms, backstop 1 ms after
  }
}

TEST(LockSim, DeadlineDuringInFlightAcquireLeavesNoLock) {
  for (std::uint64_t seed : kSeeds) {
    Env e(seed);
    Client& a = e.client();
    Client& b = e.client();
    (void)e.inspect(a, "r");
    (void)e.inspect(b, "r");
    e.redis.stall(500ms);
    auto wa = e.start(a, req("r", "a", 10s, 100ms));
    e.run_until([&] { return wa->done; });
    EXPECT_EQ(wa->ec, Errc::timed_out);
    e.run_for(1s);  // the late EXEC reply arrives and is released
    EXPECT_EQ(e.inspect(b, "r").holders.size(), 0u) << seed;
    EXPECT_FALSE(e.acquire(b, req("r", "b")).ec);
  }
}

TEST(LockSim, LostReplyIsResolvedNotReplayed) {
  // The connection drops after the acquire block was written: the outcome is unknown. The client
  // removes its own claim (if any) and acquires afresh; exactly one lease results, no orphan.
  for (std::uint64_t seed : kSeeds) {
    Env e(seed);
    Client& a = e.client();
    Client& b = e.client();
    (void)e.inspect(a, "r");
    e.redis.stall(50ms);
    auto wa = e.start(a, req("r", "a", 10s, 5s));
    e.run_for(10ms);
    e.redis.drop_connections();
    e.run_until([&] { return wa->done; });
    ASSERT_FALSE(wa->ec) << seed << " " << wa->ec.message();
    const LockInfo info = e.inspect(b, "r");
    ASSERT_EQ(info.holders.size(), 1u);
    EXPECT_EQ(info.holders[0].owner, "a");
    EXPECT_EQ(info.last_token, wa->lease.token());  // the handed-out token is the live grant's
    EXPECT_FALSE(e.release(a, wa->lease));
    EXPECT_EQ(e.inspect(b, "r").holders.size(), 0u);
  }
}

TEST(LockSim, MutualExclusionManyClients) {
  for (std::uint64_t seed : kSeeds) {
    Env e(seed);
    constexpr int kClients = 5;
    constexpr int kRounds = 10;
    for (int i = 0; i < kClients; ++i) e.client();
    int inside = 0, max_inside = 0, finished = 0;
    std::uint64_t last_token = 0;
    bool increasing = true;
    std::vector<int> rounds(kClients, 0);
    std::vector<std::unique_ptr<loop::Timer>> timers(kClients);
    std::function<void(int)> next = [&](int i) {
      if (rounds[i] == kRounds) {
        ++finished;
        return;
      }
      Client& c = *e.clients[i];
      c.lock(req("m", numbered("c", i), 5s, 60s), [&, i](std::error_code ec, Lease l) {
        ASSERT_FALSE(ec) << ec.message();
        max_inside = std::max(max_inside, ++inside);
        if (l.token() <= last_token) increasing = false;
        last_token = l.token();
        Client& cc = *e.clients[i];
        timers[i] = e.world.find_node(numbered("c", i))->loop().make_timer([&, i, l] {
          --inside;
          e.clients[i]->release(l, [&, i](std::error_code rec) {
            EXPECT_FALSE(rec);
            ++rounds[i];
            next(i);
          });
        });
        (void)cc;
        timers[i]->start(3ms);
      });
    };
    for (int i = 0; i < kClients; ++i) next(i);
    e.run_until([&] { return finished == kClients; }, 600s);
    EXPECT_EQ(max_inside, 1) << seed;
    EXPECT_TRUE(increasing) << seed;
    timers.clear();
  }
}

// Metrics::on_op names the resource of every operation (issue #31): acquire (granted, busy,
// refused before sending), renew, release by lease and by owner, force_release, upgrade and
// each resource of a lock_all.
struct OpRecorder final : Metrics {
  struct Seen {
    Op op;
    Kind kind;
    std::string resource;
    std::error_code ec;
  };
  std::vector<Seen> seen;
  void on_op(Op op, Kind kind, std::string_view resource, std::error_code ec,
             Nanos) noexcept override {
    seen.push_back({op, kind, std::string(resource), ec});
  }
  // Takes what was reported since the last call.
  std::vector<Seen> take() { return std::exchange(seen, {}); }
};

TEST(LockSim, MetricsOnOpCarriesTheResource) {
  for (std::uint64_t seed : kSeeds) {
    Env e(seed);
    auto m = std::make_shared<OpRecorder>();
    Client& a = e.client(m);
    Client& b = e.client(m);
    auto one = [&](Op op, Kind kind, const char* resource, std::error_code ec) {
      auto s = m->take();
      ASSERT_EQ(s.size(), 1u) << "seed " << seed << " " << resource;
      EXPECT_EQ(s[0].op, op) << resource;
      EXPECT_EQ(s[0].kind, kind) << resource;
      EXPECT_EQ(s[0].resource, resource);
      EXPECT_EQ(s[0].ec, ec) << resource << ": " << s[0].ec.message();
    };

    auto la = e.acquire(a, req("invoice:1", "a"));
    ASSERT_FALSE(la.ec);
    one(Op::acquire, Kind::exclusive, "invoice:1", {});
    EXPECT_EQ(e.acquire(b, req("invoice:1", "b")).ec, Errc::busy);
    one(Op::acquire, Kind::exclusive, "invoice:1", Errc::busy);
    EXPECT_EQ(e.acquire(b, req("invoice:1", "b", 0s)).ec, Errc::invalid_argument);  // no TTL
    one(Op::acquire, Kind::exclusive, "invoice:1", Errc::invalid_argument);
    EXPECT_FALSE(e.renew(a, la.lease));
    one(Op::renew, Kind::exclusive, "invoice:1", {});
    EXPECT_FALSE(e.release(a, la.lease));
    one(Op::release, Kind::exclusive, "invoice:1", {});

    ASSERT_FALSE(e.acquire(a, req("invoice:2", "a")).ec);
    m->take();
    bool done = false;
    std::error_code ec;
    b.release("invoice:2", "a", Kind::exclusive, [&](std::error_code x) {
      ec = x;
      done = true;
    });
    e.run_until([&] { return done; });
    EXPECT_FALSE(ec);
    one(Op::release, Kind::exclusive, "invoice:2", {});

    ASSERT_FALSE(e.acquire(a, req("invoice:3", "a")).ec);
    m->take();
    EXPECT_EQ(e.force_release(b, "invoice:3"), 1u);
    one(Op::force_release, Kind::exclusive, "invoice:3", {});

    auto ls = e.acquire(a, req("report:7", "a", 10s, 0s, Kind::shared));
    ASSERT_FALSE(ls.ec);
    one(Op::acquire, Kind::shared, "report:7", {});
    auto up = e.acquire_with([&](Client::AcquireHandler h) { a.upgrade(ls.lease, 1s, h); });
    ASSERT_FALSE(up.ec) << up.ec.message();
    one(Op::acquire, Kind::exclusive, "report:7", {});

    done = false;
    b.lock_all({"set:b", "set:a"}, req("", "b"), [&](std::error_code x, LeaseSet) {
      ec = x;
      done = true;
    });
    e.run_until([&] { return done; });
    EXPECT_FALSE(ec) << ec.message();
    auto s = m->take();
    ASSERT_EQ(s.size(), 2u) << seed;
    EXPECT_EQ(s[0].resource, "set:a");  // in name order
    EXPECT_EQ(s[1].resource, "set:b");
  }
}

}  // namespace
}  // namespace lockwire::lock
