/*
 * ulog_sync: durability (ulog.h U2, U3, U6, U10-U12): the durable lsn and
 * its watchers, the peer links and reports of "peer" (whose rules are the
 * pure functions of ulog_peer.c), and the sync thread, which fdatasyncs
 * group commits as the -fsync policy asks and prepares log space ahead
 * of the appends. The writer (ulog.c) and the readers (ulog_reader.c)
 * call into this file; it calls down only (ulog_peer.c, ulog_segment.c).
 */
#include "ulog.h"
#include "ulog_internal.h"
#include "ulog_peer.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* ----------------------------------------------------------- durability */

uint64_t
ulog_durable_locked(struct ulog *u)
{
    if (u->o.fsync == ULOG_FSYNC_PEER) {
        assert(u->peer.released <= u->last_lsn); /* U10 */
        return u->peer.released;
    }
    return ulog_release_lsn(u->o.fsync, u->last_lsn, u->synced_lsn, 0, true);
}

uint64_t
ulog_others_end_locked(const struct ulog *u, uint32_t skip_sid)
{
    uint64_t end = u->other_lsn;
    for (int i = 0; i < u->norigins; i++) {
        if (u->origins[i].sid != skip_sid && u->origins[i].lsn > end) {
            end = u->origins[i].lsn;
        }
    }
    /* U13: origins are noted when claimed; readers stop at the written
     * end. */
    return end < u->last_lsn ? end : u->last_lsn;
}

/* Publishes the durable lsn for lock-free readers; the caller holds the
 * lock. Workers check durability every pass and must never wait for a
 * thread stuck in the file system while holding the lock. Appends do not
 * wake readers limited to durable records; the durable lsn's moves do,
 * here, and only those with a record of another origin past the old
 * durable lsn: a sender of a pair under "always" sleeps through the
 * syncs of its peer's stream. Woken under the lock, as the callers hold
 * it; each waiter re-tests its condition, so no wake-up is lost. */
void
ulog_publish_locked(struct ulog *u)
{
    uint64_t old = atomic_load_explicit(&u->durable_pub,
                                        memory_order_relaxed);
    uint64_t now = ulog_durable_locked(u);
    atomic_store_explicit(&u->durable_pub, now, memory_order_release);
    if (now <= old) {
        return;
    }
    for (int i = 0; i < ULOG_ORIGINS; i++) {
        struct ulog_exclusion *ex = &u->exclusions[i];
        if (ex->waiting_durable > 0 &&
            ulog_others_end_locked(u, ex->sid) > old) {
            pthread_cond_broadcast(&ex->cond);
        }
    }
}

uint64_t
ulog_durable_lsn(struct ulog *u)
{
    return atomic_load_explicit(&u->durable_pub, memory_order_acquire);
}

bool
ulog_failed(struct ulog *u)
{
    /* Asked on every durable write's way out: no lock for a flag that
     * only ever turns on. */
    return atomic_load_explicit(&u->failed, memory_order_acquire);
}

bool
ulog_durable(struct ulog *u, uint64_t lsn)
{
    return ulog_durable_lsn(u) >= lsn;
}


/* One fdatasync covering everything written so far; the caller holds the
 * lock, which is released while the disk works. Tells the watchers. */
static enum ulog_status
_sync_locked(struct ulog *u)
{
    uint64_t target = u->last_lsn;
    /* U14: one fdatasync of the log at a time, whichever thread issues
     * it; sync_fd and syncing_lsn describe that one. */
    assert(!ulog_sync_busy_locked(u));
    /* A rotation meanwhile must not close this descriptor under us: it
     * leaves it in retired_fd instead (see _create_segment). */
    int fd = u->active_fd;
    const struct segment *active = &u->segs[u->nsegs - 1];
    uint64_t seg_no = active->no;
    uint64_t seg_end = active->size; /* where `target` ends (U13) */
    u->sync_fd = fd;
    if (target > u->syncing_lsn) {
        u->syncing_lsn = target;
    }
    pthread_mutex_unlock(&u->lock);
    uint64_t began = util_mono_us();
    int rc = fdatasync(fd);
    int saved = errno;
    uint64_t took = util_mono_us() - began;
    pthread_mutex_lock(&u->lock);
    /* Cleared before the watchers are told, so that whoever asks from
     * now on either finds no sync in flight or is told by this one's
     * ulog_notify_locked() (U14). */
    u->sync_fd = -1;
    u->sync_us += took;
    if (u->retired_fd == fd) {
        close(fd);
        u->retired_fd = -1;
    }
    if (rc != 0) {
        /* A failed fsync may have dropped data: never retry blindly. */
        log_error(u->o.log, "ulog: fdatasync failed (%s); refusing writes "
                  "until restart", strerror(saved));
        u->failed = true;
        pthread_cond_broadcast(&u->grown);
        /* Wake every waiter: what they wait for will never come. */
        ulog_notify_locked(u, true);
        return ULOG_EIO;
    }
    u->syncs++;
    u->last_sync_ms = util_mono_ms();
    /* U12: the sync covered what was written when it began, no more. */
    assert(target <= u->last_lsn);
    if (target > u->synced_lsn) {
        u->synced_lsn = target;
    }
    if (seg_no > u->synced_no ||
        (seg_no == u->synced_no && seg_end > u->synced_off)) {
        if (seg_no != u->synced_no) {
            u->dropped_off = 0; /* nothing of a new segment dropped yet */
        }
        u->synced_no = seg_no;
        u->synced_off = seg_end;
    }
    assert(u->synced_lsn <= u->last_lsn); /* U10, U12 */
    (void)ulog_peer_refresh_locked(u); /* U11: releases only in fallback */
    ulog_publish_locked(u);
    pthread_cond_broadcast(&u->grown);
    if (!ulog_leads_syncs_locked(u)) {
        pthread_cond_signal(&u->sync_cond);
    }
    ulog_notify_locked(u, false);
    return ULOG_OK;
}

