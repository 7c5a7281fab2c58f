/*
 * reply: wire strings of the memcached text protocol (see reply.h).
 */
#include "reply.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "util.h"

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
    [REPLY_TOO_MANY_CONNECTIONS] =
        LINE("SERVER_ERROR too many open connections"),
    [REPLY_REPL_DENIED] = LINE("REPL ERROR not allowed"),
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
};

bool
reply_raw(struct buf *out, const void *p, size_t n)
{
    return buf_append(out, p, n, REPLY_BUF_LIMIT);
}

bool
reply_code(struct buf *out, enum reply_code code)
{
    return reply_raw(out, code_lines[code].s, code_lines[code].len);
}

bool
reply_proto_error(struct buf *out, enum proto_error err)
{
    return reply_raw(out, error_lines[err].s, error_lines[err].len);
}

bool
reply_value(struct buf *out, const char *key, size_t nkey, uint32_t flags,
            const void *data, size_t len, bool with_cas, uint64_t cas)
{
    /* "VALUE " key " " flags " " bytes [" " cas] "\r\n" data "\r\n" */
    size_t max = 6 + nkey + 1 + 10 + 1 + UTIL_U64_DIGITS + 1 +
                 UTIL_U64_DIGITS + 2 + len + 2;
    if (!buf_reserve(out, max, REPLY_BUF_LIMIT)) {
        return false;
    }
    char *p = buf_tail(out);
    char *start = p;
    memcpy(p, "VALUE ", 6);
    p += 6;
    memcpy(p, key, nkey);
    p += nkey;
    *p++ = ' ';
    p += util_u64_to_dec(flags, p);
    *p++ = ' ';
    p += util_u64_to_dec(len, p);
    if (with_cas) {
        *p++ = ' ';
        p += util_u64_to_dec(cas, p);
    }
    *p++ = '\r';
    *p++ = '\n';
    memcpy(p, data, len);
    p += len;
    *p++ = '\r';
    *p++ = '\n';
    buf_produce(out, (size_t)(p - start));
    return true;
}

bool
reply_denied(struct buf *out, enum proto_cmd cmd)
{
    char tmp[64];
    int n = snprintf(tmp, sizeof(tmp), "CLIENT_ERROR %s not allowed\r\n",
                     proto_cmd_name(cmd));
    return reply_raw(out, tmp, (size_t)n);
}

bool
reply_number(struct buf *out, uint64_t n)
{
    char tmp[UTIL_U64_DIGITS + 2];
    size_t len = util_u64_to_dec(n, tmp);
    tmp[len++] = '\r';
    tmp[len++] = '\n';
    return reply_raw(out, tmp, len);
}

bool
reply_version(struct buf *out)
{
    static const char line[] =
        "VERSION " REPLY_MEMCACHED_COMPAT "-kura-" PACKAGE_VERSION "\r\n";
    return reply_raw(out, line, sizeof(line) - 1);
}

bool
reply_stat(struct buf *out, const char *name, const char *fmt, ...)
{
    char tmp[512];
    int n = snprintf(tmp, sizeof(tmp), "STAT %s ", name);
    if (n < 0 || (size_t)n >= sizeof(tmp)) {
        return false;
    }
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(tmp + n, sizeof(tmp) - (size_t)n, fmt, ap);
    va_end(ap);
    if (m < 0 || (size_t)(n + m) + 2 >= sizeof(tmp)) {
        return false;
    }
    n += m;
    tmp[n++] = '\r';
    tmp[n++] = '\n';
    return reply_raw(out, tmp, (size_t)n);
}
