/*
 * detail: per-prefix request counts (see detail.h).
 */
#include "detail.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct detail_prefix {
    struct detail_prefix *next;
    uint64_t gets;
    uint64_t hits;
    uint64_t sets;
    uint64_t dels;
    size_t len;
    char s[]; /* the prefix, NUL-terminated */
};

void
detail_init(struct detail *d)
{
    memset(d->buckets, 0, sizeof(d->buckets));
    d->nprefixes = 0;
    atomic_init(&d->on, false);
    pthread_mutex_init(&d->lock, NULL);
}

void
detail_clear(struct detail *d)
{
    pthread_mutex_lock(&d->lock);
    for (size_t i = 0; i < DETAIL_BUCKETS; i++) {
        struct detail_prefix *p = d->buckets[i];
        while (p != NULL) {
            struct detail_prefix *next = p->next;
            free(p);
            p = next;
        }
        d->buckets[i] = NULL;
    }
    d->nprefixes = 0;
    pthread_mutex_unlock(&d->lock);
}

void
detail_deinit(struct detail *d)
{
    detail_clear(d);
    pthread_mutex_destroy(&d->lock);
}

void
detail_set(struct detail *d, bool on)
{
    atomic_store_explicit(&d->on, on, memory_order_relaxed);
}

bool
detail_on(struct detail *d)
{
    return atomic_load_explicit(&d->on, memory_order_relaxed);
}

/* The prefix's length, or 0 if the key has no ':' (memcached reads the
 * key as a C string: a NUL ends the search too). */
static size_t
_prefix_len(const char *key, size_t nkey)
{
    for (size_t i = 0; i < nkey && key[i] != '\0'; i++) {
        if (key[i] == ':') {
            return i;
        }
    }
    return (size_t)-1;
}

static unsigned
_bucket(const char *s, size_t n)
{
    uint32_t h = 2166136261u; /* FNV-1a: the order of a dump is free */
    for (size_t i = 0; i < n; i++) {
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    }
    return h % DETAIL_BUCKETS;
}

/* The prefix's entry, made if new; NULL if the table is full. Caller
 * holds the lock. */
static struct detail_prefix *
_find(struct detail *d, const char *key, size_t len)
{
    unsigned b = _bucket(key, len);
    for (struct detail_prefix *p = d->buckets[b]; p != NULL; p = p->next) {
        if (p->len == len && memcmp(p->s, key, len) == 0) {
            return p;
        }
    }
    if (d->nprefixes >= DETAIL_MAX_PREFIXES) {
        return NULL;
    }
    struct detail_prefix *p = calloc(1, sizeof(*p) + len + 1);
    if (p == NULL) {
        return NULL;
    }
    memcpy(p->s, key, len);
    p->len = len;
    p->next = d->buckets[b];
    d->buckets[b] = p;
    d->nprefixes++;
    return p;
}

enum what { GET, HIT, SET, DEL };

static void
_count(struct detail *d, const void *key, size_t nkey, enum what w)
{
    if (!detail_on(d)) {
        return;
    }
    size_t len = _prefix_len(key, nkey);
    if (len == (size_t)-1) {
        return;
    }
    pthread_mutex_lock(&d->lock);
    struct detail_prefix *p = _find(d, key, len);
    if (p != NULL) {
        switch (w) {
        case HIT:
            p->hits++;
            /* fall through */
        case GET:
            p->gets++;
            break;
        case SET:
            p->sets++;
            break;
        case DEL:
            p->dels++;
            break;
        }
    }
    pthread_mutex_unlock(&d->lock);
}

void
detail_get(struct detail *d, const void *key, size_t nkey, bool hit)
{
    _count(d, key, nkey, hit ? HIT : GET);
}

void
detail_set_key(struct detail *d, const void *key, size_t nkey)
{
    _count(d, key, nkey, SET);
}

void
detail_delete(struct detail *d, const void *key, size_t nkey)
{
    _count(d, key, nkey, DEL);
}

bool
detail_dump(struct detail *d, struct buf *out, size_t limit)
{
    bool ok = true;
    pthread_mutex_lock(&d->lock);
    for (size_t i = 0; ok && i < DETAIL_BUCKETS; i++) {
        for (struct detail_prefix *p = d->buckets[i]; ok && p != NULL;
             p = p->next) {
            char line[128];
            int n = snprintf(line, sizeof(line),
                             " get %" PRIu64 " hit %" PRIu64 " set %" PRIu64
                             " del %" PRIu64 "\r\n",
                             p->gets, p->hits, p->sets, p->dels);
            /* The prefix is written as a C string, as memcached's %s. */
            ok = buf_append(out, "PREFIX ", 7, limit) &&
                 buf_append(out, p->s, strlen(p->s), limit) &&
                 buf_append(out, line, (size_t)n, limit);
        }
    }
    pthread_mutex_unlock(&d->lock);
    return ok && buf_append(out, "END\r\n", 5, limit);
}
