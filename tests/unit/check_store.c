/*
 * Unit tests for store: the database file's marks tell a clean stop from
 * a crash (store.h D2), a crashed file is checked in full and rebuilt
 * when damaged (D4), a damaged file after a clean stop is refused, and
 * one process at a time opens a database.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record.h"
#include "store.h"
#include "tcfile.h"
#include "unit_main.h"
#include "unit_tmpdir.h"

static char dir[UNIT_TMPDIR_MAX];
static char path[UNIT_TMPDIR_MAX + 32];
static struct dbspec spec;

static void
_setup(void)
{
    char err[256];
    unit_tmpdir_make(dir, sizeof(dir), "check_store");
    unit_tmpdir_path(path, sizeof(path), dir, "db.tch");
    ck_assert(dbspec_parse(path, &spec, err, sizeof(err)));
}

static void
_teardown(void)
{
    unit_tmpdir_remove(dir);
}

static struct store *
_open(struct store_open_report *rep)
{
    char err[512];
    struct store *s = store_open(&spec, NULL, rep, err, sizeof(err));
    ck_assert_msg(s != NULL, "%s", err);
    return s;
}

static void
_put(struct store *s, const char *key, const char *value)
{
    uint8_t buf[256];
    struct record_meta m = {
        .kind = RECORD_VALUE, .flags = 0, .exptime = 0, .cas = 7, .ts = 7,
        .sid = 1};
    size_t n = record_encode(&m, buf);
    memcpy(buf + n, value, strlen(value));
    ck_assert_int_eq(store_put(s, key, strlen(key), buf, n + strlen(value)),
                     STORE_OK);
}

static bool
_has(struct store *s, const char *key)
{
    uint8_t scratch[256];
    struct store_value v;
    enum store_status st = store_get(s, key, strlen(key), scratch,
                                     sizeof(scratch), &v);
    store_value_release(&v);
    return st == STORE_OK;
}

static struct tcfile_kura
_marks(uint8_t *flags)
{
    struct tcfile f;
    char why[160];
    struct tcfile_kura k;
    ck_assert_int_eq(tcfile_open(&f, path, why, sizeof(why)), TCFILE_OK);
    tcfile_kura_decode(f.map + TCFILE_OPAQUE_OFF, &k);
    *flags = f.flags;
    tcfile_close(&f);
    return k;
}

/* Opens the database in a child, stores `n` keys and dies without
 * closing it: what kill -9 leaves. */
static void
_crash_after_writes(int n)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        char err[256];
        char key[32];
        struct store *s = store_open(&spec, NULL, NULL, err, sizeof(err));
        if (s == NULL) {
            _exit(2);
        }
        for (int i = 0; i < n; i++) {
            snprintf(key, sizeof(key), "k%d", i);
            _put(s, key, "value");
        }
        _exit(0);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

START_TEST(test_d2_marks_tell_clean_from_crash)
{
    struct store_open_report rep;
    uint8_t flags;

    struct store *s = _open(&rep);
    ck_assert(rep.created);
    ck_assert(!rep.unclean);
    struct tcfile_kura k = _marks(&flags);
    ck_assert(k.present);
    ck_assert(!k.clean); /* cleared before the first change */
    _put(s, "a", "1");
    ck_assert_int_eq(store_close(s), STORE_OK);
    k = _marks(&flags);
    ck_assert(k.clean);
    ck_assert_int_eq(flags & TCFILE_FLAG_OPEN, 0);
    uint32_t salt = k.salt;

    s = _open(&rep);
    ck_assert(!rep.created && !rep.unclean && !rep.salvaged);
    ck_assert(_has(s, "a"));
    ck_assert_int_eq(store_close(s), STORE_OK);
    ck_assert_uint_eq(_marks(&flags).salt, salt); /* a file keeps its salt */

    _crash_after_writes(300);
    s = _open(&rep);
    ck_assert(rep.unclean);
    ck_assert(!rep.salvaged); /* sound: nothing torn in the page cache */
    ck_assert_uint_eq(rep.check.records, 301); /* "a" and k0..k299 */
    ck_assert(_has(s, "k299"));
    ck_assert_int_eq(store_close(s), STORE_OK);
}
END_TEST

