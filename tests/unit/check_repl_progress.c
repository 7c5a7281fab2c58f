/*
 * Unit tests: a standby's acknowledgeable position (repl_progress.h R8).
 * A master position is acknowledged only once the local commit holding
 * it is durable, in commit order; merged commits release late, never
 * early; the position never goes back, even when a new session resumes
 * below what still waits.
 */
#include <check.h>
#include <stdint.h>

#include "repl_progress.h"
#include "unit_main.h"

static struct repl_position
_at(uint64_t lsn, uint64_t seq)
{
    return (struct repl_position){lsn, seq};
}

START_TEST(test_r8_acknowledged_once_durable_here)
{
    struct repl_progress p;
    repl_progress_init(&p, _at(50, 5));
    repl_progress_commit(&p, 1000, _at(100, 10));
    repl_progress_commit(&p, 2000, _at(200, 20));
    repl_progress_commit(&p, 3000, _at(300, 30));

    /* Nothing durable yet: the -rts position stays. */
    struct repl_position d = repl_progress_durable(&p, 999);
    ck_assert_uint_eq(d.lsn, 50);
    ck_assert_uint_eq(d.seq, 5);
    /* Durable up to just short of the second commit. */
    d = repl_progress_durable(&p, 1999);
    ck_assert_uint_eq(d.lsn, 100);
    ck_assert_uint_eq(d.seq, 10);
    ck_assert_int_eq(p.nwait, 2);
    /* Past both others at once. */
    d = repl_progress_durable(&p, 5000);
    ck_assert_uint_eq(d.lsn, 300);
    ck_assert_uint_eq(d.seq, 30);
    ck_assert_int_eq(p.nwait, 0);
}
END_TEST

START_TEST(test_r8_merged_commits_release_late_never_early)
{
    struct repl_progress p;
    repl_progress_init(&p, _at(0, 0));
    /* More commits than are kept, none durable. */
    int n = REPL_PROGRESS_KEEP + 10;
    for (int i = 1; i <= n; i++) {
        repl_progress_commit(&p, (uint64_t)i * 10, _at((uint64_t)i * 100,
                                                       (uint64_t)i));
    }
    ck_assert_int_eq(p.nwait, REPL_PROGRESS_KEEP);
    /* The commits the merged entry covers start at KEEP: durable up to
     * any of them but the last, only the one before is acknowledged. */
    struct repl_position d =
        repl_progress_durable(&p, (uint64_t)(n - 1) * 10);
    ck_assert_uint_eq(d.lsn, (uint64_t)(REPL_PROGRESS_KEEP - 1) * 100);
    /* The last commit durable: everything. */
    d = repl_progress_durable(&p, (uint64_t)n * 10);
    ck_assert_uint_eq(d.lsn, (uint64_t)n * 100);
    ck_assert_uint_eq(d.seq, (uint64_t)n);
}
END_TEST

START_TEST(test_r8_position_never_goes_back)
{
    struct repl_progress p;
    repl_progress_init(&p, _at(100, 10));
    /* A session left a commit waiting; the next one resumed from the
     * acknowledged position and commits lower positions after it. */
    repl_progress_commit(&p, 1000, _at(500, 50));
    repl_progress_commit(&p, 1100, _at(200, 20));
    struct repl_position d = repl_progress_durable(&p, 1100);
    ck_assert_uint_eq(d.lsn, 500);
    ck_assert_uint_eq(d.seq, 50);
    /* A snapshot's end restarts seq at 0 with a later lsn: each part of
     * the position only moves forward. */
    repl_progress_commit(&p, 1200, _at(600, 0));
    d = repl_progress_durable(&p, 1200);
    ck_assert_uint_eq(d.lsn, 600);
    ck_assert_uint_eq(d.seq, 50);
}
END_TEST

START_TEST(test_r8_everything_durable_without_a_local_wait)
{
    struct repl_progress p;
    repl_progress_init(&p, _at(0, 0));
    /* No log, or -uas: durable once committed. */
    repl_progress_commit(&p, 0, _at(10, 1));
    repl_progress_commit(&p, 0, _at(20, 2));
    struct repl_position d = repl_progress_durable(&p, UINT64_MAX);
    ck_assert_uint_eq(d.lsn, 20);
    ck_assert_uint_eq(d.seq, 2);
}
END_TEST

static Suite *
repl_progress_suite(void)
{
    Suite *s = suite_create("repl_progress");
    TCase *tc = tcase_create("r8");
    tcase_add_test(tc, test_r8_acknowledged_once_durable_here);
    tcase_add_test(tc, test_r8_merged_commits_release_late_never_early);
    tcase_add_test(tc, test_r8_position_never_goes_back);
    tcase_add_test(tc, test_r8_everything_durable_without_a_local_wait);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(repl_progress_suite)
