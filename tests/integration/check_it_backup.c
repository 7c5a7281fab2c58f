/*
 * Integration tests: hot backup, restore, a standby started from a backup,
 * and point-in-time restore (doc/backup.md), against a real kurad.
 *
 * - Under a concurrent write load (kura bench --ack-log), `kura backup`
 *   takes a copy; a kurad started on it holds every write acknowledged
 *   before the backup began (kura verify). The copy is exactly the
 *   server's database as of its position P (repl_sender.h R1, R2): it
 *   equals the server's own log replayed from the start up to P, record
 *   for record, and the copy plus the log after P equals the server's
 *   final database.
 * - A new standby seeded with the backup and its .pos catches up with
 *   REPL OK from P: no resync on either side, and it receives only the
 *   records written after P (R3: the backup left nothing in `peers`).
 * - `kura ulog replay --pos --until` restores the state at a chosen time:
 *   changes before it are there, a flush_all, a delete and an overwrite
 *   after it are not; a time before the backup's position and a log that
 *   does not continue the backup are refused.
 * - A backup reader stalled mid-snapshot while writes rotate the log and
 *   checkpoints remove segments still gets every record up to its
 *   position (R3: the backup holds back what it needs).
 * - Items a flush_all hid but the sweeper has not yet retired stay out of
 *   a later backup (R4).
 * - A backup with the wrong key, or none, is refused and leaves no file;
 *   the server refuses a backup session whose proof is wrong; a backup
 *   is never written over a database a kurad has open.
 *
 * Every wait polls a condition against a deadline.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "../unit/unit_main.h"
#include "dbspec.h"
#include "harness.h"
#include "record.h"
#include "repl_auth.h"
#include "repl_proto.h"
#include "repl_receiver.h"
#include "store.h"

#define TOOL_TIMEOUT_MS 60000
#define KEY "0123456789abcdef0123456789abcdef\n"
#define OTHER_KEY "fedcba9876543210fedcba9876543210\n"

static struct kura_proc m; /* the server backed up */
static struct kura_proc r; /* a server started from the backup */

/* Runs kura with `args` to completion; its exit status must be `want`. */
static void
_run(struct harness_tool *t, const char *const *args, int want)
{
    ck_assert_int_eq(harness_tool_run(t, args, want, TOOL_TIMEOUT_MS), want);
}

/* ------------------------------------------------------------ files */

/* `name` in `k`'s directory, in one of 32 static buffers used in turn. */
static const char *
_in(const struct kura_proc *k, const char *name)
{
    static char paths[32][600];
    static int next;
    char *p = paths[next++ % 32];
    snprintf(p, 600, "%s/%s", k->dir, name);
    return p;
}

static void
_write_file(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_ge(fputs(text, f), 0);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(chmod(path, mode), 0);
}

static void
_copy(const char *from, const char *to)
{
    int in = open(from, O_RDONLY);
    int out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    char buf[65536];
    ssize_t n;
    ck_assert_msg(in >= 0 && out >= 0, "copy %s -> %s", from, to);
    while ((n = read(in, buf, sizeof(buf))) > 0) {
        ck_assert_int_eq(write(out, buf, (size_t)n), n);
    }
    ck_assert_int_eq(n, 0);
    close(in);
    ck_assert_int_eq(close(out), 0);
}

static bool
_exists(const char *path)
{
    return access(path, F_OK) == 0;
}

/* Reads "rts <lsn> <seq>" from a backup's .pos file. */
static void
_read_pos(const char *path, uint64_t *lsn, uint64_t *seq)
{
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fscanf(f, "rts %" SCNu64 " %" SCNu64, lsn, seq), 2);
    fclose(f);
}

static uint64_t
_wall_us(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec;
}

/* ------------------------------------------------------------ servers */

/* Prepares `k` with the replication key in its directory (-rkey). */
static void
_init_with_key(struct kura_proc *k, const char *key)
{
    kura_init(k, NULL);
    const char *path = _in(k, "rkey");
    static char keys[2][600];
    char *kp = keys[k == &m ? 0 : 1];
    snprintf(kp, 600, "%s", path);
    _write_file(kp, key, 0600);
    k->args[k->nargs++] = "-rkey";
    k->args[k->nargs++] = kp;
}

