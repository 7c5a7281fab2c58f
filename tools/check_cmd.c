/*
 * check_cmd: `kura check DBNAME`, the structural check of a stopped
 * database file (src/dbcheck.c does the reading; this prints the verdict).
 */
#include "check_cmd.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "dbcheck.h"
#include "dbspec.h"

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
    struct dbcheck_report r;
    switch (dbcheck_file(spec.path, DBCHECK_DEEP, &r)) {
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
