/*
 * ulog_segment: the update log's segment files: names, headers, whole
 * reads and writes, and listing a log directory (see ulog.h for the
 * format and ulog_internal.h for the shared state). No locks: callers
 * hold what they need.
 */
#include "ulog.h"
#include "ulog_internal.h"

#include <dirent.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "atomicfile.h"
#include "crc32c.h"
#include "util.h"

static const char magic[8] = {'K', 'U', 'R', 'A', 'U', 'L', 'O', 'G'};
#define ULOG_VERSION 1

/* ---------------------------------------------------------------- files */

void
ulog_seg_path(const char *dir, uint64_t no, char *out, size_t len)
{
    snprintf(out, len, "%s/%08" PRIu64 ".ulog", dir, no);
}

void
ulog_seg_encode_header(uint8_t h[ULOG_SEGMENT_HEADER], uint32_t sid,
               const struct segment *s)
{
    memset(h, 0, ULOG_SEGMENT_HEADER);
    memcpy(h, magic, 8);
    h[8] = ULOG_VERSION;
    for (int i = 0; i < 4; i++) {
        h[12 + i] = (uint8_t)(sid >> (8 * i));
    }
    util_put_le64(h + 16, s->no);
    util_put_le64(h + 24, s->base_lsn);
    util_put_le64(h + 32, s->base_seq);
    uint32_t crc = crc32c(0, h, 40);
    for (int i = 0; i < 4; i++) {
        h[40 + i] = (uint8_t)(crc >> (8 * i));
    }
}

static bool
_decode_header(const uint8_t h[ULOG_SEGMENT_HEADER], struct segment *s)
{
    uint32_t crc = (uint32_t)h[40] | (uint32_t)h[41] << 8 |
                   (uint32_t)h[42] << 16 | (uint32_t)h[43] << 24;
    if (memcmp(h, magic, 8) != 0 || h[8] != ULOG_VERSION ||
        crc != crc32c(0, h, 40)) {
        return false;
    }
    s->no = util_get_le64(h + 16);
    s->base_lsn = util_get_le64(h + 24);
    s->base_seq = util_get_le64(h + 32);
    return true;
}

int
ulog_read_full(int fd, void *buf, size_t len, uint64_t off)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = pread(fd, (char *)buf + got, len - got,
                          (off_t)(off + got));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        got += (size_t)n;
    }
    return 0;
}

int
ulog_write_full(int fd, const void *buf, size_t len, uint64_t off)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = pwrite(fd, p, len, (off_t)off);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return -1;
        }
        p += n;
        len -= (size_t)n;
        off += (uint64_t)n;
    }
    return 0;
}

static int
_cmp_seg(const void *a, const void *b)
{
    const struct segment *x = a;
    const struct segment *y = b;
    return x->no < y->no ? -1 : x->no > y->no;
}

/* Lists and validates the segment headers in `dir`, sorted by number. */
int
ulog_scan_dir(const char *dir, struct segment **out, size_t *n, char *err,
              size_t errlen)
{
    DIR *d = opendir(dir);
    struct segment *segs = NULL;
    size_t count = 0;
    size_t cap = 0;

    if (d == NULL) {
        snprintf(err, errlen, "cannot read update log directory %s: %s", dir,
                 strerror(errno));
        return -1;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        uint64_t no;
        size_t len = strlen(e->d_name);
        if (len != 13 || strcmp(e->d_name + 8, ".ulog") != 0 ||
            !util_parse_uint(e->d_name, 8, UINT64_MAX, &no)) {
            continue;
        }
        if (count == cap) {
            cap = cap == 0 ? 16 : cap * 2;
            struct segment *grown = realloc(segs, cap * sizeof(*segs));
            if (grown == NULL) {
                closedir(d);
                free(segs);
                snprintf(err, errlen, "out of memory");
                return -1;
            }
            segs = grown;
        }
        memset(&segs[count], 0, sizeof(segs[count]));
        segs[count].no = no;
        count++;
    }
    closedir(d);
    if (count > 1) {
        qsort(segs, count, sizeof(*segs), _cmp_seg);
    }
    *out = segs;
    *n = count;
    return 0;
}

/* Reads header and size of segment `s` (its number is set). */
int
ulog_load_segment(const char *dir, struct segment *s)
{
    char path[PATH_MAX];
    uint8_t h[ULOG_SEGMENT_HEADER];
    struct stat st;
    uint64_t no = s->no;

    ulog_seg_path(dir, no, path, sizeof(path));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    int rc = -1;
    if (fstat(fd, &st) == 0 && (uint64_t)st.st_size >= ULOG_SEGMENT_HEADER &&
        ulog_read_full(fd, h, sizeof(h), 0) == 0 && _decode_header(h, s) &&
        s->no == no) {
        s->size = (uint64_t)st.st_size;
        rc = 0;
    }
    close(fd);
    return rc;
}

