/*
 * Integration tests: writes made through each protocol (text, binary,
 * meta) survive a restart, kill -9 and replication like any other, with
 * the meta protocol's item state (stale, recache token, base64 key);
 * authentication (-auth) over SASL and text, and what an unauthenticated
 * client may do; the protocol is chosen per connection on one port.
 */
#include <arpa/inet.h>
#include <check.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../unit/unit_main.h"
#include "harness.h"

static struct kura_proc a;
static struct kura_proc b;

/* --------------------------------------------------------- binary frames */

#define BIN_HEADER 24

struct frame {
    uint8_t opcode;
    uint16_t status;
    uint32_t opaque;
    uint64_t cas;
    uint8_t extras[32];
    size_t nextras;
    char key[256];
    size_t nkey;
    char value[4096];
    size_t vlen;
};

/* Sends one request frame. */
static int
_bin_send(int fd, uint8_t opcode, const void *extras, size_t nextras,
          const char *key, const void *value, size_t vlen, uint32_t opaque,
          uint64_t cas)
{
    unsigned char buf[BIN_HEADER + 64 + 256 + 4096];
    size_t nkey = key != NULL ? strlen(key) : 0;
    size_t body = nextras + nkey + vlen;
    ck_assert_uint_le(body, sizeof(buf) - BIN_HEADER);
    memset(buf, 0, BIN_HEADER);
    buf[0] = 0x80;
    buf[1] = opcode;
    buf[2] = (unsigned char)(nkey >> 8);
    buf[3] = (unsigned char)nkey;
    buf[4] = (unsigned char)nextras;
    uint32_t be = htonl((uint32_t)body);
    memcpy(buf + 8, &be, 4);
    be = htonl(opaque);
    memcpy(buf + 12, &be, 4);
    for (int i = 0; i < 8; i++) {
        buf[16 + i] = (unsigned char)(cas >> (56 - 8 * i));
    }
    if (nextras > 0) {
        memcpy(buf + BIN_HEADER, extras, nextras);
    }
    if (nkey > 0) {
        memcpy(buf + BIN_HEADER + nextras, key, nkey);
    }
    if (vlen > 0) {
        memcpy(buf + BIN_HEADER + nextras + nkey, value, vlen);
    }
    return kc_send(fd, buf, BIN_HEADER + body);
}

/* Reads exactly `n` bytes within `timeout_ms`. */
static bool
_read_n(int fd, void *out, size_t n, int timeout_ms)
{
    uint64_t deadline = harness_now_ms() + (uint64_t)timeout_ms;
    size_t got = 0;
    while (got < n) {
        uint64_t now = harness_now_ms();
        if (now >= deadline) {
            return false;
        }
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, (int)(deadline - now)) <= 0) {
            return false;
        }
        ssize_t r = read(fd, (char *)out + got, n - got);
        if (r <= 0) {
            return false;
        }
        got += (size_t)r;
    }
    return true;
}

/* Reads one response frame. */
static bool
_bin_recv(int fd, struct frame *f)
{
    unsigned char h[BIN_HEADER];
    if (!_read_n(fd, h, sizeof(h), 5000) || h[0] != 0x81) {
        return false;
    }
    size_t nkey = (size_t)h[2] << 8 | h[3];
    size_t nextras = h[4];
    uint32_t body;
    memcpy(&body, h + 8, 4);
    body = ntohl(body);
    memset(f, 0, sizeof(*f));
    f->opcode = h[1];
    f->status = (uint16_t)(h[6] << 8 | h[7]);
    memcpy(&f->opaque, h + 12, 4);
    f->opaque = ntohl(f->opaque);
    for (int i = 0; i < 8; i++) {
        f->cas = f->cas << 8 | h[16 + i];
    }
    if (nextras > sizeof(f->extras) || nkey >= sizeof(f->key) ||
        body < nextras + nkey || body - nextras - nkey >= sizeof(f->value)) {
        return false;
    }
    f->nextras = nextras;
    f->nkey = nkey;
    f->vlen = body - nextras - nkey;
    return _read_n(fd, f->extras, nextras, 5000) &&
           _read_n(fd, f->key, nkey, 5000) &&
           _read_n(fd, f->value, f->vlen, 5000);
}