enum ulog_status
ulog_wait_durable(struct ulog *u, uint64_t lsn)
{
    pthread_mutex_lock(&u->lock);
    if (u->wait_lsn < lsn) {
        u->wait_lsn = lsn;
    }
    if (ulog_peer_waiting(&u->peer, u->o.fsync, lsn, util_mono_ms()) &&
        !ulog_leads_syncs_locked(u)) {
        pthread_cond_signal(&u->sync_cond);
    }
    while (!u->failed && ulog_durable_locked(u) < lsn) {
        /* With no sync thread to ask, or under U14, this thread syncs,
         * once what it waits for is written and no sync is in flight
         * (the one in flight broadcasts `grown` when it ends). */
        if (!ulog_sync_busy_locked(u) && lsn <= u->last_lsn &&
            (!u->threads || u->stopping || ulog_leads_syncs_locked(u))) {
            _sync_locked(u);
            continue;
        }
        pthread_cond_wait(&u->grown, &u->lock);
    }
    bool failed = u->failed;
    pthread_mutex_unlock(&u->lock);
    return failed ? ULOG_EFAILED : ULOG_OK;
}

int
ulog_watch(struct ulog *u, void (*fn)(void *arg), void *arg)
{
    pthread_mutex_lock(&u->lock);
    int id = -1;
    if (u->nwatchers < ULOG_MAX_WATCHERS) {
        id = u->nwatchers++;
        u->watchers[id] = (struct watcher){fn, arg, 0};
    }
    pthread_mutex_unlock(&u->lock);
    return id;
}

/*
 * U14: the calling thread syncs the log itself, once `lsn` is written
 * (a claim before it may still be in flight, U13). Returns true when
 * `lsn` is durable or the log failed; false when another sync began
 * first. The caller holds the lock, which is released meanwhile.
 */
static bool
_lead_sync_locked(struct ulog *u, struct watcher *w, uint64_t lsn)
{
    while (u->last_lsn < lsn && !u->failed) {
        pthread_cond_wait(&u->written, &u->lock);
    }
    if (u->failed || ulog_durable_locked(u) >= lsn) {
        return true;
    }
    if (ulog_sync_busy_locked(u)) {
        return false;
    }
    if (w->want <= u->last_lsn) {
        w->want = 0; /* this sync covers it: no call back to itself */
    }
    (void)_sync_locked(u);
    /* U12: it covered everything written when it began, `lsn` included. */
    assert(u->failed || ulog_durable_locked(u) >= lsn);
    return true;
}

/* U14: a thread asking now would issue the sync itself. The caller
 * holds the lock. */
static bool
_would_lead_locked(const struct ulog *u)
{
    return ulog_leads_syncs_locked(u) && !ulog_sync_busy_locked(u);
}

bool
ulog_would_lead(struct ulog *u)
{
    pthread_mutex_lock(&u->lock);
    bool lead = _would_lead_locked(u);
    pthread_mutex_unlock(&u->lock);
    return lead;
}

