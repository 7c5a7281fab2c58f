/*
 * daemon: process life: pid file, daemonising, replacing a running
 * instance, telling systemd it is ready, and the descriptor limit.
 *
 * The pid file is held with an exclusive flock() for the life of the
 * process. A pid file left behind by a crashed kurad is therefore not
 * locked, and the next start simply takes it over; only a live process
 * holding the lock blocks a second start. (ttserver instead refuses to
 * start while the file exists, so every crash needed a hand to remove it.)
 *
 * Readiness is told two ways, at the same moment (once kurad is
 * serving): to the process that started a -dmn daemon, through a pipe
 * (daemon_detach, daemon_notify), and to systemd, through its
 * notification socket (daemon_sd_*, for a Type=notify unit).
 */
#ifndef KURA_DAEMON_H
#define KURA_DAEMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

struct pidfile {
    int fd;           /* locked descriptor, or -1 */
    char path[4096];
};

enum daemon_status {
    DAEMON_OK = 0,
    DAEMON_RUNNING, /* another live process holds the pid file */
    DAEMON_ERROR,   /* see the message */
};

/*
 * Opens and locks `path`. On DAEMON_RUNNING, `*holder` is the pid written
 * in the file. On failure a reason goes to `err` (`errlen`). The pid is
 * written later by pidfile_write(), after daemonising.
 */
enum daemon_status pidfile_acquire(struct pidfile *pf, const char *path,
                                   pid_t *holder, char *err, size_t errlen);

/* Writes the calling process's pid into the locked file. Returns 0/-1. */
int pidfile_write(struct pidfile *pf);

/* Removes and unlocks the pid file (clean shutdown). NULL-safe. */
void pidfile_release(struct pidfile *pf);

/*
 * Stops the process named in pid file `path` (-kl): SIGTERM, then waits up
 * to `timeout_ms` for it to release the file, then SIGKILL. Returns
 * DAEMON_OK if no live process holds the file afterwards.
 */
enum daemon_status daemon_kill_existing(const char *path, uint64_t timeout_ms,
                                        char *err, size_t errlen);

/*
 * Forks into the background, starts a new session, leaves the working
 * directory and points standard input and output at /dev/null (standard
 * error too unless `keep_stderr`, when the log goes there). The original
 * process waits until the daemon calls daemon_notify(): it then exits 0,
 * or prints the daemon's error message and exits 1, so a daemon that fails
 * to start is still reported to whoever started it (with `keep_stderr`
 * the daemon's log line on that standard error has said it, and the
 * message is not repeated; the daemon logs every reason it notifies).
 * Returns 0 in the daemon with `*notify_fd` set, -1 on failure (in the
 * original process, with errno set).
 */
int daemon_detach(bool keep_stderr, int *notify_fd);

/*
 * Tells the waiting original process that start-up finished: `error` NULL
 * means success. Closes `notify_fd`. Ignored when `notify_fd` is -1.
 */
void daemon_notify(int notify_fd, const char *error);

/*
 * systemd's readiness protocol (sd_notify(3)), spoken without libsystemd:
 * one datagram of "NAME=value" lines, sent to the AF_UNIX socket named
 * by $NOTIFY_SOCKET, a path or an abstract name written with a leading
 * '@'. kurad sends READY=1 once it is serving, STOPPING=1 when a
 * shutdown begins, and RELOADING=1 then READY=1 around the log reopening
 * of SIGHUP. Outside systemd the variable is unset and nothing is sent.
 * Only the main thread uses it.
 */
struct daemon_sd {
    int fd;                  /* datagram socket, or -1: nobody asked */
    struct sockaddr_un addr; /* where $NOTIFY_SOCKET pointed */
    socklen_t addrlen;
};

/*
 * Reads $NOTIFY_SOCKET, removes it from the environment (nothing kurad
 * starts inherits it) and opens the datagram socket every later
 * notification goes through: it is made now, so that STOPPING=1 needs no
 * new descriptor even when client connections have taken them all.
 * Returns 0, with `sd` inert when the variable is unset or empty. Returns
 * -1 with a reason in `err` (`errlen` bytes), `sd` inert and the variable
 * removed all the same, when it names neither a path ("/...") nor an
 * abstract socket ("@..."), is too long for a socket address, or no
 * socket could be made (errno as socket(2)).
 */
int daemon_sd_open(struct daemon_sd *sd, char *err, size_t errlen);

/*
 * Sends `state`, one or more "NAME=value" lines joined by '\n' (e.g.
 * "READY=1\nSTATUS=serving"), as one datagram. Never blocks. Returns 0,
 * also when `sd` is inert; -1 with errno as sendto(2) (ECONNREFUSED or
 * ENOENT: nobody listens there any more; EAGAIN: its queue is full).
 */
int daemon_sd_notify(struct daemon_sd *sd, const char *state);

/* Closes the socket and leaves `sd` inert. NULL-safe. */
void daemon_sd_close(struct daemon_sd *sd);

/*
 * Raises RLIMIT_NOFILE so that at least `want` descriptors can be open.
 * Returns the limit now in force (which may be lower than `want` when the
 * hard limit cannot be raised).
 */
uint64_t daemon_raise_nofile(uint64_t want);

#endif
