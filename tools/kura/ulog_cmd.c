/*
 * ulog_cmd: `kura ulog`, offline tools for an update log directory, the
 * counterpart of Tokyo Tyrant's ttulmgr.
 *
 *   kura ulog dump DIR [--after LSN]     one line per record
 *   kura ulog verify DIR                 check every checksum and U1
 *   kura ulog replay DIR DBNAME [--after LSN | --pos FILE] [--until TIME]
 *                                        apply the records to a database
 *                                        in log order, each setting its
 *                                        key to the state it records, so
 *                                        replaying twice changes nothing
 *
 * Point in time (doc/backup.md): `--pos OUT.tch.pos` starts after a
 * backup's position (backup_pos.h) and checks that the log holds the very
 * next record (seq + 1), so a log that no longer reaches back to the
 * backup is refused rather than leaving a silent gap; `--until TIME`
 * stops before the first record logged after TIME (a record's lsn is the
 * time the server logged it, in microseconds). The flush_all state goes
 * to DBNAME's path + ".flush", where kurad reads it.
 *
 * They read the files directly; run them on a stopped server, or on a copy.
 */
#include "ulog_cmd.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomicfile.h"
#include "backup_pos.h"
#include "clock.h"
#include "dbspec.h"
#include "logrec.h"
#include "record.h"
#include "store.h"
#include "txn.h"
#include "ulog.h"
#include "util.h"

static void
_usage(FILE *out)
{
    fprintf(out,
            "usage: kura ulog dump DIR [--after LSN]\n"
            "       kura ulog verify DIR\n"
            "       kura ulog replay DIR DBNAME [--after LSN | --pos FILE]\n"
            "                        [--until TIME]\n"
            "TIME: unix seconds (1732000000, 1732000000.25, @1732000000) or\n"
            "      ISO-8601 with a zone (2026-11-23T10:00:00Z,\n"
            "      2026-11-23 19:00:00.5+09:00)\n");
}

static void
_print_escaped(const void *p, size_t n, size_t max)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n && i < max; i++) {
        if (c[i] >= 0x20 && c[i] < 0x7f && c[i] != '\\') {
            putchar(c[i]);
        } else {
            printf("\\x%02x", c[i]);
        }
    }
    if (n > max) {
        printf("...");
    }
}

static void
_dump_record(const struct logrec *r)
{
    printf("lsn=%" PRIu64 " seq=%" PRIu64 " sid=%u ", r->lsn, r->seq, r->sid);
    if (r->op == LOGREC_FLUSH) {
        uint64_t stamp;
        uint64_t deadline;
        logrec_flush_decode(r, &stamp, &deadline);
        printf("flush_all stamp=%" PRIu64 " deadline=%" PRIu64 "\n", stamp,
               deadline);
        return;
    }
    struct record_meta m;
    const uint8_t *v;
    size_t vlen;
    printf("key=");
    _print_escaped(r->key, r->nkey, 250);
    if (record_decode(r->payload, r->plen, &m, &v, &vlen) != RECORD_OK) {
        printf(" (bad record envelope)\n");
        return;
    }
    if (m.kind == RECORD_TOMBSTONE) {
        printf(" delete ts=%" PRIu64 "\n", m.ts);
        return;
    }
    printf(" set flags=%u exptime=%u cas=%" PRIu64 " ts=%" PRIu64
           " bytes=%zu value=",
           m.flags, m.exptime, m.cas, m.ts, vlen);
    _print_escaped(v, vlen, 64);
    putchar('\n');
}

static int
_parse_after(int argc, char **argv, int first, uint64_t *after)
{
    *after = 0;
    for (int i = first; i < argc; i++) {
        if (strcmp(argv[i], "--after") == 0 && i + 1 < argc &&
            util_parse_uint(argv[i + 1], strlen(argv[i + 1]), UINT64_MAX,
                            after)) {
            i++;
            continue;
        }
        return -1;
    }
    return 0;
}

static struct ulog_reader *
_open(const char *dir, uint64_t after)
{
    struct ulog_reader *r = NULL;
    char err[512];
    if (ulog_reader_open_dir(dir, after, &r, err, sizeof(err)) != ULOG_OK) {
        fprintf(stderr, "kura ulog: %s: %s\n", dir, err);
        return NULL;
    }
    return r;
}

/*
 * Reads every record, calling `fn` on each until it returns false (that
 * record is not counted). Returns 0, or 1 on damage.
 */
