#include "args.hpp"

#include "lockwire/lock/protocol.hpp"
#include "lockwire/loop/connection.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <limits>

namespace lockwire::cli {

namespace {

constexpr Nanos kForever = std::chrono::hours(24 * 365);

struct CommandInfo {
  Command cmd;
  std::string_view name;
};
constexpr std::array<CommandInfo, 8> kCommands{{
    {Command::run, "run"},
    {Command::acquire, "acquire"},
    {Command::release, "release"},
    {Command::renew, "renew"},
    {Command::upgrade, "upgrade"},
    {Command::force_release, "force-release"},
    {Command::inspect, "inspect"},
    {Command::watch, "watch"},
}};

// Which command-specific options each command accepts (common ones are always accepted).
enum Opt : unsigned {
  kOptTtl = 1u << 0,
  kOptWait = 1u << 1,
  kOptOwner = 1u << 2,
  kOptShared = 1u << 3,
  kOptJson = 1u << 4,
  kOptKillAfter = 1u << 5,
  kOptPermits = 1u << 6,
  kOptFair = 1u << 7,
};

unsigned allowed(Command c) {
  switch (c) {
    case Command::run:
      return kOptTtl | kOptWait | kOptOwner | kOptShared | kOptKillAfter | kOptPermits | kOptFair;
    case Command::acquire:
      return kOptTtl | kOptWait | kOptOwner | kOptShared | kOptJson | kOptPermits | kOptFair;
    case Command::release:
      return kOptOwner | kOptShared | kOptJson;
    case Command::renew:
      return kOptTtl | kOptOwner | kOptShared | kOptJson;
    case Command::upgrade:
      return kOptTtl | kOptWait | kOptOwner | kOptJson;
    case Command::force_release:
    case Command::inspect:
    case Command::watch:
      return kOptJson;
    case Command::none:
      break;
  }
  return 0;
}

bool checked_mul_add(std::int64_t a, std::int64_t m, std::int64_t b, std::int64_t& out) {
  std::int64_t prod = 0;
  if (__builtin_mul_overflow(a, m, &prod)) return false;
  return !__builtin_add_overflow(prod, b, &out);
}

}  // namespace

std::string_view command_name(Command c) noexcept {
  for (const auto& ci : kCommands) {
    if (ci.cmd == c) return ci.name;
  }
  return "";
}

std::optional<Nanos> parse_duration(std::string_view s, std::string* why) {
  auto fail = [&](std::string msg) -> std::optional<Nanos> {
    if (why) *why = std::move(msg);
    return std::nullopt;
  };
  if (s == "forever" || s == "inf") return kForever;
  if (s == "0") return Nanos{0};  // the one number whose unit cannot matter
  if (s.empty()) return fail("empty duration");
  std::size_t i = 0;
  std::int64_t whole = 0;
  std::size_t whole_digits = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
    if (!checked_mul_add(whole, 10, s[i] - '0', whole)) return fail("duration too large");
    ++i;
    ++whole_digits;
  }
  std::int64_t frac = 0, frac_scale = 1;
  std::size_t frac_digits = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      if (frac_digits < 9) {  // nanosecond resolution is plenty; ignore further digits
        frac = frac * 10 + (s[i] - '0');
        frac_scale *= 10;
      }
      ++i;
      ++frac_digits;
    }
    if (frac_digits == 0) return fail("no digits after '.'");
  }
  if (whole_digits == 0 && frac_digits == 0) {
    return fail(s[0] == '-' ? "durations cannot be negative" : "a duration starts with a number");
  }
  const std::string_view unit = s.substr(i);
  std::int64_t ns_per = 0;
  if (unit == "us") {
    ns_per = 1'000;
  } else if (unit == "ms") {
    ns_per = 1'000'000;
  } else if (unit == "s") {
    ns_per = 1'000'000'000;
  } else if (unit == "m") {
    ns_per = 60'000'000'000;
  } else if (unit == "h") {
    ns_per = 3'600'000'000'000;
  } else if (unit.empty()) {
    return fail("missing unit (use e.g. 250ms, 10s, 2m, 1h)");
  } else {
    return fail("unknown unit '" + std::string(unit) + "' (use us, ms, s, m or h)");
  }
  std::int64_t total = 0;
  // frac < frac_scale <= 1e9 and ns_per <= 3.6e12: the product needs 128 bits.
  const auto frac_ns = static_cast<std::int64_t>(static_cast<__int128>(frac) * ns_per / frac_scale);
  if (!checked_mul_add(whole, ns_per, frac_ns, total)) return fail("duration too large");
  if (Nanos(total) > kForever) return fail("duration longer than one year");
  return Nanos(total);
}

