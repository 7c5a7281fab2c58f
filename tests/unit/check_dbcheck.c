/*
 * Unit tests for dbcheck: databases written by Tokyo Cabinet itself, under
 * every tuning kura accepts and after overwrites and deletes, check out;
 * each kind of damage is found, with its offset.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tchdb.h>
#include <unistd.h>

#include "dbcheck.h"
#include "record.h"
#include "tcfile.h"
#include "unit_main.h"
#include "unit_tmpdir.h"

static char dir[UNIT_TMPDIR_MAX];
static char path[UNIT_TMPDIR_MAX + 32];

static void
_setup(void)
{
    unit_tmpdir_make(dir, sizeof(dir), "check_dbcheck");
    unit_tmpdir_path(path, sizeof(path), dir, "db.tch");
}

static void
_teardown(void)
{
    unit_tmpdir_remove(dir);
}

/* Stores `key` with a kura envelope and `vlen` bytes of value. */
static void
_put(TCHDB *hdb, const char *key, size_t vlen)
{
    static uint8_t buf[70000];
    struct record_meta m = {
        .kind = RECORD_VALUE, .flags = 7, .exptime = 0, .cas = 11, .ts = 11,
        .sid = 1};
    size_t elen = record_encode(&m, buf);
    memset(buf + elen, 'v', vlen);
    /* A file without kura's header area seals with salt 0. */
    record_seal(buf, elen + vlen, key, strlen(key), 0);
    ck_assert(tchdbput(hdb, key, (int)strlen(key), buf, (int)(elen + vlen)));
}

/*
 * Builds a database with `n` keys of varied sizes, then rewrites some
 * larger (records move, leaving free blocks), some smaller (padding
 * grows), and deletes some. Returns the record count.
 */
static uint64_t
_build(int64_t bnum, int8_t apow, uint8_t opts, int n)
{
    TCHDB *hdb = tchdbnew();
    char key[32];
    ck_assert(tchdbtune(hdb, bnum, apow, 10, opts));
    ck_assert(tchdbopen(hdb, path, HDBOWRITER | HDBOCREAT | HDBOTRUNC));
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof(key), "key:%d", i);
        _put(hdb, key, (size_t)(i % 7 == 0 ? 300 + i % 900 : 5 + i % 40));
    }
    for (int i = 0; i < n; i += 3) {
        snprintf(key, sizeof(key), "key:%d", i);
        _put(hdb, key, (size_t)(i % 2 == 0 ? 2000 : 1));
    }
    for (int i = 1; i < n; i += 5) {
        snprintf(key, sizeof(key), "key:%d", i);
        ck_assert(tchdbout(hdb, key, (int)strlen(key)));
    }
    _put(hdb, "big", 65000);
    uint64_t rnum = tchdbrnum(hdb);
    ck_assert(tchdbclose(hdb));
    tchdbdel(hdb);
    return rnum;
}

/* `n` small records in insertion order: "key:0" comes first. */
static void
_build_plain(int n)
{
    TCHDB *hdb = tchdbnew();
    char key[32];
    ck_assert(tchdbtune(hdb, 101, 4, 10, 0));
    ck_assert(tchdbopen(hdb, path, HDBOWRITER | HDBOCREAT | HDBOTRUNC));
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof(key), "key:%d", i);
        _put(hdb, key, 10);
    }
    ck_assert(tchdbclose(hdb));
    tchdbdel(hdb);
}

static void
_expect_ok(uint64_t records)
{
    struct dbcheck_report r;
    enum dbcheck_status st = dbcheck_file(path, DBCHECK_DEEP, &r);
    ck_assert_msg(st == DBCHECK_OK, "damage at %llu: %s",
                  (unsigned long long)r.damage_offset, r.damage);
    ck_assert_uint_eq(r.records, records);
    ck_assert_uint_eq(r.header_records, records);
    ck_assert_uint_gt(r.free_blocks, 0);
}

START_TEST(test_tokyo_cabinet_files_check_out)
{
    /* Few buckets make deep collision trees; many make sparse ones. */
    _expect_ok(_build(17, 4, 0, 3000));
    _expect_ok(_build(131071, 4, 0, 3000));
    _expect_ok(_build(1009, 0, 0, 2000));
    _expect_ok(_build(1009, 10, 0, 500));
    _expect_ok(_build(1009, 4, HDBTLARGE, 2000));
}
END_TEST

