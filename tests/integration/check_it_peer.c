/*
 * Integration tests: -fsync peer (ulog.h U10-U12, repl_sender.h R5) on a
 * master/master pair of real daemons on loopback.
 *
 * - kill -9 of the active server under a write load: every write it
 *   acknowledged is already on the standby (kura bench --ack-log, then
 *   kura verify against the standby alone, U10, R5), and on the active
 *   too once it is back, having asked for its own records back (R6).
 * - the standby stopped: writes are still acknowledged, synced by the
 *   active alone (U11), and stats and the log say so; when the standby
 *   returns the fallback ends and it gets those writes.
 * - the standby frozen (SIGSTOP): the active answers no write until the
 *   standby reports it (U10), or until the stall limit (U11).
 *
 * The tool is $KURA_TOOL (set by `make check`). Every wait polls a
 * condition against a deadline.
 */
#include <check.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../unit/unit_main.h"
#include "harness.h"

#define TOOL_TIMEOUT_MS 30000

static struct kura_proc a;
static struct kura_proc b;
static char a_port[16];
static char b_port[16];

/* ------------------------------------------------------------ kura runs */

/* Starts kura with `args`; see harness_tool_spawn(). */
static void
_spawn(struct harness_tool *t, const char *const *args)
{
    ck_assert_int_eq(harness_tool_spawn(t, args), 0);
}

/* Waits for the run to end; returns its exit status, or -1 if killed. */
static int
_finish(struct harness_tool *t)
{
    return harness_tool_finish(t, TOOL_TIMEOUT_MS);
}

/* kura verify of `log` against `port`; returns its exit status. */
static int
_verify(const char *log, int port, struct harness_tool *t)
{
    char p[16];
    snprintf(p, sizeof(p), "%d", port);
    _spawn(t, (const char *const[]){"verify", "--ack-log", log, "--port", p,
                                    NULL});
    int rc = _finish(t);
    fprintf(stderr, "verify on %d: %s%s", port, t->out, t->err);
    return rc;
}

/* Writes acknowledged by a finished bench, from its summary. */
static long
_acked(const struct harness_tool *t)
{
    const char *p = strstr(t->out, "acknowledged writes logged: ");
    ck_assert_msg(p != NULL, "%s", t->out);
    return strtol(p + strlen("acknowledged writes logged: "), NULL, 10);
}

/* ------------------------------------------------------------- the pair */

static void
_follow(struct kura_proc *k, const char *sid, const char *port,
        const char *policy)
{
    k->args[k->nargs++] = "-sid";
    k->args[k->nargs++] = sid;
    k->args[k->nargs++] = "-mhost";
    k->args[k->nargs++] = "127.0.0.1";
    k->args[k->nargs++] = "-mport";
    k->args[k->nargs++] = port;
    k->args[k->nargs++] = "-fsync";
    k->args[k->nargs++] = policy;
}

/*
 * Both with -fsync peer. The beat is 2 s here, so that a loaded test
 * machine does not turn a slow report into a stall (U11), which would
 * answer writes on the active's sync alone; the test checks none came.
 */
static void
_start_pair(void)
{
    kura_init(&a, NULL);
    kura_init(&b, NULL);
    snprintf(a_port, sizeof(a_port), "%d", a.port);
    snprintf(b_port, sizeof(b_port), "%d", b.port);
    _follow(&a, "1", b_port, "peer,2000");
    _follow(&b, "2", a_port, "peer,2000");
    ck_assert_int_eq(kura_launch(&a), 0);
    ck_assert_int_eq(kura_launch(&b), 0);
}

static void
_cleanup_pair(void)
{
    kura_cleanup(&a);
    kura_cleanup(&b);
}

static long long
_stat(int port, const char *name)
{
    int fd = kc_connect(port);
    long long v = fd >= 0 ? kc_stat(fd, name) : -1;
    if (fd >= 0) {
        close(fd);
    }
    return v;
}

struct stat_is {
    int port;
    const char *name;
    long long want;
};

static bool
_stat_is(void *arg)
{
    struct stat_is *s = arg;
    return _stat(s->port, s->name) == s->want;
}

static bool
_wait_stat(int port, const char *name, long long want, int ms)
{
    struct stat_is s = {port, name, want};
    return harness_wait_for(_stat_is, &s, ms);
}

/* One set on `port`; true if STORED. */
static bool
_set(int port, const char *key)
{
    int fd = kc_connect(port);
    char req[128];
    snprintf(req, sizeof(req), "set %s 0 0 1\r\nx\r\n", key);
    bool ok = fd >= 0 && kc_check(fd, req, "STORED\r\n");
    if (fd >= 0) {
        close(fd);
    }
    return ok;
}

