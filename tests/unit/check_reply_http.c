/*
 * Unit tests: HTTP/1.x responses (reply_http.c, through reply.h), for
 * requests built the way proto_http.c leaves them (method, minor
 * version, keep-alive). Checked byte for byte: the status line and its
 * reason, the Date header (reply_http_date() at fixed times, and "now"
 * when the caller gives none), Server, Content-Length (also for HEAD, and
 * absent for 204 and 304), Content-Type, ETag, Connection for HTTP/1.0
 * keep-alive and for a close, "100 Continue", the JSON error bodies, the
 * statuses a write's outcome becomes, and the limits reply.h sets on
 * Content-Type and extra headers (doc/http.md describes the protocol).
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "proto.h"
#include "proto_http.h"
#include "reply.h"
#include "reply_fixture.h"
#include "unit_main.h"

#define SERVER "Server: kura/" PACKAGE_VERSION "\r\n"
#define DATE_94 "Sun, 06 Nov 1994 08:49:37 GMT"

/* An HTTP request as proto_http.c leaves it. */
static void
_http(struct proto_request *r, enum proto_http_method method, int minor,
      bool keep_alive)
{
    memset(r, 0, sizeof(*r));
    r->kind = PROTO_KIND_HTTP;
    r->cmd = method == PROTO_HTTP_DELETE ? PROTO_CMD_HTTP_DELETE
             : method == PROTO_HTTP_PUT || method == PROTO_HTTP_POST
                 ? PROTO_CMD_HTTP_PUT
                 : PROTO_CMD_HTTP_GET;
    r->http.method = (uint8_t)method;
    r->http.minor = (uint8_t)minor;
    r->http.keep_alive = keep_alive;
    r->key = "/users/1";
    r->nkey = 8;
    r->http.path = r->key;
    r->http.npath = r->nkey;
}

/*
 * Fails unless `out` holds `head`, then "Date: <d>\r\n" for a second d
 * from `t0` to now, then the `ntail` bytes of `tail`; empties `out`.
 */
static void
_expect_now(struct buf *out, int64_t t0, const char *head, const char *tail,
            size_t ntail, int line)
{
    int64_t t1 = (int64_t)time(NULL);
    char want[1024];
    size_t n = 0;
    for (int64_t t = t0; t <= t1; t++) {
        struct reply_http_date d = {0, ""};
        n = (size_t)snprintf(want, sizeof(want), "%sDate: %s\r\n", head,
                             reply_http_date(&d, t));
        ck_assert_uint_lt(n + ntail, sizeof(want));
        memcpy(want + n, tail, ntail);
        if (buf_len(out) == n + ntail &&
            memcmp(buf_head(out), want, n + ntail) == 0) {
            break;
        }
    }
    reply_fixture_expect(out, want, n + ntail, line);
}

#define EXPECT_NOW(out, t0, head, tail)                                      \
    _expect_now((out), (t0), (head), (tail), sizeof(tail) - 1, __LINE__)

START_TEST(test_date_at_fixed_times)
{
    static const struct {
        int64_t t;
        const char *text;
    } cases[] = {
        {784111777, DATE_94}, /* RFC 9110's example */
        {951782400, "Tue, 29 Feb 2000 00:00:00 GMT"},
        {1700000000, "Tue, 14 Nov 2023 22:13:20 GMT"},
        {2147483647, "Tue, 19 Jan 2038 03:14:07 GMT"},
        {2147483648, "Tue, 19 Jan 2038 03:14:08 GMT"},
        {4102444799, "Thu, 31 Dec 2099 23:59:59 GMT"},
        {86399, "Thu, 01 Jan 1970 23:59:59 GMT"},
    };
    struct reply_http_date d = {0, ""};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *s = reply_http_date(&d, cases[i].t);
        ck_assert_ptr_eq(s, d.text);
        ck_assert_str_eq(s, cases[i].text);
        ck_assert_int_eq(d.second, cases[i].t);
    }
}
END_TEST

START_TEST(test_date_of_second_zero)
{
    /* reply.h: brings `d` up to `now_s` and returns its text; a fresh
     * struct says second 0 with no text, which must not pass for the
     * text of second 0 */
    struct reply_http_date d = {0, ""};
    ck_assert_str_eq(reply_http_date(&d, 0), "Thu, 01 Jan 1970 00:00:00 GMT");
    ck_assert_str_eq(reply_http_date(&d, 1), "Thu, 01 Jan 1970 00:00:01 GMT");
    ck_assert_str_eq(reply_http_date(&d, 0), "Thu, 01 Jan 1970 00:00:00 GMT");
}
END_TEST

