#include "redis_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace lockwire::test {

std::uint16_t free_loopback_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) ::close(fd);
    throw std::runtime_error("cannot pick a free port");
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

namespace {

bool answers_ping(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  bool ok = false;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    timeval tv{0, 200000};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    const char ping[] = "PING\r\n";
    if (::write(fd, ping, sizeof ping - 1) == static_cast<ssize_t>(sizeof ping - 1)) {
      char buf[64];
      ssize_t n = ::read(fd, buf, sizeof buf);
      // Any reply counts (+PONG, or -NOAUTH when a password is required).
      ok = n > 0;
    }
  }
  ::close(fd);
  return ok;
}

bool port_free(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  const bool ok = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  if (fd >= 0) ::close(fd);
  return ok;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size()) {
    s.replace(at, from.size(), to);
  }
  return s;
}

}  // namespace

bool server_accepts(const std::vector<std::string>& args) {
  static std::mutex mu;
  static std::map<std::vector<std::string>, bool> known;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = known.find(args); it != known.end()) return it->second;
  char tmpl[] = "/tmp/lockwire-probe-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  const std::string dir = tmpl;
  const std::string err = dir + "/stderr";
  bool accepted = false;
  bool decided = false;
  for (int attempt = 0; attempt < 5 && !decided; ++attempt) {
    const std::uint16_t port = free_loopback_port();
    std::vector<std::string> full = {"redis-server",
                                     "--port",
                                     std::to_string(port),
                                     "--bind",
                                     "127.0.0.1",
                                     "--save",
                                     "",
                                     "--appendonly",
                                     "no",
                                     "--dir",
                                     dir,
                                     "--daemonize",
                                     "no",
                                     "--protected-mode",
                                     "no"};
    full.insert(full.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : full) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("cannot fork for redis-server");
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
      const int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
      }
      ::execvp("redis-server", argv.data());
      ::_exit(127);
    }
    for (int i = 0; i < 500; ++i) {  // up to ~5 s
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        // A configuration error says so; anything else (the port was taken) is asked again.
        std::string text;
        if (FILE* f = std::fopen(err.c_str(), "r")) {
          char buf[4096];
          std::size_t n;
          while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
          std::fclose(f);
        }
        if (text.find("FATAL CONFIG") != std::string::npos) decided = true;
        break;
      }
      if (answers_ping(port)) {
        ::kill(pid, SIGKILL);
        int st = 0;
        ::waitpid(pid, &st, 0);
        accepted = decided = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!decided) {  // still starting after 5 s, or gone without a word: stop it, ask again
      ::kill(pid, SIGKILL);
      int st = 0;
      ::waitpid(pid, &st, 0);
    }
  }
  const std::string rm = "rm -rf '" + dir + "'";
  [[maybe_unused]] int rc = std::system(rm.c_str());
  if (!decided) throw std::runtime_error("redis-server did not start to answer a feature probe");
  known[args] = accepted;
  return accepted;
}

RedisServer::RedisServer(std::vector<std::string> extra_args, bool unix_socket)
    : RedisServer(Options{std::move(extra_args), unix_socket, false, {}}) {}

RedisServer::RedisServer(Options o)
    : extra_(std::move(o.args)),
      unix_(o.unix_socket),
      cluster_bus_(o.cluster_bus),
      config_text_(std::move(o.config_text)) {
  char tmpl[] = "/tmp/lockwire-redis-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  if (unix_) unix_path_ = dir_ + "/redis.sock";
  for (int attempt = 0; attempt < 40; ++attempt) {
    port_ = free_loopback_port();
    if (cluster_bus_ && (port_ > 55535 || !port_free(static_cast<std::uint16_t>(port_ + 10000)))) {
      continue;
    }
    if (launch()) return;
  }
  throw std::runtime_error("redis-server did not start (is it installed? scripts/deps.sh)");
}

RedisServer::~RedisServer() {
  stop();
  std::string cmd = "rm -rf '" + dir_ + "'";
  [[maybe_unused]] int rc = std::system(cmd.c_str());
}

std::string RedisServer::url() const {
  return "redis://127.0.0.1:" + std::to_string(port_);
}

bool RedisServer::launch() {
  std::vector<std::string> args = {"redis-server"};
  if (!config_text_.empty()) {
    const std::string conf = dir_ + "/redis.conf";
    std::string text = replace_all(config_text_, "%PORT%", std::to_string(port_));
    text = replace_all(text, "%DIR%", dir_);
    FILE* f = std::fopen(conf.c_str(), "w");
    if (f == nullptr) throw std::runtime_error("cannot write " + conf);
    std::fputs(text.c_str(), f);
    std::fclose(f);
    args.push_back(conf);
  }
  args.insert(args.end(), {"--port",
                                   std::to_string(port_),
                                   "--bind",
                                   "127.0.0.1",
                                   "--save",
                                   "",
                                   "--appendonly",
                                   "no",
                                   "--dir",
                                   dir_,
                                   "--logfile",
                                   dir_ + "/redis.log",
                                   "--daemonize",
                                   "no",
                                   "--protected-mode",
                                   "no"});
  if (unix_) {
    args.insert(args.end(), {"--unixsocket", unix_path_, "--unixsocketperm", "700"});
  }
  args.insert(args.end(), extra_.begin(), extra_.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // fork+exec rather than posix_spawn so the server can ask to die with its parent: a crashed
  // test binary must not leave servers behind that hold ctest's output pipe open.
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("cannot fork for redis-server");
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl took effect
    ::execvp("redis-server", argv.data());
    ::_exit(127);
  }
  pid_ = pid;
  for (int i = 0; i < 500; ++i) {  // up to ~5 s
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {  // exited: port taken or bad option
      pid_ = -1;
      return false;
    }
    if (answers_ping(port_)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  stop();
  return false;
}

void RedisServer::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGCONT);
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

void RedisServer::restart() {
  stop();
  for (int attempt = 0; attempt < 50; ++attempt) {
    if (launch()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  throw std::runtime_error("redis-server did not restart on its port");
}

void RedisServer::pause() {
  if (pid_ > 0) ::kill(pid_, SIGSTOP);
}
void RedisServer::resume() {
  if (pid_ > 0) ::kill(pid_, SIGCONT);
}

std::string RedisServer::cli(const std::vector<std::string>& args) const {
  std::string cmd = "redis-cli -p " + std::to_string(port_);
  for (const auto& a : args) {
    std::string q = "'";
    for (char c : a) q += (c == '\'') ? std::string("'\\''") : std::string(1, c);
    cmd += " " + q + "'";
  }
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  ::pclose(p);
  return out;
}

}  // namespace lockwire::test
