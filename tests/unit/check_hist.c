/*
 * Unit tests: hist, the log-linear histogram behind every p50/p99/max that
 * kura bench, kura stallwatch and the replication delay report. Each
 * percentile must fall within the bucket resolution (1/32, about 3%) of the
 * exact one, across the whole range of values, and never above the maximum.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "hist.h"
#include "unit_main.h"

static int
_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a;
    uint64_t y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* The exact percentile by the same rule: the ceil(n * pct / 100)th value. */
static uint64_t
_exact(const uint64_t *sorted, size_t n, double pct)
{
    size_t rank = (size_t)ceil((double)n * pct / 100.0);

    if (rank == 0) {
        rank = 1;
    }
    return sorted[rank - 1];
}

/* A bucket's lower bound: never above the exact value, within 1/32 of it. */
static void
_assert_close(uint64_t got, uint64_t want)
{
    ck_assert_uint_le(got, want);
    ck_assert_uint_le(want - got, want / 32);
}

START_TEST(test_empty_is_zero)
{
    static struct hist h;

    hist_reset(&h);
    ck_assert_uint_eq(hist_percentile(&h, 50), 0);
    ck_assert_uint_eq(hist_percentile(&h, 99.9), 0);
    ck_assert_uint_eq(h.max, 0);
}
END_TEST

/* Below HIST_SUB every value has a bucket of its own: exact. */
START_TEST(test_small_values_are_exact)
{
    static struct hist h;

    hist_reset(&h);
    for (uint64_t v = 1; v <= 20; v++) {
        hist_add(&h, v);
    }
    ck_assert_uint_eq(hist_percentile(&h, 50), 10);
    ck_assert_uint_eq(hist_percentile(&h, 95), 19);
    ck_assert_uint_eq(hist_percentile(&h, 100), 20);
    ck_assert_uint_eq(h.n, 20);
    ck_assert_uint_eq(h.max, 20);
}
END_TEST

/* A percentile of 0 is the smallest sample, not the largest. */
START_TEST(test_zeroth_percentile_is_the_minimum)
{
    static struct hist h;

    hist_reset(&h);
    hist_add(&h, 7);
    hist_add(&h, 900);
    hist_add(&h, 5000);
    ck_assert_uint_eq(hist_percentile(&h, 0), 7);
}
END_TEST

/* Latencies from 1 us to about 10 s, spread over every power of two. */
START_TEST(test_percentiles_within_resolution)
{
    enum { N = 20000 };
    static struct hist h;
    static uint64_t v[N];
    const double pcts[] = {1, 10, 50, 90, 99, 99.9, 100};

    srandom(20261127);
    hist_reset(&h);
    for (size_t i = 0; i < N; i++) {
        int bits = (int)(random() % 24);
        v[i] = ((uint64_t)random() & ((1ULL << bits) - 1)) + 1;
        hist_add(&h, v[i]);
    }
    qsort(v, N, sizeof(v[0]), _cmp_u64);
    for (size_t i = 0; i < sizeof(pcts) / sizeof(pcts[0]); i++) {
        _assert_close(hist_percentile(&h, pcts[i]), _exact(v, N, pcts[i]));
    }
    ck_assert_uint_eq(h.max, v[N - 1]);
}
END_TEST

/* The largest values land in the last buckets without overflow. */
START_TEST(test_extreme_values)
{
    static struct hist h;

    hist_reset(&h);
    hist_add(&h, UINT64_MAX);
    hist_add(&h, 1ULL << 63);
    ck_assert_uint_eq(h.max, UINT64_MAX);
    ck_assert_uint_eq(hist_percentile(&h, 50), 1ULL << 63);
    _assert_close(hist_percentile(&h, 100), UINT64_MAX);
}
END_TEST

START_TEST(test_reset_forgets)
{
    static struct hist h;

    hist_reset(&h);
    hist_add(&h, 123456);
    hist_reset(&h);
    ck_assert_uint_eq(h.n, 0);
    ck_assert_uint_eq(h.max, 0);
    ck_assert_uint_eq(hist_percentile(&h, 99), 0);
}
END_TEST

static Suite *
hist_suite(void)
{
    Suite *s = suite_create("hist");
    TCase *tc = tcase_create("hist");

    tcase_add_test(tc, test_empty_is_zero);
    tcase_add_test(tc, test_small_values_are_exact);
    tcase_add_test(tc, test_zeroth_percentile_is_the_minimum);
    tcase_add_test(tc, test_percentiles_within_resolution);
    tcase_add_test(tc, test_extreme_values);
    tcase_add_test(tc, test_reset_forgets);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(hist_suite)
