/*
 * client_reply: the one reply decoder of the kura command. It reads
 * memcached's replies as a client sees them, one item at a time from the
 * front of a buffer, in the three protocols a command speaks:
 *
 *   text    a line ("STORED", "END", an error) or a value block ("VALUE
 *           <key> <flags> <bytes> [<cas>]", the data and its "\r\n");
 *   meta    a line ("HD", "EN", "MN", an error) or a value block ("VA
 *           <bytes> [<flags>...]", the data and its "\r\n");
 *   binary  a frame: the 24-byte response header, extras, key and value.
 *
 * Pure and stateless: it owns no memory, keeps nothing between calls and
 * does no I/O, so every command feeds it whatever its connection
 * (client.h) has buffered. Items point into the buffer. What a reply
 * means to a command (a set's STORED, a get's END) is the command's.
 */
#ifndef KURA_TOOLS_CLIENT_REPLY_H
#define KURA_TOOLS_CLIENT_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The protocol a connection speaks. */
enum client_proto {
    CLIENT_PROTO_TEXT,
    CLIENT_PROTO_BINARY,
    CLIENT_PROTO_META,
};

enum client_reply_kind {
    CLIENT_REPLY_MORE,   /* the item is not all buffered yet */
    CLIENT_REPLY_LINE,   /* text, meta: a line other than a value's header */
    CLIENT_REPLY_VALUE,  /* text, meta: a whole value block */
    CLIENT_REPLY_FRAME,  /* binary: a whole response frame */
    CLIENT_REPLY_BAD,    /* framing lost: a value header without a usable
                            length, data not followed by "\r\n", a frame
                            without the response magic or longer than
                            allowed; nothing after it can be read */
};

/* Binary response frames start with this magic byte. */
#define CLIENT_REPLY_BIN_MAGIC 0x81
/* The size of a binary frame's header. */
#define CLIENT_REPLY_BIN_HEADER 24

struct client_reply {
    size_t len;        /* bytes of the whole item, line end included */
    const char *line;  /* text, meta: the line (the header of a value) */
    size_t line_len;   /* ... without its "\r\n" or "\n" */
    const char *key;   /* text VALUE, binary: the key (meta: NULL) ... */
    size_t klen;
    const char *data;  /* ... and the data, without its "\r\n" */
    size_t dlen;
    unsigned opcode;   /* binary: the frame's opcode ... */
    unsigned status;   /* ... and status */
};

/*
 * Reads the item at the front of buf[0..len) in protocol `p`. A text
 * VALUE header must have a key, decimal flags and length, and at most a
 * decimal cas after them; a meta VA header a decimal length first. Data
 * (a binary frame's body) longer than `value_max` bytes is BAD. On LINE,
 * VALUE and FRAME fills `*out`; on MORE and BAD leaves it untouched.
 */
enum client_reply_kind client_reply_next(enum client_proto p,
                                         const char *buf, size_t len,
                                         size_t value_max,
                                         struct client_reply *out);

/* True if the item is the line `text` (given without its "\r\n"). */
bool client_reply_is(const struct client_reply *r, const char *text);

/* True if the item is a line that starts with `prefix`. */
bool client_reply_starts(const struct client_reply *r, const char *prefix);

#endif
