/*
 * Unit tests: command semantics, driven through the real parser and the
 * real write path over an in-memory store, with no sockets.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "process.h"
#include "proto.h"
#include "proto_bin.h"
#include "record.h"
#include "stats_snapshot.h"
#include "settings.h"
#include "store.h"
#include "txn.h"
#include "unit_main.h"
#include "util.h"

static struct settings settings;
static struct store *store;
static struct clock clk;
static struct txn_engine eng;
static struct txn_batch batch;
static struct stats_counters counters;
static struct process_env env;
static struct process_ctx ctx;
static struct process_session sess;
static struct access_table access;
static struct auth auth;
static int verbosity_seen = -1;
static int resets;

static void
_snapshot(void *arg, struct stats_snapshot *s)
{
    (void)arg;
    memset(s, 0, sizeof(*s));
    stats_sum(s->counters, &counters);
    s->threads = 1;
}

static void
_reset(void *arg)
{
    (void)arg;
    resets++;
}

static void
_verbosity(void *arg, uint32_t level)
{
    (void)arg;
    verbosity_seen = (int)level;
}

static void
_setup_with(const char *const *argv)
{
    char err[512];
    int argc = 0;
    while (argv[argc] != NULL) {
        argc++;
    }
    settings_init(&settings);
    ck_assert_int_eq(settings_parse(&settings, argc, (char **)argv, err,
                                    sizeof(err)),
                     SETTINGS_OK);
    store = store_open(&settings.db, NULL, NULL, err, sizeof(err));
    ck_assert_ptr_nonnull(store);
    clock_init(&clk, 0);
    ck_assert_int_eq(txn_engine_init(&eng, store, &clk, NULL, 7, 1024, NULL, err,
                                     sizeof(err)),
                     0);
    ck_assert_int_eq(txn_batch_init(&batch, &eng, 4096), 0);
    memset(&counters, 0, sizeof(counters));
    ck_assert_int_eq(access_init(&access, 10), 0);
    memset(&auth, 0, sizeof(auth));
    memset(&sess, 0, sizeof(sess));
    env = (struct process_env){.eng = &eng,
                               .settings = &settings,
                               .snapshot = _snapshot,
                               .reset = _reset,
                               .set_verbosity = _verbosity,
                               .auth = &auth,
                               .access = &access};
    ctx = (struct process_ctx){.env = &env, .batch = &batch, .stats = &counters};
}

static void
_setup(void)
{
    static const char *const argv[] = {"kurad", "-itemmax", "2k", "*", NULL};
    _setup_with(argv);
}

static void
_teardown(void)
{
    txn_batch_deinit(&batch);
    txn_engine_deinit(&eng);
    store_close(store);
    access_deinit(&access);
    auth_free(&auth);
}

/*
 * Runs `in` like a connection would: parse, process, commit at the end.
 * Returns the replies.
 */
static struct buf exec_out;

/* Runs `len` bytes like a connection would (binary if the first byte is
 * the binary magic): parse, process, commit at the end. Returns the
 * output buffer. */
static struct buf *
_exec_bytes(const char *in, size_t len)
{
    struct proto_parser p;
    struct proto_limits limits = {2048, 65536, settings.item_max, true};
    bool binary = len > 0 && (unsigned char)in[0] == PROTO_BIN_REQUEST;
    size_t off = 0;

    buf_reset(&exec_out);
    proto_parser_init(&p, &limits);
    while (off < len) {
        struct proto_request req;
        size_t consumed;
        size_t cursor = 0;
        enum proto_status st =
            binary ? proto_bin_parse(&p, in + off, len - off, &consumed, &req)
                   : proto_parse(&p, in + off, len - off, &consumed, &req);
        if (st == PROTO_EUNFIN) {
            break;
        }
        enum process_result r;
        if (st == PROTO_OK) {
            do {
                r = process_request(&ctx, &sess, &req, &cursor, &exec_out,
                                    1 << 20);
            } while (r == PROCESS_MORE);
        } else {
            r = process_error(&ctx, &sess, &p, st, &req, &exec_out);
        }
        off += consumed;
        if (r == PROCESS_CLOSE) {
            buf_append(&exec_out, "<closed>", 8, SIZE_MAX);
            break;
        }
    }
    ck_assert_int_eq(txn_commit(&batch), TXN_OK);
    return &exec_out;
}

