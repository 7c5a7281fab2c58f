/*
 * stats: counter names and aggregation (see stats.h).
 */
#include "stats.h"

static const char *const names[STATS_COUNT] = {
#define STATS_NAME(id, name) [STATS_##id] = name,
    STATS_COUNTERS(STATS_NAME)
#undef STATS_NAME
};

void
stats_sum(uint64_t dst[STATS_COUNT], const struct stats_counters *src)
{
    for (int i = 0; i < STATS_COUNT; i++) {
        dst[i] += atomic_load_explicit(&src->v[i], memory_order_relaxed);
    }
}

const char *
stats_name(enum stats_counter id)
{
    return names[id];
}
