/*
 * stats_cmd: `kura stats [--host H] [--port P] [--timeout MS] [--auth FILE]
 * [--prometheus | --watch SECS [--count N]]`.
 *
 * Connects, logs in if given a user:password file, asks "stats" and
 * prints the STAT lines, all within one deadline. With --prometheus it
 * prints the figures (memcached's and kurad's own, kura_*) in Prometheus'
 * text format instead, through src/metrics (the text kurad's HTTP
 * endpoint GET /-/metrics serves too), plus
 * kura_up 1; when the stats cannot be read it prints kura_up 0 alone and
 * exits 1, so a textfile collector still records that the server is down.
 * With --watch it keeps the connection and prints one line every SECS
 * seconds (stats_watch.h): what an operator watches during a load, a
 * checkpoint or a failover. It stops after N lines, or with exit 1 when
 * the server stops answering.
 */
#include "stats_cmd.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client_admin.h"
#include "tlsopt.h"
#include "buf.h"
#include "metrics.h"
#include "stats_watch.h"
#include "util.h"

#define STATS_REPLY_MAX (1u << 20)
#define STATS_PAIRS_MAX 4096

static void
_usage(FILE *out)
{
    fprintf(out, "usage: kura stats [--host H] [--port P] [--timeout MS] "
                 "[--auth FILE]\n"
                 "                  [--prometheus | --watch SECS "
                 "[--count N]]\n"
                 "                  " TLSOPT_USAGE "\n");
}

/* Sleeps until `until_us` on util_mono_us()'s clock. */
static void
_sleep_until(uint64_t until_us)
{
    uint64_t now = util_mono_us();
    if (until_us > now) {
        struct timespec ts = {(time_t)((until_us - now) / 1000000),
                              (long)((until_us - now) % 1000000) * 1000};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
    }
}

/* Writes `len` bytes of `line` to standard output, flushed; false on an
 * error, with `*why` set. */
static bool
_emit(const char *line, size_t len, const char **why)
{
    if (fwrite(line, 1, len, stdout) != len || fflush(stdout) != 0) {
        *why = "cannot write the output";
        return false;
    }
    return true;
}

/*
 * --watch: `reply` (STATS_REPLY_MAX bytes) holds the reply already read,
 * the first sample, which the header stands for; then a line every
 * `every_s` seconds from the open connection `c`, read into `reply`,
 * `count` lines (0: until interrupted). Returns an exit status; `*why`
 * says what failed.
 */
static int
_watch(struct client *c, uint64_t every_s, uint64_t count,
       uint64_t timeout_ms, char *reply, const char **why)
{
    struct stats_watch_sample prev, cur;
    char line[256];
    uint64_t next = util_mono_us();

    if (!stats_watch_parse(reply, strlen(reply), next, &prev)) {
        *why = "not a stats reply";
        return STATS_CMD_FAILED;
    }
    if (!_emit(line, stats_watch_header(line, sizeof(line)), why)) {
        return STATS_CMD_FAILED;
    }
    for (uint64_t n = 0; count == 0 || n < count; n++) {
        next += every_s * 1000000;
        _sleep_until(next);
        client_set_timeout(c, (int)timeout_ms);
        if (client_admin_stats(c, reply, STATS_REPLY_MAX) !=
            CLIENT_ADMIN_OK) {
            *why = "no answer";
            return STATS_CMD_FAILED;
        }
        if (!stats_watch_parse(reply, strlen(reply), util_mono_us(), &cur)) {
            *why = "not a stats reply";
            return STATS_CMD_FAILED;
        }
        time_t now = time(NULL);
        struct tm tm;
        char clock[16];
        strftime(clock, sizeof(clock), "%H:%M:%S", localtime_r(&now, &tm));
        if (!_emit(line, stats_watch_format(&prev, &cur, clock, line,
                                            sizeof(line)), why)) {
            return STATS_CMD_FAILED;
        }
        prev = cur;
    }
    return STATS_CMD_OK;
}

/* Prints the exposition of `pairs` and kura_up; false on a write error. */
static bool
_print_prometheus(struct metrics_pair *pairs, size_t n, bool up)
{
    struct buf out;
    bool ok;

    pairs[n].name = METRICS_UP;
    pairs[n].name_len = strlen(METRICS_UP);
    pairs[n].value = up ? "1" : "0";
    pairs[n].value_len = 1;
    buf_init(&out);
    ok = metrics_format(pairs, n + 1, &out) &&
         fwrite(buf_head(&out), 1, buf_len(&out), stdout) == buf_len(&out);
    buf_deinit(&out);
    return ok;
}

/* Prints the STAT lines of `reply` without their "\r". */
static bool
_print_plain(const char *reply)
{
    const char *line = reply;
    bool ok = true;
    while (ok && strncmp(line, "STAT ", 5) == 0) {
        size_t len = strcspn(line, "\r\n");
        ok = printf("%.*s\n", (int)len, line) >= 0;
        line += len;
        line += strspn(line, "\r\n");
    }
    return ok;
}

