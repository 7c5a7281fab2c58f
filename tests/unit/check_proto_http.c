/*
 * Unit tests: HTTP/1.x requests as proto_http_parse() reads them. The
 * request kinds and keys, keep-alive rules, Content-Length and chunked
 * bodies arriving in pieces, 100-continue, every refusal status, the
 * headers kura reads, and pipelined requests. Every request is also fed
 * one byte at a time, which must give the same result as feeding it whole.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto_http.h"
#include "unit_main.h"

#define ITEM_MAX 1024

static const struct proto_limits limits = {.max_line = 2048,
                                           .max_get_line = 65536,
                                           .item_max = ITEM_MAX,
                                           .http = true};

/* One parse of `len` bytes copied into a private buffer (the parser may
 * rewrite a chunked body in place). */
struct outcome {
    enum proto_status st;
    struct proto_request req;
    size_t consumed;
    uint16_t status;
    bool cont;
    char buf[16384];
};

static void
_parse_n(struct proto_parser *p, struct outcome *o, const char *in,
         size_t len)
{
    ck_assert_uint_le(len, sizeof(o->buf));
    memcpy(o->buf, in, len);
    o->st = proto_http_parse(p, o->buf, len, &o->consumed, &o->req);
    o->status = p->http_status;
    o->cont = p->http_continue;
}

/*
 * Parses `in` whole with a fresh parser, and also fed one byte more at a
 * time: every prefix must be PROTO_EUNFIN (or the same refusal, once the
 * bytes that decide it have come), and the whole the same answer.
 */
static void
_parse(struct outcome *o, const char *in, size_t len)
{
    struct proto_parser p;
    proto_parser_init(&p, &limits);
    static struct outcome part;
    for (size_t i = 1; i < len; i++) {
        struct proto_parser q;
        proto_parser_init(&q, &limits);
        _parse_n(&q, &part, in, i);
        if (part.st == PROTO_ECLOSE) {
            /* A refusal on a prefix must be the whole request's too. */
            _parse_n(&p, o, in, len);
            ck_assert_int_eq(o->st, PROTO_ECLOSE);
            ck_assert_uint_eq(o->status, part.status);
            return;
        }
        ck_assert_msg(part.st == PROTO_EUNFIN || part.consumed <= i,
                      "prefix of %zu bytes: status %d", i, part.st);
        if (part.st == PROTO_OK) {
            /* A pipelined stream: the first request completed early. */
            break;
        }
    }
    _parse_n(&p, o, in, len);
}

#define PARSE(o, lit) _parse((o), (lit), sizeof(lit) - 1)

static struct outcome o;

static void
_expect_refusal(const char *in, uint16_t status)
{
    _parse(&o, in, strlen(in));
    ck_assert_msg(o.st == PROTO_ECLOSE, "%s: status %d", in, o.st);
    ck_assert_uint_eq(o.status, status);
}