/* set key (flags, exptime 0) over the binary protocol; true if stored. */
static bool
_bin_set(int fd, const char *key, const char *value, uint32_t flags)
{
    unsigned char extras[8] = {0};
    extras[0] = (unsigned char)(flags >> 24);
    extras[1] = (unsigned char)(flags >> 16);
    extras[2] = (unsigned char)(flags >> 8);
    extras[3] = (unsigned char)flags;
    struct frame f;
    return _bin_send(fd, 0x01, extras, 8, key, value, strlen(value), 7, 0) ==
               0 &&
           _bin_recv(fd, &f) && f.status == 0 && f.opaque == 7 && f.cas != 0;
}

/* incr with an initial value (created on a miss); returns the value. */
static uint64_t
_bin_incr(int fd, const char *key, uint64_t delta, uint64_t initial)
{
    unsigned char extras[20] = {0};
    for (int i = 0; i < 8; i++) {
        extras[i] = (unsigned char)(delta >> (56 - 8 * i));
        extras[8 + i] = (unsigned char)(initial >> (56 - 8 * i));
    }
    struct frame f;
    ck_assert_int_eq(_bin_send(fd, 0x05, extras, 20, key, NULL, 0, 1, 0), 0);
    ck_assert(_bin_recv(fd, &f));
    ck_assert_uint_eq(f.status, 0);
    ck_assert_uint_eq(f.vlen, 8);
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) {
        v = v << 8 | (unsigned char)f.value[i];
    }
    return v;
}

/* -------------------------------------------------------------- helpers */

/* One text request on a fresh connection; returns the reply (static). */
static const char *
_ask(int port, const char *req, const char *terminator)
{
    static char reply[1 << 16];
    int fd = kc_connect(port);
    reply[0] = '\0';
    if (fd < 0) {
        return reply;
    }
    if (kc_sends(fd, req) != 0 ||
        kc_read_until(fd, reply, sizeof(reply), terminator, 5000) < 0) {
        reply[0] = '\0';
    }
    close(fd);
    return reply;
}

/* A one-line reply. */
static void
_expect(int port, const char *req, const char *want)
{
    const char *got = _ask(port, req, "\r\n");
    if (strcmp(got, want) != 0) {
        fprintf(stderr, "sent %s\nwant %s\ngot  %s\n", req, want, got);
    }
    ck_assert_str_eq(got, want);
}

/* Multi-line replies ending in `terminator`. */
static void
_expect_until(int port, const char *req, const char *want,
              const char *terminator)
{
    const char *got = _ask(port, req, terminator);
    if (strcmp(got, want) != 0) {
        fprintf(stderr, "sent %s\nwant %s\ngot  %s\n", req, want, got);
    }
    ck_assert_str_eq(got, want);
}

/*
 * Writes through every protocol: a binary set with flags, a binary incr
 * that creates its counter, a meta set with flags and a base64 key, a
 * meta invalidation (stale), a vivified miss whose recache token was
 * handed out, and a text set.
 */
static void
_write_everything(int port)
{
    int fd = kc_connect(port);
    ck_assert_int_ge(fd, 0);
    ck_assert(_bin_set(fd, "bin:k", "binary value", 0xdeadbeef));
    ck_assert_uint_eq(_bin_incr(fd, "bin:n", 5, 40), 40);
    ck_assert_uint_eq(_bin_incr(fd, "bin:n", 5, 40), 45);
    close(fd);
    _expect(port, "ms meta:k 4 F77 T0\r\nmeta\r\n", "HD\r\n");
    _expect(port, "ms AQID 3 b F1\r\nb64\r\n", "HD\r\n");
    _expect(port, "ms meta:stale 3\r\nold\r\n", "HD\r\n");
    _expect(port, "md meta:stale I\r\n", "HD\r\n");
    _expect(port, "mg meta:won N30 s\r\n", "HD s0 W\r\n");
    _expect_until(port, "ma meta:n N0 J9 D1 v\r\n", "VA 1\r\n9\r\n",
                  "9\r\n");
    _expect_until(port, "ma meta:n D3 v\r\n", "VA 2\r\n12\r\n", "12\r\n");
    _expect(port, "set text:k 3 0 4\r\ntext\r\n", "STORED\r\n");
}

