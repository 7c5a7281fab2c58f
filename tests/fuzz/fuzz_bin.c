/*
 * fuzz_bin: fuzzes the memcached binary protocol parser (proto_bin.h).
 *
 * Like fuzz_proto for the text protocol: each input is parsed twice the
 * way a connection would, once delivered in one piece and once in chunks
 * whose sizes the input chooses, every result is checked against the
 * contract of proto_bin.h, and both deliveries must give the same
 * requests and errors. What is checked: consumed bytes never exceed what
 * was given; a request's key, value and stats group lie inside its frame
 * and the frame is exactly what its header says; a "need" is kept (the
 * bytes it asked for are enough) and never asks to buffer more than the
 * largest acceptable frame; errors are the ones the header documents,
 * with the opcode and opaque the reply echoes. Bytes not yet delivered
 * are poisoned for AddressSanitizer, so reading ahead is caught.
 *
 * Input: byte 0 chooses the limits (bit 0: a 64-byte item limit, which
 * short inputs can exceed) and whether frame lengths are repaired first
 * (bit 1: each header's magic and lengths are made to fit the bytes that
 * follow, so mutations inside frames are not lost to framing errors);
 * byte 1 % 8 is how many chunk sizes follow (each byte + 1, used in turn;
 * with none, chunks of 1, 3, 7 and 16 bytes); the rest is the stream.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "proto.h"
#include "proto_bin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NONE ((size_t)-1)
/* What the parser may buffer beyond a value: a key and 255 extras. */
#define BODY_OVERHEAD (PROTO_KEY_MAX + 255)

/* A parser result, with pointers turned into stream offsets. */
struct event {
    enum proto_status status;
    enum proto_error error;
    enum proto_cmd error_cmd;
    bool error_noreply;
    enum proto_cmd cmd;
    bool noreply, want_key, has_cas, create;
    uint8_t opcode;
    uint32_t opaque, flags, nkeys;
    size_t key, nkey, value, vlen, args, args_len;
    int64_t exptime, delay;
    uint64_t cas_unique, delta, initial;
};

struct trace {
    struct event *events;
    size_t n;
    size_t cap;
    size_t consumed;
    bool closed;
};

struct run {
    const struct proto_limits *limits;
    const uint8_t *chunk_sizes;
    size_t nchunk_sizes;        /* 0: the stream arrives in one piece */
    struct trace *trace;        /* filled in, or ... */
    const struct trace *expect; /* ... compared with, event by event */
};

