/*
 * reply_bin: memcached binary protocol responses (see reply.h). Statuses,
 * their messages, cas, extras and quietness follow memcached 1.6: a quiet
 * opcode answers only errors (and a get's hits), an error carries its
 * message as the value.
 */
#include "reply_members.h"

#include <string.h>

#include "proto_bin.h"

static void
_put16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)v;
}

static void
_put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        p[i] = (unsigned char)(v >> (24 - 8 * i));
    }
}

static void
_put64(unsigned char *p, uint64_t v)
{
    _put32(p, (uint32_t)(v >> 32));
    _put32(p + 4, (uint32_t)v);
}

/* Appends one response: header, extras, key, value. */
static bool
_frame(struct buf *out, uint8_t opcode, uint16_t status, uint32_t opaque,
       uint64_t cas, const void *extras, size_t nextras, const void *key,
       size_t nkey, const void *value, size_t vlen)
{
    size_t body = nextras + nkey + vlen;
    if (!buf_reserve(out, PROTO_BIN_HEADER + body, REPLY_BUF_LIMIT)) {
        return false;
    }
    unsigned char *h = (unsigned char *)buf_tail(out);
    h[0] = PROTO_BIN_RESPONSE;
    h[1] = opcode;
    _put16(h + 2, (uint16_t)nkey);
    h[4] = (unsigned char)nextras;
    h[5] = 0;
    _put16(h + 6, status);
    _put32(h + 8, (uint32_t)body);
    _put32(h + 12, opaque);
    _put64(h + 16, cas);
    unsigned char *p = h + PROTO_BIN_HEADER;
    if (nextras > 0) {
        memcpy(p, extras, nextras);
        p += nextras;
    }
    if (nkey > 0) {
        memcpy(p, key, nkey);
        p += nkey;
    }
    if (vlen > 0) {
        memcpy(p, value, vlen);
    }
    buf_produce(out, PROTO_BIN_HEADER + body);
    return true;
}

/* An error response: the status and memcached's message for it. */
static bool
_error(struct buf *out, const struct proto_request *req, uint16_t status)
{
    const char *msg;
    switch (status) {
    case PROTO_BIN_KEY_ENOENT:
        msg = "Not found";
        break;
    case PROTO_BIN_KEY_EEXISTS:
        msg = "Data exists for key.";
        break;
    case PROTO_BIN_E2BIG:
        msg = "Too large.";
        break;
    case PROTO_BIN_EINVAL:
        msg = "Invalid arguments";
        break;
    case PROTO_BIN_NOT_STORED:
        msg = "Not stored.";
        break;
    case PROTO_BIN_DELTA_BADVAL:
        msg = "Non-numeric server-side value for incr or decr";
        break;
    case PROTO_BIN_AUTH_ERROR:
        msg = "Auth failure.";
        break;
    case PROTO_BIN_UNKNOWN_COMMAND:
        msg = "Unknown command";
        break;
    case PROTO_BIN_ENOMEM:
        msg = "Out of memory";
        break;
    case PROTO_BIN_NOT_SUPPORTED:
        msg = "Not supported";
        break;
    default:
        msg = "Internal error";
        break;
    }
    return _frame(out, req->opcode, status, req->opaque, 0, NULL, 0, NULL, 0,
                  msg, strlen(msg));
}

