/*
 * txn: batched, stripe-locked, logged write path (see txn.h for the
 * invariants T1-T10; flush_all's state is in txn_flush.c).
 *
 * Why stripes are held until commit rather than per operation: the batch is
 * made durable as a whole (one write for the group) and only then applied.
 * Releasing a stripe before its change is applied would let another thread
 * read the old record and base a new change on it (a lost update).
 */
#include "txn.h"
#include "txn_internal.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* A batch commits on its own once it grows past either bound. */
#define TXN_BATCH_BYTES_MAX ((size_t)4 << 20)
#define TXN_BATCH_CHANGES_MAX 1024
/* After a full disk, writes are refused this long before trying again. */
#define TXN_ENOSPC_BACKOFF_MS 100
/* Reservations are taken in grants, so most changes need no call. */
#define TXN_SPACE_GRANT ((uint64_t)1 << 20)
/* Groups a batch lets wait for durability before it waits itself (T8). */
#define TXN_WAITING_MAX 256
#define NO_STRIPE UINT32_MAX

uint32_t
txn_stripe_of(const struct txn_engine *eng, const char *key, size_t nkey)
{
    return (uint32_t)(util_hash(key, nkey) & (eng->nstripes - 1));
}

/* Whether the staged changes hold `stripe` (T5). */
static bool
_held(const struct txn_batch *b, uint32_t stripe)
{
    return (b->held_bits[stripe / 64] >> (stripe % 64)) & 1u;
}

#ifndef NDEBUG
/* T5: whether a staged change is already in `stripe` (debug builds). */
static bool
_stripe_staged(const struct txn_batch *b, uint32_t stripe)
{
    for (size_t i = 0; i < b->nchanges; i++) {
        if (b->changes[i].stripe == stripe) {
            return true;
        }
    }
    return false;
}
#endif

/* Notes that the staged changes hold `stripe`, already locked by this
 * thread (holds[stripe] counts every group of the batch holding it). */
bool
txn_mark_held(struct txn_batch *b, uint32_t stripe)
{
    if (b->nheld == b->held_cap) {
        size_t cap = b->held_cap == 0 ? 64 : b->held_cap * 2;
        uint32_t *held = realloc(b->held, cap * sizeof(*held));
        if (held == NULL) {
            return false;
        }
        b->held = held;
        b->held_cap = cap;
    }
    b->held_bits[stripe / 64] |= (uint64_t)1 << (stripe % 64);
    b->held[b->nheld++] = stripe;
    b->holds[stripe]++;
    return true;
}

/* Drops one hold on each of `n` stripes; the last hold unlocks (T1). */
static void
_unhold(struct txn_batch *b, const uint32_t *stripes, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t s = stripes[i];
        assert(b->holds[s] > 0);
        if (--b->holds[s] == 0) {
            pthread_mutex_unlock(&b->eng->stripes[s]);
        }
    }
}

static void
_release_all(struct txn_batch *b)
{
    for (size_t i = 0; i < b->nheld; i++) {
        uint32_t s = b->held[i];
        b->held_bits[s / 64] &= ~((uint64_t)1 << (s % 64));
    }
    _unhold(b, b->held, b->nheld);
    b->nheld = 0;
}

/* ----------------------------------------------------- engine, batches */

int
txn_engine_init(struct txn_engine *eng, struct store *store,
                struct clock *clock, struct ulog *ulog, uint32_t sid,
                size_t nstripes, const char *flush_path, char *err,
                size_t errlen)
{
    memset(eng, 0, sizeof(*eng));
    eng->store = store;
    eng->clock = clock;
    eng->ulog = ulog;
    eng->keep_tombstones = ulog != NULL;
    eng->sid = sid;
    size_t n = 64;
    while (n < nstripes) {
        n *= 2;
    }
    eng->nstripes = n;
    eng->stripes = calloc(n, sizeof(*eng->stripes));
    if (eng->stripes == NULL) {
        snprintf(err, errlen, "out of memory for %zu lock stripes", n);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        pthread_mutex_init(&eng->stripes[i], NULL);
    }
    pthread_mutex_init(&eng->flush_lock, NULL);
    if (flush_path != NULL && flush_path[0] != '\0') {
        util_strlcpy(eng->flush_path, flush_path, sizeof(eng->flush_path));
        if (txn_flush_state_load(eng, err, errlen) != 0) {
            txn_engine_deinit(eng);
            return -1;
        }
    }
    return 0;
}

