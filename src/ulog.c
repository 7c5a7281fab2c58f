/*
 * ulog: opening and recovering the log, group-commit appends, starting
 * and stopping its threads (see ulog.h for the invariants U1-U13);
 * durability and the sync thread are in ulog_sync.c, segment files in
 * ulog_segment.c, checkpoints in ulog_checkpoint.c, readers in
 * ulog_reader.c, the "peer" policy's rules in ulog_peer.c.
 */
#include "ulog.h"
#include "ulog_internal.h"
#include "ulog_peer.h"

#include <dirent.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "atomicfile.h"
#include "crc32c.h"
#include "lockfile.h"
#include "util.h"

#define RESERVE_AHEAD ((uint64_t)1 << 20)

/* ------------------------------------------------------------ recovery */

/*
 * Scans segment `s` from its header, stopping at the first record that is
 * incomplete, fails its checksum or breaks U1. Sets `*valid` to the end of
 * the last good record and the last lsn/seq seen.
 */
static int
_scan_segment(const char *dir, const struct segment *s, uint64_t *valid,
              uint64_t *last_lsn, uint64_t *last_seq)
{
    char path[PATH_MAX];
    ulog_seg_path(dir, s->no, path, sizeof(path));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    size_t cap = READ_BUF_MIN;
    uint8_t *buf = malloc(cap);
    uint64_t off = ULOG_SEGMENT_HEADER; /* file offset of buf[pos] */
    size_t pos = 0;
    size_t have = 0;
    uint64_t lsn = s->base_lsn;
    uint64_t seq = s->base_seq;
    bool eof = false;

    while (buf != NULL) {
        struct logrec r;
        enum logrec_status st = logrec_decode(buf + pos, have - pos, &r);
        if (st == LOGREC_OK) {
            if (r.seq != seq + 1 || r.lsn <= lsn) {
                break; /* U1 broken: treat as the end */
            }
            lsn = r.lsn;
            seq = r.seq;
            off += r.len;
            pos += r.len;
            continue;
        }
        if (st == LOGREC_CORRUPT || eof) {
            break;
        }
        memmove(buf, buf + pos, have - pos); /* once per refill */
        have -= pos;
        pos = 0;
        if (r.len > cap) {
            uint8_t *grown = realloc(buf, r.len);
            if (grown == NULL) {
                break;
            }
            buf = grown;
            cap = r.len;
        }
        ssize_t n = pread(fd, buf + have, cap - have, (off_t)(off + have));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            eof = true;
            continue;
        }
        have += (size_t)n;
    }
    free(buf);
    close(fd);
    /* U1: what the scan keeps follows the segment's header in order. */
    assert(lsn >= s->base_lsn && seq >= s->base_seq);
    assert(off >= ULOG_SEGMENT_HEADER);
    *valid = off;
    *last_lsn = lsn;
    *last_seq = seq;
    return 0;
}

static int
_read_checkpoint(struct ulog *u, struct ulog_recovery *rec, char *err,
                 size_t errlen)
{
    char path[PATH_MAX];
    char text[128];

    snprintf(path, sizeof(path), "%s/checkpoint", u->o.dir);
    long n = atomicfile_read(path, text, sizeof(text));
    if (n < 0) {
        if (errno == ENOENT) {
            return 0;
        }
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    /* Before database sizes were recorded, a checkpoint had two fields. */
    if (sscanf(text, "checkpoint %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu32,
               &rec->checkpoint_lsn, &rec->checkpoint_seq,
               &rec->checkpoint_db_size, &rec->checkpoint_db_salt) < 2) {
        snprintf(err, errlen, "%s is corrupt", path);
        return -1;
    }
    return 0;
}

/* Allocates [from, to) of `fd` past its end; 0, or -1 with errno set. */
static int
_allocate(int fd, uint64_t from, uint64_t to)
{
    int rc;
    do {
        rc = fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)from,
                       (off_t)(to - from));
    } while (rc != 0 && errno == EINTR);
    return rc;
}

/*
 * Creates segment `no` and makes it the active one, with room for the
 * outstanding reservations allocated first: on ENOSPC nothing changes.
 */
