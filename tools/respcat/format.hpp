// respcat's two renderings of a frame: JSON (one document per frame) and a redis-cli-like text.
#pragma once

#include <string>

#include "lockwire/resp/node.hpp"

namespace lockwire::respcat {

// Appends the frame as one JSON document (no trailing newline). Format: see docs/resp.md.
void append_json(resp::Frame frame, std::string& out);

// Appends the frame in a redis-cli-like layout, ending with a newline.
void append_human(resp::Frame frame, std::string& out);

// Appends s as a JSON string in which every byte maps to one code point: printable ASCII is
// itself (" and \ escaped), any other byte b is \u00XX.
void append_json_string(std::string_view s, std::string& out);

}  // namespace lockwire::respcat
