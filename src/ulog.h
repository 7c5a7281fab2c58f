/*
 * ulog: the update log. Every change is appended here before it is
 * applied to the database, and replicas are fed from here.
 *
 * Files, in the -ulog directory:
 *   00000001.ulog, 00000002.ulog, ...  segments; a new one is started when
 *                        the current one would pass -ulim bytes
 *   checkpoint           "lsn seq size salt": the database file whose
 *                        seal salt is `salt` was synced to disk holding
 *                        every record up to lsn, and every record past
 *                        `size` bytes of it belongs to a change after lsn
 *                        (replaced atomically, never rewritten in place)
 *   LOCK                 flock()ed while a process has the log open
 *
 * A segment starts with a 64-byte header (magic, version, creator sid,
 * segment number, and the lsn and seq of the last record before it), then
 * records in logrec.h format.
 *
 * Invariants (tests cite these numbers):
 *   U1. Records are appended with strictly increasing lsn and dense seq,
 *       across segments; a segment's header names the record before it.
 *   U2. A record is written (write(2) returned) before the change it
 *       describes is applied to the database, and a client is answered
 *       only once the record is as durable as the fsync policy promises
 *       (except with -uas, which answers first; see README).
 *   U3. At start-up the last segment is scanned; the first record that is
 *       incomplete or fails its checksum ends the log: the file is cut
 *       there and the cut is logged. Nothing after it is ever replayed.
 *   U4. The checkpoint lsn is at most the lsn below which every record has
 *       been applied to the database, and it is written only after the
 *       database file was synced. Redo from it reaches every logged change.
 *   U5. A segment is removed only when every record in it is at or below
 *       the checkpoint and has been acknowledged by every known peer, or
 *       when more than -ukeep segments would otherwise be kept (a peer that
 *       far behind is resynchronised in full instead).
 *   U6. Zeros written ahead of the appends (see ulog_sync.c) never land on a
 *       record: they go past the end, a chunk at a time, and an append
 *       that would reach the chunk being written waits for it.
 *   U7. Whatever start-up reads from the log is made durable before redo
 *       applies it (the last segment is fdatasynced after the tail is
 *       cut, and the directory synced), so a crash right after a restart
 *       cannot leave the database ahead of the log (store.h, D1).
 *   U8. Every change to the directory (a new segment, a removed one, the
 *       checkpoint file) is followed by an fsync of the directory before
 *       anything relies on it.
 *   U9. A segment is fdatasynced before the next one is created, under
 *       every policy, "never" included. So only the last segment can end
 *       in records a power cut lost, and U3's cut is the only repair the
 *       log ever needs: under "never" a cut could otherwise leave a hole
 *       in a middle segment followed by records that survived, and
 *       kurad would refuse to start on it (tests/powercut PC1). That
 *       sync counts as any other: the watchers whose records it made
 *       durable are told (by the sync thread, which the rotation wakes).
 *       tests/unit/check_ulog_claims.
 *  U13. An append claims its bytes and its records' lsn and seq under
 *       the lock, in order, and writes them after letting go of it when
 *       they land inside prepared zeros (U6); the written end (what
 *       readers, syncs and the durable lsn may reach) advances over a
 *       claim only once it and every claim before it is written. So a
 *       record is never read, synced or answered before every record
 *       before it is in the file, a crash leaves at worst zeros between
 *       written claims, which U3's cut ends the log at, and a segment is
 *       finished (U9) only with no claim in flight. A claim that fails
 *       to be written while others are in flight fails the log.
 *
 *  U14. Under "always", one fdatasync of the log is in flight at a time,
 *       and the thread that needs one and finds none in flight issues it
 *       itself: a worker at the end of its pass (ulog_want_sync()) or a
 *       thread blocked in ulog_wait_durable(). A sync covers every record
 *       written when it began (U12), so the asker's own, since it waits
 *       until its claim and every one before it are written (U13). When
 *       a sync ends with watchers still waiting, it calls back the one
 *       waiting longest, which asks again and leads the next; a watcher
 *       nobody leads for is still synced by the sync thread within
 *       ULOG_LAZY_SYNC_MS. So no reply waits on a thread hand-off the
 *       disk does not need, and no wait is lost.
 *
 * Under "peer" (ulog_peer.c; tests/unit/check_ulog_peer and
 * tests/integration/check_it_peer cite these):
 *  U10. While a connected, authenticated peer is linked (it reports what
 *       it writes, repl_sender.h R5), a record counts as durable (its
 *       replies may leave) only once that peer has reported it written
 *       to its own log: an answered write is then on both machines. The
 *       durable lsn never goes back and never passes the last lsn
 *       written (ulog_release_lsn()).
 *  U11. While no peer is linked, a record a client waits on is
 *       fdatasynced at once and released by that sync, exactly as under
 *       "always" (the fallback, shown in stats and logged whenever it
 *       begins or ends). The same holds while the linked peer stalls:
 *       once a client has waited fsync_ms with no report advancing, the
 *       waiting writes are synced here and answered (counted in stats);
 *       the next report ends the stall.
 *  U12. Whatever is written is fdatasynced within fsync_ms (default 100)
 *       whether a peer is connected or not, so a power cut of both
 *       machines at once loses at most the last fsync_ms of writes, and
 *       no reply waits longer than that beat plus one sync for a peer
 *       that has stalled.
 *
 * Threads: appenders (workers, the replication receiver) call
 * ulog_append(); under the "always" policy the thread that waits to
 * answer on what it wrote fdatasyncs it when no sync is in flight (U14),
 * and each sync tells the others it covered; records nobody waits on
 * (replicated ones, sweeper tombstones) are synced by a sync thread
 * within ULOG_LAZY_SYNC_MS. Under "every N ms" it syncs on that beat. It also
 * prepares log space ahead of the appends. A checkpoint thread
 * syncs the database, records checkpoints and removes old segments;
 * readers (replication senders, redo, tools) read the files concurrently
 * up to the written end.
 * One mutex guards the append position (held to claim, not to write:
 * U13); waiting readers sleep on its condition variable, which every
 * append and sync broadcasts. A reader
 * that skips one origin's records (a replication sender, which never
 * sends a peer its own) sleeps on that origin's own condition variable
 * instead, which only appends holding another origin's records wake.
 */
