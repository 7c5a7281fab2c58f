/*
 * Unit tests: the update log. Record encoding and CRC32C, appends and
 * reads across segment rotation (U1), recovery that cuts a torn tail at
 * every byte offset (U3), checkpoints (U4), segment removal (U5), and
 * readers that report a gap instead of skipping records.
 */
#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "crc32c.h"
#include "logrec.h"
#include "record.h"
#include "ulog.h"
#include "ulog_fixture.h"
#include "unit_main.h"
#include "unit_tmpdir.h"
#include "util.h"

static struct ulog_fixture fx;
static uint64_t peers_acked = UINT64_MAX;

static void
_setup(void)
{
    ulog_fixture_setup(&fx, "check_ulog");
    peers_acked = UINT64_MAX;
}

static void
_teardown(void)
{
    ulog_fixture_teardown(&fx);
}

static uint64_t
_acked(void *arg)
{
    (void)arg;
    return peers_acked;
}

static struct ulog *
_open_policy(uint64_t segment_max, uint32_t keep, enum ulog_fsync fsync,
             struct ulog_recovery *rec)
{
    struct ulog_options o;
    ulog_fixture_options(&fx, &o, fsync, segment_max);
    o.keep_segments = keep;
    o.peers_acked = _acked;
    return ulog_fixture_open(&o, rec);
}

static struct ulog *
_open(uint64_t segment_max, uint32_t keep, struct ulog_recovery *rec)
{
    return _open_policy(segment_max, keep, ULOG_FSYNC_NEVER, rec);
}

/* Builds one PUT record for `key` = `value` into `out`; returns its size. */
/* Encodes a PUT of key = value that originated at server `sid`. */
static size_t
_record_from(uint8_t *out, uint32_t sid, const char *key, const char *value)
{
    struct record_meta m = {
        .kind = RECORD_VALUE, .flags = 0, .exptime = 0, .cas = 5, .ts = 5,
        .sid = sid};
    uint8_t env[RECORD_HEADER_MAX];
    size_t elen = record_encode(&m, env);
    size_t vlen = strlen(value);
    uint8_t *p = logrec_begin(out, LOGREC_PUT, sid, key, strlen(key),
                              elen + vlen);
    memcpy(p, env, elen);
    memcpy(p + elen, value, vlen);
    return logrec_size(strlen(key), elen + vlen);
}

static size_t
_record(uint8_t *out, const char *key, const char *value)
{
    return _record_from(out, 1, key, value);
}

static uint64_t
_append(struct ulog *u, const char *key, const char *value)
{
    uint8_t buf[512];
    uint64_t lsn = 0;
    size_t n = _record(buf, key, value);
    ck_assert_int_eq(ulog_append(u, -1, buf, n, 1, &lsn), ULOG_OK);
    return lsn;
}

/* Reads all records after `after`; returns the count, checks the keys. */
static int
_read_all(struct ulog *u, uint64_t after, const char *prefix)
{
    struct ulog_reader *r;
    struct logrec rec;
    int n = 0;
    ck_assert_int_eq(ulog_reader_open(u, after, &r), ULOG_OK);
    while (ulog_reader_next(r, &rec, false) == ULOG_OK) {
        if (prefix != NULL) {
            ck_assert(rec.nkey > strlen(prefix) &&
                      memcmp(rec.key, prefix, strlen(prefix)) == 0);
        }
        n++;
    }
    ulog_reader_close(r);
    return n;
}

START_TEST(test_crc32c_known_answer)
{
    ck_assert_uint_eq(crc32c(0, "123456789", 9), 0xe3069283u);
    ck_assert_uint_eq(crc32c(0, "", 0), 0);
    /* Incremental equals one-shot. */
    uint32_t c = crc32c(0, "1234", 4);
    ck_assert_uint_eq(crc32c(c, "56789", 5), 0xe3069283u);
}
END_TEST

