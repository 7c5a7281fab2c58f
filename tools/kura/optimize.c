/*
 * optimize: `kura optimize DBNAME[#bnum=N#apow=N#fpow=N#opts=...]`.
 *
 * Tokyo Cabinet fixes a hash file's bucket count (bnum) when it creates
 * the file; tuning given later in the database name is ignored. A file
 * that outgrew its buckets (kurad warns: kura_db_over_bnum) is rebuilt
 * here: every record is copied into a new file with the new tuning, which
 * is synced and renamed over the old one, and the directory synced
 * (salvage.h), so a power cut at any moment leaves the old file or the
 * new one, never a mix. The server must be stopped: the database's lock
 * is taken first and fails at once if kurad holds it. Without #bnum the
 * new count is twice the records, Tokyo Cabinet's own rule. The result
 * is checked in full before we say it is done.
 */
#include "optimize.h"

#include <inttypes.h>
#include <stdio.h>
#include <tchdb.h>
#include <unistd.h>

#include "dbcheck.h"
#include "dbspec.h"
#include "salvage.h"
#include "store.h"

int
optimize_cmd(int argc, char **argv)
{
    struct dbspec spec;
    char err[512];
    if (argc != 2) {
        fprintf(stderr, "usage: kura optimize DBNAME[#bnum=N#apow=N#fpow=N"
                        "#opts=ldbt]\n");
        return 2;
    }
    if (!dbspec_parse(argv[1], &spec, err, sizeof(err))) {
        fprintf(stderr, "kura optimize: %s\n", err);
        return 2;
    }
    if (spec.kind != DBSPEC_HASH_FILE) {
        fprintf(stderr, "kura optimize: %s is not a database file\n",
                argv[1]);
        return 2;
    }
    int lock_fd;
    if (store_lock(spec.path, &lock_fd, err, sizeof(err)) != 0) {
        fprintf(stderr, "kura optimize: %s (stop kurad first)\n", err);
        return 1;
    }
    struct dbcheck_report r;
    if (dbcheck_file(spec.path, DBCHECK_DEEP, &r) != DBCHECK_OK) {
        fprintf(stderr, "kura optimize: %s does not check out (%s); start "
                        "kurad on it once to repair it, or run kura check\n",
                spec.path, r.damage);
        close(lock_fd);
        return 1;
    }
    printf("before: %" PRIu64 " records, %" PRIu64 " bytes\n", r.records,
           r.file_size);
    struct salvage_tuning t;
    salvage_tuning_keep(&t);
    t.bnum = spec.bnum > 0 ? spec.bnum : (int64_t)(r.records * 2 + 1);
    t.apow = spec.apow;
    t.fpow = spec.fpow;
    t.opts = spec.opts != 0 ? spec.opts : -1;
    struct salvage_report sr;
    int rc = 0;
    if (salvage_rebuild(spec.path, &t, &sr, err, sizeof(err)) != 0) {
        fprintf(stderr, "kura optimize: %s\n", err);
        rc = 1;
    } else if (dbcheck_file(spec.path, DBCHECK_DEEP, &r) != DBCHECK_OK ||
               r.records != sr.kept) {
        fprintf(stderr, "kura optimize: the rebuilt file does not check "
                        "out: %s\n", r.damage);
        rc = 1;
    } else {
        printf("after: %" PRIu64 " records, %" PRIu64 " bytes\n", r.records,
               r.file_size);
    }
    close(lock_fd);
    return rc;
}
