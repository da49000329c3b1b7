// Redis' debug.c: DEBUG SLEEP (refused unless enable_debug_command, as in Redis).
#include <cstdlib>

#include "commands.hpp"

namespace lockwire::sim::model {

// DEBUG SLEEP <seconds>: the whole server stops (the host implements the stall).
void cmd_debug(Impl& s, Client& c, Args& a) {
  if (ieq(a[1], "sleep") && a.size() == 3) {
    const double secs = std::atof(a[2].c_str());
    if (s.hooks.stall && secs > 0) s.hooks.stall(static_cast<std::int64_t>(secs * 1e6));
    return s.ok(c);
  }
  s.error(c, "unknown subcommand or wrong number of arguments for '" + std::string(cstr(a[1])) +
                 "'. Try DEBUG HELP.");
}

}  // namespace lockwire::sim::model
