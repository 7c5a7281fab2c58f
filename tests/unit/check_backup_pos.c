/*
 * Unit tests for backup_pos: the position file written beside a backup
 * (round trip, every malformed form refused, readable as an -rts file) and
 * the times a point-in-time restore accepts (unix seconds, ISO-8601 with a
 * zone; dates checked, a time without a zone refused).
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "backup_pos.h"
#include "unit_main.h"

#define T_2026_11_23_10 1795428000ull /* 2026-11-23T10:00:00Z */
#define US 1000000ull

static bool
_parse(const char *text, struct backup_pos *p)
{
    return backup_pos_parse(text, strlen(text), p);
}

START_TEST(test_format_parse_round_trip)
{
    struct backup_pos in = {T_2026_11_23_10 * US + 123456, 42, 7};
    struct backup_pos out;
    char text[BACKUP_POS_MAX];
    int n = backup_pos_format(&in, text, sizeof(text));
    ck_assert_int_gt(n, 0);
    ck_assert_str_eq(text, "rts 1795428000123456 42\nsid 7\n"
                           "time 2026-11-23T10:00:00.123456Z\n");
    ck_assert(backup_pos_parse(text, (size_t)n, &out));
    ck_assert_uint_eq(out.lsn, in.lsn);
    ck_assert_uint_eq(out.seq, in.seq);
    ck_assert_uint_eq(out.sid, in.sid);
}
END_TEST

/* The largest values still fit the buffer an -rts file is read into. */
START_TEST(test_largest_fits)
{
    struct backup_pos in = {UINT64_MAX, UINT64_MAX, 65535};
    struct backup_pos out;
    char text[BACKUP_POS_MAX];
    int n = backup_pos_format(&in, text, sizeof(text));
    ck_assert_int_gt(n, 0);
    ck_assert_int_lt(n, 128);
    ck_assert(backup_pos_parse(text, (size_t)n, &out));
    ck_assert_uint_eq(out.lsn, UINT64_MAX);
    ck_assert_int_eq(backup_pos_format(&in, text, 20), -1);
}
END_TEST

/* The first line is what repl_receiver.c reads from an -rts file. */
START_TEST(test_first_line_is_an_rts_file)
{
    struct backup_pos in = {1795428000000001ull, 9, 1};
    char text[BACKUP_POS_MAX];
    uint64_t lsn = 0;
    uint64_t seq = 0;
    ck_assert_int_gt(backup_pos_format(&in, text, sizeof(text)), 0);
    ck_assert_int_eq(sscanf(text, "rts %" SCNu64 " %" SCNu64, &lsn, &seq), 2);
    ck_assert_uint_eq(lsn, in.lsn);
    ck_assert_uint_eq(seq, 9);
}
END_TEST

START_TEST(test_parse_refuses_malformed)
{
    static const char *const bad[] = {
        "",
        "rts 1795428000000000 1\nsid 1\n",
        "rts 1795428000000000 1\nsid 1\ntime 2026-11-23T10:00:00.000000Z",
        "rts 1795428000000000 1\nsid 1\ntime 2026-11-23T10:00:00.000000Z\n"
        "extra\n",
        "sid 1\nrts 1795428000000000 1\ntime 2026-11-23T10:00:00.000000Z\n",
        "rts 01795428000000000 1\nsid 1\ntime 2026-11-23T10:00:00.000000Z\n",
        "rts 1795428000000000 01\nsid 1\ntime 2026-11-23T10:00:00.000000Z\n",
        "rts 1795428000000000\nsid 1\ntime 2026-11-23T10:00:00.000000Z\n",
        "rts 1795428000000000 1 2\nsid 1\ntime 2026-11-23T10:00:00.000000Z\n",
        "rts  1795428000000000 1\nsid 1\ntime 2026-11-23T10:00:00.000000Z\n",
        "rts 1795428000000000 1\nsid 0\ntime 2026-11-23T10:00:00.000000Z\n",
        "rts 1795428000000000 1\nsid 65536\ntime 2026-11-23T10:00:00.000000Z\n",
        "rts 1795428000000000 1\nsid x\ntime 2026-11-23T10:00:00.000000Z\n",
        /* the time names another instant than the lsn */
        "rts 1795428000000000 1\nsid 1\ntime 2026-11-23T10:00:00.000001Z\n",
        "rts 1795428000000000 1\nsid 1\ntime 2026-11-23T10:00:00Z\n",
        "rts 18446744073709551616 1\nsid 1\ntime 2026-11-23T10:00:00.000000Z\n",
        "RTS 1795428000000000 1\nsid 1\ntime 2026-11-23T10:00:00.000000Z\n",
    };
    struct backup_pos p;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_msg(!_parse(bad[i], &p), "accepted: %s", bad[i]);
    }
    ck_assert(_parse("rts 1795428000000000 1\nsid 1\n"
                     "time 2026-11-23T10:00:00.000000Z\n", &p));
    /* A NUL inside the given length is not a line end. */
    const char nul[] = "rts 1795428000000000 1\nsid 1\0\n"
                       "time 2026-11-23T10:00:00.000000Z\n";
    ck_assert(!backup_pos_parse(nul, sizeof(nul) - 1, &p));
}
END_TEST

