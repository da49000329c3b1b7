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
void cluster_count_failure_reports(Impl& s, Client& c, Args& a);

// added with issue #19 (defined in the file of their Redis source)
void client_help(Impl& s, Client& c, Args& a);
void client_list(Impl& s, Client& c, Args& a);
void client_no_evict(Impl& s, Client& c, Args& a);
void client_reply(Impl& s, Client& c, Args& a);
void client_trackinginfo(Impl& s, Client& c, Args& a);
void client_unblock(Impl& s, Client& c, Args& a);
void cmd_append(Impl& s, Client& c, Args& a);
void cmd_blmove(Impl& s, Client& c, Args& a);
void cmd_blmpop(Impl& s, Client& c, Args& a);
void cmd_blpop(Impl& s, Client& c, Args& a);
void cmd_brpop(Impl& s, Client& c, Args& a);
void cmd_brpoplpush(Impl& s, Client& c, Args& a);
void cmd_bzmpop(Impl& s, Client& c, Args& a);
void cmd_bzpopmax(Impl& s, Client& c, Args& a);
void cmd_bzpopmin(Impl& s, Client& c, Args& a);
void cmd_copy(Impl& s, Client& c, Args& a);
void cmd_expiretime(Impl& s, Client& c, Args& a);
void cmd_getrange(Impl& s, Client& c, Args& a);
void cmd_getset(Impl& s, Client& c, Args& a);
void cmd_hincrbyfloat(Impl& s, Client& c, Args& a);
void cmd_hkeys(Impl& s, Client& c, Args& a);
void cmd_hrandfield(Impl& s, Client& c, Args& a);
void cmd_hscan(Impl& s, Client& c, Args& a);
void cmd_hstrlen(Impl& s, Client& c, Args& a);
void cmd_hvals(Impl& s, Client& c, Args& a);
void cmd_incrbyfloat(Impl& s, Client& c, Args& a);
void cmd_lastsave(Impl& s, Client& c, Args& a);
void config_help(Impl& s, Client& c, Args& a);
void cmd_lcs(Impl& s, Client& c, Args& a);
void cmd_lindex(Impl& s, Client& c, Args& a);
void cmd_linsert(Impl& s, Client& c, Args& a);
void cmd_llen(Impl& s, Client& c, Args& a);
void cmd_lmove(Impl& s, Client& c, Args& a);
void cmd_lmpop(Impl& s, Client& c, Args& a);
void cmd_lpop(Impl& s, Client& c, Args& a);
void cmd_lpos(Impl& s, Client& c, Args& a);
void cmd_lpush(Impl& s, Client& c, Args& a);
void cmd_lpushx(Impl& s, Client& c, Args& a);
void cmd_lrange(Impl& s, Client& c, Args& a);
void cmd_lrem(Impl& s, Client& c, Args& a);
void cmd_lset(Impl& s, Client& c, Args& a);
void cmd_ltrim(Impl& s, Client& c, Args& a);
void cmd_move(Impl& s, Client& c, Args& a);
void cmd_msetnx(Impl& s, Client& c, Args& a);
void cmd_object(Impl& s, Client& c, Args& a);
void cmd_pexpiretime(Impl& s, Client& c, Args& a);
void cmd_psetex(Impl& s, Client& c, Args& a);
void cmd_randomkey(Impl& s, Client& c, Args& a);
void cmd_rename(Impl& s, Client& c, Args& a);
void cmd_renamenx(Impl& s, Client& c, Args& a);
void cmd_rpop(Impl& s, Client& c, Args& a);
void cmd_rpoplpush(Impl& s, Client& c, Args& a);
void cmd_rpush(Impl& s, Client& c, Args& a);
void cmd_rpushx(Impl& s, Client& c, Args& a);
void cmd_sdiff(Impl& s, Client& c, Args& a);
void cmd_sdiffstore(Impl& s, Client& c, Args& a);
void cmd_setex(Impl& s, Client& c, Args& a);
void cmd_setrange(Impl& s, Client& c, Args& a);
void cmd_sinter(Impl& s, Client& c, Args& a);
void cmd_sintercard(Impl& s, Client& c, Args& a);
void cmd_sinterstore(Impl& s, Client& c, Args& a);
void cmd_smismember(Impl& s, Client& c, Args& a);
void cmd_smove(Impl& s, Client& c, Args& a);
void cmd_spop(Impl& s, Client& c, Args& a);
void cmd_srandmember(Impl& s, Client& c, Args& a);
void cmd_sscan(Impl& s, Client& c, Args& a);
void cmd_strlen(Impl& s, Client& c, Args& a);
void cmd_sunion(Impl& s, Client& c, Args& a);
void cmd_sunionstore(Impl& s, Client& c, Args& a);
void cmd_swapdb(Impl& s, Client& c, Args& a);
void cmd_touch(Impl& s, Client& c, Args& a);
void cmd_zcount(Impl& s, Client& c, Args& a);
void cmd_zdiff(Impl& s, Client& c, Args& a);
void cmd_zdiffstore(Impl& s, Client& c, Args& a);
void cmd_zincrby(Impl& s, Client& c, Args& a);
void cmd_zinter(Impl& s, Client& c, Args& a);
void cmd_zintercard(Impl& s, Client& c, Args& a);
void cmd_zinterstore(Impl& s, Client& c, Args& a);
void cmd_zlexcount(Impl& s, Client& c, Args& a);
void cmd_zmpop(Impl& s, Client& c, Args& a);
void cmd_zmscore(Impl& s, Client& c, Args& a);
void cmd_zpopmax(Impl& s, Client& c, Args& a);
void cmd_zpopmin(Impl& s, Client& c, Args& a);
void cmd_zrandmember(Impl& s, Client& c, Args& a);
void cmd_zrangebylex(Impl& s, Client& c, Args& a);
void cmd_zrangestore(Impl& s, Client& c, Args& a);
void cmd_zrank(Impl& s, Client& c, Args& a);
void cmd_zremrangebylex(Impl& s, Client& c, Args& a);
void cmd_zremrangebyrank(Impl& s, Client& c, Args& a);
void cmd_zrevrange(Impl& s, Client& c, Args& a);
void cmd_zrevrangebylex(Impl& s, Client& c, Args& a);
void cmd_zrevrangebyscore(Impl& s, Client& c, Args& a);
void cmd_zrevrank(Impl& s, Client& c, Args& a);
void cmd_zscan(Impl& s, Client& c, Args& a);
void cmd_zunion(Impl& s, Client& c, Args& a);
void cmd_zunionstore(Impl& s, Client& c, Args& a);
void function_delete(Impl& s, Client& c, Args& a);
void function_flush(Impl& s, Client& c, Args& a);
void function_help(Impl& s, Client& c, Args& a);
void function_kill(Impl& s, Client& c, Args& a);
void function_list(Impl& s, Client& c, Args& a);
void function_load(Impl& s, Client& c, Args& a);
void function_stats(Impl& s, Client& c, Args& a);
void pubsub_channels(Impl& s, Client& c, Args& a);
void pubsub_help(Impl& s, Client& c, Args& a);
void pubsub_numpat(Impl& s, Client& c, Args& a);
void pubsub_numsub(Impl& s, Client& c, Args& a);
void pubsub_shardchannels(Impl& s, Client& c, Args& a);
void pubsub_shardnumsub(Impl& s, Client& c, Args& a);

void cmd_setbit(Impl& s, Client& c, Args& a);
void cmd_getbit(Impl& s, Client& c, Args& a);
void cmd_bitcount(Impl& s, Client& c, Args& a);
void cmd_bitpos(Impl& s, Client& c, Args& a);
void cmd_bitop(Impl& s, Client& c, Args& a);
void cmd_sort(Impl& s, Client& c, Args& a);
void cmd_sort_ro(Impl& s, Client& c, Args& a);
void memory_usage(Impl& s, Client& c, Args& a);
void memory_purge(Impl& s, Client& c, Args& a);
void memory_help(Impl& s, Client& c, Args& a);

void cmd_save(Impl& s, Client& c, Args& a);
void cmd_bgsave(Impl& s, Client& c, Args& a);
void cmd_shutdown(Impl& s, Client& c, Args& a);

// debug.cpp
void cmd_debug(Impl& s, Client& c, Args& a);

}  // namespace lockwire::sim::model
