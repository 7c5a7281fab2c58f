/*
 * repl_proto: replication frame codec (see repl_proto.h).
 */
#include "repl_proto.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

size_t
repl_frame_header(uint8_t *out, enum repl_frame_type type, size_t plen)
{
    util_put_le32(out, (uint32_t)(REPL_FRAME_HEADER + plen));
    out[4] = (uint8_t)type;
    out[5] = out[6] = out[7] = 0;
    return REPL_FRAME_HEADER;
}

size_t
repl_encode_heartbeat(uint8_t out[REPL_HEARTBEAT_LEN], uint64_t lsn,
                      uint64_t seq, uint64_t pos_lsn, uint64_t pos_seq,
                      uint64_t now_us)
{
    repl_frame_header(out, REPL_FRAME_HEARTBEAT, 40);
    util_put_le64(out + 8, lsn);
    util_put_le64(out + 16, seq);
    util_put_le64(out + 24, pos_lsn);
    util_put_le64(out + 32, pos_seq);
    util_put_le64(out + 40, now_us);
    return REPL_HEARTBEAT_LEN;
}

size_t
repl_encode_u64(uint8_t out[16], enum repl_frame_type type, uint64_t v)
{
    repl_frame_header(out, type, 8);
    util_put_le64(out + 8, v);
    return 16;
}

size_t
repl_encode_ack(uint8_t out[REPL_ACK_LEN], uint64_t lsn, uint64_t seq)
{
    return repl_encode_ack_type(out, REPL_FRAME_ACK, lsn, seq);
}

size_t
repl_encode_ack_type(uint8_t out[REPL_ACK_LEN], enum repl_frame_type type,
                     uint64_t lsn, uint64_t seq)
{
    repl_frame_header(out, type, 16);
    util_put_le64(out + 8, lsn);
    util_put_le64(out + 16, seq);
    return REPL_ACK_LEN;
}

size_t
repl_encode_snap_item(uint8_t *out, const char *key, size_t nkey, size_t vlen)
{
    repl_frame_header(out, REPL_FRAME_SNAP_ITEM, 2 + nkey + vlen);
    out[8] = (uint8_t)nkey;
    out[9] = (uint8_t)(nkey >> 8);
    memcpy(out + 10, key, nkey);
    return REPL_FRAME_HEADER + 2 + nkey;
}

enum repl_status
repl_frame_decode(const uint8_t *buf, size_t avail, struct repl_frame *f)
{
    memset(f, 0, sizeof(*f));
    if (avail < REPL_FRAME_HEADER) {
        return REPL_SHORT;
    }
    uint32_t len = util_get_le32(buf);
    if (len < REPL_FRAME_HEADER || len > REPL_FRAME_MAX || buf[5] != 0 ||
        buf[6] != 0 || buf[7] != 0) {
        return REPL_CORRUPT;
    }
    f->len = len;
    if (avail < len) {
        return REPL_SHORT;
    }
    f->type = (enum repl_frame_type)buf[4];
    f->payload = buf + REPL_FRAME_HEADER;
    f->plen = len - REPL_FRAME_HEADER;
    switch (f->type) {
    case REPL_FRAME_RECORD:
        if (logrec_decode(f->payload, f->plen, &f->rec) != LOGREC_OK ||
            f->rec.len != f->plen) {
            return REPL_CORRUPT;
        }
        return REPL_OK;
    case REPL_FRAME_HEARTBEAT:
        if (f->plen != 40) {
            return REPL_CORRUPT;
        }
        f->lsn = util_get_le64(f->payload);
        f->seq = util_get_le64(f->payload + 8);
        f->pos_lsn = util_get_le64(f->payload + 16);
        f->pos_seq = util_get_le64(f->payload + 24);
        f->now_us = util_get_le64(f->payload + 32);
        if (f->pos_seq > f->seq || f->pos_lsn > f->lsn) {
            return REPL_CORRUPT;
        }
        return REPL_OK;
    case REPL_FRAME_ACK:
    case REPL_FRAME_WACK:
        if (f->plen != 16) {
            return REPL_CORRUPT;
        }
        f->lsn = util_get_le64(f->payload);
        f->seq = util_get_le64(f->payload + 8);
        return REPL_OK;
    case REPL_FRAME_SNAP_BEGIN:
    case REPL_FRAME_SNAP_END:
        if (f->plen != 8) {
            return REPL_CORRUPT;
        }
        f->lsn = f->count = util_get_le64(f->payload);
        return REPL_OK;
    case REPL_FRAME_SNAP_ITEM: {
        if (f->plen < 2) {
            return REPL_CORRUPT;
        }
        size_t nkey = (size_t)f->payload[0] | (size_t)f->payload[1] << 8;
        if (nkey == 0 || 2 + nkey > f->plen) {
            return REPL_CORRUPT;
        }
        f->key = (const char *)f->payload + 2;
        f->nkey = nkey;
        f->value = f->payload + 2 + nkey;
        f->vlen = f->plen - 2 - nkey;
        return REPL_OK;
    }
    default:
        return REPL_CORRUPT;
    }
}