/* Stores a tombstone (the envelope alone) for `key`. */
static void
_put_tombstone(TCHDB *hdb, const char *key)
{
    uint8_t buf[RECORD_HEADER_MAX];
    struct record_meta m = {.kind = RECORD_TOMBSTONE, .cas = 12, .ts = 12,
                            .sid = 1};
    size_t elen = record_encode(&m, buf);
    record_seal(buf, elen, key, strlen(key), 0);
    ck_assert(tchdbput(hdb, key, (int)strlen(key), buf, (int)elen));
}

/* values (stats curr_items at start) leaves tombstones out; records and
 * item_bytes as before. */
START_TEST(test_values_leave_out_tombstones)
{
    TCHDB *hdb = tchdbnew();
    char key[32];
    ck_assert(tchdbtune(hdb, 101, 4, 10, 0));
    ck_assert(tchdbopen(hdb, path, HDBOWRITER | HDBOCREAT | HDBOTRUNC));
    for (int i = 0; i < 10; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        if (i % 3 == 0) {
            _put_tombstone(hdb, key);
        } else {
            _put(hdb, key, 10);
        }
    }
    ck_assert(tchdbclose(hdb));
    tchdbdel(hdb);
    for (unsigned flags = 0; flags <= DBCHECK_DEEP; flags += DBCHECK_DEEP) {
        struct dbcheck_report r;
        ck_assert_int_eq(dbcheck_file(path, flags, &r), DBCHECK_OK);
        ck_assert_uint_eq(r.records, 10);
        ck_assert_uint_eq(r.values, 6);
        ck_assert_uint_eq(r.item_bytes, 6 * (2 + 10));
    }
}
END_TEST

START_TEST(test_empty_and_missing_files_are_fine)
{
    struct dbcheck_report r;
    ck_assert_int_eq(dbcheck_file(path, DBCHECK_DEEP, &r), DBCHECK_OK);
    close(open(path, O_WRONLY | O_CREAT, 0644));
    ck_assert_int_eq(dbcheck_file(path, DBCHECK_DEEP, &r), DBCHECK_OK);
    ck_assert_uint_eq(r.records, 0);
}
END_TEST

/* Overwrites `len` bytes at `off`. */
static void
_scribble(uint64_t off, const void *p, size_t len)
{
    int fd = open(path, O_WRONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pwrite(fd, p, len, (off_t)off), (ssize_t)len);
    close(fd);
}

static void
_expect_damage_with(unsigned flags, const char *what)
{
    struct dbcheck_report r;
    ck_assert_int_eq(dbcheck_file(path, flags, &r), DBCHECK_DAMAGED);
    ck_assert_msg(strstr(r.damage, what) != NULL, "expected \"%s\", got "
                  "\"%s\"", what, r.damage);
}

static void
_expect_damage(const char *what)
{
    _expect_damage_with(DBCHECK_DEEP, what);
}

/* The offset of the first record, read from a fresh database. */
static uint64_t
_first_record(void)
{
    TCHDB *hdb = tchdbnew();
    ck_assert(tchdbopen(hdb, path, HDBOREADER));
    uint64_t frec = hdb->frec;
    tchdbclose(hdb);
    tchdbdel(hdb);
    return frec;
}

/*
 * "key:0" is the first record: its header is magic, hash, two 32-bit
 * links and the padding size (12 bytes), then one-byte key and value
 * sizes; its key starts at +14 and its value (the envelope) at +19.
 */
#define KSIZ_AT 12
#define ENVELOPE_AT 19

START_TEST(test_damage_is_found)
{
    _build_plain(400);
    uint64_t frec = _first_record();
    struct dbcheck_report r;
    ck_assert_int_eq(dbcheck_file(path, DBCHECK_DEEP, &r), DBCHECK_OK);
    ck_assert_uint_eq(r.records, 400);
    uint64_t size = r.file_size;

    /* Not a database at all. */
    _scribble(0, "NoT", 3);
    _expect_damage("bad magic");
    _build_plain(400);

    /* A truncated file. */
    ck_assert_int_eq(truncate(path, (off_t)(size - 100)), 0);
    _expect_damage("truncated");
    _build_plain(400);

    /* An unknown block where a record should be. */
    _scribble(frec, "\x17", 1);
    _expect_damage("unknown block type");
    _build_plain(400);

    /* A key size that runs past the end (what makes Tokyo Cabinet abort). */
    _scribble(frec + KSIZ_AT, "\x80\x80\x80\x80\x0f", 5);
    _expect_damage("runs past the end");
    _build_plain(400);

    /* A bucket that points into the middle of a record. */
    uint8_t mid[4];
    uint64_t bad = (frec >> 4) + 1;
    for (int i = 0; i < 4; i++) {
        mid[i] = (uint8_t)(bad >> (8 * (3 - i)));
    }
    _scribble(256, mid, 4);
    ck_assert_int_eq(dbcheck_file(path, DBCHECK_DEEP, &r), DBCHECK_DAMAGED);
    _build_plain(400);

    /* A value that is not a kura record. */
    _scribble(frec + ENVELOPE_AT, "\xff\xff\xff", 3);
    _expect_damage("not a kura record");
}
END_TEST

