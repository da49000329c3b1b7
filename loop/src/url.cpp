// redis:// rediss:// unix:// URLs, following redis-specifications uri/redis.txt and rediss.txt:
//   redis[s]://[[user][:password]@][host][:port][/db-number][?key=value&...]
//   unix://[[user][:password]@]/absolute/path[?key=value&...]
// host defaults to localhost, port to 6379, db to 0. db-number has no leading zeros. Query keys:
// db, password, user/username, protocol (must be 3: lockwire needs RESP3), client_name/name,
// connect_timeout (ms), and for TLS ssl=true|false (redis:// with TLS, ServiceStack style),
// verify_peer, ca_file, ca_dir, cert_file, key_file, server_name/sni. Unknown keys, fragments,
// conflicting duplicates and malformed parts are errors: a typo must not silently change what
// the client connects to.
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "lockwire/loop/connection.hpp"

namespace lockwire::loop {

namespace {

constexpr std::size_t kMaxUrl = 64 * 1024;

bool lower_eq(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char c = a[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
    if (c != b[i]) return false;
  }
  return true;
}

int hexval(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Percent-decodes; '+' is kept literally (this is not form encoding).
bool pct_decode(std::string_view in, std::string& out) {
  out.clear();
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '%') {
      if (i + 2 >= in.size()) return false;
      const int h = hexval(in[i + 1]);
      const int l = hexval(in[i + 2]);
      if (h < 0 || l < 0) return false;
      out.push_back(static_cast<char>(h * 16 + l));
      i += 2;
    } else {
      out.push_back(in[i]);
    }
  }
  return true;
}

bool parse_uint(std::string_view s, std::uint64_t max, std::uint64_t& v, bool no_leading_zero) {
  if (s.empty() || s.size() > 20) return false;
  if (no_leading_zero && s.size() > 1 && s[0] == '0') return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && v <= max;
}

bool parse_bool(std::string_view s, bool& v) {
  if (lower_eq(s, "true") || s == "1" || lower_eq(s, "yes")) {
    v = true;
    return true;
  }
  if (lower_eq(s, "false") || s == "0" || lower_eq(s, "no")) {
    v = false;
    return true;
  }
  return false;
}

bool reg_name_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~' || c == '%';
}

struct Fail {
  std::string* why;
  std::error_code operator()(std::string msg) const {
    if (why != nullptr) *why = std::move(msg);
    return make_error_code(Errc::bad_url);
  }
};

}  // namespace

