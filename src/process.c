/*
 * process: dispatch, authentication and the classic commands (see
 * process.h): get/gets/gat/gats, the storage commands, delete, incr/decr,
 * touch, flush_all and the small ones, for text and binary requests
 * alike. The binary protocol only adds options the text one lacks: a cas
 * on any store or delete, and incr/decr that create a missing counter.
 */
#include "process_internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cmdmask.h"
#include "proto_token.h"
#include "util.h"

/* ---------------------------------------------------- shared helpers */

void
process_now(struct process_ctx *ctx, struct now *n)
{
    n->us = util_now_us();
    n->s = (int64_t)(n->us / 1000000u);
    txn_batch_flush_state(ctx->batch, &n->flush);
}

bool
process_accepts_writes(const struct process_ctx *ctx)
{
    return txn_accepts_writes(ctx->env->eng) &&
           cmdmask_allows(ctx->env->settings->mask, PROTO_CMD_SET);
}

enum txn_status
process_presence(struct process_ctx *ctx, const char *key, size_t nkey,
                 bool *present, uint64_t *cas)
{
    struct txn_current cur;
    struct now n;
    process_now(ctx, &n);
    enum txn_status st = txn_begin_key(ctx->batch, key, nkey, &cur);
    if (st != TXN_OK) {
        return st;
    }
    *present = process_visibility(&cur, &n) == VISIBLE;
    *cas = cur.meta.cas;
    txn_current_release(&cur);
    return TXN_OK;
}

enum visibility
process_visibility(const struct txn_current *cur, const struct now *n)
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

enum process_result
process_result_of(bool ok)
{
    return ok ? PROCESS_DONE : PROCESS_FATAL;
}

enum process_result
process_txn_error(struct process_ctx *ctx, const struct proto_request *req,
                  struct buf *out, enum txn_status st)
{
    enum reply_code code;
    stats_incr(ctx->stats, STATS_WRITE_ERRORS);
    switch (st) {
    case TXN_EREADONLY:
        code = REPLY_SERVER_ERROR_READONLY;
        break;
    case TXN_ENOMEM:
        stats_incr(ctx->stats, STATS_STORE_NO_MEMORY);
        code = REPLY_SERVER_ERROR_OOM;
        break;
    case TXN_ENOSPC:
        code = REPLY_SERVER_ERROR_NOSPACE;
        break;
    default:
        code = REPLY_SERVER_ERROR_IO;
        break;
    }
    return process_result_of(reply_result(out, req, code, NULL));
}

void
process_new_meta(struct process_ctx *ctx, struct record_meta *m,
                 uint32_t flags, uint32_t exptime)
{
    memset(m, 0, sizeof(*m));
    m->kind = RECORD_VALUE;
    m->flags = flags;
    m->exptime = exptime;
    m->ts = clock_next(ctx->env->eng->clock);
    m->cas = m->ts;
    m->sid = ctx->env->eng->sid;
}

int64_t
process_ttl(const struct record_meta *m, const struct now *n)
{
    if (m->exptime == 0) {
        return -1;
    }
    return (int64_t)m->exptime > n->s ? (int64_t)m->exptime - n->s : 0;
}

void
process_item(struct reply_item *it, const char *key, size_t nkey,
             const struct txn_current *cur, const struct now *n)
{
    memset(it, 0, sizeof(*it));
    it->key = key;
    it->nkey = nkey;
    it->flags = cur->meta.flags;
    it->value = cur->value;
    it->vlen = cur->vlen;
    it->cas = cur->meta.cas;
    it->ttl = process_ttl(&cur->meta, n);
    it->stale = cur->meta.stale;
    it->key_binary = cur->meta.binkey;
    it->hit = -1;
}

