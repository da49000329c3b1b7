// RESP encoder: commands (arrays of blob strings, the only thing clients send) and every RESP3
// reply type for the simulator, each with the RESP2 form Redis 7.0 sends to a RESP2 client.
//
// Every writer appends to a caller-owned std::string (reuse it across calls: steady state does not
// allocate) and never allocates per argument.
#pragma once

#include <charconv>
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "lockwire/resp/node.hpp"

namespace lockwire::resp {

enum class Proto : std::uint8_t { resp2 = 2, resp3 = 3 };

namespace detail {
// Appends `prefix` + decimal(v) + CRLF.
inline void append_prefixed_int(std::string& out, char prefix, std::int64_t v) {
  char buf[24];
  buf[0] = prefix;
  const auto res = std::to_chars(buf + 1, buf + sizeof(buf) - 2, v);
  char* e = res.ptr;
  *e++ = '\r';
  *e++ = '\n';
  out.append(buf, static_cast<std::size_t>(e - buf));
}

inline void append_bulk(std::string& out, std::string_view s) {
  append_prefixed_int(out, '$', static_cast<std::int64_t>(s.size()));
  out.append(s.data(), s.size());
  out.append("\r\n", 2);
}

template <class T>
concept StringLike = std::convertible_to<const T&, std::string_view>;
template <class T>
concept Integer = std::integral<T> && !std::same_as<T, bool> && !std::same_as<T, char>;

template <class T>
void append_arg(std::string& out, const T& arg) {
  if constexpr (StringLike<T>) {
    append_bulk(out, std::string_view(arg));
  } else {
    static_assert(Integer<T>, "append_command arguments are strings or integers");
    char buf[24];
    const auto res = std::to_chars(buf, buf + sizeof(buf), arg);
    append_bulk(out, std::string_view(buf, static_cast<std::size_t>(res.ptr - buf)));
  }
}
}  // namespace detail

// *N then N blob strings.
void append_command(std::string& out, std::span<const std::string_view> args);
// The same into a caller's buffer of at least command_size(args) bytes; returns the bytes
// written (exactly command_size(args)).
[[nodiscard]] std::size_t command_size(std::span<const std::string_view> args) noexcept;
std::size_t encode_command(char* out, std::span<const std::string_view> args) noexcept;
inline void append_command(std::string& out, std::initializer_list<std::string_view> args) {
  append_command(out, std::span<const std::string_view>(args.begin(), args.size()));
}

// append_command(out, "SET", key, value, "PX", 3000): strings and integers (decimal).
template <class... Args>
requires(sizeof...(Args) > 0 &&
         ((detail::StringLike<Args> ||
           detail::Integer<Args>)&&...)) void append_command(std::string& out,
                                                             const Args&... args) {
  detail::append_prefixed_int(out, '*', static_cast<std::int64_t>(sizeof...(Args)));
  (detail::append_arg(out, args), ...);
}

// --- replies -------------------------------------------------------------------------------
// Simple strings and errors cannot hold CR or LF: those bytes are written as spaces (as Redis
// does for error messages).
void append_simple(std::string& out, std::string_view s);
void append_error(std::string& out, std::string_view s);  // s includes the code: "ERR ..."
void append_blob(std::string& out, std::string_view s);
// RESP2: a simple error (CR/LF as spaces).
void append_blob_error(std::string& out, std::string_view s, Proto proto = Proto::resp3);
// `format` must be 3 bytes ("txt", "mkd"). RESP2: a blob string of `text`.
void append_verbatim(std::string& out, std::string_view format, std::string_view text,
                     Proto proto = Proto::resp3);
void append_number(std::string& out, std::int64_t v);
// As Redis 7.0 addReplyDouble: "%.17g", inf/-inf spelled out. RESP2: a blob string.
void append_double(std::string& out, double v, Proto proto = Proto::resp3);
// RESP2: :1 / :0.
void append_bool(std::string& out, bool v, Proto proto = Proto::resp3);
// `digits` is [+-]?[0-9]+. RESP2: a blob string.
void append_big_number(std::string& out, std::string_view digits, Proto proto = Proto::resp3);
// Null in place of a string (RESP2 $-1) and in place of an aggregate (RESP2 *-1).
void append_null(std::string& out, Proto proto = Proto::resp3);
void append_null_array(std::string& out, Proto proto = Proto::resp3);

// Aggregate headers; the caller then writes the elements.
void append_array_header(std::string& out, std::uint64_t n);
// n pairs. RESP2: an array of 2n elements.
void append_map_header(std::string& out, std::uint64_t n, Proto proto = Proto::resp3);
void append_set_header(std::string& out, std::uint64_t n, Proto proto = Proto::resp3);
// RESP2 has no pushes: an array header (as Redis sends pub/sub messages to RESP2 clients).
void append_push_header(std::string& out, std::uint64_t n, Proto proto = Proto::resp3);
// RESP3 only (Redis never sends attributes to RESP2 clients): n pairs, then the annotated value.
void append_attribute_header(std::string& out, std::uint64_t n);

// Streamed forms (RESP3 only): $? then chunks then the end; *? / ~? / %? then elements then ".".
void append_stream_string_begin(std::string& out);
void append_stream_chunk(std::string& out, std::string_view s);  // empty s is skipped
void append_stream_string_end(std::string& out);
enum class StreamKind : std::uint8_t { array, set, map };
void append_stream_aggregate_begin(std::string& out, StreamKind kind);
void append_stream_aggregate_end(std::string& out);

// Re-encodes a parsed frame in canonical RESP3 (streamed forms and RESP2 nulls become their
// plain RESP3 equivalents; scalar texts are written as received). Forwarding, tests, fuzzing.
void append_frame(std::string& out, Frame frame);

// Writes d exactly as Redis 7.0 prints a double ("%.17g"; "inf" / "-inf"); returns the length.
// buf must hold at least 32 bytes.
std::size_t format_double(char* buf, double d) noexcept;

}  // namespace lockwire::resp
