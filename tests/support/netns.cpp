#include "netns.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

extern char** environ;

// gcc 12 reports -Wrestrict for "literal" + std::string concatenations inlined at -O3 (a known
// false positive, GCC PR 105329); this file builds many command lines and messages that way.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

namespace lockwire::test {

namespace {

using namespace std::chrono_literals;

int decode_status(int st) {
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/sbin:/usr/bin:/sbin:/bin");
  for (std::string d; std::getline(dirs, d, ':');) {
    d.append("/").append(program);
    if (::access(d.c_str(), X_OK) == 0) return true;
  }
  return false;
}

// Everything the child needs, prepared before fork: between fork and exec a multi-threaded
// parent's child may only make async-signal-safe calls.
struct Launch {
  std::vector<std::string> argv_storage;
  std::vector<std::string> env_storage;
  std::vector<char*> argv;
  std::vector<char*> envp;
  std::string netns_path;  // empty: stay in the root namespace
  std::string log_path;    // empty: stdout/stderr go to `out_fd`
  int out_fd = -1;

  Launch(const std::vector<std::string>& args, const std::vector<std::string>& env)
      : argv_storage(args), env_storage(env) {
    for (auto& a : argv_storage) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (char** e = environ; *e != nullptr; ++e) envp.push_back(*e);
    for (auto& e : env_storage) envp.push_back(e.data());
    envp.push_back(nullptr);
  }
};

// fork + (setns) + exec, the child in a process group of its own that dies with this thread.
pid_t launch(Launch& l) {
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw NetLabError(std::string("fork: ") + std::strerror(errno));
  if (pid != 0) {
    ::setpgid(pid, pid);  // also in the child: whichever runs first, no signal misses the group
    return pid;
  }
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);
  int out = l.out_fd;
  if (!l.log_path.empty()) {
    out = ::open(l.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (out < 0) ::_exit(126);
  }
  const int in = ::open("/dev/null", O_RDONLY);
  if (in < 0 || ::dup2(in, 0) < 0 || ::dup2(out, 1) < 0 || ::dup2(out, 2) < 0) ::_exit(126);
  if (!l.netns_path.empty()) {
    const int fd = ::open(l.netns_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0) {
      static const char msg[] = "netlab: cannot enter the network namespace\n";
      [[maybe_unused]] const ssize_t n = ::write(2, msg, sizeof msg - 1);
      ::_exit(126);
    }
  }
  ::execvpe(l.argv[0], l.argv.data(), l.envp.data());
  ::_exit(127);
}

// Runs a command to completion with its output captured, killed (whole group) at `limit`.
CommandResult run_captured(Launch& l, std::chrono::milliseconds limit) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw NetLabError("pipe2 failed");
  l.out_fd = fds[1];
  pid_t pid = -1;
  try {
    pid = launch(l);
  } catch (...) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw;
  }
  ::close(fds[1]);
  CommandResult r;
  const auto end = std::chrono::steady_clock::now() + limit;
  bool killed = false;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        end - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ::kill(-pid, SIGKILL);
      killed = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) break;  // EOF: the command (and anything holding the pipe) is done
    r.out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int st = 0;
  // After EOF the command is exiting; bounded anyway (a child that closed stdout and lingers).
  for (int i = 0; i < 200 && ::waitpid(pid, &st, WNOHANG) == 0; ++i) {
    if (i == 100) {
      ::kill(-pid, SIGKILL);
      killed = true;
    }
    std::this_thread::sleep_for(10ms);
  }
  if (::waitpid(pid, &st, WNOHANG) == 0) {  // never leave a zombie or a runner behind
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, &st, 0);
  }
  r.status = killed ? -1 : decode_status(st);
  return r;
}

CommandResult run_root(const std::vector<std::string>& argv,
                       std::chrono::milliseconds limit = 10s) {
  Launch l(argv, {});
  return run_captured(l, limit);
}

std::string joined(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::trunc);
  f << text;
  if (!f) throw NetLabError("cannot write " + path);
}

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

constexpr const char* kFamily = "lwpt";  // every lab namespace is lwpt<pid>-<seq>-<name>

