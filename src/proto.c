/*
 * proto: what the three protocol parsers share (see proto.h): command
 * names, key rules, the class a command counts as, base64 for meta keys.
 */
#include "proto.h"
#include "proto_internal.h"

#include <string.h>

/* Names and their lengths: a command line is looked up on every request. */
struct cmd_name {
    const char *s;
    size_t len;
};

#define NAME(str) {str, sizeof(str) - 1}

static const struct cmd_name cmd_names[PROTO_CMD_COUNT] = {
    [PROTO_CMD_GET] = NAME("get"),
    [PROTO_CMD_GETS] = NAME("gets"),
    [PROTO_CMD_GAT] = NAME("gat"),
    [PROTO_CMD_GATS] = NAME("gats"),
    [PROTO_CMD_SET] = NAME("set"),
    [PROTO_CMD_ADD] = NAME("add"),
    [PROTO_CMD_REPLACE] = NAME("replace"),
    [PROTO_CMD_APPEND] = NAME("append"),
    [PROTO_CMD_PREPEND] = NAME("prepend"),
    [PROTO_CMD_CAS] = NAME("cas"),
    [PROTO_CMD_DELETE] = NAME("delete"),
    [PROTO_CMD_INCR] = NAME("incr"),
    [PROTO_CMD_DECR] = NAME("decr"),
    [PROTO_CMD_TOUCH] = NAME("touch"),
    [PROTO_CMD_FLUSH_ALL] = NAME("flush_all"),
    [PROTO_CMD_VERSION] = NAME("version"),
    [PROTO_CMD_VERBOSITY] = NAME("verbosity"),
    [PROTO_CMD_QUIT] = NAME("quit"),
    [PROTO_CMD_STATS] = NAME("stats"),
    [PROTO_CMD_REPL] = NAME("REPL"),
    [PROTO_CMD_NOOP] = NAME("mn"),
    [PROTO_CMD_MG] = NAME("mg"),
    [PROTO_CMD_MS] = NAME("ms"),
    [PROTO_CMD_MD] = NAME("md"),
    [PROTO_CMD_MA] = NAME("ma"),
    [PROTO_CMD_ME] = NAME("me"),
    [PROTO_CMD_SASL_LIST] = NAME("sasl_list_mechs"),
    [PROTO_CMD_SASL_AUTH] = NAME("sasl_auth"),
    [PROTO_CMD_SASL_STEP] = NAME("sasl_step"),
    [PROTO_CMD_HTTP_GET] = NAME("HTTP GET"),
    [PROTO_CMD_HTTP_PUT] = NAME("HTTP PUT"),
    [PROTO_CMD_HTTP_DELETE] = NAME("HTTP DELETE"),
    [PROTO_CMD_HTTP_ADMIN] = NAME("HTTP /-/"),
    [PROTO_CMD_SHUTDOWN] = NAME("shutdown"),
    [PROTO_CMD_MEMLIMIT] = NAME("cache_memlimit"),
    [PROTO_CMD_SLABS] = NAME("slabs"),
};

bool
proto_begin(struct proto_parser *p, const char **buf, size_t *len,
            size_t *consumed, size_t *eaten)
{
    *consumed = 0;
    *eaten = 0;
    p->need = 0;
    p->error = PROTO_ERR_NONE;
    p->error_noreply = false;
    if (p->swallow == 0) {
        return false;
    }
    size_t n = *len < p->swallow ? *len : (size_t)p->swallow;
    p->swallow -= n;
    *consumed = n;
    *eaten = n;
    if (p->swallow > 0 || n == *len) {
        return true;
    }
    *buf += n;
    *len -= n;
    return false;
}

enum proto_status
proto_fail(struct proto_parser *p, enum proto_error err, bool noreply)
{
    p->error = err;
    p->error_noreply = noreply;
    if (err == PROTO_ERR_LINE_TOO_LONG || err == PROTO_ERR_HTTP) {
        return PROTO_ECLOSE;
    }
    return PROTO_EREQ;
}

const char *
proto_cmd_name(enum proto_cmd cmd)
{
    return (unsigned)cmd < PROTO_CMD_COUNT ? cmd_names[cmd].s : "?";
}

bool
proto_cmd_lookup(const char *name, size_t len, enum proto_cmd *cmd)
{
    for (int i = 0; i < PROTO_CMD_COUNT; i++) {
        if (cmd_names[i].len == len &&
            memcmp(cmd_names[i].s, name, len) == 0) {
            *cmd = (enum proto_cmd)i;
            return true;
        }
    }
    return false;
}

bool
proto_key_valid(const char *key, size_t nkey)
{
    if (nkey == 0 || nkey > PROTO_KEY_MAX) {
        return false;
    }
    for (size_t i = 0; i < nkey; i++) {
        unsigned char c = (unsigned char)key[i];
        if (c <= ' ' || c == 0x7f) {
            return false;
        }
    }
    return true;
}

