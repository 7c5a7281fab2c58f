/*
 * bench: a closed-loop load generator for memcached's text, binary and
 * meta protocols (--proto; the wire formats are in bench_wire.c, the keys
 * and values in bench_keys.c, the ack log in bench_ack.c, the connections
 * are client.h's).
 *
 * One thread drives every connection through epoll, which keeps the load
 * generator's own cost low and predictable on a small machine. Each
 * connection keeps `pipeline` requests in flight; a request's latency is
 * measured from the write that carried it to the read that completed its
 * reply. Latencies go into a log-linear histogram (about 3% resolution).
 *
 * Modes:
 *   default      persistent connections, sets and gets over a key space
 *   --connect    connect, one request, close, per request (seed 001);
 *                with --quit the client sends "quit" and waits for the
 *                server to close, as memcached clients do on shutdown, so
 *                the TIME_WAIT socket stays on the server's side
 *   --multiget N every get asks for N keys in one request: text
 *                "get k1 .. kN", binary N quiet getkq and a noop, meta N
 *                "mg <key> v q k" and "mn"; a miss answers nothing, and
 *                the request is done at the end marker
 *   --zipf S     keys drawn from a Zipf distribution of exponent S (0.99 in
 *                YCSB) over the key space, computed as Gray et al.'s
 *                "Quickly generating billion-record synthetic databases"
 *                does; rank r is key mix(r) mod keyspace, so the hot keys
 *                are scattered over the database, not stored side by side
 *   --fresh N    every set stores a key never stored before: <prefix>N,
 *                <prefix>N+1, ... (inserts into a database holding 0..N-1)
 *   --tls        each connection is TLS (tls.h), its handshake driven by the
 *                same epoll loop and counted as part of opening it; with
 *                --connect each new connection offers the session the last
 *                one was given, so the server can resume it
 *   --ack-log    own keys: connection i writes only <prefix>c<i>:<n>, each
 *                value is the write's sequence number on that connection,
 *                and every acknowledged write (STORED, HD, a binary
 *                success) is logged as "<key> <seq>" so `kura verify`
 *                can prove none was lost (see verify.c)
 *
 * Memory per connection stays small so that 20,000 connections are cheap:
 * the read buffer starts at 1 KiB and grows only while replies need it
 * (a reply larger than the buffer, or reads that keep filling it).
 *
 * Connections open through one queue, at most MAX_HANDSHAKES at a time.
 * Opening 20,000 at once would overflow the kernel's queue of half-open
 * connections; it then drops handshakes, the clients retransmit after 1,
 * 3, 7 s, and a few hundred requests wait seconds for reasons that have
 * nothing to do with the server. A connection that fails waits RETRY_NS
 * before it is tried again, so a bench against a server that is down does
 * not spin.
 *
 * Used by `kura bench` and by tools/bench-compare.
 */
#include "bench.h"

#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench_ack.h"
#include "bench_keys.h"
#include "client.h"
#include "daemon.h"
#include "hist.h"
#include "util.h"

#define MAX_PIPELINE 64
#define RBUF_INITIAL 1024
#define RBUF_STREAMING 65536        /* grow to this while reads fill it */
#define RBUF_MAX ((size_t)1 << 30)  /* a reply larger than this is garbage */
#define FD_MARGIN 16                /* stdio, epoll, ack log, lag probe */
#define KEY_CAP BENCH_KEY_CAP
#define ACK_FLUSH_NS 1000000000ULL  /* a killed bench loses at most 1 s */
#define RETRY_NS 100000000ULL       /* a failed connect waits this long */
#define MAX_HANDSHAKES 1024         /* under tcp_max_syn_backlog (2048) */
#define MAX_COMPLAINTS 20           /* unexpected replies printed per run */
#define WARMUP_WAIT_NS 120000000000ULL /* longest wait for every connection
                                          to open after --warmup */

