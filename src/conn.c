/*
 * conn: connection state machine (see conn.h).
 */
#include "conn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto_bin.h"
#include "proto_http.h"
#include "reply.h"
#include "util.h"

/* Free space offered to each read(2). */
#define CONN_READ_MIN 16384
/* Requests handled per readiness event before yielding to other clients. */
#define CONN_REQS_PER_EVENT 64
/* Idle buffers larger than this are released. */
#define CONN_BUF_KEEP 65536
/* Release points kept per connection; later ones are merged. */
#define CONN_RELEASES 8
/* TLS refusals and failures logged per second per worker; the rest are
 * counted and reported with the next line. */
#define CONN_TLS_LOG_PER_S 10
/* Bytes looked at before a handshake: a binary header, for its opaque. */
#define CONN_SNIFF 24

/* Output up to `end` may be sent once `lsn` is durable. */
struct release {
    uint64_t end;
    uint64_t lsn;
};

struct conn {
    int fd;
    struct conn_host *h;
    struct event ev;
    short ev_flags; /* EV_READ or EV_WRITE while registered, else 0 */
    enum conn_state state;
    struct buf in;
    struct buf out;
    struct proto_parser parser;
    enum proto_kind wire; /* text (and meta) or binary, from byte one */
    bool wire_known;
    bool peer_closed;   /* the client shut its side: answer, then close */
    bool yielded;       /* the last pass stopped to let others run */
    struct process_session session;
    struct conntab_slot *slot; /* in the host's conntab, or NULL */
    size_t cursor; /* progress through a multi-key get */
    unsigned io_waits;  /* storage reads the next request waits for */
    bool io_ready;      /* ... done: run it without asking again */
    uint64_t sent;      /* bytes ever sent (absolute output offset) */
    uint64_t safe_end;  /* output up to here may be sent */
    struct release rel[CONN_RELEASES];
    int nrel;
    bool wrote;         /* staged writes during this pass */
    bool waiting;       /* on the host's durability wait list */
    struct conn *wait_next;
    bool on_send_list;
    struct conn *send_next;
    struct conn *dead_next;
    struct conn *prev;
    struct conn *next;
    struct tls_session *tls;  /* NULL: plaintext, or no hello yet */
    bool tls_port;            /* accepted on the TLS port */
    bool read_wants_write;    /* a TLS read waits to send first */
    uint64_t deadline_ms;     /* HANDSHAKE: when it gives up; LINGERING:
                                 when it closes */
    size_t lingered;          /* LINGERING: bytes read and dropped */
    uint8_t peer_family;      /* TLS port: the peer's address, for log */
    uint16_t peer_port;       /* lines after it may have gone (AF_INET: */
    uint8_t peer_addr[16];    /* the first 4 bytes) */
};

const char *const conn_state_names[CONN_STATE_COUNT] = {
    [CONN_HANDSHAKE] = "handshake",
    [CONN_READING] = "reading",
    [CONN_DRAINING] = "draining",
    [CONN_CLOSING] = "closing",
    [CONN_LINGERING] = "lingering",
    [CONN_CLOSED] = "closed",
};

static void _on_event(evutil_socket_t fd, short what, void *arg);
static void _linger(struct conn *c);

/* Bounds of a lingering close (conn.h, LINGERING). */
#define CONN_LINGER_MS 2000
#define CONN_LINGER_BYTES (4u << 20)

void
conn_host_init(struct conn_host *h)
{
    memset(h, 0, sizeof(*h));
}

/*
 * Registers interest in `flags` (EV_READ, EV_WRITE, both or 0), with the
 * idle timeout, or in a handshake what is left until its deadline.
 */
