/*
 * ulog_peer: the "peer" durability policy of the update log (ulog.h,
 * U10-U12), as pure functions of positions (ulog_peer.h). While a
 * connected, authenticated peer is linked, a write is answered once that
 * peer has written it to its own log; with no peer linked, or while the
 * linked one stalls, once this machine's fdatasync covers it, as under
 * "always". The log is synced every fsync_ms either way. The replication
 * sender (repl_sender.c) links a peer through ulog_peer_link() and passes
 * its reports on (ulog_sync.c), which applies these rules under the
 * log's lock.
 */
#include "ulog_peer.h"

#include <assert.h>
#include <string.h>

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

void
ulog_peer_init(struct ulog_peer *p, uint64_t last)
{
    memset(p, 0, sizeof(*p));
    p->released = last;
}

uint32_t
ulog_peer_live(const struct ulog_peer *p)
{
    return p->stalled ? 0 : p->live;
}

bool
ulog_peer_refresh(struct ulog_peer *p, enum ulog_fsync policy, uint64_t last,
                  uint64_t synced, uint64_t now_ms)
{
    if (policy != ULOG_FSYNC_PEER) {
        return false;
    }
    bool local_ok = p->live == 0 || p->stalled;
    uint64_t lsn = ulog_release_lsn(policy, last, synced, p->written,
                                    local_ok);
    if (lsn <= p->released) {
        return false; /* U10: never back */
    }
    p->released = lsn;
    assert(p->released <= last); /* U10: never past the end */
    if (p->pending_since_ms != 0) {
        p->pending_since_ms = now_ms; /* progress: a new clock */
    }
    return true;
}

bool
ulog_peer_waiting(struct ulog_peer *p, enum ulog_fsync policy, uint64_t lsn,
                  uint64_t now_ms)
{
    if (policy != ULOG_FSYNC_PEER || p->live == 0 || p->stalled) {
        if (policy == ULOG_FSYNC_PEER && p->pending_since_ms == 0 &&
            lsn > p->released) {
            p->pending_since_ms = now_ms;
        }
        return true;
    }
    if (p->pending_since_ms == 0 && lsn > p->released) {
        p->pending_since_ms = now_ms;
        return true; /* the sync thread times the stall from here */
    }
    return false;
}

void
ulog_peer_idle(struct ulog_peer *p)
{
    p->pending_since_ms = 0; /* U11: nobody waits, no stall */
    p->stalled = false;
}

uint64_t
ulog_peer_check_stall(struct ulog_peer *p, enum ulog_fsync policy,
                      uint32_t fsync_ms, uint64_t last, uint64_t synced,
                      uint64_t now_ms, struct ulog_peer_change *ch)
{
    memset(ch, 0, sizeof(*ch));
    if (policy != ULOG_FSYNC_PEER || p->live == 0 ||
        p->pending_since_ms == 0 || p->stalled) {
        return UINT64_MAX; /* nothing to time, or synced as "always" */
    }
    uint64_t due = p->pending_since_ms + fsync_ms;
    if (now_ms < due) {
        return due - now_ms;
    }
    p->stalled = true; /* U11 */
    p->stalls++;
    ch->stalled = true;
    /* What is already synced here may go at once. */
    ch->released = ulog_peer_refresh(p, policy, last, synced, now_ms);
    return UINT64_MAX;
}

void
ulog_peer_linked(struct ulog_peer *p, enum ulog_fsync policy, bool up,
                 uint64_t last, uint64_t synced, uint64_t now_ms,
                 struct ulog_peer_change *ch)
{
    bool peer = policy == ULOG_FSYNC_PEER;
    memset(ch, 0, sizeof(*ch));
    if (up) {
        ch->linked = p->live++ == 0 && peer;
        return;
    }
    assert(p->live > 0);
    if (p->live == 0 || --p->live > 0 || !peer) {
        return;
    }
    p->fallbacks++;
    ch->fell_back = true;
    /* U11: writes waiting on the peer now need a sync; what is synced
     * already may go at once. */
    ch->wake_sync = true;
    ch->released = ulog_peer_refresh(p, policy, last, synced, now_ms);
}

void
ulog_peer_report(struct ulog_peer *p, enum ulog_fsync policy, uint64_t lsn,
                 uint64_t last, uint64_t synced, uint64_t now_ms,
                 struct ulog_peer_change *ch)
{
    memset(ch, 0, sizeof(*ch));
    /* A report past the end names records a restart lost: only what this
     * log holds now can count, and records appended later must not. */
    if (lsn > last) {
        lsn = last;
    }
    if (policy != ULOG_FSYNC_PEER || lsn <= p->written) {
        return;
    }
    uint64_t before = p->released;
    (void)before; /* read by the U10 assertion only */
    p->written = lsn;
    if (p->stalled) {
        p->stalled = false; /* U11: reporting again */
        ch->wake_sync = true;
    }
    ch->released = ulog_peer_refresh(p, policy, last, synced, now_ms);
    assert(!ch->released || (p->released > before && p->released <= last));
}
