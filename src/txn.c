/*
 * txn: batched, stripe-locked write path (see txn.h for the invariants).
 *
 * Why stripes are held until commit rather than per operation: the batch is
 * made durable as a whole (one write for the group) and only then applied.
 * Releasing a stripe before its change is applied would let another thread
 * read the old record and base a new change on it (a lost update), and
 * would let two changes to one key reach the store in a different order
 * than they were decided (T1).
 */
#include "txn.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomicfile.h"
#include "util.h"

/* A batch commits on its own once it grows past either bound. */
#define TXN_BATCH_BYTES_MAX ((size_t)4 << 20)
#define TXN_BATCH_CHANGES_MAX 1024

static uint32_t
_stripe_of(const struct txn_engine *eng, const char *key, size_t nkey)
{
    return (uint32_t)(util_hash(key, nkey) & (eng->nstripes - 1));
}

static bool
_held(const struct txn_batch *b, uint32_t stripe)
{
    return (b->held_bits[stripe / 64] >> (stripe % 64)) & 1u;
}

static void
_mark_held(struct txn_batch *b, uint32_t stripe)
{
    b->held_bits[stripe / 64] |= (uint64_t)1 << (stripe % 64);
    b->held[b->nheld++] = stripe;
}

static void
_release_all(struct txn_batch *b)
{
    for (size_t i = 0; i < b->nheld; i++) {
        uint32_t s = b->held[i];
        b->held_bits[s / 64] &= ~((uint64_t)1 << (s % 64));
        pthread_mutex_unlock(&b->eng->stripes[s]);
    }
    b->nheld = 0;
}

static int
_load_flush_state(struct txn_engine *eng, char *err, size_t errlen)
{
    char text[128];
    long n = atomicfile_read(eng->flush_path, text, sizeof(text));
    uint64_t applied = 0;
    uint64_t pending = 0;

    if (n < 0) {
        if (errno == ENOENT) {
            return 0;
        }
        snprintf(err, errlen, "cannot read %s: %s", eng->flush_path,
                 strerror(errno));
        return -1;
    }
    if (sscanf(text, "flush %" SCNu64 " %" SCNu64, &applied, &pending) != 2) {
        snprintf(err, errlen, "%s is corrupt; remove it to forget flush_all",
                 eng->flush_path);
        return -1;
    }
    atomic_store(&eng->flush_applied_us, applied);
    atomic_store(&eng->flush_pending_us, pending);
    return 0;
}

