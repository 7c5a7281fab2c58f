/*
 * Unit tests for salvage: a file left by a power cut (torn records,
 * garbage pages, stale copies of a key, forged records inside values) is
 * rebuilt from exactly its intact records (store.h D4, D6), and a sound
 * file is rebuilt whole with new tuning (kura optimize).
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
#include "salvage.h"
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
    unit_tmpdir_make(dir, sizeof(dir), "check_salvage");
    unit_tmpdir_path(path, sizeof(path), dir, "db.tch#bnum=1009");
    ck_assert(dbspec_parse(path, &spec, err, sizeof(err)));
    unit_tmpdir_path(path, sizeof(path), dir, "db.tch");
}

static void
_teardown(void)
{
    unit_tmpdir_remove(dir);
}

/* A stored record: envelope with stamp `ts`, then `value`. */
static size_t
_record(uint8_t *buf, uint64_t ts, const char *value)
{
    struct record_meta m = {
        .kind = RECORD_VALUE, .flags = 0, .exptime = 0, .cas = ts, .ts = ts,
        .sid = 1};
    size_t n = record_encode(&m, buf);
    memcpy(buf + n, value, strlen(value));
    return n + strlen(value);
}

static void
_put(struct store *s, const char *key, uint64_t ts, const char *value)
{
    uint8_t buf[4096];
    size_t n = _record(buf, ts, value);
    ck_assert_int_eq(store_put(s, key, strlen(key), buf, n), STORE_OK);
}

/* Builds a database of `n` keys "k<i>" holding "v<i>" padded to `pad`. */
static void
_build(int n, size_t pad)
{
    char err[256];
    char key[32];
    char value[2048];
    struct store *s = store_open(&spec, NULL, NULL, err, sizeof(err));
    ck_assert_msg(s != NULL, "%s", err);
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        snprintf(value, sizeof(value), "v%d-%0*d", i, (int)pad, i);
        _put(s, key, 1000 + (uint64_t)i, value);
    }
    ck_assert_int_eq(store_close(s), STORE_OK);
}

/* The value stored for `key` after a rebuild, or "" if none. */
static void
_value_of(const char *key, char *out, size_t cap)
{
    TCHDB *hdb = tchdbnew();
    ck_assert(tchdbopen(hdb, path, HDBOREADER | HDBONOLCK));
    int sp;
    void *p = tchdbget(hdb, key, (int)strlen(key), &sp);
    out[0] = '\0';
    if (p != NULL) {
        struct record_meta m;
        const uint8_t *v;
        size_t vlen;
        ck_assert_int_eq(record_decode(p, (size_t)sp, &m, &v, &vlen),
                         RECORD_OK);
        snprintf(out, cap, "%.*s", (int)vlen, (const char *)v);
        free(p);
    }
    tchdbclose(hdb);
    tchdbdel(hdb);
}

static void
_scribble(uint64_t off, const void *p, size_t len)
{
    int fd = open(path, O_WRONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pwrite(fd, p, len, (off_t)off), (ssize_t)len);
    close(fd);
}

/* Where the record of `key` starts, and its value. */
static bool
_locate(const char *key, uint64_t *off, uint64_t *value_off,
        uint32_t *vsiz)
{
    struct tcfile f;
    char why[160];
    ck_assert_int_eq(tcfile_open(&f, path, why, sizeof(why)), TCFILE_OK);
    bool found = false;
    for (uint64_t o = f.frec; o < f.fsiz && !found;) {
        struct tcfile_block b;
        const char *w;
        ck_assert(tcfile_block(&f, o, f.fsiz, &b, &w));
        if (!b.free && b.ksiz == strlen(key) &&
            memcmp(b.key, key, b.ksiz) == 0) {
            *off = o;
            *value_off = (uint64_t)(b.value - f.map);
            *vsiz = b.vsiz;
            found = true;
        }
        o += b.size;
    }
    tcfile_close(&f);
    return found;
}

static void
_rebuild(struct salvage_report *r)
{
    struct salvage_tuning t;
    char err[256];
    salvage_tuning_keep(&t);
    ck_assert_msg(salvage_rebuild(path, &t, r, err, sizeof(err)) == 0, "%s",
                  err);
    struct dbcheck_report cr;
    ck_assert_int_eq(dbcheck_file(path, DBCHECK_DEEP, &cr), DBCHECK_OK);
    ck_assert_uint_eq(cr.records, r->kept);
}

START_TEST(test_sound_file_rebuilt_whole_with_new_tuning)
{
    struct salvage_report r;
    struct salvage_tuning t;
    char err[256];
    char v[64];
    _build(3000, 10);
    salvage_tuning_keep(&t);
    t.bnum = 40000;
    ck_assert(salvage_rebuild(path, &t, &r, err, sizeof(err)) == 0);
    ck_assert_uint_eq(r.kept, 3000);
    ck_assert_uint_eq(r.torn, 0);
    ck_assert_uint_eq(r.unreadable, 0);
    struct tcfile f;
    char why[160];
    ck_assert_int_eq(tcfile_open(&f, path, why, sizeof(why)), TCFILE_OK);
    ck_assert_uint_ge(f.bnum, 40000);
    struct tcfile_kura k;
    tcfile_kura_decode(f.map + TCFILE_OPAQUE_OFF, &k);
    ck_assert(k.present && k.clean);
    tcfile_close(&f);
    _value_of("k2999", v, sizeof(v));
    ck_assert_str_eq(v, "v2999-0000002999");
}
END_TEST

