/*
 * client_reply: memcached's replies, item by item, in text, meta and
 * binary (see client_reply.h).
 *
 * Binary frames are big-endian: magic (0x81 for a response), opcode, key
 * length (2), extras length, data type, status (2), body length (4),
 * opaque (4), cas (8), then extras, key and value.
 */
#include "client_reply.h"

#include <string.h>

#include "util.h"

static uint32_t
_be16(const char *p)
{
    const unsigned char *u = (const unsigned char *)p;
    return (uint32_t)u[0] << 8 | u[1];
}

static uint32_t
_be32(const char *p)
{
    const unsigned char *u = (const unsigned char *)p;
    return (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 |
           u[3];
}

/*
 * Splits the fields after a value header's first word (line[from..end))
 * at single spaces into field[]/flen[] (at most `max`). Returns how many,
 * or -1 if more than `max` are there.
 */
static int
_fields(const char *p, const char *end, const char **field, size_t *flen,
        int max)
{
    int nf = 0;
    while (p < end) {
        if (nf == max) {
            return -1;
        }
        const char *sp = memchr(p, ' ', (size_t)(end - p));
        const char *stop = sp != NULL ? sp : end;
        field[nf] = p;
        flen[nf++] = (size_t)(stop - p);
        p = sp != NULL ? sp + 1 : end;
    }
    return nf;
}

/*
 * The data of a value block whose header line `r` has been read and whose
 * length is `bytes`: MORE, BAD (not followed by "\r\n"), or VALUE.
 */
static enum client_reply_kind
_value_data(const char *buf, size_t len, uint64_t bytes,
            struct client_reply *r, struct client_reply *out)
{
    size_t llen = r->len;
    if (len - llen < bytes + 2) {
        return CLIENT_REPLY_MORE;
    }
    if (memcmp(buf + llen + bytes, "\r\n", 2) != 0) {
        return CLIENT_REPLY_BAD;
    }
    r->len = llen + (size_t)bytes + 2;
    r->data = buf + llen;
    r->dlen = (size_t)bytes;
    *out = *r;
    return CLIENT_REPLY_VALUE;
}

/* Text: VALUE <key> <flags> <bytes> [<cas>], after "VALUE ". */
static enum client_reply_kind
_text_value(const char *buf, size_t len, size_t value_max,
            struct client_reply *r, struct client_reply *out)
{
    const char *field[4];
    size_t flen[4];
    int nf = _fields(buf + 6, buf + r->line_len, field, flen, 4);
    uint64_t bytes;
    uint64_t ignored;
    if (nf < 3 || flen[0] == 0 ||
        !util_parse_uint(field[1], flen[1], UINT32_MAX, &ignored) ||
        !util_parse_uint(field[2], flen[2], value_max, &bytes) ||
        (nf == 4 && !util_parse_uint(field[3], flen[3], UINT64_MAX,
                                     &ignored))) {
        return CLIENT_REPLY_BAD;
    }
    r->key = field[0];
    r->klen = flen[0];
    return _value_data(buf, len, bytes, r, out);
}

/* Meta: VA <bytes> [<flags>...], after "VA ". */
static enum client_reply_kind
_meta_value(const char *buf, size_t len, size_t value_max,
            struct client_reply *r, struct client_reply *out)
{
    const char *p = buf + 3;
    const char *end = buf + r->line_len;
    const char *sp = memchr(p, ' ', (size_t)(end - p));
    uint64_t bytes;
    if (!util_parse_uint(p, (size_t)((sp != NULL ? sp : end) - p), value_max,
                         &bytes)) {
        return CLIENT_REPLY_BAD;
    }
    return _value_data(buf, len, bytes, r, out);
}

static enum client_reply_kind
_frame(const char *buf, size_t len, size_t value_max,
       struct client_reply *out)
{
    if (len < CLIENT_REPLY_BIN_HEADER) {
        return CLIENT_REPLY_MORE;
    }
    if ((unsigned char)buf[0] != CLIENT_REPLY_BIN_MAGIC) {
        return CLIENT_REPLY_BAD;
    }
    size_t klen = _be16(buf + 2);
    size_t extlen = (unsigned char)buf[4];
    size_t body = _be32(buf + 8);
    if (body > value_max || klen + extlen > body) {
        return CLIENT_REPLY_BAD;
    }
    if (len - CLIENT_REPLY_BIN_HEADER < body) {
        return CLIENT_REPLY_MORE;
    }
    const char *k = buf + CLIENT_REPLY_BIN_HEADER + extlen;
    *out = (struct client_reply){
        .len = CLIENT_REPLY_BIN_HEADER + body,
        .key = k,
        .klen = klen,
        .data = k + klen,
        .dlen = body - extlen - klen,
        .opcode = (unsigned char)buf[1],
        .status = _be16(buf + 6),
    };
    return CLIENT_REPLY_FRAME;
}

enum client_reply_kind
client_reply_next(enum client_proto p, const char *buf, size_t len,
                  size_t value_max, struct client_reply *out)
{
    if (len == 0) {
        return CLIENT_REPLY_MORE;
    }
    if (p == CLIENT_PROTO_BINARY) {
        return _frame(buf, len, value_max, out);
    }
    const char *nl = memchr(buf, '\n', len);
    if (nl == NULL) {
        return CLIENT_REPLY_MORE;
    }
    size_t llen = (size_t)(nl - buf) + 1;
    size_t bare = llen - 1;
    if (bare > 0 && buf[bare - 1] == '\r') {
        bare--;
    }
    struct client_reply r = {.len = llen, .line = buf, .line_len = bare};
    if (p == CLIENT_PROTO_TEXT && bare >= 6 &&
        memcmp(buf, "VALUE ", 6) == 0) {
        return _text_value(buf, len, value_max, &r, out);
    }
    if (p == CLIENT_PROTO_META && bare >= 3 && memcmp(buf, "VA ", 3) == 0) {
        return _meta_value(buf, len, value_max, &r, out);
    }
    *out = r;
    return CLIENT_REPLY_LINE;
}

bool
client_reply_is(const struct client_reply *r, const char *text)
{
    size_t n = strlen(text);
    return r->line != NULL && r->line_len == n &&
           memcmp(r->line, text, n) == 0;
}

bool
client_reply_starts(const struct client_reply *r, const char *prefix)
{
    size_t n = strlen(prefix);
    return r->line != NULL && r->line_len >= n &&
           memcmp(r->line, prefix, n) == 0;
}