static int
_walk(struct ulog_reader *r, bool (*fn)(const struct logrec *, void *),
      void *arg, uint64_t *count)
{
    struct logrec rec;
    enum ulog_status st;
    uint64_t last_lsn = 0;
    uint64_t last_seq = 0;

    *count = 0;
    while ((st = ulog_reader_next(r, &rec, false)) == ULOG_OK) {
        if (*count > 0 && (rec.lsn <= last_lsn || rec.seq != last_seq + 1)) {
            fprintf(stderr, "kura ulog: record seq %" PRIu64 " lsn %" PRIu64
                    " breaks the order after seq %" PRIu64 " lsn %" PRIu64
                    "\n", rec.seq, rec.lsn, last_seq, last_lsn);
            return 1;
        }
        last_lsn = rec.lsn;
        last_seq = rec.seq;
        if (fn != NULL && !fn(&rec, arg)) {
            return 0;
        }
        (*count)++;
    }
    if (st != ULOG_END) {
        uint64_t seg;
        uint64_t off;
        ulog_reader_where(r, &seg, &off);
        fprintf(stderr, "kura ulog: segment %08" PRIu64 " is damaged at "
                "offset %" PRIu64 " (%s)\n", seg, off,
                st == ULOG_ECORRUPT ? "bad checksum or length" : "read error");
        return 1;
    }
    return 0;
}

static bool
_dump_cb(const struct logrec *r, void *arg)
{
    (void)arg;
    _dump_record(r);
    return true;
}

/* What `kura ulog replay` was asked to do. */
struct replay_opts {
    uint64_t after;
    uint64_t until;       /* UINT64_MAX: to the end of the log */
    const char *pos_path; /* a backup's position file, or NULL */
    uint64_t first_seq;   /* with pos_path: the record that must come next */
};

struct replay {
    struct txn_batch *b;
    const struct replay_opts *o;
    uint64_t applied;
    uint64_t last_lsn;    /* of the last record replayed */
    uint64_t seen;
    bool failed;
    bool gap;
    bool reached_until;
};

static bool
_replay_cb(const struct logrec *r, void *arg)
{
    struct replay *rp = arg;
    bool applied = false;
    if (rp->seen++ == 0 && rp->o->pos_path != NULL &&
        r->seq != rp->o->first_seq) {
        fprintf(stderr, "kura ulog replay: the log does not continue the "
                "backup: its first record after lsn %" PRIu64 " is seq %"
                PRIu64 ", the backup needs seq %" PRIu64 " next (the "
                "records between were removed, or this is another server's "
                "log)\n", rp->o->after, r->seq, rp->o->first_seq);
        rp->gap = true;
        return false;
    }
    if (r->lsn > rp->o->until) {
        rp->reached_until = true;
        return false;
    }
    if (txn_redo(rp->b, r, &applied) != TXN_OK) {
        rp->failed = true;
    }
    rp->applied += applied ? 1 : 0;
    rp->last_lsn = r->lsn;
    return true;
}

/* Reads the backup position file into `o` (after, first_seq). */
static int
_load_pos(struct replay_opts *o)
{
    char text[BACKUP_POS_MAX + 8];
    struct backup_pos p;
    long n = atomicfile_read(o->pos_path, text, sizeof(text));
    if (n < 0) {
        fprintf(stderr, "kura ulog replay: cannot read %s: %s\n", o->pos_path,
                strerror(errno));
        return -1;
    }
    if (!backup_pos_parse(text, (size_t)n, &p)) {
        fprintf(stderr, "kura ulog replay: %s is not a backup position "
                "file\n", o->pos_path);
        return -1;
    }
    o->after = p.lsn;
    o->first_seq = p.seq + 1;
    return 0;
}

