#include "lockwire/resp/reply.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

namespace lockwire::resp {

std::size_t next_sibling(Frame frame, std::size_t i) noexcept {
  if (i >= frame.size()) return frame.size();
  const std::uint32_t d = frame[i].depth;
  std::size_t j = i + 1;
  while (j < frame.size() && frame[j].depth > d) ++j;
  return j;
}

std::size_t skip_attributes(Frame frame, std::size_t i) noexcept {
  while (i < frame.size() && frame[i].type == Type::attribute) i = next_sibling(frame, i);
  return i;
}

void elements(Frame frame, std::size_t i, std::vector<std::size_t>& out) {
  if (i >= frame.size() || !is_aggregate(frame[i].type)) return;
  const std::uint32_t d = frame[i].depth;
  for (std::size_t j = first_element(frame, i); j < frame.size() && frame[j].depth > d;
       j = next_element(frame, j)) {
    out.push_back(j);
  }
}

std::optional<std::int64_t> to_int64(const Node& n) noexcept {
  if (n.type != Type::number && n.type != Type::big_number && n.type != Type::blob_string &&
      n.type != Type::simple_string) {
    return std::nullopt;
  }
  std::string_view s = n.value;
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  // Most numbers in replies are short: up to 18 digits cannot overflow, no from_chars needed.
  if (const bool neg = !s.empty() && s.front() == '-'; s.size() - (neg ? 1 : 0) - 1 < 18) {
    std::int64_t v = 0;
    for (std::size_t i = neg ? 1 : 0; i < s.size(); ++i) {
      const auto d = static_cast<unsigned char>(s[i] - '0');
      if (d > 9) return std::nullopt;
      v = v * 10 + d;
    }
    return neg ? -v : v;
  }
  std::int64_t v = 0;
  const auto res = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || res.ec != std::errc() || res.ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> to_double(const Node& n) noexcept {
  if (n.type != Type::double_ && n.type != Type::number && n.type != Type::blob_string &&
      n.type != Type::simple_string && n.type != Type::big_number) {
    return std::nullopt;
  }
  std::string_view s = n.value;
  bool neg = false;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    neg = s.front() == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return std::nullopt;
  auto lower_is = [&](std::string_view lit) {
    if (s.size() != lit.size()) return false;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if ((s[i] | 0x20) != lit[i]) return false;
    }
    return true;
  };
  if (lower_is("inf") || lower_is("infinity")) {
    return neg ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  }
  if (lower_is("nan") || (s.size() > 4 && (s[0] | 0x20) == 'n' && (s[1] | 0x20) == 'a' &&
                          (s[2] | 0x20) == 'n' && s[3] == '(' && s.back() == ')')) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  if (s.front() == '-' || s.front() == '+') return std::nullopt;
  double v = 0;
  const auto res = std::from_chars(s.data(), s.data() + s.size(), v);
  if (res.ptr != s.data() + s.size()) return std::nullopt;
  if (res.ec == std::errc::result_out_of_range) {
    // Valid text beyond double's range ("1e400", "1e-400"): as strtod, +-inf or +-0.
    const std::string copy(s);
    const double v2 = std::strtod(copy.c_str(), nullptr);
    return neg ? -v2 : v2;
  }
  if (res.ec != std::errc()) return std::nullopt;
  return neg ? -v : v;
}

bool iequals(const Node& n, std::string_view s) noexcept {
  if (!is_string_like(n.type) || n.value.size() != s.size()) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    char a = n.value[i], b = s[i];
    if (a >= 'A' && a <= 'Z') a = static_cast<char>(a + 32);
    if (b >= 'A' && b <= 'Z') b = static_cast<char>(b + 32);
    if (a != b) return false;
  }
  return true;
}

bool is_error(Frame frame) noexcept {
  const std::size_t i = value_index(frame);
  return i < frame.size() && is_error(frame[i]);
}

std::string_view error_code(const Node& n) noexcept {
  if (!is_error(n)) return {};
  const std::size_t sp = n.value.find(' ');
  return n.value.substr(0, sp);
}

OwnedFrame::OwnedFrame(Frame frame) {
  assign(frame);
}
OwnedFrame::OwnedFrame(const OwnedFrame& other) {
  assign(other.frame());
}
OwnedFrame& OwnedFrame::operator=(const OwnedFrame& other) {
  if (this != &other) assign(other.frame());
  return *this;
}

void OwnedFrame::assign(Frame frame) {
  std::size_t total = 0;
  for (const Node& n : frame) total += n.value.size() + n.format.size();
  std::vector<char> bytes(total);
  std::vector<Node> nodes(frame.begin(), frame.end());
  std::size_t at = 0;
  auto copy = [&](std::string_view& v) {
    if (v.empty()) {
      v = {};
      return;
    }
    std::copy(v.begin(), v.end(), bytes.begin() + static_cast<std::ptrdiff_t>(at));
    v = std::string_view(bytes.data() + at, v.size());
    at += v.size();
  };
  for (Node& n : nodes) {
    copy(n.value);
    copy(n.format);
  }
  bytes_ = std::move(bytes);
  nodes_ = std::move(nodes);
}

bool same_frame(Frame a, Frame b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const Node& x = a[i];
    const Node& y = b[i];
    if (x.type != y.type || x.depth != y.depth || x.size != y.size || x.value != y.value ||
        x.format != y.format) {
      return false;
    }
  }
  return true;
}

}  // namespace lockwire::resp