START_TEST(test_get_keep_alive_by_version)
{
    PARSE(&o, "GET /users/1 HTTP/1.1\r\nHost: a\r\n\r\n");
    ck_assert_int_eq(o.st, PROTO_OK);
    ck_assert_int_eq(o.req.kind, PROTO_KIND_HTTP);
    ck_assert_int_eq(o.req.cmd, PROTO_CMD_HTTP_GET);
    ck_assert_int_eq(o.req.http.method, PROTO_HTTP_GET);
    ck_assert_uint_eq(o.req.nkey, 8);
    ck_assert(memcmp(o.req.key, "/users/1", 8) == 0);
    ck_assert(o.req.http.keep_alive);
    ck_assert_uint_eq(o.req.http.minor, 1);
    ck_assert_uint_eq(o.consumed, strlen("GET /users/1 HTTP/1.1\r\nHost: "
                                         "a\r\n\r\n"));

    PARSE(&o, "GET /k HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
    ck_assert_int_eq(o.st, PROTO_OK);
    ck_assert(!o.req.http.keep_alive);

    /* HTTP/1.0: closes unless asked to keep the connection; no Host. */
    PARSE(&o, "GET /k HTTP/1.0\r\n\r\n");
    ck_assert_int_eq(o.st, PROTO_OK);
    ck_assert(!o.req.http.keep_alive);
    PARSE(&o, "GET /k HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n");
    ck_assert_int_eq(o.st, PROTO_OK);
    ck_assert(o.req.http.keep_alive);

    PARSE(&o, "HEAD /k HTTP/1.1\r\nHost: a\r\n\r\n");
    ck_assert_int_eq(o.st, PROTO_OK);
    ck_assert_int_eq(o.req.cmd, PROTO_CMD_HTTP_GET);
    ck_assert_int_eq(o.req.http.method, PROTO_HTTP_HEAD);
}
END_TEST

START_TEST(test_key_is_decoded_path_without_query)
{
    PARSE(&o, "GET /caf%C3%A9/a%2fb?x=1&y=2 HTTP/1.1\r\nHost: a\r\n\r\n");
    ck_assert_int_eq(o.st, PROTO_OK);
    ck_assert_uint_eq(o.req.nkey, strlen("/caf\xc3\xa9/a/b"));
    ck_assert(memcmp(o.req.key, "/caf\xc3\xa9/a/b", o.req.nkey) == 0);
    ck_assert_uint_eq(o.req.nkeys, 1);

    /* A key memcached clients cannot use: space, control, bad escape. */
    _expect_refusal("GET /a%20b HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    _expect_refusal("GET /a%01b HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    _expect_refusal("GET /a%zz HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    _expect_refusal("GET /a% HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    /* Not origin form. */
    _expect_refusal("GET http://h/k HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    _expect_refusal("GET * HTTP/1.1\r\nHost: a\r\n\r\n", 400);
}
END_TEST

START_TEST(test_key_length_limits)
{
    char req[2048];
    char path[1024];

    /* 250 bytes decoded is the most; 251 is 414. */
    path[0] = '/';
    memset(path + 1, 'k', 249);
    path[250] = '\0';
    snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: a\r\n\r\n", path);
    _parse(&o, req, strlen(req));
    ck_assert_int_eq(o.st, PROTO_OK);
    ck_assert_uint_eq(o.req.nkey, 250);
    strcat(path, "k");
    _expect_refusal((snprintf(req, sizeof(req),
                              "GET %s HTTP/1.1\r\nHost: a\r\n\r\n", path),
                     req),
                    414);
    /* Escapes count decoded: 83 x "%41" plus "/" is 84 bytes, fine. */
    strcpy(path, "/");
    for (int i = 0; i < 83; i++) {
        strcat(path, "%41");
    }
    snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: a\r\n\r\n", path);
    _parse(&o, req, strlen(req));
    ck_assert_int_eq(o.st, PROTO_OK);
    ck_assert_uint_eq(o.req.nkey, 84);
    /* A raw path far past any key is 414 before decoding. */
    memset(path + 1, 'k', 900);
    path[901] = '\0';
    snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: a\r\n\r\n", path);
    _expect_refusal(req, 414);
}
END_TEST

START_TEST(test_put_content_length_in_pieces)
{
    static const char in[] = "PUT /doc HTTP/1.1\r\nHost: a\r\n"
                             "Content-Type: application/json\r\n"
                             "Content-Length: 11\r\n\r\n{\"a\":[1,2]}";
    struct proto_parser p;
    proto_parser_init(&p, &limits);
    size_t head = strlen(in) - 11;
    _parse_n(&p, &o, in, head + 3);
    ck_assert_int_eq(o.st, PROTO_EUNFIN);
    ck_assert_uint_eq(p.need, sizeof(in) - 1);
    PARSE(&o, in);
    ck_assert_int_eq(o.st, PROTO_OK);
    ck_assert_int_eq(o.req.cmd, PROTO_CMD_HTTP_PUT);
    ck_assert_int_eq(o.req.http.method, PROTO_HTTP_PUT);
    ck_assert_uint_eq(o.req.vlen, 11);
    ck_assert(memcmp(o.req.value, "{\"a\":[1,2]}", 11) == 0);
    ck_assert(o.req.http.json);
    ck_assert_uint_eq(o.req.http.nctype, 16);
    ck_assert_uint_eq(o.consumed, sizeof(in) - 1);

    /* POST is an upsert too; no body is an empty one. */
    PARSE(&o, "POST /doc HTTP/1.1\r\nHost: a\r\n\r\n");
    ck_assert_int_eq(o.st, PROTO_OK);
    ck_assert_int_eq(o.req.cmd, PROTO_CMD_HTTP_PUT);
    ck_assert_int_eq(o.req.http.method, PROTO_HTTP_POST);
    ck_assert_uint_eq(o.req.vlen, 0);
    PARSE(&o, "DELETE /doc HTTP/1.1\r\nHost: a\r\n\r\n");
    ck_assert_int_eq(o.st, PROTO_OK);
    ck_assert_int_eq(o.req.cmd, PROTO_CMD_HTTP_DELETE);
}
END_TEST

START_TEST(test_chunked_body_joined)
{
    PARSE(&o, "PUT /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
              "\r\n4\r\nWiki\r\n5;ext=1\r\npedia\r\nE\r\n in\r\n\r\nchunks."
              "\r\n0\r\nTrailer: x\r\n\r\n");
    ck_assert_int_eq(o.st, PROTO_OK);
    ck_assert_uint_eq(o.req.vlen, 23);
    ck_assert(memcmp(o.req.value, "Wikipedia in\r\n\r\nchunks.", 23) == 0);

    PARSE(&o, "PUT /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
              "\r\n0\r\n\r\nGET /next HTTP/1.1\r\nHost: a\r\n\r\n");
    ck_assert_int_eq(o.st, PROTO_OK);
    ck_assert_uint_eq(o.req.vlen, 0);
    ck_assert_uint_eq(o.consumed, strlen("PUT /c HTTP/1.1\r\nHost: a\r\n"
                                         "Transfer-Encoding: chunked\r\n"
                                         "\r\n0\r\n\r\n"));
}
END_TEST

START_TEST(test_chunked_refusals)
{
    static const char head[] = "PUT /c HTTP/1.1\r\nHost: a\r\n"
                               "Transfer-Encoding: chunked\r\n\r\n";
    char req[4096];
    /* A size that is not hex, a chunk not followed by CRLF, a bare LF. */
    snprintf(req, sizeof(req), "%szz\r\nab\r\n0\r\n\r\n", head);
    _expect_refusal(req, 400);
    snprintf(req, sizeof(req), "%s2\r\nabc\r\n0\r\n\r\n", head);
    _expect_refusal(req, 400);
    snprintf(req, sizeof(req), "%s2\nab\r\n0\r\n\r\n", head);
    _expect_refusal(req, 400);
    /* Chunks summing past the item limit; a size that overflows. */
    snprintf(req, sizeof(req), "%s401\r\n", head);
    _expect_refusal(req, 413);
    snprintf(req, sizeof(req), "%s200\r\n%0512d\r\n201\r\n", head, 0);
    _expect_refusal(req, 413);
    snprintf(req, sizeof(req), "%s11111111111111111111\r\n", head);
    _expect_refusal(req, 413);
    /* Other codings, and both framings at once (request smuggling). */
    _expect_refusal("PUT /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip"
                    "\r\n\r\n",
                    501);
    _expect_refusal("PUT /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked"
                    "\r\nContent-Length: 3\r\n\r\n0\r\n\r\n",
                    400);
}
END_TEST

START_TEST(test_refusal_statuses)
{
    /* Malformed request line, missing Host in 1.1, folded header. */
    _expect_refusal("GET\r\n\r\n", 400);
    _expect_refusal("GET /k HTTP/1.1\r\n\r\n", 400);
    _expect_refusal("GET /k HTTP/1.1\r\nHost: a\r\n continued\r\n\r\n", 400);
    /* Other versions. */
    _expect_refusal("GET /k HTTP/1.2\r\nHost: a\r\n\r\n", 505);
    _expect_refusal("GET /k HTTP/2.0\r\nHost: a\r\n\r\n", 505);
    _expect_refusal("GET /k HTTP/0.9\r\nHost: a\r\n\r\n", 505);
    /* Methods HTTP defines that kurad does not serve; unknown ones. */
    _expect_refusal("OPTIONS /k HTTP/1.1\r\nHost: a\r\n\r\n", 405);
    _expect_refusal("PATCH /k HTTP/1.1\r\nHost: a\r\n\r\n", 405);
    _expect_refusal("BREW /k HTTP/1.1\r\nHost: a\r\n\r\n", 501);
    /* Body over the item limit, refused before it is read. */
    _expect_refusal("PUT /k HTTP/1.1\r\nHost: a\r\nContent-Length: 1025\r\n"
                    "\r\n",
                    413);
    /* Content-Length that is not a number, or two that differ. */
    _expect_refusal("PUT /k HTTP/1.1\r\nHost: a\r\nContent-Length: 1x\r\n\r\n",
                    400);
    _expect_refusal("PUT /k HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n"
                    "Content-Length: 2\r\n\r\n",
                    400);
    /* An Expect kurad cannot meet. */
    _expect_refusal("PUT /k HTTP/1.1\r\nHost: a\r\nExpect: teapot\r\n\r\n",
                    417);
    /* Kura-Exptime that is not an integer. */
    _expect_refusal("PUT /k HTTP/1.1\r\nHost: a\r\nKura-Exptime: 1.5\r\n\r\n",
                    400);
}
END_TEST

START_TEST(test_oversized_head_is_431)
{
    static char req[PROTO_HTTP_HEAD_MAX * 2];
    int n = snprintf(req, sizeof(req), "GET /k HTTP/1.1\r\nHost: a\r\nX: ");
    memset(req + n, 'v', PROTO_HTTP_HEAD_MAX);
    struct proto_parser p;
    proto_parser_init(&p, &limits);
    /* Unfinished but already over the limit: refused without waiting. */
    ck_assert_int_eq(proto_http_parse(&p, req, (size_t)n + PROTO_HTTP_HEAD_MAX,
                                      &o.consumed, &o.req),
                     PROTO_ECLOSE);
    ck_assert_uint_eq(p.http_status, 431);

    /* More headers than the parser holds. */
    n = snprintf(req, sizeof(req), "GET /k HTTP/1.1\r\nHost: a\r\n");
    for (int i = 0; i < PROTO_HTTP_HEADERS_MAX; i++) {
        n += snprintf(req + n, sizeof(req) - (size_t)n, "X%d: y\r\n", i);
    }
    strcat(req, "\r\n");
    _expect_refusal(req, 431);
}
END_TEST

START_TEST(test_expect_continue_once)
{
    static const char in[] = "PUT /k HTTP/1.1\r\nHost: a\r\n"
                             "Expect: 100-continue\r\nContent-Length: 3\r\n"
                             "\r\nabc";
    size_t head = sizeof(in) - 1 - 3;
    struct proto_parser p;
    proto_parser_init(&p, &limits);
    /* Before the head is complete: nothing is due. */
    _parse_n(&p, &o, in, head - 1);
    ck_assert_int_eq(o.st, PROTO_EUNFIN);
    ck_assert(!o.cont);
    /* Head complete, body missing: 100 Continue is due, once. */
    _parse_n(&p, &o, in, head);
    ck_assert_int_eq(o.st, PROTO_EUNFIN);
    ck_assert(o.cont);
    p.http_continue = false;
    p.http_continue_sent = true;
    _parse_n(&p, &o, in, head + 1);
    ck_assert_int_eq(o.st, PROTO_EUNFIN);
    ck_assert(!o.cont);
    _parse_n(&p, &o, in, sizeof(in) - 1);
    ck_assert_int_eq(o.st, PROTO_OK);
    ck_assert_uint_eq(o.req.vlen, 3);
    ck_assert(!p.http_continue_sent);
    /* The body already there: nothing to continue. */
    proto_parser_init(&p, &limits);
    _parse_n(&p, &o, in, sizeof(in) - 1);
    ck_assert_int_eq(o.st, PROTO_OK);
    ck_assert(!o.cont);
}
END_TEST

START_TEST(test_headers_read)
{
    PARSE(&o, "PUT /k HTTP/1.1\r\nhost: a\r\ncontent-type: application/ld+json;"
              " charset=utf-8\r\nIf-Match: \"0000000000000001\"\r\n"
              "If-None-Match: *\r\nKura-Exptime: -1\r\n"
              "Authorization: Basic dTpw\r\nContent-Length: 2\r\n\r\n{}");
    ck_assert_int_eq(o.st, PROTO_OK);
    ck_assert(o.req.http.json);
    ck_assert_uint_eq(o.req.http.n_if_match, 18);
    ck_assert(memcmp(o.req.http.if_match, "\"0000000000000001\"", 18) == 0);
    ck_assert_uint_eq(o.req.http.n_if_none_match, 1);
    ck_assert(o.req.http.has_exptime);
    ck_assert_int_eq(o.req.http.exptime, -1);
    ck_assert_uint_eq(o.req.http.nauth, 10);

    PARSE(&o, "PUT /k HTTP/1.1\r\nHost: a\r\nContent-Type: text/plain\r\n"
              "Kura-Exptime: 3600\r\n\r\n");
    ck_assert_int_eq(o.st, PROTO_OK);
    ck_assert(!o.req.http.json);
    ck_assert_int_eq(o.req.http.exptime, 3600);
    PARSE(&o, "PUT /k HTTP/1.1\r\nHost: a\r\nContent-Type: application/jsonx"
              "\r\n\r\n");
    ck_assert(!o.req.http.json);
}
END_TEST

START_TEST(test_admin_prefix_reserved)
{
    PARSE(&o, "GET /-/health HTTP/1.1\r\nHost: a\r\n\r\n");
    ck_assert_int_eq(o.st, PROTO_OK);
    ck_assert_int_eq(o.req.cmd, PROTO_CMD_HTTP_ADMIN);
    ck_assert_uint_eq(o.req.nkey, 0);
    /* Any method under the prefix is the endpoints' to answer. */
    PARSE(&o, "PUT /-/metrics HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n"
              "\r\n");
    ck_assert_int_eq(o.st, PROTO_OK);
    ck_assert_int_eq(o.req.cmd, PROTO_CMD_HTTP_ADMIN);
    /* Not the prefix: a record. */
    PARSE(&o, "GET /-x HTTP/1.1\r\nHost: a\r\n\r\n");
    ck_assert_int_eq(o.req.cmd, PROTO_CMD_HTTP_GET);
}
END_TEST

START_TEST(test_pipelined_requests)
{
    static const char in[] = "PUT /a HTTP/1.1\r\nHost: h\r\nContent-Length: 1"
                             "\r\n\r\n1GET /a HTTP/1.1\r\nHost: h\r\n\r\n"
                             "DELETE /a HTTP/1.1\r\nHost: h\r\n\r\n";
    static char buf[sizeof(in)];
    memcpy(buf, in, sizeof(in));
    struct proto_parser p;
    proto_parser_init(&p, &limits);
    size_t off = 0;
    enum proto_cmd want[] = {PROTO_CMD_HTTP_PUT, PROTO_CMD_HTTP_GET,
                             PROTO_CMD_HTTP_DELETE};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(proto_http_parse(&p, buf + off, sizeof(in) - 1 - off,
                                          &o.consumed, &o.req),
                         PROTO_OK);
        ck_assert_int_eq(o.req.cmd, want[i]);
        off += o.consumed;
    }
    ck_assert_uint_eq(off, sizeof(in) - 1);
}
END_TEST

START_TEST(test_detect_by_first_byte)
{
    struct proto_parser p;
    enum proto_kind kind;
    proto_parser_init(&p, &limits);
    ck_assert_int_eq(proto_detect(&p, 'G', &kind), PROTO_OK);
    ck_assert_int_eq(kind, PROTO_KIND_HTTP);
    ck_assert_int_eq(proto_detect(&p, 'g', &kind), PROTO_OK);
    ck_assert_int_eq(kind, PROTO_KIND_TEXT);
    ck_assert_int_eq(proto_detect(&p, 'R', &kind), PROTO_OK); /* REPL */
    ck_assert_int_ne(kind, PROTO_KIND_HTTP);
    /* -nohttp: an upper-case letter is text, answered as memcached does. */
    struct proto_limits off = limits;
    off.http = false;
    proto_parser_init(&p, &off);
    ck_assert_int_eq(proto_detect(&p, 'G', &kind), PROTO_OK);
    ck_assert_int_eq(kind, PROTO_KIND_TEXT);
}
END_TEST

static Suite *
_suite(void)
{
    Suite *s = suite_create("proto_http");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_get_keep_alive_by_version);
    tcase_add_test(tc, test_key_is_decoded_path_without_query);
    tcase_add_test(tc, test_key_length_limits);
    tcase_add_test(tc, test_put_content_length_in_pieces);
    tcase_add_test(tc, test_chunked_body_joined);
    tcase_add_test(tc, test_chunked_refusals);
    tcase_add_test(tc, test_refusal_statuses);
    tcase_add_test(tc, test_oversized_head_is_431);
    tcase_add_test(tc, test_expect_continue_once);
    tcase_add_test(tc, test_headers_read);
    tcase_add_test(tc, test_admin_prefix_reserved);
    tcase_add_test(tc, test_pipelined_requests);
    tcase_add_test(tc, test_detect_by_first_byte);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(_suite)
