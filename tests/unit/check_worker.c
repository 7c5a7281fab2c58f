/*
 * Unit tests: a worker's thread and loop (worker.h) over a real write
 * path and update log under "always": connections handed over through
 * the queue, one log append per pass (T3), replies released by the log's
 * watcher only once durable and applied (T3, T8), more hand-overs than one
 * wake-up takes, and a stop that answers what was read before closing.
 *
 * Requests come in through pipes, and worker_shared.send captures the
 * replies, so no socket is used. The log's sync thread is not started:
 * nothing becomes durable until the test syncs (ulog_wait_durable() syncs
 * by itself when the log has no threads), which makes the moment of
 * durability the test's to choose.
 */
#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "engine_fixture.h"
#include "unit_main.h"
#include "util.h"
#include "worker.h"

#define WAIT_MS 5000       /* deadline of every wait */
#define MAX_CLIENTS 300

static struct engine_fixture fx;
static struct process_fixture pf;
static struct worker_shared shared;
static struct worker w;
static bool w_ready;
static int clients[MAX_CLIENTS]; /* the clients' ends of the pipes */
static int nclients;

/* What the worker sent, written on its thread, read on the test's. */
static pthread_mutex_t sent_lock = PTHREAD_MUTEX_INITIALIZER;
static char sent[16384];
static size_t nsent;
static unsigned stored;          /* "STORED" replies */
static unsigned versions;        /* "VERSION" replies */
static uint64_t durable_at_store; /* the log's durable lsn at the first */
static bool applied_at_store;    /* the store held "k" at the first */

/* Records what a reply carried and, for the first STORED, what the log
 * and the store held at that moment. */
static ssize_t
_capture(void *arg, int fd, const void *data, size_t len)
{
    (void)arg;
    (void)fd;
    pthread_mutex_lock(&sent_lock);
    if (nsent + len < sizeof(sent)) {
        memcpy(sent + nsent, data, len);
        nsent += len;
        sent[nsent] = '\0';
    }
    const char *p = data;
    const char *end = p + len;
    for (; p < end; p++) {
        if (end - p >= 8 && memcmp(p, "STORED\r\n", 8) == 0) {
            if (stored++ == 0) {
                struct record_meta m;
                char v[8];
                durable_at_store = ulog_durable_lsn(fx.ulog);
                applied_at_store = engine_fixture_stored(&fx, "k", &m, v,
                                                         sizeof(v));
            }
        } else if (end - p >= 8 && memcmp(p, "VERSION ", 8) == 0) {
            versions++;
        }
    }
    pthread_mutex_unlock(&sent_lock);
    return (ssize_t)len;
}

static unsigned
_stored(void)
{
    pthread_mutex_lock(&sent_lock);
    unsigned n = stored;
    pthread_mutex_unlock(&sent_lock);
    return n;
}

static unsigned
_versions(void)
{
    pthread_mutex_lock(&sent_lock);
    unsigned n = versions;
    pthread_mutex_unlock(&sent_lock);
    return n;
}

static struct ulog_stats
_log_stats(void)
{
    struct ulog_stats st;
    ulog_stats(fx.ulog, &st);
    return st;
}

static void
_setup(void)
{
    engine_fixture_setup(&fx);
    engine_fixture_open_store(&fx, "t.tch");
    engine_fixture_open_ulog(&fx, ULOG_FSYNC_ALWAYS, 64u << 20);
    engine_fixture_start(&fx);
    fx.eng.apply_after_sync = true; /* as the server sets it (T8) */
    engine_fixture_process_setup(&fx, &pf);
    ck_assert_int_eq(pf.settings.fsync, ULOG_FSYNC_ALWAYS);
    memset(&shared, 0, sizeof(shared));
    shared.penv = &pf.env;
    shared.eng = &fx.eng;
    shared.ulog = fx.ulog;
    shared.log = &fx.log;
    shared.limits = (struct proto_limits){.max_line = PROTO_MAX_LINE_DEFAULT,
                                          .max_get_line = 1 << 20,
                                          .item_max = pf.settings.item_max};
    shared.watermark = 1 << 20;
    shared.send = _capture;
    ck_assert_int_eq(worker_init(&w, 0, &shared), 0);
    w_ready = true;
    nclients = 0;
    nsent = 0;
    sent[0] = '\0';
    stored = 0;
    versions = 0;
    durable_at_store = 0;
    applied_at_store = false;
}

static void
_teardown(void)
{
    if (w_ready) {
        worker_stop(&w);
        worker_join(&w);
        worker_deinit(&w);
        w_ready = false;
    }
    for (int i = 0; i < nclients; i++) {
        close(clients[i]);
    }
    engine_fixture_teardown(&fx);
    engine_fixture_process_teardown(&pf);
}

/* Hands the worker a connection whose first requests are `text`. Returns
 * the client's end. */
