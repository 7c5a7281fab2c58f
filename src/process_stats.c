/*
 * process_stats: `stats` and its subcommands, in memcached's shape, with
 * kura's own figures (kura_*) after memcached's. Where memcached reports
 * memory, kura reports the disk store: "bytes" is the keys and values of
 * stored items (as memcached counts them), "limit_maxbytes" the size of
 * the file system that holds the database. kura has one "slab class"
 * (every item lives in the one database), so `stats items` and `stats
 * slabs` describe class 1.
 */
#include "process_members.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "cmdmask.h"
#include "config.h"
#include "metrics.h"
#include "stats_snapshot.h"
#include "util.h"

/* The -fsync policy as stats show it: always, never, 100ms, peer,100. */
static void
_fsync_name(enum ulog_fsync policy, uint32_t ms, char *out, size_t len)
{
    switch (policy) {
    case ULOG_FSYNC_ALWAYS:
        snprintf(out, len, "always");
        return;
    case ULOG_FSYNC_NEVER:
        snprintf(out, len, "never");
        return;
    case ULOG_FSYNC_INTERVAL:
        snprintf(out, len, "%ums", ms);
        return;
    case ULOG_FSYNC_PEER:
        snprintf(out, len, "peer,%u", ms);
        return;
    }
    snprintf(out, len, "?");
}

