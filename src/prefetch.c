/*
 * prefetch: reading a lookup's pages ahead, many at once (see prefetch.h).
 *
 * A key's walk: the bucket's first record, then down the tree, one node
 * per read. Each node is read PREFETCH_HEAD bytes at a time, enough for
 * a record's header and the longest key, so one read decides where to go
 * next. Once the key's record is found, the pages of its value past that
 * read are read too (one byte each: the kernel reads the whole page into
 * the page cache, which is all that is wanted).
 *
 * prefetch_key() walks synchronously as long as preadv2(RWF_NOWAIT) finds
 * the bytes in memory. At the first node or value page that is not, the
 * walk takes a slot and continues asynchronously: an io_uring read into
 * the slot's buffer, and on its completion (prefetch_reap()) the next
 * step, until the record's pages are all read; then the owner is handed
 * back. RWF_NOWAIT itself may have started reading the missing page (the
 * kernel does, for a buffered read); the io_uring read then waits for
 * that same I/O rather than starting another.
 */
#include "prefetch.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include "record.h"
#include "tcfile.h"

/* Bytes read per tree node: the longest record header and key. */
#define PREFETCH_HEAD 512
/*
 * A look costs a system call or two (about 1.5 us), a lookup that waits
 * for the disk in the worker tens of us and every other client's turn. So
 * while fewer than PREFETCH_CALM_MISS of recent looks (an average over
 * about 64, in 1/65536) found a page missing, only one request in
 * PREFETCH_SAMPLE is looked at, which keeps the average current; a
 * database that fits in memory then pays a tenth of a microsecond a
 * request (measured: 11.5-11.7 us of CPU per get without looks, 12.3-13.8
 * with a look at every one).
 */
#define PREFETCH_CALM_MISS 1311 /* 2% */
#define PREFETCH_SAMPLE 16

struct walk {
    bool used;
    void *owner;          /* NULL once forgotten */
    uint8_t hash;         /* the key's second hash byte */
    uint16_t nkey;
    uint64_t at;          /* the node being read */
    unsigned steps;       /* nodes visited */
    unsigned pending;     /* reads in flight */
    bool body;            /* reading the record's value pages */
    uint8_t key[RECORD_KEY_MAX];
    uint8_t buf[PREFETCH_HEAD];
};

struct prefetch {
    struct store *store;
    struct store_layout lay;
    struct tcfile fmt;    /* the format, and the mapped bucket array */
    uint64_t page;
    struct io_uring ring;
    bool ring_ready;
    int efd;
    struct walk *walks;
    unsigned depth;
    unsigned *free_slots;
    unsigned nfree;
    uint32_t miss_avg;    /* recent looks that waited, in 1/65536 */
    uint32_t unlooked;    /* requests passed since the last look */
    unsigned queued;      /* SQEs prepared, not yet submitted */
    unsigned inflight;    /* SQEs submitted, not yet completed */
    uint8_t scratch[PREFETCH_HEAD];
    /* struct prefetch_stats, readable from other threads */
    _Atomic uint64_t n_unlooked, n_walks, n_resident, n_waits, n_reads, n_full;
};

