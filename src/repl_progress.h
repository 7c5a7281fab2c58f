/*
 * repl_progress: which position in its master's log a standby may
 * acknowledge.
 *
 * The receiver applies what it receives in commits to its own log. Each
 * commit completes a master position (the last record it holds, or one
 * a heartbeat vouched for) and is at some local lsn. Once that local lsn
 * is durable on this machine, the master position may be acknowledged
 * and written to the -rts file. Pure bookkeeping: no I/O, no locks; the
 * receiver's thread owns it.
 *
 * Invariant (tests cite it):
 *   R8. The position a standby acknowledges, and writes to its -rts
 *       file, is one up to which everything it received is durable in
 *       its own log on this machine (a peer's report of its copy says
 *       nothing of this disk). A power cut of the standby then never
 *       leaves its -rts ahead of its log, and the master never removes a
 *       segment (U5) whose records the standby could still lose. When
 *       more commits wait than it keeps, the newest are merged into one,
 *       so a position may be acknowledged later than it could be, never
 *       earlier.
 */
#ifndef KURA_REPL_PROGRESS_H
#define KURA_REPL_PROGRESS_H

#include <stdint.h>

#define REPL_PROGRESS_KEEP 128 /* commits tracked before merging */

/* A master position in its log: lsn and dense seq (logrec.h). */
struct repl_position {
    uint64_t lsn;
    uint64_t seq;
};

struct repl_progress {
    struct {
        uint64_t local_lsn;      /* our log position of the commit */
        struct repl_position at; /* master position it completes */
    } wait[REPL_PROGRESS_KEEP];
    int nwait;
    struct repl_position durable; /* acknowledged so far */
};

/* Starts from `from`, the position the -rts file held. */
void repl_progress_init(struct repl_progress *p, struct repl_position from);

/*
 * Records that a commit at local lsn `local_lsn` (0 when it logged
 * nothing) completes master position `at`. Commits come in the order
 * they were made, so local lsns never go back; positions may (a new
 * session resumes from the acknowledged one), and the acknowledged
 * position never does.
 */
void repl_progress_commit(struct repl_progress *p, uint64_t local_lsn,
                          struct repl_position at);

/*
 * This machine's log is durable up to `local_durable` (UINT64_MAX when
 * every commit is durable once made: no log, or -uas): moves the
 * acknowledgeable position past every commit that lsn covers (R8) and
 * returns it.
 */
struct repl_position repl_progress_durable(struct repl_progress *p,
                                           uint64_t local_durable);

#endif
