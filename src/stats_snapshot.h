/*
 * stats_snapshot: the server-wide figures `stats` reports beyond the workers'
 * counters (stats.h): connections, the update log, replication. Filled by
 * server.c, read by process_stats.c; kept apart so that the counters stay
 * a leaf module and the request path does not depend on replication.
 */
#ifndef KURA_STATS_SNAPSHOT_H
#define KURA_STATS_SNAPSHOT_H

#include <stdbool.h>
#include <stdint.h>

#include "repl_sender.h"
#include "repl_receiver.h"
#include "stats.h"
#include "tls.h"
#include "ulog.h"

/* Figures gathered from the whole server for the `stats` command. */
struct stats_snapshot {
    uint64_t counters[STATS_COUNT]; /* summed over workers */
    int64_t started_s;              /* unix time the server started */
    uint32_t max_connections; /* effective connection limit */
    uint64_t curr_connections;
    uint64_t total_connections;
    uint64_t rejected_connections;
    uint64_t listen_disabled_num;
    uint64_t listen_disabled_us;
    bool accepting_conns;
    int threads;
    uint32_t verbosity;     /* as last set by "verbosity" */
    uint64_t commits;       /* group commits */
    uint64_t early_commits; /* commits forced before the end of a pass */
    uint64_t tombstones_dropped;
    uint64_t memory_limit;  /* the memory cgroup's limit; 0: none */
    bool buckets_locked;    /* the bucket array is locked in memory */
    uint64_t prefetch_waits; /* requests that waited for reads ahead */
    uint64_t prefetch_reads; /* ... the reads */
    bool has_ulog;
    struct ulog_stats ulog;
    bool has_master;        /* this server follows -mhost */
    struct repl_receiver_stats master;
    int npeers;             /* peers that pull from this server */
    struct repl_peer_stats peers[REPL_MAX_PEERS];
    struct tls_stats tls;   /* -tlsport's figures; zeros without it */
    int64_t tls_link_not_after; /* -mtls: this server's certificate's
                                   expiry (unix s), or 0 */
};

#endif