/* Reads one space-separated number; advances `*pos`. */
static bool
_next_number(const char *s, size_t len, size_t *pos, uint64_t max,
             uint64_t *out)
{
    size_t i = *pos;
    while (i < len && s[i] == ' ') {
        i++;
    }
    size_t start = i;
    while (i < len && s[i] != ' ') {
        i++;
    }
    *pos = i;
    return util_parse_uint(s + start, i - start, max, out);
}

/* Reads one space-separated word; advances `*pos`. */
static void
_next_word(const char *s, size_t len, size_t *pos, size_t *start,
           size_t *wlen)
{
    size_t i = *pos;
    while (i < len && s[i] == ' ') {
        i++;
    }
    *start = i;
    while (i < len && s[i] != ' ') {
        i++;
    }
    *wlen = i - *start;
    *pos = i;
}

bool
repl_hello_parse(const char *args, size_t len, struct repl_hello *h)
{
    uint64_t v[4];
    size_t pos = 0;
    static const uint64_t max[4] = {UINT32_MAX, UINT32_MAX, UINT64_MAX,
                                    UINT32_MAX};

    for (int i = 0; i < 4; i++) {
        if (!_next_number(args, len, &pos, max[i], &v[i])) {
            return false;
        }
    }
    size_t start;
    size_t wlen;
    _next_word(args, len, &pos, &start, &wlen);
    if (!repl_auth_nonce_valid(args + start, wlen)) {
        return false;
    }
    while (pos < len && args[pos] == ' ') {
        pos++;
    }
    if (pos != len || v[1] == 0) {
        return false;
    }
    h->version = (uint32_t)v[0];
    h->sid = (uint32_t)v[1];
    h->after = v[2];
    h->flags = (uint32_t)v[3];
    memcpy(h->nonce, args + start, wlen);
    h->nonce[wlen] = '\0';
    return true;
}

int
repl_hello_format(const struct repl_hello *h, char *out, size_t cap)
{
    int n = snprintf(out, cap, "REPL %" PRIu32 " %" PRIu32 " %" PRIu64
                     " %" PRIu32 " %s\r\n", h->version, h->sid, h->after,
                     h->flags, h->nonce);
    return n > 0 && (size_t)n < cap ? n : -1;
}

/* True if `s` is exactly REPL_PROOF_HEX lowercase hex digits. */
static bool
_proof_valid(const char *s, size_t len)
{
    if (len != REPL_PROOF_HEX) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) {
            return false;
        }
    }
    return true;
}

bool
repl_challenge_parse(const char *line, char nonce[REPL_NONCE_HEX + 1],
                     char proof[REPL_PROOF_HEX + 1])
{
    static const char prefix[] = "REPL CHALLENGE ";
    size_t len = strlen(line);
    if (len < sizeof(prefix) - 1 ||
        memcmp(line, prefix, sizeof(prefix) - 1) != 0) {
        return false;
    }
    size_t pos = sizeof(prefix) - 1;
    size_t ns, nl, ps, pl, rest, rl;
    _next_word(line, len, &pos, &ns, &nl);
    _next_word(line, len, &pos, &ps, &pl);
    _next_word(line, len, &pos, &rest, &rl);
    if (!repl_auth_nonce_valid(line + ns, nl) || !_proof_valid(line + ps, pl) ||
        rl != 0) {
        return false;
    }
    memcpy(nonce, line + ns, nl);
    nonce[nl] = '\0';
    memcpy(proof, line + ps, pl);
    proof[pl] = '\0';
    return true;
}

bool
repl_auth_line_parse(const char *line, char proof[REPL_PROOF_HEX + 1])
{
    static const char prefix[] = "REPL AUTH ";
    size_t len = strlen(line);
    if (len < sizeof(prefix) - 1 ||
        memcmp(line, prefix, sizeof(prefix) - 1) != 0) {
        return false;
    }
    size_t pos = sizeof(prefix) - 1;
    size_t ps, pl, rest, rl;
    _next_word(line, len, &pos, &ps, &pl);
    _next_word(line, len, &pos, &rest, &rl);
    if (!_proof_valid(line + ps, pl) || rl != 0) {
        return false;
    }
    memcpy(proof, line + ps, pl);
    proof[pl] = '\0';
    return true;
}

bool
repl_line_wants_wack(const char *line)
{
    size_t n = strlen(line);
    size_t w = strlen(REPL_WACK_WORD);
    return n > w && memcmp(line + n - w, REPL_WACK_WORD, w) == 0;
}
