/*
 * backup_stream: the checks on a backup session's frames (repl_proto.h,
 * REPL_FLAG_BACKUP), apart from the socket and the files, so each rule is
 * unit-tested (tests/unit/check_backup_stream). Pure: no I/O; one thread.
 *
 * A backup is SNAP_BEGIN <lsn>, the flush_all state as FLUSH records of
 * seq 0 (R7; passed to `redo`), the items, SNAP_END <count>, the log
 * records after that lsn up to the position P, and one HEARTBEAT whose
 * stream position is P (repl_sender.h, R2). Refused, each with a reason:
 * an item outside SNAP_BEGIN..SNAP_END or one that is not a record
 * (record.h); a count that is not the items received; a second snapshot;
 * inside the snapshot, any record but those FLUSH records before the
 * first item; a record before SNAP_END, at or below the snapshot's lsn,
 * or not after
 * the previous one; a seq that skips (the master skips none for a
 * backup); a position that is not the last record (or, with no records,
 * one above the snapshot's lsn); anything after the position; any other
 * frame type.
 */
#ifndef KURA_BACKUP_STREAM_H
#define KURA_BACKUP_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "logrec.h"
#include "repl_proto.h"

#define BACKUP_STREAM_ERR 256

/* Where the checked items and records go. */
struct backup_stream_ops {
    /* Stores the record `rec` (`len` bytes, record.h) under `key`.
     * Returns 0, or -1 with a reason in `err` (`errlen` bytes). */
    int (*item)(void *arg, const char *key, size_t nkey, const uint8_t *rec,
                size_t len, char *err, size_t errlen);
    /* Redoes the log record `r`. Returns 0, or -1 with a reason. */
    int (*redo)(void *arg, const struct logrec *r, char *err, size_t errlen);
    void *arg;
};

struct backup_stream {
    struct backup_stream_ops ops;
    bool snap_begun;
    bool snap_ended;
    bool finished;       /* the closing heartbeat arrived */
    uint64_t snap_lsn;
    uint64_t items;
    uint64_t records;
    uint64_t last_lsn;
    uint64_t last_seq;
    uint64_t pos_lsn;    /* P, once finished */
    uint64_t pos_seq;
    char err[BACKUP_STREAM_ERR];
};

/* Starts checking a session whose items and records go to `ops`. */
void backup_stream_init(struct backup_stream *s,
                        const struct backup_stream_ops *ops);

/*
 * Checks frame `f` and passes it on. Returns 0, or -1 with the reason in
 * s->err (the session must then be abandoned; later calls fail too).
 */
int backup_stream_frame(struct backup_stream *s, const struct repl_frame *f);

/* True once the position arrived: s->pos_lsn and s->pos_seq are P. */
bool backup_stream_done(const struct backup_stream *s);

#endif
