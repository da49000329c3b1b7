// Private to lockwire_uv: the structs its files share.
//   uv_errors.cpp  - uv_category, tls_category, x509_category
//   uv_loop.cpp    - UvLoop and UvLoop::Impl: the loop core (posted work, the turn's gathered
//                    flushes, cross-thread submission, clocks, randomness)
//   uv_timer.cpp   - Timer on uv_timer_t
//   uv_stream.cpp  - Stream on uv_tcp_t / uv_pipe_t: connecting (resolver, every address, the
//                    connect timeout), reading, gathered writes, half-close, teardown
//   uv_tls.cpp     - StreamCore's TLS layer (OpenSSL over memory BIOs)
#pragma once

#include <openssl/ssl.h>
#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

#include "lockwire/loop/uv_loop.hpp"
#include "request_rules.hpp"

namespace lockwire::loop {

namespace uv_detail {

struct StreamCore;

// Whole milliseconds, rounded up (libuv timers count milliseconds).
inline std::uint64_t ms_ceil(Nanos d) noexcept {
  if (d.count() <= 0) return 0;
  return static_cast<std::uint64_t>((d.count() + 999'999) / 1'000'000);
}

}  // namespace uv_detail

struct UvLoop::Impl {
  // libuv closes handles asynchronously; when we run on a caller's loop the close callbacks can
  // run after the UvLoop is gone, so the handles live on the heap and free themselves.
  struct Handles {
    uv_async_t async;
    uv_check_t check;
    uv_prepare_t prepare;
    uv_idle_t idle;
    Impl* impl = nullptr;
    int open = 0;
    std::mutex mu;
    std::vector<std::function<void()>> submitted;  // guarded by mu
  };

  uv_loop_t own{};
  uv_loop_t* loop = nullptr;
  bool owned = false;
  std::uint64_t origin = 0;
  Handles* h = nullptr;
  bool armed = false;
  std::vector<std::function<void()>> posted;
  std::vector<std::function<void()>> running;
  std::vector<uv_detail::StreamCore*> dirty;
  std::vector<uv_detail::StreamCore*> flushing;

  explicit Impl(uv_loop_t* l);
  ~Impl();
  void arm() noexcept {
    if (armed) return;
    armed = true;
    // Work queued before the poll phase (timers, code outside callbacks) runs in prepare, right
    // before polling; work queued by I/O callbacks runs in check, right after. Neither forces an
    // extra zero-timeout poll.
    uv_prepare_start(&h->prepare,
                     [](uv_prepare_t* p) { static_cast<Handles*>(p->data)->impl->run_turn(true); });
    uv_check_start(&h->check,
                   [](uv_check_t* c) { static_cast<Handles*>(c->data)->impl->run_turn(false); });
  }
  void run_turn(bool before_poll);
  static void on_async(uv_async_t* a);
  void remove_dirty(uv_detail::StreamCore* s) noexcept;
};

namespace uv_detail {

// One connection's libuv state. Owned jointly by the UvStream (until it is destroyed: "detached")
// and by libuv callbacks still pending (refs); freed when both are gone.
struct StreamCore {
  UvLoop::Impl* L;
  StreamHandler* handler;
  Endpoint ep;
  Nanos timeout;

  union {
    uv_handle_t handle;
    uv_stream_t stream;
    uv_tcp_t tcp;
    uv_pipe_t pipe;
  } u{};
  bool handle_open = false;
  bool retry_after_close = false;
  uv_timer_t timer{};
  bool timer_open = false;
  bool kicked_off = false;
  uv_getaddrinfo_t gai{};
  bool gai_pending = false;
  addrinfo* addrs = nullptr;
  addrinfo* next_addr = nullptr;
  bool literal_pending = false;
  sockaddr_storage literal{};
  int last_err = UV_ECONNREFUSED;
  uv_connect_t creq{};
  uv_write_t wreq{};
  bool writing = false;
  uv_shutdown_t sreq{};
  bool shutdown_requested = false;
  bool shutdown_sent = false;

  std::vector<std::string> app_q;  // plaintext from the owner
  std::size_t app_bytes = 0;
  std::vector<std::string> raw_q;  // bytes ready for the socket
  std::size_t raw_bytes = 0;
  std::vector<std::string> inflight;
  // A written buffer kept for the next turn's first write_copy(): a steady pipeline reuses one
  // buffer instead of growing a fresh one every turn.
  std::string spare;
  static constexpr std::size_t kSpareMax = std::size_t{256} * 1024;
  void recycle_inflight() noexcept {
    if (!inflight.empty() && inflight.front().capacity() <= kSpareMax &&
        inflight.front().capacity() > spare.capacity()) {
      spare.swap(inflight.front());
      spare.clear();
    }
    for (std::string& s : inflight) loop::detail::give_request_buffer(std::move(s));
    inflight.clear();
  }
  std::vector<uv_buf_t> bufs;
  static constexpr std::size_t kReadBuf = 64 * 1024;
  std::unique_ptr<char[]> rbuf;

  bool socket_up = false;  // TCP/Unix connected
  bool ready = false;      // connected (+ TLS handshake done): app bytes may flow
  bool reported = false;   // on_connected delivered
  bool dead = false;
  bool detached = false;
  bool dirty = false;
  int refs = 0;

  SSL_CTX* ssl_ctx = nullptr;
  SSL* ssl = nullptr;
  BIO* rbio = nullptr;  // network -> OpenSSL
  BIO* wbio = nullptr;  // OpenSSL -> network

  StreamCore(UvLoop::Impl* l, StreamHandler* h, const Endpoint& e, Nanos t)
      : L(l), handler(h), ep(e), timeout(t) {}
  ~StreamCore();

  void maybe_free() {
    if (detached && refs == 0) delete this;
  }
  void schedule_flush();

  // --- uv_stream.cpp: teardown ------------------------------------------------------------------
  static void on_handle_closed(uv_handle_t* h);
  static void on_timer_closed(uv_handle_t* h);
  void close_all() noexcept;
  // Ends the stream and tells the handler (once): on_connected(ec) before success, else
  // on_closed(ec).
  void fail(std::error_code ec);
  void close_silently() noexcept;
  void detach() noexcept;

  // --- uv_stream.cpp: connecting ----------------------------------------------------------------
  void start();
  static void on_timer(uv_timer_t* t);
  void kickoff();
  static void on_resolved(uv_getaddrinfo_t* req, int status, addrinfo* res);
  void attempt_next();  // the next resolved address (closing a failed attempt's socket first)
  static void on_connect(uv_connect_t* req, int status);
  void become_ready();

  // --- uv_stream.cpp: reading and writing -------------------------------------------------------
  static void on_alloc(uv_handle_t* h, std::size_t, uv_buf_t* buf);
  static void on_read(uv_stream_t* s, ssize_t n, const uv_buf_t*);
  void flush();
  static void on_written(uv_write_t* req, int status);

  // --- uv_tls.cpp -------------------------------------------------------------------------------
  std::error_code tls_setup();
  void tls_drain_out();
  void tls_handshake();
  void tls_on_raw(std::size_t n);
  void tls_read_all();
  void tls_encrypt_app();
};

}  // namespace uv_detail
}  // namespace lockwire::loop
