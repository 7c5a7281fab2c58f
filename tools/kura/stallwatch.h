/*
 * stallwatch: does the server freeze while its data grows? (seed 004)
 *
 * The test that caught MongoDB on ext3 stalling for seconds while it
 * preallocated files, repeated against a memcached-protocol server: one
 * connection inserts `count` fresh keys of `value_size` bytes, one request
 * at a time, while a second connection on its own thread sends `version`
 * once a second. Every operation slower than the threshold is reported the
 * moment it completes; the run ends with latency percentiles.
 */
#ifndef KURA_STALLWATCH_H
#define KURA_STALLWATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "tls.h"

struct stallwatch_opts {
    const char *host;
    int port;
    uint64_t count;          /* inserts (800,000 in the seed) */
    size_t value_size;       /* bytes per value (1 KiB in the seed) */
    unsigned threshold_ms;   /* report operations slower than this */
    struct tls_ctx *tls;     /* --tls: both connections; NULL: plaintext */
};

struct stallwatch_result {
    uint64_t inserts;        /* inserts answered STORED */
    uint64_t errors;         /* other replies, timeouts, lost connections */
    double seconds;
    double ops_per_s;
    uint64_t p50_us;         /* insert latency */
    uint64_t p99_us;
    uint64_t p999_us;
    uint64_t max_us;
    uint64_t probes;         /* probes answered */
    uint64_t probe_max_us;
    uint64_t over_threshold; /* inserts and probes slower than the threshold */
    uint64_t worst_us;       /* the slowest operation of either kind */
    bool worst_is_probe;
    uint64_t worst_index;    /* its number (insert #, probe #), from 1 */
    double worst_at_s;       /* when it started, seconds into the run */
};

/*
 * Runs the test described by `o` and fills `r`. Each slow operation is
 * printed to `stalls` as it happens ("stall: insert #12345 took 812 ms at
 * +63.2 s"), and errors to standard error. Returns 0 if the run took
 * place (even with stalls or errors, which `r` counts), or -1 if the
 * server could not be reached at all.
 */
int stallwatch_run(const struct stallwatch_opts *o,
                   struct stallwatch_result *r, FILE *stalls);

/*
 * Runs `kura stallwatch [--host H] [--port P] [--count N] [--value-size B]
 * [--threshold-ms T] [--json]`; argv[0] is "stallwatch". Prints a summary
 * (one JSON object with --json, in which case stall lines go to standard
 * error). Returns the exit status: 0 no operation over the threshold and
 * no error, 1 otherwise, 2 on usage errors.
 */
int stallwatch_cmd(int argc, char **argv);

#endif
