/*
 * Unit tests: the replication frame codec and the REPL request line.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"
#include "repl_proto.h"
#include "unit_main.h"

START_TEST(test_heartbeat_ack_snapshot_frames)
{
    uint8_t buf[128];
    struct repl_frame f;
    size_t n = repl_encode_heartbeat(buf, 100, 10, 90, 9, 12345);
    ck_assert_int_eq(repl_frame_decode(buf, n, &f), REPL_OK);
    ck_assert(f.type == REPL_FRAME_HEARTBEAT && f.lsn == 100 && f.seq == 10 &&
              f.pos_lsn == 90 && f.pos_seq == 9 && f.now_us == 12345);
    /* A position past the log end is nonsense. */
    n = repl_encode_heartbeat(buf, 100, 10, 190, 9, 1);
    ck_assert_int_eq(repl_frame_decode(buf, n, &f), REPL_CORRUPT);
    n = repl_encode_ack(buf, 77, 7);
    ck_assert_int_eq(repl_frame_decode(buf, n, &f), REPL_OK);
    ck_assert(f.type == REPL_FRAME_ACK && f.lsn == 77 && f.seq == 7);
    n = repl_encode_u64(buf, REPL_FRAME_SNAP_END, 42);
    ck_assert_int_eq(repl_frame_decode(buf, n, &f), REPL_OK);
    ck_assert(f.type == REPL_FRAME_SNAP_END && f.count == 42);
    n = repl_encode_snap_item(buf, "key", 3, 5);
    memcpy(buf + n, "value", 5);
    ck_assert_int_eq(repl_frame_decode(buf, n + 5, &f), REPL_OK);
    ck_assert(f.nkey == 3 && memcmp(f.key, "key", 3) == 0 && f.vlen == 5);
    /* Any prefix is short. */
    for (size_t i = 0; i < n + 5; i++) {
        ck_assert_int_eq(repl_frame_decode(buf, i, &f), REPL_SHORT);
    }
}
END_TEST

START_TEST(test_record_frame_checks_the_record)
{
    uint8_t buf[256];
    uint8_t rec[200];
    struct repl_frame f;
    struct record_meta m = {
        .kind = RECORD_VALUE, .flags = 0, .exptime = 0, .cas = 1, .ts = 1,
        .sid = 3};
    uint8_t env[RECORD_HEADER_MAX];
    size_t elen = record_encode(&m, env);
    uint8_t *p = logrec_begin(rec, LOGREC_PUT, 3, "k", 1, elen + 2);
    memcpy(p, env, elen);
    memcpy(p + elen, "vv", 2);
    size_t rlen = logrec_size(1, elen + 2);
    logrec_seal(rec, 10, 1);
    size_t h = repl_frame_header(buf, REPL_FRAME_RECORD, rlen);
    memcpy(buf + h, rec, rlen);
    ck_assert_int_eq(repl_frame_decode(buf, h + rlen, &f), REPL_OK);
    ck_assert(f.rec.lsn == 10 && f.rec.sid == 3 && f.rec.nkey == 1);
    buf[h + rlen - 1] ^= 1;
    ck_assert_int_eq(repl_frame_decode(buf, h + rlen, &f), REPL_CORRUPT);
}
END_TEST

START_TEST(test_garbage_is_corrupt_not_a_crash)
{
    uint8_t buf[4096];
    struct repl_frame f;
    unsigned seed = 99;
    for (int round = 0; round < 20000; round++) {
        size_t n = (size_t)(rand_r(&seed) % 64);
        for (size_t i = 0; i < n; i++) {
            buf[i] = (uint8_t)rand_r(&seed);
        }
        if (n >= 4 && (round & 1)) {
            buf[0] = (uint8_t)n; /* plausible lengths reach the payloads */
            buf[1] = buf[2] = buf[3] = 0;
            buf[5] = buf[6] = buf[7] = 0;
            buf[4] = (uint8_t)(1 + rand_r(&seed) % 7);
        }
        enum repl_status st = repl_frame_decode(buf, n, &f);
        ck_assert(st == REPL_OK || st == REPL_SHORT || st == REPL_CORRUPT);
    }
    /* A huge declared length is refused before any allocation. */
    uint8_t huge[8] = {0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0};
    ck_assert_int_eq(repl_frame_decode(huge, 8, &f), REPL_CORRUPT);
}
END_TEST

