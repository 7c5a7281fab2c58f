/*
 * Integration tests: the update log and master/master replication, with
 * real daemons on loopback. Every wait polls against a deadline.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../unit/unit_main.h"
#include "harness.h"

static struct kura_proc a;
static struct kura_proc b;
static char a_port[16];
static char b_port[16];

/* Adds "-sid N -mhost 127.0.0.1 -mport PORT" to `k`. */
static void
_follow(struct kura_proc *k, const char *sid, const char *port)
{
    k->args[k->nargs++] = "-sid";
    k->args[k->nargs++] = sid;
    k->args[k->nargs++] = "-mhost";
    k->args[k->nargs++] = "127.0.0.1";
    k->args[k->nargs++] = "-mport";
    k->args[k->nargs++] = port;
}

static void
_start_pair(void)
{
    kura_init(&a, NULL);
    kura_init(&b, NULL);
    snprintf(a_port, sizeof(a_port), "%d", a.port);
    snprintf(b_port, sizeof(b_port), "%d", b.port);
    _follow(&a, "1", b_port);
    _follow(&b, "2", a_port);
    ck_assert_int_eq(kura_launch(&a), 0);
    ck_assert_int_eq(kura_launch(&b), 0);
}

static void
_cleanup_pair(void)
{
    kura_cleanup(&a);
    kura_cleanup(&b);
}

/* One request on a fresh connection; returns the reply (static). */
static const char *
_ask(int port, const char *req, const char *terminator)
{
    static char reply[1 << 16];
    int fd = kc_connect(port);
    reply[0] = '\0';
    if (fd < 0) {
        return reply;
    }
    if (kc_sends(fd, req) != 0 ||
        kc_read_until(fd, reply, sizeof(reply), terminator, 5000) < 0) {
        reply[0] = '\0';
    }
    close(fd);
    return reply;
}

struct expect {
    int port;
    const char *req;
    const char *want;
};

static bool
_replies(void *arg)
{
    struct expect *e = arg;
    return strcmp(_ask(e->port, e->req, "END\r\n"), e->want) == 0;
}

static bool
_eventually(int port, const char *req, const char *want, int timeout_ms)
{
    struct expect e = {port, req, want};
    return harness_wait_for(_replies, &e, timeout_ms);
}

static long long
_stat(int port, const char *name)
{
    int fd = kc_connect(port);
    long long v = fd >= 0 ? kc_stat(fd, name) : -1;
    if (fd >= 0) {
        close(fd);
    }
    return v;
}

static bool
_peer_acked(void *arg)
{
    (void)arg;
    return _stat(b.port, "kura_repl_peer_1_acked_lsn") > 0;
}

START_TEST(test_write_reaches_peer_within_a_second)
{
    ck_assert(strcmp(_ask(a.port, "set ab 7 0 2\r\nAB\r\n", "\r\n"),
                     "STORED\r\n") == 0);
    uint64_t t0 = harness_now_ms();
    ck_assert(_eventually(b.port, "get ab\r\n", "VALUE ab 7 2\r\nAB\r\nEND\r\n",
                          1000));
    uint64_t ab_ms = harness_now_ms() - t0;
    ck_assert(strcmp(_ask(b.port, "set ba 8 0 2\r\nBA\r\n", "\r\n"),
                     "STORED\r\n") == 0);
    t0 = harness_now_ms();
    ck_assert(_eventually(a.port, "get ba\r\n", "VALUE ba 8 2\r\nBA\r\nEND\r\n",
                          1000));
    fprintf(stderr, "replication A->B %llu ms, B->A %llu ms\n",
            (unsigned long long)ab_ms,
            (unsigned long long)(harness_now_ms() - t0));
    /* Deletes and flags travel too; nothing echoes back. */
    ck_assert(strcmp(_ask(b.port, "delete ab\r\n", "\r\n"), "DELETED\r\n") == 0);
    ck_assert(_eventually(a.port, "get ab\r\n", "END\r\n", 1000));
    /* The replicated delete leaves one item on each, ba. */
    ck_assert_int_eq(_stat(a.port, "curr_items"), 1);
    ck_assert_int_eq(_stat(b.port, "curr_items"), 1);
    ck_assert_int_eq(_stat(a.port, "kura_repl_master_connected"), 1);
    ck_assert_int_eq(_stat(b.port, "kura_repl_peer_1_connected"), 1);
    ck_assert(harness_wait_for(_peer_acked, NULL, 2000));
}
END_TEST

