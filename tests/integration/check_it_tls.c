/*
 * Integration tests: kurad's TLS port, mutual TLS, reloads, the refusals
 * and the hostile battery (a master/master pair over -mtls is in
 * check_it_tls_pair).
 *
 * The certificates are made for each test by tests/tls/make-certs in a
 * temporary directory. The client side is tls.h and netio.h's streams
 * (what kurad's receiver and the kura tool use), the kura tool itself,
 * and, where the test needs what no well-behaved client does (garbage
 * after a handshake, a renegotiation), OpenSSL and raw sockets directly.
 * Every wait polls against a deadline.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../unit/unit_main.h"
#include "harness.h"
#include "netio.h"
#include "tls.h"

static struct kura_proc k;
static char certs[256];

static const char *
_at(const char *name)
{
    static char paths[16][512];
    static int next;
    char *p = paths[next++ % 16];
    snprintf(p, 512, "%s/%s", certs, name);
    return p;
}

static void
_make_certs(void)
{
    signal(SIGPIPE, SIG_IGN);
    snprintf(certs, sizeof(certs), "/tmp/kura-tls-it-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(certs));
    ck_assert_int_eq(harness_make_certs(certs), 0);
}

static void
_remove_certs(void)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", certs);
    ck_assert_int_eq(system(cmd), 0);
}

static void
_copy(const char *from, const char *to)
{
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", _at(from), _at(to));
    ck_assert_int_eq(system(cmd), 0);
}

/* A client context trusting the test CA, presenting cert/key if given. */
static struct tls_ctx *
_ctx(const char *cert, const char *key, bool resume)
{
    struct tls_options o = {0};
    char err[512];
    o.ca = _at("ca.pem");
    o.cert = cert != NULL ? _at(cert) : NULL;
    o.key = key != NULL ? _at(key) : NULL;
    o.resume = resume;
    struct tls_ctx *c = tls_ctx_create(TLS_ROLE_CLIENT, &o, err, sizeof(err));
    ck_assert_msg(c != NULL, "%s", err);
    return c;
}

/* Connects over TLS; false (with the reason in `err`) if refused. */
static bool
_tconnect(struct netio_stream *io, int port, struct tls_ctx *c, char *err,
          size_t errlen)
{
    return netio_stream_connect(io, "127.0.0.1", port, c, 5000, err,
                                errlen) == 0;
}

/*
 * Reads until `out` holds `term` (or `cap` - 1 bytes); NUL-terminates.
 * Returns the bytes read, or -1 on EOF, error or timeout first.
 */
static long
_tread(struct netio_stream *io, char *out, size_t cap, const char *term,
       size_t tlen, int timeout_ms)
{
    size_t got = 0;
    uint64_t deadline = harness_now_ms() + (uint64_t)timeout_ms;
    out[0] = '\0';
    while (got + 1 < cap) {
        if (got >= tlen && memmem(out, got, term, tlen) != NULL) {
            return (long)got;
        }
        uint64_t now = harness_now_ms();
        if (now >= deadline ||
            netio_stream_wait_readable(io, (int)(deadline - now)) <= 0) {
            return -1;
        }
        ssize_t n = netio_stream_recv(io, out + got, cap - 1 - got);
        if (n < 0 && errno == EAGAIN) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        got += (size_t)n;
        out[got] = '\0';
    }
    return (long)got;
}

/* Reads exactly `n` bytes within 5 s. */
static bool
_tread_n(struct netio_stream *io, char *out, size_t n)
{
    size_t got = 0;
    uint64_t deadline = harness_now_ms() + 5000;
    while (got < n) {
        uint64_t now = harness_now_ms();
        if (now >= deadline ||
            netio_stream_wait_readable(io, (int)(deadline - now)) <= 0) {
            return false;
        }
        ssize_t r = netio_stream_recv(io, out + got, n - got);
        if (r < 0 && errno == EAGAIN) {
            continue;
        }
        if (r <= 0) {
            return false;
        }
        got += (size_t)r;
    }
    return true;
}

