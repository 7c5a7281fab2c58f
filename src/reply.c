/*
 * reply: the text protocol's wire strings, and the dispatch to the binary
 * and meta writers (see reply.h).
 */
#include "reply.h"
#include "reply_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "util.h"

const char reply_version_string[] =
    REPLY_MEMCACHED_COMPAT "-kura-" PACKAGE_VERSION;

struct line {
    const char *s;
    size_t len;
};

#define LINE(str) {str "\r\n", sizeof(str "\r\n") - 1}

static const struct line code_lines[REPLY_CODE_COUNT] = {
    [REPLY_STORED] = LINE("STORED"),
    [REPLY_NOT_STORED] = LINE("NOT_STORED"),
    [REPLY_EXISTS] = LINE("EXISTS"),
    [REPLY_NOT_FOUND] = LINE("NOT_FOUND"),
    [REPLY_DELETED] = LINE("DELETED"),
    [REPLY_TOUCHED] = LINE("TOUCHED"),
    [REPLY_OK] = LINE("OK"),
    [REPLY_END] = LINE("END"),
    [REPLY_RESET] = LINE("RESET"),
    [REPLY_ERROR] = LINE("ERROR"),
    [REPLY_NON_NUMERIC] =
        LINE("CLIENT_ERROR cannot increment or decrement non-numeric value"),
    [REPLY_SERVER_ERROR_IO] = LINE("SERVER_ERROR write failed"),
    [REPLY_SERVER_ERROR_READ] = LINE("SERVER_ERROR read failed"),
    [REPLY_SERVER_ERROR_READONLY] =
        LINE("SERVER_ERROR writes disabled after a storage failure"),
    [REPLY_SERVER_ERROR_OOM] = LINE("SERVER_ERROR out of memory"),
    [REPLY_SERVER_ERROR_NOSPACE] = LINE("SERVER_ERROR out of disk space"),
    [REPLY_TOO_MANY_CONNECTIONS] = LINE("ERROR Too many open connections"),
    [REPLY_REPL_DENIED] = LINE("REPL ERROR not allowed"),
    [REPLY_UNAUTHENTICATED] = LINE("CLIENT_ERROR unauthenticated"),
    [REPLY_AUTH_FAILED] = LINE("CLIENT_ERROR authentication failure"),
    [REPLY_AUTH_MALFORMED] =
        LINE("CLIENT_ERROR bad authentication token format"),
    [REPLY_TOO_LARGE] = LINE("SERVER_ERROR object too large for cache"),
    [REPLY_NO_SHUTDOWN] = LINE("ERROR: shutdown not enabled"),
    [REPLY_MEMLIMIT_TOO_SMALL] =
        LINE("MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m"),
    [REPLY_MEMLIMIT_NOT_BYTES] =
        LINE("MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes"),
};

static const struct line error_lines[PROTO_ERR_COUNT] = {
    [PROTO_ERR_NONE] = {"", 0},
    [PROTO_ERR_UNKNOWN_COMMAND] = LINE("ERROR"),
    [PROTO_ERR_FORMAT] = LINE("CLIENT_ERROR bad command line format"),
    [PROTO_ERR_DELETE_USAGE] =
        LINE("CLIENT_ERROR bad command line format.  "
             "Usage: delete <key> [noreply]"),
    [PROTO_ERR_EXPTIME] = LINE("CLIENT_ERROR invalid exptime argument"),
    [PROTO_ERR_DELTA] = LINE("CLIENT_ERROR invalid numeric delta argument"),
    [PROTO_ERR_TOO_LARGE] = LINE("SERVER_ERROR object too large for cache"),
    [PROTO_ERR_BAD_CHUNK] = LINE("CLIENT_ERROR bad data chunk"),
    [PROTO_ERR_NON_NUMERIC] =
        LINE("CLIENT_ERROR cannot increment or decrement non-numeric value"),
    [PROTO_ERR_LINE_TOO_LONG] = LINE("CLIENT_ERROR line too long"),
    [PROTO_ERR_HTTP] = {"", 0},
    [PROTO_ERR_META_FLAG] = LINE("CLIENT_ERROR invalid flag"),
    [PROTO_ERR_META_DUP] = LINE("CLIENT_ERROR duplicate flag"),
    [PROTO_ERR_META_FLAG_OR_DUP] =
        LINE("CLIENT_ERROR invalid or duplicate flag"),
    [PROTO_ERR_META_TOKEN] =
        LINE("CLIENT_ERROR bad token in command line format"),
    [PROTO_ERR_META_OPAQUE] = LINE("CLIENT_ERROR opaque token too long"),
    [PROTO_ERR_META_TOO_MANY] =
        LINE("CLIENT_ERROR options flags are too long"),
    [PROTO_ERR_META_TOO_LONG] = LINE("CLIENT_ERROR options flags too long"),
    [PROTO_ERR_META_KEY] = LINE("CLIENT_ERROR error decoding key"),
    [PROTO_ERR_META_MODE_MS] =
        LINE("CLIENT_ERROR invalid mode for ms M token"),
    [PROTO_ERR_META_MODE_MA] =
        LINE("CLIENT_ERROR invalid mode for ma M token"),
    [PROTO_ERR_META_MODE_LEN] =
        LINE("CLIENT_ERROR incorrect length for M token"),
    [PROTO_ERR_META_INITIAL] =
        LINE("CLIENT_ERROR invalid numeric initial value"),
    [PROTO_ERR_META_DELTA] = LINE("CLIENT_ERROR invalid numeric delta value"),
    [PROTO_ERR_BIN_EINVAL] = {"", 0},
    [PROTO_ERR_BIN_UNKNOWN] = {"", 0},
    [PROTO_ERR_BIN_FRAMING] = {"", 0},
    [PROTO_ERR_HTTP_STATUS] = {"", 0},
};

