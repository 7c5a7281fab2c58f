/*
 * hist: log-linear histogram (see hist.h).
 */
#include "hist.h"

#include <math.h>
#include <string.h>

static int
_bucket(uint64_t v)
{
    if (v < HIST_SUB) {
        return (int)v;
    }
    int msb = 63 - __builtin_clzll(v);
    int shift = msb - 5; /* log2(HIST_SUB) */
    int sub = (int)((v >> shift) & (HIST_SUB - 1));
    int b = (shift + 1) * HIST_SUB + sub;
    return b < HIST_BUCKETS ? b : HIST_BUCKETS - 1;
}

static uint64_t
_bucket_value(int b)
{
    if (b < HIST_SUB) {
        return (uint64_t)b;
    }
    int shift = b / HIST_SUB - 1;
    uint64_t sub = (uint64_t)(b % HIST_SUB);
    return ((uint64_t)HIST_SUB + sub) << shift;
}

void
hist_reset(struct hist *h)
{
    memset(h, 0, sizeof(*h));
}

void
hist_add(struct hist *h, uint64_t v)
{
    h->counts[_bucket(v)]++;
    h->n++;
    if (v > h->max) {
        h->max = v;
    }
}

uint64_t
hist_percentile(const struct hist *h, double pct)
{
    uint64_t target = (uint64_t)ceil((double)h->n * pct / 100.0);
    uint64_t seen = 0;
    if (h->n == 0) {
        return 0;
    }
    if (target == 0) { /* pct 0: the smallest sample's bucket */
        target = 1;
    }
    for (int b = 0; b < HIST_BUCKETS; b++) {
        seen += h->counts[b];
        if (seen >= target) {
            uint64_t v = _bucket_value(b);
            return v < h->max ? v : h->max;
        }
    }
    return h->max;
}
