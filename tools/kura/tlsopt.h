/*
 * tlsopt: the TLS options of every kura command that connects to kurad
 * (bench, verify, load, stallwatch, ping, stats, backup):
 *
 *   --tls            connect over TLS (to kurad's -tlsport)
 *   --cacert FILE    the CA the server's certificate must come from
 *                    (default: the system's CAs)
 *   --cert FILE --key FILE
 *                    a client certificate, for a server with -tlsca
 *
 * The server's certificate must name the --host given (its IP address or
 * DNS name), as kurad's -mtls checks its master's. Each command adds
 * TLSOPT_LONG_OPTIONS to its getopt_long() table, passes every option to
 * tlsopt_parse(), and makes its context with tlsopt_context().
 */
#ifndef KURA_TOOLS_TLSOPT_H
#define KURA_TOOLS_TLSOPT_H

#include <getopt.h>
#include <stdbool.h>

#include "tls.h"

/* getopt_long() values, apart from every command's own letters. */
enum {
    TLSOPT_TLS = 1001,
    TLSOPT_CACERT,
    TLSOPT_CERT,
    TLSOPT_KEY,
};

#define TLSOPT_LONG_OPTIONS                                                  \
    {"tls", no_argument, NULL, TLSOPT_TLS},                                  \
        {"cacert", required_argument, NULL, TLSOPT_CACERT},                  \
        {"cert", required_argument, NULL, TLSOPT_CERT},                      \
        {"key", required_argument, NULL, TLSOPT_KEY}

/* For usage lines. */
#define TLSOPT_USAGE "[--tls [--cacert F] [--cert F --key F]]"

struct tlsopt {
    bool tls;
    const char *cacert;
    const char *cert;
    const char *key;
};

/*
 * Takes option `opt` (getopt_long()'s value) with argument `arg` if it is
 * one of the TLS options. Returns true if it was.
 */
bool tlsopt_parse(struct tlsopt *t, int opt, const char *arg);

/*
 * Makes the client context the options ask for into `*out` (NULL without
 * --tls); `resume` offers each connection the session the last one was
 * given (connect-per-request benches). Ignores SIGPIPE, which OpenSSL's
 * writes could raise. Returns 0, or -1 after printing why to standard
 * error. Free with tls_ctx_destroy().
 */
int tlsopt_context(const struct tlsopt *t, bool resume, struct tls_ctx **out);

#endif
