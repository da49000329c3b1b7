#include "lockwire/loop/uv_loop.hpp"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/random.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace lockwire::loop {

// ---------------------------------------------------------------------------------------------
// Error categories

namespace {

class UvCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "libuv"; }
  std::string message(int v) const override { return uv_strerror(v); }
  std::error_condition default_error_condition(int v) const noexcept override {
    // On Unix libuv codes are -errno, except its own EOF/EAI_* codes (below -3000).
    if (v < 0 && v > -3000) return std::error_condition(-v, std::generic_category());
    return std::error_condition(v, *this);
  }
};

class TlsCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "lockwire.tls"; }
  std::string message(int v) const override {
    switch (static_cast<TlsErrc>(v)) {
      case TlsErrc::ok:
        return "ok";
      case TlsErrc::init_failed:
        return "TLS: OpenSSL could not create a context";
      case TlsErrc::bad_ca:
        return "TLS: CA file/directory unreadable or not PEM";
      case TlsErrc::bad_cert:
        return "TLS: client certificate file unreadable or not PEM";
      case TlsErrc::bad_key:
        return "TLS: client key file unreadable, not PEM, or not matching the certificate";
      case TlsErrc::key_without_cert:
        return "TLS: a client certificate needs a key file and vice versa";
      case TlsErrc::bad_server_name:
        return "TLS: invalid server name for verification";
      case TlsErrc::handshake_failed:
        return "TLS: handshake failed";
      case TlsErrc::verify_failed:
        return "TLS: server certificate verification failed";
      case TlsErrc::io_failed:
        return "TLS: record layer error";
    }
    return "TLS: unknown error";
  }
};

class X509Category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "lockwire.x509"; }
  std::string message(int v) const override {
    return std::string("TLS certificate verification failed: ") + X509_verify_cert_error_string(v);
  }
  std::error_condition default_error_condition(int) const noexcept override {
    return std::error_condition(static_cast<int>(TlsErrc::verify_failed), tls_category());
  }
};

std::uint64_t ms_ceil(Nanos d) noexcept {
  if (d.count() <= 0) return 0;
  return static_cast<std::uint64_t>((d.count() + 999'999) / 1'000'000);
}

}  // namespace

const std::error_category& uv_category() noexcept {
  static const UvCategory c;
  return c;
}
std::error_code uv_error(int status) noexcept {
  return {status, uv_category()};
}
const std::error_category& tls_category() noexcept {
  static const TlsCategory c;
  return c;
}
const std::error_category& x509_category() noexcept {
  static const X509Category c;
  return c;
}
std::error_code make_error_code(TlsErrc e) noexcept {
  return {static_cast<int>(e), tls_category()};
}

// ---------------------------------------------------------------------------------------------
// Loop internals

namespace {
struct StreamCore;
}

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
  std::vector<StreamCore*> dirty;
  std::vector<StreamCore*> flushing;

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
  void remove_dirty(StreamCore* s) noexcept;
};

namespace {

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
  ~StreamCore() {
    if (addrs != nullptr) uv_freeaddrinfo(addrs);
    if (ssl != nullptr) SSL_free(ssl);  // frees both BIOs
    if (ssl_ctx != nullptr) SSL_CTX_free(ssl_ctx);
  }

  void maybe_free() {
    if (detached && refs == 0) delete this;
  }

  void schedule_flush() {
    if (dirty || dead) return;
    dirty = true;
    L->dirty.push_back(this);
    L->arm();
  }

  // --- teardown -------------------------------------------------------------------------------

  static void on_handle_closed(uv_handle_t* h) {
    auto* c = static_cast<StreamCore*>(h->data);
    c->handle_open = false;
    c->socket_up = false;
    --c->refs;
    if (c->retry_after_close && !c->dead) {
      c->retry_after_close = false;
      c->attempt_next();
    }
    c->maybe_free();
  }
  static void on_timer_closed(uv_handle_t* h) {
    auto* c = static_cast<StreamCore*>(h->data);
    c->timer_open = false;
    --c->refs;
    c->maybe_free();
  }

