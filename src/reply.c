/*
 * reply: the front of reply writing (reply.h): each reply goes to the
 * writer of the request's protocol (reply_members.h: reply_text.c,
 * reply_bin.c, reply_meta.c, reply_http.c), which builds on the shared
 * base (reply_base.c); the front itself only adds the base's fixed lines
 * (END, MN) where a protocol needs nothing more.
 */
#include "reply_members.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool
reply_result(struct buf *out, const struct proto_request *req,
             enum reply_code code, const struct reply_item *it)
{
    switch (req->kind) {
    case PROTO_KIND_BINARY:
        return reply_bin_result(out, req, code, it);
    case PROTO_KIND_META:
        return reply_meta_result(out, req, code, it);
    case PROTO_KIND_HTTP:
        return reply_http_result(out, req, code);
    default:
        return reply_text_result(out, req, code);
    }
}

bool
reply_hit(struct buf *out, const struct proto_request *req,
          const struct reply_item *it)
{
    switch (req->kind) {
    case PROTO_KIND_BINARY:
        return reply_bin_hit(out, req, it);
    case PROTO_KIND_META:
        return reply_meta_hit(out, req, it);
    default:
        return reply_text_hit(out, req, it);
    }
}

bool
reply_miss(struct buf *out, const struct proto_request *req,
           const struct reply_item *it)
{
    switch (req->kind) {
    case PROTO_KIND_BINARY:
        return reply_bin_miss(out, req, it);
    case PROTO_KIND_META:
        return reply_meta_miss(out, req, it);
    default:
        return true; /* a text get simply leaves the key out */
    }
}

bool
reply_end(struct buf *out, const struct proto_request *req)
{
    return req->kind != PROTO_KIND_TEXT || reply_text_code(out, REPLY_END);
}

bool
reply_counter(struct buf *out, const struct proto_request *req, uint64_t n,
              const struct reply_item *it)
{
    switch (req->kind) {
    case PROTO_KIND_BINARY:
        return reply_bin_counter(out, req, n, it);
    case PROTO_KIND_META:
        return reply_meta_counter(out, req, n, it);
    default:
        return reply_text_counter(out, req, n);
    }
}

bool
reply_proto_error(struct buf *out, const struct proto_request *req,
                  const struct proto_parser *p)
{
    if (req->kind == PROTO_KIND_BINARY) {
        return reply_bin_error(out, req, p->error);
    }
    if (req->kind == PROTO_KIND_HTTP) {
        return reply_http_error(out, req, p->http_status, NULL, true);
    }
    return reply_text_error(out, p->error);
}

bool
reply_denied(struct buf *out, const struct proto_request *req)
{
    if (req->kind == PROTO_KIND_BINARY) {
        return reply_bin_result(out, req, REPLY_ERROR, NULL);
    }
    if (req->kind == PROTO_KIND_HTTP) {
        return reply_http_error(out, req, 403, NULL, false);
    }
    return reply_text_denied(out, req);
}

bool
reply_version(struct buf *out, const struct proto_request *req)
{
    if (req->kind == PROTO_KIND_BINARY) {
        return reply_bin_simple(out, req, reply_version_string,
                                reply_version_len);
    }
    return reply_text_version(out);
}

bool
reply_noop(struct buf *out, const struct proto_request *req)
{
    if (req->kind == PROTO_KIND_BINARY) {
        return reply_bin_simple(out, req, NULL, 0);
    }
    return reply_raw(out, "MN\r\n", 4);
}

/* Most values fit `small`; a longer one (a path under a deep directory)
 * is formatted again on the heap, so that no value is refused. */
bool
reply_stat(struct buf *out, const struct proto_request *req, const char *name,
           const char *fmt, ...)
{
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (m < 0) {
        return false;
    }
    char *big = NULL;
    if ((size_t)m >= sizeof(small)) {
        big = malloc((size_t)m + 1);
        if (big == NULL) {
            return false;
        }
        va_start(ap, fmt);
        vsnprintf(big, (size_t)m + 1, fmt, ap);
        va_end(ap);
    }
    bool ok = reply_stat_bytes(out, req, name, big != NULL ? big : small,
                               (size_t)m);
    free(big);
    return ok;
}

bool
reply_stat_bytes(struct buf *out, const struct proto_request *req,
                 const char *name, const void *value, size_t n)
{
    if (req->kind == PROTO_KIND_BINARY) {
        return reply_bin_stat(out, req, name, (const char *)value, n);
    }
    return reply_text_stat(out, name, value, n);
}

bool
reply_stats_end(struct buf *out, const struct proto_request *req)
{
    if (req->kind == PROTO_KIND_BINARY) {
        return reply_bin_stat(out, req, "", "", 0);
    }
    return reply_text_code(out, REPLY_END);
}

bool
reply_sasl_mechs(struct buf *out, const struct proto_request *req,
                 const char *mechs)
{
    return reply_bin_simple(out, req, mechs, strlen(mechs));
}

bool
reply_sasl(struct buf *out, const struct proto_request *req,
           enum reply_sasl_state state)
{
    return reply_bin_sasl(out, req, state);
}
