#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "lockwire/resp/parser.hpp"
#include "testutil.hpp"

namespace lockwire::resp {
namespace {

using test::dump;
using test::feed_all;
using test::feed_bytes;

// Parses exactly one frame that must fill `in`; returns its dump.
std::string one(std::string_view in) {
  Parser p;
  ParseResult r = p.parse(in);
  EXPECT_EQ(r.status, ParseResult::Status::complete) << "input: " << in;
  EXPECT_EQ(r.consumed, in.size());
  // Byte by byte must agree.
  auto b = feed_bytes(in);
  EXPECT_EQ(b.frames.size(), 1u);
  if (r.ok() && !b.frames.empty()) {
    EXPECT_EQ(b.frames[0], dump(p.frame()));
  }
  return r.ok() ? dump(p.frame()) : std::string("<not complete>");
}

struct Err {
  ParseError e;
  std::size_t at;
};
Err err(std::string_view in, Limits limits = {}) {
  Parser p(limits);
  ParseResult r = p.parse(in);
  EXPECT_EQ(r.status, ParseResult::Status::error) << "input: " << in;
  // Same error at the same offset when fed byte by byte.
  auto b = feed_bytes(in, limits);
  EXPECT_EQ(b.end, ParseResult::Status::error);
  EXPECT_EQ(b.error, r.error);
  EXPECT_EQ(b.error_at, r.error_at);
  return {r.error, r.error_at};
}
// `code` names a ParseError enumerator, so it cannot be parenthesised.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define EXPECT_ERR(input, code, offset)           \
  do {                                            \
    Err e_ = err(input);                          \
    EXPECT_EQ(e_.e, ParseError::code) << (input); \
    EXPECT_EQ(e_.at, (offset)) << (input);        \
  } while (0)
// NOLINTEND(bugprone-macro-parentheses)

TEST(Parser, SimpleTypes) {
  EXPECT_EQ(one("+OK\r\n"), "simple 'OK'\n");
  EXPECT_EQ(one("+\r\n"), "simple ''\n");
  EXPECT_EQ(one("-ERR unknown command\r\n"), "error 'ERR unknown command'\n");
  EXPECT_EQ(one(":0\r\n"), "number '0'\n");
  EXPECT_EQ(one(":-9223372036854775808\r\n"), "number '-9223372036854775808'\n");
  EXPECT_EQ(one(":9223372036854775807\r\n"), "number '9223372036854775807'\n");
  EXPECT_EQ(one(":+5\r\n"), "number '+5'\n");
  EXPECT_EQ(one(",1.5\r\n"), "double '1.5'\n");
  EXPECT_EQ(one(",10\r\n"), "double '10'\n");
  EXPECT_EQ(one(",-1.25e-10\r\n"), "double '-1.25e-10'\n");
  EXPECT_EQ(one(",1E+300\r\n"), "double '1E+300'\n");
  EXPECT_EQ(one(",inf\r\n"), "double 'inf'\n");
  EXPECT_EQ(one(",-inf\r\n"), "double '-inf'\n");
  EXPECT_EQ(one(",nan\r\n"), "double 'nan'\n");
  EXPECT_EQ(one(",-nan\r\n"), "double '-nan'\n");
  EXPECT_EQ(one(",0.5E-3\r\n"), "double '0.5E-3'\n");
  EXPECT_EQ(one("#t\r\n"), "bool 't'\n");
  EXPECT_EQ(one("#f\r\n"), "bool 'f'\n");
  EXPECT_EQ(one("(3492890328409238509324850943850943825024385\r\n"),
            "big '3492890328409238509324850943850943825024385'\n");
  EXPECT_EQ(one("(-12\r\n"), "big '-12'\n");
  EXPECT_EQ(one("_\r\n"), "null\n");
}

TEST(Parser, BlobTypes) {
  EXPECT_EQ(one("$3\r\nbar\r\n"), "blob 'bar'\n");
  EXPECT_EQ(one("$0\r\n\r\n"), "blob ''\n");
  EXPECT_EQ(one(std::string("$4\r\na\r\n\0\r\n", 10)),
            "blob '" + std::string("a\r\n\0", 4) + "'\n");
  EXPECT_EQ(one("!21\r\nSYNTAX invalid syntax\r\n"), "blob_error 'SYNTAX invalid syntax'\n");
  EXPECT_EQ(one("=15\r\ntxt:Some string\r\n"), "verbatim 'Some string' (txt)\n");
  EXPECT_EQ(one("=4\r\nmkd:\r\n"), "verbatim (mkd)\n");
  EXPECT_EQ(one("$-1\r\n"), "null\n");
  EXPECT_EQ(one("*-1\r\n"), "null\n");
}

TEST(Parser, Aggregates) {
  EXPECT_EQ(one("*0\r\n"), "array[0]\n");
  EXPECT_EQ(one("*2\r\n$3\r\nfoo\r\n:1\r\n"), "array[2]\n  blob 'foo'\n  number '1'\n");
  EXPECT_EQ(one("%1\r\n+k\r\n*1\r\n#t\r\n"), "map[1]\n  simple 'k'\n  array[1]\n    bool 't'\n");
  EXPECT_EQ(one("~2\r\n:1\r\n:2\r\n"), "set[2]\n  number '1'\n  number '2'\n");
  EXPECT_EQ(one(">2\r\n+message\r\n$1\r\nx\r\n"), "push[2]\n  simple 'message'\n  blob 'x'\n");
  EXPECT_EQ(one("*2\r\n*-1\r\n$-1\r\n"), "array[2]\n  null\n  null\n");
  EXPECT_EQ(one("*1\r\n*1\r\n*0\r\n"), "array[1]\n  array[1]\n    array[0]\n");
}

TEST(Parser, Attributes) {
  // Top level: the attribute precedes the value at the same depth.
  EXPECT_EQ(one("|1\r\n+ttl\r\n:3\r\n:42\r\n"),
            "attribute[1]\n  simple 'ttl'\n  number '3'\nnumber '42'\n");
  // Nested, and the annotated value is itself an aggregate.
  EXPECT_EQ(one("*2\r\n|1\r\n+a\r\n+b\r\n*1\r\n:1\r\n:2\r\n"),
            "array[2]\n  attribute[1]\n    simple 'a'\n    simple 'b'\n  array[1]\n    number "
            "'1'\n  number '2'\n");
  EXPECT_EQ(one("|0\r\n+x\r\n"), "attribute[0]\nsimple 'x'\n");
  EXPECT_EQ(one("|1\r\n+a\r\n+b\r\n|1\r\n+c\r\n+d\r\n_\r\n"),
            "attribute[1]\n  simple 'a'\n  simple 'b'\nattribute[1]\n  simple 'c'\n  simple "
            "'d'\nnull\n");
  // Attribute inside an attribute's key.
  EXPECT_EQ(one("|1\r\n|1\r\n+x\r\n+y\r\n+k\r\n+v\r\n:1\r\n"),
            "attribute[1]\n  attribute[1]\n    simple 'x'\n    simple 'y'\n  simple 'k'\n  simple "
            "'v'\nnumber '1'\n");
}

TEST(Parser, Streamed) {
  EXPECT_EQ(one("$?\r\n;4\r\nHell\r\n;5\r\no wor\r\n;1\r\nd\r\n;0\r\n"), "blob 'Hello word'\n");
  EXPECT_EQ(one("$?\r\n;0\r\n"), "blob ''\n");
  EXPECT_EQ(one("*?\r\n:1\r\n:2\r\n:3\r\n.\r\n"),
            "array[3]\n  number '1'\n  number '2'\n  number '3'\n");
  EXPECT_EQ(one("%?\r\n+a\r\n:1\r\n+b\r\n:2\r\n.\r\n"),
            "map[2]\n  simple 'a'\n  number '1'\n  simple 'b'\n  number '2'\n");
  EXPECT_EQ(one("~?\r\n.\r\n"), "set[0]\n");
  EXPECT_EQ(one("*?\r\n$?\r\n;2\r\nab\r\n;0\r\n*?\r\n.\r\n|1\r\n+k\r\n+v\r\n:1\r\n.\r\n"),
            "array[3]\n  blob 'ab'\n  array[0]\n  attribute[1]\n    simple 'k'\n    simple 'v'\n "
            " number '1'\n");
  // Two streamed strings in one frame keep their own bytes.
  EXPECT_EQ(one("*2\r\n$?\r\n;1\r\na\r\n;0\r\n$?\r\n;2\r\nbc\r\n;0\r\n"),
            "array[2]\n  blob 'a'\n  blob 'bc'\n");
}

TEST(Parser, Pipeline) {
  auto o = feed_all("+OK\r\n:1\r\n*1\r\n$1\r\na\r\n");
  ASSERT_EQ(o.frames.size(), 3u);
  EXPECT_EQ(o.end, ParseResult::Status::complete);
  Parser p;
  std::string_view in = "+OK\r\n:1\r\n";
  auto r = p.parse(in);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.consumed, 5u);
  r = p.parse(in.substr(5));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.consumed, 4u);
}

