/*
 * repl_auth: shared-secret authentication of replication peers (see
 * repl_auth.h).
 */
#include "repl_auth.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hmac.h"

static const char hexdigits[] = "0123456789abcdef";

static void
_hex(const uint8_t *p, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hexdigits[p[i] >> 4];
        out[2 * i + 1] = hexdigits[p[i] & 15];
    }
    out[2 * n] = '\0';
}

int
repl_auth_load(struct repl_auth *a, const char *path, char *err,
               size_t errlen)
{
    memset(a, 0, sizeof(*a));
    if (path == NULL || path[0] == '\0') {
        return 0;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, errlen, "cannot read replication key %s: %s", path,
                 strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    if (!S_ISREG(st.st_mode) || (st.st_mode & 077) != 0) {
        snprintf(err, errlen, "replication key %s must be a regular file "
                 "only its owner can read (chmod 600)", path);
        close(fd);
        return -1;
    }
    ssize_t n = read(fd, a->key, sizeof(a->key));
    int saved = errno;
    close(fd);
    if (n < 0) {
        snprintf(err, errlen, "cannot read replication key %s: %s", path,
                 strerror(saved));
        return -1;
    }
    size_t len = (size_t)n;
    while (len > 0 && (a->key[len - 1] == '\n' || a->key[len - 1] == '\r' ||
                       a->key[len - 1] == ' ' || a->key[len - 1] == '\t')) {
        len--;
    }
    if (len < REPL_AUTH_KEY_MIN || (size_t)n == sizeof(a->key)) {
        snprintf(err, errlen, "replication key %s must hold %d to %d bytes",
                 path, REPL_AUTH_KEY_MIN, REPL_AUTH_KEY_MAX - 1);
        memset(a, 0, sizeof(*a));
        return -1;
    }
    a->klen = len;
    a->enabled = true;
    return 0;
}

int
repl_auth_nonce(char out[REPL_NONCE_HEX + 1])
{
    uint8_t raw[REPL_NONCE_LEN];
    size_t got = 0;
    while (got < sizeof(raw)) {
        ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        got += (size_t)n;
    }
    _hex(raw, sizeof(raw), out);
    return 0;
}

static void
_mac(const struct repl_auth *a, enum repl_auth_role role, const char *cnonce,
     const char *snonce, uint8_t out[HMAC_SHA256_LEN])
{
    const char *label = role == REPL_AUTH_MASTER ? "kura-repl-master"
                                                 : "kura-repl-standby";
    const void *parts[3] = {label, cnonce, snonce};
    size_t lens[3] = {strlen(label) + 1, strlen(cnonce) + 1,
                      strlen(snonce) + 1}; /* the NULs separate them */
    hmac_sha256_mac(a->key, a->klen, parts, lens, 3, out);
}

void
repl_auth_proof(const struct repl_auth *a, enum repl_auth_role role,
                const char *cnonce, const char *snonce,
                char out[REPL_PROOF_HEX + 1])
{
    uint8_t mac[HMAC_SHA256_LEN];
    _mac(a, role, cnonce, snonce, mac);
    _hex(mac, sizeof(mac), out);
}

bool
repl_auth_verify(const struct repl_auth *a, enum repl_auth_role role,
                 const char *cnonce, const char *snonce, const char *proof)
{
    char expect[REPL_PROOF_HEX + 1];
    if (strlen(proof) != REPL_PROOF_HEX) {
        return false;
    }
    repl_auth_proof(a, role, cnonce, snonce, expect);
    return hmac_equal((const uint8_t *)expect, (const uint8_t *)proof,
                      REPL_PROOF_HEX) == 1;
}

bool
repl_auth_nonce_valid(const char *s, size_t len)
{
    if (len != REPL_NONCE_HEX) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        if (strchr(hexdigits, s[i]) == NULL || s[i] == '\0') {
            return false;
        }
    }
    return true;
}

bool
repl_auth_peer_is_local(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (getpeername(fd, (struct sockaddr *)&ss, &len) != 0) {
        return false;
    }
    if (ss.ss_family == AF_UNIX) {
        return true;
    }
    if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *sin = (const struct sockaddr_in *)&ss;
        return (ntohl(sin->sin_addr.s_addr) >> 24) == 127;
    }
    if (ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&ss;
        if (IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr)) {
            return true;
        }
        return IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr) &&
               s6->sin6_addr.s6_addr[12] == 127;
    }
    return false;
}
