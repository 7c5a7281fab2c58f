/*
 * tls: contexts, sessions and the bytes before a handshake (see tls.h).
 */
#include "tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The session id context mutual TLS needs for resumption. */
static const unsigned char session_context[] = "kurad";
/* The length OpenSSL 3 wants for its ticket keys (name, HMAC, AES). */
#define TICKET_KEYS_LEN 80

struct tls_ctx {
    enum tls_role role;
    char *cert;
    char *key;
    char *ca;
    char *ciphers;
    char *suites;
    int min_version;
    bool ktls;
    bool resume;
    bool key_owner_only;
    pthread_mutex_t lock;     /* guards `ssl`, `last` and `not_after` */
    SSL_CTX *ssl;             /* the material in use */
    SSL_SESSION *last;        /* client: the session to offer next */
    int64_t not_after;
    _Atomic uint64_t handshakes;
    _Atomic uint64_t resumed;
    _Atomic uint64_t failures;
    _Atomic uint64_t timeouts;
    _Atomic uint64_t plaintext;
    _Atomic uint64_t ktls_tx;
    _Atomic uint64_t reloads;
    _Atomic uint64_t reload_failures;
};

struct tls_session {
    SSL *ssl;
    struct tls_ctx *ctx;
    bool established;
    bool ended;               /* closed or failed: no close_notify */
    unsigned long err;        /* OpenSSL's first error of a failure */
    long verify;              /* certificate check result at a failure */
    int sys_errno;            /* the socket's error, when that failed */
};

const uint8_t tls_plain_alert[TLS_PLAIN_ALERT_LEN] = {
    0x15,       /* alert */
    0x03, 0x03, /* TLS 1.2 record version, as TLS 1.3 also sends */
    0x00, 0x02, /* length */
    0x02,       /* fatal */
    0x28,       /* handshake_failure */
};

static char *
_dup(const char *s)
{
    return s != NULL && s[0] != '\0' ? strdup(s) : NULL;
}

/* The reason for OpenSSL's first queued error, and clears the queue. */
static void
_openssl_reason(char *out, size_t cap)
{
    unsigned long e = ERR_get_error();
    ERR_clear_error();
    if (e == 0) {
        snprintf(out, cap, "%s", errno != 0 ? strerror(errno) : "unknown");
        return;
    }
    const char *r = ERR_reason_error_string(e);
    if (r != NULL) {
        snprintf(out, cap, "%s", r);
    } else {
        ERR_error_string_n(e, out, cap);
    }
}

/* Unix time of an ASN.1 time, or 0. */
static int64_t
_asn1_unix(const ASN1_TIME *t)
{
    struct tm tm;
    if (t == NULL || ASN1_TIME_to_tm(t, &tm) != 1) {
        return 0;
    }
    return (int64_t)timegm(&tm);
}

static void
_format_time(int64_t t, char *out, size_t cap)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (gmtime_r(&tt, &tm) == NULL ||
        strftime(out, cap, "%Y-%m-%d %H:%M UTC", &tm) == 0) {
        snprintf(out, cap, "?");
    }
}

/* Keeps the newest session a server gave a resuming client context. */
static int
_on_new_session(SSL *ssl, SSL_SESSION *sess)
{
    struct tls_ctx *c = SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl));
    if (c == NULL) {
        return 0;
    }
    pthread_mutex_lock(&c->lock);
    SSL_SESSION *old = c->last;
    c->last = sess;
    pthread_mutex_unlock(&c->lock);
    SSL_SESSION_free(old);
    return 1; /* the reference is ours */
}

/* Checks the certificate loaded into `x` is valid now; sets its expiry. */
static int
_check_validity(SSL_CTX *x, const char *path, int64_t *not_after, char *err,
                size_t errlen)
{
    X509 *crt = SSL_CTX_get0_certificate(x);
    char when[64];

    if (crt == NULL) {
        snprintf(err, errlen, "%s holds no certificate", path);
        return -1;
    }
    *not_after = _asn1_unix(X509_get0_notAfter(crt));
    if (X509_cmp_current_time(X509_get0_notAfter(crt)) <= 0) {
        _format_time(*not_after, when, sizeof(when));
        snprintf(err, errlen, "certificate %s expired on %s", path, when);
        return -1;
    }
    if (X509_cmp_current_time(X509_get0_notBefore(crt)) >= 0) {
        _format_time(_asn1_unix(X509_get0_notBefore(crt)), when,
                     sizeof(when));
        snprintf(err, errlen, "certificate %s is not valid before %s", path,
                 when);
        return -1;
    }
    return 0;
}

