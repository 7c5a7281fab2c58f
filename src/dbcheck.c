/*
 * dbcheck: structural check of a Tokyo Cabinet hash database file (see
 * dbcheck.h). The layout below is Tokyo Cabinet 1.4's hash file format,
 * which has not changed since 2010. Its fixed-width integers are in the
 * host's byte order, or big-endian when the library was built to swap
 * (Debian's is); the header tells which, see _byte_order().
 */
#include "dbcheck.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record.h"
#include "util.h"

/* The file header. */
#define HEAD_SIZE 256
#define OFF_TYPE 32
#define OFF_APOW 34
#define OFF_FPOW 35
#define OFF_OPTS 36
#define OFF_BNUM 40
#define OFF_RNUM 48
#define OFF_FSIZ 56
#define OFF_FREC 64
#define TYPE_HASH 0
#define OPT_LARGE 0x01      /* 64-bit offsets */
#define OPT_COMPRESSED 0x0e /* deflate, bzip2 or tcbs values */
#define APOW_MAX 16
#define FPOW_MAX 20
#define FREE_POOL_BASE 64 /* the free block pool after the buckets */
#define FREE_POOL_ENTRY 4

/* Records and free blocks. */
#define MAGIC_RECORD 0xc8
#define MAGIC_FREE 0xb0
#define FREE_HEADER 5         /* magic, 32-bit size */
#define RECORD_HEADER_MAXLEN (2 + 2 * 8 + 2 + 5 + 5)

#define READ_CHUNK ((size_t)1 << 20)

struct reader {
    int fd;
    uint8_t *buf;
    uint64_t start; /* file offset of buf[0] */
    size_t len;
};

/* Points at `n` bytes at `off`, or NULL if the file has fewer. */
static const uint8_t *
_view(struct reader *rd, uint64_t off, size_t n, int *err)
{
    if (off >= rd->start && off + n <= rd->start + rd->len) {
        return rd->buf + (off - rd->start);
    }
    ssize_t got;
    do {
        got = pread(rd->fd, rd->buf, READ_CHUNK, (off_t)off);
    } while (got < 0 && errno == EINTR);
    if (got < 0) {
        *err = errno;
        return NULL;
    }
    rd->start = off;
    rd->len = (size_t)got;
    return (size_t)got >= n ? rd->buf : NULL;
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
    struct reader rd;
    struct dbcheck_report *r;
    bool big_endian;
    unsigned apow;
    unsigned width;  /* bytes per stored offset: 4 or 8 */
    bool compressed;
    uint64_t fsiz;
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

static uint64_t
_get(const struct check *c, const uint8_t *p, unsigned width)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < width; i++) {
        unsigned shift = c->big_endian ? 8 * (width - 1 - i) : 8 * i;
        v |= (uint64_t)p[i] << shift;
    }
    return v;
}

static uint64_t
_stored_offset(const struct check *c, const uint8_t *p)
{
    return _get(c, p, c->width) << c->apow;
}

/* Notes a reference from `from` (a record or a bucket) to `to`. */
static enum dbcheck_status
_reference(struct check *c, uint64_t from, uint64_t to)
{
    if (to == 0) {
        return DBCHECK_OK;
    }
    if (to >= c->fsiz || to == from) {
        return _damaged(c, from, "a link points to offset %" PRIu64
                        ", outside the record area", to);
    }
    uint64_t i = to >> c->apow;
    if (_bit(&c->referenced, i)) {
        return _damaged(c, from, "two links point to the record at offset %"
                        PRIu64, to);
    }
    _set(&c->referenced, i);
    return DBCHECK_OK;
}

