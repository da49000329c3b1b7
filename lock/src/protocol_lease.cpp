// Release, renew, lease checks, the stale-field cleanup, and the parked hand-off's pop.
#include "lockwire/lock/protocol.hpp"

#include <array>
#include <charconv>
#include <cstdio>
#include <limits>
#include <optional>
#include <span>

#include "lockwire/lock/error.hpp"
#include "lockwire/resp/encoder.hpp"
#include "lockwire/resp/reply.hpp"
#include "protocol_reading.hpp"

namespace lockwire::lock::protocol {

using namespace detail;  // NOLINT(google-build-using-namespace): this file's own helpers

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

loop::Request release(Kind kind, const Keys& k, std::string_view owner, bool wake) {
  if (kind == Kind::exclusive && wake) {
    return Builder()
        .add("HDEL", k.holders, field(Kind::exclusive, owner))
        .add("COPY", k.armed(), k.wake())
        .done();
  }
  return kind == Kind::exclusive ? exclusive_release(k, owner) : shared_release(k, owner);
}

loop::Request park_pop(const Keys& k, std::int64_t armed_ms, std::int64_t timeout_ms) {
  // BZPOPMIN takes seconds, with a fraction: the remaining wait to the millisecond.
  char secs[32];
  const int n = std::snprintf(secs, sizeof secs, "%lld.%03lld",
                              static_cast<long long>(timeout_ms / 1000),
                              static_cast<long long>(timeout_ms % 1000));
  const std::string armed = k.armed();
  return Builder()
      .add("ZADD", armed, "0", "t")
      .add("PEXPIRE", armed, armed_ms)
      .add("BZPOPMIN", k.wake(), std::string_view(secs, static_cast<std::size_t>(n)))
      .done();
}

loop::Request park(const Keys& k, std::int64_t armed_ms, std::int64_t timeout_ms,
                   const loop::Request& block) {
  loop::Request pop = park_pop(k, armed_ms, timeout_ms);
  // Joined by hand, so without a recorded shape: the connection walks these bytes once (the
  // park is not on the uncontended path).
  pop.bytes += block.bytes;
  return loop::Request(std::move(pop.bytes), pop.commands + block.commands,
                       loop::RequestKind::atomic);
}

loop::Request unpark(std::int64_t client_id) {
  return Builder().add("CLIENT", "UNBLOCK", client_id, "TIMEOUT").done();
}

loop::Request kill_client(std::int64_t client_id) {
  return Builder().add("CLIENT", "KILL", "ID", client_id).done();
}

loop::Request park_check() {
  return Builder()
      .add("CLIENT", "UNBLOCK", "0", "TIMEOUT")
      .add("CLIENT", "KILL", "ID", std::numeric_limits<std::int64_t>::max())
      .done();
}

std::string park_check_refusal(const loop::Replies& r) {
  if (r.size() != 2) return "malformed reply to CLIENT UNBLOCK / CLIENT KILL";
  return server_words(r);
}

std::string park_refusal(const loop::Replies& r) {
  if (r.size() != kParkPopReplies) return "malformed reply to the parking pop";
  // Only a refusal that will stay: the ACL's (NOPERM) or a command the server does not have
  // (renamed away). A full server (OOM on the arming ZADD), LOADING and the like pass; the pop
  // still ran, and the next park tries again.
  for (std::size_t i = 0; i < r.size(); ++i) {
    const resp::Frame f = r[i];
    const std::size_t v = resp::value_index(f);
    if (v >= f.size() || !resp::is_error(f[v])) continue;
    const std::string_view words = f[v].value;
    if (words.starts_with("NOPERM") || words.starts_with("ERR unknown command")) {
      return std::string(words);
    }
  }
  return {};
}

ReleaseResult parse_release(Kind kind, const loop::Replies& r) {
  if (r.size() == 0) return ReleaseResult::bad_reply;
  if (kind == Kind::exclusive) {
    const auto n = single_int(r[0]);  // the HDEL (a wake's COPY may follow)
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

bool release_woke_parked(const loop::Replies& r) {
  if (r.size() != 2) return false;
  const auto released = single_int(r[0]), copied = single_int(r[1]);
  return released == 1 && copied == 1;
}

// The reads that say whether a lease is on the server: HEXISTS P{R} <field> [EXISTS P{R}:s:O].

loop::Request renew_watch(Kind kind, const Keys& k, std::string_view owner) {
  Builder b;
  if (kind == Kind::exclusive) {
    b.add("WATCH", k.holders);
  } else {
    b.add("WATCH", k.holders, k.companion(owner));
  }
  return add_lease_reads(b, kind, k, owner).done();
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

loop::Request lease_check(Kind kind, const Keys& k, std::string_view owner, bool track) {
  Builder b;
  if (track) b.add("CLIENT", "CACHING", "YES");  // covers the HEXISTS of the holder set
  return add_lease_reads(b, kind, k, owner).done();
}

RenewCheck parse_lease_check(Kind kind, const loop::Replies& r, bool track) {
  return lease_reads(kind, r, track ? 1 : 0);
}

loop::Request wait_replicas(int n, std::int64_t timeout_ms) {
  return Builder().add("WAIT", n, timeout_ms).done();
}

std::optional<std::int64_t> parse_wait_replicas(resp::Frame reply) {
  const auto n = int_at(reply, resp::value_index(reply));
  if (!n || *n < 0) return std::nullopt;
  return n;
}

loop::Request role_request() { return Builder().add("ROLE").done(); }

// ["master", offset, [[ip, port, offset], ...]]
std::optional<int> parse_role_replicas(resp::Frame reply) {
  if (reply.empty()) return std::nullopt;
  const std::size_t v = resp::value_index(reply);
  if (v >= reply.size() || reply[v].type != resp::Type::array) return std::nullopt;
  std::vector<std::size_t> el;
  resp::elements(reply, v, el);
  if (el.size() != 3 || reply[el[0]].value != "master" ||
      reply[el[2]].type != resp::Type::array) {
    return std::nullopt;
  }
  std::vector<std::size_t> replicas;
  resp::elements(reply, el[2], replicas);
  return static_cast<int>(replicas.size());
}

}  // namespace lockwire::lock::protocol
