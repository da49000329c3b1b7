// Every example of the RESP3 specification (redis/redis-specifications protocol/RESP3.md).
#include <gtest/gtest.h>

#include <string>

#include "testutil.hpp"

namespace lockwire::resp {
namespace {

std::string only(std::string_view in) {
  const auto o = test::feed_all(in);
  EXPECT_EQ(o.end, ParseResult::Status::complete) << in;
  EXPECT_EQ(o.frames.size(), 1u) << in;
  EXPECT_EQ(test::feed_bytes(in), o) << in;
  return o.frames.empty() ? std::string() : o.frames[0];
}

TEST(Spec, Conventions) {
  EXPECT_EQ(only("*1\r\n$1\r\nA\r\n"), "array[1]\n  blob 'A'\n");
  EXPECT_EQ(only("*2\r\n*2\r\n:1\r\n:2\r\n#t\r\n"),
            "array[2]\n  array[2]\n    number '1'\n    number '2'\n  bool 't'\n");
}

TEST(Spec, SimpleTypes) {
  EXPECT_EQ(only("$11\r\nhello world\r\n"), "blob 'hello world'\n");
  EXPECT_EQ(only("$0\r\n\r\n"), "blob ''\n");
  EXPECT_EQ(only("+hello world\r\n"), "simple 'hello world'\n");
  EXPECT_EQ(only("-ERR this is the error description\r\n"),
            "error 'ERR this is the error description'\n");
  EXPECT_EQ(only(":1234\r\n"), "number '1234'\n");
  EXPECT_EQ(only("_\r\n"), "null\n");
  EXPECT_EQ(only(",1.23\r\n"), "double '1.23'\n");
  EXPECT_EQ(only(":10\r\n"), "number '10'\n");
  EXPECT_EQ(only(",10\r\n"), "double '10'\n");
  EXPECT_EQ(only(",inf\r\n"), "double 'inf'\n");
  EXPECT_EQ(only(",-inf\r\n"), "double '-inf'\n");
  EXPECT_EQ(only(",nan\r\n"), "double 'nan'\n");
  EXPECT_EQ(only(",-nan\r\n"), "double '-nan'\n");  // earlier spec versions, Redis < 7.2
  EXPECT_EQ(only("#t\r\n"), "bool 't'\n");
  EXPECT_EQ(only("#f\r\n"), "bool 'f'\n");
  EXPECT_EQ(only("!21\r\nSYNTAX invalid syntax\r\n"), "blob_error 'SYNTAX invalid syntax'\n");
  EXPECT_EQ(only("=15\r\ntxt:Some string\r\n"), "verbatim 'Some string' (txt)\n");
  EXPECT_EQ(only("(3492890328409238509324850943850943825024385\r\n"),
            "big '3492890328409238509324850943850943825024385'\n");
}

TEST(Spec, Aggregates) {
  EXPECT_EQ(only("*3\r\n:1\r\n:2\r\n:3\r\n"),
            "array[3]\n  number '1'\n  number '2'\n  number '3'\n");
  EXPECT_EQ(only("*2\r\n*3\r\n:1\r\n$5\r\nhello\r\n:2\r\n#f\r\n"),
            "array[2]\n  array[3]\n    number '1'\n    blob 'hello'\n    number '2'\n  bool 'f'\n");
  EXPECT_EQ(only("%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n"),
            "map[2]\n  simple 'first'\n  number '1'\n  simple 'second'\n  number '2'\n");
  EXPECT_EQ(only("~5\r\n+orange\r\n+apple\r\n#t\r\n:100\r\n:999\r\n"),
            "set[5]\n  simple 'orange'\n  simple 'apple'\n  bool 't'\n  number '100'\n  number "
            "'999'\n");
}

TEST(Spec, Attributes) {
  EXPECT_EQ(
      only("|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n*2\r\n:"
           "2039123\r\n:9543892\r\n"),
      "attribute[1]\n  simple 'key-popularity'\n  map[2]\n    blob 'a'\n    double "
      "'0.1923'\n    blob 'b'\n    double '0.0012'\narray[2]\n  number '2039123'\n  number "
      "'9543892'\n");
  EXPECT_EQ(only("*3\r\n:1\r\n:2\r\n|1\r\n+ttl\r\n:3600\r\n:3\r\n"),
            "array[3]\n  number '1'\n  number '2'\n  attribute[1]\n    simple 'ttl'\n    number "
            "'3600'\n  number '3'\n");
}

TEST(Spec, Push) {
  EXPECT_EQ(
      only(">3\r\n+message\r\n+somechannel\r\n+this is the message\r\n"),
      "push[3]\n  simple 'message'\n  simple 'somechannel'\n  simple 'this is the message'\n");
  // A push and a reply in either order.
  const std::string push = ">3\r\n+message\r\n+somechannel\r\n+this is the message\r\n";
  const std::string reply = "$9\r\nGet-Reply\r\n";
  for (const std::string& s : {push + reply, reply + push}) {
    const auto o = test::feed_all(s);
    ASSERT_EQ(o.frames.size(), 2u);
    EXPECT_EQ(test::feed_bytes(s), o);
  }
}

TEST(Spec, Streamed) {
  EXPECT_EQ(only("$?\r\n;4\r\nHell\r\n;5\r\no wor\r\n;1\r\nd\r\n;0\r\n"), "blob 'Hello word'\n");
  EXPECT_EQ(only("*?\r\n:1\r\n:2\r\n:3\r\n.\r\n"),
            "array[3]\n  number '1'\n  number '2'\n  number '3'\n");
  EXPECT_EQ(only("%?\r\n+a\r\n:1\r\n+b\r\n:2\r\n.\r\n"),
            "map[2]\n  simple 'a'\n  number '1'\n  simple 'b'\n  number '2'\n");
  EXPECT_EQ(only("~?\r\n+a\r\n.\r\n"), "set[1]\n  simple 'a'\n");
}

TEST(Spec, HelloErrors) {
  EXPECT_EQ(only("-NOPROTO sorry this protocol version is not supported\r\n"),
            "error 'NOPROTO sorry this protocol version is not supported'\n");
  EXPECT_EQ(only("-ERR unknown command 'HELLO'\r\n"), "error 'ERR unknown command 'HELLO''\n");
}

}  // namespace
}  // namespace lockwire::resp