std::string format_ttl_left(std::int64_t ttl_ms) {
  // A persistent lease (--ttl forever) is a 50-year TTL on the server: anything past 40 years.
  constexpr std::int64_t kPersistentMs = std::int64_t{40} * 365 * 24 * 3600 * 1000;
  if (ttl_ms > kPersistentMs) return "persistent";
  return std::to_string(ttl_ms) + "ms left";
}

std::string format_duration(Nanos d) {
  using namespace std::chrono;
  if (lock::is_forever(d)) return "forever";
  char buf[64];
  const auto ns = d.count();
  if (ns % 1'000'000'000 == 0) {
    std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(ns / 1'000'000'000));
  } else if (ns % 1'000'000 == 0) {
    std::snprintf(buf, sizeof buf, "%lldms", static_cast<long long>(ns / 1'000'000));
  } else {
    std::snprintf(buf, sizeof buf, "%lldus", static_cast<long long>(ns / 1'000));
  }
  return buf;
}

ParseStatus parse_args(const std::vector<std::string>& args, Options& out, std::string& error) {
  auto fail = [&](std::string msg) {
    error = std::move(msg);
    return ParseStatus::error;
  };
  unsigned seen = 0;
  std::vector<std::string> positional;
  bool run_command_started = false;
  // `run R1 R2 -- COMMAND`: with `--`, every word before it is a RESOURCE.
  const bool dashdash = std::find(args.begin(), args.end(), "--") != args.end();
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (run_command_started) {
      out.argv.push_back(a);
      continue;
    }
    if (a == "--") {
      if (out.command == Command::run) {
        run_command_started = true;
        continue;
      }
      for (++i; i < args.size(); ++i) positional.push_back(args[i]);
      break;
    }
    if (a.size() < 2 || a[0] != '-') {
      if (out.command == Command::none) {
        bool found = false;
        for (const auto& ci : kCommands) {
          if (a == ci.name) {
            out.command = ci.cmd;
            found = true;
          }
        }
        if (!found) {
          if (a == "help") return ParseStatus::help;
          return fail("unknown command '" + shown_arg(a) + "'");
        }
        continue;
      }
      positional.push_back(a);
      // `run RESOURCE COMMAND...` without `--`: the first word after RESOURCE starts COMMAND.
      if (out.command == Command::run && (positional.size() == 1 || dashdash)) continue;
      if (out.command == Command::run) {
        positional.pop_back();
        out.argv.push_back(a);
        run_command_started = true;
      }
      continue;
    }
    // An option: "--name value" or "--name=value".
    std::string name = a;
    std::optional<std::string> inline_value;
    if (const auto eq = a.find('='); eq != std::string::npos && a.starts_with("--")) {
      name = a.substr(0, eq);
      inline_value = a.substr(eq + 1);
    }
    auto value = [&](std::string& v) -> bool {
      if (inline_value) {
        v = *inline_value;
        return true;
      }
      if (i + 1 >= args.size()) return false;
      v = args[++i];
      return true;
    };
    auto flag = [&](bool& f) -> bool {
      if (inline_value) return false;
      f = true;
      return true;
    };
    auto duration = [&](auto& slot, unsigned bit) -> ParseStatus {
      std::string v, why;
      if (!value(v)) return fail(name + " needs a duration (e.g. 250ms, 10s, 2m)");
      auto d = parse_duration(v, &why);
      if (!d) return fail("bad " + name + " '" + v + "': " + why);
      slot = *d;
      seen |= bit;
      return ParseStatus::ok;
    };
    std::string v;
    if (name == "-h" || name == "--help") return ParseStatus::help;
    if (name == "--version") return ParseStatus::version;
    if (name == "--url") {
      if (!value(v)) return fail("--url needs a URL");
      out.url = v;
    } else if (name == "--password-file") {
      if (!value(v) || v.empty()) return fail("--password-file needs a file");
      out.password_file = v;
    } else if (name == "--prefix") {
      if (!value(v)) return fail("--prefix needs a value");
      out.prefix = v;
    } else if (name == "--tls") {
      if (!flag(out.tls)) return fail("--tls takes no value");
    } else if (name == "--tls-ca") {
      if (!value(out.tls_ca)) return fail("--tls-ca needs a file");
    } else if (name == "--tls-cert") {
      if (!value(out.tls_cert)) return fail("--tls-cert needs a file");
    } else if (name == "--tls-key") {
      if (!value(out.tls_key)) return fail("--tls-key needs a file");
    } else if (name == "--tls-server-name") {
      if (!value(out.tls_server_name)) return fail("--tls-server-name needs a name");
    } else if (name == "--tls-insecure") {
      if (!flag(out.tls_insecure)) return fail("--tls-insecure takes no value");
    } else if (name == "--ttl") {
      Nanos d{};
      // A persistent lease only when spelled out: `--ttl 0` stays an error.
      const std::string next =
          inline_value ? *inline_value : (i + 1 < args.size() ? args[i + 1] : std::string());
      if (next == "forever" || next == "inf") {  // as for every duration: "inf" = "forever"
        if (!inline_value) ++i;
        seen |= kOptTtl;
        d = lock::kForever;
      } else {
        if (auto st = duration(d, kOptTtl); st != ParseStatus::ok) return st;
        if (d <= Nanos{0}) return fail("--ttl must be positive (a lease of 0 would end at once)");
        if (d < kMinTtl) {
          return fail("--ttl must be at least " + format_duration(kMinTtl) + " (got " +
                      format_duration(d) +
                      "): a shorter lease can be gone before its grant is answered, renewed or "
                      "its token used");
        }
      }
      out.ttl = d;
    } else if (name == "--wait") {
      if (auto st = duration(out.wait, kOptWait); st != ParseStatus::ok) return st;
    } else if (name == "--kill-after") {
      if (auto st = duration(out.kill_after, kOptKillAfter); st != ParseStatus::ok) return st;
    } else if (name == "--connect-timeout") {
      Nanos d{};
      if (auto st = duration(d, 0); st != ParseStatus::ok) return st;
      if (d <= Nanos{0}) return fail("--connect-timeout must be positive");
      out.connect_timeout = d;
    } else if (name == "--owner") {
      if (!value(v)) return fail("--owner needs an id");
      out.owner = v;
      seen |= kOptOwner;
    } else if (name == "--shared") {
      if (!flag(out.shared)) return fail("--shared takes no value");
      seen |= kOptShared;
    } else if (name == "--json") {
      if (!flag(out.json)) return fail("--json takes no value");
      seen |= kOptJson;
    } else if (name == "-q" || name == "--quiet") {
      if (!flag(out.quiet)) return fail("--quiet takes no value");
    } else if (name == "-v" || name == "--verbose") {
      if (!flag(out.verbose)) return fail("--verbose takes no value");
    } else if (name == "--allow-eviction") {
      if (!flag(out.allow_eviction)) return fail("--allow-eviction takes no value");
    } else if (name == "--no-vouch") {
      if (!flag(out.no_vouch)) return fail("--no-vouch takes no value");
    } else if (name == "--parked-handoff") {
      if (!flag(out.parked_handoff)) return fail("--parked-handoff takes no value");
    } else if (name == "--min-replicas") {
      constexpr const char* kBad =
          "--min-replicas needs a number of replicas from 0 to 64, or 'majority'";
      if (!value(v)) return fail(kBad);
      if (v == "majority") {
        out.min_replicas_majority = true;
        out.min_replicas = 0;
      } else {
        int n = -1;
        const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
        if (ec != std::errc() || p != v.data() + v.size() || n < 0 || n > 64) {
          return fail(kBad);
        }
        out.min_replicas = n;
        out.min_replicas_majority = false;
      }
    } else if (name == "--fair") {
      if (!flag(out.fair)) return fail("--fair takes no value");
      seen |= kOptFair;
    } else if (name == "--permits") {
      constexpr const char* kBad = "--permits needs a number of holders from 1 to 1000000";
      if (!value(v)) return fail(kBad);
      int n = 0;
      const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (ec != std::errc() || p != v.data() + v.size() || n < 1 || n > 1'000'000) {
        return fail(kBad);
      }
      out.permits = n;
      out.shared = true;  // a semaphore's holders are shared leases
      seen |= kOptPermits;
    } else if (name == "--replica-timeout") {
      Nanos d{};
      if (auto st = duration(d, 0); st != ParseStatus::ok) return st;
      if (d < std::chrono::milliseconds(1)) return fail("--replica-timeout must be at least 1ms");
      out.replica_timeout = d;
    } else {
      return fail("unknown option '" + name + "'");
    }
  }

  if (out.command == Command::none) return fail("no command given");
  const std::string cmd(command_name(out.command));
  const unsigned bad = seen & ~allowed(out.command);
  if (bad != 0) {
    static constexpr std::array<std::pair<unsigned, std::string_view>, 8> names{{
        {kOptFair, "--fair"},
        {kOptPermits, "--permits"},
        {kOptTtl, "--ttl"},
        {kOptWait, "--wait"},
        {kOptOwner, "--owner"},
        {kOptShared, "--shared"},
        {kOptJson, "--json"},
        {kOptKillAfter, "--kill-after"},
    }};
    for (const auto& [bit, n] : names) {
      if (bad & bit) return fail(std::string(n) + " does not apply to '" + cmd + "'");
    }
  }
  if (out.quiet && out.verbose) return fail("--quiet and --verbose exclude each other");
  if (positional.empty()) return fail("'" + cmd + "' needs a RESOURCE");
  const bool several = out.command == Command::run || out.command == Command::acquire;
  if (positional.size() > 1 && !several) {
    return fail("unexpected argument '" + shown_arg(positional[1]) + "'");
  }
  if (out.fair && out.shared) return fail("--fair is for exclusive locks (not --shared/--permits)");
  if (positional.size() > 1 && out.shared) {
    return fail("several RESOURCEs are taken exclusively (not with --shared or --permits)");
  }
  out.resource = positional[0];
  out.resources = positional;
  for (const std::string& r : out.resources) {
    if (r.empty()) return fail("RESOURCE must not be empty");
  }
  if (out.resource.empty()) return fail("RESOURCE must not be empty");
  switch (out.command) {
    case Command::run:
      if (out.argv.empty()) return fail("'run' needs a COMMAND after the RESOURCE (and '--')");
      if (!out.ttl) out.ttl = std::chrono::seconds(30);
      break;
    case Command::acquire:
      if (!out.ttl) return fail("'acquire' needs --ttl (the lease outlives this process)");
      break;
    case Command::release:
      if (!out.owner) return fail("'release' needs --owner (the owner printed by acquire)");
      break;
    case Command::upgrade:
      if (!out.owner) return fail("'upgrade' needs --owner (the owner of the shared lease)");
      if (!out.ttl) return fail("'upgrade' needs --ttl (the exclusive lease outlives this process)");
      break;
    case Command::renew:
      if (!out.owner) return fail("'renew' needs --owner (the owner printed by acquire)");
      if (!out.ttl) return fail("'renew' needs --ttl");
      break;
    default:
      break;
  }
  if (out.owner && out.owner->empty()) return fail("--owner must not be empty");
  for (const std::string& r : out.resources) {
    if (std::string bad = printable_name_problem("RESOURCE", r); !bad.empty()) return fail(bad);
  }
  if (out.owner) {
    if (std::string bad = printable_name_problem("--owner", *out.owner); !bad.empty()) {
      return fail(bad);
    }
  }
  return ParseStatus::ok;
}

std::string short_usage() {
  return R"(usage: lockwire run [options] RESOURCE... -- COMMAND [ARGS...]
       lockwire acquire RESOURCE... --ttl D [--wait D] [--owner ID] [--shared|--permits N] [--json]
       lockwire release RESOURCE --owner ID      lockwire renew RESOURCE --owner ID --ttl D
       lockwire upgrade RESOURCE --owner ID --ttl D [--wait D]
       lockwire force-release|inspect|watch RESOURCE [--json]
Run 'lockwire --help' for all options and exit statuses.
)";
}

std::string usage_text() {
  return R"(usage: lockwire COMMAND [options] RESOURCE ...

Distributed locks on Redis (Lua-free), for shells, cron jobs and deploy scripts.

Commands:
  run [options] RESOURCE -- COMMAND [ARGS...]
        Acquire (waiting up to --wait), run COMMAND while auto-renew keeps the lease alive,
        release when it exits, and exit with its status. COMMAND sees LOCKWIRE_RESOURCE,
        LOCKWIRE_OWNER and LOCKWIRE_FENCING_TOKEN. If the lease is lost, COMMAND gets SIGTERM
        (SIGKILL after --kill-after) and lockwire exits 76. HUP INT QUIT TERM USR1 USR2 WINCH
        sent to lockwire are forwarded to COMMAND.
  acquire RESOURCE --ttl D [--wait D] [--owner ID] [--shared|--permits N] [--json]
        One-shot acquire; prints "TOKEN OWNER" (or JSON). The lease lives for its TTL.
        Several RESOURCEs (run: before --): all or nothing, exclusive, taken in name order;
        acquire prints "TOKEN OWNER RESOURCE" per lease, run exports LOCKWIRE_RESOURCES and
        LOCKWIRE_FENCING_TOKENS (space-separated, same order).
  release RESOURCE --owner ID [--shared] [--json]
  renew RESOURCE --owner ID --ttl D [--shared] [--json]
  upgrade RESOURCE --owner ID --ttl D [--wait D] [--json]
        The owner's shared lease becomes exclusive in place (no writer gets in between),
        waiting up to --wait for the other readers to leave; prints "TOKEN OWNER" (new token).
        Exits 75 if another reader is upgrading (release yours to let it go).
  inspect RESOURCE [--json]           who holds it, kind, TTL left, last fencing token
  watch RESOURCE [--json]             print each change of holder as it happens (server pushes)

Options:
  --url URL            redis://[user:pass@]host[:port][/db], rediss://..., unix:///path,
                       redis://h1:p1,h2:p2,... (a Redis Cluster's seed nodes; one node works
                       too), redis-sentinel://s1:p1,s2:p2,...#master (Sentinel)
                       (default: $LOCKWIRE_URL, else redis://127.0.0.1:6379)
  --password-file FILE the server's password, read from FILE (a trailing newline is not part
                       of it): keeps it out of argv, which `ps` shows. Without it: the URL's
                       password, else $LOCKWIRE_PASSWORD, else $REDISCLI_AUTH
  --tls                use TLS even with a redis:// URL (any --tls-* option implies it)
  --tls-ca FILE        CA bundle (PEM) to verify the server with (default: system store)
  --tls-cert FILE      client certificate (PEM);  --tls-key FILE  its private key
  --tls-server-name N  name to verify the server certificate against (default: URL host)
  --tls-insecure       do NOT verify the server certificate (prints a warning)
  --prefix P           key prefix (default "lockwire:")
  --ttl D              lease length, at least 500ms (run: default 30s; renewed every TTL/3);
                       "forever": a persistent lease, ended only by release or force-release
  --wait D             how long to wait for the lock (default 0: one attempt; "forever":
                       until granted or interrupted)
  --kill-after D       run: SIGKILL this long after SIGTERM on lease loss (default 10s)
  --connect-timeout D  (default 5s)
  --owner ID           owner id (default hostname:pid:random)
  --shared             shared (read) lock instead of exclusive
  --fair               grants in the order waiters arrived (every client of RESOURCE must
                       use it; a vanished waiter holds the queue up for at most 2s)
  --permits N          a counting semaphore: at most N holders at once (each its own lease;
                       every holder of RESOURCE must use the same N)
  --json               machine-readable output (one JSON object per line); a failure is one
                       {"ok":false,"exit":N,"resource","error","server"} object
  -q, --quiet          no messages on stderr (exit status only)
  -v, --verbose        progress messages on stderr (reconnects, degraded server modes)
  --allow-eviction     lock even where the server may evict lock keys (maxmemory-policy is
                       not noeviction): holders and fencing counters can then vanish
  --no-vouch           behind sentinels: count a lease up to its TTL even when the sentinels
                       no longer vouch for the primary (a partition can then give two holders)
  --parked-handoff     wait first in line with the acquire parked in the server behind a
                       blocking pop: granted as the holder's release lands (one round trip)
  --min-replicas N     report a grant or renewal only once N replicas have it (WAIT); else
                       the grant is withdrawn and tried again within --wait (then exit 69),
                       and a renewal does not count. 'majority': more than half of the
                       primary's configured replicas (the sentinels' count, else ROLE's)
  --replica-timeout D  how long WAIT waits for them (default 100ms)
  -h, --help, --version
Durations: 250ms, 10s, 1.5s, 2m, 1h (also us); 0 needs no unit; at most one year.
RESOURCE (at most 512 bytes) and --owner (256) are UTF-8 without control characters or
braces. Environment: LOCKWIRE_URL, LOCKWIRE_PASSWORD, REDISCLI_AUTH.

Exit statuses:
  0    success (run: COMMAND's own status; 128+N if it died of signal N)
  64   usage error: bad arguments, URL or duration
  69   connection or server error
  75   not acquired within --wait (held by someone else)
  76   run: the lease was lost while COMMAND ran (COMMAND was terminated)
  77   release/renew: the lease is not held (expired, force-released or not ours)
  126  run: COMMAND is not executable;  127  run: COMMAND not found
)";
}