START_TEST(test_logrec_roundtrip_and_damage)
{
    uint8_t buf[256];
    struct logrec r;
    size_t n = _record(buf, "key", "value");
    logrec_seal(buf, 1000, 7);
    ck_assert_int_eq(logrec_decode(buf, n, &r), LOGREC_OK);
    ck_assert_uint_eq(r.lsn, 1000);
    ck_assert_uint_eq(r.seq, 7);
    ck_assert_uint_eq(r.sid, 1);
    ck_assert(r.nkey == 3 && memcmp(r.key, "key", 3) == 0);
    ck_assert(r.raw == buf && r.len == n);
    /* Every truncation is "short", never a wrong record. */
    for (size_t len = 0; len < n; len++) {
        ck_assert_int_eq(logrec_decode(buf, len, &r), LOGREC_SHORT);
    }
    /* Every single flipped bit after the length field is caught. */
    for (size_t i = 4; i < n; i++) {
        for (int bit = 0; bit < 8; bit++) {
            buf[i] ^= (uint8_t)(1 << bit);
            ck_assert_int_eq(logrec_decode(buf, n, &r), LOGREC_CORRUPT);
            buf[i] ^= (uint8_t)(1 << bit);
        }
    }
    /* A length below the header or absurdly large is corrupt. */
    uint8_t bad[8] = {3, 0, 0, 0, 0, 0, 0, 0};
    ck_assert_int_eq(logrec_decode(bad, sizeof(bad), &r), LOGREC_CORRUPT);
    uint8_t flush[64];
    uint8_t payload[LOGREC_FLUSH_PAYLOAD];
    logrec_flush_encode(payload, 11, 22);
    uint8_t *p = logrec_begin(flush, LOGREC_FLUSH, 2, NULL, 0, sizeof(payload));
    memcpy(p, payload, sizeof(payload));
    logrec_seal(flush, 5, 1);
    ck_assert_int_eq(logrec_decode(flush, logrec_size(0, 16), &r), LOGREC_OK);
    uint64_t stamp;
    uint64_t deadline;
    ck_assert(logrec_flush_decode(&r, &stamp, &deadline));
    ck_assert(stamp == 11 && deadline == 22);
}
END_TEST

START_TEST(test_u1_append_read_rotation)
{
    struct ulog_recovery rec;
    struct ulog *u = _open(4096, 0, &rec);
    char key[32];
    uint64_t prev = 0;
    for (int i = 0; i < 300; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        uint64_t lsn = _append(u, key, "0123456789");
        ck_assert_uint_gt(lsn, prev);
        prev = lsn;
    }
    struct ulog_stats st;
    ulog_stats(u, &st);
    ck_assert_uint_gt(st.segments, 3);
    ck_assert_uint_eq(st.last_seq, 300);
    ck_assert_int_eq(_read_all(u, 0, "k"), 300);
    /* Positioned reads start right after the given lsn. */
    struct ulog_reader *r;
    struct logrec lr;
    ck_assert_int_eq(ulog_reader_open(u, 0, &r), ULOG_OK);
    uint64_t lsn150 = 0;
    for (int i = 0; i < 150; i++) {
        ck_assert_int_eq(ulog_reader_next(r, &lr, false), ULOG_OK);
        lsn150 = lr.lsn;
    }
    ulog_reader_close(r);
    ck_assert_int_eq(_read_all(u, lsn150, "k"), 150);
    ulog_close(u);
    /* Reopening finds the same end. */
    u = _open(4096, 0, &rec);
    ck_assert_uint_eq(rec.last_seq, 300);
    ck_assert_uint_eq(rec.last_lsn, prev);
    ck_assert_uint_eq(rec.cut_bytes, 0);
    ulog_close(u);
}
END_TEST

/*
 * U9: under "never", a finished segment is still synced before the next
 * one starts: every record before the newest segment is durable, so a
 * power cut cannot leave a hole in the middle of the log.
 */
START_TEST(test_u9_segment_synced_at_rotation_under_never)
{
    struct ulog_recovery rec;
    struct ulog *u = _open(4096, 0, &rec);
    char key[32];
    int rotations = 0;
    for (int i = 0; i < 300; i++) {
        struct ulog_stats st;
        ulog_stats(u, &st);
        uint32_t segs = st.segments;
        uint64_t syncs = st.syncs;
        snprintf(key, sizeof(key), "k%d", i);
        (void)_append(u, key, "0123456789");
        ulog_stats(u, &st);
        if (st.segments > segs) {
            /* this append rotated: the old segment was fdatasynced */
            ck_assert_uint_gt(st.syncs, syncs);
            rotations++;
        }
    }
    ck_assert_int_gt(rotations, 3);
    ulog_close(u);
}
END_TEST

/* Polls until the sync thread has zeroed space ahead of the end. */
static bool
_wait_prepared(struct ulog *u)
{
    struct ulog_stats st;
    for (int i = 0; i < 5000; i++) {
        ulog_stats(u, &st);
        if (st.prepared_ahead > 0) {
            return true;
        }
        usleep(1000);
    }
    return false;
}

