/*
 * ulog_peer: the "peer" durability policy of the update log (ulog.h,
 * U10-U12). While a connected, authenticated peer is linked, a write is
 * answered once that peer has written it to its own log; with no peer
 * linked, or while the linked one stalls, once this machine's fdatasync
 * covers it, as under "always". The log is synced every fsync_ms either
 * way. The replication sender (repl_sender.c)
 * links a peer here when it starts reporting writes (R5) and passes its
 * reports on; the sync thread (ulog.c) reads the link count.
 *
 * The rules themselves are pure functions, so the unit tests can check
 * them without a log; the rest updates struct ulog under its lock.
 */
#include "ulog.h"
#include "ulog_internal.h"

#include <assert.h>
#include <inttypes.h>

#include "util.h"

uint64_t
ulog_release_lsn(enum ulog_fsync policy, uint64_t last, uint64_t synced,
                 uint64_t peer_written, bool local_ok)
{
    switch (policy) {
    case ULOG_FSYNC_ALWAYS:
        return synced;
    case ULOG_FSYNC_PEER: {
        /* U10: the peer's copy; a report past the end (a peer that heard
         * of records a restart lost) counts as the end. */
        uint64_t peer = peer_written < last ? peer_written : last;
        /* U11: our own sync only in the fallback or a stall. */
        return local_ok && synced > peer ? synced : peer;
    }
    case ULOG_FSYNC_INTERVAL:
    case ULOG_FSYNC_NEVER:
        break;
    }
    return last;
}

bool
ulog_sync_on_demand(enum ulog_fsync policy, uint32_t live_peers)
{
    return policy == ULOG_FSYNC_ALWAYS ||
           (policy == ULOG_FSYNC_PEER && live_peers == 0);
}

bool
ulog_peer_refresh_locked(struct ulog *u)
{
    if (u->o.fsync != ULOG_FSYNC_PEER) {
        return false;
    }
    bool local_ok = u->peers_live == 0 || u->peer_stalled;
    uint64_t lsn = ulog_release_lsn(u->o.fsync, u->last_lsn, u->synced_lsn,
                                    u->peer_lsn, local_ok);
    if (lsn <= u->released) {
        return false; /* U10: never back */
    }
    u->released = lsn;
    if (u->pending_since_ms != 0) {
        u->pending_since_ms = util_mono_ms(); /* progress: a new clock */
    }
    return true;
}

/* Tells everyone the released lsn moved. Holds the lock. */
static void
_released_locked(struct ulog *u)
{
    ulog_publish_locked(u);
    pthread_cond_broadcast(&u->grown);
    ulog_notify_locked(u, false);
}

bool
ulog_peer_waiting_locked(struct ulog *u, uint64_t lsn)
{
    if (u->o.fsync != ULOG_FSYNC_PEER || u->peers_live == 0 ||
        u->peer_stalled) {
        if (u->o.fsync == ULOG_FSYNC_PEER && u->pending_since_ms == 0 &&
            lsn > u->released) {
            u->pending_since_ms = util_mono_ms();
        }
        return true;
    }
    if (u->pending_since_ms == 0 && lsn > u->released) {
        u->pending_since_ms = util_mono_ms();
        return true; /* the sync thread times the stall from here */
    }
    return false;
}

uint64_t
ulog_peer_check_stall_locked(struct ulog *u)
{
    if (u->o.fsync != ULOG_FSYNC_PEER || u->peers_live == 0 ||
        u->pending_since_ms == 0) {
        return UINT64_MAX;
    }
    if (u->peer_stalled) {
        return UINT64_MAX; /* the waiters are synced as under "always" */
    }
    uint64_t now = util_mono_ms();
    uint64_t due = u->pending_since_ms + u->o.fsync_ms;
    if (now < due) {
        return due - now;
    }
    u->peer_stalled = true;
    u->peer_stalls++;
    log_limited(u->o.log, LOG_WARN, "ulog: -fsync peer: no report from the "
                "peer for %" PRIu32 " ms while clients wait; answering them "
                "on this server's sync until it reports again",
                u->o.fsync_ms);
    /* What is already synced here may go at once. */
    if (ulog_peer_refresh_locked(u)) {
        _released_locked(u);
    }
    return UINT64_MAX;
}

void
ulog_peer_link(struct ulog *u, uint32_t sid, bool up)
{
    pthread_mutex_lock(&u->lock);
    bool peer = u->o.fsync == ULOG_FSYNC_PEER;
    if (up) {
        if (u->peers_live++ == 0 && peer) {
            log_info(u->o.log, "ulog: -fsync peer: peer %" PRIu32 " writes "
                     "this server's records to its log; syncing every %"
                     PRIu32 " ms", sid, u->o.fsync_ms);
        }
    } else {
        assert(u->peers_live > 0);
        if (u->peers_live > 0 && --u->peers_live == 0 && peer) {
            u->peer_fallbacks++;
            log_warn(u->o.log, "ulog: -fsync peer: peer %" PRIu32 " is gone "
                     "and no other is connected; syncing every group "
                     "commit (as -fsync always) until one is", sid);
            /* U11: writes waiting on the peer now need a sync; what is
             * synced already may go at once. */
            pthread_cond_signal(&u->sync_cond);
            if (ulog_peer_refresh_locked(u)) {
                _released_locked(u);
            }
        }
    }
    pthread_mutex_unlock(&u->lock);
}

void
ulog_peer_written(struct ulog *u, uint64_t lsn)
{
    pthread_mutex_lock(&u->lock);
    /* A report past the end names records a restart lost: only what this
     * log holds now can count, and records appended later must not. */
    if (lsn > u->last_lsn) {
        lsn = u->last_lsn;
    }
    if (u->o.fsync != ULOG_FSYNC_PEER || lsn <= u->peer_lsn) {
        pthread_mutex_unlock(&u->lock);
        return;
    }
    uint64_t before = u->released;
    (void)before; /* read by the U10 assertion only */
    u->peer_lsn = lsn;
    if (u->peer_stalled) {
        u->peer_stalled = false; /* U11: reporting again */
        pthread_cond_signal(&u->sync_cond);
    }
    if (ulog_peer_refresh_locked(u)) {
        assert(u->released > before && u->released <= u->last_lsn); /* U10 */
        _released_locked(u);
    }
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
