/*
 * tls: TLS for kurad's clients (-tlsport), its replication link (-mtls)
 * and the kura tool (--tls), on Debian's OpenSSL 3.
 *
 * A context (struct tls_ctx) is what one side of a connection proves and
 * trusts: its certificate chain and key, the CA its peers' certificates
 * must chain to, the lowest protocol version and the ciphers. The server's
 * context is shared by every worker; a client's by the replication
 * receiver or a tool. tls_ctx_reload() (SIGHUP) reads the files again into
 * a new OpenSSL context, checks all of it (the key matches the
 * certificate, the certificate is valid now, the CA parses) and swaps it
 * in only then: a bad file leaves the old material serving, and says why.
 * Connections already open keep the material they began with; the
 * session-ticket keys carry over, so tickets issued before a reload still
 * resume after it.
 *
 * A session (struct tls_session) is one connection's TLS state over a
 * non-blocking socket whose readiness the caller waits for. No call
 * blocks: TLS_WANT_READ or TLS_WANT_WRITE says which readiness to wait for
 * before calling again, so a worker's event loop and a replication
 * thread's poll() drive the same code, and a handshake never blocks a
 * thread. Renegotiation is refused (SSL_OP_NO_RENEGOTIATION), so after the
 * handshake a read only ever waits to read and a write to write (but for
 * a read that must first send what TLS 1.3 owes the peer, which says
 * TLS_WANT_WRITE). A peer closing without close_notify is an ordinary end
 * of stream: every protocol kura speaks frames its own messages.
 *
 * What kurad does for connect-per-request clients (seed 001): stateless
 * session tickets (one per handshake), so a returning client resumes
 * without a full handshake and the server keeps no session cache; a
 * client context remembers the last session it was given and offers it
 * on its next connection.
 *
 * kTLS: with `ktls`, SSL_OP_ENABLE_KTLS lets OpenSSL hand the record layer
 * to the kernel where the kernel offers it (the "tls" TCP upper layer);
 * elsewhere TLS stays in user space. tls_ktls_offered() says which.
 *
 * Thread-safety: a context may be used from any thread (its OpenSSL
 * context is swapped under a lock; each session holds a reference to the
 * one it began with). A session belongs to one thread at a time; a caller
 * that reads from one thread and writes from another serialises the calls
 * (netio.h's streams do).
 */
#ifndef KURA_TLS_H
#define KURA_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Lowest protocol versions accepted (-tlsmin). */
#define TLS_MIN_12 12
#define TLS_MIN_13 13

enum tls_role {
    TLS_ROLE_SERVER, /* accepts: presents cert/key, asks for a client
                        certificate when `ca` is set */
    TLS_ROLE_CLIENT, /* connects: checks the server against `ca` (or the
                        system's CAs), presents cert/key if given */
};

struct tls_options {
    const char *cert;    /* PEM chain; NULL: none (a client only) */
    const char *key;     /* PEM private key; NULL with cert NULL */
    const char *ca;      /* PEM CA file; NULL: no client certificates
                            asked for (server), the system's CAs (client) */
    int min_version;     /* TLS_MIN_12 (default when 0) or TLS_MIN_13 */
    const char *ciphers; /* TLS 1.2 cipher list (OpenSSL syntax); NULL or
                            "": OpenSSL's default */
    const char *suites;  /* TLS 1.3 cipher suites; NULL or "": default */
    bool ktls;           /* SSL_OP_ENABLE_KTLS */
    bool resume;         /* client: offer the last session on the next
                            connection */
    bool key_owner_only; /* refuse a key file others can read or write
                            (kurad's, as its -rkey and -auth files) */
};

/* What a context has done, for stats and tests. */
struct tls_stats {
    uint64_t handshakes;      /* completed */
    uint64_t resumed;         /* of which resumed a session */
    uint64_t failures;        /* handshakes that failed (not timeouts) */
    uint64_t timeouts;        /* handshakes not done within the limit */
    uint64_t plaintext;       /* plaintext clients refused */
    uint64_t ktls_tx;         /* completed with kTLS sending */
    uint64_t reloads;         /* successful tls_ctx_reload() */
    uint64_t reload_failures;
    int64_t not_after;        /* the certificate's expiry (unix s), or 0 */
};

struct tls_ctx;
struct tls_session;

/*
 * Builds a context for `role` from `o` (the strings are copied). Returns
 * NULL with a one-line reason in `err` (which file, and what is wrong
 * with it) if a file cannot be read or parsed, the key does not match the
 * certificate (or, with key_owner_only, others can read it), the
 * certificate is not valid now, or a cipher setting matches nothing. Free
 * with tls_ctx_destroy().
 */
struct tls_ctx *tls_ctx_create(enum tls_role role, const struct tls_options *o,
                               char *err, size_t errlen);

/*
 * Reads the files again. Returns 0 with the new material in use, or -1
 * with the reason in `err` and the old material still in use. Any thread.
 */
int tls_ctx_reload(struct tls_ctx *c, char *err, size_t errlen);

/*
 * Describes the certificate in use ("subject CN=..., issuer ..., serial
 * ..., valid until 2027-11-27 09:46 UTC"), or "no certificate", in `out`
 * (`cap` bytes, NUL-terminated).
 */
void tls_ctx_describe(struct tls_ctx *c, char *out, size_t cap);

/* What a connection's owner saw before or instead of a handshake. */
enum tls_event {
    TLS_EVENT_TIMEOUT,   /* no handshake within the limit */
    TLS_EVENT_PLAINTEXT, /* a plaintext client refused */
};

