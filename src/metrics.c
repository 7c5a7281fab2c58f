/*
 * metrics: `stats` figures in Prometheus' text format (see metrics.h). The
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

/* How a sample's value is made from the figure's. */
enum _derive {
    AS_IS = 0,
    MICRO,     /* microseconds in stats, seconds out (exact) */
    MINUS_CAS, /* cmd_set less cas_hits, cas_misses and cas_badval */
};

struct _entry {
    const char *stat;   /* stats name; "<sid>" in a per-peer one */
    const char *metric; /* Prometheus name */
    enum metrics_type type;
    enum _derive derive;
    const char *help;
    const char *labels; /* fixed labels ("command=\"get\""), or NULL */
};

#define CMD(stat, command, status)                                          \
    {stat, "memcached_commands_total", METRICS_COUNTER, AS_IS,              \
     "Requests by command and status, as the memcached exporter counts "    \
     "them.",                                                               \
     "command=\"" command "\",status=\"" status "\""}

/*
 * memcached's figures keep the names the Prometheus memcached exporter
 * gives them, so its dashboards and alerts work on kurad's own endpoint;
 * the few it does not export get memcached_<name>. Entries of one metric
 * are adjacent (one # HELP and # TYPE for them).
 */
static const struct _entry entries[] = {
    {"pid", NULL, METRICS_SKIPPED, AS_IS, NULL, NULL},
    {"uptime", "memcached_uptime_seconds", METRICS_GAUGE, AS_IS,
     "Seconds since the server started.", NULL},
    {"time", "memcached_time_seconds", METRICS_GAUGE, AS_IS,
     "The server's clock (Unix time).", NULL},
    {"version", "memcached_version", METRICS_INFO, AS_IS,
     "The version the server gives memcached clients, as a label.", NULL},
    {"pointer_size", NULL, METRICS_SKIPPED, AS_IS, NULL, NULL},
    {"rusage_user", "memcached_process_user_cpu_seconds_total",
     METRICS_COUNTER, AS_IS, "User CPU time of the server process.", NULL},
    {"rusage_system", "memcached_process_system_cpu_seconds_total",
     METRICS_COUNTER, AS_IS, "System CPU time of the server process.", NULL},
    {"max_connections", "memcached_max_connections", METRICS_GAUGE, AS_IS,
     "Client connections allowed (-maxconn).", NULL},
    {"curr_connections", "memcached_current_connections", METRICS_GAUGE,
     AS_IS, "Open client connections.", NULL},
    {"total_connections", "memcached_connections_total", METRICS_COUNTER,
     AS_IS, "Connections accepted since the server started.", NULL},
    {"rejected_connections", "memcached_connections_rejected_total",
     METRICS_COUNTER, AS_IS, "Connections refused over -maxconn.", NULL},
    {"connection_structures", "memcached_connection_structures",
     METRICS_GAUGE, AS_IS, "Connection structures allocated.", NULL},
    {"cmd_get", "memcached_cmd_get_total", METRICS_COUNTER, AS_IS,
     "Keys asked for by get requests.", NULL},
    CMD("get_hits", "get", "hit"),
    CMD("get_misses", "get", "miss"),
    {"cmd_set", "memcached_commands_total", METRICS_COUNTER, MINUS_CAS, NULL,
     "command=\"set\",status=\"hit\""},
    CMD("cmd_flush", "flush", "hit"),
    CMD("delete_hits", "delete", "hit"),
    CMD("delete_misses", "delete", "miss"),
    CMD("incr_hits", "incr", "hit"),
    CMD("incr_misses", "incr", "miss"),
    CMD("decr_hits", "decr", "hit"),
    CMD("decr_misses", "decr", "miss"),
    CMD("cas_hits", "cas", "hit"),
    CMD("cas_misses", "cas", "miss"),
    CMD("cas_badval", "cas", "badval"),
    CMD("touch_hits", "touch", "hit"),
    CMD("touch_misses", "touch", "miss"),
    {"cmd_touch", "memcached_cmd_touch_total", METRICS_COUNTER, AS_IS,
     "Touch requests.", NULL},
    {"cmd_meta", "memcached_cmd_meta_total", METRICS_COUNTER, AS_IS,
     "Meta protocol requests.", NULL},
    {"get_expired", "memcached_get_expired_total", METRICS_COUNTER, AS_IS,
     "Gets that found an expired item.", NULL},
    {"get_flushed", "memcached_get_flushed_total", METRICS_COUNTER, AS_IS,
     "Gets that found an item invalidated by flush_all.", NULL},
    {"store_too_large", "memcached_item_too_large_total", METRICS_COUNTER,
     AS_IS, "Stores refused as larger than -itemmax.", NULL},
    {"store_no_memory", "memcached_item_no_memory_total", METRICS_COUNTER,
     AS_IS, "Stores refused for want of memory.", NULL},
    {"auth_cmds", "memcached_auth_commands_total", METRICS_COUNTER, AS_IS,
     "Authentication attempts.", NULL},
    {"auth_errors", "memcached_auth_errors_total", METRICS_COUNTER, AS_IS,
     "Failed authentication attempts.", NULL},
    {"bytes_read", "memcached_read_bytes_total", METRICS_COUNTER, AS_IS,
     "Bytes read from clients.", NULL},
    {"bytes_written", "memcached_written_bytes_total", METRICS_COUNTER,
     AS_IS, "Bytes sent to clients.", NULL},
    {"limit_maxbytes", "memcached_limit_bytes", METRICS_GAUGE, AS_IS,
     "Size of the file system holding the database.", NULL},
    {"accepting_conns", "memcached_accepting_connections", METRICS_GAUGE,
     AS_IS, "1 while the server accepts connections.", NULL},
    {"listen_disabled_num", "memcached_connections_listener_disabled_total",
     METRICS_COUNTER, AS_IS,
     "Times the listener was paused at the connection limit.", NULL},
    {"time_in_listen_disabled_us",
     "memcached_connections_listener_disabled_seconds_total",
     METRICS_COUNTER, MICRO, "Time the listener spent paused.", NULL},
    {"threads", "memcached_threads", METRICS_GAUGE, AS_IS,
     "Worker threads (-thnum).", NULL},
    {"conn_yields", "memcached_connections_yielded_total", METRICS_COUNTER,
     AS_IS, "Times a busy connection yielded to others.", NULL},
    {"hash_power_level", "memcached_hash_power_level", METRICS_GAUGE, AS_IS,
     "Log2 of the database's bucket count, rounded up.", NULL},
    {"hash_bytes", "memcached_hash_bytes", METRICS_GAUGE, AS_IS,
     "Bytes of the database's bucket array.", NULL},
    {"hash_is_expanding", "memcached_hash_is_expanding", METRICS_GAUGE,
     AS_IS, "Always 0: the bucket array grows only by kura optimize.", NULL},
    {"idle_kicks", "memcached_connections_idle_kicked_total",
     METRICS_COUNTER, AS_IS, "Connections closed as idle (-tout).", NULL},
    {"bytes", "memcached_current_bytes", METRICS_GAUGE, AS_IS,
     "Bytes of the stored keys and values.", NULL},
    {"curr_items", "memcached_current_items", METRICS_GAUGE, AS_IS,
     "Items stored.", NULL},
    {"total_items", "memcached_items_total", METRICS_COUNTER, AS_IS,
     "Items stored since the server started.", NULL},
    {"evictions", "memcached_items_evicted_total", METRICS_COUNTER, AS_IS,
     "Always 0: kurad never evicts.", NULL},
    {"reclaimed", "memcached_items_reclaimed_total", METRICS_COUNTER, AS_IS,
     "Expired items whose space was reused.", NULL},
    {"expired_unfetched", "memcached_items_expired_unfetched_total",
     METRICS_COUNTER, AS_IS, "Expired items never fetched.", NULL},
    {"evicted_unfetched", "memcached_items_evicted_unfetched_total",
     METRICS_COUNTER, AS_IS, "Always 0: kurad never evicts.", NULL},
    {"evicted_active", "memcached_items_evicted_active_total",
     METRICS_COUNTER, AS_IS, "Always 0: kurad never evicts.", NULL},
    {"lrutail_reflocked", "memcached_lrutail_reflocked_total",
     METRICS_COUNTER, AS_IS, "Always 0: kurad keeps no LRU.", NULL},
    {METRICS_UP, "kura_up", METRICS_GAUGE, AS_IS,
     "Whether the collector read kurad's stats (1) or not (0).", NULL},
    {"kura_version", "kura_version_info", METRICS_INFO, AS_IS,
     "kurad's version, as a label.", NULL},
    {"kura_sid", "kura_sid", METRICS_GAUGE, AS_IS,
     "This server's replication id (-sid).", NULL},
    {"kura_db_path", NULL, METRICS_SKIPPED, AS_IS, NULL, NULL},
    {"kura_db_records", "kura_db_records", METRICS_GAUGE, AS_IS,
     "Records in the database, tombstones included.", NULL},
    {"kura_db_file_size", "kura_db_file_size_bytes", METRICS_GAUGE, AS_IS,
     "Size of the database file.", NULL},
    {"kura_db_bnum", "kura_db_bnum", METRICS_GAUGE, AS_IS,
     "Hash buckets of the database file.", NULL},
    {"kura_db_over_bnum", "kura_db_over_bnum", METRICS_GAUGE, AS_IS,
     "1 once the records outgrew the buckets (run kura optimize).", NULL},
    {"kura_db_damage_seen", "kura_db_damage_seen_total", METRICS_COUNTER,
     AS_IS, "Damaged database pages met while serving.", NULL},
    {"kura_db_damage_offset", "kura_db_damage_offset", METRICS_GAUGE, AS_IS,
     "File offset of the last damage met (0: none).", NULL},
    {"kura_group_commits", "kura_group_commits_total", METRICS_COUNTER,
     AS_IS, "Group commits of the write path.", NULL},
    {"kura_early_commits", "kura_early_commits_total", METRICS_COUNTER,
     AS_IS, "Group commits made before the end of a worker's pass.", NULL},
    {"kura_writable", "kura_writable", METRICS_GAUGE, AS_IS,
     "1 while writes are accepted; 0 while a log failure, a full disk or "
     "-mask refuses them.", NULL},
    {"kura_flush_applied_us", "kura_flush_applied_timestamp_seconds",
     METRICS_GAUGE, MICRO, "Time of the last flush_all in effect (0: none).",
     NULL},
    {"kura_flush_pending_us", "kura_flush_pending_timestamp_seconds",
     METRICS_GAUGE, MICRO, "Deadline of a delayed flush_all (0: none).", NULL},
    {"kura_tombstones_dropped", "kura_tombstones_dropped_total",
     METRICS_COUNTER, AS_IS, "Delete tombstones removed once obsolete.", NULL},
    {"kura_memory_limit", "kura_memory_limit_bytes", METRICS_GAUGE, AS_IS,
     "The memory cgroup's limit kurad runs under (0: none).", NULL},
    {"kura_db_buckets_locked", "kura_db_buckets_locked", METRICS_GAUGE,
     AS_IS, "1 while the bucket array is locked in memory.", NULL},
    {"kura_prefetch_waits", "kura_prefetch_waits_total", METRICS_COUNTER,
     AS_IS, "Requests that waited for their database pages, read ahead.",
     NULL},
    {"kura_prefetch_reads", "kura_prefetch_reads_total", METRICS_COUNTER,
     AS_IS, "Reads of database pages ahead of requests.", NULL},
    {"kura_cmd_denied", "kura_cmd_denied_total", METRICS_COUNTER, AS_IS,
     "Commands refused by -mask.", NULL},
    {"kura_write_errors", "kura_write_errors_total", METRICS_COUNTER, AS_IS,
     "Writes refused with SERVER_ERROR (log failure, full disk).", NULL},
    {"kura_ulog_segments", "kura_ulog_segments", METRICS_GAUGE, AS_IS,
     "Update log segments on disk.", NULL},
    {"kura_ulog_bytes", "kura_ulog_bytes", METRICS_GAUGE, AS_IS,
     "Bytes of update log on disk.", NULL},
    {"kura_ulog_last_lsn", "kura_ulog_last_lsn", METRICS_GAUGE, AS_IS,
     "Position (microsecond timestamp) of the last record logged.", NULL},
    {"kura_ulog_last_seq", "kura_ulog_last_seq", METRICS_GAUGE, AS_IS,
     "Sequence number of the last record logged.", NULL},
    {"kura_ulog_durable_lsn", "kura_ulog_durable_lsn", METRICS_GAUGE, AS_IS,
     "Position of the last record known to be on disk.", NULL},
    {"kura_ulog_checkpoint_lsn", "kura_ulog_checkpoint_lsn", METRICS_GAUGE,
     AS_IS, "Position the database held at the last checkpoint.", NULL},
    {"kura_ulog_oldest_lsn", "kura_ulog_oldest_lsn", METRICS_GAUGE, AS_IS,
     "Position of the oldest record still on disk.", NULL},
    {"kura_ulog_group_writes", "kura_ulog_group_writes_total",
     METRICS_COUNTER, AS_IS, "write(2) calls appending record groups.", NULL},
    {"kura_ulog_records", "kura_ulog_records_total", METRICS_COUNTER, AS_IS,
     "Records appended to the update log.", NULL},
    {"kura_ulog_syncs", "kura_ulog_syncs_total", METRICS_COUNTER, AS_IS,
     "fdatasync calls on the update log.", NULL},
    {"kura_ulog_sync_us", "kura_ulog_sync_seconds_total", METRICS_COUNTER,
     MICRO, "Time spent in the update log's fdatasync calls.", NULL},
    {"kura_ulog_checkpoints", "kura_ulog_checkpoints_total", METRICS_COUNTER,
     AS_IS, "Checkpoints made.", NULL},
    {"kura_ulog_dirty_checkpoints", "kura_ulog_dirty_checkpoints_total",
     METRICS_COUNTER, AS_IS,
     "Checkpoints started because the memory limit's dirty bound was "
     "reached.", NULL},
    {"kura_ulog_write_backs", "kura_ulog_write_backs_total", METRICS_COUNTER,
     AS_IS, "Write-backs of dirty database pages between checkpoints.",
     NULL},
    {"kura_ulog_segments_removed", "kura_ulog_segments_removed_total",
     METRICS_COUNTER, AS_IS, "Update log segments removed by retention.", NULL},
    {"kura_ulog_prepared_bytes", "kura_ulog_prepared_bytes", METRICS_GAUGE,
     AS_IS, "Log space zero-filled and synced ahead of the writes.", NULL},
    {"kura_ulog_failed", "kura_ulog_failed", METRICS_GAUGE, AS_IS,
     "1 once the update log failed (writes are refused).", NULL},
    {"kura_fsync_policy", NULL, METRICS_SKIPPED, AS_IS, NULL, NULL},
    {"kura_fsync_peer_fallback", "kura_fsync_peer_fallback", METRICS_GAUGE,
     AS_IS, "-fsync peer: 1 while no peer reports writes and every group "
     "commit is synced locally, as under -fsync always.", NULL},
    {"kura_fsync_peer_fallbacks", "kura_fsync_peer_fallbacks_total",
     METRICS_COUNTER, AS_IS, "-fsync peer: times the fallback began.", NULL},
    {"kura_fsync_peers_live", "kura_fsync_peers_live", METRICS_GAUGE, AS_IS,
     "-fsync peer: peers reporting what they have written.", NULL},
    {"kura_fsync_peer_stalls", "kura_fsync_peer_stalls_total",
     METRICS_COUNTER, AS_IS, "-fsync peer: waits answered by the local sync "
     "because a connected peer said nothing for N ms.", NULL},
    {"kura_ulog_peer_written_lsn", "kura_ulog_peer_written_lsn",
     METRICS_GAUGE, AS_IS, "-fsync peer: the last position a peer reported "
     "written to its own log.", NULL},
    {"kura_ulog_fdatasynced_lsn", "kura_ulog_fdatasynced_lsn", METRICS_GAUGE,
     AS_IS, "The last position this server's own fdatasync covered.", NULL},
    {"kura_repl_master_connected", "kura_repl_master_connected",
     METRICS_GAUGE, AS_IS, "1 while connected to the master (-mhost).", NULL},
    {"kura_repl_master_sid", "kura_repl_master_sid", METRICS_GAUGE, AS_IS,
     "The master's replication id.", NULL},
    {"kura_repl_master_lag_seconds", "kura_repl_master_lag_seconds",
     METRICS_GAUGE, AS_IS, "How far behind the master's log this server is.",
     NULL},
    {"kura_repl_master_lag_records", "kura_repl_master_lag_records",
     METRICS_GAUGE, AS_IS, "Records of the master's log not applied here.",
     NULL},
    {"kura_repl_master_applied_lsn", "kura_repl_master_applied_lsn",
     METRICS_GAUGE, AS_IS, "Master position of the last change applied.", NULL},
    {"kura_repl_master_log_lsn", "kura_repl_master_log_lsn", METRICS_GAUGE,
     AS_IS, "The master's last position, as last heard.", NULL},
    {"kura_repl_master_received", "kura_repl_master_received_total",
     METRICS_COUNTER, AS_IS, "Records received from the master.", NULL},
    {"kura_repl_master_applied", "kura_repl_master_applied_total",
     METRICS_COUNTER, AS_IS, "Records from the master applied here.", NULL},
    {"kura_repl_master_resyncs", "kura_repl_master_resyncs_total",
     METRICS_COUNTER, AS_IS, "Full resynchronisations from the master.", NULL},
    {"kura_repl_master_connects", "kura_repl_master_connects_total",
     METRICS_COUNTER, AS_IS, "Connections made to the master.", NULL},
    {"kura_repl_master_connect_failures",
     "kura_repl_master_connect_failures_total", METRICS_COUNTER, AS_IS,
     "Attempts to connect to the master that reached none.", NULL},
    {"kura_repl_master_wacks", "kura_repl_master_wacks_total",
     METRICS_COUNTER, AS_IS, "-fsync peer: positions reported written to "
     "the master.", NULL},
    {"kura_repl_master_delay_p50_us", "kura_repl_master_delay_p50_seconds",
     METRICS_GAUGE, MICRO,
     "Median delay from a change on the master to its application here.", NULL},
    {"kura_repl_master_delay_p99_us", "kura_repl_master_delay_p99_seconds",
     METRICS_GAUGE, MICRO,
     "99th percentile of the same delay.", NULL},
    {"kura_repl_master_delay_max_us", "kura_repl_master_delay_max_seconds",
     METRICS_GAUGE, MICRO, "Largest such delay.", NULL},
    {"kura_tls_handshakes", "kura_tls_handshakes_total", METRICS_COUNTER,
     AS_IS, "TLS handshakes completed on -tlsport.", NULL},
    {"kura_tls_resumed", "kura_tls_resumed_total", METRICS_COUNTER, AS_IS,
     "Of those, handshakes that resumed a session (a ticket).", NULL},
    {"kura_tls_handshake_failures", "kura_tls_handshake_failures_total",
     METRICS_COUNTER, AS_IS, "TLS handshakes that failed (a certificate "
     "refused, a protocol error).", NULL},
    {"kura_tls_handshake_timeouts", "kura_tls_handshake_timeouts_total",
     METRICS_COUNTER, AS_IS, "Clients closed for not completing a handshake "
     "within -tlstout.", NULL},
    {"kura_tls_plaintext_refused", "kura_tls_plaintext_refused_total",
     METRICS_COUNTER, AS_IS, "Plaintext clients refused on -tlsport.", NULL},
    {"kura_tls_ktls_tx", "kura_tls_ktls_tx_total", METRICS_COUNTER, AS_IS,
     "Handshakes after which the kernel seals the records (kTLS).", NULL},
    {"kura_tls_reloads", "kura_tls_reloads_total", METRICS_COUNTER, AS_IS,
     "Certificate reloads (SIGHUP) that took.", NULL},
    {"kura_tls_reload_failures", "kura_tls_reload_failures_total",
     METRICS_COUNTER, AS_IS, "Certificate reloads refused; the previous "
     "material stayed in use.", NULL},
    {"kura_tls_cert_not_after", "kura_tls_cert_expiry_timestamp_seconds",
     METRICS_GAUGE, AS_IS, "Expiry of -tlsport's certificate (unix time), "
     "0 without one.", NULL},
    {"kura_tls_link_cert_not_after",
     "kura_tls_link_cert_expiry_timestamp_seconds",
     METRICS_GAUGE, AS_IS, "Expiry of the certificate -mtls presents (unix "
     "time), 0 without one.", NULL},
    {"kura_repl_peers", "kura_repl_peers", METRICS_GAUGE, AS_IS,
     "Peers pulling this server's log.", NULL},
    {PEER_TEMPLATE "connected", "kura_repl_peer_connected", METRICS_GAUGE,
     AS_IS, "1 while the peer is connected.", NULL},
    {PEER_TEMPLATE "acked_lsn", "kura_repl_peer_acked_lsn", METRICS_GAUGE,
     AS_IS, "Last position the peer made durable.", NULL},
    {PEER_TEMPLATE "lag_records", "kura_repl_peer_lag_records",
     METRICS_GAUGE, AS_IS, "Records the peer has not acknowledged.", NULL},
    {PEER_TEMPLATE "lag_seconds", "kura_repl_peer_lag_seconds",
     METRICS_GAUGE, AS_IS,
     "Age of the oldest change the peer has not acknowledged.", NULL},
    {PEER_TEMPLATE "sent", "kura_repl_peer_sent_total", METRICS_COUNTER,
     AS_IS, "Records sent to the peer.", NULL},
    {PEER_TEMPLATE "resyncs", "kura_repl_peer_resyncs_total",
     METRICS_COUNTER, AS_IS, "Full resynchronisations served to the peer.",
     NULL},
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

    for (size_t i = 0; i < NENTRIES; i++) {
        if (!_is_peer(&entries[i]) &&
            _eq(p->name, p->name_len, entries[i].stat)) {
            c.entry = entries[i].type == METRICS_SKIPPED ? -2 : (int)i;
            return c;
        }
    }
    if (p->name_len < 5 || memcmp(p->name, "kura_", 5) != 0) {
        return c; /* not kura's, not known: left out */
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
    uint64_t u;
    if (e->type == METRICS_INFO) {
        return p->value_len > 0;
    }
    if (e->derive != AS_IS) {
        return util_parse_uint(p->value, p->value_len, UINT64_MAX, &u);
    }
    return _is_decimal(p->value, p->value_len);
}

/* The unsigned value of the figure `name` among `pairs`; 0 if absent. */
static uint64_t
_figure(const struct metrics_pair *pairs, size_t n, const char *name)
{
    uint64_t v = 0;
    for (size_t j = 0; j < n; j++) {
        if (_eq(pairs[j].name, pairs[j].name_len, name) &&
            util_parse_uint(pairs[j].value, pairs[j].value_len, UINT64_MAX,
                            &v)) {
            return v;
        }
    }
    return 0;
}

/* Appends " <value>\n" for a valid `p` of entry `e`. */
static bool
_put_value(struct buf *out, const struct _entry *e,
           const struct metrics_pair *p, const struct metrics_pair *pairs,
           size_t n)
{
    uint64_t v = 0;
    switch (e->derive) {
    case MICRO:
        util_parse_uint(p->value, p->value_len, UINT64_MAX, &v);
        return _put(out, " %" PRIu64 ".%06" PRIu64 "\n", v / 1000000,
                    v % 1000000);
    case MINUS_CAS: {
        /* memcached counts a cas in cmd_set too; the exporter's "set"
         * is the sets that were not a cas. */
        uint64_t cas = _figure(pairs, n, "cas_hits") +
                       _figure(pairs, n, "cas_misses") +
                       _figure(pairs, n, "cas_badval");
        util_parse_uint(p->value, p->value_len, UINT64_MAX, &v);
        return _put(out, " %" PRIu64 "\n", v > cas ? v - cas : 0);
    }
    case AS_IS:
        break;
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

/* The help of metric `m`: that of its first entry in the table. */
static const char *
_help_of(const char *m)
{
    for (size_t i = 0; i < NENTRIES; i++) {
        if (entries[i].metric != NULL && strcmp(entries[i].metric, m) == 0 &&
            entries[i].help != NULL) {
            return entries[i].help;
        }
    }
    return "";
}

/* Writes the samples of table entry `i` among `pairs`, with its metric's
 * header before the first sample of that metric (`*last` is the metric
 * whose header was written last). */
static bool
_put_entry(size_t i, const struct metrics_pair *pairs,
           const struct _class *cls, size_t n, struct buf *out,
           const char **last)
{
    const struct _entry *e = &entries[i];
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
        if (*last == NULL || strcmp(*last, e->metric) != 0) {
            ok = _put(out, "# HELP %s %s\n# TYPE %s %s\n", e->metric,
                      _help_of(e->metric), e->metric, _type_name(e->type));
            *last = e->metric;
        }
        ok = ok && _put(out, "%s", e->metric);
        if (e->type == METRICS_INFO) {
            ok = ok && _put(out, "{version=\"") &&
                 _put_label_value(out, p->value, p->value_len) &&
                 _put(out, "\"} 1\n");
            continue;
        }
        if (e->labels != NULL) {
            ok = ok && _put(out, "{%s}", e->labels);
        } else if (cls[j].sid_len > 0) {
            ok = ok && _put(out, "{sid=\"%.*s\"}", (int)cls[j].sid_len,
                            cls[j].sid);
        }
        ok = ok && _put_value(out, e, p, pairs, n);
    }
    return ok;
}

bool
metrics_format(const struct metrics_pair *pairs, size_t n, struct buf *out)
{
    struct _class *cls = n > 0 ? malloc(n * sizeof(*cls)) : NULL;
    const char *last = NULL;
    bool ok = true;

    if (n > 0 && cls == NULL) {
        return false;
    }
    for (size_t j = 0; j < n; j++) {
        cls[j] = _classify(&pairs[j]);
    }
    for (size_t i = 0; ok && i < NENTRIES; i++) {
        if (entries[i].type != METRICS_SKIPPED) {
            ok = _put_entry(i, pairs, cls, n, out, &last);
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
    *help = entries[i].metric != NULL ? _help_of(entries[i].metric) : NULL;
    return true;
}
