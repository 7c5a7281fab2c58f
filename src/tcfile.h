/*
 * tcfile: Tokyo Cabinet's hash database file format, read directly.
 *
 * Tokyo Cabinet trusts its file and offers no way to look at one that is
 * damaged. kura must: dbcheck.c proves a file sound before it is opened,
 * and salvage.c rebuilds one that is not from its intact records. Both
 * read the file through this module, which maps it read-only and decodes
 * its header, blocks (records and free blocks), bucket array and Tokyo
 * Cabinet's two key hashes. The layout is Tokyo Cabinet 1.4's, unchanged
 * since 2010; fixed-width integers are in the byte order the header shows
 * (Debian's library swaps to big-endian).
 *
 *   header (256 bytes): magic, type, flags (bit 0: opened by a writer
 *     and not closed), apow, fpow, opts, bnum, rnum, fsiz, frec, and at
 *     offset 128 an opaque field the application owns (kura keeps its
 *     salt and clean-stop mark there, see struct tcfile_kura)
 *   bucket array: bnum offsets (4 bytes, 8 with opts "l"), >> apow
 *   free block pool, then from frec the blocks, each aligned to 2^apow:
 *     record:     0xc8, hash byte, left, right, u16 padding, varint ksiz,
 *                 varint vsiz, key, value, padding
 *     free block: 0xb0, u32 size
 * A bucket is the root of a binary tree of the records whose keys hash
 * to it, ordered by the second hash byte and then by the key (shorter
 * keys first); the greater goes left.
 *
 * Pure reads of a mapping (or of a copy, tcfile_head()): no allocation
 * after tcfile_open(); any thread.
 */
#ifndef KURA_TCFILE_H
#define KURA_TCFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TCFILE_HEAD_SIZE 256
#define TCFILE_FLAGS_OFF 33
#define TCFILE_FLAG_OPEN 0x01
#define TCFILE_RNUM_OFF 48
#define TCFILE_OPAQUE_OFF 128
#define TCFILE_MAGIC_RECORD 0xc8
#define TCFILE_MAGIC_FREE 0xb0

/* A mapped hash database file. */
struct tcfile {
    int fd;
    const uint8_t *map;
    uint64_t size;        /* the file's size on disk */
    bool big_endian;
    unsigned apow;
    unsigned width;       /* bytes per stored offset: 4 or 8 */
    bool compressed;      /* values are compressed: no envelope to read */
    uint8_t flags;
    uint8_t fpow;
    uint8_t opts;
    uint64_t bnum;
    uint64_t rnum;        /* the record count the header claims */
    uint64_t fsiz;        /* the size the header claims */
    uint64_t frec;        /* first block */
};

enum tcfile_status {
    TCFILE_OK = 0,
    TCFILE_EMPTY,   /* missing or empty: Tokyo Cabinet creates it */
    TCFILE_BAD,     /* not a readable hash database header; see `why` */
    TCFILE_EIO,     /* errno is set */
};

/*
 * Maps the file at `path` and decodes its header. On TCFILE_OK the caller
 * closes it with tcfile_close(); on TCFILE_BAD `why` says what is wrong
 * (the file is closed). The header's fsiz, and even frec, may exceed the
 * file size (a truncated file); callers check before reading past it.
 */
enum tcfile_status tcfile_open(struct tcfile *f, const char *path,
                               char *why, size_t whylen);

/* Unmaps and closes. Safe after any tcfile_open() result, and twice. */
void tcfile_close(struct tcfile *f);

/* One block, decoded. Pointers point into the mapping. */
struct tcfile_block {
    uint64_t off;
    uint64_t size;      /* whole block, padding included */
    bool free;
    uint8_t hash;       /* records: the second hash byte */
    uint64_t left;      /* records: child offsets, 0 = none */
    uint64_t right;
    const uint8_t *key;
    uint32_t ksiz;
    const uint8_t *value;
    uint32_t vsiz;
};

/*
 * Decodes the block at `off`, which must end by `end` (<= the file
 * size). Returns true with `*b` filled, or false with a short reason in
 * `*why` (a static string).
 */
bool tcfile_block(const struct tcfile *f, uint64_t off, uint64_t end,
                  struct tcfile_block *b, const char **why);

/*
 * Decodes the head of the block at offset `off` from `avail` bytes at `p`
 * (a copy read from the file, not the mapping): a free block's size, or a
 * record's hash byte, links, sizes and key, which must lie within `avail`;
 * the value may not. Returns true with `*b` filled (b->value points past
 * `avail` when the value is not there), or false with a reason in `*why`.
 */
bool tcfile_head(const struct tcfile *f, const uint8_t *p, size_t avail,
                 uint64_t off, struct tcfile_block *b, const char **why);

/*
 * The stored value of record `b` as kura wrote it: decompressed when the
 * database compresses its values. Sets `*len`; returns a pointer into
 * the mapping, or a heap copy that the caller frees when `*owned` is set,
 * or NULL when a compressed value does not decompress.
 */
const uint8_t *tcfile_value(const struct tcfile *f,
                            const struct tcfile_block *b, size_t *len,
                            bool *owned);

/* The record offset bucket `i` points at (0 = empty). */
uint64_t tcfile_bucket(const struct tcfile *f, uint64_t i);

/* Tokyo Cabinet's bucket index and second hash byte of a key. */
uint64_t tcfile_bucket_of(uint64_t bnum, const uint8_t *key, size_t nkey,
                          uint8_t *hash);

/*
 * Tokyo Cabinet's tree order of two keys with their hash bytes: < 0, 0 or
 * > 0; a greater key lives in the left subtree.
 */
int tcfile_order(uint8_t ha, const uint8_t *a, size_t na, uint8_t hb,
                 const uint8_t *b, size_t nb);

/*
 * Looks `key` up the way Tokyo Cabinet does, checking every block on the
 * way. Returns 1 if it is found intact (`*off` is its record), 0 if it is
 * not there, or -1 if the way to it is damaged: `*off` is the first bad
 * block (or bucket entry) and `*why` says what is wrong.
 */
int tcfile_find(const struct tcfile *f, const uint8_t *key, size_t nkey,
                uint64_t *off, const char **why);

/*
 * kura's area of the opaque header field: a magic, the database's seal
 * salt (record.h), whether the last stop was clean (store.h, D2) and the
 * machine's boot the file was last opened for writing in (D8).
 */
#define TCFILE_KURA_SIZE 32
#define TCFILE_BOOT_SIZE 16
struct tcfile_kura {
    bool present;   /* the magic is there (files since seals exist) */
    uint32_t salt;
    bool clean;
    uint8_t boot[TCFILE_BOOT_SIZE]; /* all zero: not known */
};

void tcfile_kura_decode(const uint8_t *opaque, struct tcfile_kura *k);
void tcfile_kura_encode(const struct tcfile_kura *k, uint8_t *opaque);

/* Where the clean mark byte and the boot live in the file. */
#define TCFILE_KURA_CLEAN_OFF (TCFILE_OPAQUE_OFF + 8)
#define TCFILE_KURA_BOOT_OFF (TCFILE_OPAQUE_OFF + 16)

#endif