static void
_write_boot(const char *file, const char *uuid)
{
    FILE *f = fopen(file, "w");
    ck_assert(f != NULL);
    fprintf(f, "%s\n", uuid);
    fclose(f);
}

/* D8: a crash in the same boot is checked in one pass without the trees'
 * walk; after a restart of the machine (a new boot id), in full. */
START_TEST(test_d8_same_boot_or_not)
{
    struct store_open_report rep;
    uint8_t flags;
    char boot[UNIT_TMPDIR_MAX + 32];
    unit_tmpdir_path(boot, sizeof(boot), dir, "boot_id");
    _write_boot(boot, "8f0c4d3e-2b1a-4c5d-9e8f-0a1b2c3d4e5f");
    setenv("KURA_BOOT_ID_FILE", boot, 1);

    struct store *s = _open(&rep);
    struct tcfile_kura k = _marks(&flags);
    ck_assert_uint_eq(k.boot[0], 0x8f); /* on disk before the first change */
    ck_assert_uint_eq(k.boot[15], 0x5f);
    ck_assert_int_eq(store_close(s), STORE_OK);

    _crash_after_writes(300);
    s = _open(&rep);
    ck_assert(rep.unclean && rep.same_boot && !rep.salvaged);
    ck_assert_uint_eq(rep.check.passes, 1);
    ck_assert_uint_eq(rep.check.records, 300);
    ck_assert_int_eq(store_close(s), STORE_OK);

    _crash_after_writes(300);
    _write_boot(boot, "11111111-2222-3333-4444-555555555555");
    s = _open(&rep);
    ck_assert(rep.unclean && !rep.same_boot && !rep.salvaged);
    ck_assert_uint_eq(_marks(&flags).boot[0], 0x11);
    ck_assert_int_eq(store_close(s), STORE_OK);

    /* No boot to be read: never the same. */
    _crash_after_writes(300);
    _write_boot(boot, "not a boot id");
    s = _open(&rep);
    ck_assert(rep.unclean && !rep.same_boot);
    ck_assert_int_eq(store_close(s), STORE_OK);
    unsetenv("KURA_BOOT_ID_FILE");
}
END_TEST

/* D4: a crashed file with a torn record is rebuilt, keeping the rest. */
START_TEST(test_d4_crashed_and_torn_is_rebuilt)
{
    struct store_open_report rep;
    _crash_after_writes(300);
    /* Tear the first record's value. */
    struct tcfile f;
    char why[160];
    ck_assert_int_eq(tcfile_open(&f, path, why, sizeof(why)), TCFILE_OK);
    struct tcfile_block b;
    const char *w;
    ck_assert(tcfile_block(&f, f.frec, f.fsiz, &b, &w));
    uint64_t at = (uint64_t)(b.value - f.map) + b.vsiz - 1;
    char torn_key[32];
    snprintf(torn_key, sizeof(torn_key), "%.*s", (int)b.ksiz, b.key);
    tcfile_close(&f);
    int fd = open(path, O_WRONLY);
    ck_assert_int_eq(pwrite(fd, "#", 1, (off_t)at), 1);
    close(fd);

    struct store *s = _open(&rep);
    ck_assert(rep.unclean);
    ck_assert(rep.salvaged);
    ck_assert_uint_eq(rep.salvage.kept, 299);
    ck_assert_uint_eq(rep.salvage.torn, 1);
    ck_assert(!_has(s, torn_key));
    ck_assert(_has(s, strcmp(torn_key, "k5") == 0 ? "k6" : "k5"));
    _put(s, "after", "x");
    ck_assert_int_eq(store_close(s), STORE_OK);
    struct dbcheck_report cr;
    ck_assert_int_eq(dbcheck_file(path, DBCHECK_DEEP, &cr), DBCHECK_OK);
    ck_assert_uint_eq(cr.records, 300);
}
END_TEST

