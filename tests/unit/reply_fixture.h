/*
 * reply_fixture: what the reply suites (check_reply.c, check_reply_bin.c,
 * check_reply_http.c) share: an output buffer compared byte for byte with
 * the reply expected, a failure message that shows both escaped, and an
 * output buffer already at REPLY_BUF_LIMIT, which no reply can grow.
 *
 * The expected bytes are literals: where the behaviour is memcached's,
 * they are what memcached 1.6.18 sent for the same request.
 */
#ifndef KURA_REPLY_FIXTURE_H
#define KURA_REPLY_FIXTURE_H

#include <check.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "reply.h"

/* Escapes `n` bytes into `out` (`cap` bytes), cut short if they don't fit. */
static inline const char *
reply_fixture_escape(const void *p, size_t n, char *out, size_t cap)
{
    const unsigned char *s = p;
    size_t k = 0;
    for (size_t i = 0; i < n && k + 5 < cap; i++) {
        if (s[i] == '\r') {
            k += (size_t)snprintf(out + k, cap - k, "\\r");
        } else if (s[i] == '\n') {
            k += (size_t)snprintf(out + k, cap - k, "\\n");
        } else if (s[i] < 0x20 || s[i] >= 0x7f || s[i] == '\\') {
            k += (size_t)snprintf(out + k, cap - k, "\\x%02x", s[i]);
        } else {
            out[k++] = (char)s[i];
        }
    }
    out[k] = '\0';
    return out;
}

/*
 * Fails the test unless `out` holds exactly the `n` bytes at `want`;
 * then empties `out` for the next reply.
 */
static inline void
reply_fixture_expect(struct buf *out, const void *want, size_t n, int line)
{
    if (buf_len(out) != n || (n > 0 && memcmp(buf_head(out), want, n) != 0)) {
        char got[2048];
        char exp[2048];
        ck_abort_msg("line %d: reply is \"%s\" (%zu bytes), not \"%s\" "
                     "(%zu bytes)", line,
                     reply_fixture_escape(buf_head(out), buf_len(out), got,
                                          sizeof(got)),
                     buf_len(out),
                     reply_fixture_escape(want, n, exp, sizeof(exp)), n);
    }
    buf_reset(out);
}

/* The reply in `out` is the string literal `lit`, byte for byte. */
#define EXPECT(out, lit) reply_fixture_expect((out), (lit), sizeof(lit) - 1, \
                                              __LINE__)
/* The reply in `out` is `n` bytes at `p`. */
#define EXPECT_BYTES(out, p, n) reply_fixture_expect((out), (p), (n), __LINE__)
/* Nothing was written. */
#define EXPECT_NOTHING(out) reply_fixture_expect((out), "", 0, __LINE__)

/*
 * A buffer whose storage is already REPLY_BUF_LIMIT bytes, all written:
 * buf_reserve() can neither move data nor grow, so every append fails
 * without touching `data` (a single byte, never written).
 */
static char reply_fixture_byte;

static inline struct buf
reply_fixture_full(void)
{
    struct buf b = {
        .data = &reply_fixture_byte,
        .cap = REPLY_BUF_LIMIT,
        .rpos = 0,
        .wpos = REPLY_BUF_LIMIT,
    };
    return b;
}

/* `b` is the full buffer as reply_fixture_full() made it: nothing added. */
#define EXPECT_FULL_UNTOUCHED(b)                                             \
    do {                                                                     \
        ck_assert_ptr_eq((b).data, &reply_fixture_byte);                     \
        ck_assert_uint_eq((b).cap, REPLY_BUF_LIMIT);                         \
        ck_assert_uint_eq((b).rpos, 0);                                      \
        ck_assert_uint_eq((b).wpos, REPLY_BUF_LIMIT);                        \
    } while (0)

#endif