void
txn_engine_deinit(struct txn_engine *eng)
{
    if (eng->stripes != NULL) {
        for (size_t i = 0; i < eng->nstripes; i++) {
            pthread_mutex_destroy(&eng->stripes[i]);
        }
        free(eng->stripes);
        eng->stripes = NULL;
        pthread_mutex_destroy(&eng->flush_lock);
    }
}

int
txn_batch_init(struct txn_batch *b, struct txn_engine *eng,
               size_t scratch_cap)
{
    memset(b, 0, sizeof(*b));
    b->eng = eng;
    b->slot = -1;
    buf_init(&b->data);
    b->held_bits = calloc(eng->nstripes / 64, sizeof(*b->held_bits));
    b->holds = calloc(eng->nstripes, sizeof(*b->holds));
    b->scratch_cap = scratch_cap;
    b->scratch = malloc(scratch_cap);
    if (eng->ulog != NULL) {
        b->slot = ulog_slot(eng->ulog);
    }
    if (b->holds == NULL || b->held_bits == NULL || b->scratch == NULL ||
        (eng->ulog != NULL && b->slot < 0)) {
        txn_batch_deinit(b);
        return -1;
    }
    return 0;
}

void
txn_batch_deinit(struct txn_batch *b)
{
    if (b->eng == NULL) {
        return;
    }
    if (b->holds != NULL && b->held_bits != NULL) {
        txn_wait_applied(b);
    }
    buf_deinit(&b->data);
    free(b->flushes);
    free(b->changes);
    free(b->held);
    free(b->held_bits);
    free(b->holds);
    for (size_t i = 0; i < b->groups_cap; i++) {
        buf_deinit(&b->groups[i].data);
        free(b->groups[i].changes);
        free(b->groups[i].stripes);
    }
    free(b->groups);
    free(b->scratch);
    memset(b, 0, sizeof(*b));
}

void
txn_batch_set_owner(struct txn_batch *b, void *owner)
{
    b->owner = owner;
}

void
txn_batch_on_abort(struct txn_batch *b, txn_abort_fn fn, void *arg)
{
    b->on_abort = fn;
    b->abort_arg = arg;
}

bool
txn_pending(const struct txn_batch *b)
{
    return b->nchanges > 0 || b->nheld > 0 || b->waiting > 0;
}

bool
txn_durable(const struct txn_batch *b)
{
    struct txn_engine *eng = b->eng;
    return eng->ulog == NULL || eng->uas || b->last_lsn == 0 ||
           ulog_durable(eng->ulog, b->last_lsn);
}

/* T8 applies to this batch (T10). */
static bool
_after_sync(const struct txn_batch *b)
{
    return b->eng->apply_after_sync && !b->apply_at_commit;
}

uint64_t
txn_applied_lsn(const struct txn_batch *b)
{
    if (b->eng->ulog == NULL) {
        return UINT64_MAX;
    }
    return _after_sync(b) ? b->applied_lsn : ulog_durable_lsn(b->eng->ulog);
}

static void
_early_commit(struct txn_batch *b)
{
    atomic_fetch_add_explicit(&b->early_commits, 1, memory_order_relaxed);
    txn_commit(b);
}

/* ------------------------------------------------------------- reading */

/*
 * The stored bytes and count of items (stats "bytes" and "curr_items"): a
 * change's size minus what it replaces, the latter read just before it is
 * staged; a tombstone counts as no item. Every caller
 * reads and then stages through the same key pointer, which is how the
 * two are matched; a stage without its read is not counted.
 */
static void
_note_read(struct txn_batch *b, const char *key, size_t nkey,
           const struct txn_current *cur)
{
    b->read_bytes = cur->found && cur->meta.kind == RECORD_VALUE
                        ? (int64_t)(nkey + cur->vlen)
                        : 0;
    b->read_key = key;
    b->read_nkey = nkey;
}

