// lockwire: the command-line lock (run, acquire, release, renew, force-release, inspect, watch).
// This file turns arguments and the environment into options; session.hpp does the rest.
#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

// Under --json a failure is also one JSON object on stdout (docs/cli.md, *Output*).
bool g_json = false;
std::string g_resource;

int usage_error(const std::string& msg) {
  print_err("%s", msg.c_str());
  std::fputs(short_usage().c_str(), stderr);
  if (g_json) print_json_failure(kUsage, g_resource, msg);
  return kUsage;
}

// The password for the data nodes, in this order (docs/cli.md, *Passwords*): --password-file,
// the URL's own (user info or password=), $LOCKWIRE_PASSWORD, $REDISCLI_AUTH. What is typed on
// this command line beats the environment, and lockwire's own variable beats redis-cli's, as
// redis-cli lets a URL's password beat REDISCLI_AUTH. "" when fine, else why not (no secret).
std::string resolve_password(const Options& o, loop::ConnectionOptions& conn) {
  if (o.password_file) {
    const std::string& path = *o.password_file;
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) return "--password-file " + path + ": " + std::strerror(errno);
    std::string pw;
    char buf[4096];
    std::size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0 && pw.size() <= 64 * 1024) pw.append(buf, n);
    const bool bad = std::ferror(f) != 0;
    std::fclose(f);
    if (bad) return "--password-file " + path + ": cannot be read";
    if (pw.size() > 64 * 1024) return "--password-file " + path + ": longer than 64 KiB";
    // One trailing line end, as `echo pw > file` writes it, is not part of the password.
    if (pw.ends_with('\n')) pw.pop_back();
    if (pw.ends_with('\r')) pw.pop_back();
    if (pw.empty()) return "--password-file " + path + " is empty";
    conn.password = std::move(pw);
    return {};
  }
  if (!conn.password.empty()) return {};
  for (const char* var : {"LOCKWIRE_PASSWORD", "REDISCLI_AUTH"}) {
    if (const char* env = std::getenv(var); env != nullptr && *env != '\0') {
      conn.password = env;
      return {};
    }
  }
  return {};
}

int main_impl(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // --json is known before parsing succeeds, so that a usage error is JSON too. run takes no
  // --json (its COMMAND's words are not ours).
  for (const std::string& a : args) {
    if (a == "--" || a == "run") break;
    if (a == "--json") g_json = true;
  }
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
  g_json = o.json;
  g_resource = o.resource;

  std::string url(kDefaultUrl);
  std::string from = "--url";
  if (o.url) {
    url = *o.url;
  } else if (const char* env = std::getenv("LOCKWIRE_URL"); env != nullptr && *env != '\0') {
    url = env;
    from = "$LOCKWIRE_URL";
  }
  loop::ConnectionOptions conn;
  std::string why;
  if (auto ec = loop::parse_url(url, conn, &why)) {
    return usage_error("bad URL in " + from + " '" + loop::redact_url(url) +
                       "': " + (why.empty() ? ec.message() : why));
  }
  if (std::string bad = resolve_password(o, conn); !bad.empty()) return usage_error(bad);
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
    if (lockwire::cli::g_json) {
      lockwire::cli::print_json_failure(lockwire::cli::kUnavailable, lockwire::cli::g_resource,
                                        std::string("fatal: ") + e.what());
    }
    return lockwire::cli::kUnavailable;
  }
}
