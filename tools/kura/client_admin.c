/*
 * client_admin: login, stats and version for kura ping and kura stats
 * (see client_admin.h).
 */
#include "client_admin.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Reads "user:password" from the first line of `path` into `token` as
 * memcached's text authentication wants it ("user password"). */
static int
_auth_token(const char *path, char *token, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return -1;
    }
    char line[600];
    bool ok = fgets(line, sizeof(line), f) != NULL;
    fclose(f);
    char *colon = ok ? strchr(line, ':') : NULL;
    if (colon == NULL) {
        memset(line, 0, sizeof(line));
        return -1;
    }
    line[strcspn(line, "\r\n")] = '\0';
    *colon = ' ';
    int n = snprintf(token, cap, "%s", line);
    memset(line, 0, sizeof(line));
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

/* The first line of the input, decoded; false if none came. */
static bool
_line(struct client *c, struct client_reply *r)
{
    return client_next(c, 0, CLIENT_PROTO_TEXT, 0, r) == CLIENT_REPLY_LINE;
}

enum client_admin_status
client_admin_login(struct client *c, const char *path)
{
    char token[600];
    char req[700];

    if (_auth_token(path, token, sizeof(token)) != 0) {
        return CLIENT_ADMIN_BAD_FILE;
    }
    int n = snprintf(req, sizeof(req), "set kura 0 0 %zu\r\n%s\r\n",
                     strlen(token), token);
    memset(token, 0, sizeof(token));
    if (n <= 0 || (size_t)n >= sizeof(req)) {
        memset(req, 0, sizeof(req));
        return CLIENT_ADMIN_NO_ANSWER;
    }
    char *queued = client_reserve(c, (size_t)n);
    memcpy(queued, req, (size_t)n);
    client_commit(c, (size_t)n);
    memset(req, 0, sizeof(req));
    int rc = client_send_wait(c);
    memset(queued, 0, (size_t)n); /* sent or not, gone from memory */
    struct client_reply r;
    if (rc != 0 || !_line(c, &r)) {
        return CLIENT_ADMIN_NO_ANSWER;
    }
    bool stored = client_reply_is(&r, "STORED");
    client_consume(c, r.len);
    return stored ? CLIENT_ADMIN_OK : CLIENT_ADMIN_REFUSED;
}

/* What a line of a stats reply says. */
static enum client_admin_status
_stats_line(const struct client_reply *r, bool *done)
{
    *done = true;
    if (client_reply_is(r, "END")) {
        return CLIENT_ADMIN_OK;
    }
    if (client_reply_starts(r, "STAT ")) {
        *done = false;
        return CLIENT_ADMIN_OK;
    }
    if (client_reply_is(r, "CLIENT_ERROR unauthenticated")) {
        return CLIENT_ADMIN_UNAUTHENTICATED;
    }
    if (r->line_len >= 12 &&
        memcmp(r->line + r->line_len - 12, " not allowed", 12) == 0) {
        return CLIENT_ADMIN_MASKED;
    }
    return CLIENT_ADMIN_ERROR;
}

enum client_admin_status
client_admin_stats(struct client *c, char *reply, size_t cap)
{
    size_t off = 0; /* the reply's lines read so far */

    if (cap == 0) {
        return CLIENT_ADMIN_ERROR;
    }
    reply[0] = '\0';
    client_append(c, "stats\r\n", 7);
    if (client_send_wait(c) != 0) {
        return CLIENT_ADMIN_NO_ANSWER;
    }
    for (;;) {
        struct client_reply r;
        bool done;
        if (client_next(c, off, CLIENT_PROTO_TEXT, 0, &r) !=
            CLIENT_REPLY_LINE) {
            return CLIENT_ADMIN_NO_ANSWER;
        }
        enum client_admin_status st = _stats_line(&r, &done);
        off += r.len;
        if (done) {
            if (off >= cap) {
                return CLIENT_ADMIN_NO_ANSWER;
            }
            memcpy(reply, c->in, off);
            reply[off] = '\0';
            client_consume(c, off);
            return st;
        }
    }
}

enum client_admin_status
client_admin_version(struct client *c)
{
    struct client_reply r;

    client_append(c, "version\r\n", 9);
    if (client_send_wait(c) != 0 || !_line(c, &r)) {
        return CLIENT_ADMIN_NO_ANSWER;
    }
    bool ok = client_reply_starts(&r, "VERSION ");
    client_consume(c, r.len);
    return ok ? CLIENT_ADMIN_OK : CLIENT_ADMIN_ERROR;
}
