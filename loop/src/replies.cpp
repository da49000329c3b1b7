// The reading half of the multiplexer: bytes from the stream to frames, frames to the requests
// that wait for them in submission order (pipelining; a multi-command request's replies are
// collected until its last one), pushes to the push handlers, and the first acknowledgement
// push of a (P|S)SUBSCRIBE as its reply. Replies to the connection's own requests go to the
// handshake (handshake.cpp) or end a health-check PING.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "connection_impl.hpp"
#include "lockwire/resp/reply.hpp"

namespace lockwire::loop {

namespace {
constexpr std::uint32_t kZero = 0;
}  // namespace

void Connection::Impl::on_data(std::string_view bytes) {
  bytes_seen += bytes.size();
  Guard g(this);
  std::string_view in;
  const bool direct = inbuf.empty();
  if (direct) {
    in = bytes;
  } else {
    if (inbuf.size() + bytes.size() > opt.max_input_bytes) return input_overflow();
    inbuf.append(bytes);
    in = inbuf;
  }
  std::size_t pos = 0;
  while (pos < in.size()) {
    const resp::ParseResult r = parser.parse(in.substr(pos));
    if (r.status == resp::ParseResult::Status::incomplete) break;
    if (r.status == resp::ParseResult::Status::error) {
      const auto pe = resp::make_error_code(r.error);
      last_error = "malformed RESP from server: " + pe.message();
      if (state == ConnectionState::connecting && pos == 0 && !handshake.answered_any()) {
        // Not a Redis that sent a bad frame: something else (HTTP, SSH, a proxy's banner)
        // answered the first command. Its own first bytes say what it is.
        last_error = "the server at " + detail::describe(server) +
                     " does not speak RESP; it sent " + detail::excerpt(in);
      }
      const bool limit = r.error == resp::ParseError::blob_too_long ||
                         r.error == resp::ParseError::aggregate_too_long ||
                         r.error == resp::ParseError::depth_exceeded;
      fail_connection(make_error_code(limit ? Errc::input_limit : Errc::protocol_error));
      return;
    }
    pos += r.consumed;
    const std::uint64_t e = epoch;
    on_frame(parser.frame(), in);
    if (g.dead) return;
    if (e != epoch) return own_accumulated();  // torn down inside a handler: stale bytes
  }
  own_accumulated();  // `in` goes (or moves) now: a block still incomplete keeps copies
  if (direct) {
    if (bytes.size() - pos > opt.max_input_bytes) return input_overflow();
    inbuf.assign(bytes.substr(pos));
  } else {
    inbuf.erase(0, pos);
  }
}

void Connection::Impl::input_overflow() {
  last_error = "a reply exceeded max_input_bytes";
  fail_connection(make_error_code(Errc::input_limit));
}

// The front request's next reply is a (P|S)SUBSCRIBE's: its acknowledgement count, else 0.
std::uint32_t Connection::Impl::awaited_sub_ack() const noexcept {
  if (inflight.empty()) return 0;
  const InFlight& f = inflight.front();
  for (const RequestShape::Subscribe& a : f.subs()) {
    if (a.slot == f.got) return a.acks;
  }
  return 0;
}

namespace {
bool is_sub_ack(resp::Frame push, std::size_t v) noexcept {
  if (push[v].size == 0) return false;
  const std::size_t k = resp::first_element(push, v);
  return k < push.size() &&
         (resp::equals(push[k], "subscribe") || resp::equals(push[k], "psubscribe") ||
          resp::equals(push[k], "ssubscribe"));
}
}  // namespace

void Connection::Impl::on_frame(resp::Frame frame, std::string_view input) {
  const std::size_t v = resp::value_index(frame);
  if (v < frame.size() && frame[v].type == resp::Type::push) {
    if (health_ping_out) bytes_seen += 1;
    // The first acknowledgement of a SUBSCRIBE is also its reply; the others (one per
    // further channel) are only pushes.
    bool as_reply = false;
    if (is_sub_ack(frame, v)) {
      if (skip_acks > 0) {
        --skip_acks;
      } else if (const std::uint32_t acks = awaited_sub_ack(); acks > 0) {
        skip_acks = acks - 1;
        as_reply = true;
      }
    }
    const auto handlers = push_handlers.snapshot();  // handlers may add/remove handlers
    Guard g(this);
    if (!handlers.call_each(g.dead, frame.subspan(v))) return;
    // A handler may have closed the connection (nothing awaits the reply any more).
    if (!as_reply || awaited_sub_ack() == 0) return;
  }
  if (inflight.empty()) {
    last_error = "unsolicited reply from server (no request waiting)";
    fail_connection(make_error_code(Errc::protocol_error));
    return;
  }
  InFlight& front = inflight.front();
  if (front.asking_slot(front.got)) {
    ++front.got;  // an ASKING's reply (RequestOptions::asking), never a request's last
    return;
  }
  if (front.replies == 1) {
    InFlight f = std::move(front);
    inflight.pop_front();
    complete(f, Replies(frame, std::span<const std::uint32_t>(&kZero, 1)), resp::is_error(frame));
    return;
  }
  accumulate(frame, input);
  if (++front.got < front.replies) return;
  InFlight f = std::move(front);
  inflight.pop_front();
  // Moved out first (so that a handler sending a multi-command request can reuse the members),
  // then the copies get their views: a moved short string changes address.
  auto bytes = std::move(acc_bytes);
  auto starts = std::move(acc_starts);
  auto nodes = std::move(acc_nodes);
  const bool error = acc_error;
  for (const AccCopy& c : acc_copies) {
    nodes[c.node].value = std::string_view(bytes.data() + c.voff, c.vlen);
    nodes[c.node].format = std::string_view(bytes.data() + c.foff, c.flen);
  }
  reset_accumulated();
  Guard g(this);
  complete(f, Replies(nodes, starts), error);
  if (g.dead) return;
  // The buffers go back with their capacity, unless a handler started filling new ones: the
  // next block's replies then need no allocation (they regrew for every block before).
  if (acc_bytes.empty() && acc_starts.empty() && acc_nodes.empty()) {
    bytes.clear();
    starts.clear();
    nodes.clear();
    acc_bytes.swap(bytes);
    acc_starts.swap(starts);
    acc_nodes.swap(nodes);
  }
}

namespace {
bool within(std::string_view part, std::string_view whole) noexcept {
  return part.empty() || (std::less_equal<>()(whole.data(), part.data()) &&
                          std::less_equal<>()(part.data() + part.size(),
                                              whole.data() + whole.size()));
}
}  // namespace

// A node's bytes copied into acc_bytes; its views are made again when the block completes.
void Connection::Impl::copy_accumulated(std::size_t i) {
  resp::Node& n = acc_nodes[i];
  if (!n.value.empty() || !n.format.empty()) {
    AccCopy c{i, acc_bytes.size(), n.value.size(), 0, n.format.size()};
    acc_bytes.append(n.value);
    c.foff = acc_bytes.size();
    acc_bytes.append(n.format);
    acc_copies.push_back(c);
  }
  n.value = {};
  n.format = {};
}

void Connection::Impl::accumulate(resp::Frame frame, std::string_view input) {
  acc_starts.push_back(static_cast<std::uint32_t>(acc_nodes.size()));
  if (resp::is_error(frame)) acc_error = true;
  const std::size_t first = acc_nodes.size();
  acc_nodes.insert(acc_nodes.end(), frame.begin(), frame.end());
  // Views into the bytes being read stay views; the parser's own scratch (a value that
  // spanned reads, a streamed string) changes with the next frame, so it is copied now.
  for (std::size_t i = first; i < acc_nodes.size(); ++i) {
    const resp::Node& n = acc_nodes[i];
    if (!within(n.value, input) || !within(n.format, input)) copy_accumulated(i);
  }
}

// Copies the nodes that still view the input into acc_bytes: the read they came from ends.
// acc_nodes[0, acc_owned) were seen here before; the copied ones view nothing until the end.
void Connection::Impl::own_accumulated() {
  for (std::size_t i = acc_owned; i < acc_nodes.size(); ++i) copy_accumulated(i);
  acc_owned = acc_nodes.size();
}

void Connection::Impl::complete(InFlight& f, const Replies& replies, bool error) {
  // With sentinel discovery a -READONLY means the server was demoted under us (a move whose
  // +switch-master we missed); with opt.locate (a cluster shard) so does -MOVED: the caller
  // gets its reply, then the connection goes and locates the primary again.
  std::string_view demoted;
  if (error && (discovery || opt.locate) && f.internal == Internal::user) {
    for (std::size_t i = 0; i < replies.size() && demoted.empty(); ++i) {
      if (detail::is_readonly(replies[i])) demoted = "-READONLY";
      if (opt.locate && detail::is_moved(replies[i])) {
        const std::size_t v = resp::value_index(replies[i]);
        if (!opt.leave_on_moved || opt.leave_on_moved(replies[i][v].value)) demoted = "-MOVED";
      }
    }
  }
  if (demoted.empty()) return deliver(f, replies, error);
  const std::string why = detail::describe(server) + " answered " + std::string(demoted) +
                          ": it is no longer the primary";
  forget_announced_if_server();  // it proved not to be the primary
  Guard g(this);
  deliver(f, replies, error);
  if (g.dead) return;
  left_primary(why);
}

void Connection::Impl::deliver(InFlight& f, const Replies& replies, bool error) {
  const std::error_code ec = error ? make_error_code(Errc::server_error) : std::error_code{};
  switch (f.internal) {
    case Internal::handshake:
      return handshake_reply(replies[0]);
    case Internal::ping:
      health_ping_out = false;
      return;
    case Internal::unwatch:
      return;
    case Internal::user:
      break;
  }
  if (f.failed) {
    f.late(ec, replies);
    return;
  }
  if (f.watch()) {
    InFlight::Rare& r = *f.rare;
    if (r.lane_id != 0 && lane_holder != r.lane_id) {
      // Cannot happen while connected; be safe.
      return r.whandler(make_error_code(Errc::outcome_unknown), Replies{}, WatchTxn{});
    }
    if (ec) {
      // WATCH or a read failed: the caller gets no lane; clear what the server may hold.
      write_internal_unwatch();
      lane_holder = 0;
      Guard g(this);
      r.whandler(ec, replies, WatchTxn{});
      if (g.dead) return;
      drain_queue();
      return;
    }
    r.whandler(ec, replies, WatchTxn(self, r.lane_id, !r.asking.empty()));
    return;
  }
  if (f.handler) f.handler(ec, replies);
}

}  // namespace lockwire::loop
