/*
 * ping: `kura ping`, the health check for keepalived, load balancers and
 * monitoring: is kurad answering, and does it take writes?
 *
 * It connects, authenticates with a user:password file if given (the
 * format of kurad's -auth), asks "stats" and reads kura_writable, all
 * within one deadline. A server whose stats are masked (-mask stat) is
 * judged by "version" alone.
 */
#include "ping.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_admin.h"
#include "tlsopt.h"
#include "util.h"

#define PING_REPLY_MAX (256 << 10)

static void
_usage(FILE *out)
{
    fprintf(out, "usage: kura ping [--host H] [--port P] [--timeout MS] "
                 "[--auth FILE] [--quiet]\n"
                 "                 " TLSOPT_USAGE "\n");
}

int
ping_cmd(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"host", required_argument, NULL, 'h'},
        {"port", required_argument, NULL, 'p'},
        {"timeout", required_argument, NULL, 't'},
        {"auth", required_argument, NULL, 'a'},
        {"quiet", no_argument, NULL, 'q'},
        TLSOPT_LONG_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    struct tlsopt tlsopt = {0};
    struct tls_ctx *tls = NULL;
    const char *host = "127.0.0.1";
    const char *port = "1978";
    const char *auth = NULL;
    long timeout_ms = 2000;
    bool quiet = false;
    uint64_t v;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (ch) {
        case 'h': host = optarg; break;
        case 'p': port = optarg; break;
        case 'a': auth = optarg; break;
        case 'q': quiet = true; break;
        case 't':
            /* Digits only, 1 ms to an hour, as kura stats takes them. */
            if (!util_parse_uint(optarg, strlen(optarg), 3600000, &v) ||
                v == 0) {
                _usage(stderr);
                return PING_USAGE;
            }
            timeout_ms = (long)v;
            break;
        default:
            if (!tlsopt_parse(&tlsopt, ch, optarg)) {
                _usage(stderr);
                return PING_USAGE;
            }
            break;
        }
    }
    if (tlsopt_context(&tlsopt, false, &tls) != 0) {
        return PING_USAGE;
    }
    if (optind != argc) {
        _usage(stderr);
        return PING_USAGE;
    }
    struct client c;
    char *reply = malloc(PING_REPLY_MAX);
    int rc = PING_DOWN;
    const char *why = "no answer";
    char err[512];
    client_init(&c, 4096, PING_REPLY_MAX);
    int opened = reply == NULL ? -1
                               : client_open(&c, host, port, (int)timeout_ms,
                                             tls, err, sizeof(err));
    if (opened != 0) {
        if (opened == -2) {
            fprintf(stderr, "kura: %s:%s: %s\n", host, port, err);
        }
        why = "cannot connect";
        goto out;
    }
    if (auth != NULL) {
        switch (client_admin_login(&c, auth)) {
        case CLIENT_ADMIN_OK: break;
        case CLIENT_ADMIN_BAD_FILE:
            why = "cannot read the user:password file";
            rc = PING_USAGE;
            goto out;
        case CLIENT_ADMIN_REFUSED: why = "authentication refused"; goto out;
        default: goto out;
        }
    }
    switch (client_admin_stats(&c, reply, PING_REPLY_MAX)) {
    case CLIENT_ADMIN_OK: break;
    case CLIENT_ADMIN_UNAUTHENTICATED:
        why = "the server wants authentication (--auth FILE)";
        goto out;
    case CLIENT_ADMIN_MASKED:
        /* stats masked: an answer to version is all there is to know */
        if (client_admin_version(&c) != CLIENT_ADMIN_OK) {
            goto out;
        }
        rc = PING_OK;
        why = "answering (stats masked)";
        goto out;
    default: goto out;
    }
    const char *w = strstr(reply, "STAT kura_writable ");
    if (w == NULL) {
        why = "not a kurad (no kura_writable)";
        goto out;
    }
    if (w[19] == '1') {
        rc = PING_OK;
        why = "answering, accepting writes";
    } else {
        rc = PING_READONLY;
        why = "answering, refusing writes (see its log)";
    }
out:
    if (!quiet) {
        fprintf(rc == PING_OK ? stdout : stderr, "kura ping %s:%s: %s\n",
                host, port, why);
    }
    client_close(&c);
    free(reply);
    tls_ctx_destroy(tls);
    return rc;
}