static uint64_t
_time(const char *s)
{
    uint64_t us = 0;
    ck_assert_msg(backup_pos_time_parse(s, &us), "refused: %s", s);
    return us;
}

START_TEST(test_time_unix_seconds)
{
    ck_assert_uint_eq(_time("1795428000"), T_2026_11_23_10 * US);
    ck_assert_uint_eq(_time("@1795428000"), T_2026_11_23_10 * US);
    ck_assert_uint_eq(_time("1795428000.25"), T_2026_11_23_10 * US + 250000);
    ck_assert_uint_eq(_time("1795428000.000001"), T_2026_11_23_10 * US + 1);
    ck_assert_uint_eq(_time("0"), 0);
    ck_assert_uint_eq(_time("253402300799"), 253402300799ull * US);
}
END_TEST

START_TEST(test_time_iso)
{
    uint64_t t = T_2026_11_23_10 * US;
    ck_assert_uint_eq(_time("2026-11-23T10:00:00Z"), t);
    ck_assert_uint_eq(_time("2026-11-23 10:00:00Z"), t);
    ck_assert_uint_eq(_time("2026-11-23T10:00Z"), t);
    ck_assert_uint_eq(_time("2026-11-23T19:00:00.5+09:00"), t + 500000);
    ck_assert_uint_eq(_time("2026-11-23 19:00+0900"), t);
    ck_assert_uint_eq(_time("2026-11-23T05:30:00-04:30"), t);
    ck_assert_uint_eq(_time("2026-11-23T10:00:00+00"), t);
    ck_assert_uint_eq(_time("2026-11-23T10:00:00.123456Z"), t + 123456);
    ck_assert_uint_eq(_time("2024-02-29T00:00:00Z"), 1709164800ull * US);
    ck_assert_uint_eq(_time("2100-03-01T12:34:56Z"), 4107587696ull * US);
    ck_assert_uint_eq(_time("1970-01-01T00:00:00Z"), 0);
    ck_assert_uint_eq(_time("9999-12-31T23:59:59Z"), 253402300799ull * US);
}
END_TEST

START_TEST(test_time_refused)
{
    static const char *const bad[] = {
        "", "abc", "-5", "1795428000.", "1795428000.1234567", "1795428000x",
        "@", "253402300800", "17954280001795428000",
        "2026-11-23T10:00:00",          /* no zone: refused, not guessed */
        "2026-11-23",                   /* no time */
        "2026-11-23T10Z",
        "2026-11-23T10:00:00.Z",
        "2026-11-23T10:00:00.1234567Z",
        "2026-02-29T00:00Z",            /* 2026 is not a leap year */
        "2100-02-29T00:00Z",            /* nor is 2100 */
        "2026-13-01T00:00Z", "2026-00-01T00:00Z", "2026-11-31T00:00Z",
        "2026-11-00T00:00Z", "2026-11-23T24:00Z", "2026-11-23T10:60Z",
        "2026-11-23T10:00:60Z", "1969-12-31T23:59:59Z",
        "1970-01-01T00:00:00+01:00",    /* before the epoch */
        "2026-11-23T10:00+24:00", "2026-11-23T10:00+09:60",
        "2026-11-23T10:00+9", "2026-11-23T10:00+09:0", "2026-11-23T10:00Zx",
        "2026-11-23t10:00Z", "26-11-23T10:00Z", "2026/11/23T10:00Z",
    };
    uint64_t us;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_msg(!backup_pos_time_parse(bad[i], &us), "accepted: %s",
                      bad[i]);
    }
    ck_assert(!backup_pos_time_parse(NULL, &us));
}
END_TEST

START_TEST(test_time_format_round_trip)
{
    static const uint64_t t[] = {0, 1, 951782400ull * US + 999999,
                                 1709164800ull * US, 4107587696ull * US + 7,
                                 T_2026_11_23_10 * US + 123456,
                                 253402300799ull * US + 999999};
    char out[BACKUP_POS_TIME_MAX];
    backup_pos_time_format(0, out);
    ck_assert_str_eq(out, "1970-01-01T00:00:00.000000Z");
    backup_pos_time_format(951782400ull * US, out);
    ck_assert_str_eq(out, "2000-02-29T00:00:00.000000Z");
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        backup_pos_time_format(t[i], out);
        ck_assert_uint_eq(_time(out), t[i]);
    }
}
END_TEST

static Suite *
backup_pos_suite(void)
{
    Suite *s = suite_create("backup_pos");
    TCase *tc = tcase_create("backup_pos");
    tcase_add_test(tc, test_format_parse_round_trip);
    tcase_add_test(tc, test_largest_fits);
    tcase_add_test(tc, test_first_line_is_an_rts_file);
    tcase_add_test(tc, test_parse_refuses_malformed);
    tcase_add_test(tc, test_time_unix_seconds);
    tcase_add_test(tc, test_time_iso);
    tcase_add_test(tc, test_time_refused);
    tcase_add_test(tc, test_time_format_round_trip);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(backup_pos_suite)
