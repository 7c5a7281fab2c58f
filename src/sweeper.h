/*
 * sweeper: retires expired records and removes old tombstones in the
 * background.
 *
 * Readers already hide, and retire, an expired record they touch; the
 * sweeper finds the ones nobody reads again (abandoned sessions). It walks
 * the database in small slices, pausing between them, so a request never
 * waits on it: each step takes Tokyo Cabinet's method lock for about a
 * microsecond, and it only ever tries a key's stripe lock (txn_expire()).
 *
 * With an update log, retiring turns a record into a tombstone with the
 * same stamp (T6), and the sweeper removes a tombstone only when no peer
 * can still deliver an older write for its key:
 *   - every peer that pulls from this server has acknowledged the log
 *     position where the tombstone was made (its cas holds that lsn), and
 *   - this server has applied its own master's log past the tombstone's
 *     stamp plus SWEEPER_TOMBSTONE_SLACK_US (a write is logged within that
 *     long of being stamped, so nothing older can follow).
 * It also settles a delayed flush_all whose deadline passed.
 *
 * Thread-safety: one sweeper thread; start/stop from the main thread.
 */
#ifndef KURA_SWEEPER_H
#define KURA_SWEEPER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "log.h"
#include "stats.h"
#include "txn.h"

#define SWEEPER_TOMBSTONE_SLACK_US (10ULL * 1000000u)

/*
 * Reports, for tombstone removal, the lowest log position every pulling
 * peer acknowledged and this server's position in its master's log
 * (UINT64_MAX for "no such peer").
 */
typedef void (*sweeper_limits_fn)(void *arg, uint64_t *acked,
                                  uint64_t *source);

struct sweeper {
    struct txn_engine *eng;
    struct logger *log;
    unsigned slice_keys;   /* records examined per slice */
    unsigned pause_ms;     /* pause between slices */
    sweeper_limits_fn limits;
    void *limits_arg;
    pthread_t thread;
    bool started;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool stopping;
    struct txn_batch batch; /* used only for its read buffer and T4 rules */
    _Atomic uint64_t examined;
    _Atomic uint64_t reclaimed;  /* expired records retired */
    _Atomic uint64_t tombstones_dropped;
    _Atomic uint64_t cycles;  /* complete passes over the database */
    bool bnum_warned;         /* the bnum warning was logged */
};

/*
 * Prepares the sweeper. `scratch_cap` is the largest record it reads
 * without a heap copy; `limits` may be NULL (no peers). Returns 0 or -1.
 */
int sweeper_init(struct sweeper *sw, struct txn_engine *eng,
                 struct logger *log, unsigned slice_keys, unsigned pause_ms,
                 size_t scratch_cap, sweeper_limits_fn limits,
                 void *limits_arg);

/* Starts the thread. Returns 0 or -1. */
int sweeper_start(struct sweeper *sw);

/* Stops and joins the thread, then frees the sweeper. */
void sweeper_stop(struct sweeper *sw);

/*
 * Examines up to `max_keys` records, retiring expired or flushed ones and
 * removing expendable tombstones. Returns the number examined; 0 means a
 * full pass just ended and the next call starts again from the first
 * record. (Exposed so tests can drive a sweep without the thread.)
 */
unsigned sweeper_slice(struct sweeper *sw, unsigned max_keys);

#endif
