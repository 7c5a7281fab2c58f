/*
 * ulog_checkpoint: checkpoints and segment removal (ulog.h U4, U5): the
 * checkpoint thread syncs the database, records how far the log is
 * applied in it (the checkpoint file, replaced atomically) and removes
 * segments no reader, peer or redo needs any more.
 */
#include "ulog.h"
#include "ulog_internal.h"

#include <dirent.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "atomicfile.h"
#include "crc32c.h"
#include "util.h"

/* ---------------------------------------------------------- checkpoints */

/* Lowest lsn not yet applied by every appender, minus one. */
static uint64_t
_applied_lsn_locked(struct ulog *u)
{
    uint64_t lsn = u->last_lsn;
    for (int i = 0; i < u->nslots; i++) {
        if (u->inflight[i] != 0 && u->inflight[i] - 1 < lsn) {
            lsn = u->inflight[i] - 1;
        }
    }
    return lsn;
}

uint64_t
ulog_applied_lsn(struct ulog *u)
{
    pthread_mutex_lock(&u->lock);
    uint64_t lsn = _applied_lsn_locked(u);
    pthread_mutex_unlock(&u->lock);
    return lsn;
}

static void
_purge(struct ulog *u)
{
    uint64_t acked = u->o.peers_acked != NULL ? u->o.peers_acked(u->o.arg)
                                              : UINT64_MAX;
    uint64_t removable[64];
    int nremove = 0;

    pthread_mutex_lock(&u->lock);
    uint64_t keep_after = u->checkpoint_lsn < acked ? u->checkpoint_lsn
                                                    : acked;
    /* Segment i ends where segment i+1 begins (its base_lsn). */
    while (u->nsegs > 1 && nremove < 64) {
        uint64_t end = u->segs[1].base_lsn;
        bool behind_checkpoint = end <= u->checkpoint_lsn;
        bool everyone_has_it = end <= keep_after;
        bool too_many = u->o.keep_segments > 0 &&
                        u->nsegs > u->o.keep_segments + 1;
        if (!behind_checkpoint || !(everyone_has_it || too_many)) {
            break;
        }
        /* U5: every record of the segment is behind the checkpoint, and
         * every peer has it or the peer is too far behind to keep. */
        assert(end <= u->checkpoint_lsn && (end <= acked || too_many));
        removable[nremove++] = u->segs[0].no;
        memmove(u->segs, u->segs + 1, (u->nsegs - 1) * sizeof(*u->segs));
        u->nsegs--;
        u->purged++;
        /* U5, U4: redo from the checkpoint still finds its records. */
        assert(u->segs[0].base_lsn <= u->checkpoint_lsn);
    }
    assert(u->nsegs >= 1); /* U5: the active segment is never removed */
    pthread_mutex_unlock(&u->lock);
    char path[PATH_MAX];
    for (int i = 0; i < nremove; i++) {
        ulog_seg_path(u->o.dir, removable[i], path, sizeof(path));
        if (unlink(path) != 0) {
            log_warn(u->o.log, "ulog: cannot remove %s: %s", path,
                     strerror(errno));
        } else {
            log_debug(u->o.log, "ulog: removed %s", path);
        }
    }
    /* U8: removals land in order, so a cut never leaves a gap. */
    if (nremove > 0 && atomicfile_sync_dir(path) != 0) {
        log_limited(u->o.log, LOG_WARN, "ulog: cannot sync %s: %s", u->o.dir,
                    strerror(errno));
    }
}