START_TEST(test_date_formatted_once_a_second)
{
    struct reply_http_date d = {0, ""};
    ck_assert_str_eq(reply_http_date(&d, 784111777), DATE_94);
    d.text[0] = 'X'; /* the same second uses the text as it is */
    ck_assert_str_eq(reply_http_date(&d, 784111777),
                     "Xun, 06 Nov 1994 08:49:37 GMT");
    ck_assert_str_eq(reply_http_date(&d, 784111778),
                     "Sun, 06 Nov 1994 08:49:38 GMT");
}
END_TEST

START_TEST(test_ok_with_a_body)
{
    /* doc/http.md's example: GET of a JSON document */
    struct buf out;
    buf_init(&out);
    struct proto_request req;
    _http(&req, PROTO_HTTP_GET, 1, true);
    struct reply_http r = {
        .status = 200,
        .date = DATE_94,
        .ctype = "application/json",
        .nctype = 16,
        .body = "{\"name\":\"kura\"}",
        .nbody = 15,
        .has_etag = true,
        .cas = 0x000660f58a44d21c,
    };
    ck_assert(reply_http(&out, &req, &r));
    EXPECT(&out, "HTTP/1.1 200 OK\r\n"
                 "Date: " DATE_94 "\r\n" SERVER
                 "Content-Length: 15\r\n"
                 "Content-Type: application/json\r\n"
                 "ETag: \"000660f58a44d21c\"\r\n"
                 "\r\n"
                 "{\"name\":\"kura\"}");
    /* HEAD: the same head, the length GET would send, no body */
    _http(&req, PROTO_HTTP_HEAD, 1, true);
    ck_assert(reply_http(&out, &req, &r));
    EXPECT(&out, "HTTP/1.1 200 OK\r\n"
                 "Date: " DATE_94 "\r\n" SERVER
                 "Content-Length: 15\r\n"
                 "Content-Type: application/json\r\n"
                 "ETag: \"000660f58a44d21c\"\r\n"
                 "\r\n");
    /* no type, no tag, an empty body, the largest cas, a body of any
     * bytes */
    _http(&req, PROTO_HTTP_GET, 1, true);
    struct reply_http bare = {.status = 200, .date = DATE_94};
    ck_assert(reply_http(&out, &req, &bare));
    EXPECT(&out, "HTTP/1.1 200 OK\r\nDate: " DATE_94 "\r\n" SERVER
                 "Content-Length: 0\r\n\r\n");
    bare.has_etag = true;
    bare.cas = UINT64_MAX;
    bare.body = "\0\r\n\xff";
    bare.nbody = 4;
    ck_assert(reply_http(&out, &req, &bare));
    EXPECT(&out, "HTTP/1.1 200 OK\r\nDate: " DATE_94 "\r\n" SERVER
                 "Content-Length: 4\r\n"
                 "ETag: \"ffffffffffffffff\"\r\n\r\n\0\r\n\xff");
    buf_deinit(&out);
}
END_TEST

START_TEST(test_connection_header)
{
    struct buf out;
    buf_init(&out);
    struct proto_request req;
    struct reply_http r = {.status = 200, .date = DATE_94};
    /* HTTP/1.1 keeps the connection without saying so */
    _http(&req, PROTO_HTTP_GET, 1, true);
    ck_assert(reply_http(&out, &req, &r));
    EXPECT(&out, "HTTP/1.1 200 OK\r\nDate: " DATE_94 "\r\n" SERVER
                 "Content-Length: 0\r\n\r\n");
    /* HTTP/1.0 with "Connection: keep-alive" is told it is kept */
    _http(&req, PROTO_HTTP_GET, 0, true);
    ck_assert(reply_http(&out, &req, &r));
    EXPECT(&out, "HTTP/1.1 200 OK\r\nDate: " DATE_94 "\r\n" SERVER
                 "Content-Length: 0\r\nConnection: keep-alive\r\n\r\n");
    /* the client's "Connection: close", or HTTP/1.0 without keep-alive */
    _http(&req, PROTO_HTTP_GET, 1, false);
    ck_assert(reply_http(&out, &req, &r));
    EXPECT(&out, "HTTP/1.1 200 OK\r\nDate: " DATE_94 "\r\n" SERVER
                 "Content-Length: 0\r\nConnection: close\r\n\r\n");
    _http(&req, PROTO_HTTP_GET, 0, false);
    ck_assert(reply_http(&out, &req, &r));
    EXPECT(&out, "HTTP/1.1 200 OK\r\nDate: " DATE_94 "\r\n" SERVER
                 "Content-Length: 0\r\nConnection: close\r\n\r\n");
    /* the server closing wins over keep-alive */
    r.close = true;
    _http(&req, PROTO_HTTP_GET, 0, true);
    ck_assert(reply_http(&out, &req, &r));
    EXPECT(&out, "HTTP/1.1 200 OK\r\nDate: " DATE_94 "\r\n" SERVER
                 "Content-Length: 0\r\nConnection: close\r\n\r\n");
    _http(&req, PROTO_HTTP_GET, 1, true);
    ck_assert(reply_http(&out, &req, &r));
    EXPECT(&out, "HTTP/1.1 200 OK\r\nDate: " DATE_94 "\r\n" SERVER
                 "Content-Length: 0\r\nConnection: close\r\n\r\n");
    buf_deinit(&out);
}
END_TEST

