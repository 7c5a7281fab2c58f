/*
 * stats_watch: the line `kura stats --watch` prints once per interval,
 * computed from two `stats` replies: request rates, the update log's
 * fdatasyncs (how many, how long, how many records each), checkpoints,
 * items and replication lag. Parsing and formatting only; no I/O.
 */
#ifndef KURA_TOOLS_STATS_WATCH_H
#define KURA_TOOLS_STATS_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The figures of one `stats` reply that a watch line is made of. */
struct stats_watch_sample {
    uint64_t at_us;        /* when the reply was read, monotonic clock */
    uint64_t cmd_get;
    uint64_t get_hits;
    uint64_t cmd_set;
    uint64_t conns;        /* curr_connections */
    uint64_t items;        /* curr_items */
    bool has_log;          /* the server runs an update log */
    uint64_t syncs;        /* kura_ulog_syncs */
    uint64_t sync_us;      /* kura_ulog_sync_us */
    uint64_t records;      /* kura_ulog_records */
    uint64_t checkpoints;  /* kura_ulog_checkpoints */
    bool has_master;       /* the server follows a master (-mhost) */
    bool master_connected;
    uint64_t lag_records;  /* kura_repl_master_lag_records */
};

/*
 * Reads the STAT lines of `reply` (`len` bytes) into `out`, stamped with
 * `at_us`. Returns false when the reply lacks cmd_get, cmd_set or
 * curr_connections (not a memcached-style stats reply); `out` is then
 * unspecified. Figures kurad does not give (no log, no master) are
 * marked absent, not zero.
 */
bool stats_watch_parse(const char *reply, size_t len, uint64_t at_us,
                       struct stats_watch_sample *out);

/*
 * Writes the column header (with its newline) into `out` (`cap` bytes).
 * Returns the length written, or 0 if it does not fit.
 */
size_t stats_watch_header(char *out, size_t cap);

/*
 * Writes the line for the interval from `prev` to `cur`, prefixed with
 * `clock` (e.g. "12:00:01"), into `out` (`cap` bytes), newline included:
 * rates per second, mean fdatasync in us and records per fdatasync over
 * the interval, checkpoints in it, and the items, connections and lag at
 * its end. Figures with nothing to divide by print as "-". A counter that
 * went backwards (the server restarted) counts from zero. Returns the
 * length written, or 0 if it does not fit.
 */
size_t stats_watch_format(const struct stats_watch_sample *prev,
                          const struct stats_watch_sample *cur,
                          const char *clock, char *out, size_t cap);

#endif
