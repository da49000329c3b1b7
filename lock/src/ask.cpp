// Redis Cluster's -ASK, followed by each shard Core (docs/protocol.md, "Redis Cluster").
//
// While a slot migrates, its source node answers -ASK <slot> <host:port> for a command whose
// keys it no longer has (all of them: when it has some, it answers -TRYAGAIN), and the target
// node serves the command only after ASKING (whose flag lasts for one command, or until EXEC).
// Nothing of a request refused whole by -ASK ran, so the Core sends it once more to the node ASK
// names — on the router's shard connection to it, with loop::RequestOptions::asking (ASKING
// before every command outside MULTI and before MULTI; a WATCH request's WatchTxn execs its
// block the same way) — and its answer goes to the original handler. The slot map is not
// changed: the next request for the slot goes to the source first again, as Redis asks.
#include "core.hpp"
#include "shard_link.hpp"
#include "lockwire/resp/reply.hpp"

namespace lockwire::lock {

namespace {

using loop::cluster::Redirect;

std::optional<Redirect> redirect_of(resp::Frame f, Redirect::Kind kind) {
  const std::size_t v = resp::value_index(f);
  if (v >= f.size() || !resp::is_error(f[v])) return std::nullopt;
  auto r = loop::cluster::parse_redirect(f[v].value);
  if (!r || r->kind != kind) return std::nullopt;
  return r;
}
std::optional<Redirect> ask_of(resp::Frame f) {
  return redirect_of(f, Redirect::Kind::ask);
}

// The -ASK that refused the whole request (nothing of it ran), or nullopt: a MULTI ... EXEC
// block whose EXEC failed, one of its commands refused with ASK; or plain commands, every one
// refused with ASK.
std::optional<Redirect> refused_by_ask(const loop::Replies& r, bool atomic) {
  if (r.size() == 0) return std::nullopt;
  std::optional<Redirect> ask;
  for (std::size_t i = 0; i < r.size(); ++i) {
    auto a = ask_of(r[i]);
    if (a) {
      ask = std::move(a);
    } else if (!atomic) {
      return std::nullopt;
    }
  }
  if (atomic && !resp::is_error(r.back())) return std::nullopt;
  return ask;
}

loop::RequestOptions asking() {
  loop::RequestOptions o;
  o.asking = true;
  return o;
}

}  // namespace

std::optional<Redirect> Client::Core::moved_in(const loop::Replies& r) {
  if (r.size() == 0) return std::nullopt;
  return redirect_of(r[0], Redirect::Kind::moved);
}

loop::Connection* Client::Core::ask_again(Ec ec, const std::optional<Redirect>& a,
                                          std::uint32_t commands) {
  if (!a || closed || ec != loop::Errc::server_error || !link || regressions.no_ask) {
    return nullptr;
  }
  loop::Connection* t = link->node(a->host, a->port);
  if (t == nullptr) return nullptr;
  if (auto* m = metrics()) {
    m->on_request(commands);
    m->on_redirect("ASK");
  }
  return t;
}

// `o` goes with the request: an acquire block is bound to this stream (its fencing floor is
// this server's clock), and dropping that let a block queued before a partition go out on the
// next stream, to the promoted replica, with the old primary's floor (partition swarm, seed
// 5006066: a token handed out twice). Sent on to the node ASK names, it is bound to that
// connection's current stream (its next one while it has none).
void Client::Core::send_asking(loop::Request r, loop::ReplyHandler h, loop::RequestOptions o) {
  const bool atomic = r.kind == loop::RequestKind::atomic;
  if (regressions.ask_unbound) o = {};  // the bug: the options dropped on the way
  const bool bound = o.this_stream_only;
  auto copy = std::make_shared<loop::Request>(r);
  conn->send(
      std::move(r),
      [w = weak(), copy, atomic, bound, h = std::move(h)](Ec ec, const loop::Replies& rep) mutable {
        auto self = w.lock();
        if (self && ec == loop::Errc::server_error) {
          if (loop::Connection* t =
                  self->ask_again(ec, refused_by_ask(rep, atomic), copy->commands)) {
            loop::RequestOptions again = asking();
            again.this_stream_only = bound;
            if (!bound) return t->send(std::move(*copy), std::move(h), std::move(again));
            // Not written before the target's stream went: for our Core that is a connection
            // lost before anything was sent (tried again through the source, which asks
            // again), not `not_sent`, which waits for our own next probe.
            return t->send(std::move(*copy),
                           [h = std::move(h)](Ec e, const loop::Replies& rr) {
                             h(e == loop::Errc::not_sent ? make_error_code(loop::Errc::connection_lost)
                                                         : e,
                               rr);
                           },
                           std::move(again));
          }
        }
        h(ec, rep);
      },
      std::move(o));
}

void Client::Core::watch_asking(loop::Request r, loop::WatchHandler h) {
  auto copy = std::make_shared<loop::Request>(r);
  conn->watch(std::move(r), [w = weak(), copy, h = std::move(h)](
                                Ec ec, const loop::Replies& rep, loop::WatchTxn txn) mutable {
    auto self = w.lock();
    if (self && !self->closed && ec == loop::Errc::server_error && rep.size() > 0) {
      // A WATCH refused with MOVED (the slot is another shard's now) reaches its caller as a
      // failed read, not through refusal(): tell the router here (its map, the slot's leases);
      // the caller's Failure carries it for the router's retry of the call (moved_in).
      if (auto moved = redirect_of(rep[0], Redirect::Kind::moved)) self->link->moved(*moved);
    }
    // The WATCH itself refused with ASK: the reads after it were refused too, or read nothing
    // of ours (the source no longer has the keys).
    if (self && ec == loop::Errc::server_error && rep.size() > 0) {
      if (loop::Connection* t = self->ask_again(ec, ask_of(rep[0]), copy->commands)) {
        return t->watch(std::move(*copy), std::move(h), asking());
      }
    }
    h(ec, rep, std::move(txn));
  });
}

}  // namespace lockwire::lock
