/*
 * logrec: update log record codec (see logrec.h).
 */
#include "logrec.h"

#include <string.h>

#include "crc32c.h"

static void
_put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static void
_put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static uint32_t
_get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static uint64_t
_get64(const uint8_t *p)
{
    return (uint64_t)_get32(p) | (uint64_t)_get32(p + 4) << 32;
}

uint8_t *
logrec_begin(uint8_t *out, enum logrec_op op, uint32_t sid, const char *key,
             size_t nkey, size_t plen)
{
    memset(out, 0, LOGREC_HEADER);
    _put32(out, (uint32_t)logrec_size(nkey, plen));
    out[24] = (uint8_t)op;
    out[26] = (uint8_t)nkey;
    out[27] = (uint8_t)(nkey >> 8);
    _put32(out + 28, sid);
    if (nkey > 0) {
        memcpy(out + LOGREC_HEADER, key, nkey);
    }
    return out + LOGREC_HEADER + nkey;
}

void
logrec_seal(uint8_t *rec, uint64_t lsn, uint64_t seq)
{
    uint32_t len = _get32(rec);
    _put64(rec + 8, lsn);
    _put64(rec + 16, seq);
    _put32(rec + 4, crc32c(0, rec + 8, len - 8));
}

void
logrec_view(const uint8_t *buf, struct logrec *out)
{
    out->raw = buf;
    out->len = _get32(buf);
    out->lsn = _get64(buf + 8);
    out->seq = _get64(buf + 16);
    out->op = (enum logrec_op)buf[24];
    out->nkey = (size_t)buf[26] | (size_t)buf[27] << 8;
    out->sid = _get32(buf + 28);
    out->key = (const char *)buf + LOGREC_HEADER;
    out->payload = buf + LOGREC_HEADER + out->nkey;
    out->plen = out->len - LOGREC_HEADER - out->nkey;
}

uint32_t
logrec_peek_len(const uint8_t *buf)
{
    return _get32(buf);
}

enum logrec_status
logrec_decode(const uint8_t *buf, size_t avail, struct logrec *out)
{
    memset(out, 0, sizeof(*out));
    if (avail < 4) {
        return LOGREC_SHORT;
    }
    uint32_t len = _get32(buf);
    out->len = len;
    out->raw = buf;
    if (len < LOGREC_HEADER || len > LOGREC_MAX_LEN) {
        return LOGREC_CORRUPT;
    }
    if (avail < len) {
        return LOGREC_SHORT;
    }
    if (_get32(buf + 4) != crc32c(0, buf + 8, len - 8)) {
        return LOGREC_CORRUPT;
    }
    out->lsn = _get64(buf + 8);
    out->seq = _get64(buf + 16);
    uint8_t op = buf[24];
    size_t nkey = (size_t)buf[26] | (size_t)buf[27] << 8;
    out->sid = _get32(buf + 28);
    if ((op != LOGREC_PUT && op != LOGREC_FLUSH) || buf[25] != 0 ||
        LOGREC_HEADER + nkey > len) {
        return LOGREC_CORRUPT;
    }
    out->op = (enum logrec_op)op;
    out->key = (const char *)buf + LOGREC_HEADER;
    out->nkey = nkey;
    out->payload = buf + LOGREC_HEADER + nkey;
    out->plen = len - LOGREC_HEADER - nkey;
    if (op == LOGREC_FLUSH && (nkey != 0 || out->plen != LOGREC_FLUSH_PAYLOAD)) {
        return LOGREC_CORRUPT;
    }
    if (op == LOGREC_PUT && nkey == 0) {
        return LOGREC_CORRUPT;
    }
    return LOGREC_OK;
}

void
logrec_flush_encode(uint8_t out[LOGREC_FLUSH_PAYLOAD], uint64_t stamp,
                    uint64_t deadline)
{
    _put64(out, stamp);
    _put64(out + 8, deadline);
}

bool
logrec_flush_decode(const struct logrec *r, uint64_t *stamp,
                    uint64_t *deadline)
{
    if (r->op != LOGREC_FLUSH || r->plen != LOGREC_FLUSH_PAYLOAD) {
        return false;
    }
    *stamp = _get64(r->payload);
    *deadline = _get64(r->payload + 8);
    return true;
}
