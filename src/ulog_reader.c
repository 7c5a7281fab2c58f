/*
 * ulog_reader: sequential readers of the update log (see ulog.h), live on
 * a running log (replication senders, redo) or offline on a directory
 * (kura ulog). Kept apart from the writer in ulog.c: a reader only takes
 * the log's lock to learn where segments end and what is durable.
 */
#include "ulog.h"
#include "ulog_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

struct ulog_reader {
    struct ulog *u;           /* NULL: reading a directory offline */
    char dir[PATH_MAX];
    struct segment *segs;     /* offline: the segments found */
    size_t nsegs;
    uint64_t after;           /* skip records at or below this lsn */
    uint64_t seg_no;          /* segment being read */
    int fd;
    uint64_t file_off;        /* file offset of buf[pos] */
    uint8_t *buf;
    size_t cap;
    size_t pos;               /* first unconsumed byte of buf */
    size_t have;              /* end of the bytes read into buf */
    size_t pending;           /* bytes of the record returned last */
    uint64_t consumed_lsn;    /* last lsn returned or skipped */
    bool durable_only;        /* the last next() call's limit */
};

/* Where segment `no` ends now, and whether it is the newest. */
static enum ulog_status
_segment_end(struct ulog_reader *r, uint64_t no, uint64_t *end, bool *newest)
{
    if (r->u == NULL) {
        for (size_t i = 0; i < r->nsegs; i++) {
            if (r->segs[i].no == no) {
                *end = r->segs[i].size;
                *newest = i + 1 == r->nsegs;
                return ULOG_OK;
            }
        }
        return ULOG_EGAP;
    }
    enum ulog_status st = ULOG_EGAP;
    pthread_mutex_lock(&r->u->lock);
    for (size_t i = 0; i < r->u->nsegs; i++) {
        if (r->u->segs[i].no == no) {
            *end = r->u->segs[i].size;
            *newest = i + 1 == r->u->nsegs;
            st = ULOG_OK;
            break;
        }
    }
    pthread_mutex_unlock(&r->u->lock);
    return st;
}

static enum ulog_status
_reader_position(struct ulog_reader *r, const struct segment *segs,
                 size_t nsegs, uint64_t after)
{
    if (nsegs == 0) {
        return ULOG_EGAP;
    }
    if (after < segs[0].base_lsn) {
        return ULOG_EGAP; /* records after `after` were removed */
    }
    size_t i = nsegs - 1;
    while (i > 0 && segs[i].base_lsn > after) {
        i--;
    }
    r->seg_no = segs[i].no;
    r->after = after;
    r->consumed_lsn = after;
    return ULOG_OK;
}

static struct ulog_reader *
_reader_new(void)
{
    struct ulog_reader *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        return NULL;
    }
    r->fd = -1;
    r->cap = READ_BUF_MIN;
    r->buf = malloc(r->cap);
    if (r->buf == NULL) {
        free(r);
        return NULL;
    }
    return r;
}

enum ulog_status
ulog_reader_open(struct ulog *u, uint64_t after, struct ulog_reader **out)
{
    struct ulog_reader *r = _reader_new();
    if (r == NULL) {
        return ULOG_EIO;
    }
    r->u = u;
    util_strlcpy(r->dir, u->o.dir, sizeof(r->dir));
    pthread_mutex_lock(&u->lock);
    enum ulog_status st = _reader_position(r, u->segs, u->nsegs, after);
    pthread_mutex_unlock(&u->lock);
    if (st != ULOG_OK) {
        ulog_reader_close(r);
        return st;
    }
    *out = r;
    return ULOG_OK;
}

