/*
 * bench_ack: the ack log of `kura bench --ack-log`: every write the
 * server acknowledged, as "<key> <seq>\n", so that `kura verify` can
 * later prove none was lost.
 *
 * Lines are buffered and appended to the file at least once a second
 * (ACK_FLUSH_NS in bench.c), so a bench killed mid-run loses at most the
 * last second of its log: the log stays a true, if shorter, list of
 * acknowledged writes. A failed write stops the logging for good. One
 * thread.
 */
#ifndef KURA_BENCH_ACK_H
#define KURA_BENCH_ACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench_keys.h"

struct bench_ack {
    int fd;                 /* -1 when not open */
    const char *path;
    char *buf;
    size_t len;
    uint64_t flushed_ns;    /* when the buffer was last written */
    uint64_t lines;         /* writes logged */
    bool failed;            /* a write failed: logging stopped */
};

/*
 * Creates (truncates) the log at `path`. Returns 0, or -1 after saying
 * why on standard error. `a->fd` is -1 until then.
 */
int bench_ack_open(struct bench_ack *a, const char *path, uint64_t now_ns);

/*
 * Logs that own key `n` of connection `conn` (bench_keys_own()) was
 * written as number `seq` and acknowledged. Returns false if the buffer
 * had to be written and that failed (logging then stops).
 */
bool bench_ack_append(struct bench_ack *a, const struct bench_keys *k,
                      int conn, uint64_t n, uint64_t seq, uint64_t now_ns);

/*
 * Writes the buffer to the file. Returns false if that failed just now
 * (said on standard error; logging stops).
 */
bool bench_ack_flush(struct bench_ack *a, uint64_t now_ns);

/*
 * Flushes and closes the log and frees the buffer. Returns false if a
 * write or the close failed just now. Safe when not open.
 */
bool bench_ack_close(struct bench_ack *a, uint64_t now_ns);

#endif