/* Sends `req` and expects exactly `want` back. */
static bool
_tcheck(struct netio_stream *io, const char *req, const char *want)
{
    char reply[4096];
    if (netio_stream_send_all(io, req, strlen(req), 5000) != 0) {
        return false;
    }
    size_t wl = strlen(want);
    const char *tail = wl >= 2 ? want + wl - 2 : want;
    long n = _tread(io, reply, sizeof(reply), tail, strlen(tail), 5000);
    if (n < 0 || (size_t)n != wl || memcmp(reply, want, wl) != 0) {
        fprintf(stderr, "sent %s\nwanted %s\ngot %s\n", req, want, reply);
        return false;
    }
    return true;
}

/* A new TLS client on `port` sets and reads back a key. */
static void
_serves(int port, struct tls_ctx *c, const char *key)
{
    struct netio_stream io;
    char err[512];
    char req[256];
    char want[256];
    ck_assert_msg(_tconnect(&io, port, c, err, sizeof(err)), "%s", err);
    snprintf(req, sizeof(req), "set %s 0 0 2\r\nok\r\n", key);
    ck_assert(_tcheck(&io, req, "STORED\r\n"));
    snprintf(req, sizeof(req), "get %s\r\n", key);
    snprintf(want, sizeof(want), "VALUE %s 0 2\r\nok\r\nEND\r\n", key);
    ck_assert(_tcheck(&io, req, want));
    netio_stream_close(&io);
}

static void
_start(void)
{
    _make_certs();
    kura_init(&k, (const char *const[]){"-tlstout", "1", NULL});
    kura_add_tls(&k, certs, false);
    ck_assert_int_eq(kura_launch(&k), 0);
}

static void
_start_mtls(void)
{
    _make_certs();
    kura_init(&k, NULL);
    kura_add_tls(&k, certs, true);
    ck_assert_int_eq(kura_launch(&k), 0);
}

static void
_cleanup(void)
{
    kura_cleanup(&k);
    _remove_certs();
}

/* ------------------------------------------------- every protocol, HTTPS */

/* The 24-byte header of a binary request. */
static size_t
_bin(uint8_t *p, uint8_t op, const char *key, uint8_t extlen,
     const char *value)
{
    size_t kl = strlen(key);
    size_t vl = value != NULL ? strlen(value) : 0;
    uint32_t body = (uint32_t)(extlen + kl + vl);
    memset(p, 0, 24 + extlen);
    p[0] = 0x80;
    p[1] = op;
    p[3] = (uint8_t)kl;
    p[4] = extlen;
    p[8] = (uint8_t)(body >> 24);
    p[9] = (uint8_t)(body >> 16);
    p[10] = (uint8_t)(body >> 8);
    p[11] = (uint8_t)body;
    p[15] = 7; /* opaque */
    memcpy(p + 24 + extlen, key, kl);
    if (vl > 0) {
        memcpy(p + 24 + extlen + kl, value, vl);
    }
    return 24 + extlen + kl + vl;
}

