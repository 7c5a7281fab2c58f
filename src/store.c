/*
 * store: Tokyo Cabinet wrapper (see store.h).
 */
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tchdb.h>
#include <tcutil.h>

#include "dbcheck.h"
#include "util.h"

/* Allocation beyond what is reserved, so most reservations need no call. */
#define SPACE_STEP ((uint64_t)16 << 20)

struct store {
    enum dbspec_kind kind;
    pthread_mutex_t iter_lock;
    pthread_mutex_t space_lock;      /* serialises fallocate() calls */
    _Atomic uint64_t space_end;      /* allocated up to here */
    _Atomic uint64_t space_reserved; /* outstanding reservations */
    _Atomic bool space_unsupported;  /* no fallocate: no guarantee */
    TCHDB *hdb; /* DBSPEC_HASH_FILE */
    TCMDB *mdb; /* DBSPEC_HASH_MEMORY */
    char path[DBSPEC_PATH_MAX];
};

static enum store_status
_hdb_status(struct store *s)
{
    int ecode = tchdbecode(s->hdb);
    return ecode == TCENOREC ? STORE_NOTFOUND : STORE_EIO;
}

static bool
_open_hash_file(struct store *s, const struct dbspec *spec, char *err,
                size_t errlen)
{
    s->hdb = tchdbnew();
    if (s->hdb == NULL || !tchdbsetmutex(s->hdb) ||
        !tchdbtune(s->hdb, spec->bnum, (int8_t)spec->apow,
                   (int8_t)spec->fpow, spec->opts)) {
        snprintf(err, errlen, "cannot set up database object");
        return false;
    }
    if (spec->rcnum > 0 && !tchdbsetcache(s->hdb, (int32_t)spec->rcnum)) {
        snprintf(err, errlen, "cannot set record cache");
        return false;
    }
    int64_t xmsiz = spec->xmsiz >= 0 ? spec->xmsiz : STORE_DEFAULT_XMSIZ;
    if (!tchdbsetxmsiz(s->hdb, xmsiz)) {
        snprintf(err, errlen, "cannot set xmsiz");
        return false;
    }
    if (spec->dfunit >= 0 && !tchdbsetdfunit(s->hdb, (int32_t)spec->dfunit)) {
        snprintf(err, errlen, "cannot set dfunit");
        return false;
    }
    /* Tokyo Cabinet trusts its file; a damaged one must stop us here,
     * not abort the process in the middle of a lookup later. */
    struct dbcheck_report rep;
    enum dbcheck_status cs = dbcheck_file(spec->path, &rep);
    if (cs == DBCHECK_DAMAGED) {
        snprintf(err, errlen, "database %s is damaged at offset %" PRIu64
                 ": %s; move it aside and restore it from a replica (start "
                 "with -mhost and an empty database for a full resync) or a "
                 "backup; `kura check` reports the damage", spec->path,
                 rep.damage_offset, rep.damage);
        return false;
    }
    if (cs == DBCHECK_EIO) {
        snprintf(err, errlen, "cannot read database %s: %s", spec->path,
                 strerror(errno));
        return false;
    }
    /* Non-blocking lock: a second daemon on the same file fails at once. */
    if (!tchdbopen(s->hdb, spec->path, HDBOWRITER | HDBOCREAT | HDBOLCKNB)) {
        int ecode = tchdbecode(s->hdb);
        const char *hint = "";
        if (ecode == TCELOCK) {
            hint = " (another process holds it open)";
        } else if (ecode == TCEOPEN || ecode == TCENOFILE) {
            hint = errno != 0 ? strerror(errno) : "";
        }
        snprintf(err, errlen, "cannot open database %s: %s%s%s", spec->path,
                 tchdberrmsg(ecode), ecode == TCEOPEN ? ": " : "", hint);
        return false;
    }
    return true;
}

