// lock::Watch: a BCAST-tracking connection on the resource's key prefix tells us that something
// changed; Client::inspect reads what; the difference to the previous view becomes events.
#include "lockwire/lock/watch.hpp"

#include <algorithm>
#include <utility>

#include "lockwire/lock/protocol.hpp"

namespace lockwire::lock {

using Ec = std::error_code;
using namespace std::chrono_literals;

HolderView classify(const LockInfo& info) {
  HolderView v;
  v.last_token = info.last_token;
  std::size_t x = 0;
  for (const auto& h : info.holders) {
    if (h.kind == Kind::shared && h.ttl_ms == -2) continue;
    if (h.kind == Kind::exclusive) ++x;
    v.holders.push_back(h);
  }
  if (v.holders.empty()) {
    v.state = HolderView::State::free;
  } else if (x == 0) {
    v.state = HolderView::State::shared;
  } else if (x == 1 && v.holders.size() == 1) {
    v.state = HolderView::State::exclusive;
  } else {
    // An exclusive claimant's field lives for one round trip next to the holder's before the
    // claimant withdraws it (docs/protocol.md): a transient state.
    v.state = HolderView::State::contended;
  }
  return v;
}

const char* state_name(HolderView::State s) noexcept {
  switch (s) {
    case HolderView::State::free:
      return "free";
    case HolderView::State::exclusive:
      return "exclusive";
    case HolderView::State::shared:
      return "shared";
    case HolderView::State::contended:
      return "contended";
  }
  return "?";
}

const char* event_name(WatchEvent::Type t) noexcept {
  switch (t) {
    case WatchEvent::Type::initial:
      return "initial";
    case WatchEvent::Type::acquired:
      return "acquired";
    case WatchEvent::Type::released:
      return "released";
    case WatchEvent::Type::expired:
      return "expired";
  }
  return "?";
}

namespace {
constexpr auto kPollInterval = 500ms;  // tracking refused: re-read this often
constexpr auto kRetryAfter = 250ms;    // a failed read: again after this

std::string holder_id(const protocol::Holder& h) {
  return (h.kind == Kind::shared ? "s:" : "x:") + h.owner;
}
}  // namespace

struct Watch::Impl : std::enable_shared_from_this<Watch::Impl> {
  struct Seen {
    protocol::Holder holder;
    loop::MonoTime ends;  // when the server will expire it, as far as we know
  };

  Impl(Client& c, loop::ConnectionOptions t, std::string r, EventHandler e, NoteHandler n)
      : client(c),
        tracker_opts(std::move(t)),
        resource(std::move(r)),
        keys(protocol::make_keys(c.options().prefix, resource)),
        on_event(std::move(e)),
        on_note(std::move(n)) {}

  Client& client;
  loop::ConnectionOptions tracker_opts;
  std::string resource;
  protocol::Keys keys;
  EventHandler on_event;
  NoteHandler on_note;
  std::unique_ptr<loop::Connection> tracker;
  std::unique_ptr<loop::Timer> retry;
  std::uint64_t client_state_id = 0;
  bool closed = false;
  bool reading = false;
  bool dirty = false;
  bool initial_done = false;
  bool tracker_down = false;
  bool polling = false;
  std::map<std::string, Seen> seen;

  void note(const std::string& s) const {
    if (on_note) on_note(s);
  }

  // The wait queue (P{R}:q) and waiters' doorbells (P{R}:w:<owner>) say nothing about holders.
  [[nodiscard]] bool about_holders(std::string_view k) const {
    if (!k.starts_with(keys.holders) || k == keys.queue) return false;
    std::string_view holders, owner;
    return !(protocol::split_doorbell(k, holders, owner) && holders == keys.holders);
  }

  void start() {
    auto w = weak_from_this();
    retry = client.connection().loop().make_timer([w] {
      if (auto s = w.lock(); s && !s->closed) s->refresh();
    });
    // The reading connection can come back after the tracking one: read again when it does.
    client_state_id = client.connection().add_state_handler([w](loop::ConnectionState st, Ec) {
      auto s = w.lock();
      if (s && !s->closed && st == loop::ConnectionState::ready) s->refresh();
    });
    // On a cluster the resource's keys live on one shard: the tracker connects to its primary
    // (and follows it), whichever node the URL named.
    if (!tracker_opts.sentinel) {
      tracker_opts.locate = [w](const loop::ConnectionOptions::Answer& answer) {
        auto s = w.lock();
        if (!s || s->closed) return answer(std::nullopt, "the watch is closed");
        s->client.locate_for(s->resource, answer);
      };
    }
    tracker = std::make_unique<loop::Connection>(client.connection().loop(), tracker_opts);
    // BCAST tracking on the resource's key prefix: an invalidation for every change of the
    // holder set, the token counter and shared companions — expiry included — with no reads.
    tracker->add_push_handler([w](resp::Frame push) {
      auto s = w.lock();
      if (!s || s->closed) return;
      std::vector<std::string> ks;
      bool all = false;
      if (!protocol::parse_invalidate(push, ks, all)) return;
      bool ours = all;
      for (const auto& k : ks) ours = ours || s->about_holders(k);
      if (ours) s->refresh();
    });
    tracker->add_state_handler([w](loop::ConnectionState st, Ec ec) {
      auto s = w.lock();
      if (s && !s->closed) s->on_tracker_state(st, ec);
    });
    tracker->start();
  }

