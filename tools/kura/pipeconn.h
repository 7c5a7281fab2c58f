/*
 * pipeconn: a pipelined client connection, as `kura load` and `kura
 * verify` drive several from one thread. Requests are queued at the end
 * of an output buffer and sent as the socket takes them; replies are read
 * into an input buffer that the caller parses (client_reply.h) and consumes
 * from the front.
 *
 * The socket is non-blocking: the caller polls it, for writing only while
 * pipeconn_pending() says output waits. Over TLS (tls.h) the bytes pass
 * through the session, which may hold replies already read from the
 * socket: the caller reads again, without polling, while
 * pipeconn_buffered() says so. Not thread-safe: one thread per
 * connection. Buffers grow as needed; running out of memory ends the
 * process with a message, as the tools do everywhere.
 */
#ifndef KURA_TOOLS_PIPECONN_H
#define KURA_TOOLS_PIPECONN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "tls.h"

struct pipeconn {
    int fd;            /* -1 when closed */
    char *out;
    size_t out_len;    /* bytes queued ... */
    size_t out_off;    /* ... of which sent */
    size_t out_cap;
    char *in;
    size_t in_len;     /* bytes read and not consumed */
    size_t in_cap;
    size_t in_max;     /* the input buffer never grows past this */
    struct tls_session *tls; /* NULL: plaintext */
};

/*
 * Connects to `host`:`port` within `timeout_ms` (with `tls`, through a
 * TLS handshake that checks the server's certificate names `host`) and
 * makes the socket non-blocking. The input buffer starts at `in_initial`
 * bytes and may grow to `in_max`. Returns 0, or -1 with a reason in `err`
 * (`c->fd` is then -1 and pipeconn_close() is still safe).
 */
int pipeconn_open(struct pipeconn *c, const char *host, int port,
                  int timeout_ms, size_t in_initial, size_t in_max,
                  struct tls_ctx *tls, char *err, size_t errlen);

/* Closes the socket and frees the buffers. Safe on a zeroed struct with
 * fd -1, and twice. */
void pipeconn_close(struct pipeconn *c);

/*
 * Room for `n` more bytes at the end of the output: returns where to
 * write them; pipeconn_commit() then queues what was written.
 */
char *pipeconn_reserve(struct pipeconn *c, size_t n);

/* Queues `n` bytes written where pipeconn_reserve() pointed. */
void pipeconn_commit(struct pipeconn *c, size_t n);

/* Copies `len` bytes of `data` to the end of the output. */
void pipeconn_append(struct pipeconn *c, const void *data, size_t len);

/* Output queued and not yet sent, in bytes. */
size_t pipeconn_pending(const struct pipeconn *c);

/*
 * Sends queued output until it is all sent or the socket is full.
 * Returns 1 when nothing is left, 0 when the socket is full (poll for
 * writing), -1 on an error (errno set).
 */
int pipeconn_flush(struct pipeconn *c);

/*
 * Reads what the socket holds onto the end of the input, growing the
 * buffer up to `in_max` first if it is full. Returns the bytes read (> 0),
 * 0 if there was nothing to read now, or -1 if the connection is closed
 * (errno 0), failed (errno set), or the input is full at `in_max`
 * (errno ENOBUFS).
 */
ssize_t pipeconn_fill(struct pipeconn *c);

/* True if a TLS session holds input the socket will not signal again. */
bool pipeconn_buffered(const struct pipeconn *c);

/* Drops the first `n` bytes of the input (what the caller parsed). */
void pipeconn_consume(struct pipeconn *c, size_t n);

#endif
