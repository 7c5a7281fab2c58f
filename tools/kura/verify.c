/*
 * verify: `kura verify`, checks servers against a bench ack log (see
 * verify.h for what the log holds and how keys are classified).
 *
 * The log can hold tens of millions of lines, so it is read in large
 * chunks and parsed by hand, and the table is not a general hash map:
 * keys are <prefix>c<conn>:<n>, so a row per connection holding the
 * highest sequence number per n is both smaller and faster. Servers are
 * then asked for every key with multi-key gets, several batches in flight
 * on each of a few connections, which keeps the round trips off the
 * critical path and checks millions of keys in seconds.
 */
#include "verify.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "client_reply.h"
#include "tlsopt.h"
#include "util.h"

#define READ_CHUNK ((size_t)1 << 20)
#define LINE_MAX_LEN 512
#define KEY_MAX_LEN 250
#define MAX_CONN_INDEX ((uint64_t)1 << 20)   /* sanity bounds on a log line */
#define MAX_KEY_INDEX ((uint64_t)1 << 27)
#define MAX_PORTS 16

#define VERIFY_CONNS 4
#define VERIFY_BATCH 100      /* keys per get */
#define VERIFY_DEPTH 8        /* gets in flight per connection */
#define VERIFY_IDLE_MS 10000  /* no reply for this long: give up */
#define VERIFY_RBUF_INITIAL ((size_t)64 << 10)
#define VERIFY_RBUF_MAX ((size_t)1 << 30)

struct ack_row {
    uint64_t *seq;   /* seq[n]; 0 = never acknowledged */
    uint64_t len;
};

struct verify_acks {
    char prefix[KEY_MAX_LEN + 1];
    size_t prefix_len;
    bool have_prefix;
    struct ack_row *rows;    /* rows[conn] */
    uint64_t nrows;
    uint64_t keys;
};

/* A position in the table: the next key to ask for or to account. */
struct cursor {
    uint64_t row;
    uint64_t n;
};

struct batch {
    struct cursor start;
    uint32_t count;
};

struct vconn {
    struct client pc;
    struct batch q[VERIFY_DEPTH];   /* gets sent, oldest first */
    int qhead;
    int qlen;
    struct cursor at;               /* next key of the oldest batch */
    uint32_t accounted;             /* keys of the oldest batch done */
};

struct vrun {
    const struct verify_acks *a;
    struct verify_report *r;
    struct cursor next;             /* next key to put in a batch */
    bool exhausted;
};

/* ------------------------------------------------------------ parsing */

/* A canonical decimal: digits only, no leading zero, fits in `max`. */
static bool
_parse_canon(const char *s, size_t len, uint64_t max, uint64_t *out)
{
    if (len == 0 || len > UTIL_U64_DIGITS || (len > 1 && s[0] == '0')) {
        return false;
    }
    return util_parse_uint(s, len, max, out);
}

/*
 * Splits `key` (`len` bytes) as <prefix>c<conn>:<n>. Returns false unless
 * both numbers are canonical and within the table's sanity bounds.
 */
static bool
_parse_key(const char *key, size_t len, size_t *prefix_len, uint64_t *conn,
           uint64_t *n)
{
    const char *colon = memrchr(key, ':', len);
    if (colon == NULL) {
        return false;
    }
    size_t ci = (size_t)(colon - key);
    if (!_parse_canon(colon + 1, len - ci - 1, MAX_KEY_INDEX - 1, n)) {
        return false;
    }
    size_t d = ci;
    while (d > 0 && key[d - 1] >= '0' && key[d - 1] <= '9') {
        d--;
    }
    if (d == 0 || key[d - 1] != 'c' ||
        !_parse_canon(key + d, ci - d, MAX_CONN_INDEX - 1, conn)) {
        return false;
    }
    *prefix_len = d - 1;
    return true;
}

/* Writes the key of (`row`, `n`) to `out` (KEY_MAX_LEN + 1 bytes). */
static void
_format_key(const struct verify_acks *a, uint64_t row, uint64_t n, char *out)
{
    char num[UTIL_U64_DIGITS];
    size_t len = a->prefix_len;
    memcpy(out, a->prefix, len);
    out[len++] = 'c';
    size_t k = util_u64_to_dec(row, num);
    memcpy(out + len, num, k);
    len += k;
    out[len++] = ':';
    k = util_u64_to_dec(n, num);
    memcpy(out + len, num, k);
    len += k;
    out[len] = '\0';
}

