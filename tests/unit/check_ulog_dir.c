/*
 * Unit tests: ulog.h U8, every change to the update log's directory is
 * followed by an fsync of that directory before anything relies on it.
 *
 * This program is linked with the file system calls the log makes
 * wrapped (-Wl,--wrap=open,unlink,rename,mkdir,fsync): each wrapper
 * records what it did, then calls the real one. A directory changes when
 * a file is created in it (open with O_CREAT), removed, renamed into it,
 * or a directory is made in it; an fsync of a directory descriptor syncs
 * it. After every call into the log that returns (an append that rotated
 * into a new segment, a checkpoint that removed old ones), no change may
 * be left without a later sync of its directory.
 */
#include <check.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "logrec.h"
#include "record.h"
#include "ulog.h"
#include "ulog_fixture.h"
#include "unit_main.h"
#include "unit_tmpdir.h"

int __real_open(const char *path, int flags, ...);
int __real_unlink(const char *path);
int __real_rename(const char *from, const char *to);
int __real_mkdir(const char *path, mode_t mode);
int __real_fsync(int fd);
int __wrap_open(const char *path, int flags, ...);
int __wrap_unlink(const char *path);
int __wrap_rename(const char *from, const char *to);
int __wrap_mkdir(const char *path, mode_t mode);
int __wrap_fsync(int fd);

#define MAX_DIRS 16

/* Per directory: changes made and the last one a sync covered. */
static struct dir_state {
    char path[PATH_MAX];
    unsigned changes;
    unsigned synced;
} dirs[MAX_DIRS];
static int ndirs;
static pthread_mutex_t dirs_lock = PTHREAD_MUTEX_INITIALIZER;
static bool recording;

static struct dir_state *
_dir(const char *path)
{
    for (int i = 0; i < ndirs; i++) {
        if (strcmp(dirs[i].path, path) == 0) {
            return &dirs[i];
        }
    }
    ck_assert_int_lt(ndirs, MAX_DIRS);
    snprintf(dirs[ndirs].path, sizeof(dirs[ndirs].path), "%s", path);
    return &dirs[ndirs++];
}

/* A change to the directory holding `path`. */
static void
_changed(const char *path)
{
    char abs[PATH_MAX];
    char copy[PATH_MAX];
    snprintf(copy, sizeof(copy), "%s", path);
    if (realpath(dirname(copy), abs) == NULL) {
        return;
    }
    pthread_mutex_lock(&dirs_lock);
    if (recording) {
        _dir(abs)->changes++;
    }
    pthread_mutex_unlock(&dirs_lock);
}

int
__wrap_open(const char *path, int flags, ...)
{
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    struct stat st;
    bool existed = stat(path, &st) == 0;
    int fd = __real_open(path, flags, mode);
    if (fd >= 0 && (flags & O_CREAT) && !existed) {
        _changed(path);
    }
    return fd;
}

int
__wrap_unlink(const char *path)
{
    int rc = __real_unlink(path);
    if (rc == 0) {
        _changed(path);
    }
    return rc;
}

int
__wrap_rename(const char *from, const char *to)
{
    int rc = __real_rename(from, to);
    if (rc == 0) {
        _changed(to);
        _changed(from);
    }
    return rc;
}

int
__wrap_mkdir(const char *path, mode_t mode)
{
    int rc = __real_mkdir(path, mode);
    if (rc == 0) {
        _changed(path);
    }
    return rc;
}

int
__wrap_fsync(int fd)
{
    struct stat st;
    char link[64];
    char path[PATH_MAX];
    bool is_dir = fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
    ssize_t n = -1;
    if (is_dir) {
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        n = readlink(link, path, sizeof(path) - 1);
    }
    /* Every change made before the sync began is covered by it. */
    unsigned covered = 0;
    struct dir_state *d = NULL;
    if (n > 0) {
        path[n] = '\0';
        pthread_mutex_lock(&dirs_lock);
        if (recording) {
            d = _dir(path);
            covered = d->changes;
        }
        pthread_mutex_unlock(&dirs_lock);
    }
    int rc = __real_fsync(fd);
    if (rc == 0 && d != NULL) {
        pthread_mutex_lock(&dirs_lock);
        if (covered > d->synced) {
            d->synced = covered;
        }
        pthread_mutex_unlock(&dirs_lock);
    }
    return rc;
}

/* ------------------------------------------------------------------ */

static struct ulog_fixture fx;

static void
_setup(void)
{
    ulog_fixture_setup(&fx, "check_ulog_dir");
    pthread_mutex_lock(&dirs_lock);
    ndirs = 0;
    recording = true;
    pthread_mutex_unlock(&dirs_lock);
}

