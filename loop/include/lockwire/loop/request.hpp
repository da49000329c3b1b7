// A request for loop::Connection (one or more encoded commands sent back to back), what the
// connection needs to know about its commands (RequestShape), a builder that records that while
// the commands are added (RequestBuilder), and the view of a request's replies (Replies).
//
// Connection::send()/watch() and WatchTxn::exec() accept any Request. One made by RequestBuilder
// carries its shape, so the connection does not walk the bytes again; any other Request (bytes
// assembled by hand, or a built one whose bytes or command count changed since) is checked by
// walking its bytes, with the same rules and the same error texts (RequestShape::of).
//
// The rules (why: the connection shares one stream among many callers and matches replies in
// order): every command is a RESP array of blob strings; RESET, HELLO, MONITOR and CLIENT REPLY
// are refused; transaction-state commands (MULTI EXEC DISCARD WATCH UNWATCH) either form one
// closed MULTI ... EXEC (or DISCARD) block, with only plain commands (no subscribe) before or
// after it (kind atomic: a pipelined step such as "pop, then the block" goes out as one request
// with one reply handler), or the request starts with WATCH and holds no other
// transaction-state command (kind watch, for Connection::watch); (P|S)SUBSCRIBE needs a
// channel, is not allowed inside MULTI, and at most 8 of them fit in one request.
// WatchTxn::exec takes the block alone (RequestShape::block_only).
//
// Implemented in loop/src/request_check.cpp (target lockwire_loop); owned by loop/.
#pragma once

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "lockwire/resp/encoder.hpp"
#include "lockwire/resp/node.hpp"

namespace lockwire::loop {

enum class RequestKind : std::uint8_t {
  plain,   // no transaction-state commands
  atomic,  // one MULTI ... EXEC (or DISCARD) block, plain commands around it, no WATCH
  watch,   // WATCH first, then reads (Connection::watch); set by RequestBuilder only
};

struct Request;

// What a request's commands are, as far as the connection cares: how many commands and reply
// frames, which reply slots (P|S)SUBSCRIBE acknowledgements answer, the kind, or why no
// connection would accept them. Built one command at a time (add), or from encoded bytes (of).
class RequestShape {
 public:
  // A (P|S)SUBSCRIBE: the reply slot it takes, and how many acknowledgement pushes (one per
  // channel) it brings. Its first acknowledgement, or an error reply (NOPERM when the ACL grants
  // no channel access), is its reply.
  struct Subscribe {
    std::uint32_t slot = 0;
    std::uint32_t acks = 0;
    friend bool operator==(const Subscribe&, const Subscribe&) = default;
  };
  static constexpr std::size_t kMaxSubscribes = 8;

  // One more command: its name, its first argument ("" if none or not a string) and its
  // argument count, the name included. After an error further commands are only counted.
  void add(std::string_view name, std::string_view arg1, std::size_t argc) noexcept;

  // Walks encoded commands (RESP arrays of blob strings, as resp::append_command writes them).
  [[nodiscard]] static RequestShape of(std::string_view bytes) noexcept;

  [[nodiscard]] std::uint32_t commands() const noexcept { return commands_; }
  // Reply frames the commands bring ((P|S)UNSUBSCRIBE brings none: pushes only).
  [[nodiscard]] std::uint32_t replies() const noexcept { return replies_; }
  [[nodiscard]] std::span<const Subscribe> subscribes() const noexcept {
    return {subs_.data(), nsubs_};
  }
  // plain / atomic / watch; plain while error() is set.
  [[nodiscard]] RequestKind kind() const noexcept;
  // atomic, and nothing but the block: MULTI first, EXEC (or DISCARD) last (WatchTxn::exec).
  [[nodiscard]] bool block_only() const noexcept;
  // nullptr, or why no connection accepts these commands (a static string).
  [[nodiscard]] const char* error() const noexcept;

  // True when this shape was recorded for `r` as it is now: RequestBuilder's shape of a request
  // whose bytes and command count have not changed since (a cheap check: size and count).
  [[nodiscard]] bool describes(const Request& r) const noexcept;

 private:
  friend class RequestBuilder;
  std::uint32_t commands_ = 0;
  std::uint32_t replies_ = 0;
  std::array<Subscribe, kMaxSubscribes> subs_{};
  std::uint32_t nsubs_ = 0;
  std::uint32_t multis_ = 0, ends_ = 0, unwatches_ = 0, watches_ = 0;
  std::uint8_t first_ = 0, last_ = 0;  // classes of the first and the last command
  bool in_multi_ = false;
  bool misordered_ = false;    // an EXEC/DISCARD outside MULTI, or a MULTI inside one
  bool unsubscribes_ = false;  // (P|S)UNSUBSCRIBE, which an atomic request may not hold
  const char* why_ = nullptr;    // a command-level error (the request-level one is derived)
  std::size_t built_bytes_ = 0;  // RequestBuilder: the size of the bytes this shape describes
  bool built_ = false;
};

// A request: one or more encoded commands (resp::append_command) sent back to back. Either made
// by RequestBuilder (commands, kind and shape filled in), or by hand: then `commands` must be the
// number of commands in `bytes`; `kind` is informative (the connection derives it from the bytes)
// and shape() stays empty.
struct Request {
  Request() = default;
  Request(std::string b, std::uint32_t n = 1, RequestKind k = RequestKind::plain)
      : bytes(std::move(b)), commands(n), kind(k) {}
  std::string bytes;
  std::uint32_t commands = 1;
  RequestKind kind = RequestKind::plain;
  // RequestBuilder's record of the commands (empty for a request made by hand). Only the
  // builder writes it, so a shape always describes the bytes it was recorded for.
  [[nodiscard]] const RequestShape& shape() const noexcept { return shape_; }

