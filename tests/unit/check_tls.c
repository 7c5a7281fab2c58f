/*
 * check_tls: loading, reloading and refusing certificates (tls.h), the
 * bytes a plaintext client meets on the TLS port, and handshakes between
 * two sessions over a socketpair: mutual TLS, the name check, resumption
 * across a reload.
 *
 * The certificates are made for the run by tests/tls/make-certs (openssl)
 * in a temporary directory; no key is in the repository.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tls.h"
#include "unit_main.h"
#include "unit_tmpdir.h"

static char dir[UNIT_TMPDIR_MAX];

static const char *
_at(const char *name)
{
    static char paths[8][512];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, 512, "%s/%s", dir, name);
    return p;
}

static void
_setup(void)
{
    const char *src = getenv("srcdir");
    char cmd[1024];

    signal(SIGPIPE, SIG_IGN);
    unit_tmpdir_make(dir, sizeof(dir), "check_tls");
    snprintf(cmd, sizeof(cmd), "%s/tests/tls/make-certs %s",
             src != NULL ? src : ".", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static void
_teardown(void)
{
    unit_tmpdir_remove(dir);
}

static void
_copy(const char *from, const char *to)
{
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "cp %s %s", _at(from), _at(to));
    ck_assert_int_eq(system(cmd), 0);
}

static struct tls_ctx *
_server(const char *cert, const char *key, const char *ca, char *err,
        size_t errlen)
{
    struct tls_options o = {0};
    o.cert = cert != NULL ? _at(cert) : NULL;
    o.key = key != NULL ? _at(key) : NULL;
    o.ca = ca != NULL ? _at(ca) : NULL;
    return tls_ctx_create(TLS_ROLE_SERVER, &o, err, errlen);
}

static struct tls_ctx *
_client(const char *cert, const char *key, bool resume)
{
    struct tls_options o = {0};
    char err[512];
    o.cert = cert != NULL ? _at(cert) : NULL;
    o.key = key != NULL ? _at(key) : NULL;
    o.ca = _at("ca.pem");
    o.resume = resume;
    struct tls_ctx *c = tls_ctx_create(TLS_ROLE_CLIENT, &o, err,
                                       sizeof(err));
    ck_assert_msg(c != NULL, "%s", err);
    return c;
}

/* Expects tls_ctx_create() to refuse, with `why` in its reason. */
static void
_refused(const char *cert, const char *key, const char *ca, const char *why)
{
    char err[512] = "";
    struct tls_ctx *c = _server(cert, key, ca, err, sizeof(err));
    ck_assert_ptr_null(c);
    ck_assert_msg(strstr(err, why) != NULL, "'%s' lacks '%s'", err, why);
}

/* ------------------------------------------------------------ loading */

START_TEST(test_load_describes_the_certificate)
{
    char err[512] = "";
    struct tls_ctx *c = _server("server.pem", "server.key", "ca.pem", err,
                                sizeof(err));
    ck_assert_msg(c != NULL, "%s", err);
    char desc[512];
    tls_ctx_describe(c, desc, sizeof(desc));
    ck_assert_msg(strstr(desc, "CN=kura-test-server,") != NULL ||
                      strstr(desc, "CN=kura-test-server ") != NULL ||
                      strstr(desc, "subject CN=kura-test-server,") != NULL,
                  "%s", desc);
    ck_assert_ptr_nonnull(strstr(desc, "issuer CN=kura test CA"));
    ck_assert_ptr_nonnull(strstr(desc, "valid until "));
    struct tls_stats st;
    tls_ctx_stats(c, &st);
    int64_t now = (int64_t)time(NULL);
    ck_assert(st.not_after > now + 29 * 86400);
    ck_assert(st.not_after < now + 31 * 86400);
    tls_ctx_destroy(c);
}
END_TEST

