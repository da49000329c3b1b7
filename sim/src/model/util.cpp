#include "util.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <utility>

namespace lockwire::sim::model {

std::string lower(std::string_view s) {
  std::string r(s);
  for (auto& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

bool ieq(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

std::string_view cstr(std::string_view s) {
  const auto z = s.find('\0');
  return z == std::string_view::npos ? s : s.substr(0, z);
}

bool string2ll(std::string_view s, std::int64_t& out) {
  if (s.empty() || s.size() >= 21) return false;
  if (s.size() == 1 && s[0] == '0') {
    out = 0;
    return true;
  }
  std::size_t i = 0;
  bool neg = false;
  if (s[0] == '-') {
    neg = true;
    i = 1;
    if (s.size() == 1) return false;
  }
  if (s[i] < '1' || s[i] > '9') return false;
  std::uint64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    const std::uint64_t d = static_cast<std::uint64_t>(s[i] - '0');
    if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10) return false;
    v = v * 10 + d;
  }
  if (neg) {
    if (v > static_cast<std::uint64_t>(kLLMax) + 1) return false;
    out = v == static_cast<std::uint64_t>(kLLMax) + 1 ? kLLMin : -static_cast<std::int64_t>(v);
  } else {
    if (v > static_cast<std::uint64_t>(kLLMax)) return false;
    out = static_cast<std::int64_t>(v);
  }
  return true;
}

bool string2d(std::string_view s, double& out) {
  if (s.empty() || s.size() > 5000) return false;
  if (std::isspace(static_cast<unsigned char>(s[0]))) return false;
  std::string tmp(s);
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(tmp.c_str(), &end);
  if (end != tmp.c_str() + tmp.size() || std::isnan(v)) return false;
  if (errno == ERANGE && (v == HUGE_VAL || v == -HUGE_VAL || v == 0)) return false;
  out = v;
  return true;
}

bool glob_match(std::string_view p, std::string_view s, int nesting) {
  if (nesting > 1000) return false;
  std::size_t pi = 0, si = 0;
  while (pi < p.size() && si <= s.size()) {
    switch (p[pi]) {
      case '*': {
        while (pi + 1 < p.size() && p[pi + 1] == '*') ++pi;
        if (pi + 1 == p.size()) return true;
        for (std::size_t k = si; k <= s.size(); ++k)
          if (glob_match(p.substr(pi + 1), s.substr(k), nesting + 1)) return true;
        return false;
      }
      case '?':
        if (si >= s.size()) return false;
        ++si;
        break;
      case '[': {
        if (si >= s.size()) return false;
        ++pi;
        const bool neg = pi < p.size() && p[pi] == '^';
        if (neg) ++pi;
        bool match = false;
        while (true) {
          if (pi < p.size() && p[pi] == '\\' && pi + 1 < p.size()) {
            ++pi;
            if (p[pi] == s[si]) match = true;
          } else if (pi >= p.size() || p[pi] == ']') {
            break;
          } else if (pi + 2 < p.size() && p[pi + 1] == '-') {
            char a = p[pi], b = p[pi + 2];
            if (a > b) std::swap(a, b);
            pi += 2;
            if (s[si] >= a && s[si] <= b) match = true;
          } else if (p[pi] == s[si]) {
            match = true;
          }
          ++pi;
        }
        if (pi >= p.size()) --pi;  // unterminated class: treat end as ']'
        if (neg) match = !match;
        if (!match) return false;
        ++si;
        break;
      }
      case '\\':
        if (pi + 1 < p.size()) ++pi;
        [[fallthrough]];
      default:
        if (si >= s.size() || p[pi] != s[si]) return false;
        ++si;
        break;
    }
    ++pi;
    if (si == s.size()) {
      while (pi < p.size() && p[pi] == '*') ++pi;
      break;
    }
  }
  return pi == p.size() && si == s.size();
}

}  // namespace lockwire::sim::model
