/*
 * reply_text: the text protocol's replies beyond the plain outcome lines
 * of reply_base.c (reply_members.h): VALUE blocks, counters, refusals,
 * the version, stat lines.
 */
#include "reply_members.h"

#include <stdio.h>
#include <string.h>

#include "util.h"

bool
reply_text_result(struct buf *out, const struct proto_request *req,
                  enum reply_code code)
{
    /* memcached's noreply silences errors too (out_errstring). */
    return req->noreply || reply_text_code(out, code);
}

/* "VALUE " key " " flags " " bytes [" " cas] "\r\n" data "\r\n" */
bool
reply_text_hit(struct buf *out, const struct proto_request *req,
               const struct reply_item *it)
{
    bool with_cas = req->cmd == PROTO_CMD_GETS || req->cmd == PROTO_CMD_GATS;
    size_t max = 6 + it->nkey + 1 + 10 + 1 + UTIL_U64_DIGITS + 1 +
                 UTIL_U64_DIGITS + 2 + it->vlen + 2;
    if (!buf_reserve(out, max, REPLY_BUF_LIMIT)) {
        return false;
    }
    char *p = buf_tail(out);
    char *start = p;
    memcpy(p, "VALUE ", 6);
    p += 6;
    memcpy(p, it->key, it->nkey);
    p += it->nkey;
    *p++ = ' ';
    p += util_u64_to_dec(it->flags, p);
    *p++ = ' ';
    p += util_u64_to_dec(it->vlen, p);
    if (with_cas) {
        *p++ = ' ';
        p += util_u64_to_dec(it->cas, p);
    }
    *p++ = '\r';
    *p++ = '\n';
    memcpy(p, it->value, it->vlen);
    p += it->vlen;
    *p++ = '\r';
    *p++ = '\n';
    buf_produce(out, (size_t)(p - start));
    return true;
}

bool
reply_text_counter(struct buf *out, const struct proto_request *req,
                   uint64_t n)
{
    if (req->noreply) {
        return true;
    }
    char tmp[UTIL_U64_DIGITS + 2];
    size_t len = util_u64_to_dec(n, tmp);
    tmp[len++] = '\r';
    tmp[len++] = '\n';
    return reply_raw(out, tmp, len);
}

bool
reply_text_denied(struct buf *out, const struct proto_request *req)
{
    char tmp[64];
    int n = snprintf(tmp, sizeof(tmp), "CLIENT_ERROR %s not allowed\r\n",
                     proto_cmd_name(proto_class(req)));
    return (req->noreply && req->kind == PROTO_KIND_TEXT) ||
           reply_raw(out, tmp, (size_t)n);
}

bool
reply_text_version(struct buf *out)
{
    return reply_raw(out, "VERSION ", 8) &&
           reply_raw(out, reply_version_string,
                     reply_version_len) &&
           reply_raw(out, "\r\n", 2);
}

bool
reply_text_stat(struct buf *out, const char *name, const void *value,
                size_t n)
{
    return reply_raw(out, "STAT ", 5) && reply_raw(out, name, strlen(name)) &&
           reply_raw(out, " ", 1) && reply_raw(out, value, n) &&
           reply_raw(out, "\r\n", 2);
}