/* _exec_bytes() for text; returns the replies as a string. */
static const char *
_exec(const char *in)
{
    static char reply[1 << 16];
    struct buf *out = _exec_bytes(in, strlen(in));
    size_t n = buf_len(out) < sizeof(reply) - 1 ? buf_len(out)
                                                : sizeof(reply) - 1;
    if (n > 0) {
        memcpy(reply, buf_head(out), n);
    }
    reply[n] = '\0';
    return reply;
}

#define EXPECT(in, want) ck_assert_str_eq(_exec(in), want)

START_TEST(test_set_get_flags)
{
    EXPECT("set a 42 0 5\r\nhello\r\n", "STORED\r\n");
    EXPECT("get a\r\n", "VALUE a 42 5\r\nhello\r\nEND\r\n");
    EXPECT("get a b a\r\n",
           "VALUE a 42 5\r\nhello\r\nVALUE a 42 5\r\nhello\r\nEND\r\n");
    EXPECT("set e 4294967295 0 0\r\n\r\nget e\r\n",
           "STORED\r\nVALUE e 4294967295 0\r\n\r\nEND\r\n");
    EXPECT("get missing\r\n", "END\r\n");
}
END_TEST

START_TEST(test_add_replace)
{
    EXPECT("add a 0 0 1\r\n1\r\n", "STORED\r\n");
    EXPECT("add a 0 0 1\r\n2\r\n", "NOT_STORED\r\n");
    EXPECT("replace b 0 0 1\r\n2\r\n", "NOT_STORED\r\n");
    EXPECT("replace a 3 0 1\r\n2\r\nget a\r\n",
           "STORED\r\nVALUE a 3 1\r\n2\r\nEND\r\n");
    /* An expired item is absent: add succeeds, replace fails. */
    EXPECT("set x 0 -1 1\r\n1\r\n", "STORED\r\n");
    EXPECT("get x\r\n", "END\r\n");
    EXPECT("replace x 0 0 1\r\n2\r\n", "NOT_STORED\r\n");
    EXPECT("add x 0 0 1\r\n3\r\nget x\r\n",
           "STORED\r\nVALUE x 0 1\r\n3\r\nEND\r\n");
}
END_TEST

START_TEST(test_append_prepend)
{
    EXPECT("append a 0 0 1\r\nx\r\n", "NOT_STORED\r\n");
    EXPECT("set a 9 0 5\r\nhello\r\n", "STORED\r\n");
    /* The command's flags are ignored; the item keeps its own. */
    EXPECT("append a 1 0 6\r\n world\r\nget a\r\n",
           "STORED\r\nVALUE a 9 11\r\nhello world\r\nEND\r\n");
    EXPECT("prepend a 0 0 2\r\n>>\r\nget a\r\n",
           "STORED\r\nVALUE a 9 13\r\n>>hello world\r\nEND\r\n");
    EXPECT("append a 0 0 0\r\n\r\n", "STORED\r\n");
    /* Growing past the item size limit is refused. */
    char big[2100];
    char req[2200];
    memset(big, 'x', 2040);
    big[2040] = '\0';
    snprintf(req, sizeof(req), "append a 0 0 2040\r\n%s\r\n", big);
    EXPECT(req, "SERVER_ERROR object too large for cache\r\n");
}
END_TEST

START_TEST(test_cas)
{
    EXPECT("cas a 0 0 1 1\r\nx\r\n", "NOT_FOUND\r\n");
    EXPECT("set a 0 0 1\r\nx\r\n", "STORED\r\n");
    const char *r = _exec("gets a\r\n");
    unsigned long long unique = 0;
    ck_assert_int_eq(sscanf(r, "VALUE a 0 1 %llu", &unique), 1);
    ck_assert_uint_gt(unique, 0);
    char req[128];
    snprintf(req, sizeof(req), "cas a 5 0 1 %llu\r\ny\r\n", unique);
    EXPECT(req, "STORED\r\n");
    EXPECT(req, "EXISTS\r\n");
    EXPECT("cas a 0 0 1 0\r\nz\r\n", "EXISTS\r\n");
    EXPECT("get a\r\n", "VALUE a 5 1\r\ny\r\nEND\r\n");
    ck_assert_uint_eq(stats_get(&counters, STATS_CAS_HITS), 1);
    ck_assert_uint_eq(stats_get(&counters, STATS_CAS_BADVAL), 2);
    ck_assert_uint_eq(stats_get(&counters, STATS_CAS_MISSES), 1);
}
END_TEST

