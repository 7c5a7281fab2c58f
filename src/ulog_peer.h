/*
 * ulog_peer: the "peer" durability policy (ulog.h U10-U12) as pure
 * functions of log positions and the time. struct ulog_peer is the
 * policy's state; the log (ulog_sync.c) keeps it under its lock and
 * passes in what it knows: the last lsn written, the last synced, a
 * peer's report, the clock. Nothing here locks, logs, signals or calls
 * back into the log, so the unit tests check the rules without one, and
 * the log's files call down into this one only.
 */
#ifndef KURA_ULOG_PEER_H
#define KURA_ULOG_PEER_H

#include <stdbool.h>
#include <stdint.h>

#include "ulog.h"

struct ulog_peer {
    uint64_t written;          /* the highest lsn a peer reported written */
    uint32_t live;             /* linked peers (U11) */
    uint64_t released;         /* the durable lsn under "peer" (U10) */
    uint64_t pending_since_ms; /* a client waits, no progress since then */
    bool stalled;              /* ... for fsync_ms: released on our sync */
    uint64_t fallbacks;        /* the last linked peer went away */
    uint64_t stalls;           /* a linked peer stopped reporting */
};

/* What changed in a step; the caller acts on each flag under its lock
 * (ulog_sync.c: publish and notify, wake the sync thread, log). */
struct ulog_peer_change {
    bool released;  /* `released` advanced: replies may leave */
    bool wake_sync; /* the sync thread has work: a stall, a fallback */
    bool fell_back; /* the last linked peer went away (log it) */
    bool stalled;   /* a stall began (log it) */
    bool linked;    /* the first peer linked (log it) */
};

/* Starts the state of a log whose records up to `last` are all synced. */
void ulog_peer_init(struct ulog_peer *p, uint64_t last);

/* Peers whose reports release writes now: none while stalled. */
uint32_t ulog_peer_live(const struct ulog_peer *p);

/*
 * Recomputes `released` from the positions (U10, U11): the peer's report
 * while one is live, our own sync in the fallback or a stall, never back
 * and never past `last`. Returns true if it advanced. Only "peer" moves
 * it; other policies leave the state alone.
 */
bool ulog_peer_refresh(struct ulog_peer *p, enum ulog_fsync policy,
                       uint64_t last, uint64_t synced, uint64_t now_ms);

/*
 * A client waits on `lsn`: starts the stall clock (U11). Returns true if
 * the sync thread must hear of it: under the other policies, in the
 * fallback or a stall, or when this wait starts the clock. While a peer
 * is live the sync thread has nothing else to do for a waiter.
 */
bool ulog_peer_waiting(struct ulog_peer *p, enum ulog_fsync policy,
                       uint64_t lsn, uint64_t now_ms);

/* Nobody waits any more: no stall clock, no stall. */
void ulog_peer_idle(struct ulog_peer *p);

/*
 * The sync thread's look at the stall clock: a client has waited
 * `fsync_ms` with no progress while a peer is linked starts a stall
 * (`ch->stalled`, then what our sync already covers is released). Returns
 * the milliseconds until it should look again (UINT64_MAX: nothing to
 * time).
 */
uint64_t ulog_peer_check_stall(struct ulog_peer *p, enum ulog_fsync policy,
                               uint32_t fsync_ms, uint64_t last,
                               uint64_t synced, uint64_t now_ms,
                               struct ulog_peer_change *ch);

/* A peer linked (`up`) or went away. */
void ulog_peer_linked(struct ulog_peer *p, enum ulog_fsync policy, bool up,
                      uint64_t last, uint64_t synced, uint64_t now_ms,
                      struct ulog_peer_change *ch);

/* A peer reports it wrote up to `lsn` (past `last`: up to `last`, the
 * records a restart lost never count). Ends a stall. */
void ulog_peer_report(struct ulog_peer *p, enum ulog_fsync policy,
                      uint64_t lsn, uint64_t last, uint64_t synced,
                      uint64_t now_ms, struct ulog_peer_change *ch);

#endif
