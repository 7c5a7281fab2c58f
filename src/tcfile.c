/*
 * tcfile: reading Tokyo Cabinet hash files directly (see tcfile.h).
 */
#include "tcfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <tcutil.h>
#include <unistd.h>

#define OFF_TYPE 32
#define OFF_APOW 34
#define OFF_FPOW 35
#define OFF_OPTS 36
#define OFF_BNUM 40
#define OFF_RNUM TCFILE_RNUM_OFF
#define OFF_FSIZ 56
#define OFF_FREC 64
#define TYPE_HASH 0
#define OPT_LARGE 0x01      /* 64-bit offsets */
#define OPT_DEFLATE 0x02
#define OPT_BZIP 0x04
#define OPT_TCBS 0x08
#define OPT_COMPRESSED 0x0e /* deflate, bzip2 or tcbs values */
#define APOW_MAX 16
#define FPOW_MAX 20
#define FREE_POOL_BASE 64 /* the free block pool after the buckets */
#define FREE_POOL_ENTRY 4
#define FREE_HEADER 5     /* magic, 32-bit size */

/*
 * Tokyo Cabinet compresses hash records with raw Deflate through this
 * exported codec pointer (its public tcinflate() expects a zlib header);
 * mode 1 is its _TCZMRAW.
 */
extern char *(*_tc_inflate)(const char *, int, int *, int);
#define TC_ZLIB_RAW 1

static const uint8_t kura_magic[4] = {'k', 'u', 'r', 'a'};

static uint64_t
_get(const struct tcfile *f, const uint8_t *p, unsigned width)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < width; i++) {
        unsigned shift = f->big_endian ? 8 * (width - 1 - i) : 8 * i;
        v |= (uint64_t)p[i] << shift;
    }
    return v;
}

/* Where the block area must start, by Tokyo Cabinet's own rule. */
static uint64_t
_first_block(const struct tcfile *f, uint64_t bnum, unsigned fpow)
{
    uint64_t off = TCFILE_HEAD_SIZE + bnum * f->width + FREE_POOL_BASE +
                   ((uint64_t)1 << fpow) * FREE_POOL_ENTRY;
    uint64_t align = (uint64_t)1 << f->apow;
    return (off + align - 1) / align * align;
}

/*
 * Picks the byte order under which the header is self-consistent: the
 * block area starts right after the buckets and the free block pool.
 */
static bool
_byte_order(struct tcfile *f, const uint8_t *h)
{
    for (int be = 0; be < 2; be++) {
        f->big_endian = be == 1;
        uint64_t bnum = _get(f, h + OFF_BNUM, 8);
        uint64_t frec = _get(f, h + OFF_FREC, 8);
        if (bnum > 0 && bnum < (UINT64_C(1) << 40) &&
            frec == _first_block(f, bnum, h[OFF_FPOW])) {
            return true;
        }
    }
    return false;
}

static enum tcfile_status
_bad(struct tcfile *f, char *why, size_t whylen, const char *msg)
{
    snprintf(why, whylen, "%s", msg);
    tcfile_close(f);
    return TCFILE_BAD;
}

enum tcfile_status
tcfile_open(struct tcfile *f, const char *path, char *why, size_t whylen)
{
    static const char magic[] = "ToKyO CaBiNeT";
    struct stat st;

    memset(f, 0, sizeof(*f));
    f->fd = -1;
    f->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (f->fd < 0) {
        return errno == ENOENT ? TCFILE_EMPTY : TCFILE_EIO;
    }
    if (fstat(f->fd, &st) != 0) {
        int saved = errno;
        tcfile_close(f);
        errno = saved;
        return TCFILE_EIO;
    }
    f->size = (uint64_t)st.st_size;
    if (f->size == 0) {
        tcfile_close(f);
        return TCFILE_EMPTY;
    }
    if (f->size < TCFILE_HEAD_SIZE) {
        return _bad(f, why, whylen, "too short for a Tokyo Cabinet header");
    }
    void *map = mmap(NULL, (size_t)f->size, PROT_READ, MAP_SHARED, f->fd, 0);
    if (map == MAP_FAILED) {
        int saved = errno;
        tcfile_close(f);
        errno = saved;
        return TCFILE_EIO;
    }
    f->map = map;
    const uint8_t *h = f->map;
    if (memcmp(h, magic, sizeof(magic) - 1) != 0) {
        return _bad(f, why, whylen, "not a Tokyo Cabinet database (bad magic)");
    }
    if (h[OFF_TYPE] != TYPE_HASH) {
        return _bad(f, why, whylen, "not a hash database");
    }
    f->flags = h[TCFILE_FLAGS_OFF];
    f->apow = h[OFF_APOW];
    f->fpow = h[OFF_FPOW];
    f->opts = h[OFF_OPTS];
    f->width = (f->opts & OPT_LARGE) ? 8 : 4;
    f->compressed = (f->opts & OPT_COMPRESSED) != 0;
    if (f->apow > APOW_MAX || f->fpow > FPOW_MAX || !_byte_order(f, h)) {
        return _bad(f, why, whylen, "the header's tuning is inconsistent");
    }
    f->bnum = _get(f, h + OFF_BNUM, 8);
    f->rnum = _get(f, h + OFF_RNUM, 8);
    f->fsiz = _get(f, h + OFF_FSIZ, 8);
    f->frec = _get(f, h + OFF_FREC, 8);
    return TCFILE_OK;
}

