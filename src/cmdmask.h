/*
 * cmdmask: which commands a server refuses (-mask / -unmask).
 *
 * Expressions are ttserver's: names separated by spaces or commas, case
 * insensitive, or a 0x-prefixed bit mask. -mask adds to the set of refused
 * commands and -unmask removes from it, applied left to right, so
 * "-mask allwrite -unmask put" refuses every write except set.
 *
 * Accepted names:
 *   memcached commands   set add replace append prepend cas get gets gat
 *                        gats delete incr decr touch flush_all stats
 *                        verbosity
 *   ttserver commands    put (set, replace, cas), putkeep (add), putcat
 *                        (append, prepend), out (delete), get and mget (the
 *                        get family), addint (incr, decr), vanish
 *                        (flush_all), stat (stats), misc (touch)
 *   replication          repl (serving the update log to peers), slave
 *                        (pulling from -mhost)
 *   groups               all, allmc, allread, allwrite, allmanage
 * ttserver names with no memcached counterpart (putshl, putnr, vsiz,
 * iterinit, iternext, fwmkeys, adddouble, ext, sync, optimize, copy,
 * restore, setmst, rnum, size, allorg, allhttp) are accepted and have no
 * effect, so existing ttserver command lines keep working.
 *
 * Pure; any thread.
 */
#ifndef KURA_CMDMASK_H
#define KURA_CMDMASK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

/* Serving the update log to peers is the REPL command's bit. */
#define CMDMASK_REPL ((uint64_t)1 << PROTO_CMD_REPL)
/* Past the protocol commands: replicating from -mhost. */
#define CMDMASK_SLAVE ((uint64_t)1 << 41)

/* The bit of a protocol command. */
static inline uint64_t
cmdmask_bit(enum proto_cmd cmd)
{
    return (uint64_t)1 << (unsigned)cmd;
}

/*
 * Applies `expr` to `*mask`: sets its bits, or clears them if `unmask`.
 * Returns true, or false with the offending name in `err` (`errlen`).
 */
bool cmdmask_apply(uint64_t *mask, const char *expr, bool unmask, char *err,
                   size_t errlen);

/* True if `cmd` is allowed under `mask`. */
static inline bool
cmdmask_allows(uint64_t mask, enum proto_cmd cmd)
{
    return (mask & cmdmask_bit(cmd)) == 0;
}

/*
 * Writes the names of the refused commands, comma separated, into `out`
 * (`outlen` bytes; "none" when nothing is refused).
 */
void cmdmask_format(uint64_t mask, char *out, size_t outlen);

#endif
