/*
 * harness: runs the real kurad for integration tests and talks to it.
 *
 * kura_start() picks a free loopback port and a fresh temporary directory,
 * starts $KURA_BIN (or KURA_TEST_BIN) with the test's extra arguments and
 * waits, with a deadline, until it answers "version". The daemon is killed
 * if the test process dies (PR_SET_PDEATHSIG), so no test leaves one
 * behind. Every wait in this file polls a condition against a deadline;
 * nothing sleeps and hopes.
 */
#ifndef KURA_HARNESS_H
#define KURA_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HARNESS_MAX_ARGS 32
#define HARNESS_READY_MS 15000

struct kura_proc {
    pid_t pid;
    int port;
    char dir[256];      /* temporary data directory */
    char db[512];       /* database path (dir/kura.tch) unless overridden */
    char log[512];      /* log file (dir/kurad.log) */
    const char *args[HARNESS_MAX_ARGS]; /* extra arguments */
    int nargs;
    bool own_db;        /* false if the extra args name the database */
    char unix_sock[108]; /* if set: listen there (-host PATH -port 0) and
                            talk to it with kc_connect_unix() */
    int tls_port;        /* set by kura_add_tls(), else 0 */
    char tls_args[4][512]; /* ... the strings its arguments point to */
};

/* Path of the kurad binary under test. */
const char *harness_bin(void);

/* A TCP port on 127.0.0.1 that was free a moment ago. */
int harness_free_port(void);

/* Milliseconds on a monotonic clock. */
uint64_t harness_now_ms(void);

/*
 * Prepares `k` with a new temporary directory and port; `extra` (NULL
 * terminated, may be NULL) is appended to the command line. If one of the
 * extra arguments ends in ".tch" or is "*", it replaces the default db.
 */
void kura_init(struct kura_proc *k, const char *const *extra);

/*
 * Makes the TLS tests' certificates and keys in `dir` (tests/tls/make-certs,
 * found through $srcdir). Returns 0, or -1.
 */
int harness_make_certs(const char *dir);

/*
 * Gives `k` (after kura_init()) a TLS port on a free loopback port, served
 * with `certdir`/server.pem and server.key, and, when `ca` is true,
 * requiring client certificates from `certdir`/ca.pem (-tlsca).
 */
void kura_add_tls(struct kura_proc *k, const char *certdir, bool ca);

/* Starts kurad and waits until it answers. Returns 0, or -1 on timeout. */
int kura_launch(struct kura_proc *k);

/* kura_init() + kura_launch(); aborts the test on failure. */
void kura_start(struct kura_proc *k, const char *const *extra);

/*
 * Sends SIGTERM and waits up to `timeout_ms` for exit. Returns the exit
 * status (0..255), 128+signal if killed, or -1 on timeout.
 */
int kura_stop(struct kura_proc *k, int timeout_ms);

/* SIGKILL and reap. */
void kura_kill9(struct kura_proc *k);

/* Stops (if running) and removes the temporary directory. */
void kura_cleanup(struct kura_proc *k);

/*
 * Runs kurad with `argv` (NULL terminated, argv[0] ignored) in directory
 * `cwd` to completion, capturing standard error into `err` (`errlen`).
 * Returns the exit status, or -1 if it did not finish within `timeout_ms`.
 */
int harness_run(const char *cwd, const char *const *argv, char *err,
                size_t errlen, int timeout_ms);

/* Connects to 127.0.0.1:`port`; returns a socket with 5 s I/O timeouts. */
int kc_connect(int port);

/* Connects to the unix socket at `path`; 5 s I/O timeouts, or -1. */
int kc_connect_unix(const char *path);

/* Sends all of `n` bytes. Returns 0 or -1. */
int kc_send(int fd, const void *p, size_t n);

/* Sends a NUL-terminated string. */
int kc_sends(int fd, const char *s);

/*
 * Reads until `out` holds `terminator` at its end (or `cap - 1` bytes),
 * for at most `timeout_ms`. NUL-terminates. Returns the byte count, or -1
 * on timeout, error or EOF before the terminator.
 */
long kc_read_until(int fd, char *out, size_t cap, const char *terminator,
                   int timeout_ms);

/*
 * Sends `req` and reads the reply up to `terminator`; the reply must equal
 * `expect` exactly. Returns true if it did; on mismatch prints both.
 */
bool kc_check(int fd, const char *req, const char *expect);

/*
 * Sends `req` (unless NULL) and reads and discards the reply up to
 * `terminator`. Returns true if the terminator arrived within 5 s.
 */
bool kc_drain(int fd, const char *req, const char *terminator);

/* True if the peer closes the connection within `timeout_ms`. */
bool kc_wait_closed(int fd, int timeout_ms);

/*
 * Polls `cond(arg)` every few milliseconds until it is true or
 * `timeout_ms` passes. Returns the last result.
 */
bool harness_wait_for(bool (*cond)(void *), void *arg, int timeout_ms);

/* True if `text` is in the first 64 KiB of `k`'s log file. */
bool kura_log_has(const struct kura_proc *k, const char *text);

/* True once `text` appears in `k`'s log, within `timeout_ms`. */
bool kura_wait_logged(const struct kura_proc *k, const char *text,
                      int timeout_ms);

/*
 * Sends "stats" and returns the value of `name`, or -1 if it is missing or
 * the request failed.
 */
long long kc_stat(int fd, const char *name);

/* Resident set size of process `pid` in KiB, or -1. */
long harness_rss_kb(pid_t pid);

/* ------------------------------------------------------- kura tool runs */

#define HARNESS_TOOL_OUT_CAP 65536

/* A run of the `kura` tool: its pid and its output so far (each buffer
 * NUL-terminated, what does not fit is dropped). */
struct harness_tool {
    pid_t pid;
    int out_fd;
    int err_fd;
    char out[HARNESS_TOOL_OUT_CAP];
    char err[HARNESS_TOOL_OUT_CAP];
    size_t out_len;
    size_t err_len;
};

/*
 * Starts $KURA_TOOL (default tools/kura/kura) with `args` (NULL terminated,
 * without argv[0]), its standard output and error captured apart. The run
 * is killed if the test process dies. Returns 0, or -1 if it could not be
 * started.
 */
int harness_tool_spawn(struct harness_tool *t, const char *const *args);

/*
 * Waits up to `timeout_ms` for the run to end, collecting its output.
 * Returns its exit status, 128 + the signal that ended it, or -1 if it
 * was still running at the deadline (it is then killed).
 */
int harness_tool_finish(struct harness_tool *t, int timeout_ms);

/*
 * Spawns and finishes a run. Returns its status as harness_tool_finish()
 * does (-1 also if it could not start), and prints its output to
 * standard error when the status is not `want`.
 */
int harness_tool_run(struct harness_tool *t, const char *const *args,
                     int want, int timeout_ms);

#endif
