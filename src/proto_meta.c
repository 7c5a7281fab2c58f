/*
 * proto_meta: the meta commands' lines (memcached 1.6 doc/protocol.txt,
 * "Meta Debug", "Meta Get", "Meta Set", "Meta Delete", "Meta Arithmetic",
 * "Meta No-Op"):
 *
 *   mn
 *   me <key> [b]
 *   mg <key> <flag>*
 *   ms <key> <datalen> <flag>*\r\n<data>\r\n
 *   md <key> <flag>*
 *   ma <key> <flag>*
 *
 * A flag is one letter, some with a token right after it (T30, Oabc).
 * What is accepted, and which error a refusal gets when a line has
 * several faults, follow memcached 1.6.18 step by step (checked against
 * it by tests/conformance and tools/difffuzz):
 *
 *   1. the key token over 250 bytes: "bad command line format";
 *   2. ms without a length: the same;
 *   3. more than 19 words: "options flags are too long" (mg), "options
 *      flags too long" (ms, md, ma);
 *   4. ms: a length that is not a number from 0 to INT_MAX - 2;
 *   5. the flags, in order. A letter seen before (or a byte of 127 and
 *      up) is a "duplicate flag" and an unknown letter an "invalid
 *      flag", both at once; a bad token (a number that does not read, an
 *      M that is not one letter, a b key that does not decode) is noted
 *      and the walk goes on, the last one noted being reported (a bad F
 *      notes no words of its own: the line's are "bad command line
 *      format" unless an earlier token noted others). md and ma answer
 *      every failure here "invalid or duplicate flag";
 *   6. ms: an opaque over 32 bytes, then an unknown mode, which wins;
 *      ma: an unknown mode, then the opaque; mg, md: the opaque.
 *
 * memcached looks at the opaque's length of mg and ma only while it
 * writes the reply, after a touch, a creation or an increment took
 * effect; kura refuses such a line before anything happens
 * (doc/protocol.md, deliberate differences). A line is read up to its
 * first NUL byte, as memcached reads it as a C string; an ms data block
 * still starts after the line's end. kura also takes E (explicit cas),
 * which later memcached versions document and 1.6.18 refuses. An ms
 * whose length could be read swallows its data block when the line is
 * refused, so the data is never run as commands (memcached runs it when
 * the key is too long or there are too many flags).
 */
#include "proto_internal.h"

#include <string.h>

/* memcached: 20 tokens with the end marker, so 19 words on a line. */
#define META_MAX_WORDS 19
#define META_OPAQUE_MAX 32 /* with its O */

/* The flag letters every meta command accepts (E: kura's addition). */
static const char KNOWN[] = "bcfhklOqstuvNRTCFIMJDEPL";

/* The key token, decoded into req->keybuf for the b flag. */
static enum proto_error
_decode_key(struct proto_request *req, const struct token *key)
{
    long n = proto_base64_decode_meta(key->s, key->len, req->keybuf,
                                      sizeof(req->keybuf));
    if (n < 0) {
        return PROTO_ERR_META_KEY;
    }
    req->key = req->keybuf;
    req->nkey = (size_t)n;
    return PROTO_ERR_NONE;
}

/*
 * Reads the value of one flag token into `m`. Returns PROTO_ERR_NONE, or
 * the error a bad token notes (the walk goes on after it).
 */