bool
ulog_want_sync(struct ulog *u, int watcher, uint64_t lsn)
{
    pthread_mutex_lock(&u->lock);
    if (watcher < 0 || watcher >= u->nwatchers) {
        pthread_mutex_unlock(&u->lock);
        return false;
    }
    struct watcher *w = &u->watchers[watcher];
    if (lsn <= ulog_durable_locked(u) || u->failed) {
        /* No sync is coming for it: the caller may have checked just
         * before the one that covered it finished. Answer now. */
        struct watcher now = *w;
        pthread_mutex_unlock(&u->lock);
        now.fn(now.arg);
        return false;
    }
    if (_would_lead_locked(u) && _lead_sync_locked(u, w, lsn)) {
        pthread_mutex_unlock(&u->lock);
        return true;
    }
    if (w->want < lsn) {
        w->want = lsn;
    }
    /* Under U14 the sync in flight tells it, or asks it to lead next. */
    if (ulog_peer_waiting(&u->peer, u->o.fsync, lsn, util_mono_ms()) &&
        !ulog_leads_syncs_locked(u)) {
        pthread_cond_signal(&u->sync_cond);
    }
    pthread_mutex_unlock(&u->lock);
    return false;
}

/*
 * Calls the watchers whose lsn became durable, or with `all` every watcher
 * still waiting (the log failed and durability will never come). The
 * caller holds the lock, which is released around the calls.
 */
void
ulog_notify_locked(struct ulog *u, bool all)
{
    struct watcher due[ULOG_MAX_WATCHERS];
    int n = 0;
    uint64_t durable = ulog_durable_locked(u); /* U10 */
    bool waiting = u->wait_lsn > durable;
    int oldest = -1;
    for (int i = 0; i < u->nwatchers; i++) {
        uint64_t want = u->watchers[i].want;
        if (want != 0 && (all || want <= durable)) {
            u->watchers[i].want = 0;
            due[n++] = u->watchers[i];
        } else if (want != 0) {
            waiting = true;
            if (oldest < 0 || want < u->watchers[oldest].want) {
                oldest = i;
            }
        }
    }
    if (oldest >= 0 && _would_lead_locked(u)) {
        /* U14: nobody else syncs for it; called back, it asks again and
         * leads the next sync (or is told by one begun meanwhile). */
        u->watchers[oldest].want = 0;
        due[n++] = u->watchers[oldest];
    }
    if (!waiting) {
        ulog_peer_idle(&u->peer); /* U11: nobody waits, no stall */
    }
    if (n == 0) {
        return;
    }
    pthread_mutex_unlock(&u->lock);
    for (int i = 0; i < n; i++) {
        due[i].fn(due[i].arg);
    }
    pthread_mutex_lock(&u->lock);
}

/*
 * Writes and syncs zeros ahead of the append position (see ULOG_PREPARE_STEP);
 * the caller holds the lock, released during the I/O.
 */
static void
_prepare_locked(struct ulog *u)
{
    static const uint8_t zeros[ULOG_PREPARE_CHUNK];
    struct segment *active = &u->segs[u->nsegs - 1];
    uint64_t no = active->no;
    /* U13: past what appends have claimed, written or not. */
    uint64_t claimed = ulog_claimed_end_locked(u);
    uint64_t from = u->prepared > claimed ? u->prepared : claimed;
    uint64_t limit = u->o.segment_max + ULOG_PREPARE_LOW;

    if (from - claimed >= ULOG_PREPARE_LOW || from >= limit) {
        return;
    }
    uint64_t to = from + ULOG_PREPARE_STEP < limit ? from + ULOG_PREPARE_STEP : limit;
    int fd = dup(u->active_fd);
    bool ok = fd >= 0;
    uint64_t off = from;
    /* U6: a chunk at a time, each past the end as it is then, and fenced
     * off from the appends while it is written. */
    while (ok && off < to && u->segs[u->nsegs - 1].no == no) {
        active = &u->segs[u->nsegs - 1];
        claimed = ulog_claimed_end_locked(u);
        off = off > claimed ? off : claimed;
        if (off >= to) {
            break;
        }
        size_t n = to - off < sizeof(zeros) ? (size_t)(to - off)
                                            : sizeof(zeros);
        /* U6, U13: zeros go past the end, claimed bytes included. */
        assert(off >= claimed && claimed >= active->size);
        u->zeroing_no = no;
        u->zeroing_from = off;
        pthread_mutex_unlock(&u->lock);
        ok = ulog_write_full(fd, zeros, n, off) == 0;
        pthread_mutex_lock(&u->lock);
        /* U6: no append reached the chunk while it was written. */
        assert(u->segs[u->nsegs - 1].no != no ||
               ulog_claimed_end_locked(u) <= off);
        u->zeroing_no = 0;
        pthread_cond_broadcast(&u->zeroed);
        off += n;
    }
    pthread_mutex_unlock(&u->lock);
    ok = ok && fdatasync(fd) == 0;
    int saved = errno;
    if (fd >= 0) {
        close(fd);
    }
    pthread_mutex_lock(&u->lock);
    if (!ok) {
        log_limited(u->o.log, LOG_WARN, "ulog: cannot prepare log space: %s",
                    strerror(saved));
        return;
    }
    /* Up to `off` every block was written, by zeros or by appends. */
    if (u->segs[u->nsegs - 1].no == no && u->prepared < off) {
        u->prepared = off;
    }
}