void
process_note_read(struct process_ctx *ctx, struct reply_item *it,
                  const struct txn_current *cur, const struct now *n,
                  bool bump)
{
    struct access_table *t = ctx->env->access;
    if (t == NULL) {
        return;
    }
    struct access_seen seen;
    if (bump) {
        access_read(t, it->key, it->nkey, (uint32_t)n->s, &seen);
    } else {
        access_peek(t, it->key, it->nkey, &seen);
    }
    int64_t since = seen.known ? (int64_t)seen.when_s
                               : (int64_t)(cur->meta.ts / 1000000u);
    it->hit = seen.known && seen.fetched ? 1 : 0;
    it->idle = n->s > since ? n->s - since : 0;
}

void
process_note_write(struct process_ctx *ctx, const char *key, size_t nkey,
                   const struct now *n)
{
    if (ctx->env->access != NULL) {
        access_write(ctx->env->access, key, nkey, (uint32_t)n->s);
    }
}

/*
 * As memcached's incr reads a value: strtoull() on the value as a C
 * string, which the stored CRLF ends (proto_read_u64(), which reads a
 * word the same way: "-0" is 0, a NUL ends the number).
 */
bool
process_parse_counter(const uint8_t *v, size_t len, uint64_t *out)
{
    struct token t = {(const char *)v, len};
    return len > 0 && proto_read_u64(&t, out);
}

bool
process_counter_fits(uint64_t value, size_t old_len)
{
    char digits[UTIL_U64_DIGITS];
    return util_u64_to_dec(value, digits) <= old_len;
}

void
process_counter_meta(struct process_ctx *ctx, const struct txn_current *cur,
                     uint64_t value, struct record_meta *m)
{
    process_new_meta(ctx, m, cur->meta.flags, cur->meta.exptime);
    if (process_counter_fits(value, cur->vlen)) {
        m->binkey = cur->meta.binkey;
        m->stale = cur->meta.stale;
        m->token = cur->meta.token;
    }
}

enum txn_status
process_stage_counter(struct process_ctx *ctx,
                      const struct proto_request *req, struct record_meta *m,
                      uint64_t value, size_t old_len)
{
    /*
     * memcached rewrites a number in place when the new digits fit,
     * padding with spaces to the old length; a longer number replaces the
     * value with exactly its digits.
     */
    static const char spaces[256] = {[0 ... 255] = ' '};
    char digits[UTIL_U64_DIGITS];
    size_t nd = util_u64_to_dec(value, digits);
    size_t pad = old_len > nd ? old_len - nd : 0;
    char *fill = NULL; /* a long value's padding ("12 " then text) */
    if (pad > sizeof(spaces)) {
        fill = malloc(pad);
        if (fill == NULL) {
            return TXN_ENOMEM;
        }
        memset(fill, ' ', pad);
    }
    enum txn_status st =
        txn_stage_record(ctx->batch, req->key, req->nkey, m, digits, nd,
                         fill != NULL ? fill : spaces, pad);
    free(fill);
    return st;
}

/* ------------------------------------------------ the classic commands */

/* Counts a key for `stats detail` (detail.h): text and binary requests
 * only, as memcached counts them. */
static void
_detail(struct process_ctx *ctx, const struct proto_request *req,
        const char *key, size_t nkey, char what, bool hit)
{
    struct detail *d = ctx->env->detail;
    if (d == NULL || !detail_on(d) ||
        (req->kind != PROTO_KIND_TEXT && req->kind != PROTO_KIND_BINARY)) {
        return;
    }
    if (what == 'g') {
        detail_get(d, key, nkey, hit);
    } else if (what == 's') {
        detail_set_key(d, key, nkey);
    } else {
        detail_delete(d, key, nkey);
    }
}