/* Update log and replication figures, per peer. */
static bool
_stats_replication(const struct stats_snapshot *snap,
                   const struct proto_request *req, struct buf *out)
{
    bool ok = true;
    const struct ulog_stats *u = &snap->ulog;
    uint64_t now_us = util_now_us();

    if (snap->has_ulog) {
        ok = ok && reply_stat(out, req, "kura_ulog_segments", "%u",
                              u->segments);
        ok = ok && reply_stat(out, req, "kura_ulog_bytes", "%" PRIu64,
                              u->bytes);
        ok = ok && reply_stat(out, req, "kura_ulog_last_lsn", "%" PRIu64,
                              u->last_lsn);
        ok = ok && reply_stat(out, req, "kura_ulog_last_seq", "%" PRIu64,
                              u->last_seq);
        ok = ok && reply_stat(out, req, "kura_ulog_durable_lsn", "%" PRIu64,
                              u->synced_lsn);
        ok = ok && reply_stat(out, req, "kura_ulog_checkpoint_lsn", "%" PRIu64,
                              u->checkpoint_lsn);
        ok = ok && reply_stat(out, req, "kura_ulog_oldest_lsn", "%" PRIu64,
                              u->oldest_lsn);
        ok = ok && reply_stat(out, req, "kura_ulog_group_writes", "%" PRIu64,
                              u->appends);
        ok = ok && reply_stat(out, req, "kura_ulog_records", "%" PRIu64,
                              u->records);
        ok = ok && reply_stat(out, req, "kura_ulog_syncs", "%" PRIu64,
                              u->syncs);
        ok = ok && reply_stat(out, req, "kura_ulog_sync_us", "%" PRIu64,
                              u->sync_us);
        ok = ok && reply_stat(out, req, "kura_ulog_checkpoints", "%" PRIu64,
                              u->checkpoints);
        ok = ok && reply_stat(out, req, "kura_ulog_dirty_checkpoints",
                              "%" PRIu64, u->dirty_checkpoints);
        ok = ok && reply_stat(out, req, "kura_ulog_write_backs", "%" PRIu64,
                              u->write_backs);
        ok = ok && reply_stat(out, req, "kura_ulog_segments_removed",
                              "%" PRIu64, u->purged);
        ok = ok && reply_stat(out, req, "kura_ulog_prepared_bytes", "%" PRIu64,
                              u->prepared_ahead);
        ok = ok && reply_stat(out, req, "kura_ulog_failed", "%d",
                              u->failed ? 1 : 0);
        char policy[32];
        _fsync_name(u->policy, u->fsync_ms, policy, sizeof(policy));
        ok = ok && reply_stat(out, req, "kura_fsync_policy", "%s", policy);
        /* -fsync peer (ulog.h U10-U12): 1 while no peer reports writes
         * and every group commit is synced, as under -fsync always. */
        ok = ok && reply_stat(out, req, "kura_fsync_peer_fallback", "%d",
                              u->peer_fallback ? 1 : 0);
        ok = ok && reply_stat(out, req, "kura_fsync_peer_fallbacks",
                              "%" PRIu64, u->peer_fallbacks);
        ok = ok && reply_stat(out, req, "kura_fsync_peers_live", "%u",
                              u->peers_live);
        ok = ok && reply_stat(out, req, "kura_fsync_peer_stalls", "%" PRIu64,
                              u->peer_stalls);
        ok = ok && reply_stat(out, req, "kura_ulog_peer_written_lsn",
                              "%" PRIu64, u->peer_lsn);
        ok = ok && reply_stat(out, req, "kura_ulog_fdatasynced_lsn",
                              "%" PRIu64, u->fdatasynced_lsn);
    }
    if (snap->has_master) {
        const struct repl_receiver_stats *m = &snap->master;
        ok = ok && reply_stat(out, req, "kura_repl_master_connected", "%d",
                              m->connected ? 1 : 0);
        ok = ok && reply_stat(out, req, "kura_repl_master_sid", "%u",
                              m->master_sid);
        ok = ok && reply_stat(out, req, "kura_repl_master_lag_seconds", "%.3f",
                              m->lag_seconds);
        ok = ok && reply_stat(out, req, "kura_repl_master_lag_records",
                              "%" PRIu64, m->lag_records);
        ok = ok && reply_stat(out, req, "kura_repl_master_applied_lsn",
                              "%" PRIu64, m->applied_lsn);
        ok = ok && reply_stat(out, req, "kura_repl_master_log_lsn", "%" PRIu64,
                              m->master_lsn);
        ok = ok && reply_stat(out, req, "kura_repl_master_received",
                              "%" PRIu64, m->received);
        ok = ok && reply_stat(out, req, "kura_repl_master_applied", "%" PRIu64,
                              m->applied);
        ok = ok && reply_stat(out, req, "kura_repl_master_resyncs", "%" PRIu64,
                              m->resyncs);
        ok = ok && reply_stat(out, req, "kura_repl_master_connects",
                              "%" PRIu64, m->connects);
        ok = ok && reply_stat(out, req, "kura_repl_master_connect_failures",
                              "%" PRIu64, m->connect_failures);
        ok = ok && reply_stat(out, req, "kura_repl_master_wacks", "%" PRIu64,
                              m->wacks);
        ok = ok && reply_stat(out, req, "kura_repl_master_delay_p50_us",
                              "%" PRIu64, m->delay_p50_us);
        ok = ok && reply_stat(out, req, "kura_repl_master_delay_p99_us",
                              "%" PRIu64, m->delay_p99_us);
        ok = ok && reply_stat(out, req, "kura_repl_master_delay_max_us",
                              "%" PRIu64, m->delay_max_us);
    }
    /* TLS (-tlsport, -mtls): zeros without it. */
    const struct tls_stats *t = &snap->tls;
    ok = ok && reply_stat(out, req, "kura_tls_handshakes", "%" PRIu64,
                          t->handshakes);
    ok = ok && reply_stat(out, req, "kura_tls_resumed", "%" PRIu64,
                          t->resumed);
    ok = ok && reply_stat(out, req, "kura_tls_handshake_failures",
                          "%" PRIu64, t->failures);
    ok = ok && reply_stat(out, req, "kura_tls_handshake_timeouts",
                          "%" PRIu64, t->timeouts);
    ok = ok && reply_stat(out, req, "kura_tls_plaintext_refused", "%" PRIu64,
                          t->plaintext);
    ok = ok && reply_stat(out, req, "kura_tls_ktls_tx", "%" PRIu64,
                          t->ktls_tx);
    ok = ok && reply_stat(out, req, "kura_tls_reloads", "%" PRIu64,
                          t->reloads);
    ok = ok && reply_stat(out, req, "kura_tls_reload_failures", "%" PRIu64,
                          t->reload_failures);
    ok = ok && reply_stat(out, req, "kura_tls_cert_not_after", "%" PRId64,
                          t->not_after);
    ok = ok && reply_stat(out, req, "kura_tls_link_cert_not_after",
                          "%" PRId64, snap->tls_link_not_after);
    ok = ok && reply_stat(out, req, "kura_repl_peers", "%d", snap->npeers);
    for (int i = 0; ok && i < snap->npeers; i++) {
        const struct repl_peer_stats *p = &snap->peers[i];
        char name[64];
        uint64_t lag_records = u->last_seq > p->acked_seq
                                   ? u->last_seq - p->acked_seq
                                   : 0;
        double lag_s = p->acked_lsn < u->last_lsn && now_us > p->acked_lsn
                           ? (double)(now_us - p->acked_lsn) / 1e6
                           : 0.0;
#define PEER_STAT(field, fmt, value)                                         \
    (snprintf(name, sizeof(name), "kura_repl_peer_%u_" field, p->sid),       \
     reply_stat(out, req, name, fmt, value))
        ok = ok && PEER_STAT("connected", "%d", p->connected ? 1 : 0);
        ok = ok && PEER_STAT("acked_lsn", "%" PRIu64, p->acked_lsn);
        ok = ok && PEER_STAT("lag_records", "%" PRIu64, lag_records);
        ok = ok && PEER_STAT("lag_seconds", "%.3f", lag_s);
        ok = ok && PEER_STAT("sent", "%" PRIu64, p->sent);
        ok = ok && PEER_STAT("resyncs", "%" PRIu64, p->resyncs);
#undef PEER_STAT
    }
    return ok;
}

