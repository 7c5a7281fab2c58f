/*
 * tlsconf: the daemon's TLS contexts from its settings (see tlsconf.h).
 */
#include "tlsconf.h"

#include <stdio.h>
#include <string.h>

static void
_options(const struct settings *s, struct tls_options *o)
{
    memset(o, 0, sizeof(*o));
    o->cert = s->tls_cert;
    o->key = s->tls_key;
    o->ca = s->tls_ca[0] != '\0' ? s->tls_ca : NULL;
    o->min_version = s->tls_min;
    o->ciphers = s->tls_ciphers;
    o->suites = s->tls_suites;
    o->ktls = s->tls_ktls;
    o->key_owner_only = true;
}

int
tlsconf_open(struct tlsconf *t, const struct settings *s, struct logger *log,
             char *err, size_t errlen)
{
    struct tls_options o;
    char why[768];
    char desc[768];

    memset(t, 0, sizeof(*t));
    if (s->tls_port == 0 && !s->mtls) {
        return 0;
    }
    _options(s, &o);
    const char *versions = s->tls_min == TLS_MIN_13 ? "1.3" : "1.2 and 1.3";
    if (s->tls_port != 0) {
        t->server = tls_ctx_create(TLS_ROLE_SERVER, &o, why, sizeof(why));
        if (t->server == NULL) {
            snprintf(err, errlen, "-tlsport: %s", why);
            return -1;
        }
        tls_ctx_describe(t->server, desc, sizeof(desc));
        log_info(log, "tls: TLS %s on %s:%d with certificate %s; %s",
                 versions, s->tls_host[0] != '\0' ? s->tls_host : s->host,
                 s->tls_port, desc,
                 s->tls_ca[0] != '\0' ? "clients must present a "
                                        "certificate from -tlsca"
                                      : "no client certificate asked for");
    }
    if (s->mtls) {
        t->client = tls_ctx_create(TLS_ROLE_CLIENT, &o, why, sizeof(why));
        if (t->client == NULL) {
            snprintf(err, errlen, "-mtls: %s", why);
            tlsconf_close(t);
            return -1;
        }
        tls_ctx_describe(t->client, desc, sizeof(desc));
        log_info(log, "tls: replication from %s:%d over TLS %s, checked "
                 "against -tlsca, presenting %s", s->mhost, s->mport,
                 versions, desc);
    }
    if (s->tls_ktls) {
        if (tls_ktls_offered()) {
            log_info(log, "tls: -tlsktls: this kernel offers kTLS; records "
                     "are sealed in the kernel where the cipher allows");
        } else {
            log_warn(log, "tls: -tlsktls: this kernel does not offer kTLS "
                     "(no \"tls\" TCP upper layer; modprobe tls); TLS "
                     "stays in user space");
        }
    }
    return 0;
}

static void
_reload(struct tls_ctx *c, const char *what, struct logger *log)
{
    char why[768];
    char desc[768];

    if (c == NULL) {
        return;
    }
    if (tls_ctx_reload(c, why, sizeof(why)) != 0) {
        tls_ctx_describe(c, desc, sizeof(desc));
        log_error(log, "tls: %s not reloaded on SIGHUP: %s; still using "
                  "the previous material (certificate %s)", what, why, desc);
        return;
    }
    tls_ctx_describe(c, desc, sizeof(desc));
    log_info(log, "tls: %s reloaded on SIGHUP: certificate %s", what, desc);
}

void
tlsconf_reload(struct tlsconf *t, struct logger *log)
{
    _reload(t->server, "-tlsport's certificate, key and CA", log);
    _reload(t->client, "-mtls's certificate, key and CA", log);
}

void
tlsconf_close(struct tlsconf *t)
{
    tls_ctx_destroy(t->server);
    tls_ctx_destroy(t->client);
    t->server = NULL;
    t->client = NULL;
}