static void
_set_events(struct conn *c, short flags)
{
    if (c->io_waits > 0) {
        flags &= (short)~EV_READ; /* nothing is read while a request waits */
    }
    if (flags == c->ev_flags && c->state != CONN_HANDSHAKE &&
        c->state != CONN_LINGERING) {
        return;
    }
    if (c->ev_flags != 0) {
        event_del(&c->ev);
    }
    c->ev_flags = flags;
    if (flags == 0) {
        return;
    }
    event_assign(&c->ev, c->h->base, c->fd, (short)(flags | EV_PERSIST),
                 _on_event, c);
    if (c->state == CONN_HANDSHAKE || c->state == CONN_LINGERING) {
        uint64_t now = util_mono_ms();
        uint64_t left = c->deadline_ms > now ? c->deadline_ms - now : 0;
        struct timeval tv = {(time_t)(left / 1000),
                             (suseconds_t)(left % 1000) * 1000};
        event_add(&c->ev, &tv);
        return;
    }
    event_add(&c->ev, c->h->idle_tv);
}

static void
_set_state(struct conn *c, enum conn_state next)
{
    /* Allowed moves, per the diagram in conn.h. */
    static const unsigned allowed[CONN_STATE_COUNT] = {
        [CONN_HANDSHAKE] = 1u << CONN_READING | 1u << CONN_CLOSING |
                           1u << CONN_CLOSED,
        [CONN_READING] = 1u << CONN_DRAINING | 1u << CONN_CLOSING |
                         1u << CONN_CLOSED,
        [CONN_DRAINING] = 1u << CONN_READING | 1u << CONN_CLOSED,
        [CONN_CLOSING] = 1u << CONN_LINGERING | 1u << CONN_CLOSED,
        [CONN_LINGERING] = 1u << CONN_CLOSED,
        [CONN_CLOSED] = 0,
    };
    if (!(allowed[c->state] & (1u << next))) {
        abort(); /* a broken state machine must not go on serving */
    }
    c->state = next;
}

static void
_close(struct conn *c)
{
    if (c->state == CONN_CLOSED) {
        return;
    }
    if (c->waiting) {
        struct conn **link = &c->h->wait_head;
        while (*link != c) {
            link = &(*link)->wait_next;
        }
        *link = c->wait_next;
        c->waiting = false;
    }
    if (c->io_waits > 0 && c->h->io_forget != NULL) {
        c->h->io_forget(c->h->io_arg, c);
    }
    c->io_waits = 0;
    _set_state(c, CONN_CLOSED);
    _set_events(c, 0);
    /* Freed at the end of the pass: the write batch may still name it. */
    c->dead_next = c->h->dead_head;
    c->h->dead_head = c;
}

static void
_free(struct conn *c)
{
    struct conn_host *h = c->h;

    if (c->prev != NULL) {
        c->prev->next = c->next;
    } else {
        h->all = c->next;
    }
    if (c->next != NULL) {
        c->next->prev = c->prev;
    }
    if (c->ev_flags != 0) {
        event_del(&c->ev);
    }
    if (c->tls != NULL) {
        /* Only when this side ends it: not after the peer's close or a
         * failure (tls.h). */
        tls_session_close_notify(c->tls);
        tls_session_free(c->tls);
    }
    if (c->fd >= 0) {
        conntab_remove(h->conntab, c->fd);
        close(c->fd);
    }
    buf_deinit(&c->in);
    buf_deinit(&c->out);
    free(c);
    h->nconns--;
    atomic_fetch_sub_explicit(h->curr_conns, 1, memory_order_relaxed);
}

/* Sends up to `len` bytes of `c`'s output; see conn_host.send. */
static ssize_t
_send(struct conn *c, size_t len, int flags)
{
    struct conn_host *h = c->h;
    if (c->tls != NULL) {
        size_t put = 0;
        switch (tls_session_write(c->tls, buf_head(&c->out), len, &put)) {
        case TLS_OK:
            return (ssize_t)put;
        case TLS_WANT_WRITE:
            errno = EAGAIN;
            return -1;
        default:
            /* Closed, failed, or a read wanted: renegotiation is refused
             * (tls.h), so nothing legitimate asks for one here. */
            errno = EPIPE;
            return -1;
        }
    }
    if (h->send != NULL) {
        return h->send(h->send_arg, c->fd, buf_head(&c->out), len);
    }
    return send(c->fd, buf_head(&c->out), len, MSG_NOSIGNAL | flags);
}