/* Writers: each writes its own keys, falling back to the other server. */
#define WRITERS 4

struct writer {
    int id;
    int ports[2];
    _Atomic long acked;
    _Atomic bool stop;
    _Atomic long failovers;
};

static void *
_writer(void *arg)
{
    struct writer *w = arg;
    char req[128];
    char reply[64];
    int which = 0;
    int fd = kc_connect(w->ports[which]);
    long i = 0;

    while (!atomic_load(&w->stop) && i < 1000000) {
        snprintf(req, sizeof(req), "set f%d:%ld 0 0 6\r\n%06ld\r\n", w->id, i,
                 i % 1000000);
        if (fd >= 0 && kc_sends(fd, req) == 0 &&
            kc_read_until(fd, reply, sizeof(reply), "\r\n", 2000) > 0 &&
            strcmp(reply, "STORED\r\n") == 0) {
            atomic_store(&w->acked, i + 1);
            i++;
            continue;
        }
        /* No answer: the client falls back to the other master. */
        if (fd >= 0) {
            close(fd);
        }
        which = 1 - which;
        atomic_fetch_add(&w->failovers, 1);
        fd = kc_connect(w->ports[which]);
        if (fd < 0) {
            usleep(10000);
        }
    }
    if (fd >= 0) {
        close(fd);
    }
    return NULL;
}

static long
_total(struct writer *w)
{
    long t = 0;
    for (int i = 0; i < WRITERS; i++) {
        t += atomic_load(&w[i].acked);
    }
    return t;
}

struct caught_up {
    int port;
};

/* Connected, heard a heartbeat, and applied up to the master's log end. */
static bool
_lag_zero(void *arg)
{
    struct caught_up *c = arg;
    long long log_lsn = _stat(c->port, "kura_repl_master_log_lsn");
    return _stat(c->port, "kura_repl_master_connected") == 1 && log_lsn > 0 &&
           _stat(c->port, "kura_repl_master_applied_lsn") >= log_lsn &&
           _stat(c->port, "kura_repl_master_lag_records") == 0;
}

START_TEST(test_kill9_failover_and_catch_up)
{
    static struct writer w[WRITERS];
    pthread_t th[WRITERS];

    for (int i = 0; i < WRITERS; i++) {
        w[i].id = i;
        w[i].ports[0] = a.port;
        w[i].ports[1] = b.port;
        pthread_create(&th[i], NULL, _writer, &w[i]);
    }
    uint64_t deadline = harness_now_ms() + 20000;
    while (_total(w) < 2000 && harness_now_ms() < deadline) {
        usleep(2000);
    }
    kura_kill9(&a); /* in the middle of the load */
    long at_kill = _total(w);
    while (_total(w) < at_kill + 2000 && harness_now_ms() < deadline) {
        usleep(2000);
    }
    ck_assert_int_ge(_total(w), at_kill + 2000); /* B kept taking writes */
    ck_assert_int_eq(kura_launch(&a), 0);        /* A comes back */
    usleep(100000);
    for (int i = 0; i < WRITERS; i++) {
        atomic_store(&w[i].stop, true);
        pthread_join(th[i], NULL);
    }
    struct caught_up ca = {a.port};
    struct caught_up cb = {b.port};
    ck_assert(harness_wait_for(_lag_zero, &ca, 20000));
    ck_assert(harness_wait_for(_lag_zero, &cb, 20000));
    /* Every acknowledged write is on both servers. */
    int fa = kc_connect(a.port);
    int fb = kc_connect(b.port);
    char req[64];
    char want[96];
    long checked = 0;
    for (int i = 0; i < WRITERS; i++) {
        long n = atomic_load(&w[i].acked);
        for (long j = 0; j < n; j++) {
            snprintf(req, sizeof(req), "get f%d:%ld\r\n", i, j);
            snprintf(want, sizeof(want), "VALUE f%d:%ld 0 6\r\n%06ld\r\nEND\r\n",
                     i, j, j);
            ck_assert_msg(kc_check(fa, req, want), "A lost %s", req);
            ck_assert_msg(kc_check(fb, req, want), "B lost %s", req);
            checked++;
        }
    }
    close(fa);
    close(fb);
    fprintf(stderr, "kill -9 failover: %ld acknowledged writes on both\n",
            checked);
}
END_TEST

