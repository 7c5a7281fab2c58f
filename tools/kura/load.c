/*
 * load: `kura load`, a pipelined bulk loader and record generator (see
 * load.h).
 *
 * One thread drives every connection through epoll, as bench.c does. The
 * reader peeks at the next line of the file buffer and hands it to the
 * connection its key hashes to; if that connection's window is full the
 * line waits there (and so does the reader) until replies free a slot.
 * Routing by key keeps each key's writes in file order, and the waiting
 * bounds memory: at most `window` requests per connection are ever
 * buffered.
 */
#include "load.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "client_reply.h"
#include "tlsopt.h"
#include "util.h"

#define FILE_BUF_INITIAL ((size_t)8 << 20)
#define FILE_BUF_MAX ((size_t)1 << 30)   /* longest line accepted */
#define WBUF_HIGH ((size_t)1 << 20)      /* stop queueing past this */
#define RBUF_SIZE 65536                  /* replies are short lines */
#define KEY_MAX_LEN 250
#define SILENCE_MS 30000                 /* no reply this long: give up */
#define MAX_REPORTED_ERRORS 5
#define GEN_BUF_SIZE ((size_t)4 << 20)
#define GEN_SPREAD_S (30 * 86400)        /* last-login times: 30 days */

struct lconn {
    struct client pc;
    uint64_t *lineno;        /* ring of `window`: line of each set in flight */
    int head;
    int inflight;
    bool want_out;           /* EPOLLOUT armed */
};

/* The next record of the file, parsed but not yet handed to a connection. */
struct record {
    bool valid;
    const char *key;
    size_t klen;
    const char *value;
    size_t vlen;
    size_t next;             /* offset of the line after it */
    uint64_t lineno;
};

struct loader {
    const struct load_opts *o;
    struct load_result *r;
    int ep;
    struct lconn *conns;
    int in;                  /* the file */
    char *fbuf;
    size_t fcap;
    size_t flen;
    size_t foff;
    bool eof;
    uint64_t lineno;         /* lines consumed so far */
    struct record rec;
    uint64_t errors_reported;
};

static void *
_xrealloc(void *p, size_t size)
{
    void *q = realloc(p, size);
    if (q == NULL) {
        fprintf(stderr, "kura load: out of memory (%zu bytes)\n", size);
        exit(1);
    }
    return q;
}

static uint64_t
_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void
_error(struct loader *ld, uint64_t lineno, const char *what, const char *p,
       size_t len)
{
    ld->r->errors++;
    if (ld->errors_reported++ < MAX_REPORTED_ERRORS) {
        fprintf(stderr, "kura load: %s:%" PRIu64 ": %s%.*s\n", ld->o->path,
                lineno, what, (int)(len > 120 ? 120 : len), p);
    }
}

/* A memcached key: 1..250 bytes, no spaces or control characters. */
static bool
_key_ok(const char *k, size_t len)
{
    if (len == 0 || len > KEY_MAX_LEN) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)k[i];
        if (ch <= ' ' || ch == 0x7f) {
            return false;
        }
    }
    return true;
}

/* Reads more of the file, keeping the unconsumed tail. -1 on error. */
static int
_fill(struct loader *ld)
{
    memmove(ld->fbuf, ld->fbuf + ld->foff, ld->flen - ld->foff);
    ld->flen -= ld->foff;
    ld->foff = 0;
    if (ld->flen == ld->fcap) {
        if (ld->fcap >= FILE_BUF_MAX) {
            fprintf(stderr, "kura load: %s:%" PRIu64 ": line longer than "
                            "%zu bytes\n", ld->o->path, ld->lineno + 1,
                    FILE_BUF_MAX);
            return -1;
        }
        ld->fcap *= 2;
        ld->fbuf = _xrealloc(ld->fbuf, ld->fcap);
    }
    for (;;) {
        ssize_t n = read(ld->in, ld->fbuf + ld->flen, ld->fcap - ld->flen);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            fprintf(stderr, "kura load: %s: %s\n", ld->o->path,
                    strerror(errno));
            return -1;
        }
        ld->eof = n == 0;
        ld->flen += (size_t)n;
        ld->r->bytes += (uint64_t)n;
        return 0;
    }
}

