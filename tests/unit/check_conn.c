/*
 * Unit tests: a connection's release of replies (conn.h, txn.h T3). No
 * reply leaves before the writes it follows are durable, reads that
 * follow a write wait with it, output of one pass leaves in one send,
 * an aborted commit or a failed log answers nothing and closes, and
 * release points past the kept number merge towards the later one.
 *
 * The client writes requests into a pipe whose read end is the
 * connection's descriptor, and conn_host.send captures the replies, so
 * the real parser, process.c and the write path run without a socket.
 * Each "pass" does what a worker does: run the event loop once, commit,
 * end the pass at a test-chosen lsn.
 */
#include <check.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "conn.h"
#include "engine_fixture.h"
#include "unit_main.h"

static struct engine_fixture fx;
static struct stats_counters counters;
static struct process_fixture pf;
static struct process_ctx pctx;
static struct event_base *base;
static struct conn_host host;
static _Atomic uint64_t curr_conns;

static uint64_t durable_lsn;  /* what the "log" has made durable */
static bool log_failed;
static char sent[8192];       /* what the client received */
static size_t nsent;
static unsigned sends;        /* send calls that carried bytes */
static int client = -1;       /* the client's end of the pipe */
static int failing_fd = -1;   /* sends on this descriptor fail (EPIPE) */

static uint64_t
_durable(void *arg)
{
    (void)arg;
    return durable_lsn;
}

static bool
_log_failed(void *arg)
{
    (void)arg;
    return log_failed;
}

static ssize_t
_capture(void *arg, int fd, const void *data, size_t len)
{
    (void)arg;
    if (fd == failing_fd) {
        errno = EPIPE; /* the client went away */
        return -1;
    }
    ck_assert_uint_le(nsent + len, sizeof(sent) - 1);
    memcpy(sent + nsent, data, len);
    nsent += len;
    sent[nsent] = '\0';
    sends++;
    return (ssize_t)len;
}

static void
_setup(void)
{
    engine_fixture_setup(&fx);
    engine_fixture_open_store(&fx, "t.tch");
    engine_fixture_start(&fx);
    engine_fixture_process_setup(&fx, &pf);
    memset(&counters, 0, sizeof(counters));
    pctx = (struct process_ctx){.env = &pf.env, .batch = &fx.batch,
                                .stats = &counters};
    base = event_base_new();
    ck_assert_ptr_nonnull(base);
    conn_host_init(&host);
    host.base = base;
    host.pctx = &pctx;
    host.limits = (struct proto_limits){.max_line = PROTO_MAX_LINE_DEFAULT,
                                        .max_get_line = 1 << 20,
                                        .item_max = pf.settings.item_max};
    host.watermark = 1 << 20;
    host.stats = &counters;
    host.curr_conns = &curr_conns;
    host.durable = _durable;
    host.log_failed = _log_failed;
    host.send = _capture;
    durable_lsn = 0;
    log_failed = false;
    failing_fd = -1;
    nsent = 0;
    sent[0] = '\0';
    sends = 0;
}

static void
_teardown(void)
{
    conn_host_close_all(&host);
    if (client >= 0) {
        close(client);
        client = -1;
    }
    event_base_free(base);
    engine_fixture_teardown(&fx);
    engine_fixture_process_teardown(&pf);
}

/* Opens a connection: its descriptor in `*fd`, the client's end in
 * `*to`, where the test writes its requests. */