/* The first record (by file order) matching `want`, decoded. */
static uint64_t value_at; /* file offset of the found record's value */

static bool
_find(bool (*want)(const struct tcfile_block *), struct tcfile_block *out,
      uint32_t *bucket)
{
    struct tcfile f;
    char why[160];
    ck_assert_int_eq(tcfile_open(&f, path, why, sizeof(why)), TCFILE_OK);
    bool found = false;
    for (uint64_t off = f.frec; off < f.fsiz && !found;) {
        struct tcfile_block b;
        const char *w;
        ck_assert(tcfile_block(&f, off, f.fsiz, &b, &w));
        if (!b.free && want(&b)) {
            *out = b;
            uint8_t h;
            *bucket = (uint32_t)tcfile_bucket_of(f.bnum, b.key, b.ksiz, &h);
            value_at = (uint64_t)(b.value - f.map);
            found = true;
        }
        off += b.size;
    }
    tcfile_close(&f);
    return found;
}

static bool
_one_left_child(const struct tcfile_block *b)
{
    return b->left != 0 && b->right == 0;
}

static bool
_any(const struct tcfile_block *b)
{
    (void)b;
    return true;
}

static void
_put_link(uint64_t at, uint64_t off)
{
    uint8_t v[4];
    uint64_t stored = off >> 4;
    for (int i = 0; i < 4; i++) {
        v[i] = (uint8_t)(stored >> (8 * (3 - i))); /* Debian: big-endian */
    }
    _scribble(at, v, 4);
}

/* A fresh database whose first record's tree is swapped with the tree of
 * the bucket `apart` buckets on: each hangs from the other's bucket. */
static void
_swap_trees(uint32_t apart)
{
    struct tcfile_block b;
    uint32_t bucket;
    _build_plain(400);
    ck_assert(_find(_any, &b, &bucket));
    uint32_t other = (bucket + apart) % 101;
    struct tcfile f;
    char why[160];
    ck_assert_int_eq(tcfile_open(&f, path, why, sizeof(why)), TCFILE_OK);
    uint64_t root = tcfile_bucket(&f, bucket);
    uint64_t other_root = tcfile_bucket(&f, other);
    tcfile_close(&f);
    _put_link(256 + 4 * (uint64_t)bucket, other_root);
    _put_link(256 + 4 * (uint64_t)other, root);
}

/* In the database as it is: a left child moved to the right, where a
 * lookup would not look for it. */
static void
_child_on_wrong_side_here(void)
{
    struct tcfile_block b;
    uint32_t bucket;
    ck_assert(_find(_one_left_child, &b, &bucket));
    _put_link(b.off + 2 + 4, b.left);
    _put_link(b.off + 2, 0);
}

/* The same in a fresh database. */
static void
_child_on_wrong_side(void)
{
    _build_plain(400);
    _child_on_wrong_side_here();
}

/* With a budget too small for the trees at once, the deep check walks
 * them by ranges of buckets, one more pass each, and finds the same. */
START_TEST(test_deep_check_by_ranges_of_buckets)
{
    struct dbcheck_report r;

    _build_plain(400);
    ck_assert_int_eq(dbcheck_file_within(path, DBCHECK_DEEP, 1500, &r),
                     DBCHECK_OK);
    ck_assert_uint_eq(r.records, 400);

    _child_on_wrong_side_here();
    ck_assert_int_eq(dbcheck_file_within(path, DBCHECK_DEEP, 1500, &r),
                     DBCHECK_DAMAGED);
    ck_assert_msg(strstr(r.damage, "out of its tree's order") != NULL, "%s",
                  r.damage);

    _swap_trees(50);
    ck_assert_int_eq(dbcheck_file_within(path, DBCHECK_DEEP, 1500, &r),
                     DBCHECK_DAMAGED);
    ck_assert_msg(strstr(r.damage, "another key's bucket") != NULL, "%s",
                  r.damage);
}
END_TEST

/* store.h D4: what a power cut can do to a file is found by the deep
 * check, and only by it. */
