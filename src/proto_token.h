/*
 * proto_token: the words of a memcached text or meta command line, and
 * the numbers in them, read exactly as memcached 1.6 reads them.
 *
 * Both text parsers (proto_text.c, proto_meta.c) sit on this base. A line
 * is split at spaces, as memcached's tokenizer does (runs of spaces make
 * one separator; tabs and other bytes belong to the word). A number is
 * read the way memcached's safe_strto*() helpers read a word: glibc's
 * strtoull/strtol in base 10 on the word as a C string (leading white
 * space skipped, one sign, digits, stop at the first NUL), accepted if the
 * digits end the word or are followed by white space, refused on overflow
 * of the 64-bit type, and then cast to the field's width. Clients rely on
 * none of these edges; kura follows them so that no request is read one
 * way by memcached and another by kura (tools/difffuzz compares them).
 *
 * Pure functions; no state.
 */
#ifndef KURA_PROTO_TOKEN_H
#define KURA_PROTO_TOKEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A word of a command line; points into the caller's buffer. */
struct token {
    const char *s;
    size_t len;
};

/*
 * Splits `line` (`len` bytes, no line end) at spaces into at most `max`
 * tokens. If more text follows the last token, `*rest` points at it, else
 * NULL. Returns the number of tokens.
 */
size_t proto_tokenize(const char *line, size_t len, struct token *tok,
                      size_t max, const char **rest);

/*
 * memcached's safe_strtoull(): an unsigned 64-bit number. A '-' is
 * accepted only while the result, read as signed, is not negative ("-0",
 * "-18446744073709551615" is 1). Returns false if the word is not a
 * number by those rules; `*out` is then unchanged.
 */
bool proto_read_u64(const struct token *t, uint64_t *out);

/* memcached's safe_strtoul() on a 64-bit system: proto_read_u64(), then
 * the low 32 bits ("4294967296" reads as 0). */
bool proto_read_u32(const struct token *t, uint32_t *out);

/*
 * memcached's safe_strtol() on a 64-bit system: a signed 64-bit number,
 * then the low 32 bits as a signed value ("4294967297" reads as 1,
 * "2147483648" as -2147483648). The result is widened into `*out`.
 */
bool proto_read_i32(const struct token *t, int64_t *out);

/* memcached's safe_strtoll(): a signed 64-bit number. */
bool proto_read_i64(const struct token *t, int64_t *out);

/*
 * memcached's safe_strtod(): a number as strtod() reads it, to the end of
 * the word, in range. A word of 64 bytes or more is refused. Returns
 * false if the word is not such a number; `*out` is then unchanged.
 */
bool proto_read_double(const struct token *t, double *out);

#endif
