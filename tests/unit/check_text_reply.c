/*
 * Unit tests: the text-protocol reply reader the tools share
 * (tools/kura/text_reply.h): lines, value blocks with and without cas, items
 * split anywhere, and the framing errors that must stop a reader.
 */
#include <check.h>
#include <string.h>

#include "text_reply.h"
#include "unit_main.h"

static enum text_reply_kind
_next(const char *buf, struct text_reply *r)
{
    return text_reply_next(buf, strlen(buf), 1 << 20, r);
}

START_TEST(test_lines_are_read_one_at_a_time)
{
    const char *buf = "STORED\r\nNOT_STORED\r\nEND\n";
    struct text_reply r;
    ck_assert_int_eq(_next(buf, &r), TEXT_REPLY_LINE);
    ck_assert(text_reply_is(&r, "STORED"));
    ck_assert_uint_eq(r.len, 8);
    ck_assert_int_eq(_next(buf + r.len, &r), TEXT_REPLY_LINE);
    ck_assert(text_reply_is(&r, "NOT_STORED"));
    ck_assert(!text_reply_is(&r, "STORED"));
    ck_assert_int_eq(_next(buf + 20, &r), TEXT_REPLY_LINE);
    ck_assert(text_reply_is(&r, "END")); /* a bare "\n" ends a line too */
    ck_assert_uint_eq(r.len, 4);
}
END_TEST

START_TEST(test_a_value_block_gives_its_key_and_data)
{
    const char *buf = "VALUE u:1 5 3\r\na\r\n\r\nEND\r\n";
    struct text_reply r;
    ck_assert_int_eq(_next(buf, &r), TEXT_REPLY_VALUE);
    ck_assert_uint_eq(r.klen, 3);
    ck_assert_int_eq(memcmp(r.key, "u:1", 3), 0);
    ck_assert_uint_eq(r.dlen, 3);
    ck_assert_int_eq(memcmp(r.data, "a\r\n", 3), 0); /* data may hold CRLF */
    ck_assert_uint_eq(r.len, 20);
    ck_assert_int_eq(_next(buf + r.len, &r), TEXT_REPLY_LINE);
    ck_assert(text_reply_is(&r, "END"));

    ck_assert_int_eq(_next("VALUE k 0 2 77\r\nhi\r\n", &r), TEXT_REPLY_VALUE);
    ck_assert_uint_eq(r.dlen, 2);
    ck_assert_int_eq(_next("VALUE k 0 0\r\n\r\n", &r), TEXT_REPLY_VALUE);
    ck_assert_uint_eq(r.dlen, 0);
}
END_TEST

START_TEST(test_every_split_of_an_item_asks_for_more)
{
    const char *buf = "VALUE key 1 4\r\nabcd\r\n";
    size_t len = strlen(buf);
    struct text_reply r;
    for (size_t cut = 0; cut < len; cut++) {
        ck_assert_int_eq(text_reply_next(buf, cut, 1 << 20, &r),
                         TEXT_REPLY_MORE);
    }
    ck_assert_int_eq(text_reply_next(buf, len, 1 << 20, &r),
                     TEXT_REPLY_VALUE);
}
END_TEST

START_TEST(test_broken_value_framing_is_bad)
{
    struct text_reply r;
    /* Data not followed by CRLF. */
    ck_assert_int_eq(_next("VALUE k 0 2\r\nabc\r\n", &r), TEXT_REPLY_BAD);
    /* Missing, non-decimal or oversized fields. */
    ck_assert_int_eq(_next("VALUE k 0\r\n", &r), TEXT_REPLY_BAD);
    ck_assert_int_eq(_next("VALUE  0 1\r\nx\r\n", &r), TEXT_REPLY_BAD);
    ck_assert_int_eq(_next("VALUE k x 1\r\nx\r\n", &r), TEXT_REPLY_BAD);
    ck_assert_int_eq(_next("VALUE k 0 -1\r\nx\r\n", &r), TEXT_REPLY_BAD);
    ck_assert_int_eq(_next("VALUE k 0 1 c\r\nx\r\n", &r), TEXT_REPLY_BAD);
    ck_assert_int_eq(_next("VALUE k 0 1 2 3\r\nx\r\n", &r), TEXT_REPLY_BAD);
    ck_assert_int_eq(text_reply_next("VALUE k 0 9\r\n", 13, 8, &r),
                     TEXT_REPLY_BAD);
    /* Not a value header: an ordinary line, for the caller to judge. */
    ck_assert_int_eq(_next("VALUES 1\r\n", &r), TEXT_REPLY_LINE);
}
END_TEST

static Suite *
text_reply_suite(void)
{
    Suite *s = suite_create("text_reply");
    TCase *tc = tcase_create("items");
    tcase_add_test(tc, test_lines_are_read_one_at_a_time);
    tcase_add_test(tc, test_a_value_block_gives_its_key_and_data);
    tcase_add_test(tc, test_every_split_of_an_item_asks_for_more);
    tcase_add_test(tc, test_broken_value_framing_is_bad);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(text_reply_suite)