START_TEST(test_cas_changes_on_every_store)
{
    unsigned long long c1 = 0, c2 = 0, c3 = 0;
    EXPECT("set a 0 0 1\r\n1\r\n", "STORED\r\n");
    sscanf(_exec("gets a\r\n"), "VALUE a 0 1 %llu", &c1);
    EXPECT("incr a 1\r\n", "2\r\n");
    sscanf(_exec("gets a\r\n"), "VALUE a 0 1 %llu", &c2);
    ck_assert_uint_ne(c1, c2);
    /* touch keeps the cas, as in memcached. */
    EXPECT("touch a 100\r\n", "TOUCHED\r\n");
    sscanf(_exec("gets a\r\n"), "VALUE a 0 1 %llu", &c3);
    ck_assert_uint_eq(c2, c3);
}
END_TEST

START_TEST(test_incr_decr)
{
    EXPECT("incr n 1\r\n", "NOT_FOUND\r\n");
    EXPECT("set n 3 0 1\r\n0\r\n", "STORED\r\n");
    EXPECT("incr n 10\r\nget n\r\n", "10\r\nVALUE n 3 2\r\n10\r\nEND\r\n");
    /* A shorter result is padded with spaces to the old length. */
    EXPECT("decr n 1\r\nget n\r\n", "9\r\nVALUE n 3 2\r\n9 \r\nEND\r\n");
    EXPECT("decr n 100\r\n", "0\r\n");
    EXPECT("set m 0 0 20\r\n18446744073709551615\r\nincr m 2\r\n",
           "STORED\r\n1\r\n");
    EXPECT("set s 0 0 3\r\nabc\r\nincr s 1\r\n",
           "STORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric "
           "value\r\n");
    EXPECT("set s 0 0 3\r\n-12\r\nincr s 1\r\n",
           "STORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric "
           "value\r\n");
    EXPECT("set s 0 0 0\r\n\r\nincr s 1\r\n",
           "STORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric "
           "value\r\n");
    EXPECT("set s 0 0 3\r\n 12\r\nincr s 1\r\n", "STORED\r\n13\r\n");
    EXPECT("set s 0 0 21\r\n000000000000000000012\r\nincr s 1\r\n",
           "STORED\r\n13\r\n");
    EXPECT("incr s abc\r\n", "CLIENT_ERROR invalid numeric delta argument\r\n");
    EXPECT("incr s 1 noreply\r\nget s\r\n",
           "VALUE s 0 21\r\n14                   \r\nEND\r\n");
}
END_TEST

START_TEST(test_delete)
{
    EXPECT("delete a\r\n", "NOT_FOUND\r\n");
    EXPECT("set a 0 0 1\r\nx\r\ndelete a\r\nget a\r\n",
           "STORED\r\nDELETED\r\nEND\r\n");
    EXPECT("set a 0 0 1\r\nx\r\ndelete a 0 noreply\r\nget a\r\n",
           "STORED\r\nEND\r\n");
    EXPECT("delete a 5\r\n", "CLIENT_ERROR bad command line format.  "
                             "Usage: delete <key> [noreply]\r\n");
}
END_TEST

START_TEST(test_touch_gat)
{
    EXPECT("touch a 10\r\n", "NOT_FOUND\r\n");
    EXPECT("set a 1 0 1\r\nx\r\ntouch a 10\r\n", "STORED\r\nTOUCHED\r\n");
    EXPECT("gat 100 a b\r\n", "VALUE a 1 1\r\nx\r\nEND\r\n");
    const char *r = _exec("gats 100 a\r\n");
    ck_assert(strncmp(r, "VALUE a 1 1 ", 12) == 0);
    /* gat with a negative exptime returns the value, then it is gone. */
    EXPECT("gat -1 a\r\n", "VALUE a 1 1\r\nx\r\nEND\r\n");
    EXPECT("get a\r\n", "END\r\n");
    EXPECT("gat 10\r\n", "END\r\n");
    EXPECT("set b 0 0 1\r\ny\r\ntouch b -1\r\nget b\r\n",
           "STORED\r\nTOUCHED\r\nEND\r\n");
}
END_TEST

START_TEST(test_absolute_exptime)
{
    char req[128];
    snprintf(req, sizeof(req), "set a 0 %lld 1\r\nx\r\nget a\r\n",
             (long long)util_now_s() + 3600);
    EXPECT(req, "STORED\r\nVALUE a 0 1\r\nx\r\nEND\r\n");
    snprintf(req, sizeof(req), "set a 0 %lld 1\r\nx\r\nget a\r\n",
             (long long)util_now_s() - 10);
    EXPECT(req, "STORED\r\nEND\r\n");
}
END_TEST