std::error_code parse_url(std::string_view url, ConnectionOptions& out, std::string* why) {
  const Fail fail{why};
  if (url.size() > kMaxUrl) return fail("URL longer than 64 KiB");
  for (char c : url) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return fail("URL contains a space or control character (percent-encode it)");
    }
  }
  ConnectionOptions o = out;
  o.endpoint = Endpoint{};
  o.username.clear();
  o.password.clear();
  o.db = 0;

  const std::size_t colon = url.find("://");
  if (colon == std::string_view::npos) {
    return fail("missing scheme: expected redis://, rediss:// or unix://");
  }
  const std::string_view scheme = url.substr(0, colon);
  bool tls = false, is_unix = false;
  if (lower_eq(scheme, "redis")) {
  } else if (lower_eq(scheme, "rediss")) {
    tls = true;
  } else if (lower_eq(scheme, "unix") || lower_eq(scheme, "redis+unix")) {
    is_unix = true;
  } else {
    return fail("unknown scheme '" + std::string(scheme) +
                "': expected redis://, rediss:// or unix://");
  }
  std::string_view rest = url.substr(colon + 3);

  if (rest.find('#') != std::string_view::npos) {
    return fail("URL fragments ('#...') have no meaning for Redis; percent-encode a '#' (%23)");
  }
  std::string_view query;
  if (const std::size_t q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }

  // authority = [userinfo@]host[:port]; unix: [userinfo@] then the path.
  std::string_view authority, path;
  if (is_unix) {
    const std::size_t slash = rest.find('/');
    if (slash == std::string_view::npos) return fail("unix:// URL needs an absolute socket path");
    authority = rest.substr(0, slash);
    path = rest.substr(slash);
  } else {
    const std::size_t slash = rest.find('/');
    authority = rest.substr(0, slash);
    if (slash != std::string_view::npos) path = rest.substr(slash);
  }

  bool have_password = false;
  if (const std::size_t at = authority.rfind('@'); at != std::string_view::npos) {
    const std::string_view userinfo = authority.substr(0, at);
    authority = authority.substr(at + 1);
    const std::size_t c = userinfo.find(':');
    const std::string_view user = userinfo.substr(0, c);
    if (!pct_decode(user, o.username)) return fail("bad percent-encoding in the user name");
    if (c != std::string_view::npos) {
      if (!pct_decode(userinfo.substr(c + 1), o.password)) {
        return fail("bad percent-encoding in the password");
      }
      have_password = true;
    }
  }

  std::optional<std::int64_t> path_db;
  if (is_unix) {
    if (!authority.empty()) {
      return fail("unix:// URL has a host part; expected unix:///path or unix://user:pass@/path");
    }
    std::string p;
    if (!pct_decode(path, p)) return fail("bad percent-encoding in the socket path");
    if (p.size() < 2) return fail("unix:// URL needs a socket path");
    if (p.find('\0') != std::string::npos) return fail("socket path contains a NUL byte");
    o.endpoint.kind = Endpoint::Kind::unix_socket;
    o.endpoint.path = std::move(p);
    o.endpoint.host.clear();
    o.endpoint.port = 0;
  } else {
    // host: [IPv6] | reg-name / IPv4; then optional :port
    std::string_view host = authority, port;
    if (!authority.empty() && authority.front() == '[') {
      const std::size_t close = authority.find(']');
      if (close == std::string_view::npos) return fail("unterminated '[' in an IPv6 host");
      host = authority.substr(1, close - 1);
      const std::string_view after = authority.substr(close + 1);
      if (!after.empty()) {
        if (after.front() != ':') return fail("unexpected characters after ']'");
        port = after.substr(1);
        if (port.empty()) return fail("empty port after ':'");
      }
      if (host.empty()) return fail("empty IPv6 host");
      for (char c : host) {
        if (!(hexval(c) >= 0 || c == ':' || c == '.')) {
          return fail("invalid character in an IPv6 host");
        }
      }
      o.endpoint.host = std::string(host);
    } else {
      if (const std::size_t c = authority.rfind(':'); c != std::string_view::npos) {
        host = authority.substr(0, c);
        port = authority.substr(c + 1);
        if (port.empty()) return fail("empty port after ':'");
      }
      for (char c : host) {
        if (!reg_name_char(c)) {
          return fail(std::string("invalid character '") + c + "' in the host name");
        }
      }
      std::string h;
      if (!pct_decode(host, h)) return fail("bad percent-encoding in the host name");
      o.endpoint.host = h.empty() ? "localhost" : h;
    }
    if (!port.empty()) {
      std::uint64_t p = 0;
      if (!parse_uint(port, 65535, p, false) || p == 0) {
        return fail("port must be a number from 1 to 65535, got '" + std::string(port) + "'");
      }
      o.endpoint.port = static_cast<std::uint16_t>(p);
    }
    // path = "" | "/" | "/" db-number
    if (path.size() > 1) {
      std::uint64_t db = 0;
      if (!parse_uint(path.substr(1), INT32_MAX, db, true)) {
        return fail("path must be /<database number> (no leading zeros), got '" +
                    std::string(path) + "'");
      }
      path_db = static_cast<std::int64_t>(db);
    }
  }

  std::optional<bool> ssl, verify;
  TlsOptions t;
  bool any_tls_key = false;
  std::optional<std::int64_t> query_db;
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view kv = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (kv.empty()) continue;
    const std::size_t eq = kv.find('=');
    if (eq == std::string_view::npos) {
      return fail("query parameter '" + std::string(kv) + "' has no '=value'");
    }
    const std::string_view key = kv.substr(0, eq);
    std::string value;
    if (!pct_decode(kv.substr(eq + 1), value)) {
      return fail("bad percent-encoding in query parameter '" + std::string(key) + "'");
    }
    if (key == "db") {
      std::uint64_t db = 0;
      if (!parse_uint(value, INT32_MAX, db, false)) {
        return fail("db must be a non-negative number, got '" + value + "'");
      }
      if (query_db) return fail("db given twice");
      query_db = static_cast<std::int64_t>(db);
    } else if (key == "password") {
      if (have_password && value != o.password) {
        return fail("password given both in the user info and in the query, differently");
      }
      o.password = value;
      have_password = true;
    } else if (key == "user" || key == "username") {
      if (!o.username.empty() && value != o.username) {
        return fail("user name given both in the user info and in the query, differently");
      }
      o.username = value;
    } else if (key == "protocol") {
      if (value != "3") {
        return fail("protocol=" + value + " not supported: lockwire speaks RESP3 only");
      }
    } else if (key == "client_name" || key == "name") {
      o.client_name = value;
    } else if (key == "connect_timeout") {
      std::uint64_t ms = 0;
      if (!parse_uint(value, 86'400'000, ms, false) || ms == 0) {
        return fail("connect_timeout must be milliseconds from 1 to 86400000");
      }
      o.connect_timeout = std::chrono::milliseconds(ms);
    } else if (key == "ssl" || key == "tls") {
      bool b = false;
      if (!parse_bool(value, b)) return fail(std::string(key) + " must be true or false");
      ssl = b;
    } else if (key == "verify_peer" || key == "verify") {
      bool b = false;
      if (!parse_bool(value, b)) return fail(std::string(key) + " must be true or false");
      verify = b;
      any_tls_key = true;
    } else if (key == "ca_file" || key == "cacert") {
      t.ca_file = value;
      any_tls_key = true;
    } else if (key == "ca_dir") {
      t.ca_dir = value;
      any_tls_key = true;
    } else if (key == "cert_file" || key == "cert") {
      t.cert_file = value;
      any_tls_key = true;
    } else if (key == "key_file" || key == "key") {
      t.key_file = value;
      any_tls_key = true;
    } else if (key == "server_name" || key == "sni") {
      t.server_name = value;
      any_tls_key = true;
    } else {
      return fail("unknown query parameter '" + std::string(key) + "'");
    }
  }
  if (path_db && query_db && *path_db != *query_db) {
    return fail("database given both in the path and as db=, differently");
  }
  o.db = static_cast<int>(path_db ? *path_db : query_db.value_or(0));
  if (ssl) {
    if (tls && !*ssl) return fail("rediss:// with ssl=false is contradictory");
    tls = tls || *ssl;
  }
  if (any_tls_key && !tls) {
    return fail("TLS parameters given without TLS (use rediss:// or ssl=true)");
  }
  if (t.cert_file.empty() != t.key_file.empty()) {
    return fail("cert_file and key_file must be given together");
  }
  if (tls) {
    if (verify) t.verify_peer = *verify;
    o.endpoint.tls = std::move(t);
  }
  out = std::move(o);
  if (why != nullptr) why->clear();
  return {};
}

}  // namespace lockwire::loop