void
tcfile_close(struct tcfile *f)
{
    if (f->map != NULL) {
        munmap((void *)f->map, (size_t)f->size);
        f->map = NULL;
    }
    if (f->fd >= 0) {
        close(f->fd);
    }
    f->fd = -1;
}

/*
 * Tokyo Cabinet's variable-length integer: base 128, lowest group first;
 * every group but the last is stored negated minus one (high bit set).
 */
static bool
_varint(const uint8_t *p, size_t avail, uint32_t *out, size_t *len)
{
    uint64_t num = 0;
    uint64_t base = 1;
    for (size_t i = 0; i < avail && i < 5; i++) {
        int b = (int8_t)p[i];
        if (b >= 0) {
            num += (uint64_t)b * base;
            if (num > UINT32_MAX) {
                return false;
            }
            *out = (uint32_t)num;
            *len = i + 1;
            return true;
        }
        num += base * (uint64_t)(-b - 1);
        base <<= 7;
    }
    return false;
}

/*
 * Decodes the block whose first `avail` bytes are at `p`: a free block's
 * size, or a record's links, sizes and key (which must lie within
 * `avail`). The whole block need not.
 */
static bool
_decode(const struct tcfile *f, const uint8_t *p, uint64_t avail,
        struct tcfile_block *b, const char **why)
{
    if (avail == 0) {
        *why = "the block starts past the end of the file";
        return false;
    }
    if (p[0] == TCFILE_MAGIC_FREE) {
        if (avail < FREE_HEADER) {
            *why = "a free block is cut short";
            return false;
        }
        b->free = true;
        b->size = _get(f, p + 1, 4);
        if (b->size < FREE_HEADER) {
            *why = "a free block does not fit";
            return false;
        }
        return true;
    }
    if (p[0] != TCFILE_MAGIC_RECORD) {
        *why = "unknown block type";
        return false;
    }
    size_t pos = 2 + 2 * (size_t)f->width;
    if (avail < pos + 2 + 2) {
        *why = "a record header is cut short";
        return false;
    }
    b->hash = p[1];
    b->left = _get(f, p + 2, f->width) << f->apow;
    b->right = _get(f, p + 2 + f->width, f->width) << f->apow;
    uint64_t psiz = _get(f, p + pos, 2);
    pos += 2;
    size_t n;
    size_t room = avail - pos < 10 ? (size_t)(avail - pos) : 10;
    if (!_varint(p + pos, room, &b->ksiz, &n)) {
        *why = "a record's key size is unreadable";
        return false;
    }
    pos += n;
    room = avail - pos < 5 ? (size_t)(avail - pos) : 5;
    if (!_varint(p + pos, room, &b->vsiz, &n)) {
        *why = "a record's value size is unreadable";
        return false;
    }
    pos += n;
    b->size = (uint64_t)pos + b->ksiz + b->vsiz + psiz;
    if (pos + (uint64_t)b->ksiz > avail) {
        *why = "a record runs past the end of the file";
        return false;
    }
    b->key = p + pos;
    b->value = p + pos + b->ksiz;
    return true;
}

bool
tcfile_block(const struct tcfile *f, uint64_t off, uint64_t end,
             struct tcfile_block *b, const char **why)
{
    memset(b, 0, sizeof(*b));
    b->off = off;
    if (off >= end || end > f->size) {
        *why = "the block starts past the end of the file";
        return false;
    }
    uint64_t left = end - off;
    if (!_decode(f, f->map + off, left, b, why)) {
        return false;
    }
    if (b->size > left) {
        *why = b->free ? "a free block does not fit"
                       : "a record runs past the end of the file";
        return false;
    }
    return true;
}

bool
tcfile_head(const struct tcfile *f, const uint8_t *p, size_t avail,
            uint64_t off, struct tcfile_block *b, const char **why)
{
    memset(b, 0, sizeof(*b));
    b->off = off;
    return _decode(f, p, avail, b, why);
}

