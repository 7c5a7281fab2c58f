/*
 * Unit tests: the sweeper (sweeper.h), driven slice by slice without its
 * thread, then once with it. Expired and flushed records nobody reads are
 * retired: into a tombstone with the same stamp when there is an update
 * log (txn.h T6), removed outright without one. A tombstone is removed
 * only once every pulling peer acknowledged it and this server's own
 * master is past its stamp plus the slack (T6); live records are never
 * touched.
 */
#include <check.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "engine_fixture.h"
#include "sweeper.h"
#include "unit_main.h"
#include "util.h"

static struct engine_fixture fx;
static struct sweeper sw;
static bool sw_ready;
static uint64_t limit_acked;
static uint64_t limit_source;

static void
_limits(void *arg, uint64_t *acked, uint64_t *source)
{
    (void)arg;
    *acked = limit_acked;
    *source = limit_source;
}

/* A database, with an update log if `logged`, and a sweeper over it that
 * asks _limits() for its peers' positions. */
static void
_open(bool logged)
{
    engine_fixture_setup(&fx);
    engine_fixture_open_store(&fx, "t.tch");
    if (logged) {
        engine_fixture_open_ulog(&fx, ULOG_FSYNC_NEVER, 1 << 20);
    }
    engine_fixture_start(&fx);
    limit_acked = UINT64_MAX;
    limit_source = UINT64_MAX;
    ck_assert_int_eq(sweeper_init(&sw, &fx.eng, &fx.log, 100, 1, 4096,
                                  _limits, NULL),
                     0);
    sw_ready = true;
}

static void
_setup_logged(void)
{
    _open(true);
}

static void
_setup_unlogged(void)
{
    _open(false);
}

static void
_teardown(void)
{
    if (sw_ready) {
        sweeper_stop(&sw);
        sw_ready = false;
    }
    engine_fixture_teardown(&fx);
}

/* Runs slices until a pass over the whole database ends. */
static void
_finish_pass(void)
{
    uint64_t cycles = atomic_load(&sw.cycles);
    for (int i = 0; i < 1000 && atomic_load(&sw.cycles) == cycles; i++) {
        (void)sweeper_slice(&sw, 3);
    }
    ck_assert_uint_eq(atomic_load(&sw.cycles), cycles + 1);
}

/* Ends the pass under way, then makes one whole pass, from the first
 * record. Returns the records that pass examined. */
static uint64_t
_sweep_pass(void)
{
    _finish_pass();
    uint64_t examined = atomic_load(&sw.examined);
    _finish_pass();
    return atomic_load(&sw.examined) - examined;
}

static uint32_t
_unix_now(void)
{
    return (uint32_t)(util_now_us() / 1000000u);
}

/* The kind of record the store holds for `key`, or -1 for none. */
static int
_kind(const char *key)
{
    struct record_meta m;
    char v[128];
    return engine_fixture_stored(&fx, key, &m, v, sizeof(v)) ? (int)m.kind
                                                              : -1;
}

START_TEST(test_t6_expired_records_become_tombstones)
{
    /* A peer that has acknowledged nothing keeps the tombstones. */
    limit_acked = 0;
    engine_fixture_put(&fx, "live", "v", 0);
    engine_fixture_put(&fx, "later", "v", _unix_now() + 3600);
    uint64_t ts = engine_fixture_put(&fx, "gone", "v", _unix_now() - 5);
    ck_assert_uint_eq(_sweep_pass(), 3);
    ck_assert_uint_eq(atomic_load(&sw.reclaimed), 1);
    ck_assert_int_eq(_kind("live"), RECORD_VALUE);
    ck_assert_int_eq(_kind("later"), RECORD_VALUE);
    struct record_meta m;
    char v[16];
    ck_assert(engine_fixture_stored(&fx, "gone", &m, v, sizeof(v)));
    ck_assert_int_eq(m.kind, RECORD_TOMBSTONE);
    /* The same stamp, so a peer's retirement of it converges (T6). */
    ck_assert_uint_eq(m.ts, ts);
    /* A second pass finds nothing more to retire. */
    _sweep_pass();
    ck_assert_uint_eq(atomic_load(&sw.reclaimed), 1);
}
END_TEST

START_TEST(test_without_a_log_expired_records_are_removed)
{
    engine_fixture_put(&fx, "live", "v", 0);
    engine_fixture_put(&fx, "gone", "v", _unix_now() - 5);
    _sweep_pass();
    ck_assert_uint_eq(atomic_load(&sw.reclaimed), 1);
    ck_assert_int_eq(_kind("gone"), -1);
    ck_assert_int_eq(_kind("live"), RECORD_VALUE);
}
END_TEST

