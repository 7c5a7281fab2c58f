/*
 * harness: daemon control and a tiny blocking client (see harness.h).
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *
harness_bin(void)
{
    const char *bin = getenv("KURA_BIN");
    return bin != NULL ? bin : "../../src/kurad";
}

uint64_t
harness_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void
_nap_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

bool
harness_wait_for(bool (*cond)(void *), void *arg, int timeout_ms)
{
    uint64_t deadline = harness_now_ms() + (uint64_t)timeout_ms;
    for (;;) {
        if (cond(arg)) {
            return true;
        }
        if (harness_now_ms() >= deadline) {
            return cond(arg);
        }
        _nap_ms(5);
    }
}

bool
kura_log_has(const struct kura_proc *k, const char *text)
{
    static char buf[1 << 16];
    FILE *f = fopen(k->log, "r");
    if (f == NULL) {
        return false;
    }
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strstr(buf, text) != NULL;
}

struct log_wait {
    const struct kura_proc *k;
    const char *text;
};

static bool
_logged(void *arg)
{
    struct log_wait *w = arg;
    return kura_log_has(w->k, w->text);
}

bool
kura_wait_logged(const struct kura_proc *k, const char *text, int timeout_ms)
{
    struct log_wait w = {k, text};
    return harness_wait_for(_logged, &w, timeout_ms);
}

int
harness_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sin;
    socklen_t len = sizeof(sin);

    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0 ||
        getsockname(fd, (struct sockaddr *)&sin, &len) != 0) {
        abort();
    }
    close(fd);
    return ntohs(sin.sin_port);
}

void
kura_init(struct kura_proc *k, const char *const *extra)
{
    memset(k, 0, sizeof(*k));
    k->pid = -1;
    snprintf(k->dir, sizeof(k->dir), "/tmp/kura-test-XXXXXX");
    if (mkdtemp(k->dir) == NULL) {
        abort();
    }
    snprintf(k->db, sizeof(k->db), "%s/kura.tch", k->dir);
    snprintf(k->log, sizeof(k->log), "%s/kurad.log", k->dir);
    k->port = harness_free_port();
    k->own_db = true;
    for (int i = 0; extra != NULL && extra[i] != NULL; i++) {
        size_t n = strlen(extra[i]);
        if (k->nargs < HARNESS_MAX_ARGS) {
            k->args[k->nargs++] = extra[i];
        }
        if (strcmp(extra[i], "*") == 0 ||
            (n > 4 && extra[i][0] != '-' &&
             strstr(extra[i], ".tch") != NULL)) {
            k->own_db = false;
        }
    }
}

int
harness_make_certs(const char *dir)
{
    const char *src = getenv("srcdir");
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "%s/tests/tls/make-certs '%s'",
             src != NULL ? src : ".", dir);
    return system(cmd) == 0 ? 0 : -1;
}

void
kura_add_tls(struct kura_proc *k, const char *certdir, bool ca)
{
    k->tls_port = harness_free_port();
    snprintf(k->tls_args[0], sizeof(k->tls_args[0]), "%d", k->tls_port);
    snprintf(k->tls_args[1], sizeof(k->tls_args[1]), "%s/server.pem",
             certdir);
    snprintf(k->tls_args[2], sizeof(k->tls_args[2]), "%s/server.key",
             certdir);
    snprintf(k->tls_args[3], sizeof(k->tls_args[3]), "%s/ca.pem", certdir);
    k->args[k->nargs++] = "-tlsport";
    k->args[k->nargs++] = k->tls_args[0];
    k->args[k->nargs++] = "-tlscert";
    k->args[k->nargs++] = k->tls_args[1];
    k->args[k->nargs++] = "-tlskey";
    k->args[k->nargs++] = k->tls_args[2];
    if (ca) {
        k->args[k->nargs++] = "-tlsca";
        k->args[k->nargs++] = k->tls_args[3];
    }
}

static bool
_answers(void *arg)
{
    struct kura_proc *k = arg;
    char buf[128];
    int status;

    if (waitpid(k->pid, &status, WNOHANG) == k->pid) {
        k->pid = -1;
        return true; /* exited: stop waiting, the caller sees pid -1 */
    }
    int fd = k->unix_sock[0] != '\0' ? kc_connect_unix(k->unix_sock)
                                      : kc_connect(k->port);
    if (fd < 0) {
        return false;
    }
    bool ok = kc_sends(fd, "version\r\n") == 0 &&
              kc_read_until(fd, buf, sizeof(buf), "\r\n", 1000) > 0 &&
              strncmp(buf, "VERSION ", 8) == 0;
    close(fd);
    return ok;
}

