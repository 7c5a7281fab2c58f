/*
 * Unit tests: the write path. Staging, commit, visibility, and the
 * invariants of txn.h: no lost update under concurrent read-modify-write
 * (T1), no deadlock between batches holding many stripes (T4), and a key
 * touched twice in one batch sees its own change (T5). With an update log
 * under "always": changes reach the store only once durable (T8, store.h
 * D1), a batch reads its own waiting changes, and threads waiting for
 * each other's stripes never deadlock (T9).
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "txn.h"
#include "ulog.h"
#include "unit_main.h"
#include "unit_tmpdir.h"
#include "util.h"

static struct store *store;
static struct clock clk;
static struct txn_engine eng;
static char dir[UNIT_TMPDIR_MAX];

static void
_setup(void)
{
    struct dbspec spec;
    char err[256];

    unit_tmpdir_make(dir, sizeof(dir), "check_txn");
    char path[UNIT_TMPDIR_MAX + 32];
    unit_tmpdir_path(path, sizeof(path), dir, "t.tch");
    ck_assert(dbspec_parse(path, &spec, err, sizeof(err)));
    store = store_open(&spec, NULL, NULL, err, sizeof(err));
    ck_assert_ptr_nonnull(store);
    clock_init(&clk, 0);
    char flush[UNIT_TMPDIR_MAX + 32];
    unit_tmpdir_path(flush, sizeof(flush), dir, "t.tch.flush");
    /* Few stripes, so that batches collide often. */
    ck_assert_int_eq(txn_engine_init(&eng, store, &clk, NULL, 1, 64, flush, err,
                                     sizeof(err)),
                     0);
}

static void
_teardown(void)
{
    txn_engine_deinit(&eng);
    store_close(store);
    unit_tmpdir_remove(dir);
}

static void
_put(struct txn_batch *b, const char *key, const char *value)
{
    struct txn_current cur;
    struct record_meta m = {
        .kind = RECORD_VALUE, .flags = 0, .exptime = 0, .cas = 0, .ts = 0,
        .sid = 1};
    ck_assert_int_eq(txn_begin_key(b, key, strlen(key), &cur), TXN_OK);
    txn_current_release(&cur);
    m.ts = m.cas = clock_next(&clk);
    ck_assert_int_eq(txn_stage_record(b, key, strlen(key), &m, value,
                                      strlen(value), NULL, 0),
                     TXN_OK);
}

static bool
_get(struct txn_batch *b, const char *key, char *out, size_t cap)
{
    struct txn_current cur;
    ck_assert_int_eq(txn_read(b, key, strlen(key), &cur), TXN_OK);
    bool found = cur.found && cur.meta.kind == RECORD_VALUE;
    if (found) {
        snprintf(out, cap, "%.*s", (int)cur.vlen, (const char *)cur.value);
    }
    txn_current_release(&cur);
    return found;
}

START_TEST(test_commit_applies)
{
    struct txn_batch b1, b2;
    char v[64];

    ck_assert_int_eq(txn_batch_init(&b1, &eng, 1024), 0);
    ck_assert_int_eq(txn_batch_init(&b2, &eng, 1024), 0);
    _put(&b1, "k", "one");
    /* Staged but not committed: another batch still sees nothing. */
    ck_assert(!_get(&b2, "k", v, sizeof(v)));
    ck_assert(txn_pending(&b1));
    ck_assert_int_eq(txn_commit(&b1), TXN_OK);
    ck_assert(!txn_pending(&b1));
    ck_assert(_get(&b2, "k", v, sizeof(v)));
    ck_assert_str_eq(v, "one");
    txn_batch_deinit(&b1);
    txn_batch_deinit(&b2);
}
END_TEST

START_TEST(test_t5_same_key_twice_sees_own_change)
{
    struct txn_batch b;
    char v[64];

    ck_assert_int_eq(txn_batch_init(&b, &eng, 1024), 0);
    _put(&b, "k", "one");
    /* Reading a key whose stripe the batch holds commits first. */
    ck_assert(_get(&b, "k", v, sizeof(v)));
    ck_assert_str_eq(v, "one");
    _put(&b, "k", "two");
    _put(&b, "k", "three");
    ck_assert_int_eq(txn_commit(&b), TXN_OK);
    ck_assert(_get(&b, "k", v, sizeof(v)));
    ck_assert_str_eq(v, "three");
    ck_assert_uint_ge(atomic_load(&b.early_commits), 2);
    txn_batch_deinit(&b);
}
END_TEST

