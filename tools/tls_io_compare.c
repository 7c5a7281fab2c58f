/*
 * tls_io_compare: the measurement behind kura's choice of TLS I/O path
 * (doc/tls.md, "Why not libevent's bufferevent_openssl"); built and run by
 * tools/bench-tls-io, not installed.
 *
 *   tls_io_compare direct|bufferevent PORT CERT KEY
 *
 * One thread, one libevent loop, serving just enough of memcached's text
 * protocol for `kura bench --tls` (a get gets END, a set STORED) in one of
 * two ways, each the shape a kura worker would take:
 *
 *   direct       conn.c's: the connection's event on its socket,
 *                tls_session_read() straight into the connection's input
 *                buffer, replies gathered in its output buffer and sent
 *                with tls_session_write() from there (src/tls.c).
 *   bufferevent  libevent's bufferevent_openssl over the socket: TLS
 *                reads into the bufferevent's input evbuffer, which is
 *                moved into the connection's buffer for the parser (kura
 *                parses contiguous bytes), and replies are written into
 *                its output evbuffer; libevent sends them when it likes
 *                (kura would have to hold them until they may go, txn.h
 *                T3, and copy them in then).
 *
 * Prints the process's CPU time at SIGINT/SIGTERM, so the script can
 * divide by the operations the bench reports.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/event_struct.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tls.h"
#include "util.h"

#define BUF_CAP 65536

struct cx {
    char in[BUF_CAP];
    size_t in_len;
    char out[BUF_CAP];
    size_t out_len;
    int fd;
    struct tls_session *tls;       /* direct */
    struct event ev;               /* direct */
    struct bufferevent *bev;       /* bufferevent */
};

static struct event_base *base;
static struct tls_ctx *kctx;       /* direct: kura's own context */
static SSL_CTX *sctx;              /* bufferevent: an OpenSSL context */
static bool use_bev;

/* Answers every whole request in c->in into c->out. */
static void
_serve(struct cx *c)
{
    size_t off = 0;
    for (;;) {
        char *nl = memchr(c->in + off, '\n', c->in_len - off);
        if (nl == NULL) {
            break;
        }
        size_t line = (size_t)(nl - (c->in + off)) + 1;
        if (strncmp(c->in + off, "set ", 4) == 0) {
            /* set <key> <flags> <exptime> <bytes>: the data follows */
            uint64_t bytes = 0;
            const char *sp = memrchr(c->in + off, ' ', line);
            size_t bare = line - (line >= 2 && nl[-1] == '\r' ? 2 : 1);
            if (sp != NULL &&
                !util_parse_uint(sp + 1, (size_t)(c->in + off + bare - sp - 1),
                                 (uint64_t)1 << 30, &bytes)) {
                bytes = 0;
            }
            if (c->in_len - off < line + bytes + 2) {
                break;
            }
            line += bytes + 2;
            memcpy(c->out + c->out_len, "STORED\r\n", 8);
            c->out_len += 8;
        } else {
            memcpy(c->out + c->out_len, "END\r\n", 5);
            c->out_len += 5;
        }
        off += line;
    }
    memmove(c->in, c->in + off, c->in_len - off);
    c->in_len -= off;
}

static void
_free(struct cx *c)
{
    if (c->bev != NULL) {
        bufferevent_free(c->bev);
    } else {
        event_del(&c->ev);
        tls_session_free(c->tls);
        close(c->fd);
    }
    free(c);
}

/* ------------------------------------------------------------- direct */

static void
_direct(evutil_socket_t fd, short what, void *arg)
{
    struct cx *c = arg;
    (void)fd;
    (void)what;
    for (;;) {
        size_t got = 0;
        enum tls_status st = tls_session_read(c->tls, c->in + c->in_len,
                                              BUF_CAP - c->in_len, &got);
        if (st == TLS_WANT_READ || st == TLS_WANT_WRITE) {
            break;
        }
        if (st != TLS_OK) {
            _free(c);
            return;
        }
        c->in_len += got;
        _serve(c);
        if (!tls_session_pending(c->tls)) {
            break;
        }
    }
    size_t off = 0;
    while (off < c->out_len) {
        size_t put = 0;
        if (tls_session_write(c->tls, c->out + off, c->out_len - off, &put) !=
            TLS_OK) {
            break; /* a full socket: this load never gets there */
        }
        off += put;
    }
    c->out_len = 0;
}

