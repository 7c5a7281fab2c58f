/*
 * Unit tests for stats_watch: parsing a stats reply (required figures,
 * absent log and master marked absent), and the interval line: rates,
 * mean fdatasync and records per fdatasync, "-" where nothing divides, a
 * restart's counters that went backwards, replication lag and "down".
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "stats_watch.h"
#include "unit_main.h"

static const char *LONE =
    "STAT pid 1\r\nSTAT cmd_get 1000\r\nSTAT get_hits 900\r\n"
    "STAT cmd_set 5000\r\nSTAT curr_connections 64\r\n"
    "STAT curr_items 12345\r\nSTAT kura_ulog_syncs 100\r\n"
    "STAT kura_ulog_sync_us 15000\r\nSTAT kura_ulog_records 2000\r\n"
    "STAT kura_ulog_checkpoints 3\r\nEND\r\n";

static struct stats_watch_sample
_parse(const char *reply, uint64_t at_us)
{
    struct stats_watch_sample s;
    ck_assert(stats_watch_parse(reply, strlen(reply), at_us, &s));
    return s;
}

/* The fields of a formatted line, split on spaces. */
static int
_fields(const char *line, char f[12][24])
{
    int n = 0;
    const char *p = line;
    while (*p != '\0' && n < 12) {
        p += strspn(p, " \n");
        size_t len = strcspn(p, " \n");
        if (len == 0) {
            break;
        }
        ck_assert_uint_lt(len, 24);
        memcpy(f[n], p, len);
        f[n][len] = '\0';
        n++;
        p += len;
    }
    return n;
}

/* Formats the line from `a` to `b` (clock "t") and splits it into `f`;
 * every line has the 11 fields of the header. */
static void
_line(const struct stats_watch_sample *a, const struct stats_watch_sample *b,
      char f[12][24])
{
    char line[256];
    ck_assert_uint_gt(stats_watch_format(a, b, "t", line, sizeof(line)), 0);
    ck_assert_int_eq(_fields(line, f), 11);
}

START_TEST(test_parse_reads_the_figures)
{
    struct stats_watch_sample s = _parse(LONE, 7);
    ck_assert_uint_eq(s.at_us, 7);
    ck_assert_uint_eq(s.cmd_get, 1000);
    ck_assert_uint_eq(s.get_hits, 900);
    ck_assert_uint_eq(s.cmd_set, 5000);
    ck_assert_uint_eq(s.conns, 64);
    ck_assert_uint_eq(s.items, 12345);
    ck_assert(s.has_log);
    ck_assert_uint_eq(s.syncs, 100);
    ck_assert_uint_eq(s.sync_us, 15000);
    ck_assert_uint_eq(s.records, 2000);
    ck_assert_uint_eq(s.checkpoints, 3);
    ck_assert(!s.has_master);
}
END_TEST

START_TEST(test_parse_refuses_other_replies)
{
    struct stats_watch_sample s;
    const char *no_set = "STAT cmd_get 1\r\nSTAT curr_connections 1\r\nEND\r\n";
    ck_assert(!stats_watch_parse(no_set, strlen(no_set), 0, &s));
    ck_assert(!stats_watch_parse("ERROR\r\n", 7, 0, &s));
    ck_assert(!stats_watch_parse("", 0, 0, &s));
    /* memcached's own reply is enough: no log, no master. */
    const char *mc = "STAT cmd_get 1\r\nSTAT cmd_set 2\r\n"
                     "STAT curr_connections 3\r\nEND\r\n";
    s = _parse(mc, 0);
    ck_assert(!s.has_log);
    ck_assert(!s.has_master);
}
END_TEST

START_TEST(test_line_gives_rates_over_the_interval)
{
    struct stats_watch_sample a = _parse(LONE, 1000000);
    /* Two seconds later: 2,000 sets, 400 gets of which 300 hit, 40
     * fdatasyncs of 6,000 us and 1,000 records in all, one checkpoint. */
    const char *later =
        "STAT cmd_get 1400\r\nSTAT get_hits 1200\r\nSTAT cmd_set 7000\r\n"
        "STAT curr_connections 60\r\nSTAT curr_items 13000\r\n"
        "STAT kura_ulog_syncs 140\r\nSTAT kura_ulog_sync_us 21000\r\n"
        "STAT kura_ulog_records 3000\r\nSTAT kura_ulog_checkpoints 4\r\n"
        "END\r\n";
    struct stats_watch_sample b = _parse(later, 3000000);
    char line[256], f[12][24];
    ck_assert_uint_gt(stats_watch_format(&a, &b, "12:00:03", line,
                                         sizeof(line)), 0);
    ck_assert_int_eq(_fields(line, f), 11);
    ck_assert_str_eq(f[0], "12:00:03");
    ck_assert_str_eq(f[1], "1000");  /* sets/s */
    ck_assert_str_eq(f[2], "200");   /* gets/s */
    ck_assert_str_eq(f[3], "75.0");  /* hit% */
    ck_assert_str_eq(f[4], "60");    /* conns */
    ck_assert_str_eq(f[5], "20");    /* syncs/s */
    ck_assert_str_eq(f[6], "150");   /* mean us */
    ck_assert_str_eq(f[7], "25.0");  /* records per sync */
    ck_assert_str_eq(f[8], "1");     /* checkpoints */
    ck_assert_str_eq(f[9], "13000"); /* items */
    ck_assert_str_eq(f[10], "-");    /* no master */

    char header[256];
    ck_assert_uint_gt(stats_watch_header(header, sizeof(header)), 0);
    ck_assert_int_eq(_fields(header, f), 11);
}
END_TEST

