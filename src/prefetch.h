/*
 * prefetch: reading, ahead of a request, the pages of the database file
 * its key's lookup will touch, many at once, so that a worker never
 * waits on one page while other clients' pages could be on their way.
 *
 * Why: when the database is larger than the memory kurad may use (a
 * small machine, a cgroup's memory limit), most lookups need a page from
 * the disk. Tokyo Cabinet reads it with a blocking pread() on the
 * worker's thread, so a worker has one read in flight at a time and
 * every connection it owns waits behind it: two workers gave the disk a
 * queue depth of two. Here a worker first asks prefetch_key() whether a
 * request's pages are in memory; if not, the reads are queued on an
 * io_uring (submitted together at the end of the worker's pass, one
 * system call and one device notification for all of them) and the
 * request waits while the worker serves others. When the reads complete
 * the request runs, and Tokyo Cabinet finds every page it needs in the
 * page cache.
 *
 * The lookup is Tokyo Cabinet's own (tcfile.h): the key's bucket in the
 * mapped bucket array, then down the bucket's tree, comparing the hash
 * byte and the key, to the record, whose remaining pages are read too.
 * Whether a page is in memory is asked with preadv2(RWF_NOWAIT), which
 * copies the bytes when they are there (the walk goes on at once) and
 * fails with EAGAIN when they are not. The walk runs beside Tokyo
 * Cabinet's writers without its locks, so what it reads is a hint: a
 * stale or torn link only costs a useless read or a missed one, never a
 * wrong answer, because the request itself then runs through Tokyo
 * Cabinet as before. Every offset is checked against the file before it
 * is read, and a walk stops after PREFETCH_STEPS nodes. While looks
 * rarely find a page missing (a database that fits in memory), only a
 * sample of the requests is looked at.
 *
 * Thread-safety: a prefetch belongs to one worker thread, except
 * prefetch_stats().
 */
#ifndef KURA_PREFETCH_H
#define KURA_PREFETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* Nodes of one bucket's tree a walk follows before it gives up. */
#define PREFETCH_STEPS 16
/* Pages of one record's value read ahead (larger values wait in Tokyo
 * Cabinet for the rest, as before). */
#define PREFETCH_VALUE_PAGES 16

struct prefetch;

struct prefetch_stats {
    uint64_t unlooked;  /* keys not looked up: lookups rarely wait */
    uint64_t walks;     /* keys looked up */
    uint64_t resident;  /* ... whose pages were all in memory */
    uint64_t waits;     /* ... that waited for reads */
    uint64_t reads;     /* reads queued */
    uint64_t full;      /* keys not waited for: every slot busy */
};

/*
 * Creates a prefetcher over `store` with room for `depth` keys waiting at
 * once. Returns NULL when there is nothing to do or no way to do it: an
 * in-memory store, a kernel without io_uring or RWF_NOWAIT, or io_uring
 * refused (a seccomp profile); `why` (`whylen` bytes) then says which.
 * The store must outlive it.
 */
struct prefetch *prefetch_create(struct store *store, unsigned depth,
                                 char *why, size_t whylen);

/* Frees it; reads still in flight are waited for. NULL is ignored. */
void prefetch_destroy(struct prefetch *p);

/*
 * A descriptor that becomes readable when reads complete (an eventfd the
 * caller polls; prefetch_reap() consumes it).
 */
int prefetch_fd(const struct prefetch *p);

/*
 * Looks `key` up without blocking. Returns false when every page the
 * lookup needs is in memory (or the key is not stored, or cannot be
 * waited for); true when reads were queued: `owner` is then returned by
 * prefetch_reap() exactly once, when they are done. Keys longer than
 * RECORD_KEY_MAX are not looked up.
 */
bool prefetch_key(struct prefetch *p, const void *key, size_t nkey,
                  void *owner);

/* Submits the reads queued since the last call (once per worker pass). */
void prefetch_submit(struct prefetch *p);

/*
 * Collects completed reads, queues the next ones (a walk's next node, a
 * record's remaining pages) and submits them. Writes to `owners` (room
 * for `cap`) the owners whose keys are ready, once per key; returns how
 * many. Call it until it returns less than `cap`.
 */
size_t prefetch_reap(struct prefetch *p, void **owners, size_t cap);

/* Forgets `owner` (a connection that closed): it is never returned. */
void prefetch_forget(struct prefetch *p, void *owner);

/* Counters since creation; any thread may read them. */
void prefetch_stats(struct prefetch *p, struct prefetch_stats *out);

#endif