static bool
_b_backed_off(void *arg)
{
    (void)arg;
    return _stat(b.port, "kura_repl_master_connect_failures") >= 5;
}

/*
 * A pair member restarted after kill -9 is followed again at once. The
 * other side's retries had backed off to 1.6 s after five failures
 * (100 ms doubling); before it reconnected at once, writes taken by the
 * restarted server reached it only after that pause, so a client that
 * read from it meanwhile read an older value than it had stored.
 */
START_TEST(test_restarted_peer_is_followed_at_once)
{
    kura_kill9(&a);
    ck_assert(harness_wait_for(_b_backed_off, NULL, 20000));
    ck_assert_int_eq(kura_launch(&a), 0);
    ck_assert(strcmp(_ask(a.port, "set back 3 0 4\r\nsoon\r\n", "\r\n"),
                     "STORED\r\n") == 0);
    uint64_t t0 = harness_now_ms();
    ck_assert_msg(_eventually(b.port, "get back\r\n",
                              "VALUE back 3 4\r\nsoon\r\nEND\r\n", 800),
                  "the restarted server's write took over 800 ms to reach "
                  "its peer");
    fprintf(stderr, "after a restart, A->B in %llu ms\n",
            (unsigned long long)(harness_now_ms() - t0));
}
END_TEST

#define CATCHUP_KEYS 5000

/*
 * A pair member restarted after kill -9 answers clients only once it
 * holds what its peer took while it was down. Before, it opened its port
 * first and replication started after, so the first reads, right after
 * the restart, missed writes the peer had acknowledged.
 */
START_TEST(test_restarted_member_serves_only_once_caught_up)
{
    char value[201];
    memset(value, 'v', 200);
    value[200] = '\0';
    kura_kill9(&a);
    int fd = kc_connect(b.port);
    ck_assert_int_ge(fd, 0);
    char req[512];
    for (int i = 0; i < CATCHUP_KEYS; i += 100) {
        for (int j = i; j < i + 100; j++) {
            snprintf(req, sizeof(req), "set down:%d 0 0 200 noreply\r\n%s\r\n",
                     j, value);
            ck_assert_int_eq(kc_sends(fd, req), 0);
        }
        ck_assert(kc_check(fd, "mn\r\n", "MN\r\n"));
    }
    close(fd);
    ck_assert_int_eq(kura_launch(&a), 0);
    /* The first request after the port opens: the last write and then
     * every one of them. */
    fd = kc_connect(a.port);
    ck_assert_int_ge(fd, 0);
    char want[512];
    long missing = 0;
    for (int j = CATCHUP_KEYS - 1; j >= 0; j--) {
        snprintf(req, sizeof(req), "mg down:%d v\r\n", j);
        snprintf(want, sizeof(want), "VA 200\r\n%s\r\n", value);
        char reply[512];
        ck_assert_int_eq(kc_sends(fd, req), 0);
        ck_assert_int_gt(kc_read_until(fd, reply, sizeof(reply), "\r\n",
                                       5000), 0);
        if (strncmp(reply, "VA ", 3) == 0) {
            ck_assert_int_gt(kc_read_until(fd, reply, sizeof(reply), "\r\n",
                                           5000), 0);
        } else {
            missing++;
        }
    }
    close(fd);
    ck_assert_msg(missing == 0, "the restarted server answered before it "
                  "caught up: %ld of %d writes missing", missing,
                  CATCHUP_KEYS);
    ck_assert(kura_log_has(&a, "caught up with master"));
}
END_TEST

