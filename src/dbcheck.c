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

#include <sys/mman.h>

#include "memlimit.h"
#include "record.h"
#include "tcfile.h"
#include "util.h"

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

/*
 * A record of a tree with more than one node, kept for the tree walk;
 * `key` is where its key lies in the walk's key arena.
 */
struct node {
    uint64_t off;
    uint64_t left;
    uint64_t right;
    uint64_t bucket;
    uint64_t key;
    uint32_t nkey;
    uint8_t hash;
};

/*
 * The nodes of the trees of buckets [lo, hi), in file order (the pass
 * that collects them reads the file in order), so a child is found by
 * binary search. At most `budget` bytes: when they would not fit, `hi`
 * is lowered and the nodes past it dropped; the buckets from there are
 * walked after another pass.
 */
struct nodes {
    struct node *v;
    size_t n;
    size_t cap;
    uint8_t *keys;
    size_t keys_len;
    size_t keys_cap;
    uint64_t lo;
    uint64_t hi;
    size_t budget;
};

struct check {
    struct tcfile f;
    struct dbcheck_report *r;
    bool deep;
    uint32_t salt;
    struct bitmap starts;     /* live records */
    struct bitmap referenced; /* by a bucket or a parent */
    struct nodes t;           /* the deep check's trees */
    uint64_t single;          /* records alone in their bucket, verified */
    bool same_boot;           /* DBCHECK_SAME_BOOT: no tree walk */
    uint64_t linked_sum;      /* same boot: (bucket, offset) of each link */
    uint64_t record_sum;      /* ...and of each record, by its key */
    int err;
};

/*
 * A 64-bit mix of a record's place and the bucket it belongs to (or is
 * linked from). Summed over every link and over every record, the two
 * sums agree when every link lands in its own bucket's tree; a link from
 * another bucket's tree changes one sum and not the other.
 */
static uint64_t
_place(uint64_t bucket, uint64_t off)
{
    return util_mix64(bucket * 0x9e3779b97f4a7c15u ^ off);
}

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

/* Drops the nodes of buckets from `hi` on. */
static void
_lower_hi(struct nodes *t, uint64_t hi)
{
    size_t kept = 0;
    size_t keys = 0;
    for (size_t i = 0; i < t->n; i++) {
        struct node nd = t->v[i];
        if (nd.bucket >= hi) {
            continue;
        }
        memmove(t->keys + keys, t->keys + nd.key, nd.nkey);
        nd.key = keys;
        keys += nd.nkey;
        t->v[kept++] = nd;
    }
    t->n = kept;
    t->keys_len = keys;
    t->hi = hi;
}

static bool
_grow(void **p, size_t *cap, size_t need, size_t unit)
{
    if (need <= *cap) {
        return true;
    }
    size_t c = *cap == 0 ? 4096 : *cap;
    while (c < need) {
        c *= 2;
    }
    void *q = realloc(*p, c * unit);
    if (q == NULL) {
        return false;
    }
    *p = q;
    *cap = c;
    return true;
}

/*
 * Deep check, in file order: a record alone in its own key's bucket is
 * its whole tree, and is counted as walked; any other is kept for the
 * walk if its bucket is in [lo, hi). Returns DBCHECK_EIO when out of
 * memory.
 */
