/*
 * recovery: brings the database up to date with the update log at start.
 *
 * After an unclean stop the database may lack changes that were logged,
 * and answered, after the last checkpoint (U4), or hold them torn or half
 * applied. Redo reads every record after the checkpoint and applies it
 * with txn_redo(), in log order and whatever the database holds
 * (store.h, D5): each record carries the key's whole resulting state, so
 * replaying is idempotent and the last record of a key is its state. A
 * clean stop checkpoints at the last record, so it redoes nothing.
 *
 * Runs single-threaded, before any worker or replication thread starts.
 */
#ifndef KURA_RECOVERY_H
#define KURA_RECOVERY_H

#include <stddef.h>
#include <stdint.h>

#include "log.h"
#include "txn.h"
#include "ulog.h"

struct recovery_result {
    uint64_t records; /* read after the checkpoint and replayed */
    uint64_t applied; /* the same (kept for the tools' output) */
};

/*
 * Redoes the records of `ulog` after lsn `from` through `eng`. Returns 0,
 * or -1 with a reason in `err` (a damaged log or a failing database).
 */
int recovery_redo(struct txn_engine *eng, struct ulog *ulog, uint64_t from,
                  size_t scratch_cap, struct recovery_result *res,
                  struct logger *log, char *err, size_t errlen);

#endif