int
kura_launch(struct kura_proc *k)
{
    char port[16];
    const char *argv[HARNESS_MAX_ARGS + 16];
    int n = 0;

    snprintf(port, sizeof(port), "%d", k->unix_sock[0] != '\0' ? 0 : k->port);
    argv[n++] = harness_bin();
    argv[n++] = "-port";
    argv[n++] = port;
    if (k->unix_sock[0] != '\0') {
        argv[n++] = "-host";
        argv[n++] = k->unix_sock;
    }
    argv[n++] = "-thnum";
    argv[n++] = "2";
    argv[n++] = "-log";
    argv[n++] = k->log;
    for (int i = 0; i < k->nargs; i++) {
        argv[n++] = k->args[i];
    }
    if (k->own_db) {
        argv[n++] = k->db;
    }
    argv[n] = NULL;
    pid_t parent = getpid();
    k->pid = fork();
    if (k->pid < 0) {
        return -1;
    }
    if (k->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) {
            _exit(127);
        }
        if (chdir(k->dir) != 0) {
            _exit(127);
        }
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    if (!harness_wait_for(_answers, k, HARNESS_READY_MS) || k->pid < 0) {
        fprintf(stderr, "harness: kurad did not become ready; log %s\n",
                k->log);
        if (k->pid > 0) {
            kura_kill9(k);
        }
        return -1;
    }
    return 0;
}

void
kura_start(struct kura_proc *k, const char *const *extra)
{
    kura_init(k, extra);
    if (kura_launch(k) != 0) {
        abort();
    }
}

int
kura_stop(struct kura_proc *k, int timeout_ms)
{
    int status;

    if (k->pid <= 0) {
        return -1;
    }
    kill(k->pid, SIGTERM);
    uint64_t deadline = harness_now_ms() + (uint64_t)timeout_ms;
    while (harness_now_ms() < deadline) {
        pid_t r = waitpid(k->pid, &status, WNOHANG);
        if (r == k->pid) {
            k->pid = -1;
            if (WIFEXITED(status)) {
                return WEXITSTATUS(status);
            }
            return 128 + WTERMSIG(status);
        }
        _nap_ms(5);
    }
    kura_kill9(k);
    return -1;
}

void
kura_kill9(struct kura_proc *k)
{
    int status;

    if (k->pid > 0) {
        kill(k->pid, SIGKILL);
        waitpid(k->pid, &status, 0);
        k->pid = -1;
    }
}

void
kura_cleanup(struct kura_proc *k)
{
    char cmd[600];

    kura_kill9(k);
    if (getenv("KURA_KEEP_TMP") == NULL && k->dir[0] != '\0') {
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", k->dir);
        if (system(cmd) != 0) {
            fprintf(stderr, "harness: could not remove %s\n", k->dir);
        }
    }
}

int
harness_run(const char *cwd, const char *const *argv, char *err,
            size_t errlen, int timeout_ms)
{
    int pipefd[2];
    int status;

    if (pipe(pipefd) != 0) {
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(pipefd[1], STDERR_FILENO);
        close(pipefd[0]);
        close(pipefd[1]);
        if (cwd != NULL && chdir(cwd) != 0) {
            _exit(127);
        }
        const char *args[HARNESS_MAX_ARGS + 1];
        int n = 0;
        args[n++] = harness_bin();
        for (int i = 1; argv[i] != NULL && n < HARNESS_MAX_ARGS; i++) {
            args[n++] = argv[i];
        }
        args[n] = NULL;
        execv(args[0], (char *const *)args);
        _exit(127);
    }
    close(pipefd[1]);
    fcntl(pipefd[0], F_SETFL, O_NONBLOCK);
    size_t got = 0;
    uint64_t deadline = harness_now_ms() + (uint64_t)timeout_ms;
    int rc = -1;
    for (;;) {
        ssize_t n = read(pipefd[0], err + got, errlen - 1 - got);
        if (n > 0) {
            got += (size_t)n;
        }
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) {
            while ((n = read(pipefd[0], err + got, errlen - 1 - got)) > 0) {
                got += (size_t)n;
            }
            rc = WIFEXITED(status) ? WEXITSTATUS(status)
                                   : 128 + WTERMSIG(status);
            break;
        }
        if (harness_now_ms() >= deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            break;
        }
        _nap_ms(5);
    }
    err[got] = '\0';
    close(pipefd[0]);
    return rc;
}

