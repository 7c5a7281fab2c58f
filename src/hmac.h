/*
 * hmac: SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104), for the
 * replication handshake's shared-secret authentication (repl_auth.h).
 *
 * Pure functions on caller-owned buffers; any thread.
 */
#ifndef KURA_HMAC_H
#define KURA_HMAC_H

#include <stddef.h>
#include <stdint.h>

#define HMAC_SHA256_LEN 32
#define HMAC_BLOCK_LEN 64

struct hmac_sha256_ctx {
    uint32_t h[8];
    uint64_t total;               /* bytes hashed so far */
    uint8_t block[HMAC_BLOCK_LEN];
    size_t used;                  /* bytes waiting in block */
};

/* Incremental SHA-256: init, any number of updates, final. */
void hmac_sha256_init(struct hmac_sha256_ctx *c);
void hmac_sha256_update(struct hmac_sha256_ctx *c, const void *p, size_t n);
void hmac_sha256_final(struct hmac_sha256_ctx *c,
                       uint8_t out[HMAC_SHA256_LEN]);

/* SHA-256 of `n` bytes at `p`. */
void hmac_sha256(const void *p, size_t n, uint8_t out[HMAC_SHA256_LEN]);

/*
 * HMAC-SHA-256 of the concatenation of `nparts` buffers (`parts[i]`,
 * `lens[i]` bytes) under `key` (`klen` bytes, any length).
 */
void hmac_sha256_mac(const void *key, size_t klen, const void *const *parts,
                     const size_t *lens, size_t nparts,
                     uint8_t out[HMAC_SHA256_LEN]);

/*
 * Compares `n` bytes in time independent of where they differ. Returns 1
 * if equal, 0 if not.
 */
int hmac_equal(const uint8_t *a, const uint8_t *b, size_t n);

#endif
