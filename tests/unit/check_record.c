/*
 * Unit tests: the record envelope (encoding, corruption detection) and the
 * replication ordering rule.
 */
#include <check.h>
#include <string.h>

#include "record.h"
#include "unit_main.h"

static void
_roundtrip(const struct record_meta *m, const char *value)
{
    uint8_t buf[RECORD_HEADER_MAX + 64];

    ck_assert_uint_le(strlen(value), 64);
    size_t h = record_encode(m, buf);
    size_t vlen = strlen(value);

    ck_assert_uint_le(h, RECORD_HEADER_MAX);
    memcpy(buf + h, value, vlen);
    struct record_meta out;
    const uint8_t *v;
    size_t n;
    ck_assert_int_eq(record_decode(buf, h + vlen, &out, &v, &n), RECORD_OK);
    ck_assert_int_eq(out.kind, m->kind);
    ck_assert_uint_eq(out.flags, m->flags);
    ck_assert_uint_eq(out.exptime, m->exptime);
    ck_assert_uint_eq(out.cas, m->cas);
    ck_assert_uint_eq(out.ts, m->ts);
    ck_assert_uint_eq(out.sid, m->sid);
    ck_assert(out.stale == m->stale);
    ck_assert(out.token == m->token);
    ck_assert(out.binkey == m->binkey);
    ck_assert_uint_eq(out.nctype, m->nctype);
    ck_assert(m->nctype == 0 || memcmp(out.ctype, m->ctype, m->nctype) == 0);
    ck_assert_uint_eq(n, vlen);
    ck_assert(memcmp(v, value, vlen) == 0);
}

START_TEST(test_roundtrip)
{
    struct record_meta m = {
        .kind = RECORD_VALUE, .flags = 0, .exptime = 0, .cas = 1, .ts = 1,
        .sid = 0};
    _roundtrip(&m, "");
    m = (struct record_meta){RECORD_VALUE, 0xffffffffu, 0xffffffffu,
                             UINT64_MAX, 1795314340587071ULL, 0xffffffffu,
                             true, true, true, NULL, 0};
    _roundtrip(&m, "1795314340");
    m = (struct record_meta){RECORD_TOMBSTONE, 0, 0, 42, 42, 10001,
                             false, false, false, NULL, 0};
    _roundtrip(&m, "");
    m = (struct record_meta){RECORD_VALUE, 2, 1795314400, 7, 9, 128,
                             false, false, false, NULL, 0};
    _roundtrip(&m, "a value with spaces\r\n");
    /* the meta protocol's states, each alone */
    m = (struct record_meta){RECORD_VALUE, 0, 0, 9, 9, 1, true, false, false, NULL, 0};
    _roundtrip(&m, "stale");
    m = (struct record_meta){RECORD_VALUE, 0, 0, 9, 9, 1, false, true, false, NULL, 0};
    _roundtrip(&m, "token");
    m = (struct record_meta){RECORD_VALUE, 0, 0, 9, 9, 1, false, false, true, NULL, 0};
    _roundtrip(&m, "binkey");
    /* an HTTP record's Content-Type, and the longest one kept */
    m = (struct record_meta){RECORD_VALUE, 0, 0, 9, 9, 1, false, false, false,
                             "application/json", 16};
    _roundtrip(&m, "{\"a\":1}");
    static const char longest[RECORD_CTYPE_MAX + 1] = {[0 ... RECORD_CTYPE_MAX - 1] = 'x'};
    m.ctype = longest;
    m.nctype = RECORD_CTYPE_MAX;
    _roundtrip(&m, "");
}
END_TEST

START_TEST(test_compact_for_small_records)
{
    /* A last-login record: flags 0, no expiry, cas == ts, small sid. */
    struct record_meta m = {
        .kind = RECORD_VALUE, .flags = 0, .exptime = 0, .cas = 1795314340587071ULL, .ts = 1795314340587071ULL,
        .sid = 10001};
    uint8_t buf[RECORD_HEADER_MAX];
    ck_assert_uint_eq(record_encode(&m, buf), 2 + 4 + 8 + 2);
}
END_TEST

START_TEST(test_corruption_detected)
{
    struct record_meta m = {
        .kind = RECORD_VALUE, .flags = 5, .exptime = 100, .cas = 3, .ts = 4,
        .sid = 300};
    uint8_t buf[RECORD_HEADER_MAX];
    size_t h = record_encode(&m, buf);
    struct record_meta out;
    const uint8_t *v;
    size_t n;

    /* Every truncation of the envelope is refused. */
    for (size_t len = 0; len < h; len++) {
        ck_assert_int_eq(record_decode(buf, len, &out, &v, &n),
                         RECORD_ECORRUPT);
    }
    uint8_t bad[RECORD_HEADER_MAX];
    memcpy(bad, buf, h);
    bad[0] = 0x31; /* version 3 */
    ck_assert_int_eq(record_decode(bad, h, &out, &v, &n), RECORD_ECORRUPT);
    memcpy(bad, buf, h);
    bad[0] = 0x13; /* unknown kind */
    ck_assert_int_eq(record_decode(bad, h, &out, &v, &n), RECORD_ECORRUPT);
    memcpy(bad, buf, h);
    bad[1] = 0x80; /* unknown presence bit */
    ck_assert_int_eq(record_decode(bad, h, &out, &v, &n), RECORD_ECORRUPT);
}
END_TEST

