/*
 * ulog_internal: the update log's state, shared by the log's own files
 * and by nothing else. The calls go one way: the writer (ulog.c) and the
 * readers (ulog_reader.c) call the durability layer (ulog_sync.c), which
 * calls the pure "peer" policy (ulog_peer.c); the writer also calls the
 * checkpoint thread's file (ulog_checkpoint.c); every one of them may
 * call the segment files' helpers (ulog_segment.c), which call none.
 */
#ifndef KURA_ULOG_INTERNAL_H
#define KURA_ULOG_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ulog.h"
#include "ulog_peer.h"

/* A reader's (and the start-up scan's) first buffer size. */
#define READ_BUF_MIN ((size_t)256 << 10)

/*
 * The active segment is written with zeros ahead of the append position
 * (ULOG_PREPARE_STEP at a time, once less than ULOG_PREPARE_LOW is left)
 * and synced. An append then overwrites blocks the file already has, so
 * its fdatasync() needs no journal commit; on ext3/ext4 in data=ordered
 * mode a commit would also force out the database's dirty pages (seed
 * 002's ext3 slowdown). The sync thread does this between syncs, so a
 * step is kept small: workers waiting on a sync wait for the step in
 * progress (8 MiB steps held every client about 9 ms once a second at 64
 * connections, and 28 ms on a loop-mounted ext4). The zeros are written
 * ULOG_PREPARE_CHUNK at a time without the lock, fenced off from appends
 * (U6).
 */
#define ULOG_PREPARE_STEP ((uint64_t)1 << 20)
#define ULOG_PREPARE_LOW ((uint64_t)4 << 20)
#define ULOG_PREPARE_CHUNK ((size_t)64 << 10)

/*
 * The log is written once and read again only by a reader that falls
 * behind (a lagging replication sender, redo, a backup), yet its pages
 * stay in the page cache until the segment is removed. Under a memory
 * limit they crowd out the database's pages (36 MiB of 256 at 1x under
 * Zipf load), and on a shared machine they push out other programs'
 * pages. So whenever the synced end has moved ULOG_DROP_STEP further,
 * the sync thread drops the active segment's pages from its start to
 * ULOG_DROP_BEHIND behind that end; readers close behind the writes
 * still find theirs in memory. Only synced (clean) pages are in that
 * range, and POSIX_FADV_DONTNEED never discards data: it skips a dirty
 * page, and a page dropped is read back from disk when asked for.
 */
#define ULOG_DROP_BEHIND ((uint64_t)4 << 20)
#define ULOG_DROP_STEP ((uint64_t)1 << 20)

struct segment {
    uint64_t no;
    uint64_t base_lsn; /* lsn of the last record before this segment */
    uint64_t base_seq;
    uint64_t size;     /* bytes of valid data, header included */
};

struct watcher {
    void (*fn)(void *arg);
    void *arg;
    uint64_t want; /* call once this lsn is durable; 0 = not waiting */
};

/*
 * Appends are tracked by origin server, so that a reader skipping one
 * origin's records (a replication sender skips those that came from its
 * peer) sleeps through appends holding only those. Each skipped origin
 * has its own condition variable, broadcast only by appends holding
 * another origin's records; it lives as long as the log, so an appender
 * may broadcast it after unlocking.
 */
#define ULOG_ORIGINS 8

struct ulog_origin {
    uint32_t sid;
    uint64_t lsn; /* the last record appended from `sid` */
};

struct ulog_exclusion {
    uint32_t sid;      /* the origin skipped; 0 while unused */
    uint32_t waiting;  /* readers asleep on `cond` */
    uint32_t waiting_durable; /* ... of them limited to durable records:
                                 woken when the durable lsn moves, not by
                                 appends */
    pthread_cond_t cond;
};

/*
 * An append whose bytes are claimed in the active segment and being
 * written outside the lock (U13). Claims are kept in claim order, which
 * is lsn order; the written end advances over those done, in order.
 */
