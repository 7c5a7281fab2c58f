/*
 * Unit tests for auth: loading the password file (permissions, missing
 * file, malformed lines, no user), credential checks, SASL PLAIN messages
 * (authzid, missing NULs) and memcached's text token.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "unit_main.h"
#include "unit_tmpdir.h"

static char dir[UNIT_TMPDIR_MAX];
static char path[UNIT_TMPDIR_MAX + 32];
static char subdir[UNIT_TMPDIR_MAX + 32];

static void
_setup(void)
{
    unit_tmpdir_make(dir, sizeof(dir), "check_auth");
    unit_tmpdir_path(path, sizeof(path), dir, "users");
    unit_tmpdir_path(subdir, sizeof(subdir), dir, "sub");
}

static void
_teardown(void)
{
    unit_tmpdir_remove(dir);
}

static void
_write_n(const char *text, size_t len, mode_t mode)
{
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, len), (ssize_t)len);
    ck_assert_int_eq(fchmod(fd, mode), 0);
    close(fd);
}

static void
_write(const char *text, mode_t mode)
{
    _write_n(text, strlen(text), mode);
}

/* Loads `path` expecting a refusal whose message holds `why`. */
static void
_load_fails(const char *why)
{
    struct auth a;
    char err[512];
    err[0] = '\0';
    ck_assert_int_eq(auth_load(&a, path, err, sizeof(err)), -1);
    ck_assert_msg(strstr(err, why) != NULL, "error [%s] lacks [%s]", err, why);
    ck_assert(!a.enabled);
    ck_assert_ptr_null(a.users);
    ck_assert_uint_eq(a.nusers, 0);
}

/* A table loaded from "alice:secret", "bob:pa:ss" and "dave:w x". */
static void
_load_users(struct auth *a)
{
    char err[256];
    _write("alice:secret\nbob:pa:ss\r\ndave:w x\n", 0600);
    ck_assert_int_eq(auth_load(a, path, err, sizeof(err)), 0);
}

START_TEST(test_off_without_a_path)
{
    struct auth a;
    char err[64];
    ck_assert_int_eq(auth_load(&a, "", err, sizeof(err)), 0);
    ck_assert(!a.enabled);
    ck_assert_uint_eq(a.nusers, 0);
    ck_assert(!auth_check(&a, "a", 1, "b", 1));
    ck_assert_int_eq(auth_load(&a, NULL, err, sizeof(err)), 0);
    ck_assert(!a.enabled);
    auth_free(&a);
}
END_TEST

START_TEST(test_load)
{
    struct auth a;
    char err[256];

    /* Comments, blank lines, CRLF, a last line without a newline; the
     * password is everything after the first colon. */
    _write("# users\n\nalice:secret\r\nbob:pa:ss\n\r\n#x:y\ncarol:c", 0600);
    ck_assert_int_eq(auth_load(&a, path, err, sizeof(err)), 0);
    ck_assert(a.enabled);
    ck_assert_uint_eq(a.nusers, 3);
    ck_assert_str_eq(a.users[0].name, "alice");
    ck_assert_str_eq(a.users[0].pass, "secret");
    ck_assert_uint_eq(a.users[0].nname, 5);
    ck_assert_uint_eq(a.users[0].npass, 6);
    ck_assert_str_eq(a.users[1].name, "bob");
    ck_assert_str_eq(a.users[1].pass, "pa:ss");
    ck_assert_str_eq(a.users[2].name, "carol");
    ck_assert_str_eq(a.users[2].pass, "c");
    auth_free(&a);
    ck_assert(!a.enabled);
    ck_assert_ptr_null(a.users);
    ck_assert_uint_eq(a.nusers, 0);

    /* Read-only for its owner is fine too; so are 255-byte fields. */
    char line[600];
    char field[256];
    memset(field, 'f', 255);
    field[255] = '\0';
    snprintf(line, sizeof(line), "%s:%s\n", field, field);
    _write(line, 0400);
    ck_assert_int_eq(auth_load(&a, path, err, sizeof(err)), 0);
    ck_assert_uint_eq(a.users[0].nname, 255);
    ck_assert(auth_check(&a, field, 255, field, 255));
    auth_free(&a);
}
END_TEST

START_TEST(test_permissions_refused)
{
    /* Any bit for the group or others refuses the file. */
    static const mode_t modes[] = {0640, 0604, 0620, 0602, 0660, 0644, 0606,
                                   0610, 0601, 0444};
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        _write("alice:secret\n", modes[i]);
        _load_fails("others can read or write it");
    }
    /* Not a regular file. */
    ck_assert_int_eq(mkdir(subdir, 0700), 0);
    struct auth a;
    char err[512];
    ck_assert_int_eq(auth_load(&a, subdir, err, sizeof(err)), -1);
    ck_assert_ptr_nonnull(strstr(err, "regular file"));
    ck_assert(!a.enabled);
}
END_TEST

START_TEST(test_missing_file)
{
    unlink(path);
    _load_fails(path);
    _load_fails("No such file");
}
END_TEST