int
stats_cmd(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"host", required_argument, NULL, 'h'},
        {"port", required_argument, NULL, 'p'},
        {"timeout", required_argument, NULL, 't'},
        {"auth", required_argument, NULL, 'a'},
        {"prometheus", no_argument, NULL, 'P'},
        {"watch", required_argument, NULL, 'w'},
        {"count", required_argument, NULL, 'c'},
        TLSOPT_LONG_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    struct tlsopt tlsopt = {0};
    struct tls_ctx *tls = NULL;
    const char *host = "127.0.0.1";
    const char *port = "1978";
    const char *auth = NULL;
    uint64_t timeout_ms = 2000;
    bool prometheus = false;
    uint64_t watch_s = 0;
    uint64_t count = 0;
    int ch;

    optind = 1;
    while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (ch) {
        case 'h': host = optarg; break;
        case 'p': port = optarg; break;
        case 'a': auth = optarg; break;
        case 'P': prometheus = true; break;
        case 't':
            if (!util_parse_uint(optarg, strlen(optarg), 3600000,
                                 &timeout_ms) || timeout_ms == 0) {
                fprintf(stderr, "kura stats: --timeout wants 1 to 3600000 "
                                "milliseconds\n");
                return STATS_CMD_USAGE;
            }
            break;
        case 'w':
            if (!util_parse_uint(optarg, strlen(optarg), 3600, &watch_s) ||
                watch_s == 0) {
                fprintf(stderr, "kura stats: --watch wants 1 to 3600 "
                                "seconds\n");
                return STATS_CMD_USAGE;
            }
            break;
        case 'c':
            if (!util_parse_uint(optarg, strlen(optarg), UINT32_MAX,
                                 &count) || count == 0) {
                fprintf(stderr, "kura stats: --count wants a positive "
                                "number of lines\n");
                return STATS_CMD_USAGE;
            }
            break;
        default:
            if (!tlsopt_parse(&tlsopt, ch, optarg)) {
                _usage(stderr);
                return STATS_CMD_USAGE;
            }
            break;
        }
    }
    if (tlsopt_context(&tlsopt, false, &tls) != 0) {
        return STATS_CMD_USAGE;
    }
    if (optind != argc || (watch_s > 0 && prometheus) ||
        (count > 0 && watch_s == 0)) {
        _usage(stderr);
        return STATS_CMD_USAGE;
    }

    struct client c;
    char *reply = malloc(STATS_REPLY_MAX);
    struct metrics_pair *pairs = malloc((STATS_PAIRS_MAX + 1) *
                                        sizeof(*pairs));
    int rc = STATS_CMD_FAILED;
    const char *why = NULL;
    enum client_admin_status st = CLIENT_ADMIN_NO_ANSWER;
    char err[512];
    int opened = -1;

    client_init(&c, 4096, STATS_REPLY_MAX);
    if (reply == NULL || pairs == NULL) {
        why = "out of memory";
    } else if ((opened = client_open(&c, host, port, (int)timeout_ms, tls,
                                     err, sizeof(err))) != 0) {
        if (opened == -2) {
            fprintf(stderr, "kura: %s:%s: %s\n", host, port, err);
        }
        why = "cannot connect";
    } else if (auth != NULL &&
               (st = client_admin_login(&c, auth)) != CLIENT_ADMIN_OK) {
        why = st == CLIENT_ADMIN_BAD_FILE
                  ? "cannot read the user:password file"
              : st == CLIENT_ADMIN_REFUSED ? "authentication refused"
                                           : "no answer";
        rc = st == CLIENT_ADMIN_BAD_FILE ? STATS_CMD_USAGE : STATS_CMD_FAILED;
    } else {
        switch (client_admin_stats(&c, reply, STATS_REPLY_MAX)) {
        case CLIENT_ADMIN_OK: rc = STATS_CMD_OK; break;
        case CLIENT_ADMIN_UNAUTHENTICATED:
            why = "the server wants authentication (--auth FILE)";
            break;
        case CLIENT_ADMIN_MASKED: why = "stats are masked (-mask)"; break;
        case CLIENT_ADMIN_ERROR: why = "stats refused"; break;
        default: why = "no answer"; break;
        }
        if (rc == STATS_CMD_OK && watch_s > 0) {
            rc = _watch(&c, watch_s, count, timeout_ms, reply, &why);
        }
    }
    client_close(&c);

    if (rc == STATS_CMD_OK && watch_s == 0) {
        bool ok;
        if (prometheus) {
            size_t n = metrics_parse_stats(reply, strlen(reply), pairs,
                                           STATS_PAIRS_MAX);
            ok = _print_prometheus(pairs, n < STATS_PAIRS_MAX
                                              ? n : STATS_PAIRS_MAX, true);
        } else {
            ok = _print_plain(reply);
        }
        if (!ok || fflush(stdout) != 0) {
            why = "cannot write the output";
            rc = STATS_CMD_FAILED;
        }
    } else if (prometheus && pairs != NULL) {
        _print_prometheus(pairs, 0, false);
        fflush(stdout);
    }
    if (why != NULL) {
        fprintf(stderr, "kura stats %s:%s: %s\n", host, port, why);
    }
    free(pairs);
    free(reply);
    tls_ctx_destroy(tls);
    return rc;
}