/*
 * Drops the active segment's synced pages from the page cache, all but the
 * last ULOG_DROP_BEHIND of them (see there); the caller holds the lock,
 * released during the call.
 */
static void
_drop_behind_locked(struct ulog *u)
{
    const struct segment *active = &u->segs[u->nsegs - 1];
    if (u->synced_no != active->no || u->synced_off < ULOG_DROP_BEHIND) {
        return; /* nothing of this segment is synced far enough behind */
    }
    /* One call per ULOG_DROP_STEP of log, not one per sync. */
    uint64_t to = (u->synced_off - ULOG_DROP_BEHIND) / ULOG_DROP_STEP *
                  ULOG_DROP_STEP;
    if (to <= u->dropped_off) {
        return;
    }
    int fd = dup(u->active_fd); /* a rotation may close the active one */
    if (fd < 0) {
        return;
    }
    u->dropped_off = to;
    pthread_mutex_unlock(&u->lock);
    /* From the start: pages a reader behind (a lagging sender, redo)
     * brought back go too. The kernel skips the ranges not cached. */
    (void)posix_fadvise(fd, 0, (off_t)to, POSIX_FADV_DONTNEED);
    close(fd);
    pthread_mutex_lock(&u->lock);
}

/*
 * Under "always": milliseconds until what is written must be synced, 0 for
 * now (a worker waits to answer on it), UINT64_MAX when nothing is
 * pending. The caller holds the lock.
 */
static uint64_t
_sync_due_in_locked(struct ulog *u)
{
    if (u->failed || ulog_sync_busy_locked(u) ||
        u->last_lsn <= u->synced_lsn || u->syncing_lsn >= u->last_lsn) {
        return UINT64_MAX;
    }
    if (u->wait_lsn > u->synced_lsn) {
        return 0;
    }
    /* U14: the workers lead their own syncs; what is left to this thread
     * is the lazy sync below, which also catches a watcher nobody led
     * for. */
    for (int i = 0; i < u->nwatchers && !ulog_leads_syncs_locked(u); i++) {
        if (u->watchers[i].want > u->synced_lsn) {
            return 0;
        }
    }
    uint64_t now = util_mono_ms();
    uint64_t due = u->last_sync_ms + ULOG_LAZY_SYNC_MS;
    return due > now ? due - now : 0;
}

/* Whether a watcher waits for an lsn already durable. The caller holds
 * the lock. */
static bool
_watcher_due_locked(struct ulog *u)
{
    uint64_t durable = ulog_durable_locked(u);
    for (int i = 0; i < u->nwatchers; i++) {
        if (u->watchers[i].want != 0 && u->watchers[i].want <= durable) {
            return true;
        }
    }
    return false;
}

/* ------------------------------------------------- "peer" (U10-U12) */

bool
ulog_peer_refresh_locked(struct ulog *u)
{
    return ulog_peer_refresh(&u->peer, u->o.fsync, u->last_lsn,
                             u->synced_lsn, util_mono_ms());
}

/* Acts on what a step of the peer policy changed. Holds the lock, which
 * ulog_notify_locked() releases around the watchers' calls. */
static void
_peer_changed_locked(struct ulog *u, const struct ulog_peer_change *ch)
{
    if (ch->wake_sync) {
        pthread_cond_signal(&u->sync_cond);
    }
    if (ch->released) {
        ulog_publish_locked(u);
        pthread_cond_broadcast(&u->grown);
        ulog_notify_locked(u, false);
    }
}

/* "peer", sync thread: times a stall (U11); returns the milliseconds
 * until it should look again. Holds the lock. */
static uint64_t
_check_stall_locked(struct ulog *u)
{
    struct ulog_peer_change ch;
    uint64_t next = ulog_peer_check_stall(&u->peer, u->o.fsync,
                                          u->o.fsync_ms, u->last_lsn,
                                          u->synced_lsn, util_mono_ms(), &ch);
    if (ch.stalled) {
        log_limited(u->o.log, LOG_WARN, "ulog: -fsync peer: no report from "
                    "the peer for %" PRIu32 " ms while clients wait; "
                    "answering them on this server's sync until it reports "
                    "again", u->o.fsync_ms);
    }
    _peer_changed_locked(u, &ch);
    return next;
}