#ifndef KURA_ULOG_H
#define KURA_ULOG_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "log.h"
#include "logrec.h"

#define ULOG_SEGMENT_HEADER 64
#define ULOG_MAX_SLOTS 320    /* appending threads (batches) */
#define ULOG_MAX_WATCHERS 320 /* threads waiting for durability */
/*
 * Under "always", the longest a record nobody waits on stays unsynced.
 * Syncing those back to back would double the flushes a standby issues
 * for nothing: it answers no client for them, and its position is
 * acknowledged and persisted in batches anyway. Fewer flushes also leave
 * the disk to a master sharing it.
 */
#define ULOG_LAZY_SYNC_MS 50

enum ulog_status {
    ULOG_OK = 0,
    ULOG_END,     /* reader: no further record (yet) */
    ULOG_EGAP,    /* reader: records after that lsn were removed */
    ULOG_EIO,     /* an I/O error; see the logger */
    ULOG_ENOSPC,  /* the disk is full */
    ULOG_ECORRUPT,
    ULOG_EFAILED, /* an earlier write failed; the log refuses appends */
};

enum ulog_fsync {
    ULOG_FSYNC_ALWAYS,   /* every group commit is fdatasync()ed */
    ULOG_FSYNC_INTERVAL, /* fdatasync() every fsync_ms */
    ULOG_FSYNC_NEVER,    /* leave it to the kernel */
    ULOG_FSYNC_PEER,     /* a peer's log or our fdatasync (U10-U12) */
};

/* The default beat of "peer" (-fsync peer without ,N). */
#define ULOG_PEER_SYNC_MS 100