START_TEST(test_every_protocol_over_tls)
{
    struct tls_ctx *c = _ctx(NULL, NULL, false);
    struct netio_stream io;
    char err[512];
    char buf[4096];

    ck_assert_msg(_tconnect(&io, k.tls_port, c, err, sizeof(err)), "%s", err);
    ck_assert(_tcheck(&io, "set t:a 5 0 3\r\nabc\r\n", "STORED\r\n"));
    ck_assert(_tcheck(&io, "get t:a\r\n", "VALUE t:a 5 3\r\nabc\r\nEND\r\n"));
    ck_assert(_tcheck(&io, "delete t:a\r\n", "DELETED\r\n"));
    ck_assert(_tcheck(&io, "ms t:m 2\r\nhi\r\n", "HD\r\n"));
    ck_assert(_tcheck(&io, "mg t:m v\r\n", "VA 2\r\nhi\r\n"));

    /* Binary (a connection speaks one protocol): a set, then a get. */
    netio_stream_close(&io);
    ck_assert_msg(_tconnect(&io, k.tls_port, c, err, sizeof(err)), "%s", err);
    uint8_t req[128];
    size_t n = _bin(req, 0x01, "t:b", 8, "bin");
    ck_assert_int_eq(netio_stream_send_all(&io, req, n, 5000), 0);
    ck_assert(_tread_n(&io, buf, 24));
    ck_assert_uint_eq((uint8_t)buf[6] | (uint8_t)buf[7], 0); /* stored */
    n = _bin(req, 0x00, "t:b", 0, NULL);
    ck_assert_int_eq(netio_stream_send_all(&io, req, n, 5000), 0);
    ck_assert_int_gt(_tread(&io, buf, sizeof(buf), "bin", 3, 5000), 0);
    ck_assert_uint_eq((uint8_t)buf[0], 0x81);
    ck_assert_uint_eq((uint8_t)buf[6] | (uint8_t)buf[7], 0); /* success */
    netio_stream_close(&io);

    /* HTTPS, two requests on one keep-alive connection. */
    ck_assert_msg(_tconnect(&io, k.tls_port, c, err, sizeof(err)), "%s", err);
    const char put[] = "PUT /t/doc HTTP/1.1\r\nHost: kura\r\n"
                       "Content-Type: application/json\r\n"
                       "Content-Length: 11\r\n\r\n{\"a\": true}";
    ck_assert_int_eq(netio_stream_send_all(&io, put, sizeof(put) - 1, 5000),
                     0);
    ck_assert_int_gt(_tread(&io, buf, sizeof(buf), "\r\n\r\n", 4, 5000), 0);
    ck_assert_msg(strncmp(buf, "HTTP/1.1 20", 11) == 0, "%s", buf);
    const char get[] = "GET /t/doc HTTP/1.1\r\nHost: kura\r\n\r\n";
    ck_assert_int_eq(netio_stream_send_all(&io, get, sizeof(get) - 1, 5000),
                     0);
    ck_assert_int_gt(_tread(&io, buf, sizeof(buf), "{\"a\": true}", 11, 5000),
                     0);
    ck_assert_msg(strncmp(buf, "HTTP/1.1 200", 12) == 0, "%s", buf);
    netio_stream_close(&io);

    /* The plaintext port is as it was, and sees the same data. */
    int fd = kc_connect(k.port);
    ck_assert(kc_check(fd, "mg t:m v\r\n", "VA 2\r\nhi\r\n"));
    ck_assert_int_ge(kc_stat(fd, "kura_tls_handshakes"), 3);
    long long expiry = kc_stat(fd, "kura_tls_cert_not_after");
    ck_assert_int_gt(expiry, (long long)time(NULL) + 29 * 86400);
    ck_assert_int_eq(kc_stat(fd, "kura_tls_link_cert_not_after"), 0);
    close(fd);
    tls_ctx_destroy(c);
}
END_TEST

/* --------------------------------------------------------- refusals */

START_TEST(test_refusals_in_each_protocol)
{
    struct tls_ctx *c = _ctx(NULL, NULL, false);
    struct netio_stream busy;
    char err[512];
    char buf[1024];

    /* A client in the middle of its work, which nothing below disturbs. */
    ck_assert_msg(_tconnect(&busy, k.tls_port, c, err, sizeof(err)), "%s",
                  err);
    ck_assert(_tcheck(&busy, "set busy 0 0 1\r\n1\r\n", "STORED\r\n"));

    int fd = kc_connect(k.tls_port);
    ck_assert(kc_check(fd, "get a\r\n",
                       "CLIENT_ERROR this port speaks TLS only\r\n"));
    ck_assert(kc_wait_closed(fd, 5000));
    close(fd);

    fd = kc_connect(k.tls_port);
    ck_assert_int_eq(kc_sends(fd, "GET /x HTTP/1.1\r\nHost: k\r\n\r\n"), 0);
    ck_assert_int_gt(kc_read_until(fd, buf, sizeof(buf), "only\n", 5000), 0);
    ck_assert_msg(strncmp(buf, "HTTP/1.1 400 ", 13) == 0, "%s", buf);
    ck_assert(kc_wait_closed(fd, 5000));
    close(fd);

    uint8_t req[64];
    size_t n = _bin(req, 0x00, "k", 0, NULL);
    fd = kc_connect(k.tls_port);
    ck_assert_int_eq(kc_send(fd, req, n), 0);
    ck_assert_int_gt(kc_read_until(fd, buf, sizeof(buf), "only", 5000), 0);
    ck_assert_uint_eq((uint8_t)buf[0], 0x81);
    ck_assert_uint_eq((uint8_t)buf[7], 0x83);
    ck_assert_uint_eq((uint8_t)buf[15], 7); /* the opaque, echoed */
    close(fd);

    /* A TLS client on the plaintext port: an alert it can report. */
    struct netio_stream io;
    ck_assert(!_tconnect(&io, k.port, c, err, sizeof(err)));
    ck_assert_msg(strstr(err, "handshake failure") != NULL, "%s", err);

    ck_assert(kura_wait_logged(&k, "a plaintext text client on the TLS port",
                               5000));
    ck_assert(kura_wait_logged(&k, "a plaintext HTTP client on the TLS port",
                               5000));
    ck_assert(kura_wait_logged(&k, "a plaintext binary client on the TLS "
                               "port", 5000));
    ck_assert(kura_wait_logged(&k, "a TLS client on the plaintext port; "
                               "refused (TLS is served on -tlsport)", 5000));
    ck_assert(_tcheck(&busy, "get busy\r\n", "VALUE busy 0 1\r\n1\r\nEND\r\n"));
    netio_stream_close(&busy);
    fd = kc_connect(k.port);
    ck_assert_int_eq(kc_stat(fd, "kura_tls_plaintext_refused"), 3);
    close(fd);
    tls_ctx_destroy(c);
}
END_TEST

