// Starts a private redis-server for integration tests: a free loopback port, no persistence, its
// own temporary directory, killed when the object dies (or when the thread that started it exits,
// e.g. a crashed test binary: PR_SET_PDEATHSIG). Tests never share a server.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace lockwire::test {

// A loopback TCP port that was free a moment ago (bound to port 0, then released); throws if
// none can be had.
[[nodiscard]] std::uint16_t free_loopback_port();

// Whether the redis-server first on PATH starts with these command-line options (a feature
// probe for fixtures: Redis 6.2 has no EVAL_RO to rename and no --enable-debug-command). Starts
// one short-lived server per distinct question and process (answers are cached); bounded.
[[nodiscard]] bool server_accepts(const std::vector<std::string>& args);

class RedisServer {
 public:
  struct Options {
    std::vector<std::string> args;  // redis-server command-line options
    bool unix_socket = false;
    // A port P whose cluster bus port P+10000 is free too (cluster nodes).
    bool cluster_bus = false;
    // Non-empty: written to <dir>/redis.conf (with %PORT% and %DIR% replaced) and passed first,
    // as sentinels need (they rewrite their config file).
    std::string config_text;
  };
  explicit RedisServer(Options options);
  // Extra arguments are redis-server command-line options, e.g. {"--requirepass", "secret"}.
  explicit RedisServer(std::vector<std::string> extra_args = {}, bool unix_socket = false);
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
  [[nodiscard]] const std::string& unix_path() const noexcept { return unix_path_; }
  [[nodiscard]] const std::string& dir() const noexcept { return dir_; }
  [[nodiscard]] std::string url() const;  // redis://127.0.0.1:PORT

  void stop();     // SIGKILL and wait
  void restart();  // same port, same options, empty data
  void pause();    // SIGSTOP: the process keeps its sockets but answers nothing
  void resume();   // SIGCONT

  // Runs redis-cli against this server and returns its stdout (for test setup/inspection).
  std::string cli(const std::vector<std::string>& args) const;

 private:
  bool launch();
  std::vector<std::string> extra_;
  bool unix_ = false;
  bool cluster_bus_ = false;
  std::string config_text_;
  std::uint16_t port_ = 0;
  std::string dir_;
  std::string unix_path_;
  pid_t pid_ = -1;
};

}  // namespace lockwire::test
