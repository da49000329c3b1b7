// redis:// rediss:// unix:// URLs, following redis-specifications uri/redis.txt and rediss.txt:
//   redis[s]://[[user][:password]@][host][:port][/db-number][?key=value&...]
//   unix://[[user][:password]@]/absolute/path[?key=value&...]
// host defaults to localhost, port to 6379, db to 0. db-number has no leading zeros. Query keys:
// db, password, user/username, protocol (must be 3: lockwire needs RESP3), client_name/name,
// connect_timeout (ms), and for TLS ssl=true|false (redis:// with TLS, ServiceStack style),
// verify_peer, ca_file, ca_dir, cert_file, key_file, server_name/sni. Unknown keys, fragments,
// conflicting duplicates and malformed parts are errors: a typo must not silently change what
// the client connects to.
//
// Several hosts, comma-separated, are seeds (ConnectionOptions::seeds; endpoint = the first):
//   redis[s]://[[user][:password]@]host1[:port1],host2[:port2]...[/db-number][?...]
// every host must be given. And Lettuce's Sentinel form, whose hosts are the sentinels (default
// port 26379) and whose fragment is the master name (or query key sentinelMasterId, Lettuce's):
//   redis[s]-sentinel://[[user][:password]@]host1[:port1][,host2[:port2]...][/db][?...]#name
// rediss-sentinel (or ssl=true) is TLS to the sentinels and to the data nodes alike. The user
// info, password= and the db are for the data nodes, as in the single-host form; the sentinels
// get sentinel_username= (or sentinel_user=) and sentinel_password=, and no AUTH without them.
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

using Range = std::pair<std::size_t, std::size_t>;  // [first, last) of the URL

// Where a password may be: after the first ':' of the user info up to the last '@' (generous: a
// password with an unencoded '/', '?' or '#' moves every cut of a malformed URL into it), and
// the value of every password= / sentinel_password=. `precise`: the URL is known to be valid,
// so its user info ends at the authority's last '@' (an '@' in a query value is not one).
std::vector<Range> secret_ranges(std::string_view url, bool precise) {
  std::vector<Range> out;
  const std::size_t scheme_end = url.find("://");
  const std::size_t s = scheme_end == std::string_view::npos ? 0 : scheme_end + 3;
  std::size_t end = url.size();
  if (precise) end = std::min(end, url.find_first_of("/?#", s));
  const std::size_t at = url.substr(0, end).rfind('@');
  if (at != std::string_view::npos && at >= s) {
    const std::size_t colon = url.find(':', s);
    if (colon < at) out.emplace_back(colon + 1, at);
  }
  for (std::size_t p = url.find("password=", s); p != std::string_view::npos;
       p = url.find("password=", p + 1)) {
    const std::size_t b = p + 9;
    out.emplace_back(b, std::min(url.size(), url.find_first_of("&#", b)));
  }
  return out;
}

// Errors name the part of the URL that is wrong, but never a part that may be a password.
struct Fail {
  std::string* why;
  std::string_view url;
  std::vector<Range> secrets = secret_ranges(url, false);
  const std::string* password = nullptr;  // the one parsed so far, scrubbed from messages too

  // 'piece' (a view into the URL), or a placeholder when it overlaps a possible password.
  std::string q(std::string_view piece) const {
    const auto* const b = url.data();
    if (piece.data() >= b && piece.data() <= b + url.size()) {
      const auto first = static_cast<std::size_t>(piece.data() - b);
      const std::size_t last = first + piece.size();
      for (const auto& [sf, sl] : secrets) {
        if (first < sl && sf < last) return "(not shown: it may hold the password)";
      }
    }
    // Appends, not `"literal" + std::string` (g++ 12 -Wrestrict misfires on that at -O3).
    std::string out(1, '\'');
    out.append(piece).push_back('\'');
    return out;
  }
  std::error_code operator()(std::string msg) const {
    if (password != nullptr && password->size() >= 4) {
      for (std::size_t p = msg.find(*password); p != std::string::npos;
           p = msg.find(*password, p + 3)) {
        msg.replace(p, password->size(), "***");
      }
    }
    if (why != nullptr) *why = std::move(msg);
    return make_error_code(Errc::bad_url);
  }
};

