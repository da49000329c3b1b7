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

// What the URL says, gathered stage by stage (scheme, fragment and query, user info, hosts or
// socket path), before the query is read and the whole is checked for contradictions.
struct UrlParts {
  std::string_view scheme;
  bool tls = false, is_unix = false, sentinel = false;
  std::string_view rest;  // after "://", without the fragment and the query
  std::string_view query;
  std::optional<std::string> fragment_master;  // the sentinel form's #name, decoded
  std::string_view fragment_raw;
  std::string_view authority, path;
  bool have_password = false;
  std::optional<std::int64_t> path_db;
};

// The query's keys, read before they are checked against the rest of the URL.
struct QueryParts {
  std::optional<bool> ssl, verify;
  TlsOptions tls;
  bool any_tls_key = false;
  std::optional<std::int64_t> db;
  std::optional<std::string> master;  // sentinelMasterId
  std::string_view master_raw;
  std::string sentinel_user, sentinel_password;
};

constexpr std::string_view kSchemes =
    "redis://, rediss://, unix://, redis-sentinel:// or rediss-sentinel://";

std::error_code read_scheme(std::string_view url, UrlParts& u, const Fail& fail) {
  const std::size_t colon = url.find("://");
  if (colon == std::string_view::npos) {
    return fail("missing scheme: expected " + std::string(kSchemes));
  }
  u.scheme = url.substr(0, colon);
  if (lower_eq(u.scheme, "redis")) {
  } else if (lower_eq(u.scheme, "rediss")) {
    u.tls = true;
  } else if (lower_eq(u.scheme, "unix") || lower_eq(u.scheme, "redis+unix")) {
    u.is_unix = true;
  } else if (lower_eq(u.scheme, "redis-sentinel")) {
    u.sentinel = true;
  } else if (lower_eq(u.scheme, "rediss-sentinel")) {
    u.sentinel = u.tls = true;
  } else {
    return fail("unknown scheme '" + std::string(u.scheme) + "': expected " +
                std::string(kSchemes));
  }
  u.rest = url.substr(colon + 3);
  return {};
}

// The fragment is the sentinel form's master name, and meaningless anywhere else.
std::error_code split_fragment_and_query(UrlParts& u, const Fail& fail) {
  if (const std::size_t h = u.rest.find('#'); h != std::string_view::npos) {
    if (!u.sentinel) {
      return fail("URL fragments ('#...') have no meaning for Redis; percent-encode a '#' (%23)");
    }
    std::string name;
    if (!pct_decode(u.rest.substr(h + 1), name)) {
      return fail("bad percent-encoding in the master name");
    }
    u.fragment_master = std::move(name);
    u.fragment_raw = u.rest.substr(h + 1);
    u.rest = u.rest.substr(0, h);
  }
  if (const std::size_t q = u.rest.find('?'); q != std::string_view::npos) {
    u.query = u.rest.substr(q + 1);
    u.rest = u.rest.substr(0, q);
  }
  return {};
}

// authority = [userinfo@]host[:port]; unix: [userinfo@] then the path. The user info goes to
// o.username / o.password.
std::error_code read_user_info(UrlParts& u, ConnectionOptions& o, const Fail& fail) {
  const std::size_t slash = u.rest.find('/');
  if (u.is_unix && slash == std::string_view::npos) {
    return fail("unix:// URL needs an absolute socket path");
  }
  u.authority = u.rest.substr(0, slash);
  if (slash != std::string_view::npos) u.path = u.rest.substr(slash);
  if (const std::size_t at = u.authority.rfind('@'); at != std::string_view::npos) {
    const std::string_view userinfo = u.authority.substr(0, at);
    u.authority = u.authority.substr(at + 1);
    const std::size_t c = userinfo.find(':');
    if (!pct_decode(userinfo.substr(0, c), o.username)) {
      return fail("bad percent-encoding in the user name");
    }
    if (c != std::string_view::npos) {
      if (!pct_decode(userinfo.substr(c + 1), o.password)) {
        return fail("bad percent-encoding in the password");
      }
      u.have_password = true;
    }
  }
  return {};
}