/* D4: the same damage after a clean stop is refused, not repaired. */
START_TEST(test_damage_after_clean_stop_is_refused)
{
    struct store_open_report rep;
    char err[512];
    struct store *s = _open(&rep);
    _put(s, "a", "1");
    ck_assert_int_eq(store_close(s), STORE_OK);
    struct tcfile f;
    char why[160];
    ck_assert_int_eq(tcfile_open(&f, path, why, sizeof(why)), TCFILE_OK);
    uint64_t frec = f.frec;
    tcfile_close(&f);
    int fd = open(path, O_WRONLY);
    ck_assert_int_eq(pwrite(fd, "\x17", 1, (off_t)frec), 1);
    close(fd);
    ck_assert_ptr_null(store_open(&spec, NULL, &rep, err, sizeof(err)));
    ck_assert_msg(strstr(err, "is damaged at offset") != NULL, "%s", err);
}
END_TEST

START_TEST(test_one_process_at_a_time)
{
    struct store_open_report rep;
    char err[512];
    struct store *s = _open(&rep);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        /* Refused, and told who holds the file (lockfile.h). */
        char holder[64];
        snprintf(holder, sizeof(holder), "process %ld is using it",
                 (long)getppid());
        struct store *t = store_open(&spec, NULL, NULL, err, sizeof(err));
        _exit(t == NULL && strstr(err, holder) != NULL ? 0 : 1);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ck_assert_int_eq(store_close(s), STORE_OK);
}
END_TEST

/*
 * Damage met while serving keeps its place: a get that meets a record with
 * a broken header learns the offset; an iteration that meets it after
 * (the expiry sweeper's walk, which cannot say where) counts it again and
 * leaves the offset as it was.
 */
START_TEST(test_damage_offset_survives_a_sighting_without_a_place)
{
    struct store_open_report rep;
    struct store *s = _open(&rep);
    char key[16];
    for (int i = 0; i < 20; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        _put(s, key, "v");
    }
    struct tcfile f;
    char why[160];
    uint64_t off = 0;
    const char *where;
    ck_assert_int_eq(tcfile_open(&f, path, why, sizeof(why)), TCFILE_OK);
    ck_assert_int_eq(tcfile_find(&f, (const uint8_t *)"k7", 2, &off, &where),
                     1);
    tcfile_close(&f);
    int fd = open(path, O_WRONLY);
    ck_assert_int_eq(pwrite(fd, "\x17", 1, (off_t)off), 1); /* the magic */
    close(fd);

    ck_assert(!_has(s, "k7"));
    uint64_t at = 0;
    ck_assert_uint_eq(store_damage(s, &at), 1);
    ck_assert_uint_eq(at, off);

    store_iter_acquire(s);
    ck_assert_int_eq(store_iter_init(s), STORE_OK);
    size_t nkey;
    enum store_status st;
    while ((st = store_iter_next(s, key, sizeof(key), &nkey)) == STORE_OK) {
    }
    store_iter_release(s);
    ck_assert_int_eq(st, STORE_EIO);
    ck_assert_uint_eq(store_damage(s, &at), 2);
    ck_assert_uint_eq(at, off);
    store_close(s);
}
END_TEST

static Suite *
store_suite(void)
{
    Suite *s = suite_create("store");
    TCase *tc = tcase_create("store");
    tcase_add_checked_fixture(tc, _setup, _teardown);
    tcase_add_test(tc, test_d2_marks_tell_clean_from_crash);
    tcase_add_test(tc, test_d4_crashed_and_torn_is_rebuilt);
    tcase_add_test(tc, test_d8_same_boot_or_not);
    tcase_add_test(tc, test_damage_after_clean_stop_is_refused);
    tcase_add_test(tc, test_one_process_at_a_time);
    tcase_add_test(tc, test_damage_offset_survives_a_sighting_without_a_place);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(store_suite)
