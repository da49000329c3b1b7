// The model on its own (no network, a hand-driven clock): behaviour that the differential suite
// cannot show well — pathological globs, blocking commands on the virtual clock.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "lockwire/sim/redis_model.hpp"

namespace lockwire::sim {
namespace {

std::string enc(const std::vector<std::string>& args) {
  std::string out;
  out.append("*").append(std::to_string(args.size())).append("\r\n");
  for (auto& a : args)
    out.append("$").append(std::to_string(a.size())).append("\r\n").append(a).append("\r\n");
  return out;
}

struct Harness {
  std::int64_t now_us = 1767225600000000;
  std::map<RedisModel::ClientId, std::string> out;
  std::map<RedisModel::ClientId, bool> closed;
  RedisModel m;
  Harness()
      : m(
            [this] {
              RedisModel::Hooks h;
              h.write = [this](RedisModel::ClientId id, std::string_view b) { out[id].append(b); };
              h.close = [this](RedisModel::ClientId id) { closed[id] = true; };
              h.wall_us = [this] { return now_us; };
              return h;
            }(),
            Rng(1)) {}
  // Sends one command and returns everything the client got for it.
  std::string call(RedisModel::ClientId c, const std::vector<std::string>& args) {
    out[c].clear();
    m.feed(c, enc(args));
    return take(c);
  }
  std::string take(RedisModel::ClientId c) {
    std::string s;
    s.swap(out[c]);
    return s;
  }
  // Advances the clock, running cron at every 100 ms boundary and tick() at deadlines.
  void advance_ms(std::int64_t ms) {
    const std::int64_t end = now_us + ms * 1000;
    while (now_us < end) {
      std::int64_t next = (now_us / 100000 + 1) * 100000;
      const std::int64_t d = m.next_deadline_us();
      if (d > now_us && d < next) next = d;
      if (next > end) {
        now_us = end;
        break;
      }
      now_us = next;
      if (now_us % 100000 == 0) m.cron();
      m.tick();
    }
  }
};

TEST(ModelGlob, PathologicalPatternAnswersWithoutBlowingUp) {
  Harness h;
  const auto c = h.m.add_client();
  const std::string key(40, 'a');
  EXPECT_EQ(h.call(c, {"SET", key, "1"}), "+OK\r\n");
  std::string pat;
  for (int i = 0; i < 20; ++i) pat += "a*";
  pat += "b";
  // Exponential without Redis' bound (20 nested stars over 40 characters); with it, immediate.
  EXPECT_EQ(h.call(c, {"KEYS", pat}), "*0\r\n");
  EXPECT_EQ(h.call(c, {"SCAN", "0", "MATCH", pat, "COUNT", "100"}), "*2\r\n$1\r\n0\r\n*0\r\n");
  std::string one = "*1\r\n$40\r\n";
  one.append(key).append("\r\n");
  EXPECT_EQ(h.call(c, {"KEYS", pat.substr(0, pat.size() - 1)}), one);
  const auto sub = h.m.add_client();
  std::string want = "*3\r\n$10\r\npsubscribe\r\n$";
  want.append(std::to_string(pat.size())).append("\r\n").append(pat).append("\r\n:1\r\n");
  EXPECT_EQ(h.call(sub, {"PSUBSCRIBE", pat}), want);
  EXPECT_EQ(h.call(c, {"PUBLISH", key, "m"}), ":0\r\n");
  EXPECT_EQ(h.take(sub), "");
}

// A big argument (>= 32 KiB, Redis' PROTO_MBULK_BIG_ARG) arriving in small pieces is read
// straight into its own string; pipelined commands around it still parse.
TEST(ModelProtocol, BigArgumentsInPieces) {
  Harness h;
  const auto c = h.m.add_client();
  const std::string value(100 * 1024 + 7, 'v');
  std::string bytes = enc({"SET", "big", value});
  bytes += enc({"STRLEN", "big"});
  bytes += enc({"GETRANGE", "big", "-3", "-1"});
  for (std::size_t i = 0; i < bytes.size(); i += 1000) h.m.feed(c, std::string_view(bytes).substr(i, 1000));
  EXPECT_EQ(h.take(c), "+OK\r\n:102407\r\n$3\r\nvvv\r\n");
  EXPECT_EQ(h.call(c, {"GET", "big"}).size(), value.size() + 11);  // $102407 CRLF ... CRLF
}

}  // namespace
}  // namespace lockwire::sim
