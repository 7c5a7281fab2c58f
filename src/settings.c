/*
 * settings: command line parsing and validation (see settings.h).
 */
#include "settings.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "cmdmask.h"
#include "tls.h"
#include "util.h"

int
settings_default_thnum(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) {
        return 1;
    }
    return n > 64 ? 64 : (int)n;
}

void
settings_init(struct settings *s)
{
    memset(s, 0, sizeof(*s));
    util_strlcpy(s->host, SETTINGS_DEFAULT_HOST, sizeof(s->host));
    s->port = SETTINGS_DEFAULT_PORT;
    s->thnum = settings_default_thnum();
    s->log_level = SETTINGS_LOG_INFO;
    s->ulim = SETTINGS_DEFAULT_ULIM;
    s->ukeep = SETTINGS_DEFAULT_UKEEP;
    s->ckpt_s = SETTINGS_DEFAULT_CKPT_S;
    s->fsync = ULOG_FSYNC_ALWAYS;
    s->fsync_ms = 1000;
    s->sid = SETTINGS_DEFAULT_SID;
    s->mport = SETTINGS_DEFAULT_PORT;
    s->catchup_s = SETTINGS_DEFAULT_CATCHUP_S;
    s->maxconn = SETTINGS_DEFAULT_MAXCONN;
    s->item_max = SETTINGS_DEFAULT_ITEM_MAX;
    s->tls_min = TLS_MIN_12;
    s->tls_tout_s = SETTINGS_DEFAULT_TLS_TOUT_S;
}