START_TEST(test_refuses_bad_material)
{
    _refused("missing.pem", "server.key", NULL, "cannot load certificate");
    _refused("server.pem", "missing.key", NULL, "cannot load key");
    _refused("bad.pem", "server.key", NULL, "cannot load certificate");
    _refused("server.pem", "client.key", NULL, "does not match");
    _refused("expired-server.pem", "expired-server.key", NULL, "expired on");
    _refused("server.pem", "server.key", "bad.pem", "cannot load CA");
    _refused("server.pem", "server.key", "missing.pem", "cannot load CA");
    _refused(NULL, NULL, NULL, "needs both a certificate and its key");
    _refused("server.pem", NULL, NULL, "needs both a certificate and its key");

    struct tls_options o = {0};
    char err[512] = "";
    o.cert = _at("server.pem");
    o.key = _at("server.key");
    o.ciphers = "NO-SUCH-CIPHER";
    ck_assert_ptr_null(tls_ctx_create(TLS_ROLE_SERVER, &o, err,
                                      sizeof(err)));
    ck_assert_ptr_nonnull(strstr(err, "-tlsciphers NO-SUCH-CIPHER"));
    o.ciphers = NULL;
    o.suites = "TLS_NO_SUCH_SUITE";
    ck_assert_ptr_null(tls_ctx_create(TLS_ROLE_SERVER, &o, err,
                                      sizeof(err)));
    ck_assert_ptr_nonnull(strstr(err, "-tlssuites"));
    o.suites = NULL;
    o.key_owner_only = true;
    _copy("server.key", "open.key");
    ck_assert_int_eq(chmod(_at("open.key"), 0644), 0);
    o.key = _at("open.key");
    ck_assert_ptr_null(tls_ctx_create(TLS_ROLE_SERVER, &o, err,
                                      sizeof(err)));
    ck_assert_ptr_nonnull(strstr(err, "can be read or written by others"));
    o.key = _at("server.key"); /* made 0600 by make-certs */
    struct tls_ctx *owned = tls_ctx_create(TLS_ROLE_SERVER, &o, err,
                                           sizeof(err));
    ck_assert_msg(owned != NULL, "%s", err);
    tls_ctx_destroy(owned);
    o.suites = "TLS_CHACHA20_POLY1305_SHA256";
    o.ciphers = "ECDHE-ECDSA-AES128-GCM-SHA256";
    o.min_version = TLS_MIN_13;
    struct tls_ctx *c = tls_ctx_create(TLS_ROLE_SERVER, &o, err, sizeof(err));
    ck_assert_msg(c != NULL, "%s", err);
    tls_ctx_destroy(c);
}
END_TEST

/* ---------------------------------------------------------- reloading */

START_TEST(test_reload_swaps_or_keeps)
{
    char err[512] = "";
    char desc[512];
    _copy("server.pem", "live.pem");
    _copy("server.key", "live.key");
    struct tls_ctx *c = _server("live.pem", "live.key", NULL, err,
                                sizeof(err));
    ck_assert_msg(c != NULL, "%s", err);

    /* A good new certificate is taken. */
    _copy("server2.pem", "live.pem");
    _copy("server2.key", "live.key");
    ck_assert_int_eq(tls_ctx_reload(c, err, sizeof(err)), 0);
    tls_ctx_describe(c, desc, sizeof(desc));
    ck_assert_msg(strstr(desc, "kura-test-server-2") != NULL, "%s", desc);

    /* Each bad one leaves it in use and says why. */
    _copy("bad.pem", "live.pem");
    ck_assert_int_eq(tls_ctx_reload(c, err, sizeof(err)), -1);
    ck_assert_ptr_nonnull(strstr(err, "cannot load certificate"));
    _copy("server.pem", "live.pem"); /* with server2's key */
    ck_assert_int_eq(tls_ctx_reload(c, err, sizeof(err)), -1);
    ck_assert_ptr_nonnull(strstr(err, "does not match"));
    _copy("expired-server.pem", "live.pem");
    _copy("expired-server.key", "live.key");
    ck_assert_int_eq(tls_ctx_reload(c, err, sizeof(err)), -1);
    ck_assert_ptr_nonnull(strstr(err, "expired on"));
    unlink(_at("live.key"));
    ck_assert_int_eq(tls_ctx_reload(c, err, sizeof(err)), -1);
    ck_assert_ptr_nonnull(strstr(err, "cannot load key"));
    tls_ctx_describe(c, desc, sizeof(desc));
    ck_assert_msg(strstr(desc, "kura-test-server-2") != NULL, "%s", desc);

    struct tls_stats st;
    tls_ctx_stats(c, &st);
    ck_assert_uint_eq(st.reloads, 1);
    ck_assert_uint_eq(st.reload_failures, 4);
    tls_ctx_destroy(c);
}
END_TEST

/* ----------------------------------------------- before the handshake */