bool
reply_raw(struct buf *out, const void *p, size_t n)
{
    return buf_append(out, p, n, REPLY_BUF_LIMIT);
}

bool
reply_text_code(struct buf *out, enum reply_code code)
{
    return reply_raw(out, code_lines[code].s, code_lines[code].len);
}

bool
reply_text_error(struct buf *out, enum proto_error err)
{
    return reply_raw(out, error_lines[err].s, error_lines[err].len);
}

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
        /* memcached's noreply silences errors too (out_errstring). */
        return req->noreply || reply_text_code(out, code);
    }
}

/* "VALUE " key " " flags " " bytes [" " cas] "\r\n" data "\r\n" */
static bool
_text_value(struct buf *out, const struct reply_item *it, bool with_cas)
{
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
reply_hit(struct buf *out, const struct proto_request *req,
          const struct reply_item *it)
{
    switch (req->kind) {
    case PROTO_KIND_BINARY:
        return reply_bin_hit(out, req, it);
    case PROTO_KIND_META:
        return reply_meta_hit(out, req, it);
    default:
        return _text_value(out, it, req->cmd == PROTO_CMD_GETS ||
                                        req->cmd == PROTO_CMD_GATS);
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
        if (req->noreply) {
            return true;
        }
        char tmp[UTIL_U64_DIGITS + 2];
        size_t len = util_u64_to_dec(n, tmp);
        tmp[len++] = '\r';
        tmp[len++] = '\n';
        return reply_raw(out, tmp, len);
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
    char tmp[64];
    int n = snprintf(tmp, sizeof(tmp), "CLIENT_ERROR %s not allowed\r\n",
                     proto_cmd_name(proto_class(req)));
    return (req->noreply && req->kind == PROTO_KIND_TEXT) ||
           reply_raw(out, tmp, (size_t)n);
}

bool
reply_version(struct buf *out, const struct proto_request *req)
{
    if (req->kind == PROTO_KIND_BINARY) {
        return reply_bin_simple(out, req, reply_version_string,
                                sizeof(reply_version_string) - 1);
    }
    return reply_raw(out, "VERSION ", 8) &&
           reply_raw(out, reply_version_string,
                     sizeof(reply_version_string) - 1) &&
           reply_raw(out, "\r\n", 2);
}

bool
reply_noop(struct buf *out, const struct proto_request *req)
{
    if (req->kind == PROTO_KIND_BINARY) {
        return reply_bin_simple(out, req, NULL, 0);
    }
    return reply_raw(out, "MN\r\n", 4);
}

bool
reply_stat(struct buf *out, const struct proto_request *req, const char *name,
           const char *fmt, ...)
{
    char value[512];
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(value, sizeof(value), fmt, ap);
    va_end(ap);
    if (m < 0 || (size_t)m >= sizeof(value)) {
        return false;
    }
    if (req->kind == PROTO_KIND_BINARY) {
        return reply_bin_stat(out, req, name, value, (size_t)m);
    }
    size_t n = strlen(name);
    return reply_raw(out, "STAT ", 5) && reply_raw(out, name, n) &&
           reply_raw(out, " ", 1) && reply_raw(out, value, (size_t)m) &&
           reply_raw(out, "\r\n", 2);
}

bool
reply_stat_bytes(struct buf *out, const struct proto_request *req,
                 const char *name, const void *value, size_t n)
{
    if (req->kind == PROTO_KIND_BINARY) {
        return reply_bin_stat(out, req, name, (const char *)value, n);
    }
    return reply_raw(out, "STAT ", 5) && reply_raw(out, name, strlen(name)) &&
           reply_raw(out, " ", 1) && reply_raw(out, value, n) &&
           reply_raw(out, "\r\n", 2);
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
