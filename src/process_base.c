/*
 * process_base: the helpers every command handler shares (process_base.h):
 * the clock and flush view, visibility, the envelope of a new write, reply
 * items, the access table, counters as memcached reads and writes them,
 * the cas rule, joining an append or prepend, and `stats detail` counts.
 * It calls nothing above it: the handlers (process_classic.c and the
 * others) call it, and process.c dispatches to them.
 */
#include "process_base.h"

#include <stdlib.h>
#include <string.h>

#include "cmdmask.h"
#include "proto_token.h"
#include "util.h"

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

enum reply_code
process_counter_hit(struct process_ctx *ctx, const struct txn_current *cur,
                    bool incr, uint64_t delta, bool compare, uint64_t want,
                    uint64_t *value, struct record_meta *m)
{
    if (cur->vlen == 0 || cur->vlen > PROCESS_COUNTER_MAX) {
        return REPLY_NON_NUMERIC;
    }
    if (compare && (want == 0 || cur->meta.cas != want)) {
        return REPLY_EXISTS;
    }
    if (!process_parse_counter(cur->value, cur->vlen, value)) {
        return REPLY_NON_NUMERIC;
    }
    if (incr) {
        *value += delta; /* wraps modulo 2^64, as memcached */
    } else {
        *value = delta > *value ? 0 : *value - delta;
    }
    process_counter_meta(ctx, cur, *value, m);
    return REPLY_STORED;
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

/* Counts a key for `stats detail` (detail.h): text and binary requests
 * only, as memcached counts them. */
void
process_detail(struct process_ctx *ctx, const struct proto_request *req,
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

enum reply_code
process_cas_rule(struct process_ctx *ctx, bool present, uint64_t have,
                 uint64_t want, bool stale_ok, bool *stale)
{
    *stale = false;
    if (!present) {
        stats_incr(ctx->stats, STATS_CAS_MISSES);
        return REPLY_NOT_FOUND;
    }
    if (want != 0 && want == have) {
        stats_incr(ctx->stats, STATS_CAS_HITS);
        return REPLY_STORED;
    }
    if (want != 0 && stale_ok && want < have) {
        stats_incr(ctx->stats, STATS_CAS_HITS);
        *stale = true;
        return REPLY_STORED;
    }
    stats_incr(ctx->stats, STATS_CAS_BADVAL);
    return REPLY_EXISTS;
}

bool
process_join(struct process_ctx *ctx, const struct txn_current *cur,
             bool append, const void *add, size_t nadd,
             struct record_meta *m, struct process_value *v)
{
    if (cur->vlen + nadd > ctx->env->settings->item_max) {
        stats_incr(ctx->stats, STATS_STORE_TOO_LARGE);
        return false;
    }
    /* The command's flags and exptime are ignored, as by memcached; an
     * HTTP Content-Type stays. */
    m->flags = cur->meta.flags;
    m->exptime = cur->meta.exptime;
    m->ctype = cur->meta.ctype;
    m->nctype = cur->meta.nctype;
    if (append) {
        *v = (struct process_value){cur->value, cur->vlen, add, nadd};
    } else {
        *v = (struct process_value){add, nadd, cur->value, cur->vlen};
    }
    return true;
}
