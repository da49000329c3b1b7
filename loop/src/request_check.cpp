// RequestShape (the request rules, see request.hpp) and the non-template part of RequestBuilder.
// One set of rules for both ways in: RequestShape::add() judges one command at a time (the
// builder calls it as commands are added), RequestShape::of() walks encoded bytes from outside
// and feeds each command to add().
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lockwire/loop/request.hpp"
#include "request_rules.hpp"

namespace lockwire::loop {

namespace {

enum class Cmd : std::uint8_t {
  other,
  multi,
  exec,
  discard,
  watch,
  unwatch,
  subscribe,    // needs >= 1 channel; RESP3 acks are pushes, not replies
  unsubscribe,  // same, 0 channels allowed
  unsupported,  // would break RESP3 or reply matching
};

char upper(char c) noexcept {
  return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c;
}

// `b` is upper case.
bool iequal(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (upper(a[i]) != b[i]) return false;
  }
  return true;
}

Cmd classify(std::string_view name, std::string_view arg1, std::size_t argc) noexcept {
  switch (name.size()) {
    case 4:
      if (iequal(name, "EXEC")) return Cmd::exec;
      break;
    case 5:
      if (iequal(name, "MULTI")) return Cmd::multi;
      if (iequal(name, "WATCH")) return Cmd::watch;
      if (iequal(name, "RESET")) return Cmd::unsupported;
      if (iequal(name, "HELLO")) return Cmd::unsupported;
      break;
    case 6:
      if (iequal(name, "CLIENT") && argc >= 2 && iequal(arg1, "REPLY")) return Cmd::unsupported;
      break;
    case 7:
      if (iequal(name, "DISCARD")) return Cmd::discard;
      if (iequal(name, "UNWATCH")) return Cmd::unwatch;
      if (iequal(name, "MONITOR")) return Cmd::unsupported;
      break;
    case 9:
      if (iequal(name, "SUBSCRIBE")) return Cmd::subscribe;
      break;
    case 10:
      if (iequal(name, "PSUBSCRIBE") || iequal(name, "SSUBSCRIBE")) return Cmd::subscribe;
      break;
    case 11:
      if (iequal(name, "UNSUBSCRIBE")) return Cmd::unsubscribe;
      break;
    case 12:
      if (iequal(name, "PUNSUBSCRIBE") || iequal(name, "SUNSUBSCRIBE")) return Cmd::unsubscribe;
      break;
    default:
      break;
  }
  return Cmd::other;
}

constexpr const char* kNotResp = "request is not a sequence of RESP arrays of blob strings";

bool read_len(std::string_view b, std::size_t& p, char prefix, std::uint64_t& out) noexcept {
  if (p >= b.size() || b[p] != prefix) return false;
  ++p;
  std::uint64_t v = 0;
  std::size_t digits = 0;
  while (p < b.size() && b[p] >= '0' && b[p] <= '9' && digits < 11) {
    v = v * 10 + static_cast<std::uint64_t>(b[p] - '0');
    ++p;
    ++digits;
  }
  if (digits == 0 || p + 1 >= b.size() || b[p] != '\r' || b[p + 1] != '\n') return false;
  p += 2;
  out = v;
  return true;
}

}  // namespace

namespace detail {
bool plain_command(std::string_view name, std::string_view arg1, std::size_t argc) noexcept {
  return argc != 0 && classify(name, arg1, argc) == Cmd::other;
}

namespace {
// A few buffers of bounded size: what a loop turn's requests need, at most 4 x 64 KiB a thread.
constexpr std::size_t kPooledBuffers = 4;
constexpr std::size_t kPooledCapacityMax = std::size_t{64} * 1024;
std::vector<std::string>& request_buffers() noexcept {
  static thread_local std::vector<std::string> buffers;
  return buffers;
}
}  // namespace

std::string take_request_buffer() noexcept {
  std::vector<std::string>& pool = request_buffers();
  if (pool.empty()) return {};
  std::string s = std::move(pool.back());
  pool.pop_back();
  return s;
}

void give_request_buffer(std::string&& bytes) noexcept {
  std::vector<std::string>& pool = request_buffers();
  const std::size_t cap = bytes.capacity();
  if (cap <= std::string().capacity() || cap > kPooledCapacityMax) return;
  if (pool.size() == kPooledBuffers) return;
  if (pool.capacity() < kPooledBuffers) {
    try {
      pool.reserve(kPooledBuffers);
    } catch (...) {  // no memory for the pool: the buffer is simply freed
      return;
    }
  }
  bytes.clear();
  pool.push_back(std::move(bytes));
}
}  // namespace detail

