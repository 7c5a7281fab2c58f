/*
 * Unit tests: the protocol parser. Every error path, the limits, and the
 * same input fed whole, one byte at a time and in random splits.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "unit_main.h"

static const struct proto_limits limits = {
    .max_line = 2048, .max_get_line = 65536, .item_max = 1024};

static const char *const err_names[PROTO_ERR_COUNT] = {
    [PROTO_ERR_NONE] = "NONE",
    [PROTO_ERR_UNKNOWN_COMMAND] = "UNKNOWN",
    [PROTO_ERR_FORMAT] = "FORMAT",
    [PROTO_ERR_DELETE_USAGE] = "DELETE_USAGE",
    [PROTO_ERR_EXPTIME] = "EXPTIME",
    [PROTO_ERR_DELTA] = "DELTA",
    [PROTO_ERR_TOO_LARGE] = "TOO_LARGE",
    [PROTO_ERR_BAD_CHUNK] = "BAD_CHUNK",
    [PROTO_ERR_NON_NUMERIC] = "NON_NUMERIC",
    [PROTO_ERR_LINE_TOO_LONG] = "LINE_TOO_LONG",
    [PROTO_ERR_HTTP] = "HTTP",
};

/* Appends a one-line description of a parse result to `trace`. */
static void
_describe(char *trace, size_t cap, enum proto_status st,
          const struct proto_parser *p, const struct proto_request *r)
{
    char line[512];
    size_t n = strlen(trace);

    if (st == PROTO_OK) {
        int w = snprintf(line, sizeof(line), "%s", proto_cmd_name(r->cmd));
        if (r->key != NULL) {
            w += snprintf(line + w, sizeof(line) - (size_t)w, " key=%.*s",
                          (int)r->nkey, r->key);
        }
        if (r->nkeys > 0) {
            w += snprintf(line + w, sizeof(line) - (size_t)w, " nkeys=%u",
                          r->nkeys);
        }
        switch (r->cmd) {
        case PROTO_CMD_SET: case PROTO_CMD_ADD: case PROTO_CMD_REPLACE:
        case PROTO_CMD_APPEND: case PROTO_CMD_PREPEND: case PROTO_CMD_CAS:
            w += snprintf(line + w, sizeof(line) - (size_t)w,
                          " flags=%u exp=%lld val=%.*s", r->flags,
                          (long long)r->exptime, (int)r->vlen, r->value);
            if (r->cmd == PROTO_CMD_CAS) {
                w += snprintf(line + w, sizeof(line) - (size_t)w, " unique=%llu",
                              (unsigned long long)r->cas_unique);
            }
            break;
        case PROTO_CMD_GAT: case PROTO_CMD_GATS: case PROTO_CMD_TOUCH:
            w += snprintf(line + w, sizeof(line) - (size_t)w, " exp=%lld",
                          (long long)r->exptime);
            break;
        case PROTO_CMD_INCR: case PROTO_CMD_DECR:
            w += snprintf(line + w, sizeof(line) - (size_t)w, " delta=%llu",
                          (unsigned long long)r->delta);
            break;
        case PROTO_CMD_FLUSH_ALL:
            w += snprintf(line + w, sizeof(line) - (size_t)w, " delay=%lld",
                          (long long)r->delay);
            break;
        case PROTO_CMD_VERBOSITY:
            w += snprintf(line + w, sizeof(line) - (size_t)w, " level=%u",
                          r->level);
            break;
        case PROTO_CMD_STATS:
            w += snprintf(line + w, sizeof(line) - (size_t)w, " args=%.*s",
                          (int)r->args_len, r->args);
            break;
        default:
            break;
        }
        if (r->noreply) {
            snprintf(line + w, sizeof(line) - (size_t)w, " noreply");
        }
    } else {
        snprintf(line, sizeof(line), "%s %s%s",
                 st == PROTO_ECLOSE ? "CLOSE" : "ERR", err_names[p->error],
                 p->error_noreply ? " noreply" : "");
    }
    snprintf(trace + n, cap - n, "%s|", line);
}

/*
 * Feeds `in` to a parser the way a connection does, `chunk` bytes at a
 * time (0 = all at once), and returns the trace of results.
 */
