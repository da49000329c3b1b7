#include "format.hpp"

#include <charconv>
#include <cstdio>
#include <limits>
#include <string_view>
#include <vector>

#include "lockwire/resp/reply.hpp"

namespace lockwire::respcat {
namespace {

using resp::Frame;
using resp::Node;
using resp::Type;

constexpr char kHex[] = "0123456789abcdef";

// JSON number grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
bool is_json_number(std::string_view s) {
  std::size_t i = 0;
  const std::size_t n = s.size();
  auto digits = [&]() {
    const std::size_t start = i;
    while (i < n && s[i] >= '0' && s[i] <= '9') ++i;
    return i > start;
  };
  if (i < n && s[i] == '-') ++i;
  if (i < n && s[i] == '0') {
    ++i;
  } else if (!digits()) {
    return false;
  }
  if (i < n && s[i] == '.') {
    ++i;
    if (!digits()) return false;
  }
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < n && (s[i] == '+' || s[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == n;
}

void append_double(const Node& n, std::string& out) {
  if (is_json_number(n.value)) {
    out += n.value;
    return;
  }
  const auto d = resp::to_double(n);
  if (!d || *d != *d) {
    out += "\"nan\"";
  } else if (*d == std::numeric_limits<double>::infinity()) {
    out += "\"inf\"";
  } else if (*d == -std::numeric_limits<double>::infinity()) {
    out += "\"-inf\"";
  } else {
    // Valid RESP but not JSON ("+2", "007"): the shortest text that reads back the same double.
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof(buf), *d);
    out.append(buf, r.ptr);
  }
}

std::size_t emit_json(Frame f, std::size_t i, std::string& out);

void emit_pairs(Frame f, std::size_t first, std::uint64_t pairs, std::string& out) {
  out += '[';
  std::size_t j = first;
  for (std::uint64_t k = 0; k < pairs; ++k) {
    if (k != 0) out += ", ";
    out += '[';
    j = emit_json(f, j, out);
    out += ", ";
    j = emit_json(f, j, out);
    out += ']';
  }
  out += ']';
}

// Emits the value at i (with any attributes before it); returns the index after it.
std::size_t emit_json(Frame f, std::size_t i, std::string& out) {
  const std::size_t first_attr = i;
  i = resp::skip_attributes(f, i);
  if (i >= f.size()) return f.size();
  const Node& n = f[i];
  out += '{';
  switch (n.type) {
    case Type::simple_string:
      out += "\"simple\": ";
      append_json_string(n.value, out);
      break;
    case Type::simple_error:
      out += "\"error\": ";
      append_json_string(n.value, out);
      break;
    case Type::blob_string:
      out += "\"blob\": ";
      append_json_string(n.value, out);
      break;
    case Type::blob_error:
      out += "\"blob_error\": ";
      append_json_string(n.value, out);
      break;
    case Type::verbatim:
      out += "\"verbatim\": ";
      append_json_string(n.value, out);
      out += ", \"format\": ";
      append_json_string(n.format, out);
      break;
    case Type::number: {
      out += "\"number\": ";
      const auto v = resp::to_int64(n);
      char buf[24];
      const auto r = std::to_chars(buf, buf + sizeof(buf), v.value_or(0));
      out.append(buf, r.ptr);
      break;
    }
    case Type::big_number:
      out += "\"big\": ";
      append_json_string(n.value, out);
      break;
    case Type::double_:
      out += "\"double\": ";
      append_double(n, out);
      break;
    case Type::boolean:
      out += n.value == "t" ? "\"bool\": true" : "\"bool\": false";
      break;
    case Type::null:
      out += "\"null\": true";
      break;
    case Type::map:
      out += "\"map\": ";
      emit_pairs(f, i + 1, n.size, out);
      break;
    case Type::array:
    case Type::set:
    case Type::push:
    case Type::attribute: {  // attribute cannot be here (skipped above)
      out += n.type == Type::set    ? "\"set\": ["
             : n.type == Type::push ? "\"push\": ["
                                    : "\"array\": [";
      std::size_t j = i + 1;
      for (std::uint64_t k = 0; k < n.size; ++k) {
        if (k != 0) out += ", ";
        j = emit_json(f, j, out);
      }
      out += ']';
      break;
    }
  }
  if (first_attr != i) {
    // All attributes annotating this value, in order, as one list of pairs.
    out += ", \"attributes\": [";
    bool any = false;
    for (std::size_t a = first_attr; a < i; a = resp::next_sibling(f, a)) {
      std::size_t j = a + 1;
      for (std::uint64_t k = 0; k < f[a].size; ++k) {
        if (any) out += ", ";
        any = true;
        out += '[';
        j = emit_json(f, j, out);
        out += ", ";
        j = emit_json(f, j, out);
        out += ']';
      }
    }
    out += ']';
  }
  out += '}';
  return resp::next_sibling(f, i);
}

// --- human layout (after redis-cli) ---------------------------------------------------------

void append_quoted(std::string_view s, std::string& out) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\a':
        out += "\\a";
        break;
      case '\b':
        out += "\\b";
        break;
      default:
        if (c >= 0x20 && c <= 0x7e) {
          out += static_cast<char>(c);
        } else {
          out += "\\x";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        }
    }
  }
  out += '"';
}

