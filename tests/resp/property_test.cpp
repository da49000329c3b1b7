// Properties: random valid streams give the expected frames however they are split; corrupted
// streams give the same error at the same offset however they are split.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "generator.hpp"
#include "testutil.hpp"

namespace lockwire::resp {
namespace {

using test::feed;
using test::feed_all;
using test::feed_bytes;
using test::Generator;
using test::Outcome;

struct Stream {
  std::string bytes;
  std::vector<std::string> expected;
};

Stream make_stream(std::uint64_t seed) {
  Generator g(seed);
  Stream s;
  const auto frames = 1 + g.rng().below(6);
  for (std::uint64_t i = 0; i < frames; ++i) {
    std::string exp;
    g.frame(s.bytes, exp);
    s.expected.push_back(exp);
  }
  return s;
}

constexpr int kStreams = 2000;

TEST(Property, RoundTripWholeAndSplit) {
  for (int seed = 1; seed <= kStreams; ++seed) {
    const Stream s = make_stream(static_cast<std::uint64_t>(seed));
    const Outcome whole = feed_all(s.bytes);
    ASSERT_EQ(whole.end, ParseResult::Status::complete) << "seed " << seed;
    ASSERT_EQ(whole.frames, s.expected) << "seed " << seed;
    // Random split points.
    test::Rng rng(static_cast<std::uint64_t>(seed) * 7919);
    for (int round = 0; round < 3; ++round) {
      const std::uint64_t max_piece = 1 + rng.below(round == 0 ? 4 : 64);
      const Outcome split = feed(
          s.bytes, [&](std::size_t) { return static_cast<std::size_t>(1 + rng.below(max_piece)); });
      ASSERT_EQ(split, whole) << "seed " << seed << " round " << round;
    }
  }
}

TEST(Property, ByteByByte) {
  for (int seed = 1; seed <= kStreams; seed += 3) {
    const Stream s = make_stream(static_cast<std::uint64_t>(seed));
    ASSERT_EQ(feed_bytes(s.bytes), feed_all(s.bytes)) << "seed " << seed;
  }
}

TEST(Property, TruncatedStreamIsIncompleteNotError) {
  for (int seed = 1; seed <= kStreams; seed += 5) {
    const Stream s = make_stream(static_cast<std::uint64_t>(seed));
    test::Rng rng(static_cast<std::uint64_t>(seed));
    const std::size_t cut = rng.below(s.bytes.size());
    const Outcome o = feed_all(std::string_view(s.bytes).substr(0, cut));
    EXPECT_NE(o.end, ParseResult::Status::error) << "seed " << seed;
    ASSERT_LE(o.frames.size(), s.expected.size());
    for (std::size_t i = 0; i < o.frames.size(); ++i) EXPECT_EQ(o.frames[i], s.expected[i]);
  }
}

TEST(Property, CorruptedStreamsAgreeAcrossSplits) {
  int errors = 0;
  for (int seed = 1; seed <= kStreams; ++seed) {
    Stream s = make_stream(static_cast<std::uint64_t>(seed));
    test::Rng rng(static_cast<std::uint64_t>(seed) * 31);
    const auto flips = 1 + rng.below(3);
    for (std::uint64_t i = 0; i < flips; ++i) {
      s.bytes[rng.below(s.bytes.size())] = static_cast<char>(rng.below(256));
    }
    const Outcome whole = feed_all(s.bytes);
    errors += whole.end == ParseResult::Status::error;
    const std::uint64_t max_piece = 1 + rng.below(16);
    ASSERT_EQ(feed(s.bytes,
                   [&](std::size_t) { return static_cast<std::size_t>(1 + rng.below(max_piece)); }),
              whole)
        << "seed " << seed;
    if (seed % 4 == 0) {
      ASSERT_EQ(feed_bytes(s.bytes), whole) << "seed " << seed;
    }
  }
  EXPECT_GT(errors, kStreams / 4);  // the corruption really exercises error paths
}

}  // namespace
}  // namespace lockwire::resp