const uint8_t *
tcfile_value(const struct tcfile *f, const struct tcfile_block *b,
             size_t *len, bool *owned)
{
    *owned = false;
    if (!f->compressed) {
        *len = b->vsiz;
        return b->value;
    }
    if (b->vsiz > INT32_MAX) {
        return NULL;
    }
    /* Tokyo Cabinet's own codecs, as tchdbput() applied them. */
    int sp = 0;
    const char *in = (const char *)b->value;
    char *out = NULL;
    if (f->opts & OPT_DEFLATE) {
        out = _tc_inflate != NULL ? _tc_inflate(in, (int)b->vsiz, &sp,
                                                TC_ZLIB_RAW)
                                  : NULL;
    } else if (f->opts & OPT_BZIP) {
        out = tcbzipdecode(in, (int)b->vsiz, &sp);
    } else if (f->opts & OPT_TCBS) {
        out = tcbsdecode(in, (int)b->vsiz, &sp);
    }
    if (out == NULL || sp < 0) {
        free(out);
        return NULL;
    }
    *owned = true;
    *len = (size_t)sp;
    return (const uint8_t *)out;
}

uint64_t
tcfile_bucket(const struct tcfile *f, uint64_t i)
{
    const uint8_t *p = f->map + TCFILE_HEAD_SIZE + i * f->width;
    return _get(f, p, f->width) << f->apow;
}

uint64_t
tcfile_bucket_of(uint64_t bnum, const uint8_t *key, size_t nkey,
                 uint8_t *hash)
{
    uint64_t idx = 19780211;
    uint32_t h = 751;
    for (size_t i = 0; i < nkey; i++) {
        idx = idx * 37 + key[i];
        h = (h * 31) ^ key[nkey - 1 - i];
    }
    *hash = (uint8_t)h;
    return idx % bnum;
}

int
tcfile_order(uint8_t ha, const uint8_t *a, size_t na, uint8_t hb,
             const uint8_t *b, size_t nb)
{
    if (ha != hb) {
        return ha > hb ? 1 : -1;
    }
    if (na != nb) {
        return na > nb ? 1 : -1;
    }
    return memcmp(a, b, na);
}

int
tcfile_find(const struct tcfile *f, const uint8_t *key, size_t nkey,
            uint64_t *off, const char **why)
{
    uint8_t hash;
    uint64_t bucket = tcfile_bucket_of(f->bnum, key, nkey, &hash);
    uint64_t end = f->fsiz < f->size ? f->fsiz : f->size;
    if (TCFILE_HEAD_SIZE + (bucket + 1) * f->width > f->size) {
        *off = TCFILE_HEAD_SIZE + bucket * f->width;
        *why = "the bucket array is cut short";
        return -1;
    }
    uint64_t at = tcfile_bucket(f, bucket);
    /* A tree holds at most every record once: a longer walk loops. */
    uint64_t steps = f->size >> f->apow;
    while (at != 0) {
        struct tcfile_block b;
        *off = at;
        if (steps-- == 0) {
            *why = "the tree loops";
            return -1;
        }
        if (at < f->frec || at >= end || (at & (((uint64_t)1 << f->apow) - 1))
            || !tcfile_block(f, at, end, &b, why)) {
            if (at < f->frec || at >= end) {
                *why = "a link points outside the record area";
            }
            return -1;
        }
        if (b.free) {
            *why = "a link points at a free block";
            return -1;
        }
        int cmp = tcfile_order(hash, key, nkey, b.hash, b.key, b.ksiz);
        if (cmp == 0) {
            return 1;
        }
        at = cmp > 0 ? b.left : b.right;
    }
    return 0;
}

void
tcfile_kura_decode(const uint8_t *opaque, struct tcfile_kura *k)
{
    memset(k, 0, sizeof(*k));
    if (memcmp(opaque, kura_magic, sizeof(kura_magic)) != 0) {
        return;
    }
    k->present = true;
    k->salt = (uint32_t)opaque[4] | (uint32_t)opaque[5] << 8 |
              (uint32_t)opaque[6] << 16 | (uint32_t)opaque[7] << 24;
    k->clean = opaque[8] == 1;
    memcpy(k->boot, opaque + 16, TCFILE_BOOT_SIZE);
}

void
tcfile_kura_encode(const struct tcfile_kura *k, uint8_t *opaque)
{
    memset(opaque, 0, TCFILE_KURA_SIZE);
    memcpy(opaque, kura_magic, sizeof(kura_magic));
    for (int i = 0; i < 4; i++) {
        opaque[4 + i] = (uint8_t)(k->salt >> (8 * i));
    }
    opaque[8] = k->clean ? 1 : 0;
    memcpy(opaque + 16, k->boot, TCFILE_BOOT_SIZE);
}