static void
_queue_send(struct conn *c)
{
    if (!c->on_send_list) {
        c->on_send_list = true;
        c->send_next = c->h->send_head;
        c->h->send_head = c;
    }
}

/* ----------------------------------------------------------------- TLS */

/* Keeps the peer's address: a failed handshake is often a peer gone. */
static void
_keep_peer(struct conn *c)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);

    if (getpeername(c->fd, (struct sockaddr *)&ss, &len) != 0) {
        return;
    }
    if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;
        memcpy(c->peer_addr, &a->sin_addr, 4);
        c->peer_port = ntohs(a->sin_port);
        c->peer_family = AF_INET;
    } else if (ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;
        memcpy(c->peer_addr, &a->sin6_addr, 16);
        c->peer_port = ntohs(a->sin6_port);
        c->peer_family = AF_INET6;
    }
}

/* The peer's address, for log lines. */
static void
_peer(struct conn *c, char *out, size_t cap)
{
    char host[INET6_ADDRSTRLEN] = "?";

    if (c->peer_family == 0) {
        _keep_peer(c);
    }
    if (c->peer_family != 0) {
        inet_ntop(c->peer_family, c->peer_addr, host, sizeof(host));
    }
    snprintf(out, cap, "%s:%d", host, c->peer_port);
}

/*
 * Logs a TLS refusal or failure: `what` is formatted with the peer's
 * address and `detail`. At most CONN_TLS_LOG_PER_S lines a second per
 * worker; the lines dropped are counted in the next one written.
 */
static void
_tls_log(struct conn *c, const char *what, const char *detail)
{
    struct conn_host *h = c->h;
    char peer[INET6_ADDRSTRLEN + 8];

    if (h->log == NULL || !log_enabled(h->log, LOG_WARN)) {
        return;
    }
    uint64_t now = util_mono_ms() / 1000;
    if (now != h->tls_log_second) {
        h->tls_log_second = now;
        h->tls_log_lines = 0;
    }
    if (h->tls_log_lines >= CONN_TLS_LOG_PER_S) {
        h->tls_log_dropped++;
        return;
    }
    h->tls_log_lines++;
    _peer(c, peer, sizeof(peer));
    if (h->tls_log_dropped > 0) {
        log_warn(h->log, "tls: %s: %s%s (and %llu more not logged)", peer,
                 what, detail, (unsigned long long)h->tls_log_dropped);
        h->tls_log_dropped = 0;
    } else {
        log_warn(h->log, "tls: %s: %s%s", peer, what, detail);
    }
}

/* A TLS client on the plaintext port: an alert it understands, a close. */
static void
_refuse_tls(struct conn *c)
{
    buf_reset(&c->in);
    if (!buf_append(&c->out, tls_plain_alert, TLS_PLAIN_ALERT_LEN,
                    SIZE_MAX)) {
        _close(c);
        return;
    }
    _tls_log(c, "a TLS client on the plaintext port; refused",
             c->h->tls != NULL ? " (TLS is served on -tlsport)"
                               : " (this server has no -tlsport)");
    _set_state(c, CONN_CLOSING);
    _set_events(c, 0);
}

