// Spawning the real `lockwire` binary (next to the test binary) with its output captured, for
// the CLI suites.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace lockwire::test {

using namespace std::chrono_literals;

inline std::string self_dir() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<std::size_t>(n));
  return p.substr(0, p.rfind('/'));
}

inline std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// Waits (bounded) for a condition the test needs before its next step; never a timing assertion.
inline bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds limit = 15s) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return pred();
}

// A temporary directory for a test's files, removed afterwards.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/lockwire-cli-XXXXXX";
    const char* d = ::mkdtemp(tmpl);
    path_ = d != nullptr ? d : "/tmp";
  }
  ~TempDir() {
    const std::string cmd = "rm -rf '" + path_ + "'";
    if (std::system(cmd.c_str()) != 0) {
    }
  }
  [[nodiscard]] std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// One spawned lockwire process with stdout/stderr captured to files.
class Proc {
 public:
  // `args` are lockwire's arguments; with raw = true, a whole command line (program first).
  // `env`: "NAME=value" sets a variable for the child, a bare "NAME" removes it; the rest of
  // the environment is inherited.
  Proc(const std::vector<std::string>& args, const TempDir& dir, bool raw = false,
       const std::vector<std::string>& env = {}) {
    static int seq = 0;
    const std::string tag = std::to_string(::getpid()) + "-" + std::to_string(seq++);
    out_ = dir.file("out-" + tag);
    err_ = dir.file("err-" + tag);
    std::vector<std::string> full;
    if (!raw) full.push_back(self_dir() + "/lockwire");
    full.insert(full.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : full) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<std::string> vars;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string kv(*e);
      bool replaced = false;
      for (const std::string& o : env) {
        const std::string name = o.substr(0, o.find('='));
        replaced = replaced || kv.compare(0, name.size() + 1, name + "=") == 0;
      }
      if (!replaced) vars.push_back(kv);
    }
    for (const std::string& o : env) {
      if (o.find('=') != std::string::npos) vars.push_back(o);
    }
    std::vector<char*> envp;
    for (auto& v : vars) envp.push_back(v.data());
    envp.push_back(nullptr);
    if (::posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), envp.data()) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
  }
  ~Proc() {
    if (pid_ > 0 && status_ < 0) {
      ::kill(pid_, SIGKILL);
      int st = 0;
      ::waitpid(pid_, &st, 0);
    }
  }
  Proc(const Proc&) = delete;
  Proc& operator=(const Proc&) = delete;

  // Exit status (128+N for signal N); -1 if it did not end within the limit (then it is killed).
  int wait(std::chrono::milliseconds limit = 30s) {
    if (status_ >= 0 || pid_ <= 0) return status_;
    const auto end = std::chrono::steady_clock::now() + limit;
    int st = 0;
    while (true) {
      const pid_t r = ::waitpid(pid_, &st, WNOHANG);
      if (r == pid_) break;
      if (std::chrono::steady_clock::now() >= end) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &st, 0);
        status_ = -1;
        return -2;
      }
      std::this_thread::sleep_for(5ms);
    }
    status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return status_;
  }
  void signal(int sig) const { ::kill(pid_, sig); }
  [[nodiscard]] pid_t pid() const { return pid_; }
  [[nodiscard]] std::string out() const { return read_file(out_); }
  [[nodiscard]] std::string err() const { return read_file(err_); }

 private:
  pid_t pid_ = -1;
  int status_ = -1;
  std::string out_, err_;
};

struct Result {
  int status;
  std::string out, err;
};

}  // namespace lockwire::test
