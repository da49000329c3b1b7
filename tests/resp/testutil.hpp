// Test helpers: a canonical text dump of frames and whole-buffer parsing.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lockwire/resp/node.hpp"
#include "lockwire/resp/parser.hpp"

namespace lockwire::resp::test {

inline const char* type_name(Type t) {
  switch (t) {
    case Type::simple_string:
      return "simple";
    case Type::simple_error:
      return "error";
    case Type::number:
      return "number";
    case Type::blob_string:
      return "blob";
    case Type::blob_error:
      return "blob_error";
    case Type::verbatim:
      return "verbatim";
    case Type::double_:
      return "double";
    case Type::boolean:
      return "bool";
    case Type::big_number:
      return "big";
    case Type::null:
      return "null";
    case Type::array:
      return "array";
    case Type::map:
      return "map";
    case Type::set:
      return "set";
    case Type::push:
      return "push";
    case Type::attribute:
      return "attribute";
  }
  return "?";
}

// One line per node: "<indent>type[size] value (format)".
inline std::string dump(Frame f) {
  std::string s;
  for (const Node& n : f) {
    s.append(2 * std::size_t{n.depth}, ' ');
    s += type_name(n.type);
    // Appends only: gcc 12 -O3 warns falsely (-Wrestrict) on chained string operator+.
    if (is_aggregate(n.type)) s.append("[").append(std::to_string(n.size)).append("]");
    if (!n.value.empty() || n.type == Type::blob_string || n.type == Type::simple_string) {
      s.append(" '").append(n.value).append("'");
    }
    if (n.type == Type::verbatim) s.append(" (").append(n.format).append(")");
    s += '\n';
  }
  return s;
}

struct Outcome {
  std::vector<std::string> frames;                          // dumps of complete frames
  ParseResult::Status end = ParseResult::Status::complete;  // complete: input ended cleanly
  ParseError error = ParseError::ok;
  std::size_t error_at = 0;  // absolute offset in the whole stream
  bool operator==(const Outcome&) const = default;
};

// Feeds `stream` in pieces whose sizes come from `next_piece` (called with the remaining size),
// keeping unconsumed bytes in a buffer as a connection would.
template <class NextPiece>
Outcome feed(std::string_view stream, NextPiece next_piece, Limits limits = {}) {
  Parser parser(limits);
  Outcome out;
  std::string buf;
  std::size_t base = 0;  // absolute offset of buf[0]
  std::size_t fed = 0;
  while (true) {
    // Drain complete frames from what we have.
    while (true) {
      ParseResult r = parser.parse(buf);
      if (r.status == ParseResult::Status::complete) {
        out.frames.push_back(dump(parser.frame()));
        buf.erase(0, r.consumed);
        base += r.consumed;
        continue;
      }
      if (r.status == ParseResult::Status::error) {
        out.end = r.status;
        out.error = r.error;
        out.error_at = base + r.error_at;
        return out;
      }
      break;
    }
    if (fed == stream.size()) break;
    std::size_t k = next_piece(stream.size() - fed);
    if (k == 0) k = 1;
    if (k > stream.size() - fed) k = stream.size() - fed;
    buf.append(stream.substr(fed, k));
    fed += k;
  }
  out.end = buf.empty() ? ParseResult::Status::complete : ParseResult::Status::incomplete;
  return out;
}

inline Outcome feed_all(std::string_view stream, Limits limits = {}) {
  return feed(
      stream, [](std::size_t rest) { return rest; }, limits);
}
inline Outcome feed_bytes(std::string_view stream, Limits limits = {}) {
  return feed(
      stream, [](std::size_t) { return std::size_t{1}; }, limits);
}

}  // namespace lockwire::resp::test
