// Fuzz entry: arbitrary bytes into the simulated Redis' request parsing and command handling.
// The first byte picks how the input is split across three clients and into chunks, so the
// incremental parser, pub/sub, tracking and transactions interact. Built as a libFuzzer target
// with clang (LOCKWIRE_BUILD_FUZZ) and as a plain smoke driver in ctest (tests/sim).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "lockwire/sim/redis_model.hpp"

namespace lockwire::sim {

// Returns 0; crashes, sanitizer reports or broken invariants are the findings.
int fuzz_redis_model(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::int64_t now_us = 1767225600000000;
  std::size_t out_bytes = 0;
  RedisModel::Hooks h;
  h.write = [&](RedisModel::ClientId, std::string_view b) { out_bytes += b.size(); };
  h.close = [](RedisModel::ClientId) {};
  h.wall_us = [&] { return now_us; };
  RedisModelOptions o;
  o.max_query_bytes = 1 << 20;  // keep memory bounded under the fuzzer
  o.max_bulk = 1 << 20;
  RedisModel m(h, Rng(data[0]), o);
  RedisModel::ClientId ids[3] = {m.add_client(), m.add_client(), m.add_client()};
  const std::uint8_t mode = data[0];
  std::size_t pos = 1;
  std::size_t turn = 0;
  while (pos < size) {
    const std::size_t chunk = 1 + ((mode >> 2) + turn * 7) % 61;
    const std::size_t n = chunk < size - pos ? chunk : size - pos;
    const auto id = ids[(mode & 3) == 0 ? 0 : turn % 3];
    m.feed(id, std::string_view(reinterpret_cast<const char*>(data + pos), n));
    pos += n;
    ++turn;
    if (turn % 5 == 0) {
      now_us += 37000;  // let keys expire and cron run now and then
      m.cron();
    }
  }
  for (auto id : ids) m.remove_client(id);
  return 0;
}

}  // namespace lockwire::sim

#ifdef LOCKWIRE_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return lockwire::sim::fuzz_redis_model(data, size);
}
#endif
