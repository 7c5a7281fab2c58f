/*
 * Unit tests: json_check() accepts exactly RFC 8259 JSON texts (any value
 * at the top level) and says where parsing failed otherwise.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "json_check.h"
#include "unit_main.h"

static bool
_valid(const char *s)
{
    struct json_check_error err;
    return json_check(s, strlen(s), &err);
}

START_TEST(test_valid_documents)
{
    static const char *const ok[] = {
        "{}", "[]", "0", "-1.5e+10", "\"s\"", "true", "false", "null",
        " \t\r\n{\"a\": [1, 2.0, \"x\", null, {\"b\": false}]} \n",
        "\"caf\xc3\xa9 \\u00e9 \\ud83d\\ude00\"",
        "{\"user\":{\"id\":42,\"name\":\"kura\",\"tags\":[\"a\",\"b\"]}}",
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        ck_assert_msg(_valid(ok[i]), "refused: %s", ok[i]);
    }
}
END_TEST

START_TEST(test_invalid_documents)
{
    static const char *const bad[] = {
        "",               /* no value */
        "   ",            /* only whitespace */
        "{",              /* unfinished */
        "{\"a\":1,}",     /* trailing comma */
        "{a:1}",          /* unquoted name */
        "'s'",            /* single quotes */
        "[1] [2]",        /* two values */
        "{} x",           /* trailing garbage */
        "// c\n{}",       /* comments */
        "01",             /* leading zero */
        "NaN",
        "\"\xff\"",       /* not UTF-8 */
        "\"a\tb\"",       /* raw control character in a string */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_msg(!_valid(bad[i]), "accepted: %s", bad[i]);
    }
}
END_TEST

START_TEST(test_error_says_where)
{
    struct json_check_error err;
    static const char doc[] = "{\"a\": [1, 2, }";
    ck_assert(!json_check(doc, sizeof(doc) - 1, &err));
    ck_assert_uint_ge(err.offset, 10);
    ck_assert_uint_le(err.offset, sizeof(doc) - 1);
    ck_assert_uint_gt(strlen(err.reason), 0);
    ck_assert_ptr_null(strchr(err.reason, '\n'));
}
END_TEST

START_TEST(test_deep_nesting_is_bounded_work)
{
    /* 100,000 levels: no recursion, no crash; valid when closed. */
    size_t depth = 100000;
    char *s = malloc(2 * depth + 1);
    ck_assert_ptr_nonnull(s);
    memset(s, '[', depth);
    memset(s + depth, ']', depth);
    s[2 * depth] = '\0';
    ck_assert(_valid(s));
    s[2 * depth - 1] = '}';
    ck_assert(!_valid(s));
    free(s);
}
END_TEST

static Suite *
_suite(void)
{
    Suite *s = suite_create("json_check");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_valid_documents);
    tcase_add_test(tc, test_invalid_documents);
    tcase_add_test(tc, test_error_says_where);
    tcase_add_test(tc, test_deep_nesting_is_bounded_work);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(_suite)
