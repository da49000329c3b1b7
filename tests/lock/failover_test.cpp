// Leases and fencing tokens across the events that lose or move a Redis primary's data (issue
// #15), on real servers: a restart without persistence, a graceful SENTINEL FAILOVER in the
// middle of a hold, a crash failover that lost the last writes, and replica-acknowledged grants.
// Its own executable: the sentinel topology takes seconds to come up and a failover a few more,
// so ctest -j2 runs it beside the rest.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lock_fixture.hpp"
#include "redis_topology.hpp"

namespace lockwire::lock {
namespace {

using namespace std::chrono_literals;

// --- a single server ------------------------------------------------------------------------

using RestartTest = LockTest;

// The server restarts with an empty dataset (no RDB, no AOF) while nobody holds the lock: the
// fencing counter is gone. Tokens handed out before must still be below every later one, or a
// downstream store that saw the old ones would accept a stale holder (or refuse the new one).
TEST_F(RestartTest, TokensKeepIncreasingAfterARestartWithoutPersistence) {
  auto c = make_client();
  std::uint64_t before = 0;
  for (int i = 0; i < 3; ++i) {
    Acq a = acquire(*c, req("fenced", "w"));
    ASSERT_FALSE(a.ec) << a.ec.message();
    EXPECT_GT(a.lease.token(), before);
    before = a.lease.token();
    ASSERT_FALSE(release(*c, a.lease));
  }
  server_.restart();
  ASSERT_EQ(server_.cli({"EXISTS", "lockwire:{fenced}:fence"}), "0\n");  // the counter is gone
  Acq a = acquire(*c, req("fenced", "w", 10s, 5s));  // waits out the reconnect
  ASSERT_FALSE(a.ec) << a.ec.message() << " " << c->last_error();
  EXPECT_GT(a.lease.token(), before) << "token went back after the restart";
  ASSERT_FALSE(release(*c, a.lease));
}

// The same with the regression that takes tokens from the counter alone (lockwire before #15):
// the test above can fail, and does on that code.
TEST_F(RestartTest, TheCounterAloneRepeatsATokenAfterARestart) {
  lock::testing::Regressions broken;
  broken.counter_tokens = true;
  auto c = make_broken_client(broken, conn_options());
  Acq a1 = acquire(*c, req("fenced", "w"));
  ASSERT_FALSE(a1.ec) << a1.ec.message();
  ASSERT_FALSE(release(*c, a1.lease));
  server_.restart();
  Acq a2 = acquire(*c, req("fenced", "w", 10s, 5s));
  ASSERT_FALSE(a2.ec) << a2.ec.message();
  EXPECT_EQ(a2.lease.token(), a1.lease.token());  // both 1
  ASSERT_FALSE(release(*c, a2.lease));
}

// A seed list names a Cluster; two standalone servers would each grant the same lock, so a
// standalone server answering a seed list is refused, in words that say why.
TEST_F(RestartTest, SeedListOfStandaloneServersIsRefused) {
  loop::ConnectionOptions o;
  std::string url = "redis://127.0.0.1:";
  url.append(std::to_string(server_.port())).append(",127.0.0.1:1");
  ASSERT_FALSE(loop::parse_url(url, o));
  auto c = make_client({}, o);
  Acq a = acquire(*c, req("seeds", "w", 10s, 2s));
  EXPECT_EQ(a.ec, Errc::closed);
  EXPECT_NE(c->last_error().find("not a Redis Cluster node (HELLO mode 'standalone')"),
            std::string::npos)
      << c->last_error();
  EXPECT_EQ(server_.cli({"EXISTS", "lockwire:{seeds}"}), "0\n");
}

// ReplicaAcks::majority() on a single node: ROLE lists no replica, so nothing is waited for.
// The primary is asked once per connection (one ROLE on the first grant), never again.
TEST_F(RestartTest, MajorityOfNoReplicasWaitsForNone) {
  auto m_none = std::make_shared<CountingMetrics>();
  auto m_major = std::make_shared<CountingMetrics>();
  ClientOptions none;
  none.metrics = m_none;
  ClientOptions major;
  major.metrics = m_major;
  major.min_replicas = ReplicaAcks::majority();
  auto a = make_client(none, conn_options());
  auto b = make_client(major, conn_options());
  std::uint64_t base_none = 0, base_major = 0;
  for (int i = 0; i < 3; ++i) {
    base_none = m_none->requests.load();
    base_major = m_major->requests.load();
    Acq x = acquire(*a, req("solo-none", "w"));
    ASSERT_FALSE(x.ec) << x.ec.message() << " " << a->last_error();
    ASSERT_FALSE(release(*a, x.lease));
    Acq y = acquire(*b, req("solo-major", "w"));
    ASSERT_FALSE(y.ec) << y.ec.message() << " " << b->last_error();
    ASSERT_FALSE(release(*b, y.lease));
    const std::uint64_t extra = i == 0 ? 1 : 0;  // the first grant's ROLE
    EXPECT_EQ(m_major->requests.load() - base_major, m_none->requests.load() - base_none + extra)
        << "pair " << i;
  }
}

// --- a primary, a replica and three sentinels --------------------------------------------------

class FailoverTest : public LoopTest {
 protected:
  FailoverTest() : LoopTest(30s) {}

