/*
 * txn_flush: flush_all's state. The command is logged as one record
 * (LOGREC_FLUSH) and, once applied, folded into the engine's state, which
 * is persisted in its own file (replaced atomically) so that a restart or
 * a peer never brings back what a flush_all removed (expiry.h). The
 * command itself, which stages and commits like any write, is txn.c's
 * txn_flush_all(); this file calls nothing of txn.c.
 */
#include "txn_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomicfile.h"
#include "util.h"

int
txn_flush_state_load(struct txn_engine *eng, char *err, size_t errlen)
{
    char text[128];
    long n = atomicfile_read(eng->flush_path, text, sizeof(text));
    uint64_t v[3] = {0, 0, 0};

    if (n < 0) {
        if (errno == ENOENT) {
            return 0;
        }
        snprintf(err, errlen, "cannot read %s: %s", eng->flush_path,
                 strerror(errno));
        return -1;
    }
    if (sscanf(text, "flush %" SCNu64 " %" SCNu64 " %" SCNu64, &v[0], &v[1],
               &v[2]) < 2) {
        snprintf(err, errlen, "%s is corrupt; remove it to forget flush_all",
                 eng->flush_path);
        return -1;
    }
    atomic_store(&eng->flush_applied_us, v[0]);
    atomic_store(&eng->flush_pending_us, v[1]);
    atomic_store(&eng->flush_pending_stamp, v[2]);
    return 0;
}

void
txn_flush_state(struct txn_engine *eng, struct expiry_flush *out)
{
    out->applied_us =
        atomic_load_explicit(&eng->flush_applied_us, memory_order_relaxed);
    out->pending_us =
        atomic_load_explicit(&eng->flush_pending_us, memory_order_relaxed);
    out->pending_stamp =
        atomic_load_explicit(&eng->flush_pending_stamp, memory_order_relaxed);
}

/* Persists and publishes `f`; the caller holds flush_lock. */
static enum txn_status
_store_flush_state(struct txn_engine *eng, const struct expiry_flush *f)
{
    if (eng->flush_path[0] != '\0') {
        char text[128];
        int n = snprintf(text, sizeof(text),
                         "flush %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
                         f->applied_us, f->pending_us, f->pending_stamp);
        if (atomicfile_write(eng->flush_path, text, (size_t)n) != 0) {
            return TXN_EIO;
        }
    }
    atomic_store(&eng->flush_applied_us, f->applied_us);
    atomic_store(&eng->flush_pending_us, f->pending_us);
    atomic_store(&eng->flush_pending_stamp, f->pending_stamp);
    return TXN_OK;
}

enum txn_status
txn_apply_flush(struct txn_engine *eng, uint64_t stamp, uint64_t deadline)
{
    struct expiry_flush f;
    enum txn_status st = TXN_OK;

    pthread_mutex_lock(&eng->flush_lock);
    txn_flush_state(eng, &f);
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

void
txn_batch_flush_state(struct txn_batch *b, struct expiry_flush *out)
{
    txn_flush_state(b->eng, out);
    if (b->nflushes == 0) {
        return;
    }
    if (b->waiting == 0) {
        b->nflushes = 0; /* applied: the engine's state has them */
        return;
    }
    /* Folding them in again once applied changes nothing. */
    for (size_t i = 0; i < b->nflushes; i++) {
        (void)expiry_flush_apply(out, b->flushes[i].stamp,
                                 b->flushes[i].deadline);
    }
}
