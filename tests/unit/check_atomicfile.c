/*
 * Unit tests: atomicfile, the replace-never-rewrite state files (flush
 * point, checkpoints, replication timestamps). What a reader sees after a
 * replacement, after a failed one, and around a temp file left by a crash.
 * The write order across a power cut (temp fsync, rename, directory fsync)
 * is proved by tests/powercut, which cuts power between those steps.
 */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomicfile.h"
#include "unit_main.h"
#include "unit_tmpdir.h"

static char dir[UNIT_TMPDIR_MAX];

static void
_setup(void)
{
    unit_tmpdir_make(dir, sizeof(dir), "check_atomicfile");
}

static void
_teardown(void)
{
    unit_tmpdir_remove(dir);
}

static void
_path(char *out, size_t cap, const char *name)
{
    ck_assert_int_lt(snprintf(out, cap, "%s/%s", dir, name), (int)cap);
}

static void
_put_raw(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fputs(text, f) >= 0, 1);
    ck_assert_int_eq(fclose(f), 0);
}

static void
_assert_contents(const char *path, const char *want)
{
    char buf[256];

    ck_assert_int_eq(atomicfile_read(path, buf, sizeof(buf)),
                     (long)strlen(want));
    ck_assert_str_eq(buf, want);
}

static bool
_exists(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0;
}

START_TEST(test_write_then_read)
{
    char path[PATH_MAX];

    _path(path, sizeof(path), "rts");
    ck_assert_int_eq(atomicfile_write(path, "1795314340587071\n", 17), 0);
    _assert_contents(path, "1795314340587071\n");
}
END_TEST

/* A shorter value replaces the whole file: no tail of the old is left. */
START_TEST(test_shorter_replacement_leaves_no_tail)
{
    char path[PATH_MAX];

    _path(path, sizeof(path), "flushpoint");
    ck_assert_int_eq(atomicfile_write(path, "123456789", 9), 0);
    ck_assert_int_eq(atomicfile_write(path, "42", 2), 0);
    _assert_contents(path, "42");
}
END_TEST

/*
 * A crash between writing "<path>.tmp" and the rename leaves the temp file
 * behind: readers ignore it and the next write replaces it whole, even
 * when it was longer than the new contents.
 */
START_TEST(test_leftover_temp_is_ignored_then_replaced)
{
    char path[PATH_MAX];
    char tmp[PATH_MAX + 8];

    _path(path, sizeof(path), "checkpoint");
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    ck_assert_int_eq(atomicfile_write(path, "old", 3), 0);
    _put_raw(tmp, "half-written contents of a crashed replacement");
    _assert_contents(path, "old");

    ck_assert_int_eq(atomicfile_write(path, "new", 3), 0);
    _assert_contents(path, "new");
    ck_assert(!_exists(tmp));
}
END_TEST

/* A failed rename keeps the old file and removes the temp file. */
START_TEST(test_failed_rename_keeps_the_old_file)
{
    char path[PATH_MAX];
    char inner[PATH_MAX + 8];
    char tmp[PATH_MAX + 8];

    /* rename() of a file over a non-empty directory fails (EISDIR). */
    _path(path, sizeof(path), "state");
    ck_assert_int_eq(mkdir(path, 0755), 0);
    snprintf(inner, sizeof(inner), "%s/keep", path);
    _put_raw(inner, "kept");
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);

    errno = 0;
    ck_assert_int_eq(atomicfile_write(path, "new", 3), -1);
    ck_assert_int_ne(errno, 0);
    ck_assert(!_exists(tmp));
    _assert_contents(inner, "kept");
}
END_TEST

START_TEST(test_missing_directory_fails_with_enoent)
{
    char path[PATH_MAX];

    _path(path, sizeof(path), "no-such-dir/rts");
    errno = 0;
    ck_assert_int_eq(atomicfile_write(path, "x", 1), -1);
    ck_assert_int_eq(errno, ENOENT);
    errno = 0;
    ck_assert_int_eq(atomicfile_sync_dir(path), -1);
    ck_assert_int_eq(errno, ENOENT);
}
END_TEST

START_TEST(test_read_missing_file_is_enoent)
{
    char path[PATH_MAX];
    char buf[16];

    _path(path, sizeof(path), "absent");
    errno = 0;
    ck_assert_int_eq(atomicfile_read(path, buf, sizeof(buf)), -1);
    ck_assert_int_eq(errno, ENOENT);
}
END_TEST

/* A buffer smaller than the file gets its first cap - 1 bytes and a NUL. */
START_TEST(test_read_is_bounded_by_the_buffer)
{
    char path[PATH_MAX];
    char buf[5];

    _path(path, sizeof(path), "long");
    ck_assert_int_eq(atomicfile_write(path, "0123456789", 10), 0);
    memset(buf, 'X', sizeof(buf));
    ck_assert_int_eq(atomicfile_read(path, buf, sizeof(buf)), 4);
    ck_assert_str_eq(buf, "0123");
}
END_TEST

START_TEST(test_empty_contents)
{
    char path[PATH_MAX];

    _path(path, sizeof(path), "empty");
    ck_assert_int_eq(atomicfile_write(path, "", 0), 0);
    _assert_contents(path, "");
}
END_TEST

/* A path whose "<path>.tmp" would not fit PATH_MAX is refused untouched. */
START_TEST(test_overlong_path_is_refused)
{
    char path[PATH_MAX];

    memset(path, 'a', sizeof(path) - 3);
    path[0] = '/';
    path[sizeof(path) - 3] = '\0';
    errno = 0;
    ck_assert_int_eq(atomicfile_write(path, "x", 1), -1);
    ck_assert_int_eq(errno, ENAMETOOLONG);
}
END_TEST

static Suite *
atomicfile_suite(void)
{
    Suite *s = suite_create("atomicfile");
    TCase *tc = tcase_create("atomicfile");

    tcase_add_checked_fixture(tc, _setup, _teardown);
    tcase_add_test(tc, test_write_then_read);
    tcase_add_test(tc, test_shorter_replacement_leaves_no_tail);
    tcase_add_test(tc, test_leftover_temp_is_ignored_then_replaced);
    tcase_add_test(tc, test_failed_rename_keeps_the_old_file);
    tcase_add_test(tc, test_missing_directory_fails_with_enoent);
    tcase_add_test(tc, test_read_missing_file_is_enoent);
    tcase_add_test(tc, test_read_is_bounded_by_the_buffer);
    tcase_add_test(tc, test_empty_contents);
    tcase_add_test(tc, test_overlong_path_is_refused);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(atomicfile_suite)
