// The lock semantics of issue #20 on a real redis-server (scripting disabled): Client::upgrade
// (a sole shared lease becomes exclusive in place, with no window for a writer; other readers
// make it wait; two readers upgrading at once do not wait for each other) and persistent
// leases (ttl kForever).
#include <gtest/gtest.h>

#include <optional>

#include "lock_fixture.hpp"

namespace lockwire::lock {
namespace {

using namespace std::chrono_literals;

class LeaseSemanticsTest : public LockTest {
 protected:
  struct Pending {
    bool done = false;
    std::error_code ec;
    Lease lease;
    std::optional<loop::MonoTime> at;
  };
  void upgrade(Client& c, const Lease& shared, Nanos wait, Pending& p) {
    c.upgrade(shared, wait, [&p, this](std::error_code ec, Lease l) {
      p = {true, ec, std::move(l), loop_.now()};
    });
  }
  Acq upgrade_now(Client& c, const Lease& shared, Nanos wait) {
    Pending p;
    upgrade(c, shared, wait, p);
    run_until([&] { return p.done; });
    return {p.ec, p.lease};
  }
  bool eventually_loop(const std::function<bool()>& pred) {
    for (int i = 0; i < 100; ++i) {
      if (pred()) return true;
      sleep_loop(10ms);
    }
    return pred();
  }
  std::string holders(const std::string& r) {
    return server_.cli({"HKEYS", "lockwire:{" + r + "}"});
  }
};

// The only reader is promoted at once, with a higher token, while a writer waits: the writer
// is granted only after the upgraded lease's release, never in between.
TEST_F(LeaseSemanticsTest, SoleReaderIsPromotedInPlaceAheadOfAWaitingWriter) {
  auto a = make_client();
  auto b = make_client();
  auto s = acquire(*a, req("r", "u", 10s, 0s, Kind::shared));
  ASSERT_FALSE(s.ec) << s.ec.message();
  Pending writer;
  b->lock(req("r", "w", 10s, 10s), [&](std::error_code ec, Lease l) {
    writer = {true, ec, std::move(l), loop_.now()};
  });
  sleep_loop(100ms);  // the writer is waiting
  ASSERT_FALSE(writer.done);
  auto x = upgrade_now(*a, s.lease, 1s);
  ASSERT_FALSE(x.ec) << x.ec.message() << " " << a->last_error();
  EXPECT_EQ(x.lease.kind(), Kind::exclusive);
  EXPECT_GT(x.lease.token(), s.lease.token());
  EXPECT_EQ(s.lease.state(), LeaseState::released);
  EXPECT_TRUE(x.lease.held());
  // (The woken writer's claim may show for a round trip: it sees x:u and withdraws it.)
  const std::string hs = holders("r");
  EXPECT_NE(hs.find("x:u\n"), std::string::npos) << hs;
  EXPECT_EQ(hs.find("s:"), std::string::npos) << hs;
  EXPECT_EQ(server_.cli({"EXISTS", "lockwire:{r}:s:u", "lockwire:{r}:u"}), "0\n");
  const std::string pttl = server_.cli({"PTTL", "lockwire:{r}"});
  EXPECT_GT(std::stoll(pttl), 9000) << pttl;  // the exclusive lease's own TTL
  sleep_loop(200ms);
  EXPECT_FALSE(writer.done) << "a writer got in after the upgrade";
  EXPECT_FALSE(renew(*a, x.lease));
  EXPECT_EQ(release(*a, s.lease), Errc::not_held);  // the shared lease is over
  const loop::MonoTime released_at = loop_.now();
  EXPECT_FALSE(release(*a, x.lease));
  run_until([&] { return writer.done; });
  ASSERT_FALSE(writer.ec) << writer.ec.message();
  EXPECT_GE(*writer.at, released_at);
  EXPECT_GT(writer.lease.token(), x.lease.token());
  EXPECT_FALSE(release(*b, writer.lease));
}

// A writer of the same client queued on the resource does not hold the upgrade back (its own
// queue): the twin of BrokenReleaseThenLockLetsTheWriterIn.
TEST_F(LeaseSemanticsTest, AWriterOfTheSameClientDoesNotGetInEither) {
  auto a = make_client();
  auto s = acquire(*a, req("r", "u", 10s, 0s, Kind::shared));
  ASSERT_FALSE(s.ec);
  Pending writer;
  a->lock(req("r", "w", 10s, 10s), [&](std::error_code ec, Lease l) {
    writer = {true, ec, std::move(l), loop_.now()};
  });
  sleep_loop(100ms);
  auto x = upgrade_now(*a, s.lease, 5s);
  ASSERT_FALSE(x.ec) << x.ec.message() << " " << a->last_error();
  EXPECT_FALSE(writer.done) << "the writer got in before the upgrade";
  const loop::MonoTime released_at = loop_.now();
  EXPECT_FALSE(release(*a, x.lease));
  run_until([&] { return writer.done; });
  ASSERT_FALSE(writer.ec);
  EXPECT_GE(*writer.at, released_at);
  EXPECT_FALSE(release(*a, writer.lease));
}

// With another reader there, the upgrade waits like a writer; the other reader's release
// (a push) lets it go.
TEST_F(LeaseSemanticsTest, WaitsForTheOtherReadersToLeave) {
  auto a = make_client();
  auto b = make_client();
  auto s1 = acquire(*a, req("r", "s1", 10s, 0s, Kind::shared));
  auto s2 = acquire(*b, req("r", "s2", 10s, 0s, Kind::shared));
  ASSERT_FALSE(s1.ec);
  ASSERT_FALSE(s2.ec);
  EXPECT_EQ(upgrade_now(*a, s1.lease, 0s).ec, Errc::busy);  // one attempt: not alone
  EXPECT_TRUE(s1.lease.held());
  Pending up;
  upgrade(*a, s1.lease, 10s, up);
  sleep_loop(200ms);
  ASSERT_FALSE(up.done);
  EXPECT_EQ(server_.cli({"GET", "lockwire:{r}:u"}), "s1\n");  // the declared intent
  EXPECT_TRUE(s1.lease.held());
  // A new exclusive claimant is still refused meanwhile (the readers are there).
  EXPECT_EQ(acquire(*b, req("r", "w", 10s)).ec, Errc::busy);
  EXPECT_FALSE(release(*b, s2.lease));
  run_until([&] { return up.done; });
  ASSERT_FALSE(up.ec) << up.ec.message() << " " << a->last_error();
  EXPECT_GT(up.lease.token(), s2.lease.token());
  EXPECT_EQ(holders("r"), "x:s1\n");
  EXPECT_EQ(s1.lease.state(), LeaseState::released);
  EXPECT_FALSE(release(*a, up.lease));
}

// Two readers asking to upgrade: the second is refused at once (its shared lease kept) instead
// of both waiting for the other until their deadlines.
TEST_F(LeaseSemanticsTest, TwoReadersUpgradingDoNotDeadlock) {
  auto a = make_client();
  auto b = make_client();
  auto s1 = acquire(*a, req("r", "s1", 10s, 0s, Kind::shared));
  auto s2 = acquire(*b, req("r", "s2", 10s, 0s, Kind::shared));
  ASSERT_FALSE(s1.ec);
  ASSERT_FALSE(s2.ec);
  Pending first;
  upgrade(*a, s1.lease, 20s, first);
  sleep_loop(100ms);
  ASSERT_FALSE(first.done);
  auto second = upgrade_now(*b, s2.lease, 20s);
  EXPECT_EQ(second.ec, Errc::upgrade_conflict) << second.ec.message();
  EXPECT_NE(b->last_error().find("'s1' is upgrading"), std::string::npos) << b->last_error();
  EXPECT_FALSE(first.done);
  EXPECT_TRUE(s2.lease.held());
  EXPECT_FALSE(release(*b, s2.lease));
  run_until([&] { return first.done; });
  ASSERT_FALSE(first.ec) << first.ec.message();
  EXPECT_FALSE(release(*a, first.lease));
}

// The owner's shared lease may be held through another client (a process, the CLI): the
// upgrade by owner promotes it there; the old handle then finds it gone.
TEST_F(LeaseSemanticsTest, ByOwnerFromAnotherClient) {
  auto a = make_client();
  auto c = make_client();
  auto s = acquire(*a, req("r", "o", 10s, 0s, Kind::shared));
  ASSERT_FALSE(s.ec);
  Pending p;
  c->upgrade(req("r", "o", 5s, 1s), [&](std::error_code ec, Lease l) {
    p = {true, ec, std::move(l), loop_.now()};
  });
  run_until([&] { return p.done; });
  ASSERT_FALSE(p.ec) << p.ec.message() << " " << c->last_error();
  EXPECT_EQ(holders("r"), "x:o\n");
  EXPECT_EQ(renew(*a, s.lease), Errc::not_held);
  EXPECT_FALSE(release(*c, p.lease));
}

// Nothing to upgrade: not_held, and nothing is written; a wait that ends leaves the shared
// lease held and only an intent that lapses by itself.
TEST_F(LeaseSemanticsTest, NothingToUpgradeAndDeadlines) {
  auto a = make_client();
  auto b = make_client();
  Pending none;
  a->upgrade(req("r", "nobody", 5s, 1s), [&](std::error_code ec, Lease l) {
    none = {true, ec, std::move(l), loop_.now()};
  });
  run_until([&] { return none.done; });
  EXPECT_EQ(none.ec, Errc::not_held);
  EXPECT_EQ(server_.cli({"EXISTS", "lockwire:{r}", "lockwire:{r}:u"}), "0\n");
  auto s1 = acquire(*a, req("r", "s1", 10s, 0s, Kind::shared));
  auto s2 = acquire(*b, req("r", "s2", 10s, 0s, Kind::shared));
  ASSERT_FALSE(s1.ec);
  ASSERT_FALSE(s2.ec);
  EXPECT_EQ(upgrade_now(*a, s1.lease, 300ms).ec, Errc::timed_out);
  EXPECT_TRUE(s1.lease.held());
  const std::string pttl = server_.cli({"PTTL", "lockwire:{r}:u"});
  EXPECT_LE(std::stoll(pttl), 300) << pttl;  // lapses by the end of the wait it was for
  EXPECT_EQ(holders("r"), "s:s1\ns:s2\n");
  EXPECT_FALSE(release(*a, s1.lease));
  EXPECT_FALSE(release(*b, s2.lease));
}

// The twins of the simulator's broken strategies, on the real server: the checks above fail
// for them. release-then-lock lets the waiting writer in between the read and the write.
TEST_F(LeaseSemanticsTest, BrokenReleaseThenLockLetsTheWriterIn) {
  lock::testing::Regressions broken;
  broken.upgrade_by_release = true;
  auto a = make_broken_client(broken, conn_options());
  auto s = acquire(*a, req("r", "u", 10s, 0s, Kind::shared));
  ASSERT_FALSE(s.ec);
  // The writer waits through the same client, so the order is not left to timing: its queue is
  // served first once the resource is free (the in-place upgrade never frees it).
  auto writer = start_lock(*a, req("r", "w", 10s, 10s));
  sleep_loop(100ms);
  ASSERT_FALSE(writer->done);
  Pending up;
  upgrade(*a, s.lease, 5s, up);
  run_until([&] { return writer->done; });
  ASSERT_FALSE(writer->acq.ec);
  EXPECT_FALSE(up.done) << "the writer got in while the upgrade was still waiting";
  EXPECT_FALSE(release(*a, writer->acq.lease));
  run_until([&] { return up.done; });
  ASSERT_FALSE(up.ec);
  EXPECT_GT(up.lease.token(), writer->acq.lease.token());  // what c1 read is stale by now
  EXPECT_FALSE(release(*a, up.lease));
}

// Without the intent, two upgrading readers wait for each other until their deadlines.
TEST_F(LeaseSemanticsTest, BrokenWithoutTheIntentTwoUpgradersWaitOutTheirDeadlines) {
  lock::testing::Regressions broken;
  broken.upgrade_ignores_intent = true;
  auto a = make_broken_client(broken, conn_options());
  auto b = make_broken_client(broken, conn_options());
  auto s1 = acquire(*a, req("r", "s1", 10s, 0s, Kind::shared));
  auto s2 = acquire(*b, req("r", "s2", 10s, 0s, Kind::shared));
  ASSERT_FALSE(s1.ec);
  ASSERT_FALSE(s2.ec);
  Pending u1, u2;
  upgrade(*a, s1.lease, 600ms, u1);
  sleep_loop(50ms);
  upgrade(*b, s2.lease, 600ms, u2);
  run_until([&] { return u1.done && u2.done; });
  EXPECT_EQ(u1.ec, Errc::timed_out);
  EXPECT_EQ(u2.ec, Errc::timed_out);
  EXPECT_FALSE(release(*a, s1.lease));
  EXPECT_FALSE(release(*b, s2.lease));
}

// A persistent lease: no timers, a TTL no contender's acquire block shortens (its PEXPIRE .. NX
// is a no-op on a key with a TTL), ended by release (waking a waiter) or force-release (the
// holder is told).
TEST_F(LeaseSemanticsTest, PersistentLeaseOutlivesContendersAndEndsOnRelease) {
  auto a = make_client();
  auto b = make_client();
  bool lost = false;
  LockRequest pr = req("p", "keeper", kForever);
  pr.on_lost = [&](std::error_code) { lost = true; };
  auto p = acquire(*a, pr);
  ASSERT_FALSE(p.ec) << p.ec.message();
  EXPECT_EQ(p.lease.ttl(), kForever);
  EXPECT_GT(p.lease.valid_until() - loop_.now(), Nanos(std::chrono::hours(24 * 365 * 40)));
  EXPECT_EQ(acquire(*b, req("p", "c", 200ms, 300ms)).ec, Errc::timed_out);
  EXPECT_GT(std::stoll(server_.cli({"PTTL", "lockwire:{p}"})), 40LL * 365 * 24 * 3600 * 1000);
  sleep_loop(300ms);  // past the contender's TTL: still ours
  EXPECT_TRUE(p.lease.held());
  EXPECT_FALSE(renew(*a, p.lease));
  auto waiter = start_lock(*b, req("p", "w", 5s, 10s));
  sleep_loop(100ms);
  EXPECT_FALSE(waiter->done);
  EXPECT_FALSE(release(*a, p.lease));
  run_until([&] { return waiter->done; });
  ASSERT_FALSE(waiter->acq.ec);
  EXPECT_GT(waiter->acq.lease.token(), p.lease.token());
  EXPECT_FALSE(release(*b, waiter->acq.lease));
  // force-release ends one too, and its holder is told.
  auto q = acquire(*a, pr);
  ASSERT_FALSE(q.ec);
  EXPECT_EQ(force_release(*b, "p"), 1u);
  run_until([&] { return lost; });
  EXPECT_EQ(q.lease.state(), LeaseState::lost);
  // A TTL of 0 (or below 1 ms) is still invalid: forever only when asked for.
  EXPECT_EQ(acquire(*a, req("p", "z", 0s)).ec, Errc::invalid_argument);
}

// The twin of the simulator's persist-forever: a holder set with no TTL takes a contender's.
TEST_F(LeaseSemanticsTest, BrokenPersistLetsAContenderShortenIt) {
  lock::testing::Regressions broken;
  broken.persist_forever = true;
  auto a = make_broken_client(broken, conn_options());
  auto b = make_client();
  auto p = acquire(*a, req("p", "keeper", kForever));
  ASSERT_FALSE(p.ec);
  ASSERT_TRUE(eventually_loop([&] { return server_.cli({"PTTL", "lockwire:{p}"}) == "-1\n"; }));
  // A 1 s TTL, not shorter: on a loaded machine (the server matrix runs suites side by side) a
  // 200 ms one had expired before PTTL was read.
  EXPECT_EQ(acquire(*b, req("p", "c", 1s, 100ms)).ec, Errc::timed_out);
  const long long pttl = std::stoll(server_.cli({"PTTL", "lockwire:{p}"}));
  EXPECT_GT(pttl, 0);
  EXPECT_LE(pttl, 1000) << "the contender's TTL is now the persistent lease's";
  sleep_loop(1200ms);
  EXPECT_EQ(server_.cli({"EXISTS", "lockwire:{p}"}), "0\n");  // gone, while its holder...
  EXPECT_TRUE(p.lease.held());                              // ... still counts on it
}

// A counting semaphore: at most `permits` holders, each with its own lease; a release (a push)
// or a holder's expiry lets the next one in; a fencing token per grant.
TEST_F(LeaseSemanticsTest, SemaphoreGrantsAtMostItsPermits) {
  auto a = make_client();
  auto b = make_client();
  auto c = make_client();
  auto sem = [](std::string owner, Nanos ttl, Nanos wait) {
    LockRequest r = req("s", std::move(owner), ttl, wait, Kind::shared);
    r.permits = 2;
    return r;
  };
  auto p1 = acquire(*a, sem("p1", 10s, 0s));
  auto p2 = acquire(*b, sem("p2", 300ms, 0s));  // not renewed: its lease ends at 300 ms
  ASSERT_FALSE(p1.ec) << p1.ec.message();
  ASSERT_FALSE(p2.ec) << p2.ec.message();
  EXPECT_GT(p2.lease.token(), p1.lease.token());
  EXPECT_EQ(acquire(*c, sem("p3", 10s, 0s)).ec, Errc::busy);  // both permits taken
  EXPECT_EQ(acquire(*c, req("s", "w", 10s)).ec, Errc::busy);  // holders exclude writers
  // p2's lease runs out: its field is stale, and the waiter cleans it and gets the permit.
  auto p3 = acquire(*c, sem("p3", 10s, 5s));
  ASSERT_FALSE(p3.ec) << p3.ec.message() << " " << c->last_error();
  EXPECT_EQ(p2.lease.state(), LeaseState::lost);
  EXPECT_GT(p3.lease.token(), p2.lease.token());
  auto p4 = start_lock(*b, sem("p4", 10s, 10s));
  sleep_loop(100ms);
  EXPECT_FALSE(p4->done);
  EXPECT_FALSE(release(*a, p1.lease));  // wakes p4 (the holder set changed)
  run_until([&] { return p4->done; });
  ASSERT_FALSE(p4->acq.ec);
  EXPECT_FALSE(release(*c, p3.lease));
  EXPECT_FALSE(release(*b, p4->acq.lease));
  LockRequest bad = req("s", "x", 10s);
  bad.permits = 2;  // a semaphore is shared
  EXPECT_EQ(acquire(*a, bad).ec, Errc::invalid_argument);
}

// Eight clients take turns on 3 permits, all at once: never a fourth holder.
TEST_F(LeaseSemanticsTest, SemaphoreUnderContentionNeverOverGrants) {
  constexpr int kClients = 8, kRounds = 5, kPermits = 3;
  std::vector<std::unique_ptr<Client>> cs;
  for (int i = 0; i < kClients; ++i) cs.push_back(make_client());
  int holding = 0, most = 0, grants = 0, failures = 0;
  std::vector<int> left(kClients, kRounds);
  std::function<void(int)> go = [&](int i) {
    LockRequest r = req("s", testing::numbered("c", i), 5s, 10s, Kind::shared);
    r.permits = kPermits;
    cs[static_cast<std::size_t>(i)]->lock(std::move(r), [&, i](std::error_code ec, Lease l) {
      if (ec) {
        ++failures;
        return;
      }
      ++grants;
      most = std::max(most, ++holding);
      auto t = std::make_shared<std::unique_ptr<loop::Timer>>();
      *t = loop_.make_timer([&, i, l, t] {
        cs[static_cast<std::size_t>(i)]->release(l, [&, i, t](std::error_code) {
          --holding;
          t->reset();
          if (--left[static_cast<std::size_t>(i)] > 0) go(i);
        });
      });
      (*t)->start(5ms);
    });
  };
  for (int i = 0; i < kClients; ++i) go(i);
  run_until([&] { return grants + failures == kClients * kRounds && holding == 0; }, 60s);
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(most, kPermits);  // every permit was used, never one more
}

// The twin of semaphore-unwatched: two requests for the last permit both get it.
TEST_F(LeaseSemanticsTest, BrokenUnwatchedSemaphoreOverGrants) {
  lock::testing::Regressions broken;
  broken.semaphore_unwatched = true;
  auto a = make_client();
  auto b = make_broken_client(broken, conn_options());
  auto c = make_broken_client(broken, conn_options());
  auto sem = [](std::string owner) {
    LockRequest r = req("s", std::move(owner), 10s, 1s, Kind::shared);
    r.permits = 2;
    return r;
  };
  ASSERT_FALSE(acquire(*a, sem("p1")).ec);
  auto pb = start_lock(*b, sem("p2"));
  auto pc = start_lock(*c, sem("p3"));
  run_until([&] { return pb->done && pc->done; });
  EXPECT_FALSE(pb->acq.ec);
  EXPECT_FALSE(pc->acq.ec);
  EXPECT_EQ(server_.cli({"HLEN", "lockwire:{s}"}), "3\n") << "three holders of two permits";
}

// Several resources, all or nothing: a refusal releases what was taken before the answer; in
// name order, so two callers asking for the same set in opposite orders never deadlock.
TEST_F(LeaseSemanticsTest, LockAllTakesEveryResourceOrNone) {
  auto a = make_client();
  auto b = make_client();
  auto set_of = [&](Client& c, std::vector<std::string> rs, Nanos wait, const std::string& owner) {
    std::pair<std::error_code, LeaseSet> out;
    bool done = false;
    c.lock_all(std::move(rs), req("", owner, 10s, wait), [&](std::error_code ec, LeaseSet s) {
      out = {ec, std::move(s)};
      done = true;
    });
    run_until([&] { return done; });
    return out;
  };
  auto hb = acquire(*a, req("b", "holder", 10s));
  ASSERT_FALSE(hb.ec);
  auto failed = set_of(*b, {"c", "a", "b"}, 300ms, "multi");
  EXPECT_EQ(failed.first, Errc::timed_out);
  EXPECT_TRUE(failed.second.leases.empty());
  // a was taken first (name order) and given back before the answer: nothing partial is left.
  EXPECT_EQ(server_.cli({"EXISTS", "lockwire:{a}", "lockwire:{c}"}), "0\n");
  EXPECT_FALSE(release(*a, hb.lease));
  auto ok = set_of(*b, {"c", "a", "b", "a"}, 1s, "multi");
  ASSERT_FALSE(ok.first) << ok.first.message() << " " << b->last_error();
  ASSERT_EQ(ok.second.leases.size(), 3u);  // duplicates folded
  EXPECT_EQ(ok.second.leases[0].resource(), "a");
  EXPECT_EQ(ok.second.leases[2].resource(), "c");
  EXPECT_TRUE(ok.second.held());
  EXPECT_EQ(server_.cli({"HKEYS", "lockwire:{b}"}), "x:multi\n");
  bool released = false;
  b->release(ok.second, [&](std::error_code ec) {
    EXPECT_FALSE(ec);
    released = true;
  });
  run_until([&] { return released; });
  EXPECT_EQ(server_.cli({"EXISTS", "lockwire:{a}", "lockwire:{b}", "lockwire:{c}"}), "0\n");
  EXPECT_EQ(set_of(*b, {}, 0s, "x").first, Errc::invalid_argument);
}

TEST_F(LeaseSemanticsTest, LockAllInOppositeOrdersNeverDeadlocks) {
  auto a = make_client();
  auto b = make_client();
  int grants = 0, failures = 0;
  std::function<void(Client&, std::vector<std::string>, std::string, int)> go =
      [&](Client& c, std::vector<std::string> rs, std::string owner, int left) {
        c.lock_all(rs, req("", owner, 5s, 10s), [&, rs, owner, left](std::error_code ec, LeaseSet s) {
          if (ec) {
            ++failures;
            return;
          }
          ++grants;
          c.release(s, [&, rs, owner, left](std::error_code) {
            if (left > 1) go(c, rs, owner, left - 1);
          });
        });
      };
  go(*a, {"x", "y"}, "one", 20);
  go(*b, {"y", "x"}, "two", 20);
  run_until([&] { return grants + failures == 40; }, 30s);
  EXPECT_EQ(failures, 0);
  sleep_loop(50ms);  // the last releases
}

// The twin of the simulator's lock-all-no-rollback: a failed set leaves what it took.
TEST_F(LeaseSemanticsTest, BrokenLockAllWithoutRollbackLeavesAPartialSet) {
  lock::testing::Regressions broken;
  broken.lock_all_no_rollback = true;
  auto a = make_client();
  auto b = make_broken_client(broken, conn_options());
  auto hb = acquire(*a, req("b", "holder", 10s));
  ASSERT_FALSE(hb.ec);
  bool done = false;
  std::error_code ec;
  b->lock_all({"a", "b"}, req("", "multi", 10s, 200ms), [&](std::error_code e, LeaseSet) {
    ec = e;
    done = true;
  });
  run_until([&] { return done; });
  EXPECT_EQ(ec, Errc::timed_out);
  EXPECT_EQ(server_.cli({"HKEYS", "lockwire:{a}"}), "x:multi\n") << "a stays, held by nobody";
}

// Fair order: grants follow arrival at the server; a fresh attempt never jumps a live waiter
// (deterministic: the fresh attempt is sent by the holder's own client right after its
// release, so it reaches the server before any waiter is woken).
TEST_F(LeaseSemanticsTest, FairOrderFollowsArrivalAndFreshAttemptsDoNotJump) {
  for (const bool fair : {false, true}) {
    SCOPED_TRACE(fair ? "fair" : "default");
    const std::string r = fair ? "fair" : "unfair";
    auto h = make_client();
    std::vector<std::unique_ptr<Client>> ws;
    for (int i = 0; i < 3; ++i) ws.push_back(make_client());
    LockRequest hr = req(r, "holder", 10s);
    hr.fair = fair;
    auto held = acquire(*h, hr);
    ASSERT_FALSE(held.ec);
    std::vector<std::string> order;
    int done = 0;
    for (int i = 0; i < 3; ++i) {
      LockRequest wr = req(r, testing::numbered("w", i), 10s, 10s);
      wr.fair = fair;
      Client* c = ws[static_cast<std::size_t>(i)].get();
      c->lock(wr, [&, c, i](std::error_code ec, Lease l) {
        ASSERT_FALSE(ec) << ec.message();
        order.push_back(testing::numbered("w", i));
        auto t = std::make_shared<std::unique_ptr<loop::Timer>>();
        *t = loop_.make_timer([&, c, l, t] {
          c->release(l, [&, t](std::error_code) {
            ++done;
            t->reset();
          });
        });
        (*t)->start(30ms);
      });
      sleep_loop(50ms);  // arrival order w0, w1, w2
    }
    Pending fresh;
    // The release and the fresh attempt leave in one write: the server runs the attempt right
    // after the HDEL, before any waiter can have been woken.
    h->release(held.lease, [](std::error_code ec) { EXPECT_FALSE(ec); });
    LockRequest fr = req(r, "fresh", 10s);
    fr.fair = fair;
    bool fresh_released = false;
    h->lock(fr, [&](std::error_code ec, Lease l) {
      fresh = {true, ec, l, {}};
      if (ec) {
        fresh_released = true;
        return;
      }
      h->release(l, [&](std::error_code) { fresh_released = true; });  // let the waiters go
    });
    run_until([&] { return fresh.done && fresh_released && done == 3; });
    if (fair) {
      EXPECT_EQ(fresh.ec, Errc::busy) << "a fresh attempt jumped the queue";
      EXPECT_EQ(order, (std::vector<std::string>{"w0", "w1", "w2"}));
    } else {
      EXPECT_FALSE(fresh.ec) << "the default lets a free lock go to whoever asks first";
    }
  }
}

// A fair waiter that vanished (its process gone, its doorbell left) holds the queue up for at
// most its doorbell's TTL (2 s): the next in line drops it.
TEST_F(LeaseSemanticsTest, FairQueuePassesAVanishedHead) {
  auto h = make_client();
  auto gone = std::make_unique<Client>(loop_, conn_options(), ClientOptions{});
  gone->start();
  auto next = make_client();
  LockRequest hr = req("f", "holder", 10s);
  hr.fair = true;
  auto held = acquire(*h, hr);
  ASSERT_FALSE(held.ec);
  LockRequest g = req("f", "gone", 10s, 20s);
  g.fair = true;
  bool gone_answered = false;
  gone->lock(g, [&](std::error_code, Lease) { gone_answered = true; });
  sleep_loop(100ms);
  Pending n;
  LockRequest nr = req("f", "next", 10s, 20s);
  nr.fair = true;
  next->lock(nr, [&](std::error_code ec, Lease l) { n = {true, ec, std::move(l), loop_.now()}; });
  sleep_loop(100ms);
  gone.reset();  // its process ends: no leave is sent, its doorbell stays until its TTL
  EXPECT_TRUE(gone_answered);  // (closed)
  const loop::MonoTime released_at = loop_.now();
  EXPECT_FALSE(release(*h, held.lease));
  run_until([&] { return n.done; }, 10s);
  ASSERT_FALSE(n.ec) << n.ec.message() << " " << next->last_error();
  EXPECT_LT(*n.at - released_at, 3s);  // bounded by the vanished head's doorbell (2 s)
  EXPECT_FALSE(release(*next, n.lease));
}

}  // namespace
}  // namespace lockwire::lock