  void close_all() noexcept {
    if (gai_pending) uv_cancel(reinterpret_cast<uv_req_t*>(&gai));
    if (timer_open && !uv_is_closing(reinterpret_cast<uv_handle_t*>(&timer))) {
      uv_close(reinterpret_cast<uv_handle_t*>(&timer), &on_timer_closed);
    }
    if (handle_open && !uv_is_closing(&u.handle)) uv_close(&u.handle, &on_handle_closed);
    if (dirty) {
      L->remove_dirty(this);
      dirty = false;
    }
    app_q.clear();
    raw_q.clear();
    app_bytes = raw_bytes = 0;
  }

  // Ends the stream and tells the handler (once): on_connected(ec) before success, else
  // on_closed(ec).
  void fail(std::error_code ec) {
    if (dead) return;
    dead = true;
    StreamHandler* h = handler;
    handler = nullptr;
    close_all();
    if (h == nullptr) return;
    if (!reported) {
      reported = true;
      h->on_connected(ec);
    } else {
      h->on_closed(ec);
    }
  }

  void close_silently() noexcept {
    dead = true;
    handler = nullptr;
    close_all();
  }

  void detach() noexcept {
    detached = true;
    close_silently();
    maybe_free();
  }

  // --- connecting -----------------------------------------------------------------------------

  void start() {
    uv_timer_init(L->loop, &timer);
    timer.data = this;
    timer_open = true;
    ++refs;
    // Everything happens from the first timer callback so that no callback (not even an early
    // failure) runs inside Loop::connect().
    uv_timer_start(&timer, &on_timer, 0, 0);
  }

  static void on_timer(uv_timer_t* t) {
    auto* c = static_cast<StreamCore*>(t->data);
    if (c->dead) return;
    if (!c->kicked_off) {
      c->kicked_off = true;
      if (c->timeout.count() > 0) {  // 0 = no connect timeout
        uv_update_time(c->L->loop);
        uv_timer_start(t, &on_timer, std::max<std::uint64_t>(ms_ceil(c->timeout), 1), 0);
      }
      c->kickoff();
      return;
    }
    c->fail(uv_error(UV_ETIMEDOUT));
  }

