/*
 * netio: blocking socket helpers for the replication threads.
 *
 * Workers never block; these are for the dedicated replication threads,
 * where simple blocking I/O with deadlines is the clearest design. Every
 * call has a deadline, so a silent peer cannot hang a thread forever.
 */
#ifndef KURA_NETIO_H
#define KURA_NETIO_H

#include <stddef.h>

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

#endif