START_TEST(test_sniff)
{
    const uint8_t hello[] = {0x16, 0x03, 0x01, 0x02, 0x00};
    ck_assert_int_eq(tls_sniff(hello, 0), TLS_SNIFF_MORE);
    ck_assert_int_eq(tls_sniff(hello, 1), TLS_SNIFF_TLS);
    ck_assert_int_eq(tls_sniff(hello, sizeof(hello)), TLS_SNIFF_TLS);
    ck_assert_int_eq(tls_sniff((const uint8_t *)"get a\r\n", 7),
                     TLS_SNIFF_TEXT);
    ck_assert_int_eq(tls_sniff((const uint8_t *)"mg a v\r\n", 8),
                     TLS_SNIFF_TEXT);
    ck_assert_int_eq(tls_sniff((const uint8_t *)"REPL 1 2 3\r\n", 12),
                     TLS_SNIFF_TEXT);
    ck_assert_int_eq(tls_sniff((const uint8_t *)"GET / HTTP/1.1\r\n", 16),
                     TLS_SNIFF_HTTP);
    const uint8_t bin[] = {0x80, 0x00};
    ck_assert_int_eq(tls_sniff(bin, 2), TLS_SNIFF_BINARY);
    ck_assert(tls_is_handshake_byte(0x16));
    ck_assert(!tls_is_handshake_byte(0x17));
}
END_TEST

START_TEST(test_refusals)
{
    char out[TLS_REFUSAL_MAX];
    size_t n = tls_refusal(TLS_SNIFF_TEXT, (const uint8_t *)"get a\r\n", 7,
                           out);
    ck_assert_int_eq(n, strlen("CLIENT_ERROR this port speaks TLS only\r\n"));
    ck_assert(memcmp(out, "CLIENT_ERROR this port speaks TLS only\r\n", n) ==
              0);

    n = tls_refusal(TLS_SNIFF_HTTP, (const uint8_t *)"GET /", 5, out);
    ck_assert(n < TLS_REFUSAL_MAX);
    out[n] = '\0';
    ck_assert_ptr_nonnull(strstr(out, "HTTP/1.1 400 Bad Request\r\n"));
    ck_assert_ptr_nonnull(strstr(out, "Connection: close\r\n"));
    const char *body = strstr(out, "\r\n\r\n") + 4;
    char want[64];
    snprintf(want, sizeof(want), "Content-Length: %zu\r\n", strlen(body));
    ck_assert_ptr_nonnull(strstr(out, want));

    /* A binary get (opcode 0x00) with opaque 0xdeadbeef. */
    uint8_t req[24] = {0x80, 0x00};
    req[12] = 0xde;
    req[13] = 0xad;
    req[14] = 0xbe;
    req[15] = 0xef;
    n = tls_refusal(TLS_SNIFF_BINARY, req, sizeof(req), out);
    ck_assert_uint_ge(n, 24);
    ck_assert_uint_eq((uint8_t)out[0], 0x81);
    ck_assert_uint_eq((uint8_t)out[1], 0x00);
    ck_assert_uint_eq((uint8_t)out[6] << 8 | (uint8_t)out[7], 0x0083);
    uint32_t body_len = (uint32_t)(uint8_t)out[8] << 24 |
                        (uint32_t)(uint8_t)out[9] << 16 |
                        (uint32_t)(uint8_t)out[10] << 8 | (uint8_t)out[11];
    ck_assert_uint_eq(body_len, n - 24);
    ck_assert(memcmp(out + 12, req + 12, 4) == 0);
    /* Too short to hold an opaque: zeros. */
    n = tls_refusal(TLS_SNIFF_BINARY, req, 1, out);
    ck_assert_uint_eq((uint8_t)out[12] | (uint8_t)out[15], 0);

    ck_assert_uint_eq(tls_plain_alert[0], 0x15);
    ck_assert_uint_eq(tls_plain_alert[5], 2);    /* fatal */
    ck_assert_uint_eq(tls_plain_alert[6], 40);   /* handshake_failure */
}
END_TEST

/* ------------------------------------------------- handshakes in memory */

struct duo {
    int fds[2];
    struct tls_session *srv;
    struct tls_session *cli;
    enum tls_status ss;
    enum tls_status cs;
};

static bool
_over(enum tls_status st)
{
    return st == TLS_OK || st == TLS_CLOSED || st == TLS_FAILED;
}

/* Runs a handshake between `server` and `client` to its end. */
static void
_shake(struct duo *d, struct tls_ctx *server, struct tls_ctx *client,
       const char *host)
{
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0,
                                d->fds), 0);
    d->srv = tls_session_accept(server, d->fds[0]);
    d->cli = tls_session_connect(client, d->fds[1], host);
    ck_assert_ptr_nonnull(d->srv);
    ck_assert_ptr_nonnull(d->cli);
    d->ss = d->cs = TLS_WANT_READ;
    for (int i = 0; i < 50 && !(_over(d->ss) && _over(d->cs)); i++) {
        if (!_over(d->cs)) {
            d->cs = tls_session_handshake(d->cli);
        }
        if (!_over(d->ss)) {
            d->ss = tls_session_handshake(d->srv);
        }
    }
}