TEST(Parser, Incomplete) {
  for (std::string_view s :
       {"", "+", "+OK", "+OK\r", "$3\r\nba", "$3\r\nbar\r", "*2\r\n:1\r\n", "|1\r\n+a\r\n+b\r\n",
        "$?\r\n;1\r\na\r\n", "*?\r\n:1\r\n", "$", "$1", "$1\r"}) {
    Parser p;
    auto r = p.parse(s);
    EXPECT_EQ(r.status, ParseResult::Status::incomplete) << s;
    EXPECT_TRUE(p.frame().empty());
  }
}

TEST(Parser, ResumesAfterBufferMoves) {
  // The caller's buffer is reallocated between calls: views must point at the final buffer.
  Parser p;
  std::string a = "*2\r\n$3\r\nfoo\r\n";
  ASSERT_EQ(p.parse(a).status, ParseResult::Status::incomplete);
  std::string b = a + "$3\r\nbar\r\n";
  a.assign(a.size(), 'X');
  auto r = p.parse(b);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(dump(p.frame()), "array[2]\n  blob 'foo'\n  blob 'bar'\n");
  EXPECT_EQ(p.frame()[1].value.data(), b.data() + 8);
}

TEST(Parser, Errors) {
  EXPECT_ERR("x", bad_type, 0u);
  EXPECT_ERR("*1\r\n@", bad_type, 4u);
  EXPECT_ERR("+OK\rx", bad_terminator, 4u);
  EXPECT_ERR(":12a\r\n", bad_number, 3u);
  EXPECT_ERR(":\r\n", bad_number, 1u);
  EXPECT_ERR(":-\r\n", bad_number, 2u);
  EXPECT_ERR(":9223372036854775808\r\n", bad_number, 19u);
  EXPECT_ERR(":-9223372036854775809\r\n", bad_number, 20u);
  EXPECT_ERR(",1.5x\r\n", bad_double, 4u);
  EXPECT_ERR(",\r\n", bad_double, 1u);
  EXPECT_ERR(",.\r\n", bad_double, 1u);
  EXPECT_ERR(",.5\r\n", bad_double, 1u);
  EXPECT_ERR(",5.\r\n", bad_double, 3u);
  EXPECT_ERR(",5.e1\r\n", bad_double, 3u);
  EXPECT_ERR(",1e+\r\n", bad_double, 4u);
  EXPECT_ERR(",nan(\r\n", bad_double, 1u);
  EXPECT_ERR(",1.5 \r\n", bad_double, 4u);
  EXPECT_ERR("+a\nb\r\n", bad_terminator, 2u);
  EXPECT_ERR("-a\n\r\n", bad_terminator, 2u);
  EXPECT_ERR(",1e\r\n", bad_double, 3u);
  EXPECT_ERR(",infx\r\n", bad_double, 1u);
  EXPECT_ERR("#x\r\n", bad_boolean, 1u);
  EXPECT_ERR("#\r\n", bad_boolean, 1u);
  EXPECT_ERR("#tt\r\n", bad_boolean, 2u);
  EXPECT_ERR("(12z\r\n", bad_big_number, 3u);
  EXPECT_ERR("(\r\n", bad_big_number, 1u);
  EXPECT_ERR("_x\r\n", bad_terminator, 1u);
  EXPECT_ERR("$x\r\n", bad_length, 1u);
  EXPECT_ERR("$-2\r\n", bad_length, 1u);
  EXPECT_ERR("$\r\n", bad_length, 1u);
  EXPECT_ERR("!-1\r\n", bad_length, 1u);
  EXPECT_ERR("$3\r\nfooX\r\n", bad_terminator, 7u);
  EXPECT_ERR("$3\r\nfoo\rX", bad_terminator, 8u);
  EXPECT_ERR("=3\r\ntxt\r\n", bad_verbatim, 7u);
  EXPECT_ERR("=5\r\ntxt-x\r\n", bad_verbatim, 7u);
  EXPECT_ERR("*x\r\n", bad_length, 1u);
  EXPECT_ERR("*-2\r\n", bad_length, 1u);
  EXPECT_ERR("%-1\r\n", bad_length, 1u);
  EXPECT_ERR(">?\r\n", bad_length, 1u);
  EXPECT_ERR("|?\r\n", bad_length, 1u);
  EXPECT_ERR(".\r\n", bad_stream, 0u);
  EXPECT_ERR("*1\r\n.\r\n", bad_stream, 4u);
  EXPECT_ERR(";1\r\na\r\n", bad_stream, 0u);
  EXPECT_ERR("$?\r\n+a\r\n", bad_stream, 4u);
  EXPECT_ERR("$?\r\n;x\r\n", bad_stream, 5u);
  EXPECT_ERR("$?\r\n;1\r\nab\r\n", bad_terminator, 9u);
  EXPECT_ERR("%?\r\n+a\r\n.\r\n", bad_stream, 8u);
  EXPECT_ERR("*?\r\n|1\r\n+a\r\n+b\r\n.\r\n", bad_stream, 16u);
  EXPECT_ERR("*?\r\n.x\r\n", bad_terminator, 5u);
}