/* A master that accepts but never answers holds clients -catchup seconds,
 * no longer. */
/* A socket listening on a free loopback port that never accepts; its
 * port number goes to `port`. */
static int
_silent_listener(char *port, size_t cap)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(sa);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(listen(fd, 8), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    snprintf(port, cap, "%d", ntohs(sa.sin_port));
    return fd;
}

START_TEST(test_catchup_wait_is_bounded)
{
    char port[16];
    int silent = _silent_listener(port, sizeof(port));
    struct kura_proc k;
    kura_init(&k, (const char *const[]){"-catchup", "1", NULL});
    _follow(&k, "3", port);
    uint64_t t0 = harness_now_ms();
    ck_assert_int_eq(kura_launch(&k), 0);
    uint64_t took = harness_now_ms() - t0;
    ck_assert(kura_log_has(&k, "still catching up with master"));
    ck_assert_msg(took >= 1000, "served after %llu ms, before -catchup 1",
                  (unsigned long long)took);
    kura_cleanup(&k);
    close(silent);
}
END_TEST

/*
 * The port is taken before the catch-up: a port in use fails the start at
 * once, not after the wait for the master (here a silent one, whose
 * handshake alone would hold the start for 5 s).
 */
START_TEST(test_port_in_use_fails_before_catchup)
{
    char master_port[16];
    char taken_port[16];
    int silent = _silent_listener(master_port, sizeof(master_port));
    int taken = _silent_listener(taken_port, sizeof(taken_port));
    char dir[] = "/tmp/kura-taken-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char db[64];
    snprintf(db, sizeof(db), "%s/kura.tch", dir);
    char err[4096];
    const char *argv[] = {"kurad", "-port", taken_port, "-sid", "3",
                          "-mhost", "127.0.0.1", "-mport", master_port,
                          db, NULL};
    int rc = harness_run(dir, argv, err, sizeof(err), 4000);
    ck_assert_msg(rc > 0, "kurad did not fail within 4 s (status %d)", rc);
    ck_assert_msg(strstr(err, "cannot listen") != NULL, "stderr: %s", err);
    close(taken);
    close(silent);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* Two clients hammer the same keys, one on each master. */
struct hammer {
    int port;
    unsigned seed;
    _Atomic bool stop;
};

static void *
_hammer(void *arg)
{
    struct hammer *h = arg;
    int fd = kc_connect(h->port);
    char req[128];
    char reply[256];
    while (!atomic_load(&h->stop)) {
        int k = rand_r(&h->seed) % 100;
        int op = rand_r(&h->seed) % 10;
        if (op < 6) {
            snprintf(req, sizeof(req), "set c%d %d 0 8\r\n%08d\r\n", k,
                     h->port % 7, rand_r(&h->seed) % 100000000);
        } else if (op < 8) {
            snprintf(req, sizeof(req), "delete c%d\r\n", k);
        } else if (op < 9) {
            snprintf(req, sizeof(req), "append c%d 0 0 1\r\n+\r\n", k);
        } else {
            snprintf(req, sizeof(req), "touch c%d 1000\r\n", k);
        }
        if (kc_sends(fd, req) != 0 ||
            kc_read_until(fd, reply, sizeof(reply), "\r\n", 5000) < 0) {
            break;
        }
    }
    close(fd);
    return NULL;
}

START_TEST(test_concurrent_writes_converge)
{
    struct hammer ha = {a.port, 1, false};
    struct hammer hb = {b.port, 2, false};
    pthread_t ta;
    pthread_t tb;

    pthread_create(&ta, NULL, _hammer, &ha);
    pthread_create(&tb, NULL, _hammer, &hb);
    usleep(3000000);
    atomic_store(&ha.stop, true);
    atomic_store(&hb.stop, true);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    struct caught_up ca = {a.port};
    struct caught_up cb = {b.port};
    ck_assert(harness_wait_for(_lag_zero, &ca, 20000));
    ck_assert(harness_wait_for(_lag_zero, &cb, 20000));
    /* Once quiet, both hold identical values, flags and cas. */
    char req[1024];
    size_t n = (size_t)snprintf(req, sizeof(req), "gets");
    for (int k = 0; k < 100; k++) {
        n += (size_t)snprintf(req + n, sizeof(req) - n, " c%d", k);
    }
    snprintf(req + n, sizeof(req) - n, "\r\n");
    char ra[1 << 16];
    snprintf(ra, sizeof(ra), "%s", _ask(a.port, req, "END\r\n"));
    const char *rb = _ask(b.port, req, "END\r\n");
    ck_assert_msg(strlen(ra) > 5, "no values survived on A");
    ck_assert_msg(strcmp(ra, rb) == 0, "A:\n%s\nB:\n%s", ra, rb);
}
END_TEST

START_TEST(test_expired_item_stays_gone_on_both)
{
    ck_assert(strcmp(_ask(a.port, "set ex 0 2 3\r\nold\r\n", "\r\n"),
                     "STORED\r\n") == 0);
    ck_assert(_eventually(b.port, "get ex\r\n", "VALUE ex 0 3\r\nold\r\nEND\r\n",
                          1000));
    ck_assert(_eventually(a.port, "get ex\r\n", "END\r\n", 5000));
    ck_assert(_eventually(b.port, "get ex\r\n", "END\r\n", 5000));
    /* Restarts, redo and reconnection do not bring it back. */
    kura_kill9(&b);
    ck_assert_int_eq(kura_launch(&b), 0);
    ck_assert_int_eq(kura_stop(&a, 30000), 0);
    ck_assert_int_eq(kura_launch(&a), 0);
    struct caught_up ca = {a.port};
    ck_assert(harness_wait_for(_lag_zero, &ca, 20000));
    ck_assert(strcmp(_ask(a.port, "get ex\r\n", "END\r\n"), "END\r\n") == 0);
    ck_assert(strcmp(_ask(b.port, "get ex\r\n", "END\r\n"), "END\r\n") == 0);
}
END_TEST

START_TEST(test_flush_all_applies_to_the_pair)
{
    ck_assert(strcmp(_ask(b.port, "set fl 0 0 1\r\nx\r\n", "\r\n"),
                     "STORED\r\n") == 0);
    ck_assert(_eventually(a.port, "get fl\r\n", "VALUE fl 0 1\r\nx\r\nEND\r\n",
                          1000));
    ck_assert(strcmp(_ask(a.port, "flush_all\r\n", "\r\n"), "OK\r\n") == 0);
    ck_assert(_eventually(b.port, "get fl\r\n", "END\r\n", 1000));
    /* Writes after the flush survive on both. */
    ck_assert(strcmp(_ask(b.port, "set f2 0 0 1\r\ny\r\n", "\r\n"),
                     "STORED\r\n") == 0);
    ck_assert(_eventually(a.port, "get f2\r\n", "VALUE f2 0 1\r\ny\r\nEND\r\n",
                          1000));
}
END_TEST

START_TEST(test_rts_file_replaced_atomically)
{
    char path[700];
    char text[128];
    ck_assert(strcmp(_ask(a.port, "set r 0 0 1\r\nx\r\n", "\r\n"),
                     "STORED\r\n") == 0);
    ck_assert(_eventually(b.port, "get r\r\n", "VALUE r 0 1\r\nx\r\nEND\r\n",
                          1000));
    snprintf(path, sizeof(path), "%s/kura.ulog/rts", b.dir);
    uint64_t deadline = harness_now_ms() + 5000;
    unsigned long long lsn = 0;
    unsigned long long seq = 0;
    while (harness_now_ms() < deadline) {
        FILE *f = fopen(path, "r");
        if (f != NULL) {
            if (fgets(text, sizeof(text), f) != NULL) {
                sscanf(text, "rts %llu %llu", &lsn, &seq);
            }
            fclose(f);
        }
        if (lsn > 0) {
            break;
        }
        usleep(20000);
    }
    ck_assert_uint_gt(lsn, 0);
    snprintf(path, sizeof(path), "%s/kura.ulog/rts.tmp", b.dir);
    ck_assert(access(path, F_OK) != 0);
}
END_TEST

/* --------------------------------------------------- single server */

static struct kura_proc s1;

static void
_start_single(void)
{
    kura_start(&s1, NULL);
}

static void
_cleanup_single(void)
{
    kura_cleanup(&s1);
}

START_TEST(test_truncated_final_record_every_offset)
{
    char cmd[1200];
    char seg[700];
    char pristine[700];
    int fd = kc_connect(s1.port);
    for (int i = 0; i < 20; i++) {
        char req[64];
        snprintf(req, sizeof(req), "set t%d 0 0 2\r\n%02d\r\n", i, i);
        ck_assert(kc_check(fd, req, "STORED\r\n"));
    }
    ck_assert(kc_check(fd, "set last 0 0 1\r\nz\r\n", "STORED\r\n"));
    close(fd);
    kura_kill9(&s1);
    snprintf(seg, sizeof(seg), "%s/kura.ulog/00000001.ulog", s1.dir);
    snprintf(pristine, sizeof(pristine), "%s/pristine.ulog", s1.dir);
    snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", seg, pristine);
    ck_assert_int_eq(system(cmd), 0);
    /* Walk the records' length fields to find where the final one starts;
     * zeros prepared after the last record end the walk. */
    FILE *f = fopen(seg, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fseeko(f, 0, SEEK_END), 0);
    off_t size = ftello(f);
    off_t pos = 64; /* segment header */
    off_t start = pos;
    off_t full = pos;
    for (;;) {
        unsigned char len4[4];
        if (fseeko(f, pos, SEEK_SET) != 0 || fread(len4, 1, 4, f) != 4) {
            break;
        }
        off_t len = (off_t)(len4[0] | len4[1] << 8 | len4[2] << 16 |
                            (uint32_t)len4[3] << 24);
        if (len < 32 || pos + len > size) {
            break;
        }
        start = pos;
        full = pos + len;
        pos = full;
    }
    fclose(f);
    off_t last_len = full - start;
    ck_assert_int_gt(last_len, 32);
    int starts = 0;
    for (off_t cut = full - last_len; cut < full; cut++) {
        snprintf(cmd, sizeof(cmd),
                 "cp '%s' '%s' && truncate -s %lld '%s' && rm -f '%s'/kura.tch "
                 "'%s'/kura.ulog/checkpoint",
                 pristine, seg, (long long)cut, seg, s1.dir, s1.dir);
        ck_assert_int_eq(system(cmd), 0);
        /* Start succeeds and redo rebuilds every complete record. */
        ck_assert_int_eq(kura_launch(&s1), 0);
        starts++;
        fd = kc_connect(s1.port);
        ck_assert(kc_check(fd, "get t0 t19 last\r\n",
                           "VALUE t0 0 2\r\n00\r\nVALUE t19 0 2\r\n19\r\nEND\r\n"));
        ck_assert(kc_check(fd, "set again 0 0 1\r\na\r\n", "STORED\r\n"));
        close(fd);
        kura_kill9(&s1);
    }
    ck_assert_int_eq(starts, last_len);
    /* And the untouched log still holds the final record. */
    snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && rm -f '%s'/kura.tch",
             pristine, seg, s1.dir);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(kura_launch(&s1), 0);
    fd = kc_connect(s1.port);
    ck_assert(kc_check(fd, "get last\r\n", "VALUE last 0 1\r\nz\r\nEND\r\n"));
    close(fd);
}
END_TEST

