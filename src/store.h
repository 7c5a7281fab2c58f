/*
 * store: the Tokyo Cabinet database that holds every record.
 *
 * A thin wrapper that opens the database named by a dbspec (a hash file, or
 * an in-memory hash for "*"), moves raw record bytes in and out, and maps
 * Tokyo Cabinet's error codes onto store_status values. It knows nothing of
 * the record envelope, the protocol or locking policy: callers (txn.c)
 * serialise writers per key; Tokyo Cabinet's own locks make concurrent
 * calls safe (tchdbsetmutex()), and reads of different keys run in
 * parallel under its shared method lock.
 *
 * Durability: a successful store_put()/store_out() has reached the kernel
 * (Tokyo Cabinet writes through its shared mapping or pwrite(); it buffers
 * nothing in the process as long as tchdbputasync() is never used), so it
 * survives the death of the process. Surviving power loss needs more, and
 * this is the design:
 *
 * The file is written in place and synced only at checkpoints. Between
 * two, the kernel writes dirty pages back whenever it likes and in any
 * order, so after a power cut the file is the last checkpoint's state plus
 * any subset of later pages, some of them torn at 512-byte boundaries.
 * Nothing here can stop that; instead every later change is recoverable
 * from the update log, and the file is proven sound, or rebuilt, before
 * Tokyo Cabinet sees it. Invariants (tests cite these numbers; the
 * power-cut harness, tests/powercut/powercut.py, proves what they add up
 * to: PC1 kurad restarts by itself, PC2 no acknowledged write is lost or
 * stale under -fsync always, PC3 nothing is half-applied):
 *
 *   D1. Under -fsync always the file is changed only by changes whose log
 *       records are already durable (txn.h applies a group of changes only
 *       after the log's fdatasync covers it). Every byte that differs from
 *       the last checkpoint therefore belongs to a change the log holds
 *       after the checkpoint, including changes never acknowledged.
 *   D2. The file's marks tell a clean stop from any other: a new file
 *       appears whole (made under a temporary name, synced, renamed, the
 *       directory synced); the clean mark (tcfile.h, in Tokyo Cabinet's
 *       opaque header) is cleared durably before the first change, and
 *       set durably only after a close that synced everything.
 *   D3. Every stored record is sealed (record.h) with the file's salt, so
 *       a torn record is told from an intact one.
 *   D4. After an unclean stop the file is checked in full before it is
 *       opened (dbcheck.h, DBCHECK_DEEP); a file that fails is rebuilt
 *       from its intact records (salvage.h) and replaced atomically. A
 *       damaged file after a clean stop is refused: that is a failing
 *       disk or a hand edit, not a crash.
 *   D5. Redo after an unclean stop replays every logged change after the
 *       checkpoint, in log order, whatever the file holds (recovery.h):
 *       with D1 that restores every change the file may have lost or
 *       half-written.
 *   D6. Salvage trusts only intact records; of several copies of a key it
 *       keeps the newest by (stamp, server id).
 *   D7. Tokyo Cabinet's free block list, written at close, is ignored
 *       after an unclean stop (the open flag is set before it opens the
 *       file), so a half-written list can never hand out live space.
 *   D8. A file records the machine's boot it was opened for writing in
 *       (the kernel's boot id), durably before its first change, and
 *       forgets it after any write the disk refused. After an unclean
 *       stop in that same boot the writer died but the machine did not:
 *       the page cache holds every write it made, in order, and only the
 *       calls in flight can be half done, so the deep check skips the
 *       walk of the trees' order that only a mix of old and new pages
 *       needs (dbcheck.h, DBCHECK_SAME_BOOT) and reads the file once.
 *
 * Under -fsync peer a change made while no peer is linked (the
 * fallback, ulog.h U11; txn.h T10) is applied only once synced here, as
 * D1 asks; while one is linked, a change is applied once the peer has it
 * in its log, which may be before it is synced here. For those, and
 * under -fsync N, -fsync never, -uas and -ulog off, D1 does not hold: a
 * record changed shortly before a power cut can be lost along with its
 * earlier value (README, "What survives what"; PC6). D2-D8 still hold,
 * so kurad always starts by itself (PC1).
 *
 * Tokyo Cabinet's descriptor is told that reads are random and its
 * mapping past the bucket array likewise (no read-ahead: one record at a
 * time is what it reads), and the bucket array is asked for at once.
 * How the file's pages are used (those hints, locking the bucket array,
 * write-back, the layout) is in store_pages.c.
 *
 * store.c also defines sched_yield() as a no-op for the whole process, to
 * silence the micro-yields compiled into Debian's Tokyo Cabinet (see there).
 *
 * Thread-safety: every function may be called from any thread, except
 * store_open() and store_close(), and the iterator, which belongs to a
 * single thread (the expiry sweeper).
 */