void
settings_usage(FILE *out, const char *prog)
{
    fprintf(out,
        "%s: a persistent key-value server speaking the memcached protocol\n"
        "\n"
        "usage:\n"
        "  %s [-host name] [-port num] [-thnum num] [-tout num] [-dmn]\n"
        "        [-pid path] [-kl] [-log path] [-ld|-le] [-ulog path]\n"
        "        [-ulim num] [-uas] [-sid num] [-mhost name] [-mport num]\n"
        "        [-rts path] [-catchup secs] [-mask expr] [-unmask expr]\n"
        "        [-maxconn num] [-itemmax size] [-fsync policy] [-ukeep num]\n"
        "        [-ckpt secs] [-rkey path] [-auth path] [-nohttp]\n"
        "        [-tlsport num] [-tlshost name] [-tlscert path] [-tlskey path]\n"
        "        [-tlsca path] [-mtls] [-tlsmin 1.2|1.3] [-tlsciphers list]\n"
        "        [-tlssuites list] [-tlstout secs] [-tlsktls] [dbname]\n"
        "\n"
        "  -host name     address to listen on (default %s; 0.0.0.0 for all)\n"
        "  -port num      TCP port (default %d); 0 makes -host a unix socket\n"
        "  -thnum num     worker threads (default: one per CPU, here %d)\n"
        "  -tout num      close connections idle for num seconds (default: never)\n"
        "  -dmn           run as a daemon\n"
        "  -pid path      pid file (default %s with -dmn)\n"
        "  -kl            stop the process named by the pid file, then start\n"
        "  -log path      log file (default: standard error); SIGHUP reopens it\n"
        "  -ld | -le      log debug messages | log errors only\n"
        "  -ulog path     update log directory (default: next to the database,\n"
        "                 name.ulog; off for none)\n"
        "  -ulim num      update log segment size, e.g. 1024m (default 1g)\n"
        "  -ukeep num     most segments kept for a lagging peer (default %d)\n"
        "  -ckpt secs     checkpoint the database at least this often\n"
        "                 (default %d); bounds the log redone after a crash\n"
        "  -uas           answer writes before logging them (see README)\n"
        "  -fsync policy  always (default): every group commit is on disk\n"
        "                 before its replies; N: every N ms; never;\n"
        "                 peer[,N]: on the peer's log or on disk, synced\n"
        "                 every N ms (default 100); see etc/tuning.md\n"
        "  -sid num       server id, 1-65535 (default %d; required with -mhost)\n"
        "  -mhost name    replication master host\n"
        "  -mport num     replication master port (default %d)\n"
        "  -rts path      replication position file (default: ulog/rts)\n"
        "  -catchup secs  with -mhost, serve clients only once caught up with\n"
        "                 a reachable master, waiting at most secs (default\n"
        "                 %d); 0 serves at once, as ttserver did\n"
        "  -rkey path     replication shared key (mode 600 file); without\n"
        "                 it only peers on this host may replicate\n"
        "  -nohttp        do not serve HTTP on the port (as memcached)\n"
        "  -auth path     client passwords, user:password lines (mode 600\n"
        "                 file); clients must then authenticate (SASL PLAIN\n"
        "                 or memcached's text set)\n"
        "  -mask expr     refuse commands, e.g. allwrite or flush_all\n"
        "  -unmask expr   allow commands refused by an earlier -mask\n"
        "  -maxconn num   client connection limit (default %d)\n"
        "  -itemmax size  largest value accepted (default 1m)\n"
        "  -tlsport num   also serve every protocol over TLS on this port\n"
        "  -tlshost name  address of the TLS port (default: -host's), e.g.\n"
        "                 0.0.0.0 with -host 127.0.0.1\n"
        "  -tlscert path  certificate chain (PEM) for -tlsport and -mtls\n"
        "  -tlskey path   its private key (PEM, mode 600)\n"
        "  -tlsca path    CA (PEM) that clients on -tlsport must present a\n"
        "                 certificate from (mutual TLS), and that -mtls\n"
        "                 checks the master against\n"
        "  -mtls          replicate from -mhost over TLS (-mport is then\n"
        "                 its -tlsport); only over TLS to other hosts\n"
        "  -tlsmin v      lowest TLS version accepted: 1.2 (default) or 1.3\n"
        "  -tlsciphers l  TLS 1.2 ciphers (OpenSSL list; default OpenSSL's)\n"
        "  -tlssuites l   TLS 1.3 cipher suites (default OpenSSL's)\n"
        "  -tlstout secs  close a TLS client not through its handshake in\n"
        "                 secs (default %d)\n"
        "  -tlsktls       let the kernel do TLS records (kTLS) where it\n"
        "                 offers it\n"
        "  dbname         path.tch[#bnum=N#apow=N#fpow=N#opts=ldbt#rcnum=N\n"
        "                 #xmsiz=N#dfunit=N], or * for memory only\n"
        "                 (default %s)\n",
        prog, prog, SETTINGS_DEFAULT_HOST, SETTINGS_DEFAULT_PORT,
        settings_default_thnum(), SETTINGS_DEFAULT_PID,
        SETTINGS_DEFAULT_UKEEP, SETTINGS_DEFAULT_CKPT_S, SETTINGS_DEFAULT_SID,
        SETTINGS_DEFAULT_PORT, SETTINGS_DEFAULT_CATCHUP_S,
        SETTINGS_DEFAULT_MAXCONN, SETTINGS_DEFAULT_TLS_TOUT_S,
        SETTINGS_DEFAULT_DB);
}

/* Makes `path` absolute against the current directory, in place. */
static bool
_absolutize(char *path, size_t size, char *err, size_t errlen)
{
    char cwd[PATH_MAX];
    char tmp[PATH_MAX];

    if (path[0] == '\0' || path[0] == '/') {
        return true;
    }
    if (getcwd(cwd, sizeof(cwd)) == NULL) {
        snprintf(err, errlen, "cannot read the current directory: %s",
                 strerror(errno));
        return false;
    }
    if (snprintf(tmp, sizeof(tmp), "%s/%s", cwd, path) >= (int)sizeof(tmp) ||
        !util_strlcpy(path, tmp, size)) {
        snprintf(err, errlen, "path too long: %s/%s", cwd, path);
        return false;
    }
    return true;
}

