// Redis' pubsub.c: SUBSCRIBE UNSUBSCRIBE PSUBSCRIBE PUNSUBSCRIBE PUBLISH (RESP2 arrays, RESP3
// pushes).
#include <algorithm>

#include "commands.hpp"

namespace lockwire::sim::model {

void cmd_subscribe(Impl& s, Client& c, Args& a) {
  for (std::size_t i = 1; i < a.size(); ++i) {
    if (std::find(c.channels.begin(), c.channels.end(), a[i]) == c.channels.end()) {
      c.channels.push_back(a[i]);
      s.channels[a[i]].push_back(c.id);
    }
    s.pubsub_reply(c, "subscribe", &a[i], s.sub_count(c));
  }
}

void cmd_psubscribe(Impl& s, Client& c, Args& a) {
  for (std::size_t i = 1; i < a.size(); ++i) {
    if (std::find(c.patterns.begin(), c.patterns.end(), a[i]) == c.patterns.end()) {
      c.patterns.push_back(a[i]);
      s.patterns[a[i]].push_back(c.id);
    }
    s.pubsub_reply(c, "psubscribe", &a[i], s.sub_count(c));
  }
}

void cmd_unsubscribe(Impl& s, Client& c, Args& a) {
  if (a.size() == 1) return s.unsubscribe_all(c, true);
  for (std::size_t i = 1; i < a.size(); ++i) s.unsubscribe(c, a[i], true);
}

void cmd_punsubscribe(Impl& s, Client& c, Args& a) {
  if (a.size() == 1) return s.punsubscribe_all(c, true);
  for (std::size_t i = 1; i < a.size(); ++i) s.punsubscribe(c, a[i], true);
}

void cmd_publish(Impl& s, Client& c, Args& a) {
  s.integer(c, s.publish(a[1], a[2]));
}

// PUBSUB CHANNELS [pattern]: active channels (one subscriber at least), in name order here
// (Redis: its hash table's).
void pubsub_channels(Impl& s, Client& c, Args& a) {
  const std::string* pat = a.size() == 2 ? nullptr : &a[2];
  std::vector<const std::string*> out;
  for (auto& [ch, ids] : s.channels)
    if (pat == nullptr || glob_match(*pat, ch)) out.push_back(&ch);
  s.array(c, out.size());
  for (auto* ch : out) s.bulk(c, *ch);
}

void pubsub_numsub(Impl& s, Client& c, Args& a) {
  s.array(c, (a.size() - 2) * 2);  // a flat array, in RESP3 too
  for (std::size_t j = 2; j < a.size(); ++j) {
    auto it = s.channels.find(a[j]);
    s.bulk(c, a[j]);
    s.integer(c, it == s.channels.end() ? 0 : static_cast<std::int64_t>(it->second.size()));
  }
}

void pubsub_numpat(Impl& s, Client& c, Args&) {
  s.integer(c, static_cast<std::int64_t>(s.patterns.size()));
}

void pubsub_shardchannels(Impl& s, Client& c, Args&) {
  s.array(c, 0);  // no SSUBSCRIBE in the model: no shard channels
}

void pubsub_shardnumsub(Impl& s, Client& c, Args& a) {
  s.array(c, (a.size() - 2) * 2);
  for (std::size_t j = 2; j < a.size(); ++j) {
    s.bulk(c, a[j]);
    s.integer(c, 0);
  }
}

void pubsub_help(Impl& s, Client& c, Args& a) {
  help_reply(s, c, a,
             {"CHANNELS [<pattern>]",
              "    Return the currently active channels matching a <pattern> (default: '*').",
              "NUMPAT",
              "    Return number of subscriptions to patterns.",
              "NUMSUB [<channel> ...]",
              "    Return the number of subscribers for the specified channels, excluding",
              "    pattern subscriptions(default: no channels).",
              "SHARDCHANNELS [<pattern>]",
              "    Return the currently active shard level channels matching a <pattern> "
              "(default: '*').",
              "SHARDNUMSUB [<shardchannel> ...]",
              "    Return the number of subscribers for the specified shard level channel(s)"});
}

}  // namespace lockwire::sim::model

namespace lockwire::sim {

using namespace model;

void RedisModel::Impl::pubsub_reply(Client& c, std::string_view kind, const std::string* name,
                                    std::size_t count) {
  const bool was = pushing;  // CLIENT_PUSHING: delivered even under CLIENT REPLY OFF
  pushing = true;
  push(c, 3);
  bulk(c, kind);
  if (name != nullptr) {
    bulk(c, *name);
  } else {
    null(c);
  }
  integer(c, static_cast<std::int64_t>(count));
  pushing = was;
}

bool RedisModel::Impl::unsubscribe(Client& c, const std::string& ch, bool notify) {
  auto it = std::find(c.channels.begin(), c.channels.end(), ch);
  bool removed = false;
  if (it != c.channels.end()) {
    c.channels.erase(it);
    auto& v = channels[ch];
    v.erase(std::remove(v.begin(), v.end(), c.id), v.end());
    if (v.empty()) channels.erase(ch);
    removed = true;
  }
  if (notify) pubsub_reply(c, "unsubscribe", &ch, sub_count(c));
  return removed;
}

bool RedisModel::Impl::punsubscribe(Client& c, const std::string& p, bool notify) {
  auto it = std::find(c.patterns.begin(), c.patterns.end(), p);
  bool removed = false;
  if (it != c.patterns.end()) {
    c.patterns.erase(it);
    auto& v = patterns[p];
    v.erase(std::remove(v.begin(), v.end(), c.id), v.end());
    if (v.empty()) patterns.erase(p);
    removed = true;
  }
  if (notify) pubsub_reply(c, "punsubscribe", &p, sub_count(c));
  return removed;
}

void RedisModel::Impl::unsubscribe_all(Client& c, bool notify) {
  if (c.channels.empty() && notify) pubsub_reply(c, "unsubscribe", nullptr, sub_count(c));
  auto chs = c.channels;
  for (auto& ch : chs) unsubscribe(c, ch, notify);
}

void RedisModel::Impl::punsubscribe_all(Client& c, bool notify) {
  if (c.patterns.empty() && notify) pubsub_reply(c, "punsubscribe", nullptr, sub_count(c));
  auto ps = c.patterns;
  for (auto& p : ps) punsubscribe(c, p, notify);
}

std::int64_t RedisModel::Impl::publish(const std::string& ch, const std::string& msg) {
  std::int64_t n = 0;
  if (auto it = channels.find(ch); it != channels.end()) {
    for (auto id : it->second) {
      Client& t = clients.at(id);
      pushing = true;
      push(t, 3);
      bulk(t, "message");
      bulk(t, ch);
      bulk(t, msg);
      pushing = false;
      ++n;
    }
  }
  for (auto& [pat, ids] : patterns) {
    if (!glob_match(pat, ch)) continue;
    for (auto id : ids) {
      Client& t = clients.at(id);
      pushing = true;
      push(t, 4);
      bulk(t, "pmessage");
      bulk(t, pat);
      bulk(t, ch);
      bulk(t, msg);
      pushing = false;
      ++n;
    }
  }
  trace("publish", ch);
  return n;
}

}  // namespace lockwire::sim
