/*
 * process_meta: the meta commands' semantics (mg, ms, md, ma, me), as
 * memcached 1.6 doc/protocol.txt describes them and memcached 1.6.18
 * behaves (tests/conformance).
 *
 * Recache state lives in the record (record.h): STALE, set by md I or by
 * an ms I whose cas is older than the item's, and TOKEN, set when a
 * client is told it won the right to recache (W) so that the others are
 * told Z. Both are written, logged and replicated like any change, so
 * they survive a restart and a failover; any ordinary store clears them.
 * Whether an item was fetched and when it was last read (h, l) are kept
 * in memory only (access.h), as memcached keeps them.
 */
#include "process_internal.h"

#include <string.h>

/* ms mode letters, in upper case; 0 is set. */
static char
_mode(const struct proto_request *req)
{
    char m = req->meta.mode;
    return m >= 'a' && m <= 'z' ? (char)(m - 'a' + 'A') : m;
}

static uint32_t
_exptime(int64_t ttl, const struct now *n)
{
    return expiry_absolute(ttl, n->s);
}

/* The cas of a change: the client's (E) or the new timestamp. */
static void
_set_cas(const struct proto_request *req, struct record_meta *m)
{
    if (req->meta.new_cas) {
        m->cas = req->meta.new_cas_value;
    }
}

/* t came before T: it reports the ttl as it was. */
static bool
_t_before_T(const struct proto_meta *f)
{
    const char *t = memchr(f->order, 't', f->norder);
    const char *T = memchr(f->order, 'T', f->norder);
    return t != NULL && T != NULL && t < T;
}

/* Rewrites the envelope of `cur` as a new change of this server. */
static struct record_meta
_restamp(struct process_ctx *ctx, const struct txn_current *cur)
{
    struct record_meta m = cur->meta;
    m.ts = clock_next(ctx->env->eng->clock);
    m.sid = ctx->env->eng->sid;
    return m;
}

/* mg on a miss: EN, or with N a new empty item this client must fill. */
static enum process_result
_mg_miss(struct process_ctx *ctx, const struct proto_request *req,
         struct buf *out, const struct now *n)
{
    struct reply_item it;
    memset(&it, 0, sizeof(it));
    it.key = req->key;
    it.nkey = req->nkey;
    it.key_binary = req->meta.base64;
    stats_incr(ctx->stats, STATS_GET_MISSES);
    if (!req->meta.vivify) {
        return process_result_of(reply_miss(out, req, &it));
    }
    struct record_meta m;
    process_new_meta(ctx, &m, 0, _exptime(req->meta.vivify_ttl, n));
    m.token = true;
    m.binkey = req->meta.base64;
    enum txn_status st = txn_stage_record(ctx->batch, req->key, req->nkey,
                                          &m, NULL, 0, NULL, 0);
    if (st != TXN_OK) {
        return process_txn_error(ctx, req, out, st);
    }
    process_note_write(ctx, req->key, req->nkey, n);
    it.value = "";
    it.cas = m.cas;
    it.ttl = process_ttl(&m, n);
    it.win = 'W';
    return process_result_of(reply_hit(out, req, &it));
}

static enum process_result
_mg(struct process_ctx *ctx, const struct proto_request *req,
    struct buf *out)
{
    const struct proto_meta *f = &req->meta;
    bool locked = f->vivify || f->recache || f->ttl;
    struct txn_current cur;
    struct reply_item it;
    struct now n;

