// Acquire blocks and their replies: exclusive and shared, the wait blocks, the wait queue.
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

loop::Request exclusive_acquire(const Keys& k, std::string_view fld, std::int64_t ttl_ms,
                                std::uint64_t floor_us, bool raise_floor,
                                std::int64_t fence_ttl_ms) {
  Builder b;
  b.add("MULTI")
      .add("HSETNX", k.holders, fld, ttl_ms)
      .add("HLEN", k.holders)
      .add("PEXPIRE", k.holders, ttl_ms, "NX");
  return add_fence(b, k, floor_us, raise_floor, fence_ttl_ms).add("EXEC").done();
}

namespace {

// The EXEC reply's elements, when it is an array of `want` of them (out: bad_reply), or a nil
// EXEC (out: aborted).
bool acquire_elements(resp::Frame exec, std::size_t want, std::array<std::size_t, 6>& el,
                      AcquireReply& out) {
  std::size_t n = 0;
  bool aborted = false;
  if (!exec_elements_fixed(exec, el, n, aborted)) return false;
  if (aborted) {
    out.outcome = Outcome::aborted;
    return false;
  }
  return n == want;
}

// What HSETNX's and HLEN's replies say (bad_reply for any other pair of values).
Outcome holder_outcome(std::int64_t setnx, std::int64_t len) {
  if (setnx == 0) return Outcome::already_held;
  if (setnx == 1 && len == 1) return Outcome::granted;
  if (setnx == 1 && len > 1) return Outcome::contended;
  return Outcome::bad_reply;
}

}  // namespace

AcquireReply parse_exclusive_acquire(resp::Frame exec, bool raise_floor, bool fence_expires) {
  AcquireReply out;
  std::array<std::size_t, 6> el{};
  const std::size_t n = 3 + fence_replies(raise_floor, fence_expires);
  if (!acquire_elements(exec, n, el, out)) return out;
  const auto setnx = int_at(exec, el[0]);
  const auto len = int_at(exec, el[1]);
  const auto tok = token_at(exec, el[raise_floor ? 4 : 3]);  // HSETNX HLEN PEXPIRE [GT] INCR
  if (!setnx || !len || !tok) return out;
  if (fence_pexpire_sent(raise_floor, fence_expires) && int_at(exec, el[n - 1]) != 1) {
    return out;  // the fence's PEXPIRE: set
  }
  out.token = *tok;  // a loser's burnt token is its queue ticket
  out.outcome = holder_outcome(*setnx, *len);
  return out;
}

loop::Request exclusive_acquire_untokened(const Keys& k, std::string_view fld,
                                          std::int64_t ttl_ms) {
  return Builder()
      .add("MULTI")
      .add("HSETNX", k.holders, fld, ttl_ms)
      .add("HLEN", k.holders)
      .add("PEXPIRE", k.holders, ttl_ms, "NX")
      .add("EXEC")
      .done();
}

AcquireReply parse_exclusive_acquire_untokened(resp::Frame exec) {
  AcquireReply out;
  std::array<std::size_t, 6> el{};
  if (!acquire_elements(exec, 3, el, out)) return out;
  const auto setnx = int_at(exec, el[0]);
  const auto len = int_at(exec, el[1]);
  if (!setnx || !len || !int_at(exec, el[2])) return out;
  out.outcome = holder_outcome(*setnx, *len);
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
                                  std::uint64_t ticket, std::int64_t doorbell_ttl_ms, bool track,
                                  bool clear_wake) {
  Builder b;
  b.add("MULTI");
  if (!own_field.empty()) b.add("HDEL", k.holders, own_field);
  if (clear_wake) b.add("DEL", k.wake());
  const std::string doorbell = k.doorbell(owner);
  b.add("ZADD", k.queue, "NX", ticket, owner)
      .add("PEXPIRE", k.queue, kQueueTtlMs)
      .add("SET", doorbell, "1", "NX", "PX", doorbell_ttl_ms)
      .add("ZRANGE", k.queue, 0, 2);  // before CACHING: inside EXEC the flag lasts to the end
  if (track) b.add("CLIENT", "CACHING", "YES");
  b.add("PTTL", doorbell);
  if (track) b.add("CLIENT", "CACHING", "YES");
  return b.add("PTTL", k.holders).add("HGETALL", k.holders).add("EXEC").done();
}

