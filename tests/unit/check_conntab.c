/*
 * Unit tests: the table `stats conns` lists (conntab.h): slots taken and
 * given back by descriptor, states and times noted, the listing's names
 * and memcached's address forms, descriptors past the table.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conntab.h"
#include "unit_main.h"

struct listing {
    char text[4096];
    size_t n;
    int stop_after; /* emit fails after this many stats (0: never) */
    int count;
};

static bool
_emit(void *arg, const char *name, const char *value)
{
    struct listing *l = arg;
    l->count++;
    if (l->stop_after != 0 && l->count > l->stop_after) {
        return false;
    }
    l->n += (size_t)snprintf(l->text + l->n, sizeof(l->text) - l->n,
                             "%s %s\n", name, value);
    return true;
}

START_TEST(test_lists_what_is_noted)
{
    struct conntab t;
    int sv[2];
    char want[128];
    struct listing l = {0};

    ck_assert_int_eq(conntab_init(&t, 1024), 0);
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    uint32_t now = conntab_now();
    struct conntab_slot *s = conntab_add(&t, sv[0], false, now);
    ck_assert_ptr_nonnull(s);
    conntab_note(s, CONNTAB_NREAD, 0);
    ck_assert(conntab_list(&t, _emit, &l));
    /* an unnamed unix socket has no path: memcached says <AF 1> */
    snprintf(want, sizeof(want), "%d:addr unix:<AF 1>\n", sv[0]);
    ck_assert_ptr_nonnull(strstr(l.text, want));
    snprintf(want, sizeof(want), "%d:state conn_nread\n", sv[0]);
    ck_assert_ptr_nonnull(strstr(l.text, want));
    snprintf(want, sizeof(want), "%d:secs_since_last_cmd 0\n", sv[0]);
    ck_assert_ptr_nonnull(strstr(l.text, want));
    ck_assert_int_eq(l.count, 4);

    /* a listener has no listen_addr line */
    ck_assert_ptr_nonnull(conntab_add(&t, sv[1], true, now));
    memset(&l, 0, sizeof(l));
    ck_assert(conntab_list(&t, _emit, &l));
    ck_assert_int_eq(l.count, 7);
    snprintf(want, sizeof(want), "%d:state conn_listening\n", sv[1]);
    ck_assert_ptr_nonnull(strstr(l.text, want));

    /* a failing emit stops the listing */
    memset(&l, 0, sizeof(l));
    l.stop_after = 2;
    ck_assert(!conntab_list(&t, _emit, &l));

    conntab_remove(&t, sv[0]);
    conntab_remove(&t, sv[1]);
    memset(&l, 0, sizeof(l));
    ck_assert(conntab_list(&t, _emit, &l));
    ck_assert_int_eq(l.count, 0);
    close(sv[0]);
    close(sv[1]);
    conntab_deinit(&t);
}
END_TEST

START_TEST(test_out_of_range)
{
    struct conntab t;
    ck_assert_int_eq(conntab_init(&t, 4), 0);
    ck_assert_ptr_null(conntab_add(&t, 4, false, 1));
    ck_assert_ptr_null(conntab_add(&t, -1, false, 1));
    ck_assert_ptr_null(conntab_add(NULL, 1, false, 1));
    conntab_remove(&t, 99);   /* no effect */
    conntab_remove(NULL, 1);  /* no effect */
    conntab_note(NULL, CONNTAB_PARSE, 5); /* no effect */
    conntab_deinit(&t);
}
END_TEST

static Suite *
conntab_suite(void)
{
    Suite *s = suite_create("conntab");
    TCase *tc = tcase_create("conntab");
    tcase_add_test(tc, test_lists_what_is_noted);
    tcase_add_test(tc, test_out_of_range);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(conntab_suite)