    stats_incr(ctx->stats, STATS_CMD_GET);
    if (f->ttl) {
        stats_incr(ctx->stats, STATS_CMD_TOUCH);
    }
    process_now(ctx, &n);
again:;
    enum txn_status st =
        locked ? txn_begin_key(ctx->batch, req->key, req->nkey, &cur)
               : txn_read(ctx->batch, req->key, req->nkey, &cur);
    if (st == TXN_EIO && !locked) {
        return process_result_of(
            reply_result(out, req, REPLY_SERVER_ERROR_READ, NULL));
    }
    if (st != TXN_OK) {
        return process_txn_error(ctx, req, out, st);
    }
    enum visibility vis = process_visibility(&cur, &n);
    if (vis != VISIBLE) {
        uint64_t ts = cur.meta.ts;
        txn_current_release(&cur);
        if (vis == EXPIRED || vis == FLUSHED) {
            stats_incr(ctx->stats, vis == EXPIRED ? STATS_GET_EXPIRED
                                                  : STATS_GET_FLUSHED);
            if (txn_expire(ctx->batch, req->key, req->nkey, ts)) {
                stats_incr(ctx->stats, STATS_RECLAIMED);
            }
        }
        return _mg_miss(ctx, req, out, &n);
    }
    process_item(&it, req->key, req->nkey, &cur, &n);
    /* Who recaches: the first to see the item stale or about to
     * expire wins (W); the rest are told someone has (Z). */
    bool won = false;
    if (!cur.meta.token) {
        won = cur.meta.stale ||
              (f->recache && it.ttl >= 0 && it.ttl < f->recache_ttl);
    }
    it.win = won ? 'W' : cur.meta.token ? 'Z' : 0;
    if ((won || f->ttl) && !locked) {
        txn_current_release(&cur);
        locked = true;
        goto again; /* a change: read again under the key's lock */
    }
    if (won || f->ttl) {
        struct record_meta m = _restamp(ctx, &cur);
        m.token = m.token || won;
        if (f->ttl) {
            m.exptime = _exptime(f->ttl_value, &n);
            if (!_t_before_T(f)) {
                it.ttl = process_ttl(&m, &n);
            }
        }
        st = txn_stage_record(ctx->batch, req->key, req->nkey, &m, cur.value,
                              cur.vlen, NULL, 0);
        if (st != TXN_OK) {
            txn_current_release(&cur);
            return process_txn_error(ctx, req, out, st);
        }
    }
    stats_incr(ctx->stats, STATS_GET_HITS);
    if (f->ttl) {
        stats_incr(ctx->stats, STATS_TOUCH_HITS);
    }
    process_note_read(ctx, &it, &cur, &n, !f->no_bump);
    bool ok = reply_hit(out, req, &it);
    txn_current_release(&cur);
    return process_result_of(ok);
}

/*
 * ms: set by default, or add (E), append (A), prepend (P), replace (R).
 * C compares the cas; with I, a cas older than the item's still stores,
 * but marks the value stale and keeps any recache token.
 */
static enum process_result
_ms(struct process_ctx *ctx, const struct proto_request *req,
    struct buf *out)
{
    const struct proto_meta *f = &req->meta;
    char mode = _mode(req);
    bool append = mode == 'A' || mode == 'P';
    struct txn_current cur;
    struct record_meta m;
    struct now n;

