/*
 * Unit tests: buf, the byte buffer under every connection's input and
 * output and every write batch. Its limit is what keeps a hostile peer from
 * growing a connection's memory, so the tests hold it to that: a reserve
 * past the limit fails and leaves the buffer as it was.
 */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "buf.h"
#include "unit_main.h"

#define LIMIT (64 * 1024)

START_TEST(test_empty_until_data_arrives)
{
    struct buf b;

    buf_init(&b);
    ck_assert_ptr_null(b.data);
    ck_assert_uint_eq(buf_len(&b), 0);
    ck_assert(buf_reserve(&b, 0, LIMIT));
    buf_deinit(&b);
}
END_TEST

START_TEST(test_append_consume_keeps_order)
{
    struct buf b;

    buf_init(&b);
    ck_assert(buf_append(&b, "get k1\r\n", 8, LIMIT));
    ck_assert(buf_append(&b, "get k2\r\n", 8, LIMIT));
    ck_assert_uint_eq(buf_len(&b), 16);
    ck_assert(memcmp(buf_head(&b), "get k1\r\nget k2\r\n", 16) == 0);
    buf_consume(&b, 8);
    ck_assert(memcmp(buf_head(&b), "get k2\r\n", 8) == 0);
    buf_consume(&b, 8);
    /* Fully read: the cursors go back to the start of the storage. */
    ck_assert_uint_eq(b.rpos, 0);
    ck_assert_uint_eq(b.wpos, 0);
    buf_deinit(&b);
}
END_TEST

/* Unread data moves to the front before the storage grows. */
START_TEST(test_reserve_compacts_before_growing)
{
    struct buf b;
    char chunk[1500];

    buf_init(&b);
    memset(chunk, 'a', sizeof(chunk));
    ck_assert(buf_append(&b, chunk, sizeof(chunk), LIMIT));
    size_t cap = b.cap;
    char *data = b.data;
    buf_consume(&b, 1400);
    ck_assert(buf_append(&b, "tail", 4, LIMIT));
    ck_assert(buf_reserve(&b, cap - 104, LIMIT));
    ck_assert_ptr_eq(b.data, data); /* moved in place, not reallocated */
    ck_assert_uint_eq(b.cap, cap);
    ck_assert_uint_eq(b.rpos, 0);
    ck_assert(memcmp(buf_head(&b), chunk, 100) == 0);
    ck_assert(memcmp(buf_head(&b) + 100, "tail", 4) == 0);
    buf_deinit(&b);
}
END_TEST

/* Past the limit: refused, and nothing about the buffer changes. */
START_TEST(test_limit_refuses_and_keeps_the_buffer)
{
    struct buf b;
    static char big[LIMIT];

    buf_init(&b);
    ck_assert(buf_append(&b, "abc", 3, LIMIT));
    struct buf before = b;
    ck_assert(!buf_reserve(&b, LIMIT - 2, LIMIT));
    ck_assert(!buf_append(&b, big, LIMIT, LIMIT));
    ck_assert(!buf_reserve(&b, SIZE_MAX, LIMIT));
    ck_assert_ptr_eq(b.data, before.data);
    ck_assert_uint_eq(b.cap, before.cap);
    ck_assert_uint_eq(buf_len(&b), 3);
    ck_assert(memcmp(buf_head(&b), "abc", 3) == 0);
    /* Exactly up to the limit is allowed, and the storage stops there
     * rather than at the next power of two. */
    ck_assert(buf_reserve(&b, 60000 - 3, 60000));
    ck_assert_uint_eq(b.cap, 60000);
    ck_assert_uint_eq(buf_room(&b), 60000 - 3);
    ck_assert(memcmp(buf_head(&b), "abc", 3) == 0);
    buf_deinit(&b);
}
END_TEST

/* Growth doubles, so appending n bytes one at a time stays linear. */
START_TEST(test_growth_doubles)
{
    struct buf b;
    int grows = 0;

    buf_init(&b);
    for (int i = 0; i < 100000; i++) {
        size_t cap = b.cap;
        char c = (char)i;
        ck_assert(buf_append(&b, &c, 1, 1 << 20));
        grows += b.cap != cap;
    }
    ck_assert_int_le(grows, 8);
    for (int i = 0; i < 100000; i++) {
        ck_assert_int_eq(buf_head(&b)[i], (char)i);
    }
    buf_deinit(&b);
}
END_TEST

/* An idle buffer that once held a big value gives its memory back. */
START_TEST(test_shrink_only_when_empty_and_large)
{
    struct buf b;
    static char big[32 * 1024];

    buf_init(&b);
    ck_assert(buf_append(&b, big, sizeof(big), LIMIT));
    buf_shrink(&b, 4096);
    ck_assert_ptr_nonnull(b.data); /* still holds data */
    buf_consume(&b, sizeof(big));
    buf_shrink(&b, 4096);
    ck_assert_ptr_null(b.data);
    ck_assert_uint_eq(b.cap, 0);

    ck_assert(buf_append(&b, "x", 1, LIMIT));
    buf_consume(&b, 1);
    buf_shrink(&b, 4096); /* small: kept for the next request */
    ck_assert_ptr_nonnull(b.data);
    buf_deinit(&b);
}
END_TEST

START_TEST(test_reset_keeps_storage)
{
    struct buf b;

    buf_init(&b);
    ck_assert(buf_append(&b, "data", 4, LIMIT));
    char *data = b.data;
    buf_reset(&b);
    ck_assert_uint_eq(buf_len(&b), 0);
    ck_assert_ptr_eq(b.data, data);
    buf_deinit(&b);
}
END_TEST

static Suite *
buf_suite(void)
{
    Suite *s = suite_create("buf");
    TCase *tc = tcase_create("buf");

    tcase_add_test(tc, test_empty_until_data_arrives);
    tcase_add_test(tc, test_append_consume_keeps_order);
    tcase_add_test(tc, test_reserve_compacts_before_growing);
    tcase_add_test(tc, test_limit_refuses_and_keeps_the_buffer);
    tcase_add_test(tc, test_growth_doubles);
    tcase_add_test(tc, test_shrink_only_when_empty_and_large);
    tcase_add_test(tc, test_reset_keeps_storage);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(buf_suite)
