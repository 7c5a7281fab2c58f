/*
 * Integration tests: kurad's HTTP interface over real sockets, for what
 * the client scripts (clients/http_client_test.py, clients/http_curl.sh)
 * cannot do against one daemon: documents surviving a restart and kill -9,
 * replication of HTTP writes with their Content-Type, -nohttp, -mask,
 * -auth and the hostile-input battery (slowloris, a 10 MB header, a wrong
 * Content-Length, a bad chunk size, binary garbage), each of which must
 * cost only its own connection.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../unit/unit_main.h"
#include "harness.h"

static struct kura_proc k;

struct response {
    int status;
    char head[4096];
    char body[8192];
    size_t nbody;
};

/* The value of header `name` in `r` (static), or "" if absent. */
static const char *
_header(const struct response *r, const char *name)
{
    static char value[256];
    size_t n = strlen(name);
    value[0] = '\0';
    for (const char *l = strstr(r->head, "\r\n"); l != NULL;
         l = strstr(l + 2, "\r\n")) {
        if (strncasecmp(l + 2, name, n) == 0 && l[2 + n] == ':') {
            const char *v = l + 3 + n + strspn(l + 3 + n, " ");
            size_t len = strcspn(v, "\r");
            snprintf(value, sizeof(value), "%.*s", (int)len, v);
            break;
        }
    }
    return value;
}

/*
 * Reads one response on `fd`: head, then a Content-Length body. Returns
 * false on timeout or close before it was whole.
 */
static bool
_read_response(int fd, struct response *r)
{
    memset(r, 0, sizeof(*r));
    if (kc_read_until(fd, r->head, sizeof(r->head), "\r\n\r\n", 5000) < 0) {
        return false;
    }
    if (sscanf(r->head, "HTTP/1.1 %d ", &r->status) != 1) {
        return false;
    }
    const char *cl = _header(r, "Content-Length");
    size_t want = cl[0] != '\0' ? strtoul(cl, NULL, 10) : 0;
    ck_assert_uint_lt(want, sizeof(r->body));
    while (r->nbody < want) {
        ssize_t got = recv(fd, r->body + r->nbody, want - r->nbody, 0);
        if (got <= 0) {
            return false;
        }
        r->nbody += (size_t)got;
    }
    return true;
}

/* One request on a fresh connection; the status, or -1. */
static int
_request(int port, const char *req, struct response *r)
{
    int fd = kc_connect(port);
    if (fd < 0) {
        return -1;
    }
    bool ok = kc_sends(fd, req) == 0 && _read_response(fd, r);
    close(fd);
    return ok ? r->status : -1;
}

static int
_put(int port, const char *path, const char *ctype, const char *body)
{
    char req[4096];
    struct response r;
    snprintf(req, sizeof(req),
             "PUT %s HTTP/1.1\r\nHost: t\r\nContent-Type: %s\r\n"
             "Content-Length: %zu\r\n\r\n%s",
             path, ctype, strlen(body), body);
    return _request(port, req, &r);
}

static int
_get(int port, const char *path, struct response *r)
{
    char req[1024];
    snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: t\r\n\r\n", path);
    return _request(port, req, r);
}

/* A fresh connection still gets answered: the bystander check. */
static void
_bystander_ok(int port)
{
    struct response r;
    ck_assert_int_eq(_get(port, "/-/health", &r), 200);
}

