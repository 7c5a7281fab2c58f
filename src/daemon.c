/*
 * daemon: pid file locking, -kl, daemonising, systemd notification,
 * rlimits (see daemon.h).
 */
#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lockfile.h"
#include "util.h"

enum daemon_status
pidfile_acquire(struct pidfile *pf, const char *path, pid_t *holder, char *err,
                size_t errlen)
{
    pf->fd = -1;
    util_strlcpy(pf->path, path, sizeof(pf->path));
    long pid;
    int fd = lockfile_open(path, &pid);
    if (fd < 0) {
        int saved = errno;
        *holder = (pid_t)pid;
        if (saved == EWOULDBLOCK) {
            snprintf(err, errlen,
                     "kurad is already running with pid %ld (pid file %s); "
                     "stop it first, or start with -kl to replace it",
                     pid, path);
            return DAEMON_RUNNING;
        }
        snprintf(err, errlen, "cannot open pid file %s: %s", path,
                 strerror(saved));
        return DAEMON_ERROR;
    }
    pf->fd = fd;
    return DAEMON_OK;
}

int
pidfile_write(struct pidfile *pf)
{
    return lockfile_name_holder(pf->fd);
}

void
pidfile_release(struct pidfile *pf)
{
    if (pf == NULL || pf->fd < 0) {
        return;
    }
    /* Unlink while still holding the lock so no newcomer's file is lost. */
    unlink(pf->path);
    close(pf->fd);
    pf->fd = -1;
}

static void
_sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* True if some live process holds the lock on `path`. */
static bool
_locked(const char *path, pid_t *holder)
{
    long pid;
    bool locked = lockfile_held(path, &pid) == 1;
    *holder = (pid_t)pid;
    return locked;
}

enum daemon_status
daemon_kill_existing(const char *path, uint64_t timeout_ms, char *err,
                     size_t errlen)
{
    pid_t pid = 0;

    if (!_locked(path, &pid)) {
        return DAEMON_OK;
    }
    if (pid <= 0 || kill(pid, SIGTERM) != 0) {
        snprintf(err, errlen, "cannot signal pid %ld from %s: %s", (long)pid,
                 path, pid <= 0 ? "no pid in file" : strerror(errno));
        return DAEMON_ERROR;
    }
    uint64_t deadline = util_mono_ms() + timeout_ms;
    while (util_mono_ms() < deadline) {
        if (!_locked(path, &pid)) {
            return DAEMON_OK;
        }
        _sleep_ms(20);
    }
    kill(pid, SIGKILL);
    deadline = util_mono_ms() + 5000;
    while (util_mono_ms() < deadline) {
        if (!_locked(path, &pid)) {
            return DAEMON_OK;
        }
        _sleep_ms(20);
    }
    snprintf(err, errlen, "pid %ld did not exit after SIGKILL", (long)pid);
    return DAEMON_ERROR;
}

/* The original process: wait for the daemon's verdict and exit with it. */
static void
_await_daemon(int fd, bool logged_here)
{
    char msg[1024];
    size_t got = 0;

    for (;;) {
        ssize_t n = read(fd, msg + got, sizeof(msg) - 1 - got);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0 || got + (size_t)n >= sizeof(msg) - 1) {
            if (n > 0) {
                got += (size_t)n;
            }
            break;
        }
        got += (size_t)n;
    }
    msg[got] = '\0';
    if (got > 0 && msg[0] == '+') {
        _exit(0);
    }
    /* With its log on this very standard error, the daemon has already
     * written its reason there: once is enough. */
    if (!logged_here || got <= 1) {
        fprintf(stderr, "kurad: %s\n",
                got > 1 ? msg + 1 : "the daemon exited during start-up");
    }
    _exit(1);
}

