/*
 * reply_meta: memcached meta protocol responses (see reply.h): a
 * two-letter code (VA, HD, EN, NF, NS, EX, MN), then the flags the
 * request asked for, in its order, then the W/X/Z recache flags. Errors
 * are the text protocol's lines. q silences EN for mg and HD for the
 * others, as memcached 1.6 does.
 */
#include "reply_members.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

/* Appends the request's key, in base64 if `binary`. */
static bool
_key(struct buf *out, const struct proto_request *req, bool binary)
{
    if (!binary) {
        return reply_raw(out, req->key, req->nkey);
    }
    char enc[4 * ((PROTO_KEY_MAX + 2) / 3)];
    size_t len = proto_base64_encode(req->key, req->nkey, enc);
    return reply_raw(out, enc, len);
}

/* Appends " <flag><value>" for each requested flag `allowed` permits. */
static bool
_flags(struct buf *out, const struct proto_request *req,
       const struct reply_item *it, const char *allowed)
{
    const struct proto_meta *m = &req->meta;
    char tmp[UTIL_U64_DIGITS + 4];
    for (size_t i = 0; i < m->norder; i++) {
        char f = m->order[i];
        if (strchr(allowed, f) == NULL ||
            (it == NULL && strchr("fhlst", f) != NULL)) {
            continue; /* a failure has no item to describe */
        }
        tmp[0] = ' ';
        tmp[1] = f;
        size_t n = 2;
        bool ok = true;
        switch (f) {
        case 'c':
            n += util_u64_to_dec(it != NULL ? it->cas : 0, tmp + n);
            break;
        case 'f':
            n += util_u64_to_dec(it->flags, tmp + n);
            break;
        case 'h':
            n += util_u64_to_dec(it->hit > 0 ? 1 : 0, tmp + n);
            break;
        case 'l':
            n += util_u64_to_dec(it->idle > 0 ? (uint64_t)it->idle : 0,
                                 tmp + n);
            break;
        case 's':
            n += util_u64_to_dec(it->vlen, tmp + n);
            break;
        case 't':
            if (it->ttl < 0) {
                memcpy(tmp + n, "-1", 2);
                n += 2;
            } else {
                n += util_u64_to_dec((uint64_t)it->ttl, tmp + n);
            }
            break;
        case 'O':
            ok = reply_raw(out, tmp, n) &&
                 reply_raw(out, m->opaque, m->opaque_len);
            n = 0;
            break;
        case 'k': {
            bool binary = it != NULL ? it->key_binary : m->base64;
            ok = reply_raw(out, tmp, n) && _key(out, req, binary) &&
                 (!binary || reply_raw(out, " b", 2));
            n = 0;
            break;
        }
        default:
            n = 0;
            break;
        }
        if (!ok || (n > 0 && !reply_raw(out, tmp, n))) {
            return false;
        }
    }
    return true;
}

/* The recache flags of a hit, in memcached's order. */
static bool
_win(struct buf *out, const struct reply_item *it)
{
    if (it->win == 'W') {
        return (!it->stale || reply_raw(out, " X", 2)) &&
               reply_raw(out, " W", 2);
    }
    if (it->win == 'Z') {
        return reply_raw(out, " Z", 2) &&
               (!it->stale || reply_raw(out, " X", 2));
    }
    return !it->stale || reply_raw(out, " X", 2);
}

/* The flags each command's replies can carry: an ms failure says c0, an
 * ma failure (NF, EX) only O and k. */
static const char *
_allowed(const struct proto_request *req, enum reply_code code)
{
    switch (req->cmd) {
    case PROTO_CMD_MS:
        return "ckO";
    case PROTO_CMD_MD:
        return "kO";
    case PROTO_CMD_MA:
        return code == REPLY_STORED ? "ctkO" : "kO";
    case PROTO_CMD_ME:
        return "";
    default:
        return "cfhklOst";
    }
}

bool
reply_meta_result(struct buf *out, const struct proto_request *req,
                  enum reply_code code, const struct reply_item *it)
{
    const char *word;
    switch (code) {
    case REPLY_STORED:
    case REPLY_DELETED:
    case REPLY_TOUCHED:
    case REPLY_OK:
        if (req->meta.quiet) {
            return true;
        }
        word = "HD";
        break;
    case REPLY_NOT_STORED:
        word = "NS";
        break;
    case REPLY_EXISTS:
        word = "EX";
        break;
    case REPLY_NOT_FOUND:
        word = "NF";
        break;
    default:
        return reply_text_code(out, code);
    }
    return reply_raw(out, word, 2) &&
           _flags(out, req, it, _allowed(req, code)) &&
           reply_raw(out, "\r\n", 2);
}

bool
reply_meta_hit(struct buf *out, const struct proto_request *req,
               const struct reply_item *it)
{
    if (!req->meta.value) {
        return reply_raw(out, "HD", 2) && _flags(out, req, it, "cfhklOst") &&
               _win(out, it) && reply_raw(out, "\r\n", 2);
    }
    char len[UTIL_U64_DIGITS];
    size_t n = util_u64_to_dec(it->vlen, len);
    return reply_raw(out, "VA ", 3) && reply_raw(out, len, n) &&
           _flags(out, req, it, "cfhklOst") && _win(out, it) &&
           reply_raw(out, "\r\n", 2) && reply_raw(out, it->value, it->vlen) &&
           reply_raw(out, "\r\n", 2);
}

bool
reply_meta_miss(struct buf *out, const struct proto_request *req,
                const struct reply_item *it)
{
    if (req->meta.quiet) {
        return true;
    }
    return reply_raw(out, "EN", 2) && _flags(out, req, it, "kO") &&
           reply_raw(out, "\r\n", 2);
}

bool
reply_meta_counter(struct buf *out, const struct proto_request *req,
                   uint64_t n, const struct reply_item *it)
{
    if (req->meta.quiet) {
        return true; /* q hides ma's success, value or not */
    }
    if (!req->meta.value) {
        return reply_meta_result(out, req, REPLY_STORED, it);
    }
    char digits[UTIL_U64_DIGITS];
    char len[UTIL_U64_DIGITS];
    size_t nd = util_u64_to_dec(n, digits);
    size_t nl = util_u64_to_dec(nd, len);
    return reply_raw(out, "VA ", 3) && reply_raw(out, len, nl) &&
           _flags(out, req, it, "ctkO") && reply_raw(out, "\r\n", 2) &&
           reply_raw(out, digits, nd) && reply_raw(out, "\r\n", 2);
}

bool
reply_meta_debug(struct buf *out, const struct proto_request *req,
                 const struct reply_item *it, size_t size)
{
    char tail[160];
    int n = snprintf(tail, sizeof(tail),
                     " exp=%" PRId64 " la=%" PRId64 " cas=%" PRIu64
                     " fetch=%s cls=1 size=%zu\r\n",
                     it->ttl, it->idle, it->cas, it->hit > 0 ? "yes" : "no",
                     size);
    return reply_raw(out, "ME ", 3) && _key(out, req, it->key_binary) &&
           reply_raw(out, tail, (size_t)n);
}