enum ulog_status
ulog_reader_open_dir(const char *dir, uint64_t after, struct ulog_reader **out,
                     char *err, size_t errlen)
{
    struct ulog_reader *r = _reader_new();
    if (r == NULL) {
        snprintf(err, errlen, "out of memory");
        return ULOG_EIO;
    }
    util_strlcpy(r->dir, dir, sizeof(r->dir));
    if (ulog_scan_dir(dir, &r->segs, &r->nsegs, err, errlen) != 0) {
        ulog_reader_close(r);
        return ULOG_EIO;
    }
    for (size_t i = 0; i < r->nsegs; i++) {
        if (ulog_load_segment(dir, &r->segs[i]) != 0) {
            snprintf(err, errlen, "segment %08" PRIu64 " has a bad header",
                     r->segs[i].no);
            ulog_reader_close(r);
            return ULOG_ECORRUPT;
        }
    }
    enum ulog_status st = _reader_position(r, r->segs, r->nsegs, after);
    if (st != ULOG_OK) {
        snprintf(err, errlen, "no records after lsn %" PRIu64 " are kept",
                 after);
        ulog_reader_close(r);
        return st;
    }
    *out = r;
    return ULOG_OK;
}

static enum ulog_status
_open_segment(struct ulog_reader *r)
{
    char path[PATH_MAX];
    ulog_seg_path(r->dir, r->seg_no, path, sizeof(path));
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (r->fd < 0) {
        return errno == ENOENT ? ULOG_EGAP : ULOG_EIO;
    }
    r->file_off = ULOG_SEGMENT_HEADER;
    r->pos = 0;
    r->have = 0;
    return ULOG_OK;
}

enum ulog_status
ulog_reader_next(struct ulog_reader *r, struct logrec *rec, bool durable_only)
{
    /* Drop the record returned by the previous call. */
    if (r->pending > 0) {
        r->pos += r->pending;
        r->file_off += r->pending;
        r->pending = 0;
    }
    uint64_t limit = UINT64_MAX;
    r->durable_only = durable_only;
    if (durable_only && r->u != NULL) {
        limit = ulog_durable_lsn(r->u);
    }
    for (;;) {
        if (r->fd < 0) {
            enum ulog_status st = _open_segment(r);
            if (st != ULOG_OK) {
                return st;
            }
        }
        size_t left = r->have - r->pos;
        enum logrec_status ls = logrec_decode(r->buf + r->pos, left, rec);
        if (ls == LOGREC_CORRUPT && left >= 4 &&
            logrec_peek_len(r->buf + r->pos) == 0) {
            /* Prepared zeros: this segment's records end here. */
            bool newest;
            uint64_t end;
            if (_segment_end(r, r->seg_no, &end, &newest) != ULOG_OK ||
                newest) {
                return ULOG_END;
            }
            close(r->fd);
            r->fd = -1;
            r->seg_no++;
            continue;
        }
        if (ls == LOGREC_CORRUPT) {
            return ULOG_ECORRUPT;
        }
        if (ls == LOGREC_OK) {
            if (rec->lsn <= r->after) {
                r->consumed_lsn = r->consumed_lsn > rec->lsn ? r->consumed_lsn
                                                             : rec->lsn;
                r->pos += rec->len;
                r->file_off += rec->len;
                continue;
            }
            if (rec->lsn > limit) {
                return ULOG_END;
            }
            r->pending = rec->len;
            r->consumed_lsn = rec->lsn;
            return ULOG_OK;
        }
        /* Need more bytes: from this segment, or move to the next. */
        uint64_t end;
        bool newest;
        enum ulog_status st = _segment_end(r, r->seg_no, &end, &newest);
        if (st != ULOG_OK) {
            return st;
        }
        /* Consumed bytes are dropped only here, once per refill: moving
         * the rest after every record made reading quadratic. */
        if (r->pos > 0) {
            memmove(r->buf, r->buf + r->pos, left);
            r->have = left;
            r->pos = 0;
        }
        uint64_t avail = end - (r->file_off + r->have);
        if (end > r->file_off + r->have) {
            if (rec->len > r->cap) {
                uint8_t *grown = realloc(r->buf, rec->len);
                if (grown == NULL) {
                    return ULOG_EIO;
                }
                r->buf = grown;
                r->cap = rec->len;
            }
            size_t want = r->cap - r->have;
            if (want > avail) {
                want = (size_t)avail;
            }
            ssize_t n = pread(r->fd, r->buf + r->have, want,
                              (off_t)(r->file_off + r->have));
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n <= 0) {
                return ULOG_EIO;
            }
            r->have += (size_t)n;
            continue;
        }
        if (newest) {
            return ULOG_END;
        }
        if (r->have > r->pos) {
            return ULOG_ECORRUPT; /* a finished segment ends mid-record */
        }
        close(r->fd);
        r->fd = -1;
        r->seg_no++;
    }
}

