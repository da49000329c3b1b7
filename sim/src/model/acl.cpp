// Redis' acl.c: users (ACL SETUSER rules, the subset a lock deployment uses), authentication
// (AUTH, HELLO AUTH), the permission check processCommand and EXEC run, ACL DELUSER / WHOAMI /
// USERS. Not modelled: selectors, %R~/%W~ key permissions, password hashes (#/!), ACL LOG.
#include <algorithm>
#include <stdexcept>

#include "commands.hpp"

namespace lockwire::sim::model {

namespace {

struct Category {
  const char* name;
  std::uint32_t bit;
};
constexpr Category kCategories[] = {
    {"keyspace", C_KEYSPACE},
    {"read", C_READ},
    {"write", C_WRITE},
    {"set", C_SET},
    {"sortedset", C_SORTEDSET},
    {"list", C_LIST},
    {"hash", C_HASH},
    {"string", C_STRING},
    {"bitmap", C_BITMAP},
    {"hyperloglog", C_HYPERLOGLOG},
    {"geo", C_GEO},
    {"stream", C_STREAM},
    {"pubsub", C_PUBSUB},
    {"admin", C_ADMIN},
    {"fast", C_FAST},
    {"slow", C_SLOW},
    {"blocking", C_BLOCKING},
    {"dangerous", C_DANGEROUS},
    {"connection", C_CONNECTION},
    {"transaction", C_TRANSACTION},
    {"scripting", C_SCRIPTING},
};

const char* const kUnknownName = "Unknown command or category name in ACL";

// ACLChangeSelectorPerm: a command with subcommands changes all of them with it.
void change_perm(User& u, const CmdDef& cmd, bool allow) {
  auto set = [&](const std::string& full) {
    if (allow) {
      u.commands.insert(full);
    } else {
      u.commands.erase(full);
    }
  };
  u.first_args.erase(cmd.name);
  if (cmd.subs.empty()) return set(cmd.name);
  for (auto& sub : cmd.subs) set(std::string(cmd.name) + "|" + sub.name);
}

void change_category(User& u, std::uint32_t bit, bool allow) {
  for (auto& cmd : Impl::table()) {
    if (cmd.acl & bit) change_perm(u, cmd, allow);
    for (auto& sub : cmd.subs) {
      if (!(sub.acl & bit)) continue;
      const std::string full = std::string(cmd.name) + "|" + sub.name;
      if (allow) {
        u.commands.insert(full);
      } else {
        u.commands.erase(full);
      }
    }
  }
}

// "+cmd", "-cmd", "+cmd|sub", "-cmd|sub", "+cmd|first-arg"; "" or the error reason.
std::string command_rule(User& u, std::string_view rule) {
  const bool allow = rule[0] == '+';
  const std::string_view name = rule.substr(1);
  const auto bar = name.find('|');
  const CmdDef* cmd = Impl::lookup_in(Impl::table(), name.substr(0, bar));
  if (cmd == nullptr) return kUnknownName;
  if (bar == std::string_view::npos) {
    change_perm(u, *cmd, allow);
    return "";
  }
  const std::string_view rest = name.substr(bar + 1);
  if (cmd->subs.empty()) {
    // First-arg rules (deprecated in Redis 7, still accepted): "+select|0".
    if (!allow || rest.empty() || rest.find('|') != std::string_view::npos) return kUnknownName;
    u.first_args[cmd->name].emplace_back(rest);
    return "";
  }
  const auto bar2 = rest.find('|');
  const CmdDef* sub = Impl::lookup_in(cmd->subs, rest.substr(0, bar2));
  if (sub == nullptr) return kUnknownName;
  if (bar2 != std::string_view::npos) {
    return allow ? "Allowing first-arg of a subcommand is not supported" : kUnknownName;
  }
  const std::string full = std::string(cmd->name) + "|" + sub->name;
  if (allow) {
    u.commands.insert(full);
  } else {
    u.commands.erase(full);
  }
  return "";
}

// One ACL SETUSER modifier (ACLSetSelector / ACLSetUser); "" or the error reason.
std::string apply_rule(User& u, const std::string& r) {
  if (ieq(r, "on")) {
    u.enabled = true;
  } else if (ieq(r, "off")) {
    u.enabled = false;
  } else if (ieq(r, "nopass")) {
    u.nopass = true;
    u.passwords.clear();
  } else if (ieq(r, "resetpass")) {
    u.nopass = false;
    u.passwords.clear();
  } else if (!r.empty() && r[0] == '>') {
    const std::string pw = r.substr(1);
    if (std::find(u.passwords.begin(), u.passwords.end(), pw) == u.passwords.end())
      u.passwords.push_back(pw);
    u.nopass = false;
  } else if (!r.empty() && r[0] == '<') {
    auto it = std::find(u.passwords.begin(), u.passwords.end(), r.substr(1));
    if (it == u.passwords.end())
      return "The password you are trying to remove from the user does not exist";
    u.passwords.erase(it);
  } else if (ieq(r, "allkeys")) {
    u.allkeys = true;
    u.keys = {"*"};
  } else if (ieq(r, "resetkeys")) {
    u.allkeys = false;
    u.keys.clear();
  } else if (!r.empty() && r[0] == '~') {
    if (u.allkeys)
      return "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does "
             "not have any effect. Try 'resetkeys' to start with an empty list of patterns";
    if (r == "~*") return apply_rule(u, "allkeys");
    if (std::find(u.keys.begin(), u.keys.end(), r.substr(1)) == u.keys.end())
      u.keys.push_back(r.substr(1));
  } else if (ieq(r, "allchannels")) {
    u.allchannels = true;
    u.channels = {"*"};
  } else if (ieq(r, "resetchannels")) {
    u.allchannels = false;
    u.channels.clear();
  } else if (!r.empty() && r[0] == '&') {
    if (u.allchannels)
      return "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and "
             "does not have any effect. Try 'resetchannels' to start with an empty list of "
             "channels";
    if (r == "&*") return apply_rule(u, "allchannels");
    if (std::find(u.channels.begin(), u.channels.end(), r.substr(1)) == u.channels.end())
      u.channels.push_back(r.substr(1));
  } else if (ieq(r, "allcommands") || ieq(r, "+@all")) {
    u.allcommands = true;
    change_category(u, ~0u, true);
  } else if (ieq(r, "nocommands") || ieq(r, "-@all")) {
    u.allcommands = false;
    u.commands.clear();
    u.first_args.clear();
  } else if (r.size() > 2 && (r[0] == '+' || r[0] == '-') && r[1] == '@') {
    const Category* cat = nullptr;
    for (auto& k : kCategories)
      if (ieq(r.substr(2), k.name)) cat = &k;
    if (cat == nullptr) return kUnknownName;
    if (r[0] == '-') u.allcommands = false;
    change_category(u, cat->bit, r[0] == '+');
  } else if (r.size() > 1 && (r[0] == '+' || r[0] == '-')) {
    if (r[0] == '-') u.allcommands = false;
    return command_rule(u, r);
  } else if (ieq(r, "reset")) {
    for (const char* x : {"resetpass", "resetkeys", "resetchannels", "off", "-@all"})
      apply_rule(u, x);
  } else {
    return "Syntax error";
  }
  return "";
}

bool channel_allowed(const User& u, const std::string& ch, bool is_pattern) {
  if (u.allchannels) return true;
  for (auto& p : u.channels)
    if (is_pattern ? p == ch : glob_match(p, ch)) return true;
  return false;
}

const char* const kExecRecheck =
    "-NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC "
    "call. This command is no longer allowed for the following reason: ";

}  // namespace

std::vector<std::string> split_rules(std::string_view rules) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < rules.size()) {
    while (i < rules.size() && rules[i] == ' ') ++i;
    const std::size_t j = std::min(rules.find(' ', i), rules.size());
    if (j > i) out.emplace_back(rules.substr(i, j - i));
    i = j;
  }
  return out;
}

