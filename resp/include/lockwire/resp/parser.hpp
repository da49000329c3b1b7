// Incremental, resumable, zero-copy RESP2/RESP3 parser (sans-I/O: it only ever sees bytes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "lockwire/resp/node.hpp"

namespace lockwire::resp {

struct Limits {
  std::uint32_t max_depth = 64;                   // nesting of aggregates (attributes count)
  std::uint64_t max_blob = 512ull * 1024 * 1024;  // as Redis' proto-max-bulk-len
  std::uint64_t max_aggregate = 1ull << 32;       // elements (pairs for maps), counted or streamed
};

enum class ParseError {
  ok = 0,
  bad_type,            // unknown type byte
  bad_length,          // malformed or negative length / count
  bad_number,          // malformed integer
  bad_double,          // malformed double
  bad_boolean,         // not #t / #f
  bad_big_number,      // not [+-]digits
  bad_verbatim,        // verbatim shorter than "xxx:" or missing ':'
  bad_terminator,      // missing CRLF where required
  bad_stream,          // malformed streamed string chunk or stray '.'
  depth_exceeded,      // nesting deeper than Limits::max_depth
  blob_too_long,       // length above Limits::max_blob
  aggregate_too_long,  // count above Limits::max_aggregate
};

[[nodiscard]] const std::error_category& parse_category() noexcept;
[[nodiscard]] std::error_code make_error_code(ParseError e) noexcept;

struct ParseResult {
  enum class Status : std::uint8_t { complete, incomplete, error };
  Status status = Status::incomplete;
  std::size_t consumed = 0;  // complete: bytes of `input` that the frame occupied
  std::size_t error_at = 0;  // error: offset within `input` of the offending byte
  ParseError error = ParseError::ok;
  [[nodiscard]] bool ok() const noexcept { return status == Status::complete; }
};

class Parser {
 public:
  explicit Parser(Limits limits = {}) noexcept;

  // `input` holds every byte received and not yet consumed by an earlier complete frame, starting
  // at the first byte of the next frame (callers append what arrives and drop what was consumed).
  // An incomplete call remembers how far it got; the next call resumes there, so a large frame
  // arriving in small pieces costs O(total bytes), never a rescan. After an error the parser must
  // be reset() before further use.
  [[nodiscard]] ParseResult parse(std::string_view input) {
    // Inline: fed in small pieces, most calls only learn that the awaited bytes are not there.
    if (input.size() < need_ || (line_wait_ && still_no_cr(input))) {
      has_frame_ = false;
      return {};
    }
    return parse_more(input);
  }

  // The last complete frame. Valid until the next parse()/reset() and while the input bytes live.
  [[nodiscard]] Frame frame() const noexcept {
    if (!has_frame_) return {};
    return {nodes_.data(), nodes_.size()};
  }

  // Forget any partial frame (for example after a reconnect).
  void reset() noexcept;

  [[nodiscard]] const Limits& limits() const noexcept { return limits_; }

 private:
  struct Open {                   // an aggregate still receiving children
    std::uint64_t remaining = 0;  // counted: direct children still expected; streamed: allowed
    std::uint64_t seen = 0;       // streamed: direct children received so far
    std::uint32_t node = 0;       // its index in nodes_
    bool streamed = false;
    bool attribute = false;
    bool after_attr = false;  // last child was an attribute still awaiting its value
  };
  // A node's bytes by offset. The caller may move its buffer between calls, so a frame that
  // spans calls keeps offsets and gets its views only once complete; a frame parsed within one
  // call (the common case) writes views directly and never needs these.
  struct Ref {
    std::uint32_t node = 0;
    std::size_t off = 0;  // into the input, or into scratch_ for streamed strings
    std::size_t len = 0;
  };
  enum class Step : std::uint8_t { more, done };