/* The peer links on its first report, so a write starts the link. */
static void
_linked(int port)
{
    ck_assert(_set(port, "link"));
    ck_assert_msg(_wait_stat(port, "kura_fsync_peers_live", 1, 20000),
                  "the peer never reported a write (R5)");
    ck_assert_int_eq(_stat(port, "kura_fsync_peer_fallback"), 0);
}

static bool
_file_has_lines(void *arg)
{
    struct stat st;
    return stat(arg, &st) == 0 && st.st_size > 0;
}

/* Both servers report no lag toward each other. */
static bool
_caught_up(void *arg)
{
    (void)arg;
    return _stat(a.port, "kura_repl_peer_2_lag_records") == 0 &&
           _stat(b.port, "kura_repl_peer_1_lag_records") == 0 &&
           _stat(a.port, "kura_repl_master_lag_records") == 0 &&
           _stat(b.port, "kura_repl_master_lag_records") == 0;
}

START_TEST(test_u10_kill9_active_every_ack_on_standby)
{
    char log[600];
    snprintf(log, sizeof(log), "%s/ack.log", a.dir);
    ck_assert_int_eq(_stat(a.port, "kura_fsync_peer_fallback"), 1);
    ck_assert(kura_log_has(&a, "-fsync peer: no peer connected yet"));
    _linked(a.port);
    ck_assert(kura_wait_logged(&a, "writes this server's records to its "
                               "log", 5000));

    struct harness_tool bench;
    _spawn(&bench, (const char *const[]){"bench", "--port", a_port,
                                         "--conns", "8", "--pipeline", "4",
                                         "--duration", "3", "--own-keys",
                                         "200", "--ack-log", log, NULL});
    /* The ack log is flushed every second: kill once it has been, in the
     * middle of the load. */
    ck_assert(harness_wait_for(_file_has_lines, log, 10000));
    long long written = _stat(a.port, "kura_ulog_peer_written_lsn");
    long long fallback = _stat(a.port, "kura_fsync_peer_fallback");
    long long stalls = _stat(a.port, "kura_fsync_peer_stalls");
    long long syncs = _stat(a.port, "kura_ulog_syncs");
    long long groups = _stat(a.port, "kura_ulog_group_writes");
    kura_kill9(&a);
    int rc = _finish(&bench);
    ck_assert_msg(rc == 0 || rc == 1, "bench: %d\n%s%s", rc, bench.out,
                  bench.err);
    long acked = _acked(&bench);
    fprintf(stderr, "peer: %ld writes acknowledged; %lld syncs for %lld "
            "group writes before the kill\n", acked, syncs, groups);
    ck_assert_int_gt(acked, 0);
    ck_assert_int_gt(written, 0);
    ck_assert_int_eq(fallback, 0);
    ck_assert_int_eq(stalls, 0); /* U11: no write answered on A's sync */
    /* U12 only: the beat (2 s) synced, not each group commit. */
    ck_assert_int_lt(syncs, groups);

    /* U10, R5: the standby alone holds every acknowledged write. */
    struct harness_tool v;
    ck_assert_int_eq(_verify(log, b.port, &v), 0);

    /* kill -9 loses nothing on A either; the pair converges. A asks for
     * its own records back after the unclean stop (R6). */
    ck_assert_int_eq(kura_launch(&a), 0);
    ck_assert(kura_wait_logged(&b, "restarted after an unclean stop: "
                               "sending back its own records", 10000));
    ck_assert(harness_wait_for(_caught_up, NULL, 30000));
    ck_assert_int_eq(_verify(log, a.port, &v), 0);
}
END_TEST

START_TEST(test_u11_fallback_while_the_peer_is_stopped)
{
    char log[600];
    snprintf(log, sizeof(log), "%s/ack.log", a.dir);
    _linked(a.port);
    ck_assert_int_eq(kura_stop(&b, 15000), 0);
    ck_assert(_wait_stat(a.port, "kura_fsync_peer_fallback", 1, 20000));
    ck_assert(_wait_stat(a.port, "kura_fsync_peers_live", 0, 1000));
    ck_assert_int_ge(_stat(a.port, "kura_fsync_peer_fallbacks"), 1);
    ck_assert(kura_wait_logged(&a, "no other is connected; syncing every "
                               "group commit", 5000));

    /* Still acknowledged, each group commit synced here (U11). */
    long long syncs = _stat(a.port, "kura_ulog_syncs");
    struct harness_tool bench;
    _spawn(&bench, (const char *const[]){"bench", "--port", a_port,
                                         "--conns", "4", "--duration", "1",
                                         "--own-keys", "100", "--ack-log",
                                         log, NULL});
    ck_assert_int_eq(_finish(&bench), 0);
    long acked = _acked(&bench);
    ck_assert_int_gt(acked, 0);
    long long synced = _stat(a.port, "kura_ulog_syncs") - syncs;
    fprintf(stderr, "fallback: %ld writes acknowledged, %lld syncs\n", acked,
            synced);
    /* A 2 s beat alone would make one sync in a 1 s run. */
    ck_assert_int_gt(synced, 5);
    ck_assert_int_ge(_stat(a.port, "kura_ulog_fdatasynced_lsn"),
                     _stat(a.port, "kura_ulog_durable_lsn"));
    struct harness_tool v;
    ck_assert_int_eq(_verify(log, a.port, &v), 0);

    /* The standby returns: the fallback ends, and it gets every write. */
    ck_assert_int_eq(kura_launch(&b), 0);
    ck_assert(_wait_stat(a.port, "kura_fsync_peer_fallback", 0, 20000));
    ck_assert(harness_wait_for(_caught_up, NULL, 30000));
    ck_assert_int_eq(_verify(log, b.port, &v), 0);
    ck_assert(kura_wait_logged(&a, "writes this server's records to its "
                               "log", 5000));
}
END_TEST