uint64_t
ulog_reader_lsn(const struct ulog_reader *r)
{
    return r->consumed_lsn;
}

void
ulog_reader_where(const struct ulog_reader *r, uint64_t *segment,
                  uint64_t *offset)
{
    *segment = r->seg_no;
    *offset = r->file_off;
}

/*
 * The end a waiting reader wants to pass: the last record of any origin
 * but `skip_sid` (0: of any origin), and no further than the durable end
 * for a reader limited to durable records. Holds the lock.
 */
static uint64_t
_end_locked(struct ulog_reader *r, uint32_t skip_sid)
{
    struct ulog *u = r->u;
    uint64_t end = skip_sid == 0 ? u->last_lsn
                                 : ulog_others_end_locked(u, skip_sid);
    if (r->durable_only) {
        uint64_t durable = ulog_durable_locked(u);
        end = durable < end ? durable : end;
    }
    return end;
}

/* The exclusion for origin `sid`, claimed if new; NULL when all are
 * taken by other origins. Holds the lock. */
static struct ulog_exclusion *
_exclusion_locked(struct ulog *u, uint32_t sid)
{
    struct ulog_exclusion *unused = NULL;
    for (int i = 0; i < ULOG_ORIGINS; i++) {
        struct ulog_exclusion *ex = &u->exclusions[i];
        if (ex->sid == sid) {
            return ex;
        }
        if (ex->sid == 0 && unused == NULL) {
            unused = ex;
        }
    }
    if (unused != NULL) {
        unused->sid = sid;
    }
    return unused;
}

bool
ulog_reader_wait_others(struct ulog_reader *r, uint32_t skip_sid,
                        int timeout_ms)
{
    struct ulog *u = r->u;
    if (u == NULL) {
        return false;
    }
    struct timespec until;
    util_deadline_ms(&until, timeout_ms > 0 ? (uint64_t)timeout_ms : 0);
    pthread_mutex_lock(&u->lock);
    /* A reader skipping nothing sleeps on `grown`, which every append
     * and sync broadcasts. One skipping an origin sleeps on that origin's
     * exclusion: appends of other origins wake it, or, if it is limited
     * to durable records, moves of the durable lsn past a record of
     * another origin (ulog_publish_locked()). */
    struct ulog_exclusion *ex = NULL;
    if (skip_sid != 0) {
        ex = _exclusion_locked(u, skip_sid);
    }
    if (ex == NULL) {
        skip_sid = 0;
    }
    bool grown = _end_locked(r, skip_sid) > r->consumed_lsn;
    if (!grown && !u->stopping) {
        if (ex != NULL) {
            ex->waiting++;
            ex->waiting_durable += r->durable_only;
            pthread_cond_timedwait(&ex->cond, &u->lock, &until);
            ex->waiting_durable -= r->durable_only;
            ex->waiting--;
        } else {
            pthread_cond_timedwait(&u->grown, &u->lock, &until);
        }
        grown = _end_locked(r, skip_sid) > r->consumed_lsn;
    }
    pthread_mutex_unlock(&u->lock);
    return grown;
}

bool
ulog_reader_wait(struct ulog_reader *r, int timeout_ms)
{
    return ulog_reader_wait_others(r, 0, timeout_ms);
}

void
ulog_reader_close(struct ulog_reader *r)
{
    if (r == NULL) {
        return;
    }
    if (r->fd >= 0) {
        close(r->fd);
    }
    free(r->segs);
    free(r->buf);
    free(r);
}
