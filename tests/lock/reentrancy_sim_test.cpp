// client.hpp's promise: a callback never runs inside the call that started it — on a single
// server, behind sentinels and on a Redis Cluster whose slot map the client already knows
// (issue #29: on a Cluster, close() then lock() answered inside lock()). Every entry point that
// can fail early is called after close(), and with arguments it refuses, on each topology.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lockwire/lock/client.hpp"
#include "lockwire/loop/cluster_map.hpp"
#include "lockwire/sim/sim_cluster.hpp"
#include "lockwire/sim/sim_redis.hpp"
#include "lockwire/sim/sim_sentinel.hpp"
#include "lockwire/sim/world.hpp"
#include "sync_calls.hpp"

namespace lockwire::lock {
namespace {

using namespace std::chrono_literals;

enum class Topology { single, sentinels, cluster };

std::string name_of(Topology t) {
  switch (t) {
    case Topology::single:
      return "single";
    case Topology::sentinels:
      return "sentinels";
    case Topology::cluster:
      return "cluster";
  }
  return "?";
}

LockRequest req(std::string resource, Nanos wait = 0s) {
  return testing::request(std::move(resource), "owner", 10s, wait, Kind::exclusive);
}

struct Env {
  explicit Env(Topology t) : topology(t) {
    loop::ConnectionOptions o;
    if (t == Topology::cluster) {
      std::vector<sim::Node*> nodes;
      for (int i = 1; i <= 6; ++i) nodes.push_back(&world.add_node(std::string("n").append(std::to_string(i))));
      cluster = std::make_unique<sim::SimCluster>(world, nodes);
      EXPECT_FALSE(loop::parse_url(cluster->url(), o));
    } else {
      servers.push_back(std::make_unique<sim::SimRedis>(world, world.add_node("redis-a")));
      o.endpoint = servers[0]->endpoint();
      if (t == Topology::sentinels) {
        servers.push_back(std::make_unique<sim::SimRedis>(world, world.add_node("redis-b")));
        servers[0]->add_replica(*servers[1], 1ms);
        std::vector<sim::Node*> nodes;
        for (const char* n : {"s1", "s2", "s3"}) nodes.push_back(&world.add_node(n));
        sentinels = std::make_unique<sim::SimSentinels>(
            world, nodes, *servers[0], std::vector<sim::SimRedis*>{servers[1].get()});
        EXPECT_FALSE(loop::parse_url(sentinels->url(), o));
        if (o.sentinel) o.sentinel->vouch = false;  // not what this test is about
      }
    }
    world.run_for(500ms);
    o.connect_timeout = 1s;
    o.reconnect.initial = 5ms;
    o.reconnect.max = 50ms;
    ClientOptions co;
    co.cluster_vouch = false;  // the simulated cluster does not model what the vouch reads
    client = std::make_unique<Client>(world.add_node("c1").loop(), o, co);
    client->start();
  }

  // A first lock on r1, so that the client has connected (and read the slot map): true once
  // granted within 10 s.
  bool granted_first() {
    bool granted = false;
    std::error_code got;
    client->lock(req("r1", 5s), [&](std::error_code ec, Lease) {
      got = ec;
      granted = !ec;
    });
    world.run_until([&] { return granted || got; }, world.now() + 10s);
    return granted;
  }

  // Runs `call`, which starts one operation whose handler calls `answer`; fails if the answer
  // comes inside the call, or never.
  void expect_later(const std::string& what,
                    const std::function<void(std::function<void(std::error_code)>)>& call,
                    std::error_code want) {
    bool inside = true, answered = false, answered_inside = false;
    std::error_code got;
    call([&](std::error_code ec) {
      answered_inside = inside;
      answered = true;
      got = ec;
    });
    inside = false;
    EXPECT_FALSE(answered_inside) << name_of(topology) << ": " << what << " answered inside";
    world.run_until([&] { return answered; }, world.now() + 5s);
    EXPECT_TRUE(answered) << name_of(topology) << ": " << what << " never answered";
    EXPECT_EQ(got, want) << name_of(topology) << ": " << what << ": " << got.message();
  }

