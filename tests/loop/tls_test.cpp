// TLS (OpenSSL with memory BIOs inside the libuv stream) against redis-server --tls-port, with
// certificates made by the openssl CLI for this test run.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/x509_vfy.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "lockwire/loop/connection.hpp"
#include "lockwire/loop/uv_loop.hpp"
#include "lockwire/resp/reply.hpp"
#include "loop_check.hpp"
#include "redis_server.hpp"
#include "tls_certs.hpp"

namespace lockwire::loop {
namespace {

using namespace std::chrono_literals;
using test::Certs;

class Tls : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { certs_ = new Certs; }
  static void TearDownTestSuite() {
    delete certs_;
    certs_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(certs_->ok) << "openssl CLI failed"; }

  static std::unique_ptr<test::RedisServer> server(bool client_auth, std::uint16_t& tls_port) {
    const Certs& c = *certs_;
    for (int attempt = 0; attempt < 5; ++attempt) {
      tls_port = test::free_loopback_port();
      try {
        return std::make_unique<test::RedisServer>(std::vector<std::string>{
            "--tls-port", std::to_string(tls_port), "--tls-cert-file", c("server.crt"),
            "--tls-key-file", c("server.key"), "--tls-ca-cert-file", c("ca.crt"),
            "--tls-auth-clients", client_auth ? "yes" : "no"});
      } catch (const std::exception&) {
      }
    }
    return nullptr;
  }

  static ConnectionOptions options(std::uint16_t port, TlsOptions t) {
    ConnectionOptions o;
    o.endpoint.port = port;
    o.endpoint.tls = std::move(t);
    o.auto_reconnect = false;
    o.connect_timeout = 3s;
    return o;
  }

  // Connects; returns the error that ended the attempt (empty: ready, PING answered).
  static std::error_code try_connection(ConnectionOptions o, std::string* detail = nullptr) {
    UvLoop loop;
    test::EmptyLoopAtExit at_exit(loop);
    std::error_code result;
    bool done = false;
    {
      Connection c(loop, std::move(o));
      c.add_state_handler([&](ConnectionState s, std::error_code ec) {
        if (s == ConnectionState::disconnected && !done) {
          result = ec;
          done = true;
        }
      });
      c.command({"PING"}, [&](std::error_code ec, const Replies& r) {
        if (!ec && resp::equals(r[0][0], "PONG")) {
          done = true;
        } else if (!done) {
          result = ec;
          done = true;
        }
      });
      c.start();
      auto tick = loop.make_timer([] {});
      tick->start(2ms, 2ms);
      while (!done) loop.run_once(true);
      if (detail != nullptr) *detail = c.last_error();
    }
    return result;
  }

