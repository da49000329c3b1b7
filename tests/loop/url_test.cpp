// parse_url: redis-specifications uri/redis.txt and uri/rediss.txt, plus unix://, lockwire's
// query parameters, seed lists and Lettuce's redis[s]-sentinel:// form; every malformed input is
// a clear error that leaves the options untouched.
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

TEST(Url, SingleHostUrlsHaveOneSeedAndNoSentinel) {
  auto o = parse_ok("rediss://h:6390/2");
  ASSERT_EQ(o.seeds.size(), 1u);
  EXPECT_EQ(o.seeds[0].host, "h");
  EXPECT_EQ(o.seeds[0].port, 6390);
  EXPECT_TRUE(o.seeds[0].tls);
  EXPECT_FALSE(o.sentinel);
  o = parse_ok("unix:///tmp/r.sock");
  ASSERT_EQ(o.seeds.size(), 1u);
  EXPECT_EQ(o.seeds[0].path, "/tmp/r.sock");
}

TEST(Url, SeedLists) {
  auto o = parse_ok("redis://u:pw@h1:7000,[::1]:7001,h3/3?client_name=c");
  ASSERT_EQ(o.seeds.size(), 3u);
  EXPECT_EQ(o.seeds[0].host, "h1");
  EXPECT_EQ(o.seeds[0].port, 7000);
  EXPECT_EQ(o.seeds[1].host, "::1");
  EXPECT_EQ(o.seeds[1].port, 7001);
  EXPECT_EQ(o.seeds[2].host, "h3");
  EXPECT_EQ(o.seeds[2].port, 6379);  // the default port for each host
  EXPECT_EQ(o.endpoint.host, "h1");  // the connection itself uses the first
  EXPECT_EQ(o.endpoint.port, 7000);
  EXPECT_EQ(o.username, "u");
  EXPECT_EQ(o.password, "pw");
  EXPECT_EQ(o.db, 3);
  EXPECT_FALSE(o.sentinel);
  o = parse_ok("rediss://a:1,b:2?ca_file=ca.pem");
  ASSERT_EQ(o.seeds.size(), 2u);
  for (const Endpoint& e : o.seeds) {
    ASSERT_TRUE(e.tls);
    EXPECT_EQ(e.tls->ca_file, "ca.pem");
  }
}

TEST(Url, LettuceSentinelForm) {
  auto o = parse_ok("redis-sentinel://s1,s2:26380,[::1]/2#mymaster");
  ASSERT_TRUE(o.sentinel);
  EXPECT_EQ(o.sentinel->master_name, "mymaster");
  EXPECT_TRUE(o.sentinel->username.empty());
  EXPECT_TRUE(o.sentinel->password.empty());
  ASSERT_EQ(o.seeds.size(), 3u);
  EXPECT_EQ(o.seeds[0].host, "s1");
  EXPECT_EQ(o.seeds[0].port, 26379);  // the sentinel port by default
  EXPECT_EQ(o.seeds[1].port, 26380);
  EXPECT_EQ(o.seeds[2].host, "::1");
  EXPECT_EQ(o.seeds[2].port, 26379);
  EXPECT_EQ(o.endpoint.host, "s1");
  EXPECT_EQ(o.db, 2);
  EXPECT_FALSE(o.endpoint.tls);

  // One sentinel; a percent-encoded master name; Lettuce's sentinelMasterId.
  o = parse_ok("REDIS-SENTINEL://10.0.0.1#my%20master");
  ASSERT_TRUE(o.sentinel);
  EXPECT_EQ(o.sentinel->master_name, "my master");
  ASSERT_EQ(o.seeds.size(), 1u);
  EXPECT_EQ(o.seeds[0].port, 26379);
  o = parse_ok("redis-sentinel://h?sentinelMasterId=m1");
  EXPECT_EQ(o.sentinel->master_name, "m1");
  o = parse_ok("redis-sentinel://h?sentinelMasterId=m1#m1");  // the same twice is fine
  EXPECT_EQ(o.sentinel->master_name, "m1");
}

