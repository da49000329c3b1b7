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

// A field of a SENTINEL MASTER reply (RESP2 or RESP3: name and value as bulk strings); "" if
// absent.
std::string master_field(const std::string& reply, const std::string& name) {
  std::string key("$");
  key.append(std::to_string(name.size())).append("\r\n").append(name).append("\r\n$");
  const auto at = reply.find(key);
  if (at == std::string::npos) return {};
  const auto len_end = reply.find("\r\n", at + key.size());
  const auto len = std::stoul(reply.substr(at + key.size(), len_end - at - key.size()));
  return reply.substr(len_end + 2, len);
}

// What one sentinel's SENTINEL MASTER says while the primary does not answer, polled every
// 100 ms until +sdown (or 4 s): the seconds to +sdown, and whether every reply kept the rules
// issue 28's holder relies on: last-ping-sent is the age of the oldest unanswered PING (it grows
// with the clock, from 0 before the first unanswered one), last-ok-ping-reply is at least as
// old, and s_down comes once last-ping-sent is over down-after-milliseconds.
struct DownWatch {
  double sdown_after = -1;
  bool rules_kept = true;
  std::string broken;
  long ping_sent_at_sdown = -1;
  void sample(const std::string& reply, double t) {
    const std::string flags = master_field(reply, "flags");
    const long sent = std::stol("0" + master_field(reply, "last-ping-sent"));
    const long ok = std::stol("0" + master_field(reply, "last-ok-ping-reply"));
    const long down_after = std::stol("0" + master_field(reply, "down-after-milliseconds"));
    if (ok < sent) {
      rules_kept = false;
      broken = "last-ok-ping-reply " + std::to_string(ok) + " < last-ping-sent " + std::to_string(sent);
    }
    const bool sdown = flags.find("s_down") != std::string::npos;
    if (sdown && sdown_after < 0) {
      sdown_after = t;
      ping_sent_at_sdown = sent;
      if (sent <= down_after) {
        rules_kept = false;
        broken = "s_down with last-ping-sent " + std::to_string(sent);
      }
    }
    if (!sdown && sent > down_after + 150) {  // one cron and the poll's own delay
      rules_kept = false;
      broken = "no s_down with last-ping-sent " + std::to_string(sent);
    }
  }
};

// The primary stops answering: a real one stopped with SIGSTOP (its kernel still acknowledges,
// so for the sentinels' PINGs it is a partition without the TCP part) against the model's
// primary cut off from the sentinels by Network::partition. Both keep the rules above, and
// +sdown comes within down-after + the PING period (+ a cron) of the stop on both.
// Last but one: the real topology fails over.
TEST_F(SentinelDiff, ZStoppedPrimaryFields) {
  // The real topology's primary now (ZGracefulFailover may have moved it).
  const std::uint16_t port = real_->reported_primary_port();
  lockwire::test::RedisServer& stopped =
      port == real_->primary().port() ? real_->primary() : real_->replica();
  TcpConn q(real_->sentinel(1).port());
  ASSERT_TRUE(q.ok());
  DownWatch real, model;
  stopped.pause();
  const auto t0 = std::chrono::steady_clock::now();
  for (int k = 0; k < 40 && real.sdown_after < 0; ++k) {
    std::this_thread::sleep_for(100ms);
    q.send(encode_command({"SENTINEL", "MASTER", "mymaster"}));
    const auto got = q.read_frames(1, false, 2000);
    ASSERT_EQ(got.size(), 1u);
    real.sample(got[0], std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  stopped.resume();
  Raw m(w_, cli_, model_->server(1).endpoint());
  std::vector<const Node*> others{&cli_, &b_->node()};
  for (std::size_t i = 0; i < model_->size(); ++i) others.push_back(&model_->server(i).node());
  const Nanos m0 = w_.now();
  (void)w_.net().partition({&a_.node()}, others, 10s);
  for (int k = 0; k < 40 && model.sdown_after < 0; ++k) {
    w_.run_for(100ms);
    model.sample(m.call({"SENTINEL", "MASTER", "mymaster"}),
                 std::chrono::duration<double>(w_.now() - m0).count());
  }
  EXPECT_TRUE(real.rules_kept) << real.broken;
  EXPECT_TRUE(model.rules_kept) << model.broken;
  // down-after 1 s; the first unanswered PING goes out up to a PING period (1 s) after the stop.
  EXPECT_GT(real.sdown_after, 1.0);
  EXPECT_LT(real.sdown_after, 2.4);
  EXPECT_GT(model.sdown_after, 1.0);
  EXPECT_LT(model.sdown_after, 2.3);
  RecordProperty("real_sdown_ms", std::to_string(static_cast<int>(real.sdown_after * 1000)));
  RecordProperty("model_sdown_ms", std::to_string(static_cast<int>(model.sdown_after * 1000)));
}

}  // namespace
}  // namespace lockwire::sim::test