/*
 * The private key must be readable by its owner alone, as kurad's -rkey
 * and -auth files must: a key others can read is no longer private.
 */
static int
_key_private(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "cannot read key %s: %s", path,
                 strerror(errno));
        return -1;
    }
    if (!S_ISREG(st.st_mode) || (st.st_mode & 077) != 0) {
        snprintf(err, errlen, "key %s can be read or written by others than "
                 "its owner: chmod 600 it (owned by the user kurad runs as)",
                 path);
        return -1;
    }
    return 0;
}

/* Loads the CA file into `x` as the peers' trust anchor. */
static int
_load_ca(const struct tls_ctx *c, SSL_CTX *x, char *err, size_t errlen)
{
    char why[160];

    if (c->ca == NULL) {
        if (c->role == TLS_ROLE_CLIENT &&
            SSL_CTX_set_default_verify_paths(x) != 1) {
            _openssl_reason(why, sizeof(why));
            snprintf(err, errlen, "cannot load the system's CAs: %s", why);
            return -1;
        }
        return 0;
    }
    if (SSL_CTX_load_verify_locations(x, c->ca, NULL) != 1) {
        _openssl_reason(why, sizeof(why));
        snprintf(err, errlen, "cannot load CA %s: %s", c->ca, why);
        return -1;
    }
    if (c->role == TLS_ROLE_SERVER) {
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(c->ca);
        if (names == NULL) {
            ERR_clear_error();
            snprintf(err, errlen, "CA %s holds no certificate", c->ca);
            return -1;
        }
        SSL_CTX_set_client_CA_list(x, names);
        SSL_CTX_set_verify(x, SSL_VERIFY_PEER |
                                  SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                           NULL);
    }
    return 0;
}