struct store *
store_open(const struct dbspec *spec, char *err, size_t errlen)
{
    struct store *s = calloc(1, sizeof(*s));

    if (s == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->kind = spec->kind;
    pthread_mutex_init(&s->iter_lock, NULL);
    pthread_mutex_init(&s->space_lock, NULL);
    util_strlcpy(s->path, spec->path, sizeof(s->path));
    if (spec->kind == DBSPEC_HASH_MEMORY) {
        s->mdb = spec->bnum > 0 ? tcmdbnew2((uint32_t)spec->bnum) : tcmdbnew();
        if (s->mdb == NULL) {
            snprintf(err, errlen, "cannot create in-memory database");
            free(s);
            return NULL;
        }
        return s;
    }
    if (!_open_hash_file(s, spec, err, errlen)) {
        if (s->hdb != NULL) {
            tchdbdel(s->hdb);
        }
        free(s);
        return NULL;
    }
    atomic_store(&s->space_end, tchdbfsiz(s->hdb));
    return s;
}

enum store_status
store_close(struct store *s)
{
    enum store_status st = STORE_OK;

    if (s == NULL) {
        return STORE_OK;
    }
    if (s->hdb != NULL) {
        /* tchdbclose() does not fsync; sync first so a clean stop is durable. */
        if (!tchdbsync(s->hdb) || !tchdbclose(s->hdb)) {
            st = STORE_EIO;
        }
        tchdbdel(s->hdb);
    }
    if (s->mdb != NULL) {
        tcmdbdel(s->mdb);
    }
    pthread_mutex_destroy(&s->iter_lock);
    pthread_mutex_destroy(&s->space_lock);
    free(s);
    return st;
}

enum store_status
store_get(struct store *s, const void *key, size_t nkey, uint8_t *scratch,
          size_t cap, struct store_value *out)
{
    out->owned = NULL;
    if (s->mdb != NULL) {
        int sp;
        void *p = tcmdbget(s->mdb, key, (int)nkey, &sp);
        if (p == NULL) {
            return STORE_NOTFOUND;
        }
        out->owned = p;
        out->data = p;
        out->len = (size_t)sp;
        return STORE_OK;
    }
    /*
     * tchdbget3() silently truncates to `max` and returns the copied size,
     * so ask for one byte less than the room: a full buffer means "maybe
     * truncated" and the record is fetched again in full.
     */
    int max = cap > INT32_MAX ? INT32_MAX : (int)cap;
    int n = cap > 0 ? tchdbget3(s->hdb, key, (int)nkey, scratch, max - 1) : max;
    if (n < 0) {
        return _hdb_status(s);
    }
    if (n < max - 1) {
        out->data = scratch;
        out->len = (size_t)n;
        return STORE_OK;
    }
    int sp;
    void *p = tchdbget(s->hdb, key, (int)nkey, &sp);
    if (p == NULL) {
        return _hdb_status(s);
    }
    out->owned = p;
    out->data = p;
    out->len = (size_t)sp;
    return STORE_OK;
}

void
store_value_release(struct store_value *v)
{
    free(v->owned);
    v->owned = NULL;
}

enum store_status
store_put(struct store *s, const void *key, size_t nkey, const void *rec,
          size_t len)
{
    if (s->mdb != NULL) {
        tcmdbput(s->mdb, key, (int)nkey, rec, (int)len);
        return STORE_OK;
    }
    if (!tchdbput(s->hdb, key, (int)nkey, rec, (int)len)) {
        return STORE_EIO;
    }
    return STORE_OK;
}

enum store_status
store_out(struct store *s, const void *key, size_t nkey)
{
    if (s->mdb != NULL) {
        return tcmdbout(s->mdb, key, (int)nkey) ? STORE_OK : STORE_NOTFOUND;
    }
    if (!tchdbout(s->hdb, key, (int)nkey)) {
        return _hdb_status(s);
    }
    return STORE_OK;
}

enum store_status
store_sync(struct store *s)
{
    if (s->hdb != NULL && !tchdbsync(s->hdb)) {
        return STORE_EIO;
    }
    return STORE_OK;
}

uint64_t
store_rnum(struct store *s)
{
    return s->mdb != NULL ? tcmdbrnum(s->mdb) : tchdbrnum(s->hdb);
}

uint64_t
store_fsiz(struct store *s)
{
    return s->mdb != NULL ? tcmdbmsiz(s->mdb) : tchdbfsiz(s->hdb);
}

uint64_t
store_bnum(struct store *s)
{
    return s->hdb != NULL ? s->hdb->bnum : 0;
}

/* Allocates [from, to) of the database file; 0, or -1 with errno set. */
static int
_allocate(struct store *s, uint64_t from, uint64_t to)
{
    int rc;
    do {
        rc = fallocate(s->hdb->fd, FALLOC_FL_KEEP_SIZE, (off_t)from,
                       (off_t)(to - from));
    } while (rc != 0 && errno == EINTR);
    return rc;
}

enum store_status
store_reserve(struct store *s, uint64_t bytes)
{
    if (s->hdb == NULL) {
        return STORE_OK;
    }
    uint64_t reserved = atomic_fetch_add(&s->space_reserved, bytes) + bytes;
    uint64_t need = tchdbfsiz(s->hdb) + reserved;
    if (need <= atomic_load(&s->space_end) ||
        atomic_load(&s->space_unsupported)) {
        return STORE_OK;
    }
    enum store_status st = STORE_OK;
    pthread_mutex_lock(&s->space_lock);
    uint64_t end = atomic_load(&s->space_end);
    if (need > end) {
        /* Ahead by a step when the disk allows, else exactly enough. */
        if (_allocate(s, end, need + SPACE_STEP) == 0) {
            atomic_store(&s->space_end, need + SPACE_STEP);
        } else if (errno == ENOSPC && _allocate(s, end, need) == 0) {
            atomic_store(&s->space_end, need);
        } else if (errno == EOPNOTSUPP) {
            atomic_store(&s->space_unsupported, true);
        } else {
            st = errno == ENOSPC ? STORE_ENOSPC : STORE_EIO;
        }
    }
    pthread_mutex_unlock(&s->space_lock);
    if (st != STORE_OK) {
        atomic_fetch_sub(&s->space_reserved, bytes);
    }
    return st;
}

void
store_unreserve(struct store *s, uint64_t bytes)
{
    if (s->hdb != NULL) {
        atomic_fetch_sub(&s->space_reserved, bytes);
    }
}

bool
store_space_guaranteed(const struct store *s)
{
    return s->hdb == NULL || !atomic_load(&s->space_unsupported);
}

bool
store_over_bnum(struct store *s)
{
    return s->hdb != NULL && tchdbrnum(s->hdb) > s->hdb->bnum;
}

const char *
store_path(const struct store *s)
{
    return s->path;
}

void
store_iter_acquire(struct store *s)
{
    pthread_mutex_lock(&s->iter_lock);
}

void
store_iter_release(struct store *s)
{
    pthread_mutex_unlock(&s->iter_lock);
}

/*
 * A checkpoint after 64 MiB of 1 KiB inserts has about as much dirty
 * database to write. Written in one go, it sat in the queue in front of
 * the log's fdatasync and held an insert for 121 ms (kura stallwatch on
 * ext4); a slice of this size keeps the wait behind it to a few ms.
 */
#define STORE_WRITEBACK_SLICE ((off_t)1 << 20)

int
store_sync_data(struct store *s)
{
    if (s->hdb == NULL) {
        return 0;
    }
    int fd = s->hdb->fd;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        return -1;
    }
    for (off_t off = 0; off < st.st_size; off += STORE_WRITEBACK_SLICE) {
        /* Only a head start for fdatasync below, so errors are its to
         * report; clean ranges cost a page-cache lookup. */
        (void)sync_file_range(fd, off, STORE_WRITEBACK_SLICE,
                              SYNC_FILE_RANGE_WAIT_BEFORE |
                                  SYNC_FILE_RANGE_WRITE |
                                  SYNC_FILE_RANGE_WAIT_AFTER);
    }
    return fdatasync(fd);
}