START_TEST(test_write_answers)
{
    /* PUT: 201 created or 204 replaced, with the new tag; DELETE 204;
     * a GET with a matching If-None-Match 304. 204 and 304 carry no
     * Content-Length (RFC 9110) and no body */
    struct buf out;
    buf_init(&out);
    struct proto_request req;
    _http(&req, PROTO_HTTP_PUT, 1, true);
    struct reply_http r = {.status = 201, .date = DATE_94, .has_etag = true,
                           .cas = 0x1234};
    ck_assert(reply_http(&out, &req, &r));
    EXPECT(&out, "HTTP/1.1 201 Created\r\nDate: " DATE_94 "\r\n" SERVER
                 "Content-Length: 0\r\n"
                 "ETag: \"0000000000001234\"\r\n\r\n");
    r.status = 204;
    r.body = "ignored";
    r.nbody = 7;
    r.ctype = "text/plain";
    r.nctype = 10;
    ck_assert(reply_http(&out, &req, &r));
    EXPECT(&out, "HTTP/1.1 204 No Content\r\nDate: " DATE_94 "\r\n" SERVER
                 "ETag: \"0000000000001234\"\r\n\r\n");
    _http(&req, PROTO_HTTP_GET, 1, true);
    r.status = 304;
    ck_assert(reply_http(&out, &req, &r));
    EXPECT(&out, "HTTP/1.1 304 Not Modified\r\nDate: " DATE_94 "\r\n" SERVER
                 "ETag: \"0000000000001234\"\r\n\r\n");
    _http(&req, PROTO_HTTP_DELETE, 1, true);
    struct reply_http del = {.status = 204, .date = DATE_94};
    ck_assert(reply_http(&out, &req, &del));
    EXPECT(&out, "HTTP/1.1 204 No Content\r\nDate: " DATE_94 "\r\n" SERVER
                 "\r\n");
    buf_deinit(&out);
}
END_TEST

START_TEST(test_reason_phrases)
{
    static const struct {
        uint16_t status;
        const char *line;
    } cases[] = {
        {100, "HTTP/1.1 100 Continue\r\n"},
        {200, "HTTP/1.1 200 OK\r\n"},
        {201, "HTTP/1.1 201 Created\r\n"},
        {204, "HTTP/1.1 204 No Content\r\n"},
        {304, "HTTP/1.1 304 Not Modified\r\n"},
        {400, "HTTP/1.1 400 Bad Request\r\n"},
        {401, "HTTP/1.1 401 Unauthorized\r\n"},
        {403, "HTTP/1.1 403 Forbidden\r\n"},
        {404, "HTTP/1.1 404 Not Found\r\n"},
        {405, "HTTP/1.1 405 Method Not Allowed\r\n"},
        {412, "HTTP/1.1 412 Precondition Failed\r\n"},
        {413, "HTTP/1.1 413 Content Too Large\r\n"},
        {414, "HTTP/1.1 414 URI Too Long\r\n"},
        {417, "HTTP/1.1 417 Expectation Failed\r\n"},
        {431, "HTTP/1.1 431 Request Header Fields Too Large\r\n"},
        {500, "HTTP/1.1 500 Internal Server Error\r\n"},
        {501, "HTTP/1.1 501 Not Implemented\r\n"},
        {503, "HTTP/1.1 503 Service Unavailable\r\n"},
        {505, "HTTP/1.1 505 HTTP Version Not Supported\r\n"},
        {507, "HTTP/1.1 507 Insufficient Storage\r\n"},
        {599, "HTTP/1.1 599 Unknown\r\n"},
    };
    struct buf out;
    buf_init(&out);
    struct proto_request req;
    _http(&req, PROTO_HTTP_GET, 1, true);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct reply_http r = {.status = cases[i].status, .date = DATE_94};
        ck_assert(reply_http(&out, &req, &r));
        size_t n = strlen(cases[i].line);
        ck_assert_uint_gt(buf_len(&out), n);
        ck_assert_msg(memcmp(buf_head(&out), cases[i].line, n) == 0,
                      "status %u: %.*s", cases[i].status, (int)n,
                      buf_head(&out));
        buf_reset(&out);
    }
    buf_deinit(&out);
}
END_TEST

