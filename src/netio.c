/*
 * netio: deadline-bounded blocking socket helpers (see netio.h).
 */
#include "netio.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util.h"

int
netio_wait_readable(int fd, int timeout_ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    for (;;) {
        int n = poll(&p, 1, timeout_ms);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        return n < 0 ? -1 : n;
    }
}

int
netio_connect(const char *host, int port, int timeout_ms)
{
    struct addrinfo hints;
    struct addrinfo *res = NULL;
    char service[16];
    int one = 1;

    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    snprintf(service, sizeof(service), "%d", port);
    if (getaddrinfo(host, service, &hints, &res) != 0) {
        errno = EHOSTUNREACH;
        return -1;
    }
    int fd = -1;
    for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
                    0);
        if (fd < 0) {
            continue;
        }
        int rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
        if (rc != 0 && errno == EINPROGRESS) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            int err = 0;
            socklen_t len = sizeof(err);
            if (poll(&p, 1, timeout_ms) == 1 &&
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 &&
                err == 0) {
                rc = 0;
            } else {
                errno = err != 0 ? err : ETIMEDOUT;
            }
        }
        if (rc == 0) {
            break;
        }
        int saved = errno;
        close(fd);
        fd = -1;
        errno = saved;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

int
netio_send_all(int fd, const void *p, size_t len, int timeout_ms)
{
    const char *c = p;
    while (len > 0) {
        ssize_t n = send(fd, c, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            c += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd pw = {.fd = fd, .events = POLLOUT};
            int r = poll(&pw, 1, timeout_ms);
            if (r == 0) {
                errno = ETIMEDOUT;
                return -1;
            }
            if (r < 0 && errno != EINTR) {
                return -1;
            }
            continue;
        }
        return -1;
    }
    return 0;
}

long
netio_read_line(int fd, char *buf, size_t cap, int timeout_ms)
{
    size_t n = 0;
    uint64_t deadline = util_mono_ms() + (uint64_t)timeout_ms;

    while (n + 1 < cap) {
        int left = (int)(deadline - util_mono_ms());
        if ((int64_t)(deadline - util_mono_ms()) <= 0 ||
            netio_wait_readable(fd, left) <= 0) {
            return -1;
        }
        ssize_t r = recv(fd, buf + n, 1, 0);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            return -1;
        }
        n++;
        if (n >= 2 && buf[n - 2] == '\r' && buf[n - 1] == '\n') {
            buf[n - 2] = '\0';
            return (long)(n - 2);
        }
    }
    return -1;
}

/* ------------------------------------------------------------- streams */

/* Milliseconds left until `deadline`, at least 0. */
static int
_left(uint64_t deadline)
{
    uint64_t now = util_mono_ms();
    return now >= deadline ? 0 : (int)(deadline - now);
}

/* Waits for what a TLS call asked: 1 when ready, 0 on timeout, -1. */
static int
_wait_for(int fd, enum tls_status want, int timeout_ms)
{
    struct pollfd p = {.fd = fd,
                       .events = want == TLS_WANT_WRITE ? POLLOUT : POLLIN};
    for (;;) {
        int n = poll(&p, 1, timeout_ms);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        return n < 0 ? -1 : n;
    }
}

void
netio_stream_init(struct netio_stream *s, int fd, struct tls_session *tls)
{
    s->fd = fd;
    s->tls = tls;
    s->more = false;
    pthread_mutex_init(&s->lock, NULL);
    if (tls != NULL && fd >= 0) {
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    }
}

void
netio_stream_deinit(struct netio_stream *s)
{
    if (s->tls != NULL) {
        tls_session_free(s->tls);
        s->tls = NULL;
    }
}

int
netio_stream_handshake(struct netio_stream *s, int timeout_ms, char *err,
                       size_t errlen)
{
    if (s->tls == NULL) {
        return 0;
    }
    uint64_t deadline = util_mono_ms() + (uint64_t)timeout_ms;
    for (;;) {
        pthread_mutex_lock(&s->lock);
        enum tls_status st = tls_session_handshake(s->tls);
        pthread_mutex_unlock(&s->lock);
        if (st == TLS_OK) {
            return 0;
        }
        if (st == TLS_WANT_READ || st == TLS_WANT_WRITE) {
            int r = _wait_for(s->fd, st, _left(deadline));
            if (r > 0) {
                continue;
            }
            snprintf(err, errlen, "TLS handshake %s",
                     r == 0 ? "timed out" : "failed: poll");
            return -1;
        }
        char why[256];
        tls_session_error(s->tls, why, sizeof(why));
        snprintf(err, errlen, "TLS handshake failed: %s", why);
        return -1;
    }
}