/* D3 (store.h): a stored record is sealed, and any change to it, to its
 * key or to the salt is caught; version-1 records still decode. */
START_TEST(test_seal)
{
    struct record_meta m = {
        .kind = RECORD_VALUE, .flags = 7, .exptime = 0, .cas = 99, .ts = 98,
        .sid = 3};
    uint8_t buf[RECORD_HEADER_MAX + 16];
    size_t h = record_encode(&m, buf);
    memcpy(buf + h, "1795314340", 10);
    size_t len = h + 10;

    ck_assert_int_eq(record_verify(buf, len, "u:1", 3, 0x1234),
                     RECORD_ECORRUPT); /* not sealed yet */
    record_seal(buf, len, "u:1", 3, 0x1234);
    ck_assert_int_eq(record_verify(buf, len, "u:1", 3, 0x1234), RECORD_OK);
    ck_assert_int_eq(record_verify(buf, len, "u:2", 3, 0x1234),
                     RECORD_ECORRUPT);
    ck_assert_int_eq(record_verify(buf, len, "u:1", 3, 0x1235),
                     RECORD_ECORRUPT);
    for (size_t i = 0; i < len; i++) {
        for (int bit = 0; bit < 8; bit++) {
            buf[i] ^= (uint8_t)(1u << bit);
            ck_assert_int_eq(record_verify(buf, len, "u:1", 3, 0x1234),
                             RECORD_ECORRUPT);
            buf[i] ^= (uint8_t)(1u << bit);
        }
    }
    /* A version-1 record: no seal field; decodes, cannot be verified. */
    uint8_t v1[] = {0x11, 0x00, 1, 0, 0, 0, 0, 0, 0, 0, 5, 'x'};
    struct record_meta out;
    const uint8_t *v;
    size_t n;
    ck_assert_int_eq(record_decode(v1, sizeof(v1), &out, &v, &n), RECORD_OK);
    ck_assert_uint_eq(out.ts, 1);
    ck_assert_uint_eq(out.sid, 5);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(record_verify(v1, sizeof(v1), "k", 1, 0),
                     RECORD_UNSEALED);
}
END_TEST

START_TEST(test_newer_rule)
{
    struct record_meta a = {
        .kind = RECORD_VALUE, .flags = 0, .exptime = 0, .cas = 0, .ts = 100,
        .sid = 1};
    struct record_meta b = {
        .kind = RECORD_VALUE, .flags = 0, .exptime = 0, .cas = 0, .ts = 100,
        .sid = 2};
    struct record_meta c = {
        .kind = RECORD_TOMBSTONE, .flags = 0, .exptime = 0, .cas = 0, .ts = 101,
        .sid = 1};

    /* Higher (ts, sid) wins; the rule is a total order, so both servers
     * pick the same winner whatever order changes arrive in. */
    ck_assert(record_newer(&b, &a));
    ck_assert(!record_newer(&a, &b));
    ck_assert(record_newer(&c, &b));
    ck_assert(!record_newer(&a, &a));
}
END_TEST

START_TEST(test_tombstone_of)
{
    struct record_meta m = {.kind = RECORD_VALUE, .flags = 7, .exptime = 9,
                            .ts = 1234, .sid = 3, .cas = 55, .stale = true,
                            .token = true, .binkey = true, .ctype = "a/b",
                            .nctype = 3};
    struct record_meta t;
    record_tombstone_of(&m, 99, &t);
    ck_assert_int_eq(t.kind, RECORD_TOMBSTONE);
    ck_assert_uint_eq(t.ts, 1234);
    ck_assert_uint_eq(t.sid, 3);
    ck_assert_uint_eq(t.cas, 99);
    ck_assert_uint_eq(t.flags, 0);
    ck_assert_uint_eq(t.exptime, 0);
    ck_assert(!t.stale && !t.token && !t.binkey);
    ck_assert_ptr_null(t.ctype);
    ck_assert_uint_eq(t.nctype, 0);
    /* it round-trips like any envelope */
    uint8_t env[RECORD_HEADER_MAX];
    size_t n = record_encode(&t, env);
    ck_assert_uint_gt(n, 0);
}
END_TEST

static Suite *
record_suite(void)
{
    Suite *s = suite_create("record");
    TCase *tc = tcase_create("codec");
    tcase_add_test(tc, test_roundtrip);
    tcase_add_test(tc, test_compact_for_small_records);
    tcase_add_test(tc, test_corruption_detected);
    tcase_add_test(tc, test_seal);
    tcase_add_test(tc, test_newer_rule);
    tcase_add_test(tc, test_tombstone_of);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(record_suite)
