/*
 * Unit tests: the reply writers (reply.h) for the text protocol and the
 * meta commands, and what the front (reply.c) adds by itself. Requests are
 * built the way proto_text.c and proto_meta.c leave them, and each reply
 * is compared byte for byte with what memcached 1.6.18 sent for the same
 * request (captured from the reference server; tests/conformance has the
 * exchanges), or, for kura's own lines, with what doc/protocol.md says.
 *
 * noreply and q are pinned as memcached 1.6.18 has them: text noreply
 * silences every reply of the command, errors included (its out_string
 * drops whatever it is given under noreply); meta q silences only the
 * usual result (EN of mg, HD of ms/md/ma, ma's VA), never NS, EX, NF or
 * an error line.
 *
 * Also: a reply that cannot grow the output buffer returns false, as
 * reply.h says, and leaves the bytes already in it alone. Binary frames
 * are in check_reply_bin.c, HTTP responses in check_reply_http.c.
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "buf.h"
#include "proto.h"
#include "reply.h"
#include "reply_fixture.h"
#include "unit_main.h"

/* A text request as proto_text.c leaves it: the command, key, noreply. */
static void
_text(struct proto_request *r, enum proto_cmd cmd, bool noreply)
{
    memset(r, 0, sizeof(*r));
    r->cmd = cmd;
    r->kind = PROTO_KIND_TEXT;
    r->noreply = noreply;
    r->key = "k";
    r->nkey = 1;
}

/*
 * A meta request as proto_meta.c leaves it: every flag letter of `flags`
 * in the client's order (q, v and b also set their booleans; q sets
 * noreply), `opaque` the O token without its O, and the key, decoded into
 * keybuf when it came in base64.
 */
static void
_meta(struct proto_request *r, enum proto_cmd cmd, const char *key,
      const char *flags, const char *opaque)
{
    memset(r, 0, sizeof(*r));
    r->cmd = cmd;
    r->kind = PROTO_KIND_META;
    size_t n = strlen(flags);
    ck_assert_uint_le(n, PROTO_META_FLAGS_MAX);
    memcpy(r->meta.order, flags, n);
    r->meta.norder = (uint8_t)n;
    r->meta.quiet = strchr(flags, 'q') != NULL;
    r->meta.value = strchr(flags, 'v') != NULL;
    r->meta.base64 = strchr(flags, 'b') != NULL;
    r->noreply = r->meta.quiet;
    r->nkey = strlen(key);
    if (r->meta.base64) {
        memcpy(r->keybuf, key, r->nkey);
        r->key = r->keybuf;
    } else {
        r->key = key;
    }
    r->meta.opaque = opaque;
    r->meta.opaque_len = opaque != NULL ? strlen(opaque) : 0;
}

/* An item found under `key`: `value` as a string, no ttl, unknown hit. */
static struct reply_item
_item(const char *key, uint32_t flags, const char *value, uint64_t cas)
{
    struct reply_item it = {
        .key = key,
        .nkey = strlen(key),
        .flags = flags,
        .value = value,
        .vlen = value != NULL ? strlen(value) : 0,
        .cas = cas,
        .ttl = -1,
        .hit = -1,
    };
    return it;
}

/* --------------------------------------------------------------- text */

/* Every reply_code's text line; memcached's where memcached has one. */
static const struct {
    enum reply_code code;
    const char *line;
} text_lines[] = {
    {REPLY_STORED, "STORED\r\n"},
    {REPLY_NOT_STORED, "NOT_STORED\r\n"},
    {REPLY_EXISTS, "EXISTS\r\n"},
    {REPLY_NOT_FOUND, "NOT_FOUND\r\n"},
    {REPLY_DELETED, "DELETED\r\n"},
    {REPLY_TOUCHED, "TOUCHED\r\n"},
    {REPLY_OK, "OK\r\n"},
    {REPLY_END, "END\r\n"},
    {REPLY_RESET, "RESET\r\n"},
    {REPLY_ERROR, "ERROR\r\n"},
    {REPLY_NON_NUMERIC,
     "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"},
    /* kura's own: durability and storage failures (doc/protocol.md) */
    {REPLY_SERVER_ERROR_IO, "SERVER_ERROR write failed\r\n"},
    {REPLY_SERVER_ERROR_READ, "SERVER_ERROR read failed\r\n"},
    {REPLY_SERVER_ERROR_READONLY,
     "SERVER_ERROR writes disabled after a storage failure\r\n"},
    {REPLY_SERVER_ERROR_OOM, "SERVER_ERROR out of memory\r\n"},
    {REPLY_SERVER_ERROR_NOSPACE, "SERVER_ERROR out of disk space\r\n"},
    {REPLY_TOO_MANY_CONNECTIONS, "ERROR Too many open connections\r\n"},
    {REPLY_REPL_DENIED, "REPL ERROR not allowed\r\n"},
    {REPLY_UNAUTHENTICATED, "CLIENT_ERROR unauthenticated\r\n"},
    {REPLY_AUTH_FAILED, "CLIENT_ERROR authentication failure\r\n"},
    {REPLY_AUTH_MALFORMED, "CLIENT_ERROR bad authentication token format\r\n"},
    {REPLY_TOO_LARGE, "SERVER_ERROR object too large for cache\r\n"},
    {REPLY_NO_SHUTDOWN, "ERROR: shutdown not enabled\r\n"},
    {REPLY_MEMLIMIT_TOO_SMALL,
     "MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m\r\n"},
    {REPLY_MEMLIMIT_NOT_BYTES,
     "MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes\r\n"},
    {REPLY_SLABS_SAME, "SAME src and dst class are identical\r\n"},
    {REPLY_SLABS_BADCLASS, "BADCLASS invalid src or dst class id\r\n"},
};

