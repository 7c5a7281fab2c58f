/*
 * listener: accepts client connections and hands them to workers.
 *
 * Runs on the main thread's event loop. It binds -host/-port (or a unix
 * socket with -port 0) early, so a port in use stops the start at once,
 * and listens, with a backlog of LISTENER_BACKLOG, only when started:
 * until then a client's connect is refused. It accepts, sets
 * TCP_NODELAY (replies are already batched per pass, so Nagle would only
 * add latency) and deals connections round-robin to the workers.
 *
 * At the connection limit a new client gets "SERVER_ERROR too many open
 * connections" (on the TLS port, a TLS alert) and is closed; existing
 * clients are unaffected. When the
 * process runs out of descriptors, accepting pauses for a moment instead
 * of spinning on a listen socket that stays readable.
 *
 * The TLS port (-tlsport) is a second listener: its connections reach
 * the workers marked as TLS, and each worker runs their handshakes in its
 * own event loop (conn.h).
 *
 * Thread-safety: main thread only; the counters are atomics read by stats.
 */
#ifndef KURA_LISTENER_H
#define KURA_LISTENER_H

#include <event2/event.h>
#include <event2/listener.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "log.h"
#include "worker.h"

/*
 * The kernel caps the backlog at net.core.somaxconn (4096 by default on
 * current kernels), so asking for more costs nothing and lets an operator
 * who raises somaxconn get a deeper accept queue without a rebuild: when
 * thousands of clients connect at once, the queue overflows long before
 * the listener falls behind for good (see etc/tuning-kernel.md).
 */
#define LISTENER_BACKLOG 65535

struct listener {
    struct event_base *base;
    struct evconnlistener *evl;
    struct event *resume_ev; /* re-enables accepting after EMFILE */
    struct worker *workers;
    int nworkers;
    int next;                /* round-robin position */
    uint32_t maxconn;
    _Atomic uint64_t *curr_conns;
    struct logger *log;
    char unix_path[4096];    /* removed on close, when a unix socket */
    char name[4128];         /* host:port, or the socket's path: how
                                logs and messages name the address */
    int fd;                  /* bound, not yet started; else -1 */
    bool tls;                /* the TLS port: connections start with a
                                handshake */
    _Atomic uint64_t total_conns;
    _Atomic uint64_t rejected_conns;
    _Atomic uint64_t disabled_count;
    _Atomic uint64_t disabled_us;       /* time spent not accepting */
    _Atomic uint64_t disabled_since_us; /* when the current pause began */
    _Atomic bool accepting;
};

/*
 * Binds `host`:`port` (a unix socket at path `host` when `port` is 0);
 * connections are refused until listener_start(). The server binds before
 * it opens anything else, so that a port in use fails the start before a
 * file is created. With `tls`, it is the TLS port. Returns 0, or -1 with
 * a reason in `err`; listener_close() frees either way.
 */
int listener_bind(struct listener *l, const char *host, int port, bool tls,
                  char *err, size_t errlen);

/* What a started listener hands its connections to; the caller's. */
struct listener_env {
    struct event_base *base;   /* the loop that accepts */
    struct worker *workers;    /* round-robin over these */
    int nworkers;
    uint32_t maxconn;          /* refused past this many at once */
    _Atomic uint64_t *curr_conns;
    struct logger *log;
};

/*
 * Listens on the bound socket and starts accepting on `env->base`, which
 * with the rest of `env` must outlive the listener. Returns 0, or -1 with
 * a reason in `err`.
 */
int listener_start(struct listener *l, const struct listener_env *env,
                   char *err, size_t errlen);

/* Stops accepting and closes the listening socket. Idempotent. */
void listener_close(struct listener *l);

#endif