void
txn_account_bytes(struct txn_batch *b, const char *key, size_t nkey,
                  bool value, size_t vlen)
{
    if (b->read_key != key || b->read_nkey != nkey) {
        return;
    }
    int64_t now = value ? (int64_t)(nkey + vlen) : 0;
    atomic_fetch_add_explicit(&b->eng->bytes, now - b->read_bytes,
                              memory_order_relaxed);
    /* A value's bytes include its key, so read_bytes > 0 means a value. */
    atomic_fetch_add_explicit(&b->eng->items,
                              (value ? 1 : 0) - (b->read_bytes > 0 ? 1 : 0),
                              memory_order_relaxed);
    b->read_key = NULL;
}

static struct txn_group *
_group(const struct txn_batch *b, size_t i)
{
    return &b->groups[(b->head + i) % b->groups_cap];
}

/* holds[] counts each waiting group holding a stripe, plus one for the
 * staged changes when they hold it (T5: never twice), so a count above
 * that one is a waiting group's. */
static bool
_waiting_holds(const struct txn_batch *b, uint32_t stripe)
{
    assert(!_held(b, stripe) || b->holds[stripe] > 0);
    return b->waiting > 0 && b->holds[stripe] > (_held(b, stripe) ? 1 : 0);
}

bool
txn_waiting_holds(const struct txn_batch *b, const char *key, size_t nkey)
{
    return _waiting_holds(b, txn_stripe_of(b->eng, key, nkey));
}

/*
 * T8: the newest waiting change to `key`, if the batch has one. Its bytes
 * stay valid until the group is applied; callers release `cur` before
 * their next call into the batch.
 */
static bool
_read_waiting(struct txn_batch *b, const char *key, size_t nkey,
              uint32_t stripe, struct txn_current *cur)
{
    if (!_waiting_holds(b, stripe)) {
        return false;
    }
    for (size_t i = b->waiting; i-- > 0;) {
        struct txn_group *g = _group(b, i);
        for (size_t j = g->nchanges; j-- > 0;) {
            struct logrec r;
            if (g->changes[j].stripe != stripe) {
                continue;
            }
            logrec_view((const uint8_t *)g->data.data + g->changes[j].off,
                        &r);
            if (r.nkey != nkey || memcmp(r.key, key, nkey) != 0) {
                continue;
            }
            if (record_decode(r.payload, r.plen, &cur->meta, &cur->value,
                              &cur->vlen) != RECORD_OK) {
                return false;
            }
            if (cur->meta.kind == RECORD_TOMBSTONE &&
                b->eng->keep_tombstones) {
                cur->meta.cas = r.lsn; /* as txn_put_tombstone() stores it */
            }
            cur->found = true;
            _note_read(b, key, nkey, cur);
            return true;
        }
    }
    return false;
}

enum txn_status
txn_read_record(struct txn_batch *b, const char *key, size_t nkey,
                struct txn_current *cur)
{
    memset(cur, 0, sizeof(*cur));
    if (_read_waiting(b, key, nkey, txn_stripe_of(b->eng, key, nkey), cur)) {
        return TXN_OK;
    }
    enum store_status st = store_get(b->eng->store, key, nkey, b->scratch,
                                     b->scratch_cap, &cur->sv);
    if (st == STORE_NOTFOUND) {
        _note_read(b, key, nkey, cur);
        return TXN_OK;
    }
    if (st != STORE_OK) {
        return TXN_EIO;
    }
    if (record_decode(cur->sv.data, cur->sv.len, &cur->meta, &cur->value,
                      &cur->vlen) != RECORD_OK) {
        store_value_release(&cur->sv);
        return TXN_EIO;
    }
    cur->found = true;
    _note_read(b, key, nkey, cur);
    return TXN_OK;
}

enum txn_status
txn_read(struct txn_batch *b, const char *key, size_t nkey,
         struct txn_current *cur)
{
    if (_held(b, txn_stripe_of(b->eng, key, nkey))) {
        _early_commit(b);
    }
    return txn_read_record(b, key, nkey, cur);
}

