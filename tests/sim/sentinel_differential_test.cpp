// Differential suite for the simulated Sentinel (sim_sentinel.hpp): the same commands go to a
// real redis-server 7.0.15 --sentinel (tests/support RedisSentinels: a primary, a replica, three
// sentinels, quorum 2, down-after 1 s, failover-timeout 5 s) and to SimSentinels configured
// alike; every reply lockwire reads is compared byte for byte after masking what depends on the
// run and nothing else:
//   - hosts (127.0.0.1 / the simulated node names) and ports (free ports / 6379, 6380), in bulk
//     strings and in the +switch-master payload's words;
//   - SENTINEL MASTER's run id and its ages in ms (last-ping-sent, last-ok-ping-reply,
//     last-ping-reply, info-refresh, role-reported-time) and link-pending-commands (0 or 1,
//     whether a PING is in flight at that instant); SENTINEL MYID (a random id);
//   - HELLO's and CLIENT ID's client id.
// Field names, their order, flags, config-epoch, quorum and the other settings are compared.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "differential.hpp"
#include "lockwire/sim/sim_sentinel.hpp"
#include "raw_client.hpp"
#include "redis_topology.hpp"

namespace lockwire::sim::test {
namespace {

using namespace std::chrono_literals;
using Subs = std::map<std::string, std::string>;

const std::set<std::string> kMasked = {"runid",           "last-ping-sent",
                                       "last-ok-ping-reply", "last-ping-reply",
                                       "info-refresh",    "role-reported-time",
                                       "link-pending-commands"};

std::string subst_words(const std::string& v, const Subs& subs) {
  std::string out, word;
  auto flush = [&] {
    auto it = subs.find(word);
    out += it == subs.end() ? word : it->second;
    word.clear();
  };
  for (char ch : v) {
    if (ch == ' ' || ch == ':') {  // words, and the halves of +promoted-slave's "ip:port"
      flush();
      out += ch;
    } else {
      word += ch;
    }
  }
  flush();
  return out;
}

// Re-encodes a frame with the masks above applied (bulk lengths recomputed).
std::string mask(const std::string& frame, const Subs& subs) {
  static const std::regex hex40("^[0-9a-f]{40}$");
  std::string out, key;
  std::size_t i = 0;
  while (i < frame.size()) {
    const std::size_t nl = frame.find("\r\n", i);
    if (nl == std::string::npos) return out + frame.substr(i);
    const std::string line = frame.substr(i, nl - i);
    i = nl + 2;
    if (line.size() > 1 && line[0] == '$' && line != "$-1") {
      const std::size_t n = std::stoul(line.substr(1));
      std::string v = frame.substr(i, n);
      i += n + 2;
      if (kMasked.count(key) != 0 || std::regex_match(v, hex40)) {
        v = "<masked>";
      } else {
        v = subst_words(v, subs);
      }
      key = v;
      out += "$" + std::to_string(v.size()) + "\r\n" + v + "\r\n";
    } else if (line[0] == ':' && key == "id") {
      out += ":<id>\r\n";
    } else {
      out += line + "\r\n";
    }
  }
  return out;
}

// The same conversation with a real sentinel and a simulated one.
struct Pair {
  std::unique_ptr<TcpConn> real;
  std::unique_ptr<Raw> model;
};

class SentinelDiff : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // down-after 1 s, as the simulated sentinels it is compared with.
    real_ = std::make_unique<lockwire::test::RedisSentinels>("mymaster", 3,
                                                             std::chrono::milliseconds(1000));
  }
  static void TearDownTestSuite() { real_.reset(); }

  void SetUp() override {
    SimRedisOptions ro;
    ro.port = 6380;
    b_ = std::make_unique<SimRedis>(w_, w_.add_node("redis-b"), ro);
    a_.add_replica(*b_, 1ms);
    std::vector<Node*> nodes;
    for (const char* n : {"s1", "s2", "s3"}) nodes.push_back(&w_.add_node(n));
    model_ = std::make_unique<SimSentinels>(w_, nodes, a_, std::vector<SimRedis*>{b_.get()});
    w_.run_for(1500ms);
    real_subs_ = {{"127.0.0.1", "<host>"},
                  {std::to_string(real_->primary().port()), "<primary-port>"},
                  {std::to_string(real_->replica().port()), "<replica-port>"}};
    model_subs_ = {{"redis-a", "<host>"},
                   {"redis-b", "<host>"},
                   {"6379", "<primary-port>"},
                   {"6380", "<replica-port>"}};
  }