WaitRead parse_exclusive_wait_read(resp::Frame exec, bool with_hdel, std::string_view owner,
                                   bool track, bool clear_wake) {
  WaitRead out;
  std::vector<std::size_t> el;
  const std::size_t del = clear_wake ? 1 : 0;
  if (!wait_elements(exec, with_hdel, (track ? 9 : 7) + del, el)) return out;
  std::size_t i = (with_hdel ? 1 : 0) + del + 3;  // [DEL], ZADD, PEXPIRE, SET NX: nothing we need
  std::vector<std::string> first;
  if (!strings_at(exec, el[i++], first) || first.size() > 3) return out;
  // Both CLIENT CACHING replies are stepped over whatever the first said (a short-circuit
  // here once left the index on the second one when the first was an error).
  bool tracked = track;
  if (track) tracked = !resp::is_error(exec[el[i++]]);
  const auto doorbell_pttl = int_at(exec, el[i++]);
  if (track && resp::is_error(exec[el[i++]])) tracked = false;
  const auto pttl = int_at(exec, el[i++]);
  if (!doorbell_pttl || !pttl) return out;
  out.rank = !first.empty() && first[0] == owner      ? 0
             : first.size() >= 2 && first[1] == owner ? 1
                                                      : 2;
  if (out.rank == 0) out.behind.assign(first.begin() + 1, first.end());
  if (!first.empty()) out.first = std::move(first[0]);
  out.tracked = tracked;
  out.doorbell_pttl = *doorbell_pttl;
  out.pttl = *pttl;
  if (!fields_at(exec, el[i], out.fields)) return out;
  out.ok = true;
  return out;
}

loop::Request leave_queue(const Keys& k, const std::vector<std::string>& owners,
                          const std::vector<std::string>& ring_too) {
  Builder b;
  b.add("MULTI");
  std::vector<std::string_view> zrem{"ZREM", k.queue};
  for (const std::string& o : owners) zrem.push_back(o);
  b.add(zrem);
  b.add("ZRANGE", k.queue, 0, 1).add("EXEC");
  for (const std::string& o : ring_too) b.add("SET", k.doorbell(o), "1", "XX", "KEEPTTL");
  return b.done();
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

Decision decide(Kind kind, std::string_view owner, const std::vector<std::string>& fields,
                int permits) {
  bool any_exclusive = false;
  bool any_other = false;
  int other_shared = 0;
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
    if (fk == Kind::shared) ++other_shared;
  }
  if (kind == Kind::shared) {
    if (any_exclusive) return Decision::blocked;
    if (permits > 0 && other_shared >= permits) return Decision::blocked_by_shared_only;
    return Decision::free;
  }
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

bool parse_holder_fields(resp::Frame f, std::vector<std::string>& fields) {
  return !f.empty() && fields_at(f, resp::value_index(f), fields);
}

SharedRead parse_shared_watch(const loop::Replies& r) {
  SharedRead out;
  if (r.size() != 3 || !holders_and_companion(r, out.fields, out.companion_exists)) return out;
  out.ok = true;
  return out;
}

Decision decide_shared(std::string_view owner, const SharedRead& read, int permits) {
  const Decision d = decide(Kind::shared, owner, read.fields, permits);
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

loop::Request shared_grant(const Keys& k, std::string_view owner, std::int64_t ttl_ms,
                           std::uint64_t floor_us, std::int64_t fence_ttl_ms) {
  Builder b;
  b.add("MULTI")
      .add("HSET", k.holders, field(Kind::shared, owner), ttl_ms)
      .add("SET", k.companion(owner), "1", "PX", ttl_ms)
      .add("PEXPIRE", k.holders, ttl_ms, "NX")
      .add("PEXPIRE", k.holders, ttl_ms, "GT");
  return add_fence(b, k, floor_us, true, fence_ttl_ms).add("EXEC").done();
}

AcquireReply parse_shared_grant(resp::Frame exec, bool fence_expires) {
  std::vector<std::size_t> el;
  // HSET SET PEXPIRE PEXPIRE ZADD-GT ZADD-INCR [PEXPIRE fence]
  return watched_grant(exec, 4 + fence_replies(true, fence_expires), 5, el);
}

}  // namespace lockwire::lock::protocol