    stats_incr(ctx->stats, STATS_CMD_SET);
    process_now(ctx, &n);
    enum txn_status st = txn_begin_key(ctx->batch, req->key, req->nkey, &cur);
    if (st != TXN_OK) {
        return process_txn_error(ctx, req, out, st);
    }
    bool present = process_visibility(&cur, &n) == VISIBLE;
    bool stale = false;
    enum reply_code code = REPLY_STORED;
    if ((mode == 'E' && present) || ((mode == 'R' || append) && !present)) {
        code = REPLY_NOT_STORED;
    } else if (f->compare_cas && mode != 'E') {
        if (!present) {
            stats_incr(ctx->stats, STATS_CAS_MISSES);
            code = REPLY_NOT_FOUND;
        } else if (cur.meta.cas == f->compare_value) {
            stats_incr(ctx->stats, STATS_CAS_HITS);
        } else if (f->invalidate && f->compare_value < cur.meta.cas) {
            stats_incr(ctx->stats, STATS_CAS_HITS);
            stale = true;
        } else {
            stats_incr(ctx->stats, STATS_CAS_BADVAL);
            code = REPLY_EXISTS;
        }
    }
    const void *v1 = req->value;
    size_t l1 = req->vlen;
    const void *v2 = NULL;
    size_t l2 = 0;
    process_new_meta(ctx, &m, f->client_flags ? f->flags_value : 0,
                     f->ttl ? _exptime(f->ttl_value, &n) : 0);
    if (code == REPLY_STORED && append) {
        if (cur.vlen + req->vlen > ctx->env->settings->item_max) {
            txn_current_release(&cur);
            stats_incr(ctx->stats, STATS_STORE_TOO_LARGE);
            return process_result_of(
                reply_result(out, req, REPLY_TOO_LARGE, NULL));
        }
        m.flags = cur.meta.flags;
        m.exptime = cur.meta.exptime;
        m.ctype = cur.meta.ctype;
        m.nctype = cur.meta.nctype;
        if (mode == 'A') {
            v1 = cur.value;
            l1 = cur.vlen;
            v2 = req->value;
            l2 = req->vlen;
        } else {
            v2 = cur.value;
            l2 = cur.vlen;
        }
    }
    struct reply_item it;
    memset(&it, 0, sizeof(it));
    it.key = req->key;
    it.nkey = req->nkey;
    it.key_binary = f->base64;
    if (code == REPLY_STORED) {
        m.binkey = f->base64;
        m.stale = stale;
        m.token = stale && cur.meta.token;
        _set_cas(req, &m);
        st = txn_stage_record(ctx->batch, req->key, req->nkey, &m, v1, l1, v2,
                              l2);
        if (st != TXN_OK) {
            txn_current_release(&cur);
            return process_txn_error(ctx, req, out, st);
        }
        process_note_write(ctx, req->key, req->nkey, &n);
        stats_incr(ctx->stats, STATS_TOTAL_ITEMS);
        it.cas = m.cas;
    }
    txn_current_release(&cur);
    return process_result_of(
        reply_result(out, req, code, code == REPLY_STORED ? &it : NULL));
}

/* md: delete, or with I mark stale (a new cas, T for a new ttl). */
static enum process_result
_md(struct process_ctx *ctx, const struct proto_request *req,
    struct buf *out)
{
    const struct proto_meta *f = &req->meta;
    struct txn_current cur;
    struct now n;

    process_now(ctx, &n);
    enum txn_status st = txn_begin_key(ctx->batch, req->key, req->nkey, &cur);
    if (st != TXN_OK) {
        return process_txn_error(ctx, req, out, st);
    }
    enum reply_code code = REPLY_DELETED;
    if (process_visibility(&cur, &n) != VISIBLE) {
        stats_incr(ctx->stats, STATS_DELETE_MISSES);
        code = REPLY_NOT_FOUND;
    } else if (f->compare_cas && cur.meta.cas != f->compare_value) {
        code = REPLY_EXISTS;
    } else if (f->invalidate) {
        struct record_meta m = _restamp(ctx, &cur);
        m.cas = m.ts;
        m.stale = true;
        m.token = false;
        if (f->ttl) {
            m.exptime = _exptime(f->ttl_value, &n);
        }
        _set_cas(req, &m);
        st = txn_stage_record(ctx->batch, req->key, req->nkey, &m, cur.value,
                              cur.vlen, NULL, 0);
    } else {
        st = txn_stage_remove(ctx->batch, req->key, req->nkey);
    }
    txn_current_release(&cur);
    if (st != TXN_OK) {
        return process_txn_error(ctx, req, out, st);
    }
    if (code == REPLY_DELETED) {
        stats_incr(ctx->stats, STATS_DELETE_HITS);
    }
    return process_result_of(reply_result(out, req, code, NULL));
}

/* ma: incr (I, +) or decr (D, -) by D; N creates a miss as J. */
static enum process_result
_ma(struct process_ctx *ctx, const struct proto_request *req,
    struct buf *out)
{
    const struct proto_meta *f = &req->meta;
    char mode = _mode(req);
    bool incr = mode != 'D' && mode != '-';
    struct txn_current cur;
    struct record_meta m;
    struct now n;
    uint64_t value;
    size_t old_len = 0;
    bool created = false;

