/*
 * repl_auth: shared-secret authentication of replication peers.
 *
 * Replication hands a peer the whole update log, a snapshot of the whole
 * database on request, and on the standby side the right to change every
 * key. So both ends prove they hold the same secret (-rkey file) before
 * anything else passes, without sending it: each side contributes a
 * random nonce, and each answers with HMAC-SHA-256(secret, role, both
 * nonces), the role ("master" or "standby") keeping one side's answer
 * from being replayed as the other's. The master proves itself first, so
 * a standby never takes records from a server that does not know the
 * secret.
 *
 * Without a key, a master serves replication to loopback peers only (a
 * pair on one host, tests); a standby with a key refuses a master that
 * does not authenticate.
 *
 * This authenticates; it does not encrypt. Someone who can read or alter
 * traffic on the path between the peers can read or alter the stream:
 * run replication over a private network or a tunnel (README, Security).
 *
 * Thread-safety: a loaded struct repl_auth is read-only; any thread.
 */
#ifndef KURA_REPL_AUTH_H
#define KURA_REPL_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define REPL_AUTH_KEY_MIN 16
#define REPL_AUTH_KEY_MAX 4096
#define REPL_NONCE_LEN 16
#define REPL_NONCE_HEX (2 * REPL_NONCE_LEN)
#define REPL_PROOF_HEX 64 /* HMAC-SHA-256, hex */

enum repl_auth_role {
    REPL_AUTH_MASTER,
    REPL_AUTH_STANDBY,
};

struct repl_auth {
    bool enabled;
    uint8_t key[REPL_AUTH_KEY_MAX];
    size_t klen;
};

/*
 * Reads the secret from `path`: the file's bytes, trailing white space
 * removed, at least REPL_AUTH_KEY_MIN of them. The file must be a regular
 * file that only its owner can read or write (mode 0600 or 0400), like an
 * ssh key. Returns 0, or -1 with the reason in `err`. An empty `path`
 * leaves `a` disabled and returns 0.
 */
int repl_auth_load(struct repl_auth *a, const char *path, char *err,
                   size_t errlen);

/* Fills `out` with a fresh random nonce in hex, NUL-terminated. 0 or -1. */
int repl_auth_nonce(char out[REPL_NONCE_HEX + 1]);

/*
 * The proof `role` gives for the nonces (hex strings, as sent), in hex,
 * NUL-terminated.
 */
void repl_auth_proof(const struct repl_auth *a, enum repl_auth_role role,
                     const char *cnonce, const char *snonce,
                     char out[REPL_PROOF_HEX + 1]);

/* True if `proof` (hex, as received) is `role`'s proof for the nonces. */
bool repl_auth_verify(const struct repl_auth *a, enum repl_auth_role role,
                      const char *cnonce, const char *snonce,
                      const char *proof);

/* True if `s` is a well-formed nonce (REPL_NONCE_HEX lowercase hex). */
bool repl_auth_nonce_valid(const char *s, size_t len);

/* True if the peer of socket `fd` is on this host (loopback or unix). */
bool repl_auth_peer_is_local(int fd);

#endif