/* --------------------------------------------------- handshake deadline */

/* A real client hello, taken from a session over a socketpair. */
static size_t
_client_hello(uint8_t *out, size_t cap)
{
    struct tls_ctx *c = _ctx(NULL, NULL, false);
    int fds[2];
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0,
                                fds), 0);
    struct tls_session *s = tls_session_connect(c, fds[0], "127.0.0.1");
    ck_assert_int_eq(tls_session_handshake(s), TLS_WANT_READ);
    ssize_t n = read(fds[1], out, cap);
    ck_assert_int_gt(n, 5);
    tls_session_free(s);
    close(fds[0]);
    close(fds[1]);
    tls_ctx_destroy(c);
    return (size_t)n;
}

START_TEST(test_slow_handshakes_time_out_alone)
{
    struct tls_ctx *c = _ctx(NULL, NULL, false);
    uint8_t hello[2048];
    size_t hlen = _client_hello(hello, sizeof(hello));

    /* One says nothing; one trickles its hello a byte every 200 ms,
     * which renews no deadline (-tlstout 1). */
    int idle = kc_connect(k.tls_port);
    int slow = kc_connect(k.tls_port);
    uint64_t t0 = harness_now_ms();
    size_t sent = 0;
    bool closed = false;
    while (!closed && harness_now_ms() - t0 < 6000) {
        if (sent < hlen) {
            closed = send(slow, hello + sent, 1, MSG_NOSIGNAL) != 1;
            sent++;
        }
        /* Others are served at once meanwhile. */
        uint64_t r0 = harness_now_ms();
        _serves(k.tls_port, c, "meanwhile");
        ck_assert_uint_lt(harness_now_ms() - r0, 1000);
        struct pollfd p = {slow, POLLIN, 0};
        if (poll(&p, 1, 200) == 1) {
            char b;
            closed = recv(slow, &b, 1, 0) <= 0;
        }
    }
    ck_assert_msg(closed, "a trickled hello was not cut off");
    ck_assert_uint_lt(sent, hlen); /* before the hello was complete */
    ck_assert(kc_wait_closed(idle, 3000));
    uint64_t took = harness_now_ms() - t0;
    ck_assert_uint_lt(took, 4000);
    close(idle);
    close(slow);
    ck_assert(kura_wait_logged(&k, "no TLS handshake within 1000 ms", 2000));
    int fd = kc_connect(k.port);
    ck_assert_int_ge(kc_stat(fd, "kura_tls_handshake_timeouts"), 2);
    close(fd);
    tls_ctx_destroy(c);
}
END_TEST

/* ------------------------------------------------------ hostile input */

/* A raw OpenSSL client on `port`, TLS at most `max_version`. */
static SSL *
_raw(int port, int max_version, int *fd_out, SSL_CTX **ctx_out)
{
    SSL_CTX *x = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_max_proto_version(x, max_version);
    SSL_CTX_load_verify_locations(x, _at("ca.pem"), NULL);
    int fd = kc_connect(port);
    ck_assert_int_ge(fd, 0);
    SSL *ssl = SSL_new(x);
    SSL_set_fd(ssl, fd);
    ck_assert_int_eq(SSL_connect(ssl), 1);
    *fd_out = fd;
    *ctx_out = x;
    return ssl;
}

/* True if the server closes the raw connection within 5 s. */
static bool
_raw_closed(SSL *ssl)
{
    char buf[256];
    uint64_t deadline = harness_now_ms() + 5000;
    while (harness_now_ms() < deadline) {
        int r = SSL_read(ssl, buf, sizeof(buf));
        if (r <= 0) {
            return true;
        }
    }
    return false;
}

