/*
 * Integration tests: file system faults, on file systems mounted for the
 * test in a private mount namespace.
 *
 * Disk full: kurad runs with its database and update log on a small
 * tmpfs. Once a filler file takes the last free page,
 * writes must get "SERVER_ERROR out of disk space" on a connection that
 * stays open, nothing refused may appear (now or after a restart), every
 * acknowledged write must survive a kill -9, and writes must resume by
 * themselves once space returns. A refused write never reaches the log
 * either (txn.h T7: space is reserved before anything is logged).
 *
 * Read-only: an update log directory on a read-only file system stops
 * kurad at start with a clear error, before it serves anything.
 *
 * Needs root (mount namespaces and tmpfs); elsewhere the program reports
 * SKIP (exit 77).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "logrec.h"
#include "ulog.h"

#define TMPFS_SIZE "48m"
#define VALUE_LEN 4096
#define MAX_WRITES 40000

static struct kura_proc k;

static void
_mount_small_disk(void)
{
    kura_init(&k, (const char *const[]){"-ulim", "4m", NULL});
    ck_assert_msg(mount("tmpfs", k.dir, "tmpfs", 0, "size=" TMPFS_SIZE) == 0,
                  "mount tmpfs on %s: %s", k.dir, strerror(errno));
    ck_assert_int_eq(kura_launch(&k), 0);
}

/* Writes zeros to `path` until the file system is full. */
static void
_fill(const char *path)
{
    static const char zeros[65536];
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    for (;;) {
        ssize_t w = write(fd, zeros, sizeof(zeros));
        if (w < 0) {
            ck_assert_int_eq(errno, ENOSPC);
            break;
        }
        if ((size_t)w < sizeof(zeros)) {
            continue; /* the last few bytes: the next write says ENOSPC */
        }
    }
    close(fd);
}

/* Sends one set of `key`; returns 1 STORED, 0 out of space, -1 other. */
static int
_set(int fd, const char *key, char fill)
{
    static char req[VALUE_LEN + 128];
    int n = snprintf(req, sizeof(req), "set %s 0 0 %d\r\n", key, VALUE_LEN);
    memset(req + n, fill, VALUE_LEN);
    memcpy(req + n + VALUE_LEN, "\r\n", 2);
    char reply[128];
    if (kc_send(fd, req, (size_t)n + VALUE_LEN + 2) != 0 ||
        kc_read_until(fd, reply, sizeof(reply), "\r\n", 5000) < 0) {
        return -1;
    }
    if (strcmp(reply, "STORED\r\n") == 0) {
        return 1;
    }
    if (strcmp(reply, "SERVER_ERROR out of disk space\r\n") == 0) {
        return 0;
    }
    fprintf(stderr, "unexpected reply: %s", reply);
    return -1;
}

/* True if `key` holds VALUE_LEN bytes of `fill`; false if absent. */
static bool
_holds(int fd, const char *key, char fill)
{
    static char buf[VALUE_LEN + 256];
    char req[300];
    snprintf(req, sizeof(req), "get %s\r\n", key);
    ck_assert_int_eq(kc_sends(fd, req), 0);
    long n = kc_read_until(fd, buf, sizeof(buf), "END\r\n", 5000);
    ck_assert_int_gt(n, 0);
    if (strcmp(buf, "END\r\n") == 0) {
        return false;
    }
    char *value = strstr(buf, "\r\n");
    ck_assert_ptr_nonnull(value);
    value += 2;
    for (int i = 0; i < VALUE_LEN; i++) {
        ck_assert_int_eq(value[i], fill);
    }
    return true;
}

struct resume {
    int fd;
};

static bool
_accepts_writes(void *arg)
{
    struct resume *r = arg;
    return _set(r->fd, "after", 'a') == 1;
}

/*
 * T7: counts the records in the log under `dir` that name `key`; -1 if
 * the log cannot be read to its end. A refused write is never logged,
 * not even half-way: the space was reserved before anything was written.
 */
static int
_logged(const char *dir, const char *key)
{
    struct ulog_reader *r;
    char err[256];
    if (ulog_reader_open_dir(dir, 0, &r, err, sizeof(err)) != ULOG_OK) {
        fprintf(stderr, "open the log %s: %s\n", dir, err);
        return -1;
    }
    struct logrec rec;
    enum ulog_status st;
    int n = 0;
    size_t nkey = strlen(key);
    while ((st = ulog_reader_next(r, &rec, false)) == ULOG_OK) {
        n += rec.nkey == nkey && memcmp(rec.key, key, nkey) == 0;
    }
    ulog_reader_close(r);
    return st == ULOG_END ? n : -1;
}