static int
_replay(const char *dir, const char *dbname, struct replay_opts *o)
{
    struct dbspec spec;
    char err[512];
    char flush_path[DBSPEC_PATH_MAX + 16];
    char t[BACKUP_POS_TIME_MAX];
    struct clock clock;
    struct txn_engine eng;
    struct txn_batch b;
    uint64_t count = 0;

    if (!dbspec_parse(dbname, &spec, err, sizeof(err))) {
        fprintf(stderr, "kura ulog replay: %s\n", err);
        return 2;
    }
    if (o->pos_path != NULL && _load_pos(o) != 0) {
        return 1;
    }
    if (o->until < o->after) {
        backup_pos_time_format(o->after, t);
        fprintf(stderr, "kura ulog replay: the database already holds "
                "changes up to %s (lsn %" PRIu64 "), after the time asked "
                "for; restore an older backup\n", t, o->after);
        return 1;
    }
    struct store *store = store_open(&spec, NULL, NULL, err, sizeof(err));
    if (store == NULL) {
        fprintf(stderr, "kura ulog replay: %s\n", err);
        return 1;
    }
    /* The flush_all state where kurad keeps it (server.c). */
    snprintf(flush_path, sizeof(flush_path), "%s.flush", spec.path);
    clock_init(&clock, 0);
    if (txn_engine_init(&eng, store, &clock, NULL, 0, 64,
                        spec.kind == DBSPEC_HASH_FILE ? flush_path : NULL,
                        err, sizeof(err)) != 0 ||
        txn_batch_init(&b, &eng, (size_t)1 << 20) != 0) {
        fprintf(stderr, "kura ulog replay: %s\n", err);
        store_close(store);
        return 1;
    }
    /* A replayed delete removes the key: this database has no peers. */
    struct replay rp = {&b, o, 0, 0, 0, false, false, false};
    struct ulog_reader *r = _open(dir, o->after);
    int rc = r == NULL ? 1 : _walk(r, _replay_cb, &rp, &count);
    ulog_reader_close(r);
    txn_batch_deinit(&b);
    txn_engine_deinit(&eng);
    if (store_close(store) != STORE_OK || rp.failed) {
        fprintf(stderr, "kura ulog replay: the database reported errors\n");
        rc = 1;
    }
    if (rp.gap) {
        rc = 1;
    }
    printf("replayed %" PRIu64 " records into %s, %" PRIu64 " applied",
           count, spec.path, rp.applied);
    if (count > 0) {
        backup_pos_time_format(rp.last_lsn, t);
        printf(", the last logged at %s (lsn %" PRIu64 ")", t, rp.last_lsn);
    }
    printf("\n");
    if (o->until != UINT64_MAX && !rp.reached_until && rc == 0) {
        backup_pos_time_format(o->until, t);
        printf("note: the log ends before %s: everything it holds was "
               "replayed\n", t);
    }
    return rc;
}

/* Parses replay's options from argv[first]. Returns 0 or -1. */
static int
_replay_opts(int argc, char **argv, int first, struct replay_opts *o)
{
    bool have_after = false;
    memset(o, 0, sizeof(*o));
    o->until = UINT64_MAX;
    for (int i = first; i + 1 < argc; i += 2) {
        const char *v = argv[i + 1];
        if (strcmp(argv[i], "--after") == 0 &&
            util_parse_uint(v, strlen(v), UINT64_MAX, &o->after)) {
            have_after = true;
        } else if (strcmp(argv[i], "--pos") == 0) {
            o->pos_path = v;
        } else if (strcmp(argv[i], "--until") == 0) {
            if (!backup_pos_time_parse(v, &o->until)) {
                fprintf(stderr, "kura ulog replay: '%s' is not a time\n", v);
                return -1;
            }
        } else {
            return -1;
        }
    }
    if ((argc - first) % 2 != 0 || (have_after && o->pos_path != NULL)) {
        return -1;
    }
    return 0;
}

int
ulog_cmd(int argc, char **argv)
{
    uint64_t after = 0;
    uint64_t count = 0;

    if (argc < 3) {
        _usage(stderr);
        return 2;
    }
    const char *sub = argv[1];
    const char *dir = argv[2];
    if (strcmp(sub, "dump") == 0 || strcmp(sub, "verify") == 0) {
        if (_parse_after(argc, argv, 3, &after) != 0) {
            _usage(stderr);
            return 2;
        }
        struct ulog_reader *r = _open(dir, after);
        if (r == NULL) {
            return 1;
        }
        bool dump = strcmp(sub, "dump") == 0;
        int rc = _walk(r, dump ? _dump_cb : NULL, NULL, &count);
        ulog_reader_close(r);
        if (!dump) {
            printf("%s: %" PRIu64 " records, %s\n", dir, count,
                   rc == 0 ? "all checksums good" : "DAMAGED");
        }
        return rc;
    }
    if (strcmp(sub, "replay") == 0 && argc >= 4) {
        struct replay_opts o;
        if (_replay_opts(argc, argv, 4, &o) != 0) {
            _usage(stderr);
            return 2;
        }
        return _replay(dir, argv[3], &o);
    }
    _usage(stderr);
    return 2;
}
