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
#include "process_members.h"

#include <string.h>

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

/* Rewrites the envelope of `cur` as a new change of this server. */
static struct record_meta
_restamp(struct process_ctx *ctx, const struct txn_current *cur)
{
    struct record_meta m = cur->meta;
    m.ts = clock_next(ctx->env->eng->clock);
    m.sid = ctx->env->eng->sid;
    return m;
}

/*
 * mg and ma apply their ttl flags while they write the reply, in the
 * client's order, as memcached does: T sets the item's expiry, N that of
 * an item the command `created` (and wins it, W), R (mg only) wins the
 * recache if the item has an expiry below R's as it stands at R, and t
 * reports the time left as it stands where t is. Applies them to `m`,
 * sets `*won` if N or R won, and returns what t reports.
 */
static int64_t
_ttl_flags(const struct proto_request *req, bool created, bool token,
           const struct now *n, struct record_meta *m, bool *won)
{
    const struct proto_meta *f = &req->meta;
    int64_t shown = process_ttl(m, n);

    for (size_t i = 0; i < f->norder; i++) {
        switch (f->order[i]) {
        case 'T':
            m->exptime = _exptime(f->ttl_value, n);
            break;
        case 'N':
            if (created) {
                m->exptime = _exptime(f->vivify_ttl, n);
                *won = true;
            }
            break;
        case 'R':
            if (req->cmd == PROTO_CMD_MG && !token && !created &&
                m->exptime != 0 &&
                m->exptime < _exptime(f->recache_ttl, n)) {
                *won = true;
            }
            break;
        case 't':
            shown = process_ttl(m, n);
            break;
        default:
            break;
        }
    }
    return shown;
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
    bool won = false;
    process_new_meta(ctx, &m, 0, 0);
    it.ttl = _ttl_flags(req, true, false, n, &m, &won);
    m.token = true; /* N always wins a creation */
    /* memcached leaves the key of an item it creates unmarked, and then
     * echoes it raw; kura keeps the b (doc/protocol.md). */
    m.binkey = req->meta.base64;
    enum txn_status st = txn_stage_record(ctx->batch, req->key, req->nkey,
                                          &m, NULL, 0, NULL, 0);
    if (st != TXN_OK) {
        return process_txn_error(ctx, req, out, st);
    }
    process_note_write(ctx, req->key, req->nkey, n);
    it.value = "";
    it.cas = m.cas;
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
    struct record_meta m = cur.meta;
    bool won = false;
    it.ttl = _ttl_flags(req, false, cur.meta.token, &n, &m, &won);
    won = won || (cur.meta.stale && !cur.meta.token);
    it.win = won ? 'W' : cur.meta.token ? 'Z' : 0;
    if ((won || f->ttl) && !locked) {
        txn_current_release(&cur);
        locked = true;
        goto again; /* a change: read again under the key's lock */
    }
    if (won || f->ttl) {
        struct record_meta w = _restamp(ctx, &cur);
        w.token = w.token || won;
        w.exptime = m.exptime;
        st = txn_stage_record(ctx->batch, req->key, req->nkey, &w, cur.value,
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

/* How ms stores, from its mode and C, as memcached maps them. */
enum ms_how {
    MS_SET,     /* no mode, or S */
    MS_ADD,     /* E; a C is ignored */
    MS_APPEND,  /* A */
    MS_PREPEND, /* P */
    MS_REPLACE, /* R */
    MS_CAS,     /* S or R with C */
};

static enum ms_how
_ms_how(const struct proto_meta *f)
{
    switch (f->mode) {
    case 'E':
        return MS_ADD;
    case 'A':
        return MS_APPEND;
    case 'P':
        return MS_PREPEND;
    case 'R':
        return f->compare_cas ? MS_CAS : MS_REPLACE;
    default:
        return f->compare_cas ? MS_CAS : MS_SET;
    }
}

/*
 * The outcome of an ms before any write: REPLY_STORED or the refusal;
 * `*stale` when an I store goes ahead with a cas older than the item's.
 * A C of 0 compares nothing: a cas store then fails (EX, or NF on a
 * miss), an append or prepend goes ahead.
 */
static enum reply_code
_ms_decide(struct process_ctx *ctx, const struct proto_meta *f,
           enum ms_how how, bool present, uint64_t cas, bool *stale)
{
    *stale = false;
    switch (how) {
    case MS_ADD:
        return present ? REPLY_NOT_STORED : REPLY_STORED;
    case MS_REPLACE:
        return present ? REPLY_STORED : REPLY_NOT_STORED;
    case MS_APPEND:
    case MS_PREPEND:
        if (!present) {
            return REPLY_NOT_STORED;
        }
        return f->compare_cas && f->compare_value != 0 &&
                       f->compare_value != cas
                   ? REPLY_EXISTS
                   : REPLY_STORED;
    case MS_CAS:
        return process_cas_rule(ctx, present, cas, f->compare_value,
                                f->invalidate, stale);
    default:
        return REPLY_STORED;
    }
}

/*
 * ms: set by default, or add (E), append (A), prepend (P), replace (R);
 * C makes a set or replace a cas store. With I, a cas older than the
 * item's still stores, but marks the value stale and keeps the item's
 * ttl and any recache token.
 */
static enum process_result
_ms(struct process_ctx *ctx, const struct proto_request *req,
    struct buf *out)
{
    const struct proto_meta *f = &req->meta;
    enum ms_how how = _ms_how(f);
    bool append = how == MS_APPEND || how == MS_PREPEND;
    struct txn_current cur;
    struct record_meta m;
    struct now n;
    bool stale;

    stats_incr(ctx->stats, STATS_CMD_SET);
    process_now(ctx, &n);
    enum txn_status st = txn_begin_key(ctx->batch, req->key, req->nkey, &cur);
    if (st != TXN_OK) {
        return process_txn_error(ctx, req, out, st);
    }
    bool present = process_visibility(&cur, &n) == VISIBLE;
    enum reply_code code =
        _ms_decide(ctx, f, how, present, cur.meta.cas, &stale);
    struct process_value v = {req->value, req->vlen, NULL, 0};
    process_new_meta(ctx, &m, f->client_flags ? f->flags_value : 0,
                     f->ttl ? _exptime(f->ttl_value, &n) : 0);
    if (stale) {
        m.exptime = cur.meta.exptime;
    }
    if (code == REPLY_STORED && append &&
        !process_join(ctx, &cur, how == MS_APPEND, req->value, req->vlen, &m,
                      &v)) {
        txn_current_release(&cur);
        return process_result_of(reply_result(out, req, REPLY_TOO_LARGE, NULL));
    }
    struct reply_item it;
    memset(&it, 0, sizeof(it));
    it.key = req->key;
    it.nkey = req->nkey;
    it.key_binary = f->base64;
    if (code == REPLY_STORED) {
        /* memcached's append and prepend leave the new item's key
         * unmarked; kura keeps the b (doc/protocol.md). */
        m.binkey = f->base64;
        m.stale = stale;
        m.token = stale && cur.meta.token;
        _set_cas(req, &m);
        st = txn_stage_record(ctx->batch, req->key, req->nkey, &m, v.v1, v.l1,
                              v.v2, v.l2);
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
        code = REPLY_EXISTS; /* C0 too: no item has cas 0 */
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

/*
 * ma on an item: checks it as memcached's incr does (an empty value is
 * not a number, whatever C says; a C of 0 compares nothing), then sets
 * `*value` and the new envelope `m`. Returns REPLY_STORED or the refusal.
 */
static enum reply_code
_ma_hit(struct process_ctx *ctx, const struct proto_request *req,
        const struct txn_current *cur, bool incr, uint64_t *value,
        struct record_meta *m)
{
    const struct proto_meta *f = &req->meta;

    /* a C of 0 compares nothing: the increment goes ahead */
    bool compare = f->compare_cas && f->compare_value != 0;
    enum reply_code code = process_counter_hit(
        ctx, cur, incr, f->delta, compare, f->compare_value, value, m);
    if (code != REPLY_STORED) {
        return code;
    }
    if (!process_counter_fits(*value, cur->vlen)) {
        /* memcached's new item leaves the key unmarked; kura keeps the
         * b (doc/protocol.md) */
        m->binkey = f->base64;
    }
    return REPLY_STORED;
}

/* ma: incr (I, +) or decr (D, -) by D; N creates a miss as J. */
static enum process_result
_ma(struct process_ctx *ctx, const struct proto_request *req,
    struct buf *out)
{
    const struct proto_meta *f = &req->meta;
    bool incr = f->mode != 'D' && f->mode != '-';
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
        process_new_meta(ctx, &m, 0, 0);
        m.binkey = f->base64; /* memcached: unmarked (doc/protocol.md) */
        created = true;
    } else {
        enum reply_code code = _ma_hit(ctx, req, &cur, incr, &value, &m);
        old_len = cur.vlen;
        txn_current_release(&cur);
        if (code != REPLY_STORED) {
            return process_result_of(reply_result(out, req, code, NULL));
        }
        stats_incr(ctx->stats, incr ? STATS_INCR_HITS : STATS_DECR_HITS);
    }
    struct reply_item it;
    bool won = false;
    memset(&it, 0, sizeof(it));
    /* memcached sets T on the old item when the number outgrew it, so
     * that the new one keeps its ttl; kura applies T (doc/protocol.md). */
    it.ttl = _ttl_flags(req, created, false, &n, &m, &won);
    _set_cas(req, &m);
    st = process_stage_counter(ctx, req, &m, value, old_len);
    if (st != TXN_OK) {
        return process_txn_error(ctx, req, out, st);
    }
    process_note_write(ctx, req->key, req->nkey, &n);
    it.key = req->key;
    it.nkey = req->nkey;
    it.cas = m.cas;
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