  loop::ConnectionOptions sentinel_options() {
    loop::ConnectionOptions o;
    std::string why;
    EXPECT_FALSE(loop::parse_url(topo_.url(), o, &why)) << why;
    o.reconnect.initial = 5ms;
    o.reconnect.max = 100ms;
    o.connect_timeout = 2s;
    return o;
  }
  std::unique_ptr<Client> make_client(ClientOptions co = {}, bool vouch = true) {
    loop::ConnectionOptions o = sentinel_options();
    o.sentinel->vouch = vouch;
    auto c = std::make_unique<Client>(loop_, std::move(o), std::move(co));
    c->start();
    return c;
  }
  // Waits until the sentinels name `port` as the primary.
  void wait_primary_is(std::uint16_t port, Nanos limit = 30s) {
    const loop::MonoTime until = loop_.now() + limit;
    while (topo_.reported_primary_port() != port) {
      ASSERT_LT(loop_.now(), until) << "the sentinels never promoted port " << port;
      sleep_loop(100ms);
    }
  }

  test::RedisSentinels topo_;
};

// One holder auto-renewing through SENTINEL FAILOVER, one contender waiting for the lock, both
// on one loop (one clock): the contender's grant must come after the holder's belief ended, and
// the holder must keep the lease (re-confirmed on the new primary) or be told it lost it.
TEST_F(FailoverTest, GracefulFailoverMidHoldNeverTwoHolders) {
  auto holder = make_client();
  auto contender = make_client();
  LockRequest hr = testing::request("job", "holder", 3s);
  hr.auto_renew = true;
  std::optional<loop::MonoTime> holder_lost;
  std::error_code lost_why;
  hr.on_lost = [&](std::error_code ec) {
    holder_lost = loop_.now();
    lost_why = ec;
  };
  Acq h = acquire(*holder, hr);
  ASSERT_FALSE(h.ec) << h.ec.message();
  const std::uint64_t t_holder = h.lease.token();

  std::optional<loop::MonoTime> contender_granted;
  Lease cl;
  std::error_code cec;
  bool cdone = false;
  contender->lock(testing::request("job", "contender", 3s, 25s), [&](std::error_code ec, Lease l) {
    cdone = true;
    cec = ec;
    if (!ec) contender_granted = loop_.now();
    cl = std::move(l);
  });
  ASSERT_EQ(topo_.sentinel(0).cli({"SENTINEL", "FAILOVER", topo_.master_name()}), "OK\n");
  // Hold through the failover and the old primary's demotion (~10 s), then release. With the
  // sentinels' vouch (default) the holder is told at the failover's start (the leader says
  // failover_in_progress) that its lease no longer counts; without it, it keeps the lease,
  // re-confirmed on the new primary. Either way the contender comes after the holder's end.
  sleep_loop(13s);
  if (contender_granted) {
    ASSERT_TRUE(holder_lost) << "the contender was granted while the holder held";
    ASSERT_LE(*holder_lost, *contender_granted) << "the contender was granted before the holder "
                                                << "was told: " << holder->last_error();
  }
  ASSERT_EQ(topo_.reported_primary_port(), topo_.replica().port());
  if (!holder_lost) {
    EXPECT_EQ(h.lease.state(), LeaseState::held);
    ASSERT_FALSE(release(*holder, h.lease));
  }
  const loop::MonoTime released = holder_lost.value_or(loop_.now());
  run_until([&] { return cdone; });
  ASSERT_FALSE(cec) << cec.message() << " " << contender->last_error();
  EXPECT_GE(*contender_granted, released);
  EXPECT_GT(cl.token(), t_holder);
  std::printf("holder %s; contender granted %lld ms after the holder's end, token %llu > %llu\n",
              holder_lost ? ("lost: " + lost_why.message()).c_str() : "kept its lease",
              static_cast<long long>(
                  std::chrono::duration_cast<std::chrono::milliseconds>(*contender_granted - released)
                      .count()),
              static_cast<unsigned long long>(cl.token()),
              static_cast<unsigned long long>(t_holder));
  // Granted seconds ago when the holder was told early: its 3 s lease may have run out.
  const std::error_code rel = release(*contender, cl);
  EXPECT_TRUE(!rel || rel == Errc::not_held) << rel.message();
}

// The replica is frozen (SIGSTOP) while a lease is granted and released on the primary, so the
// promoted replica never saw that token; then the primary is killed. After the crash failover
// the next token must still be higher than every token handed out before (issue #15: it was
// the same number).
TEST_F(FailoverTest, CrashFailoverThatLostTheLastTokenStillIssuesAHigherOne) {
  auto c = make_client();
  Acq a1 = acquire(*c, testing::request("ledger", "w", 5s));
  ASSERT_FALSE(a1.ec) << a1.ec.message();
  ASSERT_FALSE(release(*c, a1.lease));
  // Let it replicate, then freeze the replica and cut its link (so that nothing sits in its
  // socket buffer either), and hand out a token it will never see.
  ASSERT_EQ(topo_.primary().cli({"WAIT", "1", "2000"}), "1\n");
  topo_.replica().pause();
  ASSERT_EQ(topo_.primary().cli({"CLIENT", "KILL", "TYPE", "replica"}), "1\n");
  Acq a2 = acquire(*c, testing::request("ledger", "w", 5s));
  ASSERT_FALSE(a2.ec) << a2.ec.message();
  ASSERT_GT(a2.lease.token(), a1.lease.token());
  ASSERT_FALSE(release(*c, a2.lease));
  topo_.primary().stop();
  topo_.replica().resume();
  wait_primary_is(topo_.replica().port());
  ASSERT_EQ(topo_.replica().cli({"EXISTS", "lockwire:{ledger}"}), "0\n");
  Acq a3 = acquire(*c, testing::request("ledger", "w", 5s, 20s));
  ASSERT_FALSE(a3.ec) << a3.ec.message() << " " << c->last_error();
  EXPECT_GT(a3.lease.token(), a2.lease.token())
      << "a token handed out before the crash came back: " << a1.lease.token() << ", "
      << a2.lease.token() << ", then " << a3.lease.token();
  ASSERT_FALSE(release(*c, a3.lease));
}

// min_replicas: a grant is reported only once a replica has it; with the replica frozen the
// grant is withdrawn and the caller is told so, and a renewal that no replica acknowledged does
// not extend the lease.
TEST_F(FailoverTest, ReplicaAcknowledgedGrantsAndRenewals) {
  ClientOptions co;
  co.min_replicas = 1;
  co.replica_timeout = 200ms;
  // Without the sentinels' vouch, valid_until() is the lease's end alone (with it, it follows
  // the vouch, which moves on its own): what this test checks is that the end did not move.
  auto c = make_client(co, /*vouch=*/false);
  Acq ok = acquire(*c, testing::request("acked", "w", 5s));
  ASSERT_FALSE(ok.ec) << ok.ec.message() << " " << c->last_error();
  EXPECT_EQ(topo_.replica().cli({"HLEN", "lockwire:{acked}"}), "1\n");  // the replica has it

  topo_.replica().pause();
  const loop::MonoTime before = ok.lease.valid_until();
  EXPECT_EQ(renew(*c, ok.lease), Errc::not_replicated) << c->last_error();
  EXPECT_EQ(ok.lease.valid_until(), before);  // not extended
  EXPECT_NE(c->last_error().find("0 of 1"), std::string::npos) << c->last_error();
  ASSERT_FALSE(release(*c, ok.lease));

  Acq refused = acquire(*c, testing::request("acked", "w2", 5s));
  EXPECT_EQ(refused.ec, Errc::not_replicated) << refused.ec.message();
  EXPECT_NE(c->last_error().find("0 of 1"), std::string::npos) << c->last_error();
  EXPECT_EQ(topo_.primary().cli({"HLEN", "lockwire:{acked}"}), "0\n");  // withdrawn
  topo_.replica().resume();
}

// ReplicaAcks::majority() behind the sentinels: R is their count of the primary's replicas
// (num-slaves: 1 here), so every grant waits for that replica; the primary is never asked ROLE.
// With the replica frozen a one-attempt grant is withdrawn, in words that name the majority.
TEST_F(FailoverTest, MajorityCountsTheSentinelsReplicas) {
  auto m_count = std::make_shared<CountingMetrics>();
  auto m_major = std::make_shared<CountingMetrics>();
  ClientOptions count;
  count.metrics = m_count;
  count.min_replicas = ReplicaAcks::count(1);
  ClientOptions major;
  major.metrics = m_major;
  major.min_replicas = ReplicaAcks::majority();
  major.replica_timeout = 200ms;
  auto a = make_client(count);
  auto b = make_client(major);
  for (int i = 0; i < 2; ++i) {
    const std::uint64_t base_count = m_count->requests.load();
    const std::uint64_t base_major = m_major->requests.load();
    Acq x = acquire(*a, testing::request("maj-count", "w", 5s, 10s));  // waits for the vouch
    ASSERT_FALSE(x.ec) << x.ec.message() << " " << a->last_error();
    ASSERT_FALSE(release(*a, x.lease));
    Acq y = acquire(*b, testing::request("maj", "w", 5s, 10s));
    ASSERT_FALSE(y.ec) << y.ec.message() << " " << b->last_error();
    if (i == 0) {
      EXPECT_EQ(topo_.replica().cli({"HLEN", "lockwire:{maj}"}), "1\n");
    }
    ASSERT_FALSE(release(*b, y.lease));
    EXPECT_EQ(m_major->requests.load() - base_major, m_count->requests.load() - base_count)
        << "pair " << i << ": majority sent what count(1) did not (a ROLE?)";
  }
  topo_.replica().pause();
  Acq refused = acquire(*b, testing::request("maj", "w2", 5s, 0s));
  EXPECT_EQ(refused.ec, Errc::not_replicated) << refused.ec.message();
  EXPECT_NE(b->last_error().find("0 of 1 replicas"), std::string::npos) << b->last_error();
  EXPECT_NE(b->last_error().find("a majority of 1 replicas"), std::string::npos)
      << b->last_error();
  EXPECT_EQ(topo_.primary().cli({"HLEN", "lockwire:{maj}"}), "0\n");  // withdrawn
  topo_.replica().resume();
}

// Without sentinels R comes from the primary's ROLE: the same primary reached directly.
TEST_F(FailoverTest, MajorityWithoutSentinelsCountsRoleReplicas) {
  ClientOptions co;
  co.min_replicas = ReplicaAcks::majority();
  co.replica_timeout = 200ms;
  loop::ConnectionOptions o;
  ASSERT_FALSE(loop::parse_url("redis://127.0.0.1:" + std::to_string(topo_.primary().port()), o));
  auto c = std::make_unique<Client>(loop_, std::move(o), std::move(co));
  c->start();
  Acq ok = acquire(*c, testing::request("maj-role", "w", 5s, 5s));
  ASSERT_FALSE(ok.ec) << ok.ec.message() << " " << c->last_error();
  EXPECT_EQ(topo_.replica().cli({"HLEN", "lockwire:{maj-role}"}), "1\n");
  ASSERT_FALSE(release(*c, ok.lease));
  topo_.replica().pause();
  Acq refused = acquire(*c, testing::request("maj-role", "w2", 5s, 0s));
  EXPECT_EQ(refused.ec, Errc::not_replicated) << refused.ec.message();
  EXPECT_NE(c->last_error().find("a majority of 1 replicas"), std::string::npos)
      << c->last_error();
  topo_.replica().resume();
}

}  // namespace
}  // namespace lockwire::lock