static char *
_run(const char *in, size_t len, size_t chunk)
{
    static char trace[1 << 16];
    char *buf = malloc(len + 1);
    size_t have = 0;
    size_t fed = 0;
    struct proto_parser p;

    trace[0] = '\0';
    proto_parser_init(&p, &limits);
    for (;;) {
        size_t step = chunk == 0 ? len - fed : chunk;
        if (step > len - fed) {
            step = len - fed;
        }
        memcpy(buf + have, in + fed, step);
        have += step;
        fed += step;
        for (;;) {
            struct proto_request r;
            size_t consumed;
            enum proto_status st = proto_parse(&p, buf, have, &consumed, &r);
            if (st == PROTO_EUNFIN) {
                memmove(buf, buf + consumed, have - consumed);
                have -= consumed;
                break;
            }
            _describe(trace, sizeof(trace), st, &p, &r);
            memmove(buf, buf + consumed, have - consumed);
            have -= consumed;
            if (st == PROTO_ECLOSE) {
                free(buf);
                return trace;
            }
        }
        if (fed == len) {
            break;
        }
    }
    if (have > 0) {
        size_t n = strlen(trace);
        snprintf(trace + n, sizeof(trace) - n, "PENDING %zu|", have);
    }
    free(buf);
    return trace;
}

static void
_expect(const char *in, const char *trace)
{
    size_t len = strlen(in);
    char whole[1 << 16];
    snprintf(whole, sizeof(whole), "%s", _run(in, len, 0));
    ck_assert_msg(strcmp(whole, trace) == 0, "input [%s]\n got  [%s]\n want [%s]",
                  in, whole, trace);
    /* The same bytes one at a time, and in odd splits, parse identically. */
    ck_assert_str_eq(_run(in, len, 1), trace);
    ck_assert_str_eq(_run(in, len, 3), trace);
    ck_assert_str_eq(_run(in, len, 7), trace);
}

START_TEST(test_storage_commands)
{
    _expect("set foo 5 100 3\r\nbar\r\n", "set key=foo flags=5 exp=100 val=bar|");
    _expect("add a 0 0 0\r\n\r\n", "add key=a flags=0 exp=0 val=|");
    _expect("replace a 1 -1 2 noreply\r\nxy\r\n",
            "replace key=a flags=1 exp=-1 val=xy noreply|");
    _expect("append a 0 0 1\r\nz\r\nprepend a 0 0 1\r\ny\r\n",
            "append key=a flags=0 exp=0 val=z|prepend key=a flags=0 exp=0 "
            "val=y|");
    _expect("cas a 0 0 1 99\r\nq\r\n",
            "cas key=a flags=0 exp=0 val=q unique=99|");
    /* Data may contain CR, LF and NUL-free binary; only length counts. */
    _expect("set b 0 0 4\r\n\r\n\r\n\r\n", "set key=b flags=0 exp=0 val=\r\n\r\n|");
    /* A bare LF ends the command line; the data still needs CRLF. */
    _expect("set c 0 0 1\nx\r\n", "set key=c flags=0 exp=0 val=x|");
    /* An unrecognised last word in the optional slot is ignored. */
    _expect("set d 0 0 1 foo\r\nx\r\n", "set key=d flags=0 exp=0 val=x|");
}
END_TEST

START_TEST(test_number_quirks_follow_memcached)
{
    /* flags are read as 64-bit and truncated to 32 bits. */
    _expect("set k 4294967297 0 1\r\nx\r\n", "set key=k flags=1 exp=0 val=x|");
    _expect("set k +5 0 1\r\nx\r\n", "set key=k flags=5 exp=0 val=x|");
    /* exptime is truncated to int32. */
    _expect("set k 0 4294967296 1\r\nx\r\n", "set key=k flags=0 exp=0 val=x|");
    /* Leading zeros are fine. */
    _expect("incr k 00005\r\n", "incr key=k delta=5|");
}
END_TEST