/* Makes rows[conn].seq[n] addressable, zero-filling what is new. */
static bool
_reserve(struct verify_acks *a, uint64_t conn, uint64_t n)
{
    if (conn >= a->nrows) {
        uint64_t cap = a->nrows == 0 ? 64 : a->nrows;
        while (cap <= conn) {
            cap *= 2;
        }
        struct ack_row *rows = realloc(a->rows, cap * sizeof(*rows));
        if (rows == NULL) {
            return false;
        }
        memset(rows + a->nrows, 0, (cap - a->nrows) * sizeof(*rows));
        a->rows = rows;
        a->nrows = cap;
    }
    struct ack_row *row = &a->rows[conn];
    if (n >= row->len) {
        uint64_t cap = row->len == 0 ? 1024 : row->len;
        while (cap <= n) {
            cap *= 2;
        }
        uint64_t *seq = realloc(row->seq, cap * sizeof(*seq));
        if (seq == NULL) {
            return false;
        }
        memset(seq + row->len, 0, (cap - row->len) * sizeof(*seq));
        row->seq = seq;
        row->len = cap;
    }
    return true;
}

/* Adds one log line (without its newline). Returns NULL or why not. */
static const char *
_add_line(struct verify_acks *a, const char *line, size_t len)
{
    const char *sp = memchr(line, ' ', len);
    uint64_t seq;
    uint64_t conn;
    uint64_t n;
    size_t plen;

    if (sp == NULL) {
        return "expected \"<key> <sequence>\"";
    }
    size_t klen = (size_t)(sp - line);
    if (klen == 0 || klen > KEY_MAX_LEN) {
        return "bad key length";
    }
    if (!_parse_canon(sp + 1, len - klen - 1, UINT64_MAX, &seq) || seq == 0) {
        return "bad sequence number";
    }
    if (!_parse_key(line, klen, &plen, &conn, &n)) {
        return "key is not <prefix>c<conn>:<n>";
    }
    if (!a->have_prefix) {
        memcpy(a->prefix, line, plen);
        a->prefix[plen] = '\0';
        a->prefix_len = plen;
        a->have_prefix = true;
    } else if (plen != a->prefix_len || memcmp(line, a->prefix, plen) != 0) {
        return "key prefix differs from the first line's";
    }
    if (!_reserve(a, conn, n)) {
        return "out of memory";
    }
    uint64_t *slot = &a->rows[conn].seq[n];
    if (*slot == 0) {
        a->keys++;
    }
    if (seq > *slot) {
        *slot = seq;
    }
    return NULL;
}

int
verify_acks_load(const char *path, struct verify_acks **out, char *err,
                 size_t errlen)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct verify_acks *a = calloc(1, sizeof(*a));
    char *buf = malloc(READ_CHUNK);
    if (a == NULL || buf == NULL) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto fail;
    }
    size_t have = 0;
    uint64_t lineno = 0;
    for (;;) {
        ssize_t got = read(fd, buf + have, READ_CHUNK - have);
        if (got < 0) {
            if (errno == EINTR) {
                continue;
            }
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
            goto fail;
        }
        have += (size_t)got;
        size_t off = 0;
        for (;;) {
            char *nl = memchr(buf + off, '\n', have - off);
            if (nl == NULL) {
                break;
            }
            size_t len = (size_t)(nl - (buf + off));
            lineno++;
            const char *why = len > LINE_MAX_LEN
                                  ? "line too long"
                                  : _add_line(a, buf + off, len);
            if (why != NULL) {
                snprintf(err, errlen, "%s:%" PRIu64 ": %s: \"%.*s\"", path,
                         lineno, why, (int)(len < 80 ? len : 80), buf + off);
                goto fail;
            }
            off = (size_t)(nl - buf) + 1;
        }
        memmove(buf, buf + off, have - off);
        have -= off;
        if (got == 0) {
            break;
        }
        if (have > LINE_MAX_LEN) {
            snprintf(err, errlen, "%s:%" PRIu64 ": line too long", path,
                     lineno + 1);
            goto fail;
        }
    }
    if (have > 0) {
        /* A log cut short mid-line: its complete lines still count. */
        lineno++;
        if (_add_line(a, buf, have) != NULL) {
            fprintf(stderr, "kura verify: %s:%" PRIu64 ": ignoring the "
                            "incomplete last line\n", path, lineno);
        }
    }
    free(buf);
    close(fd);
    *out = a;
    return 0;
fail:
    free(buf);
    verify_acks_free(a);
    close(fd);
    return -1;
}