/* What _write_everything() left, read back through every protocol. */
static void
_check_everything(int port)
{
    _expect_until(port, "get bin:k bin:n meta:k text:k\r\n",
                  "VALUE bin:k 3735928559 12\r\nbinary value\r\n"
                  "VALUE bin:n 0 2\r\n45\r\n"
                  "VALUE meta:k 77 4\r\nmeta\r\n"
                  "VALUE text:k 3 4\r\ntext\r\nEND\r\n",
                  "END\r\n");
    _expect_until(port, "mg AQID b k f v\r\n", "VA 3 kAQID b f1\r\nb64\r\n",
                  "b64\r\n");
    /* Stale and not yet claimed: the first reader wins the recache. */
    _expect_until(port, "mg meta:stale v\r\n", "VA 3 X W\r\nold\r\n",
                  "old\r\n");
    _expect(port, "mg meta:stale\r\n", "HD Z X\r\n");
    /* The token handed out before stays handed out. */
    _expect(port, "mg meta:won s\r\n", "HD s0 Z\r\n");
    _expect_until(port, "mg meta:n v\r\n", "VA 2\r\n12\r\n", "12\r\n");
    int fd = kc_connect(port);
    ck_assert_int_ge(fd, 0);
    struct frame f;
    ck_assert_int_eq(_bin_send(fd, 0x00, NULL, 0, "meta:k", NULL, 0, 3, 0), 0);
    ck_assert(_bin_recv(fd, &f));
    ck_assert_uint_eq(f.status, 0);
    ck_assert_uint_eq(f.nextras, 4);
    ck_assert_uint_eq(f.extras[3], 77);
    ck_assert_uint_eq(f.vlen, 4);
    ck_assert(memcmp(f.value, "meta", 4) == 0);
    close(fd);
}

/* ---------------------------------------------------------------- tests */

static void
_start_one(void)
{
    kura_start(&a, NULL);
}

static void
_cleanup_one(void)
{
    kura_cleanup(&a);
}

START_TEST(test_each_protocol_survives_restart)
{
    _write_everything(a.port);
    ck_assert_int_eq(kura_stop(&a, 20000), 0);
    ck_assert_int_eq(kura_launch(&a), 0);
    _check_everything(a.port);
}
END_TEST

START_TEST(test_each_protocol_survives_kill9)
{
    _write_everything(a.port);
    kura_kill9(&a);
    ck_assert_int_eq(kura_launch(&a), 0);
    _check_everything(a.port);
}
END_TEST

/* stats bytes follows the items whatever the protocol, and after a
 * restart starts from what is stored. */
START_TEST(test_bytes_follow_items_across_restart)
{
    int fd = kc_connect(a.port);
    long long b0 = kc_stat(fd, "bytes");
    close(fd);
    fd = kc_connect(a.port); /* a binary connection */
    ck_assert(_bin_set(fd, "bytes:k", "0123456789", 0));
    close(fd);
    _expect(a.port, "ms bytes:m 5\r\nabcde\r\n", "HD\r\n");
    fd = kc_connect(a.port);
    long long b1 = kc_stat(fd, "bytes");
    close(fd);
    ck_assert_int_eq(b1 - b0, 7 + 10 + 7 + 5);
    ck_assert_int_eq(kura_stop(&a, 20000), 0);
    ck_assert_int_eq(kura_launch(&a), 0);
    fd = kc_connect(a.port);
    ck_assert_int_eq(kc_stat(fd, "bytes"), b1);
    close(fd);
    _expect(a.port, "md bytes:m\r\n", "HD\r\n");
    fd = kc_connect(a.port);
    ck_assert_int_eq(kc_stat(fd, "bytes"), b1 - 12);
    close(fd);
}
END_TEST

/* A pipeline of quiet binary gets ends at its noop; misses are silent. */
START_TEST(test_binary_quiet_pipeline)
{
    int fd = kc_connect(a.port);
    ck_assert(_bin_set(fd, "q:1", "one", 1));
    ck_assert(_bin_set(fd, "q:3", "three", 3));
    ck_assert_int_eq(_bin_send(fd, 0x0d, NULL, 0, "q:1", NULL, 0, 11, 0), 0);
    ck_assert_int_eq(_bin_send(fd, 0x0d, NULL, 0, "q:2", NULL, 0, 12, 0), 0);
    ck_assert_int_eq(_bin_send(fd, 0x0d, NULL, 0, "q:3", NULL, 0, 13, 0), 0);
    ck_assert_int_eq(_bin_send(fd, 0x0a, NULL, 0, NULL, NULL, 0, 14, 0), 0);
    struct frame f;
    ck_assert(_bin_recv(fd, &f));
    ck_assert_uint_eq(f.opaque, 11);
    ck_assert_uint_eq(f.nkey, 3);
    ck_assert(memcmp(f.key, "q:1", 3) == 0);
    ck_assert(_bin_recv(fd, &f));
    ck_assert_uint_eq(f.opaque, 13);
    ck_assert(memcmp(f.value, "three", 5) == 0);
    ck_assert(_bin_recv(fd, &f));
    ck_assert_uint_eq(f.opcode, 0x0a);
    ck_assert_uint_eq(f.opaque, 14);
    close(fd);
}
END_TEST