/* Counts `e` in `c`'s figures. Any thread. */
void tls_ctx_count(struct tls_ctx *c, enum tls_event e);

/* Copies the counters. Any thread. */
void tls_ctx_stats(struct tls_ctx *c, struct tls_stats *out);

/* Frees `c`. Sessions still open keep what they use alive. NULL-safe. */
void tls_ctx_destroy(struct tls_ctx *c);

/*
 * True if this kernel offers kTLS (the "tls" TCP upper layer protocol can
 * be attached to a connected socket). Probes once, over loopback.
 */
bool tls_ktls_offered(void);

/* How a session call went. */
enum tls_status {
    TLS_OK = 0,      /* done (a handshake), or bytes moved (read/write) */
    TLS_WANT_READ,   /* call again once the socket is readable */
    TLS_WANT_WRITE,  /* call again once the socket is writable */
    TLS_CLOSED,      /* the peer ended the stream (close_notify or EOF) */
    TLS_FAILED,      /* a protocol or certificate error, or a socket
                        error; tls_session_error() says which */
};

/*
 * A server session on the connected, non-blocking socket `fd`, which the
 * caller keeps owning (tls_session_free() does not close it). NULL when
 * out of memory.
 */
struct tls_session *tls_session_accept(struct tls_ctx *c, int fd);

/*
 * A client session on `fd` that checks the server's certificate names
 * `host` (an IP address is matched against the certificate's IP SANs, a
 * name against its DNS names, and sent as SNI). NULL when out of memory.
 */
struct tls_session *tls_session_connect(struct tls_ctx *c, int fd,
                                        const char *host);

/* Advances the handshake: TLS_OK once it is complete. */
enum tls_status tls_session_handshake(struct tls_session *s);

/* True once the handshake has completed. */
bool tls_session_established(const struct tls_session *s);

/*
 * Reads up to `cap` bytes of application data into `buf`; on TLS_OK sets
 * `*got` (> 0). Completes the handshake first if it is not.
 */
enum tls_status tls_session_read(struct tls_session *s, void *buf, size_t cap,
                                 size_t *got);

/*
 * Writes up to `len` bytes of `buf` (one record or more); on TLS_OK sets
 * `*put` (> 0). After TLS_WANT_WRITE the next call must offer at least the
 * same bytes again (the buffer may have moved).
 */
enum tls_status tls_session_write(struct tls_session *s, const void *buf,
                                  size_t len, size_t *put);

/*
 * True if the session holds bytes already read from the socket (the
 * socket itself may no longer announce them): the rest of a record, more
 * whole records (read ahead), or the start of one still arriving. A
 * caller reads again after a read that gave bytes while this says so; a
 * read that then says TLS_WANT_READ means the socket is next.
 */
bool tls_session_pending(const struct tls_session *s);

/*
 * The subject of the peer's certificate (RFC 2253, "CN=..."), in `out`
 * (`cap` bytes), or "" when the peer presented none.
 */
void tls_session_peer(const struct tls_session *s, char *out, size_t cap);

/* True if the handshake resumed a session. */
bool tls_session_resumed(const struct tls_session *s);

/* The socket. */
int tls_session_fd(const struct tls_session *s);

/*
 * Why the session failed or closed, in `out` (`cap` bytes): OpenSSL's
 * reason ("certificate verify failed: certificate has expired", "peer
 * did not return a certificate", "wrong version number", ...) or the
 * socket's error. Returns true if TLS itself failed (a protocol or
 * certificate error), false for the socket's error or a close.
 */
bool tls_session_error(const struct tls_session *s, char *out, size_t cap);

/*
 * Sends close_notify if the session is established and the peer has not
 * closed or failed; one non-blocking attempt, never waits.
 */
void tls_session_close_notify(struct tls_session *s);

/* Frees `s` (not its socket). NULL-safe. */
void tls_session_free(struct tls_session *s);

/* ------------------------------------------------ before the handshake */

/* What the first bytes on the TLS port are. */
enum tls_sniff {
    TLS_SNIFF_MORE,   /* nothing yet */
    TLS_SNIFF_TLS,    /* a TLS record: a handshake (0x16) */
    TLS_SNIFF_TEXT,   /* plaintext: memcached's text or meta protocol */
    TLS_SNIFF_BINARY, /* plaintext: memcached's binary protocol (0x80) */
    TLS_SNIFF_HTTP,   /* plaintext: an HTTP request */
};

/*
 * Classifies the first `n` bytes a client sent on the TLS port. Pure: no
 * I/O.
 */
enum tls_sniff tls_sniff(const uint8_t *p, size_t n);

/* Room for any refusal tls_refusal() writes. */
#define TLS_REFUSAL_MAX 256

/*
 * Writes, in `out` (TLS_REFUSAL_MAX bytes), the plaintext refusal for a
 * client of kind `kind` that sent `p` (`n` bytes) to the TLS port, in its
 * own protocol: a CLIENT_ERROR line, an HTTP 400 response, or a binary
 * error response (status 0x0083) echoing its opcode and opaque. Returns
 * its length. Pure.
 */
size_t tls_refusal(enum tls_sniff kind, const uint8_t *p, size_t n,
                   char *out);

/* A fatal handshake_failure alert, in the clear: what a TLS client that
 * reached the plaintext port is sent before the close. */
#define TLS_PLAIN_ALERT_LEN 7
extern const uint8_t tls_plain_alert[TLS_PLAIN_ALERT_LEN];

/* True if `first` opens a TLS handshake record (a client hello). */
bool tls_is_handshake_byte(uint8_t first);

#endif
