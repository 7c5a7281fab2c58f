/*
 * txn_retire: removing what no client will see again: expired items
 * found by a reader or the sweeper (txn_expire) and tombstones no peer
 * can still need (txn_drop_tombstone, T6). Best-effort: a busy stripe is
 * skipped, never waited for.
 */
#include "txn_internal.h"

#include <pthread.h>
#include <string.h>

/*
 * Runs `fn` on `key`'s record under its stripe if the stripe is free and
 * the record still has stamp `ts`. Never waits.
 */
static bool
_with_record(struct txn_batch *b, const char *key, size_t nkey, uint64_t ts,
             bool (*fn)(struct txn_batch *, const char *, size_t,
                        const struct txn_current *))
{
    uint32_t stripe = txn_stripe_of(b->eng, key, nkey);
    struct txn_current cur;
    bool done = false;

    if (b->holds[stripe] > 0 ||
        pthread_mutex_trylock(&b->eng->stripes[stripe]) != 0) {
        return false;
    }
    if (txn_read_record(b, key, nkey, &cur) == TXN_OK && cur.found &&
                        cur.meta.ts == ts) {
        done = fn(b, key, nkey, &cur);
    }
    b->read_key = NULL; /* fn accounted for what it did */
    txn_current_release(&cur);
    pthread_mutex_unlock(&b->eng->stripes[stripe]);
    return done;
}

static bool
_retire(struct txn_batch *b, const char *key, size_t nkey,
        const struct txn_current *cur)
{
    struct txn_engine *eng = b->eng;
    if (cur->meta.kind != RECORD_VALUE) {
        return false;
    }
    atomic_fetch_sub_explicit(&eng->bytes, (int64_t)(nkey + cur->vlen),
                              memory_order_relaxed);
    atomic_fetch_sub_explicit(&eng->items, 1, memory_order_relaxed);
    if (eng->keep_tombstones) {
        uint64_t lsn = 0;
        uint64_t seq;
        ulog_position(eng->ulog, &lsn, &seq);
        return txn_put_tombstone(eng, key, nkey, &cur->meta, lsn) == STORE_OK;
    }
    return store_out(eng->store, key, nkey) == STORE_OK;
}

/*
 * Dropping a tombstone changes the file without a log record, which D1
 * allows for this one change: if a power cut tears it, the tombstone is
 * found either whole or freed, and either is right, since the sweeper
 * drops it only once no peer needs it.
 */
static bool
_drop(struct txn_batch *b, const char *key, size_t nkey,
      const struct txn_current *cur)
{
    if (cur->meta.kind != RECORD_TOMBSTONE) {
        return false;
    }
    return store_out(b->eng->store, key, nkey) == STORE_OK;
}

/*
 * D1: with apply_after_sync an expired item becomes its tombstone through
 * the log like any change (same stamp and server id, so a peer that gets
 * it keeps its own copy). Staged under the batch; never waits.
 */
static bool
_retire_logged(struct txn_batch *b, const char *key, size_t nkey,
               uint64_t ts)
{
    uint32_t stripe = txn_stripe_of(b->eng, key, nkey);
    struct txn_current cur;
    if (b->holds[stripe] > 0 ||
        pthread_mutex_trylock(&b->eng->stripes[stripe]) != 0) {
        return false;
    }
    if (!txn_mark_held(b, stripe)) {
        pthread_mutex_unlock(&b->eng->stripes[stripe]);
        return false;
    }
    bool done = false;
    if (txn_read_record(b, key, nkey, &cur) == TXN_OK && cur.found &&
                        cur.meta.ts == ts && cur.meta.kind == RECORD_VALUE) {
        struct record_meta t;
        record_tombstone_of(&cur.meta, cur.meta.ts, &t);
        done = txn_stage_record(b, key, nkey, &t, NULL, 0, NULL, 0) == TXN_OK;
    }
    txn_current_release(&cur);
    return done;
}

bool
txn_expire(struct txn_batch *b, const char *key, size_t nkey, uint64_t ts)
{
    if (b->eng->apply_after_sync && !b->apply_at_commit) {
        return _retire_logged(b, key, nkey, ts);
    }
    return _with_record(b, key, nkey, ts, _retire);
}

bool
txn_drop_tombstone(struct txn_batch *b, const char *key, size_t nkey,
                   uint64_t ts)
{
    return _with_record(b, key, nkey, ts, _drop);
}
