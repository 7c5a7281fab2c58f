/*
 * Integration tests that need a second address: a private network
 * namespace whose loopback device also carries 10.77.0.1, so that a peer
 * can come from an address outside 127.0.0.0/8 without any real network.
 *
 * Without -rkey a master refuses replication from such a peer (and only
 * replication: memcached clients are served). With the same -rkey on
 * both, a standby there authenticates and follows. A master with -tlsca
 * refuses it on the plaintext port and serves it over TLS.
 *
 * Needs root (network namespaces); elsewhere reports SKIP (exit 77).
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

#define OTHER_ADDR "10.77.0.1"
#define NONCE "00112233445566778899aabbccddeeff"

static struct kura_proc a;
static struct kura_proc b;

/* Brings `name` up, with `addr` if given. Returns 0 or -1. */
static int
_iface_up(const char *name, const char *addr)
{
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    struct ifreq ifr;
    int rc = 0;
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
    if (addr != NULL) {
        struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;
        sin->sin_family = AF_INET;
        inet_pton(AF_INET, addr, &sin->sin_addr);
        rc |= ioctl(s, SIOCSIFADDR, &ifr);
    }
    rc |= ioctl(s, SIOCGIFFLAGS, &ifr);
    ifr.ifr_flags |= IFF_UP;
    rc |= ioctl(s, SIOCSIFFLAGS, &ifr);
    close(s);
    return rc == 0 ? 0 : -1;
}

/* Connects to OTHER_ADDR:`port` from OTHER_ADDR. */
static int
_connect_from_other(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sin;
    struct timeval tv = {5, 0};
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    inet_pton(AF_INET, OTHER_ADDR, &sin.sin_addr);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    sin.sin_port = htons((uint16_t)port);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
}

START_TEST(test_replication_from_elsewhere_needs_a_key)
{
    kura_start(&a, (const char *const[]){"-host", "0.0.0.0", "-sid", "1",
                                         NULL});
    int fd = _connect_from_other(a.port);
    char line[256];
    /* An ordinary client from there is served... */
    ck_assert(kc_check(fd, "set k 0 0 1\r\nv\r\n", "STORED\r\n"));
    close(fd);
    /* ...but not a would-be standby. */
    fd = _connect_from_other(a.port);
    ck_assert_int_eq(kc_sends(fd, "REPL 1 2 0 1 " NONCE "\r\n"), 0);
    ck_assert_int_gt(kc_read_until(fd, line, sizeof(line), "\r\n", 5000), 0);
    ck_assert_str_eq(line, "REPL ERROR replication from another host needs "
                           "a shared key (-rkey)\r\n");
    ck_assert(kc_wait_closed(fd, 5000));
    close(fd);
    kura_cleanup(&a);
}
END_TEST

struct read_wait {
    int port;
};

static bool
_has_k(void *arg)
{
    struct read_wait *r = arg;
    char reply[128];
    int fd = kc_connect(r->port);
    if (fd < 0) {
        return false;
    }
    bool ok = kc_sends(fd, "get k\r\n") == 0 &&
              kc_read_until(fd, reply, sizeof(reply), "END\r\n", 2000) > 0 &&
              strcmp(reply, "VALUE k 0 1\r\nv\r\nEND\r\n") == 0;
    close(fd);
    return ok;
}

START_TEST(test_keyed_standby_from_elsewhere_follows)
{
    static char key_a[600];
    static char key_b[600];
    static char a_port[16];
    kura_init(&a, (const char *const[]){"-host", "0.0.0.0", "-sid", "1",
                                        "-rkey", key_a, NULL});
    kura_init(&b, (const char *const[]){"-sid", "2", "-mhost", OTHER_ADDR,
                                        "-mport", a_port, "-rkey", key_b,
                                        NULL});
    snprintf(a_port, sizeof(a_port), "%d", a.port);
    snprintf(key_a, sizeof(key_a), "%s/key", a.dir);
    snprintf(key_b, sizeof(key_b), "%s/key", b.dir);
    const char *keys[2] = {key_a, key_b};
    for (int i = 0; i < 2; i++) {
        int fd = open(keys[i], O_WRONLY | O_CREAT | O_TRUNC, 0600);
        ck_assert_int_eq(write(fd, "a secret of enough length\n", 26), 26);
        close(fd);
    }
    ck_assert_int_eq(kura_launch(&a), 0);
    ck_assert_int_eq(kura_launch(&b), 0);
    int fd = kc_connect(a.port);
    ck_assert(kc_check(fd, "set k 0 0 1\r\nv\r\n", "STORED\r\n"));
    close(fd);
    struct read_wait r = {b.port};
    ck_assert(harness_wait_for(_has_k, &r, 5000));
    kura_cleanup(&b);
    kura_cleanup(&a);
}
END_TEST

