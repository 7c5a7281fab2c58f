/*
 * reply: composes memcached text protocol replies.
 *
 * The only place that knows the wire form of results and errors. Modules
 * below the protocol return status values; process.c picks a reply_code and
 * this module writes its bytes. Every function appends to a struct buf and
 * returns false only if the buffer could not grow (the caller then closes
 * the connection, as memcached does on out-of-memory).
 *
 * Pure formatting; no shared state; any thread.
 */
#ifndef KURA_REPLY_H
#define KURA_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "proto.h"

/* Version reported to clients: memcached compatibility level, then ours. */
#define REPLY_MEMCACHED_COMPAT "1.6.18"

enum reply_code {
    REPLY_STORED,
    REPLY_NOT_STORED,
    REPLY_EXISTS,
    REPLY_NOT_FOUND,
    REPLY_DELETED,
    REPLY_TOUCHED,
    REPLY_OK,
    REPLY_END,
    REPLY_RESET,
    REPLY_ERROR,
    REPLY_NON_NUMERIC,     /* CLIENT_ERROR cannot increment or decrement... */
    REPLY_SERVER_ERROR_IO, /* SERVER_ERROR a write could not be made durable */
    REPLY_SERVER_ERROR_READ, /* SERVER_ERROR the record could not be read */
    REPLY_SERVER_ERROR_READONLY,
    REPLY_SERVER_ERROR_OOM,
    REPLY_SERVER_ERROR_NOSPACE,
    REPLY_TOO_MANY_CONNECTIONS,
    REPLY_REPL_DENIED, /* REPL refused by -mask repl */
    REPLY_CODE_COUNT
};

/* Limit passed to buf_* when growing an output buffer. */
#define REPLY_BUF_LIMIT ((size_t)1 << 40)

/* Appends the line for `code` (with "\r\n"). */
bool reply_code(struct buf *out, enum reply_code code);

/* Appends the wire form of a parser error (proto.h). */
bool reply_proto_error(struct buf *out, enum proto_error err);

/*
 * Appends "VALUE <key> <flags> <bytes>[ <cas>]\r\n<data>\r\n".
 * `with_cas` selects the gets/gats form.
 */
bool reply_value(struct buf *out, const char *key, size_t nkey,
                 uint32_t flags, const void *data, size_t len, bool with_cas,
                 uint64_t cas);

/* Appends "CLIENT_ERROR <command> not allowed" (-mask/-unmask). */
bool reply_denied(struct buf *out, enum proto_cmd cmd);

/* Appends "<n>\r\n" (incr/decr result). */
bool reply_number(struct buf *out, uint64_t n);

/* Appends "VERSION <compat>-kura-<version>\r\n". */
bool reply_version(struct buf *out);

/* Appends "STAT <name> <value>\r\n" with a formatted value. */
bool reply_stat(struct buf *out, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Appends raw bytes. */
bool reply_raw(struct buf *out, const void *p, size_t n);

#endif