START_TEST(test_hostile_battery)
{
    struct tls_ctx *c = _ctx(NULL, NULL, false);
    char junk[16384 + 5];
    for (size_t i = 0; i < sizeof(junk); i++) {
        junk[i] = (char)(i * 131 + 7);
    }
    long before = harness_rss_kb(k.pid);

    /* Garbage before the handshake, behind a handshake record's type. */
    int fd = kc_connect(k.tls_port);
    ck_assert_int_eq(kc_send(fd, "\x16\x03\x01\x00\x20", 5), 0);
    ck_assert_int_eq(kc_send(fd, junk, 32), 0);
    ck_assert(kc_wait_closed(fd, 5000));
    close(fd);
    ck_assert(kura_wait_logged(&k, "TLS handshake failed: ", 5000));

    /* Garbage after the handshake, under TLS, bypassing it. */
    int raw;
    SSL_CTX *x;
    SSL *ssl = _raw(k.tls_port, TLS1_3_VERSION, &raw, &x);
    ck_assert_int_eq(SSL_write(ssl, "version\r\n", 9), 9);
    ck_assert_int_eq(send(raw, junk, 100, MSG_NOSIGNAL), 100);
    ck_assert(_raw_closed(ssl));
    SSL_free(ssl);
    SSL_CTX_free(x);
    close(raw);
    ck_assert(kura_wait_logged(&k, "closed on a TLS error: ", 5000));

    /* A 16 KB record of junk, and a header claiming more than TLS
     * allows. */
    ssl = _raw(k.tls_port, TLS1_3_VERSION, &raw, &x);
    memcpy(junk, "\x17\x03\x03\x40\x00", 5);
    ck_assert_int_eq(send(raw, junk, sizeof(junk), MSG_NOSIGNAL),
                     (ssize_t)sizeof(junk));
    ck_assert(_raw_closed(ssl));
    SSL_free(ssl);
    SSL_CTX_free(x);
    close(raw);
    ssl = _raw(k.tls_port, TLS1_2_VERSION, &raw, &x);
    ck_assert_int_eq(send(raw, "\x17\x03\x03\xff\xff", 5, MSG_NOSIGNAL), 5);
    ck_assert(_raw_closed(ssl));
    SSL_free(ssl);
    close(raw);
    SSL_CTX_free(x);

    /* A TLS 1.2 renegotiation is refused; the server goes on. */
    ssl = _raw(k.tls_port, TLS1_2_VERSION, &raw, &x);
    ck_assert_int_eq(SSL_version(ssl), TLS1_2_VERSION);
    SSL_renegotiate(ssl);
    int r = SSL_do_handshake(ssl);
    char buf[256];
    if (r == 1) {
        /* The request goes out with the hello; the refusal comes back. */
        SSL_write(ssl, "version\r\n", 9);
        r = SSL_read(ssl, buf, sizeof(buf));
        ck_assert(r <= 0 || SSL_renegotiate_pending(ssl));
    }
    SSL_free(ssl);
    close(raw);
    SSL_CTX_free(x);

    /* A TLS 1.3 key update asked of the server is honoured. */
    ssl = _raw(k.tls_port, TLS1_3_VERSION, &raw, &x);
    ck_assert_int_eq(SSL_key_update(ssl, SSL_KEY_UPDATE_REQUESTED), 1);
    ck_assert_int_eq(SSL_write(ssl, "version\r\n", 9), 9);
    r = SSL_read(ssl, buf, sizeof(buf));
    ck_assert_int_gt(r, 8);
    ck_assert(strncmp(buf, "VERSION ", 8) == 0);
    SSL_free(ssl);
    close(raw);
    SSL_CTX_free(x);

    /* 200 connections each holding half of a 16 KB record: bounded. */
    int fds[200];
    memcpy(junk, "\x16\x03\x01\x40\x00", 5);
    for (int i = 0; i < 200; i++) {
        fds[i] = kc_connect(k.tls_port);
        ck_assert_int_ge(fds[i], 0);
        ck_assert_int_eq(kc_send(fds[i], junk, 8192), 0);
    }
    _serves(k.tls_port, c, "after");
    long during = harness_rss_kb(k.pid);
    ck_assert_msg(during - before < 64 * 1024, "rss %ld -> %ld KiB", before,
                  during);
    for (int i = 0; i < 200; i++) {
        close(fds[i]);
    }
    _serves(k.tls_port, c, "still");
    tls_ctx_destroy(c);
}
END_TEST

