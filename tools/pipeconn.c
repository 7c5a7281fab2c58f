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
              size_t in_initial, size_t in_max)
{
    memset(c, 0, sizeof(*c));
    c->in_max = in_max > in_initial ? in_max : in_initial;
    c->in_cap = in_initial;
    c->in = _grow(NULL, in_initial);
    c->fd = netio_connect(host, port, timeout_ms);
    if (c->fd < 0) {
        return -1;
    }
    if (util_set_nonblock(c->fd) != 0) {
        int saved = errno;
        close(c->fd);
        c->fd = -1;
        errno = saved;
        return -1;
    }
    return 0;
}

void
pipeconn_close(struct pipeconn *c)
{
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

int
pipeconn_flush(struct pipeconn *c)
{
    while (c->out_off < c->out_len) {
        ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
                         MSG_NOSIGNAL);
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
        ssize_t n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
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