static void
_setup(void)
{
    memset(&r, 0, sizeof(r));
    r.pid = -1;
    _init_with_key(&m, KEY);
    ck_assert_int_eq(kura_launch(&m), 0);
}

static void
_teardown(void)
{
    if (r.dir[0] != '\0') {
        kura_cleanup(&r);
    }
    kura_cleanup(&m);
}

static void
_set(int fd, const char *key, const char *value)
{
    char req[512];
    snprintf(req, sizeof(req), "set %s 0 0 %zu\r\n%s\r\n", key,
             strlen(value), value);
    ck_assert(kc_check(fd, req, "STORED\r\n"));
}

/* Sets `n` keys "<prefix><i>" to "<value><i>". */
static void
_set_many(int port, const char *prefix, const char *value, int n)
{
    int fd = kc_connect(port);
    char key[64];
    char val[64];
    ck_assert_int_ge(fd, 0);
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof(key), "%s%d", prefix, i);
        snprintf(val, sizeof(val), "%s%d", value, i);
        _set(fd, key, val);
    }
    close(fd);
}

/* Sends the flush_all command `req` to `port`; it must answer OK. */
static void
_flush_all(int port, const char *req)
{
    int fd = kc_connect(port);
    ck_assert_int_ge(fd, 0);
    ck_assert(kc_check(fd, req, "OK\r\n"));
    close(fd);
}

/* The value of `key` on `port` into `out`; false if it is missing. */
static bool
_get(int port, const char *key, char *out, size_t cap)
{
    char req[256];
    char buf[4096];
    int fd = kc_connect(port);
    ck_assert_int_ge(fd, 0);
    snprintf(req, sizeof(req), "get %s\r\n", key);
    ck_assert_int_eq(kc_sends(fd, req), 0);
    ck_assert_int_gt(kc_read_until(fd, buf, sizeof(buf), "END\r\n", 5000), 0);
    close(fd);
    unsigned flags;
    size_t len;
    int off = 0;
    char k[256];
    if (sscanf(buf, "VALUE %255s %u %zu\r\n%n", k, &flags, &len, &off) < 3 ||
        off == 0) {
        return false;
    }
    ck_assert_uint_lt(len, cap);
    memcpy(out, buf + off, len);
    out[len] = '\0';
    return true;
}

static void
_expect_value(int port, const char *key, const char *want)
{
    char got[256];
    bool found = _get(port, key, got, sizeof(got));
    if (want == NULL) {
        ck_assert_msg(!found, "%s should be missing, holds %s", key, got);
    } else {
        ck_assert_msg(found, "%s is missing", key);
        ck_assert_str_eq(got, want);
    }
}

/* Runs `kura backup` of `m` into `out` with the key file `rkey`. */
static void
_backup(struct harness_tool *t, const char *out, const char *rkey, int want)
{
    char port[16];
    snprintf(port, sizeof(port), "%d", m.port);
    if (rkey != NULL) {
        _run(t, (const char *const[]){"backup", "--port", port, "--rkey",
                                      rkey, out, NULL},
             want);
    } else {
        _run(t, (const char *const[]){"backup", "--port", port, out, NULL},
             want);
    }
}

/* ------------------------------------------------ comparing databases */

