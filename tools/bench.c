/*
 * bench: a closed-loop load generator for the memcached text protocol.
 *
 * One thread drives every connection through epoll, which keeps the load
 * generator's own cost low and predictable on a small machine. Each
 * connection keeps `pipeline` requests in flight; a request's latency is
 * measured from the write that carried it to the read that completed its
 * reply. Latencies go into a log-linear histogram (about 3% resolution).
 *
 * Modes:
 *   default      persistent connections, sets and gets over a key space
 *   --connect    connect, one request, close, per request (seed 001)
 *
 * Used by `kura bench` and by tools/bench-compare.
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "hist.h"
#include "util.h"

#define RBUF_SIZE 65536

struct bconn {
    int fd;
    int idx;
    bool connecting;
    char *wbuf;
    size_t wlen;
    size_t woff;
    char rbuf[RBUF_SIZE];
    size_t rlen;
    int inflight;
    uint64_t sent_ns[64];   /* send time per in-flight request (FIFO) */
    bool is_get[64];
    int head;
};

struct bench {
    const struct bench_opts *o;
    int ep;
    struct sockaddr_storage addr;
    socklen_t addrlen;
    struct bconn *conns;
    struct hist hist;
    uint64_t ops;
    uint64_t errors;
    uint64_t connects;
    uint64_t rng;
    uint64_t started_ns;
    uint64_t stop_ns;
};

static uint64_t
_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t
_rand(struct bench *b)
{
    /* xorshift64*: cheap and good enough for picking keys. */
    b->rng ^= b->rng >> 12;
    b->rng ^= b->rng << 25;
    b->rng ^= b->rng >> 27;
    return b->rng * 2685821657736338717ULL;
}

