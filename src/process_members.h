/*
 * process_members: the command handlers process.c dispatches to, one file
 * per protocol or role, each on the helpers of process_base.h:
 *
 *   process_classic.c  get, storage, delete, incr/decr, touch, flush_all
 *                      (text and binary)
 *   process_auth.c     the authentication gate, text tokens, SASL
 *   process_meta.c     mg, ms, md, ma, me
 *   process_stats.c    stats and its subcommands, /-/metrics
 *   process_http.c     HTTP documents and /-/ (it asks process_stats.c
 *                      for the metrics)
 */
#ifndef KURA_PROCESS_MEMBERS_H
#define KURA_PROCESS_MEMBERS_H

#include "process_base.h"

/* ---------------------------------------------------- process_classic.c
 * Each executes `req` (of its command) and appends the reply to `out`;
 * PROCESS_DONE, or PROCESS_FATAL if the reply could not be buffered. */

/* get, gets, gat, gats (text); get, getk, gat, gatk and quiet (binary).
 * A multi-key get resumes at `*cursor` and returns PROCESS_MORE once
 * `out` holds more than `watermark` bytes. */
enum process_result process_get(struct process_ctx *ctx,
                                const struct proto_request *req,
                                size_t *cursor, struct buf *out,
                                size_t watermark);
/* set, add, replace, append, prepend, cas */
enum process_result process_store(struct process_ctx *ctx,
                                  const struct proto_request *req,
                                  struct buf *out);
enum process_result process_delete(struct process_ctx *ctx,
                                   const struct proto_request *req,
                                   struct buf *out);
/* incr, decr */
enum process_result process_arith(struct process_ctx *ctx,
                                  const struct proto_request *req,
                                  struct buf *out);
enum process_result process_touch(struct process_ctx *ctx,
                                  const struct proto_request *req,
                                  struct buf *out);
enum process_result process_flush_all(struct process_ctx *ctx,
                                      const struct proto_request *req,
                                      struct buf *out);
/* cache_memlimit: returns false if the reply could not be buffered. */
bool process_memlimit(const struct proto_request *req, struct buf *out);

/*
 * slabs automove and reassign (req->level, enum proto_slabs): kura has no
 * slab classes, so automove is acknowledged and changes nothing, and a
 * reassign names a class that does not exist (memcached's replies). Returns
 * false if `out` could not grow.
 */
bool process_slabs(const struct proto_request *req, struct buf *out);

/* ------------------------------------------------------- process_auth.c */

/* What an unauthenticated connection may do: authenticate, version, quit,
 * and a replication peer's REPL (it proves itself with its own key). */
bool process_allowed_before_auth(const struct proto_request *req);

/* Binary SASL (list mechanisms, auth, step) for the connection `sess`. */
enum process_result process_sasl(struct process_ctx *ctx,
                                 struct process_session *sess,
                                 const struct proto_request *req,
                                 struct buf *out);

/* A request on a connection not yet authenticated: a text set is an
 * attempt, anything else is refused (binary: refused and closed). */
enum process_result process_unauthenticated(struct process_ctx *ctx,
                                            struct process_session *sess,
                                            const struct proto_request *req,
                                            struct buf *out);

/* The meta commands (process_meta.c). */
enum process_result process_meta(struct process_ctx *ctx,
                                 const struct proto_request *req,
                                 struct buf *out);

/* stats [args] in the request's protocol (process_stats.c). */
enum process_result process_stats(struct process_ctx *ctx,
                                  const struct proto_request *req,
                                  struct buf *out);

/* HTTP requests (process_http.c). */
enum process_result process_http(struct process_ctx *ctx,
                                 const struct proto_request *req,
                                 struct buf *out);

/* GET /-/metrics: every stats figure in Prometheus' text format
 * (process_stats.c). */
enum process_result process_metrics_http(struct process_ctx *ctx,
                                         const struct proto_request *req,
                                         struct buf *out);

#endif
