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
 * Binary frames are big-endian: magic (0x80 request, 0x81 response),
 * opcode, key length (2), extras length, data type, vbucket or status
 * (2), body length (4), opaque (4), cas (8), then extras, key and value.
 */
#include "bench_wire.h"

#include <stdio.h>
#include <string.h>

#define BIN_HEADER 24
#define BIN_REQUEST 0x80
#define BIN_RESPONSE 0x81
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
bench_wire_proto_parse(const char *s, enum bench_proto *out)
{
    for (size_t i = 0; i < sizeof(NAMES) / sizeof(NAMES[0]); i++) {
        if (strcmp(s, NAMES[i]) == 0) {
            *out = (enum bench_proto)i;
            return true;
        }
    }
    return false;
}

const char *
bench_wire_proto_name(enum bench_proto p)
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
bench_wire_set_head(enum bench_proto p, char *out, const char *key,
                    size_t klen, size_t vlen)
{
    switch (p) {
    case BENCH_PROTO_BINARY: {
        size_t n = _bin_header(out, BIN_SET, klen, 8, 8 + klen + vlen);
        memset(out + n, 0, 8);      /* flags, exptime */
        memcpy(out + n + 8, key, klen);
        return n + 8 + klen;
    }
    case BENCH_PROTO_META:
        return (size_t)sprintf(out, "ms %.*s %zu\r\n", (int)klen, key, vlen);
    default:
        return (size_t)sprintf(out, "set %.*s 0 0 %zu\r\n", (int)klen, key,
                               vlen);
    }
}

size_t
bench_wire_set_tail(enum bench_proto p, char *out)
{
    if (p == BENCH_PROTO_BINARY) {
        return 0;
    }
    memcpy(out, "\r\n", 2);
    return 2;
}

size_t
bench_wire_get(enum bench_proto p, char *out, const char *key, size_t klen)
{
    switch (p) {
    case BENCH_PROTO_BINARY:
        return _bin_key(out, BIN_GET, key, klen);
    case BENCH_PROTO_META:
        return _line(out, "mg ", key, klen, " v\r\n");
    default:
        return _line(out, "get ", key, klen, "\r\n");
    }
}

size_t
bench_wire_mget_begin(enum bench_proto p, char *out)
{
    if (p == BENCH_PROTO_TEXT) {
        memcpy(out, "get", 3);
        return 3;
    }
    return 0;
}

size_t
bench_wire_mget_key(enum bench_proto p, char *out, const char *key,
                    size_t klen)
{
    switch (p) {
    case BENCH_PROTO_BINARY:
        return _bin_key(out, BIN_GETKQ, key, klen);
    case BENCH_PROTO_META:
        return _line(out, "mg ", key, klen, " v q k\r\n");
    default:
        return _line(out, " ", key, klen, "");
    }
}

size_t
bench_wire_mget_end(enum bench_proto p, char *out)
{
    switch (p) {
    case BENCH_PROTO_BINARY:
        return _bin_header(out, BIN_NOOP, 0, 0, 0);
    case BENCH_PROTO_META:
        memcpy(out, "mn\r\n", 4);
        return 4;
    default:
        memcpy(out, "\r\n", 2);
        return 2;
    }
}

size_t
bench_wire_quit(enum bench_proto p, char *out)
{
    if (p == BENCH_PROTO_BINARY) {
        return _bin_header(out, BIN_QUITQ, 0, 0, 0);
    }
    memcpy(out, "quit\r\n", 6);
    return 6;
}

/* ------------------------------------------------------------ replies */

/* Says what was unexpected: the line, without its line end. */
static void
_err_line(char *err, size_t errlen, const char *line, size_t len)
{
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) {
        len--;
    }
    snprintf(err, errlen, "unexpected reply: %.*s",
             (int)(len > 100 ? 100 : len), line);
}

/*
 * Reads the decimal that starts `s` (at most `len` bytes, ending at a
 * space or the line's end). Returns false if there is none or it is over
 * VALUE_MAX.
 */
static bool
_dec(const char *s, size_t len, size_t *out)
{
    size_t v = 0;
    size_t i = 0;
    while (i < len && s[i] >= '0' && s[i] <= '9') {
        v = v * 10 + (size_t)(s[i] - '0');
        if (v > VALUE_MAX) {
            return false;
        }
        i++;
    }
    if (i == 0 || (i < len && s[i] != ' ' && s[i] != '\r')) {
        return false;
    }
    *out = v;
    return true;
}

