/*
 * Unit tests of the log's concurrent paths. ulog.h U13: appends claim
 * their place under the log's lock and write outside it, yet nothing is
 * read, synced or answered before every record before it is in the file,
 * and a crash between two claims' writes leaves a log that U3's cut ends
 * before the hole. U14: under "always" the thread that asks for a sync
 * with none in flight issues it, and one that asks meanwhile is called
 * back to lead the next.
 *
 * This program is linked with pwrite and fdatasync wrapped
 * (-Wl,--wrap=...): a write of a chosen length, or an fdatasync by a
 * chosen thread, waits at a gate until the test opens it, so a later
 * append's write finishes first, or a sync stays in flight while another
 * thread asks, which the scheduler otherwise does only now and then.
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
#include "ulog_fixture.h"
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

int __real_fdatasync(int fd);
int __wrap_fdatasync(int fd);

static bool sync_gate_closed; /* fdatasync by sync_gate_thread waits */
static pthread_t sync_gate_thread;

int
__wrap_fdatasync(int fd)
{
    pthread_mutex_lock(&gate_lock);
    if (sync_gate_closed && pthread_equal(pthread_self(), sync_gate_thread)) {
        gate_reached = true;
        pthread_cond_broadcast(&gate_cond);
        while (sync_gate_closed) {
            pthread_cond_wait(&gate_cond, &gate_lock);
        }
    }
    pthread_mutex_unlock(&gate_lock);
    return __real_fdatasync(fd);
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
    sync_gate_closed = false;
    pthread_cond_broadcast(&gate_cond);
    pthread_mutex_unlock(&gate_lock);
}

static struct ulog_fixture fx;

static void
_setup(void)
{
    ulog_fixture_setup(&fx, "check_ulog_claims");
}

static void
_teardown(void)
{
    _open_gate();
    ulog_fixture_teardown(&fx);
}

/* No peer has anything: every segment is kept for the readers. */
static uint64_t
_none_acked(void *arg)
{
    (void)arg;
    return 0;
}

static struct ulog *
_open_policy(const char *sub, enum ulog_fsync fsync, struct ulog_recovery *rec)
{
    struct ulog_options o;
    ulog_fixture_options(&fx, &o, fsync, 1 << 20);
    snprintf(o.dir, sizeof(o.dir), "%s/%s", fx.dir, sub);
    o.peers_acked = _none_acked;
    return ulog_fixture_open(&o, rec);
}

