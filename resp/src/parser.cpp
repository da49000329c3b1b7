#include "lockwire/resp/parser.hpp"

#include <cstring>
#include <limits>

namespace lockwire::resp {
namespace {

constexpr std::size_t kScratchBit = std::size_t{1} << (sizeof(std::size_t) * 8 - 1);

class ParseCategory final : public std::error_category {
 public:
  [[nodiscard]] const char* name() const noexcept override { return "lockwire.resp"; }
  [[nodiscard]] std::string message(int ev) const override {
    switch (static_cast<ParseError>(ev)) {
      case ParseError::ok:
        return "ok";
      case ParseError::bad_type:
        return "unknown type byte";
      case ParseError::bad_length:
        return "malformed length";
      case ParseError::bad_number:
        return "malformed integer";
      case ParseError::bad_double:
        return "malformed double";
      case ParseError::bad_boolean:
        return "malformed boolean";
      case ParseError::bad_big_number:
        return "malformed big number";
      case ParseError::bad_verbatim:
        return "malformed verbatim string";
      case ParseError::bad_terminator:
        return "missing CRLF";
      case ParseError::bad_stream:
        return "malformed streamed value";
      case ParseError::depth_exceeded:
        return "nesting too deep";
      case ParseError::blob_too_long:
        return "blob too long";
      case ParseError::aggregate_too_long:
        return "aggregate too long";
    }
    return "unknown resp parse error";
  }
};

[[nodiscard]] constexpr bool is_digit(char c) noexcept {
  return static_cast<unsigned char>(c - '0') < 10;
}

// The first byte that makes [b, e) not a valid int64 ([+-]?digits), or nullptr if valid.
[[nodiscard]] const char* check_int64(const char* b, const char* e) noexcept {
  const char* p = b;
  bool neg = false;
  if (p != e && (*p == '-' || *p == '+')) {
    neg = *p == '-';
    ++p;
  }
  if (p == e) return p;
  // Magnitude limit: 2^63 for negatives, 2^63-1 otherwise.
  const std::uint64_t lim = neg ? std::uint64_t{1} << 63 : (std::uint64_t{1} << 63) - 1;
  std::uint64_t v = 0;
  for (; p != e; ++p) {
    if (!is_digit(*p)) return p;
    const std::uint64_t d = static_cast<std::uint64_t>(*p - '0');
    if (v > (lim - d) / 10) return p;
    v = v * 10 + d;
  }
  return nullptr;
}

[[nodiscard]] bool ieq(const char* b, const char* e, const char* lit) noexcept {
  const std::size_t n = std::strlen(lit);
  if (static_cast<std::size_t>(e - b) != n) return false;
  for (std::size_t i = 0; i < n; ++i) {
    if ((b[i] | 0x20) != lit[i]) return false;
  }
  return true;
}

// Returns the offending byte, or nullptr when [b, e) is a valid RESP3 double:
//   [+-]? digits [. digits] [(e|E) [+-] digits]   (a leading or trailing '.' is invalid)
//   [+-]? inf | infinity | nan | nan(chars)        (any case: before 7.2 Redis printed NaN with
//                                                    libc %g, e.g. "-nan", "NAN", "nan(0x1)")
[[nodiscard]] const char* check_double(const char* b, const char* e) noexcept {
  const char* p = b;
  if (p != e && (*p == '-' || *p == '+')) ++p;
  if (p == e) return p;
  if (ieq(p, e, "inf") || ieq(p, e, "infinity") || ieq(p, e, "nan")) return nullptr;
  if (e - p > 4 && ieq(p, p + 4, "nan(") && e[-1] == ')') return nullptr;
  auto digits = [&]() {
    const char* s = p;
    while (p != e && is_digit(*p)) ++p;
    return p != s;
  };
  if (!digits()) return p;
  if (p != e && *p == '.') {
    ++p;
    if (!digits()) return p;
  }
  if (p != e && (*p == 'e' || *p == 'E')) {
    ++p;
    if (p != e && (*p == '-' || *p == '+')) ++p;
    if (!digits()) return p;
  }
  return p == e ? nullptr : p;
}

// Parses an unsigned decimal length; false (with *bad at the offending byte) when malformed.
[[nodiscard]] bool parse_len(const char* b, const char* e, std::uint64_t& out,
                             const char** bad) noexcept {
  if (b == e) {
    *bad = e;
    return false;
  }
  std::uint64_t v = 0;
  for (const char* p = b; p != e; ++p) {
    if (!is_digit(*p) || v > (std::numeric_limits<std::uint64_t>::max() >> 2) / 10) {
      *bad = p;
      return false;
    }
    v = v * 10 + static_cast<std::uint64_t>(*p - '0');
  }
  out = v;
  return true;
}

enum : unsigned char { kLine = 1, kBlob = 2, kAgg = 3, kEnd = 4, kChunk = 5 };

struct TypeTable {
  unsigned char kind[256]{};
  constexpr TypeTable() {
    for (char c : {'+', '-', ':', ',', '#', '(', '_'}) kind[static_cast<unsigned char>(c)] = kLine;
    for (char c : {'$', '!', '='}) kind[static_cast<unsigned char>(c)] = kBlob;
    for (char c : {'*', '%', '~', '>', '|'}) kind[static_cast<unsigned char>(c)] = kAgg;
    kind[static_cast<unsigned char>('.')] = kEnd;
    kind[static_cast<unsigned char>(';')] = kChunk;
  }
};
constexpr TypeTable kTypes;

[[nodiscard]] constexpr Type agg_type(char c) noexcept {
  switch (c) {
    case '%':
      return Type::map;
    case '~':
      return Type::set;
    case '>':
      return Type::push;
    case '|':
      return Type::attribute;
    default:
      return Type::array;
  }
}

}  // namespace

const std::error_category& parse_category() noexcept {
  static const ParseCategory cat;
  return cat;
}

std::error_code make_error_code(ParseError e) noexcept {
  return {static_cast<int>(e), parse_category()};
}

Parser::Parser(Limits limits) noexcept : limits_(limits) {}

Frame Parser::frame() const noexcept {
  if (!done_ || failed_.status == ParseResult::Status::error) return {};
  return {nodes_.data(), nodes_.size()};
}

void Parser::reset() noexcept {
  start_frame();
  done_ = true;
  nodes_.clear();
  failed_ = {};
}

void Parser::start_frame() noexcept {
  nodes_.clear();
  refs_.clear();
  stack_.clear();
  scratch_.clear();
  pos_ = need_ = scan_ = stream_start_ = 0;
  in_stream_ = false;
  done_ = false;
}

ParseResult Parser::fail(ParseError e, std::size_t at) noexcept {
  failed_.status = ParseResult::Status::error;
  failed_.error = e;
  failed_.error_at = at;
  failed_.consumed = 0;
  return failed_;
}

// A value (scalar, closed aggregate, finished streamed string) has been completed.
Parser::Step Parser::value_done() noexcept {
  for (;;) {
    if (stack_.empty()) return Step::done;
    Open& o = stack_.back();
    o.after_attr = false;
    if (o.streamed) {
      ++o.seen;
      return Step::more;
    }
    if (--o.remaining != 0) return Step::more;
    const bool attr = o.attribute;
    stack_.pop_back();
    if (attr) return aggregate_done(true);
    // The closed aggregate is itself a completed value of its parent: loop.
  }
}

// An aggregate closed. An attribute is not a value of its parent: the value it annotates follows.
Parser::Step Parser::aggregate_done(bool attribute) noexcept {
  if (!attribute) return value_done();
  if (!stack_.empty()) stack_.back().after_attr = true;
  return Step::more;
}

ParseResult Parser::parse(std::string_view input) {
  if (failed_.status == ParseResult::Status::error) return failed_;
  if (done_) start_frame();
  ParseResult r;
  if (input.size() < need_) return r;

  const char* const b = input.data();
  const std::size_t n = input.size();
  std::size_t p = pos_;

  auto suspend = [&](std::size_t need) {
    pos_ = p;
    need_ = need;
    return r;
  };

  for (;;) {
    if (p >= n) return suspend(p + 1);
    const char t = b[p];
    const unsigned char kind = kTypes.kind[static_cast<unsigned char>(t)];
    if (kind == 0) return fail(ParseError::bad_type, p);
    if (in_stream_ != (kind == kChunk)) return fail(ParseError::bad_stream, p);

    // The header line [p+1, cr); the element's next byte after it is cr + 2.
    std::size_t from = p + 1;
    if (p == pos_ && scan_ > from) from = scan_;
    std::size_t cr;
    {
      const void* hit = from < n ? std::memchr(b + from, '\r', n - from) : nullptr;
      if (hit == nullptr) {
        scan_ = n;
        return suspend(n + 1);
      }
      cr = static_cast<std::size_t>(static_cast<const char*>(hit) - b);
    }
    if (cr + 1 >= n) {
      scan_ = cr;
      return suspend(cr + 2);
    }
    if (b[cr + 1] != '\n') return fail(ParseError::bad_terminator, cr + 1);
    scan_ = 0;
    const char* lb = b + p + 1;  // line content
    const char* le = b + cr;
    std::size_t next = cr + 2;
    const auto depth = static_cast<std::uint32_t>(stack_.size());
    Step step = Step::more;

    switch (kind) {
      case kLine: {
        Type type = Type::simple_string;
        switch (t) {
          case '+':
          case '-': {
            // Simple strings and errors cannot contain LF (CR already ends the line).
            if (t == '-') type = Type::simple_error;
            const void* lf = std::memchr(lb, '\n', static_cast<std::size_t>(le - lb));
            if (lf != nullptr) {
              return fail(ParseError::bad_terminator, static_cast<const char*>(lf) - b);
            }
            break;
          }
          case ':': {
            type = Type::number;
            const char* bad = check_int64(lb, le);
            if (bad != nullptr) return fail(ParseError::bad_number, bad - b);
            break;
          }
          case ',': {
            type = Type::double_;
            const char* bad = check_double(lb, le);
            if (bad != nullptr) return fail(ParseError::bad_double, bad - b);
            break;
          }
          case '#':
            type = Type::boolean;
            if (le - lb != 1 || (*lb != 't' && *lb != 'f')) {
              const bool tf = lb != le && (*lb == 't' || *lb == 'f');
              return fail(ParseError::bad_boolean, (lb - b) + (tf ? 1 : 0));
            }
            break;
          case '(': {
            type = Type::big_number;
            const char* q = lb;
            if (q != le && (*q == '-' || *q == '+')) ++q;
            if (q == le) return fail(ParseError::bad_big_number, q - b);
            for (; q != le; ++q) {
              if (!is_digit(*q)) return fail(ParseError::bad_big_number, q - b);
            }
            break;
          }
          default:  // '_'
            type = Type::null;
            if (lb != le) return fail(ParseError::bad_terminator, lb - b);
            break;
        }
        nodes_.push_back(Node{type, depth, 0, {}, {}});
        refs_.push_back(Ref{p + 1, cr - p - 1});
        p = next;
        step = value_done();
        break;
      }

      case kBlob: {
        if (t == '$' && le - lb == 1 && *lb == '?') {
          nodes_.push_back(Node{Type::blob_string, depth, 0, {}, {}});
          refs_.push_back(Ref{kScratchBit | scratch_.size(), 0});
          stream_start_ = scratch_.size();
          in_stream_ = true;
          p = next;
          break;
        }
        if (t == '$' && le - lb == 2 && lb[0] == '-' && lb[1] == '1') {
          nodes_.push_back(Node{Type::null, depth, 0, {}, {}});
          refs_.push_back(Ref{});
          p = next;
          step = value_done();
          break;
        }
        std::uint64_t len = 0;
        const char* bad = nullptr;
        if (!parse_len(lb, le, len, &bad)) return fail(ParseError::bad_length, bad - b);
        if (len > limits_.max_blob) return fail(ParseError::blob_too_long, p + 1);
        if (n - next < len + 2) {
          // Resume at the header (cheap to re-read) once the whole body can be there.
          pos_ = p;
          need_ = next + len + 2;
          scan_ = 0;
          return r;
        }
        const std::size_t end = next + len;
        if (b[end] != '\r') return fail(ParseError::bad_terminator, end);
        if (b[end + 1] != '\n') return fail(ParseError::bad_terminator, end + 1);
        if (t == '=') {
          if (len < 4) return fail(ParseError::bad_verbatim, next + len);
          if (b[next + 3] != ':') return fail(ParseError::bad_verbatim, next + 3);
          nodes_.push_back(Node{Type::verbatim, depth, 0, {}, {}});
          refs_.push_back(Ref{next + 4, len - 4});
        } else {
          nodes_.push_back(Node{t == '$' ? Type::blob_string : Type::blob_error, depth, 0, {}, {}});
          refs_.push_back(Ref{next, len});
        }
        p = end + 2;
        step = value_done();
        break;
      }

      case kChunk: {
        std::uint64_t len = 0;
        const char* bad = nullptr;
        if (!parse_len(lb, le, len, &bad)) return fail(ParseError::bad_stream, bad - b);
        if (len == 0) {
          refs_.back().len = scratch_.size() - stream_start_;
          in_stream_ = false;
          p = next;
          step = value_done();
          break;
        }
        if (len > limits_.max_blob || scratch_.size() - stream_start_ > limits_.max_blob - len) {
          return fail(ParseError::blob_too_long, p + 1);
        }
        if (n - next < len + 2) {
          pos_ = p;
          need_ = next + len + 2;
          scan_ = 0;
          return r;
        }
        const std::size_t end = next + len;
        if (b[end] != '\r') return fail(ParseError::bad_terminator, end);
        if (b[end + 1] != '\n') return fail(ParseError::bad_terminator, end + 1);
        scratch_.append(b + next, len);
        p = end + 2;
        break;
      }

      case kAgg: {
        const Type type = agg_type(t);
        bool streamed = false;
        std::uint64_t count = 0;
        if (le - lb == 1 && *lb == '?') {
          if (t != '*' && t != '%' && t != '~') return fail(ParseError::bad_length, lb - b);
          streamed = true;
        } else if (t == '*' && le - lb == 2 && lb[0] == '-' && lb[1] == '1') {
          nodes_.push_back(Node{Type::null, depth, 0, {}, {}});
          refs_.push_back(Ref{});
          p = next;
          step = value_done();
          break;
        } else {
          const char* bad = nullptr;
          if (!parse_len(lb, le, count, &bad)) return fail(ParseError::bad_length, bad - b);
          if (count > limits_.max_aggregate) return fail(ParseError::aggregate_too_long, p + 1);
        }
        if (depth >= limits_.max_depth) return fail(ParseError::depth_exceeded, p);
        nodes_.push_back(Node{type, depth, count, {}, {}});
        refs_.push_back(Ref{});
        p = next;
        if (!streamed && count == 0) {
          step = aggregate_done(type == Type::attribute);
          break;
        }
        Open o;
        o.remaining = child_count(type, count);
        o.node = static_cast<std::uint32_t>(nodes_.size() - 1);
        o.streamed = streamed;
        o.attribute = type == Type::attribute;
        stack_.push_back(o);
        break;
      }

      default: {  // kEnd: '.' closes a streamed aggregate
        if (stack_.empty() || !stack_.back().streamed || stack_.back().after_attr) {
          return fail(ParseError::bad_stream, p);
        }
        if (lb != le) return fail(ParseError::bad_terminator, lb - b);
        Open o = stack_.back();
        Node& agg = nodes_[o.node];
        if (agg.type == Type::map) {
          if (o.seen % 2 != 0) return fail(ParseError::bad_stream, p);
          agg.size = o.seen / 2;
        } else {
          agg.size = o.seen;
        }
        stack_.pop_back();
        p = next;
        step = value_done();
        break;
      }
    }

    if (step == Step::done) {
      // Views are created only now: the input (and scratch) no longer move for this frame.
      const char* sb = scratch_.data();
      for (std::size_t i = 0; i < nodes_.size(); ++i) {
        const Ref& ref = refs_[i];
        if (ref.len == 0 && nodes_[i].type != Type::verbatim) continue;
        const char* base = (ref.off & kScratchBit) ? sb + (ref.off & ~kScratchBit) : b + ref.off;
        nodes_[i].value = std::string_view(base, ref.len);
        if (nodes_[i].type == Type::verbatim) nodes_[i].format = std::string_view(base - 4, 3);
      }
      done_ = true;
      r.status = ParseResult::Status::complete;
      r.consumed = p;
      return r;
    }
  }
}

}  // namespace lockwire::resp