int
daemon_detach(bool keep_stderr, int *notify_fd)
{
    int pipefd[2];

    if (pipe(pipefd) != 0) {
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        return -1;
    }
    if (pid > 0) {
        close(pipefd[1]);
        _await_daemon(pipefd[0], keep_stderr);
    }
    close(pipefd[0]);
    if (setsid() < 0) {
        _exit(1);
    }
    /* A second fork makes sure the daemon can never reacquire a tty. */
    pid = fork();
    if (pid < 0) {
        _exit(1);
    }
    if (pid > 0) {
        _exit(0);
    }
    umask(022);
    if (chdir("/") != 0) {
        _exit(1);
    }
    int fd = open("/dev/null", O_RDWR);
    if (fd < 0) {
        _exit(1);
    }
    dup2(fd, STDIN_FILENO);
    dup2(fd, STDOUT_FILENO);
    if (!keep_stderr) {
        dup2(fd, STDERR_FILENO);
    }
    if (fd > STDERR_FILENO) {
        close(fd);
    }
    util_set_cloexec(pipefd[1]);
    *notify_fd = pipefd[1];
    return 0;
}

void
daemon_notify(int notify_fd, const char *error)
{
    if (notify_fd < 0) {
        return;
    }
    char msg[1024];
    int n = snprintf(msg, sizeof(msg), "%c%s", error == NULL ? '+' : '-',
                     error == NULL ? "" : error);
    if (n > 0) {
        ssize_t w = write(notify_fd, msg, (size_t)n);
        (void)w;
    }
    close(notify_fd);
}

int
daemon_sd_open(struct daemon_sd *sd, char *err, size_t errlen)
{
    const char *name = getenv("NOTIFY_SOCKET");
    size_t n = name != NULL ? strlen(name) : 0;
    size_t max = sizeof(sd->addr.sun_path);

    memset(sd, 0, sizeof(*sd));
    sd->fd = -1;
    if (n == 0) {
        unsetenv("NOTIFY_SOCKET");
        return 0;
    }
    /* A path needs room for its NUL; an abstract name has none. */
    if (!((name[0] == '/' && n < max) || (name[0] == '@' && n <= max))) {
        snprintf(err, errlen, "NOTIFY_SOCKET=%.64s%s: not a socket path or "
                 "@abstract name that fits a socket address", name,
                 n > 64 ? "..." : "");
        unsetenv("NOTIFY_SOCKET");
        return -1;
    }
    sd->addr.sun_family = AF_UNIX;
    memcpy(sd->addr.sun_path, name, n);
    sd->addrlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
    if (name[0] == '@') {
        sd->addr.sun_path[0] = '\0'; /* abstract: the length marks its end */
    } else {
        sd->addrlen++;               /* the path's NUL */
    }
    unsetenv("NOTIFY_SOCKET");
    sd->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (sd->fd < 0) {
        snprintf(err, errlen, "cannot make a socket for NOTIFY_SOCKET: %s",
                 strerror(errno));
        return -1;
    }
    return 0;
}

int
daemon_sd_notify(struct daemon_sd *sd, const char *state)
{
    if (sd == NULL || sd->fd < 0) {
        return 0;
    }
    size_t n = strlen(state);
    for (;;) {
        ssize_t w = sendto(sd->fd, state, n, MSG_NOSIGNAL,
                           (const struct sockaddr *)&sd->addr, sd->addrlen);
        if (w >= 0) {
            return 0;
        }
        if (errno != EINTR) {
            return -1;
        }
    }
}

void
daemon_sd_close(struct daemon_sd *sd)
{
    if (sd == NULL || sd->fd < 0) {
        return;
    }
    close(sd->fd);
    sd->fd = -1;
}

uint64_t
daemon_raise_nofile(uint64_t want)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        return 0;
    }
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
        struct rlimit next = rl;
        next.rlim_cur = want;
        if (next.rlim_max != RLIM_INFINITY && next.rlim_max < want) {
            next.rlim_max = want; /* only root may raise the hard limit */
        }
        if (setrlimit(RLIMIT_NOFILE, &next) != 0) {
            next.rlim_cur = rl.rlim_max;
            next.rlim_max = rl.rlim_max;
            setrlimit(RLIMIT_NOFILE, &next);
        }
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    return rl.rlim_cur == RLIM_INFINITY ? want : (uint64_t)rl.rlim_cur;
}
