// force_release, inspect, the force-release notice, the connect probe, the server's words and
// invalidation pushes.
#include "lockwire/lock/protocol.hpp"

#include <array>
#include <charconv>
#include <limits>
#include <optional>
#include <span>

#include "lockwire/lock/error.hpp"
#include "lockwire/resp/encoder.hpp"
#include "lockwire/resp/reply.hpp"
#include "protocol_reading.hpp"

namespace lockwire::lock::protocol {

using namespace detail;  // NOLINT(google-build-using-namespace): this file's own helpers

loop::Request force_release(const Keys& k) {
  return Builder().add("MULTI").add("HGETALL", k.holders).add("DEL", k.holders).add("EXEC").done();
}

bool parse_force_release(resp::Frame exec, std::vector<std::string>& fields) {
  std::vector<std::size_t> el;
  bool aborted = false;
  if (!exec_elements(exec, el, aborted) || aborted || el.size() != 2) return false;
  return fields_at(exec, el[0], fields) && int_at(exec, el[1]).has_value();
}

loop::Request delete_companions(const Keys& k, const std::vector<std::string>& owners) {
  std::vector<std::string> companions;
  for (const auto& o : owners) companions.push_back(k.companion(o));
  std::vector<std::string_view> args{"DEL"};
  for (const auto& c : companions) args.push_back(c);
  return Builder().add(args).done();
}

loop::Request inspect(const Keys& k) {
  return Builder()
      .add("MULTI")
      .add("HGETALL", k.holders)
      .add("PTTL", k.holders)
      .add("ZSCORE", k.fence, kTokenMember)
      .add("EXEC")
      .done();
}

InspectReply parse_inspect(resp::Frame exec) {
  InspectReply out;
  std::vector<std::size_t> el;
  bool aborted = false;
  if (!exec_elements(exec, el, aborted) || aborted || el.size() != 3) return out;
  const resp::Node& m = exec[el[0]];
  if (m.type != resp::Type::map && m.type != resp::Type::array) return out;
  std::vector<std::size_t> kv;
  resp::elements(exec, el[0], kv);
  if (kv.size() % 2 != 0) return out;
  const auto pttl = int_at(exec, el[1]);
  if (!pttl) return out;
  out.pttl = *pttl;
  for (std::size_t i = 0; i < kv.size(); i += 2) {
    Kind kind{};
    std::string_view owner;
    if (!split_field(exec[kv[i]].value, kind, owner)) continue;
    out.holders.push_back(Holder{kind, std::string(owner), kind == Kind::exclusive ? *pttl : -2});
  }
  const resp::Node& t = exec[el[2]];
  if (!resp::is_null(t)) {
    const auto tok = token_at(exec, el[2]);
    if (!tok) return out;
    out.last_token = *tok;
  }
  out.ok = true;
  return out;
}

loop::Request companion_ttls(const Keys& k, const std::vector<std::string>& owners) {
  Builder b;
  for (const auto& o : owners) b.add("PTTL", k.companion(o));
  return b.done();
}

std::string notice_key(std::string_view prefix) {
  std::string k(prefix);
  k.append("force-released");
  return k;
}

loop::Request force_notice(std::string_view notice_key, std::string_view resource) {
  return Builder()
      .add("MULTI")
      .add("HSET", notice_key, "res", resource)
      .add("HINCRBY", notice_key, "seq", 1)
      .add("EXEC")
      .done();
}

loop::Request notice_read(std::string_view notice_key) {
  return Builder().add("CLIENT", "CACHING", "YES").add("HMGET", notice_key, "res", "seq").done();
}

loop::Request connect_probe(std::string_view notice_key) {
  return Builder()
      .add("CLIENT", "TRACKING", "ON", "OPTIN")
      .add("CLIENT", "CACHING", "YES")
      .add("HMGET", notice_key, "res", "seq")
      .add("INFO", "memory")
      .add("TIME")
      // Does PEXPIRE take the protocol's NX / GT (Redis 7.0, Valkey 7.2)? Its arity says: -3
      // (options may follow), 3 before. Asked, not tried: a PEXPIRE, even a no-op one, is a
      // write, and CLIENT PAUSE WRITE would hold the whole probe (and every waiter) with it.
      .add("COMMAND", "INFO", "PEXPIRE")
      .done();
}

namespace {
// "field:value" of an INFO text, or empty.
std::string_view info_field(std::string_view info, std::string_view name) {
  std::size_t at = 0;
  while (at < info.size()) {
    std::size_t end = info.find('\n', at);
    if (end == std::string_view::npos) end = info.size();
    std::string_view line = info.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() > name.size() && line.starts_with(name) && line[name.size()] == ':') {
      return line.substr(name.size() + 1);
    }
    at = end + 1;
  }
  return {};
}

// COMMAND INFO PEXPIRE: the server's own statement when PEXPIRE takes no options (a fixed arity
// below 4: "PEXPIRE key milliseconds" and nothing after), else empty. An error (NOPERM, an
// unknown COMMAND) or an unknown shape says nothing about it: not a refusal.
std::string fixed_arity(resp::Frame f) {
  const std::size_t v = resp::value_index(f);
  std::vector<std::size_t> el;
  if (v < f.size() && f[v].type == resp::Type::array) resp::elements(f, v, el);
  if (el.size() != 1 || f[el[0]].type != resp::Type::array) return {};
  std::vector<std::size_t> info;
  resp::elements(f, el[0], info);
  if (info.size() < 2) return {};
  const auto arity = resp::to_int64(f[info[1]]);
  if (!arity || *arity <= 0 || *arity >= 4) return {};
  return "COMMAND INFO PEXPIRE: arity " + std::to_string(*arity) + ", no options";
}

std::string error_words(resp::Frame f) {
  if (f.empty()) return {};
  const std::size_t v = resp::value_index(f);
  if (v >= f.size() || !resp::is_error(f[v])) return {};
  return std::string(f[v].value);
}
}  // namespace

