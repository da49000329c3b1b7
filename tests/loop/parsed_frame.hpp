// A parsed RESP frame that owns its bytes (the parser's views point into them), for the loop
// unit tests that feed the sans-I/O machines with replies.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "lockwire/resp/parser.hpp"

namespace lockwire::loop::testing {

struct Parsed {
  std::string bytes;
  resp::Parser parser;
  resp::Frame frame;
  explicit Parsed(std::string_view b) : bytes(b) {
    const auto r = parser.parse(bytes);
    EXPECT_EQ(r.status, resp::ParseResult::Status::complete) << bytes;
    EXPECT_EQ(r.consumed, bytes.size()) << bytes;
    frame = parser.frame();
  }
};

}  // namespace lockwire::loop::testing
