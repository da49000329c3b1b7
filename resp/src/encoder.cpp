#include "lockwire/resp/encoder.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>

namespace lockwire::resp {
namespace {

void append_line(std::string& out, char prefix, std::string_view s) {
  const std::size_t start = out.size();
  out.push_back(prefix);
  out.append(s.data(), s.size());
  // CR/LF would end the line early and desynchronise the reader.
  for (std::size_t i = start + 1; i < out.size(); ++i) {
    if (out[i] == '\r' || out[i] == '\n') out[i] = ' ';
  }
  out.append("\r\n", 2);
}

void append_header(std::string& out, char prefix, std::uint64_t n) {
  char buf[24];
  buf[0] = prefix;
  const auto res = std::to_chars(buf + 1, buf + sizeof(buf) - 2, n);
  char* e = res.ptr;
  *e++ = '\r';
  *e++ = '\n';
  out.append(buf, static_cast<std::size_t>(e - buf));
}

}  // namespace

namespace {
[[nodiscard]] std::size_t decimal_len(std::uint64_t v) noexcept {
  if (v < 10) return 1;
  if (v < 100) return 2;
  std::size_t n = 3;
  for (v /= 1000; v != 0; v /= 10) ++n;
  return n;
}
// `prefix`, v in decimal (len digits), CRLF; returns the end.
char* put_header(char* p, char prefix, std::uint64_t v, std::size_t len) noexcept {
  *p++ = prefix;
  if (len == 1) {
    *p++ = static_cast<char>('0' + v);
  } else {
    char* e = p + len;
    do {
      *--e = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    p += len;
  }
  *p++ = '\r';
  *p++ = '\n';
  return p;
}
}  // namespace

std::size_t command_size(std::span<const std::string_view> args) noexcept {
  std::size_t total = 3 + decimal_len(args.size());
  for (std::string_view a : args) total += 5 + decimal_len(a.size()) + a.size();
  return total;
}

// Copies n bytes; arguments are mostly short (names, keys, numbers), and for them a few
// overlapping fixed-size copies are cheaper than a call to memcpy.
inline void copy_bytes(char* to, const char* from, std::size_t n) noexcept {
  if (n >= 8 && n <= 16) {
    std::memcpy(to, from, 8);
    std::memcpy(to + n - 8, from + n - 8, 8);
  } else if (n >= 4 && n < 8) {
    std::memcpy(to, from, 4);
    std::memcpy(to + n - 4, from + n - 4, 4);
  } else if (n < 4) {
    for (std::size_t i = 0; i < n; ++i) to[i] = from[i];
  } else {
    std::memcpy(to, from, n);
  }
}

std::size_t encode_command(char* out, std::span<const std::string_view> args) noexcept {
  char* p = put_header(out, '*', args.size(), decimal_len(args.size()));
  for (std::string_view a : args) {
    p = put_header(p, '$', a.size(), decimal_len(a.size()));
    copy_bytes(p, a.data(), a.size());
    p += a.size();
    *p++ = '\r';
    *p++ = '\n';
  }
  return static_cast<std::size_t>(p - out);
}

void append_command(std::string& out, std::span<const std::string_view> args) {
  // Sized once and written in place: one resize instead of three appends per argument.
  const std::size_t at = out.size();
  out.resize(at + command_size(args));
  encode_command(out.data() + at, args);
}

void append_simple(std::string& out, std::string_view s) {
  append_line(out, '+', s);
}
void append_error(std::string& out, std::string_view s) {
  append_line(out, '-', s);
}
void append_blob(std::string& out, std::string_view s) {
  detail::append_bulk(out, s);
}

void append_blob_error(std::string& out, std::string_view s, Proto proto) {
  if (proto == Proto::resp2) return append_line(out, '-', s);
  append_header(out, '!', s.size());
  out.append(s.data(), s.size());
  out.append("\r\n", 2);
}

void append_verbatim(std::string& out, std::string_view format, std::string_view text,
                     Proto proto) {
  if (proto == Proto::resp2) return detail::append_bulk(out, text);
  append_header(out, '=', text.size() + 4);
  char fmt[4] = {' ', ' ', ' ', ':'};
  for (std::size_t i = 0; i < 3 && i < format.size(); ++i) fmt[i] = format[i];
  out.append(fmt, 4);
  out.append(text.data(), text.size());
  out.append("\r\n", 2);
}

void append_number(std::string& out, std::int64_t v) {
  detail::append_prefixed_int(out, ':', v);
}

std::size_t format_double(char* buf, double d) noexcept {
  // Redis 7.0 spells infinities itself (libc spellings differ) and uses %.17g for the rest,
  // which glibc prints as "nan" / "-nan" for NaN.
  if (std::isinf(d)) {
    const char* s = d > 0 ? "inf" : "-inf";
    std::size_t n = 0;
    for (; s[n] != '\0'; ++n) buf[n] = s[n];
    return n;
  }
  const int n = std::snprintf(buf, 32, "%.17g", d);
  return n < 0 ? 0 : static_cast<std::size_t>(n);
}

void append_double(std::string& out, double v, Proto proto) {
  char buf[32];
  const std::size_t n = format_double(buf, v);
  if (proto == Proto::resp2) return detail::append_bulk(out, std::string_view(buf, n));
  out.push_back(',');
  out.append(buf, n);
  out.append("\r\n", 2);
}

void append_bool(std::string& out, bool v, Proto proto) {
  if (proto == Proto::resp2) {
    out.append(v ? ":1\r\n" : ":0\r\n", 4);
  } else {
    out.append(v ? "#t\r\n" : "#f\r\n", 4);
  }
}

void append_big_number(std::string& out, std::string_view digits, Proto proto) {
  if (proto == Proto::resp2) return detail::append_bulk(out, digits);
  append_line(out, '(', digits);
}

void append_null(std::string& out, Proto proto) {
  if (proto == Proto::resp2) {
    out.append("$-1\r\n", 5);
  } else {
    out.append("_\r\n", 3);
  }
}

void append_null_array(std::string& out, Proto proto) {
  if (proto == Proto::resp2) {
    out.append("*-1\r\n", 5);
  } else {
    out.append("_\r\n", 3);
  }
}

void append_array_header(std::string& out, std::uint64_t n) {
  append_header(out, '*', n);
}

void append_map_header(std::string& out, std::uint64_t n, Proto proto) {
  if (proto == Proto::resp2) return append_header(out, '*', n * 2);
  append_header(out, '%', n);
}

void append_set_header(std::string& out, std::uint64_t n, Proto proto) {
  append_header(out, proto == Proto::resp2 ? '*' : '~', n);
}

void append_push_header(std::string& out, std::uint64_t n, Proto proto) {
  append_header(out, proto == Proto::resp2 ? '*' : '>', n);
}

void append_attribute_header(std::string& out, std::uint64_t n) {
  append_header(out, '|', n);
}

void append_stream_string_begin(std::string& out) {
  out.append("$?\r\n", 4);
}

void append_stream_chunk(std::string& out, std::string_view s) {
  if (s.empty()) return;  // ";0" would end the string
  append_header(out, ';', s.size());
  out.append(s.data(), s.size());
  out.append("\r\n", 2);
}

void append_stream_string_end(std::string& out) {
  out.append(";0\r\n", 4);
}

void append_stream_aggregate_begin(std::string& out, StreamKind kind) {
  out.append(kind == StreamKind::array ? "*?\r\n"
             : kind == StreamKind::set ? "~?\r\n"
                                       : "%?\r\n",
             4);
}

void append_stream_aggregate_end(std::string& out) {
  out.append(".\r\n", 3);
}

void append_frame(std::string& out, Frame frame) {
  for (const Node& n : frame) {
    switch (n.type) {
      case Type::simple_string:
        append_line(out, '+', n.value);
        break;
      case Type::simple_error:
        append_line(out, '-', n.value);
        break;
      case Type::number:
        append_line(out, ':', n.value);
        break;
      case Type::blob_string:
        detail::append_bulk(out, n.value);
        break;
      case Type::blob_error:
        append_blob_error(out, n.value);
        break;
      case Type::verbatim:
        append_verbatim(out, n.format, n.value);
        break;
      case Type::double_:
        append_line(out, ',', n.value);
        break;
      case Type::boolean:
        append_line(out, '#', n.value);
        break;
      case Type::big_number:
        append_line(out, '(', n.value);
        break;
      case Type::null:
        out.append("_\r\n", 3);
        break;
      case Type::array:
        append_header(out, '*', n.size);
        break;
      case Type::map:
        append_header(out, '%', n.size);
        break;
      case Type::set:
        append_header(out, '~', n.size);
        break;
      case Type::push:
        append_header(out, '>', n.size);
        break;
      case Type::attribute:
        append_header(out, '|', n.size);
        break;
    }
  }
}

}  // namespace lockwire::resp