START_TEST(test_storage_errors)
{
    /* Wrong word count: ERROR, and the data line is then a command. */
    _expect("set k 0 0\r\nx\r\n", "ERR UNKNOWN|ERR UNKNOWN|");
    _expect("set k 0 0 1 noreply extra\r\n", "ERR UNKNOWN|");
    /* Unreadable length: the data cannot be skipped. */
    _expect("set k 0 0 -1\r\n", "ERR FORMAT|");
    _expect("set k 0 0 abc\r\n", "ERR FORMAT|");
    _expect("set k 0 0 99999999999999999999\r\n", "ERR FORMAT|");
    _expect("set k 0 0 2147483647\r\n", "ERR FORMAT|");
    _expect("set k 0 0 -1 noreply\r\n", "ERR FORMAT noreply|");
    /* Length known: a rejected request swallows its data block. */
    _expect("set k -1 0 1\r\nx\r\nversion\r\n", "ERR FORMAT|version|");
    _expect("set k 0 x 1\r\nx\r\nversion\r\n", "ERR FORMAT|version|");
    _expect("cas k 0 0 1 -1\r\nx\r\nversion\r\n", "ERR FORMAT|version|");
    _expect("set k 0 0 2000\r\n", "ERR TOO_LARGE|");
    /* Too large: exactly bytes+2 are swallowed, whatever they hold. */
    char big[2200];
    memset(big, 'A', sizeof(big));
    int n = snprintf(big, sizeof(big), "set k 0 0 1025\r\n");
    big[n] = 'A';
    memcpy(big + n + 1025, "\r\nversion\r\n", 12);
    _expect(big, "ERR TOO_LARGE|version|");
    _expect("set k 0 0 1025 noreply\r\n", "ERR TOO_LARGE noreply|");
}
END_TEST

START_TEST(test_bad_data_chunk)
{
    /* bytes+2 are consumed; what follows is parsed as commands. */
    _expect("set a 0 0 1\r\nxy\r\n", "ERR BAD_CHUNK|ERR UNKNOWN|");
    _expect("set a 0 0 1\r\nxyzzy\r\n", "ERR BAD_CHUNK|ERR UNKNOWN|");
    _expect("set a 0 0 1 noreply\r\nxy\r\nversion\r\n",
            "ERR BAD_CHUNK noreply|ERR UNKNOWN|version|");
}
END_TEST

START_TEST(test_keys)
{
    char line[600];
    char key[300];

    memset(key, 'k', 250);
    key[250] = '\0';
    snprintf(line, sizeof(line), "get %s\r\n", key);
    _expect(line, "get key=kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"
                  "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"
                  "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"
                  "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"
                  "kkkkkkkkkkkkkkkkkkkkkkkkkkkk nkeys=1|");
    key[250] = 'k';
    key[251] = '\0';
    snprintf(line, sizeof(line), "get a %s\r\n", key);
    _expect(line, "ERR FORMAT|");
    snprintf(line, sizeof(line), "set %s 0 0 1\r\nx\r\nversion\r\n", key);
    _expect(line, "ERR FORMAT|version|");
    snprintf(line, sizeof(line), "delete %s\r\n", key);
    _expect(line, "ERR FORMAT|");
    /* Control characters are refused in keys (memcached accepts them). */
    _expect("get a\tb\r\n", "ERR FORMAT|");
    _expect("set a\x01 0 0 1\r\nx\r\nversion\r\n", "ERR FORMAT|version|");
    _expect("incr a\x7f 1\r\n", "ERR FORMAT|");
    /* Bytes >= 0x80 are fine. */
    _expect("get \xc3\xa9t\xc3\xa9\r\n", "get key=\xc3\xa9t\xc3\xa9 nkeys=1|");
}
END_TEST

START_TEST(test_retrieval)
{
    _expect("get a b  c\r\n", "get key=a nkeys=3|");
    _expect("gets a\r\n", "gets key=a nkeys=1|");
    _expect("gat 10 a b\r\n", "gat key=a nkeys=2 exp=10|");
    _expect("gats -1 a\r\n", "gats key=a nkeys=1 exp=-1|");
    _expect("get\r\n", "ERR UNKNOWN|");
    _expect("get   \r\n", "ERR UNKNOWN|");
    _expect("gat\r\n", "ERR UNKNOWN|");
    _expect("gat 10\r\n", "gat exp=10|"); /* answered with END */
    _expect("gat abc a\r\n", "ERR EXPTIME|");
    _expect("gat a 10\r\n", "ERR EXPTIME|");
    /* "noreply" is just a key for get. */
    _expect("get a noreply\r\n", "get key=a nkeys=2|");
}
END_TEST