/* Live values of `path`: counts them; each must equal its twin in `b`. */
static uint64_t
_values_in_other(struct store *a, struct store *b, const char *what)
{
    char key[300];
    size_t nkey;
    uint64_t n = 0;
    uint8_t sa[4096];
    uint8_t sb[4096];

    store_iter_acquire(a);
    ck_assert_int_eq(store_iter_init(a), STORE_OK);
    while (store_iter_next(a, key, sizeof(key), &nkey) == STORE_OK) {
        struct store_value va;
        struct store_value vb;
        struct record_meta ma;
        struct record_meta mb;
        const uint8_t *xa;
        const uint8_t *xb;
        size_t la;
        size_t lb;
        ck_assert_int_eq(store_get(a, key, nkey, sa, sizeof(sa), &va),
                         STORE_OK);
        ck_assert_int_eq(record_decode(va.data, va.len, &ma, &xa, &la),
                         RECORD_OK);
        if (ma.kind != RECORD_VALUE) {
            store_value_release(&va);
            continue;
        }
        n++;
        enum store_status st = store_get(b, key, nkey, sb, sizeof(sb), &vb);
        ck_assert_msg(st == STORE_OK, "%s: %.*s missing", what, (int)nkey,
                      key);
        ck_assert_int_eq(record_decode(vb.data, vb.len, &mb, &xb, &lb),
                         RECORD_OK);
        ck_assert_msg(mb.kind == RECORD_VALUE && ma.ts == mb.ts &&
                          ma.sid == mb.sid && ma.cas == mb.cas &&
                          ma.flags == mb.flags && la == lb &&
                          memcmp(xa, xb, la) == 0,
                      "%s: %.*s differs (stamps %" PRIu64 " and %" PRIu64
                      ")", what, (int)nkey, key, ma.ts, mb.ts);
        store_value_release(&va);
        store_value_release(&vb);
    }
    store_iter_release(a);
    return n;
}

/*
 * Opens two stopped databases and checks they hold the same live values
 * (seals differ: each file has its own salt). Returns how many.
 */
static uint64_t
_same_values(const char *pa, const char *pb)
{
    struct dbspec da;
    struct dbspec db;
    char err[512];
    ck_assert(dbspec_parse(pa, &da, err, sizeof(err)));
    ck_assert(dbspec_parse(pb, &db, err, sizeof(err)));
    struct store *a = store_open(&da, NULL, NULL, err, sizeof(err));
    ck_assert_msg(a != NULL, "%s", err);
    struct store *b = store_open(&db, NULL, NULL, err, sizeof(err));
    ck_assert_msg(b != NULL, "%s", err);
    uint64_t na = _values_in_other(a, b, pa);
    uint64_t nb = _values_in_other(b, a, pb);
    ck_assert_uint_eq(na, nb);
    store_close(a);
    store_close(b);
    return na;
}

/* ------------------------------------------------------------- tests */

static bool
_has_lines(void *arg)
{
    struct stat st;
    return stat(arg, &st) == 0 && st.st_size > 0;
}

/* Copies the complete lines of an ack log as it is now. */
static void
_copy_lines(const char *from, const char *to)
{
    FILE *in = fopen(from, "r");
    FILE *out = fopen(to, "w");
    char line[512];
    ck_assert(in != NULL && out != NULL);
    while (fgets(line, sizeof(line), in) != NULL) {
        if (strchr(line, '\n') != NULL) {
            fputs(line, out);
        }
    }
    fclose(in);
    ck_assert_int_eq(fclose(out), 0);
}

/*
 * R1, R2: a backup under load holds every write acknowledged before it
 * began, and is exactly the server's database as of its position.
 */
