/*
 * conn: connection state machine (see conn.h).
 */
#include "conn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Free space offered to each read(2). */
#define CONN_READ_MIN 16384
/* Requests handled per readiness event before yielding to other clients. */
#define CONN_REQS_PER_EVENT 64
/* Idle buffers larger than this are released. */
#define CONN_BUF_KEEP 65536

struct conn {
    int fd;
    struct conn_host *h;
    struct event ev;
    short ev_flags; /* EV_READ or EV_WRITE while registered, else 0 */
    enum conn_state state;
    struct buf in;
    struct buf out;
    struct proto_parser parser;
    size_t cursor; /* progress through a multi-key get */
    bool wrote;        /* staged writes since its output was last sent */
    uint64_t need_lsn; /* log position its queued output depends on */
    enum conn_state after_sync; /* state to return to from SYNCING */
    bool on_send_list;
    struct conn *send_next;
    struct conn *sync_next;
    struct conn *dead_next;
    struct conn *prev;
    struct conn *next;
};

const char *const conn_state_names[CONN_STATE_COUNT] = {
    [CONN_READING] = "reading",
    [CONN_DRAINING] = "draining",
    [CONN_CLOSING] = "closing",
    [CONN_SYNCING] = "syncing",
    [CONN_CLOSED] = "closed",
};

static void _on_event(evutil_socket_t fd, short what, void *arg);

void
conn_host_init(struct conn_host *h)
{
    memset(h, 0, sizeof(*h));
}

