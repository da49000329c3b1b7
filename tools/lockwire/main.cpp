// lockwire: the command-line lock (run, acquire, release, renew, force-release, inspect, watch).
// This file turns arguments and the environment into options; session.hpp does the rest.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "args.hpp"
#include "lockwire/lock/protocol.hpp"
#include "lockwire/loop/connection.hpp"
#include "output.hpp"
#include "session.hpp"

namespace lockwire::cli {
namespace {

constexpr const char* kVersion = "lockwire 0.1.0";
constexpr std::string_view kDefaultUrl = "redis://127.0.0.1:6379";

int usage_error(const std::string& msg) {
  print_err("%s", msg.c_str());
  std::fputs(short_usage().c_str(), stderr);
  return kUsage;
}

int main_impl(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  Options o;
  std::string err;
  switch (parse_args(args, o, err)) {
    case ParseStatus::help:
      std::fputs(usage_text().c_str(), stdout);
      return kOk;
    case ParseStatus::version:
      std::printf("%s\n", kVersion);
      return kOk;
    case ParseStatus::error:
      return usage_error(err);
    case ParseStatus::ok:
      break;
  }

  std::string url(kDefaultUrl);
  if (o.url) {
    url = *o.url;
  } else if (const char* env = std::getenv("LOCKWIRE_URL"); env != nullptr && *env != '\0') {
    url = env;
  }
  loop::ConnectionOptions conn;
  std::string why;
  if (auto ec = loop::parse_url(url, conn, &why)) {
    return usage_error("bad URL '" + url + "': " + (why.empty() ? ec.message() : why));
  }
  const bool want_tls = o.tls || o.tls_insecure || !o.tls_ca.empty() || !o.tls_cert.empty() ||
                        !o.tls_key.empty() || !o.tls_server_name.empty();
  if (want_tls) {
    if (!conn.endpoint.tls) conn.endpoint.tls = loop::TlsOptions{};
    auto& t = *conn.endpoint.tls;
    if (!o.tls_ca.empty()) t.ca_file = o.tls_ca;
    if (!o.tls_cert.empty()) t.cert_file = o.tls_cert;
    if (!o.tls_key.empty()) t.key_file = o.tls_key;
    if (!o.tls_server_name.empty()) t.server_name = o.tls_server_name;
    if (t.cert_file.empty() != t.key_file.empty()) {
      return usage_error("--tls-cert and --tls-key go together");
    }
    if (o.tls_insecure) {
      t.verify_peer = false;
      // Loud on purpose, even with --quiet: anyone on the path can impersonate the server.
      print_err(
          "WARNING: --tls-insecure: the server certificate is NOT verified; the connection can "
          "be intercepted");
    }
  }
  conn.connect_timeout = o.connect_timeout;
  if (conn.client_name.empty()) conn.client_name = "lockwire-cli";

  if (!o.owner) o.owner = default_owner();
  const lock::Limits limits;
  if (auto ec = lock::validate_prefix(o.prefix, limits, &why)) return usage_error(why);
  if (auto ec = lock::validate_name("resource", o.resource, limits.max_resource_bytes, &why)) {
    return usage_error(why);
  }
  if (auto ec = lock::validate_name("owner", *o.owner, limits.max_owner_bytes, &why)) {
    return usage_error(why);
  }
  if (o.ttl) {
    if (auto ec = lock::validate_ttl(*o.ttl, limits, &why)) return usage_error(why);
  }
  if (auto ec = lock::validate_wait(o.wait, limits, &why)) return usage_error(why);

  ::signal(SIGPIPE, SIG_IGN);  // a closed stdout or socket is an error code, not a death
  Session s(std::move(o), std::move(conn));
  return s.run();
}

}  // namespace
}  // namespace lockwire::cli

int main(int argc, char** argv) {
  try {
    return lockwire::cli::main_impl(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lockwire: fatal: %s\n", e.what());
    return lockwire::cli::kUnavailable;
  }
}