  void on_tracker_state(loop::ConnectionState st, Ec ec) {
    if (st == loop::ConnectionState::disconnected && ec && !tracker_down) {
      tracker_down = true;  // say it once, not once per reconnect attempt
      note("watch connection lost (" + ec.message() + "); reconnecting");
    }
    if (st != loop::ConnectionState::ready) return;
    if (tracker_down) note("watch connection re-established");
    tracker_down = false;
    tracker->command({"CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", keys.holders},
                     [w = weak_from_this()](Ec tec, const loop::Replies& r) {
                       auto s = w.lock();
                       if (!s || s->closed) return;
                       if (tec && !s->polling) {
                         s->polling = true;
                         std::string words = protocol::server_words(r);
                         if (words.empty()) words = tec.message();
                         s->note("server refused CLIENT TRACKING (" + words +
                                 "); re-reading every 500 ms instead");
                       } else if (!tec) {
                         s->polling = false;
                       }
                       s->refresh();  // changes may have happened while we were not tracking
                     });
  }

  void refresh() {
    if (reading) {
      dirty = true;
      return;
    }
    reading = true;
    client.inspect(resource, [w = weak_from_this()](Ec ec, const LockInfo& info) {
      auto s = w.lock();
      if (!s || s->closed) return;
      s->reading = false;
      if (ec) {
        // Transient (reconnecting): read again shortly, so a change that happened meanwhile is
        // not missed when no further invalidation comes.
        const std::string& why = s->client.last_error();
        s->note("inspect failed: " + (why.empty() ? ec.message() : why));
        if (!s->retry->active()) s->retry->start(kRetryAfter);
      } else {
        s->on_view(classify(info));
        if (s->polling && !s->retry->active()) s->retry->start(kPollInterval);
      }
      if (s->dirty) {
        s->dirty = false;
        s->refresh();
      }
    });
  }

  void emit(WatchEvent::Type t, const protocol::Holder& h, const HolderView& v) {
    if (!on_event) return;
    WatchEvent e;
    e.type = t;
    e.holder = h;
    e.view = v;
    on_event(e);
  }

  void on_view(const HolderView& v) {
    if (v.state == HolderView::State::contended) return;  // wait for the loser to withdraw
    const loop::MonoTime now = client.connection().loop().now();
    std::map<std::string, Seen> next;
    for (const auto& h : v.holders) {
      next[holder_id(h)] =
          Seen{h, now + std::chrono::milliseconds(std::max<std::int64_t>(h.ttl_ms, 0))};
    }
    if (!initial_done) {
      initial_done = true;
      emit(WatchEvent::Type::initial, {}, v);
    } else {
      for (const auto& [id, s] : seen) {
        if (next.count(id) != 0) continue;
        // Gone. Expiry if it vanished around the TTL we last read; before that, a release.
        const bool expired = now + 50ms >= s.ends;
        protocol::Holder h = s.holder;
        h.ttl_ms = 0;
        emit(expired ? WatchEvent::Type::expired : WatchEvent::Type::released, h, v);
        if (closed) return;
      }
      for (const auto& h : v.holders) {
        if (seen.count(holder_id(h)) == 0) emit(WatchEvent::Type::acquired, h, v);
        if (closed) return;
      }
    }
    seen = std::move(next);
  }

  void close() noexcept {
    if (closed) return;
    closed = true;
    if (retry) retry->stop();
    client.connection().remove_state_handler(client_state_id);
    if (tracker) tracker->close();
  }
};

Watch::Watch(Client& client, loop::ConnectionOptions tracker, std::string resource,
             EventHandler on_event, NoteHandler on_note)
    : impl_(std::make_shared<Impl>(client, std::move(tracker), std::move(resource),
                                   std::move(on_event), std::move(on_note))) {}

Watch::~Watch() {
  impl_->close();
}

void Watch::start() {
  impl_->start();
}

void Watch::close() noexcept {
  impl_->close();
}

}  // namespace lockwire::lock
