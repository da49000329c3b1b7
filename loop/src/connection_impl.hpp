// Private to lockwire_loop: Connection::Impl, shared by
//   connection.cpp  - the public methods; submission, the queue and the transaction lane,
//                     deadlines (the writing half of the multiplexer); loss and close;
//   replies.cpp     - the reading half: frames to requests, pushes, SUBSCRIBE acks;
//   handshake.cpp   - connecting, the handshake (with the Handshake machine, handshake.hpp),
//                     reconnect backoff, ready, the health check;
//   sentinel_link.cpp - sentinel discovery (with the Discovery machine, sentinel.hpp): asking
//                     the sentinels, the link subscribed to +switch-master, following a move.
// See connection.hpp for the behaviour; comments here say how it is done.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "handler_list.hpp"
#include "handshake.hpp"
#include "lockwire/loop/connection.hpp"
#include "lockwire/resp/parser.hpp"
#include "ring.hpp"
#include "sentinel.hpp"
#include "sentinel_vouch.hpp"

namespace lockwire::loop {

struct Connection::Impl final : StreamHandler {
  // What an InFlight entry is: a caller's request, or one of the connection's own.
  enum class Internal : std::uint8_t { user, handshake, ping, unwatch };

  struct Pending {  // not written yet
    std::string bytes;
    std::uint32_t replies = 0;
    std::vector<RequestShape::Subscribe> subs;  // reply slots taken by (P|S)SUBSCRIBE acks
    RequestKind kind = RequestKind::plain;
    ReplyHandler handler;
    WatchHandler whandler;
    ReplyHandler late;
    MonoTime deadline{};
    bool has_deadline = false;
    bool done = false;
    bool this_stream_only = false;  // RequestOptions::this_stream_only
    std::uint64_t epoch = 0;        // the stream it was submitted for
    std::vector<std::uint8_t> asking;  // per reply slot: 1 = an ASKING's (RequestOptions::asking)
  };

  struct InFlight {  // written, awaiting `replies` frames
    // What few requests have, kept out of line so that the common entry stays small (it is
    // made, moved and reset for every request).
    struct Rare {
      std::vector<RequestShape::Subscribe> subs;
      std::vector<std::uint8_t> asking;  // per reply slot: 1 = an ASKING's, not the caller's
      WatchHandler whandler;
      ReplyHandler late;
      std::uint64_t lane_id = 0;  // a WATCH request: the lane it holds
    };
    std::uint32_t replies = 1;
    std::uint32_t got = 0;
    Internal internal = Internal::user;
    bool failed = false;  // outcome_unknown already reported: the reply goes to `late`
    bool has_deadline = false;
    MonoTime deadline{};
    ReplyHandler handler;
    std::unique_ptr<Rare> rare;

    Rare& more() {
      if (!rare) rare = std::make_unique<Rare>();
      return *rare;
    }
    [[nodiscard]] std::span<const RequestShape::Subscribe> subs() const noexcept {
      if (!rare) return {};
      return rare->subs;
    }
    [[nodiscard]] bool asking_slot(std::uint32_t slot) const noexcept {
      return rare && slot < rare->asking.size() && rare->asking[slot] != 0;
    }
    [[nodiscard]] bool watch() const noexcept { return rare && rare->whandler; }
    [[nodiscard]] std::uint64_t lane_id() const noexcept { return rare ? rare->lane_id : 0; }
    // Calls the late-reply handler, if any.
    void late(std::error_code ec, const Replies& replies) const {
      if (rare && rare->late) rare->late(ec, replies);
    }
  };

  // Detects the Connection being destroyed from inside a handler we call.
  struct Guard {
    Impl* impl;
    Guard* prev;
    bool dead = false;
    explicit Guard(Impl* i) : impl(i), prev(i->guards_) { i->guards_ = this; }
    ~Guard() {
      if (!dead) impl->guards_ = prev;
    }
  };

  Connection* self;
  Loop& loop;
  ConnectionOptions opt;
  ConnectionState state = ConnectionState::disconnected;
  std::uint32_t skip_acks = 0;  // SUBSCRIBE acknowledgements still to come after the first
  bool started = false;
  std::unique_ptr<Stream> stream;
  std::vector<std::unique_ptr<Stream>> retired;
  resp::Parser parser;
  std::string inbuf;
  std::deque<Pending> queue;
  std::size_t queue_bytes = 0;
  detail::Ring<InFlight> inflight;  // references do not survive a push (ring.hpp)
  std::uint64_t lane_holder = 0;
  std::uint64_t next_lane = 0;
  detail::Handshake handshake;
  std::string last_error;

