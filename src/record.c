/*
 * record: envelope codec (see record.h for the layout).
 */
#include "record.h"

#include <string.h>

#include "crc32c.h"

#define PRESENT_FLAGS 0x01u
#define PRESENT_EXPTIME 0x02u
#define PRESENT_CAS 0x04u
#define PRESENT_STALE 0x08u
#define PRESENT_TOKEN 0x10u
#define PRESENT_BINKEY 0x20u
#define PRESENT_CTYPE 0x40u
#define PRESENT_ALL (PRESENT_FLAGS | PRESENT_EXPTIME | PRESENT_CAS |          \
                     PRESENT_STALE | PRESENT_TOKEN | PRESENT_BINKEY |         \
                     PRESENT_CTYPE)

static void
_put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static void
_put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static uint32_t
_get_u32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) {
        v = (v << 8) | p[i];
    }
    return v;
}

static uint64_t
_get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) {
        v = (v << 8) | p[i];
    }
    return v;
}

size_t
record_encode(const struct record_meta *m, uint8_t *out)
{
    uint8_t present = 0;
    size_t n = RECORD_SEAL_OFF + 4;

    _put_u32(out + RECORD_SEAL_OFF, 0);
    _put_u64(out + n, m->ts);
    n += 8;
    uint32_t sid = m->sid;
    do {
        uint8_t b = sid & 0x7f;
        sid >>= 7;
        out[n++] = sid != 0 ? (uint8_t)(b | 0x80) : b;
    } while (sid != 0);
    if (m->flags != 0) {
        present |= PRESENT_FLAGS;
        _put_u32(out + n, m->flags);
        n += 4;
    }
    if (m->exptime != 0) {
        present |= PRESENT_EXPTIME;
        _put_u32(out + n, m->exptime);
        n += 4;
    }
    if (m->cas != m->ts) {
        present |= PRESENT_CAS;
        _put_u64(out + n, m->cas);
        n += 8;
    }
    if (m->nctype > 0) {
        size_t nc = m->nctype < RECORD_CTYPE_MAX ? m->nctype
                                                 : RECORD_CTYPE_MAX;
        present |= PRESENT_CTYPE;
        out[n++] = (uint8_t)nc;
        memcpy(out + n, m->ctype, nc);
        n += nc;
    }
    present |= m->stale ? PRESENT_STALE : 0;
    present |= m->token ? PRESENT_TOKEN : 0;
    present |= m->binkey ? PRESENT_BINKEY : 0;
    out[0] = (uint8_t)((RECORD_VERSION << 4) | (m->kind & 0x0f));
    out[1] = present;
    return n;
}

