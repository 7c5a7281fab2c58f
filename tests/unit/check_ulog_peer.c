/*
 * Unit tests: the update log's "peer" policy (ulog.h U10-U12). The
 * release rule and the sync-on-demand rule as pure functions, then a real
 * log: a peer's report releases a write with no fdatasync, a report past
 * the end releases nothing appended later, with no peer linked every
 * waited-on write is synced (the fallback, in stats), unlinking the last
 * peer syncs what waited on it, and the beat syncs whatever the peers do.
 */
#include <check.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "logrec.h"
#include "record.h"
#include "repl_proto.h"
#include "ulog.h"
#include "ulog_peer.h"
#include "ulog_fixture.h"
#include "unit_main.h"
#include "unit_tmpdir.h"
#include "util.h"

static struct ulog_fixture fx;

static void
_setup(void)
{
    ulog_fixture_setup(&fx, "check_ulog_peer");
}

static void
_teardown(void)
{
    ulog_fixture_teardown(&fx);
}

static struct ulog *
_open(enum ulog_fsync fsync, uint32_t fsync_ms)
{
    struct ulog_options o;
    struct ulog_recovery rec;
    ulog_fixture_options(&fx, &o, fsync, 1 << 20);
    o.fsync_ms = fsync_ms;
    return ulog_fixture_open(&o, &rec);
}

static uint64_t
_append(struct ulog *u, const char *key, const char *value)
{
    struct record_meta m = {
        .kind = RECORD_VALUE, .flags = 0, .exptime = 0, .cas = 5, .ts = 5,
        .sid = 1};
    uint8_t env[RECORD_HEADER_MAX];
    uint8_t buf[512];
    size_t elen = record_encode(&m, env);
    size_t vlen = strlen(value);
    uint8_t *p = logrec_begin(buf, LOGREC_PUT, 1, key, strlen(key),
                              elen + vlen);
    memcpy(p, env, elen);
    memcpy(p + elen, value, vlen);
    uint64_t lsn = 0;
    ck_assert_int_eq(ulog_append(u, -1, buf, logrec_size(strlen(key),
                                                         elen + vlen),
                                 1, &lsn),
                     ULOG_OK);
    return lsn;
}

/* Polls for `ms` and fails if `lsn` becomes durable meanwhile. */
static bool
_stays_pending(struct ulog *u, uint64_t lsn, int ms)
{
    uint64_t deadline = util_mono_ms() + (uint64_t)ms;
    while (util_mono_ms() < deadline) {
        if (ulog_durable(u, lsn)) {
            return false;
        }
        usleep(1000);
    }
    return !ulog_durable(u, lsn);
}

static void
_count_call(void *arg)
{
    atomic_fetch_add((_Atomic int *)arg, 1);
}

static int
_calls_within(_Atomic int *calls, int want, int ms)
{
    uint64_t deadline = util_mono_ms() + (uint64_t)ms;
    while (atomic_load(calls) < want && util_mono_ms() < deadline) {
        usleep(1000);
    }
    return atomic_load(calls);
}

static struct ulog_stats
_stats(struct ulog *u)
{
    struct ulog_stats st;
    ulog_stats(u, &st);
    return st;
}

START_TEST(test_u10_release_rule)
{
    /* "always": only the local sync releases. */
    ck_assert_uint_eq(ulog_release_lsn(ULOG_FSYNC_ALWAYS, 10, 5, 9, true), 5);
    ck_assert_uint_eq(ulog_release_lsn(ULOG_FSYNC_ALWAYS, 10, 5, 9, false),
                      5);
    /* "peer", linked: only the peer's report (U10), even when the local
     * sync is further: an answered write is on both machines. */
    ck_assert_uint_eq(ulog_release_lsn(ULOG_FSYNC_PEER, 10, 5, 9, false), 9);
    ck_assert_uint_eq(ulog_release_lsn(ULOG_FSYNC_PEER, 10, 9, 5, false), 5);
    ck_assert_uint_eq(ulog_release_lsn(ULOG_FSYNC_PEER, 10, 10, 0, false), 0);
    /* Fallback or stall (U11): whichever copy is further. */
    ck_assert_uint_eq(ulog_release_lsn(ULOG_FSYNC_PEER, 10, 9, 5, true), 9);
    ck_assert_uint_eq(ulog_release_lsn(ULOG_FSYNC_PEER, 10, 5, 9, true), 9);
    ck_assert_uint_eq(ulog_release_lsn(ULOG_FSYNC_PEER, 10, 0, 0, true), 0);
    /* Never past the end, whatever a peer says. */
    ck_assert_uint_eq(ulog_release_lsn(ULOG_FSYNC_PEER, 10, 5, 15, false),
                      10);
    ck_assert_uint_eq(ulog_release_lsn(ULOG_FSYNC_PEER, 10, 5, 15, true), 10);
    /* The others promise nothing past write(2). */
    ck_assert_uint_eq(ulog_release_lsn(ULOG_FSYNC_INTERVAL, 10, 5, 0, false),
                      10);
    ck_assert_uint_eq(ulog_release_lsn(ULOG_FSYNC_NEVER, 10, 0, 0, true), 10);
}
END_TEST

