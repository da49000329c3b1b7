// Smoke driver for sim/fuzz/redis_model_fuzz.cpp: the libFuzzer seed corpus, seeded random and
// structured inputs through the fuzz entry with g++ (the libFuzzer build is optional).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "lockwire/sim/rng.hpp"

namespace lockwire::sim {
int fuzz_redis_model(const std::uint8_t* data, std::size_t size);
namespace {

std::string cmd(const std::vector<std::string>& a) {
  std::string out = "*";
  out += std::to_string(a.size());
  out += "\r\n";
  for (auto& s : a) {
    out += "$";
    out += std::to_string(s.size());
    out += "\r\n";
    out += s;
    out += "\r\n";
  }
  return out;
}

// The seeds (and any crash the fuzzer found, once fixed) replayed in the normal suite.
TEST(FuzzSmoke, Corpus) {
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(FUZZ_CORPUS_DIR)) {
    std::ifstream f(e.path(), std::ios::binary);
    const std::string in(std::istreambuf_iterator<char>(f), {});
    fuzz_redis_model(reinterpret_cast<const std::uint8_t*>(in.data()), in.size());
    ++files;
  }
  EXPECT_GE(files, 20u);
}

TEST(FuzzSmoke, RandomBytes) {
  Rng rng(1234);
  for (int i = 0; i < 3000; ++i) {
    std::string in(static_cast<std::size_t>(1 + rng.below(400)), '\0');
    for (auto& c : in) c = static_cast<char>(rng.below(256));
    fuzz_redis_model(reinterpret_cast<const std::uint8_t*>(in.data()), in.size());
  }
}

// Well-formed commands with random arguments reach deep into the handlers.
TEST(FuzzSmoke, StructuredCommands) {
  const std::vector<std::string> names = {"SET",
                                          "GET",
                                          "DEL",
                                          "INCR",
                                          "EXPIRE",
                                          "PEXPIRE",
                                          "TTL",
                                          "MULTI",
                                          "EXEC",
                                          "WATCH",
                                          "DISCARD",
                                          "HSET",
                                          "HDEL",
                                          "HINCRBY",
                                          "SADD",
                                          "SREM",
                                          "ZADD",
                                          "ZRANGE",
                                          "ZREMRANGEBYSCORE",
                                          "SUBSCRIBE",
                                          "PSUBSCRIBE",
                                          "UNSUBSCRIBE",
                                          "PUBLISH",
                                          "HELLO",
                                          "CLIENT",
                                          "SCAN",
                                          "KEYS",
                                          "GETEX",
                                          "FLUSHDB",
                                          "SELECT",
                                          "RESET",
                                          "PING",
                                          "TRACKING",
                                          "ON",
                                          "OFF",
                                          "BCAST",
                                          "PREFIX",
                                          "NX",
                                          "XX",
                                          "GT",
                                          "LT",
                                          "PX",
                                          "EX",
                                          "GET",
                                          "KEEPTTL",
                                          "WITHSCORES",
                                          "BYSCORE",
                                          "LIMIT",
                                          "3",
                                          "2",
                                          "-1",
                                          "0",
                                          "k",
                                          "a*",
                                          "(1",
                                          "+inf",
                                          "9223372036854775807",
                                          "OPTIN",
                                          "CACHING",
                                          "YES",
                                          "ACL",
                                          "SETUSER",
                                          "DELUSER",
                                          "AUTH",
                                          "u",
                                          "on",
                                          "nopass",
                                          "+@all",
                                          "-get",
                                          "~k*",
                                          "&c",
                                          "resetchannels",
                                          "CONFIG",
                                          "maxmemory",
                                          "maxmemory-policy",
                                          "allkeys-random",
                                          "volatile-lru",
                                          "1",
                                          "PAUSE",
                                          "UNPAUSE",
                                          "WRITE",
                                          "ALL",
                                          "INFO"};
  Rng rng(77);
  for (int i = 0; i < 3000; ++i) {
    std::string in(1, static_cast<char>(rng.below(256)));
    const int n = 1 + static_cast<int>(rng.below(20));
    for (int j = 0; j < n; ++j) {
      std::vector<std::string> a;
      const int argc = 1 + static_cast<int>(rng.below(6));
      for (int k = 0; k < argc; ++k) a.push_back(names[rng.below(names.size())]);
      in += cmd(a);
    }
    fuzz_redis_model(reinterpret_cast<const std::uint8_t*>(in.data()), in.size());
  }
}

}  // namespace
}  // namespace lockwire::sim
