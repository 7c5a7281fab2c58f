/*
 * Integration tests: a master/master pair replicating over TLS (-mtls),
 * both servers requiring client certificates (-tlsca) and the shared key
 * (-rkey): kill -9 of one under a TLS load, catch-up, every acknowledged
 * write verified on both over TLS, a backup over TLS restored and
 * verified, a new standby's full resynchronisation over TLS; and standbys
 * presenting a certificate from another CA, or trusting another CA,
 * refused with their log lines. The certificates are made for each test
 * by tests/tls/make-certs. Every wait polls against a deadline.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../unit/unit_main.h"
#include "harness.h"

static char certs[256];

static const char *
_at(const char *name)
{
    static char paths[16][512];
    static int next;
    char *p = paths[next++ % 16];
    snprintf(p, 512, "%s/%s", certs, name);
    return p;
}

static void
_make_certs(void)
{
    signal(SIGPIPE, SIG_IGN);
    snprintf(certs, sizeof(certs), "/tmp/kura-tls-pair-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(certs));
    ck_assert_int_eq(harness_make_certs(certs), 0);
}

static void
_remove_certs(void)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", certs);
    ck_assert_int_eq(system(cmd), 0);
}

static struct kura_proc pa;
static struct kura_proc pb;
static char pa_tls[16];
static char pb_tls[16];

static void
_write_rkey(void)
{
    const char *path = _at("rkey");
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("kura-test-replication-key-0123456789\n", f);
    fclose(f);
    chmod(path, 0600);
}

/* -sid, -mhost/-mport to `port` over -mtls, the key. */
static void
_follow(struct kura_proc *p, const char *sid, const char *port)
{
    static char rkey[512];
    snprintf(rkey, sizeof(rkey), "%s", _at("rkey"));
    const char *more[] = {"-sid", sid, "-mhost", "127.0.0.1", "-mport", port,
                          "-mtls", "-rkey", rkey, NULL};
    for (int i = 0; more[i] != NULL; i++) {
        p->args[p->nargs++] = more[i];
    }
}

static void
_start_pair(void)
{
    _make_certs();
    _write_rkey();
    /* Small segments, frequent checkpoints: old log goes, and a new
     * standby needs a full resynchronisation. */
    kura_init(&pa, (const char *const[]){"-ulim", "65536", "-ckpt", "1",
                                         NULL});
    kura_init(&pb, NULL);
    kura_add_tls(&pa, certs, true);
    kura_add_tls(&pb, certs, true);
    snprintf(pa_tls, sizeof(pa_tls), "%d", pa.tls_port);
    snprintf(pb_tls, sizeof(pb_tls), "%d", pb.tls_port);
    _follow(&pa, "1", pb_tls);
    _follow(&pb, "2", pa_tls);
    ck_assert_int_eq(kura_launch(&pa), 0);
    ck_assert_int_eq(kura_launch(&pb), 0);
}

