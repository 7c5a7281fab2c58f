/*
 * Unit tests: the command-line tokenizer and the number readers
 * (proto_token.h). The readers are checked against the C library itself:
 * each word is also read with strtoull/strtoll on a NUL-terminated copy
 * and judged by the rules memcached's safe_strto*() helpers apply (the
 * word must end after the digits or at white space, ERANGE refuses, a '-'
 * is refused only where the unsigned result reads as negative), then cast
 * as memcached casts. Hand-picked words cover the edges; a seeded random
 * walk over words of digits, signs, spaces and junk covers the rest.
 */
#include <check.h>
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto_token.h"
#include "unit_main.h"

struct oracle {
    bool u64_ok;
    uint64_t u64;
    bool i64_ok;
    int64_t i64;
};

static struct oracle
_oracle(const char *word, size_t len)
{
    char buf[128];
    struct oracle o = {0};
    char *end;

    ck_assert_uint_lt(len, sizeof(buf));
    memcpy(buf, word, len);
    buf[len] = '\0';

    errno = 0;
    unsigned long long ull = strtoull(buf, &end, 10);
    if (errno != ERANGE && end != buf &&
        (*end == '\0' || isspace((unsigned char)*end))) {
        o.u64_ok = !((long long)ull < 0 && strchr(buf, '-') != NULL);
        o.u64 = ull;
    }
    errno = 0;
    long long ll = strtoll(buf, &end, 10);
    if (errno != ERANGE && end != buf &&
        (*end == '\0' || isspace((unsigned char)*end))) {
        o.i64_ok = true;
        o.i64 = ll;
    }
    return o;
}

static void
_check_word(const char *word, size_t len)
{
    struct token t = {word, len};
    struct oracle o = _oracle(word, len);
    uint64_t u64 = 7;
    uint32_t u32 = 7;
    int64_t i64 = 7;
    int64_t i32 = 7;

    ck_assert_msg(proto_read_u64(&t, &u64) == o.u64_ok, "u64 of '%.*s'",
                  (int)len, word);
    ck_assert_msg(proto_read_u32(&t, &u32) == o.u64_ok, "u32 of '%.*s'",
                  (int)len, word);
    if (o.u64_ok) {
        ck_assert_uint_eq(u64, o.u64);
        ck_assert_uint_eq(u32, (uint32_t)o.u64);
    }
    ck_assert_msg(proto_read_i64(&t, &i64) == o.i64_ok, "i64 of '%.*s'",
                  (int)len, word);
    ck_assert_msg(proto_read_i32(&t, &i32) == o.i64_ok, "i32 of '%.*s'",
                  (int)len, word);
    if (o.i64_ok) {
        ck_assert_int_eq(i64, o.i64);
        ck_assert_int_eq(i32, (int32_t)o.i64);
    }
}

START_TEST(test_edges_as_memcached_reads_them)
{
    static const char *const words[] = {
        "0", "7", "007", "+5", "-0", "-5", "-1", "+", "-", "", "abc",
        "1.5", "0x10", "12abc", "4294967295", "4294967296", "4294967297",
        "2147483647", "2147483648", "-2147483648", "-2147483649",
        "9223372036854775807", "9223372036854775808",
        "-9223372036854775808", "-9223372036854775809",
        "18446744073709551615", "18446744073709551616",
        "-18446744073709551615", "-18446744073709551616",
        "99999999999999999999", "\t5", "5\t", "5\tjunk", "\v\f\r7",
        "5\r", "--5", "+-5", "-+5", " 5", "0000000000000000000000000001",
    };
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        _check_word(words[i], strlen(words[i]));
    }
    /* A NUL ends the word for strto*(), as in memcached's C strings. */
    _check_word("5\0x", 3);
    _check_word("\0" "5", 2);
}
END_TEST

START_TEST(test_examples)
{
    struct token t;
    uint32_t u32;
    int64_t i32;
    uint64_t u64;

    t = (struct token){"4294967296", 10};
    ck_assert(proto_read_u32(&t, &u32));
    ck_assert_uint_eq(u32, 0);
    t = (struct token){"4294967297", 10};
    ck_assert(proto_read_i32(&t, &i32));
    ck_assert_int_eq(i32, 1);
    t = (struct token){"2147483648", 10};
    ck_assert(proto_read_i32(&t, &i32));
    ck_assert_int_eq(i32, INT32_MIN);
    t = (struct token){"-18446744073709551615", 21};
    ck_assert(proto_read_u64(&t, &u64));
    ck_assert_uint_eq(u64, 1);
    t = (struct token){"-1", 2};
    ck_assert(!proto_read_u64(&t, &u64));
    t = (struct token){"-0", 2};
    ck_assert(proto_read_u32(&t, &u32));
    ck_assert_uint_eq(u32, 0);
}
END_TEST

START_TEST(test_random_words)
{
    static const char alphabet[] = "0123456789000111999+- \t\rx.\0";
    unsigned seed = 28;
    char word[40];

    for (int n = 0; n < 200000; n++) {
        size_t len = (size_t)(rand_r(&seed) % 24);
        for (size_t i = 0; i < len; i++) {
            word[i] = alphabet[rand_r(&seed) % (sizeof(alphabet) - 1)];
        }
        _check_word(word, len);
    }
}
END_TEST

START_TEST(test_tokenize)
{
    struct token tok[4];
    const char *rest;
    const char *line = "  set  k\t1 0  5 noreply";
    size_t n = proto_tokenize(line, strlen(line), tok, 4, &rest);

    ck_assert_uint_eq(n, 4);
    ck_assert_mem_eq(tok[0].s, "set", 3);
    ck_assert_uint_eq(tok[1].len, 3); /* a tab belongs to the word */
    ck_assert_mem_eq(tok[1].s, "k\t1", 3);
    ck_assert_str_eq(rest, "noreply");
    n = proto_tokenize("   ", 3, tok, 4, &rest);
    ck_assert_uint_eq(n, 0);
    ck_assert_ptr_null(rest);
}
END_TEST

static Suite *
proto_token_suite(void)
{
    Suite *s = suite_create("proto_token");
    TCase *tc = tcase_create("numbers");
    tcase_add_test(tc, test_edges_as_memcached_reads_them);
    tcase_add_test(tc, test_examples);
    tcase_add_test(tc, test_random_words);
    tcase_add_test(tc, test_tokenize);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(proto_token_suite)
