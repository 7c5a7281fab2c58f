/*
 * Integration tests: the kura command's load tools against a real kurad.
 * bench --ack-log and verify (all ok; ok again after kill -9 mid-load;
 * deleted and overwritten keys reported; corrupt logs refused), load and
 * its generator (exactly the generated records, values spot-checked;
 * malformed lines reported), and stallwatch's JSON summary.
 *
 * The tool is $KURA_TOOL (set by `make check`). Every tool run has a
 * deadline and every wait polls a condition; durations are a second or
 * two, so the file runs in a few seconds.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../unit/unit_main.h"
#include "harness.h"

#define TOOL_TIMEOUT_MS 20000

static struct kura_proc k;

/* Runs kura with `args` to completion; its exit status must be `want`. */
static void
_run(struct harness_tool *t, const char *const *args, int want)
{
    ck_assert_int_eq(harness_tool_run(t, args, want, TOOL_TIMEOUT_MS), want);
}

static void
_start(void)
{
    kura_start(&k, NULL);
}

static void
_cleanup(void)
{
    kura_cleanup(&k);
}

/* Path of `name` in the daemon's temporary directory (static buffer per
 * slot so two may be in use at once). */
static const char *
_path(int slot, const char *name)
{
    static char paths[3][600];
    snprintf(paths[slot], sizeof(paths[slot]), "%s/%s", k.dir, name);
    return paths[slot];
}

/* Parses "<host>:<port>: N keys, N ok, N stale, N missing" from `out`. */
static void
_summary(const char *out, long *keys, long *ok, long *stale, long *missing)
{
    char want[64];
    snprintf(want, sizeof(want), "127.0.0.1:%d: ", k.port);
    const char *p = strstr(out, want);
    ck_assert_msg(p != NULL, "no summary line in: %s", out);
    ck_assert_int_eq(sscanf(p + strlen(want),
                            "%ld keys, %ld ok, %ld stale, %ld missing", keys,
                            ok, stale, missing),
                     4);
}

/* Runs a one-second bench --ack-log against the daemon; returns acks. */
static long
_bench_with_acks(const char *log, const char *duration)
{
    char port[16];
    struct harness_tool t;
    snprintf(port, sizeof(port), "%d", k.port);
    _run(&t,
         (const char *const[]){"bench", "--port", port, "--conns", "8",
                               "--pipeline", "4", "--duration", duration,
                               "--reads", "10", "--own-keys", "50",
                               "--ack-log", log, NULL},
         0);
    const char *p = strstr(t.out, "acknowledged writes logged: ");
    ck_assert_msg(p != NULL, "%s", t.out);
    long acked = strtol(p + strlen("acknowledged writes logged: "), NULL, 10);
    ck_assert_int_gt(acked, 0);
    return acked;
}

static void
_verify(struct harness_tool *t, const char *log, int want)
{
    char port[16];
    snprintf(port, sizeof(port), "%d", k.port);
    _run(t, (const char *const[]){"verify", "--ack-log", log, "--port", port,
                                  NULL},
         want);
}

START_TEST(test_bench_ack_log_then_verify_ok)
{
    const char *log = _path(0, "ack.log");
    _bench_with_acks(log, "1");
    struct stat st;
    ck_assert_int_eq(stat(log, &st), 0);
    ck_assert_int_gt(st.st_size, 0);

    struct harness_tool t;
    _verify(&t, log, 0);
    long keys, ok, stale, missing;
    _summary(t.out, &keys, &ok, &stale, &missing);
    /* 8 connections x 50 own keys, each written many times over. */
    ck_assert_int_eq(keys, 400);
    ck_assert_int_eq(ok, keys);
    ck_assert_int_eq(stale, 0);
    ck_assert_int_eq(missing, 0);
}
END_TEST

static bool
_log_has_lines(void *arg)
{
    struct stat st;
    return stat(arg, &st) == 0 && st.st_size > 0;
}

