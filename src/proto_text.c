/*
 * proto_text: the memcached text protocol parser (see proto.h); meta
 * command lines are recognised here and their flags read by proto_meta.c.
 *
 * Follows memcached 1.6's proto_text.c in what it accepts and rejects:
 * tokens are separated by one or more spaces, lines end in "\n" with an
 * optional "\r", numbers are read the way its safe_strto*() helpers read
 * them, a trailing "noreply" token silences every reply of the command
 * (errors too), and a command with the wrong number of tokens is an unknown
 * command ("ERROR"). Deliberate differences, all in the safe direction, are
 * listed in doc/protocol.md: keys with control characters are refused, and
 * a rejected storage command whose length could be read swallows its data
 * block instead of executing the client's bytes as commands.
 */
#include "proto.h"
#include "proto_internal.h"
#include "proto_token.h"

#include <string.h>


/* The longest fixed-arity command, "cas k f e b c noreply", has 7 tokens. */
#define MAX_TOKENS 8
/* memcached looks past at most this many leading spaces for "get ". */
#define GET_PREFIX_SCAN 100

void
proto_parser_init(struct proto_parser *p, const struct proto_limits *limits)
{
    memset(p, 0, sizeof(*p));
    p->limits = *limits;
}

void
proto_parser_reset(struct proto_parser *p)
{
    p->swallow = 0;
    p->error = PROTO_ERR_NONE;
    p->need = 0;
}

/* memcached compares the last word as a C string: a NUL ends it. */
static bool
_is_noreply(const struct token *t)
{
    const char *nul = memchr(t->s, '\0', t->len);
    size_t len = nul != NULL ? (size_t)(nul - t->s) : t->len;
    return len == 7 && memcmp(t->s, "noreply", 7) == 0;
}

bool
proto_next_key(const struct proto_request *req, size_t *pos,
               const char **key, size_t *nkey)
{
    size_t i = *pos;

    if (req->kind != PROTO_KIND_TEXT) {
        /* A binary or meta key is length-prefixed or decoded: any byte,
         * a space included, belongs to the one key. */
        if (i > 0 || req->nkey == 0) {
            return false;
        }
        *key = req->key;
        *nkey = req->nkey;
        *pos = req->keys_len > 0 ? req->keys_len : 1;
        return true;
    }
    while (i < req->keys_len && req->keys[i] == ' ') {
        i++;
    }
    if (i == req->keys_len) {
        *pos = i;
        return false;
    }
    size_t start = i;
    while (i < req->keys_len && req->keys[i] != ' ') {
        i++;
    }
    *key = req->keys + start;
    *nkey = i - start;
    *pos = i;
    return true;
}

/* get/gets K...; gat/gats <exptime> K... */
static enum proto_status
_parse_retrieval(struct proto_parser *p, struct proto_request *req,
                 const char *line, size_t len, const struct token *tok,
                 size_t ntok)
{
    bool touch = req->cmd == PROTO_CMD_GAT || req->cmd == PROTO_CMD_GATS;
    size_t first = touch ? 2 : 1;

    if (ntok < 2) {
        return proto_fail(p, PROTO_ERR_UNKNOWN_COMMAND, false);
    }
    if (touch && !proto_read_i32(&tok[1], &req->exptime)) {
        return proto_fail(p, PROTO_ERR_EXPTIME, false);
    }
    req->nkeys = 0;
    if (ntok <= first) {
        return PROTO_OK; /* "gat 10": no keys, answered with END */
    }
    req->keys = tok[first].s;
    req->keys_len = (size_t)(line + len - req->keys);
    size_t pos = 0;
    const char *key;
    size_t nkey;
    while (proto_next_key(req, &pos, &key, &nkey)) {
        if (!proto_key_valid(key, nkey)) {
            return proto_fail(p, PROTO_ERR_FORMAT, false);
        }
        if (req->nkeys == 0) {
            req->key = key;
            req->nkey = nkey;
        }
        req->nkeys++;
    }
    return PROTO_OK;
}

