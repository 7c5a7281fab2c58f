/*
 * process_auth: authentication (process_members.h): what a connection may
 * do before it authenticates, memcached's text token (-Y) and binary SASL
 * PLAIN (-S), both against the -auth file (auth.h).
 */
#include "process_members.h"

#include <string.h>
#include <strings.h>

/*
 * What an unauthenticated connection may do: authenticate, ask the
 * version, quit, and (a replication peer) ask for the log, which proves
 * itself with its own key.
 */
bool
process_allowed_before_auth(const struct proto_request *req)
{
    switch (req->cmd) {
    case PROTO_CMD_VERSION:
    case PROTO_CMD_QUIT:
    case PROTO_CMD_REPL:
    case PROTO_CMD_SASL_LIST:
    case PROTO_CMD_SASL_AUTH:
    case PROTO_CMD_SASL_STEP:
        return true;
    default:
        return false;
    }
}

/*
 * A text "set" whose data is "<user> <password>" (memcached's -Y): its
 * key, flags and exptime are ignored, nothing is stored, and it is
 * answered even with noreply.
 */
static enum process_result
_text_auth(struct process_ctx *ctx, struct process_session *sess,
           const struct proto_request *req, struct buf *out)
{
    stats_incr(ctx->stats, STATS_AUTH_CMDS);
    enum auth_result r = auth_text(ctx->env->auth, req->value, req->vlen);
    if (r == AUTH_OK) {
        sess->authenticated = true;
        return process_result_of(reply_text_code(out, REPLY_STORED));
    }
    stats_incr(ctx->stats, STATS_AUTH_ERRORS);
    return process_result_of(reply_text_code(
        out, r == AUTH_MALFORMED ? REPLY_AUTH_MALFORMED : REPLY_AUTH_FAILED));
}

/*
 * Binary SASL with PLAIN, the one mechanism offered: in one auth, or an
 * auth without data (answered AUTH_CONTINUE) and then a step. As with
 * memcached's Cyrus SASL, a new auth on an authenticated connection
 * starts over: if it fails, the connection is no longer authenticated.
 */
enum process_result
process_sasl(struct process_ctx *ctx, struct process_session *sess,
      const struct proto_request *req, struct buf *out)
{
    if (!ctx->env->auth->enabled) {
        return process_result_of(reply_result(out, req, REPLY_ERROR, NULL));
    }
    if (req->cmd == PROTO_CMD_SASL_LIST) {
        return process_result_of(reply_sasl_mechs(out, req, "PLAIN"));
    }
    bool plain = req->nkey == 5 && strncasecmp(req->key, "PLAIN", 5) == 0;
    bool was_started = sess->sasl_started;
    bool was_authenticated = sess->authenticated;
    sess->sasl_started = false;
    sess->authenticated = false;
    if (req->cmd == PROTO_CMD_SASL_AUTH && plain && req->vlen == 0 &&
        !was_authenticated) {
        sess->sasl_started = true;
        return process_result_of(reply_sasl(out, req, REPLY_SASL_CONTINUE));
    }
    stats_incr(ctx->stats, STATS_AUTH_CMDS);
    bool ok = plain && !was_authenticated &&
              (req->cmd == PROTO_CMD_SASL_AUTH || was_started) &&
              auth_plain(ctx->env->auth, req->value, req->vlen);
    if (!ok) {
        stats_incr(ctx->stats, STATS_AUTH_ERRORS);
    }
    sess->authenticated = ok;
    return process_result_of(
        reply_sasl(out, req, ok ? REPLY_SASL_OK : REPLY_SASL_FAILED));
}

/*
 * A request on a connection that has not authenticated: a text "set"
 * is an attempt; anything else is refused, in text with the connection
 * kept, in binary with AUTH_ERROR and a close, as memcached does.
 */
enum process_result
process_unauthenticated(struct process_ctx *ctx, struct process_session *sess,
                 const struct proto_request *req, struct buf *out)
{
    if (req->kind == PROTO_KIND_TEXT && req->cmd == PROTO_CMD_SET) {
        return _text_auth(ctx, sess, req, out);
    }
    if (req->kind != PROTO_KIND_BINARY) {
        return process_result_of(reply_text_code(out, REPLY_UNAUTHENTICATED));
    }
    struct proto_request loud = *req;
    loud.noreply = false; /* a quiet opcode is refused aloud */
    return reply_result(out, &loud, REPLY_UNAUTHENTICATED, NULL)
               ? PROCESS_CLOSE
               : PROCESS_FATAL;
}