  Pair open_sentinel(std::size_t i) {
    Pair p;
    p.real = std::make_unique<TcpConn>(real_->sentinel(i).port());
    p.model = std::make_unique<Raw>(w_, cli_, model_->server(i).endpoint());
    return p;
  }
  Pair open_primary() {
    Pair p;
    p.real = std::make_unique<TcpConn>(real_->primary().port());
    p.model = std::make_unique<Raw>(w_, cli_, a_.endpoint());
    return p;
  }

  // Sends each command on both sides; every reply frame must match after masking.
  void converse(Pair& p, const std::vector<std::vector<std::string>>& cmds) {
    for (const auto& c : cmds) {
      std::string what;
      for (const auto& x : c) what += x + " ";
      p.real->send(encode_command(c));
      const auto got = p.real->read_frames(1, false, 3000);
      const std::size_t before = p.model->frames.size();
      p.model->s->write(encode_command(c));
      w_.run_until([&] { return p.model->frames.size() > before; }, w_.now() + 3s);
      ASSERT_FALSE(got.empty()) << what << ": no reply from redis-server";
      ASSERT_GT(p.model->frames.size(), before) << what << ": no reply from the model";
      auto norm = [&c](std::string f, const Subs& subs) {
        if (c.size() == 2 && c[0] == "CLIENT" && c[1] == "ID") {  // a connection counter
          return std::regex_replace(f, std::regex("^:[0-9]+"), ":<id>");
        }
        return mask(f, subs);
      };
      EXPECT_EQ(norm(p.model->frames[before], model_subs_), norm(got[0], real_subs_))
          << what << "\nmodel: " << escape_bytes(p.model->frames[before], 2000)
          << "\nreal:  " << escape_bytes(got[0], 2000);
    }
  }

  static std::unique_ptr<lockwire::test::RedisSentinels> real_;
  World w_{3};
  Node& cli_ = w_.add_node("client");
  SimRedis a_{w_, w_.add_node("redis-a")};
  std::unique_ptr<SimRedis> b_;
  std::unique_ptr<SimSentinels> model_;
  Subs real_subs_, model_subs_;
};

std::unique_ptr<lockwire::test::RedisSentinels> SentinelDiff::real_;