  Topology topology;
  sim::World world{7};
  std::vector<std::unique_ptr<sim::SimRedis>> servers;
  std::unique_ptr<sim::SimCluster> cluster;
  std::unique_ptr<sim::SimSentinels> sentinels;
  std::unique_ptr<Client> client;  // destroyed before the world
};

// Every entry point with a handler, on `c`, answering `done(ec)`; `held`: a lease of c's.
void each_entry(Env& e, const Lease& held, std::error_code want, bool closed) {
  Client& c = *e.client;
  using Done = std::function<void(std::error_code)>;
  e.expect_later("lock", [&](Done d) { c.lock(req("r2", 1s), [d](auto ec, Lease) { d(ec); }); },
                 want);
  e.expect_later("upgrade(request)",
                 [&](Done d) { c.upgrade(req("r2", 1s), [d](auto ec, Lease) { d(ec); }); },
                 want);
  e.expect_later("lock_all",
                 [&](Done d) {
                   c.lock_all({"r3", "r4"}, req("", 1s), [d](auto ec, LeaseSet) { d(ec); });
                 },
                 want);
  e.expect_later("release(owner)",
                 [&](Done d) { c.release("r2", "owner", std::nullopt, d); }, want);
  e.expect_later("renew(owner)",
                 [&](Done d) { c.renew("r2", "owner", std::nullopt, 10s, d); }, want);
  e.expect_later("force_release",
                 [&](Done d) { c.force_release("r2", [d](auto ec, std::size_t) { d(ec); }); },
                 want);
  e.expect_later("inspect",
                 [&](Done d) { c.inspect("r2", [d](auto ec, const LockInfo&) { d(ec); }); },
                 want);
  if (!closed) return;
  e.expect_later("upgrade(lease)",
                 [&](Done d) { c.upgrade(held, 1s, [d](auto ec, Lease) { d(ec); }); }, want);
  e.expect_later("renew(lease)", [&](Done d) { c.renew(held, d); }, want);
  e.expect_later("release(lease)", [&](Done d) { c.release(held, d); }, want);
  e.expect_later("release(set)", [&](Done d) { c.release(LeaseSet{{held}}, d); }, want);
}

class Reentrancy : public ::testing::TestWithParam<Topology> {};

TEST_P(Reentrancy, CloseThenEveryCallAnswersLater) {
  Env e(GetParam());
  // A grant first: the client knows its server (and on a Cluster, the slot map).
  bool granted = false;
  Lease held;
  LockRequest r = req("r1", 5s);
  r.kind = Kind::shared;
  e.client->lock(r, [&](std::error_code ec, Lease l) {
    ASSERT_FALSE(ec) << ec.message() << " " << e.client->last_error();
    held = std::move(l);
    granted = true;
  });
  e.world.run_until([&] { return granted; }, e.world.now() + 10s);
  ASSERT_TRUE(granted);
  e.client->close();
  each_entry(e, held, Errc::closed, true);
}

TEST_P(Reentrancy, RefusedArgumentsAnswerLater) {
  Env e(GetParam());
  ASSERT_TRUE(e.granted_first()) << "the first lock was never granted";
  using Done = std::function<void(std::error_code)>;
  Client& c = *e.client;
  LockRequest bad = req("", 1s);
  e.expect_later("lock(invalid)", [&](Done d) { c.lock(bad, [d](auto ec, Lease) { d(ec); }); },
                 Errc::invalid_argument);
  e.expect_later("upgrade(invalid)",
                 [&](Done d) { c.upgrade(bad, [d](auto ec, Lease) { d(ec); }); },
                 Errc::invalid_argument);
  e.expect_later("lock_all(empty)",
                 [&](Done d) { c.lock_all({}, req("", 1s), [d](auto ec, LeaseSet) { d(ec); }); },
                 Errc::invalid_argument);
  e.expect_later("release(empty lease)", [&](Done d) { c.release(Lease{}, d); },
                 Errc::invalid_argument);
  e.expect_later("renew(empty lease)", [&](Done d) { c.renew(Lease{}, d); },
                 Errc::invalid_argument);
  e.expect_later("release(owner, invalid)",
                 [&](Done d) { c.release("", "owner", std::nullopt, d); }, Errc::invalid_argument);
  e.expect_later("force_release(invalid)",
                 [&](Done d) { c.force_release("", [d](auto ec, std::size_t) { d(ec); }); },
                 Errc::invalid_argument);
  e.expect_later("inspect(invalid)",
                 [&](Done d) { c.inspect("", [d](auto ec, const LockInfo&) { d(ec); }); },
                 Errc::invalid_argument);
}

// Errors as values (issue #29): on a Cluster, operations in flight at once on different shards
// each read their own failure's words in their handler (Client::last_error), whatever another
// shard or call said meanwhile — a request refused before anything is sent included.
TEST(ClusterWords, EachFailureInFlightGetsItsOwnWords) {
  Env e(Topology::cluster);
  ASSERT_TRUE(e.granted_first()) << "the first lock was never granted";
  // Two resources on two different primaries: one full (OOM), one loading.
  auto owner_of = [&](const std::string& r) {
    return e.cluster->owner(loop::cluster::key_slot("lockwire:{" + r + "}"));
  };
  std::string full = "a", loading;
  for (int i = 0; loading.empty() && i < 100; ++i) {
    std::string r = testing::numbered("b", i);
    if (owner_of(r) != owner_of(full)) loading = r;
  }
  ASSERT_FALSE(loading.empty());
  e.cluster->server(owner_of(full)).set_maxmemory(1);
  e.cluster->server(owner_of(loading)).set_loading(true);
  struct Seen {
    bool done = false;
    std::error_code ec;
    std::string words;
  };
  Seen invalid, oom, busy;
  Client& c = *e.client;
  auto note = [&c](Seen& s) {
    return [&c, &s](std::error_code ec) {
      s.done = true;
      s.ec = ec;
      s.words = c.last_error();
    };
  };
  c.lock(req(full), [f = note(oom)](std::error_code ec, Lease) { f(ec); });
  c.inspect(loading, [f = note(busy)](std::error_code ec, const LockInfo&) { f(ec); });
  c.lock(req(""), [f = note(invalid)](std::error_code ec, Lease) { f(ec); });
  e.world.run_until([&] { return invalid.done && oom.done && busy.done; }, e.world.now() + 5s);
  ASSERT_TRUE(invalid.done && oom.done && busy.done);
  EXPECT_EQ(invalid.ec, Errc::invalid_argument);
  EXPECT_NE(invalid.words.find("resource is empty"), std::string::npos) << invalid.words;
  EXPECT_EQ(oom.ec, Errc::server_refused);
  EXPECT_NE(oom.words.find(full + ": OOM"), std::string::npos) << oom.words;
  EXPECT_EQ(busy.ec, Errc::server_unavailable);
  EXPECT_NE(busy.words.find("LOADING"), std::string::npos) << busy.words;
}

INSTANTIATE_TEST_SUITE_P(Topologies, Reentrancy,
                         ::testing::Values(Topology::single, Topology::sentinels,
                                           Topology::cluster),
                         [](const auto& info) { return name_of(info.param); });

}  // namespace
}  // namespace lockwire::lock