static int
_connect(const char *text)
{
    int p[2];
    ck_assert_int_lt(nclients, MAX_CLIENTS);
    ck_assert_int_eq(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
    clients[nclients++] = p[1];
    ck_assert_int_eq(write(p[1], text, strlen(text)), (ssize_t)strlen(text));
    atomic_fetch_add(&shared.curr_conns, 1);
    ck_assert_int_eq(worker_dispatch(&w, p[0], false), 0);
    return p[1];
}

/* Polls `done` until it holds, failing the test after WAIT_MS. */
#define WAIT_FOR(done)                                                     \
    do {                                                                   \
        uint64_t until_ = util_mono_ms() + WAIT_MS;                        \
        while (!(done)) {                                                  \
            ck_assert_msg(util_mono_ms() < until_, "timed out: %s", #done); \
            usleep(1000);                                                  \
        }                                                                  \
    } while (0)

/* Waits until every pass that began before now has ended: a request on a
 * connection of its own is answered only in a later pass. */
static void
_wait_for_a_later_pass(void)
{
    unsigned before = _versions();
    (void)_connect("version\r\n");
    WAIT_FOR(_versions() > before);
}

/* Starts the worker and sets k; returns the set's lsn once the pass that
 * logged it has ended without an answer, as nothing is synced yet. */
static uint64_t
_set_k_unanswered(void)
{
    ck_assert_int_eq(worker_start(&w), 0);
    (void)_connect("set k 0 0 1\r\nv\r\n");
    WAIT_FOR(_log_stats().records == 1);
    uint64_t lsn = _log_stats().last_lsn;
    _wait_for_a_later_pass();
    ck_assert_uint_eq(_stored(), 0);
    return lsn;
}

START_TEST(test_t3_t8_a_set_is_answered_only_once_durable_and_applied)
{
    uint64_t lsn = _set_k_unanswered();
    ck_assert_uint_lt(ulog_durable_lsn(fx.ulog), lsn);

    ck_assert_int_eq(ulog_wait_durable(fx.ulog, lsn), ULOG_OK);
    WAIT_FOR(_stored() == 1);
    ck_assert_uint_ge(durable_at_store, lsn);
    ck_assert(applied_at_store);
}
END_TEST

START_TEST(test_t3_connections_ready_together_share_one_append)
{
    /* Handed over before the thread starts, so one pass finds them all. */
    for (int i = 0; i < 8; i++) {
        char req[64];
        snprintf(req, sizeof(req), "set k%d 0 0 1\r\nv\r\n", i);
        (void)_connect(req);
    }
    ck_assert_int_eq(worker_start(&w), 0);
    WAIT_FOR(_log_stats().records == 8);
    struct ulog_stats st = _log_stats();
    ck_assert_uint_eq(st.appends, 1);
    ck_assert_int_eq(ulog_wait_durable(fx.ulog, st.last_lsn), ULOG_OK);
    WAIT_FOR(_stored() == 8);
    ck_assert_uint_eq(_log_stats().appends, 1);
}
END_TEST

START_TEST(test_more_connections_than_one_wake_takes_are_all_served)
{
    struct rlimit rl;
    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    int n = 260; /* past the 256 one wake-up takes from the queue */
    if (rl.rlim_cur < (rlim_t)(2 * n + 64)) {
        n = (int)(rl.rlim_cur / 2) - 32;
    }
    for (int i = 0; i < n; i++) {
        (void)_connect("version\r\n");
    }
    ck_assert_int_eq(worker_start(&w), 0);
    WAIT_FOR(_versions() == (unsigned)n);
    ck_assert_uint_eq(atomic_load(&shared.curr_conns), (uint64_t)n);
}
END_TEST

START_TEST(test_stop_answers_what_was_read_once_durable_then_closes)
{
    uint64_t lsn = _set_k_unanswered();
    worker_stop(&w);
    worker_join(&w);
    ck_assert_uint_eq(_stored(), 1);
    ck_assert_uint_ge(durable_at_store, lsn);
    ck_assert(applied_at_store);
    ck_assert_uint_eq(atomic_load(&shared.curr_conns), 0);

    int p[2];
    ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
    ck_assert_int_eq(worker_dispatch(&w, p[0], false), -1);
    close(p[0]);
    close(p[1]);
}
END_TEST

static Suite *
worker_suite(void)
{
    Suite *s = suite_create("worker");
    TCase *tc = tcase_create("loop");
    tcase_add_checked_fixture(tc, _setup, _teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_t3_t8_a_set_is_answered_only_once_durable_and_applied);
    tcase_add_test(tc, test_t3_connections_ready_together_share_one_append);
    tcase_add_test(tc, test_more_connections_than_one_wake_takes_are_all_served);
    tcase_add_test(tc, test_stop_answers_what_was_read_once_durable_then_closes);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(worker_suite)