START_TEST(test_u11_sync_on_demand_rule)
{
    ck_assert(ulog_sync_on_demand(ULOG_FSYNC_ALWAYS, 0));
    ck_assert(ulog_sync_on_demand(ULOG_FSYNC_ALWAYS, 1));
    ck_assert(ulog_sync_on_demand(ULOG_FSYNC_PEER, 0)); /* the fallback */
    ck_assert(!ulog_sync_on_demand(ULOG_FSYNC_PEER, 1));
    ck_assert(!ulog_sync_on_demand(ULOG_FSYNC_PEER, 2));
    ck_assert(!ulog_sync_on_demand(ULOG_FSYNC_INTERVAL, 0));
    ck_assert(!ulog_sync_on_demand(ULOG_FSYNC_NEVER, 0));
}
END_TEST

/* The policy's state walked through a pair's life with no log: every
 * input a position or a time (ulog_peer.h). */
START_TEST(test_u10_u11_policy_is_a_function_of_positions)
{
    const enum ulog_fsync P = ULOG_FSYNC_PEER;
    struct ulog_peer p;
    struct ulog_peer_change ch;
    ulog_peer_init(&p, 100);
    ck_assert_uint_eq(p.released, 100);
    ck_assert_uint_eq(ulog_peer_live(&p), 0);

    /* No peer: a waiter needs the sync thread, and our sync releases. */
    ck_assert(ulog_peer_waiting(&p, P, 110, 1000));
    ck_assert(ulog_peer_refresh(&p, P, 110, 105, 1001));
    ck_assert_uint_eq(p.released, 105);
    ck_assert(!ulog_peer_refresh(&p, P, 110, 104, 1002)); /* never back */

    /* A peer links: our sync no longer releases, its reports do. */
    ulog_peer_linked(&p, P, true, 110, 105, 1003, &ch);
    ck_assert(ch.linked && !ch.released && !ch.fell_back);
    ck_assert_uint_eq(ulog_peer_live(&p), 1);
    ck_assert(!ulog_peer_refresh(&p, P, 120, 120, 1004));
    ulog_peer_report(&p, P, 118, 120, 120, 1005, &ch);
    ck_assert(ch.released && !ch.wake_sync);
    ck_assert_uint_eq(p.released, 118);
    /* A report past the end counts as the end (U10). */
    ulog_peer_report(&p, P, 500, 121, 120, 1006, &ch);
    ck_assert(ch.released);
    ck_assert_uint_eq(p.released, 121);
    ck_assert_uint_eq(p.written, 121);

    /* A waiter starts the stall clock once; after fsync_ms of silence
     * the stall begins and what is synced here goes (U11). */
    ulog_peer_idle(&p);
    ck_assert(ulog_peer_waiting(&p, P, 130, 2000));
    ck_assert(!ulog_peer_waiting(&p, P, 131, 2001));
    ck_assert_uint_eq(ulog_peer_check_stall(&p, P, 100, 131, 125, 2050, &ch),
                      50);
    ck_assert(!ch.stalled);
    ck_assert_uint_eq(ulog_peer_check_stall(&p, P, 100, 131, 125, 2100, &ch),
                      UINT64_MAX);
    ck_assert(ch.stalled && ch.released);
    ck_assert_uint_eq(p.released, 125);
    ck_assert_uint_eq(p.stalls, 1);
    ck_assert_uint_eq(ulog_peer_live(&p), 0);
    ck_assert(ulog_peer_waiting(&p, P, 131, 2101)); /* synced as "always" */

    /* The next report ends the stall and wakes the sync thread. */
    ulog_peer_report(&p, P, 131, 131, 125, 2200, &ch);
    ck_assert(ch.wake_sync && ch.released && !p.stalled);
    ck_assert_uint_eq(p.released, 131);

    /* The last peer goes: a fallback, counted, and the sync thread woken;
     * our synced records go at once. */
    ulog_peer_linked(&p, P, false, 140, 135, 2300, &ch);
    ck_assert(ch.fell_back && ch.wake_sync && ch.released);
    ck_assert_uint_eq(p.fallbacks, 1);
    ck_assert_uint_eq(p.released, 135);

    /* Other policies leave the state alone. */
    ulog_peer_report(&p, ULOG_FSYNC_ALWAYS, 150, 150, 150, 2400, &ch);
    ck_assert(!ch.released);
    ck_assert(!ulog_peer_refresh(&p, ULOG_FSYNC_ALWAYS, 150, 150, 2401));
    ck_assert_uint_eq(p.released, 135);
}
END_TEST