enum proto_cmd
proto_class(const struct proto_request *req)
{
    const struct proto_meta *m = &req->meta;
    switch (req->cmd) {
    case PROTO_CMD_MG:
        return m->ttl || m->vivify ? PROTO_CMD_GAT : PROTO_CMD_GET;
    case PROTO_CMD_MS:
        switch (m->mode) {
        case 'E': case 'e': return PROTO_CMD_ADD;
        case 'A': case 'a': return PROTO_CMD_APPEND;
        case 'P': case 'p': return PROTO_CMD_PREPEND;
        case 'R': case 'r': return PROTO_CMD_REPLACE;
        default: return m->compare_cas ? PROTO_CMD_CAS : PROTO_CMD_SET;
        }
    case PROTO_CMD_MD:
        return PROTO_CMD_DELETE;
    case PROTO_CMD_MA:
        return m->mode == 'D' || m->mode == 'd' || m->mode == '-'
                   ? PROTO_CMD_DECR
                   : PROTO_CMD_INCR;
    case PROTO_CMD_ME:
    case PROTO_CMD_HTTP_GET:
        return PROTO_CMD_GET;
    case PROTO_CMD_HTTP_PUT:
        return PROTO_CMD_SET;
    case PROTO_CMD_HTTP_DELETE:
        return PROTO_CMD_DELETE;
    case PROTO_CMD_HTTP_ADMIN:
        return PROTO_CMD_STATS;
    default:
        return req->cmd;
    }
}

static const char b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int
_b64_value(char c)
{
    if (c >= 'A' && c <= 'Z') {
        return c - 'A';
    }
    if (c >= 'a' && c <= 'z') {
        return c - 'a' + 26;
    }
    if (c >= '0' && c <= '9') {
        return c - '0' + 52;
    }
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

long
proto_base64_decode(const char *in, size_t n, char *out, size_t cap)
{
    size_t len = 0;
    if (n % 4 != 0) {
        return -1;
    }
    for (size_t i = 0; i < n; i += 4) {
        int v[4];
        int pad = 0;
        for (int k = 0; k < 4; k++) {
            if (in[i + k] == '=' && i + 4 == n && k >= 2) {
                v[k] = 0;
                pad++;
            } else if (pad > 0 || (v[k] = _b64_value(in[i + k])) < 0) {
                return -1;
            }
        }
        uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 |
                     (uint32_t)v[2] << 6 | (uint32_t)v[3];
        size_t bytes = 3 - (size_t)pad;
        if (len + bytes > cap) {
            return -1;
        }
        out[len++] = (char)(w >> 16);
        if (bytes > 1) {
            out[len++] = (char)(w >> 8);
        }
        if (bytes > 2) {
            out[len++] = (char)w;
        }
    }
    return (long)len;
}

long
proto_base64_decode_meta(const char *in, size_t n, char *out, size_t cap)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        if (in[i] == '=' || _b64_value(in[i]) >= 0) {
            count++;
        }
    }
    if (count == 0 || count % 4 != 0 || count / 4 * 3 > cap) {
        return -1;
    }
    uint32_t w = 0;
    int have = 0;
    int pad = 0;
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        int v = in[i] == '=' ? 0 : _b64_value(in[i]);
        if (v < 0) {
            continue; /* not in the alphabet: skipped, as memcached does */
        }
        pad += in[i] == '=';
        w = w << 6 | (uint32_t)v;
        if (++have < 4) {
            continue;
        }
        out[len++] = (char)(w >> 16);
        out[len++] = (char)(w >> 8);
        out[len++] = (char)w;
        w = 0;
        have = 0;
        if (pad > 0) {
            if (pad > 2) {
                return -1;
            }
            len -= (size_t)pad; /* the key ends with this group */
            break;
        }
    }
    return len > 0 ? (long)len : -1;
}

size_t
proto_base64_encode(const void *in, size_t n, char *out)
{
    const unsigned char *p = in;
    size_t len = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t w = (uint32_t)p[i] << 16;
        if (i + 1 < n) {
            w |= (uint32_t)p[i + 1] << 8;
        }
        if (i + 2 < n) {
            w |= p[i + 2];
        }
        out[len++] = b64[(w >> 18) & 63];
        out[len++] = b64[(w >> 12) & 63];
        out[len++] = i + 1 < n ? b64[(w >> 6) & 63] : '=';
        out[len++] = i + 2 < n ? b64[w & 63] : '=';
    }
    return len;
}

enum proto_status
proto_detect(struct proto_parser *p, unsigned char first,
             enum proto_kind *kind)
{
    if (first == 0x80) {
        *kind = PROTO_KIND_BINARY;
        return PROTO_OK;
    }
    /* Every HTTP method is upper case; memcached's commands are lower case
     * but for a replication peer's REPL. */
    if (p->limits.http && first >= 'A' && first <= 'Z' && first != 'R') {
        *kind = PROTO_KIND_HTTP;
        return PROTO_OK;
    }
    *kind = PROTO_KIND_TEXT;
    bool space = first == ' ' || first == '\t' || first == '\r' ||
                 first == '\n';
    if ((first < 0x20 && !space) || first >= 0x7f) {
        p->error = PROTO_ERR_UNKNOWN_COMMAND;
        p->error_cmd = PROTO_CMD_COUNT;
        p->error_noreply = false;
        return PROTO_ECLOSE;
    }
    return PROTO_OK;
}