static int
_create_segment(struct ulog *u, uint64_t no, char *err, size_t errlen)
{
    char path[PATH_MAX];
    uint8_t h[ULOG_SEGMENT_HEADER];
    struct segment s = {no, u->last_lsn, u->last_seq, ULOG_SEGMENT_HEADER};

    /* U1: segments follow each other, each header naming the record
     * before it. */
    assert(u->nsegs == 0 || no == u->segs[u->nsegs - 1].no + 1);
    assert(u->nsegs == 0 || s.base_lsn >= u->segs[u->nsegs - 1].base_lsn);
    /* U9: the segment before is durable before the next one begins. */
    assert(u->nsegs == 0 || u->synced_lsn == u->last_lsn);
    if (u->nsegs == u->cap) {
        size_t cap = u->cap == 0 ? 16 : u->cap * 2;
        struct segment *grown = realloc(u->segs, cap * sizeof(*grown));
        if (grown == NULL) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        u->segs = grown;
        u->cap = cap;
    }
    ulog_seg_path(u->o.dir, no, path, sizeof(path));
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
        return -1;
    }
    ulog_seg_encode_header(h, u->o.sid, &s);
    uint64_t room = ULOG_SEGMENT_HEADER + u->reserved;
    bool allocated = u->space_unsupported || u->reserved == 0 ||
                     _allocate(fd, ULOG_SEGMENT_HEADER, room) == 0;
    if (!allocated && errno == EOPNOTSUPP) {
        u->space_unsupported = true;
        allocated = true;
    }
    if (!allocated || util_write_all(fd, h, sizeof(h)) != 0 ||
        (u->o.fsync != ULOG_FSYNC_NEVER && fdatasync(fd) != 0) ||
        atomicfile_sync_dir(path) != 0) {
        int saved = errno;
        close(fd);
        unlink(path);
        errno = saved;
        snprintf(err, errlen, "cannot create %s: %s", path, strerror(saved));
        return -1;
    }
    if (u->active_fd >= 0) {
        if (u->active_fd == u->sync_fd) {
            u->retired_fd = u->active_fd;
        } else {
            close(u->active_fd);
        }
    }
    u->active_fd = fd;
    u->prepared = ULOG_SEGMENT_HEADER;
    u->space_end = room;
    u->segs[u->nsegs++] = s;
    pthread_cond_signal(&u->sync_cond); /* start preparing the new one */
    return 0;
}

/* True if bytes [from, to) of `fd` are all zero. */
static bool
_all_zero(int fd, uint64_t from, uint64_t to)
{
    uint8_t buf[65536];
    while (from < to) {
        size_t n = to - from < sizeof(buf) ? (size_t)(to - from) : sizeof(buf);
        if (ulog_read_full(fd, buf, n, from) != 0) {
            return false;
        }
        for (size_t i = 0; i < n; i++) {
            if (buf[i] != 0) {
                return false;
            }
        }
        from += n;
    }
    return true;
}