std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  std::size_t len = c >= 0xf0 && c <= 0xf4  ? 4
                    : c >= 0xe0 && c < 0xf0 ? 3
                    : c >= 0xc2 && c < 0xe0 ? 2
                                            : 0;
  bool ok = len > 0 && i + len <= s.size();
  for (std::size_t k = 1; ok && k < len; ++k) {
    ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
  }
  if (ok && len == 3) {
    const auto c1 = static_cast<unsigned char>(s[i + 1]);
    ok = !(c == 0xe0 && c1 < 0xa0) && !(c == 0xed && c1 >= 0xa0);  // overlong, surrogates
  }
  if (ok && len == 4) {
    const auto c1 = static_cast<unsigned char>(s[i + 1]);
    ok = !(c == 0xf0 && c1 < 0x90) && !(c == 0xf4 && c1 >= 0x90);
  }
  return ok ? len : 0;
}

std::string printable_name_problem(std::string_view what, std::string_view name) {
  char b[160];
  for (std::size_t i = 0; i < name.size();) {
    const auto c = static_cast<unsigned char>(name[i]);
    if (c < 0x20 || c == 0x7f) {
      std::snprintf(b, sizeof b,
                    "%.*s contains a control character (byte 0x%02x at offset %zu): names are "
                    "printed one per line, so they may hold none",
                    static_cast<int>(what.size()), what.data(), c, i);
      return b;
    }
    if (c < 0x80) {
      ++i;
      continue;
    }
    const std::size_t len = utf8_sequence_length(name, i);
    if (len == 0) {
      std::snprintf(b, sizeof b, "%.*s is not valid UTF-8 (byte 0x%02x at offset %zu)",
                    static_cast<int>(what.size()), what.data(), c, i);
      return b;
    }
    i += len;
  }
  return {};
}

