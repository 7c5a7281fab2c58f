/*
 * access: recent reads for the meta h and l flags (see access.h).
 *
 * Slot layout: tag (16 bits) << 48 | fetched (1 bit) << 32 | time (32).
 */
#include "access.h"

#include <stdlib.h>

#include "util.h"

#define TAG_SHIFT 48
#define FETCHED ((uint64_t)1 << 32)

static void
_slot(const struct access_table *t, const void *key, size_t nkey,
      size_t *index, uint64_t *tag)
{
    uint64_t h = util_hash(key, nkey);
    *index = (size_t)h & t->mask;
    /* The tag comes from bits the index does not use. */
    *tag = (h >> 40) & 0xffff;
}

int
access_init(struct access_table *t, unsigned bits)
{
    size_t n = (size_t)1 << bits;
    t->slots = calloc(n, sizeof(*t->slots));
    t->mask = n - 1;
    return t->slots != NULL ? 0 : -1;
}

void
access_deinit(struct access_table *t)
{
    free(t->slots);
    t->slots = NULL;
}

static void
_decode(uint64_t v, uint64_t tag, struct access_seen *seen)
{
    seen->known = v != 0 && (v >> TAG_SHIFT) == tag;
    seen->fetched = seen->known && (v & FETCHED) != 0;
    seen->when_s = seen->known ? (uint32_t)v : 0;
}

void
access_read(struct access_table *t, const void *key, size_t nkey,
            uint32_t now_s, struct access_seen *seen)
{
    size_t i;
    uint64_t tag;
    _slot(t, key, nkey, &i, &tag);
    uint64_t want = tag << TAG_SHIFT | FETCHED | now_s;
    /* A hot key read again in the same second changes nothing: no write,
     * so readers on other CPUs do not fight over the cache line. */
    uint64_t v = atomic_load_explicit(&t->slots[i], memory_order_relaxed);
    if (v != want) {
        v = atomic_exchange_explicit(&t->slots[i], want,
                                     memory_order_relaxed);
    }
    _decode(v, tag, seen);
}

void
access_write(struct access_table *t, const void *key, size_t nkey,
             uint32_t now_s)
{
    size_t i;
    uint64_t tag;
    _slot(t, key, nkey, &i, &tag);
    atomic_store_explicit(&t->slots[i], tag << TAG_SHIFT | now_s,
                          memory_order_relaxed);
}

void
access_peek(struct access_table *t, const void *key, size_t nkey,
            struct access_seen *seen)
{
    size_t i;
    uint64_t tag;
    _slot(t, key, nkey, &i, &tag);
    _decode(atomic_load_explicit(&t->slots[i], memory_order_relaxed), tag,
            seen);
}