START_TEST(test_documents_survive_restart_and_kill9)
{
    kura_start(&k, NULL);
    char path[64];
    char body[64];
    for (int i = 0; i < 100; i++) {
        snprintf(path, sizeof(path), "/docs/%d", i);
        snprintf(body, sizeof(body), "{\"n\":%d}", i);
        ck_assert_int_eq(_put(k.port, path, "application/json", body), 201);
    }
    struct response before;
    ck_assert_int_eq(_get(k.port, "/docs/7", &before), 200);
    ck_assert_int_eq(kura_stop(&k, 10000), 0);
    ck_assert_int_eq(kura_launch(&k), 0);
    struct response r;
    ck_assert_int_eq(_get(k.port, "/docs/7", &r), 200);
    ck_assert_str_eq(_header(&r, "Content-Type"), "application/json");
    ck_assert_str_eq(r.body, "{\"n\":7}");
    char etag[64];
    snprintf(etag, sizeof(etag), "%s", _header(&before, "ETag"));
    ck_assert_str_eq(_header(&r, "ETag"), etag);
    /* Acknowledged, then kill -9: every 2xx write is there. */
    for (int i = 100; i < 200; i++) {
        snprintf(path, sizeof(path), "/docs/%d", i);
        snprintf(body, sizeof(body), "{\"n\":%d}", i);
        ck_assert_int_eq(_put(k.port, path, "application/json", body), 201);
    }
    kura_kill9(&k);
    ck_assert_int_eq(kura_launch(&k), 0);
    for (int i = 0; i < 200; i++) {
        snprintf(path, sizeof(path), "/docs/%d", i);
        snprintf(body, sizeof(body), "{\"n\":%d}", i);
        ck_assert_int_eq(_get(k.port, path, &r), 200);
        ck_assert_str_eq(r.body, body);
        ck_assert_str_eq(_header(&r, "Content-Type"), "application/json");
    }
    kura_cleanup(&k);
}
END_TEST

static struct kura_proc peer;

struct replicated {
    int port;
    const char *path;
    int status;
};

static bool
_has_status(void *arg)
{
    struct replicated *w = arg;
    struct response r;
    return _get(w->port, w->path, &r) == w->status &&
           (w->status != 200 ||
            strcmp(_header(&r, "Content-Type"), "application/ld+json") == 0);
}

START_TEST(test_http_writes_replicate_with_their_type)
{
    char k_port[16];
    char peer_port[16];
    kura_init(&k, NULL);
    kura_init(&peer, NULL);
    snprintf(k_port, sizeof(k_port), "%d", k.port);
    snprintf(peer_port, sizeof(peer_port), "%d", peer.port);
    const char *a[] = {"-sid", "1", "-mhost", "127.0.0.1", "-mport",
                       peer_port};
    const char *b[] = {"-sid", "2", "-mhost", "127.0.0.1", "-mport", k_port};
    for (int i = 0; i < 6; i++) {
        k.args[k.nargs++] = a[i];
        peer.args[peer.nargs++] = b[i];
    }
    ck_assert_int_eq(kura_launch(&k), 0);
    ck_assert_int_eq(kura_launch(&peer), 0);
    ck_assert_int_eq(_put(k.port, "/r/doc", "application/ld+json", "{}"), 201);
    struct replicated w = {peer.port, "/r/doc", 200};
    ck_assert(harness_wait_for(_has_status, &w, 10000));
    /* A delete on the peer reaches the first. */
    struct response r;
    ck_assert_int_eq(_request(peer.port,
                              "DELETE /r/doc HTTP/1.1\r\nHost: t\r\n\r\n", &r),
                     204);
    struct replicated gone = {k.port, "/r/doc", 404};
    ck_assert(harness_wait_for(_has_status, &gone, 10000));
    kura_cleanup(&peer);
    kura_cleanup(&k);
}
END_TEST

START_TEST(test_nohttp_closes_as_memcached)
{
    /* memcached closes a connection that starts with an HTTP request,
     * without a reply; so does kurad under -nohttp. */
    static const char *args[] = {"-nohttp", NULL};
    kura_start(&k, args);
    int fd = kc_connect(k.port);
    char buf[256];
    kc_sends(fd, "GET /k HTTP/1.1\r\nHost: t\r\n\r\n");
    ck_assert_int_eq(recv(fd, buf, sizeof(buf), 0), 0); /* closed, no reply */
    close(fd);
    kura_cleanup(&k);
}
END_TEST

START_TEST(test_mask_refuses_writes_and_health_says_so)
{
    static const char *args[] = {"-mask", "allwrite", NULL};
    kura_start(&k, args);
    struct response r;
    ck_assert_int_eq(_put(k.port, "/m", "text/plain", "x"), 403);
    ck_assert_int_eq(_request(k.port, "DELETE /m HTTP/1.1\r\nHost: t\r\n\r\n",
                              &r),
                     403);
    ck_assert_int_eq(_get(k.port, "/m", &r), 404);
    ck_assert_int_eq(_get(k.port, "/-/health", &r), 503);
    /* kura_writable (what `kura ping` reads) agrees with /-/health. */
    int fd = kc_connect(k.port);
    ck_assert_int_eq(kc_stat(fd, "kura_writable"), 0);
    close(fd);
    kura_cleanup(&k);
    /* The endpoints follow the stats command's bit. */
    static const char *stat_args[] = {"-mask", "stat", NULL};
    kura_start(&k, stat_args);
    ck_assert_int_eq(_get(k.port, "/-/metrics", &r), 403);
    ck_assert_int_eq(_put(k.port, "/m", "text/plain", "x"), 201);
    kura_cleanup(&k);
}
END_TEST

