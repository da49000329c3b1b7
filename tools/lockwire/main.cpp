// lockwire: the command-line lock (run, acquire, release, renew, force-release, inspect, watch).
//
// Everything runs on one UvLoop in the main thread: the async lock::Client, a watchdog timer,
// libuv signal handles and (for `run`) the child process via uv_spawn, so lease loss, child exit
// and signals are all plain callbacks on one thread — no races between them.
#include <signal.h>
#include <unistd.h>
#include <uv.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <optional>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "args.hpp"
#include "lockwire/lock/client.hpp"
#include "lockwire/lock/protocol.hpp"
#include "lockwire/lock/watch.hpp"
#include "lockwire/loop/connection.hpp"
#include "lockwire/loop/uv_loop.hpp"

extern char** environ;

namespace lockwire::cli {
namespace {

using namespace std::chrono_literals;
using Ec = std::error_code;

constexpr const char* kVersion = "lockwire 0.1.0";
constexpr std::string_view kDefaultUrl = "redis://127.0.0.1:6379";

__attribute__((format(printf, 1, 2))) void print_err(const char* fmt, ...) {
  std::string line = "lockwire: ";
  va_list ap;
  va_start(ap, fmt);
  char buf[2048];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  line += buf;
  line += '\n';
  std::fputs(line.c_str(), stderr);
}

std::string kind_name(lock::Kind k) {
  return k == lock::Kind::shared ? "shared" : "exclusive";
}

// Where we connect, without credentials (for messages).
std::string describe_endpoint(const loop::Endpoint& ep) {
  std::string s = ep.tls ? "rediss://" : "redis://";
  if (ep.kind == loop::Endpoint::Kind::unix_socket) return "unix://" + ep.path;
  return s + ep.host + ":" + std::to_string(ep.port);
}

std::string iso_time(loop::WallTime t) {
  const auto ns = t.since_epoch.count();
  const std::time_t secs = static_cast<std::time_t>(ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>((ns / 1'000'000) % 1000));
  return buf;
}

std::string default_owner() {
  char host[256] = {0};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') std::strcpy(host, "unknown");
  std::random_device rd;
  char buf[400];
  std::snprintf(buf, sizeof buf, "%s:%ld:%08x", host, static_cast<long>(::getpid()),
                static_cast<unsigned>(rd()));
  return buf;
}

// Verbose progress from the lock client's hooks.
class VerboseMetrics final : public lock::Metrics {
 public:
  explicit VerboseMetrics(std::string resource) : resource_(std::move(resource)) {}
  void on_op(lock::Op op, lock::Kind, Ec ec, lock::Nanos latency) noexcept override {
    if (op != lock::Op::renew) return;
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(latency).count();
    if (ec) {
      print_err("%s: renew failed: %s", resource_.c_str(), ec.message().c_str());
    } else {
      print_err("%s: renewed (%lld us)", resource_.c_str(), static_cast<long long>(us));
    }
  }

  void on_degraded(std::string_view what, std::string_view words) noexcept override {
    print_err("%s: server: %.*s (%.*s)", resource_.c_str(), static_cast<int>(what.size()),
              what.data(), static_cast<int>(words.size()), words.data());
  }

 private:
  std::string resource_;
};

// Naming the holders of a resource we did not get is a courtesy: it gets this long.
constexpr Nanos kReportGrace = 1s;
// After COMMAND exits, the release gets this long before we exit anyway (the lease then ends
// with its TTL, and we say so).
constexpr Nanos kReleaseBound = 5s;

// One subcommand. Every protocol step goes through lock::Client (and lock::Watch), so the tool
// has exactly the library's guarantees; this class only sequences, prints and exits.
class Session {
 public:
  Session(Options o, loop::ConnectionOptions conn) : o_(std::move(o)), conn_opts_(std::move(conn)) {}
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

