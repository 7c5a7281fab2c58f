/*
 * hmac: SHA-256 and HMAC-SHA-256 (see hmac.h), written from FIPS 180-4
 * section 6.2 and RFC 2104.
 */
#include "hmac.h"

#include <string.h>

/* The first 32 bits of the fractional parts of the cube roots of the
 * first 64 primes (FIPS 180-4, 4.2.2). */
static const uint32_t round_constants[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
    0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t
_rotr(uint32_t x, unsigned n)
{
    return (x >> n) | (x << (32 - n));
}

static uint32_t
_load_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           (uint32_t)p[3];
}

static void
_store_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* One 512-bit block (FIPS 180-4, 6.2.2). */
static void
_compress(uint32_t h[8], const uint8_t block[HMAC_BLOCK_LEN])
{
    uint32_t w[64];
    for (int t = 0; t < 16; t++) {
        w[t] = _load_be32(block + 4 * t);
    }
    for (int t = 16; t < 64; t++) {
        uint32_t s0 = _rotr(w[t - 15], 7) ^ _rotr(w[t - 15], 18) ^
                      (w[t - 15] >> 3);
        uint32_t s1 = _rotr(w[t - 2], 17) ^ _rotr(w[t - 2], 19) ^
                      (w[t - 2] >> 10);
        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
    uint32_t e = h[4], f = h[5], g = h[6], k = h[7];
    for (int t = 0; t < 64; t++) {
        uint32_t sum1 = _rotr(e, 6) ^ _rotr(e, 11) ^ _rotr(e, 25);
        uint32_t choose = (e & f) ^ (~e & g);
        uint32_t t1 = k + sum1 + choose + round_constants[t] + w[t];
        uint32_t sum0 = _rotr(a, 2) ^ _rotr(a, 13) ^ _rotr(a, 22);
        uint32_t majority = (a & b) ^ (a & c) ^ (b & c);
        uint32_t t2 = sum0 + majority;
        k = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += k;
}

void
hmac_sha256_init(struct hmac_sha256_ctx *c)
{
    /* The first 32 bits of the fractional parts of the square roots of
     * the first 8 primes (FIPS 180-4, 5.3.3). */
    static const uint32_t initial[8] = {
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
        0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
    };
    memcpy(c->h, initial, sizeof(initial));
    c->total = 0;
    c->used = 0;
}

void
hmac_sha256_update(struct hmac_sha256_ctx *c, const void *p, size_t n)
{
    const uint8_t *in = p;
    c->total += n;
    while (n > 0) {
        size_t take = HMAC_BLOCK_LEN - c->used;
        if (take > n) {
            take = n;
        }
        memcpy(c->block + c->used, in, take);
        c->used += take;
        in += take;
        n -= take;
        if (c->used == HMAC_BLOCK_LEN) {
            _compress(c->h, c->block);
            c->used = 0;
        }
    }
}

void
hmac_sha256_final(struct hmac_sha256_ctx *c, uint8_t out[HMAC_SHA256_LEN])
{
    uint64_t bits = c->total * 8;
    /* Padding: a one bit, zeros, then the length in bits (5.1.1). */
    c->block[c->used++] = 0x80;
    if (c->used > HMAC_BLOCK_LEN - 8) {
        memset(c->block + c->used, 0, HMAC_BLOCK_LEN - c->used);
        _compress(c->h, c->block);
        c->used = 0;
    }
    memset(c->block + c->used, 0, HMAC_BLOCK_LEN - 8 - c->used);
    for (int i = 0; i < 8; i++) {
        c->block[HMAC_BLOCK_LEN - 1 - i] = (uint8_t)(bits >> (8 * i));
    }
    _compress(c->h, c->block);
    for (int i = 0; i < 8; i++) {
        _store_be32(out + 4 * i, c->h[i]);
    }
    memset(c, 0, sizeof(*c));
}

void
hmac_sha256(const void *p, size_t n, uint8_t out[HMAC_SHA256_LEN])
{
    struct hmac_sha256_ctx c;
    hmac_sha256_init(&c);
    hmac_sha256_update(&c, p, n);
    hmac_sha256_final(&c, out);
}

void
hmac_sha256_mac(const void *key, size_t klen, const void *const *parts,
                const size_t *lens, size_t nparts,
                uint8_t out[HMAC_SHA256_LEN])
{
    uint8_t k[HMAC_BLOCK_LEN];
    uint8_t pad[HMAC_BLOCK_LEN];
    uint8_t inner[HMAC_SHA256_LEN];
    struct hmac_sha256_ctx c;

    memset(k, 0, sizeof(k));
    if (klen > HMAC_BLOCK_LEN) {
        hmac_sha256(key, klen, k); /* long keys are hashed first */
    } else if (klen > 0) {
        memcpy(k, key, klen);
    }
    for (int i = 0; i < HMAC_BLOCK_LEN; i++) {
        pad[i] = k[i] ^ 0x36;
    }
    hmac_sha256_init(&c);
    hmac_sha256_update(&c, pad, sizeof(pad));
    for (size_t i = 0; i < nparts; i++) {
        hmac_sha256_update(&c, parts[i], lens[i]);
    }
    hmac_sha256_final(&c, inner);
    for (int i = 0; i < HMAC_BLOCK_LEN; i++) {
        pad[i] = k[i] ^ 0x5c;
    }
    hmac_sha256_init(&c);
    hmac_sha256_update(&c, pad, sizeof(pad));
    hmac_sha256_update(&c, inner, sizeof(inner));
    hmac_sha256_final(&c, out);
    memset(k, 0, sizeof(k));
    memset(pad, 0, sizeof(pad));
}

int
hmac_equal(const uint8_t *a, const uint8_t *b, size_t n)
{
    uint8_t diff = 0;
    for (size_t i = 0; i < n; i++) {
        diff |= a[i] ^ b[i];
    }
    return diff == 0;
}
