// `lockwire watch`: lock::Watch events printed as lines (text or JSON), one per change.
#include "session.hpp"

#include "output.hpp"

namespace lockwire::cli {

void Session::watch() {
  watchdog_->stop();
  watch_ = std::make_unique<lock::Watch>(
      *client_, conn_opts_, o_.resource, [this](const lock::WatchEvent& e) { emit(e); },
      [this](std::string_view n) {
        note("%s: %.*s", o_.resource.c_str(), static_cast<int>(n.size()), n.data());
      });
  watch_->start();
}

void Session::emit(const lock::WatchEvent& e) {
  if (exit_ >= 0) return;
  const std::string t = iso_time(loop_.wall_now());
  const char* event = lock::event_name(e.type);
  const bool initial = e.type == lock::WatchEvent::Type::initial;
  const std::uint64_t token = e.view.last_token;
  if (o_.json) {
    // Appends, not `"literal" + std::string` (g++ 12 -Wrestrict misfires on that at -O3).
    std::string line;
    line.append("{\"time\":\"").append(t).append("\",\"resource\":");
    line.append(json_string(o_.resource)).append(",\"event\":\"").append(event).append("\"");
    if (!initial) {
      line.append(",\"kind\":\"").append(kind_name(e.holder.kind)).append("\",\"owner\":");
      line.append(json_string(e.holder.owner)).append(",\"ttl_ms\":");
      line.append(std::to_string(e.holder.ttl_ms));
    } else {
      line.append(",\"state\":\"").append(lock::state_name(e.view.state)).append("\",\"holders\":");
      line.append(holders_json(e.view));
    }
    line.append(",\"last_token\":").append(std::to_string(token)).append("}\n");
    std::fputs(line.c_str(), stdout);
  } else if (!initial) {
    std::printf("%s %s %s %s %s (last token %llu)\n", t.c_str(), o_.resource.c_str(), event,
                kind_name(e.holder.kind).c_str(), printable(e.holder.owner).c_str(),
                static_cast<unsigned long long>(token));
  } else {
    std::string who;
    for (const auto& x : e.view.holders)
      who.append(" ").append(kind_name(x.kind)).append(":").append(printable(x.owner));
    std::printf("%s %s %s %s%s (last token %llu)\n", t.c_str(), o_.resource.c_str(), event,
                lock::state_name(e.view.state), who.c_str(),
                static_cast<unsigned long long>(token));
  }
  std::fflush(stdout);                   // one line per change, visible at once (pipes, tests)
  if (std::ferror(stdout)) finish(kOk);  // the reader went away (`lockwire watch r | head -3`)
}

}  // namespace lockwire::cli
