/*
 * Unit tests for metrics: the table against every figure kurad's stats
 * gives (stats_figures.h), the naming rules every entry keeps, per-peer
 * figures as sid labels, microseconds as exact seconds, memcached's
 * figures under the memcached exporter's names (set less cas), unknown
 * kura_* figures as untyped, what is left out, and the parse of STAT
 * lines.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "metrics.h"
#include "stats_figures.h"
#include "unit_main.h"

#define MAX_PAIRS 256

static struct buf out;
static char text[8192];

/* Formats "name value" pairs given as one "n1 v1\nn2 v2\n" string, through
 * metrics_parse_stats (as STAT lines), into `text`. Returns its length. */
static size_t
_format(const char *figures)
{
    char stats[4096];
    struct metrics_pair pairs[MAX_PAIRS];
    size_t len = 0;
    const char *p = figures;

    while (*p != '\0') {
        size_t n = strcspn(p, "\n");
        len += (size_t)snprintf(stats + len, sizeof(stats) - len,
                                "STAT %.*s\r\n", (int)n, p);
        p += n + (p[n] == '\n');
    }
    len += (size_t)snprintf(stats + len, sizeof(stats) - len, "END\r\n");
    size_t np = metrics_parse_stats(stats, len, pairs, MAX_PAIRS);
    ck_assert_uint_le(np, MAX_PAIRS);
    buf_init(&out);
    ck_assert(metrics_format(pairs, np, &out));
    ck_assert_uint_lt(buf_len(&out), sizeof(text));
    if (buf_len(&out) > 0) { /* an empty buf has no storage */
        memcpy(text, buf_head(&out), buf_len(&out));
    }
    text[buf_len(&out)] = '\0';
    size_t r = buf_len(&out);
    buf_deinit(&out);
    return r;
}

/* How many times `needle` occurs in `text`. */
static int
_count(const char *needle)
{
    int n = 0;
    for (const char *p = strstr(text, needle); p != NULL;
         p = strstr(p + 1, needle)) {
        n++;
    }
    return n;
}

static void
_has(const char *line)
{
    if (strstr(text, line) == NULL) {
        ck_abort_msg("missing \"%s\" in:\n%s", line, text);
    }
}

static bool
_ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s);
    size_t b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* ---------------------------------------------------------------- table */

/* Every figure stats gives is in the table: typed, or deliberately left
 * out; none falls through to "untyped". */
START_TEST(every_stats_figure_is_known)
{
    for (size_t i = 0; i < STATS_FIGURES_N; i++) {
        char name[128];
        const char *f = stats_figures[i];
        const char *sid = strstr(f, "<sid>");
        if (sid != NULL) { /* a peer's figure, for sid 2 */
            snprintf(name, sizeof(name), "%.*s2%s", (int)(sid - f), f,
                     sid + 5);
        } else {
            snprintf(name, sizeof(name), "%s", f);
        }
        if (metrics_type_of(name) == METRICS_UNKNOWN) {
            ck_abort_msg("stats figure %s is not in the metrics table", name);
        }
    }
}
END_TEST

/* And the table names no figure stats does not give (a renamed figure
 * would leave a dead entry behind). */
START_TEST(every_entry_is_a_stats_figure)
{
    const char *stat, *metric, *help;
    enum metrics_type type;
    for (size_t i = 0; metrics_entry(i, &stat, &metric, &type, &help); i++) {
        bool found = strcmp(stat, METRICS_UP) == 0;
        for (size_t j = 0; !found && j < STATS_FIGURES_N; j++) {
            found = strcmp(stats_figures[j], stat) == 0;
        }
        if (!found) {
            ck_abort_msg("table entry %s is no stats figure", stat);
        }
    }
}
END_TEST

/* Prometheus' naming rules: counters end in _total, nothing else does;
 * a *_us figure becomes *_seconds; every exported entry has help; the
 * entries of one metric are adjacent and of one type. */
