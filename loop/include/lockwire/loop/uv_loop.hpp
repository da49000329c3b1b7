// The libuv implementation of the seam (seam.hpp): real clocks, timers, TCP/Unix/TLS streams.
//
// - Runs on its own uv_loop_t or embeds in a caller's (then the caller runs that loop; destroy
//   every Timer/Stream, then the UvLoop, then run the caller's loop once more so libuv can finish
//   closing our handles).
// - Single-threaded: every seam call and callback happens on the thread running the loop. The only
//   thread-safe entry point is submit().
// - post() work and gathered writes run in the loop's check phase (right after I/O callbacks), so
//   everything a reply handler writes goes out in one uv_write with many buffers.
// - Reads use one 64 KiB buffer per stream; libuv bounds reads per readiness event to 32, so one
//   busy socket cannot starve the others.
// - Writes: small writes are coalesced, then the turn's bytes go out with one synchronous writev
//   attempt (uv_try_write); only a remainder the kernel refused becomes a uv_write request.
// - Timers never fire before their delay has passed on now() (libuv counts whole milliseconds, so
//   they may fire up to ~1 ms late).
// - TLS (Endpoint::tls) is OpenSSL with memory BIOs; the socket stays a plain libuv stream.
//   Verification is on by default (chain + host name or IP; SNI for names), TLS >= 1.2. Config
//   errors come back through on_connected as TlsErrc; a rejected certificate as x509_category()
//   with OpenSSL's X509_V_ERR_* value (message() names the reason). The connect timeout covers
//   the handshake: a socket that connected but did not finish it in time (a plaintext port)
//   fails with ConnectErrc::tls_handshake_timeout (== std::errc::timed_out), any other timeout
//   with uv_error(UV_ETIMEDOUT).
// - Lifetime: destroy every Timer, Stream and Connection made from a UvLoop before the UvLoop.
//
// Implemented in loop/src/uv_*.cpp (target lockwire_uv; uv_internal.hpp lists what is where).
#pragma once

#include <uv.h>

#include <functional>
#include <memory>
#include <system_error>

#include "lockwire/loop/seam.hpp"

namespace lockwire::loop {

// libuv status codes (negative) as std::error_code; errno-based ones compare equal to std::errc.
[[nodiscard]] const std::error_category& uv_category() noexcept;
[[nodiscard]] std::error_code uv_error(int status) noexcept;

// TLS configuration and handshake failures. Certificate verification failures use
// x509_category() with OpenSSL's X509_V_ERR_* value, so message() names the exact reason.
enum class TlsErrc {
  ok = 0,
  init_failed = 1,       // OpenSSL could not create a context/session
  bad_ca = 2,            // ca_file / ca_dir unreadable or not PEM
  bad_cert = 3,          // cert_file unreadable or not a PEM certificate (chain)
  bad_key = 4,           // key_file unreadable, not PEM, or does not match the certificate
  key_without_cert = 5,  // one of cert_file/key_file set without the other
  bad_server_name = 6,   // host name / IP for verification could not be set
  handshake_failed = 7,  // protocol failure (version, cipher, peer sent garbage, peer closed)
  verify_failed = 8,     // peer certificate rejected (see x509_category for the detail)
  io_failed = 9,         // TLS record error after the handshake
};
[[nodiscard]] const std::error_category& tls_category() noexcept;
[[nodiscard]] const std::error_category& x509_category() noexcept;
[[nodiscard]] std::error_code make_error_code(TlsErrc e) noexcept;

class UvLoop final : public Loop {
 public:
  UvLoop();                              // owns a fresh uv_loop_t
  explicit UvLoop(uv_loop_t* embedded);  // runs on the caller's loop
  ~UvLoop() override;
  UvLoop(const UvLoop&) = delete;
  UvLoop& operator=(const UvLoop&) = delete;

  [[nodiscard]] uv_loop_t* native() noexcept;

  // Runs until nothing is left to do (no active timer, stream, posted work) or stop().
  void run();
  // One iteration; blocks for I/O when `block`. Returns true while work remains.
  bool run_once(bool block = true);
  void stop() noexcept;
  // True when no handle or request of ours (or anyone's on this uv_loop_t) is active.
  [[nodiscard]] bool empty() const noexcept;

  // Thread-safe: runs `fn` on the loop thread soon (submission order per thread). Does not keep
  // run() alive on its own; use keep_alive(true) for a loop that only waits for submissions.
  void submit(std::function<void()> fn);
  void keep_alive(bool on) noexcept;

  [[nodiscard]] MonoTime now() const noexcept override;
  [[nodiscard]] WallTime wall_now() const noexcept override;
  [[nodiscard]] std::unique_ptr<Timer> make_timer(std::function<void()> on_fire) override;
  void post(std::function<void()> fn) override;
  [[nodiscard]] std::unique_ptr<Stream> connect(const Endpoint& endpoint, StreamHandler& handler,
                                                Nanos timeout) override;
  [[nodiscard]] std::uint64_t random() noexcept override;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace lockwire::loop

template <>
struct std::is_error_code_enum<lockwire::loop::TlsErrc> : std::true_type {};