    process_now(ctx, &n);
    enum txn_status st = txn_begin_key(ctx->batch, req->key, req->nkey, &cur);
    if (st != TXN_OK) {
        return process_txn_error(ctx, req, out, st);
    }
    if (process_visibility(&cur, &n) != VISIBLE) {
        txn_current_release(&cur);
        stats_incr(ctx->stats, incr ? STATS_INCR_MISSES : STATS_DECR_MISSES);
        if (!f->vivify) {
            return process_result_of(
                reply_result(out, req, REPLY_NOT_FOUND, NULL));
        }
        value = f->initial ? f->initial_value : 0;
        process_new_meta(ctx, &m, 0, _exptime(f->vivify_ttl, &n));
        m.binkey = f->base64;
        created = true;
    } else {
        if (f->compare_cas && cur.meta.cas != f->compare_value) {
            txn_current_release(&cur);
            return process_result_of(
                reply_result(out, req, REPLY_EXISTS, NULL));
        }
        if (!process_parse_counter(cur.value, cur.vlen, &value)) {
            txn_current_release(&cur);
            return process_result_of(
                reply_result(out, req, REPLY_NON_NUMERIC, NULL));
        }
        if (incr) {
            value += f->delta;
        } else {
            value = f->delta > value ? 0 : value - f->delta;
        }
        old_len = cur.vlen;
        process_new_meta(ctx, &m, cur.meta.flags, cur.meta.exptime);
        m.binkey = cur.meta.binkey;
        if (f->ttl) {
            m.exptime = _exptime(f->ttl_value, &n);
        }
        txn_current_release(&cur);
        stats_incr(ctx->stats, incr ? STATS_INCR_HITS : STATS_DECR_HITS);
    }
    _set_cas(req, &m);
    st = process_stage_counter(ctx, req, &m, value, old_len);
    if (st != TXN_OK) {
        return process_txn_error(ctx, req, out, st);
    }
    process_note_write(ctx, req->key, req->nkey, &n);
    struct reply_item it;
    memset(&it, 0, sizeof(it));
    it.key = req->key;
    it.nkey = req->nkey;
    it.cas = m.cas;
    it.ttl = process_ttl(&m, &n);
    it.key_binary = f->base64; /* ma answers k as it was asked */
    if (created && f->quiet) {
        /* q hides a success, but memcached answers a creation. */
        struct proto_request loud = *req;
        loud.meta.quiet = false;
        return process_result_of(reply_counter(out, &loud, value, &it));
    }
    return process_result_of(reply_counter(out, req, value, &it));
}

/* me: what kura knows of an item, without noting an access. */
static enum process_result
_me(struct process_ctx *ctx, const struct proto_request *req,
    struct buf *out)
{
    struct txn_current cur;
    struct reply_item it;
    struct now n;

    process_now(ctx, &n);
    enum txn_status st = txn_read(ctx->batch, req->key, req->nkey, &cur);
    if (st != TXN_OK) {
        return process_result_of(
            reply_result(out, req, REPLY_SERVER_ERROR_READ, NULL));
    }
    if (process_visibility(&cur, &n) != VISIBLE) {
        txn_current_release(&cur);
        memset(&it, 0, sizeof(it));
        it.key = req->key;
        it.nkey = req->nkey;
        struct proto_request plain = *req;
        plain.meta.quiet = false; /* me has no quiet mode */
        plain.meta.norder = 0;
        return process_result_of(reply_miss(out, &plain, &it));
    }
    process_item(&it, req->key, req->nkey, &cur, &n);
    process_note_read(ctx, &it, &cur, &n, false);
    /* The item as stored: key, envelope and value. */
    size_t size = req->nkey + RECORD_HEADER_MAX + cur.vlen;
    txn_current_release(&cur);
    return process_result_of(reply_meta_debug(out, req, &it, size));
}

enum process_result
process_meta(struct process_ctx *ctx, const struct proto_request *req,
             struct buf *out)
{
    stats_incr(ctx->stats, STATS_CMD_META);
    switch (req->cmd) {
    case PROTO_CMD_MG:
        return _mg(ctx, req, out);
    case PROTO_CMD_MS:
        return _ms(ctx, req, out);
    case PROTO_CMD_MD:
        return _md(ctx, req, out);
    case PROTO_CMD_MA:
        return _ma(ctx, req, out);
    default:
        return _me(ctx, req, out);
    }
}
