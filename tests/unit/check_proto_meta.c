/*
 * Unit tests: the meta commands (mn, me, mg, ms, md, ma) as proto_parse()
 * reads them (proto_meta.c). Every flag into struct proto_meta, the order
 * of return flags, base64 keys, ms data blocks arriving in pieces, and
 * every refusal with the error memcached 1.6.18 gives, including the ms
 * data block swallowed when its line is refused.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "unit_main.h"

#define ITEM_MAX 1024

static const struct proto_limits limits = {
    .max_line = 2048, .max_get_line = 65536, .item_max = ITEM_MAX};

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
    [PROTO_ERR_META_FLAG] = "FLAG",
    [PROTO_ERR_META_DUP] = "DUP",
    [PROTO_ERR_META_FLAG_OR_DUP] = "FLAG_OR_DUP",
    [PROTO_ERR_META_TOKEN] = "TOKEN",
    [PROTO_ERR_META_OPAQUE] = "OPAQUE",
    [PROTO_ERR_META_TOO_MANY] = "TOO_MANY",
    [PROTO_ERR_META_TOO_LONG] = "TOO_LONG",
    [PROTO_ERR_META_KEY] = "KEY",
    [PROTO_ERR_META_MODE_MS] = "MODE_MS",
    [PROTO_ERR_META_MODE_MA] = "MODE_MA",
    [PROTO_ERR_META_MODE_LEN] = "MODE_LEN",
    [PROTO_ERR_META_INITIAL] = "INITIAL",
    [PROTO_ERR_META_DELTA] = "DELTA",
    [PROTO_ERR_BIN_EINVAL] = "BIN_EINVAL",
    [PROTO_ERR_BIN_UNKNOWN] = "BIN_UNKNOWN",
    [PROTO_ERR_BIN_FRAMING] = "BIN_FRAMING",
};

/* Appends a one-line description of a parse result to `trace`. */
static void
_describe(char *trace, size_t cap, enum proto_status st,
          const struct proto_parser *p, const struct proto_request *r)
{
    char line[2048];
    size_t n = strlen(trace);

    if (st == PROTO_OK) {
        int w = snprintf(line, sizeof(line), "%s", proto_cmd_name(r->cmd));
        if (r->key != NULL) {
            w += snprintf(line + w, sizeof(line) - (size_t)w, " key=%.*s",
                          (int)r->nkey, r->key);
        }
        if (r->cmd == PROTO_CMD_MS) {
            w += snprintf(line + w, sizeof(line) - (size_t)w, " val=%.*s",
                          (int)r->vlen, r->value);
        }
        if (r->noreply) {
            snprintf(line + w, sizeof(line) - (size_t)w, " q");
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
static const char *
_run(const char *in, size_t len, size_t chunk)
{
    static char trace[1 << 14];
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
            ck_assert_uint_le(consumed, have);
            if (st != PROTO_EUNFIN) {
                _describe(trace, sizeof(trace), st, &p, &r);
            }
            memmove(buf, buf + consumed, have - consumed);
            have -= consumed;
            if (st == PROTO_EUNFIN || st == PROTO_ECLOSE) {
                break;
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

/* `len` bytes of `in` give `want`, whole and in pieces of 1, 3 and 7. */
static void
_expect_n(const char *in, size_t len, const char *want)
{
    static const size_t chunks[] = {0, 1, 3, 7};
    for (size_t i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
        const char *got = _run(in, len, chunks[i]);
        ck_assert_msg(strcmp(got, want) == 0,
                      "input [%.*s] in pieces of %zu\n got  [%s]\n want [%s]",
                      (int)len, in, chunks[i], got, want);
    }
}

static void
_expect(const char *in, const char *want)
{
    _expect_n(in, strlen(in), want);
}

/* Parses `in`, which must be one whole meta request, into a request. */
static const struct proto_request *
_one(const char *in)
{
    static struct proto_request req;
    struct proto_parser p;
    size_t consumed;

    proto_parser_init(&p, &limits);
    enum proto_status st = proto_parse(&p, in, strlen(in), &consumed, &req);
    ck_assert_msg(st == PROTO_OK, "[%s]: status %d error %s", in, st,
                  err_names[p.error]);
    ck_assert_uint_eq(consumed, strlen(in));
    ck_assert_int_eq(req.kind, PROTO_KIND_META);
    return &req;
}

/* Like _one(), for a request expected to be refused with `err`. */
static const struct proto_request *
_refused(const char *in, enum proto_error err)
{
    static struct proto_request req;
    struct proto_parser p;
    size_t consumed;

    proto_parser_init(&p, &limits);
    enum proto_status st = proto_parse(&p, in, strlen(in), &consumed, &req);
    ck_assert_msg(st == PROTO_EREQ && p.error == err,
                  "[%s]: status %d error %s, want %s", in, st,
                  err_names[p.error], err_names[err]);
    ck_assert(!p.error_noreply); /* meta errors are always answered */
    return &req;
}

static void
_key_is(const struct proto_request *r, const char *key)
{
    ck_assert_uint_eq(r->nkey, strlen(key));
    ck_assert(memcmp(r->key, key, r->nkey) == 0);
    ck_assert_ptr_eq(r->keys, r->key);
    ck_assert_uint_eq(r->keys_len, r->nkey);
    ck_assert_uint_eq(r->nkeys, 1);
}

/* ----------------------------------------------------------- commands */

START_TEST(test_mn_and_me)
{
    const struct proto_request *r = _one("mn\r\n");
    ck_assert_int_eq(r->cmd, PROTO_CMD_NOOP);
    ck_assert(!r->noreply);
    ck_assert_ptr_null(r->key);
    r = _one("mn whatever follows\n");
    ck_assert_int_eq(r->cmd, PROTO_CMD_NOOP);
    r = _one("me some:key\r\n");
    ck_assert_int_eq(r->cmd, PROTO_CMD_ME);
    _key_is(r, "some:key");
    r = _one("me Zm9v b\r\n");
    _key_is(r, "foo");
    _expect("me\r\nmn\r\n", "ERR FORMAT|mn|");
    _expect("me   \r\n", "ERR FORMAT|");
    _expect("mn\r\nme k\r\nmn\r\n", "mn|me key=k|mn|");
    /* memcached looks at nothing after the key but a b right after it */
    _key_is(_one("me k v v y Tx\r\n"), "k");
    r = _one("me Zm9v x b\r\n");
    _key_is(r, "Zm9v");
    ck_assert(!r->meta.base64);
    /* and says a key that does not decode is a bad line */
    _expect("me Zm9 b\r\nmn\r\n", "ERR FORMAT|mn|");
}
END_TEST

START_TEST(test_mg_flags)
{
    const struct proto_request *r =
        _one("mg key c f h k l Oabc s t u v q\r\n");
    const struct proto_meta *m = &r->meta;
    ck_assert_int_eq(r->cmd, PROTO_CMD_MG);
    _key_is(r, "key");
    ck_assert_uint_eq(m->norder, 11);
    ck_assert(memcmp(m->order, "cfhklOstuvq", 11) == 0);
    ck_assert(m->quiet && r->noreply);
    ck_assert(m->value);
    ck_assert(m->no_bump);
    ck_assert(!m->base64 && !m->vivify && !m->recache && !m->ttl);
    ck_assert(!m->compare_cas && !m->new_cas && !m->initial);
    ck_assert(!m->client_flags && !m->invalidate);
    ck_assert_uint_eq(m->opaque_len, 3);
    ck_assert(memcmp(m->opaque, "abc", 3) == 0);
    ck_assert_uint_eq(m->delta, 1);
    ck_assert_int_eq(m->mode, 0);

    /* Bare: nothing set, nothing returned. */
    r = _one("mg key\r\n");
    ck_assert_uint_eq(r->meta.norder, 0);
    ck_assert(!r->meta.value && !r->noreply);
    ck_assert_ptr_null(r->meta.opaque);

    /* An empty opaque is an opaque. */
    r = _one("mg key O\r\n");
    ck_assert_ptr_nonnull(r->meta.opaque);
    ck_assert_uint_eq(r->meta.opaque_len, 0);
}
END_TEST

START_TEST(test_flag_order)
{
    /* Every letter once, in the client's order: replies follow it, and mg
     * and ma apply T, N and R in it. */
    const struct proto_request *r = _one("mg k t v O1 q s u k N5 c\r\n");
    ck_assert_uint_eq(r->meta.norder, 9);
    ck_assert(memcmp(r->meta.order, "tvOqsukNc", 9) == 0);
    r = _one("mg k l h f\r\n");
    ck_assert_uint_eq(r->meta.norder, 3);
    ck_assert(memcmp(r->meta.order, "lhf", 3) == 0);
    r = _one("ms k 1 c k O9 T5 I\r\nx\r\n");
    ck_assert_uint_eq(r->meta.norder, 5);
    ck_assert(memcmp(r->meta.order, "ckOTI", 5) == 0);
}
END_TEST

START_TEST(test_ttl_tokens)
{
    const struct proto_request *r = _one("mg k N30 R-5 T3600\r\n");
    ck_assert(r->meta.vivify && r->meta.vivify_ttl == 30);
    ck_assert(r->meta.recache && r->meta.recache_ttl == -5);
    ck_assert(r->meta.ttl && r->meta.ttl_value == 3600);

    /* Numbers are read as memcached's safe_strtol() reads them. */
    r = _one("mg k T+7 N-0 R4294967297\r\n");
    ck_assert_int_eq(r->meta.ttl_value, 7);
    ck_assert_int_eq(r->meta.vivify_ttl, 0);
    ck_assert_int_eq(r->meta.recache_ttl, 1);
}
END_TEST

START_TEST(test_ms)
{
    const struct proto_request *r =
        _one("ms k 5 F4294967295 T-1 C18446744073709551615 E1 I MS q\r\n"
             "hello\r\n");
    const struct proto_meta *m = &r->meta;
    ck_assert_int_eq(r->cmd, PROTO_CMD_MS);
    _key_is(r, "k");
    ck_assert_uint_eq(r->vlen, 5);
    ck_assert(memcmp(r->value, "hello\r\n", 7) == 0);
    ck_assert(m->client_flags && m->flags_value == 4294967295u);
    ck_assert(m->ttl && m->ttl_value == -1);
    ck_assert(m->compare_cas && m->compare_value == UINT64_MAX);
    ck_assert(m->new_cas && m->new_cas_value == 1);
    ck_assert(m->invalidate);
    ck_assert_int_eq(m->mode, 'S');
    ck_assert(r->noreply);

    /* Every mode, and none. */
    static const char modes[] = "SEAPR";
    for (size_t i = 0; i < sizeof(modes) - 1; i++) {
        char line[64];
        snprintf(line, sizeof(line), "ms k 2 M%c\r\nab\r\n", modes[i]);
        ck_assert_int_eq(_one(line)->meta.mode, modes[i]);
    }
    r = _one("ms k 0\r\n\r\n");
    ck_assert_int_eq(r->meta.mode, 0);
    ck_assert_uint_eq(r->vlen, 0);
    ck_assert(!r->meta.client_flags);

    /* The data is any bytes, CR and LF included; only its length counts. */
    _expect("ms k 4\r\n\r\n\r\n\r\nmn\r\n", "ms key=k val=\r\n\r\n|mn|");
    _expect("ms a 1 q\r\nx\r\nms b 2\nyz\r\nmg a v\r\n",
            "ms key=a val=x q|ms key=b val=yz|mg key=a|");
}
END_TEST

/* Every split of an ms waits, with the right need, until its data ends. */
START_TEST(test_ms_incremental)
{
    const char *in = "ms key 10 T60 F3\r\n0123456789\r\n";
    size_t len = strlen(in);
    size_t hdr = strlen("ms key 10 T60 F3\r\n");
    struct proto_parser p;
    struct proto_request r;
    size_t consumed;

    proto_parser_init(&p, &limits);
    for (size_t k = 0; k < len; k++) {
        ck_assert_int_eq(proto_parse(&p, in, k, &consumed, &r), PROTO_EUNFIN);
        ck_assert_uint_eq(consumed, 0);
        ck_assert_uint_eq(p.need, k < hdr ? 0 : len);
    }
    ck_assert_int_eq(proto_parse(&p, in, len, &consumed, &r), PROTO_OK);
    ck_assert_uint_eq(consumed, len);
    ck_assert_uint_eq(r.vlen, 10);
    ck_assert_int_eq(r.meta.ttl_value, 60);
    ck_assert_uint_eq(r.meta.flags_value, 3);
}
END_TEST

START_TEST(test_md_and_ma)
{
    const struct proto_request *r = _one("md k I q C5 T30 k O1\r\n");
    ck_assert_int_eq(r->cmd, PROTO_CMD_MD);
    ck_assert(r->meta.invalidate && r->noreply);
    ck_assert(r->meta.compare_cas && r->meta.compare_value == 5);
    ck_assert(r->meta.ttl && r->meta.ttl_value == 30);
    ck_assert(memcmp(r->meta.order, "IqCTkO", 6) == 0);

    r = _one("ma k N0 J10 D5 MD C3 E4 v t c\r\n");
    const struct proto_meta *m = &r->meta;
    ck_assert_int_eq(r->cmd, PROTO_CMD_MA);
    ck_assert(m->vivify && m->vivify_ttl == 0);
    ck_assert(m->initial && m->initial_value == 10);
    ck_assert_uint_eq(m->delta, 5);
    ck_assert_int_eq(m->mode, 'D');
    ck_assert(m->compare_cas && m->compare_value == 3);
    ck_assert(m->new_cas && m->new_cas_value == 4);
    ck_assert(m->value);
    ck_assert(memcmp(m->order, "NJDMCEvtc", 9) == 0);

    r = _one("ma k\r\n");
    ck_assert_uint_eq(r->meta.delta, 1);
    ck_assert_int_eq(r->meta.mode, 0);
    r = _one("ma k D0 J18446744073709551615\r\n");
    ck_assert_uint_eq(r->meta.delta, 0);
    ck_assert_uint_eq(r->meta.initial_value, UINT64_MAX);
    static const char modes[] = "I+D-";
    for (size_t i = 0; i < sizeof(modes) - 1; i++) {
        char line[64];
        snprintf(line, sizeof(line), "ma k M%c\r\n", modes[i]);
        ck_assert_int_eq(_one(line)->meta.mode, modes[i]);
    }
}
END_TEST

START_TEST(test_proxy_hints_ignored)
{
    const struct proto_request *r = _one("mg k Pfoo Lbar/ v\r\n");
    ck_assert_uint_eq(r->meta.norder, 3);
    ck_assert(r->meta.value);
    _one("ms k 1 P L\r\nx\r\n");
    _one("md k Pp Lx/\r\n");
    _one("ma k Pp Lx/\r\n");
    _expect("mg k P P\r\n", "ERR DUP|");
}
END_TEST

START_TEST(test_base64_keys)
{
    const struct proto_request *r = _one("mg Zm9vYmFy b v\r\n");
    _key_is(r, "foobar");
    ck_assert_ptr_eq(r->key, r->keybuf);
    ck_assert(r->meta.base64);
    ck_assert(r->meta.value);
    _key_is(_one("mg Zm9vYg== b\r\n"), "foob");
    _key_is(_one("mg Zm9vYmE= b\r\n"), "fooba");
    /* Decoded, a key may hold what a text key may not. */
    r = _one("mg IGEKAA== b\r\n");
    ck_assert_uint_eq(r->nkey, 4);
    ck_assert(memcmp(r->key, " a\n\0", 4) == 0);
    r = _one("ms Zm9v 3 b T1\r\nabc\r\n");
    _key_is(r, "foo");
    ck_assert(memcmp(r->value, "abc", 3) == 0);
    _key_is(_one("md Zm9v b q\r\n"), "foo");
    _key_is(_one("ma Zm9v b\r\n"), "foo");

    /* The key token is at most 250 characters, as memcached checks it
     * before decoding: 186 bytes (248 characters) fit, 187 do not. */
    char raw[251];
    char line[512];
    char enc[400];
    memset(raw, 'z', sizeof(raw));
    size_t n = proto_base64_encode(raw, 186, enc);
    snprintf(line, sizeof(line), "mg %.*s b\r\n", (int)n, enc);
    ck_assert_uint_eq(_one(line)->nkey, 186);
    n = proto_base64_encode(raw, 187, enc);
    snprintf(line, sizeof(line), "mg %.*s b\r\n", (int)n, enc);
    _refused(line, PROTO_ERR_FORMAT);
    /* and before the flags */
    memset(line, 'k', sizeof(line));
    memcpy(line, "mg ", 3);
    memcpy(line + 3 + 251, " y\r\n", 5);
    line[3 + 251 + 5] = '\0';
    _refused(line, PROTO_ERR_FORMAT);

    /* Not base64: "error decoding key" for mg and ms ... */
    _expect("mg Zm9 b\r\n", "ERR KEY|");
    _expect("mg Zm9v= b\r\n", "ERR KEY|");
    _expect("mg Z=== b\r\n", "ERR KEY|");
    _expect("mg !!!! b\r\n", "ERR KEY|");
    _expect("ms ms:a 3 b\r\nabc\r\nmn\r\n", "ERR KEY|mn|");
    /* (as memcached decodes: "Z=9v" is two bytes, "ms:ab" is "msab") */
    ck_assert_uint_eq(_one("mg Z=9v b\r\n")->nkey, 2);
    ck_assert_uint_eq(_one("mg ms:ab b\r\n")->nkey, 3);
    /* ... and "invalid or duplicate flag" for md and ma. */
    _expect("md !!!! b\r\n", "ERR FLAG_OR_DUP|");
    _expect("ma !!!! b\r\n", "ERR FLAG_OR_DUP|");
}
END_TEST

/* Decodes `in` as a meta key; returns the bytes or "FAIL". */
static const char *
_b64(const char *in)
{
    static char out[PROTO_KEY_MAX + 1];
    long n = proto_base64_decode_meta(in, strlen(in), out, PROTO_KEY_MAX);
    if (n < 0) {
        return "FAIL";
    }
    out[n] = '\0';
    return out;
}

/*
 * issue 28: a meta key in base64 is decoded as memcached 1.6.18 decodes
 * it: what is not in the alphabet is skipped, whole groups of four are
 * needed, '=' counts as a zero anywhere in a group and ends the key with
 * that group. Found by tools/difffuzz ("ma czE0OjFwnC1+5Yoc! ..." is a
 * key to memcached).
 */
START_TEST(test_issue_28_base64_as_memcached)
{
    ck_assert_str_eq(_b64("Zm9v"), "foo");
    ck_assert_str_eq(_b64("Zm9vYmFy"), "foobar");
    ck_assert_str_eq(_b64("Zg=="), "f");
    ck_assert_str_eq(_b64("Zm8="), "fo");
    /* unpadded: whole groups only */
    ck_assert_str_eq(_b64("Zm9vYg"), "FAIL");
    ck_assert_str_eq(_b64("Zm9vYg="), "FAIL");
    /* bytes outside the alphabet are skipped */
    ck_assert_str_eq(_b64("Zm9v!YmFy"), "foobar");
    ck_assert_str_eq(_b64("Z.m-9_v"), "foo");
    ck_assert_str_eq(_b64("Zm9vYg!"), "FAIL");
    ck_assert_str_eq(_b64("!!!!"), "FAIL");
    ck_assert_str_eq(_b64(""), "FAIL");
    /* whatever follows the padding is ignored */
    ck_assert_str_eq(_b64("Zg==Zm9v"), "f");
    ck_assert_str_eq(_b64("Zg==!"), "f");
    ck_assert_str_eq(_b64("Zm9vYg==QQ=="), "foob");
    /* but still counted: the groups must be whole */
    ck_assert_str_eq(_b64("Zg==A"), "FAIL");
    /* '=' anywhere in a group is a zero and a pad; three are too many */
    ck_assert_str_eq(_b64("Z=9v"), "d\x0f"); /* 0x64 0x0f 0x6f, less one */
    ck_assert_str_eq(_b64("Z==="), "FAIL");
    ck_assert_str_eq(_b64("===="), "FAIL");
    ck_assert_str_eq(_b64("Zm9vA==="), "FAIL");
    /* HTTP credentials keep the strict decoder */
    char out[16];
    ck_assert_int_eq(proto_base64_decode("Zm9v!YmFy", 9, out, sizeof(out)),
                     -1);
    ck_assert_int_eq(proto_base64_decode("Zm9vYmFy", 8, out, sizeof(out)),
                     6);
    /* in a request */
    _key_is(_one("mg Zm9v!YmFy b\r\n"), "foobar");
    _key_is(_one("md Zg==Zm9v b\r\n"), "f");
    _expect("ma Zm9vYg b\r\n", "ERR FLAG_OR_DUP|");
}
END_TEST

START_TEST(test_proto_class)
{
    ck_assert_int_eq(proto_class(_one("mg k v\r\n")), PROTO_CMD_GET);
    ck_assert_int_eq(proto_class(_one("mg k T5\r\n")), PROTO_CMD_GAT);
    ck_assert_int_eq(proto_class(_one("mg k N5\r\n")), PROTO_CMD_GAT);
    ck_assert_int_eq(proto_class(_one("ms k 1\r\nx\r\n")), PROTO_CMD_SET);
    ck_assert_int_eq(proto_class(_one("ms k 1 C4\r\nx\r\n")), PROTO_CMD_CAS);
    ck_assert_int_eq(proto_class(_one("ms k 1 ME\r\nx\r\n")), PROTO_CMD_ADD);
    ck_assert_int_eq(proto_class(_one("ms k 1 MA\r\nx\r\n")),
                     PROTO_CMD_APPEND);
    ck_assert_int_eq(proto_class(_one("ms k 1 MP\r\nx\r\n")),
                     PROTO_CMD_PREPEND);
    ck_assert_int_eq(proto_class(_one("ms k 1 MR\r\nx\r\n")),
                     PROTO_CMD_REPLACE);
    ck_assert_int_eq(proto_class(_one("md k\r\n")), PROTO_CMD_DELETE);
    ck_assert_int_eq(proto_class(_one("ma k\r\n")), PROTO_CMD_INCR);
    ck_assert_int_eq(proto_class(_one("ma k M-\r\n")), PROTO_CMD_DECR);
    ck_assert_int_eq(proto_class(_one("me k\r\n")), PROTO_CMD_GET);
    ck_assert_int_eq(proto_class(_one("mn\r\n")), PROTO_CMD_NOOP);
}
END_TEST

/* ------------------------------------------------------------- errors */

START_TEST(test_invalid_and_duplicate_flags)
{
    /* mg and ms tell the two apart ... */
    _expect("mg k y\r\nmn\r\n", "ERR FLAG|mn|");
    _expect("mg k 5\r\n", "ERR FLAG|");
    _expect("mg k x\r\n", "ERR FLAG|");
    _expect("mg k v v\r\n", "ERR DUP|");
    _expect("mg k T1 T2\r\n", "ERR DUP|");
    _expect("ms k 3 y\r\nabc\r\nmn\r\n", "ERR FLAG|mn|");
    _expect("ms k 3 k Oabc O2\r\nabc\r\nmn\r\n", "ERR DUP|mn|");
    /* ... md and ma do not, and say the same for bad tokens. */
    _expect("md k x\r\nmn\r\n", "ERR FLAG_OR_DUP|mn|");
    _expect("md k 5\r\n", "ERR FLAG_OR_DUP|");
    _expect("md k k k\r\n", "ERR FLAG_OR_DUP|");
    _expect("md k Cx\r\n", "ERR FLAG_OR_DUP|");
    _expect("md k T\r\n", "ERR FLAG_OR_DUP|");
    _expect("ma k v v\r\n", "ERR FLAG_OR_DUP|");
    _expect("ma k x\r\n", "ERR FLAG_OR_DUP|");
    _expect("ma k Dabc\r\n", "ERR FLAG_OR_DUP|");
    _expect("ma k D-1\r\n", "ERR FLAG_OR_DUP|");
    _expect("ma k D18446744073709551616\r\n", "ERR FLAG_OR_DUP|");
    _expect("ma k D\r\n", "ERR FLAG_OR_DUP|");
    _expect("ma k N\r\n", "ERR FLAG_OR_DUP|");
    _expect("ma k Jx\r\n", "ERR FLAG_OR_DUP|");
    /* Every command takes every known flag, F and E included. */
    ck_assert_uint_eq(_one("ma k F1 E2\r\n")->meta.flags_value, 1);
}
END_TEST

START_TEST(test_bad_tokens)
{
    /* Each letter's words for a token that does not read (mg and ms). */
    static const struct {
        const char *flag;
        const char *err;
    } bad[] = {
        {"Ta", "TOKEN"}, {"T", "TOKEN"}, {"N", "TOKEN"}, {"Nx", "TOKEN"},
        {"R", "TOKEN"}, {"R1x", "TOKEN"}, {"C", "TOKEN"}, {"Cx", "TOKEN"},
        {"C-1", "TOKEN"}, {"E", "TOKEN"}, {"E1.5", "TOKEN"},
        {"T99999999999999999999", "TOKEN"}, {"J", "INITIAL"},
        {"J-3", "INITIAL"}, {"D", "DELTA"}, {"Dx", "DELTA"},
        {"F", "FORMAT"}, {"F-1", "FORMAT"}, {"M", "MODE_LEN"},
        {"MSS", "MODE_LEN"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char line[64];
        char want[64];
        snprintf(line, sizeof(line), "mg k %s\r\nmn\r\n", bad[i].flag);
        snprintf(want, sizeof(want), "ERR %s|mn|", bad[i].err);
        _expect(line, want);
        snprintf(line, sizeof(line), "ms k 3 %s\r\nabc\r\nmn\r\n",
                 bad[i].flag);
        _expect(line, want);
        snprintf(line, sizeof(line), "ma k %s\r\nmn\r\n", bad[i].flag);
        _expect(line, "ERR FLAG_OR_DUP|mn|");
    }
    _expect("ms k 3 Fabc\r\nabc\r\nmn\r\n", "ERR FORMAT|mn|");
    _expect("ms k 3 F18446744073709551616\r\nabc\r\nmn\r\n",
            "ERR FORMAT|mn|");
    /* md and ma say only "invalid or duplicate flag" */
    _expect("md k F\r\n", "ERR FLAG_OR_DUP|");
    /* F is read as 64 bits and cut to 32, as memcached's cast does. */
    ck_assert_uint_eq(_one("ms k 1 F4294967297\r\nx\r\n")->meta.flags_value,
                      1);
    /* Any mode letter reads for mg and md, which do not use it. */
    ck_assert_int_eq(_one("mg k MX\r\n")->meta.mode, 'X');
    ck_assert_int_eq(_one("md k Mq\r\n")->meta.mode, 'q');
}
END_TEST

/*
 * issue 28: memcached 1.6.18 walks the flags in order. An unknown letter
 * or a repeated one stops the walk at once; a bad token is noted and the
 * walk goes on, the last one noted winning, except that a bad F notes no
 * words of its own. Found by tools/difffuzz.
 */
START_TEST(test_issue_28_flag_walk)
{
    _expect("mg k Tx y\r\n", "ERR FLAG|");
    _expect("mg k y Tx\r\n", "ERR FLAG|");
    _expect("mg k Tx v v\r\n", "ERR DUP|");
    _expect("mg k v v y\r\n", "ERR DUP|");
    _expect("mg k y y\r\n", "ERR FLAG|");
    _expect("mg k Tx Jx\r\n", "ERR INITIAL|");
    _expect("mg k Jx Tx\r\n", "ERR TOKEN|");
    _expect("mg k Tx F\r\n", "ERR TOKEN|");
    _expect("mg k F Tx\r\n", "ERR TOKEN|");
    _expect("mg k F Dx\r\n", "ERR DELTA|");
    _expect("mg k Dx F M\r\n", "ERR MODE_LEN|");
    _expect("mg !!!! b Tx\r\n", "ERR TOKEN|");
    _expect("mg !!!! Tx b\r\n", "ERR KEY|");
    _expect("mg !!!! b F\r\n", "ERR KEY|");
    /* a byte of 127 or more is a "duplicate" */
    _expect("mg k \x80\r\n", "ERR DUP|");
    _expect("mg k \x7f\r\n", "ERR DUP|");
    _expect("mg k v \xff\r\n", "ERR DUP|");
    /* ms: an unknown mode is reported over a long opaque, either way */
    _expect("ms k 1 MX O012345678901234567890123456789012\r\nx\r\nmn\r\n",
            "ERR MODE_MS|mn|");
    _expect("ms k 1 O012345678901234567890123456789012 MX\r\nx\r\nmn\r\n",
            "ERR MODE_MS|mn|");
    /* ... but not over a flag error */
    _expect("ms k 0 q v c MX c\r\n\r\nmn\r\n", "ERR DUP|mn|");
    _expect("ms k 3 Me F0 Z C1 I\r\n12 \r\nmn\r\n", "ERR FLAG|mn|");
    /* ma: the mode, then the opaque */
    _expect("ma k MX O012345678901234567890123456789012\r\n", "ERR MODE_MA|");
    _expect("ma k O012345678901234567890123456789012 Mx\r\n", "ERR MODE_MA|");
    _expect("ma k O012345678901234567890123456789012\r\n", "ERR OPAQUE|");
    _expect("ma k Jx MX\r\n", "ERR FLAG_OR_DUP|");
}
END_TEST

/* issue 28: memcached reads a command line as a C string. */
START_TEST(test_issue_28_nul_ends_line)
{
    static const char v[] = "mg k v\0 v\r\nmn\r\n";
    static const char ms[] = "ms k 1 T\0x\r\nx\r\nmn\r\n";
    static const char key[] = "mg k\0zz v\r\n";
    _expect_n(v, sizeof(v) - 1, "mg key=k|mn|");
    _expect_n(ms, sizeof(ms) - 1, "ERR TOKEN|mn|");
    _expect_n(key, sizeof(key) - 1, "mg key=k|");
}
END_TEST

START_TEST(test_opaque_limit)
{
    char line[128];
    char o[40];

    memset(o, 'o', sizeof(o));
    /* 32 bytes with the O are fine; 33 are not. */
    snprintf(line, sizeof(line), "mg k O%.31s\r\n", o);
    ck_assert_uint_eq(_one(line)->meta.opaque_len, 31);
    snprintf(line, sizeof(line), "mg k O%.32s\r\nmn\r\n", o);
    _expect(line, "ERR OPAQUE|mn|");
    snprintf(line, sizeof(line), "ms k 3 O%.32s\r\nabc\r\nmn\r\n", o);
    _expect(line, "ERR OPAQUE|mn|");
    snprintf(line, sizeof(line), "ma k O%.40s\r\n", o);
    _refused(line, PROTO_ERR_META_OPAQUE);
}
END_TEST

START_TEST(test_too_many_tokens)
{
    char line[512];

    /* 19 words: the command, the key and 17 flags. */
    snprintf(line, sizeof(line),
             "mg k c f h k l O q s t u v N1 R1 T1 C1 P L\r\n");
    ck_assert_uint_eq(_one(line)->meta.norder, 17);
    /* A 20th, whatever it is, is too many: counted before flags. mg's
     * words differ from the others' by an "are". */
    snprintf(line, sizeof(line),
             "mg k c f h k l O q s t u v N1 R1 T1 C1 P L I\r\nmn\r\n");
    _expect(line, "ERR TOO_MANY|mn|");
    snprintf(line, sizeof(line), "mg k%s\r\n",
             " v v v v v v v v v v v v v v v v v v");
    _expect(line, "ERR TOO_MANY|");
    snprintf(line, sizeof(line), "md k%s\r\n",
             " v v v v v v v v v v v v v v v v v v v v v v v v v v v v v v");
    _expect(line, "ERR TOO_LONG|");
    snprintf(line, sizeof(line), "ma k%s\r\n",
             " v v v v v v v v v v v v v v v v v v");
    _expect(line, "ERR TOO_LONG|");
    /* ms: the length is a word too; the data is swallowed. */
    snprintf(line, sizeof(line),
             "ms k 1 c f h k l O q s t u v N1 R1 T1 C1 P\r\nx\r\n");
    ck_assert_uint_eq(_one(line)->vlen, 1);
    snprintf(line, sizeof(line),
             "ms k 1 c f h k l O q s t u v N1 R1 T1 C1 P L\r\nx\r\nmn\r\n");
    _expect(line, "ERR TOO_LONG|mn|");
    /* issue 28: counted before the length is read (which, unreadable,
     * leaves nothing to swallow) */
    snprintf(line, sizeof(line),
             "ms k x c f h k l O q s t u v N1 R1 T1 C1 P L\r\nmn\r\n");
    _expect(line, "ERR TOO_LONG|mn|");
    /* and after the key's length */
    snprintf(line, sizeof(line), "mg %0251d%s\r\n", 0,
             " v v v v v v v v v v v v v v v v v v");
    _expect(line, "ERR FORMAT|");
}
END_TEST

START_TEST(test_modes)
{
    /* ms: S E A P R only, upper case. */
    static const char *const bad_ms[] = {"MX", "Ms", "Me", "Ma", "Mp", "Mr",
                                         "M+"};
    for (size_t i = 0; i < sizeof(bad_ms) / sizeof(bad_ms[0]); i++) {
        char line[64];
        snprintf(line, sizeof(line), "ms k 3 %s\r\nabc\r\nmn\r\n", bad_ms[i]);
        _expect(line, "ERR MODE_MS|mn|");
    }
    /* ma: I + D - only. */
    static const char *const bad_ma[] = {"MX", "Mi", "Md", "MS"};
    for (size_t i = 0; i < sizeof(bad_ma) / sizeof(bad_ma[0]); i++) {
        char line[64];
        snprintf(line, sizeof(line), "ma k %s\r\nmn\r\n", bad_ma[i]);
        _expect(line, "ERR MODE_MA|mn|");
    }
    /* Not one letter: a bad token, before the mode is looked at. */
    _expect("ms k 3 MSS\r\nabc\r\nmn\r\n", "ERR MODE_LEN|mn|");
    _expect("ms k 3 M\r\nabc\r\nmn\r\n", "ERR MODE_LEN|mn|");
    _expect("ma k MII\r\nmn\r\n", "ERR FLAG_OR_DUP|mn|");
}
END_TEST

/*
 * A mode byte of NUL is no mode letter: ms and ma must refuse it as they
 * refuse any other, not take it for "no mode given" (a plain set, an
 * increment).
 */
/*
 * A mode byte of NUL ends the line (memcached reads it as a C string):
 * the M is then one byte short, refused as memcached refuses it, never
 * taken for "no mode given" (a plain set, an increment).
 */
START_TEST(test_nul_mode_refused)
{
    static const char ms[] = "ms k 1 M\0\r\nx\r\nmn\r\n";
    static const char ma[] = "ma k M\0\r\nmn\r\n";
    _expect_n(ms, sizeof(ms) - 1, "ERR MODE_LEN|mn|");
    _expect_n(ma, sizeof(ma) - 1, "ERR FLAG_OR_DUP|mn|");
}
END_TEST

START_TEST(test_command_line_errors)
{
    /* Too few words. */
    _expect("mg\r\n", "ERR UNKNOWN|");
    _expect("ms\r\n", "ERR UNKNOWN|");
    _expect("md\r\n", "ERR UNKNOWN|");
    _expect("ma  \r\n", "ERR UNKNOWN|");
    _expect("ms k\r\nmn\r\n", "ERR FORMAT|mn|");
    /* An unreadable length: the data cannot be skipped, so it is then
     * read as a command. */
    _expect("ms k abc\r\nabc\r\n", "ERR FORMAT|ERR UNKNOWN|");
    _expect("ms k -1\r\n", "ERR FORMAT|");
    _expect("ms k 2147483646\r\n", "ERR FORMAT|");
    /* Keys. */
    char line[600];
    char key[260];
    memset(key, 'k', sizeof(key));
    snprintf(line, sizeof(line), "mg %.250s v\r\n", key);
    ck_assert_uint_eq(_one(line)->nkey, 250);
    snprintf(line, sizeof(line), "mg %.251s v\r\nmn\r\n", key);
    _expect(line, "ERR FORMAT|mn|");
    snprintf(line, sizeof(line), "md %.251s\r\n", key);
    _expect(line, "ERR FORMAT|");
    snprintf(line, sizeof(line), "me %.251s\r\n", key);
    _expect(line, "ERR FORMAT|");
    _expect("mg a\x01z v\r\n", "ERR FORMAT|");
    /* ms: kura swallows the data of a refused key (memcached runs it). */
    snprintf(line, sizeof(line), "ms %.251s 3\r\nabc\r\nmn\r\n", key);
    _expect(line, "ERR FORMAT|mn|");
}
END_TEST

START_TEST(test_ms_data_errors)
{
    /* Not followed by CRLF: bytes + 2 consumed, the rest read on. */
    _expect("ms k 3\r\nabcd\r\n", "ERR BAD_CHUNK|ERR UNKNOWN|");
    _expect("ms k 3 q\r\nabcXYmn\r\n", "ERR BAD_CHUNK|mn|");

    /* Too large: refused, answered even with q, its data swallowed. */
    static char in[3 * ITEM_MAX];
    int n = snprintf(in, sizeof(in), "ms big %d T0 q\r\n", ITEM_MAX + 1);
    memset(in + n, 'v', ITEM_MAX + 1);
    snprintf(in + n + ITEM_MAX + 1, sizeof(in) - (size_t)n - ITEM_MAX - 1,
             "\r\nmn\r\n");
    _expect(in, "ERR TOO_LARGE|mn|");
    /* item_max itself fits. */
    n = snprintf(in, sizeof(in), "ms big %d\r\n", ITEM_MAX);
    memset(in + n, 'v', ITEM_MAX);
    snprintf(in + n + ITEM_MAX, sizeof(in) - (size_t)n - ITEM_MAX, "\r\n");
    ck_assert_uint_eq(_one(in)->vlen, ITEM_MAX);

    /* process.c drops the old value of a too-large set: it needs the
     * command, the key and the mode. */
    struct proto_parser p;
    struct proto_request r;
    size_t consumed;
    const char *line = "ms big 4000 MS\r\n";
    proto_parser_init(&p, &limits);
    ck_assert_int_eq(proto_parse(&p, line, strlen(line), &consumed, &r),
                     PROTO_EREQ);
    ck_assert_int_eq(p.error, PROTO_ERR_TOO_LARGE);
    ck_assert_int_eq(p.error_cmd, PROTO_CMD_MS);
    ck_assert_uint_eq(consumed, strlen(line));
    ck_assert_uint_eq(p.swallow, 4002);
    ck_assert_uint_eq(r.nkey, 3);
    ck_assert(memcmp(r.key, "big", 3) == 0);
    ck_assert_int_eq(r.meta.mode, 'S');
}
END_TEST

static Suite *
proto_meta_suite(void)
{
    Suite *s = suite_create("proto_meta");
    TCase *tc = tcase_create("commands");
    tcase_add_test(tc, test_mn_and_me);
    tcase_add_test(tc, test_mg_flags);
    tcase_add_test(tc, test_flag_order);
    tcase_add_test(tc, test_ttl_tokens);
    tcase_add_test(tc, test_ms);
    tcase_add_test(tc, test_ms_incremental);
    tcase_add_test(tc, test_md_and_ma);
    tcase_add_test(tc, test_proxy_hints_ignored);
    tcase_add_test(tc, test_base64_keys);
    tcase_add_test(tc, test_issue_28_base64_as_memcached);
    tcase_add_test(tc, test_proto_class);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, test_invalid_and_duplicate_flags);
    tcase_add_test(tc, test_bad_tokens);
    tcase_add_test(tc, test_issue_28_flag_walk);
    tcase_add_test(tc, test_issue_28_nul_ends_line);
    tcase_add_test(tc, test_opaque_limit);
    tcase_add_test(tc, test_too_many_tokens);
    tcase_add_test(tc, test_modes);
    tcase_add_test(tc, test_nul_mode_refused);
    tcase_add_test(tc, test_command_line_errors);
    tcase_add_test(tc, test_ms_data_errors);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(proto_meta_suite)
