// One subcommand of the lockwire tool. Every protocol step goes through lock::Client (and
// lock::Watch), so the tool has exactly the library's guarantees; Session only sequences,
// prints and exits. Everything runs on one UvLoop in the main thread: the lock client, a
// watchdog timer, libuv signal handles and (for `run`) the child process via uv_spawn, so lease
// loss, child exit and signals are plain callbacks on one thread — no races between them.
//   session.cpp        common steps (connect, signals, messages) and acquire, release, renew,
//                      force-release, inspect
//   run_command.cpp    `run`: COMMAND as a child process while the lease is auto-renewed
//   watch_command.cpp  `watch`: lock::Watch events as lines
#pragma once

#include <signal.h>
#include <unistd.h>
#include <uv.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "args.hpp"
#include "lockwire/lock/client.hpp"
#include "lockwire/lock/watch.hpp"
#include "lockwire/loop/uv_loop.hpp"

namespace lockwire::cli {

using namespace std::chrono_literals;
using Ec = std::error_code;

// Naming the holders of a resource we did not get is a courtesy: it gets this long.
constexpr Nanos kReportGrace = 1s;
// After COMMAND exits, the release gets this long before we exit anyway (the lease then ends
// with its TTL, and we say so).
constexpr Nanos kReleaseBound = 5s;

// One subcommand. Every protocol step goes through lock::Client (and lock::Watch), so the tool
// has exactly the library's guarantees; this class only sequences, prints and exits.
class Session {
 public:
  Session(Options o, loop::ConnectionOptions conn)
      : o_(std::move(o)), conn_opts_(std::move(conn)) {}
  ~Session() {
    watchdog_.reset();
    kill_timer_.reset();
    grace_timer_.reset();
    watch_.reset();
    client_.reset();
    for (uv_signal_t* s : signals_) {
      uv_close(reinterpret_cast<uv_handle_t*>(s),
               [](uv_handle_t* h) { delete reinterpret_cast<uv_signal_t*>(h); });
    }
    if (proc_ != nullptr) close_process();
    // ~UvLoop runs the loop until every handle (ours included) has finished closing.
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  int run();
  // ---- common ------------------------------------------------------------------------------

 private:
  void finish(int code);

  __attribute__((format(printf, 3, 4))) void fail(int code, const char* fmt, ...);

  __attribute__((format(printf, 2, 3))) void note(const char* fmt, ...) const;

  void arm_watchdog(Nanos after);

  // Runs `then` after `after` unless something else finished first (one at a time).
  void after(Nanos d, std::function<void()> then);

  // What went wrong, in the library's (and so the server's) words when it has them.
  std::string why(Ec ec) const;

  void lock_error(Ec ec);
  void not_held(const std::string& fields);
  void start(bool signals, Nanos wait, std::function<void()> step);

  [[nodiscard]] std::string connected_to() const;

  // Runs `next` once the connection is up; a failed first connect is a connection error (the
  // connection would retry, but a command-line tool should say so at once). Later losses and
  // reconnects are noted with -v.
  void connect_then(std::function<void()> next);

  void install_signals();

  void on_signal(int sig);

  const std::string& owner() const { return *o_.owner; }

  [[nodiscard]] std::optional<lock::Kind> kind_given() const;

  lock::LockRequest lock_request() const;

  // Not acquired: name the other holder(s) when the server says so in time — never ourselves.
  void report_busy(Ec ec);
  // ---- acquire / run -------------------------------------------------------------------------

  void acquire(bool run_child);
  // ---- release / renew by owner id (no Lease object in this process) --------------------------

  void release();

  void renew();
  void acquire_all(bool run_child);
  void upgrade();

  // ---- force-release / inspect ---------------------------------------------------------------

  void force_release();

  static std::string holders_json(const lock::HolderView& v);

  // What the server lets a lock client do (degraded modes are visible, not silent).
  std::string server_json() const;

  void inspect();
  // ---- watch -------------------------------------------------------------------------------

  void watch();

  void emit(const lock::WatchEvent& e);
  // ---- run ---------------------------------------------------------------------------------

  void spawn();

  void close_process();

  void on_lease_lost(Ec why_lost);

  void on_child_exit(std::int64_t status, int term_signal);

  void release_and_exit(int code);

  Options o_;
  loop::ConnectionOptions conn_opts_;
  loop::UvLoop loop_;
  std::optional<loop::MonoTime> wait_until_;  // --wait's end, from the first attempt
  [[nodiscard]] Nanos min_lease_left() const;
  std::unique_ptr<lock::Client> client_;
  std::unique_ptr<lock::Watch> watch_;
  std::unique_ptr<loop::Timer> watchdog_;
  std::unique_ptr<loop::Timer> kill_timer_;
  std::unique_ptr<loop::Timer> grace_timer_;
  std::function<void()> on_grace_;
  Nanos watchdog_after_{0};
  Nanos op_bound_{0};  // how long any subcommand may take, --wait aside
  std::vector<uv_signal_t*> signals_;
  int exit_ = -1;
  std::string failure_;                // the last failure's message (for --json)
  bool json_failure_printed_ = false;  // --json: the one failure object is out
  bool connected_ = false;
  bool locking_ = false;  // a lock() is waiting for its answer
  int abort_code_ = -1;   // a terminating signal came while waiting: exit with this
  // run
  lock::Lease lease_;   // run: the lease (with several RESOURCEs, the first of set_)
  lock::LeaseSet set_;  // run with several RESOURCEs
  uv_process_t* proc_ = nullptr;
  bool child_running_ = false;
  int child_pid_ = 0;
  bool lease_lost_ = false;
};

}  // namespace lockwire::cli