struct prefetch *
prefetch_create(struct store *store, unsigned depth, char *why,
                size_t whylen)
{
    struct prefetch *p = calloc(1, sizeof(*p));
    if (p == NULL) {
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    p->efd = -1;
    p->store = store;
    p->miss_avg = 65536; /* look at every request until shown otherwise */
    if (!store_layout(store, &p->lay)) {
        snprintf(why, whylen, "an in-memory database");
        free(p);
        return NULL;
    }
    p->fmt.fd = -1;
    p->fmt.map = p->lay.map;
    p->fmt.size = p->lay.map_size;
    p->fmt.big_endian = p->lay.big_endian;
    p->fmt.apow = p->lay.apow;
    p->fmt.width = p->lay.width;
    p->fmt.bnum = p->lay.bnum;
    p->fmt.frec = p->lay.frec;
    long page = sysconf(_SC_PAGESIZE);
    p->page = page > 0 ? (uint64_t)page : 4096;
    p->depth = depth;
    p->walks = calloc(depth, sizeof(*p->walks));
    p->free_slots = calloc(depth, sizeof(*p->free_slots));
    if (p->walks == NULL || p->free_slots == NULL) {
        snprintf(why, whylen, "out of memory");
        prefetch_destroy(p);
        return NULL;
    }
    for (unsigned i = 0; i < depth; i++) {
        p->free_slots[p->nfree++] = depth - 1 - i;
    }
    /* Is RWF_NOWAIT there? A read of the header, which is mapped. */
    struct iovec iov = {p->scratch, 16};
    if (preadv2(p->lay.fd, &iov, 1, 0, RWF_NOWAIT) < 0 && errno != EAGAIN) {
        snprintf(why, whylen, "preadv2(RWF_NOWAIT): %s", strerror(errno));
        prefetch_destroy(p);
        return NULL;
    }
    unsigned entries = 1;
    while (entries < depth * 2) {
        entries <<= 1;
    }
    int rc = io_uring_queue_init(entries, &p->ring, 0);
    if (rc < 0) {
        snprintf(why, whylen, "io_uring: %s", strerror(-rc));
        prefetch_destroy(p);
        return NULL;
    }
    p->ring_ready = true;
    p->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (p->efd < 0 || io_uring_register_eventfd(&p->ring, p->efd) < 0) {
        snprintf(why, whylen, "io_uring eventfd: %s", strerror(errno));
        prefetch_destroy(p);
        return NULL;
    }
    return p;
}

void
prefetch_destroy(struct prefetch *p)
{
    if (p == NULL) {
        return;
    }
    if (p->ring_ready) {
        /* The kernel writes into the slots' buffers until each read
         * completes: wait for every one before freeing them. */
        if (p->queued > 0) {
            io_uring_submit(&p->ring);
            p->inflight += p->queued;
            p->queued = 0;
        }
        while (p->inflight > 0) {
            struct io_uring_cqe *cqe;
            if (io_uring_wait_cqe(&p->ring, &cqe) < 0) {
                break;
            }
            io_uring_cqe_seen(&p->ring, cqe);
            p->inflight--;
        }
        io_uring_queue_exit(&p->ring);
    }
    if (p->efd >= 0) {
        close(p->efd);
    }
    free(p->walks);
    free(p->free_slots);
    free(p);
}

int
prefetch_fd(const struct prefetch *p)
{
    return p->efd;
}

/* Queues a read of `len` bytes at `off` into `dst` for walk `w`. */
static bool
_queue_read(struct prefetch *p, struct walk *w, void *dst, unsigned len,
            uint64_t off)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&p->ring);
    if (sqe == NULL) {
        prefetch_submit(p);
        sqe = io_uring_get_sqe(&p->ring);
        if (sqe == NULL) {
            return false;
        }
    }
    io_uring_prep_read(sqe, p->lay.fd, dst, len, off);
    io_uring_sqe_set_data64(sqe, (uint64_t)(w - p->walks) + 1);
    p->queued++;
    atomic_fetch_add_explicit(&p->n_reads, 1, memory_order_relaxed);
    w->pending++;
    return true;
}

/* Bytes of a node to read at `at`: a head's worth, within the file. */
static unsigned
_head_len(const struct prefetch *p, uint64_t at)
{
    uint64_t end = store_size_hint(p->store);
    if (at < p->lay.frec || at >= end ||
        (at & (((uint64_t)1 << p->lay.apow) - 1)) != 0) {
        return 0;
    }
    return end - at < PREFETCH_HEAD ? (unsigned)(end - at) : PREFETCH_HEAD;
}

/*
 * One node, read into `buf` (`len` bytes from `at`): returns the next
 * node to read (0: none), or sets `*found` when it is the key's record.
 */
static uint64_t
_step(const struct prefetch *p, const uint8_t *buf, size_t len, uint64_t at,
      uint8_t hash, const uint8_t *key, size_t nkey,
      struct tcfile_block *b, bool *found)
{
    const char *why;
    *found = false;
    if (!tcfile_head(&p->fmt, buf, len, at, b, &why) || b->free) {
        return 0;
    }
    int cmp = tcfile_order(hash, key, nkey, b->hash, b->key, b->ksiz);
    if (cmp == 0) {
        *found = true;
        return 0;
    }
    return cmp > 0 ? b->left : b->right;
}

