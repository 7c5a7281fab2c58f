/*
 * Integration tests: kurad's figures for monitoring, on a live
 * master/master pair (so the replication figures, per peer included, are
 * there) with -tout (so idle_kicks is).
 *
 * - The general stats listing gives exactly the figures of
 *   tests/unit/stats_figures.h, which check_metrics holds the metrics
 *   table to: a figure added to stats without a table entry fails here.
 * - GET /-/metrics serves the text `kura stats --prometheus` prints and
 *   metrics_format() makes of the same listing: the same metrics, help,
 *   types and samples in the same order, and the same values for the
 *   figures no request changes; after known operations the memcached
 *   figures (items, commands by command and status) have the values the
 *   operations imply.
 * - `kura stats --watch` prints a header and a line per interval whose
 *   rates add up to the writes made meanwhile, with the log's fdatasyncs
 *   and the pair's replication lag; bad combinations of options exit 2.
 */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../unit/stats_figures.h"
#include "../unit/unit_main.h"
#include "buf.h"
#include "harness.h"
#include "metrics.h"

#define TEXT_MAX (1 << 20)
#define PAIRS_MAX 4096

static struct kura_proc a;
static struct kura_proc b;
static char a_port[16];
static char b_port[16];

static void
_follow(struct kura_proc *k, const char *sid, const char *port)
{
    k->args[k->nargs++] = "-sid";
    k->args[k->nargs++] = sid;
    k->args[k->nargs++] = "-mhost";
    k->args[k->nargs++] = "127.0.0.1";
    k->args[k->nargs++] = "-mport";
    k->args[k->nargs++] = port;
}

static bool
_peer_connected(void *arg)
{
    (void)arg;
    int fd = kc_connect(a.port);
    long long v = fd >= 0 ? kc_stat(fd, "kura_repl_peer_2_connected") : -1;
    long long m = fd >= 0 ? kc_stat(fd, "kura_repl_master_connected") : -1;
    if (fd >= 0) {
        close(fd);
    }
    return v == 1 && m == 1;
}

static void
_start_pair(void)
{
    static const char *const tout[] = {"-tout", "60", NULL};
    kura_init(&a, tout);
    kura_init(&b, NULL);
    snprintf(a_port, sizeof(a_port), "%d", a.port);
    snprintf(b_port, sizeof(b_port), "%d", b.port);
    _follow(&a, "1", b_port);
    _follow(&b, "2", a_port);
    ck_assert_int_eq(kura_launch(&a), 0);
    ck_assert_int_eq(kura_launch(&b), 0);
    ck_assert_msg(harness_wait_for(_peer_connected, NULL, 15000),
                  "the pair did not connect");
}

static void
_cleanup_pair(void)
{
    kura_cleanup(&a);
    kura_cleanup(&b);
}

/* Sends `req` on a fresh connection and reads until the server closes it
 * or `terminator` ends the reply; returns a malloc'd NUL-terminated reply. */
static char *
_fetch(int port, const char *req, const char *terminator)
{
    char *out = malloc(TEXT_MAX);
    size_t len = 0;
    int fd = kc_connect(port);
    ck_assert_ptr_nonnull(out);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(kc_sends(fd, req), 0);
    uint64_t deadline = harness_now_ms() + 10000;
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        int left = (int)(deadline - harness_now_ms());
        ck_assert_msg(left > 0 && poll(&p, 1, left) == 1, "reply timed out");
        ssize_t n = read(fd, out + len, TEXT_MAX - 1 - len);
        ck_assert_int_ge(n, 0);
        len += (size_t)n;
        out[len] = '\0';
        if (n == 0 || (terminator != NULL && len >= strlen(terminator) &&
                       strcmp(out + len - strlen(terminator), terminator) ==
                           0)) {
            break;
        }
        ck_assert_uint_lt(len, TEXT_MAX - 1);
    }
    close(fd);
    return out;
}

static char *
_stats(int port)
{
    return _fetch(port, "stats\r\n", "END\r\n");
}

/* GET /-/metrics; returns the body, checks the status and type. */
static char *
_http_metrics(int port)
{
    char *r = _fetch(port, "GET /-/metrics HTTP/1.1\r\nHost: localhost\r\n"
                           "Connection: close\r\n\r\n", NULL);
    ck_assert_msg(strncmp(r, "HTTP/1.1 200 ", 13) == 0, "got %.200s", r);
    char *body = strstr(r, "\r\n\r\n");
    ck_assert_ptr_nonnull(body);
    *body = '\0';
    ck_assert_msg(strstr(r, "text/plain; version=0.0.4") != NULL,
                  "content type: %s", r);
    char *copy = strdup(body + 4);
    free(r);
    return copy;
}

