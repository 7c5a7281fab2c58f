/*
 * reply_base: what every reply writer builds on (reply.h, reply_base.h):
 * appending bytes, the text protocol's outcome and error lines, and the
 * version string. It calls no writer: the members (reply_text.c,
 * reply_bin.c, reply_meta.c, reply_http.c) and the front (reply.c) call
 * it.
 */
#include "reply_base.h"

#include "config.h"

const char reply_version_string[] =
    REPLY_MEMCACHED_COMPAT "-kura-" PACKAGE_VERSION;
const size_t reply_version_len = sizeof(reply_version_string) - 1;

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
    [REPLY_SLABS_SAME] = LINE("SAME src and dst class are identical"),
    [REPLY_SLABS_BADCLASS] = LINE("BADCLASS invalid src or dst class id"),
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
