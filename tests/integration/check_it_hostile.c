/*
 * Integration tests: hostile input. Each case must end in an error reply
 * or the closing of that one connection; nothing partial may be stored,
 * the daemon's memory must stay bounded, and a bystander client must keep
 * being served throughout.
 */
#include <check.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../unit/unit_main.h"
#include "harness.h"

static struct kura_proc k;
static int bystander;

static void
_start(void)
{
    kura_start(&k, NULL);
    bystander = kc_connect(k.port);
    ck_assert(kc_check(bystander, "set by 0 0 2\r\nok\r\n", "STORED\r\n"));
}

static void
_cleanup(void)
{
    close(bystander);
    kura_cleanup(&k);
}

/* The bystander is still served and the daemon is alive. */
static void
_bystander_ok(void)
{
    ck_assert(kc_check(bystander, "get by\r\n", "VALUE by 0 2\r\nok\r\nEND\r\n"));
}

/* Sends `n` bytes without caring whether the server closes meanwhile. */
static void
_blast(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0) {
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

START_TEST(test_negative_and_huge_lengths)
{
    int fd = kc_connect(k.port);
    ck_assert(kc_check(fd, "set n 0 0 -1\r\n",
                       "CLIENT_ERROR bad command line format\r\n"));
    ck_assert(kc_check(fd, "set n 0 0 99999999999999999999\r\n",
                       "CLIENT_ERROR bad command line format\r\n"));
    ck_assert(kc_check(fd, "set n 0 0 18446744073709551615\r\n",
                       "CLIENT_ERROR bad command line format\r\n"));
    ck_assert(kc_check(fd, "get n\r\n", "END\r\n"));
    _bystander_ok();
    close(fd);
}
END_TEST

START_TEST(test_random_binary)
{
    unsigned seed = 424242;
    char *junk = malloc(1 << 20);
    for (int i = 0; i < (1 << 20); i++) {
        junk[i] = (char)rand_r(&seed);
    }
    for (int round = 0; round < 4; round++) {
        int fd = kc_connect(k.port);
        _blast(fd, junk + round * 1000, (1 << 20) - (size_t)round * 1000);
        /* Drain whatever errors come back until the server closes or idles. */
        char sink[4096];
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        while (poll(&pfd, 1, 200) > 0 && recv(fd, sink, sizeof(sink), 0) > 0) {
        }
        close(fd);
        _bystander_ok();
    }
    free(junk);
}
END_TEST

START_TEST(test_long_line_without_newline)
{
    size_t n = 4 << 20;
    char *line = malloc(n);
    long before = harness_rss_kb(k.pid);

    memset(line, 'x', n);
    int fd = kc_connect(k.port);
    _blast(fd, line, n);
    ck_assert(kc_wait_closed(fd, 5000));
    close(fd);
    /* The same for a get line, which may be longer, but not unbounded. */
    memcpy(line, "get ", 4);
    fd = kc_connect(k.port);
    _blast(fd, line, n);
    ck_assert(kc_wait_closed(fd, 5000));
    close(fd);
    long after = harness_rss_kb(k.pid);
    ck_assert_msg(after - before < 16 * 1024, "RSS grew from %ld to %ld KiB",
                  before, after);
    _bystander_ok();
    free(line);
}
END_TEST

START_TEST(test_hundred_thousand_keys_in_one_get)
{
    size_t cap = 100000 * 12 + 16;
    char *req = malloc(cap);
    size_t n = (size_t)snprintf(req, cap, "get");
    for (int i = 0; i < 100000; i++) {
        n += (size_t)snprintf(req + n, cap - n, " k%d", i);
    }
    memcpy(req + n, "\r\n", 2);
    n += 2;
    int fd = kc_connect(k.port);
    ck_assert(kc_check(fd, "set k7 0 0 1\r\n7\r\n", "STORED\r\n"));
    _blast(fd, req, n);
    /* Served (the line fits the get limit): one hit, then END. */
    ck_assert(kc_check(fd, NULL, "VALUE k7 0 1\r\n7\r\nEND\r\n"));
    close(fd);
    _bystander_ok();
    free(req);
}
END_TEST

START_TEST(test_huge_multiget_reply_streams_with_bounded_memory)
{
    /* 20,000 hits of a 4 KiB value is 80 MB of reply: it must stream. */
    char value[4096 + 64];
    memset(value, 'v', 4096);
    int fd = kc_connect(k.port);
    snprintf(value + 4096, 64, "\r\n");
    char head[64];
    snprintf(head, sizeof(head), "set big 0 0 4096\r\n");
    kc_sends(fd, head);
    _blast(fd, value, 4098);
    ck_assert(kc_check(fd, NULL, "STORED\r\n"));
    size_t cap = 20000 * 4 + 16;
    char *req = malloc(cap);
    size_t n = (size_t)snprintf(req, cap, "get");
    for (int i = 0; i < 20000; i++) {
        n += (size_t)snprintf(req + n, cap - n, " big");
    }
    memcpy(req + n, "\r\n", 2);
    n += 2;
    long before = harness_rss_kb(k.pid);
    _blast(fd, req, n);
    /* Read slowly at first so the server has to hold back. */
    char *sink = malloc(1 << 16);
    size_t total = 0;
    size_t expect = 20000 * (strlen("VALUE big 0 4096\r\n") + 4098) + 5;
    long peak = before;
    uint64_t deadline = harness_now_ms() + 60000;
    while (total < expect && harness_now_ms() < deadline) {
        ssize_t r = recv(fd, sink, 1 << 16, 0);
        if (r <= 0) {
            break;
        }
        total += (size_t)r;
        if (total % (8 << 20) < (size_t)r) {
            long rss = harness_rss_kb(k.pid);
            peak = rss > peak ? rss : peak;
        }
    }
    ck_assert_uint_eq(total, expect);
    ck_assert_msg(peak - before < 32 * 1024, "RSS grew from %ld to %ld KiB",
                  before, peak);
    close(fd);
    _bystander_ok();
    free(req);
    free(sink);
}
END_TEST

/*
 * Thousands of clients send their requests one byte at a time, all at
 * once: the bystander is answered between every round of bytes, and each
 * slow client gets its whole reply in the end.
 */
#define TRICKLERS 2000

START_TEST(test_trickling_clients_do_not_starve_others)
{
    struct rlimit rl;
    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    ck_assert_msg(rl.rlim_max > TRICKLERS + 64, "descriptor limit too low");
    int *fds = malloc(TRICKLERS * sizeof(*fds));
    for (int i = 0; i < TRICKLERS; i++) {
        fds[i] = kc_connect(k.port);
        ck_assert_int_ge(fds[i], 0);
    }
    const char *req = "get by\r\n";
    for (size_t b = 0; b < strlen(req); b++) {
        for (int i = 0; i < TRICKLERS; i++) {
            ck_assert_int_eq(send(fds[i], req + b, 1, MSG_NOSIGNAL), 1);
        }
        _bystander_ok();
    }
    char reply[64];
    for (int i = 0; i < TRICKLERS; i++) {
        ck_assert_int_gt(kc_read_until(fds[i], reply, sizeof(reply),
                                       "END\r\n", 5000), 0);
        ck_assert_str_eq(reply, "VALUE by 0 2\r\nok\r\nEND\r\n");
        close(fds[i]);
    }
    free(fds);
    _bystander_ok();
}
END_TEST

START_TEST(test_client_that_never_reads)
{
    /* Pipelined gets of a 64 KiB value, never read: memory must not grow
     * with the number of requests. */
    char *value = malloc(65536 + 2);
    memset(value, 'w', 65536);
    memcpy(value + 65536, "\r\n", 2);
    int fd = kc_connect(k.port);
    kc_sends(fd, "set w 0 0 65536\r\n");
    _blast(fd, value, 65538);
    ck_assert(kc_check(fd, NULL, "STORED\r\n"));
    fcntl(fd, F_SETFL, O_NONBLOCK);
    long before = harness_rss_kb(k.pid);
    const char *get = "get w\r\n";
    for (int i = 0; i < 20000; i++) {
        if (send(fd, get, strlen(get), MSG_NOSIGNAL) <= 0) {
            break; /* the server stopped reading: that is the point */
        }
    }
    _bystander_ok();
    long after = harness_rss_kb(k.pid);
    ck_assert_msg(after - before < 32 * 1024, "RSS grew from %ld to %ld KiB",
                  before, after);
    close(fd);
    free(value);
}
END_TEST

START_TEST(test_value_cut_short_by_close)
{
    int fd = kc_connect(k.port);
    kc_sends(fd, "set cut 0 0 100\r\n0123456789012345678901234567890123456789");
    close(fd);
    fd = kc_connect(k.port);
    /* A later connection sees nothing stored under that key. */
    ck_assert(kc_check(fd, "get cut\r\n", "END\r\n"));
    /* Also when the cut falls right before the final CRLF. */
    int fd2 = kc_connect(k.port);
    kc_sends(fd2, "set cut 0 0 2\r\nab");
    close(fd2);
    ck_assert(kc_check(fd, "get cut\r\n", "END\r\n"));
    close(fd);
    _bystander_ok();
}
END_TEST

/*
 * A refused binary frame whose 1 MiB value is still on its way: the
 * refusal arrives, the rest of the frame is taken (not reset mid-send), and
 * the connection ends with a clean EOF. Closing with the value unread sent
 * a reset, which failed the client's send and could discard the refusal
 * before the client read it.
 */
START_TEST(test_refused_frame_is_followed_by_a_clean_close)
{
    enum { KEYLEN = 251, VALLEN = (1 << 20) + 1 };
    uint8_t hdr[24] = {0x80, 0x01, 0x00, KEYLEN, 8, 0, 0, 0};
    uint32_t body = 8 + KEYLEN + VALLEN;
    hdr[8] = (uint8_t)(body >> 24);
    hdr[9] = (uint8_t)(body >> 16);
    hdr[10] = (uint8_t)(body >> 8);
    hdr[11] = (uint8_t)body;
    hdr[15] = 0x3a; /* opaque */
    char head[8 + KEYLEN + 1000];
    memset(head, 0, 8);
    memset(head + 8, 'k', KEYLEN);
    memset(head + 8 + KEYLEN, 'z', 1000);
    char *rest = malloc(VALLEN - 1000);
    ck_assert_ptr_nonnull(rest);
    memset(rest, 'z', VALLEN - 1000);

    int fd = kc_connect(k.port);
    ck_assert_int_eq(kc_send(fd, hdr, sizeof(hdr)), 0);
    ck_assert_int_eq(kc_send(fd, head, sizeof(head)), 0);
    /* The refusal: a 24-byte header and "Invalid arguments". */
    uint8_t reply[24 + 17];
    size_t got = 0;
    uint64_t deadline = harness_now_ms() + 5000;
    while (got < sizeof(reply) && harness_now_ms() < deadline) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (poll(&pfd, 1, 50) > 0) {
            ssize_t n = recv(fd, reply + got, sizeof(reply) - got, 0);
            ck_assert_int_gt(n, 0);
            got += (size_t)n;
        }
    }
    ck_assert_uint_eq(got, sizeof(reply));
    ck_assert_uint_eq(reply[0], 0x81);
    ck_assert_uint_eq(reply[7], 0x04); /* status: invalid arguments */
    ck_assert_uint_eq(reply[15], 0x3a);
    /* The server has answered; the rest of the frame must still be taken. */
    ck_assert_int_eq(kc_send(fd, rest, VALLEN - 1000), 0);
    char c;
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    ck_assert_int_eq(poll(&pfd, 1, 5000), 1);
    ck_assert_int_eq(recv(fd, &c, 1, 0), 0); /* EOF, not a reset */
    close(fd);
    free(rest);
    _bystander_ok();
}
END_TEST

static Suite *
hostile_suite(void)
{
    Suite *s = suite_create("it_hostile");
    TCase *tc = tcase_create("input");
    tcase_add_checked_fixture(tc, _start, _cleanup);
    tcase_add_test(tc, test_negative_and_huge_lengths);
    tcase_add_test(tc, test_random_binary);
    tcase_add_test(tc, test_long_line_without_newline);
    tcase_add_test(tc, test_hundred_thousand_keys_in_one_get);
    tcase_add_test(tc, test_huge_multiget_reply_streams_with_bounded_memory);
    tcase_add_test(tc, test_client_that_never_reads);
    tcase_add_test(tc, test_trickling_clients_do_not_starve_others);
    tcase_add_test(tc, test_value_cut_short_by_close);
    tcase_add_test(tc, test_refused_frame_is_followed_by_a_clean_close);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(hostile_suite)
