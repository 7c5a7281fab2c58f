/*
 * Unit tests: per-prefix request counts (detail.h): counting only while
 * on, the prefix up to the first ':' (keys without one and a NUL before
 * it are not counted), the dump's lines, clearing, and the bound on the
 * number of prefixes.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "detail.h"
#include "unit_main.h"

static struct detail d;

static void
_setup(void)
{
    detail_init(&d);
}

static void
_teardown(void)
{
    detail_deinit(&d);
}

/* The dump as a NUL-terminated string (caller frees). */
static char *
_dump(void)
{
    struct buf out;
    buf_init(&out);
    ck_assert(detail_dump(&d, &out, (size_t)1 << 26));
    char *s = malloc(buf_len(&out) + 1);
    memcpy(s, buf_head(&out), buf_len(&out));
    s[buf_len(&out)] = '\0';
    buf_deinit(&out);
    return s;
}

START_TEST(test_counts_only_while_on)
{
    detail_get(&d, "a:1", 3, true);
    char *s = _dump();
    ck_assert_str_eq(s, "END\r\n");
    free(s);
    detail_set(&d, true);
    ck_assert(detail_on(&d));
    detail_get(&d, "a:1", 3, true);
    detail_get(&d, "a:2", 3, false);
    detail_set_key(&d, "a:3", 3);
    detail_delete(&d, "a:", 2);
    detail_set(&d, false);
    detail_get(&d, "a:1", 3, true); /* off: not counted, counts kept */
    s = _dump();
    ck_assert_str_eq(s, "PREFIX a get 2 hit 1 set 1 del 1\r\nEND\r\n");
    free(s);
}
END_TEST

START_TEST(test_prefixes)
{
    detail_set(&d, true);
    detail_get(&d, "nocolon", 7, true);   /* no prefix: not counted */
    detail_get(&d, "x\0y:z", 5, true);    /* a NUL ends the key first */
    detail_get(&d, ":empty", 6, false);   /* an empty prefix counts */
    detail_set_key(&d, "u:1:2", 5);       /* the first ':' ends it */
    detail_set_key(&d, "u:9", 3);
    char *s = _dump();
    ck_assert_ptr_nonnull(strstr(s, "PREFIX  get 1 hit 0 set 0 del 0\r\n"));
    ck_assert_ptr_nonnull(strstr(s, "PREFIX u get 0 hit 0 set 2 del 0\r\n"));
    ck_assert_ptr_null(strstr(s, "nocolon"));
    ck_assert_ptr_null(strstr(s, "PREFIX x"));
    ck_assert_str_eq(s + strlen(s) - 5, "END\r\n");
    free(s);
    detail_clear(&d);
    s = _dump();
    ck_assert_str_eq(s, "END\r\n");
    free(s);
}
END_TEST

START_TEST(test_bounded)
{
    char key[32];
    detail_set(&d, true);
    for (int i = 0; i < DETAIL_MAX_PREFIXES + 100; i++) {
        int n = snprintf(key, sizeof(key), "p%d:k", i);
        detail_set_key(&d, key, (size_t)n);
    }
    ck_assert_uint_eq(d.nprefixes, DETAIL_MAX_PREFIXES);
    detail_set_key(&d, "p0:k", 4); /* a known prefix still counts */
    char *s = _dump();
    ck_assert_ptr_nonnull(strstr(s, "PREFIX p0 get 0 hit 0 set 2 del 0\r\n"));
    free(s);
}
END_TEST

static Suite *
detail_suite(void)
{
    Suite *s = suite_create("detail");
    TCase *tc = tcase_create("detail");
    tcase_add_checked_fixture(tc, _setup, _teardown);
    tcase_add_test(tc, test_counts_only_while_on);
    tcase_add_test(tc, test_prefixes);
    tcase_add_test(tc, test_bounded);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(detail_suite)
