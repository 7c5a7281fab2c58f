/*
 * txn: the write path shared by workers, replication and background threads.
 *
 * Every change to a key goes through a per-thread batch:
 *
 *   txn_begin_key()   lock the key's stripe and read its current record
 *   txn_stage_*()     encode the change as an update log record
 *   txn_commit()      append the batch to the update log with one write,
 *                     apply it to the database, release the stripes
 *
 * A worker commits once per pass of its event loop, so all the writes it
 * handled in that pass share one log write: that is the group commit.
 * Stripe locks stay held from begin to commit; that is what makes a key's
 * read-modify-write atomic and gives each key one order of changes.
 *
 * Changes replicated from a peer, and records redone at start-up, are
 * applied only if they win under record_newer(): the higher (write stamp,
 * server id) is the newer write. Because every record carries the key's
 * whole resulting state, applying any set of records in any order ends in
 * the same state on every server.
 *
 * Invariants (tests cite these numbers):
 *   T1. A key's stripe is held by at most one batch; a change is staged only
 *       while its batch holds the stripe, and the stripe is released only
 *       after the change has been applied to the store.
 *   T2. A change is applied to the store only after its log record was
 *       written (U2), except with -uas, which applies and answers first.
 *   T3. No reply that depends on a staged change leaves the server before
 *       txn_commit() has returned success for it and its lsn is durable
 *       (the caller's duty; the abort callback names owners to fail).
 *   T4. Deadlock freedom: a thread blocks on a stripe only while its batch
 *       holds no stripe. Otherwise it tries the lock and, on failure,
 *       commits its batch first.
 *   T5. A batch never holds two changes to the same key: touching a key
 *       whose stripe it already holds commits the batch first, so every read
 *       sees the latest committed state.
 *   T6. With an update log, a delete leaves a tombstone carrying the
 *       delete's stamp, so an older write that arrives later from a peer
 *       loses to it. A tombstone is removed only once no peer can still
 *       send an older write for the key (sweeper.h).
 *
 *   T7. A change is staged only once the disk space it may take is
 *       reserved in the store and the log (store_reserve, ulog_reserve):
 *       a full disk refuses the request with TXN_ENOSPC before anything
 *       is logged or applied, never half-way through a commit.
 *   T8. With `apply_after_sync` (-fsync always: store.h D1) a commit
 *       only writes the log; the group of changes waits, stripes held,
 *       until the log says it is durable, and txn_apply_durable() applies
 *       it then, oldest group first. A batch reads its own waiting
 *       changes (the newest for the key) instead of the store, so a
 *       connection sees its own writes at once. Replies wait for the
 *       apply (txn_applied_lsn()), so a read on any thread after a reply
 *       finds the change in the store.
 *   T9. T4 extended: a thread that must wait for a stripe first makes its
 *       own waiting groups durable and applies them (txn_wait_applied()),
 *       so it holds nothing while it waits; durability never depends on
 *       another thread, so no cycle can form. (Under -fsync peer it
 *       depends on the peer's report: two masters writing the same keys
 *       can hold each other's receiver for up to the stall limit,
 *       ulog.h U11, which then syncs here and breaks the wait.)
 *  T10. `apply_after_sync` is also set under -fsync peer, where durable
 *       means reported by the peer or, with no peer linked, synced here
 *       (ulog.h U10, U11): the fallback then keeps store.h D1 as
 *       "always" does. A batch with `apply_at_commit` (the replication
 *       receiver's under -fsync peer: its records come from the peer's
 *       log) applies at commit instead, as without apply_after_sync.
 *
 * Thread-safety: struct txn_engine is shared; a struct txn_batch belongs to
 * one thread.
 */
#ifndef KURA_TXN_H
#define KURA_TXN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "clock.h"
#include "expiry.h"
#include "logrec.h"
#include "record.h"
#include "store.h"
#include "ulog.h"

enum txn_status {
    TXN_OK = 0,
    TXN_EIO,       /* the store or log failed; writes are now refused */
    TXN_ENOSPC,    /* the disk is full; the write was not made */
    TXN_EREADONLY, /* writes are refused after an earlier failure */
    TXN_ENOMEM,
};

