/*
 * stats: per-thread command counters, summed on demand.
 *
 * Each worker owns one struct stats_counters and is its only writer, so an
 * increment is a relaxed load and store with no locked instruction on the
 * request path. `stats` sums every worker's counters; a sum taken while
 * workers run is a consistent enough snapshot for monitoring, as in
 * memcached. Names follow memcached's `stats` output. `stats reset` does
 * not write to the counters (that would race with their owners); the
 * reporter keeps a baseline and subtracts it. A leaf: the server-wide
 * figures that `stats` adds are gathered in stats_snapshot.h.
 */
#ifndef KURA_STATS_H
#define KURA_STATS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/*
 * In memcached's order. process_stats.c prints CMD_GET..BYTES_WRITTEN as
 * one run, then the others where memcached puts them.
 */
#define STATS_COUNTERS(X)   \
    X(CMD_GET, "cmd_get")    \
    X(CMD_SET, "cmd_set")    \
    X(CMD_FLUSH, "cmd_flush") \
    X(CMD_TOUCH, "cmd_touch") \
    X(CMD_META, "cmd_meta") \
    X(GET_HITS, "get_hits")  \
    X(GET_MISSES, "get_misses") \
    X(GET_EXPIRED, "get_expired") \
    X(GET_FLUSHED, "get_flushed") \
    X(DELETE_MISSES, "delete_misses") \
    X(DELETE_HITS, "delete_hits") \
    X(INCR_MISSES, "incr_misses") \
    X(INCR_HITS, "incr_hits") \
    X(DECR_MISSES, "decr_misses") \
    X(DECR_HITS, "decr_hits") \
    X(CAS_MISSES, "cas_misses") \
    X(CAS_HITS, "cas_hits") \
    X(CAS_BADVAL, "cas_badval") \
    X(TOUCH_HITS, "touch_hits") \
    X(TOUCH_MISSES, "touch_misses") \
    X(STORE_TOO_LARGE, "store_too_large") \
    X(STORE_NO_MEMORY, "store_no_memory") \
    X(AUTH_CMDS, "auth_cmds") \
    X(AUTH_ERRORS, "auth_errors") \
    X(BYTES_READ, "bytes_read") \
    X(BYTES_WRITTEN, "bytes_written") \
    X(CONN_YIELDS, "conn_yields") \
    X(IDLE_KICKS, "idle_kicks") \
    X(TOTAL_ITEMS, "total_items") \
    X(RECLAIMED, "reclaimed") \
    X(CMD_DENIED, "kura_cmd_denied") \
    X(WRITE_ERRORS, "kura_write_errors")

enum stats_counter {
#define STATS_ENUM(id, name) STATS_##id,
    STATS_COUNTERS(STATS_ENUM)
#undef STATS_ENUM
    STATS_COUNT
};

struct stats_counters {
    _Atomic uint64_t v[STATS_COUNT];
};

/* Adds `n` to a counter; only the owning thread may call this. */
static inline void
stats_add(struct stats_counters *c, enum stats_counter id, uint64_t n)
{
    uint64_t v = atomic_load_explicit(&c->v[id], memory_order_relaxed);
    atomic_store_explicit(&c->v[id], v + n, memory_order_relaxed);
}

static inline void
stats_incr(struct stats_counters *c, enum stats_counter id)
{
    stats_add(c, id, 1);
}

/* Reads a counter from any thread. */
static inline uint64_t
stats_get(const struct stats_counters *c, enum stats_counter id)
{
    return atomic_load_explicit(&c->v[id], memory_order_relaxed);
}

/* Adds every counter of `src` into `dst` (a thread-private snapshot). */
void stats_sum(uint64_t dst[STATS_COUNT], const struct stats_counters *src);

/* memcached's name for a counter. */
const char *stats_name(enum stats_counter id);

#endif
