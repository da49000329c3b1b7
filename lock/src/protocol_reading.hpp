// Private to lock/src: what every protocol file shares — the request builder and the readers of
// EXEC replies and plain replies (indices into parsed frames, no allocation on the hot path).
#pragma once

#include <array>
#include <charconv>
#include <optional>
#include <string>
#include <vector>

#include "lockwire/lock/protocol.hpp"
#include "lockwire/resp/reply.hpp"

namespace lockwire::lock::protocol::detail {

// The one member of P{R}:fence; its score is the last token handed out.
inline constexpr std::string_view kTokenMember = "t";

using Builder = loop::RequestBuilder;

// The fencing tail of every grant block: raise P{R}:fence to the floor (ZADD GT, left out once
// this connection has raised it), take the next token (ZADD INCR, its reply), and, when it
// raises and `fence_ttl_ms` > 0, let the key expire fence_expiry_ms(fence_ttl_ms) from now
// (PEXPIRE). A block that does not raise sends no PEXPIRE: its token counts only if its reply
// came within a third of fence_ttl of its connection's raising block (Client::Core::
// stale_grant), so the key still lives fence_ttl after it (docs/protocol.md, Fencing tokens).
// Whether the block sends the fence key's PEXPIRE: only with the raise, and a fence TTL.
inline constexpr bool fence_pexpire_sent(bool raise_floor, bool expires) noexcept {
  return raise_floor && expires;
}
inline Builder& add_fence(Builder& b, const Keys& k, std::uint64_t floor_us, bool raise_floor,
                          std::int64_t fence_ttl_ms) {
  if (raise_floor) b.add("ZADD", k.fence, "GT", floor_us, kTokenMember);
  b.add("ZADD", k.fence, "INCR", 1, kTokenMember);
  if (fence_pexpire_sent(raise_floor, fence_ttl_ms > 0)) {
    b.add("PEXPIRE", k.fence, fence_expiry_ms(fence_ttl_ms));
  }
  return b;
}
// How many replies add_fence's commands leave in the EXEC reply.
inline constexpr std::size_t fence_replies(bool raise_floor, bool expires) noexcept {
  return 1 + (raise_floor ? 1 : 0) + (fence_pexpire_sent(raise_floor, expires) ? 1 : 0);
}

// The index of the EXEC reply's array; nullopt if malformed; `aborted` for a nil EXEC.
inline std::optional<std::size_t> exec_array(resp::Frame exec, bool& aborted) noexcept {
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
inline bool exec_elements_fixed(resp::Frame exec, std::array<std::size_t, N>& out, std::size_t& n,
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
inline bool exec_elements(resp::Frame exec, std::vector<std::size_t>& out, bool& aborted) {
  out.clear();
  const auto v = exec_array(exec, aborted);
  if (!v) return false;
  if (!aborted) resp::elements(exec, *v, out);
  return true;
}

inline std::optional<std::int64_t> int_at(resp::Frame f, std::size_t i);
inline std::optional<std::uint64_t> token_at(resp::Frame f, std::size_t i);

// The EXEC reply of a WATCHed grant block of `n` commands whose token is the reply at `token`:
// aborted (nil), granted (no error reply before the token), or bad_reply. `el` keeps the
// element indices for the caller's own checks.
inline AcquireReply watched_grant(resp::Frame exec, std::size_t n, std::size_t token,
                                  std::vector<std::size_t>& el) {
  AcquireReply out;
  bool aborted = false;
  if (!exec_elements(exec, el, aborted)) return out;
  if (aborted) {
    out.outcome = Outcome::aborted;
    return out;
  }
  if (el.size() != n) return out;
  for (std::size_t i = 0; i < token; ++i) {
    if (resp::is_error(exec[el[i]])) return out;
  }
  const auto tok = token_at(exec, el[token]);
  if (!tok) return out;
  out.outcome = Outcome::granted;
  out.token = *tok;
  return out;
}

inline std::optional<std::int64_t> int_at(resp::Frame f, std::size_t i) {
  if (i >= f.size() || f[i].type != resp::Type::number) return std::nullopt;
  return resp::to_int64(f[i]);
}

// A fencing token: a sorted-set score (ZADD INCR), a RESP3 double or a RESP2 blob string, that
// must be a whole number in [1, 2^53] (exact as a double).
inline std::optional<std::uint64_t> token_at(resp::Frame f, std::size_t i) {
  if (i >= f.size()) return std::nullopt;
  const resp::Type t = f[i].type;
  if (t != resp::Type::double_ && t != resp::Type::blob_string) return std::nullopt;
  // Digits only, read in one loop (std::from_chars cost about 300 instructions per grant): at
  // most 19 of them cannot overflow, and a token is at most 16 (2^53).
  const std::string_view v = f[i].value;
  if (v.empty() || v.size() > 19) return std::nullopt;
  std::uint64_t n = 0;
  for (const char c : v) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (n == 0 || n > kMaxToken) return std::nullopt;
  return n;
}

// Strings of an array/set node at i: appended to out.
inline bool strings_at(resp::Frame f, std::size_t i, std::vector<std::string>& out) {
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
inline bool fields_at(resp::Frame f, std::size_t i, std::vector<std::string>& out) {
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

inline std::optional<std::int64_t> single_int(resp::Frame f) {
  if (f.empty()) return std::nullopt;
  return int_at(f, resp::value_index(f));
}

// The start of a WATCHed shared or upgrade read: the holder set's fields (HGETALL, reply 1) and
// whether our companion exists (EXISTS, reply 2). False if either is malformed.
inline bool holders_and_companion(const loop::Replies& r, std::vector<std::string>& fields,
                                  bool& companion_exists) {
  if (!parse_holder_fields(r[1], fields)) return false;
  const auto ex = single_int(r[2]);
  if (!ex) return false;
  companion_exists = *ex == 1;
  return true;
}

inline Builder& add_lease_reads(Builder& b, Kind kind, const Keys& k, std::string_view owner) {
  b.add("HEXISTS", k.holders, field(kind, owner));
  if (kind == Kind::shared) b.add("EXISTS", k.companion(owner));
  return b;
}

// The lease reads HEXISTS [EXISTS] from reply `from` on: held iff every one is 1.
inline RenewCheck lease_reads(Kind kind, const loop::Replies& r, std::size_t from) {
  if (r.size() != from + (kind == Kind::exclusive ? 1 : 2)) return RenewCheck::bad_reply;
  for (std::size_t i = from; i < r.size(); ++i) {
    const auto n = single_int(r[i]);
    if (!n) return RenewCheck::bad_reply;
    if (*n != 1) return RenewCheck::not_held;
  }
  return RenewCheck::held;
}

}  // namespace lockwire::lock::protocol::detail