/* Polls until `lsn` is durable; false after five seconds. */
static bool
_wait_durable(struct ulog *u, uint64_t lsn)
{
    for (int i = 0; i < 5000; i++) {
        if (ulog_durable(u, lsn)) {
            return true;
        }
        usleep(1000);
    }
    return ulog_durable(u, lsn);
}

/* Regression: after reopening a log that already held records, the sync
 * thread spun on the lock and no later write ever became durable. */
START_TEST(test_u2_always_syncs_after_reopen)
{
    struct ulog_recovery rec;
    struct ulog *u = _open_policy(1 << 20, 0, ULOG_FSYNC_ALWAYS, &rec);
    ck_assert_int_eq(ulog_start(u), 0);
    uint64_t lsn = _append(u, "before", "1");
    ck_assert(_wait_durable(u, lsn));
    ulog_close(u);
    u = _open_policy(1 << 20, 0, ULOG_FSYNC_ALWAYS, &rec);
    ck_assert_int_eq(ulog_start(u), 0);
    ck_assert(ulog_durable(u, rec.last_lsn));
    /* The write must come when the sync thread is idle, not mid-prepare. */
    ck_assert(_wait_prepared(u));
    lsn = _append(u, "after", "2");
    ck_assert_uint_gt(lsn, rec.last_lsn);
    ck_assert(_wait_durable(u, lsn));
    ulog_close(u);
}
END_TEST

/*
 * Regression: the sync thread wrote zeros ahead of the append position
 * without the log's lock, from the end it saw. Right after a rotation that
 * end is where appends go next, so an append landing before the zeros
 * was wiped out, and recovery or a reader stopped there.
 */
START_TEST(test_u6_prepared_zeros_never_overwrite_appends)
{
    struct ulog_recovery rec;
    peers_acked = 0; /* a peer holds every segment: none is removed */
    /* Tiny segments: a rotation, and a fresh prepare, every ~40 records. */
    struct ulog *u = _open_policy(2048, 1000000, ULOG_FSYNC_ALWAYS, &rec);
    ck_assert_int_eq(ulog_start(u), 0);
    char key[32];
    uint64_t lsn = 0;
    const int total = 6000;
    for (int i = 0; i < total; i++) {
        snprintf(key, sizeof(key), "z%d", i);
        lsn = _append(u, key, "0123456789");
    }
    ck_assert(_wait_durable(u, lsn));
    ck_assert_int_eq(_read_all(u, 0, "z"), total);
    ulog_close(u);
    u = _open_policy(2048, 1000000, ULOG_FSYNC_ALWAYS, &rec);
    ck_assert_uint_eq(rec.last_seq, (uint64_t)total);
    ck_assert_uint_eq(rec.last_lsn, lsn);
    ck_assert_int_eq(_read_all(u, 0, "z"), total);
    ulog_close(u);
}
END_TEST

static void
_segment_path(char *out, size_t len, int no)
{
    snprintf(out, len, "%s/ulog/%08d.ulog", fx.dir, no);
}

static void
_count_call(void *arg)
{
    atomic_fetch_add((_Atomic int *)arg, 1);
}

/*
 * Regression: a worker that asked for an lsn the sync thread had made
 * durable a moment before was never called back, and its clients waited
 * for replies forever (kura load: "no reply for 30 s").
 */
START_TEST(test_want_sync_of_durable_lsn_calls_back)
{
    struct ulog_recovery rec;
    struct ulog *u = _open_policy(1 << 20, 0, ULOG_FSYNC_ALWAYS, &rec);
    _Atomic int calls = 0;
    int w = ulog_watch(u, _count_call, &calls);
    ck_assert_int_ge(w, 0);
    ck_assert_int_eq(ulog_start(u), 0);
    uint64_t lsn = _append(u, "k", "v");
    ck_assert(_wait_durable(u, lsn));
    ulog_want_sync(u, w, lsn);
    uint64_t deadline = util_mono_ms() + 5000;
    while (atomic_load(&calls) == 0 && util_mono_ms() < deadline) {
        usleep(1000);
    }
    ck_assert_int_eq(atomic_load(&calls), 1);
    /* An lsn not yet durable, with no sync in flight: the caller syncs it
     * itself and is not called back (U14). The sync thread's lazy sync
     * may have come first; then it is called back as before. */
    lsn = _append(u, "k", "w");
    if (ulog_want_sync(u, w, lsn)) {
        ck_assert(ulog_durable(u, lsn));
        ck_assert_int_eq(atomic_load(&calls), 1);
    } else {
        deadline = util_mono_ms() + 5000;
        while (atomic_load(&calls) == 1 && util_mono_ms() < deadline) {
            usleep(1000);
        }
        ck_assert_int_eq(atomic_load(&calls), 2);
        ck_assert(ulog_durable(u, lsn));
    }
    ulog_close(u);
}
END_TEST

