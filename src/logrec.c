/*
 * logrec: update log record codec (see logrec.h).
 */
#include "logrec.h"

#include <string.h>

#include "crc32c.h"
#include "util.h"

uint8_t *
logrec_begin(uint8_t *out, enum logrec_op op, uint32_t sid, const char *key,
             size_t nkey, size_t plen)
{
    memset(out, 0, LOGREC_HEADER);
    util_put_le32(out, (uint32_t)logrec_size(nkey, plen));
    out[24] = (uint8_t)op;
    out[26] = (uint8_t)nkey;
    out[27] = (uint8_t)(nkey >> 8);
    util_put_le32(out + 28, sid);
    if (nkey > 0) {
        memcpy(out + LOGREC_HEADER, key, nkey);
    }
    return out + LOGREC_HEADER + nkey;
}

void
logrec_seal(uint8_t *rec, uint64_t lsn, uint64_t seq)
{
    uint32_t len = util_get_le32(rec);
    util_put_le64(rec + 8, lsn);
    util_put_le64(rec + 16, seq);
    util_put_le32(rec + 4, crc32c(0, rec + 8, len - 8));
}

void
logrec_view(const uint8_t *buf, struct logrec *out)
{
    out->raw = buf;
    out->len = util_get_le32(buf);
    out->lsn = util_get_le64(buf + 8);
    out->seq = util_get_le64(buf + 16);
    out->op = (enum logrec_op)buf[24];
    out->nkey = (size_t)buf[26] | (size_t)buf[27] << 8;
    out->sid = util_get_le32(buf + 28);
    out->key = (const char *)buf + LOGREC_HEADER;
    out->payload = buf + LOGREC_HEADER + out->nkey;
    out->plen = out->len - LOGREC_HEADER - out->nkey;
}

uint32_t
logrec_peek_len(const uint8_t *buf)
{
    return util_get_le32(buf);
}

uint32_t
logrec_peek_sid(const uint8_t *buf)
{
    return util_get_le32(buf + 28);
}

enum logrec_status
logrec_decode(const uint8_t *buf, size_t avail, struct logrec *out)
{
    memset(out, 0, sizeof(*out));
    if (avail < 4) {
        return LOGREC_SHORT;
    }
    uint32_t len = util_get_le32(buf);
    out->len = len;
    out->raw = buf;
    if (len < LOGREC_HEADER || len > LOGREC_MAX_LEN) {
        return LOGREC_CORRUPT;
    }
    if (avail < len) {
        return LOGREC_SHORT;
    }
    if (util_get_le32(buf + 4) != crc32c(0, buf + 8, len - 8)) {
        return LOGREC_CORRUPT;
    }
    out->lsn = util_get_le64(buf + 8);
    out->seq = util_get_le64(buf + 16);
    uint8_t op = buf[24];
    size_t nkey = (size_t)buf[26] | (size_t)buf[27] << 8;
    out->sid = util_get_le32(buf + 28);
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
    util_put_le64(out, stamp);
    util_put_le64(out + 8, deadline);
}

bool
logrec_flush_decode(const struct logrec *r, uint64_t *stamp,
                    uint64_t *deadline)
{
    if (r->op != LOGREC_FLUSH || r->plen != LOGREC_FLUSH_PAYLOAD) {
        return false;
    }
    *stamp = util_get_le64(r->payload);
    *deadline = util_get_le64(r->payload + 8);
    return true;
}