/* Shared state of the write path. */
struct txn_engine {
    struct store *store;
    struct clock *clock;
    struct ulog *ulog;       /* NULL: no update log */
    bool uas;                /* -uas: apply and answer before logging */
    bool apply_after_sync;   /* T8; set before any batch is used */
    bool keep_tombstones;    /* T6; true whenever there is an update log */
    uint32_t sid;            /* this server's id, stamped on local writes */
    size_t nstripes;         /* power of two */
    pthread_mutex_t *stripes;
    char flush_path[4096];   /* where the flush state persists, or "" */
    pthread_mutex_t flush_lock; /* serialises flush state updates */
    _Atomic uint64_t flush_applied_us; /* see struct expiry_flush */
    _Atomic uint64_t flush_pending_us;
    _Atomic uint64_t flush_pending_stamp;
    _Atomic bool failed;     /* a write failed; refuse further writes */
    _Atomic int64_t bytes;   /* keys and values of stored items (stats) */
    _Atomic int64_t items;   /* stored values, not tombstones (curr_items) */
    _Atomic uint64_t enospc_until_ms; /* refuse writes until then */
};

/* Called on commit failure once per staged change, with its owner. */
typedef void (*txn_abort_fn)(void *owner, void *arg);

struct txn_change {
    uint32_t stripe;
    size_t off;       /* of the log record in the batch's data buffer */
    void *owner;
};

/* Changes logged together and waiting to be applied (T8). */
struct txn_group {
    struct buf data;            /* their log records, sealed by the append */
    struct txn_change *changes;
    size_t nchanges;
    size_t cap;
    uint32_t *stripes;          /* stripes held on the group's behalf */
    size_t nstripes;
    size_t stripes_cap;
    uint64_t first_lsn;
    uint64_t last_lsn;
    uint64_t store_space;       /* reserved in the store until applied */
};

/* A per-thread batch of staged changes. */
/* A flush_all staged in a batch: when it was stamped, and its deadline
 * (0: at once). */
struct txn_flush_staged {
    uint64_t stamp;
    uint64_t deadline;
};

struct txn_batch {
    struct txn_engine *eng;
    int slot;                   /* update log appender slot, or -1 */
    struct buf data;            /* staged log records, back to back */
    struct txn_change *changes;
    size_t nchanges;
    size_t cap;
    uint32_t *held;             /* stripes the staged changes hold */
    size_t nheld;
    size_t held_cap;
    uint64_t *held_bits;        /* bitmap of `held` */
    uint16_t *holds;            /* per stripe: groups holding it, staged
                                   included; locked while > 0 */
    struct txn_group *groups;   /* ring of groups waiting (T8) */
    size_t groups_cap;
    size_t head;
    size_t waiting;
    uint64_t applied_lsn;       /* groups up to here are applied (T8) */
    bool apply_at_commit;       /* T10: not T8 for this batch */
    /* flush_all requests of this batch that may wait for durability, in
     * order, each folded into what the batch's reads see (expiry.h) */
    struct txn_flush_staged *flushes;
    size_t nflushes;
    size_t flushes_cap;
    int64_t read_bytes;         /* the item last read, for stats bytes */
    const char *read_key;       /* ...and its key; NULL once used */
    size_t read_nkey;
    uint8_t *scratch;           /* buffer for reads */
    size_t scratch_cap;
    void *owner;                /* attached to changes staged from now on */
    txn_abort_fn on_abort;
    void *abort_arg;
    uint64_t last_lsn;          /* highest lsn this batch has logged */
    uint64_t space_used;        /* disk space the staged changes may take */
    uint64_t space_granted;     /* reserved in the store and the log (T7) */
    uint64_t staged_total;      /* changes ever staged (never reset) */
    /* counters, read by stats */
    _Atomic uint64_t commits;
    _Atomic uint64_t early_commits; /* commits forced by T4/T5 */
};

