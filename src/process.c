/*
 * process: command semantics (see process.h).
 *
 * Visibility rule, applied by every command: a key is present only if its
 * record is a value (not a tombstone), its exptime has not passed and no
 * flush_all has invalidated it. Anything else counts as absent, exactly as
 * an expired or flushed item does in memcached.
 */
#include "process.h"

#include <inttypes.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cmdmask.h"
#include "config.h"
#include "expiry.h"
#include "reply.h"
#include "util.h"

/* Per-request view of the clock and the flush state. */
struct now {
    int64_t s;
    uint64_t us;
    struct expiry_flush flush;
};

enum visibility {
    VISIBLE,
    ABSENT,  /* no record, or a tombstone */
    EXPIRED, /* exptime passed */
    FLUSHED, /* invalidated by flush_all */
};

static void
_now(struct process_ctx *ctx, struct now *n)
{
    n->us = util_now_us();
    n->s = (int64_t)(n->us / 1000000u);
    txn_flush_state(ctx->env->eng, &n->flush);
}

static enum visibility
_visibility(const struct txn_current *cur, const struct now *n)
{
    if (!cur->found || cur->meta.kind != RECORD_VALUE) {
        return ABSENT;
    }
    if (expiry_expired(cur->meta.exptime, n->s)) {
        return EXPIRED;
    }
    if (expiry_flushed(&n->flush, cur->meta.ts, n->us)) {
        return FLUSHED;
    }
    return VISIBLE;
}

/* Replies unless the request asked for silence. */
static bool
_reply(const struct proto_request *req, struct buf *out, enum reply_code c)
{
    return req->noreply || reply_code(out, c);
}

static enum process_result
_result(bool ok)
{
    return ok ? PROCESS_DONE : PROCESS_FATAL;
}

static enum process_result
_txn_error(struct process_ctx *ctx, const struct proto_request *req,
           struct buf *out, enum txn_status st)
{
    stats_incr(ctx->stats, STATS_WRITE_ERRORS);
    switch (st) {
    case TXN_EREADONLY:
        return _result(_reply(req, out, REPLY_SERVER_ERROR_READONLY));
    case TXN_ENOMEM:
        return _result(_reply(req, out, REPLY_SERVER_ERROR_OOM));
    case TXN_ENOSPC:
        return _result(_reply(req, out, REPLY_SERVER_ERROR_NOSPACE));
    default:
        return _result(_reply(req, out, REPLY_SERVER_ERROR_IO));
    }
}

/* Fills the envelope of a new local write. */
static void
_new_meta(struct process_ctx *ctx, struct record_meta *m, uint32_t flags,
          uint32_t exptime)
{
    m->kind = RECORD_VALUE;
    m->flags = flags;
    m->exptime = exptime;
    m->ts = clock_next(ctx->env->eng->clock);
    m->cas = m->ts;
    m->sid = ctx->env->eng->sid;
}