START_TEST(test_remove)
{
    struct txn_batch b;
    struct txn_current cur;
    char v[64];

    ck_assert_int_eq(txn_batch_init(&b, &eng, 1024), 0);
    _put(&b, "k", "one");
    txn_commit(&b);
    ck_assert_int_eq(txn_begin_key(&b, "k", 1, &cur), TXN_OK);
    ck_assert(cur.found);
    txn_current_release(&cur);
    ck_assert_int_eq(txn_stage_remove(&b, "k", 1), TXN_OK);
    txn_commit(&b);
    ck_assert(!_get(&b, "k", v, sizeof(v)));
    txn_batch_deinit(&b);
}
END_TEST

START_TEST(test_large_record_read_beyond_scratch)
{
    struct txn_batch b;
    char big[5000];
    char v[6000];

    memset(big, 'z', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    ck_assert_int_eq(txn_batch_init(&b, &eng, 100), 0);
    _put(&b, "big", big);
    txn_commit(&b);
    ck_assert(_get(&b, "big", v, sizeof(v)));
    ck_assert_str_eq(v, big);
    txn_batch_deinit(&b);
}
END_TEST

/* Threads increment shared counters; every increment must survive. */
#define THREADS 4
#define KEYS 16
#define ROUNDS 3000

struct incr_arg {
    int id;
};

static void *
_incrementer(void *arg)
{
    struct incr_arg *a = arg;
    struct txn_batch b;
    unsigned seed = (unsigned)a->id * 7919u + 1;

    if (txn_batch_init(&b, &eng, 1024) != 0) {
        return (void *)1;
    }
    for (int i = 0; i < ROUNDS; i++) {
        char key[16];
        snprintf(key, sizeof(key), "c%d", rand_r(&seed) % KEYS);
        struct txn_current cur;
        if (txn_begin_key(&b, key, strlen(key), &cur) != TXN_OK) {
            return (void *)1;
        }
        long n = 0;
        if (cur.found) {
            char tmp[32];
            snprintf(tmp, sizeof(tmp), "%.*s", (int)cur.vlen,
                     (const char *)cur.value);
            n = strtol(tmp, NULL, 10);
        }
        txn_current_release(&cur);
        char val[32];
        snprintf(val, sizeof(val), "%ld", n + 1);
        struct record_meta m = {
        .kind = RECORD_VALUE, .flags = 0, .exptime = 0, .cas = 0, .ts = 0,
        .sid = 1};
        m.ts = m.cas = clock_next(&clk);
        txn_stage_record(&b, key, strlen(key), &m, val, strlen(val), NULL, 0);
        /* Commit at random points, holding several stripes in between. */
        if (rand_r(&seed) % 8 == 0) {
            txn_commit(&b);
        }
    }
    txn_batch_deinit(&b);
    return NULL;
}

START_TEST(test_t1_t4_no_lost_update_no_deadlock)
{
    pthread_t th[THREADS];
    struct incr_arg args[THREADS];
    struct txn_batch b;
    long total = 0;

    for (int i = 0; i < THREADS; i++) {
        args[i].id = i;
        pthread_create(&th[i], NULL, _incrementer, &args[i]);
    }
    for (int i = 0; i < THREADS; i++) {
        void *rv;
        pthread_join(th[i], &rv);
        ck_assert_ptr_null(rv);
    }
    ck_assert_int_eq(txn_batch_init(&b, &eng, 1024), 0);
    for (int k = 0; k < KEYS; k++) {
        char key[16];
        char v[32];
        snprintf(key, sizeof(key), "c%d", k);
        if (_get(&b, key, v, sizeof(v))) {
            total += strtol(v, NULL, 10);
        }
    }
    ck_assert_int_eq(total, THREADS * ROUNDS);
    txn_batch_deinit(&b);
}
END_TEST

START_TEST(test_expire_only_matching_stamp)
{
    struct txn_batch b;
    struct txn_current cur;
    char v[64];

    ck_assert_int_eq(txn_batch_init(&b, &eng, 1024), 0);
    _put(&b, "k", "old");
    txn_commit(&b);
    ck_assert_int_eq(txn_read(&b, "k", 1, &cur), TXN_OK);
    uint64_t ts = cur.meta.ts;
    txn_current_release(&cur);
    /* A newer write replaced it: expiring the old stamp must not touch it. */
    _put(&b, "k", "new");
    txn_commit(&b);
    ck_assert(!txn_expire(&b, "k", 1, ts));
    ck_assert(_get(&b, "k", v, sizeof(v)));
    ck_assert_int_eq(txn_read(&b, "k", 1, &cur), TXN_OK);
    ts = cur.meta.ts;
    txn_current_release(&cur);
    ck_assert(txn_expire(&b, "k", 1, ts));
    ck_assert(!_get(&b, "k", v, sizeof(v)));
    /* A stripe this batch holds is never waited for. */
    _put(&b, "k", "held");
    ck_assert(!txn_expire(&b, "k", 1, 1));
    txn_batch_deinit(&b);
}
END_TEST

START_TEST(test_flush_state_persists)
{
    struct txn_batch b;
    struct expiry_flush f;
    char err[256];
    char flush[UNIT_TMPDIR_MAX + 32];

    ck_assert_int_eq(txn_batch_init(&b, &eng, 1024), 0);
    ck_assert_int_eq(txn_flush_all(&b, 0), TXN_OK);
    ck_assert_int_eq(txn_flush_all(&b, 1000), TXN_OK);
    txn_flush_state(&eng, &f);
    ck_assert_uint_gt(f.applied_us, 0);
    ck_assert_uint_gt(f.pending_us, f.applied_us);
    txn_batch_deinit(&b);
    /* A new engine over the same files loads the same state. */
    struct txn_engine again;
    unit_tmpdir_path(flush, sizeof(flush), dir, "t.tch.flush");
    ck_assert_int_eq(txn_engine_init(&again, store, &clk, NULL, 1, 64, flush, err,
                                     sizeof(err)),
                     0);
    struct expiry_flush g;
    txn_flush_state(&again, &g);
    ck_assert_uint_eq(g.applied_us, f.applied_us);
    ck_assert_uint_eq(g.pending_us, f.pending_us);
    txn_engine_deinit(&again);
}
END_TEST

/* Builds a replicated PUT record (sealed) for key = value. */
static struct logrec
_remote(uint8_t *buf, const char *key, const char *value, uint64_t ts,
        uint32_t sid, enum record_kind kind, uint32_t exptime)
{
    struct record_meta m = {.kind = kind, .exptime = exptime, .cas = ts,
                            .ts = ts, .sid = sid};
    uint8_t env[RECORD_HEADER_MAX];
    size_t elen = record_encode(&m, env);
    size_t vlen = value != NULL ? strlen(value) : 0;
    uint8_t *p = logrec_begin(buf, LOGREC_PUT, sid, key, strlen(key),
                              elen + vlen);
    memcpy(p, env, elen);
    if (vlen > 0) {
        memcpy(p + elen, value, vlen);
    }
    logrec_seal(buf, ts + 5, 1);
    struct logrec r;
    ck_assert_int_eq(logrec_decode(buf, logrec_size(strlen(key), elen + vlen),
                                   &r),
                     LOGREC_OK);
    return r;
}

static bool
_apply_remote(struct txn_batch *b, const struct logrec *r)
{
    bool applied = false;
    ck_assert_int_eq(txn_stage_replicated(b, r, &applied), TXN_OK);
    ck_assert_int_eq(txn_commit(b), TXN_OK);
    return applied;
}

START_TEST(test_conflict_rule_converges_in_any_order)
{
    /* Three writes to one key from two servers, applied in every order,
     * always leave the one with the highest (ts, sid). */
    static const struct {
        const char *value;
        uint64_t ts;
        uint32_t sid;
    } w[3] = {{"from-A-100", 100, 1}, {"from-B-100", 100, 2},
              {"from-A-90", 90, 1}};
    static const int orders[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                     {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    for (int o = 0; o < 6; o++) {
        struct txn_batch b;
        char key[8];
        char v[64];
        ck_assert_int_eq(txn_batch_init(&b, &eng, 1024), 0);
        snprintf(key, sizeof(key), "o%d", o);
        for (int i = 0; i < 3; i++) {
            uint8_t buf[256];
            int k = orders[o][i];
            struct logrec r = _remote(buf, key, w[k].value, w[k].ts, w[k].sid,
                                      RECORD_VALUE, 0);
            _apply_remote(&b, &r);
        }
        ck_assert(_get(&b, key, v, sizeof(v)));
        ck_assert_str_eq(v, "from-B-100");
        txn_batch_deinit(&b);
    }
}
END_TEST

START_TEST(test_replicated_delete_and_late_older_write)
{
    struct txn_batch b;
    uint8_t buf[256];
    char v[64];
    eng.keep_tombstones = true; /* as with an update log (T6) */
    ck_assert_int_eq(txn_batch_init(&b, &eng, 1024), 0);
    struct logrec r = _remote(buf, "d", "v1", 100, 2, RECORD_VALUE, 0);
    ck_assert(_apply_remote(&b, &r));
    r = _remote(buf, "d", NULL, 200, 2, RECORD_TOMBSTONE, 0);
    ck_assert(_apply_remote(&b, &r));
    ck_assert(!_get(&b, "d", v, sizeof(v)));
    /* An older write arriving late loses to the delete. */
    r = _remote(buf, "d", "late", 150, 1, RECORD_VALUE, 0);
    ck_assert(!_apply_remote(&b, &r));
    ck_assert(!_get(&b, "d", v, sizeof(v)));
    /* A newer one wins. */
    r = _remote(buf, "d", "new", 250, 1, RECORD_VALUE, 0);
    ck_assert(_apply_remote(&b, &r));
    ck_assert(_get(&b, "d", v, sizeof(v)));
    ck_assert_str_eq(v, "new");
    txn_batch_deinit(&b);
}
END_TEST

START_TEST(test_replicated_expired_value_never_comes_back)
{
    struct txn_batch b;
    struct txn_current cur;
    uint8_t buf[256];
    eng.keep_tombstones = true;
    ck_assert_int_eq(txn_batch_init(&b, &eng, 1024), 0);
    struct logrec r = _remote(buf, "e", "gone", 100, 2, RECORD_VALUE, 1);
    ck_assert(_apply_remote(&b, &r));
    ck_assert_int_eq(txn_read(&b, "e", 1, &cur), TXN_OK);
    /* Stored as a tombstone with the write's stamp, never as a value. */
    ck_assert(cur.found && cur.meta.kind == RECORD_TOMBSTONE);
    ck_assert_uint_eq(cur.meta.ts, 100);
    txn_current_release(&cur);
    /* So an older write that arrives later still loses. */
    r = _remote(buf, "e", "older", 50, 1, RECORD_VALUE, 0);
    ck_assert(!_apply_remote(&b, &r));
    txn_batch_deinit(&b);
}
END_TEST

START_TEST(test_replication_observes_the_clock)
{
    struct txn_batch b;
    uint8_t buf[256];
    ck_assert_int_eq(txn_batch_init(&b, &eng, 1024), 0);
    uint64_t future = util_now_us() + 3600ULL * 1000000u;
    struct logrec r = _remote(buf, "c", "future", future, 2, RECORD_VALUE, 0);
    ck_assert(_apply_remote(&b, &r));
    /* A local write made after seeing it sorts after it. */
    _put(&b, "c", "local");
    txn_commit(&b);
    char v[64];
    ck_assert(_get(&b, "c", v, sizeof(v)));
    ck_assert_str_eq(v, "local");
    txn_batch_deinit(&b);
}
END_TEST

/* ------------------------------------------- apply after sync (T8, T9) */

static struct ulog *ulog;
static struct logger lg;

/* Like _setup, with an update log under "always"; the sync thread runs
 * only if `threads`, so that without it nothing is durable until a batch
 * asks (ulog_wait_durable syncs itself then). */
static void
_setup_logged(bool threads)
{
    struct dbspec spec;
    struct ulog_options o;
    struct ulog_recovery rec;
    char err[256];

    unit_tmpdir_make(dir, sizeof(dir), "check_txn");
    char path[UNIT_TMPDIR_MAX + 32];
    unit_tmpdir_path(path, sizeof(path), dir, "t.tch");
    ck_assert(dbspec_parse(path, &spec, err, sizeof(err)));
    store = store_open(&spec, NULL, NULL, err, sizeof(err));
    ck_assert_ptr_nonnull(store);
    clock_init(&clk, 0);
    log_open(&lg, "/dev/null", LOG_ERROR);
    memset(&o, 0, sizeof(o));
    snprintf(o.dir, sizeof(o.dir), "%s/t.ulog", dir);
    o.segment_max = 1 << 20;
    o.fsync = ULOG_FSYNC_ALWAYS;
    o.sid = 1;
    o.checkpoint_ms = 1000000;
    o.checkpoint_bytes = UINT64_MAX;
    o.clock = &clk;
    o.log = &lg;
    ulog = ulog_open(&o, &rec, err, sizeof(err));
    ck_assert_msg(ulog != NULL, "%s", err);
    if (threads) {
        ck_assert_int_eq(ulog_start(ulog), 0);
    }
    ck_assert_int_eq(txn_engine_init(&eng, store, &clk, ulog, 1, 64, NULL,
                                     err, sizeof(err)),
                     0);
    eng.apply_after_sync = true;
}

static void
_setup_logged_alone(void)
{
    _setup_logged(false);
}

static void
_setup_logged_threads(void)
{
    _setup_logged(true);
}

static void
_teardown_logged(void)
{
    txn_engine_deinit(&eng);
    ulog_close(ulog);
    store_close(store);
    log_close(&lg);
    unit_tmpdir_remove(dir);
}

/* What the store itself holds for `key`, bypassing every batch. */
static bool
_stored(const char *key, char *out, size_t cap)
{
    uint8_t scratch[512];
    struct store_value sv;
    struct record_meta m;
    const uint8_t *v;
    size_t vlen;
    if (store_get(store, key, strlen(key), scratch, sizeof(scratch), &sv) !=
        STORE_OK) {
        return false;
    }
    ck_assert_int_eq(record_decode(sv.data, sv.len, &m, &v, &vlen),
                     RECORD_OK);
    snprintf(out, cap, "%.*s", (int)vlen, (const char *)v);
    store_value_release(&sv);
    return m.kind == RECORD_VALUE;
}

START_TEST(test_t8_store_changes_only_once_durable)
{
    struct txn_batch b;
    char v[64];

    ck_assert_int_eq(txn_batch_init(&b, &eng, 1024), 0);
    _put(&b, "k", "one");
    ck_assert_int_eq(txn_commit(&b), TXN_OK);
    /* Logged, not durable (no sync thread): the store has nothing yet,
     * and nothing may be answered. */
    ck_assert(!_stored("k", v, sizeof(v)));
    ck_assert_uint_lt(txn_applied_lsn(&b), b.last_lsn);
    ck_assert_int_eq(txn_apply_durable(&b), TXN_OK);
    ck_assert(!_stored("k", v, sizeof(v)));
    /* The batch reads its own waiting change, and builds on it. */
    ck_assert(_get(&b, "k", v, sizeof(v)));
    ck_assert_str_eq(v, "one");
    _put(&b, "k", "two");
    ck_assert_int_eq(txn_commit(&b), TXN_OK);
    ck_assert(_get(&b, "k", v, sizeof(v)));
    ck_assert_str_eq(v, "two");
    ck_assert(!_stored("k", v, sizeof(v)));
    /* Durable: applied, oldest first, and answerable. */
    ck_assert_int_eq(txn_wait_applied(&b), TXN_OK);
    ck_assert(_stored("k", v, sizeof(v)));
    ck_assert_str_eq(v, "two");
    ck_assert_uint_ge(txn_applied_lsn(&b), b.last_lsn);
    ck_assert(!txn_pending(&b));
    txn_batch_deinit(&b);
}
END_TEST

/* The log's record of `key` with the highest lsn, or 0 if none. */
static uint64_t
_logged_lsn(const char *key)
{
    struct ulog_reader *r;
    struct logrec rec;
    uint64_t lsn = 0;
    ck_assert_int_eq(ulog_reader_open(ulog, 0, &r), ULOG_OK);
    while (ulog_reader_next(r, &rec, false) == ULOG_OK) {
        if (rec.nkey == strlen(key) && memcmp(rec.key, key, rec.nkey) == 0) {
            lsn = rec.lsn;
        }
    }
    ulog_reader_close(r);
    return lsn;
}

/*
 * ulog.h U2 (txn.h T2, T3) where changes are applied at commit: whatever
 * the store holds was written to the log first, and the batch counts as
 * answerable only once the log says the record is durable.
 */
START_TEST(test_u2_applied_only_once_logged_answered_once_durable)
{
    struct txn_batch b;
    char key[32], v[64];

    eng.apply_after_sync = false; /* as under -fsync N ms */
    ck_assert_int_eq(txn_batch_init(&b, &eng, 1024), 0);
    for (int i = 0; i < 20; i++) {
        snprintf(key, sizeof(key), "u2-%d", i);
        _put(&b, key, "v");
        ck_assert_int_eq(txn_commit(&b), TXN_OK);
        /* Applied, and logged at or before the batch's last lsn. */
        ck_assert(_stored(key, v, sizeof(v)));
        uint64_t lsn = _logged_lsn(key);
        ck_assert_uint_ne(lsn, 0);
        ck_assert_uint_le(lsn, b.last_lsn);
        /* No sync yet (no sync thread): nothing may be answered. */
        ck_assert(!txn_durable(&b));
        ck_assert_uint_lt(ulog_durable_lsn(ulog), lsn);
    }
    ck_assert_int_eq(ulog_wait_durable(ulog, b.last_lsn), ULOG_OK);
    ck_assert(txn_durable(&b));
    txn_batch_deinit(&b);
}
END_TEST

/* A key "<prefix><n>" whose stripe is `stripe` (same) or is not. */
static void
_key_by_stripe(char *out, size_t cap, const char *prefix, uint32_t stripe,
               bool same)
{
    for (unsigned n = 0;; n++) {
        snprintf(out, cap, "%s%u", prefix, n);
        uint32_t s = (uint32_t)(util_hash(out, strlen(out)) &
                                (eng.nstripes - 1));
        if ((s == stripe) == same) {
            return;
        }
    }
}

START_TEST(test_t8_only_waiting_stripes_are_scanned)
{
    struct txn_batch b;
    char other[32], same[32], v[64];
    uint32_t k_stripe = (uint32_t)(util_hash("k", 1) & (eng.nstripes - 1));

    ck_assert_int_eq(txn_batch_init(&b, &eng, 1024), 0);
    ck_assert(!txn_waiting_holds(&b, "k", 1));
    _put(&b, "k", "one");
    ck_assert_int_eq(txn_commit(&b), TXN_OK);
    ck_assert(txn_waiting_holds(&b, "k", 1));
    /* Staged alone in its stripe: its read goes straight to the store
     * (the staged change's own hold is not a waiting group's). */
    _key_by_stripe(other, sizeof(other), "o", k_stripe, false);
    _put(&b, other, "x");
    ck_assert(!txn_waiting_holds(&b, other, strlen(other)));
    ck_assert(txn_waiting_holds(&b, "k", 1));
    /* Staged in the waiting group's stripe: that group is still read
     * first, and has nothing for this key. */
    _key_by_stripe(same, sizeof(same), "s", k_stripe, true);
    _put(&b, same, "y");
    ck_assert(txn_waiting_holds(&b, same, strlen(same)));
    ck_assert(_get(&b, "k", v, sizeof(v)));
    ck_assert_str_eq(v, "one");
    ck_assert(_get(&b, same, v, sizeof(v)));
    ck_assert_str_eq(v, "y");
    ck_assert_int_eq(txn_wait_applied(&b), TXN_OK);
    ck_assert(!txn_waiting_holds(&b, "k", 1));
    ck_assert(!txn_waiting_holds(&b, same, strlen(same)));
    txn_batch_deinit(&b);
}
END_TEST

START_TEST(test_t8_expiry_goes_through_the_log)
{
    struct txn_batch b;
    struct txn_current cur;
    char v[64];

    ck_assert_int_eq(txn_batch_init(&b, &eng, 1024), 0);
    _put(&b, "k", "one");
    ck_assert_int_eq(txn_wait_applied(&b), TXN_OK);
    ck_assert_int_eq(txn_read(&b, "k", 1, &cur), TXN_OK);
    uint64_t ts = cur.meta.ts;
    txn_current_release(&cur);
    uint64_t before = b.last_lsn;
    ck_assert(txn_expire(&b, "k", 1, ts));
    /* A logged tombstone with the value's own stamp, applied like any
     * change: not before it is durable. */
    ck_assert(_stored("k", v, sizeof(v)));
    ck_assert_int_eq(txn_wait_applied(&b), TXN_OK);
    ck_assert_uint_gt(b.last_lsn, before);
    ck_assert(!_stored("k", v, sizeof(v)));
    ck_assert_int_eq(txn_read(&b, "k", 1, &cur), TXN_OK);
    ck_assert(cur.found && cur.meta.kind == RECORD_TOMBSTONE);
    ck_assert_uint_eq(cur.meta.ts, ts);
    txn_current_release(&cur);
    txn_batch_deinit(&b);
}
END_TEST

struct crosser {
    const char *mine;
    const char *theirs;
    pthread_barrier_t *both_hold;
    _Atomic bool done;
};

/* Holds a waiting change to its own key, then wants the other's. */
static void *
_cross(void *arg)
{
    struct crosser *c = arg;
    struct txn_batch b;
    struct txn_current cur;
    ck_assert_int_eq(txn_batch_init(&b, &eng, 1024), 0);
    _put(&b, c->mine, "x");
    ck_assert_int_eq(txn_commit(&b), TXN_OK);
    pthread_barrier_wait(c->both_hold);
    ck_assert_int_eq(txn_begin_key(&b, c->theirs, strlen(c->theirs), &cur),
                     TXN_OK);
    txn_current_release(&cur);
    ck_assert_int_eq(txn_wait_applied(&b), TXN_OK);
    txn_batch_deinit(&b);
    atomic_store(&c->done, true);
    return NULL;
}

static bool
_both_done(struct crosser *c)
{
    return atomic_load(&c[0].done) && atomic_load(&c[1].done);
}

/* Polls until both threads are done, for at most `ms`. */
static bool
_wait_both(struct crosser *c, uint64_t ms)
{
    uint64_t until = util_mono_ms() + ms;
    while (!_both_done(c)) {
        if (util_mono_ms() > until) {
            return false;
        }
        usleep(1000);
    }
    return true;
}

START_TEST(test_t9_waiting_groups_never_deadlock)
{
    /* Each thread holds, in a group waiting for durability, the stripe
     * the other wants next. T9 makes each apply its own before it waits. */
    for (int round = 0; round < 50; round++) {
        pthread_barrier_t barrier;
        pthread_barrier_init(&barrier, NULL, 2);
        struct crosser c[2] = {{"a", "b", &barrier, false},
                               {"b", "a", &barrier, false}};
        pthread_t th[2];
        for (int i = 0; i < 2; i++) {
            ck_assert_int_eq(pthread_create(&th[i], NULL, _cross, &c[i]), 0);
        }
        ck_assert_msg(_wait_both(c, 10000), "round %d deadlocked", round);
        for (int i = 0; i < 2; i++) {
            pthread_join(th[i], NULL);
        }
        pthread_barrier_destroy(&barrier);
    }
}
END_TEST

static Suite *
txn_suite(void)
{
    Suite *s = suite_create("txn");
    TCase *tc = tcase_create("batch");
    tcase_add_checked_fixture(tc, _setup, _teardown);
    tcase_add_test(tc, test_commit_applies);
    tcase_add_test(tc, test_t5_same_key_twice_sees_own_change);
    tcase_add_test(tc, test_remove);
    tcase_add_test(tc, test_large_record_read_beyond_scratch);
    tcase_add_test(tc, test_t1_t4_no_lost_update_no_deadlock);
    tcase_add_test(tc, test_expire_only_matching_stamp);
    tcase_add_test(tc, test_flush_state_persists);
    tcase_add_test(tc, test_conflict_rule_converges_in_any_order);
    tcase_add_test(tc, test_replicated_delete_and_late_older_write);
    tcase_add_test(tc, test_replicated_expired_value_never_comes_back);
    tcase_add_test(tc, test_replication_observes_the_clock);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    tc = tcase_create("apply_after_sync");
    tcase_add_checked_fixture(tc, _setup_logged_alone, _teardown_logged);
    tcase_add_test(tc, test_t8_store_changes_only_once_durable);
    tcase_add_test(tc, test_u2_applied_only_once_logged_answered_once_durable);
    tcase_add_test(tc, test_t8_expiry_goes_through_the_log);
    tcase_add_test(tc, test_t8_only_waiting_stripes_are_scanned);
    suite_add_tcase(s, tc);
    tc = tcase_create("apply_after_sync_threads");
    tcase_add_checked_fixture(tc, _setup_logged_threads, _teardown_logged);
    tcase_add_test(tc, test_t9_waiting_groups_never_deadlock);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(txn_suite)