static enum dbcheck_status
_check_record(struct check *c, uint64_t off, uint64_t *size)
{
    uint64_t left = c->fsiz - off;
    size_t want = left < RECORD_HEADER_MAXLEN ? (size_t)left
                                              : RECORD_HEADER_MAXLEN;
    const uint8_t *p = _view(&c->rd, off, want, &c->err);
    if (p == NULL) {
        return c->err != 0 ? DBCHECK_EIO
                           : _damaged(c, off, "the file ends in a record");
    }
    if (p[0] == MAGIC_FREE) {
        if (want < FREE_HEADER) {
            return _damaged(c, off, "a free block is cut short");
        }
        *size = _get(c, p + 1, 4);
        if (*size < FREE_HEADER || *size > left) {
            return _damaged(c, off, "a free block of %" PRIu64 " bytes does "
                            "not fit", *size);
        }
        c->r->free_blocks++;
        return DBCHECK_OK;
    }
    if (p[0] != MAGIC_RECORD) {
        return _damaged(c, off, "unknown block type 0x%02x", p[0]);
    }
    size_t pos = 2 + 2 * (size_t)c->width;
    if (want < pos + 2) {
        return _damaged(c, off, "a record header is cut short");
    }
    uint64_t children[2] = {_stored_offset(c, p + 2),
                            _stored_offset(c, p + 2 + c->width)};
    uint64_t psiz = _get(c, p + pos, 2);
    pos += 2;
    uint32_t ksiz;
    uint32_t vsiz;
    size_t n;
    if (!_varint(p + pos, want - pos, &ksiz, &n)) {
        return _damaged(c, off, "a record's key size is unreadable");
    }
    pos += n;
    if (!_varint(p + pos, want - pos, &vsiz, &n)) {
        return _damaged(c, off, "a record's value size is unreadable");
    }
    pos += n;
    *size = (uint64_t)pos + ksiz + vsiz + psiz;
    if (*size > left) {
        return _damaged(c, off, "a record of %" PRIu64 " bytes runs past "
                        "the end of the file", *size);
    }
    for (int i = 0; i < 2; i++) {
        enum dbcheck_status st = _reference(c, off, children[i]);
        if (st != DBCHECK_OK) {
            return st;
        }
    }
    if (!c->compressed) {
        size_t elen = vsiz < RECORD_HEADER_MAX ? vsiz : RECORD_HEADER_MAX;
        const uint8_t *env = _view(&c->rd, off + pos + ksiz, elen, &c->err);
        struct record_meta m;
        const uint8_t *value;
        size_t vlen;
        if (env == NULL && c->err != 0) {
            return DBCHECK_EIO;
        }
        if (env == NULL ||
            record_decode(env, elen, &m, &value, &vlen) != RECORD_OK) {
            return _damaged(c, off, "a record's value is not a kura record");
        }
    }
    _set(&c->starts, off >> c->apow);
    c->r->records++;
    return DBCHECK_OK;
}

/* Where the record area must start, by Tokyo Cabinet's own rule. */
static uint64_t
_first_record(const struct check *c, uint64_t bnum, unsigned fpow)
{
    uint64_t off = HEAD_SIZE + bnum * c->width + FREE_POOL_BASE +
                   ((uint64_t)1 << fpow) * FREE_POOL_ENTRY;
    uint64_t align = (uint64_t)1 << c->apow;
    return (off + align - 1) / align * align;
}

/*
 * Picks the byte order under which the header is self-consistent: the
 * record area starts right after the buckets and the free block pool.
 */
static bool
_byte_order(struct check *c, const uint8_t *h)
{
    for (int be = 0; be < 2; be++) {
        c->big_endian = be == 1;
        uint64_t bnum = _get(c, h + OFF_BNUM, 8);
        uint64_t frec = _get(c, h + OFF_FREC, 8);
        if (bnum > 0 && bnum < (UINT64_C(1) << 40) &&
            frec == _first_record(c, bnum, h[OFF_FPOW])) {
            return true;
        }
    }
    return false;
}

static enum dbcheck_status
_check_header(struct check *c, const uint8_t *h, uint64_t file_size,
              uint64_t *bnum, uint64_t *frec)
{
    static const char magic[] = "ToKyO CaBiNeT";
    if (memcmp(h, magic, sizeof(magic) - 1) != 0) {
        return _damaged(c, 0, "not a Tokyo Cabinet database (bad magic)");
    }
    if (h[OFF_TYPE] != TYPE_HASH) {
        return _damaged(c, OFF_TYPE, "not a hash database (type %u)",
                        h[OFF_TYPE]);
    }
    c->apow = h[OFF_APOW];
    c->width = (h[OFF_OPTS] & OPT_LARGE) ? 8 : 4;
    c->compressed = (h[OFF_OPTS] & OPT_COMPRESSED) != 0;
    if (c->apow > APOW_MAX || h[OFF_FPOW] > FPOW_MAX || !_byte_order(c, h)) {
        return _damaged(c, OFF_APOW, "the header's tuning is inconsistent");
    }
    *bnum = _get(c, h + OFF_BNUM, 8);
    c->r->header_records = _get(c, h + OFF_RNUM, 8);
    c->fsiz = _get(c, h + OFF_FSIZ, 8);
    *frec = _get(c, h + OFF_FREC, 8);
    if (c->fsiz > file_size) {
        return _damaged(c, OFF_FSIZ, "the file is %" PRIu64 " bytes but its "
                        "header says %" PRIu64 " (truncated?)", file_size,
                        c->fsiz);
    }
    if (*frec < HEAD_SIZE + *bnum * c->width || *frec > c->fsiz) {
        return _damaged(c, OFF_FREC, "the record area starts at an "
                        "impossible offset %" PRIu64, *frec);
    }
    return DBCHECK_OK;
}

