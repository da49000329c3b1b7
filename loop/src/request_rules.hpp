// Private to lockwire_loop: the request rules (request_check.cpp) as the connection's own fast
// path needs them.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace lockwire::loop::detail {

// True when one command of `argc` arguments (the name included) named `name`, first argument
// `arg1`, is an ordinary one: no transaction state, no (un)subscribe, nothing refused — a
// request of it alone is plain, with exactly one reply (RequestShape's rules).
[[nodiscard]] bool plain_command(std::string_view name, std::string_view arg1,
                                 std::size_t argc) noexcept;

// Emptied request buffers, kept per thread for the next RequestBuilder: most requests' bytes
// are copied into the stream's pending write (UvStream::write) and their buffer would be freed
// right after, only for the next request to allocate one again. take: an empty string, with
// capacity when one was kept; give: kept if there is room and it is not too large.
[[nodiscard]] std::string take_request_buffer() noexcept;
void give_request_buffer(std::string&& bytes) noexcept;

}  // namespace lockwire::loop::detail