/* The first page of record `b` not covered by the `len` bytes read. */
static uint64_t
_first_value_page(const struct prefetch *p, const struct tcfile_block *b,
                  size_t len)
{
    uint64_t covered = b->off + len;
    return (covered + p->page - 1) / p->page * p->page;
}

static void
_release(struct prefetch *p, struct walk *w)
{
    w->used = false;
    w->owner = NULL;
    p->free_slots[p->nfree++] = (unsigned)(w - p->walks);
}

static struct walk *
_take(struct prefetch *p, const uint8_t *key, size_t nkey, uint8_t hash,
      void *owner)
{
    if (p->nfree == 0) {
        atomic_fetch_add_explicit(&p->n_full, 1, memory_order_relaxed);
        return NULL;
    }
    struct walk *w = &p->walks[p->free_slots[--p->nfree]];
    memset(w, 0, offsetof(struct walk, key));
    w->used = true;
    w->owner = owner;
    w->hash = hash;
    w->nkey = (uint16_t)nkey;
    memcpy(w->key, key, nkey);
    return w;
}

/*
 * Queues reads of the pages of record `b` from `from` on (at most
 * PREFETCH_VALUE_PAGES of them). Returns how many it queued.
 */
static unsigned
_queue_value(struct prefetch *p, struct walk *w, const struct tcfile_block *b,
             uint64_t from)
{
    unsigned n = 0;
    uint64_t end = b->off + b->size;
    for (uint64_t pg = from; pg < end && n < PREFETCH_VALUE_PAGES;
         pg += p->page) {
        if (!_queue_read(p, w, w->buf, 1, pg)) {
            break;
        }
        n++;
    }
    w->body = true;
    return n;
}

static bool _look(struct prefetch *p, const void *key, size_t nkey,
                  void *owner);

bool
prefetch_key(struct prefetch *p, const void *key, size_t nkey, void *owner)
{
    if (nkey == 0 || nkey > RECORD_KEY_MAX) {
        return false;
    }
    if (p->miss_avg < PREFETCH_CALM_MISS &&
        ++p->unlooked % PREFETCH_SAMPLE != 0) {
        atomic_fetch_add_explicit(&p->n_unlooked, 1, memory_order_relaxed);
        return false;
    }
    atomic_fetch_add_explicit(&p->n_walks, 1, memory_order_relaxed);
    bool wait = _look(p, key, nkey, owner);
    int32_t sample = wait ? 65536 : 0;
    p->miss_avg = (uint32_t)((int32_t)p->miss_avg +
                             ((sample - (int32_t)p->miss_avg) >> 6));
    return wait;
}

/* prefetch_key() once it decided to look. */
static bool
_look(struct prefetch *p, const void *key, size_t nkey, void *owner)
{
    uint8_t hash;
    uint64_t bucket = tcfile_bucket_of(p->lay.bnum, key, nkey, &hash);
    uint64_t at = tcfile_bucket(&p->fmt, bucket);
    for (unsigned steps = 0; at != 0 && steps < PREFETCH_STEPS; steps++) {
        unsigned len = _head_len(p, at);
        if (len == 0) {
            break;
        }
        struct iovec iov = {p->scratch, len};
        ssize_t n = preadv2(p->lay.fd, &iov, 1, (off_t)at, RWF_NOWAIT);
        if (n != (ssize_t)len) {
            /* Not (all) in memory: read it asynchronously. */
            struct walk *w = _take(p, key, nkey, hash, owner);
            if (w == NULL) {
                return false;
            }
            w->at = at;
            w->steps = steps;
            if (!_queue_read(p, w, w->buf, len, at)) {
                _release(p, w);
                return false;
            }
            atomic_fetch_add_explicit(&p->n_waits, 1, memory_order_relaxed);
            return true;
        }
        struct tcfile_block b;
        bool found;
        uint64_t next = _step(p, p->scratch, len, at, hash, key, nkey, &b,
                              &found);
        if (found) {
            /* The value's pages past the head: in memory too? */
            uint64_t end = b.off + b.size;
            unsigned checked = 0;
            for (uint64_t pg = _first_value_page(p, &b, len);
                 pg < end && checked < PREFETCH_VALUE_PAGES;
                 pg += p->page, checked++) {
                struct iovec one = {p->scratch, 1};
                if (preadv2(p->lay.fd, &one, 1, (off_t)pg, RWF_NOWAIT) == 1) {
                    continue;
                }
                struct walk *w = _take(p, key, nkey, hash, owner);
                if (w == NULL) {
                    return false;
                }
                w->at = at;
                if (_queue_value(p, w, &b, pg) == 0) {
                    _release(p, w);
                    return false;
                }
                atomic_fetch_add_explicit(&p->n_waits, 1, memory_order_relaxed);
                return true;
            }
            break;
        }
        at = next;
    }
    atomic_fetch_add_explicit(&p->n_resident, 1, memory_order_relaxed);
    return false;
}