/*
 * Makes ld->rec the next well-formed record, skipping (and counting)
 * malformed lines. Returns 1 if there is one, 0 at the end of the file,
 * -1 on a read error.
 */
static int
_peek(struct loader *ld)
{
    while (!ld->rec.valid) {
        char *start = ld->fbuf + ld->foff;
        size_t avail = ld->flen - ld->foff;
        char *nl = memchr(start, '\n', avail);
        size_t len;
        size_t next;
        if (nl != NULL) {
            len = (size_t)(nl - start);
            next = ld->foff + len + 1;
        } else if (!ld->eof) {
            if (_fill(ld) != 0) {
                return -1;
            }
            continue;
        } else if (avail > 0) {
            len = avail;             /* a last line without its newline */
            next = ld->flen;
        } else {
            return 0;
        }
        ld->lineno++;
        ld->foff = next;
        if (len > 0 && start[len - 1] == '\r') {
            len--;
        }
        if (len == 0) {
            continue;
        }
        char *tab = memchr(start, '\t', len);
        if (tab == NULL) {
            _error(ld, ld->lineno, "no tab: ", start, len);
            continue;
        }
        size_t klen = (size_t)(tab - start);
        if (!_key_ok(start, klen)) {
            _error(ld, ld->lineno, "bad key: ", start, klen);
            continue;
        }
        ld->rec = (struct record){
            .valid = true,
            .key = start,
            .klen = klen,
            .value = tab + 1,
            .vlen = len - klen - 1,
            .next = next,
            .lineno = ld->lineno,
        };
    }
    return 1;
}

static void
_arm(struct loader *ld, struct lconn *c, bool out)
{
    if (c->want_out == out) {
        return;
    }
    struct epoll_event ev = {.events = EPOLLIN | (out ? EPOLLOUT : 0),
                             .data.ptr = c};
    epoll_ctl(ld->ep, EPOLL_CTL_MOD, c->pc.fd, &ev);
    c->want_out = out;
}

/* Sends what `c` has queued. -1 if the connection failed. */
static int
_flush(struct loader *ld, struct lconn *c)
{
    int rc = client_flush(&c->pc);
    if (rc < 0) {
        fprintf(stderr, "kura load: send: %s\n", strerror(errno));
        return -1;
    }
    _arm(ld, c, rc == 0);
    return 0;
}

/* Appends the current record to `c` as a set. */
static void
_queue(struct loader *ld, struct lconn *c, const struct record *rec)
{
    char head[KEY_MAX_LEN + 64];
    int hl = snprintf(head, sizeof(head), "set %.*s 0 %" PRId64 " %zu\r\n",
                      (int)rec->klen, rec->key, ld->o->exptime, rec->vlen);
    size_t need = (size_t)hl + rec->vlen + 2;
    char *p = client_reserve(&c->pc, need);
    memcpy(p, head, (size_t)hl);
    memcpy(p + hl, rec->value, rec->vlen);
    memcpy(p + (size_t)hl + rec->vlen, "\r\n", 2);
    client_commit(&c->pc, need);
    c->lineno[(c->head + c->inflight) % ld->o->window] = rec->lineno;
    c->inflight++;
    ld->r->records++;
}

/*
 * Hands records to their connections until the file ends or the next
 * record's connection is full, then sends. 1 at the end of the file,
 * 0 if waiting for room, -1 on a read or send error.
 */
static int
_feed(struct loader *ld)
{
    int rc;
    while ((rc = _peek(ld)) == 1) {
        struct record *rec = &ld->rec;
        struct lconn *c = &ld->conns[util_hash(rec->key, rec->klen) %
                                     (uint64_t)ld->o->conns];
        if (c->inflight == ld->o->window ||
            client_pending(&c->pc) >= WBUF_HIGH) {
            break;
        }
        _queue(ld, c, rec);
        rec->valid = false;
    }
    if (rc < 0) {
        return -1;
    }
    for (int i = 0; i < ld->o->conns; i++) {
        if (client_pending(&ld->conns[i].pc) > 0 &&
            !ld->conns[i].want_out && _flush(ld, &ld->conns[i]) != 0) {
            return -1;
        }
    }
    return rc == 0 ? 1 : 0;
}