#ifndef KURA_STORE_H
#define KURA_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dbcheck.h"
#include "dbspec.h"
#include "log.h"
#include "salvage.h"

enum store_status {
    STORE_OK = 0,
    STORE_NOTFOUND, /* no record for the key / iteration finished */
    STORE_EIO,      /* Tokyo Cabinet reported an error; see store_errmsg() */
    STORE_ENOSPC,   /* store_reserve(): the disk is full */
};

struct store;

/* A record read from the store. */
struct store_value {
    const uint8_t *data; /* record bytes (envelope + value) */
    size_t len;
    void *owned; /* heap copy made by Tokyo Cabinet, or NULL */
};

/* What store_open() found and did, for the log. */
struct store_open_report {
    bool created;     /* a new file was made */
    bool unclean;     /* the last stop was not clean (D2) */
    bool same_boot;   /* ...and the machine has not restarted since (D8) */
    bool salvaged;    /* the file was rebuilt (D4) */
    bool needs_area;  /* internal: a file from before seals */
    struct dbcheck_report check;
    uint64_t check_ms;
    struct salvage_report salvage;
    uint64_t salvage_ms;
};

/*
 * What the update log can restore (its last checkpoint, ulog.h): every
 * record past `size` bytes of the file whose salt is `salt` belongs to a
 * change the log redoes. A rebuild reads the file only up to there.
 */
struct store_redo_bound {
    uint64_t size; /* 0: nothing known */
    uint32_t salt;
};

/*
 * Opens (creating if needed) the database described by `spec`, after
 * D2/D4 above: an unclean file is checked in full and rebuilt if needed.
 * `bound` (may be NULL) limits what a rebuild reads; `rep` (may be NULL)
 * says what happened. Returns the store, or NULL with a one-line reason
 * in `err` (`errlen`). The caller closes it with store_close().
 */
struct store *store_open(const struct dbspec *spec,
                         const struct store_redo_bound *bound,
                         struct store_open_report *rep, char *err,
                         size_t errlen);

/* The salt that seals this file's records; names the file's version. */
uint32_t store_salt(const struct store *s);

/*
 * Takes the database's process lock (flock on `path`.lock) without
 * waiting, as store_open() does; for tools that read or rewrite a stopped
 * database. The holder's pid is written into the lock file. Sets `*fd`
 * (the caller closes it to unlock). Returns 0, or -1 with a reason in
 * `err` (naming the holder's pid when another process holds the lock)
 * and errno set: EWOULDBLOCK when another process holds it, else why the
 * lock file could not be opened.
 */
int store_lock(const char *path, int *fd, char *err, size_t errlen);

/*
 * Closes the database after syncing it to disk and marks the stop clean
 * (D2). Returns STORE_OK or STORE_EIO (the store is freed either way).
 * NULL is ignored.
 */
enum store_status store_close(struct store *s);

/*
 * Reads the record for `key`. The bytes are copied into `scratch` (`cap`
 * bytes) when they fit; a larger record is returned in a heap copy that
 * store_value_release() frees. Returns STORE_OK, STORE_NOTFOUND or
 * STORE_EIO. On anything but STORE_OK, `*out` holds nothing to release.
 */