static bool
_parse_num(const char *flag, const char *v, int64_t min, int64_t max,
           int64_t *out, char *err, size_t errlen)
{
    if (!util_parse_int(v, strlen(v), min, max, out)) {
        snprintf(err, errlen, "%s %s: expected a number from %lld to %lld",
                 flag, v, (long long)min, (long long)max);
        return false;
    }
    return true;
}

static bool
_copy_arg(const char *flag, char *dst, size_t size, const char *v, char *err,
          size_t errlen)
{
    if (v[0] == '\0' || !util_strlcpy(dst, v, size)) {
        snprintf(err, errlen, "%s: %s", flag,
                 v[0] == '\0' ? "empty argument" : "argument too long");
        return false;
    }
    return true;
}

/* Handles the TLS flags that take a value. Returns false on error. */
static bool
_parse_tls(struct settings *s, const char *flag, const char *v, char *err,
           size_t errlen)
{
    int64_t n;

    if (strcmp(flag, "-tlsport") == 0) {
        if (!_parse_num(flag, v, 1, 65535, &n, err, errlen)) {
            return false;
        }
        s->tls_port = (int)n;
        return true;
    }
    if (strcmp(flag, "-tlshost") == 0) {
        return _copy_arg(flag, s->tls_host, sizeof(s->tls_host), v, err,
                         errlen);
    }
    if (strcmp(flag, "-tlscert") == 0) {
        return _copy_arg(flag, s->tls_cert, sizeof(s->tls_cert), v, err,
                         errlen);
    }
    if (strcmp(flag, "-tlskey") == 0) {
        return _copy_arg(flag, s->tls_key, sizeof(s->tls_key), v, err,
                         errlen);
    }
    if (strcmp(flag, "-tlsca") == 0) {
        return _copy_arg(flag, s->tls_ca, sizeof(s->tls_ca), v, err, errlen);
    }
    if (strcmp(flag, "-tlsmin") == 0) {
        if (strcmp(v, "1.2") == 0) {
            s->tls_min = TLS_MIN_12;
        } else if (strcmp(v, "1.3") == 0) {
            s->tls_min = TLS_MIN_13;
        } else {
            snprintf(err, errlen, "-tlsmin %s: expected 1.2 or 1.3", v);
            return false;
        }
        return true;
    }
    if (strcmp(flag, "-tlsciphers") == 0) {
        return _copy_arg(flag, s->tls_ciphers, sizeof(s->tls_ciphers), v,
                         err, errlen);
    }
    if (strcmp(flag, "-tlssuites") == 0) {
        return _copy_arg(flag, s->tls_suites, sizeof(s->tls_suites), v, err,
                         errlen);
    }
    if (strcmp(flag, "-tlstout") == 0) {
        if (!_parse_num(flag, v, 1, 3600, &n, err, errlen)) {
            return false;
        }
        s->tls_tout_s = (uint32_t)n;
        return true;
    }
    snprintf(err, errlen, "unknown option %s (see -h)", flag);
    return false;
}