/* get, gets, gat, gats (text); get, getk, gat, gatk and quiet (binary) */
static enum process_result
_retrieve(struct process_ctx *ctx, const struct proto_request *req,
          size_t *cursor, struct buf *out, size_t watermark)
{
    bool touch = req->cmd == PROTO_CMD_GAT || req->cmd == PROTO_CMD_GATS;
    struct now n;
    const char *key;
    size_t nkey;
    size_t pos = *cursor;

    process_now(ctx, &n);
    uint32_t exptime = touch ? expiry_absolute(req->exptime, n.s) : 0;
    while (proto_next_key(req, &pos, &key, &nkey)) {
        struct txn_current cur;
        struct reply_item it;
        enum txn_status st;

        stats_incr(ctx->stats, touch ? STATS_CMD_TOUCH : STATS_CMD_GET);
        st = touch ? txn_begin_key(ctx->batch, key, nkey, &cur)
                   : txn_read(ctx->batch, key, nkey, &cur);
        if (st == TXN_EIO && !touch) {
            /* A damaged record (store.h): this request fails alone. */
            return process_result_of(
                reply_result(out, req, REPLY_SERVER_ERROR_READ, NULL));
        }
        if (st != TXN_OK) {
            return process_txn_error(ctx, req, out, st);
        }
        enum visibility vis = process_visibility(&cur, &n);
        bool ok;
        _detail(ctx, req, key, nkey, 'g', vis == VISIBLE);
        process_item(&it, key, nkey, &cur, &n);
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
                    return process_txn_error(ctx, req, out, st);
                }
            }
            /* Not noted in the access table (access.h): that costs a
             * cache miss per key, a fifth of a get's CPU. */
            ok = reply_hit(out, req, &it);
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
            ok = reply_miss(out, req, &it);
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
    return process_result_of(reply_end(out, req));
}

/* Whether a store compares the cas, and what that says. */
static enum reply_code
_compare_cas(struct process_ctx *ctx, bool present, uint64_t have,
             uint64_t want)
{
    if (!present) {
        stats_incr(ctx->stats, STATS_CAS_MISSES);
        return REPLY_NOT_FOUND;
    }
    if (have != want) {
        stats_incr(ctx->stats, STATS_CAS_BADVAL);
        return REPLY_EXISTS;
    }
    stats_incr(ctx->stats, STATS_CAS_HITS);
    return REPLY_STORED;
}

/*
 * set, add, replace, append, prepend, cas. A binary store with a cas in
 * its header is a cas, as memcached makes it; an append or prepend with
 * one also requires the cas to match.
 */
static enum process_result
_store(struct process_ctx *ctx, const struct proto_request *req,
       struct buf *out)
{
    struct txn_current cur;
    struct now n;
    struct record_meta m;
    struct reply_item it;

    stats_incr(ctx->stats, STATS_CMD_SET);
    _detail(ctx, req, req->key, req->nkey, 's', false);
    process_now(ctx, &n);
    enum txn_status st = txn_begin_key(ctx->batch, req->key, req->nkey, &cur);
    if (st != TXN_OK) {
        return process_txn_error(ctx, req, out, st);
    }
    bool present = process_visibility(&cur, &n) == VISIBLE;
    bool compare = req->cmd == PROTO_CMD_CAS || req->has_cas;
    const void *v1 = req->value;
    size_t l1 = req->vlen;
    const void *v2 = NULL;
    size_t l2 = 0;
    enum reply_code code = REPLY_STORED;