#define N_TEXT_LINES (sizeof(text_lines) / sizeof(text_lines[0]))

START_TEST(test_text_line_of_every_code)
{
    ck_assert_uint_eq(N_TEXT_LINES, REPLY_CODE_COUNT); /* none forgotten */
    struct buf out;
    buf_init(&out);
    struct proto_request req;
    _text(&req, PROTO_CMD_SET, false);
    for (size_t i = 0; i < N_TEXT_LINES; i++) {
        const char *line = text_lines[i].line;
        ck_assert(reply_text_code(&out, text_lines[i].code));
        EXPECT_BYTES(&out, line, strlen(line));
        ck_assert(reply_result(&out, &req, text_lines[i].code, NULL));
        EXPECT_BYTES(&out, line, strlen(line));
    }
    buf_deinit(&out);
}
END_TEST

START_TEST(test_text_noreply_silences_every_reply)
{
    /*
     * memcached 1.6.18, "set n 0 0 1\r\na\r\n" then "incr n 1 noreply",
     * "set x 0 0 2000000 noreply" with its data, "touch none 0 noreply",
     * "cas none 0 0 1 1 noreply": nothing at all, the errors included.
     */
    struct buf out;
    buf_init(&out);
    struct proto_request req;
    _text(&req, PROTO_CMD_SET, true);
    for (size_t i = 0; i < N_TEXT_LINES; i++) {
        ck_assert(reply_result(&out, &req, text_lines[i].code, NULL));
        EXPECT_NOTHING(&out);
    }
    _text(&req, PROTO_CMD_INCR, true);
    ck_assert(reply_counter(&out, &req, 10, NULL));
    EXPECT_NOTHING(&out);
    _text(&req, PROTO_CMD_SET, true);
    ck_assert(reply_denied(&out, &req));
    EXPECT_NOTHING(&out);
    /* and without noreply the same requests are answered */
    _text(&req, PROTO_CMD_INCR, false);
    ck_assert(reply_result(&out, &req, REPLY_NON_NUMERIC, NULL));
    EXPECT(&out,
           "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
    ck_assert(reply_counter(&out, &req, 10, NULL));
    EXPECT(&out, "10\r\n");
    buf_deinit(&out);
}
END_TEST

START_TEST(test_text_value_blocks)
{
    /* memcached 1.6.18 after "set tk 4294967295 0 3\r\nabc\r\n" (cas 30) */
    struct buf out;
    buf_init(&out);
    struct proto_request req;
    struct reply_item it = _item("tk", 4294967295u, "abc", 30);
    _text(&req, PROTO_CMD_GET, false);
    ck_assert(reply_hit(&out, &req, &it));
    EXPECT(&out, "VALUE tk 4294967295 3\r\nabc\r\n");
    _text(&req, PROTO_CMD_GAT, false);
    ck_assert(reply_hit(&out, &req, &it));
    EXPECT(&out, "VALUE tk 4294967295 3\r\nabc\r\n");
    _text(&req, PROTO_CMD_GETS, false);
    ck_assert(reply_hit(&out, &req, &it));
    EXPECT(&out, "VALUE tk 4294967295 3 30\r\nabc\r\n");
    _text(&req, PROTO_CMD_GATS, false);
    ck_assert(reply_hit(&out, &req, &it));
    EXPECT(&out, "VALUE tk 4294967295 3 30\r\nabc\r\n");

    /* an empty value, the largest cas, data holding CR LF and NUL */
    it = _item("e", 0, "", UINT64_MAX);
    _text(&req, PROTO_CMD_GETS, false);
    ck_assert(reply_hit(&out, &req, &it));
    EXPECT(&out, "VALUE e 0 0 18446744073709551615\r\n\r\n");
    it = _item("b", 7, NULL, 1);
    it.value = "a\r\n\0z";
    it.vlen = 5;
    _text(&req, PROTO_CMD_GET, false);
    ck_assert(reply_hit(&out, &req, &it));
    EXPECT(&out, "VALUE b 7 5\r\na\r\n\0z\r\n");

    /* "get a none b": the miss leaves no trace, END closes the list */
    struct reply_item a = _item("a", 1, "x", 2);
    struct reply_item none = _item("none", 0, NULL, 0);
    struct reply_item b = _item("b", 2, "yy", 3);
    ck_assert(reply_hit(&out, &req, &a));
    ck_assert(reply_miss(&out, &req, &none));
    ck_assert(reply_hit(&out, &req, &b));
    ck_assert(reply_end(&out, &req));
    EXPECT(&out, "VALUE a 1 1\r\nx\r\nVALUE b 2 2\r\nyy\r\nEND\r\n");
    ck_assert(reply_miss(&out, &req, &none));
    ck_assert(reply_end(&out, &req));
    EXPECT(&out, "END\r\n");
    buf_deinit(&out);
}
END_TEST

START_TEST(test_text_counters)
{
    /* memcached 1.6.18: incr of "9" by 1, decr by 100, incr to 2^64-1 */
    struct buf out;
    buf_init(&out);
    struct proto_request req;
    struct reply_item it = _item("n", 0, NULL, 5);
    _text(&req, PROTO_CMD_INCR, false);
    ck_assert(reply_counter(&out, &req, 10, &it));
    EXPECT(&out, "10\r\n");
    _text(&req, PROTO_CMD_DECR, false);
    ck_assert(reply_counter(&out, &req, 0, &it));
    EXPECT(&out, "0\r\n");
    _text(&req, PROTO_CMD_INCR, false);
    ck_assert(reply_counter(&out, &req, UINT64_MAX, NULL));
    EXPECT(&out, "18446744073709551615\r\n");
    ck_assert(reply_result(&out, &req, REPLY_NOT_FOUND, NULL));
    EXPECT(&out, "NOT_FOUND\r\n");
    buf_deinit(&out);
}
END_TEST

START_TEST(test_text_version_and_stats)
{
    /* memcached 1.6.18 says "VERSION 1.6.18"; kura appends its own */
    struct buf out;
    buf_init(&out);
    struct proto_request req;
    _text(&req, PROTO_CMD_VERSION, false);
    ck_assert(reply_version(&out, &req));
    EXPECT(&out, "VERSION 1.6.18-kura-" PACKAGE_VERSION "\r\n");
    _meta(&req, PROTO_CMD_VERSION, "k", "", NULL);
    ck_assert(reply_version(&out, &req));
    EXPECT(&out, "VERSION 1.6.18-kura-" PACKAGE_VERSION "\r\n");

    /* memcached 1.6.18 "stats settings": two of its lines, then END */
    _text(&req, PROTO_CMD_STATS, false);
    ck_assert(reply_stat(&out, &req, "maxbytes", "%d", 67108864));
    ck_assert(reply_stat(&out, &req, "stat_key_prefix", "%c", ':'));
    ck_assert(reply_stat(&out, &req, "growth_factor", "%.2f", 1.25));
    ck_assert(reply_stats_end(&out, &req));
    EXPECT(&out, "STAT maxbytes 67108864\r\nSTAT stat_key_prefix :\r\n"
                 "STAT growth_factor 1.25\r\nEND\r\n");
    ck_assert(reply_stat_bytes(&out, &req, "detailed", "PREFIX a\r\n", 10));
    EXPECT(&out, "STAT detailed PREFIX a\r\n\r\n");
    ck_assert(reply_stat_bytes(&out, &req, "empty", "", 0));
    EXPECT(&out, "STAT empty \r\n");
    buf_deinit(&out);
}
END_TEST

START_TEST(test_stat_values_of_any_length)
{
    /*
     * reply.h: a reply returns false only when the buffer cannot grow.
     * A value formatted to 512 bytes or more (a database path under a
     * deep directory, "STAT kura_db_path ...") was refused instead, and
     * the connection closed in the middle of a stats listing.
     */
    char path[4097];
    memset(path, 'd', sizeof(path) - 1);
    path[0] = '/';
    path[sizeof(path) - 1] = '\0';
    static const size_t lens[] = {510, 511, 512, 513, 1000, 4096};
    struct buf out;
    buf_init(&out);
    struct proto_request req;
    _text(&req, PROTO_CMD_STATS, false);
    char want[4200];
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        int n = snprintf(want, sizeof(want), "STAT kura_db_path %.*s\r\n",
                         (int)lens[i], path);
        ck_assert(reply_stat(&out, &req, "kura_db_path", "%.*s",
                             (int)lens[i], path));
        EXPECT_BYTES(&out, want, (size_t)n);
    }
    ck_assert(reply_stat(&out, &req, "kura_pair", "%s/%s", path + 3000,
                         path + 3000));
    ck_assert_uint_eq(buf_len(&out), 5 + 9 + 1 + 1096 * 2 + 1 + 2);
    buf_deinit(&out);
}
END_TEST