/* CPU time (user + system) of process `pid`, in clock ticks. */
static long
_cpu_ticks(pid_t pid)
{
    char path[64];
    char buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    long utime = 0;
    long stime = 0;
    ck_assert_int_eq(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u "
                                   "%*u %ld %ld", &utime, &stime), 2);
    return utime + stime;
}

/*
 * The start of a record on an established connection, its rest not sent:
 * the worker waits for the socket. It used to take the bytes the session
 * held for a record it could read and asked again at once, for as long as
 * the rest did not come: a worker spinning at 100% of its core.
 */
START_TEST(test_half_a_record_waits_quietly)
{
    int raw;
    SSL_CTX *x;
    SSL *ssl = _raw(k.tls_port, TLS1_3_VERSION, &raw, &x);
    char buf[64];
    ck_assert_int_eq(SSL_write(ssl, "version\r\n", 9), 9);
    ck_assert_int_gt(SSL_read(ssl, buf, sizeof(buf)), 8);
    /* A header announcing 64 bytes, and 10 of them. */
    ck_assert_int_eq(send(raw, "\x17\x03\x03\x00\x40" "0123456789", 15,
                          MSG_NOSIGNAL), 15);
    uint64_t t0 = harness_now_ms();
    long before = _cpu_ticks(k.pid);
    struct pollfd p = {raw, POLLIN, 0};
    ck_assert_int_eq(poll(&p, 1, 1500), 0); /* nothing comes back */
    long used = _cpu_ticks(k.pid) - before;
    long hz = sysconf(_SC_CLK_TCK);
    uint64_t ms = harness_now_ms() - t0;
    ck_assert_msg(used * 1000 < (long)ms * hz / 4,
                  "kurad used %ld ticks (at %ld Hz) in %llu ms", used, hz,
                  (unsigned long long)ms);
    /* The rest (junk for this key) ends it. */
    char junk[64] = {0};
    ck_assert_int_eq(send(raw, junk, 54, MSG_NOSIGNAL), 54);
    ck_assert(_raw_closed(ssl));
    SSL_free(ssl);
    SSL_CTX_free(x);
    close(raw);
}
END_TEST

/* ----------------------------------------------------------- reloads */

static void
_start_live(void)
{
    _make_certs();
    _copy("server.pem", "live.pem");
    _copy("server.key", "live.key");
    kura_init(&k, NULL);
    kura_add_tls(&k, certs, false);
    snprintf(k.tls_args[1], sizeof(k.tls_args[1]), "%s", _at("live.pem"));
    snprintf(k.tls_args[2], sizeof(k.tls_args[2]), "%s", _at("live.key"));
    ck_assert_int_eq(kura_launch(&k), 0);
}

/* The subject a new TLS connection to the server is shown. */
static void
_subject(struct tls_ctx *c, char *out, size_t cap)
{
    struct netio_stream io;
    char err[512];
    ck_assert_msg(_tconnect(&io, k.tls_port, c, err, sizeof(err)), "%s", err);
    tls_session_peer(io.tls, out, cap);
    netio_stream_close(&io);
}

