/*
 * fuzz_common: what the fuzz harnesses share.
 *
 * FUZZ_CHECK() aborts with a message, so libFuzzer (or the corpus replay
 * in `make check`) reports a broken invariant as a crash with the input
 * that caused it. The poisoning macros let a harness hide the bytes of a
 * buffer that the code under test has not been given yet; they do nothing
 * without AddressSanitizer. fuzz_check_logrec() holds every property a
 * record that logrec_decode() accepted must have; the update log and the
 * replication harnesses both use it.
 */
#ifndef KURA_FUZZ_COMMON_H
#define KURA_FUZZ_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "logrec.h"
#include "record.h"
#include "util.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FUZZ_HAVE_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define FUZZ_HAVE_ASAN 1
#endif

#ifdef FUZZ_HAVE_ASAN
#include <sanitizer/asan_interface.h>
#define FUZZ_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define FUZZ_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define FUZZ_POISON(p, n) ((void)(p), (void)(n))
#define FUZZ_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define FUZZ_CHECK(cond)                                                     \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__,      \
                    __LINE__, #cond);                                        \
            abort();                                                         \
        }                                                                    \
    } while (0)

/* True if [p, p + n) lies within [base, base + len). */
static inline bool
fuzz_inside(const void *p, size_t n, const void *base, size_t len)
{
    const char *s = p;
    const char *b = base;
    return s >= b && s <= b + len && n <= (size_t)(b + len - s);
}

/* How a stream harness's input is split (fuzz_proto, fuzz_bin, fuzz_http). */
struct fuzz_stream {
    uint8_t mode;           /* byte 0: the harness's own option bits */
    const uint8_t *sizes;   /* chunk sizes (each + 1), used in turn */
    size_t nsizes;
    const uint8_t *data;    /* the stream itself */
    size_t len;
};

#define FUZZ_MAX_CHUNK_SIZES 7

/*
 * Splits an input: byte 0 is the mode, byte 1 % 8 how many chunk sizes
 * follow (with none, chunks of 1, 3, 7 and 16 bytes), the rest the
 * stream. Returns false if the input is too short to hold a stream.
 */
static inline bool
fuzz_stream_split(const uint8_t *data, size_t size, struct fuzz_stream *out)
{
    static const uint8_t default_sizes[] = {0, 2, 6, 15};
    if (size < 2) {
        return false;
    }
    size_t given = data[1] % (FUZZ_MAX_CHUNK_SIZES + 1);
    if (size <= 2 + given) {
        return false;
    }
    out->mode = data[0];
    out->sizes = given > 0 ? data + 2 : default_sizes;
    out->nsizes = given > 0 ? given : sizeof(default_sizes);
    out->len = size - 2 - given;
    out->data = data + size - out->len;
    return true;
}

/*
 * Checks a record envelope the way the transaction layer reads one (the
 * payload of a PUT, a snapshot item): a decoded envelope must encode and
 * decode back to the same fields, and the value must lie inside `buf`.
 */
static inline void
fuzz_check_envelope(const uint8_t *buf, size_t len)
{
    struct record_meta m;
    const uint8_t *value;
    size_t vlen;

    if (record_decode(buf, len, &m, &value, &vlen) != RECORD_OK) {
        return;
    }
    FUZZ_CHECK(fuzz_inside(value, vlen, buf, len));
    FUZZ_CHECK(value + vlen == buf + len);
    FUZZ_CHECK(m.kind == RECORD_VALUE || m.kind == RECORD_TOMBSTONE);

    uint8_t env[RECORD_HEADER_MAX];
    size_t elen = record_encode(&m, env);
    FUZZ_CHECK(elen <= RECORD_HEADER_MAX);
    /* Canonical is shortest; version 1 lacked the 4-byte seal. */
    size_t stored = (size_t)(value - buf) + ((buf[0] >> 4) == 1 ? 4 : 0);
    FUZZ_CHECK(elen <= stored);
    struct record_meta again;
    const uint8_t *v2;
    size_t vlen2;
    FUZZ_CHECK(record_decode(env, elen, &again, &v2, &vlen2) == RECORD_OK);
    FUZZ_CHECK(vlen2 == 0);
    FUZZ_CHECK(again.kind == m.kind && again.flags == m.flags &&
               again.exptime == m.exptime && again.cas == m.cas &&
               again.ts == m.ts && again.sid == m.sid);
}