/* Moves one message from server to client: the client then holds the
 * session ticket TLS 1.3 sends after the handshake. */
static void
_exchange(struct duo *d)
{
    size_t n = 0;
    char buf[16];
    ck_assert_int_eq(tls_session_write(d->srv, "hello", 5, &n), TLS_OK);
    ck_assert_int_eq(tls_session_read(d->cli, buf, sizeof(buf), &n), TLS_OK);
    ck_assert_uint_eq(n, 5);
    ck_assert(memcmp(buf, "hello", 5) == 0);
}

static void
_done(struct duo *d)
{
    tls_session_free(d->srv);
    tls_session_free(d->cli);
    close(d->fds[0]);
    close(d->fds[1]);
}

START_TEST(test_handshake_and_names)
{
    char err[512] = "";
    struct tls_ctx *s = _server("server.pem", "server.key", NULL, err,
                                sizeof(err));
    struct tls_ctx *c = _client(NULL, NULL, false);
    struct duo d;
    char why[256];

    _shake(&d, s, c, "127.0.0.1");
    ck_assert_int_eq(d.cs, TLS_OK);
    ck_assert_int_eq(d.ss, TLS_OK);
    _exchange(&d);
    _done(&d);

    _shake(&d, s, c, "localhost");
    ck_assert_int_eq(d.cs, TLS_OK);
    _done(&d);

    /* The certificate does not name 127.0.0.2. */
    _shake(&d, s, c, "127.0.0.2");
    ck_assert_int_eq(d.cs, TLS_FAILED);
    ck_assert(tls_session_error(d.cli, why, sizeof(why)));
    ck_assert_msg(strstr(why, "IP address mismatch") != NULL, "%s", why);
    _done(&d);
    _shake(&d, s, c, "elsewhere.example");
    ck_assert_int_eq(d.cs, TLS_FAILED);
    tls_session_error(d.cli, why, sizeof(why));
    ck_assert_msg(strstr(why, "hostname mismatch") != NULL, "%s", why);
    _done(&d);
    tls_ctx_destroy(s);

    /* A certificate from another CA, a self-signed one. */
    s = _server("other-server.pem", "other-server.key", NULL, err,
                sizeof(err));
    _shake(&d, s, c, "127.0.0.1");
    ck_assert_int_eq(d.cs, TLS_FAILED);
    tls_session_error(d.cli, why, sizeof(why));
    ck_assert_msg(strstr(why, "unable to get local issuer") != NULL, "%s",
                  why);
    _done(&d);
    tls_ctx_destroy(s);
    s = _server("self.pem", "self.key", NULL, err, sizeof(err));
    _shake(&d, s, c, "127.0.0.1");
    ck_assert_int_eq(d.cs, TLS_FAILED);
    tls_session_error(d.cli, why, sizeof(why));
    ck_assert_msg(strstr(why, "self-signed") != NULL ||
                      strstr(why, "self signed") != NULL, "%s", why);
    _done(&d);
    tls_ctx_destroy(s);
    tls_ctx_destroy(c);
}
END_TEST

START_TEST(test_mutual_tls)
{
    char err[512] = "";
    char why[256];
    struct tls_ctx *s = _server("server.pem", "server.key", "ca.pem", err,
                                sizeof(err));
    ck_assert_msg(s != NULL, "%s", err);
    struct duo d;

    struct tls_ctx *c = _client(NULL, NULL, false);
    _shake(&d, s, c, "127.0.0.1");
    ck_assert_int_eq(d.ss, TLS_FAILED);
    ck_assert(tls_session_error(d.srv, why, sizeof(why)));
    ck_assert_msg(strstr(why, "did not return a certificate") != NULL, "%s",
                  why);
    _done(&d);
    tls_ctx_destroy(c);

    c = _client("other-client.pem", "other-client.key", false);
    _shake(&d, s, c, "127.0.0.1");
    ck_assert_int_eq(d.ss, TLS_FAILED);
    tls_session_error(d.srv, why, sizeof(why));
    ck_assert_msg(strstr(why, "certificate verify failed") != NULL, "%s",
                  why);
    _done(&d);
    tls_ctx_destroy(c);

    c = _client("client.pem", "client.key", false);
    _shake(&d, s, c, "127.0.0.1");
    ck_assert_int_eq(d.ss, TLS_OK);
    ck_assert_int_eq(d.cs, TLS_OK);
    _exchange(&d);
    _done(&d);
    tls_ctx_destroy(c);

    /* A server's certificate presented as a client's (a replication peer):
     * it carries clientAuth too. */
    c = _client("server2.pem", "server2.key", false);
    _shake(&d, s, c, "127.0.0.1");
    ck_assert_int_eq(d.ss, TLS_OK);
    _done(&d);
    tls_ctx_destroy(c);

    struct tls_stats st;
    tls_ctx_stats(s, &st);
    ck_assert_uint_eq(st.handshakes, 2);
    ck_assert_uint_eq(st.failures, 2);
    tls_ctx_destroy(s);
}
END_TEST