enum store_status store_get(struct store *s, const void *key, size_t nkey,
                            uint8_t *scratch, size_t cap,
                            struct store_value *out);

/* Frees the heap copy of `v`, if any. */
void store_value_release(struct store_value *v);

/*
 * Stores `len` record bytes (an envelope and value, record.h) under
 * `key`, replacing any previous record. Seals `rec` in place first (D3).
 */
enum store_status store_put(struct store *s, const void *key, size_t nkey,
                            uint8_t *rec, size_t len);

/* Removes the record for `key`. Returns STORE_OK or STORE_NOTFOUND/EIO. */
enum store_status store_out(struct store *s, const void *key, size_t nkey);

/* Flushes the database to stable storage (msync + fsync). */
enum store_status store_sync(struct store *s);

/* Number of records, including expired ones not yet swept. */
uint64_t store_rnum(struct store *s);

/* Size of the database file in bytes (memory in use for "*"). */
uint64_t store_fsiz(struct store *s);

/* Bucket count of a hash file (0 for "*"). */
uint64_t store_bnum(struct store *s);

/*
 * True if a hash file holds more records than it has buckets (bnum):
 * lookups then walk ever longer collision trees, and the file should be
 * rebuilt with more buckets (kura optimize, etc/tuning.md). Always false
 * for "*", whose table grows by itself.
 */
bool store_over_bnum(struct store *s);

/*
 * The mapped region used when the database name gives no #xmsiz. Tokyo
 * Cabinet's own default, 64 MiB, does not even cover the bucket array of
 * a file tuned for 13.31M records (bnum 20M: 80 MB), and every record
 * beyond the mapping costs a pread or pwrite. With 1 GiB, updates on the
 * 13.31M-record, 723 MB file ran at 144,681 ops/s (p99 1.6 ms) instead
 * of 122,974 (p99 4.0 ms) and the load took 16.3 s instead of 25.5 s
 * (tools/bench-dataset, etc/tuning.md). Only address space is reserved:
 * pages become resident as they are used, and they are the same page
 * cache the file would occupy anyway. Writes into the mapping are covered
 * by the reservations below like any other.
 */
#define STORE_DEFAULT_XMSIZ ((int64_t)1 << 30)

/*
 * Disk-full safety. Tokyo Cabinet writes new records through a shared
 * mapping of the file's first xmsiz bytes: on a full disk such a write
 * would kill the process with SIGBUS, and past the mapping a failed
 * pwrite() can leave a record half linked. So space is allocated before
 * anything is written: a writer reserves what its changes may add to the
 * file (each record plus STORE_RECORD_SLACK) before it logs them, and the
 * store keeps that much allocated past the file's end (fallocate with
 * FALLOC_FL_KEEP_SIZE, so Tokyo Cabinet's view of the file is unchanged).
 * The writer unreserves the same amount once its changes are applied.
 *
 * store_reserve() returns STORE_OK, or STORE_ENOSPC when the space cannot
 * be allocated (nothing is reserved then). On a file system without
 * fallocate (ext3) it returns STORE_OK without a guarantee;
 * store_space_guaranteed() tells which. Any thread may call both.
 */
#define STORE_RECORD_SLACK 64
enum store_status store_reserve(struct store *s, uint64_t bytes);
void store_unreserve(struct store *s, uint64_t bytes);
bool store_space_guaranteed(const struct store *s);

/*
 * What prefetch.h needs to find a key's records without calling Tokyo
 * Cabinet: its descriptor, its mapping of the header and bucket array
 * (at least `map_size` bytes), and the file's format. Valid while the
 * store is open; the bucket array changes under concurrent writers, so
 * what is read from it is a hint. Returns false for "*".
 */
struct store_layout {
    int fd;
    const uint8_t *map;
    uint64_t map_size;  /* header and bucket array, mapped */
    uint64_t bnum;
    unsigned apow;
    unsigned width;     /* bytes per stored offset: 4, or 8 with opts l */
    bool big_endian;
    uint64_t frec;      /* the first record */
};
bool store_layout(const struct store *s, struct store_layout *out);