// One "host[:port]" or "[v6][:port]" of the authority into ep.host/ep.port; "" when fine, else
// why not. An empty host is left empty (the caller decides what it means).
std::string parse_host_port(std::string_view authority, std::uint16_t default_port, Endpoint& ep,
                            const Fail& f) {
  std::string_view host = authority, port;
  if (!authority.empty() && authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return "unterminated '[' in an IPv6 host";
    host = authority.substr(1, close - 1);
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return "unexpected characters after ']'";
      port = after.substr(1);
      if (port.empty()) return "empty port after ':'";
    }
    if (host.empty()) return "empty IPv6 host";
    for (char c : host) {
      if (!(hexval(c) >= 0 || c == ':' || c == '.')) return "invalid character in an IPv6 host";
    }
    ep.host = std::string(host);
  } else {
    if (const std::size_t c = authority.rfind(':'); c != std::string_view::npos) {
      host = authority.substr(0, c);
      port = authority.substr(c + 1);
      if (port.empty()) return "empty port after ':'";
    }
    for (const char& c : host) {
      if (!reg_name_char(c)) {
        return std::string("invalid character ")
            .append(f.q(std::string_view(&c, 1)))
            .append(" in the host name");
      }
    }
    if (!pct_decode(host, ep.host)) return "bad percent-encoding in the host name";
  }
  ep.port = default_port;
  if (!port.empty()) {
    std::uint64_t p = 0;
    if (!parse_uint(port, 65535, p, false) || p == 0) {
      return std::string("port must be a number from 1 to 65535, got ").append(f.q(port));
    }
    ep.port = static_cast<std::uint16_t>(p);
  }
  return {};
}

}  // namespace

