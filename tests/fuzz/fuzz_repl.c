/*
 * fuzz_repl: fuzzes the replication wire decoders (repl_proto.h).
 *
 * A standby decodes whatever its master's socket delivers and a master
 * decodes its standbys' hello and authentication lines, so neither may
 * trust the bytes. The input is what one side of a replication connection
 * reads, in order:
 *   - optionally a "REPL ..." hello line, parsed as a master parses it
 *     (proto_parse(), then repl_hello_parse() on its arguments);
 *   - any further lines that start with "REPL " (the handshake: a
 *     master's CHALLENGE, a standby's AUTH, the master's answer), each
 *     read as netio_read_line() delivers it and given to
 *     repl_challenge_parse() and repl_auth_line_parse();
 *   - a stream of back-to-back frames, decoded as repl_receiver.c does:
 *     repl_frame_decode() until it needs more bytes or finds garbage, each
 *     frame's payload read the way _frame() reads it (logrec_decode() for
 *     RECORD, the record envelope for PUT records and snapshot items).
 * Each accepted frame must lie inside the stream, decode the same from an
 * exact-size copy (so it reads none of the bytes after it), need all of
 * its bytes, and encode back to the same bytes with the encoders the other
 * side uses; each accepted line must format back to itself. A second pass
 * does the same with the checksum of every RECORD frame's record made
 * good, so that the checks behind the checksum are reached too.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "logrec.h"
#include "proto.h"
#include "repl_auth.h"
#include "repl_proto.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A hello that parses must format and parse back to the same fields. */
static void
_check_hello(const char *args, size_t len)
{
    struct repl_hello h;
    if (!repl_hello_parse(args, len, &h)) {
        return;
    }
    FUZZ_CHECK(h.sid != 0);
    FUZZ_CHECK(repl_auth_nonce_valid(h.nonce, strlen(h.nonce)));
    char line[REPL_LINE_MAX];
    int n = repl_hello_format(&h, line, sizeof(line));
    FUZZ_CHECK(n > 7 && memcmp(line, "REPL ", 5) == 0);
    FUZZ_CHECK(line[n - 2] == '\r' && line[n - 1] == '\n');
    struct repl_hello again;
    FUZZ_CHECK(repl_hello_parse(line + 5, (size_t)n - 7, &again));
    FUZZ_CHECK(again.version == h.version && again.sid == h.sid &&
               again.after == h.after && again.flags == h.flags &&
               strcmp(again.nonce, h.nonce) == 0);
}

/* True if `s` is `len` lowercase hex digits. */
static bool
_is_hex(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) {
            return false;
        }
    }
    return true;
}

/*
 * A handshake line as netio_read_line() returns it (NUL-terminated, the
 * "\r\n" removed), given to both line parsers: what they accept must be
 * well formed and format back to the same line.
 */
static void
_check_handshake_line(const char *line)
{
    char nonce[REPL_NONCE_HEX + 1];
    char proof[REPL_PROOF_HEX + 1];
    char again[REPL_LINE_MAX];

    if (repl_challenge_parse(line, nonce, proof)) {
        FUZZ_CHECK(strlen(nonce) == REPL_NONCE_HEX &&
                   _is_hex(nonce, REPL_NONCE_HEX));
        FUZZ_CHECK(strlen(proof) == REPL_PROOF_HEX &&
                   _is_hex(proof, REPL_PROOF_HEX));
        /* How a master writes it (less the line end). */
        snprintf(again, sizeof(again), "REPL CHALLENGE %s %s", nonce, proof);
        char nonce2[REPL_NONCE_HEX + 1];
        char proof2[REPL_PROOF_HEX + 1];
        FUZZ_CHECK(repl_challenge_parse(again, nonce2, proof2));
        FUZZ_CHECK(strcmp(nonce, nonce2) == 0 && strcmp(proof, proof2) == 0);
    }
    if (repl_auth_line_parse(line, proof)) {
        FUZZ_CHECK(strlen(proof) == REPL_PROOF_HEX &&
                   _is_hex(proof, REPL_PROOF_HEX));
        snprintf(again, sizeof(again), "REPL AUTH %s", proof);
        char proof2[REPL_PROOF_HEX + 1];
        FUZZ_CHECK(repl_auth_line_parse(again, proof2));
        FUZZ_CHECK(strcmp(proof, proof2) == 0);
    }
}

/*
 * Reads the handshake lines that follow the hello: each starts with
 * "REPL " and ends in "\r\n" within REPL_LINE_MAX - 1 bytes, the most
 * netio_read_line() takes. Returns the bytes they took.
 */
