/*
 * store: Tokyo Cabinet wrapper (see store.h).
 */
#include "store.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <tchdb.h>
#include <tcutil.h>
#include <unistd.h>

#include "atomicfile.h"
#include "dbcheck.h"
#include "lockfile.h"
#include "log.h"
#include "record.h"
#include "salvage.h"
#include "store_internal.h"
#include "tcfile.h"
#include "util.h"

/* Allocation beyond what is reserved, so most reservations need no call. */
#define SPACE_STEP ((uint64_t)16 << 20)


/* ------------------------------------------- damage while serving */

/*
 * Tokyo Cabinet trusts its file. If a page goes bad while kurad serves
 * (a failing disk, a hand edit), a lookup can follow a garbage size into
 * a failed allocation, which Tokyo Cabinet answers by calling tcfatalfunc
 * and exiting, or into one of the assertions Debian's build keeps, which
 * abort(), or read a mapped page that cannot be read, which raises
 * SIGBUS. Each call into Tokyo Cabinet that reads records runs under a
 * guard: the fatal function and the SIGBUS and SIGABRT handlers jump
 * back to it, the
 * locks Tokyo Cabinet took for that key are released, the damage is
 * located and logged with its offset, and the request fails alone. The
 * guard is per thread (the handlers find it only that way); both hooks
 * are process-wide, installed once.
 */
struct guard {
    sigjmp_buf env;
    volatile sig_atomic_t armed;
    const char *volatile why;
};

static _Thread_local struct guard t_guard;

static void
_on_tc_fatal(const char *msg)
{
    if (t_guard.armed) {
        t_guard.why = msg;
        siglongjmp(t_guard.env, 1);
    }
    /* Not ours to catch: Tokyo Cabinet ends the process after this. */
    fprintf(stderr, "kurad: Tokyo Cabinet: fatal error: %s\n", msg);
}