START_TEST(test_other_commands)
{
    _expect("delete a\r\n", "delete key=a|");
    _expect("delete a 0\r\n", "delete key=a|");
    _expect("delete a noreply\r\n", "delete key=a noreply|");
    _expect("delete a 0 noreply\r\n", "delete key=a noreply|");
    _expect("delete a 1\r\n", "ERR DELETE_USAGE|");
    _expect("delete a b noreply\r\n", "ERR DELETE_USAGE noreply|");
    _expect("delete\r\n", "ERR UNKNOWN|");
    _expect("delete a b c d e\r\n", "ERR UNKNOWN|");
    _expect("incr a 5\r\n", "incr key=a delta=5|");
    _expect("decr a 18446744073709551615 noreply\r\n",
            "decr key=a delta=18446744073709551615 noreply|");
    _expect("incr a -1\r\n", "ERR DELTA|");
    _expect("incr a 18446744073709551616\r\n", "ERR DELTA|");
    _expect("incr a\r\n", "ERR UNKNOWN|");
    _expect("touch a 10\r\n", "touch key=a exp=10|");
    _expect("touch a x\r\n", "ERR EXPTIME|");
    _expect("touch a\r\n", "ERR UNKNOWN|");
    _expect("flush_all\r\n", "flush_all delay=0|");
    _expect("flush_all 30\r\n", "flush_all delay=30|");
    _expect("flush_all -1 noreply\r\n", "flush_all delay=-1 noreply|");
    _expect("flush_all noreply\r\n", "flush_all delay=0 noreply|");
    _expect("flush_all abc\r\n", "ERR EXPTIME|");
    _expect("flush_all noreply 5\r\n", "ERR EXPTIME|");
    _expect("flush_all 1 2 3\r\n", "ERR UNKNOWN|");
    _expect("verbosity 1\r\n", "verbosity level=1|");
    _expect("verbosity 1 noreply\r\n", "verbosity level=1 noreply|");
    _expect("verbosity noreply\r\n", "ERR FORMAT noreply|");
    _expect("verbosity foo\r\n", "ERR FORMAT|");
    _expect("verbosity\r\n", "ERR UNKNOWN|");
    _expect("verbosity foo bar my\r\n", "ERR UNKNOWN|");
    _expect("version\r\n", "version|");
    _expect("version foo bar\r\n", "version|");
    _expect("quit\r\n", "quit|");
    _expect("stats\r\n", "stats args=|");
    _expect("stats settings \r\n", "stats args=settings|");
    _expect("stats detail dump\r\n", "stats args=detail dump|");
}
END_TEST

START_TEST(test_unknown_and_empty)
{
    _expect("\r\n", "ERR UNKNOWN|");
    _expect("    \r\n", "ERR UNKNOWN|");
    _expect("VERSION\r\n", "ERR UNKNOWN|");
    _expect("bogus a b c\r\n", "ERR UNKNOWN|");
    _expect("\n", "ERR UNKNOWN|");
    /* Only one CR is stripped. */
    _expect("version\r\r\n", "ERR UNKNOWN|");
    /* An HTTP request line closes the connection without a reply. */
    _expect("GET / HTTP/1.1\r\nHost: x\r\n", "CLOSE HTTP|");
    /* An incomplete line waits. */
    _expect("versio", "PENDING 6|");
}
END_TEST

START_TEST(test_pipelined)
{
    _expect("set a 0 0 1\r\n1\r\nget a\r\nincr a 1\r\ndelete a\r\nversion\r\n",
            "set key=a flags=0 exp=0 val=1|get key=a nkeys=1|"
            "incr key=a delta=1|delete key=a|version|");
}
END_TEST

START_TEST(test_line_limits)
{
    /* memcached's rule: 2048 bytes without a newline close the stream. */
    static char in[70000];
    memset(in, 'x', 2049);
    in[2049] = '\0';
    ck_assert_str_eq(_run(in, 2049, 0), "PENDING 2049|");
    memset(in, 'x', 2050);
    ck_assert_str_eq(_run(in, 2050, 0), "CLOSE LINE_TOO_LONG|");
    ck_assert_str_eq(_run(in, 2050, 1), "CLOSE LINE_TOO_LONG|");
    /* A get line may be longer, up to max_get_line. */
    size_t n = (size_t)snprintf(in, sizeof(in), "get");
    while (n < 60000) {
        n += (size_t)snprintf(in + n, sizeof(in) - n, " key%zu", n);
    }
    memcpy(in + n, "\r\n", 2);
    n += 2;
    const char *t = _run(in, n, 0);
    ck_assert_msg(strncmp(t, "get key=key3 nkeys=", 19) == 0, "%s", t);
    ck_assert_str_eq(_run(in, n, 4096), t);
    /* ... but not beyond. */
    memset(in, 'k', sizeof(in));
    memcpy(in, "get ", 4);
    ck_assert_str_eq(_run(in, 65538, 0), "CLOSE LINE_TOO_LONG|");
}
END_TEST