static bool
_counter(struct buf *out, const struct proto_request *req,
         const struct stats_snapshot *snap, enum stats_counter id)
{
    return reply_stat(out, req, stats_name(id), "%" PRIu64,
                      snap->counters[id]);
}

static uint64_t
_disk_bytes(const char *path)
{
    struct statvfs vfs;
    if (statvfs(path, &vfs) != 0) {
        return 0;
    }
    return (uint64_t)vfs.f_blocks * vfs.f_frsize;
}

static uint64_t
_item_bytes(const struct process_env *env)
{
    int64_t b = atomic_load_explicit(&env->eng->bytes, memory_order_relaxed);
    return b > 0 ? (uint64_t)b : 0;
}

/* Values stored, not tombstones (kura_db_records counts both). */
static uint64_t
_items(const struct process_env *env)
{
    int64_t n = atomic_load_explicit(&env->eng->items, memory_order_relaxed);
    return n > 0 ? (uint64_t)n : 0;
}

static bool
_stats_general(struct process_ctx *ctx, const struct proto_request *req,
               struct buf *out)
{
    const struct process_env *env = ctx->env;
    struct stats_snapshot snap;
    struct rusage ru;
    struct expiry_flush fl;
    bool ok = true;

    memset(&snap, 0, sizeof(snap));
    env->snapshot(env->arg, &snap);
    getrusage(RUSAGE_SELF, &ru);
    txn_flush_state(env->eng, &fl);
    int64_t now = util_now_s();
    struct store *store = env->eng->store;

