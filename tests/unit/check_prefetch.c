/*
 * Unit tests for prefetch: a lookup whose pages are in memory needs no
 * wait; one whose record (or a node on the way to it, or a page of its
 * value) is not waits, is handed back once, and then finds everything in
 * memory; absent keys, forgotten owners and an in-memory store.
 *
 * Pages are put out of memory with fdatasync and POSIX_FADV_DONTNEED on
 * a database opened with #xmsiz=0, so Tokyo Cabinet maps only its bucket
 * array. Where the file system keeps the pages anyway (tmpfs), the cases
 * that need a miss say so and check only what they can.
 */
#include <check.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "prefetch.h"
#include "record.h"
#include "store.h"
#include "unit_main.h"
#include "unit_tmpdir.h"
#include "util.h"

static char dir[UNIT_TMPDIR_MAX];
static char path[UNIT_TMPDIR_MAX + 32];

static void
_setup(void)
{
    unit_tmpdir_make(dir, sizeof(dir), "check_prefetch");
    unit_tmpdir_path(path, sizeof(path), dir, "db.tch");
}

static void
_teardown(void)
{
    unit_tmpdir_remove(dir);
}

static struct store *
_open(const char *tuning)
{
    char name[256];
    char err[512];
    struct dbspec spec;
    snprintf(name, sizeof(name), "%s%s", path, tuning);
    ck_assert(dbspec_parse(name, &spec, err, sizeof(err)));
    struct store *s = store_open(&spec, NULL, NULL, err, sizeof(err));
    ck_assert_msg(s != NULL, "%s", err);
    return s;
}

static void
_put(struct store *s, const char *key, size_t vlen)
{
    static uint8_t buf[16384];
    struct record_meta m = {
        .kind = RECORD_VALUE, .cas = 7, .ts = 7, .sid = 1};
    size_t n = record_encode(&m, buf);
    ck_assert_uint_le(n + vlen, sizeof(buf));
    memset(buf + n, 'v', vlen);
    ck_assert_int_eq(store_put(s, key, strlen(key), buf, n + vlen),
                     STORE_OK);
}

/* Puts the file's pages out of memory; false if the kernel kept some. */
static bool
_evict(void)
{
    int fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(fdatasync(fd), 0);
    ck_assert_int_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
    struct stat st;
    ck_assert_int_eq(fstat(fd, &st), 0);
    long page = sysconf(_SC_PAGESIZE);
    size_t pages = ((size_t)st.st_size + (size_t)page - 1) / (size_t)page;
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    ck_assert(map != MAP_FAILED);
    unsigned char *vec = malloc(pages);
    ck_assert_int_eq(mincore(map, (size_t)st.st_size, vec), 0);
    /* The header and bucket array are Tokyo Cabinet's mapping: only the
     * pages past it count. */
    size_t resident = 0;
    for (size_t i = 2; i < pages; i++) {
        resident += vec[i] & 1;
    }
    free(vec);
    munmap(map, (size_t)st.st_size);
    close(fd);
    return resident == 0;
}

/* Waits (at most 5 s) for prefetch_reap() to hand back `owner`. */
static void
_reap_until(struct prefetch *p, void *owner)
{
    uint64_t deadline = util_mono_ms() + 5000;
    for (;;) {
        void *got[8];
        size_t n = prefetch_reap(p, got, 8);
        for (size_t i = 0; i < n; i++) {
            if (got[i] == owner) {
                return;
            }
        }
        uint64_t now = util_mono_ms();
        ck_assert_msg(now < deadline, "the reads never completed");
        struct pollfd pfd = {prefetch_fd(p), POLLIN, 0};
        poll(&pfd, 1, (int)(deadline - now));
    }
}

static struct prefetch *
_prefetch(struct store *s)
{
    char why[160];
    struct prefetch *p = prefetch_create(s, 8, why, sizeof(why));
    ck_assert_msg(p != NULL, "%s", why);
    return p;
}