  // Multi-command replies are kept until the request's last frame. A node keeps its views
  // into the bytes being read while that read lasts, and is copied into acc_bytes (an
  // AccCopy: offsets, since acc_bytes may move) only when a read ends with the request still
  // incomplete (own_accumulated): a block whose replies come in one read is never copied, and
  // its nodes are handed to the handler as they are.
  struct AccCopy {
    std::size_t node, voff, vlen, foff, flen;
  };
  std::vector<resp::Node> acc_nodes;
  std::vector<AccCopy> acc_copies;
  std::size_t acc_owned = 0;  // acc_nodes[0, acc_owned) no longer view the input
  std::string acc_bytes;
  std::vector<std::uint32_t> acc_starts;
  bool acc_error = false;  // one of the accumulated replies is an error
  void reset_accumulated() noexcept {
    acc_nodes.clear();
    acc_copies.clear();
    acc_owned = 0;
    acc_bytes.clear();
    acc_starts.clear();
    acc_error = false;
  }

  detail::HandlerList<void(resp::Frame)> push_handlers;
  detail::HandlerList<void(ConnectionState, std::error_code)> state_handlers;
  std::uint64_t next_handler_id = 0;

  std::unique_ptr<Timer> deadline_timer;
  MonoTime next_deadline{};
  std::unique_ptr<Timer> reconnect_timer;
  std::uint32_t attempt = 0;
  std::unique_ptr<Timer> health_timer;
  bool health_ping_out = false;
  std::uint64_t bytes_seen = 0;
  int stalled_ticks = 0;  // health ticks in a row with replies owed and no byte received
  std::uint64_t epoch = 0;  // bumped whenever the current stream is torn down

  // The server of the current stream (Connection::server) and what was read at the last ready.
  Endpoint server;
  std::optional<std::uint64_t> server_config_epoch;  // of the round that named `server`
  std::string ready_address;
  std::optional<std::uint64_t> ready_config_epoch;
  std::uint64_t primary_epoch = 0;
  std::uint64_t locate_gen = 0;
  std::uint64_t moves = 0;  // Connection::moves  // answers of an older opt.locate question are ignored

  // Sentinel discovery (set iff opt.sentinel). `link` is the one connection to a sentinel: the
  // one being asked during a round, afterwards the one that answered (discovery->sentinels()
  // front), subscribed to +switch-master. link_gen changes whenever `link` is replaced or
  // dropped, so callbacks of an old link (it reports Errc::closed as it dies) are ignored.
  std::unique_ptr<detail::Discovery> discovery;
  std::unique_ptr<Connection> link;
  Endpoint link_to;
  std::uint64_t link_gen = 0;
  bool round_for_connect = false;    // the round in progress ends in connecting to the primary
  std::unique_ptr<Timer> ask_timer;  // bounds the question to one sentinel
  std::unique_ptr<Timer> relink_timer;
  std::uint32_t relink_attempt = 0;
  // A +switch-master for our master seen while a discovery round runs: it wins over the round.
  std::optional<detail::PrimaryAddr> switched_during_round;
  // The newest primary a sentinel announced (+switch-master, +promoted-slave): wins over a
  // round's answer (the other sentinels name the old primary until they hear the new
  // configuration) until a round names it too, or it fails the connect or the ROLE check.
  std::optional<detail::PrimaryAddr> announced;
  // SentinelOptions::watch_every_sentinel: one subscribed connection per sentinel (they
  // reconnect on their own and subscribe again at each ready).
  std::vector<std::unique_ptr<Connection>> watches;
  std::uint64_t watch_gen = 0;
  void watch_sentinels();
  // SentinelOptions::vouch: every watch is asked SENTINEL MASTER + SENTINEL SENTINELS every
  // poll period (one question in flight per sentinel), and the answers go to `vouch`.
  std::unique_ptr<detail::SentinelVouch> vouch;
  std::unique_ptr<Timer> vouch_timer;
  std::vector<bool> vouch_asking;  // per watch: a question in flight
  std::function<void()> vouch_handler;
  void poll_sentinels();
  void on_vouch_answer(std::uint64_t gen, std::size_t i, MonoTime sent, std::error_code ec,
                       const Replies& replies);
  [[nodiscard]] ConnectionOptions sentinel_options(const Endpoint& at) const;
  // The announced primary could not be connected to or is not a master (by ROLE): back to
  // what the sentinels answer, so a stale announcement never pins the connection.
  void forget_announced_if_server() noexcept {
    if (announced && server.host == announced->host && server.port == announced->port) {
      announced.reset();
    }
  }
  void on_announcement(const detail::Announcement& a, const Endpoint& from);
  void on_sentinel_push(resp::Frame push, const Endpoint& from);  // link's or a watch's

