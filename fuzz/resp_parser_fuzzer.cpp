// libFuzzer target for the RESP parser. Build: cmake --preset fuzz && cmake --build --preset fuzz
// Run:   build/fuzz/bin/resp_parser_fuzzer fuzz/corpus/resp_parser -max_total_time=60
#include "resp_fuzz_entry.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return lockwire::resp::fuzz::run_one(data, size);
}
