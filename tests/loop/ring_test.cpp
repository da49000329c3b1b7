// detail::Ring (loop/src/ring.hpp), the FIFO the connection keeps its requests in flight in:
// order across wrap-around and growth, popped slots released at once, moves, shrinking.
#include "ring.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace lockwire::loop::detail {
namespace {

TEST(Ring, KeepsOrderAcrossWrapAroundAndGrowth) {
  Ring<std::string> r;
  EXPECT_TRUE(r.empty());
  std::size_t next_in = 0, next_out = 0;
  // Interleave pushes and pops so that the head wraps before every growth.
  for (int round = 0; round < 200; ++round) {
    for (int i = 0; i < 1 + round % 7; ++i) r.push_back(std::to_string(next_in++));
    for (int i = 0; i < round % 5 && !r.empty(); ++i) {
      ASSERT_EQ(r.front(), std::to_string(next_out++));
      r.pop_front();
    }
    ASSERT_EQ(r.size(), next_in - next_out);
    if (!r.empty()) {
      EXPECT_EQ(r.back(), std::to_string(next_in - 1));
      std::size_t k = next_out;
      for (const std::string& s : r) EXPECT_EQ(s, std::to_string(k++));
      EXPECT_EQ(k, next_in);
      EXPECT_EQ(r[r.size() - 1], r.back());
    }
  }
  while (!r.empty()) {
    ASSERT_EQ(r.front(), std::to_string(next_out++));
    r.pop_front();
  }
  EXPECT_EQ(next_out, next_in);
}

TEST(Ring, EmplacedSlotsStartFreshAndPoppedOnesAreReleasedAtOnce) {
  Ring<std::shared_ptr<int>> r;
  auto held = std::make_shared<int>(7);
  for (int i = 0; i < 40; ++i) {
    std::shared_ptr<int>& slot = r.emplace_back();
    EXPECT_EQ(slot, nullptr);  // a reused slot is in its default state
    slot = held;
  }
  EXPECT_EQ(held.use_count(), 41);
  for (int i = 0; i < 25; ++i) r.pop_front();
  EXPECT_EQ(held.use_count(), 16);  // not kept alive by popped slots
  r.clear();
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(held.use_count(), 1);
}

TEST(Ring, MovesLeaveTheSourceEmptyAndUsable) {
  Ring<std::string> a;
  for (int i = 0; i < 20; ++i) a.push_back(std::string(40, static_cast<char>('a' + i % 26)));
  a.pop_front();
  Ring<std::string> b = std::move(a);
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  EXPECT_EQ(b.size(), 19u);
  EXPECT_EQ(b.front(), std::string(40, 'b'));
  a.push_back("again");
  EXPECT_EQ(a.front(), "again");
  a = std::move(b);
  EXPECT_EQ(a.size(), 19u);
  EXPECT_TRUE(b.empty());  // NOLINT(bugprone-use-after-move)
  b.push_back("x");
  EXPECT_EQ(b.size(), 1u);
}

TEST(Ring, ABurstIsNotKeptOnceEmpty) {
  Ring<std::vector<int>> r;
  for (int i = 0; i < 5000; ++i) r.push_back(std::vector<int>(4, i));
  for (int i = 0; i < 5000; ++i) {
    ASSERT_EQ(r.front()[0], i);
    r.pop_front();
  }
  EXPECT_TRUE(r.empty());
  for (int i = 0; i < 3; ++i) r.push_back(std::vector<int>(1, i));  // usable again
  EXPECT_EQ(r.front()[0], 0);
  EXPECT_EQ(r.back()[0], 2);
}

}  // namespace
}  // namespace lockwire::loop::detail
