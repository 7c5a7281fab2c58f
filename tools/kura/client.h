/*
 * client: the one client connection of the kura command. Every command
 * that talks to kurad (ping, stats, bench, load, verify, stallwatch, the
 * lag probe) holds its connections as a struct client: a non-blocking
 * socket, plaintext or TLS (tls.h), with an output buffer that requests
 * are queued at the end of, and an input buffer that replies are read
 * into and that the caller decodes (client_reply.h) and consumes from the
 * front.
 *
 * Two ways to drive it:
 *   - pipelined, from an event loop (bench, load, verify): the caller
 *     polls the socket, for writing only while client_pending() says
 *     output waits, and calls client_flush() and client_fill(). Over TLS
 *     the session may hold replies already read from the socket: the
 *     caller reads again, without polling, while client_buffered() says
 *     so. client_start() and client_handshake() open a connection without
 *     blocking, for a loop that opens thousands;
 *   - one request at a time (ping, stats, stallwatch, the lag probe):
 *     client_open() connects, client_send_wait() and client_next() wait
 *     for the connection's deadline (client_set_timeout()) at the most.
 *
 * Not thread-safe: one thread per connection. Buffers grow as needed (the
 * input up to the `in_max` given to client_init()); running out of memory
 * ends the process with a message, as the command does everywhere.
 */
#ifndef KURA_TOOLS_CLIENT_H
#define KURA_TOOLS_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "client_reply.h"
#include "tls.h"

struct client {
    int fd;            /* -1 when closed */
    struct tls_session *tls; /* NULL: plaintext */
    char *out;
    size_t out_len;    /* bytes queued ... */
    size_t out_off;    /* ... of which sent */
    size_t out_cap;
    char *in;          /* allocated by the first read */
    size_t in_len;     /* bytes read and not consumed */
    size_t in_cap;
    size_t in_initial; /* the input buffer starts at this ... */
    size_t in_max;     /* ... and never grows past this */
    uint64_t deadline_ms; /* waiting calls give up then (util_mono_ms()) */
};

/* What a non-blocking TLS handshake step came to. */
enum client_step {
    CLIENT_STEP_DONE,       /* connected (and, over TLS, shaken hands) */
    CLIENT_STEP_WANT_READ,  /* poll for reading, then step again */
    CLIENT_STEP_WANT_WRITE, /* poll for writing, then step again */
    CLIENT_STEP_FAILED,     /* client_error() says why */
};

/*
 * Makes `c` an unconnected client (fd -1, no buffers yet) whose input
 * buffer starts at `in_initial` bytes and may grow to `in_max`.
 */
void client_init(struct client *c, size_t in_initial, size_t in_max);

/*
 * Connects to `host`:`port` (a name or address; a port number or
 * service), trying each address, within `timeout_ms`, and with `tls`
 * completes a TLS handshake that checks the server's certificate names
 * `host`. Sets the deadline `timeout_ms` from now. The socket is
 * non-blocking, with TCP_NODELAY. Returns 0; -1 if it could not connect,
 * or -2 if the TLS handshake failed, with a one-line reason in `err`
 * (`c->fd` is then -1).
 */
int client_open(struct client *c, const char *host, const char *port,
                int timeout_ms, struct tls_ctx *tls, char *err,
                size_t errlen);

/*
 * Starts connecting to `addr` without waiting, over TLS with `tls`
 * (whose certificate must name `host`). Poll the socket for writing, then
 * call client_handshake(). Returns 0, or -1 (errno set, `c->fd` -1).
 */
int client_start(struct client *c, const struct sockaddr *addr,
                 socklen_t addrlen, struct tls_ctx *tls, const char *host);

/* True once the connection is ready for requests (plaintext: at once). */
bool client_established(const struct client *c);

/*
 * Advances the TLS handshake of a connection client_start() began
 * (plaintext: DONE at once). Never blocks.
 */
enum client_step client_handshake(struct client *c);

/* True if the TLS handshake resumed an earlier session. */
bool client_resumed(const struct client *c);

/* Writes why the TLS session failed into `out` (`cap` bytes). */
void client_error(const struct client *c, char *out, size_t cap);

/*
 * Closes the connection (a TLS close_notify first) and empties both
 * buffers, keeping them for the next connection. Safe when closed.
 */
void client_disconnect(struct client *c);

/* client_disconnect(), then frees the buffers. Safe twice. */
void client_close(struct client *c);

/*
 * Room for `n` more bytes at the end of the output: returns where to
 * write them; client_commit() then queues what was written.
 */
char *client_reserve(struct client *c, size_t n);

/* Queues `n` bytes written where client_reserve() pointed. */
void client_commit(struct client *c, size_t n);

/* Copies `len` bytes of `data` to the end of the output. */
void client_append(struct client *c, const void *data, size_t len);

/* Output queued and not yet sent, in bytes. */
size_t client_pending(const struct client *c);

/*
 * Sends queued output until it is all sent or the socket is full.
 * Returns 1 when nothing is left (the output is then empty), 0 when the
 * socket is full (poll for writing), -1 on an error (errno set).
 */
int client_flush(struct client *c);

/*
 * Reads what the socket holds onto the end of the input, first making
 * the buffer (`in_initial` bytes) or doubling it while full, up to
 * `in_max`. Returns the bytes read (> 0), 0 if there was nothing to read
 * now, or -1 if the connection is closed (errno 0), failed (errno set),
 * or the input is full at `in_max` (errno ENOBUFS).
 */
ssize_t client_fill(struct client *c);

/*
 * Doubles the input buffer (up to `in_max`) although it is not full: a
 * caller whose reads keep filling it saves system calls.
 */
void client_grow(struct client *c);

/* True if a TLS session holds input the socket will not signal again. */
bool client_buffered(const struct client *c);

/* Drops the first `n` bytes of the input (what the caller decoded). */
void client_consume(struct client *c, size_t n);

/* Sets the deadline of the waiting calls `timeout_ms` from now. */
void client_set_timeout(struct client *c, int timeout_ms);

/*
 * Sends all queued output, waiting until the deadline at most. Returns
 * 0, or -1 (errno ETIMEDOUT at the deadline).
 */
int client_send_wait(struct client *c);

/*
 * Decodes the reply item at offset `off` of the input in protocol `p`
 * (client_reply_next(), data up to `value_max` bytes), reading more until
 * it is whole or the deadline passes. Returns LINE, VALUE, FRAME or BAD
 * with `*r` as client_reply_next() fills it (the caller consumes it);
 * MORE when no whole item came, with errno: ETIMEDOUT at the deadline,
 * 0 when the server closed, ENOBUFS when the item outgrew `in_max`, or
 * the error.
 */
enum client_reply_kind client_next(struct client *c, size_t off,
                                   enum client_proto p, size_t value_max,
                                   struct client_reply *r);

#endif