  int run() {
    lock::ClientOptions copts;
    copts.prefix = o_.prefix;
    copts.allow_eviction = o_.allow_eviction;
    if (o_.verbose) copts.metrics = std::make_shared<VerboseMetrics>(o_.resource);
    client_ = std::make_unique<lock::Client>(loop_, conn_opts_, copts);
    watchdog_ = loop_.make_timer([this] {
      fail(kUnavailable, "%s: no answer from %s within %s", o_.resource.c_str(),
           describe_endpoint(conn_opts_.endpoint).c_str(),
           format_duration(watchdog_after_).c_str());
    });
    grace_timer_ = loop_.make_timer([this] {
      if (on_grace_) std::exchange(on_grace_, {})();
    });
    // The library bounds every wait by wait + settle_timeout; the watchdog is the last resort
    // for everything else (a server that stops answering never makes the tool hang).
    const Nanos op_bound = o_.connect_timeout + copts.settle_timeout + kReportGrace + 2s;
    switch (o_.command) {
      case Command::run:
        install_signals();
        arm_watchdog(op_bound + o_.wait);
        connect_then([this] { acquire(true); });
        break;
      case Command::acquire:
        install_signals();
        arm_watchdog(op_bound + o_.wait);
        connect_then([this] { acquire(false); });
        break;
      case Command::release:
        arm_watchdog(op_bound);
        connect_then([this] { release(); });
        break;
      case Command::renew:
        arm_watchdog(op_bound);
        connect_then([this] { renew(); });
        break;
      case Command::force_release:
        arm_watchdog(op_bound);
        connect_then([this] { force_release(); });
        break;
      case Command::inspect:
        arm_watchdog(op_bound);
        connect_then([this] { inspect(); });
        break;
      case Command::watch:
        install_signals();
        arm_watchdog(op_bound);
        connect_then([this] { watch(); });
        break;
      case Command::none:
        return kUsage;
    }
    loop_.run();
    if (exit_ < 0) {
      print_err("%s: internal error: event loop stopped unexpectedly", o_.resource.c_str());
      return kUnavailable;
    }
    return exit_;
  }

 private:
  // ---- common ------------------------------------------------------------------------------

  void finish(int code) {
    if (exit_ >= 0) return;
    exit_ = code;
    std::fflush(stdout);
    if (watch_) watch_->close();
    if (client_) client_->close();
    loop_.stop();
  }

  __attribute__((format(printf, 3, 4))) void fail(int code, const char* fmt, ...) {
    if (exit_ >= 0) return;
    if (!o_.quiet) {
      va_list ap;
      va_start(ap, fmt);
      char buf[4096];
      std::vsnprintf(buf, sizeof buf, fmt, ap);
      va_end(ap);
      print_err("%s", buf);
    }
    finish(code);
  }

  __attribute__((format(printf, 2, 3))) void note(const char* fmt, ...) const {
    if (!o_.verbose) return;
    va_list ap;
    va_start(ap, fmt);
    char buf[4096];
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    print_err("%s", buf);
  }

  void arm_watchdog(Nanos after) {
    watchdog_after_ = after;
    watchdog_->start(after);
  }

  // Runs `then` after `after` unless something else finished first (one at a time).
  void after(Nanos d, std::function<void()> then) {
    on_grace_ = std::move(then);
    grace_timer_->start(d);
  }

  // What went wrong, in the library's (and so the server's) words when it has them.
  std::string why(Ec ec) const {
    const std::string& detail = client_->last_error();
    if (!detail.empty()) {
      // last_error starts with "<resource>: "; our messages name the resource already.
      const std::string lead = o_.resource + ": ";
      if (detail.starts_with(lead)) return detail.substr(lead.size());
      return detail;
    }
    std::string s = ec.message();
    const std::string& conn = client_->connection().last_error();
    if (conn.find(s) != std::string::npos) return conn;  // already says it, with context
    if (!conn.empty()) s += " (" + conn + ")";
    return s;
  }

  void lock_error(Ec ec) {
    if (ec == lock::Errc::invalid_argument) {
      return fail(kUsage, "%s: invalid request: %s", o_.resource.c_str(), why(ec).c_str());
    }
    std::string hint;
    if (ec == lock::Errc::unsafe_server) hint = " (or pass --allow-eviction, accepting the risk)";
    if (ec == lock::Errc::outcome_unknown) {
      return fail(kUnavailable, "%s: outcome unknown: %s", o_.resource.c_str(), why(ec).c_str());
    }
    fail(kUnavailable, "%s: %s%s", o_.resource.c_str(), why(ec).c_str(), hint.c_str());
  }

