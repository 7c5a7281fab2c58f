/*
 * fuzz_proto: fuzzes the memcached text protocol parser (proto.h) and the
 * meta command lines it hands to proto_meta.c.
 *
 * The parser reads bytes straight from clients, so it must survive
 * anything. Each input is run through it twice the way a connection
 * would: once delivered in one piece, once in chunks whose sizes the input
 * chooses. Every request of the pipelined stream is checked against the
 * contract of proto.h (consumed bytes, valid keys, data blocks, bounded
 * buffering, errors that close; for meta commands their flags, opaque
 * and base64 keys too), and both deliveries must produce the same
 * requests and errors, because a parser that depends on how TCP
 * happened to split the stream is a bug. Bytes not yet delivered are
 * poisoned for AddressSanitizer, so reading ahead of them is caught.
 *
 * Input: byte 0 chooses the limits (bit 0: small ones, which let short
 * inputs reach "too large" and "line too long"); byte 1 % 8 is how many
 * chunk sizes follow (each byte + 1, used in turn; with none, chunks of
 * 1, 3, 7 and 16 bytes); the rest is the stream.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "proto.h"
#include "repl_proto.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NONE ((size_t)-1)
#define IN_KEYBUF ((size_t)-2) /* a key decoded into the request */

/* Meta flags that come back in a reply, and the modes ms and ma take. */
static const char META_FLAGS[] = "bcfhklOqstuvNRTCFIMJDEPL";
static const char MS_MODES[] = "SEAPR";
static const char MA_MODES[] = "I+D-";

/* A parser result, with pointers turned into stream offsets. */
struct event {
    enum proto_status status;
    enum proto_error error;
    enum proto_cmd error_cmd;
    bool error_noreply;
    enum proto_cmd cmd;
    enum proto_kind kind;
    bool noreply;
    size_t key, nkey, keys, keys_len, value, vlen, args, args_len;
    uint64_t key_hash;
    uint32_t nkeys, flags, level;
    int64_t exptime, delay;
    uint64_t cas_unique, delta;
    struct proto_meta meta; /* its opaque pointer cleared, ... */
    size_t opaque;          /* ... kept here as an offset */
};

struct trace {
    struct event *events;
    size_t n;
    size_t cap;
    size_t consumed; /* bytes of the stream consumed in all */
    bool closed;
};

/* A parse of the stream and what the first one saw, to compare with. */
struct run {
    const struct proto_limits *limits;
    const uint8_t *chunk_sizes;
    size_t nchunk_sizes;    /* 0: the stream arrives in one piece */
    struct trace *trace;    /* filled in, or ... */
    const struct trace *expect; /* ... compared with, event by event */
};

static size_t
_offset(const char *p, const char *base)
{
    return p == NULL ? NONE : (size_t)(p - base);
}

static size_t
_max_size(size_t a, size_t b)
{
    return a > b ? a : b;
}

static void
_check_key(const char *key, size_t nkey, const char *win, size_t consumed)
{
    FUZZ_CHECK(proto_key_valid(key, nkey));
    FUZZ_CHECK(fuzz_inside(key, nkey, win, consumed));
}

/* A meta key: a text key in the line, or a base64 one decoded. */
static void
_check_meta_key(const struct proto_request *req, const char *win,
                size_t consumed)
{
    if (!req->meta.base64) {
        _check_key(req->key, req->nkey, win, consumed);
        return;
    }
    FUZZ_CHECK(req->key == req->keybuf);
    FUZZ_CHECK(req->nkey > 0 && req->nkey <= PROTO_KEY_MAX);
}

