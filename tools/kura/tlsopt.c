/*
 * tlsopt: the kura tool's TLS options (see tlsopt.h).
 */
#include "tlsopt.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

bool
tlsopt_parse(struct tlsopt *t, int opt, const char *arg)
{
    switch (opt) {
    case TLSOPT_TLS:
        t->tls = true;
        return true;
    case TLSOPT_CACERT:
        t->cacert = arg;
        return true;
    case TLSOPT_CERT:
        t->cert = arg;
        return true;
    case TLSOPT_KEY:
        t->key = arg;
        return true;
    default:
        return false;
    }
}

int
tlsopt_context(const struct tlsopt *t, bool resume, struct tls_ctx **out)
{
    struct tls_options o;
    char err[768];

    *out = NULL;
    if (!t->tls) {
        if (t->cacert != NULL || t->cert != NULL || t->key != NULL) {
            fprintf(stderr, "kura: --cacert, --cert and --key go with "
                            "--tls\n");
            return -1;
        }
        return 0;
    }
    if ((t->cert == NULL) != (t->key == NULL)) {
        fprintf(stderr, "kura: --cert and --key go together\n");
        return -1;
    }
    memset(&o, 0, sizeof(o));
    o.cert = t->cert;
    o.key = t->key;
    o.ca = t->cacert;
    o.resume = resume;
    *out = tls_ctx_create(TLS_ROLE_CLIENT, &o, err, sizeof(err));
    if (*out == NULL) {
        fprintf(stderr, "kura: --tls: %s\n", err);
        return -1;
    }
    signal(SIGPIPE, SIG_IGN);
    return 0;
}