static enum proto_error
_flag_value(struct proto_request *req, const struct token *t,
            const struct token *key)
{
    struct proto_meta *m = &req->meta;
    struct token v = {t->s + 1, t->len - 1};

    switch (t->s[0]) {
    case 'b':
        m->base64 = true;
        return _decode_key(req, key);
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
        m->opaque = v.s;
        m->opaque_len = v.len;
        break;
    case 'N':
        m->vivify = true;
        return proto_read_i32(&v, &m->vivify_ttl) ? PROTO_ERR_NONE
                                                  : PROTO_ERR_META_TOKEN;
    case 'R':
        m->recache = true;
        return proto_read_i32(&v, &m->recache_ttl) ? PROTO_ERR_NONE
                                                   : PROTO_ERR_META_TOKEN;
    case 'T':
        m->ttl = proto_read_i32(&v, &m->ttl_value);
        return m->ttl ? PROTO_ERR_NONE : PROTO_ERR_META_TOKEN;
    case 'F':
        m->client_flags = proto_read_u32(&v, &m->flags_value);
        /* memcached notes no words for F: the line's own stand */
        return m->client_flags ? PROTO_ERR_NONE : PROTO_ERR_FORMAT;
    case 'C':
        m->compare_cas = proto_read_u64(&v, &m->compare_value);
        return m->compare_cas ? PROTO_ERR_NONE : PROTO_ERR_META_TOKEN;
    case 'E':
        m->new_cas = proto_read_u64(&v, &m->new_cas_value);
        return m->new_cas ? PROTO_ERR_NONE : PROTO_ERR_META_TOKEN;
    case 'J':
        m->initial = proto_read_u64(&v, &m->initial_value);
        return m->initial ? PROTO_ERR_NONE : PROTO_ERR_META_INITIAL;
    case 'D':
        return proto_read_u64(&v, &m->delta) ? PROTO_ERR_NONE
                                             : PROTO_ERR_META_DELTA;
    case 'M':
        if (v.len != 1) {
            return PROTO_ERR_META_MODE_LEN;
        }
        m->mode = v.s[0];
        break;
    default:
        break; /* c f h k l s t; P and L (proxy hints): nothing to read */
    }
    return PROTO_ERR_NONE;
}

/*
 * Step 5: walks the flag tokens in order (see the top of the file).
 * Returns PROTO_ERR_NONE or the error to report.
 */