/* Counts the complete replies in `c`'s read buffer: STORED, or an
 * error charged to the set's line. -1 if the replies are garbled. */
static int
_parse_replies(struct loader *ld, struct lconn *c)
{
    size_t off = 0;
    int rc = 0;
    while (c->inflight > 0) {
        struct client_reply r;
        enum client_reply_kind k = client_reply_next(
            CLIENT_PROTO_TEXT, c->pc.in + off, c->pc.in_len - off, RBUF_SIZE,
            &r);
        if (k == CLIENT_REPLY_MORE) {
            break;
        }
        if (k == CLIENT_REPLY_BAD) {
            fprintf(stderr, "kura load: garbled reply\n");
            rc = -1;
            break;
        }
        uint64_t lineno = c->lineno[c->head];
        if (k == CLIENT_REPLY_LINE && client_reply_is(&r, "STORED")) {
            ld->r->stored++;
        } else {
            _error(ld, lineno, "", r.line, r.line_len);
        }
        c->head = (c->head + 1) % ld->o->window;
        c->inflight--;
        off += r.len;
    }
    client_consume(&c->pc, off);
    return rc;
}

/* Reads replies from `c` (over TLS, also what the session holds). -1 if
 * the connection was lost or garbled. */
static int
_on_readable(struct loader *ld, struct lconn *c)
{
    do {
        ssize_t n = client_fill(&c->pc);
        if (n == 0) {
            return 0;
        }
        if (n < 0 && errno == ENOBUFS) {
            fprintf(stderr, "kura load: reply line too long\n");
            return -1;
        }
        if (n < 0) {
            fprintf(stderr, "kura load: connection %s with %d sets in "
                    "flight\n",
                    errno == 0 ? "closed by the server" : strerror(errno),
                    c->inflight);
            return -1;
        }
        if (_parse_replies(ld, c) != 0) {
            return -1;
        }
    } while (client_buffered(&c->pc));
    return 0;
}

static int
_connect_all(struct loader *ld)
{
    const struct load_opts *o = ld->o;
    for (int i = 0; i < o->conns; i++) {
        struct lconn *c = &ld->conns[i];
        c->lineno = _xrealloc(NULL, (size_t)o->window * sizeof(uint64_t));
        char why[512];
        char port[16];
        snprintf(port, sizeof(port), "%d", o->port);
        if (client_open(&c->pc, o->host, port, 5000, o->tls, why,
                        sizeof(why)) != 0) {
            fprintf(stderr, "kura load: %s\n", why);
            return -1;
        }
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        if (epoll_ctl(ld->ep, EPOLL_CTL_ADD, c->pc.fd, &ev) != 0) {
            return -1;
        }
    }
    return 0;
}