// inf, -inf and nan exactly as the spec and Redis spell them (-nan: Redis < 7.2 printed a NaN with
// libc's %.17g); other spellings a libc may print are not RESP3, and case folding must not let
// control bytes through (0x08 | 0x20 is '(': "nan\b)" once passed as "nan(...)").
TEST(Parser, DoubleSpecialsOnlyAsRedisSpellsThem) {
  EXPECT_ERR(",nan\x08)\r\n", bad_double, 1u);
  EXPECT_ERR(",-nan\x08x)\r\n", bad_double, 2u);
  EXPECT_ERR(",nan(0x1)\r\n", bad_double, 1u);
  EXPECT_ERR(",nan()\r\n", bad_double, 1u);
  EXPECT_ERR(",NAN\r\n", bad_double, 1u);
  EXPECT_ERR(",NaN\r\n", bad_double, 1u);
  EXPECT_ERR(",-NaN\r\n", bad_double, 2u);
  EXPECT_ERR(",INF\r\n", bad_double, 1u);
  EXPECT_ERR(",-INF\r\n", bad_double, 2u);
  EXPECT_ERR(",Infinity\r\n", bad_double, 1u);
  EXPECT_ERR(",infinity\r\n", bad_double, 1u);
  EXPECT_ERR(",+inf\r\n", bad_double, 2u);  // the sign belongs to numbers; Redis never prints it
  EXPECT_ERR(",+nan\r\n", bad_double, 2u);
  EXPECT_ERR(",--inf\r\n", bad_double, 2u);
  EXPECT_ERR(",in\r\n", bad_double, 1u);
  EXPECT_ERR(",nanx\r\n", bad_double, 1u);
  // What Redis prints: %.17g (7.0) and fpconv (7.2) texts.
  EXPECT_EQ(one(",3.1415926535897931\r\n"), "double '3.1415926535897931'\n");
  EXPECT_EQ(one(",1.0000000000000001e-05\r\n"), "double '1.0000000000000001e-05'\n");
  EXPECT_EQ(one(",1e+300\r\n"), "double '1e+300'\n");
  EXPECT_EQ(one(",-0\r\n"), "double '-0'\n");
}