START_TEST(test_line_without_work_or_log)
{
    struct stats_watch_sample a = _parse(LONE, 0);
    struct stats_watch_sample b = _parse(LONE, 1000000);
    char f[12][24];
    _line(&a, &b, f);
    ck_assert_str_eq(f[3], "-"); /* no gets: no hit rate */
    ck_assert_str_eq(f[5], "0");
    ck_assert_str_eq(f[6], "-"); /* no fdatasync: no mean */
    ck_assert_str_eq(f[7], "-");

    const char *mc = "STAT cmd_get 1\r\nSTAT cmd_set 2\r\n"
                     "STAT curr_connections 3\r\nEND\r\n";
    a = _parse(mc, 0);
    b = _parse(mc, 1000000);
    _line(&a, &b, f);
    for (int i = 5; i <= 8; i++) {
        ck_assert_str_eq(f[i], "-");
    }
}
END_TEST

/* A restarted server's counters start again from zero: the line counts
 * what the new process did, never a huge unsigned difference. */
START_TEST(test_restart_counts_from_zero)
{
    struct stats_watch_sample a = _parse(LONE, 0);
    const char *after =
        "STAT cmd_get 10\r\nSTAT get_hits 5\r\nSTAT cmd_set 30\r\n"
        "STAT curr_connections 1\r\nSTAT kura_ulog_syncs 3\r\n"
        "STAT kura_ulog_sync_us 300\r\nSTAT kura_ulog_records 30\r\n"
        "STAT kura_ulog_checkpoints 0\r\nEND\r\n";
    struct stats_watch_sample b = _parse(after, 1000000);
    char f[12][24];
    _line(&a, &b, f);
    ck_assert_str_eq(f[1], "30");
    ck_assert_str_eq(f[2], "10");
    ck_assert_str_eq(f[3], "50.0");
    ck_assert_str_eq(f[6], "100");
    ck_assert_str_eq(f[7], "10.0");
    ck_assert_str_eq(f[8], "0");
}
END_TEST

START_TEST(test_lag_and_a_master_down)
{
    const char *up =
        "STAT cmd_get 0\r\nSTAT cmd_set 0\r\nSTAT curr_connections 1\r\n"
        "STAT kura_repl_master_connected 1\r\n"
        "STAT kura_repl_master_lag_records 42\r\nEND\r\n";
    const char *down =
        "STAT cmd_get 0\r\nSTAT cmd_set 0\r\nSTAT curr_connections 1\r\n"
        "STAT kura_repl_master_connected 0\r\n"
        "STAT kura_repl_master_lag_records 42\r\nEND\r\n";
    struct stats_watch_sample a = _parse(up, 0);
    ck_assert(a.has_master);
    char f[12][24];
    _line(&a, &a, f);
    ck_assert_str_eq(f[1], "0"); /* no time passed: no rate, no crash */
    ck_assert_str_eq(f[10], "42");
    struct stats_watch_sample b = _parse(down, 1000000);
    _line(&a, &b, f);
    ck_assert_str_eq(f[10], "down");
}
END_TEST

START_TEST(test_small_buffers_are_refused)
{
    struct stats_watch_sample a = _parse(LONE, 0);
    char line[16];
    ck_assert_uint_eq(stats_watch_format(&a, &a, "t", line, sizeof(line)), 0);
    ck_assert_uint_eq(stats_watch_header(line, sizeof(line)), 0);
}
END_TEST

static Suite *
stats_watch_suite(void)
{
    Suite *s = suite_create("stats_watch");
    TCase *tc = tcase_create("stats_watch");
    tcase_add_test(tc, test_parse_reads_the_figures);
    tcase_add_test(tc, test_parse_refuses_other_replies);
    tcase_add_test(tc, test_line_gives_rates_over_the_interval);
    tcase_add_test(tc, test_line_without_work_or_log);
    tcase_add_test(tc, test_restart_counts_from_zero);
    tcase_add_test(tc, test_lag_and_a_master_down);
    tcase_add_test(tc, test_small_buffers_are_refused);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(stats_watch_suite)