START_TEST(test_kill9_mid_bench_loses_no_acknowledged_write)
{
    const char *log = _path(0, "ack.log");
    char port[16];
    struct harness_tool bench;
    snprintf(port, sizeof(port), "%d", k.port);
    ck_assert_int_eq(harness_tool_spawn(
                         &bench, (const char *const[]){
                                     "bench", "--port", port, "--conns", "8",
                                     "--pipeline", "4", "--duration", "2",
                                     "--own-keys", "100", "--ack-log", log,
                                     NULL}),
                     0);
    /* The log is flushed at least once a second: kill once it has been. */
    ck_assert(harness_wait_for(_log_has_lines, (void *)log, 5000));
    kura_kill9(&k);
    /* The bench loses its server, so it normally ends with errors. */
    int rc = harness_tool_finish(&bench, TOOL_TIMEOUT_MS);
    if (rc != 0 && rc != 1) {
        fprintf(stderr, "kura bench exited %d\n--- stdout\n%s--- stderr\n%s",
                rc, bench.out, bench.err);
    }
    ck_assert(rc == 0 || rc == 1);
    ck_assert_int_eq(kura_launch(&k), 0);

    struct harness_tool t;
    _verify(&t, log, 0);
    long keys, ok, stale, missing;
    _summary(t.out, &keys, &ok, &stale, &missing);
    ck_assert_int_gt(keys, 0);
    ck_assert_int_eq(ok, keys);
}
END_TEST

/* The first `n` distinct keys of an ack log, into `keys`. */
static int
_logged_keys(const char *log, char keys[][64], int n)
{
    FILE *f = fopen(log, "r");
    char line[256];
    int got = 0;
    ck_assert_ptr_nonnull(f);
    while (got < n && fgets(line, sizeof(line), f) != NULL) {
        line[strcspn(line, " ")] = '\0';
        bool seen = false;
        for (int i = 0; i < got; i++) {
            seen = seen || strcmp(keys[i], line) == 0;
        }
        if (!seen) {
            snprintf(keys[got++], 64, "%s", line);
        }
    }
    fclose(f);
    return got;
}

START_TEST(test_verify_reports_missing_and_stale)
{
    const char *log = _path(0, "ack.log");
    char keys[4][64];
    char req[256];
    char want[256];
    _bench_with_acks(log, "1");
    ck_assert_int_eq(_logged_keys(log, keys, 4), 4);

    int fd = kc_connect(k.port);
    for (int i = 0; i < 3; i++) {
        snprintf(req, sizeof(req), "delete %s\r\n", keys[i]);
        ck_assert(kc_check(fd, req, "DELETED\r\n"));
    }
    /* Sequence 0 is older than anything acknowledged. */
    snprintf(req, sizeof(req), "set %s 0 0 10\r\n0000000000\r\n", keys[3]);
    ck_assert(kc_check(fd, req, "STORED\r\n"));
    close(fd);

    struct harness_tool t;
    _verify(&t, log, 1);
    long nkeys, ok, stale, missing;
    _summary(t.out, &nkeys, &ok, &stale, &missing);
    ck_assert_int_eq(missing, 3);
    ck_assert_int_eq(stale, 1);
    ck_assert_int_eq(ok, nkeys - 4);
    for (int i = 0; i < 3; i++) {
        snprintf(want, sizeof(want), "missing %s (", keys[i]);
        ck_assert_msg(strstr(t.out, want) != NULL, "%s not in %s", want,
                      t.out);
    }
    snprintf(want, sizeof(want), "stale %s: holds 0,", keys[3]);
    ck_assert_msg(strstr(t.out, want) != NULL, "%s", t.out);
}
END_TEST

static void
_write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fputs(text, f) >= 0, 1);
    ck_assert_int_eq(fclose(f), 0);
}

