// Redis' notify.c: keyspace notifications (notify-keyspace-events), published at once to
// __keyspace@<db>__:<key> (the event as message) and __keyevent@<db>__:<event> (the key).
#include "commands.hpp"

namespace lockwire::sim {

void RedisModel::Impl::notify(int type, std::string_view event, const std::string& key, int dbid) {
  if (!(notify_flags & type)) return;
  const std::string db = std::to_string(dbid);
  if (notify_flags & model::NOTIFY_KEYSPACE)
    publish("__keyspace@" + db + "__:" + key, std::string(event));
  if (notify_flags & model::NOTIFY_KEYEVENT)
    publish("__keyevent@" + db + "__:" + std::string(event), key);
}

}  // namespace lockwire::sim