START_TEST(test_backup_under_load)
{
    char port[16];
    char until[64];
    struct harness_tool bench;
    struct harness_tool t;
    const char *ack = _in(&m, "ack.log");
    const char *before = _in(&m, "ack-before.log");
    const char *out = _in(&m, "backup.tch");
    const char *rkey = _in(&m, "rkey");

    snprintf(port, sizeof(port), "%d", m.port);
    ck_assert_int_eq(harness_tool_spawn(
                         &bench, (const char *const[]){
                                     "bench", "--port", port, "--conns", "8",
                                     "--pipeline", "4", "--duration", "3",
                                     "--own-keys", "500", "--ack-log", ack,
                                     NULL}),
                     0);
    /* The ack log is flushed every second: what it holds was acknowledged
     * before the backup starts. */
    ck_assert(harness_wait_for(_has_lines, (void *)ack, 10000));
    _copy_lines(ack, before);
    _backup(&t, out, rkey, 0);
    ck_assert_ptr_nonnull(strstr(t.out, "log records from server 1"));
    ck_assert_int_eq(harness_tool_finish(&bench, TOOL_TIMEOUT_MS), 0);
    ck_assert(_exists(_in(&m, "backup.tch.pos")));
    ck_assert(!_exists(_in(&m, "backup.tch.part")));
    ck_assert(kura_log_has(&m, "sent a backup to"));

    /* Restore: a kurad started on a copy of the backup. */
    kura_init(&r, NULL);
    _copy(out, r.db);
    ck_assert_int_eq(kura_launch(&r), 0);
    char rport[16];
    snprintf(rport, sizeof(rport), "%d", r.port);
    _run(&t, (const char *const[]){"verify", "--ack-log", before, "--port",
                                   rport, NULL},
         0);
    ck_assert_ptr_nonnull(strstr(t.out, " 0 stale, 0 missing"));
    ck_assert_int_eq(kura_stop(&r, 20000), 0);

    /* R2: the backup is the log replayed from the start up to P. */
    uint64_t lsn;
    uint64_t seq;
    _read_pos(_in(&m, "backup.tch.pos"), &lsn, &seq);
    ck_assert_int_eq(kura_stop(&m, 20000), 0);
    const char *ulog = _in(&m, "kura.ulog");
    const char *upto = _in(&r, "replayed.tch");
    snprintf(until, sizeof(until), "%" PRIu64 ".%06" PRIu64, lsn / 1000000,
             lsn % 1000000);
    _run(&t, (const char *const[]){"ulog", "replay", ulog, upto, "--until",
                                   until, NULL},
         0);
    uint64_t n = _same_values(out, upto);
    ck_assert_uint_gt(n, 0);

    /* And the backup plus the log after P is the server's final state. */
    const char *rolled = _in(&r, "rolled.tch");
    _copy(out, rolled);
    _run(&t, (const char *const[]){"ulog", "replay", ulog, rolled, "--pos",
                                   _in(&m, "backup.tch.pos"), NULL},
         0);
    ck_assert_uint_ge(_same_values(m.db, rolled), n);
}
END_TEST

static bool
_standby_has_b(void *arg)
{
    (void)arg;
    char v[64];
    return _get(r.port, "b49", v, sizeof(v)) && strcmp(v, "B49") == 0;
}

/*
 * A standby seeded with a backup and its position catches up from P with
 * REPL OK: no resync, and only the records written after P arrive.
 */
START_TEST(test_standby_from_backup)
{
    struct harness_tool t;
    const char *out = _in(&m, "backup.tch");

    _set_many(m.port, "a", "A", 200);
    _backup(&t, out, _in(&m, "rkey"), 0);
    _set_many(m.port, "b", "B", 50);
    /* The backup is no peer (R3). */
    int fd = kc_connect(m.port);
    ck_assert_int_eq(kc_stat(fd, "kura_repl_peers"), 0);
    close(fd);

    _init_with_key(&r, KEY);
    char mport[16];
    snprintf(mport, sizeof(mport), "%d", m.port);
    r.args[r.nargs++] = "-sid";
    r.args[r.nargs++] = "2";
    r.args[r.nargs++] = "-mhost";
    r.args[r.nargs++] = "127.0.0.1";
    r.args[r.nargs++] = "-mport";
    r.args[r.nargs++] = mport;
    _copy(out, r.db);
    ck_assert_int_eq(mkdir(_in(&r, "kura.ulog"), 0755), 0);
    _copy(_in(&m, "backup.tch.pos"), _in(&r, "kura.ulog/rts"));
    ck_assert_int_eq(kura_launch(&r), 0);
    ck_assert(harness_wait_for(_standby_has_b, NULL, 10000));
    _expect_value(r.port, "a0", "A0");
    _expect_value(r.port, "a199", "A199");

    uint64_t lsn;
    uint64_t seq;
    char follows[128];
    _read_pos(_in(&m, "backup.tch.pos"), &lsn, &seq);
    snprintf(follows, sizeof(follows), "peer 2 follows from lsn %" PRIu64,
             lsn);
    ck_assert(kura_wait_logged(&m, follows, 5000));
    ck_assert(!kura_log_has(&m, "full resynchronisation"));
    ck_assert(!kura_log_has(&r, "receiving a full snapshot"));
    fd = kc_connect(r.port);
    ck_assert_int_eq(kc_stat(fd, "kura_repl_master_resyncs"), 0);
    /* The 50 writes after P, not the 250 of the whole database. */
    ck_assert_int_eq(kc_stat(fd, "kura_repl_master_received"), 50);
    close(fd);
    fd = kc_connect(m.port);
    ck_assert_int_eq(kc_stat(fd, "kura_repl_peer_2_resyncs"), 0);
    close(fd);
}
END_TEST

