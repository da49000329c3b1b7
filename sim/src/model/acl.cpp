// Redis' acl.c: authentication (the default user, optionally with requirepass).
#include "commands.hpp"

namespace lockwire::sim::model {

bool auth_ok(Impl& s, std::string_view user, std::string_view pass) {
  if (user != "default") return false;
  return s.opt.requirepass.empty() || pass == s.opt.requirepass;
}

void cmd_auth(Impl& s, Client& c, Args& a) {
  if (a.size() > 3) return s.syntax(c);
  std::string user = "default", pass;
  if (a.size() == 2) {
    if (s.opt.requirepass.empty())
      return s.error(c,
                     "AUTH <password> called without any password configured for the default "
                     "user. Are you sure your configuration is correct?");
    pass = a[1];
  } else {
    user = a[1];
    pass = a[2];
  }
  if (!auth_ok(s, user, pass))
    return s.error(c, "-WRONGPASS invalid username-password pair or user is disabled.");
  c.authenticated = true;
  s.ok(c);
}

}  // namespace lockwire::sim::model