/* One request in flight. */
struct bslot {
    uint64_t sent_ns;       /* when the write carrying it completed */
    uint64_t seq;           /* own-keys mode: the write's sequence number */
    enum bench_kind kind;
};

struct bconn {
    struct client cl;       /* the connection (--tls: a TLS session); its
                             * read buffer made on first read, grown on
                             * demand */
    int idx;
    bool connecting;        /* TCP connect, then TLS handshake, in progress */
    int inflight;
    struct bslot *slots;    /* in-flight requests, a ring of `pipeline` */
    int head;
    uint64_t last_seq;      /* own-keys mode: last sequence number issued */
    uint64_t open_ns;       /* queued: open no sooner than this */
    bool queued;            /* waiting in the open queue */
    bool quitting;          /* sent "quit": waiting for the server's close */
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
    uint64_t tls_handshakes;
    uint64_t tls_resumed;
    uint64_t keys;
    uint64_t hits;
    uint64_t complaints;    /* unexpected replies printed so far */
    struct bench_keys keys_gen; /* which keys requests carry */
    uint64_t started_ns;
    uint64_t stop_ns;
    uint64_t warm_ns;       /* counting starts here (0: at once) */
    int *open_queue;        /* ring of connection indexes to open */
    size_t queue_head;
    size_t queue_len;
    int handshakes;         /* connections still connecting */
    struct bslot *slots;    /* every connection's ring, one allocation */
    bool own_keys;          /* --ack-log mode */
    size_t value_size;      /* o->value_size, at least 10 in own-keys mode */
    struct bench_ack ack;    /* --ack-log: fd -1 otherwise */
    uint64_t next_fresh;    /* --fresh: the next key to insert */
};

