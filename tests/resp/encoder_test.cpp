#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "lockwire/resp/encoder.hpp"
#include "lockwire/resp/parser.hpp"
#include "lockwire/resp/reply.hpp"
#include "testutil.hpp"

namespace lockwire::resp {
namespace {

TEST(Encoder, Commands) {
  std::string out;
  std::vector<std::string_view> args{"SET", "k", "v"};
  append_command(out, args);
  EXPECT_EQ(out, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n");
  out.clear();
  std::string key = "lock:{a}";
  append_command(out, "SET", key, std::string_view("x"), "PX", 3000, -7LL, 0u);
  EXPECT_EQ(
      out,
      "*7\r\n$3\r\nSET\r\n$8\r\nlock:{a}\r\n$1\r\nx\r\n$2\r\nPX\r\n$4\r\n3000\r\n$2\r\n-7\r\n$"
      "1\r\n0\r\n");
  out.clear();
  append_command(out, {"PING"});
  EXPECT_EQ(out, "*1\r\n$4\r\nPING\r\n");
  out.clear();
  append_command(out, "GET", "");
  EXPECT_EQ(out, "*2\r\n$3\r\nGET\r\n$0\r\n\r\n");
  out.clear();
  append_command(out, "INCRBY", "k", std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(out, "*3\r\n$6\r\nINCRBY\r\n$1\r\nk\r\n$20\r\n-9223372036854775808\r\n");
}

TEST(Encoder, Resp3Replies) {
  std::string o;
  append_simple(o, "OK");
  append_error(o, "ERR bad\r\nthing");
  append_blob(o, "bar");
  append_blob_error(o, "SYNTAX x");
  append_verbatim(o, "txt", "hi");
  append_number(o, -12);
  append_double(o, 1.5);
  append_bool(o, true);
  append_bool(o, false);
  append_big_number(o, "-123456789012345678901234567890");
  append_null(o);
  append_null_array(o);
  EXPECT_EQ(o,
            "+OK\r\n-ERR bad  thing\r\n$3\r\nbar\r\n!8\r\nSYNTAX "
            "x\r\n=6\r\ntxt:hi\r\n:-12\r\n,1.5\r\n#t\r\n#"
            "f\r\n(-123456789012345678901234567890\r\n_\r\n_\r\n");
  o.clear();
  append_array_header(o, 2);
  append_map_header(o, 3);
  append_set_header(o, 4);
  append_push_header(o, 5);
  append_attribute_header(o, 1);
  EXPECT_EQ(o, "*2\r\n%3\r\n~4\r\n>5\r\n|1\r\n");
  o.clear();
  append_stream_string_begin(o);
  append_stream_chunk(o, "ab");
  append_stream_chunk(o, "");
  append_stream_string_end(o);
  append_stream_aggregate_begin(o, StreamKind::map);
  append_stream_aggregate_end(o);
  EXPECT_EQ(o, "$?\r\n;2\r\nab\r\n;0\r\n%?\r\n.\r\n");
}

TEST(Encoder, Resp2Fallbacks) {
  std::string o;
  const Proto p2 = Proto::resp2;
  append_blob_error(o, "SYNTAX x", p2);
  append_verbatim(o, "txt", "hi", p2);
  append_double(o, 1.5, p2);
  append_bool(o, true, p2);
  append_bool(o, false, p2);
  append_big_number(o, "123", p2);
  append_null(o, p2);
  append_null_array(o, p2);
  append_map_header(o, 3, p2);
  append_set_header(o, 4, p2);
  append_push_header(o, 5, p2);
  EXPECT_EQ(
      o,
      "-SYNTAX "
      "x\r\n$2\r\nhi\r\n$3\r\n1.5\r\n:1\r\n:0\r\n$3\r\n123\r\n$-1\r\n*-1\r\n*6\r\n*4\r\n*5\r\n");
}

TEST(Encoder, DoublesAsRedis70) {
  auto f = [](double d, Proto p = Proto::resp3) {
    std::string o;
    append_double(o, d, p);
    return o;
  };
  EXPECT_EQ(f(0.1), ",0.10000000000000001\r\n");
  EXPECT_EQ(f(3.0), ",3\r\n");
  EXPECT_EQ(f(-0.0), ",-0\r\n");
  EXPECT_EQ(f(1e300), ",1.0000000000000001e+300\r\n");
  EXPECT_EQ(f(1.5e-7), ",1.4999999999999999e-07\r\n");
  EXPECT_EQ(f(std::numeric_limits<double>::infinity()), ",inf\r\n");
  EXPECT_EQ(f(-std::numeric_limits<double>::infinity()), ",-inf\r\n");
  EXPECT_EQ(f(std::numeric_limits<double>::quiet_NaN()), ",nan\r\n");
  EXPECT_EQ(f(std::numeric_limits<double>::infinity(), Proto::resp2), "$3\r\ninf\r\n");
  EXPECT_EQ(f(-std::numeric_limits<double>::infinity(), Proto::resp2), "$4\r\n-inf\r\n");
  EXPECT_EQ(f(0.1, Proto::resp2), "$19\r\n0.10000000000000001\r\n");
}

TEST(Encoder, RoundTrip) {
  std::string o;
  append_push_header(o, 3);
  append_simple(o, "invalidate");
  append_attribute_header(o, 1);
  append_blob(o, "ttl");
  append_double(o, 2.5);
  append_map_header(o, 2);
  append_blob(o, std::string("\0\r\n", 3));
  append_verbatim(o, "mkd", "# x");
  append_big_number(o, "99999999999999999999");
  append_set_header(o, 2);
  append_bool(o, true);
  append_null(o);
  append_stream_string_begin(o);
  append_stream_chunk(o, "he");
  append_stream_chunk(o, "llo");
  append_stream_string_end(o);
  Parser p;
  auto r = p.parse(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.consumed, o.size());
  const Frame f = p.frame();
  ASSERT_EQ(f.size(), 13u);
  EXPECT_EQ(f[0].type, Type::push);
  EXPECT_EQ(f[0].size, 3u);
  EXPECT_TRUE(equals(f[1], "invalidate"));
  EXPECT_EQ(f[2].type, Type::attribute);
  EXPECT_EQ(to_double(f[4]), 2.5);
  EXPECT_EQ(f[5].type, Type::map);
  EXPECT_EQ(f[6].value, std::string_view("\0\r\n", 3));
  EXPECT_EQ(f[7].format, "mkd");
  EXPECT_EQ(f[7].value, "# x");
  EXPECT_EQ(f[8].value, "99999999999999999999");
  EXPECT_EQ(f[9].type, Type::set);
  EXPECT_EQ(f[10].value, "t");
  EXPECT_EQ(f[11].type, Type::null);
  EXPECT_EQ(f[12].type, Type::blob_string);
  EXPECT_EQ(f[12].value, "hello");
  EXPECT_EQ(f[12].depth, 1u);
}

TEST(Encoder, DoubleRoundTripIsExact) {
  for (double d :
       {0.1, 1.0 / 3, 123456789.123456789, 1e-300, 5e-324, 1.7976931348623157e308, -2.5, 0.0}) {
    std::string o;
    append_double(o, d);
    Parser p;
    ASSERT_TRUE(p.parse(o).ok());
    EXPECT_EQ(to_double(p.frame()[0]), d) << o;
  }
}

}  // namespace
}  // namespace lockwire::resp