TEST(Parser, OverlongHeaderLinesFailAtTheSameOffsetHoweverSplit) {
  // Lengths, counts and numbers have at most 32 bytes before CR; no need to wait for the CR.
  const std::string digits(40, '1');
  for (const auto& [in, code] : std::vector<std::pair<std::string, ParseError>>{
           {"$" + digits, ParseError::bad_length},
           {"*" + digits + "\r\n", ParseError::bad_length},
           {":" + digits, ParseError::bad_number},
           {"#" + digits, ParseError::bad_boolean},
           {"_" + digits, ParseError::bad_terminator},
           {"*1\r\n:" + digits, ParseError::bad_number}}) {
    const std::size_t base = in.starts_with("*1\r\n") ? 4 : 0;
    Err e = err(in);
    EXPECT_EQ(e.e, code) << in;
    EXPECT_EQ(e.at, base + 33) << in;
  }
  // Too long even though its CR has arrived (the LF not yet): found by the fuzzer.
  EXPECT_EQ(err(":" + std::string(39, 'x') + "\r").at, 33u);
  for (std::size_t piece : {7u, 14u, 20u}) {
    const auto o =
        test::feed(":" + std::string(39, 'x') + "\r", [piece](std::size_t) { return piece; });
    EXPECT_EQ(o.error, ParseError::bad_number) << piece;
    EXPECT_EQ(o.error_at, 33u) << piece;
  }
  // A line of exactly 32 bytes is judged on its content.
  EXPECT_EQ(err(":" + std::string(32, '1') + "\r\n").e, ParseError::bad_number);
  EXPECT_EQ(err(":" + std::string(32, '1') + "\r\n").at, 20u);
  EXPECT_EQ(err("," + std::string(1025, '1')).e, ParseError::bad_double);
  // Simple strings and big numbers are bounded by max_blob.
  Limits l;
  l.max_blob = 3;
  EXPECT_EQ(err("+abcd", l).e, ParseError::blob_too_long);
  EXPECT_EQ(err("+abcd", l).at, 4u);
  EXPECT_EQ(err("-abcd\r\n", l).at, 4u);  // the single-value fast path applies it too
  EXPECT_EQ(err("(1234\r\n", l).at, 4u);
  EXPECT_EQ(feed_all("+abc\r\n", l).frames.size(), 1u);
  // Still incomplete while within bounds.
  EXPECT_EQ(Parser().parse(":" + std::string(32, '1')).status, ParseResult::Status::incomplete);
}

