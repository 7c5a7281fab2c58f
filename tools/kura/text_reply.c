/*
 * text_reply: memcached text-protocol replies, item by item (see
 * text_reply.h).
 */
#include "text_reply.h"

#include <stdint.h>
#include <string.h>

#include "util.h"

enum text_reply_kind
text_reply_next(const char *buf, size_t len, size_t value_max,
                struct text_reply *out)
{
    const char *nl = memchr(buf, '\n', len);
    if (nl == NULL) {
        return TEXT_REPLY_MORE;
    }
    size_t llen = (size_t)(nl - buf) + 1;
    size_t bare = llen - 1;
    if (bare > 0 && buf[bare - 1] == '\r') {
        bare--;
    }
    struct text_reply r = {.len = llen, .line = buf, .line_len = bare};
    if (bare < 6 || memcmp(buf, "VALUE ", 6) != 0) {
        *out = r;
        return TEXT_REPLY_LINE;
    }
    /* VALUE <key> <flags> <bytes> [<cas>] */
    const char *field[4];
    size_t flen[4];
    int nf = 0;
    const char *p = buf + 6;
    const char *end = buf + bare;
    while (p < end && nf < 4) {
        const char *sp = memchr(p, ' ', (size_t)(end - p));
        const char *stop = sp != NULL ? sp : end;
        field[nf] = p;
        flen[nf++] = (size_t)(stop - p);
        p = sp != NULL ? sp + 1 : end;
    }
    uint64_t bytes;
    uint64_t ignored;
    if (nf < 3 || p < end || flen[0] == 0 ||
        !util_parse_uint(field[1], flen[1], UINT32_MAX, &ignored) ||
        !util_parse_uint(field[2], flen[2], value_max, &bytes) ||
        (nf == 4 && !util_parse_uint(field[3], flen[3], UINT64_MAX,
                                     &ignored))) {
        return TEXT_REPLY_BAD;
    }
    if (len - llen < bytes + 2) {
        return TEXT_REPLY_MORE;
    }
    if (memcmp(buf + llen + bytes, "\r\n", 2) != 0) {
        return TEXT_REPLY_BAD;
    }
    r.len = llen + (size_t)bytes + 2;
    r.key = field[0];
    r.klen = flen[0];
    r.data = buf + llen;
    r.dlen = (size_t)bytes;
    *out = r;
    return TEXT_REPLY_VALUE;
}

bool
text_reply_is(const struct text_reply *r, const char *text)
{
    size_t n = strlen(text);
    return r->line_len == n && memcmp(r->line, text, n) == 0;
}
