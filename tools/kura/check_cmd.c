/*
 * check_cmd: `kura check DBNAME`, the structural check of a stopped
 * database file (src/dbcheck.c does the reading; this prints the verdict).
 * It takes the database's lock first: a file a running kurad writes is
 * read between its writes and shows damage that is not there, so the
 * check refuses it and says who holds it.
 */
#include "check_cmd.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dbcheck.h"
#include "dbspec.h"
#include "lockfile.h"
#include "store.h"

static void
_refuse(const char *why)
{
    fprintf(stderr, "kura check: %s\n"
            "kura check: a running server changes the file while it is "
            "read, so the check would report damage that is not there; "
            "stop kurad first, or check a copy made by kura backup\n",
            why);
}

/*
 * Takes the database's lock for the length of the check, so that no
 * kurad starts on the file meanwhile either. Where the lock file cannot
 * be written (another user's database, read-only media), a shared lock
 * on it still tells whether a kurad holds it. Returns a descriptor to
 * close after the check, -1 when the check runs without one, or -2
 * when the database is in use (said on stderr).
 */
static int
_lock(const char *path)
{
    char err[DBSPEC_PATH_MAX + 128];
    int fd;
    if (store_lock(path, &fd, err, sizeof(err)) == 0) {
        return fd;
    }
    if (errno == EWOULDBLOCK) {
        _refuse(err);
        return -2;
    }
    char lock[DBSPEC_PATH_MAX + 16];
    long holder;
    snprintf(lock, sizeof(lock), "%s.lock", path);
    if (lockfile_held(lock, &holder) == 1) {
        snprintf(err, sizeof(err), "database %s is in use by process %ld "
                 "(%s)", path, holder, lock);
        _refuse(err);
        return -2;
    }
    return -1;
}

int
check_cmd(int argc, char **argv)
{
    struct dbspec spec;
    char err[256];
    if (argc != 2) {
        fputs("usage: kura check DBNAME\n", stderr);
        return 2;
    }
    if (!dbspec_parse(argv[1], &spec, err, sizeof(err))) {
        fprintf(stderr, "kura check: %s\n", err);
        return 2;
    }
    if (spec.kind != DBSPEC_HASH_FILE) {
        fprintf(stderr, "kura check: %s is not a database file\n", argv[1]);
        return 2;
    }
    /* kurad creates a missing file, so dbcheck accepts one; here a path
     * that names no file is a mistake to report, not a sound database. */
    struct stat st;
    if (stat(spec.path, &st) != 0) {
        fprintf(stderr, "kura check: %s: %s\n", spec.path, strerror(errno));
        return 1;
    }
    int lock_fd = _lock(spec.path);
    if (lock_fd == -2) {
        return 1;
    }
    struct dbcheck_report r;
    enum dbcheck_status verdict = dbcheck_file(spec.path, DBCHECK_DEEP, &r);
    if (lock_fd >= 0) {
        close(lock_fd);
    }
    switch (verdict) {
    case DBCHECK_OK:
        printf("%s: %" PRIu64 " records, %" PRIu64 " free blocks, %" PRIu64
               " bytes: sound\n", spec.path, r.records, r.free_blocks,
               r.file_size);
        if (r.unsealed > 0) {
            printf("%s: note: %" PRIu64 " records were written before "
                   "records carried seals; kura optimize rewrites them\n",
                   spec.path, r.unsealed);
        }
        if (r.was_open) {
            printf("%s: note: the file was not closed cleanly; kurad "
                   "checks it in full at start\n", spec.path);
        }
        if (r.records != r.header_records) {
            printf("%s: note: the header counts %" PRIu64 " records\n",
                   spec.path, r.header_records);
        }
        return 0;
    case DBCHECK_DAMAGED:
        printf("%s: damaged at offset %" PRIu64 ": %s\n", spec.path,
               r.damage_offset, r.damage);
        return 1;
    default:
        fprintf(stderr, "kura check: %s: %s\n", spec.path, strerror(errno));
        return 1;
    }
}