  // Runs `next` once the connection is up; a failed first connect is a connection error (the
  // connection would retry, but a command-line tool should say so at once). Later losses and
  // reconnects are noted with -v.
  void connect_then(std::function<void()> next) {
    client_->connection().add_state_handler(
        [this, next = std::move(next)](loop::ConnectionState s, Ec ec) {
          if (exit_ >= 0) return;
          if (connected_) {
            if (s == loop::ConnectionState::disconnected && ec) {
              note("%s: connection lost (%s); reconnecting", o_.resource.c_str(),
                   why(ec).c_str());
            } else if (s == loop::ConnectionState::ready) {
              note("%s: reconnected to %s", o_.resource.c_str(),
                   describe_endpoint(conn_opts_.endpoint).c_str());
            }
            return;
          }
          if (s == loop::ConnectionState::ready) {
            connected_ = true;
            note("connected to %s", describe_endpoint(conn_opts_.endpoint).c_str());
            loop_.post(next);
          } else if (s == loop::ConnectionState::disconnected && ec) {
            std::string detail = client_->connection().last_error();
            if (detail.empty()) detail = ec.message();
            fail(kUnavailable, "%s: cannot connect to %s: %s", o_.resource.c_str(),
                 describe_endpoint(conn_opts_.endpoint).c_str(), detail.c_str());
          }
        });
    client_->start();
  }

  void install_signals() {
    for (int sig : {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGWINCH}) {
      auto* h = new uv_signal_t;
      uv_signal_init(loop_.native(), h);
      h->data = this;
      uv_signal_start(
          h,
          [](uv_signal_t* sh, int signum) { static_cast<Session*>(sh->data)->on_signal(signum); },
          sig);
      // Signal handles must not keep the loop alive on their own.
      uv_unref(reinterpret_cast<uv_handle_t*>(h));
      signals_.push_back(h);
    }
  }

  void on_signal(int sig) {
    const bool terminating = sig == SIGHUP || sig == SIGINT || sig == SIGQUIT || sig == SIGTERM;
    if (o_.command == Command::watch) {
      if (terminating) finish(kOk);
      return;
    }
    // run (and acquire, which never has a child):
    if (child_running_) {
      note("%s: forwarding signal %d to COMMAND (pid %d)", o_.resource.c_str(), sig, child_pid_);
      uv_process_kill(proc_, sig);
      return;
    }
    if (!terminating || lease_.valid() || abort_code_ >= 0 || exit_ >= 0) return;
    // Still waiting for the lock: give up. The library answers once no claim of ours is left
    // (an acquire in flight is settled first; a late grant is released).
    abort_code_ = 128 + sig;
    note("%s: signal %d while waiting; giving up", o_.resource.c_str(), sig);
    if (!locking_) return finish(abort_code_);
    client_->cancel(o_.resource, owner());
  }

  const std::string& owner() const { return *o_.owner; }

  [[nodiscard]] std::optional<lock::Kind> kind_given() const {
    if (o_.shared) return lock::Kind::shared;
    return std::nullopt;  // whichever the owner holds
  }

  lock::LockRequest lock_request() const {
    lock::LockRequest req;
    req.resource = o_.resource;
    req.owner = owner();
    req.kind = o_.shared ? lock::Kind::shared : lock::Kind::exclusive;
    req.ttl = *o_.ttl;
    req.wait = o_.wait;
    return req;
  }

  // Not acquired: name the other holder(s) when the server says so in time — never ourselves.
  void report_busy(Ec ec) {
    if (ec == lock::Errc::already_held) {
      fail(kBusy, "%s: already held by owner '%s' (locks are not re-entrant)", o_.resource.c_str(),
           owner().c_str());
      return;
    }
    if (o_.quiet) return finish(kBusy);
    const std::string within =
        o_.wait > Nanos{0} ? " within " + format_duration(o_.wait) : std::string();
    after(kReportGrace, [this, within] {
      fail(kBusy, "%s: not acquired%s: held by someone else (the server did not say who in time)",
           o_.resource.c_str(), within.c_str());
    });
    client_->inspect(o_.resource, [this, within](Ec iec, const lock::LockInfo& info) {
      std::string who;
      if (!iec) {
        for (const auto& h : lock::classify(info).holders) {
          if (h.owner == owner()) continue;
          if (!who.empty()) who += ", ";
          who += "'" + h.owner + "' (" + kind_name(h.kind) + ", " + std::to_string(h.ttl_ms) +
                 "ms left)";
        }
      }
      const std::string holder = who.empty() ? "held by someone else" : "held by " + who;
      fail(kBusy, "%s: not acquired%s: %s", o_.resource.c_str(), within.c_str(), holder.c_str());
    });
  }

  // ---- acquire / run -------------------------------------------------------------------------

