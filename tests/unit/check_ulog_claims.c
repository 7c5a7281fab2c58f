/*
 * Unit tests: ulog.h U13, appends claim their place under the log's lock
 * and write outside it, yet nothing is read, synced or answered before
 * every record before it is in the file, and a crash between two claims'
 * writes leaves a log that U3's cut ends before the hole.
 *
 * This program is linked with pwrite wrapped (-Wl,--wrap=pwrite): a
 * write of a chosen length waits at a gate until the test opens it, so
 * a later append's write finishes first, which the scheduler otherwise
 * does only now and then.
 */
#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
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
#include "unit_main.h"
#include "unit_tmpdir.h"
#include "util.h"

ssize_t __real_pwrite(int fd, const void *buf, size_t n, off_t off);
ssize_t __wrap_pwrite(int fd, const void *buf, size_t n, off_t off);

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static size_t gate_len;   /* a write of this length waits ... */
static bool gate_closed;  /* ... while this is set */
static bool gate_reached; /* one is waiting */

ssize_t
__wrap_pwrite(int fd, const void *buf, size_t n, off_t off)
{
    pthread_mutex_lock(&gate_lock);
    if (gate_closed && n == gate_len) {
        gate_reached = true;
        pthread_cond_broadcast(&gate_cond);
        while (gate_closed) {
            pthread_cond_wait(&gate_cond, &gate_lock);
        }
    }
    pthread_mutex_unlock(&gate_lock);
    return __real_pwrite(fd, buf, n, off);
}

static void
_close_gate(size_t len)
{
    pthread_mutex_lock(&gate_lock);
    gate_len = len;
    gate_closed = true;
    gate_reached = false;
    pthread_mutex_unlock(&gate_lock);
}

/* Waits (five seconds at most) until a write waits at the gate. */
static bool
_gate_reached(void)
{
    bool reached;
    uint64_t deadline = util_mono_ms() + 5000;
    pthread_mutex_lock(&gate_lock);
    while (!gate_reached && util_mono_ms() < deadline) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 10 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&gate_cond, &gate_lock, &ts);
    }
    reached = gate_reached;
    pthread_mutex_unlock(&gate_lock);
    return reached;
}

static void
_open_gate(void)
{
    pthread_mutex_lock(&gate_lock);
    gate_closed = false;
    pthread_cond_broadcast(&gate_cond);
    pthread_mutex_unlock(&gate_lock);
}

static char dir[UNIT_TMPDIR_MAX];
static struct logger lg;
static struct clock clk;

static void
_setup(void)
{
    unit_tmpdir_make(dir, sizeof(dir), "check_ulog_claims");
    log_open(&lg, "/dev/null", LOG_ERROR);
    clock_init(&clk, 0);
}

static void
_teardown(void)
{
    _open_gate();
    unit_tmpdir_remove(dir);
    log_close(&lg);
}

/* No peer has anything: every segment is kept for the readers. */
static uint64_t
_none_acked(void *arg)
{
    (void)arg;
    return 0;
}

static struct ulog *
_open_in(const char *sub, struct ulog_recovery *rec)
{
    struct ulog_options o;
    char err[256];
    memset(&o, 0, sizeof(o));
    snprintf(o.dir, sizeof(o.dir), "%s/%s", dir, sub);
    o.segment_max = 1 << 20;
    o.fsync = ULOG_FSYNC_NEVER;
    o.sid = 1;
    o.checkpoint_ms = 1000000;
    o.checkpoint_bytes = UINT64_MAX;
    o.clock = &clk;
    o.log = &lg;
    o.peers_acked = _none_acked;
    struct ulog *u = ulog_open(&o, rec, err, sizeof(err));
    ck_assert_msg(u != NULL, "%s", err);
    return u;
}

/* A PUT of `key` with a value of `vlen` bytes; returns its size. */
static size_t
_record(uint8_t *out, const char *key, size_t vlen)
{
    struct record_meta m = {
        .kind = RECORD_VALUE, .flags = 0, .exptime = 0, .cas = 5, .ts = 5,
        .sid = 1};
    uint8_t env[RECORD_HEADER_MAX];
    size_t elen = record_encode(&m, env);
    uint8_t *p = logrec_begin(out, LOGREC_PUT, 1, key, strlen(key),
                              elen + vlen);
    memcpy(p, env, elen);
    memset(p + elen, 'v', vlen);
    return logrec_size(strlen(key), elen + vlen);
}

static uint64_t
_append(struct ulog *u, const char *key, size_t vlen)
{
    uint8_t buf[2048];
    uint64_t lsn = 0;
    size_t n = _record(buf, key, vlen);
    ck_assert_int_eq(ulog_append(u, -1, buf, n, 1, &lsn), ULOG_OK);
    return lsn;
}

/* Polls until the sync thread has zeroed space ahead of the end. */
static bool
_wait_prepared(struct ulog *u)
{
    struct ulog_stats st;
    uint64_t deadline = util_mono_ms() + 5000;
    do {
        ulog_stats(u, &st);
        if (st.prepared_ahead > 4096) {
            return true;
        }
        usleep(1000);
    } while (util_mono_ms() < deadline);
    return false;
}

/* The keys a reader finds after lsn `after`, joined by spaces, with
 * their seqs checked dense. */
static void
_keys(struct ulog *u, uint64_t after, char *out, size_t cap)
{
    struct ulog_reader *r;
    struct logrec rec;
    uint64_t seq = 0;
    out[0] = '\0';
    ck_assert_int_eq(ulog_reader_open(u, after, &r), ULOG_OK);
    while (ulog_reader_next(r, &rec, false) == ULOG_OK) {
        ck_assert(seq == 0 || rec.seq == seq + 1); /* U1 */
        seq = rec.seq;
        size_t len = strlen(out);
        snprintf(out + len, cap - len, "%s%.*s", len > 0 ? " " : "",
                 (int)rec.nkey, (const char *)rec.key);
    }
    ulog_reader_close(r);
}

