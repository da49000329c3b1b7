// The parser fuzz entry, shared by the libFuzzer target (fuzz/, clang) and the corpus-replay
// smoke test that runs in the normal ctest suite (tests/resp/fuzz_smoke_test.cpp, any compiler).
//
// Oracles (any violation aborts, which both drivers report as a crash):
//  - whole-input parse == parse with the input split into pieces (piece sizes from the data);
//  - results are in range; views point inside the input or the parser's own storage;
//  - each frame's structure is consistent (children counts, depths, limits);
//  - re-encoding a frame and parsing it again gives the same frame.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "lockwire/resp/encoder.hpp"
#include "lockwire/resp/parser.hpp"
#include "lockwire/resp/reply.hpp"

namespace lockwire::resp::fuzz {

inline void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "resp fuzz oracle failed: %s\n", what);
    std::abort();
  }
}

// Checks the value at i (after any attributes annotating it) at `depth`; returns the index
// just past it. Recursion is bounded by the depth limit.
inline std::size_t check_value(Frame f, std::size_t i, std::uint32_t depth, const Limits& lim) {
  auto children = [&](std::size_t j, std::uint64_t count) {
    for (std::uint64_t k = 0; k < count; ++k) {
      check(j < f.size(), "missing children");
      j = check_value(f, j, depth + 1, lim);
    }
    return j;
  };
  while (i < f.size() && f[i].type == Type::attribute) {
    check(f[i].depth == depth, "attribute depth");
    check(depth < lim.max_depth, "depth limit");
    i = children(i + 1, child_count(Type::attribute, f[i].size));
  }
  check(i < f.size(), "attribute without a value");
  const Node& n = f[i];
  check(n.depth == depth, "depth");
  if (is_aggregate(n.type)) {
    check(depth < lim.max_depth, "depth limit");
    check(n.size <= lim.max_aggregate, "aggregate limit");
    check(n.value.empty() && n.format.empty(), "aggregate has no bytes");
    return children(i + 1, child_count(n.type, n.size));
  }
  check(n.size == 0, "scalar size");
  switch (n.type) {
    case Type::verbatim:
      check(n.format.size() == 3, "verbatim format");
      [[fallthrough]];
    case Type::blob_string:
    case Type::blob_error:
      check(n.value.size() <= lim.max_blob, "blob limit");
      break;
    case Type::number:
      check(to_int64(n).has_value(), "number converts");
      break;
    case Type::double_:
      check(to_double(n).has_value(), "double converts");
      break;
    case Type::boolean:
      check(n.value == "t" || n.value == "f", "boolean");
      break;
    case Type::null:
      check(n.value.empty(), "null has no bytes");
      break;
    default:
      break;
  }
  return i + 1;
}

inline void check_frame(Frame f, const Limits& lim) {
  check(!f.empty(), "empty frame");
  check(check_value(f, 0, 0, lim) == f.size(), "one value per frame");
  check(next_sibling(f, value_index(f)) == f.size(), "value subtree spans the rest");
}

inline ParseResult parse_with_pieces(Parser& p, std::string_view data, std::size_t piece,
                                     std::string& buf) {
  // Feeds growing prefixes, as a connection does; returns the final result.
  buf.clear();
  ParseResult r;
  std::size_t fed = 0;
  do {
    const std::size_t k = std::min(piece, data.size() - fed);
    buf.append(data.data() + fed, k);
    fed += k;
    r = p.parse(buf);
  } while (r.status == ParseResult::Status::incomplete && fed < data.size());
  return r;
}

inline int run_one(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  // First byte: a split size and a limits profile; the rest is the stream.
  const std::size_t piece = 1 + (data[0] & 0x0f);
  Limits limits;
  if (data[0] & 0x10) {
    limits.max_depth = 3;
    limits.max_blob = 16;
    limits.max_aggregate = 5;
  }
  const std::string_view in(reinterpret_cast<const char*>(data + 1), size - 1);

  Parser whole(limits), split(limits), again(limits);
  std::string buf, encoded;
  std::size_t off = 0;
  for (int frames = 0; frames < 64 && off < in.size(); ++frames) {
    const std::string_view rest = in.substr(off);
    const ParseResult a = whole.parse(rest);
    const ParseResult b = parse_with_pieces(split, rest, piece, buf);
    check(a.status == b.status, "split status");
    if (a.status == ParseResult::Status::error) {
      check(a.error == b.error && a.error_at == b.error_at, "split error");
      check(a.error_at < rest.size(), "error offset in range");
      check(a.error != ParseError::ok, "error code set");
      return 0;
    }
    if (a.status == ParseResult::Status::incomplete) return 0;
    check(a.consumed == b.consumed && a.consumed > 0 && a.consumed <= rest.size(), "consumed");
    const Frame fa = whole.frame();
    check(same_frame(fa, split.frame()), "split frame");
    check_frame(fa, limits);
    // Owned copy and re-encoding round trip.
    const OwnedFrame owned(fa);
    check(same_frame(owned.frame(), fa), "owned copy");
    encoded.clear();
    append_frame(encoded, fa);
    Limits loose;  // the re-encoding never grows nesting or lengths, but keep limits apart
    again = Parser(loose);
    const ParseResult c = again.parse(encoded);
    check(c.ok() && c.consumed == encoded.size(), "re-encoded parses");
    check(same_frame(again.frame(), fa), "re-encoded frame equal");
    off += a.consumed;
  }
  return 0;
}

}  // namespace lockwire::resp::fuzz