static uint32_t
_be32(const char *p)
{
    const unsigned char *u = (const unsigned char *)p;
    return (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 |
           u[3];
}

static uint64_t
_be64(const char *p)
{
    return (uint64_t)_be32(p) << 32 | _be32(p + 4);
}

static size_t
_offset(const char *p, const char *base)
{
    return p == NULL ? NONE : (size_t)(p - base);
}

/* The quiet opcodes: no reply on success. */
static bool
_quiet(uint8_t op)
{
    switch (op) {
    case PROTO_BIN_GETQ: case PROTO_BIN_GETKQ: case PROTO_BIN_SETQ:
    case PROTO_BIN_ADDQ: case PROTO_BIN_REPLACEQ: case PROTO_BIN_DELETEQ:
    case PROTO_BIN_INCREMENTQ: case PROTO_BIN_DECREMENTQ:
    case PROTO_BIN_QUITQ: case PROTO_BIN_FLUSHQ: case PROTO_BIN_APPENDQ:
    case PROTO_BIN_PREPENDQ: case PROTO_BIN_GATQ: case PROTO_BIN_GATKQ:
        return true;
    default:
        return false;
    }
}

/* Commands whose frames may carry a value (and so be too large). */
static bool
_takes_value(enum proto_cmd cmd)
{
    return cmd == PROTO_CMD_SET || cmd == PROTO_CMD_ADD ||
           cmd == PROTO_CMD_REPLACE || cmd == PROTO_CMD_APPEND ||
           cmd == PROTO_CMD_PREPEND || cmd == PROTO_CMD_SASL_AUTH ||
           cmd == PROTO_CMD_SASL_STEP;
}

/*
 * Everything proto_bin.h promises about a request returned with PROTO_OK:
 * `frame` is where its header starts, `end` just past its last byte.
 */
static void
_check_request(const struct proto_limits *lim, const struct proto_request *req,
               const char *frame, const char *end)
{
    FUZZ_CHECK(end - frame >= PROTO_BIN_HEADER);
    FUZZ_CHECK((unsigned char)frame[0] == PROTO_BIN_REQUEST);
    size_t nkey = (size_t)((unsigned char)frame[2] << 8 |
                           (unsigned char)frame[3]);
    size_t nextras = (unsigned char)frame[4];
    FUZZ_CHECK((size_t)(end - frame) == PROTO_BIN_HEADER + _be32(frame + 8));
    FUZZ_CHECK(req->kind == PROTO_KIND_BINARY);
    FUZZ_CHECK(req->opcode == (uint8_t)frame[1]);
    FUZZ_CHECK(req->opaque == _be32(frame + 12));
    FUZZ_CHECK(req->cas_unique == _be64(frame + 16));
    FUZZ_CHECK((unsigned)req->cmd < PROTO_CMD_COUNT);
    FUZZ_CHECK(req->noreply == _quiet(req->opcode));
    FUZZ_CHECK(!req->has_cas || req->cas_unique != 0);
    FUZZ_CHECK(nkey <= PROTO_KEY_MAX);

    /* extras, then the key (or stats group), then the value, to the end */
    const char *key = frame + PROTO_BIN_HEADER + nextras;
    if (req->cmd == PROTO_CMD_STATS) {
        FUZZ_CHECK(req->args == key && req->args_len == nkey);
        FUZZ_CHECK(req->nkey == 0 && req->nkeys == 0);
    } else {
        FUZZ_CHECK(req->nkey == nkey);
        FUZZ_CHECK(req->nkeys == (nkey > 0 ? 1u : 0u));
        FUZZ_CHECK(nkey == 0 || req->key == key);
        FUZZ_CHECK(req->keys == req->key && req->keys_len == req->nkey);
    }
    FUZZ_CHECK(req->value == key + nkey);
    FUZZ_CHECK(req->value + req->vlen == end);
    FUZZ_CHECK(req->vlen <= lim->item_max);
    FUZZ_CHECK(req->vlen == 0 || _takes_value(req->cmd));

    switch (req->cmd) {
    case PROTO_CMD_SET:
    case PROTO_CMD_ADD:
    case PROTO_CMD_REPLACE:
        FUZZ_CHECK(nextras == 8 && nkey > 0);
        FUZZ_CHECK(req->flags == _be32(frame + PROTO_BIN_HEADER));
        FUZZ_CHECK(req->exptime ==
                   (int64_t)_be32(frame + PROTO_BIN_HEADER + 4));
        break;
    case PROTO_CMD_INCR:
    case PROTO_CMD_DECR: {
        const char *ex = frame + PROTO_BIN_HEADER;
        FUZZ_CHECK(nextras == 20 && nkey > 0);
        FUZZ_CHECK(req->delta == _be64(ex) && req->initial == _be64(ex + 8));
        FUZZ_CHECK(req->create == (_be32(ex + 16) != UINT32_MAX));
        FUZZ_CHECK(req->exptime == (req->create ? (int64_t)_be32(ex + 16)
                                                : 0));
        break;
    }
    case PROTO_CMD_GET:
    case PROTO_CMD_DELETE:
    case PROTO_CMD_APPEND:
    case PROTO_CMD_PREPEND:
    case PROTO_CMD_SASL_AUTH:
    case PROTO_CMD_SASL_STEP:
        FUZZ_CHECK(nextras == 0 && nkey > 0);
        break;
    case PROTO_CMD_TOUCH:
    case PROTO_CMD_GAT:
        FUZZ_CHECK(nextras == 4 && nkey > 0);
        FUZZ_CHECK(req->exptime == (int64_t)_be32(frame + PROTO_BIN_HEADER));
        break;
    case PROTO_CMD_FLUSH_ALL:
        FUZZ_CHECK((nextras == 0 || nextras == 4) && nkey == 0);
        FUZZ_CHECK(req->delay == (nextras == 4
                                      ? (int64_t)_be32(frame +
                                                       PROTO_BIN_HEADER)
                                      : 0));
        break;
    case PROTO_CMD_STATS:
        FUZZ_CHECK(nextras == 0);
        break;
    case PROTO_CMD_QUIT:
    case PROTO_CMD_NOOP:
    case PROTO_CMD_VERSION:
    case PROTO_CMD_SASL_LIST:
        FUZZ_CHECK(nextras == 0 && nkey == 0);
        break;
    default:
        FUZZ_CHECK(!"a command the binary protocol does not carry");
    }
    FUZZ_CHECK(req->want_key == (req->opcode == PROTO_BIN_GETK ||
                                 req->opcode == PROTO_BIN_GETKQ ||
                                 req->opcode == PROTO_BIN_GATK ||
                                 req->opcode == PROTO_BIN_GATKQ));
}

static void
_trace_add(struct trace *t, const struct event *e)
{
    if (t->n == t->cap) {
        t->cap = t->cap == 0 ? 16 : t->cap * 2;
        t->events = realloc(t->events, t->cap * sizeof(*t->events));
        FUZZ_CHECK(t->events != NULL);
    }
    t->events[t->n++] = *e;
}

static bool
_event_equal(const struct event *a, const struct event *b)
{
    return a->status == b->status && a->error == b->error &&
           a->error_cmd == b->error_cmd &&
           a->error_noreply == b->error_noreply && a->cmd == b->cmd &&
           a->noreply == b->noreply && a->want_key == b->want_key &&
           a->has_cas == b->has_cas && a->create == b->create &&
           a->opcode == b->opcode && a->opaque == b->opaque &&
           a->flags == b->flags && a->nkeys == b->nkeys && a->key == b->key &&
           a->nkey == b->nkey && a->value == b->value && a->vlen == b->vlen &&
           a->args == b->args && a->args_len == b->args_len &&
           a->exptime == b->exptime && a->delay == b->delay &&
           a->cas_unique == b->cas_unique && a->delta == b->delta &&
           a->initial == b->initial;
}

static void
_record(struct run *run, size_t *nevents, enum proto_status st,
        const struct proto_parser *p, const struct proto_request *req,
        const char *stream)
{
    struct event e;
    memset(&e, 0, sizeof(e));
    e.status = st;
    /* Every result echoes the opcode and opaque; a too-large set names
     * its key, whose old value process.c then drops. */
    e.opcode = req->opcode;
    e.opaque = req->opaque;
    e.cmd = req->cmd;
    e.key = _offset(req->key, stream);
    e.nkey = req->nkey;
    if (st == PROTO_OK) {
        e.noreply = req->noreply;
        e.want_key = req->want_key;
        e.has_cas = req->has_cas;
        e.create = req->create;
        e.flags = req->flags;
        e.nkeys = req->nkeys;
        e.value = _offset(req->value, stream);
        e.vlen = req->vlen;
        e.args = _offset(req->args, stream);
        e.args_len = req->args_len;
        e.exptime = req->exptime;
        e.delay = req->delay;
        e.cas_unique = req->cas_unique;
        e.delta = req->delta;
        e.initial = req->initial;
    } else {
        e.error = p->error;
        e.error_cmd = p->error_cmd;
        e.error_noreply = p->error_noreply;
    }
    if (run->trace != NULL) {
        _trace_add(run->trace, &e);
    } else {
        FUZZ_CHECK(*nevents < run->expect->n);
        FUZZ_CHECK(_event_equal(&e, &run->expect->events[*nevents]));
    }
    (*nevents)++;
}

/* Checks a result other than PROTO_OK and PROTO_EUNFIN. */
static void
_check_error(const struct proto_limits *lim, enum proto_status st,
             const struct proto_parser *p, const struct proto_request *req,
             const char *frame, const char *win, size_t wlen, size_t consumed)
{
    FUZZ_CHECK(!p->error_noreply); /* binary errors are always answered */
    FUZZ_CHECK(req->kind == PROTO_KIND_BINARY);
    FUZZ_CHECK(req->opcode == (uint8_t)frame[1]);
    FUZZ_CHECK(req->opaque == _be32(frame + 12));
    uint64_t body = _be32(frame + 8);
    if (st == PROTO_EREQ) {
        FUZZ_CHECK((unsigned char)frame[0] == PROTO_BIN_REQUEST);
        FUZZ_CHECK(consumed > 0);
        if (p->error == PROTO_ERR_BIN_UNKNOWN) {
            /* The whole frame, and nothing after it. */
            FUZZ_CHECK(win + consumed == frame + PROTO_BIN_HEADER + body);
            FUZZ_CHECK(body <= lim->item_max + BODY_OVERHEAD);
            return;
        }
        FUZZ_CHECK(p->error == PROTO_ERR_TOO_LARGE);
        FUZZ_CHECK(_takes_value(p->error_cmd) && req->cmd == p->error_cmd);
        FUZZ_CHECK(body > lim->item_max);
        /* As much of the frame as was there; the rest is swallowed. */
        size_t have = wlen - (size_t)(frame - win);
        FUZZ_CHECK(win + consumed ==
                   frame + (have < PROTO_BIN_HEADER + body
                                ? have
                                : PROTO_BIN_HEADER + body));
        FUZZ_CHECK(p->swallow == PROTO_BIN_HEADER + body -
                                     (size_t)(win + consumed - frame));
        /* It waited for its extras and key, so it names the key (unless
         * too long to be one), however the stream was split. */
        size_t nkey = (size_t)((unsigned char)frame[2] << 8 |
                               (unsigned char)frame[3]);
        size_t nextras = (unsigned char)frame[4];
        if (nkey <= PROTO_KEY_MAX) {
            FUZZ_CHECK(req->key == frame + PROTO_BIN_HEADER + nextras);
            FUZZ_CHECK(req->nkey == nkey);
            FUZZ_CHECK(fuzz_inside(req->key, req->nkey, win, consumed));
        } else {
            FUZZ_CHECK(req->key == NULL && req->nkey == 0);
        }
        return;
    }
    FUZZ_CHECK(st == PROTO_ECLOSE);
    FUZZ_CHECK(p->error == PROTO_ERR_BIN_FRAMING ||
               p->error == PROTO_ERR_BIN_UNKNOWN ||
               p->error == PROTO_ERR_BIN_EINVAL);
    FUZZ_CHECK((p->error == PROTO_ERR_BIN_FRAMING) ==
               ((unsigned char)frame[0] != PROTO_BIN_REQUEST));
}

/*
 * Feeds `stream` to a fresh parser as a connection would, keeping
 * unconsumed bytes and appending each arriving chunk, and checks every
 * result. `stream` is a private heap copy, poisoned past the bytes
 * delivered so far.
 */
static void
_parse_stream(struct run *run, char *stream, size_t len)
{
    const struct proto_limits *lim = run->limits;
    struct proto_parser p;
    size_t start = 0;
    size_t delivered = 0;
    size_t next_chunk = 0;
    size_t nevents = 0;
    size_t promised = 0; /* after EUNFIN: window that must suffice, or 0 */
    bool closed = false;
    size_t max_frame = PROTO_BIN_HEADER + lim->item_max + BODY_OVERHEAD;
    /* A header's extras and key, waited for before it is judged. */
    size_t max_head = PROTO_BIN_HEADER + 255 + 65535;
    if (max_head > max_frame) {
        max_frame = max_head;
    }

    proto_parser_init(&p, lim);
    FUZZ_POISON(stream, len);
    while (!closed && delivered < len) {
        size_t chunk = len - delivered;
        if (run->nchunk_sizes > 0) {
            size_t want = (size_t)run->chunk_sizes[next_chunk] + 1;
            next_chunk = (next_chunk + 1) % run->nchunk_sizes;
            chunk = want < chunk ? want : chunk;
        }
        FUZZ_UNPOISON(stream + delivered, chunk);
        delivered += chunk;

        for (;;) {
            const char *win = stream + start;
            size_t wlen = delivered - start;
            struct proto_request req;
            size_t consumed = (size_t)-1;
            uint64_t swallowing = p.swallow;
            enum proto_status st = proto_bin_parse(&p, win, wlen, &consumed,
                                                   &req);

            FUZZ_CHECK(consumed <= wlen);
            /* The frame judged starts after what was left to swallow. */
            size_t eaten = swallowing < wlen ? (size_t)swallowing : wlen;
            const char *frame = win + eaten;
            if (st == PROTO_EUNFIN) {
                FUZZ_CHECK(promised == 0 || wlen < promised);
                promised = 0;
                FUZZ_CHECK(consumed == eaten);
                if (p.need > 0) {
                    FUZZ_CHECK(p.need > wlen);
                    /* Never more than the largest frame it accepts. */
                    FUZZ_CHECK(p.need - consumed <= max_frame);
                    if (wlen - eaten >= PROTO_BIN_HEADER) {
                        /* The header's extras and key first (memcached
                         * judges a frame only with them), then the whole
                         * frame: those bytes will do. */
                        const unsigned char *fh =
                            (const unsigned char *)frame;
                        size_t head = PROTO_BIN_HEADER + fh[4] +
                                      ((size_t)fh[2] << 8 | fh[3]);
                        size_t want = p.need - consumed;
                        FUZZ_CHECK(want == head || wlen - eaten >= head);
                        promised = want == head ? 0 : want;
                    } else {
                        /* Only the header is known to be needed. */
                        FUZZ_CHECK(p.need - consumed == PROTO_BIN_HEADER);
                    }
                } else {
                    FUZZ_CHECK(consumed == wlen); /* swallowing it all */
                }
                start += consumed;
                FUZZ_POISON(stream, start);
                break;
            }
            promised = 0;
            FUZZ_CHECK(wlen - eaten >= PROTO_BIN_HEADER);
            _record(run, &nevents, st, &p, &req, stream);
            if (st == PROTO_OK) {
                FUZZ_CHECK(p.error == PROTO_ERR_NONE);
                FUZZ_CHECK(p.swallow == 0);
                _check_request(lim, &req, frame, win + consumed);
            } else {
                _check_error(lim, st, &p, &req, frame, win, wlen, consumed);
                closed = st == PROTO_ECLOSE;
            }
            start += consumed;
            FUZZ_POISON(stream, start);
            if (closed) {
                break;
            }
        }
    }
    FUZZ_UNPOISON(stream, len);
    if (run->trace != NULL) {
        run->trace->consumed = start;
        run->trace->closed = closed;
    } else {
        FUZZ_CHECK(nevents == run->expect->n);
        FUZZ_CHECK(start == run->expect->consumed);
        FUZZ_CHECK(closed == run->expect->closed);
    }
}

/*
 * Makes each header in `buf`, walked frame by frame, a request whose
 * key and extras fit its body and whose body fits the bytes left.
 */
static void
_repair_frames(char *buf, size_t len)
{
    size_t off = 0;
    while (len - off >= PROTO_BIN_HEADER) {
        unsigned char *h = (unsigned char *)buf + off;
        size_t left = len - off - PROTO_BIN_HEADER;
        uint32_t body = _be32((const char *)h + 8);
        if (body > left) {
            body = (uint32_t)left;
        }
        size_t nextras = h[4] <= body ? h[4] : body;
        size_t nkey = (size_t)(h[2] << 8 | h[3]);
        if (nkey > body - nextras) {
            nkey = body - nextras;
        }
        h[0] = PROTO_BIN_REQUEST;
        h[2] = (unsigned char)(nkey >> 8);
        h[3] = (unsigned char)nkey;
        h[4] = (unsigned char)nextras;
        h[8] = (unsigned char)(body >> 24);
        h[9] = (unsigned char)(body >> 16);
        h[10] = (unsigned char)(body >> 8);
        h[11] = (unsigned char)body;
        off += PROTO_BIN_HEADER + body;
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct proto_limits server_limits = {
        PROTO_MAX_LINE_DEFAULT, (size_t)1 << 20, (size_t)1 << 20, false};
    static const struct proto_limits small_limits = {128, 512, 64, false};

    struct fuzz_stream in;
    if (!fuzz_stream_split(data, size, &in)) {
        return 0;
    }
    const struct proto_limits *lim =
        (in.mode & 1) ? &small_limits : &server_limits;
    const uint8_t *sizes = in.sizes;
    size_t nsizes = in.nsizes;
    size_t len = in.len;
    char *stream = malloc(len);
    FUZZ_CHECK(stream != NULL);
    memcpy(stream, in.data, len);
    if (in.mode & 2) {
        _repair_frames(stream, len);
    }

    struct trace whole = {0};
    struct run one_piece = {lim, NULL, 0, &whole, NULL};
    _parse_stream(&one_piece, stream, len);
    struct run chunked = {lim, sizes, nsizes, NULL, &whole};
    _parse_stream(&chunked, stream, len);

    free(whole.events);
    free(stream);
    return 0;
}
