/*
 * client: the kura command's client connection, plaintext or TLS,
 * pipelined or one request at a time (see client.h).
 */
#include "client.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "netio.h"
#include "util.h"

#define OUT_INITIAL ((size_t)256)

static void *
_grow(void *p, size_t size)
{
    void *q = realloc(p, size);
    if (q == NULL) {
        fprintf(stderr, "kura: out of memory (%zu bytes)\n", size);
        exit(1);
    }
    return q;
}

/* Milliseconds left before the deadline, 0 once it has passed. */
static int
_remaining(const struct client *c)
{
    uint64_t now = util_mono_ms();
    return now >= c->deadline_ms ? 0 : (int)(c->deadline_ms - now);
}

/* Resizes the input buffer to `cap` bytes. */
static void
_resize_in(struct client *c, size_t cap)
{
    c->in = _grow(c->in, cap);
    c->in_cap = cap;
}

void
client_init(struct client *c, size_t in_initial, size_t in_max)
{
    memset(c, 0, sizeof(*c));
    c->fd = -1;
    c->in_initial = in_initial > 0 ? in_initial : 1;
    c->in_max = in_max > c->in_initial ? in_max : c->in_initial;
}

void
client_set_timeout(struct client *c, int timeout_ms)
{
    c->deadline_ms = util_mono_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms
                                                                : 0);
}

/* A non-blocking socket connected to one of `res`'s addresses, or -1. */
static int
_connect_any(struct client *c, const struct addrinfo *res)
{
    int saved = ETIMEDOUT;
    for (const struct addrinfo *a = res; a != NULL; a = a->ai_next) {
        int fd = socket(a->ai_family,
                        SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            saved = errno;
            continue;
        }
        errno = 0;
        if (connect(fd, a->ai_addr, a->ai_addrlen) != 0 &&
            errno == EINPROGRESS) {
            struct pollfd p = {fd, POLLOUT, 0};
            int err = 0;
            socklen_t len = sizeof(err);
            if (poll(&p, 1, _remaining(c)) == 1 &&
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 &&
                err == 0) {
                return fd;
            }
            saved = err != 0 ? err : ETIMEDOUT;
        } else if (errno == 0 || errno == EISCONN) {
            return fd;
        } else {
            saved = errno;
        }
        close(fd);
    }
    errno = saved;
    return -1;
}

int
client_open(struct client *c, const char *host, const char *port,
            int timeout_ms, struct tls_ctx *tls, char *err, size_t errlen)
{
    struct addrinfo hints;
    struct addrinfo *res = NULL;

    client_disconnect(c);
    client_set_timeout(c, timeout_ms);
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &res) != 0) {
        snprintf(err, errlen, "cannot connect to %s:%s: %s", host, port,
                 strerror(EHOSTUNREACH));
        return -1;
    }
    int fd = _connect_any(c, res);
    freeaddrinfo(res);
    if (fd < 0) {
        snprintf(err, errlen, "cannot connect to %s:%s: %s", host, port,
                 strerror(errno));
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct tls_session *t = NULL;
    if (tls != NULL && (t = tls_session_connect(tls, fd, host)) == NULL) {
        snprintf(err, errlen, "cannot set up TLS to %s:%s", host, port);
        close(fd);
        return -1;
    }
    /* netio's stream drives the handshake to the deadline; the session
     * is the client's afterwards. */
    struct netio_stream io;
    netio_stream_init(&io, fd, t);
    if (netio_stream_handshake(&io, _remaining(c), err, errlen) != 0) {
        netio_stream_deinit(&io);
        pthread_mutex_destroy(&io.lock);
        close(fd);
        return -2;
    }
    c->fd = fd;
    c->tls = io.tls;
    pthread_mutex_destroy(&io.lock);
    if (c->in_cap == 0) {
        _resize_in(c, c->in_initial);
    }
    return 0;
}

