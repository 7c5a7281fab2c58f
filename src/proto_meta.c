/*
 * proto_meta: the meta commands' lines (memcached 1.6 doc/protocol.txt,
 * "Meta Debug", "Meta Get", "Meta Set", "Meta Delete", "Meta Arithmetic",
 * "Meta No-Op"):
 *
 *   mn
 *   me <key>
 *   mg <key> <flag>*
 *   ms <key> <datalen> <flag>*\r\n<data>\r\n
 *   md <key> <flag>*
 *   ma <key> <flag>*
 *
 * A flag is one letter, some with a token right after it (T30, Oabc).
 * What is accepted and the error each refusal gets follow memcached
 * 1.6.18 (checked against it, tests/conformance): the same flag set for
 * every command, "invalid flag" and "duplicate flag" for mg and ms and
 * "invalid or duplicate flag" for md and ma, at most 17 flags, an opaque
 * of at most 32 bytes. kura also takes E (explicit cas), which later
 * memcached versions document and 1.6.18 refuses. An ms whose length
 * could be read swallows its data block when the line is refused, so the
 * data is never run as commands.
 */
#include "proto_internal.h"

#include <string.h>

/* memcached: 20 tokens with the end marker, so 19 words on a line. */
#define META_MAX_TOKENS 19
#define META_OPAQUE_MAX 32

/* Flags every meta command accepts; the ones in RETURNS are echoed. */
static const char ACCEPTED[] = "bcfhklOqstuvNRTCFIMJDEPL";
static const char RETURNS[] = "cfhklOst";

static bool
_numeric(const struct token *t, int64_t *out)
{
    return t->len > 0 && proto_read_i32(t, out);
}

/* Reads one flag token into `m`; PROTO_ERR_NONE or the refusal. */
static enum proto_error
_flag(const struct token *t, enum proto_cmd cmd, struct proto_meta *m,
      uint32_t *seen)
{
    bool md_ma = cmd == PROTO_CMD_MD || cmd == PROTO_CMD_MA;
    char f = t->s[0];
    const char *at = memchr(ACCEPTED, f, sizeof(ACCEPTED) - 1);
    if (at == NULL) {
        return md_ma ? PROTO_ERR_META_FLAG_OR_DUP : PROTO_ERR_META_FLAG;
    }
    uint32_t bit = (uint32_t)1 << (at - ACCEPTED);
    if (*seen & bit) {
        return md_ma ? PROTO_ERR_META_FLAG_OR_DUP : PROTO_ERR_META_DUP;
    }
    *seen |= bit;
    struct token v = {t->s + 1, t->len - 1};
    if (memchr(RETURNS, f, sizeof(RETURNS) - 1) != NULL &&
        m->nret < PROTO_META_RETURN_MAX) {
        m->ret[m->nret++] = f;
    }
    switch (f) {
    case 'b':
        m->base64 = true;
        break;
    case 'q':
        m->quiet = true;
        break;
    case 'u':
        m->no_bump = true;
        break;
    case 'v':
        m->value = true;
        break;
    case 'I':
        m->invalidate = true;
        break;
    case 'O':
        if (t->len > META_OPAQUE_MAX) { /* 32 bytes with the O */
            return PROTO_ERR_META_OPAQUE;
        }
        m->opaque = v.s;
        m->opaque_len = v.len;
        break;
    case 'N':
        m->vivify = true;
        return _numeric(&v, &m->vivify_ttl) ? PROTO_ERR_NONE
                                            : PROTO_ERR_META_TOKEN;
    case 'R':
        m->recache = true;
        return _numeric(&v, &m->recache_ttl) ? PROTO_ERR_NONE
                                             : PROTO_ERR_META_TOKEN;
    case 'T':
        m->ttl = true;
        m->ttl_before_update = memchr(m->ret, 't', m->nret) != NULL;
        return _numeric(&v, &m->ttl_value) ? PROTO_ERR_NONE
                                           : PROTO_ERR_META_TOKEN;
    case 'F':
        m->client_flags = true;
        if (v.len > 0 && proto_read_u32(&v, &m->flags_value)) {
            return PROTO_ERR_NONE;
        }
        /* memcached reads ms's F apart from the other tokens. */
        return cmd == PROTO_CMD_MS ? PROTO_ERR_FORMAT : PROTO_ERR_META_TOKEN;
    case 'C':
        m->compare_cas = true;
        return v.len > 0 && proto_read_u64(&v, &m->compare_value)
                   ? PROTO_ERR_NONE
                   : PROTO_ERR_META_TOKEN;
    case 'E':
        m->new_cas = true;
        return v.len > 0 && proto_read_u64(&v, &m->new_cas_value)
                   ? PROTO_ERR_NONE
                   : PROTO_ERR_META_TOKEN;
    case 'J':
        m->initial = true;
        return v.len > 0 && proto_read_u64(&v, &m->initial_value)
                   ? PROTO_ERR_NONE
                   : PROTO_ERR_META_TOKEN;
    case 'D':
        return v.len > 0 && proto_read_u64(&v, &m->delta)
                   ? PROTO_ERR_NONE
                   : PROTO_ERR_META_TOKEN;
    case 'M':
        if (cmd == PROTO_CMD_MS) {
            if (v.len != 1 || memchr("SEAPR", v.s[0], 5) == NULL) {
                return PROTO_ERR_META_MODE_MS;
            }
        } else if (cmd == PROTO_CMD_MA) {
            if (v.len != 1 || memchr("I+D-", v.s[0], 4) == NULL) {
                return PROTO_ERR_META_MODE_MA;
            }
        }
        m->mode = v.len == 1 ? v.s[0] : 0;
        break;
    default:
        break; /* c f h k l s t; P and L (proxy hints): ignored */
    }
    return PROTO_ERR_NONE;
}

