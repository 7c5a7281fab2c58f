/*
 * sweeper: removes expired and flushed records in the background.
 *
 * Readers already hide and lazily remove an expired record they touch; the
 * sweeper reclaims the ones nobody reads again (abandoned sessions). It
 * walks the database in small slices, pausing between them, so a request
 * never waits on it: each step takes Tokyo Cabinet's method lock for about
 * a microsecond, and a removal tries the key's stripe lock without waiting
 * (txn_expire()). It also settles a delayed flush_all whose deadline passed.
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

struct sweeper {
    struct txn_engine *eng;
    struct logger *log;
    unsigned slice_keys;   /* records examined per slice */
    unsigned pause_ms;     /* pause between slices */
    pthread_t thread;
    bool started;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool stopping;
    struct txn_batch batch; /* used only for its read buffer and T4 rules */
    _Atomic uint64_t examined;
    _Atomic uint64_t reclaimed;
    _Atomic uint64_t cycles;  /* complete passes over the database */
};

/*
 * Prepares the sweeper. `scratch_cap` is the largest record it reads
 * without a heap copy. Returns 0 or -1 (out of memory).
 */
int sweeper_init(struct sweeper *sw, struct txn_engine *eng,
                 struct logger *log, unsigned slice_keys, unsigned pause_ms,
                 size_t scratch_cap);

/* Starts the thread. Returns 0 or -1. */
int sweeper_start(struct sweeper *sw);

/* Stops and joins the thread, then frees the sweeper. */
void sweeper_stop(struct sweeper *sw);

/*
 * Examines up to `max_keys` records and removes the expired or flushed
 * ones. Returns the number examined; 0 means a full pass just ended and
 * the next call starts again from the first record. (Exposed so tests can
 * drive a sweep without the thread.)
 */
unsigned sweeper_slice(struct sweeper *sw, unsigned max_keys);

#endif
