/*
 * metrics: kura_* figures in Prometheus' text format (see metrics.h). The
 * table below is the one place that says what each figure is; keep it in
 * the order of process_stats.c and doc/monitoring.md.
 */
#include "metrics.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define PEER_PREFIX "kura_repl_peer_"
#define PEER_TEMPLATE PEER_PREFIX "<sid>_"

struct _entry {
    const char *stat;   /* stats name; "<sid>" in a per-peer one */
    const char *metric; /* Prometheus name */
    enum metrics_type type;
    bool micro;         /* microseconds in stats, seconds out */
    const char *help;
};

static const struct _entry entries[] = {
    {METRICS_UP, "kura_up", METRICS_GAUGE, false,
     "Whether the collector read kurad's stats (1) or not (0)."},
    {"kura_version", "kura_version_info", METRICS_INFO, false,
     "kurad's version, as a label."},
    {"kura_sid", "kura_sid", METRICS_GAUGE, false,
     "This server's replication id (-sid)."},
    {"kura_db_path", NULL, METRICS_SKIPPED, false, NULL},
    {"kura_db_records", "kura_db_records", METRICS_GAUGE, false,
     "Records in the database, tombstones included."},
    {"kura_db_file_size", "kura_db_file_size_bytes", METRICS_GAUGE, false,
     "Size of the database file."},
    {"kura_db_bnum", "kura_db_bnum", METRICS_GAUGE, false,
     "Hash buckets of the database file."},
    {"kura_db_over_bnum", "kura_db_over_bnum", METRICS_GAUGE, false,
     "1 once the records outgrew the buckets (run kura optimize)."},
    {"kura_db_damage_seen", "kura_db_damage_seen_total", METRICS_COUNTER,
     false, "Damaged database pages met while serving."},
    {"kura_db_damage_offset", "kura_db_damage_offset", METRICS_GAUGE, false,
     "File offset of the last damage met (0: none)."},
    {"kura_group_commits", "kura_group_commits_total", METRICS_COUNTER,
     false, "Group commits of the write path."},
    {"kura_early_commits", "kura_early_commits_total", METRICS_COUNTER,
     false, "Group commits made before the end of a worker's pass."},
    {"kura_writable", "kura_writable", METRICS_GAUGE, false,
     "1 while writes are accepted; 0 while a log failure, a full disk or "
     "-mask refuses them."},
    {"kura_flush_applied_us", "kura_flush_applied_timestamp_seconds",
     METRICS_GAUGE, true, "Time of the last flush_all in effect (0: none)."},
    {"kura_flush_pending_us", "kura_flush_pending_timestamp_seconds",
     METRICS_GAUGE, true, "Deadline of a delayed flush_all (0: none)."},
    {"kura_tombstones_dropped", "kura_tombstones_dropped_total",
     METRICS_COUNTER, false, "Delete tombstones removed once obsolete."},
    {"kura_cmd_denied", "kura_cmd_denied_total", METRICS_COUNTER, false,
     "Commands refused by -mask."},
    {"kura_write_errors", "kura_write_errors_total", METRICS_COUNTER, false,
     "Writes refused with SERVER_ERROR (log failure, full disk)."},
    {"kura_ulog_segments", "kura_ulog_segments", METRICS_GAUGE, false,
     "Update log segments on disk."},
    {"kura_ulog_bytes", "kura_ulog_bytes", METRICS_GAUGE, false,
     "Bytes of update log on disk."},
    {"kura_ulog_last_lsn", "kura_ulog_last_lsn", METRICS_GAUGE, false,
     "Position (microsecond timestamp) of the last record logged."},
    {"kura_ulog_last_seq", "kura_ulog_last_seq", METRICS_GAUGE, false,
     "Sequence number of the last record logged."},
    {"kura_ulog_durable_lsn", "kura_ulog_durable_lsn", METRICS_GAUGE, false,
     "Position of the last record known to be on disk."},
    {"kura_ulog_checkpoint_lsn", "kura_ulog_checkpoint_lsn", METRICS_GAUGE,
     false, "Position the database held at the last checkpoint."},
    {"kura_ulog_oldest_lsn", "kura_ulog_oldest_lsn", METRICS_GAUGE, false,
     "Position of the oldest record still on disk."},
    {"kura_ulog_group_writes", "kura_ulog_group_writes_total",
     METRICS_COUNTER, false, "write(2) calls appending record groups."},
    {"kura_ulog_records", "kura_ulog_records_total", METRICS_COUNTER, false,
     "Records appended to the update log."},
    {"kura_ulog_syncs", "kura_ulog_syncs_total", METRICS_COUNTER, false,
     "fdatasync calls on the update log."},
    {"kura_ulog_sync_us", "kura_ulog_sync_seconds_total", METRICS_COUNTER,
     true, "Time spent in the update log's fdatasync calls."},
    {"kura_ulog_checkpoints", "kura_ulog_checkpoints_total", METRICS_COUNTER,
     false, "Checkpoints made."},
    {"kura_ulog_segments_removed", "kura_ulog_segments_removed_total",
     METRICS_COUNTER, false, "Update log segments removed by retention."},
    {"kura_ulog_prepared_bytes", "kura_ulog_prepared_bytes", METRICS_GAUGE,
     false, "Log space zero-filled and synced ahead of the writes."},
    {"kura_ulog_failed", "kura_ulog_failed", METRICS_GAUGE, false,
     "1 once the update log failed (writes are refused)."},
    {"kura_repl_master_connected", "kura_repl_master_connected",
     METRICS_GAUGE, false, "1 while connected to the master (-mhost)."},
    {"kura_repl_master_sid", "kura_repl_master_sid", METRICS_GAUGE, false,
     "The master's replication id."},
    {"kura_repl_master_lag_seconds", "kura_repl_master_lag_seconds",
     METRICS_GAUGE, false, "How far behind the master's log this server is."},
    {"kura_repl_master_lag_records", "kura_repl_master_lag_records",
     METRICS_GAUGE, false, "Records of the master's log not applied here."},
    {"kura_repl_master_applied_lsn", "kura_repl_master_applied_lsn",
     METRICS_GAUGE, false, "Master position of the last change applied."},
    {"kura_repl_master_log_lsn", "kura_repl_master_log_lsn", METRICS_GAUGE,
     false, "The master's last position, as last heard."},
    {"kura_repl_master_received", "kura_repl_master_received_total",
     METRICS_COUNTER, false, "Records received from the master."},
    {"kura_repl_master_applied", "kura_repl_master_applied_total",
     METRICS_COUNTER, false, "Records from the master applied here."},
    {"kura_repl_master_resyncs", "kura_repl_master_resyncs_total",
     METRICS_COUNTER, false, "Full resynchronisations from the master."},
    {"kura_repl_master_connects", "kura_repl_master_connects_total",
     METRICS_COUNTER, false, "Connections made to the master."},
    {"kura_repl_master_delay_p50_us", "kura_repl_master_delay_p50_seconds",
     METRICS_GAUGE, true,
     "Median delay from a change on the master to its application here."},
    {"kura_repl_master_delay_p99_us", "kura_repl_master_delay_p99_seconds",
     METRICS_GAUGE, true,
     "99th percentile of the same delay."},
    {"kura_repl_master_delay_max_us", "kura_repl_master_delay_max_seconds",
     METRICS_GAUGE, true, "Largest such delay."},
    {"kura_repl_peers", "kura_repl_peers", METRICS_GAUGE, false,
     "Peers pulling this server's log."},
    {PEER_TEMPLATE "connected", "kura_repl_peer_connected", METRICS_GAUGE,
     false, "1 while the peer is connected."},
    {PEER_TEMPLATE "acked_lsn", "kura_repl_peer_acked_lsn", METRICS_GAUGE,
     false, "Last position the peer made durable."},
    {PEER_TEMPLATE "lag_records", "kura_repl_peer_lag_records",
     METRICS_GAUGE, false, "Records the peer has not acknowledged."},
    {PEER_TEMPLATE "lag_seconds", "kura_repl_peer_lag_seconds",
     METRICS_GAUGE, false,
     "Age of the oldest change the peer has not acknowledged."},
    {PEER_TEMPLATE "sent", "kura_repl_peer_sent_total", METRICS_COUNTER,
     false, "Records sent to the peer."},
    {PEER_TEMPLATE "resyncs", "kura_repl_peer_resyncs_total",
     METRICS_COUNTER, false, "Full resynchronisations served to the peer."},
};