/* The file's size as Tokyo Cabinet last set it, read without its locks
 * (a hint for readers of the layout); 0 for "*". */
uint64_t store_size_hint(const struct store *s);

/*
 * Locks the header and bucket array in memory (mlock), raising the soft
 * RLIMIT_MEMLOCK to the hard one if needed: every lookup reads a bucket,
 * and under memory pressure the page cache would otherwise push them out
 * with the records. Returns 0, or -1 with errno (EPERM, ENOMEM: the
 * limit is too low; the caller decides what to say).
 * store_bucket_bytes() is the size it locks. Nothing to do for "*".
 */
int store_pin_buckets(struct store *s);
uint64_t store_bucket_bytes(const struct store *s);

/* Path of the database, or "*". */
const char *store_path(const struct store *s);

/*
 * The database has one iterator. Whoever walks it (the sweeper, a full
 * resynchronisation) holds it with these for the whole walk.
 */
void store_iter_acquire(struct store *s);
void store_iter_release(struct store *s);

/* As store_iter_acquire(), but returns false at once if it is held. */
bool store_iter_try_acquire(struct store *s);

/*
 * Flushes the database file's data to disk without taking Tokyo Cabinet's
 * locks (fdatasync on its descriptor), so writers are not stalled. Used by
 * checkpoints, which redo the log from a point already applied. The dirty
 * pages are first written out a slice at a time, each finished before the
 * next starts, so the disk queue never holds a checkpoint's worth of
 * database pages in front of the update log's fdatasync, which a client's
 * reply waits on. A slice holds about 1 MiB of dirty pages: it is 1 MiB
 * of the file, or wider when `dirty` (bytes of dirty page cache, 0 if
 * unknown) says they are spread thin. Returns 0 or -1 with errno set.
 */
int store_sync_data(struct store *s, uint64_t dirty);

/*
 * Writes the dirty pages of the records back (the file past the bucket
 * array), slice by slice as store_sync_data() does, and waits for them,
 * but syncs nothing: it only turns dirty page cache back into page cache
 * that reclaim can drop at once (memlimit.h). The bucket array is left
 * alone: every update rewrites its bucket entry, so written back it would
 * be dirty again within seconds, and it is locked in memory anyway.
 * Returns 0, or -1 with errno set.
 */
int store_write_back(struct store *s, uint64_t dirty);

/*
 * Restarts the iterator at the first record. Iteration visits records in
 * file order and tolerates concurrent writers: a record that moves may be
 * missed or seen twice, which a sweeper can live with. Each step briefly
 * takes Tokyo Cabinet's method lock exclusively, so callers pace it.
 */
enum store_status store_iter_init(struct store *s);

/*
 * Copies the next key into `key` (`cap` bytes) and sets `*nkey`. Keys
 * longer than `cap` are skipped. Returns STORE_OK, or STORE_NOTFOUND at
 * the end.
 */
enum store_status store_iter_next(struct store *s, char *key, size_t cap,
                                  size_t *nkey);

/*
 * Damage found while serving: a call into Tokyo Cabinet that meets a bad
 * page (a garbage size, an unreadable mapped page, a bad header) fails
 * alone with STORE_EIO instead of ending the process; the damage is
 * logged with its offset (to `log`, set once before serving), counted,
 * and the file is then not marked clean at close, so the next start
 * checks it in full and rebuilds it (D4). store_damage() returns how many
 * requests met damage and where the last one found was (a sighting
 * that cannot say where, as an iteration's, keeps it). The abandoned call
 * leaves behind what Tokyo Cabinet had allocated in it (tens of bytes per
 * damaged request), the price of not ending the process.
 */
void store_set_logger(struct store *s, struct logger *log);
uint64_t store_damage(struct store *s, uint64_t *last_offset);

/* Message for the last error seen by the calling thread. */
const char *store_errmsg(struct store *s);

#endif
