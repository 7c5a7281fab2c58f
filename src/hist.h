/*
 * hist: a log-linear latency histogram (about 3% resolution).
 *
 * Values are bucketed by their power of two and 32 steps within it, so
 * percentiles are accurate to ~3% across the whole range with a fixed
 * 16 KiB of counters and no allocation. Not thread-safe: the owner
 * serialises updates and reads.
 */
#ifndef KURA_HIST_H
#define KURA_HIST_H

#include <stdint.h>

#define HIST_SUB 32
#define HIST_BUCKETS (64 * HIST_SUB)

struct hist {
    uint64_t counts[HIST_BUCKETS];
    uint64_t n;
    uint64_t max;
};

/* Empties `h`. */
void hist_reset(struct hist *h);

/* Records one value. */
void hist_add(struct hist *h, uint64_t v);

/*
 * The value at or below which `pct` (0-100) percent of the samples fall:
 * the lower bound of that sample's bucket, so within about 3% below the
 * exact value, never above it; pct 0 gives the smallest sample's bucket.
 * Returns 0 if `h` is empty.
 */
uint64_t hist_percentile(const struct hist *h, double pct);

#endif