/*
 * Storage commands: "<cmd> <key> <flags> <exptime> <bytes> [noreply]" and
 * "cas <key> <flags> <exptime> <bytes> <cas unique> [noreply]".
 * `hdr` is the length of the command line including its end of line.
 */
static enum proto_status
_parse_storage(struct proto_parser *p, struct proto_request *req,
               const char *buf, size_t len, size_t hdr,
               const struct token *tok, size_t ntok, size_t *consumed)
{
    size_t base = req->cmd == PROTO_CMD_CAS ? 6 : 5;
    int64_t vlen;

    if (ntok != base && ntok != base + 1) {
        return proto_fail(p, PROTO_ERR_UNKNOWN_COMMAND, false);
    }
    /* memcached looks for noreply in the last word, whatever the count */
    req->noreply = _is_noreply(&tok[ntok - 1]);
    req->key = tok[1].s;
    req->nkey = tok[1].len;
    if (!proto_read_i32(&tok[4], &vlen) || vlen < 0 ||
        vlen > INT32_MAX - 2) {
        /* The data block's length is unknown: nothing can be swallowed. */
        return proto_fail(p, PROTO_ERR_FORMAT, req->noreply);
    }
    req->vlen = (size_t)vlen;

    /*
     * From here the length is known, so a rejected request swallows its
     * data block rather than letting the client's bytes run as commands.
     */
    enum proto_error err = PROTO_ERR_NONE;
    if (!proto_key_valid(req->key, req->nkey) ||
        !proto_read_u32(&tok[2], &req->flags) ||
        !proto_read_i32(&tok[3], &req->exptime) ||
        (req->cmd == PROTO_CMD_CAS &&
         !proto_read_u64(&tok[5], &req->cas_unique))) {
        err = PROTO_ERR_FORMAT;
    } else if (req->vlen > p->limits.item_max) {
        err = PROTO_ERR_TOO_LARGE;
    }
    if (err != PROTO_ERR_NONE) {
        p->swallow = (uint64_t)req->vlen + 2;
        size_t eat = len - hdr < p->swallow ? len - hdr : (size_t)p->swallow;
        p->swallow -= eat;
        *consumed = hdr + eat;
        return proto_fail(p, err, req->noreply);
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
        return proto_fail(p, PROTO_ERR_BAD_CHUNK, req->noreply);
    }
    return PROTO_OK;
}

/*
 * The common shape of "<cmd> <key> <arg> [noreply]" (incr, decr, touch):
 * checks the word count, noreply and the key. Returns PROTO_OK or a failure.
 */
static enum proto_status
_parse_key_arg(struct proto_parser *p, struct proto_request *req,
               const struct token *tok, size_t ntok)
{
    if (ntok != 3 && ntok != 4) {
        return proto_fail(p, PROTO_ERR_UNKNOWN_COMMAND, false);
    }
    req->noreply = _is_noreply(&tok[ntok - 1]);
    req->key = tok[1].s;
    req->nkey = tok[1].len;
    if (!proto_key_valid(req->key, req->nkey)) {
        return proto_fail(p, PROTO_ERR_FORMAT, req->noreply);
    }
    return PROTO_OK;
}

/* incr|decr <key> <delta> [noreply] */
static enum proto_status
_parse_arith(struct proto_parser *p, struct proto_request *req,
             const struct token *tok, size_t ntok)
{
    enum proto_status st = _parse_key_arg(p, req, tok, ntok);
    if (st == PROTO_OK && !proto_read_u64(&tok[2], &req->delta)) {
        return proto_fail(p, PROTO_ERR_DELTA, req->noreply);
    }
    return st;
}

/* touch <key> <exptime> [noreply] */
static enum proto_status
_parse_touch(struct proto_parser *p, struct proto_request *req,
             const struct token *tok, size_t ntok)
{
    enum proto_status st = _parse_key_arg(p, req, tok, ntok);
    if (st == PROTO_OK && !proto_read_i32(&tok[2], &req->exptime)) {
        return proto_fail(p, PROTO_ERR_EXPTIME, req->noreply);
    }
    return st;
}

