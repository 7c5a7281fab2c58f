/*
 * Unit tests: the update log leaves its synced pages out of the page
 * cache (ulog_internal.h, ULOG_DROP_BEHIND). Residency is read with
 * mincore() on a mapping of the segment, after a probe shows that the
 * file system here drops a synced file's pages when asked (tmpfs keeps
 * them: there the test is skipped).
 */
#include <check.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "logrec.h"
#include "record.h"
#include "ulog.h"
#include "ulog_fixture.h"
#include "ulog_internal.h"
#include "unit_main.h"
#include "unit_tmpdir.h"
#include "util.h"

static struct ulog_fixture fx;

static void
_setup(void)
{
    ulog_fixture_setup(&fx, "check_ulog_cache");
}

static void
_teardown(void)
{
    ulog_fixture_teardown(&fx);
}

static struct ulog *
_open_always(void)
{
    struct ulog_options o;
    ulog_fixture_options(&fx, &o, ULOG_FSYNC_ALWAYS, (uint64_t)64 << 20);
    return ulog_fixture_open(&o, NULL);
}

/* Resident pages of `path` in [from, to), or -1 if it cannot tell. */
static long
_resident(const char *path, size_t from, size_t to)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        return -1;
    }
    long page = sysconf(_SC_PAGESIZE);
    void *map = mmap(NULL, to, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        return -1;
    }
    size_t first = from / (size_t)page;
    size_t pages = (to + (size_t)page - 1) / (size_t)page;
    unsigned char *vec = malloc(pages);
    long n = -1;
    if (vec != NULL && mincore(map, to, vec) == 0) {
        n = 0;
        for (size_t i = first; i < pages; i++) {
            n += vec[i] & 1;
        }
    }
    free(vec);
    munmap(map, to);
    return n;
}

/* Whether this file system drops a synced file's pages on
 * POSIX_FADV_DONTNEED. */
static bool
_drops_pages(void)
{
    char path[UNIT_TMPDIR_MAX + 16];
    unit_tmpdir_path(path, sizeof(path), fx.dir, "probe");
    int fd = open(path, O_CREAT | O_RDWR, 0600);
    ck_assert_int_ge(fd, 0);
    static char block[1 << 16];
    memset(block, 'p', sizeof(block));
    ck_assert_int_eq(write(fd, block, sizeof(block)), (ssize_t)sizeof(block));
    ck_assert_int_eq(fdatasync(fd), 0);
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
    return _resident(path, 0, sizeof(block)) == 0;
}

/* Appends records of about 4 KiB until `bytes` have gone into the log,
 * each one durable before the next (as a client waiting on its set). */
static void
_fill(struct ulog *u, uint64_t bytes)
{
    static uint8_t buf[8192];
    char value[4000];
    memset(value, 'v', sizeof(value));
    struct record_meta m = {.kind = RECORD_VALUE, .cas = 1, .ts = 1,
                            .sid = 1};
    uint8_t env[RECORD_HEADER_MAX];
    size_t elen = record_encode(&m, env);
    char key[32];
    uint64_t written = 0;
    for (int i = 0; written < bytes; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        uint8_t *p = logrec_begin(buf, LOGREC_PUT, 1, key, strlen(key),
                                  elen + sizeof(value));
        memcpy(p, env, elen);
        memcpy(p + elen, value, sizeof(value));
        size_t n = logrec_size(strlen(key), elen + sizeof(value));
        uint64_t lsn = 0;
        ck_assert_int_eq(ulog_append(u, -1, buf, n, 1, &lsn), ULOG_OK);
        ck_assert_int_eq(ulog_wait_durable(u, lsn), ULOG_OK);
        written += n;
    }
}

/* Polls, for up to 5 s (the sync thread wakes every 0.1 s), until no
 * page of `path` before `to` is cached; returns those left. */
static long
_wait_uncached(const char *path, size_t to)
{
    long left = -1;
    for (int i = 0; i < 500; i++) {
        left = _resident(path, 0, to);
        if (left == 0) {
            break;
        }
        usleep(10000);
    }
    return left;
}

/*
 * 16 MiB of synced records: within a deadline, the sync thread drops the
 * pages more than ULOG_DROP_BEHIND (4 MiB) behind, and keeps the last
 * 4 MiB, which a reader close behind the writes uses.
 */
START_TEST(test_synced_pages_leave_the_cache)
{
    if (!_drops_pages()) {
        fprintf(stderr, "check_ulog_cache: this file system keeps pages "
                "after POSIX_FADV_DONTNEED; skipped\n");
        return;
    }
    struct ulog *u = _open_always();
    ck_assert_int_eq(ulog_start(u), 0);
    const uint64_t total = (uint64_t)16 << 20;
    _fill(u, total);
    char seg[UNIT_TMPDIR_MAX + 32];
    snprintf(seg, sizeof(seg), "%s/ulog/%08d.ulog", fx.dir, 1);
    /* The sync thread's last drop for these 16 MiB reaches 12 MiB. Wait
     * for that one, not an earlier one: a drop still to come would also
     * take the pages the reader below brings back. */
    const size_t behind = (size_t)((total - ULOG_DROP_BEHIND) /
                                   ULOG_DROP_STEP * ULOG_DROP_STEP);
    long left = _wait_uncached(seg, behind);
    ck_assert_msg(left == 0, "%ld pages of the first %zu MiB still cached",
                  left, behind >> 20);
    long page = sysconf(_SC_PAGESIZE);
    long tail = _resident(seg, total - ((size_t)2 << 20), total);
    ck_assert_msg(tail == ((long)2 << 20) / page,
                  "the last 2 MiB written: %ld of %ld pages cached", tail,
                  ((long)2 << 20) / page);

    /* A reader far behind (a lagging sender) brings its pages back; they
     * go again once the log has moved on. */
    const size_t back = (size_t)1 << 20;
    static char chunk[1 << 20];
    int fd = open(seg, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pread(fd, chunk, back, 0), (ssize_t)back);
    close(fd);
    ck_assert_int_gt(_resident(seg, 0, back), 0);
    _fill(u, (uint64_t)2 << 20);
    left = _wait_uncached(seg, back);
    ck_assert_msg(left == 0, "%ld pages read back by a reader still cached",
                  left);
    ulog_close(u);
}
END_TEST

static Suite *
_suite(void)
{
    Suite *s = suite_create("ulog_cache");
    TCase *tc = tcase_create("drop");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, _setup, _teardown);
    tcase_add_test(tc, test_synced_pages_leave_the_cache);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(_suite)
