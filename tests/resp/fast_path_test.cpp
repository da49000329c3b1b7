// The parser's short path for common scalars inside a counted aggregate (parser.cpp,
// fast_scalar) must decide exactly as the general path does. It is taken only when the whole
// element is in the input of the call that began the frame, so feeding the same stream whole
// (short path), byte by byte (never: a frame that spans calls keeps offsets) and split at every
// point (the short path sees the element cut off and must hand it on) must agree on every frame,
// error and error offset, for valid and malformed elements alike, near every limit.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "lockwire/resp/parser.hpp"
#include "testutil.hpp"

namespace lockwire::resp {
namespace {

using test::feed;
using test::feed_all;
using test::feed_bytes;
using test::Outcome;

// Concatenation by appends only: gcc 12 -O3 warns falsely (-Wrestrict) on chained operator+.
std::string cat(std::initializer_list<std::string_view> parts) {
  std::string s;
  for (std::string_view p : parts) s.append(p);
  return s;
}

// Elements the short path recognises, their near misses, and their limits.
std::vector<std::string> elements() {
  std::vector<std::string> v = {
      // blob strings
      "$3\r\nbar\r\n", "$0\r\n\r\n", "$10\r\nvalue:1000\r\n", "$3\r\nbarX\r\n", "$3\r\nba\r\n\r\n",
      "$3\r\nbar\rX", "$3\r\nbar\nX", "$3\n", "$3\rX", "$-1\r\n", "$-2\r\n", "$\r\n",
      "$03\r\nbar\r\n", "$123456789012345678\r\n", "$1234567890123456789\r\n", "$3x\r\n",
      "$?\r\n;3\r\nabc\r\n;0\r\n",
      // doubles
      ",1.5\r\n", ",-1.5e-3\r\n", ",1E+10\r\n", ",10\r\n", ",0\r\n", ",-0.0\r\n", ",inf\r\n",
      ",-inf\r\n", ",nan\r\n", ",-nan\r\n", ",+1\r\n", ",+inf\r\n", ",1.\r\n", ",.5\r\n", ",1e\r\n",
      ",1e+\r\n", ",1.5x\r\n", ",1.5.5\r\n", ",\r\n", ",-\r\n", ",1\rX", ",1\n", ",1.5\r",
      cat({",", std::string(1024, '7'), "\r\n"}), cat({",", std::string(1025, '7'), "\r\n"}),
      cat({",1.", std::string(1022, '5'), "\r\n"}), cat({",1.", std::string(1023, '5'), "\r\n"}),
      // integers
      ":0\r\n", ":-0\r\n", ":+5\r\n", ":007\r\n", ":123456789012345678\r\n",
      ":9223372036854775807\r\n", ":-9223372036854775808\r\n", ":9223372036854775808\r\n",
      ":-9223372036854775809\r\n", ":12a\r\n", ":-\r\n", ":\r\n", ":1\rX", ":1\n",
      cat({":", std::string(32, '1'), "\r\n"}), cat({":-", std::string(40, '1'), "\r\n"}),
      // simple strings and errors
      "+OK\r\n", "+\r\n", "-ERR x\r\n", "-\r\n", "+a\nb\r\n", "-a\nb\r\n", "+OK\rX", "+OK\n",
      cat({"+", std::string(63, 's'), "\r\n"}), cat({"+", std::string(64, 's'), "\r\n"}),
      cat({"+", std::string(100, 's'), "\r\n"}), cat({"-", std::string(70, 'e'), "\r\n"}),
      // what the short path leaves to the general one
      "_\r\n", "#t\r\n", "(123\r\n", "!3\r\nerr\r\n", "=7\r\ntxt:abc\r\n", "*0\r\n", "%0\r\n",
      "?\r\n", ".\r\n", ";3\r\nabc\r\n"};
  return v;
}

// Ways to hold an element: counted aggregates at several depths, beside siblings, inside an
// attribute, and (never on the short path) streamed ones.
std::vector<std::string> containers(const std::string& x) {
  return {
      cat({"*1\r\n", x}),
      cat({"*2\r\n", x, ":1\r\n"}),
      cat({"*3\r\n", x, x, x}),
      cat({"%1\r\n", x, x}),
      cat({"%2\r\n$1\r\nk\r\n", x, x, "$1\r\nv\r\n"}),
      cat({"*1\r\n*1\r\n", x}),
      cat({"*2\r\n*1\r\n", x, x}),
      cat({"~2\r\n$1\r\na\r\n", x}),
      cat({">2\r\n$10\r\ninvalidate\r\n*1\r\n", x}),
      cat({"|1\r\n+k\r\n", x, "+v\r\n"}),
      cat({"*1\r\n|1\r\n", x, x, x}),
      cat({"*?\r\n", x, ".\r\n"}),
      cat({"%?\r\n", x, x, ".\r\n"}),
      cat({"*2\r\n$?\r\n;1\r\na\r\n;0\r\n", x}),
      cat({"*2\r\n", x, "+OK\r\n+next\r\n"}),
  };
}

std::string describe(const std::string& s) {
  std::string out;
  for (char c : s.substr(0, 80)) {
    if (c == '\r') {
      out += "\\r";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  if (s.size() > 80) out.append("...");
  return out;
}

void expect_same_however_split(const std::string& stream, const Limits& limits) {
  const Outcome whole = feed_all(stream, limits);
  EXPECT_EQ(whole, feed_bytes(stream, limits)) << "byte by byte: " << describe(stream);
  // Every split point into two pieces (long streams: the first and last 40 points).
  for (std::size_t k = 1; k < stream.size(); ++k) {
    if (stream.size() > 100 && k > 40 && k < stream.size() - 40) continue;
    bool first = true;
    const Outcome split = feed(
        stream,
        [&](std::size_t rest) {
          const std::size_t piece = first ? k : rest;
          first = false;
          return piece;
        },
        limits);
    EXPECT_EQ(whole, split) << "split at " << k << ": " << describe(stream);
  }
}

TEST(FastPath, AgreesWithTheGeneralPathHoweverSplit) {
  std::vector<Limits> limits(5);
  limits[1].max_depth = 1;
  limits[2].max_blob = 3;
  limits[3].max_blob = 0;
  limits[4].max_aggregate = 1;
  std::size_t streams = 0;
  for (const std::string& x : elements()) {
    for (const std::string& c : containers(x)) {
      for (const Limits& l : limits) {
        expect_same_however_split(c, l);
        // Followed by another frame, and preceded by one (the frame then starts mid-input).
        expect_same_however_split(cat({c, ":7\r\n"}), l);
        expect_same_however_split(cat({"+OK\r\n", c}), l);
        streams += 3;
      }
    }
  }
  EXPECT_GT(streams, 3000u);
}

TEST(FastPath, CommonScalarsInsideAggregates) {
  const std::string in =
      "%3\r\n$8\r\nmember:0\r\n,1.5\r\n$1\r\nn\r\n:-42\r\n$1\r\ns\r\n*2\r\n+OK\r\n-ERR no\r\n";
  const Outcome o = feed_all(in);
  ASSERT_EQ(o.end, ParseResult::Status::complete);
  ASSERT_EQ(o.frames.size(), 1u);
  EXPECT_EQ(o.frames[0],
            "map[3]\n"
            "  blob 'member:0'\n"
            "  double '1.5'\n"
            "  blob 'n'\n"
            "  number '-42'\n"
            "  blob 's'\n"
            "  array[2]\n"
            "    simple 'OK'\n"
            "    error 'ERR no'\n");
  EXPECT_EQ(o, feed_bytes(in));
}

}  // namespace
}  // namespace lockwire::resp
