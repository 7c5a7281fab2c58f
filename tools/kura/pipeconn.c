/*
 * pipeconn: a pipelined, non-blocking client connection (see pipeconn.h).
 */
#include "pipeconn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "netio.h"
#include "util.h"

#define OUT_INITIAL ((size_t)64 << 10)

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

int
pipeconn_open(struct pipeconn *c, const char *host, int port, int timeout_ms,
              size_t in_initial, size_t in_max, struct tls_ctx *tls,
              char *err, size_t errlen)
{
    struct netio_stream io;

    memset(c, 0, sizeof(*c));
    c->in_max = in_max > in_initial ? in_max : in_initial;
    c->in_cap = in_initial;
    c->in = _grow(NULL, in_initial);
    c->fd = -1;
    if (netio_stream_connect(&io, host, port, tls, timeout_ms, err,
                             errlen) != 0) {
        return -1;
    }
    c->fd = io.fd;
    c->tls = io.tls; /* the stream's session is the connection's now */
    if (util_set_nonblock(c->fd) != 0) {
        snprintf(err, errlen, "%s", strerror(errno));
        tls_session_free(c->tls);
        c->tls = NULL;
        close(c->fd);
        c->fd = -1;
        return -1;
    }
    return 0;
}

void
pipeconn_close(struct pipeconn *c)
{
    if (c->tls != NULL) {
        tls_session_close_notify(c->tls);
        tls_session_free(c->tls);
    }
    if (c->fd >= 0) {
        close(c->fd);
    }
    free(c->out);
    free(c->in);
    memset(c, 0, sizeof(*c));
    c->fd = -1;
}

char *
pipeconn_reserve(struct pipeconn *c, size_t n)
{
    if (c->out_off > 0 && c->out_off == c->out_len) {
        c->out_off = c->out_len = 0; /* all sent: start over */
    }
    if (c->out_len + n > c->out_cap) {
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
pipeconn_commit(struct pipeconn *c, size_t n)
{
    c->out_len += n;
}

void
pipeconn_append(struct pipeconn *c, const void *data, size_t len)
{
    memcpy(pipeconn_reserve(c, len), data, len);
    pipeconn_commit(c, len);
}

size_t
pipeconn_pending(const struct pipeconn *c)
{
    return c->out_len - c->out_off;
}

/* Writes like send(2), through the TLS session if there is one. */
static ssize_t
_send(struct pipeconn *c, const void *p, size_t len)
{
    if (c->tls == NULL) {
        return send(c->fd, p, len, MSG_NOSIGNAL);
    }
    size_t put = 0;
    switch (tls_session_write(c->tls, p, len, &put)) {
    case TLS_OK:
        return (ssize_t)put;
    case TLS_WANT_WRITE:
        errno = EAGAIN;
        return -1;
    default:
        errno = EIO;
        return -1;
    }
}

/* Reads like recv(2), through the TLS session if there is one. */
static ssize_t
_recv(struct pipeconn *c, void *p, size_t len)
{
    if (c->tls == NULL) {
        return recv(c->fd, p, len, 0);
    }
    size_t got = 0;
    switch (tls_session_read(c->tls, p, len, &got)) {
    case TLS_OK:
        return (ssize_t)got;
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

bool
pipeconn_buffered(const struct pipeconn *c)
{
    return c->tls != NULL && tls_session_pending(c->tls);
}

int
pipeconn_flush(struct pipeconn *c)
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

ssize_t
pipeconn_fill(struct pipeconn *c)
{
    if (c->in_len == c->in_cap) {
        if (c->in_cap >= c->in_max) {
            errno = ENOBUFS;
            return -1;
        }
        size_t cap = c->in_cap * 2 < c->in_max ? c->in_cap * 2 : c->in_max;
        c->in = _grow(c->in, cap);
        c->in_cap = cap;
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
pipeconn_consume(struct pipeconn *c, size_t n)
{
    memmove(c->in, c->in + n, c->in_len - n);
    c->in_len -= n;
}
