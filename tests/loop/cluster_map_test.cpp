// Cluster addressing (loop/cluster_map.hpp) on replies captured from a redis-server 7.0.15
// cluster of three primaries (tests/loop/data/), and key slots checked against the real
// server's CLUSTER KEYSLOT.
#include "lockwire/loop/cluster_map.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "lockwire/resp/parser.hpp"

namespace lockwire::loop::cluster {
namespace {

std::string data(const std::string& name) {
  std::ifstream f(std::string(LOCKWIRE_TEST_DATA) + "/" + name, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The map a captured CLUSTER SHARDS reply (data/NAME) gives; `ok` false when it does not parse.
SlotMap shards_map(const std::string& name, bool& ok) {
  const std::string bytes = data(name);
  resp::Parser p;
  SlotMap m;
  ok = !bytes.empty() && p.parse(bytes).ok() && m.parse_shards(p.frame());
  return m;
}

TEST(KeySlot, HashTagsAndKnownValues) {
  EXPECT_EQ(key_slot("123456789"), 0x31C3 % kSlots);  // CRC16/XMODEM check value
  EXPECT_EQ(key_slot("foo"), 12182);                  // MOVED 12182 from the real cluster
  EXPECT_EQ(key_slot("lockwire:{r}"), 7893);           // CLUSTER KEYSLOT lockwire:{r}
  EXPECT_EQ(key_slot("lockwire:{r}:tok"), key_slot("r"));
  EXPECT_EQ(key_slot("{user1000}.following"), key_slot("user1000"));
  EXPECT_EQ(key_slot("foo{}{bar}"), key_slot("foo{}{bar}"));  // empty tag: the whole key
  EXPECT_NE(key_slot("foo{}{bar}"), key_slot("bar"));
  EXPECT_EQ(key_slot("foo{{bar}}zap"), key_slot("{bar"));  // first '{' to the next '}'
  EXPECT_EQ(key_slot("foo{bar}{zap}"), key_slot("bar"));
  EXPECT_EQ(key_slot("{"), key_slot("{"));
  EXPECT_LT(key_slot(""), kSlots);
}

TEST(SlotMap, ParsesClusterShards) {
  const std::string bytes = data("cluster_shards_3_primaries.resp");
  ASSERT_FALSE(bytes.empty());
  resp::Parser p;
  ASSERT_TRUE(p.parse(bytes).ok());
  SlotMap m;
  ASSERT_TRUE(m.parse_shards(p.frame()));
  EXPECT_TRUE(m.covers_all());
  ASSERT_EQ(m.primaries().size(), 3u);
  const Node* a = m.primary_for(0);
  const Node* b = m.primary_for(7893);
  const Node* c = m.primary_for(16383);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a->port, 17101);
  EXPECT_EQ(b->port, 17102);
  EXPECT_EQ(c->port, 17103);
  EXPECT_EQ(m.primary_for(12182)->port, 17103);  // where the real cluster MOVED "foo"
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->id.size(), 40u);
  // MOVED patches one slot.
  m.moved(7893, "127.0.0.1", 17103);
  EXPECT_EQ(m.primary_for(7893)->port, 17103);
  EXPECT_EQ(m.primary_for(7894)->port, 17102);
}

// Redis 7.2.6, 2 s after a failover (a primary stopped, its replica promoted): CLUSTER SHARDS
// lists the failed primary in the shard next to the promoted one, both with role master. The
// online one serves the slots (7.0 lists the failed one in a shard of its own, without slots).
TEST(SlotMap, Redis72ShardsPreferTheOnlinePrimary) {
  bool ok = false;
  const SlotMap m = shards_map("cluster_shards_failed_listed_last_redis72.resp", ok);
  ASSERT_TRUE(ok);
  EXPECT_TRUE(m.covers_all());
  ASSERT_NE(m.primary_for(0), nullptr);
  EXPECT_EQ(m.primary_for(0)->port, 27101);  // online; 27104 (health fail) is listed after it
  EXPECT_EQ(m.primary_for(5460)->port, 27101);
  EXPECT_EQ(m.primary_for(5461)->port, 27102);
}

// The other shape Redis 7.2.6 gave (transcribed from a capture of the same failover): the
// promoted replica's shard shows no slots at all, the failed primary listed first. CLUSTER
// SLOTS from that node names the promoted one; fill_holes takes it for the unserved slots only.
TEST(SlotMap, Redis72ShardsWithoutSlotsAreFilledFromClusterSlots) {
  bool ok = false;
  SlotMap m = shards_map("cluster_shards_promoted_without_slots_redis72.resp", ok);
  ASSERT_TRUE(ok);
  EXPECT_FALSE(m.covers_all());
  EXPECT_EQ(m.primary_for(0), nullptr);
  // CLUSTER SLOTS of that state, in the shape 7.2.6 sends (RESP3, id and an empty map).
  const std::string slots =
      "*3\r\n"
      "*3\r\n:0\r\n:5460\r\n*4\r\n$9\r\n127.0.0.1\r\n:27104\r\n$40\r\n"
      "6f3c523a465515ab9cab4915b161ce4f42f6b08e\r\n%0\r\n"
      "*3\r\n:5461\r\n:10922\r\n*4\r\n$9\r\n127.0.0.1\r\n:27199\r\n$40\r\n"
      "0000000000000000000000000000000000000000\r\n%0\r\n"
      "*3\r\n:10923\r\n:16383\r\n*4\r\n$9\r\n127.0.0.1\r\n:27103\r\n$40\r\n"
      "e63a90c50e938ddd97400748395627171bc035e5\r\n%0\r\n";
  resp::Parser q;
  ASSERT_TRUE(q.parse(slots).ok());
  SlotMap s;
  ASSERT_TRUE(s.parse_slots(q.frame()));
  EXPECT_EQ(m.fill_holes(s), 5461u);
  EXPECT_TRUE(m.covers_all());
  ASSERT_NE(m.primary_for(0), nullptr);
  EXPECT_EQ(m.primary_for(0)->port, 27104);
  EXPECT_EQ(m.primary_for(0)->id, "6f3c523a465515ab9cab4915b161ce4f42f6b08e");
  // Served slots keep SHARDS' primary (27199 above is not taken).
  EXPECT_EQ(m.primary_for(5461)->port, 27102);
  EXPECT_EQ(m.fill_holes(s), 0u);
}

TEST(SlotMap, ParsesClusterSlots) {
  const std::string bytes = data("cluster_slots_3_primaries.resp");
  resp::Parser p;
  ASSERT_TRUE(p.parse(bytes).ok());
  SlotMap m;
  ASSERT_TRUE(m.parse_slots(p.frame()));
  EXPECT_TRUE(m.covers_all());
  EXPECT_EQ(m.primary_for(5460)->port, 17101);
  EXPECT_EQ(m.primary_for(5461)->port, 17102);
  EXPECT_EQ(m.primary_for(10923)->port, 17103);
}

TEST(SlotMap, RefusesMalformedReplies) {
  for (const char* bad : {"*1\r\n:1\r\n", "-ERR This instance has cluster support disabled\r\n",
                          "*1\r\n*3\r\n:10\r\n:5\r\n*2\r\n$1\r\nh\r\n:1\r\n",
                          "*1\r\n*3\r\n:0\r\n:16384\r\n*2\r\n$1\r\nh\r\n:1\r\n",
                          "*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$1\r\nh\r\n:0\r\n"}) {
    resp::Parser p;
    ASSERT_TRUE(p.parse(bad).ok()) << bad;
    SlotMap m;
    EXPECT_FALSE(m.parse_slots(p.frame())) << bad;
    EXPECT_EQ(m.primary_for(0), nullptr);
  }
  SlotMap empty;
  EXPECT_FALSE(empty.covers_all());
  EXPECT_EQ(empty.primary_for(1), nullptr);
}

TEST(Redirect, ParsesMovedAndAsk) {
  auto m = parse_redirect("MOVED 12182 127.0.0.1:17103");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->kind, Redirect::Kind::moved);
  EXPECT_EQ(m->slot, 12182);
  EXPECT_EQ(m->host, "127.0.0.1");
  EXPECT_EQ(m->port, 17103);
  auto a = parse_redirect("ASK 3999 ::1:6381");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->kind, Redirect::Kind::ask);
  EXPECT_EQ(a->host, "::1");
  EXPECT_EQ(a->port, 6381);
  for (const char* bad : {"MOVED", "MOVED 1", "MOVED x h:1", "MOVED 16384 h:1", "MOVED 1 h",
                          "MOVED 1 h:0", "MOVED 1 h:65536", "MOVED 1 :1", "ERR MOVED 1 h:1",
                          "CLUSTERDOWN The cluster is down", "ASK 1 h:1x"}) {
    EXPECT_FALSE(parse_redirect(bad)) << bad;
  }
}

}  // namespace
}  // namespace lockwire::loop::cluster