START_TEST(test_flush_all)
{
    EXPECT("set a 0 0 1\r\nx\r\nset b 0 0 1\r\ny\r\n", "STORED\r\nSTORED\r\n");
    EXPECT("flush_all\r\n", "OK\r\n");
    EXPECT("get a b\r\n", "END\r\n");
    /* Items stored right after an immediate flush survive it. */
    EXPECT("set c 0 0 1\r\nz\r\nget c\r\n", "STORED\r\nVALUE c 0 1\r\nz\r\nEND\r\n");
    /* A delayed flush leaves everything visible until its deadline. */
    EXPECT("flush_all 100\r\nget c\r\n", "OK\r\nVALUE c 0 1\r\nz\r\nEND\r\n");
    EXPECT("flush_all noreply\r\nget c\r\n", "END\r\n");
    EXPECT("flush_all x\r\n", "CLIENT_ERROR invalid exptime argument\r\n");
    ck_assert_uint_eq(stats_get(&counters, STATS_CMD_FLUSH), 3);
}
END_TEST

START_TEST(test_noreply_silences_everything)
{
    EXPECT("set a 0 0 1 noreply\r\nx\r\n", "");
    EXPECT("add a 0 0 1 noreply\r\nx\r\n", "");
    EXPECT("incr a 1 noreply\r\n", "");
    EXPECT("touch a 1 noreply\r\n", "");
    EXPECT("set a 0 0 1 noreply\r\nxy\r\n", "ERROR\r\n");
    EXPECT("set b 0 0 9999 noreply\r\n", "");
    EXPECT("verbosity 1 noreply\r\n", "");
    ck_assert_int_eq(verbosity_seen, 1);
}
END_TEST

START_TEST(test_too_large_set_drops_old_value)
{
    char req[4200];
    EXPECT("set a 0 0 1\r\nx\r\nset b 0 0 1\r\ny\r\n", "STORED\r\nSTORED\r\n");
    int n = snprintf(req, sizeof(req), "set a 0 0 3000\r\n");
    memset(req + n, 'v', 3000);
    snprintf(req + n + 3000, sizeof(req) - (size_t)n - 3000, "\r\nget a\r\n");
    EXPECT(req, "SERVER_ERROR object too large for cache\r\nEND\r\n");
    /* Only set does that; add leaves the old value alone. */
    n = snprintf(req, sizeof(req), "add b 0 0 3000\r\n");
    memset(req + n, 'v', 3000);
    snprintf(req + n + 3000, sizeof(req) - (size_t)n - 3000, "\r\nget b\r\n");
    EXPECT(req, "SERVER_ERROR object too large for cache\r\n"
                "VALUE b 0 1\r\ny\r\nEND\r\n");
    ck_assert_uint_eq(stats_get(&counters, STATS_STORE_TOO_LARGE), 2);
}
END_TEST

START_TEST(test_misc_commands)
{
    char want[64];
    snprintf(want, sizeof(want), "VERSION 1.6.18-kura-%s\r\n", PACKAGE_VERSION);
    EXPECT("version\r\n", want);
    EXPECT("verbosity 0\r\n", "OK\r\n");
    EXPECT("quit\r\n", "<closed>");
    EXPECT("stats reset\r\n", "RESET\r\n");
    ck_assert_int_eq(resets, 1);
    EXPECT("stats items\r\n", "END\r\n");
    EXPECT("stats sizes\r\n", "STAT sizes_status disabled\r\nEND\r\n");
    EXPECT("stats noreply\r\n", "ERROR\r\n");
    EXPECT("stats bogus\r\n", "ERROR\r\n");
    const char *r = _exec("stats\r\n");
    ck_assert(strstr(r, "STAT pid ") != NULL);
    ck_assert(strstr(r, "STAT cmd_get ") != NULL);
    ck_assert(strstr(r, "STAT curr_items ") != NULL);
    ck_assert(strstr(r, "\r\nEND\r\n") != NULL);
    r = _exec("stats settings\r\n");
    ck_assert(strstr(r, "STAT item_size_max 2048\r\n") != NULL);
    EXPECT("bogus\r\n", "ERROR\r\n");
}
END_TEST