  void acquire(bool run_child) {
    lock::LockRequest req = lock_request();
    if (run_child) {
      req.auto_renew = true;
      req.on_lost = [this](Ec why) { on_lease_lost(why); };
    }
    locking_ = true;
    client_->lock(std::move(req), [this, run_child](Ec ec, lock::Lease lease) {
      locking_ = false;
      if (exit_ >= 0) return;
      if (abort_code_ >= 0) {
        // A signal came while waiting; a grant that raced with it is given back first.
        if (!ec) {
          return client_->release(lease, [this](Ec) { finish(abort_code_); });
        }
        return finish(abort_code_);
      }
      if (ec == lock::Errc::timed_out || ec == lock::Errc::already_held) return report_busy(ec);
      if (ec) return lock_error(ec);
      note("%s: acquired (%s, token %llu, ttl %s)", o_.resource.c_str(),
           kind_name(lease.kind()).c_str(), static_cast<unsigned long long>(lease.token()),
           format_duration(lease.ttl()).c_str());
      if (run_child) {
        lease_ = std::move(lease);
        return spawn();
      }
      if (o_.json) {
        std::printf(
            "{\"resource\":%s,\"owner\":%s,\"kind\":\"%s\",\"token\":%llu,\"ttl_ms\":%lld}\n",
            json_string(o_.resource).c_str(), json_string(owner()).c_str(),
            kind_name(lease.kind()).c_str(), static_cast<unsigned long long>(lease.token()),
            static_cast<long long>(lock::ttl_millis(lease.ttl())));
      } else {
        std::printf("%llu %s\n", static_cast<unsigned long long>(lease.token()), owner().c_str());
      }
      finish(kOk);  // the lease stays on the server until its TTL ends
    });
  }

  // ---- release / renew by owner id (no Lease object in this process) --------------------------

  void release() {
    client_->release(o_.resource, owner(), kind_given(), [this](Ec ec) {
      if (exit_ >= 0) return;
      if (ec && ec != lock::Errc::not_held) return lock_error(ec);
      if (o_.json) {
        std::printf("{\"resource\":%s,\"owner\":%s,\"released\":%s}\n",
                    json_string(o_.resource).c_str(), json_string(owner()).c_str(),
                    ec ? "false" : "true");
      }
      if (ec) {
        return fail(kNotHeld, "%s: not held by '%s' (expired, force-released or never acquired)",
                    o_.resource.c_str(), owner().c_str());
      }
      note("%s: released", o_.resource.c_str());
      finish(kOk);
    });
  }

  void renew() {
    client_->renew(o_.resource, owner(), kind_given(), *o_.ttl, [this](Ec ec) {
      if (exit_ >= 0) return;
      if (ec && ec != lock::Errc::not_held) return lock_error(ec);
      if (o_.json) {
        std::printf("{\"resource\":%s,\"owner\":%s,\"renewed\":%s,\"ttl_ms\":%lld}\n",
                    json_string(o_.resource).c_str(), json_string(owner()).c_str(),
                    ec ? "false" : "true", static_cast<long long>(lock::ttl_millis(*o_.ttl)));
      }
      if (ec) {
        return fail(kNotHeld, "%s: not held by '%s' (expired, force-released or never acquired)",
                    o_.resource.c_str(), owner().c_str());
      }
      note("%s: renewed for %s", o_.resource.c_str(), format_duration(*o_.ttl).c_str());
      finish(kOk);
    });
  }

  // ---- force-release / inspect ---------------------------------------------------------------

  void force_release() {
    client_->force_release(o_.resource, [this](Ec ec, std::size_t removed) {
      if (exit_ >= 0) return;
      if (ec) return lock_error(ec);
      if (o_.json) {
        std::printf("{\"resource\":%s,\"removed\":%zu}\n", json_string(o_.resource).c_str(),
                    removed);
      } else if (!o_.quiet) {
        std::printf("%s: removed %zu holder%s\n", o_.resource.c_str(), removed,
                    removed == 1 ? "" : "s");
      }
      finish(kOk);
    });
  }

  static std::string holders_json(const lock::HolderView& v) {
    std::string s = "[";
    for (const auto& h : v.holders) {
      if (s.size() > 1) s += ',';
      s += "{\"owner\":" + json_string(h.owner) + ",\"kind\":\"" + kind_name(h.kind) +
           "\",\"ttl_ms\":" + std::to_string(h.ttl_ms) + "}";
    }
    return s + "]";
  }

