/*
 * proto_bin: a pure, incremental parser for memcached's binary protocol.
 *
 * A request is a 24-byte header (magic 0x80, opcode, key length, extras
 * length, data type, reserved, total body length, opaque, cas), then the
 * extras, the key and the value. proto_bin_parse() returns a request only
 * once its whole frame is buffered, translated into the shared request
 * model (proto.h) with the binary details a reply echoes: opcode, opaque,
 * quietness, whether the key is wanted back.
 *
 * What it refuses, as memcached 1.6 does:
 *   - a frame whose first byte is not 0x80, or whose key and extras do not
 *     fit its body: PROTO_ECLOSE (framing is lost; nothing can be read
 *     after it);
 *   - extras or key lengths wrong for the opcode, a key over 250 bytes:
 *     PROTO_ECLOSE with PROTO_ERR_BIN_EINVAL (answered "Invalid
 *     arguments", then closed, as memcached does);
 *   - a value over the item size limit: PROTO_EREQ with
 *     PROTO_ERR_TOO_LARGE, the body swallowed, the connection kept;
 *   - an opcode it does not know: PROTO_EREQ with PROTO_ERR_BIN_UNKNOWN.
 * Memory is bounded: a body larger than the item limit plus a key and
 * extras is never buffered (it is swallowed or refused from its header).
 *
 * Thread-safety: a parser belongs to one connection; no shared state.
 */
#ifndef KURA_PROTO_BIN_H
#define KURA_PROTO_BIN_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

#define PROTO_BIN_HEADER 24
#define PROTO_BIN_REQUEST 0x80
#define PROTO_BIN_RESPONSE 0x81

/* Opcodes (memcached's protocol_binary.h names, without the prefix). */
enum proto_bin_opcode {
    PROTO_BIN_GET = 0x00,
    PROTO_BIN_SET = 0x01,
    PROTO_BIN_ADD = 0x02,
    PROTO_BIN_REPLACE = 0x03,
    PROTO_BIN_DELETE = 0x04,
    PROTO_BIN_INCREMENT = 0x05,
    PROTO_BIN_DECREMENT = 0x06,
    PROTO_BIN_QUIT = 0x07,
    PROTO_BIN_FLUSH = 0x08,
    PROTO_BIN_GETQ = 0x09,
    PROTO_BIN_NOOP = 0x0a,
    PROTO_BIN_VERSION = 0x0b,
    PROTO_BIN_GETK = 0x0c,
    PROTO_BIN_GETKQ = 0x0d,
    PROTO_BIN_APPEND = 0x0e,
    PROTO_BIN_PREPEND = 0x0f,
    PROTO_BIN_STAT = 0x10,
    PROTO_BIN_SETQ = 0x11,
    PROTO_BIN_ADDQ = 0x12,
    PROTO_BIN_REPLACEQ = 0x13,
    PROTO_BIN_DELETEQ = 0x14,
    PROTO_BIN_INCREMENTQ = 0x15,
    PROTO_BIN_DECREMENTQ = 0x16,
    PROTO_BIN_QUITQ = 0x17,
    PROTO_BIN_FLUSHQ = 0x18,
    PROTO_BIN_APPENDQ = 0x19,
    PROTO_BIN_PREPENDQ = 0x1a,
    PROTO_BIN_VERBOSITY = 0x1b,
    PROTO_BIN_TOUCH = 0x1c,
    PROTO_BIN_GAT = 0x1d,
    PROTO_BIN_GATQ = 0x1e,
    PROTO_BIN_SASL_LIST_MECHS = 0x20,
    PROTO_BIN_SASL_AUTH = 0x21,
    PROTO_BIN_SASL_STEP = 0x22,
    PROTO_BIN_GATK = 0x23,
    PROTO_BIN_GATKQ = 0x24,
};

/* Response statuses. */
enum proto_bin_status {
    PROTO_BIN_SUCCESS = 0x00,
    PROTO_BIN_KEY_ENOENT = 0x01,
    PROTO_BIN_KEY_EEXISTS = 0x02,
    PROTO_BIN_E2BIG = 0x03,
    PROTO_BIN_EINVAL = 0x04,
    PROTO_BIN_NOT_STORED = 0x05,
    PROTO_BIN_DELTA_BADVAL = 0x06,
    PROTO_BIN_AUTH_ERROR = 0x20,
    PROTO_BIN_AUTH_CONTINUE = 0x21,
    PROTO_BIN_UNKNOWN_COMMAND = 0x81,
    PROTO_BIN_ENOMEM = 0x82,
    PROTO_BIN_NOT_SUPPORTED = 0x83,
    PROTO_BIN_EINTERNAL = 0x84,
};

/*
 * Parses at most one request from `buf` (`len` unread bytes), like
 * proto_parse() (proto.h): the same statuses, the same `*consumed` and
 * `p->need` contract, the same parser struct. On PROTO_EREQ and
 * PROTO_ECLOSE, `req` holds the opcode and opaque the error reply echoes
 * (req->kind is PROTO_KIND_BINARY) and `p->error` says what is wrong.
 */
enum proto_status proto_bin_parse(struct proto_parser *p, const char *buf,
                                  size_t len, size_t *consumed,
                                  struct proto_request *req);

#endif