START_TEST(test_text_denied)
{
    /* kura's -mask refusal names the classic command a request counts as */
    struct buf out;
    buf_init(&out);
    struct proto_request req;
    _text(&req, PROTO_CMD_SET, false);
    ck_assert(reply_denied(&out, &req));
    EXPECT(&out, "CLIENT_ERROR set not allowed\r\n");
    _text(&req, PROTO_CMD_FLUSH_ALL, false);
    ck_assert(reply_denied(&out, &req));
    EXPECT(&out, "CLIENT_ERROR flush_all not allowed\r\n");
    /* meta: an error, so q does not hide it */
    _meta(&req, PROTO_CMD_MG, "k", "vq", NULL);
    ck_assert(reply_denied(&out, &req));
    EXPECT(&out, "CLIENT_ERROR get not allowed\r\n");
    _meta(&req, PROTO_CMD_MS, "k", "q", NULL);
    req.meta.mode = 'A';
    ck_assert(reply_denied(&out, &req));
    EXPECT(&out, "CLIENT_ERROR append not allowed\r\n");
    buf_deinit(&out);
}
END_TEST

START_TEST(test_text_parser_errors)
{
    /* memcached 1.6.18's lines for the same refusals ("touch k abc",
     * "incr k abc", "delete y 5", "get <251 bytes>", "mg k zz"...) */
    static const struct {
        enum proto_error err;
        const char *line;
    } cases[] = {
        {PROTO_ERR_UNKNOWN_COMMAND, "ERROR\r\n"},
        {PROTO_ERR_FORMAT, "CLIENT_ERROR bad command line format\r\n"},
        {PROTO_ERR_DELETE_USAGE, "CLIENT_ERROR bad command line format.  "
                                 "Usage: delete <key> [noreply]\r\n"},
        {PROTO_ERR_EXPTIME, "CLIENT_ERROR invalid exptime argument\r\n"},
        {PROTO_ERR_DELTA, "CLIENT_ERROR invalid numeric delta argument\r\n"},
        {PROTO_ERR_TOO_LARGE, "SERVER_ERROR object too large for cache\r\n"},
        {PROTO_ERR_BAD_CHUNK, "CLIENT_ERROR bad data chunk\r\n"},
        {PROTO_ERR_NON_NUMERIC, "CLIENT_ERROR cannot increment or "
                                "decrement non-numeric value\r\n"},
        {PROTO_ERR_LINE_TOO_LONG, "CLIENT_ERROR line too long\r\n"},
        {PROTO_ERR_HTTP, ""},
        {PROTO_ERR_META_FLAG, "CLIENT_ERROR invalid flag\r\n"},
        {PROTO_ERR_META_DUP, "CLIENT_ERROR duplicate flag\r\n"},
        {PROTO_ERR_META_FLAG_OR_DUP,
         "CLIENT_ERROR invalid or duplicate flag\r\n"},
        {PROTO_ERR_META_TOKEN,
         "CLIENT_ERROR bad token in command line format\r\n"},
        {PROTO_ERR_META_OPAQUE, "CLIENT_ERROR opaque token too long\r\n"},
        {PROTO_ERR_META_TOO_MANY,
         "CLIENT_ERROR options flags are too long\r\n"},
        {PROTO_ERR_META_TOO_LONG, "CLIENT_ERROR options flags too long\r\n"},
        {PROTO_ERR_META_KEY, "CLIENT_ERROR error decoding key\r\n"},
        {PROTO_ERR_META_MODE_MS,
         "CLIENT_ERROR invalid mode for ms M token\r\n"},
        {PROTO_ERR_META_MODE_MA,
         "CLIENT_ERROR invalid mode for ma M token\r\n"},
        {PROTO_ERR_META_MODE_LEN,
         "CLIENT_ERROR incorrect length for M token\r\n"},
        {PROTO_ERR_META_INITIAL,
         "CLIENT_ERROR invalid numeric initial value\r\n"},
        {PROTO_ERR_META_DELTA,
         "CLIENT_ERROR invalid numeric delta value\r\n"},
    };
    struct buf out;
    buf_init(&out);
    struct proto_request req;
    struct proto_parser p;
    memset(&p, 0, sizeof(p));
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        p.error = cases[i].err;
        _text(&req, PROTO_CMD_SET, false);
        ck_assert(reply_proto_error(&out, &req, &p));
        EXPECT_BYTES(&out, cases[i].line, strlen(cases[i].line));
        _meta(&req, PROTO_CMD_MG, "k", "q", NULL);
        ck_assert(reply_proto_error(&out, &req, &p));
        EXPECT_BYTES(&out, cases[i].line, strlen(cases[i].line));
    }
    buf_deinit(&out);
}
END_TEST

