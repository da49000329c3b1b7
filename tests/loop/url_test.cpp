// parse_url: redis-specifications uri/redis.txt and uri/rediss.txt, plus unix:// and lockwire's
// query parameters; every malformed input is a clear error that leaves the options untouched.
#include <gtest/gtest.h>

#include "lockwire/loop/connection.hpp"

namespace lockwire::loop {
namespace {

ConnectionOptions parse_ok(std::string_view url) {
  ConnectionOptions o;
  std::string why;
  const auto ec = parse_url(url, o, &why);
  EXPECT_FALSE(ec) << url << ": " << why;
  return o;
}

std::string parse_err(std::string_view url) {
  ConnectionOptions o;
  o.client_name = "untouched";
  o.db = 7;
  std::string why;
  const auto ec = parse_url(url, o, &why);
  EXPECT_EQ(ec, Errc::bad_url) << url;
  EXPECT_FALSE(why.empty()) << url;
  EXPECT_EQ(o.client_name, "untouched") << url;
  EXPECT_EQ(o.db, 7) << url;
  return why;
}

TEST(Url, SpecExampleAndDefaults) {
  auto o = parse_ok("redis://user:secret@localhost:6380/2");
  EXPECT_EQ(o.endpoint.kind, Endpoint::Kind::tcp);
  EXPECT_EQ(o.endpoint.host, "localhost");
  EXPECT_EQ(o.endpoint.port, 6380);
  EXPECT_EQ(o.username, "user");
  EXPECT_EQ(o.password, "secret");
  EXPECT_EQ(o.db, 2);
  EXPECT_FALSE(o.endpoint.tls);

  o = parse_ok("redis://");
  EXPECT_EQ(o.endpoint.host, "localhost");
  EXPECT_EQ(o.endpoint.port, 6379);
  EXPECT_EQ(o.db, 0);
  EXPECT_TRUE(o.password.empty());

  o = parse_ok("REDIS://10.1.2.3/");
  EXPECT_EQ(o.endpoint.host, "10.1.2.3");
  EXPECT_EQ(o.endpoint.port, 6379);
}

TEST(Url, PasswordOnlyUserOnlyAndPercentEncoding) {
  auto o = parse_ok("redis://:p%40ss%3Aw%2Frd@h");
  EXPECT_EQ(o.username, "");
  EXPECT_EQ(o.password, "p@ss:w/rd");
  o = parse_ok("redis://alice@h");
  EXPECT_EQ(o.username, "alice");
  EXPECT_EQ(o.password, "");
  o = parse_ok("redis://a+b:c+d@h");  // '+' is literal, not a space
  EXPECT_EQ(o.username, "a+b");
  EXPECT_EQ(o.password, "c+d");
  // The last '@' ends the user info, so an unencoded '@' in a password still works.
  o = parse_ok("redis://u:p@ss@h:1");
  EXPECT_EQ(o.password, "p@ss");
  EXPECT_EQ(o.endpoint.host, "h");
}

TEST(Url, Ipv6Hosts) {
  auto o = parse_ok("redis://[::1]:7000/3");
  EXPECT_EQ(o.endpoint.host, "::1");
  EXPECT_EQ(o.endpoint.port, 7000);
  EXPECT_EQ(o.db, 3);
  o = parse_ok("redis://[2001:db8::7]");
  EXPECT_EQ(o.endpoint.host, "2001:db8::7");
  EXPECT_EQ(o.endpoint.port, 6379);
}

TEST(Url, QueryParameters) {
  auto o = parse_ok(
      "redis://h?db=4&password=pw&user=bob&protocol=3&client_name=svc&connect_timeout=250");
  EXPECT_EQ(o.db, 4);
  EXPECT_EQ(o.password, "pw");
  EXPECT_EQ(o.username, "bob");
  EXPECT_EQ(o.client_name, "svc");
  EXPECT_EQ(o.connect_timeout, std::chrono::milliseconds(250));
  // Same value twice is not a conflict.
  o = parse_ok("redis://:pw@h/4?db=4&password=pw");
  EXPECT_EQ(o.db, 4);
  EXPECT_EQ(o.password, "pw");
}

TEST(Url, Rediss) {
  auto o = parse_ok("rediss://h:6390");
  ASSERT_TRUE(o.endpoint.tls);
  EXPECT_TRUE(o.endpoint.tls->verify_peer);  // on by default
  EXPECT_TRUE(o.endpoint.tls->ca_file.empty());
  o = parse_ok(
      "rediss://h?ca_file=%2Ftmp%2Fca.pem&cert_file=c.pem&key_file=k.pem&sni=redis.example&"
      "verify_peer=false&ca_dir=/etc/ssl/certs");
  ASSERT_TRUE(o.endpoint.tls);
  EXPECT_EQ(o.endpoint.tls->ca_file, "/tmp/ca.pem");
  EXPECT_EQ(o.endpoint.tls->ca_dir, "/etc/ssl/certs");
  EXPECT_EQ(o.endpoint.tls->cert_file, "c.pem");
  EXPECT_EQ(o.endpoint.tls->key_file, "k.pem");
  EXPECT_EQ(o.endpoint.tls->server_name, "redis.example");
  EXPECT_FALSE(o.endpoint.tls->verify_peer);
  o = parse_ok("redis://h?ssl=true");  // the ServiceStack spelling in rediss.txt
  EXPECT_TRUE(o.endpoint.tls);
  o = parse_ok("redis://h?ssl=false");
  EXPECT_FALSE(o.endpoint.tls);
}

TEST(Url, UnixSockets) {
  auto o = parse_ok("unix:///var/run/redis/redis.sock?db=3&password=pw");
  EXPECT_EQ(o.endpoint.kind, Endpoint::Kind::unix_socket);
  EXPECT_EQ(o.endpoint.path, "/var/run/redis/redis.sock");
  EXPECT_EQ(o.db, 3);
  EXPECT_EQ(o.password, "pw");
  o = parse_ok("unix://bob:pw@/tmp/r%20s.sock");
  EXPECT_EQ(o.endpoint.path, "/tmp/r s.sock");
  EXPECT_EQ(o.username, "bob");
  EXPECT_EQ(o.password, "pw");
}

TEST(Url, ParsingReplacesEndpointAndCredentialsButKeepsOtherOptions) {
  ConnectionOptions o;
  o.password = "old";
  o.db = 9;
  o.health_check_interval = std::chrono::seconds(3);
  ASSERT_FALSE(parse_url("redis://h", o));
  EXPECT_EQ(o.password, "");
  EXPECT_EQ(o.db, 0);
  EXPECT_EQ(o.health_check_interval, std::chrono::seconds(3));
}

TEST(Url, MalformedUrlsAreClearErrors) {
  EXPECT_NE(parse_err("localhost:6379").find("scheme"), std::string::npos);
  EXPECT_NE(parse_err("http://h").find("unknown scheme"), std::string::npos);
  EXPECT_NE(parse_err("redis://h:0").find("port"), std::string::npos);
  EXPECT_NE(parse_err("redis://h:65536").find("port"), std::string::npos);
  EXPECT_NE(parse_err("redis://h:6x").find("port"), std::string::npos);
  EXPECT_NE(parse_err("redis://h:").find("port"), std::string::npos);
  EXPECT_NE(parse_err("redis://h/01").find("leading zeros"), std::string::npos);
  EXPECT_NE(parse_err("redis://h/db1").find("database"), std::string::npos);
  EXPECT_NE(parse_err("redis://h/1/2").find("database"), std::string::npos);
  EXPECT_NE(parse_err("redis://h/-1").find("database"), std::string::npos);
  EXPECT_NE(parse_err("redis://h/99999999999").find("database"), std::string::npos);
  EXPECT_NE(parse_err("redis://h/1?db=2").find("differently"), std::string::npos);
  EXPECT_NE(parse_err("redis://:a@h?password=b").find("differently"), std::string::npos);
  EXPECT_NE(parse_err("redis://h?db=x").find("db"), std::string::npos);
  EXPECT_NE(parse_err("redis://h?protocol=2").find("RESP3"), std::string::npos);
  EXPECT_NE(parse_err("redis://h?foo=bar").find("unknown query parameter 'foo'"),
            std::string::npos);
  EXPECT_NE(parse_err("redis://h?db").find("no '=value'"), std::string::npos);
  EXPECT_NE(parse_err("redis://h#frag").find("fragment"), std::string::npos);
  EXPECT_NE(parse_err("redis://h o").find("space"), std::string::npos);
  EXPECT_NE(parse_err(std::string_view("redis://h\0", 10)).find("control"), std::string::npos);
  EXPECT_NE(parse_err("redis://:%zz@h").find("percent"), std::string::npos);
  EXPECT_NE(parse_err("redis://:%4@h").find("percent"), std::string::npos);
  EXPECT_NE(parse_err("redis://h!x").find("invalid character"), std::string::npos);
  EXPECT_NE(parse_err("redis://[::1").find("IPv6"), std::string::npos);
  EXPECT_NE(parse_err("redis://[]:1").find("IPv6"), std::string::npos);
  EXPECT_NE(parse_err("redis://[::1]x").find("after ']'"), std::string::npos);
  EXPECT_NE(parse_err("redis://[zz::1]").find("IPv6"), std::string::npos);
  EXPECT_NE(parse_err("redis://h?ca_file=x").find("without TLS"), std::string::npos);
  EXPECT_NE(parse_err("rediss://h?ssl=false").find("contradictory"), std::string::npos);
  EXPECT_NE(parse_err("rediss://h?cert_file=c").find("together"), std::string::npos);
  EXPECT_NE(parse_err("rediss://h?verify_peer=maybe").find("true or false"), std::string::npos);
  EXPECT_NE(parse_err("redis://h?connect_timeout=0").find("connect_timeout"), std::string::npos);
  EXPECT_NE(parse_err("unix://").find("path"), std::string::npos);
  EXPECT_NE(parse_err("unix://host/tmp/s").find("host part"), std::string::npos);
  EXPECT_NE(parse_err("unix:///").find("path"), std::string::npos);
  EXPECT_NE(parse_err("unix:///tmp/a%00b").find("NUL"), std::string::npos);
  EXPECT_NE(parse_err(std::string(70000, 'a')).find("64 KiB"), std::string::npos);
}

TEST(Url, ErrorCodeHasAMessage) {
  EXPECT_EQ(make_error_code(Errc::bad_url).message(), "malformed Redis URL");
  EXPECT_STREQ(make_error_code(Errc::bad_url).category().name(), "lockwire.connection");
}

}  // namespace
}  // namespace lockwire::loop
