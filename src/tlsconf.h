/*
 * tlsconf: kurad's TLS contexts, made from its settings (tls.h).
 *
 * The server context serves -tlsport with -tlscert/-tlskey, and asks
 * clients for a certificate from -tlsca when that is given (mutual TLS).
 * The client context is the replication link's (-mtls): it checks the
 * master against -tlsca and presents -tlscert/-tlskey. Both are made at
 * start-up, before the database is opened, so a bad file stops the start
 * with its reason and changes nothing; SIGHUP reloads both, and a bad
 * file then leaves the old material in use, with a log line saying why.
 * The key file must be readable by its owner alone (as -rkey's and
 * -auth's). What is loaded (subject, issuer, expiry), which versions, and
 * whether the kernel does the records (kTLS) are logged.
 *
 * Thread-safety: main thread (start-up and the signal handler); the
 * contexts themselves are shared with the workers and the receiver.
 */
#ifndef KURA_TLSCONF_H
#define KURA_TLSCONF_H

#include <stddef.h>

#include "log.h"
#include "settings.h"
#include "tls.h"

struct tlsconf {
    struct tls_ctx *server; /* -tlsport, or NULL */
    struct tls_ctx *client; /* -mtls, or NULL */
};

/*
 * Makes the contexts `s` asks for and logs them. Returns 0, or -1 with
 * the reason in `err` (nothing left to free).
 */
int tlsconf_open(struct tlsconf *t, const struct settings *s,
                 struct logger *log, char *err, size_t errlen);

/* Reloads every context from its files (SIGHUP), logging the outcome. */
void tlsconf_reload(struct tlsconf *t, struct logger *log);

/* Frees the contexts. Safe on a zeroed struct and twice. */
void tlsconf_close(struct tlsconf *t);

#endif
