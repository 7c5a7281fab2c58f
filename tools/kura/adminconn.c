/*
 * adminconn: a deadline-bound text-protocol connection for kura ping and
 * kura stats (see adminconn.h).
 */
#include "adminconn.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util.h"

static int
_remaining(const struct adminconn *c)
{
    uint64_t now = util_mono_ms();
    return now >= c->deadline_ms ? 0 : (int)(c->deadline_ms - now);
}

int
adminconn_open(struct adminconn *c, const char *host, const char *port,
               long timeout_ms, struct tls_ctx *tls)
{
    struct addrinfo hints;
    struct addrinfo *res = NULL;

    c->fd = -1;
    netio_stream_init(&c->io, -1, NULL);
    c->deadline_ms = util_mono_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms
                                                                : 0);
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &res) != 0) {
        return -1;
    }
    for (struct addrinfo *a = res; a != NULL && c->fd < 0; a = a->ai_next) {
        int fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                        0);
        if (fd < 0) {
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
                c->fd = fd;
                continue;
            }
        } else if (errno == 0 || errno == EISCONN) {
            c->fd = fd;
            continue;
        }
        close(fd);
    }
    freeaddrinfo(res);
    if (c->fd < 0) {
        return -1;
    }
    struct tls_session *t = NULL;
    if (tls != NULL && (t = tls_session_connect(tls, c->fd, host)) == NULL) {
        adminconn_close(c);
        return -1;
    }
    netio_stream_init(&c->io, c->fd, t);
    char why[512];
    if (netio_stream_handshake(&c->io, _remaining(c), why, sizeof(why)) !=
        0) {
        fprintf(stderr, "kura: %s:%s: %s\n", host, port, why);
        adminconn_close(c);
        return -1;
    }
    return 0;
}

void
adminconn_close(struct adminconn *c)
{
    if (c->fd >= 0) {
        netio_stream_close(&c->io); /* closes c->fd */
        c->fd = -1;
    }
}

int
adminconn_send(struct adminconn *c, const char *s, size_t n)
{
    int left = _remaining(c);
    return left > 0 ? netio_stream_send_all(&c->io, s, n, left) : -1;
}

/* Reads more into out[*have..cap-1); -1 on EOF, error or the deadline. */
static int
_read_more(struct adminconn *c, char *out, size_t cap, size_t *have)
{
    if (*have + 1 >= cap) {
        return -1;
    }
    if (netio_stream_wait_readable(&c->io, _remaining(c)) != 1) {
        return -1;
    }
    ssize_t r = netio_stream_recv(&c->io, out + *have, cap - 1 - *have);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
        return -1;
    }
    if (r > 0) {
        *have += (size_t)r;
        out[*have] = '\0';
    }
    return 0;
}

int
adminconn_read_until(struct adminconn *c, char *out, size_t cap,
                     const char *const *ends, int nends)
{
    size_t have = 0;
    if (cap == 0) {
        return -1;
    }
    out[0] = '\0';
    for (;;) {
        for (int i = 0; i < nends; i++) {
            size_t n = strlen(ends[i]);
            if (have >= n && memcmp(out + have - n, ends[i], n) == 0) {
                return 0;
            }
        }
        if (_read_more(c, out, cap, &have) != 0) {
            return -1;
        }
    }
}

/* Reads "user:password" from the first line of `path` into `token` as
 * memcached's text authentication wants it ("user password"). */
static int
_auth_token(const char *path, char *token, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return -1;
    }
    char line[600];
    bool ok = fgets(line, sizeof(line), f) != NULL;
    fclose(f);
    char *colon = ok ? strchr(line, ':') : NULL;
    if (colon == NULL) {
        memset(line, 0, sizeof(line));
        return -1;
    }
    line[strcspn(line, "\r\n")] = '\0';
    *colon = ' ';
    int n = snprintf(token, cap, "%s", line);
    memset(line, 0, sizeof(line));
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

enum adminconn_status
adminconn_login(struct adminconn *c, const char *path, char *reply,
                size_t cap)
{
    static const char *const ends[] = {"\r\n"};
    char token[600];
    char req[700];

    if (_auth_token(path, token, sizeof(token)) != 0) {
        return ADMINCONN_BAD_FILE;
    }
    int n = snprintf(req, sizeof(req), "set kura 0 0 %zu\r\n%s\r\n",
                     strlen(token), token);
    memset(token, 0, sizeof(token));
    int rc = n > 0 && (size_t)n < sizeof(req)
                 ? adminconn_send(c, req, (size_t)n)
                 : -1;
    memset(req, 0, sizeof(req));
    if (rc != 0 || adminconn_read_until(c, reply, cap, ends, 1) != 0) {
        return ADMINCONN_NO_ANSWER;
    }
    return strcmp(reply, "STORED\r\n") == 0 ? ADMINCONN_OK
                                            : ADMINCONN_REFUSED;
}

/* What a line of a stats reply (without its "\r\n") says. */
static enum adminconn_status
_stats_line(const char *line, size_t len, bool *done)
{
    *done = true;
    if (len == 3 && memcmp(line, "END", 3) == 0) {
        return ADMINCONN_OK;
    }
    if (len >= 5 && memcmp(line, "STAT ", 5) == 0) {
        *done = false;
        return ADMINCONN_OK;
    }
    if (len == 28 && memcmp(line, "CLIENT_ERROR unauthenticated", 28) == 0) {
        return ADMINCONN_UNAUTHENTICATED;
    }
    if (len >= 12 && memcmp(line + len - 12, " not allowed", 12) == 0) {
        return ADMINCONN_MASKED;
    }
    return ADMINCONN_ERROR;
}

enum adminconn_status
adminconn_stats(struct adminconn *c, char *reply, size_t cap)
{
    size_t have = 0;
    size_t line = 0; /* start of the first line not yet looked at */

    if (cap == 0) {
        return ADMINCONN_ERROR;
    }
    reply[0] = '\0';
    if (adminconn_send(c, "stats\r\n", 7) != 0) {
        return ADMINCONN_NO_ANSWER;
    }
    for (;;) {
        char *nl;
        while ((nl = memchr(reply + line, '\n', have - line)) != NULL) {
            size_t len = (size_t)(nl - (reply + line));
            if (len > 0 && reply[line + len - 1] == '\r') {
                len--;
            }
            bool done;
            enum adminconn_status st = _stats_line(reply + line, len, &done);
            line = (size_t)(nl - reply) + 1;
            if (done) {
                return st;
            }
        }
        if (_read_more(c, reply, cap, &have) != 0) {
            return ADMINCONN_NO_ANSWER;
        }
    }
}
