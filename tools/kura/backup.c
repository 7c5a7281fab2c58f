/*
 * backup: `kura backup`, a hot backup of a running kurad.
 *
 * The tool opens a replication session with REPL_FLAG_BACKUP
 * (repl_proto.h), authenticated with the -rkey secret like a standby, and
 * receives a snapshot of the database followed by every log record after
 * the snapshot's lsn up to one position P, then a heartbeat naming P
 * (repl_sender.h, R1-R3). It writes the items into a new database under a
 * temporary name and redoes the records over it in log order, so the file
 * ends up holding the server's database as of P (R2). Then, in this
 * order, so that a crash at any point leaves either the old backup or the
 * new one and never a database paired with another's position:
 *
 *   1. the new database is synced and closed (clean mark set, store.h D2);
 *   2. the old OUT.pos and OUT.flush are removed and the directory synced
 *      (a database without its .pos is still a whole backup, but cannot
 *      seed a standby or a point-in-time restore, which need the .pos);
 *   3. the database, then its flush state if any, are renamed into place
 *      and the directory synced;
 *   4. OUT.pos is written atomically (atomicfile.h).
 *
 * What arrives is checked by backup_stream.h (any failure abandons the
 * backup), and the master must close the connection after the position.
 *
 * OUT is locked as a database (store_lock) while the backup runs, so it
 * cannot be written over a database a kurad has open, nor by two backups
 * at once.
 */
#include "backup.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "atomicfile.h"
#include "backup_pos.h"
#include "backup_stream.h"
#include "buf.h"
#include "clock.h"
#include "dbspec.h"
#include "netio.h"
#include "repl_auth.h"
#include "repl_proto.h"
#include "repl_receiver.h"
#include "store.h"
#include "tlsopt.h"
#include "txn.h"
#include "util.h"

#define DEFAULT_TIMEOUT_MS 30000
#define READ_CHUNK ((size_t)1 << 20)
#define NAME_MAX_LEN (DBSPEC_PATH_MAX + 16)

/* A backup in progress. */
struct backup {
    const char *host;
    int port;
    int timeout_ms;
    struct repl_auth auth;
    struct tlsopt tlsopt;        /* --tls ... */
    struct tls_ctx *tls;         /* ... its context, or NULL */
    struct dbspec out;           /* the backup's final name and tuning */
    struct dbspec part;          /* the same, under the temporary name */
    char pos_path[NAME_MAX_LEN];
    char flush_out[NAME_MAX_LEN];
    char flush_part[NAME_MAX_LEN];
    char part_lock[NAME_MAX_LEN];
    struct store *store;
    struct clock clock;
    struct txn_engine eng;
    struct txn_batch batch;
    bool eng_ready;
    uint8_t *scratch;            /* a snapshot item, sealed by store_put */
    size_t scratch_cap;
    uint32_t master_sid;
    struct backup_stream stream; /* the checks on what arrives */
    char err[512];
};

