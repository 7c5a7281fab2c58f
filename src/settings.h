/*
 * settings: the daemon's configuration, from ttserver-style flags.
 *
 *   kurad [-host name] [-port num] [-thnum num] [-tout num] [-dmn]
 *         [-pid path] [-kl] [-log path] [-ld|-le] [-ulog path] [-ulim num]
 *         [-uas] [-sid num] [-mhost name] [-mport num] [-rts path]
 *         [-catchup secs] [-mask expr] [-unmask expr] [-maxconn num] [-itemmax size]
 *         [-fsync policy] [-ukeep num] [-ckpt secs] [-rkey path]
 *         [-auth path] [-nohttp] [-tlsport num] [-tlshost name]
 *         [-tlscert path]
 *         [-tlskey path] [-tlsca path] [-mtls] [-tlsmin 1.2|1.3]
 *         [-tlsciphers list] [-tlssuites list] [-tlstout secs] [-tlsktls]
 *         [dbname]
 *
 * Parsing validates everything up front and reports the first problem in
 * one line, so a typo never starts a server with an unintended setting.
 * Relative paths are made absolute against the starting directory, which
 * is what lets -dmn leave the working directory and still find its files.
 * The struct is filled once by main() and read-only afterwards.
 */
#ifndef KURA_SETTINGS_H
#define KURA_SETTINGS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dbspec.h"
#include "ulog.h"

#define SETTINGS_DEFAULT_PORT 1978
#define SETTINGS_DEFAULT_HOST "127.0.0.1"
#define SETTINGS_DEFAULT_DB "data/kura.tch"
#define SETTINGS_DEFAULT_MAXCONN 65536
#define SETTINGS_DEFAULT_ITEM_MAX ((size_t)1 << 20)
#define SETTINGS_DEFAULT_ULIM ((uint64_t)1 << 30)
#define SETTINGS_DEFAULT_PID "kurad.pid"
#define SETTINGS_DEFAULT_SID 1
#define SETTINGS_DEFAULT_CKPT_S 25
#define SETTINGS_DEFAULT_UKEEP 8
#define SETTINGS_DEFAULT_CATCHUP_S 30
#define SETTINGS_DEFAULT_TLS_TOUT_S 10

enum settings_log_level {
    SETTINGS_LOG_DEBUG, /* -ld */
    SETTINGS_LOG_INFO,  /* default */
    SETTINGS_LOG_ERROR, /* -le */
};

struct settings {
    char host[PATH_MAX]; /* address to bind, or a socket path with -port 0 */
    int port;
    int thnum;           /* worker threads */
    int tout;            /* idle timeout in seconds; 0 = none */
    bool dmn;            /* run as a daemon */
    char pid_path[PATH_MAX];
    bool kl;             /* replace the process named by the pid file */
    char log_path[PATH_MAX]; /* "" = standard error */
    enum settings_log_level log_level;
    char ulog_path[PATH_MAX]; /* update log directory, "" = none */
    uint64_t ulim;       /* update log segment size */
    uint32_t ukeep;      /* most segments kept for lagging peers */
    uint32_t ckpt_s;     /* checkpoint at least this often */
    bool uas;            /* answer before logging (ttserver -uas) */
    bool nohttp;         /* -nohttp: no HTTP on the port */
    enum ulog_fsync fsync; /* -fsync: always, never or every fsync_ms */
    uint32_t fsync_ms;
    uint32_t sid;        /* server id */
    bool sid_given;      /* -sid was on the command line */
    char mhost[PATH_MAX]; /* replication master, "" = none */
    int mport;
    char rts_path[PATH_MAX]; /* replication timestamp file */
    uint32_t catchup_s;  /* with -mhost: how long to catch up before
                            clients are served; 0 = serve at once */
    char rkey_path[PATH_MAX]; /* replication shared key file, "" = none */
    char auth_path[PATH_MAX]; /* client password file, "" = no auth */
    int tls_port;        /* -tlsport: TLS listener, 0 = none */
    char tls_host[PATH_MAX]; /* -tlshost: its address, "" = -host's */
    char tls_cert[PATH_MAX]; /* -tlscert: PEM chain, "" = none */
    char tls_key[PATH_MAX];  /* -tlskey */
    char tls_ca[PATH_MAX];   /* -tlsca: peers' CA (mutual TLS), "" = none */
    bool mtls;           /* -mtls: the link to -mhost is TLS */
    int tls_min;         /* -tlsmin: TLS_MIN_12 or TLS_MIN_13 (tls.h) */
    char tls_ciphers[512]; /* -tlsciphers: TLS 1.2 list, "" = default */
    char tls_suites[512];  /* -tlssuites: TLS 1.3 suites, "" = default */
    uint32_t tls_tout_s; /* -tlstout: a handshake's deadline */
    bool tls_ktls;       /* -tlsktls: kernel TLS where offered */
    uint64_t mask;       /* refused commands (cmdmask.h) */
    uint32_t maxconn;    /* simultaneous client connections */
    size_t item_max;     /* largest value accepted */
    bool default_db;     /* dbname was not given */
    struct dbspec db;
    char dbname[DBSPEC_PATH_MAX]; /* as given (with tuning) */
};

enum settings_result {
    SETTINGS_OK,
    SETTINGS_HELP,    /* -h/--help: usage was requested */
    SETTINGS_VERSION, /* --version */
    SETTINGS_ERROR,   /* `err` says why */
};

/*
 * Default worker threads: one per online CPU (at most 64). Measured on the
 * 2-core reference machine with one load generator: 1-2 workers gave the
 * best throughput, 4 and 8 about 20% less (README, "Choosing -thnum").
 */
int settings_default_thnum(void);

/* Fills `s` with the defaults. */
void settings_init(struct settings *s);

/*
 * Parses the command line into `s` (initialise it first). Relative paths
 * are resolved against the current directory. On SETTINGS_ERROR, `err`
 * (`errlen` bytes) holds a one-line reason.
 */
enum settings_result settings_parse(struct settings *s, int argc,
                                    char **argv, char *err, size_t errlen);

/* Prints the usage text to `out`. */
void settings_usage(FILE *out, const char *prog);

#endif