static void
_on_signal(int sig, siginfo_t *si, void *uc)
{
    (void)si;
    (void)uc;
    if (t_guard.armed) {
        t_guard.why = sig == SIGBUS
                          ? "a page of the mapped file could not be read"
                          : "Tokyo Cabinet failed one of its assertions";
        siglongjmp(t_guard.env, 2);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static pthread_once_t guard_once = PTHREAD_ONCE_INIT;

static void
_install_guard(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = _on_signal;
    /* No mask to restore: the jump leaves the signal deliverable. */
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
    sigaction(SIGABRT, &sa, NULL);
    tcfatalfunc = _on_tc_fatal;
}

/* After a jump out of Tokyo Cabinet: the locks its call took for `key`
 * are still held by this thread; give them back. */
static void
_release_tc_locks(struct store *s, const void *key, size_t nkey)
{
    if (key != NULL) { /* calls on a key also lock its records */
        uint8_t hash;
        uint64_t bucket = tcfile_bucket_of(s->hdb->bnum, key, nkey, &hash);
        pthread_rwlock_t *records = s->hdb->rmtxs;
        pthread_rwlock_unlock(&records[(uint8_t)bucket]);
    }
#ifdef __GLIBC__
    /* The whole-database mutex is recursive and taken only around a few
     * steps of a write; glibc says who owns it. */
    pthread_mutex_t *db = s->hdb->dmtx;
    while (db->__data.__owner == gettid()) {
        pthread_mutex_unlock(db);
    }
#endif
    pthread_rwlock_unlock(s->hdb->mmtx);
}

/* Tokyo Cabinet latches its first serious error and then reports it
 * for every later call on any thread: forget it, the damage is local. */
static void
_unlatch(struct store *s)
{
    s->hdb->fatal = false;
}

/*
 * A call on `key` met damage (`why`, from the guard or Tokyo Cabinet's
 * error). Finds where, logs it (each place once in a while), and makes
 * the next start check the file in full (D4) by never marking it clean.
 */
static enum store_status
_damaged(struct store *s, const void *key, size_t nkey, const char *why)
{
    struct tcfile f;
    char fwhy[160];
    uint64_t off = 0;
    const char *where = "not found on the key's path";
    if (key != NULL &&
        tcfile_open(&f, s->path, fwhy, sizeof(fwhy)) == TCFILE_OK) {
        if (tcfile_find(&f, key, nkey, &off, &where) >= 0) {
            off = 0;
            where = "the key's path is intact; elsewhere in the file";
        }
        tcfile_close(&f);
    }
    _unlatch(s);
    atomic_fetch_add(&s->damage, 1);
    if (off != 0) {
        /* A sighting that could not say where (the sweeper's walk, or a
         * path found intact) keeps the place an earlier one found. */
        atomic_store(&s->damage_at, off);
    }
    if (key == NULL) {
        key = "";
    }
    if (s->log != NULL) {
        log_limited(s->log, LOG_ERROR, "store: database %s is damaged at "
                    "offset %" PRIu64 " (%s; %s) on the way to key "
                    "\"%.*s\": that request fails, other keys are served; "
                    "the file is checked and rebuilt at the next start, or "
                    "restore it from a peer", s->path, off, where, why,
                    (int)(nkey > 64 ? 64 : nkey), (const char *)key);
    }
    return STORE_EIO;
}

/* A call on `key` returned false: not found, or damage Tokyo Cabinet
 * noticed by itself (a bad record header, a read past the end). */
static enum store_status
_hdb_error(struct store *s, const void *key, size_t nkey)
{
    int ecode = tchdbecode(s->hdb);
    if (ecode == TCENOREC) {
        return STORE_NOTFOUND;
    }
    if (ecode == TCERHEAD || ecode == TCEREAD || ecode == TCEMISC ||
        s->hdb->fatal) {
        return _damaged(s, key, nkey, tchdberrmsg(ecode));
    }
    return STORE_EIO;
}

/* Writes `len` bytes at `off` of `path` and syncs them; 0 or -1. */
static int
_patch(const char *path, uint64_t off, const void *p, size_t len)
{
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    int rc = pwrite(fd, p, len, (off_t)off) == (ssize_t)len &&
                     fdatasync(fd) == 0
                 ? 0
                 : -1;
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

/*
 * D8: this machine's boot, from the kernel's boot id (a fresh random
 * UUID at every boot), or from the file KURA_BOOT_ID_FILE names: the
 * power-cut harness simulates a machine's restart without one. All zero
 * when it cannot be read, which matches no file.
 */
static void
_this_boot(uint8_t boot[TCFILE_BOOT_SIZE])
{
    const char *path = getenv("KURA_BOOT_ID_FILE");
    char text[128];
    memset(boot, 0, TCFILE_BOOT_SIZE);
    long n = atomicfile_read(path != NULL && path[0] != '\0'
                                 ? path
                                 : "/proc/sys/kernel/random/boot_id",
                             text, sizeof(text) - 1);
    uint8_t parsed[TCFILE_BOOT_SIZE];
    size_t digits = 0;
    for (long i = 0; i < n && digits < 2 * TCFILE_BOOT_SIZE; i++) {
        int c = (unsigned char)text[i];
        int v = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (v < 0) {
            continue; /* the UUID's dashes, a newline */
        }
        parsed[digits / 2] = (uint8_t)(digits % 2 == 0 ? v << 4
                                                       : parsed[digits / 2] | v);
        digits++;
    }
    if (digits == 2 * TCFILE_BOOT_SIZE) {
        memcpy(boot, parsed, TCFILE_BOOT_SIZE);
    }
}

static bool
_known_boot(const uint8_t boot[TCFILE_BOOT_SIZE])
{
    for (int i = 0; i < TCFILE_BOOT_SIZE; i++) {
        if (boot[i] != 0) {
            return true;
        }
    }
    return false;
}

static bool
_check(const char *path, unsigned flags, struct store_open_report *rep,
       char *err, size_t errlen)
{
    uint64_t began = util_mono_ms();
    enum dbcheck_status cs = dbcheck_file(path, flags, &rep->check);
    rep->check_ms = util_mono_ms() - began;
    if (cs == DBCHECK_EIO) {
        snprintf(err, errlen, "cannot read database %s: %s", path,
                 strerror(errno));
        return false;
    }
    return true;
}

/*
 * D2: a new database appears whole or not at all: it is made under a
 * temporary name with its salt, synced, marked clean and renamed into
 * place, and the directory synced.
 */
static int
_create(struct store *s, const struct dbspec *spec, char *err,
        size_t errlen)
{
    char tmp[DBSPEC_PATH_MAX + 16];
    snprintf(tmp, sizeof(tmp), "%s.new", spec->path);
    unlink(tmp);
    TCHDB *hdb = tchdbnew();
    bool ok = hdb != NULL &&
              tchdbtune(hdb, spec->bnum, (int8_t)spec->apow,
                        (int8_t)spec->fpow, spec->opts) &&
              tchdbopen(hdb, tmp, HDBOWRITER | HDBOCREAT | HDBOTRUNC);
    if (ok) {
        if (getrandom(&s->salt, sizeof(s->salt), 0) !=
            (ssize_t)sizeof(s->salt)) {
            s->salt = (uint32_t)util_mono_ms() ^ (uint32_t)getpid();
        }
        struct tcfile_kura k = {true, s->salt, false, {0}};
        tcfile_kura_encode(&k, (uint8_t *)tchdbopaque(hdb));
        ok = tchdbclose(hdb);
    }
    const char *why = hdb != NULL ? tchdberrmsg(tchdbecode(hdb))
                                  : "out of memory";
    if (hdb != NULL) {
        tchdbdel(hdb);
    }
    uint8_t one = 1;
    int fd = ok ? open(tmp, O_RDWR | O_CLOEXEC) : -1;
    ok = ok && fd >= 0 && fsync(fd) == 0;
    if (fd >= 0) {
        close(fd);
    }
    if (!ok || _patch(tmp, TCFILE_KURA_CLEAN_OFF, &one, 1) != 0 ||
        rename(tmp, spec->path) != 0 ||
        atomicfile_sync_dir(spec->path) != 0) {
        snprintf(err, errlen, "cannot create database %s: %s", spec->path,
                 ok ? strerror(errno) : why);
        unlink(tmp);
        return -1;
    }
    return 0;
}

/*
 * D2, D4: decides from the file's own marks whether the last stop was
 * clean, proves the file sound (or rebuilds it, after an unclean stop),
 * and clears the clean mark durably before anything can change the file.
 */
static bool
_prepare_file(struct store *s, const struct dbspec *spec,
              const struct store_redo_bound *bound,
              struct store_open_report *rep, char *err, size_t errlen)
{
    struct tcfile f;
    char why[160];
    enum tcfile_status ts = tcfile_open(&f, spec->path, why, sizeof(why));
    if (ts == TCFILE_EMPTY) {
        if (_create(s, spec, err, errlen) != 0) {
            return false;
        }
        rep->created = true;
        ts = tcfile_open(&f, spec->path, why, sizeof(why));
    }
    if (ts == TCFILE_EIO) {
        snprintf(err, errlen, "cannot read database %s: %s", spec->path,
                 strerror(errno));
        return false;
    }
    if (ts == TCFILE_BAD) {
        /* A new file appears whole (D2), so no crash leaves a header
         * like this: it is not a database kurad made. */
        snprintf(err, errlen, "database %s is damaged at offset 0: %s; move "
                 "it aside and restore it from a replica (start with -mhost "
                 "and an empty database for a full resync) or a backup",
                 spec->path, why);
        return false;
    }
    struct tcfile_kura k = {false, 0, false, {0}};
    uint8_t flags = 0;
    bool big_endian = false;
    if (ts == TCFILE_OK) {
        tcfile_kura_decode(f.map + TCFILE_OPAQUE_OFF, &k);
        flags = f.flags;
        big_endian = f.big_endian;
        s->big_endian = f.big_endian;
        tcfile_close(&f);
    }
    bool tc_open = (flags & TCFILE_FLAG_OPEN) != 0;
    /* Files from before the clean mark have only Tokyo Cabinet's flag. */
    rep->unclean = tc_open || (k.present && !k.clean);
    uint8_t boot[TCFILE_BOOT_SIZE];
    _this_boot(boot);
    rep->same_boot = rep->unclean && k.present && _known_boot(k.boot) &&
                     memcmp(k.boot, boot, TCFILE_BOOT_SIZE) == 0;
    unsigned check = rep->unclean ? DBCHECK_DEEP : 0;
    check |= rep->same_boot ? DBCHECK_SAME_BOOT : 0;
    if (!_check(spec->path, check, rep, err, errlen)) {
        return false;
    }
    if (rep->check.damage[0] != '\0' && !rep->unclean) {
        /* Damage after a clean stop is not a crash kura caused or can
         * reason about (a failing disk, a file edited by hand). */
        snprintf(err, errlen, "database %s is damaged at offset %" PRIu64
                 ": %s; move it aside and restore it from a replica (start "
                 "with -mhost and an empty database for a full resync) or a "
                 "backup; `kura check` reports the damage", spec->path,
                 rep->check.damage_offset, rep->check.damage);
        return false;
    }
    if (rep->check.damage[0] != '\0') {
        struct salvage_tuning t;
        salvage_tuning_keep(&t);
        t.xmsiz = spec->xmsiz >= 0 ? spec->xmsiz : STORE_DEFAULT_XMSIZ;
        if (bound != NULL && bound->size > 0 && k.present &&
            bound->salt == k.salt) {
            t.end = bound->size;
        }
        uint64_t began = util_mono_ms();
        if (salvage_rebuild(spec->path, &t, &rep->salvage, err, errlen) !=
            0) {
            return false;
        }
        rep->salvage_ms = util_mono_ms() - began;
        rep->salvaged = true;
        struct store_open_report again;
        memset(&again, 0, sizeof(again));
        if (!_prepare_file(s, spec, NULL, &again, err, errlen)) {
            return false;
        }
        rep->needs_area = again.needs_area;
        rep->check.item_bytes = again.check.item_bytes;
        return true;
    }
    /* Sound: make Tokyo Cabinet treat it as not closed (it then ignores
     * its saved free block list, which a torn close may have left
     * half-written), fix the record count a crash can leave behind, and
     * clear the clean mark before the first change. */
    uint8_t flag = flags | TCFILE_FLAG_OPEN;
    uint8_t rnum[8];
    for (int i = 0; i < 8; i++) {
        int shift = big_endian ? 8 * (7 - i) : 8 * i;
        rnum[i] = (uint8_t)(rep->check.records >> shift);
    }
    bool miscounted = rep->check.records != rep->check.header_records;
    /* D2, D8: not clean, and opened in this boot, in one synced write. */
    uint8_t mark[TCFILE_KURA_BOOT_OFF + TCFILE_BOOT_SIZE -
                 TCFILE_KURA_CLEAN_OFF];
    memset(mark, 0, sizeof(mark));
    memcpy(mark + sizeof(mark) - TCFILE_BOOT_SIZE, boot, TCFILE_BOOT_SIZE);
    if ((rep->unclean && !tc_open &&
         _patch(spec->path, TCFILE_FLAGS_OFF, &flag, 1) != 0) ||
        (rep->unclean && miscounted &&
         _patch(spec->path, TCFILE_RNUM_OFF, rnum, sizeof(rnum)) != 0) ||
        (k.present && _patch(spec->path, TCFILE_KURA_CLEAN_OFF, mark,
                             sizeof(mark)) != 0)) {
        snprintf(err, errlen, "cannot update database %s: %s", spec->path,
                 strerror(errno));
        return false;
    }
    s->salt = k.salt;
    rep->needs_area = !k.present;
    return true;
}

static bool
_open_hash_file(struct store *s, const struct dbspec *spec,
                const struct store_redo_bound *bound,
                struct store_open_report *rep, char *err, size_t errlen)
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
    /* One process at a time, before the file is even looked at: what
     * follows may rebuild it. Tokyo Cabinet's own lock comes later and
     * does not survive the rebuild's rename. */
    if (store_lock(spec->path, &s->lock_fd, err, errlen) != 0) {
        return false;
    }
    /* Tokyo Cabinet trusts its file; a damaged one must be dealt with
     * here, not abort the process in the middle of a lookup later. */
    if (!_prepare_file(s, spec, bound, rep, err, errlen)) {
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
    if (rep->needs_area) {
        /* D3: a file from before seals gets a salt of its own, on disk
         * before the first sealed record goes in. */
        if (getrandom(&s->salt, sizeof(s->salt), 0) !=
            (ssize_t)sizeof(s->salt)) {
            s->salt = (uint32_t)util_mono_ms() ^ (uint32_t)getpid();
        }
        struct tcfile_kura k = {true, s->salt, false, {0}};
        tcfile_kura_encode(&k, (uint8_t *)tchdbopaque(s->hdb));
        if (!tchdbsync(s->hdb)) {
            snprintf(err, errlen, "cannot sync database %s: %s", spec->path,
                     strerror(errno));
            return false;
        }
    }
    return true;
}

int
store_lock(const char *path, int *fd, char *err, size_t errlen)
{
    char lock[DBSPEC_PATH_MAX + 16];
    long holder;
    snprintf(lock, sizeof(lock), "%s.lock", path);
    *fd = lockfile_take(lock, &holder);
    if (*fd >= 0) {
        return 0;
    }
    int saved = errno;
    if (saved == EWOULDBLOCK && holder > 0) {
        snprintf(err, errlen, "cannot lock database %s: process %ld is "
                 "using it (%s)", path, holder, lock);
    } else if (saved == EWOULDBLOCK) {
        snprintf(err, errlen, "cannot lock database %s: another process is "
                 "using it (%s)", path, lock);
    } else {
        snprintf(err, errlen, "cannot open database %s: %s", path,
                 strerror(saved));
    }
    errno = saved;
    return -1;
}

struct store *
store_open(const struct dbspec *spec, const struct store_redo_bound *bound,
           struct store_open_report *rep, char *err, size_t errlen)
{
    struct store *s = calloc(1, sizeof(*s));
    struct store_open_report ignored;

    if (s == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->kind = spec->kind;
    s->lock_fd = -1;
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
    if (rep == NULL) {
        rep = &ignored;
    }
    pthread_once(&guard_once, _install_guard);
    memset(rep, 0, sizeof(*rep));
    if (!_open_hash_file(s, spec, bound, rep, err, errlen)) {
        if (s->hdb != NULL) {
            tchdbdel(s->hdb);
        }
        if (s->lock_fd >= 0) {
            close(s->lock_fd);
        }
        free(s);
        return NULL;
    }
    atomic_store(&s->space_end, tchdbfsiz(s->hdb));
    store_pages_hint(s);
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
        /* D2: tchdbclose() does not fsync; sync before and after it, and
         * only then mark the stop clean. */
        if (!tchdbsync(s->hdb) || !tchdbclose(s->hdb)) {
            st = STORE_EIO;
        }
        tchdbdel(s->hdb);
        uint8_t one = 1;
        int fd = open(s->path, O_RDWR | O_CLOEXEC);
        if (st != STORE_OK || fd < 0 || fsync(fd) != 0) {
            st = STORE_EIO;
        } else if (atomic_load(&s->damage) == 0) {
            /* D2: marked clean only once everything was synced. */
            assert(st == STORE_OK && fd >= 0);
            if (_patch(s->path, TCFILE_KURA_CLEAN_OFF, &one, 1) != 0) {
                st = STORE_EIO;
            }
        } /* damage seen: leave it for the next check */
        if (st != STORE_OK) {
            /* D8: the disk refused writes; the next start checks all. */
            static const uint8_t unknown[TCFILE_BOOT_SIZE];
            (void)_patch(s->path, TCFILE_KURA_BOOT_OFF, unknown,
                         sizeof(unknown));
        }
        if (fd >= 0) {
            close(fd);
        }
    }
    if (s->lock_fd >= 0) {
        close(s->lock_fd);
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
    if (sigsetjmp(t_guard.env, 0) != 0) {
        t_guard.armed = 0;
        _release_tc_locks(s, key, nkey);
        return _damaged(s, key, nkey, t_guard.why);
    }
    t_guard.armed = 1;
    int n = cap > 0 ? tchdbget3(s->hdb, key, (int)nkey, scratch, max - 1) : max;
    t_guard.armed = 0;
    if (n < 0) {
        return _hdb_error(s, key, nkey);
    }
    if (n < max - 1) {
        out->data = scratch;
        out->len = (size_t)n;
        return STORE_OK;
    }
    int sp;
    t_guard.armed = 1;
    void *p = tchdbget(s->hdb, key, (int)nkey, &sp);
    t_guard.armed = 0;
    if (p == NULL) {
        return _hdb_error(s, key, nkey);
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
store_put(struct store *s, const void *key, size_t nkey, uint8_t *rec,
          size_t len)
{
    if (s->mdb != NULL) {
        tcmdbput(s->mdb, key, (int)nkey, rec, (int)len);
        return STORE_OK;
    }
    assert(s->hdb != NULL);
    record_seal(rec, len, key, nkey, s->salt); /* D3 */
    if (sigsetjmp(t_guard.env, 0) != 0) {
        t_guard.armed = 0;
        _release_tc_locks(s, key, nkey);
        return _damaged(s, key, nkey, t_guard.why);
    }
    t_guard.armed = 1;
    bool ok = tchdbput(s->hdb, key, (int)nkey, rec, (int)len);
    t_guard.armed = 0;
    return ok ? STORE_OK : _hdb_error(s, key, nkey);
}

enum store_status
store_out(struct store *s, const void *key, size_t nkey)
{
    if (s->mdb != NULL) {
        return tcmdbout(s->mdb, key, (int)nkey) ? STORE_OK : STORE_NOTFOUND;
    }
    if (sigsetjmp(t_guard.env, 0) != 0) {
        t_guard.armed = 0;
        _release_tc_locks(s, key, nkey);
        return _damaged(s, key, nkey, t_guard.why);
    }
    t_guard.armed = 1;
    bool ok = tchdbout(s->hdb, key, (int)nkey);
    t_guard.armed = 0;
    return ok ? STORE_OK : _hdb_error(s, key, nkey);
}

enum store_status
store_sync(struct store *s)
{
    if (s->hdb != NULL && !tchdbsync(s->hdb)) {
        store_forget_boot(s);
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

bool
store_iter_try_acquire(struct store *s)
{
    return pthread_mutex_trylock(&s->iter_lock) == 0;
}

void
store_iter_release(struct store *s)
{
    pthread_mutex_unlock(&s->iter_lock);
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
        void *p;
        if (s->mdb != NULL) {
            p = tcmdbiternext(s->mdb, &sp);
        } else {
            if (sigsetjmp(t_guard.env, 0) != 0) {
                t_guard.armed = 0;
                _release_tc_locks(s, NULL, 0);
                return _damaged(s, NULL, 0, t_guard.why);
            }
            t_guard.armed = 1;
            p = tchdbiternext(s->hdb, &sp);
            t_guard.armed = 0;
        }
        if (p == NULL) {
            if (s->hdb != NULL && tchdbecode(s->hdb) != TCENOREC) {
                return _hdb_error(s, NULL, 0);
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

uint32_t
store_salt(const struct store *s)
{
    return s->salt;
}

void
store_set_logger(struct store *s, struct logger *log)
{
    s->log = log;
}

uint64_t
store_damage(struct store *s, uint64_t *last_offset)
{
    if (last_offset != NULL) {
        *last_offset = atomic_load(&s->damage_at);
    }
    return atomic_load(&s->damage);
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
