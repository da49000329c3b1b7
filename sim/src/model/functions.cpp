// Redis' functions.c as a server with the Lua engine and no library loaded: the simulator is
// Lua-free, so FUNCTION FLUSH / LIST / STATS / DELETE / KILL answer as redis-server 7.0.15 does
// with no functions (LIST an empty array, DELETE "Library not found", KILL NOTBUSY), and LOAD
// refuses every library ("Engine 'lua' not found" would mislead, so the error says why).
#include "commands.hpp"

namespace lockwire::sim::model {

void function_flush(Impl& s, Client& c, Args& a) {
  if (a.size() > 3) return subcommand_syntax(s, c, a);
  if (a.size() == 3 && !ieq(a[2], "sync") && !ieq(a[2], "async"))
    return s.error(c, "FUNCTION FLUSH only supports SYNC|ASYNC option");
  ++s.dirty;
  s.ok(c);
}

void function_list(Impl& s, Client& c, Args& a) {
  bool with_code = false, have_name = false;
  for (std::size_t i = 2; i < a.size(); ++i) {
    if (!with_code && ieq(a[i], "withcode")) {
      with_code = true;
      continue;
    }
    if (!have_name && ieq(a[i], "libraryname")) {
      if (i >= a.size() - 1) return s.error(c, "library name argument was not given");
      have_name = true;
      ++i;
      continue;
    }
    return s.error(c, "Unknown argument " + std::string(cstr(a[i])));
  }
  s.array(c, 0);
}

void function_stats(Impl& s, Client& c, Args&) {
  s.map(c, 2);
  s.bulk(c, "running_script");
  s.null(c);
  s.bulk(c, "engines");
  s.map(c, 1);
  s.bulk(c, "LUA");
  s.map(c, 2);
  s.bulk(c, "libraries_count");
  s.integer(c, 0);
  s.bulk(c, "functions_count");
  s.integer(c, 0);
}

void function_delete(Impl& s, Client& c, Args&) {
  s.error(c, "Library not found");
}

void function_kill(Impl& s, Client& c, Args&) {
  s.error(c, "-NOTBUSY No scripts in execution right now.");
}

void function_load(Impl& s, Client& c, Args&) {
  s.error(c, "Functions are not supported by this simulated server (no Lua engine)");
}

void function_help(Impl& s, Client& c, Args& a) {
  help_reply(s, c, a,
             {"LOAD [REPLACE] <FUNCTION CODE>",
              "    Create a new library with the given library name and code.",
              "DELETE <LIBRARY NAME>",
              "    Delete the given library.",
              "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
              "    Return general information on all the libraries:",
              "    * Library name",
              "    * The engine used to run the Library",
              "    * Library description",
              "    * Functions list",
              "    * Library code (if WITHCODE is given)",
              "    It also possible to get only function that matches a pattern using LIBRARYNAME "
              "argument.",
              "STATS",
              "    Return information about the current function running:",
              "    * Function name",
              "    * Command used to run the function",
              "    * Duration in MS that the function is running",
              "    If no function is running, return nil",
              "    In addition, returns a list of available engines.",
              "KILL",
              "    Kill the current running function.",
              "FLUSH [ASYNC|SYNC]",
              "    Delete all the libraries.",
              "    When called without the optional mode argument, the behavior is determined by "
              "the",
              "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
              "    * ASYNC: Asynchronously flush the libraries.",
              "    * SYNC: Synchronously flush the libraries.",
              "DUMP",
              "    Return a serialized payload representing the current libraries, can be "
              "restored using FUNCTION RESTORE command",
              "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
              "    Restore the libraries represented by the given payload, it is possible to "
              "give a restore policy to",
              "    control how to handle existing libraries (default APPEND):",
              "    * FLUSH: delete all existing libraries.",
              "    * APPEND: appends the restored libraries to the existing libraries. On "
              "collision, abort.",
              "    * REPLACE: appends the restored libraries to the existing libraries, On "
              "collision, replace the old",
              "      libraries with the new libraries (notice that even on this option there "
              "is a chance of failure",
              "      in case of functions name collision with another library)."});
}

}  // namespace lockwire::sim::model
