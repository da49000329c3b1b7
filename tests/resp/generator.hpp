// Random valid RESP streams for property tests, with the dump the parser must produce.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "lockwire/resp/encoder.hpp"
#include "testutil.hpp"

namespace lockwire::resp::test {

// splitmix64: tiny, deterministic everywhere.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : s_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : next() % n; }
  bool chance(unsigned percent) { return below(100) < percent; }

 private:
  std::uint64_t s_;
};

class Generator {
 public:
  explicit Generator(std::uint64_t seed) : rng_(seed) {}
  Rng& rng() { return rng_; }

  // Appends one top-level frame to `bytes` and its expected dump to `expected`.
  void frame(std::string& bytes, std::string& expected) { value(bytes, expected, 0, true); }

 private:
  std::string text(bool binary, std::size_t max_len = 24) {
    std::string s(rng_.below(max_len + 1), ' ');
    for (char& c : s) {
      if (binary) {
        c = static_cast<char>(rng_.below(256));
      } else {
        do {
          c = static_cast<char>(rng_.below(256));
        } while (c == '\r' || c == '\n');
      }
    }
    return s;
  }

  static void line(std::string& exp, std::uint32_t depth, const char* type, const std::string& v,
                   bool show_empty) {
    exp.append(2 * std::size_t{depth}, ' ');
    exp += type;
    if (!v.empty() || show_empty) exp.append(" '").append(v).append("'");
    exp += '\n';
  }
  static void agg_line(std::string& exp, std::uint32_t depth, const char* type, std::uint64_t n) {
    exp.append(2 * std::size_t{depth}, ' ');
    exp.append(type).append("[").append(std::to_string(n)).append("]\n");
  }

  void value(std::string& out, std::string& exp, std::uint32_t depth, bool top) {
    if (depth < 4 && rng_.chance(8)) {  // an attribute annotating what follows
      const std::uint64_t n = rng_.below(3);
      append_attribute_header(out, n);
      agg_line(exp, depth, "attribute", n);
      for (std::uint64_t i = 0; i < 2 * n; ++i) value(out, exp, depth + 1, false);
    }
    const bool allow_agg = depth < 5;
    switch (rng_.below(allow_agg ? 22 : 14)) {
      case 0: {
        std::string s = text(false);
        append_simple(out, s);
        line(exp, depth, "simple", s, true);
        break;
      }
      case 1: {
        std::string s = text(false);
        append_error(out, s);
        line(exp, depth, "error", s, false);
        break;
      }
      case 2: {
        const auto v = static_cast<std::int64_t>(rng_.next() >> rng_.below(64));
        const std::int64_t sv = rng_.chance(50) ? -v : v;
        append_number(out, sv);
        line(exp, depth, "number", std::to_string(sv), false);
        break;
      }
      case 3:
      case 4: {
        std::string s = text(true, rng_.chance(10) ? 3000 : 24);
        append_blob(out, s);
        line(exp, depth, "blob", s, true);
        break;
      }
      case 5: {
        std::string s = text(true);
        append_blob_error(out, s);
        line(exp, depth, "blob_error", s, false);
        break;
      }
      case 6: {
        std::string s = text(true);
        append_verbatim(out, "txt", s);
        exp.append(2 * std::size_t{depth}, ' ').append("verbatim");
        if (!s.empty()) exp.append(" '").append(s).append("'");
        exp.append(" (txt)\n");
        break;
      }
      case 7: {
        double d;
        const auto pick = rng_.below(6);
        if (pick == 0) {
          d = std::numeric_limits<double>::infinity();
        } else if (pick == 1) {
          d = -std::numeric_limits<double>::infinity();
        } else {
          d = static_cast<double>(static_cast<std::int64_t>(rng_.next())) /
              static_cast<double>(1 + rng_.below(1000000));
        }
        std::string o;
        append_double(o, d);
        out += o;
        line(exp, depth, "double", o.substr(1, o.size() - 3), false);
        break;
      }
      case 8: {
        const bool v = rng_.chance(50);
        append_bool(out, v);
        line(exp, depth, "bool", v ? "t" : "f", false);
        break;
      }
      case 9: {
        std::string s = rng_.chance(50) ? "-" : "";
        const auto n = 1 + rng_.below(40);
        for (std::uint64_t i = 0; i < n; ++i) s += static_cast<char>('0' + rng_.below(10));
        append_big_number(out, s);
        line(exp, depth, "big", s, false);
        break;
      }
      case 10: {
        const auto k = rng_.below(3);
        out += k == 0 ? "_\r\n" : k == 1 ? "$-1\r\n" : "*-1\r\n";
        line(exp, depth, "null", "", false);
        break;
      }
      case 11:
      case 12: {  // streamed string
        std::string all;
        append_stream_string_begin(out);
        const auto chunks = rng_.below(4);
        for (std::uint64_t i = 0; i < chunks; ++i) {
          std::string c = text(true, 10);
          append_stream_chunk(out, c);
          all += c;
        }
        append_stream_string_end(out);
        line(exp, depth, "blob", all, true);
        break;
      }
      case 13: {
        std::string s = text(true, 5);
        append_blob(out, s);
        line(exp, depth, "blob", s, true);
        break;
      }
      default: {  // aggregates
        const auto k = rng_.below(8);
        const std::uint64_t n = rng_.below(5);
        if (k < 4) {
          const char* names[] = {"array", "set", "push", "map"};
          if (k == 0) append_array_header(out, n);
          if (k == 1) append_set_header(out, n);
          if (k == 2) append_push_header(out, n);
          if (k == 3) append_map_header(out, n);
          agg_line(exp, depth, names[k], n);
          const std::uint64_t children = k == 3 ? 2 * n : n;
          for (std::uint64_t i = 0; i < children; ++i) value(out, exp, depth + 1, false);
        } else {
          const auto sk = rng_.below(3);
          const char* names[] = {"array", "set", "map"};
          append_stream_aggregate_begin(out, static_cast<StreamKind>(sk));
          agg_line(exp, depth, names[sk], n);
          const std::uint64_t children = sk == 2 ? 2 * n : n;
          for (std::uint64_t i = 0; i < children; ++i) value(out, exp, depth + 1, false);
          append_stream_aggregate_end(out);
        }
        break;
      }
    }
    (void)top;
  }

  Rng rng_;
};

}  // namespace lockwire::resp::test
