/*
 * dbcheck: structural and deep checks of a hash database file (see
 * dbcheck.h); the file format itself is read through tcfile.h.
 */
#include "dbcheck.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"
#include "tcfile.h"

struct bitmap {
    uint64_t *words;
    uint64_t nbits;
};

static bool
_bitmap_init(struct bitmap *b, uint64_t nbits)
{
    b->nbits = nbits;
    b->words = calloc((size_t)(nbits / 64 + 1), sizeof(uint64_t));
    return b->words != NULL;
}

static bool
_bit(const struct bitmap *b, uint64_t i)
{
    return (b->words[i / 64] >> (i % 64)) & 1u;
}

static void
_set(struct bitmap *b, uint64_t i)
{
    b->words[i / 64] |= (uint64_t)1 << (i % 64);
}

struct check {
    struct tcfile f;
    struct dbcheck_report *r;
    bool deep;
    uint32_t salt;
    struct bitmap starts;     /* live records */
    struct bitmap referenced; /* by a bucket or a parent */
    int err;
};

static enum dbcheck_status
_damaged(struct check *c, uint64_t off, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->r->damage, sizeof(c->r->damage), fmt, ap);
    va_end(ap);
    c->r->damage_offset = off;
    return DBCHECK_DAMAGED;
}

/* Notes a reference from `from` (a record or a bucket) to `to`. */
static enum dbcheck_status
_reference(struct check *c, uint64_t from, uint64_t to)
{
    if (to == 0) {
        return DBCHECK_OK;
    }
    if (to >= c->f.fsiz || to == from) {
        return _damaged(c, from, "a link points to offset %" PRIu64
                        ", outside the record area", to);
    }
    uint64_t i = to >> c->f.apow;
    if (_bit(&c->referenced, i)) {
        return _damaged(c, from, "two links point to the record at offset %"
                        PRIu64, to);
    }
    _set(&c->referenced, i);
    return DBCHECK_OK;
}

static enum dbcheck_status
_check_record(struct check *c, const struct tcfile_block *b)
{
    enum dbcheck_status st = _reference(c, b->off, b->left);
    if (st == DBCHECK_OK) {
        st = _reference(c, b->off, b->right);
    }
    if (st != DBCHECK_OK) {
        return st;
    }
    /* Compressed values are read only by the deep check (it costs a
     * decompression per record). */
    if (!c->f.compressed || c->deep) {
        size_t len;
        bool owned;
        const uint8_t *v = tcfile_value(&c->f, b, &len, &owned);
        struct record_meta m;
        const uint8_t *value;
        size_t vlen;
        enum record_status rs = RECORD_ECORRUPT;
        if (v != NULL && record_decode(v, len, &m, &value, &vlen) ==
                             RECORD_OK) {
            rs = c->deep ? record_verify(v, len, b->key, b->ksiz, c->salt)
                         : RECORD_OK;
            if (m.kind == RECORD_VALUE) {
                c->r->item_bytes += b->ksiz + vlen;
                c->r->values++;
            }
            if (rs == RECORD_ECORRUPT) {
                st = _damaged(c, b->off, "a record's seal does not match its "
                              "bytes (a torn write)");
            }
        } else {
            st = _damaged(c, b->off, "a record's value is not a kura record");
        }
        c->r->unsealed += rs == RECORD_UNSEALED ? 1 : 0;
        if (owned) {
            free((void *)v);
        }
        if (st != DBCHECK_OK) {
            return st;
        }
    }
    if (c->deep) {
        uint8_t hash;
        (void)tcfile_bucket_of(c->f.bnum, b->key, b->ksiz, &hash);
        if (hash != b->hash) {
            return _damaged(c, b->off, "a record's hash byte does not match "
                            "its key");
        }
    }
    _set(&c->starts, b->off >> c->f.apow);
    c->r->records++;
    if (c->f.compressed && !c->deep) {
        c->r->values++; /* not decoded: counted as before, tombstones too */
    }
    return DBCHECK_OK;
}