  void kickoff() {
    if (ep.tls) {
      if (auto ec = tls_setup(); ec) return fail(ec);
    }
    if (ep.kind == Endpoint::Kind::unix_socket) {
      if (int r = uv_pipe_init(L->loop, &u.pipe, 0); r < 0) return fail(uv_error(r));
      u.handle.data = this;
      handle_open = true;
      ++refs;
      uv_pipe_connect(&creq, &u.pipe, ep.path.c_str(), &on_connect);
      return;
    }
    // Literal addresses skip the resolver (and its thread pool).
    auto* v4 = reinterpret_cast<sockaddr_in*>(&literal);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&literal);
    if (uv_ip4_addr(ep.host.c_str(), ep.port, v4) == 0 ||
        uv_ip6_addr(ep.host.c_str(), ep.port, v6) == 0) {
      literal_pending = true;
      return attempt_next();
    }
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_protocol = IPPROTO_TCP;
    gai.data = this;
    const std::string port = std::to_string(ep.port);
    int r = uv_getaddrinfo(L->loop, &gai, &on_resolved, ep.host.c_str(), port.c_str(), &hints);
    if (r < 0) return fail(uv_error(r));
    gai_pending = true;
    ++refs;
  }

  static void on_resolved(uv_getaddrinfo_t* req, int status, addrinfo* res) {
    auto* c = static_cast<StreamCore*>(req->data);
    c->gai_pending = false;
    --c->refs;
    if (c->dead) {
      if (res != nullptr) uv_freeaddrinfo(res);
      return c->maybe_free();
    }
    if (status < 0) return c->fail(uv_error(status));
    c->addrs = res;
    c->next_addr = res;
    c->attempt_next();
  }

  // Tries the next resolved address (closing the socket of a failed attempt first).
  void attempt_next() {
    if (handle_open) {
      retry_after_close = true;
      if (!uv_is_closing(&u.handle)) uv_close(&u.handle, &on_handle_closed);
      return;
    }
    const sockaddr* sa = nullptr;
    if (literal_pending) {
      literal_pending = false;
      sa = reinterpret_cast<const sockaddr*>(&literal);
    } else {
      while (next_addr != nullptr && next_addr->ai_family != AF_INET &&
             next_addr->ai_family != AF_INET6) {
        next_addr = next_addr->ai_next;
      }
      if (next_addr != nullptr) {
        sa = next_addr->ai_addr;
        next_addr = next_addr->ai_next;
      }
    }
    if (sa == nullptr) return fail(uv_error(last_err));
    if (int r = uv_tcp_init(L->loop, &u.tcp); r < 0) return fail(uv_error(r));
    u.handle.data = this;
    handle_open = true;
    ++refs;
    if (int r = uv_tcp_connect(&creq, &u.tcp, sa, &on_connect); r < 0) {
      last_err = r;
      attempt_next();
    }
  }

  static void on_connect(uv_connect_t* req, int status) {
    auto* c = static_cast<StreamCore*>(req->handle->data);
    if (status == UV_ECANCELED || c->dead) return;
    if (status < 0) {
      c->last_err = status;
      if (c->ep.kind == Endpoint::Kind::unix_socket) return c->fail(uv_error(status));
      return c->attempt_next();
    }
    c->socket_up = true;
    if (c->ep.kind == Endpoint::Kind::tcp) uv_tcp_nodelay(&c->u.tcp, 1);
    c->rbuf = std::make_unique<char[]>(kReadBuf);
    if (int r = uv_read_start(&c->u.stream, &on_alloc, &on_read); r < 0) {
      return c->fail(uv_error(r));
    }
    if (c->ssl != nullptr) return c->tls_handshake();
    c->become_ready();
  }

  void become_ready() {
    ready = true;
    uv_timer_stop(&timer);
    reported = true;
    if (!app_q.empty() || shutdown_requested) schedule_flush();
    if (handler != nullptr) handler->on_connected({});
  }

  // --- reading --------------------------------------------------------------------------------

  static void on_alloc(uv_handle_t* h, std::size_t, uv_buf_t* buf) {
    auto* c = static_cast<StreamCore*>(h->data);
    *buf = uv_buf_init(c->rbuf.get(), static_cast<unsigned>(kReadBuf));
  }

  static void on_read(uv_stream_t* s, ssize_t n, const uv_buf_t*) {
    auto* c = static_cast<StreamCore*>(s->data);
    if (c->dead) return;
    if (n > 0) {
      if (c->ssl != nullptr) return c->tls_on_raw(static_cast<std::size_t>(n));
      if (c->handler != nullptr) {
        c->handler->on_data(std::string_view(c->rbuf.get(), static_cast<std::size_t>(n)));
      }
      return;
    }
    if (n < 0) {
      if (c->ssl != nullptr && !c->ready)
        return c->fail(make_error_code(TlsErrc::handshake_failed));
      c->fail(uv_error(static_cast<int>(n)));
    }
  }

  // --- writing --------------------------------------------------------------------------------

  void flush() {
    if (dead || !socket_up) return;
    if (ready && app_bytes > 0) {
      if (ssl != nullptr) {
        tls_encrypt_app();
        if (dead) return;
      } else {
        for (auto& s : app_q) raw_q.push_back(std::move(s));
        raw_bytes += app_bytes;
        app_q.clear();
        app_bytes = 0;
      }
    }
    if (writing) return;  // the write callback flushes again
    if (raw_q.empty()) {
      if (shutdown_requested && !shutdown_sent && ready && app_q.empty()) {
        shutdown_sent = true;
        sreq.data = this;
        uv_shutdown(&sreq, &u.stream, [](uv_shutdown_t*, int) {});
      }
      return;
    }
    inflight.swap(raw_q);
    raw_q.clear();
    raw_bytes = 0;
    bufs.clear();
    bufs.reserve(inflight.size());
    for (auto& s : inflight) bufs.push_back(uv_buf_init(s.data(), static_cast<unsigned>(s.size())));
    // Try a synchronous writev first: when the kernel takes everything (the common case) there
    // is no write request, no deferred callback and no epoll_ctl to undo POLLOUT interest.
    std::size_t total = 0;
    for (auto& b : bufs) total += b.len;
    const int n = uv_try_write(&u.stream, bufs.data(), static_cast<unsigned>(bufs.size()));
    if (n < 0 && n != UV_EAGAIN && n != UV_ENOSYS) return fail(uv_error(n));
    std::size_t done = n > 0 ? static_cast<std::size_t>(n) : 0;
    if (done == total) {
      inflight.clear();
      if (shutdown_requested && !shutdown_sent) flush();
      return;
    }
    std::size_t skip = 0;
    while (done > 0) {
      if (done >= bufs[skip].len) {
        done -= bufs[skip].len;
        ++skip;
      } else {
        bufs[skip].base += done;
        bufs[skip].len -= static_cast<unsigned>(done);
        done = 0;
      }
    }
    wreq.data = this;
    writing = true;
    if (int r = uv_write(&wreq, &u.stream, bufs.data() + skip,
                         static_cast<unsigned>(bufs.size() - skip), &on_written);
        r < 0) {
      writing = false;
      fail(uv_error(r));
    }
  }

  static void on_written(uv_write_t* req, int status) {
    auto* c = static_cast<StreamCore*>(req->data);
    c->writing = false;
    c->inflight.clear();
    if (c->dead || status == UV_ECANCELED) return;
    if (status < 0) return c->fail(uv_error(status));
    if (!c->raw_q.empty() || c->app_bytes > 0 || (c->shutdown_requested && !c->shutdown_sent)) {
      c->flush();
    }
  }

  // --- TLS ------------------------------------------------------------------------------------

  std::error_code tls_setup() {
    const TlsOptions& o = *ep.tls;
    if (o.cert_file.empty() != o.key_file.empty()) return TlsErrc::key_without_cert;
    ssl_ctx = SSL_CTX_new(TLS_client_method());
    if (ssl_ctx == nullptr) return TlsErrc::init_failed;
    SSL_CTX_set_min_proto_version(ssl_ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(ssl_ctx, SSL_MODE_RELEASE_BUFFERS);
    std::error_code ec;
    if (o.verify_peer) {
      if (!o.ca_file.empty() || !o.ca_dir.empty()) {
        if (SSL_CTX_load_verify_locations(ssl_ctx, o.ca_file.empty() ? nullptr : o.ca_file.c_str(),
                                          o.ca_dir.empty() ? nullptr : o.ca_dir.c_str()) != 1) {
          ec = TlsErrc::bad_ca;
        }
      } else if (SSL_CTX_set_default_verify_paths(ssl_ctx) != 1) {
        ec = TlsErrc::bad_ca;
      }
      SSL_CTX_set_verify(ssl_ctx, SSL_VERIFY_PEER, nullptr);
    } else {
      SSL_CTX_set_verify(ssl_ctx, SSL_VERIFY_NONE, nullptr);
    }
    if (!ec && !o.cert_file.empty()) {
      if (SSL_CTX_use_certificate_chain_file(ssl_ctx, o.cert_file.c_str()) != 1) {
        ec = TlsErrc::bad_cert;
      } else if (SSL_CTX_use_PrivateKey_file(ssl_ctx, o.key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
                 SSL_CTX_check_private_key(ssl_ctx) != 1) {
        ec = TlsErrc::bad_key;
      }
    }
    if (!ec) {
      ssl = SSL_new(ssl_ctx);
      rbio = BIO_new(BIO_s_mem());
      wbio = BIO_new(BIO_s_mem());
      if (ssl == nullptr || rbio == nullptr || wbio == nullptr) {
        if (rbio != nullptr) BIO_free(rbio);
        if (wbio != nullptr) BIO_free(wbio);
        rbio = wbio = nullptr;
        ec = TlsErrc::init_failed;
      } else {
        SSL_set_bio(ssl, rbio, wbio);
        SSL_set_connect_state(ssl);
      }
    }
    if (!ec) {
      const std::string& name = o.server_name.empty()
                                    ? (ep.kind == Endpoint::Kind::tcp ? ep.host : o.server_name)
                                    : o.server_name;
      in6_addr tmp{};
      const bool is_ip = inet_pton(AF_INET, name.c_str(), &tmp) == 1 ||
                         inet_pton(AF_INET6, name.c_str(), &tmp) == 1;
      if (!name.empty() && !is_ip && SSL_set_tlsext_host_name(ssl, name.c_str()) != 1) {
        ec = TlsErrc::bad_server_name;
      }
      if (!ec && o.verify_peer && !name.empty()) {
        const int ok = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str())
                             : SSL_set1_host(ssl, name.c_str());
        if (ok != 1) ec = TlsErrc::bad_server_name;
      }
    }
    ERR_clear_error();
    return ec;
  }

  void tls_drain_out() {
    const std::size_t n = BIO_ctrl_pending(wbio);
    if (n == 0) return;
    std::string out(n, '\0');
    const int got = BIO_read(wbio, out.data(), static_cast<int>(n));
    if (got <= 0) return;
    out.resize(static_cast<std::size_t>(got));
    raw_bytes += out.size();
    raw_q.push_back(std::move(out));
  }

  void tls_handshake() {
    const int r = SSL_do_handshake(ssl);
    tls_drain_out();
    if (!raw_q.empty()) flush();
    if (dead) return;
    if (r == 1) {
      ERR_clear_error();
      become_ready();
      if (!dead) tls_read_all();
      return;
    }
    const int e = SSL_get_error(ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return;
    const long v = SSL_get_verify_result(ssl);
    ERR_clear_error();
    fail(v != X509_V_OK ? std::error_code(static_cast<int>(v), x509_category())
                        : make_error_code(TlsErrc::handshake_failed));
  }

  void tls_on_raw(std::size_t n) {
    if (BIO_write(rbio, rbuf.get(), static_cast<int>(n)) != static_cast<int>(n)) {
      return fail(make_error_code(TlsErrc::io_failed));
    }
    if (!ready) return tls_handshake();
    tls_read_all();
  }

  void tls_read_all() {
    for (;;) {
      const int r = SSL_read(ssl, rbuf.get(), static_cast<int>(kReadBuf));
      if (r > 0) {
        if (handler != nullptr) handler->on_data(std::string_view(rbuf.get(), std::size_t(r)));
        if (dead) return;
        continue;
      }
      const int e = SSL_get_error(ssl, r);
      tls_drain_out();
      if (!raw_q.empty()) schedule_flush();
      if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return;
      ERR_clear_error();
      return fail(e == SSL_ERROR_ZERO_RETURN ? uv_error(UV_EOF)
                                             : make_error_code(TlsErrc::io_failed));
    }
  }

  void tls_encrypt_app() {
    std::string joined;
    const std::string* one = &app_q.front();
    if (app_q.size() > 1) {
      joined.reserve(app_bytes);
      for (auto& s : app_q) joined += s;
      one = &joined;
    }
    const int r = SSL_write(ssl, one->data(), static_cast<int>(one->size()));
    app_q.clear();
    app_bytes = 0;
    if (r <= 0) {
      ERR_clear_error();
      return fail(make_error_code(TlsErrc::io_failed));
    }
    tls_drain_out();
  }
};

class UvStream final : public Stream {
 public:
  explicit UvStream(StreamCore* c) : c_(c) {}
  ~UvStream() override { c_->detach(); }
  void write(std::string bytes) override {
    if (c_->dead || bytes.empty()) return;
    c_->app_bytes += bytes.size();
    // Small writes (typical commands) are coalesced into one buffer: fewer iovecs and frees per
    // gathered write; large ones are queued as they are, without a copy.
    constexpr std::size_t kSmall = 1024, kCoalesceMax = 64 * 1024;
    if (bytes.size() <= kSmall && !c_->app_q.empty() && c_->app_q.back().size() < kCoalesceMax) {
      c_->app_q.back().append(bytes);
    } else {
      c_->app_q.push_back(std::move(bytes));
    }
    if (c_->ready) c_->schedule_flush();
  }
  std::size_t write_queue_bytes() const noexcept override {
    std::size_t n = c_->app_bytes + c_->raw_bytes;
    if (c_->handle_open) n += c_->u.stream.write_queue_size;
    return n;
  }
  void shutdown() override {
    c_->shutdown_requested = true;
    if (c_->ready) c_->schedule_flush();
  }
  void close() noexcept override { c_->close_silently(); }

 private:
  StreamCore* c_;
};

class UvTimer final : public Timer {
 public:
  UvTimer(uv_loop_t* loop, std::function<void()> fn) : core_(new Core) {
    core_->fn = std::move(fn);
    uv_timer_init(loop, &core_->h);
    core_->h.data = core_;
  }
  ~UvTimer() override {
    core_->alive = false;
    uv_timer_stop(&core_->h);
    // The callback may be running right now (a timer destroying itself): Core, which holds the
    // std::function, is freed only by the close callback, after it has returned.
    uv_close(reinterpret_cast<uv_handle_t*>(&core_->h),
             [](uv_handle_t* h) { delete static_cast<Core*>(h->data); });
  }
  void start(Nanos delay, Nanos repeat) override {
    // libuv counts whole milliseconds of a cached (possibly coarse) clock and fires once that
    // clock reaches the due millisecond. Aim at the first millisecond boundary at or after
    // hrtime-now + delay, so the timer never fires before `delay` has passed on now().
    uv_loop_t* l = core_->h.loop;
    uv_update_time(l);
    const std::int64_t d = std::max<std::int64_t>(delay.count(), 0);
    const std::uint64_t target_ms =
        (uv_hrtime() + static_cast<std::uint64_t>(d) + 999'999) / 1'000'000;
    const std::uint64_t base = uv_now(l);
    uv_timer_start(&core_->h, &on_fire, target_ms > base ? target_ms - base : 0, ms_ceil(repeat));
  }
  void stop() noexcept override { uv_timer_stop(&core_->h); }
  bool active() const noexcept override {
    return uv_is_active(reinterpret_cast<const uv_handle_t*>(&core_->h)) != 0;
  }

 private:
  struct Core {
    uv_timer_t h{};
    std::function<void()> fn;
    bool alive = true;
  };
  static void on_fire(uv_timer_t* t) {
    auto* c = static_cast<Core*>(t->data);
    if (c->alive) c->fn();
  }
  Core* core_;
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// UvLoop::Impl

UvLoop::Impl::Impl(uv_loop_t* l) {
  if (l == nullptr) {
    uv_loop_init(&own);
    loop = &own;
    owned = true;
  } else {
    loop = l;
  }
  origin = uv_hrtime();
  h = new Handles;
  h->impl = this;
  uv_async_init(loop, &h->async, &Impl::on_async);
  uv_check_init(loop, &h->check);
  uv_prepare_init(loop, &h->prepare);
  uv_idle_init(loop, &h->idle);
  h->async.data = h->check.data = h->prepare.data = h->idle.data = h;
  h->open = 4;
  uv_unref(reinterpret_cast<uv_handle_t*>(&h->async));
}

UvLoop::Impl::~Impl() {
  posted.clear();
  dirty.clear();
  {
    std::lock_guard<std::mutex> g(h->mu);
    h->impl = nullptr;
    h->submitted.clear();
  }
  auto closed = [](uv_handle_t* x) {
    auto* hs = static_cast<Handles*>(x->data);
    if (--hs->open == 0) delete hs;
  };
  uv_close(reinterpret_cast<uv_handle_t*>(&h->async), closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&h->check), closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&h->prepare), closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&h->idle), closed);
  if (owned) {
    // Finish closing (ours and any stream/timer core destroyed just before us).
    for (int i = 0; i < 16 && uv_loop_close(loop) == UV_EBUSY; ++i) uv_run(loop, UV_RUN_NOWAIT);
  }
}