enum txn_status
txn_writable(struct txn_engine *eng)
{
    if (atomic_load_explicit(&eng->failed, memory_order_relaxed)) {
        return TXN_EREADONLY;
    }
    uint64_t until = atomic_load_explicit(&eng->enospc_until_ms,
                                          memory_order_relaxed);
    if (until != 0 && util_mono_ms() < until) {
        return TXN_ENOSPC;
    }
    return TXN_OK;
}

enum txn_status
txn_begin_key(struct txn_batch *b, const char *key, size_t nkey,
              struct txn_current *cur)
{
    memset(cur, 0, sizeof(*cur));
    enum txn_status st = txn_writable(b->eng);
    if (st != TXN_OK) {
        return st;
    }
    uint32_t stripe = txn_stripe_of(b->eng, key, nkey);
    if (_held(b, stripe)) {
        _early_commit(b); /* T5 */
    }
    if (b->holds[stripe] == 0) {
        pthread_mutex_t *m = &b->eng->stripes[stripe];
        if (txn_pending(b) && pthread_mutex_trylock(m) != 0) {
            /* T4, T9: never block while holding a stripe. */
            atomic_fetch_add_explicit(&b->early_commits, 1,
                                      memory_order_relaxed);
            txn_wait_applied(b);
            /* T4, T9: it holds nothing, staged or waiting, as it blocks. */
            assert(b->nheld == 0 && b->nchanges == 0 && b->waiting == 0);
            pthread_mutex_lock(m);
        } else if (!txn_pending(b)) {
            pthread_mutex_lock(m);
        }
    }
    if (!txn_mark_held(b, stripe)) {
        if (b->holds[stripe] == 0) {
            pthread_mutex_unlock(&b->eng->stripes[stripe]);
        }
        return TXN_ENOMEM;
    }
    return txn_read_record(b, key, nkey, cur);
}

void
txn_current_release(struct txn_current *cur)
{
    store_value_release(&cur->sv);
    cur->found = false;
}

/* ------------------------------------------------------------- staging */

/* Refuses writes for a moment after the disk was found full. */
static enum txn_status
_no_space(struct txn_engine *eng)
{
    atomic_store(&eng->enospc_until_ms,
                 util_mono_ms() + TXN_ENOSPC_BACKOFF_MS);
    return TXN_ENOSPC;
}

/* T7: reserves the space a change of `size` log bytes may take. */
static enum txn_status
_reserve_space(struct txn_batch *b, size_t size)
{
    struct txn_engine *eng = b->eng;
    uint64_t need = b->space_used + size + STORE_RECORD_SLACK;
    if (need > b->space_granted) {
        uint64_t grant = (need - b->space_granted + TXN_SPACE_GRANT - 1) /
                         TXN_SPACE_GRANT * TXN_SPACE_GRANT;
        enum store_status ss = store_reserve(eng->store, grant);
        if (ss != STORE_OK) {
            return ss == STORE_ENOSPC ? _no_space(eng) : TXN_EIO;
        }
        if (eng->ulog != NULL) {
            enum ulog_status us = ulog_reserve(eng->ulog, grant);
            if (us != ULOG_OK) {
                store_unreserve(eng->store, grant);
                return us == ULOG_ENOSPC ? _no_space(eng) : TXN_EIO;
            }
        }
        b->space_granted += grant;
    }
    b->space_used = need;
    return TXN_OK;
}

static void
_release_space(struct txn_batch *b)
{
    if (b->space_granted == 0) {
        return;
    }
    store_unreserve(b->eng->store, b->space_granted);
    if (b->eng->ulog != NULL) {
        ulog_unreserve(b->eng->ulog, b->space_granted);
    }
    b->space_granted = 0;
    b->space_used = 0;
}

