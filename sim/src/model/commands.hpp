// Every command implementation (Redis' server.h prototypes), grouped by the file that defines
// it; command_table.cpp binds them to names, arities and flags.
#pragma once

#include "model_impl.hpp"

namespace lockwire::sim::model {

// server.cpp
void cmd_ping(Impl& s, Client& c, Args& a);
void cmd_echo(Impl& s, Client& c, Args& a);
void cmd_time(Impl& s, Client& c, Args& a);

// networking.cpp
void cmd_hello(Impl& s, Client& c, Args& a);
void cmd_quit(Impl& s, Client& c, Args& a);
void cmd_reset(Impl& s, Client& c, Args& a);

// acl.cpp
void cmd_auth(Impl& s, Client& c, Args& a);
void cmd_acl_setuser(Impl& s, Client& c, Args& a);
void cmd_acl_deluser(Impl& s, Client& c, Args& a);
void cmd_acl_whoami(Impl& s, Client& c, Args& a);
void cmd_acl_users(Impl& s, Client& c, Args& a);

// config.cpp
void cmd_config_get(Impl& s, Client& c, Args& a);
void cmd_config_set(Impl& s, Client& c, Args& a);
void cmd_config_resetstat(Impl& s, Client& c, Args& a);

// info.cpp
void cmd_info(Impl& s, Client& c, Args& a);

// client_cmds.cpp
void client_id(Impl& s, Client& c, Args& a);
void client_info(Impl& s, Client& c, Args& a);
void client_setname(Impl& s, Client& c, Args& a);
void client_getname(Impl& s, Client& c, Args& a);
void client_kill(Impl& s, Client& c, Args& a);
void client_tracking(Impl& s, Client& c, Args& a);
void client_caching(Impl& s, Client& c, Args& a);
void client_getredir(Impl& s, Client& c, Args& a);
void client_pause(Impl& s, Client& c, Args& a);
void client_unpause(Impl& s, Client& c, Args& a);

// db.cpp
void cmd_select(Impl& s, Client& c, Args& a);
void cmd_del(Impl& s, Client& c, Args& a);
void cmd_exists(Impl& s, Client& c, Args& a);
void cmd_type(Impl& s, Client& c, Args& a);
void cmd_dbsize(Impl& s, Client& c, Args& a);
void cmd_flushdb(Impl& s, Client& c, Args& a);
void cmd_flushall(Impl& s, Client& c, Args& a);
void cmd_keys(Impl& s, Client& c, Args& a);
void cmd_scan(Impl& s, Client& c, Args& a);

// expire.cpp
void cmd_expire(Impl& s, Client& c, Args& a);
void cmd_pexpire(Impl& s, Client& c, Args& a);
void cmd_expireat(Impl& s, Client& c, Args& a);
void cmd_pexpireat(Impl& s, Client& c, Args& a);
void cmd_persist(Impl& s, Client& c, Args& a);
void cmd_ttl(Impl& s, Client& c, Args& a);
void cmd_pttl(Impl& s, Client& c, Args& a);

// t_string.cpp
void cmd_get(Impl& s, Client& c, Args& a);
void cmd_set(Impl& s, Client& c, Args& a);
void cmd_mset(Impl& s, Client& c, Args& a);
void cmd_mget(Impl& s, Client& c, Args& a);
void cmd_setnx(Impl& s, Client& c, Args& a);
void cmd_getex(Impl& s, Client& c, Args& a);
void cmd_getdel(Impl& s, Client& c, Args& a);
void cmd_incr(Impl& s, Client& c, Args& a);
void cmd_incrby(Impl& s, Client& c, Args& a);
void cmd_decr(Impl& s, Client& c, Args& a);
void cmd_decrby(Impl& s, Client& c, Args& a);

// t_hash.cpp
void cmd_hset(Impl& s, Client& c, Args& a);
void cmd_hsetnx(Impl& s, Client& c, Args& a);
void cmd_hget(Impl& s, Client& c, Args& a);
void cmd_hmget(Impl& s, Client& c, Args& a);
void cmd_hgetall(Impl& s, Client& c, Args& a);
void cmd_hdel(Impl& s, Client& c, Args& a);
void cmd_hlen(Impl& s, Client& c, Args& a);
void cmd_hexists(Impl& s, Client& c, Args& a);
void cmd_hincrby(Impl& s, Client& c, Args& a);

// t_set.cpp
void cmd_sadd(Impl& s, Client& c, Args& a);
void cmd_srem(Impl& s, Client& c, Args& a);
void cmd_smembers(Impl& s, Client& c, Args& a);
void cmd_sismember(Impl& s, Client& c, Args& a);
void cmd_scard(Impl& s, Client& c, Args& a);

// t_zset.cpp
void cmd_zadd(Impl& s, Client& c, Args& a);
void cmd_zrem(Impl& s, Client& c, Args& a);
void cmd_zscore(Impl& s, Client& c, Args& a);
void cmd_zcard(Impl& s, Client& c, Args& a);
void cmd_zrange(Impl& s, Client& c, Args& a);
void cmd_zrangebyscore(Impl& s, Client& c, Args& a);
void cmd_zremrangebyscore(Impl& s, Client& c, Args& a);

// multi.cpp
void cmd_multi(Impl& s, Client& c, Args& a);
void cmd_exec(Impl& s, Client& c, Args& a);
void cmd_discard(Impl& s, Client& c, Args& a);
void cmd_watch(Impl& s, Client& c, Args& a);
void cmd_unwatch(Impl& s, Client& c, Args& a);

// pubsub.cpp
void cmd_subscribe(Impl& s, Client& c, Args& a);
void cmd_unsubscribe(Impl& s, Client& c, Args& a);
void cmd_psubscribe(Impl& s, Client& c, Args& a);
void cmd_punsubscribe(Impl& s, Client& c, Args& a);
void cmd_publish(Impl& s, Client& c, Args& a);

// replication.cpp
void cmd_role(Impl& s, Client& c, Args& a);
void cmd_wait(Impl& s, Client& c, Args& a);

// cluster.cpp
void cmd_asking(Impl& s, Client& c, Args& a);
void cmd_readonly(Impl& s, Client& c, Args& a);
void cmd_readwrite(Impl& s, Client& c, Args& a);
void cmd_migrate(Impl& s, Client& c, Args& a);
void cluster_info(Impl& s, Client& c, Args& a);
void cluster_myid(Impl& s, Client& c, Args& a);
void cluster_nodes(Impl& s, Client& c, Args& a);
void cluster_slots(Impl& s, Client& c, Args& a);
void cluster_shards(Impl& s, Client& c, Args& a);
void cluster_keyslot(Impl& s, Client& c, Args& a);
void cluster_countkeysinslot(Impl& s, Client& c, Args& a);
void cluster_getkeysinslot(Impl& s, Client& c, Args& a);
void cluster_setslot(Impl& s, Client& c, Args& a);
void cluster_failover(Impl& s, Client& c, Args& a);

// debug.cpp
void cmd_debug(Impl& s, Client& c, Args& a);

}  // namespace lockwire::sim::model