    process_new_meta(ctx, &m, req->flags, expiry_absolute(req->exptime, n.s));
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
        if (compare && cur.meta.cas != req->cas_unique) {
            code = REPLY_EXISTS;
            break;
        }
        if (cur.vlen + req->vlen > ctx->env->settings->item_max) {
            txn_current_release(&cur);
            stats_incr(ctx->stats, STATS_STORE_TOO_LARGE);
            return process_result_of(
                reply_result(out, req, REPLY_TOO_LARGE, NULL));
        }
        /* The command's flags and exptime are ignored, as by memcached;
         * an HTTP Content-Type stays. */
        m.flags = cur.meta.flags;
        m.exptime = cur.meta.exptime;
        m.ctype = cur.meta.ctype;
        m.nctype = cur.meta.nctype;
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
    default:
        break;
    }
    if (compare && req->cmd != PROTO_CMD_APPEND &&
        req->cmd != PROTO_CMD_PREPEND) {
        code = _compare_cas(ctx, present, cur.meta.cas, req->cas_unique);
    }
    if (code == REPLY_STORED) {
        st = txn_stage_record(ctx->batch, req->key, req->nkey, &m, v1, l1, v2,
                              l2);
        if (st != TXN_OK) {
            txn_current_release(&cur);
            return process_txn_error(ctx, req, out, st);
        }
        process_note_write(ctx, req->key, req->nkey, &n);
        stats_incr(ctx->stats, STATS_TOTAL_ITEMS);
    }
    txn_current_release(&cur);
    memset(&it, 0, sizeof(it));
    it.key = req->key;
    it.nkey = req->nkey;
    it.cas = code == REPLY_STORED ? m.cas : 0;
    return process_result_of(reply_result(out, req, code, &it));
}

/* delete; a binary delete with a cas deletes only that version. */
static enum process_result
_delete(struct process_ctx *ctx, const struct proto_request *req,
        struct buf *out)
{
    bool present;
    uint64_t cas;
    _detail(ctx, req, req->key, req->nkey, 'd', false);
    enum txn_status st =
        process_presence(ctx, req->key, req->nkey, &present, &cas);
    if (st != TXN_OK) {
        return process_txn_error(ctx, req, out, st);
    }
    if (!present) {
        stats_incr(ctx->stats, STATS_DELETE_MISSES);
        return process_result_of(
            reply_result(out, req, REPLY_NOT_FOUND, NULL));
    }
    if (req->has_cas && cas != req->cas_unique) {
        return process_result_of(reply_result(out, req, REPLY_EXISTS, NULL));
    }
    st = txn_stage_remove(ctx->batch, req->key, req->nkey);
    if (st != TXN_OK) {
        return process_txn_error(ctx, req, out, st);
    }
    stats_incr(ctx->stats, STATS_DELETE_HITS);
    return process_result_of(reply_result(out, req, REPLY_DELETED, NULL));
}

/*
 * incr, decr. The binary forms may create a missing counter with their
 * initial value (unless the expiration is 0xffffffff) and may require a
 * cas.
 */
static enum process_result
_arith(struct process_ctx *ctx, const struct proto_request *req,
       struct buf *out)
{
    bool incr = req->cmd == PROTO_CMD_INCR;
    struct txn_current cur;
    struct record_meta m;
    struct reply_item it;
    struct now n;
    uint64_t value;
    size_t old_len = 0;

    process_now(ctx, &n);
    enum txn_status st = txn_begin_key(ctx->batch, req->key, req->nkey, &cur);
    if (st != TXN_OK) {
        return process_txn_error(ctx, req, out, st);
    }
    if (process_visibility(&cur, &n) != VISIBLE) {
        txn_current_release(&cur);
        stats_incr(ctx->stats, incr ? STATS_INCR_MISSES : STATS_DECR_MISSES);
        if (!req->create) {
            return process_result_of(
                reply_result(out, req, REPLY_NOT_FOUND, NULL));
        }
        value = req->initial;
        process_new_meta(ctx, &m, 0, expiry_absolute(req->exptime, n.s));
    } else {
        /* memcached refuses an empty value, and one it keeps in chunks,
         * before it compares the cas */
        if (cur.vlen == 0 || cur.vlen > PROCESS_COUNTER_MAX) {
            txn_current_release(&cur);
            return process_result_of(
                reply_result(out, req, REPLY_NON_NUMERIC, NULL));
        }
        if (req->has_cas && cur.meta.cas != req->cas_unique) {
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
            value += req->delta; /* wraps modulo 2^64, as memcached */
        } else {
            value = req->delta > value ? 0 : value - req->delta;
        }
        old_len = cur.vlen;
        process_counter_meta(ctx, &cur, value, &m);
        txn_current_release(&cur);
        stats_incr(ctx->stats, incr ? STATS_INCR_HITS : STATS_DECR_HITS);
    }
    st = process_stage_counter(ctx, req, &m, value, old_len);
    if (st != TXN_OK) {
        return process_txn_error(ctx, req, out, st);
    }
    process_note_write(ctx, req->key, req->nkey, &n);
    memset(&it, 0, sizeof(it));
    it.key = req->key;
    it.nkey = req->nkey;
    it.cas = m.cas;
    return process_result_of(reply_counter(out, req, value, &it));
}