/*
 * Checks a record that logrec_decode() accepted from `buf` (`avail`
 * bytes): it lies inside the buffer, its checksum is good, logrec_view()
 * reads the same fields, encoding those fields again gives the same bytes,
 * and its payload decodes the way the redo and replication paths read it.
 */
static inline void
fuzz_check_logrec(const struct logrec *r, const uint8_t *buf, size_t avail)
{
    FUZZ_CHECK(r->raw == buf);
    FUZZ_CHECK(r->len >= LOGREC_HEADER && r->len <= avail);
    FUZZ_CHECK(r->len <= LOGREC_MAX_LEN);
    FUZZ_CHECK(util_get_le32(buf) == r->len);
    FUZZ_CHECK(util_get_le32(buf + 4) == crc32c(0, buf + 8, r->len - 8));
    FUZZ_CHECK(r->op == LOGREC_PUT || r->op == LOGREC_FLUSH);
    FUZZ_CHECK(fuzz_inside(r->key, r->nkey, buf, r->len));
    FUZZ_CHECK(fuzz_inside(r->payload, r->plen, buf, r->len));
    FUZZ_CHECK(r->payload + r->plen == buf + r->len);
    FUZZ_CHECK(logrec_size(r->nkey, r->plen) == r->len);
    FUZZ_CHECK(logrec_peek_len(buf) == r->len);

    struct logrec view;
    logrec_view(buf, &view);
    FUZZ_CHECK(view.raw == r->raw && view.len == r->len &&
               view.lsn == r->lsn && view.seq == r->seq &&
               view.op == r->op && view.sid == r->sid &&
               view.key == r->key && view.nkey == r->nkey &&
               view.payload == r->payload && view.plen == r->plen);

    uint8_t *again = malloc(r->len);
    FUZZ_CHECK(again != NULL);
    uint8_t *payload = logrec_begin(again, r->op, r->sid, r->key, r->nkey,
                                    r->plen);
    memcpy(payload, r->payload, r->plen);
    logrec_seal(again, r->lsn, r->seq);
    FUZZ_CHECK(memcmp(again, buf, r->len) == 0);
    free(again);

    uint64_t stamp;
    uint64_t deadline;
    bool is_flush = logrec_flush_decode(r, &stamp, &deadline);
    FUZZ_CHECK(is_flush == (r->op == LOGREC_FLUSH));
    if (is_flush) {
        uint8_t flush[LOGREC_FLUSH_PAYLOAD];
        logrec_flush_encode(flush, stamp, deadline);
        FUZZ_CHECK(memcmp(flush, r->payload, sizeof(flush)) == 0);
        FUZZ_CHECK(r->nkey == 0);
    } else {
        FUZZ_CHECK(r->nkey > 0);
        fuzz_check_envelope(r->payload, r->plen);
    }
}

/*
 * Rewrites the checksum of each record in `buf` whose length field fits,
 * walking records back to back from the start. A fuzzer cannot guess a
 * CRC32C, so without this the checks behind the checksum (fields, U1
 * order) would only ever see the seed records unchanged.
 */
static inline void
fuzz_fix_logrec_crcs(uint8_t *buf, size_t len)
{
    size_t off = 0;
    while (len - off >= LOGREC_HEADER) {
        uint32_t rlen = util_get_le32(buf + off);
        if (rlen < LOGREC_HEADER || rlen > len - off) {
            return;
        }
        util_put_le32(buf + off + 4, crc32c(0, buf + off + 8, rlen - 8));
        off += rlen;
    }
}

/*
 * Runs `run` on a copy of `data` whose checksums `fix` has rewritten,
 * unless that changed nothing (the input already had valid ones).
 */
static inline void
fuzz_run_with_fixed_crcs(const uint8_t *data, size_t len,
                         void (*fix)(uint8_t *buf, size_t len),
                         void (*run)(const uint8_t *buf, size_t len))
{
    if (len == 0) {
        return;
    }
    uint8_t *fixed = malloc(len);
    FUZZ_CHECK(fixed != NULL);
    memcpy(fixed, data, len);
    fix(fixed, len);
    if (memcmp(fixed, data, len) != 0) {
        run(fixed, len);
    }
    free(fixed);
}

#endif