/* Handles one flag that takes a value. Returns false on error. */
static bool
_parse_valued(struct settings *s, const char *flag, const char *v, char *err,
              size_t errlen)
{
    int64_t n;
    uint64_t size;

    if (strcmp(flag, "-host") == 0) {
        return _copy_arg(flag, s->host, sizeof(s->host), v, err, errlen);
    }
    if (strcmp(flag, "-port") == 0) {
        if (!_parse_num(flag, v, 0, 65535, &n, err, errlen)) {
            return false;
        }
        s->port = (int)n;
        return true;
    }
    if (strcmp(flag, "-thnum") == 0) {
        if (!_parse_num(flag, v, 1, 256, &n, err, errlen)) {
            return false;
        }
        s->thnum = (int)n;
        return true;
    }
    if (strcmp(flag, "-tout") == 0) {
        if (!_parse_num(flag, v, 0, INT32_MAX, &n, err, errlen)) {
            return false;
        }
        s->tout = (int)n;
        return true;
    }
    if (strcmp(flag, "-pid") == 0) {
        return _copy_arg(flag, s->pid_path, sizeof(s->pid_path), v, err,
                         errlen);
    }
    if (strcmp(flag, "-log") == 0) {
        return _copy_arg(flag, s->log_path, sizeof(s->log_path), v, err,
                         errlen);
    }
    if (strcmp(flag, "-ulog") == 0) {
        return _copy_arg(flag, s->ulog_path, sizeof(s->ulog_path), v, err,
                         errlen);
    }
    if (strcmp(flag, "-ulim") == 0) {
        if (!util_parse_size(v, &size) || size < 4096) {
            snprintf(err, errlen,
                     "-ulim %s: expected a size of at least 4k, e.g. 1024m",
                     v);
            return false;
        }
        s->ulim = size;
        return true;
    }
    if (strcmp(flag, "-sid") == 0) {
        if (!_parse_num(flag, v, 1, 65535, &n, err, errlen)) {
            return false;
        }
        s->sid = (uint32_t)n;
        s->sid_given = true;
        return true;
    }
    if (strcmp(flag, "-ukeep") == 0) {
        if (!_parse_num(flag, v, 1, 1000000, &n, err, errlen)) {
            return false;
        }
        s->ukeep = (uint32_t)n;
        return true;
    }
    if (strcmp(flag, "-ckpt") == 0) {
        if (!_parse_num(flag, v, 1, 3600, &n, err, errlen)) {
            return false;
        }
        s->ckpt_s = (uint32_t)n;
        return true;
    }
    if (strcmp(flag, "-fsync") == 0) {
        if (!ulog_parse_fsync(v, &s->fsync, &s->fsync_ms)) {
            snprintf(err, errlen, "-fsync %s: expected always, never, a "
                     "number of milliseconds (1-60000), peer or peer,N", v);
            return false;
        }
        return true;
    }
    if (strcmp(flag, "-mhost") == 0) {
        return _copy_arg(flag, s->mhost, sizeof(s->mhost), v, err, errlen);
    }
    if (strcmp(flag, "-mport") == 0) {
        if (!_parse_num(flag, v, 1, 65535, &n, err, errlen)) {
            return false;
        }
        s->mport = (int)n;
        return true;
    }
    if (strcmp(flag, "-rts") == 0) {
        return _copy_arg(flag, s->rts_path, sizeof(s->rts_path), v, err,
                         errlen);
    }
    if (strcmp(flag, "-catchup") == 0) {
        if (!_parse_num(flag, v, 0, 3600, &n, err, errlen)) {
            return false;
        }
        s->catchup_s = (uint32_t)n;
        return true;
    }
    if (strcmp(flag, "-rkey") == 0) {
        return _copy_arg(flag, s->rkey_path, sizeof(s->rkey_path), v, err,
                         errlen);
    }
    if (strcmp(flag, "-auth") == 0) {
        return _copy_arg(flag, s->auth_path, sizeof(s->auth_path), v, err,
                         errlen);
    }
    if (strcmp(flag, "-mask") == 0 || strcmp(flag, "-unmask") == 0) {
        return cmdmask_apply(&s->mask, v, flag[1] == 'u', err, errlen);
    }
    if (strcmp(flag, "-maxconn") == 0) {
        if (!_parse_num(flag, v, 1, 1 << 24, &n, err, errlen)) {
            return false;
        }
        s->maxconn = (uint32_t)n;
        return true;
    }
    if (strcmp(flag, "-itemmax") == 0) {
        if (!util_parse_size(v, &size) || size < 1024 ||
            size > ((uint64_t)1 << 30)) {
            snprintf(err, errlen,
                     "-itemmax %s: expected a size from 1k to 1g, e.g. 2m", v);
            return false;
        }
        s->item_max = (size_t)size;
        return true;
    }
    return _parse_tls(s, flag, v, err, errlen);
}