static enum process_result
_touch(struct process_ctx *ctx, const struct proto_request *req,
       struct buf *out)
{
    struct txn_current cur;
    struct reply_item it;
    struct now n;

    stats_incr(ctx->stats, STATS_CMD_TOUCH);
    process_now(ctx, &n);
    enum txn_status st = txn_begin_key(ctx->batch, req->key, req->nkey, &cur);
    if (st != TXN_OK) {
        return process_txn_error(ctx, req, out, st);
    }
    bool visible = process_visibility(&cur, &n) == VISIBLE;
    if (req->kind == PROTO_KIND_BINARY) {
        /* memcached counts a binary touch as a get; a text one not */
        _detail(ctx, req, req->key, req->nkey, 'g', visible);
    }
    if (!visible) {
        txn_current_release(&cur);
        stats_incr(ctx->stats, STATS_TOUCH_MISSES);
        return process_result_of(
            reply_result(out, req, REPLY_NOT_FOUND, NULL));
    }
    struct record_meta m = cur.meta; /* the cas is kept, as by memcached */
    m.exptime = expiry_absolute(req->exptime, n.s);
    m.ts = clock_next(ctx->env->eng->clock);
    m.sid = ctx->env->eng->sid;
    st = txn_stage_record(ctx->batch, req->key, req->nkey, &m, cur.value,
                          cur.vlen, NULL, 0);
    process_item(&it, req->key, req->nkey, &cur, &n);
    txn_current_release(&cur);
    if (st != TXN_OK) {
        return process_txn_error(ctx, req, out, st);
    }
    stats_incr(ctx->stats, STATS_TOUCH_HITS);
    return process_result_of(reply_result(out, req, REPLY_TOUCHED, &it));
}

/*
 * cache_memlimit: kura caches nothing it could resize, so a valid limit is
 * simply acknowledged, with memcached's answers to the invalid ones.
 */
static bool
_memlimit(const struct proto_request *req, struct buf *out)
{
    if (req->noreply) {
        return true;
    }
    if (req->level < 8) {
        return reply_text_code(out, REPLY_MEMLIMIT_TOO_SMALL);
    }
    if (req->level > 1000000000u) {
        return reply_text_code(out, REPLY_MEMLIMIT_NOT_BYTES);
    }
    return reply_text_code(out, REPLY_OK);
}

static enum process_result
_flush_all(struct process_ctx *ctx, const struct proto_request *req,
           struct buf *out)
{
    stats_incr(ctx->stats, STATS_CMD_FLUSH);
    enum txn_status st = txn_flush_all(ctx->batch, req->delay);
    if (st != TXN_OK) {
        return process_txn_error(ctx, req, out, st);
    }
    return process_result_of(reply_result(out, req, REPLY_OK, NULL));
}

/* ------------------------------------------------------ authentication */

/*
 * What an unauthenticated connection may do: authenticate, ask the
 * version, quit, and (a replication peer) ask for the log, which proves
 * itself with its own key.
 */
static bool
_allowed_before_auth(const struct proto_request *req)
{
    switch (req->cmd) {
    case PROTO_CMD_VERSION:
    case PROTO_CMD_QUIT:
    case PROTO_CMD_REPL:
    case PROTO_CMD_SASL_LIST:
    case PROTO_CMD_SASL_AUTH:
    case PROTO_CMD_SASL_STEP:
        return true;
    default:
        return false;
    }
}

