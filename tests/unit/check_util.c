/*
 * Unit tests: util (strict numbers, sizes, formatting, hashing) and clock
 * (strictly increasing write stamps).
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "unit_main.h"
#include "util.h"

START_TEST(test_parse_uint)
{
    uint64_t v = 7;
    ck_assert(util_parse_uint("0", 1, 10, &v) && v == 0);
    ck_assert(util_parse_uint("18446744073709551615", 20, UINT64_MAX, &v));
    ck_assert_uint_eq(v, UINT64_MAX);
    ck_assert(!util_parse_uint("18446744073709551616", 20, UINT64_MAX, &v));
    ck_assert(!util_parse_uint("", 0, 10, &v));
    ck_assert(!util_parse_uint("-1", 2, 10, &v));
    ck_assert(!util_parse_uint("1x", 2, 10, &v));
    ck_assert(!util_parse_uint(" 1", 2, 10, &v));
    ck_assert(!util_parse_uint("11", 2, 10, &v));
    ck_assert(util_parse_uint("10", 2, 10, &v) && v == 10);
    /* Only `len` bytes are read. */
    ck_assert(util_parse_uint("123abc", 3, 1000, &v) && v == 123);
}
END_TEST

START_TEST(test_parse_int)
{
    int64_t v;
    ck_assert(util_parse_int("-5", 2, -10, 10, &v) && v == -5);
    ck_assert(!util_parse_int("-11", 3, -10, 10, &v));
    ck_assert(util_parse_int("-9223372036854775808", 20, INT64_MIN, 0, &v));
    ck_assert(v == INT64_MIN);
    ck_assert(!util_parse_int("9223372036854775808", 19, INT64_MIN,
                              INT64_MAX, &v));
    ck_assert(!util_parse_int("-", 1, -10, 10, &v));
    ck_assert(!util_parse_int("--1", 3, -10, 10, &v));
}
END_TEST

START_TEST(test_parse_size)
{
    uint64_t v;
    ck_assert(util_parse_size("1024", &v) && v == 1024);
    ck_assert(util_parse_size("64k", &v) && v == 65536);
    ck_assert(util_parse_size("1024m", &v) && v == 1024ULL << 20);
    ck_assert(util_parse_size("2G", &v) && v == 2ULL << 30);
    ck_assert(!util_parse_size("", &v));
    ck_assert(!util_parse_size("m", &v));
    ck_assert(!util_parse_size("1.5g", &v));
    ck_assert(!util_parse_size("99999999999999999999k", &v));
    ck_assert(!util_parse_size("17179869184g", &v)); /* overflows */
}
END_TEST

START_TEST(test_u64_to_dec)
{
    char buf[UTIL_U64_DIGITS + 1];
    size_t n = util_u64_to_dec(0, buf);
    ck_assert(n == 1 && buf[0] == '0');
    n = util_u64_to_dec(UINT64_MAX, buf);
    buf[n] = '\0';
    ck_assert_str_eq(buf, "18446744073709551615");
    n = util_u64_to_dec(1000, buf);
    buf[n] = '\0';
    ck_assert_str_eq(buf, "1000");
}
END_TEST

START_TEST(test_hash_stable_and_spread)
{
    /* The hash picks lock stripes; it must not depend on the run. */
    ck_assert_uint_eq(util_hash("u:1", 3), util_hash("u:1", 3));
    ck_assert_uint_ne(util_hash("u:1", 3), util_hash("u:2", 3));
    unsigned seen[64] = {0};
    char key[32];
    for (int i = 0; i < 6400; i++) {
        int n = snprintf(key, sizeof(key), "u:%d", i);
        seen[util_hash(key, (size_t)n) & 63]++;
    }
    for (int i = 0; i < 64; i++) {
        ck_assert_msg(seen[i] > 50 && seen[i] < 150, "stripe %d got %u", i,
                      seen[i]);
    }
}
END_TEST

START_TEST(test_strlcpy)
{
    char buf[4];
    ck_assert(util_strlcpy(buf, "abc", sizeof(buf)));
    ck_assert_str_eq(buf, "abc");
    ck_assert(!util_strlcpy(buf, "abcd", sizeof(buf)));
    ck_assert_str_eq(buf, "abc");
}
END_TEST