/* The key, decoded into req->keybuf when the b flag is given. */
static enum proto_error
_key(struct proto_request *req, const struct token *t)
{
    if (!req->meta.base64) {
        if (!proto_key_valid(t->s, t->len)) {
            return PROTO_ERR_FORMAT;
        }
        req->key = t->s;
        req->nkey = t->len;
        return PROTO_ERR_NONE;
    }
    long n = proto_base64_decode(t->s, t->len, req->keybuf,
                                 sizeof(req->keybuf));
    if (n <= 0) {
        return PROTO_ERR_META_KEY;
    }
    req->key = req->keybuf;
    req->nkey = (size_t)n;
    return PROTO_ERR_NONE;
}

/* ms: fails, swallowing the data block whose length was read. */
static enum proto_status
_refuse_data(struct proto_parser *p, size_t len, size_t hdr, size_t vlen,
             enum proto_error err, size_t *consumed)
{
    p->swallow = (uint64_t)vlen + 2;
    size_t eat = len - hdr < p->swallow ? len - hdr : (size_t)p->swallow;
    p->swallow -= eat;
    *consumed = hdr + eat;
    return proto_fail(p, err, false);
}

enum proto_status
proto_meta_parse(struct proto_parser *p, struct proto_request *req,
                 const char *buf, size_t len, size_t line_len, size_t hdr,
                 size_t *consumed)
{
    struct token tok[META_MAX_TOKENS + 1];
    const char *rest;
    size_t ntok = proto_tokenize(buf, line_len, tok, META_MAX_TOKENS + 1,
                                 &rest);

    *consumed = hdr;
    req->kind = PROTO_KIND_META;
    req->meta.delta = 1;
    if (req->cmd == PROTO_CMD_NOOP) {
        return PROTO_OK;
    }
    bool ms = req->cmd == PROTO_CMD_MS;
    if (ntok < 2) {
        /* memcached: "me" alone is a bad line, the others unknown. */
        return proto_fail(p,
                          req->cmd == PROTO_CMD_ME ? PROTO_ERR_FORMAT
                                                   : PROTO_ERR_UNKNOWN_COMMAND,
                          false);
    }
    if (ms && ntok < 3) {
        return proto_fail(p, PROTO_ERR_FORMAT, false);
    }
    int64_t vlen = 0;
    if (ms && (!proto_read_i32(&tok[2], &vlen) || vlen < 0 ||
               vlen > INT32_MAX - 2)) {
        return proto_fail(p, PROTO_ERR_FORMAT, false);
    }
    req->vlen = (size_t)vlen;
    size_t first = ms ? 3 : 2;
    enum proto_error err = PROTO_ERR_NONE;
    if (tok[1].len > PROTO_KEY_MAX) {
        err = PROTO_ERR_FORMAT; /* memcached looks at the key first */
    } else if (ntok > META_MAX_TOKENS || rest != NULL) {
        err = PROTO_ERR_META_TOO_MANY;
    }
    uint32_t seen = 0;
    for (size_t i = first; i < ntok && err == PROTO_ERR_NONE; i++) {
        err = _flag(&tok[i], req->cmd, &req->meta, &seen);
    }
    if (err == PROTO_ERR_META_TOKEN &&
        (req->cmd == PROTO_CMD_MD || req->cmd == PROTO_CMD_MA)) {
        err = PROTO_ERR_META_FLAG_OR_DUP; /* md and ma say only this */
    }
    if (err == PROTO_ERR_NONE) {
        err = _key(req, &tok[1]);
        if (err == PROTO_ERR_META_KEY &&
            (req->cmd == PROTO_CMD_MD || req->cmd == PROTO_CMD_MA)) {
            err = PROTO_ERR_META_FLAG_OR_DUP; /* memcached's words there */
        }
    }
    req->noreply = req->meta.quiet;
    if (ms && err == PROTO_ERR_NONE && req->vlen > p->limits.item_max) {
        err = PROTO_ERR_TOO_LARGE;
    }
    if (err != PROTO_ERR_NONE) {
        return ms ? _refuse_data(p, len, hdr, req->vlen, err, consumed)
                  : proto_fail(p, err, false);
    }
    req->keys = req->key;
    req->keys_len = req->nkey;
    req->nkeys = 1;
    if (!ms) {
        return PROTO_OK;
    }
    size_t total = hdr + req->vlen + 2;
    if (len < total) {
        p->need = total;
        *consumed = 0;
        return PROTO_EUNFIN;
    }
    *consumed = total;
    req->value = buf + hdr;
    if (buf[hdr + req->vlen] != '\r' || buf[hdr + req->vlen + 1] != '\n') {
        return proto_fail(p, PROTO_ERR_BAD_CHUNK, false);
    }
    return PROTO_OK;
}
