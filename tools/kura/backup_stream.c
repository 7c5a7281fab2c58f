/*
 * backup_stream: the checks on a backup session (see backup_stream.h).
 */
#include "backup_stream.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "record.h"

static int _fail(struct backup_stream *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
_fail(struct backup_stream *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err, sizeof(s->err), fmt, ap);
    va_end(ap);
    return -1;
}

void
backup_stream_init(struct backup_stream *s,
                   const struct backup_stream_ops *ops)
{
    memset(s, 0, sizeof(*s));
    s->ops = *ops;
}

bool
backup_stream_done(const struct backup_stream *s)
{
    return s->finished && s->err[0] == '\0';
}

static int
_item(struct backup_stream *s, const struct repl_frame *f)
{
    struct record_meta m;
    const uint8_t *v;
    size_t vlen;

    if (!s->snap_begun || s->snap_ended) {
        return _fail(s, "the server sent an item outside the snapshot");
    }
    if (record_decode(f->value, f->vlen, &m, &v, &vlen) != RECORD_OK) {
        return _fail(s, "the server sent a malformed item");
    }
    if (s->ops.item(s->ops.arg, f->key, f->nkey, f->value, f->vlen, s->err,
                    sizeof(s->err)) != 0) {
        return -1;
    }
    s->items++;
    return 0;
}

/* R7: the flush_all state at the walk, FLUSH records with seq 0 right
 * after SNAP_BEGIN; not log records, so outside the order checks. */
static int
_snapshot_flush(struct backup_stream *s, const struct logrec *r)
{
    if (r->op != LOGREC_FLUSH || r->seq != 0 || s->items > 0) {
        return _fail(s, "the server sent a log record inside the snapshot");
    }
    return s->ops.redo(s->ops.arg, r, s->err, sizeof(s->err));
}

static int
_record(struct backup_stream *s, const struct logrec *r)
{
    if (s->snap_begun && !s->snap_ended) {
        return _snapshot_flush(s, r);
    }
    if (!s->snap_ended) {
        return _fail(s, "the server sent a log record before the snapshot");
    }
    if (r->lsn <= s->snap_lsn || (s->records > 0 && r->lsn <= s->last_lsn)) {
        return _fail(s, "log record lsn %" PRIu64 " is out of order",
                     r->lsn);
    }
    if (s->records > 0 && r->seq != s->last_seq + 1) {
        return _fail(s, "log records are missing between seq %" PRIu64
                     " and %" PRIu64, s->last_seq, r->seq);
    }
    if (s->ops.redo(s->ops.arg, r, s->err, sizeof(s->err)) != 0) {
        return -1;
    }
    s->records++;
    s->last_lsn = r->lsn;
    s->last_seq = r->seq;
    return 0;
}

/* The closing heartbeat: P, and what must hold of the records before it. */
static int
_end(struct backup_stream *s, const struct repl_frame *f)
{
    if (!s->snap_ended) {
        return _fail(s, "the server sent a position inside the snapshot");
    }
    if (s->records > 0 ? f->pos_lsn != s->last_lsn ||
                             f->pos_seq != s->last_seq
                       : f->pos_lsn > s->snap_lsn) {
        return _fail(s, "the server's position lsn %" PRIu64 " seq %" PRIu64
                     " does not match the records received (last lsn %"
                     PRIu64 " seq %" PRIu64 ")", f->pos_lsn, f->pos_seq,
                     s->last_lsn, s->last_seq);
    }
    /* Without records, P is at or below the snapshot's lsn: a redo from
     * P repeats changes the file holds, which ends in the same state. */
    s->pos_lsn = f->pos_lsn;
    s->pos_seq = f->pos_seq;
    s->finished = true;
    return 0;
}

int
backup_stream_frame(struct backup_stream *s, const struct repl_frame *f)
{
    if (s->err[0] != '\0') {
        return -1;
    }
    if (s->finished) {
        return _fail(s, "the server sent more after the position");
    }
    switch (f->type) {
    case REPL_FRAME_SNAP_BEGIN:
        if (s->snap_begun) {
            return _fail(s, "the server began a second snapshot");
        }
        s->snap_begun = true;
        s->snap_lsn = f->lsn;
        return 0;
    case REPL_FRAME_SNAP_ITEM:
        return _item(s, f);
    case REPL_FRAME_SNAP_END:
        if (!s->snap_begun || s->snap_ended || f->count != s->items) {
            return _fail(s, "the snapshot ended with %" PRIu64 " items "
                         "counted and %" PRIu64 " received", f->count,
                         s->items);
        }
        s->snap_ended = true;
        return 0;
    case REPL_FRAME_RECORD:
        return _record(s, &f->rec);
    case REPL_FRAME_HEARTBEAT:
        return _end(s, f);
    default:
        return _fail(s, "the server sent an unexpected frame (type %d)",
                     (int)f->type);
    }
}
