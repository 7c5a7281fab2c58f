/*
 * Integration tests: kurad's systemd readiness protocol (Type=notify)
 * without systemd. The test binds the datagram socket systemd would, sets
 * NOTIFY_SOCKET to it and starts the real kurad, then checks what arrives:
 *
 * - READY=1 only once kurad serves: when it arrives, the start-up log line
 *   is written and a connection made at once is answered, even after an
 *   unclean stop whose recovery (full check, log redo) precedes it;
 * - SIGHUP: RELOADING=1 with MONOTONIC_USEC (the clock systemd compares
 *   against), then READY=1 again, and the server still answers;
 * - SIGTERM: STOPPING=1, then a clean exit;
 * - -dmn: READY=1 names the daemon in MAINPID= (the process systemd
 *   started has gone);
 * - a failed start: STATUS=cannot start: <reason>, never READY=1;
 * - an abstract socket name (@...), as systemd may give.
 *
 * Every wait polls against a deadline.
 */
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../unit/unit_main.h"
#include "harness.h"

#define MSG_MAX 4096
#define WAIT_MS 15000

static struct kura_proc k;
static int nfd = -1;               /* the socket systemd would listen on */
static char npath[300];

static void
_setup(void)
{
    memset(&k, 0, sizeof(k));
    k.pid = -1;
}

static void
_teardown(void)
{
    if (nfd >= 0) {
        close(nfd);
        nfd = -1;
    }
    if (npath[0] == '/') {
        unlink(npath);
    }
    npath[0] = '\0';
    unsetenv("NOTIFY_SOCKET");
    kura_cleanup(&k);
}

/* Binds the notification socket: a path in k's directory, or an abstract
 * name, and points NOTIFY_SOCKET at it. */
static void
_bind_notify(bool abstract)
{
    struct sockaddr_un sun;
    socklen_t len;

    memset(&sun, 0, sizeof(sun));
    sun.sun_family = AF_UNIX;
    if (abstract) {
        snprintf(npath, sizeof(npath), "@kura-notify-test-%ld-%ld",
                 (long)getpid(), (long)time(NULL));
        memcpy(sun.sun_path, npath, strlen(npath));
        sun.sun_path[0] = '\0';
        len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
                          strlen(npath));
    } else {
        snprintf(npath, sizeof(npath), "%s/notify", k.dir);
        ck_assert_uint_lt(strlen(npath), sizeof(sun.sun_path));
        strcpy(sun.sun_path, npath);
        len = (socklen_t)sizeof(sun);
    }
    nfd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(nfd, 0);
    ck_assert_int_eq(bind(nfd, (struct sockaddr *)&sun, len), 0);
    ck_assert_int_eq(setenv("NOTIFY_SOCKET", npath, 1), 0);
}

/* Waits up to `ms` for one datagram; returns its length (NUL-terminated
 * in `msg`) or -1 on timeout. */
static long
_recv(char *msg, int ms)
{
    struct pollfd p = {nfd, POLLIN, 0};
    int r = poll(&p, 1, ms);
    if (r <= 0) {
        return -1;
    }
    ssize_t n = recv(nfd, msg, MSG_MAX - 1, 0);
    if (n < 0) {
        return -1;
    }
    msg[n] = '\0';
    return (long)n;
}

/* Whether `msg` holds the line `line` ("NAME=value"). */
static bool
_has_line(const char *msg, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = msg; p != NULL && *p != '\0';) {
        if (strncmp(p, line, n) == 0 && (p[n] == '\n' || p[n] == '\0')) {
            return true;
        }
        p = strchr(p, '\n');
        p = p != NULL ? p + 1 : NULL;
    }
    return false;
}

/* The value of "NAME=" in `msg`, or NULL. */
static const char *
_value(const char *msg, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = msg; p != NULL && *p != '\0';) {
        if (strncmp(p, name, n) == 0 && p[n] == '=') {
            return p + n + 1;
        }
        p = strchr(p, '\n');
        p = p != NULL ? p + 1 : NULL;
    }
    return NULL;
}

/* Waits for a datagram holding `line`, skipping others (each is copied
 * to `msg`). False on timeout. Datagrams that hold READY=1 while waiting
 * for something else fail the test (`forbid_ready`). */
static bool
_await(char *msg, const char *line, bool forbid_ready)
{
    uint64_t deadline = harness_now_ms() + WAIT_MS;
    while (harness_now_ms() < deadline) {
        long n = _recv(msg, (int)(deadline - harness_now_ms()));
        if (n < 0) {
            return false;
        }
        if (_has_line(msg, line)) {
            return true;
        }
        if (forbid_ready && _has_line(msg, "READY=1")) {
            ck_abort_msg("READY=1 before %s: %s", line, msg);
        }
    }
    return false;
}

/* Starts kurad as kura_launch does, but returns at once: the test, not
 * the harness, decides when it is ready. */
