/*
 * proto_token: command-line words and memcached's reading of numbers (see
 * proto_token.h).
 */
#include "proto_token.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

size_t
proto_tokenize(const char *line, size_t len, struct token *tok, size_t max,
               const char **rest)
{
    size_t n = 0;
    size_t i = 0;

    *rest = NULL;
    while (i < len) {
        while (i < len && line[i] == ' ') {
            i++;
        }
        if (i == len) {
            break;
        }
        if (n == max) {
            *rest = line + i;
            break;
        }
        size_t start = i;
        while (i < len && line[i] != ' ') {
            i++;
        }
        tok[n].s = line + start;
        tok[n].len = i - start;
        n++;
    }
    return n;
}

/* isspace() in the C locale, which strto*() skip and stop at. */
static bool
_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' ||
           c == '\r';
}

/* What strtoull/strtoll see of a word: its magnitude and sign. */
struct scan {
    bool negative;
    bool overflow; /* the magnitude passed UINT64_MAX */
    uint64_t magnitude;
    size_t clen;   /* the word's length as a C string (to its first NUL) */
};

/* Scans like strto*(); false where memcached's helpers refuse the word
 * before looking at the value (no digits, or junk after them). */
static bool
_scan(const struct token *t, struct scan *sc)
{
    const char *s = t->s;
    const char *nul = memchr(s, '\0', t->len);
    size_t len = nul != NULL ? (size_t)(nul - s) : t->len;
    size_t i = 0;

    memset(sc, 0, sizeof(*sc));
    sc->clen = len;
    while (i < len && _space(s[i])) {
        i++;
    }
    if (i < len && (s[i] == '+' || s[i] == '-')) {
        sc->negative = s[i] == '-';
        i++;
    }
    size_t digits = i;
    while (i < len && s[i] >= '0' && s[i] <= '9') {
        unsigned d = (unsigned)(s[i] - '0');
        if (sc->magnitude > (UINT64_MAX - d) / 10) {
            sc->overflow = true;
        } else {
            sc->magnitude = sc->magnitude * 10 + d;
        }
        i++;
    }
    if (i == digits) {
        return false; /* no number: strto*() leave endptr at the start */
    }
    return i == len || _space(s[i]);
}

bool
proto_read_u64(const struct token *t, uint64_t *out)
{
    struct scan sc;

    if (!_scan(t, &sc) || sc.overflow) {
        return false; /* ERANGE */
    }
    uint64_t v = sc.negative ? (uint64_t)0 - sc.magnitude : sc.magnitude;
    if ((int64_t)v < 0 && memchr(t->s, '-', sc.clen) != NULL) {
        return false;
    }
    *out = v;
    return true;
}

bool
proto_read_u32(const struct token *t, uint32_t *out)
{
    uint64_t v;

    if (!proto_read_u64(t, &v)) {
        return false;
    }
    *out = (uint32_t)v;
    return true;
}

bool
proto_read_i64(const struct token *t, int64_t *out)
{
    struct scan sc;

    if (!_scan(t, &sc) || sc.overflow) {
        return false;
    }
    if (sc.negative ? sc.magnitude > (uint64_t)INT64_MAX + 1
                    : sc.magnitude > (uint64_t)INT64_MAX) {
        return false; /* ERANGE */
    }
    *out = sc.negative ? (int64_t)((uint64_t)0 - sc.magnitude)
                       : (int64_t)sc.magnitude;
    return true;
}

bool
proto_read_i32(const struct token *t, int64_t *out)
{
    int64_t v;

    if (!proto_read_i64(t, &v)) {
        return false;
    }
    *out = (int32_t)(uint32_t)(uint64_t)v;
    return true;
}

bool
proto_read_double(const struct token *t, double *out)
{
    char word[64];
    char *end;

    if (t->len == 0 || t->len >= sizeof(word)) {
        return false;
    }
    memcpy(word, t->s, t->len);
    word[t->len] = '\0';
    errno = 0;
    double v = strtod(word, &end);
    if (errno == ERANGE || end != word + t->len) {
        return false;
    }
    *out = v;
    return true;
}