struct ulog_options {
    char dir[PATH_MAX];
    uint64_t segment_max;      /* -ulim */
    uint32_t keep_segments;    /* -ukeep: most segments kept for peers */
    enum ulog_fsync fsync;
    uint32_t fsync_ms;         /* for ULOG_FSYNC_INTERVAL and _PEER */
    uint32_t sid;              /* stamped into segment headers */
    uint32_t checkpoint_ms;    /* checkpoint at least this often */
    uint64_t checkpoint_bytes; /* ... or after this much log */
    uint64_t checkpoint_growth; /* ... or once the database grew this much */
    uint64_t checkpoint_dirty; /* ... or once db_dirty() reports this much;
                                  0: not */
    uint64_t writeback_dirty;  /* db_write_back() once db_dirty() reports
                                  this much; 0: never */
    struct clock *clock;       /* lsn source (shared with write stamps) */
    struct logger *log;
    /* Syncs the database file to disk; 0 on success (checkpoints). */
    int (*sync_db)(void *arg);
    /* Size of the database file in bytes (checkpoint_growth); may be
     * NULL. */
    uint64_t (*db_size)(void *arg);
    /* Bytes of dirty page cache that a checkpoint would write back (the
     * memory cgroup's, memlimit.h); 0 or -1 (unknown). May be NULL. */
    int (*db_dirty)(void *arg, uint64_t *bytes);
    /* Writes dirty database pages back without syncing (store.h,
     * store_write_back()), `dirty` being db_dirty()'s figure; 0 or -1. */
    int (*db_write_back)(void *arg, uint64_t dirty);
    /* The database file's seal salt, which names this version of the
     * file (recorded with its size in checkpoints); may be NULL. */
    uint32_t (*db_salt)(void *arg);
    /* Lowest lsn acknowledged by every known peer (UINT64_MAX if none). */
    uint64_t (*peers_acked)(void *arg);
    void *arg;
};

/* What start-up found in the log. */
struct ulog_recovery {
    uint64_t last_lsn;       /* 0 if the log is empty */
    uint64_t last_seq;
    uint64_t checkpoint_lsn; /* redo starts after this */
    uint64_t checkpoint_seq;
    uint64_t checkpoint_db_size; /* database bytes it covers; 0: unknown */
    uint32_t checkpoint_db_salt; /* ... of the file with this salt */
    uint64_t cut_bytes;      /* torn tail removed (U3), 0 if none */
    uint32_t segments;
};

struct ulog_stats {
    uint64_t last_lsn;
    uint64_t last_seq;
    uint64_t synced_lsn;     /* durable under the policy (U10) */
    uint64_t fdatasynced_lsn; /* on this machine's disk */
    uint64_t peer_lsn;       /* written by a peer (U10), 0 if none */
    uint32_t peers_live;     /* peers reporting writes (U11) */
    bool peer_fallback;      /* "peer" with no such peer: as "always" */
    enum ulog_fsync policy;
    uint32_t fsync_ms;
    uint64_t peer_fallbacks; /* times the fallback began */
    uint64_t peer_stalls;    /* times a linked peer stalled (U11) */
    bool peer_stalled;       /* ... and is stalled now */
    uint64_t checkpoint_lsn;
    uint64_t oldest_lsn;     /* records after this are still kept */
    uint64_t bytes;          /* total size of the segments */
    uint32_t segments;
    uint64_t appends;        /* write(2) calls (group commits) */
    uint64_t records;
    uint64_t syncs;          /* fdatasync(2) calls on the log */
    uint64_t sync_us;        /* time spent in them, microseconds */
    uint64_t checkpoints;
    uint64_t dirty_checkpoints; /* ... started by checkpoint_dirty */
    uint64_t write_backs;    /* db_write_back() calls */
    uint64_t purged;         /* segments removed */
    uint64_t prepared_ahead; /* zeroed, synced bytes past the end */
    bool failed;
};

struct ulog;
struct ulog_reader;

/*
 * Opens (creating if needed) the log in `o->dir`, scans and repairs its
 * tail (U3) and reports what it found in `*rec`. No thread is started yet.
 * Returns the log, or NULL with a reason in `err` (`errlen`).
 */
struct ulog *ulog_open(const struct ulog_options *o, struct ulog_recovery *rec,
                       char *err, size_t errlen);

/* Changes ulog_options.checkpoint_dirty and writeback_dirty; before
 * ulog_start() only. */
void ulog_set_dirty_bounds(struct ulog *u, uint64_t checkpoint,
                           uint64_t write_back);

/* Starts the sync and checkpoint threads. Returns 0 or -1. */
int ulog_start(struct ulog *u);

/*
 * Stops the threads, takes a final checkpoint (the caller has stopped
 * every appender and applied everything) and closes the log. NULL-safe.
 */
void ulog_close(struct ulog *u);

/*
 * Reserves an appender slot for the calling thread's batches. Returns the
 * slot (0..ULOG_MAX_SLOTS-1) or -1 if none is left.
 */
int ulog_slot(struct ulog *u);

/*
 * Seals and writes `n` contiguous records in `buf` (`len` bytes) with one
 * write(2), assigning each the next lsn and seq (U1), and marks them in
 * flight for `slot` until ulog_applied(). Sets `*last_lsn`. Returns
 * ULOG_OK, ULOG_ENOSPC, ULOG_EIO or ULOG_EFAILED; on failure nothing was
 * appended (a partial write is cut off again).
 */
