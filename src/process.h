/*
 * process: memcached command semantics over the write path.
 *
 * The only module that knows both the protocol (requests in, replies out)
 * and storage (records through txn.h). It decides what each command does to
 * a key under memcached's rules (flags, exptime, cas, noreply, flush_all)
 * and which result that earns, whichever protocol carried the request
 * (proto.h); reply.h writes the result in that protocol. Files:
 *   process.c        dispatch, authentication, the classic commands
 *   process_meta.c   mg, ms, md, ma, me (stale items, recache tokens)
 *   process_stats.c  stats and its subcommands
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

#include "access.h"
#include "auth.h"
#include "buf.h"
#include "conntab.h"
#include "detail.h"
#include "proto.h"
#include "reply.h"
#include "settings.h"
#include "stats.h"
#include "txn.h"

struct stats_snapshot; /* stats_snapshot.h */

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
    const struct auth *auth;     /* -auth; disabled when not given */
    struct access_table *access; /* recent reads, meta h and l */
    struct detail *detail;       /* stats detail; NULL: not kept */
    struct conntab *conntab;     /* stats conns; NULL: not kept */
};

/* One connection's state across its requests. */
struct process_session {
    bool authenticated;
    bool sasl_started; /* a SASL auth without data awaits its step */
};

/* One worker's processing state. */
struct process_ctx {
    const struct process_env *env;
    struct txn_batch *batch;
    struct stats_counters *stats;
    struct reply_http_date http_date; /* the worker's HTTP Date cache */
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
 * Executes `req` for the connection whose state is `sess` and appends its
 * reply to `out` (nothing when the protocol's quiet form says so).
 * `*cursor` must be 0 for a new request; multi-key gets advance it and
 * return PROCESS_MORE once `out` holds more than `watermark` bytes.
 */
enum process_result process_request(struct process_ctx *ctx,
                                    struct process_session *sess,
                                    const struct proto_request *req,
                                    size_t *cursor, struct buf *out,
                                    size_t watermark);

/*
 * Answers a request the parser rejected with `st` (PROTO_EREQ or
 * PROTO_ECLOSE) on the connection whose state is `sess` (an unknown
 * binary opcode before authenticating is refused as any command then
 * is), with the side effects memcached has: a "set" rejected as
 * too large also removes the key's old value. `req` is the parser's
 * partial request. Returns PROCESS_CLOSE when the connection must end
 * after the answer (always after PROTO_ECLOSE).
 */
enum process_result process_error(struct process_ctx *ctx,
                                  struct process_session *sess,
                                  const struct proto_parser *p,
                                  enum proto_status st,
                                  const struct proto_request *req,
                                  struct buf *out);

#endif
