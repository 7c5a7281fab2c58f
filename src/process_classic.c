/*
 * process_classic: memcached's classic commands for text and binary
 * requests alike (process_members.h): get/gets/gat/gats, the storage
 * commands, delete, incr/decr, touch, flush_all, cache_memlimit and
 * slabs. The binary protocol only adds options the text one lacks: a cas
 * on any store or delete, and incr/decr that create a missing counter.
 */
#include "process_members.h"

#include <stdlib.h>
#include <string.h>

enum process_result
process_get(struct process_ctx *ctx, const struct proto_request *req,
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
        process_detail(ctx, req, key, nkey, 'g', vis == VISIBLE);
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

/*
 * set, add, replace, append, prepend, cas. A binary store with a cas in
 * its header is a cas, as memcached makes it; an append or prepend with
 * one also requires the cas to match.
 */
enum process_result
process_store(struct process_ctx *ctx, const struct proto_request *req,
       struct buf *out)
{
    struct txn_current cur;
    struct now n;
    struct record_meta m;
    struct reply_item it;

    stats_incr(ctx->stats, STATS_CMD_SET);
    process_detail(ctx, req, req->key, req->nkey, 's', false);
    process_now(ctx, &n);
    enum txn_status st = txn_begin_key(ctx->batch, req->key, req->nkey, &cur);
    if (st != TXN_OK) {
        return process_txn_error(ctx, req, out, st);
    }
    bool present = process_visibility(&cur, &n) == VISIBLE;
    bool compare = req->cmd == PROTO_CMD_CAS || req->has_cas;
    bool append = req->cmd == PROTO_CMD_APPEND;
    struct process_value v = {req->value, req->vlen, NULL, 0};
    enum reply_code code = REPLY_STORED;
    bool stale;

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
        if (!process_join(ctx, &cur, append, req->value, req->vlen, &m,
                          &v)) {
            txn_current_release(&cur);
            return process_result_of(
                reply_result(out, req, REPLY_TOO_LARGE, NULL));
        }
        break;
    default:
        break;
    }
    if (compare && req->cmd != PROTO_CMD_APPEND &&
        req->cmd != PROTO_CMD_PREPEND) {
        /* memcached makes every store with a cas a cas, add included */
        code = process_cas_rule(ctx, present, cur.meta.cas, req->cas_unique,
                                false, &stale);
    }
    if (code == REPLY_STORED) {
        st = txn_stage_record(ctx->batch, req->key, req->nkey, &m, v.v1, v.l1,
                              v.v2, v.l2);
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
enum process_result
process_delete(struct process_ctx *ctx, const struct proto_request *req,
        struct buf *out)
{
    bool present;
    uint64_t cas;
    process_detail(ctx, req, req->key, req->nkey, 'd', false);
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
enum process_result
process_arith(struct process_ctx *ctx, const struct proto_request *req,
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
        enum reply_code code =
            process_counter_hit(ctx, &cur, incr, req->delta, req->has_cas,
                                req->cas_unique, &value, &m);
        if (code != REPLY_STORED) {
            txn_current_release(&cur);
            return process_result_of(reply_result(out, req, code, NULL));
        }
        old_len = cur.vlen;
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

enum process_result
process_touch(struct process_ctx *ctx, const struct proto_request *req,
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
        process_detail(ctx, req, req->key, req->nkey, 'g', visible);
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
bool
process_memlimit(const struct proto_request *req, struct buf *out)
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

bool
process_slabs(const struct proto_request *req, struct buf *out)
{
    switch ((enum proto_slabs)req->level) {
    case PROTO_SLABS_REASSIGN_SAME:
        return reply_text_code(out, REPLY_SLABS_SAME);
    case PROTO_SLABS_REASSIGN:
        return reply_text_code(out, REPLY_SLABS_BADCLASS);
    case PROTO_SLABS_AUTOMOVE:
    default:
        return req->noreply || reply_text_code(out, REPLY_OK);
    }
}

enum process_result
process_flush_all(struct process_ctx *ctx, const struct proto_request *req,
           struct buf *out)
{
    stats_incr(ctx->stats, STATS_CMD_FLUSH);
    enum txn_status st = txn_flush_all(ctx->batch, req->delay);
    if (st != TXN_OK) {
        return process_txn_error(ctx, req, out, st);
    }
    return process_result_of(reply_result(out, req, REPLY_OK, NULL));
}