void
ulog_peer_link(struct ulog *u, uint32_t sid, bool up)
{
    struct ulog_peer_change ch;
    pthread_mutex_lock(&u->lock);
    ulog_peer_linked(&u->peer, u->o.fsync, up, u->last_lsn, u->synced_lsn,
                     util_mono_ms(), &ch);
    if (ch.linked) {
        log_info(u->o.log, "ulog: -fsync peer: peer %" PRIu32 " writes this "
                 "server's records to its log; syncing every %" PRIu32
                 " ms", sid, u->o.fsync_ms);
    }
    if (ch.fell_back) {
        log_warn(u->o.log, "ulog: -fsync peer: peer %" PRIu32 " is gone and "
                 "no other is connected; syncing every group commit (as "
                 "-fsync always) until one is", sid);
    }
    _peer_changed_locked(u, &ch);
    pthread_mutex_unlock(&u->lock);
}

void
ulog_peer_written(struct ulog *u, uint64_t lsn)
{
    struct ulog_peer_change ch;
    pthread_mutex_lock(&u->lock);
    ulog_peer_report(&u->peer, u->o.fsync, lsn, u->last_lsn, u->synced_lsn,
                     util_mono_ms(), &ch); /* U10 */
    _peer_changed_locked(u, &ch);
    pthread_mutex_unlock(&u->lock);
}

uint64_t
ulog_local_durable_lsn(struct ulog *u)
{
    pthread_mutex_lock(&u->lock);
    uint64_t lsn = u->o.fsync == ULOG_FSYNC_PEER ? u->synced_lsn
                                                 : ulog_durable_locked(u);
    pthread_mutex_unlock(&u->lock);
    return lsn;
}

enum ulog_fsync
ulog_fsync_policy(const struct ulog *u)
{
    return u->o.fsync;
}

/* ---------------------------------------------------------- the thread */

/*
 * The log's sync thread. Under "always" it fdatasyncs what has been
 * written as soon as a worker waits on it, back to back while they keep
 * waiting, so each sync covers every group commit made meanwhile; what
 * nobody waits on is synced within ULOG_LAZY_SYNC_MS. Under "every N ms"
 * it syncs on that beat. Between syncs it prepares log space ahead of the
 * appends.
 */
void *
ulog_sync_main(void *arg)
{
    struct ulog *u = arg;
    uint64_t next_sync = util_mono_ms() + u->o.fsync_ms;
    util_thread_name("kura-sync");

    pthread_mutex_lock(&u->lock);
    while (!u->stopping) {
        /* U11: "peer" syncs for waiters only while no peer is linked, or
         * the linked one has stalled. */
        /* A rotation's fdatasync (U9) makes records durable inside an
         * append, which cannot stop to call the watchers; it wakes this
         * thread, which tells them. */
        if (_watcher_due_locked(u)) {
            ulog_notify_locked(u, false);
        }
        uint64_t stall_in = _check_stall_locked(u);
        bool always = ulog_sync_on_demand(u->o.fsync,
                                          ulog_peer_live(&u->peer));
        /* U12: "peer" also syncs on its beat, linked or not. */
        bool beat = u->o.fsync == ULOG_FSYNC_INTERVAL ||
                    u->o.fsync == ULOG_FSYNC_PEER;
        uint64_t wait_ms = 100;
        if (always) {
            uint64_t due = _sync_due_in_locked(u);
            if (due == 0) {
                _sync_locked(u);
                continue;
            }
            wait_ms = due < wait_ms ? due : wait_ms;
        }
        _prepare_locked(u);
        _drop_behind_locked(u);
        if (beat && !u->failed) {
            uint64_t now = util_mono_ms();
            if (now >= next_sync) {
                if (u->last_lsn > u->synced_lsn &&
                    !ulog_sync_busy_locked(u)) {
                    _sync_locked(u);
                }
                now = util_mono_ms();
                next_sync = now + u->o.fsync_ms;
            }
            wait_ms = next_sync - now < wait_ms ? next_sync - now : wait_ms;
        }
        wait_ms = stall_in < wait_ms ? stall_in : wait_ms;
        if (ulog_sync_on_demand(u->o.fsync, ulog_peer_live(&u->peer)) &&
            _sync_due_in_locked(u) == 0) {
            continue; /* a worker began waiting while space was prepared */
        }
        struct timespec until;
        util_deadline_ms(&until, wait_ms);
        pthread_cond_timedwait(&u->sync_cond, &u->lock, &until);
    }
    pthread_mutex_unlock(&u->lock);
    return NULL;
}