START_TEST(test_error_bodies)
{
    struct buf out;
    buf_init(&out);
    struct proto_request req;
    int64_t t0 = (int64_t)time(NULL);
    _http(&req, PROTO_HTTP_GET, 1, true);
    ck_assert(reply_http_error(&out, &req, 404, NULL, false));
    EXPECT_NOW(&out, t0, "HTTP/1.1 404 Not Found\r\n",
               SERVER "Content-Length: 22\r\n"
                      "Content-Type: application/json\r\n\r\n"
                      "{\"error\":\"Not Found\"}\n");
    /* more members, and a close */
    _http(&req, PROTO_HTTP_PUT, 1, true);
    ck_assert(reply_http_error(&out, &req, 400,
                               "\"reason\":\"invalid JSON: x\","
                               "\"offset\":12",
                               true));
    EXPECT_NOW(&out, t0, "HTTP/1.1 400 Bad Request\r\n",
               SERVER "Content-Length: 63\r\n"
                      "Content-Type: application/json\r\n"
                      "Connection: close\r\n\r\n"
                      "{\"error\":\"Bad Request\",\"reason\":\"invalid "
                      "JSON: x\",\"offset\":12}\n");
    /* members too long for the body are left out, not cut */
    char detail[400];
    memset(detail, 'a', sizeof(detail) - 1);
    detail[0] = '"';
    detail[sizeof(detail) - 1] = '\0';
    ck_assert(reply_http_error(&out, &req, 400, detail, false));
    EXPECT_NOW(&out, t0, "HTTP/1.1 400 Bad Request\r\n",
               SERVER "Content-Length: 24\r\n"
                      "Content-Type: application/json\r\n\r\n"
                      "{\"error\":\"Bad Request\"}\n");
    /* 401 asks for Basic credentials */
    _http(&req, PROTO_HTTP_GET, 1, true);
    ck_assert(reply_http_error(&out, &req, 401, NULL, false));
    EXPECT_NOW(&out, t0, "HTTP/1.1 401 Unauthorized\r\n",
               SERVER "Content-Length: 25\r\n"
                      "Content-Type: application/json\r\n"
                      "WWW-Authenticate: Basic realm=\"kura\"\r\n\r\n"
                      "{\"error\":\"Unauthorized\"}\n");
    /* HEAD: the error's length, no body */
    _http(&req, PROTO_HTTP_HEAD, 1, true);
    ck_assert(reply_http_error(&out, &req, 404, NULL, false));
    EXPECT_NOW(&out, t0, "HTTP/1.1 404 Not Found\r\n",
               SERVER "Content-Length: 22\r\n"
                      "Content-Type: application/json\r\n\r\n");
    buf_deinit(&out);
}
END_TEST

START_TEST(test_continue)
{
    struct buf out;
    buf_init(&out);
    ck_assert(reply_http_continue(&out));
    EXPECT(&out, "HTTP/1.1 100 Continue\r\n\r\n");
    buf_deinit(&out);
}
END_TEST