enum txn_status
txn_stage_raw(struct txn_batch *b, enum logrec_op op, uint32_t sid,
              const char *key, size_t nkey, const void *p1, size_t l1,
              const void *p2, size_t l2, const void *p3, size_t l3)
{
    size_t plen = l1 + l2 + l3;
    size_t size = logrec_size(nkey, plen);
    uint32_t stripe = nkey > 0 ? txn_stripe_of(b->eng, key, nkey) : NO_STRIPE;
    /* T1: staged only under the batch's own hold on the key's stripe. */
    assert(stripe == NO_STRIPE ||
           (_held(b, stripe) && b->holds[stripe] > 0));
    /* T5: one change per stripe, so one per key, in the staged changes. */
    assert(stripe == NO_STRIPE || !_stripe_staged(b, stripe));
    enum txn_status st = _reserve_space(b, size);
    if (st != TXN_OK) {
        return st;
    }
    /* T7: the space is reserved before anything is staged. */
    assert(b->space_used <= b->space_granted);

    if (b->nchanges == b->cap) {
        size_t cap = b->cap == 0 ? 64 : b->cap * 2;
        struct txn_change *c = realloc(b->changes, cap * sizeof(*c));
        if (c == NULL) {
            return TXN_ENOMEM;
        }
        b->changes = c;
        b->cap = cap;
    }
    if (!buf_reserve(&b->data, size, SIZE_MAX)) {
        return TXN_ENOMEM;
    }
    struct txn_change *c = &b->changes[b->nchanges];
    c->stripe = stripe;
    c->off = b->data.wpos;
    c->owner = b->owner;
    uint8_t *p = logrec_begin((uint8_t *)buf_tail(&b->data), op, sid, key,
                              nkey, plen);
    if (l1 > 0) {
        memcpy(p, p1, l1);
    }
    if (l2 > 0) {
        memcpy(p + l1, p2, l2);
    }
    if (l3 > 0) {
        memcpy(p + l1 + l2, p3, l3);
    }
    buf_produce(&b->data, size);
    b->nchanges++;
    b->staged_total++;
    if (b->nchanges >= TXN_BATCH_CHANGES_MAX ||
        buf_len(&b->data) >= TXN_BATCH_BYTES_MAX) {
        txn_commit(b);
    }
    return TXN_OK;
}

enum txn_status
txn_stage_record(struct txn_batch *b, const char *key, size_t nkey,
                 const struct record_meta *m, const void *v1, size_t l1,
                 const void *v2, size_t l2)
{
    uint8_t env[RECORD_HEADER_MAX];
    size_t elen = record_encode(m, env);
    enum txn_status st = txn_stage_raw(b, LOGREC_PUT, m->sid, key, nkey, env,
                                       elen, v1, l1, v2, l2);
    if (st == TXN_OK) {
        txn_account_bytes(b, key, nkey, m->kind == RECORD_VALUE, l1 + l2);
    }
    return st;
}

enum txn_status
txn_stage_remove(struct txn_batch *b, const char *key, size_t nkey)
{
    struct record_meta m = {.kind = RECORD_TOMBSTONE, .sid = b->eng->sid};
    m.ts = m.cas = clock_next(b->eng->clock);
    return txn_stage_record(b, key, nkey, &m, NULL, 0, NULL, 0);
}

/* ------------------------------------------------------------ applying */

/* Stores a tombstone for `m`; its cas records the local lsn (T6). */
enum store_status
txn_put_tombstone(struct txn_engine *eng, const char *key, size_t nkey,
                  const struct record_meta *m, uint64_t lsn)
{
    uint8_t env[RECORD_HEADER_MAX];
    struct record_meta t;
    /* T6: tombstones are kept only where a peer may still send older
     * writes, that is with an update log. */
    assert(eng->keep_tombstones);
    record_tombstone_of(m, lsn != 0 ? lsn : m->ts, &t);
    size_t elen = record_encode(&t, env);
    return store_put(eng->store, key, nkey, env, elen);
}