/* metrics_format() of a stats listing, with kura_up 1 as kurad adds. */
static char *
_format(const char *stats)
{
    struct metrics_pair *pairs = malloc((PAIRS_MAX + 1) * sizeof(*pairs));
    struct buf out;
    ck_assert_ptr_nonnull(pairs);
    size_t n = metrics_parse_stats(stats, strlen(stats), pairs, PAIRS_MAX);
    ck_assert_uint_le(n, PAIRS_MAX);
    pairs[n] = (struct metrics_pair){METRICS_UP, strlen(METRICS_UP), "1", 1};
    buf_init(&out);
    ck_assert(metrics_format(pairs, n + 1, &out));
    char *text = strndup(buf_head(&out), buf_len(&out));
    buf_deinit(&out);
    free(pairs);
    return text;
}

/* `kura stats --prometheus` against `port`. */
static char *
_tool_prometheus(int port)
{
    const char *tool = getenv("KURA_TOOL");
    char cmd[1024];
    char *out = malloc(TEXT_MAX);
    ck_assert_ptr_nonnull(tool);
    ck_assert_ptr_nonnull(out);
    snprintf(cmd, sizeof(cmd), "timeout 20 '%s' stats --port %d --prometheus",
             tool, port);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t len = fread(out, 1, TEXT_MAX - 1, p);
    out[len] = '\0';
    ck_assert_int_eq(pclose(p), 0);
    return out;
}

/* The value of sample `key` ("name" or "name{labels}") in `text`, or -1. */
static double
_sample(const char *text, const char *key)
{
    size_t n = strlen(key);
    for (const char *l = text; l != NULL && *l != '\0';) {
        if (strncmp(l, key, n) == 0 && l[n] == ' ') {
            return strtod(l + n + 1, NULL);
        }
        l = strchr(l, '\n');
        l = l != NULL ? l + 1 : NULL;
    }
    return -1;
}

/* Every line of `text` with sample values cut off: what must not differ
 * between two scrapes a moment apart. */
static char *
_shape(const char *text)
{
    char *s = malloc(strlen(text) + 1);
    size_t o = 0;
    ck_assert_ptr_nonnull(s);
    for (const char *l = text; *l != '\0';) {
        size_t len = strcspn(l, "\n");
        size_t keep = len;
        if (l[0] != '#') {
            const char *sp = memrchr(l, ' ', len);
            ck_assert_ptr_nonnull(sp);
            keep = (size_t)(sp - l);
        }
        memcpy(s + o, l, keep);
        o += keep;
        s[o++] = '\n';
        l += len + (l[len] == '\n');
    }
    s[o] = '\0';
    return s;
}

/* The figure `name` as listed in stats_figures ("<sid>" for a peer's). */
static void
_listed_name(const char *name, size_t len, char *out, size_t cap)
{
    static const char peer[] = "kura_repl_peer_";
    size_t p = sizeof(peer) - 1;
    size_t d = p;
    if (len > p && strncmp(name, peer, p) == 0) {
        while (d < len && name[d] >= '0' && name[d] <= '9') {
            d++;
        }
        if (d > p && d < len && name[d] == '_') {
            snprintf(out, cap, "%s<sid>%.*s", peer, (int)(len - d), name + d);
            return;
        }
    }
    snprintf(out, cap, "%.*s", (int)len, name);
}

START_TEST(live_figures_are_the_listed_ones)
{
    char *stats = _stats(a.port);
    struct metrics_pair *pairs = malloc(PAIRS_MAX * sizeof(*pairs));
    ck_assert_ptr_nonnull(pairs);
    size_t n = metrics_parse_stats(stats, strlen(stats), pairs, PAIRS_MAX);
    ck_assert_uint_ge(n, STATS_FIGURES_N);
    bool seen[STATS_FIGURES_N] = {false};
    for (size_t i = 0; i < n; i++) {
        char name[128];
        _listed_name(pairs[i].name, pairs[i].name_len, name, sizeof(name));
        size_t j = 0;
        while (j < STATS_FIGURES_N && strcmp(stats_figures[j], name) != 0) {
            j++;
        }
        ck_assert_msg(j < STATS_FIGURES_N, "kurad gives %s, which "
                      "tests/unit/stats_figures.h does not list", name);
        seen[j] = true;
        ck_assert_msg(metrics_type_of(name) != METRICS_UNKNOWN ||
                          strstr(name, "<sid>") != NULL,
                      "%s is unknown to the metrics table", name);
    }
    for (size_t j = 0; j < STATS_FIGURES_N; j++) {
        ck_assert_msg(seen[j], "stats_figures.h lists %s, which kurad does "
                      "not give", stats_figures[j]);
    }
    free(pairs);
    free(stats);
}
END_TEST