/* ----------------------------------------- retention and resync */

static void
_start_small_log_pair(void)
{
    static const char *master_args[] = {"-ulim", "64k", "-ukeep", "1", "-sid",
                                        "1", NULL};
    kura_start(&a, master_args);
    kura_init(&b, NULL);
    snprintf(a_port, sizeof(a_port), "%d", a.port);
    b.args[b.nargs++] = "-sid";
    b.args[b.nargs++] = "2";
    b.args[b.nargs++] = "-mhost";
    b.args[b.nargs++] = "127.0.0.1";
    b.args[b.nargs++] = "-mport";
    b.args[b.nargs++] = a_port;
    ck_assert_int_eq(kura_launch(&b), 0);
}

static bool
_segments_removed(void *arg)
{
    (void)arg;
    return _stat(a.port, "kura_ulog_segments_removed") > 0 &&
           _stat(a.port, "kura_ulog_segments") <= 2;
}

/* Writes far more log on `fd` than -ulim 64k x -ukeep 1 keeps. */
static void
_outrun_the_log(int fd)
{
    char req[128];
    for (int i = 0; i < 3000; i++) {
        snprintf(req, sizeof(req), "set big%d 0 0 64 noreply\r\n%064d\r\n", i,
                 i);
        kc_sends(fd, req);
    }
}