/* --------------------------------------------------------- bufferevent */

static void
_bev_read(struct bufferevent *bev, void *arg)
{
    struct cx *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    c->in_len += evbuffer_remove(in, c->in + c->in_len, BUF_CAP - c->in_len);
    _serve(c);
    bufferevent_write(bev, c->out, c->out_len);
    c->out_len = 0;
}

static void
_bev_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        _free(arg);
    }
}

static void
_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
        int len, void *arg)
{
    int one = 1;
    (void)l;
    (void)sa;
    (void)len;
    (void)arg;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct cx *c = calloc(1, sizeof(*c));
    c->fd = fd;
    if (use_bev) {
        SSL *ssl = SSL_new(sctx);
        c->bev = bufferevent_openssl_socket_new(base, fd, ssl,
                                                BUFFEREVENT_SSL_ACCEPTING,
                                                BEV_OPT_CLOSE_ON_FREE);
        bufferevent_openssl_set_allow_dirty_shutdown(c->bev, 1);
        bufferevent_setcb(c->bev, _bev_read, NULL, _bev_event, c);
        bufferevent_enable(c->bev, EV_READ | EV_WRITE);
        return;
    }
    evutil_make_socket_nonblocking(fd);
    c->tls = tls_session_accept(kctx, fd);
    event_assign(&c->ev, base, fd, EV_READ | EV_PERSIST, _direct, c);
    event_add(&c->ev, NULL);
}

static void
_stop(evutil_socket_t sig, short what, void *arg)
{
    (void)sig;
    (void)what;
    (void)arg;
    event_base_loopbreak(base);
}

int
main(int argc, char **argv)
{
    char err[512];
    if (argc != 5) {
        fprintf(stderr, "usage: tls_io_compare direct|bufferevent PORT CERT "
                        "KEY\n");
        return 2;
    }
    use_bev = strcmp(argv[1], "bufferevent") == 0;
    signal(SIGPIPE, SIG_IGN);
    struct tls_options o = {0};
    o.cert = argv[3];
    o.key = argv[4];
    kctx = tls_ctx_create(TLS_ROLE_SERVER, &o, err, sizeof(err));
    if (kctx == NULL) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    /* The same settings as tls.c's server context. */
    sctx = SSL_CTX_new(TLS_server_method());
    SSL_CTX_set_min_proto_version(sctx, TLS1_2_VERSION);
    SSL_CTX_set_options(sctx, SSL_OP_NO_RENEGOTIATION |
                                  SSL_OP_IGNORE_UNEXPECTED_EOF);
    SSL_CTX_set_mode(sctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                               SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                               SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_session_cache_mode(sctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_num_tickets(sctx, 1);
    /* Not read-ahead, as tls.c sets: bufferevent_openssl then leaves
     * requests unanswered in OpenSSL's buffer (libevent 2.1 reads while
     * the socket is readable, not while the session has bytes). */
    if (SSL_CTX_use_certificate_chain_file(sctx, argv[3]) != 1 ||
        SSL_CTX_use_PrivateKey_file(sctx, argv[4], SSL_FILETYPE_PEM) != 1) {
        fprintf(stderr, "cannot load %s/%s\n", argv[3], argv[4]);
        return 1;
    }
    uint64_t port;
    if (!util_parse_uint(argv[2], strlen(argv[2]), 65535, &port) ||
        port == 0) {
        fprintf(stderr, "tls_io_compare: PORT is 1 to 65535\n");
        return 2;
    }
    base = event_base_new();
    struct sockaddr_in sin = {0};
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sin.sin_port = htons((uint16_t)port);
    struct evconnlistener *l = evconnlistener_new_bind(
        base, _accept, NULL, LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE, 4096,
        (struct sockaddr *)&sin, sizeof(sin));
    if (l == NULL) {
        fprintf(stderr, "cannot listen on %s\n", argv[2]);
        return 1;
    }
    struct event *s1 = evsignal_new(base, SIGINT, _stop, NULL);
    struct event *s2 = evsignal_new(base, SIGTERM, _stop, NULL);
    evsignal_add(s1, NULL);
    evsignal_add(s2, NULL);
    printf("ready\n");
    fflush(stdout);
    event_base_dispatch(base);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("cpu_us %ld\n",
           (long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
               (long)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec));
    printf("maxrss_kb %ld\n", ru.ru_maxrss);
    return 0;
}
