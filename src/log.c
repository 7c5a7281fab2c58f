/*
 * log: timestamped, leveled, lock-free log lines (see log.h).
 */
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

static const char *const level_names[] = {"DEBUG", "INFO", "WARN", "ERROR"};

int
log_open(struct logger *lg, const char *path, enum log_level min_level)
{
    memset(lg, 0, sizeof(*lg));
    lg->fd = STDERR_FILENO;
    atomic_init(&lg->min_level, (int)min_level);
    if (path == NULL || path[0] == '\0') {
        return 0;
    }
    if (!util_strlcpy(lg->path, path, sizeof(lg->path))) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        return -1;
    }
    lg->fd = fd;
    return 0;
}

int
log_reopen(struct logger *lg)
{
    if (lg->path[0] == '\0') {
        return 0;
    }
    int fd = open(lg->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        return -1;
    }
    /* dup2 replaces the descriptor atomically for concurrent writers. */
    int rc = dup2(fd, lg->fd);
    close(fd);
    return rc < 0 ? -1 : 0;
}

void
log_close(struct logger *lg)
{
    if (lg->fd != STDERR_FILENO) {
        int fd = lg->fd;
        lg->fd = STDERR_FILENO;
        close(fd);
    }
}

void
log_set_level(struct logger *lg, enum log_level min_level)
{
    atomic_store(&lg->min_level, (int)min_level);
}

bool
log_enabled(struct logger *lg, enum log_level level)
{
    return (int)level >= atomic_load_explicit(&lg->min_level,
                                              memory_order_relaxed);
}

static void
_vwrite(struct logger *lg, enum log_level level, const char *fmt, va_list ap)
{
    char line[2048];
    struct timespec ts;
    struct tm tm;

    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
    n += (size_t)snprintf(line + n, sizeof(line) - n, ".%06ld", ts.tv_nsec / 1000);
    n += strftime(line + n, sizeof(line) - n, "%z", &tm);
    n += (size_t)snprintf(line + n, sizeof(line) - n, " %s ",
                          level_names[level]);
    int m = vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
    if (m < 0) {
        return;
    }
    n += (size_t)m < sizeof(line) - n - 1 ? (size_t)m : sizeof(line) - n - 2;
    line[n++] = '\n';
    ssize_t w;
    do {
        w = write(lg->fd, line, n);
    } while (w < 0 && errno == EINTR);
}

void
log_write(struct logger *lg, enum log_level level, const char *fmt, ...)
{
    if (!log_enabled(lg, level)) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    _vwrite(lg, level, fmt, ap);
    va_end(ap);
}

void
log_limited(struct logger *lg, enum log_level level, const char *fmt, ...)
{
    if (!log_enabled(lg, level)) {
        return;
    }
    uint64_t now = (uint64_t)util_now_s();
    uint64_t last = atomic_load(&lg->last_limited_s);
    if (now == last || !atomic_compare_exchange_strong(&lg->last_limited_s,
                                                       &last, now)) {
        atomic_fetch_add(&lg->suppressed, 1);
        return;
    }
    uint64_t dropped = atomic_exchange(&lg->suppressed, 0);
    if (dropped > 0) {
        log_write(lg, level, "(%llu similar lines suppressed)",
                  (unsigned long long)dropped);
    }
    va_list ap;
    va_start(ap, fmt);
    _vwrite(lg, level, fmt, ap);
    va_end(ap);
}
