// `lockwire run`: COMMAND as a child process while the lease is auto-renewed; on lease loss
// SIGTERM, then SIGKILL after --kill-after; released when COMMAND exits.
#include "session.hpp"

extern char** environ;

#include "output.hpp"

namespace lockwire::cli {

void Session::spawn() {
  watchdog_->stop();  // COMMAND runs as long as it runs; the lease is auto-renewed
  // Environment: ours plus LOCKWIRE_* (replacing any inherited ones).
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view kv(*e);
    if (kv.starts_with("LOCKWIRE_RESOURCE=") || kv.starts_with("LOCKWIRE_OWNER=") ||
        kv.starts_with("LOCKWIRE_FENCING_TOKEN=") || kv.starts_with("LOCKWIRE_RESOURCES=") ||
        kv.starts_with("LOCKWIRE_FENCING_TOKENS=")) {
      continue;
    }
    env.emplace_back(kv);
  }
  env.push_back("LOCKWIRE_RESOURCE=" + o_.resource);
  env.push_back("LOCKWIRE_OWNER=" + owner());
  env.push_back("LOCKWIRE_FENCING_TOKEN=" + std::to_string(lease_.token()));
  if (set_.leases.size() > 1) {
    // Several RESOURCEs: all of them and their tokens, space-separated, in the same order.
    std::string names, tokens;
    for (const lock::Lease& l : set_.leases) {
      if (!names.empty()) names.push_back(' ');
      if (!tokens.empty()) tokens.push_back(' ');
      names.append(l.resource());
      tokens.append(std::to_string(l.token()));
    }
    env.push_back("LOCKWIRE_RESOURCES=" + names);
    env.push_back("LOCKWIRE_FENCING_TOKENS=" + tokens);
  }
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
      print_err("%s: cannot run '%s': %s", o_.resource.c_str(), o_.argv[0].c_str(), uv_strerror(r));
    }
    return release_and_exit(code);
  }
  child_running_ = true;
  child_pid_ = proc_->pid;
  note("%s: started COMMAND (pid %d)", o_.resource.c_str(), child_pid_);
}

void Session::close_process() {
  uv_close(reinterpret_cast<uv_handle_t*>(proc_),
           [](uv_handle_t* h) { delete reinterpret_cast<uv_process_t*>(h); });
  proc_ = nullptr;
}

void Session::on_lease_lost(Ec why_lost) {
  if (exit_ >= 0) return;
  lease_lost_ = true;
  if (!child_running_) return;
  if (!o_.quiet) {
    const std::string reason = why_lost == lock::Errc::lost ? "" : " (" + why_lost.message() + ")";
    print_err("%s: lease lost%s; terminating COMMAND (pid %d)", o_.resource.c_str(), reason.c_str(),
              child_pid_);
  }
  uv_process_kill(proc_, SIGTERM);
  kill_timer_ = loop_.make_timer([this] {
    if (!child_running_) return;
    if (!o_.quiet) {
      print_err("%s: COMMAND (pid %d) still running after %s; sending SIGKILL", o_.resource.c_str(),
                child_pid_, format_duration(o_.kill_after).c_str());
    }
    uv_process_kill(proc_, SIGKILL);
  });
  kill_timer_->start(o_.kill_after);
}

void Session::on_child_exit(std::int64_t status, int term_signal) {
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

void Session::release_and_exit(int code) {
  after(kReleaseBound, [this, code] {
    if (!o_.quiet) {
      print_err("%s: release got no answer within %s; the lease expires with its TTL",
                o_.resource.c_str(), format_duration(kReleaseBound).c_str());
    }
    finish(code);
  });
  auto done = [this, code](Ec ec) {
    if (exit_ >= 0) return;
    if (ec == lock::Errc::not_held) {
      // The lease was gone before COMMAND finished, and we had not noticed yet.
      return fail(kLost, "%s: lease was no longer held when COMMAND finished", o_.resource.c_str());
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
  };
  if (set_.leases.size() > 1) return client_->release(set_, std::move(done));
  client_->release(lease_, std::move(done));
}

}  // namespace lockwire::cli