static struct ulog *
_open_in(const char *sub, struct ulog_recovery *rec)
{
    return _open_policy(sub, ULOG_FSYNC_NEVER, rec);
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
    snprintf(crashed, sizeof(crashed), "%s/crashed", fx.dir);
    snprintf(copy_of, sizeof(copy_of), "%s/ulog", fx.dir);
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

/* A watcher's calls, and whether its lsn was durable at the first. */
struct watch {
    struct ulog *u;
    uint64_t lsn;
    _Atomic int calls;
    _Atomic bool durable_at_first;
};

static void
_on_watch(void *arg)
{
    struct watch *w = arg;
    if (atomic_fetch_add(&w->calls, 1) == 0) {
        atomic_store(&w->durable_at_first, ulog_durable(w->u, w->lsn));
    }
}

struct leader {
    struct ulog *u;
    int watcher;
    uint64_t lsn;
    bool led;          /* ulog_want_sync() returned true */
    _Atomic bool done;
};

/* Asks for a sync with its fdatasync held at the gate. */
static void *
_lead(void *arg)
{
    struct leader *l = arg;
    pthread_mutex_lock(&gate_lock);
    sync_gate_thread = pthread_self();
    sync_gate_closed = true;
    gate_reached = false;
    pthread_mutex_unlock(&gate_lock);
    l->led = ulog_want_sync(l->u, l->watcher, l->lsn);
    atomic_store(&l->done, true);
    return NULL;
}

/* Waits (five seconds at most) until the leader's fdatasync is held or
 * it returned without one (the sync thread's lazy sync came first). */
static bool
_leader_held(struct leader *l)
{
    uint64_t deadline = util_mono_ms() + 5000;
    while (util_mono_ms() < deadline && !atomic_load(&l->done)) {
        pthread_mutex_lock(&gate_lock);
        bool reached = gate_reached;
        pthread_mutex_unlock(&gate_lock);
        if (reached) {
            return true;
        }
        usleep(200);
    }
    return false;
}

/* A log under "always" with two watchers: a thread leads a sync of
 * first->lsn, its fdatasync held at the gate, and second->lsn, written
 * after it began, waits on it. */
struct held_sync {
    struct ulog *u;
    struct watch first;
    struct watch second;
    int w1;
    int w2;
    struct leader l;
    pthread_t th;
};

static void
_hold_a_sync(struct held_sync *h)
{
    struct watch *first = &h->first;
    struct watch *second = &h->second;
    struct ulog_recovery rec;
    h->u = _open_policy("ulog", ULOG_FSYNC_ALWAYS, &rec);
    *first = (struct watch){h->u, 0, 0, false};
    *second = (struct watch){h->u, 0, 0, false};
    h->w1 = ulog_watch(h->u, _on_watch, first);
    h->w2 = ulog_watch(h->u, _on_watch, second);
    ck_assert_int_ge(h->w1, 0);
    ck_assert_int_ge(h->w2, 0);
    ck_assert_int_eq(ulog_start(h->u), 0);

    /* The sync thread's lazy sync may take the record first; try again
     * with another. */
    bool held = false;
    for (int attempt = 0; attempt < 20 && !held; attempt++) {
        char key[16];
        snprintf(key, sizeof(key), "one%d", attempt);
        first->lsn = _append(h->u, key, 10);
        atomic_store(&first->calls, 0);
        h->l = (struct leader){h->u, h->w1, first->lsn, false, false};
        pthread_create(&h->th, NULL, _lead, &h->l);
        held = _leader_held(&h->l);
        if (!held) {
            pthread_join(h->th, NULL);
            /* Answered by the sync that came first, at once or when it
             * ends. */
            uint64_t until = util_mono_ms() + 5000;
            while (atomic_load(&first->calls) == 0 &&
                   util_mono_ms() < until) {
                usleep(200);
            }
            ck_assert_int_eq(atomic_load(&first->calls), 1);
        }
    }
    ck_assert(held);
    ck_assert(!ulog_durable(h->u, first->lsn));
    second->lsn = _append(h->u, "two", 10);
    ck_assert(!ulog_want_sync(h->u, h->w2, second->lsn)); /* in flight */
    ck_assert_int_eq(atomic_load(&second->calls), 0);
}

/*
 * U14: a worker that asks for a sync with none in flight issues it and
 * is not called back; one that asks while it is in flight is not made
 * durable by it (its record came after the sync began) but is called
 * back when it ends, before its record is durable, and then leads the
 * next sync itself. Before U14 the second was called back only once the
 * sync thread had synced it.
 */
START_TEST(test_u14_the_asker_leads_and_hands_on)
{
    struct held_sync h;
    _hold_a_sync(&h);
    struct ulog *u = h.u;

    _open_gate();
    pthread_join(h.th, NULL);
    ck_assert(h.l.led);
    ck_assert(ulog_durable(u, h.first.lsn));
    uint64_t deadline = util_mono_ms() + 5000;
    while (atomic_load(&h.second.calls) == 0 && util_mono_ms() < deadline) {
        usleep(200);
    }
    ck_assert_int_eq(atomic_load(&h.second.calls), 1);
    ck_assert(!atomic_load(&h.second.durable_at_first)); /* asked to lead */
    ck_assert(ulog_want_sync(u, h.w2, h.second.lsn));
    ck_assert(ulog_durable(u, h.second.lsn));
    ck_assert_int_eq(atomic_load(&h.second.calls), 1);
    ck_assert_int_eq(atomic_load(&h.first.calls), 0);
    ulog_close(u);
}
END_TEST

/*
 * U9, U14: a rotation's fdatasync makes a waiting watcher's record
 * durable while another sync is in flight; the watcher is called back
 * then, not only when that sync ends. Before, it waited for the next
 * sync to end (here: for ever, as the one in flight is held).
 */
START_TEST(test_u9_a_rotation_tells_the_watchers)
{
    struct held_sync h;
    _hold_a_sync(&h);
    struct ulog *u = h.u;
    /* Fill the 1 MiB segment: the append past it rotates, syncing it. */
    struct ulog_stats st;
    ulog_stats(u, &st);
    uint64_t segments = st.segments;
    for (int i = 0; st.segments == segments && i < 4000; i++) {
        char key[16];
        snprintf(key, sizeof(key), "fill%d", i);
        (void)_append(u, key, 900);
        ulog_stats(u, &st);
    }
    ck_assert_uint_gt(st.segments, segments);
    ck_assert(ulog_durable(u, h.second.lsn));
    uint64_t deadline = util_mono_ms() + 5000;
    while (atomic_load(&h.second.calls) == 0 && util_mono_ms() < deadline) {
        usleep(200);
    }
    ck_assert_int_eq(atomic_load(&h.second.calls), 1);
    ck_assert(atomic_load(&h.second.durable_at_first));
    _open_gate();
    pthread_join(h.th, NULL);
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
    tcase_add_test(tc, test_u14_the_asker_leads_and_hands_on);
    tcase_add_test(tc, test_u9_a_rotation_tells_the_watchers);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(ulog_claims_suite)