START_TEST(test_verify_refuses_corrupt_log)
{
    const char *log = _path(0, "bad.log");
    struct harness_tool t;
    char port[16];
    snprintf(port, sizeof(port), "%d", k.port);

    int fd = kc_connect(k.port);
    ck_assert(kc_check(fd, "set u:c0:0 0 0 10\r\n0000000007\r\n"
                           "set u:c0:1 0 0 10\r\n0000000008\r\n",
                       "STORED\r\nSTORED\r\n"));
    close(fd);

    /* A line that is not "<prefix>c<conn>:<n> <seq>": exit 2, line named. */
    _write_file(log, "u:c0:0 7\nu:c0:x1 8\nu:c0:1 8\n");
    _verify(&t, log, 2);
    ck_assert_msg(strstr(t.err, "bad.log:2:") != NULL, "%s", t.err);
    _write_file(log, "u:c0:0 7\nu:c0:1 eight\n");
    _verify(&t, log, 2);
    _write_file(log, "u:c0:0 7\nv:c0:1 8\n");
    _verify(&t, log, 2);

    /* A log cut short mid-line keeps its whole lines. */
    _write_file(log, "u:c0:0 7\nu:c0:1 8\nu:c0:");
    _verify(&t, log, 0);
    ck_assert_msg(strstr(t.out, "2 keys, 2 ok, 0 stale, 0 missing") != NULL,
                  "%s", t.out);
    ck_assert_msg(strstr(t.err, "incomplete last line") != NULL, "%s", t.err);

    /* Usage errors. */
    _run(&t, (const char *const[]){"verify", "--port", port, NULL}, 2);
    _run(&t, (const char *const[]){"verify", "--ack-log", log, NULL}, 2);
}
END_TEST

/* The value on line `id` of a generated file ("u:<id>\t<value>\n"). */
static void
_generated_value(const char *path, long id, char *value, size_t cap)
{
    FILE *f = fopen(path, "r");
    char line[128];
    char want[32];
    snprintf(want, sizeof(want), "u:%ld\t", id);
    ck_assert_ptr_nonnull(f);
    value[0] = '\0';
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, want, strlen(want)) == 0) {
            snprintf(value, cap, "%.*s", (int)strcspn(line + strlen(want),
                                                      "\n"),
                     line + strlen(want));
            break;
        }
    }
    fclose(f);
    ck_assert_int_eq(strlen(value), 10);
}

START_TEST(test_load_generated_file)
{
    const char *gen = _path(0, "gen.tsv");
    const char *again = _path(1, "gen2.tsv");
    char port[16];
    struct harness_tool t;
    snprintf(port, sizeof(port), "%d", k.port);

    _run(&t,
         (const char *const[]){"load", "--generate", "20000", "--out", gen,
                               "--start-time", "1800000000", NULL},
         0);
    _run(&t,
         (const char *const[]){"load", "--generate", "20000", "--out", again,
                               "--start-time", "1800000000", NULL},
         0);
    /* Deterministic: the same arguments make the same bytes. */
    char cmd[1400];
    snprintf(cmd, sizeof(cmd), "cmp -s '%s' '%s'", gen, again);
    ck_assert_int_eq(system(cmd), 0);

    _run(&t,
         (const char *const[]){"load", gen, "--port", port, "--conns", "3",
                               "--window", "64", NULL},
         0);
    ck_assert_msg(strstr(t.out, "loaded 20000 of 20000 records") != NULL,
                  "%s", t.out);
    int fd = kc_connect(k.port);
    ck_assert_int_eq(kc_stat(fd, "curr_items"), 20000);
    static const long ids[] = {0, 1, 4242, 9999, 19999};
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
        char value[32];
        char req[64];
        char want[128];
        _generated_value(gen, ids[i], value, sizeof(value));
        /* Within the 30 days before the start time. */
        long t_s = strtol(value, NULL, 10);
        ck_assert_int_le(t_s, 1800000000L);
        ck_assert_int_gt(t_s, 1800000000L - 30L * 86400);
        snprintf(req, sizeof(req), "get u:%ld\r\n", ids[i]);
        snprintf(want, sizeof(want), "VALUE u:%ld 0 10\r\n%s\r\nEND\r\n",
                 ids[i], value);
        ck_assert(kc_check(fd, req, want));
    }
    ck_assert(kc_check(fd, "get u:20000\r\n", "END\r\n"));
    close(fd);
}
END_TEST

