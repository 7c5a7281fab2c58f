/*
 * auth: password file and credential checks (see auth.h).
 */
#include "auth.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A password file larger than this is surely not one. */
#define AUTH_FILE_MAX ((size_t)1 << 20)

static int
_add(struct auth *a, const char *line, size_t len, size_t lineno, char *err,
     size_t errlen)
{
    const char *colon = memchr(line, ':', len);
    size_t nname = colon != NULL ? (size_t)(colon - line) : 0;
    size_t npass = colon != NULL ? len - nname - 1 : 0;
    if (colon == NULL || nname == 0 || npass == 0 ||
        nname > AUTH_FIELD_MAX || npass > AUTH_FIELD_MAX) {
        snprintf(err, errlen, "line %zu is not user:password", lineno);
        return -1;
    }
    struct auth_user *u = realloc(a->users, (a->nusers + 1) * sizeof(*u));
    if (u == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    a->users = u;
    u = &a->users[a->nusers++];
    memset(u, 0, sizeof(*u));
    memcpy(u->name, line, nname);
    memcpy(u->pass, colon + 1, npass);
    u->nname = nname;
    u->npass = npass;
    return 0;
}

static int
_parse(struct auth *a, const char *text, size_t len, char *err,
       size_t errlen)
{
    size_t lineno = 0;
    size_t i = 0;
    while (i < len) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t end = nl != NULL ? (size_t)(nl - text) : len;
        size_t n = end - i;
        lineno++;
        if (n > 0 && text[i + n - 1] == '\r') {
            n--;
        }
        if (n > 0 && text[i] != '#' && _add(a, text + i, n, lineno, err,
                                            errlen) != 0) {
            return -1;
        }
        i = end + 1;
    }
    if (a->nusers == 0) {
        snprintf(err, errlen, "no user in it");
        return -1;
    }
    return 0;
}

int
auth_load(struct auth *a, const char *path, char *err, size_t errlen)
{
    char why[128];
    memset(a, 0, sizeof(*a));
    if (path == NULL || path[0] == '\0') {
        return 0;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, errlen, "-auth %s: %s", path, strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    if (!S_ISREG(st.st_mode) || (st.st_mode & 077) != 0) {
        snprintf(err, errlen, "-auth %s: others can read or write it; it "
                 "must be a regular file of mode 0600 or 0400", path);
        close(fd);
        return -1;
    }
    if ((size_t)st.st_size > AUTH_FILE_MAX) {
        snprintf(err, errlen, "-auth %s: too large for a password file",
                 path);
        close(fd);
        return -1;
    }
    char *text = malloc((size_t)st.st_size + 1);
    ssize_t got = text != NULL ? read(fd, text, (size_t)st.st_size) : -1;
    close(fd);
    if (got != st.st_size) {
        snprintf(err, errlen, "-auth %s: cannot read it", path);
        free(text);
        return -1;
    }
    int rc = _parse(a, text, (size_t)got, why, sizeof(why));
    memset(text, 0, (size_t)got);
    free(text);
    if (rc != 0) {
        snprintf(err, errlen, "-auth %s: %s", path, why);
        auth_free(a);
        return -1;
    }
    a->enabled = true;
    return 0;
}

void
auth_free(struct auth *a)
{
    if (a->users != NULL) {
        memset(a->users, 0, a->nusers * sizeof(*a->users));
    }
    free(a->users);
    memset(a, 0, sizeof(*a));
}

/* Compares without leaking, through timing, where they differ. */
static bool
_same(const char *a, size_t na, const char *b, size_t nb)
{
    unsigned char diff = na != nb;
    size_t n = na < nb ? na : nb;
    for (size_t i = 0; i < n; i++) {
        diff |= (unsigned char)(a[i] ^ b[i]);
    }
    return diff == 0;
}

bool
auth_check(const struct auth *a, const char *user, size_t nuser,
           const char *pass, size_t npass)
{
    bool ok = false;
    for (size_t i = 0; i < a->nusers; i++) {
        const struct auth_user *u = &a->users[i];
        /* Both compared, always: no short circuit to time. */
        int name_ok = _same(u->name, u->nname, user, nuser);
        int pass_ok = _same(u->pass, u->npass, pass, npass);
        ok |= (name_ok & pass_ok) != 0;
    }
    return ok;
}

bool
auth_plain(const struct auth *a, const char *msg, size_t len)
{
    const char *nul = memchr(msg, '\0', len);
    if (nul == NULL) {
        return false;
    }
    const char *user = nul + 1;
    size_t rest = len - (size_t)(user - msg);
    const char *nul2 = memchr(user, '\0', rest);
    if (nul2 == NULL) {
        return false;
    }
    size_t nuser = (size_t)(nul2 - user);
    const char *pass = nul2 + 1;
    size_t npass = len - (size_t)(pass - msg);
    size_t nauthz = (size_t)(nul - msg);
    if (nauthz > 0 && (nauthz != nuser || memcmp(msg, user, nuser) != 0)) {
        return false; /* no one may act as someone else */
    }
    return auth_check(a, user, nuser, pass, npass);
}

enum auth_result
auth_text(const struct auth *a, const char *msg, size_t len)
{
    while (len > 0 && (msg[len - 1] == '\n' || msg[len - 1] == '\r')) {
        len--;
    }
    const char *sp = memchr(msg, ' ', len);
    if (sp == NULL) {
        return AUTH_MALFORMED;
    }
    size_t nuser = (size_t)(sp - msg);
    const char *pass = sp;
    while (pass < msg + len && *pass == ' ') {
        pass++; /* memcached splits on runs of spaces */
    }
    size_t npass = (size_t)(msg + len - pass);
    return auth_check(a, msg, nuser, pass, npass) ? AUTH_OK : AUTH_REFUSED;
}