int
txn_engine_init(struct txn_engine *eng, struct store *store,
                struct clock *clock, uint32_t sid, size_t nstripes,
                const char *flush_path, char *err, size_t errlen)
{
    memset(eng, 0, sizeof(*eng));
    eng->store = store;
    eng->clock = clock;
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
    atomic_init(&eng->flush_applied_us, 0);
    atomic_init(&eng->flush_pending_us, 0);
    atomic_init(&eng->failed, false);
    if (flush_path != NULL && flush_path[0] != '\0') {
        util_strlcpy(eng->flush_path, flush_path, sizeof(eng->flush_path));
        if (_load_flush_state(eng, err, errlen) != 0) {
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
    buf_init(&b->data);
    b->held = calloc(eng->nstripes, sizeof(*b->held));
    b->held_bits = calloc(eng->nstripes / 64, sizeof(*b->held_bits));
    b->scratch_cap = scratch_cap;
    b->scratch = malloc(scratch_cap);
    if (b->held == NULL || b->held_bits == NULL || b->scratch == NULL) {
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
    if (b->held != NULL && b->held_bits != NULL) {
        txn_commit(b);
    }
    buf_deinit(&b->data);
    free(b->changes);
    free(b->held);
    free(b->held_bits);
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
    return b->nchanges > 0 || b->nheld > 0;
}

static void
_early_commit(struct txn_batch *b)
{
    atomic_fetch_add_explicit(&b->early_commits, 1, memory_order_relaxed);
    txn_commit(b);
}

static enum txn_status
_read_record(struct txn_batch *b, const char *key, size_t nkey,
             struct txn_current *cur)
{
    memset(cur, 0, sizeof(*cur));
    enum store_status st = store_get(b->eng->store, key, nkey, b->scratch,
                                     b->scratch_cap, &cur->sv);
    if (st == STORE_NOTFOUND) {
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
    return TXN_OK;
}

enum txn_status
txn_read(struct txn_batch *b, const char *key, size_t nkey,
         struct txn_current *cur)
{
    if (_held(b, _stripe_of(b->eng, key, nkey))) {
        _early_commit(b);
    }
    return _read_record(b, key, nkey, cur);
}

enum txn_status
txn_begin_key(struct txn_batch *b, const char *key, size_t nkey,
              struct txn_current *cur)
{
    memset(cur, 0, sizeof(*cur));
    if (atomic_load_explicit(&b->eng->failed, memory_order_relaxed)) {
        return TXN_EREADONLY;
    }
    uint32_t stripe = _stripe_of(b->eng, key, nkey);
    if (_held(b, stripe)) {
        _early_commit(b); /* T5 */
    }
    pthread_mutex_t *m = &b->eng->stripes[stripe];
    if (b->nheld == 0) {
        pthread_mutex_lock(m);
    } else if (pthread_mutex_trylock(m) != 0) {
        _early_commit(b); /* T4: never block while holding a stripe */
        pthread_mutex_lock(m);
    }
    _mark_held(b, stripe);
    return _read_record(b, key, nkey, cur);
}

void
txn_current_release(struct txn_current *cur)
{
    store_value_release(&cur->sv);
    cur->found = false;
}

static struct txn_change *
_new_change(struct txn_batch *b)
{
    if (b->nchanges == b->cap) {
        size_t cap = b->cap == 0 ? 64 : b->cap * 2;
        struct txn_change *c = realloc(b->changes, cap * sizeof(*c));
        if (c == NULL) {
            return NULL;
        }
        b->changes = c;
        b->cap = cap;
    }
    return &b->changes[b->nchanges];
}

static enum txn_status
_stage(struct txn_batch *b, const char *key, size_t nkey, bool remove,
       const struct record_meta *m, const void *v1, size_t l1,
       const void *v2, size_t l2)
{
    struct txn_change *c = _new_change(b);
    size_t need = nkey + (remove ? 0 : RECORD_HEADER_MAX + l1 + l2);

    if (c == NULL || !buf_reserve(&b->data, need, SIZE_MAX)) {
        return TXN_ENOMEM;
    }
    c->stripe = _stripe_of(b->eng, key, nkey);
    c->remove = remove;
    c->owner = b->owner;
    c->key_off = b->data.wpos;
    c->nkey = nkey;
    buf_append(&b->data, key, nkey, SIZE_MAX);
    c->rec_off = b->data.wpos;
    c->rec_len = 0;
    if (!remove) {
        size_t h = record_encode(m, (uint8_t *)buf_tail(&b->data));
        buf_produce(&b->data, h);
        if (l1 > 0) {
            buf_append(&b->data, v1, l1, SIZE_MAX);
        }
        if (l2 > 0) {
            buf_append(&b->data, v2, l2, SIZE_MAX);
        }
        c->rec_len = h + l1 + l2;
    }
    b->nchanges++;
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
    return _stage(b, key, nkey, false, m, v1, l1, v2, l2);
}

enum txn_status
txn_stage_remove(struct txn_batch *b, const char *key, size_t nkey)
{
    return _stage(b, key, nkey, true, NULL, NULL, 0, NULL, 0);
}

static void
_abort_owners(struct txn_batch *b)
{
    void *last = NULL;
    for (size_t i = 0; i < b->nchanges; i++) {
        void *owner = b->changes[i].owner;
        if (b->on_abort != NULL && owner != NULL && owner != last) {
            b->on_abort(owner, b->abort_arg);
            last = owner;
        }
    }
}

enum txn_status
txn_commit(struct txn_batch *b)
{
    enum txn_status result = TXN_OK;

    if (b->nchanges == 0 && b->nheld == 0) {
        return TXN_OK;
    }
    /* T2: the update log write goes here, before anything is applied. */
    for (size_t i = 0; i < b->nchanges; i++) {
        const struct txn_change *c = &b->changes[i];
        const char *key = b->data.data + c->key_off;
        enum store_status st;
        if (c->remove) {
            st = store_out(b->eng->store, key, c->nkey);
            if (st == STORE_NOTFOUND) {
                st = STORE_OK;
            }
        } else {
            st = store_put(b->eng->store, key, c->nkey,
                           b->data.data + c->rec_off, c->rec_len);
        }
        if (st != STORE_OK) {
            result = TXN_EIO;
        }
    }
    if (result != TXN_OK) {
        atomic_store(&b->eng->failed, true);
        _abort_owners(b);
    }
    _release_all(b); /* T1: only after every change was applied */
    b->nchanges = 0;
    buf_reset(&b->data);
    buf_shrink(&b->data, TXN_BATCH_BYTES_MAX);
    atomic_fetch_add_explicit(&b->commits, 1, memory_order_relaxed);
    return result;
}

bool
txn_expire(struct txn_batch *b, const char *key, size_t nkey, uint64_t ts)
{
    uint32_t stripe = _stripe_of(b->eng, key, nkey);
    struct txn_current cur;
    bool removed = false;

    if (_held(b, stripe) ||
        pthread_mutex_trylock(&b->eng->stripes[stripe]) != 0) {
        return false;
    }
    if (_read_record(b, key, nkey, &cur) == TXN_OK && cur.found &&
        cur.meta.ts == ts) {
        removed = store_out(b->eng->store, key, nkey) == STORE_OK;
    }
    txn_current_release(&cur);
    pthread_mutex_unlock(&b->eng->stripes[stripe]);
    return removed;
}

void
txn_flush_state(struct txn_engine *eng, struct expiry_flush *out)
{
    out->applied_us =
        atomic_load_explicit(&eng->flush_applied_us, memory_order_relaxed);
    out->pending_us =
        atomic_load_explicit(&eng->flush_pending_us, memory_order_relaxed);
}

/* Persists and publishes `f`; the caller holds flush_lock. */
static enum txn_status
_store_flush_state(struct txn_engine *eng, const struct expiry_flush *f)
{
    if (eng->flush_path[0] != '\0') {
        char text[128];
        int n = snprintf(text, sizeof(text), "flush %" PRIu64 " %" PRIu64 "\n",
                         f->applied_us, f->pending_us);
        if (atomicfile_write(eng->flush_path, text, (size_t)n) != 0) {
            return TXN_EIO;
        }
    }
    atomic_store(&eng->flush_applied_us, f->applied_us);
    atomic_store(&eng->flush_pending_us, f->pending_us);
    return TXN_OK;
}

enum txn_status
txn_flush_all(struct txn_batch *b, int64_t delay_s)
{
    struct txn_engine *eng = b->eng;
    struct expiry_flush f;
    enum txn_status st = TXN_OK;

    if (atomic_load_explicit(&eng->failed, memory_order_relaxed)) {
        return TXN_EREADONLY;
    }
    /* Persisting takes an fsync; hold no stripe meanwhile. */
    txn_commit(b);
    pthread_mutex_lock(&eng->flush_lock);
    txn_flush_state(eng, &f);
    uint64_t deadline = expiry_flush_deadline(delay_s, util_now_us());
    uint64_t stamp = deadline == 0 ? clock_next(eng->clock) : 0;
    if (expiry_flush_apply(&f, stamp, deadline)) {
        st = _store_flush_state(eng, &f);
    }
    pthread_mutex_unlock(&eng->flush_lock);
    return st;
}

enum txn_status
txn_flush_settle(struct txn_engine *eng)
{
    struct expiry_flush f;
    enum txn_status st = TXN_OK;

    pthread_mutex_lock(&eng->flush_lock);
    txn_flush_state(eng, &f);
    if (expiry_flush_settle(&f, util_now_us())) {
        st = _store_flush_state(eng, &f);
    }
    pthread_mutex_unlock(&eng->flush_lock);
    return st;
}