  static Certs* certs_;
};
Certs* Tls::certs_ = nullptr;

TEST_F(Tls, VerifiedConnectionCarriesPipelinesAndLargeValues) {
  std::uint16_t port = 0;
  auto srv = server(false, port);
  ASSERT_TRUE(srv);
  TlsOptions t;
  t.ca_file = (*certs_)("ca.crt");
  UvLoop loop;
  test::EmptyLoopAtExit at_exit(loop);
  {
    Connection c(loop, options(port, t));
    c.start();
    const std::string big(2 * 1024 * 1024 + 3, 'v');
    int done = 0, bad = 0;
    std::string got;
    c.command({"SET", "big", big}, [&](std::error_code ec, const Replies&) { bad += ec ? 1 : 0; });
    for (int i = 0; i < 1000; ++i) {
      c.command({"INCR", "n"}, [&, i](std::error_code ec, const Replies& r) {
        if (ec || resp::to_int64(r[0][0]) != i + 1) ++bad;
        ++done;
      });
    }
    c.command({"GET", "big"}, [&](std::error_code ec, const Replies& r) {
      got = ec ? "error: " + ec.message() : std::string(r[0][0].value);
    });
    auto tick = loop.make_timer([] {});
    tick->start(2ms, 2ms);
    const MonoTime end = loop.now() + 10s;
    while ((done < 1000 || got.empty()) && loop.now() < end) loop.run_once(true);
    EXPECT_EQ(done, 1000) << c.last_error();
    EXPECT_EQ(bad, 0) << c.last_error();
    EXPECT_EQ(got, big);
  }
}

TEST_F(Tls, HostNameAndSniAreChecked) {
  std::uint16_t port = 0;
  auto srv = server(false, port);
  ASSERT_TRUE(srv);
  TlsOptions t;
  t.ca_file = (*certs_)("ca.crt");
  auto o = options(port, t);
  o.endpoint.host = "localhost";  // DNS SAN
  EXPECT_FALSE(try_connection(o));
  t.server_name = "wrong.example";
  std::string detail;
  const auto ec = try_connection(options(port, t), &detail);
  EXPECT_EQ(ec, std::error_code(X509_V_ERR_HOSTNAME_MISMATCH, x509_category()));
  EXPECT_NE(detail.find("ostname mismatch"), std::string::npos) << detail;
}

TEST_F(Tls, WrongCaFailsVerificationUnlessVerificationIsOff) {
  std::uint16_t port = 0;
  auto srv = server(false, port);
  ASSERT_TRUE(srv);
  TlsOptions t;
  t.ca_file = (*certs_)("other.crt");
  std::string detail;
  const auto ec = try_connection(options(port, t), &detail);
  // 19 or 20, depending on whether the server sends its CA along.
  EXPECT_EQ(ec.category(), x509_category()) << ec.message();
  EXPECT_NE(detail.find("certificate verification failed"), std::string::npos) << detail;
  t.verify_peer = false;
  EXPECT_FALSE(try_connection(options(port, t)));
}

TEST_F(Tls, ClientCertificates) {
  std::uint16_t port = 0;
  auto srv = server(true, port);
  ASSERT_TRUE(srv);
  TlsOptions t;
  t.ca_file = (*certs_)("ca.crt");
  // Without a certificate the server rejects us (after the handshake in TLS 1.3).
  EXPECT_TRUE(try_connection(options(port, t)));
  t.cert_file = (*certs_)("client.crt");
  t.key_file = (*certs_)("client.key");
  EXPECT_FALSE(try_connection(options(port, t)));
}

// rediss:// to a plaintext port: redis-server waits for a command line and never answers the
// ClientHello, so the connect timeout ends the handshake — and the error says so.
TEST_F(Tls, PlaintextPortIsReportedAsAnUnfinishedHandshake) {
  test::RedisServer plain;
  ConnectionOptions o;
  std::string why;
  ASSERT_FALSE(parse_url(
      "rediss://127.0.0.1:" + std::to_string(plain.port()) + "?connect_timeout=300", o, &why))
      << why;
  o.auto_reconnect = false;
  std::string detail;
  const auto ec = try_connection(o, &detail);
  EXPECT_EQ(ec, ConnectErrc::tls_handshake_timeout) << ec.message();
  EXPECT_EQ(ec, std::errc::timed_out);  // still a timeout for code that only checks that
  const std::string where = "127.0.0.1:" + std::to_string(plain.port());
  EXPECT_EQ(detail, "TLS handshake did not complete: " + where +
                        " accepted the connection but did not finish the handshake within 300ms "
                        "— is the port TLS?");
  EXPECT_NE(detail.find(ec.message()), std::string::npos);  // the code's text, with context
}

TEST_F(Tls, MisconfigurationIsAClearErrorBeforeAnyNetworkTraffic) {
  const std::uint16_t nobody = test::free_loopback_port();  // never contacted
  TlsOptions t;
  t.key_file = (*certs_)("client.key");
  EXPECT_EQ(try_connection(options(nobody, t)), TlsErrc::key_without_cert);
  t = TlsOptions{};
  t.ca_file = "/nonexistent/ca.pem";
  EXPECT_EQ(try_connection(options(nobody, t)), TlsErrc::bad_ca);
  t = TlsOptions{};
  t.cert_file = (*certs_)("client.crt");
  t.key_file = (*certs_)("server.key");  // does not match
  EXPECT_EQ(try_connection(options(nobody, t)), TlsErrc::bad_key);
  t.cert_file = (*certs_)("san.ext");  // not PEM
  EXPECT_EQ(try_connection(options(nobody, t)), TlsErrc::bad_cert);
  EXPECT_NE(make_error_code(TlsErrc::bad_key).message().find("key"), std::string::npos);
}

}  // namespace
}  // namespace lockwire::loop
