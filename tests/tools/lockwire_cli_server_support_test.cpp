// `lockwire acquire` against the redis-server first on PATH (issue #32): a supported server
// grants; one below the minimum (Redis 6.2) exits 69 with a message naming the server, its
// version and the minimum, in the server's own words, and nothing written.
// scripts/server-matrix.sh runs this on every server of the matrix.
#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <vector>

#include "cli_proc.hpp"
#include "redis_server.hpp"

namespace {

using namespace lockwire::test;

TEST(LockwireCliServerSupport, AcquireGrantsOrExitsUnavailableWithTheReason) {
  RedisServer server;
  TempDir dir;
  // Probed as the client probes it (PEXPIRE ... GT), not read from the version.
  const bool has_options =
      server.cli({"PEXPIRE", "absent", "1", "GT"}).find("wrong number of arguments") ==
      std::string::npos;
  Proc p({"acquire", "invoice:42", "--url", server.url(), "--ttl", "10s", "--wait", "5s", "--owner",
          "o1"},
         dir);
  const int st = p.wait();
  if (has_options) {
    EXPECT_EQ(st, 0) << p.err();
    return;
  }
  std::cout << "lockwire acquire said: " << p.err();
  EXPECT_EQ(st, 69) << p.err();
  EXPECT_NE(p.err().find("is older than lockwire's minimum, Redis 7.0 or Valkey 7.2"),
            std::string::npos)
      << p.err();
  EXPECT_NE(p.err().find("(COMMAND INFO PEXPIRE: arity 3, no options)"), std::string::npos)
      << p.err();
  EXPECT_EQ(server.cli({"DBSIZE"}), "0\n") << "nothing written on a refused server";
}

}  // namespace