std::string shown_arg(std::string_view arg) {
  if (arg.find('@') == std::string_view::npos && arg.find("password=") == std::string_view::npos) {
    return std::string(arg);
  }
  return loop::redact_url(arg);
}

std::string json_string(std::string_view s) {
  std::string o;
  o.reserve(s.size() + 2);
  o.push_back('"');
  auto hex4 = [&](unsigned c) {
    char b[8];
    std::snprintf(b, sizeof b, "\\u%04x", c);
    o += b;
  };
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      o.push_back('\\');
      o.push_back(static_cast<char>(c));
      ++i;
    } else if (c == '\n') {
      o += "\\n", ++i;
    } else if (c == '\r') {
      o += "\\r", ++i;
    } else if (c == '\t') {
      o += "\\t", ++i;
    } else if (c < 0x20 || c == 0x7f) {
      hex4(c), ++i;
    } else if (c < 0x80) {
      o.push_back(static_cast<char>(c)), ++i;
    } else {
      // Copy a well-formed UTF-8 sequence; any other byte becomes \udcXX.
      const std::size_t len = utf8_sequence_length(s, i);
      if (len > 0) {
        o.append(s.substr(i, len));
        i += len;
      } else {
        hex4(0xdc00 | c);  // surrogateescape: the byte itself, recoverable
        ++i;
      }
    }
  }
  o.push_back('"');
  return o;
}

}  // namespace lockwire::cli
