#include "util.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
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

bool string2ld(std::string_view s, long double& out) {
  if (s.empty() || s.size() >= 5 * 1024) return false;
  const std::string tmp(s);
  if (std::isspace(static_cast<unsigned char>(tmp[0]))) return false;
  char* end = nullptr;
  errno = 0;
  const long double v = std::strtold(tmp.c_str(), &end);
  if (*end != '\0' || static_cast<std::size_t>(end - tmp.c_str()) != tmp.size()) return false;
  if (errno == ERANGE && (v == HUGE_VALL || v == -HUGE_VALL || std::fpclassify(v) == FP_ZERO))
    return false;
  if (errno == EINVAL || std::isnan(v)) return false;
  out = v;
  return true;
}

std::string ld_human(long double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[5 * 1024];
  int n = std::snprintf(buf, sizeof buf, "%.17Lf", v);
  if (n <= 0 || static_cast<std::size_t>(n) + 1 > sizeof buf) return "";
  std::string r(buf, static_cast<std::size_t>(n));
  if (r.find('.') != std::string::npos) {
    while (!r.empty() && r.back() == '0') r.pop_back();
    if (!r.empty() && r.back() == '.') r.pop_back();
  }
  if (r.size() == 2 && r[0] == '-' && r[1] == '0') r.erase(0, 1);  // "-0" -> "0"
  return r;
}

std::string d2s(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  if (v == 0) return std::signbit(v) ? "-0" : "0";
  if (v > -4503599627370495.0 && v < 4503599627370496.0 &&
      v == static_cast<double>(static_cast<long long>(v))) {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
    return buf;
  }
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

namespace {

// Redis 7.0.15's stringmatchlen, behaviour for behaviour: a '*' tries every later position of
// the string (not the empty rest), classes take escapes and ranges (either order, "a-]" is a
// range), an unterminated class ends at the pattern's end, a trailing '\\' is literal. What bounds
// it is the shortcut Redis added against exponential patterns: once the pattern after a '*'
// matches nowhere in the rest of the string, no earlier '*' can make it match by taking more, so
// every pending '*' gives up at once (`give_up`). Work is then O(pattern x string) per '*' level.
struct Glob {
  std::string_view p, s;
  bool nocase;
  bool give_up = false;

  [[nodiscard]] char pat(std::size_t i) const { return i < p.size() ? p[i] : '\0'; }
  [[nodiscard]] bool same(char a, char b) const {
    if (!nocase) return a == b;
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  }
  [[nodiscard]] int fold(char ch) const {
    const int v = static_cast<unsigned char>(ch);
    return nocase ? std::tolower(v) : v;
  }

  // Class starting after '[' at `pi`; returns whether s[si] is in it and leaves `pi` on the
  // class's last character (its ']' or the pattern's last).
  bool in_class(std::size_t& pi, char ch) {
    const bool negate = pat(pi) == '^';
    if (negate) ++pi;
    bool hit = false;
    for (;; ++pi) {
      const std::size_t left = p.size() - pi;
      if (pat(pi) == '\\' && left >= 2) {
        ++pi;
        if (p[pi] == ch) hit = true;
      } else if (pat(pi) == ']') {
        break;
      } else if (left == 0) {
        --pi;
        break;
      } else if (left >= 3 && p[pi + 1] == '-') {
        int lo = static_cast<unsigned char>(p[pi]);
        int hi = static_cast<unsigned char>(p[pi + 2]);
        if (lo > hi) std::swap(lo, hi);
        if (nocase) {
          lo = std::tolower(lo);
          hi = std::tolower(hi);
        }
        const int x = fold(ch);
        if (x >= lo && x <= hi) hit = true;
        pi += 2;
      } else if (same(p[pi], ch)) {
        hit = true;
      }
    }
    return negate ? !hit : hit;
  }

  bool match(std::size_t pi, std::size_t si) {
    while (pi < p.size() && si < s.size()) {
      switch (p[pi]) {
        case '*':
          while (pat(pi + 1) == '*') ++pi;
          if (pi + 1 == p.size()) return true;
          for (; si < s.size(); ++si) {
            if (match(pi + 1, si)) return true;
            if (give_up) return false;
          }
          give_up = true;
          return false;
        case '?':
          ++si;
          break;
        case '[':
          ++pi;
          if (!in_class(pi, s[si])) return false;
          ++si;
          break;
        case '\\':
          if (p.size() - pi >= 2) ++pi;
          [[fallthrough]];
        default:
          if (!same(p[pi], s[si])) return false;
          ++si;
          break;
      }
      ++pi;
      if (si == s.size()) {
        while (pat(pi) == '*') ++pi;
        break;
      }
    }
    return pi == p.size() && si == s.size();
  }
};

}  // namespace

bool glob_match(std::string_view pattern, std::string_view s, bool nocase) {
  Glob g{pattern, s, nocase};
  return g.match(0, 0);
}

}  // namespace lockwire::sim::model
