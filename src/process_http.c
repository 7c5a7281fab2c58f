/*
 * process_http: what HTTP requests do to records (see process.h).
 *
 * A document is a record like any other: PUT and POST store the body at
 * the key (the decoded path) through the same write path, log, group
 * commit and release points as "set", so a 2xx means what STORED means;
 * the Content-Type travels in the record (record.h) and comes back on
 * GET. ETags are the record's cas, so If-Match and If-None-Match give
 * optimistic concurrency on every method. Kura-Exptime sets the expiry
 * with memcached's exptime rules. A JSON Content-Type requires a valid
 * JSON body (json_check.h). Under /-/ are kurad's own endpoints: health
 * and metrics.
 *
 * With -auth, every request but /-/health needs HTTP Basic credentials
 * from the same password file.
 */
#include "process_members.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cmdmask.h"
#include "json_check.h"
#include "proto_http.h"

/* What a record is served as when it was stored without a type. */
static const char default_ctype[] = "application/octet-stream";

static void
_trim(const char **s, size_t *n)
{
    while (*n > 0 && (**s == ' ' || **s == '\t')) {
        (*s)++;
        (*n)--;
    }
    while (*n > 0 && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t')) {
        (*n)--;
    }
}

/*
 * Does the ETag list `list` (If-Match, If-None-Match) name the record
 * whose cas is `cas`? "*" names any existing record. Weak tags (W/)
 * compare by their opaque part.
 */
static bool
_etag_matches(const char *list, size_t n, bool present, uint64_t cas)
{
    char mine[24];
    snprintf(mine, sizeof(mine), "\"%016" PRIx64 "\"", cas);
    size_t pos = 0;
    const char *tag;
    size_t len;
    while (proto_http_next_item(list, n, &pos, &tag, &len)) {
        if (len == 1 && tag[0] == '*') {
            if (present) {
                return true;
            }
            continue;
        }
        if (len > 2 && tag[0] == 'W' && tag[1] == '/') {
            tag += 2;
            len -= 2;
        }
        if (present && len == 18 && memcmp(tag, mine, 18) == 0) {
            return true;
        }
    }
    return false;
}

/*
 * The conditional headers against the record's state: 0 to go on, or
 * the status to answer (412; 304 for a read whose If-None-Match names
 * the record).
 */
static uint16_t
_preconditions(const struct proto_request *req, bool present, uint64_t cas)
{
    const struct proto_http *h = &req->http;
    bool read = h->method == PROTO_HTTP_GET || h->method == PROTO_HTTP_HEAD;
    if (h->if_match != NULL &&
        !_etag_matches(h->if_match, h->n_if_match, present, cas)) {
        return 412;
    }
    if (h->if_none_match != NULL &&
        _etag_matches(h->if_none_match, h->n_if_none_match, present, cas)) {
        return read ? 304 : 412;
    }
    return 0;
}

/* HTTP Basic credentials against -auth's file. */
static bool
_authorized(struct process_ctx *ctx, const struct proto_request *req)
{
    const struct auth *auth = ctx->env->auth;
    if (auth == NULL || !auth->enabled) {
        return true;
    }
    const char *v = req->http.auth;
    size_t n = req->http.nauth;
    if (v == NULL || n < 6 || strncasecmp(v, "Basic ", 6) != 0) {
        return false;
    }
    v += 6;
    n -= 6;
    _trim(&v, &n);
    char creds[2 * AUTH_FIELD_MAX + 2];
    long len = proto_base64_decode(v, n, creds, sizeof(creds));
    const char *colon = len > 0 ? memchr(creds, ':', (size_t)len) : NULL;
    bool ok = colon != NULL &&
              auth_check(auth, creds, (size_t)(colon - creds), colon + 1,
                         (size_t)len - (size_t)(colon - creds) - 1);
    memset(creds, 0, sizeof(creds));
    return ok;
}

