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
  // The data nodes' password, read from this file (main.cpp; docs/cli.md, *Passwords*): the
  // first of --password-file, the URL's password, $LOCKWIRE_PASSWORD and $REDISCLI_AUTH.
  std::optional<std::string> password_file;
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
  bool parked_handoff = false;  // ClientOptions::parked_handoff
  int min_replicas = 0;  // lock::ClientOptions::min_replicas (a count)
  bool min_replicas_majority = false;  // --min-replicas majority: ReplicaAcks::majority()
  int permits = 0;       // lock::LockRequest::permits (implies shared)
  bool fair = false;     // lock::LockRequest::fair
  std::vector<std::string> resources;  // run/acquire: every RESOURCE (all or nothing); [0] = resource
  Nanos replica_timeout{std::chrono::milliseconds(100)};
};

// The shortest --ttl accepted (run, acquire, renew, upgrade). A lease must outlive the round
// trips that grant and renew it (run renews every TTL/3 and starts COMMAND only with 100 ms of
// it left) and, for acquire, the start of the script's next step that uses its token: below
// half a second a lease is often gone before it is used (`--ttl 1ms` printed a token for a
// lease already expired; `run --ttl 1ms` exited 76 at once). docs/cli.md, *Limits*.
inline constexpr Nanos kMinTtl = std::chrono::milliseconds(500);

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

// JSON string literal (quotes included), escaping per RFC 8259. A byte that is not part of
// valid UTF-8 (only in names written by other clients: the tool refuses them on input) becomes
// \udcXX, Python's surrogateescape, so that the bytes can be had back — never U+FFFD.
[[nodiscard]] std::string json_string(std::string_view s);

// Why `name` (an owner or RESOURCE) cannot be used on the command line, or "" if it can: a
// control character (names are printed one per line: `read -r token owner` must see one) or
// bytes that are not UTF-8 (JSON output could not carry them as text).
[[nodiscard]] std::string printable_name_problem(std::string_view what, std::string_view name);

// The length of the well-formed UTF-8 sequence starting at s[i] (a byte >= 0x80), or 0.
[[nodiscard]] std::size_t utf8_sequence_length(std::string_view s, std::size_t i);

// An argument as it may be echoed in a message: a URL's passwords masked.
[[nodiscard]] std::string shown_arg(std::string_view arg);

}  // namespace lockwire::cli