uint64_t
verify_acks_keys(const struct verify_acks *a)
{
    return a->keys;
}

void
verify_acks_free(struct verify_acks *a)
{
    if (a == NULL) {
        return;
    }
    for (uint64_t i = 0; i < a->nrows; i++) {
        free(a->rows[i].seq);
    }
    free(a->rows);
    free(a);
}

/* ------------------------------------------------------------ checking */

/* Moves `c` to the first acknowledged key at or after it; false at end. */
static bool
_seek(const struct verify_acks *a, struct cursor *c)
{
    while (c->row < a->nrows) {
        const struct ack_row *row = &a->rows[c->row];
        while (c->n < row->len) {
            if (row->seq[c->n] != 0) {
                return true;
            }
            c->n++;
        }
        c->row++;
        c->n = 0;
    }
    return false;
}

static void
_advance(const struct verify_acks *a, struct cursor *c)
{
    c->n++;
    _seek(a, c);
}

/* Queues one multi-key get for the next keys on `c`, if any are left. */
static void
_queue_batch(struct vrun *v, struct vconn *c)
{
    if (v->exhausted || c->qlen == VERIFY_DEPTH) {
        return;
    }
    if (!_seek(v->a, &v->next)) {
        v->exhausted = true;
        return;
    }
    struct batch *bt = &c->q[(c->qhead + c->qlen) % VERIFY_DEPTH];
    bt->start = v->next;
    bt->count = 0;
    if (c->qlen == 0) {
        c->at = bt->start;
        c->accounted = 0;
    }
    client_append(&c->pc, "get", 3);
    while (bt->count < VERIFY_BATCH && !v->exhausted) {
        char *p = client_reserve(&c->pc, KEY_MAX_LEN + 4);
        p[0] = ' ';
        _format_key(v->a, v->next.row, v->next.n, p + 1);
        client_commit(&c->pc, 1 + strlen(p + 1));
        bt->count++;
        v->next.n++;
        v->exhausted = !_seek(v->a, &v->next);
    }
    client_append(&c->pc, "\r\n", 2);
    c->qlen++;
}

static void
_note_bad(struct vrun *v, enum verify_kind kind, const struct cursor *at,
          uint64_t stored, bool not_a_number)
{
    struct verify_report *r = v->r;
    if (kind == VERIFY_MISSING) {
        r->missing++;
    } else {
        r->stale++;
    }
    if (r->nbad < VERIFY_MAX_BAD) {
        struct verify_bad *b = &r->bad[r->nbad++];
        b->kind = kind;
        _format_key(v->a, at->row, at->n, b->key);
        b->acked = v->a->rows[at->row].seq[at->n];
        b->stored = stored;
        b->not_a_number = not_a_number;
    }
}

/* Parses a stored value: the digits of a sequence number, zero-padded. */
static bool
_parse_stored(const char *p, size_t len, uint64_t *seq)
{
    while (len > 1 && *p == '0') {
        p++;
        len--;
    }
    return len <= UTIL_U64_DIGITS && util_parse_uint(p, len, UINT64_MAX, seq);
}

/* Accounts the oldest batch's keys up to the one named in a VALUE reply
 * (skipped keys are missing) and classifies that one. */
static int
_on_value(struct vrun *v, struct vconn *c, const char *key, size_t klen,
          const char *data, size_t bytes)
{
    const struct batch *bt = &c->q[c->qhead];
    size_t plen;
    uint64_t row;
    uint64_t n;

    if (!_parse_key(key, klen, &plen, &row, &n) ||
        plen != v->a->prefix_len || memcmp(key, v->a->prefix, plen) != 0) {
        return -1;
    }
    while (c->accounted < bt->count &&
           (c->at.row != row || c->at.n != n)) {
        _note_bad(v, VERIFY_MISSING, &c->at, 0, false);
        c->accounted++;
        _advance(v->a, &c->at);
    }
    if (c->accounted == bt->count) {
        return -1; /* a key that was not asked for, or out of order */
    }
    uint64_t stored;
    uint64_t acked = v->a->rows[row].seq[n];
    if (!_parse_stored(data, bytes, &stored)) {
        _note_bad(v, VERIFY_STALE, &c->at, 0, true);
    } else if (stored < acked) {
        _note_bad(v, VERIFY_STALE, &c->at, stored, false);
    } else {
        v->r->ok++;
    }
    c->accounted++;
    _advance(v->a, &c->at);
    return 0;
}

/* Closes the oldest batch at its END: whatever was not returned is
 * missing. */