/* Once A's log no longer holds B's position: B back, by a snapshot. */
static void
_restart_b_by_full_resync(void)
{
    ck_assert(harness_wait_for(_segments_removed, NULL, 20000));
    ck_assert_int_eq(kura_launch(&b), 0);
    struct caught_up cb = {b.port};
    ck_assert(harness_wait_for(_lag_zero, &cb, 20000));
    ck_assert_int_ge(_stat(b.port, "kura_repl_master_resyncs"), 1);
}

/* Sets `key` to `value` on A, waits until B has it, and stops B. */
static void
_stored_on_both_then_b_stopped(const char *key, const char *value)
{
    char req[128];
    char want[128];
    snprintf(req, sizeof(req), "set %s 0 0 %zu\r\n%s\r\n", key,
             strlen(value), value);
    ck_assert_str_eq(_ask(a.port, req, "\r\n"), "STORED\r\n");
    snprintf(req, sizeof(req), "get %s\r\n", key);
    snprintf(want, sizeof(want), "VALUE %s 0 %zu\r\n%s\r\nEND\r\n", key,
             strlen(value), value);
    ck_assert(_eventually(b.port, req, want, 2000));
    ck_assert_int_eq(kura_stop(&b, 30000), 0);
}

START_TEST(test_standby_beyond_retention_gets_full_resync)
{
    _stored_on_both_then_b_stopped("early", "early");
    int fd = kc_connect(a.port);
    _outrun_the_log(fd);
    ck_assert(kc_check(fd, "delete early\r\n", "DELETED\r\n"));
    close(fd);
    /* The standby's position is gone: it must get a snapshot, no gap. */
    _restart_b_by_full_resync();
    ck_assert(strcmp(_ask(b.port, "get big0 big2999\r\n", "END\r\n"),
                     "VALUE big0 0 64\r\n"
                     "0000000000000000000000000000000000000000000000000000000000000000"
                     "\r\nVALUE big2999 0 64\r\n"
                     "0000000000000000000000000000000000000000000000000000000000002999"
                     "\r\nEND\r\n") == 0);
    /* The delete made while it was away reached it too. */
    ck_assert(strcmp(_ask(b.port, "get early\r\n", "END\r\n"), "END\r\n") == 0);
    /* And it follows live again afterwards. */
    ck_assert(strcmp(_ask(a.port, "set later 0 0 1\r\nL\r\n", "\r\n"),
                     "STORED\r\n") == 0);
    ck_assert(_eventually(b.port, "get later\r\n",
                          "VALUE later 0 1\r\nL\r\nEND\r\n", 2000));
}
END_TEST