static void
_cleanup_pair(void)
{
    kura_cleanup(&pa);
    kura_cleanup(&pb);
    _remove_certs();
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

struct stat_at_least {
    int port;
    const char *name;
    long long min;
};

static bool
_stat_reaches(void *arg)
{
    struct stat_at_least *s = arg;
    return _stat(s->port, s->name) >= s->min;
}

static bool
_wait_stat(int port, const char *name, long long min, int timeout_ms)
{
    struct stat_at_least s = {port, name, min};
    return harness_wait_for(_stat_reaches, &s, timeout_ms);
}

/* `k`'s follower has applied everything its master had logged. */
static void
_caught_up(struct kura_proc *follower, struct kura_proc *master)
{
    long long end = _stat(master->port, "kura_ulog_last_lsn");
    ck_assert_int_gt(end, 0);
    ck_assert(_wait_stat(follower->port, "kura_repl_master_applied_lsn", end,
                         30000));
}

/* `kura bench` over TLS with a client certificate, own keys logged. */
static const char *const *
_bench(const char *port, const char *prefix, const char *ack, const char *ops,
       const char *duration)
{
    static const char *args[40];
    int n = 0;
    args[n++] = "bench";
    args[n++] = "--port";
    args[n++] = port;
    args[n++] = "--tls";
    args[n++] = "--cacert";
    args[n++] = _at("ca.pem");
    args[n++] = "--cert";
    args[n++] = _at("client.pem");
    args[n++] = "--key";
    args[n++] = _at("client.key");
    args[n++] = "--conns";
    args[n++] = "4";
    args[n++] = "--value-size";
    args[n++] = "100";
    args[n++] = "--own-keys";
    args[n++] = "300";
    args[n++] = "--prefix";
    args[n++] = prefix;
    args[n++] = "--ack-log";
    args[n++] = ack;
    if (ops != NULL) {
        args[n++] = "--ops";
        args[n++] = ops;
    } else {
        args[n++] = "--duration";
        args[n++] = duration;
    }
    args[n] = NULL;
    return args;
}

/* `kura verify` of the three ack logs on `port` (TLS with a certificate
 * when `tls`, else plaintext). */
static void
_verify(int port, bool tls)
{
    struct harness_tool t;
    char p[16];
    snprintf(p, sizeof(p), "%d", port);
    const char *acks[] = {_at("ack1"), _at("ack2"), _at("ack3")};
    for (int i = 0; i < 3; i++) {
        const char *args[] = {"verify", "--ack-log", acks[i], "--port", p,
                              tls ? "--tls" : NULL, "--cacert", _at("ca.pem"),
                              "--cert", _at("client.pem"), "--key",
                              _at("client.key"), NULL};
        ck_assert_int_eq(harness_tool_run(&t, args, 0, 60000), 0);
        ck_assert_ptr_nonnull(strstr(t.out, " 0 stale, 0 missing"));
    }
}

START_TEST(test_pair_failover_resync_backup)
{
    struct harness_tool t;
    struct harness_tool load;

    ck_assert(_wait_stat(pa.port, "kura_repl_master_connected", 1, 10000));
    ck_assert(_wait_stat(pb.port, "kura_repl_master_connected", 1, 10000));
    ck_assert(kura_log_has(&pa, "over TLS"));

    /* Writes on A; then A dies (kill -9) under a second load. */
    ck_assert_int_eq(harness_tool_run(&t, _bench(pa_tls, "a:", _at("ack1"),
                                                 "3000", NULL), 0, 60000), 0);
    ck_assert_int_eq(harness_tool_spawn(&load, _bench(pa_tls, "b:",
                                                      _at("ack2"), NULL,
                                                      "4")), 0);
    struct stat_at_least more = {pa.port, "cmd_set", 4000};
    ck_assert(harness_wait_for(_stat_reaches, &more, 60000));
    kura_kill9(&pa);
    ck_assert_int_ne(harness_tool_finish(&load, 60000), 0); /* cut off */
    ck_assert_ptr_nonnull(strstr(load.out, "ops "));

    /* The clients carry on on B; A comes back and catches up over TLS. */
    ck_assert_int_eq(harness_tool_run(&t, _bench(pb_tls, "c:", _at("ack3"),
                                                 "2000", NULL), 0, 60000), 0);
    ck_assert_int_eq(kura_launch(&pa), 0);
    _caught_up(&pa, &pb);
    _caught_up(&pb, &pa);
    _verify(pa.tls_port, true);
    _verify(pb.tls_port, true);

    /* A backup over TLS, with the key and a client certificate, holds
     * every acknowledged write. */
    char out[600];
    snprintf(out, sizeof(out), "%s/backup.tch", certs);
    ck_assert_int_eq(harness_tool_run(&t, (const char *const[]){
                         "backup", "--port", pa_tls, "--rkey", _at("rkey"),
                         "--tls", "--cacert", _at("ca.pem"), "--cert",
                         _at("client.pem"), "--key", _at("client.key"), out,
                         NULL}, 0, 60000), 0);
    struct kura_proc bk;
    kura_init(&bk, (const char *const[]){"-ulog", "off", out, NULL});
    ck_assert_int_eq(kura_launch(&bk), 0);
    _verify(bk.port, false);
    kura_cleanup(&bk);

    /* A new standby, its position long gone from A's log: a full
     * resynchronisation over TLS. */
    ck_assert(_wait_stat(pa.port, "kura_ulog_segments_removed", 1, 30000));
    struct kura_proc pc;
    kura_init(&pc, NULL);
    char certarg[3][512];
    snprintf(certarg[0], 512, "%s", _at("ca.pem"));
    snprintf(certarg[1], 512, "%s", _at("server2.pem"));
    snprintf(certarg[2], 512, "%s", _at("server2.key"));
    const char *more_args[] = {"-tlsca", certarg[0], "-tlscert", certarg[1],
                               "-tlskey", certarg[2], NULL};
    for (int i = 0; more_args[i] != NULL; i++) {
        pc.args[pc.nargs++] = more_args[i];
    }
    _follow(&pc, "3", pa_tls);
    ck_assert_int_eq(kura_launch(&pc), 0);
    _caught_up(&pc, &pa);
    ck_assert_int_ge(_stat(pc.port, "kura_repl_master_resyncs"), 1);
    _verify(pc.port, false);
    kura_cleanup(&pc);
}
END_TEST

/* A standby presenting `cert` and trusting `ca` follows A: refused. */
static void
_wrong_standby(struct kura_proc *p, const char *sid, const char *ca,
               const char *cert, const char *key, char paths[3][512])
{
    kura_init(p, (const char *const[]){"-catchup", "0", NULL});
    snprintf(paths[0], 512, "%s", _at(ca));
    snprintf(paths[1], 512, "%s", _at(cert));
    snprintf(paths[2], 512, "%s", _at(key));
    const char *more[] = {"-tlsca", paths[0], "-tlscert", paths[1], "-tlskey",
                          paths[2], NULL};
    for (int i = 0; more[i] != NULL; i++) {
        p->args[p->nargs++] = more[i];
    }
    _follow(p, sid, pa_tls);
    ck_assert_int_eq(kura_launch(p), 0);
}

START_TEST(test_pair_refuses_wrong_certificates)
{
    struct kura_proc d;
    struct kura_proc e;
    char dp[3][512];
    char ep[3][512];

    int fd = kc_connect(pa.port);
    ck_assert(kc_check(fd, "set secret 0 0 2\r\nno\r\n", "STORED\r\n"));
    close(fd);

    /* D presents a certificate from another CA: A refuses it. */
    _wrong_standby(&d, "4", "ca.pem", "other-server.pem", "other-server.key",
                   dp);
    ck_assert(kura_wait_logged(&pa, "TLS handshake failed: certificate "
                               "verify failed: unable to get local issuer",
                               10000));
    ck_assert(kura_wait_logged(&d, "ended the TLS session", 10000));

    /* E does not trust A's certificate: E refuses A. */
    _wrong_standby(&e, "5", "other-ca.pem", "server.pem", "server.key", ep);
    ck_assert(kura_wait_logged(&e, "(TLS): TLS handshake failed: certificate "
                               "verify failed: self-signed certificate in "
                               "certificate chain", 10000));
    ck_assert(kura_wait_logged(&pa, "TLS handshake failed: tlsv1 alert "
                               "unknown ca", 10000));

    /* Neither received anything. */
    fd = kc_connect(d.port);
    ck_assert(kc_check(fd, "get secret\r\n", "END\r\n"));
    close(fd);
    fd = kc_connect(e.port);
    ck_assert(kc_check(fd, "get secret\r\n", "END\r\n"));
    close(fd);
    ck_assert_int_eq(_stat(d.port, "kura_repl_master_connected"), 0);
    ck_assert_int_eq(_stat(e.port, "kura_repl_master_connected"), 0);
    kura_cleanup(&d);
    kura_cleanup(&e);
}
END_TEST

static Suite *
it_tls_pair_suite(void)
{
    Suite *s = suite_create("it_tls_pair");
    TCase *tc = tcase_create("pair");
    tcase_add_checked_fixture(tc, _start_pair, _cleanup_pair);
    tcase_add_test(tc, test_pair_failover_resync_backup);
    tcase_add_test(tc, test_pair_refuses_wrong_certificates);
    tcase_set_timeout(tc, 240);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(it_tls_pair_suite)
