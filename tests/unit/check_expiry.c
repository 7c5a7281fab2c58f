/*
 * Unit tests: memcached's exptime rules and flush_all arithmetic.
 */
#include <check.h>

#include "expiry.h"
#include "unit_main.h"

#define NOW 1795314340LL

START_TEST(test_absolute)
{
    ck_assert_uint_eq(expiry_absolute(0, NOW), 0);
    ck_assert_uint_eq(expiry_absolute(1, NOW), NOW + 1);
    ck_assert_uint_eq(expiry_absolute(2592000, NOW), NOW + 2592000);
    /* Beyond 30 days: an absolute unix time. */
    ck_assert_uint_eq(expiry_absolute(2592001, NOW), EXPIRY_ALREADY);
    ck_assert_uint_eq(expiry_absolute(NOW + 60, NOW), NOW + 60);
    ck_assert_uint_eq(expiry_absolute(NOW, NOW), EXPIRY_ALREADY);
    /* Negative: already expired. */
    ck_assert_uint_eq(expiry_absolute(-1, NOW), EXPIRY_ALREADY);
    ck_assert_uint_eq(expiry_absolute(INT32_MIN, NOW), EXPIRY_ALREADY);
}
END_TEST

START_TEST(test_expired)
{
    ck_assert(!expiry_expired(0, NOW));
    ck_assert(expiry_expired(EXPIRY_ALREADY, NOW));
    ck_assert(!expiry_expired((uint32_t)(NOW + 1), NOW));
    ck_assert(expiry_expired((uint32_t)NOW, NOW));
    uint32_t abs = expiry_absolute(1, NOW);
    ck_assert(!expiry_expired(abs, NOW));
    ck_assert(expiry_expired(abs, NOW + 1));
}
END_TEST

START_TEST(test_flush_immediate)
{
    struct expiry_flush f = {0, 0, 0};
    uint64_t now = (uint64_t)NOW * 1000000u;

    ck_assert(!expiry_flushed(&f, now, now));
    ck_assert(expiry_flush_apply(&f, now, 0));
    ck_assert(expiry_flushed(&f, now - 1, now)); /* written before */
    ck_assert(expiry_flushed(&f, now, now));
    ck_assert(!expiry_flushed(&f, now + 1, now)); /* written after */
    /* An older immediate flush never moves the point back. */
    expiry_flush_apply(&f, now - 100, 0);
    ck_assert(expiry_flushed(&f, now - 1, now));
}
END_TEST

START_TEST(test_flush_delayed)
{
    struct expiry_flush f = {0, 0, 0};
    uint64_t now = (uint64_t)NOW * 1000000u;
    uint64_t deadline = expiry_flush_deadline(2, now);

    ck_assert_uint_eq(deadline, now + 2000000u);
    expiry_flush_apply(&f, now, deadline);
    /* Before the deadline nothing is invalid. */
    ck_assert(!expiry_flushed(&f, now - 1, now + 1999999u));
    /* At the deadline, everything written up to it is, including writes
     * made while the flush was pending. */
    ck_assert(expiry_flushed(&f, now + 1000000u, deadline));
    ck_assert(!expiry_flushed(&f, deadline + 1, deadline + 5));
    ck_assert(expiry_flush_settle(&f, deadline));
    ck_assert_uint_eq(f.applied_us, deadline);
    ck_assert_uint_eq(f.pending_us, 0);
    ck_assert(!expiry_flush_settle(&f, deadline + 10));
}
END_TEST

START_TEST(test_flush_pending_keeps_earlier_flush)
{
    /* memcached would show items of an earlier flush again while a later
     * delayed flush is pending; kura keeps them invalid. */
    struct expiry_flush f = {0, 0, 0};
    uint64_t now = (uint64_t)NOW * 1000000u;
    expiry_flush_apply(&f, now, 0);
    expiry_flush_apply(&f, now + 1, now + 60000000u);
    ck_assert(expiry_flushed(&f, now - 5, now + 1));
    /* A new immediate flush cancels the pending one. */
    expiry_flush_apply(&f, now + 10, 0);
    ck_assert_uint_eq(f.pending_us, 0);
}
END_TEST

START_TEST(test_flush_deadline_forms)
{
    uint64_t now = (uint64_t)NOW * 1000000u;
    ck_assert_uint_eq(expiry_flush_deadline(0, now), 0);
    ck_assert_uint_eq(expiry_flush_deadline(-5, now), 0);
    ck_assert_uint_eq(expiry_flush_deadline(NOW + 10, now),
                      (uint64_t)(NOW + 10) * 1000000u);
    ck_assert_uint_eq(expiry_flush_deadline(NOW - 10, now), 0); /* past */
}
END_TEST

START_TEST(test_flush_order_independent)
{
    /* Two servers see the same flushes in different orders and agree. */
    uint64_t now = (uint64_t)NOW * 1000000u;
    struct { uint64_t stamp, deadline; } ops[] = {
        {now + 10, 0}, {now + 20, now + 60000000u}, {now + 15, now + 5000000u},
        {now + 30, 0}, {now + 40, now + 90000000u},
    };
    /* A delayed flush issued before an immediate one, in both orders. */
    struct expiry_flush c = {0, 0, 0};
    struct expiry_flush d = {0, 0, 0};
    expiry_flush_apply(&c, now + 20, now + 60000000u);
    expiry_flush_apply(&c, now + 30, 0);
    expiry_flush_apply(&d, now + 30, 0);
    expiry_flush_apply(&d, now + 20, now + 60000000u);
    ck_assert_uint_eq(c.pending_us, d.pending_us);
    ck_assert_uint_eq(c.applied_us, d.applied_us);
    struct expiry_flush a = {0, 0, 0};
    struct expiry_flush b = {0, 0, 0};
    for (int i = 0; i < 5; i++) {
        expiry_flush_apply(&a, ops[i].stamp, ops[i].deadline);
        expiry_flush_apply(&b, ops[4 - i].stamp, ops[4 - i].deadline);
    }
    ck_assert_uint_eq(a.applied_us, b.applied_us);
    ck_assert_uint_eq(a.pending_us, b.pending_us);
    ck_assert_uint_eq(a.pending_stamp, b.pending_stamp);
    ck_assert_uint_eq(a.pending_us, now + 90000000u);
}
END_TEST

static Suite *
expiry_suite(void)
{
    Suite *s = suite_create("expiry");
    TCase *tc = tcase_create("exptime");
    tcase_add_test(tc, test_absolute);
    tcase_add_test(tc, test_expired);
    suite_add_tcase(s, tc);
    tc = tcase_create("flush_all");
    tcase_add_test(tc, test_flush_immediate);
    tcase_add_test(tc, test_flush_delayed);
    tcase_add_test(tc, test_flush_pending_keeps_earlier_flush);
    tcase_add_test(tc, test_flush_deadline_forms);
    tcase_add_test(tc, test_flush_order_independent);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(expiry_suite)