  std::vector<std::function<void()>> deferred;
  std::shared_ptr<Impl*> token = std::make_shared<Impl*>(this);
  Guard* guards_ = nullptr;

  Impl(Connection* s, Loop& l, ConnectionOptions o);  // sentinel_link.cpp: sets up discovery
  ~Impl() override {
    for (Guard* g = guards_; g != nullptr; g = g->prev) g->dead = true;
  }

  // --- connection.cpp ---------------------------------------------------------------------------
  // Handlers never run inside the call that caused them: errors found there go through defer().
  void defer(std::function<void()> fn);
  void fail_later(ReplyHandler h, std::error_code ec);
  void fail_later(WatchHandler h, std::error_code ec);
  // A request that was never written: its handler (watch or plain) gets `e`, later.
  void fail_pending(Pending& p, Errc e) {
    if (p.whandler) return fail_later(std::move(p.whandler), make_error_code(e));
    fail_later(std::move(p.handler), make_error_code(e));
  }
  bool notify(ConnectionState s, std::error_code ec);  // false: a handler destroyed us
  [[nodiscard]] std::size_t output_bytes() const noexcept {
    return queue_bytes + (stream ? stream->write_queue_bytes() : 0);
  }

  void arm_deadline(MonoTime d);
  void on_deadline();
  void rearm_deadline();

  void submit(Pending p);
  [[nodiscard]] bool can_write_now(std::size_t bytes, const RequestOptions& options) const;
  void await_reply(std::uint32_t replies, ReplyHandler& handler, RequestOptions& options);
  bool write_now(std::span<const std::string_view> args, ReplyHandler& handler,
                 RequestOptions& options);
  static constexpr std::size_t kStackCommand = 256;  // write_now() encodes these on the stack
  std::string encode_buf;  // write_now()'s longer commands, reused
  void write_pending(Pending& p);
  // RequestOptions::asking: ASKING before each command outside MULTI and before MULTI.
  static void add_asking(Pending& p);
  void write_internal(std::string bytes, Internal kind, std::uint32_t replies = 1);
  void write_internal_unwatch();
  [[nodiscard]] bool lane_waiters() const noexcept;
  void drain_queue();
  void fail_queued_not_sent();
  void release_lane();
  void txn_exec(std::uint64_t id, Request block, ReplyHandler handler, RequestOptions options);
  void txn_unwatch(std::uint64_t id);
  void retire_stream();
  void fail_connection(std::error_code ec);
  void on_closed(std::error_code ec) override;
  void close();

  // --- replies.cpp ------------------------------------------------------------------------------
  void on_data(std::string_view bytes) override;
  void input_overflow();
  [[nodiscard]] std::uint32_t awaited_sub_ack() const noexcept;
  void on_frame(resp::Frame frame, std::string_view input);
  void accumulate(resp::Frame frame, std::string_view input);
  void copy_accumulated(std::size_t i);
  void own_accumulated();
  void complete(InFlight& f, const Replies& replies, bool error);
  void deliver(InFlight& f, const Replies& replies, bool error);

  // --- handshake.cpp ----------------------------------------------------------------------------
  void connect_now();
  void connect_server(const Endpoint& ep);
  void locate_server();  // connect_now() with opt.locate: asks it, then connect_server()
  void schedule_reconnect();
  void on_connected(std::error_code ec) override;
  void after_disconnect();
  void handshake_reply(resp::Frame frame);
  void on_ready();
  void on_health();

  // --- sentinel_link.cpp ------------------------------------------------------------------------
  void discover();  // connect_now() with sentinels: a round that ends in connect_server()
  void ask_sentinel();
  void on_answer(std::uint64_t gen, std::error_code ec, const Replies& replies, bool subscribed);
  void on_ask_timeout();
  void round_verdict(detail::Discovery::Verdict v);
  void on_link_push(std::uint64_t gen, resp::Frame push);
  void on_link_state(std::uint64_t gen, ConnectionState s);
  void drop_link() noexcept;
  void schedule_relink();
  void relink();
  void left_primary(std::string why);  // drops the connection to a server that is not primary
  void stop_sentinels() noexcept;
};

}  // namespace lockwire::loop
