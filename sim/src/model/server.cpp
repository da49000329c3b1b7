// Redis' server.c: command lookup, processCommand (the checks in Redis' order, because reply bytes
// and error precedence depend on it), call(), CLIENT PAUSE gating, and PING / ECHO / TIME.
#include <cctype>

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

bool RedisModel::Impl::is_paused_for(const CmdDef* cmd) {
  if (pause_until_ms == 0) return false;
  if (wall_ms() >= pause_until_ms) {
    pause_until_ms = 0;
    return false;
  }
  if (cmd == nullptr) return !pause_write_only;
  if (!pause_write_only) return true;
  return (cmd->flags & F_WRITE) != 0;
}

const model::CmdDef* RedisModel::Impl::lookup_in(const std::vector<CmdDef>& t,
                                                 std::string_view name) {
  for (auto& d : t)
    if (ieq(d.name, name)) return &d;
  return nullptr;
}

const model::CmdDef* RedisModel::Impl::find_command(const Args& a) {
  const CmdDef* d = lookup_in(table(), a[0]);
  if (d != nullptr && !d->subs.empty() && a.size() >= 2) {
    const CmdDef* s = lookup_in(d->subs, a[1]);
    return s;
  }
  return d;
}

void RedisModel::Impl::reject(Client& c, const std::string& msg) {
  if (c.multi) c.dirty_exec = true;
  error(c, msg);
}

void RedisModel::Impl::process_command(Client& c, Args& a) {
  ++processed;
  cmd_ms = wall_ms();
  const CmdDef* top = lookup_in(table(), a[0]);
  const CmdDef* cmd = top;
  std::string fullname = top ? top->name : "";
  if (top != nullptr && !top->subs.empty()) {
    if (a.size() >= 2) {
      cmd = lookup_in(top->subs, a[1]);
      if (cmd == nullptr) {
        std::string up(top->name);
        for (auto& ch : up) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        reject(c, "unknown subcommand '" + std::string(cstr(a[1]).substr(0, 128)) + "'. Try " + up +
                      " HELP.");
        return;
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
    reject(c, "unknown command '" + std::string(cstr(a[0]).substr(0, 128)) +
                  "', with args beginning with: " + args);
    return;
  }
  const int argc = static_cast<int>(a.size());
  if ((cmd->arity > 0 && cmd->arity != argc) || (argc < -cmd->arity)) {
    reject(c, "wrong number of arguments for '" + fullname + "' command");
    return;
  }
  if ((cmd->flags & F_PROTECTED) && !opt.enable_debug_command) {
    reject(c,
           "DEBUG command not allowed. If the enable-debug-command option is set to \"local\", "
           "you can run it from a local connection, otherwise you need to set this option in "
           "the configuration file, and then restart the server.");
    return;
  }
  if (!c.authenticated && !(cmd->flags & F_NO_AUTH)) {
    if (c.multi) c.dirty_exec = true;
    error(c, "-NOAUTH Authentication required.");
    return;
  }
  if (replica && (cmd->flags & F_WRITE)) {
    if (c.multi) c.dirty_exec = true;
    error(c, "-READONLY You can't write against a read only replica.");
    return;
  }
  if (c.pubsub_mode() && c.resp == 2) {
    if (!(cmd->flags & F_SUB_OK)) {
      reject(c, "Can't execute '" + fullname +
                    "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are "
                    "allowed in this context");
      return;
    }
  }
  if (loading && !(cmd->flags & F_LOADING)) {
    if (c.multi) c.dirty_exec = true;
    error(c, "-LOADING Redis is loading the dataset in memory");
    return;
  }
  if (busy && !(cmd->flags & F_ALLOW_BUSY)) {
    if (c.multi) c.dirty_exec = true;
    error(c,
          "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN "
          "NOSAVE.");
    return;
  }
  if (c.multi && !(cmd->flags & F_NOT_QUEUED)) {
    c.queued.push_back(a);
    status(c, "QUEUED");
    return;
  }
  call(c, *cmd, a);
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
  cmd.fn(*this, c, a);
  if (cmd.flags & F_READONLY) remember_keys(c, cmd, a);
  if (!c.multi && !(cmd.flags & F_CLIENT_SUB)) c.caching = false;
  in_call = prev_in_call;
  if (!in_call) flush_pending_self();
  current = prev;
}

}  // namespace lockwire::sim