/* The current record of a key, as read by txn_begin_key()/txn_read(). */
struct txn_current {
    bool found;               /* a record exists (may be expired/tombstone) */
    struct record_meta meta;
    const uint8_t *value;
    size_t vlen;
    struct store_value sv;    /* owns the bytes; see txn_current_release() */
};

/*
 * Sets up the engine over `store` (and `ulog`, which may be NULL).
 * `flush_path`, if not NULL, is the file holding the flush_all state
 * (loaded here). `nstripes` is rounded up to a power of two. Returns 0, or
 * -1 with a reason in `err`. The caller owns `store`, `clock` and `ulog`;
 * they must outlive the engine.
 */
int txn_engine_init(struct txn_engine *eng, struct store *store,
                    struct clock *clock, struct ulog *ulog, uint32_t sid,
                    size_t nstripes, const char *flush_path, char *err,
                    size_t errlen);

/* Frees the engine's memory. No batch may be in use. */
void txn_engine_deinit(struct txn_engine *eng);

/*
 * Initialises a batch for the calling thread. `scratch_cap` is the largest
 * record read without a heap copy (the item size limit plus an envelope).
 * Returns 0 or -1 (out of memory, or no update log slot left).
 */
int txn_batch_init(struct txn_batch *b, struct txn_engine *eng,
                   size_t scratch_cap);

/* Commits what is staged and frees the batch. */
void txn_batch_deinit(struct txn_batch *b);

/*
 * Sets the owner attached to changes staged from now on, and the callback
 * that txn_commit() calls for each change it could not make durable.
 */
void txn_batch_set_owner(struct txn_batch *b, void *owner);
void txn_batch_on_abort(struct txn_batch *b, txn_abort_fn fn, void *arg);

/*
 * Reads the committed record of `key` without locking it, for commands
 * that only read. Commits the batch first if it holds the key's stripe
 * (T5). Returns TXN_OK (check cur->found; release `cur` with
 * txn_current_release()) or TXN_EIO (`cur` then holds nothing).
 */
enum txn_status txn_read(struct txn_batch *b, const char *key, size_t nkey,
                         struct txn_current *cur);

/*
 * Locks `key` for writing (T4, T5) and reads its committed record into
 * `*cur`. The lock stays held until the batch commits. Returns TXN_OK,
 * TXN_EREADONLY, TXN_ENOSPC or TXN_EIO; on failure `cur` holds nothing.
 */
enum txn_status txn_begin_key(struct txn_batch *b, const char *key,
                              size_t nkey, struct txn_current *cur);

/* Frees what a read left in `cur`. Safe to call twice. */
void txn_current_release(struct txn_current *cur);

/*
 * Stages a record for `key` (locked by txn_begin_key()): the envelope `m`
 * followed by the value, given as up to two pieces (v1 then v2) so that
 * append and prepend need no temporary copy. Returns TXN_OK or TXN_ENOMEM.
 */
enum txn_status txn_stage_record(struct txn_batch *b, const char *key,
                                 size_t nkey, const struct record_meta *m,
                                 const void *v1, size_t l1, const void *v2,
                                 size_t l2);

/*
 * Stages the deletion of `key` (locked by txn_begin_key()) as a tombstone
 * stamped now by this server (T6).
 */
enum txn_status txn_stage_remove(struct txn_batch *b, const char *key,
                                 size_t nkey);

/*
 * Stages a change received from a replication peer, keeping its origin
 * stamp and server id. Locks the key; stages it only if it is newer than
 * the current record (`*applied` says whether it was). An incoming value
 * that has already expired is stored as a tombstone with the same stamp,
 * so expired items never come back. FLUSH records are staged as they are.
 */
enum txn_status txn_stage_replicated(struct txn_batch *b,
                                     const struct logrec *rec, bool *applied);

/*
 * Re-applies a record from the local update log at start-up (redo),
 * straight to the store without logging it again and whatever the store
 * holds for the key (store.h, D5): the log after the checkpoint is the
 * truth. A value that has expired since is stored as its tombstone.
 * `*applied` is always set. Single-threaded use only.
 */
enum txn_status txn_redo(struct txn_batch *b, const struct logrec *rec,
                         bool *applied);

