/*
 * Unit tests for hmac: SHA-256 against the FIPS 180-4 examples, HMAC
 * against RFC 4231, and input split at every point.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hmac.h"
#include "unit_main.h"

static void
_hex(const uint8_t *p, char out[2 * HMAC_SHA256_LEN + 1])
{
    for (int i = 0; i < HMAC_SHA256_LEN; i++) {
        snprintf(out + 2 * i, 3, "%02x", p[i]);
    }
}

static void
_expect_sha(const void *p, size_t n, const char *hex)
{
    uint8_t out[HMAC_SHA256_LEN];
    char got[2 * HMAC_SHA256_LEN + 1];
    hmac_sha256(p, n, out);
    _hex(out, got);
    ck_assert_str_eq(got, hex);
}

START_TEST(test_sha256_known_answers)
{
    _expect_sha("", 0,
                "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    _expect_sha("abc", 3,
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two_blocks =
        "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    _expect_sha(two_blocks, strlen(two_blocks),
                "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    char *million = malloc(1000000);
    memset(million, 'a', 1000000);
    _expect_sha(million, 1000000,
                "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(million);
}
END_TEST

START_TEST(test_sha256_incremental_equals_one_shot)
{
    uint8_t data[300];
    for (size_t i = 0; i < sizeof(data); i++) {
        data[i] = (uint8_t)(i * 7 + 1);
    }
    for (size_t len = 0; len <= sizeof(data); len += 17) {
        uint8_t whole[HMAC_SHA256_LEN];
        hmac_sha256(data, len, whole);
        for (size_t cut = 0; cut <= len; cut++) {
            struct hmac_sha256_ctx c;
            uint8_t parts[HMAC_SHA256_LEN];
            hmac_sha256_init(&c);
            hmac_sha256_update(&c, data, cut);
            hmac_sha256_update(&c, data + cut, len - cut);
            hmac_sha256_final(&c, parts);
            ck_assert(memcmp(whole, parts, sizeof(whole)) == 0);
        }
    }
}
END_TEST

static void
_expect_mac(const void *key, size_t klen, const char *msg, const char *hex)
{
    uint8_t out[HMAC_SHA256_LEN];
    char got[2 * HMAC_SHA256_LEN + 1];
    const void *parts[1] = {msg};
    size_t lens[1] = {strlen(msg)};
    hmac_sha256_mac(key, klen, parts, lens, 1, out);
    _hex(out, got);
    ck_assert_str_eq(got, hex);
}

START_TEST(test_hmac_rfc4231)
{
    uint8_t k1[20];
    memset(k1, 0x0b, sizeof(k1));
    _expect_mac(k1, sizeof(k1), "Hi There",
                "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    _expect_mac("Jefe", 4, "what do ya want for nothing?",
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    uint8_t k6[131];
    memset(k6, 0xaa, sizeof(k6));
    _expect_mac(k6, sizeof(k6),
                "Test Using Larger Than Block-Size Key - Hash Key First",
                "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}
END_TEST

START_TEST(test_hmac_parts_concatenate)
{
    const void *parts[3] = {"what do ya", " want for", " nothing?"};
    size_t lens[3] = {10, 9, 9};
    uint8_t split[HMAC_SHA256_LEN];
    uint8_t whole[HMAC_SHA256_LEN];
    hmac_sha256_mac("Jefe", 4, parts, lens, 3, split);
    const void *one[1] = {"what do ya want for nothing?"};
    size_t len1[1] = {28};
    hmac_sha256_mac("Jefe", 4, one, len1, 1, whole);
    ck_assert(memcmp(split, whole, sizeof(whole)) == 0);
    ck_assert(hmac_equal(split, whole, sizeof(whole)));
    whole[31] ^= 1;
    ck_assert(!hmac_equal(split, whole, sizeof(whole)));
}
END_TEST

static Suite *
hmac_suite(void)
{
    Suite *s = suite_create("hmac");
    TCase *tc = tcase_create("hmac");
    tcase_add_test(tc, test_sha256_known_answers);
    tcase_add_test(tc, test_sha256_incremental_equals_one_shot);
    tcase_add_test(tc, test_hmac_rfc4231);
    tcase_add_test(tc, test_hmac_parts_concatenate);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(hmac_suite)
