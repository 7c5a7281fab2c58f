/*
 * Unit tests for access: what access_read, access_write and access_peek
 * report (the fetched bit, whether the slot is the key's, the time of the
 * last access), that peeking notes nothing, and that a key whose slot
 * another key took is reported unknown.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "access.h"
#include "unit_main.h"
#include "util.h"

static struct access_table table;

static void
_setup(void)
{
    ck_assert_int_eq(access_init(&table, 10), 0);
}

static void
_teardown(void)
{
    access_deinit(&table);
    ck_assert_ptr_null(table.slots);
}

static void
_seen_is(const struct access_seen *s, bool known, bool fetched,
         uint32_t when)
{
    ck_assert_int_eq(s->known, known);
    ck_assert_int_eq(s->fetched, fetched);
    ck_assert_uint_eq(s->when_s, when);
}

static void
_peek(const char *key, struct access_seen *s)
{
    access_peek(&table, key, strlen(key), s);
}

static void
_read(const char *key, uint32_t now, struct access_seen *s)
{
    access_read(&table, key, strlen(key), now, s);
}

/* The slot index and tag access.c derives from a key's hash. */
static size_t
_index_n(const void *key, size_t nkey, size_t mask)
{
    return (size_t)util_hash(key, nkey) & mask;
}

static uint64_t
_tag_n(const void *key, size_t nkey)
{
    return (util_hash(key, nkey) >> 40) & 0xffff;
}

static size_t
_index(const char *key, size_t mask)
{
    return _index_n(key, strlen(key), mask);
}

static uint64_t
_tag(const char *key)
{
    return _tag_n(key, strlen(key));
}

START_TEST(test_unknown_key)
{
    struct access_seen s;
    memset(&s, 0xff, sizeof(s));
    _peek("never", &s);
    _seen_is(&s, false, false, 0);
    memset(&s, 0xff, sizeof(s));
    _read("never", 50, &s);
    _seen_is(&s, false, false, 0);
    /* That read filled the slot. */
    _peek("never", &s);
    _seen_is(&s, true, true, 50);
}
END_TEST

START_TEST(test_write_read_peek)
{
    struct access_seen s;

    access_write(&table, "k", 1, 100);
    _peek("k", &s);
    _seen_is(&s, true, false, 100);

    /* A read reports what was there, then notes itself. */
    _read("k", 200, &s);
    _seen_is(&s, true, false, 100);
    _peek("k", &s);
    _seen_is(&s, true, true, 200);
    _read("k", 300, &s);
    _seen_is(&s, true, true, 200);

    /* A write clears the fetched bit. */
    access_write(&table, "k", 1, 400);
    _peek("k", &s);
    _seen_is(&s, true, false, 400);

    /* Peeking notes nothing, however often. */
    for (int i = 0; i < 3; i++) {
        _peek("k", &s);
        _seen_is(&s, true, false, 400);
    }
    _read("k", 500, &s);
    _seen_is(&s, true, false, 400);
}
END_TEST

START_TEST(test_time_uses_all_32_bits)
{
    struct access_seen s;

    /* The time does not spill into the fetched bit or the tag. */
    access_write(&table, "t", 1, UINT32_MAX);
    _peek("t", &s);
    _seen_is(&s, true, false, UINT32_MAX);
    _read("t", UINT32_MAX - 1, &s);
    _seen_is(&s, true, false, UINT32_MAX);
    _peek("t", &s);
    _seen_is(&s, true, true, UINT32_MAX - 1);
}
END_TEST

START_TEST(test_keys_are_bytes)
{
    struct access_seen s;

    /* A key is its bytes and its length, NULs included. */
    access_write(&table, "a\0b", 3, 10);
    access_peek(&table, "a\0b", 3, &s);
    _seen_is(&s, true, false, 10);
    /* Another key of that length, and its prefix, are other keys. */
    static const struct {
        const char *key;
        size_t nkey;
    } others[] = {{"a\0c", 3}, {"a", 1}, {"a\0", 2}};
    for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
        ck_assert(_index_n(others[i].key, others[i].nkey, table.mask) !=
                      _index_n("a\0b", 3, table.mask) ||
                  _tag_n(others[i].key, others[i].nkey) !=
                      _tag_n("a\0b", 3));
        access_peek(&table, others[i].key, others[i].nkey, &s);
        _seen_is(&s, false, false, 0);
    }
}
END_TEST