START_TEST(test_sighup_reloads_or_keeps)
{
    struct tls_ctx *c = _ctx(NULL, NULL, false);
    struct netio_stream old;
    char err[512];
    char subject[256];

    _subject(c, subject, sizeof(subject));
    ck_assert_str_eq(subject, "CN=kura-test-server");
    ck_assert_msg(_tconnect(&old, k.tls_port, c, err, sizeof(err)), "%s",
                  err);

    _copy("server2.pem", "live.pem");
    _copy("server2.key", "live.key");
    ck_assert_int_eq(kill(k.pid, SIGHUP), 0);
    ck_assert(kura_wait_logged(&k, "reloaded on SIGHUP: certificate subject "
                               "CN=kura-test-server-2", 5000));
    _subject(c, subject, sizeof(subject));
    ck_assert_str_eq(subject, "CN=kura-test-server-2");
    /* The connection from before goes on as it was. */
    ck_assert(_tcheck(&old, "set old 0 0 1\r\nx\r\n", "STORED\r\n"));

    _copy("bad.pem", "live.pem");
    ck_assert_int_eq(kill(k.pid, SIGHUP), 0);
    ck_assert(kura_wait_logged(&k, "not reloaded on SIGHUP: cannot load "
                               "certificate", 5000));
    ck_assert(kura_log_has(&k, "still using the previous material"));
    _subject(c, subject, sizeof(subject));
    ck_assert_str_eq(subject, "CN=kura-test-server-2");
    ck_assert(_tcheck(&old, "get old\r\n", "VALUE old 0 1\r\nx\r\nEND\r\n"));

    /* A key others can read is refused too. */
    _copy("server.pem", "live.pem");
    _copy("server.key", "live.key");
    ck_assert_int_eq(chmod(_at("live.key"), 0640), 0);
    ck_assert_int_eq(kill(k.pid, SIGHUP), 0);
    ck_assert(kura_wait_logged(&k, "can be read or written by others", 5000));
    _subject(c, subject, sizeof(subject));
    ck_assert_str_eq(subject, "CN=kura-test-server-2");
    netio_stream_close(&old);
    int fd = kc_connect(k.port);
    ck_assert_int_eq(kc_stat(fd, "kura_tls_reloads"), 1);
    ck_assert_int_eq(kc_stat(fd, "kura_tls_reload_failures"), 2);
    close(fd);
    tls_ctx_destroy(c);
}
END_TEST

START_TEST(test_restart_and_resumption)
{
    struct tls_ctx *c = _ctx(NULL, NULL, true);
    struct netio_stream io;
    char err[512];

    ck_assert_msg(_tconnect(&io, k.tls_port, c, err, sizeof(err)), "%s", err);
    ck_assert(!tls_session_resumed(io.tls));
    ck_assert(_tcheck(&io, "set kept 3 0 4\r\nkept\r\n", "STORED\r\n"));
    netio_stream_close(&io);
    ck_assert_msg(_tconnect(&io, k.tls_port, c, err, sizeof(err)), "%s", err);
    ck_assert(tls_session_resumed(io.tls));
    char reply[256];
    ck_assert_int_eq(netio_stream_send_all(&io, "gets kept\r\n", 11, 5000),
                     0);
    ck_assert_int_gt(_tread(&io, reply, sizeof(reply), "END\r\n", 5, 5000),
                     0);
    ck_assert_msg(strncmp(reply, "VALUE kept 3 4 ", 15) == 0, "%s", reply);
    netio_stream_close(&io);
    int fd = kc_connect(k.port);
    ck_assert_int_eq(kc_stat(fd, "kura_tls_resumed"), 1);
    close(fd);

    ck_assert_int_eq(kura_stop(&k, 30000), 0);
    ck_assert_int_eq(kura_launch(&k), 0);
    /* New ticket keys: a full handshake, and the write is there. */
    ck_assert_msg(_tconnect(&io, k.tls_port, c, err, sizeof(err)), "%s", err);
    ck_assert(_tcheck(&io, "get kept\r\n",
                      "VALUE kept 3 4\r\nkept\r\nEND\r\n"));
    netio_stream_close(&io);
    tls_ctx_destroy(c);
}
END_TEST

/* kurad with `cert` and `key` must not start, and must say `why`. */
static void
_start_refused(const char *cert, const char *key, const char *why)
{
    char port[16];
    char tls_port[16];
    char err[4096];
    snprintf(port, sizeof(port), "%d", harness_free_port());
    snprintf(tls_port, sizeof(tls_port), "%d", harness_free_port());
    const char *argv[] = {"kurad", "-port", port, "-tlsport", tls_port,
                          "-tlscert", _at(cert), "-tlskey", _at(key), "*",
                          NULL};
    ck_assert_int_eq(harness_run(certs, argv, err, sizeof(err), 10000), 1);
    ck_assert_msg(strstr(err, why) != NULL, "'%s' lacks '%s'", err, why);
}

START_TEST(test_start_refuses_bad_material)
{
    _copy("server.key", "open.key");
    ck_assert_int_eq(chmod(_at("open.key"), 0644), 0);
    _start_refused("server.pem", "open.key",
                   "can be read or written by others than its owner");
    _start_refused("expired-server.pem", "expired-server.key",
                   "-tlsport: certificate");
    _start_refused("expired-server.pem", "expired-server.key", "expired on");
    _start_refused("server.pem", "client.key", "does not match");
    _start_refused("bad.pem", "server.key", "cannot load certificate");
}
END_TEST