START_TEST(test_parse_peer)
{
    enum ulog_fsync p;
    uint32_t ms = 0;
    ck_assert(ulog_parse_fsync("peer", &p, &ms) && p == ULOG_FSYNC_PEER &&
              ms == ULOG_PEER_SYNC_MS && ms == 100);
    ck_assert(ulog_parse_fsync("peer,250", &p, &ms) && p == ULOG_FSYNC_PEER &&
              ms == 250);
    ck_assert(!ulog_parse_fsync("peer,0", &p, &ms));
    ck_assert(!ulog_parse_fsync("peer,", &p, &ms));
    ck_assert(!ulog_parse_fsync("peer,60001", &p, &ms));
    ck_assert(!ulog_parse_fsync("peer,1x", &p, &ms));
    ck_assert(!ulog_parse_fsync("peers", &p, &ms));
    ck_assert(!ulog_parse_fsync("peer 5", &p, &ms));
}
END_TEST

/* U10: a linked peer's report releases a write no fdatasync covered. */
START_TEST(test_u10_peer_report_releases_without_sync)
{
    struct ulog *u = _open(ULOG_FSYNC_PEER, 60000); /* no beat in the test */
    _Atomic int calls = 0;
    int w = ulog_watch(u, _count_call, &calls);
    ck_assert_int_ge(w, 0);
    ck_assert_int_eq(ulog_start(u), 0);
    ulog_peer_link(u, 2, true);
    ck_assert(!_stats(u).peer_fallback);
    uint64_t syncs = _stats(u).syncs;

    uint64_t lsn = _append(u, "k", "v");
    ulog_want_sync(u, w, lsn);
    /* U11: linked, so no sync comes for it; only the report. */
    ck_assert(_stays_pending(u, lsn, 200));
    ck_assert_int_eq(atomic_load(&calls), 0);
    ulog_peer_written(u, lsn);
    ck_assert(ulog_durable(u, lsn));
    ck_assert_int_eq(_calls_within(&calls, 1, 5000), 1);
    struct ulog_stats st = _stats(u);
    ck_assert_uint_eq(st.syncs, syncs);
    ck_assert_uint_lt(st.fdatasynced_lsn, lsn);
    ck_assert_uint_eq(st.peer_lsn, lsn);
    ck_assert_uint_eq(st.synced_lsn, lsn);
    /* A standby must not take a peer's copy for its own disk. */
    ck_assert_uint_lt(ulog_local_durable_lsn(u), lsn);

    /* U10: a report past the end releases nothing appended later. */
    ulog_peer_written(u, lsn + 1000000000);
    uint64_t later = _append(u, "k", "w");
    ck_assert_uint_gt(later, lsn);
    ck_assert(!ulog_durable(u, later));
    ck_assert_uint_eq(ulog_durable_lsn(u), lsn);
    /* ... and the durable lsn never goes back. */
    ulog_peer_written(u, 1);
    ck_assert_uint_eq(ulog_durable_lsn(u), lsn);
    ulog_peer_written(u, later);
    ck_assert(ulog_durable(u, later));
    ulog_peer_link(u, 2, false);
    ulog_close(u);
}
END_TEST