/* Applies one staged or logged record to the store. */
enum txn_status
txn_apply_record(struct txn_engine *eng, const struct logrec *r)
{
    if (r->op == LOGREC_FLUSH) {
        uint64_t stamp;
        uint64_t deadline;
        if (!logrec_flush_decode(r, &stamp, &deadline)) {
            return TXN_EIO;
        }
        return txn_apply_flush(eng, stamp, deadline);
    }
    struct record_meta m;
    const uint8_t *v;
    size_t vlen;
    if (record_decode(r->payload, r->plen, &m, &v, &vlen) != RECORD_OK) {
        return TXN_EIO;
    }
    enum store_status st;
    if (m.kind == RECORD_TOMBSTONE) {
        if (eng->keep_tombstones) {
            st = txn_put_tombstone(eng, r->key, r->nkey, &m, r->lsn);
        } else {
            st = store_out(eng->store, r->key, r->nkey);
            st = st == STORE_NOTFOUND ? STORE_OK : st;
        }
    } else {
        /* The batch's or reader's own buffer: sealed in place (D3). */
        st = store_put(eng->store, r->key, r->nkey, (uint8_t *)r->payload,
                       r->plen);
    }
    return st == STORE_OK ? TXN_OK : TXN_EIO;
}

static void
_abort_changes(struct txn_batch *b, const struct txn_change *changes,
               size_t n)
{
    void *last = NULL;
    for (size_t i = 0; i < n; i++) {
        void *owner = changes[i].owner;
        if (b->on_abort != NULL && owner != NULL && owner != last) {
            b->on_abort(owner, b->abort_arg);
            last = owner;
        }
    }
}

static void
_reset(struct txn_batch *b)
{
    /* T1: only after every change was applied (or abandoned unlogged). */
    _release_all(b);
    _release_space(b);
    b->nchanges = 0;
    buf_reset(&b->data);
    buf_shrink(&b->data, TXN_BATCH_BYTES_MAX);
}

static enum txn_status
_log_failure(struct txn_engine *eng, enum ulog_status st)
{
    if (st == ULOG_ENOSPC) {
        return _no_space(eng);
    }
    atomic_store(&eng->failed, true);
    return TXN_EIO;
}

static enum txn_status
_append(struct txn_batch *b)
{
    uint64_t lsn = 0;
    enum ulog_status st = ulog_append(b->eng->ulog, b->slot,
                                      (uint8_t *)b->data.data,
                                      buf_len(&b->data), b->nchanges, &lsn);
    if (st != ULOG_OK) {
        return _log_failure(b->eng, st);
    }
    atomic_store(&b->eng->enospc_until_ms, 0);
    b->last_lsn = lsn;
    return TXN_OK;
}

/* ----------------------------------------------- groups waiting (T8) */

static void
_swap_buf(struct buf *a, struct buf *b)
{
    struct buf t = *a;
    *a = *b;
    *b = t;
}

/* Makes room for one more waiting group; false when out of memory. */
static bool
_grow_groups(struct txn_batch *b)
{
    if (b->waiting < b->groups_cap) {
        return true;
    }
    size_t cap = b->groups_cap == 0 ? 8 : b->groups_cap * 2;
    struct txn_group *g = calloc(cap, sizeof(*g));
    if (g == NULL) {
        return false;
    }
    for (size_t i = 0; i < b->groups_cap; i++) {
        g[i] = *_group(b, i);
    }
    for (size_t i = b->groups_cap; i < cap; i++) {
        buf_init(&g[i].data);
    }
    free(b->groups);
    b->groups = g;
    b->groups_cap = cap;
    b->head = 0;
    return true;
}

/*
 * Moves the staged changes, just logged up to b->last_lsn, into a new
 * waiting group, with their stripes and their share of the store's space
 * reservation: the store needs it until they are applied (T7).
 */
static void
_park(struct txn_batch *b, uint64_t first_lsn)
{
    struct txn_group *g = _group(b, b->waiting);
    /* T8: groups wait in log order, each after the one before it. */
    assert(first_lsn != 0 && first_lsn <= b->last_lsn);
    assert(b->waiting == 0 ||
           _group(b, b->waiting - 1)->last_lsn < first_lsn);
    _swap_buf(&g->data, &b->data);
    buf_reset(&b->data);
    struct txn_change *changes = g->changes;
    size_t cap = g->cap;
    g->changes = b->changes;
    g->cap = b->cap;
    g->nchanges = b->nchanges;
    b->changes = changes;
    b->cap = cap;
    b->nchanges = 0;
    uint32_t *stripes = g->stripes;
    size_t scap = g->stripes_cap;
    for (size_t i = 0; i < b->nheld; i++) {
        uint32_t st = b->held[i];
        b->held_bits[st / 64] &= ~((uint64_t)1 << (st % 64));
    }
    g->stripes = b->held;
    g->stripes_cap = b->held_cap;
    g->nstripes = b->nheld;
    b->held = stripes;
    b->held_cap = scap;
    b->nheld = 0;
    g->first_lsn = first_lsn;
    g->last_lsn = b->last_lsn;
    ulog_unreserve(b->eng->ulog, b->space_granted);
    g->store_space = b->space_granted;
    b->space_granted = 0;
    b->space_used = 0;
    b->waiting++;
}