START_TEST(test_write_outcomes)
{
    /* a write kurad cannot keep (doc/http.md): 503 while storage fails
     * or writes are off, 507 on a full disk; the rest as their codes
     * say, 413 closing (the body was not read) */
    static const struct {
        enum reply_code code;
        const char *line;
        const char *tail;
    } cases[] = {
        {REPLY_SERVER_ERROR_READONLY, "HTTP/1.1 503 Service Unavailable\r\n",
         "Content-Length: 32\r\nContent-Type: application/json\r\n\r\n"
         "{\"error\":\"Service Unavailable\"}\n"},
        {REPLY_SERVER_ERROR_OOM, "HTTP/1.1 503 Service Unavailable\r\n",
         "Content-Length: 32\r\nContent-Type: application/json\r\n\r\n"
         "{\"error\":\"Service Unavailable\"}\n"},
        {REPLY_SERVER_ERROR_NOSPACE, "HTTP/1.1 507 Insufficient Storage\r\n",
         "Content-Length: 33\r\nContent-Type: application/json\r\n\r\n"
         "{\"error\":\"Insufficient Storage\"}\n"},
        {REPLY_UNAUTHENTICATED, "HTTP/1.1 401 Unauthorized\r\n",
         "Content-Length: 25\r\nContent-Type: application/json\r\n"
         "WWW-Authenticate: Basic realm=\"kura\"\r\n\r\n"
         "{\"error\":\"Unauthorized\"}\n"},
        {REPLY_AUTH_FAILED, "HTTP/1.1 401 Unauthorized\r\n",
         "Content-Length: 25\r\nContent-Type: application/json\r\n"
         "WWW-Authenticate: Basic realm=\"kura\"\r\n\r\n"
         "{\"error\":\"Unauthorized\"}\n"},
        {REPLY_ERROR, "HTTP/1.1 501 Not Implemented\r\n",
         "Content-Length: 28\r\nContent-Type: application/json\r\n\r\n"
         "{\"error\":\"Not Implemented\"}\n"},
        {REPLY_TOO_LARGE, "HTTP/1.1 413 Content Too Large\r\n",
         "Content-Length: 30\r\nContent-Type: application/json\r\n"
         "Connection: close\r\n\r\n"
         "{\"error\":\"Content Too Large\"}\n"},
        {REPLY_SERVER_ERROR_IO, "HTTP/1.1 500 Internal Server Error\r\n",
         "Content-Length: 34\r\nContent-Type: application/json\r\n\r\n"
         "{\"error\":\"Internal Server Error\"}\n"},
        {REPLY_SERVER_ERROR_READ, "HTTP/1.1 500 Internal Server Error\r\n",
         "Content-Length: 34\r\nContent-Type: application/json\r\n\r\n"
         "{\"error\":\"Internal Server Error\"}\n"},
    };
    struct buf out;
    buf_init(&out);
    struct proto_request req;
    int64_t t0 = (int64_t)time(NULL);
    _http(&req, PROTO_HTTP_PUT, 1, true);
    char tail[512];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ck_assert(reply_result(&out, &req, cases[i].code, NULL));
        int n = snprintf(tail, sizeof(tail), SERVER "%s", cases[i].tail);
        _expect_now(&out, t0, cases[i].line, tail, (size_t)n, __LINE__);
    }
    buf_deinit(&out);
}
END_TEST

START_TEST(test_refusals)
{
    struct buf out;
    buf_init(&out);
    struct proto_request req;
    struct proto_parser p;
    memset(&p, 0, sizeof(p));
    int64_t t0 = (int64_t)time(NULL);
    /* the parser refused the request: its status, then a close */
    _http(&req, PROTO_HTTP_GET, 1, true);
    p.error = PROTO_ERR_HTTP_STATUS;
    p.http_status = 431;
    ck_assert(reply_proto_error(&out, &req, &p));
    EXPECT_NOW(&out, t0, "HTTP/1.1 431 Request Header Fields Too Large\r\n",
               SERVER "Content-Length: 44\r\n"
                      "Content-Type: application/json\r\n"
                      "Connection: close\r\n\r\n"
                      "{\"error\":\"Request Header Fields Too Large\"}\n");
    /* -mask: 403, the connection stays */
    _http(&req, PROTO_HTTP_DELETE, 1, true);
    ck_assert(reply_denied(&out, &req));
    EXPECT_NOW(&out, t0, "HTTP/1.1 403 Forbidden\r\n",
               SERVER "Content-Length: 22\r\n"
                      "Content-Type: application/json\r\n\r\n"
                      "{\"error\":\"Forbidden\"}\n");
    buf_deinit(&out);
}
END_TEST