/* U11: with no peer linked, every write waited on is synced at once. */
START_TEST(test_u11_fallback_syncs_waiters)
{
    struct ulog *u = _open(ULOG_FSYNC_PEER, 60000);
    _Atomic int calls = 0;
    int w = ulog_watch(u, _count_call, &calls);
    ck_assert_int_ge(w, 0);
    ck_assert_int_eq(ulog_start(u), 0);
    struct ulog_stats st = _stats(u);
    ck_assert(st.peer_fallback);
    ck_assert_uint_eq(st.peers_live, 0);
    ck_assert_int_eq(st.policy, ULOG_FSYNC_PEER);

    uint64_t lsn = _append(u, "a", "1");
    ulog_want_sync(u, w, lsn);
    ck_assert_int_eq(_calls_within(&calls, 1, 5000), 1);
    ck_assert_uint_ge(_stats(u).fdatasynced_lsn, lsn);
    ck_assert_uint_ge(ulog_local_durable_lsn(u), lsn);
    /* ulog_wait_durable() too. */
    lsn = _append(u, "a", "2");
    ck_assert_int_eq(ulog_wait_durable(u, lsn), ULOG_OK);
    ck_assert_uint_ge(_stats(u).fdatasynced_lsn, lsn);

    /* Linked: a waiter is left to the peer... */
    ulog_peer_link(u, 2, true);
    ck_assert(!_stats(u).peer_fallback);
    lsn = _append(u, "a", "3");
    ulog_want_sync(u, w, lsn);
    ck_assert(_stays_pending(u, lsn, 200));
    /* ...and when the last peer goes, synced after all. */
    ulog_peer_link(u, 2, false);
    ck_assert_int_eq(_calls_within(&calls, 2, 5000), 2);
    ck_assert_uint_ge(_stats(u).fdatasynced_lsn, lsn);
    st = _stats(u);
    ck_assert(st.peer_fallback);
    ck_assert_uint_eq(st.peer_fallbacks, 1);

    /* Two peers: the fallback begins only when both are gone. */
    ulog_peer_link(u, 2, true);
    ulog_peer_link(u, 3, true);
    ulog_peer_link(u, 2, false);
    ck_assert(!_stats(u).peer_fallback);
    ck_assert_uint_eq(_stats(u).peers_live, 1);
    ulog_peer_link(u, 3, false);
    ck_assert(_stats(u).peer_fallback);
    ck_assert_uint_eq(_stats(u).peer_fallbacks, 2);
    ulog_close(u);
}
END_TEST

/* Polls until this disk holds `lsn` or `ms` pass. */
static bool
_synced_within(struct ulog *u, uint64_t lsn, int ms)
{
    uint64_t deadline = util_mono_ms() + (uint64_t)ms;
    while (ulog_local_durable_lsn(u) < lsn && util_mono_ms() < deadline) {
        usleep(1000);
    }
    return ulog_local_durable_lsn(u) >= lsn;
}

/*
 * U12: the beat syncs what is written while a peer is linked; U10: that
 * sync alone answers nobody while the peer is healthy.
 */
START_TEST(test_u12_beat_syncs_while_linked)
{
    struct ulog *u = _open(ULOG_FSYNC_PEER, 50);
    ck_assert_int_eq(ulog_start(u), 0);
    ulog_peer_link(u, 2, true);
    uint64_t lsn = _append(u, "b", "1");
    ck_assert(_synced_within(u, lsn, 5000));
    ck_assert_uint_ge(_stats(u).fdatasynced_lsn, lsn);
    ck_assert_uint_eq(_stats(u).peer_lsn, 0);
    ck_assert(!ulog_durable(u, lsn)); /* nobody waits: no stall either */
    ulog_peer_written(u, lsn);
    ck_assert(ulog_durable(u, lsn));
    ulog_peer_link(u, 2, false);
    ulog_close(u);
}
END_TEST

/*
 * U11: a linked peer that stops reporting holds a waiting client for
 * fsync_ms at most; then the write is synced here and answered, and the
 * next report ends the stall.
 */