// What the loop layer's discovery sends and reads (loop/src/sentinel.cpp), in RESP2 and RESP3,
// plus the errors a misconfigured client gets.
const std::vector<std::vector<std::string>> kQueries = {
    {"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster"},
    {"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "nope"},
    {"SENTINEL", "MASTER", "mymaster"},
    {"SENTINEL", "MASTER", "nope"},
    {"SENTINEL", "MASTERS"},
    {"SENTINEL", "MASTER"},
    {"SENTINEL", "GET-MASTER-ADDR-BY-NAME"},
    {"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "a", "b"},
    {"SENTINEL"},
    {"SENTINEL", "FOO"},
    {"SENTINEL", "MYID"},
    {"SENTINEL", "CKQUORUM", "mymaster"},
    {"SENTINEL", "FAILOVER", "nope"},
    {"ROLE"},
    {"PING"},
    {"PING", "hi"},
    {"GET", "x"},
    {"SET", "a", "b"},
    {"INCR", "P{R}:tok"},
    {"PUBLISH", "x", "y"},
    {"CLIENT", "SETNAME", "lockwire"},
    {"CLIENT", "GETNAME"},
    {"CLIENT", "ID"},
    {"CLIENT", "KILL", "ID", "999999"},
    {"AUTH", "x"},
};

TEST_F(SentinelDiff, QueriesResp2) {
  Pair p = open_sentinel(0);
  converse(p, kQueries);
  converse(p, {{"HELLO"}, {"HELLO", "2"}});
}

TEST_F(SentinelDiff, QueriesResp3) {
  Pair p = open_sentinel(1);
  converse(p, {{"HELLO", "3"}});
  converse(p, kQueries);
  converse(p, {{"HELLO", "3", "SETNAME", "x"}, {"HELLO", "3", "AUTH", "default", "wrong"}});
}

TEST_F(SentinelDiff, SubscribeAcknowledgement) {
  Pair p2 = open_sentinel(2);
  converse(p2, {{"SUBSCRIBE", "+switch-master"},
                {"PING"},
                {"ROLE"},
                {"SENTINEL", "MASTER", "mymaster"},
                {"UNSUBSCRIBE"}});
  Pair p3 = open_sentinel(0);
  converse(p3, {{"HELLO", "3"},
                {"SUBSCRIBE", "+switch-master"},
                {"PING"},
                {"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster"},
                {"UNSUBSCRIBE", "+switch-master"}});
}

// WAIT as min_replicas uses it, on a primary with one replica (the model's, as the real one).
TEST_F(SentinelDiff, WaitOnAPrimaryWithAReplica) {
  Pair p = open_primary();
  converse(p, {{"SET", "k", "v"}, {"WAIT", "1", "1000"}, {"WAIT", "2", "100"}, {"WAIT", "0", "0"}});
  converse(p, {{"HELLO", "3"}, {"ZADD", "f", "GT", "1780000000000001", "t"},
               {"ZADD", "f", "INCR", "1", "t"}, {"WAIT", "1", "1000"}});
}

// The graceful failover: SENTINEL FAILOVER's replies, the +switch-master message on another
// sentinel's subscription (~1.1 s later on both), and the new configuration (config-epoch 1).
// Last: it changes the real topology's state for good.
TEST_F(SentinelDiff, ZGracefulFailover) {
  Pair sub = open_sentinel(1);
  converse(sub, {{"HELLO", "3"}, {"SUBSCRIBE", "+switch-master"}});
  // +promoted-slave: published by the leader (the sentinel asked to fail over) only.
  Pair lead = open_sentinel(0);
  converse(lead, {{"HELLO", "3"}, {"SUBSCRIBE", "+promoted-slave"}});
  Pair quiet = open_sentinel(2);
  converse(quiet, {{"HELLO", "3"}, {"SUBSCRIBE", "+promoted-slave"}});
  Pair admin = open_sentinel(0);
  const auto t_real = std::chrono::steady_clock::now();
  const Nanos t_model = w_.now();
  converse(admin, {{"SENTINEL", "FAILOVER", "mymaster"}});
  converse(admin, {{"SENTINEL", "FAILOVER", "mymaster"}});  // -INPROG
  {
    const auto promoted = lead.real->read_frames(1, false, 5000);
    const double real_p =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t_real).count();
    const std::size_t lb = lead.model->frames.size();
    w_.run_until([&] { return lead.model->frames.size() > lb; }, w_.now() + 5s);
    const double model_p = std::chrono::duration<double>(w_.now() - t_model).count();
    ASSERT_EQ(promoted.size(), 1u);
    ASSERT_GT(lead.model->frames.size(), lb);
    EXPECT_EQ(mask(lead.model->frames[lb], model_subs_), mask(promoted[0], real_subs_));
    EXPECT_NE(mask(promoted[0], real_subs_)
                  .find("slave <host>:<replica-port> <host> <replica-port> @ mymaster <host> "
                        "<primary-port>"),
              std::string::npos)
        << escape_bytes(promoted[0]);
    EXPECT_NEAR(real_p, 1.0, 0.4);
    EXPECT_NEAR(model_p, 1.0, 0.05);
    // From that moment the leader names the promoted replica (the other sentinels do not yet:
    // what +promoted-slave is watched for).
    converse(admin, {{"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster"}});
  }
  const auto got = sub.real->read_frames(1, false, 5000);
  const double real_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_real).count();
  const std::size_t before = sub.model->frames.size();
  w_.run_until([&] { return sub.model->frames.size() > before; }, w_.now() + 5s);
  const double model_s = std::chrono::duration<double>(w_.now() - t_model).count();
  ASSERT_EQ(got.size(), 1u);
  ASSERT_GT(sub.model->frames.size(), before);
  // The old primary's address and then the replica's: the masks tell them apart by port.
  EXPECT_EQ(mask(sub.model->frames[before], model_subs_), mask(got[0], real_subs_));
  EXPECT_NE(mask(got[0], real_subs_).find("<host> <primary-port> <host> <replica-port>"),
            std::string::npos)
      << escape_bytes(got[0]);
  EXPECT_NEAR(real_s, 1.1, 0.4);
  EXPECT_NEAR(model_s, 1.1, 0.05);
  // Give the real sentinels a moment to agree, then read the new configuration.
  w_.run_for(500ms);
  std::this_thread::sleep_for(500ms);
  converse(admin, {{"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster"}});
  Pair other = open_sentinel(2);
  converse(other, {{"HELLO", "3"}, {"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster"}});
  // A sentinel that did not lead the failover never said +promoted-slave.
  EXPECT_TRUE(quiet.real->read_frames(1, false, 100).empty());
  EXPECT_EQ(quiet.model->frames.size(), 2u);  // HELLO's and SUBSCRIBE's replies only
}

}  // namespace
}  // namespace lockwire::sim::test
