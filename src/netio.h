/*
 * netio: blocking socket helpers for the replication threads.
 *
 * Workers never block; these are for the dedicated replication threads,
 * where simple blocking I/O with deadlines is the clearest design. Every
 * call has a deadline, so a silent peer cannot hang a thread forever.
 *
 * A stream (struct netio_stream) is a connection that is either plaintext
 * or TLS (tls.h), with the same calls for both, so the replication sender
 * and receiver, and the tools, speak either without knowing which. A TLS
 * stream's socket is non-blocking; its calls wait with poll() for what
 * the TLS layer asks (tls.h: a handshake, a read or a write never blocks
 * inside OpenSSL), within the same deadlines. A stream's TLS calls are
 * serialised by its lock, so one thread may read (repl_sender's
 * acknowledgement reader) while another writes (the sender).
 */
#ifndef KURA_NETIO_H
#define KURA_NETIO_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "tls.h"

/*
 * Connects to `host`:`port` within `timeout_ms`. Returns a blocking socket
 * with TCP_NODELAY, or -1 with errno set.
 */
int netio_connect(const char *host, int port, int timeout_ms);

/*
 * Sends all `len` bytes, waiting at most `timeout_ms` for the peer to make
 * room at any point. Returns 0, or -1 with errno set.
 */
int netio_send_all(int fd, const void *p, size_t len, int timeout_ms);

/*
 * Reads one line ending in "\r\n" into `buf` (`cap` bytes, NUL-terminated,
 * line end stripped), byte by byte so nothing after the line is consumed.
 * Returns the line length, or -1 on timeout, EOF, error or overflow.
 */
long netio_read_line(int fd, char *buf, size_t cap, int timeout_ms);

/* Waits up to `timeout_ms` for `fd` to be readable. 1, 0 on timeout, -1. */
int netio_wait_readable(int fd, int timeout_ms);

/* ------------------------------------------------------------- streams */

struct netio_stream {
    int fd;                  /* owned by whoever opened it, -1 when none */
    struct tls_session *tls; /* NULL: plaintext; owned by the stream */
    pthread_mutex_t lock;    /* serialises calls into `tls` */
    bool more;               /* TLS: the last read filled the caller's
                                buffer with the session holding more */
};

/*
 * Makes `s` a stream over the connected socket `fd`, in TLS when `tls` is
 * not NULL (the stream takes the session over, and makes `fd`
 * non-blocking). A plaintext stream's socket is left as it is.
 */
void netio_stream_init(struct netio_stream *s, int fd,
                       struct tls_session *tls);

/* Frees the TLS session (not the socket). Safe twice. */
void netio_stream_deinit(struct netio_stream *s);

/*
 * Connects to `host`:`port` within `timeout_ms` and, with `tls`, completes
 * a client handshake that checks the server's certificate names `host`
 * (tls_session_connect()). Returns 0, or -1 with a one-line reason in
 * `err` (the stream is then empty: fd -1). Close with netio_stream_close().
 */
int netio_stream_connect(struct netio_stream *s, const char *host, int port,
                         struct tls_ctx *tls, int timeout_ms, char *err,
                         size_t errlen);

/*
 * Completes the TLS handshake within `timeout_ms` (nothing to do in
 * plaintext). Returns 0, or -1 with the reason in `err`.
 */
int netio_stream_handshake(struct netio_stream *s, int timeout_ms, char *err,
                           size_t errlen);

/*
 * True if the stream's TLS session failed on a TLS error (an alert from
 * the peer, a certificate it refused); its reason in `out`.
 */
bool netio_stream_tls_error(struct netio_stream *s, char *out, size_t cap);

/* Sends close_notify (TLS), frees the session and closes the socket. */
void netio_stream_close(struct netio_stream *s);

/* As netio_send_all(), over the stream. */
int netio_stream_send_all(struct netio_stream *s, const void *p, size_t len,
                          int timeout_ms);

/* As netio_read_line(), over the stream. */
long netio_stream_read_line(struct netio_stream *s, char *buf, size_t cap,
                            int timeout_ms);

/*
 * Waits up to `timeout_ms` for the stream to have something to read:
 * 1 (TLS: at once if the last read left whole records for lack of room),
 * 0 on timeout, -1. In TLS, what arrived may turn out to be no
 * application data (a session ticket, half a record): netio_stream_recv()
 * then says EAGAIN.
 */
int netio_stream_wait_readable(struct netio_stream *s, int timeout_ms);

/*
 * Reads what is there without waiting: the bytes read (> 0), 0 at the end
 * of the stream, or -1 with errno (EAGAIN: nothing now; EIO: a TLS
 * error). Over TLS it takes every whole record the session holds, up to
 * `cap` bytes, so what it leaves is what the socket will announce (or
 * more than `cap`, which netio_stream_wait_readable() then reports).
 */
ssize_t netio_stream_recv(struct netio_stream *s, void *buf, size_t cap);

#endif
