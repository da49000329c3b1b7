// Helpers for walking parsed frames (see node.hpp for the flat pre-order layout).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "lockwire/resp/node.hpp"

namespace lockwire::resp {

// Index just past the subtree rooted at i (its next sibling, or frame.size()). For an attribute
// node this is the value it annotates.
[[nodiscard]] std::size_t next_sibling(Frame frame, std::size_t i) noexcept;

// Skips attribute nodes (and their pairs) starting at i: the index of the annotated value.
[[nodiscard]] std::size_t skip_attributes(Frame frame, std::size_t i = 0) noexcept;

// Index of the frame's value (after any leading attribute); frame.size() for an empty frame.
[[nodiscard]] inline std::size_t value_index(Frame frame) noexcept {
  return skip_attributes(frame, 0);
}

// Index of the first element of the aggregate at i (attributes skipped); next_element() moves on.
// Use Node::size / child_count() to know how many there are.
[[nodiscard]] inline std::size_t first_element(Frame frame, std::size_t i) noexcept {
  return skip_attributes(frame, i + 1);
}
[[nodiscard]] inline std::size_t next_element(Frame frame, std::size_t i) noexcept {
  return skip_attributes(frame, next_sibling(frame, i));
}

// Indices of the direct elements of the aggregate at i (attributes skipped), appended to out.
void elements(Frame frame, std::size_t i, std::vector<std::size_t>& out);

[[nodiscard]] constexpr bool is_string_like(Type t) noexcept {
  return t == Type::simple_string || t == Type::blob_string || t == Type::verbatim ||
         t == Type::simple_error || t == Type::blob_error;
}

// Integer value of a number node, or of a string / big number holding a decimal int64.
[[nodiscard]] std::optional<std::int64_t> to_int64(const Node& n) noexcept;
// Double value of a double or number node, or of a string holding one (RESP2 doubles are blobs).
[[nodiscard]] std::optional<double> to_double(const Node& n) noexcept;

// True when n is string-like and its bytes equal s.
[[nodiscard]] inline bool equals(const Node& n, std::string_view s) noexcept {
  return is_string_like(n.type) && n.value == s;
}
// Same, ASCII case-insensitive (for command names, "OK", "QUEUED", ...).
[[nodiscard]] bool iequals(const Node& n, std::string_view s) noexcept;

[[nodiscard]] constexpr bool is_error(const Node& n) noexcept {
  return n.type == Type::simple_error || n.type == Type::blob_error;
}
// The frame's value (after attributes) is an error.
[[nodiscard]] bool is_error(Frame frame) noexcept;
[[nodiscard]] constexpr bool is_null(const Node& n) noexcept {
  return n.type == Type::null;
}

// First word of an error ("WRONGTYPE", "NOSCRIPT", "ERR"); empty for non-errors.
[[nodiscard]] std::string_view error_code(const Node& n) noexcept;

// An owning copy of a frame: its own bytes and nodes, valid after the input buffer is gone.
class OwnedFrame {
 public:
  OwnedFrame() = default;
  explicit OwnedFrame(Frame frame);
  OwnedFrame(const OwnedFrame& other);
  OwnedFrame& operator=(const OwnedFrame& other);
  OwnedFrame(OwnedFrame&& other) noexcept = default;  // vectors keep their heap buffers
  OwnedFrame& operator=(OwnedFrame&& other) noexcept = default;
  ~OwnedFrame() = default;

  [[nodiscard]] Frame frame() const noexcept { return {nodes_.data(), nodes_.size()}; }
  [[nodiscard]] bool empty() const noexcept { return nodes_.empty(); }
  [[nodiscard]] const Node& operator[](std::size_t i) const noexcept { return nodes_[i]; }
  [[nodiscard]] std::size_t size() const noexcept { return nodes_.size(); }

 private:
  void assign(Frame frame);
  std::vector<char> bytes_;
  std::vector<Node> nodes_;
};

// Structural equality: same types, depths, sizes, bytes and formats.
[[nodiscard]] bool same_frame(Frame a, Frame b) noexcept;

}  // namespace lockwire::resp