/*
 * A first byte no memcached client sends is answered and closed at once:
 * the client never waits for a line that will not come. A TLS handshake's
 * gets a TLS alert (doc/protocol.md, difference 10), other junk ERROR.
 * The binary magic and text both work on the same port.
 */
START_TEST(test_unknown_first_byte_is_answered)
{
    static const unsigned char tls[] = {0x16, 0x03, 0x01, 0x02, 0x00, 0x01};
    static const unsigned char alert[] = {0x15, 0x03, 0x03, 0x00, 0x02, 0x02,
                                          0x28};
    int fd = kc_connect(a.port);
    char reply[64];
    ck_assert_int_eq(kc_send(fd, tls, sizeof(tls)), 0);
    ck_assert_int_eq(kc_read_until(fd, reply, sizeof(reply), "\x28", 5000),
                     (long)sizeof(alert));
    ck_assert(memcmp(reply, alert, sizeof(alert)) == 0);
    ck_assert(kc_wait_closed(fd, 5000));
    close(fd);
    fd = kc_connect(a.port);
    ck_assert_int_eq(kc_send(fd, "\x01junk", 5), 0);
    ck_assert_int_gt(kc_read_until(fd, reply, sizeof(reply), "\r\n", 5000),
                     0);
    ck_assert_str_eq(reply, "ERROR\r\n");
    ck_assert(kc_wait_closed(fd, 5000));
    close(fd);
    fd = kc_connect(a.port);
    struct frame f;
    ck_assert_int_eq(_bin_send(fd, 0x0b, NULL, 0, NULL, NULL, 0, 9, 0), 0);
    ck_assert(_bin_recv(fd, &f));
    ck_assert(f.opcode == 0x0b && f.status == 0 && f.opaque == 9);
    ck_assert(f.vlen > 6 && memcmp(f.value, "1.6.18", 6) == 0);
    close(fd);
    _expect(a.port, "mn\r\n", "MN\r\n");
}
END_TEST

/* --------------------------------------------------------- replication */

static char a_port[16];
static char b_port[16];

static void
_follow(struct kura_proc *k, const char *sid, const char *port)
{
    k->args[k->nargs++] = "-sid";
    k->args[k->nargs++] = sid;
    k->args[k->nargs++] = "-mhost";
    k->args[k->nargs++] = "127.0.0.1";
    k->args[k->nargs++] = "-mport";
    k->args[k->nargs++] = port;
}

static void
_start_pair(void)
{
    kura_init(&a, NULL);
    kura_init(&b, NULL);
    snprintf(a_port, sizeof(a_port), "%d", a.port);
    snprintf(b_port, sizeof(b_port), "%d", b.port);
    _follow(&a, "1", b_port);
    _follow(&b, "2", a_port);
    ck_assert_int_eq(kura_launch(&a), 0);
    ck_assert_int_eq(kura_launch(&b), 0);
}

static void
_cleanup_pair(void)
{
    kura_cleanup(&a);
    kura_cleanup(&b);
}

struct seen {
    int port;
    const char *req;
    const char *want;
};

static bool
_shows(void *arg)
{
    struct seen *s = arg;
    return strcmp(_ask(s->port, s->req, "END\r\n"), s->want) == 0;
}

/*
 * What each protocol writes on one master reaches the other, meta state
 * included, and stays there when the first is killed.
 */
START_TEST(test_each_protocol_replicates_and_fails_over)
{
    _write_everything(a.port);
    /* The last write of _write_everything() is the text set. */
    struct seen s = {b.port, "get text:k\r\n",
                     "VALUE text:k 3 4\r\ntext\r\nEND\r\n"};
    ck_assert(harness_wait_for(_shows, &s, 5000));
    kura_kill9(&a);
    _check_everything(b.port);
}
END_TEST