int
client_start(struct client *c, const struct sockaddr *addr,
             socklen_t addrlen, struct tls_ctx *tls, const char *host)
{
    client_disconnect(c);
    int fd = socket(addr->sa_family,
                    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(fd, addr, addrlen) != 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    if (tls != NULL && (c->tls = tls_session_connect(tls, fd, host)) ==
                           NULL) {
        close(fd);
        errno = EPROTO;
        return -1;
    }
    c->fd = fd;
    return 0;
}

bool
client_established(const struct client *c)
{
    return c->tls == NULL || tls_session_established(c->tls);
}

enum client_step
client_handshake(struct client *c)
{
    if (c->tls == NULL) {
        return CLIENT_STEP_DONE;
    }
    switch (tls_session_handshake(c->tls)) {
    case TLS_OK:
        return CLIENT_STEP_DONE;
    case TLS_WANT_READ:
        return CLIENT_STEP_WANT_READ;
    case TLS_WANT_WRITE:
        return CLIENT_STEP_WANT_WRITE;
    default:
        return CLIENT_STEP_FAILED;
    }
}

bool
client_resumed(const struct client *c)
{
    return c->tls != NULL && tls_session_resumed(c->tls);
}

void
client_error(const struct client *c, char *out, size_t cap)
{
    if (c->tls == NULL || !tls_session_error(c->tls, out, cap)) {
        snprintf(out, cap, "%s", "connection failed");
    }
}

void
client_disconnect(struct client *c)
{
    if (c->tls != NULL) {
        tls_session_close_notify(c->tls);
        tls_session_free(c->tls);
        c->tls = NULL;
    }
    if (c->fd >= 0) {
        close(c->fd);
        c->fd = -1;
    }
    c->in_len = 0;
    c->out_len = c->out_off = 0;
}

void
client_close(struct client *c)
{
    client_disconnect(c);
    free(c->out);
    free(c->in);
    c->out = c->in = NULL;
    c->out_cap = c->in_cap = 0;
}

char *
client_reserve(struct client *c, size_t n)
{
    if (c->out_off > 0 && c->out_off == c->out_len) {
        c->out_off = c->out_len = 0; /* all sent: start over */
    }
    if (c->out_len + n > c->out_cap) {
        /* Doubling from the first request's size keeps an idle
         * connection small: a bench holds 20,000 of them. */
        size_t cap = c->out_cap == 0 ? OUT_INITIAL : c->out_cap;
        while (cap < c->out_len + n) {
            cap *= 2;
        }
        c->out = _grow(c->out, cap);
        c->out_cap = cap;
    }
    return c->out + c->out_len;
}

void
client_commit(struct client *c, size_t n)
{
    c->out_len += n;
}

void
client_append(struct client *c, const void *data, size_t len)
{
    memcpy(client_reserve(c, len), data, len);
    client_commit(c, len);
}

size_t
client_pending(const struct client *c)
{
    return c->out_len - c->out_off;
}

/*
 * What a TLS call that moved `n` bytes with status `st` returns as
 * send(2) and recv(2) would: `n`, 0 at the end, or -1 with errno (EAGAIN
 * while the session waits for the socket, EIO on a TLS error).
 */
static ssize_t
_as_socket(enum tls_status st, size_t n)
{
    switch (st) {
    case TLS_OK:
        return (ssize_t)n;
    case TLS_WANT_READ:
    case TLS_WANT_WRITE:
        errno = EAGAIN;
        return -1;
    case TLS_CLOSED:
        return 0;
    default:
        errno = EIO;
        return -1;
    }
}

/* Writes like send(2), through the TLS session if there is one. */
static ssize_t
_send(struct client *c, const void *p, size_t len)
{
    if (c->tls == NULL) {
        return send(c->fd, p, len, MSG_NOSIGNAL);
    }
    size_t put = 0;
    enum tls_status st = tls_session_write(c->tls, p, len, &put);
    if (st == TLS_CLOSED) {
        errno = EPIPE; /* nothing more can be sent */
        return -1;
    }
    return _as_socket(st, put);
}

/* Reads like recv(2), through the TLS session if there is one. */
static ssize_t
_recv(struct client *c, void *p, size_t len)
{
    if (c->tls == NULL) {
        return recv(c->fd, p, len, 0);
    }
    size_t got = 0;
    enum tls_status st = tls_session_read(c->tls, p, len, &got);
    return _as_socket(st, got);
}

bool
client_buffered(const struct client *c)
{
    return c->tls != NULL && tls_session_pending(c->tls);
}

int
client_flush(struct client *c)
{
    while (c->out_off < c->out_len) {
        ssize_t n = _send(c, c->out + c->out_off, c->out_len - c->out_off);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
        }
        c->out_off += (size_t)n;
    }
    c->out_off = c->out_len = 0;
    return 1;
}

void
client_grow(struct client *c)
{
    if (c->in_cap > 0 && c->in_cap < c->in_max) {
        _resize_in(c, c->in_cap * 2 < c->in_max ? c->in_cap * 2 : c->in_max);
    }
}

ssize_t
client_fill(struct client *c)
{
    if (c->in_cap == 0) {
        _resize_in(c, c->in_initial);
    } else if (c->in_len == c->in_cap) {
        if (c->in_cap >= c->in_max) {
            errno = ENOBUFS;
            return -1;
        }
        client_grow(c);
    }
    for (;;) {
        ssize_t n = _recv(c, c->in + c->in_len, c->in_cap - c->in_len);
        if (n > 0) {
            c->in_len += (size_t)n;
            return n;
        }
        if (n == 0) {
            errno = 0;
            return -1;
        }
        if (errno == EINTR) {
            continue;
        }
        return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
    }
}

void
client_consume(struct client *c, size_t n)
{
    memmove(c->in, c->in + n, c->in_len - n);
    c->in_len -= n;
}

/* Waits until the deadline for `events` on the socket: 1, or -1 (errno
 * ETIMEDOUT at the deadline). */
static int
_wait(struct client *c, short events)
{
    for (;;) {
        int left = _remaining(c);
        if (left == 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        struct pollfd p = {c->fd, events, 0};
        int r = poll(&p, 1, left);
        if (r > 0) {
            return 1;
        }
        if (r < 0 && errno != EINTR) {
            return -1;
        }
    }
}

int
client_send_wait(struct client *c)
{
    for (;;) {
        int r = client_flush(c);
        if (r != 0) {
            return r > 0 ? 0 : -1;
        }
        if (_wait(c, POLLOUT) != 1) {
            return -1;
        }
    }
}

enum client_reply_kind
client_next(struct client *c, size_t off, enum client_proto p,
            size_t value_max, struct client_reply *r)
{
    for (;;) {
        if (c->in != NULL) {
            enum client_reply_kind k = client_reply_next(
                p, c->in + off, c->in_len - off, value_max, r);
            if (k != CLIENT_REPLY_MORE) {
                return k;
            }
        }
        if (!client_buffered(c) && _wait(c, POLLIN) != 1) {
            return CLIENT_REPLY_MORE;
        }
        if (client_fill(c) < 0) {
            return CLIENT_REPLY_MORE;
        }
    }
}