static void
_teardown(void)
{
    pthread_mutex_lock(&dirs_lock);
    recording = false;
    pthread_mutex_unlock(&dirs_lock);
    ulog_fixture_teardown(&fx);
}

/* U8: every directory that changed has been synced since; returns how
 * many changes were seen in all, so a test can tell it saw some. */
static unsigned
_all_synced(const char *when)
{
    unsigned total = 0;
    pthread_mutex_lock(&dirs_lock);
    for (int i = 0; i < ndirs; i++) {
        total += dirs[i].changes;
        ck_assert_msg(dirs[i].synced == dirs[i].changes,
                      "U8 %s: %s changed %u times, synced through %u", when,
                      dirs[i].path, dirs[i].changes, dirs[i].synced);
    }
    pthread_mutex_unlock(&dirs_lock);
    return total;
}

static uint64_t
_acked_nothing(void *arg)
{
    (void)arg;
    return 0; /* a peer holds nothing: -ukeep alone removes segments */
}

static struct ulog *
_open(struct ulog_recovery *rec)
{
    struct ulog_options o;
    ulog_fixture_options(&fx, &o, ULOG_FSYNC_NEVER, 2048);
    o.keep_segments = 2;
    o.peers_acked = _acked_nothing;
    return ulog_fixture_open(&o, rec);
}

static uint64_t
_append(struct ulog *u, int i)
{
    struct record_meta m = {.kind = RECORD_VALUE, .cas = 5, .ts = 5,
                            .sid = 1};
    uint8_t env[RECORD_HEADER_MAX];
    uint8_t buf[256];
    char key[32];
    size_t elen = record_encode(&m, env);
    int nkey = snprintf(key, sizeof(key), "k%d", i);
    uint8_t *p = logrec_begin(buf, LOGREC_PUT, 1, key, (size_t)nkey,
                              elen + 10);
    memcpy(p, env, elen);
    memcpy(p + elen, "0123456789", 10);
    uint64_t lsn = 0;
    ck_assert_int_eq(ulog_append(u, -1, buf,
                                 logrec_size((size_t)nkey, elen + 10), 1,
                                 &lsn),
                     ULOG_OK);
    return lsn;
}

START_TEST(test_u8_new_log_directory_synced)
{
    struct ulog_recovery rec;
    struct ulog *u = _open(&rec);
    /* The log's directory was made, its first segment created. */
    ck_assert_uint_ge(_all_synced("after open"), 2);
    ulog_close(u);
}
END_TEST

START_TEST(test_u8_rotation_synced_before_the_append_returns)
{
    struct ulog_recovery rec;
    struct ulog *u = _open(&rec);
    unsigned seen = _all_synced("after open");
    struct ulog_stats st;
    uint32_t segments = 1;
    for (int i = 0; i < 400; i++) {
        _append(u, i);
        ulog_stats(u, &st);
        if (st.segments != segments) {
            /* A new segment: its entry is durable before the append
             * that went into it returned. */
            segments = st.segments;
            _all_synced("after a rotation");
        }
    }
    ck_assert_uint_gt(segments, 3);
    ck_assert_uint_gt(_all_synced("after the appends"), seen);
    ulog_close(u);
}
END_TEST

START_TEST(test_u8_checkpoint_and_removals_synced)
{
    struct ulog_recovery rec;
    struct ulog *u = _open(&rec);
    for (int i = 0; i < 400; i++) {
        _append(u, i);
    }
    struct ulog_stats st;
    ulog_stats(u, &st);
    uint32_t before = st.segments;
    unsigned seen = _all_synced("before the checkpoint");
    ck_assert_int_eq(ulog_checkpoint(u), ULOG_OK);
    ulog_stats(u, &st);
    ck_assert_uint_lt(st.segments, before); /* segments were removed */
    /* The checkpoint file replaced and the segments removed: synced. */
    ck_assert_uint_gt(_all_synced("after the checkpoint"), seen);
    ulog_close(u);
    /* Reopened, the checkpoint is the one written. */
    u = _open(&rec);
    ck_assert_uint_eq(rec.checkpoint_lsn, st.checkpoint_lsn);
    _all_synced("after reopening");
    ulog_close(u);
}
END_TEST

static Suite *
_suite(void)
{
    Suite *s = suite_create("ulog_dir");
    TCase *tc = tcase_create("u8");
    tcase_add_checked_fixture(tc, _setup, _teardown);
    tcase_add_test(tc, test_u8_new_log_directory_synced);
    tcase_add_test(tc, test_u8_rotation_synced_before_the_append_returns);
    tcase_add_test(tc, test_u8_checkpoint_and_removals_synced);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(_suite)