/* `us` as ISO-8601 in the +09:00 zone, with microseconds. */
static void
_iso_plus9(uint64_t us, char *out, size_t cap)
{
    time_t s = (time_t)(us / 1000000) + 9 * 3600;
    struct tm tm;
    char day[32];
    gmtime_r(&s, &tm);
    strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, cap, "%s.%06u+09:00", day, (unsigned)(us % 1000000));
}

static bool
_past(void *arg)
{
    return _wall_us() > *(uint64_t *)arg;
}

/* kura ulog replay --pos --until: the state at a chosen time. */
START_TEST(test_point_in_time)
{
    struct harness_tool t;
    char until[80];
    const char *out = _in(&m, "backup.tch");
    const char *pos = _in(&m, "backup.tch.pos");

    _set_many(m.port, "a", "A", 20);
    _backup(&t, out, _in(&m, "rkey"), 0);
    uint64_t before_backup;
    uint64_t seq;
    _read_pos(pos, &before_backup, &seq);
    /* After the backup, before T: kept by the restore. */
    _set_many(m.port, "a", "A2-", 5);
    _set_many(m.port, "b", "B", 10);
    uint64_t when = _wall_us();
    uint64_t later = when + 2000;
    ck_assert(harness_wait_for(_past, &later, 2000));
    /* After T: undone by the restore. */
    int fd = kc_connect(m.port);
    _set(fd, "b0", "changed");
    ck_assert(kc_check(fd, "delete a1\r\n", "DELETED\r\n"));
    ck_assert(kc_check(fd, "flush_all\r\n", "OK\r\n"));
    _set(fd, "c0", "after the flush");
    close(fd);
    _expect_value(m.port, "a2", NULL);
    ck_assert_int_eq(kura_stop(&m, 20000), 0);

    const char *ulog = _in(&m, "kura.ulog");
    const char *db = _in(&m, "pitr.tch");
    _copy(out, db);
    /* A time before the backup's position cannot be reached from it. */
    snprintf(until, sizeof(until), "%" PRIu64, before_backup / 1000000 - 1);
    _run(&t, (const char *const[]){"ulog", "replay", ulog, db, "--pos", pos,
                                   "--until", until, NULL},
         1);
    ck_assert_ptr_nonnull(strstr(t.err, "restore an older backup"));
    /* A position file the log does not continue is refused. */
    const char *badpos = _in(&m, "bad.pos");
    char text[256];
    FILE *f = fopen(pos, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    char *sp = strchr(text + 4, ' ');
    ck_assert_ptr_nonnull(sp);
    char fixed[256];
    snprintf(fixed, sizeof(fixed), "%.*s %" PRIu64 "%s", (int)(sp - text),
             text, seq - 3, strchr(sp, '\n'));
    _write_file(badpos, fixed, 0644);
    _run(&t, (const char *const[]){"ulog", "replay", ulog, db, "--pos",
                                   badpos, NULL},
         1);
    ck_assert_ptr_nonnull(strstr(t.err, "does not continue the backup"));

    /* The restore to T. */
    _iso_plus9(when, until, sizeof(until));
    _copy(out, db);
    _run(&t, (const char *const[]){"ulog", "replay", ulog, db, "--pos", pos,
                                   "--until", until, NULL},
         0);
    ck_assert_ptr_nonnull(strstr(t.out, "replayed 15 records"));
    kura_init(&r, NULL);
    _copy(db, r.db);
    if (_exists(_in(&m, "pitr.tch.flush"))) {
        _copy(_in(&m, "pitr.tch.flush"), _in(&r, "kura.tch.flush"));
    }
    ck_assert_int_eq(kura_launch(&r), 0);
    _expect_value(r.port, "a0", "A2-0");
    _expect_value(r.port, "a1", "A2-1");
    _expect_value(r.port, "a4", "A2-4");
    _expect_value(r.port, "a5", "A5");
    _expect_value(r.port, "a19", "A19");
    _expect_value(r.port, "b0", "B0");
    _expect_value(r.port, "b9", "B9");
    _expect_value(r.port, "c0", NULL);

    /* To the end of the log: the flush, the delete and c0 are back. */
    ck_assert_int_eq(kura_stop(&r, 20000), 0);
    _copy(out, db);
    _run(&t, (const char *const[]){"ulog", "replay", ulog, db, "--pos", pos,
                                   NULL},
         0);
    _copy(db, r.db);
    ck_assert(_exists(_in(&m, "pitr.tch.flush")));
    _copy(_in(&m, "pitr.tch.flush"), _in(&r, "kura.tch.flush"));
    ck_assert_int_eq(kura_launch(&r), 0);
    _expect_value(r.port, "a0", NULL);
    _expect_value(r.port, "b9", NULL);
    _expect_value(r.port, "c0", "after the flush");
}
END_TEST

/*
 * R4: items a flush_all hid, which the sweeper has not yet retired, stay
 * out of a backup taken after it; what was written after it is there.
 */
START_TEST(test_backup_after_flush_all)
{
    struct harness_tool t;
    const char *out = _in(&m, "backup.tch");

    _set_many(m.port, "a", "A", 300);
    _flush_all(m.port, "flush_all\r\n");
    _set_many(m.port, "c", "C", 3);
    _backup(&t, out, _in(&m, "rkey"), 0);
    kura_init(&r, NULL);
    _copy(out, r.db);
    ck_assert_int_eq(kura_launch(&r), 0);
    _expect_value(r.port, "a0", NULL);
    _expect_value(r.port, "a299", NULL);
    _expect_value(r.port, "c2", "C2");
    int fd = kc_connect(r.port);
    ck_assert_int_eq(kc_stat(fd, "curr_items"), 3);
    close(fd);
}
END_TEST

struct gone_arg {
    int port;
    const char *key;
};

static bool
_gone(void *arg)
{
    struct gone_arg *g = arg;
    char got[256];
    return !_get(g->port, g->key, got, sizeof(got));
}

/*
 * R7: a delayed flush_all still pending when the backup's walk starts is
 * carried (in OUT.flush): the restored server hides the items once its
 * deadline passes. Before, the backup held the items and no flush.
 */
START_TEST(test_backup_carries_a_pending_flush_all)
{
    struct harness_tool t;
    const char *out = _in(&m, "backup.tch");

    _set_many(m.port, "a", "A", 50);
    _flush_all(m.port, "flush_all 4\r\n");
    uint64_t deadline = harness_now_ms() + 4000;
    _backup(&t, out, _in(&m, "rkey"), 0);
    ck_assert_msg(harness_now_ms() < deadline, "the backup outlasted the "
                  "flush's delay; the test proves nothing");
    char flush_out[600];
    snprintf(flush_out, sizeof(flush_out), "%s.flush", out);
    ck_assert_msg(_exists(flush_out), "no %s", flush_out);
    kura_init(&r, NULL);
    _copy(out, r.db);
    _copy(flush_out, _in(&r, "kura.tch.flush"));
    ck_assert_int_eq(kura_launch(&r), 0);
    struct gone_arg g = {r.port, "a49"};
    ck_assert_msg(harness_wait_for(_gone, &g, 15000),
                  "the delayed flush_all did not reach the backup");
    _expect_value(r.port, "a0", NULL);
}
END_TEST

/* Sets SO_RCVBUF small and connects to `port`: a slow backup reader. */
static int
_slow_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int small = 4096;
    struct sockaddr_in sin;
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small,
                                sizeof(small)), 0);
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port = htons((uint16_t)port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    return fd;
}

