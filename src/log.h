/*
 * log: leveled, timestamped log lines for the daemon.
 *
 * Each line is "<ISO 8601 local time> <LEVEL> <message>\n", written with a
 * single write(2) on an O_APPEND descriptor, so lines from different
 * threads never interleave and no lock is needed. log_reopen() (on SIGHUP)
 * swaps the file underneath atomically with dup2(), so rotation by
 * logrotate's "move, then signal" loses no line.
 *
 * Thread-safety: every function may be called from any thread once
 * log_open() has returned.
 */
#ifndef KURA_LOG_H
#define KURA_LOG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum log_level {
    LOG_DEBUG = 0,
    LOG_INFO = 1,
    LOG_WARN = 2,
    LOG_ERROR = 3,
};

struct logger {
    int fd;                /* stderr (2) or the log file */
    char path[4096];       /* "" when logging to standard error */
    _Atomic int min_level; /* lines below this level are dropped */
    _Atomic uint64_t suppressed; /* rate-limited lines not written */
    _Atomic uint64_t last_limited_s;
};

/*
 * Opens `path` for appending (NULL or "" = standard error) and sets the
 * minimum level. Returns 0, or -1 with errno set.
 */
int log_open(struct logger *lg, const char *path, enum log_level min_level);

/* Reopens the log file at its path (after rotation). Returns 0 or -1. */
int log_reopen(struct logger *lg);

/* Closes the log file; later lines go to standard error. */
void log_close(struct logger *lg);

/* Changes the minimum level at run time. */
void log_set_level(struct logger *lg, enum log_level min_level);

/* True if a line at `level` would be written. */
bool log_enabled(struct logger *lg, enum log_level level);

/* Writes one line at `level`. */
void log_write(struct logger *lg, enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * Like log_write(), but at most one line per second across all callers of
 * the limited variant; the count of dropped lines is reported with the next
 * line written. For errors that repeat per request (a failing disk).
 */
void log_limited(struct logger *lg, enum log_level level, const char *fmt,
                 ...) __attribute__((format(printf, 3, 4)));

#define log_debug(lg, ...) log_write((lg), LOG_DEBUG, __VA_ARGS__)
#define log_info(lg, ...) log_write((lg), LOG_INFO, __VA_ARGS__)
#define log_warn(lg, ...) log_write((lg), LOG_WARN, __VA_ARGS__)
#define log_error(lg, ...) log_write((lg), LOG_ERROR, __VA_ARGS__)

#endif
