/*
 * bench: closed-loop memcached-protocol load generator (see bench.c).
 *
 * With `ack_log` set it runs in own-keys mode: every connection writes
 * only its own keys and every acknowledged write is logged, so that
 * `kura verify` can later prove that no acknowledged write was lost.
 */
#ifndef KURA_BENCH_H
#define KURA_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench_wire.h"
#include "tls.h"

struct bench_opts {
    const char *host;
    int port;
    int conns;             /* concurrent connections */
    int pipeline;          /* requests in flight per connection (<= 64) */
    enum client_proto proto; /* text (default), binary or meta */
    int multiget;          /* > 0: every get asks for this many keys at
                            * once (text get k1..kN, binary getkq..noop,
                            * meta mg..q..mn); 0: one key per get */
    uint64_t keyspace;     /* keys are <prefix><0..keyspace-1> */
    double zipf;           /* > 0: keys follow a Zipf distribution of this
                            * exponent over the key space, its ranks
                            * scattered over the keys (YCSB's scrambled
                            * Zipf); 0: uniform */
    bool fresh;            /* sets store keys no run used yet:
                            * <prefix><fresh_from>, <prefix><fresh_from+1>,
                            * ... in order, each once */
    uint64_t fresh_from;
    const char *prefix;    /* key prefix, "u:" by default */
    int read_pct;          /* percentage of gets */
    size_t value_size;     /* 10 = a 10-digit timestamp */
    double duration_s;     /* stop after this long (0 = use ops) */
    uint64_t ops;          /* stop after this many (0 = use duration) */
    bool connect_per_request;
    bool quit;             /* connect mode: end with "quit" (binary: quitq),
                            * server closes */
    /* Own-keys mode (NULL = off): keys are <prefix>c<conn>:<n>, n cycling
     * over `own_keys` per connection; each value is the write's sequence
     * number on its connection, zero-padded to value_size (at least 10
     * digits). Every write acknowledged (STORED, HD, a binary success) is
     * appended to this file as "<key> <seq>\n". The file is truncated
     * first. */
    const char *ack_log;
    uint64_t own_keys;     /* keys per connection in own-keys mode */
    struct tls_ctx *tls;   /* --tls: every connection does a TLS handshake
                            * first (counted as opening, like the TCP one);
                            * NULL: plaintext */
    double warmup_s;       /* with duration_s: run this long first, and
                            * on until every connection is open (at most
                            * 2 minutes more), counting nothing of it: a
                            * ramp of 10,000 handshakes is not the
                            * steady state */
};

struct bench_result {
    uint64_t ops;
    uint64_t errors;
    uint64_t connects;
    double seconds;
    double ops_per_s;
    uint64_t p50_us;
    uint64_t p99_us;
    uint64_t p999_us;
    uint64_t max_us;
    uint64_t keys;         /* keys asked for by gets (N per multi-get) */
    uint64_t hits;         /* values those gets returned */
    uint64_t acked;        /* own-keys mode: writes logged as acknowledged */
    uint64_t cpu_us;       /* this thread's CPU while counting (after any
                            * warm-up) */
    uint64_t tls_handshakes; /* TLS handshakes completed */
    uint64_t tls_resumed;    /* ... of which resumed a session */
};

/*
 * Runs the load described by `o` and fills `r`. First raises the open
 * file limit to fit `o->conns`. Returns 0, or -1 (with a message on
 * standard error) if it could not start: unresolvable host, descriptor
 * limit too low, or an ack log that cannot be created. Errors during the
 * run (unexpected replies, dropped connections, failed ack-log writes)
 * are counted in r->errors instead.
 */
int bench_run(const struct bench_opts *o, struct bench_result *r);

#endif
