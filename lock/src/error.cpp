#include "lockwire/lock/error.hpp"

#include <string>

namespace lockwire::lock {
namespace {

class Category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "lockwire.lock"; }
  std::string message(int v) const override {
    switch (static_cast<Errc>(v)) {
      case Errc::ok:
        return "success";
      case Errc::timed_out:
        return "timed out waiting for the lock";
      case Errc::not_held:
        return "lease not held (expired, force-released or not ours)";
      case Errc::lost:
        return "lease lost";
      case Errc::outcome_unknown:
        return "outcome unknown: the command was sent but no reply came";
      case Errc::connection:
        return "connection to the server failed";
      case Errc::protocol:
        return "unexpected reply from the server";
      case Errc::invalid_argument:
        return "invalid argument";
      case Errc::upgrade_conflict:
        return "another reader is upgrading its shared lease on the resource";
      case Errc::already_held:
        return "this owner already holds a lease on the resource";
      case Errc::closed:
        return "lock client closed";
      case Errc::server_refused:
        return "the server refused the command";
      case Errc::server_unavailable:
        return "the server cannot serve now (loading, busy or failing over)";
      case Errc::unsafe_server:
        return "the server may evict lock keys (maxmemory-policy is not noeviction)";
      case Errc::cancelled:
        return "the wait was cancelled";
      case Errc::not_replicated:
        return "not acknowledged by enough replicas";
      case Errc::busy:
        return "held by someone else (one attempt: wait 0)";
      case Errc::unsupported_server:
        return "the server is too old for lockwire (needs Redis >= 7.0 or Valkey >= 7.2)";
    }
    return "unknown lock error";
  }
};

}  // namespace

const std::error_category& lock_category() noexcept {
  static const Category c;
  return c;
}

std::error_code make_error_code(Errc e) noexcept {
  return {static_cast<int>(e), lock_category()};
}

}  // namespace lockwire::lock