START_TEST(test_resident_lookup_needs_no_wait)
{
    struct store *s = _open("#bnum=1000#xmsiz=0");
    for (int i = 0; i < 100; i++) {
        char key[16];
        snprintf(key, sizeof(key), "k%d", i);
        _put(s, key, 100);
    }
    struct prefetch *p = _prefetch(s);
    int owner;
    for (int i = 0; i < 100; i++) {
        char key[16];
        snprintf(key, sizeof(key), "k%d", i);
        ck_assert(!prefetch_key(p, key, strlen(key), &owner));
    }
    ck_assert(!prefetch_key(p, "absent", 6, &owner));
    struct prefetch_stats st;
    prefetch_stats(p, &st);
    ck_assert_uint_eq(st.waits, 0);
    ck_assert_uint_gt(st.resident, 0);
    prefetch_destroy(p);
    store_close(s);
}
END_TEST

/* A record with a value over several pages, out of memory: the lookup
 * waits, comes back once, and then everything is in memory. */
START_TEST(test_missing_record_waits_then_is_resident)
{
    struct store *s = _open("#bnum=1000#xmsiz=0");
    for (int i = 0; i < 50; i++) {
        char key[16];
        snprintf(key, sizeof(key), "big%d", i);
        _put(s, key, 9000);
    }
    if (!_evict()) {
        store_close(s);
        printf("check_prefetch: the file system kept the pages; skipped\n");
        return;
    }
    struct prefetch *p = _prefetch(s);
    int owner;
    ck_assert(prefetch_key(p, "big17", 5, &owner));
    prefetch_submit(p);
    _reap_until(p, &owner);
    ck_assert(!prefetch_key(p, "big17", 5, &owner));
    struct prefetch_stats st;
    prefetch_stats(p, &st);
    ck_assert_uint_eq(st.waits, 1);
    /* The value's pages came too: three pages of 9,000 bytes. */
    ck_assert_uint_ge(st.reads, 2);
    prefetch_destroy(p);
    store_close(s);
}
END_TEST

/* One bucket for every key: the key's record lies down a tree whose
 * nodes are all out of memory; each is read in turn. */
START_TEST(test_walks_down_a_collision_tree)
{
    struct store *s = _open("#bnum=1#xmsiz=0");
    for (int i = 0; i < 200; i++) {
        char key[16];
        snprintf(key, sizeof(key), "t%d", i);
        _put(s, key, 2000);
    }
    if (!_evict()) {
        store_close(s);
        printf("check_prefetch: the file system kept the pages; skipped\n");
        return;
    }
    struct prefetch *p = _prefetch(s);
    int owner;
    ck_assert(prefetch_key(p, "t123", 4, &owner));
    prefetch_submit(p);
    _reap_until(p, &owner);
    ck_assert(!prefetch_key(p, "t123", 4, &owner));
    /* Tokyo Cabinet now finds it without the disk. */
    uint8_t scratch[4096];
    struct store_value v;
    ck_assert_int_eq(store_get(s, "t123", 4, scratch, sizeof(scratch), &v),
                     STORE_OK);
    store_value_release(&v);
    prefetch_destroy(p);
    store_close(s);
}
END_TEST

/* An absent key's walk reads the tree down to where it would be. */
START_TEST(test_absent_key_is_walked_too)
{
    struct store *s = _open("#bnum=1#xmsiz=0");
    for (int i = 0; i < 100; i++) {
        char key[16];
        snprintf(key, sizeof(key), "a%d", i);
        _put(s, key, 3000);
    }
    if (!_evict()) {
        store_close(s);
        printf("check_prefetch: the file system kept the pages; skipped\n");
        return;
    }
    struct prefetch *p = _prefetch(s);
    int owner;
    ck_assert(prefetch_key(p, "nope", 4, &owner));
    prefetch_submit(p);
    _reap_until(p, &owner);
    ck_assert(!prefetch_key(p, "nope", 4, &owner));
    prefetch_destroy(p);
    store_close(s);
}
END_TEST