static int
_drive(struct loader *ld)
{
    struct epoll_event events[64];
    uint64_t heard_ns = _now_ns();

    for (;;) {
        int fed = _feed(ld);
        if (fed < 0) {
            return -1;
        }
        int busy = 0;
        for (int i = 0; i < ld->o->conns; i++) {
            busy += ld->conns[i].inflight;
        }
        if (fed == 1 && busy == 0) {
            return 0;
        }
        int n = epoll_wait(ld->ep, events, 64, 1000);
        if (n < 0 && errno != EINTR) {
            return -1;
        }
        uint64_t now = _now_ns();
        if (n <= 0) {
            if (now - heard_ns > (uint64_t)SILENCE_MS * 1000000u) {
                fprintf(stderr, "kura load: no reply for %d s with %d sets "
                                "in flight\n", SILENCE_MS / 1000, busy);
                return -1;
            }
            continue;
        }
        heard_ns = now;
        for (int i = 0; i < n; i++) {
            struct lconn *c = events[i].data.ptr;
            if ((events[i].events & EPOLLOUT) && _flush(ld, c) != 0) {
                return -1;
            }
            if ((events[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) &&
                _on_readable(ld, c) != 0) {
                return -1;
            }
        }
    }
}

int
load_run(const struct load_opts *o, struct load_result *r)
{
    struct loader ld;
    int rc = -1;

    memset(r, 0, sizeof(*r));
    memset(&ld, 0, sizeof(ld));
    ld.o = o;
    ld.r = r;
    ld.ep = -1;
    ld.in = strcmp(o->path, "-") == 0 ? STDIN_FILENO
                                      : open(o->path, O_RDONLY | O_CLOEXEC);
    if (ld.in < 0) {
        fprintf(stderr, "kura load: %s: %s\n", o->path, strerror(errno));
        return -1;
    }
    posix_fadvise(ld.in, 0, 0, POSIX_FADV_SEQUENTIAL);
    ld.fcap = FILE_BUF_INITIAL;
    ld.fbuf = _xrealloc(NULL, ld.fcap);
    ld.conns = calloc((size_t)o->conns, sizeof(*ld.conns));
    if (ld.conns == NULL) {
        goto out;
    }
    for (int i = 0; i < o->conns; i++) {
        client_init(&ld.conns[i].pc, RBUF_SIZE, RBUF_SIZE);
    }
    ld.ep = epoll_create1(EPOLL_CLOEXEC);
    uint64_t started = _now_ns();
    if (ld.ep >= 0 && _connect_all(&ld) == 0) {
        rc = _drive(&ld);
    }
    r->seconds = (double)(_now_ns() - started) / 1e9;
    r->records_per_s = r->seconds > 0 ? (double)r->stored / r->seconds : 0;
    for (int i = 0; i < o->conns; i++) {
        r->errors += (uint64_t)ld.conns[i].inflight; /* sent, never answered */
    }
out:
    if (ld.conns != NULL) {
        for (int i = 0; i < o->conns; i++) {
            client_close(&ld.conns[i].pc);
            free(ld.conns[i].lineno);
        }
        free(ld.conns);
    }
    if (ld.ep >= 0) {
        close(ld.ep);
    }
    if (ld.in != STDIN_FILENO) {
        close(ld.in);
    }
    free(ld.fbuf);
    return rc;
}

/* ------------------------------------------------------------ generate */

/* splitmix64's finaliser: a fixed, well-spread function of the id. */
static uint64_t
_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

int
load_generate(const char *path, uint64_t n, int64_t start_time,
              size_t value_size, char *err, size_t errlen)
{
    if (value_size > LOAD_VALUE_MAX) {
        snprintf(err, errlen, "values of at most %zu bytes", LOAD_VALUE_MAX);
        return -1;
    }
    size_t pad = value_size > 10 ? value_size - 10 : 0;
    if (start_time < GEN_SPREAD_S || start_time > 9999999999LL) {
        snprintf(err, errlen, "start time %" PRId64 " out of range",
                 start_time);
        return -1;
    }
    bool to_stdout = strcmp(path, "-") == 0;
    int fd = to_stdout ? STDOUT_FILENO
                       : open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                              0644);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    size_t bufsize = GEN_BUF_SIZE + pad;
    char *buf = malloc(bufsize);
    if (buf == NULL) {
        snprintf(err, errlen, "out of memory");
        if (!to_stdout) {
            close(fd);
        }
        return -1;
    }
    size_t len = 0;
    int rc = 0;
    for (uint64_t id = 0; id < n && rc == 0; id++) {
        /* "u:" + up to 20 digits + tab + 10 digits + newline */
        if (len + 64 + pad > bufsize) {
            rc = util_write_all(fd, buf, len);
            len = 0;
        }
        char *p = buf + len;
        p[0] = 'u';
        p[1] = ':';
        size_t k = 2 + util_u64_to_dec(id, p + 2);
        p[k++] = '\t';
        uint64_t t = (uint64_t)start_time - _mix(id) % GEN_SPREAD_S;
        for (int d = 9; d >= 0; d--) {
            p[k + (size_t)d] = (char)('0' + t % 10);
            t /= 10;
        }
        k += 10;
        memset(p + k, 'x', pad);
        k += pad;
        p[k++] = '\n';
        len += k;
    }
    if (rc == 0 && len > 0) {
        rc = util_write_all(fd, buf, len);
    }
    /* Written back now, not by the kernel 30 s later in the middle of
     * the load being measured, where it delays every log sync. */
    if (rc == 0 && !to_stdout) {
        rc = fdatasync(fd);
    }
    if (rc != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
    }
    free(buf);
    if (!to_stdout && close(fd) != 0 && rc == 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        rc = -1;
    }
    return rc;
}