static enum dbcheck_status
_check_blocks(struct check *c)
{
    uint64_t align = (uint64_t)1 << c->f.apow;
    for (uint64_t off = c->f.frec; off < c->f.fsiz;) {
        struct tcfile_block b;
        const char *why;
        if (off % align != 0) {
            return _damaged(c, off, "a block starts off its %" PRIu64
                            "-byte alignment", align);
        }
        if (!tcfile_block(&c->f, off, c->f.fsiz, &b, &why)) {
            return _damaged(c, off, "%s", why);
        }
        if (b.free) {
            c->r->free_blocks++;
        } else {
            enum dbcheck_status st = _check_record(c, &b);
            if (st != DBCHECK_OK) {
                return st;
            }
        }
        off += b.size;
    }
    return DBCHECK_OK;
}

static enum dbcheck_status
_check_buckets(struct check *c)
{
    for (uint64_t i = 0; i < c->f.bnum; i++) {
        uint64_t off = TCFILE_HEAD_SIZE + i * c->f.width;
        enum dbcheck_status st = _reference(c, off, tcfile_bucket(&c->f, i));
        if (st != DBCHECK_OK) {
            return st;
        }
    }
    return DBCHECK_OK;
}

/* A key bounding a subtree, or none. */
struct bound {
    const uint8_t *key;
    uint32_t nkey;
    uint8_t hash;
    bool set;
};

struct frame {
    uint64_t off;
    struct bound lo; /* every key below must order above this one */
    struct bound hi; /* ... and below this one */
};

static bool
_within(const struct tcfile_block *b, const struct frame *fr)
{
    if (fr->lo.set && tcfile_order(b->hash, b->key, b->ksiz, fr->lo.hash,
                                   fr->lo.key, fr->lo.nkey) <= 0) {
        return false;
    }
    return !fr->hi.set || tcfile_order(b->hash, b->key, b->ksiz, fr->hi.hash,
                                       fr->hi.key, fr->hi.nkey) < 0;
}

/*
 * Walks bucket `i`'s tree: every record must hash to this bucket and sit
 * where the tree order puts it, so that a lookup finds it. Links were
 * proven to land on live records referenced once, so the walk ends.
 */
static enum dbcheck_status
_walk_bucket(struct check *c, uint64_t i, struct frame **stack, size_t *cap,
             uint64_t *visited)
{
    size_t n = 0;
    uint64_t root = tcfile_bucket(&c->f, i);
    if (root == 0) {
        return DBCHECK_OK;
    }
    (*stack)[n++] = (struct frame){root, {NULL, 0, 0, false},
                                   {NULL, 0, 0, false}};
    while (n > 0) {
        struct frame fr = (*stack)[--n];
        struct tcfile_block b;
        const char *why;
        if (!tcfile_block(&c->f, fr.off, c->f.fsiz, &b, &why) || b.free) {
            return _damaged(c, fr.off, "a tree link leads to no record");
        }
        uint8_t hash;
        if (tcfile_bucket_of(c->f.bnum, b.key, b.ksiz, &hash) != i) {
            return _damaged(c, fr.off, "a record sits in another key's "
                            "bucket");
        }
        if (!_within(&b, &fr)) {
            return _damaged(c, fr.off, "a record is out of its tree's order "
                            "(a lookup would miss it)");
        }
        (*visited)++;
        struct bound self = {b.key, b.ksiz, b.hash, true};
        if (n + 2 > *cap) {
            size_t grown = *cap * 2;
            struct frame *s = realloc(*stack, grown * sizeof(*s));
            if (s == NULL) {
                c->err = ENOMEM;
                return DBCHECK_EIO;
            }
            *stack = s;
            *cap = grown;
        }
        if (b.left != 0) { /* greater keys */
            (*stack)[n++] = (struct frame){b.left, self, fr.hi};
        }
        if (b.right != 0) {
            (*stack)[n++] = (struct frame){b.right, fr.lo, self};
        }
    }
    return DBCHECK_OK;
}