enum store_status
store_iter_init(struct store *s)
{
    if (s->mdb != NULL) {
        tcmdbiterinit(s->mdb);
        return STORE_OK;
    }
    return tchdbiterinit(s->hdb) ? STORE_OK : STORE_EIO;
}

enum store_status
store_iter_next(struct store *s, char *key, size_t cap, size_t *nkey)
{
    for (;;) {
        int sp;
        void *p = s->mdb != NULL ? tcmdbiternext(s->mdb, &sp)
                                 : tchdbiternext(s->hdb, &sp);
        if (p == NULL) {
            if (s->hdb != NULL && tchdbecode(s->hdb) != TCENOREC) {
                return STORE_EIO;
            }
            return STORE_NOTFOUND;
        }
        if ((size_t)sp <= cap) {
            memcpy(key, p, (size_t)sp);
            *nkey = (size_t)sp;
            free(p);
            return STORE_OK;
        }
        free(p);
    }
}

const char *
store_errmsg(struct store *s)
{
    if (s->hdb == NULL) {
        return "in-memory database error";
    }
    return tchdberrmsg(tchdbecode(s->hdb));
}

/*
 * Debian's libtokyocabinet is built with Tokyo Cabinet's micro-yield race
 * test aid: its assert() calls sched_yield() every 32nd pass, at about
 * 13,800 call sites, in the release library. Under load that is a couple
 * of yields per request, and on a busy machine each hands the core to
 * another thread (measured: 100,000 yields/s; a standby's replication lag
 * p99 went from 128 ms to 7 ms without them). A yield never affects
 * correctness, so kurad defines sched_yield() as a no-op and the dynamic
 * linker binds the library's calls to it. Nothing in kura calls it.
 */
int
sched_yield(void)
{
    return 0;
}