START_TEST(test_colliding_key_takes_the_slot)
{
    struct access_seen s;
    char a[32] = "key:a";
    char b[32];

    /* Find another key for the same slot, with another tag. */
    int found = -1;
    for (int i = 0; i < 1000000 && found < 0; i++) {
        snprintf(b, sizeof(b), "other:%d", i);
        if (_index(b, table.mask) == _index(a, table.mask) &&
            _tag(b) != _tag(a)) {
            found = i;
        }
    }
    ck_assert_int_ge(found, 0);

    access_write(&table, a, strlen(a), 10);
    _read(a, 20, &s);
    _seen_is(&s, true, false, 10);
    /* b's read finds a's slot: not b's, so nothing known ... */
    _read(b, 30, &s);
    _seen_is(&s, false, false, 0);
    /* ... and a has lost its slot. */
    _peek(a, &s);
    _seen_is(&s, false, false, 0);
    _peek(b, &s);
    _seen_is(&s, true, true, 30);
    /* A write takes it back the same way. */
    access_write(&table, a, strlen(a), 40);
    _peek(b, &s);
    _seen_is(&s, false, false, 0);
    _peek(a, &s);
    _seen_is(&s, true, false, 40);
}
END_TEST

START_TEST(test_other_slots_undisturbed)
{
    struct access_seen s;
    char key[32];
    char keys[64][32];
    size_t n = 0;
    bool used[1024] = {false};

    /* 64 keys in 64 different slots keep their own facts. */
    for (int i = 0; n < 64; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        size_t at = _index(key, table.mask);
        if (!used[at]) {
            used[at] = true;
            memcpy(keys[n++], key, sizeof(key));
        }
    }
    for (size_t i = 0; i < n; i++) {
        access_write(&table, keys[i], strlen(keys[i]), 1000 + (uint32_t)i);
    }
    for (size_t i = 0; i < n; i += 2) {
        _read(keys[i], 5000, &s);
        _seen_is(&s, true, false, 1000 + (uint32_t)i);
    }
    for (size_t i = 0; i < n; i++) {
        _peek(keys[i], &s);
        if (i % 2 == 0) {
            _seen_is(&s, true, true, 5000);
        } else {
            _seen_is(&s, true, false, 1000 + (uint32_t)i);
        }
    }
}
END_TEST

START_TEST(test_one_slot_table)
{
    struct access_table one;
    struct access_seen s;

    /* With a single slot every key shares it: the last one holds it. */
    ck_assert_int_eq(access_init(&one, 0), 0);
    ck_assert_uint_eq(one.mask, 0);
    const char *x = "x";
    const char *y = "y";
    ck_assert_uint_ne(_tag(x), _tag(y));
    access_write(&one, x, 1, 7);
    access_peek(&one, x, 1, &s);
    _seen_is(&s, true, false, 7);
    access_read(&one, y, 1, 8, &s);
    _seen_is(&s, false, false, 0);
    access_peek(&one, x, 1, &s);
    _seen_is(&s, false, false, 0);
    access_deinit(&one);
}
END_TEST

static Suite *
access_suite(void)
{
    Suite *s = suite_create("access");
    TCase *tc = tcase_create("slots");
    tcase_add_checked_fixture(tc, _setup, _teardown);
    tcase_add_test(tc, test_unknown_key);
    tcase_add_test(tc, test_write_read_peek);
    tcase_add_test(tc, test_time_uses_all_32_bits);
    tcase_add_test(tc, test_keys_are_bytes);
    tcase_add_test(tc, test_colliding_key_takes_the_slot);
    tcase_add_test(tc, test_other_slots_undisturbed);
    tcase_add_test(tc, test_one_slot_table);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(access_suite)
