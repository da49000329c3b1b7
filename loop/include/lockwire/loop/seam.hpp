// The event-loop seam: the only way code in loop/'s connection and in lock/ touches time, timers,
// sockets, deferred work and randomness.
//
// Two implementations exist: loop/uv_loop.hpp (libuv, real sockets and clocks) and sim/ (virtual
// time, simulated network, seeded randomness). Client code written against this header runs
// unchanged on both — the FoundationDB Net2/Sim2 idea. Hence the rules for code above the seam:
// never call std::chrono::*_clock::now(), sleep, start threads or use std::random_device.
//
// Threading: one loop = one thread. Every callback below runs on the loop's thread, and never
// re-entrantly from inside the call that started the operation (post(), Timer::start(),
// Stream::write(), connect() all return before any callback they cause runs).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace lockwire::loop {

// All times are integer nanoseconds: monotonic instants since an arbitrary per-loop origin, wall
// instants since the Unix epoch. They are different types on purpose: lock validity is computed on
// the monotonic clock only; the wall clock may step backwards or forwards at any time.
using Nanos = std::chrono::nanoseconds;

struct MonoTime {
  Nanos since_origin{0};
  friend constexpr auto operator<=>(MonoTime, MonoTime) = default;
  friend constexpr MonoTime operator+(MonoTime t, Nanos d) { return MonoTime{t.since_origin + d}; }
  friend constexpr Nanos operator-(MonoTime a, MonoTime b) {
    return a.since_origin - b.since_origin;
  }
};

struct WallTime {
  Nanos since_epoch{0};
  friend constexpr auto operator<=>(WallTime, WallTime) = default;
};

// A one-shot or repeating timer, owned by the caller. Destroying it stops it: the callback never
// runs after the destructor returns. The callback may destroy or re-arm its own timer.
class Timer {
 public:
  virtual ~Timer() = default;
  // (Re)arms: first fire after `delay`, then every `repeat` if repeat > 0.
  virtual void start(Nanos delay, Nanos repeat = Nanos{0}) = 0;
  virtual void stop() noexcept = 0;
  [[nodiscard]] virtual bool active() const noexcept = 0;
};

struct TlsOptions {
  std::string ca_file;      // PEM bundle; empty = system default store
  std::string ca_dir;       // hashed CA directory
  std::string cert_file;    // client certificate (PEM), needs key_file
  std::string key_file;     // client private key (PEM), needs cert_file
  std::string server_name;  // SNI and host-name check; empty = the endpoint's host
  bool verify_peer = true;  // certificate and host-name verification (off only when asked)
};

struct Endpoint {
  enum class Kind : std::uint8_t { tcp, unix_socket };
  Kind kind = Kind::tcp;
  std::string host = "127.0.0.1";  // tcp: name or address (resolved by the loop)
  std::uint16_t port = 6379;
  std::string path;               // unix_socket: filesystem path
  std::optional<TlsOptions> tls;  // set: TLS over the stream (the loop owns the socket)
};

// Connect failures the seam itself defines, so that code above it can tell them apart whatever
// the Loop. Every other failure comes in the implementation's own error category.
enum class ConnectErrc {
  // The socket connected but the TLS handshake did not complete within the connect timeout —
  // typically a plaintext port, which waits for a command line and never answers the
  // ClientHello. Compares equal to std::errc::timed_out.
  tls_handshake_timeout = 1,
};

namespace detail {
class ConnectCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "lockwire.connect"; }
  std::string message(int v) const override {
    return v == static_cast<int>(ConnectErrc::tls_handshake_timeout)
               ? "TLS handshake did not complete"
               : "unknown connect error";
  }
  std::error_condition default_error_condition(int v) const noexcept override {
    if (v == static_cast<int>(ConnectErrc::tls_handshake_timeout)) {
      return std::make_error_condition(std::errc::timed_out);
    }
    return {v, *this};
  }
};
}  // namespace detail

[[nodiscard]] inline const std::error_category& connect_category() noexcept {
  static const detail::ConnectCategory c;
  return c;
}
[[nodiscard]] inline std::error_code make_error_code(ConnectErrc e) noexcept {
  return {static_cast<int>(e), connect_category()};
}

// Receives a stream's events. All callbacks run on the loop thread.
class StreamHandler {
 public:
  virtual ~StreamHandler() = default;
  // Exactly once per stream. On error the stream is already dead: no other callback follows.
  virtual void on_connected(std::error_code ec) = 0;
  // Bytes received, valid only during the call.
  virtual void on_data(std::string_view bytes) = 0;
  // The stream ended: peer closed (ec = std::errc::connection_reset or a loop error code for EOF),
  // a read/write error, a TLS failure, or close() with notify. No callback follows it.
  virtual void on_closed(std::error_code ec) = 0;
};

// A connected (or connecting) byte stream, owned by the caller. Destroying it closes it without
// any further callback.
class Stream {
 public:
  virtual ~Stream() = default;
  // Queues bytes for sending; the stream owns them from here. Writes queued during one loop turn
  // are sent with one gathered write where the implementation can.
  virtual void write(std::string bytes) = 0;
  // The same for bytes the caller keeps: queued as a copy. An implementation may append them to
  // the turn's pending buffer without allocating for each call (the default makes a string).
  virtual void write_copy(std::string_view bytes) { write(std::string(bytes)); }
  // Bytes handed to write() and not yet accepted by the kernel / the simulated network.
  [[nodiscard]] virtual std::size_t write_queue_bytes() const noexcept = 0;
  // Half-close: send FIN after the queued bytes; reading continues.
  virtual void shutdown() = 0;
  // Closes now; queued bytes may be lost. No callback follows.
  virtual void close() noexcept = 0;
};

class Loop {
 public:
  virtual ~Loop() = default;

  [[nodiscard]] virtual MonoTime now() const noexcept = 0;
  [[nodiscard]] virtual WallTime wall_now() const noexcept = 0;

  [[nodiscard]] virtual std::unique_ptr<Timer> make_timer(std::function<void()> on_fire) = 0;

  // Runs `fn` on the loop thread later (after the current callback returns), in posting order.
  // Only from the loop thread; see UvLoop::submit() for other threads.
  virtual void post(std::function<void()> fn) = 0;

  // Starts connecting (DNS, TCP/Unix, then TLS if endpoint.tls). handler.on_connected fires once,
  // with an error if nothing succeeded within `timeout` (ConnectErrc::tls_handshake_timeout when
  // the socket connected but the TLS handshake did not finish). `handler` must outlive the
  // stream.
  [[nodiscard]] virtual std::unique_ptr<Stream> connect(const Endpoint& endpoint,
                                                        StreamHandler& handler, Nanos timeout) = 0;

  // 64 random bits. Seeded and replayable in the simulator; from the OS on libuv.
  [[nodiscard]] virtual std::uint64_t random() noexcept = 0;
};

}  // namespace lockwire::loop

template <>
struct std::is_error_code_enum<lockwire::loop::ConnectErrc> : std::true_type {};