std::error_code parse_url(std::string_view url, ConnectionOptions& out, std::string* why) {
  Fail fail{why, url};
  if (url.size() > kMaxUrl) return fail("URL longer than 64 KiB");
  for (char c : url) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return fail("URL contains a space or control character (percent-encode it)");
    }
  }
  ConnectionOptions o = out;
  o.endpoint = Endpoint{};
  o.seeds.clear();
  o.sentinel.reset();
  o.username.clear();
  o.password.clear();
  o.db = 0;
  fail.password = &o.password;  // scrubbed from messages once parsed

  constexpr std::string_view kSchemes =
      "redis://, rediss://, unix://, redis-sentinel:// or rediss-sentinel://";
  const std::size_t colon = url.find("://");
  if (colon == std::string_view::npos) {
    return fail("missing scheme: expected " + std::string(kSchemes));
  }
  const std::string_view scheme = url.substr(0, colon);
  bool tls = false, is_unix = false, sentinel = false;
  if (lower_eq(scheme, "redis")) {
  } else if (lower_eq(scheme, "rediss")) {
    tls = true;
  } else if (lower_eq(scheme, "unix") || lower_eq(scheme, "redis+unix")) {
    is_unix = true;
  } else if (lower_eq(scheme, "redis-sentinel")) {
    sentinel = true;
  } else if (lower_eq(scheme, "rediss-sentinel")) {
    sentinel = tls = true;
  } else {
    return fail("unknown scheme '" + std::string(scheme) + "': expected " + std::string(kSchemes));
  }
  std::string_view rest = url.substr(colon + 3);

  // The fragment is the sentinel form's master name, and meaningless anywhere else.
  std::optional<std::string> fragment_master;
  std::string_view fragment_raw, query_master_raw;
  if (const std::size_t h = rest.find('#'); h != std::string_view::npos) {
    if (!sentinel) {
      return fail("URL fragments ('#...') have no meaning for Redis; percent-encode a '#' (%23)");
    }
    std::string name;
    if (!pct_decode(rest.substr(h + 1), name)) {
      return fail("bad percent-encoding in the master name");
    }
    fragment_master = std::move(name);
    fragment_raw = rest.substr(h + 1);
    rest = rest.substr(0, h);
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
    o.seeds.push_back(o.endpoint);
  } else {
    // host[:port] or [IPv6][:port], or a comma-separated list of them
    const std::uint16_t default_port = sentinel ? 26379 : 6379;
    const bool list = sentinel || authority.find(',') != std::string_view::npos;
    std::size_t n = 0;
    for (std::string_view left = authority;; ++n) {
      const std::size_t comma = left.find(',');
      const std::string_view one = left.substr(0, comma);
      Endpoint ep;
      if (std::string bad = parse_host_port(one, default_port, ep, fail); !bad.empty()) {
        if (list) bad += " (host " + std::to_string(n + 1) + " of the list)";
        return fail(std::move(bad));
      }
      if (ep.host.empty()) {
        if (sentinel && authority.empty()) {
          return fail("a sentinel URL needs at least one sentinel host: " + std::string(scheme) +
                      "://host[:port][,host[:port]...]#master-name");
        }
        if (list) return fail("empty host " + std::to_string(n + 1) + " in the host list");
        ep.host = "localhost";
      }
      o.seeds.push_back(std::move(ep));
      if (comma == std::string_view::npos) break;
      left = left.substr(comma + 1);
    }
    o.endpoint = o.seeds.front();
    // path = "" | "/" | "/" db-number
    if (path.size() > 1) {
      std::uint64_t db = 0;
      if (!parse_uint(path.substr(1), INT32_MAX, db, true)) {
        return fail("path must be /<database number> (no leading zeros), got " + fail.q(path));
      }
      path_db = static_cast<std::int64_t>(db);
    }
  }

  std::optional<bool> ssl, verify;
  TlsOptions t;
  bool any_tls_key = false;
  std::optional<std::int64_t> query_db;
  std::optional<std::string> query_master;
  std::string sentinel_user, sentinel_password;
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view kv = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (kv.empty()) continue;
    const std::size_t eq = kv.find('=');
    if (eq == std::string_view::npos) {
      return fail("query parameter " + fail.q(kv) + " has no '=value'");
    }
    const std::string_view key = kv.substr(0, eq);
    const std::string_view raw = kv.substr(eq + 1);
    std::string value;
    if (!pct_decode(raw, value)) {
      return fail("bad percent-encoding in query parameter " + fail.q(key));
    }
    if (key == "db") {
      std::uint64_t db = 0;
      if (!parse_uint(value, INT32_MAX, db, false)) {
        return fail("db must be a non-negative number, got " + fail.q(raw));
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
    } else if (key == "sentinel_username" || key == "sentinel_user") {
      if (!sentinel) return fail(fail.q(key) + " needs a redis-sentinel:// URL");
      sentinel_user = value;
    } else if (key == "sentinel_password") {
      if (!sentinel) return fail(fail.q(key) + " needs a redis-sentinel:// URL");
      sentinel_password = value;
    } else if (key == "sentinelMasterId") {
      if (!sentinel) return fail(fail.q(key) + " needs a redis-sentinel:// URL");
      if (query_master && *query_master != value) return fail("sentinelMasterId given twice");
      query_master = value;
      query_master_raw = raw;
    } else if (key == "protocol") {
      if (value != "3") {
        return fail("protocol=" + fail.q(raw) + " not supported: lockwire speaks RESP3 only");
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
      if (!parse_bool(value, b)) return fail(fail.q(key) + " must be true or false");
      ssl = b;
    } else if (key == "verify_peer" || key == "verify") {
      bool b = false;
      if (!parse_bool(value, b)) return fail(fail.q(key) + " must be true or false");
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
      return fail("unknown query parameter " + fail.q(key));
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
    for (Endpoint& ep : o.seeds) ep.tls = t;
    o.endpoint.tls = std::move(t);
  }
  if (sentinel) {
    if (fragment_master && query_master && *fragment_master != *query_master) {
      return fail("master name given both as #" + fail.q(fragment_raw) +
                  " and sentinelMasterId=" + fail.q(query_master_raw) + ", differently");
    }
    std::string name = fragment_master ? *fragment_master : query_master.value_or("");
    if (name.empty()) {
      return fail("a sentinel URL needs the master name: " + std::string(scheme) +
                  "://host[:port][,host[:port]...]#master-name");
    }
    o.sentinel =
        SentinelOptions{std::move(name), std::move(sentinel_user), std::move(sentinel_password)};
  }
  out = std::move(o);
  if (why != nullptr) why->clear();
  return {};
}

std::string redact_url(std::string_view url) {
  ConnectionOptions probe;
  const bool valid = !parse_url(url, probe);
  std::string out(url);
  // Right to left, so that earlier offsets stay valid.
  std::vector<Range> ranges = secret_ranges(url, valid);
  std::sort(ranges.begin(), ranges.end());
  for (auto it = ranges.rbegin(); it != ranges.rend(); ++it) {
    if (it->second > it->first) out.replace(it->first, it->second - it->first, "***");
  }
  return out;
}

}  // namespace lockwire::loop