/* A plaintext client of kind `kind` on the TLS port, having sent `p`. */
static void
_refuse_plaintext(struct conn *c, enum tls_sniff kind, const uint8_t *p,
                  size_t n)
{
    static const char *const names[] = {
        [TLS_SNIFF_TEXT] = "text", [TLS_SNIFF_BINARY] = "binary",
        [TLS_SNIFF_HTTP] = "HTTP",
    };
    char msg[TLS_REFUSAL_MAX];
    char what[96];
    char junk[4096];

    size_t len = tls_refusal(kind, p, n, msg);
    tls_ctx_count(c->h->tls, TLS_EVENT_PLAINTEXT);
    snprintf(what, sizeof(what), "a plaintext %s client on the TLS port; "
             "refused", names[kind]);
    _tls_log(c, what, "");
    /* Taken off the socket, so the close is a FIN after the refusal
     * rather than a reset that could discard it. */
    ssize_t r = recv(c->fd, junk, sizeof(junk), MSG_DONTWAIT);
    (void)r;
    if (!buf_append(&c->out, msg, len, SIZE_MAX)) {
        _close(c);
        return;
    }
    _set_state(c, CONN_CLOSING);
    _set_events(c, 0);
    _queue_send(c);
}

/* Reads like read(2), through the TLS session when there is one. */
static ssize_t
_recv(struct conn *c, void *p, size_t len)
{
    if (c->tls == NULL) {
        return read(c->fd, p, len);
    }
    size_t got = 0;
    switch (tls_session_read(c->tls, p, len, &got)) {
    case TLS_OK:
        return (ssize_t)got;
    case TLS_WANT_WRITE:
        c->read_wants_write = true;
        errno = EAGAIN;
        return -1;
    case TLS_WANT_READ:
        errno = EAGAIN;
        return -1;
    case TLS_CLOSED:
        return 0;
    default: {
        char why[256];
        if (tls_session_error(c->tls, why, sizeof(why))) {
            _tls_log(c, "closed on a TLS error: ", why);
        }
        errno = EIO;
        return -1;
    }
    }
}

/*
 * HANDSHAKE: looks at the first bytes (a plaintext client is refused),
 * then advances the handshake; gives up at the deadline.
 */
static void
_handshake(struct conn *c, short what)
{
    struct conn_host *h = c->h;
    char why[256];

    if ((what & EV_TIMEOUT) || util_mono_ms() >= c->deadline_ms) {
        tls_ctx_count(h->tls, TLS_EVENT_TIMEOUT);
        snprintf(why, sizeof(why), " within %d ms; closed",
                 h->tls_timeout_ms);
        _tls_log(c, "no TLS handshake", why);
        _close(c);
        return;
    }
    if (c->tls == NULL) {
        uint8_t first[CONN_SNIFF];
        ssize_t n = recv(c->fd, first, sizeof(first), MSG_PEEK);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK ||
                      errno == EINTR)) {
            _set_events(c, EV_READ);
            return;
        }
        if (n <= 0) {
            _close(c); /* gone before saying anything */
            return;
        }
        enum tls_sniff kind = tls_sniff(first, (size_t)n);
        if (kind != TLS_SNIFF_TLS) {
            _refuse_plaintext(c, kind, first, (size_t)n);
            return;
        }
        c->tls = tls_session_accept(h->tls, c->fd);
        if (c->tls == NULL) {
            _close(c);
            return;
        }
    }
    switch (tls_session_handshake(c->tls)) {
    case TLS_OK:
        _set_state(c, CONN_READING);
        _set_events(c, 0); /* the idle timeout from here on */
        _set_events(c, EV_READ);
        if (tls_session_pending(c->tls)) {
            /* The first request came with the client's last flight. */
            event_active(&c->ev, EV_READ, 0);
        }
        return;
    case TLS_WANT_READ:
        _set_events(c, EV_READ);
        return;
    case TLS_WANT_WRITE:
        _set_events(c, EV_WRITE);
        return;
    case TLS_CLOSED:
        _close(c); /* hung up during the handshake */
        return;
    default:
        tls_session_error(c->tls, why, sizeof(why));
        _tls_log(c, "TLS handshake failed: ", why);
        _close(c);
        return;
    }
}

