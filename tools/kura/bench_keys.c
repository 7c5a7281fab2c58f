/*
 * bench_keys: the keys and own-keys values of `kura bench` (see
 * bench_keys.h).
 */
#include "bench_keys.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

/* splitmix64's finaliser: scatters Zipf ranks over the key space. */
static uint64_t
_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

void
bench_keys_init(struct bench_keys *k, uint64_t seed, uint64_t keyspace,
                double zipf, const char *prefix)
{
    memset(k, 0, sizeof(*k));
    k->rng = seed;
    k->keyspace = keyspace > 0 ? keyspace : 1;
    k->zipf = zipf;
    k->prefix = prefix;
    if (zipf <= 0) {
        return;
    }
    /* Gray et al.'s constants for n keys and exponent s. */
    uint64_t n = k->keyspace;
    double zetan = 0;
    for (uint64_t i = 1; i <= n; i++) {
        zetan += 1.0 / pow((double)i, zipf);
    }
    double zeta2 = 1.0 + 1.0 / pow(2.0, zipf);
    k->zipf_zetan = zetan;
    k->zipf_alpha = 1.0 / (1.0 - zipf);
    k->zipf_eta = (1.0 - pow(2.0 / (double)n, 1.0 - zipf)) /
                  (1.0 - zeta2 / zetan);
    k->zipf_half = 1.0 + pow(0.5, zipf);
}

uint64_t
bench_keys_rand(struct bench_keys *k)
{
    /* xorshift64*: cheap and good enough for picking keys. */
    k->rng ^= k->rng >> 12;
    k->rng ^= k->rng << 25;
    k->rng ^= k->rng >> 27;
    return k->rng * 2685821657736338717ULL;
}

/* A uniform double in [0, 1). */
static double
_rand01(struct bench_keys *k)
{
    return (double)(bench_keys_rand(k) >> 11) * (1.0 / 9007199254740992.0);
}

uint64_t
bench_keys_index(struct bench_keys *k)
{
    uint64_t n = k->keyspace;
    if (k->zipf <= 0) {
        return bench_keys_rand(k) % n;
    }
    double u = _rand01(k);
    double uz = u * k->zipf_zetan;
    uint64_t rank;
    if (uz < 1.0) {
        rank = 0;
    } else if (uz < k->zipf_half) {
        rank = 1;
    } else {
        rank = (uint64_t)((double)n *
                          pow(k->zipf_eta * u - k->zipf_eta + 1.0,
                              k->zipf_alpha));
    }
    return _mix(rank) % n;
}

size_t
bench_keys_name(const struct bench_keys *k, uint64_t index, char *out)
{
    return (size_t)snprintf(out, BENCH_KEY_CAP, "%s%" PRIu64, k->prefix,
                            index);
}

size_t
bench_keys_own(const struct bench_keys *k, int conn, uint64_t n, char *out)
{
    size_t plen = strlen(k->prefix);
    size_t len = plen;
    memcpy(out, k->prefix, plen);
    out[len++] = 'c';
    len += util_u64_to_dec((uint64_t)conn, out + len);
    out[len++] = ':';
    len += util_u64_to_dec(n, out + len);
    return len;
}

size_t
bench_keys_dec_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

void
bench_keys_put_seq(char *p, size_t width, uint64_t seq)
{
    char digits[UTIL_U64_DIGITS];
    size_t nd = util_u64_to_dec(seq, digits);
    memset(p, '0', width - nd);
    memcpy(p + width - nd, digits, nd);
}
