// Redis' util.c helpers the model needs with Redis' exact semantics (strict integer parsing,
// glob matching, strtod-based floats), plus small string helpers.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace lockwire::sim::model {

constexpr std::int64_t kLLMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kLLMin = std::numeric_limits<std::int64_t>::min();

std::string lower(std::string_view s);
bool ieq(std::string_view a, std::string_view b);  // ASCII case-insensitive equality
// C string view of an argument: printf("%s") stops at the first NUL.
std::string_view cstr(std::string_view s);
// Redis' string2ll: strict decimal, no '+', no leading zeros, no spaces, fits in int64.
bool string2ll(std::string_view s, std::int64_t& out);
// Redis' strtod-based float parsing used by ZADD and score ranges.
bool string2d(std::string_view s, double& out);
inline std::string ll2s(std::int64_t v) {
  return std::to_string(v);
}
// Redis' string2ld (strtold, no leading space, no junk, no NaN, overflow refused) and
// ld2string(LD_STR_HUMAN): "%.17Lf" without trailing zeros, "-0" as "0" (INCRBYFLOAT).
bool string2ld(std::string_view s, long double& out);
std::string ld_human(long double v);
// Redis' d2string: integers as integers, else "%.17g"; "inf"/"-inf"/"nan".
std::string d2s(double v);
// Redis' stringmatchlen (glob-style; see util.cpp for the bound that keeps it polynomial).
bool glob_match(std::string_view pattern, std::string_view s, bool nocase = false);

}  // namespace lockwire::sim::model
