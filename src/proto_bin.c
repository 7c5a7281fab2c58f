/*
 * proto_bin: memcached binary protocol parser (see proto_bin.h).
 */
#include "proto_bin.h"
#include "proto_internal.h"

#include <string.h>

/* Room in a body beyond the value: a key and the largest extras. */
#define BODY_OVERHEAD (PROTO_KEY_MAX + 255)

static uint16_t
_be16(const unsigned char *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t
_be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           p[3];
}

static uint64_t
_be64(const unsigned char *p)
{
    return (uint64_t)_be32(p) << 32 | _be32(p + 4);
}

/* What an opcode is and what its frame must carry. */
struct opinfo {
    enum proto_cmd cmd;
    bool quiet;
    bool want_key;
    bool known;
    int8_t extras;  /* required extras length; -1: 0 or 4 (flush) */
    int8_t key;     /* 1: required, 0: forbidden, -1: optional */
    bool value;     /* a value is allowed */
};

static struct opinfo
_info(uint8_t op)
{
    struct opinfo i = {PROTO_CMD_COUNT, false, false, true, 0, 1, false};
    switch (op) {
    case PROTO_BIN_GETQ:
        i.quiet = true;
        /* fall through */
    case PROTO_BIN_GET:
        i.cmd = PROTO_CMD_GET;
        break;
    case PROTO_BIN_GETKQ:
        i.quiet = true;
        /* fall through */
    case PROTO_BIN_GETK:
        i.cmd = PROTO_CMD_GET;
        i.want_key = true;
        break;
    case PROTO_BIN_SETQ:
    case PROTO_BIN_ADDQ:
    case PROTO_BIN_REPLACEQ:
        i.quiet = true;
        /* fall through */
    case PROTO_BIN_SET:
    case PROTO_BIN_ADD:
    case PROTO_BIN_REPLACE:
        if (op == PROTO_BIN_SET || op == PROTO_BIN_SETQ) {
            i.cmd = PROTO_CMD_SET;
        } else if (op == PROTO_BIN_ADD || op == PROTO_BIN_ADDQ) {
            i.cmd = PROTO_CMD_ADD;
        } else {
            i.cmd = PROTO_CMD_REPLACE;
        }
        i.extras = 8;
        i.value = true;
        break;
    case PROTO_BIN_APPENDQ:
    case PROTO_BIN_PREPENDQ:
        i.quiet = true;
        /* fall through */
    case PROTO_BIN_APPEND:
    case PROTO_BIN_PREPEND:
        i.cmd = op == PROTO_BIN_APPEND || op == PROTO_BIN_APPENDQ
                    ? PROTO_CMD_APPEND
                    : PROTO_CMD_PREPEND;
        i.value = true;
        break;
    case PROTO_BIN_DELETEQ:
        i.quiet = true;
        /* fall through */
    case PROTO_BIN_DELETE:
        i.cmd = PROTO_CMD_DELETE;
        break;
    case PROTO_BIN_INCREMENTQ:
    case PROTO_BIN_DECREMENTQ:
        i.quiet = true;
        /* fall through */
    case PROTO_BIN_INCREMENT:
    case PROTO_BIN_DECREMENT:
        i.cmd = op == PROTO_BIN_INCREMENT || op == PROTO_BIN_INCREMENTQ
                    ? PROTO_CMD_INCR
                    : PROTO_CMD_DECR;
        i.extras = 20;
        break;
    case PROTO_BIN_QUITQ:
        i.quiet = true;
        /* fall through */
    case PROTO_BIN_QUIT:
        i.cmd = PROTO_CMD_QUIT;
        i.key = 0;
        break;
    case PROTO_BIN_FLUSHQ:
        i.quiet = true;
        /* fall through */
    case PROTO_BIN_FLUSH:
        i.cmd = PROTO_CMD_FLUSH_ALL;
        i.extras = -1;
        i.key = 0;
        break;
    case PROTO_BIN_NOOP:
        i.cmd = PROTO_CMD_NOOP;
        i.key = 0;
        break;
    case PROTO_BIN_VERSION:
        i.cmd = PROTO_CMD_VERSION;
        i.key = 0;
        break;
    case PROTO_BIN_STAT:
        i.cmd = PROTO_CMD_STATS;
        i.key = -1;
        break;
    /* PROTO_BIN_VERBOSITY: memcached 1.6 answers it as an unknown
     * command, and so does kura. */
    case PROTO_BIN_TOUCH:
        i.cmd = PROTO_CMD_TOUCH;
        i.extras = 4;
        break;
    case PROTO_BIN_GATQ:
        i.quiet = true;
        /* fall through */
    case PROTO_BIN_GAT:
        i.cmd = PROTO_CMD_GAT;
        i.extras = 4;
        break;
    case PROTO_BIN_GATKQ:
        i.quiet = true;
        /* fall through */
    case PROTO_BIN_GATK:
        i.cmd = PROTO_CMD_GAT;
        i.extras = 4;
        i.want_key = true;
        break;
    case PROTO_BIN_SASL_LIST_MECHS:
        i.cmd = PROTO_CMD_SASL_LIST;
        i.key = 0;
        break;
    case PROTO_BIN_SASL_AUTH:
    case PROTO_BIN_SASL_STEP:
        i.cmd = op == PROTO_BIN_SASL_AUTH ? PROTO_CMD_SASL_AUTH
                                          : PROTO_CMD_SASL_STEP;
        i.value = true;
        break;
    default:
        i.known = false;
        break;
    }
    return i;
}