struct ulog *
ulog_open(const struct ulog_options *o, struct ulog_recovery *rec, char *err,
          size_t errlen)
{
    struct ulog *u = calloc(1, sizeof(*u));
    char path[PATH_MAX];

    memset(rec, 0, sizeof(*rec));
    if (u == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    u->o = *o;
    u->active_fd = -1;
    u->lock_fd = -1;
    u->sync_fd = -1;
    u->retired_fd = -1;
    pthread_mutex_init(&u->lock, NULL);
    pthread_cond_init(&u->grown, NULL);
    pthread_cond_init(&u->sync_cond, NULL);
    pthread_cond_init(&u->cp_cond, NULL);
    pthread_cond_init(&u->zeroed, NULL);
    pthread_cond_init(&u->written, NULL);
    for (int i = 0; i < ULOG_ORIGINS; i++) {
        pthread_cond_init(&u->exclusions[i].cond, NULL);
    }
    if (mkdir(o->dir, 0755) == 0) {
        if (atomicfile_sync_dir(o->dir) != 0) { /* U8 */
            snprintf(err, errlen, "cannot sync the directory of %s: %s",
                     o->dir, strerror(errno));
            goto fail;
        }
    } else if (errno != EEXIST) {
        snprintf(err, errlen, "cannot create update log directory %s: %s",
                 o->dir, strerror(errno));
        goto fail;
    }
    snprintf(path, sizeof(path), "%s/LOCK", o->dir);
    long holder;
    u->lock_fd = lockfile_take(path, &holder);
    if (u->lock_fd < 0) {
        if (errno == EWOULDBLOCK && holder > 0) {
            snprintf(err, errlen, "cannot lock update log %s: process %ld "
                     "is using it", o->dir, holder);
        } else {
            snprintf(err, errlen, "cannot lock update log %s: %s", o->dir,
                     errno == EWOULDBLOCK ? "another process is using it"
                                          : strerror(errno));
        }
        goto fail;
    }
    if (ulog_scan_dir(o->dir, &u->segs, &u->nsegs, err, errlen) != 0) {
        goto fail;
    }
    u->cap = u->nsegs;
    /* Headers of every segment; a torn header can only be the newest. */
    for (size_t i = 0; i < u->nsegs; i++) {
        if (ulog_load_segment(o->dir, &u->segs[i]) != 0) {
            if (i + 1 == u->nsegs) {
                ulog_seg_path(o->dir, u->segs[i].no, path, sizeof(path));
                log_warn(o->log, "ulog: removing %s, created but never "
                                 "written (torn header)", path);
                unlink(path);
                u->nsegs--;
                break;
            }
            ulog_seg_path(o->dir, u->segs[i].no, path, sizeof(path));
            snprintf(err, errlen, "update log segment %s is damaged; "
                     "inspect it with kura ulog verify", path);
            goto fail;
        }
        if (i > 0 && u->segs[i].no != u->segs[i - 1].no + 1) {
            snprintf(err, errlen, "update log segment %08" PRIu64
                     " is missing from %s", u->segs[i - 1].no + 1, o->dir);
            goto fail;
        }
    }
    if (_read_checkpoint(u, rec, err, errlen) != 0) {
        goto fail;
    }
    if (u->nsegs > 0) {
        /* U3: scan the newest segment and cut a torn or corrupt tail. */
        struct segment *last = &u->segs[u->nsegs - 1];
        uint64_t valid;
        ulog_seg_path(o->dir, last->no, path, sizeof(path));
        if (_scan_segment(o->dir, last, &valid, &u->last_lsn,
                          &u->last_seq) != 0) {
            snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
            goto fail;
        }
        if (valid < last->size) {
            int fd = open(path, O_RDONLY | O_CLOEXEC);
            bool zeros = fd >= 0 && _all_zero(fd, valid, last->size);
            if (fd >= 0) {
                close(fd);
            }
            /* Zeros are the prepared space after the last record. */
            if (!zeros) {
                rec->cut_bytes = last->size - valid;
                log_warn(o->log, "ulog: %s: cut %" PRIu64 " bytes of torn "
                         "or corrupt records at offset %" PRIu64 "; they are "
                         "not replayed", path, rec->cut_bytes, valid);
            }
            if (truncate(path, (off_t)valid) != 0) {
                snprintf(err, errlen, "cannot truncate %s: %s", path,
                         strerror(errno));
                goto fail;
            }
            last->size = valid;
        }
        /* U3: nothing past the last intact record is kept. */
        assert(last->size == valid);
        u->active_fd = open(path, O_RDWR | O_CLOEXEC);
        if (u->active_fd < 0) {
            snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
            goto fail;
        }
        /* U7: what redo will apply is on disk before it is applied, and
         * so is the cut. */
        if (fdatasync(u->active_fd) != 0 || atomicfile_sync_dir(path) != 0) {
            snprintf(err, errlen, "cannot sync %s: %s", path, strerror(errno));
            goto fail;
        }
        u->prepared = last->size;
        u->space_end = last->size;
    } else {
        u->last_lsn = rec->checkpoint_lsn;
        u->last_seq = rec->checkpoint_seq;
        if (_create_segment(u, 1, err, errlen) != 0) {
            goto fail;
        }
    }
    /* Everything found on disk was synced by the previous run or by the
     * truncation above; nothing is in flight yet. */
    u->synced_lsn = u->last_lsn;
    u->syncing_lsn = u->last_lsn;
    ulog_peer_init(&u->peer, u->last_lsn);
    u->other_lsn = u->last_lsn; /* origins unknown: wake every reader */
    ulog_publish_locked(u);
    u->checkpoint_lsn = rec->checkpoint_lsn;
    u->checkpoint_db_salt = rec->checkpoint_db_salt;
    u->segment_done = u->nsegs > 1;
    rec->last_lsn = u->last_lsn;
    rec->last_seq = u->last_seq;
    rec->segments = (uint32_t)u->nsegs;
    return u;
fail:
    ulog_close(u);
    return NULL;
}

/* --------------------------------------------------------------- append */

int
ulog_slot(struct ulog *u)
{
    pthread_mutex_lock(&u->lock);
    int slot = u->nslots < ULOG_MAX_SLOTS ? u->nslots++ : -1;
    pthread_mutex_unlock(&u->lock);
    return slot;
}

/* Starts the next segment; the caller holds the lock. */
static enum ulog_status
_rotate(struct ulog *u)
{
    char err[512];

    /* U9: the old segment is complete: make it durable before moving on,
     * whatever the policy (one fdatasync per -ulim of log). */
    if (fdatasync(u->active_fd) != 0) {
        log_limited(u->o.log, LOG_ERROR, "ulog: fdatasync: %s",
                    strerror(errno));
        return errno == ENOSPC ? ULOG_ENOSPC : ULOG_EIO;
    }
    assert(u->last_lsn >= u->synced_lsn);
    u->syncs++;
    u->synced_lsn = u->last_lsn;
    (void)ulog_peer_refresh_locked(u);
    ulog_publish_locked(u);
    pthread_cond_signal(&u->sync_cond); /* it tells the watchers */
    int old_fd = dup(u->active_fd);
    uint64_t old_size = u->segs[u->nsegs - 1].size;
    uint64_t no = u->segs[u->nsegs - 1].no + 1;
    if (old_fd < 0 || _create_segment(u, no, err, sizeof(err)) != 0) {
        int saved = errno;
        if (old_fd >= 0) {
            close(old_fd);
        }
        if (saved == ENOSPC) {
            /* The space reserved for the appends is in this segment: go
             * on past -ulim rather than refuse them, and retry later. */
            log_limited(u->o.log, LOG_WARN, "ulog: no space for a new "
                        "segment; the current one grows past -ulim");
            u->rotate_retry_ms = util_mono_ms() + 1000;
            return ULOG_OK;
        }
        log_limited(u->o.log, LOG_ERROR, "ulog: %s", old_fd < 0
                    ? strerror(saved) : err);
        return ULOG_EIO;
    }
    /* Drop the prepared zeros after the end of the finished segment. */
    if (ftruncate(old_fd, (off_t)old_size) != 0) {
        log_limited(u->o.log, LOG_WARN, "ulog: ftruncate: %s",
                    strerror(errno));
    }
    close(old_fd);
    u->segment_done = true;
    pthread_cond_signal(&u->cp_cond);
    return ULOG_OK;
}

/* Records that origin `sid`'s last record is at `lsn`. Holds the lock. */
static void
_note_origin(struct ulog *u, uint32_t sid, uint64_t lsn)
{
    for (int i = 0; i < u->norigins; i++) {
        if (u->origins[i].sid == sid) {
            u->origins[i].lsn = lsn;
            return;
        }
    }
    if (u->norigins < ULOG_ORIGINS) {
        u->origins[u->norigins++] = (struct ulog_origin){sid, lsn};
    } else {
        u->other_lsn = lsn;
    }
}

/*
 * The exclusions an append wakes: those whose readers sleep, skip an
 * origin other than one of the append's records, and are not limited to
 * durable records (ulog_publish_locked() wakes those). `first_sid` is the
 * first record's origin, `mixed` whether another origin follows. Holds
 * the lock. Returns a bit per exclusion.
 */
static unsigned
_exclusions_to_wake(const struct ulog *u, uint32_t first_sid, bool mixed)
{
    unsigned wake = 0;
    for (int i = 0; i < ULOG_ORIGINS; i++) {
        const struct ulog_exclusion *ex = &u->exclusions[i];
        if (ex->waiting > ex->waiting_durable &&
            (mixed || ex->sid != first_sid)) {
            wake |= 1u << i;
        }
    }
    return wake;
}

/*
 * U13: moves the written end over the oldest claims that are written, in
 * order. Returns the exclusions to wake (_exclusions_to_wake()) and sets
 * `*advanced`. Holds the lock.
 */
static unsigned
_advance_written(struct ulog *u, bool *advanced)
{
    unsigned wake = 0;
    *advanced = false;
    while (u->nclaims > 0 && u->claims[u->claim_head].done) {
        const struct ulog_claim *c = &u->claims[u->claim_head];
        struct segment *active = &u->segs[u->nsegs - 1];
        /* U1, U13: claims are written end to end, in lsn order. */
        assert(c->off == active->size);
        assert(c->seq == u->last_seq + c->n &&
               (c->n == 0 || c->lsn > u->last_lsn));
        active->size = c->off + c->len;
        u->last_lsn = c->lsn;
        u->last_seq = c->seq;
        u->total_appended += c->len;
        u->appends++;
        u->records += c->n;
        wake |= _exclusions_to_wake(u, c->first_sid, c->mixed);
        u->claim_head = (u->claim_head + 1) % ULOG_MAX_CLAIMS;
        u->nclaims--;
        *advanced = true;
    }
    /* U10, U12: nothing counts as synced that was not written. */
    assert(u->synced_lsn <= u->last_lsn);
    return wake;
}

/*
 * A claim's write failed. Alone in flight it is given back, and a partial
 * write past the prepared zeros cut off (inside them, the next append
 * overwrites it), as before claims existed; with others in flight after
 * it, the log fails (U13). Holds the lock.
 */
static enum ulog_status
_claim_failed(struct ulog *u, int saved)
{
    struct segment *active = &u->segs[u->nsegs - 1];
    log_limited(u->o.log, LOG_ERROR, "ulog: write: %s%s", strerror(saved),
                saved == ENOSPC ? "; refusing writes until space returns"
                                : "");
    if (u->nclaims == 1) {
        u->nclaims = 0; /* the next append claims this place again */
        uint64_t keep = active->size > u->prepared ? active->size
                                                   : u->prepared;
        if (ftruncate(u->active_fd, (off_t)keep) != 0) {
            u->failed = true;
        }
        if (saved != ENOSPC) {
            u->failed = true;
        }
    } else {
        u->failed = true;
    }
    pthread_cond_broadcast(&u->written);
    return saved == ENOSPC && u->nclaims == 0 ? ULOG_ENOSPC : ULOG_EIO;
}

/*
 * Waits until an append of `len` bytes may claim its place: no zeros
 * being written where it lands (U6), room for a claim, and the segment
 * rotated if it is full (U13: only with no claim in flight into it).
 * Holds the lock. Returns ULOG_OK, ULOG_EFAILED or _rotate()'s error.
 */
static enum ulog_status
_wait_for_room(struct ulog *u, size_t len)
{
    for (;;) {
        const struct segment *active = &u->segs[u->nsegs - 1];
        uint64_t end = ulog_claimed_end_locked(u);
        if (u->failed) {
            return ULOG_EFAILED;
        }
        if (u->nclaims == ULOG_MAX_CLAIMS) {
            pthread_cond_wait(&u->written, &u->lock);
            continue;
        }
        if (u->zeroing_no == active->no &&
            (end + len > u->zeroing_from ||
             end + len > u->o.segment_max)) {
            pthread_cond_wait(&u->zeroed, &u->lock);
            continue;
        }
        if (end > ULOG_SEGMENT_HEADER &&
            end + len > u->o.segment_max &&
            util_mono_ms() >= u->rotate_retry_ms) {
            /* Another appender may rotate meanwhile: look again after. */
            if (u->nclaims > 0) {
                pthread_cond_wait(&u->written, &u->lock);
                continue;
            }
            enum ulog_status st = _rotate(u);
            if (st != ULOG_OK) {
                return st;
            }
            continue;
        }
        /* U6: no zeros are being written where this append lands. */
        assert(u->zeroing_no != active->no ||
               end + len <= u->zeroing_from);
        return ULOG_OK;
    }
}

/*
 * U1, U13: seals the `n` records of `buf` (`len` bytes) with the next
 * lsns and seqs after the last claimed, notes their origins, and claims
 * their place at the end of what is claimed. Holds the lock. Returns the
 * claim's index in the ring; `*first` is its first record's lsn.
 */
static size_t
_claim(struct ulog *u, uint8_t *buf, size_t len, size_t n, uint64_t *first)
{
    const struct ulog_claim *newest = ulog_newest_claim_locked(u);
    const uint64_t prev_lsn = newest != NULL ? newest->lsn : u->last_lsn;
    const uint64_t prev_seq = newest != NULL ? newest->seq : u->last_seq;
    uint64_t lsn = prev_lsn;
    uint64_t seq = prev_seq;
    uint64_t where = ulog_claimed_end_locked(u);
    size_t off = 0;
    uint32_t first_sid = 0;
    uint32_t run_sid = 0; /* origin of the records just sealed */
    bool mixed = false;
    *first = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t rlen = logrec_peek_len(buf + off);
        uint32_t sid = logrec_peek_sid(buf + off);
        if (i == 0) {
            first_sid = run_sid = sid;
        } else if (sid != run_sid) {
            _note_origin(u, run_sid, lsn); /* the run's last record */
            run_sid = sid;
            mixed = true;
        }
        uint64_t next = clock_next(u->o.clock);
        lsn = next > lsn ? next : lsn + 1;
        logrec_seal(buf + off, lsn, ++seq);
        if (*first == 0) {
            *first = lsn;
        }
        off += rlen;
    }
    /* U1: strictly increasing lsn, dense seq, and the records fill the
     * buffer exactly. */
    assert(n == 0 || (*first > prev_lsn && lsn >= *first));
    assert(seq == prev_seq + n);
    assert(off == len);
    assert(where >= u->segs[u->nsegs - 1].size);
    if (n > 0) {
        _note_origin(u, run_sid, lsn);
    }
    size_t at = (u->claim_head + u->nclaims) % ULOG_MAX_CLAIMS;
    u->claims[at] = (struct ulog_claim){where, len, lsn, seq, n, first_sid,
                                        mixed, false};
    u->nclaims++;
    return at;
}