/* D3, D6: a torn record is dropped; every other record survives, also
 * those after a page of garbage (the walk finds them again). */
START_TEST(test_torn_and_garbage_cost_only_themselves)
{
    struct salvage_report r;
    uint64_t off;
    uint64_t voff;
    uint32_t vsiz;
    char v[64];
    _build(2000, 40);
    ck_assert(_locate("k7", &off, &voff, &vsiz));
    _scribble(voff + vsiz - 1, "#", 1); /* a tear in k7's value */
    ck_assert(_locate("k500", &off, &voff, &vsiz));
    uint8_t garbage[4096];
    for (size_t i = 0; i < sizeof(garbage); i++) {
        garbage[i] = (uint8_t)(i * 131 + 7);
    }
    _scribble(off & ~(uint64_t)4095, garbage, sizeof(garbage));
    _rebuild(&r);
    ck_assert_uint_ge(r.torn, 1);
    ck_assert_uint_gt(r.unreadable, 0);
    _value_of("k7", v, sizeof(v));
    ck_assert_str_eq(v, "");
    _value_of("k500", v, sizeof(v));
    ck_assert_str_eq(v, "");
    /* About 4096 / 60 records shared the garbage page; the rest are all
     * there. */
    ck_assert_uint_ge(r.kept, 2000 - 1 - 80);
    ck_assert_uint_lt(r.kept, 2000);
    _value_of("k1999", v, sizeof(v));
    ck_assert_str_eq(v, "v1999-0000000000000000000000000000000000001999");
    _value_of("k0", v, sizeof(v));
    ck_assert_str_eq(v, "v0-0000000000000000000000000000000000000000");
}
END_TEST

/* D6: a key found twice keeps its newest copy, whichever comes first. */
START_TEST(test_newest_copy_of_a_key_wins)
{
    struct salvage_report r;
    char err[256];
    char v[64];
    _build(100, 5);
    /* A stale copy of k1 written elsewhere, as a relocation whose
     * release never reached the disk would leave it: append a second
     * database's records to this file's end through Tokyo Cabinet by
     * storing them under a key of the same size, then renaming the key. */
    struct store *s = store_open(&spec, NULL, NULL, err, sizeof(err));
    ck_assert_ptr_nonnull(s);
    _put(s, "kX", 5, "older");   /* stamp 5: older than k1's 1001 */
    _put(s, "kY", 99999, "newer");
    ck_assert_int_eq(store_close(s), STORE_OK);
    uint64_t off;
    uint64_t voff;
    uint32_t vsiz;
    uint8_t rec[64];
    /* Rename kX to k2 and kY to k3 in place, and reseal them, so each key
     * has two intact copies with different stamps. */
    ck_assert(_locate("kX", &off, &voff, &vsiz));
    struct tcfile f;
    char why[160];
    ck_assert_int_eq(tcfile_open(&f, path, why, sizeof(why)), TCFILE_OK);
    struct tcfile_kura k;
    tcfile_kura_decode(f.map + TCFILE_OPAQUE_OFF, &k);
    tcfile_close(&f);
    size_t n = _record(rec, 5, "older");
    record_seal(rec, n, "k2", 2, k.salt);
    _scribble(voff - 2, "k2", 2);
    _scribble(voff, rec, n);
    ck_assert(_locate("kY", &off, &voff, &vsiz));
    n = _record(rec, 99999, "newer");
    record_seal(rec, n, "k3", 2, k.salt);
    _scribble(voff - 2, "k3", 2);
    _scribble(voff, rec, n);
    _rebuild(&r);
    ck_assert_uint_eq(r.kept, 100);
    ck_assert_uint_eq(r.superseded, 2);
    _value_of("k2", v, sizeof(v));
    ck_assert_str_eq(v, "v2-00002");
    _value_of("k3", v, sizeof(v));
    ck_assert_str_eq(v, "newer");
}
END_TEST

/* A free block header read from a torn page is never trusted: one that
 * claims to span the rest of the file must not hide what follows. */
START_TEST(test_lying_free_block_hides_nothing)
{
    struct salvage_report r;
    uint64_t off;
    uint64_t voff;
    uint32_t vsiz;
    char v[64];
    _build(1000, 10);
    ck_assert(_locate("k10", &off, &voff, &vsiz));
    struct tcfile f;
    char why[160];
    ck_assert_int_eq(tcfile_open(&f, path, why, sizeof(why)), TCFILE_OK);
    uint64_t span = (f.size - off) & ~(uint64_t)15; /* fits: believable */
    tcfile_close(&f);
    uint8_t fb[5] = {TCFILE_MAGIC_FREE, (uint8_t)(span >> 24),
                     (uint8_t)(span >> 16), (uint8_t)(span >> 8),
                     (uint8_t)span};
    _scribble(off, fb, sizeof(fb));
    _rebuild(&r);
    ck_assert_uint_eq(r.kept, 999);
    _value_of("k999", v, sizeof(v));
    ck_assert_str_eq(v, "v999-0000000999");
}
END_TEST

