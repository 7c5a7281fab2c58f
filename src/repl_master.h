/*
 * repl_master: serving the update log to standbys and master/master peers.
 *
 * A peer connects to the ordinary port and sends "REPL ..." (repl_proto.h);
 * the worker hands the socket over here and one sender thread per peer
 * streams log records to it from the position it asked for, skipping the
 * records that originated at that peer (so nothing is ever sent back to
 * where it came from). When that position is older than the oldest kept
 * segment, the peer gets a full resynchronisation: a snapshot of the
 * database, then the stream from the snapshot's position; never a silent
 * gap. Heartbeats every 200 ms carry the log's end and the stream position
 * so a peer's lag is honest when the master is idle.
 *
 * Peers acknowledge the position they have made durable. The lowest
 * acknowledgement of every known peer (kept in <ulog>/peers, replaced
 * atomically) holds back segment removal (U5) and tombstone removal (T6).
 *
 * Thread-safety: repl_master_accept() and the query functions may be
 * called from any thread.
 */
#ifndef KURA_REPL_MASTER_H
#define KURA_REPL_MASTER_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "log.h"
#include "repl_auth.h"
#include "repl_proto.h"
#include "store.h"
#include "ulog.h"

#define REPL_MAX_PEERS 16

/* A peer as seen from this master. */
struct repl_peer_stats {
    uint32_t sid;
    bool connected;
    uint64_t acked_lsn;   /* this log's lsn the peer has made durable */
    uint64_t acked_seq;
    uint64_t sent;        /* records sent in the current connection */
    uint64_t resyncs;     /* full resynchronisations served */
};

struct repl_master;

/*
 * Creates the master side for log `ulog` over `store`, serving as server
 * `sid`; known peers are loaded from <ulog dir>/peers. `durable_only`
 * sends only records the fsync policy has made durable. Peers are
 * admitted under `auth` (repl_auth.h; borrowed, must outlive the master).
 * Returns NULL with a reason in `err` on failure.
 */
struct repl_master *repl_master_create(struct ulog *ulog, struct store *store,
                                       const char *ulog_dir, uint32_t sid,
                                       bool durable_only,
                                       const struct repl_auth *auth,
                                       struct logger *log, char *err,
                                       size_t errlen);

/*
 * Takes over `fd`, a connection whose first line was "REPL <args>", and
 * serves it on a new thread. Returns 0, or -1 (the caller closes `fd`).
 */
int repl_master_accept(struct repl_master *m, int fd, const char *args,
                       size_t args_len);

/*
 * Lowest lsn every known peer has acknowledged (UINT64_MAX when there is
 * no peer). Segments and tombstones past it are kept.
 */
uint64_t repl_master_acked(struct repl_master *m);

/* Copies up to `max` peers' figures into `out`; returns the count. */
int repl_master_stats(struct repl_master *m, struct repl_peer_stats *out,
                      int max);

/* Disconnects every peer, joins the threads and frees `m`. NULL-safe. */
void repl_master_destroy(struct repl_master *m);

#endif
