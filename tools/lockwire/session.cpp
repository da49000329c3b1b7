// The lockwire tool's Session: common steps and the one-shot subcommands (session.hpp).
#include "session.hpp"

#include <cstdarg>

#include "output.hpp"

namespace lockwire::cli {

int Session::run() {
  lock::ClientOptions copts;
  copts.prefix = o_.prefix;
  copts.allow_eviction = o_.allow_eviction;
  copts.parked_handoff = o_.parked_handoff;
  copts.min_replicas = o_.min_replicas_majority ? lock::ReplicaAcks::majority()
                                                : lock::ReplicaAcks::count(o_.min_replicas);
  copts.replica_timeout = o_.replica_timeout;
  if (o_.verbose) copts.metrics = std::make_shared<VerboseMetrics>(o_.resource);
  if (o_.no_vouch && conn_opts_.sentinel) conn_opts_.sentinel->vouch = false;
  client_ = std::make_unique<lock::Client>(loop_, conn_opts_, copts);
  watchdog_ = loop_.make_timer([this] {
    fail(kUnavailable, "%s: no answer from %s within %s", o_.resource.c_str(),
         describe_endpoint(conn_opts_.endpoint).c_str(), format_duration(watchdog_after_).c_str());
  });
  grace_timer_ = loop_.make_timer([this] {
    if (on_grace_) std::exchange(on_grace_, {})();
  });
  // The library bounds every wait by wait + settle_timeout; the watchdog is the last resort
  // for everything else (a server that stops answering never makes the tool hang).
  op_bound_ = o_.connect_timeout + copts.settle_timeout + kReportGrace + 2s;
  switch (o_.command) {
    case Command::run:
      start(true, o_.wait, [this] { acquire(true); });
      break;
    case Command::acquire:
      start(true, o_.wait, [this] { acquire(false); });
      break;
    case Command::release:
      start(false, Nanos{0}, [this] { release(); });
      break;
    case Command::renew:
      start(false, Nanos{0}, [this] { renew(); });
      break;
    case Command::upgrade:
      start(true, o_.wait, [this] { upgrade(); });
      break;
    case Command::force_release:
      start(false, Nanos{0}, [this] { force_release(); });
      break;
    case Command::inspect:
      start(false, Nanos{0}, [this] { inspect(); });
      break;
    case Command::watch:
      start(true, Nanos{0}, [this] { watch(); });
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

// Arms the watchdog for the subcommand's bound (plus `wait`), then runs `step` once connected.
void Session::start(bool signals, Nanos wait, std::function<void()> step) {
  if (signals) install_signals();
  arm_watchdog(op_bound_ + wait);
  connect_then(std::move(step));
}

void Session::finish(int code) {
  if (exit_ >= 0) return;
  exit_ = code;
  if (o_.json && code != kOk && !json_failure_printed_) {
    // Every failure under --json is one JSON object, including those with no message (a
    // signal while waiting).
    json_failure_printed_ = true;
    print_json_failure(
        code, o_.resource,
        failure_.empty() ? "failed with exit status " + std::to_string(code) : failure_);
  }
  std::fflush(stdout);
  if (watch_) watch_->close();
  if (client_) client_->close();
  loop_.stop();
}

void Session::fail(int code, const char* fmt, ...) {
  if (exit_ >= 0) return;
  va_list ap;
  va_start(ap, fmt);
  char buf[4096];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  failure_ = buf;
  if (!o_.quiet) print_err("%s", buf);
  finish(code);
}

void Session::note(const char* fmt, ...) const {
  if (!o_.verbose) return;
  va_list ap;
  va_start(ap, fmt);
  char buf[4096];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  print_err("%s", buf);
}

void Session::arm_watchdog(Nanos after) {
  watchdog_after_ = after;
  watchdog_->start(after);
}

// Runs `then` after `after` unless something else finished first (one at a time).
void Session::after(Nanos d, std::function<void()> then) {
  on_grace_ = std::move(then);
  grace_timer_->start(d);
}

// What went wrong, in the library's (and so the server's) words when it has them.
std::string Session::why(Ec ec) const {
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

// release/renew of a lease the owner does not hold: exit 77. Under --json the one object
// keeps the success shape's fields (`fields`: released/renewed false) and the failure's.
void Session::not_held(const std::string& fields) {
  char buf[1024];
  std::snprintf(buf, sizeof buf, "%s: not held by '%s' (expired, force-released or never acquired)",
                o_.resource.c_str(), owner().c_str());
  if (o_.json) {
    print_json_failure(kNotHeld, o_.resource, buf, fields);
    json_failure_printed_ = true;
  }
  fail(kNotHeld, "%s", buf);
}

void Session::lock_error(Ec ec) {
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
void Session::connect_then(std::function<void()> next) {
  client_->connection().add_state_handler(
      [this, next = std::move(next)](loop::ConnectionState s, Ec ec) {
        if (exit_ >= 0) return;
        if (connected_) {
          if (s == loop::ConnectionState::disconnected && ec) {
            note("%s: connection lost (%s); reconnecting", o_.resource.c_str(), why(ec).c_str());
          } else if (s == loop::ConnectionState::ready) {
            note("%s: reconnected to %s", o_.resource.c_str(), connected_to().c_str());
          }
          return;
        }
        if (s == loop::ConnectionState::ready) {
          connected_ = true;
          note("connected to %s", connected_to().c_str());
          loop_.post(next);
        } else if (s == loop::ConnectionState::disconnected && ec) {
          std::string detail = client_->connection().last_error();
          if (detail.empty()) detail = ec.message();
          const loop::Endpoint& ep = conn_opts_.endpoint;
          if (!ep.host.empty() &&
              detail.find(ep.host + ":" + std::to_string(ep.port)) != std::string::npos) {
            // The detail names the endpoint already (a TLS handshake that did not finish, ...).
            return fail(kUnavailable, "%s: cannot connect: %s", o_.resource.c_str(),
                        detail.c_str());
          }
          fail(kUnavailable, "%s: cannot connect to %s: %s", o_.resource.c_str(),
               describe_endpoint(conn_opts_.endpoint).c_str(), detail.c_str());
        }
      });
  client_->start();
}

void Session::install_signals() {
  for (int sig : {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGWINCH}) {
    auto* h = new uv_signal_t;
    uv_signal_init(loop_.native(), h);
    h->data = this;
    uv_signal_start(
        h, [](uv_signal_t* sh, int signum) { static_cast<Session*>(sh->data)->on_signal(signum); },
        sig);
    // Signal handles must not keep the loop alive on their own.
    uv_unref(reinterpret_cast<uv_handle_t*>(h));
    signals_.push_back(h);
  }
}

void Session::on_signal(int sig) {
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
  if (!terminating || !lease_.empty() || abort_code_ >= 0 || exit_ >= 0) return;
  // Still waiting for the lock: give up. The library answers once no claim of ours is left
  // (an acquire in flight is settled first; a late grant is released).
  abort_code_ = 128 + sig;
  failure_ = o_.resource + ": signal " + std::to_string(sig) + " while waiting; not acquired";
  note("%s: signal %d while waiting; giving up", o_.resource.c_str(), sig);
  if (!locking_) return finish(abort_code_);
  for (const std::string& r : o_.resources) client_->cancel(r, owner());
}

std::optional<lock::Kind> Session::kind_given() const {
  if (o_.shared) return lock::Kind::shared;
  return std::nullopt;  // whichever the owner holds
}

lock::LockRequest Session::lock_request() const {
  lock::LockRequest req;
  req.resource = o_.resource;
  req.owner = owner();
  req.kind = o_.shared ? lock::Kind::shared : lock::Kind::exclusive;
  req.ttl = *o_.ttl;
  req.wait = o_.wait;
  req.permits = o_.permits;
  req.fair = o_.fair && !o_.shared;
  return req;
}

// Not acquired: name the other holder(s) when the server says so in time — never ourselves.
void Session::report_busy(Ec ec) {
  if (ec == lock::Errc::already_held) {
    fail(kBusy, "%s: already held by owner '%s' (locks are not re-entrant)", o_.resource.c_str(),
         owner().c_str());
    return;
  }
  if (o_.quiet && !o_.json) return finish(kBusy);
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
        who += "'" + h.owner + "' (" + kind_name(h.kind) + ", " + format_ttl_left(h.ttl_ms) + ")";
      }
    }
    const std::string holder = who.empty() ? "held by someone else" : "held by " + who;
    fail(kBusy, "%s: not acquired%s: %s", o_.resource.c_str(), within.c_str(), holder.c_str());
  });
}

// Several RESOURCEs: all or nothing (Client::lock_all, in name order), one exclusive lease each.
void Session::acquire_all(bool run_child) {
  lock::LockRequest req = lock_request();
  if (run_child) {
    req.auto_renew = true;
    req.on_lost = [this](Ec why) { on_lease_lost(why); };
  }
  std::string names;
  for (const auto& r : o_.resources) {
    if (!names.empty()) names.append(", ");
    names.append(r);
  }
  locking_ = true;
  client_->lock_all(o_.resources, std::move(req), [this, run_child, names](Ec ec,
                                                                           lock::LeaseSet set) {
    locking_ = false;
    if (exit_ >= 0) return;
    if (abort_code_ >= 0) {
      if (!ec) return client_->release(set, [this](Ec) { finish(abort_code_); });
      return finish(abort_code_);
    }
    if (ec == lock::Errc::timed_out || ec == lock::Errc::busy || ec == lock::Errc::already_held) {
      const std::string within =
          o_.wait > Nanos{0} ? " within " + format_duration(o_.wait) : std::string();
      const std::string& words = client_->last_error();
      return fail(kBusy, "%s: not acquired (all or nothing)%s%s%s", names.c_str(), within.c_str(),
                  words.empty() ? "" : ": ", words.c_str());
    }
    if (ec) return lock_error(ec);
    for (const lock::Lease& l : set.leases) {
      note("%s: acquired (exclusive, token %llu, ttl %s)", l.resource().c_str(),
           static_cast<unsigned long long>(l.token()), format_duration(l.ttl()).c_str());
    }
    if (run_child) {
      set_ = std::move(set);
      lease_ = set_.leases.front();
      return spawn();
    }
    for (const lock::Lease& l : set.leases) {
      if (o_.json) {
        std::printf("{\"resource\":%s,\"owner\":%s,\"kind\":\"exclusive\",\"token\":%llu,"
                    "\"ttl_ms\":%lld}\n",
                    json_string(l.resource()).c_str(), json_string(owner()).c_str(),
                    static_cast<unsigned long long>(l.token()),
                    static_cast<long long>(lock::ttl_millis(l.ttl())));
      } else {
        std::printf("%llu %s %s\n", static_cast<unsigned long long>(l.token()), owner().c_str(),
                    l.resource().c_str());
      }
    }
    finish(kOk);
  });
}

// `run` starts COMMAND only with at least this much of the lease left — 100 ms, at most half
// the TTL (docs/cli.md): a grant
// whose lease is about to end (its TTL nearly spent in flight, or the sentinels' vouch about to
// run out) is given back and tried again within --wait, never run for a few milliseconds.
Nanos Session::min_lease_left() const {
  // Not a share of the TTL: behind sentinels or on a cluster the lease counts only up to the
  // vouch, a rolling window of about down-after or node-timeout, often shorter than the TTL.
  return std::min<Nanos>(std::chrono::milliseconds(100), *o_.ttl / 2);
}

void Session::acquire(bool run_child) {
  if (o_.resources.size() > 1) return acquire_all(run_child);
  lock::LockRequest req = lock_request();
  if (!wait_until_) wait_until_ = loop_.now() + o_.wait;
  req.wait = std::max(Nanos{0}, *wait_until_ - loop_.now());
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
    if (ec == lock::Errc::timed_out || ec == lock::Errc::busy || ec == lock::Errc::already_held) {
      return report_busy(ec);
    }
    if (ec) return lock_error(ec);
    note("%s: acquired (%s, token %llu, ttl %s)", o_.resource.c_str(),
         kind_name(lease.kind()).c_str(), static_cast<unsigned long long>(lease.token()),
         format_duration(lease.ttl()).c_str());
    if (run_child) {
      const Nanos left = lease.valid_until() - loop_.now();
      if (left < min_lease_left()) {
        note("%s: granted with %s of the lease left (less than %s): given back", o_.resource.c_str(),
             format_duration(left).c_str(), format_duration(min_lease_left()).c_str());
        return client_->release(lease, [this](Ec) {
          if (exit_ >= 0) return;
          if (loop_.now() < *wait_until_) return acquire(true);
          fail(kBusy, "%s: not acquired with at least %s of the lease left within %s",
               o_.resource.c_str(), format_duration(min_lease_left()).c_str(),
               format_duration(o_.wait).c_str());
        });
      }
      lease_ = std::move(lease);
      return spawn();
    }
    if (o_.json) {
      std::printf("{\"resource\":%s,\"owner\":%s,\"kind\":\"%s\",\"token\":%llu,\"ttl_ms\":%lld}\n",
                  json_string(o_.resource).c_str(), json_string(owner()).c_str(),
                  kind_name(lease.kind()).c_str(), static_cast<unsigned long long>(lease.token()),
                  static_cast<long long>(lock::ttl_millis(lease.ttl())));
    } else {
      std::printf("%llu %s\n", static_cast<unsigned long long>(lease.token()), owner().c_str());
    }
    finish(kOk);  // the lease stays on the server until its TTL ends
  });
}