START_TEST(test_u3_torn_tail_cut_at_every_offset)
{
    struct ulog_recovery rec;
    struct ulog *u = _open(1 << 20, 0, &rec);
    for (int i = 0; i < 5; i++) {
        char key[16];
        snprintf(key, sizeof(key), "k%d", i);
        _append(u, key, "value");
    }
    ulog_close(u);
    char path[128];
    _segment_path(path, sizeof(path), 1);
    struct stat sb;
    ck_assert_int_eq(stat(path, &sb), 0);
    off_t full = sb.st_size;
    uint8_t last[256];
    size_t lastlen = _record(last, "k4", "value");
    /* Cut the file inside its final record at every offset. */
    for (off_t cut = full - (off_t)lastlen; cut < full; cut++) {
        char copy[256];
        snprintf(copy, sizeof(copy), "cp %s %s.orig", path, path);
        ck_assert_int_eq(system(copy), 0);
        ck_assert_int_eq(truncate(path, cut), 0);
        u = _open(1 << 20, 0, &rec);
        ck_assert_uint_eq(rec.last_seq, 4);
        ck_assert_uint_eq(rec.cut_bytes, (uint64_t)(cut - (full - (off_t)lastlen)));
        ck_assert_int_eq(_read_all(u, 0, "k"), 4);
        /* The log carries on after the cut. */
        _append(u, "k9", "after");
        ck_assert_int_eq(_read_all(u, 0, "k"), 5);
        ulog_close(u);
        snprintf(copy, sizeof(copy), "mv %s.orig %s", path, path);
        ck_assert_int_eq(system(copy), 0);
    }
}
END_TEST

START_TEST(test_u3_corrupt_record_ends_log)
{
    struct ulog_recovery rec;
    struct ulog *u = _open(1 << 20, 0, &rec);
    _append(u, "a1", "first");
    _append(u, "a2", "second");
    _append(u, "a3", "third");
    ulog_close(u);
    char path[128];
    _segment_path(path, sizeof(path), 1);
    /* Flip a byte in the value of the second record. */
    int fd = open(path, O_RDWR);
    uint8_t one[256];
    size_t first = _record(one, "a1", "first");
    off_t at = ULOG_SEGMENT_HEADER + (off_t)first + 40;
    uint8_t b;
    ck_assert_int_eq(pread(fd, &b, 1, at), 1);
    b ^= 0xff;
    ck_assert_int_eq(pwrite(fd, &b, 1, at), 1);
    close(fd);
    u = _open(1 << 20, 0, &rec);
    ck_assert_uint_eq(rec.last_seq, 1);
    ck_assert_uint_gt(rec.cut_bytes, 0);
    ck_assert_int_eq(_read_all(u, 0, "a"), 1);
    ulog_close(u);
}
END_TEST

START_TEST(test_u4_u5_checkpoint_and_removal)
{
    struct ulog_recovery rec;
    struct ulog *u = _open(2048, 2, &rec);
    char key[32];
    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        _append(u, key, "0123456789");
    }
    struct ulog_stats st;
    ulog_stats(u, &st);
    uint32_t before = st.segments;
    /* A peer that has acknowledged nothing holds everything back... */
    peers_acked = 0;
    ck_assert_int_eq(ulog_checkpoint(u), ULOG_OK);
    ulog_stats(u, &st);
    ck_assert_uint_eq(st.checkpoint_lsn, st.last_lsn);
    /* ... except beyond -ukeep (2): that peer must resynchronise. */
    ck_assert_uint_eq(st.segments, 3);
    ck_assert_uint_lt(st.segments, before);
    /* Its position is gone: a reader reports the gap, never skips. */
    struct ulog_reader *r;
    ck_assert_int_eq(ulog_reader_open(u, 0, &r), ULOG_EGAP);
    /* Records after the oldest kept are all still readable. */
    ck_assert_int_gt(_read_all(u, st.oldest_lsn, "k"), 0);
    ulog_close(u);
    /* The checkpoint survives a restart. */
    u = _open(2048, 2, &rec);
    ck_assert_uint_eq(rec.checkpoint_lsn, st.checkpoint_lsn);
    ulog_close(u);
}
END_TEST