static bool
_is_valued(const char *flag)
{
    static const char *const valued[] = {
        "-host", "-port", "-thnum", "-tout", "-pid", "-log", "-ulog",
        "-ulim", "-sid", "-mhost", "-mport", "-rts", "-mask", "-unmask",
        "-maxconn", "-itemmax", "-fsync", "-ukeep", "-ckpt", "-rkey",
        "-auth", "-catchup", "-tlsport", "-tlshost", "-tlscert", "-tlskey",
        "-tlsca",
        "-tlsmin", "-tlsciphers", "-tlssuites", "-tlstout",
    };
    for (size_t i = 0; i < sizeof(valued) / sizeof(valued[0]); i++) {
        if (strcmp(flag, valued[i]) == 0) {
            return true;
        }
    }
    return false;
}

/* The TLS flags fit together; their paths are made absolute. */
static bool
_validate_tls(struct settings *s, char *err, size_t errlen)
{
    bool material = s->tls_cert[0] != '\0' || s->tls_key[0] != '\0' ||
                    s->tls_ca[0] != '\0';
    if ((s->tls_cert[0] == '\0') != (s->tls_key[0] == '\0')) {
        snprintf(err, errlen, "-tlscert and -tlskey go together");
        return false;
    }
    if (s->tls_port != 0 && s->tls_cert[0] == '\0') {
        snprintf(err, errlen, "-tlsport needs -tlscert and -tlskey");
        return false;
    }
    if (s->tls_host[0] != '\0' && s->tls_port == 0) {
        snprintf(err, errlen, "-tlshost goes with -tlsport");
        return false;
    }
    if (s->tls_port != 0 && s->port == 0 && s->tls_host[0] == '\0') {
        snprintf(err, errlen, "-tlsport needs a TCP address: -host is a "
                              "unix socket, so give -tlshost");
        return false;
    }
    if (s->tls_port != 0 && s->tls_port == s->port &&
        (s->tls_host[0] == '\0' || strcmp(s->tls_host, s->host) == 0)) {
        snprintf(err, errlen, "-tlsport %d is also -port: give TLS a port "
                              "of its own", s->tls_port);
        return false;
    }
    if (s->mtls && (s->mhost[0] == '\0' || s->tls_ca[0] == '\0' ||
                    s->tls_cert[0] == '\0')) {
        snprintf(err, errlen, "-mtls needs -mhost, -tlsca (to check the "
                              "master) and -tlscert/-tlskey (to present)");
        return false;
    }
    if (material && s->tls_port == 0 && !s->mtls) {
        snprintf(err, errlen, "-tlscert, -tlskey and -tlsca are for "
                              "-tlsport or -mtls, and neither is given");
        return false;
    }
    return _absolutize(s->tls_cert, sizeof(s->tls_cert), err, errlen) &&
           _absolutize(s->tls_key, sizeof(s->tls_key), err, errlen) &&
           _absolutize(s->tls_ca, sizeof(s->tls_ca), err, errlen);
}