void Session::release() {
  client_->release(o_.resource, owner(), kind_given(), [this](Ec ec) {
    if (exit_ >= 0) return;
    if (ec && ec != lock::Errc::not_held) return lock_error(ec);
    if (ec) return not_held(",\"owner\":" + json_string(owner()) + ",\"released\":false");
    if (o_.json) {
      std::printf("{\"resource\":%s,\"owner\":%s,\"released\":true}\n",
                  json_string(o_.resource).c_str(), json_string(owner()).c_str());
    }
    note("%s: released", o_.resource.c_str());
    finish(kOk);
  });
}

void Session::renew() {
  client_->renew(o_.resource, owner(), kind_given(), *o_.ttl, [this](Ec ec) {
    if (exit_ >= 0) return;
    if (ec && ec != lock::Errc::not_held) return lock_error(ec);
    const std::string ttl_ms = std::to_string(lock::ttl_millis(*o_.ttl));
    if (ec) {
      return not_held(",\"owner\":" + json_string(owner()) +
                      ",\"renewed\":false,\"ttl_ms\":" + ttl_ms);
    }
    if (o_.json) {
      std::printf("{\"resource\":%s,\"owner\":%s,\"renewed\":true,\"ttl_ms\":%s}\n",
                  json_string(o_.resource).c_str(), json_string(owner()).c_str(), ttl_ms.c_str());
    }
    note("%s: renewed for %s", o_.resource.c_str(), format_duration(*o_.ttl).c_str());
    finish(kOk);
  });
}