static int _fail(struct backup *bk, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
_fail(struct backup *bk, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(bk->err, sizeof(bk->err), fmt, ap);
    va_end(ap);
    return -1;
}

/* ------------------------------------------------------------ frames */

/* backup_stream_ops.item: writes a snapshot item into the new file. */
static int
_put_item(void *arg, const char *key, size_t nkey, const uint8_t *rec,
          size_t len, char *err, size_t errlen)
{
    struct backup *bk = arg;
    if (len > bk->scratch_cap) {
        uint8_t *p = realloc(bk->scratch, len);
        if (p == NULL) {
            snprintf(err, errlen, "out of memory for a %zu-byte item", len);
            return -1;
        }
        bk->scratch = p;
        bk->scratch_cap = len;
    }
    memcpy(bk->scratch, rec, len);
    /* store_put() seals the record with this file's salt (store.h D3). */
    if (store_put(bk->store, key, nkey, bk->scratch, len) != STORE_OK) {
        snprintf(err, errlen, "cannot write %s: %s", bk->part.path,
                 store_errmsg(bk->store));
        return -1;
    }
    return 0;
}

/*
 * backup_stream_ops.redo: the record is the key's state at that point of
 * the log, so applying them in order ends in the state at the last one.
 */
static int
_redo(void *arg, const struct logrec *r, char *err, size_t errlen)
{
    struct backup *bk = arg;
    bool applied;
    if (txn_redo(&bk->batch, r, &applied) != TXN_OK) {
        snprintf(err, errlen, "cannot apply log record seq %" PRIu64
                 " to %s", r->seq, bk->part.path);
        return -1;
    }
    return 0;
}

/* Reads frames until the master closes the connection after P. */
static int
_receive(struct backup *bk, struct netio_stream *io)
{
    struct buf in;
    int rc = -1;

    buf_init(&in);
    for (;;) {
        int w = netio_stream_wait_readable(io, bk->timeout_ms);
        if (w == 0) {
            _fail(bk, "the server sent nothing for %d ms", bk->timeout_ms);
            break;
        }
        if (w < 0) {
            _fail(bk, "lost the connection: %s", strerror(errno));
            break;
        }
        if (!buf_reserve(&in, READ_CHUNK, REPL_FRAME_MAX + READ_CHUNK)) {
            _fail(bk, "out of memory");
            break;
        }
        ssize_t got = netio_stream_recv(io, buf_tail(&in), buf_room(&in));
        if (got < 0 && (errno == EINTR || errno == EAGAIN)) {
            continue;
        }
        if (got < 0) {
            _fail(bk, "lost the connection: %s", strerror(errno));
            break;
        }
        if (got == 0) {
            if (backup_stream_done(&bk->stream) && buf_len(&in) == 0) {
                rc = 0;
            } else {
                _fail(bk, "the server closed the connection before the "
                      "backup was complete");
            }
            break;
        }
        buf_produce(&in, (size_t)got);
        struct repl_frame f;
        enum repl_status st;
        bool failed = false;
        while ((st = repl_frame_decode((const uint8_t *)buf_head(&in),
                                       buf_len(&in), &f)) == REPL_OK) {
            if (backup_stream_frame(&bk->stream, &f) != 0) {
                _fail(bk, "%s", bk->stream.err);
                failed = true;
                break;
            }
            buf_consume(&in, f.len);
        }
        if (failed) {
            break;
        }
        if (st == REPL_CORRUPT) {
            _fail(bk, "the server sent a damaged frame");
            break;
        }
        if (f.len > buf_len(&in) &&
            !buf_reserve(&in, f.len - buf_len(&in),
                         REPL_FRAME_MAX + READ_CHUNK)) {
            _fail(bk, "a %" PRIu32 "-byte frame does not fit", f.len);
            break;
        }
    }
    buf_deinit(&in);
    return rc;
}

/* --------------------------------------------------------- the session */

static int
_session(struct backup *bk)
{
    char line[REPL_LINE_MAX];
    struct repl_hello h = {REPL_VERSION, REPL_BACKUP_SID, 0, REPL_FLAG_BACKUP,
                           ""};
    struct netio_stream io;
    char why[512];
    if (netio_stream_connect(&io, bk->host, bk->port, bk->tls,
                             bk->timeout_ms, why, sizeof(why)) != 0) {
        return _fail(bk, "%s", why);
    }
    int rc = -1;
    switch (repl_receiver_handshake(&io, &h, &bk->auth, bk->timeout_ms, line,
                                    sizeof(line))) {
    case REPL_RECEIVER_HS_OK:
        if (sscanf(line, "REPL BACKUP %" SCNu32, &bk->master_sid) == 1) {
            rc = _receive(bk, &io);
        } else if (strncmp(line, "REPL ERROR ", 11) == 0) {
            _fail(bk, "the server refused: %s", line + 11);
        } else {
            _fail(bk, "the server does not serve backups (it answered "
                  "\"%.60s\"); upgrade it", line);
        }
        break;
    case REPL_RECEIVER_HS_EIO:
        _fail(bk, "no answer from %s:%d", bk->host, bk->port);
        break;
    case REPL_RECEIVER_HS_NOPROOF:
        _fail(bk, "%s:%d did not prove it holds the key (has it no "
              "-rkey?)", bk->host, bk->port);
        break;
    case REPL_RECEIVER_HS_NEEDKEY:
        _fail(bk, "%s:%d requires the replication key: give --rkey",
              bk->host, bk->port);
        break;
    case REPL_RECEIVER_HS_BADPROOF:
        _fail(bk, "%s:%d failed authentication (not the same key)",
              bk->host, bk->port);
        break;
    }
    netio_stream_close(&io);
    return rc;
}

/* ------------------------------------------------------------- files */

static int
_names(struct backup *bk, const char *name)
{
    if (!dbspec_parse(name, &bk->out, bk->err, sizeof(bk->err))) {
        return -1;
    }
    if (bk->out.kind != DBSPEC_HASH_FILE) {
        return _fail(bk, "%s is not a database file name", name);
    }
    const char *p = bk->out.path;
    bk->part = bk->out;
    if ((size_t)snprintf(bk->part.path, sizeof(bk->part.path), "%s.part",
                         p) >= sizeof(bk->part.path)) {
        return _fail(bk, "%s: name too long", p);
    }
    snprintf(bk->pos_path, sizeof(bk->pos_path), "%s.pos", p);
    snprintf(bk->flush_out, sizeof(bk->flush_out), "%s.flush", p);
    snprintf(bk->flush_part, sizeof(bk->flush_part), "%s.flush",
             bk->part.path);
    snprintf(bk->part_lock, sizeof(bk->part_lock), "%s.lock", bk->part.path);
    return 0;
}

/* Removes what a failed or finished run leaves under the temporary name. */
static void
_remove_part(struct backup *bk)
{
    char made[NAME_MAX_LEN + 8];
    snprintf(made, sizeof(made), "%s.new", bk->part.path); /* store.c */
    unlink(made);
    unlink(bk->part.path);
    unlink(bk->flush_part);
    unlink(bk->part_lock);
}

static int
_open_part(struct backup *bk)
{
    _remove_part(bk); /* a run that was killed: start afresh */
    bk->store = store_open(&bk->part, NULL, NULL, bk->err, sizeof(bk->err));
    if (bk->store == NULL) {
        return -1;
    }
    clock_init(&bk->clock, 0);
    if (txn_engine_init(&bk->eng, bk->store, &bk->clock, NULL, 0, 64,
                        bk->flush_part, bk->err, sizeof(bk->err)) != 0) {
        return -1;
    }
    /* The copy of a server that logs keeps its tombstones, as the server
     * does (txn.h T6), so it can serve as a standby's database. */
    bk->eng.keep_tombstones = true;
    if (txn_batch_init(&bk->batch, &bk->eng, (size_t)1 << 20) != 0) {
        txn_engine_deinit(&bk->eng);
        return _fail(bk, "out of memory");
    }
    bk->eng_ready = true;
    struct backup_stream_ops ops = {_put_item, _redo, bk};
    backup_stream_init(&bk->stream, &ops);
    return 0;
}

/* Closes the temporary database; returns -1 if it could not be synced. */
static int
_close_part(struct backup *bk)
{
    if (bk->eng_ready) {
        txn_batch_deinit(&bk->batch);
        txn_engine_deinit(&bk->eng);
        bk->eng_ready = false;
    }
    if (bk->store != NULL) {
        enum store_status st = store_close(bk->store);
        bk->store = NULL;
        if (st != STORE_OK) {
            return _fail(bk, "cannot sync %s", bk->part.path);
        }
    }
    return 0;
}

static int
_unlink_synced(const char *path)
{
    if (unlink(path) != 0 && errno != ENOENT) {
        return -1;
    }
    return 0;
}

/* Steps 2-4 of the order at the top of this file. */
static int
_commit(struct backup *bk)
{
    char text[BACKUP_POS_MAX];
    struct backup_pos pos = {bk->stream.pos_lsn, bk->stream.pos_seq,
                             bk->master_sid};
    int n = backup_pos_format(&pos, text, sizeof(text));
    if (n < 0) {
        return _fail(bk, "cannot format the position");
    }
    if (_unlink_synced(bk->pos_path) != 0 ||
        _unlink_synced(bk->flush_out) != 0 ||
        atomicfile_sync_dir(bk->pos_path) != 0) {
        return _fail(bk, "cannot remove the old %s: %s", bk->pos_path,
                     strerror(errno));
    }
    if (rename(bk->part.path, bk->out.path) != 0) {
        return _fail(bk, "cannot rename %s: %s", bk->part.path,
                     strerror(errno));
    }
    if (access(bk->flush_part, F_OK) == 0 &&
        rename(bk->flush_part, bk->flush_out) != 0) {
        return _fail(bk, "cannot rename %s: %s", bk->flush_part,
                     strerror(errno));
    }
    if (atomicfile_sync_dir(bk->out.path) != 0 ||
        atomicfile_write(bk->pos_path, text, (size_t)n) != 0) {
        return _fail(bk, "cannot write %s: %s", bk->pos_path,
                     strerror(errno));
    }
    return 0;
}

/* ----------------------------------------------------------- command */

static void
_usage(FILE *out)
{
    fprintf(out, "usage: kura backup [--host H] --port P [--rkey FILE] "
                 "[--timeout MS]\n"
                 "                   " TLSOPT_USAGE "\n"
                 "                   OUT.tch[#bnum=N#apow=N#fpow=N#opts=...]"
                 "\n");
}

static int
_options(struct backup *bk, int argc, char **argv, const char **name)
{
    static const struct option longopts[] = {
        {"host", required_argument, NULL, 'h'},
        {"port", required_argument, NULL, 'p'},
        {"rkey", required_argument, NULL, 'k'},
        {"timeout", required_argument, NULL, 't'},
        TLSOPT_LONG_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    const char *rkey = "";
    uint64_t v;
    int c;

    bk->host = "127.0.0.1";
    bk->port = 0;
    bk->timeout_ms = DEFAULT_TIMEOUT_MS;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'h':
            bk->host = optarg;
            break;
        case 'p':
            if (!util_parse_uint(optarg, strlen(optarg), 65535, &v) ||
                v == 0) {
                return -1;
            }
            bk->port = (int)v;
            break;
        case 'k':
            rkey = optarg;
            break;
        case 't':
            if (!util_parse_uint(optarg, strlen(optarg), 3600000, &v) ||
                v == 0) {
                return -1;
            }
            bk->timeout_ms = (int)v;
            break;
        default:
            if (!tlsopt_parse(&bk->tlsopt, c, optarg)) {
                return -1;
            }
            break;
        }
    }
    if (bk->port == 0 || optind != argc - 1) {
        return -1;
    }
    *name = argv[optind];
    if (repl_auth_load(&bk->auth, rkey, bk->err, sizeof(bk->err)) != 0) {
        fprintf(stderr, "kura backup: %s\n", bk->err);
        return -2;
    }
    if (tlsopt_context(&bk->tlsopt, false, &bk->tls) != 0) {
        return -2;
    }
    return 0;
}