/* Builds an OpenSSL context from `c`'s settings and files. */
static SSL_CTX *
_build(const struct tls_ctx *c, int64_t *not_after, char *err, size_t errlen)
{
    bool server = c->role == TLS_ROLE_SERVER;
    char why[160];

    ERR_clear_error();
    SSL_CTX *x = SSL_CTX_new(server ? TLS_server_method()
                                    : TLS_client_method());
    if (x == NULL) {
        snprintf(err, errlen, "cannot create a TLS context");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(x, c->min_version == TLS_MIN_13
                                         ? TLS1_3_VERSION
                                         : TLS1_2_VERSION);
    uint64_t opts = SSL_OP_NO_RENEGOTIATION | SSL_OP_IGNORE_UNEXPECTED_EOF |
                    SSL_OP_NO_COMPRESSION;
    if (server) {
        opts |= SSL_OP_CIPHER_SERVER_PREFERENCE;
    }
    if (c->ktls) {
        opts |= SSL_OP_ENABLE_KTLS;
    }
    SSL_CTX_set_options(x, opts);
    /* Writes go out record by record from buffers that may move between
     * retries (conn.c's output grows while a write waits); idle sessions
     * give their 16 KiB buffers back, which 10,000 connections need. */
    SSL_CTX_set_mode(x, SSL_MODE_ENABLE_PARTIAL_WRITE |
                            SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                            SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_app_data(x, (void *)c);
    if (c->ciphers != NULL && SSL_CTX_set_cipher_list(x, c->ciphers) != 1) {
        ERR_clear_error();
        snprintf(err, errlen, "-tlsciphers %s: no cipher OpenSSL knows "
                 "matches", c->ciphers);
        goto fail;
    }
    if (c->suites != NULL && SSL_CTX_set_ciphersuites(x, c->suites) != 1) {
        ERR_clear_error();
        snprintf(err, errlen, "-tlssuites %s: not a list of TLS 1.3 cipher "
                 "suites", c->suites);
        goto fail;
    }
    *not_after = 0;
    if (c->cert != NULL) {
        if (c->key_owner_only && _key_private(c->key, err, errlen) != 0) {
            goto fail;
        }
        if (SSL_CTX_use_certificate_chain_file(x, c->cert) != 1) {
            _openssl_reason(why, sizeof(why));
            snprintf(err, errlen, "cannot load certificate %s: %s", c->cert,
                     why);
            goto fail;
        }
        if (SSL_CTX_use_PrivateKey_file(x, c->key, SSL_FILETYPE_PEM) != 1) {
            int reason = ERR_GET_REASON(ERR_peek_error());
            _openssl_reason(why, sizeof(why));
            if (reason == X509_R_KEY_VALUES_MISMATCH ||
                reason == X509_R_KEY_TYPE_MISMATCH) {
                snprintf(err, errlen, "key %s does not match certificate %s",
                         c->key, c->cert);
            } else {
                snprintf(err, errlen, "cannot load key %s: %s", c->key, why);
            }
            goto fail;
        }
        if (SSL_CTX_check_private_key(x) != 1) {
            ERR_clear_error();
            snprintf(err, errlen, "key %s does not match certificate %s",
                     c->key, c->cert);
            goto fail;
        }
        if (_check_validity(x, c->cert, not_after, err, errlen) != 0) {
            goto fail;
        }
    }
    if (_load_ca(c, x, err, errlen) != 0) {
        goto fail;
    }
    if (!c->ktls) {
        /* One read(2) takes a record's header and body together (not two,
         * as OpenSSL does by default); the callers read on while
         * tls_session_pending() says the session holds more. */
        SSL_CTX_set_read_ahead(x, 1);
    }
    if (server) {
        SSL_CTX_set_session_id_context(x, session_context,
                                       sizeof(session_context) - 1);
        /* Stateless tickets only: nothing to lock or to grow per client. */
        SSL_CTX_set_session_cache_mode(x, SSL_SESS_CACHE_OFF);
        SSL_CTX_set_num_tickets(x, 1);
    } else {
        SSL_CTX_set_verify(x, SSL_VERIFY_PEER, NULL);
        if (c->resume) {
            SSL_CTX_set_session_cache_mode(x, SSL_SESS_CACHE_CLIENT |
                                                  SSL_SESS_CACHE_NO_INTERNAL_STORE);
            SSL_CTX_sess_set_new_cb(x, _on_new_session);
        }
    }
    return x;
fail:
    SSL_CTX_free(x);
    return NULL;
}

struct tls_ctx *
tls_ctx_create(enum tls_role role, const struct tls_options *o, char *err,
               size_t errlen)
{
    if ((o->cert == NULL) != (o->key == NULL) ||
        (role == TLS_ROLE_SERVER && o->cert == NULL)) {
        snprintf(err, errlen, "TLS needs both a certificate and its key");
        return NULL;
    }
    struct tls_ctx *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->role = role;
    c->cert = _dup(o->cert);
    c->key = _dup(o->key);
    c->ca = _dup(o->ca);
    c->ciphers = _dup(o->ciphers);
    c->suites = _dup(o->suites);
    c->min_version = o->min_version == TLS_MIN_13 ? TLS_MIN_13 : TLS_MIN_12;
    c->ktls = o->ktls;
    c->resume = o->resume;
    c->key_owner_only = o->key_owner_only;
    pthread_mutex_init(&c->lock, NULL);
    c->ssl = _build(c, &c->not_after, err, errlen);
    if (c->ssl == NULL) {
        tls_ctx_destroy(c);
        return NULL;
    }
    return c;
}

int
tls_ctx_reload(struct tls_ctx *c, char *err, size_t errlen)
{
    int64_t not_after = 0;
    SSL_CTX *x = _build(c, &not_after, err, errlen);
    if (x == NULL) {
        atomic_fetch_add(&c->reload_failures, 1);
        return -1;
    }
    pthread_mutex_lock(&c->lock);
    SSL_CTX *old = c->ssl;
    if (c->role == TLS_ROLE_SERVER) {
        /* Tickets issued before the reload still resume after it. */
        unsigned char keys[TICKET_KEYS_LEN];
        if (SSL_CTX_get_tlsext_ticket_keys(old, keys, sizeof(keys)) == 1) {
            SSL_CTX_set_tlsext_ticket_keys(x, keys, sizeof(keys));
        }
        OPENSSL_cleanse(keys, sizeof(keys));
    }
    c->ssl = x;
    c->not_after = not_after;
    pthread_mutex_unlock(&c->lock);
    SSL_CTX_free(old); /* open sessions hold their own references */
    atomic_fetch_add(&c->reloads, 1);
    return 0;
}

/* Appends `name` in one line (RFC 2253) to `out`. */
static void
_name(const X509_NAME *name, char *out, size_t cap)
{
    BIO *b = BIO_new(BIO_s_mem());
    out[0] = '\0';
    if (b == NULL) {
        return;
    }
    X509_NAME_print_ex(b, name, 0, XN_FLAG_RFC2253);
    int n = BIO_read(b, out, (int)cap - 1);
    out[n > 0 ? n : 0] = '\0';
    BIO_free(b);
}

void
tls_ctx_describe(struct tls_ctx *c, char *out, size_t cap)
{
    pthread_mutex_lock(&c->lock);
    X509 *crt = SSL_CTX_get0_certificate(c->ssl);
    if (crt != NULL) {
        X509_up_ref(crt);
    }
    pthread_mutex_unlock(&c->lock);
    if (crt == NULL) {
        snprintf(out, cap, "no certificate");
        return;
    }
    char subject[256];
    char issuer[256];
    char until[64];
    char serial[80] = "?";
    _name(X509_get_subject_name(crt), subject, sizeof(subject));
    _name(X509_get_issuer_name(crt), issuer, sizeof(issuer));
    _format_time(_asn1_unix(X509_get0_notAfter(crt)), until, sizeof(until));
    BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(crt), NULL);
    char *hex = bn != NULL ? BN_bn2hex(bn) : NULL;
    if (hex != NULL) {
        snprintf(serial, sizeof(serial), "%s", hex);
    }
    OPENSSL_free(hex);
    BN_free(bn);
    snprintf(out, cap, "subject %s, issuer %s, serial %s, valid until %s",
             subject, issuer, serial, until);
    X509_free(crt);
}

void
tls_ctx_count(struct tls_ctx *c, enum tls_event e)
{
    atomic_fetch_add(e == TLS_EVENT_TIMEOUT ? &c->timeouts : &c->plaintext,
                     1);
}

void
tls_ctx_stats(struct tls_ctx *c, struct tls_stats *out)
{
    out->handshakes = atomic_load(&c->handshakes);
    out->resumed = atomic_load(&c->resumed);
    out->failures = atomic_load(&c->failures);
    out->timeouts = atomic_load(&c->timeouts);
    out->plaintext = atomic_load(&c->plaintext);
    out->ktls_tx = atomic_load(&c->ktls_tx);
    out->reloads = atomic_load(&c->reloads);
    out->reload_failures = atomic_load(&c->reload_failures);
    pthread_mutex_lock(&c->lock);
    out->not_after = c->not_after;
    pthread_mutex_unlock(&c->lock);
}

void
tls_ctx_destroy(struct tls_ctx *c)
{
    if (c == NULL) {
        return;
    }
    SSL_CTX_free(c->ssl);
    SSL_SESSION_free(c->last);
    free(c->cert);
    free(c->key);
    free(c->ca);
    free(c->ciphers);
    free(c->suites);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

bool
tls_ktls_offered(void)
{
    struct sockaddr_in a;
    socklen_t len = sizeof(a);
    bool offered = false;
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int t = -1;

    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (l >= 0 && s >= 0 && bind(l, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        listen(l, 1) == 0 &&
        getsockname(l, (struct sockaddr *)&a, &len) == 0 &&
        connect(s, (struct sockaddr *)&a, sizeof(a)) == 0) {
        t = accept(l, NULL, NULL);
        /* The upper layer attaches only to an established connection. */
        offered = t >= 0 &&
                  setsockopt(s, IPPROTO_TCP, TCP_ULP, "tls", 3) == 0;
    }
    if (t >= 0) {
        close(t);
    }
    if (s >= 0) {
        close(s);
    }
    if (l >= 0) {
        close(l);
    }
    return offered;
}

/* ------------------------------------------------------------ sessions */

static struct tls_session *
_session(struct tls_ctx *c, int fd, bool server)
{
    struct tls_session *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return NULL;
    }
    SSL_SESSION *offer = NULL;
    pthread_mutex_lock(&c->lock);
    s->ssl = SSL_new(c->ssl);
    if (!server && c->last != NULL) {
        /* A copy of its own: a TLS 1.3 client that is given a new ticket
         * marks the session it resumed as used up (OpenSSL removes it
         * from the client cache), which would turn the next connections
         * offered the same object into full handshakes. */
        offer = SSL_SESSION_dup(c->last);
    }
    pthread_mutex_unlock(&c->lock);
    if (s->ssl == NULL || SSL_set_fd(s->ssl, fd) != 1) {
        ERR_clear_error();
        SSL_SESSION_free(offer);
        tls_session_free(s);
        return NULL;
    }
    if (offer != NULL) {
        SSL_set_session(s->ssl, offer);
        SSL_SESSION_free(offer);
    }
    s->ctx = c;
    s->verify = X509_V_OK;
    if (server) {
        SSL_set_accept_state(s->ssl);
    } else {
        SSL_set_connect_state(s->ssl);
    }
    return s;
}

struct tls_session *
tls_session_accept(struct tls_ctx *c, int fd)
{
    return _session(c, fd, true);
}

struct tls_session *
tls_session_connect(struct tls_ctx *c, int fd, const char *host)
{
    struct tls_session *s = _session(c, fd, false);
    if (s == NULL || host == NULL || host[0] == '\0') {
        return s;
    }
    unsigned char addr[sizeof(struct in6_addr)];
    bool ip = inet_pton(AF_INET, host, addr) == 1 ||
              inet_pton(AF_INET6, host, addr) == 1;
    int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(s->ssl), host)
                : SSL_set1_host(s->ssl, host) &&
                      SSL_set_tlsext_host_name(s->ssl, host);
    if (ok != 1) {
        ERR_clear_error();
        tls_session_free(s);
        return NULL;
    }
    return s;
}

/*
 * Maps a failed OpenSSL call's result `r` to a status, keeping why.
 *
 * SSL_get_error() reads the thread's error queue, which must hold nothing
 * older than the call. Every failure here takes its errors off the queue,
 * and so does every other path in this file that can leave one; so reads
 * and writes do not clear it first (ERR_clear_error() was the costliest
 * TLS call of a get on the TLS port, perf: 0.9% of kurad's CPU), and only
 * a handshake, which other code on the thread may precede, starts with a
 * clear queue.
 */
static enum tls_status
_status(struct tls_session *s, int r)
{
    int saved = errno;
    switch (SSL_get_error(s->ssl, r)) {
    case SSL_ERROR_WANT_READ:
        return TLS_WANT_READ;
    case SSL_ERROR_WANT_WRITE:
        return TLS_WANT_WRITE;
    case SSL_ERROR_ZERO_RETURN:
        s->ended = true;
        return TLS_CLOSED;
    case SSL_ERROR_SYSCALL:
        s->ended = true;
        s->err = ERR_get_error();
        ERR_clear_error();
        if (s->err == 0 && saved == 0) {
            return TLS_CLOSED; /* EOF where OpenSSL still counts it so */
        }
        s->sys_errno = saved;
        return TLS_FAILED;
    default:
        s->ended = true;
        s->err = ERR_get_error();
        ERR_clear_error();
        s->verify = SSL_get_verify_result(s->ssl);
        return TLS_FAILED;
    }
}

enum tls_status
tls_session_handshake(struct tls_session *s)
{
    if (s->established) {
        return TLS_OK;
    }
    if (s->ended) {
        return TLS_FAILED;
    }
    ERR_clear_error();
    errno = 0;
    int r = SSL_do_handshake(s->ssl);
    if (r == 1) {
        s->established = true;
        atomic_fetch_add(&s->ctx->handshakes, 1);
        if (SSL_session_reused(s->ssl)) {
            atomic_fetch_add(&s->ctx->resumed, 1);
        }
        if (BIO_get_ktls_send(SSL_get_wbio(s->ssl))) {
            atomic_fetch_add(&s->ctx->ktls_tx, 1);
        }
        return TLS_OK;
    }
    enum tls_status st = _status(s, r);
    if (st == TLS_FAILED) {
        atomic_fetch_add(&s->ctx->failures, 1);
    }
    return st;
}

bool
tls_session_established(const struct tls_session *s)
{
    return s->established;
}

enum tls_status
tls_session_read(struct tls_session *s, void *buf, size_t cap, size_t *got)
{
    if (!s->established) {
        enum tls_status st = tls_session_handshake(s);
        if (st != TLS_OK) {
            return st;
        }
    }
    if (s->ended) {
        return TLS_CLOSED;
    }
    size_t n = 0;
    errno = 0;
    int r = SSL_read_ex(s->ssl, buf, cap, &n);
    if (r == 1) {
        *got = n;
        return TLS_OK;
    }
    return _status(s, r);
}

enum tls_status
tls_session_write(struct tls_session *s, const void *buf, size_t len,
                  size_t *put)
{
    if (!s->established) {
        enum tls_status st = tls_session_handshake(s);
        if (st != TLS_OK) {
            return st;
        }
    }
    if (s->ended) {
        return TLS_FAILED;
    }
    size_t n = 0;
    errno = 0;
    int r = SSL_write_ex(s->ssl, buf, len, &n);
    if (r == 1) {
        *put = n;
        return TLS_OK;
    }
    return _status(s, r);
}

bool
tls_session_pending(const struct tls_session *s)
{
    return SSL_has_pending(s->ssl) == 1;
}

void
tls_session_peer(const struct tls_session *s, char *out, size_t cap)
{
    X509 *crt = SSL_get1_peer_certificate(s->ssl);
    out[0] = '\0';
    if (crt != NULL) {
        _name(X509_get_subject_name(crt), out, cap);
        X509_free(crt);
    }
}

bool
tls_session_resumed(const struct tls_session *s)
{
    return s->established && SSL_session_reused(s->ssl) == 1;
}

int
tls_session_fd(const struct tls_session *s)
{
    return SSL_get_fd(s->ssl);
}

bool
tls_session_error(const struct tls_session *s, char *out, size_t cap)
{
    if (s->err != 0) {
        const char *r = ERR_reason_error_string(s->err);
        char buf[160];
        if (r == NULL) {
            ERR_error_string_n(s->err, buf, sizeof(buf));
            r = buf;
        }
        if (s->verify != X509_V_OK) {
            snprintf(out, cap, "%s: %s", r,
                     X509_verify_cert_error_string(s->verify));
            return true;
        } else {
            snprintf(out, cap, "%s", r);
        }
        return true;
    }
    if (s->sys_errno != 0) {
        snprintf(out, cap, "%s", strerror(s->sys_errno));
        return false;
    }
    snprintf(out, cap, "%s", s->ended ? "the peer closed the connection"
                                      : "no error");
    return false;
}

void
tls_session_close_notify(struct tls_session *s)
{
    if (s == NULL || !s->established || s->ended) {
        return;
    }
    s->ended = true;
    ERR_clear_error();
    (void)SSL_shutdown(s->ssl);
    ERR_clear_error();
}

void
tls_session_free(struct tls_session *s)
{
    if (s == NULL) {
        return;
    }
    if (s->established && s->err == 0) {
        /* OpenSSL takes a session freed without close_notify for a bad
         * one and stops resuming it; one whose connection merely ended
         * (a server's idle close, a client gone) is as good as any. */
        SSL_set_shutdown(s->ssl, SSL_get_shutdown(s->ssl) | SSL_SENT_SHUTDOWN);
    }
    SSL_free(s->ssl);
    free(s);
}

/* ------------------------------------------------ before the handshake */

bool
tls_is_handshake_byte(uint8_t first)
{
    return first == 0x16;
}

enum tls_sniff
tls_sniff(const uint8_t *p, size_t n)
{
    if (n == 0) {
        return TLS_SNIFF_MORE;
    }
    if (tls_is_handshake_byte(p[0])) {
        return TLS_SNIFF_TLS;
    }
    if (p[0] == 0x80) {
        return TLS_SNIFF_BINARY;
    }
    /* As proto_detect(): HTTP methods are upper case, memcached's
     * commands lower case, but for a replication peer's REPL. */
    if (p[0] >= 'A' && p[0] <= 'Z' && p[0] != 'R') {
        return TLS_SNIFF_HTTP;
    }
    return TLS_SNIFF_TEXT;
}

size_t
tls_refusal(enum tls_sniff kind, const uint8_t *p, size_t n, char *out)
{
    static const char text[] = "CLIENT_ERROR this port speaks TLS only\r\n";
    static const char body[] = "this port speaks TLS (HTTPS) only\n";
    static const char bin_body[] = "this port speaks TLS only";

    if (kind == TLS_SNIFF_HTTP) {
        int len = snprintf(out, TLS_REFUSAL_MAX,
                           "HTTP/1.1 400 Bad Request\r\n"
                           "Content-Type: text/plain\r\n"
                           "Content-Length: %zu\r\n"
                           "Connection: close\r\n\r\n%s",
                           sizeof(body) - 1, body);
        return (size_t)len;
    }
    if (kind == TLS_SNIFF_BINARY) {
        size_t blen = sizeof(bin_body) - 1;
        memset(out, 0, 24);
        out[0] = (char)0x81;                 /* response magic */
        out[1] = n > 1 ? (char)p[1] : 0;     /* the request's opcode */
        out[6] = 0x00;                       /* status 0x0083: */
        out[7] = (char)0x83;                 /* not supported */
        out[11] = (char)blen;                /* total body length */
        for (size_t i = 12; i < 16 && i < n; i++) {
            out[i] = (char)p[i];             /* the request's opaque */
        }
        memcpy(out + 24, bin_body, blen);
        return 24 + blen;
    }
    memcpy(out, text, sizeof(text) - 1);
    return sizeof(text) - 1;
}