/* delete <key> [0] [noreply]; the "0" is accepted for old clients. */
static enum proto_status
_parse_delete(struct proto_parser *p, struct proto_request *req,
              const struct token *tok, size_t ntok)
{
    if (ntok < 2 || ntok > 4) {
        return proto_fail(p, PROTO_ERR_UNKNOWN_COMMAND, false);
    }
    req->key = tok[1].s;
    req->nkey = tok[1].len;
    req->noreply = ntok > 2 && _is_noreply(&tok[ntok - 1]);
    if (ntok > 2) {
        bool zero = tok[2].len == 1 && tok[2].s[0] == '0';
        bool valid = (ntok == 3 && (zero || req->noreply)) ||
                     (ntok == 4 && zero && req->noreply);
        if (!valid) {
            return proto_fail(p, PROTO_ERR_DELETE_USAGE, req->noreply);
        }
    }
    if (!proto_key_valid(req->key, req->nkey)) {
        return proto_fail(p, PROTO_ERR_FORMAT, req->noreply);
    }
    return PROTO_OK;
}

/* flush_all [delay] [noreply] */
static enum proto_status
_parse_flush_all(struct proto_parser *p, struct proto_request *req,
                 const struct token *tok, size_t ntok)
{
    if (ntok > 3) {
        return proto_fail(p, PROTO_ERR_UNKNOWN_COMMAND, false);
    }
    req->noreply = ntok > 1 && _is_noreply(&tok[ntok - 1]);
    req->delay = 0;
    if (ntok != (req->noreply ? 2u : 1u) &&
        !proto_read_i32(&tok[1], &req->delay)) {
        return proto_fail(p, PROTO_ERR_EXPTIME, req->noreply);
    }
    return PROTO_OK;
}

/* verbosity <level> [noreply] */
static enum proto_status
_parse_verbosity(struct proto_parser *p, struct proto_request *req,
                 const struct token *tok, size_t ntok)
{
    if (ntok != 2 && ntok != 3) {
        return proto_fail(p, PROTO_ERR_UNKNOWN_COMMAND, false);
    }
    req->noreply = _is_noreply(&tok[ntok - 1]);
    if (!proto_read_u32(&tok[1], &req->level)) {
        return proto_fail(p, PROTO_ERR_FORMAT, req->noreply);
    }
    return PROTO_OK;
}

/* cache_memlimit <megabytes> [noreply]; memcached answers a bad number
 * with ERROR, silenced by noreply. */
static enum proto_status
_parse_memlimit(struct proto_parser *p, struct proto_request *req,
                const struct token *tok, size_t ntok)
{
    if (ntok != 2 && ntok != 3) {
        return proto_fail(p, PROTO_ERR_UNKNOWN_COMMAND, false);
    }
    req->noreply = _is_noreply(&tok[ntok - 1]);
    if (!proto_read_u32(&tok[1], &req->level)) {
        return proto_fail(p, PROTO_ERR_UNKNOWN_COMMAND, req->noreply);
    }
    return PROTO_OK;
}

/*
 * slabs automove <0|1|2> [noreply], slabs automove ratio <r> [noreply],
 * slabs reassign <src> <dst>: memcached's answers to each shape (an
 * automove level that is not a number is a format error, one over 2 and a
 * ratio that is not a number are unknown commands; reassign takes no
 * noreply).
 */
