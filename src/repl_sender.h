/*
 * repl_sender: serving the update log to standbys and master/master peers.
 *
 * A peer connects to the ordinary port, or over TLS to -tlsport, and sends
 * "REPL ..." (repl_proto.h); the worker hands the socket (and its TLS
 * session, netio.h's streams) over here and one sender thread per peer
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
 * A backup (`kura backup`, REPL_FLAG_BACKUP in repl_proto.h) gets the same
 * snapshot and the log up to one position, then the connection ends.
 *
 * Invariants (tests cite these numbers):
 *   R1. A snapshot that starts with SNAP_BEGIN <lsn> holds every change
 *       logged at or below lsn (the walk starts only once they are all
 *       applied: ulog_applied_lsn()), and the stream after it carries
 *       every record after lsn; a change the walk also saw is simply
 *       applied again (logrec.h: records carry the resulting state).
 *   R2. A backup ends at P, the log's last lsn when the walk finished.
 *       Every change the walk saw was logged before it was applied (U2),
 *       so it is at or below P; and every record after the snapshot's
 *       lsn up to P is sent, none skipped whatever its origin, and none
 *       after P. The snapshot, then those records applied in log order
 *       (redo), is the database as of P (with -uas, which applies before
 *       it logs, the walk can also see a few changes after P).
 *   R3. A backup is not a peer: nothing is recorded for it in `peers` or
 *       shown in stats, so it holds nothing back once it has gone. While
 *       it is connected it holds back segment and tombstone removal
 *       (repl_sender_acked()) from before its snapshot's lsn, so the
 *       records R2 needs cannot be removed under it (short of -ukeep).
 *   R4. A backup's snapshot leaves out the items that the flush_all state
 *       read when its walk starts hides (a flush_all is applied lazily:
 *       hidden items stay in the file until the sweeper retires them), so
 *       a backup never brings back what a flush_all at or below P hid. A
 *       flush_all logged after the snapshot's lsn reaches the backup as
 *       its record (R2); one pending at the walk, by R7.
 *   R5. Under -fsync peer a master asks its peers for WACK frames
 *       (repl_proto.h). A standby sends WACK for a position only once
 *       txn_commit() has returned for every record up to it, i.e. once
 *       they are written to its own log (repl_receiver.c asserts that
 *       nothing is left staged); its ACK still waits until they are
 *       durable there. A peer is linked to the log (ulog.h U11) from its
 *       first WACK to the end of its session, and only an authenticated
 *       session (repl_auth.h) reaches the point where WACKs are read.
 *   R6. A peer that restarts after an unclean stop (under a policy other
 *       than always) asks for its own records back (REPL_FLAG_OWN): in
 *       that session the sender also sends the records that originated
 *       at the peer, up to this log's end when the session began. The
 *       ones a power cut took from the peer's log (the writes of its
 *       last N ms, answered on our report under -fsync peer) reach it
 *       again; the ones it still holds are not newer than themselves
 *       (record_newer) and change nothing.
 *   R7. A snapshot, a peer's or a backup's, carries the flush_all state
 *       read when its walk starts: right after SNAP_BEGIN, a FLUSH record
 *       (seq 0, the snapshot's lsn, this server's sid) of the applied
 *       point and one of a pending delayed flush, if any. A standby logs
 *       and applies them like any FLUSH, so it hides what the master
 *       hides, its own older copies included; a backup writes them to its
 *       .flush file. The items that state hides are left out as in R4.
 *
 * Thread-safety: repl_sender_accept() and the query functions may be
 * called from any thread.
 */
#ifndef KURA_REPL_SENDER_H
#define KURA_REPL_SENDER_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "log.h"
#include "repl_auth.h"
#include "repl_proto.h"
#include "store.h"
#include "tls.h"
#include "txn.h"
#include "ulog.h"

#define REPL_MAX_PEERS 16

/* A peer as seen from this server. */
struct repl_peer_stats {
    uint32_t sid;
    bool connected;
    uint64_t acked_lsn;   /* this log's lsn the peer has made durable */
    uint64_t acked_seq;
    uint64_t sent;        /* records sent in the current connection */
    uint64_t resyncs;     /* full resynchronisations served */
};

struct repl_sender;

/*
 * Creates the sender side for log `ulog` over `store`, serving as server
 * `sid`; known peers are loaded from <ulog dir>/peers. `durable_only`
 * sends only records the fsync policy has made durable. Peers are
 * admitted under `auth` (repl_auth.h; borrowed, must outlive the sender).
 * Returns NULL with a reason in `err` on failure.
 */
struct repl_sender *repl_sender_create(struct ulog *ulog, struct store *store,
                                       const char *ulog_dir, uint32_t sid,
                                       bool durable_only,
                                       const struct repl_auth *auth,
                                       struct logger *log, char *err,
                                       size_t errlen);

/*
 * Gives the sender the write path's flush_all state (txn.h) for R4. Call
 * before the first connection; `eng` must outlive the sender. Without it
 * a backup's snapshot includes items a flush_all hid.
 */
void repl_sender_set_engine(struct repl_sender *m, struct txn_engine *eng);

/*
 * Calls `fn(arg)` from the follower's thread each time an authenticated
 * peer has said where it follows from: a restarted peer is back. Call
 * before the first connection; `arg` must outlive the sender. `fn` must
 * not block.
 */
void repl_sender_on_follower(struct repl_sender *m,
                             void (*fn)(void *arg), void *arg);

/*
 * Takes over `fd`, a connection whose first line was "REPL <args>", and
 * serves it on a new thread; `tls` is its TLS session, or NULL in
 * plaintext. Returns 0, or -1 (the caller closes `fd`). The session is
 * this module's either way.
 */
int repl_sender_accept(struct repl_sender *m, int fd, struct tls_session *tls,
                       const char *args, size_t args_len);

/*
 * Lowest lsn every known peer has acknowledged, and every backup in
 * progress needs (R3); UINT64_MAX when there is neither. Segments and
 * tombstones past it are kept.
 */
uint64_t repl_sender_acked(struct repl_sender *m);

/* Copies up to `max` peers' figures into `out`; returns the count. */
int repl_sender_stats(struct repl_sender *m, struct repl_peer_stats *out,
                      int max);

/* Disconnects every peer, joins the threads and frees `m`. NULL-safe. */
void repl_sender_destroy(struct repl_sender *m);

#endif