START_TEST(test_u5_peer_acks_release_segments)
{
    struct ulog_recovery rec;
    struct ulog *u = _open(2048, 100, &rec);
    char key[32];
    uint64_t mid = 0;
    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        uint64_t lsn = _append(u, key, "0123456789");
        if (i == 100) {
            mid = lsn;
        }
    }
    struct ulog_stats st;
    ulog_stats(u, &st);
    uint32_t all = st.segments;
    peers_acked = mid;
    ck_assert_int_eq(ulog_checkpoint(u), ULOG_OK);
    ulog_stats(u, &st);
    ck_assert_uint_lt(st.segments, all);
    /* Everything after the peer's position is kept. */
    ck_assert_int_eq(_read_all(u, mid, "k"), 99);
    peers_acked = UINT64_MAX;
    ck_assert_int_eq(ulog_checkpoint(u), ULOG_OK);
    ulog_stats(u, &st);
    ck_assert_uint_eq(st.segments, 1);
    ulog_close(u);
}
END_TEST

/*
 * A rotation asks for one checkpoint, to release the old segment. While a
 * peer holds that segment back, the checkpoint thread must not keep
 * writing the database back every second under a write load.
 */
START_TEST(test_held_segment_does_not_repeat_checkpoints)
{
    struct ulog_recovery rec;
    struct ulog *u = _open(4096, 0, &rec);
    char key[32];
    peers_acked = 0;
    ck_assert_int_eq(ulog_start(u), 0);
    int i = 0;
    struct ulog_stats st;
    do {
        snprintf(key, sizeof(key), "k%d", i++);
        _append(u, key, "0123456789");
        ulog_stats(u, &st);
    } while (st.segments < 2);
    uint64_t deadline = util_mono_ms() + 10000;
    while (st.checkpoints < 1 && util_mono_ms() < deadline) {
        usleep(10000);
        ulog_stats(u, &st);
    }
    ck_assert_uint_eq(st.checkpoints, 1);
    ck_assert_uint_eq(st.segments, 2); /* the peer still needs it */
    /* Writes go on for 2.5 s (the checkpoint thread looks every 1 s). */
    uint64_t until = util_mono_ms() + 2500;
    while (util_mono_ms() < until) {
        snprintf(key, sizeof(key), "k%d", i++);
        _append(u, key, "01"); /* 25 x 36 bytes: no rotation */
        usleep(100000);
    }
    ulog_stats(u, &st);
    ck_assert_uint_eq(st.segments, 2);
    ck_assert_uint_eq(st.checkpoints, 1);
    ulog_close(u);
}
END_TEST

static _Atomic uint64_t db_bytes;

static uint64_t
_db_size(void *arg)
{
    (void)arg;
    return atomic_load(&db_bytes);
}

/* New database pages are written back once the file grew by
 * checkpoint_growth, long before the time or log bounds. */
START_TEST(test_checkpoint_when_database_grew)
{
    struct ulog_options o;
    struct ulog_recovery rec;
    ulog_fixture_options(&fx, &o, ULOG_FSYNC_NEVER, 1 << 20);
    o.checkpoint_growth = 1 << 20;
    o.db_size = _db_size;
    atomic_store(&db_bytes, 50 << 20); /* a large database to start with */
    struct ulog *u = ulog_fixture_open(&o, &rec);
    ck_assert_int_eq(ulog_start(u), 0);
    _append(u, "a", "1");
    atomic_fetch_add(&db_bytes, 1 << 19); /* half the bound */
    /* The checkpoint thread looks every second: give it 1.5 s to act
     * wrongly. */
    struct ulog_stats st;
    uint64_t deadline = util_mono_ms() + 1500;
    while (util_mono_ms() < deadline) {
        usleep(10000);
    }
    ulog_stats(u, &st);
    ck_assert_uint_eq(st.checkpoints, 0);
    uint64_t lsn = _append(u, "b", "2");
    atomic_fetch_add(&db_bytes, 1 << 19); /* now the whole bound */
    deadline = util_mono_ms() + 5000;
    do {
        usleep(10000);
        ulog_stats(u, &st);
    } while (st.checkpoints == 0 && util_mono_ms() < deadline);
    ck_assert_uint_eq(st.checkpoints, 1);
    ck_assert_uint_eq(st.checkpoint_lsn, lsn);
    ulog_close(u);
}
END_TEST

static _Atomic uint64_t dirty_bytes;

static int
_db_dirty(void *arg, uint64_t *bytes)
{
    (void)arg;
    *bytes = atomic_load(&dirty_bytes);
    return 0;
}

