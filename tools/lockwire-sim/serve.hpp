#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace lockwire::tools {

struct ServeOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 6379;
  std::uint64_t seed = 1;
  std::string requirepass;
  bool enable_debug_command = false;        // DEBUG SLEEP
  const std::atomic<bool>* stop = nullptr;  // set: serve() returns once it reads true
};

// Runs until stopped (or forever). Returns a process exit code.
int serve(const ServeOptions& options);

}  // namespace lockwire::tools