#define NENTRIES (sizeof(entries) / sizeof(entries[0]))

/* Where a pair goes: a table entry (and a peer's sid), or nowhere. */
struct _class {
    int entry;        /* index into entries, -1 unknown, -2 left out */
    const char *sid;  /* digits of a per-peer name */
    size_t sid_len;
};

static bool
_is_peer(const struct _entry *e)
{
    return strncmp(e->stat, PEER_TEMPLATE, strlen(PEER_TEMPLATE)) == 0;
}

static bool
_eq(const char *s, size_t len, const char *z)
{
    return strlen(z) == len && memcmp(s, z, len) == 0;
}

/* A decimal number as Go's ParseFloat and Prometheus read it. */
static bool
_is_decimal(const char *s, size_t len)
{
    size_t i = 0;
    size_t digits = 0;
    if (i < len && (s[i] == '-' || s[i] == '+')) {
        i++;
    }
    while (i < len && s[i] >= '0' && s[i] <= '9') {
        i++;
        digits++;
    }
    if (i < len && s[i] == '.') {
        i++;
        while (i < len && s[i] >= '0' && s[i] <= '9') {
            i++;
            digits++;
        }
    }
    if (digits == 0) {
        return false;
    }
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < len && (s[i] == '-' || s[i] == '+')) {
            i++;
        }
        size_t exp = 0;
        while (i < len && s[i] >= '0' && s[i] <= '9') {
            i++;
            exp++;
        }
        if (exp == 0) {
            return false;
        }
    }
    return i == len;
}