enum ulog_status
ulog_append(struct ulog *u, int slot, uint8_t *buf, size_t len, size_t n,
            uint64_t *last_lsn)
{
    pthread_mutex_lock(&u->lock);
    enum ulog_status st = _wait_for_room(u, len);
    if (st != ULOG_OK) {
        pthread_mutex_unlock(&u->lock);
        return st;
    }
    uint64_t first;
    size_t at = _claim(u, buf, len, n, &first);
    uint64_t where = u->claims[at].off;
    int rc;
    if (where + len <= u->prepared) {
        /* U13: inside prepared zeros, so no space can run out; others
         * claim and write meanwhile. The descriptor stays: rotation waits
         * for every claim. */
        int fd = u->active_fd;
        pthread_mutex_unlock(&u->lock);
        rc = ulog_write_full(fd, buf, len, where);
        int saved = errno;
        pthread_mutex_lock(&u->lock);
        errno = saved;
    } else {
        rc = ulog_write_full(u->active_fd, buf, len, where);
    }
    if (rc != 0) {
        st = _claim_failed(u, errno);
        pthread_mutex_unlock(&u->lock);
        return st;
    }
    u->claims[at].done = true;
    /* Applied after this returns: the checkpoint stays below it (U4). */
    if (slot >= 0 && u->inflight[slot] == 0) {
        u->inflight[slot] = first;
    }
    *last_lsn = u->claims[at].lsn;
    bool advanced;
    unsigned wake_exclusions = _advance_written(u, &advanced);
    const struct segment *active = &u->segs[u->nsegs - 1];
    uint64_t ahead = u->prepared > active->size ? u->prepared - active->size
                                                : 0;
    /* Under "always" the sync thread is woken for every commit only
     * while it issues the syncs (U14). */
    bool wake_sync = ahead < ULOG_PREPARE_LOW ||
                     (u->o.fsync == ULOG_FSYNC_ALWAYS &&
                      !ulog_leads_syncs_locked(u));
    if (advanced) {
        ulog_publish_locked(u);
    }
    pthread_mutex_unlock(&u->lock);
    /* Woken after the unlock: a thread woken under it would at once block
     * on the lock and be woken a second time by the unlock. Each waiter
     * tests its condition under the lock, so no wake-up is lost. A claim
     * written before an earlier one leaves the wake-ups to that one. */
    if (!advanced) {
        return ULOG_OK;
    }
    if (wake_sync) {
        pthread_cond_signal(&u->sync_cond);
    }
    pthread_cond_broadcast(&u->grown);
    pthread_cond_broadcast(&u->written);
    for (int i = 0; wake_exclusions != 0; i++, wake_exclusions >>= 1) {
        if (wake_exclusions & 1u) {
            pthread_cond_broadcast(&u->exclusions[i].cond);
        }
    }
    return ULOG_OK;
}