void
prefetch_submit(struct prefetch *p)
{
    if (p->queued == 0) {
        return;
    }
    int rc = io_uring_submit(&p->ring);
    if (rc > 0) {
        p->inflight += (unsigned)rc;
        p->queued -= (unsigned)rc < p->queued ? (unsigned)rc : p->queued;
    }
}

/* A read of walk `w` completed with `res`: its next step. Returns true
 * when the walk is over. */
static bool
_advance(struct prefetch *p, struct walk *w, int res)
{
    if (w->pending > 0) {
        w->pending--;
    }
    if (w->body || res <= 0) {
        return w->pending == 0;
    }
    struct tcfile_block b;
    bool found;
    uint64_t next = _step(p, w->buf, (size_t)res, w->at, w->hash, w->key,
                          w->nkey, &b, &found);
    if (found) {
        return _queue_value(p, w, &b, _first_value_page(p, &b, (size_t)res))
               == 0;
    }
    w->steps++;
    unsigned len = next != 0 && w->steps < PREFETCH_STEPS ? _head_len(p, next)
                                                          : 0;
    if (len == 0) {
        return true;
    }
    w->at = next;
    return !_queue_read(p, w, w->buf, len, next);
}

size_t
prefetch_reap(struct prefetch *p, void **owners, size_t cap)
{
    uint64_t count;
    if (read(p->efd, &count, sizeof(count)) < 0 && errno != EAGAIN) {
        /* Only a wake-up counter; the completion queue is the truth. */
    }
    size_t n = 0;
    struct io_uring_cqe *cqe;
    while (n < cap && io_uring_peek_cqe(&p->ring, &cqe) == 0) {
        uint64_t id = io_uring_cqe_get_data64(cqe);
        int res = cqe->res;
        io_uring_cqe_seen(&p->ring, cqe);
        if (p->inflight > 0) {
            p->inflight--;
        }
        if (id == 0 || id > p->depth) {
            continue;
        }
        struct walk *w = &p->walks[id - 1];
        if (!w->used || !_advance(p, w, res)) {
            continue;
        }
        if (w->owner != NULL) {
            owners[n++] = w->owner;
        }
        _release(p, w);
    }
    prefetch_submit(p);
    return n;
}

void
prefetch_forget(struct prefetch *p, void *owner)
{
    for (unsigned i = 0; i < p->depth; i++) {
        if (p->walks[i].used && p->walks[i].owner == owner) {
            p->walks[i].owner = NULL;
        }
    }
}

void
prefetch_stats(struct prefetch *p, struct prefetch_stats *out)
{
    out->unlooked = atomic_load_explicit(&p->n_unlooked, memory_order_relaxed);
    out->walks = atomic_load_explicit(&p->n_walks, memory_order_relaxed);
    out->resident = atomic_load_explicit(&p->n_resident,
                                         memory_order_relaxed);
    out->waits = atomic_load_explicit(&p->n_waits, memory_order_relaxed);
    out->reads = atomic_load_explicit(&p->n_reads, memory_order_relaxed);
    out->full = atomic_load_explicit(&p->n_full, memory_order_relaxed);
}
