/*
 * bench_keys: which keys `kura bench` reads and writes, and the values
 * it writes in own-keys mode.
 *
 * Keys are <prefix><index>, the index uniform over the key space or drawn
 * from a Zipf distribution (--zipf; Gray et al.'s "Quickly generating
 * billion-record synthetic databases", with rank r stored at key mix(r)
 * mod keyspace so the hot keys are scattered over the database). In
 * own-keys mode (--ack-log) connection i writes only <prefix>c<i>:<n>.
 * Pure computation: no I/O, no allocation. One generator per thread.
 */
#ifndef KURA_BENCH_KEYS_H
#define KURA_BENCH_KEYS_H

#include <stddef.h>
#include <stdint.h>

/* Room for any key the bench writes, terminator included. */
#define BENCH_KEY_CAP 320

struct bench_keys {
    uint64_t rng;          /* xorshift64* state */
    uint64_t keyspace;
    double zipf;           /* > 0: the exponent; 0: uniform */
    const char *prefix;
    double zipf_zetan;     /* Gray et al.'s constants */
    double zipf_alpha;
    double zipf_eta;
    double zipf_half;      /* 1 + 0.5^s */
};

/*
 * Sets `k` up for `keyspace` keys (at least 1) named `prefix`..., uniform
 * or with Zipf exponent `zipf` (in (0, 1); one pass over the key space),
 * its random numbers seeded from `seed`.
 */
void bench_keys_init(struct bench_keys *k, uint64_t seed, uint64_t keyspace,
                     double zipf, const char *prefix);

/* The next pseudo-random number (xorshift64*). */
uint64_t bench_keys_rand(struct bench_keys *k);

/* The index of the next key read or written, in [0, keyspace). */
uint64_t bench_keys_index(struct bench_keys *k);

/* Writes <prefix><index> to `out` (BENCH_KEY_CAP bytes); its length. */
size_t bench_keys_name(const struct bench_keys *k, uint64_t index,
                       char *out);

/*
 * Writes the own key <prefix>c<conn>:<n> to `out` (BENCH_KEY_CAP bytes;
 * the prefix at most BENCH_KEY_CAP - 2 * UTIL_U64_DIGITS - 3 bytes).
 * Returns its length (no terminator).
 */
size_t bench_keys_own(const struct bench_keys *k, int conn, uint64_t n,
                      char *out);

/* Digits in the decimal form of `v`. */
size_t bench_keys_dec_len(uint64_t v);

/* Writes `seq` zero-padded to `width` bytes (at least its digit count). */
void bench_keys_put_seq(char *p, size_t width, uint64_t seq);

#endif
