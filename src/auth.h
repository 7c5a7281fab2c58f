/*
 * auth: client authentication, memcached's two ways, off by default.
 *
 * With -auth FILE, a client must authenticate before anything but
 * version, quit and (binary) noop:
 *   - binary protocol: SASL with the PLAIN mechanism (the only one
 *     offered), as libmemcached, pylibmc, PHP memcached, dalli and
 *     spymemcached do it;
 *   - text protocol: memcached 1.6's -Y token authentication, a "set"
 *     whose data is "<user> <password>".
 * FILE holds "user:password" lines, memcached's -Y format, so one file
 * serves both. It must be a regular file that only its owner can read
 * or write, or kurad refuses to start. Passwords are compared in
 * constant time. Replication peers prove themselves with their own key
 * (repl_auth.h), not with these.
 *
 * Thread-safety: a loaded table is read-only; any thread.
 */
#ifndef KURA_AUTH_H
#define KURA_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#define AUTH_FIELD_MAX 255

struct auth_user {
    char name[AUTH_FIELD_MAX + 1];
    char pass[AUTH_FIELD_MAX + 1];
    size_t nname;
    size_t npass;
};

struct auth {
    bool enabled;
    struct auth_user *users;
    size_t nusers;
};

/*
 * Loads `path` (empty: authentication off). Returns 0, or -1 with the
 * reason in `err`: an unreadable file, one others may read or write, a
 * line without "user:password", or no user at all. The caller frees the
 * table with auth_free().
 */
int auth_load(struct auth *a, const char *path, char *err, size_t errlen);

void auth_free(struct auth *a);

/* True if `user` and `pass` match a line of the file. */
bool auth_check(const struct auth *a, const char *user, size_t nuser,
                const char *pass, size_t npass);

/*
 * A SASL PLAIN message, "[authzid] NUL authcid NUL passwd" (RFC 4616):
 * true if its credentials are good and the authzid, if any, is the user.
 */
bool auth_plain(const struct auth *a, const char *msg, size_t len);

enum auth_result {
    AUTH_OK,
    AUTH_REFUSED,   /* well formed, wrong credentials */
    AUTH_MALFORMED, /* not "<user> <password>" */
};

/* memcached's text token, "<user> <password>" (a trailing newline is
 * allowed). */
enum auth_result auth_text(const struct auth *a, const char *msg,
                           size_t len);

#endif