TEST(Url, SentinelCredentialsAreSeparateFromTheDataNodes) {
  auto o = parse_ok(
      "redis-sentinel://app:datapw@s1:1,s2:2/1?sentinel_username=sent&sentinel_password=s%40pw"
      "&client_name=svc#m");
  EXPECT_EQ(o.username, "app");  // the user info is for the data nodes
  EXPECT_EQ(o.password, "datapw");
  ASSERT_TRUE(o.sentinel);
  EXPECT_EQ(o.sentinel->username, "sent");
  EXPECT_EQ(o.sentinel->password, "s@pw");
  EXPECT_EQ(o.client_name, "svc");
  o = parse_ok("redis-sentinel://:datapw@s1?sentinel_user=u#m");
  EXPECT_EQ(o.sentinel->username, "u");
  EXPECT_TRUE(o.sentinel->password.empty());  // no AUTH to the sentinels without it
  EXPECT_EQ(o.password, "datapw");
}

TEST(Url, RedissSentinelIsTlsToEverything) {
  auto o = parse_ok("rediss-sentinel://s1,s2?ca_file=ca.pem&sni=redis.example#m");
  ASSERT_TRUE(o.sentinel);
  ASSERT_TRUE(o.endpoint.tls);  // what every stream (sentinels and data nodes) uses
  EXPECT_EQ(o.endpoint.tls->ca_file, "ca.pem");
  EXPECT_EQ(o.endpoint.tls->server_name, "redis.example");
  for (const Endpoint& e : o.seeds) EXPECT_TRUE(e.tls);
  o = parse_ok("redis-sentinel://s1?ssl=true#m");
  EXPECT_TRUE(o.endpoint.tls);
}

TEST(Url, ParsingASentinelUrlReplacesAnEarlierOne) {
  ConnectionOptions o;
  ASSERT_FALSE(parse_url("redis-sentinel://s1,s2#m", o));
  ASSERT_TRUE(o.sentinel);
  ASSERT_FALSE(parse_url("redis://h", o));
  EXPECT_FALSE(o.sentinel);
  ASSERT_EQ(o.seeds.size(), 1u);
  EXPECT_EQ(o.seeds[0].host, "h");
}

TEST(Url, MalformedSeedAndSentinelUrlsAreClearErrors) {
  EXPECT_NE(parse_err("redis-sentinel://s1,s2").find("needs the master name"), std::string::npos);
  EXPECT_NE(parse_err("redis-sentinel://s1#").find("needs the master name"), std::string::npos);
  EXPECT_NE(parse_err("redis-sentinel://#m").find("at least one sentinel host"), std::string::npos);
  EXPECT_NE(parse_err("redis-sentinel://:pw@/1#m").find("at least one sentinel host"),
            std::string::npos);
  EXPECT_NE(parse_err("redis-sentinel://s1,#m").find("empty host 2"), std::string::npos);
  EXPECT_NE(parse_err("redis-sentinel://,s1#m").find("empty host 1"), std::string::npos);
  EXPECT_NE(parse_err("redis://h1,,h3").find("empty host 2"), std::string::npos);
  EXPECT_NE(parse_err("redis://h1,").find("empty host 2"), std::string::npos);
  EXPECT_NE(parse_err("redis-sentinel://s1:0#m").find("port must be"), std::string::npos);
  EXPECT_NE(parse_err("redis-sentinel://s1,s2:x#m").find("host 2 of the list"), std::string::npos);
  EXPECT_NE(parse_err("redis://h1:1,h2:99999").find("port must be"), std::string::npos);
  EXPECT_NE(parse_err("redis://h1,h2:").find("empty port"), std::string::npos);
  EXPECT_NE(parse_err("redis://h1,[::1").find("IPv6"), std::string::npos);
  EXPECT_NE(parse_err("redis://h1,h!2").find("invalid character"), std::string::npos);
  EXPECT_NE(parse_err("redis-sentinel://s1#m%zz").find("percent-encoding in the master name"),
            std::string::npos);
  EXPECT_NE(parse_err("redis-sentinel://s1?sentinelMasterId=a#b").find("differently"),
            std::string::npos);
  EXPECT_NE(parse_err("redis://h?sentinel_password=x").find("redis-sentinel://"),
            std::string::npos);
  EXPECT_NE(parse_err("redis://h?sentinel_username=x").find("redis-sentinel://"),
            std::string::npos);
  EXPECT_NE(parse_err("redis://h?sentinelMasterId=m").find("redis-sentinel://"), std::string::npos);
  EXPECT_NE(parse_err("redis://h#m").find("fragment"), std::string::npos);
  EXPECT_NE(parse_err("rediss-sentinel://s?ssl=false#m").find("contradictory"), std::string::npos);
  EXPECT_NE(parse_err("redis-sentinel://s?db=1/#m").find("db"), std::string::npos);
  EXPECT_NE(parse_err("sentinel://s#m").find("unknown scheme"), std::string::npos);
}