START_TEST(test_load_reports_bad_lines)
{
    const char *tsv = _path(0, "mixed.tsv");
    char port[16];
    struct harness_tool t;
    snprintf(port, sizeof(port), "%d", k.port);

    _write_file(tsv, "a\t1\r\nno tab here\nb\tvalue with spaces\n\n"
                     "bad key\tx\nc\t\nd\tlast");
    _run(&t, (const char *const[]){"load", tsv, "--port", port, NULL}, 1);
    ck_assert_msg(strstr(t.out, "loaded 4 of 4 records") != NULL &&
                  strstr(t.out, "2 errors") != NULL, "%s", t.out);
    ck_assert_msg(strstr(t.err, "mixed.tsv:2: no tab") != NULL &&
                  strstr(t.err, "mixed.tsv:5: bad key") != NULL, "%s",
                  t.err);
    int fd = kc_connect(k.port);
    ck_assert(kc_check(fd, "get a b c d\r\n",
                       "VALUE a 0 1\r\n1\r\n"
                       "VALUE b 0 17\r\nvalue with spaces\r\n"
                       "VALUE c 0 0\r\n\r\n"
                       "VALUE d 0 4\r\nlast\r\nEND\r\n"));
    close(fd);
    /* Usage errors. */
    _run(&t, (const char *const[]){"load", NULL}, 2);
    _run(&t, (const char *const[]){"load", "--generate", "5", NULL}, 2);
}
END_TEST

/*
 * A flat JSON object of numbers: checks the syntax and finds `name`.
 * Returns true if the whole text is such an object and holds `name`.
 */
static bool
_json_number(const char *json, const char *name, double *value)
{
    const char *p = json;
    bool found = false;
    while (*p == ' ' || *p == '\n') {
        p++;
    }
    if (*p++ != '{') {
        return false;
    }
    for (;;) {
        while (*p == ' ') {
            p++;
        }
        if (*p++ != '"') {
            return false;
        }
        const char *key = p;
        while (*p != '"' && *p != '\0') {
            p++;
        }
        if (*p != '"') {
            return false;
        }
        size_t klen = (size_t)(p - key);
        p++;
        while (*p == ' ') {
            p++;
        }
        if (*p++ != ':') {
            return false;
        }
        while (*p == ' ') {
            p++;
        }
        if (*p == '"') { /* a string value ("proto"): skipped */
            p = strchr(p + 1, '"');
            if (p == NULL) {
                return false;
            }
            p++;
        } else {
            char *end;
            errno = 0;
            double v = strtod(p, &end);
            if (end == p || errno != 0) {
                return false;
            }
            if (klen == strlen(name) && memcmp(key, name, klen) == 0) {
                *value = v;
                found = true;
            }
            p = end;
        }
        while (*p == ' ') {
            p++;
        }
        if (*p == '}') {
            p++;
            break;
        }
        if (*p++ != ',') {
            return false;
        }
    }
    while (*p == ' ' || *p == '\n') {
        p++;
    }
    return *p == '\0' && found;
}