static enum proto_error
_flags(struct proto_request *req, const struct token *tok, size_t first,
       size_t ntok)
{
    struct proto_meta *m = &req->meta;
    bool seen[128] = {false};
    enum proto_error err = PROTO_ERR_NONE;

    for (size_t i = first; i < ntok; i++) {
        unsigned char f = (unsigned char)tok[i].s[0];
        if (f >= 127 || seen[f]) {
            return PROTO_ERR_META_DUP;
        }
        seen[f] = true;
        if (f == '\0' || memchr(KNOWN, f, sizeof(KNOWN) - 1) == NULL) {
            return PROTO_ERR_META_FLAG;
        }
        m->order[m->norder++] = (char)f;
        enum proto_error e = _flag_value(req, &tok[i], &tok[1]);
        if (e == PROTO_ERR_FORMAT && err != PROTO_ERR_NONE) {
            continue; /* a bad F leaves earlier words standing */
        }
        if (e != PROTO_ERR_NONE) {
            err = e;
        }
    }
    return err;
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

/* me <key> [b]: memcached looks at nothing else on the line. */
static enum proto_status
_me(struct proto_parser *p, struct proto_request *req,
    const struct token *tok, size_t ntok)
{
    if (ntok < 2 || tok[1].len > PROTO_KEY_MAX) {
        return proto_fail(p, PROTO_ERR_FORMAT, false);
    }
    if (ntok >= 3 && tok[2].len == 1 && tok[2].s[0] == 'b') {
        req->meta.base64 = true;
        if (_decode_key(req, &tok[1]) != PROTO_ERR_NONE) {
            return proto_fail(p, PROTO_ERR_FORMAT, false);
        }
    } else if (!proto_key_valid(tok[1].s, tok[1].len)) {
        return proto_fail(p, PROTO_ERR_FORMAT, false);
    } else {
        req->key = tok[1].s;
        req->nkey = tok[1].len;
    }
    req->keys = req->key;
    req->keys_len = req->nkey;
    req->nkeys = 1;
    return PROTO_OK;
}

/* Step 6: what memcached checks after the flags, command by command. */
static enum proto_error
_after_flags(const struct proto_request *req)
{
    const struct proto_meta *m = &req->meta;
    bool long_opaque = m->opaque != NULL &&
                       m->opaque_len + 1 > META_OPAQUE_MAX;
    char mode = m->mode;

    switch (req->cmd) {
    case PROTO_CMD_MS:
        if (mode != 0 && memchr("SEAPR", mode, 5) == NULL) {
            return PROTO_ERR_META_MODE_MS;
        }
        break;
    case PROTO_CMD_MA:
        if (mode != 0 && memchr("I+D-", mode, 4) == NULL) {
            return PROTO_ERR_META_MODE_MA;
        }
        break;
    default:
        break;
    }
    return long_opaque ? PROTO_ERR_META_OPAQUE : PROTO_ERR_NONE;
}

enum proto_status
proto_meta_parse(struct proto_parser *p, struct proto_request *req,
                 const char *buf, size_t len, size_t line_len, size_t hdr,
                 size_t *consumed)
{
    struct token tok[META_MAX_WORDS + 1];
    const char *rest;
    const char *nul = memchr(buf, '\0', line_len);
    size_t ntok = proto_tokenize(buf, nul != NULL ? (size_t)(nul - buf)
                                                  : line_len,
                                 tok, META_MAX_WORDS + 1, &rest);

    *consumed = hdr;
    req->kind = PROTO_KIND_META;
    req->meta.delta = 1;
    if (req->cmd == PROTO_CMD_NOOP) {
        return PROTO_OK;
    }
    if (req->cmd == PROTO_CMD_ME) {
        return _me(p, req, tok, ntok);
    }
    if (ntok < 2) {
        return proto_fail(p, PROTO_ERR_UNKNOWN_COMMAND, false);
    }
    bool ms = req->cmd == PROTO_CMD_MS;
    bool md_ma = req->cmd == PROTO_CMD_MD || req->cmd == PROTO_CMD_MA;
    /* ms: the data is swallowed on any refusal once its length reads */
    int64_t vlen = -1;
    if (ms && ntok >= 3 && (!proto_read_i32(&tok[2], &vlen) || vlen < 0 ||
                            vlen > INT32_MAX - 2)) {
        vlen = -1;
    }
    req->vlen = vlen >= 0 ? (size_t)vlen : 0;
    enum proto_error err = PROTO_ERR_NONE;
    if (tok[1].len > PROTO_KEY_MAX || (ms && ntok < 3)) {
        err = PROTO_ERR_FORMAT; /* steps 1 and 2 */
    } else if (ntok > META_MAX_WORDS || rest != NULL) {
        err = req->cmd == PROTO_CMD_MG ? PROTO_ERR_META_TOO_MANY
                                       : PROTO_ERR_META_TOO_LONG;
    } else if (ms && vlen < 0) {
        return proto_fail(p, PROTO_ERR_FORMAT, false); /* nothing to skip */
    } else {
        err = _flags(req, tok, ms ? 3 : 2, ntok);
        if (err != PROTO_ERR_NONE && md_ma) {
            err = PROTO_ERR_META_FLAG_OR_DUP; /* memcached's only words */
        }
    }
    if (err == PROTO_ERR_NONE) {
        err = _after_flags(req);
    }
    if (err == PROTO_ERR_NONE && !req->meta.base64) {
        if (proto_key_valid(tok[1].s, tok[1].len)) {
            req->key = tok[1].s;
            req->nkey = tok[1].len;
        } else {
            err = PROTO_ERR_FORMAT; /* control characters: kura refuses */
        }
    }
    req->noreply = req->meta.quiet;
    if (ms && err == PROTO_ERR_NONE && req->vlen > p->limits.item_max) {
        err = PROTO_ERR_TOO_LARGE;
    }
    if (err != PROTO_ERR_NONE) {
        return ms && vlen >= 0
                   ? _refuse_data(p, len, hdr, req->vlen, err, consumed)
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