enum ulog_status
ulog_reserve(struct ulog *u, uint64_t bytes)
{
    enum ulog_status st = ULOG_OK;

    pthread_mutex_lock(&u->lock);
    if (u->failed) {
        pthread_mutex_unlock(&u->lock);
        return ULOG_EFAILED;
    }
    u->reserved += bytes;
    uint64_t need = ulog_claimed_end_locked(u) + u->reserved; /* U13 */
    uint64_t have = u->space_end > u->prepared ? u->space_end : u->prepared;
    if (need > have && !u->space_unsupported) {
        /* Usually the prepared zeros cover it; this runs when the sync
         * thread lags or the disk is full. A little ahead, not a whole
         * ULOG_PREPARE_STEP: unwritten extents make fdatasync commit. */
        if (_allocate(u->active_fd, have, need + RESERVE_AHEAD) == 0) {
            u->space_end = need + RESERVE_AHEAD;
        } else if (errno == ENOSPC && _allocate(u->active_fd, have, need) == 0) {
            u->space_end = need;
        } else if (errno == EOPNOTSUPP) {
            u->space_unsupported = true;
        } else {
            st = errno == ENOSPC ? ULOG_ENOSPC : ULOG_EIO;
            u->reserved -= bytes;
        }
    }
    pthread_mutex_unlock(&u->lock);
    return st;
}