/* get, gets, gat, gats */
static enum process_result
_retrieve(struct process_ctx *ctx, const struct proto_request *req,
          size_t *cursor, struct buf *out, size_t watermark)
{
    bool touch = req->cmd == PROTO_CMD_GAT || req->cmd == PROTO_CMD_GATS;
    bool with_cas = req->cmd == PROTO_CMD_GETS || req->cmd == PROTO_CMD_GATS;
    struct now n;
    const char *key;
    size_t nkey;
    size_t pos = *cursor;

    _now(ctx, &n);
    uint32_t exptime = touch ? expiry_absolute(req->exptime, n.s) : 0;
    while (proto_next_key(req, &pos, &key, &nkey)) {
        struct txn_current cur;
        enum txn_status st;

        stats_incr(ctx->stats, touch ? STATS_CMD_TOUCH : STATS_CMD_GET);
        st = touch ? txn_begin_key(ctx->batch, key, nkey, &cur)
                   : txn_read(ctx->batch, key, nkey, &cur);
        if (st == TXN_EIO && !touch) {
            /* A damaged record (store.h): this request fails alone. */
            return _result(_reply(req, out, REPLY_SERVER_ERROR_READ));
        }
        if (st != TXN_OK) {
            return _txn_error(ctx, req, out, st);
        }
        enum visibility vis = _visibility(&cur, &n);
        bool ok = true;
        if (vis == VISIBLE) {
            stats_incr(ctx->stats, touch ? STATS_TOUCH_HITS : STATS_GET_HITS);
            if (touch) {
                struct record_meta m = cur.meta;
                m.exptime = exptime;
                m.ts = clock_next(ctx->env->eng->clock);
                m.sid = ctx->env->eng->sid;
                st = txn_stage_record(ctx->batch, key, nkey, &m, cur.value,
                                      cur.vlen, NULL, 0);
                if (st != TXN_OK) {
                    txn_current_release(&cur);
                    return _txn_error(ctx, req, out, st);
                }
            }
            ok = reply_value(out, key, nkey, cur.meta.flags, cur.value,
                             cur.vlen, with_cas, cur.meta.cas);
        } else {
            stats_incr(ctx->stats,
                       touch ? STATS_TOUCH_MISSES : STATS_GET_MISSES);
            if (vis == EXPIRED || vis == FLUSHED) {
                stats_incr(ctx->stats, vis == EXPIRED ? STATS_GET_EXPIRED
                                                      : STATS_GET_FLUSHED);
                uint64_t ts = cur.meta.ts;
                txn_current_release(&cur);
                if (txn_expire(ctx->batch, key, nkey, ts)) {
                    stats_incr(ctx->stats, STATS_RECLAIMED);
                }
            }
        }
        txn_current_release(&cur);
        if (!ok) {
            return PROCESS_FATAL;
        }
        *cursor = pos;
        if (buf_len(out) > watermark && pos < req->keys_len) {
            return PROCESS_MORE;
        }
    }
    *cursor = pos;
    return _result(reply_code(out, REPLY_END));
}

/* set, add, replace, append, prepend, cas */
static enum process_result
_store(struct process_ctx *ctx, const struct proto_request *req,
       struct buf *out)
{
    struct txn_current cur;
    struct now n;
    struct record_meta m;

    stats_incr(ctx->stats, STATS_CMD_SET);
    _now(ctx, &n);
    enum txn_status st = txn_begin_key(ctx->batch, req->key, req->nkey, &cur);
    if (st != TXN_OK) {
        return _txn_error(ctx, req, out, st);
    }
    bool present = _visibility(&cur, &n) == VISIBLE;
    const void *v1 = req->value;
    size_t l1 = req->vlen;
    const void *v2 = NULL;
    size_t l2 = 0;
    enum reply_code code = REPLY_STORED;

    _new_meta(ctx, &m, req->flags, expiry_absolute(req->exptime, n.s));
    switch (req->cmd) {
    case PROTO_CMD_ADD:
        code = present ? REPLY_NOT_STORED : REPLY_STORED;
        break;
    case PROTO_CMD_REPLACE:
        code = present ? REPLY_STORED : REPLY_NOT_STORED;
        break;
    case PROTO_CMD_APPEND:
    case PROTO_CMD_PREPEND:
        if (!present) {
            code = REPLY_NOT_STORED;
            break;
        }
        if (cur.vlen + req->vlen > ctx->env->settings->item_max) {
            txn_current_release(&cur);
            stats_incr(ctx->stats, STATS_STORE_TOO_LARGE);
            return _result(req->noreply ||
                           reply_proto_error(out, PROTO_ERR_TOO_LARGE));
        }
        /* The command's flags and exptime are ignored, as by memcached. */
        m.flags = cur.meta.flags;
        m.exptime = cur.meta.exptime;
        if (req->cmd == PROTO_CMD_APPEND) {
            v1 = cur.value;
            l1 = cur.vlen;
            v2 = req->value;
            l2 = req->vlen;
        } else {
            v2 = cur.value;
            l2 = cur.vlen;
        }
        break;
    case PROTO_CMD_CAS:
        if (!present) {
            stats_incr(ctx->stats, STATS_CAS_MISSES);
            code = REPLY_NOT_FOUND;
        } else if (cur.meta.cas != req->cas_unique) {
            stats_incr(ctx->stats, STATS_CAS_BADVAL);
            code = REPLY_EXISTS;
        } else {
            stats_incr(ctx->stats, STATS_CAS_HITS);
        }
        break;
    default:
        break;
    }
    if (code == REPLY_STORED) {
        st = txn_stage_record(ctx->batch, req->key, req->nkey, &m, v1, l1, v2,
                              l2);
        if (st != TXN_OK) {
            txn_current_release(&cur);
            return _txn_error(ctx, req, out, st);
        }
        stats_incr(ctx->stats, STATS_TOTAL_ITEMS);
    }
    txn_current_release(&cur);
    return _result(_reply(req, out, code));
}