struct slow_append {
    struct ulog *u;
    uint64_t lsn;
};

static void *
_slow_append(void *arg)
{
    struct slow_append *a = arg;
    a->lsn = _append(a->u, "slow", 777);
    return NULL;
}

static void
_copy(const char *from, const char *to)
{
    char cmd[3 * UNIT_TMPDIR_MAX];
    snprintf(cmd, sizeof(cmd), "cp -a '%s' '%s'", from, to);
    ck_assert_int_eq(system(cmd), 0);
}

/*
 * U13: a claim whose write is slow holds back the written end, and so
 * the readers and the durable lsn, until it is written, even though a
 * later claim's write has finished; the log then reads in lsn order with
 * dense seqs. A copy of the log taken while the slow write waits (what a
 * crash would leave) ends, after U3's cut, before the hole.
 */
START_TEST(test_u13_written_end_waits_for_earlier_claims)
{
    struct ulog_recovery rec;
    struct ulog *u = _open_in("ulog", &rec);
    ck_assert_int_eq(ulog_start(u), 0);
    uint64_t first = _append(u, "first", 10);
    ck_assert(_wait_prepared(u));

    uint8_t probe[2048];
    _close_gate(_record(probe, "slow", 777));
    struct slow_append a = {u, 0};
    pthread_t th;
    pthread_create(&th, NULL, _slow_append, &a);
    ck_assert(_gate_reached());
    uint64_t fast = _append(u, "fast", 20); /* written, not yet readable */
    uint64_t lsn;
    uint64_t seq;
    ulog_position(u, &lsn, &seq);
    ck_assert_uint_eq(lsn, first);
    ck_assert(!ulog_durable(u, fast));
    char keys[256];
    _keys(u, 0, keys, sizeof(keys));
    ck_assert_str_eq(keys, "first");

    char crashed[UNIT_TMPDIR_MAX + 16];
    char copy_of[UNIT_TMPDIR_MAX + 16];
    snprintf(crashed, sizeof(crashed), "%s/crashed", dir);
    snprintf(copy_of, sizeof(copy_of), "%s/ulog", dir);
    _copy(copy_of, crashed);

    _open_gate();
    pthread_join(th, NULL);
    ck_assert_uint_lt(a.lsn, fast);
    ulog_position(u, &lsn, &seq);
    ck_assert_uint_eq(lsn, fast);
    _keys(u, 0, keys, sizeof(keys));
    ck_assert_str_eq(keys, "first slow fast");
    ulog_close(u);

    /* The crash copy: the slow claim's place is zeros with the fast one's
     * record after it; the log ends at the zeros (U3). */
    struct ulog *c = _open_in("crashed", &rec);
    ck_assert_uint_eq(rec.last_lsn, first);
    ck_assert_uint_gt(rec.cut_bytes, 0);
    _keys(c, 0, keys, sizeof(keys));
    ck_assert_str_eq(keys, "first");
    ulog_close(c);

    /* And the whole log reopens with all three. */
    u = _open_in("ulog", &rec);
    ck_assert_uint_eq(rec.last_lsn, fast);
    _keys(u, 0, keys, sizeof(keys));
    ck_assert_str_eq(keys, "first slow fast");
    ulog_close(u);
}
END_TEST

struct hammer {
    struct ulog *u;
    int id;
};

static void *
_hammer(void *arg)
{
    struct hammer *h = arg;
    char key[32];
    for (int i = 0; i < 400; i++) {
        snprintf(key, sizeof(key), "t%d:%d", h->id, i);
        (void)_append(h->u, key, (size_t)(1 + (i * 37 + h->id * 11) % 900));
    }
    return NULL;
}

/* U1, U13: appenders in parallel across rotations leave every record,
 * in lsn order with dense seqs, before and after a reopen. */
START_TEST(test_u13_parallel_appends_stay_dense)
{
    enum { THREADS = 6 };
    struct ulog_recovery rec;
    struct ulog *u = _open_in("ulog", &rec);
    ck_assert_int_eq(ulog_start(u), 0);
    pthread_t th[THREADS];
    struct hammer h[THREADS];
    for (int i = 0; i < THREADS; i++) {
        h[i] = (struct hammer){u, i};
        pthread_create(&th[i], NULL, _hammer, &h[i]);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
    }
    static char keys[THREADS * 400 * 12];
    _keys(u, 0, keys, sizeof(keys));
    int n = 0;
    for (const char *p = keys; *p != '\0'; p++) {
        n += *p == ' ';
    }
    ck_assert_int_eq(n + 1, THREADS * 400);
    struct ulog_stats st;
    ulog_stats(u, &st);
    ck_assert_uint_gt(st.segments, 1);
    ulog_close(u);
    u = _open_in("ulog", &rec);
    ck_assert_uint_eq(rec.cut_bytes, 0);
    _keys(u, 0, keys, sizeof(keys));
    n = 0;
    for (const char *p = keys; *p != '\0'; p++) {
        n += *p == ' ';
    }
    ck_assert_int_eq(n + 1, THREADS * 400);
    ulog_close(u);
}
END_TEST

static Suite *
ulog_claims_suite(void)
{
    Suite *s = suite_create("ulog_claims");
    TCase *tc = tcase_create("claims");
    tcase_add_checked_fixture(tc, _setup, _teardown);
    tcase_add_test(tc, test_u13_written_end_waits_for_earlier_claims);
    tcase_add_test(tc, test_u13_parallel_appends_stay_dense);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(ulog_claims_suite)
