// The error categories of lockwire_uv: libuv status codes, TLS configuration/handshake
// failures, and OpenSSL's X509_V_ERR_* certificate verdicts.
#include <openssl/x509.h>
#include <uv.h>

#include <string>
#include <system_error>

#include "lockwire/loop/uv_loop.hpp"

namespace lockwire::loop {

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

}  // namespace lockwire::loop
