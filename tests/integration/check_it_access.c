/*
 * Integration tests: who may do what.
 *
 * The default bind is loopback; -mask/-unmask refuse and allow commands as
 * ttserver's do; replication peers must prove they hold the same -rkey
 * secret before anything passes, in both directions, so an arbitrary
 * client can neither pull the log nor pose as a master; and garbage on a
 * replication connection, from either end, costs that connection only.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../unit/unit_main.h"
#include "harness.h"

static struct kura_proc a;
static struct kura_proc b;
static char a_port[16];
static char b_port[16];
static char a_key[600];
static char b_key[600];

#define NONCE "00112233445566778899aabbccddeeff"

/* Writes `secret` to `path` readable by its owner only. */
static void
_write_key(const char *path, const char *secret)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, secret, strlen(secret)),
                     (ssize_t)strlen(secret));
    close(fd);
}

/*
 * Prepares A (sid 1) and B (sid 2, following A) with the given secrets
 * (NULL: no -rkey); A follows B too when `mutual`.
 */
static void
_prepare_pair(const char *a_secret, const char *b_secret, bool mutual)
{
    kura_init(&a, NULL);
    kura_init(&b, NULL);
    snprintf(a_port, sizeof(a_port), "%d", a.port);
    snprintf(b_port, sizeof(b_port), "%d", b.port);
    a.args[a.nargs++] = "-sid";
    a.args[a.nargs++] = "1";
    if (mutual) {
        a.args[a.nargs++] = "-mhost";
        a.args[a.nargs++] = "127.0.0.1";
        a.args[a.nargs++] = "-mport";
        a.args[a.nargs++] = b_port;
    }
    b.args[b.nargs++] = "-sid";
    b.args[b.nargs++] = "2";
    b.args[b.nargs++] = "-mhost";
    b.args[b.nargs++] = "127.0.0.1";
    b.args[b.nargs++] = "-mport";
    b.args[b.nargs++] = a_port;
    if (a_secret != NULL) {
        snprintf(a_key, sizeof(a_key), "%s/rkey", a.dir);
        _write_key(a_key, a_secret);
        a.args[a.nargs++] = "-rkey";
        a.args[a.nargs++] = a_key;
    }
    if (b_secret != NULL) {
        snprintf(b_key, sizeof(b_key), "%s/rkey", b.dir);
        _write_key(b_key, b_secret);
        b.args[b.nargs++] = "-rkey";
        b.args[b.nargs++] = b_key;
    }
}

static void
_launch_pair(void)
{
    ck_assert_int_eq(kura_launch(&a), 0);
    ck_assert_int_eq(kura_launch(&b), 0);
}

static void
_cleanup(void)
{
    kura_cleanup(&a);
    kura_cleanup(&b);
}

struct read_wait {
    int port;
    const char *key;
    const char *want;
};

static bool
_reads(void *arg)
{
    struct read_wait *r = arg;
    char req[128];
    char reply[512];
    int fd = kc_connect(r->port);
    if (fd < 0) {
        return false;
    }
    snprintf(req, sizeof(req), "get %s\r\n", r->key);
    bool ok = kc_sends(fd, req) == 0 &&
              kc_read_until(fd, reply, sizeof(reply), "END\r\n", 2000) > 0 &&
              strcmp(reply, r->want) == 0;
    close(fd);
    return ok;
}

/* Sets `key` to "v" on `from`. */
static void
_set(int port, const char *key)
{
    char req[128];
    int fd = kc_connect(port);
    snprintf(req, sizeof(req), "set %s 0 0 1\r\nv\r\n", key);
    ck_assert(kc_check(fd, req, "STORED\r\n"));
    close(fd);
}

/* Whether `key` shows up on `port` within `ms`. */
static bool
_arrives(int port, const char *key, int ms)
{
    char want[128];
    snprintf(want, sizeof(want), "VALUE %s 0 1\r\nv\r\nEND\r\n", key);
    struct read_wait r = {port, key, want};
    return harness_wait_for(_reads, &r, ms);
}

START_TEST(test_default_bind_is_loopback)
{
    /* /proc/net/tcp lists the listening socket's address in hex. */
    char want[32];
    char line[512];
    bool found = false;
    kura_start(&a, NULL);
    snprintf(want, sizeof(want), "0100007F:%04X", a.port);
    FILE *f = fopen("/proc/net/tcp", "r");
    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof(line), f) != NULL) {
        char local[64];
        unsigned state;
        if (sscanf(line, " %*d: %63s %*s %X", local, &state) == 2 &&
            state == 0x0A) { /* LISTEN */
            unsigned port;
            char *colon = strchr(local, ':');
            if (colon != NULL && sscanf(colon + 1, "%X", &port) == 1 &&
                (int)port == a.port) {
                ck_assert_str_eq(local, want);
                found = true;
            }
        }
    }
    fclose(f);
    ck_assert(found);
    kura_cleanup(&a);
}
END_TEST

