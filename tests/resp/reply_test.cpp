#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "lockwire/resp/parser.hpp"
#include "lockwire/resp/reply.hpp"
#include "testutil.hpp"

namespace lockwire::resp {
namespace {

TEST(Reply, SiblingsAndAttributes) {
  const std::string in = "|1\r\n+k\r\n+v\r\n*3\r\n:1\r\n|1\r\n+a\r\n+b\r\n*1\r\n:2\r\n:3\r\n";
  Parser p;
  ASSERT_TRUE(p.parse(in).ok());
  const Frame f = p.frame();
  EXPECT_EQ(next_sibling(f, 0), 3u);
  EXPECT_EQ(value_index(f), 3u);
  EXPECT_EQ(f[3].type, Type::array);
  EXPECT_EQ(next_sibling(f, 3), f.size());
  std::size_t e = first_element(f, 3);
  EXPECT_EQ(to_int64(f[e]), 1);
  e = next_element(f, e);
  EXPECT_EQ(f[e].type, Type::array);  // attribute skipped
  e = next_element(f, e);
  EXPECT_EQ(to_int64(f[e]), 3);
  std::vector<std::size_t> idx;
  elements(f, 3, idx);
  ASSERT_EQ(idx.size(), 3u);
  EXPECT_EQ(idx[2], e);
  EXPECT_EQ(next_element(f, e), f.size());
}

TEST(Reply, Conversions) {
  Node n;
  n.type = Type::number;
  n.value = "-42";
  EXPECT_EQ(to_int64(n), -42);
  EXPECT_EQ(to_double(n), -42.0);
  n.type = Type::blob_string;
  n.value = "17";
  EXPECT_EQ(to_int64(n), 17);
  n.value = "17x";
  EXPECT_FALSE(to_int64(n));
  n.value = "";
  EXPECT_FALSE(to_int64(n));
  n.value = "99999999999999999999";
  EXPECT_FALSE(to_int64(n));
  n.type = Type::double_;
  n.value = "-inf";
  EXPECT_EQ(to_double(n), -INFINITY);
  n.value = "nan";
  ASSERT_TRUE(to_double(n));
  EXPECT_TRUE(std::isnan(*to_double(n)));
  n.value = "1.5e3";
  EXPECT_EQ(to_double(n), 1500.0);
  n.value = "+2";
  EXPECT_EQ(to_double(n), 2.0);
  n.value = "--2";
  EXPECT_FALSE(to_double(n));
  n.type = Type::array;
  EXPECT_FALSE(to_int64(n));
  EXPECT_FALSE(to_double(n));
}

TEST(Reply, ErrorsAndEquality) {
  Parser p;
  ASSERT_TRUE(p.parse("-WRONGTYPE Operation against a key\r\n").ok());
  EXPECT_TRUE(is_error(p.frame()));
  EXPECT_EQ(error_code(p.frame()[0]), "WRONGTYPE");
  ASSERT_TRUE(p.parse("|1\r\n+a\r\n+b\r\n!3\r\nERR\r\n").ok());
  EXPECT_TRUE(is_error(p.frame()));
  EXPECT_EQ(error_code(p.frame()[3]), "ERR");
  ASSERT_TRUE(p.parse("+OK\r\n").ok());
  EXPECT_FALSE(is_error(p.frame()));
  EXPECT_TRUE(equals(p.frame()[0], "OK"));
  EXPECT_FALSE(equals(p.frame()[0], "ok"));
  EXPECT_TRUE(iequals(p.frame()[0], "ok"));
  EXPECT_FALSE(is_error(Frame{}));
}

TEST(Reply, OwnedFrameOutlivesInput) {
  OwnedFrame owned;
  std::string dumped;
  {
    std::string in = "*2\r\n=7\r\ntxt:abc\r\n$?\r\n;2\r\nxy\r\n;0\r\n";
    Parser p;
    ASSERT_TRUE(p.parse(in).ok());
    dumped = test::dump(p.frame());
    owned = OwnedFrame(p.frame());
    in.assign(in.size(), '#');
    p.reset();
  }
  EXPECT_EQ(test::dump(owned.frame()), dumped);
  OwnedFrame copy = owned;
  OwnedFrame moved = std::move(owned);
  EXPECT_EQ(test::dump(copy.frame()), dumped);
  EXPECT_EQ(test::dump(moved.frame()), dumped);
  EXPECT_TRUE(same_frame(copy.frame(), moved.frame()));
  EXPECT_NE(copy[1].value.data(), moved[1].value.data());
}

}  // namespace
}  // namespace lockwire::resp
