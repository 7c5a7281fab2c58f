/*
 * Unit tests: command-line flags, database names and command masks.
 */
#include <check.h>
#include <string.h>
#include <tchdb.h>
#include <unistd.h>

#include "cmdmask.h"
#include "dbspec.h"
#include "settings.h"
#include "unit_main.h"

static enum settings_result
_parse(struct settings *s, const char *const *argv, char *err)
{
    int argc = 0;
    while (argv[argc] != NULL) {
        argc++;
    }
    settings_init(s);
    return settings_parse(s, argc, (char **)argv, err, 512);
}

START_TEST(test_defaults)
{
    struct settings s;
    char err[512];
    const char *argv[] = {"kurad", NULL};

    ck_assert_int_eq(_parse(&s, argv, err), SETTINGS_OK);
    ck_assert_str_eq(s.host, "127.0.0.1");
    ck_assert_int_eq(s.port, 1978);
    ck_assert(s.default_db);
    ck_assert_int_eq(s.db.kind, DBSPEC_HASH_FILE);
    /* The default database is under ./data, made absolute. */
    char cwd[4096];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
    ck_assert(strncmp(s.db.path, cwd, strlen(cwd)) == 0);
    ck_assert(strstr(s.db.path, "/data/kura.tch") != NULL);
    ck_assert_uint_ge(s.maxconn, 20000);
    ck_assert_uint_eq(s.item_max, 1 << 20);
}
END_TEST

START_TEST(test_ttserver_command_line)
{
    /* mixi's command line (seed 002), verbatim apart from paths. */
    struct settings s;
    char err[512];
    const char *argv[] = {"kurad", "-port", "1978", "-dmn", "-le", "-pid",
                          "/tmp/k.pid", "-log", "/tmp/k.log", "-ulog",
                          "/tmp/ulog", "-ulim", "1024m", "-sid", "10001",
                          "-mhost", "peer", "-mport", "1978", "-rts",
                          "/tmp/k.rts", "casket.tch#bnum=2000000", NULL};

    ck_assert_int_eq(_parse(&s, argv, err), SETTINGS_OK);
    ck_assert(s.dmn);
    ck_assert_int_eq(s.log_level, SETTINGS_LOG_ERROR);
    ck_assert_str_eq(s.pid_path, "/tmp/k.pid");
    ck_assert_uint_eq(s.ulim, 1024ULL << 20);
    ck_assert_uint_eq(s.sid, 10001);
    ck_assert_str_eq(s.mhost, "peer");
    ck_assert_int_eq(s.db.bnum, 2000000);
    ck_assert(!s.default_db);
    ck_assert_uint_eq(s.catchup_s, SETTINGS_DEFAULT_CATCHUP_S);
}
END_TEST

START_TEST(test_catchup)
{
    struct settings s;
    char err[512];
    const char *off[] = {"kurad", "-catchup", "0", NULL};
    const char *minute[] = {"kurad", "-catchup", "60", NULL};
    const char *negative[] = {"kurad", "-catchup", "-1", NULL};
    const char *words[] = {"kurad", "-catchup", "soon", NULL};

    ck_assert_int_eq(_parse(&s, off, err), SETTINGS_OK);
    ck_assert_uint_eq(s.catchup_s, 0);
    ck_assert_int_eq(_parse(&s, minute, err), SETTINGS_OK);
    ck_assert_uint_eq(s.catchup_s, 60);
    ck_assert_int_eq(_parse(&s, negative, err), SETTINGS_ERROR);
    ck_assert(strstr(err, "-catchup") != NULL);
    ck_assert_int_eq(_parse(&s, words, err), SETTINGS_ERROR);
}
END_TEST

