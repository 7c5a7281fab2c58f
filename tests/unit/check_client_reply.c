/*
 * Unit tests: the reply decoder every kura command shares
 * (tools/kura/client_reply.h): text lines, value blocks with and without
 * cas, meta VA blocks, binary frames, items split anywhere, and the
 * framing errors that must stop a reader.
 */
#include <check.h>
#include <string.h>

#include "client_reply.h"
#include "unit_main.h"

static enum client_reply_kind
_next(const char *buf, struct client_reply *r)
{
    return client_reply_next(CLIENT_PROTO_TEXT, buf, strlen(buf), 1 << 20, r);
}

START_TEST(test_lines_are_read_one_at_a_time)
{
    const char *buf = "STORED\r\nNOT_STORED\r\nEND\n";
    struct client_reply r;
    ck_assert_int_eq(_next(buf, &r), CLIENT_REPLY_LINE);
    ck_assert(client_reply_is(&r, "STORED"));
    ck_assert_uint_eq(r.len, 8);
    ck_assert_int_eq(_next(buf + r.len, &r), CLIENT_REPLY_LINE);
    ck_assert(client_reply_is(&r, "NOT_STORED"));
    ck_assert(!client_reply_is(&r, "STORED"));
    ck_assert_int_eq(_next(buf + 20, &r), CLIENT_REPLY_LINE);
    ck_assert(client_reply_is(&r, "END")); /* a bare "\n" ends a line too */
    ck_assert_uint_eq(r.len, 4);
}
END_TEST

START_TEST(test_a_value_block_gives_its_key_and_data)
{
    const char *buf = "VALUE u:1 5 3\r\na\r\n\r\nEND\r\n";
    struct client_reply r;
    ck_assert_int_eq(_next(buf, &r), CLIENT_REPLY_VALUE);
    ck_assert_uint_eq(r.klen, 3);
    ck_assert_int_eq(memcmp(r.key, "u:1", 3), 0);
    ck_assert_uint_eq(r.dlen, 3);
    ck_assert_int_eq(memcmp(r.data, "a\r\n", 3), 0); /* data may hold CRLF */
    ck_assert_uint_eq(r.len, 20);
    ck_assert_int_eq(_next(buf + r.len, &r), CLIENT_REPLY_LINE);
    ck_assert(client_reply_is(&r, "END"));

    ck_assert_int_eq(_next("VALUE k 0 2 77\r\nhi\r\n", &r), CLIENT_REPLY_VALUE);
    ck_assert_uint_eq(r.dlen, 2);
    ck_assert_int_eq(_next("VALUE k 0 0\r\n\r\n", &r), CLIENT_REPLY_VALUE);
    ck_assert_uint_eq(r.dlen, 0);
}
END_TEST

START_TEST(test_every_split_of_an_item_asks_for_more)
{
    const char *buf = "VALUE key 1 4\r\nabcd\r\n";
    size_t len = strlen(buf);
    struct client_reply r;
    for (size_t cut = 0; cut < len; cut++) {
        ck_assert_int_eq(
            client_reply_next(CLIENT_PROTO_TEXT, buf, cut, 1 << 20, &r),
            CLIENT_REPLY_MORE);
    }
    ck_assert_int_eq(
        client_reply_next(CLIENT_PROTO_TEXT, buf, len, 1 << 20, &r),
        CLIENT_REPLY_VALUE);
}
END_TEST

START_TEST(test_broken_value_framing_is_bad)
{
    struct client_reply r;
    /* Data not followed by CRLF. */
    ck_assert_int_eq(_next("VALUE k 0 2\r\nabc\r\n", &r), CLIENT_REPLY_BAD);
    /* Missing, non-decimal or oversized fields. */
    ck_assert_int_eq(_next("VALUE k 0\r\n", &r), CLIENT_REPLY_BAD);
    ck_assert_int_eq(_next("VALUE  0 1\r\nx\r\n", &r), CLIENT_REPLY_BAD);
    ck_assert_int_eq(_next("VALUE k x 1\r\nx\r\n", &r), CLIENT_REPLY_BAD);
    ck_assert_int_eq(_next("VALUE k 0 -1\r\nx\r\n", &r), CLIENT_REPLY_BAD);
    ck_assert_int_eq(_next("VALUE k 0 1 c\r\nx\r\n", &r), CLIENT_REPLY_BAD);
    ck_assert_int_eq(_next("VALUE k 0 1 2 3\r\nx\r\n", &r), CLIENT_REPLY_BAD);
    ck_assert_int_eq(
        client_reply_next(CLIENT_PROTO_TEXT, "VALUE k 0 9\r\n", 13, 8, &r),
        CLIENT_REPLY_BAD);
    /* Not a value header: an ordinary line, for the caller to judge. */
    ck_assert_int_eq(_next("VALUES 1\r\n", &r), CLIENT_REPLY_LINE);
}
END_TEST