/* A recache token handed out on one master is seen on the other. */
START_TEST(test_recache_token_is_seen_by_the_peer)
{
    _expect(a.port, "ms tok:k 1 T100\r\nx\r\n", "HD\r\n");
    _expect(a.port, "md tok:k I\r\n", "HD\r\n");
    _expect(a.port, "mg tok:k\r\n", "HD X W\r\n");
    _expect(a.port, "set tok:done 0 0 1\r\ny\r\n", "STORED\r\n");
    struct seen s = {b.port, "get tok:done\r\n",
                     "VALUE tok:done 0 1\r\ny\r\nEND\r\n"};
    ck_assert(harness_wait_for(_shows, &s, 5000));
    _expect(b.port, "mg tok:k\r\n", "HD Z X\r\n");
    /* The recached value clears both states everywhere. */
    _expect(b.port, "ms tok:k 1\r\nz\r\n", "HD\r\n");
    s = (struct seen){a.port, "get tok:k\r\n", "VALUE tok:k 0 1\r\nz\r\nEND\r\n"};
    ck_assert(harness_wait_for(_shows, &s, 5000));
    _expect(a.port, "mg tok:k v\r\n", "VA 1\r\n");
}
END_TEST

/* ------------------------------------------------------- authentication */

static char users[600];

static void
_write_users(const char *dir, mode_t mode)
{
    snprintf(users, sizeof(users), "%s/users", dir);
    FILE *f = fopen(users, "w");
    ck_assert_ptr_nonnull(f);
    fputs("alice:wonderland\nbob:builder\n", f);
    fclose(f);
    ck_assert_int_eq(chmod(users, mode), 0);
}

static void
_start_auth(void)
{
    kura_init(&a, NULL);
    _write_users(a.dir, 0600);
    a.args[a.nargs++] = "-auth";
    a.args[a.nargs++] = users;
    ck_assert_int_eq(kura_launch(&a), 0);
}

START_TEST(test_sasl_plain_then_commands)
{
    int fd = kc_connect(a.port);
    struct frame f;
    /* Before authenticating: mechanisms and version only. */
    ck_assert_int_eq(_bin_send(fd, 0x20, NULL, 0, NULL, NULL, 0, 1, 0), 0);
    ck_assert(_bin_recv(fd, &f));
    ck_assert_uint_eq(f.status, 0);
    ck_assert(f.vlen == 5 && memcmp(f.value, "PLAIN", 5) == 0);
    static const char bad[] = "\0alice\0wrong";
    ck_assert_int_eq(
        _bin_send(fd, 0x21, NULL, 0, "PLAIN", bad, sizeof(bad) - 1, 2, 0), 0);
    ck_assert(_bin_recv(fd, &f));
    ck_assert_uint_eq(f.status, 0x20);
    static const char good[] = "\0alice\0wonderland";
    ck_assert_int_eq(
        _bin_send(fd, 0x21, NULL, 0, "PLAIN", good, sizeof(good) - 1, 3, 0),
        0);
    ck_assert(_bin_recv(fd, &f));
    ck_assert_uint_eq(f.status, 0);
    ck_assert(_bin_set(fd, "auth:k", "secret", 5));
    close(fd);
    /* Unauthenticated: refused and closed. */
    fd = kc_connect(a.port);
    ck_assert_int_eq(_bin_send(fd, 0x00, NULL, 0, "auth:k", NULL, 0, 4, 0), 0);
    ck_assert(_bin_recv(fd, &f));
    ck_assert_uint_eq(f.status, 0x20);
    ck_assert(kc_wait_closed(fd, 5000));
    close(fd);
}
END_TEST

START_TEST(test_text_auth_and_what_waits_for_it)
{
    int fd = kc_connect(a.port);
    ck_assert(kc_check(fd, "get auth:k\r\n", "CLIENT_ERROR unauthenticated\r\n"));
    ck_assert(kc_check(fd, "mg auth:k v\r\n",
                       "CLIENT_ERROR unauthenticated\r\n"));
    char reply[256];
    ck_assert_int_eq(kc_sends(fd, "version\r\n"), 0);
    ck_assert_int_gt(kc_read_until(fd, reply, sizeof(reply), "\r\n", 5000), 0);
    ck_assert(strncmp(reply, "VERSION ", 8) == 0);
    ck_assert(kc_check(fd, "set x 0 0 10\r\nbob wrong!\r\n",
                       "CLIENT_ERROR authentication failure\r\n"));
    ck_assert(kc_check(fd, "set x 0 0 11\r\nbob builder\r\n", "STORED\r\n"));
    ck_assert(kc_check(fd, "get x\r\n", "END\r\n")); /* nothing was stored */
    ck_assert(kc_check(fd, "set x 0 0 1\r\ny\r\n", "STORED\r\n"));
    ck_assert(kc_check(fd, "get x\r\n", "VALUE x 0 1\r\ny\r\nEND\r\n"));
    ck_assert_int_ge(kc_stat(fd, "auth_errors"), 1);
    /* quit is allowed before authenticating */
    int fd2 = kc_connect(a.port);
    ck_assert_int_eq(kc_sends(fd2, "quit\r\n"), 0);
    ck_assert(kc_wait_closed(fd2, 5000));
    close(fd2);
    close(fd);
}
END_TEST

