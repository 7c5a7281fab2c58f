/*
 * ping: `kura ping`, the health check for keepalived, load balancers and
 * monitoring: is kurad answering, and does it take writes?
 *
 * It connects, authenticates with a user:password file if given (the
 * format of kurad's -auth), asks "stats" and reads kura_writable, all
 * within one deadline. A server whose stats are masked (-mask stat) is
 * judged by "version" alone.
 */
#include "ping.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util.h"

#define PING_REPLY_MAX (256 << 10)

struct conn {
    int fd;
    uint64_t deadline_ms;
};

static int
_remaining(const struct conn *c)
{
    uint64_t now = util_mono_ms();
    return now >= c->deadline_ms ? 0 : (int)(c->deadline_ms - now);
}

/* Connects to host:port before the deadline; -1 on failure. */
static int
_connect(struct conn *c, const char *host, const char *port)
{
    struct addrinfo hints;
    struct addrinfo *res = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &res) != 0) {
        return -1;
    }
    c->fd = -1;
    for (struct addrinfo *a = res; a != NULL && c->fd < 0; a = a->ai_next) {
        int fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                        0);
        if (fd < 0) {
            continue;
        }
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
    return c->fd >= 0 ? 0 : -1;
}

static int
_send(struct conn *c, const char *s, size_t n)
{
    while (n > 0) {
        struct pollfd p = {c->fd, POLLOUT, 0};
        if (poll(&p, 1, _remaining(c)) != 1) {
            return -1;
        }
        ssize_t w = send(c->fd, s, n, MSG_NOSIGNAL);
        if (w < 0 && errno != EAGAIN && errno != EINTR) {
            return -1;
        }
        if (w > 0) {
            s += w;
            n -= (size_t)w;
        }
    }
    return 0;
}

/* Reads until `out` ends with one of the terminators; -1 on failure. */
static int
_read_until(struct conn *c, char *out, size_t cap, const char *const *ends,
            int nends)
{
    size_t have = 0;
    out[0] = '\0';
    for (;;) {
        for (int i = 0; i < nends; i++) {
            size_t n = strlen(ends[i]);
            if (have >= n && memcmp(out + have - n, ends[i], n) == 0) {
                return 0;
            }
        }
        if (have + 1 >= cap) {
            return -1;
        }
        struct pollfd p = {c->fd, POLLIN, 0};
        if (poll(&p, 1, _remaining(c)) != 1) {
            return -1;
        }
        ssize_t r = recv(c->fd, out + have, cap - 1 - have, 0);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
            return -1;
        }
        if (r > 0) {
            have += (size_t)r;
            out[have] = '\0';
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
        return -1;
    }
    line[strcspn(line, "\r\n")] = '\0';
    *colon = ' ';
    int n = snprintf(token, cap, "%s", line);
    memset(line, 0, sizeof(line));
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

static void
_usage(FILE *out)
{
    fprintf(out, "usage: kura ping [--host H] [--port P] [--timeout MS] "
                 "[--auth FILE] [--quiet]\n");
}

int
ping_cmd(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"host", required_argument, NULL, 'h'},
        {"port", required_argument, NULL, 'p'},
        {"timeout", required_argument, NULL, 't'},
        {"auth", required_argument, NULL, 'a'},
        {"quiet", no_argument, NULL, 'q'},
        {NULL, 0, NULL, 0},
    };
    const char *host = "127.0.0.1";
    const char *port = "1978";
    const char *auth = NULL;
    long timeout_ms = 2000;
    bool quiet = false;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (ch) {
        case 'h': host = optarg; break;
        case 'p': port = optarg; break;
        case 'a': auth = optarg; break;
        case 'q': quiet = true; break;
        case 't':
            timeout_ms = strtol(optarg, NULL, 10);
            if (timeout_ms <= 0) {
                _usage(stderr);
                return PING_USAGE;
            }
            break;
        default: _usage(stderr); return PING_USAGE;
        }
    }
    if (optind != argc) {
        _usage(stderr);
        return PING_USAGE;
    }
    struct conn c = {-1, util_mono_ms() + (uint64_t)timeout_ms};
    char *reply = malloc(PING_REPLY_MAX);
    int rc = PING_DOWN;
    const char *why = "no answer";
    if (reply == NULL || _connect(&c, host, port) != 0) {
        why = "cannot connect";
        goto out;
    }
    if (auth != NULL) {
        char token[600];
        char req[700];
        if (_auth_token(auth, token, sizeof(token)) != 0) {
            why = "cannot read the user:password file";
            rc = PING_USAGE;
            goto out;
        }
        int n = snprintf(req, sizeof(req), "set ping 0 0 %zu\r\n%s\r\n",
                         strlen(token), token);
        memset(token, 0, sizeof(token));
        static const char *const ends[] = {"\r\n"};
        if (_send(&c, req, (size_t)n) != 0 ||
            _read_until(&c, reply, PING_REPLY_MAX, ends, 1) != 0) {
            goto out;
        }
        if (strcmp(reply, "STORED\r\n") != 0) {
            why = "authentication refused";
            goto out;
        }
    }
    static const char *const ends[] = {"END\r\n", "ERROR\r\n",
                                       "not allowed\r\n",
                                       "unauthenticated\r\n"};
    if (_send(&c, "stats\r\n", 7) != 0 ||
        _read_until(&c, reply, PING_REPLY_MAX, ends, 4) != 0) {
        goto out;
    }
    if (strstr(reply, "unauthenticated") != NULL) {
        why = "the server wants authentication (--auth FILE)";
        goto out;
    }
    if (strstr(reply, "not allowed") != NULL) {
        /* stats masked: an answer to version is all there is to know */
        static const char *const vend[] = {"\r\n"};
        if (_send(&c, "version\r\n", 9) != 0 ||
            _read_until(&c, reply, PING_REPLY_MAX, vend, 1) != 0 ||
            strncmp(reply, "VERSION ", 8) != 0) {
            goto out;
        }
        rc = PING_OK;
        why = "answering (stats masked)";
        goto out;
    }
    const char *w = strstr(reply, "STAT kura_writable ");
    if (w == NULL) {
        why = "not a kurad (no kura_writable)";
        goto out;
    }
    if (w[19] == '1') {
        rc = PING_OK;
        why = "answering, accepting writes";
    } else {
        rc = PING_READONLY;
        why = "answering, refusing writes (see its log)";
    }
out:
    if (!quiet) {
        fprintf(rc == PING_OK ? stdout : stderr, "kura ping %s:%s: %s\n",
                host, port, why);
    }
    if (c.fd >= 0) {
        close(c.fd);
    }
    free(reply);
    return rc;
}