/*
 * A client cannot plant a record: a value holding the image of a record
 * for another key, sealed without the file's secret salt, is not taken
 * even when the walk has to look inside it (its own header is torn).
 */
START_TEST(test_record_forged_inside_a_value_is_refused)
{
    struct salvage_report r;
    char v[64];
    _build(50, 5);
    /* The image Tokyo Cabinet would write for key "k3" with a far newer
     * stamp: magic, hash, two links, padding, sizes, key, value. */
    uint8_t forged[128];
    char err[256];
    uint8_t env[64];
    size_t elen = _record(env, UINT64_C(1) << 60, "pwned");
    record_seal(env, elen, "k3", 2, 0); /* the salt is secret */
    size_t n = 0;
    uint8_t hash;
    (void)tcfile_bucket_of(1009, (const uint8_t *)"k3", 2, &hash);
    forged[n++] = TCFILE_MAGIC_RECORD;
    forged[n++] = hash;
    memset(forged + n, 0, 10); /* links, padding */
    n += 10;
    forged[n++] = 2;
    forged[n++] = (uint8_t)elen;
    memcpy(forged + n, "k3", 2);
    n += 2;
    memcpy(forged + n, env, elen);
    n += elen;
    /* Store a value of filler first to learn where it lands, then the
     * same length with the image at an aligned offset inside it, where
     * a walk looking for records tries. */
    char value[512];
    size_t vlen = 32 + n + 16;
    memset(value, 'p', vlen);
    struct store *s = store_open(&spec, NULL, NULL, err, sizeof(err));
    ck_assert_ptr_nonnull(s);
    uint8_t buf[600];
    struct record_meta m = {
        .kind = RECORD_VALUE, .flags = 0, .exptime = 0, .cas = 9, .ts = 9,
        .sid = 1};
    size_t hl = record_encode(&m, buf);
    memcpy(buf + hl, value, vlen);
    ck_assert_int_eq(store_put(s, "evil", 4, buf, hl + vlen), STORE_OK);
    ck_assert_int_eq(store_close(s), STORE_OK);
    uint64_t off;
    uint64_t voff;
    uint32_t vsiz;
    ck_assert(_locate("evil", &off, &voff, &vsiz));
    uint64_t at = (voff + hl + 15) / 16 * 16 + 16; /* aligned, in the value */
    memcpy(value + (at - voff - hl), forged, n);
    s = store_open(&spec, NULL, NULL, err, sizeof(err));
    ck_assert_ptr_nonnull(s);
    memcpy(buf + hl, value, vlen);
    ck_assert_int_eq(store_put(s, "evil", 4, buf, hl + vlen), STORE_OK);
    ck_assert_int_eq(store_close(s), STORE_OK);
    uint64_t voff2;
    ck_assert(_locate("evil", &off, &voff2, &vsiz));
    ck_assert_uint_eq(voff2, voff); /* rewritten in place */
    _scribble(off, "\x17\x17", 2); /* the attacker's own header, torn */
    _rebuild(&r);
    _value_of("k3", v, sizeof(v));
    ck_assert_str_eq(v, "v3-00003");
    _value_of("evil", v, sizeof(v));
    ck_assert_str_eq(v, "");
}
END_TEST

/* Compressed databases: values are read through Tokyo Cabinet's codec. */
START_TEST(test_compressed_database)
{
    struct salvage_report r;
    char err[256];
    char v[64];
    unit_tmpdir_path(path, sizeof(path), dir, "db.tch#bnum=1009#opts=d");
    ck_assert(dbspec_parse(path, &spec, err, sizeof(err)));
    unit_tmpdir_path(path, sizeof(path), dir, "db.tch");
    _build(500, 30);
    struct dbcheck_report cr;
    ck_assert_int_eq(dbcheck_file(path, DBCHECK_DEEP, &cr), DBCHECK_OK);
    _rebuild(&r);
    ck_assert_uint_eq(r.kept, 500);
    _value_of("k42", v, sizeof(v));
    ck_assert_str_eq(v, "v42-000000000000000000000000000042");
}
END_TEST

static Suite *
salvage_suite(void)
{
    Suite *s = suite_create("salvage");
    TCase *tc = tcase_create("salvage");
    tcase_add_checked_fixture(tc, _setup, _teardown);
    tcase_add_test(tc, test_sound_file_rebuilt_whole_with_new_tuning);
    tcase_add_test(tc, test_torn_and_garbage_cost_only_themselves);
    tcase_add_test(tc, test_newest_copy_of_a_key_wins);
    tcase_add_test(tc, test_lying_free_block_hides_nothing);
    tcase_add_test(tc, test_record_forged_inside_a_value_is_refused);
    tcase_add_test(tc, test_compressed_database);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(salvage_suite)