// The owner's shared lease (from `acquire --shared`) becomes exclusive in place: no writer gets
// in between. Prints the new token like acquire.
void Session::upgrade() {
  lock::LockRequest req = lock_request();
  client_->upgrade(std::move(req), [this](Ec ec, lock::Lease lease) {
    if (exit_ >= 0) return;
    if (ec == lock::Errc::not_held) {
      return fail(kNotHeld, "%s: '%s' holds no shared lease to upgrade (expired, force-released "
                            "or never acquired)",
                  o_.resource.c_str(), owner().c_str());
    }
    if (ec == lock::Errc::upgrade_conflict) {
      return fail(kBusy, "%s: %s", o_.resource.c_str(), client_->last_error().c_str());
    }
    if (ec == lock::Errc::timed_out || ec == lock::Errc::busy) return report_busy(ec);
    if (ec) return lock_error(ec);
    note("%s: upgraded to exclusive (token %llu, ttl %s)", o_.resource.c_str(),
         static_cast<unsigned long long>(lease.token()), format_duration(lease.ttl()).c_str());
    if (o_.json) {
      std::printf("{\"resource\":%s,\"owner\":%s,\"kind\":\"exclusive\",\"token\":%llu,"
                  "\"ttl_ms\":%lld}\n",
                  json_string(o_.resource).c_str(), json_string(owner()).c_str(),
                  static_cast<unsigned long long>(lease.token()),
                  static_cast<long long>(lock::ttl_millis(lease.ttl())));
    } else {
      std::printf("%llu %s\n", static_cast<unsigned long long>(lease.token()), owner().c_str());
    }
    finish(kOk);
  });
}