static enum process_result
_answer(struct process_ctx *ctx, struct buf *out,
        const struct proto_request *req, const struct reply_http *r)
{
    struct reply_http dated = *r;
    dated.date = reply_http_date(&ctx->http_date, (int64_t)time(NULL));
    if (!reply_http(out, req, &dated)) {
        return PROCESS_FATAL;
    }
    return req->http.keep_alive && !r->close ? PROCESS_DONE : PROCESS_CLOSE;
}

static enum process_result
_error(struct buf *out, const struct proto_request *req, uint16_t status,
       const char *detail)
{
    if (!reply_http_error(out, req, status, detail, false)) {
        return PROCESS_FATAL;
    }
    return req->http.keep_alive ? PROCESS_DONE : PROCESS_CLOSE;
}

static enum process_result
_get(struct process_ctx *ctx, const struct proto_request *req,
     struct buf *out)
{
    struct txn_current cur;
    struct now n;
    stats_incr(ctx->stats, STATS_CMD_GET);
    process_now(ctx, &n);
    enum txn_status st = txn_read(ctx->batch, req->key, req->nkey, &cur);
    if (st != TXN_OK) {
        return _error(out, req, 500, NULL);
    }
    enum visibility vis = process_visibility(&cur, &n);
    bool present = vis == VISIBLE;
    if (vis == EXPIRED || vis == FLUSHED) {
        uint64_t ts = cur.meta.ts;
        txn_current_release(&cur);
        if (txn_expire(ctx->batch, req->key, req->nkey, ts)) {
            stats_incr(ctx->stats, STATS_RECLAIMED);
        }
    }
    stats_incr(ctx->stats, present ? STATS_GET_HITS : STATS_GET_MISSES);
    uint16_t status = _preconditions(req, present, cur.meta.cas);
    enum process_result r;
    if (status == 304) {
        struct reply_http h = {.status = 304, .has_etag = true,
                               .cas = cur.meta.cas};
        r = _answer(ctx, out, req, &h);
    } else if (status != 0) {
        r = _error(out, req, status, NULL);
    } else if (!present) {
        r = _error(out, req, 404, NULL);
    } else {
        struct reply_http h = {
            .status = 200,
            .ctype = cur.meta.nctype > 0 ? cur.meta.ctype : default_ctype,
            .nctype = cur.meta.nctype > 0 ? cur.meta.nctype
                                          : sizeof(default_ctype) - 1,
            .body = cur.value,
            .nbody = cur.vlen,
            .has_etag = true,
            .cas = cur.meta.cas,
        };
        r = _answer(ctx, out, req, &h);
    }
    txn_current_release(&cur);
    return r;
}

static enum process_result
_put(struct process_ctx *ctx, const struct proto_request *req,
     struct buf *out)
{
    const struct proto_http *h = &req->http;
    struct json_check_error jerr;
    stats_incr(ctx->stats, STATS_CMD_SET);
    if (h->json && !json_check(req->value, req->vlen, &jerr)) {
        char detail[200];
        char reason[96];
        size_t k = 0;
        for (const char *c = jerr.reason; *c != '\0' && k + 1 < sizeof(reason);
             c++) {
            reason[k++] = *c == '"' || *c == '\\' ? '\'' : *c;
        }
        reason[k] = '\0';
        snprintf(detail, sizeof(detail),
                 "\"reason\":\"invalid JSON: %s\",\"offset\":%zu", reason,
                 jerr.offset);
        return _error(out, req, 400, detail);
    }
    const char *ctype = h->ctype;
    size_t nctype = h->nctype;
    if (ctype != NULL) {
        _trim(&ctype, &nctype);
    }
    if (nctype > RECORD_CTYPE_MAX) {
        return _error(out, req, 400,
                      "\"reason\":\"Content-Type over 127 bytes\"");
    }
    struct txn_current cur;
    struct now n;
    process_now(ctx, &n);
    enum txn_status st = txn_begin_key(ctx->batch, req->key, req->nkey, &cur);
    if (st != TXN_OK) {
        return process_txn_error(ctx, req, out, st);
    }
    bool present = process_visibility(&cur, &n) == VISIBLE;
    uint16_t status = _preconditions(req, present, cur.meta.cas);
    if (status != 0) {
        txn_current_release(&cur);
        return _error(out, req, status, NULL);
    }
    struct record_meta m;
    process_new_meta(ctx, &m, 0,
                     h->has_exptime ? expiry_absolute(h->exptime, n.s) : 0);
    m.ctype = nctype > 0 ? ctype : NULL;
    m.nctype = (uint8_t)nctype;
    st = txn_stage_record(ctx->batch, req->key, req->nkey, &m, req->value,
                          req->vlen, NULL, 0);
    txn_current_release(&cur);
    if (st != TXN_OK) {
        return process_txn_error(ctx, req, out, st);
    }
    process_note_write(ctx, req->key, req->nkey, &n);
    stats_incr(ctx->stats, STATS_TOTAL_ITEMS);
    struct reply_http r = {
        .status = present ? 204 : 201,
        .has_etag = true,
        .cas = m.cas,
    };
    return _answer(ctx, out, req, &r);
}