/* --------------------------------------------------------------- meta */

START_TEST(test_meta_get_hits)
{
    /* memcached 1.6.18 after "ms mk 5 F30 T0\r\nhello\r\n" (cas 11) */
    struct buf out;
    buf_init(&out);
    struct proto_request req;
    struct reply_item it = _item("mk", 30, "hello", 11);
    _meta(&req, PROTO_CMD_MG, "mk", "v", NULL);
    ck_assert(reply_hit(&out, &req, &it));
    EXPECT(&out, "VA 5\r\nhello\r\n");
    /* return flags in the client's order, t -1 for no expiry; q and v
     * are not return flags */
    _meta(&req, PROTO_CMD_MG, "mk", "sftckOqv", "123");
    ck_assert(reply_hit(&out, &req, &it));
    EXPECT(&out, "VA 5 s5 f30 t-1 c11 kmk O123\r\nhello\r\n");
    _meta(&req, PROTO_CMD_MG, "mk", "Okctfsv", "123");
    ck_assert(reply_hit(&out, &req, &it));
    EXPECT(&out, "VA 5 O123 kmk c11 t-1 f30 s5\r\nhello\r\n");
    /* no v: HD; q hides a miss, never a hit */
    _meta(&req, PROTO_CMD_MG, "mk", "", NULL);
    ck_assert(reply_hit(&out, &req, &it));
    EXPECT(&out, "HD\r\n");
    _meta(&req, PROTO_CMD_MG, "mk", "q", NULL);
    ck_assert(reply_hit(&out, &req, &it));
    EXPECT(&out, "HD\r\n");
    /* "ms st 1 T100": mg st t v */
    it = _item("st", 0, "x", 26);
    it.ttl = 100;
    _meta(&req, PROTO_CMD_MG, "st", "tv", NULL);
    ck_assert(reply_hit(&out, &req, &it));
    EXPECT(&out, "VA 1 t100\r\nx\r\n");
    /* "ms hl 1": mg hl h l, then mg hl h l v */
    it = _item("hl", 0, "x", 29);
    it.hit = 0;
    it.idle = 0;
    _meta(&req, PROTO_CMD_MG, "hl", "hl", NULL);
    ck_assert(reply_hit(&out, &req, &it));
    EXPECT(&out, "HD h0 l0\r\n");
    it.hit = 1;
    _meta(&req, PROTO_CMD_MG, "hl", "hlv", NULL);
    ck_assert(reply_hit(&out, &req, &it));
    EXPECT(&out, "VA 1 h1 l0\r\nx\r\n");
    it.idle = 42;
    ck_assert(reply_hit(&out, &req, &it));
    EXPECT(&out, "VA 1 h1 l42\r\nx\r\n");
    /* an empty value */
    it = _item("e", 0, "", 3);
    _meta(&req, PROTO_CMD_MG, "e", "sv", NULL);
    ck_assert(reply_hit(&out, &req, &it));
    EXPECT(&out, "VA 0 s0\r\n\r\n");
    buf_deinit(&out);
}
END_TEST

