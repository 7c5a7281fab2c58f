/*
 * bench_wire: encodes `kura bench`'s requests and checks their replies in
 * memcached's text, binary and meta protocols (see bench_wire.h).
 *
 * A reply counts as expected only if it is exactly what a server that
 * stored every set would send: STORED / HD / a binary success for a set;
 * VALUE...END / VA or EN / a binary success or "not found" for a get; for
 * a multi-get, values and then the end marker. A multi-get's reply is
 * always read to its end marker, even past a line it did not expect, so
 * that one refused key does not shift every later reply. In text an error
 * line ends a get's reply, as it does in memcached.
 *
 * Replies are read item by item by client_reply.h, the decoder every kura
 * command shares; this file only says which items a request expects.
 *
 * Binary requests are big-endian: magic (0x80), opcode, key length (2),
 * extras length, data type, vbucket (2), body length (4), opaque (4), cas
 * (8), then extras, key and value.
 */
#include "bench_wire.h"

#include <stdio.h>
#include <string.h>

#define BIN_HEADER CLIENT_REPLY_BIN_HEADER
#define BIN_REQUEST 0x80
#define BIN_GET 0x00
#define BIN_SET 0x01
#define BIN_QUITQ 0x17
#define BIN_NOOP 0x0a
#define BIN_GETKQ 0x0d
#define BIN_SUCCESS 0x0000
#define BIN_NOT_FOUND 0x0001
#define VALUE_MAX ((size_t)1 << 30)     /* no server sends more than this */

static const char *const NAMES[] = {"text", "binary", "meta"};

bool
bench_wire_proto_parse(const char *s, enum client_proto *out)
{
    for (size_t i = 0; i < sizeof(NAMES) / sizeof(NAMES[0]); i++) {
        if (strcmp(s, NAMES[i]) == 0) {
            *out = (enum client_proto)i;
            return true;
        }
    }
    return false;
}

const char *
bench_wire_proto_name(enum client_proto p)
{
    return NAMES[p];
}

static void
_put_be16(char *p, uint32_t v)
{
    p[0] = (char)(v >> 8);
    p[1] = (char)v;
}

static void
_put_be32(char *p, uint32_t v)
{
    p[0] = (char)(v >> 24);
    p[1] = (char)(v >> 16);
    p[2] = (char)(v >> 8);
    p[3] = (char)v;
}

/* Writes a request header with zero data type, vbucket, opaque and cas. */
static size_t
_bin_header(char *out, int opcode, size_t klen, size_t extlen, size_t body)
{
    memset(out, 0, BIN_HEADER);
    out[0] = (char)BIN_REQUEST;
    out[1] = (char)opcode;
    _put_be16(out + 2, (uint32_t)klen);
    out[4] = (char)extlen;
    _put_be32(out + 8, (uint32_t)body);
    return BIN_HEADER;
}

/* Writes a one-key binary request: header and key. */
static size_t
_bin_key(char *out, int opcode, const char *key, size_t klen)
{
    size_t n = _bin_header(out, opcode, klen, 0, klen);
    memcpy(out + n, key, klen);
    return n + klen;
}

/* Writes `a`, `key`, then `b`. */
static size_t
_line(char *out, const char *a, const char *key, size_t klen, const char *b)
{
    size_t la = strlen(a);
    size_t lb = strlen(b);
    memcpy(out, a, la);
    memcpy(out + la, key, klen);
    memcpy(out + la + klen, b, lb);
    return la + klen + lb;
}

size_t
bench_wire_set_head(enum client_proto p, char *out, const char *key,
                    size_t klen, size_t vlen)
{
    switch (p) {
    case CLIENT_PROTO_BINARY: {
        size_t n = _bin_header(out, BIN_SET, klen, 8, 8 + klen + vlen);
        memset(out + n, 0, 8);      /* flags, exptime */
        memcpy(out + n + 8, key, klen);
        return n + 8 + klen;
    }
    case CLIENT_PROTO_META:
        return (size_t)sprintf(out, "ms %.*s %zu\r\n", (int)klen, key, vlen);
    default:
        return (size_t)sprintf(out, "set %.*s 0 0 %zu\r\n", (int)klen, key,
                               vlen);
    }
}

size_t
bench_wire_set_tail(enum client_proto p, char *out)
{
    if (p == CLIENT_PROTO_BINARY) {
        return 0;
    }
    memcpy(out, "\r\n", 2);
    return 2;
}

size_t
bench_wire_get(enum client_proto p, char *out, const char *key, size_t klen)
{
    switch (p) {
    case CLIENT_PROTO_BINARY:
        return _bin_key(out, BIN_GET, key, klen);
    case CLIENT_PROTO_META:
        return _line(out, "mg ", key, klen, " v\r\n");
    default:
        return _line(out, "get ", key, klen, "\r\n");
    }
}

size_t
bench_wire_mget_begin(enum client_proto p, char *out)
{
    if (p == CLIENT_PROTO_TEXT) {
        memcpy(out, "get", 3);
        return 3;
    }
    return 0;
}

size_t
bench_wire_mget_key(enum client_proto p, char *out, const char *key,
                    size_t klen)
{
    switch (p) {
    case CLIENT_PROTO_BINARY:
        return _bin_key(out, BIN_GETKQ, key, klen);
    case CLIENT_PROTO_META:
        return _line(out, "mg ", key, klen, " v q k\r\n");
    default:
        return _line(out, " ", key, klen, "");
    }
}

size_t
bench_wire_mget_end(enum client_proto p, char *out)
{
    switch (p) {
    case CLIENT_PROTO_BINARY:
        return _bin_header(out, BIN_NOOP, 0, 0, 0);
    case CLIENT_PROTO_META:
        memcpy(out, "mn\r\n", 4);
        return 4;
    default:
        memcpy(out, "\r\n", 2);
        return 2;
    }
}