static enum dbcheck_status
_check_buckets(struct check *c, uint64_t bnum)
{
    for (uint64_t i = 0; i < bnum; i++) {
        uint64_t off = HEAD_SIZE + i * c->width;
        const uint8_t *p = _view(&c->rd, off, c->width, &c->err);
        if (p == NULL) {
            return c->err != 0 ? DBCHECK_EIO
                               : _damaged(c, off, "bucket array cut short");
        }
        enum dbcheck_status st = _reference(c, off, _stored_offset(c, p));
        if (st != DBCHECK_OK) {
            return st;
        }
    }
    return DBCHECK_OK;
}

static enum dbcheck_status
_run(struct check *c, uint64_t file_size)
{
    uint8_t head[HEAD_SIZE];
    uint64_t bnum = 0;
    uint64_t frec = 0;
    const uint8_t *h = _view(&c->rd, 0, HEAD_SIZE, &c->err);
    if (h == NULL) {
        return c->err != 0 ? DBCHECK_EIO
                           : _damaged(c, 0, "too short for a Tokyo Cabinet "
                                      "header (%" PRIu64 " bytes)", file_size);
    }
    memcpy(head, h, sizeof(head));
    enum dbcheck_status st = _check_header(c, head, file_size, &bnum, &frec);
    if (st != DBCHECK_OK) {
        return st;
    }
    uint64_t nbits = (c->fsiz >> c->apow) + 1;
    if (!_bitmap_init(&c->starts, nbits) ||
        !_bitmap_init(&c->referenced, nbits)) {
        c->err = ENOMEM;
        return DBCHECK_EIO;
    }
    uint64_t align = (uint64_t)1 << c->apow;
    for (uint64_t off = frec; off < c->fsiz;) {
        uint64_t size = 0;
        if (off % align != 0) {
            return _damaged(c, off, "a block starts off its %" PRIu64
                            "-byte alignment", align);
        }
        st = _check_record(c, off, &size);
        if (st != DBCHECK_OK) {
            return st;
        }
        off += size;
    }
    st = _check_buckets(c, bnum);
    if (st != DBCHECK_OK) {
        return st;
    }
    /* Every link must land on a live record. */
    for (uint64_t w = 0; w <= nbits / 64; w++) {
        uint64_t stray = c->referenced.words[w] & ~c->starts.words[w];
        if (stray != 0) {
            uint64_t bit = w * 64 + (uint64_t)__builtin_ctzll(stray);
            return _damaged(c, bit << c->apow, "a link points at offset %"
                            PRIu64 ", which holds no live record",
                            bit << c->apow);
        }
    }
    return DBCHECK_OK;
}

enum dbcheck_status
dbcheck_file(const char *path, struct dbcheck_report *r)
{
    memset(r, 0, sizeof(*r));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return errno == ENOENT ? DBCHECK_OK : DBCHECK_EIO;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return DBCHECK_EIO;
    }
    r->file_size = (uint64_t)st.st_size;
    if (st.st_size == 0) {
        close(fd);
        return DBCHECK_OK;
    }
    struct check c;
    memset(&c, 0, sizeof(c));
    c.r = r;
    c.rd.fd = fd;
    c.rd.buf = malloc(READ_CHUNK);
    enum dbcheck_status result = DBCHECK_EIO;
    if (c.rd.buf == NULL) {
        c.err = ENOMEM;
    } else {
        result = _run(&c, (uint64_t)st.st_size);
    }
    free(c.rd.buf);
    free(c.starts.words);
    free(c.referenced.words);
    close(fd);
    if (result == DBCHECK_EIO) {
        errno = c.err != 0 ? c.err : EIO;
    }
    return result;
}