START_TEST(test_meta_get_misses)
{
    /* memcached 1.6.18: "mg none v", "mg none v k O9 c f s t", and with
     * q nothing */
    struct buf out;
    buf_init(&out);
    struct proto_request req;
    struct reply_item it = _item("none", 0, NULL, 0);
    _meta(&req, PROTO_CMD_MG, "none", "v", NULL);
    ck_assert(reply_miss(&out, &req, &it));
    EXPECT(&out, "EN\r\n");
    _meta(&req, PROTO_CMD_MG, "none", "vkOcfst", "9");
    ck_assert(reply_miss(&out, &req, &it));
    EXPECT(&out, "EN knone O9\r\n");
    _meta(&req, PROTO_CMD_MG, "none", "vkOq", "9");
    ck_assert(reply_miss(&out, &req, &it));
    EXPECT_NOTHING(&out);
    /* a miss ends nothing: no END after it */
    ck_assert(reply_end(&out, &req));
    EXPECT_NOTHING(&out);
    buf_deinit(&out);
}
END_TEST

START_TEST(test_meta_base64_keys)
{
    /* memcached 1.6.18 after "ms Zm9v 3 b T0\r\nbar\r\n" (cas 24) */
    struct buf out;
    buf_init(&out);
    struct proto_request req;
    struct reply_item it = _item("foo", 0, "bar", 24);
    it.key_binary = true;
    _meta(&req, PROTO_CMD_MG, "foo", "bkvc", NULL);
    ck_assert(reply_hit(&out, &req, &it));
    EXPECT(&out, "VA 3 kZm9v b c24\r\nbar\r\n");
    _meta(&req, PROTO_CMD_MG, "foo", "bvkOs", "1");
    ck_assert(reply_hit(&out, &req, &it));
    EXPECT(&out, "VA 3 kZm9v b O1 s3\r\nbar\r\n");
    /* "mg foo k": the item keeps its key binary, so k is base64 */
    _meta(&req, PROTO_CMD_MG, "foo", "k", NULL);
    ck_assert(reply_hit(&out, &req, &it));
    EXPECT(&out, "HD kZm9v b\r\n");
    /* "mg Zm9vbw== b k": a miss */
    struct reply_item miss = _item("fooo", 0, NULL, 0);
    miss.key_binary = true;
    _meta(&req, PROTO_CMD_MG, "fooo", "bk", NULL);
    ck_assert(reply_miss(&out, &req, &miss));
    EXPECT(&out, "EN kZm9vbw== b\r\n");
    /* ms and md print the key the request gave: "HD kZm9v b c25" */
    struct reply_item stored = _item("foo", 0, "x", 25);
    stored.key_binary = true;
    _meta(&req, PROTO_CMD_MS, "foo", "bkc", NULL);
    ck_assert(reply_result(&out, &req, REPLY_STORED, &stored));
    EXPECT(&out, "HD kZm9v b c25\r\n");
    _meta(&req, PROTO_CMD_MD, "foo", "bk", NULL);
    ck_assert(reply_result(&out, &req, REPLY_NOT_FOUND, NULL));
    EXPECT(&out, "NF kZm9v b\r\n");
    /* a key of every byte value that base64 must carry whole */
    static const char raw[] = "\x00\xff\r\n a";
    _meta(&req, PROTO_CMD_MD, "", "bk", NULL);
    memcpy(req.keybuf, raw, 6);
    req.nkey = 6;
    ck_assert(reply_result(&out, &req, REPLY_NOT_FOUND, NULL));
    EXPECT(&out, "NF kAP8NCiBh b\r\n");
    buf_deinit(&out);
}
END_TEST

START_TEST(test_meta_recache_flags)
{
    /* memcached 1.6.18: "md st I T30" then mg st t c twice (won, then
     * taken), "mg st R30 c"; an item near its end: "mg rc R30 c" twice */
    struct buf out;
    buf_init(&out);
    struct proto_request req;
    struct reply_item it = _item("st", 0, "x", 27);
    it.ttl = 30;
    it.stale = true;
    it.win = 'W';
    _meta(&req, PROTO_CMD_MG, "st", "tc", NULL);
    ck_assert(reply_hit(&out, &req, &it));
    EXPECT(&out, "HD t30 c27 X W\r\n");
    it.win = 'Z';
    ck_assert(reply_hit(&out, &req, &it));
    EXPECT(&out, "HD t30 c27 Z X\r\n");
    it.win = 0;
    ck_assert(reply_hit(&out, &req, &it));
    EXPECT(&out, "HD t30 c27 X\r\n");
    it = _item("rc", 0, "x", 28);
    it.ttl = 10;
    it.win = 'W';
    _meta(&req, PROTO_CMD_MG, "rc", "Rc", NULL);
    ck_assert(reply_hit(&out, &req, &it));
    EXPECT(&out, "HD c28 W\r\n");
    it.win = 'Z';
    _meta(&req, PROTO_CMD_MG, "rc", "Rcv", NULL);
    ck_assert(reply_hit(&out, &req, &it));
    EXPECT(&out, "VA 1 c28 Z\r\nx\r\n");
    buf_deinit(&out);
}
END_TEST