START_TEST(test_deep_check_finds_torn_and_detached)
{
    struct dbcheck_report r;
    struct tcfile_block b;
    uint32_t bucket;

    /* A torn record: its bytes no longer match its seal (D3). */
    _build_plain(400);
    ck_assert(_find(_any, &b, &bucket));
    _scribble(value_at + b.vsiz - 1, "\x01", 1);
    ck_assert_int_eq(dbcheck_file(path, 0, &r), DBCHECK_OK);
    _expect_damage("seal does not match");

    /* A bucket that lost its tree: records nothing links to. */
    _build_plain(400);
    ck_assert(_find(_any, &b, &bucket));
    _put_link(256 + 4 * (uint64_t)bucket, 0);
    ck_assert_int_eq(dbcheck_file(path, 0, &r), DBCHECK_OK);
    _expect_damage("not linked from anywhere");

    /* A child on the wrong side: a lookup would miss it. */
    _child_on_wrong_side();
    ck_assert_int_eq(dbcheck_file(path, 0, &r), DBCHECK_OK);
    _expect_damage("out of its tree's order");

    /* A tree hung from another key's bucket. */
    _swap_trees(1);
    _expect_damage("another key's bucket");

    /* A hash byte that does not match the key. */
    _build_plain(400);
    ck_assert(_find(_any, &b, &bucket));
    uint8_t wrong = (uint8_t)(b.hash ^ 0x5a);
    _scribble(b.off + 1, &wrong, 1);
    _expect_damage("hash byte");
}
END_TEST

static void
_expect_same_boot_damage(const char *what)
{
    _expect_damage_with(DBCHECK_DEEP | DBCHECK_SAME_BOOT, what);
}

/* store.h D8: after a crash in the same boot, one pass whatever the
 * budget, and every state a call cut short can leave is still found;
 * what only mixed pages make (a child on the wrong side) is not looked
 * for. */
START_TEST(test_same_boot_check_is_one_pass)
{
    struct dbcheck_report r;
    struct tcfile_block b;
    uint32_t bucket;
    const unsigned same = DBCHECK_DEEP | DBCHECK_SAME_BOOT;

    _build_plain(400);
    ck_assert_int_eq(dbcheck_file_within(path, DBCHECK_DEEP, 1500, &r),
                     DBCHECK_OK);
    ck_assert_uint_gt(r.passes, 1);
    ck_assert_int_eq(dbcheck_file_within(path, same, 1500, &r), DBCHECK_OK);
    ck_assert_uint_eq(r.passes, 1);
    ck_assert_uint_eq(r.records, 400);

    /* A put cut short: a record written, not yet linked. */
    ck_assert(_find(_any, &b, &bucket));
    _put_link(256 + 4 * (uint64_t)bucket, 0);
    _expect_same_boot_damage("not linked from anywhere");

    /* A torn record, and a hash byte that does not match. */
    _build_plain(400);
    ck_assert(_find(_any, &b, &bucket));
    _scribble(value_at + b.vsiz - 1, "\x01", 1);
    _expect_same_boot_damage("seal does not match");
    _build_plain(400);
    ck_assert(_find(_any, &b, &bucket));
    uint8_t wrong = (uint8_t)(b.hash ^ 0x5a);
    _scribble(b.off + 1, &wrong, 1);
    _expect_same_boot_damage("hash byte");

    /* An out cut short: a subtree linked from two places. */
    _build_plain(400);
    ck_assert(_find(_one_left_child, &b, &bucket));
    _put_link(256 + 4 * (uint64_t)bucket, b.left);
    _expect_same_boot_damage("two links");

    /* A freed block reused by another bucket's put before the link to it
     * moved: a record linked from another bucket's tree. */
    _swap_trees(1);
    _expect_same_boot_damage("another key's bucket");

    /* Only mixed pages put a child on the wrong side: not looked for. */
    _child_on_wrong_side();
    ck_assert_int_eq(dbcheck_file(path, same, &r), DBCHECK_OK);
    _expect_damage("out of its tree's order");
}
END_TEST

static Suite *
dbcheck_suite(void)
{
    Suite *s = suite_create("dbcheck");
    TCase *tc = tcase_create("dbcheck");
    tcase_add_checked_fixture(tc, _setup, _teardown);
    tcase_add_test(tc, test_tokyo_cabinet_files_check_out);
    tcase_add_test(tc, test_empty_and_missing_files_are_fine);
    tcase_add_test(tc, test_values_leave_out_tombstones);
    tcase_add_test(tc, test_damage_is_found);
    tcase_add_test(tc, test_deep_check_finds_torn_and_detached);
    tcase_add_test(tc, test_deep_check_by_ranges_of_buckets);
    tcase_add_test(tc, test_same_boot_check_is_one_pass);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(dbcheck_suite)