enum ulog_status ulog_append(struct ulog *u, int slot, uint8_t *buf,
                             size_t len, size_t n, uint64_t *last_lsn);

/*
 * Disk-full safety: before logging changes, a writer reserves the bytes
 * they will take (ulog_reserve), so an append never fails for space. The
 * reservation is allocated in the active segment (the prepared zeros
 * usually hold it already; otherwise fallocate), and a rotation that
 * finds no room for a new segment keeps writing the current one past
 * -ulim. Returns ULOG_OK, ULOG_ENOSPC (nothing reserved), ULOG_EIO or
 * ULOG_EFAILED. The writer calls ulog_unreserve() with the same amount
 * once its append is done or abandoned. On a file system without
 * fallocate (ext3) there is no guarantee; ulog_space_guaranteed() says so.
 */
enum ulog_status ulog_reserve(struct ulog *u, uint64_t bytes);
void ulog_unreserve(struct ulog *u, uint64_t bytes);
bool ulog_space_guaranteed(struct ulog *u);

/*
 * `slot`'s appended records are applied to the database up to the one
 * before lsn `next` (its oldest record still to apply), or all of them
 * when `next` is 0. An append starts counting again only when nothing of
 * the slot waits (U4).
 */
void ulog_applied(struct ulog *u, int slot, uint64_t next);

/*
 * Blocks until `lsn` is durable under the policy (asking the sync thread
 * for it at once), or the log failed. Returns ULOG_OK or ULOG_EFAILED.
 */
enum ulog_status ulog_wait_durable(struct ulog *u, uint64_t lsn);

/* True if records up to `lsn` are as durable as the policy promises. */
bool ulog_durable(struct ulog *u, uint64_t lsn);

/* True once a write or sync failed; the log then refuses appends. */
bool ulog_failed(struct ulog *u);

/* Highest lsn that is durable under the policy. */
uint64_t ulog_durable_lsn(struct ulog *u);

/*
 * Registers a callback that the thread finishing a sync calls (the sync
 * thread, or under U14 another watcher's) once that sync has made the
 * lsn asked for with ulog_want_sync() durable, or under U14 to ask it to
 * lead the next sync (it then calls ulog_want_sync() again). The
 * callback must not block or take the log's lock. Returns the watcher
 * id, or -1.
 */
int ulog_watch(struct ulog *u, void (*fn)(void *arg), void *arg);

/*
 * Asks for `lsn` (written by the caller) to be made durable and then
 * `watcher`'s callback called. If `lsn` is already durable, or the log
 * has failed, the callback is called at once from the calling thread, so
 * a caller that found `lsn` not durable just before never waits for a
 * sync that is not coming. Under "always" with the threads running, a
 * caller that finds no sync in flight issues it itself (U14) and
 * returns true: `lsn` is then durable, or the log failed, and the
 * callback is not called for it. Otherwise returns false and the sync
 * in flight, or the sync thread, answers through the callback. Under
 * "N ms" and "never" the callback is not needed: ulog_durable() is
 * already true for every written lsn; under "peer" it is also called
 * when a peer's report makes `lsn` durable (U10).
 */
bool ulog_want_sync(struct ulog *u, int watcher, uint64_t lsn);

/*
 * True if a ulog_want_sync() now would issue the sync in the calling
 * thread (U14: "always", the threads running, none in flight). A hint
 * for what to do before asking: another thread may start one meanwhile.
 */
bool ulog_would_lead(struct ulog *u);

/*
 * Highest lsn below which every record has been applied to the database
 * (U4); a snapshot of the database taken now holds at least those.
 */
uint64_t ulog_applied_lsn(struct ulog *u);

/* Last lsn and seq written. */
void ulog_position(struct ulog *u, uint64_t *lsn, uint64_t *seq);

/* The policy the log was opened with. */
enum ulog_fsync ulog_fsync_policy(const struct ulog *u);

/* Fills `*st` with current figures. */
void ulog_stats(struct ulog *u, struct ulog_stats *st);

/* Takes a checkpoint now (also done periodically). Returns ULOG_OK/EIO. */
enum ulog_status ulog_checkpoint(struct ulog *u);

