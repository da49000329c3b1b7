// Command-line parsing for the lockwire tool: commands, options, durations and exit statuses.
// Pure (no I/O, no environment access) so the tests can check it without spawning the tool.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lockwire::cli {

// Exit statuses (sysexits.h where one fits; 126/127 as in POSIX shells). Documented in --help
// and docs/cli.md; keep the three in step.
enum Exit : int {
  kOk = 0,
  kUsage = 64,        // EX_USAGE: bad arguments, URL or duration
  kUnavailable = 69,  // EX_UNAVAILABLE: connection or server error
  kBusy = 75,         // EX_TEMPFAIL: not acquired within --wait
  kLost = 76,         // the lease was lost while COMMAND ran (COMMAND was terminated)
  kNotHeld = 77,      // EX_NOPERM: release/renew of a lease that is not (or no longer) ours
  kCannotExec = 126,  // COMMAND found but not executable
  kNotFound = 127,    // COMMAND not found
};

enum class Command : std::uint8_t {
  none,
  run,
  acquire,
  release,
  renew,
  upgrade,
  force_release,
  inspect,
  watch,
};

using Nanos = std::chrono::nanoseconds;

struct Options {
  Command command = Command::none;
  std::string resource;
  std::vector<std::string> argv;  // run: COMMAND and its arguments

  std::optional<std::string> url;  // unset: $LOCKWIRE_URL, else redis://127.0.0.1:6379
  bool tls = false;
  std::string tls_ca, tls_cert, tls_key, tls_server_name;
  bool tls_insecure = false;
  std::string prefix = "lockwire:";

  std::optional<Nanos> ttl;  // unset: 30s for run (required for acquire/renew)
  Nanos wait{0};             // 0 = one attempt
  Nanos kill_after{std::chrono::seconds(10)};
  Nanos connect_timeout{std::chrono::seconds(5)};
  std::optional<std::string> owner;  // unset: hostname:pid:random
  bool shared = false;
  bool json = false;
  bool quiet = false;
  bool verbose = false;
  // Lock even on a server that may evict lock keys (maxmemory-policy other than noeviction).
  bool allow_eviction = false;
  bool no_vouch = false;  // SentinelOptions::vouch off
  int min_replicas = 0;  // lock::ClientOptions::min_replicas
  int permits = 0;       // lock::LockRequest::permits (implies shared)
  bool fair = false;     // lock::LockRequest::fair
  std::vector<std::string> resources;  // run/acquire: every RESOURCE (all or nothing); [0] = resource
  Nanos replica_timeout{std::chrono::milliseconds(100)};
};

enum class ParseStatus : std::uint8_t { ok, help, version, error };

// Parses argv[1..]. On error `error` says what is wrong (without the usage text).
[[nodiscard]] ParseStatus parse_args(const std::vector<std::string>& args, Options& out,
                                     std::string& error);

// "250ms", "10s", "1.5s", "2m", "1h" (also "us"); "forever" = one year (the lock layer's cap);
// a bare "0". Rejects other bare numbers, negative values, unknown units and overflow. Options
// for which zero means nothing (--ttl, --connect-timeout) reject it themselves.
[[nodiscard]] std::optional<Nanos> parse_duration(std::string_view s, std::string* why = nullptr);
[[nodiscard]] std::string format_duration(Nanos d);
// "1234ms left", or "persistent" for a lease taken with --ttl forever.
[[nodiscard]] std::string format_ttl_left(std::int64_t ttl_ms);

[[nodiscard]] std::string_view command_name(Command c) noexcept;

// The full usage text (commands, options, exit statuses).
[[nodiscard]] std::string usage_text();
// A few lines of synopsis, printed after a usage error.
[[nodiscard]] std::string short_usage();

// JSON string literal (quotes included), escaping per RFC 8259; invalid UTF-8 bytes become U+FFFD.
[[nodiscard]] std::string json_string(std::string_view s);

}  // namespace lockwire::cli