START_TEST(test_basic_auth_with_password_file)
{
    kura_init(&k, NULL);
    char users[600];
    snprintf(users, sizeof(users), "%s/users", k.dir);
    FILE *f = fopen(users, "w");
    ck_assert_ptr_nonnull(f);
    fputs("app:s3cret\n", f);
    fclose(f);
    chmod(users, 0600);
    k.args[k.nargs++] = "-auth";
    k.args[k.nargs++] = users;
    ck_assert_int_eq(kura_launch(&k), 0);
    struct response r;
    ck_assert_int_eq(_get(k.port, "/a", &r), 401);
    ck_assert_str_eq(_header(&r, "WWW-Authenticate"), "Basic realm=\"kura\"");
    /* app:s3cret and app:wrong */
    ck_assert_int_eq(_request(k.port, "GET /a HTTP/1.1\r\nHost: t\r\n"
                                      "Authorization: Basic YXBwOnMzY3JldA=="
                                      "\r\n\r\n",
                              &r),
                     404);
    ck_assert_int_eq(_request(k.port, "GET /a HTTP/1.1\r\nHost: t\r\n"
                                      "Authorization: Basic YXBwOndyb25n"
                                      "\r\n\r\n",
                              &r),
                     401);
    /* Health checks need no credentials. */
    ck_assert_int_eq(_get(k.port, "/-/health", &r), 200);
    kura_cleanup(&k);
}
END_TEST

/* ------------------------------------------------------------ hostile */

#define SLOW_CLIENTS 200

START_TEST(test_slowloris_headers)
{
    static const char *args[] = {"-tout", "2", NULL};
    kura_start(&k, args);
    int fds[SLOW_CLIENTS];
    const char *head = "GET /slow HTTP/1.1\r\nHost: t\r\nX-Slow: ";
    for (int i = 0; i < SLOW_CLIENTS; i++) {
        fds[i] = kc_connect(k.port);
        ck_assert_int_ge(fds[i], 0);
        ck_assert_int_eq(kc_sends(fds[i], head), 0);
    }
    /* A byte each, a few rounds: nobody else waits for them. */
    for (int round = 0; round < 5; round++) {
        for (int i = 0; i < SLOW_CLIENTS; i++) {
            send(fds[i], "a", 1, MSG_NOSIGNAL);
        }
        _bystander_ok(k.port);
    }
    /* Gone silent: the idle timeout closes every one of them. */
    for (int i = 0; i < SLOW_CLIENTS; i++) {
        ck_assert(kc_wait_closed(fds[i], 10000));
        close(fds[i]);
    }
    _bystander_ok(k.port);
    kura_cleanup(&k);
}
END_TEST

START_TEST(test_ten_megabyte_header)
{
    kura_start(&k, NULL);
    long before = harness_rss_kb(k.pid);
    int fd = kc_connect(k.port);
    kc_sends(fd, "GET /big HTTP/1.1\r\nHost: t\r\nX-Big: ");
    static char chunk[65536];
    memset(chunk, 'h', sizeof(chunk));
    size_t sent = 0;
    while (sent < 10u << 20) {
        ssize_t n = send(fd, chunk, sizeof(chunk), MSG_NOSIGNAL);
        if (n <= 0) {
            break; /* refused and closed: the point */
        }
        sent += (size_t)n;
    }
    struct response r;
    ck_assert(_read_response(fd, &r));
    ck_assert_int_eq(r.status, 431);
    ck_assert(kc_wait_closed(fd, 5000));
    close(fd);
    _bystander_ok(k.port);
    long after = harness_rss_kb(k.pid);
    ck_assert_msg(after - before < 4 * 1024, "RSS grew from %ld to %ld KiB",
                  before, after);
    kura_cleanup(&k);
}
END_TEST