void
ulog_unreserve(struct ulog *u, uint64_t bytes)
{
    pthread_mutex_lock(&u->lock);
    u->reserved = u->reserved > bytes ? u->reserved - bytes : 0;
    pthread_mutex_unlock(&u->lock);
}

bool
ulog_space_guaranteed(struct ulog *u)
{
    pthread_mutex_lock(&u->lock);
    bool ok = !u->space_unsupported;
    pthread_mutex_unlock(&u->lock);
    return ok;
}

void
ulog_applied(struct ulog *u, int slot, uint64_t next)
{
    if (slot < 0) {
        return;
    }
    pthread_mutex_lock(&u->lock);
    u->inflight[slot] = next;
    pthread_mutex_unlock(&u->lock);
}


int
ulog_start(struct ulog *u)
{
    if (u->o.db_size != NULL) {
        u->db_at_checkpoint = u->o.db_size(u->o.arg);
    }
    if (pthread_create(&u->sync_thread, NULL, ulog_sync_main, u) != 0) {
        return -1;
    }
    if (pthread_create(&u->cp_thread, NULL, ulog_checkpoint_main, u) != 0) {
        pthread_mutex_lock(&u->lock);
        u->stopping = true;
        pthread_cond_broadcast(&u->sync_cond);
        pthread_mutex_unlock(&u->lock);
        pthread_join(u->sync_thread, NULL);
        return -1;
    }
    u->threads = true;
    if (u->o.fsync == ULOG_FSYNC_PEER) {
        log_info(u->o.log, "ulog: -fsync peer: no peer connected yet; "
                 "syncing every group commit (as -fsync always) until one "
                 "is");
    }
    return 0;
}

