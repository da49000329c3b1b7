#include "lockwire/lock/protocol.hpp"

#include <array>
#include <charconv>
#include <limits>
#include <optional>
#include <span>

#include "lockwire/lock/error.hpp"
#include "lockwire/resp/encoder.hpp"
#include "lockwire/resp/reply.hpp"

namespace lockwire::lock {

namespace {
std::error_code invalid(std::string* why, std::string msg) {
  if (why != nullptr) *why = std::move(msg);
  return make_error_code(Errc::invalid_argument);
}
}  // namespace

std::error_code validate_prefix(std::string_view prefix, const Limits& limits, std::string* why) {
  if (prefix.size() > limits.max_prefix_bytes) return invalid(why, "key prefix too long");
  // A brace in the prefix would move the hash tag away from {resource}.
  if (prefix.find_first_of("{}") != std::string_view::npos) {
    return invalid(why, "key prefix must not contain '{' or '}'");
  }
  return {};
}

std::error_code validate_name(std::string_view what, std::string_view name, std::size_t max_bytes,
                              std::string* why) {
  if (name.empty()) return invalid(why, std::string(what) + " is empty");
  if (name.size() > max_bytes) {
    return invalid(why, std::string(what) + " longer than " + std::to_string(max_bytes) + " bytes");
  }
  // Braces would change the hash tag and let two resources' keys collide.
  if (name.find_first_of("{}") != std::string_view::npos) {
    return invalid(why, std::string(what) + " must not contain '{' or '}'");
  }
  return {};
}

std::error_code validate_ttl(std::chrono::nanoseconds ttl, const Limits& limits, std::string* why) {
  if (ttl < std::chrono::milliseconds(1)) return invalid(why, "ttl must be at least 1 ms");
  if (ttl > limits.max_ttl) return invalid(why, "ttl above the maximum");
  return {};
}

std::error_code validate_wait(std::chrono::nanoseconds wait, const Limits& limits,
                              std::string* why) {
  if (wait.count() < 0) return invalid(why, "wait must not be negative");
  if (wait > limits.max_wait) return invalid(why, "wait above the maximum");
  return {};
}

std::int64_t ttl_millis(std::chrono::nanoseconds ttl) noexcept {
  const std::int64_t ns = ttl.count();
  return ns / 1'000'000 + (ns % 1'000'000 > 0 ? 1 : 0);
}

namespace protocol {
namespace {

// Records each request's commands and shape as they are added (loop/request.hpp).
using Builder = loop::RequestBuilder;

// The index of the EXEC reply's array; nullopt if malformed; `aborted` for a nil EXEC.
std::optional<std::size_t> exec_array(resp::Frame exec, bool& aborted) noexcept {
  aborted = false;
  if (exec.empty()) return std::nullopt;
  const std::size_t v = resp::value_index(exec);
  if (v >= exec.size()) return std::nullopt;
  if (resp::is_null(exec[v])) {
    aborted = true;
    return v;
  }
  if (exec[v].type != resp::Type::array) return std::nullopt;
  return v;
}

// The EXEC reply's elements without allocating (hot path): at most N, else false.
template <std::size_t N>
bool exec_elements_fixed(resp::Frame exec, std::array<std::size_t, N>& out, std::size_t& n,
                         bool& aborted) noexcept {
  n = 0;
  const auto v = exec_array(exec, aborted);
  if (!v) return false;
  if (aborted) return true;
  if (exec[*v].size > N) return false;
  std::size_t i = resp::first_element(exec, *v);
  for (; n < exec[*v].size; ++n) {
    if (i >= exec.size()) return false;
    out[n] = i;
    i = resp::next_element(exec, i);
  }
  return true;
}

// Element indices of the EXEC reply; `aborted` for a nil EXEC; false for anything else.
bool exec_elements(resp::Frame exec, std::vector<std::size_t>& out, bool& aborted) {
  out.clear();
  const auto v = exec_array(exec, aborted);
  if (!v) return false;
  if (!aborted) resp::elements(exec, *v, out);
  return true;
}

std::optional<std::int64_t> int_at(resp::Frame f, std::size_t i) {
  if (i >= f.size() || f[i].type != resp::Type::number) return std::nullopt;
  return resp::to_int64(f[i]);
}

// Strings of an array/set node at i: appended to out.
bool strings_at(resp::Frame f, std::size_t i, std::vector<std::string>& out) {
  if (i >= f.size()) return false;
  if (f[i].type != resp::Type::array && f[i].type != resp::Type::set) return false;
  std::vector<std::size_t> el;
  resp::elements(f, i, el);
  for (std::size_t e : el) {
    if (f[e].type != resp::Type::blob_string && f[e].type != resp::Type::simple_string) {
      return false;
    }
    out.emplace_back(f[e].value);
  }
  return true;
}

// Field names of an HGETALL reply at i: a RESP3 map, or a flat RESP2 array of pairs.
bool fields_at(resp::Frame f, std::size_t i, std::vector<std::string>& out) {
  if (i >= f.size()) return false;
  if (f[i].type != resp::Type::map && f[i].type != resp::Type::array) return false;
  std::vector<std::size_t> el;
  resp::elements(f, i, el);
  if (el.size() % 2 != 0) return false;
  for (std::size_t k = 0; k < el.size(); k += 2) {
    const resp::Node& n = f[el[k]];
    if (n.type != resp::Type::blob_string && n.type != resp::Type::simple_string) return false;
    out.emplace_back(n.value);
  }
  return true;
}

std::optional<std::int64_t> single_int(resp::Frame f) {
  if (f.empty()) return std::nullopt;
  return int_at(f, resp::value_index(f));
}

}  // namespace

std::string Keys::companion(std::string_view owner) const {
  std::string s;
  s.reserve(holders.size() + 3 + owner.size());
  s.append(holders).append(":s:").append(owner);
  return s;
}

std::string Keys::doorbell(std::string_view owner) const {
  std::string s;
  s.reserve(holders.size() + 3 + owner.size());
  s.append(holders).append(":w:").append(owner);
  return s;
}

Keys make_keys(std::string_view prefix, std::string_view resource) {
  Keys k;
  k.holders.reserve(prefix.size() + resource.size() + 2);
  k.holders.append(prefix).append("{").append(resource).append("}");
  k.token = k.holders + ":tok";
  k.queue = k.holders + ":q";
  return k;
}

std::string field(Kind kind, std::string_view owner) {
  std::string f(kind == Kind::exclusive ? "x:" : "s:");
  f.append(owner);
  return f;
}

bool split_doorbell(std::string_view key, std::string_view& holders,
                    std::string_view& owner) noexcept {
  // Prefix and resource hold no '}', so the first '}' ends the holder-set key P{R}.
  const std::size_t brace = key.find('}');
  if (brace == std::string_view::npos || key.substr(brace + 1, 3) != ":w:") return false;
  holders = key.substr(0, brace + 1);
  owner = key.substr(brace + 4);
  return true;
}

bool split_field(std::string_view f, Kind& kind, std::string_view& owner) noexcept {
  if (f.size() < 3 || f[1] != ':') return false;
  if (f[0] == 'x') {
    kind = Kind::exclusive;
  } else if (f[0] == 's') {
    kind = Kind::shared;
  } else {
    return false;
  }
  owner = f.substr(2);
  return true;
}

loop::Request exclusive_acquire(const Keys& k, std::string_view fld, std::int64_t ttl_ms) {
  return Builder()
      .add("MULTI")
      .add("HSETNX", k.holders, fld, ttl_ms)
      .add("HLEN", k.holders)
      .add("PEXPIRE", k.holders, ttl_ms, "NX")
      .add("INCR", k.token)
      .add("EXEC")
      .done();
}

AcquireReply parse_exclusive_acquire(resp::Frame exec) {
  AcquireReply out;
  std::array<std::size_t, 4> el{};
  std::size_t n = 0;
  bool aborted = false;
  if (!exec_elements_fixed(exec, el, n, aborted)) return out;
  if (aborted) {
    out.outcome = Outcome::aborted;
    return out;
  }
  if (n != 4) return out;
  const auto setnx = int_at(exec, el[0]);
  const auto len = int_at(exec, el[1]);
  const auto tok = int_at(exec, el[3]);
  if (!setnx || !len || !tok || *tok <= 0) return out;
  out.token = static_cast<std::uint64_t>(*tok);  // a loser's burnt token is its queue ticket
  if (*setnx == 0) {
    out.outcome = Outcome::already_held;
  } else if (*setnx == 1 && *len == 1) {
    out.outcome = Outcome::granted;
  } else if (*setnx == 1 && *len > 1) {
    out.outcome = Outcome::contended;
  }
  return out;
}

loop::Request wait_read(const Keys& k, std::string_view own_field, bool track) {
  Builder b;
  b.add("MULTI");
  if (!own_field.empty()) b.add("HDEL", k.holders, own_field);
  if (track) b.add("CLIENT", "CACHING", "YES");
  return b.add("PTTL", k.holders).add("HGETALL", k.holders).add("EXEC").done();
}

// The elements of a wait block's EXEC reply: `reads` after the optional HDEL (an integer).
static bool wait_elements(resp::Frame exec, bool with_hdel, std::size_t reads,
                          std::vector<std::size_t>& el) {
  bool aborted = false;
  if (!exec_elements(exec, el, aborted) || aborted) return false;
  if (el.size() != (with_hdel ? 1 : 0) + reads) return false;
  return !with_hdel || int_at(exec, el[0]).has_value();
}

WaitRead parse_wait_read(resp::Frame exec, bool with_hdel, bool track) {
  WaitRead out;
  std::vector<std::size_t> el;
  if (!wait_elements(exec, with_hdel, track ? 3 : 2, el)) return out;
  std::size_t i = with_hdel ? 1 : 0;
  out.tracked = track && !resp::is_error(exec[el[i++]]);
  const auto pttl = int_at(exec, el[i++]);
  if (!pttl) return out;
  out.pttl = *pttl;
  if (!fields_at(exec, el[i], out.fields)) return out;
  out.ok = true;
  return out;
}

loop::Request exclusive_wait_read(const Keys& k, std::string_view own_field, std::string_view owner,
                                  std::uint64_t ticket, std::int64_t doorbell_ttl_ms, bool track) {
  Builder b;
  b.add("MULTI");
  if (!own_field.empty()) b.add("HDEL", k.holders, own_field);
  const std::string doorbell = k.doorbell(owner);
  b.add("ZADD", k.queue, "NX", ticket, owner)
      .add("PEXPIRE", k.queue, kQueueTtlMs)
      .add("SET", doorbell, "1", "NX", "PX", doorbell_ttl_ms)
      .add("ZRANGE", k.queue, 0, 1);  // before CACHING: inside EXEC the flag lasts to the end
  if (track) b.add("CLIENT", "CACHING", "YES");
  b.add("PTTL", doorbell);
  if (track) b.add("CLIENT", "CACHING", "YES");
  return b.add("PTTL", k.holders).add("HGETALL", k.holders).add("EXEC").done();
}

WaitRead parse_exclusive_wait_read(resp::Frame exec, bool with_hdel, std::string_view owner,
                                   bool track) {
  WaitRead out;
  std::vector<std::size_t> el;
  if (!wait_elements(exec, with_hdel, track ? 9 : 7, el)) return out;
  std::size_t i = (with_hdel ? 1 : 0) + 3;  // ZADD, PEXPIRE, SET NX: nothing we need
  std::vector<std::string> first;
  if (!strings_at(exec, el[i++], first) || first.size() > 2) return out;
  // Both CLIENT CACHING replies are stepped over whatever the first said (a short-circuit
  // here once left the index on the second one when the first was an error).
  bool tracked = track;
  if (track) tracked = !resp::is_error(exec[el[i++]]);
  const auto doorbell_pttl = int_at(exec, el[i++]);
  if (track && resp::is_error(exec[el[i++]])) tracked = false;
  const auto pttl = int_at(exec, el[i++]);
  if (!doorbell_pttl || !pttl) return out;
  out.rank = !first.empty() && first[0] == owner      ? 0
             : first.size() == 2 && first[1] == owner ? 1
                                                      : 2;
  if (!first.empty()) out.first = std::move(first[0]);
  out.tracked = tracked;
  out.doorbell_pttl = *doorbell_pttl;
  out.pttl = *pttl;
  if (!fields_at(exec, el[i], out.fields)) return out;
  out.ok = true;
  return out;
}

loop::Request leave_queue(const Keys& k, const std::vector<std::string>& owners) {
  Builder b;
  b.add("MULTI");
  std::vector<std::string_view> zrem{"ZREM", k.queue};
  for (const std::string& o : owners) zrem.push_back(o);
  b.add(zrem);
  return b.add("ZRANGE", k.queue, 0, 1).add("EXEC").done();
}

bool parse_leave_queue(resp::Frame exec, std::vector<std::string>& first) {
  first.clear();
  std::vector<std::size_t> el;
  bool aborted = false;
  if (!exec_elements(exec, el, aborted) || aborted || el.size() != 2) return false;
  if (!int_at(exec, el[0])) return false;
  return strings_at(exec, el[1], first) && first.size() <= 2;
}

loop::Request leave_queue_plain(const Keys& k, const std::vector<std::string>& owners) {
  Builder b;
  std::vector<std::string_view> zrem{"ZREM", k.queue};
  for (const std::string& o : owners) zrem.push_back(o);
  b.add(zrem);
  return b.add("ZRANGE", k.queue, 0, 1).done();
}

bool parse_queue_head(resp::Frame zrange, std::vector<std::string>& first) {
  first.clear();
  return strings_at(zrange, 0, first) && first.size() <= 2;
}

loop::Request ring(const Keys& k, const std::vector<std::string>& owners) {
  Builder b;
  for (const std::string& o : owners) b.add("SET", k.doorbell(o), "1", "XX", "KEEPTTL");
  return b.done();
}

Ring parse_ring(resp::Frame f) {
  if (f.empty()) return Ring::bad_reply;
  const resp::Node& n = f[resp::value_index(f)];
  if (resp::is_null(n)) return Ring::gone;
  if (n.type == resp::Type::simple_string && n.value == "OK") return Ring::rung;
  return Ring::bad_reply;
}

Decision decide(Kind kind, std::string_view owner, const std::vector<std::string>& fields) {
  bool any_exclusive = false;
  bool any_other = false;
  for (const std::string& f : fields) {
    Kind fk{};
    std::string_view fo;
    if (!split_field(f, fk, fo)) {
      any_other = true;  // unknown field: never treat the set as free
      any_exclusive = true;
      continue;
    }
    if (fo == owner) {
      // Our own live claim of either kind: exclusive would wait for itself (no upgrade);
      // shared-over-own-shared is the WATCH path's call.
      if (kind == Kind::exclusive || fk == Kind::exclusive) return Decision::already_held;
      continue;
    }
    any_other = true;
    if (fk == Kind::exclusive) any_exclusive = true;
  }
  if (kind == Kind::shared) return any_exclusive ? Decision::blocked : Decision::free;
  if (!any_other) return Decision::free;
  return any_exclusive ? Decision::blocked : Decision::blocked_by_shared_only;
}

loop::Request shared_watch(const Keys& k, std::string_view owner) {
  return Builder()
      .add("WATCH", k.holders, k.companion(owner))
      .add("HGETALL", k.holders)
      .add("EXISTS", k.companion(owner))
      .done();
}

SharedRead parse_shared_watch(const loop::Replies& r) {
  SharedRead out;
  if (r.size() != 3) return out;
  const resp::Frame keys = r[1];
  if (keys.empty() || !fields_at(keys, resp::value_index(keys), out.fields)) return out;
  const auto ex = single_int(r[2]);
  if (!ex) return out;
  out.companion_exists = *ex == 1;
  out.ok = true;
  return out;
}

Decision decide_shared(std::string_view owner, const SharedRead& read) {
  const Decision d = decide(Kind::shared, owner, read.fields);
  if (d != Decision::free) return d;
  if (read.companion_exists) {
    for (const std::string& f : read.fields) {
      Kind fk{};
      std::string_view fo;
      if (split_field(f, fk, fo) && fk == Kind::shared && fo == owner) {
        return Decision::already_held;
      }
    }
  }
  return Decision::free;
}

loop::Request shared_grant(const Keys& k, std::string_view owner, std::int64_t ttl_ms) {
  return Builder()
      .add("MULTI")
      .add("HSET", k.holders, field(Kind::shared, owner), ttl_ms)
      .add("SET", k.companion(owner), "1", "PX", ttl_ms)
      .add("PEXPIRE", k.holders, ttl_ms, "NX")
      .add("PEXPIRE", k.holders, ttl_ms, "GT")
      .add("INCR", k.token)
      .add("EXEC")
      .done();
}

AcquireReply parse_shared_grant(resp::Frame exec) {
  AcquireReply out;
  std::vector<std::size_t> el;
  bool aborted = false;
  if (!exec_elements(exec, el, aborted)) return out;
  if (aborted) {
    out.outcome = Outcome::aborted;
    return out;
  }
  if (el.size() != 5) return out;
  const auto tok = int_at(exec, el[4]);
  if (!tok || *tok <= 0 || resp::is_error(exec[el[1]])) return out;
  out.outcome = Outcome::granted;
  out.token = static_cast<std::uint64_t>(*tok);
  return out;
}

loop::Request exclusive_release(const Keys& k, std::string_view owner) {
  return Builder().add("HDEL", k.holders, field(Kind::exclusive, owner)).done();
}

loop::Request shared_release(const Keys& k, std::string_view owner) {
  return Builder()
      .add("MULTI")
      .add("HDEL", k.holders, field(Kind::shared, owner))
      .add("DEL", k.companion(owner))
      .add("EXEC")
      .done();
}

loop::Request release(Kind kind, const Keys& k, std::string_view owner) {
  return kind == Kind::exclusive ? exclusive_release(k, owner) : shared_release(k, owner);
}

ReleaseResult parse_release(Kind kind, const loop::Replies& r) {
  if (r.size() == 0) return ReleaseResult::bad_reply;
  if (kind == Kind::exclusive) {
    const auto n = single_int(r.back());
    if (!n) return ReleaseResult::bad_reply;
    return *n == 1 ? ReleaseResult::released : ReleaseResult::not_held;
  }
  const resp::Frame exec = r.back();
  std::vector<std::size_t> el;
  bool aborted = false;
  if (!exec_elements(exec, el, aborted) || aborted || el.size() != 2) {
    return ReleaseResult::bad_reply;
  }
  const auto a = int_at(exec, el[0]);
  const auto b = int_at(exec, el[1]);
  if (!a || !b) return ReleaseResult::bad_reply;
  return (*a == 1 && *b == 1) ? ReleaseResult::released : ReleaseResult::not_held;
}

// The reads that say whether a lease is on the server: HEXISTS P{R} <field> [EXISTS P{R}:s:O].
static Builder& add_lease_reads(Builder& b, Kind kind, const Keys& k, std::string_view owner) {
  b.add("HEXISTS", k.holders, field(kind, owner));
  if (kind == Kind::shared) b.add("EXISTS", k.companion(owner));
  return b;
}

loop::Request renew_watch(Kind kind, const Keys& k, std::string_view owner) {
  Builder b;
  if (kind == Kind::exclusive) {
    b.add("WATCH", k.holders);
  } else {
    b.add("WATCH", k.holders, k.companion(owner));
  }
  return add_lease_reads(b, kind, k, owner).done();
}

// The lease reads HEXISTS [EXISTS] from reply `from` on: held iff every one is 1.
static RenewCheck lease_reads(Kind kind, const loop::Replies& r, std::size_t from) {
  if (r.size() != from + (kind == Kind::exclusive ? 1 : 2)) return RenewCheck::bad_reply;
  for (std::size_t i = from; i < r.size(); ++i) {
    const auto n = single_int(r[i]);
    if (!n) return RenewCheck::bad_reply;
    if (*n != 1) return RenewCheck::not_held;
  }
  return RenewCheck::held;
}

RenewCheck parse_renew_watch(Kind kind, const loop::Replies& r) {
  return lease_reads(kind, r, 1);  // after the WATCH
}

loop::Request renew_exec(Kind kind, const Keys& k, std::string_view owner, std::int64_t ttl_ms) {
  Builder b;
  b.add("MULTI");
  if (kind == Kind::exclusive) {
    b.add("PEXPIRE", k.holders, ttl_ms);
  } else {
    b.add("PEXPIRE", k.companion(owner), ttl_ms).add("PEXPIRE", k.holders, ttl_ms, "GT");
  }
  return b.add("EXEC").done();
}

RenewResult parse_renew_exec(Kind kind, resp::Frame exec) {
  std::vector<std::size_t> el;
  bool aborted = false;
  if (!exec_elements(exec, el, aborted)) return RenewResult::bad_reply;
  if (aborted) return RenewResult::aborted;
  if (el.size() != (kind == Kind::exclusive ? 1u : 2u)) return RenewResult::bad_reply;
  const auto n = int_at(exec, el[0]);
  if (!n) return RenewResult::bad_reply;
  return *n == 1 ? RenewResult::renewed : RenewResult::not_held;
}

loop::Request stale_watch(const Keys& k, const std::vector<std::string>& owners) {
  std::vector<std::string> companions;
  companions.reserve(owners.size());
  for (const auto& o : owners) companions.push_back(k.companion(o));
  std::vector<std::string_view> args{"WATCH", k.holders};
  for (const auto& c : companions) args.push_back(c);
  Builder b;
  b.add(args);
  for (const auto& c : companions) b.add("PTTL", c);
  return b.done();
}

std::vector<std::int64_t> parse_stale_watch(const loop::Replies& r, std::size_t owners) {
  std::vector<std::int64_t> out;
  if (r.size() != owners + 1) return out;
  for (std::size_t i = 0; i < owners; ++i) {
    const auto n = single_int(r[i + 1]);
    if (!n) return {};
    out.push_back(*n);
  }
  return out;
}

loop::Request stale_cleanup(const Keys& k, const std::vector<std::string>& fields) {
  std::vector<std::string_view> hdel{"HDEL", k.holders};
  for (const auto& f : fields) hdel.push_back(f);
  return Builder().add("MULTI").add(hdel).add("EXEC").done();
}

loop::Request force_release(const Keys& k) {
  return Builder()
      .add("MULTI")
      .add("HGETALL", k.holders)
      .add("DEL", k.holders)
      .add("EXEC")
      .done();
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
      .add("GET", k.token)
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
    const auto tok = resp::to_int64(t);
    if (!tok || *tok < 0) return out;
    out.last_token = static_cast<std::uint64_t>(*tok);
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

loop::Request notice_read(std::string_view notice_key, bool tracking_on) {
  Builder b;
  if (tracking_on) b.add("CLIENT", "TRACKING", "ON", "OPTIN");
  return b.add("CLIENT", "CACHING", "YES").add("HMGET", notice_key, "res", "seq").done();
}

loop::Request connect_probe(std::string_view notice_key) {
  return Builder()
      .add("CLIENT", "TRACKING", "ON", "OPTIN")
      .add("CLIENT", "CACHING", "YES")
      .add("HMGET", notice_key, "res", "seq")
      .add("INFO", "memory")
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

std::string error_words(resp::Frame f) {
  if (f.empty()) return {};
  const std::size_t v = resp::value_index(f);
  if (v >= f.size() || !resp::is_error(f[v])) return {};
  return std::string(f[v].value);
}
}  // namespace

ConnectProbe parse_connect_probe(const loop::Replies& r) {
  ConnectProbe out;
  if (r.size() != 4) return out;
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
  out.ok = true;
  return out;
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

loop::Request lease_check(Kind kind, const Keys& k, std::string_view owner, bool track) {
  Builder b;
  if (track) b.add("CLIENT", "CACHING", "YES");  // covers the HEXISTS of the holder set
  return add_lease_reads(b, kind, k, owner).done();
}

RenewCheck parse_lease_check(Kind kind, const loop::Replies& r, bool track) {
  return lease_reads(kind, r, track ? 1 : 0);
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

}  // namespace protocol
}  // namespace lockwire::lock