/* A name Prometheus accepts: [a-zA-Z_:][a-zA-Z0-9_:]*. */
static bool
_is_metric_name(const char *s, size_t len)
{
    if (len == 0 || (s[0] >= '0' && s[0] <= '9')) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_' || c == ':')) {
            return false;
        }
    }
    return true;
}

static struct _class
_classify(const struct metrics_pair *p)
{
    struct _class c = {-2, NULL, 0};
    size_t plen = strlen(PEER_PREFIX);

    if (p->name_len < 5 || memcmp(p->name, "kura_", 5) != 0) {
        return c;
    }
    for (size_t i = 0; i < NENTRIES; i++) {
        if (!_is_peer(&entries[i]) &&
            _eq(p->name, p->name_len, entries[i].stat)) {
            c.entry = entries[i].type == METRICS_SKIPPED ? -2 : (int)i;
            return c;
        }
    }
    /* kura_repl_peer_<sid>_<field> */
    if (p->name_len > plen && memcmp(p->name, PEER_PREFIX, plen) == 0) {
        size_t d = plen;
        while (d < p->name_len && p->name[d] >= '0' && p->name[d] <= '9') {
            d++;
        }
        uint64_t sid;
        if (d > plen && d < p->name_len && p->name[d] == '_' &&
            util_parse_uint(p->name + plen, d - plen, UINT32_MAX, &sid)) {
            const char *field = p->name + d + 1;
            size_t flen = p->name_len - d - 1;
            for (size_t i = 0; i < NENTRIES; i++) {
                if (_is_peer(&entries[i]) &&
                    _eq(field, flen,
                        entries[i].stat + strlen(PEER_TEMPLATE))) {
                    c.entry = (int)i;
                    c.sid = p->name + plen;
                    c.sid_len = d - plen;
                    return c;
                }
            }
        }
    }
    c.entry = _is_metric_name(p->name, p->name_len) ? -1 : -2;
    return c;
}