/*
 * Writes the staged changes to the log (one write), applies them to the
 * store and releases every stripe; with apply_after_sync the applying
 * and releasing wait for txn_apply_durable() instead (T8). On failure,
 * calls the abort callback for each staged change's owner and returns
 * the error; after an I/O error the engine refuses further writes
 * (TXN_EREADONLY), after ENOSPC it refuses them for a moment (TXN_ENOSPC)
 * and then tries again.
 */
enum txn_status txn_commit(struct txn_batch *b);

/* True if the batch has staged changes, waiting groups or stripes. */
bool txn_pending(const struct txn_batch *b);

/*
 * T8: true if a group of `b` waiting for durability holds the stripe that
 * guards `key`, so that a read of `key` must look at the waiting changes
 * before the store. The staged changes' own hold on the stripe does not
 * count: the read that follows txn_begin_key() consults the store
 * without scanning the waiting groups when only it holds the stripe.
 */
bool txn_waiting_holds(const struct txn_batch *b, const char *key,
                       size_t nkey);

/*
 * Changes ever staged in `b` (never reset): a caller compares two readings
 * to learn whether the requests between them wrote anything.
 */
static inline uint64_t
txn_staged_total(const struct txn_batch *b)
{
    return b->staged_total;
}

/*
 * T8: applies every waiting group the log has made durable, oldest first,
 * and releases their stripes. Returns TXN_OK, or TXN_EIO if the log or
 * the store failed (waiting groups are then aborted: their owners get the
 * abort callback and nothing of them is applied). Cheap when nothing
 * waits.
 */
enum txn_status txn_apply_durable(struct txn_batch *b);

/*
 * Commits what is staged and blocks until every group of the batch is
 * durable and applied (T9). Returns like txn_apply_durable().
 */
enum txn_status txn_wait_applied(struct txn_batch *b);

/*
 * Highest lsn up to which every change this batch logged is applied to
 * the store (and so durable); replies that depend on changes up to it may
 * leave. Without apply_after_sync, the log's durable lsn.
 */
uint64_t txn_applied_lsn(const struct txn_batch *b);

/* True if every record this batch logged is as durable as promised. */
bool txn_durable(const struct txn_batch *b);

/*
 * Retires `key` if its record still has write stamp `ts` (an expired item
 * found by a reader or the sweeper): with tombstones kept (T6) it becomes a
 * tombstone with that stamp, otherwise it is removed. Purely local and
 * best-effort: gives up rather than wait if the stripe is busy. Returns
 * true if the key was retired.
 */
bool txn_expire(struct txn_batch *b, const char *key, size_t nkey,
                uint64_t ts);

/*
 * Removes the tombstone of `key` if it still has stamp `ts` (the sweeper,
 * once no peer can send an older write). Best-effort like txn_expire().
 */
bool txn_drop_tombstone(struct txn_batch *b, const char *key, size_t nkey,
                        uint64_t ts);

/*
 * Executes "flush_all `delay_s`": commits the batch, then logs and applies
 * either an immediate flush (stamped now) or a pending one with its
 * deadline, and persists the new state. Returns TXN_OK or an error.
 */
enum txn_status txn_flush_all(struct txn_batch *b, int64_t delay_s);

/*
 * True if a write would be accepted now: no failed write has made the
 * engine read-only and no full disk is being waited out.
 */
bool txn_accepts_writes(struct txn_engine *eng);

/* Copies the current flush state. */
void txn_flush_state(struct txn_engine *eng, struct expiry_flush *out);

/*
 * The flush state as this batch's own reads see it: the engine's, plus a
 * flush_all this batch logged that still waits for durability (T8 keeps
 * it from other batches until then), so that a pipelined "flush_all
 * noreply" hides what it flushed from the same client's next get.
 */
void txn_batch_flush_state(struct txn_batch *b, struct expiry_flush *out);

/*
 * Folds a pending flush whose deadline has passed into the applied point
 * and persists it (called periodically by the sweeper). Returns TXN_OK or
 * TXN_EIO.
 */
enum txn_status txn_flush_settle(struct txn_engine *eng);

#endif
