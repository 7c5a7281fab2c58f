/*
 * adminconn: the one connection the small admin commands (kura ping, kura
 * stats) make to kurad: a text-protocol socket bound by one deadline, the
 * --auth user:password file and memcached's text authentication, and a
 * `stats` request read line by line.
 *
 * Every call waits at most until the deadline set by adminconn_open(); none
 * blocks past it, TLS handshake included. Not thread-safe: one caller per
 * connection.
 */
#ifndef KURA_TOOLS_ADMINCONN_H
#define KURA_TOOLS_ADMINCONN_H

#include <stddef.h>
#include <stdint.h>

#include "netio.h"
#include "tls.h"

struct adminconn {
    int fd;               /* -1 when not connected */
    uint64_t deadline_ms; /* on util_mono_ms()'s clock */
    struct netio_stream io; /* over fd: plaintext or TLS */
};

/* What a login or a `stats` request came to. */
enum adminconn_status {
    ADMINCONN_OK = 0,
    ADMINCONN_NO_ANSWER,       /* connection lost or deadline passed */
    ADMINCONN_BAD_FILE,        /* the user:password file is unreadable */
    ADMINCONN_REFUSED,         /* the server refused the password */
    ADMINCONN_UNAUTHENTICATED, /* the server wants a login first */
    ADMINCONN_MASKED,          /* the command is refused (-mask) */
    ADMINCONN_ERROR,           /* any other error reply */
};

/*
 * Connects to `host`:`port` (a name or address, a port number or service),
 * with `tls` through a TLS handshake that checks the server's certificate
 * names `host`, and sets the deadline `timeout_ms` from now for this and
 * every later call. Returns 0, or -1 with c->fd == -1.
 */
int adminconn_open(struct adminconn *c, const char *host, const char *port,
                   long timeout_ms, struct tls_ctx *tls);

/* Closes the socket (if open). */
void adminconn_close(struct adminconn *c);

/* Sends `n` bytes of `s`. Returns 0 or -1. */
int adminconn_send(struct adminconn *c, const char *s, size_t n);

/*
 * Reads until `out` (`cap` bytes, NUL-terminated) ends with one of the
 * `nends` terminators. Returns 0, or -1 on EOF, error, a full buffer or the
 * deadline.
 */
int adminconn_read_until(struct adminconn *c, char *out, size_t cap,
                         const char *const *ends, int nends);

/*
 * Logs in with the first line of the file at `path` ("user:password",
 * kurad's -auth format) as memcached's text authentication wants it.
 * `reply` (`cap` bytes) is scratch space. The password is wiped from the
 * stack once sent.
 */
enum adminconn_status adminconn_login(struct adminconn *c, const char *path,
                                      char *reply, size_t cap);

/*
 * Sends "stats" and reads the whole reply into `reply` (`cap` bytes,
 * NUL-terminated): "STAT ..." lines up to END, or one error line, told
 * apart line by line, so no value can pass for a terminator.
 */
enum adminconn_status adminconn_stats(struct adminconn *c, char *reply,
                                      size_t cap);

#endif
