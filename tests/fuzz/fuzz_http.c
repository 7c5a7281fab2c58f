/*
 * fuzz_http: fuzzes the HTTP/1.x request parser (proto_http.h).
 *
 * Each input is parsed twice the way a connection would: delivered in one
 * piece, and in chunks whose sizes the input chooses. Every result is
 * checked against the contract of proto_http.h, and both deliveries must
 * give the same requests and the same refusal. What is checked: consumed
 * bytes never exceed what was given; a request's key and value lie in the
 * bytes it consumed; the key obeys memcached's key rules and the value
 * the item limit; a refusal carries one of the documented statuses; the
 * parser never asks to hold more than a head and a body; 100-continue is
 * due only while a body is missing. Bytes not yet delivered are poisoned
 * for AddressSanitizer, so reading ahead is caught.
 *
 * Input: byte 0 chooses the limits (bit 0: a 64-byte item limit); byte 1
 * % 8 is how many chunk sizes follow (each byte + 1, used in turn; with
 * none, chunks of 1, 3, 7 and 16 bytes); the rest is the stream.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "proto.h"
#include "proto_http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_EVENTS 256

/* A parser result, as far as both deliveries must agree on it. */
struct event {
    int status;           /* PROTO_OK, or the refusal's HTTP status */
    enum proto_cmd cmd;
    uint8_t method;
    bool keep_alive;
    size_t nkey;
    size_t vlen;
    uint32_t key_sum;     /* checksums of key and value bytes */
    uint32_t value_sum;
    size_t consumed;
};

struct trace {
    struct event ev[MAX_EVENTS];
    size_t n;
};

static uint32_t
_sum(const char *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ (uint8_t)p[i]) * 16777619u;
    }
    return h;
}

static bool
_documented(uint16_t status)
{
    static const uint16_t ok[] = {400, 405, 413, 414, 417, 431, 501, 505};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        if (status == ok[i]) {
            return true;
        }
    }
    return false;
}

/* Parses `stream` delivered in chunks of `sizes` (NULL: one piece). */
static void
_parse_stream(const struct proto_limits *lim, const char *stream, size_t len,
              const uint8_t *sizes, size_t nsizes, struct trace *t)
{
    struct proto_parser p;
    struct proto_request req;
    char *buf = malloc(len + 1);
    FUZZ_CHECK(buf != NULL);
    FUZZ_POISON(buf, len + 1);
    proto_parser_init(&p, lim);
    size_t have = 0;
    size_t off = 0;
    size_t next = 0;
    bool closed = false;
    while (!closed && have < len && t->n < MAX_EVENTS) {
        size_t step = sizes == NULL ? len : (size_t)sizes[next++ % nsizes] + 1;
        if (step > len - have) {
            step = len - have;
        }
        FUZZ_UNPOISON(buf + have, step);
        memcpy(buf + have, stream + have, step);
        have += step;
        while (!closed && off < have && t->n < MAX_EVENTS) {
            size_t consumed = 99999999;
            size_t avail = have - off;
            enum proto_status st =
                proto_http_parse(&p, buf + off, avail, &consumed, &req);
            if (st == PROTO_EUNFIN) {
                FUZZ_CHECK(consumed == 0);
                FUZZ_CHECK(p.need == 0 || p.need > avail);
                FUZZ_CHECK(p.need <= PROTO_HTTP_HEAD_MAX + lim->item_max);
                /* What an unfinished request holds is bounded: a head, a
                 * chunked body's wire bytes, its trailers, one line. */
                FUZZ_CHECK(p.need > 0 ||
                           avail <= 2 * PROTO_HTTP_HEAD_MAX +
                                        PROTO_HTTP_CHUNKED_WIRE_MAX(
                                            lim->item_max) +
                                        2048);
                if (p.http_continue) {
                    p.http_continue = false;
                    p.http_continue_sent = true;
                }
                break;
            }
            FUZZ_CHECK(!p.http_continue);
            struct event *e = &t->ev[t->n++];
            memset(e, 0, sizeof(*e));
            if (st == PROTO_ECLOSE) {
                FUZZ_CHECK(p.error == PROTO_ERR_HTTP_STATUS);
                FUZZ_CHECK(_documented(p.http_status));
                e->status = p.http_status;
                closed = true;
                break;
            }
            FUZZ_CHECK(st == PROTO_OK);
            FUZZ_CHECK(consumed > 0 && consumed <= avail);
            FUZZ_CHECK(req.kind == PROTO_KIND_HTTP);
            const char *base = buf + off;
            if (req.cmd == PROTO_CMD_HTTP_ADMIN) {
                FUZZ_CHECK(req.nkey == 0);
                FUZZ_CHECK(fuzz_inside(req.http.path, req.http.npath, base,
                                       consumed));
                FUZZ_CHECK(req.http.npath >= 3 &&
                           memcmp(req.http.path, "/-/", 3) == 0);
            } else {
                FUZZ_CHECK(proto_key_valid(req.key, req.nkey));
                FUZZ_CHECK(req.key[0] == '/');
            }
            FUZZ_CHECK(req.vlen <= lim->item_max);
            FUZZ_CHECK(req.vlen == 0 ||
                       fuzz_inside(req.value, req.vlen, base, consumed));
            e->status = PROTO_OK;
            e->cmd = req.cmd;
            e->method = req.http.method;
            e->keep_alive = req.http.keep_alive;
            e->nkey = req.nkey;
            e->vlen = req.vlen;
            e->key_sum = _sum(req.key, req.nkey);
            e->value_sum = _sum(req.value, req.vlen);
            e->consumed = consumed;
            off += consumed;
        }
    }
    FUZZ_UNPOISON(buf, len + 1);
    free(buf);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct proto_limits server_limits = {
        PROTO_MAX_LINE_DEFAULT, (size_t)1 << 20, (size_t)1 << 20, true};
    static const struct proto_limits small_limits = {128, 512, 64, true};

    struct fuzz_stream in;
    if (!fuzz_stream_split(data, size, &in)) {
        return 0;
    }
    const struct proto_limits *lim =
        (in.mode & 1) ? &small_limits : &server_limits;
    const uint8_t *sizes = in.sizes;
    size_t nsizes = in.nsizes;
    size_t len = in.len;
    const char *stream = (const char *)in.data;

    static struct trace whole;
    static struct trace pieces;
    whole.n = 0;
    pieces.n = 0;
    _parse_stream(lim, stream, len, NULL, 0, &whole);
    _parse_stream(lim, stream, len, sizes, nsizes, &pieces);
    /* Piecewise delivery may stop early only by reaching the event cap. */
    FUZZ_CHECK(whole.n == pieces.n);
    for (size_t i = 0; i < whole.n; i++) {
        FUZZ_CHECK(memcmp(&whole.ev[i], &pieces.ev[i], sizeof(whole.ev[i])) ==
                   0);
    }
    return 0;
}
