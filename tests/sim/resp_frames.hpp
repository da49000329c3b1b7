// Tiny helpers for the differential suite: find RESP frame boundaries in reply bytes, and
// reduce a frame to its shape (types and sizes, values elided) or sort its elements.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lockwire::sim::test {

// End offset of the complete frame starting at `pos`, or nullopt if more bytes are needed.
inline std::optional<std::size_t> frame_end(std::string_view b, std::size_t pos = 0,
                                            int depth = 0) {
  if (pos >= b.size() || depth > 64) return std::nullopt;
  const auto crlf = b.find("\r\n", pos);
  if (crlf == std::string_view::npos) return std::nullopt;
  const char t = b[pos];
  const std::string_view line = b.substr(pos + 1, crlf - pos - 1);
  std::size_t next = crlf + 2;
  auto num = [&]() -> long long {
    try {
      return std::stoll(std::string(line));
    } catch (...) {
      return -1;
    }
  };
  switch (t) {
    case '$':
    case '!':
    case '=': {
      const long long n = num();
      if (n < 0) return next;
      if (b.size() < next + static_cast<std::size_t>(n) + 2) return std::nullopt;
      return next + static_cast<std::size_t>(n) + 2;
    }
    case '*':
    case '~':
    case '>':
    case '%':
    case '|': {
      long long n = num();
      if (n < 0) return next;
      if (t == '%' || t == '|') n *= 2;
      for (long long i = 0; i < n; ++i) {
        auto e = frame_end(b, next, depth + 1);
        if (!e) return std::nullopt;
        next = *e;
      }
      if (t == '|') return frame_end(b, next, depth + 1);
      return next;
    }
    default:
      return next;
  }
}

// Splits complete frames off the front of `b`.
inline std::vector<std::string> split_frames(std::string_view b, std::size_t* rest = nullptr) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < b.size()) {
    auto e = frame_end(b, pos);
    if (!e) break;
    out.emplace_back(b.substr(pos, *e - pos));
    pos = *e;
  }
  if (rest) *rest = pos;
  return out;
}

// Types and aggregate sizes only: "*2[$?,:?]".
inline std::string shape(std::string_view f, std::size_t& pos) {
  const auto crlf = f.find("\r\n", pos);
  if (crlf == std::string_view::npos) return "<bad>";
  const char t = f[pos];
  const std::string line(f.substr(pos + 1, crlf - pos - 1));
  pos = crlf + 2;
  std::string out(1, t);
  switch (t) {
    case '$':
    case '!':
    case '=': {
      const long long n = std::stoll(line);
      if (n < 0) return out + "null";
      pos += static_cast<std::size_t>(n) + 2;
      return out + "?";
    }
    case '*':
    case '~':
    case '>':
    case '%': {
      long long n = std::stoll(line);
      if (n < 0) return out + "null";
      out += line + "[";
      if (t == '%') n *= 2;
      for (long long i = 0; i < n; ++i) out += shape(f, pos) + ",";
      return out + "]";
    }
    case '_':
      return out;
    default:
      return out + "?";
  }
}
inline std::string shape(std::string_view f) {
  std::size_t pos = 0;
  return shape(f, pos);
}

// The frame with its top-level (or, for [cursor, [keys]] replies, second-level) elements sorted.
inline std::string sorted_elements(std::string_view f) {
  const auto crlf = f.find("\r\n");
  if (crlf == std::string_view::npos) return std::string(f);
  const char t = f[0];
  if (t != '*' && t != '~' && t != '%') return std::string(f);
  std::string header(f.substr(0, crlf + 2));
  std::size_t rest = 0;
  auto elems = split_frames(f.substr(crlf + 2), &rest);
  if (t == '%') {
    std::vector<std::string> pairs;
    for (std::size_t i = 0; i + 1 < elems.size(); i += 2) pairs.push_back(elems[i] + elems[i + 1]);
    elems = pairs;
  }
  for (auto& e : elems)
    if (!e.empty() && (e[0] == '*' || e[0] == '~')) e = sorted_elements(e);
  std::sort(elems.begin(), elems.end());
  for (auto& e : elems) header += e;
  return header;
}

}  // namespace lockwire::sim::test