void
ulog_close(struct ulog *u)
{
    if (u == NULL) {
        return;
    }
    if (u->threads) {
        pthread_mutex_lock(&u->lock);
        u->stopping = true;
        pthread_cond_broadcast(&u->sync_cond);
        pthread_cond_broadcast(&u->cp_cond);
        pthread_cond_broadcast(&u->grown);
        for (int i = 0; i < ULOG_ORIGINS; i++) {
            pthread_cond_broadcast(&u->exclusions[i].cond);
        }
        pthread_mutex_unlock(&u->lock);
        pthread_join(u->sync_thread, NULL);
        pthread_join(u->cp_thread, NULL);
        if (u->active_fd >= 0 && fdatasync(u->active_fd) != 0) {
            log_error(u->o.log, "ulog: final fdatasync: %s", strerror(errno));
        }
        ulog_checkpoint(u);
    }
    if (u->active_fd >= 0) {
        close(u->active_fd);
    }
    if (u->lock_fd >= 0) {
        close(u->lock_fd);
    }
    free(u->segs);
    pthread_cond_destroy(&u->grown);
    pthread_cond_destroy(&u->sync_cond);
    pthread_cond_destroy(&u->cp_cond);
    pthread_cond_destroy(&u->zeroed);
    pthread_cond_destroy(&u->written);
    for (int i = 0; i < ULOG_ORIGINS; i++) {
        pthread_cond_destroy(&u->exclusions[i].cond);
    }
    pthread_mutex_destroy(&u->lock);
    free(u);
}