static uint64_t
_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* This thread's user and system CPU so far, in microseconds. */
static uint64_t
_cpu_us(void)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
           (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/*
 * Raises the open file limit, soft to hard (and the hard limit too when
 * privileged), so that `conns` sockets fit. Returns 0, or -1 after saying
 * what to do.
 */
static int
_fit_fd_limit(int conns)
{
    uint64_t need = (uint64_t)conns + FD_MARGIN;
    uint64_t want = need;
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max != RLIM_INFINITY &&
        (uint64_t)rl.rlim_max > want) {
        want = (uint64_t)rl.rlim_max;
    }
    uint64_t got = daemon_raise_nofile(want);
    if (got < need) {
        fprintf(stderr,
                "bench: %d connections need %" PRIu64 " open files but the "
                "limit is %" PRIu64 " and its hard limit cannot be raised "
                "here; raise it first (e.g. `ulimit -n %" PRIu64 "` as root, "
                "or LimitNOFILE / limits.conf) or use fewer --conns\n",
                conns, need, got, need);
        return -1;
    }
    return 0;
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

/* Writes the key a get reads to `key` (KEY_CAP bytes); returns its length.
 * In own-keys mode it is one of the keys this connection has written. */
static size_t
_read_key(struct bench *b, const struct bconn *c, char *key)
{
    const struct bench_opts *o = b->o;
    if (b->own_keys) {
        uint64_t span = c->last_seq < o->own_keys ? c->last_seq : o->own_keys;
        return bench_keys_own(&b->keys_gen, c->idx,
                              bench_keys_rand(&b->keys_gen) %
                                  (span > 0 ? span : 1),
                              key);
    }
    return bench_keys_name(&b->keys_gen, bench_keys_index(&b->keys_gen),
                           key);
}

/* Appends a set of `key` for connection `c`; `seq` is its own-keys
 * sequence number (0 outside that mode). */
static void
_queue_set(struct bench *b, struct bconn *c, const char *key, size_t klen,
           uint64_t seq)
{
    enum client_proto proto = b->o->proto;
    /* A sequence number wider than the value widens just that value. */
    size_t vsize = b->value_size;
    if (seq != 0 && bench_keys_dec_len(seq) > vsize) {
        vsize = bench_keys_dec_len(seq);
    }
    char *start = client_reserve(&c->cl, klen + vsize + BENCH_WIRE_OVERHEAD);
    char *p = start;
    p += bench_wire_set_head(proto, p, key, klen, vsize);
    if (b->own_keys) {
        bench_keys_put_seq(p, vsize, seq);
    } else if (vsize == 10) {
        /* A last-login timestamp, as in seed 002. */
        char ts[11];
        snprintf(ts, sizeof(ts), "%010" PRIu64, (uint64_t)time(NULL));
        memcpy(p, ts, 10);
    } else {
        memset(p, 'x', vsize);
    }
    p += vsize;
    p += bench_wire_set_tail(proto, p);
    client_commit(&c->cl, (size_t)(p - start));
}

/* Appends one request for connection `c` to its write buffer. */
static void
_queue_request(struct bench *b, struct bconn *c)
{
    const struct bench_opts *o = b->o;
    char key[KEY_CAP];
    size_t klen;
    uint64_t seq = 0;
    bool get = o->read_pct > 0 &&
               (int)(bench_keys_rand(&b->keys_gen) % 100) < o->read_pct;
    enum bench_kind kind = BENCH_KIND_SET;

    if (!get) {
        if (b->own_keys) {
            seq = ++c->last_seq;
            klen = bench_keys_own(&b->keys_gen, c->idx,
                                  (seq - 1) % o->own_keys, key);
        } else {
            uint64_t k = o->fresh ? b->next_fresh++
                                  : bench_keys_index(&b->keys_gen);
            klen = bench_keys_name(&b->keys_gen, k, key);
        }
        _queue_set(b, c, key, klen, seq);
    } else if (o->multiget == 0) {
        kind = BENCH_KIND_GET;
        klen = _read_key(b, c, key);
        char *p = client_reserve(&c->cl, klen + BENCH_WIRE_OVERHEAD);
        client_commit(&c->cl, bench_wire_get(o->proto, p, key, klen));
    } else {
        kind = BENCH_KIND_MGET;
        char *start = client_reserve(&c->cl, (size_t)(o->multiget + 1) *
                                                 (KEY_CAP +
                                                  BENCH_WIRE_OVERHEAD));
        char *p = start;
        p += bench_wire_mget_begin(o->proto, p);
        for (int i = 0; i < o->multiget; i++) {
            klen = _read_key(b, c, key);
            p += bench_wire_mget_key(o->proto, p, key, klen);
        }
        p += bench_wire_mget_end(o->proto, p);
        client_commit(&c->cl, (size_t)(p - start));
    }
    struct bslot *slot = &c->slots[(c->head + c->inflight) % o->pipeline];
    slot->kind = kind;
    slot->seq = seq;
    slot->sent_ns = 0;
    c->inflight++;
}

static int _open_conn(struct bench *b, struct bconn *c);

static void
_close_conn(struct bench *b, struct bconn *c)
{
    if (c->cl.fd >= 0) {
        epoll_ctl(b->ep, EPOLL_CTL_DEL, c->cl.fd, NULL);
    }
    client_disconnect(&c->cl); /* empties both buffers */
    if (c->connecting) {
        c->connecting = false;
        b->handshakes--;
    }
    c->inflight = 0;
    c->head = 0;
    c->quitting = false;
}

static bool
_run_over(const struct bench *b, uint64_t now)
{
    return now >= b->stop_ns || (b->o->ops != 0 && b->ops >= b->o->ops);
}

/* Queues `c` to be opened at `when` (a connection is queued only once). */
static void
_queue_open(struct bench *b, struct bconn *c, uint64_t when)
{
    if (!c->queued) {
        size_t tail = (b->queue_head + b->queue_len) % (size_t)b->o->conns;
        b->open_queue[tail] = c->idx;
        b->queue_len++;
        c->queued = true;
    }
    c->open_ns = when;
}

/*
 * Opens queued connections that are due, while fewer than MAX_HANDSHAKES
 * are still connecting. Retries are due RETRY_NS after their
 * failure, so the queue is close to time order; an entry behind a later
 * one waits at most RETRY_NS longer than it asked.
 */
static void
_open_due(struct bench *b, uint64_t now)
{
    while (b->queue_len > 0 && b->handshakes < MAX_HANDSHAKES) {
        struct bconn *c = &b->conns[b->open_queue[b->queue_head]];
        if (c->open_ns > now) {
            break;
        }
        b->queue_head = (b->queue_head + 1) % (size_t)b->o->conns;
        b->queue_len--;
        c->queued = false;
        if (_run_over(b, now)) {
            continue;
        }
        if (_open_conn(b, c) != 0) {
            b->errors++;
            _queue_open(b, c, now + RETRY_NS);
        }
    }
}

/*
 * Replaces a closed connection, unless the run is over; after a failure
 * to connect (`backoff`) only RETRY_NS later.
 */
static void
_reopen(struct bench *b, struct bconn *c, uint64_t now, bool backoff)
{
    if (!_run_over(b, now)) {
        _queue_open(b, c, backoff ? now + RETRY_NS : now);
        _open_due(b, now);
    }
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
    if (client_start(&c->cl, (struct sockaddr *)&b->addr, b->addrlen,
                     b->o->tls, b->o->host) != 0) {
        return -1;
    }
    c->connecting = true;
    struct epoll_event ev = {.events = EPOLLOUT | EPOLLIN, .data.ptr = c};
    epoll_ctl(b->ep, EPOLL_CTL_ADD, c->cl.fd, &ev);
    b->connects++;
    b->handshakes++;
    _fill(b, c);
    return 0;
}

/* Prints an unexpected reply, up to MAX_COMPLAINTS in a run. */
static void
_complain(struct bench *b, const char *what)
{
    b->complaints++;
    if (b->complaints <= MAX_COMPLAINTS) {
        fprintf(stderr, "bench: %s\n", what);
    } else if (b->complaints == MAX_COMPLAINTS + 1) {
        fprintf(stderr, "bench: further unexpected replies not shown\n");
    }
}

/*
 * Consumes the complete replies at the front of the read buffer. Returns
 * the number consumed, or -1 when a reply lost the framing (the caller
 * closes the connection).
 */
static int
_parse_replies(struct bench *b, struct bconn *c, uint64_t now)
{
    const struct bench_opts *o = b->o;
    size_t off = 0;
    int done = 0;
    char err[160];

    while (c->inflight > 0) {
        struct bslot *slot = &c->slots[c->head];
        size_t used = 0;
        uint32_t hits = 0;
        enum bench_wire_status st = bench_wire_reply(
            o->proto, slot->kind, c->cl.in + off, c->cl.in_len - off, &used,
            &hits,
            err, sizeof(err));
        if (st == BENCH_WIRE_MORE) {
            break;
        }
        if (st == BENCH_WIRE_LOST) {
            _complain(b, err);
            return -1;
        }
        if (st == BENCH_WIRE_BAD) {
            b->errors++;
            _complain(b, err);
        } else if (slot->kind == BENCH_KIND_SET && b->own_keys) {
            if (!bench_ack_append(&b->ack, &b->keys_gen, c->idx,
                                  (slot->seq - 1) % o->own_keys, slot->seq,
                                  now)) {
                b->errors++;
            }
        }
        if (slot->kind != BENCH_KIND_SET) {
            b->keys += slot->kind == BENCH_KIND_MGET ? (uint64_t)o->multiget
                                                     : 1;
            b->hits += hits;
        }
        if (slot->sent_ns != 0) {
            hist_add(&b->hist, (now - slot->sent_ns) / 1000);
        }
        c->head = (c->head + 1) % o->pipeline;
        c->inflight--;
        off += used;
        done++;
        b->ops++;
    }
    client_consume(&c->cl, off);
    return done;
}

/*
 * Advances `c`'s TLS handshake. Returns true once it is complete; false
 * while it waits (epoll set for what it waits on) or after it failed (the
 * connection closed and queued again, with the backoff of a failed
 * connect).
 */
static bool
_tls_step(struct bench *b, struct bconn *c, uint64_t now)
{
    enum client_step st = client_handshake(&c->cl);
    if (st == CLIENT_STEP_DONE) {
        b->tls_handshakes++;
        b->tls_resumed += client_resumed(&c->cl) ? 1 : 0;
        struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT,
                                 .data.ptr = c};
        epoll_ctl(b->ep, EPOLL_CTL_MOD, c->cl.fd, &ev);
        return true;
    }
    if (st == CLIENT_STEP_WANT_READ || st == CLIENT_STEP_WANT_WRITE) {
        struct epoll_event ev = {
            .events = st == CLIENT_STEP_WANT_READ ? EPOLLIN : EPOLLOUT,
            .data.ptr = c};
        epoll_ctl(b->ep, EPOLL_CTL_MOD, c->cl.fd, &ev);
        return false;
    }
    char why[256];
    char msg[300];
    client_error(&c->cl, why, sizeof(why));
    snprintf(msg, sizeof(msg), "TLS handshake failed: %s", why);
    _complain(b, msg);
    b->errors++;
    _close_conn(b, c); /* counts the open as over */
    _reopen(b, c, now, true);
    return false;
}