  // What the server lets a lock client do (degraded modes are visible, not silent).
  std::string server_json() const {
    const lock::ServerCapabilities& c = client_->capabilities();
    std::string s = "{\"push_wakeups\":";
    s += c.push_wakeups ? "true" : "false";
    if (!c.push_wakeups) s += ",\"tracking_error\":" + json_string(c.tracking_error);
    if (c.memory_known) {
      s += ",\"maxmemory\":" + std::to_string(c.maxmemory) +
           ",\"maxmemory_policy\":" + json_string(c.maxmemory_policy);
    } else {
      s += ",\"info_error\":" + json_string(c.info_error);
    }
    return s + "}";
  }

  void inspect() {
    client_->inspect(o_.resource, [this](Ec ec, const lock::LockInfo& info) {
      if (exit_ >= 0) return;
      if (ec) return lock_error(ec);
      const lock::HolderView v = lock::classify(info);
      const lock::ServerCapabilities& c = client_->capabilities();
      if (o_.json) {
        std::printf(
            "{\"resource\":%s,\"state\":\"%s\",\"holders\":%s,\"last_token\":%llu,\"server\":%s}"
            "\n",
            json_string(o_.resource).c_str(), lock::state_name(v.state), holders_json(v).c_str(),
            static_cast<unsigned long long>(info.last_token), server_json().c_str());
      } else {
        std::printf("resource:   %s\nstate:      %s\n", o_.resource.c_str(),
                    lock::state_name(v.state));
        for (const auto& h : v.holders) {
          std::printf("holder:     %s %s (%lldms left)\n", kind_name(h.kind).c_str(),
                      h.owner.c_str(), static_cast<long long>(h.ttl_ms));
        }
        std::printf("last_token: %llu\n", static_cast<unsigned long long>(info.last_token));
        if (!c.push_wakeups) {
          std::printf("wake-ups:   polling (server refused tracking: %s)\n",
                      c.tracking_error.c_str());
        }
      }
      finish(kOk);
    });
  }

  // ---- watch -------------------------------------------------------------------------------

  void watch() {
    watchdog_->stop();
    watch_ = std::make_unique<lock::Watch>(
        *client_, conn_opts_, o_.resource, [this](const lock::WatchEvent& e) { emit(e); },
        [this](std::string_view n) {
          note("%s: %.*s", o_.resource.c_str(), static_cast<int>(n.size()), n.data());
        });
    watch_->start();
  }

  void emit(const lock::WatchEvent& e) {
    if (exit_ >= 0) return;
    const std::string t = iso_time(loop_.wall_now());
    const char* event = lock::event_name(e.type);
    const bool initial = e.type == lock::WatchEvent::Type::initial;
    const std::uint64_t token = e.view.last_token;
    if (o_.json) {
      std::string line = "{\"time\":\"" + t + "\",\"resource\":" + json_string(o_.resource) +
                         ",\"event\":\"" + event + "\"";
      if (!initial) {
        line += ",\"kind\":\"" + kind_name(e.holder.kind) +
                "\",\"owner\":" + json_string(e.holder.owner) +
                ",\"ttl_ms\":" + std::to_string(e.holder.ttl_ms);
      } else {
        line += ",\"state\":\"" + std::string(lock::state_name(e.view.state)) +
                "\",\"holders\":" + holders_json(e.view);
      }
      line += ",\"last_token\":" + std::to_string(token) + "}\n";
      std::fputs(line.c_str(), stdout);
    } else if (!initial) {
      std::printf("%s %s %s %s %s (last token %llu)\n", t.c_str(), o_.resource.c_str(), event,
                  kind_name(e.holder.kind).c_str(), e.holder.owner.c_str(),
                  static_cast<unsigned long long>(token));
    } else {
      std::string who;
      for (const auto& x : e.view.holders) who += " " + kind_name(x.kind) + ":" + x.owner;
      std::printf("%s %s %s %s%s (last token %llu)\n", t.c_str(), o_.resource.c_str(), event,
                  lock::state_name(e.view.state), who.c_str(),
                  static_cast<unsigned long long>(token));
    }
    std::fflush(stdout);                   // one line per change, visible at once (pipes, tests)
    if (std::ferror(stdout)) finish(kOk);  // the reader went away (`lockwire watch r | head -3`)
  }

  // ---- run ---------------------------------------------------------------------------------