User* auth_user(Impl& s, std::string_view user, std::string_view pass) {
  auto it = s.users.find(std::string(user));
  if (it == s.users.end() || !it->second.enabled) return nullptr;
  User& u = it->second;
  if (u.nopass) return &u;
  for (auto& p : u.passwords)
    if (p == pass) return &u;
  return nullptr;
}

void cmd_auth(Impl& s, Client& c, Args& a) {
  if (a.size() > 3) return s.syntax(c);
  std::string user = "default", pass;
  if (a.size() == 2) {
    if (s.default_user->nopass)
      return s.error(c,
                     "AUTH <password> called without any password configured for the default "
                     "user. Are you sure your configuration is correct?");
    pass = a[1];
  } else {
    user = a[1];
    pass = a[2];
  }
  User* u = auth_user(s, user, pass);
  if (u == nullptr)
    return s.error(c, "-WRONGPASS invalid username-password pair or user is disabled.");
  c.user = u;
  c.authenticated = true;
  s.ok(c);
}

void cmd_acl_setuser(Impl& s, Client& c, Args& a) {
  const std::string err = s.acl_setuser(a[2], Args(a.begin() + 3, a.end()));
  if (!err.empty()) return s.error(c, err);
  s.ok(c);
}

void cmd_acl_deluser(Impl& s, Client& c, Args& a) {
  std::int64_t deleted = 0;
  for (std::size_t i = 2; i < a.size(); ++i) {
    if (a[i] == "default") return s.error(c, "The 'default' user cannot be removed");
    auto it = s.users.find(a[i]);
    if (it == s.users.end()) continue;
    // ACLFreeUserAndKillClients: its connections go (the caller's after this reply).
    for (auto& [id, t] : s.clients) {
      if (t.user != &it->second) continue;
      t.user = s.default_user;
      t.authenticated = false;
      s.close_asap(t);
    }
    s.trace("acl-deluser", a[i]);
    s.users.erase(it);
    ++deleted;
  }
  s.integer(c, deleted);
}

