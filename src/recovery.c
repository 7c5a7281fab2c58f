/*
 * recovery: redo of the update log at start-up (see recovery.h).
 */
#include "recovery.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "prefetch.h"
#include "util.h"

/*
 * Records read ahead of the one being redone, their keys' pages asked
 * for at once (prefetch.h): redo applies one record at a time, and a
 * database larger than memory made each wait for its page. 82,263
 * records took 13.7 s inside a 256 MiB limit (a 2.4 GB database).
 */
#define RECOVERY_AHEAD 256

/* Reads ahead: asks for the pages of the keys of the records up to
 * RECOVERY_AHEAD past `done`. */
static void
_read_ahead(struct prefetch *pf, struct ulog_reader *ahead, uint64_t *asked,
            uint64_t done)
{
    void *ready[64];
    while (prefetch_reap(pf, ready, 64) == 64) {
    }
    while (ahead != NULL && *asked < done + RECOVERY_AHEAD) {
        struct logrec rec;
        if (ulog_reader_next(ahead, &rec, false) != ULOG_OK) {
            break;
        }
        (*asked)++;
        if (rec.op != LOGREC_FLUSH) {
            (void)prefetch_key(pf, rec.key, rec.nkey, pf);
        }
    }
    prefetch_submit(pf);
}

int
recovery_redo(struct txn_engine *eng, struct ulog *ulog, uint64_t from,
              size_t scratch_cap, struct recovery_result *res,
              struct logger *log, char *err, size_t errlen)
{
    struct ulog_reader *r = NULL;
    struct txn_batch b;
    int rc = 0;

    memset(res, 0, sizeof(*res));
    uint64_t began = util_mono_ms();
    enum ulog_status st = ulog_reader_open(ulog, from, &r);
    if (st == ULOG_EGAP) {
        snprintf(err, errlen, "the update log no longer holds the records "
                 "after checkpoint %" PRIu64 "; restore from a peer", from);
        return -1;
    }
    if (st != ULOG_OK || txn_batch_init(&b, eng, scratch_cap) != 0) {
        ulog_reader_close(r);
        snprintf(err, errlen, "cannot start redo");
        return -1;
    }
    /* A second reader runs ahead for the prefetcher; without one (an
     * in-memory store, no io_uring) redo reads as it goes. */
    char why[160];
    struct prefetch *pf = prefetch_create(eng->store, RECOVERY_AHEAD, why,
                                          sizeof(why));
    struct ulog_reader *ahead = NULL;
    if (pf != NULL && ulog_reader_open(ulog, from, &ahead) != ULOG_OK) {
        ahead = NULL;
    }
    uint64_t asked = 0;
    for (;;) {
        struct logrec rec;
        if (pf != NULL && res->records % 64 == 0) {
            _read_ahead(pf, ahead, &asked, res->records);
        }
        st = ulog_reader_next(r, &rec, false);
        if (st == ULOG_END) {
            break;
        }
        if (st != ULOG_OK) {
            uint64_t seg;
            uint64_t off;
            ulog_reader_where(r, &seg, &off);
            snprintf(err, errlen, "update log segment %08" PRIu64 " is "
                     "damaged at offset %" PRIu64 " (inspect with kura ulog "
                     "verify)", seg, off);
            rc = -1;
            break;
        }
        bool applied = false;
        if (txn_redo(&b, &rec, &applied) != TXN_OK) {
            snprintf(err, errlen, "redo: cannot apply the record at lsn "
                     "%" PRIu64 " to the database", rec.lsn);
            rc = -1;
            break;
        }
        res->records++;
        res->applied += applied ? 1 : 0;
    }
    txn_batch_deinit(&b);
    ulog_reader_close(ahead);
    prefetch_destroy(pf);
    ulog_reader_close(r);
    if (rc == 0 && res->records > 0) {
        log_info(log, "redo: %" PRIu64 " records after the checkpoint "
                 "replayed in %" PRIu64 " ms", res->records,
                 util_mono_ms() - began);
    }
    return rc;
}
