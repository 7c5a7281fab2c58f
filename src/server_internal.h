/*
 * server_internal: the server's state, shared by server.c (wiring, start
 * and stop) and server_storage.c (opening the update log and the
 * database), and by nothing else. server.c calls into server_storage.c;
 * server_storage.c calls nothing back.
 */
#ifndef KURA_SERVER_INTERNAL_H
#define KURA_SERVER_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <pthread.h>
#include <event2/event.h>

#include "access.h"
#include "auth.h"
#include "clock.h"
#include "conntab.h"
#include "daemon.h"
#include "detail.h"
#include "listener.h"
#include "log.h"
#include "memlimit.h"
#include "process.h"
#include "repl_auth.h"
#include "repl_receiver.h"
#include "repl_sender.h"
#include "settings.h"
#include "stats.h"
#include "store.h"
#include "sweeper.h"
#include "tlsconf.h"
#include "txn.h"
#include "ulog.h"
#include "worker.h"

/* Output bytes queued for one client before it stops being served. */
#define SERVER_WATERMARK ((size_t)256 << 10)
/* Lock stripes for the write path; collisions force early commits. */
#define SERVER_STRIPES 65536
/* Recent-access slots for meta h and l: 2^20 x 8 bytes = 8 MiB. */
#define SERVER_ACCESS_BITS 20
/* Keys a worker reads ahead at once (prefetch.h). */
#define SERVER_PREFETCH_DEPTH 256
#define SWEEPER_SLICE_KEYS 500
#define SWEEPER_PAUSE_MS 100
/*
 * Checkpoints. Each one writes back every database page dirtied since the
 * last, and every page it cleans costs a write fault (and a journal
 * handle, on ext4) when it is next updated. Random updates to 13.31M
 * records dirty almost every page within seconds, so the less often, the
 * less writing: 25 s (the -ckpt default, under the kernel's own 30 s
 * writeback age) instead of 10 s halved the faults (11k/s vs 20-21k/s) and took p99 from 2.0-2.3
 * to 1.3-1.5 ms (tools/bench-dataset's database, 64 connections). The log
 * bound keeps the redo after a crash near 5 s (1M records/s). Appends
 * (new records) are different: nothing absorbs them, and left for 25 s
 * they pile up into writeback that stalls the log (1 KiB inserts, ext4:
 * worst 129 ms vs 28 ms), so a grown database checkpoints at 64 MiB.
 */
#define CHECKPOINT_BYTES ((uint64_t)256 << 20)
#define CHECKPOINT_GROWTH ((uint64_t)64 << 20)

struct server {
    const struct settings *settings;
    struct logger log;
    struct pidfile pid;
    int notify_fd;
    struct daemon_sd sd;         /* systemd's notification socket */
    struct store *store;
    struct memlimit mem;         /* the memory kurad may use */
    struct memplan plan;         /* ... and what follows from it */
    bool buckets_locked;         /* store_pin_buckets() succeeded */
    struct clock clock;
    struct ulog *ulog;
    struct repl_auth auth;       /* -rkey */
    struct auth clients;         /* -auth */
    struct access_table access;  /* meta h and l */
    struct detail detail;        /* stats detail */
    struct conntab conntab;      /* stats conns */
    bool conntab_ready;
    bool access_ready;
    struct repl_sender *sender;  /* serves peers; with an update log */
    struct repl_receiver *receiver; /* follows -mhost */
    struct txn_engine eng;
    bool eng_ready;
    struct process_env penv;
    struct worker_shared shared;
    struct worker *workers;
    int nworkers;
    struct event_base *base;
    struct listener listener;
    bool bound;                  /* the listener holds the port */
    struct tlsconf tls;          /* -tlsport and -mtls contexts */
    struct listener tls_listener; /* -tlsport */
    bool tls_bound;
    struct sweeper sweeper;
    bool sweeping;
    struct event *sig_term;
    struct event *sig_int;
    struct event *sig_hup;
    struct event *catchup;       /* polls the receiver while clients wait */
    uint64_t catchup_since_ms;
    int exit_status;             /* set when serving failed after start */
    int64_t started_s;
    uint32_t maxconn; /* -maxconn, lowered to fit the descriptor limit */
    _Atomic uint32_t verbosity; /* the last "verbosity" level */
    pthread_mutex_t baseline_lock;
    uint64_t baseline[STATS_COUNT]; /* counters at the last stats reset */
    uint64_t total_conns_baseline;
};

/*
 * Opens the update log (with its recovery) and then the database, redoes
 * what the log holds beyond the database, and fits the memory plan;
 * srv->settings, srv->log and srv->mem must be set. Returns 0, or -1 with
 * a reason in `err`; what it opened is released by the server's stop.
 */
int server_open_storage(struct server *srv, char *err, size_t errlen);

/* The lsn every connected peer has acknowledged (UINT64_MAX: no sender);
 * `arg` is the server. The log's retention and the sweeper ask it. */
uint64_t server_peers_acked(void *arg);

#endif