void cmd_acl_whoami(Impl& s, Client& c, Args&) {
  s.bulk(c, c.user->name);
}

void cmd_acl_users(Impl& s, Client& c, Args&) {
  s.array(c, s.users.size());
  for (auto& [name, u] : s.users) s.bulk(c, name);
}

}  // namespace lockwire::sim::model

namespace lockwire::sim {

using namespace model;

void RedisModel::Impl::init_users() {
  User& d = users["default"];
  d.name = "default";
  apply_rule(d, "on");
  apply_rule(d, opt.requirepass.empty() ? "nopass" : ">" + opt.requirepass);
  apply_rule(d, "allkeys");
  apply_rule(d, "allchannels");
  apply_rule(d, "+@all");
  default_user = &d;
  for (auto& spec : opt.users) {
    const std::string err = acl_setuser(spec.name, split_rules(spec.rules));
    if (!err.empty()) throw std::invalid_argument("RedisModelOptions::users: " + err);
  }
}

std::string RedisModel::Impl::acl_setuser(const std::string& name,
                                          const std::vector<std::string>& rules) {
  if (name.find_first_of(std::string_view(" \0", 2)) != std::string::npos)
    return "Usernames can't contain spaces or null characters";
  auto it = users.find(name);
  User u;
  if (it != users.end()) {
    u = it->second;
  } else {
    u.name = name;  // a new user: off, no password, no keys, no channels, no commands
  }
  for (auto& r : rules) {
    const std::string why = apply_rule(u, r);
    if (!why.empty()) return "Error in ACL SETUSER modifier '" + std::string(cstr(r)) + "': " + why;
  }
  User& stored = users[name];
  stored = std::move(u);
  trace("acl-setuser", name);
  kill_pubsub_clients_if_needed(stored);
  return "";
}

bool RedisModel::Impl::auth_required(const Client& c) const {
  return (!default_user->nopass || !default_user->enabled) && !c.authenticated;
}

// ACLKillPubsubClientsIfNeeded: a subscriber whose channels are no longer allowed is dropped
// (after the reply, if it is the one changing the rules).
void RedisModel::Impl::kill_pubsub_clients_if_needed(const User& u) {
  if (u.allchannels) return;
  for (auto& [id, t] : clients) {
    if (t.user != &u || t.gone || !t.pubsub_mode()) continue;
    bool denied = false;
    for (auto& ch : t.channels) denied = denied || !channel_allowed(u, ch, false);
    for (auto& p : t.patterns) denied = denied || !channel_allowed(u, p, true);
    if (denied) close_asap(t);
  }
}

std::string RedisModel::Impl::acl_denied(const Client& c, const CmdDef& cmd, const Args& a,
                                         bool in_exec) const {
  const User& u = *c.user;
  if (u.allcommands && u.allkeys && u.allchannels) return "";
  if (!u.allcommands && !(cmd.flags & F_NO_AUTH)) {
    const CmdDef* top = lookup_in(table(), a[0]);
    const std::string full =
        top != &cmd ? std::string(top->name) + "|" + cmd.name : std::string(cmd.name);
    bool allowed = u.commands.count(full) != 0;
    if (!allowed && a.size() >= 2) {
      if (auto it = u.first_args.find(cmd.name); it != u.first_args.end())
        for (auto& arg : it->second) allowed = allowed || ieq(arg, a[1]);
    }
    if (!allowed) {
      if (in_exec)
        return std::string(kExecRecheck) + "no permission to execute the command or subcommand";
      return "-NOPERM this user has no permissions to run the '" + full + "' command";
    }
  }
  if (!u.allkeys && cmd.first_key > 0) {
    const int argc = static_cast<int>(a.size());
    const int last = cmd.last_key < 0 ? argc + cmd.last_key : cmd.last_key;
    for (int i = cmd.first_key; i <= last && i < argc; i += cmd.step) {
      const std::string& key = a[static_cast<std::size_t>(i)];
      bool ok = false;
      for (auto& p : u.keys) ok = ok || glob_match(p, key);
      if (ok) continue;
      if (in_exec) return std::string(kExecRecheck) + "no permission to touch the specified keys";
      return "-NOPERM this user has no permissions to access one of the keys used as arguments";
    }
  }
  if (!u.allchannels) {
    const bool pattern = cmd.fn == cmd_psubscribe;
    std::size_t from = 0, to = 0;  // channel arguments [from, to)
    if (cmd.fn == cmd_subscribe || pattern) {
      from = 1;
      to = a.size();
    } else if (cmd.fn == cmd_publish) {
      from = 1;
      to = 2;
    }
    for (std::size_t i = from; i < to; ++i) {
      if (channel_allowed(u, a[i], pattern)) continue;
      if (in_exec)
        return std::string(kExecRecheck) +
               "no permission to access one of the channels used as arguments";
      return "-NOPERM this user has no permissions to access one of the channels used as "
             "arguments";
    }
  }
  return "";
}

}  // namespace lockwire::sim
