/*
 * verify: proves, after the fact, that no acknowledged write was lost.
 *
 * `kura bench --ack-log FILE` logs every write a server acknowledged as
 * "<prefix>c<conn>:<n> <seq>", where the value written was <seq> (zero
 * padded) and a connection's sequence numbers only grow. After a kill -9,
 * a failover or a replication run, `kura verify` reads that log back, keeps
 * the highest acknowledged sequence number of every key, fetches every key
 * from each server and classifies it:
 *
 *   ok        stored sequence >= highest acknowledged (a later write that
 *             was sent but never acknowledged may have landed)
 *   stale     stored sequence older than acknowledged (or not a number)
 *   missing   the key is not there at all
 */
#ifndef KURA_VERIFY_H
#define KURA_VERIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tls.h"

#define VERIFY_MAX_BAD 10   /* bad keys remembered per server for display */

/* The highest acknowledged sequence number per key (opaque). */
struct verify_acks;

enum verify_kind {
    VERIFY_STALE,
    VERIFY_MISSING,
};

struct verify_bad {
    enum verify_kind kind;
    char key[300];
    uint64_t acked;          /* highest acknowledged sequence number */
    uint64_t stored;         /* what the server holds (stale only) */
    bool not_a_number;       /* stale because the value is not digits */
};

struct verify_report {
    uint64_t keys;
    uint64_t ok;
    uint64_t stale;
    uint64_t missing;
    struct verify_bad bad[VERIFY_MAX_BAD]; /* the first few, in key order */
    int nbad;
    bool failed;             /* the check could not finish; see `error` */
    char error[256];
};

/*
 * Reads the ack log at `path` into a new table in `*out`. Every line must
 * be "<prefix>c<conn>:<n> <seq>" with the same prefix, canonical decimal
 * numbers and seq >= 1; a last line without its newline (a log cut short)
 * is used if it parses and skipped with a warning otherwise. Returns 0, or
 * -1 with a message naming the file and line in `err` (`errlen` bytes),
 * leaving `*out` NULL. The caller frees the table with verify_acks_free().
 */
int verify_acks_load(const char *path, struct verify_acks **out, char *err,
                     size_t errlen);

/* Number of distinct keys in `a`. */
uint64_t verify_acks_keys(const struct verify_acks *a);

/* Frees `a` (NULL is fine). */
void verify_acks_free(struct verify_acks *a);

/*
 * Fetches every key of `a` from `host`:`port` (over TLS with `tls`) with
 * pipelined multi-key gets over a few connections and fills `r`. Returns 0 if every key was
 * classified (r->failed false), -1 if the server could not be reached or
 * stopped answering properly (r->failed true, r->error says why).
 */
int verify_server(const struct verify_acks *a, const char *host, int port,
                  struct tls_ctx *tls, struct verify_report *r);

/*
 * Runs `kura verify --ack-log FILE [--host H] --port P [--port P2 ...]`;
 * argv[0] is "verify". Prints one summary line per server and the first
 * few bad keys. Returns the exit status: 0 every server holds every
 * acknowledged write, 1 a key is stale or missing or a server could not
 * be checked, 2 usage error or unusable log.
 */
int verify_cmd(int argc, char **argv);

#endif