START_TEST(endpoint_serves_the_formatted_stats)
{
    /* Known operations on a: 4 plain sets, 3 cas (hit, badval, miss),
     * 2 get hits and a miss, a delete hit and miss, an incr. Figures
     * marked -2 below must equal what stats said. */
    int fd = kc_connect(a.port);
    ck_assert(kc_check(fd, "set k1 0 0 1\r\na\r\n", "STORED\r\n"));
    ck_assert(kc_check(fd, "set k2 0 0 1\r\nb\r\n", "STORED\r\n"));
    ck_assert(kc_check(fd, "set k3 0 0 1\r\nc\r\n", "STORED\r\n"));
    ck_assert(kc_check(fd, "set n 0 0 1\r\n5\r\n", "STORED\r\n"));
    ck_assert(kc_check(fd, "get k1\r\n", "VALUE k1 0 1\r\na\r\nEND\r\n"));
    ck_assert(kc_check(fd, "get nokey\r\n", "END\r\n"));
    char reply[256];
    ck_assert_int_eq(kc_sends(fd, "gets k1\r\n"), 0);
    ck_assert_int_gt(kc_read_until(fd, reply, sizeof(reply), "END\r\n", 5000),
                     0);
    unsigned long long cas = 0;
    ck_assert_int_eq(sscanf(reply, "VALUE k1 0 1 %llu", &cas), 1);
    char req[128];
    snprintf(req, sizeof(req), "cas k1 0 0 1 %llu\r\nA\r\n", cas);
    ck_assert(kc_check(fd, req, "STORED\r\n"));
    ck_assert(kc_check(fd, "cas k3 0 0 1 1\r\nC\r\n", "EXISTS\r\n"));
    ck_assert(kc_check(fd, "cas nokey 0 0 1 1\r\nx\r\n", "NOT_FOUND\r\n"));
    ck_assert(kc_check(fd, "delete k2\r\n", "DELETED\r\n"));
    ck_assert(kc_check(fd, "delete nokey\r\n", "NOT_FOUND\r\n"));
    ck_assert(kc_check(fd, "incr n 2\r\n", "7\r\n"));
    close(fd);

    char *stats = _stats(a.port);
    char *local = _format(stats);
    char *http = _http_metrics(a.port);
    char *tool = _tool_prometheus(a.port);

    char *shape_local = _shape(local);
    char *shape_http = _shape(http);
    char *shape_tool = _shape(tool);
    ck_assert_str_eq(shape_http, shape_local);
    ck_assert_str_eq(shape_tool, shape_http);

    /* What the operations imply, on every path. */
    static const struct {
        const char *key;
        double value;
    } expect[] = {
        /* curr_items counts values; kura_db_records counts the delete's
         * tombstone too (doc/monitoring.md). */
        {"memcached_current_items", -2},
        {"memcached_items_total", -2},
        {"memcached_commands_total{command=\"set\",status=\"hit\"}", 4},
        {"memcached_commands_total{command=\"cas\",status=\"hit\"}", 1},
        {"memcached_commands_total{command=\"cas\",status=\"badval\"}", 1},
        {"memcached_commands_total{command=\"cas\",status=\"miss\"}", 1},
        {"memcached_commands_total{command=\"get\",status=\"hit\"}", 2},
        {"memcached_commands_total{command=\"get\",status=\"miss\"}", 1},
        {"memcached_commands_total{command=\"delete\",status=\"hit\"}", 1},
        {"memcached_commands_total{command=\"delete\",status=\"miss\"}", 1},
        {"memcached_commands_total{command=\"incr\",status=\"hit\"}", 1},
        {"memcached_commands_total{command=\"incr\",status=\"miss\"}", 0},
        {"memcached_commands_total{command=\"flush\",status=\"hit\"}", 0},
        {"kura_db_records", -2}, /* as stats says, below */
        {"kura_repl_peer_connected{sid=\"2\"}", 1},
        {"kura_repl_master_connected", 1},
        {"kura_writable", 1},
        {"kura_up", 1},
    };
    const char *texts[] = {local, http, tool};
    for (size_t t = 0; t < 3; t++) {
        for (size_t i = 0; i < sizeof(expect) / sizeof(expect[0]); i++) {
            double want = expect[i].value;
            if (want == -2) {
                want = _sample(local, expect[i].key);
                ck_assert(want >= 0);
            }
            double got = _sample(texts[t], expect[i].key);
            ck_assert_msg(got == want, "%s: %s is %g, not %g",
                          t == 0 ? "metrics_format" : t == 1 ? "/-/metrics"
                                                             : "kura stats",
                          expect[i].key, got, want);
        }
    }
    /* The pair's other side sees this one as its peer 1. */
    char *http_b = _http_metrics(b.port);
    ck_assert(_sample(http_b, "kura_repl_peer_connected{sid=\"1\"}") == 1);
    ck_assert(_sample(http_b, "kura_sid") == 2);
    free(http_b);
    free(shape_local);
    free(shape_http);
    free(shape_tool);
    free(tool);
    free(http);
    free(local);
    free(stats);
}
END_TEST