/* Under a memory limit, a checkpoint once checkpoint_dirty bytes of page
 * cache are dirty (memlimit.h), looked at every 100 ms. */
START_TEST(test_checkpoint_when_dirty)
{
    struct ulog_options o;
    struct ulog_recovery rec;
    ulog_fixture_options(&fx, &o, ULOG_FSYNC_NEVER, 1 << 20);
    o.checkpoint_dirty = 32 << 20;
    o.db_dirty = _db_dirty;
    atomic_store(&dirty_bytes, 31 << 20);
    struct ulog *u = ulog_fixture_open(&o, &rec);
    ck_assert_int_eq(ulog_start(u), 0);
    _append(u, "a", "1");
    struct ulog_stats st;
    uint64_t deadline = util_mono_ms() + 500; /* five looks */
    while (util_mono_ms() < deadline) {
        usleep(10000);
    }
    ulog_stats(u, &st);
    ck_assert_uint_eq(st.checkpoints, 0);
    uint64_t lsn = _append(u, "b", "2");
    atomic_store(&dirty_bytes, 32 << 20);
    deadline = util_mono_ms() + 5000;
    do {
        usleep(10000);
        ulog_stats(u, &st);
    } while (st.checkpoints == 0 && util_mono_ms() < deadline);
    ck_assert_uint_eq(st.checkpoints, 1);
    ck_assert_uint_eq(st.dirty_checkpoints, 1);
    ck_assert_uint_eq(st.checkpoint_lsn, lsn);
    /* Still dirty (a neighbour's pages, say) but nothing new logged: no
     * further checkpoint is counted. */
    deadline = util_mono_ms() + 300;
    while (util_mono_ms() < deadline) {
        usleep(10000);
    }
    ulog_stats(u, &st);
    ck_assert_uint_eq(st.checkpoints, 1);
    ulog_close(u);
}
END_TEST

static _Atomic int write_backs;

static int
_db_write_back(void *arg, uint64_t dirty)
{
    (void)arg;
    (void)dirty;
    atomic_fetch_add(&write_backs, 1);
    return 0;
}

/* Between the two bounds the records' dirty pages are written back, and
 * no checkpoint is taken. */
START_TEST(test_write_back_when_dirty)
{
    struct ulog_options o;
    struct ulog_recovery rec;
    ulog_fixture_options(&fx, &o, ULOG_FSYNC_NEVER, 1 << 20);
    o.checkpoint_dirty = 32 << 20;
    o.writeback_dirty = 16 << 20;
    o.db_dirty = _db_dirty;
    o.db_write_back = _db_write_back;
    atomic_store(&dirty_bytes, 15 << 20);
    atomic_store(&write_backs, 0);
    struct ulog *u = ulog_fixture_open(&o, &rec);
    ck_assert_int_eq(ulog_start(u), 0);
    _append(u, "a", "1");
    uint64_t deadline = util_mono_ms() + 300;
    while (util_mono_ms() < deadline) {
        usleep(10000);
    }
    ck_assert_int_eq(atomic_load(&write_backs), 0);
    atomic_store(&dirty_bytes, 20 << 20);
    deadline = util_mono_ms() + 5000;
    while (atomic_load(&write_backs) == 0 && util_mono_ms() < deadline) {
        usleep(10000);
    }
    ck_assert_int_gt(atomic_load(&write_backs), 0);
    struct ulog_stats st;
    ulog_stats(u, &st);
    ck_assert_uint_eq(st.checkpoints, 0);
    ck_assert_uint_gt(st.write_backs, 0);
    ulog_close(u);
}
END_TEST

START_TEST(test_u4_checkpoint_waits_for_inflight)
{
    struct ulog_recovery rec;
    struct ulog *u = _open(1 << 20, 0, &rec);
    int slot = ulog_slot(u);
    uint8_t buf[256];
    uint64_t first;
    uint64_t lsn;
    first = _append(u, "a", "applied");
    size_t n = _record(buf, "b", "in flight");
    ck_assert_int_eq(ulog_append(u, slot, buf, n, 1, &lsn), ULOG_OK);
    /* The second record is logged but not applied: no checkpoint past it. */
    ck_assert_uint_eq(ulog_applied_lsn(u), lsn - 1);
    ck_assert_int_eq(ulog_checkpoint(u), ULOG_OK);
    struct ulog_stats st;
    ulog_stats(u, &st);
    ck_assert_uint_lt(st.checkpoint_lsn, lsn);
    ck_assert_uint_ge(st.checkpoint_lsn, first);
    ulog_applied(u, slot, 0);
    ck_assert_int_eq(ulog_checkpoint(u), ULOG_OK);
    ulog_stats(u, &st);
    ck_assert_uint_eq(st.checkpoint_lsn, lsn);
    ulog_close(u);
}
END_TEST

