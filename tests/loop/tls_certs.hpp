// Certificates for TLS tests, made by the openssl CLI for the test run (header-only): a CA, a
// server certificate for localhost and 127.0.0.1, a client certificate, and an unrelated CA.
// Used by tls_test.cpp and sentinel_test.cpp.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace lockwire::test {

inline bool write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  return bool(f);
}

inline bool sh(const std::string& cmd) {
  return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0;
}

// CA, server cert (SAN localhost + 127.0.0.1), client cert, and an unrelated CA.
struct Certs {
  std::string dir;
  bool ok = false;
  Certs() {
    char tmpl[] = "/tmp/lockwire-tls-XXXXXX";
    dir = ::mkdtemp(tmpl);
    const std::string d = dir + "/";
    const std::string ec = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes ";
    ok = sh("openssl req -x509" + ec + "-keyout " + d + "ca.key -out " + d +
            "ca.crt -days 2 -subj /CN=lockwire-test-ca") &&
         sh("openssl req -x509" + ec + "-keyout " + d + "other.key -out " + d +
            "other.crt -days 2 -subj /CN=unrelated-ca") &&
         sh("openssl req" + ec + "-keyout " + d + "server.key -out " + d +
            "server.csr -subj /CN=localhost") &&
         write_file(d + "san.ext", "subjectAltName=DNS:localhost,IP:127.0.0.1\n") &&
         sh("openssl x509 -req -in " + d + "server.csr -CA " + d + "ca.crt -CAkey " + d +
            "ca.key -CAcreateserial -out " + d + "server.crt -days 2 -extfile " + d + "san.ext") &&
         sh("openssl req" + ec + "-keyout " + d + "client.key -out " + d +
            "client.csr -subj /CN=client") &&
         sh("openssl x509 -req -in " + d + "client.csr -CA " + d + "ca.crt -CAkey " + d +
            "ca.key -CAcreateserial -out " + d + "client.crt -days 2");
  }
  ~Certs() { sh("rm -rf '" + dir + "'"); }
  std::string operator()(const char* f) const { return dir + "/" + f; }
};

}  // namespace lockwire::test