START_TEST(test_mask_and_unmask)
{
    /* A read-only server, then one that allows deletes again. */
    kura_start(&a, (const char *const[]){"-mask", "allwrite", NULL});
    int fd = kc_connect(a.port);
    ck_assert(kc_check(fd, "set a 0 0 1\r\nx\r\n",
                       "CLIENT_ERROR set not allowed\r\n"));
    ck_assert(kc_check(fd, "get a\r\n", "END\r\n"));
    close(fd);
    kura_cleanup(&a);
    kura_start(&a, (const char *const[]){"-mask", "allwrite", "-unmask",
                                         "set,delete", NULL});
    fd = kc_connect(a.port);
    ck_assert(kc_check(fd, "set a 0 0 1\r\nx\r\n", "STORED\r\n"));
    ck_assert(kc_check(fd, "delete a\r\n", "DELETED\r\n"));
    ck_assert(kc_check(fd, "incr n 1\r\n", "CLIENT_ERROR incr not allowed\r\n"));
    ck_assert(kc_check(fd, "flush_all\r\n",
                       "CLIENT_ERROR flush_all not allowed\r\n"));
    close(fd);
    kura_cleanup(&a);
}
END_TEST

START_TEST(test_same_key_replicates_both_ways)
{
    _prepare_pair("a shared secret of some length", "a shared secret of some "
                  "length\n", true);
    _launch_pair();
    _set(a.port, "from-a");
    ck_assert(_arrives(b.port, "from-a", 5000));
    _set(b.port, "from-b");
    ck_assert(_arrives(a.port, "from-b", 5000));
    _cleanup();
}
END_TEST

START_TEST(test_wrong_key_gets_nothing)
{
    _prepare_pair("the master's secret 123", "someone else's secret", false);
    _launch_pair();
    _set(a.port, "secret-thing");
    ck_assert(kura_wait_logged(&b, "failed authentication", 5000));
    ck_assert(!_arrives(b.port, "secret-thing", 1000));
    _set(a.port, "still-served");
    _cleanup();
}
END_TEST

START_TEST(test_standby_without_key_is_told)
{
    _prepare_pair("the master's secret 123", NULL, false);
    _launch_pair();
    _set(a.port, "k");
    ck_assert(kura_wait_logged(&b, "requires a shared key", 5000));
    ck_assert(!_arrives(b.port, "k", 500));
    _cleanup();
}
END_TEST

START_TEST(test_master_without_key_is_refused)
{
    /* A standby with a key takes records only from a master proving it. */
    _prepare_pair(NULL, "the standby's secret 1", false);
    _launch_pair();
    _set(a.port, "k");
    ck_assert(kura_wait_logged(&b, "did not authenticate", 5000));
    ck_assert(!_arrives(b.port, "k", 500));
    _cleanup();
}
END_TEST

