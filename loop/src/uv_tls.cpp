// StreamCore's TLS layer: OpenSSL client sessions over memory BIOs, so the socket stays a
// plain libuv stream. Configuration (CA, client certificate, SNI and host-name / IP checks,
// TLS >= 1.2), the handshake, decrypting what arrives and encrypting the turn's writes.
#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <string>
#include <system_error>

#include "uv_internal.hpp"

namespace lockwire::loop::uv_detail {

std::error_code StreamCore::tls_setup() {
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
    const bool is_ip =
        inet_pton(AF_INET, name.c_str(), &tmp) == 1 || inet_pton(AF_INET6, name.c_str(), &tmp) == 1;
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

void StreamCore::tls_drain_out() {
  const std::size_t n = BIO_ctrl_pending(wbio);
  if (n == 0) return;
  std::string out(n, '\0');
  const int got = BIO_read(wbio, out.data(), static_cast<int>(n));
  if (got <= 0) return;
  out.resize(static_cast<std::size_t>(got));
  raw_bytes += out.size();
  raw_q.push_back(std::move(out));
}

void StreamCore::tls_handshake() {
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

void StreamCore::tls_on_raw(std::size_t n) {
  if (BIO_write(rbio, rbuf.get(), static_cast<int>(n)) != static_cast<int>(n)) {
    return fail(make_error_code(TlsErrc::io_failed));
  }
  if (!ready) return tls_handshake();
  tls_read_all();
}

void StreamCore::tls_read_all() {
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

void StreamCore::tls_encrypt_app() {
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

}  // namespace lockwire::loop::uv_detail