/* A password file others may read is refused at start. */
START_TEST(test_auth_file_readable_by_others_is_refused)
{
    struct kura_proc k;
    kura_init(&k, NULL);
    _write_users(k.dir, 0644);
    char err[4096];
    char port[16];
    snprintf(port, sizeof(port), "%d", k.port);
    const char *argv[] = {"kurad", "-port", port, "-auth", users, k.db, NULL};
    int st = harness_run(k.dir, argv, err, sizeof(err), 20000);
    if (strstr(err, "others can read or write it") == NULL) {
        fprintf(stderr, "kurad said: %s\n", err);
    }
    ck_assert_int_ne(st, 0);
    ck_assert_ptr_nonnull(strstr(err, "others can read or write it"));
    kura_cleanup(&k);
}
END_TEST

/* Peers replicate with their own key, whatever -auth says. */
START_TEST(test_replication_with_auth_on_both)
{
    kura_init(&a, NULL);
    kura_init(&b, NULL);
    snprintf(a_port, sizeof(a_port), "%d", a.port);
    snprintf(b_port, sizeof(b_port), "%d", b.port);
    static char users_a[600];
    _write_users(a.dir, 0600);
    memcpy(users_a, users, sizeof(users_a));
    _write_users(b.dir, 0600);
    _follow(&a, "1", b_port);
    _follow(&b, "2", a_port);
    a.args[a.nargs++] = "-auth";
    a.args[a.nargs++] = users_a;
    b.args[b.nargs++] = "-auth";
    b.args[b.nargs++] = users;
    ck_assert_int_eq(kura_launch(&a), 0);
    ck_assert_int_eq(kura_launch(&b), 0);
    int fd = kc_connect(a.port);
    ck_assert(kc_check(fd, "set u 0 0 16\r\nalice wonderland\r\n",
                       "STORED\r\n"));
    ck_assert(kc_check(fd, "set r:k 0 0 2\r\nok\r\n", "STORED\r\n"));
    close(fd);
    /* b accepts a's log though it requires clients to authenticate. */
    bool seen = false;
    uint64_t deadline = harness_now_ms() + 5000;
    while (!seen && harness_now_ms() < deadline) {
        fd = kc_connect(b.port);
        char reply[256];
        seen = kc_sends(fd, "set u 0 0 11\r\nbob builder\r\nget r:k\r\n") ==
                   0 &&
               kc_read_until(fd, reply, sizeof(reply), "END\r\n", 5000) > 0 &&
               strcmp(reply, "STORED\r\nVALUE r:k 0 2\r\nok\r\nEND\r\n") == 0;
        close(fd);
        if (!seen) {
            usleep(20000);
        }
    }
    ck_assert(seen);
}
END_TEST

static Suite *
protocols_suite(void)
{
    Suite *s = suite_create("it_protocols");
    TCase *tc = tcase_create("durability");
    tcase_add_checked_fixture(tc, _start_one, _cleanup_one);
    tcase_add_test(tc, test_each_protocol_survives_restart);
    tcase_add_test(tc, test_each_protocol_survives_kill9);
    tcase_add_test(tc, test_bytes_follow_items_across_restart);
    tcase_add_test(tc, test_binary_quiet_pipeline);
    tcase_add_test(tc, test_unknown_first_byte_is_answered);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    tc = tcase_create("replication");
    tcase_add_checked_fixture(tc, _start_pair, _cleanup_pair);
    tcase_add_test(tc, test_each_protocol_replicates_and_fails_over);
    tcase_add_test(tc, test_recache_token_is_seen_by_the_peer);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    tc = tcase_create("auth");
    tcase_add_checked_fixture(tc, _start_auth, _cleanup_one);
    tcase_add_test(tc, test_sasl_plain_then_commands);
    tcase_add_test(tc, test_text_auth_and_what_waits_for_it);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    tc = tcase_create("auth_setup");
    tcase_add_checked_fixture(tc, NULL, _cleanup_pair);
    tcase_add_test(tc, test_auth_file_readable_by_others_is_refused);
    tcase_add_test(tc, test_replication_with_auth_on_both);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(protocols_suite)
