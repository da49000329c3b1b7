// Watching a resource's holders as they change: the first view, then one event per holder that
// appears, is released or expires — woken by server pushes (BCAST tracking on the resource's key
// prefix, so expiry is seen too), never by polling while the server allows tracking.
//
//   lock::Watch w(client, conn_options, "deploy:web",
//                 [](const lock::WatchEvent& e) { print(e); },
//                 [](std::string_view note) { log(note); });
//   w.start();
//
// Runs on the client's loop; handlers run there. Where the server refuses client tracking, the
// watch re-reads every 500 ms instead and says so once through the note handler.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lockwire/lock/client.hpp"

namespace lockwire::lock {

// The live holders of a resource (shared holders whose companion key is gone are over).
struct HolderView {
  enum class State : std::uint8_t { free, exclusive, shared, contended };
  State state = State::free;
  std::vector<protocol::Holder> holders;
  std::uint64_t last_token = 0;
};
[[nodiscard]] HolderView classify(const LockInfo& info);
[[nodiscard]] const char* state_name(HolderView::State s) noexcept;

struct WatchEvent {
  enum class Type : std::uint8_t { initial, acquired, released, expired };
  Type type = Type::initial;
  protocol::Holder holder;  // acquired / released / expired: whose
  HolderView view;          // the view the event was derived from
};
[[nodiscard]] const char* event_name(WatchEvent::Type t) noexcept;

class Watch {
 public:
  using EventHandler = std::function<void(const WatchEvent&)>;
  using NoteHandler = std::function<void(std::string_view note)>;

  // `tracker` = how to reach the same server for the tracking connection (the client's own
  // connection is OPTIN; BCAST needs one of its own).
  Watch(Client& client, loop::ConnectionOptions tracker, std::string resource,
        EventHandler on_event, NoteHandler on_note = {});
  ~Watch();
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;

  void start();
  void close() noexcept;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace lockwire::lock