/* True once every thread of process `*arg` is stopped (SIGSTOP landed). */
static bool
_all_stopped(void *arg)
{
    pid_t pid = *(pid_t *)arg;
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (d == NULL) {
        return false;
    }
    bool all = true;
    int seen = 0;
    struct dirent *e;
    while (all && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') {
            continue;
        }
        char stat_path[320];
        char text[512];
        snprintf(stat_path, sizeof(stat_path), "%s/%s/stat", path,
                 e->d_name);
        FILE *f = fopen(stat_path, "r");
        size_t n = f != NULL ? fread(text, 1, sizeof(text) - 1, f) : 0;
        if (f != NULL) {
            fclose(f);
        }
        text[n] = '\0';
        const char *state = strrchr(text, ')');
        all = state != NULL && (state[2] == 'T' || state[2] == 't');
        seen++;
    }
    closedir(d);
    return all && seen > 0;
}

/* Freezes `k` and waits until every thread of it has stopped. */
static void
_freeze(struct kura_proc *k)
{
    ck_assert_int_eq(kill(k->pid, SIGSTOP), 0);
    ck_assert(harness_wait_for(_all_stopped, &k->pid, 5000));
}

/*
 * U10 in the daemon: while the linked standby is frozen (SIGSTOP), the
 * active answers no write on its own disk; the reply comes when the
 * standby resumes and reports it. U11: frozen past the beat (2 s here),
 * it is a stall, and the write is answered on the active's sync.
 */
START_TEST(test_u10_frozen_standby_holds_replies)
{
    _linked(a.port);
    _freeze(&b);
    int fd = kc_connect(a.port);
    ck_assert_int_ge(fd, 0);
    char reply[64];
    ck_assert_int_eq(kc_sends(fd, "set frozen 0 0 1\r\nx\r\n"), 0);
    /* Well inside the 2 s beat: no answer while the standby is frozen. */
    ck_assert_int_lt(kc_read_until(fd, reply, sizeof(reply), "\r\n", 700),
                     0);
    ck_assert_int_eq(kill(b.pid, SIGCONT), 0);
    ck_assert_int_gt(kc_read_until(fd, reply, sizeof(reply), "\r\n", 5000),
                     0);
    ck_assert_str_eq(reply, "STORED\r\n");
    ck_assert_int_eq(_stat(a.port, "kura_fsync_peer_stalls"), 0);

    /* Frozen for longer than the beat: a stall, answered here. */
    _freeze(&b);
    uint64_t began = harness_now_ms();
    ck_assert_int_eq(kc_sends(fd, "set frozen 0 0 1\r\ny\r\n"), 0);
    long got = kc_read_until(fd, reply, sizeof(reply), "\r\n", 10000);
    uint64_t took = harness_now_ms() - began;
    ck_assert_int_eq(kill(b.pid, SIGCONT), 0);
    ck_assert_int_gt(got, 0);
    ck_assert_str_eq(reply, "STORED\r\n");
    fprintf(stderr, "stall: answered after %llu ms\n",
            (unsigned long long)took);
    ck_assert_uint_ge(took, 1500);
    ck_assert_int_eq(_stat(a.port, "kura_fsync_peer_stalls"), 1);
    ck_assert(kura_wait_logged(&a, "no report from the peer", 5000));
    close(fd);
}
END_TEST

static Suite *
peer_suite(void)
{
    Suite *s = suite_create("peer");
    TCase *tc = tcase_create("pair");
    tcase_add_checked_fixture(tc, _start_pair, _cleanup_pair);
    tcase_add_test(tc, test_u10_kill9_active_every_ack_on_standby);
    tcase_add_test(tc, test_u11_fallback_while_the_peer_is_stopped);
    tcase_add_test(tc, test_u10_frozen_standby_holds_replies);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(peer_suite)