static enum client_reply_kind
_meta(const char *buf, struct client_reply *r)
{
    return client_reply_next(CLIENT_PROTO_META, buf, strlen(buf), 1 << 20, r);
}

START_TEST(test_meta_value_blocks_and_lines)
{
    struct client_reply r;
    ck_assert_int_eq(_meta("VA 3 f5 t-1\r\nabc\r\nEN\r\n", &r),
                     CLIENT_REPLY_VALUE);
    ck_assert_uint_eq(r.dlen, 3);
    ck_assert_int_eq(memcmp(r.data, "abc", 3), 0);
    ck_assert_ptr_null(r.key);
    ck_assert_uint_eq(r.len, 18);
    ck_assert_int_eq(_meta("VA 0\r\n\r\n", &r), CLIENT_REPLY_VALUE);
    ck_assert_uint_eq(r.dlen, 0);
    ck_assert_int_eq(_meta("HD\r\n", &r), CLIENT_REPLY_LINE);
    ck_assert(client_reply_is(&r, "HD"));
    ck_assert_int_eq(_meta("VA 3\r\nab", &r), CLIENT_REPLY_MORE);
    ck_assert_int_eq(_meta("VA x\r\nabc\r\n", &r), CLIENT_REPLY_BAD);
    ck_assert_int_eq(_meta("VA 2\r\nabc\r\n", &r), CLIENT_REPLY_BAD);
    /* "VALUE" means nothing in meta, "VA" nothing in text. */
    ck_assert_int_eq(_meta("VALUE k 0 1\r\n", &r), CLIENT_REPLY_LINE);
    ck_assert_int_eq(_next("VA 1\r\nx\r\n", &r), CLIENT_REPLY_LINE);
    ck_assert(client_reply_starts(&r, "VA "));
}
END_TEST

START_TEST(test_binary_frames)
{
    /* A get's hit: 4 bytes of extras (flags), no key, value "hi". */
    static const unsigned char hit[] = {
        0x81, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x06, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
        0x00, 0x00, 0x00, 0x00, 'h', 'i'};
    struct client_reply r;
    const char *buf = (const char *)hit;
    for (size_t cut = 0; cut < sizeof(hit); cut++) {
        ck_assert_int_eq(
            client_reply_next(CLIENT_PROTO_BINARY, buf, cut, 1 << 20, &r),
            CLIENT_REPLY_MORE);
    }
    ck_assert_int_eq(client_reply_next(CLIENT_PROTO_BINARY, buf, sizeof(hit),
                                       1 << 20, &r),
                     CLIENT_REPLY_FRAME);
    ck_assert_uint_eq(r.len, sizeof(hit));
    ck_assert_uint_eq(r.opcode, 0x00);
    ck_assert_uint_eq(r.status, 0x0000);
    ck_assert_uint_eq(r.klen, 0);
    ck_assert_uint_eq(r.dlen, 2);
    ck_assert_int_eq(memcmp(r.data, "hi", 2), 0);
    /* A body over the limit, a request's magic, extras past the body. */
    ck_assert_int_eq(client_reply_next(CLIENT_PROTO_BINARY, buf, sizeof(hit),
                                       5, &r),
                     CLIENT_REPLY_BAD);
    unsigned char bad[sizeof(hit)];
    memcpy(bad, hit, sizeof(hit));
    bad[0] = 0x80;
    ck_assert_int_eq(client_reply_next(CLIENT_PROTO_BINARY, (char *)bad,
                                       sizeof(bad), 1 << 20, &r),
                     CLIENT_REPLY_BAD);
    memcpy(bad, hit, sizeof(hit));
    bad[4] = 0x07;
    ck_assert_int_eq(client_reply_next(CLIENT_PROTO_BINARY, (char *)bad,
                                       sizeof(bad), 1 << 20, &r),
                     CLIENT_REPLY_BAD);
}
END_TEST

static Suite *
client_reply_suite(void)
{
    Suite *s = suite_create("client_reply");
    TCase *tc = tcase_create("items");
    tcase_add_test(tc, test_lines_are_read_one_at_a_time);
    tcase_add_test(tc, test_a_value_block_gives_its_key_and_data);
    tcase_add_test(tc, test_every_split_of_an_item_asks_for_more);
    tcase_add_test(tc, test_broken_value_framing_is_bad);
    tcase_add_test(tc, test_meta_value_blocks_and_lines);
    tcase_add_test(tc, test_binary_frames);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(client_reply_suite)