/*
 * A standby that needs a full resync gets the master's flush_all state
 * with the snapshot: what a flush_all made while it was away hid stays
 * hidden there, its own copies included. Before, the snapshot carried
 * the hidden items (flush_all is applied lazily) but not the flush.
 */
START_TEST(test_full_resync_carries_flush_all)
{
    _stored_on_both_then_b_stopped("before", "old");
    int fd = kc_connect(a.port);
    ck_assert(kc_check(fd, "set hidden 0 0 3\r\nold\r\n", "STORED\r\n"));
    ck_assert(kc_check(fd, "flush_all\r\n", "OK\r\n"));
    ck_assert(kc_check(fd, "set after 0 0 3\r\nnew\r\n", "STORED\r\n"));
    _outrun_the_log(fd);
    ck_assert(kc_check(fd, "mn\r\n", "MN\r\n"));
    close(fd);
    _restart_b_by_full_resync();
    ck_assert_str_eq(_ask(b.port, "get before hidden after\r\n", "END\r\n"),
                     "VALUE after 0 3\r\nnew\r\nEND\r\n");
    /* Stopped and started again, it still holds the flush. */
    ck_assert_int_eq(kura_stop(&b, 30000), 0);
    ck_assert_int_eq(kura_launch(&b), 0);
    ck_assert_str_eq(_ask(b.port, "get before hidden after\r\n", "END\r\n"),
                     "VALUE after 0 3\r\nnew\r\nEND\r\n");
}
END_TEST

