// A parsed RESP frame is a flat, pre-order sequence of nodes (no tree of heap objects).
//
// Why flat: one std::vector<Node> is reused for every frame, so steady-state parsing allocates
// nothing, and a frame can be walked, skipped or copied with plain index arithmetic.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace lockwire::resp {

enum class Type : std::uint8_t {
  simple_string,  // +OK
  simple_error,   // -ERR ...
  number,         // :123
  blob_string,    // $3\r\nfoo  (also the completed form of a streamed string $?)
  blob_error,     // !5\r\nerror
  verbatim,       // =8\r\ntxt:text   (Node::format holds "txt", Node::value the text after ':')
  double_,        // ,1.5
  boolean,        // #t / #f
  big_number,     // (12345678901234567890
  null,           // _ , RESP2 $-1 and *-1
  array,          // *N  (streamed *? is delivered as a complete array)
  map,            // %N  (size = number of pairs; 2*size children follow)
  set,            // ~N
  push,           // >N
  attribute,      // |N  (size = pairs; then the 2*size children; then the value it annotates,
                  //      at the same depth as the attribute node itself)
};

[[nodiscard]] constexpr bool is_aggregate(Type t) noexcept {
  return t == Type::array || t == Type::map || t == Type::set || t == Type::push ||
         t == Type::attribute;
}

// Number of direct child nodes an aggregate node of type t with `size` has.
[[nodiscard]] constexpr std::uint64_t child_count(Type t, std::uint64_t size) noexcept {
  return (t == Type::map || t == Type::attribute) ? size * 2 : size;
}

struct Node {
  Type type{};
  std::uint32_t depth = 0;  // 0 for the frame's top-level value
  std::uint64_t size = 0;   // aggregates: element count (pairs for map/attribute); scalars: 0
  std::string_view value;   // scalars: payload bytes as sent (number/double/big: their text;
                            // boolean: "t"/"f"); aggregates and null: empty
  std::string_view format;  // verbatim only: the 3-byte format
};

// A complete frame: nodes[0] is the top-level value (or an attribute annotating it).
// Views point into the caller's input buffer (or the parser's scratch for streamed strings);
// they stay valid until the next Parser call or until the caller changes those bytes.
using Frame = std::span<const Node>;

}  // namespace lockwire::resp
