/*
 * process: the front of command processing (process.h). It only
 * dispatches: the authentication gate and -mask, then each command to the
 * member that handles it (process_members.h: classic, auth, meta, stats,
 * http), and a parser's refusal to its answer. Members share the helpers
 * of process_base.c and never call back here.
 */
#include "process_members.h"

#include "cmdmask.h"

enum process_result
process_request(struct process_ctx *ctx, struct process_session *sess,
                const struct proto_request *req, size_t *cursor,
                struct buf *out, size_t watermark)
{
    if (req->kind == PROTO_KIND_HTTP) {
        return process_http(ctx, req, out); /* its own auth and -mask */
    }
    const struct auth *auth = ctx->env->auth;
    if (auth != NULL && auth->enabled && !sess->authenticated &&
        !process_allowed_before_auth(req)) {
        return process_unauthenticated(ctx, sess, req, out);
    }
    if (!cmdmask_allows(ctx->env->settings->mask, proto_class(req))) {
        stats_incr(ctx->stats, STATS_CMD_DENIED);
        if (req->cmd == PROTO_CMD_REPL) {
            return reply_text_code(out, REPLY_REPL_DENIED) ? PROCESS_CLOSE
                                                           : PROCESS_FATAL;
        }
        return process_result_of(reply_denied(out, req));
    }
    switch (req->cmd) {
    case PROTO_CMD_GET:
    case PROTO_CMD_GETS:
    case PROTO_CMD_GAT:
    case PROTO_CMD_GATS:
        return process_get(ctx, req, cursor, out, watermark);
    case PROTO_CMD_SET:
    case PROTO_CMD_ADD:
    case PROTO_CMD_REPLACE:
    case PROTO_CMD_APPEND:
    case PROTO_CMD_PREPEND:
    case PROTO_CMD_CAS:
        return process_store(ctx, req, out);
    case PROTO_CMD_DELETE:
        return process_delete(ctx, req, out);
    case PROTO_CMD_INCR:
    case PROTO_CMD_DECR:
        return process_arith(ctx, req, out);
    case PROTO_CMD_TOUCH:
        return process_touch(ctx, req, out);
    case PROTO_CMD_FLUSH_ALL:
        return process_flush_all(ctx, req, out);
    case PROTO_CMD_VERSION:
        return process_result_of(reply_version(out, req));
    case PROTO_CMD_VERBOSITY:
        ctx->env->set_verbosity(ctx->env->arg, req->level);
        return process_result_of(reply_result(out, req, REPLY_OK, NULL));
    case PROTO_CMD_NOOP:
        return process_result_of(reply_noop(out, req));
    case PROTO_CMD_SHUTDOWN:
        return process_result_of(reply_text_code(out, REPLY_NO_SHUTDOWN));
    case PROTO_CMD_MEMLIMIT:
        return process_result_of(process_memlimit(req, out));
    case PROTO_CMD_SLABS:
        return process_result_of(process_slabs(req, out));
    case PROTO_CMD_QUIT:
        /* A binary quit is answered (quitq is not); text just closes. */
        if (req->kind == PROTO_KIND_BINARY &&
            !reply_result(out, req, REPLY_OK, NULL)) {
            return PROCESS_FATAL;
        }
        return PROCESS_CLOSE;
    case PROTO_CMD_STATS:
        return process_stats(ctx, req, out);
    case PROTO_CMD_REPL:
        return PROCESS_HANDOFF;
    case PROTO_CMD_MG:
    case PROTO_CMD_MS:
    case PROTO_CMD_MD:
    case PROTO_CMD_MA:
    case PROTO_CMD_ME:
        return process_meta(ctx, req, out);
    case PROTO_CMD_SASL_LIST:
    case PROTO_CMD_SASL_AUTH:
    case PROTO_CMD_SASL_STEP:
        return process_sasl(ctx, sess, req, out);
    default:
        return process_result_of(reply_result(out, req, REPLY_ERROR, NULL));
    }
}

enum process_result
process_error(struct process_ctx *ctx, struct process_session *sess,
              const struct proto_parser *p, enum proto_status st,
              const struct proto_request *req, struct buf *out)
{
    const struct auth *auth = ctx->env->auth;
    if (auth != NULL && auth->enabled && !sess->authenticated &&
        p->error == PROTO_ERR_BIN_UNKNOWN) {
        return process_unauthenticated(ctx, sess, req, out);
    }
    bool closes = st == PROTO_ECLOSE;
    if (p->error == PROTO_ERR_BAD_CHUNK && req->nkey > 0 &&
        req->cmd != PROTO_CMD_MS) {
        /* memcached counts the set before it reads the data */
        process_detail(ctx, req, req->key, req->nkey, 's', false);
    }
    if (p->error == PROTO_ERR_TOO_LARGE) {
        stats_incr(ctx->stats, STATS_STORE_TOO_LARGE);
        if (req->nkey > 0) {
            process_detail(ctx, req, req->key, req->nkey, 's', false);
        }
        /*
         * memcached drops the old value of a set it could not store, so
         * a reader never sees data the client meant to replace; an ms
         * drops it whatever its mode.
         */
        bool is_set = p->error_cmd == PROTO_CMD_SET ||
                      p->error_cmd == PROTO_CMD_MS;
        if (is_set && req->nkey > 0 &&
            cmdmask_allows(ctx->env->settings->mask, PROTO_CMD_SET)) {
            struct txn_current cur;
            if (txn_begin_key(ctx->batch, req->key, req->nkey, &cur) ==
                    TXN_OK &&
                cur.found) {
                txn_stage_remove(ctx->batch, req->key, req->nkey);
            }
            txn_current_release(&cur);
        }
    }
    if (p->error_noreply) {
        return closes ? PROCESS_CLOSE : PROCESS_DONE;
    }
    bool ok = reply_proto_error(out, req, p);
    if (closes) {
        return ok ? PROCESS_CLOSE : PROCESS_FATAL;
    }
    return process_result_of(ok);
}