ConnectProbe parse_connect_probe(const loop::Replies& r) {
  ConnectProbe out;
  if (r.size() != 6) return out;
  out.tracking_error = error_words(r[0]);
  if (out.tracking_error.empty()) out.tracking_error = error_words(r[1]);
  out.push_wakeups = out.tracking_error.empty();
  out.notice = parse_notice_read(r[2]);
  out.info_error = error_words(r[3]);
  if (out.info_error.empty()) {
    const resp::Frame f = r[3];
    const std::size_t v = resp::value_index(f);
    if (v < f.size() && resp::is_string_like(f[v].type)) {
      const std::string_view max = info_field(f[v].value, "maxmemory");
      const std::string_view policy = info_field(f[v].value, "maxmemory_policy");
      std::int64_t n = 0;
      const auto [p, ec] = std::from_chars(max.data(), max.data() + max.size(), n);
      if (ec == std::errc() && p == max.data() + max.size() && !policy.empty()) {
        out.memory_known = true;
        out.maxmemory = n;
        out.maxmemory_policy = std::string(policy);
      }
    }
    if (!out.memory_known) out.info_error = "INFO memory has no maxmemory/maxmemory_policy";
  }
  out.clock_error = error_words(r[4]);
  if (out.clock_error.empty()) {
    if (const auto us = parse_time(r[4])) {
      out.clock_known = true;
      out.server_us = *us;
    } else {
      out.clock_error = "malformed TIME reply";
    }
  }
  out.expire_error = fixed_arity(r[5]);
  out.ok = true;
  return out;
}

std::string unsupported_server(const ConnectProbe& p, std::string_view software,
                               std::string_view address) {
  if (!p.ok || p.expire_error.empty()) return {};
  std::string s = software.empty() ? std::string("the server") : std::string(software);
  if (!address.empty()) s.append(" at ").append(address);
  s += " is older than lockwire's minimum, Redis 7.0 or Valkey 7.2: it lacks PEXPIRE's NX/GT "
       "options, which every acquire needs (";
  s.append(p.expire_error).append(")");
  return s;
}

loop::Request time_request() { return loop::RequestBuilder().add("TIME").done(); }

std::optional<std::uint64_t> parse_time(resp::Frame f) {
  const std::size_t v = resp::value_index(f);
  std::vector<std::size_t> el;
  if (v < f.size() && f[v].type == resp::Type::array) resp::elements(f, v, el);
  std::uint64_t sec = 0, usec = 0;
  auto num = [&](std::size_t i, std::uint64_t& n) {
    const std::string_view s = f[i].value;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    return f[i].type == resp::Type::blob_string && ec == std::errc() && p == s.data() + s.size();
  };
  if (el.size() == 2 && num(el[0], sec) && num(el[1], usec) && usec < 1'000'000 &&
      sec < kMaxToken / 2'000'000) {
    return sec * 1'000'000 + usec;
  }
  return std::nullopt;
}

std::string server_words(const loop::Replies& r) {
  std::string first;
  std::string exec_abort;
  for (std::size_t i = 0; i < r.size(); ++i) {
    const resp::Frame f = r[i];
    if (f.empty()) continue;
    // An EXEC reply holds the errors of the commands that ran inside it.
    const std::size_t v = resp::value_index(f);
    if (v < f.size() && f[v].type == resp::Type::array) {
      std::vector<std::size_t> el;
      resp::elements(f, v, el);
      for (std::size_t e : el) {
        if (resp::is_error(f[e]) && first.empty()) first = std::string(f[e].value);
      }
      continue;
    }
    std::string w = error_words(f);
    if (w.empty()) continue;
    if (w.starts_with("EXECABORT")) {
      exec_abort = std::move(w);
    } else if (first.empty()) {
      first = std::move(w);
    }
  }
  if (first.empty()) return exec_abort;
  if (!exec_abort.empty()) first += " (" + exec_abort + ")";
  return first;
}

bool transient_server_error(std::string_view words) noexcept {
  for (std::string_view code : {"LOADING", "BUSY", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN"}) {
    if (words.starts_with(code) && (words.size() == code.size() || words[code.size()] == ' ')) {
      return true;
    }
  }
  return false;
}

Notice parse_notice_read(resp::Frame f) {
  Notice out;
  if (f.empty()) return out;
  const std::size_t v = resp::value_index(f);
  if (v >= f.size() || f[v].type != resp::Type::array) return out;
  std::vector<std::size_t> el;
  resp::elements(f, v, el);
  if (el.size() != 2) return out;
  if (!resp::is_null(f[el[0]])) {
    if (!resp::is_string_like(f[el[0]].type)) return out;
    out.resource.assign(f[el[0]].value);
  }
  if (!resp::is_null(f[el[1]])) {
    const auto n = resp::to_int64(f[el[1]]);
    if (!n || *n < 0) return out;
    out.seq = *n;
  }
  out.ok = true;
  return out;
}

bool parse_invalidate(resp::Frame push, std::vector<std::string>& keys, bool& all) {
  all = false;
  if (push.empty()) return false;
  const std::size_t v = resp::value_index(push);
  if (v >= push.size() || push[v].type != resp::Type::push) return false;
  std::vector<std::size_t> el;
  resp::elements(push, v, el);
  if (el.size() != 2 || !resp::equals(push[el[0]], "invalidate")) return false;
  if (resp::is_null(push[el[1]])) {
    all = true;
    return true;
  }
  return strings_at(push, el[1], keys);
}

}  // namespace lockwire::lock::protocol
