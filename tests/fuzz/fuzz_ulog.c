/*
 * fuzz_ulog: fuzzes the update log's readers (logrec.h, ulog.h).
 *
 * At start-up kurad trusts whatever is in its newest log segment only as
 * far as the scan of ulog_open() does (U3), and replication and redo read
 * the segments back with a ulog reader, so both must cope with any bytes
 * a crash, a bad disk or a bug left there. The input is the body of a
 * segment: it is decoded in memory with logrec_decode(), then written
 * after a valid segment header to a file in a private directory and
 *   1. read back with an offline reader, which must return exactly the
 *      records the in-memory walk found, and stop where it stopped;
 *   2. opened with ulog_open(), which must keep exactly the leading
 *      records that obey U1 (dense seq, increasing lsn), report them,
 *      and cut the file right after them;
 *   3. read back again, which must now return just those records.
 * A second pass does the same with every record's checksum made good, so
 * that the checks behind the checksum are reached too. Descriptors are
 * counted per input, so a leak aborts.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "fuzz_common.h"
#include "log.h"
#include "logrec.h"
#include "ulog.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SEGMENT_SID 7
/*
 * ulog_open() grows its read buffer to the declared length of a torn last
 * record before it finds the file shorter (up to LOGREC_MAX_LEN, 1 GiB),
 * which under ASan takes ~150 ms; four stray bytes are enough. Inputs
 * whose torn record claims more than this skip the recovery stage, or
 * they would take most of the fuzzing time.
 */
#define RECOVER_TORN_LEN_MAX ((uint32_t)1 << 20)

/* A record found by the in-memory walk. */
struct found {
    size_t off; /* in the segment body */
    uint32_t len;
    uint64_t lsn;
    uint64_t seq;
};

/* What the in-memory walk of a segment body found. */
struct walk {
    struct found *recs;
    size_t n;
    bool clean_end; /* stopped at a torn record, zero fill or the end */
    uint32_t torn_len;  /* declared length of a torn last record, or 0 */
    size_t u1_prefix;   /* leading records that obey U1 */
    size_t u1_end;      /* body offset just after them */
};

static char work_dir[PATH_MAX];
static char segment_path[PATH_MAX + 32];
static struct logger quiet_log;
static struct clock log_clock;