// `prefix` is the indentation of continuation lines at the current level; callees extend it
// and restore it (one shared string: memory stays linear in the depth).
std::size_t emit_human(Frame f, std::size_t i, std::string& prefix, std::string& out);

// Writes an aggregate's elements; `mark` follows each index ("1) ", "1# ", "1~ ", "1> ").
std::size_t emit_elements(Frame f, std::size_t j, std::uint64_t count, bool pairs, char mark,
                          std::string& prefix, std::string& out) {
  char width_buf[24];
  const auto width =
      static_cast<std::size_t>(std::to_chars(width_buf, width_buf + 24, count).ptr - width_buf);
  const std::size_t saved = prefix.size();
  for (std::uint64_t k = 0; k < count; ++k) {
    if (k != 0) out += prefix;
    char idx[24];
    const auto len = static_cast<std::size_t>(std::to_chars(idx, idx + 24, k + 1).ptr - idx);
    out.append(width - len, ' ');
    out.append(idx, len);
    out += mark;
    out += ' ';
    prefix.append(width + 2, ' ');
    if (pairs) {
      // Key inline, then " => " and the value.
      std::string key;
      j = emit_human(f, j, prefix, key);
      if (!key.empty() && key.back() == '\n') key.pop_back();
      out += key;
      out += " => ";
    }
    j = emit_human(f, j, prefix, out);
    prefix.resize(saved);
  }
  return j;
}

std::size_t emit_human(Frame f, std::size_t i, std::string& prefix, std::string& out) {
  // Attributes first, each on its own "|" lines.
  while (i < f.size() && f[i].type == Type::attribute) {
    out += "(attribute) ";
    if (f[i].size == 0) {
      out += "(empty)\n";
      ++i;
    } else {
      i = emit_elements(f, i + 1, f[i].size, true, '|', prefix, out);
    }
    out += prefix;
  }
  if (i >= f.size()) return f.size();
  const Node& n = f[i];
  switch (n.type) {
    case Type::simple_string:
      out += n.value;
      break;
    case Type::simple_error:
      out += "(error) ";
      out += n.value;
      break;
    case Type::blob_error:
      out += "(error) ";
      append_quoted(n.value, out);
      break;
    case Type::blob_string:
      append_quoted(n.value, out);
      break;
    case Type::verbatim:
      out += "(verbatim ";
      append_quoted(n.format, out);
      out += ") ";
      append_quoted(n.value, out);
      break;
    case Type::number:
      out += "(integer) ";
      out += n.value;
      break;
    case Type::double_:
      out += "(double) ";
      out += n.value;
      break;
    case Type::big_number:
      out += "(big number) ";
      out += n.value;
      break;
    case Type::boolean:
      out += n.value == "t" ? "(true)" : "(false)";
      break;
    case Type::null:
      out += "(nil)";
      break;
    case Type::array:
    case Type::set:
    case Type::push:
    case Type::map:
    case Type::attribute: {
      const char* name = n.type == Type::map    ? "map"
                         : n.type == Type::set  ? "set"
                         : n.type == Type::push ? "push"
                                                : "array";
      if (n.size == 0) {
        out += "(empty ";
        out += name;
        out += ")\n";
        return i + 1;
      }
      if (n.type == Type::push) {
        out += "(push) ";
        const std::size_t saved = prefix.size();
        prefix.append(7, ' ');  // under "(push) "
        const std::size_t next = emit_elements(f, i + 1, n.size, false, '>', prefix, out);
        prefix.resize(saved);
        return next;
      }
      const char mark = n.type == Type::map ? '#' : n.type == Type::set ? '~' : ')';
      return emit_elements(f, i + 1, n.size, n.type == Type::map, mark, prefix, out);
    }
  }
  out += '\n';
  return i + 1;
}

}  // namespace

void append_json_string(std::string_view s, std::string& out) {
  out += '"';
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c <= 0x7e) {
      out += static_cast<char>(c);
    } else {
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  out += '"';
}

void append_json(Frame frame, std::string& out) {
  emit_json(frame, 0, out);
}

void append_human(Frame frame, std::string& out) {
  std::string prefix;
  emit_human(frame, 0, prefix, out);
}

}  // namespace lockwire::respcat