static enum process_result
_delete(struct process_ctx *ctx, const struct proto_request *req,
        struct buf *out)
{
    struct txn_current cur;
    struct now n;

    _now(ctx, &n);
    enum txn_status st = txn_begin_key(ctx->batch, req->key, req->nkey, &cur);
    if (st != TXN_OK) {
        return _txn_error(ctx, req, out, st);
    }
    bool present = _visibility(&cur, &n) == VISIBLE;
    txn_current_release(&cur);
    if (!present) {
        stats_incr(ctx->stats, STATS_DELETE_MISSES);
        return _result(_reply(req, out, REPLY_NOT_FOUND));
    }
    st = txn_stage_remove(ctx->batch, req->key, req->nkey);
    if (st != TXN_OK) {
        return _txn_error(ctx, req, out, st);
    }
    stats_incr(ctx->stats, STATS_DELETE_HITS);
    return _result(_reply(req, out, REPLY_DELETED));
}

static bool
_is_space(uint8_t c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

/*
 * Reads a stored value as memcached's incr does (strtoull): optional
 * leading whitespace and '+', at least one digit, 64-bit range, and the
 * number must be followed by whitespace or the end of the value.
 */
static bool
_parse_counter(const uint8_t *v, size_t len, uint64_t *out)
{
    size_t i = 0;
    uint64_t x = 0;

    while (i < len && _is_space(v[i])) {
        i++;
    }
    if (i < len && (v[i] == '+' || v[i] == '-')) {
        if (v[i] == '-') {
            return false;
        }
        i++;
    }
    size_t start = i;
    while (i < len && v[i] >= '0' && v[i] <= '9') {
        unsigned d = (unsigned)(v[i] - '0');
        if (x > (UINT64_MAX - d) / 10) {
            return false;
        }
        x = x * 10 + d;
        i++;
    }
    if (i == start || (i < len && !_is_space(v[i]))) {
        return false;
    }
    *out = x;
    return true;
}

/* incr, decr */
static enum process_result
_arith(struct process_ctx *ctx, const struct proto_request *req,
       struct buf *out)
{
    bool incr = req->cmd == PROTO_CMD_INCR;
    struct txn_current cur;
    struct now n;
    uint64_t value;

    _now(ctx, &n);
    enum txn_status st = txn_begin_key(ctx->batch, req->key, req->nkey, &cur);
    if (st != TXN_OK) {
        return _txn_error(ctx, req, out, st);
    }
    if (_visibility(&cur, &n) != VISIBLE) {
        txn_current_release(&cur);
        stats_incr(ctx->stats, incr ? STATS_INCR_MISSES : STATS_DECR_MISSES);
        return _result(_reply(req, out, REPLY_NOT_FOUND));
    }
    if (!_parse_counter(cur.value, cur.vlen, &value)) {
        txn_current_release(&cur);
        return _result(_reply(req, out, REPLY_NON_NUMERIC));
    }
    if (incr) {
        value += req->delta; /* wraps modulo 2^64, as memcached */
    } else {
        value = req->delta > value ? 0 : value - req->delta;
    }
    /*
     * memcached rewrites a number in place when the new digits fit,
     * padding with spaces to the old length; a longer number replaces the
     * value with exactly its digits.
     */
    static const char spaces[256] = {[0 ... 255] = ' '};
    char digits[UTIL_U64_DIGITS];
    size_t nd = util_u64_to_dec(value, digits);
    size_t pad = cur.vlen > nd ? cur.vlen - nd : 0;
    if (pad > sizeof(spaces)) {
        pad = 0; /* a very long value shrinks to its digits */
    }
    struct record_meta m;
    _new_meta(ctx, &m, cur.meta.flags, cur.meta.exptime);
    txn_current_release(&cur);
    st = txn_stage_record(ctx->batch, req->key, req->nkey, &m, digits, nd,
                          spaces, pad);
    if (st != TXN_OK) {
        return _txn_error(ctx, req, out, st);
    }
    stats_incr(ctx->stats, incr ? STATS_INCR_HITS : STATS_DECR_HITS);
    return _result(req->noreply || reply_number(out, value));
}

static enum process_result
_touch(struct process_ctx *ctx, const struct proto_request *req,
       struct buf *out)
{
    struct txn_current cur;
    struct now n;

    stats_incr(ctx->stats, STATS_CMD_TOUCH);
    _now(ctx, &n);
    enum txn_status st = txn_begin_key(ctx->batch, req->key, req->nkey, &cur);
    if (st != TXN_OK) {
        return _txn_error(ctx, req, out, st);
    }
    if (_visibility(&cur, &n) != VISIBLE) {
        txn_current_release(&cur);
        stats_incr(ctx->stats, STATS_TOUCH_MISSES);
        return _result(_reply(req, out, REPLY_NOT_FOUND));
    }
    struct record_meta m = cur.meta; /* the cas is kept, as by memcached */
    m.exptime = expiry_absolute(req->exptime, n.s);
    m.ts = clock_next(ctx->env->eng->clock);
    m.sid = ctx->env->eng->sid;
    st = txn_stage_record(ctx->batch, req->key, req->nkey, &m, cur.value,
                          cur.vlen, NULL, 0);
    txn_current_release(&cur);
    if (st != TXN_OK) {
        return _txn_error(ctx, req, out, st);
    }
    stats_incr(ctx->stats, STATS_TOUCH_HITS);
    return _result(_reply(req, out, REPLY_TOUCHED));
}

static enum process_result
_flush_all(struct process_ctx *ctx, const struct proto_request *req,
           struct buf *out)
{
    stats_incr(ctx->stats, STATS_CMD_FLUSH);
    enum txn_status st = txn_flush_all(ctx->batch, req->delay);
    if (st != TXN_OK) {
        return _txn_error(ctx, req, out, st);
    }
    return _result(_reply(req, out, REPLY_OK));
}

/* Update log and replication figures, per peer. */
static bool
_stats_replication(const struct stats_snapshot *snap, struct buf *out)
{
    bool ok = true;
    const struct ulog_stats *u = &snap->ulog;
    uint64_t now_us = util_now_us();

    if (snap->has_ulog) {
        ok = ok && reply_stat(out, "kura_ulog_segments", "%u", u->segments);
        ok = ok && reply_stat(out, "kura_ulog_bytes", "%" PRIu64, u->bytes);
        ok = ok && reply_stat(out, "kura_ulog_last_lsn", "%" PRIu64,
                              u->last_lsn);
        ok = ok && reply_stat(out, "kura_ulog_last_seq", "%" PRIu64,
                              u->last_seq);
        ok = ok && reply_stat(out, "kura_ulog_durable_lsn", "%" PRIu64,
                              u->synced_lsn);
        ok = ok && reply_stat(out, "kura_ulog_checkpoint_lsn", "%" PRIu64,
                              u->checkpoint_lsn);
        ok = ok && reply_stat(out, "kura_ulog_oldest_lsn", "%" PRIu64,
                              u->oldest_lsn);
        ok = ok && reply_stat(out, "kura_ulog_group_writes", "%" PRIu64,
                              u->appends);
        ok = ok && reply_stat(out, "kura_ulog_records", "%" PRIu64,
                              u->records);
        ok = ok && reply_stat(out, "kura_ulog_syncs", "%" PRIu64, u->syncs);
        ok = ok && reply_stat(out, "kura_ulog_sync_us", "%" PRIu64,
                              u->sync_us);
        ok = ok && reply_stat(out, "kura_ulog_checkpoints", "%" PRIu64,
                              u->checkpoints);
        ok = ok && reply_stat(out, "kura_ulog_segments_removed", "%" PRIu64,
                              u->purged);
        ok = ok && reply_stat(out, "kura_ulog_prepared_bytes", "%" PRIu64,
                              u->prepared_ahead);
        ok = ok && reply_stat(out, "kura_ulog_failed", "%d", u->failed ? 1 : 0);
    }
    if (snap->has_master) {
        const struct repl_slave_stats *m = &snap->master;
        ok = ok && reply_stat(out, "kura_repl_master_connected", "%d",
                              m->connected ? 1 : 0);
        ok = ok && reply_stat(out, "kura_repl_master_sid", "%u",
                              m->master_sid);
        ok = ok && reply_stat(out, "kura_repl_master_lag_seconds", "%.3f",
                              m->lag_seconds);
        ok = ok && reply_stat(out, "kura_repl_master_lag_records", "%" PRIu64,
                              m->lag_records);
        ok = ok && reply_stat(out, "kura_repl_master_applied_lsn", "%" PRIu64,
                              m->applied_lsn);
        ok = ok && reply_stat(out, "kura_repl_master_log_lsn", "%" PRIu64,
                              m->master_lsn);
        ok = ok && reply_stat(out, "kura_repl_master_received", "%" PRIu64,
                              m->received);
        ok = ok && reply_stat(out, "kura_repl_master_applied", "%" PRIu64,
                              m->applied);
        ok = ok && reply_stat(out, "kura_repl_master_resyncs", "%" PRIu64,
                              m->resyncs);
        ok = ok && reply_stat(out, "kura_repl_master_connects", "%" PRIu64,
                              m->connects);
        ok = ok && reply_stat(out, "kura_repl_master_delay_p50_us", "%" PRIu64,
                              m->delay_p50_us);
        ok = ok && reply_stat(out, "kura_repl_master_delay_p99_us", "%" PRIu64,
                              m->delay_p99_us);
        ok = ok && reply_stat(out, "kura_repl_master_delay_max_us", "%" PRIu64,
                              m->delay_max_us);
    }
    ok = ok && reply_stat(out, "kura_repl_peers", "%d", snap->npeers);
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
     reply_stat(out, name, fmt, value))
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
_stats_general(struct process_ctx *ctx, struct buf *out)
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

    ok = ok && reply_stat(out, "pid", "%ld", (long)getpid());
    ok = ok && reply_stat(out, "uptime", "%" PRId64, now - snap.started_s);
    ok = ok && reply_stat(out, "time", "%" PRId64, now);
    ok = ok && reply_stat(out, "version", "%s-kura-%s",
                          REPLY_MEMCACHED_COMPAT, PACKAGE_VERSION);
    ok = ok && reply_stat(out, "pointer_size", "%d", (int)(8 * sizeof(void *)));
    ok = ok && reply_stat(out, "rusage_user", "%ld.%06ld",
                          (long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec);
    ok = ok && reply_stat(out, "rusage_system", "%ld.%06ld",
                          (long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec);
    ok = ok && reply_stat(out, "max_connections", "%u",
                          snap.max_connections);
    ok = ok && reply_stat(out, "curr_connections", "%" PRIu64,
                          snap.curr_connections);
    ok = ok && reply_stat(out, "total_connections", "%" PRIu64,
                          snap.total_connections);
    ok = ok && reply_stat(out, "rejected_connections", "%" PRIu64,
                          snap.rejected_connections);
    for (int i = 0; ok && i < STATS_COUNT; i++) {
        ok = reply_stat(out, stats_name((enum stats_counter)i), "%" PRIu64,
                        snap.counters[i]);
    }
    ok = ok && reply_stat(out, "accepting_conns", "%d",
                          snap.accepting_conns ? 1 : 0);
    ok = ok && reply_stat(out, "listen_disabled_num", "%" PRIu64,
                          snap.listen_disabled_num);
    ok = ok && reply_stat(out, "threads", "%d", snap.threads);
    /* A disk store: "bytes" is the database file, not memory. */
    ok = ok && reply_stat(out, "bytes", "%" PRIu64, store_fsiz(store));
    ok = ok && reply_stat(out, "curr_items", "%" PRIu64, store_rnum(store));
    ok = ok && reply_stat(out, "evictions", "0");
    ok = ok && reply_stat(out, "kura_version", "%s", PACKAGE_VERSION);
    ok = ok && reply_stat(out, "kura_sid", "%u", env->eng->sid);
    ok = ok && reply_stat(out, "kura_db_path", "%s", store_path(store));
    ok = ok && reply_stat(out, "kura_db_records", "%" PRIu64,
                          store_rnum(store));
    ok = ok && reply_stat(out, "kura_db_file_size", "%" PRIu64,
                          store_fsiz(store));
    ok = ok && reply_stat(out, "kura_db_bnum", "%" PRIu64, store_bnum(store));
    ok = ok && reply_stat(out, "kura_db_over_bnum", "%d",
                          store_over_bnum(store) ? 1 : 0);
    uint64_t damage_at = 0;
    uint64_t damage = store_damage(store, &damage_at);
    ok = ok && reply_stat(out, "kura_db_damage_seen", "%" PRIu64, damage);
    ok = ok && reply_stat(out, "kura_db_damage_offset", "%" PRIu64,
                          damage_at);
    ok = ok && reply_stat(out, "kura_group_commits", "%" PRIu64, snap.commits);
    ok = ok && reply_stat(out, "kura_early_commits", "%" PRIu64,
                          snap.early_commits);
    ok = ok && reply_stat(out, "kura_writable", "%d",
                          atomic_load(&env->eng->failed) ? 0 : 1);
    ok = ok && reply_stat(out, "kura_flush_applied_us", "%" PRIu64,
                          fl.applied_us);
    ok = ok && reply_stat(out, "kura_flush_pending_us", "%" PRIu64,
                          fl.pending_us);
    ok = ok && reply_stat(out, "kura_tombstones_dropped", "%" PRIu64,
                          snap.tombstones_dropped);
    ok = ok && _stats_replication(&snap, out);
    return ok && reply_code(out, REPLY_END);
}

static bool
_stats_settings(struct process_ctx *ctx, struct buf *out)
{
    const struct settings *s = ctx->env->settings;
    char mask[256];
    char db[DBSPEC_PATH_MAX + 128];
    bool ok = true;

    cmdmask_format(s->mask, mask, sizeof(mask));
    dbspec_format(&s->db, db, sizeof(db));
    ok = ok && reply_stat(out, "maxconns", "%u", s->maxconn);
    ok = ok && reply_stat(out, "tcpport", "%d", s->port);
    ok = ok && reply_stat(out, "inter", "%s", s->host);
    ok = ok && reply_stat(out, "num_threads", "%d", s->thnum);
    ok = ok && reply_stat(out, "item_size_max", "%zu", s->item_max);
    ok = ok && reply_stat(out, "idle_timeout", "%d", s->tout);
    ok = ok && reply_stat(out, "cas_enabled", "yes");
    ok = ok && reply_stat(out, "evictions", "off");
    ok = ok && reply_stat(out, "flush_enabled", "%s",
                          cmdmask_allows(s->mask, PROTO_CMD_FLUSH_ALL) ? "yes"
                                                                       : "no");
    ok = ok && reply_stat(out, "kura_dbname", "%s", db);
    ok = ok && reply_stat(out, "kura_ulog", "%s",
                          s->ulog_path[0] ? s->ulog_path : "(none)");
    ok = ok && reply_stat(out, "kura_ulim", "%" PRIu64, s->ulim);
    ok = ok && reply_stat(out, "kura_uas", "%s", s->uas ? "yes" : "no");
    ok = ok && reply_stat(out, "kura_sid", "%u", s->sid);
    ok = ok && reply_stat(out, "kura_mhost", "%s",
                          s->mhost[0] ? s->mhost : "(none)");
    ok = ok && reply_stat(out, "kura_mport", "%d", s->mport);
    ok = ok && reply_stat(out, "kura_rts", "%s",
                          s->rts_path[0] ? s->rts_path : "(none)");
    ok = ok && reply_stat(out, "kura_ukeep", "%u", s->ukeep);
    /* The key file's path only: never its contents. */
    ok = ok && reply_stat(out, "kura_rkey", "%s",
                          s->rkey_path[0] ? s->rkey_path : "(none)");
    if (s->fsync == ULOG_FSYNC_INTERVAL) {
        ok = ok && reply_stat(out, "kura_fsync", "%ums", s->fsync_ms);
    } else {
        ok = ok && reply_stat(out, "kura_fsync", "%s",
                              s->fsync == ULOG_FSYNC_ALWAYS ? "always"
                                                            : "never");
    }
    ok = ok && reply_stat(out, "kura_mask", "%s", mask);
    return ok && reply_code(out, REPLY_END);
}

static bool
_args_are(const struct proto_request *req, const char *word)
{
    size_t n = strlen(word);
    /* memcached ignores words after the subcommand. */
    return req->args_len >= n && memcmp(req->args, word, n) == 0 &&
           (req->args_len == n || req->args[n] == ' ');
}

static enum process_result
_stats(struct process_ctx *ctx, const struct proto_request *req,
       struct buf *out)
{
    if (req->args_len == 0) {
        return _result(_stats_general(ctx, out));
    }
    if (_args_are(req, "settings")) {
        return _result(_stats_settings(ctx, out));
    }
    if (_args_are(req, "reset")) {
        ctx->env->reset(ctx->env->arg);
        return _result(reply_code(out, REPLY_RESET));
    }
    if (_args_are(req, "items")) {
        return _result(reply_code(out, REPLY_END));
    }
    if (_args_are(req, "slabs")) {
        return _result(reply_stat(out, "active_slabs", "0") &&
                       reply_stat(out, "total_malloced", "0") &&
                       reply_code(out, REPLY_END));
    }
    if (_args_are(req, "sizes")) {
        return _result(reply_stat(out, "sizes_status", "disabled") &&
                       reply_code(out, REPLY_END));
    }
    return _result(reply_code(out, REPLY_ERROR));
}

enum process_result
process_request(struct process_ctx *ctx, const struct proto_request *req,
                size_t *cursor, struct buf *out, size_t watermark)
{
    if (!cmdmask_allows(ctx->env->settings->mask, req->cmd)) {
        stats_incr(ctx->stats, STATS_CMD_DENIED);
        if (req->cmd == PROTO_CMD_REPL) {
            return reply_code(out, REPLY_REPL_DENIED) ? PROCESS_CLOSE
                                                      : PROCESS_FATAL;
        }
        return _result(req->noreply || reply_denied(out, req->cmd));
    }
    switch (req->cmd) {
    case PROTO_CMD_GET:
    case PROTO_CMD_GETS:
    case PROTO_CMD_GAT:
    case PROTO_CMD_GATS:
        return _retrieve(ctx, req, cursor, out, watermark);
    case PROTO_CMD_SET:
    case PROTO_CMD_ADD:
    case PROTO_CMD_REPLACE:
    case PROTO_CMD_APPEND:
    case PROTO_CMD_PREPEND:
    case PROTO_CMD_CAS:
        return _store(ctx, req, out);
    case PROTO_CMD_DELETE:
        return _delete(ctx, req, out);
    case PROTO_CMD_INCR:
    case PROTO_CMD_DECR:
        return _arith(ctx, req, out);
    case PROTO_CMD_TOUCH:
        return _touch(ctx, req, out);
    case PROTO_CMD_FLUSH_ALL:
        return _flush_all(ctx, req, out);
    case PROTO_CMD_VERSION:
        return _result(reply_version(out));
    case PROTO_CMD_VERBOSITY:
        ctx->env->set_verbosity(ctx->env->arg, req->level);
        return _result(_reply(req, out, REPLY_OK));
    case PROTO_CMD_QUIT:
        return PROCESS_CLOSE;
    case PROTO_CMD_STATS:
        return _stats(ctx, req, out);
    case PROTO_CMD_REPL:
        return PROCESS_HANDOFF;
    default:
        return _result(reply_code(out, REPLY_ERROR));
    }
}

enum process_result
process_error(struct process_ctx *ctx, const struct proto_parser *p,
              const struct proto_request *req, struct buf *out)
{
    if (p->error == PROTO_ERR_TOO_LARGE) {
        stats_incr(ctx->stats, STATS_STORE_TOO_LARGE);
        /*
         * memcached drops the old value of a "set" it could not store, so
         * a reader never sees data the client meant to replace.
         */
        if (p->error_cmd == PROTO_CMD_SET &&
            cmdmask_allows(ctx->env->settings->mask, PROTO_CMD_SET)) {
            struct txn_current cur;
            if (txn_begin_key(ctx->batch, req->key, req->nkey, &cur) ==
                    TXN_OK &&
                cur.found) {
                txn_stage_remove(ctx->batch, req->key, req->nkey);
            }
            txn_current_release(&cur);
        }
    }
    if (p->error_noreply) {
        return p->error == PROTO_ERR_LINE_TOO_LONG ||
                       p->error == PROTO_ERR_HTTP
                   ? PROCESS_CLOSE
                   : PROCESS_DONE;
    }
    bool ok = reply_proto_error(out, p->error);
    if (p->error == PROTO_ERR_LINE_TOO_LONG || p->error == PROTO_ERR_HTTP) {
        return ok ? PROCESS_CLOSE : PROCESS_FATAL;
    }
    return _result(ok);
}
