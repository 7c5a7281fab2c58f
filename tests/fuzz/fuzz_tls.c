/*
 * fuzz_tls: fuzzes what kurad does with a client's bytes on the TLS port
 * before a handshake completes (tls.h, conn.c's HANDSHAKE state).
 *
 * The input is what a client sends. As a connection does, its first bytes
 * are classified (tls_sniff()); a plaintext client gets its refusal
 * (tls_refusal()), which must be well formed in the client's protocol:
 * at most TLS_REFUSAL_MAX bytes, a CLIENT_ERROR line, an HTTP 400 with a
 * true Content-Length, or a binary response whose header matches its body
 * and echoes the request's opcode and opaque. A TLS client's bytes go to
 * a server session over a socketpair, delivered in chunks whose sizes the
 * input chooses, the handshake driven after each; when they run out the
 * client end is shut. No input can complete a handshake (that needs the
 * client's keys), so it must end closed or failed, a failure must say
 * why, and nothing may crash, hang or leak.
 *
 * Input: byte 0 bit 0 makes the server ask for a client certificate
 * (-tlsca); byte 1 % 8 is how many chunk sizes follow (each byte + 1, used
 * in turn; with none, chunks of 1, 3, 7 and 16 bytes); the rest is the
 * stream. The server's certificate and key are made at start-up, in a
 * temporary directory removed at exit.
 */
#include <errno.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "tls.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];
static char cert_path[128];
static char key_path[128];
static struct tls_ctx *plain_ctx;   /* no client certificate asked */
static struct tls_ctx *mutual_ctx;  /* -tlsca: its own certificate */

static void
_remove(void)
{
    tls_ctx_destroy(plain_ctx);
    tls_ctx_destroy(mutual_ctx);
    unlink(cert_path);
    unlink(key_path);
    rmdir(dir);
}

/* A self-signed EC certificate and its key, written to `dir`. */
static void
_make_cert(void)
{
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *crt = X509_new();
    FUZZ_CHECK(key != NULL && crt != NULL);
    X509_set_version(crt, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(crt), 1);
    X509_gmtime_adj(X509_getm_notBefore(crt), -3600);
    X509_gmtime_adj(X509_getm_notAfter(crt), 30L * 86400);
    X509_set_pubkey(crt, key);
    X509_NAME *name = X509_get_subject_name(crt);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               (const unsigned char *)"kura-fuzz", -1, -1, 0);
    X509_set_issuer_name(crt, name);
    FUZZ_CHECK(X509_sign(crt, key, EVP_sha256()) > 0);
    FILE *f = fopen(cert_path, "w");
    FUZZ_CHECK(f != NULL && PEM_write_X509(f, crt) == 1);
    fclose(f);
    f = fopen(key_path, "w");
    FUZZ_CHECK(f != NULL && PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL,
                                                 NULL) == 1);
    fclose(f);
    X509_free(crt);
    EVP_PKEY_free(key);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    struct tls_options o = {0};
    char err[512];

    (void)argc;
    (void)argv;
    signal(SIGPIPE, SIG_IGN);
    snprintf(dir, sizeof(dir), "/tmp/kura-fuzz-tls-XXXXXX");
    FUZZ_CHECK(mkdtemp(dir) != NULL);
    snprintf(cert_path, sizeof(cert_path), "%s/cert.pem", dir);
    snprintf(key_path, sizeof(key_path), "%s/key.pem", dir);
    _make_cert();
    o.cert = cert_path;
    o.key = key_path;
    plain_ctx = tls_ctx_create(TLS_ROLE_SERVER, &o, err, sizeof(err));
    o.ca = cert_path;
    mutual_ctx = tls_ctx_create(TLS_ROLE_SERVER, &o, err, sizeof(err));
    FUZZ_CHECK(plain_ctx != NULL && mutual_ctx != NULL);
    atexit(_remove);
    return 0;
}