START_TEST(test_u11_stalled_peer_answered_by_local_sync)
{
    struct ulog *u = _open(ULOG_FSYNC_PEER, 100);
    _Atomic int calls = 0;
    int w = ulog_watch(u, _count_call, &calls);
    ck_assert_int_ge(w, 0);
    ck_assert_int_eq(ulog_start(u), 0);
    ulog_peer_link(u, 2, true);
    uint64_t lsn = _append(u, "s", "1");
    ulog_want_sync(u, w, lsn);
    /* Not before fsync_ms has passed without a report. */
    ck_assert(_stays_pending(u, lsn, 50));
    ck_assert_int_eq(_calls_within(&calls, 1, 5000), 1);
    ck_assert(ulog_durable(u, lsn));
    ck_assert_uint_ge(_stats(u).fdatasynced_lsn, lsn);
    ck_assert_uint_eq(_stats(u).peer_stalls, 1);
    ck_assert_uint_eq(_stats(u).peer_fallbacks, 0);
    /* Back to the peer's reports. */
    ulog_peer_written(u, lsn);
    ck_assert(!_stats(u).peer_stalled);
    ck_assert(!_stats(u).peer_fallback);
    ulog_peer_link(u, 2, false);
    ulog_close(u);
}
END_TEST

/* Reports mean nothing under the other policies. */
START_TEST(test_u10_reports_ignored_under_always)
{
    struct ulog *u = _open(ULOG_FSYNC_ALWAYS, 0); /* no threads: no sync */
    uint64_t lsn = _append(u, "c", "1");
    ck_assert(!ulog_durable(u, lsn));
    ulog_peer_link(u, 2, true);
    ulog_peer_written(u, lsn);
    ck_assert(!ulog_durable(u, lsn));
    ck_assert_uint_eq(_stats(u).peer_lsn, 0);
    ck_assert(!_stats(u).peer_fallback);
    ulog_peer_link(u, 2, false);
    ck_assert_uint_eq(_stats(u).peer_fallbacks, 0);
    ulog_close(u);
}
END_TEST

/* R5's frame: a standby's report of what it has written. */
START_TEST(test_r4_wack_frame)
{
    uint8_t out[REPL_ACK_LEN];
    struct repl_frame f;
    ck_assert_uint_eq(repl_encode_ack_type(out, REPL_FRAME_WACK, 77, 9),
                      REPL_ACK_LEN);
    ck_assert_int_eq(repl_frame_decode(out, sizeof(out), &f), REPL_OK);
    ck_assert_int_eq(f.type, REPL_FRAME_WACK);
    ck_assert_uint_eq(f.lsn, 77);
    ck_assert_uint_eq(f.seq, 9);
    ck_assert_int_eq(repl_frame_decode(out, sizeof(out) - 1, &f), REPL_SHORT);
    /* The plain ACK is unchanged. */
    repl_encode_ack(out, 5, 6);
    ck_assert_int_eq(repl_frame_decode(out, sizeof(out), &f), REPL_OK);
    ck_assert_int_eq(f.type, REPL_FRAME_ACK);
    /* Only a master that asks gets WACKs. */
    ck_assert(repl_line_wants_wack("REPL OK 1 wack"));
    ck_assert(repl_line_wants_wack("REPL RESYNC 12 wack"));
    ck_assert(!repl_line_wants_wack("REPL OK 1"));
    ck_assert(!repl_line_wants_wack("REPL RESYNC 1"));
    ck_assert(!repl_line_wants_wack(" wack"));
}
END_TEST

static Suite *
ulog_peer_suite(void)
{
    Suite *s = suite_create("ulog_peer");
    TCase *tc = tcase_create("rules");
    tcase_add_test(tc, test_u10_release_rule);
    tcase_add_test(tc, test_u11_sync_on_demand_rule);
    tcase_add_test(tc, test_u10_u11_policy_is_a_function_of_positions);
    tcase_add_test(tc, test_parse_peer);
    tcase_add_test(tc, test_r4_wack_frame);
    suite_add_tcase(s, tc);
    tc = tcase_create("log");
    tcase_add_checked_fixture(tc, _setup, _teardown);
    tcase_add_test(tc, test_u10_peer_report_releases_without_sync);
    tcase_add_test(tc, test_u11_fallback_syncs_waiters);
    tcase_add_test(tc, test_u12_beat_syncs_while_linked);
    tcase_add_test(tc, test_u11_stalled_peer_answered_by_local_sync);
    tcase_add_test(tc, test_u10_reports_ignored_under_always);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(ulog_peer_suite)