TEST(Url, ErrorCodeHasAMessage) {
  EXPECT_EQ(make_error_code(Errc::bad_url).message(), "malformed Redis URL");
  EXPECT_STREQ(make_error_code(Errc::bad_url).category().name(), "lockwire.connection");
}

// Issue #31: an error about a URL never quotes its password, however the URL is malformed (a
// '/', '?' or '#' left unencoded in the password moves the parser's cuts into it).
TEST(Url, ErrorsNeverQuoteThePassword) {
  for (const char* url :
       {"redis://u:hunter2@127.0.0.1:notaport", "redis://u:hunter2/x@h", "redis://u:hun?ter2@h",
        "redis://u:hunter2/0?x=1@h", "redis://u:hunter2!@h!", "rediss://u:a%zzhunter2@h",
        "redis://h?password=hunter2&db=x", "redis://h?password=hunter2#f",
        "redis://h:1/x?password=hunter2", "redis://h?password=hunter2&db",
        "redis-sentinel://s1?sentinel_password=hunter2&sentinelMasterId=a#b",
        "redis://u:hunter2@h/?protocol=hunter2"}) {
    const std::string why = parse_err(url);
    EXPECT_EQ(why.find("hunter"), std::string::npos) << url << " -> " << why;
    EXPECT_EQ(why.find("ter2"), std::string::npos) << url << " -> " << why;
  }
}

TEST(Url, RedactUrlMasksEveryPassword) {
  EXPECT_EQ(redact_url("redis://u:hunter2@h:1/0?password=p2&sentinel_password=p3&db=0#m"),
            "redis://u:***@h:1/0?password=***&sentinel_password=***&db=0#m");
  EXPECT_EQ(redact_url("redis://:pw@h"), "redis://:***@h");
  EXPECT_EQ(redact_url("redis://alice@h"), "redis://alice@h");  // a user name is not a secret
  EXPECT_EQ(redact_url("redis://h:6379/0"), "redis://h:6379/0");
  EXPECT_EQ(redact_url("redis://u:a/b?c@h"), "redis://u:***@h");  // unencoded '/' and '?'
  EXPECT_EQ(redact_url("unix://u:pw@/tmp/s?db=1"), "unix://u:***@/tmp/s?db=1");
  // A valid URL's '@' in a query value is not user info; a malformed one is masked generously.
  EXPECT_EQ(redact_url("redis://h:1?client_name=me@x"), "redis://h:1?client_name=me@x");
  EXPECT_EQ(redact_url("redis://u:pw@h:notaport"), "redis://u:***@h:notaport");
}

}  // namespace
}  // namespace lockwire::loop
