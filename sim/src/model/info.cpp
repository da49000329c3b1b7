// Redis' INFO (genRedisInfoString): every section of 7.0.15 with its fields in Redis' order —
// server, clients, memory, persistence, stats, replication, cpu, modules, commandstats,
// errorstats, latencystats, cluster, keyspace. Sections come in Redis' order whatever the
// argument order ("default", "all", "everything" as Redis), separated by a blank line; RESP3
// gets a verbatim "txt" string. Values are the model's own accounting (commands, calls and
// failures per command, error codes, connections, keyspace hits, expiries, evictions, pub/sub,
// tracking, replication offsets); what the model cannot know is a plausible constant (memory
// beyond its used-memory estimate, fork and defrag figures, latency percentiles: none) or the
// host's (process id, os, CPU time in serve mode; zero in the simulator).
#include <cstdio>

#include "commands.hpp"

namespace lockwire::sim::model {

namespace {

enum : unsigned {
  S_SERVER = 1u << 0,
  S_CLIENTS = 1u << 1,
  S_MEMORY = 1u << 2,
  S_PERSISTENCE = 1u << 3,
  S_STATS = 1u << 4,
  S_REPLICATION = 1u << 5,
  S_CPU = 1u << 6,
  S_MODULES = 1u << 7,
  S_COMMANDSTATS = 1u << 8,
  S_ERRORSTATS = 1u << 9,
  S_LATENCYSTATS = 1u << 10,
  S_CLUSTER = 1u << 11,
  S_KEYSPACE = 1u << 12,
};

struct Section {
  const char* name;
  unsigned bit;
};
constexpr Section kSections[] = {
    {"server", S_SERVER},           {"clients", S_CLIENTS},
    {"memory", S_MEMORY},           {"persistence", S_PERSISTENCE},
    {"stats", S_STATS},             {"replication", S_REPLICATION},
    {"cpu", S_CPU},                 {"modules", S_MODULES},
    {"module_list", S_MODULES},     {"commandstats", S_COMMANDSTATS},
    {"errorstats", S_ERRORSTATS},   {"latencystats", S_LATENCYSTATS},
    {"cluster", S_CLUSTER},         {"keyspace", S_KEYSPACE},
};
constexpr unsigned kDefault = S_SERVER | S_CLIENTS | S_MEMORY | S_PERSISTENCE | S_STATS |
                              S_REPLICATION | S_CPU | S_MODULES | S_ERRORSTATS | S_CLUSTER |
                              S_KEYSPACE;
constexpr unsigned kAll = kDefault | S_COMMANDSTATS | S_LATENCYSTATS;

struct Out {
  std::string s;
  void f(std::string_view name, std::string_view value) {
    s.append(name).append(":").append(value).append("\r\n");
  }
  void f(std::string_view name, std::int64_t v) { f(name, std::to_string(v)); }
  void u(std::string_view name, std::uint64_t v) { f(name, std::to_string(v)); }
};

std::string fmt(const char* spec, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, spec, v);
  return buf;
}

std::int64_t config_int(const Impl& s, const char* name, std::int64_t def) {
  auto it = s.config.find(name);
  return it == s.config.end() ? def : std::atoll(it->second.c_str());
}

void server(const Impl& s, Out& o) {
  const std::int64_t now_us = s.hooks.wall_us ? s.hooks.wall_us() : 0;
  const std::int64_t uptime = (now_us / 1000 - s.start_ms) / 1000;
  o.s += "# Server\r\n";
  o.f("redis_version", "7.0.15");
  o.f("redis_git_sha1", "00000000");
  o.f("redis_git_dirty", "0");
  o.f("redis_build_id", "0");
  o.f("redis_mode", s.opt.sentinel_mode ? "sentinel"
                    : s.opt.cluster_enabled ? "cluster"
                                            : "standalone");
  o.f("os", s.opt.os);
  o.f("arch_bits", "64");
  o.f("monotonic_clock", "POSIX clock_gettime");
  o.f("multiplexing_api", "epoll");
  o.f("atomicvar_api", "c11-builtin");
  o.f("gcc_version", "12.2.0");
  o.f("process_id", s.opt.process_id);
  o.f("process_supervised", "no");
  o.f("run_id", s.run_id);
  o.f("tcp_port", s.opt.tcp_port);
  o.f("server_time_usec", now_us);
  o.f("uptime_in_seconds", uptime);
  o.f("uptime_in_days", uptime / (3600 * 24));
  const std::int64_t hz = config_int(s, "hz", 10);
  o.f("hz", hz);
  o.f("configured_hz", hz);
  o.f("lru_clock", (now_us / 1000000) & ((1 << 24) - 1));
  o.f("executable", s.opt.executable);
  o.f("config_file", "");
  o.f("io_threads_active", "0");
}

void clients(const Impl& s, Out& o) {
  std::int64_t blocked = 0, tracking = 0, timeouts = 0;
  for (auto& [id, c] : s.clients) {
    if (c.gone) continue;
    if (c.blocked || c.postponed) ++blocked;
    if (c.blocked && c.block_deadline_ms != 0) ++timeouts;
    if (c.tracking) ++tracking;
  }
  o.s += "# Clients\r\n";
  o.u("connected_clients", s.clients.size());
  o.f("cluster_connections", "0");
  o.f("maxclients", static_cast<std::int64_t>(static_cast<unsigned>(s.maxclients)));
  o.f("client_recent_max_input_buffer", "0");
  o.f("client_recent_max_output_buffer", "0");
  o.f("blocked_clients", blocked);
  o.f("tracking_clients", tracking);
  o.f("clients_in_timeout_table", timeouts);
}

void memory(const Impl& s, Out& o) {
  const std::uint64_t used = s.used_memory();
  const std::uint64_t peak = std::max(used, s.peak_memory);
  const std::uint64_t startup = 862000;
  const std::uint64_t rss = s.hooks.rss ? s.hooks.rss() : used + 4 * 1024 * 1024;
  const std::uint64_t overhead = startup + 256 * s.clients.size();
  const std::uint64_t dataset = used > overhead ? used - overhead : 0;
  const double dataset_perc =
      used > startup ? 100.0 * static_cast<double>(dataset) / static_cast<double>(used - startup)
                     : 0.0;
  o.s += "# Memory\r\n";
  o.u("used_memory", used);
  o.f("used_memory_human", bytes_to_human(used));
  o.u("used_memory_rss", rss);
  o.f("used_memory_rss_human", bytes_to_human(rss));
  o.u("used_memory_peak", peak);
  o.f("used_memory_peak_human", bytes_to_human(peak));
  o.f("used_memory_peak_perc",
      fmt("%.2f%%", 100.0 * static_cast<double>(used) / static_cast<double>(peak)));
  o.u("used_memory_overhead", overhead);
  o.u("used_memory_startup", startup);
  o.u("used_memory_dataset", dataset);
  o.f("used_memory_dataset_perc", fmt("%.2f%%", dataset_perc));
  o.u("allocator_allocated", used);
  o.u("allocator_active", used + used / 16);
  o.u("allocator_resident", rss);
  o.u("total_system_memory", s.opt.total_system_memory);
  o.f("total_system_memory_human", bytes_to_human(s.opt.total_system_memory));
  o.f("used_memory_lua", "31744");
  o.f("used_memory_vm_eval", "31744");
  o.f("used_memory_lua_human", "31.00K");
  o.f("used_memory_scripts_eval", "0");
  o.f("number_of_cached_scripts", "0");
  o.f("number_of_functions", "0");
  o.f("number_of_libraries", "0");
  o.f("used_memory_vm_functions", "32768");
  o.f("used_memory_vm_total", "64512");
  o.f("used_memory_vm_total_human", "63.00K");
  o.f("used_memory_functions", "184");
  o.f("used_memory_scripts", "184");
  o.f("used_memory_scripts_human", "184B");
  o.u("maxmemory", s.maxmemory);
  o.f("maxmemory_human", bytes_to_human(s.maxmemory));
  o.f("maxmemory_policy", policy_name(s.policy));
  o.f("allocator_frag_ratio", "1.06");
  o.u("allocator_frag_bytes", used / 16);
  o.f("allocator_rss_ratio", "1.00");
  o.f("allocator_rss_bytes", "0");
  o.f("rss_overhead_ratio", "1.00");
  o.f("rss_overhead_bytes", "0");
  o.f("mem_fragmentation_ratio",
      fmt("%.2f", used ? static_cast<double>(rss) / static_cast<double>(used) : 0.0));
  o.f("mem_fragmentation_bytes", static_cast<std::int64_t>(rss) - static_cast<std::int64_t>(used));
  o.f("mem_not_counted_for_evict", "0");
  o.f("mem_replication_backlog", "0");
  o.f("mem_total_replication_buffers", "0");
  o.f("mem_clients_slaves", "0");
  o.f("mem_clients_normal", "0");
  o.f("mem_cluster_links", "0");
  o.f("mem_aof_buffer", "0");
  o.f("mem_allocator", "jemalloc-5.3.0");
  o.f("active_defrag_running", "0");
  o.f("lazyfree_pending_objects", "0");
  o.f("lazyfreed_objects", "0");
}

void persistence(const Impl& s, Out& o) {
  auto aof = s.config.find("appendonly");
  const bool aof_on = aof != s.config.end() && aof->second == "yes";
  o.s += "# Persistence\r\n";
  o.f("loading", s.loading ? "1" : "0");
  o.f("async_loading", "0");
  o.f("current_cow_peak", "0");
  o.f("current_cow_size", "0");
  o.f("current_cow_size_age", "0");
  o.f("current_fork_perc", "0.00");
  o.f("current_save_keys_processed", "0");
  o.f("current_save_keys_total", "0");
  o.u("rdb_changes_since_last_save", s.dirty);
  o.f("rdb_bgsave_in_progress", "0");
  o.f("rdb_last_save_time", s.last_save_ms / 1000);
  o.f("rdb_last_bgsave_status", "ok");
  o.f("rdb_last_bgsave_time_sec", "-1");
  o.f("rdb_current_bgsave_time_sec", "-1");
  o.f("rdb_saves", "0");
  o.f("rdb_last_cow_size", "0");
  o.f("rdb_last_load_keys_expired", "0");
  o.f("rdb_last_load_keys_loaded", "0");
  o.f("aof_enabled", aof_on ? "1" : "0");
  o.f("aof_rewrite_in_progress", "0");
  o.f("aof_rewrite_scheduled", "0");
  o.f("aof_last_rewrite_time_sec", "-1");
  o.f("aof_current_rewrite_time_sec", "-1");
  o.f("aof_last_bgrewrite_status", "ok");
  o.f("aof_rewrites", "0");
  o.f("aof_rewrites_consecutive_failures", "0");
  o.f("aof_last_write_status", "ok");
  o.f("aof_last_cow_size", "0");
  o.f("module_fork_in_progress", "0");
  o.f("module_fork_last_cow_size", "0");
  if (aof_on) {
    o.f("aof_current_size", "0");
    o.f("aof_base_size", "0");
    o.f("aof_pending_rewrite", "0");
    o.f("aof_buffer_length", "0");
    o.f("aof_pending_bio_fsync", "0");
    o.f("aof_delayed_fsync", "0");
  }
  if (s.loading) {
    o.f("loading_start_time", s.wall_ms() / 1000);
    o.f("loading_total_bytes", "0");
    o.f("loading_rdb_used_mem", "0");
    o.f("loading_loaded_bytes", "0");
    o.f("loading_loaded_perc", "0.00");
    o.f("loading_eta_seconds", "1");
  }
}

void stats(const Impl& s, Out& o) {
  std::uint64_t items = 0;
  for (auto& [k, ids] : s.tracking_table) items += ids.size();
  o.s += "# Stats\r\n";
  o.u("total_connections_received", s.total_connections);
  o.u("total_commands_processed", s.numcommands);
  o.f("instantaneous_ops_per_sec", "0");
  o.u("total_net_input_bytes", s.net_input_bytes);
  o.u("total_net_output_bytes", s.net_output_bytes);
  o.f("total_net_repl_input_bytes", "0");
  o.f("total_net_repl_output_bytes", "0");
  o.f("instantaneous_input_kbps", "0.00");
  o.f("instantaneous_output_kbps", "0.00");
  o.f("instantaneous_input_repl_kbps", "0.00");
  o.f("instantaneous_output_repl_kbps", "0.00");
  o.u("rejected_connections", s.rejected_connections);
  o.f("sync_full", "0");
  o.f("sync_partial_ok", "0");
  o.f("sync_partial_err", "0");
  o.u("expired_keys", s.expired_keys);
  o.f("expired_stale_perc", "0.00");
  o.f("expired_time_cap_reached_count", "0");
  o.f("expire_cycle_cpu_milliseconds", "0");
  o.u("evicted_keys", s.evicted_keys);
  o.f("evicted_clients", "0");
  o.f("total_eviction_exceeded_time", "0");
  o.f("current_eviction_exceeded_time", "0");
  o.u("keyspace_hits", s.keyspace_hits);
  o.u("keyspace_misses", s.keyspace_misses);
  o.u("pubsub_channels", s.channels.size());
  o.u("pubsub_patterns", s.patterns.size());
  o.f("pubsubshard_channels", "0");
  o.f("latest_fork_usec", "0");
  o.f("total_forks", "0");
  o.f("migrate_cached_sockets", "0");
  o.f("slave_expires_tracked_keys", "0");
  o.f("active_defrag_hits", "0");
  o.f("active_defrag_misses", "0");
  o.f("active_defrag_key_hits", "0");
  o.f("active_defrag_key_misses", "0");
  o.f("total_active_defrag_time", "0");
  o.f("current_active_defrag_time", "0");
  o.u("tracking_total_keys", s.tracking_table.size());
  o.u("tracking_total_items", items);
  o.u("tracking_total_prefixes", s.prefix_table.size());
  o.f("unexpected_error_replies", "0");
  o.u("total_error_replies", s.total_error_replies);
  o.f("dump_payload_sanitizations", "0");
  o.u("total_reads_processed", s.reads_processed);
  o.u("total_writes_processed", s.writes_processed);
  o.f("io_threaded_reads_processed", "0");
  o.f("io_threaded_writes_processed", "0");
  o.f("reply_buffer_shrinks", "0");
  o.f("reply_buffer_expands", "0");
}

void replication(const Impl& s, Out& o) {
  o.s += "# Replication\r\n";
  if (s.replica) {
    o.f("role", "slave");
    o.f("master_host", s.master_host);
    o.f("master_port", s.master_port);
    o.f("master_link_status", "up");
    o.f("master_last_io_seconds_ago", "0");
    o.f("master_sync_in_progress", "0");
    o.f("slave_read_repl_offset", s.repl_offset);
    o.f("slave_repl_offset", s.repl_offset);
    o.f("slave_priority", config_int(s, "replica-priority", 100));
    o.f("slave_read_only", "1");
    o.f("replica_announced", "1");
  } else {
    o.f("role", "master");
  }
  o.u("connected_slaves", s.replica ? 0 : s.replica_acks.size());
  if (!s.replica) {
    int id = 0;
    for (auto& [addr, off] : s.replica_acks) {
      const auto colon = addr.rfind(':');
      o.f("slave" + std::to_string(id++),
          "ip=" + addr.substr(0, colon) +
              ",port=" + (colon == std::string::npos ? "0" : addr.substr(colon + 1)) +
              ",state=online,offset=" + std::to_string(off) + ",lag=0");
    }
  }
  o.f("master_failover_state", "no-failover");
  o.f("master_replid", s.run_id);
  o.f("master_replid2", std::string(40, '0'));
  o.f("master_repl_offset", s.reported_offset());
  o.f("second_repl_offset", "-1");
  const bool backlog = s.replica || s.backlog;
  o.f("repl_backlog_active", backlog ? "1" : "0");
  o.f("repl_backlog_size", config_int(s, "repl-backlog-size", 1048576));
  o.f("repl_backlog_first_byte_offset", backlog ? "1" : "0");
  o.f("repl_backlog_histlen", backlog ? s.reported_offset() : 0);
}

void cpu(const Impl& s, Out& o) {
  std::int64_t sys_us = 0, user_us = 0;
  if (s.hooks.cpu) s.hooks.cpu(sys_us, user_us);
  char sys[48], user[48];
  std::snprintf(sys, sizeof sys, "%lld.%06lld", static_cast<long long>(sys_us / 1000000),
                static_cast<long long>(sys_us % 1000000));
  std::snprintf(user, sizeof user, "%lld.%06lld", static_cast<long long>(user_us / 1000000),
                static_cast<long long>(user_us % 1000000));
  o.s += "# CPU\r\n";
  o.f("used_cpu_sys", sys);
  o.f("used_cpu_user", user);
  o.f("used_cpu_sys_children", "0.000000");
  o.f("used_cpu_user_children", "0.000000");
  o.f("used_cpu_sys_main_thread", sys);
  o.f("used_cpu_user_main_thread", user);
}

void modules(const Impl&, Out& o) {
  o.s += "# Modules\r\n";
}

void commandstats(const Impl& s, Out& o) {
  o.s += "# Commandstats\r\n";
  std::vector<std::pair<std::string, const Impl::CmdStat*>> rows;
  for (const auto& top : s.commands()) {
    if (auto it = s.cmdstats.find(&top); it != s.cmdstats.end()) rows.emplace_back(top.name, &it->second);
    for (const auto& sub : top.subs)
      if (auto it = s.cmdstats.find(&sub); it != s.cmdstats.end())
        rows.emplace_back(std::string(top.name) + "|" + sub.name, &it->second);
  }
  std::sort(rows.begin(), rows.end(), [](auto& x, auto& y) { return x.first < y.first; });
  for (auto& [name, st] : rows) {
    if (st->calls == 0 && st->failed == 0 && st->rejected == 0) continue;
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "calls=%llu,usec=%llu,usec_per_call=%.2f,rejected_calls=%llu,failed_calls=%llu",
                  static_cast<unsigned long long>(st->calls),
                  static_cast<unsigned long long>(st->usec),
                  st->calls == 0 ? 0.0
                                 : static_cast<double>(static_cast<float>(st->usec) /
                                                       static_cast<float>(st->calls)),
                  static_cast<unsigned long long>(st->rejected),
                  static_cast<unsigned long long>(st->failed));
    o.f("cmdstat_" + name, buf);
  }
}