START_TEST(entries_follow_the_naming_rules)
{
    const char *stat, *metric, *help;
    enum metrics_type type;
    const char *prev_metric = NULL;
    enum metrics_type prev_type = METRICS_UNKNOWN;
    size_t n = 0;

    for (size_t i = 0; metrics_entry(i, &stat, &metric, &type, &help); i++) {
        n++;
        if (type == METRICS_SKIPPED) {
            ck_assert_ptr_null(metric);
            continue;
        }
        ck_assert_ptr_nonnull(metric);
        ck_assert_msg(help != NULL && help[0] != '\0', "%s: no help", stat);
        ck_assert_msg(strchr(help, '\n') == NULL, "%s: help with newline",
                      stat);
        ck_assert_msg(strncmp(metric, "kura_", 5) == 0 ||
                          strncmp(metric, "memcached_", 10) == 0,
                      "%s: prefix", metric);
        for (const char *c = metric; *c != '\0'; c++) {
            ck_assert_msg((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9')
                              || *c == '_',
                          "%s: character %c", metric, *c);
        }
        if (type == METRICS_COUNTER) {
            ck_assert_msg(_ends_with(metric, "_total"), "%s: counter "
                          "without _total", metric);
        } else {
            ck_assert_msg(!_ends_with(metric, "_total"), "%s: %d with "
                          "_total", metric, type);
        }
        if (_ends_with(stat, "_us")) {
            ck_assert_msg(strstr(metric, "_seconds") != NULL,
                          "%s: microseconds not given as seconds", metric);
        }
        if (prev_metric != NULL && strcmp(prev_metric, metric) == 0) {
            ck_assert_int_eq(type, prev_type);
        } else {
            /* A metric's entries are adjacent: it never appears again. */
            const char *s2, *m2, *h2;
            enum metrics_type t2;
            for (size_t j = 0; j + 1 < i; j++) {
                metrics_entry(j, &s2, &m2, &t2, &h2);
                ck_assert_msg(m2 == NULL || strcmp(m2, metric) != 0,
                              "%s split in the table", metric);
            }
        }
        prev_metric = metric;
        prev_type = type;
    }
    ck_assert_uint_ge(n, STATS_FIGURES_N);
}
END_TEST

START_TEST(types_of_known_names)
{
    ck_assert_int_eq(metrics_type_of("kura_db_records"), METRICS_GAUGE);
    ck_assert_int_eq(metrics_type_of("kura_ulog_syncs"), METRICS_COUNTER);
    ck_assert_int_eq(metrics_type_of("kura_version"), METRICS_INFO);
    ck_assert_int_eq(metrics_type_of("kura_db_path"), METRICS_SKIPPED);
    ck_assert_int_eq(metrics_type_of("pid"), METRICS_SKIPPED);
    ck_assert_int_eq(metrics_type_of("curr_items"), METRICS_GAUGE);
    ck_assert_int_eq(metrics_type_of("get_hits"), METRICS_COUNTER);
    ck_assert_int_eq(metrics_type_of("kura_repl_peer_2_sent"),
                     METRICS_COUNTER);
    ck_assert_int_eq(metrics_type_of("kura_repl_peer_4294967295_connected"),
                     METRICS_GAUGE);
    ck_assert_int_eq(metrics_type_of("kura_repl_peer_x_sent"),
                     METRICS_UNKNOWN);
    ck_assert_int_eq(metrics_type_of("kura_repl_peer_4294967296_sent"),
                     METRICS_UNKNOWN);
    ck_assert_int_eq(metrics_type_of("kura_repl_peer_2_nosuch"),
                     METRICS_UNKNOWN);
    ck_assert_int_eq(metrics_type_of("kura_new_figure"), METRICS_UNKNOWN);
    ck_assert_int_eq(metrics_type_of("no_such_figure"), METRICS_UNKNOWN);
}
END_TEST

/* ---------------------------------------------------------------- format */

START_TEST(gauge_and_counter)
{
    _format("kura_db_records 42\nkura_ulog_syncs 7");
    ck_assert_str_eq(text,
                     "# HELP kura_db_records Records in the database, "
                     "tombstones included.\n"
                     "# TYPE kura_db_records gauge\n"
                     "kura_db_records 42\n"
                     "# HELP kura_ulog_syncs_total fdatasync calls on the "
                     "update log.\n"
                     "# TYPE kura_ulog_syncs_total counter\n"
                     "kura_ulog_syncs_total 7\n");
}
END_TEST

/* The table's order, whatever the input's; a repeated figure once. */
START_TEST(table_order_and_duplicates)
{
    _format("kura_ulog_syncs 7\nkura_db_records 42\nkura_db_records 43");
    const char *a = strstr(text, "kura_db_records 42\n");
    const char *b = strstr(text, "kura_ulog_syncs_total 7\n");
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert(a < b);
    ck_assert_int_eq(_count("kura_db_records 4"), 1);
    ck_assert_int_eq(_count("# TYPE kura_db_records "), 1);
}
END_TEST

START_TEST(peers_become_sid_labels)
{
    _format("kura_repl_peer_2_lag_seconds 0.250\n"
            "kura_repl_peer_17_lag_seconds 3.000\n"
            "kura_repl_peer_2_sent 10\n"
            "kura_repl_peer_17_sent 11\n"
            "kura_repl_peer_2_connected 1\n"
            "kura_repl_peer_17_connected 0\n"
            "kura_repl_peers 2");
    _has("kura_repl_peers 2\n");
    _has("# TYPE kura_repl_peer_lag_seconds gauge\n"
         "kura_repl_peer_lag_seconds{sid=\"2\"} 0.250\n"
         "kura_repl_peer_lag_seconds{sid=\"17\"} 3.000\n");
    _has("# TYPE kura_repl_peer_sent_total counter\n"
         "kura_repl_peer_sent_total{sid=\"2\"} 10\n"
         "kura_repl_peer_sent_total{sid=\"17\"} 11\n");
    _has("kura_repl_peer_connected{sid=\"2\"} 1\n"
         "kura_repl_peer_connected{sid=\"17\"} 0\n");
    ck_assert_int_eq(_count("# HELP kura_repl_peer_lag_seconds "), 1);
    ck_assert_int_eq(_count("kura_repl_peer_2"), 0);
    ck_assert_int_eq(_count("kura_repl_peer_17"), 0);
}
END_TEST

/* A peer name whose sid is no number, or too large, is no peer figure: it
 * is an unknown kura_* figure. */
START_TEST(malformed_peer_names)
{
    _format("kura_repl_peer__sent 1\nkura_repl_peer_9999999999_sent 2");
    _has("# TYPE kura_repl_peer__sent untyped\nkura_repl_peer__sent 1\n");
    _has("kura_repl_peer_9999999999_sent 2\n");
    ck_assert_int_eq(_count("sid=\""), 0);
}
END_TEST

/* Microseconds become seconds by integer arithmetic: no rounding, at
 * either end of the range. */
START_TEST(microseconds_exactly)
{
    _format("kura_ulog_sync_us 1");
    _has("kura_ulog_sync_seconds_total 0.000001\n");
    _format("kura_ulog_sync_us 0");
    _has("kura_ulog_sync_seconds_total 0.000000\n");
    _format("kura_ulog_sync_us 1234567");
    _has("kura_ulog_sync_seconds_total 1.234567\n");
    _format("kura_ulog_sync_us 999999");
    _has("kura_ulog_sync_seconds_total 0.999999\n");
    _format("kura_ulog_sync_us 1000000");
    _has("kura_ulog_sync_seconds_total 1.000000\n");
    /* 2^53 + 1 us, which a double could not hold. */
    _format("kura_flush_applied_us 9007199254740993");
    _has("kura_flush_applied_timestamp_seconds 9007199254.740993\n");
    _format("kura_repl_master_delay_max_us 18446744073709551615");
    _has("kura_repl_master_delay_max_seconds 18446744073709.551615\n");
    _format("time_in_listen_disabled_us 2500000");
    _has("memcached_connections_listener_disabled_seconds_total 2.500000\n");
}
END_TEST

/* A microsecond figure that is no unsigned integer is left out. */
START_TEST(microseconds_malformed)
{
    ck_assert_uint_eq(_format("kura_ulog_sync_us -1"), 0);
    ck_assert_uint_eq(_format("kura_ulog_sync_us 1.5"), 0);
    ck_assert_uint_eq(_format("kura_ulog_sync_us 18446744073709551616"), 0);
}
END_TEST

START_TEST(unknown_kura_figures_are_untyped)
{
    _format("kura_brand_new 5\nkura_db_records 1\nkura_other 2.5e3");
    _has("# TYPE kura_brand_new untyped\nkura_brand_new 5\n");
    _has("# TYPE kura_other untyped\nkura_other 2.5e3\n");
    /* After the table's own. */
    ck_assert(strstr(text, "kura_db_records 1\n") <
              strstr(text, "kura_brand_new 5\n"));
    ck_assert_int_eq(_count("# HELP kura_brand_new"), 0);
}
END_TEST

START_TEST(left_out)
{
    /* Not numbers, not kura's and unknown, not a valid metric name,
     * deliberately skipped. */
    ck_assert_uint_eq(_format("kura_db_path /var/lib/kura/kura.tch\n"
                              "kura_mystery abc\n"
                              "kura_db_records 12x\n"
                              "kura_db_records\n"
                              "someone_elses 1\n"
                              "kura_bad-name 1\n"
                              "pid 123\n"
                              "pointer_size 64"),
                      0);
}
END_TEST

START_TEST(version_labels)
{
    _format("kura_version 0.1.0\nversion 1.6.18-kura-0.1.0");
    _has("# TYPE kura_version_info gauge\n"
         "kura_version_info{version=\"0.1.0\"} 1\n");
    _has("# TYPE memcached_version gauge\n"
         "memcached_version{version=\"1.6.18-kura-0.1.0\"} 1\n");
    _format("kura_version a\"b\\c");
    _has("kura_version_info{version=\"a\\\"b\\\\c\"} 1\n");
}
END_TEST

/* memcached's figures as the memcached exporter names them; set is
 * cmd_set less every cas, which memcached counts in cmd_set too. */
START_TEST(memcached_figures)
{
    _format("curr_items 3\ntotal_items 9\nbytes 120\ncurr_connections 4\n"
            "total_connections 11\ncmd_set 10\ncas_hits 1\ncas_misses 2\n"
            "cas_badval 3\nget_hits 5\nget_misses 6\ncmd_flush 1\n"
            "uptime 60\nrusage_user 1.250000\nlimit_maxbytes 1000");
    _has("# TYPE memcached_current_items gauge\nmemcached_current_items 3\n");
    _has("# TYPE memcached_items_total counter\nmemcached_items_total 9\n");
    _has("memcached_current_bytes 120\n");
    _has("memcached_current_connections 4\n");
    _has("memcached_connections_total 11\n");
    _has("memcached_commands_total{command=\"set\",status=\"hit\"} 4\n");
    _has("memcached_commands_total{command=\"cas\",status=\"hit\"} 1\n");
    _has("memcached_commands_total{command=\"cas\",status=\"miss\"} 2\n");
    _has("memcached_commands_total{command=\"cas\",status=\"badval\"} 3\n");
    _has("memcached_commands_total{command=\"get\",status=\"hit\"} 5\n");
    _has("memcached_commands_total{command=\"get\",status=\"miss\"} 6\n");
    _has("memcached_commands_total{command=\"flush\",status=\"hit\"} 1\n");
    _has("memcached_uptime_seconds 60\n");
    _has("memcached_process_user_cpu_seconds_total 1.250000\n");
    _has("memcached_limit_bytes 1000\n");
    ck_assert_int_eq(_count("# TYPE memcached_commands_total counter\n"), 1);
    ck_assert_int_eq(_count("# HELP memcached_commands_total "), 1);
}
END_TEST

/* set alone: its header comes with it, and without cas figures nothing is
 * taken off; more cas than sets (inconsistent input) gives 0. */
START_TEST(set_without_cas)
{
    _format("cmd_set 7");
    _has("# HELP memcached_commands_total Requests");
    _has("# TYPE memcached_commands_total counter\n"
         "memcached_commands_total{command=\"set\",status=\"hit\"} 7\n");
    _format("cmd_set 1\ncas_hits 5");
    _has("memcached_commands_total{command=\"set\",status=\"hit\"} 0\n");
}
END_TEST

START_TEST(collector_up)
{
    struct metrics_pair p = {METRICS_UP, strlen(METRICS_UP), "0", 1};
    buf_init(&out);
    ck_assert(metrics_format(&p, 1, &out));
    ck_assert_uint_lt(buf_len(&out), sizeof(text));
    memcpy(text, buf_head(&out), buf_len(&out));
    text[buf_len(&out)] = '\0';
    buf_deinit(&out);
    _has("# TYPE kura_up gauge\nkura_up 0\n");
    buf_init(&out);
    ck_assert(metrics_format(NULL, 0, &out));
    ck_assert_uint_eq(buf_len(&out), 0);
    buf_deinit(&out);
}
END_TEST

/* ---------------------------------------------------------------- parse */

START_TEST(parse_stat_lines)
{
    static const char reply[] =
        "STAT a 1\r\n"
        "STAT b 2\n"             /* a bare LF */
        "STAT c two words\r\n"   /* a value with spaces: skipped */
        "STAT  5\r\n"            /* no name */
        "STAT d\r\n"             /* no value */
        "STAT e \r\n"            /* empty value */
        "ITEM x [1 b; 0 s]\r\n"  /* not a STAT line */
        "END\r\n"
        "STAT f 6";              /* no line end at all */
    struct metrics_pair p[8];
    size_t n = metrics_parse_stats(reply, sizeof(reply) - 1, p, 8);
    ck_assert_uint_eq(n, 3);
    ck_assert_uint_eq(p[0].name_len, 1);
    ck_assert(memcmp(p[0].name, "a", 1) == 0);
    ck_assert_uint_eq(p[0].value_len, 1);
    ck_assert(memcmp(p[0].value, "1", 1) == 0);
    ck_assert(memcmp(p[1].name, "b", 1) == 0 && p[1].value_len == 1 &&
              p[1].value[0] == '2');
    ck_assert(memcmp(p[2].name, "f", 1) == 0 && p[2].value_len == 1 &&
              p[2].value[0] == '6');
    /* Pointers into the reply, not copies. */
    ck_assert(p[0].name >= reply && p[0].name < reply + sizeof(reply));
}
END_TEST

/* More pairs than room: the count is the true one, only `max` stored. */
START_TEST(parse_counts_past_max)
{
    static const char reply[] = "STAT a 1\r\nSTAT b 2\r\nSTAT c 3\r\n";
    struct metrics_pair p[3] = {{0}};
    size_t n = metrics_parse_stats(reply, sizeof(reply) - 1, p, 2);
    ck_assert_uint_eq(n, 3);
    ck_assert(p[1].name[0] == 'b');
    ck_assert_ptr_null(p[2].name);
    ck_assert_uint_eq(metrics_parse_stats(reply, 0, p, 2), 0);
    ck_assert_uint_eq(metrics_parse_stats("", 0, NULL, 0), 0);
}
END_TEST

static Suite *
metrics_suite(void)
{
    Suite *s = suite_create("metrics");
    TCase *tc = tcase_create("table");
    tcase_add_test(tc, every_stats_figure_is_known);
    tcase_add_test(tc, every_entry_is_a_stats_figure);
    tcase_add_test(tc, entries_follow_the_naming_rules);
    tcase_add_test(tc, types_of_known_names);
    suite_add_tcase(s, tc);

    tc = tcase_create("format");
    tcase_add_test(tc, gauge_and_counter);
    tcase_add_test(tc, table_order_and_duplicates);
    tcase_add_test(tc, peers_become_sid_labels);
    tcase_add_test(tc, malformed_peer_names);
    tcase_add_test(tc, microseconds_exactly);
    tcase_add_test(tc, microseconds_malformed);
    tcase_add_test(tc, unknown_kura_figures_are_untyped);
    tcase_add_test(tc, left_out);
    tcase_add_test(tc, version_labels);
    tcase_add_test(tc, memcached_figures);
    tcase_add_test(tc, set_without_cas);
    tcase_add_test(tc, collector_up);
    suite_add_tcase(s, tc);

    tc = tcase_create("parse");
    tcase_add_test(tc, parse_stat_lines);
    tcase_add_test(tc, parse_counts_past_max);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(metrics_suite)