struct conn *
conn_create(struct conn_host *h, int fd, bool tls)
{
    struct conn *c = calloc(1, sizeof(*c));

    if (c == NULL || (tls && h->tls == NULL)) {
        free(c);
        close(fd);
        return NULL;
    }
    c->fd = fd;
    c->h = h;
    c->state = tls ? CONN_HANDSHAKE : CONN_READING;
    c->tls_port = tls;
    c->deadline_ms = util_mono_ms() + (uint64_t)h->tls_timeout_ms;
    if (tls) {
        _keep_peer(c);
    }
    buf_init(&c->in);
    buf_init(&c->out);
    proto_parser_init(&c->parser, &h->limits);
    c->next = h->all;
    if (h->all != NULL) {
        h->all->prev = c;
    }
    h->all = c;
    h->nconns++;
    c->slot = conntab_add(h->conntab, fd, false, conntab_now());
    _set_events(c, EV_READ);
    return c;
}

void
conn_abort(struct conn *c)
{
    buf_reset(&c->out);
    _close(c);
}

/* Gives the socket to the replication layer and forgets it. */
static void
_handoff(struct conn *c, const struct proto_request *req)
{
    struct conn_host *h = c->h;
    int fd = c->fd;

    struct tls_session *tls = c->tls;
    _set_events(c, 0);
    conntab_remove(h->conntab, fd);
    c->slot = NULL;
    c->fd = -1;
    c->tls = NULL;
    if (h->handoff == NULL) {
        tls_session_free(tls);
        close(fd);
    } else if (h->handoff(h->handoff_arg, fd, tls, req) != 0) {
        close(fd);
    }
    buf_reset(&c->out);
    _close(c);
}

/* What `stats conns` shows the connection doing, between passes. */
static void
_note_state(struct conn *c)
{
    enum conntab_state st = CONNTAB_WAITING;
    if (c->slot == NULL) {
        return;
    }
    if (c->state == CONN_CLOSING || c->state == CONN_LINGERING) {
        st = CONNTAB_CLOSING;
    } else if (c->state == CONN_DRAINING) {
        st = CONNTAB_MWRITE;
    } else if (c->parser.need > buf_len(&c->in) || c->parser.swallow > 0) {
        st = CONNTAB_NREAD;
    } else if (buf_len(&c->in) > 0) {
        st = CONNTAB_READ;
    }
    conntab_note(c->slot, st, 0);
}