static enum proto_status
_parse_slabs(struct proto_parser *p, struct proto_request *req,
             const struct token *tok, size_t ntok)
{
    if (ntok == 4 && tok[1].len == 8 && memcmp(tok[1].s, "reassign", 8) == 0) {
        int64_t src, dst;
        if (!proto_read_i32(&tok[2], &src) || !proto_read_i32(&tok[3], &dst)) {
            return proto_fail(p, PROTO_ERR_FORMAT, false);
        }
        req->level = src == dst ? PROTO_SLABS_REASSIGN_SAME
                                : PROTO_SLABS_REASSIGN;
        return PROTO_OK;
    }
    if (ntok < 3 || tok[1].len != 8 || memcmp(tok[1].s, "automove", 8) != 0) {
        return proto_fail(p, PROTO_ERR_UNKNOWN_COMMAND, false);
    }
    req->noreply = _is_noreply(&tok[ntok - 1]);
    req->level = PROTO_SLABS_AUTOMOVE;
    if (tok[2].len == 5 && memcmp(tok[2].s, "ratio", 5) == 0) {
        double ratio;
        if (ntok < 4 || !proto_read_double(&tok[3], &ratio)) {
            return proto_fail(p, PROTO_ERR_UNKNOWN_COMMAND, req->noreply);
        }
        return PROTO_OK;
    }
    uint32_t level;
    if (!proto_read_u32(&tok[2], &level)) {
        return proto_fail(p, PROTO_ERR_FORMAT, req->noreply);
    }
    if (level > 2) {
        return proto_fail(p, PROTO_ERR_UNKNOWN_COMMAND, req->noreply);
    }
    return PROTO_OK;
}

static bool
_is_http_request(const struct token *tok, size_t ntok, const char *rest,
                 const char *line, size_t len)
{
    const char *last;
    size_t last_len;

    if (rest != NULL) {
        /* Find the last token of the unsplit remainder. */
        const char *end = line + len;
        while (end > rest && end[-1] == ' ') {
            end--;
        }
        const char *start = end;
        while (start > rest && start[-1] != ' ') {
            start--;
        }
        last = start;
        last_len = (size_t)(end - start);
    } else {
        last = tok[ntok - 1].s;
        last_len = tok[ntok - 1].len;
    }
    return last_len >= 5 && memcmp(last, "HTTP/", 5) == 0;
}

static enum proto_status
_parse_line(struct proto_parser *p, struct proto_request *req,
            const char *buf, size_t len, size_t line_len, size_t hdr,
            size_t *consumed)
{
    struct token tok[MAX_TOKENS];
    const char *rest;
    size_t ntok = proto_tokenize(buf, line_len, tok, MAX_TOKENS, &rest);

    *consumed = hdr;
    if (ntok == 0) {
        return proto_fail(p, PROTO_ERR_UNKNOWN_COMMAND, false);
    }
    if (tok[0].len == 4 && memcmp(tok[0].s, "bget", 4) == 0) {
        /* memcached's old name for get, which it still answers */
        req->cmd = PROTO_CMD_GET;
    } else if (!proto_cmd_lookup(tok[0].s, tok[0].len, &req->cmd)) {
        if (_is_http_request(tok, ntok, rest, buf, line_len)) {
            return proto_fail(p, PROTO_ERR_HTTP, false);
        }
        return proto_fail(p, PROTO_ERR_UNKNOWN_COMMAND, false);
    }
    p->error_cmd = req->cmd;
    switch (req->cmd) {
    case PROTO_CMD_NOOP:
    case PROTO_CMD_MG:
    case PROTO_CMD_MS:
    case PROTO_CMD_MD:
    case PROTO_CMD_MA:
    case PROTO_CMD_ME:
        return proto_meta_parse(p, req, buf, len, line_len, hdr, consumed);
    case PROTO_CMD_SASL_LIST:
    case PROTO_CMD_SASL_AUTH:
    case PROTO_CMD_SASL_STEP:
        return proto_fail(p, PROTO_ERR_UNKNOWN_COMMAND, false);
    case PROTO_CMD_GET:
    case PROTO_CMD_GETS:
    case PROTO_CMD_GAT:
    case PROTO_CMD_GATS:
        return _parse_retrieval(p, req, buf, line_len, tok, ntok);
    case PROTO_CMD_STATS:
    case PROTO_CMD_REPL:
        req->args = ntok > 1 ? tok[1].s : buf + line_len;
        req->args_len = (size_t)(buf + line_len - req->args);
        while (req->args_len > 0 && req->args[req->args_len - 1] == ' ') {
            req->args_len--;
        }
        return PROTO_OK;
    case PROTO_CMD_VERSION:
    case PROTO_CMD_QUIT:
    case PROTO_CMD_SHUTDOWN:
        return PROTO_OK; /* trailing words are ignored, as by memcached */
    default:
        break;
    }
    if (rest != NULL) {
        return proto_fail(p, PROTO_ERR_UNKNOWN_COMMAND, false);
    }
    switch (req->cmd) {
    case PROTO_CMD_SET:
    case PROTO_CMD_ADD:
    case PROTO_CMD_REPLACE:
    case PROTO_CMD_APPEND:
    case PROTO_CMD_PREPEND:
    case PROTO_CMD_CAS:
        return _parse_storage(p, req, buf, len, hdr, tok, ntok, consumed);
    case PROTO_CMD_INCR:
    case PROTO_CMD_DECR:
        return _parse_arith(p, req, tok, ntok);
    case PROTO_CMD_TOUCH:
        return _parse_touch(p, req, tok, ntok);
    case PROTO_CMD_DELETE:
        return _parse_delete(p, req, tok, ntok);
    case PROTO_CMD_FLUSH_ALL:
        return _parse_flush_all(p, req, tok, ntok);
    case PROTO_CMD_VERBOSITY:
        return _parse_verbosity(p, req, tok, ntok);
    case PROTO_CMD_MEMLIMIT:
        return _parse_memlimit(p, req, tok, ntok);
    case PROTO_CMD_SLABS:
        return _parse_slabs(p, req, tok, ntok);
    default:
        return proto_fail(p, PROTO_ERR_UNKNOWN_COMMAND, false);
    }
}

