// Redis' tracking.c: client-side caching — the tracking table, BCAST prefixes, invalidate pushes
// (RESP3, or redirected to a RESP2 client's __redis__:invalidate subscription).
#include <cstdlib>
#include <iterator>

#include "model_impl.hpp"

namespace lockwire::sim {

using namespace model;

void RedisModel::Impl::send_tracking(Client& c, const std::string* key,
                                     const std::vector<std::string>* keys, bool null_all) {
  const bool was = pushing;
  pushing = true;
  send_tracking_frame(c, key, keys, null_all);
  pushing = was;
}

void RedisModel::Impl::send_tracking_frame(Client& c, const std::string* key,
                                           const std::vector<std::string>* keys,
                                           bool null_all) {
  Client* target = &c;
  bool redirected = false;
  if (c.redirect != 0) {
    auto it = clients.find(c.redirect);
    if (it == clients.end() || it->second.gone) {
      if (c.resp > 2) {
        push(c, 2);
        bulk(c, "tracking-redir-broken");
        integer(c, static_cast<std::int64_t>(c.redirect));
      }
      return;
    }
    target = &it->second;
    redirected = true;
  }
  if (target->resp > 2) {
    push(*target, 2);
    bulk(*target, "invalidate");
  } else if (redirected && target->pubsub_mode()) {
    push(*target, 3);
    bulk(*target, "message");
    bulk(*target, "__redis__:invalidate");
  } else {
    return;
  }
  if (null_all) {
    null(*target);
  } else if (key != nullptr) {
    array(*target, 1);
    bulk(*target, *key);
  } else {
    array(*target, keys->size());
    for (auto& k : *keys) bulk(*target, k);
  }
}

void RedisModel::Impl::tracking_limit() {
  std::int64_t max_keys = 1000000;
  if (auto it = config.find("tracking-table-max-keys"); it != config.end())
    max_keys = std::atoll(it->second.c_str());
  if (max_keys == 0) return;
  bool any = false;
  for (auto& [id, c] : clients) any = any || c.tracking;
  if (!any) return;
  if (static_cast<std::int64_t>(tracking_table.size()) <= max_keys) {
    tracking_limit_misses = 0;
    return;
  }
  // A random walk over the table, invalidating key after key until it fits; the effort grows
  // each time a pass could not get under the limit.
  for (std::uint64_t effort = 100 * (tracking_limit_misses + 1); effort > 0; --effort) {
    auto it = tracking_table.begin();
    std::advance(it, static_cast<std::ptrdiff_t>(rng.below(tracking_table.size())));
    const std::string key = it->first;
    tracking_invalidate(nullptr, key, false);
    if (static_cast<std::int64_t>(tracking_table.size()) <= max_keys) {
      tracking_limit_misses = 0;
      return;
    }
  }
  ++tracking_limit_misses;
}

void RedisModel::Impl::tracking_invalidate(Client* by, const std::string& key, bool bcast) {
  if (bcast && !prefix_table.empty()) {
    for (auto& [prefix, bc] : prefix_table) {
      if (key.compare(0, prefix.size(), prefix) == 0) bc.keys[key] = by ? by->id : 0;
    }
  }
  auto it = tracking_table.find(key);
  if (it == tracking_table.end()) return;
  auto ids = std::move(it->second);
  tracking_table.erase(it);
  for (auto id : ids) {
    auto ci = clients.find(id);
    if (ci == clients.end()) continue;
    Client& t = ci->second;
    if (!t.tracking || t.bcast || t.gone) continue;
    if (t.noloop && &t == current) continue;
    if (&t == current && in_call) {
      pending_self_keys.push_back(key);
      continue;
    }
    send_tracking(t, &key, nullptr, false);
  }
}

void RedisModel::Impl::flush_pending_self() {
  if (current == nullptr) return;
  auto keys = std::move(pending_self_keys);
  pending_self_keys.clear();
  const bool fl = pending_self_flush;
  pending_self_flush = false;
  if (current->gone) return;
  for (auto& k : keys) send_tracking(*current, &k, nullptr, false);
  if (fl) send_tracking(*current, nullptr, nullptr, true);
}

void RedisModel::Impl::tracking_on_flush() {
  for (auto& [id, cl] : clients) {
    if (!cl.tracking || cl.gone) continue;
    if (&cl == current && in_call) {
      pending_self_flush = true;
    } else {
      send_tracking(cl, nullptr, nullptr, true);
    }
  }
  tracking_table.clear();
}

// BCAST: once per event-loop turn, like beforeSleep().
void RedisModel::Impl::broadcast_invalidations() {
  for (auto& [prefix, bc] : prefix_table) {
    if (bc.keys.empty()) continue;
    for (auto id : bc.clients) {
      auto ci = clients.find(id);
      if (ci == clients.end() || ci->second.gone) continue;
      Client& t = ci->second;
      std::vector<std::string> keys;
      for (auto& [k, by] : bc.keys)
        if (!(t.noloop && by == t.id)) keys.push_back(k);
      if (!keys.empty()) send_tracking(t, nullptr, &keys, false);
    }
    bc.keys.clear();
  }
}

void RedisModel::Impl::remember_keys(Client& c, const CmdDef& cmd, const Args& a) {
  if (!c.tracking || c.bcast) return;
  if (c.optin && !c.caching) return;
  if (c.optout && c.caching) return;
  if (cmd.first_key <= 0) return;
  const int argc = static_cast<int>(a.size());
  const int last = cmd.last_key < 0 ? argc + cmd.last_key : cmd.last_key;
  for (int i = cmd.first_key; i <= last && i < argc; i += cmd.step)
    tracking_table[a[static_cast<std::size_t>(i)]].insert(c.id);
}

void RedisModel::Impl::disable_tracking(Client& c) {
  if (!c.tracking) return;
  if (c.bcast) {
    std::vector<std::string> ps = c.prefixes.empty() ? std::vector<std::string>{""} : c.prefixes;
    for (auto& p : ps) {
      auto it = prefix_table.find(p);
      if (it == prefix_table.end()) continue;
      it->second.clients.erase(c.id);
      if (it->second.clients.empty()) prefix_table.erase(it);
    }
  }
  c.tracking = c.bcast = c.optin = c.optout = c.noloop = c.caching = false;
  c.redirect = 0;
  c.prefixes.clear();
}

}  // namespace lockwire::sim