// ---- force-release / inspect ---------------------------------------------------------------
void Session::force_release() {
  client_->force_release(o_.resource, [this](Ec ec, std::size_t removed) {
    if (exit_ >= 0) return;
    if (ec) return lock_error(ec);
    if (o_.json) {
      std::printf("{\"resource\":%s,\"removed\":%zu}\n", json_string(o_.resource).c_str(), removed);
    } else if (!o_.quiet) {
      std::printf("%s: removed %zu holder%s\n", o_.resource.c_str(), removed,
                  removed == 1 ? "" : "s");
    }
    finish(kOk);
  });
}

std::string Session::holders_json(const lock::HolderView& v) {
  std::string s = "[";
  for (const auto& h : v.holders) {
    if (s.size() > 1) s += ',';
    s += "{\"owner\":" + json_string(h.owner) + ",\"kind\":\"" + kind_name(h.kind) +
         "\",\"ttl_ms\":" + std::to_string(h.ttl_ms) + "}";
  }
  return s + "]";
}

// What the server lets a lock client do (degraded modes are visible, not silent).
std::string Session::server_json() const {
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

void Session::inspect() {
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
        std::printf("holder:     %s %s (%s)\n", kind_name(h.kind).c_str(),
                    printable(h.owner).c_str(), format_ttl_left(h.ttl_ms).c_str());
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

// The server we are talking to: the primary the sentinels named, not the URL's first host.
std::string Session::connected_to() const {
  const std::string addr = client_->connection().server_address();
  if (addr.empty() || conn_opts_.endpoint.kind == loop::Endpoint::Kind::unix_socket) {
    return describe_endpoint(conn_opts_.endpoint);
  }
  return (conn_opts_.endpoint.tls ? "rediss://" : "redis://") + addr;
}

}  // namespace lockwire::cli