static enum proto_status
_fail(struct proto_parser *p, enum proto_error err, enum proto_status st)
{
    p->error = err;
    p->error_noreply = false;
    return st;
}

/* Fills `req` from a whole, validated frame. */
static void
_fill(struct proto_request *req, const struct opinfo *in,
      const unsigned char *extras, size_t nextras, const char *key,
      size_t nkey, const char *value, size_t nvalue, uint64_t cas)
{
    req->cmd = in->cmd;
    req->noreply = in->quiet;
    req->want_key = in->want_key;
    req->key = key;
    req->nkey = nkey;
    req->keys = key;
    req->keys_len = nkey;
    req->nkeys = nkey > 0 ? 1 : 0;
    req->value = value;
    req->vlen = nvalue;
    req->cas_unique = cas;
    switch (in->cmd) {
    case PROTO_CMD_SET:
    case PROTO_CMD_ADD:
    case PROTO_CMD_REPLACE:
        req->flags = _be32(extras);
        req->exptime = (int64_t)_be32(extras + 4);
        /* memcached makes any store with a cas a cas, add included. */
        req->has_cas = cas != 0;
        break;
    case PROTO_CMD_APPEND:
    case PROTO_CMD_PREPEND:
    case PROTO_CMD_DELETE:
        req->has_cas = cas != 0;
        break;
    case PROTO_CMD_INCR:
    case PROTO_CMD_DECR: {
        uint32_t exp = _be32(extras + 16);
        req->has_cas = cas != 0;
        req->delta = _be64(extras);
        req->initial = _be64(extras + 8);
        req->create = exp != UINT32_MAX;
        req->exptime = req->create ? (int64_t)exp : 0;
        break;
    }
    case PROTO_CMD_FLUSH_ALL:
        req->delay = nextras == 4 ? (int64_t)_be32(extras) : 0;
        break;
    case PROTO_CMD_TOUCH:
    case PROTO_CMD_GAT:
        req->exptime = (int64_t)_be32(extras);
        break;
    case PROTO_CMD_STATS:
        req->args = key;
        req->args_len = nkey;
        req->key = NULL;
        req->nkey = 0;
        req->nkeys = 0;
        break;
    default:
        break;
    }
}