void UvLoop::Impl::remove_dirty(StreamCore* s) noexcept {
  auto it = std::find(dirty.begin(), dirty.end(), s);
  if (it != dirty.end()) dirty.erase(it);
  auto jt = std::find(flushing.begin(), flushing.end(), s);
  if (jt != flushing.end()) *jt = nullptr;
}

void UvLoop::Impl::run_turn(bool before_poll) {
  // Posted work first (it may write), then every stream written to during this turn.
  running.swap(posted);
  for (std::size_t i = 0; i < running.size(); ++i) {
    auto fn = std::move(running[i]);
    fn();
  }
  running.clear();
  flushing.swap(dirty);
  for (std::size_t i = 0; i < flushing.size(); ++i) {
    StreamCore* s = flushing[i];
    if (s == nullptr) continue;
    s->dirty = false;
    s->flush();
  }
  flushing.clear();
  if (posted.empty() && dirty.empty()) {
    armed = false;
    uv_idle_stop(&h->idle);
    uv_prepare_stop(&h->prepare);
    uv_check_stop(&h->check);
  } else if (before_poll) {
    uv_idle_start(&h->idle, [](uv_idle_t*) {});  // more queued meanwhile: do not block in poll
  }
}

void UvLoop::Impl::on_async(uv_async_t* a) {
  auto* hs = static_cast<Handles*>(a->data);
  std::vector<std::function<void()>> batch;
  {
    std::lock_guard<std::mutex> g(hs->mu);
    batch.swap(hs->submitted);
  }
  for (auto& fn : batch) fn();
}