static enum process_result
_delete(struct process_ctx *ctx, const struct proto_request *req,
        struct buf *out)
{
    bool present;
    uint64_t cas;
    enum txn_status st =
        process_presence(ctx, req->key, req->nkey, &present, &cas);
    if (st != TXN_OK) {
        return process_txn_error(ctx, req, out, st);
    }
    uint16_t status = _preconditions(req, present, cas);
    if (status != 0) {
        return _error(out, req, status, NULL);
    }
    if (!present) {
        stats_incr(ctx->stats, STATS_DELETE_MISSES);
        return _error(out, req, 404, NULL);
    }
    st = txn_stage_remove(ctx->batch, req->key, req->nkey);
    if (st != TXN_OK) {
        return process_txn_error(ctx, req, out, st);
    }
    stats_incr(ctx->stats, STATS_DELETE_HITS);
    struct reply_http r = {.status = 204};
    return _answer(ctx, out, req, &r);
}

/* /-/health and /-/metrics. */
static enum process_result
_admin(struct process_ctx *ctx, const struct proto_request *req,
       struct buf *out)
{
    const struct proto_http *h = &req->http;
    bool read = h->method == PROTO_HTTP_GET || h->method == PROTO_HTTP_HEAD;
    bool health = h->npath == 9 && memcmp(h->path, "/-/health", 9) == 0;
    bool metrics = h->npath == 10 && memcmp(h->path, "/-/metrics", 10) == 0;
    if (!health && !metrics) {
        return _error(out, req, 404, NULL);
    }
    if (!read) {
        return _error(out, req, 405, NULL);
    }
    if (health) {
        bool writable = process_accepts_writes(ctx);
        static const char ok[] = "{\"status\":\"ok\"}\n";
        static const char no[] = "{\"status\":\"refusing writes\"}\n";
        struct reply_http r = {
            .status = writable ? 200 : 503,
            .ctype = "application/json",
            .nctype = 16,
            .body = writable ? ok : no,
            .nbody = writable ? sizeof(ok) - 1 : sizeof(no) - 1,
        };
        return _answer(ctx, out, req, &r);
    }
    return process_metrics_http(ctx, req, out);
}

enum process_result
process_http(struct process_ctx *ctx, const struct proto_request *req,
             struct buf *out)
{
    bool health = req->cmd == PROTO_CMD_HTTP_ADMIN &&
                  req->http.npath == 9 &&
                  memcmp(req->http.path, "/-/health", 9) == 0;
    if (!health && !_authorized(ctx, req)) {
        stats_incr(ctx->stats, STATS_AUTH_ERRORS);
        return _error(out, req, 401, NULL);
    }
    if (!cmdmask_allows(ctx->env->settings->mask, proto_class(req))) {
        stats_incr(ctx->stats, STATS_CMD_DENIED);
        return _error(out, req, 403, NULL);
    }
    switch (req->cmd) {
    case PROTO_CMD_HTTP_GET:
        return _get(ctx, req, out);
    case PROTO_CMD_HTTP_PUT:
        return _put(ctx, req, out);
    case PROTO_CMD_HTTP_DELETE:
        return _delete(ctx, req, out);
    default:
        return _admin(ctx, req, out);
    }
}