int
backup_cmd(int argc, char **argv)
{
    struct backup *bk = calloc(1, sizeof(*bk));
    const char *name = NULL;
    int lock_fd = -1;
    int rc = 1;

    if (bk == NULL) {
        fprintf(stderr, "kura backup: out of memory\n");
        return 1;
    }
    int o = _options(bk, argc, argv, &name);
    if (o != 0) {
        if (o == -1) {
            _usage(stderr);
        }
        free(bk);
        return 2;
    }
    if (_names(bk, name) != 0) {
        fprintf(stderr, "kura backup: %s\n", bk->err);
        free(bk);
        return 2;
    }
    uint64_t started = util_mono_ms();
    if (store_lock(bk->out.path, &lock_fd, bk->err, sizeof(bk->err)) == 0 &&
        _open_part(bk) == 0 && _session(bk) == 0 && _close_part(bk) == 0 &&
        _commit(bk) == 0) {
        const struct backup_stream *st = &bk->stream;
        char t[BACKUP_POS_TIME_MAX];
        backup_pos_time_format(st->pos_lsn, t);
        printf("%s: %" PRIu64 " items and %" PRIu64 " log records from "
               "server %" PRIu32 " at %s:%d, as of lsn %" PRIu64 " seq %"
               PRIu64 " (%s), in %.3f s\n", bk->out.path, st->items,
               st->records, bk->master_sid, bk->host, bk->port, st->pos_lsn,
               st->pos_seq, t, (double)(util_mono_ms() - started) / 1000.0);
        rc = 0;
    } else {
        char why[sizeof(bk->err)];
        util_strlcpy(why, bk->err, sizeof(why));
        _close_part(bk);
        fprintf(stderr, "kura backup: %s\n", why);
    }
    if (lock_fd >= 0) {
        /* Only under the lock: the .part may be another backup's. */
        _remove_part(bk);
        close(lock_fd);
    }
    tls_ctx_destroy(bk->tls);
    free(bk->scratch);
    free(bk);
    return rc;
}