// Namespaces of the family whose creating process is gone (a crashed or killed earlier run).
void delete_stale_namespaces() {
  DIR* d = ::opendir("/run/netns");
  if (d == nullptr) return;
  std::vector<std::string> stale;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind(kFamily, 0) != 0) continue;
    const long owner = std::strtol(name.c_str() + std::strlen(kFamily), nullptr, 10);
    if (owner > 0 && ::kill(static_cast<pid_t>(owner), 0) != 0 && errno == ESRCH) {
      stale.push_back(name);
    }
  }
  ::closedir(d);
  for (const auto& name : stale) run_root({"ip", "netns", "del", name});
}

// The same for lab directories, /tmp/lockwire-netlab-<pid>-XXXXXX.
void delete_stale_dirs() {
  DIR* d = ::opendir("/tmp");
  if (d == nullptr) return;
  const std::string family = "lockwire-netlab-";
  std::vector<std::string> stale;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind(family, 0) != 0) continue;
    const long owner = std::strtol(name.c_str() + family.size(), nullptr, 10);
    if (owner > 0 && ::kill(static_cast<pid_t>(owner), 0) != 0 && errno == ESRCH) {
      stale.push_back("/tmp/" + name);
    }
  }
  ::closedir(d);
  for (const auto& path : stale) run_root({"rm", "-rf", path});
}

}  // namespace

std::string NetLab::unavailable_reason() {
  for (const char* program : {"ip", "nft", "redis-server", "redis-cli"}) {
    if (!on_path(program)) {
      return std::string("`") + program + "` is not on PATH (scripts/deps.sh installs it)";
    }
  }
  if (::geteuid() != 0) {
    return "network namespaces need root (CAP_NET_ADMIN and CAP_SYS_ADMIN); running as uid " +
           std::to_string(::geteuid());
  }
  // A real try: containers may forbid namespaces or bridges even to root.
  const std::string probe = std::string(kFamily) + std::to_string(::getpid()) + "-probe";
  std::string why;
  for (const auto& argv : std::vector<std::vector<std::string>>{
           {"ip", "netns", "add", probe},
           {"ip", "-n", probe, "link", "add", "probe0", "type", "bridge"},
           {"ip", "netns", "exec", probe, "nft", "add", "table", "bridge", "probe"}}) {
    const CommandResult r = run_root(argv);
    if (r.status != 0) {
      why = "`" + joined(argv) + "` failed: " + r.out;
      break;
    }
  }
  run_root({"ip", "netns", "del", probe});
  while (!why.empty() && why.back() == '\n') why.pop_back();
  return why;
}

NetLab::NetLab() {
  delete_stale_namespaces();
  delete_stale_dirs();
  static int seq = 0;
  prefix_ = std::string(kFamily) + std::to_string(::getpid()) + "-" + std::to_string(seq++) + "-";
  std::string tmpl = "/tmp/lockwire-netlab-" + std::to_string(::getpid()) + "-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) throw NetLabError("mkdtemp failed");
  dir_ = tmpl;
  switch_ns_ = prefix_ + "switch";
  ip({"netns", "add", switch_ns_});
  for (const char* bridge : {"main", "side"}) {
    ip({"-n", switch_ns_, "link", "add", bridge, "type", "bridge"});
    ip({"-n", switch_ns_, "link", "set", bridge, "up"});
  }
}

NetLab::~NetLab() {
  for (const pid_t pid : started_) {
    if (exited_.count(pid) != 0) continue;
    ::kill(-pid, SIGKILL);
    ::kill(-pid, SIGCONT);
    int st = 0;
    ::waitpid(pid, &st, 0);  // SIGKILL cannot be ignored: this returns
  }
  std::vector<std::string> names;
  for (const auto& [name, h] : hosts_) names.push_back(h.netns);
  if (!switch_ns_.empty()) names.push_back(switch_ns_);
  try {
    for (const auto& n : names) run_root({"ip", "netns", "del", n});
    if (!dir_.empty()) run_root({"rm", "-rf", dir_});
  } catch (...) {  // a destructor never throws; a leftover namespace is deleted by the next lab
  }
}

void NetLab::ip(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"ip"};
  argv.insert(argv.end(), args.begin(), args.end());
  const CommandResult r = run_root(argv);
  if (r.status != 0) throw NetLabError("`" + joined(argv) + "` failed: " + r.out);
}

const NetLab::Host& NetLab::host(const std::string& name) const {
  const auto it = hosts_.find(name);
  if (it == hosts_.end()) throw NetLabError("no host " + name + " in the lab");
  return it->second;
}

