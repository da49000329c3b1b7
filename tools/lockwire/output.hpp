// The lockwire tool's output helpers: messages on stderr, names and times as printed, and the
// -v progress hooks.
#pragma once

#include <signal.h>
#include <unistd.h>
#include <uv.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "lockwire/lock/client.hpp"
#include "lockwire/loop/seam.hpp"

namespace lockwire::cli {

// `s` for a line of text output: control characters and bytes that are not UTF-8 as \xNN, so
// that a name another client wrote (the library is binary-safe) stays on one line.
[[nodiscard]] std::string printable(std::string_view s);
// "lockwire: <message>" on stderr, one write, one line (printable()).
__attribute__((format(printf, 1, 2))) void print_err(const char* fmt, ...);
[[nodiscard]] std::string kind_name(lock::Kind k);
// The server's own words in a message, from the first Redis error code on ("NOPERM this user
// has no permissions ...", "WRONGPASS ..."); "" when it quotes none.
[[nodiscard]] std::string server_words(std::string_view message);
// The one JSON object a failure under --json prints on stdout (docs/cli.md, *Output*):
// {"ok":false,"exit":N,"resource":R|null,"error":MESSAGE,"server":WORDS|null} plus `extra`
// (e.g. ,"owner":"o","released":false), then a newline. Flushes stdout.
void print_json_failure(int exit, std::string_view resource, std::string_view error,
                        std::string_view extra = {});
// Where we connect, without credentials (for messages).
[[nodiscard]] std::string describe_endpoint(const loop::Endpoint& ep);
[[nodiscard]] std::string iso_time(loop::WallTime t);
// hostname:pid:random
[[nodiscard]] std::string default_owner();

// Verbose progress from the lock client's hooks.
class VerboseMetrics final : public lock::Metrics {
 public:
  explicit VerboseMetrics(std::string resource) : resource_(std::move(resource)) {}
  void on_op(lock::Op op, lock::Kind, std::string_view, std::error_code ec,
             lock::Nanos latency) noexcept override {
    if (op != lock::Op::renew) return;
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(latency).count();
    if (ec) {
      print_err("%s: renew failed: %s", resource_.c_str(), ec.message().c_str());
    } else {
      print_err("%s: renewed (%lld us)", resource_.c_str(), static_cast<long long>(us));
    }
  }

  void on_degraded(std::string_view what, std::string_view words) noexcept override {
    print_err("%s: server: %.*s (%.*s)", resource_.c_str(), static_cast<int>(what.size()),
              what.data(), static_cast<int>(words.size()), words.data());
  }

 private:
  std::string resource_;
};

}  // namespace lockwire::cli