/* Runs buffered requests until input runs out or the client must wait. */
static void
_process(struct conn *c)
{
    struct conn_host *h = c->h;
    int handled = 0;
    uint64_t staged = txn_staged_total(h->pctx->batch);

    if (c->io_waits > 0) {
        return; /* conn_io_done() resumes it */
    }
    txn_batch_set_owner(h->pctx->batch, c);
    c->yielded = false;
    if (c->slot != NULL && buf_len(&c->in) > 0) {
        conntab_note(c->slot, CONNTAB_PARSE, conntab_now());
    }
    while (c->state == CONN_READING) {
        if (buf_len(&c->out) > h->watermark) {
            _set_state(c, CONN_DRAINING);
            _set_events(c, 0);
            break;
        }
        if (handled++ == CONN_REQS_PER_EVENT) {
            stats_incr(h->stats, STATS_CONN_YIELDS);
            c->yielded = true;
            event_active(&c->ev, EV_READ, 0);
            break;
        }
        struct proto_request req;
        size_t consumed;
        enum process_result r;
        if (!c->wire_known) {
            if (buf_len(&c->in) == 0) {
                break;
            }
            c->wire_known = true;
            unsigned char first = (unsigned char)*buf_head(&c->in);
            if (!c->tls_port && tls_is_handshake_byte(first)) {
                _refuse_tls(c);
                break;
            }
            if (proto_detect(&c->parser, first, &c->wire) != PROTO_OK) {
                memset(&req, 0, sizeof(req));
                (void)process_error(h->pctx, &c->session, &c->parser,
                                    PROTO_ECLOSE, &req, &c->out);
                buf_reset(&c->in);
                _set_state(c, CONN_CLOSING);
                _set_events(c, 0);
                break;
            }
        }
        enum proto_status st;
        switch (c->wire) {
        case PROTO_KIND_BINARY:
            st = proto_bin_parse(&c->parser, buf_head(&c->in),
                                 buf_len(&c->in), &consumed, &req);
            break;
        case PROTO_KIND_HTTP:
            st = proto_http_parse(&c->parser, buf_head(&c->in),
                                  buf_len(&c->in), &consumed, &req);
            break;
        default:
            st = proto_parse(&c->parser, buf_head(&c->in), buf_len(&c->in),
                             &consumed, &req);
            break;
        }
        if (st == PROTO_EUNFIN) {
            buf_consume(&c->in, consumed);
            if (c->parser.http_continue) {
                /* The head is in, the body is not: ask for it. */
                c->parser.http_continue = false;
                c->parser.http_continue_sent = true;
                if (!reply_http_continue(&c->out)) {
                    _close(c);
                    return;
                }
            }
            break;
        }
        if (st == PROTO_OK && c->cursor == 0 && !c->io_ready &&
            h->io_start != NULL) {
            unsigned waits = h->io_start(h->io_arg, c, &req);
            if (waits > 0) {
                /* Keep the request's bytes; it runs once they are read. */
                c->io_waits = waits;
                _set_events(c, c->ev_flags);
                break;
            }
        }
        if (st == PROTO_OK) {
            r = process_request(h->pctx, &c->session, &req, &c->cursor,
                                &c->out, h->watermark);
            if (c->state == CONN_CLOSED) {
                return; /* a failed commit aborted this connection */
            }
            if (r == PROCESS_MORE) {
                /* Keep the request's bytes; it resumes at the cursor. */
                _set_state(c, CONN_DRAINING);
                _set_events(c, 0);
                break;
            }
            c->cursor = 0;
            c->io_ready = false;
        } else {
            r = process_error(h->pctx, &c->session, &c->parser, st, &req,
                              &c->out);
        }
        if (c->state == CONN_CLOSED) {
            return; /* a failed commit aborted this connection */
        }
        buf_consume(&c->in, consumed);
        if (r == PROCESS_CLOSE) {
            _set_state(c, CONN_CLOSING);
            _set_events(c, 0);
        } else if (r == PROCESS_FATAL) {
            _close(c);
            return;
        } else if (r == PROCESS_HANDOFF) {
            _handoff(c, &req);
            return;
        }
    }
    if (c->peer_closed && c->state == CONN_READING && !c->yielded) {
        /* Every whole request the client sent is answered; what is left
         * is a partial request that can never complete. As memcached
         * does, the replies go out before the server closes. */
        _set_state(c, CONN_CLOSING);
        _set_events(c, 0);
    }
    _note_state(c);
    buf_shrink(&c->in, CONN_BUF_KEEP);
    if (txn_staged_total(h->pctx->batch) != staged) {
        c->wrote = true;
    }
    if (buf_len(&c->out) > 0 || c->state == CONN_CLOSING) {
        _queue_send(c);
    }
}

static void
_read(struct conn *c)
{
    const struct proto_limits *l = &c->h->limits;
    size_t limit = l->max_get_line + l->item_max + 4 + CONN_READ_MIN;
    size_t want = CONN_READ_MIN;

    if (c->parser.need > buf_len(&c->in) &&
        c->parser.need - buf_len(&c->in) > want) {
        want = c->parser.need - buf_len(&c->in);
    }
    if (!buf_reserve(&c->in, want, limit)) {
        _close(c);
        return;
    }
    ssize_t n = _recv(c, buf_tail(&c->in), buf_room(&c->in));
    if (n == 0) {
        /* End of input: the requests already read still get answers. */
        c->peer_closed = true;
        _process(c);
        return;
    }
    if (n < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            _close(c);
            return;
        }
        /* Woken to resume buffered input: fall through and process. */
    } else {
        buf_produce(&c->in, (size_t)n);
        stats_add(c->h->stats, STATS_BYTES_READ, (uint64_t)n);
    }
    _process(c);
    if (c->tls == NULL || c->state != CONN_READING) {
        return;
    }
    if (c->read_wants_write) {
        _set_events(c, EV_READ | EV_WRITE);
    } else if (n > 0 && tls_session_pending(c->tls)) {
        /* Read from the socket already: it will not say so again. Only
         * after a read that gave bytes: what is left after one that gave
         * none is the start of a record whose rest the socket will
         * announce, and asking again at once would spin. */
        event_active(&c->ev, EV_READ, 0);
    }
}

