/*
 * process: memcached command semantics over the write path.
 *
 * The only module that knows both the protocol (requests in, replies out)
 * and storage (records through txn.h). It decides what each command does to
 * a key under memcached's rules (flags, exptime, cas, noreply, flush_all)
 * and which reply that earns; replies are appended to a caller's buffer.
 *
 * Replies to writes are written when the change is staged, before it is
 * durable. The caller must not send them until the batch has committed
 * (txn.h, T3); if the commit fails the batch's abort callback names the
 * owner whose output must be dropped.
 *
 * Thread-safety: a process_ctx belongs to one worker thread; the env is
 * shared and read-only.
 */
#ifndef KURA_PROCESS_H
#define KURA_PROCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "proto.h"
#include "settings.h"
#include "stats.h"
#include "txn.h"

/* Shared, read-only context of every worker. */
struct process_env {
    struct txn_engine *eng;
    const struct settings *settings;
    /* Fills a snapshot of server-wide figures for `stats`. */
    void (*snapshot)(void *arg, struct stats_snapshot *out);
    /* Starts a new baseline for the counters (`stats reset`). */
    void (*reset)(void *arg);
    /* Applies `verbosity <level>`. */
    void (*set_verbosity)(void *arg, uint32_t level);
    void *arg;
};

/* One worker's processing state. */
struct process_ctx {
    const struct process_env *env;
    struct txn_batch *batch;
    struct stats_counters *stats;
};

enum process_result {
    PROCESS_DONE,  /* the request is finished */
    PROCESS_MORE,  /* output reached the watermark part-way through a
                      multi-key get; call again with the same request and
                      cursor once the output has drained */
    PROCESS_CLOSE, /* send what is queued, then close (quit) */
    PROCESS_FATAL, /* the reply could not be buffered; close now */
    PROCESS_HANDOFF, /* a replication peer: hand the socket to repl */
};

/*
 * Executes `req` and appends its reply to `out` (nothing with noreply).
 * `*cursor` must be 0 for a new request; multi-key gets advance it and
 * return PROCESS_MORE once `out` holds more than `watermark` bytes.
 */
enum process_result process_request(struct process_ctx *ctx,
                                    const struct proto_request *req,
                                    size_t *cursor, struct buf *out,
                                    size_t watermark);

/*
 * Answers a request the parser rejected (PROTO_EREQ/PROTO_ECLOSE), with the
 * side effects memcached has: a "set" rejected as too large also removes
 * the key's old value. `req` is the parser's partial request.
 */
enum process_result process_error(struct process_ctx *ctx,
                                  const struct proto_parser *p,
                                  const struct proto_request *req,
                                  struct buf *out);

#endif