/* Releases what group `g` holds once it is applied or abandoned. */
static void
_retire_group(struct txn_batch *b, struct txn_group *g)
{
    _unhold(b, g->stripes, g->nstripes);
    store_unreserve(b->eng->store, g->store_space);
    g->store_space = 0;
    g->nstripes = 0;
    g->nchanges = 0;
    buf_reset(&g->data);
    buf_shrink(&g->data, TXN_BATCH_BYTES_MAX);
    b->head = (b->head + 1) % b->groups_cap;
    b->waiting--;
}

/* The log failed: nothing waiting will ever be durable, so nothing of it
 * may be applied or answered (D1, T3). */
static void
_abandon_waiting(struct txn_batch *b)
{
    while (b->waiting > 0) {
        struct txn_group *g = _group(b, 0);
        _abort_changes(b, g->changes, g->nchanges);
        _retire_group(b, g);
    }
    ulog_applied(b->eng->ulog, b->slot, 0);
}

enum txn_status
txn_apply_durable(struct txn_batch *b)
{
    struct txn_engine *eng = b->eng;
    enum txn_status result = TXN_OK;

    if (b->waiting == 0) {
        return TXN_OK;
    }
    if (ulog_failed(eng->ulog)) {
        atomic_store(&eng->failed, true);
        _abandon_waiting(b);
        return TXN_EIO;
    }
    uint64_t durable = ulog_durable_lsn(eng->ulog);
    bool applied = false;
    while (b->waiting > 0 && _group(b, 0)->last_lsn <= durable) {
        struct txn_group *g = _group(b, 0);
        bool ok = true;
        /* T8: applied only once durable, oldest group first. */
        assert(ulog_durable(eng->ulog, g->last_lsn));
        assert(g->first_lsn <= g->last_lsn);
        assert(b->waiting == 1 || g->last_lsn < _group(b, 1)->first_lsn);
        for (size_t i = 0; i < g->nchanges; i++) {
            struct logrec r;
            logrec_view((const uint8_t *)g->data.data + g->changes[i].off,
                        &r);
            ok = txn_apply_record(eng, &r) == TXN_OK && ok;
        }
        if (!ok) {
            /* Logged and durable, so redo at start-up applies it; but it
             * cannot be served now, so it is not answered either. */
            atomic_store(&eng->failed, true);
            _abort_changes(b, g->changes, g->nchanges);
            result = TXN_EIO;
        }
        _retire_group(b, g);
        applied = true;
    }
    if (applied) {
        ulog_applied(eng->ulog, b->slot,
                     b->waiting > 0 ? _group(b, 0)->first_lsn : 0);
    }
    b->applied_lsn = durable;
    return result;
}

enum txn_status
txn_wait_applied(struct txn_batch *b)
{
    enum txn_status st = txn_commit(b);
    if (b->waiting == 0) {
        return st;
    }
    uint64_t last = _group(b, b->waiting - 1)->last_lsn;
    (void)ulog_wait_durable(b->eng->ulog, last);
    enum txn_status ast = txn_apply_durable(b);
    return st != TXN_OK ? st : ast;
}

