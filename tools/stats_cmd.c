/*
 * stats_cmd: `kura stats [--host H] [--port P] [--timeout MS] [--auth FILE]
 * [--prometheus]`.
 *
 * Connects, logs in if given a user:password file, asks "stats" and
 * prints the STAT lines, all within one deadline. With --prometheus it
 * prints the figures (memcached's and kurad's own, kura_*) in Prometheus'
 * text format instead, through src/metrics (the text kurad's HTTP
 * endpoint GET /-/metrics serves too), plus
 * kura_up 1; when the stats cannot be read it prints kura_up 0 alone and
 * exits 1, so a textfile collector still records that the server is down.
 */
#include "stats_cmd.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adminconn.h"
#include "buf.h"
#include "metrics.h"
#include "util.h"

#define STATS_REPLY_MAX (1u << 20)
#define STATS_PAIRS_MAX 4096

static void
_usage(FILE *out)
{
    fprintf(out, "usage: kura stats [--host H] [--port P] [--timeout MS] "
                 "[--auth FILE] [--prometheus]\n");
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
        {NULL, 0, NULL, 0},
    };
    const char *host = "127.0.0.1";
    const char *port = "1978";
    const char *auth = NULL;
    uint64_t timeout_ms = 2000;
    bool prometheus = false;
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
        default: _usage(stderr); return STATS_CMD_USAGE;
        }
    }
    if (optind != argc) {
        _usage(stderr);
        return STATS_CMD_USAGE;
    }

    struct adminconn c = {-1, 0};
    char *reply = malloc(STATS_REPLY_MAX);
    struct metrics_pair *pairs = malloc((STATS_PAIRS_MAX + 1) *
                                        sizeof(*pairs));
    int rc = STATS_CMD_FAILED;
    const char *why = NULL;
    enum adminconn_status st = ADMINCONN_NO_ANSWER;

    if (reply == NULL || pairs == NULL) {
        why = "out of memory";
    } else if (adminconn_open(&c, host, port, (long)timeout_ms) != 0) {
        why = "cannot connect";
    } else if (auth != NULL &&
               (st = adminconn_login(&c, auth, reply, STATS_REPLY_MAX)) !=
                   ADMINCONN_OK) {
        why = st == ADMINCONN_BAD_FILE ? "cannot read the user:password file"
              : st == ADMINCONN_REFUSED ? "authentication refused"
                                        : "no answer";
        rc = st == ADMINCONN_BAD_FILE ? STATS_CMD_USAGE : STATS_CMD_FAILED;
    } else {
        switch (adminconn_stats(&c, reply, STATS_REPLY_MAX)) {
        case ADMINCONN_OK: rc = STATS_CMD_OK; break;
        case ADMINCONN_UNAUTHENTICATED:
            why = "the server wants authentication (--auth FILE)";
            break;
        case ADMINCONN_MASKED: why = "stats are masked (-mask)"; break;
        case ADMINCONN_ERROR: why = "stats refused"; break;
        default: why = "no answer"; break;
        }
    }
    adminconn_close(&c);

    if (rc == STATS_CMD_OK) {
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
    return rc;
}
