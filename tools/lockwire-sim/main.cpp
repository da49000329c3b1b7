// lockwire-sim: the deterministic Redis simulator's command line. One function per subcommand;
// add new ones to kCommands.
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>

#include "serve.hpp"
#ifdef LOCKWIRE_SIM_RACES
#include "races_commands.hpp"
#endif

namespace {

bool parse_u64(const char* s, std::uint64_t& out) {
  if (s == nullptr || *s == '\0') return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0' || s[0] == '-') return false;
  out = v;
  return true;
}

int cmd_serve(int argc, char** argv) {
  lockwire::tools::ServeOptions o;
  for (int i = 0; i < argc; ++i) {
    const std::string_view a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    std::uint64_t n = 0;
    if (a == "--port" && parse_u64(v, n) && n > 0 && n < 65536) {
      o.port = static_cast<std::uint16_t>(n);
      ++i;
    } else if (a == "--host" && v != nullptr) {
      o.host = v;
      ++i;
    } else if (a == "--seed" && parse_u64(v, n)) {
      o.seed = n;
      ++i;
    } else if (a == "--enable-debug-command") {
      o.enable_debug_command = true;
    } else if (a == "--requirepass" && v != nullptr) {
      o.requirepass = v;
      ++i;
    } else if (a.size() > 2 && a.substr(0, 2) == "--" && v != nullptr) {
      o.config.emplace_back(std::string(a.substr(2)), v);  // any redis-server parameter
      ++i;
    } else {
      std::fprintf(
          stderr,
          "usage: lockwire-sim serve --port P [--host 127.0.0.1] [--seed S] "
          "[--requirepass PW] [--enable-debug-command] [--<redis parameter> <value> ...]\n"
          "  bad or incomplete argument: %s\n",
          argv[i]);
      return 2;
    }
  }
  try {
    return lockwire::tools::serve(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lockwire-sim serve: %s\n", e.what());
    return 2;
  }
}

struct Subcommand {
  const char* name;
  const char* summary;
  int (*run)(int argc, char** argv);
};

const Subcommand kCommands[] = {
    {"serve", "run the simulated Redis on a real TCP port (real clock)", cmd_serve},
#ifdef LOCKWIRE_SIM_RACES
    {"list", "named race scenarios and client strategies", lockwire::races::cli_list},
    {"replay", "replay NAME [--seed S] [--strategy X] [--trace]: a named race scenario",
     lockwire::races::cli_replay},
    {"explore", "explore --seeds N [--from S] [--profile ...]: seeded fault exploration",
     lockwire::races::cli_explore},
#endif
};

int usage(FILE* f) {
  std::fprintf(f, "usage: lockwire-sim <command> [options]\n\ncommands:\n");
  for (const auto& c : kCommands) std::fprintf(f, "  %-10s %s\n", c.name, c.summary);
  return f == stderr ? 2 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage(stderr);
  const std::string_view cmd = argv[1];
  if (cmd == "-h" || cmd == "--help" || cmd == "help") return usage(stdout);
  for (const auto& c : kCommands)
    if (cmd == c.name) return c.run(argc - 2, argv + 2);
  std::fprintf(stderr, "lockwire-sim: unknown command '%s'\n", argv[1]);
  return usage(stderr);
}