static size_t
_handshake_lines(const uint8_t *data, size_t size)
{
    size_t off = 0;
    while (size - off >= 5 && memcmp(data + off, "REPL ", 5) == 0) {
        size_t max = size - off < REPL_LINE_MAX - 1 ? size - off
                                                    : REPL_LINE_MAX - 1;
        const uint8_t *end = NULL;
        for (size_t i = 1; i < max; i++) {
            if (data[off + i - 1] == '\r' && data[off + i] == '\n') {
                end = data + off + i - 1;
                break;
            }
        }
        if (end == NULL) {
            break;
        }
        size_t len = (size_t)(end - (data + off));
        char line[REPL_LINE_MAX];
        memcpy(line, data + off, len);
        line[len] = '\0';
        _check_handshake_line(line);
        off += len + 2;
    }
    return off;
}

/*
 * Parses a leading "REPL ..." line as a master's connection does. Returns
 * the bytes it took (0 if the input does not start with such a line).
 */
static size_t
_hello_line(const uint8_t *data, size_t size)
{
    static const struct proto_limits limits = {
        PROTO_MAX_LINE_DEFAULT, (size_t)1 << 20, (size_t)1 << 20, false};
    struct proto_parser p;
    struct proto_request req;
    size_t consumed;

    proto_parser_init(&p, &limits);
    if (proto_parse(&p, (const char *)data, size, &consumed, &req) !=
            PROTO_OK ||
        req.cmd != PROTO_CMD_REPL) {
        return 0;
    }
    _check_hello(req.args, req.args_len);
    return consumed;
}

/* The frame `f` decoded from `buf` encodes back to the same bytes. */
static void
_check_encoding(const struct repl_frame *f, const uint8_t *buf)
{
    uint8_t out[REPL_HEARTBEAT_LEN];
    size_t n = 0;

    switch (f->type) {
    case REPL_FRAME_RECORD:
        /* How a master frames a record it read from its log. */
        n = repl_frame_header(out, REPL_FRAME_RECORD, f->rec.len);
        break;
    case REPL_FRAME_HEARTBEAT:
        n = repl_encode_heartbeat(out, f->lsn, f->seq, f->pos_lsn, f->pos_seq,
                                  f->now_us);
        break;
    case REPL_FRAME_ACK:
        n = repl_encode_ack(out, f->lsn, f->seq);
        break;
    case REPL_FRAME_WACK:
        n = repl_encode_ack_type(out, REPL_FRAME_WACK, f->lsn, f->seq);
        break;
    case REPL_FRAME_SNAP_BEGIN:
        n = repl_encode_u64(out, f->type, f->lsn);
        break;
    case REPL_FRAME_SNAP_END:
        n = repl_encode_u64(out, f->type, f->count);
        break;
    case REPL_FRAME_SNAP_ITEM: {
        uint8_t *hdr = malloc(REPL_FRAME_HEADER + 2 + f->nkey);
        FUZZ_CHECK(hdr != NULL);
        n = repl_encode_snap_item(hdr, f->key, f->nkey, f->vlen);
        FUZZ_CHECK(n == REPL_FRAME_HEADER + 2 + f->nkey);
        FUZZ_CHECK(memcmp(hdr, buf, n) == 0);
        free(hdr);
        return;
    }
    default:
        FUZZ_CHECK(!"decoded a frame of unknown type");
    }
    FUZZ_CHECK(n <= f->len);
    FUZZ_CHECK(memcmp(out, buf, n) == 0);
}