/*
 * A server that checks certificates (-tlsca) serves replication to
 * another host over TLS only: the plaintext port refuses it even with the
 * key, and a standby there follows over -mtls.
 */
START_TEST(test_tls_server_replicates_elsewhere_over_tls_only)
{
    static char certs[256];
    static char paths[5][600];
    static char a_tls[16];
    char cmd[1024];
    const char *src = getenv("srcdir");
    snprintf(certs, sizeof(certs), "/tmp/kura-netns-tls-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(certs));
    snprintf(cmd, sizeof(cmd), "%s/tests/tls/make-certs %s IP:%s",
             src != NULL ? src : ".", certs, OTHER_ADDR);
    ck_assert_int_eq(system(cmd), 0);
    const char *names[] = {"server.pem", "server.key", "ca.pem", "key"};
    for (int i = 0; i < 4; i++) {
        snprintf(paths[i], sizeof(paths[i]), "%s/%s", certs, names[i]);
    }
    int kfd = open(paths[3], O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_eq(write(kfd, "a secret of enough length\n", 26), 26);
    close(kfd);
    kura_init(&a, (const char *const[]){"-host", "0.0.0.0", "-sid", "1",
                                        "-rkey", paths[3], "-tlsca",
                                        paths[2], "-tlscert", paths[0],
                                        "-tlskey", paths[1], NULL});
    kura_init(&b, (const char *const[]){"-sid", "2", "-mhost", OTHER_ADDR,
                                        "-mport", a_tls, "-mtls", "-rkey",
                                        paths[3], "-tlsca", paths[2],
                                        "-tlscert", paths[0], "-tlskey",
                                        paths[1], NULL});
    a.tls_port = harness_free_port();
    snprintf(a_tls, sizeof(a_tls), "%d", a.tls_port);
    a.args[a.nargs++] = "-tlsport";
    a.args[a.nargs++] = a_tls;
    ck_assert_int_eq(kura_launch(&a), 0);

    /* The plaintext port, from there, even knowing the key: refused. */
    int fd = _connect_from_other(a.port);
    char line[256];
    ck_assert_int_eq(kc_sends(fd, "REPL 1 2 0 1 " NONCE "\r\n"), 0);
    ck_assert_int_gt(kc_read_until(fd, line, sizeof(line), "\r\n", 5000), 0);
    ck_assert_str_eq(line, "REPL ERROR this server replicates to other hosts "
                           "only over TLS: connect to its -tlsport\r\n");
    close(fd);
    ck_assert(kura_wait_logged(&a, "refused replication over the plaintext "
                               "port from another host", 5000));

    /* Over TLS, with a certificate naming OTHER_ADDR: followed. */
    ck_assert_int_eq(kura_launch(&b), 0);
    fd = kc_connect(a.port);
    ck_assert(kc_check(fd, "set k 0 0 1\r\nv\r\n", "STORED\r\n"));
    close(fd);
    struct read_wait r = {b.port};
    ck_assert(harness_wait_for(_has_k, &r, 5000));
    kura_cleanup(&b);
    kura_cleanup(&a);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", certs);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static Suite *
netns_suite(void)
{
    Suite *s = suite_create("it_netns");
    TCase *tc = tcase_create("netns");
    tcase_add_test(tc, test_replication_from_elsewhere_needs_a_key);
    tcase_add_test(tc, test_keyed_standby_from_elsewhere_follows);
    tcase_add_test(tc, test_tls_server_replicates_elsewhere_over_tls_only);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    if (geteuid() != 0 || unshare(CLONE_NEWNET) != 0) {
        printf("SKIP: needs root for a private network namespace (%s)\n",
               geteuid() != 0 ? "not root" : strerror(errno));
        return 77;
    }
    if (_iface_up("lo", NULL) != 0 || _iface_up("lo:1", OTHER_ADDR) != 0) {
        printf("SKIP: cannot configure the namespace's loopback (%s)\n",
               strerror(errno));
        return 77;
    }
    SRunner *sr = srunner_create(netns_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
