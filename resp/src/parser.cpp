// The incremental RESP2/RESP3 parser (parser.hpp, docs/resp.md): one resumable machine over
// every RESP type, kept in one file so that its states and limits can be read (and fuzzed)
// together; parse_more reads an element's header (read_header), then hands it to the item of its
// kind (line_item, blob_item, chunk_item, aggregate_item, end_item), as hiredis' read.c does.
#include "lockwire/resp/parser.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <string_view>

namespace lockwire::resp {
namespace {

// Header forms that are not a plain length.
constexpr std::uint64_t kStreamed = ~std::uint64_t{0};     // "?"
constexpr std::uint64_t kNullLen = ~std::uint64_t{0} - 1;  // "-1"

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
  // Up to 18 digits cannot overflow: no per-digit range check on the common path.
  std::uint64_t v = 0;
  const char* fast_end = e - p > 18 ? p + 18 : e;
  for (; p != fast_end; ++p) {
    if (!is_digit(*p)) return p;
    v = v * 10 + static_cast<std::uint64_t>(*p - '0');
  }
  // Magnitude limit: 2^63 for negatives, 2^63-1 otherwise.
  const std::uint64_t lim = neg ? std::uint64_t{1} << 63 : (std::uint64_t{1} << 63) - 1;
  for (; p != e; ++p) {
    if (!is_digit(*p)) return p;
    const std::uint64_t d = static_cast<std::uint64_t>(*p - '0');
    if (v > (lim - d) / 10) return p;
    v = v * 10 + d;
  }
  return nullptr;
}

// Returns the offending byte, or nullptr when [b, e) is a valid RESP3 double:
//   [+-]? digits [. digits] [(e|E) [+-]? digits]   (a leading or trailing '.' is invalid)
//   inf | -inf | nan | -nan                         (exactly so: the spec's spellings, and -nan
//                                                    as Redis < 7.2 printed a NaN with glibc %.17g)
[[nodiscard]] const char* check_double(const char* b, const char* e) noexcept {
  const char* p = b;
  if (p != e && (*p == '-' || *p == '+')) ++p;
  if (p == e) return p;
  if (!is_digit(*p)) {
    const std::string_view word(p, static_cast<std::size_t>(e - p));
    if (*b != '+' && (word == "inf" || word == "nan")) return nullptr;
    return p;
  }
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

// Kinds from kBlob on carry a length or count in their header line.
enum : unsigned char { kLine = 1, kEnd = 2, kBlob = 3, kAgg = 4, kChunk = 5 };

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

// Longest header line (bytes between the type byte and CR) each type may have, and the error
// when it is longer. Lengths, counts and numbers are short; only strings may be long.
struct LineRule {
  std::uint64_t max_line;
  ParseError error;
};
[[nodiscard]] constexpr LineRule line_rule(char t, std::uint64_t max_blob) noexcept {
  switch (t) {
    case '+':
    case '-':
    case '(':
      return {max_blob, ParseError::blob_too_long};
    case ',':
      return {1024, ParseError::bad_double};
    case ':':
      return {32, ParseError::bad_number};
    case '#':
      return {32, ParseError::bad_boolean};
    case '_':
    case '.':
      return {32, ParseError::bad_terminator};
    case ';':
      return {32, ParseError::bad_stream};
    default:
      return {32, ParseError::bad_length};  // $ ! = * % ~ > |
  }
}

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

// One complete, well-formed scalar of the most common forms, starting at its type byte s < e:
// $<digits> blob strings, :[-]<digits> integers, ,[-]d[.d][e[+-]d] doubles and +/- lines. The
// general parser handles everything else (input that ends early, any malformed or unusual
// spelling, lengths near the limits) exactly as if this did not exist: next == nullptr.
struct Scalar {
  const char* next = nullptr;  // just past the element's CRLF
  const char* vb = nullptr;    // value [vb, ve)
  const char* ve = nullptr;
  Type type = Type::null;
};

// The first CR or LF in [q, lim), else lim; eight bytes at a time while they are there (a
// byte is flagged when it XORs to zero; the lowest flag is always a true one).
[[gnu::always_inline]] inline const char* find_line_end(const char* q, const char* lim) noexcept {
  constexpr std::uint64_t kOnes = 0x0101010101010101ull, kHighs = 0x8080808080808080ull;
  while (std::endian::native == std::endian::little && lim - q >= 8) {
    std::uint64_t w;
    std::memcpy(&w, q, 8);
    const std::uint64_t cr = w ^ (kOnes * '\r'), lf = w ^ (kOnes * '\n');
    const std::uint64_t hit = (((cr - kOnes) & ~cr) | ((lf - kOnes) & ~lf)) & kHighs;
    if (hit != 0) return q + (__builtin_ctzll(hit) >> 3);
    q += 8;
  }
  while (q != lim && *q != '\r' && *q != '\n') ++q;
  return q;
}

[[gnu::always_inline]] inline const char* skip_digits(const char* q, const char* lim) noexcept {
  while (q != lim && is_digit(*q)) ++q;
  return q;
}

[[nodiscard, gnu::always_inline]] inline bool crlf_at(const char* q, const char* e) noexcept {
  return e - q >= 2 && q[0] == '\r' && q[1] == '\n';
}

[[nodiscard, gnu::always_inline]] inline Scalar fast_scalar(const char* s, const char* e,
                                                            std::uint64_t max_blob) noexcept {
  // Tested in turn, blobs first (a switch's indirect jump measured slower here).
  const char t = *s;
  const char* q = s + 1;
  if (t == '$') {
    const char* lim = e - q > 18 ? q + 18 : e;  // 18 digits never overflow
    std::uint64_t len = 0;
    while (q != lim && is_digit(*q)) len = len * 10 + static_cast<std::uint64_t>(*q++ - '0');
    if (q == s + 1 || !crlf_at(q, e) || len > max_blob) return {};
    const char* body = q + 2;
    if (static_cast<std::uint64_t>(e - body) < len + 2 || body[len] != '\r' ||
        body[len + 1] != '\n') {
      return {};
    }
    return {body + len + 2, body, body + len, Type::blob_string};
  }
  if (t == ',') {
    // A double's line holds at most 1024 bytes (line_rule).
    const char* lim = e - q > 1024 ? q + 1024 : e;
    if (q != lim && *q == '-') ++q;
    const char* d = q;
    q = skip_digits(q, lim);
    if (q == d) return {};
    if (q != lim && *q == '.') {
      d = ++q;
      q = skip_digits(q, lim);
      if (q == d) return {};
    }
    if (q != lim && (*q == 'e' || *q == 'E')) {
      ++q;
      if (q != lim && (*q == '-' || *q == '+')) ++q;
      d = q;
      q = skip_digits(q, lim);
      if (q == d) return {};
    }
    if (!crlf_at(q, e)) return {};
    return {q + 2, s + 1, q, Type::double_};
  }
  if (t == ':') {
    if (q != e && *q == '-') ++q;
    const char* d = q;
    q = skip_digits(q, e - q > 18 ? q + 18 : e);  // 18 digits never overflow
    if (q == d || !crlf_at(q, e)) return {};
    return {q + 2, s + 1, q, Type::number};
  }
  if (t == '+' || t == '-') {
    q = find_line_end(q, e - q > 64 ? q + 64 : e);
    if (!crlf_at(q, e) || static_cast<std::uint64_t>(q - s - 1) > max_blob) return {};
    return {q + 2, s + 1, q, t == '+' ? Type::simple_string : Type::simple_error};
  }
  return {};
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

void Parser::reset() noexcept {
  start_frame();
  done_ = true;
  need_ = 0;
  failed_ = {};
}

void Parser::start_frame() noexcept {
  nodes_.clear();
  refs_.clear();
  streamed_.clear();
  stack_.clear();
  scratch_.clear();
  pos_ = need_ = scan_ = stream_start_ = 0;
  in_stream_ = false;
  direct_ = true;
  done_ = false;
  has_frame_ = false;
  line_wait_ = false;
}

ParseResult Parser::fail(ParseError e, std::size_t at) noexcept {
  failed_.status = ParseResult::Status::error;
  failed_.error = e;
  failed_.error_at = at;
  failed_.consumed = 0;
  has_frame_ = false;
  need_ = 0;
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
      --o.remaining;
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

// Completes a frame made of one scalar node [vb, ve), `consumed` bytes long.
[[gnu::noinline]] ParseResult Parser::single(Type type, const char* vb, const char* ve,
                                             std::size_t consumed) {
  // The previous frame is complete (done_), so only its nodes need clearing; the rest of the
  // state is reset by start_frame() if a later frame takes the general path.
  nodes_.clear();
  nodes_.push_back(Node{type, 0, 0, std::string_view(vb, static_cast<std::size_t>(ve - vb)), {}});
  has_frame_ = true;
  need_ = 1;  // an empty input after a frame returns at once (see parse())
  ParseResult r;
  r.status = ParseResult::Status::complete;
  r.consumed = consumed;
  return r;
}

// A top-level array of `len` scalars that fast_scalar takes, all in [b, e) (elements from p):
// the frame the general parser would make, in one pass. Anything else returns incomplete, and
// the caller starts the general parser afresh (it clears nodes_).
[[gnu::noinline]] ParseResult Parser::flat_array(const char* b, const char* p, const char* e,
                                                 std::uint64_t len) {
  nodes_.clear();
  nodes_.push_back(Node{Type::array, 0, len, {}, {}});
  for (std::uint64_t i = 0; i < len; ++i) {
    if (p == e) return {};
    const Scalar sc = fast_scalar(p, e, limits_.max_blob);
    if (sc.next == nullptr) return {};
    nodes_.push_back(
        Node{sc.type, 1, 0, std::string_view(sc.vb, static_cast<std::size_t>(sc.ve - sc.vb)), {}});
    p = sc.next;
  }
  has_frame_ = true;
  need_ = 1;
  ParseResult r;
  r.status = ParseResult::Status::complete;
  r.consumed = static_cast<std::size_t>(p - b);
  return r;
}

// The frame will span calls: replace this call's views by offsets (once per frame).
void Parser::to_offsets(const char* base) {
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    Node& n = nodes_[i];
    if (!n.value.empty() || n.type == Type::verbatim) {
      refs_.push_back(Ref{static_cast<std::uint32_t>(i),
                          static_cast<std::size_t>(n.value.data() - base), n.value.size()});
    }
    n.value = {};
    n.format = {};
  }
  direct_ = false;
}

[[gnu::noinline]] void Parser::add_scalar(Type type, std::uint32_t depth, const char* base,
                                          std::size_t off, std::size_t len) {
  Node& n = nodes_.emplace_back();
  n.type = type;
  n.depth = depth;
  if (direct_) {
    n.value = std::string_view(base + off, len);
    if (type == Type::verbatim) n.format = std::string_view(base + off - 4, 3);
  } else if (len != 0 || type == Type::verbatim) {
    refs_.push_back(Ref{static_cast<std::uint32_t>(nodes_.size() - 1), off, len});
  }
}

// The frame is complete, `consumed` bytes long. Inlined into parse_more (its only caller): fed
// byte by byte, every frame ends here and a call is measurable.
[[gnu::always_inline]] inline ParseResult Parser::finish(const char* b,
                                                         std::size_t consumed) noexcept {
  // A frame that spanned calls gets its views now that neither input nor scratch moves.
  if (!direct_) {
    for (const Ref& r : refs_) {
      Node& node = nodes_[r.node];
      node.value = std::string_view(b + r.off, r.len);
      if (node.type == Type::verbatim) node.format = std::string_view(b + r.off - 4, 3);
    }
  }
  for (const Ref& r : streamed_) {
    nodes_[r.node].value = std::string_view(scratch_.data() + r.off, r.len);
  }
  done_ = has_frame_ = true;
  need_ = 1;
  ParseResult res;
  res.status = ParseResult::Status::complete;
  res.consumed = consumed;
  return res;
}

// Inside a counted aggregate of a frame that began in this call, common complete scalars take a
// short path: no line rules, no re-scan, the node written in place. Returns where it stopped
// (p itself when nothing was taken); `done` when the frame is complete there.
[[gnu::always_inline]] inline std::size_t Parser::scalars_in_aggregate(const char* b,
                                                                       std::size_t n,
                                                                       std::size_t p,
                                                                       bool& done) {
  Open& o = stack_.back();
  const auto depth = static_cast<std::uint32_t>(stack_.size());
  for (;;) {
    const Scalar sc = fast_scalar(b + p, b + n, limits_.max_blob);
    if (sc.next == nullptr) return p;
    const std::string_view value(sc.vb, static_cast<std::size_t>(sc.ve - sc.vb));
    nodes_.push_back(Node{sc.type, depth, 0, value, {}});
    p = static_cast<std::size_t>(sc.next - b);
    if (o.remaining > 1) {  // more siblings to come (value_done() in short)
      --o.remaining;
      o.after_attr = false;
      if (p < n) continue;
      return p;
    }
    done = value_done() == Step::done;
    return p;
  }
}

// The header line of the element at p: its length or count (kBlob and up) and its content.
// Lengths and counts that are plain digits then CRLF take the fast path; anything else ('?',
// "-1", errors) goes through the general line handling.
[[gnu::always_inline]] inline Parser::Advance Parser::read_header(const char* b, std::size_t n,
                                                                  Header& h) {
  const std::size_t p = h.at;
  const char t = h.type;
  if (h.kind >= kBlob) {
    std::size_t q = p + 1;
    const std::size_t lim = std::min(n, p + 20);  // at most 19 digits: no overflow
    std::uint64_t len = 0;
    while (q < lim && is_digit(b[q])) len = len * 10 + static_cast<std::uint64_t>(b[q++] - '0');
    h.len = len;
    if (q > p + 1 && q < n && b[q] == '\r') {
      if (q + 1 >= n) return wait(q + 2);
      if (b[q + 1] != '\n') return stop(ParseError::bad_terminator, q + 1);
      h.next = q + 2;
      h.lb = b + p + 1;
      h.le = b + h.next - 2;
      return go(h.next);
    }
  }
  h.lb = b + p + 1;
  // The CR must come within the first max_line + 1 bytes after the type byte; the same test
  // applies whether or not the rest of the line has arrived, so errors do not depend on how the
  // input was split. Rules allow at least min(32, max_blob) bytes: look the rule up only for
  // longer input.
  const std::size_t start = p + 1;
  const LineRule rule = n - start > 32 || limits_.max_blob < 32 ? line_rule(t, limits_.max_blob)
                                                                : LineRule{32, ParseError::ok};
  const std::size_t window_end = n - start > rule.max_line ? start + rule.max_line + 1 : n;
  std::size_t from = start;
  if (p == pos_ && scan_ > from) from = std::min(scan_, window_end);
  std::size_t cr = from;
  // Short lines are the norm: a plain loop beats a memchr call for them.
  const std::size_t short_end = std::min(window_end, from + 16);
  while (cr < short_end && b[cr] != '\r') ++cr;
  if (cr == short_end) {
    const void* hit = cr < window_end ? std::memchr(b + cr, '\r', window_end - cr) : nullptr;
    if (hit == nullptr) {
      if (window_end < n || n - start > rule.max_line) {
        return stop(rule.error, start + rule.max_line);
      }
      scan_ = n;
      const std::uint64_t max_line = line_rule(t, limits_.max_blob).max_line;
      line_end_ = max_line < ~std::size_t{0} - start - 1 ? start + max_line + 1 : ~std::size_t{0};
      line_wait_ = true;
      return wait(n + 1);
    }
    cr = static_cast<std::size_t>(static_cast<const char*>(hit) - b);
  }
  if (cr + 1 >= n) {
    scan_ = cr;
    return wait(cr + 2);
  }
  if (b[cr + 1] != '\n') return stop(ParseError::bad_terminator, cr + 1);
  scan_ = 0;
  h.le = b + cr;
  h.next = cr + 2;
  if (h.kind >= kBlob) {
    // Not plain digits: special forms or a malformed length.
    const char* lb = h.lb;
    const char* le = h.le;
    if (le - lb == 1 && *lb == '?') {
      h.len = kStreamed;
    } else if (le - lb == 2 && lb[0] == '-' && lb[1] == '1') {
      h.len = kNullLen;
    } else {
      const char* bad = nullptr;
      if (!parse_len(lb, le, h.len, &bad)) {
        return stop(h.kind == kChunk ? ParseError::bad_stream : ParseError::bad_length, bad - b);
      }
    }
  }
  return go(h.next);
}

// + - : , # ( _ : a whole line.
[[gnu::always_inline]] inline Parser::Advance Parser::line_item(const char* b, const Header& h) {
  const char* const lb = h.lb;
  const char* const le = h.le;
  Type type = Type::simple_string;
  switch (h.type) {
    case '+':
    case '-': {
      // Simple strings and errors cannot contain LF (CR already ends the line).
      if (h.type == '-') type = Type::simple_error;
      const char* lf = lb;
      if (le - lb < 32) {
        while (lf != le && *lf != '\n') ++lf;
      } else {
        const void* hit = std::memchr(lb, '\n', static_cast<std::size_t>(le - lb));
        lf = hit != nullptr ? static_cast<const char*>(hit) : le;
      }
      if (lf != le) return stop(ParseError::bad_terminator, lf - b);
      break;
    }
    case ':': {
      type = Type::number;
      const char* bad = check_int64(lb, le);
      if (bad != nullptr) return stop(ParseError::bad_number, bad - b);
      break;
    }
    case ',': {
      type = Type::double_;
      const char* bad = check_double(lb, le);
      if (bad != nullptr) return stop(ParseError::bad_double, bad - b);
      break;
    }
    case '#':
      type = Type::boolean;
      if (le - lb != 1 || (*lb != 't' && *lb != 'f')) {
        const bool tf = lb != le && (*lb == 't' || *lb == 'f');
        return stop(ParseError::bad_boolean, (lb - b) + (tf ? 1 : 0));
      }
      break;
    case '(': {
      type = Type::big_number;
      const char* q = lb;
      if (q != le && (*q == '-' || *q == '+')) ++q;
      if (q == le) return stop(ParseError::bad_big_number, q - b);
      for (; q != le; ++q) {
        if (!is_digit(*q)) return stop(ParseError::bad_big_number, q - b);
      }
      break;
    }
    default:  // '_'
      type = Type::null;
      if (lb != le) return stop(ParseError::bad_terminator, lb - b);
      break;
  }
  add_scalar(type, h.depth, b, h.at + 1, static_cast<std::size_t>(le - lb));
  return go(h.next, value_done());
}

// The `len` bytes at `next` and their CRLF: go on after them, or wait for them (the element is
// read again from its header, cheap to re-read, once the whole body can be there).
[[gnu::always_inline]] inline Parser::Advance Parser::read_body(const char* b, std::size_t n,
                                                                std::size_t next,
                                                                std::uint64_t len) {
  if (n - next < len + 2) {
    scan_ = 0;
    return wait(next + len + 2);
  }
  const std::size_t end = next + len;
  if (b[end] != '\r') return stop(ParseError::bad_terminator, end);
  if (b[end + 1] != '\n') return stop(ParseError::bad_terminator, end + 1);
  return go(end + 2);
}

// $ ! = : a length, then that many bytes and CRLF ($? opens a streamed string, $-1 is null).
[[gnu::always_inline]] inline Parser::Advance Parser::blob_item(const char* b, std::size_t n,
                                                                const Header& h) {
  const std::uint64_t len = h.len;
  const std::size_t next = h.next;
  if (len == kStreamed || len == kNullLen) {
    if (h.type != '$') return stop(ParseError::bad_length, h.lb - b);
    if (len == kNullLen) {
      add_scalar(Type::null, h.depth, b, h.at, 0);
      return go(next, value_done());
    }
    add_scalar(Type::blob_string, h.depth, b, h.at, 0);
    stream_start_ = scratch_.size();
    in_stream_ = true;
    return go(next);
  }
  if (len > limits_.max_blob) return stop(ParseError::blob_too_long, h.at + 1);
  const Advance body = read_body(b, n, next, len);
  if (body.kind != Advance::Kind::go) return body;
  const std::size_t end = next + len;
  if (h.type == '$') {
    add_scalar(Type::blob_string, h.depth, b, next, len);
  } else if (h.type == '!') {
    add_scalar(Type::blob_error, h.depth, b, next, len);
  } else {
    if (len < 4) return stop(ParseError::bad_verbatim, next + len);
    if (b[next + 3] != ':') return stop(ParseError::bad_verbatim, next + 3);
    add_scalar(Type::verbatim, h.depth, b, next + 4, len - 4);
  }
  return go(end + 2, value_done());
}

// ; : a chunk of the open streamed string (;0 ends it).
[[gnu::always_inline]] inline Parser::Advance Parser::chunk_item(const char* b, std::size_t n,
                                                                 const Header& h) {
  const std::uint64_t len = h.len;
  const std::size_t next = h.next;
  if (len == kStreamed || len == kNullLen) return stop(ParseError::bad_stream, h.lb - b);
  if (len == 0) {
    streamed_.push_back(Ref{static_cast<std::uint32_t>(nodes_.size() - 1), stream_start_,
                            scratch_.size() - stream_start_});
    in_stream_ = false;
    return go(next, value_done());
  }
  if (len > limits_.max_blob || scratch_.size() - stream_start_ > limits_.max_blob - len) {
    return stop(ParseError::blob_too_long, h.at + 1);
  }
  const Advance body = read_body(b, n, next, len);
  if (body.kind != Advance::Kind::go) return body;
  scratch_.append(b + next, len);
  return body;
}

// * % ~ > | : an aggregate's header (counted, streamed with ?, or *-1 null).
[[gnu::always_inline]] inline Parser::Advance Parser::aggregate_item(const char* b,
                                                                     const Header& h) {
  const Type type = agg_type(h.type);
  std::uint64_t len = h.len;
  const bool streamed = len == kStreamed;
  if (streamed) {
    if (h.type != '*' && h.type != '%' && h.type != '~') {
      return stop(ParseError::bad_length, h.lb - b);
    }
    len = 0;
  } else if (len == kNullLen) {
    if (h.type != '*') return stop(ParseError::bad_length, h.lb - b);
    add_scalar(Type::null, h.depth, b, h.at, 0);
    return go(h.next, value_done());
  } else if (len > limits_.max_aggregate || len > (std::uint64_t{1} << 62)) {
    return stop(ParseError::aggregate_too_long, h.at + 1);
  }
  if (h.depth >= limits_.max_depth) return stop(ParseError::depth_exceeded, h.at);
  Node& node = nodes_.emplace_back();
  node.type = type;
  node.depth = h.depth;
  node.size = len;
  if (!streamed && len == 0) return go(h.next, aggregate_done(type == Type::attribute));
  Open& o = stack_.emplace_back();
  if (streamed) {
    // Children allowed: max_aggregate elements, or pairs for a map (as for a counted one).
    const std::uint64_t max = limits_.max_aggregate;
    constexpr std::uint64_t kAll = ~std::uint64_t{0};
    o.remaining = type != Type::map ? max : max <= kAll / 2 ? max * 2 : kAll;
  } else {
    o.remaining = child_count(type, len);
  }
  o.node = static_cast<std::uint32_t>(nodes_.size() - 1);
  o.streamed = streamed;
  o.attribute = type == Type::attribute;
  return go(h.next);
}

// . : closes a streamed aggregate.
[[gnu::always_inline]] inline Parser::Advance Parser::end_item(const char* b, const Header& h) {
  if (stack_.empty() || !stack_.back().streamed || stack_.back().after_attr) {
    return stop(ParseError::bad_stream, h.at);
  }
  if (h.lb != h.le) return stop(ParseError::bad_terminator, h.lb - b);
  const Open o = stack_.back();
  Node& agg = nodes_[o.node];
  if (agg.type == Type::map) {
    if (o.seen % 2 != 0) return stop(ParseError::bad_stream, h.at);
    agg.size = o.seen / 2;
  } else {
    agg.size = o.seen;
  }
  stack_.pop_back();
  return go(h.next, value_done());
}

ParseResult Parser::parse_more(std::string_view input) {
  if (failed_.status == ParseResult::Status::error) return failed_;
  const char* const b = input.data();
  const std::size_t n = input.size();
  if (done_) {
    // Fast path for the most common replies, a whole top-level +, -, : or $ frame; anything
    // unusual (incomplete, malformed, long) falls through to the general parser below. Written
    // out here rather than in a function of its own: as one (even inlined) it made these
    // frames 2-3x slower (GCC 12 -O3: the early return no longer a bare tail call).
    if (n >= 4) {
      const char t = b[0];
      const char* const e = b + n;
      const char* q = b + 1;
      if (t == '+' || t == '-') {
        const char* lim = std::min(e, b + 64);
        q = find_line_end(q, lim);
        if (q + 1 < e && q[0] == '\r' && q[1] == '\n' &&
            static_cast<std::uint64_t>(q - b - 1) <= limits_.max_blob) {
          return single(t == '+' ? Type::simple_string : Type::simple_error, b + 1, q, q + 2 - b);
        }
      } else if (t == ':') {
        if (*q == '-') ++q;
        const char* digits = q;
        const char* lim = std::min(e, q + 18);
        while (q != lim && is_digit(*q)) ++q;
        if (q != digits && q + 1 < e && q[0] == '\r' && q[1] == '\n') {
          return single(Type::number, b + 1, q, q + 2 - b);
        }
      } else if (t == '$') {
        std::uint64_t len = 0;
        const char* lim = std::min(e, q + 18);
        while (q != lim && is_digit(*q)) len = len * 10 + static_cast<std::uint64_t>(*q++ - '0');
        if (q != b + 1 && q + 1 < e && q[0] == '\r' && q[1] == '\n' && len <= limits_.max_blob &&
            static_cast<std::uint64_t>(e - q) >= len + 4 && q[2 + len] == '\r' &&
            q[3 + len] == '\n') {
          return single(Type::blob_string, q + 2, q + 2 + len, (q + 4 + len) - b);
        }
      } else if (t == '*') {
        // An EXEC's reply: an array of scalars.
        std::uint64_t len = 0;
        const char* lim = std::min(e, q + 18);
        while (q != lim && is_digit(*q)) len = len * 10 + static_cast<std::uint64_t>(*q++ - '0');
        if (q != b + 1 && q + 1 < e && q[0] == '\r' && q[1] == '\n' && len != 0 &&
            len <= limits_.max_aggregate && limits_.max_depth > 0) {
          const ParseResult r = flat_array(b, q + 2, e, len);
          if (r.ok()) return r;
        }
      }
    }
    start_frame();
    if (n == 1) {
      // Only the type byte has arrived (typical when fed in tiny pieces): wait for its line.
      const unsigned char kind = kTypes.kind[static_cast<unsigned char>(b[0])];
      if (kind == kLine || kind == kBlob || kind == kAgg) {
        direct_ = false;
        line_wait_ = true;
        scan_ = 1;
        need_ = 2;
        const std::size_t max_line = line_rule(b[0], limits_.max_blob).max_line;
        line_end_ = max_line < ~std::size_t{0} - 2 ? max_line + 2 : ~std::size_t{0};
        return {};
      }
    }
  }

  std::size_t p = pos_;
  // No progress until the input reaches `need` bytes: the element at p is read again then.
  auto suspend = [&](std::size_t need) {
    if (direct_) to_offsets(b);
    pos_ = p;
    need_ = need;
    return ParseResult{};
  };

  for (;;) {
    if (p >= n) return suspend(p + 1);
    if (direct_ && !in_stream_ && !stack_.empty() && !stack_.back().streamed) {
      bool done = false;
      const std::size_t after = scalars_in_aggregate(b, n, p, done);
      if (done) return finish(b, after);
      if (after != p) {  // the next element, perhaps of a parent: decide afresh
        p = after;
        continue;
      }
    }
    Header h;
    h.type = b[p];
    h.kind = kTypes.kind[static_cast<unsigned char>(h.type)];
    h.at = p;
    if (h.kind == 0) return fail(ParseError::bad_type, p);
    if (in_stream_ != (h.kind == kChunk)) return fail(ParseError::bad_stream, p);
    // A streamed aggregate holding all the elements max_aggregate allows takes only its '.'.
    if (h.kind != kEnd && h.kind != kChunk && !stack_.empty() && stack_.back().streamed &&
        stack_.back().remaining == 0) {
      return fail(ParseError::aggregate_too_long, p);
    }
    h.depth = static_cast<std::uint32_t>(stack_.size());

    Advance a = read_header(b, n, h);
    if (a.kind == Advance::Kind::go) {
      switch (h.kind) {
        case kLine:
          a = line_item(b, h);
          break;
        case kBlob:
          a = blob_item(b, n, h);
          break;
        case kChunk:
          a = chunk_item(b, n, h);
          break;
        case kAgg:
          a = aggregate_item(b, h);
          break;
        default:  // kEnd
          a = end_item(b, h);
          break;
      }
    }
    if (a.kind == Advance::Kind::stop) return failed_;
    if (a.kind == Advance::Kind::wait) return suspend(a.p);
    p = a.p;
    if (a.step == Step::done) return finish(b, p);
  }
}

}  // namespace lockwire::resp
