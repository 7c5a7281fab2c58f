/*
 * buf: a growable byte buffer with a read and a write cursor.
 *
 * Used for connection input and output and for write batches. Data lives in
 * [rpos, wpos); free space is [wpos, cap). Growth is explicit and bounded by
 * the caller, so a hostile peer cannot make a buffer grow past the limit its
 * owner chose. Not thread-safe: one owner at a time.
 */
#ifndef KURA_BUF_H
#define KURA_BUF_H

#include <stdbool.h>
#include <stddef.h>

struct buf {
    char *data;
    size_t cap;
    size_t rpos; /* first unread byte */
    size_t wpos; /* first free byte */
};

/* Initialises an empty buffer; no allocation happens until data arrives. */
void buf_init(struct buf *b);

/* Frees the storage. The buffer may be reused after buf_init(). */
void buf_deinit(struct buf *b);

/* Number of unread bytes. */
static inline size_t
buf_len(const struct buf *b)
{
    return b->wpos - b->rpos;
}

/* Pointer to the first unread byte. */
static inline char *
buf_head(const struct buf *b)
{
    return b->data + b->rpos;
}

/* Pointer to the free space after the data. */
static inline char *
buf_tail(const struct buf *b)
{
    return b->data + b->wpos;
}

/* Bytes of free space after the data. */
static inline size_t
buf_room(const struct buf *b)
{
    return b->cap - b->wpos;
}

/*
 * Makes at least `n` bytes of free space after the data, first by moving
 * unread data to the front, then by growing (doubling) the storage.
 * Returns false if that would need more than `limit` bytes of storage in
 * total or if memory is exhausted; the buffer is unchanged then.
 */
bool buf_reserve(struct buf *b, size_t n, size_t limit);

/* Marks `n` bytes of the free space as written. */
static inline void
buf_produce(struct buf *b, size_t n)
{
    b->wpos += n;
}

/* Marks `n` unread bytes as consumed; empties cheaply when all are read. */
static inline void
buf_consume(struct buf *b, size_t n)
{
    b->rpos += n;
    if (b->rpos == b->wpos) {
        b->rpos = b->wpos = 0;
    }
}

/* Appends `n` bytes. Same limit and failure rules as buf_reserve(). */
bool buf_append(struct buf *b, const void *p, size_t n, size_t limit);

/* Discards all data and keeps the storage. */
static inline void
buf_reset(struct buf *b)
{
    b->rpos = b->wpos = 0;
}

/*
 * Releases the storage if it is empty and larger than `keep` bytes, so an
 * idle connection that once carried a big value does not pin that memory.
 */
void buf_shrink(struct buf *b, size_t keep);

#endif