void errorstats(const Impl& s, Out& o) {
  o.s += "# Errorstats\r\n";
  for (auto& [code, n] : s.error_counts) o.f("errorstat_" + code, "count=" + std::to_string(n));
}

void latencystats(const Impl&, Out& o) {
  o.s += "# Latencystats\r\n";  // percentiles are not modelled (no latency in the model)
}

void cluster(const Impl& s, Out& o) {
  o.s += "# Cluster\r\n";
  o.f("cluster_enabled", s.opt.cluster_enabled ? "1" : "0");
}

void keyspace(const Impl& s, Out& o) {
  o.s += "# Keyspace\r\n";
  for (std::size_t j = 0; j < s.dbs.size(); ++j) {
    const Db& db = s.dbs[j];
    if (db.dict.empty() && db.expires.empty()) continue;
    o.f("db" + std::to_string(j), "keys=" + std::to_string(db.dict.size()) +
                                      ",expires=" + std::to_string(db.expires.size()) +
                                      ",avg_ttl=" + std::to_string(db.avg_ttl));
  }
}

}  // namespace

std::string bytes_to_human(std::uint64_t n) {
  char buf[64];
  const char* units = "KMGTPE";
  if (n < 1024) {
    std::snprintf(buf, sizeof buf, "%lluB", static_cast<unsigned long long>(n));
    return buf;
  }
  double scale = 1024;
  for (int i = 0; i < 6; ++i, scale *= 1024) {
    if (static_cast<double>(n) < scale * 1024 || i == 5) {
      std::snprintf(buf, sizeof buf, "%.2f%c", static_cast<double>(n) / scale, units[i]);
      return buf;
    }
  }
  return buf;
}