/* Connects `fd` to `sa` and gives it 5 s I/O timeouts; returns it, or -1
 * (closing it) if the connect fails. */
static int
_connect_with_timeouts(int fd, const struct sockaddr *sa, socklen_t len)
{
    struct timeval tv = {5, 0};

    if (fd < 0) {
        return -1;
    }
    if (connect(fd, sa, len) != 0) {
        close(fd);
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    return fd;
}

int
kc_connect(int port)
{
    struct sockaddr_in sin;
    int one = 1;

    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port = htons((uint16_t)port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = _connect_with_timeouts(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC,
                                           0),
                                    (struct sockaddr *)&sin, sizeof(sin));
    if (fd >= 0) {
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    return fd;
}

int
kc_connect_unix(const char *path)
{
    struct sockaddr_un sun;

    memset(&sun, 0, sizeof(sun));
    sun.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(sun.sun_path)) {
        return -1;
    }
    memcpy(sun.sun_path, path, strlen(path));
    return _connect_with_timeouts(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC,
                                         0),
                                  (struct sockaddr *)&sun, sizeof(sun));
}

int
kc_send(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

int
kc_sends(int fd, const char *s)
{
    return kc_send(fd, s, strlen(s));
}

long
kc_read_until(int fd, char *out, size_t cap, const char *terminator,
              int timeout_ms)
{
    size_t got = 0;
    size_t tlen = strlen(terminator);
    uint64_t deadline = harness_now_ms() + (uint64_t)timeout_ms;

    out[0] = '\0';
    while (got + 1 < cap) {
        if (got >= tlen && memcmp(out + got - tlen, terminator, tlen) == 0) {
            return (long)got;
        }
        int left = (int)(deadline - harness_now_ms());
        if ((int64_t)(deadline - harness_now_ms()) <= 0) {
            return -1;
        }
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int pr = poll(&pfd, 1, left);
        if (pr <= 0) {
            if (pr < 0 && errno == EINTR) {
                continue;
            }
            return -1;
        }
        ssize_t n = recv(fd, out + got, 1, 0);
        if (n <= 0) {
            return -1;
        }
        got += (size_t)n;
        out[got] = '\0';
    }
    return (long)got;
}

bool
kc_check(int fd, const char *req, const char *expect)
{
    size_t elen = strlen(expect);
    char *reply = malloc(elen + 1);

    if (req != NULL && kc_sends(fd, req) != 0) {
        fprintf(stderr, "kc_check: send failed for %s\n", req);
        return false;
    }
    /* Read exactly as many bytes as expected, then check for extras. */
    size_t got = 0;
    uint64_t deadline = harness_now_ms() + 5000;
    while (got < elen && harness_now_ms() < deadline) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (poll(&pfd, 1, 100) <= 0) {
            continue;
        }
        ssize_t n = recv(fd, reply + got, elen - got, 0);
        if (n <= 0) {
            break;
        }
        got += (size_t)n;
    }
    reply[got] = '\0';
    bool same = got == elen && memcmp(reply, expect, elen) == 0;
    if (!same) {
        fprintf(stderr, "kc_check: request %.200s\n  expected [%.500s]\n"
                        "  got      [%.500s]\n",
                req != NULL ? req : "(none)", expect, reply);
    }
    free(reply);
    return same;
}

bool
kc_drain(int fd, const char *req, const char *terminator)
{
    static char reply[1 << 16];
    if (req != NULL && kc_sends(fd, req) != 0) {
        return false;
    }
    return kc_read_until(fd, reply, sizeof(reply), terminator, 5000) >= 0;
}

bool
kc_wait_closed(int fd, int timeout_ms)
{
    char c;
    uint64_t deadline = harness_now_ms() + (uint64_t)timeout_ms;
    while (harness_now_ms() < deadline) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (poll(&pfd, 1, 50) > 0) {
            ssize_t n = recv(fd, &c, 1, 0);
            if (n == 0 || (n < 0 && errno == ECONNRESET)) {
                return true;
            }
        }
    }
    return false;
}