/* Everything repl_proto.h promises about a frame decoded with REPL_OK. */
static void
_check_frame(const struct repl_frame *f, const uint8_t *buf, size_t avail)
{
    FUZZ_CHECK(f->len >= REPL_FRAME_HEADER && f->len <= avail);
    FUZZ_CHECK(f->len <= REPL_FRAME_MAX);
    FUZZ_CHECK(util_get_le32(buf) == f->len);
    FUZZ_CHECK(buf[4] == (uint8_t)f->type);
    FUZZ_CHECK(buf[5] == 0 && buf[6] == 0 && buf[7] == 0);
    FUZZ_CHECK(f->payload == buf + REPL_FRAME_HEADER);
    FUZZ_CHECK(f->plen == f->len - REPL_FRAME_HEADER);

    switch (f->type) {
    case REPL_FRAME_RECORD: {
        /* The standby stages the record as it is; check it as such. */
        FUZZ_CHECK(f->rec.len == f->plen);
        fuzz_check_logrec(&f->rec, f->payload, f->plen);
        struct logrec again;
        FUZZ_CHECK(logrec_decode(f->payload, f->plen, &again) == LOGREC_OK);
        FUZZ_CHECK(again.lsn == f->rec.lsn && again.seq == f->rec.seq);
        break;
    }
    case REPL_FRAME_HEARTBEAT:
        FUZZ_CHECK(f->plen == 40);
        FUZZ_CHECK(f->pos_lsn <= f->lsn && f->pos_seq <= f->seq);
        break;
    case REPL_FRAME_ACK:
    case REPL_FRAME_WACK: /* -fsync peer's report (repl_sender.h R5) */
        FUZZ_CHECK(f->plen == 16);
        break;
    case REPL_FRAME_SNAP_BEGIN:
    case REPL_FRAME_SNAP_END:
        FUZZ_CHECK(f->plen == 8);
        break;
    case REPL_FRAME_SNAP_ITEM:
        FUZZ_CHECK(f->nkey > 0);
        FUZZ_CHECK(f->key == (const char *)f->payload + 2);
        FUZZ_CHECK(f->value == f->payload + 2 + f->nkey);
        FUZZ_CHECK(f->value + f->vlen == buf + f->len);
        fuzz_check_envelope(f->value, f->vlen);
        break;
    default:
        FUZZ_CHECK(!"decoded a frame of unknown type");
    }
    _check_encoding(f, buf);

    /* Decoding needs exactly the frame's bytes: no more, no fewer. */
    uint8_t *copy = malloc(f->len);
    FUZZ_CHECK(copy != NULL);
    memcpy(copy, buf, f->len);
    struct repl_frame g;
    FUZZ_CHECK(repl_frame_decode(copy, f->len, &g) == REPL_OK);
    FUZZ_CHECK(g.type == f->type && g.len == f->len && g.plen == f->plen &&
               g.lsn == f->lsn && g.seq == f->seq && g.pos_lsn == f->pos_lsn &&
               g.pos_seq == f->pos_seq && g.now_us == f->now_us &&
               g.count == f->count && g.nkey == f->nkey &&
               g.vlen == f->vlen && g.rec.len == f->rec.len);
    FUZZ_CHECK(repl_frame_decode(copy, f->len - 1, &g) == REPL_SHORT);
    FUZZ_CHECK(g.len == (f->len - 1 >= REPL_FRAME_HEADER ? f->len : 0));
    free(copy);
}

/* Decodes back-to-back frames as a standby's session loop does. */
static void
_decode_stream(const uint8_t *buf, size_t len)
{
    size_t off = 0;
    struct repl_frame f;
    enum repl_status st;

    while ((st = repl_frame_decode(buf + off, len - off, &f)) == REPL_OK) {
        _check_frame(&f, buf + off, len - off);
        off += f.len;
    }
    if (st == REPL_SHORT) {
        /* The standby grows its buffer to f.len: it must be sane. */
        if (len - off < REPL_FRAME_HEADER) {
            FUZZ_CHECK(f.len == 0);
        } else {
            FUZZ_CHECK(f.len > len - off);
            FUZZ_CHECK(f.len >= REPL_FRAME_HEADER &&
                       f.len <= REPL_FRAME_MAX);
        }
    } else {
        FUZZ_CHECK(st == REPL_CORRUPT);
    }
}

/* Makes the checksum of each RECORD frame's record good. */
static void
_fix_record_crcs(uint8_t *buf, size_t len)
{
    size_t off = 0;
    while (len - off >= REPL_FRAME_HEADER) {
        uint32_t flen = util_get_le32(buf + off);
        if (flen < REPL_FRAME_HEADER || flen > len - off) {
            return;
        }
        if (buf[off + 4] == REPL_FRAME_RECORD) {
            fuzz_fix_logrec_crcs(buf + off + REPL_FRAME_HEADER,
                                 flen - REPL_FRAME_HEADER);
        }
        off += flen;
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The arguments of a hello, unfiltered by the protocol parser. */
    _check_hello((const char *)data, size < 256 ? size : 256);

    size_t hello = _hello_line(data, size);
    hello += _handshake_lines(data + hello, size - hello);
    const uint8_t *stream = data + hello;
    size_t len = size - hello;
    _decode_stream(stream, len);
    fuzz_run_with_fixed_crcs(stream, len, _fix_record_crcs, _decode_stream);
    return 0;
}