struct ulog_claim {
    uint64_t off;       /* where its bytes go */
    uint64_t len;
    uint64_t lsn;       /* its last record's */
    uint64_t seq;
    uint64_t n;         /* records */
    uint32_t first_sid; /* the first record's origin */
    bool mixed;         /* another origin follows */
    bool done;          /* written */
};

/* Appends in flight at once; one more waits for the oldest to finish. */
#define ULOG_MAX_CLAIMS 512

struct ulog {
    struct ulog_options o;
    int lock_fd;
    pthread_mutex_t lock;
    pthread_cond_t grown;     /* broadcast on every append and sync */
    pthread_cond_t sync_cond; /* wakes the sync thread */
    pthread_cond_t cp_cond;   /* wakes the checkpoint thread */
    pthread_cond_t zeroed;    /* a chunk of zeros was written (U6) */
    struct segment *segs;
    size_t nsegs;
    size_t cap;
    int active_fd;
    uint64_t prepared;     /* bytes of the active segment on disk (U3) */
    uint64_t zeroing_no;   /* segment whose zeros are being written, or 0 */
    uint64_t zeroing_from; /* ... from this offset (U6) */
    uint64_t space_end;    /* active segment allocated up to here */
    uint64_t reserved;     /* bytes reserved by appenders (ulog_reserve) */
    bool space_unsupported;      /* no fallocate: no guarantee */
    uint64_t rotate_retry_ms;    /* a rotation failed for space: retry then */
    uint64_t last_lsn;     /* the last record written (readers' end) */
    uint64_t last_seq;
    /* U13: appends claimed in the active segment, written or being
     * written, past the written end (ulog_claimed_end_locked()). */
    struct ulog_claim claims[ULOG_MAX_CLAIMS]; /* a ring, oldest first */
    size_t claim_head;
    size_t nclaims;
    pthread_cond_t written; /* the oldest claim was written */
    struct ulog_origin origins[ULOG_ORIGINS];
    int norigins;
    /* The last record of an origin past the table, or from before this
     * process opened the log: of unknown origin, so of interest to all. */
    uint64_t other_lsn;
    struct ulog_exclusion exclusions[ULOG_ORIGINS];
    uint64_t synced_lsn;
    uint64_t syncing_lsn;  /* covered by an fdatasync in progress */
    uint64_t wait_lsn;     /* a thread blocks in ulog_wait_durable() */
    uint64_t last_sync_ms; /* when the last fdatasync finished */
    uint64_t synced_no;    /* the segment the last fdatasync covered ... */
    uint64_t synced_off;   /* ... up to this offset (ULOG_DROP_BEHIND) */
    uint64_t dropped_off;  /* ... and its pages dropped up to here */
    int sync_fd;           /* descriptor an fdatasync is using, or -1:
                              one is in flight (U14) */
    int retired_fd;        /* rotated out while in use: close after it */
    _Atomic uint64_t durable_pub; /* _durable_locked(), readable lock-free */
    struct ulog_peer peer; /* "peer": its state (ulog_peer.h, U10-U12) */
    uint64_t checkpoint_lsn;
    uint32_t checkpoint_db_salt;
    bool segment_done;     /* a segment ended since the last checkpoint */
    uint64_t bytes_at_checkpoint; /* total appended when it was taken */
    uint64_t db_at_checkpoint;    /* database size when it was taken */
    uint64_t total_appended;
    uint64_t inflight[ULOG_MAX_SLOTS]; /* first lsn not yet applied, or 0 */
    int nslots;
    struct watcher watchers[ULOG_MAX_WATCHERS];
    int nwatchers;
    _Atomic bool failed; /* read without the lock by ulog_failed() */
    bool stopping;
    bool threads;
    pthread_t sync_thread;
    pthread_t cp_thread;
    uint64_t appends;
    uint64_t records;
    uint64_t syncs;
    uint64_t sync_us;
    uint64_t checkpoints;
    uint64_t dirty_checkpoints; /* of them, started by dirty bytes */
    uint64_t write_backs;       /* db_write_back() calls */
    uint64_t purged;
};

