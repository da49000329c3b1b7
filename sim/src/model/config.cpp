// Redis' config.c, the part lock deployments touch: CONFIG GET for the maxmemory parameters,
// CONFIG SET maxmemory / maxmemory-policy (atomically, with Redis' error texts). Every other
// parameter is unknown here (Redis knows and sets them): see sim/README.md.
#include <cctype>

#include "commands.hpp"

namespace lockwire::sim::model {

namespace {

struct Param {
  const char* name;
  std::string (*get)(const Impl&);
  bool settable;
};

const Param kParams[] = {
    {"maxmemory", [](const Impl& s) { return std::to_string(s.maxmemory); }, true},
    {"maxmemory-policy", [](const Impl& s) { return std::string(policy_name(s.policy)); }, true},
    {"maxmemory-samples", [](const Impl&) { return std::string("5"); }, false},
    {"maxmemory-eviction-tenacity", [](const Impl&) { return std::string("10"); }, false},
    {"maxmemory-clients", [](const Impl&) { return std::string("0"); }, false},
};

const Param* find_param(std::string_view name) {
  for (auto& p : kParams)
    if (ieq(p.name, name)) return &p;
  return nullptr;
}

// Redis' memtoull: digits, then an optional unit (b k kb m mb g gb, any case); no sign, no
// fraction. Like Redis, an overlong number saturates instead of failing.
bool parse_memory(std::string_view s, std::uint64_t& out) {
  if (!s.empty() && s[0] == '-') return false;
  std::size_t digits = 0;
  while (digits < s.size() && std::isdigit(static_cast<unsigned char>(s[digits]))) ++digits;
  const std::string_view unit = s.substr(digits);
  std::uint64_t mul = 0;
  struct Unit {
    const char* name;
    std::uint64_t mul;
  };
  for (const Unit& u : {Unit{"", 1}, Unit{"b", 1}, Unit{"k", 1000}, Unit{"kb", 1024},
                        Unit{"m", 1000 * 1000}, Unit{"mb", 1024 * 1024},
                        Unit{"g", 1000ull * 1000 * 1000}, Unit{"gb", 1024ull * 1024 * 1024}})
    if (ieq(unit, u.name)) mul = u.mul;
  if (mul == 0 || digits >= 128) return false;
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < digits; ++i) {
    const std::uint64_t d = static_cast<std::uint64_t>(s[i] - '0');
    v = v > (~0ull - d) / 10 ? ~0ull : v * 10 + d;
  }
  out = v * mul;
  return true;
}

}  // namespace

void cmd_config_get(Impl& s, Client& c, Args& a) {
  // Results keyed by name: an exact name is echoed as given, a pattern yields the canonical names.
  std::vector<std::pair<std::string, const Param*>> found;
  auto have = [&](const Param* p) {
    for (auto& [n, q] : found)
      if (q == p) return true;
    return false;
  };
  for (std::size_t i = 2; i < a.size(); ++i) {
    const std::string& arg = a[i];
    if (arg.find_first_of("[*?") == std::string::npos) {
      const Param* p = find_param(arg);
      if (p != nullptr && !have(p)) found.emplace_back(arg, p);
      continue;
    }
    for (auto& p : kParams)
      if (glob_match(arg, p.name, true) && !have(&p)) found.emplace_back(p.name, &p);
  }
  s.map(c, found.size());
  for (auto& [name, p] : found) {
    s.bulk(c, name);
    s.bulk(c, p->get(s));
  }
}

void cmd_config_set(Impl& s, Client& c, Args& a) {
  if (a.size() % 2 != 0) return s.syntax(c);
  std::vector<const Param*> params;
  for (std::size_t i = 2; i < a.size(); i += 2) {
    const Param* p = find_param(a[i]);
    if (p == nullptr || !p->settable)
      return s.error(c, "Unknown option or number of arguments for CONFIG SET - '" +
                            std::string(cstr(a[i])) + "'");
    for (auto* q : params)
      if (q == p)
        return s.error(c, "CONFIG SET failed (possibly related to argument '" +
                              std::string(cstr(a[i])) + "') - duplicate parameter");
    params.push_back(p);
  }
  // Validate everything before changing anything.
  std::uint64_t maxmemory = s.maxmemory;
  MaxmemoryPolicy policy = s.policy;
  bool memory_set = false;
  for (std::size_t i = 2; i < a.size(); i += 2) {
    const std::string failed =
        "CONFIG SET failed (possibly related to argument '" + std::string(cstr(a[i])) + "') - ";
    if (ieq(a[i], "maxmemory")) {
      if (!parse_memory(a[i + 1], maxmemory))
        return s.error(c, failed + "argument must be a memory value");
      memory_set = true;
    } else if (!parse_policy(a[i + 1], policy)) {
      return s.error(c, failed +
                            "argument(s) must be one of the following: volatile-lru, "
                            "volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, "
                            "allkeys-lfu, allkeys-random, noeviction");
    }
  }
  s.maxmemory = maxmemory;
  s.policy = policy;
  s.trace("maxmemory", std::to_string(maxmemory) + " " + policy_name(policy));
  // updateMaxmemory starts an eviction pass (evictionTimeProc): after this turn's commands.
  if (memory_set && maxmemory != 0) s.eviction_due = true;
  s.ok(c);
}

}  // namespace lockwire::sim::model