static void
_on_end(struct vrun *v, struct vconn *c)
{
    const struct batch *bt = &c->q[c->qhead];
    while (c->accounted < bt->count) {
        _note_bad(v, VERIFY_MISSING, &c->at, 0, false);
        c->accounted++;
        _advance(v->a, &c->at);
    }
    c->qhead = (c->qhead + 1) % VERIFY_DEPTH;
    c->qlen--;
    c->accounted = 0;
    if (c->qlen > 0) {
        c->at = c->q[c->qhead].start;
    }
}

/* Consumes complete replies from `c`'s read buffer. -1 on a bad reply. */
static int
_parse_replies(struct vrun *v, struct vconn *c)
{
    size_t off = 0;
    int rc = 0;

    while (c->qlen > 0) {
        const char *start = c->pc.in + off;
        size_t avail = c->pc.in_len - off;
        struct client_reply r;
        enum client_reply_kind k = client_reply_next(
            CLIENT_PROTO_TEXT, start, avail, VERIFY_RBUF_MAX, &r);
        if (k == CLIENT_REPLY_MORE) {
            break;
        }
        if (k == CLIENT_REPLY_LINE && client_reply_is(&r, "END")) {
            _on_end(v, c);
            off += r.len;
            continue;
        }
        if (k != CLIENT_REPLY_VALUE) {
            const char *nl = memchr(start, '\n', avail);
            size_t line = (size_t)(nl - start);
            snprintf(v->r->error, sizeof(v->r->error),
                     "unexpected reply: %.*s", (int)(line > 80 ? 80 : line),
                     start);
            rc = -1;
            break;
        }
        if (_on_value(v, c, r.key, r.klen, r.data, r.dlen) != 0) {
            snprintf(v->r->error, sizeof(v->r->error),
                     "reply for a key not asked for or out of order: %.*s",
                     (int)r.klen, r.key);
            rc = -1;
            break;
        }
        off += r.len;
    }
    client_consume(&c->pc, off);
    return rc;
}

static int
_on_readable(struct vrun *v, struct vconn *c)
{
    do {
        ssize_t n = client_fill(&c->pc);
        if (n == 0) {
            return 0;
        }
        if (n < 0) {
            snprintf(v->r->error, sizeof(v->r->error), "%s%s",
                     errno == ENOBUFS ? "a reply too large to buffer"
                                      : "connection ",
                     errno == ENOBUFS ? ""
                     : errno == 0     ? "closed by the server"
                                      : strerror(errno));
            return -1;
        }
        if (_parse_replies(v, c) != 0) {
            return -1;
        }
    } while (client_buffered(&c->pc)); /* TLS: read, not signalled */
    return 0;
}

static int
_on_writable(struct vrun *v, struct vconn *c)
{
    if (client_flush(&c->pc) < 0) {
        snprintf(v->r->error, sizeof(v->r->error), "send: %s",
                 strerror(errno));
        return -1;
    }
    return 0;
}

/* Drives the connections until every key is accounted; 0 or -1. */
static int
_drive(struct vrun *v, struct vconn *conns, int nconns)
{
    struct pollfd pfd[VERIFY_CONNS];

    for (;;) {
        bool busy = false;
        for (int i = 0; i < nconns; i++) {
            while (conns[i].qlen < VERIFY_DEPTH && !v->exhausted) {
                _queue_batch(v, &conns[i]);
            }
            pfd[i].fd = conns[i].pc.fd;
            pfd[i].events = POLLIN;
            if (client_pending(&conns[i].pc) > 0) {
                pfd[i].events |= POLLOUT;
            }
            busy = busy || conns[i].qlen > 0;
        }
        if (!busy) {
            return 0;
        }
        int n = poll(pfd, (nfds_t)nconns, VERIFY_IDLE_MS);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            snprintf(v->r->error, sizeof(v->r->error),
                     n == 0 ? "no reply for %d s" : "poll failed",
                     VERIFY_IDLE_MS / 1000);
            return -1;
        }
        for (int i = 0; i < nconns; i++) {
            if ((pfd[i].revents & POLLOUT) &&
                _on_writable(v, &conns[i]) != 0) {
                return -1;
            }
            if ((pfd[i].revents & (POLLIN | POLLERR | POLLHUP)) &&
                _on_readable(v, &conns[i]) != 0) {
                return -1;
            }
        }
    }
}

int
verify_server(const struct verify_acks *a, const char *host, int port,
              struct tls_ctx *tls, struct verify_report *r)
{
    struct vconn conns[VERIFY_CONNS];
    struct vrun v = {.a = a, .r = r};
    int rc = 0;