START_TEST(test_meta_set_results)
{
    /* memcached 1.6.18 */
    struct buf out;
    buf_init(&out);
    struct proto_request req;
    struct reply_item it = _item("sx", 5, "ab", 37);
    it.ttl = 50;
    /* "ms sx 2 s f t c k O1 T50 F5": an ms answers only c, k, O */
    _meta(&req, PROTO_CMD_MS, "sx", "sftckOTF", "1");
    ck_assert(reply_result(&out, &req, REPLY_STORED, &it));
    EXPECT(&out, "HD c37 ksx O1\r\n");
    _meta(&req, PROTO_CMD_MS, "sx", "", NULL);
    ck_assert(reply_result(&out, &req, REPLY_STORED, &it));
    EXPECT(&out, "HD\r\n");
    /* "ms mk 2 q": nothing */
    _meta(&req, PROTO_CMD_MS, "mk", "q", NULL);
    ck_assert(reply_result(&out, &req, REPLY_STORED, &it));
    EXPECT_NOTHING(&out);
    /* "ms none 2 MR s f t k O2 c": NS; a failure's cas is 0 */
    _meta(&req, PROTO_CMD_MS, "none", "MsftkOc", "2");
    req.meta.mode = 'R';
    ck_assert(reply_result(&out, &req, REPLY_NOT_STORED, NULL));
    EXPECT(&out, "NS knone O2 c0\r\n");
    /* "ms mk 2 C1 k O4 c": EX; "ms nope2 2 C1 k O5 c": NF */
    _meta(&req, PROTO_CMD_MS, "mk", "CkOc", "4");
    ck_assert(reply_result(&out, &req, REPLY_EXISTS, NULL));
    EXPECT(&out, "EX kmk O4 c0\r\n");
    _meta(&req, PROTO_CMD_MS, "nope2", "CkOc", "5");
    ck_assert(reply_result(&out, &req, REPLY_NOT_FOUND, NULL));
    EXPECT(&out, "NF knope2 O5 c0\r\n");
    /* "ms mk 2 q C1 O6": q hides HD only */
    _meta(&req, PROTO_CMD_MS, "mk", "qCO", "6");
    ck_assert(reply_result(&out, &req, REPLY_EXISTS, NULL));
    EXPECT(&out, "EX O6\r\n");
    ck_assert(reply_result(&out, &req, REPLY_NOT_STORED, NULL));
    EXPECT(&out, "NS O6\r\n");
    ck_assert(reply_result(&out, &req, REPLY_NOT_FOUND, NULL));
    EXPECT(&out, "NF O6\r\n");
    buf_deinit(&out);
}
END_TEST

START_TEST(test_meta_delete_results)
{
    /* memcached 1.6.18 */
    struct buf out;
    buf_init(&out);
    struct proto_request req;
    /* "md mk q": deleted, nothing; "md mk k O7 q": NF all the same */
    _meta(&req, PROTO_CMD_MD, "mk", "q", NULL);
    ck_assert(reply_result(&out, &req, REPLY_DELETED, NULL));
    EXPECT_NOTHING(&out);
    _meta(&req, PROTO_CMD_MD, "mk", "kOq", "7");
    ck_assert(reply_result(&out, &req, REPLY_NOT_FOUND, NULL));
    EXPECT(&out, "NF kmk O7\r\n");
    _meta(&req, PROTO_CMD_MD, "none", "q", NULL);
    ck_assert(reply_result(&out, &req, REPLY_NOT_FOUND, NULL));
    EXPECT(&out, "NF\r\n");
    /* "md mk C1 O9 k": EX; "md mk O10 k c": an md answers no c */
    _meta(&req, PROTO_CMD_MD, "mk", "COk", "9");
    ck_assert(reply_result(&out, &req, REPLY_EXISTS, NULL));
    EXPECT(&out, "EX O9 kmk\r\n");
    _meta(&req, PROTO_CMD_MD, "mk", "Okc", "10");
    ck_assert(reply_result(&out, &req, REPLY_DELETED, NULL));
    EXPECT(&out, "HD O10 kmk\r\n");
    _meta(&req, PROTO_CMD_MD, "mk", "", NULL);
    ck_assert(reply_result(&out, &req, REPLY_DELETED, NULL));
    EXPECT(&out, "HD\r\n");
    buf_deinit(&out);
}
END_TEST