/* Reads everything until the server closes; returns the bytes (static). */
static const char *
_read_to_close(int fd, size_t *len)
{
    static char buf[1 << 16];
    size_t n = 0;
    for (;;) {
        ssize_t r = recv(fd, buf + n, sizeof(buf) - 1 - n, 0);
        if (r <= 0) {
            break;
        }
        n += (size_t)r;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

START_TEST(test_client_cannot_pull_the_log)
{
    _prepare_pair("the master's secret 123", NULL, false);
    ck_assert_int_eq(kura_launch(&a), 0);
    _set(a.port, "private");
    int fd = kc_connect(a.port);
    char line[512];
    ck_assert_int_eq(kc_sends(fd, "REPL 1 9 0 1 " NONCE "\r\n"), 0);
    ck_assert_int_gt(kc_read_until(fd, line, sizeof(line), "\r\n", 5000), 0);
    ck_assert(strncmp(line, "REPL CHALLENGE ", 15) == 0);
    ck_assert_int_eq(kc_sends(fd, "REPL AUTH 0123456789abcdef0123456789abcdef"
                                  "0123456789abcdef0123456789abcdef\r\n"), 0);
    size_t n;
    const char *rest = _read_to_close(fd, &n);
    ck_assert_str_eq(rest, "REPL ERROR authentication failed\r\n");
    close(fd);
    ck_assert(kura_wait_logged(&a, "failed authentication", 5000));
    ck_assert(_arrives(a.port, "private", 1000)); /* still serving */
    kura_cleanup(&a);
}
END_TEST

START_TEST(test_bad_hello_is_refused)
{
    kura_start(&a, NULL);
    int fd = kc_connect(a.port);
    size_t n;
    ck_assert_int_eq(kc_sends(fd, "REPL 1 9 0 1\r\n"), 0);
    ck_assert_str_eq(_read_to_close(fd, &n), "REPL ERROR bad request\r\n");
    close(fd);
    _set(a.port, "alive");
    kura_cleanup(&a);
}
END_TEST

/* A fake master: listens on a loopback port of its own. */
static int
_listen(int *port)
{
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sin;
    socklen_t len = sizeof(sin);
    int one = 1;
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(l, (struct sockaddr *)&sin, sizeof(sin)), 0);
    ck_assert_int_eq(listen(l, 8), 0);
    ck_assert_int_eq(getsockname(l, (struct sockaddr *)&sin, &len), 0);
    *port = ntohs(sin.sin_port);
    return l;
}

/* Accepts kurad's next connection to the fake master (5 s). */
static int
_accept_standby(int l, char *hello, size_t cap)
{
    struct timeval tv = {5, 0};
    setsockopt(l, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    int fd = accept(l, NULL, NULL);
    ck_assert_int_ge(fd, 0);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ck_assert_int_gt(kc_read_until(fd, hello, cap, "\r\n", 5000), 0);
    return fd;
}

START_TEST(test_garbage_from_a_master)
{
    int fake_port;
    int l = _listen(&fake_port);
    char port[16];
    char hello[256];
    snprintf(port, sizeof(port), "%d", fake_port);
    /* -catchup 0: the fake master answers only once kurad serves. */
    kura_start(&b, (const char *const[]){"-sid", "2", "-mhost", "127.0.0.1",
                                         "-mport", port, "-catchup", "0",
                                         NULL});
    /* Random bytes after a well-formed answer. */
    int fd = _accept_standby(l, hello, sizeof(hello));
    ck_assert(strncmp(hello, "REPL 1 2 ", 9) == 0);
    ck_assert_int_eq(kc_sends(fd, "REPL OK 1\r\n"), 0);
    char junk[4096];
    for (size_t i = 0; i < sizeof(junk); i++) {
        junk[i] = (char)(i * 131 + 7);
    }
    kc_send(fd, junk, sizeof(junk));
    ck_assert(kura_wait_logged(&b, "garbage from", 5000));
    close(fd);
    /* A well-framed record whose checksum is wrong. */
    fd = _accept_standby(l, hello, sizeof(hello));
    ck_assert_int_eq(kc_sends(fd, "REPL OK 1\r\n"), 0);
    uint8_t frame[8 + 64];
    memset(frame, 0, sizeof(frame));
    frame[0] = sizeof(frame); /* length, little-endian */
    frame[4] = 1;             /* RECORD */
    frame[8] = 64;            /* the record's own length */
    kc_send(fd, frame, sizeof(frame));
    /* kurad drops the connection and comes back for more. */
    close(fd);
    fd = _accept_standby(l, hello, sizeof(hello));
    close(fd);
    close(l);
    /* It kept serving, and nothing from the garbage was stored. */
    int c = kc_connect(b.port);
    ck_assert(kc_check(c, "set mine 0 0 1\r\nm\r\n", "STORED\r\n"));
    ck_assert_int_eq(kc_stat(c, "curr_items"), 1);
    close(c);
    kura_cleanup(&b);
}
END_TEST

static bool
_peer_gone(void *arg)
{
    const struct kura_proc *k = arg;
    int c = kc_connect(k->port);
    long long v = c >= 0 ? kc_stat(c, "kura_repl_peer_2_connected") : -1;
    if (c >= 0) {
        close(c);
    }
    return v == 0;
}

START_TEST(test_garbage_from_a_standby)
{
    kura_start(&a, (const char *const[]){"-sid", "1", NULL});
    _set(a.port, "k");
    int fd = kc_connect(a.port);
    char line[256];
    ck_assert_int_eq(kc_sends(fd, "REPL 1 2 0 1 " NONCE "\r\n"), 0);
    ck_assert_int_gt(kc_read_until(fd, line, sizeof(line), "\r\n", 5000), 0);
    ck_assert_str_eq(line, "REPL OK 1\r\n");
    char junk[2048];
    memset(junk, 0xee, sizeof(junk));
    kc_send(fd, junk, sizeof(junk));
    /* The master hangs up on it... */
    ck_assert(kc_wait_closed(fd, 5000));
    close(fd);
    /* ...and everyone else is served as before. */
    _set(a.port, "k2");
    ck_assert(harness_wait_for(_peer_gone, &a, 5000));
    kura_cleanup(&a);
}
END_TEST

static Suite *
access_suite(void)
{
    Suite *s = suite_create("it_access");
    TCase *tc = tcase_create("access");
    tcase_add_test(tc, test_default_bind_is_loopback);
    tcase_add_test(tc, test_mask_and_unmask);
    tcase_add_test(tc, test_same_key_replicates_both_ways);
    tcase_add_test(tc, test_wrong_key_gets_nothing);
    tcase_add_test(tc, test_standby_without_key_is_told);
    tcase_add_test(tc, test_master_without_key_is_refused);
    tcase_add_test(tc, test_client_cannot_pull_the_log);
    tcase_add_test(tc, test_bad_hello_is_refused);
    tcase_add_test(tc, test_garbage_from_a_master);
    tcase_add_test(tc, test_garbage_from_a_standby);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(access_suite)
