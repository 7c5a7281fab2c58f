/*
 * buf: growable byte buffer (see buf.h).
 */
#include "buf.h"

#include <stdlib.h>
#include <string.h>

#define BUF_MIN_CAP 2048

void
buf_init(struct buf *b)
{
    b->data = NULL;
    b->cap = b->rpos = b->wpos = 0;
}

void
buf_deinit(struct buf *b)
{
    free(b->data);
    buf_init(b);
}

bool
buf_reserve(struct buf *b, size_t n, size_t limit)
{
    if (buf_room(b) >= n) {
        return true;
    }
    size_t len = buf_len(b);
    if (b->rpos > 0 && b->cap - len >= n) {
        memmove(b->data, b->data + b->rpos, len);
        b->rpos = 0;
        b->wpos = len;
        return true;
    }
    if (n > limit || len > limit - n) {
        return false;
    }
    size_t need = len + n;
    size_t cap = b->cap < BUF_MIN_CAP ? BUF_MIN_CAP : b->cap;
    while (cap < need) {
        cap *= 2;
    }
    if (cap > limit) {
        cap = limit;
    }
    char *p = malloc(cap);
    if (p == NULL) {
        return false;
    }
    if (len > 0) {
        memcpy(p, b->data + b->rpos, len);
    }
    free(b->data);
    b->data = p;
    b->cap = cap;
    b->rpos = 0;
    b->wpos = len;
    return true;
}

bool
buf_append(struct buf *b, const void *p, size_t n, size_t limit)
{
    if (!buf_reserve(b, n, limit)) {
        return false;
    }
    memcpy(buf_tail(b), p, n);
    buf_produce(b, n);
    return true;
}

void
buf_shrink(struct buf *b, size_t keep)
{
    if (buf_len(b) == 0 && b->cap > keep) {
        buf_deinit(b);
    }
}
