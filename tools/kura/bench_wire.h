/*
 * bench_wire: the requests `kura bench` sends and the replies it expects,
 * in memcached's three protocols (text, binary, meta).
 *
 * Encoders append to a buffer the caller has sized (see the bounds
 * below) and return the bytes written. bench_wire_reply() reads one
 * complete reply from the front of a buffer through the shared decoder
 * (client_reply.h) and says whether it is the one expected, or that more
 * bytes are needed. It owns no memory and keeps no state between calls:
 * bench.c keeps the requests in flight and says which kind it expects
 * next.
 */
#ifndef KURA_BENCH_WIRE_H
#define KURA_BENCH_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client_reply.h"

/* What one request in flight is. */
enum bench_kind {
    BENCH_KIND_SET,
    BENCH_KIND_GET,
    BENCH_KIND_MGET,       /* several keys, one reply that ends in a marker */
};

enum bench_wire_status {
    BENCH_WIRE_MORE,       /* the reply is not all buffered yet */
    BENCH_WIRE_OK,         /* a whole, expected reply */
    BENCH_WIRE_BAD,        /* a whole reply, but not the one expected */
    BENCH_WIRE_LOST,       /* framing lost: nothing after it can be read */
};

/* Bytes an encoder may write beyond the key and value it is given. */
#define BENCH_WIRE_OVERHEAD 64

/* Parses "text", "binary" or "meta". Returns false for anything else. */
bool bench_wire_proto_parse(const char *s, enum client_proto *out);

/* The name bench_wire_proto_parse() takes for `p`. */
const char *bench_wire_proto_name(enum client_proto p);

/*
 * Writes the head of a set of `key` with a value of `vlen` bytes; the
 * caller writes the value right after it, then bench_wire_set_tail().
 * text: "set <key> 0 0 <vlen>\r\n"; meta: "ms <key> <vlen>\r\n"; binary:
 * the 24-byte header of opcode 0x01, 8 bytes of extras (flags and exptime,
 * zero) and the key.
 */
size_t bench_wire_set_head(enum client_proto p, char *out, const char *key,
                           size_t klen, size_t vlen);

/* Writes what follows a set's value: "\r\n", or nothing in binary. */
size_t bench_wire_set_tail(enum client_proto p, char *out);

/* Writes a get of one key: "get <key>", "mg <key> v", or opcode 0x00. */
size_t bench_wire_get(enum client_proto p, char *out, const char *key,
                      size_t klen);

/*
 * A multi-get is mget_begin(), one mget_key() per key, then mget_end():
 * text "get k1 ... kN\r\n"; binary N getkq frames (0x0d) and a noop (0x0a);
 * meta N "mg <key> v q k" lines and "mn". Misses produce no reply in the
 * quiet forms; the reply is complete at "END", the noop's answer or "MN".
 */
size_t bench_wire_mget_begin(enum client_proto p, char *out);
size_t bench_wire_mget_key(enum client_proto p, char *out, const char *key,
                           size_t klen);
size_t bench_wire_mget_end(enum client_proto p, char *out);

/*
 * Writes the request that ends a connection: "quit" in text and meta,
 * quitq (0x17, answered by the close alone) in binary.
 */
size_t bench_wire_quit(enum client_proto p, char *out);

/*
 * Reads the reply to a request of `kind` from buf[0..len). On OK and BAD
 * sets *used to the reply's length (BAD: what to skip before the next
 * reply) and *hits to the values it carried (a set: 0). On BAD and LOST
 * writes a one-line description to err (errlen bytes, NUL-terminated).
 * MORE leaves everything untouched.
 */
enum bench_wire_status bench_wire_reply(enum client_proto p,
                                        enum bench_kind kind, const char *buf,
                                        size_t len, size_t *used,
                                        uint32_t *hits, char *err,
                                        size_t errlen);

#endif