// ---------------------------------------------------------------------------------------------
// UvLoop

UvLoop::UvLoop() : impl_(std::make_unique<Impl>(nullptr)) {}
UvLoop::UvLoop(uv_loop_t* embedded) : impl_(std::make_unique<Impl>(embedded)) {}
UvLoop::~UvLoop() = default;

uv_loop_t* UvLoop::native() noexcept {
  return impl_->loop;
}
void UvLoop::run() {
  uv_run(impl_->loop, UV_RUN_DEFAULT);
}
bool UvLoop::run_once(bool block) {
  return uv_run(impl_->loop, block ? UV_RUN_ONCE : UV_RUN_NOWAIT) != 0;
}
void UvLoop::stop() noexcept {
  uv_stop(impl_->loop);
}
bool UvLoop::empty() const noexcept {
  return uv_loop_alive(impl_->loop) == 0;
}

void UvLoop::submit(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> g(impl_->h->mu);
    impl_->h->submitted.push_back(std::move(fn));
  }
  uv_async_send(&impl_->h->async);
}

void UvLoop::keep_alive(bool on) noexcept {
  auto* a = reinterpret_cast<uv_handle_t*>(&impl_->h->async);
  if (on) {
    uv_ref(a);
  } else {
    uv_unref(a);
  }
}

