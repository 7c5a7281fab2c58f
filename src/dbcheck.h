/*
 * dbcheck: proves a Tokyo Cabinet hash database file sound, or says where
 * it is not.
 *
 * Tokyo Cabinet trusts its file: a damaged record header makes it read
 * past the end, allocate gigabytes or abort the whole process from deep
 * inside a lookup, and a torn tree silently hides records. kurad
 * therefore checks the file before it opens it (store.h, D4): a damaged
 * file is rebuilt from its intact records after an unclean stop, and
 * refused with the offset and what is wrong after a clean one. `kura
 * check` runs the same check by hand.
 *
 * The check reads the file once, in order, through a read-only mapping
 * (tcfile.h), and needs two bitmaps of (file size >> alignment power)
 * bits (about 6 MB each for a 730 MB file); the deep check also keeps
 * the records that share a bucket with another (their key and links) to
 * walk the trees without reading the file out of order again, or reads
 * it again for each range of buckets its budget holds:
 *   - the header is sane and agrees with the file's size;
 *   - records and free blocks tile the block area exactly, each with a
 *     known magic byte and sizes that stay inside the file;
 *   - every bucket entry and every tree child points at the start of a
 *     live record, and no record is referenced twice (so a lookup can
 *     neither leave the file nor loop);
 *   - every value holds a well-formed kura record envelope, unless the
 *     database compresses its values.
 * DBCHECK_DEEP adds what a file left by a crash or a power cut needs
 * (the state of such a file is any mix of old and new pages):
 *   - every live record is referenced, and reached from its own bucket
 *     in Tokyo Cabinet's tree order, so every record a walk finds is one
 *     a lookup finds, and no key is stored twice;
 *   - every record's second hash byte matches its key;
 *   - every sealed record's seal matches (record.h): no record is torn.
 *
 * Thread-safety: no shared state.
 */
#ifndef KURA_DBCHECK_H
#define KURA_DBCHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum dbcheck_status {
    DBCHECK_OK = 0,
    DBCHECK_DAMAGED, /* the file is damaged; see the report */
    DBCHECK_EIO,     /* the file could not be read; errno is set */
};

/* Flags for dbcheck_file(). */
#define DBCHECK_DEEP 0x01u

struct dbcheck_report {
    uint64_t records;        /* live records found */
    uint64_t values;         /* ...of them values, not tombstones; every
                                record when values are compressed and the
                                check is not deep (none are decoded) */
    uint64_t item_bytes;     /* keys and values of the values (not
                                tombstones); 0 when values are compressed
                                and the check is not deep */
    uint64_t free_blocks;
    uint64_t unsealed;       /* records written before seals existed */
    uint64_t file_size;
    uint64_t header_records; /* the record count the header claims */
    bool was_open;           /* the header says a writer never closed it */
    uint64_t damage_offset;  /* where the first damage was found */
    char damage[160];        /* what it is, for a log line */
};

/*
 * Checks the hash database file at `path` (DBCHECK_DEEP in `flags` for
 * the deep check). An empty or missing file is fine (DBCHECK_OK, no
 * records): Tokyo Cabinet creates it. Returns DBCHECK_OK, DBCHECK_DAMAGED
 * with `r->damage` and `r->damage_offset` set, or DBCHECK_EIO with errno
 * set.
 */
enum dbcheck_status dbcheck_file(const char *path, unsigned flags,
                                 struct dbcheck_report *r);

/*
 * dbcheck_file() with `budget` bytes for the deep check's trees, where
 * dbcheck_file() takes a quarter of the memory the process may use
 * (memlimit.h), at most 512 MiB. The trees are checked from the records
 * read in file order; what the budget cannot hold at once is checked by
 * ranges of buckets, one more pass over the file each.
 */
enum dbcheck_status dbcheck_file_within(const char *path, unsigned flags,
                                        size_t budget,
                                        struct dbcheck_report *r);

#endif
