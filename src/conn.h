/*
 * conn: one client connection on a worker's event loop.
 *
 * Reads bytes, feeds them to the parser, runs each request through
 * process.c and queues the replies. Replies are not written when they are
 * produced: the connection joins its host's send list, and the worker sends
 * every queued reply once per pass of its event loop, after the pass's
 * writes have committed (txn.h T3). So all replies produced by one read go
 * out in one write, and no reply to a write leaves before the write is
 * durable.
 *
 * States (conn_state_names[] has their names for logs):
 *
 *   HANDSHAKE --TLS established--> READING
 *   HANDSHAKE --a plaintext client (refusal queued)--> CLOSING
 *   READING --output above watermark--> DRAINING --output sent--> READING
 *   READING --quit / fatal parse error--> CLOSING --output sent--> CLOSED
 *   CLOSING --output sent, client still sending--> LINGERING --EOF, 2 s,
 *       4 MiB read--> CLOSED
 *   any --EOF, error, idle timeout, aborted commit--> CLOSED
 *   HANDSHAKE --handshake failed or not done in time--> CLOSED
 *
 * LINGERING is a lingering close: the server has said its last reply, as
 * after a binary request it refuses with the rest of a 1 MiB frame still
 * on its way. Closing with unread input would send a reset, and a reset
 * makes the client's kernel discard the reply it has not yet read; so the
 * server shuts its side (FIN after the reply), reads and drops what the
 * client still sends, and closes at its EOF or at the bounds. Plaintext
 * only, and only when the client has not already shut its side.
 *
 * A connection from the TLS port (-tlsport) starts in HANDSHAKE: its first
 * byte says whether it is a TLS client at all (tls_sniff(): a plaintext
 * client gets a refusal in its own protocol and a log line), then the
 * handshake advances on each readiness event (tls.h: never blocking) until
 * it completes, fails, or its deadline passes: a deadline from the accept,
 * not renewed by activity, so a client trickling its hello a byte at a
 * time is closed at it. After it, every byte read or written passes
 * through the session and everything else is as for plaintext. A TLS
 * client that reaches the plaintext port is sent a handshake_failure
 * alert and closed, with a log line.
 *
 * While READING, a request whose storage reads were started ahead
 * (conn_host.io_start) waits for them without a state of its own: the
 * connection stops reading and running requests until conn_io_done()
 * has been called for each read, then runs that request first.
 *
 * Memory per connection is bounded: input by the parser's limits (longest
 * line plus the largest value), output by the watermark plus one reply
 * piece, because a connection stops reading, and a multi-key get stops
 * mid-way, while its output is above the watermark.
 *
 * Thread-safety: a connection and its host belong to one worker thread.
 * A closed connection is freed only at the end of the pass, because the
 * pass's write batch may still name it as the owner of staged changes.
 */
#ifndef KURA_CONN_H
#define KURA_CONN_H

#include <event2/event.h>
#include <event2/event_struct.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "buf.h"
#include "conntab.h"
#include "log.h"
#include "process.h"
#include "proto.h"
#include "tls.h"

enum conn_state {
    CONN_HANDSHAKE,
    CONN_READING,
    CONN_DRAINING,
    CONN_CLOSING,
    CONN_LINGERING,
    CONN_CLOSED,
    CONN_STATE_COUNT
};

extern const char *const conn_state_names[CONN_STATE_COUNT];

struct conn;

/* What a worker provides to its connections. */
struct conn_host {
    struct event_base *base;
    struct process_ctx *pctx;
    struct proto_limits limits;
    const struct timeval *idle_tv; /* NULL = no idle timeout */
    size_t watermark;              /* output bytes that pause a client */
    struct stats_counters *stats;
    _Atomic uint64_t *curr_conns;  /* server-wide, decremented on close */
    struct conn *all;              /* every connection not yet freed */
    struct conn *send_head;        /* output waiting for the end of pass */
    struct conn *dead_head;        /* closed, freed at the end of pass */
    struct conn *wait_head;        /* output waiting for durability */
    uint64_t nconns;
    /* The update log's durable lsn; NULL when every write is durable once
     * committed (no log, -uas, or a policy other than "always"). */
    uint64_t (*durable)(void *arg);
    bool (*log_failed)(void *arg); /* durability will never come */
    void *sync_arg;
    /*
     * Takes over the socket of a replication peer that sent REPL, with its
     * TLS session (NULL in plaintext), which it owns from then on (the
     * request points into the connection's buffer; copy what is needed).
     * Returns 0 if it took the descriptor; otherwise it is closed here.
     */
    int (*handoff)(void *arg, int fd, struct tls_session *tls,
                   const struct proto_request *req);
    void *handoff_arg;
    /*
     * Sends to a connection's descriptor like send(2) without SIGPIPE:
     * returns the bytes taken, or -1 with errno. NULL (the server) means
     * send(2) itself; the unit suite captures replies here, so that T3's
     * release rules are tested without a socket.
     */
    ssize_t (*send)(void *arg, int fd, const void *data, size_t len);
    void *send_arg;
    /*
     * Storage reads ahead of a request (prefetch.h), or NULL. Called once
     * per request before it runs; returns how many reads it started for
     * `c`, and calls conn_io_done(c) once for each as it completes. The
     * connection reads and runs nothing more meanwhile; then the request
     * runs. io_forget() is told of a connection that closes while it
     * waits, which must then never be named again.
     */
    unsigned (*io_start)(void *arg, struct conn *c,
                         const struct proto_request *req);
    void (*io_forget)(void *arg, struct conn *c);
    void *io_arg;
    struct conntab *conntab; /* stats conns; NULL: not listed */
    struct tls_ctx *tls;        /* the TLS port's context, or NULL */
    int tls_timeout_ms;         /* a handshake's deadline from the accept */
    struct logger *log;         /* refusals and failed handshakes (rate-
                                   limited); NULL: not logged */
    uint64_t tls_log_second;    /* the rate limit's current second */
    unsigned tls_log_lines;     /* ... lines written in it */
    uint64_t tls_log_dropped;   /* ... and dropped since the last line */
};

/* Initialises an empty host. */
void conn_host_init(struct conn_host *h);

/*
 * Takes ownership of the connected, non-blocking socket `fd` and starts
 * reading from it; with `tls` (a connection from the TLS port; h->tls must
 * be set) it first completes a TLS handshake. Returns the connection, or
 * NULL (and closes `fd`) when out of memory.
 */
struct conn *conn_create(struct conn_host *h, int fd, bool tls);

/* One of the reads io_start() reported is done (see struct conn_host). */
void conn_io_done(struct conn *c);

/*
 * Called when a commit fails: the connection is closed without sending
 * anything queued, so no reply claims a write that was not kept.
 */
void conn_abort(struct conn *c);

/*
 * End of a pass, after the write batch has committed up to `lsn`: marks a
 * release point on every connection that wrote, sends what may be sent,
 * then frees the connections closed during the pass. Returns true if it
 * marked any release point: the caller must then get `lsn` synced and call
 * conn_host_durable().
 */
bool conn_host_end_pass(struct conn_host *h, uint64_t lsn);

/*
 * The update log made more writes durable: sends the output they released.
 * If the log failed instead, closes every connection still waiting, so no
 * reply ever claims a write that was not kept. May be called in the middle
 * of a pass.
 */
void conn_host_durable(struct conn_host *h);

/*
 * Closes every connection (shutdown). Their queued output is sent first,
 * as far as the socket accepts it without blocking.
 */
void conn_host_close_all(struct conn_host *h);

#endif