static void
_remove_work_dir(void)
{
    char path[PATH_MAX + 32];
    unlink(segment_path);
    snprintf(path, sizeof(path), "%s/LOCK", work_dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/checkpoint", work_dir);
    unlink(path);
    rmdir(work_dir);
}

static int
_lowest_free_fd(void)
{
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    FUZZ_CHECK(fd >= 0);
    close(fd);
    return fd;
}

/* Once per process: a directory in memory when possible (no disk wear). */
static void
_init_once(void)
{
    if (work_dir[0] != '\0') {
        return;
    }
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : NULL;
    if (base == NULL) {
        base = getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp";
    }
    snprintf(work_dir, sizeof(work_dir), "%s/kura-fuzz-ulog-XXXXXX", base);
    FUZZ_CHECK(mkdtemp(work_dir) != NULL);
    snprintf(segment_path, sizeof(segment_path), "%s/00000001.ulog",
             work_dir);
    atexit(_remove_work_dir);
    FUZZ_CHECK(log_open(&quiet_log, "/dev/null", LOG_ERROR) == 0);
    clock_init(&log_clock, 0);
}

/* The header ulog.c writes for segment 1 of an empty log. */
static void
_segment_header(uint8_t h[ULOG_SEGMENT_HEADER])
{
    memset(h, 0, ULOG_SEGMENT_HEADER);
    memcpy(h, "KURAULOG", 8);
    h[8] = 1; /* format version */
    util_put_le32(h + 12, SEGMENT_SID);
    util_put_le64(h + 16, 1); /* segment number */
    util_put_le64(h + 24, 0); /* lsn and seq of the record before it */
    util_put_le64(h + 32, 0);
    util_put_le32(h + 40, crc32c(0, h, 40));
}

static void
_write_segment(const uint8_t *body, size_t len)
{
    uint8_t h[ULOG_SEGMENT_HEADER];
    _segment_header(h);
    int fd = open(segment_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                  0644);
    FUZZ_CHECK(fd >= 0);
    FUZZ_CHECK(write(fd, h, sizeof(h)) == (ssize_t)sizeof(h));
    if (len > 0) {
        FUZZ_CHECK(write(fd, body, len) == (ssize_t)len);
    }
    close(fd);
}

/* Decodes `body` record by record, checking each, as the readers must. */
static void
_walk(const uint8_t *body, size_t len, struct walk *w)
{
    size_t off = 0;
    size_t cap = 0;
    memset(w, 0, sizeof(*w));
    for (;;) {
        struct logrec r;
        enum logrec_status st = logrec_decode(body + off, len - off, &r);
        if (st == LOGREC_SHORT) {
            /* Torn: the declared length is past the end (if readable). */
            FUZZ_CHECK(len - off < 4 ? r.len == 0 : r.len > len - off);
            if (len - off >= 4) {
                FUZZ_CHECK(r.len == logrec_peek_len(body + off));
            }
            w->torn_len = r.len;
            w->clean_end = true;
            break;
        }
        if (st == LOGREC_CORRUPT) {
            /* Zeros are the prepared space after the last record. */
            w->clean_end = logrec_peek_len(body + off) == 0;
            break;
        }
        FUZZ_CHECK(st == LOGREC_OK);
        fuzz_check_logrec(&r, body + off, len - off);
        if (w->n == cap) {
            cap = cap == 0 ? 16 : cap * 2;
            w->recs = realloc(w->recs, cap * sizeof(*w->recs));
            FUZZ_CHECK(w->recs != NULL);
        }
        w->recs[w->n++] = (struct found){off, r.len, r.lsn, r.seq};
        off += r.len;
    }

    uint64_t lsn = 0; /* the segment header's base */
    uint64_t seq = 0;
    w->u1_end = 0;
    while (w->u1_prefix < w->n) {
        const struct found *f = &w->recs[w->u1_prefix];
        if (f->seq != seq + 1 || f->lsn <= lsn) {
            break;
        }
        lsn = f->lsn;
        seq = f->seq;
        w->u1_end = f->off + f->len;
        w->u1_prefix++;
    }
}

/*
 * Reads the segment with an offline reader and checks that it returns
 * records `first`.. of the walk (those it does not skip), byte for byte,
 * and then `want_end`.
 */
static void
_read_back(const uint8_t *body, const struct walk *w, size_t count,
           enum ulog_status want_end, bool u1_order)
{
    struct ulog_reader *r = NULL;
    char err[256];
    enum ulog_status st = ulog_reader_open_dir(work_dir, 0, &r, err,
                                               sizeof(err));
    if (st != ULOG_OK) {
        fprintf(stderr, "ulog_reader_open_dir: %d %s\n", (int)st, err);
    }
    FUZZ_CHECK(st == ULOG_OK);

    size_t i = 0;
    uint64_t last_lsn = 0;
    uint64_t last_seq = 0;
    struct logrec rec;
    while ((st = ulog_reader_next(r, &rec, false)) == ULOG_OK) {
        /* A reader opened after lsn 0 skips records stamped 0. */
        while (i < count && w->recs[i].lsn == 0) {
            i++;
        }
        FUZZ_CHECK(i < count);
        const struct found *f = &w->recs[i];
        FUZZ_CHECK(rec.len == f->len && rec.lsn == f->lsn &&
                   rec.seq == f->seq);
        FUZZ_CHECK(memcmp(rec.raw, body + f->off, f->len) == 0);
        struct logrec again;
        FUZZ_CHECK(logrec_decode(rec.raw, rec.len, &again) == LOGREC_OK);
        FUZZ_CHECK(ulog_reader_lsn(r) == rec.lsn);
        if (u1_order) {
            FUZZ_CHECK(rec.lsn > last_lsn && rec.seq == last_seq + 1);
        }
        last_lsn = rec.lsn;
        last_seq = rec.seq;
        i++;
    }
    while (i < count && w->recs[i].lsn == 0) {
        i++;
    }
    FUZZ_CHECK(i == count);
    FUZZ_CHECK(st == want_end);
    ulog_reader_close(r);
}

/* True if `body` holds only zeros from `off` on. */
static bool
_zeros_from(const uint8_t *body, size_t len, size_t off)
{
    for (size_t i = off; i < len; i++) {
        if (body[i] != 0) {
            return false;
        }
    }
    return true;
}

/* Start-up recovery (U3) of the segment, as kurad opens its log. */
static void
_recover(const uint8_t *body, size_t len, const struct walk *w)
{
    struct ulog_options o;
    struct ulog_recovery rec;
    char err[256];

    memset(&o, 0, sizeof(o));
    util_strlcpy(o.dir, work_dir, sizeof(o.dir));
    o.segment_max = (uint64_t)64 << 20;
    o.fsync = ULOG_FSYNC_NEVER;
    o.sid = SEGMENT_SID;
    o.checkpoint_ms = 1000000;
    o.checkpoint_bytes = UINT64_MAX;
    o.clock = &log_clock;
    o.log = &quiet_log;
    struct ulog *u = ulog_open(&o, &rec, err, sizeof(err));
    if (u == NULL) {
        fprintf(stderr, "ulog_open: %s\n", err);
    }
    FUZZ_CHECK(u != NULL);

    const struct found *last =
        w->u1_prefix > 0 ? &w->recs[w->u1_prefix - 1] : NULL;
    FUZZ_CHECK(rec.last_lsn == (last != NULL ? last->lsn : 0));
    FUZZ_CHECK(rec.last_seq == (last != NULL ? last->seq : 0));
    FUZZ_CHECK(rec.segments == 1);
    FUZZ_CHECK(rec.checkpoint_lsn == 0 && rec.checkpoint_seq == 0);
    bool zeros = _zeros_from(body, len, w->u1_end);
    FUZZ_CHECK(rec.cut_bytes == (zeros ? 0 : len - w->u1_end));

    uint64_t lsn;
    uint64_t seq;
    ulog_position(u, &lsn, &seq);
    FUZZ_CHECK(lsn == rec.last_lsn && seq == rec.last_seq);
    ulog_close(u);

    struct stat st;
    FUZZ_CHECK(stat(segment_path, &st) == 0);
    FUZZ_CHECK((uint64_t)st.st_size == ULOG_SEGMENT_HEADER + w->u1_end);
}

static void
_run(const uint8_t *body, size_t len)
{
    struct walk w;
    _walk(body, len, &w);

    _write_segment(body, len);
    _read_back(body, &w, w.n, w.clean_end ? ULOG_END : ULOG_ECORRUPT,
               false);
    if (w.torn_len <= RECOVER_TORN_LEN_MAX) {
        _recover(body, len, &w);
        _read_back(body, &w, w.u1_prefix, ULOG_END, true);
    }
    free(w.recs);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    _init_once();
    /* A descriptor leaked by the code under test takes the lowest free
     * number, so the next one free would move up. */
    int lowest_free_fd = _lowest_free_fd();

    _run(data, size);
    fuzz_run_with_fixed_crcs(data, size, fuzz_fix_logrec_crcs, _run);

    FUZZ_CHECK(_lowest_free_fd() == lowest_free_fd);
    return 0;
}
