// The upgrade of a sole shared lease to an exclusive one, in place (docs/protocol.md, "Upgrade"):
// one WATCHed read, then either the promotion or the wait block that declares our intent.
#include "protocol_reading.hpp"

namespace lockwire::lock::protocol {

using namespace detail;

loop::Request upgrade_watch(const Keys& k, std::string_view owner) {
  const std::string companion = k.companion(owner);
  const std::string intent = k.intent();
  return Builder()
      .add("WATCH", k.holders, companion, intent)
      .add("HGETALL", k.holders)
      .add("EXISTS", companion)
      .add("GET", intent)
      .done();
}

UpgradeRead parse_upgrade_watch(const loop::Replies& r) {
  UpgradeRead out;
  if (r.size() != 4 || !holders_and_companion(r, out.fields, out.companion_exists)) return out;
  const resp::Frame g = r[3];
  if (g.empty()) return out;
  const resp::Node& n = g[resp::value_index(g)];
  if (resp::is_null(n)) {
    out.intent.clear();
  } else if (n.type == resp::Type::blob_string || n.type == resp::Type::simple_string) {
    out.intent.assign(n.value);
    if (out.intent.empty()) return out;  // never written empty: not ours to read
  } else {
    return out;
  }
  out.ok = true;
  return out;
}

UpgradeDecision decide_upgrade(std::string_view owner, const std::vector<std::string>& fields,
                               bool companion_exists, std::string_view intent) {
  bool ours = false;
  bool exclusive = false;
  bool readers = false;
  for (const std::string& f : fields) {
    Kind fk{};
    std::string_view fo;
    if (!split_field(f, fk, fo)) {
      exclusive = true;  // unknown field: never treat the set as ours alone
      continue;
    }
    if (fo == owner && fk == Kind::shared) {
      ours = true;
    } else if (fk == Kind::exclusive) {
      exclusive = true;
    } else {
      readers = true;
    }
  }
  if (!ours || !companion_exists) return UpgradeDecision::not_held;
  // Two readers each waiting for the other to leave would both wait out their deadline: the
  // second to ask is refused at once instead.
  if (!intent.empty() && intent != owner) return UpgradeDecision::conflict;
  if (exclusive) return UpgradeDecision::blocked;
  if (readers) return UpgradeDecision::blocked_by_shared_only;
  return UpgradeDecision::free;
}

loop::Request upgrade_grant(const Keys& k, std::string_view owner, std::int64_t ttl_ms,
                            std::uint64_t floor_us, std::int64_t fence_ttl_ms) {
  Builder b;
  b.add("MULTI")
      .add("HDEL", k.holders, field(Kind::shared, owner))
      .add("DEL", k.companion(owner), k.intent())
      .add("HSET", k.holders, field(Kind::exclusive, owner), ttl_ms)
      .add("PEXPIRE", k.holders, ttl_ms);  // the sole holder now: exactly our TTL
  return add_fence(b, k, floor_us, true, fence_ttl_ms).add("EXEC").done();
}

AcquireReply parse_upgrade_grant(resp::Frame exec, bool fence_expires) {
  std::vector<std::size_t> el;
  // HDEL DEL HSET PEXPIRE ZADD-GT ZADD-INCR [PEXPIRE fence]
  return watched_grant(exec, 4 + fence_replies(true, fence_expires), 5, el);
}

loop::Request upgrade_wait(const Keys& k, std::string_view owner, std::int64_t intent_ms,
                           bool track) {
  Builder b;
  b.add("MULTI").add("SET", k.intent(), owner, "PX", intent_ms);
  if (track) b.add("CLIENT", "CACHING", "YES");
  return b.add("PTTL", k.holders).add("HGETALL", k.holders).add("EXEC").done();
}

WaitRead parse_upgrade_wait(resp::Frame exec, bool track, bool& aborted) {
  WaitRead out;
  std::vector<std::size_t> el;
  if (!exec_elements(exec, el, aborted) || aborted) return out;
  if (el.size() != (track ? 4u : 3u)) return out;
  std::size_t i = 0;
  if (resp::is_error(exec[el[i++]])) return out;  // SET: OK
  out.tracked = track && !resp::is_error(exec[el[i++]]);
  const auto pttl = int_at(exec, el[i++]);
  if (!pttl) return out;
  out.pttl = *pttl;
  if (!fields_at(exec, el[i], out.fields)) return out;
  out.ok = true;
  return out;
}

}  // namespace lockwire::lock::protocol
