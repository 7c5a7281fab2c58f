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