/* Appends printf-style text; false if it does not fit. */
static bool
_put(struct buf *out, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(line)) {
        return false;
    }
    return buf_append(out, line, (size_t)n, METRICS_OUT_MAX);
}

/* Appends `s` as a label value: backslash, quote and newline escaped. */
static bool
_put_label_value(struct buf *out, const char *s, size_t len)
{
    bool ok = true;
    for (size_t i = 0; ok && i < len; i++) {
        switch (s[i]) {
        case '\\': ok = buf_append(out, "\\\\", 2, METRICS_OUT_MAX); break;
        case '"': ok = buf_append(out, "\\\"", 2, METRICS_OUT_MAX); break;
        case '\n': ok = buf_append(out, "\\n", 2, METRICS_OUT_MAX); break;
        default: ok = buf_append(out, s + i, 1, METRICS_OUT_MAX); break;
        }
    }
    return ok;
}

/* Whether `p` holds a value entry `e` can write. */
static bool
_valid(const struct _entry *e, const struct metrics_pair *p)
{
    uint64_t us;
    if (e->type == METRICS_INFO) {
        return p->value_len > 0;
    }
    if (e->micro) {
        return util_parse_uint(p->value, p->value_len, UINT64_MAX, &us);
    }
    return _is_decimal(p->value, p->value_len);
}

/* Appends " <value>\n" for a valid `p` of entry `e`. */
static bool
_put_value(struct buf *out, const struct _entry *e,
           const struct metrics_pair *p)
{
    if (e->micro) {
        uint64_t us = 0;
        util_parse_uint(p->value, p->value_len, UINT64_MAX, &us);
        return _put(out, " %" PRIu64 ".%06" PRIu64 "\n", us / 1000000,
                    us % 1000000);
    }
    return buf_append(out, " ", 1, METRICS_OUT_MAX) &&
           buf_append(out, p->value, p->value_len, METRICS_OUT_MAX) &&
           buf_append(out, "\n", 1, METRICS_OUT_MAX);
}

static const char *
_type_name(enum metrics_type t)
{
    switch (t) {
    case METRICS_COUNTER: return "counter";
    case METRICS_GAUGE: return "gauge";
    case METRICS_INFO: return "gauge";
    default: return "untyped";
    }
}

/* Writes the samples of table entry `i` among `pairs`, with its header
 * before the first of them. */
static bool
_put_entry(size_t i, const struct metrics_pair *pairs,
           const struct _class *cls, size_t n, struct buf *out)
{
    const struct _entry *e = &entries[i];
    bool header = false;
    bool ok = true;

    for (size_t j = 0; ok && j < n; j++) {
        const struct metrics_pair *p = &pairs[j];
        if (cls[j].entry != (int)i) {
            continue;
        }
        /* Each sample once: a repeated name (or sid) is skipped. */
        bool dup = false;
        for (size_t k = 0; k < j && !dup; k++) {
            dup = cls[k].entry == (int)i && cls[k].sid_len == cls[j].sid_len &&
                  (cls[j].sid_len == 0 ||
                   memcmp(cls[k].sid, cls[j].sid, cls[j].sid_len) == 0);
        }
        if (dup) {
            continue;
        }
        if (!_valid(e, p)) {
            continue;
        }
        if (!header) {
            ok = _put(out, "# HELP %s %s\n# TYPE %s %s\n", e->metric, e->help,
                      e->metric, _type_name(e->type));
            header = true;
        }
        ok = ok && _put(out, "%s", e->metric);
        if (e->type == METRICS_INFO) {
            ok = ok && _put(out, "{version=\"") &&
                 _put_label_value(out, p->value, p->value_len) &&
                 _put(out, "\"} 1\n");
            continue;
        }
        if (cls[j].sid_len > 0) {
            ok = ok && _put(out, "{sid=\"%.*s\"}", (int)cls[j].sid_len,
                            cls[j].sid);
        }
        ok = ok && _put_value(out, e, p);
    }
    return ok;
}

