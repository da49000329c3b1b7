// Private to lockwire_loop: the request rules (request_check.cpp) as the connection's own fast
// path needs them.
#pragma once

#include <cstddef>
#include <string_view>

namespace lockwire::loop::detail {

// True when one command of `argc` arguments (the name included) named `name`, first argument
// `arg1`, is an ordinary one: no transaction state, no (un)subscribe, nothing refused — a
// request of it alone is plain, with exactly one reply (RequestShape's rules).
[[nodiscard]] bool plain_command(std::string_view name, std::string_view arg1,
                                 std::size_t argc) noexcept;

}  // namespace lockwire::loop::detail