START_TEST(test_stats_counters)
{
    _exec("set a 0 0 1\r\n1\r\nget a b\r\nincr a 1\r\ndecr z 1\r\n"
          "delete a\r\ndelete a\r\ntouch q 1\r\n");
    ck_assert_uint_eq(stats_get(&counters, STATS_CMD_SET), 1);
    ck_assert_uint_eq(stats_get(&counters, STATS_CMD_GET), 2);
    ck_assert_uint_eq(stats_get(&counters, STATS_GET_HITS), 1);
    ck_assert_uint_eq(stats_get(&counters, STATS_GET_MISSES), 1);
    ck_assert_uint_eq(stats_get(&counters, STATS_INCR_HITS), 1);
    ck_assert_uint_eq(stats_get(&counters, STATS_DECR_MISSES), 1);
    ck_assert_uint_eq(stats_get(&counters, STATS_DELETE_HITS), 1);
    ck_assert_uint_eq(stats_get(&counters, STATS_DELETE_MISSES), 1);
    ck_assert_uint_eq(stats_get(&counters, STATS_TOUCH_MISSES), 1);
    ck_assert_uint_eq(stats_get(&counters, STATS_CMD_TOUCH), 1);
}
END_TEST

START_TEST(test_multiget_resumes_at_watermark)
{
    /* A get whose reply exceeds the watermark stops and resumes. */
    struct proto_parser p;
    struct proto_limits limits = {2048, 65536, settings.item_max, true};
    struct proto_request req;
    struct buf out;
    size_t consumed;
    size_t cursor = 0;
    int rounds = 0;
    const char *in = "get a a a a a a a a a a\r\n";

    _exec("set a 0 0 100\r\n"
          "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
          "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\r\n");
    proto_parser_init(&p, &limits);
    buf_init(&out);
    ck_assert_int_eq(proto_parse(&p, in, strlen(in), &consumed, &req),
                     PROTO_OK);
    enum process_result r;
    do {
        r = process_request(&ctx, &sess, &req, &cursor, &out, 250);
        ck_assert_uint_le(buf_len(&out), 250 + 120);
        buf_reset(&out); /* the client read it */
        rounds++;
    } while (r == PROCESS_MORE);
    ck_assert_int_eq(r, PROCESS_DONE);
    ck_assert_int_ge(rounds, 4);
    buf_deinit(&out);
}
END_TEST

START_TEST(test_masked_commands)
{
    static const char *const argv[] = {"kurad", "-mask", "allwrite",
                                       "-unmask", "put", "*", NULL};
    _teardown();
    _setup_with(argv);
    EXPECT("set a 0 0 1\r\nx\r\n", "STORED\r\n");
    EXPECT("add b 0 0 1\r\nx\r\n", "CLIENT_ERROR add not allowed\r\n");
    EXPECT("flush_all\r\n", "CLIENT_ERROR flush_all not allowed\r\n");
    EXPECT("delete a\r\n", "CLIENT_ERROR delete not allowed\r\n");
    EXPECT("get a\r\n", "VALUE a 0 1\r\nx\r\nEND\r\n");
    ck_assert_uint_eq(stats_get(&counters, STATS_CMD_DENIED), 3);
}
END_TEST

START_TEST(test_records_carry_sid_and_ts)
{
    struct txn_current cur;
    uint64_t before = util_now_us();
    _exec("set a 5 0 1\r\nx\r\n");
    ck_assert_int_eq(txn_read(&batch, "a", 1, &cur), TXN_OK);
    ck_assert(cur.found);
    ck_assert_uint_eq(cur.meta.sid, 7);
    ck_assert_uint_ge(cur.meta.ts, before);
    ck_assert_uint_eq(cur.meta.flags, 5);
    txn_current_release(&cur);
}
END_TEST

static Suite *
process_suite(void)
{
    Suite *s = suite_create("process");
    TCase *tc = tcase_create("commands");
    tcase_add_checked_fixture(tc, _setup, _teardown);
    tcase_add_test(tc, test_set_get_flags);
    tcase_add_test(tc, test_add_replace);
    tcase_add_test(tc, test_append_prepend);
    tcase_add_test(tc, test_cas);
    tcase_add_test(tc, test_cas_changes_on_every_store);
    tcase_add_test(tc, test_incr_decr);
    tcase_add_test(tc, test_delete);
    tcase_add_test(tc, test_touch_gat);
    tcase_add_test(tc, test_absolute_exptime);
    tcase_add_test(tc, test_flush_all);
    tcase_add_test(tc, test_noreply_silences_everything);
    tcase_add_test(tc, test_too_large_set_drops_old_value);
    tcase_add_test(tc, test_misc_commands);
    tcase_add_test(tc, test_stats_counters);
    tcase_add_test(tc, test_multiget_resumes_at_watermark);
    tcase_add_test(tc, test_masked_commands);
    tcase_add_test(tc, test_records_carry_sid_and_ts);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(process_suite)