/* U14: under "always", once the threads run, the thread that needs a
 * sync and finds none in flight issues it itself. The caller holds
 * u->lock. */
static inline bool
ulog_leads_syncs_locked(const struct ulog *u)
{
    return u->o.fsync == ULOG_FSYNC_ALWAYS && u->threads && !u->stopping;
}

/* U14: an fdatasync of the log is in flight. The caller holds u->lock. */
static inline bool
ulog_sync_busy_locked(const struct ulog *u)
{
    return u->sync_fd >= 0;
}

/* U13: the newest claim in flight, or NULL. The caller holds u->lock. */
static inline const struct ulog_claim *
ulog_newest_claim_locked(const struct ulog *u)
{
    return u->nclaims == 0
               ? NULL
               : &u->claims[(u->claim_head + u->nclaims - 1) % ULOG_MAX_CLAIMS];
}

/* U13: where the next append's bytes go: past every claim, written or
 * not. The caller holds u->lock. */
static inline uint64_t
ulog_claimed_end_locked(const struct ulog *u)
{
    const struct ulog_claim *c = ulog_newest_claim_locked(u);
    return c != NULL ? c->off + c->len : u->segs[u->nsegs - 1].size;
}

/* Writes the path of segment `no` in `dir` to `out` (`len` bytes). */
void ulog_seg_path(const char *dir, uint64_t no, char *out, size_t len);

/*
 * Lists the segment files of `dir` in order into a malloc'd array `*out`
 * (the caller frees it) of `*n` entries, numbers only. Returns 0, or -1
 * with a message in `err`.
 */
int ulog_scan_dir(const char *dir, struct segment **out, size_t *n,
                  char *err, size_t errlen);

/* Fills the ULOG_SEGMENT_HEADER bytes of `h` for segment `s` of server
 * `sid` (magic, version, numbers, CRC32C). */
void ulog_seg_encode_header(uint8_t h[ULOG_SEGMENT_HEADER], uint32_t sid,
                            const struct segment *s);

/* Reads exactly `len` bytes at `off` (pread, EINTR retried). Returns 0,
 * or -1 on an error or end of file. */
int ulog_read_full(int fd, void *buf, size_t len, uint64_t off);

/* Writes exactly `len` bytes at `off` (pwrite, EINTR retried). Returns 0,
 * or -1 with errno set. */
int ulog_write_full(int fd, const void *buf, size_t len, uint64_t off);

/* The sync thread's body (ulog_sync.c); `arg` is the ulog. */
void *ulog_sync_main(void *arg);

/* The checkpoint thread's body (ulog_checkpoint.c); `arg` is the ulog. */
void *ulog_checkpoint_main(void *arg);

/* Reads segment `s`'s header and size. Returns 0, or -1 if it is bad. */
int ulog_load_segment(const char *dir, struct segment *s);

/* The highest durable lsn. The caller holds u->lock. */
uint64_t ulog_durable_locked(struct ulog *u);

/*
 * "peer": recomputes the released lsn from the peer's report and the
 * local sync (U10, U11, ulog_peer_refresh()); returns true if it
 * advanced. The caller holds u->lock and, if it advanced, publishes and
 * notifies (ulog_sync.c).
 */
bool ulog_peer_refresh_locked(struct ulog *u);

/*
 * Publishes the durable lsn for lock-free readers and, if it moved, wakes
 * the readers limited to durable records that skip an origin, where a
 * record of another origin may have become durable. Holds u->lock.
 */
void ulog_publish_locked(struct ulog *u);

/* The last record of any origin but `skip_sid` (which must not be 0), or
 * an lsn at or after it. Holds u->lock. */
uint64_t ulog_others_end_locked(const struct ulog *u, uint32_t skip_sid);

/*
 * Calls the watchers whose lsn became durable (all of them with `all`).
 * The caller holds u->lock, which is released around the calls.
 */
void ulog_notify_locked(struct ulog *u, bool all);

#endif