static int
_resolve(struct bench *b)
{
    struct addrinfo hints;
    struct addrinfo *res;
    char port[16];

    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    snprintf(port, sizeof(port), "%d", b->o->port);
    if (getaddrinfo(b->o->host, port, &hints, &res) != 0) {
        return -1;
    }
    memcpy(&b->addr, res->ai_addr, res->ai_addrlen);
    b->addrlen = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

/* Appends one request for connection `c` to its write buffer. */
static void
_queue_request(struct bench *b, struct bconn *c)
{
    const struct bench_opts *o = b->o;
    char key[64];
    uint64_t id;
    bool get = o->read_pct > 0 && (int)(_rand(b) % 100) < o->read_pct;

    id = _rand(b) % o->keyspace;
    snprintf(key, sizeof(key), "%s%" PRIu64, o->prefix, id);
    size_t need = strlen(key) + o->value_size + 64;
    c->wbuf = realloc(c->wbuf, c->wlen + need);
    char *p = c->wbuf + c->wlen;
    int n;
    if (get) {
        n = sprintf(p, "get %s\r\n", key);
    } else {
        n = sprintf(p, "set %s 0 0 %zu\r\n", key, o->value_size);
        p += n;
        if (o->value_size == 10) {
            /* A last-login timestamp, as in seed 002. */
            snprintf(p, 11, "%010" PRIu64, (uint64_t)time(NULL));
        } else {
            memset(p, 'x', o->value_size);
        }
        p += o->value_size;
        memcpy(p, "\r\n", 2);
        n += (int)o->value_size + 2;
    }
    c->wlen += (size_t)n;
    int slot = (c->head + c->inflight) % 64;
    c->is_get[slot] = get;
    c->sent_ns[slot] = 0;
    c->inflight++;
}

static int _open_conn(struct bench *b, struct bconn *c);

static void
_close_conn(struct bench *b, struct bconn *c)
{
    if (c->fd >= 0) {
        epoll_ctl(b->ep, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
        c->fd = -1;
    }
    c->rlen = 0;
    c->wlen = c->woff = 0;
    c->inflight = 0;
    c->head = 0;
}

static void
_fill(struct bench *b, struct bconn *c)
{
    while (c->inflight < b->o->pipeline) {
        _queue_request(b, c);
    }
}

static int
_open_conn(struct bench *b, struct bconn *c)
{
    c->fd = socket(b->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (c->fd < 0) {
        return -1;
    }
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    c->connecting = true;
    if (connect(c->fd, (struct sockaddr *)&b->addr, b->addrlen) != 0 &&
        errno != EINPROGRESS) {
        close(c->fd);
        c->fd = -1;
        return -1;
    }
    struct epoll_event ev = {.events = EPOLLOUT | EPOLLIN, .data.ptr = c};
    epoll_ctl(b->ep, EPOLL_CTL_ADD, c->fd, &ev);
    b->connects++;
    _fill(b, c);
    return 0;
}

/*
 * Counts complete replies at the front of the read buffer. Returns the
 * number consumed, or -1 on an unexpected reply.
 */
static int
_parse_replies(struct bench *b, struct bconn *c, uint64_t now)
{
    size_t off = 0;
    int done = 0;

    while (c->inflight > 0) {
        char *start = c->rbuf + off;
        size_t avail = c->rlen - off;
        char *nl = memchr(start, '\n', avail);
        if (nl == NULL) {
            break;
        }
        size_t line = (size_t)(nl - start) + 1;
        bool get = c->is_get[c->head];
        size_t total = line;
        bool error = false;
        if (get) {
            if (line >= 5 && memcmp(start, "VALUE", 5) == 0) {
                /* VALUE key flags bytes\r\n data\r\n END\r\n */
                char *sp = memrchr(start, ' ', line);
                size_t bytes = sp != NULL ? strtoul(sp + 1, NULL, 10) : 0;
                total = line + bytes + 2 + 5;
                if (avail < total) {
                    break;
                }
                error = memcmp(start + line + bytes + 2, "END\r\n", 5) != 0;
            } else if (!(line == 5 && memcmp(start, "END\r\n", 5) == 0)) {
                error = true;
            }
        } else if (!(line == 8 && memcmp(start, "STORED\r\n", 8) == 0)) {
            error = true;
        }
        if (error) {
            b->errors++;
            fprintf(stderr, "bench: unexpected reply: %.*s", (int)line, start);
        }
        if (c->sent_ns[c->head] != 0) {
            hist_add(&b->hist, (now - c->sent_ns[c->head]) / 1000);
        }
        c->head = (c->head + 1) % 64;
        c->inflight--;
        off += total;
        done++;
        b->ops++;
    }
    memmove(c->rbuf, c->rbuf + off, c->rlen - off);
    c->rlen -= off;
    return done;
}

static void
_on_writable(struct bench *b, struct bconn *c, uint64_t now)
{
    c->connecting = false;
    while (c->woff < c->wlen) {
        ssize_t n = send(c->fd, c->wbuf + c->woff, c->wlen - c->woff,
                         MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN) {
                return;
            }
            b->errors++;
            _close_conn(b, c);
            return;
        }
        c->woff += (size_t)n;
    }
    /* Everything queued is on the wire: stamp the requests it carried. */
    for (int i = 0; i < c->inflight; i++) {
        int slot = (c->head + i) % 64;
        if (c->sent_ns[slot] == 0) {
            c->sent_ns[slot] = now;
        }
    }
    c->wlen = c->woff = 0;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    epoll_ctl(b->ep, EPOLL_CTL_MOD, c->fd, &ev);
}

static void
_on_readable(struct bench *b, struct bconn *c, uint64_t now)
{
    ssize_t n = recv(c->fd, c->rbuf + c->rlen, RBUF_SIZE - c->rlen, 0);
    if (n <= 0) {
        if (n < 0 && errno == EAGAIN) {
            return;
        }
        b->errors++;
        _close_conn(b, c);
        if (now < b->stop_ns) {
            _open_conn(b, c);
        }
        return;
    }
    c->rlen += (size_t)n;
    int done = _parse_replies(b, c, now);
    if (done == 0 || c->inflight > 0) {
        return;
    }
    if (b->o->connect_per_request) {
        _close_conn(b, c);
        if (now < b->stop_ns && (b->o->ops == 0 || b->ops < b->o->ops)) {
            if (_open_conn(b, c) != 0) {
                b->errors++;
            }
        }
        return;
    }
    if (now >= b->stop_ns || (b->o->ops != 0 && b->ops >= b->o->ops)) {
        return;
    }
    _fill(b, c);
    _on_writable(b, c, now);
    if (c->fd >= 0 && c->wlen > 0) {
        struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
        epoll_ctl(b->ep, EPOLL_CTL_MOD, c->fd, &ev);
    }
}

int
bench_run(const struct bench_opts *o, struct bench_result *r)
{
    struct bench b;
    struct epoll_event events[256];

    memset(&b, 0, sizeof(b));
    memset(r, 0, sizeof(*r));
    b.o = o;
    b.rng = 0x9e3779b97f4a7c15ULL ^ (uint64_t)getpid();
    b.ep = epoll_create1(0);
    if (b.ep < 0 || _resolve(&b) != 0) {
        fprintf(stderr, "bench: cannot resolve %s:%d\n", o->host, o->port);
        return -1;
    }
    b.conns = calloc((size_t)o->conns, sizeof(*b.conns));
    b.started_ns = _now_ns();
    b.stop_ns = o->duration_s > 0
                    ? b.started_ns + (uint64_t)(o->duration_s * 1e9)
                    : UINT64_MAX;
    for (int i = 0; i < o->conns; i++) {
        b.conns[i].idx = i;
        b.conns[i].fd = -1;
        if (_open_conn(&b, &b.conns[i]) != 0) {
            b.errors++;
        }
    }
    int live = o->conns;
    while (live > 0) {
        int n = epoll_wait(b.ep, events, 256, 100);
        uint64_t now = _now_ns();
        for (int i = 0; i < n; i++) {
            struct bconn *c = events[i].data.ptr;
            if (c->fd < 0) {
                continue;
            }
            if (events[i].events & (EPOLLERR | EPOLLHUP)) {
                if (c->inflight > 0 || c->connecting) {
                    b.errors++;
                }
                _close_conn(&b, c);
                if (now < b.stop_ns) {
                    _open_conn(&b, c);
                }
                continue;
            }
            if (events[i].events & EPOLLOUT) {
                _on_writable(&b, c, now);
            }
            if (c->fd >= 0 && (events[i].events & EPOLLIN)) {
                _on_readable(&b, c, now);
            }
        }
        bool finished = now >= b.stop_ns || (o->ops != 0 && b.ops >= o->ops);
        if (finished) {
            live = 0;
            for (int i = 0; i < o->conns; i++) {
                if (b.conns[i].fd >= 0 && b.conns[i].inflight > 0) {
                    live++;
                }
            }
            if (now >= b.stop_ns + 2000000000ULL) {
                break; /* replies overdue by 2 s: count them as errors */
            }
        }
    }
    uint64_t elapsed = _now_ns() - b.started_ns;
    for (int i = 0; i < o->conns; i++) {
        b.errors += (uint64_t)(b.conns[i].fd >= 0 ? b.conns[i].inflight : 0);
        _close_conn(&b, &b.conns[i]);
        free(b.conns[i].wbuf);
    }
    free(b.conns);
    close(b.ep);
    r->ops = b.ops;
    r->errors = b.errors;
    r->seconds = (double)elapsed / 1e9;
    r->ops_per_s = (double)b.ops / r->seconds;
    r->p50_us = hist_percentile(&b.hist, 50);
    r->p99_us = hist_percentile(&b.hist, 99);
    r->p999_us = hist_percentile(&b.hist, 99.9);
    r->max_us = b.hist.max;
    r->connects = b.connects;
    return 0;
}