std::string NetLab::add_host(const std::string& name) {
  if (hosts_.count(name) != 0) throw NetLabError("host " + name + " exists");
  Host h;
  h.index = static_cast<int>(hosts_.size());
  if (h.index >= 250) throw NetLabError("too many hosts");
  h.netns = prefix_ + name;
  h.port = "p" + std::to_string(h.index);
  h.address = "10.88.0." + std::to_string(h.index + 1);
  ip({"netns", "add", h.netns});
  hosts_[name] = h;  // from here the destructor deletes it
  // Created inside the switch namespace with its peer moved straight into the host: neither end
  // ever exists in the root namespace.
  ip({"-n", switch_ns_, "link", "add", h.port, "type", "veth", "peer", "name", "eth0", "netns",
      h.netns});
  ip({"-n", switch_ns_, "link", "set", h.port, "master", "main"});
  ip({"-n", switch_ns_, "link", "set", h.port, "up"});
  ip({"-n", h.netns, "addr", "add", h.address + "/24", "dev", "eth0"});
  ip({"-n", h.netns, "link", "set", "eth0", "up"});
  ip({"-n", h.netns, "link", "set", "lo", "up"});
  return h.address;
}

const std::string& NetLab::address(const std::string& name) const {
  return host(name).address;
}

std::string NetLab::netns_name(const std::string& name) const {
  return host(name).netns;
}

void NetLab::partition(const std::vector<std::string>& hosts) {
  for (const auto& name : hosts)
    ip({"-n", switch_ns_, "link", "set", host(name).port, "master", "side"});
}

void NetLab::heal() {
  for (const auto& [name, h] : hosts_)
    ip({"-n", switch_ns_, "link", "set", h.port, "master", "main"});
}

void NetLab::flaky(const std::string& name, int percent) {
  // On the wire (the bridge's forward hook in the switch namespace), not in the host: the host's
  // own stack sees plain loss, never a local EPERM from an output-hook drop. Each direction draws
  // its own number.
  const Host& h = host(name);
  const std::string table = "flaky_" + h.port;
  std::string rules = "table bridge " + table + "\ndelete table bridge " + table + "\n";
  if (percent < 0 || percent > 100) throw NetLabError("flaky: percent must be 0..100");
  if (percent > 0) {
    // numgen's values are 0..99: 100 % is an unconditional drop
    const std::string draw =
        percent < 100 ? "numgen random mod 100 < " + std::to_string(percent) + " " : "";
    rules += "table bridge " + table +
             " {\n chain forward {\n"
             "  type filter hook forward priority 0; policy accept;\n"
             "  iifname \"" +
             h.port + "\" " + draw +
             "counter drop\n"
             "  oifname \"" +
             h.port + "\" " + draw + "counter drop\n }\n}\n";
  }
  const std::string file = dir_ + "/" + table + ".nft";
  write_text(file, rules);
  const CommandResult r = run_root({"ip", "netns", "exec", switch_ns_, "nft", "-f", file});
  if (r.status != 0) throw NetLabError("nft -f " + file + " failed: " + r.out);
}

long long NetLab::flaky_drops(const std::string& name) {
  const std::string table = "flaky_" + host(name).port;
  const CommandResult r =
      run_root({"ip", "netns", "exec", switch_ns_, "nft", "list", "table", "bridge", table});
  if (r.status != 0) return -1;
  long long total = 0;
  for (std::size_t at = 0; (at = r.out.find("packets ", at)) != std::string::npos;) {
    at += 8;
    total += std::strtoll(r.out.c_str() + at, nullptr, 10);
  }
  return total;
}

pid_t NetLab::spawn(const std::string& name, const std::vector<std::string>& argv,
                    const std::string& log_path, const std::vector<std::string>& env) {
  Launch l(argv, env);
  l.netns_path = "/run/netns/" + host(name).netns;
  l.log_path = log_path;
  const pid_t pid = launch(l);
  started_.push_back(pid);
  return pid;
}

std::optional<int> NetLab::wait_exit(pid_t pid, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (true) {
    if (const auto it = exited_.find(pid); it != exited_.end()) return it->second;
    int st = 0;
    const pid_t r = ::waitpid(pid, &st, WNOHANG);
    if (r == pid) {
      exited_[pid] = decode_status(st);
      continue;
    }
    if (r < 0) return std::nullopt;  // not our child
    if (std::chrono::steady_clock::now() >= end) return std::nullopt;
    std::this_thread::sleep_for(10ms);
  }
}