#define NONCE "00112233445566778899aabbccddeeff"
#define PROOF "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

START_TEST(test_hello)
{
    struct repl_hello h;
    const char *ok = "1 10001 1795316896741441 1 " NONCE;
    ck_assert(repl_hello_parse(ok, strlen(ok), &h));
    ck_assert(h.version == 1 && h.sid == 10001 && h.after == 1795316896741441ULL &&
              h.flags == 1 && strcmp(h.nonce, NONCE) == 0);
    const char *bad[] = {"", "1", "1 2 3", "1 0 3 0 " NONCE, "1 2 x 0 " NONCE,
                         "1 2 3 4 5 " NONCE, "-1 2 3 4 " NONCE, "1 2 3 4",
                         "1 2 3 4 00112233", "1 2 3 4 " NONCE "0",
                         "1 2 3 4 00112233445566778899AABBCCDDEEFF",
                         "1 2 3 4 " NONCE " 5"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_msg(!repl_hello_parse(bad[i], strlen(bad[i]), &h), "%s",
                      bad[i]);
    }
    /* What a standby formats, a master parses back. */
    char line[REPL_LINE_MAX];
    int n = repl_hello_format(&h, line, sizeof(line));
    ck_assert_str_eq(line, "REPL 1 10001 1795316896741441 1 " NONCE "\r\n");
    struct repl_hello again;
    ck_assert(repl_hello_parse(line + 5, (size_t)n - 7, &again));
    ck_assert(again.after == h.after && strcmp(again.nonce, h.nonce) == 0);
    ck_assert_int_eq(repl_hello_format(&h, line, 20), -1);
}
END_TEST

START_TEST(test_challenge_and_auth_lines)
{
    char nonce[REPL_NONCE_HEX + 1];
    char proof[REPL_PROOF_HEX + 1];
    ck_assert(repl_challenge_parse("REPL CHALLENGE " NONCE " " PROOF, nonce,
                                   proof));
    ck_assert_str_eq(nonce, NONCE);
    ck_assert_str_eq(proof, PROOF);
    ck_assert(repl_auth_line_parse("REPL AUTH " PROOF, proof));
    const char *bad_challenges[] = {
        "REPL OK 1", "REPL CHALLENGE", "REPL CHALLENGE " NONCE,
        "REPL CHALLENGE " NONCE " " PROOF " x", "REPL CHALLENGE " PROOF " " NONCE,
        "REPL CHALLENGE " NONCE " " PROOF "0",
        "REPL CHALLENGE " NONCE " 0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
    };
    for (size_t i = 0; i < sizeof(bad_challenges) / sizeof(bad_challenges[0]);
         i++) {
        ck_assert_msg(!repl_challenge_parse(bad_challenges[i], nonce, proof),
                      "%s", bad_challenges[i]);
    }
    ck_assert(!repl_auth_line_parse("REPL AUTH", proof));
    ck_assert(!repl_auth_line_parse("REPL AUTH " NONCE, proof));
    ck_assert(!repl_auth_line_parse("REPL AUTH " PROOF " x", proof));
    ck_assert(!repl_auth_line_parse("REPL OK 1", proof));
}
END_TEST

static Suite *
repl_proto_suite(void)
{
    Suite *s = suite_create("repl_proto");
    TCase *tc = tcase_create("frames");
    tcase_add_test(tc, test_heartbeat_ack_snapshot_frames);
    tcase_add_test(tc, test_record_frame_checks_the_record);
    tcase_add_test(tc, test_garbage_is_corrupt_not_a_crash);
    tcase_add_test(tc, test_hello);
    tcase_add_test(tc, test_challenge_and_auth_lines);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(repl_proto_suite)