  void spawn() {
    watchdog_->stop();  // COMMAND runs as long as it runs; the lease is auto-renewed
    // Environment: ours plus LOCKWIRE_* (replacing any inherited ones).
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string_view kv(*e);
      if (kv.starts_with("LOCKWIRE_RESOURCE=") || kv.starts_with("LOCKWIRE_OWNER=") ||
          kv.starts_with("LOCKWIRE_FENCING_TOKEN=")) {
        continue;
      }
      env.emplace_back(kv);
    }
    env.push_back("LOCKWIRE_RESOURCE=" + o_.resource);
    env.push_back("LOCKWIRE_OWNER=" + owner());
    env.push_back("LOCKWIRE_FENCING_TOKEN=" + std::to_string(lease_.token()));
    std::vector<char*> envp;
    for (auto& s : env) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<char*> args;
    for (auto& s : o_.argv) args.push_back(s.data());
    args.push_back(nullptr);

    uv_stdio_container_t stdio[3];
    for (int i = 0; i < 3; ++i) {
      stdio[i].flags = UV_INHERIT_FD;
      stdio[i].data.fd = i;
    }
    uv_process_options_t opts{};
    opts.exit_cb = [](uv_process_t* p, int64_t status, int term_signal) {
      static_cast<Session*>(p->data)->on_child_exit(status, term_signal);
    };
    opts.file = args[0];
    opts.args = args.data();
    opts.env = envp.data();
    opts.stdio_count = 3;
    opts.stdio = stdio;
    proc_ = new uv_process_t;
    proc_->data = this;
    const int r = uv_spawn(loop_.native(), proc_, &opts);
    if (r != 0) {
      close_process();
      const int code = r == UV_ENOENT ? kNotFound : kCannotExec;
      if (!o_.quiet) {
        print_err("%s: cannot run '%s': %s", o_.resource.c_str(), o_.argv[0].c_str(),
                  uv_strerror(r));
      }
      return release_and_exit(code);
    }
    child_running_ = true;
    child_pid_ = proc_->pid;
    note("%s: started COMMAND (pid %d)", o_.resource.c_str(), child_pid_);
  }

  void close_process() {
    uv_close(reinterpret_cast<uv_handle_t*>(proc_),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_process_t*>(h); });
    proc_ = nullptr;
  }

  void on_lease_lost(Ec why_lost) {
    if (exit_ >= 0) return;
    lease_lost_ = true;
    if (!child_running_) return;
    if (!o_.quiet) {
      const std::string reason =
          why_lost == lock::Errc::lost ? "" : " (" + why_lost.message() + ")";
      print_err("%s: lease lost%s; terminating COMMAND (pid %d)", o_.resource.c_str(),
                reason.c_str(), child_pid_);
    }
    uv_process_kill(proc_, SIGTERM);
    kill_timer_ = loop_.make_timer([this] {
      if (!child_running_) return;
      if (!o_.quiet) {
        print_err("%s: COMMAND (pid %d) still running after %s; sending SIGKILL",
                  o_.resource.c_str(), child_pid_, format_duration(o_.kill_after).c_str());
      }
      uv_process_kill(proc_, SIGKILL);
    });
    kill_timer_->start(o_.kill_after);
  }

  void on_child_exit(std::int64_t status, int term_signal) {
    child_running_ = false;
    if (kill_timer_) kill_timer_->stop();
    close_process();
    const int code = term_signal != 0 ? 128 + term_signal : static_cast<int>(status);
    note("%s: COMMAND exited with status %d", o_.resource.c_str(), code);
    if (lease_lost_) {
      // Reported when the loss happened; the loss wins over COMMAND's own status.
      return finish(kLost);
    }
    release_and_exit(code);
  }

  void release_and_exit(int code) {
    after(kReleaseBound, [this, code] {
      if (!o_.quiet) {
        print_err("%s: release got no answer within %s; the lease expires with its TTL",
                  o_.resource.c_str(), format_duration(kReleaseBound).c_str());
      }
      finish(code);
    });
    client_->release(lease_, [this, code](Ec ec) {
      if (exit_ >= 0) return;
      if (ec == lock::Errc::not_held) {
        // The lease was gone before COMMAND finished, and we had not noticed yet.
        return fail(kLost, "%s: lease was no longer held when COMMAND finished",
                    o_.resource.c_str());
      }
      if (ec) {
        if (!o_.quiet) {
          print_err("%s: release failed (%s); the lease expires with its TTL", o_.resource.c_str(),
                    why(ec).c_str());
        }
      } else {
        note("%s: released", o_.resource.c_str());
      }
      finish(code);
    });
  }