/* A forgotten owner (a connection that closed) is never handed back;
 * destroying the prefetcher waits for its reads. */
START_TEST(test_forgotten_owner_is_not_returned)
{
    struct store *s = _open("#bnum=1000#xmsiz=0");
    for (int i = 0; i < 20; i++) {
        char key[16];
        snprintf(key, sizeof(key), "f%d", i);
        _put(s, key, 5000);
    }
    if (!_evict()) {
        store_close(s);
        printf("check_prefetch: the file system kept the pages; skipped\n");
        return;
    }
    struct prefetch *p = _prefetch(s);
    int gone, kept;
    ck_assert(prefetch_key(p, "f3", 2, &gone));
    ck_assert(prefetch_key(p, "f4", 2, &kept));
    prefetch_forget(p, &gone);
    prefetch_submit(p);
    uint64_t deadline = util_mono_ms() + 5000;
    bool seen_kept = false;
    while (!seen_kept) {
        void *got[8];
        size_t n = prefetch_reap(p, got, 8);
        for (size_t i = 0; i < n; i++) {
            ck_assert_ptr_ne(got[i], &gone);
            seen_kept = seen_kept || got[i] == &kept;
        }
        ck_assert(util_mono_ms() < deadline);
        struct pollfd pfd = {prefetch_fd(p), POLLIN, 0};
        poll(&pfd, 1, 100);
    }
    /* A wait still in flight when it is destroyed. */
    _evict();
    ck_assert(prefetch_key(p, "f9", 2, &gone) || true);
    prefetch_submit(p);
    prefetch_destroy(p);
    store_close(s);
}
END_TEST

/* More keys waiting than slots: the rest are not waited for. */
START_TEST(test_full_slots_do_not_wait)
{
    struct store *s = _open("#bnum=1000#xmsiz=0");
    for (int i = 0; i < 40; i++) {
        char key[16];
        snprintf(key, sizeof(key), "s%d", i);
        _put(s, key, 5000);
    }
    if (!_evict()) {
        store_close(s);
        printf("check_prefetch: the file system kept the pages; skipped\n");
        return;
    }
    struct prefetch *p = _prefetch(s); /* 8 slots */
    int owners[20];
    int waiting = 0;
    for (int i = 0; i < 20; i++) {
        char key[16];
        snprintf(key, sizeof(key), "s%d", i);
        waiting += prefetch_key(p, key, strlen(key), &owners[i]) ? 1 : 0;
    }
    ck_assert_int_eq(waiting, 8);
    struct prefetch_stats st;
    prefetch_stats(p, &st);
    /* The kernel may have read some neighbours in already. */
    ck_assert_uint_ge(st.full, 1);
    ck_assert_uint_eq(st.full + st.resident, 12);
    prefetch_submit(p);
    prefetch_destroy(p);
    store_close(s);
}
END_TEST

START_TEST(test_memory_store_has_no_prefetch)
{
    char err[256];
    struct dbspec spec;
    ck_assert(dbspec_parse("*", &spec, err, sizeof(err)));
    struct store *s = store_open(&spec, NULL, NULL, err, sizeof(err));
    ck_assert_ptr_nonnull(s);
    char why[160];
    ck_assert_ptr_null(prefetch_create(s, 8, why, sizeof(why)));
    ck_assert(strstr(why, "memory") != NULL);
    store_close(s);
}
END_TEST

static Suite *
prefetch_suite(void)
{
    Suite *s = suite_create("prefetch");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, _setup, _teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_resident_lookup_needs_no_wait);
    tcase_add_test(tc, test_missing_record_waits_then_is_resident);
    tcase_add_test(tc, test_walks_down_a_collision_tree);
    tcase_add_test(tc, test_absent_key_is_walked_too);
    tcase_add_test(tc, test_forgotten_owner_is_not_returned);
    tcase_add_test(tc, test_full_slots_do_not_wait);
    tcase_add_test(tc, test_memory_store_has_no_prefetch);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(prefetch_suite)
