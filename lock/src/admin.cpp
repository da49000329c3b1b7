// Administrative and by-owner operations: force_release, inspect, and release/renew of a lease
// named by resource + owner id (granted elsewhere: another process, the CLI).
#include "core.hpp"
#include "lockwire/resp/reply.hpp"

namespace lockwire::lock {

// The common check of the by-owner operations: an open client, valid names (the reason in
// last_error).
Ec Client::Core::check_by_owner(std::string_view resource, std::string_view owner) {
  if (Ec ec = check_resource(resource)) return ec;
  return validate_name("owner", owner, opts.limits.max_owner_bytes, &last_error);
}

// An open client and a valid resource name (the reason in last_error).
Ec Client::Core::check_resource(std::string_view resource) {
  if (closed) return Errc::closed;
  // As lock() does: a brace in the prefix would split a resource's keys over slots.
  if (Ec ec = validate_prefix(opts.prefix, opts.limits, &last_error)) return ec;
  return validate_name("resource", resource, opts.limits.max_resource_bytes, &last_error);
}

void Client::Core::release(std::string resource, std::string owner, std::optional<Kind> kind,
                     FailureHandler handler) {
  Core& c = *this;
  if (Ec ec = c.check_by_owner(resource, owner)) {
    return post_failure(c.loop, std::move(handler), Failure(ec, c.last_error));
  }
  const auto keys = protocol::make_keys(c.opts.prefix, resource);
  const loop::MonoTime t0 = c.loop.now();
  // Both kinds when the kind is not known: pipelined, one round trip; an owner holds one kind.
  std::vector<Kind> kinds;
  if (!kind || *kind == Kind::exclusive) kinds.push_back(Kind::exclusive);
  if (!kind || *kind == Kind::shared) kinds.push_back(Kind::shared);
  struct Tally {
    std::size_t left = 0;
    bool released = false;
    Failure error;
    FailureHandler h;
  };
  auto tally = std::make_shared<Tally>();
  tally->left = kinds.size();
  tally->h = std::move(handler);
  for (Kind k : kinds) {
    c.send(c.release_request(k, keys, owner),
           c.guard([k, tally, resource, t0](Core* self, Ec ec2, const loop::Replies& r) {
             if (!tally->error.ec) {
               if (is_transport(ec2) || r.size() == 0) {
                 tally->error = self->transport(ec2);
               } else {
                 switch (protocol::parse_release(k, r)) {
                   case protocol::ReleaseResult::released:
                     tally->released = true;
                     break;
                   case protocol::ReleaseResult::not_held:
                     break;
                   case protocol::ReleaseResult::bad_reply:
                     tally->error = self->refusal(r, resource);
                     break;
                 }
               }
             }
             if (--tally->left != 0) return;
             Failure out;
             if (!tally->released) out = tally->error.ec ? tally->error : Failure(Errc::not_held);
             if (auto* m = self->metrics()) {
               m->on_op(Op::release, k, resource, out.ec, self->loop.now() - t0);
             }
             if (tally->h) tally->h(out);
           }));
  }
}

void Client::Core::renew(std::string resource, std::string owner, std::optional<Kind> kind, Nanos ttl,
                   FailureHandler handler) {
  Core& c = *this;
  Ec ec = c.check_by_owner(resource, owner);
  if (!ec) ec = validate_ttl(ttl, c.opts.limits, &c.last_error);
  if (ec) return post_failure(c.loop, std::move(handler), Failure(ec, c.last_error));
  c.renew_owner(std::move(resource), std::move(owner), kind.value_or(Kind::exclusive),
                !kind.has_value(), ttl, std::move(handler));
}

void Client::Core::force_release(std::string resource,
                           std::function<void(const Failure&, std::size_t)> h) {
  Core& c = *this;
  if (Ec ec = c.check_resource(resource)) {
    c.loop.post([h = std::move(h), f = Failure(ec, c.last_error)] {
      if (h) h(f, 0);
    });
    return;
  }
  auto keys = protocol::make_keys(c.opts.prefix, resource);
  const loop::MonoTime t0 = c.loop.now();
  c.send(protocol::force_release(keys),
         c.guard([keys, t0, resource = std::move(resource), h = std::move(h)](
             Core* self, Ec ec2, const loop::Replies& r) mutable {
           std::vector<std::string> fields;
           Failure res;
           if (is_transport(ec2) || r.size() == 0) {
             res = self->transport(ec2);
           } else if (!protocol::parse_force_release(r.back(), fields)) {
             res = self->refusal(r, keys.holders);
           }
           if (auto* m = self->metrics()) {
             m->on_op(Op::force_release, Kind::exclusive, resource, res.ec, self->loop.now() - t0);
           }
           std::vector<std::string> owners;
           for (const auto& f : fields) {
             Kind k{};
             std::string_view o;
             if (protocol::split_field(f, k, o) && k == Kind::shared) owners.emplace_back(o);
           }
           if (!owners.empty()) {
             self->send(protocol::delete_companions(keys, owners), [](Ec, const loop::Replies&) {});
           }
           if (h) h(res, fields.size());
         }));
  // The notice goes right behind the block (same write), in a block of its own: the notice key
  // lives outside the resource's hash slot.
  c.send(protocol::force_notice(c.notice_key, resource), [](Ec, const loop::Replies&) {});
}

void Client::Core::inspect(std::string resource,
                     std::function<void(const Failure&, const LockInfo&)> h) {
  Core& c = *this;
  if (Ec ec = c.check_resource(resource)) {
    c.loop.post([h = std::move(h), f = Failure(ec, c.last_error)] {
      if (h) h(f, LockInfo{});
    });
    return;
  }
  auto keys = protocol::make_keys(c.opts.prefix, resource);
  c.send(protocol::inspect(keys), c.guard([keys, h = std::move(h)](Core* self, Ec ec2,
                                                                   const loop::Replies& r) mutable {
    if (is_transport(ec2) || r.size() == 0) return h(self->transport(ec2), LockInfo{});
    protocol::InspectReply rep = protocol::parse_inspect(r.back());
    if (!rep.ok) return h(self->refusal(r, keys.holders), LockInfo{});
    auto info = std::make_shared<LockInfo>();
    info->holders = std::move(rep.holders);
    info->last_token = rep.last_token;
    info->pttl_ms = rep.pttl;
    std::vector<std::string> owners;
    for (const auto& hd : info->holders) {
      if (hd.kind == Kind::shared) owners.push_back(hd.owner);
    }
    if (owners.empty()) return h(Failure{}, *info);
    self->send(protocol::companion_ttls(keys, owners),
               self->guard([info, h = std::move(h)](Core* s, Ec ec3, const loop::Replies& r3) {
                 if (is_transport(ec3)) return h(s->transport(ec3), LockInfo{});
                 std::size_t i = 0;
                 for (auto& hd : info->holders) {
                   if (hd.kind != Kind::shared) continue;
                   if (i < r3.size()) {
                     const resp::Frame f = r3[i];
                     if (!f.empty()) {
                       if (auto v = resp::to_int64(f[resp::value_index(f)])) hd.ttl_ms = *v;
                     }
                   }
                   ++i;
                 }
                 h(Failure{}, *info);
               }));
  }));
}

}  // namespace lockwire::lock