static struct conn *
_connect_another(int *to, int *fd)
{
    int p[2];
    ck_assert_int_eq(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
    *to = p[1];
    *fd = p[0];
    curr_conns++;
    struct conn *c = conn_create(&host, p[0], false);
    ck_assert_ptr_nonnull(c);
    return c;
}

/* Opens the connection whose requests the test writes to `client`
 * (closed at teardown). */
static struct conn *
_connect(void)
{
    int fd;
    return _connect_another(&client, &fd);
}

static void
_client_sends(const char *text)
{
    ck_assert_int_eq(write(client, text, strlen(text)), (ssize_t)strlen(text));
}

/* One worker pass: read and process what arrived, commit, end the pass
 * as if the log had reached `lsn`. Returns what conn_host_end_pass()
 * returned: whether a reply now waits for `lsn`. */
static bool
_pass(uint64_t lsn)
{
    ck_assert_int_ge(event_base_loop(base, EVLOOP_NONBLOCK), 0);
    ck_assert_int_eq(txn_commit(&fx.batch), TXN_OK);
    return conn_host_end_pass(&host, lsn);
}

/* The log made `lsn` durable; the worker releases what waited on it. */
static void
_durable_now(uint64_t lsn)
{
    durable_lsn = lsn;
    conn_host_durable(&host);
}

START_TEST(test_t3_a_write_is_answered_only_once_durable)
{
    (void)_connect();
    _client_sends("set k 0 0 1\r\nv\r\n");
    ck_assert(_pass(10));
    ck_assert_str_eq(sent, "");
    _durable_now(9);
    ck_assert_str_eq(sent, "");
    _durable_now(10);
    ck_assert_str_eq(sent, "STORED\r\n");
}
END_TEST

START_TEST(test_t3_reads_in_a_writing_pass_wait_with_it)
{
    (void)_connect();
    engine_fixture_put(&fx, "old", "x", 0);
    /* A read before the write and one after: neither may leave before
     * the write is durable, or the client could see its own write (or a
     * later reply) before the write could survive a crash. */
    _client_sends("get old\r\nset k 0 0 1\r\nv\r\nget k\r\n");
    ck_assert(_pass(5));
    ck_assert_str_eq(sent, "");
    _durable_now(5);
    ck_assert_str_eq(sent, "VALUE old 0 1\r\nx\r\nEND\r\n"
                           "STORED\r\n"
                           "VALUE k 0 1\r\nv\r\nEND\r\n");
    /* All of one pass's replies leave in one send. */
    ck_assert_uint_eq(sends, 1);
}
END_TEST

START_TEST(test_a_pass_without_writes_answers_at_its_end)
{
    (void)_connect();
    engine_fixture_put(&fx, "k", "v", 0);
    _client_sends("get k\r\nget none\r\n");
    /* Nothing to wait for: no release point, sent at the end of pass. */
    ck_assert(!_pass(7));
    ck_assert_str_eq(sent, "VALUE k 0 1\r\nv\r\nEND\r\nEND\r\n");
}
END_TEST

START_TEST(test_t3_an_aborted_commit_answers_nothing)
{
    struct conn *c = _connect();
    _client_sends("set k 0 0 1\r\nv\r\nget k\r\n");
    ck_assert_int_ge(event_base_loop(base, EVLOOP_NONBLOCK), 0);
    /* What txn_commit() does for a change it could not make durable. */
    conn_abort(c);
    ck_assert(!conn_host_end_pass(&host, 3));
    _durable_now(3);
    ck_assert_str_eq(sent, "");
    ck_assert_uint_eq(host.nconns, 0);
    ck_assert_uint_eq(curr_conns, 0);
}
END_TEST

START_TEST(test_t3_a_failed_log_closes_the_waiting)
{
    (void)_connect();
    _client_sends("set k 0 0 1\r\nv\r\n");
    ck_assert(_pass(4));
    log_failed = true;
    _durable_now(3);
    ck_assert_str_eq(sent, "");
    ck_assert_ptr_null(host.wait_head);
    (void)conn_host_end_pass(&host, 4); /* frees it */
    ck_assert_uint_eq(host.nconns, 0);
}
END_TEST

/*
 * Three clients write in passes at lsns 1, 2 and 3, and the second writes
 * again at lsn 5. Once lsn 3 is durable the second still waits, with its
 * first reply safe to send; that send fails, which closes it and takes
 * it off the wait list in the middle of the walk that releases the other
 * two. Both must leave the list too, in whichever order it keeps them: a
 * released connection left on it was freed once closed, and the next
 * walk read freed memory.
 */
START_TEST(test_t3_a_failed_send_amid_releases_keeps_the_wait_list)
{
    const char *set = "set k 0 0 1\r\nv\r\n";
    int to[3];
    int fd[3];
    for (int i = 0; i < 3; i++) {
        (void)_connect_another(&to[i], &fd[i]);
        ck_assert_int_eq(write(to[i], set, strlen(set)), (ssize_t)strlen(set));
        ck_assert(_pass((uint64_t)i + 1));
    }
    ck_assert_int_eq(write(to[1], set, strlen(set)), (ssize_t)strlen(set));
    ck_assert(_pass(5));
    failing_fd = fd[1];
    _durable_now(3);
    ck_assert_str_eq(sent, "STORED\r\nSTORED\r\n");
    ck_assert_ptr_null(host.wait_head);
    (void)conn_host_end_pass(&host, 5); /* frees the closed one */
    ck_assert_uint_eq(host.nconns, 2);
    _durable_now(5);
    ck_assert_ptr_null(host.wait_head);
    for (int i = 0; i < 3; i++) {
        close(to[i]);
    }
}
END_TEST

START_TEST(test_t3_release_points_merge_towards_the_later)
{
    (void)_connect();
    /* Ten passes with a write each, at lsns 1..10, nothing durable: more
     * release points than a connection keeps (8). */
    for (uint64_t lsn = 1; lsn <= 10; lsn++) {
        char req[64];
        snprintf(req, sizeof(req), "set k%u 0 0 1\r\nv\r\n", (unsigned)lsn);
        _client_sends(req);
        ck_assert(_pass(lsn));
    }
    ck_assert_str_eq(sent, "");
    _durable_now(3);
    ck_assert_str_eq(sent, "STORED\r\nSTORED\r\nSTORED\r\n");
    /* The last kept point took passes 8-10: they wait for lsn 10. Late,
     * never early. */
    _durable_now(9);
    ck_assert_uint_eq(nsent, 7 * strlen("STORED\r\n"));
    _durable_now(10);
    ck_assert_uint_eq(nsent, 10 * strlen("STORED\r\n"));
}
END_TEST

START_TEST(test_t3_shutdown_sends_only_what_is_safe)
{
    (void)_connect();
    engine_fixture_put(&fx, "k", "v", 0);
    _client_sends("get k\r\n");
    ck_assert(!_pass(1));
    _client_sends("set k 0 0 1\r\nw\r\n");
    ck_assert(_pass(2));
    /* Shut down before lsn 2 is durable: the read was answered, the
     * write is not, and the connection is closed. */
    conn_host_close_all(&host);
    ck_assert_str_eq(sent, "VALUE k 0 1\r\nv\r\nEND\r\n");
    ck_assert_uint_eq(host.nconns, 0);
}
END_TEST

START_TEST(test_quit_answers_what_came_before_then_closes)
{
    (void)_connect();
    _client_sends("set k 0 0 1\r\nv\r\nquit\r\nget k\r\n");
    ck_assert(_pass(6));
    ck_assert_uint_eq(host.nconns, 1);
    _durable_now(6);
    ck_assert_str_eq(sent, "STORED\r\n");
    (void)conn_host_end_pass(&host, 6);
    ck_assert_uint_eq(host.nconns, 0);
}
END_TEST

START_TEST(test_eof_mid_request_drops_it)
{
    (void)_connect();
    _client_sends("set k 0 0 5\r\nab");
    ck_assert(!_pass(1));
    close(client);
    client = -1;
    ck_assert(!_pass(1));
    ck_assert_uint_eq(host.nconns, 0);
    ck_assert_str_eq(sent, "");
    struct record_meta m;
    char v[16];
    ck_assert(!engine_fixture_stored(&fx, "k", &m, v, sizeof(v)));
}
END_TEST

static Suite *
conn_suite(void)
{
    Suite *s = suite_create("conn");
    TCase *tc = tcase_create("release");
    tcase_add_checked_fixture(tc, _setup, _teardown);
    tcase_add_test(tc, test_t3_a_write_is_answered_only_once_durable);
    tcase_add_test(tc, test_t3_reads_in_a_writing_pass_wait_with_it);
    tcase_add_test(tc, test_a_pass_without_writes_answers_at_its_end);
    tcase_add_test(tc, test_t3_an_aborted_commit_answers_nothing);
    tcase_add_test(tc, test_t3_a_failed_log_closes_the_waiting);
    tcase_add_test(tc, test_t3_a_failed_send_amid_releases_keeps_the_wait_list);
    tcase_add_test(tc, test_t3_release_points_merge_towards_the_later);
    tcase_add_test(tc, test_t3_shutdown_sends_only_what_is_safe);
    tcase_add_test(tc, test_quit_answers_what_came_before_then_closes);
    tcase_add_test(tc, test_eof_mid_request_drops_it);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(conn_suite)
