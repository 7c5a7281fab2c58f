/*
 * load: bulk loading of "key<TAB>value" lines over the memcached protocol,
 * and a generator of seed 002's last-login records to load.
 *
 * The loader is the network counterpart of Tokyo Cabinet's own importer:
 * it goes through the server, so every record is logged and replicated
 * like any other write. A few connections each keep a window of pipelined
 * sets in flight; the file is read sequentially through one buffer, never
 * whole, so files of hundreds of megabytes load in constant memory.
 */
#ifndef KURA_LOAD_H
#define KURA_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include "tls.h"

struct load_opts {
    const char *path;        /* the TSV file; "-" for standard input */
    const char *host;
    int port;
    int conns;               /* connections (default 4) */
    int window;              /* sets in flight per connection (default 256) */
    int64_t exptime;         /* memcached exptime of every record (0 none) */
    struct tls_ctx *tls;     /* --tls: connect over TLS; NULL: plaintext */
};

struct load_result {
    uint64_t records;        /* records sent (well-formed lines) */
    uint64_t stored;         /* answered STORED */
    uint64_t errors;         /* malformed lines, other replies, lost sets */
    uint64_t bytes;          /* bytes of the file read */
    double seconds;
    double records_per_s;    /* stored per second */
};

/*
 * Loads the file of `o` into `o->host`:`o->port` and fills `r`. A line is
 * "key<TAB>value" (a trailing CR is dropped; empty lines are skipped); the
 * key must be 1..250 bytes with no spaces or control characters. Each key
 * goes to one connection chosen by its hash, so when a key appears twice
 * the later line wins. The first few errors are described on standard
 * error. Returns 0 if the whole file was sent and answered (r->errors may
 * still be non-zero), -1 if the file could not be read or a connection was
 * lost or went silent (the load stops there).
 */
int load_run(const struct load_opts *o, struct load_result *r);

/*
 * Writes `n` last-login records "u:<id>\t<10-digit unix time>" for ids
 * 0..n-1 to `path` ("-" for standard output), truncating it. Each time is
 * a fixed pseudo-random point in the 30 days before `start_time`, so the
 * same arguments always give the same file. `start_time` must lie in
 * [30 days, 9999999999]. A `value_size` above 10 pads each value with
 * 'x' to that many bytes (larger records with the same keys; at most
 * LOAD_VALUE_MAX). Returns 0, or -1 with a reason in `err` (`errlen`
 * bytes).
 */
#define LOAD_VALUE_MAX ((size_t)1 << 20)
int load_generate(const char *path, uint64_t n, int64_t start_time,
                  size_t value_size, char *err, size_t errlen);

/*
 * Runs `kura load FILE [--host H] [--port P] [--conns N] [--window W]
 * [--exptime S]` or `kura load --generate N --out FILE [--start-time T] [--value-size B]`;
 * argv[0] is "load". Returns the exit status: 0 success, 1 any error,
 * 2 usage error.
 */
int load_cmd(int argc, char **argv);

#endif