 private:
  friend class RequestBuilder;
  RequestShape shape_{};
};

// Builds a Request one command at a time, recording its shape as it goes:
//
//   loop::Request r = loop::RequestBuilder()
//                         .add("MULTI")
//                         .add("SET", key, value, "PX", 3000)
//                         .add("EXEC")
//                         .done();
//
// Arguments are strings or integers (decimal), as for resp::append_command; the first is the
// command name. Problems (e.g. HELLO, EXEC without MULTI) are recorded in shape().error() and
// reported by the connection as Errc::bad_request, exactly as for the same bytes made by hand.
class RequestBuilder {
 public:
  RequestBuilder() { r_.commands = 0; }

  // The argument rule of resp::append_command; the name must be a string.
  template <class Name, class... Args>
  requires(resp::detail::StringLike<Name> &&
           ((resp::detail::StringLike<Args> || resp::detail::Integer<Args>)&&...))
      RequestBuilder& add(const Name& name, const Args&... args) {
    // Integers are written out first; then the command is sized exactly and encoded in one
    // pass: the same bytes as appending argument by argument, in a fraction of the time.
    [[maybe_unused]] char digits[sizeof...(Args) + 1][24];
    [[maybe_unused]] std::size_t used = 0;
    [[maybe_unused]] auto view = [&](const auto& a) -> std::string_view {
      if constexpr (resp::detail::StringLike<std::decay_t<decltype(a)>>) {
        return std::string_view(a);
      } else {
        char* d = digits[used++];
        return {d, static_cast<std::size_t>(std::to_chars(d, d + sizeof digits[0], a).ptr - d)};
      }
    };
    const std::array<std::string_view, 1 + sizeof...(Args)> argv{std::string_view(name),
                                                                 view(args)...};
    append(argv);
    added(std::string_view(name), first_string(args...), argv.size());
    return *this;
  }
  // args[0] is the command name; an empty list is an error (a command needs its name).
  RequestBuilder& add(std::span<const std::string_view> args);
  RequestBuilder& add(std::initializer_list<std::string_view> args) {
    return add(std::span<const std::string_view>(args.begin(), args.size()));
  }

  [[nodiscard]] const RequestShape& shape() const noexcept { return r_.shape_; }
  [[nodiscard]] std::uint32_t commands() const noexcept { return r_.commands; }
  [[nodiscard]] std::size_t size() const noexcept { return used_; }  // bytes so far

  // The request (kind from the shape); the builder starts over empty.
  [[nodiscard]] Request done();

 private:
  void added(std::string_view name, std::string_view arg1, std::size_t argc) noexcept;
  // Encodes one command (argv[0] its name) at the end of the bytes. While building, the
  // string is longer than what was written (used_): it grows by at least doubling (from
  // kFirstReserve bytes, or a buffer kept from an earlier request), so that a command is
  // encoded in place without sizing it exactly first; done() cuts it to used_.
  static constexpr std::size_t kFirstReserve = 512;
  void append(std::span<const std::string_view> argv);
  void grow(std::size_t need);
  static std::string_view first_string() noexcept { return {}; }
  template <class A, class... Rest>
  static std::string_view first_string(const A& a, const Rest&...) noexcept {
    if constexpr (resp::detail::StringLike<A>) {
      return std::string_view(a);
    } else {
      return {};
    }
  }
  Request r_;
  std::size_t used_ = 0;
};

// The replies to one request (one frame per reply slot), valid only during the handler call.
class Replies {
 public:
  Replies() = default;
  Replies(std::span<const resp::Node> nodes, std::span<const std::uint32_t> starts) noexcept
      : nodes_(nodes), starts_(starts) {}
  [[nodiscard]] std::size_t size() const noexcept { return starts_.size(); }
  [[nodiscard]] resp::Frame operator[](std::size_t i) const noexcept {
    const std::size_t b = starts_[i];
    const std::size_t e = i + 1 < starts_.size() ? starts_[i + 1] : nodes_.size();
    return nodes_.subspan(b, e - b);
  }
  [[nodiscard]] resp::Frame back() const noexcept { return (*this)[size() - 1]; }
  // The first n replies, and the replies from the i-th on (empty past the end): the parts of
  // a request's replies that answer its earlier and its later commands (a pop, the block
  // pipelined behind it).
  [[nodiscard]] Replies first(std::size_t n) const noexcept {
    if (n >= size()) return *this;
    return Replies(nodes_.first(starts_[n]), starts_.first(n));
  }
  [[nodiscard]] Replies from(std::size_t i) const noexcept {
    return Replies(nodes_, starts_.subspan(std::min(i, starts_.size())));
  }

 private:
  std::span<const resp::Node> nodes_;
  std::span<const std::uint32_t> starts_;
};

}  // namespace lockwire::loop
