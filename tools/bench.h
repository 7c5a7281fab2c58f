/*
 * bench: closed-loop memcached-protocol load generator (see bench.c).
 */
#ifndef KURA_BENCH_H
#define KURA_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bench_opts {
    const char *host;
    int port;
    int conns;             /* concurrent connections */
    int pipeline;          /* requests in flight per connection (<= 64) */
    uint64_t keyspace;     /* keys are <prefix><0..keyspace-1> */
    const char *prefix;    /* key prefix, "u:" by default */
    int read_pct;          /* percentage of gets */
    size_t value_size;     /* 10 = a 10-digit timestamp */
    double duration_s;     /* stop after this long (0 = use ops) */
    uint64_t ops;          /* stop after this many (0 = use duration) */
    bool connect_per_request;
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
};

/* Runs the load described by `o`. Returns 0, or -1 if it could not start. */
int bench_run(const struct bench_opts *o, struct bench_result *r);

#endif