/* True if the incomplete line in `buf` may grow to max_get_line. */
static bool
_is_get_line(const char *buf, size_t len)
{
    size_t i = 0;
    while (i < len && i < GET_PREFIX_SCAN && buf[i] == ' ') {
        i++;
    }
    static const char *const prefixes[] = {"get ", "gets ", "gat ", "gats "};
    for (size_t k = 0; k < sizeof(prefixes) / sizeof(prefixes[0]); k++) {
        size_t n = strlen(prefixes[k]);
        if (len - i >= n && memcmp(buf + i, prefixes[k], n) == 0) {
            return true;
        }
    }
    return false;
}

enum proto_status
proto_parse(struct proto_parser *p, const char *buf, size_t len,
            size_t *consumed, struct proto_request *req)
{
    size_t eaten;

    if (proto_begin(p, &buf, &len, consumed, &eaten)) {
        return PROTO_EUNFIN;
    }

    size_t limit = p->limits.max_line;
    const char *nl = memchr(buf, '\n', len < limit + 2 ? len : limit + 2);
    if (nl == NULL && len >= limit + 2 && _is_get_line(buf, len)) {
        limit = p->limits.max_get_line;
        nl = memchr(buf, '\n', len < limit + 2 ? len : limit + 2);
    }
    if (nl == NULL) {
        if (len >= limit + 2) {
            return proto_fail(p, PROTO_ERR_LINE_TOO_LONG, false);
        }
        return PROTO_EUNFIN;
    }
    size_t hdr = (size_t)(nl - buf) + 1;
    size_t line_len = hdr - 1;
    if (line_len > 0 && buf[line_len - 1] == '\r') {
        line_len--;
    }
    /* memcached reads a command line as a C string: what follows a NUL
     * is consumed with the line but not read. */
    const char *nul = memchr(buf, '\0', line_len);
    if (nul != NULL) {
        line_len = (size_t)(nul - buf);
    }

    memset(req, 0, sizeof(*req));
    size_t used = 0;
    enum proto_status st = _parse_line(p, req, buf, len, line_len, hdr, &used);
    *consumed = eaten + used;
    if (st == PROTO_EUNFIN) {
        p->need += eaten;
    }
    return st;
}