    ok = ok && reply_stat(out, req, "pid", "%ld", (long)getpid());
    ok = ok && reply_stat(out, req, "uptime", "%" PRId64,
                          now - snap.started_s);
    ok = ok && reply_stat(out, req, "time", "%" PRId64, now);
    ok = ok && reply_stat(out, req, "version", "%s-kura-%s",
                          REPLY_MEMCACHED_COMPAT, PACKAGE_VERSION);
    ok = ok && reply_stat(out, req, "pointer_size", "%d",
                          (int)(8 * sizeof(void *)));
    ok = ok && reply_stat(out, req, "rusage_user", "%ld.%06ld",
                          (long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec);
    ok = ok && reply_stat(out, req, "rusage_system", "%ld.%06ld",
                          (long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec);
    ok = ok && reply_stat(out, req, "max_connections", "%u",
                          snap.max_connections);
    ok = ok && reply_stat(out, req, "curr_connections", "%" PRIu64,
                          snap.curr_connections);
    ok = ok && reply_stat(out, req, "total_connections", "%" PRIu64,
                          snap.total_connections);
    ok = ok && reply_stat(out, req, "rejected_connections", "%" PRIu64,
                          snap.rejected_connections);
    ok = ok && reply_stat(out, req, "connection_structures", "%" PRIu64,
                          snap.curr_connections);
    for (int i = 0; ok && i <= STATS_BYTES_WRITTEN; i++) {
        ok = _counter(out, req, &snap, (enum stats_counter)i);
    }
    /* A disk store: its limit is the file system holding it. */
    ok = ok && reply_stat(out, req, "limit_maxbytes", "%" PRIu64,
                          _disk_bytes(store_path(store)));
    ok = ok && reply_stat(out, req, "accepting_conns", "%d",
                          snap.accepting_conns ? 1 : 0);
    ok = ok && reply_stat(out, req, "listen_disabled_num", "%" PRIu64,
                          snap.listen_disabled_num);
    ok = ok && reply_stat(out, req, "time_in_listen_disabled_us", "%" PRIu64,
                          snap.listen_disabled_us);
    ok = ok && reply_stat(out, req, "threads", "%d", snap.threads);
    ok = ok && _counter(out, req, &snap, STATS_CONN_YIELDS);
    /* The hash table is the database's bucket array. */
    uint64_t bnum = store_bnum(store);
    int power = 0;
    while (power < 63 && ((uint64_t)1 << power) < bnum) {
        power++;
    }
    ok = ok && reply_stat(out, req, "hash_power_level", "%d", power);
    ok = ok && reply_stat(out, req, "hash_bytes", "%" PRIu64,
                          bnum * sizeof(uint64_t));
    ok = ok && reply_stat(out, req, "hash_is_expanding", "0");
    if (env->settings->tout > 0) { /* as memcached lists it */
        ok = ok && _counter(out, req, &snap, STATS_IDLE_KICKS);
    }
    ok = ok && reply_stat(out, req, "bytes", "%" PRIu64, _item_bytes(env));
    ok = ok && reply_stat(out, req, "curr_items", "%" PRIu64, _items(env));
    ok = ok && _counter(out, req, &snap, STATS_TOTAL_ITEMS);
    ok = ok && reply_stat(out, req, "evictions", "0");
    ok = ok && _counter(out, req, &snap, STATS_RECLAIMED);
    ok = ok && reply_stat(out, req, "expired_unfetched", "0");
    ok = ok && reply_stat(out, req, "evicted_unfetched", "0");
    ok = ok && reply_stat(out, req, "evicted_active", "0");
    ok = ok && reply_stat(out, req, "lrutail_reflocked", "0");
    ok = ok && _counter(out, req, &snap, STATS_CMD_DENIED);
    ok = ok && _counter(out, req, &snap, STATS_WRITE_ERRORS);
    ok = ok && reply_stat(out, req, "kura_version", "%s", PACKAGE_VERSION);
    ok = ok && reply_stat(out, req, "kura_sid", "%u", env->eng->sid);
    ok = ok && reply_stat(out, req, "kura_db_path", "%s", store_path(store));
    ok = ok && reply_stat(out, req, "kura_db_records", "%" PRIu64,
                          store_rnum(store));
    ok = ok && reply_stat(out, req, "kura_db_file_size", "%" PRIu64,
                          store_fsiz(store));
    ok = ok && reply_stat(out, req, "kura_db_bnum", "%" PRIu64,
                          store_bnum(store));
    ok = ok && reply_stat(out, req, "kura_db_over_bnum", "%d",
                          store_over_bnum(store) ? 1 : 0);
    uint64_t damage_at = 0;
    uint64_t damage = store_damage(store, &damage_at);
    ok = ok && reply_stat(out, req, "kura_db_damage_seen", "%" PRIu64, damage);
    ok = ok && reply_stat(out, req, "kura_db_damage_offset", "%" PRIu64,
                          damage_at);
    ok = ok && reply_stat(out, req, "kura_group_commits", "%" PRIu64,
                          snap.commits);
    ok = ok && reply_stat(out, req, "kura_early_commits", "%" PRIu64,
                          snap.early_commits);
    ok = ok && reply_stat(out, req, "kura_writable", "%d",
                          process_accepts_writes(ctx) ? 1 : 0);
    ok = ok && reply_stat(out, req, "kura_flush_applied_us", "%" PRIu64,
                          fl.applied_us);
    ok = ok && reply_stat(out, req, "kura_flush_pending_us", "%" PRIu64,
                          fl.pending_us);
    ok = ok && reply_stat(out, req, "kura_tombstones_dropped", "%" PRIu64,
                          snap.tombstones_dropped);
    ok = ok && reply_stat(out, req, "kura_memory_limit", "%" PRIu64,
                          snap.memory_limit);
    ok = ok && reply_stat(out, req, "kura_db_buckets_locked", "%d",
                          snap.buckets_locked ? 1 : 0);
    ok = ok && reply_stat(out, req, "kura_prefetch_waits", "%" PRIu64,
                          snap.prefetch_waits);
    ok = ok && reply_stat(out, req, "kura_prefetch_reads", "%" PRIu64,
                          snap.prefetch_reads);
    ok = ok && _stats_replication(&snap, req, out);
    return ok && reply_stats_end(out, req);
}

static bool
_stats_settings(struct process_ctx *ctx, const struct proto_request *req,
                struct buf *out)
{
    const struct settings *s = ctx->env->settings;
    bool auth = ctx->env->auth != NULL && ctx->env->auth->enabled;
    char mask[256];
    char db[DBSPEC_PATH_MAX + 128];
    struct stats_snapshot snap;
    bool ok = true;

    memset(&snap, 0, sizeof(snap));
    ctx->env->snapshot(ctx->env->arg, &snap);

    cmdmask_format(s->mask, mask, sizeof(mask));
    dbspec_format(&s->db, db, sizeof(db));
    ok = ok && reply_stat(out, req, "maxbytes", "%" PRIu64,
                          _disk_bytes(store_path(ctx->env->eng->store)));
    /* The limit in force: -maxconn, lowered at start to what the
     * descriptor limit allows (as stats' max_connections says). */
    ok = ok && reply_stat(out, req, "maxconns", "%u",
                          snap.max_connections > 0 ? snap.max_connections
                                                   : s->maxconn);
    /* Over the limit a client is answered and closed at once. */
    ok = ok && reply_stat(out, req, "maxconns_fast", "yes");
    ok = ok && reply_stat(out, req, "verbosity", "%u", snap.verbosity);
    ok = ok && reply_stat(out, req, "tcpport", "%d", s->port);
    ok = ok && reply_stat(out, req, "inter", "%s", s->host);
    /* -port 0 makes -host a unix socket path; memcached says NULL when it
     * listens on TCP. */
    ok = ok && reply_stat(out, req, "domain_socket", "%s",
                          s->port == 0 ? s->host : "NULL");
    ok = ok && reply_stat(out, req, "stat_key_prefix", ":");
    ok = ok && reply_stat(out, req, "detail_enabled", "%s",
                          ctx->env->detail != NULL &&
                                  detail_on(ctx->env->detail)
                              ? "yes"
                              : "no");
    ok = ok && reply_stat(out, req, "num_threads", "%d", s->thnum);
    ok = ok && reply_stat(out, req, "item_size_max", "%zu", s->item_max);
    ok = ok && reply_stat(out, req, "idle_timeout", "%d", s->tout);
    ok = ok && reply_stat(out, req, "cas_enabled", "yes");
    ok = ok && reply_stat(out, req, "binding_protocol", "auto-negotiate");
    ok = ok && reply_stat(out, req, "auth_enabled_sasl", "%s",
                          auth ? "yes" : "no");
    ok = ok && reply_stat(out, req, "auth_enabled_ascii", "%s",
                          auth ? "yes" : "no");
    ok = ok && reply_stat(out, req, "shutdown_command", "no");
    ok = ok && reply_stat(out, req, "dump_enabled", "yes");
    ok = ok && reply_stat(out, req, "evictions", "off");
    ok = ok && reply_stat(out, req, "growth_factor", "1.25");
    ok = ok && reply_stat(out, req, "flush_enabled", "%s",
                          cmdmask_allows(s->mask, PROTO_CMD_FLUSH_ALL) ? "yes"
                                                                       : "no");
    ok = ok && reply_stat(out, req, "kura_dbname", "%s", db);
    ok = ok && reply_stat(out, req, "kura_ulog", "%s",
                          s->ulog_path[0] ? s->ulog_path : "(none)");
    ok = ok && reply_stat(out, req, "kura_ulim", "%" PRIu64, s->ulim);
    ok = ok && reply_stat(out, req, "kura_uas", "%s", s->uas ? "yes" : "no");
    ok = ok && reply_stat(out, req, "kura_sid", "%u", s->sid);
    ok = ok && reply_stat(out, req, "kura_mhost", "%s",
                          s->mhost[0] ? s->mhost : "(none)");
    ok = ok && reply_stat(out, req, "kura_mport", "%d", s->mport);
    ok = ok && reply_stat(out, req, "kura_rts", "%s",
                          s->rts_path[0] ? s->rts_path : "(none)");
    ok = ok && reply_stat(out, req, "kura_ukeep", "%u", s->ukeep);
    /* The key file's path only: never its contents. */
    ok = ok && reply_stat(out, req, "kura_rkey", "%s",
                          s->rkey_path[0] ? s->rkey_path : "(none)");
    char policy[32];
    _fsync_name(s->fsync, s->fsync_ms, policy, sizeof(policy));
    ok = ok && reply_stat(out, req, "kura_fsync", "%s", policy);
    ok = ok && reply_stat(out, req, "kura_mask", "%s", mask);
    return ok && reply_stats_end(out, req);
}

/* stats items: class 1 holds every item. */
static bool
_stats_items(struct process_ctx *ctx, const struct proto_request *req,
             struct buf *out)
{
    const struct process_env *env = ctx->env;
    struct stats_snapshot snap;
    uint64_t n = store_rnum(env->eng->store);
    bool ok = true;

    if (n == 0) {
        return reply_stats_end(out, req);
    }
    memset(&snap, 0, sizeof(snap));
    env->snapshot(env->arg, &snap);
    static const char *const zero[] = {
        "number_hot", "number_warm", "age_hot", "age_warm", "age",
        "evicted", "evicted_nonzero", "evicted_time", "outofmemory",
        "tailrepairs",
    };
    static const char *const zero_after[] = {
        "expired_unfetched", "evicted_unfetched", "evicted_active",
        "crawler_reclaimed", "crawler_items_checked", "lrutail_reflocked",
        "moves_to_cold", "moves_to_warm", "moves_within_lru",
        "direct_reclaims", "hits_to_hot", "hits_to_warm", "hits_to_cold",
        "hits_to_temp",
    };
    ok = ok && reply_stat(out, req, "items:1:number", "%" PRIu64, n);
    ok = ok && reply_stat(out, req, "items:1:number_cold", "%" PRIu64, n);
    ok = ok && reply_stat(out, req, "items:1:mem_requested", "%" PRIu64,
                          _item_bytes(env));
    char name[64];
    for (size_t i = 0; ok && i < sizeof(zero) / sizeof(zero[0]); i++) {
        snprintf(name, sizeof(name), "items:1:%s", zero[i]);
        ok = reply_stat(out, req, name, "0");
    }
    ok = ok && reply_stat(out, req, "items:1:reclaimed", "%" PRIu64,
                          snap.counters[STATS_RECLAIMED]);
    for (size_t i = 0; ok && i < sizeof(zero_after) / sizeof(zero_after[0]);
         i++) {
        snprintf(name, sizeof(name), "items:1:%s", zero_after[i]);
        ok = reply_stat(out, req, name, "0");
    }
    return ok && reply_stats_end(out, req);
}

/* stats slabs: class 1's chunks are the file's records, the used ones
 * its items (curr_items) and the free ones its tombstones; memory is the
 * file. */
static bool
_stats_slabs(struct process_ctx *ctx, const struct proto_request *req,
             struct buf *out)
{
    const struct process_env *env = ctx->env;
    struct store *store = env->eng->store;
    uint64_t n = store_rnum(store);
    uint64_t used = _items(env);
    struct stats_snapshot snap;
    bool ok = true;

    if (used > n) {
        used = n; /* the two are read at slightly different moments */
    }

    memset(&snap, 0, sizeof(snap));
    env->snapshot(env->arg, &snap);
    if (n > 0) {
        static const enum stats_counter per_class[] = {
            STATS_GET_HITS,  STATS_CMD_SET,  STATS_DELETE_HITS,
            STATS_INCR_HITS, STATS_DECR_HITS, STATS_CAS_HITS,
            STATS_CAS_BADVAL, STATS_TOUCH_HITS,
        };
        char name[64];
        ok = ok && reply_stat(out, req, "1:chunk_size", "%zu",
                              env->settings->item_max);
        ok = ok && reply_stat(out, req, "1:chunks_per_page", "1");
        ok = ok && reply_stat(out, req, "1:total_pages", "%" PRIu64, n);
        ok = ok && reply_stat(out, req, "1:total_chunks", "%" PRIu64, n);
        ok = ok && reply_stat(out, req, "1:used_chunks", "%" PRIu64, used);
        ok = ok && reply_stat(out, req, "1:free_chunks", "%" PRIu64,
                              n - used);
        ok = ok && reply_stat(out, req, "1:free_chunks_end", "0");
        for (size_t i = 0; ok && i < sizeof(per_class) / sizeof(per_class[0]);
             i++) {
            snprintf(name, sizeof(name), "1:%s", stats_name(per_class[i]));
            ok = reply_stat(out, req, name, "%" PRIu64,
                            snap.counters[per_class[i]]);
        }
    }
    ok = ok && reply_stat(out, req, "active_slabs", "%d", n > 0 ? 1 : 0);
    ok = ok && reply_stat(out, req, "total_malloced", "%" PRIu64,
                          store_fsiz(store));
    return ok && reply_stats_end(out, req);
}

/* memcached caps a cache dump at 2 MB of output. */
#define CACHEDUMP_MAX_BYTES (2u << 20)

/*
 * stats cachedump <class> <limit>: "ITEM <key> [<bytes> b; <exptime> s]"
 * for up to `limit` items (0: as many as fit in 2 MB) of class 1, in file
 * order. It walks the database's one iterator, so when a resync holds it
 * the dump is refused rather than wait.
 */
static bool
_stats_cachedump(struct process_ctx *ctx, struct buf *out, unsigned cls,
                 unsigned limit)
{
    struct store *store = ctx->env->eng->store;
    struct now n;
    size_t start = buf_len(out);
    bool ok = true;

    if (cls < 1 || cls > 63) { /* memcached's class ids */
        return reply_raw(out, "CLIENT_ERROR Illegal slab id\r\n", 30);
    }
    if (cls != 1) {
        return reply_text_code(out, REPLY_END);
    }
    if (!store_iter_try_acquire(store)) {
        return reply_raw(out, "SERVER_ERROR busy, try again\r\n", 30);
    }
    process_now(ctx, &n);
    store_iter_init(store);
    char key[PROTO_KEY_MAX + 1];
    size_t nkey;
    unsigned listed = 0;
    while (ok && (limit == 0 || listed < limit) &&
           buf_len(out) - start < CACHEDUMP_MAX_BYTES &&
           store_iter_next(store, key, sizeof(key), &nkey) == STORE_OK) {
        struct txn_current cur;
        if (txn_read(ctx->batch, key, nkey, &cur) != TXN_OK) {
            continue;
        }
        if (process_visibility(&cur, &n) == VISIBLE) {
            char line[PROTO_KEY_MAX + 80];
            int len = snprintf(line, sizeof(line),
                               "ITEM %.*s [%zu b; %" PRIu32 " s]\r\n",
                               (int)nkey, key, cur.vlen, cur.meta.exptime);
            ok = reply_raw(out, line, (size_t)len);
            listed++;
        }
        txn_current_release(&cur);
    }
    store_iter_init(store); /* the sweeper starts its round again */
    store_iter_release(store);
    return ok && reply_text_code(out, REPLY_END);
}

/* The most figures one stats listing holds (peers included). */
#define METRICS_PAIRS_MAX 4096

/*
 * GET /-/metrics: the general stats listing through metrics_format(), the
 * text `kura stats --prometheus` prints, with kura_up 1 (this server
 * answered). A listing that cannot be formatted is a 500.
 */
enum process_result
process_metrics_http(struct process_ctx *ctx, const struct proto_request *req,
                     struct buf *out)
{
    struct proto_request text_req;
    struct buf text;
    struct buf prom;
    struct metrics_pair *pairs = malloc((METRICS_PAIRS_MAX + 1) *
                                        sizeof(*pairs));
    memset(&text_req, 0, sizeof(text_req));
    text_req.kind = PROTO_KIND_TEXT;
    text_req.cmd = PROTO_CMD_STATS;
    buf_init(&text);
    buf_init(&prom);
    bool ok = pairs != NULL && _stats_general(ctx, &text_req, &text);
    if (ok) {
        size_t n = metrics_parse_stats(buf_head(&text), buf_len(&text), pairs,
                                       METRICS_PAIRS_MAX);
        n = n < METRICS_PAIRS_MAX ? n : METRICS_PAIRS_MAX;
        pairs[n].name = METRICS_UP;
        pairs[n].name_len = strlen(METRICS_UP);
        pairs[n].value = "1";
        pairs[n].value_len = 1;
        ok = metrics_format(pairs, n + 1, &prom);
    }
    static const char type[] = "text/plain; version=0.0.4; charset=utf-8";
    struct reply_http r = {
        .status = ok ? 200 : 500,
        .ctype = type,
        .nctype = sizeof(type) - 1,
        .body = buf_head(&prom),
        .nbody = ok ? buf_len(&prom) : 0,
    };
    ok = reply_http(out, req, &r);
    buf_deinit(&text);
    buf_deinit(&prom);
    free(pairs);
    if (!ok) {
        return PROCESS_FATAL;
    }
    return req->http.keep_alive ? PROCESS_DONE : PROCESS_CLOSE;
}

static bool
_args_are(const struct proto_request *req, const char *word)
{
    size_t n = strlen(word);
    /* memcached ignores words after the subcommand. */
    return req->args_len >= n && memcmp(req->args, word, n) == 0 &&
           (req->args_len == n || req->args[n] == ' ');
}

/* memcached reads a binary stat key by its first bytes (strncmp). */
static bool
_bin_prefix(const struct proto_request *req, const char *word)
{
    size_t n = strlen(word);
    return req->args_len >= n && memcmp(req->args, word, n) == 0;
}

struct conns_out {
    struct buf *out;
    const struct proto_request *req;
};

static bool
_emit_conn_stat(void *arg, const char *name, const char *value)
{
    struct conns_out *o = arg;
    return reply_stat(o->out, o->req, name, "%s", value);
}

/* stats conns: every socket, as memcached lists them (conntab.h). */
static bool
_stats_conns(struct process_ctx *ctx, const struct proto_request *req,
             struct buf *out)
{
    struct conns_out o = {out, req};
    if (ctx->env->conntab != NULL &&
        !conntab_list(ctx->env->conntab, _emit_conn_stat, &o)) {
        return false;
    }
    return reply_stats_end(out, req);
}

/* stats detail on|off|dump (detail.h), as memcached answers it. */
static bool
_stats_detail_text(struct process_ctx *ctx, const struct proto_request *req,
                   struct buf *out)
{
    struct detail *d = ctx->env->detail;
    if (d != NULL && _args_are(req, "detail on")) {
        detail_set(d, true);
        return reply_text_code(out, REPLY_OK);
    }
    if (d != NULL && _args_are(req, "detail off")) {
        detail_set(d, false);
        return reply_text_code(out, REPLY_OK);
    }
    if (d != NULL && _args_are(req, "detail dump")) {
        return detail_dump(d, out, REPLY_BUF_LIMIT);
    }
    static const char usage[] =
        "CLIENT_ERROR usage: stats detail on|off|dump\r\n";
    return reply_raw(out, usage, sizeof(usage) - 1);
}

/* The binary form: the dump is one stat named "detailed"; on and off
 * answer with the end of the listing; anything else is not found. */
static bool
_stats_detail_bin(struct process_ctx *ctx, const struct proto_request *req,
                  struct buf *out)
{
    struct detail *d = ctx->env->detail;
    const char *rest = req->args + 6;
    size_t nrest = req->args_len - 6;
    if (d != NULL && nrest >= 5 && memcmp(rest, " dump", 5) == 0) {
        struct buf dump;
        buf_init(&dump);
        bool ok = detail_dump(d, &dump, REPLY_BUF_LIMIT) &&
                  reply_stat_bytes(out, req, "detailed", buf_head(&dump),
                                   buf_len(&dump));
        buf_deinit(&dump);
        return ok && reply_stats_end(out, req);
    }
    if (d != NULL && nrest >= 3 && memcmp(rest, " on", 3) == 0) {
        detail_set(d, true);
        return reply_stats_end(out, req);
    }
    if (d != NULL && nrest >= 4 && memcmp(rest, " off", 4) == 0) {
        detail_set(d, false);
        return reply_stats_end(out, req);
    }
    return reply_result(out, req, REPLY_NOT_FOUND, NULL);
}

enum process_result
process_stats(struct process_ctx *ctx, const struct proto_request *req,
              struct buf *out)
{
    if (req->args_len == 0) {
        return process_result_of(_stats_general(ctx, req, out));
    }
    if (_args_are(req, "settings")) {
        return process_result_of(_stats_settings(ctx, req, out));
    }
    if (_args_are(req, "reset") ||
        (req->kind == PROTO_KIND_BINARY && _bin_prefix(req, "reset"))) {
        ctx->env->reset(ctx->env->arg);
        if (ctx->env->detail != NULL) {
            detail_clear(ctx->env->detail);
        }
        if (req->kind == PROTO_KIND_BINARY) {
            return process_result_of(reply_stats_end(out, req));
        }
        return process_result_of(reply_text_code(out, REPLY_RESET));
    }
    if (_args_are(req, "items")) {
        return process_result_of(_stats_items(ctx, req, out));
    }
    if (_args_are(req, "slabs")) {
        return process_result_of(_stats_slabs(ctx, req, out));
    }
    if (_args_are(req, "sizes")) {
        return process_result_of(
            reply_stat(out, req, "sizes_status", "disabled") &&
            reply_stats_end(out, req));
    }
    if (_args_are(req, "conns") && req->kind != PROTO_KIND_BINARY) {
        return process_result_of(_stats_conns(ctx, req, out));
    }
    if (req->kind == PROTO_KIND_BINARY && _bin_prefix(req, "detail")) {
        return process_result_of(_stats_detail_bin(ctx, req, out));
    }
    if (_args_are(req, "detail")) {
        return process_result_of(_stats_detail_text(ctx, req, out));
    }
    if (_args_are(req, "cachedump") && req->kind != PROTO_KIND_BINARY) {
        char args[64];
        unsigned cls;
        unsigned limit;
        size_t n = req->args_len < sizeof(args) - 1 ? req->args_len
                                                    : sizeof(args) - 1;
        memcpy(args, req->args, n);
        args[n] = '\0';
        if (sscanf(args, "cachedump %u %u", &cls, &limit) != 2) {
            return process_result_of(reply_raw(
                out, "CLIENT_ERROR bad command line\r\n", 31));
        }
        return process_result_of(
            _stats_cachedump(ctx, out, cls, limit));
    }
    if (req->kind == PROTO_KIND_BINARY) {
        return process_result_of(
            reply_result(out, req, REPLY_NOT_FOUND, NULL));
    }
    return process_result_of(reply_text_code(out, REPLY_ERROR));
}