/*
 * Moves the safe end past every release point whose lsn is durable. At the
 * end of a pass with no point left, everything queued is safe; in the
 * middle of one, output produced since the last point may still depend on
 * writes not yet committed.
 */
static void
_settle(struct conn *c, bool end_of_pass)
{
    struct conn_host *h = c->h;
    uint64_t durable = h->durable != NULL ? h->durable(h->sync_arg)
                                          : UINT64_MAX;
    int done = 0;
    while (done < c->nrel && c->rel[done].lsn <= durable) {
        c->safe_end = c->rel[done].end;
        done++;
    }
    memmove(c->rel, c->rel + done, (size_t)(c->nrel - done) * sizeof(c->rel[0]));
    c->nrel -= done;
    if (c->nrel == 0 && end_of_pass) {
        c->safe_end = c->sent + buf_len(&c->out);
    }
    if (c->nrel > 0 && !c->waiting) {
        c->waiting = true;
        c->wait_next = h->wait_head;
        h->wait_head = c;
    }
}

/* Records that output so far answers writes logged up to `lsn`. */
static void
_mark_release(struct conn *c, uint64_t lsn)
{
    uint64_t end = c->sent + buf_len(&c->out);
    if (c->nrel == CONN_RELEASES) {
        c->rel[CONN_RELEASES - 1] = (struct release){end, lsn};
    } else {
        c->rel[c->nrel++] = (struct release){end, lsn};
    }
}