// A streamed aggregate is held to max_aggregate like a counted one (pairs for maps): anything but
// its '.' after the last allowed element fails there, at that element's first byte.
TEST(Parser, StreamedAggregatesKeepTheAggregateLimit) {
  Limits l;
  l.max_aggregate = 5;
  auto times = [](std::string_view s, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += s;
    return out;
  };
  EXPECT_EQ(feed_all("*5\r\n" + times(":1\r\n", 5), l).frames.size(), 1u);
  EXPECT_EQ(feed_all("*?\r\n" + times(":1\r\n", 5) + ".\r\n", l).frames.size(), 1u);
  EXPECT_EQ(feed_all("~?\r\n" + times(":1\r\n", 5) + ".\r\n", l).frames.size(), 1u);
  EXPECT_EQ(feed_all("%?\r\n" + times(":1\r\n", 10) + ".\r\n", l).frames.size(), 1u);
  for (const std::string head : {"*?\r\n", "~?\r\n"}) {
    const std::string in = head + times(":1\r\n", 6) + ".\r\n";
    const Err e = err(in, l);
    EXPECT_EQ(e.e, ParseError::aggregate_too_long) << in;
    EXPECT_EQ(e.at, 4u + 5 * 4) << in;
  }
  {
    const Err e = err("%?\r\n" + times(":1\r\n", 12) + ".\r\n", l);
    EXPECT_EQ(e.e, ParseError::aggregate_too_long);
    EXPECT_EQ(e.at, 4u + 10 * 4) << "the sixth pair's key";
  }
  // Attributes are not elements, but no value may follow the last allowed one.
  EXPECT_EQ(feed_all("*?\r\n|1\r\n+k\r\n+v\r\n" + times(":1\r\n", 5) + ".\r\n", l).frames.size(),
            1u);
  EXPECT_EQ(err("*?\r\n" + times(":1\r\n", 5) + "|1\r\n+k\r\n+v\r\n:1\r\n.\r\n", l).at, 4u + 5 * 4);
  // Elements count once whatever their size: streamed strings and nested streamed aggregates.
  EXPECT_EQ(feed_all("*?\r\n" + times("$?\r\n;1\r\na\r\n;0\r\n", 5) + ".\r\n", l).frames.size(),
            1u);
  EXPECT_EQ(err("*?\r\n" + times("$?\r\n;1\r\na\r\n;0\r\n", 6) + ".\r\n", l).at, 4u + 5 * 15);
  EXPECT_EQ(err("*1\r\n*?\r\n" + times(":1\r\n", 6) + ".\r\n", l).at, 8u + 5 * 4);
  EXPECT_EQ(err("*?\r\n*?\r\n" + times(":1\r\n", 6) + ".\r\n.\r\n", l).at, 8u + 5 * 4);
}