  Options o_;
  loop::ConnectionOptions conn_opts_;
  loop::UvLoop loop_;
  std::unique_ptr<lock::Client> client_;
  std::unique_ptr<lock::Watch> watch_;
  std::unique_ptr<loop::Timer> watchdog_;
  std::unique_ptr<loop::Timer> kill_timer_;
  std::unique_ptr<loop::Timer> grace_timer_;
  std::function<void()> on_grace_;
  Nanos watchdog_after_{0};
  std::vector<uv_signal_t*> signals_;
  int exit_ = -1;
  bool connected_ = false;
  bool locking_ = false;  // a lock() is waiting for its answer
  int abort_code_ = -1;   // a terminating signal came while waiting: exit with this
  // run
  lock::Lease lease_;
  uv_process_t* proc_ = nullptr;
  bool child_running_ = false;
  int child_pid_ = 0;
  bool lease_lost_ = false;
};

int usage_error(const std::string& msg) {
  print_err("%s", msg.c_str());
  std::fputs(short_usage().c_str(), stderr);
  return kUsage;
}

int main_impl(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  Options o;
  std::string err;
  switch (parse_args(args, o, err)) {
    case ParseStatus::help:
      std::fputs(usage_text().c_str(), stdout);
      return kOk;
    case ParseStatus::version:
      std::printf("%s\n", kVersion);
      return kOk;
    case ParseStatus::error:
      return usage_error(err);
    case ParseStatus::ok:
      break;
  }

  std::string url(kDefaultUrl);
  if (o.url) {
    url = *o.url;
  } else if (const char* env = std::getenv("LOCKWIRE_URL"); env != nullptr && *env != '\0') {
    url = env;
  }
  loop::ConnectionOptions conn;
  std::string why;
  if (auto ec = loop::parse_url(url, conn, &why)) {
    return usage_error("bad URL '" + url + "': " + (why.empty() ? ec.message() : why));
  }
  const bool want_tls = o.tls || o.tls_insecure || !o.tls_ca.empty() || !o.tls_cert.empty() ||
                        !o.tls_key.empty() || !o.tls_server_name.empty();
  if (want_tls) {
    if (!conn.endpoint.tls) conn.endpoint.tls = loop::TlsOptions{};
    auto& t = *conn.endpoint.tls;
    if (!o.tls_ca.empty()) t.ca_file = o.tls_ca;
    if (!o.tls_cert.empty()) t.cert_file = o.tls_cert;
    if (!o.tls_key.empty()) t.key_file = o.tls_key;
    if (!o.tls_server_name.empty()) t.server_name = o.tls_server_name;
    if (t.cert_file.empty() != t.key_file.empty()) {
      return usage_error("--tls-cert and --tls-key go together");
    }
    if (o.tls_insecure) {
      t.verify_peer = false;
      // Loud on purpose, even with --quiet: anyone on the path can impersonate the server.
      print_err(
          "WARNING: --tls-insecure: the server certificate is NOT verified; the connection can "
          "be intercepted");
    }
  }
  conn.connect_timeout = o.connect_timeout;
  if (conn.client_name.empty()) conn.client_name = "lockwire-cli";

  if (!o.owner) o.owner = default_owner();
  const lock::Limits limits;
  if (auto ec = lock::validate_prefix(o.prefix, limits, &why)) return usage_error(why);
  if (auto ec = lock::validate_name("resource", o.resource, limits.max_resource_bytes, &why)) {
    return usage_error(why);
  }
  if (auto ec = lock::validate_name("owner", *o.owner, limits.max_owner_bytes, &why)) {
    return usage_error(why);
  }
  if (o.ttl) {
    if (auto ec = lock::validate_ttl(*o.ttl, limits, &why)) return usage_error(why);
  }
  if (auto ec = lock::validate_wait(o.wait, limits, &why)) return usage_error(why);

  ::signal(SIGPIPE, SIG_IGN);  // a closed stdout or socket is an error code, not a death
  Session s(std::move(o), std::move(conn));
  return s.run();
}

}  // namespace
}  // namespace lockwire::cli

int main(int argc, char** argv) {
  try {
    return lockwire::cli::main_impl(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lockwire: fatal: %s\n", e.what());
    return lockwire::cli::kUnavailable;
  }
}