bool
metrics_format(const struct metrics_pair *pairs, size_t n, struct buf *out)
{
    struct _class *cls = n > 0 ? malloc(n * sizeof(*cls)) : NULL;
    bool ok = true;

    if (n > 0 && cls == NULL) {
        return false;
    }
    for (size_t j = 0; j < n; j++) {
        cls[j] = _classify(&pairs[j]);
    }
    for (size_t i = 0; ok && i < NENTRIES; i++) {
        if (entries[i].type != METRICS_SKIPPED) {
            ok = _put_entry(i, pairs, cls, n, out);
        }
    }
    /* Figures the table does not know yet, each under its own name. */
    for (size_t j = 0; ok && j < n; j++) {
        const struct metrics_pair *p = &pairs[j];
        bool dup = false;
        if (cls[j].entry != -1 || !_is_decimal(p->value, p->value_len)) {
            continue;
        }
        for (size_t k = 0; k < j && !dup; k++) {
            dup = cls[k].entry == -1 && pairs[k].name_len == p->name_len &&
                  memcmp(pairs[k].name, p->name, p->name_len) == 0;
        }
        if (!dup) {
            ok = _put(out, "# TYPE %.*s untyped\n%.*s ", (int)p->name_len,
                      p->name, (int)p->name_len, p->name) &&
                 buf_append(out, p->value, p->value_len, METRICS_OUT_MAX) &&
                 buf_append(out, "\n", 1, METRICS_OUT_MAX);
        }
    }
    free(cls);
    return ok;
}

size_t
metrics_parse_stats(const char *text, size_t len, struct metrics_pair *pairs,
                    size_t max)
{
    size_t found = 0;
    size_t pos = 0;

    while (pos < len) {
        const char *line = text + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t llen = nl != NULL ? (size_t)(nl - line) : len - pos;
        pos += llen + (nl != NULL ? 1 : 0);
        if (llen > 0 && line[llen - 1] == '\r') {
            llen--;
        }
        if (llen < 5 || memcmp(line, "STAT ", 5) != 0) {
            continue;
        }
        const char *name = line + 5;
        const char *sp = memchr(name, ' ', llen - 5);
        if (sp == NULL || sp == name) {
            continue;
        }
        const char *value = sp + 1;
        size_t vlen = (size_t)(line + llen - value);
        if (vlen == 0 || memchr(value, ' ', vlen) != NULL) {
            continue;
        }
        if (found < max) {
            pairs[found].name = name;
            pairs[found].name_len = (size_t)(sp - name);
            pairs[found].value = value;
            pairs[found].value_len = vlen;
        }
        found++;
    }
    return found;
}

enum metrics_type
metrics_type_of(const char *name)
{
    struct metrics_pair p = {name, strlen(name), "0", 1};
    struct _class c = _classify(&p);
    if (c.entry >= 0) {
        return entries[c.entry].type;
    }
    for (size_t i = 0; i < NENTRIES; i++) {
        if (entries[i].type == METRICS_SKIPPED &&
            strcmp(entries[i].stat, name) == 0) {
            return METRICS_SKIPPED;
        }
    }
    return METRICS_UNKNOWN;
}

bool
metrics_entry(size_t i, const char **stats_name, const char **metric,
              enum metrics_type *type, const char **help)
{
    if (i >= NENTRIES) {
        return false;
    }
    *stats_name = entries[i].stat;
    *metric = entries[i].metric;
    *type = entries[i].type;
    *help = entries[i].help;
    return true;
}