void RequestShape::add(std::string_view name, std::string_view arg1, std::size_t argc) noexcept {
  ++commands_;
  if (why_ != nullptr) return;
  if (argc == 0) {
    why_ = kNotResp;
    return;
  }
  const Cmd c = classify(name, arg1, argc);
  if (commands_ == 1) first_ = static_cast<std::uint8_t>(c);
  last_ = static_cast<std::uint8_t>(c);
  switch (c) {
    case Cmd::unsupported:
      why_ = "RESET, HELLO, MONITOR and CLIENT REPLY are not supported on a shared connection";
      return;
    case Cmd::subscribe:
    case Cmd::unsubscribe:
      if (c == Cmd::unsubscribe) unsubscribes_ = true;
      if (in_multi_) {
        why_ = "subscribe commands inside MULTI are not supported";
        return;
      }
      if (c == Cmd::subscribe && argc < 2) {
        why_ = "SUBSCRIBE needs at least one channel";
        return;
      }
      if (c == Cmd::subscribe) {
        if (nsubs_ == kMaxSubscribes) {
          why_ = "at most 8 subscribe commands in one request";
          return;
        }
        subs_[nsubs_++] = Subscribe{replies_, static_cast<std::uint32_t>(argc - 1)};
        ++replies_;
      }
      return;  // UNSUBSCRIBE: acknowledged by push frames only, no reply
    case Cmd::multi:
      ++multis_;
      if (in_multi_) misordered_ = true;  // MULTI inside MULTI
      in_multi_ = true;
      ++replies_;
      return;
    case Cmd::exec:
    case Cmd::discard:
      ++ends_;
      if (!in_multi_) misordered_ = true;  // EXEC or DISCARD before any MULTI
      in_multi_ = false;
      ++replies_;
      return;
    case Cmd::watch:
      ++watches_;
      ++replies_;
      return;
    case Cmd::unwatch:
      ++unwatches_;
      ++replies_;
      return;
    case Cmd::other:
      ++replies_;
      return;
  }
}

RequestShape RequestShape::of(std::string_view b) noexcept {
  RequestShape s;
  if (b.empty()) return s;  // error(): "empty request"
  std::size_t p = 0;
  while (p < b.size()) {
    std::uint64_t argc = 0;
    if (!read_len(b, p, '*', argc) || argc == 0) {
      s.why_ = kNotResp;
      return s;
    }
    std::string_view name, arg1;
    for (std::uint64_t i = 0; i < argc; ++i) {
      std::uint64_t len = 0;
      if (!read_len(b, p, '$', len) || len > b.size() - p || b.size() - p - len < 2 ||
          b[p + len] != '\r' || b[p + len + 1] != '\n') {
        s.why_ = kNotResp;
        return s;
      }
      if (i == 0) name = b.substr(p, len);
      if (i == 1) arg1 = b.substr(p, len);
      p += len + 2;
    }
    s.add(name, arg1, argc);
    if (s.why_ != nullptr) return s;
  }
  return s;
}

RequestKind RequestShape::kind() const noexcept {
  if (error() != nullptr || multis_ + ends_ + unwatches_ + watches_ == 0) {
    return RequestKind::plain;
  }
  return multis_ != 0 ? RequestKind::atomic : RequestKind::watch;
}

bool RequestShape::block_only() const noexcept {
  const Cmd last = static_cast<Cmd>(last_);
  return kind() == RequestKind::atomic && static_cast<Cmd>(first_) == Cmd::multi &&
         (last == Cmd::exec || last == Cmd::discard);
}

const char* RequestShape::error() const noexcept {
  if (why_ != nullptr) return why_;
  if (commands_ == 0) return "empty request";
  if (multis_ + ends_ + unwatches_ + watches_ == 0) return nullptr;
  const Cmd first = static_cast<Cmd>(first_);
  // atomic: one MULTI ... EXEC (or DISCARD) block, closed, with plain commands (no subscribe)
  // before or after it. The connection writes a request contiguously, so nothing of another
  // caller's can land inside the block; its plain commands wait for the lane with it.
  if (multis_ == 1 && ends_ == 1 && !misordered_ && !in_multi_ && watches_ == 0 &&
      unwatches_ == 0 && nsubs_ == 0 && !unsubscribes_) {
    return nullptr;
  }
  if (first == Cmd::watch && multis_ + ends_ + unwatches_ == 0) return nullptr;  // watch
  return "transaction-state commands must form one MULTI..EXEC block, with plain commands before "
         "or after it (send), or start with WATCH (watch)";
}

bool RequestShape::describes(const Request& r) const noexcept {
  return built_ && built_bytes_ == r.bytes.size() && commands_ == r.commands;
}

// ---------------------------------------------------------------------------------------------

void RequestBuilder::append(std::span<const std::string_view> argv) {
  // An upper bound instead of the exact size: no digit counting before the encoding.
  constexpr std::size_t kHeaderMax = 25;  // "$" or "*", up to 20 digits, CRLF (+ CRLF after)
  std::size_t bound = kHeaderMax;
  for (std::string_view a : argv) bound += kHeaderMax + a.size();
  if (bound > r_.bytes.size() - used_) grow(used_ + bound);
  used_ += resp::encode_command(r_.bytes.data() + used_, argv);
}

void RequestBuilder::grow(std::size_t need) {
  if (r_.bytes.empty()) r_.bytes = detail::take_request_buffer();  // the first command
  r_.bytes.resize(std::max({need, 2 * r_.bytes.size(), kFirstReserve}));
}

RequestBuilder& RequestBuilder::add(std::span<const std::string_view> args) {
  append(args);
  added(args.empty() ? std::string_view() : args[0], args.size() > 1 ? args[1] : std::string_view(),
        args.size());
  return *this;
}

void RequestBuilder::added(std::string_view name, std::string_view arg1,
                           std::size_t argc) noexcept {
  r_.shape_.add(name, arg1, argc);
  ++r_.commands;
}

Request RequestBuilder::done() {
  r_.bytes.resize(used_);
  used_ = 0;
  Request r = std::move(r_);
  r.kind = r.shape_.kind();
  r.shape_.built_bytes_ = r.bytes.size();
  r.shape_.built_ = true;
  r_ = Request{};
  r_.commands = 0;
  return r;
}

}  // namespace lockwire::loop
