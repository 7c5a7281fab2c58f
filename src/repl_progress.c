/*
 * repl_progress: a standby's acknowledgeable position (see
 * repl_progress.h).
 */
#include "repl_progress.h"

#include <assert.h>
#include <string.h>

void
repl_progress_init(struct repl_progress *p, struct repl_position from)
{
    memset(p, 0, sizeof(*p));
    p->durable = from;
}

void
repl_progress_commit(struct repl_progress *p, uint64_t local_lsn,
                     struct repl_position at)
{
    /* Our log's lsns only grow (U1), so commits release in order. */
    assert(p->nwait == 0 || local_lsn == 0 ||
           local_lsn >= p->wait[p->nwait - 1].local_lsn);
    int i = p->nwait;
    if (i == REPL_PROGRESS_KEEP) {
        /* R8: merge into the newest, which then waits for the later
         * commit: late, never early. */
        i--;
        if (local_lsn < p->wait[i].local_lsn) {
            local_lsn = p->wait[i].local_lsn;
        }
    } else {
        p->nwait++;
    }
    p->wait[i].local_lsn = local_lsn;
    p->wait[i].at = at;
    assert(p->nwait <= REPL_PROGRESS_KEEP); /* R8: merged, not dropped */
}

struct repl_position
repl_progress_durable(struct repl_progress *p, uint64_t local_durable)
{
#ifndef NDEBUG
    struct repl_position was = p->durable;
#endif
    int done = 0;
    assert(p->nwait >= 0 && p->nwait <= REPL_PROGRESS_KEEP);
    while (done < p->nwait && p->wait[done].local_lsn <= local_durable) {
        /* R8: positions only move forward. */
        if (p->wait[done].at.lsn > p->durable.lsn) {
            p->durable.lsn = p->wait[done].at.lsn;
        }
        if (p->wait[done].at.seq > p->durable.seq) {
            p->durable.seq = p->wait[done].at.seq;
        }
        done++;
    }
    memmove(p->wait, p->wait + done,
            (size_t)(p->nwait - done) * sizeof(p->wait[0]));
    p->nwait -= done;
    /* R8: never back, and nothing durable is left waiting. */
    assert(p->durable.lsn >= was.lsn && p->durable.seq >= was.seq);
    assert(p->nwait == 0 || p->wait[0].local_lsn > local_durable);
    return p->durable;
}
