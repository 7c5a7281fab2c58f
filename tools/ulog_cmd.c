/*
 * ulog_cmd: `kura ulog`, offline tools for an update log directory, the
 * counterpart of Tokyo Tyrant's ttulmgr.
 *
 *   kura ulog dump DIR [--after LSN]     one line per record
 *   kura ulog verify DIR                 check every checksum and U1
 *   kura ulog replay DIR DBNAME [--after LSN]
 *                                        apply the records to a database
 *                                        (newer stamp wins, so replaying
 *                                        twice changes nothing)
 *
 * They read the files directly; run them on a stopped server, or on a copy.
 */
#include "ulog_cmd.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
            "       kura ulog replay DIR DBNAME [--after LSN]\n");
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

/* Reads every record, calling `fn` on each. Returns 0, or 1 on damage. */
static int
_walk(struct ulog_reader *r, void (*fn)(const struct logrec *, void *),
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
        (*count)++;
        if (fn != NULL) {
            fn(&rec, arg);
        }
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

static void
_dump_cb(const struct logrec *r, void *arg)
{
    (void)arg;
    _dump_record(r);
}

struct replay {
    struct txn_batch *b;
    uint64_t applied;
    bool failed;
};

static void
_replay_cb(const struct logrec *r, void *arg)
{
    struct replay *rp = arg;
    bool applied = false;
    if (txn_redo(rp->b, r, &applied) != TXN_OK) {
        rp->failed = true;
    }
    rp->applied += applied ? 1 : 0;
}

static int
_replay(const char *dir, const char *dbname, uint64_t after)
{
    struct dbspec spec;
    char err[512];
    struct clock clock;
    struct txn_engine eng;
    struct txn_batch b;
    uint64_t count = 0;

    if (!dbspec_parse(dbname, &spec, err, sizeof(err))) {
        fprintf(stderr, "kura ulog replay: %s\n", err);
        return 2;
    }
    struct store *store = store_open(&spec, NULL, NULL, err, sizeof(err));
    if (store == NULL) {
        fprintf(stderr, "kura ulog replay: %s\n", err);
        return 1;
    }
    clock_init(&clock, 0);
    if (txn_engine_init(&eng, store, &clock, NULL, 0, 64, NULL, err,
                        sizeof(err)) != 0 ||
        txn_batch_init(&b, &eng, (size_t)1 << 20) != 0) {
        fprintf(stderr, "kura ulog replay: %s\n", err);
        store_close(store);
        return 1;
    }
    /* A replayed delete removes the key: this database has no peers. */
    struct replay rp = {&b, 0, false};
    struct ulog_reader *r = _open(dir, after);
    int rc = r == NULL ? 1 : _walk(r, _replay_cb, &rp, &count);
    ulog_reader_close(r);
    txn_batch_deinit(&b);
    txn_engine_deinit(&eng);
    if (store_close(store) != STORE_OK || rp.failed) {
        fprintf(stderr, "kura ulog replay: the database reported errors\n");
        rc = 1;
    }
    printf("replayed %" PRIu64 " records into %s, %" PRIu64 " applied\n",
           count, spec.path, rp.applied);
    return rc;
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
        if (_parse_after(argc, argv, 4, &after) != 0) {
            _usage(stderr);
            return 2;
        }
        return _replay(dir, argv[3], after);
    }
    _usage(stderr);
    return 2;
}