START_TEST(test_disk_full_refuses_then_resumes)
{
    char key[64];
    char filler[600];
    static bool acked[MAX_WRITES];
    int refused_at = -1;

    _mount_small_disk();
    int fd = kc_connect(k.port);
    ck_assert(kc_check(fd, "set before 0 0 1\r\nb\r\n", "STORED\r\n"));
    snprintf(filler, sizeof(filler), "%s/filler", k.dir);
    _fill(filler);

    /* Writes go on into the space reserved ahead, then are refused. */
    int i;
    for (i = 0; i < MAX_WRITES; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        int r = _set(fd, key, (char)('a' + i % 26));
        ck_assert_int_ge(r, 0);
        acked[i] = r == 1;
        if (r == 0) {
            refused_at = i;
            break;
        }
    }
    ck_assert_msg(refused_at >= 0, "no write was refused on a full disk");
    /* Refused again, on the same connection; reads still served. */
    ck_assert_int_eq(_set(fd, "while-full", 'x'), 0);
    ck_assert(!_holds(fd, "while-full", 'x'));
    ck_assert(!_holds(fd, key, (char)('a' + refused_at % 26)));
    ck_assert(_holds(fd, "k0", 'a'));
    ck_assert(kc_check(fd, "get before\r\n", "VALUE before 0 1\r\nb\r\nEND\r\n"));

    /* Space returns: writes resume without a restart. */
    ck_assert_int_eq(unlink(filler), 0);
    struct resume r = {fd};
    ck_assert(harness_wait_for(_accepts_writes, &r, 5000));
    close(fd);

    /* Every acknowledged write survives kill -9; nothing refused appears. */
    kura_kill9(&k);
    ck_assert_int_eq(kura_launch(&k), 0);
    fd = kc_connect(k.port);
    for (int j = 0; j <= refused_at; j++) {
        snprintf(key, sizeof(key), "k%d", j);
        ck_assert_msg(_holds(fd, key, (char)('a' + j % 26)) == acked[j],
                      "%s: acknowledged %d but stored %d", key, acked[j],
                      !acked[j]);
    }
    ck_assert(!_holds(fd, "while-full", 'x'));
    ck_assert(_holds(fd, "after", 'a'));
    close(fd);
    ck_assert_int_eq(kura_stop(&k, 30000), 0);

    /* The log is whole: every record checks out. */
    char ulog[600];
    snprintf(ulog, sizeof(ulog), "%s/kura.ulog", k.dir);
    static struct harness_tool verify;
    ck_assert_int_eq(harness_tool_run(&verify,
                                      (const char *const[]){"ulog", "verify",
                                                            ulog, NULL},
                                      0, 60000),
                     0);
    /* T7: what was refused was never logged; the write accepted once space
     * returned was (older segments may have been removed: U5). */
    snprintf(key, sizeof(key), "k%d", refused_at);
    ck_assert_int_eq(_logged(ulog, key), 0);
    ck_assert_int_eq(_logged(ulog, "while-full"), 0);
    ck_assert_int_eq(_logged(ulog, "after"), 1);
    umount2(k.dir, MNT_DETACH);
    kura_cleanup(&k);
}
END_TEST

START_TEST(test_read_only_log_dir_stops_start)
{
    char ro[600];
    char ulog[700];
    char err[4096];
    char port[16];
    kura_init(&k, NULL);
    snprintf(ro, sizeof(ro), "%s/ro", k.dir);
    ck_assert_int_eq(mkdir(ro, 0755), 0);
    ck_assert_msg(mount("tmpfs", ro, "tmpfs", MS_RDONLY, "size=1m") == 0,
                  "mount: %s", strerror(errno));
    snprintf(ulog, sizeof(ulog), "%s/ulog", ro);
    snprintf(port, sizeof(port), "%d", k.port);
    const char *argv[] = {"kurad", "-port", port, "-ulog", ulog, k.db, NULL};
    int rc = harness_run(k.dir, argv, err, sizeof(err), 10000);
    ck_assert_int_eq(rc, 1);
    ck_assert_msg(strstr(err, "update log") != NULL &&
                  strstr(err, "Read-only file system") != NULL, "%s", err);
    /* Nothing was served and nothing half-created. */
    ck_assert_int_lt(kc_connect(k.port), 0);
    umount2(ro, MNT_DETACH);
    kura_cleanup(&k);
}
END_TEST

static Suite *
fsfaults_suite(void)
{
    Suite *s = suite_create("it_fsfaults");
    TCase *tc = tcase_create("fsfaults");
    tcase_add_test(tc, test_disk_full_refuses_then_resumes);
    tcase_add_test(tc, test_read_only_log_dir_stops_start);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    /* A private mount namespace: the tmpfs is seen only by this test and
     * the kurad it starts, and vanishes with them. */
    if (geteuid() != 0 || unshare(CLONE_NEWNS) != 0 ||
        mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
        printf("SKIP: needs root to mount a small tmpfs (%s)\n",
               geteuid() != 0 ? "not root" : strerror(errno));
        return 77;
    }
    SRunner *sr = srunner_create(fsfaults_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