size_t
bench_wire_quit(enum client_proto p, char *out)
{
    if (p == CLIENT_PROTO_BINARY) {
        return _bin_header(out, BIN_QUITQ, 0, 0, 0);
    }
    memcpy(out, "quit\r\n", 6);
    return 6;
}

/* ------------------------------------------------------------ replies */

/* Says what was unexpected: the line, without its line end. */
static void
_err_line(char *err, size_t errlen, const struct client_reply *r)
{
    snprintf(err, errlen, "unexpected reply: %.*s",
             (int)(r->line_len > 100 ? 100 : r->line_len), r->line);
}

/*
 * Text and meta replies, item by item (client_reply.h). `end` is the line
 * that completes the reply (STORED or HD for a set; END, EN or MN for a
 * get).
 */
static enum bench_wire_status
_lines(enum client_proto p, enum bench_kind kind, const char *buf,
       size_t len, size_t *used, uint32_t *hits, char *err, size_t errlen)
{
    const char *end;
    if (kind == BENCH_KIND_SET) {
        end = p == CLIENT_PROTO_META ? "HD" : "STORED";
    } else if (p == CLIENT_PROTO_TEXT) {
        end = "END";
    } else {
        end = kind == BENCH_KIND_MGET ? "MN" : "EN";
    }
    size_t off = 0;
    uint32_t found = 0;
    bool bad = false;

    for (;;) {
        struct client_reply r;
        enum client_reply_kind k = client_reply_next(p, buf + off, len - off,
                                                     VALUE_MAX, &r);
        if (k == CLIENT_REPLY_MORE) {
            return BENCH_WIRE_MORE;
        }
        if (k == CLIENT_REPLY_BAD) {
            const char *s = buf + off;
            const char *nl = memchr(s, '\n', len - off);
            struct client_reply head = {.line = s,
                                        .line_len = (size_t)(nl - s)};
            if (head.line_len > 0 && s[head.line_len - 1] == '\r') {
                head.line_len--;
            }
            _err_line(err, errlen, &head);
            return BENCH_WIRE_LOST;
        }
        if (k == CLIENT_REPLY_LINE && client_reply_is(&r, end)) {
            off += r.len;
            break;
        }
        if (k == CLIENT_REPLY_VALUE && kind != BENCH_KIND_SET) {
            off += r.len;
            found++;
            if (p == CLIENT_PROTO_META && kind == BENCH_KIND_GET) {
                break;      /* a meta get's hit has no end line */
            }
            continue;
        }
        if (!bad) {
            _err_line(err, errlen, &r);
        }
        bad = true;
        off += r.len;
        if (p == CLIENT_PROTO_TEXT || kind != BENCH_KIND_MGET) {
            break;          /* an error line ends this reply */
        }
    }
    *used = off;
    *hits = found;
    return bad ? BENCH_WIRE_BAD : BENCH_WIRE_OK;
}

/* Binary replies, frame by frame. */
static enum bench_wire_status
_frames(enum bench_kind kind, const char *buf, size_t len, size_t *used,
        uint32_t *hits, char *err, size_t errlen)
{
    size_t off = 0;
    uint32_t found = 0;
    bool bad = false;

    for (;;) {
        struct client_reply r;
        enum client_reply_kind k = client_reply_next(
            CLIENT_PROTO_BINARY, buf + off, len - off, VALUE_MAX, &r);
        if (k == CLIENT_REPLY_MORE) {
            return BENCH_WIRE_MORE;
        }
        if (k == CLIENT_REPLY_BAD) {
            const unsigned char *h = (const unsigned char *)buf + off;
            if (h[0] != CLIENT_REPLY_BIN_MAGIC) {
                snprintf(err, errlen, "binary reply with magic 0x%02x", h[0]);
            } else {
                snprintf(err, errlen, "binary reply of %zu bytes",
                         (size_t)h[8] << 24 | (size_t)h[9] << 16 |
                             (size_t)h[10] << 8 | h[11]);
            }
            return BENCH_WIRE_LOST;
        }
        unsigned opcode = r.opcode;
        unsigned status = r.status;
        off += r.len;
        bool expected;
        bool done = true;
        if (kind == BENCH_KIND_SET) {
            expected = opcode == BIN_SET && status == BIN_SUCCESS;
        } else if (kind == BENCH_KIND_GET) {
            expected = opcode == BIN_GET &&
                       (status == BIN_SUCCESS || status == BIN_NOT_FOUND);
            found += expected && status == BIN_SUCCESS;
        } else if (opcode == BIN_NOOP) {
            expected = status == BIN_SUCCESS;
        } else {
            /* A quiet get answers only a hit, or an error. */
            expected = opcode == BIN_GETKQ && status == BIN_SUCCESS;
            found += expected;
            done = false;
        }
        if (!expected && !bad) {
            snprintf(err, errlen, "binary reply opcode 0x%02x status 0x%04x",
                     opcode, status);
            bad = true;
        }
        if (done) {
            break;
        }
    }
    *used = off;
    *hits = found;
    return bad ? BENCH_WIRE_BAD : BENCH_WIRE_OK;
}

enum bench_wire_status
bench_wire_reply(enum client_proto p, enum bench_kind kind, const char *buf,
                 size_t len, size_t *used, uint32_t *hits, char *err,
                 size_t errlen)
{
    if (p == CLIENT_PROTO_BINARY) {
        return _frames(kind, buf, len, used, hits, err, errlen);
    }
    return _lines(p, kind, buf, len, used, hits, err, errlen);
}