bool
reply_bin_result(struct buf *out, const struct proto_request *req,
                 enum reply_code code, const struct reply_item *it)
{
    uint64_t cas = it != NULL ? it->cas : 0;
    switch (code) {
    case REPLY_STORED:
    case REPLY_DELETED:
    case REPLY_OK:
        if (req->noreply) {
            return true;
        }
        return _frame(out, req->opcode, PROTO_BIN_SUCCESS, req->opaque, cas,
                      NULL, 0, NULL, 0, NULL, 0);
    case REPLY_TOUCHED: {
        unsigned char flags[4];
        _put32(flags, it != NULL ? it->flags : 0);
        return _frame(out, req->opcode, PROTO_BIN_SUCCESS, req->opaque, cas,
                      flags, sizeof(flags), NULL, 0, NULL, 0);
    }
    case REPLY_NOT_STORED:
        /* The text protocol's one "not stored" is three statuses here. */
        if (req->cmd == PROTO_CMD_ADD) {
            return _error(out, req, PROTO_BIN_KEY_EEXISTS);
        }
        if (req->cmd == PROTO_CMD_REPLACE) {
            return _error(out, req, PROTO_BIN_KEY_ENOENT);
        }
        return _error(out, req, PROTO_BIN_NOT_STORED);
    case REPLY_EXISTS:
        return _error(out, req, PROTO_BIN_KEY_EEXISTS);
    case REPLY_NOT_FOUND:
        return _error(out, req, PROTO_BIN_KEY_ENOENT);
    case REPLY_NON_NUMERIC:
        return _error(out, req, PROTO_BIN_DELTA_BADVAL);
    case REPLY_TOO_LARGE:
        return _error(out, req, PROTO_BIN_E2BIG);
    case REPLY_UNAUTHENTICATED:
    case REPLY_AUTH_FAILED:
        return _error(out, req, PROTO_BIN_AUTH_ERROR);
    case REPLY_SERVER_ERROR_OOM:
    case REPLY_SERVER_ERROR_NOSPACE:
        return _error(out, req, PROTO_BIN_ENOMEM);
    case REPLY_ERROR:
        return _error(out, req, PROTO_BIN_UNKNOWN_COMMAND);
    default:
        return _error(out, req, PROTO_BIN_EINTERNAL);
    }
}

bool
reply_bin_hit(struct buf *out, const struct proto_request *req,
              const struct reply_item *it)
{
    unsigned char flags[4];
    _put32(flags, it->flags);
    return _frame(out, req->opcode, PROTO_BIN_SUCCESS, req->opaque, it->cas,
                  flags, sizeof(flags), req->want_key ? it->key : NULL,
                  req->want_key ? it->nkey : 0, it->value, it->vlen);
}

bool
reply_bin_miss(struct buf *out, const struct proto_request *req,
               const struct reply_item *it)
{
    if (req->noreply) {
        return true;
    }
    if (req->want_key) {
        /* getk answers a miss with the key and no message. */
        return _frame(out, req->opcode, PROTO_BIN_KEY_ENOENT, req->opaque, 0,
                      NULL, 0, it->key, it->nkey, NULL, 0);
    }
    return _error(out, req, PROTO_BIN_KEY_ENOENT);
}

bool
reply_bin_counter(struct buf *out, const struct proto_request *req,
                  uint64_t n, const struct reply_item *it)
{
    if (req->noreply) {
        return true;
    }
    unsigned char value[8];
    _put64(value, n);
    return _frame(out, req->opcode, PROTO_BIN_SUCCESS, req->opaque,
                  it != NULL ? it->cas : 0, NULL, 0, NULL, 0, value,
                  sizeof(value));
}

bool
reply_bin_error(struct buf *out, const struct proto_request *req,
                enum proto_error err)
{
    switch (err) {
    case PROTO_ERR_TOO_LARGE:
        return _error(out, req, PROTO_BIN_E2BIG);
    case PROTO_ERR_BIN_EINVAL:
        return _error(out, req, PROTO_BIN_EINVAL);
    case PROTO_ERR_BIN_UNKNOWN:
        return _error(out, req, PROTO_BIN_UNKNOWN_COMMAND);
    default:
        return true; /* framing lost: the connection is closed unanswered */
    }
}

bool
reply_bin_simple(struct buf *out, const struct proto_request *req,
                 const void *value, size_t vlen)
{
    return _frame(out, req->opcode, PROTO_BIN_SUCCESS, req->opaque, 0, NULL,
                  0, NULL, 0, value, vlen);
}

bool
reply_bin_stat(struct buf *out, const struct proto_request *req,
               const char *name, const char *value, size_t vlen)
{
    return _frame(out, req->opcode, PROTO_BIN_SUCCESS, req->opaque, 0, NULL,
                  0, name, strlen(name), value, vlen);
}

bool
reply_bin_sasl(struct buf *out, const struct proto_request *req,
               enum reply_sasl_state state)
{
    if (state == REPLY_SASL_FAILED) {
        return _error(out, req, PROTO_BIN_AUTH_ERROR);
    }
    if (state == REPLY_SASL_CONTINUE) {
        return _frame(out, req->opcode, PROTO_BIN_AUTH_CONTINUE, req->opaque,
                      0, NULL, 0, NULL, 0, NULL, 0);
    }
    static const char msg[] = "Authenticated";
    return _frame(out, req->opcode, PROTO_BIN_SUCCESS, req->opaque, 0, NULL,
                  0, NULL, 0, msg, sizeof(msg) - 1);
}