/* Registers interest in `flags` (EV_READ, EV_WRITE or 0). */
static void
_set_events(struct conn *c, short flags)
{
    if (flags == c->ev_flags) {
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
    event_add(&c->ev, c->h->idle_tv);
}

static void
_set_state(struct conn *c, enum conn_state next)
{
    /* Allowed moves, per the diagram in conn.h. */
    static const unsigned allowed[CONN_STATE_COUNT] = {
        [CONN_READING] = 1u << CONN_DRAINING | 1u << CONN_CLOSING |
                         1u << CONN_SYNCING | 1u << CONN_CLOSED,
        [CONN_DRAINING] = 1u << CONN_READING | 1u << CONN_SYNCING |
                          1u << CONN_CLOSED,
        [CONN_CLOSING] = 1u << CONN_SYNCING | 1u << CONN_CLOSED,
        [CONN_SYNCING] = 1u << CONN_READING | 1u << CONN_DRAINING |
                         1u << CONN_CLOSING | 1u << CONN_CLOSED,
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
    if (c->state == CONN_SYNCING) {
        struct conn **link = &c->h->sync_head;
        while (*link != NULL && *link != c) {
            link = &(*link)->sync_next;
        }
        if (*link == c) {
            *link = c->sync_next;
        }
    }
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
    if (c->fd >= 0) {
        close(c->fd);
    }
    buf_deinit(&c->in);
    buf_deinit(&c->out);
    free(c);
    h->nconns--;
    atomic_fetch_sub_explicit(h->curr_conns, 1, memory_order_relaxed);
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

struct conn *
conn_create(struct conn_host *h, int fd)
{
    struct conn *c = calloc(1, sizeof(*c));

    if (c == NULL) {
        close(fd);
        return NULL;
    }
    c->fd = fd;
    c->h = h;
    c->state = CONN_READING;
    buf_init(&c->in);
    buf_init(&c->out);
    proto_parser_init(&c->parser, &h->limits);
    c->next = h->all;
    if (h->all != NULL) {
        h->all->prev = c;
    }
    h->all = c;
    h->nconns++;
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

    _set_events(c, 0);
    c->fd = -1;
    if (h->handoff == NULL || h->handoff(h->handoff_arg, fd, req) != 0) {
        close(fd);
    }
    buf_reset(&c->out);
    _close(c);
}

/* Runs buffered requests until input runs out or the client must wait. */
static void
_process(struct conn *c)
{
    struct conn_host *h = c->h;
    int handled = 0;
    uint64_t staged = h->pctx->batch->staged_total;

    txn_batch_set_owner(h->pctx->batch, c);
    while (c->state == CONN_READING) {
        if (buf_len(&c->out) > h->watermark) {
            _set_state(c, CONN_DRAINING);
            _set_events(c, 0);
            break;
        }
        if (handled++ == CONN_REQS_PER_EVENT) {
            stats_incr(h->stats, STATS_CONN_YIELDS);
            event_active(&c->ev, EV_READ, 0);
            break;
        }
        struct proto_request req;
        size_t consumed;
        enum process_result r;
        enum proto_status st = proto_parse(&c->parser, buf_head(&c->in),
                                           buf_len(&c->in), &consumed, &req);
        if (st == PROTO_EUNFIN) {
            buf_consume(&c->in, consumed);
            break;
        }
        if (st == PROTO_OK) {
            r = process_request(h->pctx, &req, &c->cursor, &c->out,
                                h->watermark);
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
        } else {
            r = process_error(h->pctx, &c->parser, &req, &c->out);
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
    buf_shrink(&c->in, CONN_BUF_KEEP);
    if (h->pctx->batch->staged_total != staged) {
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
    ssize_t n = read(c->fd, buf_tail(&c->in), buf_room(&c->in));
    if (n == 0) {
        _close(c); /* EOF: a partial request is simply dropped */
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
}

/*
 * Parks the connection in SYNCING if its output answers writes the log has
 * not made durable yet (T3). Returns true if it was parked.
 */
static bool
_park_until_durable(struct conn *c)
{
    struct conn_host *h = c->h;

    if (c->wrote) {
        c->wrote = false;
        c->need_lsn = h->pctx->batch->last_lsn;
    }
    if (h->durable == NULL || c->need_lsn == 0 ||
        h->durable(h->sync_arg, c->need_lsn)) {
        return false;
    }
    if (c->state != CONN_SYNCING) {
        c->after_sync = c->state;
        _set_state(c, CONN_SYNCING);
        _set_events(c, 0);
        c->sync_next = h->sync_head;
        h->sync_head = c;
    }
    h->want_sync(h->sync_arg, c->need_lsn);
    return true;
}

/* Sends queued output; called only after the pass's writes committed. */
static void
_flush(struct conn *c)
{
    if (_park_until_durable(c)) {
        return;
    }
    while (buf_len(&c->out) > 0) {
        ssize_t n = send(c->fd, buf_head(&c->out), buf_len(&c->out),
                         MSG_NOSIGNAL);
        if (n > 0) {
            buf_consume(&c->out, (size_t)n);
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
    buf_shrink(&c->out, CONN_BUF_KEEP);
    if (c->state == CONN_CLOSING) {
        /* The server closes first, so TIME_WAIT stays on this side. */
        _close(c);
    } else if (c->state == CONN_DRAINING) {
        _set_state(c, CONN_READING);
        _set_events(c, EV_READ);
        event_active(&c->ev, EV_READ, 0);
    } else {
        _set_events(c, EV_READ);
    }
}

static void
_on_event(evutil_socket_t fd, short what, void *arg)
{
    struct conn *c = arg;

    (void)fd;
    if (what & EV_TIMEOUT) {
        _close(c);
        return;
    }
    if (what & EV_WRITE) {
        _flush(c);
        return;
    }
    if ((what & EV_READ) && c->state == CONN_READING) {
        _read(c);
    }
}

void
conn_host_end_pass(struct conn_host *h)
{
    while (h->send_head != NULL) {
        struct conn *c = h->send_head;
        h->send_head = c->send_next;
        c->on_send_list = false;
        if (c->state != CONN_CLOSED) {
            _flush(c);
        }
    }
    while (h->dead_head != NULL) {
        struct conn *c = h->dead_head;
        h->dead_head = c->dead_next;
        _free(c);
    }
}

void
conn_host_synced(struct conn_host *h)
{
    struct conn **link = &h->sync_head;
    while (*link != NULL) {
        struct conn *c = *link;
        if (c->state == CONN_SYNCING &&
            !h->durable(h->sync_arg, c->need_lsn)) {
            link = &c->sync_next;
            continue;
        }
        *link = c->sync_next;
        if (c->state == CONN_SYNCING) {
            c->need_lsn = 0;
            _set_state(c, c->after_sync);
            _queue_send(c); /* sent at the end of the pass */
        }
    }
}

void
conn_host_close_all(struct conn_host *h)
{
    conn_host_end_pass(h);
    while (h->all != NULL) {
        struct conn *c = h->all;
        if (c->state != CONN_CLOSED) {
            send(c->fd, buf_head(&c->out), buf_len(&c->out),
                 MSG_NOSIGNAL | MSG_DONTWAIT);
            _close(c);
        }
        conn_host_end_pass(h);
    }
}