START_TEST(test_resumption_survives_reload)
{
    char err[512] = "";
    struct tls_ctx *s = _server("server.pem", "server.key", "ca.pem", err,
                                sizeof(err));
    struct tls_ctx *c = _client("client.pem", "client.key", true);
    struct duo d;

    _shake(&d, s, c, "127.0.0.1");
    ck_assert_int_eq(d.ss, TLS_OK);
    ck_assert(!tls_session_resumed(d.srv));
    _exchange(&d); /* the client takes its ticket */
    _done(&d);

    _shake(&d, s, c, "127.0.0.1");
    ck_assert_int_eq(d.ss, TLS_OK);
    ck_assert(tls_session_resumed(d.srv));
    ck_assert(tls_session_resumed(d.cli));
    _exchange(&d);
    _done(&d);

    ck_assert_int_eq(tls_ctx_reload(s, err, sizeof(err)), 0);
    _shake(&d, s, c, "127.0.0.1");
    ck_assert_int_eq(d.ss, TLS_OK);
    ck_assert(tls_session_resumed(d.srv));
    _done(&d);

    struct tls_stats st;
    tls_ctx_stats(s, &st);
    ck_assert_uint_eq(st.handshakes, 3);
    ck_assert_uint_eq(st.resumed, 2);
    tls_ctx_destroy(c);
    tls_ctx_destroy(s);
}
END_TEST

START_TEST(test_plaintext_bytes_fail_the_handshake)
{
    char err[512] = "";
    char why[256];
    struct tls_ctx *s = _server("server.pem", "server.key", NULL, err,
                                sizeof(err));
    int fds[2];
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds),
                     0);
    struct tls_session *srv = tls_session_accept(s, fds[0]);
    ck_assert_int_eq(tls_session_handshake(srv), TLS_WANT_READ);
    /* A record header that says handshake, then junk. */
    const char junk[] = "\x16\x03\x01\x00\x05garbagegarbage";
    ck_assert_int_eq(write(fds[1], junk, sizeof(junk) - 1),
                     (ssize_t)sizeof(junk) - 1);
    ck_assert_int_eq(tls_session_handshake(srv), TLS_FAILED);
    ck_assert(tls_session_error(srv, why, sizeof(why)));
    /* A client that hangs up before a hello is a close, not a failure. */
    struct tls_session *srv2;
    int fds2[2];
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0,
                                fds2), 0);
    srv2 = tls_session_accept(s, fds2[0]);
    close(fds2[1]);
    ck_assert_int_eq(tls_session_handshake(srv2), TLS_CLOSED);
    ck_assert(!tls_session_error(srv2, why, sizeof(why)));
    tls_session_free(srv);
    tls_session_free(srv2);
    close(fds[0]);
    close(fds[1]);
    close(fds2[0]);
    tls_ctx_destroy(s);
}
END_TEST

static Suite *
tls_suite(void)
{
    Suite *s = suite_create("tls");
    TCase *tc = tcase_create("tls");
    tcase_add_unchecked_fixture(tc, _setup, _teardown);
    tcase_add_test(tc, test_load_describes_the_certificate);
    tcase_add_test(tc, test_refuses_bad_material);
    tcase_add_test(tc, test_reload_swaps_or_keeps);
    tcase_add_test(tc, test_sniff);
    tcase_add_test(tc, test_refusals);
    tcase_add_test(tc, test_handshake_and_names);
    tcase_add_test(tc, test_mutual_tls);
    tcase_add_test(tc, test_resumption_survives_reload);
    tcase_add_test(tc, test_plaintext_bytes_fail_the_handshake);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(tls_suite)