START_TEST(test_malformed_lines)
{
    static const struct {
        const char *text;
        const char *why;
    } bad[] = {
        {"nocolon\n", "line 1 is not user:password"},
        {":secret\n", "line 1 is not user:password"},
        {"alice:\n", "line 1 is not user:password"},
        {"alice:\r\n", "line 1 is not user:password"},
        {"alice:secret\nbob\n", "line 2 is not user:password"},
        {"# c\n\nalice:secret\n:\n", "line 4 is not user:password"},
        {"alice:secret\r\nbob\r\n", "line 2 is not user:password"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        _write(bad[i].text, 0600);
        _load_fails(bad[i].why);
    }
    /* 256-byte names or passwords do not fit. */
    char line[600];
    char field[257];
    memset(field, 'f', 256);
    field[256] = '\0';
    snprintf(line, sizeof(line), "%s:x\n", field);
    _write(line, 0600);
    _load_fails("line 1 is not user:password");
    snprintf(line, sizeof(line), "x:%s\n", field);
    _write(line, 0600);
    _load_fails("line 1 is not user:password");
}
END_TEST

START_TEST(test_no_user)
{
    _write("", 0600);
    _load_fails("no user in it");
    _write("# nobody yet\n\n\r\n", 0600);
    _load_fails("no user in it");
}
END_TEST

START_TEST(test_check)
{
    struct auth a;
    _load_users(&a);
    ck_assert(auth_check(&a, "alice", 5, "secret", 6));
    ck_assert(auth_check(&a, "bob", 3, "pa:ss", 5));
    ck_assert(auth_check(&a, "dave", 4, "w x", 3));
    ck_assert(!auth_check(&a, "alice", 5, "pa:ss", 5)); /* bob's */
    ck_assert(!auth_check(&a, "alice", 5, "secre", 5));
    ck_assert(!auth_check(&a, "alice", 5, "secrets", 7));
    ck_assert(!auth_check(&a, "alic", 4, "secret", 6));
    ck_assert(!auth_check(&a, "alicex", 6, "secret", 6));
    ck_assert(!auth_check(&a, "Alice", 5, "secret", 6));
    ck_assert(!auth_check(&a, "", 0, "", 0));
    ck_assert(!auth_check(&a, "alice", 5, "", 0));
    ck_assert(!auth_check(&a, "alice", 5, "secret\0", 7));
    auth_free(&a);
}
END_TEST

START_TEST(test_plain)
{
    struct auth a;
    _load_users(&a);
#define PLAIN(lit) auth_plain(&a, lit, sizeof(lit) - 1)
    /* No authzid, or the user's own. */
    ck_assert(PLAIN("\0alice\0secret"));
    ck_assert(PLAIN("alice\0alice\0secret"));
    ck_assert(PLAIN("\0bob\0pa:ss"));
    /* No one may act as someone else, even with good credentials. */
    ck_assert(!PLAIN("bob\0alice\0secret"));
    ck_assert(!PLAIN("ali\0alice\0secret"));
    ck_assert(!PLAIN("alicex\0alice\0secret"));
    /* Wrong credentials. */
    ck_assert(!PLAIN("\0alice\0wrong"));
    ck_assert(!PLAIN("\0alice\0"));
    ck_assert(!PLAIN("\0\0secret"));
    ck_assert(!PLAIN("\0alice\0secret\0"));
    ck_assert(!PLAIN("\0alice\0sec\0ret"));
    /* Missing NULs. */
    ck_assert(!PLAIN("alice\0secret"));
    ck_assert(!PLAIN("\0alicesecret"));
    ck_assert(!PLAIN("alicesecret"));
    ck_assert(!PLAIN("\0"));
    ck_assert(!PLAIN(""));
#undef PLAIN
    /* The length given is all that is read. */
    ck_assert(!auth_plain(&a, "\0alice\0secret", 12));
    auth_free(&a);
}
END_TEST

START_TEST(test_text_token)
{
    struct auth a;
    _load_users(&a);
#define TEXT(lit) auth_text(&a, lit, sizeof(lit) - 1)
    ck_assert_int_eq(TEXT("alice secret"), AUTH_OK);
    ck_assert_int_eq(TEXT("alice secret\r\n"), AUTH_OK);
    ck_assert_int_eq(TEXT("alice secret\n"), AUTH_OK);
    ck_assert_int_eq(TEXT("bob pa:ss\r\n"), AUTH_OK);
    ck_assert_int_eq(TEXT("alice wrong\r\n"), AUTH_REFUSED);
    ck_assert_int_eq(TEXT("nobody secret\r\n"), AUTH_REFUSED);
    ck_assert_int_eq(TEXT("alice secre\r\n"), AUTH_REFUSED);
    ck_assert_int_eq(TEXT("alice bob\r\n"), AUTH_REFUSED);
    ck_assert_int_eq(TEXT("alice \r\n"), AUTH_REFUSED);
    ck_assert_int_eq(TEXT("alice\r\n"), AUTH_MALFORMED);
    ck_assert_int_eq(TEXT("alicesecret"), AUTH_MALFORMED);
    ck_assert_int_eq(TEXT("\r\n"), AUTH_MALFORMED);
    ck_assert_int_eq(TEXT(""), AUTH_MALFORMED);
    /* Only the end of line is stripped, not the password's last byte. */
    ck_assert_int_eq(TEXT("alice secretx"), AUTH_REFUSED);
#undef TEXT
    /* The length given is all that is read. */
    ck_assert_int_eq(auth_text(&a, "alice secret", 11), AUTH_REFUSED);
    auth_free(&a);
}
END_TEST

static Suite *
auth_suite(void)
{
    Suite *s = suite_create("auth");
    TCase *tc = tcase_create("load");
    tcase_add_checked_fixture(tc, _setup, _teardown);
    tcase_add_test(tc, test_off_without_a_path);
    tcase_add_test(tc, test_load);
    tcase_add_test(tc, test_permissions_refused);
    tcase_add_test(tc, test_missing_file);
    tcase_add_test(tc, test_malformed_lines);
    tcase_add_test(tc, test_no_user);
    suite_add_tcase(s, tc);
    tc = tcase_create("check");
    tcase_add_checked_fixture(tc, _setup, _teardown);
    tcase_add_test(tc, test_check);
    tcase_add_test(tc, test_plain);
    tcase_add_test(tc, test_text_token);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(auth_suite)