enum proto_status
proto_bin_parse(struct proto_parser *p, const char *buf, size_t len,
                size_t *consumed, struct proto_request *req)
{
    size_t eaten;

    if (proto_begin(p, &buf, &len, consumed, &eaten)) {
        return PROTO_EUNFIN;
    }
    if (len < PROTO_BIN_HEADER) {
        p->need = eaten + PROTO_BIN_HEADER;
        return PROTO_EUNFIN;
    }
    const unsigned char *h = (const unsigned char *)buf;
    memset(req, 0, sizeof(*req));
    req->kind = PROTO_KIND_BINARY;
    req->opcode = h[1];
    req->opaque = _be32(h + 12);
    if (h[0] != PROTO_BIN_REQUEST) {
        return _fail(p, PROTO_ERR_BIN_FRAMING, PROTO_ECLOSE);
    }
    size_t nkey = _be16(h + 2);
    size_t nextras = h[4];
    uint64_t body = _be32(h + 8);
    uint64_t cas = _be64(h + 16);
    struct opinfo in = _info(h[1]);
    req->cmd = in.known ? in.cmd : PROTO_CMD_COUNT;
    p->error_cmd = req->cmd;
    /*
     * memcached judges a frame once its header, extras and key are in (at
     * most 65,814 bytes), not from the header alone: a client that hangs
     * up before sending a long key it announced gets no answer.
     */
    size_t head = PROTO_BIN_HEADER + nextras + nkey;
    if (len < head) {
        p->need = eaten + head;
        return PROTO_EUNFIN;
    }
    if (nkey + nextras > body) {
        /* memcached's answer to lengths that do not add up. */
        return _fail(p, PROTO_ERR_BIN_UNKNOWN, PROTO_ECLOSE);
    }
    uint64_t nvalue = body - nkey - nextras;
    /*
     * memcached's order, once the key is in: a key over 250 bytes, then
     * a frame the opcode does not allow (both: Invalid arguments and a
     * close), then a value over the limit.
     */
    bool extras_ok = in.extras >= 0 ? nextras == (size_t)in.extras
                                    : nextras == 0 || nextras == 4;
    bool key_ok = in.key > 0 ? nkey > 0 : in.key == 0 ? nkey == 0 : true;
    if (nkey > PROTO_KEY_MAX ||
        (in.known && (!extras_ok || !key_ok || (!in.value && nvalue > 0)))) {
        return _fail(p, PROTO_ERR_BIN_EINVAL, PROTO_ECLOSE);
    }
    if (in.known && in.value && nvalue > p->limits.item_max) {
        /* memcached answers "Too large." and reads on past the body. It
         * reads the key first (a set also drops the key's old value). */
        req->noreply = false;
        p->swallow = PROTO_BIN_HEADER + body;
        size_t eat = len < p->swallow ? len : (size_t)p->swallow;
        p->swallow -= eat;
        *consumed = eaten + eat;
        /* The key is in (waited for above) and at most 250 bytes. */
        req->key = buf + PROTO_BIN_HEADER + nextras;
        req->nkey = nkey;
        return _fail(p, PROTO_ERR_TOO_LARGE, PROTO_EREQ);
    }
    if (body > p->limits.item_max + BODY_OVERHEAD) {
        return _fail(p, PROTO_ERR_BIN_EINVAL, PROTO_ECLOSE);
    }
    size_t total = PROTO_BIN_HEADER + (size_t)body;
    if (len < total) {
        p->need = eaten + total;
        return PROTO_EUNFIN;
    }
    *consumed = eaten + total;
    if (!in.known) {
        return _fail(p, PROTO_ERR_BIN_UNKNOWN, PROTO_EREQ);
    }
    const char *extras = buf + PROTO_BIN_HEADER;
    const char *key = extras + nextras;
    _fill(req, &in, (const unsigned char *)extras, nextras, key, nkey,
          key + nkey, (size_t)nvalue, cas);
    return PROTO_OK;
}