static void
_spawn(const char *const *extra)
{
    char port[16];
    const char *argv[HARNESS_MAX_ARGS + 16];
    int n = 0;

    snprintf(port, sizeof(port), "%d", k.port);
    argv[n++] = harness_bin();
    argv[n++] = "-port";
    argv[n++] = port;
    argv[n++] = "-thnum";
    argv[n++] = "2";
    argv[n++] = "-log";
    argv[n++] = k.log;
    for (int i = 0; extra != NULL && extra[i] != NULL; i++) {
        argv[n++] = extra[i];
    }
    argv[n++] = k.db;
    argv[n] = NULL;
    pid_t parent = getpid();
    k.pid = fork();
    ck_assert_int_ge(k.pid, 0);
    if (k.pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent || chdir(k.dir) != 0) {
            _exit(127);
        }
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
}

/* Waits up to `ms` for kurad, already signalled, to exit (one SIGTERM, as
 * systemd sends). Returns its exit status, 128+signal, or -1. */
static int
_wait_exit(int ms)
{
    uint64_t deadline = harness_now_ms() + (uint64_t)ms;
    int status;
    while (harness_now_ms() < deadline) {
        if (waitpid(k.pid, &status, WNOHANG) == k.pid) {
            k.pid = -1;
            return WIFEXITED(status) ? WEXITSTATUS(status)
                                     : 128 + WTERMSIG(status);
        }
        struct timespec nap = {0, 5 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    return -1;
}

/* A connection made now is answered: kurad serves. */
static void
_serves_now(int port)
{
    int fd = kc_connect(port);
    ck_assert_msg(fd >= 0, "READY=1 came before the port accepted "
                  "connections");
    ck_assert(kc_check(fd, "version\r\n", "VERSION 1.6.18-kura-" PACKAGE_VERSION
                       "\r\n"));
    close(fd);
}

/* Writes `n` keys so the next start has a log to redo. */
static void
_write_keys(int port, int n)
{
    int fd = kc_connect(port);
    ck_assert_int_ge(fd, 0);
    for (int i = 0; i < n; i++) {
        char req[96];
        snprintf(req, sizeof(req), "set key%d 0 0 5 noreply\r\nvalue\r\n", i);
        ck_assert_int_eq(kc_sends(fd, req), 0);
    }
    ck_assert(kc_check(fd, "get key0\r\n",
                       "VALUE key0 0 5\r\nvalue\r\nEND\r\n"));
    close(fd);
}

/* READY=1 comes once kurad serves, after the recovery an unclean stop
 * asks for, and carries a STATUS naming the address. */
START_TEST(ready_once_serving)
{
    kura_init(&k, NULL);
    ck_assert_int_eq(kura_launch(&k), 0);
    _write_keys(k.port, 5000);
    kura_kill9(&k); /* the next start checks the file and redoes the log */

    _bind_notify(false);
    _spawn(NULL);
    char msg[MSG_MAX];
    ck_assert_msg(_await(msg, "READY=1", false), "no READY=1");
    _serves_now(k.port);
    ck_assert(kura_log_has(&k, "started"));
    char status[64];
    snprintf(status, sizeof(status), "serving on 127.0.0.1:%d", k.port);
    const char *st = _value(msg, "STATUS");
    ck_assert_ptr_nonnull(st);
    ck_assert_msg(strncmp(st, status, strlen(status)) == 0, "STATUS=%s", st);
    ck_assert_ptr_null(_value(msg, "MAINPID")); /* not daemonised */
    int fd = kc_connect(k.port);
    ck_assert(kc_check(fd, "get key4999\r\n",
                       "VALUE key4999 0 5\r\nvalue\r\nEND\r\n"));
    close(fd);
}
END_TEST

/* SIGHUP: RELOADING=1 with the monotonic time, then READY=1; SIGTERM:
 * STOPPING=1, then exit 0. */
START_TEST(reload_and_stop)
{
    kura_init(&k, NULL);
    _bind_notify(false);
    _spawn(NULL);
    char msg[MSG_MAX];
    ck_assert(_await(msg, "READY=1", false));
    _serves_now(k.port);

    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t before = (uint64_t)ts.tv_sec * 1000000u +
                      (uint64_t)ts.tv_nsec / 1000u;
    ck_assert_int_eq(kill(k.pid, SIGHUP), 0);
    ck_assert_msg(_await(msg, "RELOADING=1", true), "no RELOADING=1");
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t after = (uint64_t)ts.tv_sec * 1000000u +
                     (uint64_t)ts.tv_nsec / 1000u;
    const char *mono = _value(msg, "MONOTONIC_USEC");
    ck_assert_ptr_nonnull(mono);
    uint64_t usec = strtoull(mono, NULL, 10);
    ck_assert_msg(usec >= before && usec <= after,
                  "MONOTONIC_USEC=%s outside [%llu, %llu]", mono,
                  (unsigned long long)before, (unsigned long long)after);
    ck_assert_msg(_await(msg, "READY=1", false), "no READY=1 after reload");
    ck_assert(kura_wait_logged(&k, "log reopened", 5000));
    _serves_now(k.port);

    ck_assert_int_eq(kill(k.pid, SIGTERM), 0);
    ck_assert_msg(_await(msg, "STOPPING=1", true), "no STOPPING=1");
    ck_assert_int_eq(_wait_exit(WAIT_MS), 0);
    /* Nothing more after the stop. */
    ck_assert_int_eq(_recv(msg, 100), -1);
}
END_TEST

/* -dmn: the starting command returns once the daemon serves, and READY=1
 * names the daemon, which holds the pid file. */
START_TEST(daemonised_names_mainpid)
{
    kura_init(&k, NULL);
    _bind_notify(true);
    char port[16];
    char pidfile[600];
    char err[4096];
    snprintf(port, sizeof(port), "%d", k.port);
    snprintf(pidfile, sizeof(pidfile), "%s/kurad.pid", k.dir);
    const char *argv[] = {"kurad", "-port", port, "-dmn", "-pid", pidfile,
                          "-log", k.log, k.db, NULL};
    ck_assert_int_eq(harness_run(k.dir, argv, err, sizeof(err), WAIT_MS), 0);
    char msg[MSG_MAX];
    ck_assert_msg(_await(msg, "READY=1", false), "no READY=1");
    const char *mainpid = _value(msg, "MAINPID");
    ck_assert_ptr_nonnull(mainpid);
    long pid = strtol(mainpid, NULL, 10);
    FILE *f = fopen(pidfile, "r");
    ck_assert_ptr_nonnull(f);
    long held = -1;
    ck_assert_int_eq(fscanf(f, "%ld", &held), 1);
    fclose(f);
    ck_assert_int_eq(pid, held);
    _serves_now(k.port);
    ck_assert_int_eq(kill((pid_t)pid, SIGTERM), 0);
    ck_assert_msg(_await(msg, "STOPPING=1", true), "no STOPPING=1");
    /* Not our child: wait for the pid to go. */
    uint64_t deadline = harness_now_ms() + WAIT_MS;
    while (kill((pid_t)pid, 0) == 0 && harness_now_ms() < deadline) {
        struct timespec nap = {0, 5 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    ck_assert_int_ne(kill((pid_t)pid, 0), 0);
}
END_TEST

/* A start that fails says why in STATUS and never says READY=1. */
START_TEST(failed_start_never_ready)
{
    kura_init(&k, NULL);
    _bind_notify(false);
    /* Hold the port so kurad cannot listen. */
    int busy = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sin;
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port = htons((uint16_t)k.port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    setsockopt(busy, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    ck_assert_int_eq(bind(busy, (struct sockaddr *)&sin, sizeof(sin)), 0);
    ck_assert_int_eq(listen(busy, 1), 0);

    char port[16];
    char err[4096];
    snprintf(port, sizeof(port), "%d", k.port);
    const char *argv[] = {"kurad", "-port", port, "-log", k.log, k.db, NULL};
    ck_assert_int_eq(harness_run(k.dir, argv, err, sizeof(err), WAIT_MS), 1);
    char msg[MSG_MAX];
    bool status = false;
    while (_recv(msg, 200) >= 0) {
        ck_assert_msg(!_has_line(msg, "READY=1"), "READY=1 from a failed "
                      "start: %s", msg);
        const char *st = _value(msg, "STATUS");
        if (st != NULL && strncmp(st, "cannot start: ", 14) == 0 &&
            strstr(st, "cannot listen") != NULL) {
            status = true;
        }
    }
    close(busy);
    ck_assert_msg(status, "no STATUS=cannot start");
}
END_TEST

/* A NOTIFY_SOCKET nobody listens on any more costs nothing: kurad starts,
 * serves and stops cleanly, and says so in its log. */
START_TEST(listener_gone)
{
    kura_init(&k, NULL);
    _bind_notify(false);
    close(nfd);
    nfd = -1;
    unlink(npath);
    ck_assert_int_eq(kura_launch(&k), 0);
    ck_assert(kura_wait_logged(&k, "cannot notify systemd", 5000));
    ck_assert_int_eq(kura_stop(&k, WAIT_MS), 0);
}
END_TEST

static Suite *
notify_suite(void)
{
    Suite *s = suite_create("it_notify");
    TCase *tc = tcase_create("notify");
    tcase_add_checked_fixture(tc, _setup, _teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, ready_once_serving);
    tcase_add_test(tc, reload_and_stop);
    tcase_add_test(tc, daemonised_names_mainpid);
    tcase_add_test(tc, failed_start_never_ready);
    tcase_add_test(tc, listener_gone);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(notify_suite)