static enum dbcheck_status
_note_node(struct check *c, const struct tcfile_block *b)
{
    struct nodes *t = &c->t;
    uint8_t hash;
    uint64_t bucket = tcfile_bucket_of(c->f.bnum, b->key, b->ksiz, &hash);
    if (b->left == 0 && b->right == 0 &&
        tcfile_bucket(&c->f, bucket) == b->off) {
        c->single++;
        return DBCHECK_OK;
    }
    if (bucket < t->lo || bucket >= t->hi) {
        return DBCHECK_OK;
    }
    while ((t->n + 1) * sizeof(struct node) + t->keys_len + b->ksiz >
               t->budget &&
           t->hi > t->lo + 1) {
        _lower_hi(t, t->lo + (t->hi - t->lo) / 2);
        if (bucket >= t->hi) {
            return DBCHECK_OK;
        }
    }
    if (!_grow((void **)&t->v, &t->cap, t->n + 1, sizeof(struct node)) ||
        !_grow((void **)&t->keys, &t->keys_cap, t->keys_len + b->ksiz, 1)) {
        c->err = ENOMEM;
        return DBCHECK_EIO;
    }
    memcpy(t->keys + t->keys_len, b->key, b->ksiz);
    t->v[t->n++] = (struct node){b->off, b->left, b->right, bucket,
                                 t->keys_len, b->ksiz, b->hash};
    t->keys_len += b->ksiz;
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
        uint64_t bucket = tcfile_bucket_of(c->f.bnum, b->key, b->ksiz, &hash);
        if (hash != b->hash) {
            return _damaged(c, b->off, "a record's hash byte does not match "
                            "its key");
        }
        if (c->same_boot) {
            c->record_sum += _place(bucket, b->off);
            c->linked_sum += (b->left != 0 ? _place(bucket, b->left) : 0) +
                             (b->right != 0 ? _place(bucket, b->right) : 0);
        } else if (_note_node(c, b) != DBCHECK_OK) {
            return DBCHECK_EIO;
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
        uint64_t root = tcfile_bucket(&c->f, i);
        enum dbcheck_status st = _reference(c, off, root);
        if (st != DBCHECK_OK) {
            return st;
        }
        if (c->same_boot && root != 0) {
            c->linked_sum += _place(i, root);
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
    size_t node;     /* index in the nodes */
    struct bound lo; /* every key below must order above this one */
    struct bound hi; /* ... and below this one */
};

static bool
_within(const struct node *nd, const uint8_t *key, const struct frame *fr)
{
    if (fr->lo.set && tcfile_order(nd->hash, key, nd->nkey, fr->lo.hash,
                                   fr->lo.key, fr->lo.nkey) <= 0) {
        return false;
    }
    return !fr->hi.set || tcfile_order(nd->hash, key, nd->nkey, fr->hi.hash,
                                       fr->hi.key, fr->hi.nkey) < 0;
}

/* The node at offset `off`, or SIZE_MAX. */
static size_t
_find(const struct nodes *t, uint64_t off)
{
    size_t lo = 0;
    size_t hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->v[mid].off < off) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo < t->n && t->v[lo].off == off ? lo : SIZE_MAX;
}

/*
 * Walks the tree whose root is node `root`: every record must hash to
 * the root's bucket and sit where the tree order puts it, so that a
 * lookup finds it. Links were proven to land on live records referenced
 * once, so the walk ends. A child that was not kept belongs to another
 * bucket (or is alone in its own: then it is referenced twice, which the
 * links' check refused already).
 */
static enum dbcheck_status
_walk_tree(struct check *c, size_t root, struct frame **stack, size_t *cap,
           uint64_t *visited)
{
    const struct nodes *t = &c->t;
    size_t n = 0;
    (*stack)[n++] = (struct frame){root, {NULL, 0, 0, false},
                                   {NULL, 0, 0, false}};
    while (n > 0) {
        struct frame fr = (*stack)[--n];
        const struct node *nd = &t->v[fr.node];
        const uint8_t *key = t->keys + nd->key;
        if (nd->bucket != t->v[root].bucket) {
            return _damaged(c, nd->off, "a record sits in another key's "
                            "bucket");
        }
        if (!_within(nd, key, &fr)) {
            return _damaged(c, nd->off, "a record is out of its tree's order "
                            "(a lookup would miss it)");
        }
        (*visited)++;
        struct bound self = {key, nd->nkey, nd->hash, true};
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
        uint64_t kids[2] = {nd->left, nd->right}; /* greater keys left */
        for (int k = 0; k < 2; k++) {
            if (kids[k] == 0) {
                continue;
            }
            size_t i = _find(t, kids[k]);
            if (i == SIZE_MAX) {
                return _damaged(c, kids[k], "a record sits in another key's "
                                "bucket");
            }
            (*stack)[n++] = k == 0 ? (struct frame){i, self, fr.hi}
                                   : (struct frame){i, fr.lo, self};
        }
    }
    return DBCHECK_OK;
}

/* Walks every tree whose root was kept (the buckets [lo, hi)); a bucket
 * whose root was kept for another bucket holds a tree that is not its. */
static enum dbcheck_status
_walk_kept(struct check *c, uint64_t *visited)
{
    size_t cap = 256;
    struct frame *stack = malloc(cap * sizeof(*stack));
    enum dbcheck_status st = DBCHECK_OK;
    if (stack == NULL) {
        c->err = ENOMEM;
        return DBCHECK_EIO;
    }
    for (uint64_t b = 0; b < c->f.bnum && st == DBCHECK_OK; b++) {
        uint64_t root = tcfile_bucket(&c->f, b);
        size_t i = root != 0 ? _find(&c->t, root) : SIZE_MAX;
        if (i == SIZE_MAX) {
            continue; /* empty, alone in it, or kept in another range */
        }
        if (c->t.v[i].bucket != b) {
            st = _damaged(c, root, "a record sits in another key's bucket");
        } else {
            st = _walk_tree(c, i, &stack, &cap, visited);
        }
    }
    free(stack);
    return st;
}

/* Another pass in file order, keeping the nodes of buckets [lo, hi);
 * the blocks were all proven sound by the first. */
static enum dbcheck_status
_collect(struct check *c)
{
    for (uint64_t off = c->f.frec; off < c->f.fsiz;) {
        struct tcfile_block b;
        const char *why;
        if (!tcfile_block(&c->f, off, c->f.fsiz, &b, &why)) {
            return _damaged(c, off, "%s", why);
        }
        if (!b.free) {
            uint64_t before = c->single;
            if (_note_node(c, &b) != DBCHECK_OK) {
                return DBCHECK_EIO;
            }
            c->single = before; /* counted by the first pass */
        }
        off += b.size;
    }
    return DBCHECK_OK;
}

/*
 * Every record must be reached from its own bucket in tree order. A
 * lookup-order walk from each bucket would read the file in random
 * order, a page a record: a 2.4 GB file took 30 s that way inside a
 * 256 MiB memory limit, against 9 with the file in memory. Instead the
 * records are taken in file order (the first pass noted those alone in
 * their bucket, and kept the others), and the trees walked from what was
 * kept; when that does not fit the budget, by ranges of buckets, one
 * more pass over the file each.
 */
static enum dbcheck_status
_check_trees(struct check *c)
{
    uint64_t visited = c->single;
    enum dbcheck_status st = _walk_kept(c, &visited);
    while (st == DBCHECK_OK && c->t.hi < c->f.bnum) {
        c->t.lo = c->t.hi;
        c->t.hi = c->f.bnum;
        c->t.n = 0;
        c->t.keys_len = 0;
        c->r->passes++;
        st = _collect(c);
        if (st == DBCHECK_OK) {
            st = _walk_kept(c, &visited);
        }
    }
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
    c->r->passes = 1;
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
    if (c->same_boot) { /* set only with deep */
        /* Every record is linked exactly once; the sums say every link
         * stays inside its own bucket's tree (dbcheck.h). */
        return c->linked_sum == c->record_sum
                   ? DBCHECK_OK
                   : _damaged(c, 0, "a record sits in another key's bucket");
    }
    return c->deep ? _check_trees(c) : DBCHECK_OK;
}

/* Memory for the deep check's trees: a quarter of what this process may
 * use (memlimit.h), at most DBCHECK_TREE_MAX. */
#define DBCHECK_TREE_MAX ((size_t)512 << 20)

static size_t
_budget(void)
{
    struct memlimit m;
    memlimit_read(&m, "");
    uint64_t quarter = memlimit_bytes(&m) / 4;
    return quarter < DBCHECK_TREE_MAX ? (size_t)quarter : DBCHECK_TREE_MAX;
}

enum dbcheck_status
dbcheck_file(const char *path, unsigned flags, struct dbcheck_report *r)
{
    return dbcheck_file_within(path, flags, _budget(), r);
}

enum dbcheck_status
dbcheck_file_within(const char *path, unsigned flags, size_t budget,
                    struct dbcheck_report *r)
{
    struct check c;
    char why[160];

    memset(r, 0, sizeof(*r));
    memset(&c, 0, sizeof(c));
    c.r = r;
    c.deep = (flags & DBCHECK_DEEP) != 0;
    c.same_boot = c.deep && (flags & DBCHECK_SAME_BOOT) != 0;
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
    c.t.lo = 0;
    c.t.hi = c.f.bnum;
    c.t.budget = budget;
    /* Read in order, and not kept: the memory may be smaller than the
     * file (the bucket array, read all over, keeps its read-ahead). */
    uint64_t records = c.f.frec & ~(uint64_t)4095;
    if (c.f.size > records) {
        (void)madvise((void *)(c.f.map + records), c.f.size - records,
                      MADV_SEQUENTIAL);
    }
    enum dbcheck_status result = _run(&c);
    tcfile_close(&c.f);
    free(c.starts.words);
    free(c.referenced.words);
    free(c.t.v);
    free(c.t.keys);
    if (result == DBCHECK_EIO) {
        errno = c.err != 0 ? c.err : EIO;
    }
    return result;
}