START_TEST(test_meta_arithmetic_results)
{
    /* memcached 1.6.18 */
    struct buf out;
    buf_init(&out);
    struct proto_request req;
    struct reply_item it = _item("none", 0, NULL, 21);
    /* "ma none v t c k O3 N0": the value is the number's digits */
    _meta(&req, PROTO_CMD_MA, "none", "vtckON", "3");
    ck_assert(reply_counter(&out, &req, 8, &it));
    EXPECT(&out, "VA 1 t-1 c21 knone O3\r\n8\r\n");
    _meta(&req, PROTO_CMD_MA, "none", "v", NULL);
    ck_assert(reply_counter(&out, &req, UINT64_MAX, &it));
    EXPECT(&out, "VA 20\r\n18446744073709551615\r\n");
    /* "ma cn c t k O3", and with s f, which an ma does not answer */
    it = _item("cn", 0, NULL, 40);
    _meta(&req, PROTO_CMD_MA, "cn", "ctkO", "3");
    ck_assert(reply_counter(&out, &req, 11, &it));
    EXPECT(&out, "HD c40 t-1 kcn O3\r\n");
    it.cas = 41;
    _meta(&req, PROTO_CMD_MA, "cn", "ctkOsf", "3");
    ck_assert(reply_counter(&out, &req, 12, &it));
    EXPECT(&out, "HD c41 t-1 kcn O3\r\n");
    /* "ma none k O4 MD D100" */
    it = _item("none", 0, NULL, 22);
    _meta(&req, PROTO_CMD_MA, "none", "kOMD", "4");
    ck_assert(reply_counter(&out, &req, 0, &it));
    EXPECT(&out, "HD knone O4\r\n");
    /* "ma cn C1 c t k O3 v": EX with only k and O; "ma none2 k O4 q": NF */
    _meta(&req, PROTO_CMD_MA, "cn", "CctkOv", "3");
    ck_assert(reply_result(&out, &req, REPLY_EXISTS, NULL));
    EXPECT(&out, "EX kcn O3\r\n");
    _meta(&req, PROTO_CMD_MA, "none2", "kOq", "4");
    ck_assert(reply_result(&out, &req, REPLY_NOT_FOUND, NULL));
    EXPECT(&out, "NF knone2 O4\r\n");
    /* "ma r q v", "ma r q": success is silent, even with v */
    _meta(&req, PROTO_CMD_MA, "r", "qv", NULL);
    ck_assert(reply_counter(&out, &req, 13, &it));
    EXPECT_NOTHING(&out);
    _meta(&req, PROTO_CMD_MA, "r", "q", NULL);
    ck_assert(reply_counter(&out, &req, 13, &it));
    EXPECT_NOTHING(&out);
    /* "ma t q O5 k" on a value that is not a number */
    _meta(&req, PROTO_CMD_MA, "t", "qOk", "5");
    ck_assert(reply_result(&out, &req, REPLY_NON_NUMERIC, NULL));
    EXPECT(&out,
           "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
    buf_deinit(&out);
}
END_TEST

START_TEST(test_meta_errors_ignore_q)
{
    /* memcached's out_errstring: a meta error is sent whatever q says */
    struct buf out;
    buf_init(&out);
    struct proto_request req;
    static const enum proto_cmd cmds[] = {PROTO_CMD_MG, PROTO_CMD_MS,
                                          PROTO_CMD_MD, PROTO_CMD_MA};
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        _meta(&req, cmds[i], "k", "qkO", "1");
        ck_assert(reply_result(&out, &req, REPLY_SERVER_ERROR_IO, NULL));
        EXPECT(&out, "SERVER_ERROR write failed\r\n");
        ck_assert(reply_result(&out, &req, REPLY_TOO_LARGE, NULL));
        EXPECT(&out, "SERVER_ERROR object too large for cache\r\n");
        ck_assert(reply_result(&out, &req, REPLY_SERVER_ERROR_READONLY,
                               NULL));
        EXPECT(&out,
               "SERVER_ERROR writes disabled after a storage failure\r\n");
        ck_assert(reply_result(&out, &req, REPLY_ERROR, NULL));
        EXPECT(&out, "ERROR\r\n");
        /* and every success q hides */
        ck_assert(reply_result(&out, &req, REPLY_STORED, NULL));
        ck_assert(reply_result(&out, &req, REPLY_DELETED, NULL));
        ck_assert(reply_result(&out, &req, REPLY_TOUCHED, NULL));
        ck_assert(reply_result(&out, &req, REPLY_OK, NULL));
        EXPECT_NOTHING(&out);
    }
    buf_deinit(&out);
}
END_TEST

START_TEST(test_meta_noop_and_debug)
{
    struct buf out;
    buf_init(&out);
    struct proto_request req;
    _meta(&req, PROTO_CMD_NOOP, "", "", NULL);
    ck_assert(reply_noop(&out, &req));
    EXPECT(&out, "MN\r\n");
    /* memcached 1.6.18 "me hl" after "ms hl 1" and one mg: the size is
     * the item's, which kura computes; the line is formatted here */
    struct reply_item it = _item("hl", 0, "x", 29);
    it.ttl = -1;
    it.idle = 0;
    it.hit = 1;
    _meta(&req, PROTO_CMD_ME, "hl", "", NULL);
    ck_assert(reply_meta_debug(&out, &req, &it, 62));
    EXPECT(&out, "ME hl exp=-1 la=0 cas=29 fetch=yes cls=1 size=62\r\n");
    it = _item("none", 0, NULL, 22);
    it.idle = 15;
    it.hit = 0;
    _meta(&req, PROTO_CMD_ME, "none", "", NULL);
    ck_assert(reply_meta_debug(&out, &req, &it, 64));
    EXPECT(&out, "ME none exp=-1 la=15 cas=22 fetch=no cls=1 size=64\r\n");
    it.ttl = 3600;
    it.key_binary = true;
    it.key = "foo";
    it.nkey = 3;
    _meta(&req, PROTO_CMD_ME, "foo", "b", NULL);
    ck_assert(reply_meta_debug(&out, &req, &it, 1));
    EXPECT(&out, "ME Zm9v exp=3600 la=15 cas=22 fetch=no cls=1 size=1\r\n");
    /* a meta get list ends with nothing: mn is the client's end marker */
    ck_assert(reply_end(&out, &req));
    EXPECT_NOTHING(&out);
    buf_deinit(&out);
}
END_TEST

/* ------------------------------------------------------------- limits */