/*
 * A text "set" whose data is "<user> <password>" (memcached's -Y): its
 * key, flags and exptime are ignored, nothing is stored, and it is
 * answered even with noreply.
 */
static enum process_result
_text_auth(struct process_ctx *ctx, struct process_session *sess,
           const struct proto_request *req, struct buf *out)
{
    stats_incr(ctx->stats, STATS_AUTH_CMDS);
    enum auth_result r = auth_text(ctx->env->auth, req->value, req->vlen);
    if (r == AUTH_OK) {
        sess->authenticated = true;
        return process_result_of(reply_text_code(out, REPLY_STORED));
    }
    stats_incr(ctx->stats, STATS_AUTH_ERRORS);
    return process_result_of(reply_text_code(
        out, r == AUTH_MALFORMED ? REPLY_AUTH_MALFORMED : REPLY_AUTH_FAILED));
}

/*
 * Binary SASL with PLAIN, the one mechanism offered: in one auth, or an
 * auth without data (answered AUTH_CONTINUE) and then a step. As with
 * memcached's Cyrus SASL, a new auth on an authenticated connection
 * starts over: if it fails, the connection is no longer authenticated.
 */
static enum process_result
_sasl(struct process_ctx *ctx, struct process_session *sess,
      const struct proto_request *req, struct buf *out)
{
    if (!ctx->env->auth->enabled) {
        return process_result_of(reply_result(out, req, REPLY_ERROR, NULL));
    }
    if (req->cmd == PROTO_CMD_SASL_LIST) {
        return process_result_of(reply_sasl_mechs(out, req, "PLAIN"));
    }
    bool plain = req->nkey == 5 && strncasecmp(req->key, "PLAIN", 5) == 0;
    bool was_started = sess->sasl_started;
    bool was_authenticated = sess->authenticated;
    sess->sasl_started = false;
    sess->authenticated = false;
    if (req->cmd == PROTO_CMD_SASL_AUTH && plain && req->vlen == 0 &&
        !was_authenticated) {
        sess->sasl_started = true;
        return process_result_of(reply_sasl(out, req, REPLY_SASL_CONTINUE));
    }
    stats_incr(ctx->stats, STATS_AUTH_CMDS);
    bool ok = plain && !was_authenticated &&
              (req->cmd == PROTO_CMD_SASL_AUTH || was_started) &&
              auth_plain(ctx->env->auth, req->value, req->vlen);
    if (!ok) {
        stats_incr(ctx->stats, STATS_AUTH_ERRORS);
    }
    sess->authenticated = ok;
    return process_result_of(
        reply_sasl(out, req, ok ? REPLY_SASL_OK : REPLY_SASL_FAILED));
}

/*
 * A request on a connection that has not authenticated: a text "set"
 * is an attempt; anything else is refused, in text with the connection
 * kept, in binary with AUTH_ERROR and a close, as memcached does.
 */
static enum process_result
_unauthenticated(struct process_ctx *ctx, struct process_session *sess,
                 const struct proto_request *req, struct buf *out)
{
    if (req->kind == PROTO_KIND_TEXT && req->cmd == PROTO_CMD_SET) {
        return _text_auth(ctx, sess, req, out);
    }
    if (req->kind != PROTO_KIND_BINARY) {
        return process_result_of(reply_text_code(out, REPLY_UNAUTHENTICATED));
    }
    struct proto_request loud = *req;
    loud.noreply = false; /* a quiet opcode is refused aloud */
    return reply_result(out, &loud, REPLY_UNAUTHENTICATED, NULL)
               ? PROCESS_CLOSE
               : PROCESS_FATAL;
}

/* ------------------------------------------------------------ dispatch */