/* The refusal for a plaintext client that sent `p` is well formed. */
static void
_check_refusal(enum tls_sniff kind, const uint8_t *p, size_t n)
{
    char out[TLS_REFUSAL_MAX];
    size_t len = tls_refusal(kind, p, n, out);
    FUZZ_CHECK(len > 0 && len <= TLS_REFUSAL_MAX);
    if (kind == TLS_SNIFF_TEXT) {
        FUZZ_CHECK(memcmp(out, "CLIENT_ERROR ", 13) == 0);
        FUZZ_CHECK(out[len - 2] == '\r' && out[len - 1] == '\n');
        FUZZ_CHECK(memchr(out, '\n', len - 1) == NULL);
        return;
    }
    if (kind == TLS_SNIFF_HTTP) {
        FUZZ_CHECK(memcmp(out, "HTTP/1.1 400 ", 13) == 0);
        const char *end = memmem(out, len, "\r\n\r\n", 4);
        FUZZ_CHECK(end != NULL);
        const char *cl = memmem(out, len, "Content-Length: ", 16);
        FUZZ_CHECK(cl != NULL && cl < end);
        FUZZ_CHECK((size_t)strtoul(cl + 16, NULL, 10) ==
                   len - (size_t)(end + 4 - out));
        return;
    }
    FUZZ_CHECK(kind == TLS_SNIFF_BINARY);
    FUZZ_CHECK(len >= 24 && (uint8_t)out[0] == 0x81);
    FUZZ_CHECK((uint8_t)out[1] == (n > 1 ? p[1] : 0));
    uint32_t body = (uint32_t)(uint8_t)out[8] << 24 |
                    (uint32_t)(uint8_t)out[9] << 16 |
                    (uint32_t)(uint8_t)out[10] << 8 | (uint8_t)out[11];
    FUZZ_CHECK(body == len - 24);
    for (size_t i = 12; i < 16; i++) {
        FUZZ_CHECK((uint8_t)out[i] == (i < n ? p[i] : 0));
    }
}

/* Reads and drops what the server sent back, so its writes never block. */
static void
_drain(int fd)
{
    char buf[4096];
    while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0) {
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_stream fs;
    if (!fuzz_stream_split(data, size, &fs)) {
        return 0;
    }
    enum tls_sniff kind = tls_sniff(fs.data, fs.len);
    FUZZ_CHECK(kind != TLS_SNIFF_MORE);
    FUZZ_CHECK((kind == TLS_SNIFF_TLS) == (fs.data[0] == 0x16));
    if (kind != TLS_SNIFF_TLS) {
        _check_refusal(kind, fs.data, fs.len);
        return 0;
    }

    int fds[2];
    FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds) ==
               0);
    struct tls_ctx *ctx = (fs.mode & 1) ? mutual_ctx : plain_ctx;
    struct tls_session *s = tls_session_accept(ctx, fds[0]);
    FUZZ_CHECK(s != NULL);
    enum tls_status st = TLS_WANT_READ;
    size_t off = 0;
    for (size_t i = 0; off < fs.len && st != TLS_FAILED && st != TLS_CLOSED;
         i++) {
        size_t chunk = (size_t)fs.sizes[i % fs.nsizes] + 1;
        if (chunk > fs.len - off) {
            chunk = fs.len - off;
        }
        ssize_t w = send(fds[1], fs.data + off, chunk, MSG_NOSIGNAL);
        FUZZ_CHECK(w == (ssize_t)chunk);
        off += chunk;
        st = tls_session_handshake(s);
        FUZZ_CHECK(st != TLS_OK);
        _drain(fds[1]);
    }
    /* The client has said all it will. */
    shutdown(fds[1], SHUT_WR);
    for (int i = 0; i < 4 && st != TLS_FAILED && st != TLS_CLOSED; i++) {
        st = tls_session_handshake(s);
        _drain(fds[1]);
    }
    FUZZ_CHECK(st == TLS_FAILED || st == TLS_CLOSED);
    char why[256];
    bool tls_failed = tls_session_error(s, why, sizeof(why));
    FUZZ_CHECK(why[0] != '\0');
    FUZZ_CHECK(!tls_failed || st == TLS_FAILED);
    FUZZ_CHECK(!tls_session_established(s));
    tls_session_close_notify(s); /* a no-op before a handshake */
    tls_session_free(s);
    close(fds[0]);
    close(fds[1]);
    return 0;
}
