/*
 * optimize: `kura optimize DBNAME[#bnum=N#apow=N#fpow=N#opts=...]`.
 *
 * Tokyo Cabinet fixes a hash file's bucket count (bnum) when it creates
 * the file; tuning given later in the database name is ignored. A file
 * that outgrew its buckets (kurad warns: kura_db_over_bnum) is rebuilt
 * here with tchdboptimize(), which copies every record into a new file
 * and renames it over the old one. The server must be stopped: the copy
 * takes the file's lock and fails at once if kurad holds it. Without
 * #bnum the new count is twice the records, Tokyo Cabinet's own rule.
 * The result is checked with dbcheck before we say it is done.
 */
#include "optimize.h"

#include <inttypes.h>
#include <stdio.h>
#include <tchdb.h>

#include "dbcheck.h"
#include "dbspec.h"

static void
_describe(const char *when, TCHDB *hdb)
{
    printf("%s: %" PRIu64 " records, %" PRIu64 " buckets, %" PRIu64
           " bytes\n", when, tchdbrnum(hdb), hdb->bnum, tchdbfsiz(hdb));
}

int
optimize_cmd(int argc, char **argv)
{
    struct dbspec spec;
    char err[256];
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
    struct dbcheck_report r;
    if (dbcheck_file(spec.path, &r) != DBCHECK_OK) {
        fprintf(stderr, "kura optimize: %s does not check out (%s); run "
                        "kura check\n", spec.path, r.damage);
        return 1;
    }
    TCHDB *hdb = tchdbnew();
    if (!tchdbopen(hdb, spec.path, HDBOWRITER | HDBOLCKNB)) {
        int ecode = tchdbecode(hdb);
        fprintf(stderr, "kura optimize: cannot open %s: %s%s\n", spec.path,
                tchdberrmsg(ecode),
                ecode == TCELOCK ? " (stop kurad first)" : "");
        tchdbdel(hdb);
        return 1;
    }
    _describe("before", hdb);
    bool ok = tchdboptimize(hdb, spec.bnum > 0 ? spec.bnum : 0,
                            (int8_t)spec.apow, (int8_t)spec.fpow,
                            spec.opts != 0 ? spec.opts : UINT8_MAX);
    if (!ok) {
        fprintf(stderr, "kura optimize: %s: %s\n", spec.path,
                tchdberrmsg(tchdbecode(hdb)));
    } else {
        _describe("after", hdb);
    }
    if (!tchdbclose(hdb)) {
        ok = false;
    }
    tchdbdel(hdb);
    if (ok && dbcheck_file(spec.path, &r) != DBCHECK_OK) {
        fprintf(stderr, "kura optimize: the rebuilt file does not check "
                        "out: %s\n", r.damage);
        ok = false;
    }
    return ok ? 0 : 1;
}