    memset(r, 0, sizeof(*r));
    memset(conns, 0, sizeof(conns));
    r->keys = a->keys;
    for (int i = 0; i < VERIFY_CONNS; i++) {
        client_init(&conns[i].pc, VERIFY_RBUF_INITIAL, VERIFY_RBUF_MAX);
    }
    char service[16];
    snprintf(service, sizeof(service), "%d", port);
    for (int i = 0; i < VERIFY_CONNS; i++) {
        char why[512];
        if (client_open(&conns[i].pc, host, service, 5000, tls, why,
                        sizeof(why)) != 0) {
            snprintf(r->error, sizeof(r->error), "%s", why);
            rc = -1;
            break;
        }
    }
    if (rc == 0) {
        rc = _drive(&v, conns, VERIFY_CONNS);
    }
    for (int i = 0; i < VERIFY_CONNS; i++) {
        client_close(&conns[i].pc);
    }
    r->failed = rc != 0;
    return rc;
}

/* ------------------------------------------------------------ command */

static void
_usage(FILE *out)
{
    fprintf(out, "usage: kura verify --ack-log FILE [--host H] --port P "
                 "[--port P2 ...]\n"
                 "                   " TLSOPT_USAGE "\n");
}

int
verify_cmd(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"ack-log", required_argument, NULL, 'a'},
        {"host", required_argument, NULL, 'h'},
        {"port", required_argument, NULL, 'p'},
        {"help", no_argument, NULL, '?'},
        TLSOPT_LONG_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    struct tlsopt tlsopt = {0};
    struct tls_ctx *tls = NULL;
    const char *log_path = NULL;
    const char *host = "127.0.0.1";
    int ports[MAX_PORTS];
    int nports = 0;
    int ch;
    uint64_t port;

    optind = 1;
    while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (ch) {
        case 'a': log_path = optarg; break;
        case 'h': host = optarg; break;
        case 'p':
            if (nports == MAX_PORTS ||
                !util_parse_uint(optarg, strlen(optarg), 65535, &port) ||
                port == 0) {
                fprintf(stderr, "kura verify: bad or too many --port\n");
                return 2;
            }
            ports[nports++] = (int)port;
            break;
        default:
            if (!tlsopt_parse(&tlsopt, ch, optarg)) {
                _usage(stderr);
                return 2;
            }
            break;
        }
    }
    if (log_path == NULL || nports == 0 || optind != argc) {
        _usage(stderr);
        return 2;
    }
    if (tlsopt_context(&tlsopt, false, &tls) != 0) {
        return 2;
    }
    struct verify_acks *a;
    char err[512];
    if (verify_acks_load(log_path, &a, err, sizeof(err)) != 0) {
        fprintf(stderr, "kura verify: %s\n", err);
        return 2;
    }
    int status = 0;
    struct verify_report *r = malloc(sizeof(*r));
    if (r == NULL) {
        verify_acks_free(a);
        return 1;
    }
    for (int i = 0; i < nports; i++) {
        if (verify_server(a, host, ports[i], tls, r) != 0) {
            printf("%s:%d: cannot verify: %s\n", host, ports[i], r->error);
            status = 1;
            continue;
        }
        printf("%s:%d: %" PRIu64 " keys, %" PRIu64 " ok, %" PRIu64
               " stale, %" PRIu64 " missing\n",
               host, ports[i], r->keys, r->ok, r->stale, r->missing);
        for (int j = 0; j < r->nbad; j++) {
            const struct verify_bad *b = &r->bad[j];
            if (b->kind == VERIFY_MISSING) {
                printf("  missing %s (acknowledged %" PRIu64 ")\n", b->key,
                       b->acked);
            } else if (b->not_a_number) {
                printf("  stale %s: value is not a sequence number "
                       "(acknowledged %" PRIu64 ")\n", b->key, b->acked);
            } else {
                printf("  stale %s: holds %" PRIu64 ", acknowledged %" PRIu64
                       "\n", b->key, b->stored, b->acked);
            }
        }
        if (r->stale + r->missing > (uint64_t)r->nbad) {
            printf("  ... and %" PRIu64 " more\n",
                   r->stale + r->missing - (uint64_t)r->nbad);
        }
        if (r->stale + r->missing > 0) {
            status = 1;
        }
    }
    free(r);
    verify_acks_free(a);
    tls_ctx_destroy(tls);
    return status;
}