START_TEST(test_t6_tombstone_waits_for_every_peer)
{
    struct record_meta m;
    char v[16];
    engine_fixture_put(&fx, "k", "v", 0);
    engine_fixture_remove(&fx, "k");
    ck_assert(engine_fixture_stored(&fx, "k", &m, v, sizeof(v)));
    ck_assert_int_eq(m.kind, RECORD_TOMBSTONE);
    /* Its cas holds the log position where it was made. */
    uint64_t lsn = m.cas;
    uint64_t ts = m.ts;

    /* A pulling peer has not acknowledged that position yet. */
    limit_acked = lsn - 1;
    _sweep_pass();
    ck_assert_int_eq(_kind("k"), RECORD_TOMBSTONE);

    /* It has, but this server's master may still send an older write. */
    limit_acked = lsn;
    limit_source = ts + SWEEPER_TOMBSTONE_SLACK_US - 1;
    _sweep_pass();
    ck_assert_int_eq(_kind("k"), RECORD_TOMBSTONE);
    ck_assert_uint_eq(atomic_load(&sw.tombstones_dropped), 0);

    /* Both are past it: nothing older can arrive any more. */
    limit_source = ts + SWEEPER_TOMBSTONE_SLACK_US;
    _sweep_pass();
    ck_assert_int_eq(_kind("k"), -1);
    ck_assert_uint_eq(atomic_load(&sw.tombstones_dropped), 1);
}
END_TEST

START_TEST(test_t6_a_rewritten_key_is_not_retired)
{
    /* Expired, then written again before the sweeper reaches it: the
     * retirement names the old stamp and must not touch the new value. */
    uint64_t old_ts = engine_fixture_put(&fx, "k", "old", _unix_now() - 5);
    engine_fixture_put(&fx, "k", "new", 0);
    ck_assert(!txn_expire(&fx.batch, "k", 1, old_ts));
    _sweep_pass();
    ck_assert_int_eq(_kind("k"), RECORD_VALUE);
    ck_assert_uint_eq(atomic_load(&sw.reclaimed), 0);
}
END_TEST

START_TEST(test_flush_all_is_swept)
{
    limit_acked = 0;
    engine_fixture_put(&fx, "a", "v", 0);
    engine_fixture_put(&fx, "b", "v", 0);
    ck_assert_int_eq(txn_flush_all(&fx.batch, 0), TXN_OK);
    engine_fixture_put(&fx, "c", "after the flush", 0);
    _sweep_pass();
    ck_assert_uint_eq(atomic_load(&sw.reclaimed), 2);
    ck_assert_int_eq(_kind("a"), RECORD_TOMBSTONE);
    ck_assert_int_eq(_kind("b"), RECORD_TOMBSTONE);
    ck_assert_int_eq(_kind("c"), RECORD_VALUE);
}
END_TEST

START_TEST(test_the_thread_settles_a_delayed_flush)
{
    limit_acked = 0;
    engine_fixture_put(&fx, "a", "v", 0);
    ck_assert_int_eq(txn_flush_all(&fx.batch, 1), TXN_OK);
    /* Written before the deadline, so flushed too (memcached's rule). */
    engine_fixture_put(&fx, "b", "v", 0);
    ck_assert_int_eq(sweeper_start(&sw), 0);
    /* Within a second the deadline passes; the thread then folds the
     * pending flush into the applied point and retires both. */
    uint64_t deadline = util_mono_ms() + 10000;
    struct expiry_flush fl;
    for (;;) {
        txn_flush_state(&fx.eng, &fl);
        if ((atomic_load(&sw.reclaimed) == 2 && fl.pending_us == 0) ||
            util_mono_ms() > deadline) {
            break;
        }
        struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    ck_assert_uint_eq(atomic_load(&sw.reclaimed), 2);
    ck_assert_uint_eq(fl.pending_us, 0);
    ck_assert_uint_gt(fl.applied_us, 0);
    ck_assert_int_eq(_kind("a"), RECORD_TOMBSTONE);
    ck_assert_int_eq(_kind("b"), RECORD_TOMBSTONE);
    /* A write after the deadline is not flushed. */
    engine_fixture_put(&fx, "c", "after", 0);
    sweeper_stop(&sw);
    sw_ready = false;
    ck_assert_int_eq(_kind("c"), RECORD_VALUE);
    ck_assert_uint_eq(atomic_load(&sw.reclaimed), 2);
}
END_TEST

static Suite *
sweeper_suite(void)
{
    Suite *s = suite_create("sweeper");
    TCase *tc = tcase_create("logged");
    tcase_add_checked_fixture(tc, _setup_logged, _teardown);
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, test_t6_expired_records_become_tombstones);
    tcase_add_test(tc, test_t6_tombstone_waits_for_every_peer);
    tcase_add_test(tc, test_t6_a_rewritten_key_is_not_retired);
    tcase_add_test(tc, test_flush_all_is_swept);
    tcase_add_test(tc, test_the_thread_settles_a_delayed_flush);
    suite_add_tcase(s, tc);
    tc = tcase_create("unlogged");
    tcase_add_checked_fixture(tc, _setup_unlogged, _teardown);
    tcase_add_test(tc, test_without_a_log_expired_records_are_removed);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(sweeper_suite)
