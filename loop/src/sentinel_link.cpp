// Sentinel discovery's I/O: asking the sentinels one at a time (each question bounded by
// connect_timeout) before each connect, keeping the connection to the sentinel that answered as
// the link subscribed to +switch-master, and dropping the data connection when the master of our
// name moves. Which sentinel to ask, what to ask and what the answers mean is the Discovery
// machine (sentinel.hpp); the link is a loop::Connection of its own (no reconnects, no
// sentinel), so its handshake, pipelining and pushes are the ones of any connection.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "connection_impl.hpp"
#include "handshake.hpp"
#include "sentinel.hpp"

namespace lockwire::loop {

namespace {

bool same_address(const Endpoint& a, const detail::PrimaryAddr& b) noexcept {
  return a.kind == Endpoint::Kind::tcp && a.host == b.host && a.port == b.port;
}

}  // namespace

Connection::Impl::Impl(Connection* s, Loop& l, ConnectionOptions o)
    : self(s), loop(l), opt(std::move(o)), parser(opt.limits) {
  if (!opt.sentinel) {
    server = opt.endpoint;
    return;
  }
  server.host.clear();  // none until a sentinel names one
  server.port = 0;
  std::vector<Endpoint> sentinels = opt.seeds;
  if (sentinels.empty()) sentinels.push_back(opt.endpoint);
  discovery = std::make_unique<detail::Discovery>(std::move(sentinels), opt.sentinel->master_name);
}

// A connection to a sentinel: its address with our TLS, the sentinels' credentials, our name
// and timeouts (no sentinel discovery of its own).
ConnectionOptions Connection::Impl::sentinel_options(const Endpoint& at) const {
  ConnectionOptions lo;
  lo.endpoint.host = at.host;
  lo.endpoint.port = at.port;
  lo.endpoint.tls = opt.endpoint.tls;
  lo.username = opt.sentinel->username;
  lo.password = opt.sentinel->password;
  lo.client_name = opt.client_name;
  lo.connect_timeout = opt.connect_timeout;
  lo.health_check_interval = opt.health_check_interval;
  return lo;
}

// --- asking -------------------------------------------------------------------------------------

void Connection::Impl::discover() {
  if (relink_timer) relink_timer->stop();
  if (watches.empty() && (opt.sentinel->watch_every_sentinel || opt.sentinel->vouch)) {
    watch_sentinels();
  }
  round_for_connect = true;
  if (discovery->active()) return;  // a round re-making the link is under way: it will connect
  switched_during_round.reset();
  discovery->begin();
  ask_sentinel();
}

void Connection::Impl::ask_sentinel() {
  const Endpoint& at = discovery->sentinels()[discovery->current()];
  // The link already talks to this sentinel (it answered last time) and is subscribed.
  const bool reuse = link && link_to.host == at.host && link_to.port == at.port &&
                     link->state() != ConnectionState::disconnected &&
                     link->state() != ConnectionState::closed;
  if (!reuse) {
    drop_link();
    ConnectionOptions lo = sentinel_options(at);
    lo.auto_reconnect = false;  // a lost link is re-made here, possibly to another sentinel
    link_to = lo.endpoint;
    link = std::make_unique<Connection>(loop, std::move(lo));
    const std::uint64_t gen = link_gen;
    link->add_push_handler([this, gen](resp::Frame push) { on_link_push(gen, push); });
    link->add_state_handler(
        [this, gen](ConnectionState s, std::error_code) { on_link_state(gen, s); });
    link->start();
  }
  if (opt.connect_timeout.count() > 0) {  // 0: no bound, as for connecting
    if (!ask_timer) ask_timer = loop.make_timer([this] { on_ask_timeout(); });
    ask_timer->start(opt.connect_timeout);
  }
  const std::uint64_t gen = link_gen;
  const bool subscribe = !reuse;
  link->send(discovery->queries(subscribe),
             [this, gen, subscribe](std::error_code ec, const Replies& r) {
               on_answer(gen, ec, r, subscribe);
             });
}

void Connection::Impl::on_answer(std::uint64_t gen, std::error_code ec, const Replies& replies,
                                 bool subscribed) {
  if (gen != link_gen || !discovery->active()) return;
  if (ask_timer) ask_timer->stop();
  // A refused SUBSCRIBE (an ACL without channels) still leaves the answers: the address is
  // used, only the move is not followed from here (ROLE and -READONLY still catch it).
  const std::size_t n = subscribed ? 3 : 2;
  detail::Discovery::Verdict v;
  if (replies.size() == n) {
    v = discovery->answered(replies[n - 2], replies[n - 1]);
  } else {
    v = discovery->failed(link && !link->last_error().empty() ? link->last_error() : ec.message());
  }
  // `replies` belongs to the link: not used past this point.
  if (v.next != detail::Discovery::Verdict::Next::found) drop_link();
  round_verdict(std::move(v));
}

void Connection::Impl::on_ask_timeout() {
  if (!discovery->active()) return;
  auto v = discovery->failed("no answer within " + detail::format_duration(opt.connect_timeout));
  drop_link();
  round_verdict(std::move(v));
}

void Connection::Impl::round_verdict(detail::Discovery::Verdict v) {
  using Next = detail::Discovery::Verdict::Next;
  switch (v.next) {
    case Next::ask:
      return ask_sentinel();
    case Next::found: {
      relink_attempt = 0;
      if (announced) {
        if (v.primary.host == announced->host && v.primary.port == announced->port) {
          announced.reset();  // the sentinels caught up
        } else if (!switched_during_round) {
          switched_during_round = announced;
        }
      }
      if (switched_during_round) {
        if (v.primary.host != switched_during_round->host ||
            v.primary.port != switched_during_round->port) {
          v.primary.host = switched_during_round->host;
          v.primary.port = switched_during_round->port;
          v.primary.config_epoch.reset();  // the round's epoch was for the other address
        }
        switched_during_round.reset();
      }
      if (round_for_connect) {
        round_for_connect = false;
        server_config_epoch = v.primary.config_epoch;
        Endpoint ep;
        ep.host = std::move(v.primary.host);
        ep.port = v.primary.port;
        ep.tls = opt.endpoint.tls;
        return connect_server(ep);
      }
      // The link was re-made while connected: a move may have happened meanwhile.
      if (stream && !same_address(server, v.primary)) {
        left_primary("sentinel " + detail::describe(link_to) + " names " + v.primary.host + ":" +
                     std::to_string(v.primary.port) + " as the primary of '" + discovery->master() +
                     "', not " + detail::describe(server));
      }
      return;
    }
    case Next::exhausted:
      if (!round_for_connect) return schedule_relink();
      round_for_connect = false;
      last_error = std::move(v.error);
      Guard g(this);
      if (!notify(ConnectionState::disconnected, make_error_code(Errc::connect_failed))) return;
      after_disconnect();
      return;
  }
}

// --- watching -----------------------------------------------------------------------------------

void Connection::Impl::on_link_push(std::uint64_t gen, resp::Frame push) {
  if (gen == link_gen) on_sentinel_push(push, link_to);
}

void Connection::Impl::on_sentinel_push(resp::Frame push, const Endpoint& from) {
  if (const auto moved = detail::parse_new_primary(push, discovery->master())) {
    on_announcement(*moved, from);
  }
}

void Connection::Impl::on_announcement(const detail::Announcement& a, const Endpoint& from) {
  const detail::PrimaryAddr& addr = a.primary;
  // A switch announced while a round is finding the primary is newer than what the round's
  // sentinel said before it (found by the failover swarm, seed 2008652: the round named the
  // old primary, which stays a writable master until it is reconfigured).
  if (discovery->active()) switched_during_round = addr;
  announced = addr;
  if (same_address(server, addr) || server.host.empty()) return;
  std::string why = "sentinel " + detail::describe(from) + ": " + std::string(a.channel()) +
                    " '" + discovery->master() + "' from " + detail::describe(server) + " to " +
                    addr.host + ":" + std::to_string(addr.port);
  if (!stream) {
    // Between streams (the old primary went, e.g. killed, and we are reconnecting): no stream
    // to drop, but what it granted may not be on the announced one (failover swarm, seed
    // 2018743: a holder reconnecting after its primary's restart counted on its lease while a
    // contender was granted on the promoted replica).
    if (state == ConnectionState::closed) return;
    ++moves;
    last_error = std::move(why);
    notify(state, make_error_code(Errc::connection_lost));
    return;
  }
  left_primary(std::move(why));
}

// One connection per sentinel, subscribed to both announcements. The leader of a failover is
// the only sentinel that says +promoted-slave, and it says it the moment its answers start to
// name the promoted replica: a client that watched only another sentinel would keep renewing on
// the old primary (still a writable master) for the ~0.1 s until +switch-master, while a
// contender that asked the leader is granted on the new one (failover swarm: 14 such seeds).
void Connection::Impl::watch_sentinels() {
  const std::uint64_t gen = ++watch_gen;
  for (const Endpoint& at : discovery->sentinels()) {
    ConnectionOptions lo = sentinel_options(at);
    lo.reconnect = opt.reconnect;  // a watch reconnects by itself and subscribes again
    const Endpoint from = lo.endpoint;
    auto w = std::make_unique<Connection>(loop, std::move(lo));
    Connection* c = w.get();
    w->add_push_handler([this, gen, from](resp::Frame push) {
      if (gen == watch_gen) on_sentinel_push(push, from);
    });
    w->add_state_handler([this, gen, c](ConnectionState s, std::error_code) {
      if (gen != watch_gen || s != ConnectionState::ready) return;
      RequestBuilder b;
      b.add("SUBSCRIBE", "+switch-master");
      b.add("SUBSCRIBE", "+promoted-slave");
      // A refused SUBSCRIBE (an ACL without channels) leaves ROLE and -READONLY to catch a move.
      c->send(b.done(), [](std::error_code, const Replies&) {});
    });
    w->start();
    watches.push_back(std::move(w));
  }
  if (!opt.sentinel->vouch) return;
  vouch = std::make_unique<detail::SentinelVouch>(watches.size());
  vouch_asking.assign(watches.size(), false);
  if (!vouch_timer) vouch_timer = loop.make_timer([this] { poll_sentinels(); });
  vouch_timer->start(Nanos{0});
}

// --- vouching (sentinel_vouch.hpp) --------------------------------------------------------------

void Connection::Impl::poll_sentinels() {
  if (!vouch || state == ConnectionState::closed) return;
  const std::uint64_t gen = watch_gen;
  const MonoTime now = loop.now();
  for (std::size_t i = 0; i < watches.size(); ++i) {
    // One question at a time: a sentinel behind a partition must not pile questions up.
    if (vouch_asking[i] || watches[i]->state() != ConnectionState::ready) continue;
    vouch_asking[i] = true;
    RequestBuilder b;
    b.add("SENTINEL", "MASTER", discovery->master());
    b.add("SENTINEL", "SENTINELS", discovery->master());
    watches[i]->send(b.done(), [this, gen, i, now](std::error_code ec, const Replies& r) {
      on_vouch_answer(gen, i, now, ec, r);
    });
  }
  // Until the sentinels vouch, ask often: the first grant waits for them.
  Nanos next = vouch->poll_period();
  if (vouch->until(now) <= now) next = std::min(next, Nanos(std::chrono::milliseconds(100)));
  vouch_timer->start(next);
}

void Connection::Impl::on_vouch_answer(std::uint64_t gen, std::size_t i, MonoTime sent,
                                       std::error_code ec, const Replies& replies) {
  if (gen != watch_gen || !vouch || i >= vouch_asking.size()) return;
  vouch_asking[i] = false;
  if (replies.size() == 2) {
    vouch->answered(i, sent, loop.now(), replies[0], replies[1]);
  } else {
    vouch->unanswered(i, watches[i]->last_error().empty() ? ec.message() : watches[i]->last_error());
  }
  if (vouch_handler) {
    auto h = vouch_handler;  // it may replace itself
    h();
  }
}

void Connection::Impl::on_link_state(std::uint64_t gen, ConnectionState s) {
  if (gen != link_gen || s != ConnectionState::disconnected) return;
  // During a round the question in flight fails on its own and moves the round on.
  if (discovery->active()) return;
  drop_link();  // the watch is lost: re-made after a backoff, possibly with another sentinel
  schedule_relink();
}

void Connection::Impl::drop_link() noexcept {
  ++link_gen;
  link.reset();  // its pending question (if any) reports Errc::closed to a stale generation
}

void Connection::Impl::schedule_relink() {
  if (state == ConnectionState::closed) return;
  if (!relink_timer) relink_timer = loop.make_timer([this] { relink(); });
  relink_timer->start(detail::backoff_delay(opt.reconnect, relink_attempt, loop.random()));
  ++relink_attempt;
}

void Connection::Impl::relink() {
  if (state == ConnectionState::closed || discovery->active()) return;
  round_for_connect = false;
  discovery->begin();
  ask_sentinel();
}

void Connection::Impl::left_primary(std::string why) {
  if (state != ConnectionState::ready && state != ConnectionState::connecting) return;
  ++moves;  // before the state handlers hear of the drop (Connection::moves)
  last_error = std::move(why);
  fail_connection(make_error_code(Errc::connection_lost));
}

void Connection::Impl::stop_sentinels() noexcept {
  if (!discovery) return;
  discovery->cancel();
  round_for_connect = false;
  if (ask_timer) ask_timer->stop();
  if (relink_timer) relink_timer->stop();
  drop_link();
  ++watch_gen;
  watches.clear();
  if (vouch_timer) vouch_timer->stop();
  vouch.reset();
  vouch_asking.clear();
  announced.reset();
}

}  // namespace lockwire::loop