/* Sends queued output up to the safe end (T3). */
static void
_flush(struct conn *c)
{
    while (buf_len(&c->out) > 0 && c->sent < c->safe_end) {
        size_t len = buf_len(&c->out);
        if (c->safe_end - c->sent < len) {
            len = (size_t)(c->safe_end - c->sent);
        }
        ssize_t n = _send(c, len, 0);
        if (n > 0) {
            buf_consume(&c->out, (size_t)n);
            c->sent += (uint64_t)n;
            stats_add(c->h->stats, STATS_BYTES_WRITTEN, (uint64_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (c->state == CONN_READING) {
                _set_state(c, CONN_DRAINING);
            }
            _set_events(c, EV_WRITE);
            return;
        }
        _close(c);
        return;
    }
    if (buf_len(&c->out) > 0) {
        return; /* the rest waits for durability or the end of the pass */
    }
    buf_shrink(&c->out, CONN_BUF_KEEP);
    if (c->state == CONN_CLOSING) {
        /* The server closes first, so TIME_WAIT stays on this side. */
        _linger(c);
    } else if (c->state == CONN_DRAINING) {
        _set_state(c, CONN_READING);
        _set_events(c, EV_READ);
        event_active(&c->ev, EV_READ, 0);
    } else {
        _set_events(c, EV_READ);
    }
}

/*
 * The last reply is sent: shut this side and drop what the client still
 * sends, so that the close is not a reset that discards the reply (the
 * LINGERING state in conn.h). Plaintext only: a TLS session ends with its
 * close_notify in _free(). A client that has shut its side has nothing
 * left to send.
 */
static void
_linger(struct conn *c)
{
    if (c->tls != NULL || c->peer_closed || c->io_waits > 0 ||
        shutdown(c->fd, SHUT_WR) != 0) {
        _close(c);
        return;
    }
    _set_state(c, CONN_LINGERING);
    c->deadline_ms = util_mono_ms() + CONN_LINGER_MS;
    c->lingered = 0;
    _set_events(c, EV_READ);
}

/* LINGERING: reads and drops input until EOF, an error or the bounds. */
static void
_linger_read(struct conn *c, short what)
{
    char junk[16384];

    if (what & EV_TIMEOUT) {
        _close(c);
        return;
    }
    for (;;) {
        ssize_t n = read(c->fd, junk, sizeof(junk));
        if (n > 0) {
            c->lingered += (size_t)n;
            if (c->lingered < CONN_LINGER_BYTES) {
                continue;
            }
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return; /* more may come before the deadline */
        }
        _close(c); /* EOF, an error, or enough read */
        return;
    }
}

static void
_on_event(evutil_socket_t fd, short what, void *arg)
{
    struct conn *c = arg;

    (void)fd;
    if (c->state == CONN_LINGERING) {
        _linger_read(c, what);
        return;
    }
    if (c->state == CONN_HANDSHAKE) {
        _handshake(c, what);
        return;
    }
    if (what & EV_TIMEOUT) {
        stats_incr(c->h->stats, STATS_IDLE_KICKS);
        _close(c);
        return;
    }
    if ((what & EV_WRITE) && c->read_wants_write) {
        /* The socket drained: the TLS read can send what it owed. */
        c->read_wants_write = false;
        if (c->state == CONN_READING) {
            _set_events(c, EV_READ);
            _read(c);
            return;
        }
    }
    if (what & EV_WRITE) {
        _settle(c, false);
        _flush(c);
        return;
    }
    if ((what & EV_READ) && c->state == CONN_READING) {
        _read(c);
    }
}

void
conn_io_done(struct conn *c)
{
    if (c->io_waits == 0 || --c->io_waits > 0) {
        return;
    }
    c->io_ready = true;
    if (c->state == CONN_READING) {
        _set_events(c, EV_READ);
        event_active(&c->ev, EV_READ, 0);
    }
}

bool
conn_host_end_pass(struct conn_host *h, uint64_t lsn)
{
    bool marked = false;

    while (h->send_head != NULL) {
        struct conn *c = h->send_head;
        h->send_head = c->send_next;
        c->on_send_list = false;
        if (c->state == CONN_CLOSED) {
            continue;
        }
        if (c->wrote && h->durable != NULL) {
            _mark_release(c, lsn);
            marked = true;
        }
        c->wrote = false;
        _settle(c, true);
        _flush(c);
    }
    while (h->dead_head != NULL) {
        struct conn *c = h->dead_head;
        h->dead_head = c->dead_next;
        _free(c);
    }
    return marked;
}

void
conn_host_durable(struct conn_host *h)
{
    if (h->log_failed != NULL && h->log_failed(h->sync_arg)) {
        while (h->wait_head != NULL) {
            struct conn *c = h->wait_head;
            buf_reset(&c->out);
            _close(c); /* unlinks it from the wait list */
        }
        return;
    }
    struct conn **link = &h->wait_head;
    while (*link != NULL) {
        struct conn *c = *link;
        _settle(c, false);
        if (c->nrel == 0) {
            *link = c->wait_next;
            c->waiting = false;
            _queue_send(c); /* the rest goes at the end of the pass */
        }
        _flush(c); /* failing, it closes c: c leaves, *link is the next */
        if (c->waiting) {
            link = &c->wait_next;
        }
    }
}

void
conn_host_close_all(struct conn_host *h)
{
    (void)conn_host_end_pass(h, 0);
    while (h->all != NULL) {
        struct conn *c = h->all;
        if (c->state != CONN_CLOSED) {
            /* Only what is safe: unanswered writes get no reply (T3). */
            _settle(c, false);
            if (c->safe_end > c->sent) {
                size_t len = buf_len(&c->out);
                if (c->safe_end - c->sent < len) {
                    len = (size_t)(c->safe_end - c->sent);
                }
                (void)_send(c, len, MSG_DONTWAIT);
            }
            _close(c);
        }
        (void)conn_host_end_pass(h, 0);
    }
}