START_TEST(test_stallwatch_json)
{
    char port[16];
    struct harness_tool t;
    snprintf(port, sizeof(port), "%d", k.port);
    _run(&t,
         (const char *const[]){"stallwatch", "--port", port, "--count",
                               "2000", "--value-size", "1024", "--json",
                               NULL},
         0);
    static const char *const fields[] = {
        "inserts", "seconds", "ops_per_s", "p50_us", "p99_us", "p999_us",
        "max_us", "probe_max_us", "over_threshold"};
    double v[9];
    for (int i = 0; i < 9; i++) {
        ck_assert_msg(_json_number(t.out, fields[i], &v[i]),
                      "%s missing or bad JSON: %s", fields[i], t.out);
    }
    ck_assert(v[0] == 2000);
    ck_assert(v[8] == 0);
    ck_assert(v[3] <= v[4] && v[4] <= v[5] && v[6] > 0);
    /* Every insert used a fresh key. */
    int fd = kc_connect(k.port);
    ck_assert_int_eq(kc_stat(fd, "curr_items"), 2000);
    close(fd);
}
END_TEST

START_TEST(test_bench_ops_mode_has_no_false_errors)
{
    char port[16];
    struct harness_tool t;
    snprintf(port, sizeof(port), "%d", k.port);
    /* Other connections' replies still in flight when the count is hit
     * are waited for, not counted as errors. */
    _run(&t,
         (const char *const[]){"bench", "--port", port, "--conns", "8",
                               "--pipeline", "8", "--ops", "5000", "--json",
                               NULL},
         0);
    double errors = -1;
    double ops = 0;
    ck_assert_msg(_json_number(t.out, "errors", &errors) &&
                  _json_number(t.out, "ops", &ops), "%s", t.out);
    ck_assert(errors == 0);
    ck_assert(ops >= 5000);
}
END_TEST

/* kura ping, the health check: 0 when the server answers and accepts
 * writes, 2 when nothing answers; with -auth only with the password. */
START_TEST(test_ping)
{
    char port[16];
    struct harness_tool t;
    snprintf(port, sizeof(port), "%d", k.port);
    _run(&t, (const char *const[]){"ping", "--port", port, NULL}, 0);
    ck_assert_ptr_nonnull(strstr(t.out, "accepting writes"));
    ck_assert_int_eq(kura_stop(&k, 20000), 0);
    _run(&t, (const char *const[]){"ping", "--port", port, "--timeout", "500",
                                   NULL},
         2);
    /* The same server with -auth: the password file opens the door. */
    char users[600];
    snprintf(users, sizeof(users), "%s/users", k.dir);
    FILE *f = fopen(users, "w");
    ck_assert_ptr_nonnull(f);
    fputs("op:secret\n", f);
    fclose(f);
    ck_assert_int_eq(chmod(users, 0600), 0);
    k.args[k.nargs++] = "-auth";
    k.args[k.nargs++] = users;
    ck_assert_int_eq(kura_launch(&k), 0);
    _run(&t, (const char *const[]){"ping", "--port", port, NULL}, 2);
    ck_assert_ptr_nonnull(strstr(t.err, "authentication"));
    _run(&t, (const char *const[]){"ping", "--port", port, "--auth", users,
                                   NULL},
         0);
}
END_TEST

/* kura check: a stopped server's file is sound; a path that names no
 * file is an error, not an empty database (a mistyped path must not read
 * as a good check). */
START_TEST(test_check_sound_file_and_missing_file)
{
    struct harness_tool t;
    ck_assert_int_eq(kura_stop(&k, 20000), 0);
    _run(&t, (const char *const[]){"check", k.db, NULL}, 0);
    ck_assert_ptr_nonnull(strstr(t.out, "sound"));
    _run(&t, (const char *const[]){"check", _path(0, "nothere.tch"), NULL},
         1);
    ck_assert_ptr_null(strstr(t.out, "sound"));
    ck_assert_ptr_nonnull(strstr(t.err, "No such file"));
}
END_TEST

/*
 * kura check on a database a running kurad holds: it read the file
 * between the server's writes and reported damage that was not there
 * (8 of 8 tries under load). It must see the lock, refuse, name the
 * holder, and leave the server serving.
 */