/* ---------------------------------------------------------- mutual TLS */

/* Expects a client presenting `cert` to be refused, and `logged`. */
static void
_refused(const char *cert, const char *key, const char *logged)
{
    struct tls_ctx *c = _ctx(cert, key, false);
    struct netio_stream io;
    char err[512];
    char reply[64];
    if (_tconnect(&io, k.tls_port, c, err, sizeof(err))) {
        /* TLS 1.3: the refusal arrives as the client first reads. */
        ck_assert_int_eq(netio_stream_send_all(&io, "version\r\n", 9, 5000),
                         0);
        ck_assert_int_lt(_tread(&io, reply, sizeof(reply), "\r\n", 2, 5000),
                         0);
        ck_assert(netio_stream_tls_error(&io, err, sizeof(err)));
        netio_stream_close(&io);
    }
    ck_assert(kura_wait_logged(&k, logged, 5000));
    tls_ctx_destroy(c);
}

START_TEST(test_client_certificates)
{
    _refused(NULL, NULL, "TLS handshake failed: peer did not return a "
                         "certificate");
    _refused("other-client.pem", "other-client.key",
             "certificate verify failed: unable to get local issuer");
    _refused("self.pem", "self.key", "certificate verify failed: self");
    /* Expired: the client context would not load it, so present it raw. */
    SSL_CTX *x = SSL_CTX_new(TLS_client_method());
    SSL_CTX_use_certificate_file(x, _at("expired-client.pem"),
                                 SSL_FILETYPE_PEM);
    SSL_CTX_use_PrivateKey_file(x, _at("expired-client.key"),
                                SSL_FILETYPE_PEM);
    int fd = kc_connect(k.tls_port);
    SSL *ssl = SSL_new(x);
    SSL_set_fd(ssl, fd);
    if (SSL_connect(ssl) == 1) {
        char buf[64];
        SSL_write(ssl, "version\r\n", 9);
        ck_assert_int_le(SSL_read(ssl, buf, sizeof(buf)), 0);
    }
    SSL_free(ssl);
    SSL_CTX_free(x);
    close(fd);
    ck_assert(kura_wait_logged(&k, "certificate verify failed: certificate "
                               "has expired", 5000));

    struct tls_ctx *c = _ctx("client.pem", "client.key", false);
    _serves(k.tls_port, c, "mutual");
    tls_ctx_destroy(c);

    /* The kura tool, with and without a certificate. */
    struct harness_tool t;
    char port[16];
    snprintf(port, sizeof(port), "%d", k.tls_port);
    ck_assert_int_eq(harness_tool_run(&t, (const char *const[]){
                         "ping", "--port", port, "--tls", "--cacert",
                         _at("ca.pem"), "--cert", _at("client.pem"), "--key",
                         _at("client.key"), NULL}, 0, 10000), 0);
    ck_assert_int_eq(harness_tool_run(&t, (const char *const[]){
                         "ping", "--port", port, "--tls", "--cacert",
                         _at("ca.pem"), "--quiet", NULL}, 2, 10000), 2);
}
END_TEST

static Suite *
it_tls_suite(void)
{
    Suite *s = suite_create("it_tls");
    TCase *tc = tcase_create("port");
    tcase_add_checked_fixture(tc, _start, _cleanup);
    tcase_add_test(tc, test_every_protocol_over_tls);
    tcase_add_test(tc, test_refusals_in_each_protocol);
    tcase_add_test(tc, test_slow_handshakes_time_out_alone);
    tcase_add_test(tc, test_hostile_battery);
    tcase_add_test(tc, test_half_a_record_waits_quietly);
    tcase_add_test(tc, test_restart_and_resumption);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);

    tc = tcase_create("reload");
    tcase_add_checked_fixture(tc, _start_live, _cleanup);
    tcase_add_test(tc, test_sighup_reloads_or_keeps);
    tcase_add_test(tc, test_start_refuses_bad_material);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);

    tc = tcase_create("mutual");
    tcase_add_checked_fixture(tc, _start_mtls, _cleanup);
    tcase_add_test(tc, test_client_certificates);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);

    return s;
}

TEST_MAIN(it_tls_suite)
