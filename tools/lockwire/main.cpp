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
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "args.hpp"
#include "lockwire/lock/client.hpp"
#include "lockwire/lock/protocol.hpp"
#include "lockwire/loop/connection.hpp"
#include "lockwire/loop/uv_loop.hpp"
#include "lockwire/resp/encoder.hpp"

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

// Live holders of a resource; shared holders whose companion key is gone are over (stale).
struct View {
  enum class State : std::uint8_t { free, exclusive, shared, contended };
  State state = State::free;
  std::vector<lock::protocol::Holder> holders;
};

View classify(const lock::LockInfo& info) {
  View v;
  std::size_t x = 0;
  for (const auto& h : info.holders) {
    if (h.kind == lock::Kind::shared && h.ttl_ms == -2) continue;
    if (h.kind == lock::Kind::exclusive) ++x;
    v.holders.push_back(h);
  }
  if (v.holders.empty()) {
    v.state = View::State::free;
  } else if (x == 0) {
    v.state = View::State::shared;
  } else if (x == 1 && v.holders.size() == 1) {
    v.state = View::State::exclusive;
  } else {
    // An exclusive claimant's field lives for one round trip next to the holder's before the
    // claimant withdraws it (docs/protocol.md): a transient state.
    v.state = View::State::contended;
  }
  return v;
}

const char* state_name(View::State s) {
  switch (s) {
    case View::State::free:
      return "free";
    case View::State::exclusive:
      return "exclusive";
    case View::State::shared:
      return "shared";
    case View::State::contended:
      return "contended";
  }
  return "?";
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

 private:
  std::string resource_;
};