long
harness_rss_kb(pid_t pid)
{
    char path[64];
    char line[256];
    long kb = -1;

    snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return -1;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "VmRSS:", 6) == 0) {
            kb = strtol(line + 6, NULL, 10);
            break;
        }
    }
    fclose(f);
    return kb;
}

long long
kc_stat(int fd, const char *name)
{
    static char reply[1 << 16];
    char want[128];

    if (kc_sends(fd, "stats\r\n") != 0 ||
        kc_read_until(fd, reply, sizeof(reply), "END\r\n", 5000) < 0) {
        return -1;
    }
    snprintf(want, sizeof(want), "STAT %s ", name);
    const char *p = strstr(reply, want);
    if (p == NULL) {
        return -1;
    }
    return strtoll(p + strlen(want), NULL, 10);
}

/* ------------------------------------------------------- kura tool runs */

int
harness_tool_spawn(struct harness_tool *t, const char *const *args)
{
    const char *argv[HARNESS_MAX_ARGS + 2];
    const char *tool = getenv("KURA_TOOL");
    int out[2];
    int err[2];
    int n = 0;

    memset(t, 0, sizeof(*t));
    t->out_fd = t->err_fd = -1;
    argv[n++] = tool != NULL ? tool : "tools/kura/kura";
    for (int i = 0; args[i] != NULL && n <= HARNESS_MAX_ARGS; i++) {
        argv[n++] = args[i];
    }
    argv[n] = NULL;
    if (pipe(out) != 0) {
        return -1;
    }
    if (pipe(err) != 0) {
        close(out[0]);
        close(out[1]);
        return -1;
    }
    pid_t parent = getpid();
    t->pid = fork();
    if (t->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) {
            _exit(127);
        }
        dup2(out[1], STDOUT_FILENO);
        dup2(err[1], STDERR_FILENO);
        close(out[0]);
        close(out[1]);
        close(err[0]);
        close(err[1]);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(out[1]);
    close(err[1]);
    if (t->pid < 0) {
        close(out[0]);
        close(err[0]);
        return -1;
    }
    t->out_fd = out[0];
    t->err_fd = err[0];
    fcntl(t->out_fd, F_SETFL, O_NONBLOCK);
    fcntl(t->err_fd, F_SETFL, O_NONBLOCK);
    return 0;
}

/* Reads what `fd` holds now onto buf[*len], keeping a NUL after it. */
static void
_tool_drain(int fd, char *buf, size_t *len)
{
    ssize_t n;
    while (*len + 1 < HARNESS_TOOL_OUT_CAP &&
           (n = read(fd, buf + *len, HARNESS_TOOL_OUT_CAP - 1 - *len)) > 0) {
        *len += (size_t)n;
    }
    buf[*len] = '\0';
}

int
harness_tool_finish(struct harness_tool *t, int timeout_ms)
{
    uint64_t deadline = harness_now_ms() + (uint64_t)timeout_ms;
    int status;
    int rc = -1;

    for (;;) {
        struct pollfd pfd[2] = {{.fd = t->out_fd, .events = POLLIN},
                                {.fd = t->err_fd, .events = POLLIN}};
        poll(pfd, 2, 20);
        _tool_drain(t->out_fd, t->out, &t->out_len);
        _tool_drain(t->err_fd, t->err, &t->err_len);
        if (waitpid(t->pid, &status, WNOHANG) == t->pid) {
            rc = WIFEXITED(status) ? WEXITSTATUS(status)
                                   : 128 + WTERMSIG(status);
            break;
        }
        if (harness_now_ms() >= deadline) {
            kill(t->pid, SIGKILL);
            waitpid(t->pid, &status, 0);
            break;
        }
    }
    _tool_drain(t->out_fd, t->out, &t->out_len);
    _tool_drain(t->err_fd, t->err, &t->err_len);
    close(t->out_fd);
    close(t->err_fd);
    t->out_fd = t->err_fd = -1;
    return rc;
}

int
harness_tool_run(struct harness_tool *t, const char *const *args, int want,
                 int timeout_ms)
{
    int rc = harness_tool_spawn(t, args) == 0
                 ? harness_tool_finish(t, timeout_ms)
                 : -1;
    if (rc != want) {
        fprintf(stderr, "kura %s exited %d, expected %d\n--- stdout\n%s"
                        "--- stderr\n%s", args[0] != NULL ? args[0] : "",
                rc, want, t->out, t->err);
    }
    return rc;
}