START_TEST(test_need_hint)
{
    struct proto_parser p;
    struct proto_request r;
    size_t consumed;
    const char *in = "set k 0 0 100\r\nabc";

    proto_parser_init(&p, &limits);
    ck_assert_int_eq(proto_parse(&p, in, strlen(in), &consumed, &r),
                     PROTO_EUNFIN);
    ck_assert_uint_eq(consumed, 0);
    ck_assert_uint_eq(p.need, 15 + 100 + 2);
}
END_TEST

START_TEST(test_random_bytes_never_crash)
{
    /* Whatever arrives, the parser ends in a defined state. */
    static char in[1 << 16];
    unsigned seed = 12345;
    for (int round = 0; round < 200; round++) {
        size_t len = (size_t)(rand_r(&seed) % sizeof(in));
        for (size_t i = 0; i < len; i++) {
            int r = rand_r(&seed);
            /* Mix in protocol-looking bytes so deeper paths get hit. */
            static const char pool[] = "set get 0 1 \r\n noreply cas 99";
            in[i] = (r & 3) == 0 ? pool[(size_t)r % (sizeof(pool) - 1)]
                                 : (char)r;
        }
        _run(in, len, (size_t)(rand_r(&seed) % 64));
    }
}
END_TEST

START_TEST(test_next_key)
{
    struct proto_request r;
    memset(&r, 0, sizeof(r));
    r.keys = "  a  bb ccc ";
    r.keys_len = strlen(r.keys);
    size_t pos = 0;
    const char *k;
    size_t n;
    ck_assert(proto_next_key(&r, &pos, &k, &n) && n == 1 && k[0] == 'a');
    ck_assert(proto_next_key(&r, &pos, &k, &n) && n == 2);
    ck_assert(proto_next_key(&r, &pos, &k, &n) && n == 3);
    ck_assert(!proto_next_key(&r, &pos, &k, &n));
}
END_TEST

/* The first byte picks the protocol; bytes no client starts with are
 * refused at once. */
START_TEST(test_detect_first_byte)
{
    struct proto_parser p;
    enum proto_kind kind;
    proto_parser_init(&p, &limits);
    ck_assert_int_eq(proto_detect(&p, 0x80, &kind), PROTO_OK);
    ck_assert_int_eq(kind, PROTO_KIND_BINARY);
    static const unsigned char text[] = {'g', 's', 'm', 'R', ' ', '\r', '\n',
                                         '\t', '0', '~'};
    for (size_t i = 0; i < sizeof(text); i++) {
        ck_assert_int_eq(proto_detect(&p, text[i], &kind), PROTO_OK);
        ck_assert_int_eq(kind, PROTO_KIND_TEXT);
    }
    static const unsigned char refused[] = {0x00, 0x01, 0x16, 0x1f, 0x7f,
                                            0x81, 0xc0, 0xff};
    for (size_t i = 0; i < sizeof(refused); i++) {
        p.error = PROTO_ERR_NONE;
        ck_assert_int_eq(proto_detect(&p, refused[i], &kind), PROTO_ECLOSE);
        ck_assert_int_eq(p.error, PROTO_ERR_UNKNOWN_COMMAND);
        ck_assert(!p.error_noreply);
    }
}
END_TEST

static Suite *
proto_suite(void)
{
    Suite *s = suite_create("proto");
    TCase *tc = tcase_create("commands");
    tcase_add_test(tc, test_storage_commands);
    tcase_add_test(tc, test_number_quirks_follow_memcached);
    tcase_add_test(tc, test_retrieval);
    tcase_add_test(tc, test_other_commands);
    tcase_add_test(tc, test_pipelined);
    tcase_add_test(tc, test_next_key);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, test_storage_errors);
    tcase_add_test(tc, test_bad_data_chunk);
    tcase_add_test(tc, test_keys);
    tcase_add_test(tc, test_unknown_and_empty);
    tcase_add_test(tc, test_line_limits);
    tcase_add_test(tc, test_need_hint);
    tcase_add_test(tc, test_random_bytes_never_crash);
    tcase_add_test(tc, test_detect_first_byte);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(proto_suite)
