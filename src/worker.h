/*
 * worker: the pool of threads that serve connections.
 *
 * Each worker owns a libevent base, the connections handed to it, a write
 * batch (txn.h) and its counters. The listener hands a new connection over
 * through the worker's queue and wakes it with an eventfd; the same queue
 * carries the stop request. A connection stays on its worker for life, so
 * no connection state is ever shared between threads.
 *
 * One pass of a worker's loop runs every ready callback (reads, parsing,
 * processing, staging writes), then commits the batch once (one log write)
 * and sends every reply that may go: one group commit per pass. Under the
 * "always" fsync policy replies to writes go when the sync thread reports
 * them durable (conn.h); the worker does not wait and keeps serving.
 *
 * Before a request runs, its key's pages in the database file are looked
 * up (prefetch.h); when some are not in memory, the reads are queued,
 * submitted together at the end of the pass, and the request waits on
 * its connection (conn.h) while the worker serves the others.
 *
 * Thread-safety: worker_dispatch() and worker_stop() may be called from any
 * thread; everything else belongs to the worker's own thread.
 */
#ifndef KURA_WORKER_H
#define KURA_WORKER_H

#include <event2/event.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "conn.h"
#include "log.h"
#include "prefetch.h"
#include "process.h"
#include "stats.h"
#include "txn.h"

/* What every worker shares; owned by the server, read-only here. */
struct worker_shared {
    const struct process_env *penv;
    struct txn_engine *eng;
    struct ulog *ulog;        /* NULL: no update log */
    struct logger *log;
    struct proto_limits limits;
    int idle_timeout_s;       /* 0 = none */
    size_t watermark;         /* output bytes that pause a client */
    _Atomic uint64_t curr_conns;
    /* Takes over a replication peer's socket (conn.h). */
    int (*handoff)(void *arg, int fd, struct tls_session *tls,
                   const struct proto_request *req);
    void *handoff_arg;
    /* Sends replies (conn_host.send): NULL, as in the server, is send(2);
     * the unit suite captures them instead. */
    ssize_t (*send)(void *arg, int fd, const void *data, size_t len);
    void *send_arg;
    /* Keys each worker may read ahead at once (prefetch.h); 0: none. */
    unsigned prefetch_depth;
    struct conntab *conntab;  /* stats conns; NULL: not listed */
    struct tls_ctx *tls;      /* the TLS port's context, or NULL */
    int tls_timeout_ms;       /* handshake deadline (-tlstout) */
};

/* A connection handed to a worker. */
struct worker_item {
    int fd;
    bool tls;                 /* from the TLS port */
};

struct worker {
    int id;
    struct worker_shared *shared;
    pthread_t thread;
    bool started;
    struct event_base *base;
    int notify_fd;          /* eventfd */
    struct event *notify_ev;
    pthread_mutex_t lock;   /* guards the queue and `stopping` */
    struct worker_item *queue; /* handed over by the listener */
    size_t qlen;
    size_t qcap;
    bool stopping;
    struct timeval idle_tv;
    int watcher;            /* ulog durability watcher id, or -1 */
    _Atomic bool synced;    /* a sync reported progress, or asks this
                               worker to lead the next (ulog.h U14) */
    uint64_t released_lsn;  /* applied lsn when replies were last
                               released (conn_host_durable) */
    struct txn_batch batch;
    struct process_ctx pctx;
    struct stats_counters stats;
    struct conn_host host;
    struct prefetch *prefetch;  /* NULL: requests read synchronously */
    struct event *prefetch_ev;
    uint64_t closed_since_trim; /* connections freed since malloc_trim() */
    uint64_t trimmed_ms;
    struct event *tick_ev;      /* a second's tick: the last of them, and
                                   reads ahead left unsubmitted */
};

/*
 * Prepares worker `id` (base, eventfd, batch). Returns 0, or -1 with a
 * reason logged.
 */
int worker_init(struct worker *w, int id, struct worker_shared *shared);

/* Starts the worker's thread. Returns 0 or -1. */
int worker_start(struct worker *w);

/*
 * Hands the connected socket `fd` to the worker, which takes ownership;
 * `tls` if it came to the TLS port. Returns 0, or -1 if the worker is
 * stopping (the caller closes `fd`).
 */
int worker_dispatch(struct worker *w, int fd, bool tls);

/*
 * Asks the worker to finish its current pass, commit, send what is queued,
 * close its connections and exit. Returns at once; see worker_join().
 */
void worker_stop(struct worker *w);

/* Waits for the worker's thread to exit. */
void worker_join(struct worker *w);

/* Frees what worker_init() allocated. The thread must have exited. */
void worker_deinit(struct worker *w);

#endif
