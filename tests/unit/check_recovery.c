/*
 * Unit tests: redo at start-up (recovery.h). A database that lacks what
 * the log holds after its checkpoint is brought up to date (ulog.h U4),
 * whatever it holds for the key (store.h D5), and replaying twice changes
 * nothing; redo starts after the checkpoint given; a damaged middle
 * segment and a removed one stop start-up with a reason instead of being
 * skipped (U1, U3 cuts only the last segment's tail).
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "engine_fixture.h"
#include "recovery.h"
#include "unit_main.h"

#define SEGMENT_MAX 4096 /* small, so that the log spans segments */

static struct engine_fixture fx;

static void
_setup(void)
{
    engine_fixture_setup(&fx);
    /* A peer that acknowledged nothing: closing keeps every segment. */
    fx.peers_acked = 0;
}

static void
_teardown(void)
{
    engine_fixture_teardown(&fx);
}

/* Writes `rounds` values to 8 keys, then deletes the last, through a
 * logged write path into db `name`. */
static void
_write_history(const char *name, int rounds)
{
    char key[32];
    char value[200];

    engine_fixture_open_store(&fx, name);
    engine_fixture_open_ulog(&fx, ULOG_FSYNC_NEVER, SEGMENT_MAX);
    engine_fixture_start(&fx);
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < 8; k++) {
            snprintf(key, sizeof(key), "key-%d", k);
            snprintf(value, sizeof(value), "r%d-k%d.%0160d", r, k, 0);
            engine_fixture_put(&fx, key, value, 0);
        }
    }
    engine_fixture_remove(&fx, "key-7");
}

/* Reopens the log and a database `name`, and starts the write path. */
static void
_restart(const char *name)
{
    engine_fixture_close(&fx);
    engine_fixture_open_store(&fx, name);
    engine_fixture_open_ulog(&fx, ULOG_FSYNC_NEVER, SEGMENT_MAX);
    engine_fixture_start(&fx);
}

static int
_redo(uint64_t from, struct recovery_result *res, char *err, size_t cap)
{
    err[0] = '\0';
    return recovery_redo(&fx.eng, fx.ulog, from, 4096, res, &fx.log, err,
                         cap);
}

/* The state `_write_history(rounds)` leaves, checked in the store. */
static void
_assert_history(int rounds)
{
    struct record_meta m;
    char v[256];
    char want[32];

    for (int k = 0; k < 7; k++) {
        char key[32];
        snprintf(key, sizeof(key), "key-%d", k);
        ck_assert_msg(engine_fixture_stored(&fx, key, &m, v, sizeof(v)),
                      "%s missing", key);
        ck_assert_int_eq(m.kind, RECORD_VALUE);
        snprintf(want, sizeof(want), "r%d-k%d.", rounds - 1, k);
        ck_assert_msg(strncmp(v, want, strlen(want)) == 0, "%s = %.20s", key,
                      v);
    }
    /* The delete is redone too: a tombstone (T6), not the last value. */
    ck_assert(engine_fixture_stored(&fx, "key-7", &m, v, sizeof(v)));
    ck_assert_int_eq(m.kind, RECORD_TOMBSTONE);
}

/* The log's last record: its lsn (a stamp) and its seq (dense, U1). */
static uint64_t
_last(uint64_t *seq)
{
    uint64_t lsn;
    uint64_t s;
    ulog_position(fx.ulog, &lsn, &s);
    if (seq != NULL) {
        *seq = s;
    }
    return lsn;
}

START_TEST(test_u4_redo_fills_a_database_that_lacks_the_log)
{
    struct recovery_result res;
    char err[256];

    _write_history("a.tch", 6);
    uint64_t records;
    (void)_last(&records);
    /* A database that saw none of it: the checkpoint was at 0. */
    _restart("empty.tch");
    ck_assert_int_eq(_redo(0, &res, err, sizeof(err)), 0);
    ck_assert_uint_eq(res.records, records);
    ck_assert_uint_eq(records, 6 * 8 + 1);
    _assert_history(6);
}
END_TEST

START_TEST(test_d5_redo_overrides_what_the_database_holds)
{
    struct recovery_result res;
    char err[256];

    _write_history("a.tch", 3);
    engine_fixture_close(&fx);
    /* The file then gained writes the log never saw, stamped later than
     * anything in it: what a torn or half-applied file can hold. Written
     * without the log, so only the database has them. */
    engine_fixture_open_store(&fx, "a.tch");
    engine_fixture_start(&fx);
    for (int k = 0; k < 8; k++) {
        char key[32];
        snprintf(key, sizeof(key), "key-%d", k);
        engine_fixture_put(&fx, key, "newer, but not logged", 0);
    }
    /* Redo replays the log over it whatever the stamps say: the log after
     * the checkpoint is the truth, so nothing survives from the file. */
    _restart("a.tch");
    ck_assert_int_eq(_redo(0, &res, err, sizeof(err)), 0);
    _assert_history(3);
}
END_TEST