START_TEST(test_check_refuses_a_database_in_use)
{
    struct harness_tool t;
    char pid[32];
    snprintf(pid, sizeof(pid), "process %ld is using it", (long)k.pid);
    _run(&t, (const char *const[]){"check", k.db, NULL}, 1);
    ck_assert_ptr_null(strstr(t.out, "damaged"));
    ck_assert_ptr_null(strstr(t.out, "sound"));
    ck_assert_msg(strstr(t.err, pid) != NULL, "stderr: %s", t.err);
    ck_assert_ptr_nonnull(strstr(t.err, "stop kurad first"));
    int fd = kc_connect(k.port);
    ck_assert(kc_check(fd, "set after-check 0 0 1\r\nx\r\n", "STORED\r\n"));
    close(fd);
    /* Stopped, the same file checks out. */
    ck_assert_int_eq(kura_stop(&k, 20000), 0);
    _run(&t, (const char *const[]){"check", k.db, NULL}, 0);
    ck_assert_ptr_nonnull(strstr(t.out, "sound"));
}
END_TEST

/* kura bench parses numbers strictly: "19x78" was read as port 19. */
START_TEST(test_bench_refuses_malformed_numbers)
{
    struct harness_tool t;
    _run(&t, (const char *const[]){"bench", "--port", "19x78", "--ops", "1",
                                   NULL},
         2);
    ck_assert_ptr_nonnull(strstr(t.err, "--port: bad value '19x78'"));
    _run(&t, (const char *const[]){"bench", "--duration", "0.5s", NULL}, 2);
    _run(&t, (const char *const[]){"bench", "--reads", "101", NULL}, 2);
    /* strtod() alone took exponents, hexadecimal and leading spaces. */
    _run(&t, (const char *const[]){"bench", "--duration", "1e1", NULL}, 2);
    _run(&t, (const char *const[]){"bench", "--zipf", "0x0.8p0", NULL}, 2);
    _run(&t, (const char *const[]){"bench", "--warmup", " 1", NULL}, 2);
}
END_TEST

/* kura ping parses --timeout strictly: "500ms" was read as 500 and the
 * ping went ahead; now it is a usage error (3), as "0" always was. */
START_TEST(test_ping_refuses_malformed_timeout)
{
    char port[16];
    struct harness_tool t;
    snprintf(port, sizeof(port), "%d", k.port);
    _run(&t, (const char *const[]){"ping", "--port", port, "--timeout",
                                   "500ms", NULL},
         3);
    ck_assert_ptr_nonnull(strstr(t.err, "usage: kura ping"));
    _run(&t, (const char *const[]){"ping", "--port", port, "--timeout", "-5",
                                   NULL},
         3);
    _run(&t, (const char *const[]){"ping", "--port", port, "--timeout", "500",
                                   NULL},
         0);
}
END_TEST

static Suite *
tools_suite(void)
{
    Suite *s = suite_create("it_tools");
    TCase *tc = tcase_create("tools");
    tcase_add_checked_fixture(tc, _start, _cleanup);
    tcase_add_test(tc, test_bench_ack_log_then_verify_ok);
    tcase_add_test(tc, test_kill9_mid_bench_loses_no_acknowledged_write);
    tcase_add_test(tc, test_verify_reports_missing_and_stale);
    tcase_add_test(tc, test_verify_refuses_corrupt_log);
    tcase_add_test(tc, test_load_generated_file);
    tcase_add_test(tc, test_load_reports_bad_lines);
    tcase_add_test(tc, test_stallwatch_json);
    tcase_add_test(tc, test_bench_ops_mode_has_no_false_errors);
    tcase_add_test(tc, test_ping);
    tcase_add_test(tc, test_check_sound_file_and_missing_file);
    tcase_add_test(tc, test_check_refuses_a_database_in_use);
    tcase_add_test(tc, test_bench_refuses_malformed_numbers);
    tcase_add_test(tc, test_ping_refuses_malformed_timeout);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(tools_suite)