// The sections INFO's arguments ask for ("all": everything but modules' own sections).
std::string info_text(const Impl& s, const Args& a, std::size_t first) {
  unsigned want = a.size() <= first ? kDefault : 0;
  for (std::size_t i = first; i < a.size(); ++i) {
    if (ieq(a[i], "default")) want |= kDefault;
    if (ieq(a[i], "all") || ieq(a[i], "everything")) want |= kAll;
    for (auto& sec : kSections)
      if (ieq(a[i], sec.name)) want |= sec.bit;
  }
  Out o;
  auto add = [&](unsigned bit, void (*gen)(const Impl&, Out&)) {
    if (!(want & bit)) return;
    if (!o.s.empty()) o.s += "\r\n";
    gen(s, o);
  };
  add(S_SERVER, server);
  add(S_CLIENTS, clients);
  add(S_MEMORY, memory);
  add(S_PERSISTENCE, persistence);
  add(S_STATS, stats);
  add(S_REPLICATION, replication);
  add(S_CPU, cpu);
  add(S_MODULES, modules);
  add(S_COMMANDSTATS, commandstats);
  add(S_ERRORSTATS, errorstats);
  add(S_LATENCYSTATS, latencystats);
  add(S_CLUSTER, cluster);
  add(S_KEYSPACE, keyspace);
  return o.s;
}

void cmd_info(Impl& s, Client& c, Args& a) {
  s.verbatim(c, info_text(s, a, 1));
}

}  // namespace lockwire::sim::model

namespace lockwire::sim {

// CONFIG RESETSTAT: resetServerStats, the command and error tables' counters.
void RedisModel::Impl::reset_stats() {
  numcommands = 0;
  total_connections = 0;
  expired_keys = 0;
  evicted_keys = 0;
  keyspace_hits = 0;
  keyspace_misses = 0;
  rejected_connections = 0;
  net_input_bytes = 0;
  net_output_bytes = 0;
  total_error_replies = 0;
  reads_processed = 0;
  writes_processed = 0;
  cmdstats.clear();
  error_counts.clear();
  peak_memory = used_memory();
}

}  // namespace lockwire::sim