START_TEST(test_header_limits)
{
    /* reply.h: a Content-Type over REPLY_HTTP_CTYPE_MAX bytes or extra
     * headers over 128 are refused, and nothing is written */
    char ctype[REPLY_HTTP_CTYPE_MAX + 2];
    memset(ctype, 't', sizeof(ctype));
    char extra[131];
    memset(extra, 'x', sizeof(extra));
    memcpy(extra, "X-A: ", 5);
    struct buf out;
    buf_init(&out);
    struct proto_request req;
    _http(&req, PROTO_HTTP_GET, 1, true);
    ck_assert(reply_http_continue(&out));

    struct reply_http r = {.status = 200, .date = DATE_94, .ctype = ctype,
                           .nctype = REPLY_HTTP_CTYPE_MAX + 1};
    ck_assert(!reply_http(&out, &req, &r));
    r.nctype = REPLY_HTTP_CTYPE_MAX;
    ck_assert(reply_http(&out, &req, &r));
    char want[512];
    int n = snprintf(want, sizeof(want),
                     "HTTP/1.1 100 Continue\r\n\r\n"
                     "HTTP/1.1 200 OK\r\nDate: " DATE_94 "\r\n" SERVER
                     "Content-Length: 0\r\nContent-Type: %.*s\r\n\r\n",
                     REPLY_HTTP_CTYPE_MAX, ctype);
    EXPECT_BYTES(&out, want, (size_t)n);

    struct reply_http x = {.status = 200, .date = DATE_94, .extra = extra};
    memcpy(extra + 127, "\r\n", 3); /* 129 bytes with its line end */
    ck_assert(!reply_http(&out, &req, &x));
    EXPECT_NOTHING(&out);
    memcpy(extra + 126, "\r\n", 3); /* 128 bytes */
    ck_assert(reply_http(&out, &req, &x));
    n = snprintf(want, sizeof(want),
                 "HTTP/1.1 200 OK\r\nDate: " DATE_94 "\r\n" SERVER
                 "Content-Length: 0\r\n%s\r\n", extra);
    EXPECT_BYTES(&out, want, (size_t)n);
    buf_deinit(&out);
}
END_TEST

START_TEST(test_date_of_now)
{
    /* no date given: the response says the current second */
    struct buf out;
    buf_init(&out);
    struct proto_request req;
    _http(&req, PROTO_HTTP_GET, 1, true);
    int64_t t0 = (int64_t)time(NULL);
    struct reply_http r = {.status = 200};
    ck_assert(reply_http(&out, &req, &r));
    EXPECT_NOW(&out, t0, "HTTP/1.1 200 OK\r\n",
               SERVER "Content-Length: 0\r\n\r\n");
    buf_deinit(&out);
}
END_TEST

START_TEST(test_full_buffer_refuses_every_response)
{
    struct buf full = reply_fixture_full();
    struct proto_request req;
    struct proto_parser p;
    memset(&p, 0, sizeof(p));
    p.error = PROTO_ERR_HTTP_STATUS;
    p.http_status = 400;
    _http(&req, PROTO_HTTP_GET, 1, true);
    struct reply_http r = {.status = 200, .date = DATE_94, .body = "x",
                           .nbody = 1};
    ck_assert(!reply_http(&full, &req, &r));
    ck_assert(!reply_http_error(&full, &req, 404, NULL, false));
    ck_assert(!reply_http_continue(&full));
    ck_assert(!reply_result(&full, &req, REPLY_SERVER_ERROR_IO, NULL));
    ck_assert(!reply_proto_error(&full, &req, &p));
    ck_assert(!reply_denied(&full, &req));
    EXPECT_FULL_UNTOUCHED(full);
}
END_TEST

static Suite *
_suite(void)
{
    Suite *s = suite_create("reply_http");
    TCase *date = tcase_create("date");
    tcase_add_test(date, test_date_at_fixed_times);
    tcase_add_test(date, test_date_of_second_zero);
    tcase_add_test(date, test_date_formatted_once_a_second);
    tcase_add_test(date, test_date_of_now);
    suite_add_tcase(s, date);
    TCase *tc = tcase_create("responses");
    tcase_add_test(tc, test_ok_with_a_body);
    tcase_add_test(tc, test_connection_header);
    tcase_add_test(tc, test_write_answers);
    tcase_add_test(tc, test_reason_phrases);
    tcase_add_test(tc, test_error_bodies);
    tcase_add_test(tc, test_continue);
    tcase_add_test(tc, test_write_outcomes);
    tcase_add_test(tc, test_refusals);
    tcase_add_test(tc, test_header_limits);
    tcase_add_test(tc, test_full_buffer_refuses_every_response);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(_suite)