/* ------------------------------------------------------------ command */

static void
_usage(FILE *out)
{
    fprintf(out, "usage: kura load FILE [--host H] [--port P] [--conns N] "
                 "[--window W] [--exptime S]\n"
                 "                 " TLSOPT_USAGE "\n"
                 "       kura load --generate N --out FILE "
                 "[--start-time T] [--value-size B]\n");
}

int
load_cmd(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"host", required_argument, NULL, 'h'},
        {"port", required_argument, NULL, 'p'},
        {"conns", required_argument, NULL, 'c'},
        {"window", required_argument, NULL, 'w'},
        {"exptime", required_argument, NULL, 'e'},
        {"generate", required_argument, NULL, 'g'},
        {"out", required_argument, NULL, 'o'},
        {"start-time", required_argument, NULL, 's'},
        {"value-size", required_argument, NULL, 'v'},
        TLSOPT_LONG_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    struct tlsopt tlsopt = {0};
    struct load_opts o = {
        .host = "127.0.0.1",
        .port = 1978,
        .conns = 4,
        .window = 256,
    };
    const char *out = NULL;
    uint64_t generate = 0;
    uint64_t value_size = 10;
    bool generating = false;
    int64_t start_time = util_now_s();
    bool loading_opts = false;
    uint64_t v;
    int ch;

    optind = 1;
    while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        const char *a = optarg;
        size_t al = a != NULL ? strlen(a) : 0;
        bool ok = true;
        switch (ch) {
        case 'h': o.host = a; loading_opts = true; break;
        case 'p':
            ok = util_parse_uint(a, al, 65535, &v) && v > 0;
            o.port = (int)v;
            loading_opts = true;
            break;
        case 'c':
            ok = util_parse_uint(a, al, 1024, &v) && v > 0;
            o.conns = (int)v;
            loading_opts = true;
            break;
        case 'w':
            ok = util_parse_uint(a, al, 65536, &v) && v > 0;
            o.window = (int)v;
            loading_opts = true;
            break;
        case 'e':
            ok = util_parse_int(a, al, -1, INT32_MAX, &o.exptime);
            loading_opts = true;
            break;
        case 'g':
            ok = util_parse_uint(a, al, UINT64_MAX, &generate);
            generating = true;
            break;
        case 'o': out = a; break;
        case 's': ok = util_parse_int(a, al, 0, INT64_MAX, &start_time); break;
        case 'v':
            ok = util_parse_uint(a, al, LOAD_VALUE_MAX, &value_size) &&
                 value_size >= 10;
            break;
        default:
            ok = tlsopt_parse(&tlsopt, ch, a);
            loading_opts = loading_opts || ok;
            break;
        }
        if (!ok) {
            if (ch != '?') {
                fprintf(stderr, "kura load: bad value '%s'\n", a);
            }
            _usage(stderr);
            return 2;
        }
    }
    char err[512];
    if (generating) {
        if (out == NULL || optind != argc || loading_opts) {
            _usage(stderr);
            return 2;
        }
        if (load_generate(out, generate, start_time, (size_t)value_size, err,
                          sizeof(err)) != 0) {
            fprintf(stderr, "kura load: %s\n", err);
            return 1;
        }
        return 0;
    }
    if (optind != argc - 1 || out != NULL) {
        _usage(stderr);
        return 2;
    }
    o.path = argv[optind];
    if (tlsopt_context(&tlsopt, false, &o.tls) != 0) {
        return 2;
    }
    struct load_result r;
    int rc = load_run(&o, &r);
    tls_ctx_destroy(o.tls);
    printf("loaded %" PRIu64 " of %" PRIu64 " records (%.1f MB) in %.2f s: "
           "%.0f records/s, %" PRIu64 " errors\n",
           r.stored, r.records, (double)r.bytes / 1e6, r.seconds,
           r.records_per_s, r.errors);
    return rc == 0 && r.errors == 0 ? 0 : 1;
}
