// Redis' server.c: command lookup, processCommand (the checks in Redis' order, because reply bytes
// and error precedence depend on it), call(), beforeSleep, and PING / ECHO / TIME.
#include <algorithm>
#include <cctype>
#include <string>

#include "commands.hpp"

namespace lockwire::sim::model {

void cmd_ping(Impl& s, Client& c, Args& a) {
  if (a.size() > 2) return s.wrong_args(c, "ping");
  if (c.pubsub_mode() && c.resp == 2) {
    s.array(c, 2);
    s.bulk(c, "pong");
    s.bulk(c, a.size() == 2 ? a[1] : std::string());
    return;
  }
  if (a.size() == 1) return s.status(c, "PONG");
  s.bulk(c, a[1]);
}

void cmd_echo(Impl& s, Client& c, Args& a) {
  s.bulk(c, a[1]);
}

void cmd_time(Impl& s, Client& c, Args&) {
  const std::int64_t us = s.hooks.wall_us ? s.hooks.wall_us() : 0;
  s.array(c, 2);
  s.bulk(c, ll2s(us / 1000000));
  s.bulk(c, ll2s(us % 1000000));
}

}  // namespace lockwire::sim::model

namespace lockwire::sim {

using namespace model;

const model::CmdDef* RedisModel::Impl::lookup_in(const std::vector<CmdDef>& t,
                                                 std::string_view name) {
  for (auto& d : t)
    if (ieq(d.name, name)) return &d;
  return nullptr;
}

const model::CmdDef* RedisModel::Impl::find_command(const Args& a) {
  const CmdDef* d = lookup_in(commands(), a[0]);
  if (d != nullptr && !d->subs.empty() && a.size() >= 2) {
    const CmdDef* s = lookup_in(d->subs, a[1]);
    return s;
  }
  return d;
}

void RedisModel::Impl::reject(Client& c, const CmdDef* cmd, std::string_view msg) {
  if (c.multi) c.dirty_exec = true;
  if (cmd != nullptr) ++cmdstats[cmd].rejected;
  if (cmd == nullptr || cmd->fn != cmd_exec) return error(c, msg);
  // execCommandAbort: the transaction (and its watches) goes, whatever refused the EXEC.
  discard_transaction(*this, c);
  if (!msg.empty() && msg[0] == '-') msg.remove_prefix(1);
  error(c, "-EXECABORT Transaction discarded because of: " + std::string(msg));
}

// resetClient: ASKING lasts for one command, or to the end of a transaction (kept while the
// client is in MULTI, and by ASKING itself); a command held by CLIENT PAUSE keeps it.
bool RedisModel::Impl::process_command(Client& c, Args& a) {
  const bool asking_cmd = !a.empty() && ieq(a[0], "asking");
  const bool done = check_and_run(c, a);
  if (done && !c.multi && !asking_cmd) c.asking = false;
  if (done) {  // resetClient: CLIENT REPLY SKIP silences the next command only
    c.reply_skip = c.reply_skip_next;
    c.reply_skip_next = false;
  }
  if (done && !in_call && !ready_keys.empty()) handle_blocked_on_keys();
  return done;
}

// processCommand: every refusal in Redis 7.0's order (the first that applies is the reply).
bool RedisModel::Impl::check_and_run(Client& c, Args& a) {
  ++processed;
  cmd_ms = wall_ms();
  const CmdDef* top = lookup_in(commands(), a[0]);
  const CmdDef* cmd = top;
  std::string fullname = top ? top->name : "";
  if (top != nullptr && !top->subs.empty()) {
    if (a.size() >= 2) {
      cmd = lookup_in(top->subs, a[1]);
      if (cmd == nullptr) {
        std::string up(top->name);
        for (auto& ch : up) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        reject(c, nullptr,
               "unknown subcommand '" + std::string(cstr(a[1]).substr(0, 128)) + "'. Try " + up +
                   " HELP.");
        return true;
      }
      fullname = std::string(top->name) + "|" + cmd->name;
    }
  }
  if (top == nullptr) {
    std::string args;
    for (std::size_t i = 1; i < a.size() && args.size() < 128; ++i) {
      const std::string_view arg = cstr(a[i]).substr(0, 128 - args.size());
      args.append("'").append(arg).append("' ");
    }
    reject(c, nullptr,
           "unknown command '" + std::string(cstr(a[0]).substr(0, 128)) +
               "', with args beginning with: " + args);
    return true;
  }
  const int argc = static_cast<int>(a.size());
  if ((cmd->arity > 0 && cmd->arity != argc) || (argc < -cmd->arity)) {
    reject(c, cmd, "wrong number of arguments for '" + fullname + "' command");
    return true;
  }
  if ((cmd->flags & F_PROTECTED) && !opt.enable_debug_command) {
    reject(c, cmd,
           "DEBUG command not allowed. If the enable-debug-command option is set to \"local\", "
           "you can run it from a local connection, otherwise you need to set this option in "
           "the configuration file, and then restart the server.");
    return true;
  }
  // EXEC counts as the commands it would run (Redis' getCommandFlags).
  const bool is_exec = cmd->fn == cmd_exec;
  const std::uint32_t flags = cmd->flags | (is_exec ? c.queued_flags : 0);
  if (auth_required(c) && !(cmd->flags & F_NO_AUTH)) {
    reject(c, cmd, "-NOAUTH Authentication required.");
    return true;
  }
  if (c.multi && (cmd->flags & F_NO_MULTI)) {
    reject(c, cmd, "Command not allowed inside a transaction");
    return true;
  }
  if (const std::string denied = acl_denied(c, *cmd, a, false); !denied.empty()) {
    reject(c, cmd, denied);
    return true;
  }
  if (cluster_redirect(c, *cmd, a)) return true;
  if (maxmemory != 0) {
    const bool out_of_memory = !perform_evictions();
    // Queuing could grow memory without bound, so inside MULTI everything but EXEC, DISCARD,
    // QUIT and RESET is refused too.
    const bool queues = c.multi && !is_exec && cmd->fn != cmd_discard && cmd->fn != cmd_quit &&
                        cmd->fn != cmd_reset;
    if (out_of_memory && ((flags & F_DENYOOM) || queues)) {
      reject(c, cmd, "-OOM command not allowed when used memory > 'maxmemory'.");
      return true;
    }
  }
  if (!tracking_table.empty()) tracking_limit();
  if (replica && (flags & F_WRITE)) {
    reject(c, cmd, "-READONLY You can't write against a read only replica.");
    return true;
  }
  if (c.pubsub_mode() && c.resp == 2 && !(cmd->flags & F_SUB_OK)) {
    reject(c, cmd,
           "Can't execute '" + fullname +
               "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in "
               "this context");
    return true;
  }
  if (loading && !(cmd->flags & F_LOADING)) {
    reject(c, cmd, "-LOADING Redis is loading the dataset in memory");
    return true;
  }
  if (busy && !(cmd->flags & F_ALLOW_BUSY)) {
    reject(c, cmd,
           "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN "
           "NOSAVE.");
    return true;
  }
  // CLIENT PAUSE: after every refusal, before queuing (a write queued in MULTI waits too).
  if (pause == Pause::all || (pause == Pause::write && (flags & (F_WRITE | F_MAY_REPLICATE)))) {
    --processed;  // counted when it runs
    return false;
  }
  if (c.multi && !(cmd->flags & F_NOT_QUEUED)) {
    c.queued.push_back(a);
    c.queued_flags |= cmd->flags;
    status(c, "QUEUED");
    return true;
  }
  call(c, *cmd, a);
  return true;
}

void RedisModel::Impl::call(Client& c, const CmdDef& cmd, Args& a) {
  Client* prev = current;
  const bool prev_in_call = in_call;
  current = &c;
  in_call = true;
  const std::int64_t before_offset = repl_offset;
  (void)before_offset;
  if (hooks.trace) {
    std::string line;
    for (auto& s : a) {
      if (!line.empty()) line.push_back(' ');
      line.append(s.size() > 64 ? s.substr(0, 64) + "..." : s);
    }
    trace("cmd", line);
  }
  prev_err_count = total_error_replies;
  const std::int64_t t0 = hooks.wall_us ? hooks.wall_us() : 0;
  const bool prev_read = read_command;
  read_command = (cmd.flags & F_READONLY) != 0;
  c.last_interaction_ms = cmd_ms;
  c.last_cmd = &cmd;
  cmd.fn(*this, c, a);
  read_command = prev_read;
  CmdStat& st = cmdstats[&cmd];
  ++st.calls;
  if (hooks.wall_us) st.usec += static_cast<std::uint64_t>(std::max<std::int64_t>(0, hooks.wall_us() - t0));
  if (total_error_replies > prev_err_count) ++st.failed;
  prev_err_count = total_error_replies;
  ++numcommands;
  if (cmd.flags & F_READONLY) remember_keys(c, cmd, a);
  if (!c.multi && !(cmd.flags & F_CLIENT_SUB)) c.caching = false;
  in_call = prev_in_call;
  if (!in_call) flush_pending_self();
  current = prev;
}

void RedisModel::Impl::before_sleep() {
  paused();  // lifts a pause that ended (activeExpireCycle's check in beforeSleep)
  run_unblocked();
  handle_blocked_on_keys();
  run_reprocess();
  if (eviction_due) {
    eviction_due = false;
    perform_evictions();
  }
}

}  // namespace lockwire::sim