enum record_status
record_decode(const uint8_t *buf, size_t len, struct record_meta *m,
              const uint8_t **value, size_t *vlen)
{
    unsigned version = len > 0 ? buf[0] >> 4 : 0;
    size_t n = version == RECORD_VERSION ? RECORD_SEAL_OFF + 4 : 2;

    if ((version != 1 && version != RECORD_VERSION) || len < n + 8 + 1) {
        return RECORD_ECORRUPT;
    }
    unsigned kind = buf[0] & 0x0f;
    if (kind != RECORD_VALUE && kind != RECORD_TOMBSTONE) {
        return RECORD_ECORRUPT;
    }
    uint8_t present = buf[1];
    if ((present & ~PRESENT_ALL) != 0) {
        return RECORD_ECORRUPT;
    }
    m->kind = (enum record_kind)kind;
    m->stale = (present & PRESENT_STALE) != 0;
    m->token = (present & PRESENT_TOKEN) != 0;
    m->binkey = (present & PRESENT_BINKEY) != 0;
    m->ts = _get_u64(buf + n);
    n += 8;

    uint32_t sid = 0;
    for (int shift = 0;; shift += 7) {
        if (n >= len || shift > 28) {
            return RECORD_ECORRUPT;
        }
        uint8_t b = buf[n++];
        sid |= (uint32_t)(b & 0x7f) << shift;
        if ((b & 0x80) == 0) {
            break;
        }
    }
    m->sid = sid;

    size_t need = ((present & PRESENT_FLAGS) ? 4 : 0) +
                  ((present & PRESENT_EXPTIME) ? 4 : 0) +
                  ((present & PRESENT_CAS) ? 8 : 0);
    if (len - n < need) {
        return RECORD_ECORRUPT;
    }
    m->flags = 0;
    if (present & PRESENT_FLAGS) {
        m->flags = _get_u32(buf + n);
        n += 4;
    }
    m->exptime = 0;
    if (present & PRESENT_EXPTIME) {
        m->exptime = _get_u32(buf + n);
        n += 4;
    }
    m->cas = m->ts;
    if (present & PRESENT_CAS) {
        m->cas = _get_u64(buf + n);
        n += 8;
    }
    m->ctype = NULL;
    m->nctype = 0;
    if (present & PRESENT_CTYPE) {
        if (n >= len || buf[n] == 0 || buf[n] > RECORD_CTYPE_MAX ||
            len - n - 1 < buf[n]) {
            return RECORD_ECORRUPT;
        }
        m->nctype = buf[n];
        m->ctype = (const char *)buf + n + 1;
        n += 1 + (size_t)buf[n];
    }
    *value = buf + n;
    *vlen = len - n;
    return RECORD_OK;
}

/* The seal of a version-2 record: the salt, the key's length and bytes,
 * then the record with its seal field left out. */
static uint32_t
_seal_of(const uint8_t *rec, size_t len, const void *key, size_t nkey,
         uint32_t salt)
{
    uint8_t head[8];
    _put_u32(head, salt);
    _put_u32(head + 4, (uint32_t)nkey);
    uint32_t crc = crc32c(0, head, sizeof(head));
    crc = crc32c(crc, key, nkey);
    crc = crc32c(crc, rec, RECORD_SEAL_OFF);
    return crc32c(crc, rec + RECORD_SEAL_OFF + 4,
                  len - RECORD_SEAL_OFF - 4);
}

void
record_seal(uint8_t *rec, size_t len, const void *key, size_t nkey,
            uint32_t salt)
{
    struct record_meta m;
    const uint8_t *v;
    size_t vlen;
    if (record_decode(rec, len, &m, &v, &vlen) != RECORD_OK ||
        (rec[0] >> 4) != RECORD_VERSION) {
        return;
    }
    _put_u32(rec + RECORD_SEAL_OFF, _seal_of(rec, len, key, nkey, salt));
}

enum record_status
record_verify(const uint8_t *rec, size_t len, const void *key, size_t nkey,
              uint32_t salt)
{
    struct record_meta m;
    const uint8_t *v;
    size_t vlen;
    if (record_decode(rec, len, &m, &v, &vlen) != RECORD_OK) {
        return RECORD_ECORRUPT;
    }
    if ((rec[0] >> 4) != RECORD_VERSION) {
        return RECORD_UNSEALED;
    }
    return _get_u32(rec + RECORD_SEAL_OFF) ==
                   _seal_of(rec, len, key, nkey, salt)
               ? RECORD_OK
               : RECORD_ECORRUPT;
}

int
record_newer(const struct record_meta *a, const struct record_meta *b)
{
    if (a->ts != b->ts) {
        return a->ts > b->ts;
    }
    return a->sid > b->sid;
}

void
record_tombstone_of(const struct record_meta *m, uint64_t cas,
                    struct record_meta *out)
{
    *out = *m;
    out->kind = RECORD_TOMBSTONE;
    out->flags = 0;
    out->exptime = 0;
    out->stale = false;
    out->token = false;
    out->binkey = false;
    out->ctype = NULL;
    out->nctype = 0;
    out->cas = cas;
}
