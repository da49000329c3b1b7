#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace lockwire::tools {

struct ServeOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 6379;
  std::uint64_t seed = 1;
  std::string requirepass;
  bool enable_debug_command = false;        // DEBUG SLEEP
  // Start-up parameters, as redis-server's "--name value" (e.g. {"maxclients", "100"}).
  std::vector<std::pair<std::string, std::string>> config;
  const std::atomic<bool>* stop = nullptr;  // set: serve() returns once it reads true
};

// Runs until stopped (or forever). Returns a process exit code.
int serve(const ServeOptions& options);

}  // namespace lockwire::tools