enum process_result
process_request(struct process_ctx *ctx, struct process_session *sess,
                const struct proto_request *req, size_t *cursor,
                struct buf *out, size_t watermark)
{
    if (req->kind == PROTO_KIND_HTTP) {
        return process_http(ctx, req, out); /* its own auth and -mask */
    }
    const struct auth *auth = ctx->env->auth;
    if (auth != NULL && auth->enabled && !sess->authenticated &&
        !_allowed_before_auth(req)) {
        return _unauthenticated(ctx, sess, req, out);
    }
    if (!cmdmask_allows(ctx->env->settings->mask, proto_class(req))) {
        stats_incr(ctx->stats, STATS_CMD_DENIED);
        if (req->cmd == PROTO_CMD_REPL) {
            return reply_text_code(out, REPLY_REPL_DENIED) ? PROCESS_CLOSE
                                                           : PROCESS_FATAL;
        }
        return process_result_of(reply_denied(out, req));
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
        return process_result_of(reply_version(out, req));
    case PROTO_CMD_VERBOSITY:
        ctx->env->set_verbosity(ctx->env->arg, req->level);
        return process_result_of(reply_result(out, req, REPLY_OK, NULL));
    case PROTO_CMD_NOOP:
        return process_result_of(reply_noop(out, req));
    case PROTO_CMD_SHUTDOWN:
        return process_result_of(reply_text_code(out, REPLY_NO_SHUTDOWN));
    case PROTO_CMD_MEMLIMIT:
        return process_result_of(_memlimit(req, out));
    case PROTO_CMD_QUIT:
        /* A binary quit is answered (quitq is not); text just closes. */
        if (req->kind == PROTO_KIND_BINARY &&
            !reply_result(out, req, REPLY_OK, NULL)) {
            return PROCESS_FATAL;
        }
        return PROCESS_CLOSE;
    case PROTO_CMD_STATS:
        return process_stats(ctx, req, out);
    case PROTO_CMD_REPL:
        return PROCESS_HANDOFF;
    case PROTO_CMD_MG:
    case PROTO_CMD_MS:
    case PROTO_CMD_MD:
    case PROTO_CMD_MA:
    case PROTO_CMD_ME:
        return process_meta(ctx, req, out);
    case PROTO_CMD_SASL_LIST:
    case PROTO_CMD_SASL_AUTH:
    case PROTO_CMD_SASL_STEP:
        return _sasl(ctx, sess, req, out);
    default:
        return process_result_of(reply_result(out, req, REPLY_ERROR, NULL));
    }
}

enum process_result
process_error(struct process_ctx *ctx, struct process_session *sess,
              const struct proto_parser *p, enum proto_status st,
              const struct proto_request *req, struct buf *out)
{
    const struct auth *auth = ctx->env->auth;
    if (auth != NULL && auth->enabled && !sess->authenticated &&
        p->error == PROTO_ERR_BIN_UNKNOWN) {
        return _unauthenticated(ctx, sess, req, out);
    }
    bool closes = st == PROTO_ECLOSE;
    if (p->error == PROTO_ERR_BAD_CHUNK && req->nkey > 0 &&
        req->cmd != PROTO_CMD_MS) {
        /* memcached counts the set before it reads the data */
        _detail(ctx, req, req->key, req->nkey, 's', false);
    }
    if (p->error == PROTO_ERR_TOO_LARGE) {
        stats_incr(ctx->stats, STATS_STORE_TOO_LARGE);
        if (req->nkey > 0) {
            _detail(ctx, req, req->key, req->nkey, 's', false);
        }
        /*
         * memcached drops the old value of a set it could not store, so
         * a reader never sees data the client meant to replace; an ms
         * drops it whatever its mode.
         */
        bool is_set = p->error_cmd == PROTO_CMD_SET ||
                      p->error_cmd == PROTO_CMD_MS;
        if (is_set && req->nkey > 0 &&
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
        return closes ? PROCESS_CLOSE : PROCESS_DONE;
    }
    bool ok = reply_proto_error(out, req, p);
    if (closes) {
        return ok ? PROCESS_CLOSE : PROCESS_FATAL;
    }
    return process_result_of(ok);
}