struct stat_arg {
    int port;
    const char *name;
    long long at_least;
};

static bool
_stat_reaches(void *arg)
{
    struct stat_arg *a = arg;
    int fd = kc_connect(a->port);
    long long v = fd >= 0 ? kc_stat(fd, a->name) : -1;
    if (fd >= 0) {
        close(fd);
    }
    return v >= a->at_least;
}

static long long
_stat(int port, const char *name)
{
    int fd = kc_connect(port);
    ck_assert_int_ge(fd, 0);
    long long v = kc_stat(fd, name);
    close(fd);
    return v;
}

/*
 * R3: while a backup is connected, the log it still needs is kept. A slow
 * reader holds the master in the middle of the snapshot while writes
 * rotate the log and checkpoints remove old segments; the backup then
 * completes with every record up to its position, seqs dense.
 */
START_TEST(test_slow_backup_holds_the_log)
{
    struct harness_tool t;
    char port[16];
    ck_assert_int_eq(kura_stop(&m, 20000), 0);
    m.args[m.nargs++] = "-ulim";
    m.args[m.nargs++] = "64k";
    m.args[m.nargs++] = "-ckpt";
    m.args[m.nargs++] = "1";
    m.args[m.nargs++] = "-ukeep";
    m.args[m.nargs++] = "100000";
    ck_assert_int_eq(kura_launch(&m), 0);
    snprintf(port, sizeof(port), "%d", m.port);
    /* 8,000 keys of 1,000 bytes: more than the socket buffers hold. */
    _run(&t, (const char *const[]){"bench", "--port", port, "--conns", "8",
                                   "--pipeline", "8", "--ops", "8000",
                                   "--value-size", "1000", "--own-keys",
                                   "1000", "--ack-log", _in(&m, "ack0"),
                                   NULL},
         0);

    struct repl_auth auth;
    char err[256];
    char line[REPL_LINE_MAX];
    ck_assert_int_eq(repl_auth_load(&auth, _in(&m, "rkey"), err,
                                    sizeof(err)), 0);
    int fd = _slow_connect(m.port);
    struct repl_hello h = {REPL_VERSION, REPL_BACKUP_SID, 0, REPL_FLAG_BACKUP,
                           ""};
    struct netio_stream io;
    netio_stream_init(&io, fd, NULL);
    ck_assert_int_eq(repl_receiver_handshake(&io, &h, &auth, 5000, line,
                                             sizeof(line)),
                                             REPL_RECEIVER_HS_OK);
    ck_assert_str_eq(line, "REPL BACKUP 1");

    /* Stalled: more writes, segments rotate, checkpoints run. */
    long long removed = _stat(m.port, "kura_ulog_segments_removed");
    long long ckpts = _stat(m.port, "kura_ulog_checkpoints");
    _run(&t, (const char *const[]){"bench", "--port", port, "--conns", "4",
                                   "--ops", "2000", "--value-size", "1000",
                                   "--prefix", "w:", "--keyspace", "500",
                                   NULL},
         0);
    struct stat_arg two_more = {m.port, "kura_ulog_checkpoints", ckpts + 2};
    ck_assert(harness_wait_for(_stat_reaches, &two_more, 5000));

    /* Read the whole backup and check it, as kura backup does. */
    static uint8_t in[(size_t)8 << 20];
    size_t have = 0;
    bool snap_end = false;
    bool done = false;
    uint64_t records = 0;
    uint64_t last_seq = 0;
    uint64_t last_lsn = 0;
    uint64_t deadline = harness_now_ms() + 30000;
    while (!done && harness_now_ms() < deadline) {
        ssize_t n = recv(fd, in + have, sizeof(in) - have, 0);
        if (n <= 0) {
            break;
        }
        have += (size_t)n;
        size_t off = 0;
        struct repl_frame f;
        while (repl_frame_decode(in + off, have - off, &f) == REPL_OK) {
            if (f.type == REPL_FRAME_SNAP_END) {
                snap_end = true;
            } else if (f.type == REPL_FRAME_RECORD) {
                ck_assert(snap_end);
                ck_assert(records == 0 || f.rec.seq == last_seq + 1);
                last_seq = f.rec.seq;
                last_lsn = f.rec.lsn;
                records++;
            } else if (f.type == REPL_FRAME_HEARTBEAT) {
                ck_assert_uint_eq(f.pos_seq, last_seq);
                ck_assert_uint_eq(f.pos_lsn, last_lsn);
                done = true;
            }
            off += f.len;
        }
        memmove(in, in + off, have - off);
        have -= off;
    }
    close(fd);
    ck_assert_msg(done, "the backup did not complete");
    /* The stalled writes reached it through the log it held. */
    ck_assert_uint_ge(records, 2000);
    ck_assert(kura_log_has(&m, "sent a backup to"));
    /* Once it has gone, the segments it held are removed: the hold, not
     * the settings, is what kept them. */
    struct stat_arg purged = {m.port, "kura_ulog_segments_removed",
                              removed + 2};
    ck_assert(harness_wait_for(_stat_reaches, &purged, 5000));
}
END_TEST

