/*
 * client_admin: the requests of the small admin commands (kura ping,
 * kura stats) over a client connection (client.h): memcached's text
 * authentication with the --auth user:password file, and a `stats`
 * request read line by line.
 *
 * Every call waits at most until the connection's deadline
 * (client_set_timeout()). Not thread-safe: one caller per connection.
 */
#ifndef KURA_TOOLS_CLIENT_ADMIN_H
#define KURA_TOOLS_CLIENT_ADMIN_H

#include <stddef.h>

#include "client.h"

/* What a login or a `stats` request came to. */
enum client_admin_status {
    CLIENT_ADMIN_OK = 0,
    CLIENT_ADMIN_NO_ANSWER,       /* connection lost or deadline passed */
    CLIENT_ADMIN_BAD_FILE,        /* the user:password file is unreadable */
    CLIENT_ADMIN_REFUSED,         /* the server refused the password */
    CLIENT_ADMIN_UNAUTHENTICATED, /* the server wants a login first */
    CLIENT_ADMIN_MASKED,          /* the command is refused (-mask) */
    CLIENT_ADMIN_ERROR,           /* any other error reply */
};

/*
 * Logs in with the first line of the file at `path` ("user:password",
 * kurad's -auth format) as memcached's text authentication wants it. The
 * password is wiped from the stack once queued, and from the output
 * buffer once sent.
 */
enum client_admin_status client_admin_login(struct client *c,
                                            const char *path);

/*
 * Sends "stats" and copies the whole reply into `reply` (`cap` bytes,
 * NUL-terminated): "STAT ..." lines up to END, or one error line, told
 * apart line by line, so no value can pass for a terminator. A reply
 * longer than `cap` or the connection's input limit is NO_ANSWER.
 */
enum client_admin_status client_admin_stats(struct client *c, char *reply,
                                            size_t cap);

/*
 * Sends "version" and reads its one-line answer. Returns OK if it was
 * "VERSION ...", NO_ANSWER if none came, ERROR otherwise.
 */
enum client_admin_status client_admin_version(struct client *c);

#endif
