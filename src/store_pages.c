/*
 * store_pages: how the database file's pages are used (see store.h):
 * read-ahead hints, the bucket array locked in memory, write-back and
 * sync for checkpoints, and the layout prefetch.h walks. Apart from
 * store.c, which opens the file and moves records, because these concern
 * the file's pages in memory, not its records; what they share is in
 * store_internal.h.
 */
#include "store.h"
#include "store_internal.h"
#include "tcfile.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * How Tokyo Cabinet reads the file: one record here, one there. The
 * kernel's read-ahead guesses otherwise; on the virtual disk measured
 * (etc/tuning-experiments.md, "Data larger than memory: what was
 * measured") it read 8 MiB around every
 * page fault of the mapping and 16 KiB for a pread() of one record, and
 * under a memory limit smaller than the database that read-ahead pushed
 * out what the next lookups needed (243 gets/s). Read-ahead stays on for
 * the bucket array alone, which is read all over and is worth having
 * whole: its pages are asked for at once, without waiting.
 */
void
store_pages_hint(struct store *s)
{
    int fd = s->hdb->fd;
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    uint64_t buckets = (s->hdb->msiz + page - 1) / page * page;
    uint64_t mapped = s->hdb->xmsiz > s->hdb->msiz ? s->hdb->xmsiz
                                                   : s->hdb->msiz;
    if (mapped > buckets) {
        (void)madvise((char *)s->hdb->map + buckets, mapped - buckets,
                      MADV_RANDOM);
    }
    (void)posix_fadvise(fd, 0, (off_t)s->hdb->msiz, POSIX_FADV_WILLNEED);
}

int
store_pin_buckets(struct store *s)
{
    if (s->hdb == NULL) {
        return 0;
    }
    if (mlock(s->hdb->map, s->hdb->msiz) == 0) {
        return 0;
    }
    /* The soft limit is often 8 MiB below a hard one that allows it. */
    struct rlimit rl;
    int saved = errno;
    if ((saved == ENOMEM || saved == EPERM) &&
        getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_MEMLOCK, &rl) == 0 &&
            mlock(s->hdb->map, s->hdb->msiz) == 0) {
            return 0;
        }
        saved = errno;
    }
    errno = saved;
    return -1;
}

uint64_t
store_bucket_bytes(const struct store *s)
{
    return s->hdb != NULL ? s->hdb->msiz : 0;
}

/*
 * A checkpoint after 64 MiB of 1 KiB inserts has about as much dirty
 * database to write. Written in one go, it sat in the queue in front of
 * the log's fdatasync and held an insert for 121 ms (kura stallwatch on
 * ext4); a slice of this size keeps the wait behind it to a few ms.
 */
#define STORE_WRITEBACK_SLICE ((off_t)1 << 20)

/* Writes the dirty pages of [from, end of file) back, a slice at a time,
 * each finished before the next starts (store_sync_data()). */
static int
_write_back(struct store *s, uint64_t from, uint64_t dirty)
{
    int fd = s->hdb->fd;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        return -1;
    }
    /* Random updates to a file larger than memory leave a few dirty pages
     * in every slice: 1 MiB slices of a 2.4 GB file, each waited for,
     * wrote 25,000 dirty pages back in about two seconds, during which as
     * many more were dirtied. A slice then holds about
     * STORE_WRITEBACK_SLICE of dirty pages instead. */
    off_t slice = STORE_WRITEBACK_SLICE;
    if (dirty > (uint64_t)STORE_WRITEBACK_SLICE) {
        uint64_t spread = (uint64_t)st.st_size /
                          (dirty / (uint64_t)STORE_WRITEBACK_SLICE);
        if (spread > (uint64_t)slice) {
            slice = (off_t)spread;
        }
    }
    for (off_t off = (off_t)from; off < st.st_size; off += slice) {
        /* Only a head start for fdatasync, so errors are its to report;
         * clean ranges cost a page-cache lookup. */
        (void)sync_file_range(fd, off, slice,
                              SYNC_FILE_RANGE_WAIT_BEFORE |
                                  SYNC_FILE_RANGE_WRITE |
                                  SYNC_FILE_RANGE_WAIT_AFTER);
    }
    return 0;
}

void
store_forget_boot(struct store *s)
{
    static const uint8_t unknown[TCFILE_BOOT_SIZE];
    if (s->hdb == NULL) {
        return;
    }
    memcpy((uint8_t *)tchdbopaque(s->hdb) +
               (TCFILE_KURA_BOOT_OFF - TCFILE_OPAQUE_OFF),
           unknown, sizeof(unknown));
    (void)pwrite(s->hdb->fd, unknown, sizeof(unknown), TCFILE_KURA_BOOT_OFF);
}

int
store_sync_data(struct store *s, uint64_t dirty)
{
    if (s->hdb == NULL) {
        return 0;
    }
    if (_write_back(s, 0, dirty) != 0 || fdatasync(s->hdb->fd) != 0) {
        int saved = errno;
        store_forget_boot(s);
        errno = saved;
        return -1;
    }
    return 0;
}

int
store_write_back(struct store *s, uint64_t dirty)
{
    if (s->hdb == NULL) {
        return 0;
    }
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    return _write_back(s, (s->hdb->msiz + page - 1) / page * page, dirty);
}

bool
store_layout(const struct store *s, struct store_layout *out)
{
    if (s->hdb == NULL) {
        return false;
    }
    memset(out, 0, sizeof(*out));
    out->fd = s->hdb->fd;
    out->map = (const uint8_t *)s->hdb->map;
    out->map_size = s->hdb->msiz;
    out->bnum = s->hdb->bnum;
    out->apow = s->hdb->apow;
    out->width = (s->hdb->opts & HDBTLARGE) ? 8 : 4;
    out->big_endian = s->big_endian;
    out->frec = s->hdb->frec;
    return true;
}

uint64_t
store_size_hint(const struct store *s)
{
    /* Tokyo Cabinet updates it under its own locks; a stale value is as
     * good as any for a hint. */
    return s->hdb != NULL ? __atomic_load_n(&s->hdb->fsiz, __ATOMIC_RELAXED)
                          : 0;
}

