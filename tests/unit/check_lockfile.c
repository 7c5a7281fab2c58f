/*
 * Unit tests: lockfile, the flock()ed files that guard a database, an
 * update log and the pid file, and name their holder. A second taker is
 * refused with the holder's pid; a reader asks without writing; closing
 * the descriptor frees the lock for the next process.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lockfile.h"
#include "unit_main.h"
#include "unit_tmpdir.h"

static char dir[UNIT_TMPDIR_MAX];
static char path[UNIT_TMPDIR_MAX + 16];

static void
_setup(void)
{
    unit_tmpdir_make(dir, sizeof(dir), "check_lockfile");
    unit_tmpdir_path(path, sizeof(path), dir, "kura.tch.lock");
}

static void
_teardown(void)
{
    unit_tmpdir_remove(dir);
}

START_TEST(test_second_taker_is_told_the_holder)
{
    long holder = -1;
    int fd = lockfile_take(path, &holder);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(holder, 0);
    /* flock() locks belong to the open file, so a second open in this
     * process is refused like another process would be. */
    ck_assert_int_eq(lockfile_take(path, &holder), -1);
    ck_assert_int_eq(errno, EWOULDBLOCK);
    ck_assert_int_eq(holder, (long)getpid());
    ck_assert_int_eq(lockfile_held(path, &holder), 1);
    ck_assert_int_eq(holder, (long)getpid());
    close(fd);
    ck_assert_int_eq(lockfile_held(path, &holder), 0);
    fd = lockfile_take(path, &holder);
    ck_assert_int_ge(fd, 0);
    close(fd);
}
END_TEST

START_TEST(test_holder_named_after_a_fork)
{
    long holder;
    int fd = lockfile_open(path, &holder);
    ck_assert_int_ge(fd, 0);
    int ready[2];
    int done[2];
    ck_assert_int_eq(pipe(ready), 0);
    ck_assert_int_eq(pipe(done), 0);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        /* The lock is the open file's, so the child holds it too; it
         * names itself, as kurad does after daemonising. */
        char c = lockfile_name_holder(fd) == 0 ? 'y' : 'n';
        (void)!write(ready[1], &c, 1);
        (void)!read(done[0], &c, 1);
        _exit(0);
    }
    close(fd);
    char c;
    ck_assert_int_eq(read(ready[0], &c, 1), 1);
    ck_assert_int_eq(c, 'y');
    ck_assert_int_eq(lockfile_held(path, &holder), 1);
    ck_assert_int_eq(holder, (long)child);
    ck_assert_int_eq(lockfile_take(path, &holder), -1);
    ck_assert_int_eq(holder, (long)child);
    ck_assert_int_eq(write(done[1], "x", 1), 1);
    int status;
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    ck_assert_int_eq(lockfile_held(path, &holder), 0);
    close(ready[0]);
    close(ready[1]);
    close(done[0]);
    close(done[1]);
}
END_TEST

START_TEST(test_asking_needs_no_write_access)
{
    long holder;
    ck_assert_int_eq(lockfile_held(path, &holder), 0); /* no file yet */
    int fd = lockfile_take(path, &holder);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(chmod(path, 0444), 0);
    ck_assert_int_eq(lockfile_held(path, &holder), 1);
    close(fd);
    ck_assert_int_eq(lockfile_held(path, &holder), 0);
}
END_TEST

START_TEST(test_unopenable_path_is_an_error)
{
    char bad[UNIT_TMPDIR_MAX + 32];
    long holder = -1;
    unit_tmpdir_path(bad, sizeof(bad), dir, "missing/kura.lock");
    ck_assert_int_eq(lockfile_take(bad, &holder), -1);
    ck_assert_int_eq(errno, ENOENT);
    ck_assert_int_eq(holder, 0);
}
END_TEST

static Suite *
_suite(void)
{
    Suite *s = suite_create("lockfile");
    TCase *tc = tcase_create("lockfile");
    tcase_add_checked_fixture(tc, _setup, _teardown);
    tcase_add_test(tc, test_second_taker_is_told_the_holder);
    tcase_add_test(tc, test_holder_named_after_a_fork);
    tcase_add_test(tc, test_asking_needs_no_write_access);
    tcase_add_test(tc, test_unopenable_path_is_an_error);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(_suite)
