/*
 * detail: per-prefix request counts, memcached's `stats detail`.
 *
 * With detail on (`stats detail on`), every key read by a get (text get,
 * gets, gat, gats and binary get, getk, gat, touch), stored by a storage
 * command (set, add, replace, append, prepend, cas, text and binary) or
 * deleted by delete is counted under its prefix: the bytes before the
 * first ':' (a key without one is not counted). `stats detail dump` lists
 * them as memcached does, "PREFIX <p> get <n> hit <n> set <n> del <n>",
 * then "END". Meta commands, incr and decr are not counted, as in
 * memcached 1.6.18. The counts live in memory, are per server and are
 * cleared by `stats reset`; `stats detail off` stops counting but keeps
 * them.
 *
 * Memory is bounded: at most DETAIL_MAX_PREFIXES prefixes are kept;
 * later ones are not counted (memcached keeps every prefix it sees).
 *
 * Thread-safety: any thread. The on/off switch is an atomic read on the
 * request path; the table has one mutex, taken only while detail is on.
 */
#ifndef KURA_DETAIL_H
#define KURA_DETAIL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define DETAIL_MAX_PREFIXES 65536
#define DETAIL_BUCKETS 256

struct detail_prefix;

struct detail {
    atomic_bool on;
    pthread_mutex_t lock;
    struct detail_prefix *buckets[DETAIL_BUCKETS];
    size_t nprefixes;
};

/* Sets up `d`, off and empty. */
void detail_init(struct detail *d);

/* Frees every prefix. */
void detail_deinit(struct detail *d);

/* Turns counting on or off. */
void detail_set(struct detail *d, bool on);

/* Whether counting is on. */
bool detail_on(struct detail *d);

/* Count a get of `key` (a hit if `hit`), a store, a delete. No-ops while
 * detail is off or when the key has no prefix. */
void detail_get(struct detail *d, const void *key, size_t nkey, bool hit);
void detail_set_key(struct detail *d, const void *key, size_t nkey);
void detail_delete(struct detail *d, const void *key, size_t nkey);

/* Forgets every count (stats reset). */
void detail_clear(struct detail *d);

/*
 * Appends the dump, "PREFIX ... \r\n" lines and "END\r\n", to `out`,
 * which may grow to `limit` bytes. Returns false if it could not.
 */
bool detail_dump(struct detail *d, struct buf *out, size_t limit);

#endif
