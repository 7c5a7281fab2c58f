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
 * DBCHECK_SAME_BOOT (with DBCHECK_DEEP) is for a file whose writer died
 * while its machine kept running (store.h, D8): the file then holds
 * every write the writer made, in order, and only the Tokyo Cabinet
 * calls in flight at that moment can be half done. Each step of a put
 * or an out leaves a record nothing links to, a link to a free block,
 * two links to one record, a torn record, or, when another thread has
 * reused a block freed a moment before, a link from another bucket's
 * tree. So instead of walking the trees it checks, in the same one
 * pass, that every link lands in the tree of the bucket it leaves (a
 * sum over the links of each one's bucket and target equals the same sum
 * over the records, by their keys). What it does not look for is what
 * only a mix of old and new pages makes: a record out of its tree's
 * order, or a loop of records cut off from every bucket. It needs no
 * memory for trees and reads the file once whatever its size; a 2.4 GB
 * file of 39.5M small records needed a pass per 64 MiB of trees under a
 * 256 MiB limit otherwise.
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
#define DBCHECK_SAME_BOOT 0x02u

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
    uint32_t passes;         /* passes over the file the check made */
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