START_TEST(test_wrong_content_length)
{
    kura_start(&k, NULL);
    struct response r;
    /* Longer than declared: the excess is read as the next request. */
    int fd = kc_connect(k.port);
    kc_sends(fd, "PUT /cl HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\n"
                 "abcdefgh\r\n\r\n");
    ck_assert(_read_response(fd, &r));
    ck_assert_int_eq(r.status, 201);
    ck_assert(_read_response(fd, &r));
    ck_assert_int_eq(r.status, 400);
    ck_assert(kc_wait_closed(fd, 5000));
    close(fd);
    ck_assert_int_eq(_get(k.port, "/cl", &r), 200);
    ck_assert_str_eq(r.body, "abc");
    /* Shorter than declared: it waits for the rest, alone. */
    fd = kc_connect(k.port);
    kc_sends(fd, "PUT /short HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n"
                 "\r\nabc");
    _bystander_ok(k.port);
    ck_assert_int_eq(_get(k.port, "/short", &r), 404);
    close(fd);
    /* A negative or absurd length is refused outright. */
    ck_assert_int_eq(_request(k.port, "PUT /neg HTTP/1.1\r\nHost: t\r\n"
                                      "Content-Length: -1\r\n\r\n",
                              &r),
                     400);
    ck_assert_int_eq(_request(k.port, "PUT /huge HTTP/1.1\r\nHost: t\r\n"
                                      "Content-Length: 99999999999999999999"
                                      "\r\n\r\n",
                              &r),
                     400);
    kura_cleanup(&k);
}
END_TEST

START_TEST(test_bad_chunk_size)
{
    kura_start(&k, NULL);
    struct response r;
    ck_assert_int_eq(_request(k.port, "PUT /ch HTTP/1.1\r\nHost: t\r\n"
                                      "Transfer-Encoding: chunked\r\n\r\n"
                                      "xyz\r\nabc\r\n0\r\n\r\n",
                              &r),
                     400);
    ck_assert_int_eq(_request(k.port, "PUT /ch HTTP/1.1\r\nHost: t\r\n"
                                      "Transfer-Encoding: chunked\r\n\r\n"
                                      "fffffffffffffffff\r\n",
                              &r),
                     413);
    ck_assert_int_eq(_get(k.port, "/ch", &r), 404);
    _bystander_ok(k.port);
    kura_cleanup(&k);
}
END_TEST

START_TEST(test_binary_garbage)
{
    kura_start(&k, NULL);
    unsigned seed = 20261123;
    static unsigned char junk[65536];
    for (int round = 0; round < 20; round++) {
        for (size_t i = 0; i < sizeof(junk); i++) {
            junk[i] = (unsigned char)(rand_r(&seed) >> 7);
        }
        /* After an HTTP start, so the HTTP parser is the one that sees it. */
        int fd = kc_connect(k.port);
        kc_sends(fd, round % 2 == 0 ? "GET /" : "PUT /g HTTP/1.1\r\n");
        send(fd, junk, sizeof(junk), MSG_NOSIGNAL);
        ck_assert(kc_wait_closed(fd, 5000));
        close(fd);
    }
    _bystander_ok(k.port);
    kura_cleanup(&k);
}
END_TEST

static Suite *
_suite(void)
{
    Suite *s = suite_create("it_http");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_documents_survive_restart_and_kill9);
    tcase_add_test(tc, test_http_writes_replicate_with_their_type);
    tcase_add_test(tc, test_nohttp_closes_as_memcached);
    tcase_add_test(tc, test_mask_refuses_writes_and_health_says_so);
    tcase_add_test(tc, test_basic_auth_with_password_file);
    suite_add_tcase(s, tc);
    TCase *hostile = tcase_create("hostile");
    tcase_set_timeout(hostile, 60);
    tcase_add_test(hostile, test_slowloris_headers);
    tcase_add_test(hostile, test_ten_megabyte_header);
    tcase_add_test(hostile, test_wrong_content_length);
    tcase_add_test(hostile, test_bad_chunk_size);
    tcase_add_test(hostile, test_binary_garbage);
    suite_add_tcase(s, hostile);
    return s;
}

TEST_MAIN(_suite)