void
ulog_position(struct ulog *u, uint64_t *lsn, uint64_t *seq)
{
    pthread_mutex_lock(&u->lock);
    *lsn = u->last_lsn;
    *seq = u->last_seq;
    pthread_mutex_unlock(&u->lock);
}

void
ulog_stats(struct ulog *u, struct ulog_stats *st)
{
    memset(st, 0, sizeof(*st));
    pthread_mutex_lock(&u->lock);
    st->last_lsn = u->last_lsn;
    st->last_seq = u->last_seq;
    st->synced_lsn = ulog_durable_locked(u);
    st->fdatasynced_lsn = u->synced_lsn;
    st->peer_lsn = u->peer.written;
    st->peers_live = u->peer.live;
    st->peer_fallback = u->o.fsync == ULOG_FSYNC_PEER &&
                        ulog_peer_live(&u->peer) == 0;
    st->peer_fallbacks = u->peer.fallbacks;
    st->peer_stalls = u->peer.stalls;
    st->peer_stalled = u->peer.stalled;
    st->policy = u->o.fsync;
    st->fsync_ms = u->o.fsync_ms;
    st->checkpoint_lsn = u->checkpoint_lsn;
    st->oldest_lsn = u->nsegs > 0 ? u->segs[0].base_lsn : u->last_lsn;
    for (size_t i = 0; i < u->nsegs; i++) {
        st->bytes += u->segs[i].size;
    }
    st->segments = (uint32_t)u->nsegs;
    st->appends = u->appends;
    st->records = u->records;
    st->syncs = u->syncs;
    st->sync_us = u->sync_us;
    st->checkpoints = u->checkpoints;
    st->dirty_checkpoints = u->dirty_checkpoints;
    st->write_backs = u->write_backs;
    st->purged = u->purged;
    if (u->nsegs > 0 && u->prepared > u->segs[u->nsegs - 1].size) {
        st->prepared_ahead = u->prepared - u->segs[u->nsegs - 1].size;
    }
    st->failed = u->failed;
    pthread_mutex_unlock(&u->lock);
}

bool
ulog_parse_fsync(const char *s, enum ulog_fsync *policy, uint32_t *ms)
{
    uint64_t v;
    if (strcmp(s, "always") == 0) {
        *policy = ULOG_FSYNC_ALWAYS;
        return true;
    }
    if (strcmp(s, "never") == 0) {
        *policy = ULOG_FSYNC_NEVER;
        return true;
    }
    if (strcmp(s, "peer") == 0) {
        *policy = ULOG_FSYNC_PEER;
        *ms = ULOG_PEER_SYNC_MS;
        return true;
    }
    if (strncmp(s, "peer,", 5) == 0) {
        if (!util_parse_uint(s + 5, strlen(s + 5), 60000, &v) || v == 0) {
            return false;
        }
        *policy = ULOG_FSYNC_PEER;
        *ms = (uint32_t)v;
        return true;
    }
    if (util_parse_uint(s, strlen(s), 60000, &v) && v > 0) {
        *policy = ULOG_FSYNC_INTERVAL;
        *ms = (uint32_t)v;
        return true;
    }
    return false;
}
