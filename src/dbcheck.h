/*
 * dbcheck: structural check of a Tokyo Cabinet hash database file.
 *
 * Tokyo Cabinet trusts its file: a damaged record header makes it read
 * past the end, allocate gigabytes or abort the whole process from deep
 * inside a lookup. kurad therefore checks the file before it opens it,
 * and refuses to start on a damaged one with the offset and what is wrong,
 * instead of dying later in the middle of serving. `kura check` runs the
 * same check by hand.
 *
 * The check reads the file once, sequentially, and needs three bitmaps of
 * (file size >> alignment power) bits (about 6 MB each for a 730 MB file):
 *   - the header is sane and agrees with the file's size;
 *   - records and free blocks tile the record area exactly, each with a
 *     known magic byte and sizes that stay inside the file;
 *   - every bucket entry and every collision-tree child points at the
 *     start of a live record, and no record is referenced twice (so a
 *     lookup can neither leave the file nor loop);
 *   - every value holds a well-formed kura record envelope (record.h),
 *     unless the database compresses its values.
 * Record contents beyond that cannot be checked: Tokyo Cabinet keeps no
 * checksums.
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

struct dbcheck_report {
    uint64_t records;      /* live records found */
    uint64_t free_blocks;
    uint64_t file_size;
    uint64_t header_records; /* the record count the header claims */
    uint64_t damage_offset;  /* where the first damage was found */
    char damage[160];        /* what it is, for a log line */
};

/*
 * Checks the hash database file at `path`. An empty or missing file is
 * fine (DBCHECK_OK, no records): Tokyo Cabinet creates it. Returns
 * DBCHECK_OK, DBCHECK_DAMAGED with `r->damage` and `r->damage_offset`
 * set, or DBCHECK_EIO with errno set.
 */
enum dbcheck_status dbcheck_file(const char *path, struct dbcheck_report *r);

#endif