START_TEST(test_fsync_policy_parse)
{
    enum ulog_fsync p;
    uint32_t ms = 0;
    ck_assert(ulog_parse_fsync("always", &p, &ms) && p == ULOG_FSYNC_ALWAYS);
    ck_assert(ulog_parse_fsync("never", &p, &ms) && p == ULOG_FSYNC_NEVER);
    ck_assert(ulog_parse_fsync("100", &p, &ms) && p == ULOG_FSYNC_INTERVAL &&
              ms == 100);
    ck_assert(!ulog_parse_fsync("0", &p, &ms));
    ck_assert(!ulog_parse_fsync("sometimes", &p, &ms));
}
END_TEST

/* An append from another thread, `delay_ms` after it starts: records
 * from each of `sids` (up to 2, 0-terminated; none: no append) in one
 * append, then, if `sync`, an fdatasync of everything written. */
struct later_append {
    struct ulog *u;
    uint32_t sids[3];
    int delay_ms;
    bool sync;
};

static void *
_append_later(void *arg)
{
    struct later_append *a = arg;
    uint8_t buf[1024];
    size_t len = 0;
    size_t n = 0;
    uint64_t lsn;

    struct timespec pause = {0, (long)a->delay_ms * 1000 * 1000};
    nanosleep(&pause, NULL);
    for (; a->sids[n] != 0; n++) {
        len += _record_from(buf + len, a->sids[n], "k", "v");
    }
    if (n > 0) {
        ck_assert_int_eq(ulog_append(a->u, -1, buf, len, n, &lsn), ULOG_OK);
    }
    if (a->sync) {
        uint64_t seq;
        ulog_position(a->u, &lsn, &seq);
        /* With no sync thread started, the waiter syncs itself. */
        ck_assert_int_eq(ulog_wait_durable(a->u, lsn), ULOG_OK);
    }
    return NULL;
}

/* Waits like a sender skipping origin `skip` while `a` appends; returns
 * whether the wait saw growth, and the time it took in `*ms`. */
static bool
_wait_during_as(struct ulog_reader *r, bool durable_only, uint32_t skip,
                int timeout_ms, struct later_append *a, uint64_t *ms)
{
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, _append_later, a), 0);
    uint64_t began = util_mono_ms();
    bool grown = ulog_reader_wait_others(r, skip, timeout_ms);
    *ms = util_mono_ms() - began;
    pthread_join(t, NULL);
    struct logrec rec;
    while (ulog_reader_next(r, &rec, durable_only) == ULOG_OK) {
    }
    return grown;
}

static bool
_wait_during(struct ulog_reader *r, uint32_t skip, int timeout_ms,
             struct later_append *a, uint64_t *ms)
{
    return _wait_during_as(r, false, skip, timeout_ms, a, ms);
}

START_TEST(test_reader_sleeps_through_a_skipped_origin)
{
    struct ulog_recovery rec;
    struct ulog *u = _open(1 << 20, 0, &rec);
    struct ulog_reader *r;
    uint64_t ms;

    _append(u, "before", "v");
    ck_assert_int_eq(ulog_reader_open(u, 0, &r), ULOG_OK);
    /* Records from before are of unknown origin: no sleep over them. */
    ck_assert(ulog_reader_wait_others(r, 2, 1000));
    struct logrec lr;
    while (ulog_reader_next(r, &lr, false) == ULOG_OK) {
    }

    /* An append of server 2's records only: the wait skipping 2 sleeps
     * its whole timeout (a timed wait returns early only when woken). */
    struct later_append only2 = {u, {2, 0}, 20, false};
    ck_assert(!_wait_during(r, 2, 300, &only2, &ms));
    ck_assert_uint_ge(ms, 290);
    /* Server 1's record wakes it at once, as does an append mixing both. */
    struct later_append only1 = {u, {1, 0}, 20, false};
    ck_assert(_wait_during(r, 2, 5000, &only1, &ms));
    ck_assert_uint_lt(ms, 2500);
    struct later_append mixed = {u, {2, 1, 0}, 20, false};
    ck_assert(_wait_during(r, 2, 5000, &mixed, &ms));
    ck_assert_uint_lt(ms, 2500);
    /* A record of server 1 followed by one of 2, appended before the
     * wait: nothing to sleep over. */
    struct later_append first1 = {u, {1, 2, 0}, 0, false};
    (void)_append_later(&first1);
    ck_assert(ulog_reader_wait_others(r, 2, 300));
    while (ulog_reader_next(r, &lr, false) == ULOG_OK) {
    }
    /* Skipping nothing (0), every append wakes. */
    ck_assert(_wait_during(r, 0, 5000, &only2, &ms));
    ck_assert_uint_lt(ms, 2500);
    ulog_reader_close(r);
    ulog_close(u);
}
END_TEST

