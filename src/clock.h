/*
 * clock: the server's write timestamps.
 *
 * Every change gets a timestamp in microseconds since the epoch. On one
 * server the timestamps strictly increase, even when the wall clock steps
 * back: a new stamp is max(wall clock, last stamp + 1). Stamps seen on
 * changes that arrive from elsewhere (a replication peer, a restart that
 * finds newer records) are folded in with clock_observe(), so a local write
 * made after seeing a change always sorts after it. That is what lets
 * "(timestamp, server id), higher wins" order writes consistently.
 *
 * Thread-safety: all functions are lock-free and callable from any thread.
 */
#ifndef KURA_CLOCK_H
#define KURA_CLOCK_H

#include <stdatomic.h>
#include <stdint.h>

struct clock {
    _Atomic uint64_t last_us; /* highest stamp handed out or observed */
};

/* Initialises `c` so that every future stamp is greater than `floor_us`. */
void clock_init(struct clock *c, uint64_t floor_us);

/*
 * Returns a new stamp: greater than every stamp previously returned or
 * observed, and not less than the wall clock.
 */
uint64_t clock_next(struct clock *c);

/* Raises the clock so that future stamps are greater than `ts_us`. */
void clock_observe(struct clock *c, uint64_t ts_us);

/* Returns the highest stamp handed out or observed so far. */
uint64_t clock_last(const struct clock *c);

#endif