START_TEST(test_full_buffer_refuses_every_reply)
{
    /* reply.h: false when the buffer cannot grow; nothing is added */
    struct buf full = reply_fixture_full();
    struct proto_request req;
    struct proto_parser p;
    memset(&p, 0, sizeof(p));
    p.error = PROTO_ERR_FORMAT;
    struct reply_item it = _item("k", 1, "value", 9);

    _text(&req, PROTO_CMD_GETS, false);
    ck_assert(!reply_text_code(&full, REPLY_STORED));
    ck_assert(!reply_raw(&full, "x", 1));
    ck_assert(!reply_result(&full, &req, REPLY_STORED, &it));
    ck_assert(!reply_result(&full, &req, REPLY_SERVER_ERROR_IO, NULL));
    ck_assert(!reply_hit(&full, &req, &it));
    ck_assert(!reply_end(&full, &req));
    ck_assert(!reply_counter(&full, &req, 1, &it));
    ck_assert(!reply_proto_error(&full, &req, &p));
    ck_assert(!reply_denied(&full, &req));
    ck_assert(!reply_version(&full, &req));
    ck_assert(!reply_stat(&full, &req, "pid", "%d", 1));
    ck_assert(!reply_stat_bytes(&full, &req, "detailed", "x", 1));
    ck_assert(!reply_stats_end(&full, &req));
    EXPECT_FULL_UNTOUCHED(full);

    _meta(&req, PROTO_CMD_MG, "k", "sftckOv", "1");
    ck_assert(!reply_hit(&full, &req, &it));
    ck_assert(!reply_miss(&full, &req, &it));
    ck_assert(!reply_noop(&full, &req));
    ck_assert(!reply_meta_debug(&full, &req, &it, 10));
    _meta(&req, PROTO_CMD_MS, "k", "ckO", "1");
    ck_assert(!reply_result(&full, &req, REPLY_STORED, &it));
    ck_assert(!reply_result(&full, &req, REPLY_EXISTS, NULL));
    _meta(&req, PROTO_CMD_MA, "k", "v", NULL);
    ck_assert(!reply_counter(&full, &req, 1, &it));
    EXPECT_FULL_UNTOUCHED(full);

    /* a reply that writes nothing needs no room */
    _text(&req, PROTO_CMD_SET, true);
    ck_assert(reply_result(&full, &req, REPLY_STORED, NULL));
    ck_assert(reply_result(&full, &req, REPLY_NOT_STORED, NULL));
    _text(&req, PROTO_CMD_GET, false);
    ck_assert(reply_miss(&full, &req, &it));
    _meta(&req, PROTO_CMD_MG, "k", "qv", NULL);
    ck_assert(reply_miss(&full, &req, &it));
    ck_assert(reply_end(&full, &req));
    _meta(&req, PROTO_CMD_MS, "k", "q", NULL);
    ck_assert(reply_result(&full, &req, REPLY_STORED, &it));
    EXPECT_FULL_UNTOUCHED(full);
}
END_TEST

START_TEST(test_refused_reply_keeps_earlier_replies)
{
    /*
     * A value longer than REPLY_BUF_LIMIT cannot be appended: the reply
     * fails, and the replies before it stay whole. reply.h promises no
     * more (the connection is then closed without sending, conn.c): a
     * text VALUE block reserves its whole size first and so adds nothing.
     */
    static const char pad[] = "x";
    struct buf out;
    buf_init(&out);
    struct proto_request req;
    struct reply_item big = _item("k", 0, pad, 1);
    big.vlen = REPLY_BUF_LIMIT + 1;

    _text(&req, PROTO_CMD_GET, false);
    ck_assert(reply_text_code(&out, REPLY_STORED));
    ck_assert(!reply_hit(&out, &req, &big));
    EXPECT(&out, "STORED\r\n");

    _meta(&req, PROTO_CMD_MG, "k", "v", NULL);
    ck_assert(reply_noop(&out, &req));
    ck_assert(!reply_hit(&out, &req, &big));
    ck_assert_uint_ge(buf_len(&out), 4);
    ck_assert_int_eq(memcmp(buf_head(&out), "MN\r\n", 4), 0);
    buf_deinit(&out);
}
END_TEST

static Suite *
_suite(void)
{
    Suite *s = suite_create("reply");
    TCase *text = tcase_create("text");
    tcase_add_test(text, test_text_line_of_every_code);
    tcase_add_test(text, test_text_noreply_silences_every_reply);
    tcase_add_test(text, test_text_value_blocks);
    tcase_add_test(text, test_text_counters);
    tcase_add_test(text, test_text_version_and_stats);
    tcase_add_test(text, test_stat_values_of_any_length);
    tcase_add_test(text, test_text_denied);
    tcase_add_test(text, test_text_parser_errors);
    suite_add_tcase(s, text);
    TCase *meta = tcase_create("meta");
    tcase_add_test(meta, test_meta_get_hits);
    tcase_add_test(meta, test_meta_get_misses);
    tcase_add_test(meta, test_meta_base64_keys);
    tcase_add_test(meta, test_meta_recache_flags);
    tcase_add_test(meta, test_meta_set_results);
    tcase_add_test(meta, test_meta_delete_results);
    tcase_add_test(meta, test_meta_arithmetic_results);
    tcase_add_test(meta, test_meta_errors_ignore_q);
    tcase_add_test(meta, test_meta_noop_and_debug);
    suite_add_tcase(s, meta);
    TCase *limits = tcase_create("limits");
    tcase_add_test(limits, test_full_buffer_refuses_every_reply);
    tcase_add_test(limits, test_refused_reply_keeps_earlier_replies);
    suite_add_tcase(s, limits);
    return s;
}

TEST_MAIN(_suite)
