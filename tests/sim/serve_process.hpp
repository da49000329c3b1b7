// `lockwire-sim serve` on a free loopback port for a test, killed (SIGKILL) when the object dies.
#pragma once

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "differential.hpp"
#include "redis_server.hpp"

extern char** environ;

namespace lockwire::sim::test {

#ifdef LOCKWIRE_SIM_BIN
class ServeProcess {
 public:
  explicit ServeProcess(std::vector<std::string> extra = {}) {
    for (int attempt = 0; attempt < 10 && pid_ < 0; ++attempt) {
      port_ = lockwire::test::free_loopback_port();
      std::vector<std::string> args = {LOCKWIRE_SIM_BIN, "serve",  "--port",
                                       std::to_string(port_), "--seed", "7"};
      args.insert(args.end(), extra.begin(), extra.end());
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      pid_t pid = -1;
      if (::posix_spawn(&pid, LOCKWIRE_SIM_BIN, nullptr, nullptr, argv.data(), environ) != 0)
        continue;
      for (int i = 0; i < 200; ++i) {
        TcpConn c(port_);
        if (c.ok()) {
          pid_ = pid;
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      if (pid_ < 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
    }
  }
  ~ServeProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  ServeProcess(const ServeProcess&) = delete;
  ServeProcess& operator=(const ServeProcess&) = delete;
  [[nodiscard]] std::uint16_t port() const { return port_; }
  [[nodiscard]] bool ok() const { return pid_ > 0; }

 private:
  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
};
#endif

}  // namespace lockwire::sim::test
