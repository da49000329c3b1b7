// Small helpers the strategies share: reading RESP frames (push kinds, EXEC elements, scalars).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include "lockwire/resp/node.hpp"
#include "lockwire/resp/reply.hpp"

namespace lockwire::races::detail {

using Ec = std::error_code;

// The first element of a push frame (">2 invalidate ...", ">3 message ch payload", ...).
inline std::string_view push_kind(const resp::Frame& p) {
  if (p.size() < 2 || !resp::is_aggregate(p[0].type)) return {};
  return p[1].value;
}

inline std::string str_of(const resp::Frame& f) {
  if (f.empty()) return {};
  return std::string(f[0].value);
}
inline std::optional<std::int64_t> int_of(const resp::Frame& f) {
  if (f.empty()) return std::nullopt;
  return resp::to_int64(f[resp::value_index(f)]);
}
inline bool is_null(const resp::Frame& f) {
  return f.empty() || f[0].type == resp::Type::null;
}
// The i-th element of an aggregate frame (EXEC reply, push), as a sub-frame.
inline resp::Frame element(const resp::Frame& arr, std::size_t i) {
  if (arr.empty() || !resp::is_aggregate(arr[0].type)) return {};
  const std::uint32_t d = arr[0].depth + 1;
  std::size_t k = 0;
  for (std::size_t pos = 1; pos < arr.size(); ++pos) {
    if (arr[pos].depth != d) continue;
    if (k++ != i) continue;
    std::size_t end = pos + 1;
    while (end < arr.size() && arr[end].depth > d) ++end;
    return arr.subspan(pos, end - pos);
  }
  return {};
}

}  // namespace lockwire::races::detail