/* What proto.h and proto_meta.c promise about a meta command's flags. */
static void
_check_meta(const struct proto_request *req, const char *win,
            size_t consumed)
{
    const struct proto_meta *m = &req->meta;

    FUZZ_CHECK(req->kind == PROTO_KIND_META);
    FUZZ_CHECK(req->noreply == m->quiet);
    FUZZ_CHECK(m->norder <= PROTO_META_FLAGS_MAX);
    for (size_t i = 0; i < m->norder; i++) {
        FUZZ_CHECK(memchr(META_FLAGS, m->order[i],
                          sizeof(META_FLAGS) - 1) != NULL);
        FUZZ_CHECK(memchr(m->order, m->order[i], i) == NULL); /* no repeats */
    }
    if (m->opaque != NULL) {
        FUZZ_CHECK(m->opaque_len < 32); /* 32 bytes with its O */
        FUZZ_CHECK(fuzz_inside(m->opaque, m->opaque_len, win, consumed));
        FUZZ_CHECK(memchr(m->order, 'O', m->norder) != NULL);
    }
    FUZZ_CHECK(!m->ttl || memchr(m->order, 'T', m->norder) != NULL);
    if (req->cmd == PROTO_CMD_MS) {
        FUZZ_CHECK(m->mode == 0 || memchr(MS_MODES, m->mode,
                                          sizeof(MS_MODES) - 1) != NULL);
    } else if (req->cmd == PROTO_CMD_MA) {
        FUZZ_CHECK(m->mode == 0 || memchr(MA_MODES, m->mode,
                                          sizeof(MA_MODES) - 1) != NULL);
    }
    if (req->cmd != PROTO_CMD_NOOP) {
        _check_meta_key(req, win, consumed);
        FUZZ_CHECK(req->keys == req->key && req->keys_len == req->nkey);
        FUZZ_CHECK(req->nkeys == 1);
    }
}

/* The hello a master reads from a "REPL" line: parsed as the master does. */
static void
_check_repl_hello(const struct proto_request *req)
{
    struct repl_hello h;
    if (repl_hello_parse(req->args, req->args_len, &h)) {
        FUZZ_CHECK(h.sid != 0);
    }
}

