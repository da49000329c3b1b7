// Unit tests of the lockwire tool's argument parsing, durations and JSON strings (no processes).
#include <gtest/gtest.h>

#include "args.hpp"

namespace lockwire::cli {
namespace {

using namespace std::chrono_literals;

TEST(Duration, AcceptsUnits) {
  EXPECT_EQ(parse_duration("250ms"), Nanos(250ms));
  EXPECT_EQ(parse_duration("10s"), Nanos(10s));
  EXPECT_EQ(parse_duration("2m"), Nanos(2min));
  EXPECT_EQ(parse_duration("1h"), Nanos(1h));
  EXPECT_EQ(parse_duration("1.5s"), Nanos(1500ms));
  EXPECT_EQ(parse_duration("0.25m"), Nanos(15s));
  EXPECT_EQ(parse_duration("750us"), Nanos(750us));
  EXPECT_EQ(parse_duration("0s"), Nanos(0));
  EXPECT_EQ(parse_duration("0"), Nanos(0));  // zero needs no unit
  EXPECT_EQ(parse_duration("forever"), Nanos(std::chrono::hours(24 * 365)));
}

TEST(Duration, RejectsWithReason) {
  for (const char* bad : {"", "10", "1", "00", "0.0", "-0", "0.5", "-5s", "s", "10x", "1.s", "5 s",
                          "10sec", "1e3ms", "99999999999999999999s", "9000h"}) {
    std::string why;
    EXPECT_FALSE(parse_duration(bad, &why).has_value()) << bad;
    EXPECT_FALSE(why.empty()) << bad;
  }
  std::string why;
  (void)parse_duration("10", &why);
  EXPECT_NE(why.find("unit"), std::string::npos);
}

TEST(Duration, Formats) {
  EXPECT_EQ(format_duration(250ms), "250ms");
  EXPECT_EQ(format_duration(10s), "10s");
  EXPECT_EQ(format_duration(1500us), "1500us");
}

ParseStatus parse(std::vector<std::string> args, Options& o, std::string& err) {
  return parse_args(args, o, err);
}

TEST(Args, RunSplitsCommandAtDoubleDash) {
  Options o;
  std::string err;
  ASSERT_EQ(parse({"run", "--ttl", "5s", "res", "--wait=2s", "--", "echo", "--ttl", "x"}, o, err),
            ParseStatus::ok)
      << err;
  EXPECT_EQ(o.command, Command::run);
  EXPECT_EQ(o.resource, "res");
  EXPECT_EQ(o.ttl, Nanos(5s));
  EXPECT_EQ(o.wait, Nanos(2s));
  EXPECT_EQ(o.argv, (std::vector<std::string>{"echo", "--ttl", "x"}));
}

TEST(Args, RunWithoutDoubleDashStartsCommandAfterResource) {
  Options o;
  std::string err;
  ASSERT_EQ(parse({"run", "res", "make", "-j2"}, o, err), ParseStatus::ok) << err;
  EXPECT_EQ(o.argv, (std::vector<std::string>{"make", "-j2"}));
  EXPECT_EQ(o.ttl, Nanos(30s));  // default for run
}

// docs/cli.md: --wait 0 is one attempt, --kill-after 0 kills at once; a bare 0 needs no unit.
TEST(Args, ZeroDurationsWhereZeroMeansSomething) {
  Options o;
  std::string err;
  ASSERT_EQ(parse({"run", "--wait", "0", "--kill-after=0", "res", "--", "true"}, o, err),
            ParseStatus::ok)
      << err;
  EXPECT_EQ(o.wait, Nanos(0));
  EXPECT_EQ(o.kill_after, Nanos(0));
  o = {};
  ASSERT_EQ(parse({"acquire", "res", "--ttl", "1s", "--wait=0"}, o, err), ParseStatus::ok) << err;
  EXPECT_EQ(o.wait, Nanos(0));
  // Only zero: any other bare number still needs its unit.
  o = {};
  EXPECT_EQ(parse({"run", "--wait", "5", "res", "--", "true"}, o, err), ParseStatus::error);
  EXPECT_NE(err.find("missing unit"), std::string::npos) << err;
}

// A zero TTL or connect timeout is never taken, whether spelt 0 or 0s, and says why.
TEST(Args, ZeroTtlAndConnectTimeoutAreRejected) {
  for (const char* zero : {"0", "0s", "0ms"}) {
    Options o;
    std::string err;
    EXPECT_EQ(parse({"acquire", "res", "--ttl", zero}, o, err), ParseStatus::error) << zero;
    EXPECT_NE(err.find("--ttl must be positive"), std::string::npos) << err;
    EXPECT_FALSE(o.ttl.has_value()) << zero;
    o = {};
    EXPECT_EQ(parse({"run", "--ttl", zero, "res", "--", "true"}, o, err), ParseStatus::error);
    EXPECT_NE(err.find("--ttl must be positive"), std::string::npos) << err;
    o = {};
    EXPECT_EQ(parse({"inspect", "res", "--connect-timeout", zero}, o, err), ParseStatus::error);
    EXPECT_NE(err.find("--connect-timeout must be positive"), std::string::npos) << err;
  }
}

TEST(Args, CommandSpecificRequirements) {
  struct Case {
    std::vector<std::string> args;
    const char* needle;
  };
  const std::vector<Case> cases = {
      {{}, "no command"},
      {{"frobnicate", "x"}, "unknown command"},
      {{"acquire", "x"}, "--ttl"},
      {{"release", "x"}, "--owner"},
      {{"renew", "x", "--owner", "o"}, "--ttl"},
      {{"run", "x"}, "COMMAND"},
      {{"run", "--", "x"}, "RESOURCE"},
      {{"inspect"}, "RESOURCE"},
      {{"inspect", "a", "b"}, "unexpected argument"},
      {{"inspect", "a", "--ttl", "1s"}, "does not apply"},
      {{"watch", "a", "--kill-after", "1s"}, "does not apply"},
      {{"acquire", "a", "--ttl", "0s"}, "positive"},
      {{"acquire", "a", "--ttl"}, "needs a duration"},
      {{"acquire", "a", "--ttl", "soon"}, "bad --ttl"},
      {{"inspect", "a", "--bogus"}, "unknown option"},
      {{"inspect", "a", "--json=yes"}, "takes no value"},
      {{"inspect", "a", "-q", "-v"}, "exclude"},
      {{"acquire", "a", "--ttl", "1s", "--owner", ""}, "empty"},
      {{"acquire", "a", "--ttl", "1s", "--min-replicas", "most"}, "or 'majority'"},
      {{"acquire", "a", "--ttl", "1s", "--min-replicas", "65"}, "from 0 to 64"},
  };
  for (const auto& c : cases) {
    Options o;
    std::string err;
    EXPECT_EQ(parse(c.args, o, err), ParseStatus::error) << c.needle;
    EXPECT_NE(err.find(c.needle), std::string::npos) << "'" << err << "' lacks " << c.needle;
  }
}

// --min-replicas: a count, or the majority policy (lock::ReplicaAcks); the last one given wins.
TEST(Args, MinReplicasTakesACountOrMajority) {
  Options o;
  std::string err;
  ASSERT_EQ(parse({"acquire", "a", "--ttl", "1s", "--min-replicas", "majority"}, o, err),
            ParseStatus::ok)
      << err;
  EXPECT_TRUE(o.min_replicas_majority);
  Options two;
  ASSERT_EQ(parse({"acquire", "a", "--ttl", "1s", "--min-replicas", "majority", "--min-replicas",
                   "2"},
                  two, err),
            ParseStatus::ok)
      << err;
  EXPECT_FALSE(two.min_replicas_majority);
  EXPECT_EQ(two.min_replicas, 2);
}

TEST(Args, HelpAndVersion) {
  Options o;
  std::string err;
  EXPECT_EQ(parse({"--help"}, o, err), ParseStatus::help);
  EXPECT_EQ(parse({"inspect", "x", "-h"}, o, err), ParseStatus::help);
  EXPECT_EQ(parse({"--version"}, o, err), ParseStatus::version);
  const std::string u = usage_text();
  for (const char* s : {"64", "69", "75", "76", "77", "126", "127", "--kill-after", "watch"}) {
    EXPECT_NE(u.find(s), std::string::npos) << s;
  }
}

TEST(Args, TlsAndCommonOptions) {
  Options o;
  std::string err;
  ASSERT_EQ(parse({"inspect", "r", "--url", "rediss://h:1", "--tls-ca", "ca.pem", "--prefix",
                   "p:", "--json", "--connect-timeout", "2s"},
                  o, err),
            ParseStatus::ok)
      << err;
  EXPECT_EQ(o.url, "rediss://h:1");
  EXPECT_EQ(o.tls_ca, "ca.pem");
  EXPECT_EQ(o.prefix, "p:");
  EXPECT_TRUE(o.json);
  EXPECT_EQ(o.connect_timeout, Nanos(2s));
}

TEST(Json, Escapes) {
  EXPECT_EQ(json_string("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(json_string("\n\t\x01"), "\"\\n\\t\\u0001\"");
  EXPECT_EQ(json_string("h\xc3\xa9"), "\"h\xc3\xa9\"");  // valid UTF-8 kept
  // A byte outside valid UTF-8 is \udcXX (surrogateescape: recoverable), never U+FFFD.
  EXPECT_EQ(json_string("\xff"
                        "a"),
            "\"\\udcffa\"");                                            // invalid byte
  EXPECT_EQ(json_string("\xc3"), "\"\\udcc3\"");                        // truncated sequence
  EXPECT_EQ(json_string("\xed\xa0\x80"), "\"\\udced\\udca0\\udc80\"");  // surrogate
}

}  // namespace
}  // namespace lockwire::cli