MonoTime UvLoop::now() const noexcept {
  return MonoTime{Nanos(static_cast<std::int64_t>(uv_hrtime() - impl_->origin))};
}

WallTime UvLoop::wall_now() const noexcept {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return WallTime{Nanos(std::int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec)};
}

std::unique_ptr<Timer> UvLoop::make_timer(std::function<void()> on_fire) {
  return std::make_unique<UvTimer>(impl_->loop, std::move(on_fire));
}

void UvLoop::post(std::function<void()> fn) {
  impl_->posted.push_back(std::move(fn));
  impl_->arm();
}

std::unique_ptr<Stream> UvLoop::connect(const Endpoint& endpoint, StreamHandler& handler,
                                        Nanos timeout) {
  auto* core = new StreamCore(impl_.get(), &handler, endpoint, timeout);
  core->start();
  return std::make_unique<UvStream>(core);
}

std::uint64_t UvLoop::random() noexcept {
  std::uint64_t v = 0;
  auto* p = reinterpret_cast<unsigned char*>(&v);
  std::size_t got = 0;
  while (got < sizeof v) {
    const ssize_t r = getrandom(p + got, sizeof v - got, 0);
    if (r > 0) {
      got += static_cast<std::size_t>(r);
    } else if (r < 0 && errno != EINTR) {
      // getrandom cannot fail on Linux >= 3.17 with these flags; fall back to the clock.
      return v ^ uv_hrtime() ^ (uv_hrtime() << 32);
    }
  }
  return v;
}

}  // namespace lockwire::loop