/*
 * Works every subsystem of a busy pair, then stops both cleanly: each
 * must exit 0. In the sanitizer build LeakSanitizer makes any leak at a
 * clean shutdown a failure here.
 */
START_TEST(test_clean_stop_of_a_busy_pair)
{
    int fd = kc_connect(a.port);
    ck_assert(kc_check(fd, "set x 1 0 1\r\na\r\nappend x 0 0 1\r\nb\r\n"
                           "set n 0 0 1\r\n5\r\nincr n 10\r\n"
                           "touch x 100\r\nset gone 0 0 1\r\ng\r\n"
                           "delete gone\r\n",
                       "STORED\r\nSTORED\r\nSTORED\r\n15\r\nTOUCHED\r\n"
                       "STORED\r\nDELETED\r\n"));
    ck_assert(kc_drain(fd, "gat 100 x n\r\n", "END\r\n"));
    ck_assert(kc_drain(fd, "stats\r\n", "END\r\n"));
    ck_assert(kc_drain(fd, "stats settings\r\n", "END\r\n"));
    ck_assert(kc_check(fd, "flush_all 3600\r\n", "OK\r\n"));
    close(fd);
    ck_assert(_eventually(b.port, "get x n\r\n",
                          "VALUE x 1 2\r\nab\r\nVALUE n 0 2\r\n15\r\nEND\r\n",
                          5000));
    ck_assert(harness_wait_for(_peer_acked, NULL, 5000));
    ck_assert_int_eq(kura_stop(&a, 30000), 0);
    ck_assert_int_eq(kura_stop(&b, 30000), 0);
}
END_TEST

static Suite *
replication_suite(void)
{
    Suite *s = suite_create("it_replication");
    TCase *tc = tcase_create("pair");
    tcase_add_checked_fixture(tc, _start_pair, _cleanup_pair);
    tcase_add_test(tc, test_write_reaches_peer_within_a_second);
    tcase_add_test(tc, test_kill9_failover_and_catch_up);
    tcase_add_test(tc, test_restarted_peer_is_followed_at_once);
    tcase_add_test(tc, test_restarted_member_serves_only_once_caught_up);
    tcase_add_test(tc, test_concurrent_writes_converge);
    tcase_add_test(tc, test_expired_item_stays_gone_on_both);
    tcase_add_test(tc, test_flush_all_applies_to_the_pair);
    tcase_add_test(tc, test_rts_file_replaced_atomically);
    tcase_add_test(tc, test_clean_stop_of_a_busy_pair);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    tc = tcase_create("catchup");
    tcase_add_test(tc, test_catchup_wait_is_bounded);
    tcase_add_test(tc, test_port_in_use_fails_before_catchup);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    tc = tcase_create("recovery");
    tcase_add_checked_fixture(tc, _start_single, _cleanup_single);
    tcase_add_test(tc, test_truncated_final_record_every_offset);
    tcase_set_timeout(tc, 180);
    suite_add_tcase(s, tc);
    tc = tcase_create("retention");
    tcase_add_checked_fixture(tc, _start_small_log_pair, _cleanup_pair);
    tcase_add_test(tc, test_standby_beyond_retention_gets_full_resync);
    tcase_add_test(tc, test_full_resync_carries_flush_all);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(replication_suite)
