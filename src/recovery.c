/*
 * recovery: redo of the update log at start-up (see recovery.h).
 */
#include "recovery.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

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
    for (;;) {
        struct logrec rec;
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
    ulog_reader_close(r);
    if (rc == 0 && res->records > 0) {
        log_info(log, "redo: %" PRIu64 " records after the checkpoint "
                 "replayed in %" PRIu64 " ms", res->records,
                 util_mono_ms() - began);
    }
    return rc;
}