/* A backup needs the server's key; the server checks the proof. */
START_TEST(test_backup_wrong_key_refused)
{
    struct harness_tool t;
    const char *out = _in(&m, "backup.tch");
    const char *other = _in(&m, "other-key");

    _set_many(m.port, "a", "A", 10);
    _write_file(other, OTHER_KEY, 0600);
    _backup(&t, out, other, 1);
    ck_assert_ptr_nonnull(strstr(t.err, "failed authentication"));
    _backup(&t, out, NULL, 1);
    ck_assert_ptr_nonnull(strstr(t.err, "requires the replication key"));
    ck_assert(!_exists(out));
    ck_assert(!_exists(_in(&m, "backup.tch.pos")));
    ck_assert(!_exists(_in(&m, "backup.tch.part")));

    /* A client that sends a wrong proof gets nothing. */
    int fd = kc_connect(m.port);
    char line[512];
    ck_assert_int_eq(kc_sends(fd, "REPL 1 4294967295 0 2 "
                                  "00112233445566778899aabbccddeeff\r\n"),
                     0);
    ck_assert_int_gt(kc_read_until(fd, line, sizeof(line), "\r\n", 5000), 0);
    ck_assert_msg(strncmp(line, "REPL CHALLENGE ", 15) == 0, "%s", line);
    ck_assert_int_eq(kc_sends(fd, "REPL AUTH 000000000000000000000000000000"
                                  "0000000000000000000000000000000000\r\n"),
                     0);
    ck_assert_int_gt(kc_read_until(fd, line, sizeof(line), "\r\n", 5000), 0);
    ck_assert_str_eq(line, "REPL ERROR authentication failed\r\n");
    ck_assert(kc_wait_closed(fd, 5000));
    close(fd);
    ck_assert(kura_wait_logged(&m, "failed authentication", 5000));
    ck_assert(!kura_log_has(&m, "sent a backup"));

    /* Never over a database a kurad has open: here the server's own. */
    _backup(&t, m.db, _in(&m, "rkey"), 1);
    ck_assert_ptr_nonnull(strstr(t.err, " is using it"));

    /* The right key works, and a second backup replaces the first. */
    _backup(&t, out, _in(&m, "rkey"), 0);
    _set_many(m.port, "b", "B", 10);
    _backup(&t, out, _in(&m, "rkey"), 0);
    ck_assert_ptr_nonnull(strstr(t.out, ": 20 items"));
}
END_TEST

static Suite *
backup_suite(void)
{
    Suite *s = suite_create("it_backup");
    TCase *tc = tcase_create("backup");
    tcase_add_checked_fixture(tc, _setup, _teardown);
    tcase_add_test(tc, test_backup_under_load);
    tcase_add_test(tc, test_standby_from_backup);
    tcase_add_test(tc, test_point_in_time);
    tcase_add_test(tc, test_backup_after_flush_all);
    tcase_add_test(tc, test_backup_carries_a_pending_flush_all);
    tcase_add_test(tc, test_slow_backup_holds_the_log);
    tcase_add_test(tc, test_backup_wrong_key_refused);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(backup_suite)