/* Everything proto.h promises about a request returned with PROTO_OK. */
static void
_check_request(const struct proto_limits *lim, const struct proto_request *req,
               const char *win, size_t consumed)
{
    FUZZ_CHECK((unsigned)req->cmd < PROTO_CMD_COUNT);
    const char *name = proto_cmd_name(req->cmd);
    enum proto_cmd again;
    FUZZ_CHECK(proto_cmd_lookup(name, strlen(name), &again));
    FUZZ_CHECK(again == req->cmd);

    switch (req->cmd) {
    case PROTO_CMD_GET:
    case PROTO_CMD_GETS:
    case PROTO_CMD_GAT:
    case PROTO_CMD_GATS: {
        /* "gat 10" has no keys at all. */
        FUZZ_CHECK(req->keys != NULL ||
                   (req->keys_len == 0 && req->nkeys == 0));
        FUZZ_CHECK(req->keys == NULL ||
                   fuzz_inside(req->keys, req->keys_len, win, consumed));
        size_t pos = 0;
        const char *key;
        size_t nkey;
        uint32_t count = 0;
        while (proto_next_key(req, &pos, &key, &nkey)) {
            FUZZ_CHECK(pos <= req->keys_len);
            _check_key(key, nkey, win, consumed);
            FUZZ_CHECK(key >= req->keys &&
                       key + nkey <= req->keys + req->keys_len);
            if (count == 0) {
                FUZZ_CHECK(key == req->key && nkey == req->nkey);
            }
            count++;
            FUZZ_CHECK(count <= req->keys_len);
        }
        FUZZ_CHECK(count == req->nkeys);
        break;
    }
    case PROTO_CMD_SET:
    case PROTO_CMD_ADD:
    case PROTO_CMD_REPLACE:
    case PROTO_CMD_APPEND:
    case PROTO_CMD_PREPEND:
    case PROTO_CMD_CAS:
        /* The whole data block and its "\r\n", and nothing after them. */
        _check_key(req->key, req->nkey, win, consumed);
        FUZZ_CHECK(req->vlen <= lim->item_max);
        FUZZ_CHECK(fuzz_inside(req->value, req->vlen + 2, win, consumed));
        FUZZ_CHECK(req->value[req->vlen] == '\r' &&
                   req->value[req->vlen + 1] == '\n');
        FUZZ_CHECK(req->value + req->vlen + 2 == win + consumed);
        break;
    case PROTO_CMD_DELETE:
    case PROTO_CMD_INCR:
    case PROTO_CMD_DECR:
    case PROTO_CMD_TOUCH:
        _check_key(req->key, req->nkey, win, consumed);
        break;
    case PROTO_CMD_MS:
        _check_meta(req, win, consumed);
        FUZZ_CHECK(req->vlen <= lim->item_max);
        FUZZ_CHECK(fuzz_inside(req->value, req->vlen + 2, win, consumed));
        FUZZ_CHECK(req->value[req->vlen] == '\r' &&
                   req->value[req->vlen + 1] == '\n');
        FUZZ_CHECK(req->value + req->vlen + 2 == win + consumed);
        break;
    case PROTO_CMD_MG:
    case PROTO_CMD_MD:
    case PROTO_CMD_MA:
    case PROTO_CMD_ME:
    case PROTO_CMD_NOOP:
        _check_meta(req, win, consumed);
        break;
    case PROTO_CMD_STATS:
    case PROTO_CMD_REPL:
        FUZZ_CHECK(fuzz_inside(req->args, req->args_len, win, consumed));
        FUZZ_CHECK(req->args_len == 0 || req->args[req->args_len - 1] != ' ');
        if (req->cmd == PROTO_CMD_REPL) {
            _check_repl_hello(req);
        }
        break;
    default:
        break;
    }
    /* mn and the m* commands are meta; the rest, text (shutdown and
     * cache_memlimit sit after the meta commands in the enum). */
    bool meta = req->cmd >= PROTO_CMD_NOOP && req->cmd <= PROTO_CMD_ME;
    FUZZ_CHECK(req->kind == (meta ? PROTO_KIND_META : PROTO_KIND_TEXT));
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
_meta_equal(const struct proto_meta *a, const struct proto_meta *b)
{
    return a->norder == b->norder &&
           memcmp(a->order, b->order, a->norder) == 0 &&
           a->base64 == b->base64 && a->quiet == b->quiet &&
           a->value == b->value && a->no_bump == b->no_bump &&
           a->invalidate == b->invalidate &&
           a->vivify == b->vivify &&
           a->vivify_ttl == b->vivify_ttl && a->recache == b->recache &&
           a->recache_ttl == b->recache_ttl && a->ttl == b->ttl &&
           a->ttl_value == b->ttl_value &&
           a->client_flags == b->client_flags &&
           a->flags_value == b->flags_value &&
           a->compare_cas == b->compare_cas &&
           a->compare_value == b->compare_value &&
           a->new_cas == b->new_cas && a->new_cas_value == b->new_cas_value &&
           a->initial == b->initial && a->initial_value == b->initial_value &&
           a->delta == b->delta && a->mode == b->mode &&
           a->opaque_len == b->opaque_len;
}

static bool
_event_equal(const struct event *a, const struct event *b)
{
    return a->status == b->status && a->kind == b->kind &&
           a->key_hash == b->key_hash && a->opaque == b->opaque &&
           _meta_equal(&a->meta, &b->meta) && a->error == b->error &&
           a->error_cmd == b->error_cmd &&
           a->error_noreply == b->error_noreply && a->cmd == b->cmd &&
           a->noreply == b->noreply && a->key == b->key &&
           a->nkey == b->nkey && a->keys == b->keys &&
           a->keys_len == b->keys_len && a->value == b->value &&
           a->vlen == b->vlen && a->args == b->args &&
           a->args_len == b->args_len && a->nkeys == b->nkeys &&
           a->flags == b->flags && a->level == b->level &&
           a->exptime == b->exptime && a->delay == b->delay &&
           a->cas_unique == b->cas_unique && a->delta == b->delta;
}

static void
_record(struct run *run, size_t *nevents, enum proto_status st,
        const struct proto_parser *p, const struct proto_request *req,
        const char *stream)
{
    struct event e;
    memset(&e, 0, sizeof(e));
    e.status = st;
    if (st == PROTO_OK) {
        e.cmd = req->cmd;
        e.kind = req->kind;
        e.noreply = req->noreply;
        /* A decoded key is compared by its bytes, the others by place. */
        bool decoded = req->key == req->keybuf;
        e.key = decoded ? IN_KEYBUF : _offset(req->key, stream);
        e.key_hash = decoded ? util_hash(req->key, req->nkey) : 0;
        e.nkey = req->nkey;
        e.keys = decoded ? IN_KEYBUF : _offset(req->keys, stream);
        e.keys_len = req->keys_len;
        e.nkeys = req->nkeys;
        e.flags = req->flags;
        e.exptime = req->exptime;
        e.value = _offset(req->value, stream);
        e.vlen = req->vlen;
        e.cas_unique = req->cas_unique;
        e.delta = req->delta;
        e.delay = req->delay;
        e.level = req->level;
        e.args = _offset(req->args, stream);
        e.args_len = req->args_len;
        e.meta = req->meta;
        e.meta.opaque = NULL;
        e.opaque = _offset(req->meta.opaque, stream);
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

/*
 * Feeds `stream` to a fresh parser as a connection would, keeping
 * unconsumed bytes and appending each arriving chunk, and checks every
 * result. `stream` is a private heap copy; it is poisoned past the bytes
 * delivered so far.
 */
static void
_parse_stream(struct run *run, char *stream, size_t len)
{
    const struct proto_limits *lim = run->limits;
    struct proto_parser p;
    size_t start = 0;     /* first unconsumed byte */
    size_t delivered = 0; /* bytes received so far */
    size_t next_chunk = 0;
    size_t nevents = 0;
    size_t promised = 0;  /* after EUNFIN: window that must suffice, or 0 */
    bool closed = false;
    /* The most a connection must hold for one request (see proto.h). */
    size_t max_request = _max_size(lim->max_line + 2 + lim->item_max + 2,
                                   lim->max_get_line + 2);
    size_t max_partial_line = _max_size(lim->max_line, lim->max_get_line) + 1;

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
            enum proto_status st = proto_parse(&p, win, wlen, &consumed, &req);

            FUZZ_CHECK(consumed <= wlen);
            if (st == PROTO_EUNFIN) {
                /* Bytes it said were enough must be enough. */
                FUZZ_CHECK(promised == 0 || wlen < promised);
                promised = 0;
                if (p.need > 0) {
                    FUZZ_CHECK(p.need > wlen);
                    FUZZ_CHECK(p.need - consumed <= max_request);
                    promised = p.need - consumed;
                } else if (p.swallow == 0) {
                    /* Waiting for the end of a line that is not there. */
                    FUZZ_CHECK(memchr(win + consumed, '\n',
                                      wlen - consumed) == NULL);
                    FUZZ_CHECK(wlen - consumed <= max_partial_line);
                } else {
                    FUZZ_CHECK(consumed == wlen); /* swallowing it all */
                }
                start += consumed;
                FUZZ_POISON(stream, start);
                break;
            }
            promised = 0;
            _record(run, &nevents, st, &p, &req, stream);
            if (st == PROTO_OK) {
                FUZZ_CHECK(consumed > 0);
                _check_request(lim, &req, win, consumed);
            } else if (st == PROTO_EREQ) {
                FUZZ_CHECK(consumed > 0);
                FUZZ_CHECK(p.error > PROTO_ERR_NONE &&
                           p.error < PROTO_ERR_COUNT);
                FUZZ_CHECK(p.error != PROTO_ERR_LINE_TOO_LONG &&
                           p.error != PROTO_ERR_HTTP);
                if (p.error == PROTO_ERR_TOO_LARGE) {
                    /* process_error() drops the value of the key that a
                     * too-large "set" or "ms" names, so both must be
                     * right. */
                    FUZZ_CHECK((p.error_cmd >= PROTO_CMD_SET &&
                                p.error_cmd <= PROTO_CMD_CAS) ||
                               p.error_cmd == PROTO_CMD_MS);
                    FUZZ_CHECK(req.cmd == p.error_cmd);
                    if (req.cmd == PROTO_CMD_MS) {
                        _check_meta_key(&req, win, consumed);
                    } else {
                        _check_key(req.key, req.nkey, win, consumed);
                    }
                }
            } else {
                FUZZ_CHECK(st == PROTO_ECLOSE);
                FUZZ_CHECK(p.error == PROTO_ERR_LINE_TOO_LONG ||
                           p.error == PROTO_ERR_HTTP);
                closed = true;
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

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The daemon's limits, and small ones that short inputs can exceed;
     * max_line stays above the 100 spaces memcached skips before "get ",
     * so how the stream is split cannot change which limit applies. */
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

    struct trace whole = {0};
    struct run one_piece = {lim, NULL, 0, &whole, NULL};
    _parse_stream(&one_piece, stream, len);
    struct run chunked = {lim, sizes, nsizes, NULL, &whole};
    _parse_stream(&chunked, stream, len);

    free(whole.events);
    free(stream);
    return 0;
}
