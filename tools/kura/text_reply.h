/*
 * text_reply: reads memcached text-protocol replies as a client sees
 * them, one item at a time from the front of a buffer: a line ("STORED",
 * "END", an error) or a value block ("VALUE <key> <flags> <bytes>
 * [<cas>]", the data and its "\r\n").
 *
 * Pure and stateless: it owns no memory, keeps nothing between calls and
 * does no I/O, so `kura load` and `kura verify` feed it whatever their
 * connections (pipeconn.h) have buffered. Items point into the buffer.
 */
#ifndef KURA_TOOLS_TEXT_REPLY_H
#define KURA_TOOLS_TEXT_REPLY_H

#include <stdbool.h>
#include <stddef.h>

enum text_reply_kind {
    TEXT_REPLY_MORE,   /* the item is not all buffered yet */
    TEXT_REPLY_LINE,   /* a line other than a VALUE header */
    TEXT_REPLY_VALUE,  /* a whole value block */
    TEXT_REPLY_BAD,    /* framing lost: a VALUE header without a usable
                          length, or data not followed by "\r\n" */
};

struct text_reply {
    size_t len;        /* bytes of the whole item, line end included */
    const char *line;  /* the line (the header of a value) ... */
    size_t line_len;   /* ... without its "\r\n" or "\n" */
    const char *key;   /* VALUE: the key ... */
    size_t klen;
    const char *data;  /* ... and the data, without its "\r\n" */
    size_t dlen;
};

/*
 * Reads the item at the front of buf[0..len). A VALUE header must have
 * a key, decimal flags and length, and at most a decimal cas after them;
 * data longer than `value_max` bytes is BAD. On LINE and VALUE fills `*out`; on MORE and
 * BAD leaves it untouched.
 */
enum text_reply_kind text_reply_next(const char *buf, size_t len,
                                     size_t value_max, struct text_reply *out);

/* True if the item is the line `text` (given without its "\r\n"). */
bool text_reply_is(const struct text_reply *r, const char *text);

#endif