/* Deadlines carry milliseconds into seconds and keep tv_nsec normalised. */
START_TEST(test_deadline_ms)
{
    for (uint64_t ms = 0; ms < 3000; ms += 7) {
        struct timespec before;
        struct timespec d;
        clock_gettime(CLOCK_REALTIME, &before);
        util_deadline_ms(&d, ms);
        ck_assert_int_ge(d.tv_nsec, 0);
        ck_assert_int_lt(d.tv_nsec, 1000000000L);
        int64_t diff_ns = (int64_t)(d.tv_sec - before.tv_sec) * 1000000000LL +
                          (d.tv_nsec - before.tv_nsec);
        ck_assert_int_ge(diff_ns, (int64_t)ms * 1000000LL);
        ck_assert_int_lt(diff_ns, (int64_t)ms * 1000000LL + 100000000LL);
    }
}
END_TEST

START_TEST(test_clock_strictly_increases)
{
    struct clock c;
    clock_init(&c, 0);
    uint64_t prev = clock_next(&c);
    for (int i = 0; i < 100000; i++) {
        uint64_t next = clock_next(&c);
        ck_assert_uint_gt(next, prev);
        prev = next;
    }
}
END_TEST

START_TEST(test_clock_survives_wall_clock_behind)
{
    /* A floor far in the future stands for a wall clock stepped back. */
    struct clock c;
    uint64_t future = util_now_us() + 3600ULL * 1000000u;
    clock_init(&c, future);
    uint64_t a = clock_next(&c);
    uint64_t b = clock_next(&c);
    ck_assert_uint_gt(a, future);
    ck_assert_uint_eq(b, a + 1);
}
END_TEST

START_TEST(test_clock_observe)
{
    struct clock c;
    clock_init(&c, 0);
    uint64_t remote = util_now_us() + 10000000u;
    clock_observe(&c, remote);
    ck_assert_uint_gt(clock_next(&c), remote);
    clock_observe(&c, 5); /* an older stamp never moves the clock back */
    ck_assert_uint_gt(clock_last(&c), remote);
}
END_TEST

struct clock_thread {
    struct clock *c;
    uint64_t stamps[20000];
};

static void *
_stamp(void *arg)
{
    struct clock_thread *t = arg;
    for (size_t i = 0; i < 20000; i++) {
        t->stamps[i] = clock_next(t->c);
    }
    return NULL;
}

static int
_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a;
    uint64_t y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

START_TEST(test_clock_unique_across_threads)
{
    static struct clock_thread t[4];
    static uint64_t all[4 * 20000];
    struct clock c;
    pthread_t th[4];

    clock_init(&c, 0);
    for (int i = 0; i < 4; i++) {
        t[i].c = &c;
        pthread_create(&th[i], NULL, _stamp, &t[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        memcpy(all + i * 20000, t[i].stamps, sizeof(t[i].stamps));
    }
    qsort(all, 4 * 20000, sizeof(all[0]), _cmp_u64);
    for (size_t i = 1; i < 4 * 20000; i++) {
        ck_assert_uint_ne(all[i], all[i - 1]);
    }
}
END_TEST

static Suite *
util_suite(void)
{
    Suite *s = suite_create("util");
    TCase *tc = tcase_create("parse");
    tcase_add_test(tc, test_parse_uint);
    tcase_add_test(tc, test_parse_int);
    tcase_add_test(tc, test_parse_size);
    tcase_add_test(tc, test_u64_to_dec);
    tcase_add_test(tc, test_hash_stable_and_spread);
    tcase_add_test(tc, test_strlcpy);
    suite_add_tcase(s, tc);
    tc = tcase_create("clock");
    tcase_add_test(tc, test_clock_strictly_increases);
    tcase_add_test(tc, test_clock_survives_wall_clock_behind);
    tcase_add_test(tc, test_clock_observe);
    tcase_add_test(tc, test_deadline_ms);
    tcase_add_test(tc, test_clock_unique_across_threads);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(util_suite)