enum txn_status
txn_commit(struct txn_batch *b)
{
    struct txn_engine *eng = b->eng;
    enum txn_status result = TXN_OK;

    if (b->nchanges == 0) {
        _release_all(b);
        _release_space(b);
        return TXN_OK;
    }
    bool logged = eng->ulog != NULL && !eng->uas;
    /* T8, T10: waiting for durability needs a log to wait on. */
    assert(!_after_sync(b) || logged);
    if (logged) {
        if (_after_sync(b) && b->waiting >= TXN_WAITING_MAX) {
            /* Bounded: the oldest groups go first. */
            (void)ulog_wait_durable(eng->ulog, _group(b, 0)->last_lsn);
            (void)txn_apply_durable(b);
        }
        if (_after_sync(b) && !_grow_groups(b)) {
            result = TXN_ENOMEM;
        } else {
            result = _append(b); /* T2: written before anything is applied */
        }
        if (result != TXN_OK) {
            _abort_changes(b, b->changes, b->nchanges);
            _reset(b);
            return result;
        }
        if (_after_sync(b)) {
            /* T8: applied by txn_apply_durable() once durable. */
            uint64_t first = 0;
            struct logrec r;
            logrec_view((const uint8_t *)b->data.data + b->changes[0].off, &r);
            first = r.lsn;
            _park(b, first);
            atomic_fetch_add_explicit(&b->commits, 1, memory_order_relaxed);
            return TXN_OK;
        }
    }
    for (size_t i = 0; i < b->nchanges; i++) {
        struct logrec r;
        logrec_view((const uint8_t *)b->data.data + b->changes[i].off, &r);
        /* T2: with the log written first, the record carries the lsn the
         * append gave it, at most the batch's last. */
        assert(!logged || (r.lsn != 0 && r.lsn <= b->last_lsn));
        if (txn_apply_record(eng, &r) != TXN_OK) {
            result = TXN_EIO;
        }
    }
    if (eng->ulog != NULL) {
        if (!logged && _append(b) != TXN_OK) {
            /* -uas: the change is applied and answered but not logged. */
            result = TXN_EIO;
        }
        ulog_applied(eng->ulog, b->slot, 0);
    }
    if (result != TXN_OK) {
        atomic_store(&eng->failed, true);
        _abort_changes(b, b->changes, b->nchanges);
    }
    _reset(b);
    atomic_fetch_add_explicit(&b->commits, 1, memory_order_relaxed);
    return result;
}

bool
txn_accepts_writes(struct txn_engine *eng)
{
    return txn_writable(eng) == TXN_OK;
}

/* flush_all: one logged record (txn_flush.c keeps the state it folds into). */
enum txn_status
txn_flush_all(struct txn_batch *b, int64_t delay_s)
{
    struct txn_engine *eng = b->eng;
    enum txn_status st = txn_writable(eng);

    if (st != TXN_OK) {
        return st;
    }
    /* Persisting takes an fsync; hold no stripe meanwhile. */
    txn_commit(b);
    uint64_t deadline = expiry_flush_deadline(delay_s, util_now_us());
    uint64_t stamp = clock_next(eng->clock);
    if (eng->ulog == NULL) {
        return txn_apply_flush(eng, stamp, deadline);
    }
    uint8_t payload[LOGREC_FLUSH_PAYLOAD];
    logrec_flush_encode(payload, stamp, deadline);
    st = txn_stage_raw(b, LOGREC_FLUSH, eng->sid, NULL, 0, payload,
                       sizeof(payload), NULL, 0, NULL, 0);
    if (st != TXN_OK) {
        return st;
    }
    if (b->nflushes == b->flushes_cap) {
        size_t cap = b->flushes_cap ? b->flushes_cap * 2 : 4;
        struct txn_flush_staged *f =
            realloc(b->flushes, cap * sizeof(*b->flushes));
        if (f == NULL) {
            /* The record is staged: commit it, and let this batch's reads
             * see the flush only once it is applied. */
            (void)txn_commit(b);
            return TXN_ENOMEM;
        }
        b->flushes = f;
        b->flushes_cap = cap;
    }
    /* Every flush of the batch is kept: a second must not hide the first
     * from the batch's own reads (an immediate flush followed by a
     * delayed one in one pipeline left the items the first hid visible). */
    b->flushes[b->nflushes++] = (struct txn_flush_staged){stamp, deadline};
    return txn_commit(b);
}