/*
 * Opens a reader of the live log returning records with lsn > `after`.
 * Returns ULOG_OK, or ULOG_EGAP if some of those records were removed
 * (the reader must then resynchronise in full).
 */
enum ulog_status ulog_reader_open(struct ulog *u, uint64_t after,
                                  struct ulog_reader **out);

/*
 * Opens a reader over the log files in `dir` without a running log (tools
 * and tests). Same semantics as ulog_reader_open().
 */
enum ulog_status ulog_reader_open_dir(const char *dir, uint64_t after,
                                      struct ulog_reader **out, char *err,
                                      size_t errlen);

/*
 * Returns the next record. `*rec` points into the reader's buffer and is
 * valid until the next call. ULOG_END when no record is available yet (a
 * live reader may wait with ulog_reader_wait()), ULOG_ECORRUPT on damage.
 * Only records up to the durable lsn are returned when `durable_only`.
 */
enum ulog_status ulog_reader_next(struct ulog_reader *r, struct logrec *rec,
                                  bool durable_only);

/*
 * The lsn of the last record the reader returned or skipped (at first, the
 * `after` it was opened with).
 */
uint64_t ulog_reader_lsn(const struct ulog_reader *r);

/* Byte offset and segment of the reader (for reporting damage). */
void ulog_reader_where(const struct ulog_reader *r, uint64_t *segment,
                       uint64_t *offset);

/*
 * Waits up to `timeout_ms` for the live log to grow past what the reader
 * has consumed. Returns true if it may have.
 */
bool ulog_reader_wait(struct ulog_reader *r, int timeout_ms);

/*
 * As ulog_reader_wait(), for a reader that skips every record whose
 * origin is `skip_sid` (0: none): appends holding only such records do
 * not wake it, so a replication sender sleeps through the stream its
 * peer sends this server. A reader limited to durable records is woken
 * only when the durable lsn passes a record of another origin. Returns
 * true if a record of another origin may have been appended (or, limited
 * to durable records, become durable).
 */
bool ulog_reader_wait_others(struct ulog_reader *r, uint32_t skip_sid,
                             int timeout_ms);

/* Closes a reader. NULL-safe. */
void ulog_reader_close(struct ulog_reader *r);

/*
 * Parses "always", "never", a number of milliseconds (1-60000), "peer"
 * (fsync_ms ULOG_PEER_SYNC_MS) or "peer,N". Returns false if `s` is none.
 */
bool ulog_parse_fsync(const char *s, enum ulog_fsync *policy, uint32_t *ms);

/* ------------------------------------------------ the peer policy (U10-12) */

/*
 * The release rule (U10, U11), pure: the highest lsn whose replies may
 * leave under `policy`, given the last lsn written, the last
 * fdatasynced, the highest a linked peer has reported written (0 if
 * none) and whether this machine's sync may release (`local_ok`: no
 * peer linked, or it stalled). "always": synced; "peer": peer_written
 * (never past last), or the higher of it and synced when local_ok; "N
 * ms" and "never": last. The log keeps the highest value it ever
 * returned, so the durable lsn never goes back.
 */
uint64_t ulog_release_lsn(enum ulog_fsync policy, uint64_t last,
                          uint64_t synced, uint64_t peer_written,
                          bool local_ok);

/*
 * Pure (U11): true if a record a client waits on must be fdatasynced at
 * once under `policy` with `live_peers` peers reporting writes (a
 * stalled one does not count).
 */
bool ulog_sync_on_demand(enum ulog_fsync policy, uint32_t live_peers);

/*
 * A peer (server `sid`) began (`up`) or stopped reporting the records it
 * writes to its own log. The first to begin ends the fallback, the last
 * to stop starts it (U11); both are logged under "peer". Any thread.
 */
void ulog_peer_link(struct ulog *u, uint32_t sid, bool up);

/*
 * A linked peer reports this log's records up to `lsn` written to its own
 * log. Under "peer" they become durable (U10): waiting threads and
 * watchers are told. `lsn` past the last written record counts as the
 * last. Any thread; ignored under other policies.
 */
void ulog_peer_written(struct ulog *u, uint64_t lsn);

/*
 * Highest lsn that survives a power cut of this machine as the policy
 * promises it: what is fdatasynced under "always" and "peer" (whose
 * peer reports say nothing of this machine's disk), the durable lsn
 * under the others. A standby acknowledges (and records in -rts) only
 * up to here.
 */
uint64_t ulog_local_durable_lsn(struct ulog *u);

#endif