static void
_on_writable(struct bench *b, struct bconn *c, uint64_t now)
{
    bool was_connecting = c->connecting;
    if (was_connecting) {
        if (!client_established(&c->cl) && !_tls_step(b, c, now)) {
            return;
        }
        c->connecting = false;
        b->handshakes--;
    }
    int sent = client_flush(&c->cl);
    if (sent == 0) {
        return;
    }
    if (sent < 0) {
        b->errors++;
        _close_conn(b, c);
        _reopen(b, c, now, was_connecting);
        return;
    }
    /* Everything queued is on the wire: stamp the requests it carried. */
    for (int i = 0; i < c->inflight; i++) {
        struct bslot *slot = &c->slots[(c->head + i) % b->o->pipeline];
        if (slot->sent_ns == 0) {
            slot->sent_ns = now;
        }
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    epoll_ctl(b->ep, EPOLL_CTL_MOD, c->cl.fd, &ev);
}

/*
 * Reads once from `c` and handles the replies. Returns true if it read
 * something and `c` is still open.
 */
static bool
_read_once(struct bench *b, struct bconn *c, uint64_t now)
{
    ssize_t n = client_fill(&c->cl);
    if (n < 0 && errno == ENOBUFS) {
        fprintf(stderr, "bench: a reply larger than %zu bytes\n", RBUF_MAX);
        b->errors++;
        _close_conn(b, c);
        return false;
    }
    if (n < 0 && errno == 0 && c->quitting) {
        _close_conn(b, c);
        _reopen(b, c, now, false);
        return false;
    }
    if (n <= 0) {
        if (n == 0) {
            return false;
        }
        bool never_connected = c->connecting;
        b->errors++;
        _close_conn(b, c);
        _reopen(b, c, now, never_connected);
        return false;
    }
    bool filled = c->cl.in_len == c->cl.in_cap;
    int done = _parse_replies(b, c, now);
    if (done < 0) {
        /* The lost reply and every one behind it count as errors. */
        b->errors += (uint64_t)c->inflight;
        _close_conn(b, c);
        _reopen(b, c, now, false);
        return false;
    }
    if (filled && (c->cl.in_len == c->cl.in_cap ||
                   c->cl.in_cap < RBUF_STREAMING)) {
        /* Still full (an incomplete reply fills it), or the last read
         * filled it: a larger buffer saves system calls. */
        client_grow(&c->cl);
    }

    if (done == 0 || c->inflight > 0) {
        return true;
    }
    if (b->o->connect_per_request && b->o->quit) {
        /* A quit (at most a header) always fits an idle socket's send
         * buffer. */
        char quit[BENCH_WIRE_OVERHEAD];
        size_t qlen = bench_wire_quit(b->o->proto, quit);
        client_append(&c->cl, quit, qlen);
        if (client_flush(&c->cl) == 1) {
            c->quitting = true;
            return true;
        }
        b->errors++;
    }
    if (b->o->connect_per_request) {
        _close_conn(b, c);
        _reopen(b, c, now, false);
        return false;
    }
    if (_run_over(b, now)) {
        return true;
    }
    _fill(b, c);
    _on_writable(b, c, now);
    if (c->cl.fd >= 0 && client_pending(&c->cl) > 0) {
        struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
        epoll_ctl(b->ep, EPOLL_CTL_MOD, c->cl.fd, &ev);
    }
    return c->cl.fd >= 0;
}

static void
_on_readable(struct bench *b, struct bconn *c, uint64_t now)
{
    if (c->connecting) {
        /* Only a TLS handshake reads before it is connected. */
        _on_writable(b, c, now);
        return;
    }
    /* Over TLS the session may hold records it has already read from the
     * socket, which epoll will not report again. */
    while (_read_once(b, c, now) && client_buffered(&c->cl)) {
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
    bench_keys_init(&b.keys_gen, 0x9e3779b97f4a7c15ULL ^ (uint64_t)getpid(),
                    o->keyspace, o->zipf, o->prefix);
    b.ack.fd = -1;
    b.value_size = o->value_size;
    b.next_fresh = o->fresh_from;
    if (o->pipeline > MAX_PIPELINE || _fit_fd_limit(o->conns) != 0) {
        return -1;
    }
    b.ep = epoll_create1(EPOLL_CLOEXEC);
    if (b.ep < 0 || _resolve(&b) != 0) {
        fprintf(stderr, "bench: cannot resolve %s:%d\n", o->host, o->port);
        if (b.ep >= 0) {
            close(b.ep);
        }
        return -1;
    }
    if (o->ack_log != NULL) {
        b.own_keys = true;
        if (b.value_size < 10) {
            b.value_size = 10;
        }
        if (o->own_keys == 0 || strlen(o->prefix) + 2 * UTIL_U64_DIGITS + 2 >
                                    KEY_CAP - 1) {
            fprintf(stderr, "bench: own keys need --own-keys >= 1 and a "
                            "shorter --prefix\n");
            close(b.ep);
            return -1;
        }
        if (bench_ack_open(&b.ack, o->ack_log, _now_ns()) != 0) {
            close(b.ep);
            return -1;
        }
    }
    b.conns = calloc((size_t)o->conns, sizeof(*b.conns));
    b.open_queue = calloc((size_t)o->conns, sizeof(*b.open_queue));
    b.slots = calloc((size_t)o->conns * (size_t)o->pipeline,
                     sizeof(*b.slots));
    if (b.conns == NULL || b.open_queue == NULL || b.slots == NULL) {
        fprintf(stderr, "bench: out of memory for %d connections\n",
                o->conns);
        exit(1);
    }
    b.started_ns = _now_ns();
    b.ack.flushed_ns = b.started_ns;
    uint64_t warmup = o->duration_s > 0 ? (uint64_t)(o->warmup_s * 1e9) : 0;
    b.warm_ns = warmup > 0 ? b.started_ns + warmup : 0;
    b.stop_ns = o->duration_s > 0 && warmup == 0
                    ? b.started_ns + (uint64_t)(o->duration_s * 1e9)
                    : UINT64_MAX;
    uint64_t counted_from = b.started_ns;
    uint64_t cpu_from = _cpu_us();
    for (int i = 0; i < o->conns; i++) {
        b.conns[i].idx = i;
        client_init(&b.conns[i].cl, RBUF_INITIAL, RBUF_MAX);
        b.conns[i].slots = &b.slots[(size_t)i * (size_t)o->pipeline];
        _queue_open(&b, &b.conns[i], b.started_ns);
    }
    _open_due(&b, b.started_ns);
    int live = o->conns;
    uint64_t finished_ns = 0;
    while (live > 0) {
        int n = epoll_wait(b.ep, events, 256, 100);
        uint64_t now = _now_ns();
        for (int i = 0; i < n; i++) {
            struct bconn *c = events[i].data.ptr;
            if (c->cl.fd < 0) {
                continue;
            }
            if (events[i].events & (EPOLLERR | EPOLLHUP)) {
                bool never_connected = c->connecting;
                if (c->inflight > 0 || c->connecting) {
                    b.errors++;
                }
                _close_conn(&b, c);
                _reopen(&b, c, now, never_connected);
                continue;
            }
            if (events[i].events & EPOLLOUT) {
                _on_writable(&b, c, now);
            }
            if (c->cl.fd >= 0 && (events[i].events & EPOLLIN)) {
                _on_readable(&b, c, now);
            }
        }
        _open_due(&b, now);
        if (b.warm_ns != 0 && now >= b.warm_ns &&
            ((b.handshakes == 0 && b.queue_len == 0) ||
             now >= b.warm_ns + WARMUP_WAIT_NS)) {
            /* The warm-up is over and every connection open (TLS
             * handshakes included), or waited for long enough: count
             * from here, for the duration asked. */
            b.warm_ns = 0;
            counted_from = now;
            cpu_from = _cpu_us();
            b.stop_ns = now + (uint64_t)(o->duration_s * 1e9);
            b.ops = b.errors = b.keys = b.hits = 0;
            hist_reset(&b.hist);
            /* For a script that samples the server's CPU from here. */
            fprintf(stderr, "bench: warm-up done, counting\n");
            fflush(stderr);
        }
        if (b.ack.fd >= 0 && now - b.ack.flushed_ns >= ACK_FLUSH_NS &&
            !bench_ack_flush(&b.ack, now)) {
            b.errors++;
        }
        bool finished = now >= b.stop_ns || (o->ops != 0 && b.ops >= o->ops);
        if (finished) {
            if (finished_ns == 0) {
                finished_ns = now;
            }
            live = 0;
            for (int i = 0; i < o->conns; i++) {
                if (b.conns[i].cl.fd >= 0 && b.conns[i].inflight > 0) {
                    live++;
                }
            }
            if (now >= finished_ns + 2000000000ULL) {
                break; /* replies overdue by 2 s: count them as errors */
            }
        }
    }
    uint64_t elapsed = _now_ns() - counted_from;
    r->cpu_us = _cpu_us() - cpu_from;
    for (int i = 0; i < o->conns; i++) {
        b.errors += (uint64_t)(b.conns[i].cl.fd >= 0 ? b.conns[i].inflight
                                                     : 0);
        _close_conn(&b, &b.conns[i]);
        client_close(&b.conns[i].cl);
    }
    free(b.conns);
    free(b.open_queue);
    free(b.slots);
    close(b.ep);
    if (b.ack.fd >= 0) {
        if (!bench_ack_close(&b.ack, _now_ns())) {
            b.errors++;
        }
        r->acked = b.ack.lines;
    }
    r->ops = b.ops;
    r->errors = b.errors;
    r->seconds = (double)elapsed / 1e9;
    r->ops_per_s = (double)b.ops / r->seconds;
    r->p50_us = hist_percentile(&b.hist, 50);
    r->p99_us = hist_percentile(&b.hist, 99);
    r->p999_us = hist_percentile(&b.hist, 99.9);
    r->max_us = b.hist.max;
    r->keys = b.keys;
    r->hits = b.hits;
    r->connects = b.connects;
    r->tls_handshakes = b.tls_handshakes;
    r->tls_resumed = b.tls_resumed;
    return 0;
}