int
netio_stream_connect(struct netio_stream *s, const char *host, int port,
                     struct tls_ctx *tls, int timeout_ms, char *err,
                     size_t errlen)
{
    uint64_t deadline = util_mono_ms() + (uint64_t)timeout_ms;
    int fd = netio_connect(host, port, timeout_ms);

    netio_stream_init(s, -1, NULL);
    if (fd < 0) {
        snprintf(err, errlen, "cannot connect to %s:%d: %s", host, port,
                 strerror(errno));
        return -1;
    }
    struct tls_session *t = NULL;
    if (tls != NULL && (t = tls_session_connect(tls, fd, host)) == NULL) {
        snprintf(err, errlen, "cannot set up TLS to %s:%d", host, port);
        close(fd);
        return -1;
    }
    netio_stream_init(s, fd, t);
    if (netio_stream_handshake(s, _left(deadline), err, errlen) != 0) {
        netio_stream_deinit(s);
        close(fd);
        s->fd = -1;
        return -1;
    }
    return 0;
}

bool
netio_stream_tls_error(struct netio_stream *s, char *out, size_t cap)
{
    if (s->tls == NULL) {
        return false;
    }
    pthread_mutex_lock(&s->lock);
    bool failed = tls_session_error(s->tls, out, cap);
    pthread_mutex_unlock(&s->lock);
    return failed;
}

void
netio_stream_close(struct netio_stream *s)
{
    if (s->tls != NULL) {
        pthread_mutex_lock(&s->lock);
        tls_session_close_notify(s->tls);
        pthread_mutex_unlock(&s->lock);
    }
    netio_stream_deinit(s);
    if (s->fd >= 0) {
        close(s->fd);
        s->fd = -1;
    }
}

int
netio_stream_send_all(struct netio_stream *s, const void *p, size_t len,
                      int timeout_ms)
{
    if (s->tls == NULL) {
        return netio_send_all(s->fd, p, len, timeout_ms);
    }
    const char *c = p;
    while (len > 0) {
        size_t put = 0;
        pthread_mutex_lock(&s->lock);
        enum tls_status st = tls_session_write(s->tls, c, len, &put);
        pthread_mutex_unlock(&s->lock);
        if (st == TLS_OK) {
            c += put;
            len -= put;
            continue;
        }
        if (st == TLS_WANT_READ || st == TLS_WANT_WRITE) {
            /* As netio_send_all(): the deadline is for the peer to make
             * room at any point, not for the whole. */
            int r = _wait_for(s->fd, st, timeout_ms);
            if (r == 0) {
                errno = ETIMEDOUT;
                return -1;
            }
            if (r < 0) {
                return -1;
            }
            continue;
        }
        errno = st == TLS_CLOSED ? EPIPE : EIO;
        return -1;
    }
    return 0;
}

ssize_t
netio_stream_recv(struct netio_stream *s, void *buf, size_t cap)
{
    if (s->tls == NULL) {
        for (;;) {
            ssize_t n = recv(s->fd, buf, cap, MSG_DONTWAIT);
            if (n < 0 && errno == EINTR) {
                continue;
            }
            return n;
        }
    }
    size_t total = 0;
    enum tls_status st = TLS_OK;
    pthread_mutex_lock(&s->lock);
    while (total < cap) {
        size_t got = 0;
        st = tls_session_read(s->tls, (char *)buf + total, cap - total, &got);
        if (st != TLS_OK) {
            break;
        }
        total += got;
    }
    s->more = total == cap && tls_session_pending(s->tls);
    pthread_mutex_unlock(&s->lock);
    if (total > 0) {
        return (ssize_t)total; /* an end or error shows on the next call */
    }
    switch (st) {
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

int
netio_stream_wait_readable(struct netio_stream *s, int timeout_ms)
{
    if (s->tls != NULL) {
        pthread_mutex_lock(&s->lock);
        bool more = s->more;
        pthread_mutex_unlock(&s->lock);
        if (more) {
            return 1; /* whole records the last read had no room for */
        }
    }
    return netio_wait_readable(s->fd, timeout_ms);
}

long
netio_stream_read_line(struct netio_stream *s, char *buf, size_t cap,
                       int timeout_ms)
{
    if (s->tls == NULL) {
        return netio_read_line(s->fd, buf, cap, timeout_ms);
    }
    size_t n = 0;
    uint64_t deadline = util_mono_ms() + (uint64_t)timeout_ms;
    while (n + 1 < cap) {
        /* One byte at a time: the session keeps what follows the line. */
        ssize_t r = netio_stream_recv(s, buf + n, 1);
        if (r == 0 || (r < 0 && errno != EAGAIN)) {
            return -1;
        }
        if (r < 0) {
            int left = _left(deadline);
            if (left == 0 || netio_stream_wait_readable(s, left) <= 0) {
                return -1;
            }
            continue;
        }
        n++;
        if (n >= 2 && buf[n - 2] == '\r' && buf[n - 1] == '\n') {
            buf[n - 2] = '\0';
            return (long)(n - 2);
        }
    }
    return -1;
}
