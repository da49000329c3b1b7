// A test network of Linux network namespaces, for real partition tests (issue #28): one "switch"
// namespace holding two bridges (`main` and `side`), one namespace per host joined to it by a veth
// pair, addresses only inside the namespaces (nothing in the root namespace: no packet of a test
// can leave the lab). A partition moves hosts' switch ports onto `side`: each side keeps talking
// among itself, packets across are silently dropped (no RST, no ICMP), as in a real cut. The
// kernel here has no netem, so a lossy link is an nftables rule (`numgen random mod 100 < N`).
//
// Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN for setns), `ip` and `nft`; NetLab::unavailable_reason()
// says why not, for GTEST_SKIP.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace lockwire::test {

struct NetLabError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What a bounded command run gave back.
struct CommandResult {
  int status = -1;  // exit status, 128+N for signal N, -1 when killed at its deadline
  std::string out;  // stdout and stderr, interleaved
};

class NetLab {
 public:
  // Empty when a lab can be built here; otherwise why not (not root, `ip`/`nft` missing, the
  // kernel refused a namespace: with the command's own words).
  [[nodiscard]] static std::string unavailable_reason();

  // Creates the switch namespace and its two bridges; first deletes namespaces of the same family
  // and lab directories left by a crashed earlier run (their pid is gone). Throws NetLabError.
  NetLab();
  // Stops every process it started (SIGKILL to each group, by pid) and deletes every namespace.
  ~NetLab();
  NetLab(const NetLab&) = delete;
  NetLab& operator=(const NetLab&) = delete;

  // A new host namespace joined to `main`; returns its IPv4 address (10.88.0.x/24).
  std::string add_host(const std::string& name);
  [[nodiscard]] const std::string& address(const std::string& host) const;
  [[nodiscard]] std::string netns_name(const std::string& host) const;

  // Moves these hosts' links onto the `side` bridge (those not named stay on `main`).
  void partition(const std::vector<std::string>& hosts);
  // Every host back on `main`.
  void heal();
  // Drops `percent` % of the packets each way on the host's link (0: removes the rule).
  void flaky(const std::string& host, int percent);
  // Packets the host's flaky rule has dropped so far (both ways), -1 if none is installed.
  long long flaky_drops(const std::string& host);

  // Starts argv inside the host's namespace, in a process group of its own (pgid == pid), stdin
  // /dev/null, stdout and stderr appended to `log_path`; `env` entries ("K=V") are added to the
  // environment. The child dies with the test (PR_SET_PDEATHSIG). Throws on failure.
  pid_t spawn(const std::string& host, const std::vector<std::string>& argv,
              const std::string& log_path, const std::vector<std::string>& env = {});
  // Exit status (128+N for signal N) if the process ended within `limit`, else nullopt (it keeps
  // running). Each pid is reaped once; later calls return the stored status.
  std::optional<int> wait_exit(pid_t pid, std::chrono::milliseconds limit);
  // SIGTERM to its group, SIGKILL after `grace`; returns its exit status.
  int stop(pid_t pid, std::chrono::milliseconds grace = std::chrono::seconds(3));
  void pause(pid_t pid);   // SIGSTOP to its group
  void resume(pid_t pid);  // SIGCONT to its group
  // SIGCONT to that process alone (its group's other members stay stopped).
  void resume_leader_only(pid_t pid);
  [[nodiscard]] bool running(pid_t pid);

  // Runs argv inside the host's namespace and returns its output; killed at `limit` (a command
  // across a partition blocks: every run is bounded).
  CommandResult run(const std::string& host, const std::vector<std::string>& argv,
                    std::chrono::milliseconds limit = std::chrono::seconds(5));

  // A directory for this lab's files (servers' dirs, logs), removed with the lab.
  [[nodiscard]] const std::string& dir() const noexcept { return dir_; }

 private:
  struct Host {
    std::string netns;
    std::string port;  // the veth end in the switch namespace
    std::string address;
    int index = 0;
  };
  const Host& host(const std::string& name) const;
  void ip(const std::vector<std::string>& args);  // `ip ...` in the root namespace; throws

  std::string prefix_;  // lwpt<pid>-<seq>-
  std::string switch_ns_;
  std::string dir_;
  std::map<std::string, Host> hosts_;
  std::map<pid_t, int> exited_;  // reaped pids and their statuses
  std::vector<pid_t> started_;
};

// redis-server / sentinel processes on a NetLab host, bound to that host's address.
class LabRedis {
 public:
  // A redis-server on host:6379 (no persistence) with extra command-line options; returns once it
  // answers PING (throws if not within 10 s).
  static pid_t start_server(NetLab& lab, const std::string& host,
                            const std::vector<std::string>& extra_args = {});
  // A sentinel on host:26379 monitoring `master` at primary_address:6379, quorum 2.
  static pid_t start_sentinel(NetLab& lab, const std::string& host, const std::string& master,
                              const std::string& primary_address,
                              std::chrono::milliseconds down_after,
                              std::chrono::milliseconds failover_timeout);
  // redis-cli -h <target_address> -p <port> ARGS..., run from inside `from` (bounded).
  static std::string cli(NetLab& lab, const std::string& from, const std::string& target_address,
                         int port, const std::vector<std::string>& args,
                         std::chrono::milliseconds limit = std::chrono::seconds(3));
};

// Polls `pred` every `step` until it holds or `limit` passes (every wait has a deadline).
template <class Pred>
bool poll_until(Pred pred, std::chrono::milliseconds limit,
                std::chrono::milliseconds step = std::chrono::milliseconds(100)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(step);
  }
  return pred();
}

}  // namespace lockwire::test