START_TEST(test_redo_twice_changes_nothing)
{
    struct recovery_result one;
    struct recovery_result two;
    char err[256];

    _write_history("a.tch", 5);
    _restart("empty.tch");
    ck_assert_int_eq(_redo(0, &one, err, sizeof(err)), 0);
    _assert_history(5);
    /* A crash during or right after redo redoes it all again. */
    _restart("empty.tch");
    ck_assert_int_eq(_redo(0, &two, err, sizeof(err)), 0);
    ck_assert_uint_eq(one.records, two.records);
    _assert_history(5);
}
END_TEST

START_TEST(test_u4_redo_starts_after_the_checkpoint)
{
    struct recovery_result res;
    struct record_meta m;
    char err[256];
    char v[256];

    _write_history("a.tch", 2);
    uint64_t checkpoint_seq;
    uint64_t checkpoint = _last(&checkpoint_seq);
    engine_fixture_put(&fx, "after", "the checkpoint", 0);
    engine_fixture_put(&fx, "and", "one more", 0);
    uint64_t last_seq;
    (void)_last(&last_seq);
    _restart("empty.tch");
    ck_assert_int_eq(_redo(checkpoint, &res, err, sizeof(err)), 0);
    ck_assert_uint_eq(res.records, last_seq - checkpoint_seq);
    ck_assert_uint_eq(res.records, 2);
    ck_assert(engine_fixture_stored(&fx, "after", &m, v, sizeof(v)));
    ck_assert_str_eq(v, "the checkpoint");
    /* Nothing at or before the checkpoint was replayed. */
    ck_assert(!engine_fixture_stored(&fx, "key-0", &m, v, sizeof(v)));
    /* A clean stop checkpoints at the last record: nothing to redo. */
    ck_assert_int_eq(_redo(_last(NULL), &res, err, sizeof(err)), 0);
    ck_assert_uint_eq(res.records, 0);
}
END_TEST

START_TEST(test_u3_a_damaged_middle_segment_stops_redo)
{
    struct recovery_result res;
    char err[256];
    char path[128];

    _write_history("a.tch", 10);
    engine_fixture_close(&fx);
    /* Flip a byte inside the first record of the first segment. */
    engine_fixture_path(&fx, "ulog/00000001.ulog", path, sizeof(path));
    int fd = open(path, O_RDWR);
    ck_assert_int_ge(fd, 0);
    uint8_t byte;
    off_t at = ULOG_SEGMENT_HEADER + 30;
    ck_assert_int_eq(pread(fd, &byte, 1, at), 1);
    byte ^= 0x5a;
    ck_assert_int_eq(pwrite(fd, &byte, 1, at), 1);
    close(fd);
    /* Start-up repairs only the last segment's tail (U3): this damage is
     * found by redo, which refuses to skip it. */
    _restart("empty.tch");
    struct ulog_stats st;
    ulog_stats(fx.ulog, &st);
    ck_assert_uint_gt(st.segments, 2);
    ck_assert_int_eq(_redo(0, &res, err, sizeof(err)), -1);
    ck_assert_msg(strstr(err, "segment 00000001 is damaged") != NULL, "%s",
                  err);
    ck_assert_msg(strstr(err, "kura ulog verify") != NULL, "%s", err);
}
END_TEST

START_TEST(test_u1_a_removed_segment_is_a_gap_not_a_skip)
{
    struct recovery_result res;
    char err[256];
    char path[128];

    _write_history("a.tch", 10);
    engine_fixture_close(&fx);
    engine_fixture_path(&fx, "ulog/00000001.ulog", path, sizeof(path));
    ck_assert_int_eq(unlink(path), 0);
    _restart("empty.tch");
    ck_assert_int_eq(_redo(0, &res, err, sizeof(err)), -1);
    ck_assert_msg(strstr(err, "restore from a peer") != NULL, "%s", err);
    ck_assert_uint_eq(res.records, 0);
}
END_TEST

static Suite *
recovery_suite(void)
{
    Suite *s = suite_create("recovery");
    TCase *tc = tcase_create("redo");
    tcase_add_checked_fixture(tc, _setup, _teardown);
    tcase_add_test(tc, test_u4_redo_fills_a_database_that_lacks_the_log);
    tcase_add_test(tc, test_d5_redo_overrides_what_the_database_holds);
    tcase_add_test(tc, test_redo_twice_changes_nothing);
    tcase_add_test(tc, test_u4_redo_starts_after_the_checkpoint);
    tcase_add_test(tc, test_u3_a_damaged_middle_segment_stops_redo);
    tcase_add_test(tc, test_u1_a_removed_segment_is_a_gap_not_a_skip);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(recovery_suite)