/*
 * A value block: a header line `line` (of `llen` bytes, at buf[0]) whose
 * length field is at `lenat`, then the data and "\r\n". Sets *total to
 * the block's length. Returns MORE, OK, or LOST (no length, or the data
 * not followed by "\r\n").
 */
static enum bench_wire_status
_value_block(const char *buf, size_t avail, size_t llen, size_t lenat,
             size_t *total)
{
    size_t bytes;
    if (!_dec(buf + lenat, llen - lenat, &bytes)) {
        return BENCH_WIRE_LOST;
    }
    if (avail < llen + bytes + 2) {
        return BENCH_WIRE_MORE;
    }
    if (memcmp(buf + llen + bytes, "\r\n", 2) != 0) {
        return BENCH_WIRE_LOST;
    }
    *total = llen + bytes + 2;
    return BENCH_WIRE_OK;
}

/*
 * Text and meta replies, line by line. `end` is the line that completes
 * the reply (STORED or HD for a set; END, EN or MN for a get), `value` the
 * prefix of a value's header line.
 */
static enum bench_wire_status
_lines(enum bench_proto p, enum bench_kind kind, const char *buf, size_t len,
       size_t *used, uint32_t *hits, char *err, size_t errlen)
{
    const char *value = p == BENCH_PROTO_META ? "VA " : "VALUE ";
    size_t vlen = strlen(value);
    const char *end;
    if (kind == BENCH_KIND_SET) {
        end = p == BENCH_PROTO_META ? "HD\r\n" : "STORED\r\n";
    } else if (p == BENCH_PROTO_TEXT) {
        end = "END\r\n";
    } else {
        end = kind == BENCH_KIND_MGET ? "MN\r\n" : "EN\r\n";
    }
    size_t elen = strlen(end);
    size_t off = 0;
    uint32_t found = 0;
    bool bad = false;

    for (;;) {
        const char *s = buf + off;
        size_t avail = len - off;
        const char *nl = memchr(s, '\n', avail);
        if (nl == NULL) {
            return BENCH_WIRE_MORE;
        }
        size_t llen = (size_t)(nl - s) + 1;
        if (llen == elen && memcmp(s, end, elen) == 0) {
            off += llen;
            break;
        }
        if (kind != BENCH_KIND_SET && llen > vlen &&
            memcmp(s, value, vlen) == 0) {
            /* text: VALUE <key> <flags> <bytes>; meta: VA <bytes> <flags>* */
            size_t lenat = vlen;
            if (p == BENCH_PROTO_TEXT) {
                const char *sp = memrchr(s, ' ', llen);
                lenat = (size_t)(sp - s) + 1;
            }
            size_t total = 0;
            enum bench_wire_status st = _value_block(s, avail, llen, lenat,
                                                     &total);
            if (st == BENCH_WIRE_MORE) {
                return st;
            }
            if (st == BENCH_WIRE_LOST) {
                _err_line(err, errlen, s, llen);
                return st;
            }
            off += total;
            found++;
            if (p == BENCH_PROTO_META && kind == BENCH_KIND_GET) {
                break;      /* a meta get's hit has no end line */
            }
            continue;
        }
        if (!bad) {
            _err_line(err, errlen, s, llen);
        }
        bad = true;
        off += llen;
        if (p == BENCH_PROTO_TEXT || kind != BENCH_KIND_MGET) {
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
        const char *h = buf + off;
        if (len - off < BIN_HEADER) {
            return BENCH_WIRE_MORE;
        }
        if ((unsigned char)h[0] != BIN_RESPONSE) {
            snprintf(err, errlen, "binary reply with magic 0x%02x",
                     (unsigned char)h[0]);
            return BENCH_WIRE_LOST;
        }
        size_t body = _be32(h + 8);
        if (body > VALUE_MAX) {
            snprintf(err, errlen, "binary reply of %zu bytes", body);
            return BENCH_WIRE_LOST;
        }
        if (len - off < BIN_HEADER + body) {
            return BENCH_WIRE_MORE;
        }
        int opcode = (unsigned char)h[1];
        uint32_t status = _be16(h + 6);
        off += BIN_HEADER + body;
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
                     (unsigned)opcode, (unsigned)status);
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
bench_wire_reply(enum bench_proto p, enum bench_kind kind, const char *buf,
                 size_t len, size_t *used, uint32_t *hits, char *err,
                 size_t errlen)
{
    if (p == BENCH_PROTO_BINARY) {
        return _frames(kind, buf, len, used, hits, err, errlen);
    }
    return _lines(p, kind, buf, len, used, hits, err, errlen);
}
