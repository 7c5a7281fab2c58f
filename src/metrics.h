/*
 * metrics: the figures of `stats`, memcached's and kurad's own (kura_*),
 * in Prometheus' text exposition format, version 0.0.4.
 *
 * Pure: no I/O, no state, no locks; any thread may call it. `kura stats
 * --prometheus` feeds it the STAT lines it read from kurad, and kurad's
 * HTTP endpoint GET /-/metrics feeds it the same lines, so both serve the
 * same text.
 *
 * What it owns is the table of figures: for each stats name, its type
 * (counter or gauge), the metric's name and its help text. The rules:
 *
 * - memcached's figures (curr_items, get_hits, ...) take the names and
 *   labels the Prometheus memcached exporter gives them
 *   (memcached_current_items, memcached_commands_total{command="get",
 *   status="hit"}, ...), so what is written for that exporter works on
 *   kurad's endpoint too; as the exporter does, the "set" command counts
 *   cmd_set less the cas requests memcached includes in it. The few
 *   figures the exporter lacks are memcached_<name>[_total].
 * - kurad's counters are named <name>_total, its gauges keep their name.
 * - Microsecond figures (*_us) are given in seconds (*_seconds); the
 *   conversion is exact (integer arithmetic).
 * - A per-peer figure, kura_repl_peer_<sid>_<field>, becomes one metric per
 *   field with the sid as a label: kura_repl_peer_lag_seconds{sid="2"}.
 * - kura_version becomes kura_version_info{version="..."} 1, version
 *   memcached_version{version="..."} 1.
 * - Values that are not decimal numbers (kura_db_path) and figures that
 *   are not measurements (pid, pointer_size) are left out, as are names
 *   outside kura_* that the table does not know.
 * - A kura_* figure that is not in the table (one added to `stats` since)
 *   is written as "untyped" under its own name rather than dropped; the
 *   tests keep the table complete.
 *
 * Each metric is written once, with its # HELP and # TYPE lines before its
 * samples, in the table's order whatever the order of the input.
 */
#ifndef KURA_METRICS_H
#define KURA_METRICS_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

/* One figure as `stats` gives it: not NUL-terminated, not owned. */
struct metrics_pair {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
};

/* The most output metrics_format() makes (the buffer's growth limit). */
#define METRICS_OUT_MAX (4u << 20)

/* The pseudo-figure a collector adds for whether it read the stats. */
#define METRICS_UP "kura_up"

/*
 * Appends the exposition text for `pairs` (`n` of them) to `out`. Pairs
 * that are left out (see above) cost nothing. Returns false if `out`
 * cannot grow (memory, or METRICS_OUT_MAX); what was appended is then
 * incomplete and should be discarded.
 */
bool metrics_format(const struct metrics_pair *pairs, size_t n,
                    struct buf *out);

/*
 * Reads the "STAT <name> <value>\r\n" lines of a text `stats` reply (`len`
 * bytes of `text`, "\n" line ends accepted too) into `pairs`, pointing into
 * `text`, up to `max` of them. Other lines (END, a value with spaces) are
 * skipped. Returns the number of pairs found (which may exceed `max`: only
 * the first `max` are stored).
 */
size_t metrics_parse_stats(const char *text, size_t len,
                           struct metrics_pair *pairs, size_t max);

/*
 * Whether `name` is a counter, a gauge or unknown to the table; for tests
 * and documentation. A per-peer name is given in its stats form
 * (kura_repl_peer_2_sent).
 */
enum metrics_type {
    METRICS_UNKNOWN = 0,
    METRICS_GAUGE,
    METRICS_COUNTER,
    METRICS_INFO,
    METRICS_SKIPPED, /* known, deliberately not exported */
};

enum metrics_type metrics_type_of(const char *name);

/*
 * The table, for tests: entry `i`'s stats name (with "<sid>" standing for
 * the sid of a per-peer figure), metric name, type and help. Returns false
 * past the last entry.
 */
bool metrics_entry(size_t i, const char **stats_name, const char **metric,
                   enum metrics_type *type, const char **help);

#endif