std::error_code read_socket_path(const UrlParts& u, ConnectionOptions& o, const Fail& fail) {
  if (!u.authority.empty()) {
    return fail("unix:// URL has a host part; expected unix:///path or unix://user:pass@/path");
  }
  std::string p;
  if (!pct_decode(u.path, p)) return fail("bad percent-encoding in the socket path");
  if (p.size() < 2) return fail("unix:// URL needs a socket path");
  if (p.find('\0') != std::string::npos) return fail("socket path contains a NUL byte");
  o.endpoint.kind = Endpoint::Kind::unix_socket;
  o.endpoint.path = std::move(p);
  o.endpoint.host.clear();
  o.endpoint.port = 0;
  o.seeds.push_back(o.endpoint);
  return {};
}

// host[:port] or [IPv6][:port], or a comma-separated list of them; then "" | "/" | "/" db.
std::error_code read_hosts_and_db(UrlParts& u, ConnectionOptions& o, const Fail& fail) {
  const std::uint16_t default_port = u.sentinel ? 26379 : 6379;
  const bool list = u.sentinel || u.authority.find(',') != std::string_view::npos;
  std::size_t n = 0;
  for (std::string_view left = u.authority;; ++n) {
    const std::size_t comma = left.find(',');
    const std::string_view one = left.substr(0, comma);
    Endpoint ep;
    if (std::string bad = parse_host_port(one, default_port, ep, fail); !bad.empty()) {
      if (list) bad += " (host " + std::to_string(n + 1) + " of the list)";
      return fail(std::move(bad));
    }
    if (ep.host.empty()) {
      if (u.sentinel && u.authority.empty()) {
        return fail("a sentinel URL needs at least one sentinel host: " + std::string(u.scheme) +
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
  if (u.path.size() > 1) {
    std::uint64_t db = 0;
    if (!parse_uint(u.path.substr(1), INT32_MAX, db, true)) {
      return fail("path must be /<database number> (no leading zeros), got " + fail.q(u.path));
    }
    u.path_db = static_cast<std::int64_t>(db);
  }
  return {};
}

// One key=value of the query (value decoded, raw as written).
std::error_code read_query_param(std::string_view key, std::string_view raw, std::string value,
                                 UrlParts& u, QueryParts& q, ConnectionOptions& o,
                                 const Fail& fail) {
  const auto tls_key = [&q](std::string& into, std::string v) {
    into = std::move(v);
    q.any_tls_key = true;
  };
  const auto sentinel_only = [&]() -> std::error_code {
    return u.sentinel ? std::error_code{} : fail(fail.q(key) + " needs a redis-sentinel:// URL");
  };
  if (key == "db") {
    std::uint64_t db = 0;
    if (!parse_uint(value, INT32_MAX, db, false)) {
      return fail("db must be a non-negative number, got " + fail.q(raw));
    }
    if (q.db) return fail("db given twice");
    q.db = static_cast<std::int64_t>(db);
  } else if (key == "password") {
    if (u.have_password && value != o.password) {
      return fail("password given both in the user info and in the query, differently");
    }
    o.password = std::move(value);
    u.have_password = true;
  } else if (key == "user" || key == "username") {
    if (!o.username.empty() && value != o.username) {
      return fail("user name given both in the user info and in the query, differently");
    }
    o.username = std::move(value);
  } else if (key == "sentinel_username" || key == "sentinel_user") {
    if (auto ec = sentinel_only()) return ec;
    q.sentinel_user = std::move(value);
  } else if (key == "sentinel_password") {
    if (auto ec = sentinel_only()) return ec;
    q.sentinel_password = std::move(value);
  } else if (key == "sentinelMasterId") {
    if (auto ec = sentinel_only()) return ec;
    if (q.master && *q.master != value) return fail("sentinelMasterId given twice");
    q.master = std::move(value);
    q.master_raw = raw;
  } else if (key == "protocol") {
    if (value != "3") {
      return fail("protocol=" + fail.q(raw) + " not supported: lockwire speaks RESP3 only");
    }
  } else if (key == "client_name" || key == "name") {
    o.client_name = std::move(value);
  } else if (key == "connect_timeout") {
    std::uint64_t ms = 0;
    if (!parse_uint(value, 86'400'000, ms, false) || ms == 0) {
      return fail("connect_timeout must be milliseconds from 1 to 86400000");
    }
    o.connect_timeout = std::chrono::milliseconds(ms);
  } else if (key == "ssl" || key == "tls") {
    bool b = false;
    if (!parse_bool(value, b)) return fail(fail.q(key) + " must be true or false");
    q.ssl = b;
  } else if (key == "verify_peer" || key == "verify") {
    bool b = false;
    if (!parse_bool(value, b)) return fail(fail.q(key) + " must be true or false");
    q.verify = b;
    q.any_tls_key = true;
  } else if (key == "ca_file" || key == "cacert") {
    tls_key(q.tls.ca_file, std::move(value));
  } else if (key == "ca_dir") {
    tls_key(q.tls.ca_dir, std::move(value));
  } else if (key == "cert_file" || key == "cert") {
    tls_key(q.tls.cert_file, std::move(value));
  } else if (key == "key_file" || key == "key") {
    tls_key(q.tls.key_file, std::move(value));
  } else if (key == "server_name" || key == "sni") {
    tls_key(q.tls.server_name, std::move(value));
  } else {
    return fail("unknown query parameter " + fail.q(key));
  }
  return {};
}

std::error_code read_query(UrlParts& u, QueryParts& q, ConnectionOptions& o, const Fail& fail) {
  for (std::string_view query = u.query; !query.empty();) {
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
    if (auto ec = read_query_param(key, raw, std::move(value), u, q, o, fail)) return ec;
  }
  return {};
}

// The parts against each other: one database, TLS on or off, the sentinel form's master name.
std::error_code settle_parts(const UrlParts& u, QueryParts& q, ConnectionOptions& o,
                             const Fail& fail) {
  if (u.path_db && q.db && *u.path_db != *q.db) {
    return fail("database given both in the path and as db=, differently");
  }
  o.db = static_cast<int>(u.path_db ? *u.path_db : q.db.value_or(0));
  bool tls = u.tls;
  if (q.ssl) {
    if (tls && !*q.ssl) return fail("rediss:// with ssl=false is contradictory");
    tls = tls || *q.ssl;
  }
  if (q.any_tls_key && !tls) {
    return fail("TLS parameters given without TLS (use rediss:// or ssl=true)");
  }
  if (q.tls.cert_file.empty() != q.tls.key_file.empty()) {
    return fail("cert_file and key_file must be given together");
  }
  if (tls) {
    if (q.verify) q.tls.verify_peer = *q.verify;
    for (Endpoint& ep : o.seeds) ep.tls = q.tls;
    o.endpoint.tls = std::move(q.tls);
  }
  if (u.sentinel) {
    if (u.fragment_master && q.master && *u.fragment_master != *q.master) {
      return fail("master name given both as #" + fail.q(u.fragment_raw) +
                  " and sentinelMasterId=" + fail.q(q.master_raw) + ", differently");
    }
    std::string name = u.fragment_master ? *u.fragment_master : q.master.value_or("");
    if (name.empty()) {
      return fail("a sentinel URL needs the master name: " + std::string(u.scheme) +
                  "://host[:port][,host[:port]...]#master-name");
    }
    o.sentinel = SentinelOptions{std::move(name), std::move(q.sentinel_user),
                                 std::move(q.sentinel_password)};
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

  UrlParts u;
  QueryParts q;
  if (auto ec = read_scheme(url, u, fail)) return ec;
  if (auto ec = split_fragment_and_query(u, fail)) return ec;
  if (auto ec = read_user_info(u, o, fail)) return ec;
  if (auto ec = u.is_unix ? read_socket_path(u, o, fail) : read_hosts_and_db(u, o, fail)) {
    return ec;
  }
  if (auto ec = read_query(u, q, o, fail)) return ec;
  if (auto ec = settle_parts(u, q, o, fail)) return ec;
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
