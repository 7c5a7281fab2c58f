/*
 * stats_watch: one `kura stats --watch` line from two `stats` replies (see
 * stats_watch.h). Kept apart from the command so that the arithmetic of
 * rates, restarts and absent figures is tested without a server.
 */
#include "stats_watch.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "metrics.h"
#include "util.h"

/* More than kurad's stats reply holds, with peers. */
#define WATCH_PAIRS_MAX 1024

/* Where one figure of the reply goes, and whether it was seen. */
struct watch_field {
    const char *name;
    uint64_t *value;
    bool *seen; /* NULL: optional, absent reads as 0 */
};

bool
stats_watch_parse(const char *reply, size_t len, uint64_t at_us,
                  struct stats_watch_sample *out)
{
    struct metrics_pair pairs[WATCH_PAIRS_MAX];
    bool seen_get = false, seen_set = false;
    bool seen_conns = false, seen_syncs = false;
    bool seen_sync_us = false, seen_records = false, seen_ckpts = false;
    bool seen_connected = false, seen_lag = false;
    uint64_t connected = 0;

    memset(out, 0, sizeof(*out));
    out->at_us = at_us;
    const struct watch_field fields[] = {
        {"cmd_get", &out->cmd_get, &seen_get},
        {"get_hits", &out->get_hits, NULL},
        {"cmd_set", &out->cmd_set, &seen_set},
        {"curr_connections", &out->conns, &seen_conns},
        {"curr_items", &out->items, NULL},
        {"kura_ulog_syncs", &out->syncs, &seen_syncs},
        {"kura_ulog_sync_us", &out->sync_us, &seen_sync_us},
        {"kura_ulog_records", &out->records, &seen_records},
        {"kura_ulog_checkpoints", &out->checkpoints, &seen_ckpts},
        {"kura_repl_master_connected", &connected, &seen_connected},
        {"kura_repl_master_lag_records", &out->lag_records, &seen_lag},
    };
    size_t n = metrics_parse_stats(reply, len, pairs, WATCH_PAIRS_MAX);
    if (n > WATCH_PAIRS_MAX) {
        n = WATCH_PAIRS_MAX;
    }
    for (size_t i = 0; i < n; i++) {
        for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++) {
            if (pairs[i].name_len == strlen(fields[f].name) &&
                memcmp(pairs[i].name, fields[f].name, pairs[i].name_len) ==
                    0 &&
                util_parse_uint(pairs[i].value, pairs[i].value_len,
                                UINT64_MAX, fields[f].value)) {
                if (fields[f].seen != NULL) {
                    *fields[f].seen = true;
                }
                break;
            }
        }
    }
    out->has_log = seen_syncs && seen_sync_us && seen_records && seen_ckpts;
    out->has_master = seen_connected && seen_lag;
    out->master_connected = connected != 0;
    return seen_get && seen_set && seen_conns;
}

size_t
stats_watch_header(char *out, size_t cap)
{
    int n = snprintf(out, cap, "%-8s %9s %9s %5s %6s %8s %8s %8s %5s %10s "
                     "%8s\n", "time", "sets/s", "gets/s", "hit%", "conns",
                     "syncs/s", "sync_us", "rec/sync", "ckpts", "items",
                     "lag");
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

/* cur - prev of a counter, or cur when it went backwards (a restart). */
static uint64_t
_delta(uint64_t prev, uint64_t cur)
{
    return cur >= prev ? cur - prev : cur;
}

/* "-" or the quotient, as a right-aligned field of `width`. */
static void
_ratio(char *field, size_t cap, uint64_t num, uint64_t den, int width,
       int decimals)
{
    if (den == 0) {
        snprintf(field, cap, "%*s", width, "-");
    } else {
        snprintf(field, cap, "%*.*f", width, decimals,
                 (double)num / (double)den);
    }
}

size_t
stats_watch_format(const struct stats_watch_sample *prev,
                   const struct stats_watch_sample *cur, const char *clock,
                   char *out, size_t cap)
{
    char hit[16], syncs[16], sync_us[16], per_sync[16], ckpts[16], lag[24];
    double secs = cur->at_us > prev->at_us
                      ? (double)(cur->at_us - prev->at_us) / 1e6 : 0;
    uint64_t gets = _delta(prev->cmd_get, cur->cmd_get);
    uint64_t sets = _delta(prev->cmd_set, cur->cmd_set);
    uint64_t hits = _delta(prev->get_hits, cur->get_hits);

    _ratio(hit, sizeof(hit), 100 * hits, gets, 5, 1);
    if (cur->has_log) {
        uint64_t n = _delta(prev->syncs, cur->syncs);
        if (secs > 0) {
            snprintf(syncs, sizeof(syncs), "%8.0f", (double)n / secs);
        } else {
            snprintf(syncs, sizeof(syncs), "%8s", "-");
        }
        _ratio(sync_us, sizeof(sync_us), _delta(prev->sync_us, cur->sync_us),
               n, 8, 0);
        _ratio(per_sync, sizeof(per_sync),
               _delta(prev->records, cur->records), n, 8, 1);
        snprintf(ckpts, sizeof(ckpts), "%5" PRIu64,
                 _delta(prev->checkpoints, cur->checkpoints));
    } else {
        snprintf(syncs, sizeof(syncs), "%8s", "-");
        snprintf(sync_us, sizeof(sync_us), "%8s", "-");
        snprintf(per_sync, sizeof(per_sync), "%8s", "-");
        snprintf(ckpts, sizeof(ckpts), "%5s", "-");
    }
    if (!cur->has_master) {
        snprintf(lag, sizeof(lag), "%8s", "-");
    } else if (!cur->master_connected) {
        snprintf(lag, sizeof(lag), "%8s", "down");
    } else {
        snprintf(lag, sizeof(lag), "%8" PRIu64, cur->lag_records);
    }
    int n = snprintf(out, cap, "%-8s %9.0f %9.0f %s %6" PRIu64 " %s %s %s %s "
                     "%10" PRIu64 " %s\n", clock,
                     secs > 0 ? (double)sets / secs : 0,
                     secs > 0 ? (double)gets / secs : 0, hit, cur->conns,
                     syncs, sync_us, per_sync, ckpts, cur->items, lag);
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}