/* The fields of one line of `kura stats --watch`; returns how many. */
static int
_watch_fields(char *line, char *f[16])
{
    int n = 0;
    for (char *t = strtok(line, " \n"); t != NULL && n < 16;
         t = strtok(NULL, " \n")) {
        f[n++] = t;
    }
    return n;
}

START_TEST(watch_shows_the_writes_of_each_interval)
{
    const char *tool = getenv("KURA_TOOL");
    char cmd[1024], line[512];
    char *f[16];
    ck_assert_ptr_nonnull(tool);
    snprintf(cmd, sizeof(cmd), "timeout 20 '%s' stats --port %d --watch 1 "
             "--count 2", tool, a.port);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    /* The header comes with the first sample: writes from here on fall
     * inside the intervals. */
    ck_assert_ptr_nonnull(fgets(line, sizeof(line), p));
    ck_assert_int_eq(_watch_fields(line, f), 11);
    ck_assert_str_eq(f[1], "sets/s");
    ck_assert_str_eq(f[7], "rec/sync");

    int fd = kc_connect(a.port);
    ck_assert_int_ge(fd, 0);
    for (int i = 0; i < 300; i++) {
        char req[64];
        snprintf(req, sizeof(req), "set watch:%d 0 0 1\r\nx\r\n", i);
        ck_assert(kc_check(fd, req, "STORED\r\n"));
    }
    close(fd);

    double sets = 0;
    bool synced = false;
    for (int l = 0; l < 2; l++) {
        ck_assert_ptr_nonnull(fgets(line, sizeof(line), p));
        ck_assert_int_eq(_watch_fields(line, f), 11);
        sets += strtod(f[1], NULL);
        synced = synced || strtod(f[5], NULL) > 0;
        /* This server follows its peer: the lag is a number. */
        ck_assert_msg(strcmp(f[10], "-") != 0 && strcmp(f[10], "down") != 0,
                      "lag column: %s", f[10]);
    }
    ck_assert_ptr_null(fgets(line, sizeof(line), p));
    ck_assert_int_eq(pclose(p), 0);
    /* Each interval is a second, to a few milliseconds. */
    ck_assert_msg(sets >= 290 && sets <= 310, "sets/s summed to %g", sets);
    ck_assert(synced); /* -fsync always: each set was fdatasynced */

    static const char *bad[] = {"--watch 0", "--count 2",
                                "--watch 1 --prometheus", "--watch x"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(cmd, sizeof(cmd), "'%s' stats --port %d %s 2>/dev/null",
                 tool, a.port, bad[i]);
        int rc = system(cmd);
        ck_assert_msg(WIFEXITED(rc) && WEXITSTATUS(rc) == 2, "%s", bad[i]);
    }
}
END_TEST

static Suite *
metrics_it_suite(void)
{
    Suite *s = suite_create("it_metrics");
    TCase *tc = tcase_create("pair");
    tcase_add_checked_fixture(tc, _start_pair, _cleanup_pair);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, live_figures_are_the_listed_ones);
    tcase_add_test(tc, endpoint_serves_the_formatted_stats);
    tcase_add_test(tc, watch_shows_the_writes_of_each_interval);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(metrics_it_suite)