class Session {
 public:
  Session(Options o, loop::ConnectionOptions conn) : o_(std::move(o)), conn_opts_(std::move(conn)) {
    keys_ = lock::protocol::make_keys(o_.prefix, o_.resource);
  }
  ~Session() {
    watchdog_.reset();
    kill_timer_.reset();
    retry_timer_.reset();
    tracker_.reset();
    cleanup_conn_.reset();
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
    if (o_.verbose) copts.metrics = std::make_shared<VerboseMetrics>(o_.resource);
    client_ = std::make_unique<lock::Client>(loop_, conn_opts_, copts);
    watchdog_ = loop_.make_timer([this] {
      fail(kUnavailable, "%s: no answer from %s within %s", o_.resource.c_str(),
           describe_endpoint(conn_opts_.endpoint).c_str(),
           format_duration(watchdog_after_).c_str());
    });
    switch (o_.command) {
      case Command::run:
        install_signals();
        arm_watchdog(o_.connect_timeout + o_.wait + 10s);
        connect_then([this] { run_acquire(); });
        break;
      case Command::acquire:
        install_signals();
        arm_watchdog(o_.connect_timeout + o_.wait + 10s);
        connect_then([this] { acquire(); });
        break;
      case Command::release:
        arm_watchdog(o_.connect_timeout + 10s);
        connect_then([this] { release(o_.shared ? lock::Kind::shared : lock::Kind::exclusive); });
        break;
      case Command::renew:
        arm_watchdog(o_.connect_timeout + 10s);
        connect_then([this] { renew(o_.shared ? lock::Kind::shared : lock::Kind::exclusive, 0); });
        break;
      case Command::force_release:
        arm_watchdog(o_.connect_timeout + 10s);
        connect_then([this] { force_release(); });
        break;
      case Command::inspect:
        arm_watchdog(o_.connect_timeout + 10s);
        connect_then([this] { inspect(); });
        break;
      case Command::watch:
        install_signals();
        arm_watchdog(o_.connect_timeout + 10s);
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
    if (client_) client_->close();
    if (tracker_) tracker_->close();
    loop_.stop();
  }

  __attribute__((format(printf, 3, 4))) void fail(int code, const char* fmt, ...) {
    if (exit_ >= 0) return;
    if (!o_.quiet) {
      va_list ap;
      va_start(ap, fmt);
      char buf[2048];
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
    char buf[2048];
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    print_err("%s", buf);
  }

  void arm_watchdog(Nanos after) {
    watchdog_after_ = after;
    watchdog_->start(after);
  }

  std::string conn_error(Ec ec, loop::Connection& conn) const {
    std::string s = ec.message();
    const std::string& detail = conn.last_error();
    if (detail.find(s) != std::string::npos) return detail;  // already says it, with context
    if (!detail.empty()) s += " (" + detail + ")";
    return s;
  }

  void lock_error(Ec ec) {
    if (ec == lock::Errc::invalid_argument) {
      fail(kUsage, "%s: invalid request: %s", o_.resource.c_str(), ec.message().c_str());
    } else {
      fail(kUnavailable, "%s: %s", o_.resource.c_str(),
           conn_error(ec, client_->connection()).c_str());
    }
  }

  // Runs `next` once the connection is up; a failed first connect is a connection error (the
  // connection would retry, but a command-line tool should say so at once).
  void connect_then(std::function<void()> next) {
    client_->connection().add_state_handler(
        [this, next = std::move(next)](loop::ConnectionState s, Ec ec) {
          if (connected_ || exit_ >= 0) return;
          if (s == loop::ConnectionState::ready) {
            connected_ = true;
            note("connected to %s", describe_endpoint(conn_opts_.endpoint).c_str());
            loop_.post(next);
          } else if (s == loop::ConnectionState::disconnected && ec) {
            fail(kUnavailable, "%s: cannot connect to %s: %s", o_.resource.c_str(),
                 describe_endpoint(conn_opts_.endpoint).c_str(),
                 conn_error(ec, client_->connection()).c_str());
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
    if (!terminating || lease_.valid() || aborting_ || exit_ >= 0) return;
    // Still waiting for the lock: give up. An acquire block may be in flight; withdraw our claim
    // (only our own owner's field can be touched) so nothing is left behind.
    aborting_ = true;
    note("%s: signal %d while waiting; giving up", o_.resource.c_str(), sig);
    client_->close();
    withdraw_claim(128 + sig);
  }

  void withdraw_claim(int code) {
    cleanup_conn_ = std::make_unique<loop::Connection>(loop_, conn_opts_);
    loop::Request r = o_.shared ? lock::protocol::shared_release(keys_, owner())
                                : lock::protocol::exclusive_release(keys_, owner());
    loop::RequestOptions ro;
    ro.timeout = 2s;
    cleanup_conn_->send(
        std::move(r), [this, code](Ec, const loop::Replies&) { finish(code); }, ro);
    cleanup_conn_->start();
  }

  const std::string& owner() const { return *o_.owner; }

  lock::LockRequest lock_request() const {
    lock::LockRequest req;
    req.resource = o_.resource;
    req.owner = owner();
    req.kind = o_.shared ? lock::Kind::shared : lock::Kind::exclusive;
    req.ttl = *o_.ttl;
    req.wait = o_.wait;
    return req;
  }

  // Not acquired: name the holder(s) in the message when we can.
  void report_busy(Ec ec) {
    if (ec == lock::Errc::already_held) {
      fail(kBusy, "%s: already held by owner '%s' (locks are not re-entrant)", o_.resource.c_str(),
           owner().c_str());
      return;
    }
    if (o_.quiet) return finish(kBusy);
    client_->inspect(o_.resource, [this](Ec iec, const lock::LockInfo& info) {
      std::string who;
      if (!iec) {
        for (const auto& h : classify(info).holders) {
          if (!who.empty()) who += ", ";
          who += "'" + h.owner + "' (" + kind_name(h.kind) + ", " + std::to_string(h.ttl_ms) +
                 "ms left)";
        }
      }
      const std::string within =
          o_.wait > Nanos{0} ? " within " + format_duration(o_.wait) : std::string();
      const std::string holder = who.empty() ? "held by someone else" : "held by " + who;
      fail(kBusy, "%s: not acquired%s: %s", o_.resource.c_str(), within.c_str(), holder.c_str());
    });
  }

  // ---- acquire -----------------------------------------------------------------------------

  void acquire() {
    client_->lock(lock_request(), [this](Ec ec, lock::Lease lease) {
      if (exit_ >= 0 || aborting_) return;
      if (ec == lock::Errc::timed_out || ec == lock::Errc::already_held) return report_busy(ec);
      if (ec) return lock_error(ec);
      if (o_.json) {
        std::printf(
            "{\"resource\":%s,\"owner\":%s,\"kind\":\"%s\",\"token\":%llu,\"ttl_ms\":%lld}\n",
            json_string(o_.resource).c_str(), json_string(owner()).c_str(),
            kind_name(lease.kind()).c_str(), static_cast<unsigned long long>(lease.token()),
            static_cast<long long>(lock::ttl_millis(lease.ttl())));
      } else {
        std::printf("%llu %s\n", static_cast<unsigned long long>(lease.token()), owner().c_str());
      }
      note("%s: acquired (%s, token %llu, ttl %s)", o_.resource.c_str(),
           kind_name(lease.kind()).c_str(), static_cast<unsigned long long>(lease.token()),
           format_duration(lease.ttl()).c_str());
      finish(kOk);  // the lease stays on the server until its TTL ends
    });
  }

  // ---- release / renew by owner id (no Lease object in this process) --------------------------

  void release(lock::Kind kind) {
    loop::Request r = kind == lock::Kind::shared
                          ? lock::protocol::shared_release(keys_, owner())
                          : lock::protocol::exclusive_release(keys_, owner());
    client_->connection().send(std::move(r), [this, kind](Ec ec, const loop::Replies& rep) {
      if (exit_ >= 0) return;
      if (ec && ec != loop::Errc::server_error) return lock_error(ec);
      const auto res = lock::protocol::parse_release(kind, rep);
      if (res == lock::protocol::ReleaseResult::bad_reply) {
        return fail(kUnavailable, "%s: unexpected reply to release: %s", o_.resource.c_str(),
                    client_->connection().last_error().c_str());
      }
      if (res == lock::protocol::ReleaseResult::not_held && kind == lock::Kind::exclusive &&
          !o_.shared) {
        return release(lock::Kind::shared);  // the owner may hold a shared lease
      }
      const bool ok = res == lock::protocol::ReleaseResult::released;
      if (o_.json) {
        std::printf("{\"resource\":%s,\"owner\":%s,\"released\":%s}\n",
                    json_string(o_.resource).c_str(), json_string(owner()).c_str(),
                    ok ? "true" : "false");
      }
      if (!ok) {
        return fail(kNotHeld, "%s: not held by '%s' (expired, force-released or never acquired)",
                    o_.resource.c_str(), owner().c_str());
      }
      note("%s: released (%s)", o_.resource.c_str(), kind_name(kind).c_str());
      finish(kOk);
    });
  }

  void renew(lock::Kind kind, int attempt) {
    client_->connection().watch(
        lock::protocol::renew_watch(kind, keys_, owner()),
        [this, kind, attempt](Ec ec, const loop::Replies& rep, loop::WatchTxn txn) {
          if (exit_ >= 0) return;
          if ((ec && ec != loop::Errc::server_error) || !txn.valid()) {
            return lock_error(ec ? ec : make_error_code(loop::Errc::protocol_error));
          }
          const auto check = lock::protocol::parse_renew_watch(kind, rep);
          if (check == lock::protocol::RenewCheck::bad_reply) {
            txn.unwatch();
            return fail(kUnavailable, "%s: unexpected reply to renew: %s", o_.resource.c_str(),
                        client_->connection().last_error().c_str());
          }
          if (check == lock::protocol::RenewCheck::not_held) {
            txn.unwatch();
            if (kind == lock::Kind::exclusive && !o_.shared) return renew(lock::Kind::shared, 0);
            return renewed(false, kind);
          }
          txn.exec(lock::protocol::renew_exec(kind, keys_, owner(), lock::ttl_millis(*o_.ttl)),
                   [this, kind, attempt](Ec ec2, const loop::Replies& rep2) {
                     if (exit_ >= 0) return;
                     if ((ec2 && ec2 != loop::Errc::server_error) || rep2.size() == 0) {
                       return lock_error(ec2 ? ec2 : make_error_code(loop::Errc::protocol_error));
                     }
                     switch (lock::protocol::parse_renew_exec(kind, rep2.back())) {
                       case lock::protocol::RenewResult::renewed:
                         return renewed(true, kind);
                       case lock::protocol::RenewResult::not_held:
                         return renewed(false, kind);
                       case lock::protocol::RenewResult::aborted:
                         // The holder set changed between read and EXEC: read again.
                         if (attempt < 16) return renew(kind, attempt + 1);
                         return fail(kUnavailable, "%s: renew kept conflicting; giving up",
                                     o_.resource.c_str());
                       case lock::protocol::RenewResult::bad_reply:
                         return fail(kUnavailable, "%s: unexpected reply to renew",
                                     o_.resource.c_str());
                     }
                   });
        });
  }

  void renewed(bool ok, lock::Kind kind) {
    if (o_.json) {
      std::printf("{\"resource\":%s,\"owner\":%s,\"renewed\":%s,\"ttl_ms\":%lld}\n",
                  json_string(o_.resource).c_str(), json_string(owner()).c_str(),
                  ok ? "true" : "false", static_cast<long long>(lock::ttl_millis(*o_.ttl)));
    }
    if (!ok) {
      return fail(kNotHeld, "%s: not held by '%s' (expired, force-released or never acquired)",
                  o_.resource.c_str(), owner().c_str());
    }
    note("%s: renewed (%s) for %s", o_.resource.c_str(), kind_name(kind).c_str(),
         format_duration(*o_.ttl).c_str());
    finish(kOk);
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

  static std::string holders_json(const View& v) {
    std::string s = "[";
    for (const auto& h : v.holders) {
      if (s.size() > 1) s += ',';
      s += "{\"owner\":" + json_string(h.owner) + ",\"kind\":\"" + kind_name(h.kind) +
           "\",\"ttl_ms\":" + std::to_string(h.ttl_ms) + "}";
    }
    return s + "]";
  }

  void inspect() {
    client_->inspect(o_.resource, [this](Ec ec, const lock::LockInfo& info) {
      if (exit_ >= 0) return;
      if (ec) return lock_error(ec);
      const View v = classify(info);
      if (o_.json) {
        std::printf("{\"resource\":%s,\"state\":\"%s\",\"holders\":%s,\"last_token\":%llu}\n",
                    json_string(o_.resource).c_str(), state_name(v.state), holders_json(v).c_str(),
                    static_cast<unsigned long long>(info.last_token));
      } else {
        std::printf("resource:   %s\nstate:      %s\n", o_.resource.c_str(), state_name(v.state));
        for (const auto& h : v.holders) {
          std::printf("holder:     %s %s (%lldms left)\n", kind_name(h.kind).c_str(),
                      h.owner.c_str(), static_cast<long long>(h.ttl_ms));
        }
        std::printf("last_token: %llu\n", static_cast<unsigned long long>(info.last_token));
      }
      finish(kOk);
    });
  }

  // ---- watch -------------------------------------------------------------------------------

  struct Seen {
    lock::Kind kind;
    std::string owner;
    loop::MonoTime ends;  // when the server will expire it, as far as we know
  };

  [[nodiscard]] bool waiting_key(std::string_view k) const {
    std::string_view holders, owner;
    return k == keys_.queue ||
           (lock::protocol::split_doorbell(k, holders, owner) && holders == keys_.holders);
  }

  void watch() {
    watchdog_->stop();
    // The reading connection can come back after the tracking one: read again when it does.
    client_->connection().add_state_handler([this](loop::ConnectionState s, Ec) {
      if (s == loop::ConnectionState::ready && exit_ < 0) refresh();
    });
    retry_timer_ = loop_.make_timer([this] { refresh(); });
    tracker_ = std::make_unique<loop::Connection>(loop_, conn_opts_);
    // BCAST tracking on the resource's key prefix: an invalidation for every change of the holder
    // set, the token counter and shared companions — including expiry — with no reads needed.
    tracker_->add_push_handler([this](resp::Frame push) {
      std::vector<std::string> keys;
      bool all = false;
      if (!lock::protocol::parse_invalidate(push, keys, all)) return;
      bool ours = all;
      // The wait queue (P{R}:q) and waiters' doorbells (P{R}:w:<owner>) say nothing about
      // holders: no re-read for them.
      for (const auto& k : keys) ours = ours || (k.starts_with(keys_.holders) && !waiting_key(k));
      if (ours) refresh();
    });
    tracker_->add_state_handler([this](loop::ConnectionState s, Ec ec) {
      if (exit_ >= 0) return;
      if (s == loop::ConnectionState::disconnected && ec && !tracker_down_) {
        tracker_down_ = true;  // say it once, not once per reconnect attempt
        note("%s: watch connection lost (%s); reconnecting", o_.resource.c_str(),
             ec.message().c_str());
      }
      if (s != loop::ConnectionState::ready) return;
      if (tracker_down_) note("%s: watch connection re-established", o_.resource.c_str());
      tracker_down_ = false;
      tracker_->command({"CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", keys_.holders},
                        [this](Ec tec, const loop::Replies&) {
                          if (exit_ >= 0) return;
                          if (tec) {
                            return fail(kUnavailable, "%s: server refused CLIENT TRACKING: %s",
                                        o_.resource.c_str(), conn_error(tec, *tracker_).c_str());
                          }
                          refresh();  // changes may have happened while we were not tracking
                        });
    });
    tracker_->start();
  }

  void refresh() {
    if (inspecting_) {
      dirty_ = true;
      return;
    }
    inspecting_ = true;
    client_->inspect(o_.resource, [this](Ec ec, const lock::LockInfo& info) {
      inspecting_ = false;
      if (exit_ >= 0) return;
      if (ec) {
        // Transient (reconnecting): read again shortly, so a change that happened meanwhile is
        // not missed when no further invalidation comes.
        note("%s: inspect failed: %s", o_.resource.c_str(), ec.message().c_str());
        if (!retry_timer_->active()) retry_timer_->start(250ms);
      } else {
        on_view(classify(info), info.last_token);
      }
      if (dirty_) {
        dirty_ = false;
        refresh();
      }
    });
  }

  void emit(const char* event, const lock::protocol::Holder* h, const View* v,
            std::uint64_t token) {
    const std::string t = iso_time(loop_.wall_now());
    if (o_.json) {
      std::string line = "{\"time\":\"" + t + "\",\"resource\":" + json_string(o_.resource) +
                         ",\"event\":\"" + event + "\"";
      if (h != nullptr) {
        line += ",\"kind\":\"" + kind_name(h->kind) + "\",\"owner\":" + json_string(h->owner) +
                ",\"ttl_ms\":" + std::to_string(h->ttl_ms);
      }
      if (v != nullptr) {
        line += ",\"state\":\"" + std::string(state_name(v->state)) +
                "\",\"holders\":" + holders_json(*v);
      }
      line += ",\"last_token\":" + std::to_string(token) + "}\n";
      std::fputs(line.c_str(), stdout);
    } else if (h != nullptr) {
      std::printf("%s %s %s %s %s (last token %llu)\n", t.c_str(), o_.resource.c_str(), event,
                  kind_name(h->kind).c_str(), h->owner.c_str(),
                  static_cast<unsigned long long>(token));
    } else if (v != nullptr) {
      std::string who;
      for (const auto& x : v->holders) who += " " + kind_name(x.kind) + ":" + x.owner;
      std::printf("%s %s %s %s%s (last token %llu)\n", t.c_str(), o_.resource.c_str(), event,
                  state_name(v->state), who.c_str(), static_cast<unsigned long long>(token));
    }
    std::fflush(stdout);                   // one line per change, visible at once (pipes, tests)
    if (std::ferror(stdout)) finish(kOk);  // the reader went away (`lockwire watch r | head -3`)
  }

  void on_view(const View& v, std::uint64_t token) {
    if (v.state == View::State::contended) return;  // wait for the loser to withdraw
    const loop::MonoTime now = loop_.now();
    std::map<std::string, Seen> next;
    for (const auto& h : v.holders) {
      const std::string id = kind_name(h.kind) + ":" + h.owner;
      next[id] = Seen{h.kind, h.owner,
                      now + std::chrono::milliseconds(std::max<std::int64_t>(h.ttl_ms, 0))};
    }
    if (!initial_done_) {
      initial_done_ = true;
      emit("initial", nullptr, &v, token);
    } else {
      for (const auto& [id, s] : seen_) {
        if (next.count(id) != 0) continue;
        // Gone. Expiry if it vanished around the TTL we last read; before that, a release.
        const bool expired = now + 50ms >= s.ends;
        lock::protocol::Holder h{s.kind, s.owner, 0};
        emit(expired ? "expired" : "released", &h, nullptr, token);
      }
      for (const auto& h : v.holders) {
        if (seen_.count(kind_name(h.kind) + ":" + h.owner) == 0)
          emit("acquired", &h, nullptr, token);
      }
    }
    seen_ = std::move(next);
  }

  // ---- run ---------------------------------------------------------------------------------

  void run_acquire() {
    lock::LockRequest req = lock_request();
    req.auto_renew = true;
    req.on_lost = [this](Ec why) { on_lease_lost(why); };
    client_->lock(std::move(req), [this](Ec ec, lock::Lease lease) {
      if (exit_ >= 0 || aborting_) return;
      watchdog_->stop();
      if (ec == lock::Errc::timed_out || ec == lock::Errc::already_held) return report_busy(ec);
      if (ec) return lock_error(ec);
      lease_ = std::move(lease);
      note("%s: acquired (%s, token %llu, ttl %s)", o_.resource.c_str(),
           kind_name(lease_.kind()).c_str(), static_cast<unsigned long long>(lease_.token()),
           format_duration(lease_.ttl()).c_str());
      spawn();
    });
  }

  void spawn() {
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

  void on_lease_lost(Ec why) {
    if (exit_ >= 0) return;
    lease_lost_ = true;
    if (!child_running_) return;
    if (!o_.quiet) {
      const std::string reason = why == lock::Errc::lost ? "" : " (" + why.message() + ")";
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
                    ec.message().c_str());
        }
      } else {
        note("%s: released", o_.resource.c_str());
      }
      finish(code);
    });
  }

  Options o_;
  loop::ConnectionOptions conn_opts_;
  lock::protocol::Keys keys_;
  loop::UvLoop loop_;
  std::unique_ptr<lock::Client> client_;
  std::unique_ptr<loop::Connection> tracker_;
  std::unique_ptr<loop::Connection> cleanup_conn_;
  std::unique_ptr<loop::Timer> watchdog_;
  std::unique_ptr<loop::Timer> kill_timer_;
  std::unique_ptr<loop::Timer> retry_timer_;
  Nanos watchdog_after_{0};
  std::vector<uv_signal_t*> signals_;
  int exit_ = -1;
  bool connected_ = false;
  bool aborting_ = false;
  // run
  lock::Lease lease_;
  uv_process_t* proc_ = nullptr;
  bool child_running_ = false;
  int child_pid_ = 0;
  bool lease_lost_ = false;
  // watch
  bool inspecting_ = false;
  bool dirty_ = false;
  bool initial_done_ = false;
  bool tracker_down_ = false;
  std::map<std::string, Seen> seen_;
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