START_TEST(test_tls_flags)
{
    struct settings s;
    char err[512];
    const char *tls[] = {"kurad", "-host", "127.0.0.1", "-tlshost", "0.0.0.0",
                         "-tlsport", "11212", "-tlscert", "c.pem", "-tlskey",
                         "k.pem", "-tlsca", "/etc/ca.pem", "-tlsmin", "1.3",
                         "-tlsciphers", "ECDHE-ECDSA-AES128-GCM-SHA256",
                         "-tlssuites", "TLS_AES_128_GCM_SHA256", "-tlstout",
                         "3", "-tlsktls", NULL};
    ck_assert_int_eq(_parse(&s, tls, err), SETTINGS_OK);
    ck_assert_int_eq(s.tls_port, 11212);
    ck_assert_str_eq(s.tls_host, "0.0.0.0");
    ck_assert_str_eq(s.host, "127.0.0.1");
    ck_assert(s.tls_cert[0] == '/'); /* made absolute */
    ck_assert(strstr(s.tls_cert, "/c.pem") != NULL);
    ck_assert_str_eq(s.tls_ca, "/etc/ca.pem");
    ck_assert_int_eq(s.tls_min, 13);
    ck_assert_uint_eq(s.tls_tout_s, 3);
    ck_assert(s.tls_ktls);
    ck_assert(!s.mtls);

    const char *mtls[] = {"kurad", "-sid", "2", "-mhost", "a", "-mport",
                          "11212", "-mtls", "-tlscert", "/c", "-tlskey", "/k",
                          "-tlsca", "/ca", NULL};
    ck_assert_int_eq(_parse(&s, mtls, err), SETTINGS_OK);
    ck_assert(s.mtls);
    ck_assert_int_eq(s.tls_port, 0);

    const char *defaults[] = {"kurad", NULL};
    ck_assert_int_eq(_parse(&s, defaults, err), SETTINGS_OK);
    ck_assert_int_eq(s.tls_port, 0);
    ck_assert_int_eq(s.tls_min, 12);
    ck_assert_uint_eq(s.tls_tout_s, 10);

    /* Each refused with its reason. */
    const char *no_key[] = {"kurad", "-tlsport", "2", "-tlscert", "/c", NULL};
    const char *no_cert[] = {"kurad", "-tlsport", "2", NULL};
    const char *same_port[] = {"kurad", "-port", "2", "-tlsport", "2",
                               "-tlscert", "/c", "-tlskey", "/k", NULL};
    const char *mtls_no_ca[] = {"kurad", "-sid", "2", "-mhost", "a", "-mtls",
                                "-tlscert", "/c", "-tlskey", "/k", NULL};
    const char *mtls_no_mhost[] = {"kurad", "-mtls", "-tlsca", "/ca",
                                   "-tlscert", "/c", "-tlskey", "/k", NULL};
    const char *unused[] = {"kurad", "-tlsca", "/ca", NULL};
    const char *bad_min[] = {"kurad", "-tlsmin", "1.1", NULL};
    const char *tlshost_alone[] = {"kurad", "-tlshost", "0.0.0.0", NULL};
    const char *unix_sock[] = {"kurad", "-host", "/run/k.sock", "-port", "0",
                               "-tlsport", "2", "-tlscert", "/c", "-tlskey",
                               "/k", NULL};
    const struct {
        const char *const *argv;
        const char *why;
    } bad[] = {
        {no_key, "-tlscert and -tlskey go together"},
        {no_cert, "-tlsport needs -tlscert and -tlskey"},
        {same_port, "give TLS a port of its own"},
        {mtls_no_ca, "-mtls needs -mhost, -tlsca"},
        {mtls_no_mhost, "-mtls needs -mhost, -tlsca"},
        {unused, "neither is given"},
        {bad_min, "expected 1.2 or 1.3"},
        {tlshost_alone, "-tlshost goes with -tlsport"},
        {unix_sock, "give -tlshost"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_int_eq(_parse(&s, bad[i].argv, err), SETTINGS_ERROR);
        ck_assert_msg(strstr(err, bad[i].why) != NULL, "'%s' lacks '%s'",
                      err, bad[i].why);
    }
}
END_TEST

START_TEST(test_errors)
{
    struct settings s;
    char err[512];
    const char *bad_port[] = {"kurad", "-port", "70000", NULL};
    const char *no_value[] = {"kurad", "-thnum", NULL};
    const char *unknown[] = {"kurad", "-bogus", NULL};
    const char *two_db[] = {"kurad", "a.tch", "b.tch", NULL};
    const char *mhost_no_sid[] = {"kurad", "-mhost", "peer", NULL};
    const char *kl_no_pid[] = {"kurad", "-kl", NULL};
    const char *sid_range[] = {"kurad", "-sid", "65536", NULL};
    const char *bad_db[] = {"kurad", "db.tcb", NULL};
    const char *bad_tune[] = {"kurad", "db.tch#bnum=abc", NULL};
    const char *bad_mask[] = {"kurad", "-mask", "sett", NULL};
    const char *bad_ulim[] = {"kurad", "-ulim", "1x", NULL};
    const char *unix_rel[] = {"kurad", "-port", "0", "-host", "k.sock", NULL};

    ck_assert_int_eq(_parse(&s, bad_port, err), SETTINGS_ERROR);
    ck_assert(strstr(err, "-port") != NULL);
    ck_assert_int_eq(_parse(&s, no_value, err), SETTINGS_ERROR);
    ck_assert(strstr(err, "needs a value") != NULL);
    ck_assert_int_eq(_parse(&s, unknown, err), SETTINGS_ERROR);
    ck_assert_int_eq(_parse(&s, two_db, err), SETTINGS_ERROR);
    ck_assert_int_eq(_parse(&s, mhost_no_sid, err), SETTINGS_ERROR);
    ck_assert(strstr(err, "-sid") != NULL);
    ck_assert_int_eq(_parse(&s, kl_no_pid, err), SETTINGS_ERROR);
    ck_assert_int_eq(_parse(&s, sid_range, err), SETTINGS_ERROR);
    ck_assert_int_eq(_parse(&s, bad_db, err), SETTINGS_ERROR);
    ck_assert_int_eq(_parse(&s, bad_tune, err), SETTINGS_ERROR);
    ck_assert(strstr(err, "bnum") != NULL);
    ck_assert_int_eq(_parse(&s, bad_mask, err), SETTINGS_ERROR);
    ck_assert(strstr(err, "sett") != NULL);
    ck_assert_int_eq(_parse(&s, bad_ulim, err), SETTINGS_ERROR);
    ck_assert_int_eq(_parse(&s, unix_rel, err), SETTINGS_ERROR);
}
END_TEST

START_TEST(test_help_and_version)
{
    struct settings s;
    char err[512];
    const char *help[] = {"kurad", "-port", "1", "-h", NULL};
    const char *version[] = {"kurad", "--version", NULL};
    ck_assert_int_eq(_parse(&s, help, err), SETTINGS_HELP);
    ck_assert_int_eq(_parse(&s, version, err), SETTINGS_VERSION);
}
END_TEST

START_TEST(test_relative_paths_made_absolute)
{
    struct settings s;
    char err[512];
    const char *argv[] = {"kurad", "-pid", "run/k.pid", "-log", "k.log",
                          "-ulog", "ulog", "-rts", "k.rts", "db/k.tch", NULL};
    ck_assert_int_eq(_parse(&s, argv, err), SETTINGS_OK);
    ck_assert(s.pid_path[0] == '/' && s.log_path[0] == '/' &&
              s.ulog_path[0] == '/' && s.rts_path[0] == '/' &&
              s.db.path[0] == '/');
    ck_assert(strstr(s.pid_path, "/run/k.pid") != NULL);
}
END_TEST

START_TEST(test_dbspec)
{
    struct dbspec d;
    char err[256];
    char out[512];

    ck_assert(dbspec_parse("*", &d, err, sizeof(err)));
    ck_assert_int_eq(d.kind, DBSPEC_HASH_MEMORY);
    ck_assert(dbspec_parse("c.tch#bnum=2m#apow=4#fpow=12#opts=ld#rcnum=0"
                           "#xmsiz=256m#dfunit=8",
                           &d, err, sizeof(err)));
    ck_assert_int_eq(d.bnum, 2 << 20);
    ck_assert_int_eq(d.apow, 4);
    ck_assert_int_eq(d.fpow, 12);
    ck_assert_int_eq(d.opts, HDBTLARGE | HDBTDEFLATE);
    ck_assert_int_eq(d.xmsiz, 256 << 20);
    ck_assert_int_eq(d.dfunit, 8);
    ck_assert(dbspec_format(&d, out, sizeof(out)));
    ck_assert_str_eq(out, "c.tch#bnum=2097152#apow=4#fpow=12#rcnum=0"
                          "#xmsiz=268435456#dfunit=8#opts=ld");
    ck_assert(dbspec_parse("c.tch", &d, err, sizeof(err)));
    ck_assert_int_eq(d.bnum, -1);
    ck_assert(!dbspec_parse("c.tch#bnum", &d, err, sizeof(err)));
    ck_assert(!dbspec_parse("c.tch#apow=99", &d, err, sizeof(err)));
    ck_assert(!dbspec_parse("c.tch#opts=x", &d, err, sizeof(err)));
    ck_assert(!dbspec_parse("c.tch#colour=red", &d, err, sizeof(err)));
    ck_assert(strstr(err, "colour") != NULL);
    ck_assert(!dbspec_parse("#bnum=1", &d, err, sizeof(err)));
    ck_assert(!dbspec_parse("c.tcb", &d, err, sizeof(err)));
}
END_TEST

START_TEST(test_cmdmask)
{
    uint64_t mask = 0;
    char err[256];
    char out[256];

    /* A read-only server. */
    ck_assert(cmdmask_apply(&mask, "allwrite", false, err, sizeof(err)));
    ck_assert(!cmdmask_allows(mask, PROTO_CMD_SET));
    ck_assert(!cmdmask_allows(mask, PROTO_CMD_FLUSH_ALL));
    ck_assert(!cmdmask_allows(mask, PROTO_CMD_TOUCH));
    ck_assert(cmdmask_allows(mask, PROTO_CMD_GET));
    ck_assert(cmdmask_allows(mask, PROTO_CMD_STATS));
    /* -unmask applies after -mask, left to right. */
    ck_assert(cmdmask_apply(&mask, "put", true, err, sizeof(err)));
    ck_assert(cmdmask_allows(mask, PROTO_CMD_SET));
    ck_assert(!cmdmask_allows(mask, PROTO_CMD_ADD));
    /* Names, separators, case, ttserver names and hex. */
    mask = 0;
    ck_assert(cmdmask_apply(&mask, "flush_all, VANISH  stats", false, err,
                            sizeof(err)));
    cmdmask_format(mask, out, sizeof(out));
    ck_assert_str_eq(out, "flush_all,stats");
    mask = 0;
    ck_assert(cmdmask_apply(&mask, "putnr,allhttp", false, err, sizeof(err)));
    ck_assert_uint_eq(mask, 0);
    ck_assert(cmdmask_apply(&mask, "0x10", false, err, sizeof(err)));
    ck_assert_uint_eq(mask, 0x10);
    mask = 0;
    ck_assert(cmdmask_apply(&mask, "repl slave", false, err, sizeof(err)));
    ck_assert_uint_eq(mask, CMDMASK_REPL | CMDMASK_SLAVE);
    ck_assert(!cmdmask_apply(&mask, "get,bogus", false, err, sizeof(err)));
    ck_assert(!cmdmask_apply(&mask, "0xZZ", false, err, sizeof(err)));
    mask = 0;
    cmdmask_format(mask, out, sizeof(out));
    ck_assert_str_eq(out, "none");
}
END_TEST

static Suite *
settings_suite(void)
{
    Suite *s = suite_create("settings");
    TCase *tc = tcase_create("flags");
    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_ttserver_command_line);
    tcase_add_test(tc, test_catchup);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_tls_flags);
    tcase_add_test(tc, test_help_and_version);
    tcase_add_test(tc, test_relative_paths_made_absolute);
    suite_add_tcase(s, tc);
    tc = tcase_create("dbspec");
    tcase_add_test(tc, test_dbspec);
    suite_add_tcase(s, tc);
    tc = tcase_create("cmdmask");
    tcase_add_test(tc, test_cmdmask);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(settings_suite)
