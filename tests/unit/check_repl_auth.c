/*
 * Unit tests for repl_auth: key files (permissions, length, trailing
 * newline), proofs (each role's differs, a different key or nonce fails),
 * nonces, and the loopback test.
 */
#include <arpa/inet.h>
#include <check.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "repl_auth.h"
#include "unit_main.h"
#include "unit_tmpdir.h"

static char dir[UNIT_TMPDIR_MAX];
static char path[UNIT_TMPDIR_MAX + 32];

static void
_setup(void)
{
    unit_tmpdir_make(dir, sizeof(dir), "check_repl_auth");
    unit_tmpdir_path(path, sizeof(path), dir, "key");
}

static void
_teardown(void)
{
    unit_tmpdir_remove(dir);
}

static void
_write_key(const char *text, mode_t mode)
{
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    ck_assert_int_eq(fchmod(fd, mode), 0);
    close(fd);
}

START_TEST(test_key_files)
{
    struct repl_auth a;
    char err[256];
    ck_assert_int_eq(repl_auth_load(&a, "", err, sizeof(err)), 0);
    ck_assert(!a.enabled);

    _write_key("correct horse battery staple\n", 0600);
    ck_assert_int_eq(repl_auth_load(&a, path, err, sizeof(err)), 0);
    ck_assert(a.enabled);
    ck_assert_uint_eq(a.klen, strlen("correct horse battery staple"));

    _write_key("correct horse battery staple\n", 0644);
    ck_assert_int_eq(repl_auth_load(&a, path, err, sizeof(err)), -1);
    ck_assert(strstr(err, "chmod 600") != NULL);
    ck_assert(!a.enabled);

    _write_key("too short\n", 0600);
    ck_assert_int_eq(repl_auth_load(&a, path, err, sizeof(err)), -1);
    ck_assert(strstr(err, "16") != NULL);

    ck_assert_int_eq(repl_auth_load(&a, "/nonexistent/key", err,
                                    sizeof(err)), -1);
    ck_assert(strstr(err, "cannot read") != NULL);
}
END_TEST

static void
_key(struct repl_auth *a, const char *secret)
{
    memset(a, 0, sizeof(*a));
    a->enabled = true;
    a->klen = strlen(secret);
    memcpy(a->key, secret, a->klen);
}

START_TEST(test_proofs)
{
    struct repl_auth a;
    struct repl_auth other;
    char cn[REPL_NONCE_HEX + 1];
    char sn[REPL_NONCE_HEX + 1];
    char master[REPL_PROOF_HEX + 1];
    char standby[REPL_PROOF_HEX + 1];

    _key(&a, "0123456789abcdefXYZ");
    _key(&other, "0123456789abcdefXYz");
    ck_assert_int_eq(repl_auth_nonce(cn), 0);
    ck_assert_int_eq(repl_auth_nonce(sn), 0);
    ck_assert(repl_auth_nonce_valid(cn, strlen(cn)));
    ck_assert_str_ne(cn, sn);

    repl_auth_proof(&a, REPL_AUTH_MASTER, cn, sn, master);
    repl_auth_proof(&a, REPL_AUTH_STANDBY, cn, sn, standby);
    ck_assert_uint_eq(strlen(master), REPL_PROOF_HEX);
    /* One side's proof is never the other's. */
    ck_assert_str_ne(master, standby);
    ck_assert(repl_auth_verify(&a, REPL_AUTH_MASTER, cn, sn, master));
    ck_assert(!repl_auth_verify(&a, REPL_AUTH_STANDBY, cn, sn, master));
    ck_assert(repl_auth_verify(&a, REPL_AUTH_STANDBY, cn, sn, standby));
    /* A different key, swapped or fresh nonces: no. */
    ck_assert(!repl_auth_verify(&other, REPL_AUTH_MASTER, cn, sn, master));
    ck_assert(!repl_auth_verify(&a, REPL_AUTH_MASTER, sn, cn, master));
    char fresh[REPL_NONCE_HEX + 1];
    ck_assert_int_eq(repl_auth_nonce(fresh), 0);
    ck_assert(!repl_auth_verify(&a, REPL_AUTH_MASTER, fresh, sn, master));
    ck_assert(!repl_auth_verify(&a, REPL_AUTH_MASTER, cn, sn, "abc"));

    ck_assert(!repl_auth_nonce_valid("0011", 4));
    ck_assert(!repl_auth_nonce_valid("0011223344556677889900aabbccddeG", 32));
}
END_TEST

START_TEST(test_local_peers)
{
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sin;
    socklen_t len = sizeof(sin);
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(l, (struct sockaddr *)&sin, sizeof(sin)), 0);
    ck_assert_int_eq(listen(l, 1), 0);
    ck_assert_int_eq(getsockname(l, (struct sockaddr *)&sin, &len), 0);
    int c = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_eq(connect(c, (struct sockaddr *)&sin, sizeof(sin)), 0);
    int a = accept(l, NULL, NULL);
    ck_assert(repl_auth_peer_is_local(a));
    int pair[2];
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
    ck_assert(repl_auth_peer_is_local(pair[0]));
    ck_assert(!repl_auth_peer_is_local(l)); /* no peer at all */
    close(a);
    close(c);
    close(l);
    close(pair[0]);
    close(pair[1]);
}
END_TEST

static Suite *
repl_auth_suite(void)
{
    Suite *s = suite_create("repl_auth");
    TCase *tc = tcase_create("repl_auth");
    tcase_add_checked_fixture(tc, _setup, _teardown);
    tcase_add_test(tc, test_key_files);
    tcase_add_test(tc, test_proofs);
    tcase_add_test(tc, test_local_peers);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(repl_auth_suite)
