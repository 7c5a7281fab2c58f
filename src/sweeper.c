/*
 * sweeper: background reclamation of expired records (see sweeper.h).
 */
#include "sweeper.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "expiry.h"
#include "record.h"
#include "util.h"

int
sweeper_init(struct sweeper *sw, struct txn_engine *eng, struct logger *log,
             unsigned slice_keys, unsigned pause_ms, size_t scratch_cap,
             sweeper_limits_fn limits, void *limits_arg)
{
    memset(sw, 0, sizeof(*sw));
    sw->eng = eng;
    sw->log = log;
    sw->slice_keys = slice_keys;
    sw->pause_ms = pause_ms;
    sw->limits = limits;
    sw->limits_arg = limits_arg;
    pthread_mutex_init(&sw->lock, NULL);
    pthread_cond_init(&sw->cond, NULL);
    if (txn_batch_init(&sw->batch, eng, scratch_cap) != 0) {
        return -1;
    }
    store_iter_acquire(eng->store);
    store_iter_init(eng->store);
    store_iter_release(eng->store);
    return 0;
}

unsigned
sweeper_slice(struct sweeper *sw, unsigned max_keys)
{
    char key[RECORD_KEY_MAX + 1];
    size_t nkey;
    unsigned n = 0;
    struct expiry_flush fl;
    uint64_t acked = UINT64_MAX;
    uint64_t source = UINT64_MAX;

    txn_flush_state(sw->eng, &fl);
    if (sw->limits != NULL) {
        sw->limits(sw->limits_arg, &acked, &source);
    }
    store_iter_acquire(sw->eng->store);
    while (n < max_keys) {
        enum store_status st =
            store_iter_next(sw->eng->store, key, sizeof(key), &nkey);
        if (st != STORE_OK) {
            if (st == STORE_EIO) {
                log_limited(sw->log, LOG_ERROR, "sweeper: iteration: %s",
                            store_errmsg(sw->eng->store));
            }
            store_iter_init(sw->eng->store);
            store_iter_release(sw->eng->store);
            txn_wait_applied(&sw->batch); /* T8: retirements go through the log */
            atomic_fetch_add(&sw->cycles, 1);
            atomic_fetch_add(&sw->examined, n);
            return 0;
        }
        n++;
        struct txn_current cur;
        if (txn_read(&sw->batch, key, nkey, &cur) != TXN_OK || !cur.found) {
            continue;
        }
        struct record_meta m = cur.meta;
        txn_current_release(&cur);
        uint64_t now_us = util_now_us();
        if (m.kind == RECORD_TOMBSTONE) {
            /* T6: no peer can still send an older write for this key. */
            bool expendable = acked >= m.cas &&
                              (source == UINT64_MAX ||
                               source >= m.ts + SWEEPER_TOMBSTONE_SLACK_US);
            if (expendable && txn_drop_tombstone(&sw->batch, key, nkey, m.ts)) {
                atomic_fetch_add(&sw->tombstones_dropped, 1);
            }
            continue;
        }
        bool dead = expiry_expired(m.exptime, (int64_t)(now_us / 1000000u)) ||
                    expiry_flushed(&fl, m.ts, now_us);
        if (dead && txn_expire(&sw->batch, key, nkey, m.ts)) {
            atomic_fetch_add(&sw->reclaimed, 1);
        }
    }
    store_iter_release(sw->eng->store);
    txn_wait_applied(&sw->batch);
    atomic_fetch_add(&sw->examined, n);
    return n;
}

/* Warns once when the database outgrows its bucket array (bnum). */
static void
_check_bnum(struct sweeper *sw)
{
    struct store *store = sw->eng->store;
    bool over = store_over_bnum(store);
    if (over && !sw->bnum_warned) {
        uint64_t rnum = store_rnum(store);
        log_warn(sw->log, "database %s holds %" PRIu64 " records, more than "
                 "its %" PRIu64 " hash buckets: lookups slow down as it "
                 "grows. Rebuild it with more: stop kurad, run `kura "
                 "optimize '%s#bnum=%" PRIu64 "'` and start it again (see "
                 "etc/tuning.md)", store_path(store), rnum, store_bnum(store),
                 store_path(store), rnum * 2);
    }
    sw->bnum_warned = over;
}

static void *
_main(void *arg)
{
    struct sweeper *sw = arg;

    util_thread_name("kura-sweep");
    pthread_mutex_lock(&sw->lock);
    while (!sw->stopping) {
        pthread_mutex_unlock(&sw->lock);
        if (txn_flush_settle(sw->eng) != TXN_OK) {
            log_limited(sw->log, LOG_ERROR,
                        "sweeper: cannot persist the flush_all state");
        }
        unsigned n = sweeper_slice(sw, sw->slice_keys);
        _check_bnum(sw);
        /* After a full pass, rest longer: nothing is due for a while. */
        unsigned pause = n == 0 ? sw->pause_ms * 10 : sw->pause_ms;
        struct timespec until;
        util_deadline_ms(&until, pause);
        pthread_mutex_lock(&sw->lock);
        while (!sw->stopping &&
               pthread_cond_timedwait(&sw->cond, &sw->lock, &until) !=
                   ETIMEDOUT) {
        }
    }
    pthread_mutex_unlock(&sw->lock);
    return NULL;
}

int
sweeper_start(struct sweeper *sw)
{
    if (pthread_create(&sw->thread, NULL, _main, sw) != 0) {
        return -1;
    }
    sw->started = true;
    return 0;
}

void
sweeper_stop(struct sweeper *sw)
{
    if (sw->started) {
        pthread_mutex_lock(&sw->lock);
        sw->stopping = true;
        pthread_cond_signal(&sw->cond);
        pthread_mutex_unlock(&sw->lock);
        pthread_join(sw->thread, NULL);
        sw->started = false;
    }
    txn_batch_deinit(&sw->batch);
    pthread_cond_destroy(&sw->cond);
    pthread_mutex_destroy(&sw->lock);
}