  ParseResult parse_more(std::string_view input);
  // While a header line is incomplete, only the newly arrived bytes need a look for its CR.
  bool still_no_cr(std::string_view input) noexcept {
    const std::size_t n = input.size();
    std::size_t q = scan_;
    while (q < n && input[q] != '\r') ++q;
    scan_ = q;
    // Parse when the CR and the byte after it are here, or when the line is too long already.
    if (q + 1 < n || n >= line_end_) {
      line_wait_ = false;
      return false;
    }
    need_ = n + 1;  // no CR yet, or the CR is the last byte
    return true;
  }
  // One element's header: its type byte and, once its line is whole, its content [lb, le),
  // the byte after the line and (kBlob and up) its length or count, or a special form.
  struct Header {
    char type = 0;
    unsigned char kind = 0;
    std::uint32_t depth = 0;
    std::size_t at = 0;  // the type byte
    const char* lb = nullptr;
    const char* le = nullptr;
    std::size_t next = 0;
    std::uint64_t len = 0;
  };
  // What reading an element did: go on at `at` (`step`: whether the frame is complete), wait
  // until the input reaches `at` bytes (the element is read again then), or stop (failed_ says
  // why).
  struct Advance {
    enum class Kind : std::uint8_t { go, wait, stop };
    Kind kind = Kind::go;
    std::size_t p = 0;
    Step step = Step::more;
  };
  static Advance go(std::size_t p, Step step = Step::more) noexcept {
    return {Advance::Kind::go, p, step};
  }
  static Advance wait(std::size_t need) noexcept { return {Advance::Kind::wait, need, Step::more}; }
  Advance stop(ParseError e, std::size_t at) noexcept {
    fail(e, at);
    return {Advance::Kind::stop, 0, Step::more};
  }
  // parse_more's parts, in the manner of hiredis' read.c (processLineItem, processBulkItem, ...):
  std::size_t scalars_in_aggregate(const char* b, std::size_t n, std::size_t p, bool& done);
  Advance read_header(const char* b, std::size_t n, Header& h);
  Advance line_item(const char* b, const Header& h);
  Advance read_body(const char* b, std::size_t n, std::size_t next, std::uint64_t len);
  Advance blob_item(const char* b, std::size_t n, const Header& h);
  Advance chunk_item(const char* b, std::size_t n, const Header& h);
  Advance aggregate_item(const char* b, const Header& h);
  Advance end_item(const char* b, const Header& h);
  void start_frame() noexcept;
  ParseResult finish(const char* b, std::size_t consumed) noexcept;
  ParseResult single(Type type, const char* vb, const char* ve, std::size_t consumed);
  ParseResult flat_array(const char* b, const char* p, const char* e, std::uint64_t len);
  Step value_done() noexcept;
  Step aggregate_done(bool attribute) noexcept;
  void to_offsets(const char* base);
  void add_scalar(Type type, std::uint32_t depth, const char* base, std::size_t off,
                  std::size_t len);
  ParseResult fail(ParseError e, std::size_t at) noexcept;

  Limits limits_;
  std::vector<Node> nodes_;
  std::vector<Ref> refs_;      // input offsets of nodes' bytes when !direct_
  std::vector<Ref> streamed_;  // scratch_ offsets of completed streamed strings
  std::vector<Open> stack_;    // bounded by limits_.max_depth
  std::string scratch_;        // concatenated chunks of streamed strings
  std::size_t pos_ = 0;        // start of the next unparsed element of the current frame
  std::size_t need_ = 0;       // no progress is possible while input.size() < need_
  std::size_t line_end_ = 0;   // line_wait_: the line is too long once input reaches this size
  std::size_t scan_ = 0;       // the CRLF search for the line at pos_ already covered [.., scan_)
  std::size_t stream_start_ = 0;  // scratch_ offset of the open streamed string
  bool in_stream_ = false;        // inside a $? string: only ';' chunks may follow
  bool direct_ = true;            // nodes hold views into this call's input (see Ref)
  bool done_ = true;              // the last frame is complete: the next call starts afresh
  bool has_frame_ = false;        // the last call returned a complete frame
  bool line_wait_ = false;        // suspended looking for the CR of the line at pos_
  ParseResult failed_{};          // sticky error until reset()
};

}  // namespace lockwire::resp

template <>
struct std::is_error_code_enum<lockwire::resp::ParseError> : std::true_type {};
