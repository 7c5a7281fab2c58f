/*
 * repl_receiver: following a master (-mhost/-mport) as its standby.
 *
 * One thread connects to the master, asks for the records after the
 * position in the -rts file, applies each one through the write path
 * (txn_stage_replicated(): the newer (stamp, server id) wins, so a
 * master/master pair converges whatever order changes cross in), logs it
 * in this server's own update log, and acknowledges the position once it
 * is durable here (R8, repl_progress.h; every 100 ms while records
 * arrive). A second thread
 * writes that durable position to the -rts file about once a second,
 * replacing the file atomically; a restart resumes from it and receives
 * again, harmlessly, what came after it. If the master says the position
 * is gone, a full snapshot is applied first.
 * When the master is unreachable, the thread retries with backoff (100 ms
 * doubling to 5 s) while this server keeps serving; nothing else waits.
 * The backoff ends at once when the master connects back to us as a
 * follower (repl_receiver_peer_back): it has restarted, and may hold its
 * clients' port shut while it catches up (repl_receiver_first), so for a
 * while the thread retries every 20 ms.
 *
 * Thread-safety: repl_receiver_stats() may be called from any thread.
 */
#ifndef KURA_REPL_RECEIVER_H
#define KURA_REPL_RECEIVER_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "log.h"
#include "netio.h"
#include "repl_auth.h"
#include "repl_proto.h"
#include "txn.h"
#include "ulog.h"

struct repl_receiver_stats {
    bool connected;
    uint32_t master_sid;
    uint64_t applied_lsn;   /* master lsn applied and durable here (rts) */
    uint64_t master_lsn;    /* master log end, from the last heartbeat */
    uint64_t lag_records;
    double lag_seconds;
    uint64_t received;      /* records received in total */
    uint64_t applied;       /* of which won and were applied */
    uint64_t resyncs;
    uint64_t connects;
    uint64_t connect_failures; /* attempts that reached no master */
    uint64_t wacks;         /* positions reported written (WACK, R5) */
    /* From the master's log append to applied here, per record: exact
     * when both servers share a clock, approximate with NTP. */
    uint64_t delay_p50_us;
    uint64_t delay_p99_us;
    uint64_t delay_max_us;
};

struct repl_receiver_options {
    char host[PATH_MAX];
    int port;
    uint32_t sid;
    char rts_path[PATH_MAX];
    size_t scratch_cap;     /* largest record read without a heap copy */
    const struct repl_auth *auth; /* borrowed; must outlive the receiver */
    bool own_back;          /* ask for our own records back (R6) until a
                               session has caught up once */
    struct tls_ctx *tls;    /* -mtls: the link's TLS client context
                               (borrowed); NULL: plaintext */
};

struct repl_receiver;

/*
 * Prepares replication from the master in `o`, applying through `eng`.
 * Reads the -rts file. Returns NULL with a reason in `err` on failure.
 */
struct repl_receiver *
repl_receiver_create(const struct repl_receiver_options *o,
                     struct txn_engine *eng, struct logger *log, char *err,
                     size_t errlen);

/* Starts the thread. Returns 0 or -1. */
int repl_receiver_start(struct repl_receiver *s);

/*
 * This server's durable position in the master's log: every change the
 * master logged at or below it has been applied here (T6).
 */
uint64_t repl_receiver_applied(struct repl_receiver *s);

/* How the first attempt to follow the master has ended. */
enum repl_receiver_first {
    REPL_RECEIVER_FIRST_PENDING = 0, /* connecting, or still catching up */
    REPL_RECEIVER_FIRST_CAUGHT_UP,   /* all the master had sent when it first
                                        said so (a heartbeat) is applied here */
    REPL_RECEIVER_FIRST_FAILED,      /* no master reached, or the session
                                        ended first (refused, closed, error) */
};

/*
 * The outcome of the first attempt after repl_receiver_start(): a server
 * restarted beside a live peer polls it to hold its clients until it
 * holds what the peer took meanwhile. Later sessions do not change it.
 * Never blocks on I/O; any thread.
 */
enum repl_receiver_first repl_receiver_first(struct repl_receiver *s);

/* Copies the current figures. */
void repl_receiver_stats(struct repl_receiver *s,
                         struct repl_receiver_stats *out);

/*
 * Tells the receiver that its master is reachable again (it has just
 * connected to us as a follower, so it restarted): while disconnected,
 * the receiver stops its backoff and reconnects now, so that writes taken
 * by the restarted server reach this one in milliseconds, not after the
 * rest of a pause of up to 5 s. Safe from any thread; never blocks on I/O.
 */
void repl_receiver_peer_back(struct repl_receiver *s);

/*
 * One session with the master over `io`, a connected stream (plaintext or
 * TLS): the handshake, then frames applied, logged and acknowledged until
 * the master closes the connection, refuses, sends garbage or is silent
 * for 5 s, or the receiver stops. The receiver's thread calls it for each
 * connection it makes (unit tests, over a socketpair); `io` stays the
 * caller's to close. Ends the first attempt (repl_receiver_first()) as
 * failed if it had not caught up. One session at a time per receiver.
 */
void repl_receiver_follow(struct repl_receiver *s, struct netio_stream *io);

#define REPL_RECEIVER_BACKOFF_MIN_MS 100
#define REPL_RECEIVER_BACKOFF_MAX_MS 5000

/*
 * The pause before the next reconnection, after one of `backoff` ms: back
 * to REPL_RECEIVER_BACKOFF_MIN_MS when the master came `back` during it;
 * unchanged while `soon` (the master came back a short while ago and is
 * retried every 20 ms meanwhile); otherwise doubled, up to
 * REPL_RECEIVER_BACKOFF_MAX_MS. Pure; any thread.
 */
unsigned repl_receiver_next_backoff(unsigned backoff, bool soon, bool back);

/* Stops the thread, persists the position and frees `s`. NULL-safe. */
void repl_receiver_destroy(struct repl_receiver *s);

/* How opening a session as a standby went (repl_receiver_handshake()). */
enum repl_receiver_hs {
    REPL_RECEIVER_HS_OK = 0,  /* `line` holds the master's answer */
    REPL_RECEIVER_HS_EIO,     /* no answer: timeout, closed or error */
    REPL_RECEIVER_HS_NOPROOF, /* we hold a key; the master proved none */
    REPL_RECEIVER_HS_NEEDKEY, /* the master wants a key we do not hold */
    REPL_RECEIVER_HS_BADPROOF, /* the master's proof is wrong: not our key */
};

/*
 * Opens a replication session on the connected stream `io` (plaintext or
 * TLS, netio.h) as a standby:
 * fills h->nonce, sends the hello `h` and, if the master challenges,
 * checks its proof and answers with ours (repl_auth.h, `auth` may be
 * disabled). A master without a key answers at once, which a standby
 * holding a key refuses. On REPL_RECEIVER_HS_OK, `line` (`cap` bytes;
 * REPL_LINE_MAX is enough) holds the master's answer, without the line
 * end: "REPL OK ...", "REPL RESYNC ...", "REPL BACKUP ..." or "REPL ERROR
 * ...". Each step waits at most `timeout_ms`. Used by the standby thread
 * and by `kura backup`; any thread.
 */
enum repl_receiver_hs repl_receiver_handshake(struct netio_stream *io,
                                              struct repl_hello *h,
                                              const struct repl_auth *auth,
                                              int timeout_ms, char *line,
                                              size_t cap);

#endif