static enum dbcheck_status
_check_trees(struct check *c)
{
    size_t cap = 256;
    struct frame *stack = malloc(cap * sizeof(*stack));
    uint64_t visited = 0;
    enum dbcheck_status st = DBCHECK_OK;
    if (stack == NULL) {
        c->err = ENOMEM;
        return DBCHECK_EIO;
    }
    for (uint64_t i = 0; i < c->f.bnum && st == DBCHECK_OK; i++) {
        st = _walk_bucket(c, i, &stack, &cap, &visited);
    }
    free(stack);
    if (st == DBCHECK_OK && visited != c->r->records) {
        st = _damaged(c, 0, "%" PRIu64 " of %" PRIu64 " records cannot be "
                      "reached from any bucket", c->r->records - visited,
                      c->r->records);
    }
    return st;
}

static enum dbcheck_status
_run(struct check *c)
{
    if (c->f.fsiz > c->f.size) {
        return _damaged(c, 56, "the file is %" PRIu64 " bytes but its header "
                        "says %" PRIu64 " (truncated?)", c->f.size, c->f.fsiz);
    }
    if (c->f.frec < TCFILE_HEAD_SIZE + c->f.bnum * c->f.width ||
        c->f.frec > c->f.fsiz) {
        return _damaged(c, 64, "the record area starts at an impossible "
                        "offset %" PRIu64, c->f.frec);
    }
    uint64_t nbits = (c->f.fsiz >> c->f.apow) + 1;
    if (!_bitmap_init(&c->starts, nbits) ||
        !_bitmap_init(&c->referenced, nbits)) {
        c->err = ENOMEM;
        return DBCHECK_EIO;
    }
    enum dbcheck_status st = _check_blocks(c);
    if (st == DBCHECK_OK) {
        st = _check_buckets(c);
    }
    if (st != DBCHECK_OK) {
        return st;
    }
    /* Every link must land on a live record; deep: and every live record
     * must be linked. */
    for (uint64_t w = 0; w <= nbits / 64; w++) {
        uint64_t stray = c->referenced.words[w] & ~c->starts.words[w];
        if (stray != 0) {
            uint64_t bit = w * 64 + (uint64_t)__builtin_ctzll(stray);
            return _damaged(c, bit << c->f.apow, "a link points at offset %"
                            PRIu64 ", which holds no live record",
                            bit << c->f.apow);
        }
        uint64_t orphan = c->starts.words[w] & ~c->referenced.words[w];
        if (c->deep && orphan != 0) {
            uint64_t bit = w * 64 + (uint64_t)__builtin_ctzll(orphan);
            return _damaged(c, bit << c->f.apow, "the record at offset %"
                            PRIu64 " is not linked from anywhere",
                            bit << c->f.apow);
        }
    }
    return c->deep ? _check_trees(c) : DBCHECK_OK;
}

enum dbcheck_status
dbcheck_file(const char *path, unsigned flags, struct dbcheck_report *r)
{
    struct check c;
    char why[160];

    memset(r, 0, sizeof(*r));
    memset(&c, 0, sizeof(c));
    c.r = r;
    c.deep = (flags & DBCHECK_DEEP) != 0;
    switch (tcfile_open(&c.f, path, why, sizeof(why))) {
    case TCFILE_EMPTY:
        return DBCHECK_OK;
    case TCFILE_EIO:
        return DBCHECK_EIO;
    case TCFILE_BAD:
        snprintf(r->damage, sizeof(r->damage), "%s", why);
        r->damage_offset = 0;
        return DBCHECK_DAMAGED;
    case TCFILE_OK:
        break;
    }
    struct tcfile_kura k;
    tcfile_kura_decode(c.f.map + TCFILE_OPAQUE_OFF, &k);
    c.salt = k.present ? k.salt : 0;
    r->file_size = c.f.size;
    r->header_records = c.f.rnum;
    r->was_open = (c.f.flags & TCFILE_FLAG_OPEN) != 0;
    enum dbcheck_status result = _run(&c);
    tcfile_close(&c.f);
    free(c.starts.words);
    free(c.referenced.words);
    if (result == DBCHECK_EIO) {
        errno = c.err != 0 ? c.err : EIO;
    }
    return result;
}