TEST(Parser, ErrorIsStickyUntilReset) {
  Parser p;
  auto r = p.parse("?");
  ASSERT_EQ(r.status, ParseResult::Status::error);
  EXPECT_EQ(p.parse("+OK\r\n").status, ParseResult::Status::error);
  EXPECT_TRUE(p.frame().empty());
  p.reset();
  EXPECT_TRUE(p.parse("+OK\r\n").ok());
  EXPECT_EQ(make_error_code(r.error).message(), "unknown type byte");
  EXPECT_STREQ(make_error_code(r.error).category().name(), "lockwire.resp");
  std::error_code ec = ParseError::bad_length;
  EXPECT_EQ(ec, make_error_code(ParseError::bad_length));
}

TEST(Parser, ResetDropsPartialFrame) {
  Parser p;
  ASSERT_EQ(p.parse("*3\r\n:1\r\n").status, ParseResult::Status::incomplete);
  p.reset();
  auto r = p.parse("+OK\r\n");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(dump(p.frame()), "simple 'OK'\n");
}

TEST(Parser, Limits) {
  Limits l;
  l.max_depth = 2;
  EXPECT_EQ(feed_all("*1\r\n*1\r\n:1\r\n", l).frames.size(), 1u) << "depth 2 allowed";
  {
    Err e = err("*1\r\n*1\r\n*1\r\n:1\r\n", l);
    EXPECT_EQ(e.e, ParseError::depth_exceeded);
    EXPECT_EQ(e.at, 8u);
  }
  l = {};
  l.max_blob = 3;
  EXPECT_EQ(err("$4\r\nabcd\r\n", l).e, ParseError::blob_too_long);
  EXPECT_EQ(err("$?\r\n;2\r\nab\r\n;2\r\ncd\r\n;0\r\n", l).e, ParseError::blob_too_long);
  EXPECT_EQ(err("=9\r\ntxt:abcde\r\n", l).at, 1u);
  l = {};
  l.max_aggregate = 2;
  EXPECT_EQ(err("*3\r\n", l).e, ParseError::aggregate_too_long);
  EXPECT_EQ(err("%3\r\n", l).e, ParseError::aggregate_too_long);
  // Default limits: 64 levels ok, 65 not.
  std::string deep;
  for (int i = 0; i < 64; ++i) deep += "*1\r\n";
  deep += ":1\r\n";
  EXPECT_EQ(feed_all(deep).frames.size(), 1u);
  EXPECT_EQ(feed_all("*1\r\n" + deep).error, ParseError::depth_exceeded);
  // Huge declared length: incomplete, and nothing is sized by it.
  EXPECT_EQ(Parser().parse("*100000000\r\n").status, ParseResult::Status::incomplete);
  EXPECT_EQ(Parser().parse("$536870912\r\n").status, ParseResult::Status::incomplete);
  EXPECT_EQ(err("$536870913\r\n").e, ParseError::blob_too_long);
  EXPECT_EQ(err("*99999999999999999999999\r\n").e, ParseError::bad_length);
}

}  // namespace
}  // namespace lockwire::resp