/* A sender of a pair under "always" reads only durable records: neither
 * appends nor syncs of the origin it skips wake it, and an append of
 * another origin wakes it only once a sync makes it durable. */
START_TEST(test_durable_reader_sleeps_until_another_origin_is_durable)
{
    struct ulog_recovery rec;
    struct ulog *u = _open_policy(1 << 20, 0, ULOG_FSYNC_ALWAYS, &rec);
    struct ulog_reader *r;
    struct logrec lr;
    uint64_t ms;

    ck_assert_int_eq(ulog_reader_open(u, 0, &r), ULOG_OK);
    struct later_append only2 = {u, {2, 0}, 20, true};
    ck_assert(!_wait_during_as(r, true, 2, 300, &only2, &ms));
    ck_assert_uint_ge(ms, 290);
    /* Server 1's record, not yet durable: still asleep. */
    struct later_append only1 = {u, {1, 0}, 20, false};
    ck_assert(!_wait_during_as(r, true, 2, 300, &only1, &ms));
    ck_assert_uint_ge(ms, 290);
    ck_assert_int_eq(ulog_reader_next(r, &lr, true), ULOG_END);
    /* Its sync wakes the reader at once, and the record is there. */
    struct later_append sync = {u, {0}, 20, true};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, _append_later, &sync), 0);
    uint64_t began = util_mono_ms();
    ck_assert(ulog_reader_wait_others(r, 2, 5000));
    ck_assert_uint_lt(util_mono_ms() - began, 2500);
    pthread_join(t, NULL);
    ck_assert_int_eq(ulog_reader_next(r, &lr, true), ULOG_OK);
    ck_assert_uint_eq(lr.sid, 1);
    ck_assert_int_eq(ulog_reader_next(r, &lr, true), ULOG_END);
    /* A mixed append, synced: awake at once. */
    struct later_append mixed = {u, {2, 1, 0}, 20, true};
    ck_assert(_wait_during_as(r, true, 2, 5000, &mixed, &ms));
    ck_assert_uint_lt(ms, 2500);
    ulog_reader_close(r);
    ulog_close(u);
}
END_TEST

static Suite *
ulog_suite(void)
{
    Suite *s = suite_create("ulog");
    TCase *tc = tcase_create("codec");
    tcase_add_test(tc, test_crc32c_known_answer);
    tcase_add_test(tc, test_logrec_roundtrip_and_damage);
    tcase_add_test(tc, test_fsync_policy_parse);
    suite_add_tcase(s, tc);
    tc = tcase_create("log");
    tcase_add_checked_fixture(tc, _setup, _teardown);
    tcase_add_test(tc, test_u1_append_read_rotation);
    tcase_add_test(tc, test_u9_segment_synced_at_rotation_under_never);
    tcase_add_test(tc, test_u2_always_syncs_after_reopen);
    tcase_add_test(tc, test_want_sync_of_durable_lsn_calls_back);
    tcase_add_test(tc, test_u6_prepared_zeros_never_overwrite_appends);
    tcase_add_test(tc, test_u3_torn_tail_cut_at_every_offset);
    tcase_add_test(tc, test_u3_corrupt_record_ends_log);
    tcase_add_test(tc, test_u4_u5_checkpoint_and_removal);
    tcase_add_test(tc, test_u5_peer_acks_release_segments);
    tcase_add_test(tc, test_u4_checkpoint_waits_for_inflight);
    tcase_add_test(tc, test_held_segment_does_not_repeat_checkpoints);
    tcase_add_test(tc, test_checkpoint_when_database_grew);
    tcase_add_test(tc, test_checkpoint_when_dirty);
    tcase_add_test(tc, test_write_back_when_dirty);
    tcase_add_test(tc, test_reader_sleeps_through_a_skipped_origin);
    tcase_add_test(tc, test_durable_reader_sleeps_until_another_origin_is_durable);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(ulog_suite)