bool NetLab::running(pid_t pid) {
  return !wait_exit(pid, 0ms).has_value();
}

int NetLab::stop(pid_t pid, std::chrono::milliseconds grace) {
  if (const auto st = wait_exit(pid, 0ms)) return *st;
  ::kill(-pid, SIGTERM);
  ::kill(-pid, SIGCONT);  // a stopped process would not see SIGTERM
  if (const auto st = wait_exit(pid, grace)) return *st;
  ::kill(-pid, SIGKILL);
  if (const auto st = wait_exit(pid, 10s)) return *st;
  return -1;
}

void NetLab::pause(pid_t pid) {
  ::kill(-pid, SIGSTOP);
}
void NetLab::resume(pid_t pid) {
  ::kill(-pid, SIGCONT);
}
void NetLab::resume_leader_only(pid_t pid) {
  ::kill(pid, SIGCONT);
}

CommandResult NetLab::run(const std::string& name, const std::vector<std::string>& argv,
                          std::chrono::milliseconds limit) {
  Launch l(argv, {});
  l.netns_path = "/run/netns/" + host(name).netns;
  return run_captured(l, limit);
}

// --- redis on lab hosts ---------------------------------------------------------------------

namespace {

std::string server_dir(NetLab& lab, const std::string& host, const std::string& what) {
  std::string d = lab.dir();
  d.append("/").append(host).append("-").append(what);
  ::mkdir(d.c_str(), 0755);
  return d;
}

void await_ping(NetLab& lab, const std::string& host, pid_t pid, int port, const std::string& log) {
  const bool up = poll_until(
      [&] {
        return !lab.running(pid) ||
               LabRedis::cli(lab, host, lab.address(host), port, {"PING"}).find("PONG") !=
                   std::string::npos;
      },
      10s, 50ms);
  if (!up || !lab.running(pid)) {
    throw NetLabError("redis on " + host + ":" + std::to_string(port) +
                      " did not start: " + read_text(log));
  }
}

}  // namespace

pid_t LabRedis::start_server(NetLab& lab, const std::string& host,
                             const std::vector<std::string>& extra_args) {
  const std::string d = server_dir(lab, host, "redis");
  std::vector<std::string> argv = {"redis-server", "--bind", lab.address(host), "--port", "6379",
                                   "--save", "", "--appendonly", "no", "--dir", d, "--logfile",
                                   d + "/redis.log", "--daemonize", "no", "--protected-mode", "no",
                                   // replicas sync at once instead of after 5 s
                                   "--repl-diskless-sync-delay", "0"};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  const pid_t pid = lab.spawn(host, argv, d + "/stdout.log");
  await_ping(lab, host, pid, 6379, d + "/redis.log");
  return pid;
}

pid_t LabRedis::start_sentinel(NetLab& lab, const std::string& host, const std::string& master,
                               const std::string& primary_address,
                               std::chrono::milliseconds down_after,
                               std::chrono::milliseconds failover_timeout) {
  const std::string d = server_dir(lab, host, "sentinel");
  const std::string conf = d + "/sentinel.conf";  // a sentinel rewrites its own config file
  write_text(conf, "port 26379\nbind " + lab.address(host) +
                       "\nprotected-mode no\ndaemonize no\ndir " + d + "\nlogfile " + d +
                       "/sentinel.log\nsentinel monitor " + master + " " + primary_address +
                       " 6379 2\nsentinel down-after-milliseconds " + master + " " +
                       std::to_string(down_after.count()) + "\nsentinel failover-timeout " +
                       master + " " + std::to_string(failover_timeout.count()) +
                       "\nsentinel parallel-syncs " + master + " 1\n");
  const pid_t pid = lab.spawn(host, {"redis-server", conf, "--sentinel"}, d + "/stdout.log");
  await_ping(lab, host, pid, 26379, d + "/sentinel.log");
  return pid;
}

std::string LabRedis::cli(NetLab& lab, const std::string& from, const std::string& target_address,
                          int port, const std::vector<std::string>& args,
                          std::chrono::milliseconds limit) {
  std::vector<std::string> argv = {"redis-cli", "-h", target_address, "-p", std::to_string(port)};
  argv.insert(argv.end(), args.begin(), args.end());
  return lab.run(from, argv, limit).out;
}

}  // namespace lockwire::test