enum ulog_status
ulog_checkpoint(struct ulog *u)
{
    char path[PATH_MAX];
    char text[128];

    pthread_mutex_lock(&u->lock);
    uint64_t lsn = _applied_lsn_locked(u);
    /* U4: the checkpoint never names a record that is not logged. */
    assert(lsn <= u->last_lsn);
    uint64_t seq = lsn == u->last_lsn ? u->last_seq : 0;
    uint64_t bytes = u->total_appended;
    uint32_t salt = u->o.db_salt != NULL ? u->o.db_salt(u->o.arg) : 0;
    /* A rebuilt database (a new salt) needs its own checkpoint even if
     * the log has not moved: the old one's size means nothing for it. */
    bool same = lsn == u->checkpoint_lsn && salt == u->checkpoint_db_salt;
    /* A finished segment still holding changes that wait to be applied
     * (txn.h T8) is covered by a retry a second later, not in 25 s. */
    u->segment_done = u->nsegs > 1 && lsn < u->segs[u->nsegs - 1].base_lsn;
    pthread_mutex_unlock(&u->lock);
    if (!same) {
        uint64_t started = util_mono_ms();
        /* Read before the sync: growth from here on is the next one's. */
        uint64_t db_size = u->o.db_size != NULL ? u->o.db_size(u->o.arg) : 0;
        /* U4: the database is synced first, then the position recorded. */
        if (u->o.sync_db != NULL && u->o.sync_db(u->o.arg) != 0) {
            log_limited(u->o.log, LOG_ERROR,
                        "ulog: checkpoint: cannot sync the database: %s",
                        strerror(errno));
            return ULOG_EIO;
        }
        snprintf(path, sizeof(path), "%s/checkpoint", u->o.dir);
        int n = snprintf(text, sizeof(text), "checkpoint %" PRIu64 " %" PRIu64
                         " %" PRIu64 " %" PRIu32 "\n", lsn, seq, db_size, salt);
        if (atomicfile_write(path, text, (size_t)n) != 0) {
            log_limited(u->o.log, LOG_ERROR, "ulog: cannot write %s: %s", path,
                        strerror(errno));
            return ULOG_EIO;
        }
        pthread_mutex_lock(&u->lock);
        assert(lsn <= u->last_lsn); /* U4 */
        u->checkpoint_lsn = lsn;
        u->checkpoint_db_salt = salt;
        u->bytes_at_checkpoint = bytes;
        u->db_at_checkpoint = db_size;
        u->checkpoints++;
        pthread_mutex_unlock(&u->lock);
        log_debug(u->o.log, "ulog: checkpoint at lsn %" PRIu64 " took %" PRIu64
                  " ms", lsn, util_mono_ms() - started);
    }
    _purge(u);
    return ULOG_OK;
}

void
ulog_set_dirty_bounds(struct ulog *u, uint64_t checkpoint, uint64_t write_back)
{
    assert(!u->threads); /* read by the checkpoint thread */
    u->o.checkpoint_dirty = checkpoint;
    u->o.writeback_dirty = write_back;
}

void *
ulog_checkpoint_main(void *arg)
{
    struct ulog *u = arg;
    uint64_t last = util_mono_ms();
    util_thread_name("kura-checkpoint");

    /* Dirty bytes are looked at often: at the rate a database larger
     * than memory is written, a second is a tenth of the bound. */
    uint32_t tick = u->o.checkpoint_dirty > 0 && u->o.db_dirty != NULL ? 100
                                                                      : 1000;
    pthread_mutex_lock(&u->lock);
    while (!u->stopping) {
        struct timespec until;
        util_deadline_ms(&until, tick);
        pthread_cond_timedwait(&u->cp_cond, &u->lock, &until);
        if (u->stopping) {
            break;
        }
        /* A finished segment is removed only behind a checkpoint. Not
         * "while more than one segment exists": a peer holding an old
         * one back would make the database be written back every
         * second. */
        bool due = util_mono_ms() - last >= u->o.checkpoint_ms ||
                   u->total_appended - u->bytes_at_checkpoint >=
                       u->o.checkpoint_bytes ||
                   u->segment_done;
        uint64_t grown_from = u->db_at_checkpoint;
        pthread_mutex_unlock(&u->lock);
        if (!due && u->o.db_size != NULL && u->o.checkpoint_growth > 0) {
            uint64_t size = u->o.db_size(u->o.arg);
            due = size > grown_from &&
                  size - grown_from >= u->o.checkpoint_growth;
        }
        uint64_t dirty;
        bool by_dirty = false;
        bool known = !due && tick < 1000 &&
                     u->o.db_dirty(u->o.arg, &dirty) == 0;
        if (known && dirty >= u->o.checkpoint_dirty) {
            due = by_dirty = true;
        } else if (known && u->o.writeback_dirty > 0 &&
                   dirty >= u->o.writeback_dirty &&
                   u->o.db_write_back != NULL) {
            /* Dirty pages of records written back between checkpoints,
             * as RocksDB's bytes_per_sync does: reclaim finds clean
             * pages, and no checkpoint has a pile to write. */
            u->o.db_write_back(u->o.arg, dirty);
            pthread_mutex_lock(&u->lock);
            u->write_backs++;
            continue;
        }
        if (!due) {
            pthread_mutex_lock(&u->lock);
            continue;
        }
        pthread_mutex_lock(&u->lock);
        uint64_t before = u->checkpoints;
        pthread_mutex_unlock(&u->lock);
        ulog_checkpoint(u);
        last = util_mono_ms();
        pthread_mutex_lock(&u->lock);
        if (by_dirty && u->checkpoints != before) {
            u->dirty_checkpoints++;
        }
    }
    pthread_mutex_unlock(&u->lock);
    return NULL;
}