static bool
_validate(struct settings *s, char *err, size_t errlen)
{
    if (!s->dbname[0]) {
        util_strlcpy(s->dbname, SETTINGS_DEFAULT_DB, sizeof(s->dbname));
        s->default_db = true;
    }
    if (!dbspec_parse(s->dbname, &s->db, err, errlen)) {
        return false;
    }
    if (s->mhost[0] != '\0' && !s->sid_given) {
        snprintf(err, errlen, "-mhost needs -sid: replication requires a "
                              "server id unique in the pair");
        return false;
    }
    /* The update log lives next to the database unless told otherwise. */
    if (strcmp(s->ulog_path, "off") == 0) {
        s->ulog_path[0] = '\0';
    } else if (s->ulog_path[0] == '\0' && s->db.kind == DBSPEC_HASH_FILE) {
        size_t n = strlen(s->db.path);
        snprintf(s->ulog_path, sizeof(s->ulog_path), "%.*s.ulog",
                 (int)(n - 4), s->db.path);
    }
    if (s->mhost[0] != '\0' && s->ulog_path[0] == '\0') {
        snprintf(err, errlen, "-mhost needs an update log (-ulog): a "
                              "standby logs what it applies");
        return false;
    }
    if (s->uas && s->ulog_path[0] == '\0') {
        snprintf(err, errlen, "-uas needs an update log (-ulog)");
        return false;
    }
    if (s->port == 0 && s->host[0] != '/') {
        snprintf(err, errlen,
                 "-port 0 makes -host a unix socket path; give an absolute "
                 "path, e.g. -host /run/kura.sock");
        return false;
    }
    if (s->dmn && s->pid_path[0] == '\0') {
        util_strlcpy(s->pid_path, SETTINGS_DEFAULT_PID, sizeof(s->pid_path));
    }
    if (s->kl && s->pid_path[0] == '\0') {
        snprintf(err, errlen, "-kl needs -pid (or -dmn) to find the process");
        return false;
    }
    if (s->db.kind == DBSPEC_HASH_FILE &&
        !_absolutize(s->db.path, sizeof(s->db.path), err, errlen)) {
        return false;
    }
    if (!_absolutize(s->pid_path, sizeof(s->pid_path), err, errlen) ||
        !_absolutize(s->log_path, sizeof(s->log_path), err, errlen) ||
        !_absolutize(s->ulog_path, sizeof(s->ulog_path), err, errlen) ||
        !_absolutize(s->rts_path, sizeof(s->rts_path), err, errlen) ||
        !_absolutize(s->rkey_path, sizeof(s->rkey_path), err, errlen) ||
        !_absolutize(s->auth_path, sizeof(s->auth_path), err, errlen)) {
        return false;
    }
    if (!_validate_tls(s, err, errlen)) {
        return false;
    }
    if (s->rts_path[0] == '\0' && s->ulog_path[0] != '\0') {
        snprintf(s->rts_path, sizeof(s->rts_path), "%s/rts", s->ulog_path);
    }
    return true;
}

enum settings_result
settings_parse(struct settings *s, int argc, char **argv, char *err,
               size_t errlen)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            return SETTINGS_HELP;
        }
        if (strcmp(a, "--version") == 0) {
            return SETTINGS_VERSION;
        }
        if (a[0] != '-' || strcmp(a, "-") == 0) {
            if (s->dbname[0] != '\0') {
                snprintf(err, errlen, "more than one dbname: %s and %s",
                         s->dbname, a);
                return SETTINGS_ERROR;
            }
            if (!_copy_arg("dbname", s->dbname, sizeof(s->dbname), a, err,
                           errlen)) {
                return SETTINGS_ERROR;
            }
            continue;
        }
        if (strcmp(a, "-dmn") == 0) {
            s->dmn = true;
        } else if (strcmp(a, "-kl") == 0) {
            s->kl = true;
        } else if (strcmp(a, "-ld") == 0) {
            s->log_level = SETTINGS_LOG_DEBUG;
        } else if (strcmp(a, "-le") == 0) {
            s->log_level = SETTINGS_LOG_ERROR;
        } else if (strcmp(a, "-uas") == 0) {
            s->uas = true;
        } else if (strcmp(a, "-nohttp") == 0) {
            s->nohttp = true;
        } else if (strcmp(a, "-mtls") == 0) {
            s->mtls = true;
        } else if (strcmp(a, "-tlsktls") == 0) {
            s->tls_ktls = true;
        } else if (_is_valued(a)) {
            if (i + 1 >= argc) {
                snprintf(err, errlen, "%s needs a value", a);
                return SETTINGS_ERROR;
            }
            if (!_parse_valued(s, a, argv[++i], err, errlen)) {
                return SETTINGS_ERROR;
            }
        } else {
            snprintf(err, errlen, "unknown option %s (see -h)", a);
            return SETTINGS_ERROR;
        }
    }
    return _validate(s, err, errlen) ? SETTINGS_OK : SETTINGS_ERROR;
}
