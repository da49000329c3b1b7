// Streams on libuv: TCP (resolver, every address in turn) and Unix sockets, the connect timeout
// (which also covers the TLS handshake), reads into one 64 KiB buffer, the turn's writes
// gathered into one writev attempt, half-close and teardown. The TLS layer is uv_tls.cpp.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <system_error>
#include <utility>

#include "uv_internal.hpp"

namespace lockwire::loop {
namespace uv_detail {

StreamCore::~StreamCore() {
  if (addrs != nullptr) uv_freeaddrinfo(addrs);
  if (ssl != nullptr) SSL_free(ssl);  // frees both BIOs
  if (ssl_ctx != nullptr) SSL_CTX_free(ssl_ctx);
}

void StreamCore::schedule_flush() {
  if (dirty || dead) return;
  dirty = true;
  L->dirty.push_back(this);
  L->arm();
}

// --- teardown ----------------------------------------------------------------------------------

void StreamCore::on_handle_closed(uv_handle_t* h) {
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

void StreamCore::on_timer_closed(uv_handle_t* h) {
  auto* c = static_cast<StreamCore*>(h->data);
  c->timer_open = false;
  --c->refs;
  c->maybe_free();
}

void StreamCore::close_all() noexcept {
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

void StreamCore::fail(std::error_code ec) {
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

void StreamCore::close_silently() noexcept {
  dead = true;
  handler = nullptr;
  close_all();
}

void StreamCore::detach() noexcept {
  detached = true;
  close_silently();
  maybe_free();
}

// --- connecting --------------------------------------------------------------------------------

void StreamCore::start() {
  uv_timer_init(L->loop, &timer);
  timer.data = this;
  timer_open = true;
  ++refs;
  // Everything happens from the first timer callback so that no callback (not even an early
  // failure) runs inside Loop::connect().
  uv_timer_start(&timer, &on_timer, 0, 0);
}

void StreamCore::on_timer(uv_timer_t* t) {
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
  // Connected but still handshaking: say so (a plaintext port never answers a ClientHello).
  if (c->ssl != nullptr && c->socket_up) {
    return c->fail(make_error_code(ConnectErrc::tls_handshake_timeout));
  }
  c->fail(uv_error(UV_ETIMEDOUT));
}

void StreamCore::kickoff() {
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

void StreamCore::on_resolved(uv_getaddrinfo_t* req, int status, addrinfo* res) {
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
void StreamCore::attempt_next() {
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

void StreamCore::on_connect(uv_connect_t* req, int status) {
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

void StreamCore::become_ready() {
  ready = true;
  uv_timer_stop(&timer);
  reported = true;
  if (!app_q.empty() || shutdown_requested) schedule_flush();
  if (handler != nullptr) handler->on_connected({});
}

// --- reading -----------------------------------------------------------------------------------

void StreamCore::on_alloc(uv_handle_t* h, std::size_t, uv_buf_t* buf) {
  auto* c = static_cast<StreamCore*>(h->data);
  *buf = uv_buf_init(c->rbuf.get(), static_cast<unsigned>(kReadBuf));
}

void StreamCore::on_read(uv_stream_t* s, ssize_t n, const uv_buf_t*) {
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
    if (c->ssl != nullptr && !c->ready) return c->fail(make_error_code(TlsErrc::handshake_failed));
    c->fail(uv_error(static_cast<int>(n)));
  }
}

// --- writing -----------------------------------------------------------------------------------

void StreamCore::flush() {
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
    recycle_inflight();
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

void StreamCore::on_written(uv_write_t* req, int status) {
  auto* c = static_cast<StreamCore*>(req->data);
  c->writing = false;
  c->recycle_inflight();
  if (c->dead || status == UV_ECANCELED) return;
  if (status < 0) return c->fail(uv_error(status));
  if (!c->raw_q.empty() || c->app_bytes > 0 || (c->shutdown_requested && !c->shutdown_sent)) {
    c->flush();
  }
}

namespace {

class UvStream final : public Stream {
 public:
  explicit UvStream(StreamCore* c) : c_(c) {}
  ~UvStream() override { c_->detach(); }
  // Small writes (typical commands) are coalesced into one buffer: fewer iovecs and frees per
  // gathered write; large ones are queued as they are, without a copy.
  static constexpr std::size_t kSmall = 1024, kCoalesceMax = std::size_t{64} * 1024;
  void write(std::string bytes) override {
    if (c_->dead || bytes.empty()) return;
    c_->app_bytes += bytes.size();
    if (bytes.size() <= kSmall && !c_->app_q.empty() && c_->app_q.back().size() < kCoalesceMax) {
      c_->app_q.back().append(bytes);
      loop::detail::give_request_buffer(std::move(bytes));  // for the next RequestBuilder
    } else {
      c_->app_q.push_back(std::move(bytes));
    }
    if (c_->ready) c_->schedule_flush();
  }
  void write_copy(std::string_view bytes) override {
    if (c_->dead || bytes.empty()) return;
    c_->app_bytes += bytes.size();
    auto& q = c_->app_q;
    if (bytes.size() <= kSmall && !q.empty() && q.back().size() < kCoalesceMax) {
      q.back().append(bytes);
    } else if (q.empty() || bytes.size() <= kSmall) {
      std::string& buf = q.emplace_back(std::move(c_->spare));  // empty, perhaps with capacity
      c_->spare = std::string();
      buf.assign(bytes);
    } else {
      q.emplace_back(bytes);
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

}  // namespace
}  // namespace uv_detail

std::unique_ptr<Stream> UvLoop::connect(const Endpoint& endpoint, StreamHandler& handler,
                                        Nanos timeout) {
  auto* core = new uv_detail::StreamCore(impl_.get(), &handler, endpoint, timeout);
  core->start();
  return std::make_unique<uv_detail::UvStream>(core);
}

}  // namespace lockwire::loop
