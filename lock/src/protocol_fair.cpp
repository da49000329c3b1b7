// The fair exclusive acquire (docs/protocol.md, "Fair order"): one WATCHed read of the holder
// set's size, the wait queue's head and a ticket, then the grant only for the head (or with
// nobody waiting).
#include "protocol_reading.hpp"

namespace lockwire::lock::protocol {

using namespace detail;

loop::Request fair_read(const Keys& k, std::uint64_t floor_us, std::int64_t fence_ttl_ms) {
  Builder b;
  b.add("WATCH", k.holders, k.queue).add("HLEN", k.holders).add("ZRANGE", k.queue, 0, 0);
  // The ticket, raised to the floor like a token: after the fence key expired a newcomer's
  // ticket still sorts behind every waiter's earlier one.
  return add_fence(b, k, floor_us, floor_us > 0, fence_ttl_ms).done();
}

FairRead parse_fair_read(const loop::Replies& r, bool raise_floor, bool fence_expires) {
  FairRead out;
  if (r.size() != 3 + fence_replies(raise_floor, fence_expires)) return out;
  const auto n = single_int(r[1]);
  if (!n) return out;
  out.holders = *n;
  std::vector<std::string> head;
  const resp::Frame q = r[2];
  if (q.empty() || !strings_at(q, resp::value_index(q), head) || head.size() > 1) return out;
  if (!head.empty()) out.head = std::move(head.front());
  if (raise_floor && !single_int(r[3])) return out;  // ZADD GT: 0 or 1
  const resp::Frame t = r[raise_floor ? 4 : 3];
  const auto tok = t.empty() ? std::nullopt : token_at(t, resp::value_index(t));
  if (!tok) return out;
  out.ticket = *tok;
  if (fence_pexpire_sent(raise_floor, fence_expires) && single_int(r[r.size() - 1]) != 1) {
    return out;  // the fence's PEXPIRE
  }
  out.ok = true;
  return out;
}

loop::Request fair_grant(const Keys& k, std::string_view owner, std::int64_t ttl_ms,
                         std::uint64_t floor_us, std::int64_t fence_ttl_ms) {
  Builder b;
  b.add("MULTI")
      .add("HSETNX", k.holders, field(Kind::exclusive, owner), ttl_ms)
      .add("PEXPIRE", k.holders, ttl_ms);
  add_fence(b, k, floor_us, true, fence_ttl_ms);
  return b.add("ZREM", k.queue, owner).add("EXEC").done();
}

AcquireReply parse_fair_grant(resp::Frame exec, bool fence_expires) {
  std::vector<std::size_t> el;
  // HSETNX PEXPIRE ZADD-GT ZADD-INCR [PEXPIRE fence] ZREM
  AcquireReply out = watched_grant(exec, 3 + fence_replies(true, fence_expires), 3, el);
  if (out.outcome != Outcome::granted) return out;
  const auto set = int_at(exec, el[0]);
  if (!set || *set != 1) return AcquireReply{};  // the WATCHed holder set was empty: never 0
  return out;
}

loop::Request head_doorbell(const Keys& k, std::string_view head) {
  return Builder().add("PTTL", k.doorbell(head)).done();
}

std::optional<std::int64_t> parse_pttl(resp::Frame reply) {
  return single_int(reply);
}

loop::Request drop_head(const Keys& k, std::string_view head) {
  return Builder().add("ZREM", k.queue, head).done();
}

}  // namespace lockwire::lock::protocol
